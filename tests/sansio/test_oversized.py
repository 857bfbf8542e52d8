"""Oversized messages: what their first and last bytes tell (``sansio.oversized``).

Properties: for every message, written with its members in any order, and
every place its bytes could be cut at either end, the id read is either the
message's own top-level id or nothing (never an id from inside
``params``/``result``, never a different one), and only a notification is
taken for one; with the whole envelope in the head, or every member after
the params or result in the tail, the id and the kind are always recovered;
and the framing gives every oversized line the same head and tail however
the line was split.
"""

from __future__ import annotations

import itertools
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import error_responses, json_objects, notifications, requests, responses, split

from mcpwire.sansio import (
    ErrorCode,
    ErrorResponse,
    Invalid,
    LineTooLong,
    Message,
    NDJSONReader,
    Notification,
    Request,
    Response,
    oversized,
    serialize,
)
from mcpwire.sansio._ndjson import HEAD_BYTES, TAIL_BYTES

messages = st.one_of(requests, notifications, responses, error_responses)


def true_id(message: Message) -> object:
    return None if isinstance(message, Notification) else message.id


@given(message=messages, cut=st.integers(min_value=0, max_value=10_000))
def test_a_recovered_id_is_always_the_messages_own(message: Message, cut: int) -> None:
    head = serialize(message)[:cut]
    item = oversized(head, 100)
    if isinstance(item, ErrorResponse):
        assert isinstance(message, (Response, ErrorResponse))
        assert item.id == true_id(message) and type(item.id) is type(true_id(message))
        assert item.error.code == ErrorCode.INVALID_REQUEST
    else:
        assert isinstance(item, Invalid)
        assert item.id is None or (isinstance(message, Request) and item.id == message.id)
        assert item.reply


@given(
    rid=st.one_of(st.integers(min_value=-(2**63), max_value=2**63 - 1), st.text(max_size=40)),
    method=st.text(max_size=40),
    params=json_objects,
    pad=st.integers(min_value=0, max_value=3000),
)
def test_a_request_whose_envelope_fits_the_head_gets_its_id_back(
    rid: int | str, method: str, params: dict[str, object], pad: int
) -> None:
    # Our serializer writes jsonrpc, id and method first; whatever follows may be huge.
    data = serialize(Request(rid, method, {"pad": "y" * pad, **params}))
    prefix = orjson.dumps({"jsonrpc": "2.0", "id": rid, "method": method})[:-1]
    if len(prefix) >= HEAD_BYTES:
        return
    item = oversized(data[:HEAD_BYTES], 1000)
    assert isinstance(item, Invalid)
    assert item.id == rid and type(item.id) is type(rid)
    assert item.method == method
    assert "1000 bytes" in item.error.message


@given(rid=st.integers(min_value=0, max_value=10**6), pad=st.integers(min_value=0, max_value=3000))
def test_a_response_becomes_a_local_error_for_the_pending_call(rid: int, pad: int) -> None:
    data = serialize(Response(rid, {"content": [{"type": "text", "text": "x" * pad}]}))
    item = oversized(data[:HEAD_BYTES], 4096)
    assert isinstance(item, ErrorResponse)
    assert item.id == rid
    assert f"request {rid}" in item.error.message and "4096" in item.error.message


def test_ids_inside_params_or_after_the_head_are_not_taken() -> None:
    nested = b'{"jsonrpc":"2.0","method":"m","params":{"id":3,"x":"' + b"y" * 600 + b'"}}'
    assert oversized(nested[:HEAD_BYTES], 10).id is None  # type: ignore[union-attr]
    late = b'{"jsonrpc":"2.0","method":"m","params":{"x":"' + b"y" * 600 + b'"},"id":4}'
    assert oversized(late[:HEAD_BYTES], 10).id is None  # type: ignore[union-attr]
    escaped = b'{"jsonrpc":"2.0","method":"a\\"id\\":5","id":6,"params":{}}'
    item = oversized(escaped, 10)
    assert isinstance(item, Invalid) and item.id == 6 and item.method == 'a"id":5'


def test_non_objects_and_junk_give_id_null() -> None:
    for head in (b"", b"zzzz", b"[1,2,3", b'{"id":1.5,"method":"m"', b'{"id":true,"method":"m"'):
        item = oversized(head, 10)
        assert isinstance(item, Invalid) and item.id is None and item.reply


@given(
    message=st.one_of(requests, responses),
    limit=st.integers(min_value=1, max_value=700),
    points=st.lists(st.integers(min_value=0, max_value=5000), max_size=6),
)
def test_the_head_of_an_oversized_line_does_not_depend_on_chunking(
    message: Message, limit: int, points: list[int]
) -> None:
    line = serialize(message) + b"x" * 800  # always over the limit
    whole = NDJSONReader(max_line=limit).feed(line + b"\n")
    reader = NDJSONReader(max_line=limit)
    chunks = split(line + b"\n", sorted(points))
    pieces = [item for chunk in chunks if chunk for item in reader.feed(chunk)]
    assert pieces == whole
    (item,) = whole
    assert isinstance(item, LineTooLong)
    assert item.head == line[: min(HEAD_BYTES, limit)]
    assert item.tail in (b"", line[-min(TAIL_BYTES, limit) :])


