"""What bounds the unmet targets: where one call's CPU goes, by package.

Usage::

    python benchmarks/bounds.py [-n CALLS] [--out benchmarks/results/bounds.md]
                                [--guest-halt-poll NS]

Each end of each echo loop that a target measures (the stdio and HTTP clients and
servers of both eras, the in-memory client sequential and with 32 callers, and the
anyio + h11 server of the HTTP floor) runs under ``cProfile``, one process at a
time, the other end unprofiled (``profile_echo.py``'s loops). Every function's own
time is charged to one share:

* **system calls**: the socket, pipe and ``getpid`` calls (``send``, ``recv``,
  ``os.write``, ``os.readv``, ...);
* **orjson**: its ``loads`` and ``dumps``;
* the package of the function's file: the **event loop** (``asyncio``,
  ``selectors``, ``socket``), **anyio**, **h11**, **mcpwire**, or the
  **workload** (the benchmark's loop, a floor's canned answers);
* the time of any other function (a builtin, or a standard-library helper such
  as ``typing``, ``enum``, ``re``) goes to its callers' shares, in proportion to
  the time each caller spent in it.

``epoll.poll`` is left out: it is where a process waits for its peer.

cProfile adds a cost to every function call, part on the callee's clock and part
on the caller's. The split is measured at start-up (an empty function called in a
loop, with and without the profiler), but real code pays more per call than that
loop does. So the cost per call is fitted instead: scaled, keeping the split,
until the functions' own times, with it taken off for the calls each received and
made, add up to the CPU per call that ``run.py`` measured without a profiler
(``results/default.json``). The shares are then of that number. The fit is the
check: one cost should fit every profile, since every call pays it alike. The
report gives the cost found for each.

Sequential calls over a transport are serialized: the client works, then the
server, then the client. So the CPU of both ends less mcpwire's share is about
what the foundations alone cost a call, and its inverse a ceiling for any MCP
layer built on them this way: the report gives it as calls/s and as a multiple of
the reference SDK's rate in the same ``run.py`` report.

Then the stdio round trip event by event (``timeline.py``): how much of it is
the two processes' Python and how much the kernel's writes and wake-ups, next to
a bare pair of processes that do nothing between them.

Then the same bare pair with each end spending a fixed time of CPU per message
(``timeline.py --idle``): what the kernel charges a pair whose ends work as much
as ours do, and so the fastest any pair spending that CPU can go.

With ``--guest-halt-poll NS`` (root), the round trip again, bare and ours, with
the guest kernel polling for up to NS before it halts an idle CPU (``vmidle.py``):
the same code, with the wake-ups nearly free.

Then idle memory, stage by stage: a bare interpreter, the three dependencies and
the asyncio backend that any mcpwire server loads (the floor's imports), and
mcpwire's server and HTTP modules on top, with the size of mcpwire's bytecode.
Run ``run.py`` first: without its report the CPU columns stay empty.
"""

from __future__ import annotations

import argparse
import collections
import cProfile
import datetime
import json
import os
import pstats
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import profile_echo  # noqa: E402  (needs the path above)
import run  # noqa: E402
import timeline  # noqa: E402
import vmidle  # noqa: E402
import workloads  # noqa: E402

SHARES = ("system calls", "event loop", "anyio", "h11", "orjson", "mcpwire", "workload")
RESULTS = HERE / "results"
#: Builtins that are a system call (their names as cProfile gives them).
SYSCALL_NAMES = (
    "posix.write",
    "posix.read",
    "posix.readv",
    "posix.getpid",
    "of '_socket.socket' objects",
    "select.epoll' objects>",  # register/modify/unregister; poll is WAITING
)
WAITING = "<method 'poll' of 'select.epoll' objects>"

Func = tuple[str, int, str]


# -- attribution --------------------------------------------------------------------------


def _share_of_file(path: str) -> str | None:
    norm = path.replace(os.sep, "/")
    for marker, share in (("/h11/", "h11"), ("/anyio/", "anyio"), ("/mcpwire/", "mcpwire")):
        if marker in norm:
            return share
    if "/asyncio/" in norm or norm.endswith(("/selectors.py", "/socket.py")):
        return "event loop"
    if norm.startswith(str(HERE).replace(os.sep, "/")):
        return "workload"
    return None


def _share_of_builtin(name: str) -> str | None:
    if "orjson" in name:
        return "orjson"
    if any(s in name for s in SYSCALL_NAMES):
        return "system calls"
    return None


