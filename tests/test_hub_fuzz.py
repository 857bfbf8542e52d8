"""Hostile servers under the hub's supervision: a drawn program of steps against a live ``Hub``.

Every server is a real child process (``hub_fuzz/hostile_server.py``) whose
behaviour the test switches at run time through a control file: start
normally or slowly, crash at start, die right after ``initialize``, hang in
``initialize`` past the startup timeout, write junk lines to stdout, flood
stderr, exit in the middle of its N-th call, close its stdout and stop
reading in the middle of a call (alive until signalled), leave a grandchild
in its process group, answer slowly, change its tool list (announced with
``list_changed``). A drawn program then calls tools
through the hub (in the foreground and in the background), restarts servers,
kills children from outside, rewrites the config file (add, remove, rename a
server, give it a name the hub must refuse, change its args, env,
``disabled``, timeouts, point it at a missing command, write an invalid file
or delete it) and reloads, explicitly or through the watcher, waits for
``wait_ready()``, and closes the hub, at the end or with calls and restarts
still in flight.

The oracle, from the hub's documentation (module docstrings of ``_hub``,
``_hub_supervisor``, ``_hub_events``; design pain points 7, 16, 17, 21):

1. every ``ServerStateChanged`` continues the previous one of its server
   (``old`` is the state the last event left) along the documented life
   cycle (``ServerState``, the supervisor's loop), and a status read at any
   moment is the state the events say; no event is lost;
2. every failure publishes one event with its error and adds one error entry
   to the server's history (a crash-loop suspension adds its own note); the
   history keeps at most 100 entries, each cut to 1,000 characters;
3. a failed attempt is retried after a backoff within the policy's bounds
   (unless a call, restart or reload hurried it); a suspended server is not
   retried until ``restart()`` or a config change; a server settles: ready
   when it can start, failed (crash loop, or could not start) when it cannot,
   disabled when configured off;
4. ``hub.tools()`` lists exactly the tools of ready servers, each as
   ``server__tool``; ``statuses()`` follow the config's order;
5. a call returns the answer of the server's live child, or fails within
   the server's startup timeout + 1 s (one reconnection) + the call timeout
   with the documented type: ``ToolCallRefused`` for a disabled server,
   ``HubError`` for an unknown one or one that cannot be reached,
   ``ConnectionClosed`` when the child dies during the call,
   ``RequestTimeout``; a call to a healthy ready server succeeds;
   ``restart()`` returns the state the server settled in (ready when it can
   start); ``wait_ready()`` returns once no server is starting;
6. ``reload()`` applies exactly the difference (added, removed, restarted,
   updated) and a removed server's processes are gone when it returns; an
   invalid file raises ``ConfigError``, publishes ``ConfigRejected`` and
   leaves every server as it was; the watcher does the same on its own;
7. ``aclose()`` returns promptly, every child process the hub ever started
   is gone, every server is stopped, event streams end, later calls fail with
   ``HubError``, no task is left, no ``ResourceWarning``; nothing is logged
   with a traceback, and nothing at ERROR but server failures and rejected
   configs.

Both backends; each misbehaviour kind is in an explicit ``@example``. Set
``HUB_FUZZ_EXAMPLES`` for a longer hunt.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import signal
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from fuzzing import in_own_thread, stray_tasks
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from test_hub_support import alive

from mcpwire import (
    ConfigError,
    ConfigRejected,
    ConfigReloaded,
    ConnectionClosed,
    Hub,
    HubError,
    HubEvent,
    MCPWireError,
    RequestTimeout,
    RestartPolicy,
    ServerState,
    ServerStateChanged,
    ToolCallRefused,
)

CHILD = str(Path(__file__).resolve().parent / "hub_fuzz" / "hostile_server.py")
PY = sys.executable
MISSING = "/nonexistent/hostile-mcp-server"
NAMES = ("alpha", "beta", "gamma", "delta")
#: A name with the separator in it: the hub refuses to run it (it could not expose its tools).
INVALID = "bad__name"
TOOLS = ("echo", "pid", "grow", "zap")
STARTS = ("ok", "crash", "hang", "die", "junk", "sluggish")
#: The hub's startup timeout (a config's ``startupTimeout`` is at least 1 s): short, so a
#: hanging server costs little, but well above a healthy child's start on a loaded machine.
STARTUP = 1.0
POLICY = RestartPolicy(
    initial_backoff=0.1, max_backoff=0.3, jitter=0.2, crash_loop_count=3, crash_loop_window=60
)
#: Allowance for a loaded 2-core machine on top of every documented bound.
SLACK = 3.0
MAX_ERRORS, MAX_ERROR_LENGTH, CUT = 100, 1000, len("...(truncated)")
EXAMPLES = int(os.environ.get("HUB_FUZZ_EXAMPLES", "1"))

S = ServerState
#: The life cycle of ``ServerState`` and the supervisor's loop: where each state may go.
ALLOWED: dict[ServerState | None, set[ServerState]] = {
    # Removed, or the hub closed, before its actor first ran: straight to stopped.
    None: {S.STARTING, S.DISABLED, S.FAILED, S.STOPPED},
    S.STARTING: {S.READY, S.FAILED, S.RESTARTING, S.DISABLED, S.STOPPED},
    S.READY: {S.RESTARTING, S.FAILED, S.DISABLED, S.STOPPED},
    S.RESTARTING: {S.READY, S.FAILED, S.DISABLED, S.STOPPED},
    S.FAILED: {S.RESTARTING, S.DISABLED, S.STOPPED},
    S.DISABLED: {S.STARTING, S.RESTARTING, S.STOPPED},
    S.STOPPED: set(),
}


# -- the program -------------------------------------------------------------------------


@dataclass(frozen=True)
class Behaviour:
    """What one server's child does (see ``hostile_server.py``)."""

    start: str = "ok"
    flood: int = 0
    exit_after: int = 0
    slow: float = 0.0
    tools: tuple[str, ...] = ("echo", "pid")
    mute_after: int = 0
    grandchild: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "start": self.start,
            "flood": self.flood,
            "exit_after": self.exit_after,
            "mute_after": self.mute_after,
            "grandchild": self.grandchild,
            "slow": self.slow,
            "tools": list(self.tools),
        }

    @property
    def starts(self) -> bool:
        return self.start in ("ok", "junk", "sluggish")


