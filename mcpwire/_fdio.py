"""Async reads and writes on raw file descriptors, for both anyio backends.

Pipes and sockets on POSIX are driven by readiness with the descriptor in
non-blocking mode: no threads and no loop-specific subprocess API. Anything
else (a terminal, a regular file, every descriptor on Windows) falls back to a
worker thread per call, which is slower but works everywhere.

Reading on asyncio registers the descriptor with the loop once and keeps it
registered, collecting what arrives into a bounded queue of chunks; a read
that finds data queued returns it without waiting. ``anyio.wait_readable``
would instead add and remove the registration around every read (two
``epoll_ctl`` calls and a future each time), which measured as the largest
single cost of a stdio round trip. On trio, ``wait_readable`` is the native
primitive and is used directly. When the consumer falls more than
``MAX_BUFFERED`` bytes behind, the registration is dropped until it catches
up, so the queue stays bounded and the pipe applies back-pressure. Writing a
frame the pipe cannot take at once works the same way round (``FDWriter.drain``).
"""

from __future__ import annotations

import asyncio
import collections
import os
import stat
import sys
from collections.abc import Callable

import anyio
import anyio.to_thread

from ._loops import running_asyncio_loop

__all__ = ("FDReader", "FDWriter", "readiness_capable")

#: The most one read returns: a pipe's whole default capacity on Linux.
READ_CHUNK = 64 * 1024
#: The reused read buffer's first size; it grows to ``READ_CHUNK`` the first time a
#: read fills it. A zero-filled buffer is resident whole, and a peer that only ever
#: sends small messages need not cost 64 KiB of memory for them.
FIRST_READ_CHUNK = 8 * 1024
#: Bytes read ahead on asyncio before reading pauses (back-pressure on the pipe).
MAX_BUFFERED = 4 * 1024 * 1024


def readiness_capable(fd: int) -> bool:
    """Whether ``fd`` can be waited on with readiness APIs here."""
    if sys.platform == "win32":
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class _FD:
    __slots__ = ("_closed", "_nonblocking", "_owned", "_restore_blocking", "fd")

    def __init__(self, fd: int, *, owned: bool) -> None:
        self.fd = fd
        self._owned = owned
        self._closed = False
        self._nonblocking = readiness_capable(fd)
        self._restore_blocking = False
        if self._nonblocking and os.get_blocking(fd):
            os.set_blocking(fd, False)
            self._restore_blocking = not owned

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Close (or, for a borrowed descriptor, release) the descriptor. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._nonblocking:
            # Wake any task blocked in wait_readable/wait_writable on this fd.
            try:
                anyio.notify_closing(self.fd)
            except (RuntimeError, ValueError, OSError):
                pass
        if self._restore_blocking:
            try:
                os.set_blocking(self.fd, True)
            except OSError:
                pass
        if self._owned:
            try:
                os.close(self.fd)
            except OSError:
                pass


