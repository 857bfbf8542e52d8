"""Settings of the streamable-HTTP server, shared by ``serve_http`` and ``asgi_app``.

``HTTPServerOptions`` holds every limit and timeout; ``http_options`` builds
one from the keyword arguments both entry points take, and checks it. Under
an ASGI host, the host owns the sockets: ``max_connections``,
``keep_alive_timeout`` and the head-reading deadline are its business
(uvicorn's ``--limit-concurrency`` and ``--timeout-keep-alive``, for example),
while the rest apply as they do to mcpwire's own server.

Besides these settings, fixed bounds hold every buffer: a response queues at
most 1024 frames for a client that reads slower than the server writes (one
further behind is dropped, ``_http_streams.OUTBOX_LIMIT``); a legacy session
queues 64 POSTed messages for its reader before the next POST waits
(``_http_sessions.INBOUND_BUFFER``); the ``MemoryEventStore`` keeps 256
events per stream and 32 streams per session for ``Last-Event-ID`` replay;
and while a response streams, at most twice ``max_header_size`` of a
pipelined next request is read ahead.
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
    #: Seconds a legacy session may sit idle (no request or stream open)
    #: before it is ended; ``None``: until DELETE.
    session_idle_timeout: float | None = 30 * 60.0
    #: Legacy sessions (and HTTP+SSE connections) at once: at the limit an
    #: ``initialize`` evicts the least recently used idle session, or gets 503.
    max_sessions: int = 10_000
    #: Bytes of a request body: 413 beyond (before reading it when
    #: ``Content-Length`` says so, else as soon as a chunked body passes it).
    max_body_size: int = DEFAULT_MAX_MESSAGE_SIZE
    #: Bytes of a request head (request line and fields): 431 beyond, and the
    #: connection closes.
    max_header_size: int = 16 * 1024
    #: Open connections: one more is answered 503 and closed.
    max_connections: int = 1000
    #: Seconds for a new connection's first request to begin (else it is
    #: closed without a response), for a head to arrive whole once begun, and
    #: for a whole request body: a head or body that is late gets 408 and the
    #: connection closes (RFC 9110 section 15.5.9).
    read_timeout: float = 30.0
    #: Seconds an idle keep-alive connection waits for its next request; then
    #: it is closed without a response (RFC 9112 section 9.5).
    keep_alive_timeout: float = 30.0
    #: Seconds one write may wait for a client that does not read: then the
    #: connection is dropped (a legacy stream stays recorded for resumption).
    write_timeout: float = 30.0
    #: Seconds of quiet after which an SSE stream gets a comment line (and a
    #: POST whose client takes SSE commits to it).
    sse_keepalive: float = 15.0
    #: The ``retry`` hint (milliseconds) of priming events (2025-11-25).
    retry_ms: int = 1000
    #: Seconds requests in flight get to finish at shutdown; then they are
    #: cancelled, and one whose response has not begun is answered 503.
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
