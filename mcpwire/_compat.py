"""Results shaped for the legacy revision a client negotiated.

The handlers build results in the newest legacy shape (2025-11-25). A client
that negotiated an older revision gets exactly the fields its schema defines
for the objects that changed: a strict client of 2024-11-05 never sees a
``title``, an ``outputSchema`` or ``structuredContent`` it cannot know about.
The table below is the type-level history of spec-notes §4, per field.
"""

from __future__ import annotations

from ._versions import LATEST_LEGACY_VERSION, at_least
from .sansio._json import JSONObject, JSONValue

__all__ = ("shape_legacy_result", "shape_server_info")

# field -> the first revision that defines it, per object kind.
_SINCE: dict[str, dict[str, str]] = {
    "tool": {
        "annotations": "2025-03-26",
        "title": "2025-06-18",
        "outputSchema": "2025-06-18",
        "_meta": "2025-06-18",
        "icons": "2025-11-25",
        "execution": "2025-11-25",
    },
    "listed": {  # resources, resource templates, prompts
        "title": "2025-06-18",
        "_meta": "2025-06-18",
        "icons": "2025-11-25",
    },
    "implementation": {
        "title": "2025-06-18",
        "description": "2025-11-25",
        "websiteUrl": "2025-11-25",
        "icons": "2025-11-25",
    },
    "call": {"structuredContent": "2025-06-18"},
}

_LISTS = {
    "tools/list": ("tools", "tool"),
    "resources/list": ("resources", "listed"),
    "resources/templates/list": ("resourceTemplates", "listed"),
    "prompts/list": ("prompts", "listed"),
}


def _strip(obj: JSONObject, kind: str, version: str) -> JSONObject:
    drop = [k for k, since in _SINCE[kind].items() if k in obj and not at_least(version, since)]
    if not drop:
        return obj
    return {k: v for k, v in obj.items() if k not in drop}


def shape_server_info(info: JSONObject, version: str) -> JSONObject:
    return _strip(info, "implementation", version)


def shape_legacy_result(method: str, version: str, result: JSONObject) -> JSONObject:
    """``result`` with the fields ``version`` does not define removed (a copy if changed)."""
    if version == LATEST_LEGACY_VERSION or at_least(version, "2025-11-25"):
        return result  # the first test is the usual case, and the cheaper
    listed = _LISTS.get(method)
    if listed is not None:
        key, kind = listed
        items = result.get(key)
        if isinstance(items, list):
            shaped: list[JSONValue] = [
                _strip(i, kind, version) if isinstance(i, dict) else i for i in items
            ]
            result = {**result, key: shaped}
        return result
    if method == "tools/call":
        return _strip(result, "call", version)
    return result
