"""The HTTP server's fast path: a plain POST whose head arrives whole, answered whole.

Most requests an MCP server gets look alike: a keep-alive ``POST`` whose head
comes in one read, with a ``Content-Length`` body, answered by a response of
known length. For those, ``h11``'s general machinery (its event objects, its
state machine, header validation by regular expression per field) costs more
than the rest of the server's work on the request. So ``HTTPConnection``
(``_http_wire``) reads such a request with ``parse_head`` and writes its
response with ``response_head``, and leaves h11 idle for that cycle.

The fast path takes a strict subset of what h11 takes, never more:

* the head is whole in the first bytes read for the request (nothing of it
  buffered before), at most ``limit`` bytes, every line ended by CRLF;
* the request line is ``POST <target> HTTP/1.1``, the target visible ASCII;
* every field is ``token ":" OWS value OWS`` with a value of visible ASCII,
  spaces and tabs (no obs-text, no obs-fold);
* exactly one ``Host``; at most one ``Content-Length``, of at most 18 ASCII
  digits; ``Connection`` only as ``keep-alive``; no ``Transfer-Encoding``,
  ``Expect`` or ``Upgrade``.

Anything else (a head in pieces, another method, HTTP/1.0, chunked bodies,
``100-continue``, a malformed head) returns ``None`` and goes to h11 exactly as
before, so every refusal and every unusual case is still h11's verdict. A
request the fast path reads is one h11 would read the same way (a property
test holds it to that), and whenever its answer needs more than a whole
response (a streamed one, a status without a body), ``HTTPConnection`` hands
the head and body to h11 after all and goes on there.

The syntax of a field line (``FIELD``, ``field_items``) is shared with the
client's fast path (``_http_client_fast``).
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = (
    "CONNECTION",
    "DECLINED",
    "FIELD",
    "HOST",
    "LENGTH",
    "PLAIN",
    "FastHead",
    "FieldKinds",
    "field_items",
    "framing",
    "parse_head",
    "response_head",
    "whole_head",
)

_TOKEN = rb"[-!#$%&'*+.^_`|~0-9a-zA-Z]+"
_VCHAR = rb"[\x21-\x7e]"
#: One header field line as the fast paths take it (a pattern's source):
#: ``token ":" OWS value OWS CRLF``, the value visible ASCII with spaces and
#: tabs inside (RFC 9110 section 5.5, without obs-text and obs-fold).
FIELD = _TOKEN + rb":[ \t]*(?:" + _VCHAR + rb"+(?:[ \t]+" + _VCHAR + rb"+)*)?[ \t]*\r\n"
_HEAD = re.compile(rb"POST (" + _VCHAR + rb"+) HTTP/1\.1\r\n((?:" + FIELD + rb")*)\r\n")

#: Each field of a block ``FIELD`` took: name, and value (after leading OWS).
_FIELDS = re.compile(rb"(" + _TOKEN + rb"):[ \t]*([^\r]*)\r\n")
_MAX_DIGITS = 18

#: What a field name means to a fast path: nothing (most), or one of these.
PLAIN, HOST, LENGTH, CONNECTION, DECLINED = range(5)
_MAX_NAMES = 512


class FieldKinds:
    """What each field name means to one fast path: ``named`` maps lowercased
    names to their kinds, every other name is ``PLAIN``. Names are remembered
    as sent in ``seen`` (they repeat from message to message; bounded, and
    started over when full), so that most take one dictionary lookup."""

    __slots__ = ("named", "seen")

    def __init__(self, named: dict[bytes, int]) -> None:
        self.named = named
        self.seen: dict[bytes, int] = {}

    def learn(self, name: bytes) -> int:
        """The kind of a name not in ``seen`` yet, remembered there."""
        kind = self.named.get(name.lower(), PLAIN)
        if len(self.seen) >= _MAX_NAMES:
            self.seen.clear()
        self.seen[name] = kind
        return kind


_REQUEST_KINDS = FieldKinds(
    {
        b"host": HOST,
        b"content-length": LENGTH,
        b"connection": CONNECTION,
        b"transfer-encoding": DECLINED,
        b"expect": DECLINED,
        b"upgrade": DECLINED,
    }
)


class FastHead(NamedTuple):
    """A request head read by the fast path."""

    #: The request target as sent.
    target: bytes
    #: The header fields as sent: names in their case, values without OWS.
    items: list[tuple[bytes, bytes]]
    #: The body's length (``Content-Length``, 0 when absent).
    length: int
    #: Where the head ends (the body begins) in the bytes given.
    end: int


def field_items(block: bytes) -> list[tuple[bytes, bytes]]:
    """The ``(name, value)`` pairs of a block of field lines, each one matching
    ``FIELD``: names as sent, values without the OWS around them (as h11's
    ``raw_items`` gives them)."""
    items = _FIELDS.findall(block)
    if b" \r\n" in block or b"\t\r\n" in block:  # OWS after a value is not part of it
        items = [(name, value.rstrip(b" \t")) for name, value in items]
    return items


def whole_head(pattern: re.Pattern[bytes], data: bytes, limit: int) -> re.Match[bytes] | None:
    """``pattern`` matched against the whole head at the start of ``data``
    (through its blank line), or ``None`` when the head is not whole in
    ``data``, is longer than ``limit`` bytes, or does not match all of it."""
    end = data.find(b"\r\n\r\n") + 4
    if end < 4 or end > limit:
        return None
    match = pattern.match(data, 0, end)
    return match if match is not None and match.end() == end else None


def framing(items: list[tuple[bytes, bytes]], kinds: FieldKinds) -> tuple[int, int] | None:
    """How many ``Host`` fields ``items`` hold and their ``Content-Length``
    (-1 when absent); ``None`` when a field takes the message off the fast
    path: a second or malformed ``Content-Length`` (more than 18 ASCII
    digits, or anything else), ``Connection`` other than ``keep-alive``, or
    a field of kind ``DECLINED``."""
    hosts = 0
    length = -1
    seen = kinds.seen
    for name, value in items:
        kind = seen.get(name)
        if kind is None:
            kind = kinds.learn(name)
        if kind == PLAIN:
            continue
        if kind == HOST:
            hosts += 1
        elif kind == LENGTH:
            if length >= 0 or not value.isdigit() or len(value) > _MAX_DIGITS:
                return None
            length = int(value)
        elif kind != CONNECTION or value.lower() != b"keep-alive":
            return None
    return hosts, length


def parse_head(data: bytes, limit: int) -> FastHead | None:
    """The head at the start of ``data`` if the fast path takes it (see the
    module docstring), else ``None``: then h11 is to read ``data``."""
    match = whole_head(_HEAD, data, limit)
    if match is None:
        return None
    items = field_items(match.group(2))
    framed = framing(items, _REQUEST_KINDS)
    if framed is None or framed[0] != 1:
        return None
    return FastHead(match.group(1), items, max(framed[1], 0), match.end())


def response_head(status: int, items: tuple[tuple[bytes, bytes, bytes], ...]) -> bytes:
    """The status line and header fields of a response, as h11 writes them,
    without the ``Content-Length`` field and the blank line that end it (the
    caller adds those: they change with every body). ``items`` are h11's
    validated ``(raw name, name, value)`` triples (``_http_gate.validated_head``)."""
    fields = b"".join([b"%s: %s\r\n" % (raw, value) for raw, _, value in items])
    return b"HTTP/1.1 %d \r\n%s" % (status, fields)
