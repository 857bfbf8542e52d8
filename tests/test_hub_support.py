"""Shared pieces of the hub tests: real server scripts, config writers, process checks.

``SERVER`` is a small mcpwire server whose misbehaviour is chosen on its command
line, so one script plays every kind of server a hub meets (pain points 1, 5, 6,
7, 16, 17):

* ``--banner``: prints junk lines to stdout before serving (banners, print debugging);
* ``--sleep S``: sleeps before serving (slow to start);
* ``--hang``: reads requests but never answers (startup timeout);
* ``--exit-at-start``: writes to stderr and exits 7 before serving;
* ``--die-after S``: serves, then exits 5 after S seconds (a crash after ready);
* ``--grandchild FILE``: starts a sleeping grandchild and writes its pid to FILE;
* ``--escape FILE``: the same, in its own session (it keeps our stdout open);
* ``--tag T``, ``--extra-tool NAME``, ``--many N``: distinguishes servers, adds tools.

Its tools: ``echo``, ``pid``, ``tag``, ``crash`` (``os._exit`` mid-call after
writing to stderr), ``slow`` (progress), ``nap`` (sleeps), ``grow`` (adds a tool
and announces ``list_changed``); a resource ``test://info`` and a prompt ``hello``.

``REF_SERVER`` is a reference-SDK (``mcp==2.3.0``) server with an ``echo`` tool.
This module holds no tests; it is collected and yields none.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest

from mcpwire import Hub, HubEvent, RestartPolicy, ServerState, ServerStateChanged

PY = sys.executable
#: The two eras, as ``Client(mode=...)`` names them.
MODERN, LEGACY = "2026-07-28", "legacy"

_F = TypeVar("_F", bound=Callable[..., Any])


def era_pairs(test: _F) -> _F:
    """Run ``test`` for every pair of eras: ``upstream``, the client of the hub's
    server, and ``downstream``, the hub's own clients of the servers behind it."""
    each_downstream = pytest.mark.parametrize("downstream", [LEGACY, MODERN])
    return pytest.mark.parametrize("upstream", [LEGACY, MODERN])(each_downstream(test))  # type: ignore[no-any-return]


ROOT = Path(__file__).resolve().parent.parent
CONFIGS = Path(__file__).resolve().parent / "hub_configs"
#: Bound on any single wait in the hub tests.
WAIT = 20.0
#: Restarts that keep the tests quick.
FAST = RestartPolicy(initial_backoff=0.1, max_backoff=0.5, jitter=0.1)

SERVER = textwrap.dedent(
    """
    import os, subprocess, sys, threading, time
    from mcpwire import Context, Server

    argv = sys.argv[1:]

    def opt(name, default=None):
        return argv[argv.index(name) + 1] if name in argv else default

    if "--banner" in argv:
        sys.stdout.write("Starting test server v1.0 ...\\n*** BANNER: not JSON ***\\n")
        sys.stdout.flush()
    if "--exit-at-start" in argv:
        sys.stderr.write("fatal: bad setup (simulated)\\n")
        sys.stderr.flush()
        sys.exit(7)
    if opt("--sleep"):
        time.sleep(float(opt("--sleep")))
    if "--hang" in argv:
        for _ in sys.stdin:  # reads every request, answers none; leaves at EOF
            pass
        sys.exit(0)
    if opt("--grandchild"):
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        with open(opt("--grandchild"), "w") as f:
            f.write(str(child.pid))
    if opt("--escape"):
        # A grandchild in its own session: it survives the group kill and keeps stdout open.
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True
        )
        with open(opt("--escape"), "a") as f:
            f.write(f"{child.pid}\\n")
    if opt("--die-after"):
        def die():
            time.sleep(float(opt("--die-after")))
            sys.stderr.write("dying on purpose\\n")
            sys.stderr.flush()
            os._exit(5)
        threading.Thread(target=die, daemon=True).start()

    server = Server("hub-test-" + opt("--tag", "x"), "1.0", instructions="A test server.")

    @server.tool()
    def echo(message: str) -> str:
        \"\"\"Echo the message back.\"\"\"
        return message

    @server.tool()
    def pid() -> int:
        \"\"\"This server's process id.\"\"\"
        return os.getpid()

    @server.tool()
    def tag() -> str:
        \"\"\"The --tag this server was started with.\"\"\"
        return opt("--tag", "x")

    @server.tool()
    def env(name: str) -> str:
        \"\"\"An environment variable of this process, or <unset>.\"\"\"
        return os.environ.get(name, "<unset>")

    @server.tool()
    def crash(code: int = 3) -> str:
        \"\"\"Exit the process in the middle of the call.\"\"\"
        sys.stderr.write("about to crash: simulated failure\\n")
        sys.stderr.flush()
        os._exit(code)

    @server.tool()
    async def slow(ctx: Context, steps: int = 3) -> str:
        \"\"\"Report progress, then answer.\"\"\"
        for i in range(steps):
            await ctx.report_progress(i + 1, steps)
        return "done"

    @server.tool()
    async def nap(seconds: float) -> str:
        \"\"\"Sleep, then answer.\"\"\"
        import anyio
        await anyio.sleep(seconds)
        return "rested"

    @server.tool()
    async def grow(name: str) -> str:
        \"\"\"Add a tool called name and announce the change.\"\"\"
        server.add_tool(lambda: name, name=name, description="grown at run time")
        await server.notify_tools_changed()
        return name

    if opt("--extra-tool"):
        server.add_tool(lambda: "extra", name=opt("--extra-tool"), description="extra")
    for i in range(int(opt("--many", "0"))):
        server.add_tool(lambda: "x", name=f"t{i:03d}", description=f"tool {i}")

    @server.resource("test://info", description="What this server is.")
    def info() -> str:
        return "info " + opt("--tag", "x")

    @server.prompt()
    def hello(name: str) -> str:
        \"\"\"Say hello.\"\"\"
        return f"Hello, {name}!"

    server.run()
    """
)

