"""Server-Sent Events: a sans-IO decoder and encoder for ``text/event-stream``.

Theory of operation
===================

The decoder is a direct transcription of the WHATWG HTML Standard, section 9.2.6
"Interpreting an event stream" (with the grammar of 9.2.5 "Parsing an event
stream"). It is fed bytes and returns the events those bytes completed; it never
blocks, reads or writes, so any transport (sync or async) can drive it.

Bytes to text
    "Streams must be decoded using the UTF-8 decode algorithm": invalid sequences
    become U+FFFD. An incremental UTF-8 decoder holds back a multi-byte character
    split across chunks, so chunk boundaries never change the text. "One leading
    U+FEFF BYTE ORDER MARK character must be ignored if any are present": only the
    first character of the stream is checked, once; a U+FEFF anywhere else is data.

Text to lines
    "Lines must be separated by either a U+000D CARRIAGE RETURN U+000A LINE FEED
    (CRLF) character pair, a single U+000A LINE FEED (LF) character, or a single
    U+000D CARRIAGE RETURN (CR) character." Those three and nothing else: U+2028,
    U+0085 and friends are ordinary characters (legal, unescaped, inside JSON
    strings), which is why ``str.splitlines`` must not be used. A CR is acted on as
    soon as it arrives (a line ended by CR is complete even if the stream ends
    there); a flag remembers it so that an LF opening the next chunk is swallowed
    as the second half of a CRLF pair.

Lines to fields ("process the field" and the dispatch steps)
    An empty line dispatches; a line starting with ``:`` is a comment; otherwise
    the field name runs to the first ``:`` and the value follows it, minus one
    leading space if present (no colon: the whole line is the name, the value is
    empty). ``data`` appends the value and an LF to the data buffer; ``event`` sets
    the event type buffer; ``id`` sets the last event ID buffer unless the value
    contains NUL; ``retry`` sets the reconnection time if the value is non-empty
    ASCII digits; any other field is ignored. On dispatch the last event ID buffer
    is committed as the stream's last event ID (even when nothing fires); an empty
    data buffer fires nothing; otherwise one trailing LF is removed and an event
    fires with type "message" unless the event type buffer says otherwise. "Once
    the end of the file is reached, any pending data must be discarded": an event
    without its closing blank line, and a final line without its line end, are
    dropped by ``feed_eof``.

Cost and memory
    Each chunk is split into lines by one ``str.split`` on LF (after CRLF and CR
    are rewritten as LF, in the rare chunk that holds a CR), so the work is linear
    in the input however it is chunked. The unfinished tail of a line is kept as a
    list of pieces and joined once when its line end arrives, so a 10 MB line fed
    in 4 KiB chunks is copied a constant number of times rather than once per
    chunk. Every buffer that grows with peer input is bounded by
    ``max_event_size``: see ``SSEDecoder``.

The encoder writes the same grammar back: ``field: value`` lines ending in LF,
fields in the order id, event, retry, data, and a blank line closing each block.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass

from .._errors import RemoteProtocolError

__all__ = (
    "DEFAULT_MAX_EVENT_SIZE",
    "SSEDecoder",
    "SSEEvent",
    "SSEEventTooLarge",
    "encode_comment",
    "encode_event",
    "encode_priming",
    "encode_retry",
)

# 16 MiB, the same figure as the JSON codec's default message limit: an MCP
# message travels in one SSE event, so an event as large as the largest message
# we would accept must fit, and a peer that streams a line or event without end
# is stopped long before it can cost gigabytes.
DEFAULT_MAX_EVENT_SIZE = 16 * 1024 * 1024

# JSON-RPC "Invalid Request", the code the codec also uses for size limits.
_INVALID_REQUEST = -32600

# ``int()`` of a longer digit string fails on interpreters that limit int/str
# conversion (CPython's default limit is 4300 digits); we apply the same bound
# everywhere so that behaviour does not depend on the interpreter. No meaningful
# reconnection time has anywhere near this many digits.
_MAX_RETRY_DIGITS = 4300


class SSEEventTooLarge(RemoteProtocolError):
    """An SSE event (or a single line of the stream) is larger than the limit."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(
            f"SSE event exceeds the limit of {limit} bytes (reached {size} bytes)",
            error_code=_INVALID_REQUEST,
        )
        self.size = size
        self.limit = limit


