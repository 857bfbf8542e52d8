"""The benchmark workloads, and the worker process that runs one of them.

Every workload ("case") runs in a worker process of its own
(``python benchmarks/workloads.py --worker CASE_ID``), started and driven by
``run.py``. The worker sets its case up once (imports, in-process server,
child server process, handshake, ``tools/list``, one checked call), says it is
ready, and then waits on its control channel for commands:

* ``calibrate SECONDS``: warm up for about that long; answer the measured rate;
* ``run N``: ``gc.collect()``, then time exactly ``N`` operations; answer the time;
* ``quit``: tear down (close the client, stop the child) and exit.

So the driver can interleave the cases round by round while each one keeps its
own warm process, and nothing one case imports or allocates (the reference SDK
loads pydantic, for example) slows another down. Only one worker runs at a
time; the others sit blocked on their control channel.

This module imports neither ``mcpwire`` nor ``mcp`` at the top: each case
imports what it uses, inside its setup.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SERVERS = HERE / "servers"
MCPWIRE_SERVER = str(SERVERS / "mcpwire_echo.py")
SDK_SERVER = str(SERVERS / "sdk_echo.py")
PIPE_ECHO = str(SERVERS / "pipe_echo.py")
PIPE_ECHO_ANYIO = str(SERVERS / "pipe_echo_anyio.py")

#: Concurrent callers in the "32 concurrent" cases.
CONCURRENCY = 32
MESSAGE = "hello"
ARGS = {"message": MESSAGE}
MODERN = "2026-07-28"
LEGACY = "2025-11-25"

#: A typical modern ``tools/call`` request and its result, as they look on the wire
#: (the envelope mcpwire's client sends; the result mcpwire's server sends).
REQUEST_LINE = (
    b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo",'
    b'"arguments":{"message":"hello"},"_meta":{"io.modelcontextprotocol/protocolVersion":'
    b'"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},'
    b'"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"}}}}\n'
)
LEGACY_REQUEST_LINE = (
    b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo",'
    b'"arguments":{"message":"hello"}}}\n'
)
RESPONSE_LINE = (
    b'{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"hello"}],'
    b'"structuredContent":{"result":"hello"},"isError":false,"resultType":"complete",'
    b'"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"bench-echo","version":"1.0.0"}}}}\n'
)
INITIALIZE_LINE = (
    b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}\n'
)
INITIALIZED_LINE = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n'


def child_env() -> dict[str, str]:
    """Environment additions so the servers import this checkout's mcpwire."""
    path = os.environ.get("PYTHONPATH")
    return {"PYTHONPATH": str(ROOT) + (os.pathsep + path if path else "")}


# -- the case table ------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    #: Section of the report.
    group: str
    #: What is measured (report column).
    measure: str
    #: Who does it (report column).
    impl: str
    #: "modern", "legacy" or "" (not an MCP exchange).
    era: str
    #: Factory in ``FACTORIES`` and its keyword arguments.
    setup: str
    args: dict[str, Any] = field(default_factory=dict)
    #: Id of the reference SDK case this one is compared with.
    ref: str | None = None
    #: Whether "share of the pipe-echo limit" applies (a round trip over a pipe).
    over_pipe: bool = False
    #: Unit of one operation, for the report.
    unit: str = "calls/s"


