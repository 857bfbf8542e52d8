"""A server that goes down and comes back under the hub: what subscribers and
calls in flight are told.

Its tools leave ``hub.tools()`` while it is down (restarted, restarting after a
crash, restarted by a config change) and come back when it is ready: each in one
``ToolsChanged`` (and ``ResourcesChanged``), whatever the new process lists. A
call in flight when the hub restarts, stops or disables the server on request
fails with ``ConnectionClosed`` saying so.

Every server is a real process: the hub test server of ``test_hub_support``,
and ``HOLD``, a server whose ``hold`` tool reports progress (so a test knows
the call is in flight) and then waits.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest
from test_hub_support import (
    FAST,
    PY,
    WAIT,
    became,
    entry,
    ready,
    wait_event,
    write_config,
    write_scripts,
)

from mcpwire import (
    ConnectionClosed,
    Hub,
    HubEvent,
    ResourcesChanged,
    ServerState,
    ServerStateChanged,
    ToolsChanged,
)

pytestmark = pytest.mark.anyio

HOLD = textwrap.dedent(
    """
    import anyio
    from mcpwire import Context, Server

    server = Server("hold", "1.0")

    @server.tool()
    async def hold(ctx: Context, seconds: float) -> str:
        \"\"\"Report progress, then wait.\"\"\"
        await ctx.report_progress(0, 1)
        await anyio.sleep(seconds)
        return "held"

    server.run()
    """
)


def counts(seen: list[HubEvent], kind: type[HubEvent], server: str) -> list[tuple[int, int]]:
    return [
        (e.before, e.after)  # type: ignore[attr-defined]
        for e in seen
        if isinstance(e, kind) and getattr(e, "server", None) == server
    ]


def grew(server: str) -> Any:
    def match(event: HubEvent) -> bool:
        return isinstance(event, ToolsChanged) and event.server == server and event.before > 0

    return match


def check_the_events_track_the_tools(hub: Hub, seen: list[HubEvent]) -> None:
    """Each server's ``ToolsChanged`` chain from 0 (subscribed before any server was
    ready) to what ``hub.tools()`` holds now, each event taking up where the last
    left off, none repeating a count."""
    for name in hub.server_names:
        chain = counts(seen, ToolsChanged, name)
        now = len([t for t in hub.tools(include_disabled=True) if t.server == name])
        assert [after for _, after in chain[-1:]] == ([now] if chain else []), (name, chain)
        assert [before for before, _ in chain] == [0, *(after for _, after in chain[:-1])]
        assert all(before != after for before, after in chain), chain


@pytest.mark.parametrize("how", ["restart", "reload", "crash"])
async def test_tools_leave_and_come_back_in_one_event_each(tmp_path: Path, how: str) -> None:
    """A restarted server's tools leave in one ``ToolsChanged`` (to 0) and come back
    in one, even when the new process lists fewer than were exposed (a tool
    the old one grew at run time); ``ResourcesChanged`` likewise. Another
    server's tools are not touched."""
    script, _ = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    write_config(config, {"s": entry(script, "--tag", "one"), "other": entry(script)})
    async with Hub([config], watch=False, restart_policy=FAST) as hub:
        events = hub.events()
        seen: list[HubEvent] = []
        await ready(hub)
        await hub.call_tool("s__grow", {"name": "grown"})
        await wait_event(events, grew("s"), seen=seen)
        listed = len([t for t in hub.tools() if t.server == "s"])
        mark = len(seen)
        if how == "restart":
            assert await hub.restart("s") is ServerState.READY
        elif how == "reload":
            write_config(config, {"s": entry(script, "--tag", "two"), "other": entry(script)})
            assert (await hub.reload()).restarted == ("s",)
        else:
            with pytest.raises(ConnectionClosed):
                await hub.call_tool("s__crash")
        await wait_event(events, became("s", ServerState.READY), seen=seen)
        seen.extend(events.pending())  # published with READY, in the same step
        assert counts(seen[mark:], ToolsChanged, "s") == [(listed, 0), (0, listed - 1)]
        assert counts(seen[mark:], ResourcesChanged, "s") == [(1, 0), (0, 1)]
        assert counts(seen[mark:], ToolsChanged, "other") == []
        # The tools left with the state that hides them, and came back with READY.
        down = [
            (type(e).__name__, getattr(e, "new", None), getattr(e, "after", None))
            for e in seen[mark:]
            if isinstance(e, (ServerStateChanged, ToolsChanged))
        ]
        assert down == [
            ("ServerStateChanged", ServerState.RESTARTING, None),
            ("ToolsChanged", None, 0),
            ("ServerStateChanged", ServerState.READY, None),
            ("ToolsChanged", None, listed - 1),
        ]
        check_the_events_track_the_tools(hub, seen)
        assert (await hub.call_tool("s__tag")).text == ("two" if how == "reload" else "one")


