"""Serving a request where it was parsed, without a pass through the reader task.

On asyncio the stdio transport parses input in the loop's readiness callback and
offers each message to the session's fast path (``Session._settle_now``), outside
any task. A request that the session's ``serve_inline`` approves (its handler never waits: a
synchronous tool, ``ping``, a list method) is served right there: the handler's
coroutine is stepped by hand and ends in its first step, and the reply is written
at once when the pipe has room. That saves what the reader task would cost, a loop
iteration and a task wakeup per request. Any other request gets its handler task
right there (``_handler_tasks``), when ``Inflow`` admits it at once; one that
would be parked is left to the reader, which parks it.

Nothing else changes. The fast path runs only when nothing is queued ahead of the
request and the reader task is not part-way through an earlier message, so
messages are still handled in the order they came. The request gets the context
an inline request gets anyway (a cancel scope that is never entered: no
cancellation can reach a handler that never waits). A reply the pipe cannot take
whole is finished by a task, under the same lock as every other write. Should a
handler wait after all (a plain function that returned an awaitable), its
coroutine is handed, part-way, to a task that drives it on.
"""

from __future__ import annotations

import logging
import types
from collections.abc import Awaitable, Coroutine, Generator
from typing import TYPE_CHECKING, Any

import anyio

from ._loops import outside_task
from ._replies import writable
from ._request_context import RequestContext

if TYPE_CHECKING:
    from ._session import Session
    from .sansio._messages import Message, Request

__all__ = ("serve_eagerly",)

logger = logging.getLogger("mcpwire")


def serve_eagerly(session: Session, request: Request) -> bool:
    """Serve ``request`` now, or start its handler task; False to leave it to the reader.

    Only from a loop callback: a transport that parses in its reader task (any
    transport on trio) offers requests to the fast path too, but there the reader
    serves them itself, and a handler that waits must stay in the task it began in.
    """
    loop = session._loop
    if loop is None or not outside_task(loop):
        return False
    if session._closed is not None or session.inflow.congested():
        return False  # the reader holds it until the peer takes our output (_inflow)
    approve = session.serve_inline
    if approve is None or not approve(request):
        # A handler that may wait gets its task here (_handler_tasks): no pass
        # through the reader task. If every slot is taken the reader parks it.
        assert session._handlers is not None
        return session._handlers.start_now(request)
    if not session.rpc.request_received(request):
        return False  # an id in use: the reader answers it (and finds it in use again)
    step = session._reply(request, RequestContext(session, request, session._no_cancel))
    assert session._tg is not None
    try:
        waiting = step.send(None)
    except StopIteration as stop:
        try:
            _send_reply(session, request, stop.value)
        except Exception as exc:
            # Never out of the readiness callback: the rest of the read would be lost.
            logger.exception("the reply to %r could not be written", request.method)
            session._tg.start_soon(session._send_quietly, writable(stop.value, exc))
    else:
        session._tg.start_soon(_drive, session, request, step, waiting)
    return True


def _send_reply(session: Session, request: Request, reply: Message | None) -> None:
    if session._closed is not None:
        return
    if not session.rpc.request_finished(request.id) or reply is None:
        return
    # A session has a loop (checked in serve_eagerly) only with a transport's start_send.
    start_send = session._start_send
    assert start_send is not None
    try:
        rest = start_send(reply)
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        return  # the reader sees the same end of connection and reports it
    if rest is not None:
        assert session._tg is not None
        session._tg.start_soon(_quietly, rest)


async def _quietly(rest: Awaitable[None]) -> None:
    try:
        await rest
    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        pass


async def _drive(
    session: Session, request: Request, step: Coroutine[Any, Any, Message], waiting: object
) -> None:
    logger.debug("handler for %r waited: finished in a task", request.method)
    reply = await _resume(step, waiting)
    if session._closed is None and session.rpc.request_finished(request.id):
        await session._send_quietly(reply)


@types.coroutine
def _resume(step: Coroutine[Any, Any, Message], waiting: object) -> Generator[Any, Any, Message]:
    """Drive a coroutine already started by hand, from what it is waiting on."""
    while True:
        try:
            sent = yield waiting
        except BaseException as exc:  # delivered to the coroutine, as a task would
            try:
                waiting = step.throw(exc)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
        else:
            try:
                waiting = step.send(sent)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
