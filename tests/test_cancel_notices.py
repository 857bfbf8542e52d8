"""A request's deadline holds when its cancellation notice cannot be written yet.

When a call times out, the peer is sent ``notifications/cancelled``. A peer that
does not read its input leaves the pipe full, and the notice waits behind the
frame being written (frames are written whole); the caller must get its
``RequestTimeout`` at the deadline all the same, and the notice must still go
out, whole, once the peer reads. Over HTTP the notice is a POST, which a slow
server may take its time to accept: the caller does not wait for that either.

The stdio peer is a child process that answers the handshake, then stops
reading its stdin (for good, or for a while); a 2 MB request fills the pipe.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from slow_reader import SLOW_READER

from mcpwire import Client, RequestTimeout

pytestmark = pytest.mark.anyio

BIG = 2_000_000  # many times a pipe's buffer
TIMEOUT = 0.3
#: Scheduling jitter allowed past a deadline on a loaded machine.
SLACK = 0.5


@pytest.mark.parametrize("pause", [60.0, 2.5], ids=["never-reads", "reads-later"])
async def test_a_timeout_is_raised_at_its_deadline_while_the_peer_does_not_read(
    tmp_path: Path, pause: float
) -> None:
    script = tmp_path / "deaf.py"
    script.write_text(SLOW_READER)
    log = tmp_path / "read.log"
    client = Client.stdio(
        sys.executable, [str(script), str(log), str(pause)], mode="legacy", shutdown_timeout=0.5
    )
    big: dict[str, Any] = {}
    async with client:

        async def send_big() -> None:
            big["result"] = await client.request("big", {"pad": "x" * BIG}, timeout=30)

        async with anyio.create_task_group() as tg:
            tg.start_soon(send_big)
            await anyio.sleep(0.1)  # the big frame is part-written: the pipe is full
            start = time.monotonic()
            with pytest.raises(RequestTimeout):
                await client.request("ping", timeout=TIMEOUT)
            elapsed = time.monotonic() - start
            if pause > 30:
                tg.cancel_scope.cancel()
        assert TIMEOUT - 0.01 <= elapsed < TIMEOUT + SLACK
        if pause > 30:
            return
        assert big["result"]["size"] > BIG
        # The notice went out once the peer read on, as a line of its own.
        with anyio.fail_after(10):
            while "notifications/cancelled" not in log.read_text():
                await anyio.sleep(0.05)
    lines = [json.loads(json.loads(raw)) for raw in log.read_text().splitlines()]
    methods = [line.get("method") for line in lines]
    assert methods[:3] == ["initialize", "notifications/initialized", "big"]
    assert "notifications/cancelled" in methods
    cancel = lines[methods.index("notifications/cancelled")]
    assert cancel["params"]["requestId"] == lines[2]["id"] + 1  # the ping's
