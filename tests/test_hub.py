"""``Hub`` with real child processes: discovery, isolation, calls, supervision.

Every server here is a real process: the bundled example server, the script in
``test_hub_support`` (which misbehaves on request) and a reference-SDK
``MCPServer``. Pain points covered: 1 (no silent hangs: startup timeouts), 5
(banner lines on stdout), 6 (stderr tail in errors), 7 (no orphans after
``aclose``), 10 (tool-count warnings, include/exclude), 11 (names, collisions),
16 (restart with backoff, crash-loop suspension, reconnect on the next call),
17 (parallel discovery; the hub is usable while slow servers start).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from http_client.child import free_port
from inproc import until_listening
from test_hub_support import (
    FAST,
    PY,
    WAIT,
    alive,
    became,
    entry,
    ready,
    wait_event,
    wait_state,
    wait_until_dead,
    write_config,
    write_scripts,
)

from mcpwire import (
    Client,
    ConfigError,
    ConnectionClosed,
    Hub,
    HubError,
    HubEvent,
    RequestTimeout,
    ResourcesChanged,
    RestartPolicy,
    ServerConfig,
    ServerState,
    ServerStateChanged,
    ToolCallRefused,
    ToolCountWarning,
    ToolsChanged,
    parse_config,
)

pytestmark = pytest.mark.anyio

EVERYTHING = ["-m", "mcpwire.examples.everything"]


@pytest.fixture
def scripts(tmp_path: Path) -> tuple[str, str]:
    return write_scripts(tmp_path)


def server(name: str, script: str, *args: str, **options: Any) -> ServerConfig:
    return ServerConfig(name=name, command=PY, args=[script, *args], **options)


async def test_discovery_is_parallel_isolated_and_usable_early(
    scripts: tuple[str, str],
) -> None:
    """#17: one slow, one hanging, one missing and one noisy server do not hold up
    the others; #1: the hanging one fails at its startup timeout; #5: banner
    lines on stdout do not break a server."""
    script, ref = scripts
    hub = Hub(
        servers=[
            ServerConfig(name="everything", command=PY, args=EVERYTHING),
            server("slow", script, "--sleep", "1.5", "--tag", "slow"),
            server("hang", script, "--hang", startup_timeout=1.0),
            ServerConfig(name="missing", command="no-such-mcp-server-anywhere"),
            server("noisy", script, "--banner", "--tag", "noisy"),
            ServerConfig(name="ref", command=PY, args=[ref]),
        ],
        restart_policy=RestartPolicy(initial_backoff=30),
    )
    seen: list[HubEvent] = []
    async with hub:
        events = hub.events()
        assert hub.status("slow").state is ServerState.STARTING  # returned at once
        await wait_event(events, became("everything", ServerState.READY), seen=seen)
        # Usable while others are still starting:
        assert hub.status("slow").state is ServerState.STARTING
        result = await hub.call_tool("everything__echo", {"message": "early"})
        assert result.content[0].text == "early"
        await ready(hub)
        seen.extend(events.pending())
        states = {s.name: s.state for s in hub.statuses()}
        assert states == {
            "everything": ServerState.READY,
            "slow": ServerState.READY,
            "hang": ServerState.FAILED,
            "missing": ServerState.FAILED,
            "noisy": ServerState.READY,
            "ref": ServerState.READY,
        }
        ready_order = [
            e.server
            for e in seen
            if isinstance(e, ServerStateChanged) and e.new is ServerState.READY
        ]
        assert ready_order.index("everything") < ready_order.index("slow")
        assert ready_order.index("noisy") < ready_order.index("slow")
        hang = hub.status("hang")
        assert hang.last_error == "startup timed out after 1 s"
        missing = hub.status("missing")
        assert missing.last_error is not None and "was not found on PATH" in missing.last_error
        assert missing.reason == "could not start"
        assert (await hub.call_tool("noisy__tag", {})).content[0].text == "noisy"
        assert (await hub.call_tool("ref__echo", {"message": "sdk"})).content[0].text == "sdk"
        assert (await hub.call_tool("slow__tag", {})).content[0].text == "slow"
        assert hub.status("ref").server_info["name"] == "ref-echo"
        with pytest.raises(HubError, match="unknown tool"):
            await hub.call_tool("missing__anything", {})  # never listed
    assert hub.status("everything").state is ServerState.STOPPED


async def test_crash_mid_call_fails_the_call_and_the_server_restarts(
    scripts: tuple[str, str],
) -> None:
    """#16, #6: the call fails with the exit status and stderr tail; the server
    comes back after a backoff and serves again."""
    script, _ = scripts
    async with Hub(servers=[server("crashy", script)], restart_policy=FAST) as hub:
        await ready(hub)
        events = hub.events()
        first_pid = hub.status("crashy").pid
        assert first_pid is not None
        with pytest.raises(ConnectionClosed) as info:
            await hub.call_tool("crashy__crash", {"code": 3})
        assert info.value.exit_code == 3
        assert "about to crash: simulated failure" in info.value.stderr_tail
        seen: list[HubEvent] = []
        await wait_event(events, became("crashy", ServerState.READY), seen=seen)
        lost = next(e for e in seen if isinstance(e, ServerStateChanged))
        assert lost.new is ServerState.RESTARTING and lost.old is ServerState.READY
        assert lost.error is not None and "exited with code 3" in lost.error
        status = hub.status("crashy")
        assert status.pid not in (None, first_pid) and status.restarts == 1
        (entry_,) = status.error_history
        assert "connection lost" in entry_.message
        assert "about to crash" in entry_.stderr_tail and entry_.timestamp > 0
        assert (await hub.call_tool("crashy__echo", {"message": "back"})).content[0].text == "back"


async def test_a_dead_connection_reconnects_on_the_next_call(scripts: tuple[str, str]) -> None:
    """#16: killed from outside, with a long backoff: the next call reconnects at once."""
    script, _ = scripts
    policy = RestartPolicy(initial_backoff=60, jitter=0)
    async with Hub(servers=[server("victim", script)], restart_policy=policy) as hub:
        await ready(hub)
        pid = hub.status("victim").pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        await wait_state(hub, "victim", ServerState.RESTARTING)
        with anyio.fail_after(WAIT):
            result = await hub.call_tool("victim__pid", {})
        assert result.structured == {"result": hub.status("victim").pid} != {"result": pid}


