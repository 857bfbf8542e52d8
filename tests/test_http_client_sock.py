"""The HTTP client's connections (``_http_client_sock``), on both anyio backends.

On asyncio a plain TCP connection is a ``ProtocolSocket``; on trio (and for TLS)
it is a ``StreamSocket`` over an anyio stream. Each test runs on both, against
the scripted server of ``tests/http_client/rawserver.py``, so both kinds meet the
same rules: timeouts, broken and cut connections, back-pressure, large writes,
cancellation, stale idle sockets, and the cache of request heads.
"""

from __future__ import annotations

import anyio
import pytest
from http_client.rawserver import Reply, Seen, raw_server

from mcpwire._aio_stream import DEFAULT_MAX_BUFFERED
from mcpwire._http_client import HTTPClientTransport
from mcpwire._http_client_conn import URL, HTTPClient
from mcpwire._http_client_sock import (
    ConnectionFailed,
    ProtocolSocket,
    ReadTimeout,
    StreamSocket,
)

pytestmark = pytest.mark.anyio


def _ok(body: bytes = b"{}") -> Reply:
    return Reply(200, [("Content-Length", str(len(body)))], [body])


async def test_the_socket_kind_follows_the_backend(anyio_backend: str) -> None:
    async def handler(seen: Seen) -> Reply:
        return _ok()

    async with raw_server(handler) as server:
        http = HTTPClient()
        sock = await http._connect(URL.parse(server.url))
        expected = ProtocolSocket if anyio_backend == "asyncio" else StreamSocket
        assert type(sock) is expected
        await sock.close()


async def test_read_timeouts_for_the_head_and_for_the_body() -> None:
    release = anyio.Event()

    async def handler(seen: Seen) -> Reply:
        if seen.target.endswith("slow-head"):
            await release.wait()
            return _ok()
        # The head and one chunk, then nothing until released.
        return Reply(200, [("Content-Length", "10")], [b"12345"], hold=release)

    async with raw_server(handler) as server:
        http = HTTPClient()
        with pytest.raises(ReadTimeout, match=r"0\.1 s"):
            await http.request("GET", URL.parse(server.url + "?slow-head"), timeout=0.1)
        response = await http.request("GET", URL.parse(server.url), timeout=0.1)
        assert await response.read_chunk() == b"12345"
        with pytest.raises(ReadTimeout):
            await response.read_chunk()
        await response.aclose()
        release.set()
        # Both sockets were given up; the next request opens a fresh one and works.
        async with await http.request("GET", URL.parse(server.url + "?x"), timeout=5) as again:
            assert again.status == 200
        await http.aclose()


async def test_a_cut_body_and_a_dropped_request_fail_the_exchange() -> None:
    async def handler(seen: Seen) -> Reply:
        if seen.target.endswith("drop"):
            return Reply(drop=True)
        return Reply(200, [("Content-Length", "100")], [b"only part"], cut=True)

    async with raw_server(handler) as server:
        http = HTTPClient()
        response = await http.request("GET", URL.parse(server.url), timeout=5)
        with pytest.raises(ConnectionFailed, match="broke while reading the body"):
            await response.read_body(1000)
        await response.aclose()
        with pytest.raises(ConnectionFailed):
            await http.request("GET", URL.parse(server.url + "?drop"), timeout=5)
        await http.aclose()


async def test_a_slow_reader_bounds_what_is_buffered() -> None:
    """The server streams 6 MiB; the reader takes it slowly, and the client never
    holds much more than ``DEFAULT_MAX_BUFFERED`` unread (TCP back-pressure does the rest)."""
    piece = bytes(range(256)) * 256  # 64 KiB
    count = 96

    async def handler(seen: Seen) -> Reply:
        return Reply(200, [("Content-Length", str(len(piece) * count))], [piece] * count)

    async with raw_server(handler) as server:
        http = HTTPClient()
        response = await http.request("GET", URL.parse(server.url), timeout=10)
        sock = response._sock
        received = bytearray(await response.read_chunk())
        await anyio.sleep(0.3)  # the server keeps writing; we don't read
        if isinstance(sock, ProtocolSocket):
            assert 0 < sock.stream._buffered <= DEFAULT_MAX_BUFFERED + 64 * 1024
            assert sock.stream._reading_paused
        while chunk := await response.read_chunk():
            received += chunk
        assert bytes(received) == piece * count
        await response.aclose()
        await http.aclose()


async def test_a_large_body_is_written_whole() -> None:
    body = bytes(range(251)) * 40_000  # about 10 MB: more than any socket buffer

    async def handler(seen: Seen) -> Reply:
        return _ok(str(len(seen.body)).encode())

    async with raw_server(handler) as server:
        http = HTTPClient()
        async with await http.request("POST", URL.parse(server.url), body=body, timeout=10) as r:
            assert await r.read_body(100) == str(len(body)).encode()
        assert server.seen[-1].body == body
        await http.aclose()


