"""2025-11-25 tasks (experimental, in that revision's core) on ``mcpwire.Server`` and ``Client``.

The server half speaks raw JSON-RPC over a serialising memory pair, so the
exact wire is asserted: the ``tasks`` capability, ``execution.taskSupport``,
``CreateTaskResult {task}``, the ``Task`` fields, ``tasks/result`` returning
exactly what the call would have (with the ``related-task`` ``_meta``), the
error codes of ``tasks.mdx`` "Error Handling" and "Tool-Level Negotiation",
an elicitation delivered on the ``tasks/result`` stream, and tasks bound to
their session. The client half runs ``Client`` against the same server over
the in-memory pair, stdio and streamable HTTP. Hypothesis sweeps the store's
per-task expiry and ``tasks/list`` paging. The TypeScript SDK, a peer written
by others, talks to this server in ``test_tasks_interop.py``.
"""

from __future__ import annotations

import base64
import json
import re
import types
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from inproc import Gate, Inbox
from test_client_tasks import Names, build, connected
from test_tasks import call, error_of

import mcpwire
from mcpwire import (
    Client,
    Context,
    JSONRPCError,
    MCPWireError,
    Server,
    Session,
    TaskCancelled,
    TaskStore,
)
from mcpwire._task_legacy import RELATED_TASK, tasks_list
from mcpwire.sansio import Request

pytestmark = pytest.mark.anyio

WAIT = 10.0
V = "2025-11-25"
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"name": {"type": "string"}}}
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
CAPABILITY = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
TASK_KEYS = {"taskId", "status", "createdAt", "lastUpdatedAt", "ttl", "pollInterval"}
INITIALIZED: dict[Session, dict[str, Any]] = {}


def tasks_server(store: TaskStore | None = None) -> tuple[Server, Gate]:
    server = Server(
        "legacy-tasks", tasks=store if store is not None else TaskStore(poll_interval_ms=5)
    )
    gate = Gate()

    @server.tool(structured=False, task="optional")
    async def job(label: str = "") -> str:
        await gate.wait()
        return f"done {label}".strip()

    @server.tool(structured=False, task="required")
    async def ask_name(ctx: Context) -> str:
        answer = await ctx.elicit("What is your name?", SCHEMA)
        return f"Hello, {answer['content']['name']}!"

    @server.tool(structured=False, task="required")
    async def progress(ctx: Context) -> str:
        await gate.wait()
        await ctx.report_progress(1, 2, "half way")
        await ctx.log("info", "in a task")
        return "progressed"

    @server.tool(structured=False, task="required")
    async def tool_error() -> str:
        raise mcpwire.ToolError("it ran and failed")

    @server.tool(structured=False, task="required")
    async def rpc_error() -> str:
        raise JSONRPCError(-32001, "broken on purpose", {"why": "test"})

    @server.tool(structured=False)
    def plain(message: str) -> str:
        return message

    return server, gate


