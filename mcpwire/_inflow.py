"""Flow control on what a peer sends a session: nothing it does grows our memory without end.

A JSON-RPC peer can send requests faster than we serve them, or stop reading
what we answer; neither protocol has flow control of its own, so the session
applies back-pressure the one way a byte stream allows: it stops reading, the
transport's buffers fill, and the peer's writes block until it catches up.

* **Handlers.** At most ``MAX_HANDLERS`` requests are served at once in tasks
  of their own. Requests past that are parked, in order, and started as
  running ones finish; when ``MAX_PARKED`` wait, the reader stops until one
  starts. Responses and notifications are read all the while, so a handler
  waiting on the peer's answer to a request of ours (sampling, elicitation)
  still gets it. Requests served in the reader itself (``serve_inline``)
  never wait, and are not counted.
* **Output.** A transport with ``congested``/``wait_uncongested`` (stdio)
  reports when more of our frames wait to be written than the peer has taken
  (``_stdio.MAX_UNSENT_BYTES`` / ``MAX_UNSENT_FRAMES``). Then a message that
  would add an answer (a request, an invalid message, a batch) waits before it
  is dispatched, and the reader with it.
"""

from __future__ import annotations

import collections
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio

from .sansio._messages import Batch, Invalid, Request

if TYPE_CHECKING:
    from ._replies import Gathered
    from ._transport import Transport

#: A parked request, and the batch it came in (None: it came alone).
Parked = tuple[Request, "Gathered | None"]

__all__ = ("MAX_HANDLERS", "MAX_PARKED", "Inflow")

#: Requests served at once in handler tasks of their own.
MAX_HANDLERS = 256
#: Requests waiting for a handler before the reader stops reading.
MAX_PARKED = 256


class Inflow:
    """The session reader's bookkeeping for the two bounds above."""

    __slots__ = ("_congested", "_room", "_uncongested", "handlers", "parked")

    def __init__(self, transport: Transport) -> None:
        self.handlers = 0
        self.parked: collections.deque[Parked] = collections.deque()
        self._room: anyio.Event | None = None
        self._congested: Callable[[], bool] | None = getattr(transport, "congested", None)
        self._uncongested: Callable[[], Awaitable[None]] | None = getattr(
            transport, "wait_uncongested", None
        )

    def congested(self) -> bool:
        """The peer is not taking our output (a transport that can tell)."""
        return self._congested is not None and self._congested()

    async def hold(self, item: object) -> None:
        """Before dispatch while ``congested``: wait if ``item`` would add an answer."""
        cls = type(item)
        if (cls is Request or cls is Invalid or cls is Batch) and self._uncongested is not None:
            await self._uncongested()

    def free(self) -> bool:
        """Whether a request would be admitted now."""
        return self.handlers < MAX_HANDLERS and not self.parked

    def admit(self, request: Request) -> bool:
        """True if ``request`` may start a handler now (counted); else it must ``park``."""
        if not self.free():
            return False
        self.handlers += 1
        return True

    async def park(self, request: Request, batch: Gathered | None = None) -> None:
        """Queue ``request`` for the next free handler; wait while the queue is full."""
        self.parked.append((request, batch))
        while len(self.parked) >= MAX_PARKED:
            if self._room is None:
                self._room = anyio.Event()
            await self._room.wait()

    def finished(self) -> Parked | tuple[None, None]:
        """A handler ended: the parked request that takes its place (counted), if any."""
        if not self.parked:
            self.handlers -= 1
            return None, None
        request = self.parked.popleft()
        room = self._room
        if room is not None and len(self.parked) < MAX_PARKED:
            self._room = None
            room.set()
        return request
