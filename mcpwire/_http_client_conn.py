"""HTTP/1.1 for the MCP client transports: ``h11`` over anyio sockets, pooled.

Theory of operation
-------------------
``HTTPClient`` sends one request at a time per socket and hands back an
``HTTPResponse`` as soon as the status line and headers are in; the body is
then read chunk by chunk (``read_chunk``) or whole and bounded (``read_body``),
so an SSE stream can be consumed while it is still being written. Each socket
carries one ``h11.Connection``: h11 does the framing (Content-Length, chunked,
read-until-close) and tells us whether the socket is reusable afterwards. A
plain exchange (a request with a ``Content-Length`` body, answered by a
response of known length whose head arrives whole) skips h11 for its cycle
(``_http_client_fast``), with the same outcome: anything else is h11's.

Keep-alive
    A response read to its end on a socket both sides left open goes back to an
    idle pool per origin, bounded in number (``max_keepalive``) and age
    (``keepalive_expiry``, below uvicorn's 5 s idle timeout). Before reuse a
    socket is polled: anything readable on an idle socket is the peer's FIN (or
    garbage), so it is dropped. The race left (the server closes as we send)
    shows as end-of-file before any response byte on a reused socket; then a
    request is sent once more on a fresh socket only if sending it twice is
    harmless (RFC 9110 section 9.2.2: an idempotent method, or ``retry=True``
    for MCP's read-only requests, notifications and responses), since a server
    that read it and crashed looks the same: a ``tools/call`` is delivered at
    most once. For such a request a fresh connection is only opened (and
    closed): refused, the server is gone (``ConnectionFailed``); made, it is
    there and this exchange alone failed (``NoResponse``, as for any connection
    that ends between the request and the response head). A response abandoned
    before its end closes its socket: HTTP/1.1 cannot reuse it mid-body, and
    closing a response stream is how MCP cancels.

Bounds
    At most ``max_connections`` sockets are open (waiters queue, bounded by their
    callers' deadlines); a response head is at most ``max_header_size``; bodies
    read with ``read_body`` are capped by the caller. Connecting waits up to
    ``connect_timeout``, each read up to the request's ``timeout`` (``None``: the
    caller's own deadline rules, as long-lived event streams need).

Aborting
    ``abort()`` breaks every exchange in progress from any task, for a failed or
    closed transport: waits for a slot or a connection are cancelled, and sockets
    in use are closed where that needs no wait (plain TCP on asyncio), so their
    reads and writes fail at once. An aborted exchange is never retried.

Redirects
    Only 307 and 308 are followed (they keep the method and body, RFC 9110
    §15.4.8-9), only to the same origin (our credentials must never travel to
    another host), at most ``max_redirects`` times; any other 3xx raises
    ``RedirectRefused`` with the location.

TLS
    ``https`` URLs use a default ``ssl`` context (system trust store, host name
    verification, SNI, ALPN ``http/1.1``); ``verify=False`` turns verification
    off; an ``ssl.SSLContext`` is used as given.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import h11

from ._aio_stream import running_asyncio_loop
from ._http_client_fast import FastResponse, request_bytes
from ._http_client_headers import raw_media_type
from ._http_client_net import URL, Verify, open_socket, redirect_target
from ._http_client_net import describe as _describe
from ._http_client_net import ssl_context as _ssl_context
from ._http_client_sock import (
    NETWORK_ERRORS,
    BodyTooLarge,
    ConnectionFailed,
    HTTPError,
    InvalidRequest,
    NoResponse,
    ReadTimeout,
    RedirectRefused,
    StreamSocket,
    aborted,
    body_cut,
)

if TYPE_CHECKING:
    import ssl

__all__ = (
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_MAX_KEEPALIVE",
    "BodyTooLarge",
    "ConnectionFailed",
    "HTTPClient",
    "HTTPError",
    "HTTPResponse",
    "Headers",
    "InvalidRequest",
    "NoResponse",
    "ReadTimeout",
    "RedirectRefused",
    "URL",
    "Verify",
)

DEFAULT_CONNECT_TIMEOUT = 10.0
#: Idle sockets older than this are not reused (uvicorn closes them after 5 s).
DEFAULT_KEEPALIVE_EXPIRY = 4.0
#: Idle sockets kept per origin: enough for 32 concurrent callers to keep theirs.
DEFAULT_MAX_KEEPALIVE = 32
DEFAULT_MAX_CONNECTIONS = 64
DEFAULT_MAX_REDIRECTS = 5
DEFAULT_MAX_HEADER_SIZE = 64 * 1024
#: Request heads kept ready to send (h11 validates a head when it is built).
_REQUEST_CACHE_SIZE = 64
#: Methods a request may be repeated with (RFC 9110 section 9.2.2).
IDEMPOTENT = frozenset({"GET", "HEAD", "PUT", "DELETE", "OPTIONS", "TRACE"})

_Socket = StreamSocket
Headers = Sequence[tuple[str, str]]


class HTTPResponse:
    """A response whose head has arrived; the body is read on demand.

    Always ``aclose()`` it (``async with`` does): a body read to its end
    returns the socket to the pool, anything else closes the socket.

    The head's fields are decoded when first asked for: the usual JSON answer
    needs only its status and media type.
    """

    __slots__ = (
        "_client",
        "_done",
        "_headers",
        "_items",
        "_media",
        "_reason",
        "_sock",
        "status",
        "timeout",
        "url",
    )

    def __init__(
        self,
        client: HTTPClient,
        sock: _Socket,
        url: URL,
        status: int,
        reason: bytes,
        items: list[tuple[bytes, bytes]],
        timeout: float | None,
    ) -> None:
        self._client = client
        self._sock: _Socket | None = sock
        self.url = url
        self.status = status
        self._reason = reason
        #: The header fields as received: names as sent, values without OWS.
        self._items = items
        self._headers: list[tuple[str, str]] | None = None
        self._media: str | None = None
        self.timeout = timeout
        self._done = False

    @property
    def reason(self) -> str:
        return self._reason.decode("latin-1", "replace")

    @property
    def headers(self) -> list[tuple[str, str]]:
        """The header fields in order, names lowercased."""
        headers = self._headers
        if headers is None:
            headers = self._headers = [
                (k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in self._items
            ]
        return headers

    def header(self, name: str) -> str | None:
        """The first value of a header (names are case-insensitive), or ``None``."""
        name = name.lower()
        for key, value in self.headers:
            if key == name:
                return value
        return None

    @property
    def media_type(self) -> str:
        """The Content-Type without its parameters, lowercased (``""`` if none)."""
        known = self._media
        if known is None:
            known = self._media = raw_media_type(self._items)
        return known

    async def read_chunk(self) -> bytes:
        """The next piece of the body; ``b""`` once it has ended.

        Raises:
            ReadTimeout: nothing arrived within ``timeout``.
            ConnectionFailed: the connection broke before the body ended.
        """
        sock = self._sock
        if self._done or sock is None:
            return b""
        try:
            chunk = await sock.body_chunk(self.timeout)
        except NETWORK_ERRORS as exc:
            self._done = True
            await self._discard()
            raise ConnectionFailed(
                f"the connection broke while reading the body: {_describe(exc)}"
            ) from exc
        except ReadTimeout:
            await self._discard()
            raise
        except ConnectionFailed:  # an HTTP event that is no part of a body
            self._done = True
            await self._discard()
            raise
        if not chunk:
            self._done = True
        return chunk

    async def read_body(self, limit: int, *, truncate: bool = False) -> bytes:
        """The whole body, at most ``limit`` bytes.

        Raises ``BodyTooLarge`` when it is longer, or with ``truncate`` returns
        the first ``limit`` bytes (and gives up the socket); ``BodyCut`` when
        the connection ends first.
        """
        parts: list[bytes] = []
        size = 0
        while True:
            try:
                chunk = await self.read_chunk()
            except ConnectionFailed as exc:
                length, coding = self.header("content-length"), self.header("transfer-encoding")
                raise body_cut(length, coding, parts, exc) from exc
            if not chunk:
                return b"".join(parts)
            size += len(chunk)
            if size > limit:
                await self._discard()
                if truncate:
                    parts.append(chunk)
                    return b"".join(parts)[:limit]
                raise BodyTooLarge(limit)
            parts.append(chunk)

    async def aclose(self) -> None:
        """Release the socket: back to the pool if the body was read to its end."""
        sock, self._sock = self._sock, None
        if sock is None:
            return
        if self._done and sock.reusable():
            await self._client._release(sock)
            return
        await self._client._drop(sock)

    async def _discard(self) -> None:
        sock, self._sock = self._sock, None
        if sock is not None:
            await self._client._drop(sock)

    async def __aenter__(self) -> HTTPResponse:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if not self.release():
            with anyio.CancelScope(shield=True):
                await self.aclose()

    def release(self) -> bool:
        """Put the socket back in the pool if that needs no wait (the usual case after
        a body read to its end); True when nothing is left for ``aclose()`` to do."""
        sock = self._sock
        if sock is None:
            return True
        if self._done and sock.reusable() and self._client._keep(sock):
            self._sock = None
            return True
        return False


class HTTPClient:
    """A pooled HTTP/1.1 client (see the module docstring).

    Args:
        connect_timeout: seconds to open a connection (TLS handshake included).
        verify: ``True`` (default verification), ``False``, or an ``ssl.SSLContext``.
        max_connections: sockets open at once, in use or idle.
        max_keepalive: idle sockets kept per origin.
        keepalive_expiry: seconds an idle socket may wait for reuse.
        max_redirects: 307/308 hops followed per request.
        max_header_size: the largest response head accepted.
    """

    def __init__(
        self,
        *,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        verify: Verify = True,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        max_keepalive: int = DEFAULT_MAX_KEEPALIVE,
        keepalive_expiry: float = DEFAULT_KEEPALIVE_EXPIRY,
        max_redirects: int = DEFAULT_MAX_REDIRECTS,
        max_header_size: int = DEFAULT_MAX_HEADER_SIZE,
        user_agent: str = "mcpwire",
    ) -> None:
        if max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        if max_keepalive < 0:
            raise ValueError("max_keepalive must be at least 0")
        self.connect_timeout = connect_timeout
        self.verify = verify
        self.max_keepalive = max_keepalive
        self.keepalive_expiry = keepalive_expiry
        self.max_redirects = max_redirects
        self.max_header_size = max_header_size
        self.user_agent = user_agent
        # Uncontended (the usual case), taking a slot does not yield to the loop.
        self._slots = anyio.Semaphore(max_connections, fast_acquire=True)
        self._idle: dict[tuple[str, str, int], list[_Socket]] = {}
        #: Sockets checked out for an exchange, and the waits for a slot or a
        #: connection in progress: what ``abort()`` breaks.
        self._busy: set[_Socket] = set()
        self._waits: set[anyio.CancelScope] = set()
        self._aborts = 0
        self._on_asyncio: bool | None = None
        #: Request heads ready to send: h11's event, and the bytes of it the
        #: fast path writes (``_http_client_fast.request_bytes``; ``None``: h11 does).
        self._requests: dict[tuple[object, ...], tuple[h11.Request, bytes | None]] = {}
        #: Whether plain exchanges take the fast path (tests compare it with h11's).
        self._fast_path = True
        self._ssl: ssl.SSLContext | None = None
        self._closed = False
        #: Sockets opened (for tests and diagnostics: reuse keeps this low).
        self.connections_opened = 0

    def abortable(self, url: URL) -> bool:
        """True if ``abort()`` alone stops an exchange with ``url`` wherever it waits:
        plain TCP on asyncio, whose sockets close from any task without waiting."""
        on_asyncio = self._on_asyncio
        if on_asyncio is None:  # a client's sockets all live in the loop it first ran in
            on_asyncio = self._on_asyncio = running_asyncio_loop() is not None
        return on_asyncio and url.scheme == "http"

    def abort(self) -> None:
        """Break every exchange in progress, from any task, without waiting.

        Waits for a slot or a connection are cancelled and sockets in use that
        can be closed at once (see ``abortable``) are: their exchanges fail with
        ``ConnectionFailed`` and are not retried. Idle sockets stay, and
        requests sent afterwards go ahead as usual.
        """
        self._aborts += 1
        for scope in tuple(self._waits):
            scope.cancel()
        for sock in tuple(self._busy):
            sock.abort()

    async def request(
        self,
        method: str,
        url: URL,
        headers: Headers = (),
        body: bytes | None = None,
        *,
        timeout: float | None = None,
        follow_redirects: bool = True,
        retry: bool | None = None,
    ) -> HTTPResponse:
        """Send a request and return once the response head is in.

        ``timeout`` bounds each wait for data (for the head now, and for every
        body chunk later); ``None`` waits as long as the caller lets it.
        ``follow_redirects=False`` returns a redirect as it is, its ``Location`` unfollowed.
        ``retry``: whether the request may be sent twice after a kept-alive socket
        broke before any answer (``None``: if ``method`` is idempotent).

        Raises:
            NoResponse: the connection ended after the request went out, before the head.
            ConnectionFailed: connecting failed (or the client was closed or aborted).
            ReadTimeout: the server was silent for ``timeout`` seconds.
            RedirectRefused: a redirect that is not followed (see the module docstring).
            InvalidRequest: a header value cannot be sent.
        """
        for _ in range(self.max_redirects + 1):
            response = await self._send(method, url, headers, body, timeout, retry)
            if not follow_redirects or not 300 <= response.status < 400 or response.status == 304:
                return response
            location = response.header("location")
            status = response.status
            await response.aclose()
            url = redirect_target(url, status, location)
        raise RedirectRefused(f"more than {self.max_redirects} redirects from {url}")

    async def _send(
        self,
        method: str,
        url: URL,
        headers: Headers,
        body: bytes | None,
        timeout: float | None,
        retry: bool | None = None,
    ) -> HTTPResponse:
        size = -1 if body is None else len(body)
        key = (method, url.raw, *headers, size)
        try:
            ready = self._requests.get(key)
            cacheable = True
        except TypeError:  # a header given as a list: build it every time
            ready, cacheable = None, False
        if ready is None:
            ready = self._request_head(method, url, headers, size)
            if cacheable:
                if len(self._requests) >= _REQUEST_CACHE_SIZE:
                    self._requests.clear()
                self._requests[key] = ready
        request, head = ready
        if not self._fast_path:
            head = None
        slots = self._slots
        aborts = self._aborts
        unsent: NoResponse | None = None  # a request not sent again (below)
        for attempt in range(2):
            try:
                slots.acquire_nowait()  # a free slot needs no wait (the usual case)
            except anyio.WouldBlock:
                await self._acquire_slot()
            sock = self._reuse(url)
            reused = sock is not None
            if sock is None:
                try:
                    sock, reused = await self._checkout(url)
                except BaseException:
                    self._slots.release()
                    raise
            self._busy.add(sock)
            if aborts != self._aborts or unsent is not None:
                await self._drop(sock)  # abort() came while this waited; or a probe
                raise aborted() if unsent is None else unsent
            sock.bytes_in = 0
            try:
                # Head and body in one write: one system call, one segment
                # for a small request (and no Nagle delay between the two).
                event = await sock.exchange(request, head, body, timeout)
                while type(event) is h11.InformationalResponse:
                    event = await sock.next_event(timeout)
            except NETWORK_ERRORS as exc:
                await self._drop(sock)
                if aborts != self._aborts:
                    raise aborted() from exc
                broke = NoResponse(f"{method} {url}: {_describe(exc)}", reused=reused)
                if reused and attempt == 0 and not sock.bytes_in:
                    # A kept-alive socket the server had closed: one more try on a fresh
                    # socket (module docstring), or for a request that may not be sent
                    # twice only a fresh connection, which tells a server that is gone
                    # (ConnectionFailed) from one that is there (NoResponse). The other
                    # idle sockets are as old: dropped.
                    for stale in self._idle.pop(url.origin, ()):
                        await stale.close()
                    if not (method in IDEMPOTENT if retry is None else retry):
                        unsent = broke
                    continue
                raise broke from exc
            except BaseException:
                await self._drop(sock)
                raise
            if type(event) is FastResponse:
                status, reason, items = event.status, event.reason, event.items
            elif type(event) is h11.Response:
                status, reason, items = event.status_code, event.reason, event.headers.raw_items()
            else:
                await self._drop(sock)
                raise NoResponse(f"{method} {url}: unexpected HTTP event {event!r}", reused=reused)
            return HTTPResponse(self, sock, url, status, reason, items, timeout)
        raise AssertionError("unreachable")  # pragma: no cover

    def _request_head(
        self, method: str, url: URL, headers: Headers, size: int
    ) -> tuple[h11.Request, bytes | None]:
        """Build (and so validate) a head, with its bytes for the fast path;
        immutable, one serves all alike requests."""
        all_headers: list[tuple[str, str]] = [("Host", url.authority)]
        all_headers.extend(headers)
        if not any(k.lower() == "user-agent" for k, _ in headers):
            all_headers.append(("User-Agent", self.user_agent))
        if size >= 0:
            all_headers.append(("Content-Length", str(size)))
        try:
            request = h11.Request(method=method, target=url.target, headers=all_headers)
        except (h11.LocalProtocolError, UnicodeEncodeError) as exc:
            raise InvalidRequest(f"cannot send {method} {url}: {exc}") from None
        return request, request_bytes(request, size)

    async def _acquire_slot(self) -> None:
        """Wait for a free slot where ``abort()`` can stop the wait."""
        with anyio.CancelScope() as scope:
            self._waits.add(scope)
            try:
                await self._slots.acquire()
            finally:
                self._waits.discard(scope)
        if scope.cancelled_caught:
            raise aborted()

    def _reuse(self, url: URL) -> _Socket | None:
        """The newest idle socket for ``url`` usable as it is, or ``None`` (see _checkout)."""
        idle = self._idle.get(url.origin)
        if not idle or self._closed:
            return None
        sock = idle[-1]
        if time.monotonic() - sock.idle_since > self.keepalive_expiry or sock.looks_dead():
            return None
        return idle.pop()

    async def _checkout(self, url: URL) -> tuple[_Socket, bool]:
        if self._closed:
            raise ConnectionFailed("the HTTP client is closed")
        idle = self._idle.get(url.origin)
        now = time.monotonic()
        while idle:
            sock = idle.pop()
            if now - sock.idle_since <= self.keepalive_expiry and not sock.looks_dead():
                return sock, True
            await sock.close()
        fresh: _Socket | None = None
        with anyio.CancelScope() as scope:  # abort() can stop the wait
            self._waits.add(scope)
            try:
                fresh = await self._connect(url)
            finally:
                self._waits.discard(scope)
        if fresh is None:
            raise aborted()
        return fresh, False

    async def _connect(self, url: URL) -> _Socket:
        tls = url.scheme == "https"
        if tls and self._ssl is None:
            self._ssl = _ssl_context(self.verify)
        sock = await open_socket(
            url, self._ssl if tls else None, self.connect_timeout, self.max_header_size
        )
        self.connections_opened += 1
        return sock

    def _keep(self, sock: _Socket) -> bool:
        """Put a finished socket in the idle pool if it has room (no waiting involved)."""
        idle = self._idle.get(sock.origin)
        if self._closed or (len(idle) if idle is not None else 0) >= self.max_keepalive:
            return False
        self._slots.release()
        self._busy.discard(sock)
        sock.next_cycle()
        sock.idle_since = time.monotonic()
        self._idle.setdefault(sock.origin, []).append(sock)
        return True

    async def _release(self, sock: _Socket) -> None:
        self._slots.release()
        self._busy.discard(sock)
        if self._closed:
            await sock.close()
            return
        sock.next_cycle()
        sock.idle_since = time.monotonic()
        idle = self._idle.setdefault(sock.origin, [])
        idle.append(sock)
        if len(idle) > self.max_keepalive:
            await idle.pop(0).close()

    async def _drop(self, sock: _Socket) -> None:
        self._slots.release()
        self._busy.discard(sock)
        await sock.close()

    async def aclose(self) -> None:
        """Close every idle socket; sockets in use close when their response does."""
        self._closed = True
        idle, self._idle = self._idle, {}
        for socks in idle.values():
            for sock in socks:
                await sock.close()