class Asked:
    """The client's side of server-to-client requests: records them, answers Ada."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.arrived = anyio.Event()

    async def __call__(self, request: Request, ctx: object) -> dict[str, Any]:
        self.requests.append(request)
        self.arrived.set()
        return {"action": "accept", "content": {"name": "Ada"}}


@asynccontextmanager
async def serving(
    server: Server, version: str = V, asked: Asked | None = None
) -> AsyncIterator[tuple[Session, Inbox]]:
    """An initialized legacy session with ``server`` over a serialising memory pair
    (the ``initialize`` result is in ``INITIALIZED[session]``)."""
    client_end, server_end = mcpwire.memory_pair(wire=True)
    inbox = Inbox()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, server_end)
            async with Session(
                client_end, on_notification=inbox, on_request=asked or Asked()
            ) as session:
                init = {
                    "protocolVersion": version,
                    "capabilities": {"elicitation": {}},
                    "clientInfo": {"name": "t", "version": "1"},
                }
                INITIALIZED[session] = await call(session, "initialize", init)
                await session.notify("notifications/initialized")
                yield session, inbox
            tg.cancel_scope.cancel()
    finally:
        inbox.close()


async def create(session: Session, name: str, ttl: Any = 60_000, **args: Any) -> dict[str, Any]:
    task = {} if ttl is None else {"ttl": ttl}
    result = await call(session, "tools/call", {"name": name, "arguments": args, "task": task})
    assert set(result) == {"task"}, result
    created: dict[str, Any] = result["task"]
    return created


async def until(session: Session, task_id: str, *statuses: str) -> dict[str, Any]:
    with anyio.fail_after(WAIT):
        while True:
            got = await session.request("tasks/get", {"taskId": task_id})
            if got["status"] in statuses:
                return got
            await anyio.sleep(0.002)


# -- negotiation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "task_tools", "declared"),
    [(V, True, True), ("2025-06-18", True, False), (V, False, False)],
)
async def test_the_capability_is_declared_at_2025_11_25_when_a_tool_allows_tasks(
    version: str, task_tools: bool, declared: bool
) -> None:
    server = tasks_server()[0] if task_tools else Server("no-tasks")
    if not task_tools:
        server.add_tool(lambda message: message, name="plain")
    async with serving(server, version) as (session, _):
        caps = INITIALIZED.pop(session)["capabilities"]
        assert caps.get("tasks") == (CAPABILITY if declared else None)


@pytest.mark.parametrize("version", [V, "2025-06-18"])
async def test_tools_list_shows_task_support_only_where_the_revision_has_it(version: str) -> None:
    async with serving(tasks_server()[0], version) as (session, _):
        tools = {t["name"]: t for t in (await call(session, "tools/list", {}))["tools"]}
    if version == V:
        assert tools["job"]["execution"] == {"taskSupport": "optional"}
        assert tools["ask_name"]["execution"] == {"taskSupport": "required"}
    else:
        assert all("execution" not in t for t in tools.values())
    assert "execution" not in tools["plain"]  # forbidden is the default: nothing shown


async def test_the_modern_era_never_shows_execution() -> None:
    server = tasks_server()[0]
    async with Client(server, mode="2026-07-28") as client:
        raw = await client.request("tools/list", {})
    assert all("execution" not in t for t in raw["tools"])


async def test_tool_level_negotiation_is_32601_both_ways() -> None:
    """tasks.mdx "Tool-Level Negotiation": forbidden + task, required without one."""
    async with serving(tasks_server()[0]) as (session, _):
        forbidden = await error_of(
            session, "tools/call", {"name": "plain", "arguments": {"message": "x"}, "task": {}}
        )
        required = await error_of(session, "tools/call", {"name": "ask_name", "arguments": {}})
        # An optional tool without ``task`` answers in place.
        assert (
            await call(session, "tools/call", {"name": "plain", "arguments": {"message": "x"}})
        )["content"] == [{"type": "text", "text": "x"}]
    assert (forbidden.code, required.code) == (-32601, -32601)
    assert "plain" in forbidden.message and "ask_name" in required.message


async def test_a_server_that_offers_no_tasks_ignores_the_task_param() -> None:
    """tasks.mdx "Task Support and Handling" 1: process the request normally."""
    server = Server("no-tasks")
    server.add_tool(lambda message: message, name="plain", structured=False)
    async with serving(server) as (session, _):
        params = {"name": "plain", "arguments": {"message": "x"}, "task": {"ttl": 5}}
        result = await call(session, "tools/call", params)
        assert result["content"] == [{"type": "text", "text": "x"}]
        assert (await error_of(session, "tasks/list", {})).code == -32601


@pytest.mark.parametrize("task", [[], "x", {"ttl": "1"}, {"ttl": -1}, {"ttl": True}])
async def test_a_malformed_task_param_is_32602(task: Any) -> None:
    async with serving(tasks_server()[0]) as (session, _):
        err = await error_of(session, "tools/call", {"name": "job", "arguments": {}, "task": task})
    assert err.code == -32602


# -- the lifecycle ------------------------------------------------------------------------------


async def test_create_get_result_list() -> None:
    server, gate = tasks_server()
    async with serving(server) as (session, _):
        created = await create(session, "job", label="a")
        assert set(created) == TASK_KEYS
        assert created["status"] == "working" and created["ttl"] == 60_000
        assert created["pollInterval"] == 5
        assert ISO.match(created["createdAt"]) and ISO.match(created["lastUpdatedAt"])
        task_id = created["taskId"]
        assert len(base64.urlsafe_b64decode(task_id + "==")) == 16  # 128 random bits
        got = await call(session, "tasks/get", {"taskId": task_id})
        assert got == created  # no related-task _meta on tasks/get (tasks.mdx)
        async with anyio.create_task_group() as tg:
            results: list[dict[str, Any]] = []

            async def fetch() -> None:
                results.append(await call(session, "tasks/result", {"taskId": task_id}))

            tg.start_soon(fetch)
            await gate.reached.wait()
            await anyio.sleep(0.01)
            assert results == []  # tasks/result blocks while the task works
            gate.go.set()
        assert results[0]["content"] == [{"type": "text", "text": "done a"}]
        assert results[0]["_meta"] == {RELATED_TASK: {"taskId": task_id}}
        done = await call(session, "tasks/get", {"taskId": task_id})
        assert done["status"] == "completed" and done["createdAt"] == created["createdAt"]
        listed = await call(session, "tasks/list", {})
        assert listed == {"tasks": [done]}
        # The result stays retrievable (until the TTL).
        again = await call(session, "tasks/result", {"taskId": task_id})
        assert again == results[0]


@pytest.mark.parametrize(
    ("store_ttl", "asked", "granted"),
    [(60_000, 1_000, 1_000), (60_000, 10**9, 60_000), (60_000, None, 60_000), (None, None, None)],
)
async def test_the_ttl_asked_for_is_capped_at_the_stores(
    store_ttl: int | None, asked: int | None, granted: int | None
) -> None:
    server, gate = tasks_server(TaskStore(ttl_ms=store_ttl))
    gate.go.set()
    async with serving(server) as (session, _):
        params = {"name": "job", "arguments": {}, "task": {"ttl": asked}}
        created = (await call(session, "tools/call", params))["task"]
        default = await create(session, "job", ttl=None)  # no ttl asked: the store's
    assert created["ttl"] == granted
    assert default["ttl"] == store_ttl


async def test_cancel_answers_the_cancelled_task_and_refuses_a_terminal_one() -> None:
    server, gate = tasks_server()
    async with serving(server) as (session, _):
        task_id = (await create(session, "job"))["taskId"]
        await gate.reached.wait()
        cancelled = await call(session, "tasks/cancel", {"taskId": task_id})
        assert cancelled["status"] == "cancelled" and cancelled["taskId"] == task_id
        assert set(cancelled) == TASK_KEYS | {"statusMessage"}
        again = await error_of(session, "tasks/cancel", {"taskId": task_id})
        assert again.code == -32602 and "cancelled" in again.message
        result = await error_of(session, "tasks/result", {"taskId": task_id})
        assert (result.code, result.message) == (-32603, f"Task {task_id} was cancelled")
        assert (await call(session, "tasks/get", {"taskId": task_id}))["status"] == "cancelled"
    assert gate.cancelled  # the handler was stopped


async def test_a_tool_error_fails_the_task_and_the_result_is_still_the_calls() -> None:
    async with serving(tasks_server()[0]) as (session, _):
        task_id = (await create(session, "tool_error"))["taskId"]
        failed = await until(session, task_id, "failed")
        assert failed["statusMessage"] == "The tool reported an error"
        result = await call(session, "tasks/result", {"taskId": task_id})
        assert result["isError"] is True
        assert result["content"] == [{"type": "text", "text": "it ran and failed"}]
        assert result["_meta"] == {RELATED_TASK: {"taskId": task_id}}


async def test_a_json_rpc_error_is_what_tasks_result_answers() -> None:
    async with serving(tasks_server()[0]) as (session, _):
        task_id = (await create(session, "rpc_error"))["taskId"]
        failed = await until(session, task_id, "failed")
        assert failed["statusMessage"] == "The request failed: broken on purpose"
        err = await error_of(session, "tasks/result", {"taskId": task_id})
    assert (err.code, err.message, err.data) == (-32001, "broken on purpose", {"why": "test"})


@pytest.mark.parametrize("method", ["tasks/get", "tasks/result", "tasks/cancel"])
@pytest.mark.parametrize("task_id", ["no-such-task", 7, None])
async def test_unknown_task_ids_are_32602(method: str, task_id: Any) -> None:
    async with serving(tasks_server()[0]) as (session, _):
        assert (await error_of(session, method, {"taskId": task_id})).code == -32602


@pytest.mark.parametrize("cursor", ["nope", 5, base64.urlsafe_b64encode(b"tools:1").decode()])
async def test_a_bad_tasks_list_cursor_is_32602(cursor: Any) -> None:
    async with serving(tasks_server()[0]) as (session, _):
        assert (await error_of(session, "tasks/list", {"cursor": cursor})).code == -32602


@pytest.mark.parametrize("method", ["tasks/get", "tasks/result", "tasks/list", "tasks/cancel"])
async def test_before_2025_11_25_there_are_no_tasks_methods(method: str) -> None:
    async with serving(tasks_server()[0], "2025-06-18") as (session, _):
        assert (await error_of(session, method, {"taskId": "t"})).code == -32601


# -- input, progress, notifications ---------------------------------------------------------------


async def test_an_elicitation_goes_out_on_the_tasks_result_stream() -> None:
    asked = Asked()
    async with serving(tasks_server()[0], asked=asked) as (session, inbox):
        task_id = (await create(session, "ask_name"))["taskId"]
        waiting = await until(session, task_id, "input_required")
        assert waiting["statusMessage"] == "Waiting for the client to answer elicitation/create"
        await anyio.sleep(0.01)
        assert asked.requests == []  # held until the requestor opens tasks/result
        result = await call(session, "tasks/result", {"taskId": task_id})
        assert result["content"] == [{"type": "text", "text": "Hello, Ada!"}]
        (request,) = asked.requests
        assert request.method == "elicitation/create"
        assert request.params is not None
        assert request.params["_meta"] == {RELATED_TASK: {"taskId": task_id}}
        assert request.params["message"] == "What is your name?"
        statuses = [n.params["status"] for n in inbox.of("notifications/tasks/status") if n.params]
    assert statuses == ["input_required", "working", "completed"]


async def test_progress_keeps_its_token_and_carries_the_related_task() -> None:
    server, gate = tasks_server()
    async with serving(server) as (session, inbox):
        params = {"name": "progress", "arguments": {}, "task": {}, "_meta": {"progressToken": "p1"}}
        task_id = (await call(session, "tools/call", params))["task"]["taskId"]
        gate.go.set()
        note = await inbox.next("notifications/progress")
        log = await inbox.next("notifications/message")
        await until(session, task_id, "completed")
    assert note.params == {
        "progressToken": "p1",
        "progress": 1,
        "total": 2,
        "message": "half way",
        "_meta": {RELATED_TASK: {"taskId": task_id}},
    }
    assert log.params is not None and log.params["_meta"] == {RELATED_TASK: {"taskId": task_id}}


async def test_tasks_belong_to_their_session_and_end_with_it() -> None:
    """tasks.mdx "Security": another session can neither see nor list them; and a
    task nobody can name any more is cancelled when its session ends."""
    server, gate = tasks_server()
    async with serving(server) as (other, _):
        async with serving(server) as (mine, _):
            task_id = (await create(mine, "job"))["taskId"]
            await gate.reached.wait()
            assert (await error_of(other, "tasks/get", {"taskId": task_id})).code == -32602
            assert (await error_of(other, "tasks/cancel", {"taskId": task_id})).code == -32602
            assert await call(other, "tasks/list", {}) == {"tasks": []}
            assert len((await call(mine, "tasks/list", {}))["tasks"]) == 1
        with anyio.fail_after(WAIT):
            while not gate.cancelled:
                await anyio.sleep(0.001)
        assert len(server.tasks) == 0


# -- the store: per-task expiry and paging, swept with hypothesis ------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@settings(max_examples=60, deadline=None)
@given(
    ttls=st.lists(st.one_of(st.none(), st.integers(1, 5_000)), max_size=30),
    steps=st.lists(st.integers(0, 3_000), max_size=8),
)
def test_every_task_expires_at_its_own_ttl_and_no_other(
    ttls: list[int | None], steps: list[int]
) -> None:
    clock = Clock()
    store = TaskStore(ttl_ms=4_000, clock=clock, max_tasks=100)
    made = []
    for ttl in ttls:
        task = store.create(ttl_ms=ttl)
        granted = 4_000 if ttl is None else min(ttl, 4_000)
        assert task.ttl_ms == granted
        made.append((task, clock.now + granted / 1000))
    for step in steps:
        clock.now += step / 1000
        store.sweep()
        for task, expires in made:
            assert (task.task_id in store) == (expires > clock.now)
            assert task.status == ("cancelled" if expires <= clock.now else "working")


@settings(max_examples=60, deadline=None)
@given(count=st.integers(0, 40), page_size=st.integers(1, 12), finished=st.sets(st.integers(0, 39)))
def test_tasks_list_pages_cover_every_task_once_in_creation_order(
    count: int, page_size: int, finished: set[int]
) -> None:
    server = tasks_server(TaskStore(max_tasks=100))[0]
    server.page_size = page_size
    mine, theirs = object(), object()
    ids = []
    for i in range(count):
        task = server.tasks.create(conn=mine)
        server.tasks.create(conn=theirs)  # never listed to ``mine``
        if i in finished:
            task.complete({"content": []})
        ids.append(task.task_id)

    def page(cursor: str | None) -> dict[str, Any]:
        params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
        call = types.SimpleNamespace(server=server, conn=mine, version=V, params=params)
        out: dict[str, Any] = {}

        async def run() -> None:
            out.update(await tasks_list(call))  # type: ignore[arg-type]

        anyio.run(run)
        return out

    seen: list[str] = []
    result = page(None)
    while True:
        assert len(result["tasks"]) <= page_size
        seen.extend(t["taskId"] for t in result["tasks"])
        if "nextCursor" not in result:
            break
        result = page(result["nextCursor"])
    assert seen == ids


# -- the client --------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["memory", "stdio", "http"])
async def test_the_client_runs_2025_11_25_tasks(transport: str, tmp_path: Path) -> None:
    """``call_tool`` makes a task of a tool ``list_tools`` saw require one, answers its
    elicitations (which come on ``tasks/result``) and returns the result; the handle
    methods work, ``list_tasks`` lists, a failed task raises its error."""
    server, _ = build(poll_interval_ms=1)
    names = Names("Ada", "Bob")
    with anyio.fail_after(WAIT * 2):
        async with connected(transport, server, tmp_path, mode=V, elicitation=names) as client:
            assert client.protocol_version == V
            assert client.server_capabilities["tasks"] == CAPABILITY
            tools = {t.name: t.task_support for t in await client.list_tools()}
            assert (tools["greet"], tools["job"]) == ("required", "optional")
            greeted = await client.call_tool("greet")
            assert greeted.content[0].text == "hello Ada and Bob"
            assert names.messages == ["Your name?", "Your friend's name?"]
            assert greeted.meta is not None and RELATED_TASK in greeted.meta
            added = await client.call_tool("add", {"a": 2, "b": 3})
            assert added.structured == {"result": 5}
            with pytest.raises(JSONRPCError) as info:
                await client.call_tool("broken")
            assert (info.value.code, info.value.data) == (-32001, {"why": "test"})
            failed = await client.call_tool("fails")
            assert failed.is_error and failed.content[0].text == "it ran and failed"
            quick = await client.start_tool_task("quick", {"label": "q"}, ttl_ms=30_000)
            assert isinstance(quick, mcpwire.Task) and quick.ttl_ms == 30_000
            assert (await client.await_task(quick)).content[0].text == "quick q"
            assert (await client.task_result(quick)).content[0].text == "quick q"
            job = await client.start_tool_task("job", {"label": "j"})
            assert isinstance(job, mcpwire.Task)
            listed = {t.task_id: t.status for t in await client.list_tasks()}
            assert listed[job.task_id] == "working" and listed[quick.task_id] == "completed"
            await client.cancel_task(job)
            assert (await client.get_task(job)).status == "cancelled"
            with pytest.raises(TaskCancelled):
                await client.await_task(job)
            with pytest.raises(JSONRPCError) as info:
                await client.cancel_task(job)  # 2025-11-25 refuses a terminal task
            assert info.value.code == -32602
            # Without task=True an optional tool runs in place.
            plain = await client.call_tool("quick", {"label": "p"})
            assert plain.meta is None and plain.content[0].text == "quick p"


async def test_a_wait_given_up_cancels_the_task() -> None:
    server, gate = build(poll_interval_ms=1)
    async with Client(server, mode=V) as client:
        job = await client.start_tool_task("job")
        assert isinstance(job, mcpwire.Task)
        with pytest.raises(mcpwire.RequestTimeout):
            await client.await_task(job, timeout=0.05)
        assert (await client.get_task(job)).status == "cancelled"
    assert gate.cancelled


async def test_revisions_and_servers_without_tasks_are_refused_locally() -> None:
    server, _ = build()
    async with Client(server, mode="2025-06-18") as old:
        with pytest.raises(MCPWireError) as info:
            await old.list_tasks()
        assert not isinstance(info.value, JSONRPCError) and "2025-11-25" in str(info.value)
        # call_tool(task=True) asks; a revision without tasks runs the call in place.
        assert (await old.call_tool("add", {"a": 1, "b": 1}, task=True)).structured == {"result": 2}
    bare = Server("bare")
    bare.add_tool(lambda: "x", name="x", structured=False)
    async with Client(bare, mode=V) as client:
        for attempt in (client.list_tasks(), client.start_tool_task("x"), client.task_result("t")):
            with pytest.raises(MCPWireError) as info:
                await attempt
            assert not isinstance(info.value, JSONRPCError)
        assert (await client.call_tool("x", task=True)).content[0].text == "x"


async def test_a_status_notification_ends_the_clients_poll_early() -> None:
    """The server suggests polling once a minute; ``notifications/tasks/status``
    tells the client at once (a malformed one changes nothing)."""
    server, gate = tasks_server(TaskStore(poll_interval_ms=60_000))
    async with Client(server, mode=V) as client:
        job = await client.start_tool_task("job", {"label": "n"})
        assert isinstance(job, mcpwire.Task)
        await client._on_notification(
            mcpwire.sansio.Notification("notifications/tasks/status", {"taskId": ["x"]})
        )
        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                results: list[str | None] = []

                async def wait() -> None:
                    results.append((await client.await_task(job)).content[0].text)

                tg.start_soon(wait)
                await gate.reached.wait()
                gate.go.set()
        assert results == ["done n"]


async def test_a_task_required_tool_is_transparent_without_listing_first() -> None:
    """From a server that offers tasks, ``call_tool`` learns which tools require
    them (one ``tools/list``); a server without tasks is never asked."""
    server = tasks_server()[0]
    async with Client(server, mode=V, elicitation=Names("Eve")) as client:
        assert client._task_support == {}
        assert (await client.call_tool("ask_name")).content[0].text == "Hello, Eve!"
        assert client._task_support["ask_name"] == "required"
    bare = Server("bare")
    bare.add_tool(lambda: "x", name="x", structured=False)
    async with Client(bare, mode=V, validate_output=False) as client:
        assert (await client.call_tool("x")).content[0].text == "x"
        assert client._task_support == {}


# -- every status x every tasks/* method ---------------------------------------------------------


def _in_status(store: TaskStore, status: str, conn: object) -> mcpwire._task_runs.Task:
    task = store.create(conn=conn)
    if status == "input_required":
        task.need_input({}, "asking")
    elif status == "completed":
        task.complete({"content": [{"type": "text", "text": "ok"}]})
    elif status == "failed":
        task.fail({"code": -32001, "message": "no"}, "failed")
    elif status == "cancelled":
        task.cancel("stop")
    return task


@pytest.mark.parametrize(
    "status", ["working", "input_required", "completed", "failed", "cancelled"]
)
@pytest.mark.parametrize("method", ["tasks/get", "tasks/result", "tasks/list", "tasks/cancel"])
async def test_every_method_in_every_status(status: str, method: str) -> None:
    """The table of ``tasks.mdx``: get and list show any status; result answers a
    terminal task at once (result, error, or -32603 if cancelled) and blocks on a live
    one; cancel moves a live task to cancelled and refuses a terminal one (-32602)."""
    from mcpwire._task_legacy import tasks_cancel, tasks_get, tasks_result

    server = tasks_server()[0]
    conn = object()
    task = _in_status(server.tasks, status, conn)
    params = {"taskId": task.task_id}
    rctx = types.SimpleNamespace(session=None)
    call = types.SimpleNamespace(
        server=server,
        conn=conn,
        version=V,
        params=params,
        rctx=rctx,
        request=types.SimpleNamespace(id=1, method=method),
    )
    handler = {
        "tasks/get": tasks_get,
        "tasks/result": tasks_result,
        "tasks/list": tasks_list,
        "tasks/cancel": tasks_cancel,
    }[method]
    live = status in ("working", "input_required")
    outcome: Any = None
    with anyio.move_on_after(0.05) as waited:
        try:
            outcome = await handler(call)  # type: ignore[arg-type]
        except JSONRPCError as exc:
            outcome = exc
    if method == "tasks/get":
        assert outcome["status"] == status and outcome["taskId"] == task.task_id
    elif method == "tasks/list":
        assert [t["status"] for t in outcome["tasks"]] == [status]
    elif method == "tasks/cancel":
        if live:
            assert outcome["status"] == "cancelled" and task.status == "cancelled"
        else:
            assert isinstance(outcome, JSONRPCError) and outcome.code == -32602
            assert task.status == status  # a terminal task never changes
    elif live:
        assert waited.cancelled_caught and outcome is None  # blocks until the end
    elif status == "completed":
        assert outcome["content"] == [{"type": "text", "text": "ok"}]
        assert outcome["_meta"] == {RELATED_TASK: {"taskId": task.task_id}}
    elif status == "failed":
        assert (outcome.code, outcome.message) == (-32001, "no")
    else:
        assert (outcome.code, outcome.message) == (-32603, f"Task {task.task_id} was cancelled")


# -- the other way: the server asks, the client runs the task ----------------------------------


def asking_server() -> Server:
    server = Server("asks-as-task", tasks=TaskStore(poll_interval_ms=5))

    @server.tool(structured=False)
    async def ask_name_via_task(ctx: Context) -> str:
        answer = await ctx.elicit("What is your name?", SCHEMA, task=True)
        return f"Hello, {answer['content']['name']}!"

    @server.tool(structured=False)
    async def client_tasks(ctx: Context, cancel: bool = False) -> str:
        """Asks the client's tasks/* directly (what ask_as_task does not show)."""
        session, related = ctx._rctx.session, ctx.request_id
        made = await session.request(
            "elicitation/create",
            {"message": "Slow?", "requestedSchema": SCHEMA, "task": {"ttl": 5_000}},
            related=related,
        )
        task_id = made["task"]["taskId"]
        listed = await session.request("tasks/list", {}, related=related)
        if cancel:
            gone = await session.request("tasks/cancel", {"taskId": task_id}, related=related)
            return json.dumps([made["task"]["status"], gone["status"], len(listed["tasks"])])
        result = await session.request("tasks/result", {"taskId": task_id}, related=related)
        return json.dumps([made["task"]["ttl"], result["content"], len(listed["tasks"])])

    return server