async def test_crash_loops_are_suspended_until_restart(scripts: tuple[str, str]) -> None:
    """#16: five failures within the window suspend the server; restart() clears it."""
    script, _ = scripts
    policy = RestartPolicy(initial_backoff=0.05, max_backoff=0.1, crash_loop_count=3)
    servers = [
        server("flaky", script, "--die-after", "0.3"),
        server("broken", script, "--exit-at-start"),
    ]
    async with Hub(servers=servers, restart_policy=policy) as hub:
        events = hub.events()

        def suspended(event: HubEvent) -> bool:
            return (
                isinstance(event, ServerStateChanged)
                and "crash loop" in hub.status(event.server).reason
            )

        await wait_event(events, suspended)
        await wait_event(events, suspended)
        flaky = hub.status("flaky")
        assert flaky.reason == "crash loop: 3 failures within 60 s"
        assert any("dying on purpose" in e.stderr_tail for e in flaky.error_history)
        broken = hub.status("broken")
        assert "exited with code 7" in (broken.error_history[0].message)
        assert "fatal: bad setup" in broken.error_history[0].stderr_tail
        with pytest.raises(HubError, match="crash loop"):
            await hub.call_tool("flaky__echo", {"message": "x"})
        # Suspended means no more attempts:
        restarts = hub.status("flaky").restarts
        await anyio.sleep(0.5)
        assert hub.status("flaky").restarts == restarts
        assert await hub.restart("flaky") is ServerState.READY
        assert (await hub.call_tool("flaky__echo", {"message": "x"})).content[0].text == "x"