async def test_the_tools_of_a_removed_or_disabled_server_leave_once(tmp_path: Path) -> None:
    """Disabling, enabling and removing a server by reload: one ``ToolsChanged`` per
    change, and the events add up to what ``hub.tools()`` shows."""
    script, _ = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    write_config(config, {"s": entry(script), "t": entry(script)})
    async with Hub([config], watch=False) as hub:
        events = hub.events()
        await ready(hub)
        listed = len([t for t in hub.tools() if t.server == "s"])
        write_config(config, {"s": entry(script, disabled=True), "t": entry(script)})
        await hub.reload()
        await ready(hub)
        write_config(config, {"s": entry(script), "t": entry(script)})
        await hub.reload()
        await ready(hub)
        write_config(config, {"t": entry(script)})
        await hub.reload()
        seen = events.pending()
        assert counts(seen, ToolsChanged, "s") == [
            (0, listed),
            (listed, 0),
            (0, listed),
            (listed, 0),
        ]
        check_the_events_track_the_tools(hub, seen)


def hold_config(script: str, *args: str, **options: Any) -> dict[str, Any]:
    return {"command": PY, "args": [script, *args], **options}


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("restart", "restarted"),
        ("reload", "restarted (its config changed)"),
        ("disable", "disabled (disabled in config)"),
        ("remove", "stopped (removed from the config)"),
        ("close", "stopped (the hub closed)"),
    ],
)
async def test_a_call_cut_off_by_the_hub_says_why(tmp_path: Path, how: str, said: str) -> None:
    """A call in flight when the hub ends its server's connection on request fails
    with ``ConnectionClosed`` naming the server and what the hub did, not a bare
    "the session was closed", which reads like a crash: a call through the hub,
    and one made directly on the server's connection (``Hub.clients()``)."""
    script = tmp_path / "hold_server.py"
    script.write_text(HOLD)
    config = tmp_path / "mcp.json"
    write_config(config, {"s": hold_config(str(script)), "t": hold_config(str(script))})
    failed: list[ConnectionClosed] = []
    async with Hub([config], watch=False) as hub:
        await ready(hub)
        direct = hub.clients()["s"]
        in_flight = [anyio.Event(), anyio.Event()]

        async def call(i: int) -> None:
            async def progressed(progress: float, total: float | None, text: str | None) -> None:
                in_flight[i].set()

            if i == 0:
                calling = hub.call_tool("s__hold", {"seconds": 60}, on_progress=progressed)
            else:
                calling = direct.call_tool("hold", {"seconds": 60}, on_progress=progressed)
            with pytest.raises(ConnectionClosed) as info:
                await calling
            failed.append(info.value)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call, 0)
            tg.start_soon(call, 1)
            with anyio.fail_after(WAIT):
                for event in in_flight:
                    await event.wait()
                if how == "restart":
                    await hub.restart("s")
                elif how == "close":
                    await hub.aclose()
                else:
                    servers = {"t": hold_config(str(script))}
                    if how == "reload":  # a changed connection restarts it
                        servers["s"] = hold_config(str(script), "--changed")
                    elif how == "disable":
                        servers["s"] = hold_config(str(script), disabled=True)
                    write_config(config, servers)
                    await hub.reload()
    assert len(failed) == 2
    for error in failed:
        assert str(error) == f"server 's' was {said} while the call was in flight"
