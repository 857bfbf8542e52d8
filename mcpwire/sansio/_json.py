"""JSON value types shared by the whole package (no ``Any`` in the core)."""

from __future__ import annotations

from typing import TypeAlias, Union

__all__ = ("JSONArray", "JSONObject", "JSONValue", "dig")

JSONValue: TypeAlias = Union[None, bool, int, float, str, "list[JSONValue]", "dict[str, JSONValue]"]
JSONObject: TypeAlias = "dict[str, JSONValue]"
JSONArray: TypeAlias = "list[JSONValue]"


def dig(value: JSONValue, *keys: str) -> JSONValue:
    """``value[k1][k2]...``, or ``None`` where a level is missing or not an object."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value
