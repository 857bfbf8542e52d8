"""JSON Schema (draft 2020-12 subset) validation for MCP tool arguments and results.

Theory of operation
===================

``compile(schema)`` turns a schema into a tree of small closures once; the
resulting ``Validator`` is then run against any number of instances. A server
compiles each tool's ``inputSchema`` (and ``outputSchema``) when the tool is
registered, so the per-call cost is only running the closures.

Checks
    Every subschema becomes a *check*: ``check(instance, run, path, depth) -> bool``.
    A schema object becomes one check per keyword, grouped by the JSON type the
    keyword applies to (``minimum`` only looks at numbers, ``properties`` only
    at objects, and so on). The node for the subschema picks the group by the
    instance's exact Python type with one dict lookup, so a keyword never has to
    re-test the type, and a node with a single generic check (``{"type":
    "string"}``) *is* that check. ``true``, ``{}`` and schemas that are not
    objects at all share one check that accepts everything.

Two passes, strings only on failure
    ``run`` is ``None`` on the first pass: checks short-circuit on the first
    failure and build no paths and no messages, so a valid instance costs only
    the comparisons. Only when that pass fails is the instance walked again with
    a ``_Run`` that collects ``(path, text)`` pairs, up to ``max_errors``; paths
    are tuples, extended only on this second pass, and rendered at the end as
    ``$.items[2].name``. ``anyOf``, ``oneOf``, ``not``, ``if`` and ``contains``
    always ask their subschemas the boolean question; when an ``anyOf`` fails,
    each branch is re-run for its first error so the message says why.

JSON semantics, not Python's
    ``bool`` is not a number; ``1.0`` is an integer; ``enum``, ``const`` and
    ``uniqueItems`` compare by JSON equality (``1 == 1.0``, ``true != 1``) via a
    hashable canonical form computed once per value, so ``enum`` is one set
    lookup and ``uniqueItems`` is linear. Strings are measured in code points.

Permissive on bad schemas, bounded on bad input
    ``validate`` never raises. A keyword whose value has the wrong shape, an
    unknown type name, an invalid ``pattern`` and a ``$ref`` that is remote or
    does not resolve are all ignored (so a schema we cannot understand rejects
    nothing); ``format`` and the other annotation keywords are never asserted.
    ``$ref`` resolves only inside the document (``#``, ``#/json/pointer``,
    ``#anchor``); nothing is ever fetched. Referenced schemas are compiled from
    a work list after the root, so cycles cost nothing at compile time. Every
    subschema application counts one level of depth: a ``$ref`` past
    ``max_depth`` levels, and a schema nested deeper than that, fail with a
    depth error instead of recursing further. Any unexpected exception becomes
    one error message.

Deliberate deviations
    ``multipleOf`` with a non-integer divisor is computed in decimal on the
    shortest ``repr`` of the numbers, as they were written in JSON, so ``0.3``
    is a multiple of ``0.1`` (binary floating point says it is not). Python tuples count as arrays.
    ``unevaluatedProperties``, ``unevaluatedItems`` and ``$dynamicRef`` are not
    implemented (ignored); draft-07 ``items`` arrays, ``additionalItems``,
    ``dependencies`` and draft-04 boolean ``exclusiveMinimum`` are understood.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any, Final, TypeAlias

__all__ = ("DEFAULT_MAX_DEPTH", "DEFAULT_MAX_ERRORS", "Validator", "compile", "validate")

DEFAULT_MAX_ERRORS: Final = 20
DEFAULT_MAX_DEPTH: Final = 128

_Path: TypeAlias = "tuple[object, ...]"
# Checks of a type-specific group receive instances of that type only, hence ``Any``.
_Check: TypeAlias = "Callable[[Any, _Run | None, _Path, int], bool]"

_NONE = type(None)
_TYPES: Final[dict[str, tuple[type, ...]]] = {
    "null": (_NONE,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "string": (str,),
    "array": (list, tuple),
    "object": (dict,),
}
_EXACT: Final = frozenset((_NONE, bool, int, float, str, list, tuple, dict))
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CANON_DEPTH: Final = 256
_PERCENT = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


class _Run:
    """Error collection for the second pass."""

    __slots__ = ("errors", "limit")

    def __init__(self, limit: int) -> None:
        self.errors: list[tuple[_Path, str]] = []
        self.limit = limit

    @property
    def full(self) -> bool:
        return len(self.errors) >= self.limit

    def add(self, path: _Path, text: str) -> None:
        if len(self.errors) < self.limit:
            self.errors.append((path, text))


def _accept(inst: object, run: _Run | None, path: _Path, depth: int) -> bool:
    return True


def _reject(inst: object, run: _Run | None, path: _Path, depth: int) -> bool:
    if run is not None:
        run.add(path, "no value is allowed here (the schema is false)")
    return False


# --------------------------------------------------------------------------- rendering


def _fmt_path(path: _Path) -> str:
    parts = ["$"]
    for p in path:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        elif isinstance(p, str) and _IDENT.match(p):
            parts.append("." + p)
        else:
            parts.append("[" + _render(p) + "]")
    return "".join(parts)


def _render(value: object, limit: int = 60) -> str:
    """A short JSON-looking rendering of ``value``; cost is bounded whatever its size."""
    out: list[str] = []
    _render_into(value, out, 2)
    text = "".join(out)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _render_into(v: object, out: list[str], depth: int) -> None:
    if v is None:
        out.append("null")
    elif v is True or v is False:
        out.append("true" if v else "false")
    elif isinstance(v, str):
        out.append(json.dumps(v[:61], ensure_ascii=False))
    elif isinstance(v, int):
        out.append(str(v) if -(10**60) < v < 10**60 else "<large integer>")
    elif isinstance(v, float):
        out.append(repr(v))
    elif isinstance(v, (list, tuple)):
        if depth <= 0 and v:
            out.append("[…]")
            return
        out.append("[")
        for i, x in enumerate(v):
            if i:
                out.append(", ")
            if i == 4:
                out.append("…")
                break
            _render_into(x, out, depth - 1)
        out.append("]")
    elif isinstance(v, dict):
        if depth <= 0 and v:
            out.append("{…}")
            return
        out.append("{")
        for i, (k, x) in enumerate(v.items()):
            if i:
                out.append(", ")
            if i == 4:
                out.append("…")
                break
            _render_into(k, out, 0)
            out.append(": ")
            _render_into(x, out, depth - 1)
        out.append("}")
    else:
        out.append(f"<{type(v).__name__}>")


def _quoted(names: list[str]) -> str:
    return ", ".join(json.dumps(n, ensure_ascii=False) for n in names)


# --------------------------------------------------------------------------- JSON equality


class _Uncomparable(Exception):
    pass


def _canon(v: object, depth: int = 0) -> object:
    """A hashable form of a JSON value such that JSON-equal values are equal."""
    t = type(v)
    if t is str or v is None or t is int:
        return v
    if t is bool:
        return ("b", v)
    if t is float:
        return int(v) if v.is_integer() else v  # type: ignore[attr-defined, call-overload]
    if depth > _CANON_DEPTH:
        raise _Uncomparable
    if isinstance(v, (list, tuple)):
        return ("a", tuple([_canon(x, depth + 1) for x in v]))
    if isinstance(v, dict):
        return ("o", frozenset([(k, _canon(x, depth + 1)) for k, x in v.items()]))
    if isinstance(v, bool):
        return ("b", bool(v))
    if isinstance(v, str):
        return str(v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return _canon(float(v))
    raise _Uncomparable


def _try_canon(v: object) -> tuple[bool, object]:
    try:
        return True, _canon(v)
    except (_Uncomparable, RecursionError, TypeError):
        return False, None


# --------------------------------------------------------------------------- keyword helpers


def _unquote(text: str) -> str:
    """Percent-decode a URI fragment (UTF-8; invalid sequences become U+FFFD)."""
    if "%" not in text:
        return text
    return _PERCENT.sub(
        lambda m: bytes.fromhex(m.group().replace("%", "")).decode("utf-8", "replace"), text
    )


def _number(x: object) -> int | float | None:
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return x
    return None


def _count(x: object) -> int | None:
    """A non-negative integer keyword value (``2.0`` counts), else ``None``."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or x < 0:
        return None
    if isinstance(x, float):
        return int(x) if x.is_integer() else None
    return x


