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
    Python tuples count as arrays. ``unevaluatedProperties``,
    ``unevaluatedItems`` and ``$dynamicRef`` are not implemented (ignored);
    draft-07 ``items`` arrays, ``additionalItems``, ``dependencies`` and draft-04
    boolean ``exclusiveMinimum`` are understood. ``multipleOf`` is computed in
    decimal (see ``_jsonschema_checks``).

Where the code lives
    This module holds the compiler (walking the schema, resolving ``$ref``,
    grouping keywords by JSON type) and the public API. The check factories,
    one per keyword, with their JSON semantics, are in ``_jsonschema_checks``;
    the check signature, the error-collecting ``_Run``, path and value
    rendering and the canonical form behind JSON equality are in
    ``_jsonschema_util``.
"""

from __future__ import annotations

import re
from typing import Any, Final

from ._jsonschema_checks import (
    _any_of,
    _bound,
    _const_check,
    _contains,
    _dependent_required,
    _dependent_schemas,
    _enum_check,
    _if_then_else,
    _items,
    _length,
    _multiple_of,
    _not,
    _one_of,
    _pattern,
    _properties,
    _property_names,
    _required,
    _size,
    _type_check,
    _unique,
)
from ._jsonschema_util import _NONE, _accept, _Check, _fmt_path, _Path, _reject, _render, _Run

__all__ = ("DEFAULT_MAX_DEPTH", "DEFAULT_MAX_ERRORS", "Validator", "compile", "validate")

DEFAULT_MAX_ERRORS: Final = 20
DEFAULT_MAX_DEPTH: Final = 128

_PERCENT = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


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
