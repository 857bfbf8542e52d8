"""Request and response heads of the HTTP server, each piece of work done once.

``RequestHead`` is the part of a request's head the server looks at: method,
path, query, and the header fields by lower-case name, decoded once. Clients
send the same head on every request of a keep-alive connection, so
``HTTPConnection`` keeps the last one and gives it out again for the same
bytes (or a copy with the new value when only ``Content-Length`` differs).

The gate's verdicts on header values are cached too: clients send the same
``Accept``, ``Content-Type``, ``Host`` and ``Origin`` on every request, so
what the server decides about each value is kept in a small LRU cache per
rule, and a request's headers are parsed once per distinct value, not once
per request and rule (media types are split on quoted-string aware
separators, hosts and origins parsed and matched against the allow lists).
The rules themselves are ``sansio._http``'s; only values up to
``CACHED_VALUE`` characters are cached, so the caches stay small whatever
clients send, and a longer value is judged afresh each time.

``is_modern`` tells the era of a POSTed request from its body and head.

The heads of the server's responses, finally, repeat as well: each of the
few header lists it answers with is validated by h11 once
(``validated_head``, see the note above it).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING

import h11

from ._versions import LEGACY_VERSIONS, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION
from .sansio._http import (
    MCP_METHOD,
    MCP_PROTOCOL_VERSION,
    MCP_SESSION_ID,
    accepts,
    host_allowed,
    origin_allowed,
    parse_media_type,
)
from .sansio._messages import Batch, Request

if TYPE_CHECKING:
    from h11._headers import Headers as H11Headers

__all__ = (
    "CACHED_VALUE",
    "HeaderItems",
    "RequestHead",
    "ValidatedHeaders",
    "host_ok",
    "is_modern",
    "content_refusal",
    "declared_length",
    "negotiate",
    "origin_ok",
    "protocol_refusal",
    "sessionless_modern",
    "validated_head",
)

#: Header values up to this long have their verdicts cached.
CACHED_VALUE = 256


def declared_length(value: str | None) -> int | None:
    """A ``Content-Length`` value as a number, for refusing a body before it is
    read; ``None`` when it is not ASCII digits (h11 refuses such a head, but an
    ASGI host may pass it on: the body's own end then governs). Beyond 18
    digits it is as good as infinite."""
    if value is None or not value.isascii() or not value.isdigit():
        return None
    return int(value) if len(value) <= 18 else 10**18


class RequestHead:
    """The parts of a request's head the server looks at, decoded once.

    Built from an ``h11.Request`` (``from_h11``) or from an ASGI scope
    (``_asgi.request_head``): header names are made lower case (HTTP field
    names are case-insensitive), values are latin-1 decoded.
    """

    __slots__ = ("duplicated", "headers", "method", "path", "query", "size")

    def __init__(
        self,
        method: str,
        path: str,
        query: str,
        raw_headers: Iterable[tuple[bytes, bytes]],
        *,
        size: int | None = None,
    ) -> None:
        self.method = method.upper()
        self.path = path
        self.query = query
        # One pass: decode, measure, and combine repeated fields with ", "
        # (RFC 9110 section 5.3); the names seen more than once are kept for
        # the checks that forbid that.
        headers: dict[str, str] = {}
        duplicated: set[str] = set()
        measured = len(method) + len(path) + len(query)
        for raw_name, raw_value in raw_headers:
            name = raw_name.lower().decode("latin-1")
            value = raw_value.decode("latin-1")
            measured += len(name) + len(value) + 4
            if name in headers:
                duplicated.add(name)
                headers[name] = headers[name] + ", " + value
            else:
                headers[name] = value
        #: About the size of the head on the wire (h11 only bounds heads that
        #: arrive in pieces; one that arrives whole is measured here).
        self.size = size if size is not None else measured
        self.headers = headers
        self.duplicated = duplicated

    def with_length(self, length: str) -> RequestHead:
        """This head with another ``Content-Length`` value (h11 allows one)."""
        head = RequestHead.__new__(RequestHead)
        head.method = self.method
        head.path = self.path
        head.query = self.query
        head.duplicated = self.duplicated
        old = self.headers.get("content-length", "")
        head.headers = {**self.headers, "content-length": length}
        head.size = self.size - len(old) + len(length)
        return head

    @classmethod
    def from_h11(
        cls, event: h11.Request, items: list[tuple[bytes, bytes]] | None = None
    ) -> RequestHead:
        """The head of an h11 request; ``items``: its ``headers.raw_items()``."""
        if items is None:
            items = event.headers.raw_items()
        return cls.from_parts(event.method, event.target, items)

    @classmethod
    def from_parts(
        cls, method: bytes, target_bytes: bytes, items: list[tuple[bytes, bytes]]
    ) -> RequestHead:
        """The head of a request line's method and target and its header fields
        (names as received, values without surrounding white space)."""
        target = target_bytes.decode("latin-1")
        path, _, query = target.partition("?")
        authority = None
        if path[:1] != "/" or "%" in path:
            path, authority = _normal_path(path)
        # The names as received (a list, quicker to walk than h11's view of
        # them); made lower case above, as h11 does.
        head = cls(method.decode("ascii", "replace"), path, query, items)
        if authority is not None:
            # RFC 9112 section 3.2.2: for an absolute-form target the server
            # MUST ignore Host and use the target's authority instead, so that
            # is what the Host allow-list (and everything else) judges.
            head.headers["host"] = authority
        return head


def _normal_path(path: str) -> tuple[str, str | None]:
    """The path of an absolute-form target, which a server MUST accept (RFC 9112
    section 3.2.2), with percent-encoded octets decoded: they compare as what
    they encode (RFC 3986 section 6.2.2.2), and ASGI hosts decode ``path``
    before the app sees it, so both servers route alike. Also the target's
    authority (``host[:port]``, as written; ``""`` when empty), or ``None``
    for a target that has none."""
    from urllib.parse import unquote, urlsplit  # rare: not loaded by every server

    authority = None
    if path[:1] != "/":
        parts = urlsplit(path)
        if parts.scheme and path[len(parts.scheme) : len(parts.scheme) + 3] == "://":
            authority = parts.netloc
        path = parts.path or "/"
    return (unquote(path) if "%" in path else path), authority


def _acceptable(accept: str | None) -> tuple[bool, bool]:
    return accepts(accept, "application/json"), accepts(accept, "text/event-stream")


_accept_verdicts = functools.lru_cache(maxsize=128)(_acceptable)


def _content_verdict(content_type: str | None) -> str | None:
    parsed = None if content_type is None else parse_media_type(content_type)
    if parsed is None or parsed.essence != "application/json":
        return "send application/json"
    # RFC 8259 section 8.1: JSON exchanged between systems is UTF-8, and the
    # body is decoded as such; a body declared in another charset would be
    # misread, so it is refused rather than guessed at.
    for name, value in parsed.params:
        if name == "charset" and value.lower() != "utf-8":
            return "JSON must be UTF-8 (charset=utf-8 or none)"
    return None


_json_verdicts = functools.lru_cache(maxsize=64)(_content_verdict)
_host_verdicts = functools.lru_cache(maxsize=64)(host_allowed)
_origin_verdicts = functools.lru_cache(maxsize=64)(origin_allowed)


def negotiate(accept: str | None) -> tuple[bool, bool]:
    """Whether ``Accept`` takes ``application/json``, and ``text/event-stream``."""
    if accept is not None and len(accept) > CACHED_VALUE:
        return _acceptable(accept)
    return _accept_verdicts(accept)


def content_refusal(content_type: str | None) -> str | None:
    """Why a POST's ``Content-Type`` is refused (415), or ``None`` when it is
    ``application/json`` (parameters allowed; a charset only if UTF-8)."""
    if content_type is not None and len(content_type) > CACHED_VALUE:
        return _content_verdict(content_type)
    return _json_verdicts(content_type)


def host_ok(host: str | None, allowed: tuple[str, ...]) -> bool:
    """Whether a ``Host`` value is in the allow-list."""
    if host is not None and len(host) > CACHED_VALUE:
        return host_allowed(host, allowed)
    return _host_verdicts(host, allowed)


def origin_ok(origin: str, allowed: tuple[str, ...]) -> bool:
    """Whether an ``Origin`` value is in the allow-list."""
    if len(origin) > CACHED_VALUE:
        return origin_allowed(origin, allowed)
    return _origin_verdicts(origin, allowed)


# -- the era of a request --------------------------------------------------------------

#: Methods that exist only in the modern era (a request for one is modern).
_MODERN_ONLY = frozenset({"server/discover", "subscriptions/listen"})


def is_modern(req: Request, head: RequestHead) -> bool:
    """The era of one POSTed request (design.md, "Both protocol eras").

    Modern: the ``_meta`` envelope, a modern-only method, or (without a
    session) a modern ``MCP-Protocol-Version`` or an ``Mcp-Method`` header.
    ``initialize`` is legacy unless it comes stamped as modern in header
    *and* body: then it is an unknown modern method (404, -32601), as
    streamable-http.mdx's era detection expects.
    """
    meta = req.params.get("_meta") if req.params else None
    enveloped = isinstance(meta, dict) and (
        META_PROTOCOL_VERSION in meta or META_CLIENT_CAPABILITIES in meta
    )
    pv = head.headers.get(MCP_PROTOCOL_VERSION)
    if req.method == "initialize":
        return enveloped and pv is not None and pv not in LEGACY_VERSIONS
    if enveloped or req.method in _MODERN_ONLY:
        return True
    if MCP_SESSION_ID in head.headers:
        return False
    return (pv is not None and pv not in LEGACY_VERSIONS) or MCP_METHOD in head.headers


def sessionless_modern(item: object, head: RequestHead) -> bool:
    """Whether a POSTed batch or response that names no session is a modern one.

    As for a request (``is_modern``): no ``Mcp-Session-Id``, and a version
    header that is not a legacy one, or an ``Mcp-Method`` header, or (for a
    batch) a request in it that is modern. 2026-07-28 has neither batches nor
    client responses, so such a message gets that era's answer, not a legacy
    one about sessions.
    """
    headers = head.headers
    if MCP_SESSION_ID in headers:
        return False
    pv = headers.get(MCP_PROTOCOL_VERSION)
    if pv is not None:
        return pv not in LEGACY_VERSIONS
    if MCP_METHOD in headers:
        return True
    if isinstance(item, Batch):
        return any(isinstance(x, Request) and is_modern(x, head) for x in item.items)
    return False


# -- response heads, validated once ----------------------------------------------------
#
# h11 checks every header of every response it is given against the field
# grammar (a regular expression per name and value). The server answers with
# a handful of header lists that repeat (the JSON and SSE heads, a session's
# id): each distinct list is checked by h11 once, and its validated form (the
# triples h11 keeps: raw name, lower-case name, value) handed to later
# responses directly, with only ``Content-Length`` added, whose value is a
# decimal count. h11 still frames and sends every response. Should h11's
# header container ever not take validated triples, every response goes the
# ordinary way.

HeaderItems = tuple[tuple[bytes, bytes, bytes], ...]
#: Validated header lists kept before the table starts over.
_MAX_VALIDATED = 256
_known_heads: dict[tuple[tuple[str, str], ...], tuple[HeaderItems, bool] | None] = {}


def validated_head(headers: list[tuple[str, str]]) -> tuple[HeaderItems, bool] | None:
    """``headers`` as h11 validates them, and whether they close the connection;
    ``None`` when they must go the ordinary way (framing headers of their own)."""
    if ValidatedHeaders is None:
        return None
    key = tuple(headers)
    try:
        return _known_heads[key]
    except KeyError:
        pass
    encoded = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers]
    checked = h11.Response(status_code=200, headers=encoded).headers
    items = tuple(
        (raw, name, value)
        for (raw, value), (name, _) in zip(checked.raw_items(), checked, strict=True)
    )
    names = {name for _, name, _ in items}
    found: tuple[HeaderItems, bool] | None = None
    if not names & {b"content-length", b"transfer-encoding"}:
        closing = any(
            name == b"connection" and value.lower() == b"close" for _, name, value in items
        )
        found = (items, closing)
    if len(_known_heads) >= _MAX_VALIDATED:
        _known_heads.clear()
    _known_heads[key] = found
    return found


def _header_container() -> type[H11Headers] | None:
    """h11's header container, if it takes validated triples as this module assumes."""
    try:
        from h11._headers import Headers

        probe = h11.Response(status_code=200, headers=Headers([(b"X-A", b"x-a", b"1")]))
        if probe.headers.raw_items() == [(b"X-A", b"1")] and list(probe.headers) == [
            (b"x-a", b"1")
        ]:
            return Headers
    except Exception:  # any surprise means: validate every response
        pass
    return None


#: h11's header container for validated triples (``None``: validate every response).
ValidatedHeaders = _header_container()


# -- malformed requests ------------------------------------------------------------------

#: The kinds of request h11 refuses, told by how its message begins, in words
#: of our own: its messages quote the client's bytes, which an answer must not
#: reflect (a page built from them is the client's content under our name).
_REFUSALS = (
    ("illegal request line", "malformed request line"),
    ("no request line", "malformed request line"),
    ("Illegal method", "malformed request method"),
    ("Illegal target", "malformed request target"),
    ("illegal header line", "malformed header field"),
    ("Illegal header", "malformed header field"),
    ("continuation line", "obsolete line folding in the header section"),
    ("Missing mandatory Host", "missing Host header"),
    ("Found multiple Host", "more than one Host header"),
    ("conflicting Content-Length", "conflicting Content-Length headers"),
    ("bad Content-Length", "invalid Content-Length"),
    ("multiple Transfer-Encoding", "more than one Transfer-Encoding header"),
    ("Only Transfer-Encoding", "unsupported Transfer-Encoding (only chunked)"),
    ("illegal chunk", "malformed chunked body"),
    ("malformed chunk", "malformed chunked body"),
    ("Receive buffer too long", "request head too large"),
)
_REASONS = {431: "Request Header Fields Too Large", 501: "Not Implemented"}


def protocol_refusal(exc: h11.RemoteProtocolError) -> tuple[int, str]:
    """The status (h11's hint: 400, 431 or 501) and fixed text that answer a
    request h11 refused: the kind of error, never the bytes that caused it."""
    status = exc.error_status_hint
    message = str(exc)
    kind = next((k for start, k in _REFUSALS if message.startswith(start)), None)
    return status, f"{_REASONS.get(status, 'Bad Request')}: {kind or 'malformed HTTP/1.1 request'}"
