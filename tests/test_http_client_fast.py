"""The HTTP client's fast path (``mcpwire/_http_client_fast.py``) held to h11,
which it stands in for on plain exchanges.

1. Reading (property-based): whatever response the fast path takes, h11 (as a
   client that sent the request) reads the same way: status, reason, raw
   header items, the body piece by piece however it arrives, whether the
   connection can be reused, and a body the connection ends short of. This is
   checked on responses built from wild parts, and on typical ones with one
   byte changed, inserted or taken away. Typical heads are all taken, and no
   part of one is.
2. Writing (property-based): the request bytes of the fast path are h11's, and
   only for requests whose exchange h11 would frame and keep alive as usual.
3. On real sockets, both anyio backends (asyncio: ``ProtocolSocket``, trio:
   ``StreamSocket``): ``HTTPClient`` against a server answering a mix of
   responses the fast path takes and ones it leaves to h11, written whole,
   byte by byte or in random pieces, gives the same statuses, headers,
   bodies and errors, and reuses the same sockets, as with the fast path off.
"""

from __future__ import annotations

import itertools
import random
import re
from collections.abc import AsyncIterator
from contextlib import aclosing, asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import h11
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import (
    ONE_BYTE_EDITS,
    VCHAR,
    WILD_LINE_ENDS,
    byte_text,
    edited,
    field_lines,
    field_names,
    field_values,
    wild_field_lines,
    wild_field_names,
    wild_field_values,
)

from mcpwire._aio_stream import JOIN_LIMIT
from mcpwire._http_client_conn import URL, HTTPClient
from mcpwire._http_client_fast import BodyLeft, parse_response, request_bytes
from mcpwire._http_client_sock import BodyCut, HTTPError

LIMIT = 16384
_REQUEST = h11.Request(
    method="POST", target="/mcp", headers=[("Host", "x"), ("Content-Length", "2")]
)

# -- what each side makes of a response ---------------------------------------------------

Reading = tuple[int, bytes, list[tuple[bytes, bytes]], list[bytes], str]


def _fast_reading(chunks: list[bytes]) -> Reading | None:
    """What the socket's fast path makes of a response arriving as ``chunks``
    (then the end of input), or ``None`` if it leaves the response to h11.
    The last item says how it ended: ``reusable``, ``not reusable`` or ``cut``."""
    first = chunks[0]
    head = parse_response(first, LIMIT)
    if head is None:
        return None
    left = BodyLeft(head, first)
    pieces = [left.held] if left.held else []
    rest = iter(chunks[1:])
    while left.due:
        data = next(rest, b"")
        if not data:
            return head.status, head.reason, head.items, pieces, "cut"
        pieces.append(left.take(data))
    end = "not reusable" if left.past else "reusable"
    return head.status, head.reason, head.items, pieces, end


def _h11_reading(chunks: list[bytes]) -> Reading | str:
    """What h11 makes of the same, fed one chunk whenever it needs data (as the
    sockets feed it), after it sent ``_REQUEST``; a string when it reads no
    plain response (an error, a 1xx, ...)."""
    conn = h11.Connection(h11.CLIENT, max_incomplete_event_size=LIMIT)
    conn.send(_REQUEST)
    conn.send(h11.Data(data=b"{}"))
    conn.send(h11.EndOfMessage())
    feed = iter(chunks)

    def next_event() -> Any:
        event = conn.next_event()
        while event is h11.NEED_DATA:
            conn.receive_data(next(feed, b""))
            event = conn.next_event()
        return event

    pieces: list[bytes] = []
    head: h11.Response | None = None
    try:
        event = next_event()
        if type(event) is not h11.Response:
            return f"not a plain response: {event!r}"
        head = event
        while True:
            event = next_event()
            if type(event) is h11.Data:
                if event.data:
                    pieces.append(bytes(event.data))
            elif type(event) is h11.EndOfMessage:
                break
            else:
                return f"not a body: {event!r}"
    except h11.RemoteProtocolError as exc:
        if head is None:
            return f"refused: {exc}"
        return head.status_code, head.reason, head.headers.raw_items(), pieces, "cut"
    reusable = (
        conn.our_state is h11.DONE
        and conn.their_state is h11.DONE
        and conn.trailing_data == (b"", False)
    )
    end = "reusable" if reusable else "not reusable"
    return head.status_code, head.reason, head.headers.raw_items(), pieces, end


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(points)]


