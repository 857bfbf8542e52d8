"""Waiting for the answer to one outgoing request: its deadline, wake-up and progress.

Two ways to wait, with one observable behaviour:

* The general way: the send and the wait run in an anyio cancel scope that
  ends them at the request's deadline (a stalled peer that never drains its
  pipe must not hang the send either), and the answer sets an ``anyio.Event``.
  On trio the scope keeps the deadline itself. On asyncio the session's
  ``Sweep`` keeps it and cancels the scope when it passes: a scope with a
  deadline of its own costs a loop timer made and cancelled per request,
  about half of its cost there (3 of 6 µs measured here; an HTTP request goes
  this way).
* The asyncio way, for a transport that can write a message without waiting
  (``start_send``: stdio with room in the pipe, the usual case). Once the
  request is out, only the wait needs a deadline, and a bare future watched
  by the session's ``Sweep`` gives it for a fraction of the cost of a
  deadline scope and an event (their setup and teardown were about a tenth
  of a stdio client's CPU per call). A send that cannot finish at once goes
  the general way.

The sweep keeps one loop timer for all of a session's waiting requests, set
for the earliest deadline it knows. A request whose deadline is later than
the timer's (the usual case: every call of a session has the same timeout)
costs no timer at all; when the timer fires it expires what is due and is
set again for the earliest deadline left. A timer per request cost about a
tenth of a stdio client's CPU per call: making and cancelling it, and the
cancelled handles it leaves in the loop's heap.

Either way an expired deadline leaves ``value`` unset, which the session
turns into ``RequestTimeout``; progress moves the deadline (never past the
hard cap); closing the session settles every waiter with its error.

An answer no caller waits for is ignored (the protocol never answers a
response) but not silently: ``log_stray`` logs it at WARNING on the
``mcpwire`` logger, naming its id, or for an error with no id (the peer could
not read something we sent) its code and message; answers to requests given
up on are expected, and logged at DEBUG only. A session logs at most
``MAX_STRAY_WARNINGS`` of them at WARNING, the rest at DEBUG, so a peer that
floods them cannot flood the log; ``RPCState.counters`` counts them all.

Time the transport spends authorizing a request (an OAuth flow, which may
wait for a person in a browser) is not the request's: the general way marks
the send as this task's (``_SENDING``), and ``deadline_held()``, entered by
the transport around such a flow, stops the deadline and then moves it, and
the hard cap, on by as long as the flow took. A deadline over a whole piece of
work that holds requests (the command line's ``--timeout``), registered with
``work_deadline()``, stands still and moves on with it.
"""

from __future__ import annotations

import contextvars
import logging
import math
from collections.abc import Awaitable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import anyio

from ._errors import (
    ConnectionClosed,
    JSONRPCError,
    RemoteProtocolError,
    RequestTimeout,
    TransportError,
)
from .sansio._json import JSONObject
from .sansio._messages import ErrorResponse, Response, TransportErrorObject
from .sansio._rpc import Counters

if TYPE_CHECKING:
    import asyncio

    from ._session import ProgressCallback
    from ._transport import Transport

__all__ = (
    "MAX_STRAY_WARNINGS",
    "Pending",
    "Sweep",
    "deadline_held",
    "log_stray",
    "timed_out",
    "work_deadline",
)

logger = logging.getLogger("mcpwire")

#: Answers to no request of ours a session logs at WARNING (the rest at DEBUG).
MAX_STRAY_WARNINGS = 20

#: The request whose send this task is running (the general way only).
_SENDING: contextvars.ContextVar[Pending | None] = contextvars.ContextVar(
    "mcpwire_sending", default=None
)


#: The deadline over the work this task's requests belong to (``work_deadline``).
_WORK: contextvars.ContextVar[anyio.CancelScope | None] = contextvars.ContextVar(
    "mcpwire_work_deadline", default=None
)