REF_SERVER = textwrap.dedent(
    """
    import warnings
    warnings.simplefilter("ignore")
    from mcp.server.mcpserver import MCPServer

    mcp = MCPServer("ref-echo", version="0.1.0")

    @mcp.tool()
    def echo(message: str) -> str:
        \"\"\"Echo the message back.\"\"\"
        return message

    mcp.run("stdio")
    """
)


def write_scripts(tmp: Path) -> tuple[str, str]:
    """Write both server scripts into ``tmp``; returns their paths."""
    server = tmp / "hub_test_server.py"
    server.write_text(SERVER)
    ref = tmp / "ref_echo_server.py"
    ref.write_text(REF_SERVER)
    return str(server), str(ref)


def entry(script: str, *args: str, **extra: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry that runs ``script`` with this interpreter."""
    return {"command": PY, "args": [script, *args], **extra}


def write_config(path: Path, servers: dict[str, dict[str, Any]]) -> None:
    """Write a config the way editors save: to a temporary file, renamed over the target."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"mcpServers": servers}, indent=2))
    os.replace(tmp, path)


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as dead)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("State:"):
                    return "Z" not in line.split()[1]
    except OSError:
        return False
    return True


async def wait_until_dead(pid: int, timeout: float = 5.0) -> bool:
    with anyio.move_on_after(timeout):
        while alive(pid):
            await anyio.sleep(0.02)
    return not alive(pid)


def describe(hub: Hub) -> str:
    """Every server's state, pid and last error: what a failed wait should show."""
    return "\n".join(
        f"{s.name}: {s.state} pid={s.pid} restarts={s.restarts} reason={s.reason!r} "
        f"last={s.last_error!r}"
        for s in hub.statuses()
    )


async def ready(hub: Hub, timeout: float = WAIT) -> None:
    """``hub.wait_ready`` that says which server was still starting on a timeout."""
    try:
        await hub.wait_ready(timeout=timeout)
    except TimeoutError:
        raise AssertionError(f"not ready after {timeout} s:\n{describe(hub)}") from None


async def wait_state(hub: Hub, name: str, *states: ServerState, timeout: float = WAIT) -> None:
    """Poll until ``name`` is in one of ``states``."""
    with anyio.move_on_after(timeout):
        while hub.status(name).state not in states:
            await anyio.sleep(0.02)
        return
    raise AssertionError(f"{name} not in {states} after {timeout} s:\n{describe(hub)}")


async def wait_event(
    events: Any, predicate: Any, timeout: float = WAIT, seen: list[HubEvent] | None = None
) -> HubEvent:
    """Read events until one matches ``predicate``; every event read goes into ``seen``."""
    got: list[HubEvent] = []
    with anyio.move_on_after(timeout):
        async for event in events:
            got.append(event)
            if seen is not None:
                seen.append(event)
            if predicate(event):
                return event  # type: ignore[no-any-return]
        raise AssertionError("the event stream ended")
    raise AssertionError(f"no matching event after {timeout} s; got {got}")


def became(name: str, state: ServerState) -> Any:
    def match(event: HubEvent) -> bool:
        return isinstance(event, ServerStateChanged) and event.server == name and event.new is state

    return match
