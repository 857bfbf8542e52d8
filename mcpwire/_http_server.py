"""The streamable-HTTP server transport: both protocol eras on one endpoint.

Theory of operation
-------------------
``HTTPServer`` listens on a TCP socket (127.0.0.1 unless told otherwise) and
drives one ``h11`` connection per socket (``_http_wire``), with keep-alive,
bounded heads and bodies, and deadlines on every read and write. It serves a
single path (``/mcp``), plus ``/sse`` and ``/messages`` when the deprecated
HTTP+SSE transport is switched on (``legacy_sse``, see ``_http_sse``), and
for every request runs the same gate first:

1. the path (404), then ``Host`` (an absolute-form target's authority)
   against ``allowed_hosts`` (421) and ``Origin``, when present, against
   ``allowed_origins`` (403): DNS-rebinding protection, on by default when
   bound to loopback (transports.mdx, "Security Warning"; pain point 25);
2. the method: POST carries messages, GET opens a legacy session's stream,
   DELETE ends a legacy session; anything else is 405.

A POST's body is parsed once (``sansio.parse``: -32700, -32600, -32602 answer
malformed input with status 400) and its era chosen per request:

* **modern** (2026-07-28, ``basic/transports/streamable-http.mdx``): a
  request whose ``params._meta`` holds the protocol envelope, or whose method
  exists only in the modern era, or which comes without a session but with a
  modern ``MCP-Protocol-Version`` or an ``Mcp-Method`` header. The headers are
  checked against the body before anything runs (-32020, -32022, 400), and
  the request is served by a one-request connection (``_http_modern``:
  a ``StreamedSession`` sending through a ``OneShotTransport``), so nothing
  outlives the exchange and the memory a request costs is freed with it. The
  response is JSON, or SSE as soon as a related notification comes first
  (``_http_streams``); when the client disconnects, the handler is cancelled.
  A request whose handler never waits and that asked for no progress is
  answered inline instead, with the same bytes and one write. Notifications
  get 202. See ``_http_modern``.
* **legacy** (2025-03-26 ... 2025-11-25): ``initialize``, and everything
  bound to a session by ``Mcp-Session-Id``; see ``_http_legacy`` (sessions
  in ``_http_sessions``, resumable SSE in ``_http_events``).

The verdicts on ``Accept``, ``Content-Type``, ``Host`` and ``Origin`` are
cached by header value (clients send the same ones on every request), so a
request's headers are parsed once, not once per rule that reads them.

Concurrency and shutdown: connection tasks and legacy sessions run in one
task group, each inside a shielded cancel scope of its own, so cancelling
``serve()`` does not tear them down mid-response. Instead the server stops
accepting, closes idle keep-alive connections, ends GET and listen streams,
lets requests in flight finish for up to ``shutdown_timeout`` seconds, and
only then cancels what is left. Entry points for programs (signals, exit
status) are in ``_http_run``.

The same routing serves requests that arrive through an ASGI host
(``_asgi``): ``handle`` answers one request given as an ``HTTPExchange`` and
a ``RequestHead``, and ``hosting`` owns the long-lived tasks (legacy
sessions, the idle reaper) and the graceful shutdown for as long as the
host keeps the app running (the ASGI lifespan protocol).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import h11

from ._aio_stream import open_tcp_listener, serve_listener
from ._http_events import EventStore, MemoryEventStore
from ._http_exchange import BodyTooLarge, HeadTimeout, HTTPExchange, PeerGone, ReadTimeout
from ._http_gate import (
    content_refusal,
    declared_length,
    host_ok,
    is_modern,
    negotiate,
    origin_ok,
    sessionless_modern,
)
from ._http_legacy import LegacyEndpoint
from ._http_options import HostList, HTTPServerOptions, http_options
from ._http_streams import JSON_HEADERS, PumpResult, ResponseStream, pump_watched
from ._http_wire import HTTPConnection, RequestHead
from ._versions import LEGACY_VERSIONS
from .sansio._http import (
    LOOPBACK_HOSTS,
    LOOPBACK_ORIGINS,
    MCP_PROTOCOL_VERSION,
    MCP_SESSION_ID,
    is_loopback,
)
from .sansio._json import JSONValue
from .sansio._messages import (
    Batch,
    ErrorResponse,
    Invalid,
    Notification,
    Request,
    RequestId,
    Response,
    error_response,
    parse,
    serialize,
)

if TYPE_CHECKING:
    from ._http_modern import ModernEndpoint
    from ._http_sse import SSEEndpoint
    from ._server import Server

__all__ = ("HTTPServer", "HTTPServerOptions", "http_options", "serve_http")

logger = logging.getLogger("mcpwire.http")


class HTTPServer:
    """Serves one ``Server`` over streamable HTTP (see the module docstring)."""

    def __init__(
        self,
        server: Server,
        options: HTTPServerOptions | None = None,
        *,
        event_store: EventStore | None = None,
    ) -> None:
        self.server = server
        self.options = options or HTTPServerOptions()
        self.event_store: EventStore = (
            event_store if event_store is not None else MemoryEventStore()
        )
        self.legacy = LegacyEndpoint(self)
        self._modern: ModernEndpoint | None = None
        self._sse: SSEEndpoint | None = None
        self.port: int | None = None
        self.allowed_hosts: tuple[str, ...] | None = None
        self.allowed_origins: tuple[str, ...] | None = None
        self.draining = False
        #: Connections open, and requests being answered right now.
        self.connections = 0
        self.busy = 0
        self.modern_requests = 0
        #: Why a legacy session cannot start while no task group hosts them.
        self.unhosted_reason = "the server is not running"
        self._tg: anyio.abc.TaskGroup | None = None
        self._scopes: set[anyio.CancelScope] = set()
        self._idle: dict[anyio.CancelScope, bool] = {}
        self._quiet: anyio.Event | None = None

    # The modern endpoint and the deprecated HTTP+SSE one are made (and their
    # modules loaded) by the first request that needs them: a server that only
    # ever sees legacy sessions keeps neither in memory.

    @property
    def modern(self) -> ModernEndpoint:
        endpoint = self._modern
        if endpoint is None:
            from ._http_modern import ModernEndpoint

            endpoint = self._modern = ModernEndpoint(self)
        return endpoint

    @property
    def sse(self) -> SSEEndpoint:
        endpoint = self._sse
        if endpoint is None:
            from ._http_sse import SSEEndpoint

            endpoint = self._sse = SSEEndpoint(self)
        return endpoint

    # -- running ----------------------------------------------------------------------

    def stats(self) -> dict[str, int]:
        """Counters for monitoring: connections, requests, sessions, tasks (pain point 12)."""
        table = self.legacy.table
        return {
            "connections": self.connections,
            "busy_requests": self.busy,
            "modern_requests": self.modern_requests,
            "sessions": len(table),
            "sessions_pending": table.pending,
            "sessions_created": table.created,
            "sessions_evicted": table.evicted,
            "sessions_expired": table.expired_count,
            "sse_connections": 0 if self._sse is None else len(self._sse.connections),
            "tasks": len(self._scopes),
        }

    async def serve(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Listen and serve until cancelled, then shut down gracefully."""
        self.resolve_allow_lists(host)
        listener = await open_tcp_listener(host, port)
        self.port = int(listener.extra(anyio.abc.SocketAttribute.local_port))
        logger.info("serving MCP at http://%s:%d%s", host, self.port, self.options.path)
        async with self.hosting(listener) as tg:
            task_status.started(self.port)
            await serve_listener(listener, self._on_connection, tg)

    def resolve_allow_lists(self, host: str | None) -> None:
        """Settle "auto" allow-lists for a server bound to ``host`` (None: not TCP).

        "auto" checks ``Host`` against the loopback names only when bound to
        loopback: DNS-rebinding protection for a local server (transports.mdx,
        "Security Warning"); a public bind or a Unix socket behind a proxy
        gets no ``Host`` check unless one is configured.
        """
        hosts = self.options.allowed_hosts
        if hosts == "auto":
            hosts = LOOPBACK_HOSTS if host is not None and is_loopback(host) else None
        self.allowed_hosts = hosts
        origins = self.options.allowed_origins
        self.allowed_origins = LOOPBACK_ORIGINS if origins == "auto" else origins

    @property
    def hosted(self) -> bool:
        """Whether a task group is running that legacy sessions can live in."""
        return self._tg is not None

    @asynccontextmanager
    async def hosting(
        self, listener: anyio.abc.Listener[Any] | None = None
    ) -> AsyncIterator[anyio.abc.TaskGroup]:
        """Own the server's long-lived tasks while the body runs; then shut down.

        Legacy sessions and the idle-session reaper run in the task group
        given out; leaving drains gracefully (see the module docstring),
        closing ``listener`` first when there is one.
        """
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                try:
                    if self.options.session_idle_timeout is not None:
                        self.spawn(self._reap)
                    # Tasks-extension handlers outlive the modern request that
                    # started them: host them for as long as the server runs.
                    async with self.server.tasks.running():
                        yield tg
                finally:
                    with anyio.CancelScope(shield=True):
                        await self._drain(listener)
        finally:
            self._tg = None

    def spawn(self, fn: Callable[..., Awaitable[None]], *args: object) -> anyio.CancelScope:
        """Run ``fn(*args)`` in the server's task group, shielded until ``stop`` time."""
        scope = anyio.CancelScope(shield=True)
        self._scopes.add(scope)

        async def run() -> None:
            try:
                with scope:
                    await fn(*args)
            except Exception:
                logger.exception("HTTP server task %s failed", getattr(fn, "__name__", fn))
            finally:
                self._scopes.discard(scope)

        assert self._tg is not None
        self._tg.start_soon(run)
        return scope

    async def _drain(self, listener: anyio.abc.Listener[Any] | None) -> None:
        self.draining = True
        if listener is not None:
            await listener.aclose()
        for scope, idle in list(self._idle.items()):
            if idle:
                scope.cancel()
        for session in self.legacy.table:
            session.standalone.end()
        if self._sse is not None:
            self._sse.close_all()
        if self._modern is not None:
            self._modern.stop_listening()
        with anyio.move_on_after(self.options.shutdown_timeout):
            while self.busy:
                self._quiet = anyio.Event()
                await self._quiet.wait()
        for session in self.legacy.table:
            self.legacy.terminate(session)
        for scope in list(self._scopes):
            scope.cancel()

    async def _reap(self) -> None:
        timeout = self.options.session_idle_timeout
        assert timeout is not None
        interval = min(max(timeout / 4, 0.05), 30.0)
        while True:
            await anyio.sleep(interval)
            for session in self.legacy.table.expired(anyio.current_time()):
                self.legacy.table.expired_count += 1
                logger.debug("ending idle session %s...", session.id[:8])
                self.legacy.terminate(session)

    # -- connections --------------------------------------------------------------------

    async def _on_connection(self, stream: anyio.abc.SocketStream) -> None:
        scope = anyio.CancelScope(shield=True)
        with scope:
            self._scopes.add(scope)
            self.connections += 1
            opts = self.options
            http = HTTPConnection(
                stream,
                max_header_size=opts.max_header_size,
                read_timeout=opts.read_timeout,
                write_timeout=opts.write_timeout,
            )
            try:
                if self.connections > opts.max_connections or self.draining:
                    await http.respond_text(503, "Service Unavailable", [("connection", "close")])
                    return
                await self._serve_connection(http, scope)
            except PeerGone:
                pass
            except Exception:
                logger.exception("HTTP connection failed")
            finally:
                self._idle.pop(scope, None)
                self._scopes.discard(scope)
                self.connections -= 1
                await http.aclose("shutting down" if scope.cancel_called else None)

    async def _serve_connection(self, http: HTTPConnection, scope: anyio.CancelScope) -> None:
        first = True
        while not self.draining:
            self._idle[scope] = True
            try:
                head = await http.next_request(
                    self.options.read_timeout if first else self.options.keep_alive_timeout
                )
            except h11.RemoteProtocolError as exc:
                await http.refuse(exc)
                return
            except HeadTimeout as exc:
                await http.respond_text(408, f"Request Timeout: {exc}", [("connection", "close")])
                return
            finally:
                self._idle[scope] = False
            if head is None:
                return
            if head.size > self.options.max_header_size:
                await http.respond_text(
                    431, "Request Header Fields Too Large", [("connection", "close")]
                )
                return
            first = False
            self.busy += 1
            try:
                await self._request(http, head)
            except h11.RemoteProtocolError as exc:
                await http.refuse(exc)
                return
            finally:
                self._request_done()
            if not http.reusable:
                return
            http.next_cycle()

    def _request_done(self) -> None:
        self.busy -= 1
        if self._quiet is not None and not self.busy:
            self._quiet.set()

    async def handle(self, http: HTTPExchange, head: RequestHead) -> None:
        """Answer one request that a host other than ``serve`` received (ASGI).

        The request counts as in flight for a graceful shutdown, which
        cancels it when ``shutdown_timeout`` has passed; during shutdown new
        requests get 503.
        """
        close = [("connection", "close")]
        scope = anyio.CancelScope()
        self._scopes.add(scope)
        self.busy += 1
        try:
            with scope:
                if self.draining:
                    await http.respond_text(503, "Service Unavailable: shutting down", close)
                elif head.size > self.options.max_header_size:
                    await http.respond_text(431, "Request Header Fields Too Large", close)
                else:
                    await self._request(http, head)
        except PeerGone:
            pass
        finally:
            self._scopes.discard(scope)
            self._request_done()

    # -- requests -------------------------------------------------------------------------

    async def _request(self, http: HTTPExchange, head: RequestHead) -> None:
        opts = self.options
        close = [("connection", "close")]
        if "transfer-encoding" in head.headers and "content-length" in head.headers:
            # RFC 9112 section 6.3: a request framed both ways ought to be an error,
            # and the connection MUST close after any answer (section 6.1): past a
            # proxy that read it by Content-Length, what follows is smuggled.
            await http.respond_text(
                400, "Bad Request: both Transfer-Encoding and Content-Length", close
            )
            return
        path = head.path
        sse = opts.legacy_sse and path in (opts.sse_path, opts.message_path)
        if path != opts.path and not sse and not (opts.auth and opts.auth.serves(path)):
            await http.respond_text(404, "Not Found", close)
            return
        host = head.headers.get("host")
        if self.allowed_hosts is not None and not host_ok(host, self.allowed_hosts):
            logger.warning("rejected request with Host %r (allowed: %s)", host, self.allowed_hosts)
            await http.respond_text(421, "Misdirected Request: invalid Host header", close)
            return
        origin = head.headers.get("origin")
        if (
            origin is not None
            and self.allowed_origins is not None
            and not origin_ok(origin, self.allowed_origins)
        ):
            logger.warning("rejected request with Origin %r", origin)
            await http.respond_text(403, "Forbidden: invalid Origin header", close)
            return
        if opts.auth is not None and not await opts.auth.admit(self, http, head):
            return  # answered: the metadata document, or no valid token (_http_auth)
        if sse:
            if path == opts.sse_path and head.method == "GET":
                await self.sse.get(http, head)
            elif path == opts.message_path and head.method == "POST":
                await self.sse.post(http, head)
            else:
                allow = "GET" if path == opts.sse_path else "POST"
                await http.respond_text(405, "Method Not Allowed", [("allow", allow), *close])
        elif head.method == "POST":
            await self._post(http, head)
        elif head.method == "GET":
            await self.legacy.get(http, head)
        elif head.method == "DELETE":
            await self.legacy.delete(http, head)
        else:
            await http.respond_text(
                405, "Method Not Allowed", [("allow", "GET, POST, DELETE"), *close]
            )

    async def _post(self, http: HTTPExchange, head: RequestHead) -> None:
        headers = head.headers
        length = headers.get("content-length")
        try:
            body = await http.read_body(
                self.options.max_body_size,
                declared_length(length),
            )
        except BodyTooLarge:
            await http.respond_text(413, "Content Too Large", [("connection", "close")])
            return
        except ReadTimeout:
            await http.respond_text(408, "Request Timeout", [("connection", "close")])
            return
        can_json, can_sse = negotiate(headers.get("accept"))
        if not can_json and not can_sse:
            await http.respond_text(
                406, "Not Acceptable: accept application/json and text/event-stream"
            )
            return
        if (refusal := content_refusal(headers.get("content-type"))) is not None:
            await http.respond_text(415, f"Unsupported Media Type: {refusal}")
            return
        item = parse(body)
        if self.options.auth is not None and not await self.options.auth.permit(http, item):
            return  # a token without the scopes this operation needs: 403 (_http_auth)
        cls = type(item)
        if cls is Request:
            req: Request = item  # type: ignore[assignment]
            if is_modern(req, head):
                await self.modern.request(http, head, req, can_json, can_sse)
            else:
                await self.legacy.request(http, head, req, can_json, can_sse)
        elif cls is Notification:
            pv = headers.get(MCP_PROTOCOL_VERSION)
            # Without a session, a notification is modern when its version header
            # says so, or when it is the one the modern era defines (cancelled).
            if MCP_SESSION_ID not in headers and (
                (pv is not None and pv not in LEGACY_VERSIONS)
                or (pv is None and item.method == "notifications/cancelled")  # type: ignore[union-attr]
            ):
                await self.modern.notification(http, pv)
            else:
                await self.legacy.notification(http, head, item)  # type: ignore[arg-type]
        elif cls is Response or cls is ErrorResponse or cls is Batch:
            if sessionless_modern(item, head):  # 2026-07-28 has neither
                await self.modern.other(http, headers.get(MCP_PROTOCOL_VERSION), item)
            else:
                await self.legacy.other(http, head, item)  # type: ignore[arg-type]
        else:
            invalid: Invalid = item  # type: ignore[assignment]
            if not invalid.reply and MCP_SESSION_ID in headers:
                # A malformed answer (to a request of the session's, which fails now).
                await self.legacy.other(http, head, invalid)
                return
            # An error for a message JSON-RPC does not answer (a malformed response)
            # names no id: it would read as the answer to the client's own request.
            rid = invalid.id if invalid.reply else None
            await self.json_error(http, 400, rid, invalid.error.code, invalid.error.message)

    async def json_error(
        self,
        http: HTTPExchange,
        status: int,
        rid: RequestId | None,
        code: int,
        message: str,
        data: JSONValue = None,
        headers: list[tuple[str, str]] | None = None,
    ) -> None:
        body = serialize(error_response(rid, code, message, data))
        await http.respond(status, [*JSON_HEADERS, *(headers or [])], body)

    # -- shared -----------------------------------------------------------------------------

    async def exchange(
        self, http: HTTPExchange, stream: ResponseStream, *, started: bool = False
    ) -> PumpResult:
        """Write ``stream`` to the client, watching for it to hang up meanwhile."""
        return await pump_watched(
            http, stream, keepalive=self.options.sse_keepalive, started=started
        )


