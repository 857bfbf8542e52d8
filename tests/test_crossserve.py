"""Property-based conformance against the reference SDK (``mcp==2.3.0``): cross-serving.

Hypothesis generates a server spec (tools with random input schemas and behaviours,
resources, templates, prompts; ``tests/interop/spec_strategies.py``) and a request program
(valid and invalid arguments, unknown names, pings and notifications interleaved). Each
example is served twice from the same spec, by mcpwire (``spec_server_mcpwire.py``) and by
the reference SDK (``spec_server_ref.py``), and each server is driven by both clients,
mcpwire's ``Client`` and the SDK's ``Client``, over one transport (stdio or streamable HTTP)
in one era (2025-11-25 legacy or 2026-07-28 modern): four real connections per example.

Asserted for every example:

* the observation is complete (every step answered, the lists name exactly the spec's
  tools, resources, templates and prompts, every call that asked for progress and
  every log tool heard from) — so a broken harness cannot pass;
* (A) through the same client, the mcpwire server and the SDK server are observed the same
  (``spec_observe.normalise``), apart from ``spec_deviations.SERVER``;
* (B) the same server is observed the same through both clients, apart from
  ``spec_deviations.CLIENT``;
* every frame mcpwire wrote (server frames when it serves, client frames when it calls)
  validates against the SDK's wire types for its era (``interop/wirecheck.py``): stdio is
  captured by ``interop/tee.py``, HTTP by a recording TCP relay (``interop/spec_capture.py``).

Budget: 4 examples per stdio test and 10 per HTTP test (transport x era x anyio backend),
``derandomize=True`` so CI runs the same examples every time; no shrinking in CI (each
example costs seconds; a failure prints the full spec and program). Set
``CROSSSERVE_EXAMPLES=50`` (every test) and ``CROSSSERVE_SHRINK=1`` to hunt locally.
"""

from __future__ import annotations

import difflib
import itertools
import json
import os
import pprint
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from interop import spec_deviations
from interop.spec_capture import HttpCapture, read_stdio_capture
from interop.spec_observe import MODERN, Target, normalise, observe
from interop.spec_strategies import programs, specs
from interop.wirecheck import check_capture

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.timeout(300),
    # On trio, the SDK's HTTP client (httpx2/httpcore2) leaves its response async generators
    # to the garbage collector, which trio reports as a ResourceWarning; not ours to fix.
    pytest.mark.filterwarnings("ignore:Async generator 'httpx2.:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpcore2.:ResourceWarning"),
]

INTEROP = Path(__file__).resolve().parent / "interop"
#: Examples per test; a stdio example costs ~4.5 s (two reference-server spawns), an HTTP one
#: ~1.4 s (long-lived hosts). Together about 2 minutes on 2 cores.
EXAMPLES = {
    "stdio": int(os.environ.get("CROSSSERVE_EXAMPLES", "4")),
    "http": int(os.environ.get("CROSSSERVE_EXAMPLES", "10")),
}
PHASES = (
    tuple(Phase)
    if os.environ.get("CROSSSERVE_SHRINK")
    else (Phase.explicit, Phase.reuse, Phase.generate)
)
IMPLS = ("mcpwire", "ref")
CLIENTS = ("mcpwire", "sdk")
_counter = itertools.count()