def _cases() -> list[Case]:
    out: list[Case] = []
    eras = (("modern", "auto"), ("legacy", "legacy"))

    # 1. in-memory, sequential, and 7. with 32 concurrent callers.
    for conc, group, label in (
        (1, "inmem", "tools/call echo, in-memory, sequential"),
        (CONCURRENCY, "inmem32", f"tools/call echo, in-memory, {CONCURRENCY} concurrent"),
    ):
        sfx = "" if conc == 1 else f"-c{conc}"
        for era, mode in eras:
            ref = f"inmem-sdk-{era}{sfx}"
            out.append(
                Case(
                    f"inmem-mcpwire-{era}{sfx}",
                    group,
                    label,
                    "mcpwire Client(Server)",
                    era,
                    "client",
                    {"client": "mcpwire", "server": "inproc", "mode": mode, "concurrency": conc},
                    ref=ref,
                )
            )
            out.append(
                Case(
                    ref,
                    group,
                    label,
                    "SDK Client(MCPServer)",
                    era,
                    "client",
                    {"client": "sdk", "server": "inproc", "mode": mode, "concurrency": conc},
                    ref=ref,
                )
            )
        if conc == 1:
            # The queue-based in-memory pair: a task switch per message, as the SDK's
            # legacy in-memory streams; with wire=True also a serialise/parse per message.
            for server, how in (
                ("inproc-memory", "memory_pair()"),
                ("inproc-wire", "memory_pair(wire=True)"),
            ):
                for era, mode in eras:
                    out.append(
                        Case(
                            f"inmem-mcpwire-{server[7:]}-{era}",
                            group,
                            label,
                            f"mcpwire Client over {how}",
                            era,
                            "client",
                            {"client": "mcpwire", "server": server, "mode": mode, "concurrency": 1},
                            ref=f"inmem-sdk-{era}",
                        )
                    )

    # 2. stdio, every client/server pair, and 7. 32 concurrent callers (same-implementation pairs).
    names = {"mcpwire": "mcpwire", "sdk": "SDK"}
    for conc, group, label in (
        (1, "stdio", "tools/call echo, stdio, sequential"),
        (CONCURRENCY, "stdio32", f"tools/call echo, stdio, {CONCURRENCY} concurrent"),
    ):
        sfx = "" if conc == 1 else f"-c{conc}"
        pairs = (("mcpwire", "mcpwire"), ("sdk", "sdk"), ("sdk", "mcpwire"), ("mcpwire", "sdk"))
        for era, mode in eras:
            for client, server in pairs if conc == 1 else pairs[:2]:
                out.append(
                    Case(
                        f"stdio-{client}-{server}-{era}{sfx}",
                        group,
                        label,
                        f"{names[client]} client → {names[server]} server",
                        era,
                        "client",
                        {
                            "client": client,
                            "server": f"stdio-{server}",
                            "mode": mode,
                            "concurrency": conc,
                        },
                        ref=f"stdio-sdk-sdk-{era}{sfx}",
                        over_pipe=True,
                    )
                )

    # 3. raw client (os.write/os.read, no framework) against each server.
    for era in ("modern", "legacy"):
        for server in ("mcpwire", "sdk"):
            out.append(
                Case(
                    f"raw-{server}-{era}",
                    "raw",
                    "tools/call echo, stdio, raw client",
                    f"raw client → {names[server]} server",
                    era,
                    "raw",
                    {"server": server, "era": era},
                    ref=f"raw-sdk-{era}",
                    over_pipe=True,
                )
            )

    # 4. the physical limit (as the stdio cases run: unpinned), the same pinned to show how
    # much of it is the scheduler's placement, and with an anyio loop on both ends.
    for pin, impl in (
        ("", "blocking read/write, both ends, unpinned (physical limit)"),
        ("split", "the same, pinned to two different cores"),
        ("same", "the same, both pinned to one core"),
    ):
        out.append(
            Case(
                "pipe-echo" + (f"-{pin}" if pin else ""),
                "limit",
                "pipe echo, one JSON line per round trip",
                impl,
                "",
                "pipe",
                {"pin": pin},
                over_pipe=True,
                unit="round trips/s",
            )
        )
    out.append(
        Case(
            "pipe-echo-anyio",
            "limit",
            "pipe echo, one JSON line per round trip",
            "anyio wait_readable + os.read/os.write, both ends, unpinned",
            "",
            "pipe_anyio",
            over_pipe=True,
            unit="round trips/s",
        )
    )

    # 5. the session layer and the codec.
    for conc in (1, CONCURRENCY):
        sfx = "" if conc == 1 else f"-c{conc}"
        how = "sequential" if conc == 1 else f"{conc} concurrent"
        out.append(
            Case(
                f"session-ping{sfx}",
                "layer",
                f"JSON-RPC ping, in-memory, {how}",
                "mcpwire Session pair",
                "",
                "session_ping",
                {"concurrency": conc},
                unit="round trips/s",
            )
        )
    out.append(
        Case(
            "codec-orjson",
            "layer",
            "codec: request+response, dumps and loads each",
            "orjson (codec limit)",
            "",
            "codec_orjson",
            unit="round trips/s",
        )
    )
    out.append(
        Case(
            "codec-mcpwire",
            "layer",
            "codec: request+response, dumps and loads each",
            "mcpwire.sansio serialize/parse",
            "",
            "codec_mcpwire",
            unit="round trips/s",
        )
    )
    return out


