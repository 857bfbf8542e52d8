"""One HTTP/1.1 client connection: a byte stream and the h11 machine framing it.

Two implementations share one small interface (``send``, ``next_event``,
``reusable``, ``looks_dead``, ``close``):

``StreamSocket``
    Any anyio byte stream: TLS, and every socket on trio.

``ProtocolSocket``
    Plain TCP on asyncio, as an ``asyncio.BufferedProtocol``. anyio's socket stream
    pauses the transport after every ``receive`` and resumes it before the next
    one, which costs two ``epoll_ctl`` calls, an event and a checkpoint per
    read; a request/response exchange is dominated by such fixed costs. Here
    the transport keeps reading into a bounded queue of chunks (reading pauses
    when ``MAX_BUFFERED`` bytes wait unread, so a slow consumer of an event
    stream applies back-pressure to the server), a read that finds data queued
    returns without waiting, and an idle socket knows without a system call
    whether its peer has closed it. Reads land in one reused buffer (asyncio's
    plain protocols receive each read as a fresh 256 KiB allocation).
    Cancellation works as for any awaited future: anyio's cancel scopes cancel
    the task, and the wait ends.

Both feed h11 one received chunk at a time, only when h11 needs more data, so
what h11 buffers stays bounded by its ``max_incomplete_event_size``.
"""

from __future__ import annotations

import asyncio
import collections
import select
from typing import Any

import anyio
import anyio.abc
import h11

from ._errors import MCPWireError

__all__ = (
    "MAX_BUFFERED",
    "BodyTooLarge",
    "ConnectionFailed",
    "HTTPError",
    "InvalidRequest",
    "ProtocolSocket",
    "ReadTimeout",
    "RedirectRefused",
    "StreamSocket",
    "running_asyncio_loop",
)

_RECEIVE_SIZE = 65536
#: Unread bytes queued on a ``ProtocolSocket`` before it stops reading.
MAX_BUFFERED = 1024 * 1024
_EXPIRED = object()


class HTTPError(MCPWireError):
    """Something went wrong below MCP: at the socket, TLS or HTTP level."""


class ConnectionFailed(HTTPError):
    """The server could not be reached, or the connection broke mid-exchange."""


class ReadTimeout(HTTPError):
    """The server sent nothing for longer than the read timeout."""


class InvalidRequest(HTTPError):
    """The request cannot be written (a header value that is not ASCII, for example)."""


class RedirectRefused(HTTPError):
    """A redirect that is not followed (another origin, a method change, too many hops)."""