@dataclass(frozen=True)
class Spec:
    """One server's config entry."""

    variant: int = 0  # an extra argument: a change restarts the server
    env: int = 0
    disabled: bool = False
    startup: str | None = None
    timeout: str | None = None
    missing: bool = False  # a command that does not exist

    def connection(self) -> tuple[object, ...]:
        return (self.variant, self.env, self.startup, self.missing, self.disabled)


Step = tuple[Any, ...]

behaviours = st.builds(
    Behaviour,
    start=st.sampled_from(STARTS),
    flood=st.sampled_from((0, 0, 5000, 200_000)),
    exit_after=st.sampled_from((0, 0, 1, 2)),
    slow=st.sampled_from((0.0, 0.0, 0.4)),
    tools=st.lists(st.sampled_from(TOOLS), unique=True, max_size=4).map(tuple),
    mute_after=st.sampled_from((0, 0, 0, 0, 1)),
    grandchild=st.sampled_from((False, False, False, True)),
)
specs = st.builds(
    Spec,
    variant=st.integers(0, 2),
    env=st.integers(0, 2),
    disabled=st.sampled_from((False, False, False, True)),
    startup=st.sampled_from((None, None, "1s")),
    timeout=st.sampled_from((None, "1s", "2s")),
    missing=st.sampled_from((False, False, False, True)),
)
names = st.sampled_from(NAMES)
edits = st.one_of(
    st.tuples(st.just("add"), names, specs, behaviours),
    st.tuples(st.just("remove"), names),
    st.tuples(st.just("rename"), names, names | st.just(INVALID)),
    st.tuples(st.just("set"), names, specs),
    st.tuples(st.just("error"), st.sampled_from(("json", "timeout", "args", "delete"))),
)
targets = names | st.just(INVALID)
steps = st.one_of(
    st.tuples(st.just("behave"), names, behaviours),
    st.tuples(
        st.just("call"),
        targets,
        st.sampled_from(TOOLS),
        st.sampled_from((0.3, 1.0)),
        st.booleans(),
    ),
    st.tuples(st.just("restart"), targets),
    st.tuples(st.just("restart-soon"), names),
    st.tuples(st.just("kill"), names),
    st.tuples(st.just("edit"), edits),
    st.tuples(st.just("wait"), st.sampled_from((0.05, 0.3))),
    st.tuples(st.just("close")),
    st.tuples(st.just("wait-ready")),
)