class Slow:
    """An elicitation callback that answers after a while (longer than a poll)."""

    def __init__(self, gate: Gate | None = None) -> None:
        self.gate = gate
        self.params: list[dict[str, Any]] = []

    async def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        self.params.append(params)
        if self.gate is not None:
            await self.gate.wait()
        else:
            await anyio.sleep(0.05)
        return {"action": "accept", "content": {"name": "Ada"}}


@pytest.mark.parametrize("transport", ["memory", "http"])
async def test_an_elicitation_as_a_task_between_mcpwire_peers(
    transport: str, tmp_path: Path
) -> None:
    server = asking_server()
    slow = Slow()
    opts: dict[str, Any] = {"mode": V, "elicitation": slow, "tasks": True}
    with anyio.fail_after(WAIT):
        async with connected(transport, server, tmp_path, **opts) as client:
            result = await client.call_tool("ask_name_via_task")
            assert result.content[0].text == "Hello, Ada!"
            assert "task" not in slow.params[0]  # the callback sees the request alone
            assert client._task_store is not None
            (task,) = client._task_store.visible(client)
            assert task.status == "completed"
            ttl, content, listed = json.loads(
                (await client.call_tool("client_tasks")).content[0].text
            )
            assert (ttl, content, listed) == (5_000, {"name": "Ada"}, 2)