def _json_type_is(inst: object, name: str) -> bool:
    """Slow path of ``type`` for instances whose class is not one of the exact JSON types."""
    if name == "null":
        return inst is None
    if name == "boolean":
        return isinstance(inst, bool)
    if name == "integer":
        if isinstance(inst, float):
            return inst.is_integer()
        return isinstance(inst, int) and not isinstance(inst, bool)
    if name == "number":
        return isinstance(inst, (int, float)) and not isinstance(inst, bool)
    if name == "string":
        return isinstance(inst, str)
    if name == "array":
        return isinstance(inst, (list, tuple))
    return name == "object" and isinstance(inst, dict)


def _category(inst: object) -> type:
    """The exact type whose keyword group applies to an instance of a foreign class."""
    if isinstance(inst, dict):
        return dict
    if isinstance(inst, (list, tuple)):
        return list
    if isinstance(inst, str):
        return str
    if isinstance(inst, bool):
        return bool
    if isinstance(inst, (int, float)):
        return float
    return object


def _branch_errors(
    subs: list[_Check], inst: object, path: _Path, depth: int, limit: int = 4
) -> str:
    parts: list[str] = []
    for i, sub in enumerate(subs):
        if i == limit:
            parts.append("…")
            break
        run = _Run(1)
        sub(inst, run, path, depth)
        if run.errors:
            p, text = run.errors[0]
            parts.append(text if p == path else f"{_fmt_path(p)}: {text}")
    return "; ".join(parts)


