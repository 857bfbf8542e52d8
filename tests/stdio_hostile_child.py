"""A stdio MCP server that misbehaves at the byte level, replaying a JSON script.

Run as ``python stdio_hostile_child.py SCRIPT RECORD`` (plain Python, no mcpwire):
SCRIPT is a JSON file, RECORD a file that receives every line read from stdin,
one JSON string per line (the line as read, decoded as latin-1 so any bytes
survive), so a test can check what the client wrote.

Every request is answered correctly (``initialize`` / ``server/discover`` in the
script's protocol version, ``tools/call``, ``tools/list``, ``ping``), except the
first request of the script's ``target`` method (after ``skip`` of them), which
gets the script's ``steps`` instead, in order:

* ``{"out": HEX, "splits": [...], "pause": S}``: bytes for stdout, where
  ``@ID@`` stands for the request's id as JSON and ``@SID@`` for it as a JSON
  string; written in pieces cut at ``splits`` (offsets, taken modulo the length),
  each piece flushed, ``pause`` seconds apart;
* ``{"err": HEX, "repeat": N}``: bytes for stderr (``@ID@`` as above), ``N`` times;
* ``{"end": KIND, ...}``: what the child does after the steps: ``stay`` (serve
  on), ``exit`` (``code``), ``kill`` (SIGKILL itself), ``close-stdout`` (close
  it, write ``err`` to stderr, then read stdin until its end), ``close-stdin``
  (close it before the other steps; after them write ``err`` to stderr, then
  sleep with stdout open), ``stubborn`` (serve on, but ignore SIGTERM and
  stdin's end: sleep until killed).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from typing import Any

MODERN = "2026-07-28"


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def result_for(method: str, version: str) -> dict[str, object]:
    if method == "initialize":
        value: dict[str, object] = {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "hostile", "version": "0"},
        }
    elif method == "server/discover":
        value = {
            "supportedVersions": [MODERN],
            "capabilities": {"tools": {}},
            "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "hostile", "version": "0"}},
        }
    elif method == "tools/call":
        value = {"content": [{"type": "text", "text": "fine"}]}
    elif method == "tools/list":
        value = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
    else:
        value = {}
    if version == MODERN:
        value["resultType"] = "complete"
    return value


def run_steps(steps: list[dict[str, Any]], rid: object) -> str:
    ident = json.dumps(rid).encode()
    text_ident = json.dumps(str(rid)).encode()
    end = "stay"
    if steps[-1].get("end") == "close-stdin":
        # Before any answer: once the client has one, its next write must find
        # stdin closed, never a pipe the child closes only later (unread data).
        os.close(0)
    for step in steps:
        if "end" in step:
            end = str(step["end"])
            finish(end, step)
        elif "out" in step:
            data = bytes.fromhex(str(step["out"]))
            data = data.replace(b"@ID@", ident).replace(b"@SID@", text_ident)
            cuts = sorted({int(c) % (len(data) + 1) for c in step.get("splits", [])})
            start = 0
            for cut in [*cuts, len(data)]:
                if cut > start:
                    write_all(1, data[start:cut])
                    start = cut
                    pause = float(step.get("pause", 0.0))
                    if pause:
                        time.sleep(pause)
        elif "err" in step:
            chunk = bytes.fromhex(str(step["err"])).replace(b"@ID@", ident)
            for _ in range(int(step.get("repeat", 1))):
                write_all(2, chunk)
    return end


def finish(end: str, step: dict[str, Any]) -> None:
    if end == "exit":
        os._exit(int(step["code"]))
    if end == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if end == "close-stdout":
        os.close(1)
        write_all(2, bytes.fromhex(str(step.get("err", ""))))
    if end == "close-stdin":
        write_all(2, bytes.fromhex(str(step.get("err", ""))))
        while True:
            time.sleep(1)
    if end == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def main() -> None:
    with open(sys.argv[1]) as f:
        script = json.load(f)
    record = open(sys.argv[2], "a")  # noqa: SIM115 - the child's whole life
    version = script["version"]
    target = script["target"]
    skip = int(script.get("skip", 0))
    done = False
    end = "stay"
    for raw in sys.stdin.buffer:
        record.write(json.dumps(raw.decode("latin-1")) + "\n")
        record.flush()
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(msg, dict) or "method" not in msg or "id" not in msg:
            continue
        if end == "close-stdout":
            continue
        rid, method = msg["id"], msg["method"]
        if method == target and not done:
            if skip:
                skip -= 1
            else:
                done = True
                end = run_steps(script["steps"], rid)
                continue
        reply = {"jsonrpc": "2.0", "id": rid, "result": result_for(method, version)}
        write_all(1, json.dumps(reply).encode() + b"\n")
    if end == "stubborn":
        while True:
            time.sleep(1)


if __name__ == "__main__":
    main()