async def test_the_server_polls_the_clients_task_then_takes_its_result() -> None:
    """On the wire (a raw client answering by hand): ``params.task``, CreateTaskResult,
    ``tasks/get`` until completed, ``tasks/result``."""
    seen: list[tuple[str, Any]] = []
    polls = [0]

    async def receiver(request: Request, ctx: object) -> dict[str, Any]:
        params = request.params or {}
        seen.append((request.method, params.get("task")))
        task = {"taskId": "c1", "createdAt": "2025-11-25T00:00:00Z", "ttl": None}
        if request.method == "elicitation/create":
            return {
                "task": {
                    **task,
                    "status": "working",
                    "pollInterval": 1,
                    "lastUpdatedAt": "2025-11-25T00:00:00Z",
                }
            }
        if request.method == "tasks/get":
            polls[0] += 1
            status = "working" if polls[0] < 3 else "completed"
            return {**task, "status": status, "lastUpdatedAt": "2025-11-25T00:00:01Z"}
        assert request.method == "tasks/result"
        return {
            "action": "accept",
            "content": {"name": "Raw"},
            "_meta": {RELATED_TASK: {"taskId": "c1"}},
        }

    client_end, server_end = mcpwire.memory_pair(wire=True)
    caps = {"elicitation": {}, "tasks": {"requests": {"elicitation": {"create": {}}}}}
    async with anyio.create_task_group() as tg:
        tg.start_soon(asking_server().serve, server_end)
        async with Session(client_end, on_request=receiver) as session:
            init = {"protocolVersion": V, "capabilities": caps, "clientInfo": {"name": "raw"}}
            await call(session, "initialize", init)
            await session.notify("notifications/initialized")
            result = await call(
                session, "tools/call", {"name": "ask_name_via_task", "arguments": {}}
            )
        tg.cancel_scope.cancel()
    assert result["content"] == [{"type": "text", "text": "Hello, Raw!"}]
    methods = [m for m, _ in seen]
    assert methods == ["elicitation/create", "tasks/get", "tasks/get", "tasks/get", "tasks/result"]
    assert seen[0][1] == {}  # task asked for, no ttl


