"""2025-11-25 tasks against a peer written by others: the official TypeScript SDK.

The reference Python SDK routes none of the 2025-11-25 ``tasks/*`` methods
(spec-notes §3) and the conformance suite has no scenarios for them, so the
peer is the TypeScript SDK (``@modelcontextprotocol/sdk``, pinned through the
conformance harness's lock file, run on its Node 22), both ways:

* its client (``conformance/peers/ts_tasks_client.mjs``, raw requests checked
  against the SDK's own result schemas) against mcpwire's server
  (``conformance/peers/tasks_server.py``), over stdio and streamable HTTP:
  every one of its checks must pass;
* mcpwire's ``Client`` against its server (``ts_tasks_server.mjs``, McpServer
  with the SDK's experimental tasks), over stdio and HTTP: a task-required
  tool whose elicitation the SDK queues for ``tasks/result``, a task polled to
  its end, listing, cancelling, a failed task;
* and the other way round, the server as requestor and the client as
  receiver: mcpwire's ``ctx.elicit(..., task=True)`` against the SDK's client
  task store (``--receiver``), and the SDK's ``elicitInputStream`` against a
  ``Client(tasks=True)``, which it polls, collects from and lists.

The npm packages are installed by ``conformance/run.py``'s ``ensure_installed``
when missing (``.ci/run`` installs them before the tests).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from http_raw import free_port
from inproc import until_listening

from mcpwire import Client, JSONRPCError, Task

ROOT = Path(__file__).resolve().parent.parent
PEERS = ROOT / "conformance" / "peers"
WAIT = 60.0
CHECKS = {
    "protocol_version",
    "capabilities",
    "tools_list",
    "create_task",
    "get_and_result",
    "list",
    "no_task_optional",
    "elicitation_in_task",
    "result_blocks",
    "required_without_task",
    "forbidden_with_task",
    "cancel",
    "unknown_task",
    "failed_tool",
    "status_notifications",
}
#: ``--receiver``: the other way, the server's elicitation as a task the client runs.
RECEIVER_CHECKS = {"receiver_capabilities", "receiver_elicitation_task", "receiver_list"}


@pytest.fixture(scope="module")
def node() -> str:
    sys.path.insert(0, str(ROOT / "conformance"))
    try:
        import run  # conformance/run.py
    finally:
        sys.path.remove(str(ROOT / "conformance"))
    run.ensure_installed()
    return str(run.NODE_BIN / "node")


def judged(out: str, names: set[str] = CHECKS) -> dict[str, dict[str, Any]]:
    """The client script's checks by name; every one must be there and pass."""
    checks = {}
    for line in out.splitlines():
        item = json.loads(line)
        if "check" in item:
            checks[item["check"]] = item
    assert set(checks) == names
    failed = {name: c["detail"] for name, c in checks.items() if not c["ok"]}
    assert not failed, json.dumps(failed, indent=1)
    return checks


# -- the TypeScript client against mcpwire's server ----------------------------------------------


def test_the_ts_client_passes_every_check_against_our_stdio_server(node: str) -> None:
    argv = [node, str(PEERS / "ts_tasks_client.mjs"), "--stdio", sys.executable]
    done = subprocess.run(
        [*argv, str(PEERS / "tasks_server.py")], capture_output=True, text=True, timeout=WAIT
    )
    checks = judged(done.stdout)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = checks["elicitation_in_task"]["detail"]
    assert seen["sawInputRequired"] and seen["elicitationWhileResultPending"]


def test_the_ts_client_runs_the_task_our_server_asks_of_it(node: str) -> None:
    """The other way: ``ctx.elicit(..., task=True)`` against the SDK's client task store."""
    argv = [node, str(PEERS / "ts_tasks_client.mjs"), "--receiver", "--stdio", sys.executable]
    done = subprocess.run(
        [*argv, str(PEERS / "tasks_server.py")], capture_output=True, text=True, timeout=WAIT
    )
    checks = judged(done.stdout, RECEIVER_CHECKS)
    assert done.returncode == 0, done.stderr[-2000:]
    sent = checks["receiver_elicitation_task"]["detail"]["serverToClient"]
    assert sent[0] == "elicitation/create" and sent[-1] == "tasks/result"
    assert set(sent[1:-1]) == {"tasks/get"}


