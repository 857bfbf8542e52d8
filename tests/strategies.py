"""Hypothesis strategies shared by the test suite.

Import as ``from strategies import ...`` (``tests/`` is on ``sys.path`` because
``tests/conftest.py`` lives there and the test tree has no ``__init__.py``).
"""

from __future__ import annotations

import string

from hypothesis import strategies as st

from mcpwire.sansio import (
    ErrorObject,
    ErrorResponse,
    JSONObject,
    JSONValue,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
)

__all__ = (
    "INT64_MAX",
    "INT64_MIN",
    "ONE_BYTE_EDITS",
    "TCHAR",
    "WILD_LINE_ENDS",
    "VCHAR",
    "byte_text",
    "chunkings",
    "error_objects",
    "error_responses",
    "field_lines",
    "field_names",
    "field_values",
    "int64",
    "json_objects",
    "json_values",
    "messages",
    "notifications",
    "request_ids",
    "requests",
    "responses",
    "split",
    "texts",
    "edited",
    "wild_field_lines",
    "wild_field_names",
    "wild_field_values",
)

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

#: orjson cannot encode integers outside the signed/unsigned 64-bit range, so
#: generated values stay inside the signed range.
int64 = st.integers(min_value=INT64_MIN, max_value=INT64_MAX)

#: Arbitrary unicode without surrogates (which UTF-8 cannot carry), with the
#: characters that break naive line framing or C strings mixed in on purpose.
_chars = st.characters(exclude_categories=("Cs",))
_special = st.sampled_from(["\u2028", "\u2029", "\x00", "\n", "\r", "\r\n", '"', "\\", "\ufeff"])
texts = st.lists(st.one_of(st.text(_chars, max_size=8), _special), max_size=6).map("".join)

_scalars: st.SearchStrategy[JSONValue] = st.one_of(
    st.none(),
    st.booleans(),
    int64,
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)

json_values: st.SearchStrategy[JSONValue] = st.recursive(
    _scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(texts, children, max_size=4),
    ),
    max_leaves=12,
)

json_objects: st.SearchStrategy[JSONObject] = st.dictionaries(texts, json_values, max_size=5)

#: MCP request ids: a string or an integer (never null, float or bool).
request_ids: st.SearchStrategy[RequestId] = st.one_of(st.text(), int64)

_params = st.one_of(st.none(), json_objects)

requests = st.builds(Request, id=request_ids, method=texts, params=_params)
notifications = st.builds(Notification, method=texts, params=_params)
responses = st.builds(Response, id=request_ids, result=json_objects)
#: ``data=None`` means "absent", so generated data is any JSON value but null.
error_objects = st.builds(
    ErrorObject,
    code=int64,
    message=texts,
    data=st.one_of(st.just(None), json_values.filter(lambda v: v is not None)),
)
error_responses = st.builds(
    ErrorResponse, id=st.one_of(st.none(), request_ids), error=error_objects
)

messages: st.SearchStrategy[Message] = st.one_of(
    requests, notifications, responses, error_responses
)


@st.composite
def chunkings(
    draw: st.DrawFn, values: st.SearchStrategy[bytes] | None = None
) -> tuple[bytes, list[int]]:
    """A bytes value and a sorted list of split points inside it (repeats allowed)."""
    data = draw(values if values is not None else st.binary())
    points = draw(st.lists(st.integers(min_value=0, max_value=len(data)), max_size=20))
    return data, sorted(points)


def split(data: bytes, points: list[int]) -> list[bytes]:
    """Cut ``data`` at ``points`` (sorted); empty chunks are kept on purpose."""
    chunks: list[bytes] = []
    start = 0
    for point in points:
        chunks.append(data[start:point])
        start = point
    chunks.append(data[start:])
    return chunks


# -- HTTP/1.1 header fields ------------------------------------------------------------------

