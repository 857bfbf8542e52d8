"""Tests for the newline-delimited JSON framer (the stdio transport's reader).

The central property: for any stream of lines (JSON, junk, blank, whitespace
only, LF or CRLF ends, oversized) the items are the same however the bytes are
chunked, and they match a simple line-by-line model.
"""

from __future__ import annotations

from collections.abc import Iterable

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import json_values, split

from mcpwire.sansio import (
    DEFAULT_MAX_LINE,
    LineTooLong,
    NDJSONItem,
    NDJSONReader,
    NonJSONLine,
    frame,
)
from mcpwire.sansio._ndjson import HEAD_BYTES, TAIL_BYTES
from mcpwire.sansio._oversized import names_id

WS = b" \t\r\n\f\v"


def too_long(line: bytes, max_line: int) -> LineTooLong:
    """The item for an oversized line: the limit, the line's first bytes, and its
    last ones unless the first name the envelope's id."""
    head = line[: min(HEAD_BYTES, max_line)]
    tail = b"" if names_id(head) else line[-min(TAIL_BYTES, max_line) :]
    return LineTooLong(max_line, head, tail)


def model(raw_lines: list[bytes], *, max_line: int, tolerant: bool) -> list[NDJSONItem]:
    """What the reader must yield for the lines between line ends (no ``\\n`` inside)."""
    out: list[NDJSONItem] = []
    for raw in raw_lines:
        line = raw[:-1] if raw.endswith(b"\r") else raw
        if len(line) > max_line:
            out.append(too_long(line, max_line))
            continue
        stripped = line.lstrip(WS)
        if not stripped:
            continue
        if tolerant and stripped[:1] not in (b"{", b"["):
            out.append(NonJSONLine(line))
            continue
        out.append(line)
    return out


def run(
    chunks: Iterable[bytes], *, max_line: int = DEFAULT_MAX_LINE, tolerant: bool = False
) -> tuple[list[NDJSONItem], int]:
    """Feed every chunk then EOF; return the items and the largest ``buffered`` seen."""
    reader = NDJSONReader(max_line=max_line, tolerant=tolerant)
    items: list[NDJSONItem] = []
    high = 0
    for chunk in chunks:
        items += reader.feed(chunk)
        high = max(high, reader.buffered)
    items += reader.feed_eof()
    assert reader.buffered == 0
    return items, high


# -- the line strategy -------------------------------------------------------

json_lines = json_values.map(orjson.dumps)
junk_lines = st.binary(max_size=40).map(lambda b: b.replace(b"\n", b""))
blank_lines = st.sampled_from([b"", b" ", b"\t", b"  \t ", b"\r", b"\f\v", b" \r"])
padded_json = st.tuples(st.sampled_from([b" ", b"\t", b"  "]), json_lines).map(b"".join)
any_line = st.one_of(json_lines, json_lines, junk_lines, blank_lines, padded_json)
line_end = st.sampled_from([b"\n", b"\r\n"])


@st.composite
def streams(
    draw: st.DrawFn, lines: st.SearchStrategy[bytes] = any_line
) -> tuple[bytes, list[bytes]]:
    """A byte stream and its raw lines (what lies between the ``\\n`` bytes)."""
    body = draw(st.lists(st.tuples(lines, line_end), max_size=12))
    tail = draw(st.one_of(st.just(b""), lines))
    data = b"".join(line + end for line, end in body) + tail
    raw = [line + (b"\r" if end == b"\r\n" else b"") for line, end in body]
    if tail:
        raw.append(tail)
    return data, raw


@st.composite
def chunked_streams(
    draw: st.DrawFn, lines: st.SearchStrategy[bytes] = any_line
) -> tuple[bytes, list[bytes], list[int]]:
    data, raw = draw(streams(lines))
    points = sorted(draw(st.lists(st.integers(0, len(data)), max_size=30)))
    return data, raw, points