@dataclass(frozen=True)
class Program:
    initial: tuple[tuple[str, Spec, Behaviour], ...]
    steps: tuple[Step, ...]
    watch: bool = False
    close_inside: bool = True


programs = st.builds(
    Program,
    initial=st.lists(
        st.tuples(names, specs, behaviours), min_size=1, max_size=3, unique_by=lambda t: t[0]
    ).map(tuple),
    steps=st.lists(steps, max_size=8).map(tuple),
    watch=st.booleans(),
    close_inside=st.booleans(),
)


# -- the run -----------------------------------------------------------------------------


@dataclass
class Run:
    program: Program
    tmp: Path
    config: dict[str, Spec] = field(default_factory=dict)  # the last good config
    behaviour: dict[str, Behaviour] = field(default_factory=dict)
    events: list[HubEvent] = field(default_factory=list)
    #: Per server name: the state the last event left, and the events of its current supervisor.
    last: dict[str, ServerState | None] = field(default_factory=dict)
    generation: dict[str, list[ServerStateChanged]] = field(default_factory=dict)
    #: Spans of time in which something could hurry a retry of a server (its calls and
    #: restarts) or of any (``None``: reloads).
    hurries: list[tuple[float, float, str | None]] = field(default_factory=list)
    #: Servers killed from outside since they were last seen ready.
    dirty: set[str] = field(default_factory=set)
    background: int = 0
    closed: bool = False
    written: str = ""
    #: When each server's behaviour was last changed.
    changed_at: dict[str, float] = field(default_factory=dict)

    @property
    def control_file(self) -> Path:
        return self.tmp / "control.json"

    @property
    def pids_file(self) -> Path:
        return self.tmp / "pids.txt"

    @property
    def config_file(self) -> Path:
        return self.tmp / "mcp.json"

    def entry(self, name: str, spec: Spec) -> dict[str, Any]:
        args = [CHILD, name, str(self.control_file), str(self.pids_file), f"v{spec.variant}"]
        out: dict[str, Any] = {
            "command": MISSING if spec.missing else PY,
            "args": args,
            "env": {"HOSTILE_ENV": str(spec.env)},
        }
        if spec.disabled:
            out["disabled"] = True
        if spec.startup is not None:
            out["startupTimeout"] = spec.startup
        if spec.timeout is not None:
            out["timeout"] = spec.timeout
        return out

    def write_config(self, config: dict[str, Spec], broken: str | None = None) -> bool:
        """Write the file as editors save; returns whether its bytes changed."""
        servers = {n: self.entry(n, s) for n, s in config.items()}
        if broken == "delete":
            self.config_file.unlink()
            changed, self.written = self.written != "", ""
            return changed
        if broken == "json":
            text = '{"mcpServers": {"alpha": {"command": '
        else:
            if broken == "timeout":
                servers["broken"] = {"command": PY, "timeout": -1}
            elif broken == "args":
                servers["broken"] = {"command": PY, "args": 5}
            text = json.dumps({"mcpServers": servers}, indent=1)
        tmp = self.config_file.with_name("mcp.json.tmp")
        tmp.write_text(text)
        os.replace(tmp, self.config_file)
        changed, self.written = text != self.written, text
        return changed

    def write_control(self) -> None:
        tmp = self.control_file.with_name("control.json.tmp")
        tmp.write_text(json.dumps({n: b.to_json() for n, b in self.behaviour.items()}))
        os.replace(tmp, self.control_file)

    def spawns(self) -> list[tuple[int, str, float]]:
        try:
            lines = self.pids_file.read_text().splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            pid, name, when = line.split()
            out.append((int(pid), name, float(when)))
        return out

    def startup(self, name: str) -> float:
        spec = self.config.get(name)
        return 1.0 if spec is not None and spec.startup == "1s" else STARTUP

    def call_timeout(self, name: str) -> float:
        spec = self.config.get(name)
        if spec is None or spec.timeout is None:
            return 60.0
        return float(spec.timeout[:-1])


def describe(hub: Hub) -> str:
    return "\n".join(
        f"{s.name}: {s.state} pid={s.pid} reason={s.reason!r} last={s.last_error!r}"
        for s in hub.statuses()
    )


# -- the oracle, checked after every step ------------------------------------------------


