"""Tests for request/response correlation, progress and cancellation (sans-IO)."""

from __future__ import annotations

import copy
import itertools

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    invariant,
    rule,
)
from strategies import json_objects, request_ids

from mcpwire import LocalProtocolError
from mcpwire.sansio import (
    ErrorObject,
    ErrorResponse,
    InState,
    Invalid,
    Notification,
    OutState,
    Request,
    Response,
    RPCState,
    _rpc,
    parse,
)

# -- the per-request tables ---------------------------------------------------

Out = _rpc._OutInput
In = _rpc._InInput

EXPECTED_OUT = {
    (OutState.PENDING, Out.RESPONSE): OutState.ANSWERED,
    (OutState.PENDING, Out.ABANDON): OutState.ABANDONED,
}
EXPECTED_IN = {
    (InState.RUNNING, In.CANCEL): InState.CANCELLED,
    (InState.RUNNING, In.FINISH): InState.FINISHED,
    (InState.CANCELLED, In.CANCEL): InState.CANCELLED,
    (InState.CANCELLED, In.FINISH): InState.FINISHED,
}


@pytest.mark.parametrize(
    ("state", "event"), list(itertools.product(OutState, Out)), ids=lambda v: v.name
)
def test_outgoing_table(state: OutState, event: object) -> None:
    assert _rpc._OUT.get((state, event)) is EXPECTED_OUT.get((state, event))  # type: ignore[call-overload]


@pytest.mark.parametrize(
    ("state", "event"), list(itertools.product(InState, In)), ids=lambda v: v.name
)
def test_incoming_table(state: InState, event: object) -> None:
    assert _rpc._IN.get((state, event)) is EXPECTED_IN.get((state, event))  # type: ignore[call-overload]


@given(st.sampled_from(OutState), st.sampled_from(Out))
def test_outgoing_pairs_through_the_api(state: OutState, event: object) -> None:
    """Drive one outgoing request into ``state``, apply ``event``, check the result.

    Pairs without a row are exactly the ones the API makes unreachable: an
    answered or abandoned request is no longer pending, so a later response is
    ignored and counted, and a later abandon returns None, never raising.
    """
    rpc = RPCState()
    req, out = rpc.start_request("m")
    if state is OutState.ANSWERED:
        rpc.response_received(Response(req.id, {}))
    elif state is OutState.ABANDONED:
        rpc.abandon(req.id)
    assert out.state is state
    before = rpc.counters.as_dict()
    if event is Out.RESPONSE:
        got = rpc.response_received(Response(req.id, {}))
    else:
        got = rpc.abandon(req.id)
    target = EXPECTED_OUT.get((state, event))  # type: ignore[call-overload]
    if target is None:
        assert got is None
        assert out.state is state
        if event is Out.RESPONSE:
            key = "late_responses" if state is OutState.ABANDONED else "unknown_responses"
            assert rpc.counters.as_dict()[key] == before[key] + 1
    else:
        assert got is not None
        assert out.state is target
    assert rpc.pending_count == 0


@given(st.sampled_from([InState.RUNNING, InState.CANCELLED, None]), st.sampled_from(In))
def test_incoming_pairs_through_the_api(state: InState | None, event: object) -> None:
    """``None`` stands for a request that is not running (never seen or finished)."""
    rpc = RPCState()
    req = Request(5, "m")
    if state is not None:
        assert rpc.request_received(req)
        if state is InState.CANCELLED:
            assert rpc.cancel_received({"requestId": 5}) == 5
    if event is In.CANCEL:
        got = rpc.cancel_received({"requestId": 5})
        if state is None:
            assert got is None
            assert rpc.counters.unknown_cancels == 1
        else:
            assert got == 5
            assert rpc.is_cancelled(5)
    else:
        if state is None:
            with pytest.raises(LocalProtocolError):
                rpc.request_finished(5)
        else:
            assert rpc.request_finished(5) is (state is InState.RUNNING)
            assert rpc.running_count == 0


# -- malformed responses -------------------------------------------------------