@pytest.mark.anyio
async def test_the_ts_client_passes_every_check_against_our_http_server(node: str) -> None:
    sys.path.insert(0, str(PEERS))
    try:
        from tasks_server import server
    finally:
        sys.path.remove(str(PEERS))
    async with anyio.create_task_group() as tg:
        port = await tg.start(server.serve_http, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{port}/mcp"
        with anyio.fail_after(WAIT):
            done = await anyio.run_process(
                [node, str(PEERS / "ts_tasks_client.mjs"), "--url", url], check=False
            )
        tg.cancel_scope.cancel()
    judged(done.stdout.decode())
    assert done.returncode == 0, done.stderr.decode()[-2000:]


# -- mcpwire's client against the TypeScript server ----------------------------------------------


class Ada:
    """Answers the TS server's elicitation; keeps the request's ``_meta``."""

    def __init__(self) -> None:
        self.metas: list[Any] = []

    async def __call__(self, params: dict[str, Any]) -> dict[str, Any]:
        self.metas.append(params.get("_meta"))
        return {"action": "accept", "content": {"name": "Ada"}}


@asynccontextmanager
async def ts_server(
    node: str, transport: str, ada: Ada, *, tasks: bool = False
) -> AsyncIterator[Client]:
    script = str(PEERS / "ts_tasks_server.mjs")
    options: dict[str, Any] = {"mode": "2025-11-25", "elicitation": ada, "tasks": tasks}
    if transport == "stdio":
        async with Client.stdio(node, [script], **options) as client:
            yield client
        return
    port = free_port()
    async with await anyio.open_process([node, script, "--http", str(port)]) as process:
        try:
            url = f"http://127.0.0.1:{port}/mcp"
            await until_listening(port, WAIT)
            async with Client.http(url, **options) as client:
                yield client
        finally:
            process.terminate()


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_our_client_runs_tasks_on_the_ts_server(node: str, transport: str) -> None:
    ada = Ada()
    with anyio.fail_after(WAIT):
        async with ts_server(node, transport, ada) as client:
            assert client.protocol_version == "2025-11-25"
            assert client.server_capabilities["tasks"] == {
                "list": {},
                "cancel": {},
                "requests": {"tools": {"call": {}}},
            }
            support = {t.name: t.task_support for t in await client.list_tools()}
            assert support == {
                "slow_echo": "optional",
                "ask_name": "required",
                "explode": "required",
                "plain": "forbidden",
                "sleepy": "optional",
                "ask_name_via_task": "forbidden",
            }
            # Required: call_tool makes it a task; the elicitation comes on tasks/result.
            greeted = await client.call_tool("ask_name")
            assert greeted.content[0].text == "Hello, Ada!"
            assert greeted.meta is not None
            task_id = greeted.meta["io.modelcontextprotocol/related-task"]["taskId"]
            assert ada.metas == [{"io.modelcontextprotocol/related-task": {"taskId": task_id}}]
            echo = await client.start_tool_task("slow_echo", {"message": "hi", "delay_ms": 50})
            assert isinstance(echo, Task) and echo.status == "working"
            assert (await client.await_task(echo)).content[0].text == "hi"
            assert echo.task_id in {t.task_id for t in await client.list_tasks()}
            sleepy = await client.start_tool_task("sleepy", {"seconds": 30}, ttl_ms=30_000)
            assert isinstance(sleepy, Task) and sleepy.ttl_ms == 30_000
            await client.cancel_task(sleepy)
            assert (await client.get_task(sleepy)).status == "cancelled"
            with pytest.raises(JSONRPCError) as info:
                await client.cancel_task(sleepy)
            assert info.value.code == -32602
            exploded = await client.call_tool("explode")
            assert exploded.is_error and exploded.content[0].text == "boom"
            assert (await client.call_tool("plain", {"message": "p"})).content[0].text == "p"


@pytest.mark.anyio
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_our_client_runs_the_task_the_ts_server_asks_of_it(node: str, transport: str) -> None:
    """The SDK's server sends its elicitation as a task (``elicitInputStream``), polls
    our ``tasks/get``, takes ``tasks/result`` and lists our tasks."""
    ada = Ada()
    with anyio.fail_after(WAIT):
        async with ts_server(node, transport, ada, tasks=True) as client:
            result = await client.call_tool("ask_name_via_task")
    assert result.content[0].text == "Hello, Ada!"
    account = result.structured
    assert isinstance(account, dict), result
    assert account["asTask"] is True and account["listed"] is True, account
    assert account["statuses"][-1] == "completed"
    assert ada.metas == [None]  # our callback sees the request without the task
