"""The stdio transport, client side: a server run as a child process.

The server is started with ``subprocess.Popen`` (no shell, ever), in its own
process group (a new session on POSIX, a new process group on Windows) so the
whole tree can be signalled at shutdown. The configured ``env`` is merged over
the inherited environment, so giving ``env`` never drops ``PATH``
(``child_environment``); ``inherit_env`` narrows what is inherited, for servers
that should not see the host's secrets. Children get ``PYTHONIOENCODING=utf-8``
and ``PYTHONUTF8=1`` unless the environment says otherwise: a Python server on
Windows would otherwise write its pipes in the ANSI code page.

* stdout is read by readiness on POSIX pipes (a worker thread elsewhere),
  framed by ``NDJSONReader`` in tolerant mode: text the server prints that
  cannot be a message is kept for diagnostics, counted and skipped.
* stderr is drained continuously by a daemon thread into a bounded ring
  buffer (never left to fill the pipe and wedge the server), optionally
  mirrored to a file; it is never treated as an error, but its tail is
  attached to every ``ConnectionClosed``.
* When stdout ends, or a write finds the child's stdin closed, the exit status
  and the rest of stderr are collected (briefly waited for) so the error names
  them: the exit code or signal, or that the child, still running, closed its
  stdout or stopped reading its stdin.
* The child's exit is watched as well (a thread, POSIX): what it left in its
  process group is swept at once, and if a process outside the group still
  holds stdout open, reading ends once the pipe is drained. So a dead server
  fails the pending requests at once even when its stdout never ends.
* ``aclose()`` shuts down in the order the lifecycle clause gives: close the
  server's stdin, wait, SIGTERM the group, wait, SIGKILL the group; then it
  sweeps the group once more so grandchildren are not left behind.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Collection, Mapping, Sequence
from typing import IO, TYPE_CHECKING

import anyio
import anyio.lowlevel

from ._errors import ConnectionClosed
from ._fdio import FDReader, FDWriter
from ._stdio import _Ends, _Framed, _Sender
from .sansio import _messages as m
from .sansio._codec import DEFAULT_LIMITS, Limits
from .sansio._messages import RequestId

if TYPE_CHECKING:
    from ._transport import Outbound

__all__ = (
    "ESSENTIAL_ENV",
    "STDERR_TAIL_BYTES",
    "StderrTail",
    "StdioClientTransport",
    "child_environment",
)

#: What a child inherits even when ``inherit_env`` narrows the rest: what a
#: program needs to find other programs, its home and temporary directory, and
#: its terminal and locale (on Windows, also what the C runtime and installers
#: expect to be there).
ESSENTIAL_ENV: frozenset[str] = frozenset(
    {
        "HOME", "LANG", "LC_ALL", "LC_CTYPE", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR",
        "USER", "APPDATA", "COMSPEC", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATHEXT",
        "PROCESSOR_ARCHITECTURE", "PROGRAMDATA", "PROGRAMFILES", "PROGRAMFILES(X86)",
        "SYSTEMDRIVE", "SYSTEMROOT", "TEMP", "TMP", "USERNAME", "USERPROFILE", "WINDIR",
    }
)  # fmt: skip
#: Defaults under everything inherited or configured (pain point #31).
_UTF8_ENV = {"PYTHONIOENCODING": "utf-8", "PYTHONUTF8": "1"}


def child_environment(
    env: Mapping[str, str | None] | None = None,
    inherit_env: bool | Collection[str] = True,
    base: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment a child server starts with.

    Layers, each over the one before: the UTF-8 defaults; what is inherited
    from ``base`` (``os.environ`` when ``None``): everything with
    ``inherit_env=True``, only ``ESSENTIAL_ENV`` with ``False``, and those plus
    the names given when it is a collection (compared ignoring case on
    Windows, where variable names are); then ``env``, where ``None`` unsets.
    On Windows a configured name replaces the variable whatever its case
    (``Path`` replaces ``PATH``), so the child never gets both.
    """
    base = os.environ if base is None else base
    windows = sys.platform == "win32"
    fold = str.upper if windows else str
    merged = dict(_UTF8_ENV)
    if inherit_env is True:
        merged.update(base)
    else:
        wanted = ESSENTIAL_ENV | {fold(n) for n in (() if inherit_env is False else inherit_env)}
        merged.update((k, v) for k, v in base.items() if fold(k) in wanted)
    for key, value in (env or {}).items():
        if windows:
            for same in [k for k in merged if k.upper() == key.upper()]:
                del merged[same]
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