def byte_by_byte(data: bytes) -> list[bytes]:
    return [data[i : i + 1] for i in range(len(data))]


# -- chunking invariance -----------------------------------------------------


@given(chunked_streams(), st.booleans())
def test_any_chunking_yields_the_model(
    case: tuple[bytes, list[bytes], list[int]], tolerant: bool
) -> None:
    data, raw, points = case
    expected = model(raw, max_line=DEFAULT_MAX_LINE, tolerant=tolerant)
    assert run([data], tolerant=tolerant)[0] == expected
    assert run(byte_by_byte(data), tolerant=tolerant)[0] == expected
    assert run(split(data, points), tolerant=tolerant)[0] == expected


@given(chunked_streams(), st.integers(min_value=1, max_value=40), st.booleans())
def test_small_limits_any_chunking(
    case: tuple[bytes, list[bytes], list[int]], max_line: int, tolerant: bool
) -> None:
    data, raw, points = case
    expected = model(raw, max_line=max_line, tolerant=tolerant)
    for chunks in ([data], byte_by_byte(data), split(data, points)):
        items, high = run(chunks, max_line=max_line, tolerant=tolerant)
        assert items == expected
        assert high <= max_line + 1


oversized = st.integers(min_value=11, max_value=60).map(lambda n: b"{" + b"x" * (n - 1))
fitting = st.integers(min_value=1, max_value=10).map(lambda n: b"{" + b"y" * (n - 1))


@given(chunked_streams(st.one_of(oversized, fitting, blank_lines)))
def test_oversized_lines_are_reported_once_and_framing_resumes(
    case: tuple[bytes, list[bytes], list[int]],
) -> None:
    data, raw, points = case
    max_line = 10
    n_oversized = sum(1 for r in raw if len(r[:-1] if r.endswith(b"\r") else r) > max_line)
    fitting_lines = [r[:-1] if r.endswith(b"\r") else r for r in raw]
    fitting_lines = [r for r in fitting_lines if r.strip(WS) and len(r) <= max_line]
    for chunks in ([data], byte_by_byte(data), split(data, points)):
        items, high = run(chunks, max_line=max_line)
        assert sum(1 for i in items if isinstance(i, LineTooLong)) == n_oversized
        assert [i for i in items if isinstance(i, bytes)] == fitting_lines
        assert high <= max_line + 1


def test_oversized_line_then_good_line_every_split() -> None:
    good = b'{"jsonrpc":"2.0","method":"m"}'
    line = b"{" + b"a" * 99
    data = line + b"\n" + good + b"\n"
    expected = [too_long(line, 50), good]
    for i in range(len(data) + 1):
        for j in range(i, len(data) + 1, 7):
            chunks = [data[:i], data[i:j], data[j:]]
            assert run(chunks, max_line=50)[0] == expected, (i, j)


def test_line_exactly_at_the_limit() -> None:
    line = b"{" + b"x" * 9
    assert run([line + b"\n"], max_line=10)[0] == [line]
    assert run([line + b"\r\n"], max_line=10)[0] == [line]
    assert run(byte_by_byte(line + b"\r\n"), max_line=10)[0] == [line]
    over = line + b"z"
    assert run([over + b"\n"], max_line=10)[0] == [too_long(over, 10)]
    assert run(byte_by_byte(over + b"\n"), max_line=10)[0] == [too_long(over, 10)]
    assert run(byte_by_byte(over + b"\r\n"), max_line=10)[0] == [too_long(over, 10)]
    # At EOF, unterminated.
    assert run([line], max_line=10)[0] == [line]
    assert run([over], max_line=10)[0] == [too_long(over, 10)]
    assert run(byte_by_byte(over + b"zzzz"), max_line=10)[0] == [too_long(over + b"zzzz", 10)]


def test_line_too_long_message_names_the_limit() -> None:
    item = LineTooLong(1234)
    assert "1234" in item.message


