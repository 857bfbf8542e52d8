"""Where one stdio round trip's time goes: both processes' events on one clock.

Usage::

    python benchmarks/timeline.py [-n CALLS] [--legacy] [--guest-halt-poll NS]
    python benchmarks/timeline.py --idle [-n CALLS] [--guest-halt-poll NS]

A sequential ``tools/call`` over stdio is a relay: the client writes, the server
wakes, reads, works and writes, the client wakes, reads and works until its next
write. CPU profiles (``bounds.py``) see each end's work but not the time between
them. Here both ends record, on the monotonic clock they share
(``time.perf_counter_ns``), when each write starts and returns, when each wait of
the event loop's selector (``epoll_wait``) starts and returns, and when each read
returns: ``os.write``, ``os.readv`` and ``selectors.EpollSelector.select`` are
wrapped before anything runs. Lined up, one call's events split its round trip
into eight segments that follow each other and add up to it:

1. the client's ``write`` system call (on this machine it also wakes the server's
   idle CPU, which makes it dear);
2. the server's wake-up: from that write's return to the server's
   ``epoll_wait`` returning (kernel and hypervisor; the client's few µs of work
   after its write overlap it);
3. the server's event loop, from there to its ``readv`` returning;
4. the server's work: parse, dispatch, the tool, serialize, up to its ``write``;
5. the server's ``write`` system call;
6. the client's wake-up;
7. the client's event loop up to its ``readv`` returning;
8. the client's work: parse, settle the request, a second loop turn to resume
   the caller, and the next call up to its ``write``.

Segments 1, 2, 5 and 6 are the kernel's (with the hypervisor's), whatever runs
above it; the rest is Python. The same eight are measured for a bare pair, two
processes echoing one line through ``epoll`` with no work between the calls:
what any pair of processes pays for a round trip on this machine. Each wrapped
call adds its own cost (a clock read and an append, under a µs) to the Python
segments.

``--idle`` measures instead what the kernel charges a pair that works: the bare
pair again, each end spending a fixed time of CPU a message in a busy loop (no
system call) before it answers, from none to 60 µs; and once with both ends
polling for up to 200 µs before they block, so that the peer's write finds them
running. The round trip less the two ends' work is the kernel's share; a pair of
processes that spend that CPU a message, whatever spends it, goes no faster.

``--guest-halt-poll NS`` runs either under another idle policy of the VM
(``vmidle.py``): with the guest kernel polling before it halts an idle CPU, the
wake-ups (segments 2 and 6) all but vanish, without either process polling.
Linux only (epoll, /proc).
"""

from __future__ import annotations

import argparse
import array
import itertools
import json
import os
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import vmidle  # noqa: E402
import workloads  # noqa: E402

#: Event kinds.
WRITE_START, WRITE_END, READ_END, WAIT_START, WAIT_END = range(5)

SEGMENTS = (
    ("client's write system call", "kernel"),
    ("server wakes: client's write returned → server's epoll_wait returns", "kernel"),
    ("server's event loop → its readv returns", "server"),
    ("server's work: parse, dispatch, tool, serialize → write", "server"),
    ("server's write system call", "kernel"),
    ("client wakes: server's write returned → client's epoll_wait returns", "kernel"),
    ("client's event loop → its readv returns", "client"),
    ("client's work: parse, settle, resume the caller, next request → write", "client"),
)


class Tap:
    """Records this process's writes, reads and selector waits (see the docstring)."""

    def __init__(self) -> None:
        self.times = array.array("q")
        self.kinds = array.array("b")

    def install(self) -> None:
        clock, times, kinds = time.perf_counter_ns, self.times, self.kinds
        readv, write = os.readv, os.write
        select = selectors.EpollSelector.select

        def tapped_readv(fd: int, buffers: Any) -> int:
            n = readv(fd, buffers)
            times.append(clock())
            kinds.append(READ_END)
            return n

        def around(call: Callable[..., Any], before: int, after: int) -> Callable[..., Any]:
            def tapped(*args: Any) -> Any:
                times.append(clock())
                kinds.append(before)
                result = call(*args)
                times.append(clock())
                kinds.append(after)
                return result

            return tapped

        os.readv = tapped_readv
        os.write = around(write, WRITE_START, WRITE_END)
        selectors.EpollSelector.select = around(select, WAIT_START, WAIT_END)  # type: ignore[method-assign]

    def save(self, path: str) -> None:
        Path(path).write_text(json.dumps([list(self.times), list(self.kinds)]))


