"""The hub as one MCP server (``HubServer``, ``mcpwire hub --serve``).

Every downstream server is a real process: the hub test server of
``test_hub_support`` and the reference SDK's ``MCPServer``. Upstream, our
``Client`` (in process, over stdio and over HTTP, both eras) and the
reference SDK's client (over stdio) talk to it.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from http_raw import client, free_port, modern
from inproc import until_listening
from mcp import Client as SdkClient
from mcp import StdioServerParameters
from test_hub_support import PY, WAIT, entry, ready, wait_state, write_scripts

from mcpwire import Client, Hub, HubError, HubServer, JSONRPCError, ServerConfig, ServerState

pytestmark = pytest.mark.anyio

MODERN, LEGACY = "2026-07-28", "2025-11-25"


def servers(script: str, ref: str) -> list[ServerConfig]:
    return [
        ServerConfig(name="a", command=PY, args=[script, "--tag", "A"]),
        ServerConfig(name="b", command=PY, args=[script], include_tools=["echo", "grow", "nap"]),
        ServerConfig(name="ref", command=PY, args=[ref]),
    ]


@asynccontextmanager
async def mirrored(tmp_path: Path, **options: Any) -> AsyncIterator[tuple[Hub, HubServer]]:
    script, ref = write_scripts(tmp_path)
    async with Hub(servers=servers(script, ref)) as hub:
        await ready(hub)
        server = HubServer(hub, **options)
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.follow)
            yield hub, server
            tg.cancel_scope.cancel()


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
async def test_tools_prompts_and_resources_are_mirrored_and_forwarded(
    tmp_path: Path, mode: str
) -> None:
    async with mirrored(tmp_path) as (hub, server), Client(server, mode=mode) as client:
        tools = {t.name: t for t in await client.list_tools()}
        assert set(tools) == {t.name for t in hub.tools()}
        assert {"a__echo", "a__pid", "b__echo", "b__grow", "ref__echo"} <= set(tools)
        assert "b__pid" not in tools  # filtered by includeTools
        for name in ("a__echo", "ref__echo"):
            listed = next(t.tool for t in hub.tools() if t.name == name)
            assert tools[name].input_schema == listed.input_schema
            assert tools[name].output_schema == listed.output_schema
        assert tools["a__echo"].description == "Echo the message back."
        with anyio.fail_after(WAIT):
            assert (await client.call_tool("a__tag")).text == "A"
            assert (await client.call_tool("ref__echo", {"message": "hi"})).text == "hi"
            assert (await client.call_tool("b__echo", {"message": "yo"})).text == "yo"
            prompt = await client.get_prompt("a__hello", {"name": "Ann"})
            assert "Hello, Ann!" in json.dumps(prompt.raw)
            contents = await client.read_resource("test://info")
            assert contents[0].text == "info A"  # the first server to list it wins it
        caps = client.server_capabilities
        for kind in ("tools", "prompts", "resources"):
            assert caps[kind] == {"listChanged": True}
        assert "A test server." in (client.instructions or "")


async def test_progress_is_relayed_and_errors_stay_readable(tmp_path: Path) -> None:
    async with mirrored(tmp_path) as (_, server), Client(server) as client:
        seen: list[tuple[float, float | None]] = []

        async def progress(done: float, total: float | None, message: str | None) -> None:
            seen.append((done, total))

        with anyio.fail_after(WAIT):
            result = await client.call_tool("a__slow", {"steps": 3}, on_progress=progress)
        assert result.text == "done" and seen == [(1, 3), (2, 3), (3, 3)]
        # Bad arguments: the owning server says so, as a tool error.
        with anyio.fail_after(WAIT):
            bad = await client.call_tool("a__echo", {"message": 5})
        assert bad.is_error and "message" in bad.text
        # A server that dies during the call: an error result naming the exit.
        with anyio.fail_after(WAIT):
            crashed = await client.call_tool("a__crash", {"code": 9})
        assert crashed.is_error and "9" in crashed.text
        # Unknown names are the protocol error they are for any server.
        with pytest.raises(JSONRPCError) as caught:
            await client.call_tool("b__pid")
        assert caught.value.code == -32602


async def test_list_changes_reach_the_client(tmp_path: Path) -> None:
    script, ref = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {"a": entry(script), "ref": entry(ref)},
                "profiles": {"all": ["a", "ref"], "a only": ["a"]},
            }
        )
    )
    changes: list[anyio.Event] = [anyio.Event()]

    async def on_note(method: str, params: Any) -> None:
        if method == "notifications/tools/list_changed":
            changes[-1].set()

    async def changed() -> None:
        with anyio.fail_after(WAIT):
            await changes[-1].wait()
        changes.append(anyio.Event())

    async with Hub([config], profile="all", watch=False) as hub:
        await ready(hub)
        server = HubServer(hub)
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.follow)
            async with Client(server, mode="legacy", on_notification=on_note) as client:
                # A downstream list change: the new tool is mirrored and callable.
                with anyio.fail_after(WAIT):
                    await client.call_tool("a__grow", {"name": "fresh"})
                await changed()
                assert "a__fresh" in {t.name for t in await client.list_tools()}
                with anyio.fail_after(WAIT):
                    assert (await client.call_tool("a__fresh")).text == "fresh"
                # A server leaving (here, a profile switch) takes its tools with it.
                await hub.use_profile("a only")
                await changed()
                names = {t.name for t in await client.list_tools()}
                assert "a__echo" in names and not any(n.startswith("ref__") for n in names)
                await hub.use_profile("all")
                await ready(hub)
                await changed()
                assert "ref__echo" in {t.name for t in await client.list_tools()}
            tg.cancel_scope.cancel()


async def tool_names(client: Client) -> set[str]:
    return {t.name for t in await client.list_tools(cache=False)}


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
async def test_the_client_switches_profiles_with_the_profile_tool(
    tmp_path: Path, mode: str
) -> None:
    """Pain point #10 (a set of servers per mode of work), from the client's side."""
    script, ref = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    profiles = {
        "all": {"servers": ["a", "ref"], "description": "everything"},
        "a only": ["a"],
    }
    config.write_text(
        json.dumps({"mcpServers": {"a": entry(script), "ref": entry(ref)}, "profiles": profiles})
    )
    changed = anyio.Event()

    async def on_note(method: str, params: Any) -> None:
        if method == "notifications/tools/list_changed":
            changed.set()

    async with Hub([config], watch=False) as hub:
        await ready(hub)
        assert "use_profile" not in HubServer(hub).tools  # off unless asked for
        server = HubServer(hub, profile_tool=True)
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.follow)
            async with Client(server, mode=mode, on_notification=on_note) as client:
                tools = {t.name: t for t in await client.list_tools()}
                tool = tools["use_profile"]
                assert tool.input_schema["properties"]["profile"]["enum"] == ["", "a only", "all"]
                assert "In force now: every server" in (tool.description or "")
                assert "- all: servers a, ref (everything)" in (tool.description or "")
                with anyio.fail_after(WAIT):
                    result = await client.call_tool("use_profile", {"profile": "a only"})
                assert not result.is_error
                assert result.text.startswith("now running profile 'a only': ")
                assert "ref" not in result.text.split(":", 1)[1]
                assert hub.profile == "a only"
                # The mirror follows (announced in the legacy era; the notifications
                # themselves are checked by test_list_changes_reach_the_client).
                with anyio.fail_after(WAIT):
                    while any(n.startswith("ref__") for n in await tool_names(client)):
                        await anyio.sleep(0.02)
                assert {"a__echo", "use_profile"} <= await tool_names(client)
                if mode == "legacy":
                    assert changed.is_set()
                refused = await client.call_tool("use_profile", {"profile": "nope"})
                assert refused.is_error and "no profile named 'nope'" in refused.text
                for odd in ({"profile": {"a": 1}}, {"profile": 5}, {}):
                    assert (await client.call_tool("use_profile", odd)).is_error
                assert hub.profile == "a only"
                with anyio.fail_after(WAIT):
                    back = await client.call_tool("use_profile", {"profile": ""})
                assert back.text.startswith("now running every server: ")
                assert "ref" in back.text and hub.profile is None
            tg.cancel_scope.cancel()
    async with Hub(servers=servers(script, ref)) as plain:
        # No profiles in the config: nothing to switch, so no tool.
        assert "use_profile" not in HubServer(plain, profile_tool=True).tools


