"""Tasks, and running a ``tools/call`` as one (the tasks extension, SEP-2663).

Part of the theory of operation of ``mcpwire._tasks``: ``Task`` (one task's
status diagram, its outstanding input requests and its outcome), ``TaskRun``
and ``call_tool`` (a task-eligible call, answered in place or with a
``CreateTaskResult``), and the ``tasks/*`` methods. ``_tasks`` imports this
module when the first task is created or a ``tasks/*`` request arrives.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final

import anyio

from ._errors import JSONRPCError, error_object
from ._tasks import TERMINAL, TaskStore, TaskStoreFull, declares_tasks, missing_tasks_capability
from .sansio._json import JSONObject, JSONValue
from .sansio._messages import ErrorCode

if TYPE_CHECKING:
    from ._context import Context
    from ._methods import Call

__all__ = (
    "EVENTS",
    "Task",
    "TaskRun",
    "TaskStateError",
    "call_tool",
    "next_status",
    "tasks_cancel",
    "tasks_get",
    "tasks_update",
)

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
        #: Creation number in its store (expiry bookkeeping, ``tasks/list`` cursors).
        self.seq = 0
        self._ended: anyio.Event | None = None
        #: A 2025-11-25 task's ``_task_legacy.LegacyTaskRun`` (its ways to the client).
        self.legacy_run: object | None = None

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    def _move(self, event: str, message: str | None = None) -> None:
        self.status = next_status(self.status, event)
        self.updated_at = self.wall_clock()
        if message is not None:
            self.status_message = message
        if self._ended is not None and self.status in TERMINAL:
            self._ended.set()

    async def wait_terminal(self) -> None:
        """Return once the task is completed, failed or cancelled."""
        if self.status not in TERMINAL:
            if self._ended is None:
                self._ended = anyio.Event()
            await self._ended.wait()

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

    def resume(self) -> None:
        """Back to ``working`` once a 2025-11-25 task's requests are answered."""
        self._move("resume")

    def complete(self, result: JSONObject) -> None:
        self._move("complete")
        self.result = result
        self.pending.clear()

    def fail_with(self, exc: BaseException) -> None:
        """Fail with ``exc``'s JSON-RPC error (-32603 for any other exception)."""
        if not isinstance(exc, JSONRPCError):
            exc = JSONRPCError(ErrorCode.INTERNAL_ERROR, f"Internal error: {exc!r}")
        self.fail(error_object(exc), f"The request failed: {exc.message}")

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

    def to_json(self, *, detailed: bool = True, legacy: bool = False) -> JSONObject:
        """The wire ``Task``; ``detailed`` adds what its status inlines (``DetailedTask``).

        ``legacy``: the 2025-11-25 shape (``ttl``, ``pollInterval``; nothing inlined).
        """
        out: JSONObject = {
            "taskId": self.task_id,
            "status": self.status,
            "createdAt": _iso(self.created_at),
            "lastUpdatedAt": _iso(self.updated_at),
            "ttl" if legacy else "ttlMs": self.ttl_ms,
        }
        if self.poll_interval_ms is not None:
            out["pollInterval" if legacy else "pollIntervalMs"] = self.poll_interval_ms
        if self.status_message is not None:
            out["statusMessage"] = self.status_message
        if detailed and not legacy:
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


# -- running a tools/call as a task ---------------------------------------------------------

Invoke = Callable[["Context"], Awaitable[JSONObject]]


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
        else:
            assert isinstance(value, BaseException)  # "raise": what the handler raised
            task.fail_with(value)
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
