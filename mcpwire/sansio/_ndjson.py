"""Newline-delimited JSON framing (the MCP stdio transport), sans-IO.

Theory of operation
-------------------
``NDJSONReader.feed(data)`` searches each chunk once for line ends and cuts the
complete lines out of it. The pieces of a line that is not complete yet are
kept as they came, in a list, and joined when its end arrives: every byte is
searched once and copied once into its line, however the input was split
(O(n) for any chunking, and a 10 MB line in 64 KiB reads costs one copy).

Per the stdio transport, a message is one line, UTF-8, ended by ``\\n``. We also
accept ``\\r\\n`` (the ``\\r`` is stripped) and skip lines that are empty or
only ASCII whitespace, which peers emit as keep-alives or by accident.

Each line yields one item:

* ``bytes``: a candidate JSON text, to be parsed by the caller;
* ``LineTooLong``: a line exceeded ``max_line`` bytes. The reader drops that
  line's bytes as they arrive (never buffering more than the limit), reports it
  once, and resumes at the next line end. Framing never resynchronises *inside*
  a line, so no fragment of an oversized message is ever parsed as a message.
  The report keeps the line's first bytes and, unless those already name the
  envelope's ``id`` (then it is made at once), its last bytes, and is made at
  the line's end: serializers that write ``id`` after ``params`` or
  ``result`` (the TypeScript SDK does) leave it only there (``_oversized``).
  While such a line is being dropped, ``discarding`` is true and ``discarded``
  counts its bytes so far; ``oversized_lines`` counts the lines caught, so a
  driver can say at once that one is being dropped, and why a call waits;
* ``NonJSONLine`` (only with ``tolerant=True``): a line whose first
  non-blank byte cannot start a JSON-RPC message (``{`` or ``[``). Clients use
  this for servers that print banners or debug text to stdout; the line is kept
  for diagnostics instead of being fed to the parser. A UTF-8 byte order mark
  before a message is dropped in this mode (RFC 8259 section 8.1 lets a
  parser ignore one), so the message after it is not taken for text.

At end of input, ``feed_eof()`` returns a final unterminated line, if any, as
if it had been terminated: peers that exit without a final newline lose no
message.
"""

from __future__ import annotations

from typing import Union

from ._record import Record, setters

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
_BOM = b"\xef\xbb\xbf"

#: How much of an oversized line ``LineTooLong.head`` and ``.tail`` keep.
HEAD_BYTES = 512
TAIL_BYTES = 512


class LineTooLong(Record):
    """A line longer than the limit was discarded.

    ``head`` keeps its first ``HEAD_BYTES`` bytes and ``tail`` its last
    ``TAIL_BYTES`` (empty when the head names the envelope's id), from which
    ``sansio.oversized()`` recovers the envelope's id, so the request it
    carried (or the call it answered) can fail at once instead of waiting.
    """

    limit: int
    head: bytes
    tail: bytes

    def __init__(self, limit: int, head: bytes = b"", tail: bytes = b"") -> None:
        _set_limit(self, limit)
        _set_head(self, head)
        _set_tail(self, tail)

    @property
    def message(self) -> str:
        return f"message line exceeds the limit of {self.limit} bytes and was discarded"


class NonJSONLine(Record):
    """A line that cannot be a JSON-RPC message (tolerant mode only)."""

    line: bytes

    def __init__(self, line: bytes) -> None:
        _set_line(self, line)


_set_limit, _set_head, _set_tail = setters(LineTooLong)
(_set_line,) = setters(NonJSONLine)


NDJSONItem = Union[bytes, LineTooLong, NonJSONLine]