def calibrate() -> tuple[float, float]:
    """cProfile's cost per call, in seconds: (charged to the callee, to the caller)."""

    def empty() -> None:
        pass

    def loop(n: int) -> None:
        for _ in range(n):
            empty()

    n = 300_000
    best_plain = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        loop(n)
        best_plain = min(best_plain, time.perf_counter() - t0)
    callee = caller = float("inf")
    for _ in range(3):
        profiler = cProfile.Profile()
        profiler.enable()
        loop(n)
        profiler.disable()
        stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
        for func, (_, nc, tt, _, _) in stats.items():
            if func[2] == "empty":
                callee = min(callee, tt / nc)  # the body is nothing: all of it is cost
            elif func[2] == "loop":
                caller = min(caller, (tt - best_plain) / n)
    return max(callee, 0.0), max(caller, 0.0)


def attribute(
    stats: pstats.Stats, cost: tuple[float, float], target: float | None
) -> dict[str, Any]:
    """Seconds per share with cProfile's cost taken off, and the counts behind them.

    ``cost`` is the calibrated cost of a call (callee's part, caller's part). With
    ``target`` (the unprofiled CPU of the profiled calls, in seconds), the cost per
    call is scaled, keeping that split, until the functions' own times add up to
    it; ``per_call`` reports the cost found.
    """
    table: dict[Func, Any] = stats.stats  # type: ignore[attr-defined]
    made: collections.Counter[Func] = collections.Counter()
    for _, (_, _, _, _, callers) in table.items():
        for caller, info in callers.items():
            made[caller] += info[0]
    counted = [(f, v[1], v[2], made[f]) for f, v in table.items() if f[2] != WAITING]
    unit = sum(cost) or 1e-9
    part = cost[0] / unit  # the callee's part of a call's cost

    def own_times(per_call: float) -> dict[Func, float]:
        return {
            f: max(0.0, tt - per_call * (part * nc + (1 - part) * out))
            for f, nc, tt, out in counted
        }

    per_call = unit
    if target is not None:
        low, high = 0.0, 10e-6
        for _ in range(60):  # bisection: the total falls as the cost per call rises
            per_call = (low + high) / 2
            if sum(own_times(per_call).values()) > target:
                low = per_call
            else:
                high = per_call
    own = own_times(per_call)

    memo: dict[Func, dict[str, float]] = {}

    def split(func: Func, depth: int = 0) -> dict[str, float]:
        """Where one second of ``func``'s own time goes."""
        if func in memo:
            return memo[func]
        path, _, name = func
        share = _share_of_builtin(name) if path == "~" else _share_of_file(path)
        if share is not None:
            memo[func] = {share: 1.0}
            return memo[func]
        callers = table[func][4] if func in table else {}
        weights: dict[Any, float] = {c: info[2] for c, info in callers.items() if info[2] > 0}
        weights = weights or dict.fromkeys(callers, 1.0)
        total = sum(weights.values())
        if not total or depth > 20:
            return {"other": 1.0}
        out: collections.defaultdict[str, float] = collections.defaultdict(float)
        for caller, w in weights.items():
            for k, v in split(caller, depth + 1).items():
                out[k] += v * w / total
        memo[func] = dict(out)
        return memo[func]

    seconds: collections.defaultdict[str, float] = collections.defaultdict(float)
    for func, value in own.items():
        for share, fraction in split(func).items():
            seconds[share] += value * fraction
    return {
        "seconds": dict(seconds),
        "raw": sum(tt for _, _, tt, _ in counted),
        "calls": sum(nc for _, nc, _, _ in counted),
        "loop_turns": sum(v[1] for f, v in table.items() if f[2] == "_run_once"),
        "per_call": per_call,
    }


# -- the profiles ---------------------------------------------------------------------------


def _client(mode: str, n: int, where: str) -> pstats.Stats:
    import anyio

    profiler = anyio.run(profile_echo._client_loop, mode, n, where)
    return pstats.Stats(profiler)


def _concurrent(n: int) -> pstats.Stats:
    """The in-memory client with 32 callers sharing ``n`` calls."""
    import anyio

    async def main() -> cProfile.Profile:
        from servers.mcpwire_echo import server

        from mcpwire import Client

        profiler = cProfile.Profile()
        per = n // workloads.CONCURRENCY
        async with Client(server) as client:

            async def caller() -> None:
                for _ in range(per):
                    await client.call_tool("echo", workloads.ARGS)

            profiler.enable()
            async with anyio.create_task_group() as tg:
                for _ in range(workloads.CONCURRENCY):
                    tg.start_soon(caller)
            profiler.disable()
        return profiler

    return pstats.Stats(anyio.run(main))


