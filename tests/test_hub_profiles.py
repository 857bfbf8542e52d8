"""Named profiles: which servers, and which of their tools, a hub runs (pain point #10:
"per-mode server sets" and allowlists, so a model sees only what the work needs).

The parser is checked on every shape and against arbitrary JSON; narrowing is a
property (a profile never exposes a tool the config hides); the hub is checked
with real server processes, switching profiles while it runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import json_values
from test_hub_support import (
    PY,
    WAIT,
    entry,
    ready,
    wait_state,
    wait_until_dead,
    write_scripts,
)

from mcpwire import (
    ConfigError,
    ConfigRejected,
    ConfigReloaded,
    Hub,
    HubError,
    Profile,
    ServerConfig,
    ServerState,
    ServerStateChanged,
    ToolCallRefused,
    load_configs,
    parse_config,
)
from mcpwire._hub_names import tool_selected
from mcpwire._hub_profiles import ProfileServer, apply_profile

pytestmark = pytest.mark.anyio

SERVERS = {"a": {"command": "x"}, "b": {"command": "y"}, "c": {"url": "http://127.0.0.1:1/mcp"}}


def profiles_of(value: object, servers: dict[str, Any] | None = None) -> dict[str, Profile]:
    doc = {"mcpServers": SERVERS if servers is None else servers, "profiles": value}
    return dict(parse_config(doc, environ={}).profiles)


def problems(value: object) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        profiles_of(value)
    return [f"{i.path}: {i.message}" for i in caught.value.issues]


# -- reading ---------------------------------------------------------------------------


def test_every_shape_of_a_profile_is_read() -> None:
    got = profiles_of(
        {
            "short": ["a", "b"],
            "listed": {"servers": ["c"], "description": "remote only"},
            "narrow": {
                "servers": {
                    "a": {},
                    "b": {"includeTools": ["get_*"], "excludeTools": ["get_secret"]},
                    "c": True,
                }
            },
            "none": [],
        }
    )
    assert got["short"].servers == {"a": ProfileServer(), "b": ProfileServer()}
    assert got["listed"].description == "remote only"
    assert got["narrow"].servers["b"] == ProfileServer(("get_*",), ("get_secret",))
    assert got["narrow"].servers["c"] == ProfileServer()
    assert got["none"].servers == {}
    assert got["short"].origin.endswith("$.profiles.short")
    assert parse_config({"mcpServers": SERVERS}, environ={}).profiles == {}


def test_vscode_and_connections_files_have_profiles_too() -> None:
    vscode = {"servers": {"a": {"command": "x"}}, "profiles": {"p": ["a"]}}
    assert list(parse_config(vscode, environ={}).profiles) == ["p"]
    conns = {"connections": [{"name": "a", "command": "x"}], "profiles": {"p": ["a"]}}
    assert list(parse_config(conns, environ={}).profiles) == ["p"]


def test_malformed_profiles_name_the_path_and_the_rule() -> None:
    assert problems(["a"]) == ["$.profiles: must be an object of profiles"]
    assert problems({"p": "a"}) == [
        "$.profiles.p: must be a list of server names, or an object of servers to tool globs"
    ]
    assert problems({"p": [1]}) == ["$.profiles.p[0]: must be a server's name"]
    assert problems({"p": {"description": "no servers"}}) == [
        "$.profiles.p.servers: a profile lists its servers"
    ]
    assert problems({"p": {"servers": {"a": ["x"]}}}) == [
        "$.profiles.p.servers.a: must be an object with includeTools and/or excludeTools"
    ]
    assert problems({"p": {"servers": {"a": {"includeTools": "get_*"}}}}) == [
        "$.profiles.p.servers.a.includeTools: must be a list of glob strings"
    ]
    assert problems({"p": {"servers": ["a"], "description": 3}}) == [
        "$.profiles.p.description: must be a string"
    ]
    assert problems({"": ["a"]}) == ['$.profiles[""]: a profile needs a name']


def test_odd_but_readable_profiles_are_warnings() -> None:
    doc = {
        "mcpServers": SERVERS,
        "profiles": {"p": {"servers": {"a": {"only": 1}}, "mode": "x"}, "q": ["a", "a"]},
    }
    warnings = [f"{w.path}: {w.message}" for w in parse_config(doc, environ={}).warnings]
    assert "$.profiles.p.mode: unknown key 'mode' is ignored" in warnings
    assert "$.profiles.p.servers.a.only: unknown key 'only' is ignored" in warnings
    assert "$.profiles.q[1]: server 'a' is listed twice" in warnings


#: Arbitrary JSON shaped like profiles at every level, so every branch is reached.
_narrowing_like = st.dictionaries(
    st.sampled_from(["includeTools", "excludeTools", "y"]), json_values
)
_servers_like = json_values | st.dictionaries(
    st.sampled_from(["a", "b"]), json_values | _narrowing_like
)
_profile_like = json_values | st.dictionaries(
    st.sampled_from(["servers", "description", "x"]), json_values | _servers_like
)
profile_documents = json_values | st.dictionaries(st.text(max_size=3), _profile_like)


@settings(max_examples=500, deadline=None)
@given(profile_documents)
def test_any_json_as_profiles_is_read_or_refused_with_a_config_error(value: object) -> None:
    issues: list[str] = []
    try:
        got = profiles_of(value)
    except ConfigError as exc:
        issues = [i.path for i in exc.issues]
        got = {}
    assert issues or all(isinstance(p, Profile) for p in got.values())
    assert all(path.startswith("$.profiles") for path in issues)


globs = st.lists(st.sampled_from(["*", "get_*", "*_file", "read?", "list_*", "x"]), max_size=3)
narrowings = st.builds(ProfileServer, st.none() | globs.map(tuple), globs.map(tuple))
profiles = st.builds(
    Profile,
    st.just("p"),
    st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), narrowings, max_size=4),
    st.text(max_size=10),
)


@settings(max_examples=200, deadline=None)
@given(profiles)
def test_a_profile_round_trips_through_its_json(profile: Profile) -> None:
    assert profiles_of({"p": profile.to_json()})["p"] == profile


# -- what a profile does to the servers --------------------------------------------------

tool_names = st.lists(
    st.sampled_from(["get_file", "get_x", "list_files", "read1", "x", "write_file", "delete"]),
    unique=True,
)


@settings(max_examples=300, deadline=None)
@given(
    profiles,
    st.dictionaries(
        st.sampled_from(["a", "b", "c", "e"]),
        st.tuples(st.booleans(), st.none() | globs.map(tuple), globs.map(tuple)),
        min_size=1,
    ),
    tool_names,
)
def test_a_profile_only_narrows(
    profile: Profile, specs: dict[str, tuple[bool, Any, Any]], tools: list[str]
) -> None:
    servers = {
        name: ServerConfig(
            name=name, command="x", disabled=off, include_tools=inc, exclude_tools=exc
        )
        for name, (off, inc, exc) in specs.items()
    }
    applied = apply_profile(servers, profile)
    assert list(applied) == list(servers)
    for name, before in servers.items():
        after = applied[name]
        assert after.connection_key() == before.connection_key()
        if name not in profile.servers:
            assert after.disabled
            if not before.disabled:
                assert after.disabled_reason == "not in profile 'p'"
            continue
        assert after.disabled == before.disabled
        narrowing = profile.servers[name]
        for tool in tools:
            own = tool_selected(tool, before.include_tools, before.exclude_tools)
            theirs = tool_selected(tool, narrowing.include_tools, narrowing.exclude_tools)
            exposed = own and tool_selected(
                tool, after.profile_include_tools, after.profile_exclude_tools
            )
            assert tool_selected(tool, after.include_tools, after.exclude_tools) == own
            assert exposed == (own and theirs)
    assert apply_profile(servers, None) == servers


def test_profiles_from_several_files_merge_by_name(tmp_path: Path) -> None:
    first, second = tmp_path / "global.json", tmp_path / "project.json"
    first.write_text(json.dumps({"mcpServers": SERVERS, "profiles": {"p": ["a"], "q": ["b"]}}))
    second.write_text(json.dumps({"mcpServers": {}, "profiles": {"p": ["b", "c"]}}))
    loaded = load_configs([first, second], environ={})
    assert list(loaded.profiles["p"].servers) == ["b", "c"]
    assert list(loaded.profiles["q"].servers) == ["b"]
    assert any("profile 'p' replaces the one from" in w.message for w in loaded.warnings)
    assert fnmatchcase(loaded.profiles["p"].origin, f"{second}: $.profiles.p")


# -- the hub -----------------------------------------------------------------------------


def write(path: Path, servers: dict[str, Any], profile_map: dict[str, Any]) -> None:
    path.write_text(json.dumps({"mcpServers": servers, "profiles": profile_map}))


def three(script: str) -> dict[str, Any]:
    return {"a": entry(script, "--tag", "A"), "b": entry(script), "c": entry(script)}


PROFILES = {
    "ab": {"servers": {"a": {"excludeTools": ["pid"]}, "b": {"includeTools": ["echo"]}}},
    "c": ["c", "ghost"],
}


def exposed(hub: Hub) -> set[str]:
    return {t.name for t in hub.tools()}


async def test_a_hub_runs_only_its_profile_and_switches_while_running(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    write(config, three(script), PROFILES)
    async with Hub([config], profile="ab", watch=False) as hub:
        events = hub.events()
        await ready(hub)
        assert hub.profile == "ab" and list(hub.profiles) == ["ab", "c"]
        assert any("names server 'ghost'" in w.message for w in hub.warnings)
        c = hub.status("c")
        assert c.state is ServerState.DISABLED and c.reason == "not in profile 'ab'"
        assert c.pid is None
        assert {n for n in exposed(hub) if n.startswith("b__")} == {"b__echo"}
        assert "a__tag" in exposed(hub) and not any(n.startswith("c__") for n in exposed(hub))
        with pytest.raises(ToolCallRefused, match="not in profile 'ab'"):
            await hub.call_tool("c__echo", {"message": "x"})
        with pytest.raises(ToolCallRefused, match="filtered out by the profile in force"):
            await hub.call_tool("a__pid")
        a_pid = hub.status("a").pid
        assert a_pid is not None

        switched = await hub.use_profile("c")
        assert switched.profile == "c" and set(switched.restarted) == {"a", "b", "c"}
        await wait_state(hub, "c", ServerState.READY)
        assert hub.status("a").state is ServerState.DISABLED
        assert await wait_until_dead(a_pid)
        assert {n.split("__")[0] for n in exposed(hub)} == {"c"}
        with anyio.fail_after(WAIT):
            assert (await hub.call_tool("c__echo", {"message": "hi"})).text == "hi"

        everything = await hub.use_profile(None)
        assert everything.profile is None
        await ready(hub)
        assert {n.split("__")[0] for n in exposed(hub)} == {"a", "b", "c"}
        assert "b__pid" in exposed(hub)

        # Only the narrowing changes: applied in place, no restart.
        b_pid = hub.status("b").pid
        back = await hub.use_profile("ab")
        assert "b" in back.updated and "b" not in back.restarted
        assert hub.status("b").pid == b_pid
        assert "b__pid" not in exposed(hub) and "a__pid" not in exposed(hub)

        with pytest.raises(ConfigError, match="no profile named 'nope'"):
            await hub.use_profile("nope")
        assert hub.profile == "ab"
        kinds = [type(event) for event in events.pending()]
        assert ConfigRejected not in kinds and kinds.count(ConfigReloaded) == 3


async def test_an_unknown_profile_is_a_config_error(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    write(config, three(script), PROFILES)
    with pytest.raises(ConfigError, match=r"no profile named 'x' \(profiles: 'ab', 'c'\)"):
        async with Hub([config], profile="x", watch=False):
            pass


async def test_a_reload_that_drops_the_profile_in_force_is_rejected(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    write(config, three(script), PROFILES)
    async with Hub([config], profile="c", watch=False) as hub:
        await ready(hub)
        write(config, three(script), {"ab": PROFILES["ab"]})
        with pytest.raises(ConfigError, match="no profile named 'c'"):
            await hub.reload()
        assert hub.profile == "c" and hub.status("c").state is ServerState.READY
        assert hub.status("a").state is ServerState.DISABLED


def test_hub_cli_profile(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    write(config, three(script), PROFILES)

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "mcpwire", "hub", "--config", str(config), "--json", *extra],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    proc = run("--profile", "ab")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["profile"] == "ab"
    assert report["profiles"]["c"] == {"servers": {"c": {}, "ghost": {}}}
    states = {s["name"]: s["state"] for s in report["servers"]}
    assert states == {"a": "ready", "b": "ready", "c": "disabled"}
    assert {t["name"] for t in report["tools"] if t["server"] == "b"} == {"b__echo"}
    proc = run("--profile", "missing")
    assert proc.returncode == 2
    assert "no profile named 'missing'" in proc.stderr


async def test_wait_ready_waits_for_a_server_a_reload_enabled(tmp_path: Path) -> None:
    """Between the reload and its actor moving, the server is still ``disabled``
    with an enabled config: that is starting, and a start, not a restart."""
    script, _ = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    write(config, {"s": entry(script)}, {})
    async with Hub([config], watch=False) as hub:
        await ready(hub)
        write(config, {"s": entry(script, disabled=True)}, {})
        await hub.reload()
        await wait_state(hub, "s", ServerState.DISABLED)
        write(config, {"s": entry(script)}, {})
        events = hub.events()
        await hub.reload()
        await ready(hub)
        assert hub.status("s").state is ServerState.READY
        states = [e.new for e in events.pending() if isinstance(e, ServerStateChanged)]
        assert states == [ServerState.STARTING, ServerState.READY]


async def test_wait_ready_does_not_wait_for_a_server_that_cannot_move() -> None:
    """A disabled server whose name the hub cannot expose sits ``failed`` for good:
    its config says disabled and its state is not, yet nothing is settling."""
    bad = ServerConfig(name="a__b", command=PY, args=["-c", "pass"], disabled=True)
    async with Hub(servers=[bad]) as hub:
        with anyio.fail_after(5):
            await hub.wait_ready(timeout=WAIT)
        assert hub.status("a__b").state is ServerState.FAILED


async def test_a_call_right_after_a_server_is_enabled_waits_for_its_start(tmp_path: Path) -> None:
    """Found by the drawn program of ``test_hub_idle``: switch to a profile without
    a server, switch back, and call it at once. The hub forgets a disabled server's
    tools, and its actor has not started yet; the call (and a prompt, and a
    completion) waits for the start instead of failing with "unknown tool"."""
    script, _ = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    write(config, three(script), PROFILES)
    async with Hub([config], watch=False) as hub:
        await ready(hub)
        await hub.use_profile("c")
        await wait_state(hub, "a", ServerState.DISABLED)
        assert not any(n.startswith("a__") for n in exposed(hub))
        await hub.use_profile(None)
        assert hub.status("a").state is ServerState.DISABLED  # the actor has not moved
        got: dict[str, object] = {}

        async def call() -> None:
            got["pid"] = (await hub.call_tool("a__pid")).text

        async def prompt() -> None:
            got["prompt"] = await hub.get_prompt("a__hello", {"name": "Ann"})

        async def complete() -> None:
            got["completion"] = await hub.complete(
                {"type": "ref/prompt", "name": "a__hello"}, "name", "A"
            )

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                for job in (call, prompt, complete):
                    tg.start_soon(job)
        assert got["pid"] == str(hub.status("a").pid)
        assert "Hello, Ann!" in str(got["prompt"])
        assert "completion" in got
        # A name the server does not offer still fails, once the server has settled.
        await hub.use_profile("c")
        await wait_state(hub, "a", ServerState.DISABLED)
        await hub.use_profile(None)
        with anyio.fail_after(WAIT), pytest.raises(HubError, match="unknown tool 'a__nope'"):
            await hub.call_tool("a__nope")
        assert hub.status("a").state is ServerState.READY
        # A server that is disabled, and stays so, is refused at once.
        await hub.use_profile("c")
        with anyio.fail_after(1), pytest.raises(ToolCallRefused, match="not in profile 'c'"):
            await hub.call_tool("a__pid")
