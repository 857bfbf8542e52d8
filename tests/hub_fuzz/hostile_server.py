"""A hostile MCP stdio server for ``test_hub_fuzz``, steered at run time by a control file.

Plain Python (no mcpwire import, so it starts in a few milliseconds), speaking
the 2025 (``initialize``) era line by line. Usage::

    python hostile_server.py NAME CONTROL_FILE PIDS_FILE [anything...]

At start it appends ``PID NAME TIME`` to ``PIDS_FILE`` (the test checks every
process it ever started is gone). Its behaviour is ``CONTROL_FILE[NAME]``, a
JSON object the test rewrites atomically (a temporary file renamed over it):

* ``start``: ``"ok"``; ``"crash"`` (writes to stderr, exits 7 before reading
  anything); ``"hang"`` (reads every request, answers none: past the startup
  timeout); ``"die"`` (answers ``initialize``, exits 9 when told
  ``notifications/initialized``); ``"junk"`` (writes junk lines to stdout
  before every answer: banners, a reply to an id nobody used, an unknown
  notification); ``"sluggish"`` (sleeps 0.3 s, then serves);
* ``flood``: bytes of noise written to stderr at start and before each answer;
* ``exit_after``: exit 5 in the middle of this process's N-th ``tools/call``
  (0: never);
* ``mute_after``: in its N-th ``tools/call``, close stdout and stop reading
  stdin, staying alive until signalled (0: never);
* ``grandchild``: start a sleeping grandchild (recorded in ``PIDS_FILE`` too)
  in the same process group;
* ``slow``: seconds each ``tools/call`` takes;
* ``tools``: the tool names it lists. A change is announced with
  ``notifications/tools/list_changed`` (the control file is polled).

A call of tool ``T`` answers the text ``NAME:T:PID``. The process exits when
its stdin ends.
"""

import json
import os
import subprocess
import sys
import threading
import time

NAME, CONTROL, PIDS = sys.argv[1], sys.argv[2], sys.argv[3]
ME = os.getpid()
LOCK = threading.Lock()
JUNK = (
    "Starting hostile server ... banner line, not JSON",
    json.dumps({"jsonrpc": "2.0", "id": 987654, "result": {}}),
    json.dumps({"jsonrpc": "2.0", "method": "notifications/hostile", "params": {"x": 1}}),
    "\x1b[31mcolour\x1b[0m and a tab\tand UTF-8 \u00e9\u2603",
)


def control() -> dict:
    try:
        with open(CONTROL, encoding="utf-8") as f:
            got = json.load(f).get(NAME, {})
    except (OSError, ValueError):
        return {}
    return got if isinstance(got, dict) else {}


def flood(n: int) -> None:
    if n:
        try:
            sys.stderr.write(("noise " * (n // 6 + 1))[:n] + "\n")
            sys.stderr.flush()
        except OSError:
            pass


def send(message: dict) -> None:
    behaviour = control()
    with LOCK:
        if behaviour.get("start") == "junk":
            for line in JUNK:
                sys.stdout.write(line + "\n")
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def watch_tools(announced: list) -> None:
    """Announce a change of the tool list (after ``initialize``)."""
    while True:
        time.sleep(0.02)
        tools = control().get("tools", [])
        if announced and tools != announced[0]:
            announced[0] = tools
            try:
                send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            except (OSError, ValueError):
                return


def main() -> None:
    with open(PIDS, "a", encoding="utf-8") as f:
        f.write(f"{ME} {NAME} {time.time()!r}\n")
    behaviour = control()
    if behaviour.get("grandchild"):
        sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        with open(PIDS, "a", encoding="utf-8") as f:
            f.write(f"{sleeper.pid} {NAME}-grandchild {time.time()!r}\n")
    flood(int(behaviour.get("flood", 0)))
    start = behaviour.get("start", "ok")
    if start == "crash":
        sys.stderr.write(f"fatal: {NAME} cannot start (simulated)\n")
        sys.stderr.flush()
        sys.exit(7)
    if start == "sluggish":
        time.sleep(0.3)
    announced: list = []
    threading.Thread(target=watch_tools, args=(announced,), daemon=True).start()
    calls = 0
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        if start == "hang":
            continue
        method, ident = message.get("method"), message.get("id")
        behaviour = control()
        if method == "notifications/initialized" and start == "die":
            sys.stderr.write(f"{NAME}: dying right after initialize\n")
            sys.stderr.flush()
            os._exit(9)
        if ident is None:
            continue
        flood(int(behaviour.get("flood", 0)))
        params = message.get("params") or {}
        if method == "initialize":
            tools = behaviour.get("tools", [])
            result = {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": NAME, "version": "1"},
            }
            if not announced:
                announced.append(tools)
        elif method == "tools/list":
            tools = behaviour.get("tools", [])
            if announced:
                announced[0] = tools
            result = {
                "tools": [
                    {"name": t, "description": "t", "inputSchema": {"type": "object"}}
                    for t in tools
                ]
            }
        elif method == "tools/call":
            calls += 1
            if calls == int(behaviour.get("exit_after", 0)):
                sys.stderr.write(f"{NAME}: exiting in call {calls} (simulated)\n")
                sys.stderr.flush()
                os._exit(5)
            if calls == int(behaviour.get("mute_after", 0)):
                with LOCK:
                    os.close(1)
                while True:
                    time.sleep(1)
            time.sleep(float(behaviour.get("slow", 0)))
            text = f"{NAME}:{params.get('name')}:{ME}"
            result = {"content": [{"type": "text", "text": text}]}
        elif method == "ping":
            result = {}
        else:
            error = {"code": -32601, "message": f"method not found: {method}"}
            send({"jsonrpc": "2.0", "id": ident, "error": error})
            continue
        send({"jsonrpc": "2.0", "id": ident, "result": result})


if __name__ == "__main__":
    main()
