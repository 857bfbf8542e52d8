"""Matching a URI against an RFC 6570 template: the reverse of expansion.

Part of the theory of operation of ``mcpwire._uritemplate``, whose
``UriTemplate`` compiles a template with these once and matches with them.

Matching (the reverse; section 1.4 explains why it cannot be exact in general)
------------------------------------------------------------------------------
``match(uri)`` answers "which values would expand to this URI?" for the template
shapes MCP servers use. The template is compiled once, in ``__init__``, into

* a *query tail*: when the template ends with ``{?...}``/``{&...}`` expressions
  (optionally with literal ``?fixed=yes`` / ``&k=v`` pairs), the URI is split at
  its first ``?`` and the query is parsed as ``&``-separated ``key=value`` pairs
  in any order. Every pair must be a template variable or one of the template's
  literal pairs (unknown keys, duplicates of non-exploded variables and a ``#`` in
  the query mean no match); absent variables are simply omitted;
* a *head* regular expression for everything else, anchored at both ends.
  Literals are compared exactly (case-sensitively, in their pct-encoded form).

Variables match runs of a negated character class:

=================  ===========================================================
``{var}``          no ``/ ? #``; one path segment
``{+var}``         anything but ``#``: crosses ``/`` (``file:///{+path}``)
``{#var}``         anything after the ``#``
``{.var}``         a label: no ``/ ? #``
``{/var}``         one segment; ``{/var*}`` a list of segments
``{;x,y}``         ``;name`` or ``;name=value`` in template order, no ``/ ? # ;``
``{?x}`` ``{&x}``  ``key=value`` pairs (see above)
=================  ===========================================================

Within a multi-variable expression each value also excludes the separator;
values of the unreserved-encoding operators also exclude the first character of
the following literal when that character is reserved (expansion would have
pct-encoded it in a value, so it can only be the delimiter). Exploded variables
come back as ``list[str]``, split at the operator's separator (for ``;``, ``?``
and ``&`` the name must repeat: ``;list=a;list=b``); everything else as ``str``.

Percent-decoding. Every value (and list member) is percent-decoded as UTF-8,
the reverse of expansion, which encodes a value's UTF-8 octets. Expansion never
writes a ``%`` that is not followed by two hex digits (a ``%`` in a value
becomes ``%25``), nor escapes whose octets are not UTF-8, so a value holding
either names nothing a template could have been expanded with: once the URI
has the template's shape (head regex matched, every query key known), such a
value raises ``UriEscapeError`` naming the variable and the escape (``%ZZ``,
``%``, ``%E2%82``), both kinds alike. A query *key* that does not decode is no
known key: no match. A prefix-modified variable
longer than its prefix means no match. When an empty value and an undefined
variable expand alike (``{var}``, ``{+var}``) the variable comes back as ``""``;
optional variables of one expression are filled left to right. A variable used
twice must match the same value both times.

Linear time. Python's ``re`` backtracks, so a naive translation can take
polynomial (or worse) time on hostile input. Each expression is therefore matched
*atomically*: ``(?=(?P<e>EXPR)FOLLOW)(?P=e)`` chooses the expression's extent
inside a lookahead (which the engine never re-enters) and then consumes exactly
that text. ``FOLLOW`` is the part of the rest of the template that is cheap to
check: the next literal and, after it, further literals and expressions whose
values cannot contain that literal's first character and that stop
deterministically, up to the end of the URI when possible. An expression thus
takes the longest extent for which that stretch of the template matches (e.g. in
``{+dir}/{name}`` the last ``/``, in ``{name}.{ext}`` the last ``.``) and never
revisits the choice. An expression directly followed by another one (no literal
between, ``up{+path}{var}/here``) prefers the longest extent that lets the later
ones be empty, else the longest run of its characters. No regex has a nested
ambiguous quantifier; matching is O(len(uri) * len(template)). The price is that
a few contrived shapes with two ambiguous variables in a row can miss a match
that exists (``{+a}.{b}/{c}`` against ``p.q/r.s``, or ``{.a}.{.b}``); no
realistic MCP template is affected.

Round trip. ``match(expand(values)) == values`` (with ``None`` values left out)
holds whenever the expansion is unambiguous, in particular for:

* simple, ``.``, ``/`` and ``;`` variables separated by literals or operators that
  begin with a reserved character (``/ : @ ; = , ! $ & ' ( ) * +``), for any
  string values (expansion pct-encodes every reserved character in them), as
  long as in ``{x,y}``, ``{.x,y}``, ``{/x,y}`` and ``{#x,y}`` no undefined
  variable precedes a defined one;
* ``{+var}``/``{#var}`` as the last variable, or followed by literals and such
  delimited variables (``file:///{+path}``, ``{+path}/raw``, ``{+dir}/{name}``),
  for values without ``#``, ``%`` and (with a query tail) ``?``;
* query tails ``{?a,b}{&c}`` and ``?fixed=yes{&x}``, any values, any subset;
* ``{/list*}``, ``{.list*}``, ``{;list*}``, ``{?list*}``, ``{&list*}`` with string
  members (for ``.`` members without ``.``);
* labels and other slots delimited by an unreserved character (``{name}.{ext}``,
  ``X{.a,b}``) when no value but the first contains that character.

Not supported by ``match`` (it returns ``None`` or a best effort, raising only
``UriEscapeError``):
exploded associative arrays (``{?keys*}``), values ``expand`` would render
differently from how they are spelled (``%41`` versus ``A`` in literals), a query
whose ``{?...}`` variables are all undefined so that it starts with ``&``, and
query expressions that are not at the end of the template (these fall back to the
head regex, in template order).
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import count
from typing import NamedTuple, Union
from urllib.parse import unquote

from ._uritemplate_syntax import _OPS, _RESERVED, _Expr, _Part, _VarSpec

__all__ = (
    "UriEscapeError",
    "_HeadCompiler",
    "_Results",
    "_add_query",
    "_query_shape",
    "_read_slot",
    "_split_query",
)

# Characters a matched value may never contain, per operator (see the module docstring).
_BASE_EXCLUDED: dict[str, str] = {
    "": "/?#",
    "+": "#",
    "#": "",
    ".": "/?#",
    "/": "/?#",
    ";": "/?#;",
    "?": "#&",
    "&": "#&",
}

_MatchValue = Union[str, list[str]]


# --- matching: compilation ---------------------------------------------------------

_PLAIN, _SPLIT, _NAMED, _NAMED_LIST = range(4)


class _Slot(NamedTuple):
    """Where a variable occurrence is captured in the head regex, and how to read it."""

    group: str
    spec: _VarSpec
    kind: int
    sep: str


class _QuerySpec(NamedTuple):
    variables: dict[str, _VarSpec]  # by name as spelled, and pct-decoded if different
    fixed: Counter[str]  # literal key=value pairs the query must contain


def _char_class(excluded: str) -> str:
    if not excluded:
        return r"[\s\S]"
    return "[^" + "".join(re.escape(c) for c in sorted(set(excluded))) + "]"


class _ExprPlan(NamedTuple):
    expr: _Expr
    excluded: tuple[str, ...]  # per varspec: characters its value may not contain
    follow: str | None  # next delimiter: "" = end, None = an expression with no prefix


class _HeadCompiler:
    def __init__(self, parts: list[_Part]) -> None:
        self.parts = parts
        self.slots: list[_Slot] = []
        self._names = count()
        self.plans: dict[int, _ExprPlan] = {}
        for k, part in enumerate(parts):
            if isinstance(part, _Expr):
                self.plans[k] = self._plan(k, part)

    def _follow(self, k: int) -> str | None:
        if k + 1 >= len(self.parts):
            return ""
        nxt = self.parts[k + 1]
        if isinstance(nxt, str):
            return nxt[0]
        return _OPS[nxt.op].first or None

    def _plan(self, k: int, expr: _Expr) -> _ExprPlan:
        op = _OPS[expr.op]
        follow = self._follow(k)
        excluded = _BASE_EXCLUDED[expr.op]
        if follow and not op.reserved and follow in _RESERVED and follow not in excluded:
            excluded += follow
        per_spec: list[str] = []
        for spec in expr.specs:
            ex = excluded
            if not op.named and (len(expr.specs) > 1 or spec.explode) and op.sep not in ex:
                ex += op.sep
            per_spec.append(ex)
        return _ExprPlan(expr, tuple(per_spec), follow)

    def _excludes(self, plan: _ExprPlan, ch: str) -> bool:
        """True if no value of the expression can contain ``ch`` (and no list repeats it)."""
        sep = _OPS[plan.expr.op].sep
        return all(ch in ex for ex in plan.excluded) and not any(
            spec.explode and sep == ch for spec in plan.expr.specs
        )

    def _deterministic(self, plan: _ExprPlan) -> bool:
        """True if the expression's extent is fixed by the character that follows it."""
        if plan.follow == "":
            return True
        return plan.follow is not None and self._excludes(plan, plan.follow)

    def _group(self, body: str, spec: _VarSpec, kind: int, sep: str, capture: bool) -> str:
        if not capture:
            return f"(?:{body})"
        name = f"_v{next(self._names)}"
        self.slots.append(_Slot(name, spec, kind, sep))
        return f"(?P<{name}>{body})"

    def _spec_regex(self, op_char: str, spec: _VarSpec, excluded: str, capture: bool) -> str:
        op = _OPS[op_char]
        cls = _char_class(excluded)
        sep = re.escape(op.sep)
        if op.named:
            one = f"{re.escape(spec.name)}(?:={cls}*)?"
            if spec.explode:
                return self._group(f"{one}(?:{sep}{one})*", spec, _NAMED_LIST, op.sep, capture)
            return self._group(one, spec, _NAMED, op.sep, capture)
        if spec.explode:
            return self._group(f"{cls}*(?:{sep}{cls}*)*", spec, _SPLIT, op.sep, capture)
        return self._group(f"{cls}*", spec, _PLAIN, op.sep, capture)

    def expression_regex(self, plan: _ExprPlan, capture: bool) -> str:
        expr = plan.expr
        op = _OPS[expr.op]
        first, sep = re.escape(op.first), re.escape(op.sep)
        n = len(expr.specs)
        if not op.named:
            # Values are indistinguishable: optional ones are filled left to right.
            items = [
                self._spec_regex(expr.op, s, ex, capture)
                for s, ex in zip(expr.specs, plan.excluded, strict=True)
            ]
            body = items[-1]
            for item in reversed(items[:-1]):
                body = f"{item}(?:{sep}{body})?"
            return f"(?:{first}{body})?" if op.first else body
        if op.first == op.sep:  # ";" and "&": every variable independently optional
            return "".join(
                f"(?:{sep}{self._spec_regex(expr.op, s, ex, capture)})?"
                for s, ex in zip(expr.specs, plan.excluded, strict=True)
            )
        # "?": whichever variable comes first takes the "?", the others "&".
        alternatives = []
        for j in range(n):
            alt = first + self._spec_regex(expr.op, expr.specs[j], plan.excluded[j], capture)
            for m in range(j + 1, n):
                item = self._spec_regex(expr.op, expr.specs[m], plan.excluded[m], capture)
                alt += f"(?:{sep}{item})?"
            alternatives.append(alt)
        return "(?:" + "|".join(alternatives) + ")?"

    def _follow_regex(self, k: int) -> str:
        """What must match right after expression ``k`` for an extent to be chosen.

        The next literal and, after it, every literal and deterministic expression
        whose values cannot contain that literal's first character (so that trying
        all candidate extents stays linear). Expressions directly adjacent to ``k``
        are skipped over: the preferred extent leaves them empty.
        """
        j = k + 1
        while j < len(self.parts) and not isinstance(self.parts[j], str):
            j += 1
        if j == len(self.parts):
            return r"\Z"
        literal = self.parts[j]
        assert isinstance(literal, str)
        delimiter = literal[0]
        pieces: list[str] = []
        for i in range(j, len(self.parts)):
            part = self.parts[i]
            if isinstance(part, str):
                pieces.append(re.escape(part))
                continue
            other = self.plans[i]
            if not (self._excludes(other, delimiter) and self._deterministic(other)):
                break
            pieces.append(self.expression_regex(other, capture=False))
        else:
            pieces.append(r"\Z")
        return "".join(pieces)

    def compile(self) -> re.Pattern[str]:
        pieces: list[str] = []
        for k, part in enumerate(self.parts):
            if isinstance(part, str):
                pieces.append(re.escape(part))
                continue
            g = f"_e{k}"
            plan = self.plans[k]
            body = self.expression_regex(plan, capture=True)
            follow = self._follow_regex(k)
            if k + 1 == len(self.parts) or isinstance(self.parts[k + 1], str):
                pieces.append(f"(?=(?P<{g}>{body}){follow})(?P={g})")
                continue
            # Adjacent to another expression: prefer the extent that leaves the next
            # expression(s) empty, else take the longest run (both atomically).
            fallback = self.expression_regex(plan, capture=True)
            preferred = f"(?=(?P<{g}p>{body}){follow})(?P={g}p)"
            greedy = f"(?=(?P<{g}g>{fallback}))(?P={g}g)"
            pieces.append(f"(?=(?P<{g}>{preferred}|{greedy}))(?P={g})")
        return re.compile("".join(pieces))


