"""JSON value types shared by the whole package (no ``Any`` in the core)."""

from __future__ import annotations

from typing import TypeAlias, Union

__all__ = ("JSONArray", "JSONObject", "JSONValue", "dig", "kind_of")

JSONValue: TypeAlias = Union[None, bool, int, float, str, "list[JSONValue]", "dict[str, JSONValue]"]
JSONObject: TypeAlias = "dict[str, JSONValue]"
JSONArray: TypeAlias = "list[JSONValue]"


def dig(value: JSONValue, *keys: str) -> JSONValue:
    """``value[k1][k2]...``, or ``None`` where a level is missing or not an object."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def kind_of(value: object) -> str:
    """What JSON ``value`` is, for error messages: "a string", "an array", "null"..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a fractional number"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
