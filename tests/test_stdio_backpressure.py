"""A peer that writes without reading cannot make a stdio server answer into memory
without end (design.md: every buffer is bounded).

A client that sends request after request but never reads its input leaves every
answer unsent. The server must stop taking new requests once
``MAX_UNSENT_FRAMES`` answers (or ``MAX_UNSENT_BYTES``) wait: its reading
pauses, the pipe fills and the peer's writes block. When the peer reads again,
every request is answered in full, none lost.

The server is a child process serving on either anyio backend, with a
synchronous tool (on asyncio served where it is parsed, in the loop's readiness
callback) or an async one (a handler task each). The peer is plain blocking I/O.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from pipe_peer import INIT, serving

from mcpwire import Context, Server
from mcpwire._inflow import MAX_HANDLERS, MAX_PARKED
from mcpwire._stdio import _READY_LIMIT, MAX_UNSENT_FRAMES

#: Enough requests that their answers (about 2 kB each) are several times the bound.
REQUESTS = 4 * MAX_UNSENT_FRAMES
MESSAGE = "x" * 1000
#: Requests that may sit in the pipes and in one read's worth of parsed lines
#: beyond the two bounds (a 64 KiB pipe holds about 60 of these requests).
SLACK = 300
#: A write the server has not made room for in this many seconds: it stopped reading.
STALLED = 1.0

APP = textwrap.dedent(
    """
    import sys

    import anyio

    from mcpwire import Server, StdioServerTransport

    server = Server("backpressure")

    if sys.argv[2] == "sync":

        @server.tool()
        def echo(message: str) -> str:
            return message

    else:

        @server.tool()
        async def echo(message: str) -> str:
            return message


    async def main() -> None:
        transport = StdioServerTransport()
        try:
            await server.serve(transport)
        finally:
            await transport.aclose()


    anyio.run(main, backend=sys.argv[1])
    """
)


def line(message: dict[str, Any]) -> bytes:
    return orjson.dumps(message) + b"\n"


def call(rid: int) -> bytes:
    params = {"name": "echo", "arguments": {"message": MESSAGE}}
    return line({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params})


def write_until_stalled(fd: int, frames: list[bytes]) -> int:
    """Write whole frames on a non-blocking ``fd`` until one cannot be finished
    within ``STALLED`` seconds; how many were written whole."""
    for count, frame in enumerate(frames):
        view = memoryview(frame)
        while view:
            try:
                view = view[os.write(fd, view) :]
            except BlockingIOError:
                if not select.select([], [fd], [], STALLED)[1]:
                    return count
    return len(frames)


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_peer_that_does_not_read_is_held_back_and_nothing_is_lost(
    tmp_path: Path, backend: str, kind: str
) -> None:
    app = tmp_path / "app.py"
    app.write_text(APP)
    proc = subprocess.Popen(
        [sys.executable, str(app), backend, kind], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        info = {"name": "test", "version": "1"}
        init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": info}
        proc.stdin.write(line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}))
        proc.stdin.write(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        proc.stdin.flush()
        assert "result" in orjson.loads(proc.stdout.readline())

        frames = [call(rid) for rid in range(1, REQUESTS + 1)]
        fd = proc.stdin.fileno()
        os.set_blocking(fd, False)
        written = write_until_stalled(fd, frames)
        assert written <= MAX_UNSENT_FRAMES + _READY_LIMIT + SLACK

        # The peer reads again (and writes the rest meanwhile): every request is answered.
        os.set_blocking(fd, True)
        stdin = proc.stdin

        def write_rest() -> None:
            stdin.writelines(frames[written:])
            stdin.flush()

        rest = threading.Thread(target=write_rest)
        rest.start()
        answers = [orjson.loads(proc.stdout.readline()) for _ in range(REQUESTS)]
        rest.join()
    finally:
        proc.stdin.close()
        proc.wait(10)
        proc.stdout.close()
    ids = [answer["id"] for answer in answers]
    if kind == "sync":
        assert ids == list(range(1, REQUESTS + 1))
    else:
        assert sorted(ids) == list(range(1, REQUESTS + 1))
    assert all(answer["result"]["content"][0]["text"] == MESSAGE for answer in answers)
    assert proc.returncode == 0


# -- handlers: at most MAX_HANDLERS at once, then parked, then reading stops --------------


def slow_server(release: anyio.Event, started: list[int]) -> Server:
    server = Server("slow")

    @server.tool()
    async def slow(n: int) -> int:
        started.append(n)
        await release.wait()
        return n

    @server.tool()
    async def ask(n: int, ctx: Context) -> int:
        started.append(n)
        await ctx.list_roots()
        return n

    return server


def slow_call(rid: int, tool: str = "slow") -> dict[str, Any]:
    params = {"name": tool, "arguments": {"n": rid}}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


async def settle(count: Callable[[], int]) -> None:
    """Until ``count()`` has not changed for half a second."""
    with anyio.fail_after(60):
        seen, still = -1, 0
        while still < 10:
            await anyio.sleep(0.05)
            still = still + 1 if count() == seen else 0
            seen = count()


@pytest.mark.anyio
async def test_a_flood_of_slow_requests_starts_at_most_max_handlers() -> None:
    """Requests past ``MAX_HANDLERS`` wait their turn, and past ``MAX_PARKED`` the
    server stops reading; none is lost, and each is answered once the slow ones end."""
    total = MAX_HANDLERS + MAX_PARKED + 2000
    release = anyio.Event()
    started: list[int] = []
    sent: list[int] = []
    async with serving(slow_server(release, started)) as peer, anyio.create_task_group() as tg:

        async def write_all() -> None:
            for rid in range(1, total + 1):
                await peer.send(slow_call(rid))
                sent.append(rid)

        tg.start_soon(write_all)
        await settle(lambda: len(sent) + len(started))
        assert len(started) == MAX_HANDLERS
        assert len(sent) < total  # the writer is held back: the server stopped reading
        release.set()
        answers = [await peer.read() for _ in range(total)]
    assert sorted(a["id"] for a in answers) == list(range(1, total + 1))
    assert all(a["result"]["structuredContent"] == {"result": a["id"]} for a in answers)
    assert sorted(started) == list(range(1, total + 1))


@pytest.mark.anyio
async def test_handlers_at_the_bound_still_get_the_answers_they_wait_for() -> None:
    """Every handler waits on the client's answer to a request of the server's; the
    client answers only after sending more requests than the bound. Responses are
    read past parked requests, so nothing deadlocks."""
    total = MAX_HANDLERS + MAX_PARKED // 2
    started: list[int] = []
    init = {**INIT, "params": {**INIT["params"], "capabilities": {"roots": {}}}}
    async with serving(slow_server(anyio.Event(), started), init) as peer:
        for rid in range(1, total + 1):
            await peer.send(slow_call(rid, "ask"))
        results: dict[int, Any] = {}
        asked = 0
        with anyio.fail_after(60):
            while len(results) < total:
                message = await peer.read()
                if message.get("method") == "roots/list":
                    asked += 1
                    await peer.send(
                        {"jsonrpc": "2.0", "id": message["id"], "result": {"roots": []}}
                    )
                else:
                    results[message["id"]] = message["result"]["structuredContent"]["result"]
    assert asked == total
    assert results == {rid: rid for rid in range(1, total + 1)}