async def test_inherit_env_keeps_the_hubs_environment_from_a_server(
    scripts: tuple[str, str],
) -> None:
    """Pain point #3: ``inheritEnv`` in a config entry decides what a stdio
    server sees of the hub's environment; ``env`` and the essentials (``PATH``)
    always arrive."""
    script, _ = scripts
    entries = {
        "all": entry(script, env={"FOO": "bar"}),
        "none": entry(script, env={"FOO": "bar"}, inheritEnv=False),
        "some": entry(script, env={"FOO": "bar"}, inheritEnv=["MCPWIRE_TEST_ALLOWED"]),
    }
    os.environ["MCPWIRE_TEST_ALLOWED"] = "allowed"
    os.environ["MCPWIRE_TEST_SECRET"] = "secret"
    try:
        servers = list(parse_config({"mcpServers": entries}, environ={}).servers.values())
        async with Hub(servers=servers) as hub:
            await ready(hub)

            async def seen(name: str, variable: str) -> str | None:
                result = await hub.call_tool(f"{name}__env", {"name": variable})
                return result.content[0].text  # type: ignore[union-attr]

            for name in entries:
                assert await seen(name, "FOO") == "bar"
                assert await seen(name, "PATH") == os.environ["PATH"]
            assert await seen("all", "MCPWIRE_TEST_SECRET") == "secret"
            assert await seen("some", "MCPWIRE_TEST_ALLOWED") == "allowed"
            assert await seen("some", "MCPWIRE_TEST_SECRET") == "<unset>"
            assert await seen("none", "MCPWIRE_TEST_ALLOWED") == "<unset>"
    finally:
        os.environ.pop("MCPWIRE_TEST_ALLOWED", None)
        os.environ.pop("MCPWIRE_TEST_SECRET", None)


async def test_restart_on_demand_and_disabled_servers(scripts: tuple[str, str]) -> None:
    script, _ = scripts
    servers = [server("a", script), server("off", script, disabled=True)]
    async with Hub(servers=servers) as hub:
        await ready(hub)
        assert hub.status("off").state is ServerState.DISABLED
        assert hub.status("off").reason == "disabled in config"
        pid = hub.status("a").pid
        assert await hub.restart("a") is ServerState.READY
        assert hub.status("a").pid != pid
        assert pid is not None and await wait_until_dead(pid)
        with pytest.raises(ToolCallRefused, match="disabled"):
            await hub.restart("off")
        with pytest.raises(HubError, match="no server named"):
            await hub.restart("nope")


async def test_approval_hook_always_allow_and_refusals(scripts: tuple[str, str]) -> None:
    """The approval hook (seed 000's askApproval), alwaysAllow, disabledTools, filters."""
    script, _ = scripts
    asked: list[tuple[str, str, dict[str, Any]]] = []

    async def approve(server_name: str, tool: str, args: dict[str, Any]) -> bool:
        asked.append((server_name, tool, args))
        return args.get("message") != "no"

    servers = [
        server(
            "s",
            script,
            always_allow=["tag", "p*"],
            disabled_tools=["crash"],
            exclude_tools=["grow"],
        ),
        server("trusted", script, trust=True, include_tools=["echo", "t*"]),
    ]
    async with Hub(servers=servers, approve=approve) as hub:
        await ready(hub)
        assert (await hub.call_tool("s__echo", {"message": "yes"})).content[0].text == "yes"
        with pytest.raises(ToolCallRefused, match="'s__echo' was not approved"):
            await hub.call_tool("s__echo", {"message": "no"})
        await hub.call_tool("s__tag")
        await hub.call_tool("s__pid")
        await hub.call_tool("trusted__echo", {"message": "t"})
        assert asked == [("s", "echo", {"message": "yes"}), ("s", "echo", {"message": "no"})]
        with pytest.raises(ToolCallRefused, match=r"'crash' of server 's' is disabled"):
            await hub.call_tool("s__crash")
        with pytest.raises(ToolCallRefused, match="filtered out by the server's includeTools"):
            await hub.call_tool("s__grow", {"name": "x"})
        with pytest.raises(ToolCallRefused, match="filtered out"):
            await hub.call_tool("trusted__pid")
        with pytest.raises(HubError, match="unknown tool 'nope__echo'"):
            await hub.call_tool("nope__echo")
        names = [t.name for t in hub.tools()]
        assert names == [
            "s__echo", "s__pid", "s__tag", "s__env", "s__slow", "s__nap", "trusted__echo",
            "trusted__tag",
        ]  # fmt: skip
        disabled = [t for t in hub.tools(include_disabled=True) if not t.enabled]
        assert [(t.name, t.original_name) for t in disabled] == [("s__crash", "crash")]
        flags = {t.name: t.always_allow for t in hub.tools()}
        assert flags["s__tag"] and flags["trusted__echo"] and not flags["s__echo"]
        assert hub.resolve("s__echo") == ("s", "echo")