class HttpHost:
    """A long-lived spec server process (``spec_server_*.py http``), one spec at a time."""

    def __init__(self, impl: str, log: Path) -> None:
        self.log = open(log, "ab")  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen(
            [sys.executable, str(INTEROP / f"spec_server_{impl}.py"), "http"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
        )

    def serve(self, spec_path: Path) -> int:
        """Replace the running server with one for ``spec_path``; its port."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{spec_path}\n".encode())
        self.process.stdin.flush()
        line = self.process.stdout.readline().decode()
        if not line.startswith("PORT "):
            self.log.flush()
            tail = Path(self.log.name).read_text("utf-8", errors="replace")[-3000:]
            raise RuntimeError(f"the spec host answered {line!r}; its stderr ends:\n{tail}")
        return int(line.split()[1])

    def close(self) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.close()
        except BrokenPipeError:  # it died already (its log says why)
            pass
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()
        self.log.close()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("crossserve")


@pytest.fixture(scope="module")
def http_hosts(workdir: Path) -> Iterator[dict[str, HttpHost]]:
    hosts = {impl: HttpHost(impl, workdir / f"host-{impl}.log") for impl in IMPLS}
    try:
        yield hosts
    finally:
        for host in hosts.values():
            host.close()


async def run_example(
    transport: str,
    era: str,
    spec: dict[str, Any],
    program: list[list[Any]],
    workdir: Path,
    hosts: dict[str, HttpHost] | None,
) -> tuple[dict[tuple[str, str], dict[str, Any]], list[str]]:
    """Observe the program through both clients against both servers; wire problems too."""
    case = workdir / f"case{next(_counter)}"
    case.mkdir()
    spec_path = case / "spec.json"
    spec_path.write_text(json.dumps(spec), "utf-8")
    observations: dict[tuple[str, str], dict[str, Any]] = {}
    problems: list[str] = []
    for client, impl in itertools.product(CLIENTS, IMPLS):
        # mcpwire's frames: the server's when mcpwire serves, the client's when it calls.
        sides = tuple(side for side, who in (("S>C", impl), ("C>S", client)) if who == "mcpwire")
        label = f"{client} client -> {impl} server"
        capture = case / f"{client}-{impl}.capture"
        if transport == "stdio":
            target = Target(impl, "stdio", spec_path, capture=capture if sides else None)
            observations[client, impl] = await observe(client, target, era, program)
            frames = read_stdio_capture(capture) if sides else []
        else:
            assert hosts is not None
            upstream = hosts[impl].serve(spec_path)
            recording = HttpCapture()
            async with anyio.create_task_group() as tg:
                port = await tg.start(recording.relay, upstream)
                target = Target(impl, "http", spec_path, url=f"http://127.0.0.1:{port}/mcp")
                observations[client, impl] = await observe(client, target, era, program)
                tg.cancel_scope.cancel()
            frames = recording.frames()
        if sides:
            mine = [f for f in frames if f.direction in sides]
            assert mine, f"{label}: no frames of mcpwire's captured"
            problems += [f"{label}: {p}" for p in check_capture(frames, sides=sides)]
    return observations, problems


def check_complete(
    obs: dict[str, Any], spec: dict[str, Any], program: list[list[Any]], label: str
) -> None:
    """The observation answers every step and names what the spec has (no vacuous pass)."""
    assert len(obs["ops"]) == len(program), label
    expected = {
        "tools": sorted(t["name"] for t in spec["tools"]),
        "resources": sorted(r["uri"] for r in spec["resources"]),
        "templates": sorted(t["uriTemplate"] for t in spec["templates"]),
        "prompts": sorted(p["name"] for p in spec["prompts"]),
    }
    keys = {"tools": "name", "resources": "uri", "templates": "uriTemplate", "prompts": "name"}
    for op, entry in zip(program, obs["ops"], strict=True):
        if op[0] == "list":
            assert entry[0] == "list", f"{label}: {op} -> {entry}"
            assert sorted(i[keys[op[1]]] for i in entry[2]) == expected[op[1]], label
        if op[0] == "call" and op[1] in {t["name"] for t in spec["tools"]}:
            assert entry[0] == "result", f"{label}: {op} -> {entry}"


def diff(a: Any, b: Any) -> str:
    left = pprint.pformat(a, width=100).splitlines()
    right = pprint.pformat(b, width=100).splitlines()
    return "\n".join(difflib.unified_diff(left, right, lineterm="", n=2))


def compare(
    transport: str,
    era: str,
    spec: dict[str, Any],
    program: list[list[Any]],
    observations: dict[tuple[str, str], dict[str, Any]],
) -> list[str]:
    failures: list[str] = []
    for (client, impl), obs in observations.items():
        check_complete(obs, spec, program, f"{client} client -> {impl} server")
    norm = {key: normalise(obs, program) for key, obs in observations.items()}
    # (A) the two servers, through the same client.
    for client in CLIENTS:
        mine = spec_deviations.apply(
            spec_deviations.SERVER, norm[client, "mcpwire"], program, transport, era
        )
        ref = spec_deviations.apply(
            spec_deviations.SERVER, norm[client, "ref"], program, transport, era
        )
        if mine != ref:
            failures.append(
                f"(A) {client} client: mcpwire server (-) vs reference server (+):\n"
                + diff(mine, ref)
            )
    # (B) the same server, through the two clients.
    for impl in IMPLS:
        ours = spec_deviations.apply(
            spec_deviations.CLIENT, norm["mcpwire", impl], program, transport, era
        )
        theirs = spec_deviations.apply(
            spec_deviations.CLIENT, norm["sdk", impl], program, transport, era
        )
        if ours != theirs:
            failures.append(
                f"(B) {impl} server: mcpwire client (-) vs SDK client (+):\n{diff(ours, theirs)}"
            )
    return failures


@st.composite
def cases(draw: st.DrawFn, era: str) -> tuple[dict[str, Any], list[list[Any]]]:
    spec = draw(specs())
    return spec, draw(programs(spec, era))


def crossserve_test(transport: str, era: str) -> Any:
    @settings(
        max_examples=EXAMPLES[transport],
        deadline=None,
        derandomize=True,
        phases=PHASES,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        database=None,
    )
    @given(case=cases("legacy" if era == "legacy" else "modern"))
    async def test(
        case: tuple[dict[str, Any], list[list[Any]]],
        workdir: Path,
        http_hosts: dict[str, HttpHost],
    ) -> None:
        spec, program = case
        observations, problems = await run_example(
            transport, era, spec, program, workdir, http_hosts if transport == "http" else None
        )
        failures = compare(transport, era, spec, program, observations)
        failures += problems
        assert not failures, "\n\n".join(failures)

    return test


test_stdio_legacy = crossserve_test("stdio", "legacy")
test_stdio_modern = crossserve_test("stdio", MODERN)
test_http_legacy = crossserve_test("http", "legacy")
test_http_modern = crossserve_test("http", MODERN)


# =================================================================================================
# Found by the property tests; minimal reproductions
# =================================================================================================


async def test_mcpwire_client_ping_in_modern_era_writes_valid_frames(workdir: Path) -> None:
    """``Client.ping()`` on a 2026-07-28 connection writes only frames of that revision.

    2026-07-28 removed ``ping`` (``changelog.mdx``; it is in no ``ClientRequest`` of that
    schema); ``ping()`` checks liveness with ``server/discover`` there, and every frame it
    writes must validate against the SDK's 2026-07-28 wire types.
    """
    case = workdir / f"ping{next(_counter)}"
    case.mkdir()
    spec_path = case / "spec.json"
    spec_path.write_text(
        json.dumps(
            {
                "tools": [{"name": "t", "inputSchema": {"type": "object"}, "behaviour": "echo"}],
                "resources": [{"uri": "res://r", "name": "r", "text": "r"}],
                "templates": [],
                "prompts": [{"name": "p", "arguments": [], "messages": []}],
            }
        ),
        "utf-8",
    )
    capture = case / "ping.capture"
    target = Target("ref", "stdio", spec_path, capture=capture)
    obs = await observe("mcpwire", target, MODERN, [["list", "tools"], ["ping"]])
    assert obs["ops"][0][0] == "list"
    frames = read_stdio_capture(capture)
    assert any(f.direction == "C>S" for f in frames)
    problems = check_capture(frames, sides=("C>S",))
    assert not problems, "\n".join(problems)
