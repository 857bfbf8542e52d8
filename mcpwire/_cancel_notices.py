"""Telling the peer about requests given up on, off the caller's path.

A request that times out, or whose caller is cancelled, is abandoned, and the
cancellation clause asks for a ``notifications/cancelled``. The caller must not
wait for that notice to be written: when the peer does not read its input, the
pipe is full and the notice waits behind the frame being written (the stdio
``_Sender`` writes frames whole, never one inside another), and an HTTP peer
may be slow to accept the POST; the caller's ``RequestTimeout`` would come late
by as long as that wait. So ``CancelNotices.post`` queues the notice and returns
at once, and one task of the session's writes the queue out, in order, each
notice whole, as soon as the writer can proceed.

Bounds: at most ``MAX_QUEUED`` notices wait; past that the oldest is dropped,
counted (``dropped``) and logged (a peer that has taken none of that many is
not reading). When the session closes, ``flush`` gives the queue up to its
bound in seconds to go out before the transport is closed.
"""

from __future__ import annotations

import collections
import logging
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from ._errors import MCPWireError
from .sansio._messages import Notification

if TYPE_CHECKING:
    from ._transport import Transport

__all__ = ("MAX_QUEUED", "CancelNotices")

logger = logging.getLogger("mcpwire")

#: Cancellation notices that may wait for the peer to take them.
MAX_QUEUED = 1024


class CancelNotices:
    """The session's queue of ``notifications/cancelled`` (see the module docstring)."""

    __slots__ = ("_draining", "_idle", "_queue", "_transport", "dropped")

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self._queue: collections.deque[Notification] = collections.deque()
        self._draining = False
        self._idle: anyio.Event | None = None
        #: Notices dropped because ``MAX_QUEUED`` were already waiting.
        self.dropped = 0

    @property
    def waiting(self) -> int:
        """Notices queued and not yet handed to the transport."""
        return len(self._queue)

    def post(self, notice: Notification, tg: anyio.abc.TaskGroup) -> None:
        """Queue ``notice``; a task of ``tg`` writes it when the writer can proceed."""
        if len(self._queue) >= MAX_QUEUED:
            self._queue.popleft()
            self.dropped += 1
            logger.warning(
                "%d cancellation notices are waiting for the peer to read its input: "
                "the oldest is dropped",
                MAX_QUEUED,
            )
        self._queue.append(notice)
        if not self._draining:
            self._draining = True
            tg.start_soon(self._drain)

    async def _drain(self) -> None:
        try:
            while self._queue:
                notice = self._queue.popleft()
                try:
                    await self._transport.send(notice)
                except (
                    MCPWireError,
                    anyio.BrokenResourceError,
                    anyio.ClosedResourceError,
                    OSError,
                ):
                    pass  # the connection is going: the reader reports why
        finally:
            self._draining = False
            if self._idle is not None:
                self._idle.set()
                self._idle = None

    async def flush(self, seconds: float) -> None:
        """Wait up to ``seconds`` for the queued notices to be written."""
        if not self._draining:
            return
        if self._idle is None:
            self._idle = anyio.Event()
        with anyio.move_on_after(seconds):
            await self._idle.wait()