# --------------------------------------------------------------------------- compiler


class _Compiler:
    def __init__(self, root: object, max_depth: int) -> None:
        self.root = root
        self.max_depth = max_depth
        self.cells: dict[int, list[_Check]] = {}
        self.pending: list[tuple[object, list[_Check]]] = []
        self.anchors: dict[str, object] | None = None

    def compile_root(self) -> _Check:
        check = self.node(self.root, 0)
        while self.pending:
            target, cell = self.pending.pop()
            cell[0] = self.node(target, 0)
        return check

    def too_deep(self, inst: object, run: _Run | None, path: _Path, depth: int) -> bool:
        if run is not None:
            run.add(path, f"nesting exceeds the validation depth limit ({self.max_depth})")
        return False

    def node(self, schema: object, level: int) -> _Check:
        if schema is False:
            return _reject
        if not isinstance(schema, dict) or not schema:
            return _accept
        if level > self.max_depth:
            return self.too_deep
        generic: list[_Check] = []
        num: list[_Check] = []
        text: list[_Check] = []
        arr: list[_Check] = []
        obj: list[_Check] = []
        self.generic(schema, level + 1, generic)
        self.numeric(schema, num)
        self.string(schema, text)
        self.array(schema, level + 1, arr)
        self.object(schema, level + 1, obj)
        if not (num or text or arr or obj):
            if not generic:
                return _accept
            if len(generic) == 1:
                return generic[0]
        g = tuple(generic)
        table: dict[type, tuple[_Check, ...]] = {
            _NONE: g,
            bool: g,
            int: g + tuple(num),
            float: g + tuple(num),
            str: g + tuple(text),
            list: g + tuple(arr),
            tuple: g + tuple(arr),
            dict: g + tuple(obj),
            object: g,
        }

        def check_node(inst: object, run: _Run | None, path: _Path, depth: int) -> bool:
            checks = table.get(type(inst))
            if checks is None:
                checks = table[_category(inst)]
            if run is None:
                for c in checks:  # noqa: SIM110 - a plain loop is faster than all()
                    if not c(inst, None, path, depth):
                        return False
                return True
            ok = True
            for c in checks:
                if not c(inst, run, path, depth):
                    ok = False
                    if run.full:
                        break
            return ok

        return check_node

    # ----------------------------------------------------------------- any type

    def generic(self, kw: dict[Any, Any], level: int, out: list[_Check]) -> None:
        if "type" in kw:
            c = _type_check(kw["type"])
            if c is not None:
                out.append(c)
        if "enum" in kw and isinstance(kw["enum"], list):
            out.append(_enum_check(kw["enum"]))
        if "const" in kw:
            out.append(_const_check(kw["const"]))
        ref = kw.get("$ref")
        if isinstance(ref, str):
            c = self.ref(ref)
            if c is not None:
                out.append(c)
        all_of = kw.get("allOf")
        if isinstance(all_of, list) and all_of:
            out.extend(self.node(s, level) for s in all_of)
        any_of = kw.get("anyOf")
        if isinstance(any_of, list) and any_of:
            out.append(_any_of([self.node(s, level) for s in any_of]))
        one_of = kw.get("oneOf")
        if isinstance(one_of, list) and one_of:
            out.append(_one_of([self.node(s, level) for s in one_of]))
        if "not" in kw:
            out.append(_not(self.node(kw["not"], level)))
        if "if" in kw and ("then" in kw or "else" in kw):
            cond = self.node(kw["if"], level)
            then = self.node(kw["then"], level) if "then" in kw else _accept
            other = self.node(kw["else"], level) if "else" in kw else _accept
            out.append(_if_then_else(cond, then, other))

    def ref(self, ref: str) -> _Check | None:
        found, target = self.resolve(ref)
        if not found:
            return None
        cell = self.cells.get(id(target))
        if cell is None:
            cell = [_accept]
            self.cells[id(target)] = cell
            self.pending.append((target, cell))
        limit = self.max_depth
        too_deep = self.too_deep

        def check_ref(inst: object, run: _Run | None, path: _Path, depth: int) -> bool:
            if depth >= limit:
                return too_deep(inst, run, path, depth)
            return cell[0](inst, run, path, depth + 1)

        return check_ref

    def resolve(self, ref: str) -> tuple[bool, object]:
        if not ref.startswith("#"):
            return False, None  # remote or relative reference: never fetched
        fragment = _unquote(ref[1:])
        if not fragment:
            return True, self.root
        if not fragment.startswith("/"):
            anchors = self.find_anchors()
            return (fragment in anchors), anchors.get(fragment)
        node = self.root
        for token in fragment[1:].split("/"):
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return False, None
        return True, node

    def find_anchors(self) -> dict[str, object]:
        if self.anchors is None:
            self.anchors = {}
            stack = [self.root]
            budget = 100_000
            while stack and budget:
                budget -= 1
                item = stack.pop()
                if isinstance(item, dict):
                    anchor = item.get("$anchor")
                    if isinstance(anchor, str):
                        self.anchors.setdefault(anchor, item)
                    stack.extend(item.values())
                elif isinstance(item, list):
                    stack.extend(item)
        return self.anchors

    # ----------------------------------------------------------------- numbers

    def numeric(self, kw: dict[Any, Any], out: list[_Check]) -> None:
        lo, hi = _number(kw.get("minimum")), _number(kw.get("maximum"))
        xlo, xhi = _number(kw.get("exclusiveMinimum")), _number(kw.get("exclusiveMaximum"))
        if kw.get("exclusiveMinimum") is True and lo is not None:  # draft-04 form
            lo, xlo = None, lo
        if kw.get("exclusiveMaximum") is True and hi is not None:
            hi, xhi = None, hi
        if lo is not None:
            out.append(_bound(lo, False, True))
        if hi is not None:
            out.append(_bound(hi, False, False))
        if xlo is not None:
            out.append(_bound(xlo, True, True))
        if xhi is not None:
            out.append(_bound(xhi, True, False))
        m = _number(kw.get("multipleOf"))
        if m is not None and m > 0:
            out.append(_multiple_of(m))

    # ----------------------------------------------------------------- strings

    def string(self, kw: dict[Any, Any], out: list[_Check]) -> None:
        lo, hi = _count(kw.get("minLength")), _count(kw.get("maxLength"))
        if lo or hi is not None:
            out.append(_length(lo or 0, hi))
        pattern = kw.get("pattern")
        if isinstance(pattern, str):
            try:
                rx = re.compile(pattern)
            except (re.error, RecursionError, OverflowError, ValueError):
                pass
            else:
                out.append(_pattern(rx, pattern))

    # ----------------------------------------------------------------- arrays

    def array(self, kw: dict[Any, Any], level: int, out: list[_Check]) -> None:
        prefix = kw.get("prefixItems")
        items = kw.get("items")
        rest: object = None
        if isinstance(items, list):  # draft-07 tuple form
            if not isinstance(prefix, list):
                prefix = items
                rest = kw.get("additionalItems")
        else:
            rest = items
        prefix_checks = [self.node(s, level) for s in prefix] if isinstance(prefix, list) else []
        rest_check = None if rest is None or rest is True else self.node(rest, level)
        if rest_check is _accept:
            rest_check = None
        if rest_check is not None or any(c is not _accept for c in prefix_checks):
            out.append(_items(prefix_checks, rest_check, rest is False))
        lo, hi = _count(kw.get("minItems")), _count(kw.get("maxItems"))
        if lo or hi is not None:
            out.append(_size(lo or 0, hi, "item"))
        if kw.get("uniqueItems") is True:
            out.append(_unique)
        if "contains" in kw:
            lo = _count(kw.get("minContains"))
            out.append(
                _contains(
                    self.node(kw["contains"], level),
                    1 if lo is None else lo,
                    _count(kw.get("maxContains")),
                )
            )

    # ----------------------------------------------------------------- objects

    def object(self, kw: dict[Any, Any], level: int, out: list[_Check]) -> None:
        props = kw.get("properties")
        props_checks = (
            {k: self.node(s, level) for k, s in props.items()} if isinstance(props, dict) else {}
        )
        patterns: list[tuple[re.Pattern[str], _Check]] = []
        pattern_props = kw.get("patternProperties")
        if isinstance(pattern_props, dict):
            for p, s in pattern_props.items():
                try:
                    patterns.append((re.compile(p), self.node(s, level)))
                except (re.error, RecursionError, OverflowError, ValueError, TypeError):
                    pass
        extra = kw.get("additionalProperties")
        extra_check = None if extra is None or extra is True else self.node(extra, level)
        if extra_check is _accept:
            extra_check = None
        if (
            extra_check is not None
            or patterns
            or any(c is not _accept for c in props_checks.values())
        ):
            out.append(_properties(props_checks, patterns, extra_check, extra is False))
        required = kw.get("required")
        if isinstance(required, list):
            names = [n for n in required if isinstance(n, str)]
            if names:
                out.append(_required(names))
        if "propertyNames" in kw:
            c = self.node(kw["propertyNames"], level)
            if c is not _accept:
                out.append(_property_names(c))
        lo, hi = _count(kw.get("minProperties")), _count(kw.get("maxProperties"))
        if lo or hi is not None:
            out.append(_size(lo or 0, hi, "property"))
        dep_required = kw.get("dependentRequired")
        dep_schemas = kw.get("dependentSchemas")
        deps = kw.get("dependencies")  # draft-07: both kinds in one keyword
        pairs: list[tuple[str, list[str]]] = []
        schemas: list[tuple[str, _Check]] = []
        for source in (dep_required, deps):
            if isinstance(source, dict):
                for k, v in source.items():
                    if isinstance(v, list):
                        pairs.append((k, [n for n in v if isinstance(n, str)]))
        for source in (dep_schemas, deps):
            if isinstance(source, dict):
                for k, v in source.items():
                    if isinstance(v, (dict, bool)):
                        schemas.append((k, self.node(v, level)))
        if pairs:
            out.append(_dependent_required(pairs))
        if schemas:
            out.append(_dependent_schemas(schemas))


