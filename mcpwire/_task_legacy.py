"""Tasks of the 2025-11-25 revision (experimental, in the core spec) on the server.

Theory of operation
-------------------
The requestor decides (``tasks.mdx`` "User Interaction Model"): a
``tools/call`` whose params carry ``task: {ttl?}`` is answered at once with
``CreateTaskResult {task}`` while the tool runs on in the server's task host
(the same ``TaskStore`` and hosting as the 2026 extension's tasks). What
mcpwire's ``task=`` tool option means in this revision:

* ``"forbidden"`` (the default): a task-augmented call gets -32601, as the
  spec's tool-level negotiation says; ``tools/list`` shows no ``execution``.
* ``"optional"``: either way; ``"required"``: a call without ``task`` gets
  -32601 (``execution.taskSupport`` tells clients so in ``tools/list``).

The server declares ``tasks {list, cancel, requests.tools.call}`` when a
2025-11-25 client connects and some tool allows tasks; a server without such
a tool ignores ``task`` params (the spec's "process requests normally").
Earlier revisions know nothing of tasks and every call runs in place.

Binding (``tasks.mdx`` "Security"): a task made by an authorized request
belongs to its token's owner; any other belongs to the session (connection)
that made it, and is cancelled and dropped when that session ends. So
``tasks/list`` only ever shows the caller's own tasks, and ids, 128 random
bits, are not the only guard.

The lifecycle: ``tasks/get`` and ``tasks/list`` show the ``Task`` (``ttl`` is
what the client asked for, capped at the store's; ``pollInterval`` the
store's); ``tasks/cancel`` cancels a live task's handler and answers with the
cancelled task, -32602 for a terminal one; ``tasks/result`` blocks until the
task ends, then answers exactly as the ``tools/call`` would have (its result,
with the ``related-task`` ``_meta``, or its JSON-RPC error; a cancelled task
gives -32603). A result with ``isError`` fails the task, as the spec says of
tool calls, and ``tasks/result`` still returns that result.

Asking the client from inside a task (``ctx.elicit``, ``ctx.sample``, ...)
moves the task to ``input_required``; the request, with the ``related-task``
``_meta``, goes out on the stream of a ``tasks/result`` for the task (which
the spec tells a requestor to call on seeing ``input_required``), waiting
for one if none is open: over HTTP that is the one stream sure to reach the
client. Progress and log notifications carry the same ``_meta`` (the
original ``progressToken`` stays valid for the task's life), and every
status change is announced with ``notifications/tasks/status`` to the
session that made the task.

Either side may make tasks in this revision. The server as requestor:
``ctx.elicit(..., task=True)`` (or ``sample``) sends ``params.task`` to a
client that declared the request type under ``tasks.requests``, polls the
client's ``tasks/get`` and takes ``tasks/result`` (``ask_as_task``). The
client as receiver (``_client_task_host``) answers the server's ``tasks/*``
with this module's store-level cores, which the server methods wrap.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Final

import anyio

from ._cursor import decode_cursor, encode_cursor
from ._errors import JSONRPCError, error_from_object
from ._tasks import TaskStore, legacy_tasks
from ._types import poll_seconds
from .sansio._json import JSONObject, JSONValue, dig
from .sansio._messages import ErrorCode

if TYPE_CHECKING:
    from ._context import Context
    from ._methods import Call
    from ._server import Connection
    from ._session import Session
    from ._task_runs import Task
    from .sansio._messages import RequestId

__all__ = (
    "RELATED_TASK",
    "LegacyTaskRun",
    "ask_as_task",
    "call_tool",
    "cancel_task",
    "client_receives",
    "get_task",
    "list_tasks",
    "requested_ttl",
    "task_result",
    "tasks_cancel",
    "tasks_get",
    "tasks_list",
    "tasks_result",
)

RELATED_TASK: Final = "io.modelcontextprotocol/related-task"

Invoke = Callable[["Context"], Awaitable[JSONObject]]


def _with_related(params: JSONObject | None, task_id: str) -> JSONObject:
    """``params`` (or a result) with the related-task ``_meta`` of ``task_id`` added."""
    out: JSONObject = dict(params or {})
    meta = out.get("_meta")
    out["_meta"] = {**(meta if isinstance(meta, dict) else {}), RELATED_TASK: {"taskId": task_id}}
    return out


class LegacyTaskRun:
    """One task-augmented ``tools/call``: its task, and the handler's ways to the client."""

    def __init__(
        self, task: Task, conn: Connection, progress_token: str | int | float | None
    ) -> None:
        self.task = task
        self.conn = conn
        self.progress_token = progress_token
        #: The ``tasks/result`` requests waiting on this task: (session, request id).
        self.streams: list[tuple[Session, RequestId]] = []
        self._stream_opened: anyio.Event | None = None
        self._asking = 0

    # -- the requestor's streams ------------------------------------------------------

    def open_stream(self, session: Session, request_id: RequestId) -> None:
        self.streams.append((session, request_id))
        if self._stream_opened is not None:
            self._stream_opened.set()
            self._stream_opened = None

    def close_stream(self, session: Session, request_id: RequestId) -> None:
        if (session, request_id) in self.streams:
            self.streams.remove((session, request_id))

    def _route(self) -> tuple[Session | None, RequestId | None]:
        """Where a message about the task goes: a ``tasks/result`` stream, else the
        session that made the task (standalone: the GET stream over HTTP)."""
        if self.streams:
            return self.streams[-1]
        return self.conn.session, None

    # -- what the handler's Context does in a task ----------------------------------------

    async def ask(self, method: str, params: JSONObject | None) -> JSONObject:
        """A server-to-client request made by the task: ``input_required`` until answered."""
        task = self.task
        self._asking += 1
        if task.status == "working":
            task.need_input({}, f"Waiting for the client to answer {method}")
            await self.announce()
        try:
            while not self.streams:
                if self._stream_opened is None:
                    self._stream_opened = anyio.Event()
                await self._stream_opened.wait()
            session, request_id = self.streams[-1]
            return await session.request(
                method, _with_related(params, task.task_id), related=request_id
            )
        finally:
            self._asking -= 1
            if not self._asking and task.status == "input_required":
                task.resume()
                await self.announce()

    async def notify(self, method: str, params: JSONObject) -> None:
        session, related = self._route()
        if session is not None and not session.closed:
            await session.notify(method, _with_related(params, self.task.task_id), related=related)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        if message is not None:
            self.task.note(message)
        if self.progress_token is None:
            return
        params: JSONObject = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.notify("notifications/progress", params)

    async def announce(self) -> None:
        """``notifications/tasks/status`` (optional in the spec) to the task's session."""
        session = self.conn.session
        if session is None or session.closed:
            return
        try:
            await session.notify("notifications/tasks/status", self.task.to_json(legacy=True))
        except Exception:  # the session is going away: polling still tells the truth
            return

    # -- running the handler -----------------------------------------------------------

    async def main(self, invoke: Invoke, ctx: Context) -> None:
        """The handler, in the host group; its outcome settles the task."""
        task = self.task
        assert task.scope is not None
        cancelled = anyio.get_cancelled_exc_class()
        result: JSONObject | None = None
        error: Exception | None = None
        try:
            with task.scope:
                try:
                    result = await invoke(ctx)
                except cancelled:
                    raise
                except Exception as exc:
                    error = exc
        except cancelled:
            if task.cancel("The server stopped before the task finished"):
                await self.announce()
            raise
        if task.terminal:  # cancelled or expired meanwhile: that settles it
            return
        if error is not None:
            task.fail_with(error)
        elif result is not None and result.get("isError") is True:
            task.fail({}, "The tool reported an error")
            task.result = result
        elif result is not None:
            task.complete(result)
        else:  # the handler's scope was cancelled, yet the task was not
            task.cancel("The handler stopped")
        await self.announce()


