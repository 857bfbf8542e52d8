"""How the HTTP server refuses what it cannot serve, and what it never says, on real sockets.

1. Deadlines: a request head begun but not whole within ``read_timeout`` is
   answered ``408 Request Timeout`` and closed on (RFC 9110 section 15.5.9);
   a connection with no byte of a request, new or idle between requests, is
   closed on silently (RFC 9112 section 9.5).
2. Malformed requests that h11 refuses get h11's status (400, 431, 501) and a
   fixed text naming the kind of error; nothing the client sent comes back.
3. A POSTed body declared in a charset other than UTF-8 is refused with 415
   (RFC 8259 section 8.1), on the streamable endpoint and the deprecated
   HTTP+SSE one alike.
4. A server that runs out of file descriptors (EMFILE) neither stops nor
   spins: it warns once, retries every 0.1 s, and serves again once
   connections end (a child process with a low ``RLIMIT_NOFILE``).

Every test runs on both anyio backends.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import anyio.abc
import h11
import orjson
import pytest
from http_raw import LEGACY, Reply, client, init_body, modern, running
from inproc import echo_server

pytestmark = pytest.mark.anyio

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MARK = b"zz<mark>zz"


def _echo_call(message: str) -> bytes:
    """A whole modern ``tools/call`` of ``echo``, as bytes."""
    body, headers = modern(1, "tools/call", {"name": "echo", "arguments": {"message": message}})
    data = orjson.dumps(body)
    lines = [
        "POST /mcp HTTP/1.1",
        "Host: 127.0.0.1",
        "Content-Type: application/json",
        "Accept: application/json, text/event-stream",
        *(f"{k}: {v}" for k, v in headers.items()),
        f"Content-Length: {len(data)}",
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


async def _until_closed(stream: anyio.abc.ByteStream) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    with anyio.fail_after(10):
        while True:
            try:
                received += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                return received


def _responses(data: bytes, requests: int = 1) -> list[Reply]:
    """The responses in ``data``, read by an h11 client that sent ``requests``."""
    conn = h11.Connection(h11.CLIENT)
    conn.receive_data(data)
    conn.receive_data(b"")
    replies: list[Reply] = []
    for _ in range(requests):
        if conn.our_state is h11.DONE:
            conn.start_next_cycle()
        conn.send(h11.Request(method="GET", target="/", headers=[("host", "x")]))
        conn.send(h11.EndOfMessage())
        reply = None
        while True:
            event = conn.next_event()
            if isinstance(event, h11.Response):
                headers = {k.decode().lower(): v.decode() for k, v in event.headers}
                reply = Reply(event.status_code, headers)
            elif isinstance(event, h11.Data):
                assert reply is not None
                reply.body += event.data
            elif isinstance(event, h11.EndOfMessage):
                assert reply is not None
                replies.append(reply)
                break
            else:
                raise AssertionError(f"no whole response: {event!r} after {replies!r}")
    return replies


# =================================================================================================
# 1. Deadlines
# =================================================================================================


async def _trickle(stream: anyio.abc.ByteStream, head: bytes) -> None:
    """Send ``head``, then a header line every 0.05 s, never ending the head."""
    try:
        await stream.send(head)
        for _ in range(400):
            await stream.send(b"X-Slow: 1\r\n")
            await anyio.sleep(0.05)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass


@pytest.mark.parametrize("served_first", [False, True], ids=["first-request", "keep-alive"])
async def test_a_head_trickled_past_read_timeout_gets_408(
    anyio_backend: str, served_first: bool
) -> None:
    """Each piece of the head comes well within the keep-alive timeout, but the
    head is not whole within ``read_timeout``: 408, ``Connection: close``, closed;
    on a keep-alive connection, the request served before keeps its answer."""
    async with running(echo_server("refusals"), read_timeout=0.5, keep_alive_timeout=30) as http:
        stream = await anyio.connect_tcp("127.0.0.1", http.port or 0)
        async with stream, anyio.create_task_group() as tg:
            if served_first:
                await stream.send(_echo_call("first"))
            tg.start_soon(_trickle, stream, b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            received = await _until_closed(stream)
            tg.cancel_scope.cancel()
        replies = _responses(received, 2 if served_first else 1)
        if served_first:
            first = replies.pop(0)
            assert first.status == 200
            assert first.json()["result"]["content"][0]["text"] == "first"
        [late] = replies
        assert late.status == 408
        assert late.headers["connection"] == "close"
        assert late.body == b"Request Timeout: the request head did not arrive in time\n"


async def test_connections_without_a_request_close_silently(anyio_backend: str) -> None:
    """No byte of a request: a new connection past ``read_timeout``, and an idle
    keep-alive one past ``keep_alive_timeout``, are closed with nothing sent."""
    async with running(echo_server("refusals"), read_timeout=0.3, keep_alive_timeout=0.3) as http:
        async with await anyio.connect_tcp("127.0.0.1", http.port or 0) as stream:
            assert await _until_closed(stream) == b""
        async with await anyio.connect_tcp("127.0.0.1", http.port or 0) as stream:
            await stream.send(_echo_call("once"))
            [reply] = _responses(await _until_closed(stream))
            assert reply.status == 200
            assert reply.json()["result"]["content"][0]["text"] == "once"


# =================================================================================================
# 2. Malformed requests
# =================================================================================================

MALFORMED = [
    (
        b"GET /mcp HTTP/1.1 " + MARK + b"\r\nHost: x\r\n\r\n",
        400,
        "Bad Request: malformed request line",
    ),
    (
        b"GET /mcp HTTP/1.1\r\nHost: x\r\n" + MARK + b"\r\n\r\n",
        400,
        "Bad Request: malformed header field",
    ),
    (
        b"GET /mcp HTTP/1.1\r\nX-Mark: " + MARK + b"\r\n\r\n",
        400,
        "Bad Request: missing Host header",
    ),
    (
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: " + MARK + b"\r\n\r\n",
        400,
        "Bad Request: invalid Content-Length",
    ),
    (
        b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: " + MARK + b"\r\n\r\n",
        501,
        "Not Implemented: unsupported Transfer-Encoding (only chunked)",
    ),
    (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + MARK + b"\r\n",
        400,
        "Bad Request: malformed chunked body",
    ),
    (
        # h11's own bound on a head still incomplete (16 KiB by default).
        b"GET /mcp HTTP/1.1\r\nHost: x\r\nX-Pad: " + MARK * 2000,
        431,
        "Request Header Fields Too Large: request head too large",
    ),
]


@pytest.mark.parametrize(
    ("data", "status", "text"),
    MALFORMED,
    ids=["request-line", "header", "host", "content-length", "transfer-encoding", "chunk", "431"],
)
async def test_malformed_requests_are_named_not_echoed(
    anyio_backend: str, data: bytes, status: int, text: str
) -> None:
    async with running(echo_server("refusals")) as http:
        async with await anyio.connect_tcp("127.0.0.1", http.port or 0) as stream:
            await stream.send(data)
            received = await _until_closed(stream)
        assert MARK not in received and b"mark" not in received
        [reply] = _responses(received)
        assert reply.status == status
        assert reply.headers["connection"] == "close"
        assert reply.headers["content-type"] == "text/plain; charset=utf-8"
        assert reply.body == text.encode() + b"\n"
        # The server goes on serving.
        async with await anyio.connect_tcp("127.0.0.1", http.port or 0) as stream:
            await stream.send(_echo_call("after"))
            with anyio.fail_after(10):
                head = await stream.receive()
        assert head.startswith(b"HTTP/1.1 200 ")


# =================================================================================================
# 3. Charsets
# =================================================================================================

REFUSED_CHARSETS = [
    "application/json; charset=latin-1",
    "application/json;charset=ISO-8859-1",
    'application/json; charset="utf-16"',
    "Application/JSON; Charset=US-ASCII",
]
ACCEPTED_CHARSETS = [
    "application/json; charset=utf-8",
    'application/json; charset="UTF-8"',
    "application/json;CHARSET=Utf-8",
    "application/json",
]
CHARSET_REFUSAL = b"Unsupported Media Type: JSON must be UTF-8 (charset=utf-8 or none)\n"


async def test_a_body_in_another_charset_than_utf8_is_415(anyio_backend: str) -> None:
    async with running(echo_server("refusals")) as http, client(http.port or 0) as raw:
        body, headers = modern(1, "tools/list")
        for content_type in REFUSED_CHARSETS:
            reply = await raw.request(body=body, headers={**headers, "content-type": content_type})
            assert reply.status == 415, content_type
            assert reply.body == CHARSET_REFUSAL
        for content_type in ACCEPTED_CHARSETS:
            reply = await raw.request(body=body, headers={**headers, "content-type": content_type})
            assert reply.status == 200, content_type
            assert reply.json()["result"]["tools"][0]["name"] == "echo"
        reply = await raw.request(body=body, headers={**headers, "content-type": "text/plain"})
        assert reply.status == 415
        assert reply.body == b"Unsupported Media Type: send application/json\n"


async def test_a_deprecated_sse_post_in_another_charset_is_415(anyio_backend: str) -> None:
    async with (
        running(echo_server("refusals"), legacy_sse=True) as http,
        client(http.port or 0) as raw,
    ):
        await raw.send("GET", path="/sse", headers={"accept": "text/event-stream"})
        assert (await raw.head()).status == 200
        event = await raw.sse().next()
        assert event is not None and event.event == "endpoint"
        endpoint = event.data
        assert endpoint.startswith("/messages?session_id=")
        async with client(http.port or 0) as poster:
            for content_type, status in [
                ("application/json; charset=latin-1", 415),
                ('application/json; charset="UTF-8"', 202),
            ]:
                reply = await poster.request(
                    body=init_body(LEGACY), headers={"content-type": content_type}, path=endpoint
                )
                assert reply.status == status, content_type
                if status == 415:
                    assert reply.body == CHARSET_REFUSAL


# =================================================================================================
# 4. Out of file descriptors
# =================================================================================================


def _cpu_seconds(pid: int) -> float:
    """User and system CPU time of a process so far (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


FAILED = "accepting a connection failed"


async def test_running_out_of_descriptors_neither_stops_nor_spins_the_server(
    anyio_backend: str, tmp_path: Path
) -> None:
    log = tmp_path / "stderr"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with log.open("wb") as err:
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "http_fd_child.py"), anyio_backend, "8"],
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
        )
    held: list[anyio.abc.SocketStream] = []
    try:
        assert proc.stdout is not None
        with anyio.fail_after(20):
            port = int(await anyio.to_thread.run_sync(proc.stdout.readline))
        # Each connection the server accepts takes one of its spare descriptors;
        # the kernel queues the ones past them, and accept fails with EMFILE.
        for _ in range(24):
            held.append(await anyio.connect_tcp("127.0.0.1", port))
        with anyio.fail_after(20):
            while FAILED not in log.read_text():
                assert proc.poll() is None, log.read_text()
                await anyio.sleep(0.05)
        # The shortage goes on: the server waits between tries, so a second of
        # them costs it little CPU time, and it has warned once.
        before = _cpu_seconds(proc.pid)
        await anyio.sleep(1.0)
        assert _cpu_seconds(proc.pid) - before < 0.5
        text = log.read_text()
        assert text.count(FAILED) == 1, text
        assert "Too many open files" in text
        assert proc.poll() is None
        # Connections end, their descriptors are freed: the server accepts the
        # ones still queued (two of them still open) and serves a new one.
        for stream in held[:-2]:
            await stream.aclose()
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(_echo_call("again"))
            with anyio.fail_after(20):
                received = b""
                while b"again" not in received:
                    received += await stream.receive()
        assert received.startswith(b"HTTP/1.1 200 ")
        assert proc.poll() is None
        assert "accepting connections again" in log.read_text()
    finally:
        for stream in held[-2:]:
            await stream.aclose()
        proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