MALFORMED_RESPONSES = [
    b'{"jsonrpc":"2.0","id":%d,"result":null}',
    b'{"jsonrpc":"2.0","id":%d,"result":[1]}',
    b'{"jsonrpc":"2.0","id":%d,"result":"done"}',
    b'{"jsonrpc":"2.0","id":%d,"error":{"code":"x","message":"m"}}',
    b'{"jsonrpc":"2.0","id":%d,"error":{"code":1}}',
    b'{"jsonrpc":"2.0","id":%d,"error":[]}',
    b'{"jsonrpc":"2.0","id":%d,"result":{},"error":{"code":1,"message":"m"}}',
    b'{"jsonrpc":"1.0","id":%d,"result":{}}',
]
NOT_RESPONSES = [
    b'{"jsonrpc":"2.0","id":%d}',
    b'{"jsonrpc":"2.0","id":%d,"method":5}',
    b'{"jsonrpc":"2.0","id":%d,"method":"m","params":[1]}',
    b'{"jsonrpc":"1.0","id":%d,"method":"m"}',
]


@pytest.mark.parametrize("frame", MALFORMED_RESPONSES)
def test_a_malformed_response_ends_the_request_it_names(frame: bytes) -> None:
    rpc = RPCState()
    req, out = rpc.start_request("tools/call", progress=True)
    rpc.start_request("ping")
    invalid = parse(frame % req.id)
    assert type(invalid) is Invalid
    assert invalid.answers == req.id
    assert rpc.malformed_response_received(invalid) is out
    assert out.state is OutState.ANSWERED
    assert rpc.pending_count == 1  # the other request still waits
    assert rpc.progress_received({"progressToken": req.id}) is None
    assert rpc.malformed_response_received(invalid) is None  # ended once
    assert rpc.response_received(Response(req.id, {})) is None


@pytest.mark.parametrize("frame", NOT_RESPONSES)
def test_other_invalid_input_naming_a_request_ends_nothing(frame: bytes) -> None:
    rpc = RPCState()
    req, out = rpc.start_request("tools/call")
    invalid = parse(frame % req.id)
    assert type(invalid) is Invalid
    assert invalid.answers is None
    assert rpc.malformed_response_received(invalid) is None
    assert out.state is OutState.PENDING


@given(json_objects, st.integers(min_value=0, max_value=3))
def test_answers_names_exactly_the_malformed_responses(obj: dict[str, object], rid: int) -> None:
    """Any object with our id: it ``answers`` that id exactly when it carries
    ``result`` or ``error``, has no ``method``, and is not a valid response."""
    frame = dict(obj, id=rid)
    message = parse(orjson.dumps(frame))
    looks_like_response = ("result" in frame or "error" in frame) and "method" not in frame
    if type(message) is Invalid:
        assert message.answers == (rid if looks_like_response else None)


# -- outgoing requests --------------------------------------------------------


def test_ids_are_unique_and_increasing() -> None:
    rpc = RPCState()
    ids = []
    for i in range(50):
        req, out = rpc.start_request(f"m{i}")
        assert req.id == out.id
        assert type(req.id) is int
        ids.append(req.id)
        if i % 3 == 0:
            rpc.response_received(Response(req.id, {}))
        elif i % 3 == 1:
            rpc.abandon(req.id)
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
    # Ids are never reused after fail_all either.
    rpc.fail_all()
    req, _ = rpc.start_request("again")
    assert req.id > ids[-1]


def test_start_request_builds_the_request() -> None:
    rpc = RPCState()
    params = {"a": 1}
    req, out = rpc.start_request("tools/list", params)
    assert req == Request(1, "tools/list", {"a": 1})
    assert out.method == "tools/list"
    assert out.progress_token is None
    assert out.state is OutState.PENDING
    assert rpc.pending_count == 1