# -- the server as requestor: a task-augmented ask of the client -----------------------------


def client_receives(capabilities: JSONObject, method: str) -> bool:
    """Whether the client declared task-augmented ``method`` (its ``tasks.requests``)."""
    group, _, name = method.partition("/")
    return isinstance(dig(capabilities, "tasks", "requests", group, name), dict)


async def ask_as_task(
    session: Session,
    method: str,
    params: JSONObject | None,
    related: RequestId,
    ttl_ms: int | None = None,
) -> JSONObject:
    """Ask the client with a task-augmented request and wait for its outcome.

    The client answers ``CreateTaskResult`` at once; its task is polled with
    ``tasks/get`` (each a short request, so a person may take longer than any
    request timeout) until it ends or needs input, then ``tasks/result`` gives
    exactly what the request would have. A client that answered in place
    (it may ignore ``task``) has given the outcome already.
    """
    out: JSONObject = dict(params or {})
    out["task"] = {} if ttl_ms is None else {"ttl": ttl_ms}
    created = await session.request(method, out, related=related)
    made = created.get("task")
    if not isinstance(made, dict):
        return created
    task_id = made.get("taskId")
    if not isinstance(task_id, str):
        raise JSONRPCError(ErrorCode.INTERNAL_ERROR, f"{method}: the client's task has no taskId")
    seen: JSONObject = made
    try:
        while seen.get("status") in ("working", None):
            await anyio.sleep(poll_seconds(seen.get("pollInterval")))
            seen = await session.request("tasks/get", {"taskId": task_id}, related=related)
        return await session.request(
            "tasks/result", {"taskId": task_id}, related=related, timeout=None
        )
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            try:  # nobody waits for the answer any more: the client may stop asking
                await session.request("tasks/cancel", {"taskId": task_id}, related=related)
            except Exception:
                pass
        raise


