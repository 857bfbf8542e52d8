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
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import framing

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SERVERS = HERE / "servers"
MCPWIRE_SERVER = str(SERVERS / "mcpwire_echo.py")
SDK_SERVER = str(SERVERS / "sdk_echo.py")
PIPE_ECHO = str(SERVERS / "pipe_echo.py")
PIPE_ECHO_ANYIO = str(SERVERS / "pipe_echo_anyio.py")
FASTMCP_SERVER = str(SERVERS / "fastmcp_echo.py")
H11_ECHO = str(SERVERS / "h11_echo.py")
#: Canned answers on anyio + orjson (+ h11): the floor of startup time and memory.
ANYIO_FLOOR = str(SERVERS / "anyio_floor.py")
#: Set to "1" in a server's environment: its echo tool is an ``async def``.
ASYNC_TOOL_ENV = "BENCH_ASYNC_TOOL"
SERVER_SCRIPTS = {"mcpwire": MCPWIRE_SERVER, "sdk": SDK_SERVER, "fastmcp": FASTMCP_SERVER}
#: Benchmark-only virtual environments (``run.py`` creates them; git-ignored).
VENVS = HERE / ".venvs"
#: FastMCP lives in a venv of its own, so its many dependencies never touch the
#: environment mcpwire and the reference SDK are measured in.
FASTMCP_VENV = VENVS / "fastmcp"

#: Concurrent callers in the "32 concurrent" cases.
CONCURRENCY = 32
MESSAGE = "hello"
ARGS: dict[str, Any] = {"message": MESSAGE}
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
TOOLS_LIST_LINE = b'{"jsonrpc":"2.0","id":%d,"method":"tools/list"}\n'

#: The same ``tools/call`` lines in three parts, so a large message can be written
#: without copying it: ``CALL_HEAD % id``, the message, then the modern or legacy tail.
CALL_HEAD = (
    b'{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo",'
    b'"arguments":{"message":"'
)
MODERN_TAIL = b'"' + REQUEST_LINE.split(b'"hello"', 1)[1].rstrip(b"\n")
LEGACY_TAIL = b'"' + LEGACY_REQUEST_LINE.split(b'"hello"', 1)[1].rstrip(b"\n")
assert CALL_HEAD % 1 + b"hello" + MODERN_TAIL + b"\n" == REQUEST_LINE % 1
assert CALL_HEAD % 1 + b"hello" + LEGACY_TAIL + b"\n" == LEGACY_REQUEST_LINE % 1

#: Payload cases: the echo argument's size in bytes (the result carries it twice, as
#: ``content`` text and as ``structuredContent``).
PAYLOADS = {"1MB": 1_000_000, "10MB": 10_000_000}
#: Message size limit given to mcpwire's transports in the payload cases (the default,
#: 16 MiB, is less than a 10 MB echo result).
MAX_SIZE = 64 * 1024 * 1024
HTTP_ACCEPT = "application/json, text/event-stream"