@pytest.mark.parametrize(
    "params",
    [None, {}, {"a": 1}, {"_meta": {"x": [1]}, "b": {"c": 2}}, {"_meta": "not an object"}],
)
def test_progress_token_added_without_mutating_params(params: dict[str, object] | None) -> None:
    snapshot = copy.deepcopy(params)
    rpc = RPCState()
    req, out = rpc.start_request("tools/call", params, progress=True)
    assert params == snapshot
    assert out.progress_token == req.id
    assert req.params is not None
    meta = req.params["_meta"]
    assert isinstance(meta, dict)
    assert meta["progressToken"] == req.id
    if params and isinstance(params.get("_meta"), dict):
        assert meta["x"] == [1]
        assert meta is not params["_meta"]
    for key, value in (params or {}).items():
        if key != "_meta":
            assert req.params[key] == value


def test_response_correlation() -> None:
    rpc = RPCState()
    r1, o1 = rpc.start_request("a")
    r2, o2 = rpc.start_request("b")
    assert rpc.response_received(ErrorResponse(r2.id, ErrorObject(-1, "x"))) is o2
    assert o2.state is OutState.ANSWERED
    assert rpc.pending_count == 1
    assert rpc.response_received(Response(r1.id, {})) is o1
    assert rpc.pending_count == 0
    assert rpc.counters.as_dict() == {
        "unknown_responses": 0,
        "late_responses": 0,
        "unknown_cancels": 0,
        "unknown_progress": 0,
        "duplicate_requests": 0,
        "null_id_errors": 0,
    }


def test_response_id_type_matters() -> None:
    rpc = RPCState()
    req, _ = rpc.start_request("a")
    assert rpc.response_received(Response(str(req.id), {})) is None
    assert rpc.counters.unknown_responses == 1
    assert rpc.pending_count == 1


@pytest.mark.parametrize(
    "message",
    [
        Response(99, {}),
        Response("1", {}),
        ErrorResponse(None, ErrorObject(-32700, "x")),
        ErrorResponse(42, ErrorObject(-1, "x")),
    ],
)
def test_unknown_responses_are_counted_not_raised(message: Response | ErrorResponse) -> None:
    rpc = RPCState()
    rpc.start_request("a")
    assert rpc.response_received(message) is None
    assert rpc.counters.unknown_responses == 1
    assert rpc.counters.late_responses == 0
    assert rpc.pending_count == 1


def test_duplicate_response_is_unknown() -> None:
    rpc = RPCState()
    req, _ = rpc.start_request("a")
    assert rpc.response_received(Response(req.id, {})) is not None
    assert rpc.response_received(Response(req.id, {})) is None
    assert rpc.counters.unknown_responses == 1


def test_late_response_after_abandon() -> None:
    rpc = RPCState()
    req, out = rpc.start_request("slow")
    notice = rpc.abandon(req.id, "timed out")
    assert notice == Notification(
        "notifications/cancelled", {"requestId": req.id, "reason": "timed out"}
    )
    assert out.state is OutState.ABANDONED
    assert rpc.response_received(Response(req.id, {})) is None
    assert rpc.response_received(ErrorResponse(req.id, ErrorObject(-1, "x"))) is None
    assert rpc.counters.late_responses == 2
    assert rpc.counters.unknown_responses == 0


def test_abandon_twice_returns_none() -> None:
    rpc = RPCState()
    req, _ = rpc.start_request("a")
    notice = rpc.abandon(req.id)
    assert notice == Notification("notifications/cancelled", {"requestId": req.id})
    assert rpc.abandon(req.id) is None
    assert rpc.abandon(12345) is None
    assert rpc.pending_count == 0


def test_abandon_after_answer_returns_none() -> None:
    rpc = RPCState()
    req, _ = rpc.start_request("a")
    rpc.response_received(Response(req.id, {}))
    assert rpc.abandon(req.id) is None


def test_abandoned_memory_is_bounded() -> None:
    rpc = RPCState()
    first, _ = rpc.start_request("a")
    rpc.abandon(first.id)
    for _ in range(_rpc.ABANDONED_MEMORY + 10):
        req, _ = rpc.start_request("a")
        rpc.abandon(req.id)
    assert len(rpc._abandoned) == _rpc.ABANDONED_MEMORY
    # The oldest is forgotten: its late answer now counts as unknown.
    rpc.response_received(Response(first.id, {}))
    assert rpc.counters.unknown_responses == 1