async def test_cancelling_a_wait_gives_up_the_socket_and_the_client_goes_on() -> None:
    release = anyio.Event()

    async def handler(seen: Seen) -> Reply:
        if seen.target.endswith("hold"):
            await release.wait()
        return _ok()

    async with raw_server(handler) as server:
        http = HTTPClient()
        with anyio.move_on_after(0.1) as scope:
            await http.request("GET", URL.parse(server.url + "?hold"))
        assert scope.cancelled_caught
        release.set()
        for _ in range(3):
            async with await http.request("GET", URL.parse(server.url), timeout=5) as r:
                assert await r.read_body(10) == b"{}"
        assert http.connections_opened == 2  # the cancelled one, then one kept alive
        await http.aclose()


async def test_an_idle_socket_closed_by_the_server_is_not_reused() -> None:
    async def handler(seen: Seen) -> Reply:
        reply = _ok()
        reply.close_after = seen.target.endswith("close")
        return reply

    async with raw_server(handler) as server:
        http = HTTPClient()
        url = URL.parse(server.url + "?close")
        async with await http.request("GET", url, timeout=5) as r:
            await r.read_body(10)
        idle = http._idle[url.origin]
        assert len(idle) == 1
        with anyio.fail_after(5):
            while not idle[0].looks_dead():  # the FIN arrives
                await anyio.sleep(0.01)
        async with await http.request("GET", URL.parse(server.url), timeout=5) as r:
            assert await r.read_body(10) == b"{}"
        assert server.connections == 2
        assert [s.connection for s in server.seen] == [1, 2]
        await http.aclose()


async def test_request_heads_are_cached_boundedly_and_stay_exact() -> None:
    async def handler(seen: Seen) -> Reply:
        return _ok()

    async with raw_server(handler) as server:
        http = HTTPClient()
        url = URL.parse(server.url)
        for i in range(100):
            headers = [("X-Number", str(i % 70)), ("Accept", "application/json")]
            body = b"x" * (i % 3)
            async with await http.request("POST", url, headers, body, timeout=5) as r:
                await r.read_body(10)
            seen = server.seen[-1]
            assert seen.headers["x-number"] == str(i % 70)
            assert seen.headers["content-length"] == str(i % 3)
            assert seen.body == body
            assert len(http._requests) <= 64
        # A header given as a list (unhashable) is sent all the same, just not cached.
        listed = [["X-Listed", "yes"]]
        async with await http.request("GET", url, listed, timeout=5) as r:  # type: ignore[arg-type]
            await r.read_body(10)
        assert server.seen[-1].headers["x-listed"] == "yes"
        await http.aclose()


async def test_abort_ends_the_waits_for_a_connection_a_slot_and_an_answer(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``abort()``: a wait for a connection or a slot fails at once; a wait for the
    answer too where the socket closes without waiting (``abortable``: plain TCP on
    asyncio), and on the other kind the caller's own scope is what ends it."""
    release = anyio.Event()

    async def handler(seen: Seen) -> Reply:
        await release.wait()
        return _ok()

    async with raw_server(handler) as server:
        url = URL.parse(server.url)
        http = HTTPClient(max_connections=1)
        assert http.abortable(url) is (anyio_backend == "asyncio")
        outcomes: list[str] = []

        async def call() -> None:
            with anyio.move_on_after(5):
                try:
                    await http.request("GET", url)
                except ConnectionFailed as exc:
                    outcomes.append(str(exc))
                return
            outcomes.append("timed out")

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)  # holds the only slot, waiting for the answer
            while not server.seen:
                await anyio.sleep(0.01)
            tg.start_soon(call)  # waits for the slot
            await anyio.sleep(0.05)
            http.abort()
            if anyio_backend != "asyncio":
                await anyio.sleep(0.05)
                tg.cancel_scope.cancel()  # the first call waits on: its own scope ends it
        expected = 2 if anyio_backend == "asyncio" else 1
        assert outcomes == ["the exchange was aborted"] * expected
        assert not http._busy

        # A wait for a connection (one that never completes here).
        async def never(url: URL) -> None:
            await anyio.sleep_forever()

        monkeypatch.setattr(http, "_connect", never)
        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                await anyio.sleep(0.05)
                http.abort()
        assert outcomes[-1] == "the exchange was aborted"
        release.set()
        await http.aclose()


async def test_a_transport_whose_close_fails_still_exits_its_task_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Used on its own (``async with``), the transport exits the task group it made
    even when closing raises, so the caller sees that error and the scopes around
    it stay sound (pain point 8)."""
    transport = HTTPClientTransport("http://127.0.0.1:9/mcp")
    real_close = transport.aclose

    async def failing_close() -> None:
        await real_close()
        raise RuntimeError("closing failed")

    monkeypatch.setattr(transport, "aclose", failing_close)
    with anyio.CancelScope(), pytest.raises(RuntimeError, match="closing failed"):
        async with transport:
            pass
    with anyio.move_on_after(0.01) as scope:
        await anyio.sleep(1)
    assert scope.cancelled_caught