def _split_query(parts: list[_Part]) -> tuple[list[_Part], _QuerySpec | None]:
    """Separate a trailing query (``{?a}{&b}``, ``?k=v{&x}``) from the rest of the template."""
    i = len(parts)
    while i > 0:
        part = parts[i - 1]
        if isinstance(part, _Expr):
            if part.op not in ("?", "&"):
                break
            i -= 1
            if part.op == "?":
                break
        elif "?" in part or "#" in part:
            break
        else:
            i -= 1
    tail = list(parts[i:])
    head = list(parts[:i])
    if not any(isinstance(p, _Expr) for p in tail):
        return parts, None
    first = tail[0]
    if not (isinstance(first, _Expr) and first.op == "?"):
        # The query must start inside the preceding literal, at its only "?".
        if not head or not isinstance(head[-1], str) or head[-1].count("?") != 1:
            return parts, None
        before, _, after = head[-1].partition("?")
        if "#" in after:
            return parts, None
        head = head[:-1] + ([before] if before else [])
        if after:
            tail.insert(0, after)
    for part in head:
        if isinstance(part, str):
            if "?" in part or "#" in part:
                return parts, None
        elif part.op in ("#", "?", "&"):
            return parts, None
    variables: dict[str, _VarSpec] = {}
    fixed: Counter[str] = Counter()
    previous: _Part | None = None
    for part in tail:
        if isinstance(part, str):
            if isinstance(previous, _Expr) and not part.startswith("&"):
                return parts, None
            fixed.update(p for p in part.split("&") if p)
        else:
            for spec in part.specs:
                if spec.name in variables:
                    return parts, None
                variables[spec.name] = spec
        previous = part
    for spec in list(variables.values()):
        decoded = _decode_name(spec.name)
        if decoded is not None and decoded != spec.name:
            variables.setdefault(decoded, spec)
    return head, _QuerySpec(variables, fixed)


