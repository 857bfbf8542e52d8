"""The conformance harness's own pieces, fast and offline.

The official suite itself (Node, the pinned npm packages, a network namespace,
a few minutes) runs from ``.ci/run`` as ``python conformance/run.py``. What is
tested here:
the fixture server's exact contents in both eras (in-process, through the same
assertions the harness's ``fixture`` leg makes over HTTP), the reading of the
harness's ``checks.json`` files, and the expected-failures file's rules.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import anyio
import pytest

from mcpwire import Client

ROOT = Path(__file__).resolve().parent.parent
CONFORMANCE = ROOT / "conformance"


def _load(name: str) -> ModuleType:
    if str(CONFORMANCE) not in sys.path:
        sys.path.insert(0, str(CONFORMANCE))
    spec = importlib.util.spec_from_file_location(name, CONFORMANCE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = sys.modules.get(name)
    if module is None:
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return module


run = _load("run")
fixture_check = _load("fixture_check")
everything_server = _load("everything_server")


def test_fixture_contents_in_both_eras(capsys: pytest.CaptureFixture[str]) -> None:
    def connect(**options: Any) -> Client:
        return Client(everything_server.server, **options)

    failed = anyio.run(fixture_check.run_checks, connect)
    out = capsys.readouterr().out
    assert failed == 0, "\n".join(line for line in out.splitlines() if line.startswith("FAIL"))
    assert out.count("PASS ") > 50


def test_expected_failures_file_names_an_issue_on_every_line() -> None:
    entries = run.load_expected(run.EXPECTED_FILE)
    assert entries, "the file exists and lists what is not built yet"
    legs = set(run.LEGS_BY_NAME)
    for entry in entries:
        assert run.REASON_RE.search(entry.reason), entry
        import fnmatch

        assert any(fnmatch.fnmatchcase(leg, entry.leg) for leg in legs), entry


def _checks_dir(tmp_path: Path) -> Path:
    out = tmp_path / "checks"
    stamp = "2026-01-02T03-04-05-678Z"
    one = out / f"server-tools-list-{stamp}"
    one.mkdir(parents=True)
    (one / "checks.json").write_text(
        json.dumps(
            [
                {"id": "tools-list", "status": "SUCCESS"},
                {"id": "outgoing-request", "status": "INFO"},
                {"id": "tool-names", "status": "FAILURE", "errorMessage": "bad name"},
                {"id": "soft", "status": "WARNING"},
            ]
        )
    )
    (out / f"server-skipped-one-{stamp}").mkdir()
    return out


def test_tally_reads_checks_and_the_harness_summary(tmp_path: Path) -> None:
    out = _checks_dir(tmp_path)
    log = "\x1b[32m✓ tools-list: 1 passed, 1 failed\x1b[0m\n- skipped-one: skipped\n"
    result = run.LegResult("server-alpha-all")
    run.tally(run.LEGS_BY_NAME["server-alpha-all"], out, log, result)
    assert (result.passed, result.failed, result.warnings) == (1, 1, 1)
    assert result.skipped == ["skipped-one"]
    assert [(f.scenario, f.check, f.status) for f in result.failures] == [
        ("tools-list", "tool-names", "FAILURE"),
        ("tools-list", "soft", "WARNING"),
    ]
    assert result.error is None


def test_judge_wants_every_failure_listed_and_no_stale_line(tmp_path: Path) -> None:
    result = run.LegResult("server-alpha-all")
    result.failures = [run.Failure("tools-list", "tool-names", "bad name")]
    result.per_scenario = {"tools-list": {}, "ping": {}, "sse-retry": {}}
    listed = run.Expected(1, "server-*", "tools-list:tool-*", "issue 4: x")
    stale = run.Expected(2, "server-*", "ping", "issue 4: y")
    flaky = run.Expected(3, "server-*", "sse-retry", "issue 4: z", intermittent=True)
    assert run.judge([result], [listed, stale, flaky]) == [
        "expected-failures.txt:2: `server-* ping` now passes: delete the line "
        "(the file only shrinks)"
    ]
    elsewhere = run.Expected(4, "server-*", "not-run-here", "issue 4: w")
    assert run.judge([result], [listed, elsewhere]) == []
    unlisted = run.judge([result], [])
    assert len(unlisted) == 1 and "unexpected FAILURE tools-list:tool-names" in unlisted[0]


def test_expected_failures_file_refuses_a_line_without_an_issue(tmp_path: Path) -> None:
    bad = tmp_path / "expected.txt"
    bad.write_text("server-* ping  # because\n")
    with pytest.raises(SystemExit):
        run.load_expected(bad)