# -- tools/call with a task --------------------------------------------------------------


def requested_ttl(raw: JSONValue) -> int | None:
    """The ttl asked for in ``params.task``, in ms; None when none (or ``null``) was."""
    if not isinstance(raw, dict):
        raise JSONRPCError(ErrorCode.INVALID_PARAMS, "tools/call: task must be an object")
    ttl = raw.get("ttl")
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or ttl < 0:
        raise JSONRPCError(ErrorCode.INVALID_PARAMS, "tools/call: task.ttl must be milliseconds")
    return max(int(ttl), 1)


async def call_tool(call: Call, name: str, support: str, invoke: Invoke) -> JSONObject:
    """Serve a 2025-11-25 ``tools/call`` of a server that offers tasks."""
    augmented = "task" in call.params
    if augmented and support == "forbidden":
        raise JSONRPCError(
            ErrorCode.METHOD_NOT_FOUND, f"Tool {name} does not support task-augmented calls"
        )
    if not augmented:
        if support == "required":
            raise JSONRPCError(ErrorCode.METHOD_NOT_FOUND, f"Tool {name} must be called as a task")
        return await invoke(call.context())
    ttl = requested_ttl(call.params["task"])
    store = call.server.tasks
    task = store.create(ttl_ms=ttl, conn=call.conn)  # a full store: TaskStoreFull, -32603
    task.scope = anyio.CancelScope()
    ctx = call.context()
    run = LegacyTaskRun(task, call.conn, call.rctx.progress_token)
    ctx.legacy_task = run
    task.legacy_run = run
    host = store.host or call.conn.task_host
    if host is None:  # nothing outlives the request here: run it, then answer
        await run.main(invoke, ctx)
    else:
        host.start_soon(run.main, invoke, ctx)
    return {"task": task.to_json(legacy=True)}


# -- the tasks/* methods ---------------------------------------------------------------------
#
# Each is a core over a store, the caller's connection and the params (the
# client's side of tasks, ``_client_task_host``, answers its server with the
# same cores) and a server method that first checks the revision.


def _store(call: Call) -> TaskStore:
    if not legacy_tasks(call.server, call.version):
        raise JSONRPCError(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {call.request.method}")
    return call.server.tasks


def get_task(store: TaskStore, params: JSONObject, conn: object) -> JSONObject:
    return store.get(params.get("taskId"), conn).to_json(legacy=True)


async def task_result(
    store: TaskStore,
    params: JSONObject,
    conn: object,
    stream: tuple[Session, RequestId] | None = None,
) -> JSONObject:
    """Block until the task ends; then exactly what its request would have answered.
    ``stream``: where this ``tasks/result`` can carry the task's asks meanwhile."""
    task = store.get(params.get("taskId"), conn)
    run = task.legacy_run if stream is not None else None
    if isinstance(run, LegacyTaskRun) and stream is not None:
        run.open_stream(*stream)
    try:
        await task.wait_terminal()
    finally:
        if isinstance(run, LegacyTaskRun) and stream is not None:
            run.close_stream(*stream)
    if task.result is not None:
        return _with_related(task.result, task.task_id)
    raise error_from_object(task.error, f"Task {task.task_id} was {task.status}")


def list_tasks(store: TaskStore, params: JSONObject, conn: object, page_size: int) -> JSONObject:
    cursor = params.get("cursor")
    after = 0 if cursor is None else decode_cursor("tasks", cursor)
    tasks = [t for t in store.visible(conn) if t.seq > after]
    page = tasks[:page_size]
    out: JSONObject = {"tasks": [t.to_json(legacy=True) for t in page]}
    if len(tasks) > len(page):
        out["nextCursor"] = encode_cursor("tasks", page[-1].seq)
    return out


def cancel_task(store: TaskStore, params: JSONObject, conn: object) -> tuple[Task, JSONObject]:
    task = store.get(params.get("taskId"), conn)
    if task.terminal:
        raise JSONRPCError(
            ErrorCode.INVALID_PARAMS,
            f"Cannot cancel task: already in terminal status '{task.status}'",
        )
    task.cancel("The task was cancelled by request")
    return task, task.to_json(legacy=True)


async def tasks_get(call: Call) -> JSONObject:
    return get_task(_store(call), call.params, call.conn)


async def tasks_result(call: Call) -> JSONObject:
    stream = (call.rctx.session, call.request.id)
    return await task_result(_store(call), call.params, call.conn, stream)


async def tasks_list(call: Call) -> JSONObject:
    return list_tasks(_store(call), call.params, call.conn, call.server.page_size)


async def tasks_cancel(call: Call) -> JSONObject:
    task, answer = cancel_task(_store(call), call.params, call.conn)
    if isinstance(task.legacy_run, LegacyTaskRun):
        await task.legacy_run.announce()
    return answer