# --- matching: evaluation ----------------------------------------------------------


_ESCAPE_RUN = re.compile(r"(?:%[0-9A-Fa-f]{2})+")
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")


class UriEscapeError(ValueError):
    """A matched value whose percent-escapes are malformed or not UTF-8.

    ``escape`` is the offending text as it stands in the URI (``%ZZ``, a lone
    ``%``, or escapes such as ``%FF`` or ``%E2%82``), ``variable`` the template
    variable whose value holds it.
    """

    def __init__(self, variable: str, escape: str, *, utf8: bool) -> None:
        self.variable = variable
        self.escape = escape
        if utf8:
            why = f"the percent-escape(s) {escape!r}, which do not decode as UTF-8"
        else:
            why = f"{escape!r}, which is not a percent-escape ('%' and two hex digits)"
        super().__init__(f"the value of URI template variable {variable!r} holds {why}")


def _decode_name(s: str) -> str | None:
    """``s`` percent-decoded as UTF-8, or ``None`` (query keys, variable names)."""
    if "%" not in s:
        return s
    try:
        return unquote(s, errors="strict")
    except UnicodeDecodeError:
        return None


def _decode(s: str, name: str) -> str:
    """A value of variable ``name`` percent-decoded as UTF-8 (raises ``UriEscapeError``)."""
    if "%" not in s:
        return s
    bad = _BAD_PERCENT.search(s)
    if bad is not None:
        raise UriEscapeError(name, s[bad.start() : bad.start() + 3], utf8=False)
    out: list[str] = []
    last = 0
    for m in _ESCAPE_RUN.finditer(s):
        run = m.group()
        try:
            text = bytes.fromhex(run.replace("%", "")).decode("utf-8")
        except UnicodeDecodeError as exc:  # three characters of the run per byte
            raise UriEscapeError(name, run[3 * exc.start : 3 * exc.end], utf8=True) from None
        out.append(s[last : m.start()])
        out.append(text)
        last = m.end()
    out.append(s[last:])
    return "".join(out)


