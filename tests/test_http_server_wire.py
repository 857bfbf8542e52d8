"""The HTTP server's per-connection shortcuts, each held to the plain way it replaces.

A connection of the streamable-HTTP server (``mcpwire/_http_wire.py``) avoids
work that repeats from one request to the next; these tests check that every
shortcut gives what the plain way would:

1. response heads: header lists validated by h11 once and the previous
   response's event reused give the bytes h11 writes for the header list
   given whole (property-based), and refuse what it refuses;
2. request heads: the previous request's ``RequestHead``, or a copy with a
   new ``Content-Length``, equals the head built afresh (property-based);
3. on a real connection, both anyio backends (on asyncio the server's
   connections are ``AsyncioStream``s with their own deadline timer):
   pipelined requests are all answered, in order; a client that keeps a
   connection busy within the keep-alive timeout keeps it, one that idles
   past it is dropped, as is one that trickles a head in past ``read_timeout``
   or stops reading a response; a ``HEAD`` request is answered with a head
   alone, whatever the status.
"""

from __future__ import annotations

import socket
import string
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import anyio.abc
import h11
import orjson
import pytest
from http_raw import client as raw_client
from http_raw import running as http_running
from hypothesis import given
from hypothesis import strategies as st

from mcpwire import HTTPServer, Server
from mcpwire._http_wire import HTTPConnection, RequestHead

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


# =================================================================================================
# 1. Response heads
# =================================================================================================

_TCHAR = string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~"
_VCHAR = "".join(chr(c) for c in range(0x21, 0x7F))
names = st.one_of(
    st.text(_TCHAR, min_size=1, max_size=10),
    st.sampled_from(["Connection", "connection", "Content-Type", "X-Accel-Buffering"]),
)
values = st.one_of(
    st.builds(
        lambda a, gap, b: a + gap + b if b else a,
        st.text(_VCHAR, min_size=1, max_size=8),
        st.sampled_from([" ", "\t", "  "]),
        st.text(_VCHAR, max_size=8),
    ),
    st.sampled_from(["close", "Close", "keep-alive", "", "application/json"]),
)
#: Mostly valid headers; sometimes one h11 refuses, or one that frames the body.
header_lists = st.lists(
    st.one_of(
        st.tuples(names, values),
        st.sampled_from(
            [("content-length", "5"), ("transfer-encoding", "chunked"), ("x-bad", "a\r\nb")]
        ),
    ),
    max_size=5,
)


class _NoStream:
    """A stream that is never used: the head is built, not sent."""


def _wire(response: h11.Response) -> bytes:
    """The bytes h11 writes for ``response`` as the answer to a GET."""
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    assert isinstance(conn.next_event(), h11.Request)
    conn.next_event()  # EndOfMessage
    return conn.send(response) or b""


def _plain(
    status: int, headers: list[tuple[str, str]], length: int | None
) -> tuple[bytes, bool] | type[h11.LocalProtocolError]:
    """What the head was before any shortcut: the whole list through h11."""
    if length is not None:
        headers = [*headers, ("content-length", str(length))]
    closing = any(n.lower() == "connection" and v.lower() == "close" for n, v in headers)
    encoded = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in headers]
    try:
        return _wire(h11.Response(status_code=status, headers=encoded)), closing
    except h11.LocalProtocolError:
        return h11.LocalProtocolError


def _ours(
    http: HTTPConnection, status: int, headers: list[tuple[str, str]], length: int | None
) -> tuple[bytes, bool] | type[h11.LocalProtocolError]:
    http.closing = False
    try:
        return _wire(http._head(status, headers, length)), http.closing
    except h11.LocalProtocolError:
        return h11.LocalProtocolError


@given(
    heads=st.lists(
        st.tuples(
            st.sampled_from([200, 202, 400, 404, 503]),
            header_lists,
            st.one_of(st.none(), st.integers(0, 10**9)),
        ),
        min_size=1,
        max_size=6,
    ),
    repeat=st.booleans(),
)
def test_validated_heads_write_what_h11_writes(
    heads: list[tuple[int, list[tuple[str, str]], int | None]], repeat: bool
) -> None:
    http = HTTPConnection(
        _NoStream(),  # type: ignore[arg-type]
        max_header_size=16384,
        read_timeout=5,
        write_timeout=5,
    )
    for status, headers, length in heads * (2 if repeat else 1):
        assert _ours(http, status, headers, length) == _plain(status, headers, length)


def test_a_repeated_head_reuses_the_previous_event() -> None:
    http = HTTPConnection(
        _NoStream(),  # type: ignore[arg-type]
        max_header_size=16384,
        read_timeout=5,
        write_timeout=5,
    )
    headers = [("content-type", "application/json")]
    first = http._head(200, headers, 10)
    assert http._head(200, list(headers), 10) is first
    assert http._head(200, headers, 11) is not first
    assert http._head(404, headers, 11).status_code == 404


