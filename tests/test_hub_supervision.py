"""Supervision policy without processes (pain point 16): backoff and error history.

Backoff doubles from ``initial_backoff`` to ``max_backoff`` with +-``jitter``;
the error history keeps the last 100 entries, each cut at 1,000 characters
(seed 000's ``appendErrorMessage``), with a timestamp and the stderr tail.
"""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from mcpwire import RestartPolicy, ServerConfig, ServerState
from mcpwire._hub_status import MAX_ERROR_LENGTH
from mcpwire._hub_supervisor import MAX_ERRORS, Supervisor

pytestmark = pytest.mark.anyio


def test_backoff_doubles_up_to_the_cap_with_jitter() -> None:
    exact = RestartPolicy(initial_backoff=0.5, max_backoff=30, jitter=0)
    assert [exact.backoff(n) for n in range(1, 9)] == [0.5, 1, 2, 4, 8, 16, 30, 30]
    jittered = RestartPolicy(initial_backoff=1, jitter=0.2)
    samples = {jittered.backoff(1) for _ in range(200)}
    assert all(0.8 <= s <= 1.2 for s in samples) and len(samples) > 100


async def test_error_history_is_bounded_and_entries_are_cut() -> None:
    hub = SimpleNamespace(
        startup_timeout=1.0, restart_policy=RestartPolicy(), _state_changed=lambda *a: None
    )
    sup = Supervisor(hub, ServerConfig(name="s", command="x"))  # type: ignore[arg-type]
    before = time.time()
    for i in range(MAX_ERRORS + 20):
        sup.record(f"{i}: " + "x" * 2000, stderr_tail="y" * 3000)
    assert len(sup.errors) == MAX_ERRORS
    first, last = sup.errors[0], sup.errors[-1]
    assert first.message.startswith("20: ") and last.message.startswith(f"{MAX_ERRORS + 19}: ")
    assert len(last.message) == MAX_ERROR_LENGTH + len("...(truncated)")
    assert last.message.endswith("...(truncated)")
    assert len(last.stderr_tail) <= MAX_ERROR_LENGTH + len("...(truncated)")
    assert last.timestamp >= before and last.level == "error"
    status = sup.status(tools=0)
    assert status.state is ServerState.STARTING and len(status.error_history) == MAX_ERRORS
    assert status.to_json()["errorHistory"][-1]["stderrTail"].startswith("...(truncated)")