def drain(run: Run, hub: Hub, stream: Any) -> list[HubEvent]:
    """Take the published events and check each state change continues the last one."""
    new: list[HubEvent] = stream.pending()
    assert stream.dropped == 0
    for event in new:
        run.events.append(event)
        if not isinstance(event, ServerStateChanged):
            continue
        name = event.server
        before = run.last.get(name)
        assert event.old == before, (event, before)
        assert event.new in ALLOWED[before], f"{name}: {before} -> {event.new} ({event.error})"
        if event.old is None:
            run.generation[name] = []
        run.generation.setdefault(name, []).append(event)
        if event.new is S.FAILED:
            assert event.error, event  # the error that caused it
        if event.new is S.READY:
            run.dirty.discard(name)
        run.last[name] = None if event.new is S.STOPPED else event.new
    return new


def check_now(run: Run, hub: Hub, stream: Any) -> None:
    """What must hold at any moment (no await in here)."""
    drain(run, hub, stream)
    statuses = hub.statuses()
    assert [s.name for s in statuses] == list(run.config), "statuses() follow the config order"
    ready = set()
    for status in statuses:
        last = run.last.get(status.name)
        assert status.state is (last or S.STARTING), (status.name, status.state, last)
        if status.state is S.READY:
            ready.add(status.name)
        assert len(status.error_history) <= MAX_ERRORS
        for entry in status.error_history:
            assert len(entry.message) <= MAX_ERROR_LENGTH + CUT
            assert len(entry.stderr_tail) <= MAX_ERROR_LENGTH + CUT
    for tool in hub.tools(include_disabled=True):
        assert tool.server in ready, (tool, describe(hub))
        assert tool.name == f"{tool.server}__{tool.original_name}"


def check_history(run: Run, hub: Hub) -> None:
    """One error entry per failure event (and a note per suspension), in order."""
    for status in hub.statuses():
        events = run.generation.get(status.name, [])
        failures = [e.error for e in events if e.error is not None]
        entries = [
            e.message
            for e in status.error_history
            if e.level == "error" and not e.message.startswith("suspended after a crash loop")
        ]
        expected = [cut(f) for f in failures]
        if len(status.error_history) < MAX_ERRORS:
            assert entries == expected, (status.name, entries, expected)
        else:
            assert expected[len(expected) - len(entries) :] == entries


def cut(message: str) -> str:
    if len(message) <= MAX_ERROR_LENGTH:
        return message
    return message[:MAX_ERROR_LENGTH] + "...(truncated)"


def hurried(run: Run, name: str, start: float, end: float) -> bool:
    return any(a <= end and b >= start and who in (None, name) for a, b, who in run.hurries)


def check_backoff(run: Run, hub: Hub) -> None:
    """A failed attempt is retried after the policy's backoff, and a suspended server is not."""
    low = POLICY.initial_backoff * (1 - POLICY.jitter)
    high = POLICY.max_backoff * (1 + POLICY.jitter) + SLACK
    spawns = run.spawns()
    for status in hub.statuses():
        events = run.generation.get(status.name, [])
        history = list(status.error_history)
        suspended_notes = [
            e.timestamp for e in history if e.message.startswith("suspended after a crash loop")
        ]
        for i, event in enumerate(events):
            if event.error is None or event.new is S.STOPPED:
                continue
            after = events[i + 1] if i + 1 < len(events) else None
            end = after.timestamp if after is not None else time.time()
            suspension = any(abs(t - event.timestamp) < 0.05 for t in suspended_notes)
            if event.new is S.FAILED:
                if after is None or after.new is not S.RESTARTING:
                    continue
                gap = after.timestamp - event.timestamp
                if hurried(run, status.name, event.timestamp, after.timestamp):
                    continue
                assert not suspension, f"{status.name}: retried while suspended: {events}"
                assert low <= gap <= high, (status.name, gap, event, after)
            elif event.new is S.RESTARTING:
                nxt = [t for _, n, t in spawns if n == status.name and event.timestamp < t <= end]
                if not nxt:
                    continue
                gap = nxt[0] - event.timestamp
                if not hurried(run, status.name, event.timestamp, nxt[0]):
                    assert low <= gap <= high, (status.name, gap, event)


# -- the steps ---------------------------------------------------------------------------


def expected_diff(
    old: dict[str, Spec], new: dict[str, Spec]
) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    added = tuple(n for n in new if n not in old)
    removed = tuple(n for n in old if n not in new)
    restarted = tuple(n for n in new if n in old and new[n].connection() != old[n].connection())
    updated = tuple(
        n
        for n in new
        if n in old and new[n] != old[n] and new[n].connection() == old[n].connection()
    )
    return added, removed, restarted, updated


