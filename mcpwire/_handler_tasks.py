"""The tasks that serve requests whose handlers may wait.

A request whose handler may wait (an ``async def`` tool, anything but what
``Session.serve_inline`` approves) is served in a task of its own, so that the
connection goes on while it waits. On trio, and on asyncio with no loop known,
that task is started in the session's anyio task group. On asyncio it is a
plain asyncio task: anyio's ``start_soon`` gives each task a state record, a
wrapper coroutine and a done callback with a loop turn of its own, which cost
more than everything else an asynchronous tool call does on the server.

The session owns these tasks all the same, as it owns its group's:

- each handler runs in its own anyio cancel scope (``Session._serve``), so a
  ``notifications/cancelled`` and the end of the session reach it as before;
  anything a handler does with anyio (scopes, task groups, threads, sleeps)
  works the same in a plain asyncio task;
- the session waits for all of them before its task group exits (``join``);
- an exception that escapes one is raised in the session's task group, which
  ends the session with it, as it would have from a task of the group. (The
  handler's own errors become error replies; only a fault of ours could escape.)

Each task runs in a copy of the context it was started from, as anyio's are: a
context variable set by a handler stays its own. The stdio reader on asyncio
starts them in its readiness callback (``_eager``), a loop turn and a wakeup of
the session's reader task sooner.

``beside`` does the same for one task run beside the caller's own work: a
modern HTTP request's handler, beside the response pump (``_http_modern``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from ._loops import running_asyncio_loop

if TYPE_CHECKING:
    import asyncio

    from ._replies import Gathered
    from ._session import Session
    from .sansio._messages import Request

__all__ = ("HandlerTasks", "beside", "wait_shielded")

T = TypeVar("T")


class HandlerTasks:
    """Starts, and waits for, a session's handler tasks (see the module docstring)."""

    __slots__ = ("_loop", "_session", "_tasks", "_tg")

    def __init__(
        self,
        session: Session,
        tg: anyio.abc.TaskGroup,
        loop: asyncio.AbstractEventLoop | None,
    ) -> None:
        self._session = session
        self._tg = tg
        self._loop = loop
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, request: Request, batch: Gathered | None = None) -> None:
        """Serve ``request`` (admitted by ``Inflow.admit``) in a new task."""
        if self._loop is None:
            self._tg.start_soon(self._serve, request, batch)
        else:
            self._tasks.add(self._loop.create_task(self._plain(request, batch)))

    def start_now(self, request: Request) -> bool:
        """Start ``request``'s task as the reader would on taking it next; False to
        leave it to the reader: the session is ending, every handler slot is taken
        (the reader parks it) or its id is in use (the reader answers it).

        For a transport's own task or callback while the reader waits with nothing
        queued, so the order in which the session sees its messages is unchanged.
        """
        session = self._session
        if session._closed is not None or not session.inflow.free():
            return False
        if not session.rpc.request_received(request):
            return False
        session.inflow.admit(request)
        self.start(request)
        return True

    async def _plain(self, request: Request, batch: Gathered | None) -> None:
        import asyncio

        try:
            await self._serve(request, batch)
        except Exception as exc:
            self._tg.start_soon(_reraise, exc)
        finally:
            self._tasks.discard(asyncio.current_task())

    async def _serve(self, request: Request | None, batch: Gathered | None) -> None:
        """Serve ``request``, then each parked request that ``Inflow`` hands over."""
        session = self._session
        while request is not None:
            try:
                await session._serve(request, None if batch is None else batch.replies)
            finally:
                done, (request, batch) = batch, session.inflow.finished()
            if done is not None:
                await done.done(session)

    async def join(self) -> None:
        """Wait until every plain task has ended (the session has cancelled them)."""
        if not self._tasks:
            return
        # A task that never ran (cancelled by someone else before its first step)
        # never left the set: it is done all the same.
        while running := [task for task in self._tasks if not task.done()]:
            await wait_shielded(running)
        self._tasks.clear()


async def _reraise(exc: Exception) -> None:
    raise exc


async def wait_shielded(tasks: Collection[asyncio.Task[Any]]) -> None:
    """Wait until ``tasks`` (plain asyncio tasks) have ended, whatever cancels the
    caller meanwhile: what runs in them belongs to the caller, which must not
    return before they do."""
    import asyncio

    with anyio.CancelScope(shield=True):
        await asyncio.wait(tasks)


async def beside(
    side: Callable[[], Coroutine[Any, Any, None]],
    main: Callable[[], Awaitable[T]],
    stop: Callable[[], None],
) -> T:
    """Await ``main()`` while ``side()`` runs in a task of its own; once ``main``
    has ended, call ``stop`` (which must end ``side`` soon) and wait for ``side``.

    On asyncio ``side`` is a plain asyncio task, for the reasons above; an
    exception that escapes it is raised here once ``main`` has ended. Elsewhere
    it is a task of a task group around ``main``, which also cancels it outright
    if ``main`` fails.
    """
    loop = running_asyncio_loop()
    if loop is not None:
        task = loop.create_task(side())
        try:
            return await main()
        finally:
            stop()
            if not task.done():
                await wait_shielded((task,))
            if not task.cancelled():
                task.result()
    async with anyio.create_task_group() as tg:
        tg.start_soon(side)
        try:
            result = await main()
        finally:
            stop()
    return result
