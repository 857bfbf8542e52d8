"""Settings of the streamable-HTTP server, shared by ``serve_http`` and ``asgi_app``.

``HTTPServerOptions`` holds every limit and timeout; ``http_options`` builds
one from the keyword arguments both entry points take, and checks it. Under
an ASGI host, the host owns the sockets: ``max_connections``,
``keep_alive_timeout`` and the head-reading deadline are its business
(uvicorn's ``--limit-concurrency`` and ``--timeout-keep-alive``, for example),
while the rest apply as they do to mcpwire's own server.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Union

from .sansio._codec import DEFAULT_MAX_MESSAGE_SIZE

if TYPE_CHECKING:
    from ._http_auth import ResourceServerAuth

__all__ = ("HostList", "HTTPServerOptions", "http_options")

HostList = Union[Sequence[str], None, Literal["auto"]]


@dataclass(frozen=True)
class HTTPServerOptions:
    """Settings of an ``HTTPServer`` (see ``serve_http`` for each one)."""

    path: str = "/mcp"
    #: Also serve the deprecated HTTP+SSE transport (2024-11-05) at these paths.
    legacy_sse: bool = False
    sse_path: str = "/sse"
    message_path: str = "/messages"
    #: "auto": the loopback hosts when bound to loopback, else no check.
    allowed_hosts: tuple[str, ...] | None | Literal["auto"] = "auto"
    #: "auto": the loopback origins.
    allowed_origins: tuple[str, ...] | None | Literal["auto"] = "auto"
    json_response: bool = False
    #: Answer every POSTed request with an event stream when the client takes
    #: one, not only when something precedes the answer.
    stream_responses: bool = False
    session_idle_timeout: float | None = 30 * 60.0
    max_sessions: int = 10_000
    max_body_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_header_size: int = 16 * 1024
    max_connections: int = 1000
    read_timeout: float = 30.0
    keep_alive_timeout: float = 30.0
    write_timeout: float = 30.0
    sse_keepalive: float = 15.0
    retry_ms: int = 1000
    shutdown_timeout: float = 5.0
    #: OAuth 2.1 protection (``ResourceServerAuth``); ``None``: no authorization.
    auth: ResourceServerAuth | None = None

    def __post_init__(self) -> None:
        if self.json_response and self.stream_responses:
            raise ValueError("json_response and stream_responses exclude each other")


def http_options(
    *, allowed_hosts: HostList = "auto", allowed_origins: HostList = "auto", **options: Any
) -> HTTPServerOptions:
    """``HTTPServerOptions`` from ``serve_http``'s keyword arguments, checked."""
    opts = HTTPServerOptions(
        allowed_hosts=_host_list(allowed_hosts),
        allowed_origins=_host_list(allowed_origins),
        **options,
    )
    if opts.session_idle_timeout is not None and not (0 < opts.session_idle_timeout < math.inf):
        raise ValueError("session_idle_timeout must be a positive number of seconds or None")
    return opts


def _host_list(value: HostList) -> tuple[str, ...] | None | Literal["auto"]:
    if value is None or isinstance(value, str):
        return None if value is None else "auto"
    return tuple(value)
