"""The polling watcher (pain point 21) and the event fan-out, without servers.

The watcher must see in-place writes, atomic-rename saves, deletion and
re-creation, and changes inside a watched directory; must not report a touch
that left the bytes alone; and must debounce a burst of writes into one report.
Event subscribers each have a bounded buffer: a slow one loses its oldest
events, counted, and never slows the publisher.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import anyio
import pytest

from mcpwire._hub_events import EventBus, ServerState, ServerStateChanged, ToolsChanged
from mcpwire._hub_watch import PathWatcher

pytestmark = pytest.mark.anyio


def _bump_mtime(path: Path) -> None:
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def test_poll_sees_writes_renames_deletes_and_ignores_touches(tmp_path: Path) -> None:
    file = tmp_path / "mcp.json"
    file.write_text("one")
    watcher = PathWatcher([str(file)])
    assert watcher.poll() == set()
    file.write_text("two")
    assert watcher.poll() == {str(file)}
    _bump_mtime(file)  # a touch: the bytes did not change
    assert watcher.poll() == set()
    (tmp_path / "unrelated.txt").write_text("x")  # the directory changed, not the file
    assert watcher.poll() == set()
    tmp = tmp_path / "mcp.json.tmp"
    tmp.write_text("three")
    os.replace(tmp, file)  # an editor's atomic save
    assert watcher.poll() == {str(file)}
    file.unlink()
    assert watcher.poll() == {str(file)}
    file.write_text("three")
    assert watcher.poll() == {str(file)}  # recreated


def test_poll_watches_directories_and_keeps_baselines(tmp_path: Path) -> None:
    build = tmp_path / "build"
    build.mkdir()
    watcher = PathWatcher([str(build)])
    (build / "index.js").write_text("v1")
    assert watcher.poll() == {str(build)}
    other = tmp_path / "other.txt"
    other.write_text("a")
    watcher.set_paths([str(build), str(other)])
    assert watcher.poll() == set()
    other.write_text("b")
    assert watcher.poll() == {str(other)}
    watcher.set_paths([str(other)])
    assert watcher.paths == [str(other)]


async def test_run_debounces_a_burst_into_one_report(tmp_path: Path) -> None:
    file = tmp_path / "mcp.json"
    file.write_text("0")
    watcher = PathWatcher([str(file)], interval=0.02, debounce=0.2)
    reports: list[tuple[float, set[str]]] = []

    async def record(paths: set[str]) -> None:
        reports.append((time.monotonic(), paths))

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(watcher.run, record)
            for i in range(5):  # a burst: five writes 50 ms apart
                file.write_text(str(i + 1))
                last = time.monotonic()
                await anyio.sleep(0.05)
            while not reports:
                await anyio.sleep(0.02)
            await anyio.sleep(0.3)
            tg.cancel_scope.cancel()
    assert len(reports) == 1
    at, paths = reports[0]
    assert paths == {str(file)}
    assert at - last >= 0.2


async def test_slow_subscribers_lose_old_events_counted() -> None:
    bus = EventBus()
    slow = bus.subscribe(maxlen=3)
    fast = bus.subscribe(maxlen=100)
    for i in range(10):
        bus.publish(ToolsChanged(server="s", before=i, after=i + 1))
    assert slow.dropped == 7 and fast.dropped == 0
    got = []
    for _ in range(3):
        event = await slow.__anext__()
        assert isinstance(event, ToolsChanged)
        got.append(event.after)
    assert got == [8, 9, 10]  # the newest survive
    assert len(fast.pending()) == 10


async def test_streams_wake_on_publish_and_end_on_close() -> None:
    bus = EventBus()
    received: list[object] = []

    async def consume() -> None:
        async with bus.subscribe() as stream:
            async for event in stream:
                received.append(event)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await anyio.sleep(0.01)
            bus.publish(ServerStateChanged(server="a", old=None, new=ServerState.STARTING))
            await anyio.sleep(0.01)
            bus.close()
    assert len(received) == 1
    late = bus.subscribe()
    with pytest.raises(StopAsyncIteration):
        await late.__anext__()


def test_events_have_a_json_form() -> None:
    event = ServerStateChanged(
        server="a", old=ServerState.READY, new=ServerState.RESTARTING, error="boom"
    )
    data = event.to_json()
    assert data["event"] == "ServerStateChanged"
    assert (data["old"], data["new"], data["error"]) == ("ready", "restarting", "boom")
    assert isinstance(data["timestamp"], float)
