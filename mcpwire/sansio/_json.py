"""JSON value types shared by the whole package (no ``Any`` in the core)."""

from __future__ import annotations

from typing import TypeAlias, Union

__all__ = ("JSONArray", "JSONObject", "JSONValue")

JSONValue: TypeAlias = Union[None, bool, int, float, str, "list[JSONValue]", "dict[str, JSONValue]"]
JSONObject: TypeAlias = "dict[str, JSONValue]"
JSONArray: TypeAlias = "list[JSONValue]"