Profile = tuple[str, str, Callable[[int], pstats.Stats], str, str]


def _ends(transport: str, where: str, server: Callable[..., pstats.Stats]) -> list[Profile]:
    """The client (against our server) and the server (driven by a raw client) of
    one transport, in both eras."""
    out: list[Profile] = []
    for era, mode in (("legacy", "legacy"), ("modern", "auto")):
        case = f"{where}-mcpwire-mcpwire-{era}"

        def client(n: int, mode: str = mode) -> pstats.Stats:
            return _client(mode, n, where)

        def serve(n: int, legacy: bool = era == "legacy") -> pstats.Stats:
            return server(n, legacy, None)

        out.append((f"{transport}, mcpwire client (server: mcpwire)", era, client, case, "self"))
        out.append((f"{transport}, mcpwire server (client: raw)", era, serve, case, "child"))
    return out


#: (title, era, how to profile it with n calls, run.py case, which end of it)
PROFILES: list[Profile] = [
    *_ends("stdio", "stdio", profile_echo.profile_server),
    *_ends("HTTP", "http", profile_echo.profile_http_server),
    (
        "HTTP, anyio + h11 server with canned answers (the floor; client: raw)",
        "",
        lambda n: profile_echo.profile_http_server(n, True, None, workloads.ANYIO_FLOOR),
        "h11-anyio-pair",
        "child",
    ),
    (
        "in-memory, mcpwire Client(Server), sequential",
        "modern",
        lambda n: _client("auto", n, "inmem"),
        "inmem-mcpwire-modern",
        "self",
    ),
    (
        "in-memory, mcpwire Client(Server), 32 callers",
        "modern",
        _concurrent,
        "inmem-mcpwire-modern-c32",
        "self",
    ),
]

#: The pairs whose ceiling is computed: (title, client profile, server profile, run.py case).
PAIRS = [
    *(
        (
            f"stdio, mcpwire client → mcpwire server ({era})",
            ("stdio, mcpwire client (server: mcpwire)", era),
            ("stdio, mcpwire server (client: raw)", era),
            f"stdio-mcpwire-mcpwire-{era}",
        )
        for era in ("legacy", "modern")
    ),
    *(
        (
            f"HTTP, mcpwire client → mcpwire server ({era})",
            ("HTTP, mcpwire client (server: mcpwire)", era),
            ("HTTP, mcpwire server (client: raw)", era),
            f"http-mcpwire-mcpwire-{era}",
        )
        for era in ("legacy", "modern")
    ),
    (
        "in-memory, sequential (modern)",
        ("in-memory, mcpwire Client(Server), sequential", "modern"),
        None,
        "inmem-mcpwire-modern",
    ),
]


# -- memory ---------------------------------------------------------------------------------

_STAGES = r"""
import json, os, sys
def rss():
    with open("/proc/self/status") as f:  # in KiB
        return next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
out = [("python, no imports", rss())]
import anyio, orjson, h11, anyio._backends._asyncio, asyncio
out.append(("+ anyio, orjson, h11 and the asyncio backend (the floor's imports)", rss()))
before = set(sys.modules)
sys.path.insert(0, sys.argv[1])
import mcpwire_echo
out.append(("+ mcpwire's Server with the echo tool", rss()))
import mcpwire._http_server, mcpwire._http_legacy, mcpwire._http_run
out.append(("+ mcpwire's HTTP server modules", rss()))
mods = [m for m in set(sys.modules) - before if m.startswith("mcpwire")]
import importlib.util
size = 0
for m in mods:
    f = getattr(sys.modules[m], "__file__", None)
    if f and f.endswith(".py"):
        c = importlib.util.cache_from_source(f)
        size += os.path.getsize(c) if os.path.exists(c) else os.path.getsize(f)
print(json.dumps({"stages": out, "modules": len(mods), "bytecode": size}))
"""


def memory_stages() -> dict[str, Any]:
    """The stages of ``_STAGES`` (run after ``main`` compiled mcpwire's bytecode)."""
    done = subprocess.run(
        [sys.executable, "-c", _STAGES, str(HERE / "servers")],
        capture_output=True,
        check=True,
        text=True,
        env={**os.environ, **workloads.child_env()},
    )
    result: dict[str, Any] = json.loads(done.stdout)
    return result


# -- report ---------------------------------------------------------------------------------