CASES: list[Case] = _cases()
CASES_BY_ID: dict[str, Case] = {c.id: c for c in CASES}


# -- runners -------------------------------------------------------------------------


class Runner:
    """Times ``n`` operations (``run``) after a one-time setup."""

    info: dict[str, Any]

    async def run(self, n: int) -> float:
        raise NotImplementedError


class CallRunner(Runner):
    """Awaits ``call()`` n times, sequentially or from ``concurrency`` tasks."""

    def __init__(
        self, call: Callable[[], Awaitable[object]], concurrency: int, info: dict[str, Any]
    ) -> None:
        self.call = call
        self.concurrency = concurrency
        self.info = info

    async def run(self, n: int) -> float:
        import anyio

        call = self.call
        if self.concurrency == 1:
            t0 = time.perf_counter()
            for _ in range(n):
                await call()
            return time.perf_counter() - t0
        per_task = n // self.concurrency

        async def caller() -> None:
            for _ in range(per_task):
                await call()

        t0 = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for _ in range(self.concurrency):
                tg.start_soon(caller)
        return time.perf_counter() - t0


class SyncRunner(Runner):
    """A synchronous loop that times itself: ``loop(n) -> seconds``."""

    def __init__(self, loop: Callable[[int], float], info: dict[str, Any]) -> None:
        self.loop = loop
        self.info = info

    async def run(self, n: int) -> float:
        return self.loop(n)


# -- factories -----------------------------------------------------------------------


def _check(text: object) -> None:
    if text != MESSAGE:
        raise RuntimeError(f"echo returned {text!r}, expected {MESSAGE!r}")


async def setup_client(
    stack: contextlib.AsyncExitStack, *, client: str, server: str, mode: str, concurrency: int
) -> Runner:
    """An MCP client (mcpwire or SDK) against an in-process or stdio server."""
    if client == "mcpwire":
        from mcpwire import Client

        if server == "inproc":
            from servers.mcpwire_echo import server as target

            c = await stack.enter_async_context(Client(target, mode=mode))
        elif server in ("inproc-memory", "inproc-wire"):
            import anyio
            from servers.mcpwire_echo import server as target

            from mcpwire import memory_pair

            client_end, server_end = memory_pair(wire=server == "inproc-wire")
            tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(tg.cancel_scope.cancel)  # runs before the group exits
            tg.start_soon(target.serve, server_end)
            c = await stack.enter_async_context(Client(client_end, mode=mode))
        else:
            script = MCPWIRE_SERVER if server == "stdio-mcpwire" else SDK_SERVER
            c = await stack.enter_async_context(
                Client.stdio(sys.executable, [script], env=child_env(), mode=mode)
            )  # type: ignore[arg-type]
        await c.list_tools()
        result = await c.call_tool("echo", ARGS)
        _check(result.text)

        def call() -> Awaitable[object]:
            return c.call_tool("echo", ARGS)

        info = {"protocol_version": c.protocol_version}
    else:
        from mcp import Client as SDKClient
        from mcp import StdioServerParameters

        if server == "inproc":
            from servers.sdk_echo import server as target

            sc = await stack.enter_async_context(SDKClient(target, mode=mode))
        else:
            script = MCPWIRE_SERVER if server == "stdio-mcpwire" else SDK_SERVER
            params = StdioServerParameters(command=sys.executable, args=[script], env=child_env())
            sc = await stack.enter_async_context(SDKClient(params, mode=mode))
        await sc.list_tools()
        sresult = await sc.call_tool("echo", ARGS)
        _check(getattr(sresult.content[0], "text", None))

        def call() -> Awaitable[object]:
            return sc.call_tool("echo", ARGS)

        info = {"protocol_version": sc.protocol_version}
    for _ in range(20):  # warm caches and lazy imports
        await call()
    return CallRunner(call, concurrency, info)


