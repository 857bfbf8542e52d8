"""Tools that require a task, called through the hub (``Hub.call_tool``,
``HubServer``), against a real server process of ours in each era.

2025-11-25 lists ``execution.taskSupport``, which the client acts on by itself;
2026-07-28 lists none, and a server refuses an undeclaring call with -32021
naming the tasks extension, which the hub answers by calling once more as a task
(``_client_tasks.call_as_required``).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from test_client_tasks import STDIO_SCRIPT
from test_hub_support import LEGACY, MODERN, PY, WAIT, era_pairs, ready

from mcpwire import Client, Hub, HubServer, JSONRPCError, ServerConfig

pytestmark = pytest.mark.anyio


def tasks_server(tmp: Path) -> ServerConfig:
    script = tmp / "tasks_server.py"
    script.write_text(STDIO_SCRIPT)
    return ServerConfig(name="d", command=PY, args=[str(script)])


@pytest.mark.parametrize("downstream", [LEGACY, MODERN])
async def test_the_hub_calls_a_tool_that_requires_a_task_as_one(
    tmp_path: Path, downstream: str
) -> None:
    """In either era, without the hub's clients declaring tasks by default."""
    servers = [tasks_server(tmp_path)]
    async with Hub(servers=servers, client_options={"mode": downstream}) as hub:
        await ready(hub)
        with anyio.fail_after(WAIT):
            result = await hub.call_tool("d__add", {"a": 1, "b": 2})
            assert result.structured == {"result": 3}
            if downstream == LEGACY:  # 2026-07-28 results name no task
                assert "io.modelcontextprotocol/related-task" in (result.meta or {})
            assert (await hub.call_tool("d__quick", {"label": "x"})).text == "quick x"
            failed = await hub.call_tool("d__fails")  # the task ran, and the tool failed
            assert failed.is_error and failed.text == "it ran and failed"
            with pytest.raises(JSONRPCError) as broken:
                await hub.call_tool("d__broken")
            assert (broken.value.code, broken.value.message) == (-32001, "broken on purpose")
            if downstream == MODERN:
                with pytest.raises(JSONRPCError) as refused:
                    await hub.call_tool("d__add", {"a": 1, "b": 2}, task=False)
                assert refused.value.code == -32021


@era_pairs
async def test_a_client_of_hub_serve_calls_it_like_any_tool(
    tmp_path: Path, upstream: str, downstream: str
) -> None:
    servers = [tasks_server(tmp_path)]
    async with Hub(servers=servers, client_options={"mode": downstream}) as hub:
        await ready(hub)
        async with Client(HubServer(hub), mode=upstream) as client:
            with anyio.fail_after(WAIT):
                result = await client.call_tool("d__add", {"a": 2, "b": 3})
    assert result.structured == {"result": 5}
