"""``idleTimeout``: a server nobody uses is stopped, and the next call starts it
again (pain point #17: a hub of many servers need not keep them all running).

Every server is a real process (the hub test server of ``test_hub_support``);
``pid`` tells one process from the next.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import anyio
import pytest
from fuzzing import in_own_thread
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_hub_support import (
    PY,
    WAIT,
    alive,
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
    ConnectionClosed,
    Hub,
    HubEvent,
    ServerConfig,
    ServerState,
    ServerStateChanged,
    ToolCallRefused,
    ToolsChanged,
    parse_config,
)

pytestmark = pytest.mark.anyio


def idle_server(script: str, seconds: float | None, **options: Any) -> ServerConfig:
    return ServerConfig(name="s", command=PY, args=[script], idle_timeout=seconds, **options)


async def pid_of(hub: Hub) -> int:
    with anyio.fail_after(WAIT):
        return int((await hub.call_tool("s__pid")).text)


async def test_an_unused_server_stops_and_the_next_call_starts_it(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    async with Hub(servers=[idle_server(script, 0.5)]) as hub:
        events = hub.events()
        await ready(hub)
        names = sorted(t.name for t in hub.tools())
        first = await pid_of(hub)
        seen: list[HubEvent] = []
        await wait_event(events, lambda e: getattr(e, "new", None) is ServerState.IDLE, seen=seen)
        idled = len(seen)
        assert await wait_until_dead(first), "the idle server's process still runs"
        status = hub.status("s")
        assert status.state is ServerState.IDLE and status.pid is None
        assert status.reason == "stopped after 0.5 s unused"
        assert status.restarts == 0 and status.last_error is None  # not a crash
        # Its tools stay exposed while it is stopped, and a call starts it.
        assert sorted(t.name for t in hub.tools()) == names
        assert hub.system_prompt().count("s__echo") == 1
        second = await pid_of(hub)
        assert second != first and alive(second)
        await wait_event(events, lambda e: getattr(e, "new", None) is ServerState.READY, seen=seen)
        changes = [e.new for e in seen if isinstance(e, ServerStateChanged)]
        assert changes[-3:] == [ServerState.IDLE, ServerState.STARTING, ServerState.READY]
        assert hub.status("s").restarts == 0
        # Stopped and woken, its tools never left: no ToolsChanged on the way.
        woken = seen[idled:] + events.pending()
        assert [e for e in woken if isinstance(e, ToolsChanged)] == []
        assert sorted(t.name for t in hub.tools()) == names


async def test_a_call_in_flight_keeps_the_server_running(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    async with Hub(servers=[idle_server(script, 0.3)]) as hub:
        await ready(hub)
        before = await pid_of(hub)
        during: list[int] = []

        async def look_during_the_nap() -> None:
            await anyio.sleep(1.2)  # four idle timeouts into the call
            during.append(await pid_of(hub))

        async with anyio.create_task_group() as tg:
            tg.start_soon(look_during_the_nap)
            with anyio.fail_after(WAIT):
                assert (await hub.call_tool("s__nap", {"seconds": 2.0})).text == "rested"
        # The server stayed while the call ran; the clock restarted when it ended.
        assert during == [before]
        await wait_state(hub, "s", ServerState.IDLE)
        assert await wait_until_dead(before)


async def test_calls_closer_together_than_the_timeout_keep_one_process(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    async with Hub(servers=[idle_server(script, 0.6)]) as hub:
        await ready(hub)
        pids = set()
        for _ in range(10):
            pids.add(await pid_of(hub))
            await anyio.sleep(0.1)
        assert len(pids) == 1
        assert hub.status("s").state is ServerState.READY


async def test_calls_around_the_deadline_all_succeed(tmp_path: Path) -> None:
    """Calls timed just before, at and after the moment the server is stopped:
    each one is served, by the old process or a new one, never refused."""
    script, _ = write_scripts(tmp_path)
    rng = random.Random(7)
    async with Hub(servers=[idle_server(script, 0.2)]) as hub:
        await ready(hub)
        pids = set()
        for _ in range(12):
            await anyio.sleep(rng.uniform(0.15, 0.3))
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(pid_of, hub)
            pids.add(await pid_of(hub))
        assert len(pids) > 1  # some gaps outlasted the timeout
        assert hub.status("s").restarts == 0
        assert hub.status("s").last_error is None


async def test_restart_starts_a_stopped_server(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    async with Hub(servers=[idle_server(script, 0.3)]) as hub:
        await ready(hub)
        await wait_state(hub, "s", ServerState.IDLE)
        with anyio.fail_after(WAIT):
            assert await hub.restart("s") is ServerState.READY
        assert hub.status("s").pid is not None


async def test_a_reload_sets_the_timeout_in_place(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    write_config(config, {"s": entry(script)})
    async with Hub([config], watch=False) as hub:
        await ready(hub)
        pid = await pid_of(hub)
        await anyio.sleep(1.2)
        assert hub.status("s").state is ServerState.READY  # no timeout yet
        write_config(config, {"s": entry(script, idleTimeout="1s")})
        reloaded = await hub.reload()
        assert reloaded.updated == ("s",) and reloaded.restarted == ()
        # The server was unused for over a second already: it stops at once.
        await wait_state(hub, "s", ServerState.IDLE, timeout=5.0)
        assert await wait_until_dead(pid)
        write_config(config, {"s": entry(script)})
        await hub.reload()
        pid = await pid_of(hub)
        await anyio.sleep(1.5)
        assert hub.status("s").state is ServerState.READY and await pid_of(hub) == pid


async def test_a_lazy_server_goes_back_to_idle(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    cache = tmp_path / "tools.json"
    async with Hub(servers=[idle_server(script, 0.3, lazy=True)], tool_cache=cache) as hub:
        await ready(hub)  # nothing cached: started at once
        await wait_state(hub, "s", ServerState.IDLE)
    async with Hub(servers=[idle_server(script, 0.3, lazy=True)], tool_cache=cache) as hub:
        await ready(hub)
        assert hub.status("s").state is ServerState.IDLE  # from the cache, never started
        pid = await pid_of(hub)
        await wait_state(hub, "s", ServerState.IDLE)
        assert await wait_until_dead(pid)
        assert await pid_of(hub) != pid


def test_idle_timeout_is_read_from_config_files() -> None:
    def read(value: object) -> ServerConfig:
        doc = {"mcpServers": {"s": {"command": "x", "idleTimeout": value}}}
        return parse_config(doc, environ={}).servers["s"]

    assert read("30m").idle_timeout == 1800.0
    assert read(600).idle_timeout == 600.0
    assert read("24h").idle_timeout == 86400.0
    server = read("90s")
    assert server.to_json()["idleTimeout"] == 90.0
    assert parse_config({"mcpServers": {"s": server.to_json()}}, environ={}).servers["s"] == server
    assert "idleTimeout" not in ServerConfig(name="s", command="x").to_json()
    for bad in (0, "0.5s", "25h", "soon", True):
        with pytest.raises(ConfigError, match=r"idleTimeout"):
            read(bad)
    doc = {"mcpServers": {"s": {"command": "x", "idleTimeout": 90000}}, "x": 1}
    with pytest.raises(ConfigError, match=r"between 1 and 86400 seconds"):
        parse_config(doc, environ={})
    with pytest.raises(ValueError, match="idle_timeout"):
        ServerConfig(name="s", command="x", idle_timeout=0)


# -- a drawn program of calls, waits, restarts, profile switches and reloads ------------------

S = ServerState
#: Where a healthy server's state may go, with idle stops and profiles (``_hub_supervisor``).
#: A server enabled again, or started after an idle stop, starts: it does not restart.
MOVES: dict[ServerState | None, set[ServerState]] = {
    None: {S.STARTING, S.DISABLED, S.STOPPED},
    S.STARTING: {S.READY, S.RESTARTING, S.DISABLED, S.STOPPED},
    S.READY: {S.IDLE, S.RESTARTING, S.DISABLED, S.STOPPED},
    S.IDLE: {S.STARTING, S.DISABLED, S.STOPPED},
    S.RESTARTING: {S.READY, S.DISABLED, S.STOPPED},
    S.DISABLED: {S.STARTING, S.STOPPED},
    S.STOPPED: set(),
}
PROFILES = {"both": ["a", "b"], "only-a": ["a"], "only-b": ["b"]}
idle_steps = st.one_of(
    st.tuples(st.just("call"), st.sampled_from("ab"), st.booleans()),
    st.tuples(st.just("wait"), st.sampled_from((0.1, 0.6, 1.3))),
    st.tuples(st.just("profile"), st.sampled_from((None, *PROFILES))),
    st.tuples(st.just("restart"), st.sampled_from("ab")),
    st.tuples(st.just("idle"), st.sampled_from((None, "1s", "2s"))),
)


async def run_idle_program(tmp: Path, steps: list[tuple[Any, ...]]) -> None:
    script, _ = write_scripts(tmp)
    config = tmp / "mcp.json"
    idle: str | None = "1s"

    def write() -> None:
        extra = {} if idle is None else {"idleTimeout": idle}
        servers = {n: entry(script, "--tag", n, **extra) for n in "ab"}
        config.write_text(json.dumps({"mcpServers": servers, "profiles": PROFILES}))

    write()
    pids: list[int] = []
    async with Hub([config], profile="both", watch=False) as hub:
        events = hub.events()
        await ready(hub)

        def running() -> set[str]:
            return set(PROFILES[hub.profile]) if hub.profile else {"a", "b"}

        pending = [0]  # background calls not yet finished
        restarts = {"a": 0, "b": 0}  # restarts begun, by server

        async def call(name: str, background: bool = False) -> None:
            expect = name in running()  # no profile switch runs meanwhile (see below)
            restarted = restarts[name]
            try:
                with anyio.fail_after(WAIT):
                    pid = int((await hub.call_tool(f"{name}__pid")).text)
            except ToolCallRefused:
                assert not expect, f"{name} refused while in the profile"
                return
            except ConnectionClosed as exc:
                cut: str | None = str(exc)
            else:
                cut = None
            finally:
                pending[0] -= background
            if cut is not None:
                # A restart asked for while the call was in flight ends its connection,
                # and the call is told so (no other step overlaps a call in flight).
                assert background and restarts[name] != restarted, f"{name} lost a call"
                assert cut == f"server {name!r} was restarted while the call was in flight"
                return
            assert expect, f"{name} answered while out of the profile"
            pids.append(pid)

        async with anyio.create_task_group() as tg:
            for step in steps:
                kind = step[0]
                if kind == "call" and step[2]:
                    pending[0] += 1
                    tg.start_soon(call, step[1], True)  # alongside the next steps
                elif kind == "call":
                    await call(step[1])
                elif kind == "wait":
                    await anyio.sleep(step[1])
                elif kind == "restart":
                    restarts[step[1]] += 1
                    if step[1] in running():
                        with anyio.fail_after(WAIT):
                            assert await hub.restart(step[1]) is S.READY
                    else:
                        with pytest.raises(ToolCallRefused):
                            await hub.restart(step[1])
                else:
                    # Background calls finish first, so each knows the profile it ran under.
                    with anyio.fail_after(WAIT):
                        while pending[0]:
                            await anyio.sleep(0.01)
                    if kind == "profile":
                        await hub.use_profile(step[1])
                    else:
                        idle = step[1]
                        write()
                        await hub.reload()
        await ready(hub)
        for name in "ab":
            state = hub.status(name).state
            assert state in ((S.READY, S.IDLE) if name in running() else (S.DISABLED,)), name
        exposed = {t.name.split("__")[0] for t in hub.tools()}
        assert exposed == running()
    seen = events.pending()  # the stream keeps what it buffered, up to the hub's close
    last: dict[str, ServerState | None] = {}
    for event in seen:
        if isinstance(event, ServerStateChanged):
            assert event.old == last.get(event.server), event
            assert event.new in MOVES[event.old], event
            assert event.error is None, event  # healthy servers never fail
            last[event.server] = event.new
    assert set(last.values()) == {S.STOPPED}
    for pid in pids:
        assert await wait_until_dead(pid), f"process {pid} outlived the hub"


EXAMPLE_PROGRAM = [
    ("call", "a", False),
    ("wait", 1.3),
    ("call", "a", True),
    ("profile", "only-b"),
    ("call", "a", False),
    ("idle", None),
    ("profile", None),
    ("call", "b", True),
]


@settings(
    max_examples=6,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=st.lists(idle_steps, min_size=3, max_size=8))
@example(steps=EXAMPLE_PROGRAM)
@example(steps=[("profile", "only-a"), ("wait", 0.1), ("profile", None), ("call", "b", False)])
def test_idle_stops_and_profiles_under_a_drawn_program(
    anyio_backend: str, tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[Any, ...]]
) -> None:
    tmp = tmp_path_factory.mktemp("idle-program")
    in_own_thread(anyio.run, run_idle_program, tmp, steps, backend=anyio_backend)
