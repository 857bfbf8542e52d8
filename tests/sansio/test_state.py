"""Tests for the legacy-era lifecycle state machine and its request gate."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpwire import LocalProtocolError, ProtocolError
from mcpwire.sansio import (
    REQUEST_GATE,
    Lifecycle,
    LifecycleInput,
    LifecycleState,
    RequestKind,
)

S = LifecycleState
In = LifecycleInput

#: The whole transition table, written out independently of the package.
EXPECTED: dict[tuple[LifecycleState, LifecycleInput], LifecycleState] = {
    (S.IDLE, In.INITIALIZE_REQUEST): S.INITIALIZING,
    (S.INITIALIZING, In.INITIALIZE_RESULT): S.AWAITING_INITIALIZED,
    (S.INITIALIZING, In.INITIALIZE_ERROR): S.IDLE,
    (S.AWAITING_INITIALIZED, In.INITIALIZED_NOTIFICATION): S.READY,
    (S.READY, In.INITIALIZED_NOTIFICATION): S.READY,
    (S.IDLE, In.CONNECTION_LOST): S.CLOSED,
    (S.INITIALIZING, In.CONNECTION_LOST): S.CLOSED,
    (S.AWAITING_INITIALIZED, In.CONNECTION_LOST): S.CLOSED,
    (S.READY, In.CONNECTION_LOST): S.CLOSED,
    (S.CLOSED, In.CONNECTION_LOST): S.CLOSED,
}


def machine_in(state: LifecycleState) -> Lifecycle:
    lc = Lifecycle()
    lc.state = state
    return lc


def check_pair(state: LifecycleState, event: LifecycleInput) -> None:
    lc = machine_in(state)
    target = EXPECTED.get((state, event))
    if target is None:
        with pytest.raises(LocalProtocolError) as info:
            lc.on(event)
        assert lc.state is state, "a refused input must not move the machine"
        assert event.value in str(info.value)
        assert state.value in str(info.value)
    else:
        assert lc.on(event) is target
        assert lc.state is target


@pytest.mark.parametrize(
    ("state", "event"),
    list(itertools.product(LifecycleState, LifecycleInput)),
    ids=lambda v: v.name,
)
def test_every_state_input_pair(state: LifecycleState, event: LifecycleInput) -> None:
    check_pair(state, event)


@given(st.sampled_from(LifecycleState), st.sampled_from(LifecycleInput))
def test_every_state_input_pair_hypothesis(state: LifecycleState, event: LifecycleInput) -> None:
    check_pair(state, event)


@given(st.lists(st.sampled_from(LifecycleInput), max_size=30))
def test_random_walks_follow_the_table(events: list[LifecycleInput]) -> None:
    lc = Lifecycle()
    state = S.IDLE
    for event in events:
        target = EXPECTED.get((state, event))
        if target is None:
            with pytest.raises(LocalProtocolError):
                lc.on(event)
        else:
            lc.on(event)
            state = target
        assert lc.state is state


def test_starts_idle() -> None:
    assert Lifecycle().state is S.IDLE


def test_happy_path() -> None:
    lc = Lifecycle()
    assert lc.on(In.INITIALIZE_REQUEST) is S.INITIALIZING
    assert lc.on(In.INITIALIZE_RESULT) is S.AWAITING_INITIALIZED
    assert lc.on(In.INITIALIZED_NOTIFICATION) is S.READY
    assert lc.on(In.INITIALIZED_NOTIFICATION) is S.READY
    assert lc.on(In.CONNECTION_LOST) is S.CLOSED
    assert lc.on(In.CONNECTION_LOST) is S.CLOSED


def test_failed_initialize_can_be_retried() -> None:
    lc = Lifecycle()
    lc.on(In.INITIALIZE_REQUEST)
    assert lc.on(In.INITIALIZE_ERROR) is S.IDLE
    assert lc.on(In.INITIALIZE_REQUEST) is S.INITIALIZING


def test_errors_are_local_protocol_errors() -> None:
    with pytest.raises(ProtocolError):
        Lifecycle().on(In.INITIALIZE_RESULT)


# -- request gate ------------------------------------------------------------

EXPECTED_GATE = {
    S.IDLE: {RequestKind.INITIALIZE, RequestKind.PING},
    S.INITIALIZING: {RequestKind.PING},
    S.AWAITING_INITIALIZED: {RequestKind.PING, RequestKind.OTHER},
    S.READY: {RequestKind.PING, RequestKind.OTHER},
    S.CLOSED: set(),
}


def test_request_gate_contents() -> None:
    assert set(REQUEST_GATE) == set(LifecycleState)
    assert {state: set(kinds) for state, kinds in REQUEST_GATE.items()} == EXPECTED_GATE
    for kinds in REQUEST_GATE.values():
        assert isinstance(kinds, frozenset)


METHOD_KIND = {
    "initialize": RequestKind.INITIALIZE,
    "ping": RequestKind.PING,
    "tools/list": RequestKind.OTHER,
    "Initialize": RequestKind.OTHER,
    "": RequestKind.OTHER,
}


@pytest.mark.parametrize(
    ("state", "method"),
    list(itertools.product(LifecycleState, METHOD_KIND)),
    ids=lambda v: getattr(v, "name", v) or "empty",
)
def test_allows_follows_the_gate(state: LifecycleState, method: str) -> None:
    lc = machine_in(state)
    assert lc.allows(method) is (METHOD_KIND[method] in EXPECTED_GATE[state])
    assert lc.state is state


@pytest.mark.parametrize("state", list(LifecycleState), ids=lambda s: s.name)
@pytest.mark.parametrize("method", ["initialize", "tools/list", "ping"])
def test_refusal_is_one_sentence(state: LifecycleState, method: str) -> None:
    text = machine_in(state).refusal(method)
    assert isinstance(text, str) and text
    assert "\n" not in text


def test_refusal_wording() -> None:
    assert "already initialized" in machine_in(S.READY).refusal("initialize")
    assert "initialize first" in machine_in(S.IDLE).refusal("tools/list")
    assert "closed" in machine_in(S.CLOSED).refusal("tools/list")
