"""The stdio transport's framing, shared by both sides, and its server side.

``_Framed`` turns bytes read from a descriptor into parsed messages and
``_Sender`` writes whole frames in order; the client side that runs a server
as a child process (``_stdio_client``) uses both. A stdio server imports only
this module, not the process machinery.

Server side (``StdioServerTransport``)
--------------------------------------
While serving, the real stdout descriptor is kept privately for frames and fd 1
(and ``sys.stdout``) point at stderr, so a stray ``print`` in a tool or a
library cannot corrupt the stream; stdin is likewise taken over and fd 0 points
at the null device. Both are restored by ``aclose()``.
"""

from __future__ import annotations

import collections
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio

from ._errors import ConnectionClosed
from ._fdio import FDReader, FDWriter
from .sansio import _messages as m
from .sansio._codec import DEFAULT_LIMITS, Limits
from .sansio._messages import RequestId
from .sansio._ndjson import LineTooLong, NDJSONReader, NonJSONLine

if TYPE_CHECKING:
    from ._transport import Outbound

__all__ = ("StdioServerTransport",)

logger = logging.getLogger("mcpwire")

#: Parsed messages queued for the session before reading pauses, and the bytes
#: their lines held: reading also pauses past ``_READY_BYTES`` (one message of
#: any allowed size always gets in), so a session that stops taking messages
#: holds a few MiB of them, not 256 messages of up to ``Limits.max_size`` each.
_READY_LIMIT = 256
_READY_BYTES = 4 * 1024 * 1024
#: Frames the peer has not yet taken (written in part, or waiting their turn)
#: past which the session stops taking new messages that would add more: bytes
#: and frames. A peer that writes without reading its input would otherwise make
#: us answer into memory without end; this way our reading stops, the pipe
#: fills, and its writes block until it reads.
MAX_UNSENT_BYTES = 4 * 1024 * 1024
MAX_UNSENT_FRAMES = 1024
#: Non-protocol stdout lines kept for diagnostics.
_NON_JSON_KEEP = 20


class _Framed:
    """Shared receive side: bytes -> ndjson lines -> parsed items.

    On asyncio the reader pushes each chunk here from the loop's readiness
    callback, and items the session can settle synchronously (a response to
    one of its requests) are settled right there through ``fast_path``: the
    waiting caller wakes without a round through the reader task. Everything
    else queues for ``receive()``; when more than ``_READY_LIMIT`` items (or
    ``_READY_BYTES`` of their lines) wait,
    reading pauses (bounded memory, back-pressure on the pipe).

    A line over the size limit is dropped as it arrives (``NDJSONReader``): a
    WARNING says so once, as soon as it passes the limit, and while its end has
    not come ``discarding()`` says so to a call that times out meanwhile (its
    answer may be in that line). What the line's first bytes show is acted on
    at once (``sansio.oversized``): the call it answers fails then, not at its end.
    """

    def __init__(self, reader: FDReader, limits: Limits, *, tolerant: bool) -> None:
        self._reader = reader
        self._limits = limits
        self._lines = NDJSONReader(max_line=limits.max_size, tolerant=tolerant)
        self._ready: collections.deque[m.Incoming] = collections.deque()
        #: The line size of each item in ``_ready``, and their sum.
        self._sizes: collections.deque[int] = collections.deque()
        self._ready_bytes = 0
        self._eof = False
        self._push: bool | None = None
        #: Settles an item synchronously and returns True, or returns False.
        self.fast_path: Callable[[m.Incoming], bool] | None = None
        self.non_json: collections.deque[bytes] = collections.deque(maxlen=_NON_JSON_KEEP)
        self.non_json_count = 0

    async def receive(self) -> m.Incoming:
        ready = self._ready
        if self._push is None:
            self._push = self._reader.push_capable
            if self._push:
                self._reader.sink = self._on_data
        while not ready:
            if self._eof:
                raise anyio.EndOfStream
            if self._push:
                self._reader.resume()
                await self._reader.wait_pushed()
            else:
                self._on_data(await self._reader.read())
        self._ready_bytes -= self._sizes.popleft()
        return ready.popleft()

    def _on_data(self, data: bytes) -> bool:
        """Frame and parse ``data``; True if it left items (or the end) for ``receive``."""
        lines = self._lines
        caught = lines.oversized_lines
        if data:
            items = lines.feed(data)
        else:
            self._eof = True
            items = lines.feed_eof()
        if lines.oversized_lines != caught:
            logger.warning(
                "discarding a line over the message size limit of %d bytes from the peer "
                "(%d bytes so far)",
                lines.max_line,
                lines.discarded,
            )
        ready = self._ready
        fast = self.fast_path
        limits = self._limits
        for item in items:
            parsed: m.Incoming
            if type(item) is bytes:
                parsed = m.parse(item, limits)
            elif type(item) is LineTooLong:
                # Rare, so loaded on first use (a smaller idle server).
                from .sansio._oversized import oversized

                parsed = oversized(item.head, item.limit, item.tail)
            else:
                assert type(item) is NonJSONLine
                self.non_json_count += 1
                self.non_json.append(item.line[:500])
                continue
            # Settled at once only when nothing waits ahead of it, so messages are
            # still seen in order (progress before the response it precedes).
            if ready or fast is None or not fast(parsed):
                ready.append(parsed)
                size = len(item) if type(item) is bytes else 0
                self._sizes.append(size)
                self._ready_bytes += size
        if self._push and (len(ready) > _READY_LIMIT or self._ready_bytes > _READY_BYTES):
            self._reader.pause()
        return bool(ready) or self._eof

    def discarding(self) -> str | None:
        """What is being dropped while a line over the size limit has not ended."""
        lines = self._lines
        if not lines.discarding:
            return None
        return (
            f"a line over the message size limit of {lines.max_line} bytes was being "
            f"discarded ({lines.discarded} bytes so far, its end not yet read)"
        )


