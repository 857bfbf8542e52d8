"""Bytes <-> JSON values: the only module that touches orjson.

Two limits guard every decode, because every byte a peer sends is untrusted:

* ``max_size`` (default 16 MiB): the largest encoded message accepted. The same
  figure the TypeScript SDK adopted for ``maxMessageBytes`` and several hubs use
  for stdio; large enough for big tool results and base64 blobs, small enough
  that a hostile peer cannot make one message cost gigabytes.
* ``max_depth`` (default 64): the deepest nesting of arrays/objects accepted.
  Real MCP traffic (JSON Schemas included) nests well under 20 levels; orjson
  itself stops at 1024, and walking a 1000-deep value is a cheap way to burn
  stack in every consumer downstream, so we stop far earlier.

Integers must fit in 64 bits (signed or unsigned, as orjson reads them). orjson
would silently turn a longer integer literal into a float, changing the value
(or an id's type), so such input is refused with -32700 instead. Detecting it
costs one C-speed scan for a run of 19 or more digits; only when one is found
(a long integer, or digits inside a string) is the text re-read with the
standard library to tell the two apart.

Decoding also insists on UTF-8 (the MCP transports require it) and on a JSON
text that is a single value; errors are ``CodecError`` subclasses that carry the
JSON-RPC code for the reply (-32700 for undecodable text, -32600 for limits).
"""

from __future__ import annotations

import re
from collections.abc import Collection

import orjson

from .._errors import RemoteProtocolError
from ._json import JSONValue

__all__ = (
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "CodecError",
    "Limits",
    "MessageTooDeep",
    "MessageTooLarge",
    "NotJSON",
    "dumps",
    "dumps_line",
    "loads",
)

DEFAULT_MAX_MESSAGE_SIZE = 16 * 1024 * 1024
DEFAULT_MAX_DEPTH = 64
#: Messages in one JSON-RPC batch (only 2025-03-26 has batches): its one reply
#: array, and the requests it starts, are held until the last is answered.
DEFAULT_MAX_BATCH = 1000

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


class CodecError(RemoteProtocolError):
    """The peer's bytes could not be accepted as one JSON value."""


class NotJSON(CodecError):
    """Not UTF-8 JSON (JSON-RPC -32700, Parse error)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, error_code=PARSE_ERROR)


class IntegerTooWide(NotJSON):
    """An integer past 64 bits: JSON, but no peer can be trusted to read it the same."""

    def __init__(self) -> None:
        super().__init__("invalid JSON: an integer does not fit in 64 bits")


class MessageTooLarge(CodecError):
    """The encoded message is larger than the configured limit."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"message of {size} bytes exceeds the limit of {limit} bytes",
            error_code=INVALID_REQUEST,
        )
        self.size = size
        self.limit = limit


