"""Waiting for answers over stdio: deadlines, progress, cancellation, partial writes.

On asyncio a request written whole waits on the session's loop timer
(``mcpwire/_pending.py``); a send the pipe cannot take at once waits in a cancel
scope that the same timer cancels at the deadline, and everything on trio in a
scope with a deadline of its own. All must behave the same, so every test runs
on both backends against real child processes: plain Python peers that stay
silent, report progress, read slowly, stall or die.
"""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inproc import two_deadlines

from mcpwire import ConnectionClosed, RequestTimeout, Session, StdioClientTransport
from mcpwire._fdio import FDWriter
from mcpwire._stdio import _Sender
from mcpwire.sansio import Notification

pytestmark = pytest.mark.anyio

WAIT = 20.0

PEER = textwrap.dedent(
    """
    import json, os, sys, time

    mode, record = sys.argv[1], sys.argv[2]
    if mode == "stall":
        time.sleep(60)  # never reads: the pipe fills and the writer must wait
    for line in sys.stdin:
        msg = json.loads(line)
        with open(record, "a") as f:
            f.write(json.dumps({"method": msg.get("method"), "id": msg.get("id"),
                                "params": msg.get("params")}) + "\\n")
        if "id" not in msg or "method" not in msg or mode == "silent":
            continue
        if mode == "exit":
            sys.exit(0)
        params = msg.get("params") or {}
        if mode == "slow":
            time.sleep(0.02)
        if mode == "progress":
            token = params["_meta"]["progressToken"]
            for i in range(params["steps"]):
                time.sleep(params["every"])
                note = {"jsonrpc": "2.0", "method": "notifications/progress",
                        "params": {"progressToken": token, "progress": i + 1}}
                os.write(1, (json.dumps(note) + "\\n").encode())
        data = params.get("data", "")
        whole = data == data[:1] * len(data)
        result = {"size": len(data), "whole": whole, "tag": params.get("tag")}
        reply = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
        os.write(1, (json.dumps(reply) + "\\n").encode())
    """
)


@pytest.fixture
def peer(tmp_path: Path) -> tuple[str, Path]:
    script = tmp_path / "peer.py"
    script.write_text(PEER)
    return str(script), tmp_path / "record.jsonl"


def session_for(peer: tuple[str, Path], mode: str, **options: float) -> Session:
    script, record = peer
    transport = StdioClientTransport(sys.executable, [script, mode, str(record)])
    return Session(transport, **options)


def recorded(record: Path) -> list[dict[str, object]]:
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines()]


async def wait_recorded(record: Path, method: str) -> list[dict[str, object]]:
    with anyio.fail_after(WAIT):
        while True:
            found = [r for r in recorded(record) if r["method"] == method]
            if found:
                return found
            await anyio.sleep(0.02)


async def test_an_unanswered_request_times_out_and_is_cancelled_at_the_peer(
    peer: tuple[str, Path],
) -> None:
    async with session_for(peer, "silent") as session:
        for attempt in range(2):  # the session stays usable after a timeout
            with anyio.fail_after(WAIT), pytest.raises(RequestTimeout):
                await session.request("work", {"tag": attempt}, timeout=0.2)
        cancels = await wait_recorded(peer[1], "notifications/cancelled")
        works = [r for r in recorded(peer[1]) if r["method"] == "work"]
        assert {c["params"]["requestId"] for c in cancels} >= {works[0]["id"]}  # type: ignore[index]
        assert session._pending == {}


async def test_progress_pushes_the_deadline_out(peer: tuple[str, Path]) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with session_for(peer, "progress") as session:
        with anyio.fail_after(WAIT):
            # 6 steps 0.1 s apart: 0.6 s in all, well past the 0.35 s timeout.
            result = await session.request(
                "work", {"steps": 6, "every": 0.1}, timeout=0.35, on_progress=on_progress
            )
        assert result["size"] == 0 and seen == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


async def test_progress_never_pushes_past_the_hard_cap(peer: tuple[str, Path]) -> None:
    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        pass

    async with session_for(peer, "progress") as session:
        with anyio.fail_after(WAIT), pytest.raises(RequestTimeout):
            await session.request(
                "work",
                {"steps": 20, "every": 0.05},
                timeout=0.2,
                max_timeout=0.4,
                on_progress=on_progress,
            )