class FDReader(_FD):
    """Reads chunks from a descriptor; ``b""`` means end of input. One reader task."""

    __slots__ = ("_buffered", "_chunks", "_eof", "_loop", "_view", "_waiter", "sink")

    def __init__(self, fd: int, *, owned: bool) -> None:
        super().__init__(fd, owned=owned)
        self._chunks: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        #: Reads land here first (see ``_read_into``, ``FIRST_READ_CHUNK``).
        self._view = memoryview(bytearray(FIRST_READ_CHUNK))
        self._eof = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiter: asyncio.Future[None] | None = None
        #: Push mode (asyncio only): called from the loop with each chunk read,
        #: ``b""`` at end of input, instead of queueing it for ``read()``. It returns
        #: whether it left work for the consumer: only then is ``wait_pushed`` woken.
        self.sink: Callable[[bytes], bool] | None = None

    @property
    def push_capable(self) -> bool:
        """True when reads can be pushed to ``sink`` (a pipe or socket on asyncio)."""
        return self._nonblocking and running_asyncio_loop() is not None

    async def wait_pushed(self) -> None:
        """Push mode: wait until the sink has left work for the consumer."""
        loop = self._loop or running_asyncio_loop()
        assert loop is not None
        if self._eof or self._closed:
            return
        await self._park(loop)

    async def _park(self, loop: asyncio.AbstractEventLoop) -> None:
        """Wait (watching the descriptor) until the readiness callback runs."""
        if self._loop is None:
            self._watch(loop)
        waiter = loop.create_future()
        self._waiter = waiter
        try:
            await waiter
        finally:
            self._waiter = None

    def pause(self) -> None:
        """Push mode: stop reading until ``resume`` (the consumer is behind)."""
        self._unwatch()

    def resume(self) -> None:
        if self._loop is None and not self._eof and not self._closed:
            loop = running_asyncio_loop()
            if loop is not None:
                self._watch(loop)

    async def read(self, max_bytes: int = READ_CHUNK) -> bytes:
        if self._closed:
            return b""
        if not self._nonblocking:
            return await anyio.to_thread.run_sync(
                _read_blocking, self.fd, max_bytes, abandon_on_cancel=True
            )
        loop = self._loop or running_asyncio_loop()
        if loop is not None:
            return await self._read_asyncio(loop)
        while True:
            try:
                return self._read_now(max_bytes)
            except BlockingIOError:
                pass
            except OSError:
                return b""
            try:
                await anyio.wait_readable(self.fd)
            except (anyio.ClosedResourceError, OSError, ValueError):
                return b""

    async def _read_asyncio(self, loop: asyncio.AbstractEventLoop) -> bytes:
        while True:
            if self._chunks:
                chunk = self._chunks.popleft()
                self._buffered -= len(chunk)
                if self._loop is None and not self._eof and self._buffered < MAX_BUFFERED:
                    self._watch(loop)
                return chunk
            if self._eof or self._closed:
                return b""
            await self._park(loop)

    def _watch(self, loop: asyncio.AbstractEventLoop) -> None:
        loop.add_reader(self.fd, self._on_readable)
        self._loop = loop

    def _unwatch(self) -> None:
        if self._loop is not None:
            try:
                self._loop.remove_reader(self.fd)
            except (OSError, ValueError, RuntimeError):
                pass
            self._loop = None

    def _read_now(self, max_bytes: int = READ_CHUNK) -> bytes:
        """One read into the reused buffer, which grows once a read fills it."""
        view = self._view
        data = _read_into(self.fd, view[:max_bytes])
        if len(data) == len(view) and len(view) < READ_CHUNK:
            self._view = memoryview(bytearray(READ_CHUNK))
        return data

    def _on_readable(self) -> None:
        try:
            data = self._read_now()
        except BlockingIOError:
            return
        except OSError:
            data = b""
        sink = self.sink
        if sink is not None:
            if not data:
                self._eof = True
                self._unwatch()
            if not sink(data) and data:
                # All settled where it was parsed: the consumer sleeps on.
                return
        elif data:
            self._chunks.append(data)
            self._buffered += len(data)
            if self._buffered >= MAX_BUFFERED:
                self._unwatch()
        else:
            self._eof = True
            self._unwatch()
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def close(self) -> None:
        if not self._closed:
            self._unwatch()
            already_ended = self._eof
            self._eof = True
            if self.sink is not None and not already_ended:
                # Push mode: the consumer must see the end too, or it waits forever.
                self.sink(b"")
            waiter = self._waiter
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
        super().close()


def _read_into(fd: int, view: memoryview) -> bytes:
    """Read into a preallocated buffer and copy out what arrived.

    ``os.read(fd, 256 KiB)`` allocates the full size before shrinking it to the
    bytes read; an allocation that large is served by ``mmap`` and given back
    by ``munmap`` (plus an ``mremap``) on every call, about 17 µs measured,
    against about 1 µs for reading a small message into a reused buffer.
    """
    n = os.readv(fd, (view,))
    return bytes(view[:n])


def _read_blocking(fd: int, max_bytes: int) -> bytes:
    try:
        return os.read(fd, max_bytes)
    except OSError:
        return b""