# --------------------------------------------------------------------------- check factories


def _type_check(spec: object) -> _Check | None:
    names = [spec] if isinstance(spec, str) else spec
    if not isinstance(names, list) or not names:
        return None
    if not all(isinstance(n, str) and n in _TYPES for n in names):
        return None  # unknown type name: ignore the keyword
    exact = frozenset(t for n in names for t in _TYPES[n])
    integral = "integer" in names and "number" not in names
    label = " or ".join(json.dumps(n) for n in names)

    def check_type(inst: object, run: _Run | None, path: _Path, depth: int) -> bool:
        t = type(inst)
        if t in exact:
            return True
        if integral and t is float and inst.is_integer():  # type: ignore[attr-defined]
            return True
        if t not in _EXACT and any(_json_type_is(inst, n) for n in names):
            return True
        if run is not None:
            run.add(path, f"{_render(inst)} is not of type {label}")
        return False

    return check_type


def _enum_check(values: list[object]) -> _Check:
    keys = set()
    for v in values:
        ok, key = _try_canon(v)
        if ok:
            keys.add(key)

    def check_enum(inst: object, run: _Run | None, path: _Path, depth: int) -> bool:
        if type(inst) is str:
            if inst in keys:
                return True
        else:
            ok, key = _try_canon(inst)
            if ok and key in keys:
                return True
        if run is not None:
            run.add(path, f"{_render(inst)} is not one of {_render(values, 120)}")
        return False

    return check_enum


