"""What a request handler of the HTTP server sees of one request and its response.

``HTTPExchange`` is implemented by ``_http_wire.HTTPConnection`` (h11 on a
socket) and by ``_asgi.ASGIExchange`` (an ASGI host), so that the handlers
(``_http_server``, ``_http_modern``, ``_http_legacy``, ``_http_sse``) serve
both alike; the exceptions here are how either reports a client gone, too
slow, or sending too much.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

__all__ = ("BodyTooLarge", "HTTPExchange", "HeadTimeout", "PeerGone", "ReadTimeout", "text_body")


class PeerGone(Exception):
    """The client closed the connection, reset it, or stalled past a deadline."""


class ReadTimeout(PeerGone):
    """The request (head or body) did not arrive within ``read_timeout``."""


class HeadTimeout(ReadTimeout):
    """A request head begun but not whole within ``read_timeout``: the client is
    owed a 408 before the connection closes (RFC 9110 section 15.5.9)."""


class BodyTooLarge(Exception):
    """The request body is larger than the configured limit."""


class HTTPExchange(Protocol):
    """One request's body and its response, whatever carries them.

    ``HTTPConnection`` (h11 on a socket) and ``_asgi.ASGIExchange`` (an ASGI
    host) implement it. A response is whole (``respond``) or streamed
    (``start``, ``write``..., ``finish``); ``watch_disconnect`` returns when
    the client goes away, for use beside a streamed response (or, where the
    connection can tell without a reader, ``on_disconnect``). Writing to a
    client that is gone raises ``PeerGone``.

    Every call is one write to the client: ``respond`` sends head and body
    together, ``start`` may carry the first piece of a streamed body and
    ``finish`` the last, so a response whose content is known is never
    split over several writes (each write is a system call and, on anyio's
    asyncio streams, a pass round the event loop).
    """

    async def read_body(self, limit: int, declared: int | None = None) -> bytes: ...

    async def start(
        self, status: int, headers: list[tuple[str, str]], data: bytes = b""
    ) -> None: ...

    async def write(self, data: bytes) -> None: ...

    async def finish(self, data: bytes = b"") -> None: ...

    async def respond(
        self, status: int, headers: list[tuple[str, str]], body: bytes = b""
    ) -> None: ...

    async def respond_text(
        self, status: int, text: str, headers: list[tuple[str, str]] | None = None
    ) -> None: ...

    async def watch_disconnect(self) -> None: ...

    def on_disconnect(self, callback: Callable[[], None]) -> Callable[[], None] | None:
        """Have ``callback`` called once if the client goes away, with no task
        reading meanwhile, where the connection can tell (asyncio's own TCP
        streams). Returns what stops that; ``None`` where ``watch_disconnect``
        must be awaited instead."""
        ...

    #: Headers the next response carries besides its own, added before the
    #: response is made (the auth layer's ``DPoP-Nonce``); a response takes them.
    extra_headers: list[tuple[str, str]]


def text_body(
    text: str, headers: list[tuple[str, str]] | None
) -> tuple[list[tuple[str, str]], bytes]:
    """The headers and body of a short plain-text response (``respond_text``)."""
    return [("content-type", "text/plain; charset=utf-8"), *(headers or [])], (text + "\n").encode()
