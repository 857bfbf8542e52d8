"""A stdio server that writes a huge line and never ends it.

The client drops a line over its size limit as it arrives and waits for the
line's end to read on. When the end never comes, nothing may just hang in
silence: a WARNING says at once that an oversized line is being discarded (its
size so far, the limit); when the line's first bytes show which call it
answers, that call fails at once with the size error; a call that times out
meanwhile says that a line was being discarded. The child writes 50 MB with no
newline and then keeps its stdout open.
"""

from __future__ import annotations

import logging
import sys
import textwrap
import time
from pathlib import Path

import anyio
import pytest

from mcpwire import Client, JSONRPCError, RequestTimeout
from mcpwire.sansio import DEFAULT_MAX_MESSAGE_SIZE, Limits

pytestmark = pytest.mark.anyio

ENDLESS_CHILD = textwrap.dedent(
    """
    import json
    import os
    import sys
    import time

    where = sys.argv[1]


    def send(obj):
        os.write(1, (json.dumps(obj) + "\\n").encode())


    for raw in sys.stdin:
        msg = json.loads(raw)
        method = msg.get("method")
        if method == "initialize":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "serverInfo": {"name": "endless", "version": "1"}}})
        elif method == "huge":
            rid = json.dumps(msg["id"]).encode()
            if where == "head":
                start = b'{"jsonrpc":"2.0","id":' + rid + b',"result":{"text":"'
            else:  # the id would come last, after the result (never, here)
                start = b'{"jsonrpc":"2.0","result":{"text":"'
            os.write(1, start)
            chunk = b"x" * (1 << 20)
            for _ in range(50):
                os.write(1, chunk)
            time.sleep(60)  # stdout stays open, the line never ends
    """
)


def warnings_about_discarding(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and r.name.startswith("mcpwire") and "discard" in r.msg
    ]


@pytest.mark.parametrize("where", ["head", "tail"])
async def test_a_line_that_never_ends_is_reported_at_once(
    tmp_path: Path, where: str, caplog: pytest.LogCaptureFixture
) -> None:
    script = tmp_path / "endless.py"
    script.write_text(ENDLESS_CHILD)
    client = Client.stdio(sys.executable, [str(script), where], mode="legacy", shutdown_timeout=0.3)
    with caplog.at_level(logging.WARNING, logger="mcpwire"):
        async with client:
            start = time.monotonic()
            if where == "head":
                # The first bytes name the call: it fails now, not at the line's end.
                with pytest.raises(JSONRPCError) as failed:
                    await client.request("huge", timeout=30)
                assert failed.value.code == -32600
                assert f"exceeds the message size limit of {DEFAULT_MAX_MESSAGE_SIZE}" in str(
                    failed.value
                )
                assert time.monotonic() - start < 10
            else:
                # Nothing shows which call it answers: the call times out, saying why.
                with pytest.raises(RequestTimeout) as timed_out:
                    await client.request("huge", timeout=3)
                message = str(timed_out.value)
                assert f"over the message size limit of {DEFAULT_MAX_MESSAGE_SIZE} bytes" in message
                assert "being discarded" in message and "its end not yet read" in message
                assert timed_out.value.detail is not None
            # Warned once, as soon as the line passed the limit.
            with anyio.fail_after(5):
                while not warnings_about_discarding(caplog):
                    await anyio.sleep(0.01)
            await anyio.sleep(0.2)  # the rest of the 50 MB arrives meanwhile
            warned = warnings_about_discarding(caplog)
            assert len(warned) == 1, warned
            assert str(DEFAULT_MAX_MESSAGE_SIZE) in warned[0] and "bytes so far" in warned[0]


#: A server whose tool runs as a task (2025-11-25's, or the 2026-07-28 extension's)
#: and whose answer to the first ``tasks/get`` is a line that never ends.
TASK_CHILD = textwrap.dedent(
    """
    import json
    import os
    import sys

    era = sys.argv[1]
    CREATED = "2026-01-01T00:00:00Z"
    TASK = {"taskId": "t1", "status": "working", "createdAt": CREATED,
            "lastUpdatedAt": CREATED}
    endless = False


    def send(obj):
        os.write(1, (json.dumps(obj) + "\\n").encode())


    for raw in sys.stdin:
        if endless:
            continue  # nothing more may be written: it would go into the line
        msg = json.loads(raw)
        method, rid = msg.get("method"), msg.get("id")
        if rid is None:
            continue
        if method == "initialize":
            tasks = {"requests": {"tools": {"call": {}}}}
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}, "tasks": tasks},
                "serverInfo": {"name": "tasks", "version": "1"}}})
        elif method == "server/discover" and era == "modern":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
                "serverInfo": {"name": "tasks", "version": "1"}}})
        elif method == "tools/call" and era == "legacy":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "task": {**TASK, "ttl": 60000, "pollInterval": 10}}})
        elif method == "tools/call":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "resultType": "task", **TASK, "ttlMs": 60000, "pollIntervalMs": 10}})
        elif method == "tasks/get":
            # The answer's id would come last (never, here): 20 kB of a line and no end.
            os.write(1, b'{"jsonrpc":"2.0","result":{"statusMessage":"' + b"x" * 20000)
            endless = True
        else:
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": -32601, "message": "Method not found"}})
    """
)


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_task_wait_that_times_out_says_a_line_was_being_discarded(
    tmp_path: Path, era: str
) -> None:
    """The wait for a task ends at the call's timeout like a plain request's, and
    says just as much: the poll's answer may be in the line still being dropped."""
    script = tmp_path / "tasks.py"
    script.write_text(TASK_CHILD)
    client = Client.stdio(
        sys.executable,
        [str(script), era],
        mode="legacy" if era == "legacy" else "2026-07-28",
        limits=Limits(max_size=4096),
        request_timeout=30,
        shutdown_timeout=0.3,
    )
    async with client:
        with anyio.fail_after(20), pytest.raises(RequestTimeout) as timed_out:
            await client.call_tool("slow", {}, timeout=1.5, task=True)
    assert timed_out.value.method == "tools/call" and timed_out.value.seconds == 1.5
    assert timed_out.value.detail is not None
    assert "over the message size limit of 4096 bytes" in timed_out.value.detail
    assert "being discarded" in str(timed_out.value)