class BodyTooLarge(HTTPError):
    """A response body is larger than the caller's limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the response body exceeds the limit of {limit} bytes")
        self.limit = limit


def running_asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop, or ``None`` on trio."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _frame(conn: h11.Connection, events: tuple[h11.Event, ...]) -> bytes:
    pieces: list[bytes] = []
    for event in events:
        pieces.extend(conn.send_with_data_passthrough(event) or ())
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _timed_out(timeout: float) -> ReadTimeout:
    return ReadTimeout(f"no data from the server for {timeout:g} s")


class StreamSocket:
    """A connection over an anyio byte stream."""

    __slots__ = ("bytes_in", "h11", "idle_since", "origin", "raw", "stream")

    def __init__(self, stream: anyio.abc.ByteStream, origin: tuple[str, str, int], limit: int):
        self.stream = stream
        self.origin = origin
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=limit)
        self.idle_since = 0.0
        #: Bytes received for the current request (0: the server never answered it).
        self.bytes_in = 0
        #: The socket underneath, polled before reuse (looked up once).
        self.raw = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)

    async def send(self, *events: h11.Event) -> None:
        """Frame ``events`` with h11 and write the bytes in one piece."""
        data = _frame(self.h11, events)
        if data:
            await self.stream.send(data)

    async def next_event(self, timeout: float | None) -> h11.Event | type[h11.PAUSED]:
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event  # type: ignore[return-value]
            data = b""
            if timeout is None:  # the caller's own deadline is in charge
                try:
                    data = await self.stream.receive(_RECEIVE_SIZE)
                except anyio.EndOfStream:
                    data = b""
            else:
                with anyio.move_on_after(timeout) as scope:
                    try:
                        data = await self.stream.receive(_RECEIVE_SIZE)
                    except anyio.EndOfStream:
                        data = b""
                if scope.cancelled_caught:
                    raise _timed_out(timeout)
            self.bytes_in += len(data)
            self.h11.receive_data(data)

    def reusable(self) -> bool:
        return self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE

    def looks_dead(self) -> bool:
        """True if an idle socket is readable: the peer closed it (or sent garbage)."""
        raw = self.raw
        if raw is None:
            return False
        try:
            readable, _, _ = select.select([raw], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(readable)

    async def close(self) -> None:
        await anyio.aclose_forcefully(self.stream)


class ProtocolSocket(asyncio.BufferedProtocol):
    """A plain TCP connection on asyncio (see the module docstring)."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, origin: tuple[str, str, int], limit: int
    ) -> None:
        self.origin = origin
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=limit)
        self.idle_since = 0.0
        self.bytes_in = 0
        self.transport: asyncio.Transport | None = None
        self._loop = loop
        self._chunks: collections.deque[bytes] = collections.deque()
        #: The transport reads into this; see ``get_buffer``.
        self._view = memoryview(bytearray(_RECEIVE_SIZE))
        self._buffered = 0
        self._reading_paused = False
        self._eof = False
        self._lost: BaseException | None = None
        self._waiter: asyncio.Future[Any] | None = None
        self._drained: asyncio.Future[None] | None = None

    # -- asyncio.BufferedProtocol ------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        # A reused buffer: asyncio's plain protocols get each read as a fresh
        # 256 KiB allocation (mmap, mremap and munmap every time, about 17 µs).
        return self._view

    def buffer_updated(self, nbytes: int) -> None:
        data = bytes(self._view[:nbytes])
        self._chunks.append(data)
        self._buffered += len(data)
        if self._buffered >= MAX_BUFFERED and not self._reading_paused and self.transport:
            self._reading_paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake()
        return False  # nothing more to write once the server is done: close

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = True
        if exc is not None:
            self._lost = exc
        self._wake()
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def pause_writing(self) -> None:
        if self._drained is None:
            self._drained = self._loop.create_future()

    def resume_writing(self) -> None:
        drained, self._drained = self._drained, None
        if drained is not None and not drained.done():
            drained.set_result(None)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    # -- the socket interface ---------------------------------------------

    async def send(self, *events: h11.Event) -> None:
        """Frame ``events`` with h11 and write the bytes in one piece."""
        data = _frame(self.h11, events)
        transport = self.transport
        if transport is None or transport.is_closing():
            raise anyio.BrokenResourceError from self._lost
        if data:
            transport.write(data)
        drained = self._drained
        if drained is not None:  # above the high-water mark: wait for the kernel
            await drained
            if transport.is_closing():
                raise anyio.BrokenResourceError from self._lost

    async def next_event(self, timeout: float | None) -> h11.Event | type[h11.PAUSED]:
        conn = self.h11
        while True:
            event = conn.next_event()
            if event is not h11.NEED_DATA:
                return event  # type: ignore[return-value]
            chunks = self._chunks
            if chunks:
                data = chunks.popleft()
                self._buffered -= len(data)
                if self._reading_paused and self._buffered < MAX_BUFFERED // 2:
                    self._reading_paused = False
                    if self.transport is not None and not self.transport.is_closing():
                        self.transport.resume_reading()
                self.bytes_in += len(data)
                conn.receive_data(data)
            elif self._lost is not None:
                raise anyio.BrokenResourceError from self._lost
            elif self._eof:
                conn.receive_data(b"")
            else:
                await self._wait(timeout)

    async def _wait(self, timeout: float | None) -> None:
        waiter = self._waiter = self._loop.create_future()
        if timeout is None:
            try:
                await waiter
            finally:
                self._waiter = None
            return
        expiry = self._loop.call_later(timeout, _expire, waiter)
        try:
            await waiter
        finally:
            expiry.cancel()
            self._waiter = None
        if waiter.result() is _EXPIRED:
            raise _timed_out(timeout)

    def reusable(self) -> bool:
        return self.h11.our_state is h11.DONE and self.h11.their_state is h11.DONE

    def looks_dead(self) -> bool:
        """True if an idle socket got anything: the peer's FIN (or garbage)."""
        transport = self.transport
        return bool(self._chunks) or self._eof or transport is None or transport.is_closing()

    async def close(self) -> None:
        transport = self.transport
        if transport is not None:
            transport.abort()


def _expire(waiter: asyncio.Future[Any]) -> None:
    if not waiter.done():
        waiter.set_result(_EXPIRED)