def _agrees(head: bytes, rest: bytes, first: int, cuts: list[int]) -> Reading | None:
    """If the fast path takes the response ``head + rest`` whose first read
    brings ``head`` and ``first`` bytes of ``rest`` (the others arriving in
    pieces cut at ``cuts``), h11 reads it the same way."""
    first %= len(rest) + 1
    chunks = [head + rest[:first], *_split(rest[first:], cuts)]
    fast = _fast_reading(chunks)
    if fast is not None:
        assert fast == _h11_reading(chunks), chunks
    return fast


# -- responses, typical and wild --------------------------------------------------------------

plain_names = field_names([b"Content-Type", b"content-type", b"Mcp-Session-Id", b"Date", b"Server"])
plain_values = field_values([b"", b"application/json", b"text/event-stream; charset=utf-8"])
reasons = st.one_of(
    st.sampled_from([None, b"", b"OK", b"Not Found", b"Accepted ", b" x\ty"]),
    byte_text(VCHAR + b" \t", 0, 12),
)
_LOOKED_AT = {b"content-length", b"transfer-encoding", b"connection"}


@st.composite
def typical_responses(
    draw: st.DrawFn,
) -> tuple[bytes, int, bytes, list[tuple[bytes, bytes]], bytes]:
    """A response the fast path is for: HTTP/1.1, a status with a body, one
    Content-Length, plain fields; its head, status, reason, fields and body."""
    status = draw(st.sampled_from([200, 201, 202, 400, 401, 404, 405, 409, 415, 500, 503]))
    reason = draw(reasons)
    body = draw(st.binary(max_size=40))
    fields = draw(st.lists(st.tuples(plain_names, plain_values), max_size=6))
    fields = [(n, v) for n, v in fields if n.lower() not in _LOOKED_AT]
    name = draw(st.sampled_from([b"Content-Length", b"content-length", b"CONTENT-LENGTH"]))
    fields.insert(draw(st.integers(0, len(fields))), (name, b"%d" % len(body)))
    if draw(st.booleans()):
        fields.append((draw(st.sampled_from([b"Connection", b"connection"])), b"keep-alive"))
    line = b"HTTP/1.1 %d" % status + (b"" if reason is None else b" " + reason)
    head = line + b"\r\n" + field_lines(draw, fields) + b"\r\n"
    return head, status, reason or b"", fields, body


wild_names = wild_field_names(
    plain_names,
    [
        b"Content-Length",
        b"content-length",
        b"Connection",
        b"Transfer-Encoding",
        b"Upgrade",
    ],
)
wild_values = wild_field_values(
    plain_values,
    [
        b"5",
        b"0",
        b"05",
        b"5, 5",
        b"5,6",
        b"-1",
        b"+5",
        b"1" * 18,
        b"1" * 19,
        b"close",
        b"Keep-Alive",
        b"keep-alive, close",
        b"chunked",
        b"identity",
    ],
)


