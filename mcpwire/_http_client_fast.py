"""The HTTP client's fast path: a plain request, and a response whose head arrives whole.

Most exchanges of an MCP client look alike: a ``POST`` with a
``Content-Length`` body on a kept-alive socket, answered by a response of
known length whose head comes in the first read. For those, ``h11``'s general
machinery (its event objects, its state machines on both sides, header
validation per field) costs more than the rest of the client's work on the
call. So the sockets (``_http_client_sock``) write such a request with the
bytes ``request_bytes`` made once per request head, read its response with
``parse_response`` and the body with ``BodyLeft``, and leave the socket's h11
idle for that cycle.

The request side takes a request when h11 is fresh for a new cycle (both
sides idle, nothing received ahead) and the request is plain: not ``HEAD``
(its response has no body whatever it says) or ``CONNECT``, no
``Transfer-Encoding``, ``Expect`` or ``Upgrade``, ``Connection`` only as
``keep-alive``. Its bytes are those h11 writes for it, made by h11 itself.

The response side takes a strict subset of what h11 takes, never more:

* the head is whole in the first bytes read after the request, at most
  ``limit`` bytes, every line ended by CRLF;
* the status line is ``HTTP/1.1``, a status from 200 to 599 other than 204
  and 304 (no 1xx, nor a status without a body), and a reason of visible
  ASCII, spaces and tabs (or none);
* every field is ``token ":" OWS value OWS`` with a value of visible ASCII,
  spaces and tabs (no obs-text, no obs-fold: ``_http_fast.FIELD``);
* exactly one ``Content-Length``, of at most 18 ASCII digits; no
  ``Transfer-Encoding``; ``Connection`` only as ``keep-alive``.

Its status, reason and fields are what h11 gives (``raw_items``: names as
sent, values without the OWS around them), and its body is the
``Content-Length`` bytes that follow, never more: bytes past them answer no
request (RFC 9112 section 6.3), so the socket is not reused, as h11 decides.
Anything else (a head in pieces, no ``Content-Length``, chunked, an event
stream, 1xx, 204 or 304, HTTP/1.0, ``Connection: close``, a malformed head,
the end of input) returns ``None``: the socket then tells h11 of the request
as if it had written it and hands it what arrived, and h11 reads the
exchange exactly as it would have, so every refusal and unusual case is
still h11's verdict. A property test holds the fast path to h11's reading.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import h11

from ._http_fast import (
    CONNECTION,
    DECLINED,
    FIELD,
    LENGTH,
    FieldKinds,
    field_items,
    framing,
    whole_head,
)

__all__ = ("BodyLeft", "FastResponse", "parse_response", "request_bytes")

_STATUS = rb"HTTP/1\.1 ([2-5][0-9][0-9])(?: ([ \t\x21-\x7e]*))?\r\n"
_HEAD = re.compile(_STATUS + rb"((?:" + FIELD + rb")*)\r\n")
#: Statuses whose response has no body whatever its head says (RFC 9110 section 6.4.1).
_BODILESS = (b"204", b"304")
#: What a response field name means here (``_http_fast.framing``).
_RESPONSE_KINDS = FieldKinds(
    {b"content-length": LENGTH, b"connection": CONNECTION, b"transfer-encoding": DECLINED}
)

#: Request fields that take a request off the fast path (see the module docstring).
_REQUEST_DECLINED = frozenset({b"transfer-encoding", b"expect", b"upgrade"})


class FastResponse(NamedTuple):
    """A response head read by the fast path."""

    status: int
    #: The reason phrase as sent (``b""`` when there is none).
    reason: bytes
    #: The header fields: names as sent, values without OWS.
    items: list[tuple[bytes, bytes]]
    #: The body's length (its ``Content-Length``).
    length: int
    #: Where the head ends (the body begins) in the bytes given.
    end: int


def parse_response(data: bytes, limit: int) -> FastResponse | None:
    """The response head at the start of ``data`` if the fast path takes it
    (see the module docstring), else ``None``: then h11 is to read ``data``."""
    match = whole_head(_HEAD, data, limit)
    if match is None:
        return None
    status = match.group(1)
    if status in _BODILESS:
        return None
    items = field_items(match.group(3))
    framed = framing(items, _RESPONSE_KINDS)
    if framed is None or framed[1] < 0:  # no Content-Length: read to the end, h11's
        return None
    return FastResponse(int(status), match.group(2) or b"", items, framed[1], match.end())


def request_bytes(request: h11.Request, size: int) -> bytes | None:
    """The bytes h11 writes for ``request``'s head if the fast path may send it
    with a body of ``size`` bytes (-1: none), else ``None`` (see the module
    docstring). Made once per request head: a scratch h11 connection writes them.

    The head's ``Content-Length`` must be the body's size (and absent without
    a body): h11 would refuse to send any other body, and that is its verdict.
    """
    if request.method in (b"HEAD", b"CONNECT"):
        return None
    length = b"" if size < 0 else b"%d" % size
    declared = b""
    for name, value in request.headers:  # names lowercased by h11
        if name in _REQUEST_DECLINED:
            return None
        if name == b"connection" and value.lower() != b"keep-alive":
            return None
        if name == b"content-length":
            declared = value
    if declared != length:
        return None
    return h11.Connection(h11.CLIENT).send(request)


class BodyLeft:
    """What is left of the body of a response the fast path read: the part
    that came with the head and is not handed out yet (``held``), how many
    bytes are still due, whether bytes came past the body's end (``past``:
    the socket is not reused), and whether its end was reported (``ended``)."""

    __slots__ = ("due", "ended", "held", "past")

    def __init__(self, head: FastResponse, data: bytes) -> None:
        stop = head.end + head.length
        self.held = data[head.end : stop]
        self.due = head.length - len(self.held)
        self.past = len(data) > stop
        self.ended = False

    def take(self, data: bytes) -> bytes:
        """The body's share of ``data``, received after the head: at most what
        is still due (the rest answers no request: ``past``)."""
        due = self.due
        if len(data) > due:
            self.past = True
            data = data[:due]
        self.due = due - len(data)
        return data