# =================================================================================================
# 2. Request heads
# =================================================================================================


def _event(method: str, target: str, headers: list[tuple[str, str]]) -> h11.Request:
    """``h11.Request`` as the server's h11 parses it off the wire."""
    client = h11.Connection(h11.CLIENT)
    data = client.send(h11.Request(method=method, target=target, headers=headers)) or b""
    server = h11.Connection(h11.SERVER)
    server.receive_data(data)
    event = server.next_event()
    assert isinstance(event, h11.Request)
    return event


def _head_of(http: HTTPConnection, event: h11.Request) -> RequestHead:
    return http._head_of(event.method, event.target, event.headers.raw_items())


def _fields(head: RequestHead) -> tuple[Any, ...]:
    return head.method, head.path, head.query, head.headers, head.duplicated, head.size


requests = st.tuples(
    st.sampled_from(["POST", "GET", "DELETE"]),
    st.sampled_from(["/mcp", "/mcp?x=1", "/other"]),
    st.lists(
        st.tuples(
            st.sampled_from(["Accept", "accept", "Mcp-Session-Id", "X-A", "Origin"]),
            st.sampled_from(["a", "b", "application/json, text/event-stream"]),
        ),
        max_size=4,
    ),
    st.one_of(st.none(), st.integers(0, 99999)),
    st.integers(0, 4),
)


@given(st.lists(requests, min_size=1, max_size=8))
def test_repeated_request_heads_equal_fresh_ones(
    seq: list[tuple[str, str, list[tuple[str, str]], int | None, int]],
) -> None:
    http = HTTPConnection(
        _NoStream(),  # type: ignore[arg-type]
        max_header_size=16384,
        read_timeout=5,
        write_timeout=5,
    )
    for method, target, extra, length, at in seq:
        headers = [("Host", "127.0.0.1"), *extra]
        if length is not None:  # Content-Length anywhere in the head
            headers.insert(min(at, len(headers)), ("Content-Length", str(length)))
        event = _event(method, target, headers)
        assert _fields(_head_of(http, event)) == _fields(RequestHead.from_h11(event))


def test_a_new_length_alone_copies_the_previous_head() -> None:
    http = HTTPConnection(
        _NoStream(),  # type: ignore[arg-type]
        max_header_size=16384,
        read_timeout=5,
        write_timeout=5,
    )
    base = [("Host", "h"), ("Accept", "a")]
    first = _head_of(http, _event("POST", "/mcp", [*base, ("Content-Length", "9")]))
    assert _head_of(http, _event("POST", "/mcp", [*base, ("Content-Length", "9")])) is first
    second = _head_of(http, _event("POST", "/mcp", [*base, ("Content-Length", "1234")]))
    assert second is not first and second.headers["content-length"] == "1234"
    assert first.headers["content-length"] == "9"
    assert second.size == first.size + 3


# =================================================================================================
# 3. Real connections
# =================================================================================================


def _app() -> Server:
    app = Server("wire", "1.0")

    @app.tool()
    def echo(message: str) -> str:
        return message

    @app.tool()
    def big(size: int) -> str:
        return "x" * size

    @app.tool()
    async def later(message: str) -> str:
        """Echo, after a pause: its response is streamed beside a disconnect watch."""
        await anyio.sleep(0.002)
        return message

    return app


def running(**options: Any) -> AbstractAsyncContextManager[HTTPServer]:
    return http_running(_app(), **options)


