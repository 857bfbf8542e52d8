"""Tests for the JSON-RPC envelopes, the classifier and the codec limits.

The table tests follow spec-notes §9 (JSON-RPC 2.0 edge cases, rows #1-#14) and
the examples of the JSON-RPC 2.0 specification itself; the property tests check
that ``serialize`` and ``parse`` are inverse and that frames never carry a raw
newline.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import json_values, messages, requests

from mcpwire._errors import JSONRPCError, error_from_object, error_object
from mcpwire.sansio import (
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_MESSAGE_SIZE,
    Batch,
    ErrorCode,
    ErrorObject,
    ErrorResponse,
    Invalid,
    Limits,
    MessageTooDeep,
    MessageTooLarge,
    Notification,
    NotJSON,
    Request,
    Response,
    classify,
    dumps,
    error_response,
    is_request_id,
    loads,
    parse,
    serialize,
    serialize_batch,
    serialize_line,
    to_json,
)

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


def _obj(**members: Any) -> bytes:
    return json.dumps(members).encode()


def req(id: Any = 1, method: Any = "m", **extra: Any) -> bytes:
    """A request frame; pass ``jsonrpc=...`` or ``params=...`` to vary it."""
    members: dict[str, Any] = {"jsonrpc": "2.0", "id": id, "method": method}
    members.update(extra)
    return json.dumps(members).encode()


def assert_invalid(item: object, code: int, *, id: object = None, reply: bool = True) -> Invalid:
    assert type(item) is Invalid, item
    assert item.error.code == code, item
    assert type(item.error.code) is int
    assert item.id == id and type(item.id) is type(id), item
    assert item.reply is reply, item
    assert isinstance(item.error.message, str) and item.error.message
    return item


# --------------------------------------------------------------------------
# properties


@given(messages)
def test_parse_inverts_serialize(message: Any) -> None:
    assert parse(serialize(message)) == message


@given(messages)
def test_serialize_never_contains_a_newline(message: Any) -> None:
    data = serialize(message)
    assert b"\n" not in data
    assert b"\r" not in data


@given(st.lists(messages, min_size=1, max_size=3), st.booleans())
def test_serialize_line_is_one_frame(batch: list[Any], as_batch: bool) -> None:
    item = batch if as_batch else batch[0]
    line = serialize_line(item)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert line[:-1] == (serialize_batch(batch) if as_batch else serialize(batch[0]))


@given(requests)
def test_serialized_request_is_standard_json(message: Request) -> None:
    assert json.loads(serialize(message)) == to_json(message)


@given(messages)
def test_to_json_has_jsonrpc_and_exactly_one_kind(message: Any) -> None:
    out = to_json(message)
    assert out["jsonrpc"] == "2.0"
    kinds = {"method", "result", "error"} & set(out)
    assert len(kinds) == 1


@given(messages)
def test_parse_accepts_str_as_well_as_bytes(message: Any) -> None:
    assert parse(serialize(message).decode()) == message


@given(json_values)
def test_classify_never_raises(value: Any) -> None:
    # Arbitrary JSON, not just envelopes: the classifier must always answer.
    item = classify(value)
    assert isinstance(item, (Request, Notification, Response, ErrorResponse, Invalid, Batch))


@given(json_values)
def test_parse_of_any_json_never_raises(value: Any) -> None:
    item = parse(dumps(value))
    assert item is not None


# --------------------------------------------------------------------------
# which members make which message: every combination of id/method/result/error/params

#: The kinds of ``id``: absent, the two valid types, and values no id may have.
ID_KINDS = ("absent", "int", "str", "null", "float", "bool")
MEMBER_TABLE = [
    (id_kind, method, result, error, params)
    for id_kind in ID_KINDS
    for method in (False, True)
    for result in (False, True)
    for error in (False, True)
    for params in (False, True)
]
_ID_VALUES = {
    "int": st.integers(-(2**63), 2**63 - 1),
    "str": st.text(max_size=8),
    "null": st.none(),
    "float": st.floats(allow_nan=False, allow_infinity=False),
    "bool": st.booleans(),
}


def expected_class(id_kind: str, method: bool, result: bool, error: bool) -> tuple[str, bool]:
    """The class JSON-RPC 2.0 gives a message with these members (well-formed each),
    and, for ``"invalid"``, whether it is answered."""
    valid_id = id_kind in ("int", "str")
    if method and (result or error):
        return "invalid", valid_id  # both a request and a response: neither
    if method:
        if id_kind == "absent":
            return "notification", False
        return ("request", False) if valid_id else ("invalid", True)
    if result and error:
        return "invalid", False  # a broken response is never answered
    if result:
        return ("response", False) if valid_id else ("invalid", False)
    if error:
        ok = valid_id or id_kind in ("absent", "null")
        return ("error", False) if ok else ("invalid", False)
    return "invalid", True


@given(
    row=st.sampled_from(MEMBER_TABLE),
    data=st.data(),
    name=st.text(min_size=1, max_size=10),
    result=st.dictionaries(st.text(max_size=4), json_values, max_size=3),
    params=st.dictionaries(st.text(max_size=4), json_values, max_size=3),
    code=st.integers(-(2**31), 2**31),
    message=st.text(max_size=10),
)
def test_the_members_present_decide_the_class(
    row: tuple[str, bool, bool, bool, bool],
    data: st.DataObject,
    name: str,
    result: dict[str, Any],
    params: dict[str, Any],
    code: int,
    message: str,
) -> None:
    id_kind, has_method, has_result, has_error, has_params = row
    obj: dict[str, Any] = {"jsonrpc": "2.0"}
    if id_kind != "absent":
        obj["id"] = data.draw(_ID_VALUES[id_kind], label="id")
    if has_method:
        obj["method"] = name
    if has_result:
        obj["result"] = result
    if has_error:
        obj["error"] = {"code": code, "message": message}
    if has_params:
        obj["params"] = params
    # Member order is not a hint: shuffle it.
    order = data.draw(st.permutations(list(obj)), label="order")
    frame = dumps({key: obj[key] for key in order})
    item = parse(frame)
    kind, answered = expected_class(id_kind, has_method, has_result, has_error)
    rid = obj.get("id") if id_kind in ("int", "str") else None
    if kind == "request":
        assert item == Request(rid, name, params if has_params else None)  # type: ignore[arg-type]
    elif kind == "notification":
        assert item == Notification(name, params if has_params else None)
    elif kind == "response":
        assert item == Response(rid, result)  # type: ignore[arg-type]
    elif kind == "error":
        assert item == ErrorResponse(rid, ErrorObject(code, message))
    else:
        assert type(item) is Invalid, item
        assert item.error.code == INVALID_REQUEST
        assert item.reply is answered
        # The id is echoed when JSON-RPC answers and the id is valid.
        assert item.id == (rid if answered else item.id)
        if has_method and (has_result or has_error):
            assert item.id == rid and type(item.id) is type(rid)
            assert item.method == name
            assert item.answers is None  # no pending call takes it as its answer
        if answered:
            assert item.response().id == rid


@pytest.mark.parametrize("row", MEMBER_TABLE, ids=["-".join(map(str, r)) for r in MEMBER_TABLE])
def test_every_combination_of_members_is_classified(
    row: tuple[str, bool, bool, bool, bool],
) -> None:
    """The same table, each row once with fixed values (hypothesis samples it)."""
    id_kind, has_method, has_result, has_error, has_params = row
    ids = {"int": 7, "str": "7", "null": None, "float": 1.5, "bool": True}
    obj: dict[str, Any] = {"jsonrpc": "2.0"}
    if id_kind != "absent":
        obj["id"] = ids[id_kind]
    for present, key, value in (
        (has_method, "method", "m"),
        (has_result, "result", {}),
        (has_error, "error", {"code": 1, "message": "e"}),
        (has_params, "params", {}),
    ):
        if present:
            obj[key] = value
    item = classify(obj)
    kind, answered = expected_class(id_kind, has_method, has_result, has_error)
    classes = {
        "request": Request,
        "notification": Notification,
        "response": Response,
        "error": ErrorResponse,
        "invalid": Invalid,
    }
    assert type(item) is classes[kind], item
    if type(item) is Invalid:
        assert item.reply is answered and item.error.code == INVALID_REQUEST
        if answered:
            assert item.id == (ids[id_kind] if id_kind in ("int", "str") else None)


# --------------------------------------------------------------------------
# spec-notes §9, one row at a time

# Each case: (frame, expected). ``expected`` is either a message, or a tuple
# ("invalid", code, id, reply).
ROWS: list[tuple[str, bytes, object]] = [
    # #1 "jsonrpc" must be exactly "2.0"
    ("1-missing", _obj(id=1, method="m"), ("invalid", INVALID_REQUEST, 1, True)),
    ("1-version-1.0", req(jsonrpc="1.0"), ("invalid", INVALID_REQUEST, 1, True)),
    ("1-version-number", req(jsonrpc=2.0), ("invalid", INVALID_REQUEST, 1, True)),
    ("1-version-padded", req(jsonrpc="2.0 "), ("invalid", INVALID_REQUEST, 1, True)),
    ("1-version-null", req(jsonrpc=None), ("invalid", INVALID_REQUEST, 1, True)),
    (
        "1-recovers-string-id",
        req(id="abc", jsonrpc="1.0"),
        ("invalid", INVALID_REQUEST, "abc", True),
    ),
    (
        "1-notification-bad-version",
        _obj(jsonrpc="1.0", method="m"),
        ("invalid", INVALID_REQUEST, None, False),
    ),
    (
        "1-response-bad-version",
        _obj(jsonrpc="1.0", id=1, result={}),
        ("invalid", INVALID_REQUEST, 1, False),
    ),
    (
        "1-error-response-bad-version",
        _obj(jsonrpc="1.0", id=1, error={"code": 1, "message": "x"}),
        ("invalid", INVALID_REQUEST, 1, False),
    ),
    # #2 request ids: string or integer, never null/float/bool/array/object
    ("2-id-null", req(id=None), ("invalid", INVALID_REQUEST, None, True)),
    ("2-id-fraction", req(id=1.5), ("invalid", INVALID_REQUEST, None, True)),
    (
        "2-id-integral-float",
        b'{"jsonrpc":"2.0","id":1.0,"method":"m"}',
        ("invalid", INVALID_REQUEST, None, True),
    ),
    (
        "2-id-exponent",
        b'{"jsonrpc":"2.0","id":1e3,"method":"m"}',
        ("invalid", INVALID_REQUEST, None, True),
    ),
    ("2-id-true", req(id=True), ("invalid", INVALID_REQUEST, None, True)),
    ("2-id-false", req(id=False), ("invalid", INVALID_REQUEST, None, True)),
    ("2-id-array", req(id=[]), ("invalid", INVALID_REQUEST, None, True)),
    ("2-id-array-of-int", req(id=[1]), ("invalid", INVALID_REQUEST, None, True)),
    ("2-id-object", req(id={}), ("invalid", INVALID_REQUEST, None, True)),
    ("2-id-string", req(id="7"), Request("7", "m")),
    ("2-id-int", req(id=7), Request(7, "m")),
    ("2-id-empty-string", req(id=""), Request("", "m")),
    ("2-id-zero", req(id=0), Request(0, "m")),
    ("2-id-negative", req(id=-1), Request(-1, "m")),
    ("2-id-int64-max", req(id=2**63 - 1), Request(2**63 - 1, "m")),
    ("2-id-int64-min", req(id=-(2**63)), Request(-(2**63), "m")),
    # #3 notifications: no id member
    (
        "3-notification",
        _obj(jsonrpc="2.0", method="notifications/x"),
        Notification("notifications/x"),
    ),
    (
        "3-notification-params",
        _obj(jsonrpc="2.0", method="n", params={"a": 1}),
        Notification("n", {"a": 1}),
    ),
    (
        "3-notification-params-array",
        _obj(jsonrpc="2.0", method="n", params=[1]),
        ("invalid", INVALID_PARAMS, None, False),
    ),
    (
        "3-notification-params-scalar",
        _obj(jsonrpc="2.0", method="n", params="x"),
        ("invalid", INVALID_REQUEST, None, False),
    ),
    (
        "3-notification-params-null",
        _obj(jsonrpc="2.0", method="n", params=None),
        ("invalid", INVALID_REQUEST, None, False),
    ),
    # #4 method must be a string
    ("4-method-int", req(method=1), ("invalid", INVALID_REQUEST, 1, True)),
    ("4-method-null", req(method=None), ("invalid", INVALID_REQUEST, 1, True)),
    ("4-method-array", req(method=["m"]), ("invalid", INVALID_REQUEST, 1, True)),
    (
        "4-method-object-no-id",
        _obj(jsonrpc="2.0", method={}),
        ("invalid", INVALID_REQUEST, None, True),
    ),
    ("4-rpc-prefix-is-a-string", req(method="rpc.discover"), Request(1, "rpc.discover")),
    # #5 params: an object (array -> -32602 with the id; scalar/null -> -32600)
    (
        "5-params-object",
        req(params={"a": [1, {"b": None}]}),
        Request(1, "m", {"a": [1, {"b": None}]}),
    ),
    ("5-params-empty-object", req(params={}), Request(1, "m", {})),
    ("5-params-array", req(id=9, params=[1, 2]), ("invalid", INVALID_PARAMS, 9, True)),
    ("5-params-array-string-id", req(id="x", params=[]), ("invalid", INVALID_PARAMS, "x", True)),
    ("5-params-string", req(params="bar"), ("invalid", INVALID_REQUEST, 1, True)),
    ("5-params-number", req(params=3), ("invalid", INVALID_REQUEST, 1, True)),
    ("5-params-bool", req(params=True), ("invalid", INVALID_REQUEST, 1, True)),
    ("5-params-null", req(params=None), ("invalid", INVALID_REQUEST, 1, True)),
    ("5-params-absent", req(), Request(1, "m", None)),
    # #6 responses
    ("6-response", _obj(jsonrpc="2.0", id=1, result={"x": 1}), Response(1, {"x": 1})),
    ("6-response-string-id", _obj(jsonrpc="2.0", id="1", result={}), Response("1", {})),
    (
        "6-both-result-and-error",
        _obj(jsonrpc="2.0", id=1, result={}, error={"code": 1, "message": "x"}),
        ("invalid", INVALID_REQUEST, 1, False),
    ),
    (
        "6-error-id-absent",
        _obj(jsonrpc="2.0", error={"code": -1, "message": "x"}),
        ErrorResponse(None, ErrorObject(-1, "x")),
    ),
    (
        "6-error-id-null",
        _obj(jsonrpc="2.0", id=None, error={"code": -1, "message": "x"}),
        ErrorResponse(None, ErrorObject(-1, "x")),
    ),
    (
        "6-error-id-float",
        _obj(jsonrpc="2.0", id=1.5, error={"code": -1, "message": "x"}),
        ("invalid", INVALID_REQUEST, None, False),
    ),
    (
        "6-error-id-bool",
        _obj(jsonrpc="2.0", id=True, error={"code": -1, "message": "x"}),
        ("invalid", INVALID_REQUEST, None, False),
    ),
    (
        "6-result-array",
        _obj(jsonrpc="2.0", id=1, result=[]),
        ("invalid", INVALID_REQUEST, 1, False),
    ),
    (
        "6-result-null",
        _obj(jsonrpc="2.0", id=1, result=None),
        ("invalid", INVALID_REQUEST, 1, False),
    ),
    (
        "6-result-string",
        _obj(jsonrpc="2.0", id=1, result="ok"),
        ("invalid", INVALID_REQUEST, 1, False),
    ),
    (
        "6-result-id-null",
        _obj(jsonrpc="2.0", id=None, result={}),
        ("invalid", INVALID_REQUEST, None, False),
    ),
    (
        "6-result-id-absent",
        _obj(jsonrpc="2.0", result={}),
        ("invalid", INVALID_REQUEST, None, False),
    ),
    (
        "6-result-id-float",
        _obj(jsonrpc="2.0", id=2.5, result={}),
        ("invalid", INVALID_REQUEST, None, False),
    ),
    (
        "6-neither-result-nor-error",
        _obj(jsonrpc="2.0", id=1),
        ("invalid", INVALID_REQUEST, 1, True),
    ),
    # #7 error objects
    (
        "7-error-data",
        _obj(jsonrpc="2.0", id=1, error={"code": 5, "message": "m", "data": [1]}),
        ErrorResponse(1, ErrorObject(5, "m", [1])),
    ),
    (
        "7-error-missing-code",
        _obj(jsonrpc="2.0", id=1, error={"message": "x"}),
        ("invalid", INVALID_REQUEST, 1, False),
    ),
    (
        "7-error-string-code",
        _obj(jsonrpc="2.0", id=1, error={"code": "1", "message": "x"}),
        ("invalid", INVALID_REQUEST, 1, False),
    ),
    (
        "7-error-float-code",
        _obj(jsonrpc="2.0", id=1, error={"code": 1.5, "message": "x"}),
        ("invalid", INVALID_REQUEST, 1, False),
    ),
    (
        "7-error-integral-float-code",
        b'{"jsonrpc":"2.0","id":1,"error":{"code":-32600.0,"message":"x"}}',
        ("invalid", INVALID_REQUEST, 1, False),
    ),
    (
        "7-error-bool-code",
        _obj(jsonrpc="2.0", id=1, error={"code": True, "message": "x"}),
        ("invalid", INVALID_REQUEST, 1, False),
    ),
    (
        "7-error-missing-message",
        _obj(jsonrpc="2.0", id=1, error={"code": 1}),
        ("invalid", INVALID_REQUEST, 1, False),
    ),
    (
        "7-error-int-message",
        _obj(jsonrpc="2.0", id=1, error={"code": 1, "message": 2}),
        ("invalid", INVALID_REQUEST, 1, False),
    ),
    (
        "7-error-not-object",
        _obj(jsonrpc="2.0", id=1, error="boom"),
        ("invalid", INVALID_REQUEST, 1, False),
    ),
    ("7-error-null", _obj(jsonrpc="2.0", id=1, error=None), ("invalid", INVALID_REQUEST, 1, False)),
    # #8 parse errors: -32700, id null, a single object even for a broken batch
    ("8-truncated", b'{"jsonrpc":"2.0","method"', ("invalid", PARSE_ERROR, None, True)),
    (
        "8-truncated-batch",
        b'[{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},{"jsonrpc":"2.0","method"]',
        ("invalid", PARSE_ERROR, None, True),
    ),
    ("8-single-quotes", b"{'jsonrpc':'2.0'}", ("invalid", PARSE_ERROR, None, True)),
    ("8-trailing-garbage", req() + b" x", ("invalid", PARSE_ERROR, None, True)),
    ("8-two-values", req() + req(), ("invalid", PARSE_ERROR, None, True)),
    ("8-empty", b"", ("invalid", PARSE_ERROR, None, True)),
    ("8-whitespace", b"  \t ", ("invalid", PARSE_ERROR, None, True)),
    (
        "8-nan",
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":NaN}}',
        ("invalid", PARSE_ERROR, None, True),
    ),
    (
        "8-float-overflow",
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":1e400}}',
        ("invalid", PARSE_ERROR, None, True),
    ),
    ("8-bom", b"\xef\xbb\xbf" + req(), ("invalid", PARSE_ERROR, None, True)),
    # #9 invalid request: valid JSON but not a request
    (
        "9-spec-example",
        b'{"jsonrpc": "2.0", "method": 1, "params": "bar"}',
        ("invalid", INVALID_REQUEST, None, True),
    ),
    ("9-string", b'"hello"', ("invalid", INVALID_REQUEST, None, True)),
    ("9-number", b"1", ("invalid", INVALID_REQUEST, None, True)),
    ("9-null", b"null", ("invalid", INVALID_REQUEST, None, True)),
    ("9-true", b"true", ("invalid", INVALID_REQUEST, None, True)),
    ("9-empty-object", b"{}", ("invalid", INVALID_REQUEST, None, True)),
    ("9-only-jsonrpc", b'{"jsonrpc":"2.0"}', ("invalid", INVALID_REQUEST, None, True)),
    # #10 reserved and implementation-defined codes are carried as they are
    (
        "10-server-error-band",
        _obj(jsonrpc="2.0", id=1, error={"code": -32000, "message": "closed"}),
        ErrorResponse(1, ErrorObject(-32000, "closed")),
    ),
    (
        "10-mcp-band",
        _obj(jsonrpc="2.0", id=1, error={"code": -32022, "message": "v", "data": {"s": []}}),
        ErrorResponse(1, ErrorObject(-32022, "v", {"s": []})),
    ),
    (
        "10-positive-code",
        _obj(jsonrpc="2.0", id=1, error={"code": 7, "message": "x"}),
        ErrorResponse(1, ErrorObject(7, "x")),
    ),
    # #11 batches ([] is one invalid request, not a batch)
    ("11-empty-batch", b"[]", ("invalid", INVALID_REQUEST, None, True)),
    ("11-empty-batch-spaced", b"[ ]", ("invalid", INVALID_REQUEST, None, True)),
    # #12 either peer may send requests or responses: classification is symmetric
    (
        "12-server-request",
        req(id="srv-1", method="sampling/createMessage", params={}),
        Request("srv-1", "sampling/createMessage", {}),
    ),
    # #14 unicode, escapes and duplicate keys
    ("14-escaped-newline", req(params={"t": "a\nb\u2028c"}), Request(1, "m", {"t": "a\nb\u2028c"})),
    ("14-raw-utf8", '{"jsonrpc":"2.0","id":"é","method":"ünï"}'.encode(), Request("é", "ünï")),
    ("14-escaped-nul", b'{"jsonrpc":"2.0","id":1,"method":"m\\u0000"}', Request(1, "m\x00")),
    (
        "14-invalid-utf8",
        b'{"jsonrpc":"2.0","id":1,"method":"m\xff"}',
        ("invalid", PARSE_ERROR, None, True),
    ),
    (
        "14-overlong-utf8",
        b'{"jsonrpc":"2.0","id":1,"method":"\xc0\xaf"}',
        ("invalid", PARSE_ERROR, None, True),
    ),
    (
        "14-encoded-surrogate",
        b'{"jsonrpc":"2.0","id":1,"method":"\xed\xa0\x80"}',
        ("invalid", PARSE_ERROR, None, True),
    ),
    (
        "14-lone-surrogate-escape",
        b'{"jsonrpc":"2.0","id":1,"method":"\\ud800"}',
        ("invalid", PARSE_ERROR, None, True),
    ),
    (
        "14-raw-control-char",
        b'{"jsonrpc":"2.0","id":1,"method":"a\x01"}',
        ("invalid", PARSE_ERROR, None, True),
    ),
    ("14-extra-members-ignored", req(extra={"x": 1}, _meta=3), Request(1, "m")),
]


@pytest.mark.parametrize(("frame", "expected"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_spec_notes_section_9(frame: bytes, expected: object) -> None:
    item = parse(frame)
    if isinstance(expected, tuple):
        _, code, id, reply = expected
        assert_invalid(item, code, id=id, reply=reply)
    else:
        assert item == expected
        # Same JSON type as on the wire: "7" and 7 are different ids.
        for attr in ("id",):
            if hasattr(expected, attr):
                assert type(getattr(item, attr)) is type(getattr(expected, attr))


def test_string_and_integer_ids_are_distinct_and_preserved() -> None:
    a = parse(req(id="7"))
    b = parse(req(id=7))
    assert isinstance(a, Request) and isinstance(b, Request)
    assert a != b
    assert type(a.id) is str and type(b.id) is int
    assert json.loads(serialize(error_response(a.id, -1, "x")))["id"] == "7"
    assert json.loads(serialize(error_response(b.id, -1, "x")))["id"] == 7


def test_invalid_request_keeps_method_for_diagnostics() -> None:
    item = assert_invalid(parse(req(id=None, method="tools/list")), INVALID_REQUEST)
    assert item.method == "tools/list"


def test_invalid_response_is_an_error_response_with_id_null() -> None:
    item = assert_invalid(parse(b'"hello"'), INVALID_REQUEST)
    reply = item.response()
    assert reply == ErrorResponse(None, item.error)
    assert json.loads(serialize(reply)) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": INVALID_REQUEST, "message": item.error.message},
    }


def test_parse_error_reply_is_exact() -> None:
    item = assert_invalid(parse(b"{oops"), PARSE_ERROR)
    out = json.loads(serialize(item.response()))
    assert out["jsonrpc"] == "2.0"
    assert out["id"] is None
    assert out["error"]["code"] == -32700
    assert set(out["error"]) == {"code", "message"}


# -- #11 batches ------------------------------------------------------------


def test_batch_of_non_objects_is_three_invalid_requests() -> None:
    item = parse(b"[1,2,3]")
    assert type(item) is Batch
    assert len(item.items) == 3
    for sub in item.items:
        assert_invalid(sub, INVALID_REQUEST)


def test_batch_of_valid_items() -> None:
    frame = json.dumps(
        [
            {"jsonrpc": "2.0", "method": "sum", "params": {"a": [1, 2, 4]}, "id": "1"},
            {"jsonrpc": "2.0", "method": "notify_hello", "params": {"a": [7]}},
            {"jsonrpc": "2.0", "method": "subtract", "params": {"a": 42, "b": 23}, "id": "2"},
            {"foo": "boo"},
            {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
            {"jsonrpc": "2.0", "method": "get_data", "id": "9"},
            {"jsonrpc": "2.0", "id": 3, "result": {}},
        ]
    ).encode()
    item = parse(frame)
    assert type(item) is Batch
    items = item.items
    assert items[0] == Request("1", "sum", {"a": [1, 2, 4]})
    assert items[1] == Notification("notify_hello", {"a": [7]})
    assert items[2] == Request("2", "subtract", {"a": 42, "b": 23})
    assert_invalid(items[3], INVALID_REQUEST)
    assert items[4] == Request("5", "foo.get", {"name": "myself"})
    assert items[5] == Request("9", "get_data")
    assert items[6] == Response(3, {})


@pytest.mark.parametrize("limit", [1, 3, 1000])
def test_a_batch_past_the_limit_is_invalid_whole(limit: int) -> None:
    """A batch is held until its last request is answered: more than
    ``Limits.max_batch`` messages get one -32600 with id null, none served."""
    ping = b'{"jsonrpc":"2.0","id":%d,"method":"ping"}'
    limits = Limits(max_batch=limit)
    at_limit = parse(b"[" + b",".join(ping % i for i in range(limit)) + b"]", limits)
    assert type(at_limit) is Batch and len(at_limit.items) == limit
    over = parse(b"[" + b",".join(ping % i for i in range(limit + 1)) + b"]", limits)
    assert type(over) is Invalid
    assert (over.id, over.error.code, over.reply) == (None, -32600, True)
    assert f"exceeds the limit of {limit}" in over.error.message
    assert Limits().max_batch == 1000


def test_batch_of_notifications_only() -> None:
    frame = json.dumps(
        [
            {"jsonrpc": "2.0", "method": "notify_sum", "params": {"a": 1}},
            {"jsonrpc": "2.0", "method": "notify_hello"},
        ]
    ).encode()
    item = parse(frame)
    assert item == Batch((Notification("notify_sum", {"a": 1}), Notification("notify_hello")))


def test_nested_arrays_in_a_batch_are_invalid_elements() -> None:
    item = parse(b'[[{"jsonrpc":"2.0","method":"m"}]]')
    assert type(item) is Batch
    assert len(item.items) == 1
    assert_invalid(item.items[0], INVALID_REQUEST)


def test_serialize_batch_round_trip() -> None:
    msgs = [Response(1, {"a": 1}), error_response("x", -32601, "nope", {"m": "x"})]
    data = serialize_batch(msgs)  # type: ignore[arg-type]
    assert b"\n" not in data
    assert parse(data) == Batch(tuple(msgs))


# -- #14 duplicate keys and big integers -------------------------------------


def test_duplicate_keys_last_one_wins() -> None:
    # orjson keeps the last of duplicate members; documented, not endorsed.
    item = parse(b'{"jsonrpc":"2.0","id":1,"id":2,"method":"a","method":"b"}')
    assert item == Request(2, "b")


@pytest.mark.parametrize(
    "frame",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"n":123456789012345678901234567890}}',
        b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"n":-9223372036854775809}}',
        b'{"jsonrpc":"2.0","id":99999999999999999999,"method":"m"}',
    ],
    ids=["params-30-digits", "params-below-int64", "id-20-digits"],
)
def test_integers_beyond_64_bit_are_a_parse_error(frame: bytes) -> None:
    # Deliberate limit: orjson cannot represent integers beyond 64 bits
    # exactly, so they must be refused (-32700) rather than silently turned
    # into floats (which would change the value or the id's type). The id is
    # echoed when it is readable (JSON-RPC section 5), so the call fails at once.
    wide_id = b'"id":9999' in frame
    item = assert_invalid(parse(frame), PARSE_ERROR, id=None if wide_id else 1)
    assert "does not fit in 64 bits" in item.error.message


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (b'{"jsonrpc":"2.0","id":2,"result":{"n":123456789012345678901234567890}}', PARSE_ERROR),
        (b'{"jsonrpc":"2.0","id":2,"result":' + b"[" * 70 + b"]" * 70 + b"}", INVALID_REQUEST),
        (b'{"result":' + b"[" * 70 + b"]" * 70 + b',"jsonrpc":"2.0","id":2}', INVALID_REQUEST),
    ],
)
def test_a_response_past_the_limits_fails_its_own_call(frame: bytes, code: int) -> None:
    """A response we cannot take becomes a local error for its id, as an oversized
    one does: the call it answers fails at once instead of waiting out its timeout,
    and nothing is sent back (answering a response breeds loops)."""
    item = parse(frame)
    assert type(item) is ErrorResponse and item.id == 2
    assert item.error.code == code
    assert "the response to request 2" in item.error.message


def test_a_notification_past_the_limits_gets_no_answer() -> None:
    deep = b'{"jsonrpc":"2.0","method":"notifications/x","params":' + b"[" * 70 + b"]" * 70 + b"}"
    for frame in (deep, deep.replace(b"[" * 70 + b"]" * 70, b"[123456789012345678901234567890]")):
        assert_invalid(parse(frame), parse(frame).error.code, reply=False)  # type: ignore[union-attr]


PAD = "y" * 70_000  # over the size from which loads() surveys the parsed value


@pytest.mark.parametrize("pad", ["", PAD], ids=["small", "large"])
@pytest.mark.parametrize(
    "where",
    [
        '{"n":123456789012345678901234567890}',
        '{"list":[1,2,-9223372036854775809]}',
        '{"deep":[[[[18446744073709551616]]]]}',
    ],
)
def test_wide_integers_are_refused_in_small_and_large_messages(pad: str, where: str) -> None:
    # Both paths (text scans for small messages, a walk of the parsed value for
    # large ones) refuse them; the decoy float 1e30 alone is fine in both.
    frame = f'{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"pad":"{pad}","x":{where}}}}}'
    assert_invalid(parse(frame.encode()), PARSE_ERROR, id=1)  # the id echoed: it shows
    decoy = f'{{"jsonrpc":"2.0","id":1,"method":"m","params":{{"pad":"{pad}","f":1e30}}}}'
    assert parse(decoy.encode()) == Request(1, "m", {"pad": pad, "f": 1e30})


@pytest.mark.parametrize("items", [10, 30_000], ids=["few-items", "over-the-walk-budget"])
def test_large_messages_keep_the_depth_limit(items: int) -> None:
    # 65 levels inside a large message, with few or many items beside them.
    filler = ",".join(["0"] * items)
    frame = f'{{"pad":"{PAD}","a":[{filler}],"d":{"[" * 64}{"]" * 64}}}'
    with pytest.raises(MessageTooDeep):
        loads(frame.encode())
    assert loads(frame.replace("[" * 64, "[" * 63, 1).replace("]" * 64, "]" * 63, 1).encode())


@given(value=json_values)
def test_large_and_small_paths_agree(value: Any) -> None:
    data = json.dumps({"pad": PAD, "v": value}).encode()
    assert loads(data) == json.loads(data)


def test_64_bit_integers_survive() -> None:
    frame = req(params={"max": 2**63 - 1, "min": -(2**63)})
    item = parse(frame)
    assert item == Request(1, "m", {"max": 2**63 - 1, "min": -(2**63)})
    assert parse(serialize(item)) == item  # type: ignore[arg-type]


# --------------------------------------------------------------------------
# codec limits


def test_size_limit_is_invalid_request_naming_the_limit() -> None:
    limits = Limits(max_size=1024)
    frame = req(params={"blob": "x" * 2000})
    item = assert_invalid(parse(frame, limits), INVALID_REQUEST)
    assert "1024" in item.error.message
    assert str(len(frame)) in item.error.message


def test_size_limit_boundary() -> None:
    frame = req(params={"blob": ""})
    pad = 200 - len(frame)
    frame = req(params={"blob": "x" * pad})
    assert len(frame) == 200
    assert parse(frame, Limits(max_size=200)) == Request(1, "m", {"blob": "x" * pad})
    assert_invalid(parse(frame, Limits(max_size=199)), INVALID_REQUEST)


def test_size_limit_counts_utf8_bytes_for_str_input() -> None:
    # The limit is in encoded bytes; a str frame of 3-byte characters must not
    # be measured in characters.
    text = '{"jsonrpc":"2.0","id":1,"method":"m","params":{"blob":"' + "€" * 600 + '"}}'
    assert len(text.encode()) > 1024 > len(text)
    assert_invalid(parse(text, Limits(max_size=1024)), INVALID_REQUEST)


def test_size_limit_raises_from_loads() -> None:
    with pytest.raises(MessageTooLarge) as info:
        loads(b"[" + b"0," * 100 + b"0]", Limits(max_size=50))
    assert info.value.limit == 50
    assert info.value.error_code == INVALID_REQUEST


def _nested_request(depth: int) -> bytes:
    """A request whose total container nesting (envelope included) is ``depth``."""
    params: Any = {}
    for _ in range(depth - 2):
        params = {"a": params}
    return req(params=params)


def test_depth_limit() -> None:
    limits = Limits(max_depth=5)
    assert isinstance(parse(_nested_request(5), limits), Request)
    item = assert_invalid(parse(_nested_request(6), limits), INVALID_REQUEST, id=1)
    assert "5" in item.error.message


def test_depth_limit_counts_arrays_and_batches() -> None:
    limits = Limits(max_depth=3)
    assert isinstance(parse(req(params={"a": []}), limits), Request)
    assert_invalid(parse(req(params={"a": [[]]}), limits), INVALID_REQUEST, id=1)
    # A batch is a level of its own.
    assert isinstance(parse(b'[{"jsonrpc":"2.0","method":"m","params":{}}]', limits), Batch)
    assert_invalid(
        parse(b'[{"jsonrpc":"2.0","method":"m","params":{"a":{}}}]', limits), INVALID_REQUEST
    )


def test_default_depth_limit_and_orjson_recursion() -> None:
    assert DEFAULT_MAX_DEPTH == 64
    assert DEFAULT_MAX_MESSAGE_SIZE == 16 * 1024 * 1024
    ok = b"[" * 64 + b"]" * 64
    assert loads(ok) is not None
    with pytest.raises(MessageTooDeep):
        loads(b"[" * 65 + b"]" * 65)
    # Deeper than orjson's own limit (1,024 levels): the same depth error, -32600,
    # not a parse error, however deep and whether or not the rest would parse.
    for frame in (b"[" * 1025 + b"]" * 1025, b"[" * 5000 + b"]" * 5000, b"[" * 100_000):
        item = parse(frame)
        assert type(item) is Invalid
        assert item.error.code == INVALID_REQUEST, item.error
        assert "deeper than the limit of 64" in item.error.message
        assert item.id is None and item.reply
    # A limit at or past orjson's own leaves its error what it is.
    assert parse(b"[" * 1025 + b"]" * 1025, Limits(max_depth=2000)).error.code == PARSE_ERROR  # type: ignore[union-attr]


def test_loads_errors_carry_codes() -> None:
    with pytest.raises(NotJSON) as info:
        loads(b"{")
    assert info.value.error_code == PARSE_ERROR


@pytest.mark.parametrize(("size", "depth"), [(1, 5), (0, 5), (10, 0), (-1, -1)])
def test_limits_reject_nonsense(size: int, depth: int) -> None:
    with pytest.raises(ValueError):
        Limits(max_size=size, max_depth=depth)


def test_dumps_is_compact_and_escapes_control_characters() -> None:
    data = dumps({"a": "x\ny\r\u2028\x00", "b": [1, 2]})
    assert b"\n" not in data and b"\r" not in data
    assert b" " not in data
    assert json.loads(data) == {"a": "x\ny\r\u2028\x00", "b": [1, 2]}


# --------------------------------------------------------------------------
# envelopes and helpers


def test_to_json_compact_forms() -> None:
    assert to_json(Request(1, "m")) == {"jsonrpc": "2.0", "id": 1, "method": "m"}
    assert to_json(Request(1, "m", {})) == {"jsonrpc": "2.0", "id": 1, "method": "m", "params": {}}
    assert to_json(Notification("n")) == {"jsonrpc": "2.0", "method": "n"}
    assert to_json(Response("a", {})) == {"jsonrpc": "2.0", "id": "a", "result": {}}
    assert to_json(ErrorResponse(None, ErrorObject(-32700, "bad"))) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "bad"},
    }
    assert to_json(error_response(3, -1, "x", False)) == {
        "jsonrpc": "2.0",
        "id": 3,
        "error": {"code": -1, "message": "x", "data": False},
    }


def test_serialize_rejects_non_messages() -> None:
    with pytest.raises(TypeError):
        serialize({"jsonrpc": "2.0"})  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        to_json(Invalid(ErrorObject(1, "x")))  # type: ignore[arg-type]


def test_error_response_coerces_enum_codes_to_int() -> None:
    resp = error_response(1, ErrorCode.METHOD_NOT_FOUND, "nope")
    assert type(resp.error.code) is int
    assert serialize(resp) == b'{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"nope"}}'


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("", True),
        ("x", True),
        (0, True),
        (-5, True),
        (2**70, True),
        (True, False),
        (False, False),
        (None, False),
        (1.0, False),
        ([], False),
        ({}, False),
    ],
)
def test_is_request_id(value: object, ok: bool) -> None:
    assert is_request_id(value) is ok


def test_messages_are_frozen() -> None:
    message = Request(1, "m")
    with pytest.raises(AttributeError):
        message.id = 2  # type: ignore[misc]


# --------------------------------------------------------------------------
# error codes (spec-notes §6)


def test_error_codes_match_spec_notes_section_6() -> None:
    assert {code.name: code.value for code in ErrorCode} == {
        "PARSE_ERROR": -32700,
        "INVALID_REQUEST": -32600,
        "METHOD_NOT_FOUND": -32601,
        "INVALID_PARAMS": -32602,
        "INTERNAL_ERROR": -32603,
        "RESOURCE_NOT_FOUND": -32002,
        "URL_ELICITATION_REQUIRED": -32042,
        "HEADER_MISMATCH": -32020,
        "MISSING_REQUIRED_CLIENT_CAPABILITY": -32021,
        "UNSUPPORTED_PROTOCOL_VERSION": -32022,
    }


def test_error_codes_are_ints() -> None:
    for code in ErrorCode:
        assert isinstance(code, int)
        assert -32768 <= code <= -32000


# --------------------------------------------------------------------------
# JSONRPCError <-> error object (a task's stored error)


@given(
    code=st.integers(min_value=-(2**63), max_value=2**63 - 1),
    message=st.text(),
    data=json_values,
)
def test_an_error_object_round_trips_through_jsonrpcerror(
    code: int, message: str, data: Any
) -> None:
    exc = error_from_object(error_object(JSONRPCError(code, message, data)), "fallback")
    assert (exc.code, exc.message, exc.data) == (code, message, data)


@given(error=json_values)
def test_any_stored_error_becomes_a_jsonrpcerror_with_an_int_code_and_a_str_message(
    error: Any,
) -> None:
    exc = error_from_object(error, "fallback")
    assert type(exc.code) is int
    assert isinstance(exc.message, str)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (None, (-32603, "fallback", None)),
        ({"code": True, "message": "m"}, (-32603, "m", None)),
        ({"code": 1.5, "message": 7, "data": [1]}, (-32603, "fallback", [1])),
        ({"code": -32002, "message": "gone"}, (-32002, "gone", None)),
    ],
)
def test_each_member_of_a_stored_error_falls_back_alone(error: Any, expected: Any) -> None:
    exc = error_from_object(error, "fallback")
    assert (exc.code, exc.message, exc.data) == expected
