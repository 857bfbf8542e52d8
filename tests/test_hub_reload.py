"""Hot reload (pain point 21): config edits applied live, per server.

The config file is edited the way editors save (a temporary file renamed over
it). Added servers start, removed ones stop (their processes die), changed ones
restart, unchanged ones keep their process id; an invalid edit is rejected with
an event and the last good config stays; a policy-only change (tool filters,
approvals) is applied without a restart; a change to a ``watchPaths`` file
restarts its server.
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from test_hub_support import (
    WAIT,
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
    ConfigError,
    ConfigRejected,
    ConfigReloaded,
    Hub,
    HubError,
    HubEvent,
    ServerState,
    ToolCallRefused,
)
from mcpwire._hub_names import NAME_PROFILES, expose

pytestmark = pytest.mark.anyio

FAST_WATCH = {"poll_interval": 0.05, "debounce": 0.15}


def reloaded(event: HubEvent) -> bool:
    return isinstance(event, ConfigReloaded)


async def test_edits_add_remove_and_restart_only_what_changed(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    write_config(
        config,
        {
            "keep": entry(script, "--tag", "keep"),
            "change": entry(script, "--tag", "v1"),
            "drop": entry(script, "--tag", "drop"),
        },
    )
    async with Hub([config], **FAST_WATCH) as hub:
        await ready(hub)
        events = hub.events()
        pids = {s.name: s.pid for s in hub.statuses()}
        write_config(
            config,
            {
                "keep": entry(script, "--tag", "keep"),
                "change": entry(script, "--tag", "v2"),
                "add": entry(script, "--tag", "add"),
            },
        )
        event = await wait_event(events, reloaded)
        assert isinstance(event, ConfigReloaded)
        assert (event.added, event.removed, event.restarted, event.updated) == (
            ("add",),
            ("drop",),
            ("change",),
            (),
        )
        assert event.files == (str(config),)
        await wait_state(hub, "add", ServerState.READY)
        await wait_state(hub, "change", ServerState.READY)
        assert hub.status("keep").pid == pids["keep"]  # untouched
        assert hub.status("change").pid != pids["change"]
        assert (await hub.call_tool("change__tag")).content[0].text == "v2"
        assert (await hub.call_tool("add__tag")).content[0].text == "add"
        assert hub.server_names == ["keep", "change", "add"]
        drop_pid = pids["drop"]
        assert drop_pid is not None and await wait_until_dead(drop_pid)
        assert "drop__tag" not in {t.name for t in hub.tools()}


async def test_an_invalid_edit_keeps_the_last_good_config(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    write_config(config, {"a": entry(script, "--tag", "a")})
    async with Hub([config], **FAST_WATCH) as hub:
        await ready(hub)
        events = hub.events()
        pid = hub.status("a").pid
        config.write_text('{"mcpServers": {"a": {"command": "x", "timeout": -1}}}')
        rejected = await wait_event(events, lambda e: isinstance(e, ConfigRejected))
        assert isinstance(rejected, ConfigRejected)
        assert "$.mcpServers.a.timeout" in rejected.error and str(config) in rejected.error
        assert hub.status("a").pid == pid and hub.status("a").state is ServerState.READY
        config.write_text("{ not json")
        rejected = await wait_event(events, lambda e: isinstance(e, ConfigRejected))
        assert isinstance(rejected, ConfigRejected) and "not valid JSON" in rejected.error
        with pytest.raises(ConfigError):
            await hub.reload()
        write_config(config, {"a": entry(script, "--tag", "a"), "b": entry(script)})
        event = await wait_event(events, reloaded)
        assert isinstance(event, ConfigReloaded) and event.added == ("b",)
        assert hub.status("a").pid == pid


async def test_policy_changes_apply_without_a_restart(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    write_config(config, {"a": entry(script)})
    async with Hub([config], **FAST_WATCH) as hub:
        await ready(hub)
        events = hub.events()
        pid = hub.status("a").pid
        assert "a__crash" in {t.name for t in hub.tools()}
        write_config(
            config,
            {"a": entry(script, excludeTools=["crash", "g*"], disabledTools=["pid"], timeout=5)},
        )
        event = await wait_event(events, reloaded)
        assert isinstance(event, ConfigReloaded) and event.updated == ("a",)
        assert event.restarted == ()
        assert hub.status("a").pid == pid
        assert [t.name for t in hub.tools()] == ["a__echo", "a__tag", "a__env", "a__slow", "a__nap"]
        with pytest.raises(ToolCallRefused, match="disabled"):
            await hub.call_tool("a__pid")
        assert hub.status("a").config.timeout == 5.0


async def test_disabling_and_enabling_a_server_live(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    write_config(config, {"a": entry(script)})
    async with Hub([config], **FAST_WATCH) as hub:
        await ready(hub)
        events = hub.events()
        pid = hub.status("a").pid
        write_config(config, {"a": entry(script, disabled=True)})
        await wait_event(events, became("a", ServerState.DISABLED))
        assert hub.tools() == [] and pid is not None and await wait_until_dead(pid)
        with pytest.raises(ToolCallRefused, match="disabled"):
            await hub.call_tool("a__echo", {"message": "x"})
        write_config(config, {"a": entry(script)})
        await wait_event(events, became("a", ServerState.READY))
        assert (await hub.call_tool("a__echo", {"message": "x"})).content[0].text == "x"


async def test_watch_paths_restart_their_server(tmp_path: Path) -> None:
    """Seed 000: a server's own files (``watchPaths``) restart it when they change."""
    script, _ = write_scripts(tmp_path)
    watched = tmp_path / "build" / "index.js"
    watched.parent.mkdir()
    watched.write_text("v1")
    config = tmp_path / "mcp.json"
    write_config(
        config,
        {"dev": entry(script, watchPaths=["build/index.js"]), "other": entry(script)},
    )
    async with Hub([config], **FAST_WATCH) as hub:
        await ready(hub)
        events = hub.events()
        pids = {s.name: s.pid for s in hub.statuses()}
        watched.write_text("v2")
        await wait_event(events, became("dev", ServerState.READY))
        assert hub.status("dev").pid != pids["dev"]
        assert hub.status("other").pid == pids["other"]


