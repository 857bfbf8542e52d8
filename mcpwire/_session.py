"""One JSON-RPC connection driven by anyio: the session layer.

Theory of operation
-------------------
A ``Session`` owns one transport and one task group. A single reader task
takes ``Incoming`` items from the transport and dispatches them:

* requests start a handler task each (so a slow tool never blocks a ping),
  at most ``MAX_HANDLERS`` at once (``_inflow``: how a peer that floods us,
  or does not read what we answer, is held back without losing anything),
  inside its own cancel scope so that ``notifications/cancelled`` can stop it;
  when a handler was cancelled its response is suppressed, as the cancellation
  clause asks;
* responses wake the caller waiting in ``request()``;
* ``notifications/progress`` for one of our requests calls its progress
  callback and pushes its deadline out (never past its hard maximum);
* other notifications go to the user's notification handler, in order;
* ``Invalid`` items are answered with their error when JSON-RPC calls for one
  and counted; batches are served only when ``allow_batches`` is set (the
  2025-03-26 revision) and otherwise refused with one -32600.

Three shortcuts keep a round trip cheap without changing what is observed:

* requests that ``serve_inline`` approves (handlers that never wait, such
  as a synchronous tool) are served in the reader task itself: they would
  block the loop in any task, so a task of their own buys nothing;
* a transport with ``attach`` (the direct in-process pair) delivers the
  peer's messages by call, and requests are then served in the caller's task;
* a transport with ``set_fast_path`` (stdio on asyncio) settles a response,
  or serves a request ``serve_inline`` approves (``_eager``), where it parses
  it, without a pass through the reader task, and only when nothing is queued
  ahead of it, so order is kept.

All correlation state lives in the sans-IO ``RPCState``; this module only
waits, times and cancels. Every outgoing request has a finite deadline. When
the transport ends, every waiting caller fails at once with the transport's
``ConnectionClosed`` (which says why: exit status, stderr tail), and later
calls fail the same way immediately.

Nothing here raises an exception group at the user: the reader and handler
tasks catch everything they can cause, so the task group only ever ends by
cancellation.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final

import anyio
import anyio.abc

from ._cancel_notices import CancelNotices
from ._eager import serve_eagerly
from ._errors import (
    ConnectionClosed,
    JSONRPCError,
    MCPWireError,
    RemoteProtocolError,
)
from ._handler_tasks import HandlerTasks
from ._inflow import Inflow
from ._loops import running_asyncio_loop
from ._pending import Pending, Sweep, log_stray, timed_out
from ._replies import refuse_batch, serve_batch, writable
from ._request_context import RequestContext
from .sansio._json import JSONObject
from .sansio._messages import (
    Batch,
    ErrorCode,
    ErrorResponse,
    Invalid,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    error_response,
)
from .sansio._rpc import ABANDONED_MEMORY, RPCState

if TYPE_CHECKING:
    import asyncio

    from ._transport import Transport

if sys.version_info < (3, 11):  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup  # type: ignore[import-not-found,unused-ignore]

__all__ = (
    "DEFAULT_MAX_REQUEST_TIMEOUT",
    "DEFAULT_REQUEST_TIMEOUT",
    "NotificationHandler",
    "ProgressCallback",
    "RequestContext",
    "RequestHandler",
    "Session",
    "unwrap_group",
)

logger = logging.getLogger("mcpwire")

#: Seconds an outgoing request may wait for its answer (finite by default: a
#: dead or wedged peer must never hang a caller forever).
DEFAULT_REQUEST_TIMEOUT: Final = 60.0
#: Progress notifications push the deadline out, but never past this many
#: seconds after the request was sent.
DEFAULT_MAX_REQUEST_TIMEOUT: Final = 3600.0
#: Seconds the cancellation notices still queued get to go out at close (``_cancel_notices``).
_CANCEL_NOTICE_TIMEOUT = 2.0

ProgressCallback = Callable[[float, "float | None", "str | None"], Awaitable[None]]
NotificationHandler = Callable[[Notification], Awaitable[None]]
RequestHandler = Callable[[Request, "RequestContext"], Awaitable[JSONObject]]


class _Unset:
    pass


_UNSET: Final = _Unset()


async def _no_requests(request: Request, ctx: RequestContext) -> JSONObject:
    raise JSONRPCError(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {request.method}")


async def _ignore_notification(notification: Notification) -> None:
    return None


class Session:
    """A JSON-RPC peer over one transport (use as an async context manager).

    Args:
        transport: the connection (see ``mcpwire.Transport``).
        on_request: serves the peer's requests; return a result object or
            raise ``JSONRPCError``. Any other exception becomes -32603.
        on_notification: receives the peer's notifications other than
            cancellation and progress, which the session handles itself.
        request_timeout: default seconds to wait for an answer.
        max_request_timeout: the cap progress can extend a deadline to.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        on_request: RequestHandler = _no_requests,
        on_notification: NotificationHandler = _ignore_notification,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        max_request_timeout: float = DEFAULT_MAX_REQUEST_TIMEOUT,
    ) -> None:
        if not (0 < request_timeout <= max_request_timeout):
            raise ValueError("need 0 < request_timeout <= max_request_timeout")
        self.transport = transport
        self.on_request = on_request
        self.on_notification = on_notification
        self.request_timeout = request_timeout
        self.max_request_timeout = max_request_timeout
        #: Accept JSON-RPC batches (only the 2025-03-26 revision allows them).
        self.allow_batches = False
        #: Requests this says yes to are served in the reader task instead of a new
        #: one. Only for handlers that never wait (a synchronous tool blocks the
        #: loop either way): it saves a task and a scheduling round per request.
        self.serve_inline: Callable[[Request], bool] | None = None
        #: Hears ``(method, response)`` when a result arrives for a request given up
        #: on (timed out, caller cancelled): what it made may need undoing, such as
        #: a task the caller never learned the id of. Called in the reader; must not block.
        self.on_late_response: Callable[[str, Response], None] | None = None
        self._late: dict[RequestId, str] = {}
        self.rpc = RPCState()
        self.invalid_received = 0
        self._pending: dict[RequestId, Pending] = {}
        self._running: dict[RequestId, anyio.CancelScope] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._handlers: HandlerTasks | None = None
        self._reader_scope = anyio.CancelScope()
        self._reader_ended = False  # then close() need not cancel it (anyio's cancel is dear)
        self._closed: ConnectionClosed | None = None
        self._ended = anyio.Event()
        #: ``transport.start_send`` and the loop, when requests may wait on a timer.
        self._start_send: Callable[..., Awaitable[None] | None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sweep: Sweep | None = None
        self._dispatching = False  # the reader is part-way through a message
        self.inflow = Inflow(transport)
        self.cancel_notices = CancelNotices(transport)

    # -- lifecycle ------------------------------------------------------------

    async def __aenter__(self) -> Session:
        if self._tg is not None:
            raise RuntimeError("a Session can be entered only once")
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        # Never entered, so never cancelled: the scope of handlers that never wait.
        self._no_cancel = anyio.CancelScope()
        attach = getattr(self.transport, "attach", None)
        if attach is not None:
            # A direct in-process transport hands us the peer's messages by call.
            attach(self._deliver)
        set_fast_path = getattr(self.transport, "set_fast_path", None)
        if set_fast_path is not None:
            # Responses can be settled where they are parsed, without the reader task.
            set_fast_path(self._settle_now)
        # On asyncio one loop timer keeps every request's deadline (see _pending);
        # a transport that can write without waiting also spares them the scope.
        self._loop = running_asyncio_loop()
        if self._loop is not None:
            self._start_send = getattr(self.transport, "start_send", None)
            self._sweep = Sweep(self._loop, self._pending)
        self._handlers = HandlerTasks(self, self._tg, self._loop)
        attach_start = getattr(self.transport, "attach_start", None)
        if attach_start is not None:
            # HTTP: a POST's task starts its request's handler when the reader is idle.
            attach_start(self._handlers.start_now)
        self._tg.start_soon(self._reader)
        return self

    async def __aexit__(self, *exc_info: object) -> bool | None:
        assert self._tg is not None and self._handlers is not None
        try:
            await self.close()
        except BaseException:
            # A transport whose close failed still leaves our task group to exit
            # here, or anyio's cancel-scope stack is left corrupted and the
            # failure is masked by a RuntimeError about scopes.
            await self._handlers.join()
            await self._tg.__aexit__(None, None, None)
            raise
        await self._handlers.join()  # plain asyncio tasks: the group does not wait for them
        try:
            return await self._tg.__aexit__(*exc_info)  # type: ignore[arg-type]
        except BaseExceptionGroup as group:  # pragma: no cover - defensive
            if group is exc_info[1]:
                raise  # the caller's own group, passing through untouched
            raise unwrap_group(group) from None

    @property
    def closed(self) -> bool:
        return self._closed is not None

    @property
    def close_reason(self) -> ConnectionClosed | None:
        """Why the session ended, once it has."""
        return self._closed

    async def wait_closed(self) -> None:
        """Return when the connection has ended (peer gone or ``close()``)."""
        await self._ended.wait()

    async def close(self, reason: str = "the session was closed") -> None:
        """End the session: fail pending calls (``ConnectionClosed(reason)``), stop
        handlers, close the transport (idempotent)."""
        self._shutdown(ConnectionClosed(reason))
        try:
            with anyio.CancelScope(shield=True):
                await self.cancel_notices.flush(_CANCEL_NOTICE_TIMEOUT)
                await self.transport.aclose()
        finally:
            # Only our own tasks stop (the reader here, handlers in _shutdown); the
            # task group's scope also covers the caller's ``async with`` body, which
            # must not be cancelled behind its back.
            if not self._reader_ended:
                self._reader_scope.cancel()

    def _shutdown(self, error: ConnectionClosed) -> None:
        if self._closed is not None:
            return
        self._closed = error
        for pending in self._pending.values():
            if pending.value is None:  # an answer that already arrived stands
                pending.settle(error)
        self.rpc.fail_all()
        if self._sweep is not None:
            self._sweep.close()
        for scope in self._running.values():
            scope.cancel()
        self._ended.set()

    def _closed_error(self) -> ConnectionClosed:
        assert self._closed is not None
        return self._closed.again()

    # -- outgoing -------------------------------------------------------------

    async def notify(
        self, method: str, params: JSONObject | None = None, *, related: RequestId | None = None
    ) -> None:
        """Send a notification. Raises ``ConnectionClosed`` if the connection is gone."""
        await self.send(Notification(method, params), related=related)

    async def send(
        self, message: Message | list[Message], *, related: RequestId | None = None
    ) -> None:
        if self._closed is not None:
            raise self._closed_error()
        try:
            await self.transport.send(message, related=related)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise self._broken(exc) from exc

    async def request(
        self,
        method: str,
        params: JSONObject | None = None,
        *,
        timeout: float | None | _Unset = _UNSET,
        on_progress: ProgressCallback | None = None,
        max_timeout: float | _Unset = _UNSET,
        on_id: Callable[[RequestId], None] | None = None,
        related: RequestId | None = None,
    ) -> JSONObject:
        """Send a request and wait for its result.

        Args:
            timeout: seconds to wait (default ``request_timeout``); ``None``
                waits up to ``max_timeout``.
            on_progress: called with ``(progress, total, message)`` for each
                progress notification; asking for it adds a progress token, and
                each notification restarts the ``timeout`` clock.
            max_timeout: hard cap however much progress arrives.
            on_id: called with the request's id before it is sent (to route
                notifications that name it, such as a subscription's).
            related: the peer's request this one is made while serving (see
                ``Transport.send``).

        Raises:
            JSONRPCError: the peer answered with an error.
            RequestTimeout: no answer in time, raised at the deadline (the
                ``notifications/cancelled`` goes out after it: ``_cancel_notices``).
            ConnectionClosed: the connection ended first.
        """
        if self._closed is not None:
            raise self._closed_error()
        hard = self.max_request_timeout if isinstance(max_timeout, _Unset) else max_timeout
        limit = self.request_timeout if isinstance(timeout, _Unset) else timeout
        if limit is None or limit > hard:
            limit = hard
        request, _ = self.rpc.start_request(method, params, progress=on_progress is not None)
        if on_id is not None:
            on_id(request.id)
        pending = Pending(on_progress, limit)
        self._pending[request.id] = pending
        loop = self._loop  # on asyncio, anyio's clock is the loop's
        started = loop.time() if loop is not None else anyio.current_time()
        pending.hard_deadline = started + hard
        try:
            if self._start_send is None:
                rest: Awaitable[None] | None = self.send(request, related=related)
            else:
                rest = self._send_now(request, related)
            if rest is None:  # written whole: only the wait needs the deadline
                assert self._sweep is not None
                waiting = pending.wait_timed(self._sweep, started + limit)
                if waiting is not None:
                    await waiting
            else:
                # The deadline covers the send too: a stalled peer (full pipe) must
                # not hang it. A direct transport may answer during the send.
                await pending.send_and_wait(rest, started + limit, self._sweep)
            if pending.value is None:
                raise timed_out(self.transport, method, limit)
        except ConnectionClosed:
            self.rpc.abandon(request.id)  # it could not be sent: nothing to cancel
            raise
        finally:
            del self._pending[request.id]
            if pending.value is None:
                self._abandon(request.id, method)
        return pending.result()

    def _send_now(self, message: Message, related: RequestId | None) -> Awaitable[None] | None:
        """``transport.start_send``: None once sent whole, else what finishes the send."""
        assert self._start_send is not None
        if self._closed is not None:
            raise self._closed_error()
        try:
            rest: Awaitable[None] | None = self._start_send(message, related=related)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise self._broken(exc) from exc
        return None if rest is None else self._finish_send(rest)

    async def _finish_send(self, rest: Awaitable[None]) -> None:
        try:
            await rest
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            raise self._broken(exc) from exc

    def _broken(self, exc: BaseException) -> ConnectionClosed:
        """The transport failed under a send: the session ends with the transport's reason."""
        if self._closed is None:
            self._shutdown(self.transport.close_error())
        return self._closed_error()

    def _abandon(self, rid: RequestId, method: str) -> None:
        notice = self.rpc.abandon(rid, f"{method} timed out or was cancelled by the caller")
        if notice is None or self._closed is not None or self._tg is None:
            return
        if self.on_late_response is not None:
            late = self._late
            late[rid] = method
            if len(late) > ABANDONED_MEMORY:  # as many as the RPC state remembers
                del late[next(iter(late))]
        self.cancel_notices.post(notice, self._tg)

    # -- incoming -------------------------------------------------------------

    async def _reader(self) -> None:
        error: ConnectionClosed | None = None
        try:
            with self._reader_scope:
                while True:
                    item = await self.transport.receive()
                    self._dispatching = True
                    if self.inflow.congested():
                        await self.inflow.hold(item)
                    await self._dispatch(item)
                    self._dispatching = False
        except anyio.EndOfStream:
            error = self.transport.close_error()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            error = self.transport.close_error()
        except MCPWireError as exc:
            error = exc if isinstance(exc, ConnectionClosed) else ConnectionClosed(str(exc))
        finally:
            self._reader_ended = True
            self._shutdown(error or ConnectionClosed("the session was closed"))

    async def _deliver(self, item: object) -> None:
        """Entry point for direct transports: requests are served in the caller's task."""
        await self._dispatch(item, inline=True)

    async def _dispatch(self, item: object, *, inline: bool = False) -> None:
        cls = type(item)
        if cls is Request:
            req: Request = item  # type: ignore[assignment]
            if not self.rpc.request_received(req):
                await self._send_quietly(
                    error_response(
                        req.id,
                        ErrorCode.INVALID_REQUEST,
                        f"request id {req.id!r} is already in use by a request in progress",
                    )
                )
                return
            if self.serve_inline is not None and self.serve_inline(req):
                await self._serve(req, None, scoped=False)
                return
            if inline:
                await self._serve(req, None)
                return
            if not self.inflow.admit(req):
                await self.inflow.park(req)  # started by a handler as it finishes
                return
            assert self._handlers is not None
            self._handlers.start(req)
        elif cls is Response or cls is ErrorResponse:
            self._resolve(item)  # type: ignore[arg-type]
        elif cls is Notification:
            await self._notification(item)  # type: ignore[arg-type]
        elif cls is Invalid:
            reply = self._invalid(item)  # type: ignore[arg-type]
            if reply is not None:
                await self._send_quietly(reply)
        elif cls is Batch:
            batch: Batch = item  # type: ignore[assignment]
            if not self.allow_batches:
                await refuse_batch(self, batch)
                return
            await serve_batch(self, batch)

    def _settle_now(self, item: object) -> bool:
        """Transport fast path: settle a response or serve a request now (False: not done)."""
        cls = type(item)
        if cls is Response or cls is ErrorResponse:
            self._resolve(item)  # type: ignore[arg-type]
            return True
        return cls is Request and not self._dispatching and serve_eagerly(self, item)  # type: ignore[arg-type]

    def _resolve(self, message: Response | ErrorResponse) -> None:
        if self.rpc.response_received(message) is None:
            method = self._late.pop(message.id, None) if self._late else None  # type: ignore[arg-type]
            hook = self.on_late_response
            if method is not None and hook is not None and type(message) is Response:
                hook(method, message)
            log_stray(message, self.rpc.was_abandoned(message.id), self.rpc.counters)
            return
        pending = self._pending.get(message.id)  # type: ignore[arg-type]
        if pending is not None:
            pending.settle(message)

    def _invalid(self, invalid: Invalid) -> ErrorResponse | None:
        """Count ``invalid``; a malformed response to one of our requests fails that
        request now. Returns the error reply JSON-RPC calls for, if any."""
        self.invalid_received += 1
        logger.debug("invalid message from peer: %s", invalid.error.message)
        if invalid.reply:
            return invalid.response()
        out = self.rpc.malformed_response_received(invalid)
        pending = self._pending.get(out.id) if out is not None else None
        if out is not None and pending is not None:
            why = f"malformed response to {out.method}: {invalid.error.message}"
            pending.settle(RemoteProtocolError(why))
        return None

    async def _notification(self, note: Notification) -> None:
        method = note.method
        if method == "notifications/cancelled":
            rid = self.rpc.cancel_received(note.params)
            if rid is not None:
                scope = self._running.get(rid)
                if scope is not None:
                    scope.cancel()
            return
        if method == "notifications/progress":
            rid = self.rpc.progress_received(note.params)
            pending = self._pending.get(rid) if rid is not None else None
            if pending is not None:
                await pending.progress(note.params or {})
                return
        try:
            await self.on_notification(note)
        except Exception:
            logger.exception("notification handler failed for %s", method)

    async def _serve(
        self, request: Request, collect: list[Message] | None, *, scoped: bool = True
    ) -> None:
        """Run the handler and send (or collect) its reply.

        ``scoped=False`` is for handlers that never wait (``serve_inline``): no
        cancel can reach them before they finish, so they get no cancel scope.
        """
        if self._closed is not None:
            return
        if scoped:
            with anyio.CancelScope() as scope:
                self._running[request.id] = scope
                reply = await self._reply(request, RequestContext(self, request, scope))
            self._running.pop(request.id, None)
            cancelled = scope.cancelled_caught
        else:
            reply = await self._reply(request, RequestContext(self, request, self._no_cancel))
            cancelled = False
        if self._closed is not None:
            return
        send = self.rpc.request_finished(request.id)
        if not send or reply is None or cancelled:
            return
        if collect is not None:
            collect.append(reply)
        else:
            await self._send_quietly(reply)

    async def _reply(self, request: Request, ctx: RequestContext) -> Message:
        try:
            result = await self.on_request(request, ctx)
            return Response(request.id, result)
        except JSONRPCError as exc:
            return error_response(request.id, exc.code, exc.message, exc.data)
        except Exception as exc:
            logger.exception("handler for %r failed", request.method)
            return error_response(
                request.id,
                ErrorCode.INTERNAL_ERROR,
                f"Internal error: {type(exc).__name__}: {exc}",
            )

    async def _send_quietly(self, message: Message | list[Message], *, retry: bool = True) -> None:
        """Send a reply; the end of the connection is the reader's to report.

        A reply refused for another reason (a result the codec cannot encode)
        was not written at all, as messages are serialised whole first: it is
        sent again with each refused reply turned into -32603.
        """
        if self._closed is not None:
            return
        try:
            if self._start_send is None:
                await self.transport.send(message)
            elif (rest := self._start_send(message)) is not None:
                await rest
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        except Exception as exc:
            logger.exception("a reply could not be written")
            if retry:
                await self._send_quietly(writable(message, exc), retry=False)


def unwrap_group(group: BaseException) -> BaseException:
    """The one error inside (nested) single-member exception groups."""
    while isinstance(group, BaseExceptionGroup) and len(group.exceptions) == 1:
        group = group.exceptions[0]
    return group
