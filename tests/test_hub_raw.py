"""``Hub`` against a hand-written stdio server that answers what a test scripts.

``RAW`` is a line-by-line JSON-RPC server (2025-06-18, no SDK) whose listings
and misbehaviour are chosen on its command line, for what a well-behaved
``Server`` never does:

* ``--dup``: lists the tool ``same`` (and the prompt ``p``) twice, with
  different descriptions, beside the tool ``other``;
* ``--relist-hangs``: answers the first ``tools/list`` only; a call of ``poke``
  announces ``notifications/tools/list_changed``, and the listing that follows
  is never answered;
* ``--nameless``: beside the tool ``poke`` (and the prompt ``p``), lists
  tools and a prompt whose ``name`` is absent, empty or not a string.
"""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import anyio
import pytest
from test_hub_support import PY, WAIT, ready, wait_until_dead

from mcpwire import Hub, HubError, ServerConfig, ServerState

pytestmark = pytest.mark.anyio

RAW = textwrap.dedent(
    """
    import json, sys

    argv = sys.argv[1:]
    lists = 0

    def send(message):
        sys.stdout.write(json.dumps(message) + "\\n")
        sys.stdout.flush()

    def tool(name, description=""):
        return {"name": name, "description": description, "inputSchema": {"type": "object"}}

    for line in sys.stdin:
        message = json.loads(line)
        method, rid = message.get("method"), message.get("id")
        if rid is None:
            continue
        if method == "initialize":
            caps = {"tools": {"listChanged": True}, "prompts": {}}
            info = {"name": "raw", "version": "1"}
            result = {"protocolVersion": "2025-06-18", "capabilities": caps, "serverInfo": info}
        elif method == "tools/list":
            lists += 1
            if "--relist-hangs" in argv and lists > 1:
                continue
            tools = [tool("poke")]
            if "--dup" in argv:
                tools = [tool("same", "first"), tool("same", "second"), tool("other")]
            if "--nameless" in argv:
                tools = [{"inputSchema": {"type": "object"}}, tool(""), tool(7), tool("poke")]
            result = {"tools": tools}
        elif method == "prompts/list":
            prompts = [{"name": "p", "description": d} for d in ("first", "second")]
            if "--nameless" in argv:
                prompts = [{"description": "no name"}, {"name": "p"}]
            result = {"prompts": prompts if "--dup" in argv or "--nameless" in argv else []}
        elif method == "tools/call":
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            name = message["params"]["name"]
            result = {"content": [{"type": "text", "text": "called " + name}]}
        else:
            error = {"code": -32601, "message": "unknown method"}
            send({"jsonrpc": "2.0", "id": rid, "error": error})
            continue
        send({"jsonrpc": "2.0", "id": rid, "result": result})
    """
)


@pytest.fixture
def raw(tmp_path: Path) -> str:
    script = tmp_path / "raw_server.py"
    script.write_text(RAW)
    return str(script)


def server(name: str, script: str, *args: str, **options: object) -> ServerConfig:
    return ServerConfig(name=name, command=PY, args=[script, *args], **options)  # type: ignore[arg-type]


async def test_a_refresh_left_unanswered_does_not_hold_up_a_stop_or_restart(raw: str) -> None:
    """A server that never answers the listing after its ``list_changed`` must not
    make ``restart``, a reload's stop or ``aclose`` wait for the call timeout."""
    hub = Hub(servers=[server("h", raw, "--relist-hangs", timeout=60)])
    async with hub:
        await ready(hub)
        first = hub.status("h").pid
        assert first is not None
        assert (await hub.call_tool("h__poke")).content[0].text == "called poke"
        await anyio.sleep(0.3)  # the relisting is sent, and left unanswered
        started = time.monotonic()
        assert await hub.restart("h") is ServerState.READY
        assert time.monotonic() - started < WAIT / 2
        assert hub.status("h").pid != first and await wait_until_dead(first)
        assert (await hub.call_tool("h__poke")).content[0].text == "called poke"
        await anyio.sleep(0.3)
        second = hub.status("h").pid
        assert second is not None
        started = time.monotonic()
        with anyio.fail_after(WAIT / 2):
            await hub.aclose()
        assert time.monotonic() - started < WAIT / 2
        assert await wait_until_dead(second)


async def test_a_tool_listed_twice_is_exposed_once(raw: str) -> None:
    """A listing that names one tool (or prompt) twice exposes it once, as first
    listed, and the second is refused as a name collision with a warning, so a
    provider never sees two functions of one name."""
    async with Hub(servers=[server("r", raw, "--dup")]) as hub:
        await ready(hub)
        tools = hub.tools()
        assert [t.name for t in tools] == ["r__same", "r__other"]
        assert tools[0].description == "first"
        assert hub.status("r").tools == 2
        prompts = hub.prompts()
        assert [p.name for p in prompts] == ["r__p"]
        assert prompts[0].prompt.description == "first"
        warnings = [e.message for e in hub.status("r").error_history if e.level == "warning"]
        assert any("'same' of server 'r' is not exposed" in w for w in warnings)
        assert (await hub.call_tool("r__same")).content[0].text == "called same"


async def test_a_tool_or_prompt_listed_without_a_name_is_not_exposed(raw: str) -> None:
    """A tool (or prompt) whose ``name`` is absent, empty or not a string cannot
    be called: it is not exposed as a bare ``r__``, and the server's history
    says which entry was left out and why; the named ones work as usual."""
    async with Hub(servers=[server("r", raw, "--nameless")]) as hub:
        await ready(hub)
        assert [t.name for t in hub.tools()] == ["r__poke"]
        assert hub.status("r").tools == 1
        assert [p.name for p in hub.prompts()] == ["r__p"]
        warnings = [e.message for e in hub.status("r").error_history if e.level == "warning"]
        assert sorted(w.split(" is not exposed")[0] for w in warnings) == [
            "prompt #0 of server 'r'",
            "tool #0 of server 'r'",
            "tool #1 of server 'r'",
            "tool #2 of server 'r'",
        ]
        assert any("its name 7 is not a non-empty string" in w for w in warnings)
        with pytest.raises(HubError, match="unknown tool 'r__'"):
            await hub.call_tool("r__")
        assert (await hub.call_tool("r__poke")).content[0].text == "called poke"
