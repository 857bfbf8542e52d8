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
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Final

import anyio
import anyio.abc

from ._errors import JSONRPCError
from .sansio._json import JSONObject, JSONValue
from .sansio._messages import ErrorCode

if TYPE_CHECKING:
    from ._context import Context
    from ._methods import Call

__all__ = (
    "EVENTS",
    "STATUSES",
    "TASKS_EXTENSION",
    "TASK_SUPPORT",
    "TERMINAL",
    "Task",
    "TaskRun",
    "TaskStateError",
    "TaskStore",
    "TaskStoreFull",
    "call_tool",
    "declares_tasks",
    "listen_task_ids",
    "missing_tasks_capability",
    "next_status",
    "tasks_cancel",
    "tasks_get",
    "tasks_update",
)

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"
STATUSES: Final = ("working", "input_required", "completed", "failed", "cancelled")
TERMINAL: Final = frozenset({"completed", "failed", "cancelled"})
#: The values of the ``task=`` tool option.
TASK_SUPPORT: Final = ("forbidden", "optional", "required")

#: event -> {status: next status}: the state diagram of SEP-2663 "Task Status".
_TRANSITIONS: Final[dict[str, dict[str, str]]] = {
    "need_input": {"working": "input_required", "input_required": "input_required"},
    "resume": {"input_required": "working"},
    "complete": {"working": "completed", "input_required": "completed"},
    "fail": {"working": "failed", "input_required": "failed"},
    "cancel": {"working": "cancelled", "input_required": "cancelled"},
}
EVENTS: Final = tuple(_TRANSITIONS)


class TaskStateError(ValueError):
    """A transition the task's status does not allow (a terminal task never changes)."""

    def __init__(self, status: str, event: str) -> None:
        super().__init__(f"a task that is {status} cannot {event.replace('_', ' ')}")
        self.status = status
        self.event = event


def next_status(status: str, event: str) -> str:
    """The status after ``event``, or ``TaskStateError`` when the diagram has no such edge."""
    table = _TRANSITIONS.get(event)
    if table is None:
        raise ValueError(f"unknown task event {event!r}")
    new = table.get(status)
    if new is None:
        raise TaskStateError(status, event)
    return new


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