@st.composite
def wild_responses(draw: st.DrawFn) -> bytes:
    version = draw(st.sampled_from([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2.0", b"http/1.1", b"HTTP/1"]))
    status = draw(
        st.sampled_from([b"200", b"204", b"304", b"100", b"101", b"199", b"599", b"600"])
        | st.sampled_from([b"2000", b"20", b"099", b"abc", b"404"])
    )
    reason = draw(st.one_of(reasons, st.binary(max_size=6)))
    line = b"%s %s" % (version, status) + (b"" if reason is None else b" " + reason)
    fields = draw(wild_field_lines(wild_names, wild_values))
    return line + draw(WILD_LINE_ENDS) + fields + b"\r\n"


pieces = st.lists(st.integers(0, 100), max_size=6)


@given(
    st.one_of(wild_responses(), typical_responses().map(lambda t: t[0])),
    st.binary(max_size=60),
    st.integers(0, 100),
    pieces,
)
def test_what_the_fast_path_takes_h11_reads_alike(
    head: bytes, rest: bytes, first: int, cuts: list[int]
) -> None:
    _agrees(head, rest, first, cuts)


@given(typical_responses(), ONE_BYTE_EDITS, st.binary(max_size=8), st.integers(0, 100), pieces)
def test_a_typical_response_with_one_byte_changed(
    typical: tuple[bytes, int, bytes, list[tuple[bytes, bytes]], bytes],
    edit: tuple[str, int, int],
    after: bytes,
    first: int,
    cuts: list[int],
) -> None:
    _agrees(edited(typical[0], edit), typical[4] + after, first, cuts)


@given(typical_responses(), st.binary(max_size=8), st.integers(0, 100), pieces)
def test_typical_responses_are_taken_whole_and_never_in_part(
    typical: tuple[bytes, int, bytes, list[tuple[bytes, bytes]], bytes],
    after: bytes,
    first: int,
    cuts: list[int],
) -> None:
    head, status, reason, fields, body = typical
    fast = parse_response(head + body + after, LIMIT)
    assert fast is not None
    assert (fast.status, fast.reason, fast.items) == (status, reason, fields)
    assert (fast.length, fast.end) == (len(body), len(head))
    reading = _agrees(head, body + after, first, cuts)
    assert reading is not None
    assert b"".join(reading[3]) == body
    # Bytes that come with the body's end answer no request; later ones are never read.
    whole = _agrees(head, body + after, len(body + after), [])
    assert whole is not None
    assert whole[4] == ("not reusable" if after else "reusable")
    short = _agrees(head, body[:-1], first, cuts) if body else None
    assert short is None or short[4] == "cut"
    for cut in range(len(head)):
        assert parse_response(head[:cut], LIMIT) is None
    assert parse_response(head, len(head) - 1) is None  # past the limit: h11's to judge


# -- requests -----------------------------------------------------------------------------------

request_fields = st.lists(
    st.one_of(
        st.tuples(plain_names, plain_values.map(lambda v: v.strip(b" \t"))),
        st.sampled_from(
            [
                (b"Connection", b"keep-alive"),
                (b"Connection", b"close"),
                (b"Connection", b"Upgrade"),
                (b"Upgrade", b"websocket"),
                (b"Expect", b"100-continue"),
                (b"Transfer-Encoding", b"chunked"),
                (b"Content-Length", b"3"),
                (b"content-length", b"0"),
            ]
        ),
    ),
    max_size=5,
)


@given(
    st.sampled_from(["POST", "GET", "DELETE", "PUT", "HEAD", "CONNECT", "OPTIONS"]),
    request_fields,
    st.sampled_from([-1, 0, 3, 7]),
)
def test_request_bytes_are_h11s_for_exchanges_it_keeps_plain(
    method: str, fields: list[tuple[bytes, bytes]], size: int
) -> None:
    """The fast path writes a request only when h11 would write the same bytes
    for it and its body, and would then read a plain response to it and keep
    the connection; otherwise it leaves the request to h11."""
    headers = [(b"Host", b"127.0.0.1:8000"), *fields]
    if size >= 0 and not any(n.lower() == b"content-length" for n, _ in fields):
        headers.append((b"Content-Length", b"%d" % size))
    try:
        request = h11.Request(method=method, target="/mcp", headers=headers)
    except h11.LocalProtocolError:
        return
    head = request_bytes(request, size)
    conn = h11.Connection(h11.CLIENT)
    try:
        wrote = conn.send(request) or b""
        body = b"b" * max(size, 0)
        wrote += b"".join(conn.send_with_data_passthrough(h11.Data(data=body)) or ())
        wrote += conn.send(h11.EndOfMessage()) or b""
    except h11.LocalProtocolError:
        assert head is None  # h11 would not send this body: its verdict
        return
    conn.receive_data(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
    try:
        while conn.next_event() not in (h11.NEED_DATA, h11.PAUSED):
            pass
    except h11.RemoteProtocolError:
        pass  # bytes h11 expects none of (a body after the response to a HEAD)
    plain = method not in ("HEAD", "CONNECT") and (conn.our_state, conn.their_state) == (
        h11.DONE,
        h11.DONE,
    )
    lowered = {n.lower() for n, _ in fields}
    plain = plain and not lowered & {b"expect", b"upgrade", b"transfer-encoding"}
    if head is not None:
        assert plain
        assert wrote == head + b"b" * max(size, 0)
    elif plain:  # declined: a Connection field other than keep-alive, or a stray length
        assert b"connection" in lowered or b"content-length" in lowered


# -- real sockets ----------------------------------------------------------------------------

_JSON = b'{"jsonrpc":"2.0","id":1,"result":{}}'
_LARGE = bytes(range(251)) * 800


class Case:
    """A scripted answer: its bytes, bytes sent with its last piece (past the
    response), and whether the server closes the connection after it."""

    def __init__(self, data: bytes, past: bytes = b"", close: bool = False) -> None:
        self.data = data
        self.past = past
        self.close = close


CASES = {
    # taken by the fast path when the head comes whole
    "plain": Case(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (len(_JSON), _JSON)
    ),
    "bare": Case(b"HTTP/1.1 202\r\ncontent-length: 0\r\n\r\n"),
    "spaced": Case(
        b"HTTP/1.1 404 Not  Found \r\nX-Note:  padded value \t\r\n"
        b"CONTENT-LENGTH:  5 \r\nConnection: Keep-Alive\r\n\r\nnope!"
    ),
    "large": Case(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(_LARGE), _LARGE)),
    "short": Case(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", close=True),
    "past": Case(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", past=b"EXTRA"),
    "redirect": Case(
        b"HTTP/1.1 307 Temporary\r\nLocation: /case/plain\r\nContent-Length: 0\r\n\r\n"
    ),
    # h11's alone
    "chunked": Case(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"),
    "until-close": Case(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nto the end", close=True
    ),
    "no-content": Case(b"HTTP/1.1 204 No Content\r\n\r\n"),
    "not-modified": Case(b"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n"),
    "informational": Case(
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    ),
    "close": Case(
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", close=True
    ),
    "http10": Case(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok"),
    "obs-text": Case(b"HTTP/1.1 200 \xe9t\xe9\r\nX-A: \xff\r\nContent-Length: 2\r\n\r\nok"),
    "folded": Case(b"HTTP/1.1 200 OK\r\nX-A: one\r\n two\r\nContent-Length: 2\r\n\r\nok"),
    "twice": Case(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\ncontent-length: 2\r\n\r\nok"),
    "chunked-cut": Case(
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", close=True
    ),
    "garbage": Case(b"HTTP/1.1 2x0 OK\r\n\r\n", close=True),
    "drop": Case(b"", close=True),
}
#: Each case followed by a plain exchange, which shows whether the socket was kept.
SEQUENCE = [name for case in CASES if case != "plain" for name in (case, "plain")]


def _pieces(case: Case, how: str) -> list[bytes]:
    data = case.data
    if how == "whole" or not data:
        out = [data]
    elif how == "bytes":  # the first 300 bytes one by one, then the rest
        out = [data[i : i + 1] for i in range(min(len(data), 300))] + [data[300:]]
    else:
        rng = random.Random(f"{how}:{data!r}")
        cuts = sorted(rng.sample(range(1, len(data)), min(8, len(data) - 1)))
        out = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    out = [piece for piece in out if piece]
    if out and case.past:  # with the body's end, so that it always comes with it
        out[-1] += case.past
    return out


async def _requests(stream: anyio.abc.ByteStream) -> AsyncIterator[tuple[bytes, bytes]]:
    """Each request on a connection, its head and its body (by ``Content-Length``)."""
    buffer = b""
    while True:
        try:
            while b"\r\n\r\n" not in buffer:
                buffer += await stream.receive()
            end = buffer.index(b"\r\n\r\n") + 4
            found = re.search(rb"(?i)\r\ncontent-length: *([0-9]+)", buffer[:end])
            stop = end + (int(found.group(1)) if found else 0)
            while len(buffer) < stop:
                buffer += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError):
            return
        yield buffer[:end], buffer[end:stop]
        buffer = buffer[stop:]


async def _answer(stream: anyio.abc.ByteStream, how: str) -> None:
    """Serve one connection: read each request, answer it as its target says."""
    async with stream, aclosing(_requests(stream)) as requests:
        async for head, _ in requests:
            target = head.split(b" ", 2)[1].decode()
            case = CASES[target.rsplit("/", 1)[-1]]
            for piece in _pieces(case, how):
                await stream.send(piece)
                await anyio.sleep(0)
            if case.close:
                return


@asynccontextmanager
async def _server(how: str) -> AsyncIterator[str]:
    async with (
        await anyio.create_tcp_listener(local_host="127.0.0.1") as listener,
        anyio.create_task_group() as tg,
    ):
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        tg.start_soon(listener.serve, lambda stream: _answer(stream, how))
        yield f"http://127.0.0.1:{port}"
        tg.cancel_scope.cancel()


async def _outcome(http: HTTPClient, base: str, name: str) -> tuple[object, ...]:
    """What the client makes of one exchange: the response, or the error."""
    try:
        response = await http.request(
            "POST", URL.parse(f"{base}/case/{name}"), body=b"{}", timeout=10
        )
    except HTTPError as exc:
        return (name, type(exc).__name__, str(exc), getattr(exc, "reused", None))
    async with response:
        head = (name, response.status, response.reason, response.headers, response.media_type)
        try:
            body: object = await response.read_body(10**6)
        except BodyCut as exc:
            body = ("cut", exc.received, exc.expected, exc.chunked, exc.partial, str(exc))
        except HTTPError as exc:
            body = (type(exc).__name__, str(exc))
    return (*head, body)


async def _run(base: str, fast: bool) -> list[tuple[object, int]]:
    """The sequence twice over on one client: each outcome, and the sockets
    opened so far."""
    http = HTTPClient()
    http._fast_path = fast
    seen = []
    for name in SEQUENCE * 2:
        seen.append((await _outcome(http, base, name), http.connections_opened))
    await http.aclose()
    return seen


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["whole", "bytes", "seed-1", "seed-2", "seed-3"])
async def test_the_client_reads_every_answer_as_h11_does(anyio_backend: str, how: str) -> None:
    async with _server(how) as base:
        with anyio.fail_after(60):
            fast = await _run(base, fast=True)
            slow = await _run(base, fast=False)
    assert fast == slow
    opened = dict.fromkeys(CASES, 0)  # how often a case's socket was not kept
    for (before, count_before), (after, count_after) in itertools.pairwise(fast):
        if after[0] == "plain" and count_after > count_before:
            opened[str(before[0])] += 1
    assert opened["plain"] == opened["bare"] == opened["spaced"] == opened["large"] == 0
    assert opened["chunked"] == opened["no-content"] == opened["informational"] == 0
    for name in ("short", "past", "until-close", "close", "http10", "drop", "garbage"):
        assert opened[name] == 2, name  # once in each round
    outcomes = {o[0]: o for o, _ in fast}
    assert outcomes["short"][-1][:3] == ("cut", 5, 10)
    assert outcomes["plain"][1:] == (
        200,
        "OK",
        [("content-type", "application/json"), ("content-length", str(len(_JSON)))],
        "application/json",
        _JSON,
    )
    assert outcomes["large"][-1] == _LARGE
    assert outcomes["spaced"][1:3] == (404, "Not  Found ")


@pytest.mark.anyio
async def test_a_plain_exchange_leaves_h11_idle(anyio_backend: str) -> None:
    """A plain exchange is the fast path's from request to reuse: the socket's
    h11 never moves, and the socket serves the next exchange."""
    async with _server("whole") as base:
        http = HTTPClient()
        url = URL.parse(f"{base}/case/plain")
        for _ in range(3):
            async with await http.request("POST", url, body=b"{}", timeout=10) as response:
                sock = response._sock
                assert sock is not None
                assert (sock.h11.our_state, sock.h11.their_state) == (h11.IDLE, h11.IDLE)
                assert await response.read_body(1000) == _JSON
            assert (sock.h11.our_state, sock.h11.their_state) == (h11.IDLE, h11.IDLE)
        assert http.connections_opened == 1
        # One h11 reads (chunked) on the same socket, then the fast path again.
        for name in ("chunked", "plain"):
            async with await http.request(
                "POST", URL.parse(f"{base}/case/{name}"), body=b"{}", timeout=10
            ) as response:
                assert response._sock is sock
                await response.read_body(1000)
        assert http.connections_opened == 1
        await http.aclose()


async def _echo_bodies(stream: anyio.abc.ByteStream) -> None:
    """Serve one connection: answer each request with its own body."""
    async with stream, aclosing(_requests(stream)) as requests:
        async for _, body in requests:
            head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            await stream.send(head + b"content-length: %d\r\n\r\n" % len(body) + body)


@pytest.mark.anyio
@pytest.mark.parametrize("fast", [True, False])
async def test_large_request_bodies_arrive_whole(anyio_backend: str, fast: bool) -> None:
    """A request body past ``JOIN_LIMIT`` is written after its head, uncopied: the
    server reads every body whole, and the connection serves the next request."""
    async with (
        await anyio.create_tcp_listener(local_host="127.0.0.1") as listener,
        anyio.create_task_group() as tg,
    ):
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        tg.start_soon(listener.serve, _echo_bodies)
        http = HTTPClient()
        http._fast_path = fast
        url = URL.parse(f"http://127.0.0.1:{port}/mcp")
        with anyio.fail_after(30):
            for size in (2, JOIN_LIMIT - 1, JOIN_LIMIT, 300_000, 3_000_000, 2):
                body = bytes(range(256)) * (size // 256) + b"z" * (size % 256)
                async with await http.request("POST", url, body=body, timeout=10) as response:
                    assert await response.read_body(4_000_000) == body
        assert http.connections_opened == 1
        await http.aclose()
        tg.cancel_scope.cancel()