#: The characters of a token (a field name; RFC 9110 section 5.6.2), and visible ASCII.
TCHAR = (string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~").encode()
VCHAR = bytes(range(0x21, 0x7F))


def byte_text(alphabet: bytes, min_size: int, max_size: int) -> st.SearchStrategy[bytes]:
    """Bytes drawn from ``alphabet``, ``min_size`` to ``max_size`` of them."""
    return st.lists(st.sampled_from(alphabet), min_size=min_size, max_size=max_size).map(bytes)


def field_names(typical: list[bytes]) -> st.SearchStrategy[bytes]:
    """Valid field names: tokens, or one of ``typical``."""
    return st.one_of(byte_text(TCHAR, 1, 12), st.sampled_from(typical))


def field_values(typical: list[bytes]) -> st.SearchStrategy[bytes]:
    """Valid field values without the OWS around them (visible ASCII, with
    spaces or a tab inside), or one of ``typical``."""
    return st.one_of(
        st.builds(
            lambda a, gap, b: a + gap + b if b else a,
            byte_text(VCHAR, 1, 10),
            st.sampled_from([b" ", b"\t", b"  "]),
            byte_text(VCHAR, 0, 10),
        ),
        st.sampled_from(typical),
    )


def wild_field_names(
    plain: st.SearchStrategy[bytes], named: list[bytes]
) -> st.SearchStrategy[bytes]:
    """Field names a fast path must judge: ``plain`` ones, the ``named`` ones that
    mean something to it, and malformed ones (empty, a space, obs-text)."""
    return st.one_of(plain, st.sampled_from([*named, b"", b"Bad Name", b"X\x80"]))


def wild_field_values(
    plain: st.SearchStrategy[bytes], meaningful: list[bytes]
) -> st.SearchStrategy[bytes]:
    """Field values a fast path must judge: ``plain`` ones, ``meaningful`` ones
    (lengths, connection options, codings), bytes no field value may hold
    (obs-text, NUL, a bare CR), and any bytes at all."""
    return st.one_of(
        plain,
        st.sampled_from([*meaningful, b"\x80\xff", b"a\x00b", b"a\rb"]),
        st.binary(max_size=8),
    )


def field_lines(draw: st.DrawFn, fields: list[tuple[bytes, bytes]]) -> bytes:
    """``fields`` as header lines, each with OWS of any kind (or none) drawn
    before and after its value."""
    spaced = [(n, draw(st.sampled_from([b"", b" ", b"\t "])) + v) for n, v in fields]
    trailing = [draw(st.sampled_from([b"", b"", b" ", b"\t"])) for _ in spaced]
    return b"".join(b"%s:%s%s\r\n" % (n, v, t) for (n, v), t in zip(spaced, trailing, strict=True))


#: Line ends a fast path must judge: CRLF (twice as likely), a bare LF, and CRLF
#: followed by a space (an obsolete line folding).
WILD_LINE_ENDS = st.sampled_from([b"\r\n", b"\r\n", b"\n", b"\r\n "])


def wild_field_lines(
    names: st.SearchStrategy[bytes], values: st.SearchStrategy[bytes]
) -> st.SearchStrategy[bytes]:
    """Up to eight header lines of ``names`` and ``values``, each with any
    spacing around its colon and any of ``WILD_LINE_ENDS``."""
    colons = st.sampled_from([b":", b": ", b" :", b":\t"])
    lines = st.lists(st.tuples(names, colons, values, WILD_LINE_ENDS), max_size=8)
    return lines.map(lambda fields: b"".join(n + c + v + end for n, c, v, end in fields))


#: One-byte edits of a typical message for ``edited``: how, where (taken modulo
#: the message's length) and which byte (framing bytes, controls, obs-text, text).
ONE_BYTE_EDITS = st.tuples(
    st.sampled_from(["change", "insert", "delete"]),
    st.integers(0, 10**6),
    st.sampled_from(list(b"\x00\r\n \t:,\x7f\x80\xffaA0")),
)


def edited(data: bytes, edit: tuple[str, int, int]) -> bytes:
    """``data`` with one byte changed, inserted or removed (``ONE_BYTE_EDITS``)."""
    how, at, byte = edit
    out = bytearray(data)
    at %= len(out)
    if how == "change":
        out[at] = byte
    elif how == "insert":
        out.insert(at, byte)
    else:
        del out[at]
    return bytes(out)
