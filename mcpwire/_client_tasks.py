"""The client's side of the tasks extension (SEP-2663, ``io.modelcontextprotocol/tasks``).

Theory of operation
-------------------
A client declares the extension in the modern envelope's client
capabilities (``extensions: {"io.modelcontextprotocol/tasks": {}}``): on
every request with ``Client(tasks=True)``, or for one call with
``call_tool(..., task=True)``. The server alone decides whether a
``tools/call`` becomes a task; when it does, it answers with a
``CreateTaskResult`` (``resultType: "task"``), and ``call_tool`` awaits the
task (``await_task``) so that a task-required tool is transparent:

* poll ``tasks/get``, sleeping the task's ``pollIntervalMs`` between polls
  (SEP-2663 "Polling"), until the status is terminal; where the server
  offers it, a ``subscriptions/listen`` for the task's id ends each sleep as
  soon as ``notifications/tasks`` says the task changed (the poll interval
  stays the backstop, and one ``tasks/get`` follows the acknowledgement, for a
  change that came before the stream did);
* answer an ``input_required`` task's ``inputRequests`` with the client's
  elicitation/sampling/roots callbacks (the same ones that answer legacy asks
  and multi-round trips) through ``tasks/update``; keys are unique over the
  task's lifetime, so each is answered once;
* ``completed`` inlines the ``CallToolResult``; ``failed`` inlines the
  JSON-RPC error, raised as ``JSONRPCError``; ``cancelled`` raises
  ``TaskCancelled``.

The wait is bounded by the call's ``timeout`` (else the session's maximum
request timeout, the bound progress can stretch a synchronous call to); at
its end ``RequestTimeout`` says what the transport knows of why no answer
came, as a plain request's does (``timed_out``: a stdio line over the size
limit still being dropped may hold the poll's answer). A
wait that ends any other way than a terminal status (the caller cancelled,
the deadline passed, a callback raised) sends ``tasks/cancel``, shielded and
best-effort, so an abandoned task does not run on until its TTL. A caller
cancelled before the ``CreateTaskResult`` arrives cancels only the
``tools/call`` request (``notifications/cancelled``): the client never
learned a task id it could name. Should the ``CreateTaskResult`` arrive after
all (it was already on its way, or the server made the task just as the
call timed out), the session hands the late answer to ``_on_late_response``,
which sends the ``tasks/cancel`` the caller could not: a task nobody holds
the id of would otherwise run on until its TTL.

The ``tasks/*`` methods always declare the extension (the server answers
-32021 otherwise). Over HTTP they carry ``Mcp-Name: <taskId>``
(``mcpwire._http_client_headers.NAME_PARAMS``). There is no ``tasks/list``
in SEP-2663: a task id is a bearer token the caller keeps.

2025-11-25 tasks
----------------
The same methods speak 2025-11-25's experimental tasks on a legacy
connection at that revision, where the client decides: ``start_tool_task``
sends ``params.task`` (with ``ttl_ms`` as ``ttl``) if the server's
``tasks.requests.tools.call`` capability allows, and reads ``{task}``;
``call_tool`` does the same and awaits, with ``task=True`` or for a tool
that requires tasks (learnt once with ``tools/list`` from a server offering
them). ``await_task`` polls ``tasks/get`` at the task's ``pollInterval``
(a ``notifications/tasks/status`` for the task ends the wait early) until it
ends or needs input, then asks ``tasks/result``,
which blocks until the end while the server's asks arrive as ordinary
requests (the client's callbacks answer them) and returns the
``CallToolResult`` or raises the call's ``JSONRPCError``. ``list_tasks``
and ``task_result`` exist only here; ``update_task`` only in the extension.
Earlier revisions have no tasks: the methods raise ``MCPWireError`` before
anything is sent.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, cast

import anyio

from ._asks import answer, send_tool_call
from ._errors import JSONRPCError, MCPWireError, error_from_object
from ._handshake import declaring_tasks
from ._pending import timed_out
from ._types import CallToolResult, Task, poll_seconds
from ._versions import LEGACY_TASKS_VERSION, at_least
from .sansio._json import JSONObject, JSONValue, dig
from .sansio._messages import ErrorCode, Response

if TYPE_CHECKING:
    from ._client import Client
    from ._session import ProgressCallback

__all__ = (
    "TaskCancelled",
    "TaskMethods",
    "await_task",
    "call_as_required",
    "legacy_task_wanted",
    "legacy_tool_task",
)

logger = logging.getLogger("mcpwire.client")

#: Seconds a best-effort ``tasks/cancel`` may take when a wait is abandoned.
_CANCEL_GRACE = 5.0

StatusCallback = Callable[[Task], Awaitable[None]]


class TaskCancelled(MCPWireError):
    """The task ended ``cancelled`` (by ``tasks/cancel`` from anyone, or the server)."""

    def __init__(self, task: Task) -> None:
        detail = f": {task.status_message}" if task.status_message else ""
        super().__init__(f"task {task.task_id} was cancelled{detail}")
        self.task = task


def _task_id(task: str | Task) -> str:
    task_id = task.task_id if isinstance(task, Task) else task
    if not isinstance(task_id, str) or not task_id:
        raise ValueError("a task id is a non-empty string")
    return task_id


def _modern_only(client: Client, what: str) -> None:
    if client.era != "modern":
        raise MCPWireError(
            f"{what}: the tasks extension (SEP-2663) exists only in the 2026-07-28 era; "
            f"this connection speaks {client.protocol_version or client.era}"
        )


def _legacy(client: Client, what: str, *need: str) -> bool:
    """True on a legacy connection with 2025-11-25 tasks offering ``need``
    (a path into the server's ``tasks`` capability); False on a modern one."""
    if client.era == "modern":
        return False
    if not at_least(client.protocol_version, LEGACY_TASKS_VERSION):
        raise MCPWireError(
            f"{what}: tasks exist in {LEGACY_TASKS_VERSION} and, as an extension, in 2026-07-28; "
            f"this connection speaks {client.protocol_version or client.era}"
        )
    if not _offers(client, need):
        raise MCPWireError(f"{what}: the server does not offer tasks.{'.'.join(need)}")
    return True


def _offers(client: Client, need: tuple[str, ...]) -> bool:
    """Whether the server's 2025-11-25 ``tasks`` capability has the path ``need``."""
    return isinstance(dig(client.server_capabilities, "tasks", *need), dict)


async def call_as_required(
    client: Client,
    name: str,
    arguments: JSONObject,
    timeout: float | None,
    on_progress: ProgressCallback | None,
    task: bool | None,
) -> CallToolResult:
    """``client.call_tool``, made a task when the tool requires one and ``task`` is
    ``None``, whatever the client declares by default (the hub calls this way).

    A legacy call does so by itself (``execution.taskSupport``). 2026-07-28 lists
    no task support: a server that requires a task refuses an undeclaring call
    with -32021 naming the tasks extension, before running anything, and the call
    is made once more declaring it."""
    try:
        return await client.call_tool(
            name, arguments, timeout=timeout, on_progress=on_progress, task=task
        )
    except JSONRPCError as exc:
        if task is not None or not _wants_tasks(exc):
            raise
    return await client.call_tool(
        name, arguments, timeout=timeout, on_progress=on_progress, task=True
    )


def _wants_tasks(exc: JSONRPCError) -> bool:
    """Whether ``exc`` is -32021 for the tasks extension (SEP-2575's shape)."""
    from ._tasks import TASKS_EXTENSION

    if exc.code != ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY:
        return False
    extensions = dig(exc.data, "requiredCapabilities", "extensions")
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


async def legacy_task_wanted(client: Client, name: str, task: bool | None) -> bool:
    """Whether a legacy ``call_tool`` goes as a 2025-11-25 task: asked for, or (``None``)
    the tool requires it, which a server offering tasks is asked once (``tools/list``,
    shared with the concurrent first calls: ``ToolListing``)."""
    # Where the revision or the server has no tasks, the call runs in place.
    if task is False or not at_least(client.protocol_version, LEGACY_TASKS_VERSION):
        return False
    if not _offers(client, ("requests", "tools", "call")):
        return False
    if task is None and name not in client._task_support:
        # One listing for every first call in flight, and for learning output
        # schemas too (_client_learn); a server that cannot list: as asked.
        return await client._tool_listing.task_support(client, name) == "required"
    return bool(task) or client._task_support.get(name) == "required"


async def legacy_tool_task(
    client: Client,
    params: JSONObject,
    timeout: float | None,
    on_progress: ProgressCallback | None,
    ttl_ms: int | None = None,
) -> JSONObject:
    """A 2025-11-25 task-augmented ``tools/call``, awaited: the ``CallToolResult``."""
    made = await _start_legacy(client, params, timeout, on_progress, ttl_ms)
    if isinstance(made, Task):
        return await _await_legacy(client, made, timeout, None)
    return made


async def _start_legacy(
    client: Client,
    params: JSONObject,
    timeout: float | None,
    on_progress: ProgressCallback | None,
    ttl_ms: int | None,
) -> Task | JSONObject:
    """Send ``tools/call`` with ``task``: the ``Task`` made, or the result of a server
    that processed the call normally (the spec lets one that offers no tasks)."""
    params = {**params, "task": {} if ttl_ms is None else {"ttl": ttl_ms}}
    raw = await send_tool_call(client, params, timeout, on_progress)
    made = raw.get("task")
    if not isinstance(made, dict):
        return raw
    task = Task.from_json(made)
    if not task.task_id:
        raise MCPWireError("the server answered with a task that has no taskId")
    return task


async def _await_legacy(
    client: Client, task: Task, timeout: float | None, on_status: StatusCallback | None
) -> JSONObject:
    """Poll a 2025-11-25 task until it ends or needs input, then ``tasks/result``."""
    limit = client.session.max_request_timeout if timeout is None else timeout
    current, finished = task, False
    try:
        with anyio.move_on_after(limit) as deadline:
            while not current.terminal and current.status != "input_required":
                # The poll interval, cut short by the task's status notification.
                woken = client._task_polls.setdefault(current.task_id, anyio.Event())
                with anyio.move_on_after(poll_seconds(current.poll_interval_ms)):
                    await woken.wait()
                previous, current = current, await client.get_task(current.task_id)
                if on_status is not None and (
                    current.status != previous.status
                    or current.status_message != previous.status_message
                ):
                    await on_status(current)
            if current.status == "cancelled":
                finished = True
                raise TaskCancelled(current)
            try:
                # Blocks until the task ends; its asks come meanwhile, on this stream.
                raw = await client.request(
                    "tasks/result", {"taskId": current.task_id}, timeout=None
                )
            except JSONRPCError:
                finished = True
                current = await client.get_task(current.task_id)
                if current.status == "cancelled":
                    raise TaskCancelled(current) from None
                raise
            finished = True
        if deadline.cancelled_caught and not finished:
            raise timed_out(client.session.transport, "tools/call", limit)
    finally:
        client._task_polls.pop(current.task_id, None)
        if not finished:
            await _cancel_quietly(client, current.task_id)
    return raw


def _outcome(task: Task) -> JSONObject:
    """A terminal task's ``CallToolResult`` (wire form), or its error raised."""
    if task.status == "completed":
        if task.result is None:
            raise MCPWireError(f"task {task.task_id} completed without a result")
        return task.result
    if task.status == "failed":
        raise error_from_object(task.error, task.status_message or "The task failed")
    raise TaskCancelled(task)


async def _answers(client: Client, task: Task, answered: set[str]) -> dict[str, JSONObject]:
    """Answers to the task's outstanding ``inputRequests`` not answered before."""
    responses: dict[str, JSONObject] = {}
    for key, ask in (task.input_requests or {}).items():
        if key in answered or not isinstance(ask, dict):
            continue
        method, params = ask.get("method"), ask.get("params")
        if isinstance(method, str):
            responses[key] = await answer(
                client, method, params if isinstance(params, dict) else {}
            )
    return responses


async def _cancel_quietly(client: Client, task_id: str) -> None:
    """``tasks/cancel`` for an abandoned wait: shielded, bounded, errors ignored."""
    with anyio.CancelScope(shield=True), anyio.move_on_after(_CANCEL_GRACE):
        try:
            await client.cancel_task(task_id)
        except (MCPWireError, OSError):
            pass  # unknown, expired or unreachable: nothing more to do


async def await_task(
    client: Client,
    task: Task,
    *,
    timeout: float | None = None,
    on_status: StatusCallback | None = None,
) -> JSONObject:
    """Poll ``task`` to its end, answering its asks; its ``CallToolResult`` (wire form)."""
    if not task.task_id:
        raise MCPWireError("the server answered with a task that has no taskId")
    limit = client.session.max_request_timeout if timeout is None else timeout
    current, answered = task, set[str]()
    finished = False
    try:
        with anyio.move_on_after(limit) as deadline:
            async with _updates(client, task.task_id) as until_update:
                while not current.terminal:
                    responses: dict[str, JSONObject] = {}
                    if current.status == "input_required":
                        responses = await _answers(client, current, answered)
                    if responses:
                        await client.update_task(current.task_id, responses)
                        answered.update(responses)
                    else:
                        await until_update(poll_seconds(current.poll_interval_ms))
                    previous, current = current, await client.get_task(current.task_id)
                    if on_status is not None and (
                        current.status != previous.status
                        or current.status_message != previous.status_message
                    ):
                        await on_status(current)
            finished = True
        if deadline.cancelled_caught and not finished:
            raise timed_out(client.session.transport, "tools/call", limit)
    finally:
        if not finished:
            await _cancel_quietly(client, current.task_id)
    return _outcome(current)


@asynccontextmanager
async def _updates(
    client: Client, task_id: str
) -> AsyncIterator[Callable[[float], Awaitable[None]]]:
    """``until_update(seconds)``: sleep ``seconds``, or less when the server says
    the task changed (``notifications/tasks`` on a listen stream for it, where
    the server offers one); the poll interval stays the backstop."""
    from ._listen import Subscription

    async def sleep(seconds: float) -> None:
        await anyio.sleep(seconds)

    try:
        listen = client.listen(task_ids=[task_id])
        sub: Subscription = await listen.__aenter__()
    except (MCPWireError, TimeoutError) as exc:  # no listen here (or not for tasks): poll
        logger.debug("no task notifications for %s, polling: %s", task_id, exc)
        yield sleep
        return
    try:
        honored = sub.honored.get("taskIds")
        if not isinstance(honored, list) or task_id not in honored:
            yield sleep
            return

        fresh = [True]

        async def until_update(seconds: float) -> None:
            if fresh:  # a change before the stream was acknowledged sent nothing to it
                fresh.clear()
                return
            with anyio.move_on_after(seconds):
                async for note in sub:
                    if note.method == "notifications/tasks":
                        return
                await anyio.sleep_forever()  # the stream ended: the interval decides

        yield until_update
    finally:
        await listen.__aexit__(None, None, None)


def _client(mixin: TaskMethods) -> Client:
    # The mixin's methods live here to keep ``Client``'s module small; they are
    # only ever bound to a ``Client``.
    return cast("Client", mixin)


class TaskMethods:
    """The tasks extension's methods, mixed into ``Client``."""

    async def start_tool_task(
        self,
        name: str,
        arguments: JSONObject | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        ttl_ms: int | None = None,
    ) -> Task | CallToolResult:
        """Call a tool as a task, and return without waiting.

        Extension (SEP-2663): the call declares it and the server alone
        decides: a ``Task`` handle when it made a task (then
        ``await_task``/``get_task``/``update_task``/``cancel_task``), or the
        ``CallToolResult`` when it answered in place; multi-round-trip asks
        before the task starts are answered as for ``call_tool``. 2025-11-25:
        the call asks for a task (lasting ``ttl_ms``, if given, which the
        server may shorten), and gets one unless the tool forbids it (-32601).
        """
        client = _client(self)
        params: JSONObject = {"name": name, "arguments": arguments or {}}
        if _legacy(client, "start_tool_task", "requests", "tools", "call"):
            made = await _start_legacy(client, params, timeout, on_progress, ttl_ms)
            return made if isinstance(made, Task) else CallToolResult.from_json(made)
        with declaring_tasks(True):
            raw = await send_tool_call(client, params, timeout, on_progress)
        if raw.get("resultType") == "task":
            return Task.from_json(raw)
        return CallToolResult.from_json(raw)

    async def await_task(
        self,
        task: str | Task,
        *,
        timeout: float | None = None,
        on_status: StatusCallback | None = None,
    ) -> CallToolResult:
        """Wait for a tool task's end, answering its input requests with the callbacks.

        Returns the ``CallToolResult`` of a ``completed`` task; raises the
        ``JSONRPCError`` of a ``failed`` one and ``TaskCancelled`` for a
        ``cancelled`` one. ``timeout`` bounds the whole wait (default: the
        session's maximum request timeout); ``on_status`` hears each change of
        status or status message. A wait abandoned before the end (cancelled,
        timed out, a callback raised) cancels the task.
        """
        client = _client(self)
        if isinstance(task, str):
            task = await self.get_task(task)
        if _legacy(client, "await_task"):
            raw = await _await_legacy(client, task, timeout, on_status)
            return CallToolResult.from_json(raw)
        with declaring_tasks(True):
            raw = await await_task(client, task, timeout=timeout, on_status=on_status)
        return CallToolResult.from_json(raw)

    def _on_late_response(self, method: str, response: Response) -> None:
        """The session's ``on_late_response``: cancel a task made for a call given up on."""
        result = response.result
        if method != "tools/call":
            return
        # The extension's task is the result itself; 2025-11-25's is under "task".
        if result.get("resultType") == "task":
            task_id = result.get("taskId")
        else:
            task_id = dig(result, "task", "taskId")
        group = _client(self)._tg
        if isinstance(task_id, str) and task_id and group is not None:
            group.start_soon(_cancel_quietly, _client(self), task_id, name="late tasks/cancel")

    async def _task_request(
        self, method: str, task: str | Task, extra: JSONObject | None = None, *need: str
    ) -> JSONObject:
        client = _client(self)
        params: JSONObject = {"taskId": _task_id(task), **(extra or {})}
        if _legacy(client, method, *need):
            return await client.request(method, params)
        with declaring_tasks(True):
            return await client.request(method, params)

    async def get_task(self, task: str | Task) -> Task:
        """``tasks/get``: the task now (the extension inlines what its status has)."""
        return Task.from_json(await self._task_request("tasks/get", task))

    async def update_task(self, task: str | Task, responses: Mapping[str, JSONObject]) -> None:
        """``tasks/update``: answer some or all of an ``input_required`` task's requests
        (the extension only)."""
        _modern_only(_client(self), "update_task")
        answers: dict[str, JSONValue] = dict(responses)
        await self._task_request("tasks/update", task, {"inputResponses": answers})

    async def cancel_task(self, task: str | Task) -> None:
        """``tasks/cancel``: stop the task. The extension acknowledges a task that had
        already ended the same; 2025-11-25 answers -32602 (``JSONRPCError``)."""
        await self._task_request("tasks/cancel", task, None, "cancel")

    async def task_result(
        self, task: str | Task, *, timeout: float | None = None
    ) -> CallToolResult:
        """2025-11-25 ``tasks/result``: wait for the task's end (its asks are answered
        meanwhile) and return its ``CallToolResult``, or raise its ``JSONRPCError``."""
        client = _client(self)
        if not _legacy(client, "task_result"):
            raise MCPWireError("task_result: tasks/result exists only in 2025-11-25")
        params: JSONObject = {"taskId": _task_id(task)}
        return CallToolResult.from_json(
            await client.request("tasks/result", params, timeout=timeout)
        )

    async def list_tasks(self) -> list[Task]:
        """2025-11-25 ``tasks/list``: every task the server shows this client, all pages."""
        client = _client(self)
        if not _legacy(client, "list_tasks", "list"):
            raise MCPWireError("list_tasks: tasks/list exists only in 2025-11-25")
        tasks: list[Task] = []
        async for page in client._pages("tasks/list", "tasks", "tasks", False):
            tasks.extend(Task.from_json(t) for t in page)
        return tasks
