"""Streamable-HTTP header rules, pure: media types, Host/Origin, MCP routing headers.

Theory of operation
-------------------
Everything the HTTP transport decides from header text alone lives here, with
no sockets and no event loop, so a server built on another HTTP stack can
apply exactly the same rules. Header names are compared lowercased (RFC 9110
section 5.1: field names are case-insensitive); values are compared exactly.

Media types (RFC 9110 sections 8.3.1 and 12.5.1)
    ``parse_media_type`` reads ``type/subtype; name=value; ...`` with quoted
    string parameters, so ``text/event-stream;charset=utf-8`` and
    ``application/json; charset="UTF-8"`` are what they say (pain point 23).
    ``accepts`` answers "may I send this type?" from an ``Accept`` header:
    wildcards, ``q`` weights, ``q=0`` as refusal; a missing header accepts
    everything, as RFC 9110 says.

Host and Origin (DNS rebinding, spec-notes section 7.2 "Security")
    ``host_allowed`` and ``origin_allowed`` match a request against an
    allow-list whose entries may leave the port out (any port), write it as
    ``*`` (any port) or name it exactly; the single entry ``*`` allows all.
    Hostnames compare case-insensitively and IPv6 literals keep their
    brackets. ``is_loopback`` tells whether a bind address is local, which is
    when the defaults switch rebinding protection on (pain point 25).

MCP headers of the 2026-07-28 revision (``basic/transports/streamable-http``)
    ``routing_header_mismatch`` compares ``MCP-Protocol-Version``,
    ``Mcp-Method`` and ``Mcp-Name`` with the request body;
    ``param_header_mismatch`` does the same for the ``Mcp-Param-*`` headers a
    tool's input schema asks for with ``x-mcp-header`` (integers compared
    numerically). Values outside visible ASCII travel as
    ``=?base64?<base64 of UTF-8>?=`` (``encode_header_value`` /
    ``decode_header_value``); a malformed sentinel never matches anything.
    Each check returns the text of a -32020 error, or ``None`` when the
    headers agree.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Final

from ._json import JSONObject

__all__ = (
    "LAST_EVENT_ID",
    "LOOPBACK_HOSTS",
    "LOOPBACK_ORIGINS",
    "MCP_METHOD",
    "MCP_NAME",
    "MCP_PARAM_PREFIX",
    "MCP_PROTOCOL_VERSION",
    "MCP_SESSION_ID",
    "NAME_BEARING_METHODS",
    "MediaType",
    "accepts",
    "argument_at",
    "decode_header_value",
    "duplicated_headers",
    "encode_header_value",
    "host_allowed",
    "http_status_for_error",
    "invalid_x_mcp_header",
    "is_json_media_type",
    "is_loopback",
    "is_token",
    "origin_allowed",
    "param_header_mismatch",
    "param_header_value",
    "parse_accept",
    "parse_media_type",
    "routing_header_mismatch",
    "split_host",
    "x_mcp_headers",
)

MCP_SESSION_ID: Final = "mcp-session-id"
MCP_PROTOCOL_VERSION: Final = "mcp-protocol-version"
MCP_METHOD: Final = "mcp-method"
MCP_NAME: Final = "mcp-name"
MCP_PARAM_PREFIX: Final = "mcp-param-"
LAST_EVENT_ID: Final = "last-event-id"
_META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"

#: Method -> the params member its ``Mcp-Name`` header mirrors.
NAME_BEARING_METHODS: Final[Mapping[str, str]] = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    # SEP-2663 "Streamable HTTP: Routing Headers": Mcp-Name carries the task id.
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}

#: Hosts a server bound to loopback accepts by default (any port).
LOOPBACK_HOSTS: Final = ("localhost", "127.0.0.1", "[::1]")
#: Origins accepted by default (any port): pages served from this machine.
LOOPBACK_ORIGINS: Final = (
    "http://localhost",
    "http://127.0.0.1",
    "http://[::1]",
    "https://localhost",
    "https://127.0.0.1",
    "https://[::1]",
)

# RFC 9110 section 5.6.2: token = 1*tchar.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_VISIBLE = re.compile(r"[\x20-\x7e]*")
_SENTINEL = re.compile(r"=\?base64\?(.*)\?=", re.DOTALL)

# Modern-era JSON-RPC error code -> HTTP status (streamable-http.mdx: the header
# and version errors are 400, an unknown method is 404; everything else rides
# on 200 like any other response).
_ERROR_STATUS: Final[Mapping[int, int]] = {
    -32700: 400,
    -32600: 400,
    -32602: 400,
    -32020: 400,
    -32021: 400,
    -32022: 400,
    -32601: 404,
}


def http_status_for_error(code: int) -> int:
    """The HTTP status of a modern-era error response sent as ``application/json``."""
    return _ERROR_STATUS.get(code, 200)


# -- media types ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MediaType:
    """A parsed media type or media range: ``type/subtype`` plus parameters.

    ``type`` and ``subtype`` are lowercased; parameter names are lowercased,
    values kept as written (quotes removed). ``q`` is the weight of an
    ``Accept`` entry (1.0 when absent; not a parameter).
    """

    type: str
    subtype: str
    params: tuple[tuple[str, str], ...] = ()
    q: float = 1.0

    @property
    def essence(self) -> str:
        return f"{self.type}/{self.subtype}"

    def param(self, name: str) -> str | None:
        name = name.lower()
        for key, value in self.params:
            if key == name:
                return value
        return None

    def covers(self, media_type: str) -> bool:
        """Whether this range (``*/*``, ``text/*`` or exact) includes ``media_type``."""
        kind, _, sub = media_type.lower().partition("/")
        if self.type == "*":
            return True
        return self.type == kind and self.subtype in ("*", sub)


def _split(text: str, separator: str) -> Iterator[str]:
    """Split on ``separator`` outside quoted strings (RFC 9110 section 5.6.4)."""
    start = 0
    quoted = False
    escaped = False
    for i, ch in enumerate(text):
        if escaped:
            escaped = False
        elif ch == "\\" and quoted:
            escaped = True
        elif ch == '"':
            quoted = not quoted
        elif ch == separator and not quoted:
            yield text[start:i]
            start = i + 1
    yield text[start:]


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def parse_media_type(value: str) -> MediaType | None:
    """Parse one media type (``Content-Type``) or range; ``None`` if malformed."""
    parts = list(_split(value, ";"))
    kind, slash, sub = parts[0].strip().partition("/")
    if not slash or not _TOKEN.fullmatch(kind) or not _TOKEN.fullmatch(sub):
        return None
    params: list[tuple[str, str]] = []
    q = 1.0
    for raw in parts[1:]:
        raw = raw.strip()
        if not raw:
            continue
        name, eq, val = raw.partition("=")
        name = name.strip().lower()
        if not eq or not _TOKEN.fullmatch(name):
            return None
        val = _unquote(val.strip())
        if name == "q":
            try:
                q = float(val)
            except ValueError:
                return None
            if not 0.0 <= q <= 1.0:
                return None
            continue
        params.append((name, val))
    return MediaType(kind.lower(), sub.lower(), tuple(params), q)


def parse_accept(value: str) -> list[MediaType]:
    """The media ranges of an ``Accept`` header; malformed entries are skipped."""
    ranges: list[MediaType] = []
    for item in _split(value, ","):
        if not item.strip():
            continue
        parsed = parse_media_type(item)
        if parsed is not None:
            ranges.append(parsed)
    return ranges


def accepts(accept: str | None, media_type: str) -> bool:
    """Whether a response of ``media_type`` is acceptable under ``accept``.

    A missing (or empty) header accepts anything (RFC 9110 section 12.5.1).
    The most specific matching range decides; ``q=0`` means "not acceptable".
    """
    if accept is None or not accept.strip():
        return True
    best: MediaType | None = None
    best_rank = -1
    for item in parse_accept(accept):
        if not item.covers(media_type):
            continue
        rank = 0 if item.type == "*" else 1 if item.subtype == "*" else 2
        if rank > best_rank:
            best, best_rank = item, rank
    return best is not None and best.q > 0


def is_json_media_type(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` is ``application/json`` (parameters allowed)."""
    if content_type is None:
        return False
    parsed = parse_media_type(content_type)
    return parsed is not None and parsed.essence == "application/json"


# -- Host and Origin -------------------------------------------------------------------------


def split_host(value: str) -> tuple[str, str | None] | None:
    """Split ``host[:port]`` into a lowercased host and the port text (or ``None``).

    IPv6 literals keep their brackets (``[::1]``). A trailing dot on a name is
    dropped. Returns ``None`` for text that is not a host.
    """
    value = value.strip()
    port: str | None = None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        host = value[: end + 1].lower()
        rest = value[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                return None
            port = rest[1:]
    else:
        host, colon, text = value.partition(":")
        host = host.lower().rstrip(".")
        if colon:
            port = text
        if not host or any(c in host for c in "/?#@ \t[]:"):
            return None
    if port is not None and not (port == "*" or (port.isascii() and port.isdigit())):
        return None
    return host, port


def _port_matches(pattern: str | None, port: str | None) -> bool:
    return pattern is None or pattern == "*" or pattern == port


def host_allowed(host: str | None, allowed: Iterable[str]) -> bool:
    """Whether a ``Host`` header value is in ``allowed`` (see the module docstring)."""
    patterns = list(allowed)
    if "*" in patterns:
        return True
    if host is None:
        return False
    got = split_host(host)
    if got is None or got[1] == "*":
        return False
    for pattern in patterns:
        want = split_host(pattern)
        if want is not None and want[0] == got[0] and _port_matches(want[1], got[1]):
            return True
    return False


def _split_origin(value: str) -> tuple[str, str, str | None] | None:
    scheme, sep, rest = value.strip().partition("://")
    if not sep or not scheme or "/" in rest:
        return None
    hp = split_host(rest)
    if hp is None:
        return None
    return scheme.lower(), hp[0], hp[1]


def origin_allowed(origin: str, allowed: Iterable[str]) -> bool:
    """Whether an ``Origin`` header value is in ``allowed``.

    Entries are ``scheme://host``, ``scheme://host:port`` or
    ``scheme://host:*``; ``*`` allows every origin, ``null`` the opaque one.
    """
    patterns = list(allowed)
    if "*" in patterns:
        return True
    origin = origin.strip()
    if origin == "null":
        return "null" in patterns
    got = _split_origin(origin)
    if got is None or got[2] == "*":
        return False
    for pattern in patterns:
        want = _split_origin(pattern)
        if want is not None and want[:2] == got[:2] and _port_matches(want[2], got[2]):
            return True
    return False


def is_loopback(host: str) -> bool:
    """Whether a bind address (or host name) only reaches this machine."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# -- header names and values ------------------------------------------------------------------


def is_token(name: str) -> bool:
    """Whether ``name`` is an RFC 9110 token (a legal header field name)."""
    return _TOKEN.fullmatch(name) is not None


def encode_header_value(value: str) -> str:
    """The header form of ``value``: itself, or ``=?base64?...?=`` when it must be.

    Encoded when the value has characters outside visible ASCII (control
    characters included), leading or trailing whitespace, or itself looks like
    the sentinel (streamable-http.mdx, "Value encoding").
    """
    if _VISIBLE.fullmatch(value) and value == value.strip() and not _SENTINEL.fullmatch(value):
        return value
    return "=?base64?" + base64.b64encode(value.encode("utf-8")).decode("ascii") + "?="


def decode_header_value(value: str | None) -> str | None:
    """Inverse of ``encode_header_value``; ``None`` for a malformed sentinel.

    Only canonical base64 of valid UTF-8 is accepted, so a corrupt header
    never matches a body value by accident.
    """
    if value is None:
        return None
    match = _SENTINEL.fullmatch(value)
    if match is None:
        return value
    payload = match.group(1)
    try:
        raw = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None
    if base64.b64encode(raw).decode("ascii") != payload:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def duplicated_headers(raw: Iterable[tuple[str, str]]) -> set[str]:
    """Lowercased names that occur more than once among raw header lines."""
    seen: set[str] = set()
    twice: set[str] = set()
    for name, _ in raw:
        key = name.lower()
        if key in seen:
            twice.add(key)
        seen.add(key)
    return twice


# -- 2026-07-28 routing headers -----------------------------------------------------------------


def routing_header_mismatch(
    method: str,
    params: JSONObject,
    headers: Mapping[str, str],
    duplicated: Collection[str] = (),
) -> str | None:
    """Check ``MCP-Protocol-Version``, ``Mcp-Method`` and ``Mcp-Name`` against the body.

    ``headers`` maps lowercased names to values. Call it once the ``_meta``
    envelope is known to be present. A missing header is a mismatch, and so is
    one sent twice (readers of the first and the last copy would disagree).
    """
    for name in (MCP_PROTOCOL_VERSION, MCP_METHOD, MCP_NAME):
        if name in duplicated:
            return f"the {name} header appears more than once"
    meta = params.get("_meta")
    version = meta.get(_META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    header = headers.get(MCP_PROTOCOL_VERSION)
    if header is None or header != version:
        return (
            f"MCP-Protocol-Version header {header!r} does not match the request's "
            f"protocol version {version!r}"
        )
    header = headers.get(MCP_METHOD)
    # Read as Mcp-Name is: a method no header can carry as it is comes escaped.
    if decode_header_value(header) != method:
        return f"Mcp-Method header {header!r} does not match the request's method {method!r}"
    key = NAME_BEARING_METHODS.get(method)
    if key is not None:
        body_value = params.get(key)
        if body_value is not None:
            raw = headers.get(MCP_NAME)
            if decode_header_value(raw) != body_value:
                return f"Mcp-Name header {raw!r} does not match the request's {key} {body_value!r}"
    return None


# The x-mcp-header rules live in _xmcp; imported last, as they use decode_header_value.
from ._xmcp import (  # noqa: E402
    argument_at,
    invalid_x_mcp_header,
    param_header_mismatch,
    param_header_value,
    x_mcp_headers,
)
