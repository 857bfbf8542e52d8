"""A test server in a child process, listening on a free port of 127.0.0.1.

``ChildServer(script, args, log_dir)`` runs ``python script PORT *args`` with its
output in a log file, waits until the port accepts connections (or reports
the log when the process exits or never listens), and can be stopped and
started again on the same port.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ("ROOT", "START_TIMEOUT", "ChildServer", "free_port")

ROOT = Path(__file__).resolve().parent.parent.parent
START_TIMEOUT = 20.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class ChildServer:
    """``python script PORT *args`` in a child process (see the module docstring)."""

    def __init__(
        self, script: Path, args: Sequence[str], log_dir: Path, *, path: str = "/mcp"
    ) -> None:
        self.script = script
        self.args = list(args)
        self.port = free_port()
        self.path = path
        self.log = log_dir / f"{script.stem}-{self.port}.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    def start(self) -> None:
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, str(self.script), str(self.port), *self.args],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=ROOT,
            )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.script.name} exited:\n{self.log.read_text()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f"{self.script.name} did not start:\n{self.log.read_text()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
