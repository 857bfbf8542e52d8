"""A stdio tee: ``python tee.py LOGFILE CMD ARGS...``.

Runs ``CMD ARGS...`` as a child, relays stdin/stdout unchanged and appends every line to LOGFILE
as ``C>S <line>`` (client to server) or ``S>C <line>`` (server to client). The child's stderr is
inherited. When stdin ends, the child's stdin is closed and the tee waits for the child.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import IO


def main() -> int:
    log = open(sys.argv[1], "a", buffering=1, encoding="utf-8")  # noqa: SIM115
    child = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    lock = threading.Lock()

    def pump(src: IO[bytes], dst: IO[bytes], tag: str, close_dst: bool) -> None:
        for line in iter(src.readline, b""):
            with lock:
                log.write(f"{tag} {line.decode('utf-8').rstrip(chr(10))}\n")
            try:
                dst.write(line)
                dst.flush()
            except (BrokenPipeError, ValueError):
                break
        if close_dst:
            try:
                dst.close()
            except BrokenPipeError:
                pass

    out = threading.Thread(
        target=pump, args=(child.stdout, sys.stdout.buffer, "S>C", False), daemon=True
    )
    out.start()
    pump(sys.stdin.buffer, child.stdin, "C>S", True)
    rc = child.wait()
    out.join(2)
    with lock:
        log.close()
    return rc


if __name__ == "__main__":
    sys.exit(main())
