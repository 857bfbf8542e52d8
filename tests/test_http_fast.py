"""The HTTP server's fast path (``mcpwire/_http_fast.py``) held to h11, which it
stands in for on plain requests.

1. Reading (property-based): whatever head the fast path takes, h11 takes the
   same way: a POST with the same target and the same fields, a body of the
   same length, keep-alive, no protocol switch. This is checked on heads built
   from wild parts, and on typical heads with one byte changed, inserted or
   taken away. Typical heads are all taken, and no part of one is.
2. Writing (property-based): a fast-path response's bytes are those h11 writes.
3. On a real connection, both anyio backends: a run of requests, some the fast
   path takes and some it leaves to h11 (chunked, ``Expect``, HTTP/1.0,
   ``Connection: close``, a head in pieces, pipelined), written whole, byte by
   byte or in random pieces, gets the same answers.
"""

from __future__ import annotations

import random
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
from inproc import echo_server
from strategies import (
    ONE_BYTE_EDITS,
    TCHAR,
    VCHAR,
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
from mcpwire._http_fast import parse_head, response_head
from mcpwire._http_gate import validated_head

LIMIT = 16384

plain_names = field_names([b"Content-Type", b"Accept", b"Mcp-Session-Id", b"MCP-Protocol-Version"])
plain_values = field_values([b"", b"application/json", b"application/json, text/event-stream"])
targets = st.one_of(
    st.sampled_from([b"/mcp", b"/mcp?a=1&b=%20", b"http://127.0.0.1:8000/mcp", b"*"]),
    byte_text(VCHAR, 1, 16),
)


@st.composite
def typical_heads(draw: st.DrawFn) -> tuple[bytes, bytes, list[tuple[bytes, bytes]], int]:
    """A head the fast path is for: POST, HTTP/1.1, one Host, plain fields."""
    length = draw(st.integers(0, 40))
    fields = draw(st.lists(st.tuples(plain_names, plain_values), max_size=6))
    fields = [(n, v) for n, v in fields if n.lower() not in _LOOKED_AT]
    host = (draw(st.sampled_from([b"Host", b"host", b"HOST"])), b"127.0.0.1:8000")
    fields.insert(draw(st.integers(0, len(fields))), host)
    if draw(st.booleans()) or length:
        fields.insert(draw(st.integers(0, len(fields))), (b"Content-Length", b"%d" % length))
    if draw(st.booleans()):
        fields.append((draw(st.sampled_from([b"Connection", b"connection"])), b"keep-alive"))
    target = draw(targets)
    head = b"POST %s HTTP/1.1\r\n%s\r\n" % (target, field_lines(draw, fields))
    return head, target, fields, length


_LOOKED_AT = {
    b"host",
    b"content-length",
    b"connection",
    b"transfer-encoding",
    b"expect",
    b"upgrade",
}

wild_names = wild_field_names(
    plain_names,
    [
        b"Host",
        b"Content-Length",
        b"content-length",
        b"Connection",
        b"Transfer-Encoding",
        b"Expect",
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
        b"-1",
        b"1" * 19,
        b"close",
        b"Keep-Alive",
        b"keep-alive, Upgrade",
        b"chunked",
        b"100-continue",
        b"h2c",
    ],
)


@st.composite
def wild_heads(draw: st.DrawFn) -> bytes:
    method = draw(st.sampled_from([b"POST", b"post", b"GET", b"HEAD", b"CONNECT", b"P\x80ST"]))
    version = draw(st.sampled_from([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2.0", b"http/1.1"]))
    target = draw(st.one_of(targets, st.binary(max_size=6)))
    fields = draw(wild_field_lines(wild_names, wild_values))
    return b"%s %s %s\r\n%s\r\n" % (method, target, version, fields)


def _h11_reading(head: bytes, length: int) -> tuple[h11.Request, h11.Connection] | None:
    """What h11 reads from ``head`` and a body of ``length`` bytes, checking
    on the way that the body is framed by that length and the connection is
    kept alive; None if h11 refuses it or reads something else."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=LIMIT)
    conn.receive_data(head + b"b" * length)
    try:
        request = conn.next_event()
        if type(request) is not h11.Request:
            return None
        body = b""
        while True:
            event = conn.next_event()
            if type(event) is h11.Data:
                body += event.data
            else:
                break
        if type(event) is not h11.EndOfMessage or body != b"b" * length:
            return None
        conn.send(h11.Response(status_code=200, headers=[("content-length", "0")]))
        conn.send(h11.EndOfMessage())
    except h11.ProtocolError:
        return None
    if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
        return None  # not keep-alive, or a protocol switch proposed
    return request, conn


def _agrees(data: bytes) -> None:
    """If the fast path takes ``data``'s head, h11 reads it the same way."""
    fast = parse_head(data, LIMIT)
    if fast is None:
        return
    reading = _h11_reading(data[: fast.end], fast.length)
    assert reading is not None, data
    request, _ = reading
    assert request.method == b"POST"
    assert request.http_version == b"1.1"
    assert request.target == fast.target
    assert request.headers.raw_items() == fast.items


@given(st.one_of(wild_heads(), typical_heads().map(lambda t: t[0])), st.binary(max_size=24))
def test_what_the_fast_path_takes_h11_takes_alike(head: bytes, after: bytes) -> None:
    _agrees(head + after)


@given(typical_heads(), ONE_BYTE_EDITS)
def test_a_typical_head_with_one_byte_changed(
    typical: tuple[bytes, bytes, list[tuple[bytes, bytes]], int], edit: tuple[str, int, int]
) -> None:
    _agrees(edited(typical[0], edit))


@given(typical_heads(), st.binary(max_size=24))
def test_typical_heads_are_taken_whole_and_never_in_part(
    typical: tuple[bytes, bytes, list[tuple[bytes, bytes]], int], after: bytes
) -> None:
    head, target, fields, length = typical
    fast = parse_head(head + after, LIMIT)
    assert fast is not None
    assert (fast.target, fast.items, fast.length, fast.end) == (target, fields, length, len(head))
    _agrees(head + after)
    for cut in range(len(head)):
        assert parse_head(head[:cut], LIMIT) is None
    assert parse_head(head, len(head) - 1) is None  # past the limit: h11's to judge


def _h11_response(status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> bytes:
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n")
    conn.next_event()
    conn.next_event()
    full = [*headers, (b"content-length", b"%d" % len(body))]
    data = conn.send(h11.Response(status_code=status, headers=full)) or b""
    return data + (conn.send(h11.Data(data=body)) or b"") + (conn.send(h11.EndOfMessage()) or b"")


@given(
    st.sampled_from([200, 202, 400, 404, 405, 413, 415, 500, 503]),
    st.lists(
        st.tuples(
            byte_text(TCHAR, 1, 10).map(lambda b: b.decode()),
            plain_values.map(lambda b: b.strip(b" \t").decode("latin-1")),
        ),
        max_size=5,
    ),
    st.binary(max_size=30),
)
def test_fast_responses_are_the_bytes_h11_writes(
    status: int, headers: list[tuple[str, str]], body: bytes
) -> None:
    known = validated_head(headers)
    if known is None:  # a framing header of its own: the fast path does not write it
        assert {n.lower() for n, _ in headers} & {"content-length", "transfer-encoding"}
        return
    ours = response_head(status, known[0]) + b"content-length: %d\r\n\r\n" % len(body) + body
    encoded = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in headers]
    assert ours == _h11_response(status, encoded, body)


# -- on a real connection --------------------------------------------------------------------

MODERN = "2026-07-28"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def _body(rid: int, message: str | None = None) -> bytes:
    message = f"m{rid}" if message is None else message
    return orjson.dumps(
        {
            "jsonrpc": "2.0",
            "id": rid,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"message": message}, "_meta": ENVELOPE},
        }
    )


_COMMON = (
    "Host: 127.0.0.1\r\nContent-Type: application/json\r\n"
    "Accept: application/json, text/event-stream\r\n"
    f"MCP-Protocol-Version: {MODERN}\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n"
)


def _request(rid: int, kind: str) -> bytes:
    """One tools/call, framed as ``kind`` says; all but ``plain`` go to h11."""
    body = _body(rid)
    if kind == "chunked":
        chunks = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        return (
            f"POST /mcp HTTP/1.1\r\n{_COMMON}Transfer-Encoding: chunked\r\n\r\n".encode() + chunks
        )
    extra = {
        "plain": "",
        "expect": "Expect: 100-continue\r\n",
        "spaced": "X-Note:  padded value \t\r\n",
    }[kind]
    head = f"POST /mcp HTTP/1.1\r\n{_COMMON}{extra}Content-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


KINDS = ["plain", "chunked", "plain", "expect", "spaced", "plain", "plain"]


async def _answers(stream: anyio.abc.ByteStream, count: int) -> list[tuple[int, Any]]:
    conn = h11.Connection(h11.CLIENT)
    answers: list[tuple[int, Any]] = []
    for _ in range(count):
        if conn.our_state is h11.DONE:
            conn.start_next_cycle()
        conn.send(h11.Request(method="POST", target="/mcp", headers=[("host", "x")]))
        conn.send(h11.EndOfMessage())
        status, body = 0, b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                with anyio.fail_after(10):
                    conn.receive_data(await stream.receive())
            elif type(event) is h11.InformationalResponse:
                continue
            elif type(event) is h11.Response:
                status = event.status_code
            elif type(event) is h11.Data:
                body += event.data
            else:
                break
        answers.append((status, orjson.loads(body)["result"]["content"]))
    return answers


def _pieces(data: bytes, how: str) -> list[bytes]:
    if how == "whole":
        return [data]
    if how == "bytes":
        return [data[i : i + 1] for i in range(len(data))]
    rng = random.Random(how)
    cuts = sorted(rng.sample(range(1, len(data)), 12))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["whole", "bytes", "seed-1", "seed-2", "seed-3"])
async def test_requests_in_any_pieces_get_the_same_answers(anyio_backend: str, how: str) -> None:
    """The fast path takes a head that comes whole; in pieces h11 reads it. The
    answers are the same, in order, pipelined or not."""
    data = b"".join(_request(rid, kind) for rid, kind in enumerate(KINDS))
    async with http_running(echo_server("fast")) as server, raw_client(server.port) as client:
        stream = client.stream
        for piece in _pieces(data, how):
            await stream.send(piece)
            if how == "bytes":
                await anyio.sleep(0)
        answers = await _answers(stream, len(KINDS))
    expected = [(200, [{"type": "text", "text": f"m{rid}"}]) for rid in range(len(KINDS))]
    assert answers == expected


@pytest.mark.anyio
async def test_large_answers_arrive_whole_and_the_connection_goes_on(anyio_backend: str) -> None:
    """An answer over ``JOIN_LIMIT`` goes out as its head, then its body uncopied:
    each arrives whole, in order, and the keep-alive connection takes the next."""
    sizes = [10, JOIN_LIMIT - 200, JOIN_LIMIT + 1, 300_000, 3_000_000, 5]
    async with http_running(echo_server("fast")) as server, raw_client(server.port) as client:
        stream = client.stream
        for rid, size in enumerate(sizes):
            message = (f"{rid}:" + "abcdefghijklmnopqrstuvwxyz0123456789" * (size // 36 + 1))[:size]
            body = _body(rid, message)
            head = f"POST /mcp HTTP/1.1\r\n{_COMMON}Content-Length: {len(body)}\r\n\r\n"
            await stream.send(head.encode() + body)
            assert await _answers(stream, 1) == [(200, [{"type": "text", "text": message}])]


@pytest.mark.anyio
async def test_one_request_at_a_time_and_then_connection_close(anyio_backend: str) -> None:
    """Fast-path requests one after another keep the connection; one asking
    ``Connection: close`` (h11's to read) is answered and the connection ends."""
    async with http_running(echo_server("fast")) as server, raw_client(server.port) as client:
        stream = client.stream
        for rid in range(3):
            await stream.send(_request(rid, "plain"))
            assert await _answers(stream, 1) == [(200, [{"type": "text", "text": f"m{rid}"}])]
        body = _body(9)
        close = f"Connection: close\r\nContent-Length: {len(body)}\r\n"
        head = f"POST /mcp HTTP/1.1\r\n{_COMMON}{close}\r\n"
        await stream.send(head.encode() + body)
        assert await _answers(stream, 1) == [(200, [{"type": "text", "text": "m9"}])]
        with anyio.fail_after(5):
            rest = b""
            try:
                while chunk := await stream.receive():
                    rest += chunk
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                pass
        assert rest == b""


@pytest.mark.anyio
@pytest.mark.parametrize("how", ["whole", "bytes"])
async def test_empty_lines_before_a_request_line_are_ignored(anyio_backend: str, how: str) -> None:
    """RFC 9112 section 2.2: a server SHOULD ignore at least one empty line
    received before a request line; some clients send a CRLF after a POST body.
    Before the first request, and after a request the fast path read."""
    data = b"\r\n\r\n" + _request(0, "plain") + b"\r\n" + _request(1, "plain")
    async with http_running(echo_server("fast")) as server, raw_client(server.port) as client:
        stream = client.stream
        for piece in _pieces(data, how):
            await stream.send(piece)
        answers = await _answers(stream, 2)
    assert answers == [(200, [{"type": "text", "text": f"m{rid}"}]) for rid in range(2)]
