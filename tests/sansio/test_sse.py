"""Tests for the sans-IO Server-Sent Events decoder and encoder.

The decoder is held to the WHATWG HTML "Interpreting an event stream" rules
(section 9.2.6): an edge-case table, the spec's own examples, chunking-invariance
properties, a property against an independent whole-stream model of the spec,
encoder round trips, the size limit and a linear-time guard.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mcpwire._errors import RemoteProtocolError
from mcpwire.sansio._sse import (
    DEFAULT_MAX_EVENT_SIZE,
    SSEDecoder,
    SSEEvent,
    SSEEventTooLarge,
    encode_comment,
    encode_event,
    encode_priming,
    encode_retry,
)

E = SSEEvent


def run(
    chunks: Iterable[bytes], *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE
) -> tuple[list[SSEEvent], str, int | None]:
    """Feed every chunk and then EOF; return the events and final id/retry."""
    dec = SSEDecoder(max_event_size=max_event_size)
    events: list[SSEEvent] = []
    for chunk in chunks:
        events += dec.feed(chunk)
    events += dec.feed_eof()
    return events, dec.last_event_id, dec.retry


def feed_all(dec: SSEDecoder, chunks: Iterable[bytes]) -> list[SSEEvent]:
    events: list[SSEEvent] = []
    for chunk in chunks:
        events += dec.feed(chunk)
    return events


def events_of(stream: bytes | Sequence[bytes]) -> list[SSEEvent]:
    chunks = [stream] if isinstance(stream, bytes) else stream
    return run(chunks)[0]


def bytewise(stream: bytes) -> list[bytes]:
    return [stream[i : i + 1] for i in range(len(stream))]


def normalise(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


# -- WHATWG edge cases -------------------------------------------------------

EDGE_CASES = [
    # Line ends: CRLF, CR, LF, and all three in one chunk.
    pytest.param(b"data: a\r\n\r\n", [E("a")], id="crlf"),
    pytest.param(b"data: a\r\r", [E("a")], id="lone-cr"),
    pytest.param(b"data: a\n\n", [E("a")], id="lone-lf"),
    pytest.param(
        b"data: a\rdata: b\r\ndata: c\n\r\n" + b"data: d\n\r",
        [E("a\nb\nc"), E("d")],
        id="mixed-line-ends",
    ),
    pytest.param(b"data: a\r\n\n", [E("a")], id="crlf-then-lf-is-two-line-ends"),
    pytest.param(b"data: a\n\r\n", [E("a")], id="lf-then-crlf"),
    pytest.param(b"data: a\r\r\n", [E("a")], id="cr-then-crlf"),
    pytest.param(b"data: a\n\rdata: b\n\n", [E("a"), E("b")], id="lf-cr-blank-line"),
    # A CRLF pair split over two chunks is one line end, not two.
    pytest.param([b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"], [E("a\nb")], id="cr|lf-split"),
    pytest.param([b"data: a\r", b"", b"\n", b"\n"], [E("a")], id="cr|empty|lf"),
    pytest.param([b"data: a\r", b"\r"], [E("a")], id="cr|cr"),
    # A CR that ends the stream still ends its line.
    pytest.param(b"data: a\r\r", [E("a")], id="cr-at-eof-completes-line"),
    # Byte order mark: stripped once at the start, kept anywhere else.
    pytest.param(b"\xef\xbb\xbfdata: a\n\n", [E("a")], id="bom"),
    pytest.param([b"\xef", b"\xbb", b"\xbf", b"data: a\n\n"], [E("a")], id="bom-split"),
    pytest.param([b"\xef\xbb\xbf", b"data: a\n\n"], [E("a")], id="bom-alone-in-chunk"),
    pytest.param(b"\xef\xbb\xbf\xef\xbb\xbfdata: a\n\n", [], id="second-bom-is-field-name"),
    pytest.param(b"data: \xef\xbb\xbfa\n\n", [E("\ufeffa")], id="bom-in-data-kept"),
    pytest.param(
        [b"data: a\n\n", b"\xef\xbb\xbfdata: b\n\n"], [E("a")], id="bom-later-is-not-stripped"
    ),
    # Data buffer: lines joined with LF, exactly one trailing LF removed.
    pytest.param(b"data: a\ndata: b\ndata: c\n\n", [E("a\nb\nc")], id="multi-line-data"),
    pytest.param(b"data: a\ndata:\n\n", [E("a\n")], id="trailing-lf-removed-once"),
    pytest.param(b"data:\ndata:\n\n", [E("\n")], id="two-empty-data-lines"),
    pytest.param(b"data\n\n", [E("")], id="data-without-colon"),
    pytest.param(b"data:\n\n", [E("")], id="data-colon-empty"),
    pytest.param(b"data:x\n\n", [E("x")], id="no-leading-space"),
    pytest.param(b"data:  x\n\n", [E(" x")], id="two-spaces-one-removed"),
    pytest.param(b"data:\tx\n\n", [E("\tx")], id="tab-not-removed"),
    pytest.param(b"data: a:b: c\n\n", [E("a:b: c")], id="colons-in-value"),
    pytest.param(b"data : x\n\n", [], id="space-before-colon-is-another-field"),
    pytest.param(b"Data: x\n\n", [], id="field-names-case-sensitive"),
    # Comments.
    pytest.param(b": hello\ndata: a\n: there\n\n", [E("a")], id="comments-ignored"),
    pytest.param(b":\n\n:data: x\n\n", [], id="comment-only-blocks"),
    # Event type.
    pytest.param(b"event: ping\ndata: a\n\n", [E("a", event="ping")], id="event-type"),
    pytest.param(b"event:\ndata: a\n\n", [E("a")], id="empty-event-is-message"),
    pytest.param(b"event: x\n\ndata: a\n\n", [E("a")], id="event-only-block-not-dispatched"),
    pytest.param(
        b"event: x\nevent: y\ndata: a\n\n", [E("a", event="y")], id="last-event-field-wins"
    ),
    pytest.param(b"data: a\n\ndata: b\n\n", [E("a"), E("b")], id="event-type-reset-each-block"),
    # Last event ID.
    pytest.param(
        b"id: 1\ndata: a\n\ndata: b\n\n", [E("a", id="1"), E("b", id="1")], id="id-persists"
    ),
    pytest.param(
        b"id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n",
        [E("a", id="1"), E("b", id="1")],
        id="id-with-nul-ignored",
    ),
    pytest.param(
        b"id: 1\ndata: a\n\nid\ndata: b\n\n", [E("a", id="1"), E("b")], id="bare-id-resets"
    ),
    pytest.param(
        b"id: 1\ndata: a\n\nid:\ndata: b\n\n", [E("a", id="1"), E("b")], id="empty-id-resets"
    ),
    pytest.param(b"data: a\nid: 7\n\n", [E("a", id="7")], id="id-after-data-in-block"),
    pytest.param(b"id: 7\n\ndata: a\n\n", [E("a", id="7")], id="id-only-block-still-commits"),
    # Retry: only non-empty ASCII digits.
    pytest.param(b"retry: 3000\ndata: a\n\n", [E("a", retry=3000)], id="retry"),
    pytest.param(b"retry: 10a\ndata: a\n\n", [E("a")], id="retry-not-digits"),
    pytest.param(b"retry:\ndata: a\n\n", [E("a")], id="retry-empty"),
    pytest.param(b"retry: -1\ndata: a\n\n", [E("a")], id="retry-negative"),
    pytest.param(b"retry:  5\ndata: a\n\n", [E("a")], id="retry-extra-space"),
    pytest.param(b"retry: 1.5\ndata: a\n\n", [E("a")], id="retry-float"),
    pytest.param("retry: \uff13\ndata: a\n\n".encode(), [E("a")], id="retry-fullwidth-digit"),
    pytest.param("retry: \u00b2\ndata: a\n\n".encode(), [E("a")], id="retry-superscript"),
    pytest.param(b"retry: 007\ndata: a\n\n", [E("a", retry=7)], id="retry-leading-zeros"),
    pytest.param(b"retry: 0\ndata: a\n\n", [E("a", retry=0)], id="retry-zero"),
    pytest.param(b"retry: 5\n\ndata: a\n\n", [E("a")], id="retry-belongs-to-its-block"),
    # Unknown fields.
    pytest.param(b"foo: bar\ndata: a\nfoo\n\n", [E("a")], id="unknown-field"),
    pytest.param(b"foo: bar\n\n", [], id="unknown-field-alone"),
    # End of stream discards the pending event and any partial line.
    pytest.param(b"data: a\n", [], id="eof-without-blank-line"),
    pytest.param(b"data: a", [], id="eof-mid-line"),
    pytest.param(b"data: a\n\ndata: b\n", [E("a")], id="eof-discards-only-last"),
    pytest.param(b"", [], id="empty-stream"),
    # Only CR, LF and CRLF end lines.
    pytest.param(
        "data: a\u2028b\u2029c\x85d\x0be\x0cf\x1cg\n\n".encode(),
        [E("a\u2028b\u2029c\x85d\x0be\x0cf\x1cg")],
        id="unicode-line-separators-are-data",
    ),
    pytest.param(b"data: a\x00b\n\n", [E("a\x00b")], id="nul-in-data"),
    # Decoding.
    pytest.param(b"data: \xff\xfeA\n\n", [E("\ufffd\ufffdA")], id="invalid-utf8-replaced"),
    pytest.param(b"data: \xe2\x82\n\n", [E("\ufffd")], id="truncated-sequence-replaced"),
    pytest.param(b"data: \xed\xa0\x80\n\n", [E("\ufffd" * 3)], id="encoded-surrogate-replaced"),
    pytest.param([b"data: \xe2", b"\x82", b"\xac\n\n"], [E("\u20ac")], id="multibyte-split"),
    pytest.param([b"data: \xf0\x9f", b"\x98\x80", b"\n\n"], [E("\U0001f600")], id="4-byte-split"),
    pytest.param(
        [b"data: x\xe2\x82", b"\n\n"], [E("x\ufffd")], id="truncated-then-line-end-across-chunks"
    ),
]


@pytest.mark.parametrize(("stream", "expected"), EDGE_CASES)
def test_edge_cases(stream: bytes | list[bytes], expected: list[SSEEvent]) -> None:
    assert events_of(stream) == expected
    # Whatever the given chunking, byte-at-a-time must agree.
    whole = stream if isinstance(stream, bytes) else b"".join(stream)
    assert events_of(bytewise(whole)) == expected


# -- the examples of WHATWG HTML 9.2.6 ----------------------------------------


def test_spec_example_stock_ticker() -> None:
    stream = b"data: YHOO\ndata: +2\ndata: 10\n\n"
    assert events_of(stream) == [E("YHOO\n+2\n10")]


def test_spec_example_four_blocks_with_ids() -> None:
    stream = (
        b": test stream\n"
        b"\n"
        b"data: first event\n"
        b"id: 1\n"
        b"\n"
        b"data:second event\n"
        b"id\n"
        b"\n"
        b"data:  third event\n"
        b"\n"
    )
    events, last_id, _ = run([stream])
    assert events == [E("first event", id="1"), E("second event", id=""), E(" third event")]
    assert last_id == ""
    # "the end of the stream is not enough to trigger the dispatch of the last event"
    assert events_of(stream[:-1]) == events[:2]


def test_spec_example_after_first_block_last_id_is_1() -> None:
    dec = SSEDecoder()
    assert dec.feed(b": test stream\n\ndata: first event\nid: 1\n\n") == [E("first event", id="1")]
    assert dec.last_event_id == "1"
    dec.feed(b"data:second event\nid\n\n")
    assert dec.last_event_id == ""


def test_spec_example_empty_and_newline_data() -> None:
    stream = b"data\n\ndata\ndata\n\ndata:"
    assert events_of(stream) == [E(""), E("\n")]


def test_spec_example_space_after_colon_optional() -> None:
    stream = b"data:test\n\ndata: test\n\n"
    assert events_of(stream) == [E("test"), E("test")]


# -- decoder state: last event ID, retry, lifecycle ---------------------------


def test_last_event_id_commits_only_at_dispatch() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"id: 1\ndata: a\n\nid: 2\ndata: b\n") == [E("a", id="1")]
    # Block 2 has not been dispatched: event "b" was not received yet.
    assert dec.last_event_id == "1"
    assert dec.feed_eof() == []
    assert dec.last_event_id == "1"


def test_last_event_id_set_by_data_less_block() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"id: 42\n\n") == []
    assert dec.last_event_id == "42"


def test_retry_applies_immediately_and_persists() -> None:
    dec = SSEDecoder()
    assert dec.retry is None
    assert dec.feed(b"retry: 1500\n") == []
    assert dec.retry == 1500
    assert dec.feed(b"data: a\n\nretry: x\n\n") == [E("a", retry=1500)]
    assert dec.retry == 1500
    assert dec.feed(b"data: b\n\n") == [E("b")]
    dec.feed(b"retry: 20\ndata: c\n")
    assert dec.feed_eof() == []
    assert dec.retry == 20  # retry takes effect even though its event was discarded


def test_retry_partial_line_at_eof_not_applied() -> None:
    assert run([b"retry: 100"])[2] is None
    assert run([b"retry: 100\r"])[2] == 100


def test_retry_with_absurdly_many_digits_is_ignored() -> None:
    dec = SSEDecoder()
    dec.feed(b"retry: 5\n" + b"retry: " + b"9" * 5000 + b"\n")
    assert dec.retry == 5
    dec.feed(b"retry: " + b"0" * 5000 + b"7\n")
    assert dec.retry == 7


def test_accepts_bytearray_and_memoryview() -> None:
    dec = SSEDecoder()
    assert dec.feed(bytearray(b"data: a\n")) == []
    assert dec.feed(memoryview(b"xx\n\n")[2:]) == [E("a")]


def test_events_returned_from_the_chunk_that_completes_them() -> None:
    dec = SSEDecoder()
    assert dec.feed(b"data: a\n\ndata: b\n") == [E("a")]
    assert dec.feed(b"\ndata: c\n\n") == [E("b"), E("c")]


def test_feed_after_eof_is_an_error() -> None:
    dec = SSEDecoder()
    dec.feed(b"data: a\n\n")
    assert dec.feed_eof() == []
    assert dec.feed_eof() == []
    with pytest.raises(RuntimeError):
        dec.feed(b"data: b\n\n")


def test_event_is_a_frozen_value() -> None:
    ev = E("a", event="x", id="1", retry=2)
    assert ev == SSEEvent(data="a", event="x", id="1", retry=2)
    assert E("a") == SSEEvent(data="a", event="message", id="", retry=None)
    with pytest.raises(AttributeError):
        ev.data = "b"  # type: ignore[misc]


# -- chunking invariance (hypothesis) ------------------------------------------

LINE_ENDS = [b"\r\n", b"\r", b"\n"]
FIELD_NAMES = ["data", "event", "id", "retry", "", "dat", "Data", "foo", "data ", ":"]
# Text that stresses the decoder: separators that must NOT split, NUL, BOM, digits.
VALUE_TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from("ab 0123456789:\x00\ufeff\u2028\u2029\x85\u00e9\u20ac\U0001f600"),
        st.characters(exclude_characters="\r\n", exclude_categories=["Cs"]),
    ),
    max_size=12,
)


@st.composite
def sse_lines(draw: st.DrawFn) -> bytes:
    kind = draw(st.integers(0, 9))
    end = draw(st.sampled_from(LINE_ENDS))
    if kind <= 2:
        return end  # blank line: dispatch
    if kind == 3:
        return draw(st.binary(max_size=8))  # raw bytes: anything at all
    if kind == 4:
        return (
            b"retry:"
            + draw(st.sampled_from([b"", b" "]))
            + str(draw(st.integers(0, 99999))).encode()
            + end
        )
    name = draw(st.sampled_from(FIELD_NAMES))
    sep = draw(st.sampled_from(["", ":", ": ", ":  "]))
    value = draw(VALUE_TEXT) if sep else ""
    return (name + sep + value).encode() + end


STREAMS = st.builds(
    lambda bom, lines: bom + b"".join(lines),
    st.sampled_from([b"", b"\xef\xbb\xbf"]),
    st.lists(sse_lines(), max_size=30),
)


def split_at(stream: bytes, cuts: list[int]) -> list[bytes]:
    bounds = [0, *sorted(cuts), len(stream)]
    return [stream[a:b] for a, b in itertools.pairwise(bounds)]


@given(stream=STREAMS, data=st.data())
@settings(max_examples=300)
def test_chunking_does_not_change_the_result(stream: bytes, data: st.DataObject) -> None:
    expected = run([stream])
    assert run(bytewise(stream)) == expected
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=12), label="cuts")
    assert run(split_at(stream, cuts)) == expected


def spec_model(stream: bytes) -> tuple[list[SSEEvent], str, int | None]:
    """The whole stream interpreted as the WHATWG text reads, written independently of
    the decoder: decode all of it, drop one leading BOM, split on CRLF, CR or LF, and
    process each complete line; the piece after the last line end is never processed."""
    text = stream.decode("utf-8", errors="replace")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = re.split("\r\n|\r|\n", text)[:-1]
    events: list[SSEEvent] = []
    data: list[str] = []
    event_type = id_buffer = last_id = ""
    retry: int | None = None
    block_retry: int | None = None
    for line in lines:
        if line == "":
            last_id = id_buffer
            if data:
                events.append(E("\n".join(data), event_type or "message", last_id, block_retry))
            data, event_type, block_retry = [], "", None
            continue
        if line.startswith(":"):
            continue
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event_type = value
        elif name == "id" and "\0" not in value:
            id_buffer = value
        elif name == "retry" and value and all("0" <= c <= "9" for c in value):
            retry = block_retry = int(value)
    return events, last_id, retry


@given(stream=STREAMS, data=st.data())
@settings(max_examples=300)
def test_the_decoder_reads_as_the_spec_model_however_chunked(
    stream: bytes, data: st.DataObject
) -> None:
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=12), label="cuts")
    assert run(split_at(stream, cuts)) == spec_model(stream)


@given(stream=STREAMS, data=st.data(), limit=st.integers(1, 40))
@settings(max_examples=200)
def test_chunking_does_not_change_whether_the_limit_trips(
    stream: bytes, data: st.DataObject, limit: int
) -> None:
    def outcome(chunks: list[bytes]) -> tuple[list[SSEEvent], bool]:
        """The events delivered, and whether the limit tripped: the events an
        oversized one follows are delivered before the error, however chunked,
        and once all is fed ``check`` knows of a trip without more input."""
        dec = SSEDecoder(max_event_size=limit)
        events: list[SSEEvent] = []
        try:
            for chunk in chunks:
                events += dec.feed(chunk)
            dec.check()
        except SSEEventTooLarge:
            return events, True
        events += dec.feed_eof()  # never the first to report a trip
        return events, False

    expected = outcome([stream])
    assert outcome(bytewise(stream)) == expected
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=12), label="cuts")
    assert outcome(split_at(stream, cuts)) == expected


@given(
    small=st.lists(st.text(st.characters(codec="ascii", exclude_characters="\r\n"), max_size=20)),
    excess=st.integers(1, 100),
    data=st.data(),
)
@settings(max_examples=200)
def test_a_trip_is_known_once_the_oversized_event_is_fed(
    small: list[str], excess: int, data: st.DataObject
) -> None:
    """Events within the limit, then one over it, however chunked: once all of it
    is fed the earlier events are out and ``check`` raises, so a reader reports
    the oversized event without waiting for input that may never come."""
    limit = 32
    stream = b"".join(b"data: " + s.encode() + b"\n\n" for s in small)
    stream += b"data: " + b"x" * (limit - 6 + excess) + b"\n\n"
    cuts = data.draw(st.lists(st.integers(0, len(stream)), max_size=8), label="cuts")
    dec = SSEDecoder(max_event_size=limit)
    events: list[SSEEvent] = []
    for chunk in split_at(stream, cuts):
        try:
            events += dec.feed(chunk)
        except SSEEventTooLarge:
            break  # noticed with nothing completed before it in this chunk
    with pytest.raises(SSEEventTooLarge):
        dec.check()
    assert events == [E(s) for s in small]


# -- encoder -------------------------------------------------------------------

SINGLE_LINE = st.text(st.characters(exclude_characters="\r\n", exclude_categories=["Cs"]))


@given(
    data=st.text(),
    event=st.none() | SINGLE_LINE,
    id_=st.none() | SINGLE_LINE.filter(lambda s: "\x00" not in s),
    retry=st.none() | st.integers(0, 10**15),
)
@settings(max_examples=300)
def test_encode_event_round_trip(
    data: str, event: str | None, id_: str | None, retry: int | None
) -> None:
    encoded = encode_event(data, event=event, id=id_, retry=retry)
    assert encoded.endswith(b"\n\n")
    expected = E(normalise(data), event=event or "message", id=id_ or "", retry=retry)
    for chunks in ([encoded], bytewise(encoded)):
        events, last_id, last_retry = run(chunks)
        assert events == [expected]
        assert last_id == (id_ or "")
        assert last_retry == retry


@given(
    st.lists(
        st.one_of(
            st.builds(lambda d: ("event", d), st.text()),
            st.builds(lambda t: ("comment", t), SINGLE_LINE),
            st.builds(lambda r: ("retry", r), st.integers(0, 10**6)),
        ),
        max_size=10,
    )
)
def test_encoded_sequence_round_trip(items: list[tuple[str, object]]) -> None:
    parts: list[bytes] = []
    expected: list[SSEEvent] = []
    for kind, value in items:
        if kind == "event":
            assert isinstance(value, str)
            parts.append(encode_event(value))
            expected.append(E(normalise(value)))
        elif kind == "comment":
            assert isinstance(value, str)
            parts.append(encode_comment(value))
        else:
            assert isinstance(value, int)
            parts.append(encode_retry(value))
    assert events_of(b"".join(parts)) == expected


def test_encode_event_layout() -> None:
    assert encode_event("x") == b"data: x\n\n"
    assert encode_event("") == b"data:\n\n"
    assert (
        encode_event("a\r\nb\rc\nd\u2028e")
        == "data: a\ndata: b\ndata: c\ndata: d\u2028e\n\n".encode()
    )
    assert encode_event("a\n") == b"data: a\ndata:\n\n"
    assert encode_event(" x") == b"data:  x\n\n"
    assert (
        encode_event("{}", event="message", id="7", retry=1000)
        == b"id: 7\nevent: message\nretry: 1000\ndata: {}\n\n"
    )
    assert encode_event("x", id="") == b"id:\ndata: x\n\n"
    assert encode_event("\u00e9") == "data: \u00e9\n\n".encode()


def test_encode_comment_retry_priming() -> None:
    assert encode_comment() == b":\n\n"
    assert encode_comment(" ping") == b": ping\n\n"
    assert encode_retry(3000) == b"retry: 3000\n\n"
    assert encode_priming("abc") == b"id: abc\ndata:\n\n"
    assert encode_priming("abc", retry=500) == b"id: abc\nretry: 500\ndata:\n\n"

    dec = SSEDecoder()
    assert dec.feed(encode_comment("keep-alive")) == []
    assert dec.feed(encode_retry(3000)) == []
    assert dec.retry == 3000
    assert dec.feed(encode_priming("s1-0", retry=250)) == [E("", id="s1-0", retry=250)]
    assert dec.last_event_id == "s1-0"
    assert dec.retry == 250


@pytest.mark.parametrize("bad", ["a\nb", "a\rb", "a\r\nb", "\n", "\r"])
def test_encoder_rejects_line_ends_in_single_line_fields(bad: str) -> None:
    with pytest.raises(ValueError, match="CR or LF"):
        encode_event("x", id=bad)
    with pytest.raises(ValueError, match="CR or LF"):
        encode_event("x", event=bad)
    with pytest.raises(ValueError, match="CR or LF"):
        encode_comment(bad)
    with pytest.raises(ValueError, match="CR or LF"):
        encode_priming(bad)


def test_encoder_rejects_nul_in_id_and_negative_retry() -> None:
    with pytest.raises(ValueError, match="NUL"):
        encode_event("x", id="a\x00b")
    with pytest.raises(ValueError, match="NUL"):
        encode_priming("\x00")
    encode_event("x", event="a\x00b")  # NUL is harmless in the event type
    with pytest.raises(ValueError, match="non-negative"):
        encode_event("x", retry=-1)
    with pytest.raises(ValueError, match="non-negative"):
        encode_retry(-1)


# -- size limit -----------------------------------------------------------------


def test_limit_error_is_a_remote_protocol_error() -> None:
    err = SSEEventTooLarge(200, 100)
    assert isinstance(err, RemoteProtocolError)
    assert err.error_code == -32600
    assert (err.size, err.limit) == (200, 100)
    assert "limit of 100 bytes" in str(err)


def test_default_limit_is_16_mib() -> None:
    assert DEFAULT_MAX_EVENT_SIZE == 16 * 1024 * 1024


def test_oversized_event_raises() -> None:
    dec = SSEDecoder(max_event_size=100)
    with pytest.raises(SSEEventTooLarge) as info:
        dec.feed(b"data: " + b"x" * 200 + b"\n\n")
    assert info.value.limit == 100
    assert info.value.size > 100


def test_many_data_lines_over_the_limit_raise() -> None:
    dec = SSEDecoder(max_event_size=100)
    with pytest.raises(SSEEventTooLarge):
        feed_all(dec, [b"data: 0123456789\n"] * 30)


def test_endless_line_raises() -> None:
    dec = SSEDecoder(max_event_size=1000)
    with pytest.raises(SSEEventTooLarge):
        feed_all(dec, [b"x" * 64] * 100)


def test_endless_comment_line_raises() -> None:
    with pytest.raises(SSEEventTooLarge):
        SSEDecoder(max_event_size=50).feed(b":" + b"c" * 60 + b"\n")


def test_many_small_events_do_not_raise() -> None:
    dec = SSEDecoder(max_event_size=100)
    block = encode_event("0123456789" * 5, id="123")
    count = 0
    for _ in range(2000):  # about 130 KB in all, 1300 times the limit
        count += len(dec.feed(block))
    assert count == 2000


def test_limit_boundary_counts_utf8_bytes_of_data_plus_line() -> None:
    # A 16-byte line ("data: " + 10 bytes) fits a 16-byte limit exactly ...
    assert run([b"data: " + b"x" * 10 + b"\n\n"], max_event_size=16)[0] == [E("x" * 10)]
    accented = ("data: " + "\u00e9" * 5 + "\n\n").encode()
    assert run([accented], max_event_size=16)[0] == [E("\u00e9" * 5)]
    with pytest.raises(SSEEventTooLarge):
        run([b"data: " + b"x" * 11 + b"\n\n"], max_event_size=16)
    # ... and non-ASCII characters count as their UTF-8 bytes.
    with pytest.raises(SSEEventTooLarge):
        run([("data: " + "\u00e9" * 6 + "\n\n").encode()], max_event_size=16)
    # The data buffer (values plus their LFs) carries over to the next line.
    with pytest.raises(SSEEventTooLarge):
        run([b"data: 12345\ndata: 12345\n\n"], max_event_size=16)  # 6 + 11 > 16


def test_error_state_is_sticky() -> None:
    dec = SSEDecoder(max_event_size=10)
    with pytest.raises(SSEEventTooLarge) as first:
        dec.feed(b"data: 0123456789")
    with pytest.raises(SSEEventTooLarge) as again:
        dec.feed(b"\n\n")
    assert str(again.value) == str(first.value)
    with pytest.raises(SSEEventTooLarge):
        dec.feed(b"")
    with pytest.raises(SSEEventTooLarge):
        dec.feed_eof()


def test_an_event_before_an_oversized_one_in_the_same_chunk_is_delivered() -> None:
    answer = b'data: {"id": 1}\n\n'
    dec = SSEDecoder(max_event_size=64)
    dec.check()  # nothing tripped yet
    assert dec.feed(answer + b"data: " + b"x" * 100 + b"\n\n") == [E('{"id": 1}')]
    # Known before any more input: a reader need not wait for the next chunk.
    with pytest.raises(SSEEventTooLarge, match="limit of 64 bytes"):
        dec.check()
    with pytest.raises(SSEEventTooLarge):
        dec.feed(b"data: more\n\n")
    with pytest.raises(SSEEventTooLarge):
        dec.feed_eof()
    # With nothing completed first, the chunk that trips the limit raises.
    with pytest.raises(SSEEventTooLarge):
        SSEDecoder(max_event_size=64).feed(b"data: " + b"x" * 100)


def test_invalid_limit() -> None:
    with pytest.raises(ValueError, match="max_event_size"):
        SSEDecoder(max_event_size=0)


# -- linear time (no timing assertions; the timeout only catches O(n**2)) ------


@pytest.mark.timeout(20)
def test_large_line_in_small_chunks() -> None:
    payload = b"x" * (2 * 1024 * 1024)
    stream = b"data: " + payload + b"\n\n"
    dec = SSEDecoder()
    events: list[SSEEvent] = []
    for i in range(0, len(stream), 512):
        events += dec.feed(stream[i : i + 512])
    assert events == [E(payload.decode())]


@pytest.mark.timeout(20)
def test_many_lines_in_one_chunk() -> None:
    # 200 000 lines in one chunk, with each line end: splitting that rescanned
    # the rest of the chunk from every line start would be quadratic and time out.
    for end in (b"\n", b"\r", b"\r\n"):
        stream = b"data: x" + end
        assert events_of(stream * 200_000 + end) == [E("\n".join(["x"] * 200_000))]


@pytest.mark.timeout(20)
def test_large_event_many_data_lines_in_chunks() -> None:
    line = b"data: " + b"y" * 1000 + b"\r\n"
    stream = line * 2000 + b"\r\n"
    dec = SSEDecoder()
    events: list[SSEEvent] = []
    for i in range(0, len(stream), 4096):
        events += dec.feed(stream[i : i + 4096])
    assert len(events) == 1
    assert events[0].data == "\n".join(["y" * 1000] * 2000)