def _const_check(value: object) -> _Check:
    usable, key = _try_canon(value)

    def check_const(inst: object, run: _Run | None, path: _Path, depth: int) -> bool:
        if not usable:
            return True
        ok, got = _try_canon(inst)
        if ok and got == key:
            return True
        if run is not None:
            run.add(path, f"{_render(value)} was expected, got {_render(inst)}")
        return False

    return check_const


def _any_of(subs: list[_Check]) -> _Check:
    def check_any_of(inst: object, run: _Run | None, path: _Path, depth: int) -> bool:
        d = depth + 1
        for s in subs:
            if s(inst, None, path, d):
                return True
        if run is not None:
            why = _branch_errors(subs, inst, path, d)
            run.add(path, f"{_render(inst)} does not match any of the alternatives ({why})")
        return False

    return check_any_of


def _one_of(subs: list[_Check]) -> _Check:
    def check_one_of(inst: object, run: _Run | None, path: _Path, depth: int) -> bool:
        d = depth + 1
        matched: list[int] = []
        for i, s in enumerate(subs):
            if s(inst, None, path, d):
                matched.append(i)
                if len(matched) > 1:
                    break
        if len(matched) == 1:
            return True
        if run is not None:
            if matched:
                run.add(
                    path,
                    f"{_render(inst)} matches more than one alternative of oneOf "
                    f"(#{matched[0]} and #{matched[1]})",
                )
            else:
                why = _branch_errors(subs, inst, path, d)
                run.add(path, f"{_render(inst)} does not match any of the alternatives ({why})")
        return False

    return check_one_of