def test_progress_correlation() -> None:
    rpc = RPCState()
    req, out = rpc.start_request("a", progress=True)
    plain, _ = rpc.start_request("b")
    assert rpc.progress_received({"progressToken": out.progress_token, "progress": 1}) == req.id
    # Unknown, wrongly typed, missing tokens, and requests without a token.
    for params in [
        {"progressToken": 999},
        {"progressToken": str(out.progress_token)},
        {"progressToken": True},
        {"progressToken": 1.0},
        {"progressToken": plain.id},
        {},
        None,
    ]:
        assert rpc.progress_received(params) is None  # type: ignore[arg-type]
    assert rpc.counters.unknown_progress == 7
    rpc.response_received(Response(req.id, {}))
    assert rpc.progress_received({"progressToken": out.progress_token}) is None
    assert rpc.counters.unknown_progress == 8


def test_progress_after_abandon_is_unknown() -> None:
    rpc = RPCState()
    _, out = rpc.start_request("a", progress=True)
    rpc.abandon(out.id)
    assert rpc.progress_received({"progressToken": out.progress_token}) is None


def test_fail_all_empties_pending() -> None:
    rpc = RPCState()
    outs = [rpc.start_request(f"m{i}", progress=bool(i % 2))[1] for i in range(5)]
    failed = rpc.fail_all()
    assert sorted(o.id for o in failed) == sorted(o.id for o in outs)
    assert rpc.pending_count == 0
    assert rpc.fail_all() == []
    for out in outs:
        assert rpc.progress_received({"progressToken": out.id}) is None
        assert rpc.response_received(Response(out.id, {})) is None


# -- incoming requests --------------------------------------------------------


@given(request_ids)
def test_duplicate_incoming_id_is_refused(rid: str | int) -> None:
    rpc = RPCState()
    assert rpc.request_received(Request(rid, "a"))
    assert not rpc.request_received(Request(rid, "b"))
    assert rpc.counters.duplicate_requests == 1
    assert rpc.running_count == 1
    # Once finished, the id may be used again.
    assert rpc.request_finished(rid) is True
    assert rpc.request_received(Request(rid, "c"))


def test_string_and_integer_incoming_ids_do_not_collide() -> None:
    rpc = RPCState()
    assert rpc.request_received(Request(7, "a"))
    assert rpc.request_received(Request("7", "a"))
    assert rpc.running_count == 2


def test_cancel_received() -> None:
    rpc = RPCState()
    rpc.request_received(Request("r", "a"))
    rpc.request_received(Request(2, "b"))
    assert rpc.cancel_received({"requestId": "r", "reason": "x"}) == "r"
    assert rpc.is_cancelled("r")
    assert not rpc.is_cancelled(2)
    assert rpc.cancel_received({"requestId": "r"}) == "r"  # repeated: still cancelled
    assert rpc.request_finished("r") is False
    assert rpc.request_finished(2) is True
    assert not rpc.is_cancelled("r")
    assert rpc.running_count == 0


@pytest.mark.parametrize(
    "params",
    [
        {"requestId": 99},
        {"requestId": "1"},
        {"requestId": True},
        {"requestId": 1.0},
        {"requestId": None},
        {},
        None,
    ],
)
def test_cancel_for_unknown_id_is_counted(params: dict[str, object] | None) -> None:
    rpc = RPCState()
    rpc.request_received(Request(1, "a"))
    assert rpc.cancel_received(params) is None  # type: ignore[arg-type]
    assert rpc.counters.unknown_cancels == 1
    assert not rpc.is_cancelled(1)
    assert rpc.request_finished(1) is True


def test_request_finished_for_unknown_id_raises() -> None:
    rpc = RPCState()
    with pytest.raises(LocalProtocolError):
        rpc.request_finished(1)
    rpc.request_received(Request(1, "a"))
    rpc.request_finished(1)
    with pytest.raises(LocalProtocolError):
        rpc.request_finished(1)


