"""Newline-delimited JSON framing (the MCP stdio transport), sans-IO.

Theory of operation
-------------------
``NDJSONReader.feed(data)`` appends to one ``bytearray`` and cuts complete lines
out of it, remembering how far it already searched so that a line arriving in a
thousand pieces is scanned once (amortised O(n) for any chunking). Consumed
bytes are dropped from the front in one slice per ``feed`` call.

Per the stdio transport, a message is one line, UTF-8, ended by ``\\n``. We also
accept ``\\r\\n`` (the ``\\r`` is stripped) and skip lines that are empty or
only ASCII whitespace, which peers emit as keep-alives or by accident.

Each line yields one item:

* ``bytes``: a candidate JSON text, to be parsed by the caller;
* ``LineTooLong``: a line exceeded ``max_line`` bytes. The reader drops that
  line's bytes as they arrive (never buffering more than the limit), reports it
  once, and resumes at the next line end. Framing never resynchronises *inside*
  a line, so no fragment of an oversized message is ever parsed as a message;
* ``NonJSONLine`` (only with ``tolerant=True``): a line whose first
  non-blank byte cannot start a JSON-RPC message (``{`` or ``[``). Clients use
  this for servers that print banners or debug text to stdout; the line is kept
  for diagnostics instead of being fed to the parser.

At end of input, ``feed_eof()`` returns a final unterminated line, if any, as
if it had been terminated: peers that exit without a final newline lose no
message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

__all__ = (
    "DEFAULT_MAX_LINE",
    "LineTooLong",
    "NDJSONItem",
    "NDJSONReader",
    "NonJSONLine",
    "frame",
)

#: 16 MiB, the same figure as the codec's message-size limit (see ``_codec``):
#: a line can never hold a message the codec would accept that this rejects.
DEFAULT_MAX_LINE = 16 * 1024 * 1024

_WHITESPACE = b" \t\r\n\f\v"

#: How much of an oversized line ``LineTooLong.head`` keeps.
HEAD_BYTES = 512


@dataclass(frozen=True, slots=True)
class LineTooLong:
    """A line longer than the limit was discarded.

    ``head`` keeps its first ``HEAD_BYTES`` bytes, from which
    ``sansio.oversized()`` recovers the envelope's id, so the request it
    carried (or the call it answered) can fail at once instead of waiting.
    """

    limit: int
    head: bytes = b""

    @property
    def message(self) -> str:
        return f"message line exceeds the limit of {self.limit} bytes and was discarded"


@dataclass(frozen=True, slots=True)
class NonJSONLine:
    """A line that cannot be a JSON-RPC message (tolerant mode only)."""

    line: bytes


NDJSONItem = Union[bytes, LineTooLong, NonJSONLine]


class NDJSONReader:
    """Incremental line splitter with a bounded buffer.

    Args:
        max_line: the longest line accepted, in bytes, without its line end.
        tolerant: report lines that cannot start a JSON-RPC message as
            ``NonJSONLine`` instead of returning them for parsing.
    """

    __slots__ = (
        "_buf",
        "_discarding",
        "_eof",
        "_head_size",
        "_scan_from",
        "max_line",
        "tolerant",
    )

    def __init__(self, *, max_line: int = DEFAULT_MAX_LINE, tolerant: bool = False) -> None:
        if max_line < 1:
            raise ValueError("max_line must be positive")
        self.max_line = max_line
        self.tolerant = tolerant
        # Every oversized line has more than max_line bytes when it is caught,
        # however it was split, so its head is the same for any chunking.
        self._head_size = min(HEAD_BYTES, max_line)
        self._buf = bytearray()
        self._scan_from = 0
        self._discarding = False
        self._eof = False

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete line (never more than ``max_line + 1``)."""
        return len(self._buf)

    def feed(self, data: bytes | bytearray | memoryview) -> list[NDJSONItem]:
        """Add bytes; return the items for every line completed by them."""
        if self._eof:
            raise RuntimeError("feed() after feed_eof()")
        out: list[NDJSONItem] = []
        if not data:
            return out
        buf = self._buf
        if not buf and not self._discarding:
            # Fast path: nothing pending, split the chunk directly.
            mv = bytes(data)
            start = 0
            find = mv.find
            while True:
                end = find(b"\n", start)
                if end < 0:
                    break
                self._emit(mv[start:end], out)
                start = end + 1
            rest = mv[start:]
            if rest:
                self._hold(rest, out)
            return out
        buf += data
        start = 0
        while True:
            end = buf.find(b"\n", self._scan_from)
            if end < 0:
                break
            if self._discarding:
                self._discarding = False
            else:
                self._emit(bytes(buf[start:end]), out)
            start = end + 1
            self._scan_from = start
        if start:
            del buf[:start]
        self._scan_from = len(buf)
        if self._discarding:
            buf.clear()
            self._scan_from = 0
        elif len(buf) > self.max_line + 1:  # +1: room for a trailing '\r'
            self._start_discarding(out, buf)
        return out

    def feed_eof(self) -> list[NDJSONItem]:
        """Signal end of input; returns the final unterminated line, if any."""
        out: list[NDJSONItem] = []
        if not self._eof:
            self._eof = True
            if self._buf and not self._discarding:
                self._emit(bytes(self._buf), out)
            self._buf.clear()
            self._scan_from = 0
            self._discarding = False
        return out

    def _hold(self, rest: bytes, out: list[NDJSONItem]) -> None:
        if len(rest) > self.max_line + 1:
            self._start_discarding(out, rest)
        else:
            self._buf += rest
            self._scan_from = len(self._buf)

    def _start_discarding(self, out: list[NDJSONItem], line: bytes | bytearray) -> None:
        out.append(LineTooLong(self.max_line, bytes(line[: self._head_size])))
        self._buf.clear()
        self._scan_from = 0
        self._discarding = True

    def _emit(self, line: bytes, out: list[NDJSONItem]) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > self.max_line:
            out.append(LineTooLong(self.max_line, line[: self._head_size]))
            return
        stripped = line.lstrip(_WHITESPACE)
        if not stripped:
            return
        if self.tolerant and stripped[0] not in b"{[":
            out.append(NonJSONLine(line))
            return
        out.append(line)


def frame(payload: bytes) -> bytes:
    """One ndjson frame: ``payload`` plus the line end.

    Raises:
        ValueError: ``payload`` contains a raw newline (it would split the frame).
    """
    if b"\n" in payload:
        raise ValueError("a stdio message must not contain a raw newline")
    return payload + b"\n"
