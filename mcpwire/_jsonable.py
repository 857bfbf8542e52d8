"""Python values to plain JSON values: ``to_jsonable`` and schema defaults.

Part of the theory of operation of ``mcpwire._schema``: ``to_jsonable`` is the
inverse of the argument conversion in ``_convert``, for structured results; the
schema builders also use it to decide which parameter and field defaults can
be shown as a schema ``default`` (only finite JSON values can).
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Mapping

from .sansio._json import JSONObject, JSONValue

__all__ = ("_jsonable_default", "to_jsonable")


def to_jsonable(value: object) -> JSONValue:
    """Convert a result to plain JSON values: dataclasses and mappings to objects,
    enums to their values, tuples, lists and sets to arrays, recursively.

    A dataclass becomes the object of its ``__init__`` fields, matching its
    schema (``field(init=False)`` values are computed, not data).

    Raises ``TypeError`` for anything else and ``ValueError`` for cycles.
    """
    return _jsonable(value, set())


def _jsonable(v: object, active: set[int]) -> JSONValue:
    if v is None or v is True or v is False:
        return v
    t = type(v)
    if t is str or t is int or t is float:
        return v  # type: ignore[return-value]
    if isinstance(v, enum.Enum):
        return _jsonable(v.value, active)
    if isinstance(v, str):
        return str(v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return float(v)
    is_dc = dataclasses.is_dataclass(v) and not isinstance(v, type)
    if not (is_dc or isinstance(v, (Mapping, list, tuple, set, frozenset))):
        raise TypeError(f"Object of type {type(v).__qualname__} is not JSON serializable")
    if id(v) in active:
        raise ValueError("circular reference detected")
    active.add(id(v))
    try:
        if is_dc:
            return {
                f.name: _jsonable(getattr(v, f.name), active)
                for f in dataclasses.fields(v)  # type: ignore[arg-type]
                if f.init
            }
        if isinstance(v, Mapping):
            obj: JSONObject = {}
            for k, x in v.items():
                key = k.value if isinstance(k, enum.Enum) else k
                if not isinstance(key, str):
                    raise TypeError(f"object keys must be strings, got {type(k).__qualname__}")
                obj[str(key)] = _jsonable(x, active)
            return obj
        items: list[JSONValue] = [_jsonable(x, active) for x in v]  # type: ignore[attr-defined]
        if isinstance(v, (set, frozenset)):
            try:
                items.sort()
            except TypeError:
                pass
        return items
    finally:
        active.discard(id(v))


def _jsonable_default(value: object) -> tuple[bool, JSONValue]:
    try:
        out = to_jsonable(value)
    except (TypeError, ValueError):
        return False, None
    return _finite(out), out


def _finite(value: JSONValue) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(x) for x in value)
    if isinstance(value, dict):
        return all(_finite(x) for x in value.values())
    return True