class LineChild:
    """A child process spoken to with bare os.write/os.read, one JSON line each way."""

    def __init__(self, argv: list[str]) -> None:
        env = dict(os.environ)
        env.update(child_env())
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, env=env
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.wfd = self.proc.stdin.fileno()
        self.rfd = self.proc.stdout.fileno()
        self.buf = b""

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.wfd, view) :]

    def readline(self) -> bytes:
        buf = self.buf
        while True:
            i = buf.find(b"\n")
            if i >= 0:
                self.buf = buf[i + 1 :]
                return buf[:i]
            chunk = os.read(self.rfd, 65536)
            if not chunk:
                raise EOFError(f"{self.proc.args!r} closed its stdout")
            buf += chunk

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc.stdout.close()


def raw_handshake(child: LineChild, era: str) -> None:
    if era == "legacy":
        child.send(INITIALIZE_LINE)
        answer = json.loads(child.readline())
        if "result" not in answer:
            raise RuntimeError(f"initialize failed: {answer!r}")
        child.send(INITIALIZED_LINE)


async def setup_raw(stack: contextlib.AsyncExitStack, *, server: str, era: str) -> Runner:
    """Section 3: a framework-free client loop against a server child process."""
    script = MCPWIRE_SERVER if server == "mcpwire" else SDK_SERVER
    child = LineChild([sys.executable, script])
    stack.callback(child.close)
    raw_handshake(child, era)
    template = REQUEST_LINE if era == "modern" else LEGACY_REQUEST_LINE
    child.send(template % 1)
    answer = json.loads(child.readline())
    text = answer.get("result", {}).get("content", [{}])[0].get("text")
    _check(text)
    counter = [2]
    send, readline = child.send, child.readline

    def loop(n: int) -> float:
        first = counter[0]
        t0 = time.perf_counter()
        for i in range(first, first + n):
            send(template % i)
            readline()
        elapsed = time.perf_counter() - t0
        counter[0] = first + n
        return elapsed

    loop(200)
    return SyncRunner(loop, {"protocol_version": MODERN if era == "modern" else LEGACY})


async def setup_pipe(stack: contextlib.AsyncExitStack, *, pin: str) -> Runner:
    """Section 4: the most minimal echo loop over a pipe, blocking on both ends.

    ``pin``: "" leaves placement to the scheduler; "split" pins this process and the
    child to two different cores, "same" both to one core (Linux only).
    """
    child = LineChild([sys.executable, PIPE_ECHO])
    stack.callback(child.close)
    if pin:
        if not hasattr(os, "sched_setaffinity"):
            raise RuntimeError("pinning needs os.sched_setaffinity (Linux)")
        cpus = sorted(os.sched_getaffinity(0))
        if pin == "split" and len(cpus) < 2:
            raise RuntimeError("pinning to two cores needs two usable cores")
        mine, theirs = cpus[0], cpus[1] if pin == "split" else cpus[0]
        os.sched_setaffinity(0, {mine})
        os.sched_setaffinity(child.proc.pid, {theirs})
    line = REQUEST_LINE % 1
    wfd, rfd = child.wfd, child.rfd
    write, read = os.write, os.read

    def loop(n: int) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            write(wfd, line)
            data = read(rfd, 65536)
            while not data.endswith(b"\n"):
                data += read(rfd, 65536)
        return time.perf_counter() - t0

    loop(200)
    return SyncRunner(loop, {"line_bytes": len(line)})