def _events(path: str) -> list[tuple[int, int]]:
    times, kinds = json.loads(Path(path).read_text())
    return list(zip(times, kinds, strict=True))


# -- the two children ------------------------------------------------------------------


def serve_mcpwire(path: str) -> None:
    """The benchmark's mcpwire echo server on stdio, tapped; its events go to ``path``."""
    tap = Tap()
    tap.install()
    from servers import mcpwire_echo

    try:
        mcpwire_echo.main(["mcpwire_echo.py"])
    finally:
        tap.save(path)


def serve_bare(path: str) -> None:
    """Echo each line read from stdin to stdout, waiting in epoll, nothing else."""
    tap = Tap()
    tap.install()
    try:
        serve_working(0, 0)
    finally:
        tap.save(path)


def _busy(us: float) -> None:
    """Spend ``us`` µs of CPU without a system call (a stand-in for a message's work)."""
    deadline = time.perf_counter_ns() + int(us * 1000)
    while time.perf_counter_ns() < deadline:
        pass


def _wait(selector: selectors.EpollSelector, spin_us: float) -> None:
    """Wait until readable; first poll without blocking for up to ``spin_us`` µs."""
    if spin_us:
        deadline = time.perf_counter_ns() + int(spin_us * 1000)
        while not selector.select(0):
            if time.perf_counter_ns() >= deadline:
                break
        else:
            return
    selector.select()


def serve_working(work_us: float, spin_us: float) -> None:
    """Echo each line after ``work_us`` µs of busy work (none: the bare server)."""
    selector = selectors.EpollSelector()
    selector.register(0, selectors.EVENT_READ)
    buffer = memoryview(bytearray(65536))
    while True:
        _wait(selector, spin_us)
        n = os.readv(0, (buffer,))
        if not n:
            return
        if work_us:
            _busy(work_us)
        os.write(1, buffer[:n])


# -- the client ends -------------------------------------------------------------------


def _mcpwire_client(n: int, era: str, server_events: str) -> tuple[Tap, int, int]:
    import anyio

    from mcpwire import Client

    tap = Tap()
    tap.install()
    mode = workloads.MODERN if era == "modern" else workloads.LEGACY
    argv = [str(Path(__file__).resolve()), "--serve", "mcpwire", server_events]
    window = [0, 0]

    async def loop() -> None:
        env = workloads.child_env()
        async with Client.stdio(sys.executable, argv, env=env, mode=mode) as client:  # type: ignore[arg-type]
            for _ in range(200):
                await client.call_tool("echo", workloads.ARGS)
            window[0] = time.perf_counter_ns()
            for _ in range(n):
                await client.call_tool("echo", workloads.ARGS)
            window[1] = time.perf_counter_ns()

    anyio.run(loop)
    return tap, window[0], window[1]


class _Peer:
    """A bare child on pipes (this script run with ``args``), and one call to it."""

    def __init__(self, *args: str) -> None:
        argv = [sys.executable, str(Path(__file__).resolve()), *args]
        self.child = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0
        )
        assert self.child.stdin is not None and self.child.stdout is not None
        self.wfd, self.rfd = self.child.stdin.fileno(), self.child.stdout.fileno()
        self.selector = selectors.EpollSelector()
        self.selector.register(self.rfd, selectors.EVENT_READ)
        self.buffer = memoryview(bytearray(65536))
        self.line = workloads.REQUEST_LINE % 1

    def call(self, spin_us: float = 0) -> None:
        os.write(self.wfd, self.line)
        got = 0
        while got < len(self.line):  # one line back (a pipe may split it)
            _wait(self.selector, spin_us)
            got += os.readv(self.rfd, (self.buffer,))

    def close(self) -> None:
        assert self.child.stdin is not None and self.child.stdout is not None
        self.child.stdin.close()
        self.child.wait(10)
        self.child.stdout.close()