async def wait_for_event(run: Run, hub: Hub, stream: Any, kinds: tuple[type, ...]) -> HubEvent:
    with anyio.move_on_after(SLACK + 2):
        while True:
            for event in drain(run, hub, stream):
                if isinstance(event, kinds):
                    return event
            await anyio.sleep(0.01)
    raise AssertionError(f"no {kinds} within {SLACK + 2} s (watcher)")


async def edit(run: Run, hub: Hub, stream: Any, step: Step) -> None:
    kind = step[0]
    new = dict(run.config)
    broken: str | None = None
    if kind == "add":
        _, name, spec, behaviour = step
        if name in new:
            return
        new[name] = spec
        run.behaviour[name] = behaviour
        run.write_control()
    elif kind == "remove":
        if step[1] not in new:
            return
        del new[step[1]]
    elif kind == "rename":
        _, old_name, new_name = step
        if old_name not in new or new_name in new:
            return
        # The renamed server keeps its place in the file.
        new = {(new_name if n == old_name else n): s for n, s in new.items()}
        run.behaviour.setdefault(new_name, run.behaviour.get(old_name, Behaviour()))
        run.write_control()
    elif kind == "set":
        _, name, spec = step
        if name not in new or new[name] == spec:
            return
        new[name] = spec
    else:
        broken = step[1]
    started = time.time()
    changed = run.write_config(new, broken)
    if not changed:
        return
    pids_before = run.spawns()
    statuses_before = {s.name: s.config for s in hub.statuses()}
    if run.program.watch:
        got = await wait_for_event(run, hub, stream, (ConfigReloaded, ConfigRejected))
    else:
        try:
            with anyio.fail_after(SLACK + 10):
                got = await hub.reload()
        except ConfigError:
            assert broken is not None
            got = await wait_for_event(run, hub, stream, (ConfigRejected,))
    run.hurries.append((started, time.time(), None))
    if broken is not None:
        check_now(run, hub, stream)
        assert isinstance(got, ConfigRejected), got
        assert str(run.config_file) in got.error, got.error
        # The last good config stays in force, every server as it was.
        assert {s.name: s.config for s in hub.statuses()} == statuses_before
        run.write_config(run.config)  # back to the good one, quietly
        if run.program.watch:
            await wait_for_event(run, hub, stream, (ConfigReloaded,))
        else:
            await hub.reload()
        return
    assert isinstance(got, ConfigReloaded), got
    old, run.config = run.config, new
    assert (got.added, got.removed, got.restarted, got.updated) == expected_diff(old, new)
    check_now(run, hub, stream)
    for name in got.removed:
        for pid, who, _ in pids_before:
            if who in (name, f"{name}-grandchild"):
                assert not alive(pid), f"removed server {name!r} left process {pid}"


def healthy(run: Run, name: str) -> bool:
    spec, behaviour = run.config.get(name), run.behaviour.get(name, Behaviour())
    return (
        spec is not None
        and not spec.disabled
        and not spec.missing
        and behaviour.starts
        and behaviour.exit_after == 0
        and behaviour.mute_after == 0
        and behaviour.slow == 0
    )


def served(run: Run, name: str) -> bool:
    """Whether ``name`` is a configured, enabled server (else the hub refuses it)."""
    spec = run.config.get(name)
    return spec is not None and name != INVALID and not spec.disabled


async def settled(
    run: Run, name: str, what: str, bound: float, act: Callable[[], Awaitable[object]]
) -> object:
    """What ``act`` gave, its result or a typed error, which must come within
    ``bound``; for a server the hub does not serve, that error is its refusal."""
    started = time.time()
    outcome: object = None
    with anyio.move_on_after(bound) as scope:
        try:
            outcome = await act()
        except MCPWireError as exc:
            outcome = exc
    run.hurries.append((started, time.time(), name))
    assert not scope.cancelled_caught, f"{what}: no answer or error within {bound:g} s"
    spec = run.config.get(name)
    if spec is None or name == INVALID:
        assert type(outcome) is HubError, outcome
    elif spec.disabled:
        assert isinstance(outcome, ToolCallRefused), outcome
    return outcome