class _AnyioPipeRunner(Runner):
    def __init__(self, child: LineChild) -> None:
        self.child = child
        self.info = {"line_bytes": len(REQUEST_LINE % 1)}
        os.set_blocking(child.rfd, False)

    async def run(self, n: int) -> float:
        import anyio

        line = REQUEST_LINE % 1
        wfd, rfd = self.child.wfd, self.child.rfd
        write, read = os.write, os.read
        wait_readable = anyio.wait_readable
        t0 = time.perf_counter()
        for _ in range(n):
            write(wfd, line)
            data = b""
            while not data.endswith(b"\n"):
                await wait_readable(rfd)
                data += read(rfd, 65536)
        return time.perf_counter() - t0


async def setup_pipe_anyio(stack: contextlib.AsyncExitStack) -> Runner:
    """Section 4, async floor: the same echo with an anyio event loop on both ends."""
    child = LineChild([sys.executable, PIPE_ECHO_ANYIO])
    stack.callback(child.close)
    runner = _AnyioPipeRunner(child)
    await runner.run(200)
    return runner


async def setup_session_ping(stack: contextlib.AsyncExitStack, *, concurrency: int) -> Runner:
    """Section 5: bare JSON-RPC request/response over two mcpwire Sessions in memory."""
    from mcpwire import Session, memory_pair

    async def on_request(request: Any, ctx: Any) -> dict[str, Any]:
        return {}

    client_end, server_end = memory_pair()
    await stack.enter_async_context(Session(server_end, on_request=on_request))
    client = await stack.enter_async_context(Session(client_end))
    await client.request("ping")

    def call() -> Awaitable[object]:
        return client.request("ping")

    return CallRunner(call, concurrency, {})


async def setup_codec_orjson(stack: contextlib.AsyncExitStack) -> Runner:
    """Section 5: orjson dumps+loads of a typical request and response (codec limit)."""
    import orjson

    dumps, loads = orjson.dumps, orjson.loads
    request = loads(REQUEST_LINE % 7)
    response = loads(RESPONSE_LINE % 7)

    def loop(n: int) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            loads(dumps(request))
            loads(dumps(response))
        return time.perf_counter() - t0

    loop(1000)
    return SyncRunner(
        loop, {"request_bytes": len(REQUEST_LINE % 7), "response_bytes": len(RESPONSE_LINE % 7)}
    )


async def setup_codec_mcpwire(stack: contextlib.AsyncExitStack) -> Runner:
    """Section 5: the same pair through mcpwire's message layer (to_json+dumps, loads+classify)."""
    import orjson

    from mcpwire.sansio import _messages as m

    request = m.parse(REQUEST_LINE % 7)
    response = m.parse(RESPONSE_LINE % 7)
    if type(request) is not m.Request or type(response) is not m.Response:
        raise RuntimeError("the sample lines did not parse as a request and a response")
    serialize, parse = m.serialize, m.parse
    if orjson.loads(serialize(request)) != orjson.loads(REQUEST_LINE % 7):
        raise RuntimeError("mcpwire re-serialised the request differently")

    def loop(n: int) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            parse(serialize(request))
            parse(serialize(response))
        return time.perf_counter() - t0

    loop(1000)
    return SyncRunner(loop, {})