def _named_value(item: str, name: str) -> str:
    rest = item[len(name) :]
    return _decode(rest[1:], name) if rest else ""


def _read_slot(slot: _Slot, raw: str) -> _MatchValue | None:
    name = slot.spec.name
    if slot.kind == _SPLIT:
        return [_decode(x, name) for x in raw.split(slot.sep)]
    if slot.kind == _NAMED_LIST:
        return [_named_value(x, name) for x in raw.split(slot.sep)]
    value = _decode(raw, name) if slot.kind == _PLAIN else _named_value(raw, name)
    if slot.spec.prefix is not None and len(value) > slot.spec.prefix:
        return None
    return value


class _Results:
    """Collects matched values; a variable seen twice must agree with itself.

    A prefix-modified occurrence (``{var:3}``) only has to agree with the start of
    the full value; if every occurrence is prefix-modified, the longest one wins.
    """

    __slots__ = ("partial", "values")

    def __init__(self) -> None:
        self.values: dict[str, _MatchValue] = {}
        self.partial: list[tuple[str, int, str]] = []

    def add(self, spec: _VarSpec, value: _MatchValue) -> bool:
        if spec.prefix is not None and isinstance(value, str):
            self.partial.append((spec.name, spec.prefix, value))
            return True
        if spec.name in self.values:
            return self.values[spec.name] == value
        self.values[spec.name] = value
        return True

    def finish(self) -> dict[str, _MatchValue] | None:
        for name, prefix, value in sorted(self.partial, key=lambda p: -len(p[2])):
            full = self.values.setdefault(name, value)
            if not isinstance(full, str) or full[:prefix] != value:
                return None
        return self.values