# -- tolerant mode -----------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        (b'{"a":1}', "json"),
        (b"[1]", "json"),
        (b'  {"a":1}', "json"),
        (b"\t[", "json"),
        (b"{not json", "json"),  # framing does not parse: the parser answers it
        (b"hello", "non"),
        (b"  hello", "non"),
        (b"123", "non"),
        (b'"str"', "non"),
        (b"null", "non"),
        (b"\xff\xfe", "non"),
        (b"\x00{", "non"),
        (b"", "skip"),
        (b"   ", "skip"),
        (b"\t\f\v", "skip"),
    ],
)
def test_tolerant_mode(line: bytes, kind: str) -> None:
    tolerant_items, _ = run([line + b"\n"], tolerant=True)
    strict_items, _ = run([line + b"\n"], tolerant=False)
    if kind == "skip":
        assert tolerant_items == [] and strict_items == []
    elif kind == "json":
        assert tolerant_items == [line] and strict_items == [line]
    else:
        assert tolerant_items == [NonJSONLine(line)]
        assert strict_items == [line]


def test_crlf_is_stripped_once() -> None:
    assert run([b"{}\r\n"])[0] == [b"{}"]
    assert run([b"{}\r\r\n"])[0] == [b"{}\r"]
    assert run([b"junk\r\n"], tolerant=True)[0] == [NonJSONLine(b"junk")]


# -- EOF and misuse ----------------------------------------------------------


def test_final_line_without_newline_is_returned_by_feed_eof() -> None:
    reader = NDJSONReader()
    assert reader.feed(b'{"a":1}\n{"b"') == [b'{"a":1}']
    assert reader.feed(b":2}") == []
    assert reader.buffered == len(b'{"b":2}')
    assert reader.feed_eof() == [b'{"b":2}']
    assert reader.buffered == 0


def test_feed_eof_is_idempotent() -> None:
    reader = NDJSONReader()
    reader.feed(b"{")
    assert reader.feed_eof() == [b"{"]
    assert reader.feed_eof() == []


def test_feed_after_feed_eof_raises() -> None:
    reader = NDJSONReader()
    reader.feed_eof()
    with pytest.raises(RuntimeError):
        reader.feed(b"{}\n")
    with pytest.raises(RuntimeError):
        reader.feed(b"")


def test_an_oversized_line_ended_by_end_of_input_is_reported_there() -> None:
    reader = NDJSONReader(max_line=4)
    assert reader.feed(b"{xxxxxxxx") == []  # its head names no id: the tail may
    assert reader.feed(b"xxyz\r") == []
    assert reader.feed_eof() == [LineTooLong(4, b"{xxx", b"xxyz")]
    assert reader.feed_eof() == []


def test_an_oversized_line_whose_head_names_the_id_is_reported_at_once() -> None:
    """The report does not wait for the rest of a huge (or never-ending) line when
    its first bytes already say which request it was."""
    reader = NDJSONReader(max_line=30)
    head = b'{"jsonrpc":"2.0","id":5,"method":"m","params":{"x":"'
    assert reader.feed(head) == [LineTooLong(30, head[:30])]
    assert reader.feed(b"y" * 10_000) == []
    assert reader.feed(b'"}}\n{}\n') == [b"{}"]
    assert reader.feed_eof() == []


@given(
    size=st.integers(min_value=1, max_value=3000),
    max_line=st.integers(min_value=1, max_value=700),
    points=st.lists(st.integers(min_value=0, max_value=3000), max_size=8),
)
def test_a_line_being_discarded_is_visible_while_it_lasts(
    size: int, max_line: int, points: list[int]
) -> None:
    """``discarding`` holds from the moment a line passes the limit (with room for a
    trailing CR) until its end, ``discarded`` counts its bytes so far, and
    ``oversized_lines`` counts each such line once, for any chunking."""
    line = b"{" + b"x" * size
    reader = NDJSONReader(max_line=max_line)
    fed = 0
    for chunk in split(line, sorted(points)):
        reader.feed(chunk)
        fed += len(chunk)
        assert reader.discarding is (fed > max_line + 1)
        assert reader.oversized_lines == (1 if fed > max_line + 1 else 0)
        if reader.discarding:
            assert reader.discarded == fed
    reader.feed(b"\n")
    assert not reader.discarding
    assert reader.oversized_lines == (1 if len(line) > max_line else 0)
    if len(line) > max_line:
        assert reader.discarded == len(line)