async def test_progress_timeout_and_prompts_through_the_hub(scripts: tuple[str, str]) -> None:
    script, _ = scripts
    progress: list[float] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(done)

    async with Hub(servers=[server("s", script, timeout=5)]) as hub:
        await ready(hub)
        result = await hub.call_tool("s__slow", {"steps": 3}, on_progress=on_progress)
        assert result.content[0].text == "done" and progress == [1, 2, 3]
        (prompt,) = hub.prompts()
        assert prompt.name == "s__hello"
        got = await hub.get_prompt("s__hello", {"name": "Ada"})
        assert "Hello, Ada!" in str(got.messages)
        contents = await hub.read_resource("test://info")
        assert contents[0].text == "info x"
        with pytest.raises(HubError, match="unknown prompt"):
            await hub.get_prompt("s__nope")


async def test_name_collisions_are_refused_loudly(scripts: tuple[str, str]) -> None:
    """#11: a literal tool name equal to another server's hashed name needs two
    servers whose names sanitize alike ("s.x", "s_x"): such a config is refused,
    naming both (a clash within one listing is ``test_hub_raw``'s); a server name
    with the separator is refused."""
    script, _ = scripts
    async with Hub(servers=[server("s.x", script)]) as probe:
        await ready(probe)
        hashed = next(t.name for t in probe.tools() if t.original_name == "echo")
    literal = hashed[len("s_x__") :]
    servers = [
        server("s.x", script),
        server("s_x", script, "--extra-tool", literal, "--sleep", "0.3"),
        server("bad__name", script),
    ]
    with pytest.raises(ConfigError, match=r"servers 's\.x' .* and 's_x' both become 's_x'"):
        async with Hub(servers=servers):
            pass
    async with Hub(servers=[servers[0], servers[2]]) as hub:
        await ready(hub)
        assert hub.resolve(hashed) == ("s.x", "echo")
        assert (await hub.call_tool(hashed, {"message": "m"})).content[0].text == "m"
        bad = hub.status("bad__name")
        assert bad.state is ServerState.FAILED and "contains the separator" in bad.reason


async def test_provider_rule_and_hash_shortening_in_a_live_hub(scripts: tuple[str, str]) -> None:
    """#11: the gemini profile, a custom separator; names over 64 are cut and hashed."""
    script, _ = scripts
    long_name = "a-really-long-server-name-that-goes-on-and-on-and-on-and-on"
    assert len(long_name) == 59
    async with Hub(servers=[server(long_name, script)], name_rule="gemini", separator=".") as hub:
        await ready(hub)
        tools = {t.original_name: t.name for t in hub.tools()}
        assert tools["echo"] == f"{long_name}.echo"  # 64 characters: used as is
        crash = tools["crash"]  # 65 characters as is: cut, with a hash
        assert len(crash) == 64 and crash != f"{long_name}.crash"
        assert crash.startswith(long_name[:55]) and re.fullmatch(r".*_[0-9a-f]{8}", crash)
        assert hub.resolve(crash) == (long_name, "crash")
        result = await hub.call_tool(tools["echo"], {"message": "fits"})
        assert result.content[0].text == "fits"
    with pytest.raises(ValueError, match="separator"):
        Hub(separator="/")


async def test_tool_count_warning_names_the_largest_servers(scripts: tuple[str, str]) -> None:
    """#10: thresholds crossed upwards publish a warning naming the biggest servers."""
    script, _ = scripts
    servers = [server("big", script, "--many", "30"), server("small", script)]
    async with Hub(servers=servers, tool_count_warnings=(20, 40)) as hub:
        events = hub.events()
        seen: list[HubEvent] = []
        await wait_event(
            events, lambda e: isinstance(e, ToolCountWarning) and e.threshold == 40, seen=seen
        )
        warnings = [e for e in seen if isinstance(e, ToolCountWarning)]
        assert [w.threshold for w in warnings] == [20, 40]
        assert warnings[-1].largest[0][:2] == ("big", 38)
        assert warnings[-1].largest[0][2] > 0  # a token estimate


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_list_changed_refreshes_the_registry(scripts: tuple[str, str], mode: str) -> None:
    """A server that adds a tool announces it; the hub re-lists (both eras)."""
    script, _ = scripts
    async with Hub(servers=[server("g", script)], client_options={"mode": mode}) as hub:
        await ready(hub)
        events = hub.events()
        before = len(hub.tools())
        await hub.call_tool("g__grow", {"name": "fresh"})
        changed = await wait_event(events, lambda e: isinstance(e, ToolsChanged))
        assert isinstance(changed, ToolsChanged) and changed.after == before + 1
        assert (await hub.call_tool("g__fresh")).content[0].text == "fresh"