def _iso(seconds: float) -> str:
    # datetime is imported on first use: a server that never creates a task
    # does not load it.
    from datetime import datetime, timezone

    moment = datetime.fromtimestamp(seconds, timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Task:
    """One task: its status, what it waits for, and how it ended."""

    def __init__(
        self,
        task_id: str,
        created_at: float,
        ttl_ms: int | None,
        poll_interval_ms: int | None,
        expires: float | None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.task_id, self.created_at, self.updated_at = task_id, created_at, created_at
        self.ttl_ms, self.poll_interval_ms, self.expires = ttl_ms, poll_interval_ms, expires
        self.wall_clock, self.status = wall_clock, "working"
        self.status_message: str | None = None
        self.result: JSONObject | None = None
        self.error: JSONObject | None = None
        #: Outstanding input requests by wire key, and answers not yet taken by the handler.
        self.pending: dict[str, JSONValue] = {}
        self.answers: dict[str, JSONValue] = {}
        self.keys_used: set[str] = set()
        self.scope: anyio.CancelScope | None = None
        self._wake: anyio.Event | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def _move(self, event: str, message: str | None = None) -> None:
        self.status = next_status(self.status, event)
        self.updated_at = self.wall_clock()
        if message is not None:
            self.status_message = message

    def note(self, message: str) -> None:
        """Set ``statusMessage`` without changing the status (progress while working)."""
        if not self.terminal:
            self.status_message = message
            self.updated_at = self.wall_clock()

    def mint_key(self, key: str) -> str:
        """``key``, or ``key#n``: unique over the task's lifetime (SEP-2663 "Task Update")."""
        wire, n = key, 1
        while wire in self.keys_used:
            n += 1
            wire = f"{key}#{n}"
        self.keys_used.add(wire)
        return wire

    def need_input(self, requests: dict[str, JSONValue], message: str | None = None) -> None:
        self._move("need_input", message)
        self.pending.update(requests)

    def answer(self, responses: dict[str, JSONValue]) -> list[str]:
        """Take the responses to outstanding keys; ignore the rest. Returns the keys taken."""
        taken = [key for key in responses if key in self.pending]
        for key in taken:
            del self.pending[key]
            self.answers[key] = responses[key]
        if taken and not self.pending and self.status == "input_required":
            self._move("resume")
        if taken:
            self._wakeup()
        return taken

    def complete(self, result: JSONObject) -> None:
        self._move("complete")
        self.result = result
        self.pending.clear()

    def fail(self, error: JSONObject, message: str | None = None) -> None:
        self._move("fail", message)
        self.error = error
        self.pending.clear()

    def cancel(self, message: str | None = None) -> bool:
        """Cancel a live task (and its handler); False, changing nothing, if it had ended."""
        if self.terminal:
            return False
        self._move("cancel", message)
        self.pending.clear()
        if self.scope is not None:
            self.scope.cancel()
        self._wakeup()
        return True

    def _wakeup(self) -> None:
        if self._wake is not None:
            self._wake.set()
            self._wake = None

    async def wait_answers(self, keys: list[str]) -> dict[str, JSONValue]:
        """Wait until every one of ``keys`` is answered; hand the answers over."""
        while any(key not in self.answers for key in keys):
            if self.terminal:  # cancelled: its scope is too, so the checkpoint raises
                from anyio.lowlevel import checkpoint

                await checkpoint()
                raise JSONRPCError(ErrorCode.INTERNAL_ERROR, f"The task is {self.status}")
            if self._wake is None:
                self._wake = anyio.Event()
            await self._wake.wait()
        return {key: self.answers.pop(key) for key in keys}

    def to_json(self, *, detailed: bool = True) -> JSONObject:
        """The wire ``Task``; ``detailed`` adds what its status inlines (``DetailedTask``)."""
        out: JSONObject = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": _iso(self.created_at),
            "lastUpdatedAt": _iso(self.updated_at),
            "ttlMs": self.ttl_ms,
        }
        if self.poll_interval_ms is not None:
            out["pollIntervalMs"] = self.poll_interval_ms
        if self.status_message is not None:
            out["statusMessage"] = self.status_message
        if detailed:
            if self.status == "input_required":
                out["inputRequests"] = dict(self.pending)
            elif self.status == "completed" and self.result is not None:
                out["result"] = self.result
            elif self.status == "failed" and self.error is not None:
                out["error"] = self.error
        return out

    def create_result(self) -> JSONObject:
        """The ``CreateTaskResult``: ``Result & Task``, flat, ``resultType: "task"``."""
        out = self.to_json(detailed=False)
        out["resultType"] = "task"
        return out


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
        # Insertion order is creation order, and with one TTL for all, expiry order.
        self._tasks: dict[str, Task] = {}
        self._host: anyio.abc.TaskGroup | None = None

    def __len__(self) -> int:
        return len(self._tasks)

    def __contains__(self, task_id: object) -> bool:
        return isinstance(task_id, str) and task_id in self._tasks

    def create(self) -> Task:
        """A new ``working`` task, stored before anyone hears of it."""
        self.sweep()
        if len(self._tasks) >= self.max_tasks:
            oldest = next((t for t in self._tasks.values() if t.terminal), None)
            if oldest is None:
                raise TaskStoreFull(self.max_tasks)
            del self._tasks[oldest.task_id]
        task_id = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode("ascii")
        expires = None if self.ttl_ms is None else self.clock() + self.ttl_ms / 1000
        task = Task(
            task_id,
            self.wall_clock(),
            self.ttl_ms,
            self.poll_interval_ms,
            expires,
            wall_clock=self.wall_clock,
        )
        self._tasks[task_id] = task
        return task

    def get(self, task_id: JSONValue) -> Task:
        """The task, or -32602 when the id is unknown or the task expired (SEP-2663)."""
        if not isinstance(task_id, str):
            raise JSONRPCError(ErrorCode.INVALID_PARAMS, "taskId must be a string")
        self.sweep()
        task = self._tasks.get(task_id)
        if task is None:
            raise JSONRPCError(ErrorCode.INVALID_PARAMS, "Failed to retrieve task: Task not found")
        return task

    def sweep(self) -> int:
        """Drop expired tasks (cancelling the handlers of live ones); how many were dropped."""
        now = self.clock()
        dropped = 0
        while self._tasks:
            task = next(iter(self._tasks.values()))
            if task.expires is None or task.expires > now:
                break
            del self._tasks[task.task_id]
            task.cancel("The task expired")
            dropped += 1
        return dropped

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


# -- running a tools/call as a task ---------------------------------------------------------

Invoke = Callable[["Context"], Awaitable[JSONObject]]


def _error_object(exc: JSONRPCError) -> JSONObject:
    error: JSONObject = {"code": exc.code, "message": exc.message}
    if exc.data is not None:
        error["data"] = exc.data
    return error


class TaskRun:
    """One task-eligible ``tools/call``: its handler, and its task once started."""

    def __init__(self, store: TaskStore, support: str) -> None:
        self.store = store
        self.support = support
        self.task: Task | None = None
        self.scope = anyio.CancelScope()
        self.launched = anyio.Event()
        #: How the request answers: ("task" | "result", JSONObject) | ("raise", exception).
        self.outcome: tuple[str, object] | None = None

    def _launch(self, kind: str, value: object) -> None:
        if self.outcome is None:
            self.outcome = (kind, value)
            self.launched.set()

    async def start(self) -> bool:
        """Become a task (``ctx.start_task()``); False when a full store leaves it synchronous."""
        if self.task is not None:
            return True
        try:
            task = self.store.create()
        except TaskStoreFull:
            if self.support == "required":
                raise
            return False
        task.scope = self.scope
        self.task = task
        self._launch("task", task.create_result())  # the seed state, as it is now
        return True

    @property
    def cancelled(self) -> bool:
        return self.scope.cancel_called

    async def note(self, message: str) -> None:
        if self.task is not None:
            self.task.note(message)
            await self.store.publish(self.task)

    async def ask(self, asks: dict[str, JSONObject]) -> dict[str, JSONValue]:
        """Park the task on ``asks`` until ``tasks/update`` answers them all."""
        task = self.task
        assert task is not None
        wire = {task.mint_key(key): key for key in asks}
        task.need_input({w: asks[key] for w, key in wire.items()})
        await self.store.publish(task)
        answers = await task.wait_answers(list(wire))
        return {key: answers[w] for w, key in wire.items()}

    async def main(self, invoke: Invoke, ctx: Context) -> None:
        """The handler, in the host group: settle the task, or hand the outcome to the request."""
        cancelled = anyio.get_cancelled_exc_class()
        outcome: tuple[str, object] | None = None
        try:
            with self.scope:
                try:
                    outcome = ("result", await invoke(ctx))
                except cancelled:
                    raise
                except Exception as exc:
                    outcome = ("raise", exc)
        except cancelled:
            # The host is stopping (server shutdown, or the hosting connection closed).
            if self.task is not None:
                self.task.cancel("The server stopped before the task finished")
            self._launch("raise", JSONRPCError(ErrorCode.INTERNAL_ERROR, "The server stopped"))
            raise
        task = self.task
        if task is None:
            abandoned = JSONRPCError(ErrorCode.INTERNAL_ERROR, "The request was cancelled")
            self._launch(*(outcome or ("raise", abandoned)))
            return
        if task.terminal:  # cancelled or expired meanwhile: that settles it
            return
        kind, value = outcome or ("raise", JSONRPCError(ErrorCode.INTERNAL_ERROR, "Cancelled"))
        if kind == "result" and isinstance(value, dict):
            value.setdefault("resultType", "complete")
            task.complete(value)
        elif isinstance(value, JSONRPCError):
            task.fail(_error_object(value), f"The request failed: {value.message}")
        else:
            error = JSONRPCError(ErrorCode.INTERNAL_ERROR, f"Internal error: {value!r}")
            task.fail(_error_object(error), error.message)
        await self.store.publish(task)


async def call_tool(call: Call, support: str, manual: bool, invoke: Invoke) -> JSONObject:
    """Serve a modern ``tools/call`` of a tool with task support (see the module docstring)."""
    if not declares_tasks(call.client_capabilities):
        if support == "required":
            raise missing_tasks_capability()
        return await invoke(call.context())
    store = call.server.tasks
    host = store.host or call.conn.task_host
    ctx = call.context()
    if host is None:  # no task group to outlive the request: answer in place
        return await invoke(ctx)
    run = TaskRun(store, support)
    ctx.task_run = run
    if not manual:
        if not await run.start():
            return await invoke(ctx)  # the store is full: an optional task runs in place
        host.start_soon(run.main, invoke, ctx)
        assert run.task is not None
        return run.task.create_result()
    # Manual start: the handler runs in the host from the beginning, and this
    # request waits for whichever comes first: start_task(), a result, an error.
    host.start_soon(run.main, invoke, ctx)
    try:
        await run.launched.wait()
    except anyio.get_cancelled_exc_class():
        if run.task is None:
            run.scope.cancel()  # the request went away before the handler became a task
        raise
    assert run.outcome is not None
    kind, value = run.outcome
    if kind == "raise" and isinstance(value, BaseException):
        raise value
    assert isinstance(value, dict)
    return value  # the CreateTaskResult, or the handler's result when it never became a task


# -- the tasks/* methods ---------------------------------------------------------------------


def _gate(call: Call) -> Task:
    # Non-declaring requests get -32021 before anything else (SEP-2663 "Error Handling").
    if not declares_tasks(call.client_capabilities):
        raise missing_tasks_capability()
    return call.server.tasks.get(call.params.get("taskId"))


async def tasks_get(call: Call) -> JSONObject:
    return _gate(call).to_json(detailed=True)


async def tasks_update(call: Call) -> JSONObject:
    task = _gate(call)
    responses = call.params.get("inputResponses")
    if not isinstance(responses, dict):
        raise JSONRPCError(ErrorCode.INVALID_PARAMS, "inputResponses must be an object")
    for key, response in responses.items():
        if key in task.pending and not isinstance(response, dict):
            raise JSONRPCError(
                ErrorCode.INVALID_PARAMS, f"inputResponses[{key!r}] is not an object"
            )
    if task.answer(responses):
        await call.server.tasks.publish(task)
    return {}


async def tasks_cancel(call: Call) -> JSONObject:
    task = _gate(call)
    if task.cancel("Cancelled at the client's request"):
        await call.server.tasks.publish(task)
    return {}


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