def _not(sub: _Check) -> _Check:
    def check_not(inst: object, run: _Run | None, path: _Path, depth: int) -> bool:
        if not sub(inst, None, path, depth + 1):
            return True
        if run is not None:
            run.add(path, f"{_render(inst)} matches a schema it must not match (not)")
        return False

    return check_not


def _if_then_else(cond: _Check, then: _Check, other: _Check) -> _Check:
    def check_if(inst: object, run: _Run | None, path: _Path, depth: int) -> bool:
        branch = then if cond(inst, None, path, depth + 1) else other
        return branch(inst, run, path, depth + 1)

    return check_if


def _bound(limit: int | float, exclusive: bool, lower: bool) -> _Check:
    if lower:
        text = (
            "less than or equal to the exclusive minimum" if exclusive else "less than the minimum"
        )
    else:
        text = (
            "greater than or equal to the exclusive maximum"
            if exclusive
            else "greater than the maximum"
        )

    def check_bound(inst: Any, run: _Run | None, path: _Path, depth: int) -> bool:
        if lower:
            bad = inst <= limit if exclusive else inst < limit
        else:
            bad = inst >= limit if exclusive else inst > limit
        if not bad:
            return True
        if run is not None:
            run.add(path, f"{_render(inst)} is {text} of {_render(limit)}")
        return False

    return check_bound


def _multiple_of(m: int | float) -> _Check:
    def check_multiple(inst: Any, run: _Run | None, path: _Path, depth: int) -> bool:
        try:
            if isinstance(m, int):
                ok = inst % m == 0
            else:
                ok = _decimal_multiple(inst, m)
        except (OverflowError, ValueError, ArithmeticError):
            ok = False
        if ok:
            return True
        if run is not None:
            run.add(path, f"{_render(inst)} is not a multiple of {_render(m)}")
        return False

    return check_multiple


def _decimal_multiple(inst: int | float, m: float) -> bool:
    """``multipleOf`` for a non-integer divisor, in decimal as the JSON text was written.

    Floats are read back from their shortest ``repr`` so that 0.3 is a multiple
    of 0.1; a quotient too large for the decimal context falls back to exact
    binary fractions.
    """
    from decimal import Context, Decimal, InvalidOperation  # rarely needed: import lazily
    from fractions import Fraction

    if isinstance(inst, float) and not math.isfinite(inst):
        return False
    a = Decimal(inst) if isinstance(inst, int) else Decimal(repr(float(inst)))
    try:
        return Context(prec=50).remainder(a, Decimal(repr(m))) == 0
    except InvalidOperation:
        return Fraction(inst) % Fraction(m) == 0


