"""The tasks extension (SEP-2663, ``io.modelcontextprotocol/tasks``) on ``mcpwire.Server``.

Raw JSON-RPC over a serialising memory pair (as in ``test_modern.py``), so the
tests assert the exact wire: ``CreateTaskResult``, ``tasks/get`` DetailedTask
shapes, the empty acks of ``tasks/update`` and ``tasks/cancel``, the error
codes (-32021, -32602, -32601, -32603), ``notifications/tasks`` on listen
streams, and the composition with multi-round-trip requests. Handlers are
paced with events the test sets, never with sleeps; the TTL tests run on a
fake clock. The state machine is swept with hypothesis: every status x every
event is either the SEP-2663 diagram's edge or ``TaskStateError``.
"""

from __future__ import annotations

import re
from typing import Any

import anyio
import pytest
from http_raw import client as http_client
from http_raw import rpc
from http_raw import running as http_running
from hypothesis import given
from hypothesis import strategies as st
from inproc import Gate, serving

from mcpwire import Context, JSONRPCError, Server, Session, ToolError
from mcpwire._task_runs import EVENTS, Task, TaskStateError, next_status
from mcpwire._tasks import STATUSES, TASKS_EXTENSION, TERMINAL, TaskStore
from mcpwire.sansio._http import routing_header_mismatch

WAIT = 5.0
MODERN = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
SUB = "io.modelcontextprotocol/subscriptionId"
TASKS: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}}, "elicitation": {}}
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"name": {"type": "string"}}}
ISO = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
MISSING: dict[str, Any] = {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}


def elicit(message: str) -> dict[str, Any]:
    return {
        "method": "elicitation/create",
        "params": {"message": message, "requestedSchema": SCHEMA},
    }


