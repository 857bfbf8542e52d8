"""The client's side of the tasks extension (SEP-2663) against mcpwire's own server.

Every behaviour runs over the in-memory pair, stdio (a child process) and
streamable HTTP (``serve_http`` on an ephemeral loopback port), on both anyio
backends: a task-required tool is transparent to ``call_tool`` (polled to
completion, input requests answered through the elicitation callback), a
failed task raises its ``JSONRPCError``, cancelling the caller sends
``tasks/cancel`` (asserted on the server's task status), and the lower-level
``start_tool_task``/``get_task``/``update_task``/``cancel_task``/``await_task``
work on the handle. Handlers are paced with events, never sleeps; the server
suggests a 1 ms poll interval so polling costs nothing.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from inproc import Gate

import mcpwire
from mcpwire import (
    CallToolResult,
    Client,
    Context,
    JSONRPCError,
    MCPWireError,
    Server,
    Task,
    TaskCancelled,
    TaskStore,
    ToolError,
)
from mcpwire._http_client_headers import modern_headers
from mcpwire._tasks import TASKS_EXTENSION
from mcpwire.sansio import Request

pytestmark = pytest.mark.anyio

WAIT = 20.0
MODERN = "2026-07-28"
LEGACY = "2025-06-18"
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"name": {"type": "string"}}}
TRANSPORTS = ["memory", "stdio", "http"]
HERE = Path(__file__).parent


def build(poll_interval_ms: int = 1) -> tuple[Server, Gate]:
    server = Server("client-tasks", tasks=TaskStore(poll_interval_ms=poll_interval_ms))
    gate = Gate()

    @server.tool(structured=False, task="optional")
    async def job(label: str = "") -> str:
        await gate.wait()
        return f"done {label}".strip()

    @server.tool(structured=False, task="optional")
    async def quick(label: str) -> str:
        return f"quick {label}"

    @server.tool(task="required")
    async def add(a: int, b: int) -> int:
        return a + b

    @server.tool(structured=False, task="required")
    async def broken() -> str:
        raise JSONRPCError(-32001, "broken on purpose", {"why": "test"})

    @server.tool(structured=False, task="required")
    async def fails() -> str:
        raise ToolError("it ran and failed")

    @server.tool(structured=False, task="required")
    async def greet(ctx: Context) -> str:
        first = await ctx.elicit("Your name?", SCHEMA)
        second = await ctx.elicit("Your friend's name?", SCHEMA)
        answers: list[Any] = [first, second]
        return "hello " + " and ".join(a["content"]["name"] for a in answers)

    @server.tool(structured=False, task="required")
    async def stuck(ctx: Context) -> str:
        await ctx.elicit("Proceed?", SCHEMA)
        await gate.wait()  # never released: only cancellation ends it
        return "unreachable"

    @server.tool(structured=False, task="required", task_start="manual")
    async def composed(ctx: Context) -> str:
        before = await ctx.elicit("Before the task?", SCHEMA)  # a multi-round trip
        await ctx.start_task()
        after = await ctx.elicit("In the task?", SCHEMA)  # an input_required task
        answers: list[Any] = [before, after]
        names = [a["content"]["name"] for a in answers]
        return f"{names[0]} then {names[1]} task={ctx.task_id is not None}"

    return server, gate


STDIO_SCRIPT = f"""
import sys
sys.path.insert(0, {str(HERE)!r})
from test_client_tasks import build
build()[0].run()
"""


class Names:
    """An elicitation callback answering with the given names, in order."""

    def __init__(self, *names: str, on_ask: Callable[[], None] | None = None) -> None:
        self.names = list(names)
        self.messages: list[str] = []
        self.on_ask = on_ask

    async def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        self.messages.append(params["message"])
        if self.on_ask is not None:
            self.on_ask()
        return {"action": "accept", "content": {"name": self.names.pop(0)}}


@asynccontextmanager
async def connected(
    transport: str, server: Server, tmp_path: Path, **options: Any
) -> AsyncIterator[Client]:
    if transport == "memory":
        async with Client(server, **options) as client:
            yield client
    elif transport == "stdio":
        script = tmp_path / "tasks_server.py"
        script.write_text(STDIO_SCRIPT)
        async with Client.stdio(sys.executable, [str(script)], **options) as client:
            yield client
    else:
        async with anyio.create_task_group() as tg:
            port = await tg.start(server.serve_http, "127.0.0.1", 0)
            async with Client.http(f"http://127.0.0.1:{port}/mcp", **options) as client:
                yield client
            tg.cancel_scope.cancel()


async def until_input_required(client: Client, task: str | Task) -> Task:
    while (seen := await client.get_task(task)).status != "input_required":
        assert not seen.terminal, seen
        await anyio.sleep(0.001)
    return seen


# -- declaring the extension --------------------------------------------------------------------


async def test_the_extension_is_declared_only_when_asked() -> None:
    server, _ = build()
    async with Client(server) as plain, Client(server, tasks=True) as declaring:
        assert "extensions" not in plain._capabilities(MODERN)
        assert declaring._capabilities(MODERN)["extensions"] == {TASKS_EXTENSION: {}}
        # Legacy capabilities have no extensions.
        assert "extensions" not in declaring._capabilities(LEGACY)
        assert declaring.era == "modern"


async def test_without_the_extension_optional_runs_in_place_and_required_is_32021() -> None:
    server, _ = build()
    with anyio.fail_after(WAIT):
        async with Client(server) as client:
            assert (await client.call_tool("quick", {"label": "x"})).text == "quick x"
            assert len(server.tasks) == 0
            with pytest.raises(JSONRPCError) as info:
                await client.call_tool("add", {"a": 1, "b": 2})
            assert info.value.code == -32021
            # One call may declare it; the client's default stays off.
            result = await client.call_tool("add", {"a": 1, "b": 2}, task=True)
            assert result.structured == {"result": 3}
            assert len(server.tasks) == 1
        async with Client(server, tasks=True) as client:
            # And a declaring client may opt one call out.
            assert (await client.call_tool("quick", {"label": "y"}, task=False)).text == "quick y"
            assert len(server.tasks) == 1


# -- transparent call_tool, over every transport ------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_task_is_transparent_to_call_tool(transport: str, tmp_path: Path) -> None:
    server, _ = build()
    with anyio.fail_after(WAIT):
        async with connected(transport, server, tmp_path, tasks=True) as client:
            result = await client.call_tool("add", {"a": 2, "b": 3})
            assert isinstance(result, CallToolResult)
            assert result.structured == {"result": 5}
            assert not result.is_error
            # A tool error is a completed task whose result says isError.
            failed_tool = await client.call_tool("fails")
            assert failed_tool.is_error
            assert failed_tool.text == "it ran and failed"
    if transport != "stdio":
        assert len(server.tasks) == 2


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_failed_task_raises_its_error(transport: str, tmp_path: Path) -> None:
    server, _ = build()
    with anyio.fail_after(WAIT):
        async with connected(transport, server, tmp_path, tasks=True) as client:
            with pytest.raises(JSONRPCError) as info:
                await client.call_tool("broken")
    assert (info.value.code, info.value.message, info.value.data) == (
        -32001,
        "broken on purpose",
        {"why": "test"},
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_input_required_is_answered_by_the_elicitation_callback(
    transport: str, tmp_path: Path
) -> None:
    server, _ = build()
    names = Names("Ada", "Grace")
    with anyio.fail_after(WAIT):
        async with connected(transport, server, tmp_path, tasks=True, elicitation=names) as client:
            result = await client.call_tool("greet")
    assert result.text == "hello Ada and Grace"
    assert names.messages == ["Your name?", "Your friend's name?"]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_multi_round_trip_then_task(transport: str, tmp_path: Path) -> None:
    server, _ = build()
    names = Names("Ada", "Grace")
    with anyio.fail_after(WAIT):
        async with connected(transport, server, tmp_path, tasks=True, elicitation=names) as client:
            result = await client.call_tool("composed")
    assert result.text == "Ada then Grace task=True"
    assert names.messages == ["Before the task?", "In the task?"]


# -- cancellation ------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", ["memory", "http"])
async def test_cancelling_the_caller_cancels_the_task(
    transport: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    server, gate = build()
    with anyio.fail_after(WAIT):
        async with connected(transport, server, tmp_path, tasks=True) as client:
            # Cancel once the client polls, i.e. once it holds the task's id (before
            # the CreateTaskResult arrives there is no task the client could name).
            polling = anyio.Event()
            get_task = client.get_task

            async def spy(task: str | Task) -> Task:
                polling.set()
                return await get_task(task)

            monkeypatch.setattr(client, "get_task", spy)
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    arguments: dict[str, Any] = {"label": "x"}
                    tg.start_soon(client.call_tool, "job", arguments)
                    await gate.reached.wait()
                    await polling.wait()
                    scope.cancel()
            assert scope.cancelled_caught
            (task,) = server.tasks._tasks.values()
            assert task.status == "cancelled"
            seen = await client.get_task(task.task_id)
            assert seen.status == "cancelled"
            assert seen.status_message == "Cancelled at the client's request"
    assert gate.cancelled


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_abandoned_wait_cancels_the_task(transport: str, tmp_path: Path) -> None:
    # The caller gives up from inside the elicitation callback: mid-wait, with
    # the task parked on input. The server's task must end cancelled.
    server, _ = build()
    scope = anyio.CancelScope()
    names = Names("Ada", on_ask=scope.cancel)
    with anyio.fail_after(WAIT):
        async with connected(transport, server, tmp_path, tasks=True, elicitation=names) as client:
            handle = await client.start_tool_task("stuck")
            assert isinstance(handle, Task)
            assert handle.status in ("working", "input_required")
            with scope:
                await client.await_task(handle)
            assert scope.cancelled_caught
            assert names.messages == ["Proceed?"]
            seen = await client.get_task(handle)
            assert seen.status == "cancelled"
            assert seen.terminal
            with pytest.raises(TaskCancelled) as info:
                await client.await_task(handle.task_id)
            assert info.value.task.task_id == handle.task_id


# -- the lower-level API -----------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_handles_get_update_cancel(transport: str, tmp_path: Path) -> None:
    server, gate = build()
    with anyio.fail_after(WAIT):
        # The callback only declares the capability: this test answers by hand.
        async with connected(transport, server, tmp_path, elicitation=Names()) as client:
            # start_tool_task declares the extension itself.
            handle = await client.start_tool_task("greet")
            assert isinstance(handle, Task)
            assert handle.task_id and handle.ttl_ms is not None
            assert handle.poll_interval_ms == 1
            assert handle.raw["resultType"] == "task"
            seen = await until_input_required(client, handle)
            assert seen.input_requests is not None
            [(key, ask)] = seen.input_requests.items()
            assert isinstance(ask, dict) and ask["method"] == "elicitation/create"
            await client.update_task(handle, {key: {"action": "accept", "content": {"name": "A"}}})
            seen = await until_input_required(client, handle.task_id)
            [(key2, _)] = (seen.input_requests or {}).items()
            assert key2 != key
            await client.update_task(handle, {key2: {"action": "accept", "content": {"name": "B"}}})
            statuses: list[str] = []

            async def on_status(task: Task) -> None:
                statuses.append(task.status)

            result = await client.await_task(handle, on_status=on_status)
            assert result.text == "hello A and B"
            assert statuses[-1:] == ["completed"]
            done = await client.get_task(handle)
            assert done.status == "completed"
            assert done.tool_result is not None and done.tool_result.text == "hello A and B"
            # Cancelling a finished task is acknowledged and changes nothing.
            await client.cancel_task(handle)
            assert (await client.get_task(handle)).status == "completed"
            with pytest.raises(JSONRPCError) as info:
                await client.get_task("no-such-task")
            assert info.value.code == -32602
    if transport == "memory":
        assert not gate.cancelled


async def test_a_plain_tool_through_start_tool_task_answers_in_place() -> None:
    server, _ = build()

    @server.tool(structured=False)
    def plain() -> str:
        return "in place"

    with anyio.fail_after(WAIT):
        async with Client(server) as client:
            result = await client.start_tool_task("plain")
    assert isinstance(result, CallToolResult)
    assert result.text == "in place"


async def test_a_caller_timeout_cancels_the_task() -> None:
    server, gate = build()
    with anyio.fail_after(WAIT):
        async with Client(server, tasks=True) as client:
            handle = await client.start_tool_task("job")
            assert isinstance(handle, Task)
            await gate.reached.wait()
            with pytest.raises(mcpwire.RequestTimeout):
                await client.await_task(handle, timeout=0)
            assert (await client.get_task(handle)).status == "cancelled"
    assert gate.cancelled


class HoldingTransport:
    """The client end of a memory pair that holds back the first ``CreateTaskResult``.

    The server is mcpwire's own, unchanged: this only delays delivery, as a slow
    network would, so that the caller gives up while the answer is on its way.
    """

    def __init__(self, inner: mcpwire.MemoryTransport) -> None:
        self.inner = inner
        self.held = anyio.Event()
        self.release = anyio.Event()

    async def send(self, message: Any, *, related: Any = None) -> None:
        await self.inner.send(message, related=related)

    async def receive(self) -> Any:
        item = await self.inner.receive()
        if (
            not self.held.is_set()
            and isinstance(item, mcpwire.sansio.Response)
            # The extension's CreateTaskResult, or 2025-11-25's ({"task": {...}}).
            and (item.result.get("resultType") == "task" or "task" in item.result)
        ):
            self.held.set()
            await self.release.wait()
        return item

    async def aclose(self) -> None:
        await self.inner.aclose()

    def close_error(self) -> mcpwire.ConnectionClosed:
        return self.inner.close_error()


async def times_out(call: Any) -> None:
    with pytest.raises(mcpwire.RequestTimeout):
        await call


@pytest.mark.parametrize("mode", ["auto", "2025-11-25"])
@pytest.mark.parametrize("how", ["cancelled", "timed out", "start_tool_task cancelled"])
async def test_a_task_created_after_the_caller_gave_up_is_cancelled(how: str, mode: str) -> None:
    # The CreateTaskResult is on its way when the caller gives up: the server has
    # finished the tools/call request, so the notifications/cancelled for it
    # changes nothing there; the late answer names the task, and the client
    # cancels it (tasks/cancel), since nobody else could.
    server, gate = build()
    client_end, server_end = mcpwire.memory_pair()
    holding = HoldingTransport(client_end)
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, server_end)
            async with Client(holding, mode=mode, tasks=True) as client:
                with anyio.CancelScope() as scope:
                    async with anyio.create_task_group() as calls:
                        if how == "timed out":
                            late = client.call_tool("job", timeout=0.05, task=True)
                            calls.start_soon(times_out, late)
                        elif how == "cancelled":
                            calls.start_soon(functools.partial(client.call_tool, "job", task=True))
                        else:
                            calls.start_soon(client.start_tool_task, "job")
                        await holding.held.wait()
                        await gate.reached.wait()
                        if how != "timed out":
                            scope.cancel()
                (task,) = server.tasks._tasks.values()
                assert task.status == "working"  # the late tasks/cancel has not been sent
                holding.release.set()
                while task.status == "working":
                    await anyio.sleep(0.001)
                assert task.status == "cancelled"
                assert task.status_message == (
                    "Cancelled at the client's request"
                    if mode == "auto"
                    else "The task was cancelled by request"  # by tasks/cancel (2025-11-25)
                )
            tg.cancel_scope.cancel()
    assert gate.cancelled
    assert scope.cancelled_caught == (how != "timed out")


# -- eras and headers --------------------------------------------------------------------------


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_legacy_era_sends_no_tasks_requests(transport: str, tmp_path: Path) -> None:
    server, _ = build()
    with anyio.fail_after(WAIT):
        async with connected(transport, server, tmp_path, mode=LEGACY, tasks=True) as client:
            assert client.era == "legacy"
            # The legacy era has no extension: task tools answer in place.
            assert (await client.call_tool("add", {"a": 1, "b": 1}, task=True)).structured == {
                "result": 2
            }
            calls = [
                client.get_task("t"),
                client.update_task("t", {}),
                client.cancel_task("t"),
                client.await_task("t"),
                client.start_tool_task("add", {"a": 1, "b": 1}),
            ]
            for call in calls:
                with pytest.raises(MCPWireError) as info:
                    await call
                # Refused locally, not by the server (which would say -32601).
                assert not isinstance(info.value, JSONRPCError)
                assert "2026-07-28" in str(info.value)
    if transport != "stdio":
        assert len(server.tasks) == 0


@pytest.mark.parametrize("method", ["tasks/get", "tasks/update", "tasks/cancel"])
def test_tasks_methods_carry_mcp_name(method: str) -> None:
    request = Request(7, method, {"taskId": "Tk-1", "_meta": {}})
    headers = modern_headers(request, MODERN, {})
    assert ("Mcp-Method", method) in headers
    assert ("Mcp-Name", "Tk-1") in headers


async def test_over_http_tasks_requests_send_mcp_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mcpwire import _http_client

    sent: list[tuple[str, list[tuple[str, str]]]] = []

    def recording(request: Request, version: str, tools: Any) -> list[tuple[str, str]]:
        headers = modern_headers(request, version, tools)
        sent.append((request.method, headers))
        return headers

    monkeypatch.setattr(_http_client, "modern_headers", recording)
    server, _ = build()
    names = Names("Ada", "Grace")
    with anyio.fail_after(WAIT):
        async with connected("http", server, tmp_path, tasks=True, elicitation=names) as client:
            handle = await client.start_tool_task("greet")
            assert isinstance(handle, Task)
            assert (await client.await_task(handle)).text == "hello Ada and Grace"
            await client.cancel_task(handle)
    methods = {method for method, _ in sent}
    assert {"tasks/get", "tasks/update", "tasks/cancel"} <= methods
    for method, headers in sent:
        if method.startswith("tasks/"):
            assert ("Mcp-Name", handle.task_id) in headers
            assert ("Mcp-Method", method) in headers


# -- waking on notifications/tasks ---------------------------------------------------------------


@pytest.mark.parametrize("delay", [0.0, 0.2])
@pytest.mark.parametrize("transport", ["memory", "http"])
async def test_a_task_wait_wakes_on_its_notification_not_the_poll_interval(
    transport: str, delay: float, tmp_path: Path
) -> None:
    """The server suggests polling every 60 s; the task ends at once after its
    gate opens, and the client hears it through ``notifications/tasks`` on a
    listen stream for the task, well before the first poll would have."""
    server, gate = build(poll_interval_ms=60_000)
    async with connected(transport, server, tmp_path) as client:
        task = await client.start_tool_task("job", {"label": "x"})
        assert isinstance(task, Task)
        assert task.poll_interval_ms == 60_000

        async def open_after(delay: float) -> None:
            await anyio.sleep(delay)
            gate.go.set()

        async with anyio.create_task_group() as tg:
            # Either before the wait's listen stream is acknowledged (the change is
            # then seen by the tasks/get that follows the acknowledgement) or after.
            tg.start_soon(open_after, delay)
            with anyio.fail_after(WAIT / 2):
                result = await client.await_task(task)
    assert result.text == "done x"


async def test_a_task_wait_polls_when_there_is_no_listen(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    server, gate = build()
    async with connected("memory", server, tmp_path) as client:

        def no_listen(**_: Any) -> Any:
            raise MCPWireError("no subscriptions/listen here")

        monkeypatch.setattr(client, "listen", no_listen)
        task = await client.start_tool_task("job", {"label": "y"})
        assert isinstance(task, Task)
        gate.go.set()
        with anyio.fail_after(WAIT):
            result = await client.await_task(task)
    assert result.text == "done y"