def _length(lo: int, hi: int | None) -> _Check:
    def check_length(inst: Any, run: _Run | None, path: _Path, depth: int) -> bool:
        n = len(inst)
        if n >= lo and (hi is None or n <= hi):
            return True
        if run is not None:
            if n < lo:
                run.add(path, f"{_render(inst)} is shorter than {lo} characters")
            else:
                run.add(path, f"{_render(inst)} is longer than {hi} characters")
        return False

    return check_length


def _pattern(rx: re.Pattern[str], source: str) -> _Check:
    def check_pattern(inst: Any, run: _Run | None, path: _Path, depth: int) -> bool:
        if rx.search(inst) is not None:
            return True
        if run is not None:
            run.add(path, f"{_render(inst)} does not match the pattern {_render(source, 80)}")
        return False

    return check_pattern


def _size(lo: int, hi: int | None, noun: str) -> _Check:
    plural = "properties" if noun == "property" else "items"

    def check_size(inst: Any, run: _Run | None, path: _Path, depth: int) -> bool:
        n = len(inst)
        if n >= lo and (hi is None or n <= hi):
            return True
        if run is not None:
            if n < lo:
                want = f"at least {lo} {noun if lo == 1 else plural}"
            else:
                want = f"at most {hi} {noun if hi == 1 else plural}"
            run.add(path, f"expected {want}, got {n}")
        return False

    return check_size


def _items(prefix: list[_Check], rest: _Check | None, rest_false: bool) -> _Check:
    n_prefix = len(prefix)

    def check_items(inst: Any, run: _Run | None, path: _Path, depth: int) -> bool:
        d = depth + 1
        ok = True
        n = len(inst)
        for i in range(min(n, n_prefix)):
            if not prefix[i](inst[i], run, (*path, i) if run else path, d):
                if run is None:
                    return False
                ok = False
                if run.full:
                    return False
        if rest is None or n <= n_prefix:
            return ok
        if rest_false:
            if run is not None:
                run.add(path, f"expected at most {n_prefix} items, got {n}")
            return False
        for i in range(n_prefix, n):
            if not rest(inst[i], run, (*path, i) if run else path, d):
                if run is None:
                    return False
                ok = False
                if run.full:
                    return False
        return ok

    return check_items


def _unique(inst: Any, run: _Run | None, path: _Path, depth: int) -> bool:
    seen: dict[object, int] = {}
    for i, x in enumerate(inst):
        ok, key = _try_canon(x)
        if not ok:
            return True  # cannot compare: be permissive
        j = seen.setdefault(key, i)
        if j != i:
            if run is not None:
                run.add(path, f"items {j} and {i} are equal ({_render(x)}); items must be unique")
            return False
    return True


def _contains(sub: _Check, lo: int, hi: int | None) -> _Check:
    def check_contains(inst: Any, run: _Run | None, path: _Path, depth: int) -> bool:
        if lo == 0 and hi is None:
            return True
        d = depth + 1
        count = 0
        for x in inst:
            if sub(x, None, path, d):
                count += 1
                if hi is None and count >= lo:
                    return True
                if hi is not None and count > hi:
                    break
        if count >= lo and (hi is None or count <= hi):
            return True
        if run is not None:
            if count < lo:
                want = "an item" if lo == 1 else f"at least {lo} items"
                run.add(path, f"expected {want} matching the 'contains' schema, found {count}")
            else:
                run.add(path, f"expected at most {hi} items matching the 'contains' schema")
        return False

    return check_contains


def _properties(
    props: dict[str, _Check],
    patterns: list[tuple[re.Pattern[str], _Check]],
    extra: _Check | None,
    extra_false: bool,
) -> _Check:
    allowed = _quoted(sorted(props)[:12]) + (", …" if len(props) > 12 else "")
    hint = f" (allowed: {allowed})" if props else ""

    def check_properties(inst: Any, run: _Run | None, path: _Path, depth: int) -> bool:
        d = depth + 1
        ok = True
        for k, v in inst.items():
            sub = props.get(k)
            matched = sub is not None
            if sub is not None and not sub(v, run, (*path, k) if run else path, d):
                if run is None:
                    return False
                ok = False
                if run.full:
                    return False
            if patterns and isinstance(k, str):
                for rx, psub in patterns:
                    if rx.search(k) is not None:
                        matched = True
                        if not psub(v, run, (*path, k) if run else path, d):
                            if run is None:
                                return False
                            ok = False
                            if run.full:
                                return False
            if matched or extra is None:
                continue
            if extra_false:
                if run is None:
                    return False
                run.add(path, f"unexpected property {_render(k)}{hint}")
                ok = False
            elif not extra(v, run, (*path, k) if run else path, d):
                if run is None:
                    return False
                ok = False
            if run is not None and run.full:
                return False
        return ok

    return check_properties


