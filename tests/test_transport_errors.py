"""Errors the client makes up are ``TransportError``; errors the server sent are not.

When no answer can be had from the server (an HTTP error status without a
JSON-RPC error body, a body that is no JSON-RPC answer, a stream or body cut
off before the answer, an answer too large to read), the client fails the call
with a ``TransportError``: still a ``JSONRPCError`` (code, message, data), so
``except JSONRPCError`` keeps working, but with ``synthesized`` True and the
HTTP ``status``. A JSON-RPC error response the server did send, whatever the
HTTP status that carried it, is a plain ``JSONRPCError``.

Scripted HTTP servers (``tests/http_client/rawserver.py``) and a stdio child;
everything runs on both anyio backends.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from http_client.rawserver import Reply, Seen, event, raw_server, result

import mcpwire
from mcpwire import Client, JSONRPCError, TransportError
from mcpwire._http_client_conn import URL, HTTPClient
from mcpwire._http_client_sock import BodyCut, ConnectionFailed
from mcpwire.sansio import ErrorObject, ErrorResponse, Limits, TransportErrorObject, to_json

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
TOOL_RESULT = {"content": [{"type": "text", "text": "done"}]}
INIT_RESULT = {
    "protocolVersion": LEGACY,
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "raw", "version": "0"},
}
JSON_HEAD = [("Content-Type", "application/json")]


def rpc_error(rid: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": code, "message": message}}


def scripted(
    answer: Callable[[Seen], Reply], session: list[tuple[str, str]] | None = None
) -> Callable[[Seen], Awaitable[Reply]]:
    """A server that takes only POSTs, answers ``initialize`` (with ``session``'s
    headers), takes notifications, and gives every other request ``answer``'s reply."""

    async def handler(seen: Seen) -> Reply:
        if seen.method != "POST":
            return Reply.empty(405)
        if seen.rpc_method == "initialize":
            return Reply.json(result(seen.json["id"], INIT_RESULT), headers=session)
        if "id" not in seen.json:
            return Reply.empty(202)
        return answer(seen)

    return handler


async def call_error(reply: Reply, *, mode: str = MODERN) -> JSONRPCError:
    """What ``tools/call`` raises when the server answers it with ``reply``."""
    async with (
        raw_server(scripted(lambda seen: reply)) as server,
        Client.http(server.url, mode=mode, validate_output=False, request_timeout=20) as c,
    ):
        with anyio.fail_after(5), pytest.raises(JSONRPCError) as info:
            await c.call_tool("t", {})
    return info.value


@pytest.mark.parametrize(
    ("reply", "code", "status"),
    [
        (Reply.text(404, "Not Found"), -32600, 404),
        (Reply.text(500, "<html><body>boom</body></html>"), -32603, 500),
        (
            Reply(500, [("Content-Type", "text/html"), ("Content-Length", "4")], [b"<p/>"]),
            -32603,
            500,
        ),
        (Reply.text(200, "hello"), -32603, 200),
        (Reply.empty(202), -32603, 202),
        (Reply.json(None), -32603, 200),
        (Reply.sse(": cut\n\n", cut=True), -32603, 200),
        (Reply.sse(": no answer\n\n"), -32603, 200),
        (
            Reply(200, [*JSON_HEAD, ("Content-Length", "100")], [b'{"jsonrpc":'], cut=True),
            -32603,
            200,
        ),
        (Reply(200, JSON_HEAD, [b'{"jsonrpc":'], cut=True), -32603, 200),
    ],
    ids=[
        "404-post",
        "500-html",
        "500-text/html",
        "wrong-content-type",
        "202-empty",
        "200-null",
        "sse-cut-before-answer",
        "sse-ended-before-answer",
        "truncated-content-length",
        "truncated-chunked",
    ],
)
async def test_an_error_the_client_made_up_is_a_transport_error(
    reply: Reply, code: int, status: int
) -> None:
    error = await call_error(reply)
    assert type(error) is TransportError
    assert error.synthesized is True
    assert error.status == status
    assert error.code == code
    assert isinstance(error.data, dict) and error.data["httpStatus"] == status
    assert error.message.startswith(("tools/call: the server answered", "the server"))