#: Bytes of a child's stderr kept for error messages (a few screens of text).
STDERR_TAIL_BYTES = 16 * 1024
#: Seconds to wait for the child after closing its stdin, and again after SIGTERM.
DEFAULT_SHUTDOWN_TIMEOUT = 2.0
#: Seconds to wait for an exit status once the child's stdout has ended.
_EXIT_STATUS_WAIT = 0.1
#: Seconds a failed write waits for the reader to reach the end of stdout.
_STDOUT_END_WAIT = 0.25
#: Seconds grandchildren get between SIGTERM and SIGKILL once the server is gone.
_SWEEP_GRACE = 0.2


class StderrTail:
    """A bounded, thread-safe tail of a byte stream, decoded on demand."""

    def __init__(self, limit: int = STDERR_TAIL_BYTES) -> None:
        self._limit = limit
        self._chunks: collections.deque[bytes] = collections.deque()
        self._size = 0
        self._lock = threading.Lock()

    def append(self, data: bytes) -> None:
        with self._lock:
            chunks = self._chunks
            chunks.append(data)
            self._size += len(data)
            # Whole chunks go while the rest still fills the limit; then the oldest
            # left is cut to fit, so the tail is always the last ``limit`` bytes.
            while self._size - len(chunks[0]) >= self._limit:
                self._size -= len(chunks.popleft())
            excess = self._size - self._limit
            if excess > 0:
                chunks[0] = chunks[0][excess:]
                self._size = self._limit

    def text(self, max_lines: int = 20) -> str:
        with self._lock:
            data = b"".join(self._chunks)
        lines = data.decode("utf-8", "replace").splitlines()
        return "\n".join(lines[-max_lines:])


def _drain(fd: int, tail: StderrTail, mirror: IO[bytes] | None, done: threading.Event) -> None:
    try:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            tail.append(chunk)
            if mirror is not None:
                try:
                    mirror.write(chunk)
                    mirror.flush()
                except (OSError, ValueError):
                    mirror = None
    finally:
        try:
            os.close(fd)
        except OSError:
            pass
        done.set()


