"""Check factories of ``mcpwire._jsonschema``: one closure per schema keyword.

Part of the theory of operation of ``mcpwire._jsonschema``, whose compiler calls
these. Each factory returns a *check*, ``check(instance, run, path, depth) ->
bool``, for one keyword; it only builds messages when ``run`` is not ``None``
(the second pass). Checks of a type-specific group (numbers, strings, arrays,
objects) are only ever given instances of that type.

JSON semantics, not Python's
    ``bool`` is not a number; ``1.0`` is an integer; ``enum``, ``const`` and
    ``uniqueItems`` compare by JSON equality (``1 == 1.0``, ``true != 1``) via a
    hashable canonical form computed once per value, so ``enum`` is one set
    lookup and ``uniqueItems`` is linear. Strings are measured in code points.

Deliberate deviation
    ``multipleOf`` with a non-integer divisor is computed in decimal on the
    shortest ``repr`` of the numbers, as they were written in JSON, so ``0.3``
    is a multiple of ``0.1`` (binary floating point says it is not).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

from ._jsonschema_util import _NONE, _Check, _fmt_path, _Path, _quoted, _render, _Run, _try_canon

__all__ = (
    "_any_of",
    "_bound",
    "_const_check",
    "_contains",
    "_dependent_required",
    "_dependent_schemas",
    "_enum_check",
    "_if_then_else",
    "_items",
    "_length",
    "_multiple_of",
    "_not",
    "_one_of",
    "_pattern",
    "_properties",
    "_property_names",
    "_required",
    "_size",
    "_type_check",
    "_unique",
)

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