def test_resources_changed_is_published_when_the_listed_resources_change() -> None:
    """``ResourcesChanged`` counts resources and templates together, and comes only
    when what a server lists changed: on discovery, a list change, removal."""
    from mcpwire import Resource, ResourceTemplate
    from mcpwire._hub_names import NAME_PROFILES
    from mcpwire._hub_registry import Registry
    from mcpwire._hub_status import Discovery

    seen: list[HubEvent] = []
    registry = Registry("__", NAME_PROFILES["default"], (), seen.append)
    config = ServerConfig(name="s", command=PY)
    note = Resource.from_json({"uri": "note://x", "name": "x"})
    docs = ResourceTemplate.from_json({"uriTemplate": "doc://{n}", "name": "doc"})
    registry.register(config, Discovery(resources=[note]))
    registry.register(config, Discovery(resources=[note]))  # the same: no event
    registry.register(config, Discovery(resources=[note], templates=[docs]))
    registry.forget("s")
    changed = [e for e in seen if isinstance(e, ResourcesChanged)]
    assert [(e.server, e.before, e.after) for e in changed] == [
        ("s", 0, 1),
        ("s", 1, 2),
        ("s", 2, 0),
    ]
    assert changed[0].to_json()["event"] == "ResourcesChanged"


async def test_events_stream_and_system_prompt(scripts: tuple[str, str]) -> None:
    script, _ = scripts
    servers = [
        ServerConfig(name="everything", command=PY, args=EVERYTHING, include_tools=["echo", "add"]),
        ServerConfig(name="missing", command="no-such-mcp-server-anywhere"),
        server("off", script, disabled=True),
    ]
    async with Hub(servers=servers, event_buffer=2) as hub:
        tiny = hub.events()  # never read until the end: it keeps the newest two
        events = hub.events(buffer=100)
        await ready(hub)
        kinds = [(type(e).__name__, getattr(e, "server", None)) for e in events.pending()]
        assert ("ToolsChanged", "everything") in kinds
        assert ("ResourcesChanged", "everything") in kinds
        assert ("ServerStateChanged", "missing") in kinds
        assert tiny.dropped > 0 and len(tiny.pending()) == 2
        text = hub.system_prompt()
    assert text.startswith("MCP SERVERS\n")
    assert "# Connected MCP Servers" in text
    assert "## everything (mcpwire example server)" in text
    assert "### Instructions\nA demonstration server" in text
    assert (
        "- everything__echo: Echo the message back.\n    Input: message: string (required)" in text
    )
    assert "- everything__add: Add two integers" in text and "everything__long_task" not in text
    assert "- demo://readme (readme)" in text
    assert "### Resource Templates\n- demo://items/{item_id}" in text
    assert "# Unavailable MCP Servers" in text and "- missing: failed" in text
    assert "off" not in text.split("# Unavailable MCP Servers")[1]


async def test_no_orphan_processes_after_aclose(scripts: tuple[str, str], tmp_path: Path) -> None:
    """#7: every child and grandchild is gone after aclose, including a server that
    is still starting and one that is between restarts."""
    script, _ = scripts
    grandchild_file = tmp_path / "grandchild.pid"
    servers = [
        server("parent", script, "--grandchild", str(grandchild_file)),
        server("starting", script, "--hang", startup_timeout=60),
        ServerConfig(name="everything", command=PY, args=EVERYTHING),
    ]
    hub = Hub(servers=servers)
    async with hub:
        await wait_state(hub, "parent", ServerState.READY)
        await wait_state(hub, "everything", ServerState.READY)
        pids = [hub.status(n).pid for n in ("parent", "everything")]
        grandchild = int(grandchild_file.read_text())
        assert alive(grandchild)
        pids.append(hub.status("starting").pid)  # spawned, never answering
        assert hub.status("starting").state is ServerState.STARTING
    for pid in [*pids, grandchild]:
        assert pid is not None and await wait_until_dead(pid), pid
    assert {s.state for s in hub.statuses()} == {ServerState.STOPPED}
    with pytest.raises(HubError, match="not running"):
        await hub.call_tool("parent__echo", {"message": "x"})


