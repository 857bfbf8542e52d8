"""Profile mcpwire's tools/call echo loop with cProfile (a diagnostic, not a benchmark).

Usage::

    python benchmarks/profile_echo.py inmem         # Client(Server) in-process, modern era
    python benchmarks/profile_echo.py inmem-legacy  # the same, legacy era
    python benchmarks/profile_echo.py stdio-client  # client process, mcpwire -> mcpwire, stdio
    python benchmarks/profile_echo.py stdio-server  # mcpwire server process, raw client driving
    python benchmarks/profile_echo.py codec         # mcpwire.sansio serialize/parse, req+resp
    python benchmarks/profile_echo.py http-client   # client process, mcpwire -> mcpwire, HTTP
    python benchmarks/profile_echo.py http-server   # mcpwire HTTP server, raw HTTP client driving

Options: ``-n CALLS`` (default 20000), ``--top N`` (default 15), ``--sort`` (a pstats key,
default ``cumulative``), ``--match REGEX`` (which entries to list; default ``mcpwire|anyio``,
use ``.`` for all), ``--legacy`` (stdio and HTTP cases: the legacy era), ``--payload BYTES``
(stdio-client, http-client: echo a string of that size instead of "hello"; use a small
``-n``), ``--save FILE`` (keep the raw profile for snakeviz, pstats, ...).

cProfile adds a roughly constant cost per Python call, so it overstates code that makes
many small calls; read the numbers as "where the calls go", and confirm a suspected win
with ``run.py``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import workloads  # noqa: E402

ARGS = workloads.ARGS


def _print(stats: pstats.Stats, sort: str, match: str, top: int, title: str, n: int) -> None:
    stream = io.StringIO()
    stats.stream = stream  # type: ignore[attr-defined]
    if match == ".":
        stats.strip_dirs()
    stats.sort_stats(sort).print_stats(match, top)
    print(f"== {title}: {n} calls; top {top} by {sort} matching {match!r}")
    print(stream.getvalue())


async def _client_loop(mode: str, n: int, where: str, payload: int = 0) -> cProfile.Profile:
    from servers.mcpwire_echo import server

    from mcpwire import Client, StdioClientTransport
    from mcpwire.sansio import Limits

    limits = Limits(max_size=workloads.MAX_SIZE)
    args = {"message": workloads.payload_text(payload)} if payload else ARGS
    http = None
    if where == "stdio":
        target = Client(
            lambda: StdioClientTransport(
                sys.executable,
                [workloads.MCPWIRE_SERVER],
                env=workloads.child_env(),  # type: ignore[arg-type]
                limits=limits,
            ),
            mode=mode,
        )
    elif where == "http":
        http = workloads.HTTPChild([sys.executable, workloads.MCPWIRE_SERVER, "http"])
        http.wait_ready()
        url = f"http://127.0.0.1:{http.port}/mcp"
        big = workloads.MAX_SIZE
        target = Client.http(url, mode=mode, max_body_size=big, max_event_size=big, limits=limits)
    else:
        target = Client(server, mode=mode)
    profiler = cProfile.Profile()
    try:
        async with target as client:
            await client.list_tools()
            for _ in range(2 if payload else 200):
                await client.call_tool("echo", args)
            t0 = time.perf_counter()
            profiler.enable()
            for _ in range(n):
                await client.call_tool("echo", args)
            profiler.disable()
            elapsed = time.perf_counter() - t0
    finally:
        if http is not None:
            http.close()
    print(f"{n / elapsed:,.1f} calls/s under the profiler ({client.protocol_version})")
    return profiler


def profile_http_server(
    n: int, legacy: bool, save: str | None, script: str = workloads.MCPWIRE_SERVER
) -> pstats.Stats:
    out = save or os.path.join(tempfile.mkdtemp(), "http-server.prof")
    # The floor ends with a KeyboardInterrupt traceback on SIGINT: not worth showing.
    quiet = subprocess.DEVNULL if script != workloads.MCPWIRE_SERVER else None
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # A background job ignores SIGINT, and so would the child (an ignored signal
        # stays ignored across exec, and Python then installs no KeyboardInterrupt
        # handler): the floor server, which handles no signal itself, would never
        # stop. A handler in this process is reset to the default in the child.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    child = workloads.HTTPChild(
        [sys.executable, "-m", "cProfile", "-o", out, script, "http"], stderr=quiet
    )
    child.wait_ready()
    raw = workloads.RawHTTP(child.port)
    era = "legacy" if legacy else "modern"
    head = raw.head(workloads.http_handshake(raw, era))
    tail = workloads.LEGACY_TAIL if legacy else workloads.MODERN_TAIL
    t0 = time.perf_counter()
    for i in range(1, n + 1):
        raw.post(head, [workloads.CALL_HEAD % i, b"hello", tail])
    elapsed = time.perf_counter() - t0
    raw.close()
    # SIGINT: cProfile writes its file however the script ends (a bare server
    # that handles no signal ends with KeyboardInterrupt). Sent again every 5 s
    # while the server lives: once, the floor server outlived a single SIGINT.
    try:
        for _ in range(6):
            child.proc.send_signal(signal.SIGINT)
            try:
                child.proc.wait(5)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            raise RuntimeError(f"{script} did not exit on SIGINT")
    finally:
        child.close()
    print(f"{n / elapsed:,.0f} calls/s with the HTTP server under the profiler")
    return pstats.Stats(out)


def profile_server(n: int, legacy: bool, save: str | None) -> pstats.Stats:
    out = save or os.path.join(tempfile.mkdtemp(), "server.prof")
    child = workloads.LineChild(
        [sys.executable, "-m", "cProfile", "-o", out, workloads.MCPWIRE_SERVER]
    )
    workloads.raw_handshake(child, "legacy" if legacy else "modern")
    template = workloads.LEGACY_REQUEST_LINE if legacy else workloads.REQUEST_LINE
    t0 = time.perf_counter()
    for i in range(1, n + 1):
        child.send(template % i)
        child.readline()
    elapsed = time.perf_counter() - t0
    child.close()
    print(f"{n / elapsed:,.0f} calls/s with the server under the profiler")
    return pstats.Stats(out)


def profile_codec(n: int) -> cProfile.Profile:
    from mcpwire.sansio import _messages as m

    request = m.parse(workloads.REQUEST_LINE % 7)
    response = m.parse(workloads.RESPONSE_LINE % 7)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(n):
        m.parse(m.serialize(request))  # type: ignore[arg-type]
        m.parse(m.serialize(response))  # type: ignore[arg-type]
    profiler.disable()
    return profiler


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "what",
        choices=(
            "inmem",
            "inmem-legacy",
            "stdio-client",
            "stdio-server",
            "codec",
            "http-client",
            "http-server",
        ),
    )
    parser.add_argument("-n", type=int, default=20000)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--sort", default="cumulative")
    parser.add_argument("--match", default="mcpwire|anyio")
    parser.add_argument("--legacy", action="store_true")
    parser.add_argument("--payload", type=int, default=0)
    parser.add_argument("--save")
    args = parser.parse_args()
    import anyio

    if args.what == "stdio-server":
        stats = profile_server(args.n, args.legacy, args.save)
    elif args.what == "http-server":
        stats = profile_http_server(args.n, args.legacy, args.save)
    else:
        if args.what == "codec":
            profiler = profile_codec(args.n)
        else:
            legacy = args.what == "inmem-legacy" or args.legacy
            where = args.what.split("-")[0]
            mode = "legacy" if legacy else "auto"
            profiler = anyio.run(_client_loop, mode, args.n, where, args.payload)
        if args.save:
            profiler.dump_stats(args.save)
        stats = pstats.Stats(profiler)
    _print(stats, args.sort, args.match, args.top, args.what, args.n)


if __name__ == "__main__":
    main()
