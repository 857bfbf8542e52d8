"""The client's cache of modern-era results (``caching.mdx``): what a server marks
with ``ttlMs`` is reused until then, unless a ``list_changed`` or ``updated``
notification says it changed.

Bounded: at most ``MAX_CACHED`` results are kept (a client that reads many
resources, or a server that pages without end, would otherwise grow it without
limit). The least recently used goes first, and an expired one is dropped when
it is next looked up.
"""

from __future__ import annotations

import time

from .sansio._json import JSONObject

__all__ = ("MAX_CACHED", "ResultCache")

MAX_CACHED = 256


class ResultCache:
    __slots__ = ("_entries",)

    def __init__(self) -> None:
        #: (method, key) -> (expiry on the monotonic clock, result); oldest use first.
        self._entries: dict[tuple[str, str], tuple[float, JSONObject]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, method: str, key: str) -> JSONObject | None:
        entry = self._entries.pop((method, key), None)
        if entry is None or entry[0] <= time.monotonic():
            return None
        self._entries[(method, key)] = entry  # now the most recently used
        return entry[1]

    def put(self, method: str, key: str, ttl_ms: float, result: JSONObject) -> None:
        entries = self._entries
        entries.pop((method, key), None)
        entries[(method, key)] = (time.monotonic() + ttl_ms / 1000.0, result)
        while len(entries) > MAX_CACHED:
            del entries[next(iter(entries))]

    def forget(self, method: str, key: str | None = None) -> None:
        """Drop ``method``'s result for ``key``, or all of its results."""
        if key is not None:
            self._entries.pop((method, key), None)
            return
        for found in [k for k in self._entries if k[0] == method]:
            del self._entries[found]