class FDWriter(_FD):
    """Writes whole buffers to a descriptor. Not safe for concurrent writers."""

    __slots__ = ("_done", "_drain_loop", "left")

    def __init__(self, fd: int, *, owned: bool) -> None:
        super().__init__(fd, owned=owned)
        #: What ``drain`` has still to write of its buffer (empty once it is out);
        #: after a cancelled or failed ``drain``, the part the peer never got.
        self.left = memoryview(b"")
        self._done: asyncio.Future[None] | None = None
        self._drain_loop: asyncio.AbstractEventLoop | None = None

    def write_now(self, data: bytes | memoryview) -> memoryview | None:
        """Write what the descriptor takes at once; the unwritten rest, or None if none.

        Never waits. On a blocking descriptor (written by a worker thread) nothing
        is written here and all of ``data`` is the rest. Raises as ``write_all``.
        """
        if self._closed:
            raise anyio.ClosedResourceError
        if not self._nonblocking:
            return memoryview(data)
        written = self._write_some(data)
        if written == len(data):
            return None
        return memoryview(data)[written:]

    @property
    def nonblocking(self) -> bool:
        """Whether writes happen here (readiness); else a worker thread writes each whole."""
        return self._nonblocking

    async def write_all(self, data: bytes | memoryview) -> None:
        """Write every byte; raises ``anyio.BrokenResourceError`` if the reader is gone.

        On a blocking descriptor a worker thread writes it, whole even if the
        caller is cancelled meanwhile.
        """
        if self._closed:
            raise anyio.ClosedResourceError
        if not self._nonblocking:
            await anyio.to_thread.run_sync(_write_blocking, self.fd, memoryview(data))
            return
        await self.drain(memoryview(data))

    async def drain(self, view: memoryview) -> None:
        """Write all of ``view`` to a nonblocking descriptor, waiting for room as needed.

        ``left`` follows the progress, so a caller cancelled part-way knows what the
        peer has not got. On asyncio the descriptor stays registered for the whole
        buffer and the loop's readiness callback writes each time the pipe has
        room, waking the caller once at the end: a large message (a 64 KiB pipe
        takes a 10 MB frame in some 150 writes) costs no task switch and no
        ``epoll_ctl`` a write, as ``anyio.wait_writable`` would (it registers and
        unregisters around every wait). On trio, ``wait_writable`` is native.
        """
        self.left = view
        if self._closed:
            raise anyio.ClosedResourceError
        self.left = view = view[self._write_some(view) :]
        if not view:
            return
        loop = running_asyncio_loop()
        if loop is not None:
            await self._drain_asyncio(loop)
            return
        while view:
            try:
                await anyio.wait_writable(self.fd)
            except (anyio.ClosedResourceError, ValueError, OSError) as exc:
                raise anyio.ClosedResourceError from exc
            self.left = view = view[self._write_some(view) :]

    async def _drain_asyncio(self, loop: asyncio.AbstractEventLoop) -> None:
        done = loop.create_future()
        try:
            loop.add_writer(self.fd, self._on_writable)
        except (ValueError, OSError) as exc:
            raise anyio.ClosedResourceError from exc
        self._done, self._drain_loop = done, loop
        try:
            await done
        finally:
            self._end_drain()

    def _on_writable(self) -> None:
        done = self._done
        if done is None or done.done():
            return
        try:
            self.left = left = self.left[self._write_some(self.left) :]
        except (anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            done.set_exception(exc)
            self._end_drain()
            return
        if not left:
            done.set_result(None)
            self._end_drain()

    def _end_drain(self) -> None:
        loop = self._drain_loop
        if loop is not None:
            self._drain_loop = None
            try:
                loop.remove_writer(self.fd)
            except (OSError, ValueError, RuntimeError):
                pass
        self._done = None

    def close(self) -> None:
        done = self._done
        if not self._closed and done is not None and not done.done():
            done.set_exception(anyio.ClosedResourceError())
        self._end_drain()
        super().close()

    def _write_some(self, data: bytes | memoryview) -> int:
        try:
            return os.write(self.fd, data)
        except BlockingIOError:
            return 0
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise anyio.BrokenResourceError from exc
        except OSError as exc:
            if self._closed:
                raise anyio.ClosedResourceError from exc
            raise anyio.BrokenResourceError from exc


def _write_blocking(fd: int, view: memoryview) -> None:
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise anyio.BrokenResourceError from exc
