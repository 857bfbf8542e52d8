"""A TCP byte stream on asyncio's protocol API: the fast path under anyio on asyncio.

anyio's asyncio socket stream is correct and general, but two of its fixed
costs dominate a small request/response exchange:

* it pauses the transport after every ``receive`` and resumes it before the
  next one: two ``epoll_ctl`` calls, an event and a checkpoint per read;
* asyncio's plain protocols receive each read as a fresh bytes object of the
  transport's full read size (256 KiB), which the allocator serves with
  ``mmap``, ``mremap`` and ``munmap``: about 17 µs per read measured here,
  against about 1 µs for reading into a reused buffer.

``AsyncioStream`` is an ``asyncio.BufferedProtocol`` that keeps reading into
one reused buffer and queues copies of what arrived. The queue is bounded:
past ``max_buffered`` unread bytes the transport stops reading until the
consumer catches up, so a slow consumer applies TCP back-pressure. A receive
that finds data queued returns it without waiting. It is also an anyio
``ByteStream``, so code written against anyio streams takes it unchanged, and
cancellation works as for any awaited future: anyio's cancel scopes cancel the
waiting task.

Only plain TCP on a running asyncio loop uses it; TLS and trio keep anyio's
streams.
"""

from __future__ import annotations

import asyncio
import collections
import ipaddress
import logging
import select
import socket
import sys
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

import anyio
import anyio.abc

from ._loops import running_asyncio_loop

__all__ = (
    "DEFAULT_MAX_BUFFERED",
    "JOIN_LIMIT",
    "READ_SIZE",
    "AsyncioStream",
    "message_writes",
    "open_tcp_listener",
    "readable_now",
    "running_asyncio_loop",
    "serve_listener",
)

#: The reused read buffer; a copy of at most this size stays on the heap.
READ_SIZE = 64 * 1024
#: The buffer's first size: it grows to ``READ_SIZE`` the first time a read fills
#: it, so an idle keep-alive connection holds 8 KiB for its reads, not 64.
FIRST_READ_SIZE = 8 * 1024
#: Unread bytes queued before the transport stops reading.
DEFAULT_MAX_BUFFERED = 1024 * 1024
#: An HTTP message body up to this size goes out joined to its head, one write; a
#: larger one is written after it, uncopied (the join would copy it whole, and asyncio's
#: transport keeps what the kernel did not take of a memoryview with one copy, of
#: bytes with two). The client and the server both write this way, on any stream.
JOIN_LIMIT = 64 * 1024
_EXPIRED = object()


def message_writes(head: bytes, body: bytes) -> tuple[bytes, bytes]:
    """An HTTP message's two writes: head and body joined, and nothing; or, for a body
    of ``JOIN_LIMIT`` bytes or more, the head, then the body as it is."""
    if len(body) < JOIN_LIMIT:
        return head + body, b""
    return head, body


