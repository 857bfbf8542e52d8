"""A JSON-RPC batch (or a client response) is refused in the words of its era.

Batches were 2025-03-26's alone. Over HTTP, a legacy batch names its session
(``Mcp-Session-Id``), and one that names none is told so; a 2026-07-28 batch
has no session to name (that era has none), so it is told what is actually
wrong: the revision has no batches (and no server-to-client requests, hence no
client responses). Over stdio a connection serves both eras, so the refusal
says what holds for either. Every refusal is -32600 with ``"id": null``.
"""

from __future__ import annotations

from typing import Any

import pytest
from http_raw import MODERN, client, init_body, initialize, modern, note, rpc, running
from pipe_peer import serving

from mcpwire import Server

pytestmark = pytest.mark.anyio

PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
MODERN_BATCH = (
    "JSON-RPC batches are not part of protocol version 2026-07-28 "
    "(only 2025-03-26 had them): send each message in a POST of its own"
)
MODERN_RESPONSE = (
    "a JSON-RPC response has nothing to answer in protocol version 2026-07-28: "
    "its servers send clients no requests"
)
NO_SESSION = "Bad Request: an Mcp-Session-Id header is required (send initialize first)"
LEGACY_BATCH = "JSON-RPC batches are only allowed in protocol version 2025-03-26"
STDIO_BATCH = (
    "JSON-RPC batches are only allowed once an initialize has negotiated protocol "
    "version 2025-03-26 (later revisions, 2026-07-28 included, have none)"
)


def refusal(reply: Any, status: int = 400) -> tuple[int, str]:
    assert reply.status == status, reply
    body = reply.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None
    return body["error"]["code"], body["error"]["message"]


def modern_batch() -> tuple[list[Any], dict[str, str | None]]:
    first, headers = modern(1, "tools/list")
    second, _ = modern(2, "tools/list")
    return [first, second], headers


async def test_a_modern_batch_is_told_the_revision_has_no_batches() -> None:
    batch, headers = modern_batch()
    async with running() as http, client(http.port or 0) as raw:
        # With the headers a 2026-07-28 client sends.
        reply = await raw.request(body=batch, headers=headers)
        assert refusal(reply) == (-32600, MODERN_BATCH)
        # With the version header alone, with Mcp-Method alone, and with only the
        # envelope in the body to tell.
        version_only: dict[str, str | None] = {"mcp-protocol-version": MODERN}
        for only in (version_only, {"mcp-method": "tools/list"}, {}):
            reply = await raw.request(body=batch, headers=only)
            assert refusal(reply) == (-32600, MODERN_BATCH), only
        # A batch of notifications alone is no different.
        reply = await raw.request(body=[note("notifications/cancelled")], headers=version_only)
        assert refusal(reply) == (-32600, MODERN_BATCH)
        # The endpoint serves on.
        body, headers = modern(3, "tools/list")
        assert "tools" in (await raw.request(body=body, headers=headers)).json()["result"]


async def test_a_modern_response_is_told_there_is_nothing_to_answer() -> None:
    answer = {"jsonrpc": "2.0", "id": 7, "result": {}}
    error = {"jsonrpc": "2.0", "id": 7, "error": {"code": -1, "message": "no"}}
    async with running() as http, client(http.port or 0) as raw:
        for body in (answer, error):
            reply = await raw.request(body=body, headers={"mcp-protocol-version": MODERN})
            assert refusal(reply) == (-32600, MODERN_RESPONSE)


async def test_a_batch_with_an_unsupported_version_header_is_32022() -> None:
    batch, _ = modern_batch()
    async with running() as http, client(http.port or 0) as raw:
        reply = await raw.request(body=batch, headers={"mcp-protocol-version": "1999-01-01"})
        assert reply.status == 400
        error = reply.json()["error"]
        assert error["code"] == -32022
        assert error["data"]["requested"] == "1999-01-01"


async def test_legacy_batches_keep_their_session_answers() -> None:
    async with running() as http, client(http.port or 0) as raw:
        batch = [rpc(1, "ping"), rpc(2, "tools/list")]
        # No session: a legacy batch must name one.
        for headers in ({}, {"mcp-protocol-version": "2025-03-26"}):
            reply = await raw.request(body=batch, headers=headers)
            assert refusal(reply) == (-32600, NO_SESSION), headers
        # A session of another revision: only 2025-03-26 has batches.
        sid = await initialize(raw, "2025-06-18")
        reply = await raw.request(body=batch, headers={"mcp-session-id": sid})
        assert refusal(reply) == (-32600, LEGACY_BATCH)
        # Named by its session, a batch is legacy: a modern version header is wrong there.
        reply = await raw.request(
            body=batch, headers={"mcp-session-id": sid, "mcp-protocol-version": MODERN}
        )
        assert refusal(reply) == (
            -32600,
            "Bad Request: unsupported MCP-Protocol-Version '2026-07-28' "
            "(this session speaks 2025-06-18)",
        )
        # And 2025-03-26 serves it.
        sid = await initialize(raw, "2025-03-26")
        reply = await raw.request(body=batch, headers={"mcp-session-id": sid})
        assert reply.status == 200 and [a["id"] for a in reply.json()] == [1, 2]


DISCOVER = rpc(0, "server/discover", {"_meta": {PV: MODERN, CC: {}}})


@pytest.mark.parametrize(
    "init",
    [init_body("2025-11-25", 0), init_body("2025-06-18", 0), DISCOVER],
    ids=["2025-11-25", "2025-06-18", "2026-07-28"],
)
async def test_stdio_refuses_a_batch_in_words_true_of_either_era(init: dict[str, Any]) -> None:
    async with serving(Server("s"), init=init) as peer:
        await peer.send([rpc(1, "ping"), rpc(2, "ping")])
        answer = await peer.read()
        assert answer["id"] is None
        assert answer["error"] == {"code": -32600, "message": STDIO_BATCH}
        await peer.send(rpc(3, "ping"))
        assert (await peer.read())["id"] == 3