def test_outgoing_and_incoming_ids_are_separate() -> None:
    # Our id 1 and the peer's id 1 are different requests.
    rpc = RPCState()
    req, _ = rpc.start_request("a")
    assert rpc.request_received(Request(req.id, "peer"))
    assert rpc.response_received(Response(req.id, {})) is not None
    assert rpc.running_count == 1


# -- a random-walk model -----------------------------------------------------


class RPCMachine(RuleBasedStateMachine):
    """Random sequences of outgoing-request operations against a simple model."""

    pending_ids = Bundle("pending_ids")
    done_ids = Bundle("done_ids")

    def __init__(self) -> None:
        super().__init__()
        self.rpc = RPCState()
        self.pending: dict[int, bool] = {}  # id -> has progress token
        self.abandoned: set[int] = set()
        self.answered: set[int] = set()
        self.issued: list[int] = []
        self.late = 0
        self.unknown = 0
        self.unknown_progress = 0

    @rule(target=pending_ids, progress=st.booleans(), with_params=st.booleans())
    def start(self, progress: bool, with_params: bool) -> int:
        params = {"k": 1} if with_params else None
        req, out = self.rpc.start_request("m", params, progress=progress)
        assert isinstance(req.id, int)
        assert not self.issued or req.id > self.issued[-1]
        self.issued.append(req.id)
        self.pending[req.id] = progress
        assert (out.progress_token is not None) is progress
        return req.id

    @rule(target=done_ids, rid=consumes(pending_ids), error=st.booleans())
    def answer(self, rid: int, error: bool) -> int:
        message = ErrorResponse(rid, ErrorObject(-1, "x")) if error else Response(rid, {})
        out = self.rpc.response_received(message)
        if rid in self.pending:
            assert out is not None and out.id == rid
            assert out.state is OutState.ANSWERED
            del self.pending[rid]
            self.answered.add(rid)
        else:  # failed by fail_all meanwhile: given up on, so its answer is late
            assert out is None
            assert rid in self.abandoned
            self.late += 1
        return rid

    @rule(target=done_ids, rid=consumes(pending_ids))
    def abandon(self, rid: int) -> int:
        notice = self.rpc.abandon(rid)
        if rid in self.pending:
            assert notice is not None
            assert notice.method == "notifications/cancelled"
            assert notice.params == {"requestId": rid}
            del self.pending[rid]
            self.abandoned.add(rid)
        else:
            assert notice is None
        return rid

    @rule(rid=done_ids)
    def respond_again(self, rid: int) -> None:
        assert self.rpc.response_received(Response(rid, {})) is None
        if rid in self.abandoned:
            self.late += 1
        else:
            self.unknown += 1

    @rule(rid=done_ids)
    def abandon_again(self, rid: int) -> None:
        assert self.rpc.abandon(rid) is None

    @rule(rid=st.one_of(st.integers(min_value=10_000), st.text()))
    def stray_response(self, rid: int | str) -> None:
        assert self.rpc.response_received(Response(rid, {})) is None
        self.unknown += 1

    @rule(rid=pending_ids)
    def progress(self, rid: int) -> None:
        got = self.rpc.progress_received({"progressToken": rid, "progress": 0.5})
        if self.pending.get(rid):
            assert got == rid
        else:
            assert got is None
            self.unknown_progress += 1

    @rule(rid=done_ids)
    def progress_after_done(self, rid: int) -> None:
        assert self.rpc.progress_received({"progressToken": rid}) is None
        self.unknown_progress += 1

    @rule()
    def fail_all(self) -> None:
        failed = self.rpc.fail_all()
        assert {o.id for o in failed} == set(self.pending)
        # Those ids were given up on: answers to them are late from now on.
        self.abandoned.update(self.pending)
        self.pending.clear()

    @invariant()
    def counts_match(self) -> None:
        assert self.rpc.pending_count == len(self.pending)
        c = self.rpc.counters
        assert c.late_responses == self.late
        assert c.unknown_responses == self.unknown
        assert c.unknown_progress == self.unknown_progress
        assert c.unknown_cancels == 0 and c.duplicate_requests == 0


TestRPCStateMachine = RPCMachine.TestCase