class AsyncioStream(asyncio.BufferedProtocol, anyio.abc.ByteStream):
    """A connected TCP socket's bytes, both ways (see the module docstring)."""

    def __init__(
        self, loop: asyncio.AbstractEventLoop, *, max_buffered: int = DEFAULT_MAX_BUFFERED
    ) -> None:
        self.transport: asyncio.Transport | None = None
        self._loop = loop
        self._max_buffered = max_buffered
        self._view = memoryview(bytearray(FIRST_READ_SIZE))
        self._chunks: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._reading_paused = False
        self._eof = False
        self._closed = False
        self._lost: BaseException | None = None
        self._waiter: asyncio.Future[Any] | None = None
        self._drained: asyncio.Future[None] | None = None
        #: Set by ``interrupt``: the next receive that would wait raises
        #: ``TimeoutError`` instead (cleared by that receive, or by the owner).
        self.interrupted = False
        #: Called (once, then cleared) when input ends: the peer's FIN or a broken
        #: connection. Lets an owner hear of it while nobody is receiving.
        self.on_end: Callable[[], None] | None = None

    # -- asyncio.BufferedProtocol: called by the loop ----------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._view

    def buffer_updated(self, nbytes: int) -> None:
        view = self._view
        self._chunks.append(bytes(view[:nbytes]))
        if nbytes == len(view) and nbytes < READ_SIZE:
            self._view = memoryview(bytearray(READ_SIZE))
        self._buffered += nbytes
        if self._buffered >= self._max_buffered and not self._reading_paused:
            self._reading_paused = True
            if self.transport is not None:
                self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self._eof = True
        self._wake()
        self._ended()
        return True  # half-close: we may still write (the server's answer, say)

    def connection_lost(self, exc: Exception | None) -> None:
        self._eof = True
        if exc is not None:
            self._lost = exc
        self._wake()
        self.resume_writing()
        self._ended()

    def _ended(self) -> None:
        callback, self.on_end = self.on_end, None
        if callback is not None:
            callback()

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

    # -- reading ------------------------------------------------------------------

    async def receive_chunk(self, timeout: float | None = None) -> bytes:
        """The next bytes received; ``b""`` at end of input.

        Raises:
            TimeoutError: nothing arrived within ``timeout`` seconds, or
                ``interrupt`` ended the wait.
            anyio.BrokenResourceError: the connection broke (reset, say).
            anyio.ClosedResourceError: this side closed the stream.
        """
        while True:
            if self._closed:
                raise anyio.ClosedResourceError
            chunks = self._chunks
            if chunks:
                data = chunks.popleft()
                self._buffered -= len(data)
                if self._reading_paused and self._buffered <= self._max_buffered // 2:
                    self._reading_paused = False
                    transport = self.transport
                    if transport is not None and not transport.is_closing():
                        transport.resume_reading()
                return data
            if self._lost is not None:
                raise anyio.BrokenResourceError from self._lost
            if self._eof:
                return b""
            if self.interrupted:
                self.interrupted = False
                raise TimeoutError
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
            raise TimeoutError

    async def receive(self, max_bytes: int = READ_SIZE) -> bytes:
        data = await self.receive_chunk()
        if not data:
            raise anyio.EndOfStream
        if len(data) > max_bytes:
            self._chunks.appendleft(data[max_bytes:])
            self._buffered += len(data) - max_bytes
            data = data[:max_bytes]
        return data

    def interrupt(self) -> None:
        """End a receive's wait (now, or the next one) with ``TimeoutError``: a
        deadline kept by the owner's timer, the connection left open."""
        self.interrupted = True
        self._wake()

    @property
    def at_end(self) -> bool:
        """Whether input has ended (``on_end`` would not be called again)."""
        return self._eof

    def has_input(self) -> bool:
        """Whether a receive would return at once: bytes delivered, or the end.
        (Bytes still in the kernel are not counted: receiving them waits for
        the loop, which lets other tasks run anyway.)"""
        return bool(self._chunks) or self._eof

    def looks_dead(self) -> bool:
        """True if an idle connection got anything: the peer's FIN (or garbage)."""
        transport = self.transport
        if self._chunks or self._eof or transport is None or transport.is_closing():
            return True
        # What the loop has not delivered yet (it has not run since): a FIN, or bytes,
        # waiting in the kernel. A request that must not be sent twice relies on it.
        return readable_now(transport.get_extra_info("socket"))

    # -- writing ------------------------------------------------------------------

    def write(self, data: bytes | memoryview) -> None:
        """Queue ``data`` for sending (see ``drain``)."""
        transport = self.transport
        if self._closed:
            raise anyio.ClosedResourceError
        if transport is None or transport.is_closing():
            raise anyio.BrokenResourceError from self._lost
        transport.write(data)

    async def drain(self) -> None:
        """Wait while the transport holds more than its high-water mark."""
        drained = self._drained
        if drained is not None:
            await drained
            transport = self.transport
            if transport is None or transport.is_closing():
                raise anyio.BrokenResourceError from self._lost

    async def send(self, item: bytes) -> None:
        if item:
            self.write(item)
        await self.drain()

    async def send_eof(self) -> None:
        transport = self.transport
        if transport is not None and not transport.is_closing() and transport.can_write_eof():
            transport.write_eof()

    # -- closing ------------------------------------------------------------------

    def abort(self) -> None:
        """Close at once, dropping anything not yet sent."""
        self._closed = True
        self._wake()
        if self.transport is not None:
            self.transport.abort()

    async def aclose(self) -> None:
        """Close after what was written has been sent (abort if cancelled meanwhile)."""
        if self._closed:
            return
        self._closed = True
        self._wake()
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        transport.close()
        try:
            await self.drain()
        except anyio.BrokenResourceError:
            pass
        except BaseException:
            transport.abort()
            raise

    @property
    def extra_attributes(self) -> Mapping[Any, Callable[[], Any]]:
        transport = self.transport
        sock: socket.socket | None = None
        if transport is not None:
            sock = transport.get_extra_info("socket")
        if sock is None:
            return {}
        attrs = anyio.abc.SocketAttribute
        return {
            attrs.raw_socket: lambda: sock,
            attrs.family: lambda: sock.family,
            attrs.local_address: sock.getsockname,
            attrs.remote_address: sock.getpeername,
        }


logger = logging.getLogger("mcpwire.http")


async def open_tcp_listener(host: str, port: int) -> anyio.abc.Listener[Any]:
    """``anyio.create_tcp_listener(local_host=host, local_port=port)``, minus the lookup.

    anyio resolves even a literal address with ``getaddrinfo`` in the loop's
    default executor, which starts a worker thread that then idles for the
    process's lifetime (with its stack and a malloc arena of its own). A
    literal IPv4 or IPv6 address, as the default ``127.0.0.1`` is, needs no
    lookup: its socket is made here, with the options anyio would set, and
    wrapped with ``SocketListener.from_socket`` where this anyio has it.
    """
    wrap = getattr(anyio.abc.SocketListener, "from_socket", None)
    try:
        family = socket.AF_INET6 if ipaddress.ip_address(host).version == 6 else socket.AF_INET
    except ValueError:
        wrap = None  # a name: anyio looks it up (and may listen on several addresses)
    if wrap is None:
        return await anyio.create_tcp_listener(local_host=host, local_port=port)
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        if sys.platform != "win32":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((host, port))
        sock.listen(_BACKLOG)
        listener: anyio.abc.Listener[Any] = await wrap(sock)
    except BaseException:
        sock.close()
        raise
    return listener


