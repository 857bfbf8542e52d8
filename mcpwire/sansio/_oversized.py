"""What an oversized message was, read from its first and last bytes, sans-IO.

A message over the size limit is discarded unparsed (``_ndjson`` drops its
bytes as they arrive). Dropping it silently would leave its sender waiting:
the request it carried gets no answer, or the request it answered waits for
a response that will never come. The framing keeps the first bytes of such a
line (``LineTooLong.head``) and, when those do not show the ``id``, its last
bytes (``.tail``); ``oversized()`` reads from them as much of the envelope as
they show: the top-level ``id`` and whether the message is a request
(``method``), a notification, or a response (``result`` / ``error``).

* A request with a readable id gets ``-32600`` with that id (JSON-RPC 2.0 §5:
  the id is echoed when it can be determined), so the peer's call fails at
  once with a precise message instead of timing out.
* A response with a readable id becomes a local ``ErrorResponse`` for that
  id, its error a ``TransportErrorObject`` (made up here, not the peer's): our
  own pending call fails at once, saying the answer was too large.
* A notification (a method, and no id on either side of its ``params``) is
  counted and dropped: JSON-RPC never answers one.
* Anything else (no id found, junk) gets ``-32600`` with ``id: null``.

mcpwire and the Python SDK write ``jsonrpc`` and ``id`` first, so the head
holds the id; the TypeScript SDK writes a request as ``method``, ``params``,
``jsonrpc``, ``id`` and a result as ``result``, ``jsonrpc``, ``id``, so there
it is in the tail. The head scan is a small JSON tokenizer over at most
``_ndjson.HEAD_BYTES`` bytes, tracking depth and strings, so an ``"id"``
nested inside ``params`` is never mistaken for the envelope's. The tail scan
walks left from the closing brace over scalar members only and stops at the
first structured value: every member it reads is therefore at the top level.
"""

from __future__ import annotations

import orjson

from ._messages import ErrorCode, ErrorObject, ErrorResponse, Invalid, TransportErrorObject

__all__ = ("names_id", "oversized", "unreadable")

_SPACE = frozenset(b" \t\r\n")
_SCALAR_END = frozenset(b",}] \t\r\n")
#: Bytes a scalar that is not a string (number, true, false, null) is made of.
_SCALAR_BYTES = frozenset(b"0123456789+-.eEtrufalsn")


def names_id(head: bytes) -> bool:
    """Whether the first bytes of a message show its top-level ``id``."""
    return "id" in _top_level(head)[0]


def oversized(head: bytes, limit: int, tail: bytes = b"") -> Invalid | ErrorResponse:
    """The incoming item that stands for a line over the size ``limit``, discarded,
    beginning with ``head`` and ending with ``tail``."""
    return unreadable(
        head, tail, f"exceeds the message size limit of {limit} bytes", ErrorCode.INVALID_REQUEST
    )


def unreadable(head: bytes, tail: bytes, problem: str, code: int) -> Invalid | ErrorResponse:
    """The incoming item for a message that cannot be taken (``problem`` says why),
    from what its first and last bytes show; ``code`` answers a request."""
    fields, open_key = _top_level(head)
    closed = False
    if "id" not in fields and tail:
        last, closed = _tail_members(tail)
        for key, value in last.items():
            fields.setdefault(key, value)
    method = fields.get("method")
    if (
        "id" not in fields
        and isinstance(method, str)
        and ((open_key == "params" and closed) or method.startswith("notifications/"))
    ):
        # Every member but ``params`` was read, and none is an id; or no id shows and
        # the method is a notification's (MCP names no request ``notifications/...``,
        # and a reply to a notification breaks peers): a notification, unanswered.
        return Invalid(
            ErrorObject(
                code,
                f"notification {fields['method']!r} {problem} and was discarded",
            ),
            reply=False,
            method=fields["method"],  # type: ignore[arg-type]
        )
    rid = fields.get("id")
    if not (isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))):
        rid = None
    if rid is not None and "method" not in fields and ("result" in fields or "error" in fields):
        return ErrorResponse(
            rid,
            TransportErrorObject(
                code,
                f"the response to request {rid!r} {problem} and was discarded",
            ),
        )
    what = f"request {method!r}" if isinstance(method, str) else "message"
    return Invalid(
        ErrorObject(
            code,
            f"{what} {problem} and was discarded",
        ),
        id=rid if "method" in fields else None,
        method=method if isinstance(method, str) else None,
    )


