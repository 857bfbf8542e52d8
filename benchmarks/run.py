"""Benchmarks: mcpwire against the reference MCP Python SDK (``mcp``) and the physical limits.

Usage::

    python benchmarks/run.py [--quick] [--out benchmarks/results/NAME.md]

Each workload runs in a worker process of its own (see ``workloads.py``). The
workers are set up once, calibrated (which also warms them up), and then run
round by round: every round runs every workload once, in a rotated order, so
drift in the machine's speed hits all of them alike. The report gives the
median of the rounds and their spread, ratios to the reference SDK and to the
pipe-echo limit, then cold start and import times.

The report is printed and written to ``benchmarks/results/latest.md`` (and
``--out``), with the raw numbers next to it as JSON. What the benchmarks need
beyond mcpwire is installed on first use: the reference SDK (``requirements.txt``)
into this interpreter if it is missing, FastMCP into a venv of its own under
``benchmarks/.venvs/`` (``requirements-fastmcp.txt``); ``--no-install`` turns that off.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib.metadata
import importlib.util
import json
import os
import platform
import select
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import vmidle  # noqa: E402
import workloads  # noqa: E402  (needs the path above; imports neither mcpwire nor mcp)
from workloads import CASES, Case  # noqa: E402

RESULTS = HERE / "results"
TIMES, DASH = "\u00d7", "\u2013"  # report glyphs
PACKAGES = ("mcpwire", "mcp", "mcp-types", "anyio", "orjson", "pydantic", "pydantic-core", "h11")


@dataclass(frozen=True)
class Profile:
    rounds: int
    #: Seconds each timed run should take.
    target: float
    #: Seconds of warm-up/calibration per workload.
    calibrate: float
    #: Repetitions of each cold start and import measurement.
    startup_reps: int
    #: Repetitions of each idle-memory measurement, and seconds idle before reading it.
    rss_reps: int = 3
    rss_settle: float = 1.0


QUICK = Profile(rounds=3, target=0.15, calibrate=0.3, startup_reps=5, rss_reps=1, rss_settle=0.5)
DEFAULT = Profile(rounds=7, target=1.0, calibrate=0.6, startup_reps=15)


# -- workers -----------------------------------------------------------------------------


class WorkerError(Exception):
    pass


@dataclass
class Worker:
    case: Case
    log: Any
    proc: subprocess.Popen[bytes] | None = None
    buf: bytes = b""
    info: dict[str, Any] = field(default_factory=dict)
    n: int = 0
    times: list[float] = field(default_factory=list)
    cpu_self: list[float] = field(default_factory=list)
    cpu_child: list[float] = field(default_factory=list)
    error: str | None = None
    stopped: bool = False

    def start(self) -> None:
        env = dict(os.environ)
        env.update(workloads.child_env())
        python = workloads.python_for(self.case.venv)
        if not Path(python).exists():
            raise WorkerError(f"{python} is missing (run without --no-install to create it)")
        self.proc = subprocess.Popen(
            [python, str(HERE / "workloads.py"), "--worker", self.case.id],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            env=env,
            cwd=str(workloads.ROOT),
            bufsize=0,
        )

    def send(self, line: str) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(line.encode() + b"\n")
        except (BrokenPipeError, OSError) as exc:
            raise WorkerError(f"worker is gone: {exc}") from None

    def receive(self, timeout: float) -> dict[str, Any]:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise WorkerError(f"no answer within {timeout:.0f} s")
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise WorkerError(f"worker exited (status {self.proc.wait()})")
                self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise WorkerError(answer["error"])
        return answer

    def stop(self) -> None:
        if self.proc is None or self.stopped:
            return
        self.stopped = True
        with contextlib.suppress(WorkerError):
            self.send("quit")
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout):
            if f is not None:
                f.close()


def progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def start_workers(workers: list[Worker], parallel: int) -> None:
    """Set up every worker, ``parallel`` at a time (a starved machine would make the
    clients' era probes time out and fall back)."""
    pending = list(workers)
    running: list[Worker] = []
    while pending or running:
        while pending and len(running) < parallel:
            w = pending.pop(0)
            try:
                w.start()
            except WorkerError as exc:
                w.error = str(exc)
                progress(f"  {w.case.id}: {w.error}")
                continue
            running.append(w)
        if not running:
            continue
        w = running.pop(0)
        try:
            w.info = w.receive(180)["info"]
        except WorkerError as exc:
            w.error = str(exc)
            progress(f"  {w.case.id}: {w.error}")
            w.stop()


def calibrate(w: Worker, profile: Profile) -> None:
    w.send(f"calibrate {profile.calibrate}")
    answer = w.receive(120 + profile.calibrate * 20)
    rate = answer["n"] / max(answer["elapsed"], 1e-9)
    step = w.case.step
    w.n = max(2 * step, round(rate * profile.target / step) * step)


def run_once(w: Worker, expected: float) -> None:
    w.send(f"run {w.n}")
    answer = w.receive(60 + expected * 20)
    w.times.append(answer["elapsed"])
    w.cpu_self.append(answer["cpu_self"])
    w.cpu_child.append(answer["cpu_child"])


# -- cold start and import time --------------------------------------------------------


def cold_start(argv: list[str], *, echo: bool = False) -> tuple[float, float | None]:
    """Seconds from spawn to the initialize result, and to the first tools/call result."""
    t0 = time.perf_counter()
    child = workloads.LineChild(argv)
    try:
        child.send(workloads.INITIALIZE_LINE)
        first = child.readline()
        t_init = time.perf_counter() - t0
        if echo:
            return t_init, None
        if b'"result"' not in first:
            raise RuntimeError(f"initialize failed: {first[:200]!r}")
        child.send(workloads.INITIALIZED_LINE)
        child.send(workloads.LEGACY_REQUEST_LINE % 1)
        answer = child.readline()
        t_call = time.perf_counter() - t0
        if b'"hello"' not in answer:
            raise RuntimeError(f"tools/call failed: {answer[:200]!r}")
        return t_init, t_call
    finally:
        child.close()


def import_time(statement: str, python: str = sys.executable) -> float:
    env = dict(os.environ)
    env.update(workloads.child_env())
    t0 = time.perf_counter()
    subprocess.run([python, "-c", statement], check=True, env=env)
    return time.perf_counter() - t0


@dataclass
class Timing:
    key: str
    measure: str
    impl: str
    ref: str | None
    samples: list[float] = field(default_factory=list)
    error: str | None = None


def measure_startup(reps: int) -> list[Timing]:
    py, fpy = sys.executable, workloads.python_for("fastmcp")
    cold = [
        (
            "cold-python",
            "spawn → first line echoed",
            "python, no imports (pipe_echo.py)",
            [py, workloads.PIPE_ECHO],
            None,
        ),
        (
            "cold-floor",
            "spawn → initialize result",
            "floor: anyio + orjson, canned answers (anyio_floor.py)",
            [py, workloads.ANYIO_FLOOR],
            None,
        ),
        (
            "cold-mcpwire",
            "spawn → initialize result",
            "mcpwire server",
            [py, workloads.MCPWIRE_SERVER],
            "cold-sdk",
        ),
        (
            "cold-sdk",
            "spawn → initialize result",
            "SDK server",
            [py, workloads.SDK_SERVER],
            "cold-sdk",
        ),
        (
            "cold-fastmcp",
            "spawn → initialize result",
            "FastMCP server",
            [fpy, workloads.FASTMCP_SERVER],
            "cold-sdk",
        ),
    ]
    imports = [
        (
            "import-python",
            "python -c STATEMENT, wall time",
            "pass (interpreter only)",
            "pass",
            None,
        ),
        (
            "import-mcpwire",
            "python -c STATEMENT, wall time",
            "import mcpwire",
            "import mcpwire",
            "import-mcp",
        ),
        ("import-mcp", "python -c STATEMENT, wall time", "import mcp", "import mcp", "import-mcp"),
        (
            "import-mcpwire-server",
            "python -c STATEMENT, wall time",
            "from mcpwire import Server",
            "from mcpwire import Server",
            "import-mcp-server",
        ),
        (
            "import-mcp-server",
            "python -c STATEMENT, wall time",
            "from mcp.server.mcpserver import MCPServer",
            "from mcp.server.mcpserver import MCPServer",
            "import-mcp-server",
        ),
        (
            "import-mcpwire-client",
            "python -c STATEMENT, wall time",
            "from mcpwire import Client",
            "from mcpwire import Client",
            "import-mcp-client",
        ),
        (
            "import-mcp-client",
            "python -c STATEMENT, wall time",
            "from mcp import Client",
            "from mcp import Client",
            "import-mcp-client",
        ),
        (
            "import-fastmcp",
            "python -c STATEMENT, wall time",
            "from fastmcp import FastMCP (FastMCP venv)",
            "from fastmcp import FastMCP",
            "import-mcp-server",
        ),
        (
            "import-fastmcp-client",
            "python -c STATEMENT, wall time",
            "from fastmcp import Client (FastMCP venv)",
            "from fastmcp import Client",
            "import-mcp-client",
        ),
    ]
    timings: dict[str, Timing] = {}
    for key, measure, impl, _, ref in cold:
        timings[key] = Timing(key, measure, impl, ref)
        if key != "cold-python":
            first = key.replace("cold-", "first-")
            timings[first] = Timing(
                first,
                "spawn → first tools/call result",
                impl,
                ref.replace("cold-", "first-") if ref else None,
            )
    for key, measure, impl, _, ref in imports:
        timings[key] = Timing(key, measure, impl, ref)
    for rep in range(reps):
        progress(f"  startup {rep + 1}/{reps}")
        order = cold if rep % 2 == 0 else cold[::-1]
        for key, _, _, argv, _ in order:
            if timings[key].error:
                continue
            try:
                t_init, t_call = cold_start(argv, echo=key == "cold-python")
            except Exception as exc:
                timings[key].error = f"{type(exc).__name__}: {exc}"
                continue
            timings[key].samples.append(t_init)
            if t_call is not None:
                timings[key.replace("cold-", "first-")].samples.append(t_call)
        for key, _, _, statement, _ in imports if rep % 2 == 0 else imports[::-1]:
            if timings[key].error:
                continue
            try:
                python = fpy if "fastmcp" in key else py
                timings[key].samples.append(import_time(statement, python))
            except Exception as exc:
                timings[key].error = f"{type(exc).__name__}: {exc}"
    return list(timings.values())


# -- idle memory -----------------------------------------------------------------------


def vm_rss(pid: int) -> float:
    """Resident set size of ``pid`` in MB (10^6 bytes), from /proc/PID/status."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024 / 1e6
    raise RuntimeError("no VmRSS line")


def idle_rss(transport: str, argv: list[str], settle: float) -> float:
    """Start a server, initialize it and list its tools (raw client), let it sit for
    ``settle`` seconds, and read its RSS."""
    if transport == "stdio":
        child = workloads.LineChild(argv)
        try:
            if argv[-1] != workloads.PIPE_ECHO:
                workloads.raw_handshake(child, "legacy")
                child.send(workloads.TOOLS_LIST_LINE % 1)
                if b'"echo"' not in child.readline():
                    raise RuntimeError("tools/list did not list echo")
            else:
                child.send(b"ping\n")
                child.readline()
            time.sleep(settle)
            return vm_rss(child.proc.pid)
        finally:
            child.close()
    http = workloads.HTTPChild(argv, stderr=subprocess.DEVNULL)
    try:
        http.wait_ready()
        raw = workloads.RawHTTP(http.port)
        try:
            if argv[1] == workloads.H11_ECHO:
                raw.post(raw.head([]), [b"{}"])
            else:
                head = raw.head(workloads.http_handshake(raw, "legacy"))
                status, _, body = raw.post(head, [workloads.TOOLS_LIST_LINE.rstrip() % 1])
                if status != 200 or b'"echo"' not in body:
                    raise RuntimeError(f"tools/list: HTTP {status}")
            time.sleep(settle)
            return vm_rss(http.proc.pid)
        finally:
            raw.close()
    finally:
        http.close()


def measure_rss(reps: int, settle: float) -> list[Timing]:
    """Idle RSS of each server process (Linux only: /proc)."""
    py, fpy = sys.executable, workloads.python_for("fastmcp")
    rows = [
        ("rss-python", "stdio", "python, no imports (pipe_echo.py)", [py, workloads.PIPE_ECHO]),
        (
            "rss-floor",
            "stdio",
            "floor: anyio + orjson, canned answers (anyio_floor.py)",
            [py, workloads.ANYIO_FLOOR],
        ),
        ("rss-mcpwire", "stdio", "mcpwire server", [py, workloads.MCPWIRE_SERVER]),
        ("rss-sdk", "stdio", "SDK server", [py, workloads.SDK_SERVER]),
        ("rss-fastmcp", "stdio", "FastMCP server", [fpy, workloads.FASTMCP_SERVER]),
        (
            "rss-http-h11",
            "http",
            "h11-echo server (blocking, no event loop)",
            [py, workloads.H11_ECHO],
        ),
        (
            "rss-http-floor",
            "http",
            "floor: anyio + orjson + h11, canned answers (anyio_floor.py)",
            [py, workloads.ANYIO_FLOOR, "http"],
        ),
        ("rss-http-mcpwire", "http", "mcpwire server", [py, workloads.MCPWIRE_SERVER, "http"]),
        ("rss-http-sdk", "http", "SDK server (uvicorn)", [py, workloads.SDK_SERVER, "http"]),
        (
            "rss-http-fastmcp",
            "http",
            "FastMCP server (uvicorn)",
            [fpy, workloads.FASTMCP_SERVER, "http"],
        ),
    ]
    out = []
    for key, transport, impl, _ in rows:
        ref = "rss-sdk" if transport == "stdio" else "rss-http-sdk"
        measure = f"{transport} server, idle after initialize + tools/list"
        out.append(
            Timing(key, measure, impl, None if key.endswith(("python", "h11", "floor")) else ref)
        )
    if not Path("/proc/self/status").exists():
        for t in out:
            t.error = "needs /proc (Linux)"
        return out
    for rep in range(reps):
        progress(f"  idle RSS {rep + 1}/{reps}")
        for t, (_, transport, _, argv) in zip(out, rows, strict=True):
            if t.error:
                continue
            try:
                t.samples.append(idle_rss(transport, argv, settle))
            except Exception as exc:
                t.error = f"{type(exc).__name__}: {exc}"
    return out


# -- machine ---------------------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    versions: dict[str, str] = {}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    commit = "unknown"
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        git = ["git", "-C", str(workloads.ROOT)]
        commit = subprocess.run(
            [*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--", "mcpwire"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        if dirty:
            commit += " (mcpwire/ has uncommitted changes)"
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    versions["fastmcp"] = fastmcp_version()
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu,
        "cores": os.cpu_count(),
        "usable_cores": affinity,
        "idle": vmidle.describe(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(),
        "packages": versions,
        "commit": commit,
        "loadavg_start": _loadavg(),
    }


def _loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


# -- report ----------------------------------------------------------------------------


def _fmt_rate(x: float) -> str:
    if x >= 100_000:
        return f"{x / 1000:,.0f}k"
    if x >= 100:
        return f"{x:,.0f}"
    return f"{x:.1f}"


def _ratio(x: float) -> str:
    return f"{x:.2f}{TIMES}" if x < 10 else f"{x:.1f}{TIMES}"


def summarize(
    workers: list[Worker], timings: list[Timing], memory: list[Timing] | None = None
) -> dict[str, Any]:
    rows: dict[str, dict[str, Any]] = {}
    for w in workers:
        row: dict[str, Any] = {
            "id": w.case.id,
            "group": w.case.group,
            "measure": w.case.measure,
            "impl": w.case.impl,
            "era": w.case.era,
            "protocol_version": w.info.get("protocol_version"),
            "unit": w.case.unit,
            "ref": w.case.ref,
            "ops_per_run": w.n,
            "seconds": w.times,
            "cpu_seconds_self": w.cpu_self,
            "cpu_seconds_child": w.cpu_child,
            "error": w.error,
        }
        if w.times:
            rates = sorted(w.n / t for t in w.times)
            row["rates"] = rates
            row["median"] = statistics.median(rates)
            row["min"], row["max"] = rates[0], rates[-1]
            row["cpu_us_self"] = statistics.median(c / w.n * 1e6 for c in w.cpu_self)
            if w.info.get("children"):
                row["cpu_us_child"] = statistics.median(c / w.n * 1e6 for c in w.cpu_child)
        rows[w.case.id] = row
    limits = {
        name: rows.get(case_id, {}).get("median") for name, case_id in workloads.LIMIT_CASES.items()
    }
    for row in rows.values():
        ref = rows.get(row["ref"] or "", {})
        if "median" in row and "median" in ref and row["ref"] != row["id"]:
            row["vs_sdk"] = row["median"] / ref["median"]
            cpu = row["cpu_us_self"] + row.get("cpu_us_child", 0.0)
            ref_cpu = ref["cpu_us_self"] + ref.get("cpu_us_child", 0.0)
            if cpu > 0:
                row["vs_sdk_cpu"] = ref_cpu / cpu
        case = workloads.CASES_BY_ID[row["id"]]
        limit = limits.get(case.limit)
        if "median" in row and limit:
            row["vs_limit"] = row["median"] / limit
        size = case.args.get("payload", 0)
        if "median" in row and size:
            row["payload_bytes"] = size
            row["mb_per_s"] = size * row["median"] / 1e6
            raw = rows.get(case.raw_ref or "", {})
            if "median" in raw and case.raw_ref != row["id"]:
                row["time_vs_raw"] = raw["median"] / row["median"]
    startup = _one_shot(timings, "seconds")
    rss = _one_shot(memory or [], "mb")
    out: dict[str, Any] = {"throughput": rows, "startup": startup, "idle_rss": rss}
    out["targets"] = targets(out)
    return out


# -- targets ---------------------------------------------------------------------------

ERAS = (("modern", workloads.MODERN), ("legacy", workloads.LEGACY))


def targets(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's targets, each with our number, the reference, the ratio and met/not met."""
    rows, startup, rss = summary["throughput"], summary["startup"], summary["idle_rss"]
    out: list[dict[str, Any]] = []

    def med(table: dict[str, Any], key: str) -> float | None:
        value = table.get(key, {}).get("median")
        return float(value) if value is not None else None

    def add(
        measure: str, target: str, ours: str, ref: str, ratio: float | None, ok: bool | None
    ) -> None:
        out.append(
            {"measure": measure, "target": target, "ours": ours, "reference": ref}
            | {"ratio": ratio, "met": ok}
        )

    def rate(x: float | None, unit: str = "calls/s") -> str:
        return f"{_fmt_rate(x)} {unit}" if x else "n/a"

    def rate_target(measure: str, ours_id: str, ref_id: str, factor: float, era: str) -> None:
        ours, ref = med(rows, ours_id), med(rows, ref_id)
        ratio = ours / ref if ours and ref else None
        ok = ratio >= factor if ratio else None
        add(
            f"{measure} ({era})", f"≥ {factor:g}{TIMES} reference", rate(ours), rate(ref), ratio, ok
        )

    for era, version in ERAS:
        rate_target(
            "in-memory seq calls/s", f"inmem-mcpwire-{era}", f"inmem-sdk-{era}", 10, version
        )
    for era, version in ERAS:
        rate_target(
            "stdio seq calls/s", f"stdio-mcpwire-mcpwire-{era}", f"stdio-sdk-sdk-{era}", 10, version
        )
        ours, limit = med(rows, f"stdio-mcpwire-mcpwire-{era}"), med(rows, "pipe-echo")
        share = ours / limit if ours and limit else None
        apart = med(rows, "pipe-echo-split")
        add(
            f"stdio seq, share of the pipe-echo limit ({version})",
            "≥ 25% of the pipe-echo limit",
            rate(ours),
            f"limit {rate(limit, 'round trips/s')} (pinned apart: {rate(apart, 'round trips/s')})",
            share,
            share >= 0.25 if share else None,
        )
    for era, version in ERAS:
        ours, ref = med(rows, f"http-mcpwire-mcpwire-{era}"), med(rows, f"http-sdk-sdk-{era}")
        ratio = ours / ref if ours and ref else None
        # The ceiling of any h11 client + h11 server pair, and the floor of two
        # event loops speaking h11 with canned answers, in the same terms.
        ceiling = ""
        for key, what in (("h11-pair", "h11 pair limit"), ("h11-anyio-pair", "anyio + h11 pair")):
            pair = med(rows, key)
            if pair:
                ceiling += f"; {what} {rate(pair, 'round trips/s')}"
                ceiling += f" = {pair / ref:.1f}{TIMES} reference" if ref else ""
        add(
            f"HTTP seq calls/s, our client + server ({version})",
            f"≥ 7{TIMES} reference",
            rate(ours),
            rate(ref) + ceiling,
            ratio,
            ratio >= 7 if ratio else None,
        )
    for era, version in ERAS:
        ours, limit = med(rows, f"http-raw-mcpwire-{era}"), med(rows, "h11-echo")
        share = ours / limit if ours and limit else None
        add(
            f"HTTP seq, raw client → our server ({version})",
            "≥ 60% of the h11-echo limit",
            rate(ours),
            f"limit {rate(limit, 'round trips/s')}; SDK server "
            f"{rate(med(rows, f'http-raw-sdk-{era}'))}",
            share,
            share >= 0.6 if share else None,
        )
    for transport, prefix in (
        ("in-memory", "inmem-{}-{}"),
        ("stdio", "stdio-{0}-{0}-{1}"),
        ("HTTP", "http-{0}-{0}-{1}"),
    ):
        for era, version in ERAS:
            ours = med(rows, prefix.format("mcpwire", era) + "-c32")
            seq = med(rows, prefix.format("mcpwire", era))
            ref32 = med(rows, prefix.format("sdk", era) + "-c32")
            ref_seq = med(rows, prefix.format("sdk", era))
            gain = ours / seq if ours and seq else None
            ref_gain = f"{_ratio(ref32 / ref_seq)} its seq" if ref32 and ref_seq else "n/a"
            add(
                f"{workloads.CONCURRENCY} concurrent callers, {transport} ({version})",
                f"≥ 1.5{TIMES} our own seq"
                + (" (one thread: nothing to overlap)" if transport == "in-memory" else ""),
                f"{rate(ours)} ({_ratio(gain) if gain else 'n/a'} seq)",
                f"SDK {rate(ref32)} ({ref_gain})",
                gain,
                gain >= 1.5 if gain else None,
            )

    def ms_target(
        measure: str, key: str, ref_key: str, limit_ms: float, floor_key: str = ""
    ) -> None:
        ours, ref = med(startup, key), med(startup, ref_key)
        floor = med(startup, floor_key) if floor_key else None
        add(
            measure,
            f"≤ {limit_ms:g} ms",
            f"{ours * 1000:,.0f} ms" if ours else "n/a",
            (f"{ref * 1000:,.0f} ms" if ref else "n/a")
            + (f"; floor (deps + event loop) {floor * 1000:,.0f} ms" if floor else ""),
            ref / ours if ours and ref else None,
            ours * 1000 <= limit_ms if ours else None,
        )

    ms_target(
        "cold start, spawn → initialize result", "cold-mcpwire", "cold-sdk", 150, "cold-floor"
    )
    ms_target(
        "import, `from mcpwire import Server`", "import-mcpwire-server", "import-mcp-server", 100
    )
    ms_target(
        "import, `from mcpwire import Client`", "import-mcpwire-client", "import-mcp-client", 100
    )
    for key, ref_key, floor_key, what in (
        ("rss-mcpwire", "rss-sdk", "rss-floor", "stdio"),
        ("rss-http-mcpwire", "rss-http-sdk", "rss-http-floor", "HTTP"),
    ):
        ours, ref, floor = med(rss, key), med(rss, ref_key), med(rss, floor_key)
        add(
            f"idle server RSS, {what}",
            "≤ 25 MB",
            f"{ours:.1f} MB" if ours else "n/a",
            (f"{ref:.1f} MB" if ref else "n/a")
            + (f"; floor (deps + event loop) {floor:.1f} MB" if floor else ""),
            ref / ours if ours and ref else None,
            ours <= 25 if ours else None,
        )
    ours = med(rows, "payload-stdio-10MB-mcpwire")
    raw = med(rows, "payload-stdio-10MB-raw-mcpwire")
    ref = med(rows, "payload-stdio-10MB-sdk")
    over = raw / ours if ours and raw else None
    add(
        "10 MB argument over stdio, time per call",
        f"≤ 1.5{TIMES} the raw-client time",
        f"{1 / ours:.3f} s ({_ratio(over)} raw)" if ours and over else "n/a",
        f"SDK {1 / ref:.3f} s; raw client {1 / raw:.3f} s" if ref and raw else "n/a",
        over,
        over <= 1.5 if over else None,
    )
    return out


SECTIONS = (
    ("inmem", "1. tools/call echo, in-memory, sequential"),
    ("inmem32", f"7a. tools/call echo, in-memory, {workloads.CONCURRENCY} concurrent callers"),
    ("stdio", "2. tools/call echo over stdio (client spawns the server), sequential"),
    ("stdio32", f"7b. tools/call echo over stdio, {workloads.CONCURRENCY} concurrent callers"),
    ("raw", "3. raw client (os.write/os.read, no framework) → server over stdio"),
    ("limit", "4. pipe-echo limit (two processes, one JSON line per round trip)"),
    ("layer", "5. session layer and codec (in-process, no I/O)"),
    ("framing", "5b. framing: ndjson and SSE decoding (in-process, no I/O)"),
    ("http", "8a. tools/call echo over streamable HTTP (client's worker starts the server)"),
    (
        "http32",
        f"8b. tools/call echo over streamable HTTP, {workloads.CONCURRENCY} concurrent callers",
    ),
    ("httpraw", "8c. raw client (plain socket, keep-alive POSTs) → server over streamable HTTP"),
    ("httplimit", "8d. h11 limits (HTTP/1.1 keep-alive POST echo, raw socket client)"),
    ("async", "11. raw client → server, the echo tool an `async def` (stdio, streamable HTTP)"),
)


def render_targets(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    out = [
        "## Summary: the targets",
        "",
        "Each target, from this run: our number, the reference's (the SDK's, or the limit "
        "the target is set against), the ratio and whether the target is met. Ratios are "
        "higher-is-better: ours over the reference for rates and shares, the reference "
        "over ours for times and memory; except the 10 MB row, which is our time per call "
        "over the raw client's (lower is better). Quick runs and a busy machine make the "
        "rates noisy: check the spreads in the sections below.",
        "",
        "| measure | target | ours | reference | ratio | met? |",
        "|---|---|--:|--:|--:|---|",
    ]
    for r in rows:
        ratio = r["ratio"]
        if ratio is None:
            shown = DASH
        elif "share" in r["measure"] or "raw client →" in r["measure"]:
            shown = f"{ratio * 100:.0f}%"
        else:
            shown = _ratio(ratio)
        met = {True: "**met**", False: "not met", None: "no data"}[r["met"]]
        out.append(
            f"| {r['measure']} | {r['target']} | {r['ours']} | {r['reference']} | {shown} | {met} |"
        )
    out.append("")
    return out


def render_payload(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return []
    out = [
        "## 9. Payload scaling: one large string argument, echoed back (2026-07-28)",
        "",
        "The result carries the text twice (`content` and `structuredContent`), so a call "
        "moves about three times the argument. *MB/s* counts the argument only (10^6 bytes). "
        "*÷ raw* is this pair's time per call over the raw client's against the same "
        "server (the target for mcpwire's 10 MB stdio row is at most 1.5).",
        "",
        f"| measure | implementation | s per call (median) | MB/s | CPU ms per call "
        f"| spread (min{DASH}max s) | vs SDK | ÷ raw |",
        "|---|---|--:|--:|--:|---|--:|--:|",
    ]
    for r in rows:
        if "median" not in r:
            out.append(
                f"| {r['measure']} | {r['impl']} | failed: {r['error'] or 'no data'} | | | | | |"
            )
            continue
        cpu = f"{r['cpu_us_self'] / 1000:,.1f}"
        if "cpu_us_child" in r:
            cpu += f" + {r['cpu_us_child'] / 1000:,.1f}"
        vs_sdk = _ratio(r["vs_sdk"]) if "vs_sdk" in r else ("ref." if r["ref"] == r["id"] else DASH)
        vs_raw = _ratio(r["time_vs_raw"]) if "time_vs_raw" in r else DASH
        out.append(
            f"| {r['measure']} | {r['impl']} | {1 / r['median']:.4f} | {r['mb_per_s']:,.1f} "
            f"| {cpu} | {1 / r['max']:.4f}{DASH}{1 / r['min']:.4f} | {vs_sdk} | {vs_raw} |"
        )
    out.append("")
    return out


def render_rss(rss: dict[str, dict[str, Any]]) -> list[str]:
    if not rss:
        return []
    out = [
        "## 10. Idle server memory (lower is better)",
        "",
        "VmRSS of the server process (from /proc/PID/status), started alone, after a raw "
        "client's `initialize` and `tools/list` (legacy era, so every server holds a "
        "session) and a moment idle.",
        "",
        f"| measure | implementation | RSS MB (median) | spread (min{DASH}max) | SDK ÷ this |",
        "|---|---|--:|---|--:|",
    ]
    out += _lower_is_better_rows(rss, 1.0, ".1f")
    out.append("")
    return out


def _lower_is_better_rows(entries: dict[str, Any], scale: float, fmt: str) -> list[str]:
    """Table rows for one-shot measures (RSS, start times): median, spread, SDK ÷ this."""
    out: list[str] = []
    for key, e in entries.items():
        if "median" not in e:
            out.append(f"| {e['measure']} | {e['impl']} | failed: {e['error']} | | |")
            continue
        ratio = (
            _ratio(e["sdk_over_this"])
            if "sdk_over_this" in e
            else ("ref." if e["ref"] == key else DASH)
        )
        lo, mid, hi = (format(e[k] * scale, fmt) for k in ("min", "median", "max"))
        out.append(f"| {e['measure']} | {e['impl']} | {mid} | {lo}{DASH}{hi} | {ratio} |")
    return out


def _one_shot(measured: list[Timing], unit: str) -> dict[str, dict[str, Any]]:
    """Entries for one-shot measures (times, RSS): samples, median, spread, SDK ÷ this."""
    entries: dict[str, dict[str, Any]] = {}
    for t in measured:
        entry: dict[str, Any] = {
            "measure": t.measure,
            "impl": t.impl,
            "ref": t.ref,
            unit: t.samples,
            "error": t.error,
        }
        if t.samples:
            entry["median"] = statistics.median(t.samples)
            entry["min"], entry["max"] = min(t.samples), max(t.samples)
        entries[t.key] = entry
    for key, entry in entries.items():
        ref = entries.get(entry["ref"] or "", {})
        if "median" in entry and "median" in ref and entry["ref"] != key:
            entry["sdk_over_this"] = ref["median"] / entry["median"]
    return entries


def render(meta: dict[str, Any], summary: dict[str, Any]) -> str:
    m = meta["machine"]
    pkgs = ", ".join(f"{k} {v}" for k, v in m["packages"].items())
    cores = f"{m['cores']}" + (f" ({m['usable_cores']} usable)" if m["usable_cores"] else "")
    out = [
        "# mcpwire benchmarks",
        "",
        "| | |",
        "|---|---|",
        f"| date | {m['date']} |",
        f"| CPU | {m['cpu']}, {cores} cores |",
        f"| idle CPUs | {m['idle']} |",
        f"| Python | {m['python']} on {m['platform']} |",
        f"| packages | {pkgs} |",
        f"| mcpwire commit | {m['commit']} |",
        f"| run | `{meta['command']}`: {meta['profile']['rounds']} interleaved rounds of about "
        f"{meta['profile']['target']} s per workload; {meta['wall_seconds']:.0f} s in all |",
        f"| load average (1, 5, 15 min) | {m['loadavg_start']} at start, "
        f"{meta['loadavg_end']} at end |",
        "",
        *render_targets(summary.get("targets", [])),
        "Rates are the median over the rounds (higher is better); the spread is the lowest and "
        "highest round. *CPU µs per op* is the median CPU time (user + system) per operation "
        "of the measuring process, plus that of the child process it spawned (the server) "
        "where there is one; on a busy machine it is steadier than the rate. *vs SDK* "
        "divides by the reference SDK's median rate for the same measure and era (for stdio, "
        "the SDK client talking to the SDK server); *vs SDK, CPU* divides the SDK's CPU "
        "per op by this one's (client and server together); *vs limit* divides by "
        "the physical limit of the transport: the unpinned pipe-echo rate of section 4 "
        "for stdio, the h11-echo rate of section 8d for HTTP, a plain `bytes.split` of "
        "the same stream for the ndjson framers of section 5b. See benchmarks/README.md "
        "for what each number means and what bounds it.",
        "",
    ]
    rows = summary["throughput"]
    for group, title in SECTIONS:
        members = [r for r in rows.values() if r["group"] == group]
        if not members:
            continue
        out += [f"## {title}", ""]
        out.append(
            "| measure | implementation | era | rate (median) | µs per op | CPU µs per op "
            f"| spread (min{DASH}max) | vs SDK | vs SDK, CPU | vs limit |"
        )
        out.append("|---|---|---|--:|--:|--:|---|--:|--:|--:|")
        for r in members:
            era = r["protocol_version"] or r["era"] or DASH
            if "median" not in r:
                out.append(
                    f"| {r['measure']} | {r['impl']} | {era} | failed: "
                    f"{r['error'] or 'no data'} | | | | | | |"
                )
                continue
            med = r["median"]
            spread = (
                f"{_fmt_rate(r['min'])}{DASH}{_fmt_rate(r['max'])} "
                f"(±{(r['max'] - r['min']) / 2 / med * 100:.0f}%)"
            )
            vs_sdk = (
                _ratio(r["vs_sdk"]) if "vs_sdk" in r else ("ref." if r["ref"] == r["id"] else DASH)
            )
            vs_cpu = _ratio(r["vs_sdk_cpu"]) if "vs_sdk_cpu" in r else vs_sdk
            vs_limit = f"{r['vs_limit'] * 100:.1f}%" if "vs_limit" in r else DASH
            cpu = f"{r['cpu_us_self']:,.0f}"
            if "cpu_us_child" in r:
                cpu += f" + {r['cpu_us_child']:,.0f}"
            out.append(
                f"| {r['measure']} | {r['impl']} | {era} | {_fmt_rate(med)} "
                f"{r['unit']} | {1e6 / med:,.1f} | {cpu} | {spread} | {vs_sdk} | {vs_cpu} "
                f"| {vs_limit} |"
            )
        out.append("")
    startup = summary["startup"]
    if startup:
        out += ["## 6. Cold start and import time (lower is better)", ""]
        out.append(
            f"| measure | implementation | median ms | spread (min{DASH}max) | SDK \u00f7 this |"
        )
        out.append("|---|---|--:|---|--:|")
        out += _lower_is_better_rows(startup, 1000.0, ",.1f")
        out.append("")
    out += render_payload([r for r in rows.values() if r["group"] == "payload"])
    out += render_rss(summary.get("idle_rss", {}))
    mismatched = [
        r["id"]
        for r in rows.values()
        if r["era"]
        and r["protocol_version"]
        and (r["protocol_version"] == workloads.MODERN) != (r["era"] == "modern")
    ]
    if mismatched:
        out += [
            f"**Warning**: these workloads negotiated an unexpected era: {', '.join(mismatched)}.",
            "",
        ]
    return "\n".join(out)


# -- main ------------------------------------------------------------------------------


def _pip(python: str, *args: str) -> None:
    progress(f"benchmarks: {python} -m pip install {' '.join(args)}")
    subprocess.run([python, "-m", "pip", "install", "--quiet", *args], check=True)


def _can_import(python: str, *modules: str) -> bool:
    probe = "import importlib.util, sys; sys.exit(any(importlib.util.find_spec(m) is None "
    probe += f"for m in {list(modules)!r}))"
    env = dict(os.environ)
    env.update(workloads.child_env())
    return subprocess.run([python, "-c", probe], capture_output=True, env=env).returncode == 0


def bootstrap(install: bool) -> None:
    """Install what the benchmarks need and nothing more: the reference SDK (pinned in
    ``requirements.txt``) into this interpreter if it is missing, and FastMCP into a
    venv of its own under ``benchmarks/.venvs/`` (``requirements-fastmcp.txt``)."""
    missing = [
        m for m in ("mcpwire", "anyio", "orjson", "h11") if not _can_import(sys.executable, m)
    ]
    if missing:
        sys.exit(
            f"benchmarks: cannot import {', '.join(missing)} with {sys.executable}; install "
            "mcpwire first, from the repository root:\n\n    python -m pip install -e .\n"
        )
    if not _can_import(sys.executable, "mcp"):
        if not install:
            sys.exit("benchmarks: the reference SDK (mcp) is missing; run without --no-install")
        _pip(sys.executable, "-r", str(HERE / "requirements.txt"))
    fastmcp_python = workloads.python_for("fastmcp")
    if Path(fastmcp_python).exists() and _can_import(fastmcp_python, "fastmcp", "mcp"):
        return
    if not install:
        progress("benchmarks: no FastMCP venv (--no-install): the FastMCP rows will fail")
        return
    if not Path(fastmcp_python).exists():
        progress(f"benchmarks: creating {workloads.FASTMCP_VENV}")
        subprocess.run([sys.executable, "-m", "venv", str(workloads.FASTMCP_VENV)], check=True)
    _pip(fastmcp_python, "-r", str(HERE / "requirements-fastmcp.txt"))


def compile_bytecode() -> None:
    """Write mcpwire's bytecode, as installing a wheel does.

    The SDK and FastMCP come from wheels, which pip compiles at install time;
    mcpwire is usually installed editable, and where ``PYTHONDONTWRITEBYTECODE``
    is set its modules would be compiled from source at every start, adding
    tens of milliseconds to its import and cold-start times and some memory
    to its RSS, none of which an installed package pays.
    """
    import compileall

    import mcpwire

    compileall.compile_dir(str(Path(mcpwire.__file__).parent), quiet=1)


def fastmcp_version() -> str:
    python = workloads.python_for("fastmcp")
    if not Path(python).exists():
        return "not installed"
    probe = "import importlib.metadata as m; print(m.version('fastmcp'), m.version('mcp'))"
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    if done.returncode:
        return "not installed"
    fastmcp, mcp = done.stdout.split()
    return f"{fastmcp} (own venv, with mcp {mcp})"


def measure(
    profile: Profile, cases: list[Case], command: str, *, startup: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every workload in interleaved rounds, then (``startup``) cold start, import and
    memory: the report's metadata and summary."""
    started = time.perf_counter()
    machine = machine_info()
    RESULTS.mkdir(parents=True, exist_ok=True)
    log_path = Path(tempfile.gettempdir()) / "mcpwire-benchmarks-workers.log"
    progress(
        f"benchmarks: {len(cases)} workloads, {profile.rounds} rounds (worker stderr: {log_path})"
    )
    with open(log_path, "wb") as log:
        workers = [Worker(c, log) for c in cases]
        try:
            progress("setting up")
            start_workers(workers, parallel=max(1, min(2, os.cpu_count() or 1)))
            progress("calibrating")
            for w in workers:
                if w.error is None:
                    try:
                        calibrate(w, profile)
                    except WorkerError as exc:
                        w.error = f"calibration: {exc}"
                        w.stop()
            live = [w for w in workers if w.error is None]
            for rnd in range(profile.rounds):
                progress(f"round {rnd + 1}/{profile.rounds}")
                shift = rnd * len(live) // max(1, profile.rounds)
                for w in live[shift:] + live[:shift]:
                    if w.error is not None:
                        continue
                    try:
                        run_once(w, profile.target)
                    except WorkerError as exc:
                        w.error = f"round {rnd + 1}: {exc}"
                        w.stop()
        finally:
            for w in workers:
                w.stop()
    timings: list[Timing] = []
    memory: list[Timing] = []
    if startup:
        progress("cold start and import time")
        timings = measure_startup(profile.startup_reps)
        progress("idle memory")
        memory = measure_rss(profile.rss_reps, profile.rss_settle)
    meta = {
        "command": command.strip(),
        "profile": profile.__dict__,
        "machine": machine,
        "loadavg_end": _loadavg(),
        "wall_seconds": time.perf_counter() - started,
    }
    summary = summarize(workers, timings, memory)
    return meta, summary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python benchmarks/run.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--quick", action="store_true", help="fewer rounds and shorter runs (about 6 minutes)"
    )
    parser.add_argument("--out", type=Path, help="also write the report here (and NAME.json)")
    parser.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="TEXT",
        help="run only workloads whose id contains TEXT (repeatable)",
    )
    parser.add_argument("--rounds", type=int, help="override the number of rounds")
    parser.add_argument("--target", type=float, help="override the seconds per timed run")
    parser.add_argument(
        "--no-startup", action="store_true", help="skip the cold start and import time measurements"
    )
    parser.add_argument("--list", action="store_true", help="list the workload ids and exit")
    parser.add_argument(
        "--no-install",
        action="store_true",
        help="install nothing (by default a missing reference SDK is installed, and FastMCP "
        "into benchmarks/.venvs/fastmcp)",
    )
    parser.add_argument(
        "--setup", action="store_true", help="only install what the benchmarks need, then exit"
    )
    vmidle.add_option(parser, "run")
    args = parser.parse_args(argv)
    if args.list:
        for c in CASES:
            print(f"{c.id:40} {c.measure}: {c.impl}")
        return
    bootstrap(not args.no_install)
    if args.setup:
        return
    compile_bytecode()
    profile = QUICK if args.quick else DEFAULT
    if args.rounds or args.target:
        profile = Profile(
            args.rounds or profile.rounds,
            args.target or profile.target,
            profile.calibrate,
            profile.startup_reps,
            profile.rss_reps,
            profile.rss_settle,
        )
    cases = [c for c in CASES if not args.filter or any(f in c.id for f in args.filter)]
    command = "python benchmarks/run.py" + " ".join(
        [""] + (argv if argv is not None else sys.argv[1:])
    )
    with vmidle.guest_halt_poll(args.guest_halt_poll):
        meta, summary = measure(profile, cases, command, startup=not args.no_startup)
    report = render(meta, summary)
    print(report)
    outputs = {RESULTS / "latest.md"}
    if args.out:
        outputs.add(args.out.resolve())
    for path in outputs:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(report + "\n")
        path.with_suffix(".json").write_text(json.dumps({**meta, **summary}, indent=1) + "\n")
    progress("wrote " + ", ".join(str(p) for p in sorted(outputs)))


if __name__ == "__main__":
    main()