async def test_global_and_project_files_both_watched(tmp_path: Path) -> None:
    """Seed 000: the project's server wins a name clash, live as well as at start."""
    script, _ = write_scripts(tmp_path)
    home = tmp_path / "global.json"
    project = tmp_path / "project.json"
    write_config(home, {"shared": entry(script, "--tag", "global"), "g": entry(script)})
    project.write_text(json.dumps({"mcpServers": {}}))
    async with Hub([home, project], **FAST_WATCH) as hub:
        await ready(hub)
        events = hub.events()
        assert (await hub.call_tool("shared__tag")).content[0].text == "global"
        write_config(project, {"shared": entry(script, "--tag", "project")})
        event = await wait_event(events, reloaded)
        assert isinstance(event, ConfigReloaded) and event.restarted == ("shared",)
        assert any("replaces the one from" in w for w in event.warnings)
        await wait_state(hub, "shared", ServerState.READY)
        with anyio.fail_after(WAIT):
            result = await hub.call_tool("shared__tag")
        assert result.content[0].text == "project"


async def test_a_call_right_after_a_reload_finds_a_server_whose_name_is_sanitized(
    tmp_path: Path,
) -> None:
    """A server whose name is not a valid name prefix ("has space", "v.1") has
    hashed exposed names; a call of one made right after the reload that adds
    the server waits for its start (and ``resolve`` says it is starting), as
    for any other server, instead of "unknown tool"."""
    script, _ = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    write_config(config, {"keep": entry(script)})
    async with Hub([config], watch=False) as hub:
        await ready(hub)
        servers = {"has space": entry(script, "--sleep", "0.3"), "v.1": entry(script)}
        write_config(config, {"keep": entry(script), **servers})
        await hub.reload()
        rule = NAME_PROFILES["default"]
        spaced, dotted = expose("has space", "pid", "__", rule), expose("v.1", "pid", "__", rule)
        with pytest.raises(HubError, match="server 'has space' is starting"):
            hub.resolve(spaced)
        with anyio.fail_after(WAIT):
            assert (await hub.call_tool(spaced)).text == str(hub.status("has space").pid)
            assert (await hub.call_tool(dotted)).text == str(hub.status("v.1").pid)
        assert hub.resolve(spaced) == ("has space", "pid")


async def test_servers_whose_names_sanitize_alike_are_refused(tmp_path: Path) -> None:
    """ "my.server" and "my server" both become "my_server" in exposed names, and a
    hashed name cannot say which of them it belongs to until they have listed:
    a call could wait for, or be refused on behalf of, the wrong one. Such a
    config is refused, at start and on reload, naming the file, the JSON path,
    both servers and the sanitized form; the config in force stays."""
    script, _ = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    both = {"my.server": entry(script, "--tag", "dot"), "my server": entry(script)}
    write_config(config, both)
    with pytest.raises(ConfigError) as info:
        async with Hub([config], watch=False):
            pass
    (issue,) = info.value.issues
    assert (issue.file, issue.path) == (str(config), '$.mcpServers["my server"]')
    assert issue.message == (
        f"servers 'my.server' ({config}: $.mcpServers[\"my.server\"]) and 'my server' both "
        "become 'my_server' in exposed tool names (name rule ^[A-Za-z0-9_-]{1,64}$), so a "
        "tool name could route to either; rename one of them"
    )
    write_config(config, {"my.server": entry(script, "--tag", "dot")})
    async with Hub([config], watch=False) as hub:
        events = hub.events()
        tag = expose("my.server", "tag", "__", NAME_PROFILES["default"])
        with anyio.fail_after(WAIT):
            assert (await hub.call_tool(tag)).text == "dot"
        write_config(config, both)
        with pytest.raises(ConfigError, match="both become 'my_server'"):
            await hub.reload()
        rejected = await wait_event(events, lambda e: isinstance(e, ConfigRejected))
        assert isinstance(rejected, ConfigRejected) and "'my server'" in rejected.error
        assert hub.server_names == ["my.server"]
        with anyio.fail_after(WAIT):
            assert (await hub.call_tool(tag)).text == "dot"
