"""A stdio write cancelled part-way through a frame never splices frames together.

A caller that gives up on a large request (its timeout, or a cancel scope of
its own) while the pipe is full has already put part of the line into the
pipe, where nothing can take it back. Whatever is written next must not be
glued onto that half line: the peer would read one line that parses as
nothing, lose the next message with it (another caller's request, or the
``notifications/cancelled`` for the abandoned one), and that caller would wait
out its whole timeout. The rest of the abandoned frame is written first, then
the next message, so the peer reads whole lines only.

The peer is a child process that stops reading its input for a while after
the handshake, so the client's 2 MB request fills the pipe and blocks.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from slow_reader import SLOW_READER

from mcpwire import Client

pytestmark = pytest.mark.anyio

WAIT = 20.0
BIG = 2_000_000  # many times a pipe's buffer


@pytest.mark.parametrize("how", ["cancel scope", "request timeout"])
async def test_an_abandoned_half_written_request_is_finished_before_the_next_message(
    tmp_path: Path, how: str
) -> None:
    script = tmp_path / "slow_reader.py"
    script.write_text(SLOW_READER)
    log = tmp_path / "lines.log"
    small: list[str] = []

    async def abandon_big(client: Client) -> None:
        arguments = {"blob": "A" * BIG}
        if how == "cancel scope":
            with anyio.move_on_after(0.4):
                await client.call_tool("big", arguments)
        else:
            with pytest.raises(TimeoutError):
                await client.call_tool("big", arguments, timeout=0.4)

    async def call_small(client: Client) -> None:
        await anyio.sleep(0.1)  # while the big one blocks on the full pipe
        small.append((await client.call_tool("small", {"n": 1}, timeout=8.0)).text)

    with anyio.fail_after(WAIT):
        async with Client.stdio(sys.executable, [str(script), str(log)], mode="legacy") as client:
            async with anyio.create_task_group() as tg:
                tg.start_soon(abandon_big, client)
                tg.start_soon(call_small, client)
            assert small == [str(len(json.dumps({"n": 1})))]
            await client.ping()  # the line stays usable

    lines = [json.loads(entry) for entry in log.read_text().splitlines()]
    messages = [json.loads(raw) for raw in lines]  # every line the peer read is whole JSON
    methods = [m.get("method") for m in messages]
    big = messages[methods.index("tools/call")]
    assert big["params"]["name"] == "big"
    assert len(big["params"]["arguments"]["blob"]) == BIG
    assert "notifications/cancelled" in methods
    cancelled = messages[methods.index("notifications/cancelled")]
    assert cancelled["params"]["requestId"] == big["id"]
    assert [m["params"]["name"] for m in messages if m.get("method") == "tools/call"] == [
        "big",
        "small",
    ]