class NDJSONReader:
    """Incremental line splitter with a bounded buffer.

    Args:
        max_line: the longest line accepted, in bytes, without its line end.
        tolerant: report lines that cannot start a JSON-RPC message as
            ``NonJSONLine`` instead of returning them for parsing.
    """

    __slots__ = (
        "_discarded",
        "_discarding",
        "_eof",
        "_head_size",
        "_held",
        "_parts",
        "_report_head",
        "_tail",
        "_tail_size",
        "max_line",
        "oversized_lines",
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
        self._tail_size = min(TAIL_BYTES, max_line)
        # The pieces of the incomplete line, each without a line end, kept as
        # they came: a line arriving in many chunks is copied once, when it is
        # complete (b"".join), however many chunks it took.
        self._parts: list[bytes] = []
        self._held = 0
        self._discarding = False
        self._discarded = 0
        #: Lines caught over ``max_line`` so far (each reported once, as ``LineTooLong``).
        self.oversized_lines = 0
        #: While discarding: the head, when the report waits for the line's end
        #: (the head does not name the id), and the last bytes seen so far.
        self._report_head: bytes | None = None
        self._tail = b""
        self._eof = False

    @property
    def buffered(self) -> int:
        """Bytes held for an incomplete line (never more than ``max_line + 1``)."""
        return self._held

    @property
    def discarding(self) -> bool:
        """Whether a line over ``max_line`` is being dropped, its end not yet read."""
        return self._discarding

    @property
    def discarded(self) -> int:
        """Bytes of the last oversized line dropped (so far, while ``discarding``)."""
        return self._discarded

    def feed(self, data: bytes | bytearray | memoryview) -> list[NDJSONItem]:
        """Add bytes; return the items for every line completed by them."""
        if self._eof:
            raise RuntimeError("feed() after feed_eof()")
        out: list[NDJSONItem] = []
        if not data:
            return out
        chunk = bytes(data)
        start = 0
        if self._parts or self._discarding:
            end = chunk.find(b"\n")
            if end < 0:
                self._hold(chunk, out)
                return out
            if self._discarding:
                self._discarding = False
                self._discarded += end
                if self._report_head is not None:
                    self._keep_tail(chunk[:end])
                    self._report(out)
            else:
                self._parts.append(chunk[:end])
                line = b"".join(self._parts)
                self._parts.clear()
                self._held = 0
                self._emit(line, out)
            start = end + 1
        find = chunk.find
        while True:
            end = find(b"\n", start)
            if end < 0:
                break
            self._emit(chunk[start:end], out)
            start = end + 1
        if start < len(chunk):
            self._hold(chunk[start:] if start else chunk, out)
        return out

    def feed_eof(self) -> list[NDJSONItem]:
        """Signal end of input; returns the final unterminated line, if any."""
        out: list[NDJSONItem] = []
        if not self._eof:
            self._eof = True
            if self._parts and not self._discarding:
                self._emit(b"".join(self._parts), out)
            elif self._report_head is not None:
                self._report(out)  # the end of input ends the discarded line
            self._parts.clear()
            self._held = 0
            self._discarding = False
        return out

    def _hold(self, piece: bytes, out: list[NDJSONItem]) -> None:
        """Keep ``piece`` (no line end in it) as part of the incomplete line."""
        if self._discarding:
            self._discarded += len(piece)
            if self._report_head is not None:
                self._keep_tail(piece)
            return
        self._parts.append(piece)
        self._held += len(piece)
        if self._held > self.max_line + 1:  # +1: room for a trailing '\r'
            head = bytearray()
            for part in self._parts:
                head += part[: self._head_size - len(head)]
                if len(head) >= self._head_size:
                    break
            found = self._head_of(bytes(head))
            if _names_id(found):
                out.append(LineTooLong(self.max_line, found))
            else:
                self._report_head = found
                tail = b""
                for part in reversed(self._parts):  # the last bytes held so far
                    tail = part + tail
                    if len(tail) > self._tail_size:
                        break
                self._tail = b""
                self._keep_tail(tail)
            self._parts.clear()
            self._discarded = self._held
            self.oversized_lines += 1
            self._held = 0
            self._discarding = True

    def _keep_tail(self, piece: bytes) -> None:
        """Keep the last bytes of the discarded line (one more: a '\r' before its end)."""
        keep = self._tail_size + 1
        self._tail = piece[-keep:] if len(piece) >= keep else (self._tail + piece)[-keep:]

    def _report(self, out: list[NDJSONItem]) -> None:
        """Report the discarded line, now that its end (and so its tail) is known."""
        assert self._report_head is not None
        tail = self._tail[:-1] if self._tail.endswith(b"\r") else self._tail
        out.append(LineTooLong(self.max_line, self._report_head, tail[-self._tail_size :]))
        self._report_head = None
        self._tail = b""

    def _head_of(self, head: bytes) -> bytes:
        if self.tolerant:
            # As in ``_emit``: past a byte order mark, the head can still name the id.
            stripped = head.lstrip(_WHITESPACE)
            if stripped.startswith(_BOM):
                head = stripped[len(_BOM) :]
        return head

    def _emit(self, line: bytes, out: list[NDJSONItem]) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > self.max_line:
            self._discarded = len(line)
            self.oversized_lines += 1
            head = self._head_of(line[: self._head_size])
            tail = b"" if _names_id(head) else line[-self._tail_size :]
            out.append(LineTooLong(self.max_line, head, tail))
            return
        stripped = line.lstrip(_WHITESPACE)
        if not stripped:
            return
        if self.tolerant and stripped[0] not in b"{[":
            if stripped.startswith(_BOM):
                # RFC 8259 section 8.1: a parser MAY ignore a byte order mark, and
                # some runtimes (.NET consoles, PowerShell) put one before their
                # first output; taken for text, the message after it would be
                # lost and its caller left waiting for the request timeout.
                body = stripped[len(_BOM) :].lstrip(_WHITESPACE)
                if body[:1] in (b"{", b"["):
                    out.append(body)
                    return
            out.append(NonJSONLine(line))
            return
        out.append(line)


def _names_id(head: bytes) -> bool:
    """Whether ``head`` shows the envelope's ``id`` (the report need not wait)."""
    # Loaded on first use: oversized lines are rare (a smaller idle process).
    from ._oversized import names_id

    return names_id(head)


def frame(payload: bytes) -> bytes:
    """One ndjson frame: ``payload`` plus the line end.

    Raises:
        ValueError: ``payload`` contains a raw newline (it would split the frame).
    """
    if b"\n" in payload:
        raise ValueError("a stdio message must not contain a raw newline")
    return payload + b"\n"
