"""What an oversized message was, read from its first bytes, sans-IO.

A message over the size limit is discarded unparsed (``_ndjson`` drops its
bytes as they arrive). Dropping it silently would leave its sender waiting:
the request it carried gets no answer, or the request it answered waits for
a response that will never come. The framing keeps the first bytes of such a
line (``LineTooLong.head``), and ``oversized()`` reads from them as much of
the envelope as they show: the top-level ``id`` and whether the message is a
request (``method``) or a response (``result`` / ``error``).

* A request with a readable id gets ``-32600`` with that id (JSON-RPC 2.0 §5:
  the id is echoed when it can be determined), so the peer's call fails at
  once with a precise message instead of timing out.
* A response with a readable id becomes a local ``ErrorResponse`` for that
  id: our own pending call fails at once, saying the answer was too large.
* Anything else (no id in the head, keys in another order) stays what it was:
  ``-32600`` with ``id: null``.

Every serializer we know of writes ``jsonrpc`` and ``id`` first (mcpwire,
the reference SDKs), so the head almost always holds the id. The scan is a
small JSON tokenizer over at most ``_ndjson.HEAD_BYTES`` bytes, tracking depth and
strings, so an ``"id"`` nested inside ``params`` is never mistaken for the
envelope's.
"""

from __future__ import annotations

import orjson

from ._messages import ErrorCode, ErrorObject, ErrorResponse, Invalid

__all__ = ("oversized",)

_SPACE = frozenset(b" \t\r\n")
_SCALAR_END = frozenset(b",}] \t\r\n")


def oversized(head: bytes, limit: int) -> Invalid | ErrorResponse:
    """The incoming item that stands for a discarded line beginning with ``head``."""
    fields = _top_level(head)
    rid = fields.get("id")
    if not (isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))):
        rid = None
    method = fields.get("method")
    if rid is not None and "method" not in fields and ("result" in fields or "error" in fields):
        return ErrorResponse(
            rid,
            ErrorObject(
                ErrorCode.INVALID_REQUEST,
                f"the response to request {rid!r} exceeds the message size limit of "
                f"{limit} bytes and was discarded",
            ),
        )
    what = f"request {method!r}" if isinstance(method, str) else "message"
    return Invalid(
        ErrorObject(
            ErrorCode.INVALID_REQUEST,
            f"{what} exceeds the message size limit of {limit} bytes and was discarded",
        ),
        id=rid if "method" in fields else None,
        method=method if isinstance(method, str) else None,
    )


def _top_level(head: bytes) -> dict[str, object]:
    """The envelope keys the head shows: scalar values for ``id``, ``method`` and
    ``jsonrpc``, ``True`` for any other key whose value starts in the head."""
    found: dict[str, object] = {}
    n = len(head)
    i = _skip(head, 0)
    if i >= n or head[i] != 0x7B:  # "{"
        return found
    i += 1
    while True:
        i = _skip(head, i)
        if i >= n or head[i] != 0x22:  # a key must follow "{" or ","
            return found
        end = _string_end(head, i)
        if end < 0:
            return found
        key = _decode(head[i : end + 1])
        i = _skip(head, end + 1)
        if not isinstance(key, str) or i >= n or head[i] != 0x3A:  # ":"
            return found
        i = _skip(head, i + 1)
        if i >= n:
            return found
        value_end = _value_end(head, i)
        if key in ("id", "method", "jsonrpc"):
            if value_end < 0:
                return found
            found[key] = _decode(head[i:value_end])
        else:
            found[key] = True
            if value_end < 0:
                return found
        i = _skip(head, value_end)
        if i >= n or head[i] != 0x2C:  # ","
            return found
        i += 1


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
