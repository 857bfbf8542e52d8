"""Tests for the stdio transport, both ends, with real child processes.

* Server side: a script serving with ``StdioServerTransport`` + ``Session`` is
  driven with raw bytes through ``subprocess.Popen`` (not our client), so the
  exact replies on its stdout can be asserted (design.md, "Behaviour on bad
  input").
* Client side: ``StdioClientTransport`` runs small plain-Python children that
  misbehave in the ways real servers do: die mid-request, exit, print junk on
  stdout, flood stderr, leave grandchildren behind, ignore SIGTERM.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mcpwire
from mcpwire import ConnectionClosed, Session, StdioClientTransport
from mcpwire._stdio_client import ESSENTIAL_ENV, STDERR_TAIL_BYTES, child_environment
from mcpwire.sansio import Request

WAIT = 10.0
BACKENDS = ["asyncio", "trio"]

SERVER_SCRIPT = textwrap.dedent(
    """
    import os
    import sys

    import anyio

    import mcpwire
    from mcpwire import JSONRPCError
    from mcpwire.sansio import Limits


    async def on_request(request, ctx):
        if request.method == "echo":
            return {"echo": request.params}
        if request.method == "stray":
            print("stray print")
            sys.stdout.flush()
            os.write(1, b"junk on fd 1\\n")
            return {"ok": True}
        raise JSONRPCError(-32601, f"Method not found: {request.method}")


    async def main():
        transport = mcpwire.StdioServerTransport(limits=Limits(max_size=1024))
        async with mcpwire.Session(transport, on_request=on_request) as session:
            await session.wait_closed()


    anyio.run(main, backend=sys.argv[1])
    """
)

CHILD_SCRIPT = textwrap.dedent(
    """
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    out = sys.stdout.buffer


    def send(obj):
        out.write(json.dumps(obj).encode() + b"\\n")
        out.flush()


    def result(rid, value):
        send({"jsonrpc": "2.0", "id": rid, "result": value})


    if mode == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if mode == "junk":
        out.write(b"Starting demo server v1.0 on stdio...\\n")
        out.flush()

    for line in sys.stdin.buffer:
        msg = json.loads(line)
        if "id" not in msg or "method" not in msg:
            continue
        rid, method, params = msg["id"], msg["method"], msg.get("params") or {}
        if mode == "junk":
            out.write(b"debug: handling " + method.encode() + b"\\n")
            out.flush()
        if method == "echo":
            result(rid, {"echo": params})
        elif method == "env":
            result(rid, {k: os.environ.get(k) for k in params["names"]})
        elif method == "die":
            sys.stderr.write("about to die: last words\\n")
            sys.stderr.write("t=%r\\n" % time.monotonic())
            sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        elif method == "exit3":
            sys.stderr.write("giving up with status 3\\n")
            sys.stderr.flush()
            os._exit(3)
        elif method == "flood":
            chunk = (b"e" * 1023 + b"\\n") * 64
            for _ in range(16):  # 1 MiB in all
                sys.stderr.buffer.write(chunk)
            sys.stderr.buffer.write(b"end of flood\\n")
            sys.stderr.flush()
            result(rid, {"flooded": True})
        elif method == "spawn":
            p = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(60)"],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
            )
            result(rid, {"pid": p.pid})
        elif method == "spawn-escaped":
            # A helper in a session of its own, holding stdout: out of the group's reach.
            p = subprocess.Popen(
                [sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True
            )
            result(rid, {"pid": p.pid})
        elif method == "spawn-holding":
            # A helper that inherits stdin, stdout and stderr, in the same group.
            p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            result(rid, {"pid": p.pid})
        else:
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": -32601, "message": "Method not found"}})

    if mode == "stubborn":
        while True:
            time.sleep(1)
    """
)


@pytest.fixture(scope="module")
def scripts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("stdio-scripts")
    server = root / "server.py"
    server.write_text(SERVER_SCRIPT)
    child = root / "child.py"
    child.write_text(CHILD_SCRIPT)
    return {"server": str(server), "child": str(child)}


# =============================================================================
# server side, driven with raw bytes


class RawClient:
    """Talks to a stdio server process with raw bytes."""

    def __init__(self, script: str, backend: str, stderr_path: Path) -> None:
        self.stderr_path = stderr_path
        self._stderr = open(stderr_path, "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, script, backend],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            bufsize=0,
        )
        self._buf = b""
        self._n = 0

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)

    def line(self, timeout: float = WAIT) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"no reply within {timeout} s; have {self._buf[:200]!r}")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise AssertionError(f"server closed stdout; rc={self.proc.poll()}")
                self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line

    def reply(self) -> dict[str, Any]:
        line = self.line()
        value = json.loads(line)  # every stdout line is a JSON-RPC frame
        assert isinstance(value, dict), line
        return value

    def exchange(self, frame: bytes, expected_id: Any = "none") -> dict[str, Any] | None:
        """Send ``frame`` then a sentinel request; return the reply to ``frame``.

        ``expected_id`` is the id the reply should carry (``None`` for id null);
        the default means no reply is expected. Any other line is an error.
        """
        self._n += 1
        sentinel = f"sentinel-{self._n}"
        self.write(frame)
        self.write(json.dumps({"jsonrpc": "2.0", "id": sentinel, "method": "echo"}).encode())
        self.write(b"\n")
        found: dict[str, Any] | None = None
        got_sentinel = False
        while not got_sentinel or (expected_id != "none" and found is None):
            msg = self.reply()
            if msg.get("id") == sentinel:
                assert msg == {"jsonrpc": "2.0", "id": sentinel, "result": {"echo": None}}
                got_sentinel = True
                continue
            assert expected_id != "none", f"unexpected reply {msg}"
            assert found is None, f"second reply {msg}"
            found = msg
        return found

    def close(self, timeout: float = WAIT) -> int:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            assert self.proc.stdout is not None
            self.proc.stdout.close()
            self._stderr.close()

    def stderr_text(self) -> str:
        return self.stderr_path.read_text("utf-8", "replace")


def error_reply(msg: dict[str, Any] | None, code: int, id: Any) -> None:
    assert msg is not None
    assert set(msg) == {"jsonrpc", "id", "error"}, msg
    assert msg["jsonrpc"] == "2.0"
    assert msg["id"] == id and type(msg["id"]) is type(id), msg
    assert msg["error"]["code"] == code, msg
    assert isinstance(msg["error"]["message"], str) and msg["error"]["message"]
    assert set(msg["error"]) <= {"code", "message", "data"}


@pytest.fixture(scope="module", params=BACKENDS)
def served(
    request: pytest.FixtureRequest,
    scripts: dict[str, str],
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[RawClient]:
    """One server per backend shared by the bad-input table: it must keep serving."""
    stderr = tmp_path_factory.mktemp("served") / "stderr.txt"
    client = RawClient(scripts["server"], request.param, stderr)
    try:
        yield client
        # After everything thrown at it, it still answers and exits cleanly on EOF.
        assert client.exchange(b"") is None
    finally:
        rc = client.close()
    assert rc == 0, client.stderr_text()


def _big(n: int) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "id": 9, "method": "echo", "params": {"x": "y" * n}}
    ).encode()


# (frame without line end, expected code or None for no reply, expected id)
BAD_INPUT: list[tuple[str, bytes, int | None, Any]] = [
    ("invalid-json", b'{"jsonrpc":"2.0","method":', -32700, None),
    ("not-json-text", b"hello world", -32700, None),
    ("binary-garbage", bytes(b for b in range(256) if b != 10), -32700, None),
    ("invalid-utf8", b'{"jsonrpc":"2.0","id":1,"method":"\xff"}', -32700, None),
    ("empty-batch", b"[]", -32600, None),
    ("junk-batch", b"[1,2,3]", -32600, None),
    ("batch-refused", b'[{"jsonrpc":"2.0","id":1,"method":"echo"}]', -32600, None),
    ("scalar", b'"hello"', -32600, None),
    ("id-null", b'{"jsonrpc":"2.0","id":null,"method":"echo"}', -32600, None),
    ("id-float", b'{"jsonrpc":"2.0","id":1.5,"method":"echo"}', -32600, None),
    ("id-bool", b'{"jsonrpc":"2.0","id":true,"method":"echo"}', -32600, None),
    ("jsonrpc-1.0", b'{"jsonrpc":"1.0","id":3,"method":"echo"}', -32600, 3),
    ("method-not-string", b'{"jsonrpc":"2.0","id":4,"method":4}', -32600, 4),
    ("params-array", b'{"jsonrpc":"2.0","id":5,"method":"echo","params":[1]}', -32602, 5),
    ("unknown-method", b'{"jsonrpc":"2.0","id":7,"method":"nope"}', -32601, 7),
    ("unknown-method-string-id", b'{"jsonrpc":"2.0","id":"7","method":"nope"}', -32601, "7"),
    # The id of an oversized request is read from its first or last bytes (JSON-RPC
    # 2.0 §5: echo the id when it can be determined): its caller fails at once.
    ("oversized-line", _big(2000), -32600, 9),
    (
        "oversized-id-last",
        b'{"jsonrpc":"2.0","method":"echo","params":{"x":"' + b"y" * 2000 + b'"},"id":9}',
        -32600,
        9,
    ),
    (
        # The order the TypeScript SDK writes a request in.
        "oversized-typescript-order",
        b'{"method":"echo","params":{"x":"' + b"y" * 2000 + b'"},"jsonrpc":"2.0","id":"ts-1"}',
        -32600,
        "ts-1",
    ),
    (
        # A method and no id on either side of the params: a notification, never answered.
        "oversized-notification",
        b'{"jsonrpc":"2.0","method":"notifications/x","params":{"x":"' + b"y" * 2000 + b'"}}',
        None,
        None,
    ),
    (
        "oversized-nested-id",
        b'{"jsonrpc":"2.0","params":{"id":3,"x":"' + b"y" * 2000 + b'"}}',
        -32600,
        None,
    ),
    ("oversized-junk", b"z" * 5000, -32600, None),
    ("deeply-nested", b"[" * 500 + b"]" * 500, -32600, None),
    ("deeply-nested-unbalanced", b"[" * 1000, -32700, None),
    ("deeply-nested-object", b'{"a":' * 150 + b"1" + b"}" * 150, -32600, None),
    ("notification-unknown", b'{"jsonrpc":"2.0","method":"notifications/whatever"}', None, None),
    ("notification-bad-params", b'{"jsonrpc":"2.0","method":"x","params":[1]}', None, None),
    ("notification-bad-version", b'{"jsonrpc":"1.0","method":"x"}', None, None),
    ("notification-params-null", b'{"jsonrpc":"2.0","method":"x","params":null}', None, None),
    ("stray-response", b'{"jsonrpc":"2.0","id":42,"result":{}}', None, None),
    ("broken-response", b'{"jsonrpc":"2.0","id":42,"result":1}', None, None),
    (
        "stray-error-response",
        b'{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}',
        None,
        None,
    ),
    ("blank-line", b"", None, None),
    ("whitespace-line", b"   \t ", None, None),
]


@pytest.mark.parametrize(
    ("frame", "code", "id"), [r[1:] for r in BAD_INPUT], ids=[r[0] for r in BAD_INPUT]
)
def test_server_answers_bad_input_exactly(
    served: RawClient, frame: bytes, code: int | None, id: Any
) -> None:
    if code is None:
        assert served.exchange(frame + b"\n") is None
    else:
        error_reply(served.exchange(frame + b"\n", id), code, id)


def test_server_oversized_line_message_names_the_limit(served: RawClient) -> None:
    reply = served.exchange(_big(3000) + b"\n", 9)
    error_reply(reply, -32600, 9)
    assert reply is not None and "1024" in reply["error"]["message"]


def test_server_echo_and_crlf(served: RawClient) -> None:
    frame = b'{"jsonrpc":"2.0","id":"e1","method":"echo","params":{"t":"a\\nb\\u2028"}}'
    served.write(frame + b"\r\n")
    assert served.reply() == {"jsonrpc": "2.0", "id": "e1", "result": {"echo": {"t": "a\nb\u2028"}}}


def test_server_line_split_across_writes(served: RawClient) -> None:
    frame = b'{"jsonrpc":"2.0","id":"split","method":"echo","params":{"k":[1,2,3]}}\n'
    for i in range(0, len(frame), 9):
        served.write(frame[i : i + 9])
        time.sleep(0.02)
    assert served.reply() == {"jsonrpc": "2.0", "id": "split", "result": {"echo": {"k": [1, 2, 3]}}}


def test_server_several_lines_in_one_write(served: RawClient) -> None:
    frames = b"".join(
        json.dumps({"jsonrpc": "2.0", "id": i, "method": "echo", "params": {"i": i}}).encode()
        + b"\n"
        for i in range(20)
    )
    served.write(frames)
    replies = [served.reply() for _ in range(20)]
    assert sorted(r["id"] for r in replies) == list(range(20))
    assert all(r["result"] == {"echo": {"i": r["id"]}} for r in replies)


def test_server_size_limit_boundary(served: RawClient) -> None:
    # A line of exactly 1024 bytes is accepted; 1025 is not.
    base = _big(0)
    ok = _big(1024 - len(base))
    assert len(ok) == 1024
    served.write(ok + b"\n")
    assert served.reply()["result"]["echo"]["x"] == "y" * (1024 - len(base))
    error_reply(served.exchange(_big(1025 - len(base)) + b"\n", 9), -32600, 9)


@pytest.mark.parametrize("backend", BACKENDS)
def test_server_stray_output_goes_to_stderr_and_exits_on_eof(
    scripts: dict[str, str], tmp_path: Path, backend: str
) -> None:
    client = RawClient(scripts["server"], backend, tmp_path / "stderr.txt")
    try:
        client.write(b'{"jsonrpc":"2.0","id":1,"method":"stray"}\n')
        assert client.reply() == {"jsonrpc": "2.0", "id": 1, "result": {"ok": True}}
        client.write(b'{"jsonrpc":"2.0","id":2,"method":"stray"}\n')
        assert client.reply() == {"jsonrpc": "2.0", "id": 2, "result": {"ok": True}}
        assert client.exchange(b"") is None
        start = time.monotonic()
    finally:
        rc = client.close()
    assert rc == 0, client.stderr_text()
    assert time.monotonic() - start < 5
    err = client.stderr_text()
    assert err.count("stray print") == 2
    assert err.count("junk on fd 1") == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_server_exits_on_eof_with_work_in_flight(
    scripts: dict[str, str], tmp_path: Path, backend: str
) -> None:
    client = RawClient(scripts["server"], backend, tmp_path / "stderr.txt")
    client.write(b'{"jsonrpc":"2.0","id":1,"method":"echo"}\n{"jsonrpc":"2.0","met')
    assert client.close() == 0, client.stderr_text()


# =============================================================================
# client side


def child(scripts: dict[str, str], *args: str, **kw: Any) -> StdioClientTransport:
    return StdioClientTransport(sys.executable, [scripts["child"], *args], **kw)


def pid_gone(pid: int) -> bool:
    """True if ``pid`` no longer runs (absent, or a zombie nobody has reaped yet)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    state = next((ln for ln in status.splitlines() if ln.startswith("State:")), "")
    return "Z" in state.split(":", 1)[1] if state else True


def wait_gone(pid: int, seconds: float = 2.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if pid_gone(pid):
            return True
        time.sleep(0.01)
    return pid_gone(pid)


@pytest.mark.anyio
async def test_client_round_trip_with_our_server(
    scripts: dict[str, str], anyio_backend: str
) -> None:
    transport = StdioClientTransport(sys.executable, [scripts["server"], anyio_backend])
    async with Session(transport) as session:
        with anyio.fail_after(WAIT):
            assert await session.request("echo", {"a": "\u2028\n"}) == {"echo": {"a": "\u2028\n"}}
            with pytest.raises(mcpwire.JSONRPCError) as info:
                await session.request("nope")
            assert info.value.code == -32601
            # Stray output in the server never reaches us as frames.
            assert await session.request("stray") == {"ok": True}
            assert await session.request("echo") == {"echo": None}
    assert transport.process.poll() == 0
    assert "stray print" in transport.stderr.text()


@pytest.mark.anyio
async def test_client_child_killed_mid_request(scripts: dict[str, str], anyio_backend: str) -> None:
    transport = child(scripts)
    async with Session(transport) as session:
        with anyio.fail_after(WAIT):
            assert await session.request("echo") == {"echo": {}}
        sent = time.monotonic()
        with pytest.raises(ConnectionClosed) as info:
            await session.request("die", timeout=30)
        failed = time.monotonic()
    err = info.value
    assert failed - sent < 0.5
    assert err.exit_code == -9
    assert "last words" in err.stderr_tail
    assert "last words" in str(err)
    assert "SIGKILL" in str(err)
    # Measured from the moment the child killed itself (its own monotonic clock,
    # which on Linux is the same clock as ours).
    died = float(err.stderr_tail.split("t=")[1].split()[0])
    assert failed - died < 0.1, f"{failed - died:.3f} s after the kill"
    assert session.close_reason is not None and session.close_reason.exit_code == -9


@pytest.mark.anyio
async def test_client_exit_watcher_may_run_before_the_transport_is_made(
    monkeypatch: pytest.MonkeyPatch, anyio_backend: str
) -> None:
    """A server that exits at once can be seen gone by the exit watcher before the
    constructor has returned (a crash-looping server in the hub once was). The
    worst case, made certain here: the watcher runs to its end inside its
    ``start()``, once the server has exited."""
    start = threading.Thread.start
    ran: list[str] = []

    def run_now(thread: threading.Thread) -> None:
        if thread.name.startswith("mcpwire-exit-"):
            thread.run()  # raises here if the transport is not fully made
            ran.append(thread.name)
        else:
            start(thread)

    monkeypatch.setattr(threading.Thread, "start", run_now)
    transport = StdioClientTransport(sys.executable, ["-c", "raise SystemExit(3)"])
    monkeypatch.undo()
    assert ran == [f"mcpwire-exit-{transport.pid}"]
    async with Session(transport) as session:
        with anyio.fail_after(WAIT), pytest.raises(ConnectionClosed) as info:
            await session.request("echo")
        assert info.value.exit_code == 3


@pytest.mark.anyio
async def test_client_child_exit_code(scripts: dict[str, str], anyio_backend: str) -> None:
    transport = child(scripts)
    async with Session(transport) as session:
        with anyio.fail_after(WAIT), pytest.raises(ConnectionClosed) as info:
            await session.request("exit3")
        assert info.value.exit_code == 3
        assert "exited with code 3" in str(info.value)
        assert "giving up with status 3" in info.value.stderr_tail
        # Later requests fail at once, with the same explanation.
        with pytest.raises(ConnectionClosed) as again:
            await session.request("echo")
        assert again.value.exit_code == 3


@pytest.mark.anyio
async def test_client_pending_requests_all_fail_when_child_dies(
    scripts: dict[str, str], anyio_backend: str
) -> None:
    transport = child(scripts)
    errors: list[ConnectionClosed] = []

    async with Session(transport) as session:

        async def blocked() -> None:
            try:
                await session.request("die", timeout=30)
            except ConnectionClosed as exc:
                errors.append(exc)

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(blocked)
    # The first "die" kills the child; the other two die with it.
    assert len(errors) == 3
    assert all(e.exit_code == -9 for e in errors)


@pytest.mark.anyio
@pytest.mark.parametrize(("method", "code"), [("die", -9), ("exit3", 3)])
async def test_client_child_dies_while_a_grandchild_holds_its_stdout(
    scripts: dict[str, str], anyio_backend: str, method: str, code: int
) -> None:
    """The end of stdout never comes while a process the server left behind holds
    it: the server's exit is watched too, and what it left in its group is swept,
    so the pending call fails with the exit status instead of hanging until its
    timeout (and a hub does not keep a dead server ``ready``)."""
    transport = child(scripts)
    async with Session(transport) as session:
        with anyio.fail_after(WAIT):
            helper = (await session.request("spawn-holding"))["pid"]
            assert isinstance(helper, int) and not pid_gone(helper)
            with pytest.raises(ConnectionClosed) as info:
                await session.request(method, timeout=60)
    assert info.value.exit_code == code
    assert wait_gone(helper, 1.0), "the grandchild outlived the server"
    assert transport.process.returncode == code


@pytest.mark.anyio
@pytest.mark.parametrize(("method", "code"), [("die", -9), ("exit3", 3)])
async def test_client_child_dies_while_an_escaped_process_holds_its_stdout(
    scripts: dict[str, str], anyio_backend: str, method: str, code: int
) -> None:
    """A process the server started in a session of its own keeps stdout open and
    cannot be swept with the group: once the server is gone and the pipe is
    drained, reading ends anyway, and the error says why (pain point #1: process
    exit fails the pending calls)."""
    transport = child(scripts)
    escaped = None
    try:
        async with Session(transport) as session:
            with anyio.fail_after(WAIT):
                escaped = (await session.request("spawn-escaped"))["pid"]
                assert isinstance(escaped, int)
                assert await session.request("echo", {"n": 1}) == {"echo": {"n": 1}}
                with pytest.raises(ConnectionClosed) as info:
                    await session.request(method, timeout=60)
        assert info.value.exit_code == code
        assert "outside its process group, holds its stdout open" in str(info.value)
        assert not pid_gone(escaped)  # out of reach, as the test means it to be
    finally:
        if isinstance(escaped, int):
            os.kill(escaped, signal.SIGKILL)


@pytest.mark.anyio
async def test_client_normal_child_and_grandchild_gone_after_close(
    scripts: dict[str, str], anyio_backend: str
) -> None:
    transport = child(scripts)
    async with Session(transport) as session:
        with anyio.fail_after(WAIT):
            result = await session.request("spawn")
    grandchild = result["pid"]
    assert isinstance(grandchild, int)
    assert transport.process.poll() is not None
    assert transport.process.returncode == 0  # it exited on stdin EOF, not by signal
    assert pid_gone(transport.pid)
    assert wait_gone(grandchild, 1.0), "the grandchild survived close()"


@pytest.mark.anyio
async def test_client_stubborn_child_is_killed(scripts: dict[str, str], anyio_backend: str) -> None:
    transport = child(scripts, "stubborn", shutdown_timeout=0.2)
    async with Session(transport) as session:
        with anyio.fail_after(WAIT):
            result = await session.request("spawn")
        start = time.monotonic()
    elapsed = time.monotonic() - start
    grandchild = result["pid"]
    assert isinstance(grandchild, int)
    assert transport.process.returncode == -signal.SIGKILL
    assert pid_gone(transport.pid)
    assert wait_gone(grandchild, 1.0), "the grandchild survived close()"
    assert elapsed < 0.2 * 3 + 1.5


@pytest.mark.anyio
async def test_client_close_never_blocks_the_event_loop(
    scripts: dict[str, str], anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Shutting a child down (and sweeping the grandchild it left behind) takes
    # a while; other tasks must keep running meanwhile, so the waits have to be
    # async, never a blocking time.sleep() on the event loop's thread.
    blocking: list[float] = []
    real_sleep = time.sleep

    def recording_sleep(seconds: float) -> None:
        if threading.current_thread() is threading.main_thread():
            blocking.append(seconds)
        real_sleep(seconds)

    transport = child(scripts)
    async with Session(transport) as session:
        with anyio.fail_after(WAIT):
            result = await session.request("spawn")
        monkeypatch.setattr(time, "sleep", recording_sleep)
    monkeypatch.undo()
    assert wait_gone(result["pid"], 1.0)  # type: ignore[arg-type]
    assert blocking == [], f"aclose() blocked the event loop in time.sleep {len(blocking)} times"


@pytest.mark.anyio
async def test_client_aclose_is_idempotent(scripts: dict[str, str], anyio_backend: str) -> None:
    transport = child(scripts)
    await transport.aclose()
    await transport.aclose()
    assert transport.process.poll() is not None
    assert "closed" in str(transport.close_error())


@pytest.mark.anyio
async def test_concurrent_aclose_calls_all_wait_for_the_child_to_be_gone(
    scripts: dict[str, str], anyio_backend: str
) -> None:
    # A stubborn child takes the whole SIGTERM -> SIGKILL sequence; every
    # concurrent aclose() returns only once it is dead.
    transport = child(scripts, "stubborn", shutdown_timeout=0.2)
    seen: list[int | None] = []

    async def close() -> None:
        await transport.aclose()
        seen.append(transport.process.poll())

    async with Session(transport) as session:
        with anyio.fail_after(WAIT):
            await session.request("spawn")  # the child is up and ignores SIGTERM
            async with anyio.create_task_group() as tg:
                for _ in range(3):
                    tg.start_soon(close)
    assert seen == [-signal.SIGKILL] * 3


@pytest.mark.anyio
async def test_client_env_is_merged(scripts: dict[str, str], anyio_backend: str) -> None:
    os.environ.setdefault("MCPWIRE_TEST_INHERITED", "inherited")
    try:
        transport = child(scripts, env={"FOO": "bar", "MCPWIRE_TEST_INHERITED": None})
        async with Session(transport) as session:
            with anyio.fail_after(WAIT):
                got = await session.request(
                    "env", {"names": ["FOO", "PATH", "MCPWIRE_TEST_INHERITED"]}
                )
    finally:
        os.environ.pop("MCPWIRE_TEST_INHERITED", None)
    assert got == {"FOO": "bar", "PATH": os.environ["PATH"], "MCPWIRE_TEST_INHERITED": None}


@pytest.mark.anyio
@pytest.mark.parametrize("inherit", [True, False, ["MCPWIRE_TEST_ALLOWED"]])
async def test_client_inherit_env_narrows_what_the_child_sees(
    scripts: dict[str, str], anyio_backend: str, inherit: Any
) -> None:
    """Pain points #3 and #31 with a real child: ``inherit_env`` keeps the host's
    secrets from a server (the essential variables, such as ``PATH``, always
    pass), configured ``env`` always arrives, and Python children get UTF-8
    stdio unless the environment says otherwise."""
    names = ["FOO", "PATH", "MCPWIRE_TEST_ALLOWED", "MCPWIRE_TEST_SECRET"]
    names += ["PYTHONUTF8", "PYTHONIOENCODING"]
    os.environ["MCPWIRE_TEST_ALLOWED"] = "allowed"
    os.environ["MCPWIRE_TEST_SECRET"] = "secret"
    try:
        transport = child(scripts, env={"FOO": "bar"}, inherit_env=inherit)
        async with Session(transport) as session:
            with anyio.fail_after(WAIT):
                got = await session.request("env", {"names": names})
    finally:
        os.environ.pop("MCPWIRE_TEST_ALLOWED", None)
        os.environ.pop("MCPWIRE_TEST_SECRET", None)
    assert got == {
        "FOO": "bar",
        "PATH": os.environ["PATH"],
        "MCPWIRE_TEST_ALLOWED": "allowed" if inherit is not False else None,
        "MCPWIRE_TEST_SECRET": "secret" if inherit is True else None,
        "PYTHONUTF8": os.environ.get("PYTHONUTF8", "1") if inherit is True else "1",
        "PYTHONIOENCODING": (
            os.environ.get("PYTHONIOENCODING", "utf-8") if inherit is True else "utf-8"
        ),
    }


def test_client_inherit_env_refuses_a_string() -> None:
    """A str is a collection of one-letter names: almost certainly a mistake."""
    with pytest.raises(TypeError, match="inherit_env"):
        StdioClientTransport(sys.executable, ["-c", "pass"], inherit_env="PATH")


_ENV_NAMES = st.sampled_from(["PATH", "HOME", "A", "B", "C", "PYTHONUTF8", "PYTHONIOENCODING"])


@given(
    base=st.dictionaries(_ENV_NAMES, st.text(max_size=3)),
    env=st.dictionaries(_ENV_NAMES, st.none() | st.text(max_size=3)),
    inherit=st.booleans() | st.frozensets(_ENV_NAMES),
)
def test_child_environment_layers(
    base: dict[str, str], env: dict[str, str | None], inherit: bool | frozenset[str]
) -> None:
    """Every variable of the result comes from exactly one layer, the highest
    that has it: ``env`` (where ``None`` unsets), then what ``inherit_env``
    lets through from ``base``, then the UTF-8 defaults."""
    got = child_environment(env, inherit, base)
    passes = ESSENTIAL_ENV | (inherit if not isinstance(inherit, bool) else set())
    for key in {*base, *env, "PYTHONUTF8", "PYTHONIOENCODING"}:
        if key in env:
            expected = env[key]
        elif key in base and (inherit is True or key in passes):
            expected = base[key]
        else:
            expected = {"PYTHONUTF8": "1", "PYTHONIOENCODING": "utf-8"}.get(key)
        assert got.get(key) == expected, key
    assert set(got) <= {*base, *env, "PYTHONUTF8", "PYTHONIOENCODING"}


def test_child_environment_ignores_case_on_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows variable names are case-insensitive: the allowlist matches any
    case, and a configured ``Path`` replaces the inherited ``PATH`` rather than
    sitting beside it (the child would see one of the two, unpredictably)."""
    base = {"PATH": "C:\\inherited", "SystemRoot": "C:\\Windows", "Api_Key": "k", "Other": "o"}
    monkeypatch.setattr(sys, "platform", "win32")
    got = child_environment({"Path": "C:\\mine", "pythonutf8": None}, ["API_KEY"], base)
    assert got == {
        "Path": "C:\\mine",
        "SystemRoot": "C:\\Windows",
        "Api_Key": "k",
        "PYTHONIOENCODING": "utf-8",
    }
    monkeypatch.setattr(sys, "platform", "linux")
    got = child_environment({"Path": "/mine"}, ["API_KEY"], base)
    assert got["PATH"] == "C:\\inherited" and got["Path"] == "/mine" and "Api_Key" not in got


@pytest.mark.anyio
async def test_client_command_not_found(anyio_backend: str) -> None:
    name = "mcpwire-no-such-command-xyz"
    with pytest.raises(ConnectionClosed) as info:
        StdioClientTransport(name, ["--flag"])
    assert name in str(info.value)


@pytest.mark.anyio
async def test_client_command_path_not_found(tmp_path: Path, anyio_backend: str) -> None:
    missing = str(tmp_path / "nope" / "server")
    with pytest.raises(ConnectionClosed) as info:
        StdioClientTransport(missing)
    assert missing in str(info.value)


@pytest.mark.anyio
async def test_client_tolerates_junk_on_stdout(scripts: dict[str, str], anyio_backend: str) -> None:
    transport = child(scripts, "junk")
    async with Session(transport) as session:
        with anyio.fail_after(WAIT):
            assert await session.request("echo", {"x": 1}) == {"echo": {"x": 1}}
            assert await session.request("echo", {"x": 2}) == {"echo": {"x": 2}}
        assert "non-protocol" in str(transport.close_error())
        with anyio.fail_after(WAIT), pytest.raises(ConnectionClosed) as info:
            await session.request("exit3")
    text = str(info.value)
    assert "non-protocol" in text
    assert "debug: handling" in text
    assert info.value.exit_code == 3
    assert session.invalid_received == 0


@pytest.mark.anyio
async def test_client_stderr_flood_does_not_deadlock(
    scripts: dict[str, str], anyio_backend: str
) -> None:
    transport = child(scripts)
    async with Session(transport) as session:
        with anyio.fail_after(WAIT):
            assert await session.request("flood") == {"flooded": True}
            assert await session.request("echo") == {"echo": {}}
    tail = transport.stderr.text()
    assert "end of flood" in tail
    assert len(tail.encode()) <= STDERR_TAIL_BYTES
    assert len(tail.splitlines()) <= 20


@pytest.mark.anyio
async def test_client_stderr_log_mirror(
    scripts: dict[str, str], tmp_path: Path, anyio_backend: str
) -> None:
    log_path = tmp_path / "child-stderr.log"
    with open(log_path, "wb") as log:
        transport = child(scripts, stderr_log=log)
        async with Session(transport) as session:
            with anyio.fail_after(WAIT), pytest.raises(ConnectionClosed):
                await session.request("exit3")
    assert "giving up with status 3" in log_path.read_text()


@pytest.mark.anyio
async def test_client_send_after_child_exit(scripts: dict[str, str], anyio_backend: str) -> None:
    transport = child(scripts)
    try:

        async def drain() -> None:
            while True:
                await transport.receive()

        async def keep_sending() -> None:
            for _ in range(100):  # the pipe may buffer the first writes
                await transport.send(Request(2, "echo"))

        await transport.send(Request(1, "exit3"))
        with anyio.fail_after(WAIT), pytest.raises(anyio.EndOfStream):
            await drain()
        error = transport.close_error()
        assert error.exit_code == 3
        with pytest.raises((anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)):
            await keep_sending()
    finally:
        await transport.aclose()


ONE_WRITE_SERVER = r"""
import json, os, sys
for line in sys.stdin:
    msg = json.loads(line)
    token = msg["params"]["_meta"]["progressToken"]
    progress = {"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": token, "progress": 1, "total": 1}}
    result = {"jsonrpc": "2.0", "id": msg["id"], "result": {"ok": True}}
    # Progress and the response in ONE write, so they arrive in one read.
    os.write(1, (json.dumps(progress) + "\n" + json.dumps(result) + "\n").encode())
"""


@pytest.mark.anyio
async def test_progress_in_the_same_read_as_the_response_is_not_lost(tmp_path: Path) -> None:
    script = tmp_path / "one_write.py"
    script.write_text(ONE_WRITE_SERVER)
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    transport = StdioClientTransport(sys.executable, [str(script)])
    async with Session(transport) as session:
        for _ in range(20):
            seen.clear()
            with anyio.fail_after(WAIT):
                result = await session.request("work", {}, on_progress=on_progress)
            assert result == {"ok": True}
            assert seen == [1.0]


@pytest.mark.anyio
async def test_close_ends_a_pending_receive_even_when_stdout_stays_open() -> None:
    # A grandchild in its own session keeps the server's stdout open, so no end of
    # output ever arrives: closing must still end the reader's receive().
    child = (
        "import subprocess, sys, time; "
        "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(5)'], "
        "start_new_session=True); time.sleep(60)"
    )
    transport = StdioClientTransport(sys.executable, ["-c", child], shutdown_timeout=0.2)
    ended = anyio.Event()

    async def reader() -> None:
        with pytest.raises(anyio.EndOfStream):
            await transport.receive()
        ended.set()

    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            await anyio.sleep(0.3)
            await transport.aclose()
            await ended.wait()


class _PausingReader:
    """Stands in for the push-mode reader: records whether reading was paused."""

    def __init__(self) -> None:
        self.paused = False

    def pause(self) -> None:
        self.paused = True


@pytest.mark.parametrize(
    ("lines", "size", "paused"),
    [
        (200, 100, False),  # few and small: reading goes on
        (300, 100, True),  # past _READY_LIMIT messages
        (5, 1024 * 1024, True),  # past _READY_BYTES of lines: a few big messages
        (1, 12 * 1024 * 1024, True),  # one message of any allowed size gets in
    ],
)
def test_parsed_messages_waiting_for_the_session_are_bounded_in_bytes(
    lines: int, size: int, paused: bool
) -> None:
    """Messages parsed in push mode wait in a queue until the session takes them;
    past 256 of them, or 4 MiB of their lines, reading pauses, so a session that
    stops taking messages does not hold 256 messages of up to 16 MiB each."""
    from mcpwire._fdio import FDReader
    from mcpwire._stdio import _READY_BYTES, _Framed
    from mcpwire.sansio import Limits

    r, w = os.pipe()
    os.close(w)
    reader = FDReader(r, owned=True)
    framed = _Framed(reader, Limits(), tolerant=False)
    stub = _PausingReader()
    framed._reader = stub  # type: ignore[assignment]
    framed._push = True
    pad = "x" * (size - 60)
    line = b'{"jsonrpc":"2.0","method":"notifications/n","params":{"p":"%s"}}\n' % pad.encode()
    assert framed._on_data(line * lines)
    assert stub.paused is paused
    assert framed._ready_bytes == len(framed._ready) * (len(line) - 1)
    if size > _READY_BYTES:
        assert len(framed._ready) == 1  # admitted whole, then reading paused
    reader.close()


@given(
    chunks=st.lists(st.binary(max_size=300), max_size=40),
    limit=st.integers(min_value=1, max_value=600),
)
def test_the_stderr_tail_is_always_the_last_bytes(chunks: list[bytes], limit: int) -> None:
    """Whatever sizes the reads come in, the tail holds exactly the last ``limit``
    bytes: a big chunk of logs followed by a short last line keeps the logs' end
    (whole chunks were dropped once, and with them the traceback before the end)."""
    from mcpwire._stdio_client import StderrTail

    tail = StderrTail(limit)
    seen = b""
    for chunk in chunks:
        tail.append(chunk)
        seen += chunk
        assert b"".join(tail._chunks) == seen[-limit:]
        assert tail._size == len(seen[-limit:])


def test_the_stderr_tail_keeps_a_traceback_before_a_last_short_line() -> None:
    from mcpwire._stdio_client import StderrTail

    tail = StderrTail()
    tail.append(b"log line\n" * 2000 + b"Traceback ...\nRuntimeError: boom\n")
    tail.append(b"exiting\n")
    assert tail.text().splitlines()[-3:] == ["Traceback ...", "RuntimeError: boom", "exiting"]


@pytest.mark.anyio
async def test_the_read_buffer_starts_small_and_grows_once_a_read_fills_it() -> None:
    """An idle or small-message pipe costs ``FIRST_READ_CHUNK`` of resident buffer;
    a read that fills it makes it ``READ_CHUNK``, and no byte is lost either side
    of the change (both backends: push mode on asyncio, pulled reads on trio)."""
    from mcpwire._fdio import FIRST_READ_CHUNK, READ_CHUNK, FDReader

    r, w = os.pipe()
    reader = FDReader(r, owned=True)
    try:
        assert len(reader._view) == FIRST_READ_CHUNK
        os.write(w, b"small")
        with anyio.fail_after(5):
            assert await reader.read() == b"small"
        assert len(reader._view) == FIRST_READ_CHUNK
        payload = bytes(range(256)) * 1024  # 256 KiB: several full reads
        received = bytearray()

        def write_all() -> None:
            view = memoryview(payload)
            while view:
                view = view[os.write(w, view[:16384]) :]
            os.close(w)

        writer = threading.Thread(target=write_all)
        writer.start()
        with anyio.fail_after(10):
            while chunk := await reader.read():
                received += chunk
        writer.join()
        assert bytes(received) == payload
        assert len(reader._view) == READ_CHUNK
    finally:
        reader.close()