async def test_search_mode_offers_three_tools(tmp_path: Path) -> None:
    async with mirrored(tmp_path, search=True) as (_, server), Client(server) as client:
        tools = [t.name for t in await client.list_tools()]
        assert tools == ["search_tools", "describe_tool", "call_tool"]
        with anyio.fail_after(WAIT):
            found = await client.call_tool("search_tools", {"query": "echo"})
            names = [t["name"] for t in found.structured["tools"]]
            assert {"a__echo", "b__echo", "ref__echo"} <= set(names)
            called = await client.call_tool(
                "call_tool", {"name": "ref__echo", "arguments": {"message": "via search"}}
            )
        assert called.text == "via search"


# -- the CLI, with other peers ---------------------------------------------------------


def write_config(tmp_path: Path) -> Path:
    script, ref = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "a": entry(script, "--tag", "A"),
                    "ref": entry(ref),
                    "off": entry(script),
                },
                "profiles": {"main": ["a", "ref"]},
            }
        )
    )
    return config


def hub_argv(config: Path, *extra: str) -> list[str]:
    return ["-m", "mcpwire", "hub", "--config", str(config), "--profile", "main", *extra]


async def test_the_reference_sdk_client_uses_the_hub_over_stdio(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    params = StdioServerParameters(
        command=sys.executable, args=hub_argv(config, "--serve", "stdio", "--profile-tool")
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with anyio.fail_after(60):
            async with SdkClient(params, read_timeout_seconds=30, cache=None) as sdk:
                listed = await sdk.list_tools()
                names = {t.name for t in listed.tools}
                assert {"a__echo", "ref__echo"} <= names
                assert not any(n.startswith("off__") for n in names)  # not in the profile
                result = await sdk.call_tool("ref__echo", {"message": "from the SDK"})
                assert result.content[0].text == "from the SDK"  # type: ignore[union-attr]
                result = await sdk.call_tool("a__tag", {})
                assert result.content[0].text == "A"  # type: ignore[union-attr]
                # --profile-tool: the client runs every server, "off" included.
                assert "use_profile" in names
                result = await sdk.call_tool("use_profile", {"profile": ""})
                assert "off" in result.content[0].text  # type: ignore[union-attr]
                result = await sdk.call_tool("off__tag", {})
                assert not result.is_error and result.content[0].text == "x"  # type: ignore[union-attr]


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
async def test_our_client_and_the_sdk_use_the_hub_over_http(tmp_path: Path, mode: str) -> None:
    config = write_config(tmp_path)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, *hub_argv(config, "--serve", "http", "--port", str(port))],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        await until_listening(port, timeout=60)
        url = f"http://127.0.0.1:{port}/mcp"
        with anyio.fail_after(WAIT):
            async with Client.http(url, mode=mode) as client:
                assert (await client.call_tool("a__echo", {"message": "x"})).text == "x"
                names = {t.name for t in await client.list_tools()}
                assert "ref__echo" in names and "off__echo" not in names
        with warnings.catch_warnings(), anyio.fail_after(WAIT):
            warnings.simplefilter("ignore")
            async with SdkClient(url, mode=mode, read_timeout_seconds=15, cache=None) as sdk:  # type: ignore[arg-type]
                assert "a__tag" in {t.name for t in (await sdk.list_tools()).tools}
                result = await sdk.call_tool("ref__echo", {"message": "SDK over HTTP"})
                assert result.content[0].text == "SDK over HTTP"  # type: ignore[union-attr]
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert out == b""  # nothing but MCP, and over HTTP not even that on stdout


async def test_hub_cli_serve_http_takes_the_serving_options(tmp_path: Path) -> None:
    """``hub --serve http`` has ``serve``'s allow-lists and ``--responses``: an
    origin outside the list given is refused, and answers come as event streams."""
    config = write_config(tmp_path)
    port = free_port()
    options = ["--allowed-origin", "https://app.example", "--responses", "stream"]
    proc = subprocess.Popen(
        [sys.executable, *hub_argv(config, "--serve", "http", "--port", str(port), *options)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        await until_listening(port, timeout=60)
        body, headers = modern(1, "tools/call", {"name": "a__echo", "arguments": {"message": "x"}})
        with anyio.fail_after(WAIT):
            async with client(port) as raw:
                reply = await raw.request(
                    body=body, headers={**headers, "origin": "https://app.example"}
                )
                assert reply.status == 200, reply
                assert reply.headers["content-type"] == "text/event-stream"
                assert reply.messages()[-1]["result"]["content"][0]["text"] == "x"
                # The list replaces the default: a localhost origin is no longer let in.
                refused = await raw.request(
                    body=body, headers={**headers, "origin": "http://localhost:3000"}
                )
                assert refused.status == 403
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


async def test_hub_cli_serve_usage_errors(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    for extra in (
        ["--search"],
        ["--profile-tool"],
        ["--serve", "stdio", "--json"],
        ["--serve", "http", "--port", "-1"],
        ["--responses", "stream"],
        ["--serve", "stdio", "--allowed-origin", "https://app.example"],
        ["--port", "1234"],  # without --serve http: nothing would listen
        ["--serve", "stdio", "--host", "0.0.0.0"],
    ):
        proc = subprocess.run(
            [sys.executable, *hub_argv(config, *extra)],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert proc.returncode == 2, (extra, proc.stderr)
        if "--serve" in extra and "--allowed-origin" in extra:
            assert "--allowed-origin goes with --serve http" in proc.stderr
        if len(extra) > 1 and extra[-2] in ("--port", "--host") and "http" not in extra:
            assert f"{extra[-2]} goes with --serve http" in proc.stderr


async def test_a_server_that_comes_up_later_is_announced(tmp_path: Path) -> None:
    """Capabilities offer tools from the start; a slow server's tools arrive with a
    list_changed notification."""
    script, _ = write_scripts(tmp_path)
    slow = ServerConfig(name="slow", command=PY, args=[script, "--sleep", "1.0"])
    async with Hub(servers=[slow]) as hub:
        server = HubServer(hub)
        assert server.tools == {}
        changed = anyio.Event()

        async def on_note(method: str, params: Any) -> None:
            if method == "notifications/tools/list_changed":
                changed.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(server.follow)
            async with Client(server, mode="legacy", on_notification=on_note) as client:
                assert client.server_capabilities["tools"] == {"listChanged": True}
                assert await client.list_tools() == []
                with anyio.fail_after(WAIT):
                    await changed.wait()
                await wait_state(hub, "slow", ServerState.READY)
                assert "slow__echo" in {t.name for t in await client.list_tools()}
            tg.cancel_scope.cancel()


async def test_hub_cli_serve_on_a_taken_port_says_so(tmp_path: Path) -> None:
    config = write_config(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        proc = subprocess.run(
            [sys.executable, *hub_argv(config, "--serve", "http", "--port", str(port))],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert proc.returncode == 3
    assert f"cannot listen on 127.0.0.1:{port}" in proc.stderr
    assert "Traceback" not in proc.stderr


CANCEL_SERVER = """
import sys
import anyio
from mcpwire import Server

server = Server("cancel-probe", "1.0")

@server.tool()
async def block(marker: str) -> str:
    \"\"\"Wait forever; write the marker file when cancelled.\"\"\"
    try:
        await anyio.sleep(3600)
    finally:
        with open(marker, "w") as f:
            f.write("cancelled")
    return "never"

server.run()
"""


async def test_cancelling_upstream_cancels_downstream(tmp_path: Path) -> None:
    script = tmp_path / "cancel_probe.py"
    script.write_text(CANCEL_SERVER)
    marker = tmp_path / "marker"
    probe = ServerConfig(name="probe", command=PY, args=[str(script)])
    async with Hub(servers=[probe]) as hub:
        await ready(hub)
        async with Client(HubServer(hub)) as client:
            with anyio.move_on_after(0.5):
                await client.call_tool("probe__block", {"marker": str(marker)})
            with anyio.fail_after(WAIT):
                while not marker.exists():
                    await anyio.sleep(0.02)
        assert marker.read_text() == "cancelled"
        assert hub.status("probe").state is ServerState.READY  # cancelled, not crashed


#: A downstream server written by hand, listing things no SDK would: odd types in
#: every field, a template that is not RFC 6570, prompt arguments of every shape.
ODD_SERVER = r"""
import json, sys

LISTS = {
    "tools/list": {"tools": [
        {"name": "odd", "inputSchema": {"type": "object"}, "annotations": ["x"],
         "outputSchema": "not a schema", "icons": {"a": 1}, "title": 5, "_meta": 3},
        {"name": "plain", "inputSchema": {"type": "object"}},
    ]},
    "resources/list": {"resources": [
        {"uri": "odd://r", "name": 5, "mimeType": 7, "annotations": "x"},
        {"uri": "odd://r", "name": "duplicate"},
    ]},
    "resources/templates/list": {"resourceTemplates": [
        {"uriTemplate": "odd://{", "name": "broken"},
        {"uriTemplate": "odd://items/{id}", "name": "items"},
    ]},
    "prompts/list": {"prompts": [
        {"name": "p1", "arguments": "x"},
        {"name": "p2", "arguments": [1, {"name": 2}, {"name": "ok", "required": True}]},
    ]},
}

for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, params = msg.get("method"), msg.get("params") or {}
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "serverInfo": {"name": "odd", "version": "0"},
                  "capabilities": {"tools": {}, "resources": {}, "prompts": {}}}
    elif method in LISTS:
        result = LISTS[method]
    elif method == "resources/read":
        result = {"contents": [{"uri": params["uri"], "text": "read " + params["uri"]}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "called " + params["name"]}],
                  "_meta": {"odd/extra": True}}
    elif method == "prompts/get":
        result = {"messages": [{"role": "user", "content": {"type": "text",
                  "text": json.dumps(params.get("arguments"))}}]}
    elif method == "ping":
        result = {}
    else:
        answer = {"jsonrpc": "2.0", "id": msg["id"],
                  "error": {"code": -32601, "message": "Method not found"}}
        print(json.dumps(answer), flush=True)
        continue
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


@pytest.mark.parametrize("mode", [MODERN, "legacy"])
async def test_odd_listings_are_mirrored_as_far_as_they_make_sense(
    tmp_path: Path, mode: str
) -> None:
    script = tmp_path / "odd_server.py"
    script.write_text(ODD_SERVER)
    odd = ServerConfig(name="odd", command=PY, args=[str(script)])
    async with Hub(servers=[odd]) as hub:
        await ready(hub)
        assert hub.status("odd").state is ServerState.READY
        async with Client(HubServer(hub), mode=mode) as client:
            tools = {t.name: t for t in await client.list_tools()}
            assert set(tools) == {"odd__odd", "odd__plain"}
            assert tools["odd__odd"].annotations is None and tools["odd__odd"].title is None
            with anyio.fail_after(WAIT):
                called = await client.call_tool("odd__odd")
            assert called.text == "called odd" and (called.meta or {}).get("odd/extra") is True
            resources = await client.list_resources()
            assert [r.uri for r in resources] == ["odd://r"]
            templates = await client.list_resource_templates()
            assert [t.uri_template for t in templates] == ["odd://items/{id}"]
            with anyio.fail_after(WAIT):
                assert (await client.read_resource("odd://items/7"))[0].text == "read odd://items/7"
                assert (await client.read_resource("odd://r"))[0].text == "read odd://r"
            prompts = {p.name: p for p in await client.list_prompts()}
            assert prompts["odd__p1"].arguments == []
            assert [a.name for a in prompts["odd__p2"].arguments] == ["ok"]
            with anyio.fail_after(WAIT):
                got = await client.get_prompt("odd__p2", {"ok": "yes"})
            assert got.raw["messages"][0]["content"]["text"] == '{"ok": "yes"}'


async def test_completions_are_asked_of_the_owning_server(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    everything = ServerConfig(name="ev", command=PY, args=["-m", "mcpwire.examples.everything"])
    plain = ServerConfig(name="a", command=PY, args=[script])
    async with Hub(servers=[everything, plain]) as hub:
        await ready(hub)
        async with Client(HubServer(hub)) as client:
            assert "completions" in client.server_capabilities
            with anyio.fail_after(WAIT):
                styles = await client.complete(
                    {"type": "ref/prompt", "name": "ev__greet"}, "style", "p"
                )
                items = await client.complete(
                    {"type": "ref/resource", "uri": "demo://items/{item_id}"}, "item_id", "4"
                )
                none = await client.complete({"type": "ref/prompt", "name": "a__hello"}, "name", "")
            assert styles.values == ["pirate", "poetic"] and styles.total == 2
            assert items.values == ["42"]
            assert none.values == []  # the server has no completer for it
            with pytest.raises(JSONRPCError) as caught:
                await client.complete({"type": "ref/prompt", "name": "nope"}, "x", "")
            assert caught.value.code == -32602
        # The hub's own API, which the mirror goes through.
        with anyio.fail_after(WAIT):
            direct = await hub.complete({"type": "ref/prompt", "name": "ev__greet"}, "style", "f")
        assert direct.values == ["friendly", "formal"]
        template = {"type": "ref/resource", "uri": "demo://items/{item_id}"}
        with pytest.raises(HubError, match="say which server"):
            await hub.complete(template, "item_id", "")
        with anyio.fail_after(WAIT):
            assert (await hub.complete(template, "item_id", "", server="ev")).total == 4