@given(
    pieces=st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=8),
    max_line=st.integers(min_value=2, max_value=700),  # 2: "{}" fits
    points=st.lists(st.integers(min_value=0, max_value=3000), max_size=8),
    crlf=st.booleans(),
)
def test_the_tail_of_an_oversized_line_is_its_last_bytes_for_any_chunking(
    pieces: list[bytes], max_line: int, points: list[int], crlf: bool
) -> None:
    line = b"{" + b"".join(pieces).replace(b"\n", b".").rstrip(b"\r") + b"z" * 700
    data = line + (b"\r\n" if crlf else b"\n") + b"{}\n"
    expected = [too_long(line, max_line), b"{}"]
    for chunks in ([data], byte_by_byte(data), split(data, sorted(points))):
        items, high = run(chunks, max_line=max_line)
        assert items == expected
        assert high <= max_line + 1


def test_empty_feeds_are_harmless() -> None:
    reader = NDJSONReader()
    assert reader.feed(b"") == []
    assert reader.feed(bytearray(b'{"a"')) == []
    assert reader.feed(memoryview(b":1}\n")) == [b'{"a":1}']


@pytest.mark.parametrize("bad", [0, -1])
def test_max_line_must_be_positive(bad: int) -> None:
    with pytest.raises(ValueError):
        NDJSONReader(max_line=bad)


def test_default_limit() -> None:
    assert DEFAULT_MAX_LINE == 16 * 1024 * 1024
    assert NDJSONReader().max_line == DEFAULT_MAX_LINE


# -- frame() -----------------------------------------------------------------


@given(json_values)
def test_frame_round_trip(value: object) -> None:
    payload = orjson.dumps(value)
    data = frame(payload)
    assert data == payload + b"\n"
    assert run([data])[0] == [payload]


@pytest.mark.parametrize("payload", [b"a\nb", b"\n", b'{"a":1}\n'])
def test_frame_rejects_embedded_newlines(payload: bytes) -> None:
    with pytest.raises(ValueError):
        frame(payload)


def test_frame_allows_carriage_return_and_escapes() -> None:
    assert frame(b'{"a":"\\n"}') == b'{"a":"\\n"}\n'


# -- cost --------------------------------------------------------------------


def test_long_line_in_small_chunks_is_linear() -> None:
    # 4 MiB in 1 KiB chunks: quadratic rescanning would take minutes here.
    chunk = b"x" * 1024
    reader = NDJSONReader()
    assert reader.feed(b'{"blob":"') == []
    for _ in range(4 * 1024):
        assert reader.feed(chunk) == []
    items = reader.feed(b'"}\n')
    assert len(items) == 1
    assert isinstance(items[0], bytes)
    assert len(items[0]) == 4 * 1024 * 1024 + len(b'{"blob":""}')
    assert reader.buffered == 0


def test_oversized_stream_in_small_chunks_stays_bounded() -> None:
    reader = NDJSONReader(max_line=1000)
    items: list[NDJSONItem] = []
    chunk = b"y" * 1024
    items += reader.feed(b"{")
    for _ in range(2048):
        items += reader.feed(chunk)
        assert reader.buffered <= 1001
    items += reader.feed(b"\n{}\n")
    assert items == [too_long(b"{" + chunk, 1000), b"{}"]


def test_many_small_lines_in_one_chunk() -> None:
    data = b'{"a":1}\n' * 100_000
    items = NDJSONReader().feed(data)
    assert len(items) == 100_000