def _release(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class Pending:
    """One request in flight: what answered it, and how its caller is woken."""

    __slots__ = (
        "_event",
        "_future",
        "_sweep",
        "due",
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
        self._sweep: Sweep | None = None
        self._future: asyncio.Future[None] | None = None
        #: The deadline ``Sweep`` keeps (asyncio, either way), on the loop's clock.
        self.due = math.inf

    def result(self) -> JSONObject:
        """The settled answer's result; else raises (a fresh copy of) what it stands for."""
        value = self.value
        if type(value) is Response:
            return value.result
        if type(value) is ErrorResponse:
            err = value.error
            if isinstance(err, TransportErrorObject):  # made up here, not the peer's
                raise TransportError(err.code, err.message, err.data, status=err.status)
            raise JSONRPCError(err.code, err.message, err.data)
        if isinstance(value, ConnectionClosed):
            raise value.again()
        raise RemoteProtocolError(str(value))

    def settle(
        self, value: Response | ErrorResponse | ConnectionClosed | RemoteProtocolError
    ) -> None:
        """Record the outcome and wake the caller."""
        self.value = value
        future = self._future
        if future is not None:
            if not future.done():  # _release, inline
                future.set_result(None)
        elif self._event is not None:
            self._event.set()

    async def send_and_wait(
        self, sending: Awaitable[None], deadline: float, sweep: Sweep | None
    ) -> None:
        """The general way: finish ``sending``, then wait, all before ``deadline``,
        which ``sweep`` keeps if given (asyncio), else the scope itself."""
        if sweep is None:
            scope = anyio.CancelScope(deadline=deadline)
        else:
            scope = anyio.CancelScope()
            self._sweep = sweep
            sweep.watch(self, deadline)
        with scope:
            self.scope = scope
            token = _SENDING.set(self)
            try:
                await sending
            finally:
                _SENDING.reset(token)
            if self.value is None:
                event = self._event = anyio.Event()
                await event.wait()

    def wait_timed(self, sweep: Sweep, deadline: float) -> asyncio.Future[None] | None:
        """The asyncio way, the request being out: what to await until it is answered
        or ``deadline`` passes (``None``: answered already).

        A plain function, not a coroutine: the caller awaits the future itself, one
        frame less on every request. ``deadline`` is on ``anyio.current_time()``'s
        clock, which on asyncio is the loop's. Cancelling the caller cancels the
        future as usual. The caller keeps this request in the dict ``sweep``
        watches while it waits.
        """
        if self.value is not None:
            return None
        future = self._future = sweep.loop.create_future()
        self._sweep = sweep
        sweep.watch(self, deadline)
        return future

    def extend(self) -> None:
        """Progress arrived: the deadline is ``timeout`` from now, within the hard cap."""
        if not self.expired():
            self.move(min(anyio.current_time() + self.timeout, self.hard_deadline))

    def deadline(self) -> float:
        """When the wait ends unanswered (``inf``: not waiting, or held)."""
        if self._sweep is not None:
            return self.due
        return self.scope.deadline if self.scope is not None else math.inf

    def move(self, deadline: float) -> None:
        """Set the deadline (later or earlier) of a request being waited for."""
        if self._sweep is not None:
            self._sweep.watch(self, deadline)
        elif self.scope is not None:
            self.scope.deadline = deadline

    def expired(self) -> bool:
        """Whether the wait has ended: answered, or its deadline passed."""
        if self._future is not None:
            return self._future.done()
        return self.scope is not None and self.scope.cancel_called

    def expire(self) -> None:
        """End the wait unanswered: its deadline has passed (``Sweep``)."""
        if self._future is not None:
            _release(self._future)
        elif self.scope is not None:
            self.scope.cancel()

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


class Sweep:
    """One loop timer for the deadlines of a session's requests waiting the asyncio
    way (see the module docstring). ``waiting`` is the session's own dict of
    requests in flight: a request leaves the sweep when it leaves that dict."""

    __slots__ = ("_at", "_handle", "_waiting", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop, waiting: Mapping[Any, Pending]) -> None:
        self.loop = loop
        self._waiting = waiting
        self._handle: asyncio.TimerHandle | None = None
        self._at = math.inf  # when the timer fires; inf: no timer

    def watch(self, pending: Pending, deadline: float) -> None:
        """``pending`` expires at ``deadline`` (later or earlier than before)."""
        pending.due = deadline
        if deadline < self._at:
            if self._handle is not None:
                self._handle.cancel()
            self._handle = self.loop.call_at(deadline, self._fire)
            self._at = deadline

    def close(self) -> None:
        """Drop the timer (the session has ended; its waiters are settled)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        self._at = math.inf

    def _fire(self) -> None:
        # The loop runs a timer once its time is reached (by its clock's
        # resolution, so the clock may still read a hair earlier): whatever is
        # due by then, or by now, has expired in one pass, and whatever is due
        # later sets the timer again.
        fired = max(self._at, self.loop.time())
        self._handle = None
        self._at = math.inf
        later = math.inf
        for pending in list(self._waiting.values()):
            if pending._sweep is not self or pending.expired():
                continue
            if pending.due <= fired:
                pending.expire()
            elif pending.due < later:
                later = pending.due
        if later != math.inf:
            self._handle = self.loop.call_at(later, self._fire)
            self._at = later


@contextmanager
def deadline_held() -> Iterator[None]:
    """Inside, the deadline of the request this task is sending stands still, and
    so does the work's (``work_deadline``); after, each (and the request's hard cap)
    moves on by the time spent (see the module docstring). Outside a request's send
    and a work deadline it does nothing."""
    pending = _SENDING.get()
    work = _WORK.get()
    began = anyio.current_time()
    saved = pending.deadline() if pending is not None else math.inf
    saved_work = work.deadline if work is not None else math.inf
    if pending is not None:
        pending.move(math.inf)
    if work is not None:
        work.deadline = math.inf
    try:
        yield
    finally:
        spent = anyio.current_time() - began
        if pending is not None:
            pending.hard_deadline += spent
            pending.move(min(saved + spent, pending.hard_deadline))
        if work is not None:
            work.deadline = saved_work + spent


@contextmanager
def work_deadline(scope: anyio.CancelScope) -> Iterator[None]:
    """Inside, ``scope``'s deadline bounds a piece of work made of requests, and
    ``deadline_held`` holds it too: time a person spends authorizing is not the
    work's, as it is not a request's."""
    token = _WORK.set(scope)
    try:
        yield
    finally:
        _WORK.reset(token)


def log_stray(message: Response | ErrorResponse, late: bool, counters: Counters) -> None:
    """Log an answer no caller waits for (see the module docstring); ``late``: it
    answers a request given up on. ``counters`` has counted it already."""
    if late:
        logger.debug("an answer to request %r came after it was given up on", message.id)
        return
    level = logging.WARNING if counters.unknown_responses <= MAX_STRAY_WARNINGS else logging.DEBUG
    if message.id is None:
        err = message.error  # an id-less answer is an ErrorResponse (a Response has one)
        logger.log(
            level,
            "the peer sent an error response with id null (it could not read or "
            "identify a message of ours): [%d] %s",
            err.code,
            err.message,
        )
    else:
        logger.log(
            level, "ignored a response to request id %r, which is not one in flight", message.id
        )


def timed_out(transport: Transport, method: str, seconds: float) -> RequestTimeout:
    """The error for a request unanswered after ``seconds``, with what the transport
    knows of why: a stdio line over the size limit still being dropped
    (``discarding``) may hold the answer."""
    discarding = getattr(transport, "discarding", None)
    return RequestTimeout(method, seconds, discarding() if discarding is not None else None)
