"""``AsyncioStream``: the asyncio-only TCP byte stream (``mcpwire/_aio_stream.py``).

It exists only on asyncio (trio keeps anyio's streams), so these tests run on
asyncio alone. The peer is a plain anyio TCP stream on loopback.
"""

from __future__ import annotations

import asyncio
import socket
import struct
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import anyio.abc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpwire._aio_stream import (
    DEFAULT_MAX_BUFFERED,
    FIRST_READ_SIZE,
    READ_SIZE,
    AsyncioStream,
    open_tcp_listener,
    serve_listener,
)
from mcpwire._http_wire import HTTPConnection

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connected(
    max_buffered: int = DEFAULT_MAX_BUFFERED,
) -> AsyncIterator[tuple[AsyncioStream, anyio.abc.SocketStream]]:
    """Our stream, and the peer's anyio stream, connected over loopback."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    loop = asyncio.get_running_loop()
    async with listener:
        _, ours = await loop.create_connection(
            lambda: AsyncioStream(loop, max_buffered=max_buffered), "127.0.0.1", port
        )
        peer = await listener.listeners[0].accept()
        try:
            yield ours, peer
        finally:
            ours.abort()
            await anyio.aclose_forcefully(peer)


async def _read_to_the_end(stream: AsyncioStream) -> None:
    while await stream.receive_chunk():
        pass


async def test_bytes_both_ways_max_bytes_and_end_of_stream() -> None:
    async with connected() as (ours, peer):
        await ours.send(b"ping")
        assert await peer.receive() == b"ping"
        await peer.send(b"0123456789")
        assert await ours.receive(4) == b"0123"  # the rest stays queued, in order
        assert await ours.receive(100) == b"456789"
        await peer.send_eof()
        with pytest.raises(anyio.EndOfStream):
            await ours.receive()
        assert await ours.receive_chunk() == b""
        await ours.send(b"after their half-close")  # we may still answer
        assert await peer.receive() == b"after their half-close"


async def test_has_input_counts_delivered_bytes_and_the_end_only() -> None:
    """What the HTTP server asks before each request, to yield first when its
    next read will not wait: no system call, so bytes still in the kernel
    (not yet delivered by the loop) do not count, unlike ``looks_dead``."""
    async with connected() as (ours, peer):
        assert not ours.has_input()
        await peer.send(b"abc")
        with anyio.fail_after(5):
            while not ours.has_input():  # the loop delivers the bytes
                await anyio.sleep(0.001)
        assert await ours.receive_chunk() == b"abc"
        assert not ours.has_input()
        ours.transport.pause_reading()  # the next bytes stay in the kernel
        await peer.send(b"d")
        with anyio.fail_after(5):
            while not ours.looks_dead():  # the socket polls readable
                await anyio.sleep(0.001)
        assert not ours.has_input()
        ours.transport.resume_reading()
        assert await ours.receive_chunk(5) == b"d"
        await peer.send_eof()
        with anyio.fail_after(5):
            while not ours.has_input():
                await anyio.sleep(0.001)
        assert await ours.receive_chunk() == b""


async def test_timeout_close_and_reset() -> None:
    async with connected() as (ours, peer):
        with pytest.raises(TimeoutError):
            await ours.receive_chunk(0.05)
        assert not ours.looks_dead()
        raw = peer.extra(anyio.abc.SocketAttribute.raw_socket)
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        await peer.aclose()  # linger 0: a reset
        with anyio.fail_after(5), pytest.raises(anyio.BrokenResourceError):
            await _read_to_the_end(ours)
        assert ours.looks_dead()
        with pytest.raises(anyio.BrokenResourceError):
            await ours.send(b"x")
    async with connected() as (ours, peer):
        await ours.aclose()
        with pytest.raises(anyio.ClosedResourceError):
            await ours.receive()
        with pytest.raises(anyio.ClosedResourceError):
            await ours.send(b"x")
        with pytest.raises(anyio.EndOfStream):
            await peer.receive()


async def test_cancelling_a_receive_leaves_the_stream_usable() -> None:
    async with connected() as (ours, peer):
        with anyio.move_on_after(0.05) as scope:
            await ours.receive()
        assert scope.cancelled_caught
        await peer.send(b"later")
        assert await ours.receive() == b"later"


async def test_extra_attributes() -> None:
    async with connected() as (ours, peer):
        attrs = anyio.abc.SocketAttribute
        assert ours.extra(attrs.family) == socket.AF_INET
        assert ours.extra(attrs.remote_address) == peer.extra(attrs.local_address)
        assert ours.extra(attrs.local_address) == peer.extra(attrs.remote_address)
        raw = ours.extra(attrs.raw_socket)  # asyncio's socket view, as anyio gives it
        assert raw.getsockname() == ours.extra(attrs.local_address)


async def test_reading_pauses_past_the_bound_and_resumes() -> None:
    limit = 256 * 1024
    total = 4 * 1024 * 1024
    async with connected(max_buffered=limit) as (ours, peer), anyio.create_task_group() as tg:

        async def write_all() -> None:
            await peer.send(b"z" * total)
            await peer.send_eof()

        tg.start_soon(write_all)
        await anyio.sleep(0.2)  # nobody reads: the queue fills to the bound and stops
        assert ours._reading_paused
        assert limit <= ours._buffered < limit + READ_SIZE
        got = 0
        while chunk := await ours.receive_chunk():
            assert len(chunk) <= READ_SIZE
            got += len(chunk)
        assert got == total


async def test_a_large_write_waits_for_the_peer() -> None:
    """A write above the transport's high-water mark waits in ``drain`` until the
    peer reads; every byte arrives, in order."""
    payload = bytes(range(256)) * (32 * 1024)  # 8 MiB
    async with connected() as (ours, peer):
        received = bytearray()

        async def read_all() -> None:
            while len(received) < len(payload):
                received.extend(await peer.receive())

        async with anyio.create_task_group() as tg:
            tg.start_soon(read_all)
            await ours.send(payload)
        assert bytes(received) == payload


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=30)
@given(
    pieces=st.lists(st.binary(min_size=1, max_size=3000), min_size=1, max_size=12),
    reads=st.lists(st.integers(min_value=1, max_value=5000), min_size=1, max_size=20),
)
def test_any_chunking_and_any_read_sizes_give_the_same_bytes(
    pieces: list[bytes], reads: list[int]
) -> None:
    async def main() -> bytes:
        async with connected() as (ours, peer):
            for piece in pieces:
                await peer.send(piece)
            await peer.send_eof()
            out = bytearray()
            i = 0
            while True:
                try:
                    out += await ours.receive(reads[i % len(reads)])
                except anyio.EndOfStream:
                    return bytes(out)
                i += 1

    assert anyio.run(main, backend="asyncio") == b"".join(pieces)


async def _serve_echo(seen: list[object], host: str = "127.0.0.1") -> list[object]:
    """Serve one echo connection with ``serve_listener``; return what the handler saw."""
    listener = await open_tcp_listener(host, 0)
    port = listener.extra(anyio.abc.SocketAttribute.local_port)

    async def echo(stream: anyio.abc.ByteStream) -> None:
        seen.append(stream)
        async with stream:
            await stream.send(await stream.receive())

    async with anyio.create_task_group() as handlers, anyio.create_task_group() as tg:
        tg.start_soon(serve_listener, listener, echo, handlers)
        async with await anyio.connect_tcp(host, port) as client:
            await client.send(b"hello")
            assert await client.receive() == b"hello"
        tg.cancel_scope.cancel()  # the accept loops end before the listener closes
    await listener.aclose()
    with pytest.raises(OSError):
        await anyio.connect_tcp(host, port)
    return seen


async def test_serve_listener_hands_asyncio_streams_to_the_handler() -> None:
    seen = await _serve_echo([])
    assert len(seen) == 1 and type(seen[0]) is AsyncioStream


def test_serve_listener_on_trio_is_the_listeners_own_serve() -> None:
    seen = anyio.run(_serve_echo, [], backend="trio")
    assert len(seen) == 1 and not isinstance(seen[0], AsyncioStream)


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "localhost"])
def test_open_tcp_listener_serves_on_both_backends(host: str) -> None:
    for backend in ("asyncio", "trio"):
        (stream,) = anyio.run(_serve_echo, [], host, backend=backend)
        assert isinstance(stream, AsyncioStream) == (backend == "asyncio")


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_a_literal_address_is_bound_without_a_lookup_thread(host: str) -> None:
    # anyio resolves even a literal in the loop's executor, whose worker thread
    # then idles for the life of the process: a server bound to 127.0.0.1 has none.
    async def main() -> tuple[int, int, tuple[object, ...]]:
        before = threading.active_count()
        listener = await open_tcp_listener(host, 0)
        async with listener:
            raw = listener.extra(anyio.abc.SocketAttribute.raw_socket)
            return before, threading.active_count(), raw.getsockname()

    before, after, address = anyio.run(main, backend="asyncio")
    assert after == before
    assert address[0] == host and address[1] > 0


async def test_on_end_hears_the_peer_finish_while_nobody_receives() -> None:
    """``on_end`` is called once, for the FIN or a broken connection, and cleared."""
    async with connected() as (ours, peer):
        heard: list[str] = []
        ours.on_end = lambda: heard.append("end")
        await peer.send(b"a pipelined request")  # bytes alone are not an end
        await anyio.sleep(0.05)
        assert heard == [] and not ours.at_end
        await peer.send_eof()
        with anyio.fail_after(5):
            while not heard:
                await anyio.sleep(0.01)
        assert heard == ["end"] and ours.at_end and ours.on_end is None
        assert await ours.receive_chunk() == b"a pipelined request"  # kept, unread
        assert await ours.receive_chunk() == b""


async def test_on_disconnect_reports_an_end_that_came_before_it() -> None:
    """``HTTPConnection.on_disconnect`` on a stream whose input had already ended
    calls back at once (and marks the peer closed); on a live one it waits for the
    end, and what it returns stops it."""
    async with connected() as (ours, peer):
        http = HTTPConnection(ours, max_header_size=16384, read_timeout=5, write_timeout=5)
        heard: list[str] = []
        stop = http.on_disconnect(lambda: heard.append("first"))
        assert stop is not None and heard == [] and not http.peer_closed
        stop()
        assert ours.on_end is None  # stopped: the end will not be reported to it
        await peer.send_eof()
        with anyio.fail_after(5):
            while not ours.at_end:
                await anyio.sleep(0.01)
        assert heard == []
        stop = http.on_disconnect(lambda: heard.append("second"))
        assert stop is not None and heard == ["second"] and http.peer_closed
        stop()


async def test_the_read_buffer_starts_small_and_grows_once_a_read_fills_it() -> None:
    """An idle keep-alive connection holds ``FIRST_READ_SIZE`` for its reads; a read
    that fills it makes the buffer ``READ_SIZE``, and no byte is lost meanwhile."""
    async with connected() as (ours, peer):
        assert len(ours._view) == FIRST_READ_SIZE
        await peer.send(b"small")
        assert await ours.receive() == b"small"
        assert len(ours._view) == FIRST_READ_SIZE
        payload = bytes(range(256)) * 1024
        received = bytearray()
        async with anyio.create_task_group() as tg:
            tg.start_soon(peer.send, payload)
            with anyio.fail_after(10):
                while len(received) < len(payload):
                    received += await ours.receive()
        assert bytes(received) == payload
        assert len(ours._view) == READ_SIZE
