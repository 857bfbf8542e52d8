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

__all__ = ("FIELD", "FastHead", "field_items", "parse_head", "response_head")

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

#: What a field name means here: nothing (most), or one of these.
_PLAIN, _HOST, _LENGTH, _CONNECTION, _DECLINED = range(5)
_NAMED = {
    b"host": _HOST,
    b"content-length": _LENGTH,
    b"connection": _CONNECTION,
    b"transfer-encoding": _DECLINED,
    b"expect": _DECLINED,
    b"upgrade": _DECLINED,
}
#: Field names as sent, with what they mean (names repeat from request to
#: request; bounded, and started over when full).
_kinds: dict[bytes, int] = {}
_MAX_KINDS = 512


def _kind(name: bytes) -> int:
    kind = _NAMED.get(name.lower(), _PLAIN)
    if len(_kinds) >= _MAX_KINDS:
        _kinds.clear()
    _kinds[name] = kind
    return kind


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


def parse_head(data: bytes, limit: int) -> FastHead | None:
    """The head at the start of ``data`` if the fast path takes it (see the
    module docstring), else ``None``: then h11 is to read ``data``."""
    end = data.find(b"\r\n\r\n")
    if end < 0:
        return None
    end += 4
    if end > limit:
        return None
    match = _HEAD.match(data, 0, end)
    if match is None or match.end() != end:
        return None
    items = field_items(match.group(2))
    hosts = 0
    length = -1
    kinds = _kinds
    for name, value in items:
        kind = kinds.get(name)
        if kind is None:
            kind = _kind(name)
        if kind == _PLAIN:
            continue
        if kind == _HOST:
            hosts += 1
        elif kind == _LENGTH:
            if length >= 0 or not value.isdigit() or len(value) > _MAX_DIGITS:
                return None
            length = int(value)
        elif kind != _CONNECTION or value.lower() != b"keep-alive":
            return None  # Transfer-Encoding, Expect, Upgrade; Connection but keep-alive
    if hosts != 1:
        return None
    return FastHead(match.group(1), items, max(length, 0), end)


def response_head(status: int, items: tuple[tuple[bytes, bytes, bytes], ...]) -> bytes:
    """The status line and header fields of a response, as h11 writes them,
    without the ``Content-Length`` field and the blank line that end it (the
    caller adds those: they change with every body). ``items`` are h11's
    validated ``(raw name, name, value)`` triples (``_http_gate.validated_head``)."""
    fields = b"".join([b"%s: %s\r\n" % (raw, value) for raw, _, value in items])
    return b"HTTP/1.1 %d \r\n%s" % (status, fields)
