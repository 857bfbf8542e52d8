"""The tasks extension (SEP-2663, ``io.modelcontextprotocol/tasks``) on the server.

Theory of operation
-------------------
A request whose ``_meta`` client capabilities list the extension may get a
``CreateTaskResult`` (``resultType: "task"``, a flat ``Result & Task``) for a
``tools/call``, then polls ``tasks/get`` until the task is terminal, where
the result or JSON-RPC error is inlined. The server alone decides (the
2025-11-25 ``task`` parameter is ignored); mcpwire decides per tool:
``task="forbidden"`` (default, always in place), ``"optional"`` (a task when
the request declares the extension) or ``"required"`` (else -32021 with
``data.requiredCapabilities``). Legacy-era calls always run in place.

Tasks live in a ``TaskStore``: bounded (a full store evicts its oldest
finished task, and refuses when all are running), expiring (``ttl_ms``; an
expired task is dropped and its handler cancelled), keyed by 128-bit ids
from the OS's CSPRNG (ids are bearer tokens, SEP-2663 "Security"). A task is
stored before its ``CreateTaskResult`` goes out, so an immediate
``tasks/get`` resolves (SEP-2663 "Task Creation": strongly consistent).

Handlers run in a host task group, not the request's, so a task outlives
its request: the server-wide group of ``TaskStore.running()`` (the HTTP
server enters it), else one per connection (``Server.serve``), ending with
it. ``tasks/cancel`` marks the task cancelled at once and cancels its
handler; the ack is empty, the same for a finished task.

In a task, ``ctx.elicit``/``sample``/``ask_all`` park it: the asks become
``inputRequests`` (keys unique over the task's lifetime), the status
``input_required``, until ``tasks/update`` has delivered every answer
(partial updates leave the rest outstanding; unknown or answered keys are
ignored). With ``task_start="manual"`` the handler runs as an ordinary call,
asks being multi-round-trip ``InputRequiredResult``s, until ``await
ctx.start_task()``: the request then answers with the ``CreateTaskResult``
and the rest is the task (SEP-2663 "Composition with Multi Round-Trip
Requests"). Progress messages become ``statusMessage``; logs are dropped (no
notifications on tasks). ``on_change`` hears every state change (the server
sends ``notifications/tasks`` to listen streams that asked for the id).

The module is split by when it is needed. This one is what every server
loads: the store, its hosting of handlers, the capability checks and the
constants. ``Task``, ``TaskRun``, ``call_tool`` and the ``tasks/*`` methods
are in ``_task_runs``, imported when the first task is created or a
``tasks/*`` request arrives, so a server whose tools never run as tasks
does not keep them in memory.
"""

from __future__ import annotations

import heapq
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Final

import anyio
import anyio.abc

from ._errors import JSONRPCError
from ._versions import LEGACY_TASKS_VERSION, at_least
from .sansio._b64url import b64url_encode
from .sansio._json import JSONObject, JSONValue
from .sansio._messages import ErrorCode

if TYPE_CHECKING:
    from ._auth_tokens import AccessToken
    from ._context import Context
    from ._methods import Call
    from ._server import Server
    from ._task_runs import Task

    Invoke = Callable[[Context], Awaitable[JSONObject]]

__all__ = (
    "STATUSES",
    "TASKS_EXTENSION",
    "TASK_SUPPORT",
    "TERMINAL",
    "TaskStore",
    "TaskStoreFull",
    "declares_tasks",
    "legacy_call",
    "legacy_cancel",
    "legacy_capability",
    "legacy_get",
    "legacy_list",
    "legacy_result",
    "legacy_tasks",
    "listen_task_ids",
    "missing_tasks_capability",
    "tasks_cancel",
    "tasks_get",
    "tasks_update",
)

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
STATUSES: Final = ("working", "input_required", "completed", "failed", "cancelled")
TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
#: The values of the ``task=`` tool option.
TASK_SUPPORT: Final = ("forbidden", "optional", "required")


class TaskStoreFull(JSONRPCError):
    """Every slot of the store holds a task that is still running."""

    def __init__(self, limit: int) -> None:
        super().__init__(ErrorCode.INTERNAL_ERROR, f"Too many tasks: {limit} are still running")


def declares_tasks(capabilities: JSONObject) -> bool:
    """Whether a request's client capabilities list the tasks extension."""
    extensions = capabilities.get("extensions")
    return isinstance(extensions, dict) and isinstance(extensions.get(TASKS_EXTENSION), dict)