async def test_an_error_body_keeps_its_excerpt_and_the_status_in_data() -> None:
    error = await call_error(Reply.text(500, "<html><body>boom</body></html>"))
    assert type(error) is TransportError
    assert error.data == {"httpStatus": 500, "body": "<html><body>boom</body></html>"}
    assert "HTTP 500" in error.message and "boom" in error.message


@pytest.mark.parametrize(
    ("status", "framing"),
    [(200, "json"), (200, "sse"), (400, "json"), (404, "json"), (500, "json")],
)
async def test_an_error_the_server_sent_is_a_plain_jsonrpc_error(status: int, framing: str) -> None:
    """Even on an HTTP 4xx or 5xx, a JSON-RPC error body is the server's answer."""

    async def answer(seen: Seen) -> Reply:
        body = rpc_error(seen.json["id"], -32042, "the server says no")
        return Reply.json(body, status) if framing == "json" else Reply.sse(event(body))

    async def handler(seen: Seen) -> Reply:
        return await answer(seen)

    async with (
        raw_server(handler) as server,
        Client.http(server.url, mode=MODERN, validate_output=False, request_timeout=20) as c,
    ):
        with anyio.fail_after(5), pytest.raises(JSONRPCError) as info:
            await c.call_tool("t", {})
    assert type(info.value) is JSONRPCError
    assert info.value.synthesized is False
    assert (info.value.code, info.value.message) == (-32042, "the server says no")


async def test_a_legacy_session_the_server_ended_twice_is_a_transport_error() -> None:
    """404 on a request carrying the session id, and again after re-initializing."""

    handler = scripted(lambda seen: Reply.text(404, "no such session"), [("Mcp-Session-Id", "s1")])
    async with (
        raw_server(handler) as server,
        Client.http(server.url, mode="legacy", validate_output=False, request_timeout=20) as c,
    ):
        with anyio.fail_after(5), pytest.raises(TransportError) as info:
            await c.call_tool("t", {})
    assert info.value.status == 404
    assert "ended the MCP session" in info.value.message


async def test_an_oversized_stdio_answer_is_a_transport_error_without_status() -> None:
    """The framing discards a reply past the size limit and fails its call: made up here."""
    everything = ["-m", "mcpwire.examples.everything"]
    with anyio.fail_after(20):
        async with Client.stdio(
            sys.executable, everything, limits=Limits(max_size=65536), shutdown_timeout=0.5
        ) as client:
            with pytest.raises(TransportError, match="exceeds the message size limit") as info:
                await client.call_tool("echo", {"message": "x" * 100_000})
            assert info.value.status is None and info.value.synthesized is True
            assert info.value.code == -32600


def test_a_transport_error_object_never_reaches_the_wire() -> None:
    """``status`` is local knowledge: the wire form is a plain error object's."""
    made_up = ErrorResponse(1, TransportErrorObject(-32603, "no answer", {"httpStatus": 502}, 502))
    plain = ErrorResponse(1, ErrorObject(-32603, "no answer", {"httpStatus": 502}))
    assert to_json(made_up) == to_json(plain)
    assert "502)" not in repr(made_up.error) and made_up.error.status == 502


def test_transport_error_is_public_and_a_jsonrpc_error() -> None:
    assert "TransportError" in mcpwire.__all__
    assert issubclass(TransportError, JSONRPCError)
    error = TransportError(-32600, "refused", status=404)
    assert (error.code, error.message, error.data, error.status) == (-32600, "refused", None, 404)
    assert str(error) == "[-32600] refused"
    assert JSONRPCError(1, "x").synthesized is False


# -- a body cut short is told from no body at all ----------------------------------------------


