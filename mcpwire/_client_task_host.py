"""The client as the receiver of 2025-11-25 task-augmented requests.

Theory of operation
-------------------
In 2025-11-25 either side may create tasks (``tasks.mdx`` "Definitions"). A
``Client(tasks=True)`` connected at that revision declares
``tasks {list, cancel, requests}`` with ``sampling.createMessage`` and
``elicitation.create`` for the callbacks it has (``_handshake.capabilities``).
A server may then send such a request with ``params.task``: the client
answers ``CreateTaskResult {task}`` at once and runs the callback in its own
task group, so a person may take longer to answer than any request timeout;
the server polls ``tasks/get`` and collects the answer with ``tasks/result``
(blocking until the callback returns; a callback's ``JSONRPCError`` is what
``tasks/result`` answers), may list the tasks and cancel one (which cancels
the callback). The methods are the server's own (``_task_legacy``'s cores)
over a ``TaskStore`` of the client's, whose tasks belong to this connection.

A request with ``task`` for a type the client did not declare is answered in
place, ignoring it, and ``tasks/*`` from a server are -32601 unless declared
(``tasks.mdx`` "Task Support and Handling").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from ._asks import answer
from ._errors import JSONRPCError
from ._task_legacy import (
    cancel_task,
    client_receives,
    get_task,
    list_tasks,
    requested_ttl,
    task_result,
)
from ._tasks import TaskStore
from ._versions import LEGACY_TASKS_VERSION, at_least
from .sansio._json import JSONObject
from .sansio._messages import ErrorCode, Request

if TYPE_CHECKING:
    from ._client import Client
    from ._task_runs import Task

__all__ = ("receive",)

#: Tasks a client keeps for its server; items per ``tasks/list`` page.
MAX_TASKS = 100
PAGE_SIZE = 50


def _store(client: Client) -> TaskStore:
    store = client._task_store
    if store is None:
        store = client._task_store = TaskStore(poll_interval_ms=500, max_tasks=MAX_TASKS)
    return store


async def _run(client: Client, task: Task, method: str, params: JSONObject) -> None:
    assert task.scope is not None
    with task.scope:
        try:
            result = await answer(client, method, params)
        except Exception as exc:  # its JSON-RPC error, or -32603 for a callback's bug
            if not task.terminal:
                task.fail_with(exc)
            return
        if not task.terminal:
            task.complete(result)


async def receive(client: Client, request: Request) -> JSONObject:
    """Answer a server's task-augmented request, or one of its ``tasks/*`` requests."""
    method, params = request.method, request.params or {}
    declared = client.tasks and at_least(client.protocol_version, LEGACY_TASKS_VERSION)
    if method.startswith("tasks/"):
        if not declared:
            raise JSONRPCError(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}")
        store = _store(client)
        if method == "tasks/get":
            return get_task(store, params, client)
        if method == "tasks/result":
            return await task_result(store, params, client)
        if method == "tasks/list":
            return list_tasks(store, params, client, PAGE_SIZE)
        if method == "tasks/cancel":
            return cancel_task(store, params, client)[1]
        raise JSONRPCError(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}")
    inner = {k: v for k, v in params.items() if k != "task"}
    capabilities = client._capabilities(client.protocol_version)
    group = client._tg
    if not declared or not client_receives(capabilities, method) or group is None:
        return await answer(client, method, inner)  # the task is ignored, as the spec says
    # A full store raises TaskStoreFull, which the server hears as -32603.
    task = _store(client).create(ttl_ms=requested_ttl(params["task"]), conn=client)
    task.scope = anyio.CancelScope()
    group.start_soon(_run, client, task, method, inner, name=f"client task {task.task_id}")
    return {"task": task.to_json(legacy=True)}
