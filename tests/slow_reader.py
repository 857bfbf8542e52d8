"""A stdio child that answers the handshake, then stops reading its stdin.

``SLOW_READER`` is the script (write it to a file and run it with
``sys.executable``): ``script LOG [PAUSE]``. It logs every line it reads, raw,
as one JSON string per line of ``LOG``, and sleeps ``PAUSE`` seconds (default
1.5) on ``notifications/initialized``, so the client's next large request
fills the pipe and blocks. Then it answers ``ping`` with ``{}``, ``tools/call``
with the length of its arguments' JSON as text, and any other request with
``{"size": <length of the line>}``.
"""

from __future__ import annotations

import textwrap

__all__ = ("SLOW_READER",)

SLOW_READER = textwrap.dedent(
    """
    import json
    import sys
    import time

    log = open(sys.argv[1], "w")
    pause = float(sys.argv[2]) if len(sys.argv) > 2 else 1.5


    def send(obj):
        sys.stdout.write(json.dumps(obj) + "\\n")
        sys.stdout.flush()


    for raw in sys.stdin:
        log.write(json.dumps(raw) + "\\n")  # each line as read, raw
        log.flush()
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        method = msg.get("method")
        if method == "notifications/initialized":
            time.sleep(pause)  # not reading: the client's big request fills the pipe
        if "id" not in msg or method is None:
            continue
        if method == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "slow-reader", "version": "1"}}
        elif method == "ping":
            result = {}
        elif method == "tools/call":
            size = len(json.dumps(msg["params"].get("arguments", {})))
            result = {"content": [{"type": "text", "text": str(size)}]}
        else:
            result = {"size": len(raw)}
        send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
    """
)