async def test_aclose_inside_async_with_under_a_scope(scripts: tuple[str, str]) -> None:
    """#8: aclose() from under a cancel scope (here a deadline, and a task group of
    the caller's) stops every server; the hub's task group is exited by the block."""
    script, _ = scripts
    async with Hub(servers=[server("a", script)]) as hub:
        await wait_state(hub, "a", ServerState.READY)
        pid = hub.status("a").pid
        async with anyio.create_task_group():
            with anyio.fail_after(WAIT):
                await hub.aclose()
                await hub.aclose()  # idempotent
        assert pid is not None and await wait_until_dead(pid)
        assert {s.state for s in hub.statuses()} == {ServerState.STOPPED}
        with pytest.raises(HubError, match="not running"):
            await hub.call_tool("a__echo", {"message": "x"})


async def test_http_servers_connect_through_client_http_or_fail_clearly(tmp_path: Path) -> None:
    servers = [ServerConfig(name="remote", url="http://127.0.0.1:9/mcp", startup_timeout=3)]
    async with Hub(servers=servers, restart_policy=RestartPolicy(initial_backoff=30)) as hub:
        await ready(hub)
        status = hub.status("remote")
        assert status.state is ServerState.FAILED and status.transport == "http"
        if not hasattr(Client, "http"):
            assert status.last_error == "HTTP transport not available"


async def test_close_does_not_hang_when_stdout_stays_open(
    scripts: tuple[str, str], tmp_path: Path
) -> None:
    """A grandchild that escaped the process group keeps the server's stdout open
    after the server is gone: closing must still end the connection (on asyncio
    the stdio transport's reader used to spin and freeze the event loop)."""
    script, _ = scripts
    pid_file = tmp_path / "escaped.pid"
    try:
        with anyio.fail_after(WAIT):
            async with Hub(servers=[server("s", script, "--escape", str(pid_file))]) as hub:
                await ready(hub)
                assert await hub.restart("s") is ServerState.READY
        assert hub.status("s").state is ServerState.STOPPED
    finally:
        for line in pid_file.read_text().split() if pid_file.exists() else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line), signal.SIGKILL)


async def test_http_and_sse_servers_from_config(tmp_path: Path) -> None:
    """``url`` servers: streamable HTTP (``type: http``) and the deprecated HTTP+SSE."""
    port = free_port()
    argv = [PY, "-m", "mcpwire.examples.everything", "--transport", "sse", "--port", str(port)]
    with subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
        try:
            with anyio.fail_after(WAIT):
                await until_listening(port)
            config = tmp_path / "mcp.json"
            config.write_text(
                json.dumps(
                    {
                        "mcpServers": {
                            "web": {
                                "type": "streamable-http",
                                "url": f"http://127.0.0.1:{port}/mcp",
                                "headers": {"Authorization": "Bearer ${TOKEN:-t}"},
                            },
                            "legacy": {"type": "sse", "url": f"http://127.0.0.1:{port}/sse"},
                        }
                    }
                )
            )
            async with Hub([config], watch=False) as hub:
                await ready(hub)
                assert [s.state for s in hub.statuses()] == [ServerState.READY] * 2
                assert hub.status("web").transport == "http"
                for name in ("web", "legacy"):
                    result = await hub.call_tool(f"{name}__echo", {"message": name})
                    assert result.content[0].text == name
        finally:
            proc.terminate()


def example_over_http(port: int) -> subprocess.Popen[bytes]:
    argv = [PY, *EVERYTHING, "--transport", "http", "--port", str(port)]
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


@pytest.mark.parametrize("found_by", ["call", "refresh"])
async def test_an_unreachable_http_server_is_lost_and_reconnected(found_by: str) -> None:
    """#16: over HTTP a call that cannot reach the server fails alone, and a bare
    client would serve on; under the hub the server is taken for lost instead
    (not left "ready" with broken tools), whether a call or a refresh of its
    lists found it gone, and reconnected with backoff once it is back."""
    port = free_port()
    web = ServerConfig(name="web", url=f"http://127.0.0.1:{port}/mcp")
    proc = example_over_http(port)
    try:
        with anyio.fail_after(WAIT):
            await until_listening(port)
            async with Hub(servers=[web], restart_policy=FAST) as hub:
                await ready(hub)
                assert (await hub.call_tool("web__echo", {"message": "a"})).text == "a"
                proc.terminate()
                proc.wait()
                if found_by == "call":
                    with pytest.raises(ConnectionClosed, match="cannot reach the MCP server"):
                        await hub.call_tool("web__echo", {"message": "down"})
                else:  # what a list_changed notification makes the server's actor do
                    supervisor = hub._sups["web"]
                    supervisor._refresh = True
                    supervisor._nudge()
                while hub.status("web").state is ServerState.READY:  # the actor moves on
                    await anyio.sleep(0.01)
                status = hub.status("web")
                assert "connection lost: cannot reach the MCP server" in (status.last_error or "")
                assert "web__echo" not in {t.name for t in hub.tools()}
                proc = example_over_http(port)
                await until_listening(port)
                while hub.status("web").state is not ServerState.READY:
                    await anyio.sleep(0.05)
                assert (await hub.call_tool("web__echo", {"message": "b"})).text == "b"
    finally:
        proc.terminate()
        proc.wait()