async def serve_http(
    server: Server,
    host: str = "127.0.0.1",
    port: int = 8000,
    *,
    path: str = "/mcp",
    allowed_hosts: HostList = "auto",
    allowed_origins: HostList = "auto",
    json_response: bool = False,
    session_idle_timeout: float | None = 30 * 60.0,
    max_sessions: int = 10_000,
    event_store: EventStore | None = None,
    task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
    **options: Any,
) -> None:
    """Serve ``server`` over streamable HTTP at ``http://host:port/path`` until cancelled.

    Args:
        host, port: where to listen; port 0 picks a free port (reported
            through ``task_status.started(port)``).
        path: the MCP endpoint.
        allowed_hosts: ``Host`` values accepted (421 otherwise); entries may
            omit the port or write ``:*``. "auto": localhost, 127.0.0.1 and
            [::1] with any port when ``host`` is a loopback address, no check
            otherwise. ``None`` disables the check.
        allowed_origins: ``Origin`` values accepted when the header is present
            (403 otherwise). "auto": the loopback origins. ``None`` disables.
        json_response: never answer a POST with SSE (related notifications of
            a legacy request then go to the session's GET stream).
        stream_responses: (an ``options`` field) answer every POSTed request
            with SSE when its ``Accept`` allows, as the reference SDK does by
            default; by default a POST gets plain JSON unless a notification or
            request of the server's comes before its answer. A legacy
            ``initialize`` is always JSON when allowed (its session id is a
            header). Excludes ``json_response``.
        session_idle_timeout: seconds a legacy session may sit idle before it
            is ended; ``None`` keeps sessions until DELETE.
        max_sessions: the most legacy sessions at once; at the limit the least
            recently used idle one is evicted, or the initialize gets 503.
        event_store: where SSE events are kept for ``Last-Event-ID`` replay
            (default: a bounded ``MemoryEventStore``).
        options: further ``HTTPServerOptions`` fields (limits, timeouts, ``auth``).
    """
    opts = http_options(
        path=path,
        allowed_hosts=allowed_hosts,
        allowed_origins=allowed_origins,
        json_response=json_response,
        session_idle_timeout=session_idle_timeout,
        max_sessions=max_sessions,
        **options,
    )
    http_server = HTTPServer(server, opts, event_store=event_store)
    await http_server.serve(host, port, task_status=task_status)