async def test_requests_with_different_timeouts_each_expire_at_their_own_deadline(
    peer: tuple[str, Path],
) -> None:
    # On asyncio one timer serves every waiting request: a shorter deadline after
    # a longer one must move the timer earlier, and the longer one must still
    # expire, on time and not before, once the shorter one has.
    async with session_for(peer, "silent") as session:

        async def expire(tag: str, timeout: float) -> None:
            with pytest.raises(RequestTimeout):
                await session.request("work", {"tag": tag}, timeout=timeout)

        expired = await two_deadlines(expire)
        assert session._pending == {}
    assert 0.2 <= expired["short"] < 0.9
    assert expired["long"] >= 1.0


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_answered_requests_cost_no_timer_each(peer: tuple[str, Path]) -> None:
    """The asyncio way keeps one loop timer for a session's waiting requests: a
    run of calls with the same timeout sets it once, not once per call."""
    import asyncio

    loop = asyncio.get_running_loop()
    timers: list[float] = []
    call_at = loop.call_at

    def counting_call_at(when: float, *args: object, **kwargs: object) -> asyncio.TimerHandle:
        timers.append(when)
        return call_at(when, *args, **kwargs)  # type: ignore[arg-type]

    async with session_for(peer, "answer") as session:
        with anyio.fail_after(WAIT):
            await session.request("work", {}, timeout=30)
            loop.call_at = counting_call_at  # type: ignore[method-assign]
            try:
                for i in range(50):
                    assert (await session.request("work", {"tag": i}, timeout=30))["tag"] == i
            finally:
                del loop.call_at
    assert timers == []


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_deadlines_passed_together_expire_in_one_pass(peer: tuple[str, Path]) -> None:
    """Requests whose deadlines all passed while the loop was busy expire when the
    timer first fires, not one per pass of the loop (each pass looks at every
    request in flight, so one a pass would cost the square of their number)."""
    import asyncio
    import time

    loop = asyncio.get_running_loop()
    timers: list[float] = []
    call_at = loop.call_at

    def counting_call_at(when: float, *args: object, **kwargs: object) -> asyncio.TimerHandle:
        if getattr(args[0], "__name__", None) == "_fire":  # the session's timer, not a sleep's
            timers.append(when)
        return call_at(when, *args, **kwargs)  # type: ignore[arg-type]

    expired = 0
    async with session_for(peer, "silent") as session:

        async def wait(i: int) -> None:
            nonlocal expired
            with pytest.raises(RequestTimeout):
                await session.request("work", {"tag": i}, timeout=0.3 + i / 10_000)
            expired += 1

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                for i in range(100):
                    tg.start_soon(wait, i)
                while len(session._pending) < 100:
                    await anyio.sleep(0)
                loop.call_at = counting_call_at  # type: ignore[method-assign]
                try:
                    time.sleep(0.5)  # the loop is busy while every deadline passes
                    while expired < 100:
                        await anyio.sleep(0.01)
                finally:
                    del loop.call_at
    assert expired == 100
    assert len(timers) <= 1


async def test_a_cancelled_caller_abandons_its_request(peer: tuple[str, Path]) -> None:
    async with session_for(peer, "silent") as session:
        with anyio.move_on_after(0.2) as scope:
            await session.request("work", {}, timeout=WAIT)
        assert scope.cancelled_caught
        assert session._pending == {}
        await wait_recorded(peer[1], "notifications/cancelled")


async def test_large_concurrent_requests_arrive_whole_and_in_frames(
    peer: tuple[str, Path],
) -> None:
    # Each message is bigger than a pipe buffer, so writes are partial and the
    # senders queue on the frame lock; the peer reads slowly to keep it so.
    results: dict[int, dict[str, object]] = {}

    async with session_for(peer, "slow") as session:

        async def call(i: int) -> None:
            data = "abcdefgh"[i] * (300_000 + i)
            results[i] = await session.request("work", {"data": data, "tag": i})

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                for i in range(8):
                    tg.start_soon(call, i)
    assert results == {i: {"size": 300_000 + i, "whole": True, "tag": i} for i in range(8)}


async def test_a_peer_that_never_reads_times_the_send_out(peer: tuple[str, Path]) -> None:
    async with session_for(peer, "stall") as session:
        with anyio.fail_after(WAIT), pytest.raises(RequestTimeout):
            await session.request("work", {"data": "x" * 2_000_000}, timeout=0.3)


async def test_a_dead_peer_fails_the_next_request_with_connection_closed(
    peer: tuple[str, Path],
) -> None:
    async with session_for(peer, "exit") as session:
        with anyio.fail_after(WAIT), pytest.raises(ConnectionClosed):
            await session.request("work", {})
        with anyio.fail_after(WAIT), pytest.raises(ConnectionClosed):
            await session.request("work", {})


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    sizes=st.lists(st.integers(min_value=0, max_value=200_000), min_size=1, max_size=8),
    backend=st.sampled_from(["asyncio", "trio"]),
    read_size=st.sampled_from([1024, 65536, 1 << 20]),
)
def test_any_mix_of_sends_gives_whole_frames_in_order(
    sizes: list[int], backend: str, read_size: int
) -> None:
    """``_Sender``: concurrent sends of any size on a pipe read in any chunk size."""

    async def main() -> list[bytes]:
        read_fd, write_fd = os.pipe()
        os.set_blocking(write_fd, False)
        sender = _Sender(FDWriter(write_fd, owned=True))
        got = bytearray()

        async def read_all() -> None:
            while True:
                await anyio.wait_readable(read_fd)
                chunk = os.read(read_fd, read_size)
                if not chunk:
                    return
                got.extend(chunk)
                await anyio.sleep(0)

        async with anyio.create_task_group() as tg:
            tg.start_soon(read_all)
            async with anyio.create_task_group() as senders:
                for i, size in enumerate(sizes):
                    message = Notification("n", {"i": i, "pad": "p" * size})
                    if i % 2:
                        senders.start_soon(sender.send, message)
                    else:
                        rest = sender.start_send(message)
                        if rest is not None:
                            senders.start_soon(_await, rest)
            sender.writer.close()
        os.close(read_fd)
        return bytes(got).split(b"\n")

    lines = anyio.run(main, backend=backend)
    assert lines[-1] == b""
    frames = [json.loads(line) for line in lines[:-1]]
    assert sorted(f["params"]["i"] for f in frames) == list(range(len(sizes)))
    for frame in frames:
        assert frame["params"]["pad"] == "p" * sizes[frame["params"]["i"]]


async def _await(rest: object) -> None:
    await rest  # type: ignore[misc]


async def test_request_objects_are_what_the_peer_records(peer: tuple[str, Path]) -> None:
    async with session_for(peer, "echo") as session:
        with anyio.fail_after(WAIT):
            result = await session.request("work", {"data": "zz", "tag": "t"})
    assert result == {"size": 2, "whole": True, "tag": "t"}
    works = [r for r in recorded(peer[1]) if r["method"] == "work"]
    assert works == [{"method": "work", "id": works[0]["id"], "params": {"data": "zz", "tag": "t"}}]