def test_hub_needs_async_with() -> None:
    hub = Hub(servers=[ServerConfig(name="a", command="x")])
    with pytest.raises(HubError, match="not running"):
        hub._check_open()


async def test_configs_and_code_servers_together(scripts: tuple[str, str], tmp_path: Path) -> None:
    script, _ = scripts
    config = tmp_path / "mcp.json"
    write_config(config, {"a": entry(script, "--tag", "file"), "b": entry(script)})
    code = server("a", script, "--tag", "code")
    async with Hub([config], servers=[code], watch=False) as hub:
        await ready(hub)
        assert hub.server_names == ["b", "a"]
        assert (await hub.call_tool("a__tag")).content[0].text == "code"


async def test_starts_are_limited_and_queueing_does_not_count(scripts: tuple[str, str]) -> None:
    """#17: at most ``max_concurrent_starts`` servers connect at once; time spent waiting
    for a slot does not count against a server's startup timeout."""
    script, _ = scripts
    servers = [server(n, script, "--sleep", "1.5", startup_timeout=2.5) for n in ("a", "b")]
    started = anyio.current_time()
    async with Hub(servers=servers, max_concurrent_starts=1) as hub:
        await anyio.sleep(0.5)
        spawned = [s.pid is not None for s in hub.statuses()]
        assert sorted(spawned) == [False, True]  # one connecting, one queued
        assert {s.state for s in hub.statuses()} == {ServerState.STARTING}
        await ready(hub)
        # The second took more than its 2.5 s from the start, but less once it had a slot.
        assert anyio.current_time() - started > 2.5
        assert {s.state for s in hub.statuses()} == {ServerState.READY}


async def test_call_timeouts_and_cancellation(scripts: tuple[str, str]) -> None:
    """#4: the server's timeout applies unless the call gives one; a cancelled call
    is cancelled at the server and the connection keeps working."""
    script, _ = scripts
    async with Hub(servers=[server("s", script, timeout=0.5)]) as hub:
        await ready(hub)
        with pytest.raises(RequestTimeout, match=r"timed out after 0\.5 s"):
            await hub.call_tool("s__nap", {"seconds": 5})
        with pytest.raises(RequestTimeout, match=r"timed out after 0\.2 s"):
            await hub.call_tool("s__nap", {"seconds": 5}, timeout=0.2)
        assert (await hub.call_tool("s__nap", {"seconds": 0.1}, timeout=5)).content[0].text
        with anyio.move_on_after(0.1):
            await hub.call_tool("s__nap", {"seconds": 5}, timeout=10)
        assert (await hub.call_tool("s__echo", {"message": "ok"})).content[0].text == "ok"
        assert hub.status("s").state is ServerState.READY and hub.status("s").restarts == 0


async def test_wait_ready_has_a_deadline(scripts: tuple[str, str]) -> None:
    script, _ = scripts
    async with Hub(servers=[server("hang", script, "--hang", startup_timeout=30)]) as hub:
        with pytest.raises(TimeoutError):
            await hub.wait_ready(timeout=0.3)


async def test_client_options_on_notification_sees_what_the_hub_sees(tmp_path: Path) -> None:
    """The hub keeps its registry in step through the client's notification
    callback; one given in ``client_options`` is called too, not replaced."""
    script, _ = write_scripts(tmp_path)
    seen: list[str] = []

    async def note(method: str, params: Any) -> None:
        seen.append(method)

    servers = [ServerConfig(name="s", command=PY, args=[script])]
    async with Hub(servers=servers, client_options={"on_notification": note}) as hub:
        await ready(hub)
        with anyio.fail_after(WAIT):
            await hub.call_tool("s__grow", {"name": "fresh"})
            while "s__fresh" not in {t.name for t in hub.tools()}:
                await anyio.sleep(0.02)
    assert "notifications/tools/list_changed" in seen