async def call(run: Run, hub: Hub, stream: Any, step: Step) -> None:
    _, name, tool, timeout, _background = step
    exposed = f"{name}__{tool}"
    spec = run.config.get(name)
    sure = (
        healthy(run, name)
        and run.background == 0
        and name not in run.dirty
        and hub.status(name).state is S.READY
        and exposed in {t.name for t in hub.tools()}
    )
    bound = run.startup(name) + 1.0 + timeout + SLACK
    outcome = await settled(
        run, name, exposed, bound, lambda: hub.call_tool(exposed, {}, timeout=timeout)
    )
    if sure and served(run, name):
        assert not isinstance(outcome, BaseException), (outcome, describe(hub))
    if isinstance(outcome, BaseException):
        assert isinstance(outcome, (HubError, ConnectionClosed, RequestTimeout)), repr(outcome)
        if isinstance(outcome, ToolCallRefused):
            assert spec is not None and spec.disabled, outcome
        if isinstance(outcome, ConnectionClosed) and outcome.exit_code == 5:
            # Died in the call (exit_after): the error names the status and the stderr tail.
            assert f"{name}: exiting in call" in outcome.stderr_tail, outcome
    else:
        text = outcome.content[0].text  # type: ignore[attr-defined]
        who, said_tool, pid = text.split(":")
        assert (who, said_tool) == (name, tool)
        assert (int(pid), name) in {(p, n) for p, n, _ in run.spawns()}


async def background_call(run: Run, hub: Hub, stream: Any, step: Step) -> None:
    """A call that overlaps later steps: it must end (answer or typed error) on its own."""
    _, name, tool, timeout, _ = step
    bound = 1.0 + 1.0 + timeout + SLACK  # any server's startup timeout, one reconnection
    started = time.time()
    try:
        with anyio.move_on_after(bound) as scope:
            try:
                await hub.call_tool(f"{name}__{tool}", {}, timeout=timeout)
            except MCPWireError:
                pass
        assert not scope.cancelled_caught, f"background call of {name}__{tool} hung"
    finally:
        run.hurries.append((started, time.time(), name))
        run.background -= 1


async def background_restart(run: Run, hub: Hub, name: str) -> None:
    """A restart that overlaps later steps: it returns a state or a typed error, in time."""
    started = time.time()
    try:
        with anyio.move_on_after(run.startup(name) + 5.0 + SLACK) as scope:
            try:
                state = await hub.restart(name)
            except MCPWireError:
                pass
            else:
                assert isinstance(state, ServerState)
        assert not scope.cancelled_caught, f"restart({name!r}) did not return"
    finally:
        run.hurries.append((started, time.time(), name))
        run.background -= 1


async def restart(run: Run, hub: Hub, stream: Any, name: str) -> None:
    spec = run.config.get(name)
    bound = run.startup(name) + 5.0 + SLACK
    outcome = await settled(run, name, f"restart({name!r})", bound, lambda: hub.restart(name))
    if spec is not None and served(run, name):
        assert isinstance(outcome, ServerState), outcome
        if run.background == 0 and name not in run.dirty:
            starts = run.behaviour.get(name, Behaviour()).starts and not spec.missing
            assert (outcome is S.READY) == starts, (name, outcome, describe(hub))


def kill(run: Run, hub: Hub, name: str) -> None:
    if name not in run.config:
        return
    pid = hub.status(name).pid
    if pid is None:
        return
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return
    run.dirty.add(name)


async def settle(run: Run, hub: Hub, stream: Any) -> None:
    """Every server comes to rest where its config and behaviour say."""
    bound = POLICY.crash_loop_count * (1.0 + 0.2 + POLICY.max_backoff * 1.2) + 2 * SLACK

    def resting(name: str) -> bool:
        status = hub.status(name)
        if status.state is S.FAILED:
            return "retrying" not in status.reason
        return status.state in (S.READY, S.DISABLED)

    # At rest: every server resting, and no event for a while (a child that died
    # a moment ago may not have been noticed yet).
    quiet_since = time.monotonic()
    with anyio.move_on_after(bound):
        while True:
            if drain(run, hub, stream):
                quiet_since = time.monotonic()
            if all(resting(n) for n in run.config) and time.monotonic() - quiet_since > 0.3:
                break
            await anyio.sleep(0.02)
    check_now(run, hub, stream)
    spawned = {pid: when for pid, _, when in run.spawns()}
    for name, spec in run.config.items():
        status = hub.status(name)
        where = f"{name} ({run.behaviour.get(name)}, {spec}):\n{describe(hub)}"
        if name == INVALID:
            assert status.state is S.FAILED and "separator" in status.reason, where
            assert status.pid is None, where
        elif spec.disabled:
            assert status.state is S.DISABLED, where
        elif spec.missing:
            assert status.state is S.FAILED and status.reason == "could not start", where
        elif status.state is S.READY:
            # Ready means a live child, started when its behaviour let it start.
            assert status.pid is not None and alive(status.pid), where
            if not run.behaviour.get(name, Behaviour()).starts:
                assert spawned[status.pid] < run.changed_at.get(name, 0.0), where
        else:
            assert status.state is S.FAILED and "crash loop" in status.reason, where
    # The registry follows the children's tool lists (list_changed) once they are quiet.
    with anyio.move_on_after(SLACK):
        while True:
            if exposed_now(hub) == expected_tools(run, hub):
                break
            await anyio.sleep(0.02)
    check_now(run, hub, stream)
    assert exposed_now(hub) == expected_tools(run, hub), describe(hub)


