"""Async reads and writes on raw file descriptors, for both anyio backends.

Pipes and sockets on POSIX are driven by readiness (``anyio.wait_readable`` /
``wait_writable``) with the descriptor in non-blocking mode: no threads, no
loop-specific subprocess API, and the same code on asyncio and trio. Anything
else (a terminal, a regular file, every descriptor on Windows) falls back to a
worker thread per call, which is slower but works everywhere.
"""

from __future__ import annotations

import os
import stat
import sys

import anyio
import anyio.to_thread

__all__ = ("FDReader", "FDWriter", "readiness_capable")

READ_CHUNK = 256 * 1024


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
    """Reads chunks from a descriptor; ``b""`` means end of input."""

    __slots__ = ()

    async def read(self, max_bytes: int = READ_CHUNK) -> bytes:
        if self._closed:
            return b""
        if not self._nonblocking:
            return await anyio.to_thread.run_sync(
                _read_blocking, self.fd, max_bytes, abandon_on_cancel=True
            )
        while True:
            try:
                return os.read(self.fd, max_bytes)
            except BlockingIOError:
                pass
            except OSError:
                return b""
            try:
                await anyio.wait_readable(self.fd)
            except (anyio.ClosedResourceError, OSError, ValueError):
                return b""


def _read_blocking(fd: int, max_bytes: int) -> bytes:
    try:
        return os.read(fd, max_bytes)
    except OSError:
        return b""


class FDWriter(_FD):
    """Writes whole buffers to a descriptor. Not safe for concurrent writers."""

    __slots__ = ()

    async def write_all(self, data: bytes) -> None:
        """Write every byte; raises ``anyio.BrokenResourceError`` if the reader is gone."""
        if self._closed:
            raise anyio.ClosedResourceError
        view = memoryview(data)
        if not self._nonblocking:
            await anyio.to_thread.run_sync(_write_blocking, self.fd, view)
            return
        while view:
            try:
                written = os.write(self.fd, view)
            except BlockingIOError:
                written = 0
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise anyio.BrokenResourceError from exc
            except OSError as exc:
                if self._closed:
                    raise anyio.ClosedResourceError from exc
                raise anyio.BrokenResourceError from exc
            view = view[written:]
            if view:
                try:
                    await anyio.wait_writable(self.fd)
                except (anyio.ClosedResourceError, ValueError, OSError) as exc:
                    raise anyio.ClosedResourceError from exc


def _write_blocking(fd: int, view: memoryview) -> None:
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise anyio.BrokenResourceError from exc