def _measured() -> dict[str, Any]:
    path = RESULTS / "default.json"
    if not path.exists():
        return {}
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _cpu(measured: dict[str, Any], case: str, end: str) -> float | None:
    row = measured.get("throughput", {}).get(case, {})
    value = row.get(f"cpu_us_{end}")
    return float(value) if value else None


def report(
    rows: list[dict[str, Any]],
    memory: dict[str, Any],
    n: int,
    cost: tuple[float, float],
    trips: list[dict[str, Any]],
    sweep: list[dict[str, float]],
    polled: tuple[int, str, list[dict[str, Any]]] | None = None,
) -> str:
    measured = _measured()
    source = measured.get("machine", {})
    info = run.machine_info()
    flags = f" --guest-halt-poll {polled[0]}" if polled else ""
    lines = [
        "# mcpwire: what bounds the unmet targets",
        "",
        "| | |",
        "|---|---|",
        f"| date | {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC |",
        f"| machine | {info['cpu']}, {info['cores']} cores; {info['python']} |",
        f"| idle CPUs | {info['idle']} |",
        f"| mcpwire commit | {info['commit']} |",
        f"| run | `python benchmarks/bounds.py -n {n}{flags}`: cProfile; its cost for an "
        f"empty function, {cost[0] * 1e9:.0f} ns on the callee's clock and {cost[1] * 1e9:.0f} "
        "on the caller's |",
        f"| CPU per call from | `results/default.json`: {source.get('date', '?')}, "
        f"commit {source.get('commit', '?')} |",
        "",
        "## Where one call's CPU goes",
        "",
        "*run.py µs* is the CPU per call measured without a profiler (user + system, "
        "that process alone); *profiled µs*, the same under cProfile; *cost* is the "
        "profiler's cost per function call that, taken off, leaves the run.py number "
        "(see the module docstring). Each share is given as a percentage and in µs of "
        "the run.py number. *calls* and *loop turns* are function calls and event loop "
        "iterations per call.",
        "",
        "| profile | era | run.py µs | profiled µs | cost (ns a call) | calls | loop turns | "
        + " | ".join(SHARES)
        + " |",
        "|---|---|--:|--:|--:|--:|--:|" + "--:|" * len(SHARES),
    ]
    by_key: dict[tuple[str, str], dict[str, Any]] = {}
    for row in rows:
        by_key[(row["title"], row["era"])] = row
        total = sum(row["seconds"].values())
        cpu = _cpu(measured, row["case"], row["end"])
        row["cpu"] = cpu
        row["share"] = {k: v / total for k, v in row["seconds"].items()} if total else {}
        cells = []
        for s in SHARES:
            part = row["share"].get(s, 0.0)
            cells.append(f"{part * 100:.0f}%" + (f" ({part * cpu:.0f})" if cpu else ""))
        other = row["share"].get("other", 0.0)
        lines.append(
            f"| {row['title']} | {row['era'] or run.DASH} | "
            f"{f'{cpu:.0f}' if cpu else run.DASH} | {row['raw'] / n * 1e6:.0f} | "
            f"{row['per_call'] * 1e9:.0f} | {row['calls'] / n:.0f} | "
            f"{row['loop_turns'] / n:.2f} | "
            + " | ".join(cells)
            + " |"
            + (f" ({other * 100:.0f}% unattributed)" if other >= 0.005 else "")
        )
    lines += [
        "",
        "## The ceiling with a free MCP layer",
        "",
        "A sequential call costs at least the CPU of both ends (they take turns). Take "
        "away mcpwire's share and what is left is about what the foundations cost a "
        "call; its inverse bounds any MCP layer built on them this way. Over stdio, "
        "mcpwire's share holds its pipe reads and writes (it makes those system calls "
        "itself), so that ceiling is too high.",
        "",
        "| pair | CPU µs per call (run.py) | mcpwire's own | the rest | ceiling | "
        "reference SDK (run.py) | ceiling / reference |",
        "|---|--:|--:|--:|--:|--:|--:|",
    ]
    throughput = measured.get("throughput", {})
    for title, client_key, server_key, case in PAIRS:
        ends = [by_key.get(client_key), by_key.get(server_key) if server_key else None]
        total = own = 0.0
        for end in ends:
            if end is None or not end.get("cpu"):
                continue
            total += end["cpu"]
            own += end["cpu"] * end["share"].get("mcpwire", 0.0)
        if not total:
            continue
        rest = total - own
        ref_case = workloads.CASES_BY_ID[case].ref
        ref = throughput.get(ref_case or "", {}).get("median")
        ceiling = 1e6 / rest
        lines.append(
            f"| {title} | {total:.0f} | {own:.0f} | {rest:.0f} | {ceiling:,.0f} calls/s | "
            + (
                f"{ref:,.0f} calls/s | {ceiling / ref:.1f}{run.TIMES} |"
                if ref
                else f"{run.DASH} | {run.DASH} |"
            )
        )
    lines += [
        "",
        "## The stdio round trip, event by event",
        "",
        "Both processes of a sequential stdio loop record when each write starts and "
        "returns, when each `epoll_wait` starts and returns and when each read returns, "
        "on the clock they share (`timeline.py`, which says what each segment spans). "
        "The segments follow each other and add up to the round trip. The bare pair is "
        "two processes echoing one line through `epoll` and nothing else: what the "
        "kernel and the hypervisor charge any pair of processes on this machine. "
        f"{trips[0]['calls']:,} calls each; the wrapped calls add a little to the "
        "Python segments.",
        "",
        *timeline.table(trips),
        "",
        "## The same pair doing work: what any implementation pays for its CPU",
        "",
        "A bare pair as above whose ends each spend a fixed time of CPU per message "
        "(a busy loop, no system call) before answering; both ends wait in `epoll` "
        "(`timeline.py --idle`). Taken off the round trip, that work leaves what the "
        "kernel and the hypervisor charge. Any pair of processes whose two ends spend "
        "that much CPU a message can go no faster than the row says, whatever spends "
        "it. The last row polls for up to 200 µs before blocking, so that a waiting "
        "end is still running when its peer writes: the wake-ups nearly vanish, for "
        "CPU burnt while waiting (the CPU column). mcpwire does not poll; the row "
        "measures what the wake-ups cost.",
        "",
        *timeline.sweep_table(sweep),
        "",
        *_polled_section(polled),
        "## Idle memory, stage by stage",
        "",
        f"mcpwire modules an HTTP server loads: {memory['modules']}, "
        f"{memory['bytecode'] / 1000:,.0f} kB of bytecode.",
        "",
        "| stage | RSS (MB) |",
        "|---|--:|",
        *(f"| {name} | {kib * 1024 / 1e6:.1f} |" for name, kib in memory["stages"]),
        "",
    ]
    return "\n".join(lines)