def build_server(store: TaskStore | None = None) -> tuple[Server, Gate]:
    server = Server("tasks-server", tasks=store)
    gate = Gate()

    @server.tool(structured=False)
    def plain(name: str) -> str:
        return f"Hello, {name}!"

    @server.tool(structured=False, task="optional")
    async def job(label: str = "") -> str:
        await gate.wait()
        return f"done {label}".strip()

    @server.tool(structured=False, task="optional")
    async def quick() -> str:
        return "quick"

    @server.tool(structured=False, task="required")
    async def needs_task() -> str:
        raise ToolError("it ran and failed")

    @server.tool(structured=False, task="optional")
    async def broken() -> str:
        raise JSONRPCError(-32603, "broken on purpose", {"why": "test"})

    @server.tool(structured=False, task="optional")
    async def two(ctx: Context) -> str:
        got = await ctx.ask_all({"a": elicit("A?"), "b": elicit("B?")})
        # A key names one ask for the whole call, as in multi-round trips:
        # asking "a" again is answered from the record, "c" is a new question.
        again = await ctx.ask_all({"a": elicit("A?"), "c": elicit("C?")})
        actions = [got["a"], got["b"], again["a"], again["c"]]
        return ",".join(str(a["action"]) for a in actions)

    @server.tool(structured=False, task="optional")
    async def chatty(ctx: Context) -> str:
        await ctx.report_progress(1, 2, "halfway")
        await ctx.info("not sent from a task")
        await gate.wait()
        return "chatted"

    @server.tool(structured=False, task="required", task_start="manual")
    async def composed(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", SCHEMA)
        started = await ctx.start_task()
        await gate.wait()
        content: Any = answer["content"]
        return f"{content['name']} started={started} task={ctx.task_id is not None}"

    @server.tool(structured=False, task="optional", task_start="manual")
    async def maybe(ctx: Context, go_async: bool) -> str:
        if go_async:
            await ctx.start_task()
        return f"async={ctx.task_id is not None}"

    return server, gate


def mp(caps: dict[str, Any] | None = None, **params: Any) -> dict[str, Any]:
    return {"_meta": {PV: MODERN, CC: TASKS if caps is None else caps}, **params}


async def call(session: Session, method: str, params: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(WAIT):
        return await session.request(method, params)


async def error_of(session: Session, method: str, params: dict[str, Any]) -> JSONRPCError:
    with anyio.fail_after(WAIT), pytest.raises(JSONRPCError) as info:
        await session.request(method, params)
    return info.value


async def until(session: Session, task_id: str, *statuses: str) -> dict[str, Any]:
    """Poll tasks/get until the task's status is one of ``statuses``."""
    with anyio.fail_after(WAIT):
        while True:
            got = await session.request("tasks/get", mp(taskId=task_id))
            if got["status"] in statuses:
                return got
            await anyio.sleep(0.001)


# -- negotiation ----------------------------------------------------------------------------


@pytest.mark.anyio
async def test_discover_advertises_the_extension_only_with_task_tools() -> None:
    server, _ = build_server()
    async with serving(server) as (session, _):
        caps = (await call(session, "server/discover", mp()))["capabilities"]
        assert caps["extensions"] == {TASKS_EXTENSION: {}}
        assert "tasks" not in caps
    bare = Server("bare")
    bare.add_tool(lambda: "x", name="x")
    async with serving(bare) as (session, _):
        assert "extensions" not in (await call(session, "server/discover", mp()))["capabilities"]
        err = await error_of(session, "tasks/get", mp(taskId="t"))
        assert err.code == -32601


@pytest.mark.anyio
@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
async def test_tasks_methods_need_the_extension(method: str) -> None:
    server, _ = build_server()
    async with serving(server) as (session, _):
        err = await error_of(session, method, mp({}, taskId="nope", inputResponses={}))
        assert (err.code, err.data) == (-32021, MISSING)


@pytest.mark.anyio
async def test_without_the_extension_optional_is_sync_and_required_is_32021() -> None:
    server, gate = build_server()
    gate.go.set()
    async with serving(server) as (session, _):
        result = await call(session, "tools/call", mp({}, name="job", arguments={"label": "x"}))
        assert result["resultType"] == "complete"
        assert "taskId" not in result
        assert result["content"] == [{"type": "text", "text": "done x"}]
        err = await error_of(session, "tools/call", mp({}, name="needs_task"))
        assert (err.code, err.data) == (-32021, MISSING)


@pytest.mark.anyio
@pytest.mark.parametrize("method", ["tasks/result", "tasks/list"])
async def test_removed_v1_methods_are_method_not_found(method: str) -> None:
    server, _ = build_server()
    async with serving(server) as (session, _):
        assert (await error_of(session, method, mp(taskId="t"))).code == -32601


@pytest.mark.anyio
@pytest.mark.parametrize(("version", "unknown"), [("2025-06-18", -32601), ("2025-11-25", -32602)])
async def test_legacy_era_runs_task_tools_in_place(version: str, unknown: int) -> None:
    """Without ``params.task`` a legacy call runs in place; before 2025-11-25 there
    are no ``tasks/*`` methods at all (``test_tasks_legacy.py`` has the rest)."""
    server, gate = build_server()
    gate.go.set()
    async with serving(server) as (session, _):
        init = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t"}}
        await call(session, "initialize", init)
        await session.notify("notifications/initialized")
        result = await call(session, "tools/call", {"name": "job", "arguments": {}})
        assert result["content"] == [{"type": "text", "text": "done"}]
        assert (await error_of(session, "tasks/get", {"taskId": "t"})).code == unknown


# -- lifecycle ------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_create_poll_complete() -> None:
    server, gate = build_server()
    async with serving(server) as (session, _):
        created = await call(session, "tools/call", mp(name="job", arguments={"label": "a"}))
        assert created["resultType"] == "task"
        assert created["status"] == "working"
        assert ISO.match(created["createdAt"]) and ISO.match(created["lastUpdatedAt"])
        assert created["ttlMs"] == 3_600_000 and created["pollIntervalMs"] == 500
        for absent in ("task", "result", "error", "inputRequests", "requestState", "ttl"):
            assert absent not in created
        task_id = created["taskId"]
        assert len(task_id) >= 22  # 128 bits from secrets
        working = await call(session, "tasks/get", mp(taskId=task_id))
        assert (working["resultType"], working["status"]) == ("complete", "working")
        assert "result" not in working
        gate.go.set()
        done = await until(session, task_id, "completed")
        assert done["resultType"] == "complete"
        assert done["result"]["content"] == [{"type": "text", "text": "done a"}]
        assert done["result"]["isError"] is False
        assert "io.modelcontextprotocol/related-task" not in done["result"].get("_meta", {})


@pytest.mark.anyio
async def test_tool_error_completes_and_protocol_error_fails() -> None:
    server, _ = build_server()
    async with serving(server) as (session, _):
        created = await call(session, "tools/call", mp(name="needs_task"))
        done = await until(session, created["taskId"], "completed", "failed")
        assert done["status"] == "completed" and done["result"]["isError"] is True
        created = await call(session, "tools/call", mp(name="broken"))
        failed = await until(session, created["taskId"], "completed", "failed")
        assert failed["status"] == "failed" and "result" not in failed
        assert failed["error"] == {
            "code": -32603,
            "message": "broken on purpose",
            "data": {"why": "test"},
        }
        assert "broken on purpose" in failed["statusMessage"]


@pytest.mark.anyio
async def test_cancel_cancels_the_handler_and_is_idempotent() -> None:
    server, gate = build_server()
    async with serving(server) as (session, _):
        created = await call(session, "tools/call", mp(name="job"))
        task_id = created["taskId"]
        with anyio.fail_after(WAIT):
            await gate.reached.wait()
        ack = await call(session, "tasks/cancel", mp(taskId=task_id))
        assert set(ack) == {"resultType", "_meta"} and ack["resultType"] == "complete"
        got = await call(session, "tasks/get", mp(taskId=task_id))
        assert got["status"] == "cancelled"
        with anyio.fail_after(WAIT):
            while not gate.cancelled:
                await anyio.sleep(0.001)
        again = await call(session, "tasks/cancel", mp(taskId=task_id))
        assert again["resultType"] == "complete" and "status" not in again
        assert (await call(session, "tasks/get", mp(taskId=task_id)))["status"] == "cancelled"
        # A finished task stays finished: cancel is the same empty ack.
        quick = await call(session, "tools/call", mp(name="quick"))
        await until(session, quick["taskId"], "completed")
        await call(session, "tasks/cancel", mp(taskId=quick["taskId"]))
        assert (await call(session, "tasks/get", mp(taskId=quick["taskId"])))[
            "status"
        ] == "completed"


@pytest.mark.anyio
@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
@pytest.mark.parametrize("task_id", ["never-issued", 42])
async def test_unknown_task_is_invalid_params(method: str, task_id: object) -> None:
    server, _ = build_server()
    async with serving(server) as (session, _):
        err = await error_of(session, method, mp(taskId=task_id, inputResponses={}))
        assert err.code == -32602


@pytest.mark.anyio
async def test_the_connection_ending_cancels_its_tasks() -> None:
    server, gate = build_server()
    async with serving(server) as (session, _):
        created = await call(session, "tools/call", mp(name="job"))
        with anyio.fail_after(WAIT):
            await gate.reached.wait()
    assert gate.cancelled
    task = server.tasks.get(created["taskId"])
    assert task.status == "cancelled"


@pytest.mark.anyio
async def test_a_server_wide_host_outlives_connections() -> None:
    server, gate = build_server()
    async with server.tasks.running():
        async with serving(server) as (session, _):
            created = await call(session, "tools/call", mp(name="job"))
        gate.go.set()
        with anyio.fail_after(WAIT):
            while server.tasks.get(created["taskId"]).status != "completed":
                await anyio.sleep(0.001)
    assert not gate.cancelled


# -- input while a task runs ----------------------------------------------------------------


@pytest.mark.anyio
async def test_input_required_partial_updates_and_unique_keys() -> None:
    server, _ = build_server()
    async with serving(server) as (session, _):
        task_id = (await call(session, "tools/call", mp(name="two")))["taskId"]
        parked = await until(session, task_id, "input_required")
        assert set(parked["inputRequests"]) == {"a", "b"}
        assert parked["inputRequests"]["a"] == elicit("A?")
        # Unknown keys are ignored; a non-object answer to an outstanding key is refused.
        ack = await call(session, "tasks/update", mp(taskId=task_id, inputResponses={"zz": {}}))
        assert ack["resultType"] == "complete" and "status" not in ack
        bad = mp(taskId=task_id, inputResponses={"a": "yes"})
        assert (await error_of(session, "tasks/update", bad)).code == -32602
        assert (await error_of(session, "tasks/update", mp(taskId=task_id))).code == -32602
        await call(
            session, "tasks/update", mp(taskId=task_id, inputResponses={"a": {"action": "accept"}})
        )
        partial = await call(session, "tasks/get", mp(taskId=task_id))
        assert partial["status"] == "input_required"
        assert set(partial["inputRequests"]) == {"b"}
        await call(
            session, "tasks/update", mp(taskId=task_id, inputResponses={"b": {"action": "decline"}})
        )
        # Next round: "a" comes from the record, only "c" is asked.
        again = await until(session, task_id, "input_required")
        assert set(again["inputRequests"]) == {"c"}
        late = mp(taskId=task_id, inputResponses={"a": {"action": "decline"}})
        await call(session, "tasks/update", late)  # answered already: ignored
        still = await call(session, "tasks/get", mp(taskId=task_id))
        assert set(still["inputRequests"]) == {"c"}
        answer_c = mp(taskId=task_id, inputResponses={"c": {"action": "cancel"}})
        await call(session, "tasks/update", answer_c)
        done = await until(session, task_id, "completed")
        assert done["result"]["content"][0]["text"] == "accept,decline,accept,cancel"


def test_input_keys_are_unique_over_a_tasks_lifetime() -> None:
    task = TaskStore().create()
    assert [task.mint_key("k") for _ in range(3)] == ["k", "k#2", "k#3"]
    task.need_input({"k#3": elicit("?")})
    assert task.answer({"k#3": {"action": "accept"}}) == ["k#3"]
    assert task.mint_key("k") == "k#4"  # an answered key is never reused


@pytest.mark.anyio
async def test_cancel_while_waiting_for_input() -> None:
    server, _ = build_server()
    async with serving(server) as (session, _):
        task_id = (await call(session, "tools/call", mp(name="two")))["taskId"]
        await until(session, task_id, "input_required")
        await call(session, "tasks/cancel", mp(taskId=task_id))
        got = await call(session, "tasks/get", mp(taskId=task_id))
        assert got["status"] == "cancelled" and "inputRequests" not in got


@pytest.mark.anyio
async def test_mrtr_first_then_task() -> None:
    server, gate = build_server()
    gate.go.set()
    async with serving(server) as (session, _):
        first = await call(session, "tools/call", mp(name="composed"))
        assert first["resultType"] == "input_required" and "taskId" not in first
        (key,) = first["inputRequests"]
        answer = {"action": "accept", "content": {"name": "Alice"}}
        retry = mp(
            name="composed", inputResponses={key: answer}, requestState=first["requestState"]
        )
        created = await call(session, "tools/call", retry)
        assert created["resultType"] == "task"
        assert "requestState" not in created and "inputRequests" not in created
        done = await until(session, created["taskId"], "completed")
        assert done["result"]["content"][0]["text"] == "Alice started=True task=True"


@pytest.mark.anyio
async def test_manual_start_that_never_starts_answers_in_place() -> None:
    server, _ = build_server()
    async with serving(server) as (session, _):
        sync = await call(session, "tools/call", mp(name="maybe", arguments={"go_async": False}))
        assert sync["resultType"] == "complete"
        assert sync["content"] == [{"type": "text", "text": "async=False"}]
        created = await call(session, "tools/call", mp(name="maybe", arguments={"go_async": True}))
        assert created["resultType"] == "task"
        done = await until(session, created["taskId"], "completed")
        assert done["result"]["content"] == [{"type": "text", "text": "async=True"}]
        # Without the extension, start_task() is a no-op and the call stays synchronous.
        plain = await call(
            session, "tools/call", mp({}, name="maybe", arguments={"go_async": True})
        )
        assert plain["content"] == [{"type": "text", "text": "async=False"}]


@pytest.mark.anyio
async def test_progress_becomes_status_message_and_logs_are_dropped() -> None:
    server, gate = build_server()
    async with serving(server) as (session, inbox):
        task_id = (await call(session, "tools/call", mp(name="chatty")))["taskId"]
        with anyio.fail_after(WAIT):
            await gate.reached.wait()
        got = await call(session, "tasks/get", mp(taskId=task_id))
        assert got["statusMessage"] == "halfway"
        gate.go.set()
        await until(session, task_id, "completed")
        assert not [
            n
            for n in inbox.items
            if n.method in ("notifications/message", "notifications/progress")
        ]


# -- status notifications on subscriptions/listen ---------------------------------------------


@pytest.mark.anyio
async def test_listen_for_task_status() -> None:
    server, gate = build_server()
    async with serving(server) as (session, inbox):
        task_id = (await call(session, "tools/call", mp(name="job")))["taskId"]
        wanted = {"taskIds": [task_id, "unknown-task"]}
        async with anyio.create_task_group() as tg:

            async def listen() -> None:
                await session.request("subscriptions/listen", mp(notifications=wanted))

            tg.start_soon(listen)
            ack = await inbox.next("notifications/subscriptions/acknowledged")
            assert ack.params is not None
            assert ack.params["notifications"] == {"taskIds": [task_id]}
            gate.go.set()
            note = await inbox.next("notifications/tasks")
            params: Any = note.params
            assert params["taskId"] == task_id and params["status"] == "completed"
            assert params["result"]["content"] == [{"type": "text", "text": "done"}]
            assert SUB in params["_meta"]
            server.close_subscriptions()


@pytest.mark.anyio
async def test_listen_for_tasks_without_the_extension_is_32021() -> None:
    server, _ = build_server()
    async with serving(server) as (session, _):
        params = mp({}, notifications={"taskIds": ["x"]})
        err = await error_of(session, "subscriptions/listen", params)
        assert (err.code, err.data) == (-32021, MISSING)


# -- the store: TTL, bound -------------------------------------------------------------------


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_store_validates_its_settings() -> None:
    bad_settings: list[dict[str, Any]] = [
        {"ttl_ms": 0},
        {"ttl_ms": 1.5},
        {"poll_interval_ms": 0},
        {"max_tasks": 0},
    ]
    for bad in bad_settings:
        with pytest.raises(ValueError):
            TaskStore(**bad)
    unlimited = TaskStore(ttl_ms=None, poll_interval_ms=None)
    task = unlimited.create()
    assert task.to_json()["ttlMs"] is None and "pollIntervalMs" not in task.to_json()


def test_ttl_expiry_on_a_fake_clock() -> None:
    clock = FakeClock()
    store = TaskStore(ttl_ms=1000, clock=clock)
    first = store.create()
    clock.now += 0.5
    second = store.create()
    clock.now += 0.5  # first is exactly at its TTL: gone; second has half its life left
    with pytest.raises(JSONRPCError) as info:
        store.get(first.task_id)
    assert info.value.code == -32602
    assert store.get(second.task_id) is second
    assert first.status == "cancelled"  # a live task that expires is cancelled
    clock.now += 10
    assert store.sweep() == 1 and len(store) == 0


@pytest.mark.anyio
async def test_an_expired_task_is_gone_and_its_handler_cancelled() -> None:
    clock = FakeClock()
    server, gate = build_server(TaskStore(ttl_ms=60_000, clock=clock))
    async with serving(server) as (session, _):
        task_id = (await call(session, "tools/call", mp(name="job")))["taskId"]
        with anyio.fail_after(WAIT):
            await gate.reached.wait()
        assert (await call(session, "tasks/get", mp(taskId=task_id)))["status"] == "working"
        clock.now += 60
        assert (await error_of(session, "tasks/get", mp(taskId=task_id))).code == -32602
        with anyio.fail_after(WAIT):
            while not gate.cancelled:
                await anyio.sleep(0.001)


def test_store_bound_evicts_finished_tasks_first() -> None:
    store = TaskStore(max_tasks=2)
    first, second = store.create(), store.create()
    with pytest.raises(JSONRPCError) as info:
        store.create()
    assert info.value.code == -32603
    second.complete({"content": []})
    third = store.create()
    assert second.task_id not in store and first.task_id in store and third.task_id in store


@pytest.mark.anyio
async def test_a_full_store_runs_optional_tools_in_place_and_refuses_required() -> None:
    server, gate = build_server(TaskStore(max_tasks=1))
    async with serving(server) as (session, _):
        created = await call(session, "tools/call", mp(name="job"))
        assert created["resultType"] == "task"
        inline = await call(session, "tools/call", mp(name="quick"))
        assert inline["resultType"] == "complete" and inline["content"][0]["text"] == "quick"
        err = await error_of(session, "tools/call", mp(name="needs_task"))
        assert err.code == -32603
        gate.go.set()
        await until(session, created["taskId"], "completed")
        assert (await call(session, "tools/call", mp(name="quick")))["resultType"] == "task"


def test_task_ids_are_unguessable_and_distinct() -> None:
    store = TaskStore(max_tasks=500)
    ids = {store.create().task_id for _ in range(500)}
    assert len(ids) == 500
    assert all(len(i) >= 22 for i in ids)


def test_tool_option_values_are_checked() -> None:
    server = Server("s")
    with pytest.raises(ValueError):
        server.add_tool(lambda: "x", name="x", task="always")
    with pytest.raises(ValueError):
        server.add_tool(lambda: "x", name="y", task="optional", task_start="later")


# -- routing headers (SEP-2663 "Streamable HTTP: Routing Headers") -----------------------------


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_mcp_name_must_match_the_task_id(method: str) -> None:
    params: dict[str, Any] = {"taskId": "abc", "_meta": {PV: MODERN}}
    headers = {"mcp-protocol-version": MODERN, "mcp-method": method, "mcp-name": "abc"}
    assert routing_header_mismatch(method, params, headers) is None
    assert routing_header_mismatch(method, params, {**headers, "mcp-name": "other"}) is not None
    missing = {k: v for k, v in headers.items() if k != "mcp-name"}
    assert routing_header_mismatch(method, params, missing) is not None


@pytest.mark.anyio
async def test_over_http_a_task_outlives_its_request_and_mcp_name_is_checked() -> None:
    server, gate = build_server()

    def headers(method: str, name: str | None) -> dict[str, str | None]:
        return {"mcp-protocol-version": MODERN, "mcp-method": method, "mcp-name": name}

    async with http_running(server) as http:
        assert http.port is not None
        async with http_client(http.port) as raw:
            body = rpc(1, "tools/call", mp(name="job", arguments={"label": "h"}))
            reply = await raw.request("POST", body, headers("tools/call", "job"))
            created = reply.json()["result"]
            assert created["resultType"] == "task"
            task_id = created["taskId"]
            with anyio.fail_after(WAIT):
                await gate.reached.wait()
            get = rpc(2, "tasks/get", mp(taskId=task_id))
            wrong = await raw.request("POST", get, headers("tasks/get", "someone-elses-task"))
            assert (wrong.status, wrong.json()["error"]["code"]) == (400, -32020)
            missing = await raw.request("POST", get, headers("tasks/get", None))
            assert missing.json()["error"]["code"] == -32020
            working = await raw.request("POST", get, headers("tasks/get", task_id))
            assert working.json()["result"]["status"] == "working"
            gate.go.set()
            with anyio.fail_after(WAIT):
                while True:
                    reply = await raw.request("POST", get, headers("tasks/get", task_id))
                    if reply.json()["result"]["status"] == "completed":
                        break
                    await anyio.sleep(0.001)
            result = reply.json()["result"]["result"]
            assert result["content"] == [{"type": "text", "text": "done h"}]
    assert not gate.cancelled


# -- the state machine: every status x every event ----------------------------------------------

EDGES = {
    ("working", "need_input"): "input_required",
    ("input_required", "need_input"): "input_required",
    ("input_required", "resume"): "working",
    ("working", "complete"): "completed",
    ("input_required", "complete"): "completed",
    ("working", "fail"): "failed",
    ("input_required", "fail"): "failed",
    ("working", "cancel"): "cancelled",
    ("input_required", "cancel"): "cancelled",
}


@given(st.sampled_from(STATUSES), st.sampled_from(EVENTS))
def test_next_status_is_the_diagram(status: str, event: str) -> None:
    expected = EDGES.get((status, event))
    if expected is None:
        with pytest.raises(TaskStateError) as info:
            next_status(status, event)
        assert (info.value.status, info.value.event) == (status, event)
        assert status in TERMINAL or event == "resume"
    else:
        assert next_status(status, event) == expected


def task_in(status: str) -> Task:
    """A task brought to ``status`` by allowed transitions only."""
    task = TaskStore(max_tasks=10).create()
    if status == "input_required":
        task.need_input({"k": elicit("?")})
    elif status == "completed":
        task.complete({"content": []})
    elif status == "failed":
        task.fail({"code": -32603, "message": "x"})
    elif status == "cancelled":
        task.cancel()
    assert task.status == status
    return task


OPERATIONS = ("need_input", "answer", "answer_unknown", "complete", "fail", "cancel", "note")


@given(st.sampled_from(STATUSES), st.sampled_from(OPERATIONS))
def test_every_status_times_every_operation(status: str, operation: str) -> None:
    task = task_in(status)
    before = task.to_json()
    terminal = status in TERMINAL
    if operation == "need_input":
        if terminal:
            with pytest.raises(TaskStateError):
                task.need_input({"x": elicit("?")})
        else:
            task.need_input({"x": elicit("?")})
            assert task.status == "input_required" and "x" in task.pending
    elif operation in ("answer", "answer_unknown"):
        key = "k" if operation == "answer" else "never-issued"
        taken = task.answer({key: {"action": "accept"}})
        if status == "input_required" and operation == "answer":
            assert taken == ["k"] and task.status == "working" and task.answers["k"]
        else:  # ignored, nothing changes (SEP-2663: SHOULD ignore)
            assert taken == [] and task.to_json() == before
    elif operation in ("complete", "fail"):

        def settle() -> None:
            if operation == "complete":
                task.complete({"content": []})
            else:
                task.fail({"code": -32603, "message": "x"})

        if terminal:
            with pytest.raises(TaskStateError):
                settle()
            assert task.to_json() == before
        else:
            settle()
            shape = task.to_json()
            assert ("result" in shape) == (operation == "complete")
            assert ("error" in shape) == (operation == "fail")
            assert "inputRequests" not in shape and not task.pending
    elif operation == "cancel":
        assert task.cancel() is (not terminal)
        assert task.status == ("cancelled" if not terminal else status)
        if terminal:
            assert task.to_json() == before
    else:
        task.note("hello")
        assert (task.status_message == "hello") is (not terminal)
    assert task.status in STATUSES