def _top_level(head: bytes) -> tuple[dict[str, object], str | None]:
    """The envelope keys the head shows: scalar values for ``id``, ``method`` and
    ``jsonrpc``, ``True`` for any other key whose value starts in the head; and
    the key whose structured value runs past the head, if that is where it ends."""
    found: dict[str, object] = {}
    n = len(head)
    i = _skip(head, 0)
    if i >= n or head[i] != 0x7B:  # "{"
        return found, None
    i += 1
    while True:
        i = _skip(head, i)
        if i >= n or head[i] != 0x22:  # a key must follow "{" or ","
            return found, None
        end = _string_end(head, i)
        if end < 0:
            return found, None
        key = _decode(head[i : end + 1])
        i = _skip(head, end + 1)
        if not isinstance(key, str) or i >= n or head[i] != 0x3A:  # ":"
            return found, None
        i = _skip(head, i + 1)
        if i >= n:
            return found, None
        value_end = _value_end(head, i)
        if key in ("id", "method", "jsonrpc"):
            if value_end < 0:
                return found, None
            found[key] = _decode(head[i:value_end])
        else:
            found[key] = True
            if value_end < 0:
                return found, key if head[i] in b"{[" else None
        i = _skip(head, value_end)
        if i >= n or head[i] != 0x2C:  # ","
            return found, None
        i += 1


def _tail_members(tail: bytes) -> tuple[dict[str, object], bool]:
    """The scalar members a line's last bytes show, read right to left from the
    closing brace; and whether the scan stopped at a structured value (or the
    opening brace), so that no member after that value was missed.

    Only scalars are crossed, so every member read is at the top level however
    deeply the rest nests. The last of two duplicate keys wins, as in parsing.
    """
    found: dict[str, object] = {}
    i = _rskip(tail, len(tail) - 1)
    if i < 0 or tail[i] != 0x7D:  # "}"
        return found, False
    i = _rskip(tail, i - 1)
    while i >= 0:
        if tail[i] in b"}]{":
            return found, True  # a structured value ends here (or the object begins)
        start = _rstring_start(tail, i) if tail[i] == 0x22 else _rscalar_start(tail, i)
        if start < 0:
            return found, False
        value = _decode(tail[start : i + 1])
        i = _rskip(tail, start - 1)
        if i < 0 or tail[i] != 0x3A:  # ":"
            return found, False
        i = _rskip(tail, i - 1)
        start = _rstring_start(tail, i) if i >= 0 and tail[i] == 0x22 else -1
        key = _decode(tail[start : i + 1]) if start >= 0 else None
        if not isinstance(key, str):
            return found, False
        found.setdefault(key, value)
        i = _rskip(tail, start - 1)
        if i >= 0 and tail[i] == 0x7B:  # "{": the whole object was in the tail
            return found, True
        if i < 0 or tail[i] != 0x2C:  # ","
            return found, False
        i = _rskip(tail, i - 1)
    return found, False


def _rskip(tail: bytes, i: int) -> int:
    while i >= 0 and tail[i] in _SPACE:
        i -= 1
    return i


def _rstring_start(tail: bytes, i: int) -> int:
    """Index of the quote opening the string closed at ``i``; -1 if not in the tail.

    A quote belongs to the string's text when an odd number of backslashes
    precede it; when the run of backslashes reaches the tail's first byte,
    more may precede it unseen, so the answer is unknown (-1).
    """
    j = i - 1
    while j >= 0:
        if tail[j] == 0x22:
            b = j - 1
            while b >= 0 and tail[b] == 0x5C:
                b -= 1
            if b < 0:
                return -1
            if (j - 1 - b) % 2 == 0:
                return j
        j -= 1
    return -1


def _rscalar_start(tail: bytes, i: int) -> int:
    """Index where the number or literal ending at ``i`` starts; -1 if unknown."""
    j = i
    while j >= 0 and tail[j] in _SCALAR_BYTES:
        j -= 1
    if j < 0 or j == i:
        return -1  # it may begin before the tail, or there is no scalar here
    return j + 1


def _skip(head: bytes, i: int) -> int:
    n = len(head)
    while i < n and head[i] in _SPACE:
        i += 1
    return i


def _string_end(head: bytes, i: int) -> int:
    """Index of the quote closing the string opening at ``i``; -1 if beyond the head."""
    j = i + 1
    n = len(head)
    while j < n:
        c = head[j]
        if c == 0x5C:  # backslash: skip the escaped byte
            j += 2
            continue
        if c == 0x22:
            return j
        j += 1
    return -1


def _value_end(head: bytes, i: int) -> int:
    """Index just past the JSON value starting at ``i``; -1 if it runs beyond the head."""
    n = len(head)
    c = head[i]
    if c == 0x22:
        end = _string_end(head, i)
        return -1 if end < 0 else end + 1
    if c in b"{[":
        depth = 0
        j = i
        while j < n:
            c = head[j]
            if c == 0x22:
                end = _string_end(head, j)
                if end < 0:
                    return -1
                j = end + 1
                continue
            if c in b"{[":
                depth += 1
            elif c in b"}]":
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return -1
    j = i
    while j < n and head[j] not in _SCALAR_END:
        j += 1
    return j if j < n else -1


def _decode(token: bytes) -> object:
    try:
        return orjson.loads(token)
    except orjson.JSONDecodeError:
        return None