def missing_tasks_capability() -> JSONRPCError:
    """-32021 naming the extension, shaped like the capabilities object (SEP-2575)."""
    return JSONRPCError(
        ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability: the {TASKS_EXTENSION} extension",
        {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
    )


class TaskStore:
    """Where a server keeps its tasks (in memory): bounded, expiring, unguessable ids.

    Args:
        ttl_ms: how long a task is kept after its creation (``None``: until
            evicted); also the ``ttlMs`` every task reports.
        poll_interval_ms: the ``pollIntervalMs`` suggested to clients.
        max_tasks: at most this many tasks are kept; a new one evicts the
            oldest finished task, or fails with -32603 when all are running.
        clock: the monotonic clock expiry is measured on (tests pass a fake).
    """

    def __init__(
        self,
        *,
        ttl_ms: int | None = 60 * 60 * 1000,
        poll_interval_ms: int | None = 500,
        max_tasks: int = 1000,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        if ttl_ms is not None and (not isinstance(ttl_ms, int) or ttl_ms <= 0):
            raise ValueError("ttl_ms must be a positive integer or None")
        if poll_interval_ms is not None and (
            not isinstance(poll_interval_ms, int) or poll_interval_ms <= 0
        ):
            raise ValueError("poll_interval_ms must be a positive integer or None")
        if max_tasks < 1:
            raise ValueError("max_tasks must be at least 1")
        self.ttl_ms = ttl_ms
        self.poll_interval_ms = poll_interval_ms
        self.max_tasks = max_tasks
        self.clock = clock
        self.wall_clock = wall_clock
        #: Called after a task's state changed (the server sends notifications/tasks).
        self.on_change: Callable[[Task], Awaitable[None]] | None = None
        #: Insertion order is creation order (``tasks/list`` pages in it).
        self._tasks: dict[str, Task] = {}
        #: (expiry, creation number, id): the 2025-11-25 ``ttl`` a client asks
        #: for gives tasks TTLs of their own, so expiry order is kept apart.
        self._expiry: list[tuple[float, int, str]] = []
        self._created = 0
        #: Who created each task, when the request was authorized (HTTP ``auth=``):
        #: only they may see it (tasks.mdx, "Security": bind tasks to the context).
        self._owners: dict[str, tuple[str, str | None]] = {}
        #: Otherwise a 2025-11-25 task belongs to the connection (session) that
        #: made it, its one context that can be named.
        self._conns: dict[str, object] = {}
        self._host: anyio.abc.TaskGroup | None = None

    def __len__(self) -> int:
        return len(self._tasks)

    def __contains__(self, task_id: object) -> bool:
        return isinstance(task_id, str) and task_id in self._tasks and self._visible(task_id)

    def _visible(self, task_id: str, conn: object = None) -> bool:
        bound = self._conns.get(task_id)
        if bound is not None and bound is not conn:
            return False
        owner = self._owners.get(task_id)
        if owner is None:
            return True
        caller = _caller()
        return caller is not None and caller.owner == owner

    def _drop(self, task_id: str) -> None:
        del self._tasks[task_id]
        self._owners.pop(task_id, None)
        self._conns.pop(task_id, None)

    def create(self, *, ttl_ms: int | None = None, conn: object = None) -> Task:
        """A new ``working`` task, stored before anyone hears of it.

        ``ttl_ms``: the lifetime a 2025-11-25 client asked for, capped at the
        store's; ``None`` (none asked for, or ``null``: no limit) gets the
        store's, so only a store without a limit keeps a task forever.
        ``conn``: bind the task to that connection when the request was not
        authorized (2025-11-25 tasks; see ``tasks.mdx`` "Security").
        """
        self.sweep()
        if len(self._tasks) >= self.max_tasks:
            oldest = next((t for t in self._tasks.values() if t.terminal), None)
            if oldest is None:
                raise TaskStoreFull(self.max_tasks)
            self._drop(oldest.task_id)
        from ._task_runs import Task

        ttl = self.ttl_ms
        if ttl_ms is not None and (ttl is None or ttl_ms < ttl):
            ttl = ttl_ms
        task_id = b64url_encode(os.urandom(16))
        expires = None if ttl is None else self.clock() + ttl / 1000
        task = Task(
            task_id, self.wall_clock(), ttl, self.poll_interval_ms, expires, self.wall_clock
        )
        self._created += 1
        task.seq = self._created
        self._tasks[task_id] = task
        if expires is not None:
            heapq.heappush(self._expiry, (expires, task.seq, task_id))
            if len(self._expiry) > 2 * len(self._tasks) + 64:
                # Entries of tasks dropped early (evicted, their session ended)
                # wait for their expiry: rebuilt, the heap stays bounded.
                live = self._tasks.values()
                self._expiry = [
                    (t.expires, t.seq, t.task_id) for t in live if t.expires is not None
                ]
                heapq.heapify(self._expiry)
        caller = _caller()
        if caller is not None:
            self._owners[task_id] = caller.owner
        elif conn is not None:
            self._conns[task_id] = conn
        return task

    def get(self, task_id: JSONValue, conn: object = None) -> Task:
        """The task, or -32602 when the id is unknown, expired or someone else's."""
        if not isinstance(task_id, str):
            raise JSONRPCError(ErrorCode.INVALID_PARAMS, "taskId must be a string")
        self.sweep()
        task = self._tasks.get(task_id)
        if task is None or not self._visible(task_id, conn):
            raise JSONRPCError(ErrorCode.INVALID_PARAMS, "Failed to retrieve task: Task not found")
        return task

    def visible(self, conn: object = None) -> list[Task]:
        """The tasks this caller (and ``conn``) may see, oldest first (``tasks/list``)."""
        self.sweep()
        return [t for t in self._tasks.values() if self._visible(t.task_id, conn)]

    def sweep(self) -> int:
        """Drop expired tasks (cancelling the handlers of live ones); how many were dropped."""
        now, heap = self.clock(), self._expiry
        dropped = 0
        while heap and heap[0][0] <= now:
            _, seq, task_id = heapq.heappop(heap)
            task = self._tasks.get(task_id)
            if task is None or task.seq != seq:
                continue  # evicted or dropped before it expired
            self._drop(task_id)
            task.cancel("The task expired")
            dropped += 1
        return dropped

    def forget_connection(self, conn: object) -> None:
        """The connection ended: its tasks can never be asked for again (none else
        may see them), so they are cancelled and dropped."""
        for task_id in [i for i, c in self._conns.items() if c is conn]:
            task = self._tasks[task_id]
            self._drop(task_id)
            task.cancel("The session ended")

    async def publish(self, task: Task) -> None:
        if self.on_change is not None:
            await self.on_change(task)

    # -- hosting handlers ----------------------------------------------------------

    @property
    def host(self) -> anyio.abc.TaskGroup | None:
        """The server-wide task group handlers run in, while ``running()``."""
        return self._host

    @asynccontextmanager
    async def running(self) -> AsyncIterator[anyio.abc.TaskGroup]:
        """Host task handlers server-wide while the body runs; cancel what is left after.

        Re-entering while running reuses the outer host.
        """
        if self._host is not None:
            yield self._host
            return
        try:
            async with anyio.create_task_group() as tg:
                self._host = tg
                try:
                    yield tg
                finally:
                    tg.cancel_scope.cancel()
        finally:
            self._host = None

    @asynccontextmanager
    async def connection_host(self) -> AsyncIterator[anyio.abc.TaskGroup]:
        """The server-wide host if there is one, else a group for one connection's tasks."""
        if self._host is not None:
            yield self._host
            return
        async with anyio.create_task_group() as tg:
            try:
                yield tg
            finally:
                tg.cancel_scope.cancel()


# -- listen streams' task ids, and the tasks/* methods (bodies in _task_runs) --------------


def listen_task_ids(call: Call, wanted: JSONObject) -> list[str]:
    """The ``taskIds`` of a ``subscriptions/listen`` the server honours (known tasks)."""
    ids = wanted.get("taskIds")
    if ids is None:
        return []
    if not isinstance(ids, list):
        raise JSONRPCError(ErrorCode.INVALID_PARAMS, "notifications.taskIds must be an array")
    if not declares_tasks(call.client_capabilities):
        raise missing_tasks_capability()
    store = call.server.tasks
    store.sweep()
    return [i for i in ids if isinstance(i, str) and i in store]


def _deferred(module: str, name: str) -> Callable[[Call], Awaitable[JSONObject]]:
    """A ``tasks/*`` method whose body is in ``module``, imported on its first call
    (``_task_runs`` for the extension, ``_task_legacy`` for 2025-11-25)."""

    async def method(call: Call) -> JSONObject:
        from importlib import import_module

        body: Callable[[Call], Awaitable[JSONObject]] = getattr(
            import_module(module, __package__), name
        )
        return await body(call)

    method.__name__ = method.__qualname__ = name
    return method


tasks_get = _deferred("._task_runs", "tasks_get")
tasks_update = _deferred("._task_runs", "tasks_update")
tasks_cancel = _deferred("._task_runs", "tasks_cancel")


# -- 2025-11-25 tasks (bodies in _task_legacy) --------------------------------------------


def legacy_tasks(server: Server, version: str) -> bool:
    """Whether a legacy connection at ``version`` has tasks: 2025-11-25 and a tool allows them."""
    return at_least(version, LEGACY_TASKS_VERSION) and server.offers_tasks


def legacy_capability() -> JSONObject:
    """The 2025-11-25 ``tasks`` server capability: list, cancel, task-augmented ``tools/call``."""
    return {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}


async def legacy_call(call: Call, name: str, support: str, invoke: Invoke) -> JSONObject:
    from ._task_legacy import call_tool

    return await call_tool(call, name, support, invoke)


legacy_get = _deferred("._task_legacy", "tasks_get")
legacy_result = _deferred("._task_legacy", "tasks_result")
legacy_list = _deferred("._task_legacy", "tasks_list")
legacy_cancel = _deferred("._task_legacy", "tasks_cancel")


def _caller() -> AccessToken | None:
    """Who is asking, when requests are authorized (``_auth_tokens`` is loaded
    only by servers that use it)."""
    from ._auth_tokens import current_auth

    return current_auth()