@dataclass(frozen=True, slots=True)
class SSEEvent:
    """One dispatched event.

    Attributes:
        data: the data buffer, the ``data`` lines joined with LF.
        event: the event type; "message" when the block set none (or set "").
        id: the stream's last event ID when the event fired. Per the spec it
            persists from earlier blocks until an ``id`` field changes it, so it is
            "" only if no id was ever set or an ``id`` field reset it.
        retry: the reconnection time (ms) set by a valid ``retry`` field in this
            event's own block, else None. The decoder's ``retry`` property keeps
            the latest value across blocks.
    """

    data: str
    event: str = "message"
    id: str = ""
    retry: int | None = None


def _utf8_len(text: str) -> int:
    # Sizes are counted in UTF-8 bytes so the limit reads like every other byte
    # limit in mcpwire. ``isascii`` is O(1) on CPython, so the common case is free.
    return len(text) if text.isascii() else len(text.encode("utf-8"))


class SSEDecoder:
    """Incremental ``text/event-stream`` decoder: bytes in, ``SSEEvent`` list out.

    One decoder interprets one stream (one HTTP response body). Call ``feed`` with
    each chunk as it arrives and ``feed_eof`` when the body ends; to reconnect,
    send ``last_event_id`` as ``Last-Event-ID``, wait ``retry`` ms if set, and use
    a fresh decoder for the new response.

    Limit: the data buffer of the event being assembled plus the line currently
    being received (complete or not, comments included) may not exceed
    ``max_event_size`` bytes of UTF-8. The line's field name counts, so a single
    ``data: `` line carries at most ``max_event_size - 6`` bytes of payload. A
    stream of many events, each within the limit, never trips it. When the limit
    is exceeded the decoder is broken for good. The ``feed`` that notices it
    still returns the events its chunk completed before the oversized one (so an
    answer that came first is delivered however the stream was chunked) or, when
    there are none, raises ``SSEEventTooLarge``; every later ``feed``,
    ``feed_eof`` or ``check`` raises it, with the same size and limit. Whether
    the limit trips does not depend on how the stream is chunked, only how early
    it is noticed does.
    """

    __slots__ = (
        "_after_cr",
        "_at_start",
        "_block_retry",
        "_closed",
        "_data",
        "_data_size",
        "_decoder",
        "_error",
        "_event_type",
        "_id_buffer",
        "_last_event_id",
        "_max",
        "_pending",
        "_pending_size",
        "_retry",
    )

    def __init__(self, *, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        if max_event_size < 1:
            raise ValueError("max_event_size must be >= 1")
        self._max = max_event_size
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._at_start = True  # no character decoded yet: a BOM may still come
        self._after_cr = False  # the last line end seen was a CR at a chunk's end
        self._pending: list[str] = []  # pieces of the line not yet ended
        self._pending_size = 0
        self._data: list[str] = []  # data buffer, one item per ``data`` line
        self._data_size = 0  # UTF-8 size of the data buffer, LFs included
        self._event_type = ""
        self._id_buffer = ""  # the spec's "last event ID buffer"
        self._last_event_id = ""  # committed from the buffer at each dispatch
        self._retry: int | None = None
        self._block_retry: int | None = None  # retry set since the last blank line
        self._error: SSEEventTooLarge | None = None
        self._closed = False

    @property
    def last_event_id(self) -> str:
        """The stream's last event ID: what a reconnection sends as ``Last-Event-ID``.

        This is the spec's "last event ID string", which dispatch (a blank line)
        sets from the last event ID buffer. An ``id`` field in a block that never
        got its closing blank line therefore does not count: that event was not
        received, so resuming after it would lose it.
        """
        return self._last_event_id

    @property
    def retry(self) -> int | None:
        """The latest valid ``retry`` value (ms) seen on the stream, or None.

        Per the spec it takes effect as soon as its line is complete, whether or
        not the block it sits in is ever dispatched.
        """
        return self._retry

    def feed(self, data: bytes | bytearray | memoryview) -> list[SSEEvent]:
        """Consume the next chunk of the body; return the events it completed.

        Raises:
            SSEEventTooLarge: the limit was exceeded by an earlier call, or now
                with no event completed before it in this chunk.
            RuntimeError: called after ``feed_eof``.
        """
        if self._error is not None:
            raise SSEEventTooLarge(self._error.size, self._error.limit)
        if self._closed:
            raise RuntimeError("SSEDecoder.feed() called after feed_eof()")
        text = self._decoder.decode(data)
        if not text:
            return []
        if self._at_start:
            self._at_start = False
            if text[0] == "\ufeff":
                text = text[1:]
                if not text:
                    return []
        return self._feed_text(text)

    def check(self) -> None:
        """Raise the ``SSEEventTooLarge`` a ``feed`` noticed after the events it
        returned; nothing if the limit was not exceeded.

        A reader calls it before it waits for more of the body: the oversized
        event is then reported at once, not when (or if) the next chunk comes.
        """
        if self._error is not None:
            raise SSEEventTooLarge(self._error.size, self._error.limit)

    def feed_eof(self) -> list[SSEEvent]:
        """Mark the end of the body. Always returns ``[]``.

        Per the spec, pending data is discarded at end of file: an event whose
        closing blank line never came is not dispatched, and a final line without
        a line end (including a truncated UTF-8 sequence) is not processed. The
        ``last_event_id`` and ``retry`` properties keep their values. Calling it
        again is harmless.

        Raises:
            SSEEventTooLarge: the limit was exceeded by an earlier ``feed``.
        """
        if self._error is not None:
            raise SSEEventTooLarge(self._error.size, self._error.limit)
        self._closed = True
        self._decoder.reset()
        self._reset_buffers()
        return []

    # -- internals ---------------------------------------------------------

    def _reset_buffers(self) -> None:
        self._pending.clear()
        self._pending_size = 0
        self._data.clear()
        self._data_size = 0
        self._event_type = ""
        self._block_retry = None

    def _fail(self, size: int, events: list[SSEEvent]) -> list[SSEEvent]:
        """The limit is exceeded: the decoder is done. Events the chunk completed
        before the oversized one are still returned, in order, so that where the
        chunk boundaries fell never decides what is delivered; the error is
        raised now when there are none, else by the next ``feed``/``feed_eof``."""
        self._reset_buffers()  # release the memory now
        self._error = SSEEventTooLarge(size, self._max)
        if events:
            return events
        raise SSEEventTooLarge(size, self._max)

    def _feed_text(self, text: str) -> list[SSEEvent]:
        if self._after_cr:
            self._after_cr = False
            if text[0] == "\n":
                text = text[1:]  # second half of a CRLF pair split across chunks
        if "\r" in text:
            # CRLF and a lone CR end a line as LF does. A CR that ends the chunk
            # has ended its line; an LF opening the next chunk is its pair.
            self._after_cr = text[-1] == "\r"
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        tail = lines.pop()  # the unfinished line ("" when the chunk ends a line)
        # ``isascii`` is O(1) on CPython: an ASCII chunk's lines are sized by len().
        ascii_text = text.isascii()
        events: list[SSEEvent] = []
        pending = self._pending
        for line in lines:
            size = len(line) if ascii_text else _utf8_len(line)
            if pending:
                pending.append(line)
                line = "".join(pending)
                size += self._pending_size
                pending.clear()
                self._pending_size = 0
            if self._data_size + size > self._max:
                return self._fail(self._data_size + size, events)
            self._process_line(line, size, events)
        if tail:
            pending.append(tail)
            self._pending_size += len(tail) if ascii_text else _utf8_len(tail)
            if self._data_size + self._pending_size > self._max:
                return self._fail(self._data_size + self._pending_size, events)
        return events

    def _process_line(self, line: str, size: int, events: list[SSEEvent]) -> None:
        """One complete line; ``size`` is its UTF-8 length."""
        if not line:
            self._dispatch(events)
            return
        if line[0] == ":":
            return  # comment
        colon = line.find(":")
        if colon < 0:
            field, value = line, ""
        else:
            field = line[:colon]
            value = line[colon + 1 :]
            if value[:1] == " ":
                value = value[1:]
        if field == "data":
            self._data.append(value)
            # The value and its LF; what precedes the value ("data:" and maybe a
            # space) is ASCII, a byte a character.
            self._data_size += size - (len(line) - len(value)) + 1
        elif field == "event":
            self._event_type = value
        elif field == "id":
            if "\0" not in value:
                self._id_buffer = value
        elif field == "retry":
            # "If the field value consists of only ASCII digits": ``isdigit``
            # alone would also accept other scripts' digits and superscripts.
            # ``isascii`` is true of "", which ``isdigit`` then rejects.
            digits = value.lstrip("0") or value[:1]
            if value.isascii() and value.isdigit() and len(digits) <= _MAX_RETRY_DIGITS:
                self._retry = self._block_retry = int(digits)
        # Any other field name is ignored.

    def _dispatch(self, events: list[SSEEvent]) -> None:
        # Step 1 runs even when nothing fires: the buffer becomes the stream's
        # last event ID, so an ``id`` in a data-less block still takes effect.
        self._last_event_id = self._id_buffer
        if self._data:
            # Each data line added its value and an LF; joining with LF and
            # leaving off the final one is "remove the trailing LF".
            events.append(
                SSEEvent(
                    data="\n".join(self._data),
                    event=self._event_type or "message",
                    id=self._last_event_id,
                    retry=self._block_retry,
                )
            )
        self._data.clear()
        self._data_size = 0
        self._event_type = ""
        self._block_retry = None


# -- encoder ---------------------------------------------------------------


def _check_single_line(name: str, value: str) -> None:
    if "\r" in value or "\n" in value:
        raise ValueError(f"SSE {name} must not contain CR or LF: {value!r}")


def _check_retry(retry: int) -> None:
    if retry < 0:
        raise ValueError(f"SSE retry must be a non-negative integer, got {retry!r}")


def _field(name: str, value: str) -> str:
    # ``name: value``; with an empty value the space is left off, since a space
    # with nothing after it would only be removed again by the reader.
    return f"{name}: {value}\n" if value else f"{name}:\n"


def encode_event(
    data: str,
    *,
    event: str | None = None,
    id: str | None = None,
    retry: int | None = None,
) -> bytes:
    """Encode one event block, closed by a blank line, as UTF-8.

    Fields are written in the order id, event, retry, data. ``data`` is split on
    CRLF, CR and LF into one ``data`` line each, so the reader gets it back with
    every line end turned into LF. An empty ``data`` still yields one ``data:``
    line, so the event is dispatched (with data "").

    Raises:
        ValueError: ``id`` or ``event`` contains CR or LF, ``id`` contains NUL
            (a reader would ignore it), ``retry`` is negative, or a string holds
            a lone surrogate (not encodable as UTF-8).
    """
    parts: list[str] = []
    if id is not None:
        _check_single_line("id", id)
        if "\0" in id:
            raise ValueError(f"SSE id must not contain NUL: {id!r}")
        parts.append(_field("id", id))
    if event is not None:
        _check_single_line("event", event)
        parts.append(_field("event", event))
    if retry is not None:
        _check_retry(retry)
        parts.append(f"retry: {retry}\n")
    lines = data.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    parts.extend(_field("data", line) for line in lines)
    parts.append("\n")
    return "".join(parts).encode("utf-8")


def encode_comment(text: str = "") -> bytes:
    """Encode a comment line (``:`` then ``text``) and a blank line.

    The reader ignores comments and, its data buffer being empty, dispatches
    nothing at the blank line, so this is a safe keep-alive between events.

    Raises:
        ValueError: ``text`` contains CR or LF.
    """
    _check_single_line("comment", text)
    return f":{text}\n\n".encode()


def encode_retry(ms: int) -> bytes:
    """Encode a block that only sets the reader's reconnection time (ms).

    Raises:
        ValueError: ``ms`` is negative.
    """
    _check_retry(ms)
    return f"retry: {ms}\n\n".encode()


def encode_priming(id: str, retry: int | None = None) -> bytes:
    """Encode an MCP "priming" event: an event ID and an empty ``data`` field.

    The reader dispatches it as an event with data "" and records ``id`` as its
    last event ID, so it can resume the stream from here after a disconnect.

    Raises:
        ValueError: as for ``encode_event``.
    """
    return encode_event("", id=id, retry=retry)