#: The listen backlog anyio uses (the kernel caps it at somaxconn).
_BACKLOG = 65536
#: Accept errors that concern one connection or a passing shortage, not the listener.
_TRANSIENT_ACCEPT = (ConnectionAbortedError, ConnectionResetError, InterruptedError)
_ACCEPT_BACKOFF = 0.1


async def serve_listener(
    listener: anyio.abc.Listener[Any],
    handler: Callable[[Any], Coroutine[Any, Any, None]],
    task_group: anyio.abc.TaskGroup,
) -> None:
    """``listener.serve(handler, task_group)``, with ``AsyncioStream`` connections on asyncio.

    ``listener`` comes from ``open_tcp_listener``; on asyncio its
    sockets are accepted here, each connection becoming an ``AsyncioStream``
    handed to ``handler`` in ``task_group``; on trio its anyio socket
    listeners are. The accept loops stop when this is cancelled, before the
    caller closes ``listener``. Any other listener is ``listener.serve``.

    An accept that fails for want of something other than the connection
    itself, mostly descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM),
    leaves the connection queued and the listening socket readable: retried
    at once it would spin, and raised it would end the server (as
    ``listener.serve`` does). So the loop waits ``_ACCEPT_BACKOFF`` seconds
    and tries again, logging one warning per spell of failures; connections
    that end meanwhile free what it lacks.
    """
    loop = running_asyncio_loop()
    sockets = _listening_sockets(listener) if loop is not None else None
    members = getattr(listener, "listeners", [listener])
    if not sockets and not all(isinstance(m, anyio.abc.SocketListener) for m in members):
        await listener.serve(handler, task_group=task_group)
        return
    async with anyio.create_task_group() as accepting:
        if loop is not None and sockets:
            for sock in sockets:
                accepting.start_soon(_accept_loop, loop, sock, handler, task_group)
        else:
            for member in members:
                accepting.start_soon(_accept_any, member, handler, task_group)


def _listening_sockets(listener: anyio.abc.Listener[Any]) -> list[socket.socket] | None:
    members = getattr(listener, "listeners", [listener])
    sockets = []
    for member in members:
        if not isinstance(member, anyio.abc.SocketListener):
            return None
        raw = member.extra(anyio.abc.SocketAttribute.raw_socket, None)
        if raw is None or raw.type != socket.SOCK_STREAM:
            return None
        sockets.append(raw)
    return sockets


async def _accept_loop(
    loop: asyncio.AbstractEventLoop,
    sock: socket.socket,
    handler: Callable[[Any], Coroutine[Any, Any, None]],
    task_group: anyio.abc.TaskGroup,
) -> None:
    short = False
    while True:
        try:
            client, _ = await loop.sock_accept(sock)
        except _TRANSIENT_ACCEPT:
            continue
        except OSError as exc:  # out of descriptors or memory: wait, then go on
            short = await _back_off(exc, short)
            continue
        short = _recovered(short)
        try:
            if client.family in (socket.AF_INET, socket.AF_INET6):
                client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            _, stream = await loop.connect_accepted_socket(lambda: AsyncioStream(loop), client)
        except OSError as exc:
            logger.debug("dropping a connection that failed at once: %s", exc)
            client.close()
            continue
        task_group.start_soon(handler, stream)


async def _accept_any(
    listener: anyio.abc.SocketListener,
    handler: Callable[[Any], Coroutine[Any, Any, None]],
    task_group: anyio.abc.TaskGroup,
) -> None:
    """``listener.serve`` that outlives a shortage (on trio, anyio's accept
    raises the ``OSError`` as the cause of a ``BrokenResourceError``)."""
    short = False
    while True:
        try:
            stream = await listener.accept()
        except (OSError, anyio.BrokenResourceError) as exc:
            error = exc.__cause__ if isinstance(exc, anyio.BrokenResourceError) else exc
            if not isinstance(error, OSError):
                raise
            if not isinstance(error, _TRANSIENT_ACCEPT):
                short = await _back_off(error, short)
            continue
        short = _recovered(short)
        task_group.start_soon(handler, stream)


async def _back_off(exc: OSError, short: bool) -> bool:
    """Wait before accepting again; warn at the first failure of a spell."""
    if not short:
        logger.warning(
            "accepting a connection failed (%s): retrying every %g s", exc, _ACCEPT_BACKOFF
        )
    await anyio.sleep(_ACCEPT_BACKOFF)
    return True


def _recovered(short: bool) -> bool:
    if short:
        logger.info("accepting connections again")
    return False


def _expire(waiter: asyncio.Future[Any]) -> None:
    if not waiter.done():
        waiter.set_result(_EXPIRED)


def readable_now(sock: Any) -> bool:
    """Whether an idle socket has anything to read (its peer's FIN, or bytes) this
    instant; a socket that cannot be polled counts as dead, a missing one as not."""
    if sock is None:
        return False
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)