@pytest.mark.parametrize("sent", [0, 1, 17, 99])
async def test_a_body_cut_short_of_its_content_length_says_how_much_arrived(sent: int) -> None:
    body = (b'{"jsonrpc": "2.0", "id": 1, "result": {"content": []}}' + b" " * 100)[:sent]
    head = [*JSON_HEAD, ("Content-Length", "100")]
    error = await call_error(Reply(200, head, [body] if body else [], cut=True))
    assert type(error) is TransportError and error.status == 200
    assert f"cut short (received {sent} of 100 bytes)" in error.message
    assert "no response body" not in error.message
    assert isinstance(error.data, dict)
    assert error.data.get("body", "") == body.decode().strip()


@pytest.mark.parametrize("chunks", [[], [b'{"jsonrpc": "2.0",'], [b"{", b'"id": 1']])
async def test_a_chunked_body_that_ends_before_its_last_chunk_says_so(
    chunks: list[bytes],
) -> None:
    error = await call_error(Reply(200, JSON_HEAD, chunks, cut=True))
    received = sum(map(len, chunks))
    assert type(error) is TransportError and error.status == 200
    assert f"the chunked body ended before its last chunk, after {received} bytes" in error.message
    assert "no response body" not in error.message


@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, [*JSON_HEAD, ("Content-Length", "0")], []),
        Reply(200, JSON_HEAD, []),  # chunked, and properly ended with no chunk
        Reply.empty(202),
    ],
    ids=["length-0", "chunked-empty", "202"],
)
async def test_no_response_body_is_said_only_when_there_was_none(reply: Reply) -> None:
    error = await call_error(reply)
    assert type(error) is TransportError
    assert "no response body" in error.message and "cut short" not in error.message


async def test_read_body_raises_body_cut_with_what_arrived() -> None:
    async def handler(seen: Seen) -> Reply:
        head = [("Content-Type", "text/plain"), ("Content-Length", "10")]
        return Reply(200, head, [b"abcd"], cut=True)

    async with raw_server(handler) as server:
        http = HTTPClient()
        try:
            response = await http.request("GET", URL.parse(server.url))
            async with response:
                with anyio.fail_after(5), pytest.raises(BodyCut) as info:
                    await response.read_body(1000)
        finally:
            await http.aclose()
    cut = info.value
    assert isinstance(cut, ConnectionFailed)
    assert (cut.received, cut.expected, cut.chunked, cut.partial) == (4, 10, False, b"abcd")
    assert str(cut).startswith("the response body was cut short (received 4 of 10 bytes): ")


async def test_a_made_up_error_to_the_schema_listing_leaves_nothing_learnt() -> None:
    """A ``tools/list`` (run on a tool's first call to learn its outputSchema)
    that fails with an error the client made up got no answer from the server:
    nothing is learnt, the result is returned unchecked, and the next call lists
    again (and validates), as after a timeout; only an error the server sent
    means it cannot list."""
    listings: list[int] = []
    structured = {"content": [{"type": "text", "text": "{}"}], "structuredContent": {"n": "x"}}
    tool = {
        "name": "t",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}},
    }

    def answer(seen: Seen) -> Reply:
        if seen.rpc_method == "tools/list":
            listings.append(1)
            if len(listings) == 1:
                return Reply.text(502, "<html>bad gateway</html>")
            return Reply.json(result(seen.json["id"], {"tools": [tool]}))
        return Reply.json(result(seen.json["id"], structured))

    async with (
        raw_server(scripted(answer)) as server,
        Client.http(server.url, mode=LEGACY, request_timeout=20) as c,
    ):
        with anyio.fail_after(5):
            first = await c.call_tool("t", {})
            assert first.structured == {"n": "x"}  # unchecked: nothing was learnt
            with pytest.raises(mcpwire.OutputValidationError):
                await c.call_tool("t", {})
    assert len(listings) == 2