def _query_shape(spec: _QuerySpec, query: str) -> list[tuple[_VarSpec, str]] | None:
    """The query's ``(variable, raw value)`` pairs if it has the template's shape, else None.

    The shape: no ``#``, every key a template variable (as spelled or
    percent-decoded) or a literal pair, non-exploded variables at most once,
    every literal pair present. Values are decoded by ``_add_query``.
    """
    if "#" in query:
        return None
    fixed = spec.fixed.copy()
    pairs: list[tuple[_VarSpec, str]] = []
    seen: set[str] = set()
    for pair in query.split("&"):
        if not pair:
            continue
        if fixed[pair] > 0:
            fixed[pair] -= 1
            continue
        key, _, raw = pair.partition("=")
        var = spec.variables.get(key)
        if var is None:
            decoded_key = _decode_name(key)
            var = spec.variables.get(decoded_key) if decoded_key is not None else None
        if var is None:
            return None
        if not var.explode:
            if var.name in seen:
                return None
            seen.add(var.name)
        pairs.append((var, raw))
    if any(n > 0 for n in fixed.values()):
        return None
    return pairs


def _add_query(pairs: list[tuple[_VarSpec, str]], result: _Results) -> bool:
    """Decode the query's values into ``result`` (raises ``UriEscapeError``)."""
    scalars: dict[str, str] = {}
    lists: dict[str, list[str]] = {}
    variables: dict[str, _VarSpec] = {}
    for var, raw in pairs:
        value = _decode(raw, var.name)
        variables[var.name] = var
        if var.explode:
            lists.setdefault(var.name, []).append(value)
        elif var.prefix is not None and len(value) > var.prefix:
            return False
        else:
            scalars[var.name] = value
    merged: dict[str, _MatchValue] = {**scalars, **lists}
    return all(result.add(variables[name], value) for name, value in merged.items())