def exposed_now(hub: Hub) -> set[str]:
    return {t.name for t in hub.tools()}


def expected_tools(run: Run, hub: Hub) -> set[str]:
    return {
        f"{s.name}__{t}"
        for s in hub.statuses()
        if s.state is S.READY
        for t in run.behaviour.get(s.name, Behaviour()).tools
    }


async def run_program(program: Program, tmp: Path, backend: str) -> None:
    run = Run(program, tmp)
    for name, spec, behaviour in program.initial:
        run.config[name] = spec
        run.behaviour[name] = behaviour
    run.write_control()
    run.write_config(run.config)
    hub = Hub(
        [run.config_file],
        startup_timeout=STARTUP,
        restart_policy=POLICY,
        watch=program.watch,
        poll_interval=0.03,
        debounce=0.05,
        event_buffer=100_000,
    )
    with anyio.fail_after(120):
        async with hub, anyio.create_task_group() as tg:
            stream = hub.events()
            check_now(run, hub, stream)
            for step in program.steps:
                kind = step[0]
                if kind == "behave":
                    run.behaviour[step[1]] = step[2]
                    run.changed_at[step[1]] = time.time()
                    run.write_control()
                elif kind == "call" and step[4]:
                    run.background += 1
                    tg.start_soon(background_call, run, hub, stream, step)
                elif kind == "call":
                    await call(run, hub, stream, step)
                elif kind == "restart":
                    await restart(run, hub, stream, step[1])
                elif kind == "restart-soon":
                    run.background += 1
                    tg.start_soon(background_restart, run, hub, step[1])
                elif kind == "wait-ready":
                    # Returns once no server is starting: each is bounded by its startup timeout.
                    with anyio.fail_after(1.0 + SLACK):
                        await hub.wait_ready()
                    check_now(run, hub, stream)
                    assert S.STARTING not in {s.state for s in hub.statuses()}, describe(hub)
                elif kind == "close":
                    # Closing with calls and restarts still in flight: they end too.
                    with anyio.fail_after(SLACK + 5):
                        await hub.aclose()
                    run.closed = True
                    break
                elif kind == "kill":
                    kill(run, hub, step[1])
                elif kind == "edit":
                    await edit(run, hub, stream, step[1])
                else:
                    await anyio.sleep(step[1])
                check_now(run, hub, stream)
            # In flight at aclose, calls and restarts end at once; otherwise within
            # their own bounds.
            with anyio.fail_after(SLACK + 2 if run.closed else 60):
                while run.background:
                    await anyio.sleep(0.02)
            if not run.closed:
                await settle(run, hub, stream)
                check_history(run, hub)
                check_backoff(run, hub)
            if program.close_inside:
                with anyio.fail_after(SLACK + 5):
                    await hub.aclose()
            closed_at = time.time()
        assert time.time() - closed_at < SLACK + 5, "aclose took too long"
        drain(run, hub, stream)
        # Every child ever started is gone, every server stopped, the stream ended.
        left = [(pid, name) for pid, name, _ in run.spawns() if alive(pid)]
        assert not left, f"children left after aclose: {left}"
        assert {s.state for s in hub.statuses()} <= {S.STOPPED}
        assert all(run.last.get(n) is None for n in run.config), run.last
        with anyio.fail_after(1):
            async for event in stream:
                raise AssertionError(f"an event after the hub closed: {event}")
        with pytest.raises(HubError, match="not running"):
            await hub.call_tool(f"{NAMES[0]}__echo", {})
    await anyio.sleep(0)
    assert not stray_tasks(backend)


