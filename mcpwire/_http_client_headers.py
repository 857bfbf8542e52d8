"""The HTTP headers a client derives from an MCP message (pure functions).

Streamable HTTP repeats parts of the JSON-RPC body in headers so that
gateways can route without parsing JSON:

* legacy revisions (2025-06-18 and later, ``basic/transports.mdx``): the
  negotiated ``MCP-Protocol-Version`` on every request after ``initialize``,
  and the ``Mcp-Session-Id`` the server assigned;
* 2026-07-28 (``basic/transports/streamable-http.mdx``): on every request
  ``MCP-Protocol-Version`` (equal to ``_meta``'s protocolVersion) and
  ``Mcp-Method``; ``Mcp-Name`` for ``tools/call`` and ``prompts/get``
  (``params.name``), ``resources/read`` (``params.uri``) and the tasks
  extension's ``tasks/get``, ``tasks/update`` and ``tasks/cancel``
  (``params.taskId``, SEP-2663 "Streamable HTTP: Routing Headers"); and one
  ``Mcp-Param-<Name>`` per tool argument whose input schema property carries
  ``x-mcp-header: "<Name>"``.

Header values travel as visible ASCII. A value that is not plain printable
ASCII, has leading or trailing whitespace, or could be mistaken for the
escape itself is sent as ``=?base64?<base64 of its UTF-8>?=`` (the markers
are case-sensitive); servers decode before comparing with the body.

``x-mcp-header`` rules (2026-07-28 ``server/tools.mdx``): the annotation must
be a non-empty RFC 9110 token, unique case-insensitively within the schema,
on a ``string``, ``integer`` or ``boolean`` property reachable from the root
through ``properties`` alone. A tool that breaks any rule MUST be dropped from
an HTTP client's tool list (``tool_header_map`` returns ``None`` for it).
Values: strings as they are, integers in decimal, booleans ``true``/``false``;
an absent or null argument sends no header.

Also here: ``media_type`` (a Content-Type without its parameters, so that
``text/event-stream;charset=utf-8`` is an event stream, pain point #23) and
``header_list`` (user-supplied headers, validated before anything is sent).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ._versions import META_PROTOCOL_VERSION
from .sansio._http import (
    NAME_BEARING_METHODS,
    argument_at,
    encode_header_value,
    invalid_x_mcp_header,
    param_header_value,
    x_mcp_headers,
)
from .sansio._json import JSONValue
from .sansio._messages import Request

__all__ = (
    "NAME_PARAMS",
    "ToolHeaderMap",
    "encode_header_value",
    "header_list",
    "media_type",
    "modern_headers",
    "raw_media_type",
    "request_protocol_version",
    "tool_header_map",
)

#: Methods whose ``Mcp-Name`` header mirrors a body parameter, and which one
#: (the same table the server checks against).
NAME_PARAMS: Mapping[str, str] = NAME_BEARING_METHODS

#: Per tool: the path of ``properties`` keys to an argument -> the header token.
ToolHeaderMap = dict[tuple[str, ...], str]


def tool_header_map(input_schema: JSONValue) -> ToolHeaderMap | None:
    """The ``x-mcp-header`` annotations of a tool, or ``None`` if any is invalid.

    The rules are the server's (``sansio._http.invalid_x_mcp_header``): both
    sides must agree on which tools carry which headers.
    """
    if invalid_x_mcp_header(input_schema) is not None:
        return None
    return {path: token for path, (token, _kind) in x_mcp_headers(input_schema).items()}


def request_protocol_version(request: Request) -> str | None:
    """The modern protocol version a request carries in ``params._meta``, if any."""
    meta = request.params.get("_meta") if request.params else None
    version = meta.get(META_PROTOCOL_VERSION) if isinstance(meta, dict) else None
    return version if isinstance(version, str) else None


def modern_headers(
    request: Request, version: str, tool_headers: Mapping[str, ToolHeaderMap]
) -> list[tuple[str, str]]:
    """The 2026-07-28 routing headers for ``request``."""
    headers = [
        ("MCP-Protocol-Version", version),
        ("Mcp-Method", encode_header_value(request.method)),
    ]
    params = request.params or {}
    key = NAME_PARAMS.get(request.method)
    name = params.get(key) if key is not None else None
    if isinstance(name, str):
        headers.append(("Mcp-Name", encode_header_value(name)))
    if request.method == "tools/call" and isinstance(name, str):
        arguments = params.get("arguments")
        for path, token in (tool_headers.get(name) or {}).items():
            rendered = param_header_value(argument_at(arguments, path))
            if rendered is not None:
                headers.append((f"Mcp-Param-{token}", encode_header_value(rendered)))
    return headers


def media_type(content_type: str | None) -> str:
    """The ``type/subtype`` of a Content-Type value, lowercased, parameters dropped.

    ``text/event-stream;charset=utf-8`` and ``Application/JSON; charset=UTF-8``
    are what they say (media types are case-insensitive, RFC 9110 §8.3.1).
    """
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


#: Content-Type values seen -> their media types (servers send a handful).
_MEDIA_TYPES: dict[bytes, str] = {}
_MEDIA_TYPES_MAX = 64


def raw_media_type(headers: Iterable[tuple[bytes, bytes]]) -> str:
    """``media_type`` of the Content-Type among raw ``(name, value)`` header pairs."""
    for name, value in headers:
        if name.lower() == b"content-type":
            known = _MEDIA_TYPES.get(value)
            if known is None:
                known = media_type(value.decode("latin-1"))
                if len(_MEDIA_TYPES) < _MEDIA_TYPES_MAX:
                    _MEDIA_TYPES[value] = known
            return known
    return ""


def header_list(
    headers: Iterable[tuple[str, str]] | Mapping[str, str] | None,
) -> list[tuple[str, str]]:
    """Validated ``(name, value)`` pairs from a mapping or pairs (``ValueError`` if malformed).

    Framing headers (Host, Content-Length, Transfer-Encoding, Connection) are
    the HTTP layer's own and may not be given.
    """
    pairs = list(headers.items()) if isinstance(headers, Mapping) else list(headers or ())
    for name, value in pairs:
        if not name or any(c in name for c in ' \t\r\n:()<>@,;"/[]?={}') or not name.isascii():
            raise ValueError(f"invalid HTTP header name: {name!r}")
        if any(c in value for c in "\r\n\0") or not value.isascii():
            raise ValueError(
                f"invalid value for HTTP header {name!r}: contains CR, LF, NUL or non-ASCII"
            )
        if name.lower() in _FRAMING:
            raise ValueError(f"the HTTP header {name!r} is set by the transport itself")
    return pairs


_FRAMING = frozenset({"host", "content-length", "transfer-encoding", "connection"})