def _required(names: list[str]) -> _Check:
    def check_required(inst: Any, run: _Run | None, path: _Path, depth: int) -> bool:
        ok = True
        for name in names:
            if name not in inst:
                if run is None:
                    return False
                run.add(path, f"missing required property {_render(name)}")
                ok = False
        return ok

    return check_required


def _property_names(sub: _Check) -> _Check:
    def check_names(inst: Any, run: _Run | None, path: _Path, depth: int) -> bool:
        ok = True
        for k in inst:
            if not sub(k, None, path, depth + 1):
                if run is None:
                    return False
                why = _branch_errors([sub], k, path, depth + 1)
                run.add(path, f"invalid property name {_render(k)} ({why})")
                ok = False
                if run.full:
                    return False
        return ok

    return check_names


def _dependent_required(pairs: list[tuple[str, list[str]]]) -> _Check:
    def check_dep_required(inst: Any, run: _Run | None, path: _Path, depth: int) -> bool:
        ok = True
        for trigger, names in pairs:
            if trigger not in inst:
                continue
            for name in names:
                if name not in inst:
                    if run is None:
                        return False
                    run.add(
                        path,
                        f"property {_render(name)} is required when {_render(trigger)} is present",
                    )
                    ok = False
        return ok

    return check_dep_required


def _dependent_schemas(pairs: list[tuple[str, _Check]]) -> _Check:
    def check_dep_schemas(inst: Any, run: _Run | None, path: _Path, depth: int) -> bool:
        ok = True
        for trigger, sub in pairs:
            if trigger in inst and not sub(inst, run, path, depth + 1):
                if run is None:
                    return False
                ok = False
                if run.full:
                    return False
        return ok

    return check_dep_schemas


# --------------------------------------------------------------------------- public API


class Validator:
    """A compiled schema. Build with ``compile(schema)``; reuse for many instances.

    The schema is read once, at compile time: later changes to it are not seen.
    """

    __slots__ = ("_check", "max_depth", "max_errors", "schema")

    def __init__(self, schema: object, *, max_errors: int, max_depth: int) -> None:
        self.schema = schema
        self.max_errors = max(1, max_errors)
        self.max_depth = max(1, max_depth)
        try:
            self._check: _Check = _Compiler(schema, self.max_depth).compile_root()
        except Exception:  # a schema we cannot even walk rejects nothing
            self._check = _accept

    def __repr__(self) -> str:
        return f"<Validator for {_render(self.schema)}>"

    def is_valid(self, instance: object) -> bool:
        """Whether ``instance`` is valid. Never raises."""
        try:
            return self._check(instance, None, (), 0)
        except Exception:
            return False

    def validate(self, instance: object) -> list[str]:
        """Human-readable errors (``"$.path: message"``), at most ``max_errors``; ``[]`` if valid.

        Never raises.
        """
        try:
            if self._check(instance, None, (), 0):
                return []
            run = _Run(self.max_errors)
            self._check(instance, run, (), 0)
        except Exception as exc:
            return [f"$: validation aborted ({type(exc).__name__})"]
        if not run.errors:
            return ["$: the value does not match the schema"]
        return [f"{_fmt_path(p)}: {text}" for p, text in run.errors]


def compile(
    schema: object,
    *,
    max_errors: int = DEFAULT_MAX_ERRORS,
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> Validator:
    """Compile a JSON Schema (a ``dict`` or ``bool``) into a reusable ``Validator``.

    Never raises: whatever part of the schema is malformed is ignored.
    """
    return Validator(schema, max_errors=max_errors, max_depth=max_depth)


def validate(instance: object, schema: object) -> list[str]:
    """Validate ``instance`` against ``schema``; see ``Validator.validate``."""
    return Validator(schema, max_errors=DEFAULT_MAX_ERRORS, max_depth=DEFAULT_MAX_DEPTH).validate(
        instance
    )