class MessageTooDeep(CodecError):
    """The message nests arrays/objects deeper than the configured limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(
            f"message nests deeper than the limit of {limit} levels",
            error_code=INVALID_REQUEST,
        )
        self.limit = limit


class Limits:
    """Decode limits; one immutable instance is shared by a connection."""

    __slots__ = ("max_batch", "max_depth", "max_size")

    def __init__(
        self,
        *,
        max_size: int = DEFAULT_MAX_MESSAGE_SIZE,
        max_depth: int = DEFAULT_MAX_DEPTH,
        max_batch: int = DEFAULT_MAX_BATCH,
    ) -> None:
        if max_size < 2 or max_depth < 1 or max_batch < 1:
            raise ValueError("max_size must be >= 2, max_depth and max_batch >= 1")
        self.max_size = max_size
        self.max_depth = max_depth
        self.max_batch = max_batch

    def __repr__(self) -> str:
        return (
            f"Limits(max_size={self.max_size}, max_depth={self.max_depth}, "
            f"max_batch={self.max_batch})"
        )


DEFAULT_LIMITS = Limits()


# An integer literal outside 64 bits has at least 19 digits in a row. Mapping
# every digit to "0" and searching for 19 zeros finds such a run at C speed
# (about six times faster than a regular expression, which matters on every
# message and on multi-megabyte ones).
_LONG_RUN = 19
_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789", b"0" * 10)
_ZERO_RUN = b"0" * _LONG_RUN
# The same map that also makes every "[" a "{": one pass over a frame then
# serves both of its scans, the digit runs and the count of openers.
_SCAN = bytes.maketrans(b"0123456789[", b"0" * 10 + b"{")
_LONG_DIGITS_S = re.compile(rf"[0-9]{{{_LONG_RUN}}}")


def _has_long_digit_run(data: bytes | bytearray | memoryview | str) -> bool:
    if isinstance(data, str):
        return _LONG_DIGITS_S.search(data) is not None
    if isinstance(data, memoryview):
        data = bytes(data)
    return data.translate(_DIGITS_AS_ZERO).find(_ZERO_RUN) >= 0


_INT_MIN = -(2**63)
_INT_MAX = 2**64 - 1


def _has_wide_int(data: bytes | bytearray | memoryview | str) -> bool:
    import json

    try:
        exact = json.loads(bytes(data) if isinstance(data, memoryview) else data)
    except ValueError:
        return False
    stack = [exact]
    while stack:
        item = stack.pop()
        if type(item) is int:
            if not _INT_MIN <= item <= _INT_MAX:
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _openers(data: bytes | bytearray | memoryview | str) -> int:
    if isinstance(data, str):
        return data.count("{") + data.count("[")
    if isinstance(data, memoryview):
        data = bytes(data)
    return data.count(b"{") + data.count(b"[")


def _depth_exceeds(value: JSONValue, limit: int) -> bool:
    # Iterative walk over containers only; scalars cost nothing. A message with
    # a 10 MB string is one step, a typical request a handful.
    stack: list[tuple[JSONValue, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth > limit:
                return True
            for child in item.values():
                if isinstance(child, (dict, list)):
                    stack.append((child, depth + 1))
        elif isinstance(item, list):
            if depth > limit:
                return True
            for child in item:
                if isinstance(child, (dict, list)):
                    stack.append((child, depth + 1))
    return False


# Past this size a message is surveyed by walking its parsed value (cost per
# item) rather than by scanning its text (cost per byte): a 20 MB message of a
# few long strings is a handful of items. A value with more items than the
# budget falls back to the text scans, which are then the cheaper of the two.
_WALK_FROM = 1 << 16
_WALK_BUDGET = 20_000
# orjson decodes an integer literal outside [-2**63, 2**64) as a float, so a
# parsed value can only hide one behind a float this large in magnitude.
_WIDE = float(2**63)


def _survey(value: JSONValue, limit: int) -> tuple[bool, bool] | None:
    """``(nested deeper than limit, may hide a wide integer)``, or ``None`` when
    ``value`` holds more than ``_WALK_BUDGET`` items."""
    budget = _WALK_BUDGET
    wide = False
    stack: list[tuple[JSONValue, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children: Collection[JSONValue]
        if type(item) is dict:
            children = item.values()
        elif type(item) is list:
            children = item
        else:
            continue
        if depth > limit:
            return True, wide
        budget -= len(children)
        if budget < 0:
            return None
        for child in children:
            kind = type(child)
            if kind is dict or kind is list:
                stack.append((child, depth + 1))
            elif kind is float and not -_WIDE < child < _WIDE:  # type: ignore[operator]
                wide = True
    return False, wide


def loads(data: bytes | bytearray | memoryview | str, limits: Limits = DEFAULT_LIMITS) -> JSONValue:
    """Decode one JSON value, enforcing ``limits``.

    Raises:
        MessageTooLarge: more than ``limits.max_size`` bytes.
        NotJSON: not valid UTF-8 JSON.
        MessageTooDeep: nested deeper than ``limits.max_depth``.
    """
    size = len(data)
    if isinstance(data, str) and size * 4 > limits.max_size:
        # The limit is in UTF-8 bytes; count them only when it could matter.
        size = len(data.encode("utf-8", "surrogatepass"))
    if size > limits.max_size:
        raise MessageTooLarge(size, limits.max_size)
    try:
        value: JSONValue = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if str(exc).startswith("depth limit exceeded") and limits.max_depth < 1024:
            # orjson stops past 1,024 levels: nested far deeper than ours, whatever
            # follows (a depth error with its -32600, as for 65 levels).
            raise MessageTooDeep(limits.max_depth) from None
        raise NotJSON(f"invalid JSON: {exc}") from None
    if size > _WALK_FROM and isinstance(value, (dict, list)):
        survey = _survey(value, limits.max_depth)
        if survey is not None:
            deep, wide = survey
            if deep:
                raise MessageTooDeep(limits.max_depth)
            if wide and _has_wide_int(data):
                raise IntegerTooWide
            return value
    if type(data) is bytes:  # the usual frame: the two scans below, inline
        scanned = data.translate(_SCAN)  # digits as "0", "[" as "{"
        # Nesting needs an opening bracket per level: count them (C speed) first.
        if (
            scanned.count(b"{") > limits.max_depth
            and isinstance(value, (dict, list))
            and _depth_exceeds(value, limits.max_depth)
        ):
            raise MessageTooDeep(limits.max_depth)
        if scanned.find(_ZERO_RUN) >= 0 and _has_wide_int(data):
            raise IntegerTooWide
        return value
    if (
        isinstance(value, (dict, list))
        and _openers(data) > limits.max_depth
        and _depth_exceeds(value, limits.max_depth)
    ):
        raise MessageTooDeep(limits.max_depth)
    if _has_long_digit_run(data) and _has_wide_int(data):
        raise IntegerTooWide
    return value


def dumps(value: object) -> bytes:
    """Encode compactly as UTF-8 JSON. Never contains a raw newline byte.

    orjson escapes every control character inside strings, so the output can be
    framed by newlines as the stdio transport requires.
    """
    return orjson.dumps(value)


def dumps_line(value: object) -> bytes:
    """``dumps(value)`` followed by ``\n``, written in one buffer (no copy to append it)."""
    return orjson.dumps(value, option=orjson.OPT_APPEND_NEWLINE)