FACTORIES: dict[str, Callable[..., Awaitable[Runner]]] = {
    "client": setup_client,
    "raw": setup_raw,
    "pipe": setup_pipe,
    "pipe_anyio": setup_pipe_anyio,
    "session_ping": setup_session_ping,
    "codec_orjson": setup_codec_orjson,
    "codec_mcpwire": setup_codec_mcpwire,
}


def child_pids() -> list[int]:
    """This process's children (the server it spawned), from /proc; [] elsewhere."""
    me, found = os.getpid(), []
    with contextlib.suppress(OSError):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    with open(f"/proc/{entry}/stat", "rb") as f:
                        fields = f.read().rsplit(b")", 1)[1].split()
                    if int(fields[1]) == me:
                        found.append(int(entry))
    return found


_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def children_cpu(pids: list[int]) -> float:
    """CPU seconds (user + system) used so far by ``pids`` (10 ms resolution on Linux)."""
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError, IndexError, ValueError):
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
    return total / _TICK


# -- the worker process ----------------------------------------------------------------


class _Control:
    """The control channel: private copies of stdin/stdout; fd 1 then points at stderr."""

    def __init__(self) -> None:
        self.rfd = os.dup(0)
        self.wfd = os.dup(1)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)  # a stray print from a library cannot corrupt the channel
        self.buf = b""

    def readline(self) -> str:
        while b"\n" not in self.buf:
            chunk = os.read(self.rfd, 4096)
            if not chunk:
                return ""
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode()

    def send(self, obj: dict[str, Any]) -> None:
        data = (json.dumps(obj) + "\n").encode()
        while data:
            data = data[os.write(self.wfd, data) :]


async def _serve(case: Case, control: _Control) -> None:
    async with contextlib.AsyncExitStack() as stack:
        try:
            runner = await FACTORIES[case.setup](stack, **case.args)
        except Exception as exc:
            import traceback

            traceback.print_exc()
            control.send({"error": f"setup failed: {type(exc).__name__}: {exc}"})
            return
        children = child_pids()
        control.send({"ready": True, "info": {**runner.info, "children": len(children)}})
        while True:
            line = control.readline()
            if not line or line == "quit":
                break
            cmd, _, arg = line.partition(" ")
            try:
                if cmd == "calibrate":
                    budget, done, spent, batch = float(arg), 0, 0.0, 32
                    last = (batch, 1.0)
                    while spent < budget:
                        elapsed = await runner.run(batch)
                        done, spent, last = done + batch, spent + elapsed, (batch, elapsed)
                        if elapsed < budget / 8:
                            batch *= 2
                    control.send({"n": last[0], "elapsed": last[1], "warmup_ops": done})
                elif cmd == "run":
                    n = int(arg)
                    gc.collect()
                    cpu0, child0 = time.process_time(), children_cpu(children)
                    elapsed = await runner.run(n)
                    cpu = time.process_time() - cpu0
                    child = children_cpu(children) - child0
                    control.send({"n": n, "elapsed": elapsed, "cpu_self": cpu, "cpu_child": child})
                else:
                    control.send({"error": f"unknown command {line!r}"})
            except Exception as exc:
                import traceback

                traceback.print_exc()
                control.send({"error": f"{type(exc).__name__}: {exc}"})
                break
        control.send({"bye": True})


def worker_main(case_id: str) -> None:
    control = _Control()
    case = CASES_BY_ID.get(case_id)
    if case is None:
        control.send({"error": f"unknown case {case_id!r}"})
        return
    sys.path.insert(0, str(HERE))  # "servers.*" modules for in-process servers
    import anyio

    try:
        anyio.run(_serve, case, control)
    except BaseException as exc:  # teardown noise after the answers were sent
        if not isinstance(exc, (KeyboardInterrupt, SystemExit)):
            print(f"worker {case_id}: teardown: {type(exc).__name__}: {exc}", file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        worker_main(sys.argv[2])
    else:
        sys.exit("usage: python benchmarks/workloads.py --worker CASE_ID (run.py does this)")