class StdioClientTransport(_Ends):
    """Runs an MCP server as a child process and talks to it over its stdio.

    Args:
        command: the program (looked up on the merged ``PATH``); never a shell line.
        args: its arguments.
        env: variables merged over the inherited environment (``None`` values unset).
        inherit_env: what of this process's environment the child inherits:
            all of it (``True``), only ``ESSENTIAL_ENV`` (``False``), or those
            and the variables named (see ``child_environment``).
        cwd: working directory for the child.
        limits: message size and depth limits.
        stderr_log: a binary file that also receives everything the child writes
            to stderr.
        shutdown_timeout: seconds for each step of the shutdown sequence.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str | None] | None = None,
        inherit_env: bool | Collection[str] = True,
        cwd: str | os.PathLike[str] | None = None,
        limits: Limits = DEFAULT_LIMITS,
        stderr_log: IO[bytes] | None = None,
        shutdown_timeout: float = DEFAULT_SHUTDOWN_TIMEOUT,
    ) -> None:
        self.command = command
        self.args = list(args)
        self.stderr = StderrTail()
        self.shutdown_timeout = shutdown_timeout
        if isinstance(inherit_env, str):
            raise TypeError("inherit_env takes True, False or a collection of names, not a str")
        merged = child_environment(env, inherit_env)
        # shutil is imported here, not at the top: it pulls in the compression
        # modules (over 1 MB resident), which a stdio server never needs.
        import shutil

        resolved = shutil.which(command, path=merged.get("PATH")) or (
            command if os.path.sep in command or (os.altsep and os.altsep in command) else None
        )
        if resolved is None:
            raise ConnectionClosed(
                f"cannot start MCP server: {command!r} was not found on PATH "
                f"(PATH={merged.get('PATH', '')!r})"
            )
        popen_kw: dict[str, object] = {}
        if sys.platform == "win32":  # pragma: no cover - not exercised on Linux CI
            popen_kw["creationflags"] = subprocess.CREATE_NEW_PROCESS_GROUP
        else:
            popen_kw["start_new_session"] = True
        try:
            self.process = subprocess.Popen(
                [resolved, *self.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=merged,
                cwd=cwd,
                bufsize=0,
                close_fds=True,
                **popen_kw,  # type: ignore[call-overload]
            )
        except OSError as exc:
            raise ConnectionClosed(f"cannot start MCP server {command!r}: {exc}") from exc
        assert self.process.stdin and self.process.stdout and self.process.stderr
        # Take the raw descriptors; the Popen file objects are detached so that
        # nothing else reads or closes them behind our back.
        in_fd = os.dup(self.process.stdin.fileno())
        out_fd = os.dup(self.process.stdout.fileno())
        err_fd = os.dup(self.process.stderr.fileno())
        for f in (self.process.stdin, self.process.stdout, self.process.stderr):
            f.close()
        self._sender = _Sender(FDWriter(in_fd, owned=True))
        self._framed = _Framed(FDReader(out_fd, owned=True), limits, tolerant=True)
        self._out_fd = out_fd
        self._stderr_done = threading.Event()
        self._stderr_thread = threading.Thread(
            target=_drain,
            args=(err_fd, self.stderr, stderr_log, self._stderr_done),
            name=f"mcpwire-stderr-{self.process.pid}",
            daemon=True,
        )
        self._stderr_thread.start()
        self._closed_locally = False
        self._closed = False
        self._stopped: anyio.Event | None = None
        #: The reader has taken everything up to the end of stdout (and its event,
        #: made when a failed write first waits for it).
        self._stdout_ended = False
        self._stdout_end: anyio.Event | None = None
        #: The task that reads (``receive``): one, for the transport's whole life;
        #: and its event loop, which the exit watcher ends reading on.
        self._reader_task: int | None = None
        self._token: anyio.lowlevel.EventLoopToken | None = None
        #: Reading was ended while a process outside the group held stdout open.
        self._held_open = False
        if hasattr(os, "waitid"):
            # Started last: a server that exits at once finds every attribute set.
            threading.Thread(
                target=self._watch_exit, name=f"mcpwire-exit-{self.process.pid}", daemon=True
            ).start()

    @property
    def pid(self) -> int:
        pid: int = self.process.pid
        return pid

    async def receive(self) -> m.Incoming:
        if self._reader_task is None:
            self._reader_task = anyio.get_current_task().id
            self._token = anyio.lowlevel.current_token()
        try:
            return await self._framed.receive()
        except anyio.EndOfStream:
            await self._collect_exit_status()
            self._stdout_ended = True
            if self._stdout_end is not None:
                self._stdout_end.set()
            raise

    async def send(self, message: Outbound, *, related: RequestId | None = None) -> None:
        try:
            await self._sender.send(message)
        except anyio.BrokenResourceError:
            await self._write_failed()
            raise

    def start_send(
        self, message: Outbound, *, related: RequestId | None = None
    ) -> Awaitable[None] | None:
        try:
            rest = self._sender.start_send(message)
        except anyio.BrokenResourceError:
            return self._send_failed(None)
        return None if rest is None else self._send_failed(rest)

    async def _send_failed(self, rest: Awaitable[None] | None) -> None:
        try:
            if rest is None:
                raise anyio.BrokenResourceError
            await rest
        except anyio.BrokenResourceError:
            await self._write_failed()
            raise

    async def _write_failed(self) -> None:
        """A write found the child's stdin closed: let the failure through only once
        what the child wrote before is read and its exit status and last stderr
        lines are in. The session ends the moment a send fails, with the error
        ``close_error()`` gives, so failing at once would lose answers still in
        the stdout pipe (a child that answers, then exits, while another request
        is being written) and name no exit status; a dead peer's error says why
        (design.md, "Behaviour on bad input"). A child that only closed its stdin
        keeps stdout open: that wait is bounded by ``_STDOUT_END_WAIT``. The
        reader's own writes (its replies to invalid input) fail at once: the
        reader cannot read on while it waits, and it reports the end itself.
        """
        if anyio.get_current_task().id == self._reader_task:
            return
        if not self._stdout_ended:
            if self._stdout_end is None:
                self._stdout_end = anyio.Event()
            with anyio.move_on_after(_STDOUT_END_WAIT):
                await self._stdout_end.wait()
        await self._collect_exit_status()

    async def _collect_exit_status(self) -> None:
        deadline = time.monotonic() + _EXIT_STATUS_WAIT
        while self.process.poll() is None and time.monotonic() < deadline:
            await anyio.sleep(0.005)
        # Let the stderr thread reach the end too, so the tail is complete.
        while not self._stderr_done.is_set() and time.monotonic() < deadline:
            await anyio.sleep(0.005)

    def close_error(self) -> ConnectionClosed:
        name = " ".join([self.command, *self.args])
        code = self.process.poll()
        if self._closed_locally:
            reason = f"MCP server {name!r} connection was closed"
        elif code is None and not self._framed._eof:
            # A write failed while stdout is still open: the child closed its stdin.
            reason = f"MCP server {name!r} stopped reading its stdin (pid {self.pid} still running)"
        elif code is None:
            reason = f"MCP server {name!r} closed its stdout (pid {self.pid} still running)"
        elif code < 0:
            try:
                signame = signal.Signals(-code).name
            except ValueError:
                signame = f"signal {-code}"
            reason = f"MCP server {name!r} was killed by {signame}"
        else:
            reason = f"MCP server {name!r} exited with code {code}"
        if self._held_open:
            reason += " (a process it started, outside its process group, holds its stdout open)"
        if self._framed.non_json_count:
            sample = self._framed.non_json[-1].decode("utf-8", "replace")
            reason += (
                f"; it wrote {self._framed.non_json_count} non-protocol line(s) to "
                f"stdout, last: {sample!r}"
            )
        return ConnectionClosed(reason, exit_code=code, stderr_tail=self.stderr.text())

    async def aclose(self) -> None:
        """Shut the child down (stdin close, wait, SIGTERM, wait, SIGKILL).

        Idempotent: a call made while another is shutting the child down
        returns when that one has finished, so every caller may rely on the
        child being gone.
        """
        if self._closed:
            if self._stopped is not None:
                with anyio.CancelScope(shield=True):
                    await self._stopped.wait()
            return
        self._closed = True
        self._stopped = anyio.Event()
        self._closed_locally = self.process.poll() is None
        try:
            with anyio.CancelScope(shield=True):
                self._sender.writer.close()
                if not await self._wait_exit(self.shutdown_timeout):
                    self._signal_group(signal.SIGTERM)
                    if not await self._wait_exit(self.shutdown_timeout):
                        self._signal_group(_SIGKILL)
                        await self._wait_exit(self.shutdown_timeout)
                await self._sweep_group()
                self._framed._reader.close()
        finally:
            self._stopped.set()

    async def _wait_exit(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        delay = 0.001
        while self.process.poll() is None:
            if time.monotonic() >= deadline:
                return False
            await anyio.sleep(delay)
            delay = min(delay * 2, 0.05)
        return True

    def _signal_group(self, sig: int) -> None:
        if sys.platform == "win32":  # pragma: no cover
            if sig == _SIGKILL:
                self.process.kill()
            else:
                self.process.terminate()
            return
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    async def _sweep_group(self) -> None:
        # The server is gone; anything it left in its process group goes too.
        deadline = self._start_sweep()
        while deadline is not None and not self._swept(deadline):
            await anyio.sleep(0.01)

    def _watch_exit(self) -> None:
        """In a daemon thread (POSIX): once the server exits, what it left in its
        process group is signalled as at shutdown (SIGTERM, then SIGKILL). A
        process left behind may hold the server's stdout open, and the end of
        stdout is how the connection learns that the server is gone: without
        this, calls would wait out their timeouts and a hub would keep a dead
        server ``ready``. The server is the process started, so a launcher that
        exits and leaves another process serving its pipes is not supported.
        ``WNOWAIT`` leaves the exit status to ``Popen``, which reports it."""
        try:
            os.waitid(os.P_PID, self.process.pid, os.WEXITED | os.WNOWAIT)
        except OSError:
            pass  # reaped already: it has exited
        if self._closed:
            return  # aclose() sweeps the group itself
        deadline = self._start_sweep()
        while deadline is not None and not self._swept(deadline):
            time.sleep(0.01)
        self._end_held_stdout()

    def _end_held_stdout(self) -> None:
        """Once the server has exited and its group is swept, a process that left
        the group (a session of its own) may still hold stdout open. When the pipe
        has stayed empty but open for ``_STDOUT_END_WAIT``, everything the server
        wrote has been read: reading ends on the event loop, as at the end of
        stdout. A pipe whose writers are all gone reports the end itself."""
        import select

        import anyio.from_thread

        poller = select.poll()
        poller.register(self._out_fd, select.POLLIN)
        quiet_since = time.monotonic()
        while not (self._stdout_ended or self._closed):
            events = poller.poll(0)
            if events and events[0][1] & (select.POLLHUP | select.POLLNVAL):
                return  # no writer left: the reader meets the end of stdout
            if events:
                quiet_since = time.monotonic()  # unread output: the reader is behind
            elif time.monotonic() - quiet_since >= _STDOUT_END_WAIT:
                token = self._token
                if token is None:
                    return  # nothing reads, so nothing waits
                self._held_open = True
                try:
                    anyio.from_thread.run_sync(self._framed._reader.close, token=token)
                except RuntimeError:
                    pass  # the event loop has ended
                return
            time.sleep(0.02)

    def _start_sweep(self) -> float | None:
        """SIGTERM the group if anything is left in it; the deadline for SIGKILL."""
        if sys.platform == "win32" or not self._group_alive():  # pragma: no cover
            return None
        self._signal_group(signal.SIGTERM)
        return time.monotonic() + _SWEEP_GRACE

    def _swept(self, deadline: float) -> bool:
        """The group is gone, or is SIGKILLed now that ``deadline`` has passed."""
        if not self._group_alive():
            return True
        if time.monotonic() >= deadline:
            self._signal_group(_SIGKILL)
            return True
        return False

    def _group_alive(self) -> bool:
        try:
            os.killpg(self.process.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True


_SIGKILL: int = getattr(signal, "SIGKILL", signal.SIGTERM)