async def test_a_client_without_task_support_is_asked_in_place() -> None:
    """``task=True`` is a wish: a client that did not declare task-augmented
    elicitation gets a plain request (and one that ignores ``task`` answers in place)."""
    server = asking_server()
    slow = Slow()
    async with Client(server, mode=V, elicitation=slow) as client:  # tasks not declared
        assert "tasks" not in client._capabilities(V)
        assert (await client.call_tool("ask_name_via_task")).content[0].text == "Hello, Ada!"
        assert client._task_store is None


async def test_the_client_cancels_its_task_when_asked() -> None:
    gate = Gate()
    async with Client(asking_server(), mode=V, elicitation=Slow(gate), tasks=True) as client:
        assert client._capabilities(V)["tasks"] == {
            "list": {},
            "cancel": {},
            "requests": {"elicitation": {"create": {}}},
        }
        with anyio.fail_after(WAIT):
            out = await client.call_tool("client_tasks", {"cancel": True})
            assert json.loads(out.content[0].text) == ["working", "cancelled", 1]
            while not gate.cancelled:
                await anyio.sleep(0.001)


def test_the_expiry_heap_stays_bounded_under_churn() -> None:
    """Tasks dropped before they expire (evicted here) do not pile up in the heap."""
    store = TaskStore(ttl_ms=3_600_000, max_tasks=10, clock=Clock())
    for _ in range(5_000):
        task = store.create(ttl_ms=1_000_000)
        task.complete({"content": []})  # finished: the next create may evict it
    assert len(store) == 10
    assert len(store._expiry) <= 2 * len(store) + 65