# -- the test ----------------------------------------------------------------------------

OK = Behaviour()
EXAMPLE_PROGRAMS = [
    # crash at start, hang in initialize, die after initialize; restart (of a server
    # still starting, too) and rename.
    Program(
        initial=(
            ("epsilon", Spec(), Behaviour(start="sluggish")),
            ("alpha", Spec(), OK),
            ("beta", Spec(), Behaviour(start="crash")),
            ("gamma", Spec(), Behaviour(start="hang")),
        ),
        steps=(
            ("wait", 0.15),
            ("restart", "epsilon"),
            ("call", "alpha", "echo", 1.0, False),
            ("call", "gamma", "echo", 0.3, False),
            ("behave", "beta", Behaviour(start="die")),
            ("restart", "beta"),
            ("edit", ("rename", "alpha", "delta")),
            ("call", "delta", "pid", 1.0, False),
            ("call", "alpha", "pid", 1.0, False),
            ("edit", ("rename", "gamma", INVALID)),
            ("call", INVALID, "echo", 1.0, False),
            ("restart", INVALID),
        ),
        watch=False,
    ),
    # junk on stdout, a stderr flood, exit in a call, slow answers, a kill from outside.
    Program(
        initial=(
            ("alpha", Spec(), Behaviour(start="junk", tools=("echo", "zap"), grandchild=True)),
            ("beta", Spec(timeout="1s"), Behaviour(flood=200_000, exit_after=2)),
            ("gamma", Spec(), Behaviour(slow=0.4)),
            ("delta", Spec(), Behaviour(mute_after=1)),
        ),
        steps=(
            ("call", "delta", "echo", 1.0, True),
            ("call", "alpha", "zap", 1.0, False),
            ("call", "beta", "echo", 1.0, False),
            ("call", "beta", "echo", 1.0, False),
            ("call", "gamma", "echo", 0.3, False),
            ("kill", "alpha"),
            ("call", "alpha", "echo", 1.0, True),
            ("wait", 0.3),
            ("call", "alpha", "echo", 1.0, False),
        ),
        watch=False,
        close_inside=False,
    ),
    # tool list changes, config edits through the watcher (error, disable, missing command).
    Program(
        initial=(("alpha", Spec(), OK), ("beta", Spec(), OK)),
        steps=(
            ("behave", "alpha", Behaviour(tools=("grow", "echo", "zap"))),
            ("wait", 0.3),
            ("edit", ("error", "timeout")),
            ("edit", ("set", "beta", Spec(disabled=True))),
            ("call", "beta", "echo", 1.0, False),
            ("edit", ("add", "gamma", Spec(missing=True), OK)),
            ("edit", ("set", "alpha", Spec(variant=1, timeout="2s"))),
            ("edit", ("remove", "alpha")),
            ("edit", ("error", "delete")),
            ("edit", ("error", "json")),
        ),
        watch=True,
    ),
]


def with_examples(test: Any) -> Any:
    for program in EXAMPLE_PROGRAMS:
        test = example(program=program)(test)
    return test


@settings(
    max_examples=EXAMPLES,
    # A long hunt reports the first failure as drawn: shrinking real processes is slow.
    phases=[Phase.explicit, Phase.generate] if EXAMPLES > 10 else list(Phase),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(program=programs)
@with_examples
def test_hub_under_hostile_servers(
    anyio_backend: str,
    caplog: pytest.LogCaptureFixture,
    tmp_path_factory: pytest.TempPathFactory,
    program: Program,
) -> None:
    caplog.clear()
    tmp = tmp_path_factory.mktemp("hub-fuzz")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        in_own_thread(anyio.run, run_program, program, tmp, anyio_backend, backend=anyio_backend)
        gc.collect()
    assert not caught, [str(w.message) for w in caught]
    logged = [r for r in caplog.records if r.name.split(".")[0] == "mcpwire"]
    assert not [r.getMessage() for r in logged if r.exc_info], "a traceback was logged"
    unexpected = [
        r.getMessage()
        for r in logged
        if r.levelno >= logging.ERROR
        and not (r.name == "mcpwire.hub" and r.msg in ("MCP server %r: %s", CONFIG_REJECTED))
    ]
    assert not unexpected


CONFIG_REJECTED = "config not applied, the last good one stays: %s"