class _Sender:
    """Frames and writes messages; one frame at a time, whole, in order."""

    def __init__(self, writer: FDWriter) -> None:
        self.writer = writer
        # A semaphore, not a lock: the rest of a partial write may be finished by
        # whichever task awaits it, not only the one that started the frame.
        self._lock = anyio.Semaphore(1)
        #: Frames not yet fully written, and their bytes (see ``MAX_UNSENT_BYTES``).
        self.unsent_frames = 0
        self.unsent_bytes = 0
        self._drained: anyio.Event | None = None
        #: The rest of a frame whose writer was cancelled part-way, and its size.
        self._owed: memoryview | None = None
        self._owed_size = 0

    def start_send(self, message: Outbound) -> Awaitable[None] | None:
        """Write ``message`` now if the pipe takes it whole (None); else what finishes it.

        Frames never interleave: while a send is unfinished (the lock taken), a
        message waits its turn whole; a partial write takes the lock for its rest.
        The uncontended case, a pipe with room, has no scheduling point at all.
        The frame counts as unsent from here until the awaitable finishes.
        """
        data = m.serialize_line(message)
        # Any frame still counted unsent holds the lock, waits for it or is owed
        # in part (``_write``): then this one queues behind it. The count is an
        # attribute; the semaphore's ``value`` is a property call on every frame.
        if self.unsent_frames:
            self._count(len(data))
            return self._send_data(data)
        rest = self.writer.write_now(data)
        if rest is None:
            return None
        self._lock.acquire_nowait()  # free: nothing ran since the check above
        self._count(len(data))
        return self._finish(rest, len(data))

    async def send(self, message: Outbound) -> None:
        rest = self.start_send(message)
        if rest is not None:
            await rest

    def congested(self) -> bool:
        """Whether more is unsent than ``MAX_UNSENT_BYTES`` or ``MAX_UNSENT_FRAMES``."""
        return self.unsent_frames > MAX_UNSENT_FRAMES or self.unsent_bytes > MAX_UNSENT_BYTES

    async def wait_uncongested(self) -> None:
        while self.congested():
            if self._drained is None:
                self._drained = anyio.Event()
            await self._drained.wait()

    def _count(self, size: int) -> None:
        self.unsent_frames += 1
        self.unsent_bytes += size

    def _sent(self, size: int) -> None:
        self.unsent_frames -= 1
        self.unsent_bytes -= size
        drained = self._drained
        if drained is not None and not self.congested():
            self._drained = None
            drained.set()

    async def _send_data(self, data: bytes) -> None:
        size = len(data)
        started = False
        try:
            async with self._lock:
                await self._pay()
                started = True
                await self._write(memoryview(data), size, begun=False)
        finally:
            if not started:
                self._sent(size)  # never begun: dropped whole, nothing owed

    async def _finish(self, rest: memoryview, size: int) -> None:
        try:
            await self._write(rest, size, begun=True)
        finally:
            self._lock.release()

    async def _pay(self) -> None:
        """Write first what a cancelled writer left of its frame (the lock held)."""
        if self._owed is not None:
            view, size = self._owed, self._owed_size
            self._owed = None
            await self._write(view, size, begun=True)

    async def _write(self, view: memoryview, size: int, *, begun: bool) -> None:
        """Write ``view``, the rest of a frame of ``size`` bytes (``begun``: some of it
        is out already), with the lock held.

        A writer cancelled part-way through a frame cannot take back what the peer
        has read: the rest stays owed (``_owed``) and the next writer, whoever it is,
        writes it before its own frame, so the peer still reads whole lines (a
        frame not begun is simply dropped). Each frame leaves the unsent count once,
        when it is out whole, dropped, or the pipe is gone.
        """
        writer = self.writer
        try:
            if not writer.nonblocking:
                await writer.write_all(view)  # a worker thread finishes it, cancelled or not
            else:
                try:
                    await writer.drain(view)
                finally:
                    begun = begun or len(writer.left) < len(view)
                    view = writer.left
            begun = False
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            begun = False  # the pipe is gone: nothing can be owed
            raise
        finally:
            if begun:
                self._owed, self._owed_size = view, size
            else:
                self._sent(size)


