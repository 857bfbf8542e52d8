"""Waiting for the answer to one outgoing request: its deadline, wake-up and progress.

Two ways to wait, with one observable behaviour:

* The general way: the send and the wait run in an anyio cancel scope whose
  deadline is the request's (a stalled peer that never drains its pipe must
  not hang the send either), and the answer sets an ``anyio.Event``.
* The asyncio way, for a transport that can write a message without waiting
  (``start_send``: stdio with room in the pipe, the usual case). Once the
  request is out, only the wait needs a deadline, and a loop timer with a
  bare future gives it for a fraction of the cost of a deadline scope and an
  event (their setup and teardown were about a tenth of a stdio client's CPU
  per call). A send that cannot finish at once goes the general way.

Either way an expired deadline leaves ``value`` unset, which the session
turns into ``RequestTimeout``; progress moves the deadline (never past the
hard cap); closing the session settles every waiter with its error.

Time the transport spends authorizing a request (an OAuth flow, which may
wait for a person in a browser) is not the request's: the general way marks
the send as this task's (``_SENDING``), and ``deadline_held()``, entered by
the transport around such a flow, stops the deadline and then moves it, and
the hard cap, on by as long as the flow took.
"""

from __future__ import annotations

import contextvars
import logging
import math
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import anyio

from ._errors import ConnectionClosed, JSONRPCError, RemoteProtocolError
from .sansio._json import JSONObject
from .sansio._messages import ErrorResponse, Response

if TYPE_CHECKING:
    import asyncio

    from ._session import ProgressCallback

__all__ = ("Pending", "deadline_held")

logger = logging.getLogger("mcpwire")

#: The request whose send this task is running (the general way only).
_SENDING: contextvars.ContextVar[Pending | None] = contextvars.ContextVar(
    "mcpwire_sending", default=None
)


def _release(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class Pending:
    """One request in flight: what answered it, and how its caller is woken."""

    __slots__ = (
        "_event",
        "_future",
        "_loop",
        "_timer",
        "hard_deadline",
        "on_progress",
        "scope",
        "timeout",
        "value",
    )

    def __init__(self, on_progress: ProgressCallback | None, timeout: float) -> None:
        self.value: Response | ErrorResponse | ConnectionClosed | RemoteProtocolError | None = None
        self.on_progress = on_progress
        self.timeout = timeout
        self.hard_deadline = math.inf
        #: The general way's deadline scope.
        self.scope: anyio.CancelScope | None = None
        #: Made only if the caller must wait (a direct transport answers during send).
        self._event: anyio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._future: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    def result(self) -> JSONObject:
        """The settled answer's result; else raises (a fresh copy of) what it stands for."""
        value = self.value
        if type(value) is Response:
            return value.result
        if type(value) is ErrorResponse:
            err = value.error
            raise JSONRPCError(err.code, err.message, err.data)
        if isinstance(value, ConnectionClosed):
            raise value.again()
        raise RemoteProtocolError(str(value))

    def settle(
        self, value: Response | ErrorResponse | ConnectionClosed | RemoteProtocolError
    ) -> None:
        """Record the outcome and wake the caller."""
        self.value = value
        if self._future is not None:
            _release(self._future)
        elif self._event is not None:
            self._event.set()

    async def send_and_wait(self, sending: Awaitable[None], deadline: float) -> None:
        """The general way: finish ``sending``, then wait, all before ``deadline``."""
        with anyio.CancelScope(deadline=deadline) as scope:
            self.scope = scope
            token = _SENDING.set(self)
            try:
                await sending
            finally:
                _SENDING.reset(token)
            if self.value is None:
                event = self._event = anyio.Event()
                await event.wait()

    async def wait_timed(self, loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        """The asyncio way, the request being out: wait until answered or ``deadline``.

        ``deadline`` is on ``anyio.current_time()``'s clock, which on asyncio is
        the loop's. Cancelling the caller cancels the awaited future as usual.
        """
        if self.value is not None:
            return
        future = self._future = loop.create_future()
        self._loop = loop
        self._timer = loop.call_at(deadline, _release, future)
        try:
            await future
        finally:
            self._timer.cancel()

    def extend(self) -> None:
        """Progress arrived: the deadline is ``timeout`` from now, within the hard cap."""
        deadline = min(anyio.current_time() + self.timeout, self.hard_deadline)
        if self.scope is not None:
            self.scope.deadline = deadline
        elif self._timer is not None and self._future is not None and not self._future.done():
            assert self._loop is not None
            self._timer.cancel()
            self._timer = self._loop.call_at(deadline, _release, self._future)

    async def progress(self, params: JSONObject) -> None:
        """A ``notifications/progress`` for this request: ``extend`` and tell ``on_progress``."""
        self.extend()
        if self.on_progress is None:
            return
        progress = params.get("progress")
        total = params.get("total")
        message = params.get("message")
        try:
            await self.on_progress(
                float(progress) if isinstance(progress, (int, float)) else 0.0,
                float(total) if isinstance(total, (int, float)) else None,
                message if isinstance(message, str) else None,
            )
        except Exception:
            logger.exception("progress callback failed")


@contextmanager
def deadline_held() -> Iterator[None]:
    """Inside, the deadline of the request this task is sending stands still; after,
    it and the hard cap move on by the time spent (see the module docstring).
    Outside a request's send it does nothing."""
    pending = _SENDING.get()
    scope = pending.scope if pending is not None else None
    if pending is None or scope is None:
        yield
        return
    began = anyio.current_time()
    saved = scope.deadline
    scope.deadline = math.inf
    try:
        yield
    finally:
        spent = anyio.current_time() - began
        pending.hard_deadline += spent
        scope.deadline = min(saved + spent, pending.hard_deadline)