def _polled_section(polled: tuple[int, str, list[dict[str, Any]]] | None) -> list[str]:
    """The round trip again under another idle policy (``--guest-halt-poll``)."""
    if polled is None:
        return []
    _, policy, trips = polled
    return [
        "## The same round trip when idle CPUs poll",
        "",
        f"As above, with the guest kernel's idle policy changed for the run: {policy} "
        "(`vmidle.py`). Neither process polls; a virtual CPU with nothing to run keeps "
        "polling in the kernel's idle loop for a while before it halts, so a write that "
        "comes in time wakes its reader without the hypervisor. The host pays that CPU.",
        "",
        *timeline.table(trips),
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("-n", type=int, default=20000, help="calls per profile")
    parser.add_argument("--out", default=str(RESULTS / "bounds.md"), help="the report's path")
    vmidle.add_option(parser, "also time the round trip")
    args = parser.parse_args()
    run.compile_bytecode()
    cost = calibrate()
    measured = _measured()
    rows = []
    for title, era, profile, case, end in PROFILES:
        print(f"bounds: {title} ({era or 'no era'})", file=sys.stderr, flush=True)
        stats = profile(args.n)
        cpu = _cpu(measured, case, end)
        target = cpu * args.n / 1e6 if cpu else None
        found = attribute(stats, cost, target)
        rows.append({"title": title, "era": era, "case": case, "end": end, **found})
    print("bounds: the stdio round trip, event by event", file=sys.stderr, flush=True)
    trips = timeline.round_trips(args.n)
    print("bounds: a bare pair doing work, by work per message", file=sys.stderr, flush=True)
    sweep = timeline.idle_sweep(max(args.n // 4, 1000))
    polled = None
    if args.guest_halt_poll is not None:
        print("bounds: the round trip when idle CPUs poll", file=sys.stderr, flush=True)
        with vmidle.guest_halt_poll(args.guest_halt_poll):
            policy = vmidle.describe()
            polled = (args.guest_halt_poll, policy, timeline.round_trips(args.n))
    text = report(rows, memory_stages(), args.n, cost, trips, sweep, polled)
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