class _Ends:
    """What both stdio transports do with their two ends: frames out, messages in."""

    _framed: _Framed
    _sender: _Sender

    async def send(self, message: Outbound, *, related: RequestId | None = None) -> None:
        await self._sender.send(message)

    def start_send(
        self, message: Outbound, *, related: RequestId | None = None
    ) -> Awaitable[None] | None:
        """``send`` without waiting when the pipe has room: None, or what finishes it."""
        return self._sender.start_send(message)

    def set_fast_path(self, fast: Callable[[m.Incoming], bool]) -> None:
        self._framed.fast_path = fast

    def congested(self) -> bool:
        """More is waiting to be written than the peer has taken (see ``MAX_UNSENT_BYTES``):
        the session takes no new message that would add to it until ``wait_uncongested``."""
        return self._sender.congested()

    async def wait_uncongested(self) -> None:
        await self._sender.wait_uncongested()

    async def receive(self) -> m.Incoming:
        return await self._framed.receive()

    def discarding(self) -> str | None:
        """Why nothing can arrive for now, if a line over the size limit is being dropped."""
        return self._framed.discarding()


class StdioServerTransport(_Ends):
    """Serves MCP on this process's own stdin/stdout (see the module docstring).

    Args:
        limits: message size and depth limits.
        protect_stdout: point fd 1 and ``sys.stdout`` at stderr while serving.
    """

    def __init__(
        self,
        *,
        limits: Limits = DEFAULT_LIMITS,
        protect_stdout: bool = True,
        stdin_fd: int = 0,
        stdout_fd: int = 1,
    ) -> None:
        self._saved: list[tuple[int, int]] = []
        self._saved_sys_stdout = sys.stdout
        self._protect = protect_stdout and stdout_fd == 1
        for stream in (sys.stdout,):
            try:
                stream.flush()
            except (OSError, ValueError, AttributeError):
                pass
        in_fd = os.dup(stdin_fd)
        out_fd = os.dup(stdout_fd)
        if self._protect:
            self._saved.append((os.dup(1), 1))
            self._saved.append((os.dup(0), 0))
            os.dup2(2, 1)
            devnull = os.open(os.devnull, os.O_RDONLY)
            os.dup2(devnull, 0)
            os.close(devnull)
            sys.stdout = sys.stderr
        self._framed = _Framed(FDReader(in_fd, owned=True), limits, tolerant=False)
        self._sender = _Sender(FDWriter(out_fd, owned=True))
        self._closed = False
        self._closed_locally = False

    def close_error(self) -> ConnectionClosed:
        if self._closed_locally:
            return ConnectionClosed("stdio server transport closed")
        return ConnectionClosed("the client closed stdin")

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._closed_locally = True
        self._framed._reader.close()
        self._sender.writer.close()
        for saved, target in self._saved:
            try:
                os.dup2(saved, target)
            finally:
                os.close(saved)
        self._saved.clear()
        if self._protect:
            sys.stdout = self._saved_sys_stdout