def _bare_client(n: int, server_events: str) -> tuple[Tap, int, int]:
    tap = Tap()
    tap.install()
    peer = _Peer("--serve", "bare", server_events)
    for _ in range(200):
        peer.call()
    start = time.perf_counter_ns()
    for _ in range(n):
        peer.call()
    end = time.perf_counter_ns()
    peer.close()
    return tap, start, end


def working_pair(work_us: float, spin_us: float, n: int, reps: int = 3) -> dict[str, float]:
    """A bare pair whose ends each spend ``work_us`` µs of CPU per message.

    Both ends poll for up to ``spin_us`` µs before blocking. The median of ``reps``
    runs of ``n`` calls: the round trip, what is left of it once the two ends' work
    is taken off (the kernel's writes and wake-ups), and the CPU of both processes.
    """
    peer = _Peer("--serve-working", str(work_us), str(spin_us))

    def calls(count: int) -> tuple[float, float]:
        clock, cpu = time.perf_counter(), _cpu_both(peer.child.pid)
        for _ in range(count):
            peer.call(spin_us)
            _busy(work_us)
        elapsed, spent = time.perf_counter() - clock, _cpu_both(peer.child.pid) - cpu
        return elapsed / count * 1e6, spent / count * 1e6

    try:
        calls(min(n, 1000))
        runs = sorted(calls(n) for _ in range(reps))
    finally:
        peer.close()
    trip, cpu = runs[len(runs) // 2]
    return {
        "work_us": work_us,
        "spin_us": spin_us,
        "round_trip_us": trip,
        "kernel_us": trip - 2 * work_us,
        "cpu_us": cpu,
    }


def _cpu_both(pid: int) -> float:
    """CPU seconds (user + system) of this process and of child ``pid`` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    child = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return time.process_time() + child


#: The idle sweep: work per message on each side (µs), and the spin budget (µs).
SWEEP = ((0, 0), (10, 0), (20, 0), (30, 0), (40, 0), (50, 0), (60, 0), (50, 200))


def idle_sweep(n: int) -> list[dict[str, float]]:
    """``working_pair`` over ``SWEEP``."""
    return [working_pair(work, spin, n) for work, spin in SWEEP]


def sweep_table(rows: list[dict[str, float]]) -> list[str]:
    """Markdown lines for ``idle_sweep``."""
    lines = [
        "| work per message, each side (µs) | poll before blocking (µs) | round trip (µs) "
        "| less the work: kernel and wake-ups (µs) | round trips/s | CPU of both (µs) |",
        "|--:|--:|--:|--:|--:|--:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['work_us']:.0f} | {r['spin_us']:.0f} | {r['round_trip_us']:.1f} "
            f"| {r['kernel_us']:.1f} | {1e6 / r['round_trip_us']:,.0f} | {r['cpu_us']:.1f} |"
        )
    return lines


# -- lining the events up ----------------------------------------------------------------


def segments(
    client: list[tuple[int, int]], server: list[tuple[int, int]], start: int, end: int
) -> tuple[list[list[int]], int]:
    """Each complete call's eight segments (ns), and how many calls were incomplete."""
    merged = sorted(
        [(t, "c", k) for t, k in client if start <= t <= end]
        + [(t, "s", k) for t, k in server if start <= t <= end]
    )
    writes = [i for i, (_, side, kind) in enumerate(merged) if side == "c" and kind == WRITE_START]
    out: list[list[int]] = []
    broken = 0
    for a, b in itertools.pairwise(writes):
        steps = (
            ("c", WRITE_END),
            ("s", WAIT_END),
            ("s", READ_END),
            ("s", WRITE_START),
            ("s", WRITE_END),
            ("c", WAIT_END),
            ("c", READ_END),
        )
        marks = [merged[a][0]]
        i = a
        for side, kind in steps:
            i += 1
            while i < b and not (merged[i][1] == side and merged[i][2] == kind):
                i += 1
            if i >= b:
                break
            marks.append(merged[i][0])
        if len(marks) != len(steps) + 1:
            broken += 1
            continue
        marks.append(merged[b][0])
        out.append([y - x for x, y in itertools.pairwise(marks)])
    return out, broken


def measure(pair: str, n: int, era: str = "modern") -> dict[str, Any]:
    """The segments of ``n`` sequential calls of ``pair`` ("mcpwire" or "bare")."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "server.json")
        if pair == "bare":
            tap, start, end = _bare_client(n, path)
        else:
            tap, start, end = _mcpwire_client(n, era, path)
        server = _events(path)
    calls, broken = segments(list(zip(tap.times, tap.kinds, strict=True)), server, start, end)
    if not calls:
        raise RuntimeError(f"timeline: no complete call among {n} ({pair})")
    columns = list(zip(*calls, strict=True))
    return {
        "pair": pair,
        "era": era,
        "calls": len(calls),
        "incomplete": broken,
        "round_trip_us": (end - start) / n / 1000,
        "median_us": [statistics.median(c) / 1000 for c in columns],
        "mean_us": [statistics.fmean(c) / 1000 for c in columns],
    }


def round_trips(n: int, eras: tuple[str, ...] = ("modern", "legacy")) -> list[dict[str, Any]]:
    """The bare pair's round trip, then ours in each of ``eras``."""
    return [measure("bare", n)] + [measure("mcpwire", n, era) for era in eras]


def table(results: list[dict[str, Any]]) -> list[str]:
    """Markdown lines: one row per segment, a column per measured pair."""
    head = " | ".join(f"{r['pair']} ({r['era']}), median / mean µs" for r in results)
    lines = [f"| segment | side | {head} |", "|---|---|" + "--:|" * len(results)]
    for k, (name, side) in enumerate(SEGMENTS):
        cells = " | ".join(f"{r['median_us'][k]:.1f} / {r['mean_us'][k]:.1f}" for r in results)
        lines.append(f"| {k + 1}. {name} | {side} | {cells} |")
    for side in ("kernel", "server", "client"):
        picks = [k for k, (_, s) in enumerate(SEGMENTS) if s == side]
        sums = [
            (sum(r["median_us"][k] for k in picks), sum(r["mean_us"][k] for k in picks))
            for r in results
        ]
        cells = " | ".join(f"{median:.1f} / {mean:.1f}" for median, mean in sums)
        lines.append(f"| all of the {side}'s | {side} | {cells} |")
    cells = " | ".join(
        f"{sum(r['median_us']):.1f} / {sum(r['mean_us']):.1f} (loop: {r['round_trip_us']:.1f})"
        for r in results
    )
    lines.append(f"| round trip | | {cells} |")
    return lines


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--serve":
        (serve_bare if sys.argv[2] == "bare" else serve_mcpwire)(sys.argv[3])
        return
    if len(sys.argv) == 4 and sys.argv[1] == "--serve-working":
        serve_working(float(sys.argv[2]), float(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("-n", type=int, default=20000, help="calls per pair")
    parser.add_argument("--legacy", action="store_true", help="the 2025-11-25 era")
    parser.add_argument("--idle", action="store_true", help="the idle sweep instead")
    vmidle.add_option(parser, "measure")
    args = parser.parse_args()
    era = "legacy" if args.legacy else "modern"
    with vmidle.guest_halt_poll(args.guest_halt_poll):
        print(f"idle CPUs: {vmidle.describe()}")
        if args.idle:
            print("\n".join(sweep_table(idle_sweep(args.n))))
        else:
            print("\n".join(table(round_trips(args.n, (era,)))))


if __name__ == "__main__":
    main()
