"""The per-process era cache: a legacy server is probed once, but the memory of
it neither outlives ``ERA_CACHE_TTL`` nor locks out a server upgraded in place.

One scripted HTTP server stays at one URL (so one ``era_key``) while the tests
change what it speaks: legacy only (``server/discover`` is an unknown method),
modern only (``initialize`` is), or both. conftest.py empties the cache before
each test.
"""

from __future__ import annotations

from typing import Any

import pytest
from http_client.rawserver import Reply, Seen, raw_server, result

from mcpwire import Client, JSONRPCError
from mcpwire import _handshake as handshake

pytestmark = pytest.mark.anyio

INIT_RESULT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "scripted", "version": "1"},
}
DISCOVER_RESULT = {
    "supportedVersions": ["2026-07-28"],
    "capabilities": {"tools": {}},
    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "2"}},
}


class Speaker:
    """What the scripted server speaks right now: a set of ``{"legacy", "modern"}``."""

    def __init__(self, *eras: str) -> None:
        self.eras = set(eras)

    async def __call__(self, seen: Seen) -> Reply:
        if seen.method != "POST":
            return Reply.empty(405)
        message: Any = seen.json
        if "id" not in message:
            return Reply.empty(202)
        era = {"initialize": "legacy", "server/discover": "modern"}.get(message["method"])
        if era is not None and era not in self.eras:
            unknown = {"code": -32601, "message": f"Method not found: {message['method']}"}
            return Reply.json({"jsonrpc": "2.0", "id": message["id"], "error": unknown})
        if era == "legacy":
            return Reply.json(result(message["id"], INIT_RESULT))
        if era == "modern":
            return Reply.json(result(message["id"], DISCOVER_RESULT))
        return Reply.json(result(message["id"], {"tools": []}))


async def connect(url: str) -> str:
    async with Client.http(url, request_timeout=10, probe_timeout=5) as client:
        return client.era


async def test_a_legacy_server_is_probed_once(anyio_backend: str) -> None:
    async with raw_server(Speaker("legacy")) as server:
        assert await connect(server.url) == "legacy"
        assert await connect(server.url) == "legacy"
        handshakes = [m for m in server.methods() if m in ("server/discover", "initialize")]
    assert handshakes == ["server/discover", "initialize", "initialize"]


async def test_a_legacy_server_upgraded_to_modern_only_is_found(anyio_backend: str) -> None:
    """Remembered as legacy, the server now refuses ``initialize``: the client
    probes again instead of failing the connection on a stale memory."""
    speaker = Speaker("legacy")
    async with raw_server(speaker) as server:
        assert await connect(server.url) == "legacy"
        speaker.eras = {"modern"}
        assert await connect(server.url) == "modern"
        assert await connect(server.url) == "modern"  # and remembered so
        handshakes = [m for m in server.methods() if m in ("server/discover", "initialize")]
    assert handshakes == [
        "server/discover",
        "initialize",
        "initialize",  # refused: the memory is dropped and the server probed
        "server/discover",
        "server/discover",
    ]


async def test_a_refusal_stands_when_the_probe_finds_no_modern_era(anyio_backend: str) -> None:
    """Remembered as legacy, refusing ``initialize``, and not modern either: the
    refusal is what the caller gets."""
    speaker = Speaker("legacy")
    async with raw_server(speaker) as server:
        assert await connect(server.url) == "legacy"
        speaker.eras = set()
        with pytest.raises(JSONRPCError) as info:
            await connect(server.url)
        assert info.value.code == -32601
        assert "initialize" in info.value.message


async def test_a_legacy_verdict_expires(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that learned the modern era but kept the legacy one is found
    modern once the legacy verdict is older than ``ERA_CACHE_TTL``."""
    speaker = Speaker("legacy")
    async with raw_server(speaker) as server:
        assert await connect(server.url) == "legacy"
        speaker.eras = {"legacy", "modern"}
        assert await connect(server.url) == "legacy"  # still within the TTL
        monkeypatch.setattr(handshake, "ERA_CACHE_TTL", 0.0)
        assert await connect(server.url) == "modern"