def in_order(message: Message, order: int) -> bytes:
    """``message`` serialized with its top-level members in permutation ``order``."""
    members = list(orjson.loads(serialize(message)).items())
    orders = list(itertools.permutations(members))
    return orjson.dumps(dict(orders[order % len(orders)]))


def check_item(item: Invalid | ErrorResponse, message: Message) -> None:
    """What ``oversized`` says is never wrong about ``message``."""
    if isinstance(item, ErrorResponse):
        assert isinstance(message, (Response, ErrorResponse))
        assert item.id == true_id(message) and type(item.id) is type(true_id(message))
    elif not item.reply:
        assert isinstance(message, Notification)
        assert item.method == message.method and item.id is None
    else:
        assert item.id is None or (isinstance(message, Request) and item.id == message.id)
        assert item.id is None or type(item.id) is type(message.id)


@given(
    message=messages,
    order=st.integers(min_value=0, max_value=23),
    head=st.integers(min_value=0, max_value=3000),
    tail=st.integers(min_value=0, max_value=3000),
)
def test_what_either_end_shows_is_always_the_messages_own(
    message: Message, order: int, head: int, tail: int
) -> None:
    data = in_order(message, order)
    check_item(oversized(data[:head], 100, data[len(data) - tail :] if tail else b""), message)


def typescript_order(message: Message) -> bytes:
    """How the TypeScript SDK writes a request (``{...request, jsonrpc, id}``) or a
    result (``{result, jsonrpc, id}``): the id last."""
    value: dict[str, Any] = orjson.loads(serialize(message))
    first = {k: v for k, v in value.items() if k not in ("jsonrpc", "id")}
    return orjson.dumps({**first, "jsonrpc": "2.0", "id": value["id"]})


@given(
    message=st.one_of(requests, responses),
    pad=st.integers(min_value=0, max_value=3000),
)
def test_an_id_written_after_the_params_or_result_is_read_from_the_tail(
    message: Request | Response, pad: int
) -> None:
    big: Message
    if isinstance(message, Request):
        big = Request(message.id, message.method, {"pad": "y" * pad, **(message.params or {})})
    else:
        big = Response(message.id, {"pad": "y" * pad, **message.result})
    data = typescript_order(big)
    suffix = orjson.dumps({"jsonrpc": "2.0", "id": message.id})
    if len(suffix) > TAIL_BYTES:
        return  # an id too long for the tail: nothing to promise
    item = oversized(data[:HEAD_BYTES], 1000, data[-TAIL_BYTES:])
    if isinstance(message, Response):
        assert isinstance(item, ErrorResponse) and item.id == message.id
        assert type(item.id) is type(message.id)
    elif len(orjson.dumps({"method": message.method})) < HEAD_BYTES - 12:
        assert isinstance(item, Invalid) and item.reply
        assert item.id == message.id and type(item.id) is type(message.id)
        assert item.method == message.method


@given(
    message=notifications,
    order=st.integers(min_value=0, max_value=5),
    pad=st.integers(min_value=HEAD_BYTES, max_value=3000),
)
def test_an_oversized_notification_is_not_answered(
    message: Notification, order: int, pad: int
) -> None:
    """Pain point #15: an error reply to a notification (id null) is itself a
    spec violation, and some clients drop the connection on one."""
    big = Notification(message.method, {"pad": "y" * pad, **(message.params or {})})
    data = in_order(big, order)
    item = oversized(data[:HEAD_BYTES], 1000, data[-TAIL_BYTES:])
    check_item(item, big)
    if data.find(b'"params"') < HEAD_BYTES - 20:  # the head reaches the params
        assert isinstance(item, Invalid) and not item.reply


@pytest.mark.parametrize(
    "line",
    [
        # The big part is not a final params object: no id shows at either end.
        b'{"jsonrpc":"2.0","method":"notifications/x","params":{},"extra":"' + b"a" * 5000 + b'"}',
        b'{"jsonrpc":"2.0","method":"notifications/x","params":"' + b"a" * 5000 + b'"}',
        b'{"method":"notifications/progress","jsonrpc":"2.0","x":[' + b"1," * 3000 + b"1]}",
    ],
)
def test_an_oversized_line_naming_a_notification_method_is_not_answered(line: bytes) -> None:
    """MCP names no request ``notifications/...``: with no id in sight, such a line
    is a notification, and JSON-RPC forbids answering one (the audit found these
    answered with -32600, id null)."""
    item = oversized(line[:HEAD_BYTES], 1000, line[-TAIL_BYTES:])
    assert isinstance(item, Invalid) and not item.reply
    assert item.method and item.method.startswith("notifications/")
    assert "notification" in item.error.message


def test_an_oversized_request_with_an_id_past_a_notification_method_is_answered() -> None:
    line = b'{"jsonrpc":"2.0","method":"notifications/x","x":"' + b"a" * 5000 + b'","id":7}'
    item = oversized(line[:HEAD_BYTES], 1000, line[-TAIL_BYTES:])
    assert isinstance(item, Invalid) and item.reply and item.id == 7