def payload_text(size: int) -> str:
    """An ASCII string of ``size`` characters (no JSON escaping needed)."""
    unit = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_"
    return (unit * (size // len(unit) + 1))[:size]


def venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def python_for(impl: str) -> str:
    """The interpreter that runs ``impl``'s workers and servers."""
    return str(venv_python(FASTMCP_VENV)) if impl == "fastmcp" else sys.executable


def child_env(async_tool: bool = False) -> dict[str, str]:
    """Environment additions so the servers import this checkout's mcpwire;
    ``async_tool``: the server's echo tool is an ``async def``."""
    path = os.environ.get("PYTHONPATH")
    env = {"PYTHONPATH": str(ROOT) + (os.pathsep + path if path else "")}
    if async_tool:
        env[ASYNC_TOOL_ENV] = "1"
    return env


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
    #: The physical limit this case is compared with (a key of ``LIMIT_CASES``) or ""
    #: (none).
    limit: str = ""
    #: Unit of one operation, for the report.
    unit: str = "calls/s"
    #: Operations per run are a multiple of this (32 concurrent callers share them).
    step: int = CONCURRENCY
    #: Payload cases: the raw-client case with the same payload and transport.
    raw_ref: str | None = None
    #: "fastmcp": the worker runs in the FastMCP venv.
    venv: str = ""

    @property
    def over_pipe(self) -> bool:
        return self.limit == "pipe"


#: Each ``Case.limit`` and the case that measures it: the pipe-echo rate, the h11-echo
#: rate, a plain ``bytes.split`` of the framing stream (whole, and in small chunks).
LIMIT_CASES = {
    "pipe": "pipe-echo",
    "h11": "h11-echo",
    "ndjson": "framing-ndjson-split-whole",
    "ndjson-chunks": f"framing-ndjson-split-{framing.CHUNK}",
}


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
            out.append(
                Case(
                    f"inmem-fastmcp-{era}{sfx}",
                    group,
                    label,
                    "FastMCP Client(FastMCP)",
                    era,
                    "client",
                    {"client": "fastmcp", "server": "inproc", "mode": mode, "concurrency": conc},
                    ref=ref,
                    venv="fastmcp",
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
    names = {"mcpwire": "mcpwire", "sdk": "SDK", "fastmcp": "FastMCP"}
    #: Same-implementation pairs first (they also run with 32 concurrent callers).
    pairs = (
        ("mcpwire", "mcpwire"),
        ("sdk", "sdk"),
        ("fastmcp", "fastmcp"),
        ("sdk", "mcpwire"),
        ("mcpwire", "sdk"),
    )

    def pair_cases(transport: str, title: str, limit: str) -> None:
        """Every pair over ``transport``, sequential and (same-implementation pairs) concurrent."""
        for conc, group, label in (
            (1, transport, f"tools/call echo, {title}, sequential"),
            (CONCURRENCY, f"{transport}32", f"tools/call echo, {title}, {CONCURRENCY} concurrent"),
        ):
            sfx = "" if conc == 1 else f"-c{conc}"
            for era, mode in eras:
                for client, server in pairs if conc == 1 else pairs[:3]:
                    out.append(
                        Case(
                            f"{transport}-{client}-{server}-{era}{sfx}",
                            group,
                            label,
                            f"{names[client]} client → {names[server]} server",
                            era,
                            "client",
                            {
                                "client": client,
                                "server": f"{transport}-{server}",
                                "mode": mode,
                                "concurrency": conc,
                            },
                            ref=f"{transport}-sdk-sdk-{era}{sfx}",
                            limit=limit,
                            venv="fastmcp" if client == "fastmcp" else "",
                        )
                    )

    pair_cases("stdio", "stdio", "pipe")

    # 8. streamable HTTP (the client's worker starts the server as a child process),
    # every pair, 32 concurrent callers (same-implementation pairs), a raw client, and
    # the h11-echo limit.
    pair_cases("http", "streamable HTTP", "h11")
    for era in ("modern", "legacy"):
        for server in ("mcpwire", "sdk", "fastmcp"):
            out.append(
                Case(
                    f"http-raw-{server}-{era}",
                    "httpraw",
                    "tools/call echo, streamable HTTP, raw client",
                    f"raw client → {names[server]} server",
                    era,
                    "raw_http",
                    {"server": server, "era": era},
                    ref=f"http-raw-sdk-{era}",
                    limit="h11",
                )
            )
    out.append(
        Case(
            "h11-echo",
            "httplimit",
            "HTTP/1.1 keep-alive POST echo, raw socket client",
            "blocking h11 server, one connection (physical limit)",
            "",
            "h11_echo",
            limit="h11",
            unit="round trips/s",
        )
    )
    out.append(
        Case(
            "h11-pair",
            "httplimit",
            "HTTP/1.1 keep-alive POST echo, raw socket client",
            "blocking h11 client → blocking h11 server (pair limit)",
            "",
            "h11_pair",
            limit="h11",
            unit="round trips/s",
        )
    )
    out.append(
        Case(
            "h11-anyio-pair",
            "httplimit",
            "HTTP/1.1 keep-alive POST echo, raw socket client",
            "anyio + h11 client → anyio + h11 server, canned answers (event-loop pair floor)",
            "",
            "h11_anyio_pair",
            limit="h11",
            unit="round trips/s",
        )
    )

    # 9. payload scaling: one large string argument, echoed back.
    for transport in ("stdio", "http"):
        for size_name, size in PAYLOADS.items():
            where = f"{transport}-{size_name}"
            for who, impl in (
                ("mcpwire", "mcpwire client → mcpwire server"),
                ("sdk", "SDK client → SDK server"),
                ("raw-mcpwire", "raw client → mcpwire server"),
                ("raw-sdk", "raw client → SDK server"),
            ):
                raw = who.startswith("raw-")
                server = who[4:] if raw else who
                args: dict[str, Any] = {"payload": size}
                if raw:
                    args.update(server=server, era="modern")
                else:
                    args.update(client=who, server=f"{transport}-{who}", mode="auto", concurrency=1)
                out.append(
                    Case(
                        f"payload-{where}-{who}",
                        "payload",
                        f"echo {size_name} argument, {transport}",
                        impl,
                        "modern",
                        ("raw" if transport == "stdio" else "raw_http") if raw else "client",
                        args,
                        ref=f"payload-{where}-{'raw-sdk' if raw else 'sdk'}",
                        unit="calls/s",
                        step=1,
                        raw_ref=f"payload-{where}-raw-{server}",
                    )
                )

    # 3. raw client (os.write/os.read, no framework) against each server, and 11. the
    # same and the raw HTTP client with the echo tool an ``async def`` on both servers.
    for prefix, group, measure, setup, limit, async_tool in (
        ("raw", "raw", "tools/call echo, stdio, raw client", "raw", "pipe", False),
        (
            "async-stdio-raw",
            "async",
            "tools/call async echo, stdio, raw client",
            "raw",
            "pipe",
            True,
        ),
        (
            "async-http-raw",
            "async",
            "tools/call async echo, streamable HTTP, raw client",
            "raw_http",
            "h11",
            True,
        ),
    ):
        for era in ("modern", "legacy"):
            for server in ("mcpwire", "sdk"):
                args = {"server": server, "era": era}
                if async_tool:
                    args["async_tool"] = True
                out.append(
                    Case(
                        f"{prefix}-{server}-{era}",
                        group,
                        measure,
                        f"raw client → {names[server]} server",
                        era,
                        setup,
                        args,
                        ref=f"{prefix}-sdk-{era}",
                        limit=limit,
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
                limit="pipe",
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
            limit="pipe",
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
            ref="codec-sdk",
            unit="round trips/s",
        )
    )
    out.append(
        Case(
            "codec-sdk",
            "layer",
            "codec: request+response, dumps and loads each",
            "SDK (pydantic) model_dump_json/validate_json, as its stdio transports",
            "",
            "codec_sdk",
            ref="codec-sdk",
            unit="round trips/s",
        )
    )

    # 5b. framing: a stream of messages decoded whole and in small chunks (framing.py).
    framers = (
        ("ndjson", "split", "bytes.split on newlines (framing limit)", None),
        ("ndjson", "mcpwire", "mcpwire NDJSONReader", None),
        ("ndjson", "mcpwire+parse", "mcpwire NDJSONReader + parse", "sdk+parse"),
        ("ndjson", "sdk+parse", "bytes.split + SDK message parser (pydantic)", "sdk+parse"),
        ("sse", "sdk", "SDK's SSE reader (httpx2 EventSource)", "sdk"),
        ("sse", "mcpwire", "mcpwire SSEDecoder", "sdk"),
    )
    for chunk, how in ((0, "whole"), (framing.CHUNK, f"in {framing.CHUNK}-byte chunks")):
        sfx = "whole" if chunk == 0 else str(chunk)
        for kind, impl, label, ref in framers:
            out.append(
                Case(
                    f"framing-{kind}-{impl}-{sfx}",
                    "framing",
                    f"{kind} decoding, {framing.STREAM_MESSAGES} messages, {how}",
                    label,
                    "",
                    "framing",
                    {"kind": kind, "impl": impl, "chunk": chunk},
                    ref=f"framing-{kind}-{ref}-{sfx}" if ref else None,
                    limit=("ndjson" if chunk == 0 else "ndjson-chunks") if kind == "ndjson" else "",
                    unit="messages/s",
                    step=framing.STREAM_MESSAGES,
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


def _check(text: object, expected: str = MESSAGE) -> None:
    if text != expected:
        shown = f"{text!r}"[:80] if text is not None else "None"
        raise RuntimeError(f"echo returned {shown}, expected {expected[:40]!r} ({len(expected)})")


async def setup_client(
    stack: contextlib.AsyncExitStack,
    *,
    client: str,
    server: str,
    mode: str,
    concurrency: int,
    payload: int = 0,
) -> Runner:
    """An MCP client (mcpwire, SDK or FastMCP) against an in-process, stdio or HTTP server."""
    kind, _, impl = server.partition("-")
    url = ""
    if kind == "http":
        child = HTTPChild([python_for(impl), SERVER_SCRIPTS[impl], "http"])
        stack.callback(child.close)
        child.wait_ready()
        url = f"http://127.0.0.1:{child.port}/mcp"
    script = SERVER_SCRIPTS.get(impl, "")
    args = {"message": payload_text(payload)} if payload else ARGS
    expected = args["message"]
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
        elif kind == "http":
            options: dict[str, Any] = {}
            if payload:
                from mcpwire.sansio import Limits

                options = {
                    "max_body_size": MAX_SIZE,
                    "max_event_size": MAX_SIZE,
                    "limits": Limits(max_size=MAX_SIZE),
                }
            c = await stack.enter_async_context(Client.http(url, mode=mode, **options))
        elif payload:
            from mcpwire import StdioClientTransport
            from mcpwire.sansio import Limits

            def spawn() -> StdioClientTransport:
                return StdioClientTransport(
                    sys.executable,
                    [script],
                    env=child_env(),  # type: ignore[arg-type]
                    limits=Limits(max_size=MAX_SIZE),
                )

            c = await stack.enter_async_context(Client(spawn, mode=mode))
        else:
            c = await stack.enter_async_context(
                Client.stdio(sys.executable, [script], env=child_env(), mode=mode)  # type: ignore[arg-type]
            )
        await c.list_tools()
        result = await c.call_tool("echo", args)
        _check(result.text, expected)

        def call() -> Awaitable[object]:
            return c.call_tool("echo", args)

        info = {"protocol_version": c.protocol_version}
    elif client == "sdk":
        from mcp import Client as SDKClient
        from mcp import StdioServerParameters

        if server == "inproc":
            from servers.sdk_echo import server as target

            sc = await stack.enter_async_context(SDKClient(target, mode=mode))
        elif kind == "http":
            sc = await stack.enter_async_context(SDKClient(url, mode=mode))
        else:
            params = StdioServerParameters(command=sys.executable, args=[script], env=child_env())
            sc = await stack.enter_async_context(SDKClient(params, mode=mode))
        await sc.list_tools()
        sresult = await sc.call_tool("echo", args)
        _check(getattr(sresult.content[0], "text", None), expected)

        def call() -> Awaitable[object]:
            return sc.call_tool("echo", args)

        info = {"protocol_version": sc.protocol_version}
    else:
        from fastmcp import Client as FastMCPClient

        if server == "inproc":
            from servers.fastmcp_echo import server as ftarget

            fc = FastMCPClient(ftarget, mode=mode)
        elif kind == "http":
            fc = FastMCPClient(url, mode=mode)
        else:
            from fastmcp.client.transports import PythonStdioTransport

            transport = PythonStdioTransport(script, env=child_env(), python_cmd=sys.executable)
            fc = FastMCPClient(transport, mode=mode)
        fc = await stack.enter_async_context(fc)
        await fc.list_tools()
        fresult = await fc.call_tool("echo", args)
        _check(getattr(fresult.content[0], "text", None), expected)

        def call() -> Awaitable[object]:
            return fc.call_tool("echo", args)

        info = {"protocol_version": fc.protocol_version}
    for _ in range(2 if payload else 20):  # warm caches and lazy imports
        await call()
    return CallRunner(call, concurrency, info)


class LineChild:
    """A child process spoken to with bare os.write/os.read, one JSON line each way."""

    def __init__(self, argv: list[str], *, async_tool: bool = False) -> None:
        env = dict(os.environ)
        env.update(child_env(async_tool))
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

    def readline_large(self) -> bytearray:
        """``readline`` for long lines: reads into one growing buffer (no per-chunk
        allocation, no re-copying), searching only the bytes just read."""
        out = bytearray(max(1 << 22, 2 * len(self.buf)))
        out[: len(self.buf)] = self.buf
        got, start = len(self.buf), 0
        while True:
            i = out.find(b"\n", start, got)
            if i >= 0:
                self.buf = bytes(out[i + 1 : got])
                del out[i:]
                return out
            start = got
            if got == len(out):
                out.extend(bytes(len(out)))
            k = os.readv(self.rfd, [memoryview(out)[got:]])
            if not k:
                raise EOFError(f"{self.proc.args!r} closed its stdout")
            got += k

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


def _result_text(answer: dict[str, Any]) -> object:
    return answer.get("result", {}).get("content", [{}])[0].get("text")


async def setup_raw(
    stack: contextlib.AsyncExitStack,
    *,
    server: str,
    era: str,
    payload: int = 0,
    async_tool: bool = False,
) -> Runner:
    """Section 3: a framework-free client loop against a server child process."""
    child = LineChild([python_for(server), SERVER_SCRIPTS[server]], async_tool=async_tool)
    stack.callback(child.close)
    raw_handshake(child, era)
    info = {"protocol_version": MODERN if era == "modern" else LEGACY}
    if payload:
        return _raw_payload_runner(child, era, payload, info)
    template = REQUEST_LINE if era == "modern" else LEGACY_REQUEST_LINE
    child.send(template % 1)
    _check(_result_text(json.loads(child.readline())))
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
    return SyncRunner(loop, info)


def _raw_payload_runner(child: LineChild, era: str, size: int, info: dict[str, Any]) -> Runner:
    """The raw stdio client with a large message: written in three parts, no copies."""
    message = payload_text(size)
    body = message.encode()
    tail = (MODERN_TAIL if era == "modern" else LEGACY_TAIL) + b"\n"
    send, readline = child.send, child.readline_large
    counter = [1]

    def exchange() -> bytes:
        send(CALL_HEAD % counter[0])
        send(body)
        send(tail)
        counter[0] += 1
        return readline()

    _check(_result_text(json.loads(exchange())), message)

    def loop(n: int) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            exchange()
        return time.perf_counter() - t0

    loop(1)
    return SyncRunner(loop, info)


# -- HTTP: server children, a raw client, the h11-echo limit ---------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HTTPChild:
    """A server child process listening on a free port: ``argv + [PORT]``."""

    def __init__(self, argv: list[str], *, stderr: Any = None, async_tool: bool = False) -> None:
        env = dict(os.environ)
        env.update(child_env(async_tool))
        self.port = free_port()
        self.proc = subprocess.Popen(
            [*argv, str(self.port)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=env,
        )

    def wait_ready(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.proc.args!r} exited ({self.proc.returncode})")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.proc.args!r} did not listen within {timeout} s")
            time.sleep(0.05)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class RawHTTP:
    """A framework-free HTTP/1.1 keep-alive client on a plain blocking socket.

    ``post`` writes one POST (a pre-built head, then the body) and reads the
    response: the status line and headers, then a ``Content-Length`` body or a
    chunked one, as it comes (no SSE parsing: ``decode`` does that, off the clock).
    """

    def __init__(self, port: int) -> None:
        self.port = port
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def close(self) -> None:
        self.sock.close()

    def reconnect_if_closed(self) -> None:
        """Open a new connection if the server closed the idle one (uvicorn does after
        5 s); a legacy session outlives its connections. Called before each timed run."""
        import select

        readable, _, _ = select.select([self.sock], [], [], 0)
        if readable and not self.sock.recv(1, socket.MSG_PEEK):
            self.sock.close()
            self.sock = socket.create_connection(("127.0.0.1", self.port))
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.buf = b""

    def head(self, headers: list[tuple[str, str]]) -> bytes:
        """The request head up to (not including) the Content-Length line."""
        lines = [
            "POST /mcp HTTP/1.1",
            f"Host: 127.0.0.1:{self.port}",
            "Content-Type: application/json",
            f"Accept: {HTTP_ACCEPT}",
            *(f"{k}: {v}" for k, v in headers),
            "",
        ]
        return "\r\n".join(lines).encode("ascii")

    def send(self, head: bytes, parts: list[bytes]) -> None:
        size = sum(len(p) for p in parts)
        first = head + b"Content-Length: %d\r\n\r\n" % size
        if size < 65536:
            self.sock.sendall(first + b"".join(parts))
        else:
            self.sock.sendall(first)
            for part in parts:
                self.sock.sendall(part)

    def post(
        self, head: bytes, parts: list[bytes]
    ) -> tuple[int, dict[str, str], bytes | bytearray]:
        self.send(head, parts)
        return self.response()

    def _fill(self, buf: bytes) -> bytes:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise EOFError("the server closed the connection")
        return buf + chunk

    def _exact(self, buf: bytes, n: int) -> tuple[bytes | bytearray, bytes]:
        if len(buf) >= n:
            return buf[:n], buf[n:]
        out = bytearray(n)
        out[: len(buf)] = buf
        view, got = memoryview(out), len(buf)
        while got < n:
            k = self.sock.recv_into(view[got:], n - got)
            if not k:
                raise EOFError("the server closed the connection")
            got += k
        return out, b""

    def response(self) -> tuple[int, dict[str, str], bytes | bytearray]:
        buf = self.buf
        while (end := buf.find(b"\r\n\r\n")) < 0:
            buf = self._fill(buf)
        lines = buf[:end].decode("latin-1").split("\r\n")
        buf = buf[end + 4 :]
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        body: bytes | bytearray = b""
        if "content-length" in headers:
            body, buf = self._exact(buf, int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            parts: list[bytes | bytearray] = []
            while True:
                while (i := buf.find(b"\r\n")) < 0:
                    buf = self._fill(buf)
                size = int(buf[:i].split(b";", 1)[0], 16)
                buf = buf[i + 2 :]
                if size == 0:  # no trailers expected: the last CRLF
                    while len(buf) < 2:
                        buf = self._fill(buf)
                    buf = buf[2:]
                    break
                data, buf = self._exact(buf, size + 2)
                parts.append(data[:-2])
            body = parts[0] if len(parts) == 1 else b"".join(parts)
        elif status >= 200 and status not in (204, 304):
            raise RuntimeError(f"HTTP {status} without a length: not supported here")
        self.buf = buf
        return status, headers, body

    @staticmethod
    def decode(headers: dict[str, str], body: bytes | bytearray) -> dict[str, Any]:
        """The JSON-RPC response in a JSON or SSE body (the last ``data`` with an id)."""
        if headers.get("content-type", "").startswith("text/event-stream"):
            found: dict[str, Any] = {}
            for event in bytes(body).replace(b"\r\n", b"\n").split(b"\n\n"):
                lines = event.split(b"\n")
                data = b"\n".join(x[5:].lstrip(b" ") for x in lines if x.startswith(b"data:"))
                if data.strip():
                    message = json.loads(data)
                    if "id" in message:
                        found = message
            return found
        answer: dict[str, Any] = json.loads(body)
        return answer


def http_handshake(raw: RawHTTP, era: str) -> list[tuple[str, str]]:
    """The headers every tools/call carries: modern routing headers, or (legacy) the
    session from an ``initialize`` and ``notifications/initialized``."""
    if era == "modern":
        return [
            ("Mcp-Method", "tools/call"),
            ("Mcp-Name", "echo"),
            ("MCP-Protocol-Version", MODERN),
        ]
    status, headers, body = raw.post(raw.head([]), [INITIALIZE_LINE.rstrip()])
    answer = RawHTTP.decode(headers, body)
    session = headers.get("mcp-session-id")
    if status != 200 or "result" not in answer or not session:
        raise RuntimeError(f"initialize failed: HTTP {status}, {answer!r}")
    hdrs = [("Mcp-Session-Id", session), ("MCP-Protocol-Version", LEGACY)]
    status, _, body = raw.post(raw.head(hdrs), [INITIALIZED_LINE.rstrip()])
    if status != 202:
        raise RuntimeError(f"notifications/initialized: HTTP {status} {bytes(body)[:200]!r}")
    return hdrs


async def setup_raw_http(
    stack: contextlib.AsyncExitStack,
    *,
    server: str,
    era: str,
    payload: int = 0,
    async_tool: bool = False,
) -> Runner:
    """Section 8: a framework-free HTTP client loop against a server child process."""
    child = HTTPChild([python_for(server), SERVER_SCRIPTS[server], "http"], async_tool=async_tool)
    stack.callback(child.close)
    child.wait_ready()
    raw = RawHTTP(child.port)
    stack.callback(raw.close)
    head = raw.head(http_handshake(raw, era))
    message = payload_text(payload) if payload else MESSAGE
    body = message.encode()
    tail = MODERN_TAIL if era == "modern" else LEGACY_TAIL
    post = raw.post
    status, headers, answer = post(head, [CALL_HEAD % 1, body, tail])
    if status != 200:
        raise RuntimeError(f"tools/call: HTTP {status} {bytes(answer)[:200]!r}")
    _check(_result_text(RawHTTP.decode(headers, answer)), message)
    counter = [2]

    def loop(n: int) -> float:
        raw.reconnect_if_closed()
        first = counter[0]
        t0 = time.perf_counter()
        for i in range(first, first + n):
            post(head, [CALL_HEAD % i, body, tail])
        elapsed = time.perf_counter() - t0
        counter[0] = first + n
        return elapsed

    loop(1 if payload else 200)
    return SyncRunner(loop, {"protocol_version": MODERN if era == "modern" else LEGACY})


async def setup_h11_echo(stack: contextlib.AsyncExitStack) -> Runner:
    """Section 8, the limit: the raw client's modern POST against a bare h11 echo server."""
    child = HTTPChild([sys.executable, H11_ECHO])
    stack.callback(child.close)
    child.wait_ready()
    raw = RawHTTP(child.port)
    stack.callback(raw.close)
    head = raw.head(http_handshake(raw, "modern"))
    line = REQUEST_LINE.rstrip() % 1
    status, _, answer = raw.post(head, [line])
    if status != 200 or answer != line:
        raise RuntimeError(f"h11 echo: HTTP {status} {bytes(answer)[:200]!r}")
    post = raw.post

    def loop(n: int) -> float:
        raw.reconnect_if_closed()
        t0 = time.perf_counter()
        for _ in range(n):
            post(head, [line])
        return time.perf_counter() - t0

    loop(200)
    return SyncRunner(loop, {"request_bytes": len(line)})


def h11_call_headers(port: int, body: bytes) -> list[tuple[str, str]]:
    """The headers of a modern ``tools/call`` POST, as mcpwire's client sends them."""
    return [
        ("Host", f"127.0.0.1:{port}"),
        ("Content-Type", "application/json"),
        ("Accept", HTTP_ACCEPT),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "echo"),
        ("MCP-Protocol-Version", MODERN),
        ("Content-Length", str(len(body))),
    ]


async def setup_h11_pair(stack: contextlib.AsyncExitStack) -> Runner:
    """Section 8, the pair limit: an h11 client on a blocking socket against the h11 echo.

    What any client and server that both parse HTTP/1.1 with h11 can reach together:
    the client frames each modern ``tools/call`` POST (the headers mcpwire's client
    sends) with ``h11.Connection(CLIENT)`` and reads the answer back through it, with
    no event loop and no JSON work on either side.
    """
    import h11

    child = HTTPChild([sys.executable, H11_ECHO])
    stack.callback(child.close)
    child.wait_ready()
    sock = socket.create_connection(("127.0.0.1", child.port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    stack.callback(sock.close)
    line = REQUEST_LINE.rstrip() % 1
    headers = h11_call_headers(child.port, line)
    http = h11.Connection(h11.CLIENT)
    recv, sendall = sock.recv, sock.sendall

    def call() -> bytes:
        request = h11.Request(method="POST", target="/mcp", headers=headers)
        sendall(http.send(request) + http.send(h11.Data(data=line)) + http.send(h11.EndOfMessage()))
        body = b""
        while True:
            event = http.next_event()
            if event is h11.NEED_DATA:
                http.receive_data(recv(65536))
            elif type(event) is h11.Data:
                body += event.data
            elif type(event) is h11.EndOfMessage:
                http.start_next_cycle()
                return body
            elif type(event) is not h11.Response:
                raise RuntimeError(f"h11 pair: unexpected {event!r}")

    if call() != line:
        raise RuntimeError("h11 pair: the echo differs from the request body")

    def loop(n: int) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            call()
        return time.perf_counter() - t0

    loop(200)
    return SyncRunner(loop, {"request_bytes": len(line)})


async def setup_h11_anyio_pair(stack: contextlib.AsyncExitStack) -> Runner:
    """Section 8, the event-loop pair floor: what a client and a server that each run
    an anyio event loop and parse HTTP/1.1 with h11 reach together with no MCP at all.

    The client is the h11 pair's, on anyio's TCP stream in this worker's loop; the
    server is ``anyio_floor.py`` (anyio + orjson + h11, canned answers). Both sides
    pay what mcpwire's HTTP pair pays before any MCP work: an event loop each, h11
    framing each way, one ``orjson`` parse on the server and one on the client.
    """
    import anyio
    import h11
    import orjson

    child = HTTPChild([sys.executable, ANYIO_FLOOR, "http"])
    stack.callback(child.close)
    child.wait_ready()
    stream = await anyio.connect_tcp("127.0.0.1", child.port)
    stack.push_async_callback(stream.aclose)
    line = REQUEST_LINE.rstrip() % 1
    headers = h11_call_headers(child.port, line)
    http = h11.Connection(h11.CLIENT)

    async def call() -> object:
        request = h11.Request(method="POST", target="/mcp", headers=headers)
        await stream.send(
            http.send(request) + http.send(h11.Data(data=line)) + http.send(h11.EndOfMessage())
        )
        body = b""
        while True:
            event = http.next_event()
            if event is h11.NEED_DATA:
                http.receive_data(await stream.receive())
            elif type(event) is h11.Data:
                body += event.data
            elif type(event) is h11.EndOfMessage:
                http.start_next_cycle()
                return orjson.loads(body)
            elif type(event) is not h11.Response:
                raise RuntimeError(f"h11 anyio pair: unexpected {event!r}")

    answer = await call()
    if not isinstance(answer, dict) or "hello" not in str(answer.get("result")):
        raise RuntimeError(f"h11 anyio pair: unexpected answer {answer!r}")
    return CallRunner(call, 1, {"request_bytes": len(line)})


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


async def setup_codec_sdk(stack: contextlib.AsyncExitStack) -> Runner:
    """Section 5: the same pair through the reference SDK's codec (pydantic), as its stdio
    transports use it: ``model_dump_json(by_alias=True, exclude_unset=True)`` out,
    ``jsonrpc_message_adapter.validate_json`` in."""
    from mcp import types

    validate = types.jsonrpc_message_adapter.validate_json
    request = validate(REQUEST_LINE % 7, by_name=False)
    response = validate(RESPONSE_LINE % 7, by_name=False)
    if type(request).__name__ != "JSONRPCRequest" or type(response).__name__ != "JSONRPCResponse":
        raise RuntimeError("the sample lines did not parse as a request and a response")

    def loop(n: int) -> float:
        t0 = time.perf_counter()
        for _ in range(n):
            validate(request.model_dump_json(by_alias=True, exclude_unset=True), by_name=False)
            validate(response.model_dump_json(by_alias=True, exclude_unset=True), by_name=False)
        return time.perf_counter() - t0

    loop(1000)
    return SyncRunner(loop, {})


async def setup_framing(
    stack: contextlib.AsyncExitStack, *, kind: str, impl: str, chunk: int
) -> Runner:
    """Section 5b: one framer decoding a stream of messages (see framing.py)."""
    loop, info = framing.loop_for(kind, impl, chunk, REQUEST_LINE, RESPONSE_LINE)
    loop(framing.STREAM_MESSAGES * 5)
    return SyncRunner(loop, info)


FACTORIES: dict[str, Callable[..., Awaitable[Runner]]] = {
    "client": setup_client,
    "raw": setup_raw,
    "raw_http": setup_raw_http,
    "h11_echo": setup_h11_echo,
    "h11_pair": setup_h11_pair,
    "h11_anyio_pair": setup_h11_anyio_pair,
    "pipe": setup_pipe,
    "pipe_anyio": setup_pipe_anyio,
    "session_ping": setup_session_ping,
    "codec_orjson": setup_codec_orjson,
    "codec_mcpwire": setup_codec_mcpwire,
    "codec_sdk": setup_codec_sdk,
    "framing": setup_framing,
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
                    budget, done, spent, batch = float(arg), 0, 0.0, case.step
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