def _call(rid: int, name: str, arguments: dict[str, Any]) -> bytes:
    """One modern tools/call POST, as bytes."""
    body = orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": ENVELOPE},
        }
    )
    head = (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: "
        f"{MODERN}\r\nMcp-Method: tools/call\r\nMcp-Name: {name}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


class Replies:
    """Responses read off one connection in order (h11 on the client side)."""

    def __init__(self, stream: anyio.abc.ByteStream) -> None:
        self.stream = stream
        self.conn = h11.Connection(h11.CLIENT)

    async def next(self) -> tuple[int, Any]:
        # The requests were written already: h11 is told of one per response.
        if self.conn.our_state is h11.DONE:
            self.conn.start_next_cycle()
        self.conn.send(h11.Request(method="POST", target="/mcp", headers=[("host", "x")]))
        self.conn.send(h11.EndOfMessage())
        status, body = 0, b""
        while True:
            event = self.conn.next_event()
            if event is h11.NEED_DATA:
                self.conn.receive_data(await self.stream.receive())
            elif isinstance(event, h11.Response):
                status = event.status_code
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return status, orjson.loads(body)
            else:
                raise AssertionError(event)


async def _read_all(stream: anyio.abc.ByteStream) -> None:
    while True:
        await stream.receive()


async def _closed_by_server(stream: anyio.abc.ByteStream) -> None:
    with anyio.fail_after(10), pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
        await _read_all(stream)


@pytest.mark.parametrize("tool", ["echo", "later"])
async def test_pipelined_requests_are_answered_in_order(anyio_backend: str, tool: str) -> None:
    """``later`` waits: each answer is streamed while the connection is watched for
    the client going away, and the requests already sent behind it are kept for the
    next cycles (on asyncio in the stream, unread; elsewhere read into h11)."""
    async with running() as http:
        stream = await anyio.connect_tcp("127.0.0.1", http.port or 0)
        async with stream:
            messages = ["m" * (i % 7) + str(i) for i in range(40)]
            await stream.send(
                b"".join(_call(i, tool, {"message": m}) for i, m in enumerate(messages))
            )
            replies = Replies(stream)
            for i, message in enumerate(messages):
                status, answer = await replies.next()
                assert status == 200 and answer["id"] == i
                assert answer["result"]["content"][0]["text"] == message


async def test_keep_alive_lasts_while_requests_come_and_ends_after(anyio_backend: str) -> None:
    async with running(keep_alive_timeout=0.4) as http:
        stream = await anyio.connect_tcp("127.0.0.1", http.port or 0)
        async with stream:
            replies = Replies(stream)
            # Each pause is within the timeout; together they outlast it several
            # times, so the connection's deadline must move on with each request.
            for i in range(6):
                await stream.send(_call(i, "echo", {"message": str(i)}))
                status, answer = await replies.next()
                assert status == 200 and answer["result"]["content"][0]["text"] == str(i)
                await anyio.sleep(0.2)
            await _closed_by_server(stream)
        with anyio.fail_after(10):
            while http.stats()["connections"]:
                await anyio.sleep(0.02)


async def _trickle(stream: anyio.abc.ByteStream) -> None:
    await stream.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    for _ in range(200):
        await stream.send(b"X-Slow: 1\r\n")
        await anyio.sleep(0.05)


async def test_a_head_in_pieces_is_read_within_its_deadline(anyio_backend: str) -> None:
    async with running(read_timeout=0.6, keep_alive_timeout=30) as http:
        stream = await anyio.connect_tcp("127.0.0.1", http.port or 0)
        async with stream:
            replies = Replies(stream)
            for i in range(2):
                data = _call(i, "echo", {"message": "pieces"})
                for start in range(0, len(data), 40):
                    await stream.send(data[start : start + 40])
                    await anyio.sleep(0.01)
                status, answer = await replies.next()
                assert status == 200 and answer["result"]["content"][0]["text"] == "pieces"
            # The next head keeps trickling in past read_timeout, though each
            # piece comes well within the keep-alive timeout: it is answered
            # 408 (test_http_server_refusals.py) and the connection closed.
            with (
                anyio.fail_after(8),
                pytest.raises((anyio.BrokenResourceError, anyio.ClosedResourceError)),
            ):
                await _trickle(stream)


async def test_a_client_that_stops_reading_is_dropped(anyio_backend: str) -> None:
    async with running(write_timeout=0.2) as http:
        # A small receive window, so the response (some 8 MB) cannot all be
        # buffered between the two ends: the server's write has to wait.
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        try:
            await anyio.to_thread.run_sync(_connect, sock, http.port or 0)
            await anyio.to_thread.run_sync(sock.sendall, _call(1, "big", {"size": 4_000_000}))
            with anyio.fail_after(20):
                while http.stats()["connections"] == 0:
                    await anyio.sleep(0.01)
                while http.stats()["connections"]:
                    await anyio.sleep(0.05)
        finally:
            sock.close()


def _connect(sock: socket.socket, port: int) -> None:
    sock.setblocking(True)
    sock.connect(("127.0.0.1", port))


async def test_a_head_request_gets_its_status_and_no_body(anyio_backend: str) -> None:
    """RFC 9110 section 9.3.2: the answer to HEAD is the head GET's would have,
    without content; every refusal reaches the client (405 with ``Allow``,
    404, 421), not a connection closed without an answer."""
    async with running() as http:
        port = http.port or 0
        cases = [
            ("/mcp", {}, 405),
            ("/elsewhere", {}, 404),
            ("/mcp", {"host": "rebound.example"}, 421),
        ]
        for path, headers, status in cases:
            async with raw_client(port) as raw:
                with anyio.fail_after(10):
                    reply = await raw.request("HEAD", headers=headers, path=path)
            assert reply.status == status, (path, headers)
            assert reply.body == b""
            if status == 405:
                assert reply.headers["allow"] == "GET, POST, DELETE"
        # The server goes on answering.
        stream = await anyio.connect_tcp("127.0.0.1", port)
        async with stream:
            await stream.send(_call(1, "echo", {"message": "after"}))
            status, answer = await Replies(stream).next()
        assert status == 200 and answer["result"]["content"][0]["text"] == "after"
