"""An ASGI 3 application serving one ``Server`` over streamable HTTP (uvicorn, hypercorn...).

Theory of operation
-------------------
``asgi_app(server, **options)`` wraps the same ``HTTPServer`` that
``serve_http`` runs: every request goes through ``HTTPServer.handle`` and so
through the very routing and checks of mcpwire's own server (path, 421 Host,
403 Origin, 405, 406, 413, 415, both protocol eras on one endpoint, legacy
sessions, SSE with priming and ``Last-Event-ID`` resumption, the deprecated
HTTP+SSE transport at ``/sse`` when ``legacy_sse=True``). Only the I/O
differs: ``ASGIExchange`` implements ``_http_wire.HTTPExchange`` on ASGI's
``receive``/``send``, and ``request_head`` builds the ``RequestHead`` from
the scope.

ASGI features used (ASGI 3.0, HTTP spec 2.x):

* ``http`` scopes: ``method``, ``path`` (made relative to ``root_path`` when
  it starts with it, so a mounted app sees its own paths), ``query_string``,
  ``headers``, ``http_version``, ``server`` (for "auto" allow-lists);
* ``http.request`` messages, the body arriving in as many pieces as the host
  likes, bounded by ``max_body_size`` (413) and ``read_timeout`` (408);
* ``http.response.start`` and ``http.response.body`` with ``more_body``: a
  whole response is one body message with its ``Content-Length``; a streamed
  one (SSE) is an empty body message right after the head (ASGI lets a host
  hold the head back until the first body message, and an SSE stream may
  stay quiet for a while), then one message per frame;
* ``http.disconnect``: the client went away. For a modern (2026-07-28)
  request that is cancellation: the handler is cancelled, as with the h11
  server; a legacy request keeps running and its stream stays resumable;
* ``lifespan``: ``startup`` opens the task group that legacy sessions and the
  idle-session reaper live in (they outlive the request that starts them);
  ``shutdown`` drains gracefully: GET, listen and HTTP+SSE streams end,
  requests in flight get ``shutdown_timeout`` seconds, sessions end, and
  what is left is cancelled.

Not used or not supported: ``websocket`` scopes (refused with an error, as
ASGI prescribes for an unknown scope type); ``http.response.trailers``,
``http.response.push`` (HTTP/2 server push), ``http.response.zerocopysend``
and ``http.response.pathsend``; the ``state`` namespace. ``Connection``
headers, which HTTP/2 and HTTP/3 forbid, are only passed on to HTTP/1.x
hosts. The host owns sockets and connections: ``max_connections``,
``keep_alive_timeout`` and the head deadline are its settings, not ours.

Without lifespan (a host that does not run it, ``uvicorn --lifespan off``,
or an app mounted inside a framework that does not pass lifespan on to
mounted apps), modern requests and the deprecated HTTP+SSE transport work
as usual, since each lives within its own request; a legacy ``initialize``
is refused (HTTP 500, JSON-RPC -32603, with a message that says why). Enter
``ASGIApp.running()`` in the outer app's own lifespan to host sessions then.

Several workers: the modern era is stateless, so any worker can answer any
request. A legacy session lives in the memory of the worker that answered
its ``initialize``: its later requests must reach the same worker (session
affinity on ``Mcp-Session-Id`` in the balancer, or one worker), or they get
404 and the client has to initialize again. The same holds for an HTTP+SSE
connection and for ``Last-Event-ID`` replay with the default in-memory event
store.

Shutdown order: hosts wait for requests in flight before they send
``lifespan.shutdown``, and a long-lived stream (a legacy GET stream, a
modern ``subscriptions/listen``, an HTTP+SSE connection) is a request in
flight until the client leaves. Give the host a graceful-shutdown timeout
(``uvicorn --timeout-graceful-shutdown``, ``hypercorn --graceful-timeout``)
so that such streams are cut at shutdown.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from ._http_events import EventStore
from ._http_options import HostList, http_options
from ._http_server import HTTPServer
from ._http_wire import BodyTooLarge, PeerGone, ReadTimeout, RequestHead, text_body

if TYPE_CHECKING:
    from ._server import Server

__all__ = ("ASGIApp", "ASGIExchange", "asgi_app", "request_head")

logger = logging.getLogger("mcpwire.http")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

_NO_LIFESPAN = (
    "the ASGI host did not run the lifespan protocol, which legacy sessions need "
    "(modern 2026-07-28 requests work without it; when mounting the app inside another "
    "framework, enter ASGIApp.running() in that framework's lifespan)"
)
#: Hop-by-hop fields that HTTP/2 and HTTP/3 responses must not carry (RFC 9113 8.2.2).
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "upgrade"})


def request_head(scope: Scope) -> RequestHead:
    """The ``RequestHead`` of an ASGI ``http`` scope, its path relative to ``root_path``."""
    path: str = scope.get("path") or "/"
    root: str = scope.get("root_path") or ""
    root = root.rstrip("/")
    if root and (path == root or path.startswith(root + "/")):  # "/api" is not under "/ap"
        path = path[len(root) :] or "/"
    query = bytes(scope.get("query_string") or b"").decode("latin-1")
    headers = [(bytes(name), bytes(value)) for name, value in scope.get("headers") or ()]
    return RequestHead(str(scope.get("method") or "GET"), path, query, headers)


class ASGIExchange:
    """``HTTPExchange`` over one ASGI request's ``receive`` and ``send``.

    ``PeerGone`` when the host reports ``http.disconnect`` while the body is
    read, when writing fails (ASGI: an ``OSError`` on a closed connection),
    or when a write waits longer than ``write_timeout`` (a client that
    stopped reading).
    """

    def __init__(
        self,
        receive: Receive,
        send: Send,
        *,
        read_timeout: float,
        write_timeout: float,
        http2: bool = False,
    ) -> None:
        self._receive = receive
        self._send = send
        self.read_timeout = read_timeout
        self.write_timeout = write_timeout
        self.http2 = http2
        self.body_read = False
        self.disconnected = False
        self.started = False
        self.finished = False
        self.extra_headers: list[tuple[str, str]] = []

    async def _next(self) -> Message:
        message = await self._receive()
        if message.get("type") == "http.disconnect":
            self.disconnected = True
        return message

    async def read_body(self, limit: int, declared: int | None = None) -> bytes:
        if declared is not None and declared > limit:
            raise BodyTooLarge
        if self.body_read:
            return b""
        chunks: list[bytes] = []
        size = 0
        with anyio.move_on_after(self.read_timeout):
            while not self.disconnected:
                message = await self._next()
                if message.get("type") != "http.request":
                    break
                chunk = bytes(message.get("body") or b"")
                size += len(chunk)
                if size > limit:
                    raise BodyTooLarge
                if chunk:
                    chunks.append(chunk)
                if not message.get("more_body", False):
                    self.body_read = True
                    return b"".join(chunks)
            raise PeerGone("the client closed the connection mid-request")
        raise ReadTimeout("the request body did not arrive in time")

    async def _out(self, message: Message) -> None:
        if self.disconnected:
            raise PeerGone("the client went away")
        try:
            with anyio.move_on_after(self.write_timeout) as scope:
                await self._send(message)
        except (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            self.disconnected = True
            raise PeerGone(str(exc) or "the client went away") from exc
        if scope.cancelled_caught:
            raise PeerGone("the client stopped reading")

    def _head(self, status: int, headers: list[tuple[str, str]]) -> Message:
        self.started = True
        if self.extra_headers:
            headers, self.extra_headers = [*headers, *self.extra_headers], []
        return {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (name.lower().encode("latin-1"), value.encode("latin-1"))
                for name, value in headers
                if not (self.http2 and name.lower() in _HOP_BY_HOP)
            ],
        }

    async def start(self, status: int, headers: list[tuple[str, str]], data: bytes = b"") -> None:
        await self._out(self._head(status, headers))
        await self._out({"type": "http.response.body", "body": data, "more_body": True})

    async def write(self, data: bytes) -> None:
        await self._out({"type": "http.response.body", "body": data, "more_body": True})

    async def finish(self, data: bytes = b"") -> None:
        self.finished = True
        await self._out({"type": "http.response.body", "body": data, "more_body": False})

    async def respond(self, status: int, headers: list[tuple[str, str]], body: bytes = b"") -> None:
        await self._out(self._head(status, [*headers, ("content-length", str(len(body)))]))
        self.finished = True
        await self._out({"type": "http.response.body", "body": body, "more_body": False})

    async def respond_text(
        self, status: int, text: str, headers: list[tuple[str, str]] | None = None
    ) -> None:
        await self.respond(status, *text_body(text, headers))

    async def watch_disconnect(self) -> None:
        """Return at ``http.disconnect``; body pieces not read by now are dropped."""
        while not self.disconnected:
            await self._next()

    def on_disconnect(self, callback: Callable[[], None]) -> Callable[[], None] | None:
        return None  # only ``receive`` tells: ``watch_disconnect`` reads it


class ASGIApp:
    """The ASGI 3 application of ``asgi_app`` (see the module docstring).

    ``http_server`` is the ``HTTPServer`` behind it (``stats()`` for
    monitoring). ``running()`` hosts legacy sessions when the ASGI host does
    not run the lifespan protocol for this app.
    """

    def __init__(self, http_server: HTTPServer) -> None:
        self.http_server = http_server
        http_server.unhosted_reason = _NO_LIFESPAN
        self._resolved = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind == "http":
            await self._http(scope, receive, send)
        elif kind == "lifespan":
            await self._lifespan(receive, send)
        else:
            # ASGI: an application raises for a scope type it does not support.
            raise ValueError(f"mcpwire's ASGI app serves HTTP only, not {kind!r} scopes")

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        http_server = self.http_server
        if not self._resolved:
            # "auto" allow-lists follow the address the host is bound to, as
            # serve_http's follow its own (the first request tells which).
            server = scope.get("server")
            http_server.resolve_allow_lists(str(server[0]) if server else None)
            self._resolved = True
        opts = http_server.options
        exchange = ASGIExchange(
            receive,
            send,
            read_timeout=opts.read_timeout,
            write_timeout=opts.write_timeout,
            http2=str(scope.get("http_version", "1.1")) not in ("1.0", "1.1"),
        )
        await http_server.handle(exchange, request_head(scope))

    @asynccontextmanager
    async def running(self) -> AsyncIterator[ASGIApp]:
        """Host legacy sessions and the idle reaper while the body runs, then drain.

        The lifespan protocol does this by itself; enter it by hand only when
        the ASGI host will not (for example, inside the lifespan of a framework
        that this app is mounted in).
        """
        if self.http_server.hosted:
            raise RuntimeError("the ASGI app is already running")
        async with self.http_server.hosting():
            yield self

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        message = await receive()
        if message.get("type") != "lifespan.startup":
            return
        started = False
        try:
            async with self.running():
                started = True
                await send({"type": "lifespan.startup.complete"})
                await receive()  # lifespan.shutdown: leaving drains gracefully
                logger.info("ASGI lifespan shutdown: draining")
        except Exception as exc:
            logger.exception("ASGI lifespan %s failed", "shutdown" if started else "startup")
            failed = "lifespan.shutdown.failed" if started else "lifespan.startup.failed"
            await send({"type": failed, "message": str(exc)})
            return
        await send({"type": "lifespan.shutdown.complete"})


def asgi_app(
    server: Server,
    *,
    path: str = "/mcp",
    allowed_hosts: HostList = "auto",
    allowed_origins: HostList = "auto",
    json_response: bool = False,
    session_idle_timeout: float | None = 30 * 60.0,
    max_sessions: int = 10_000,
    event_store: EventStore | None = None,
    **options: Any,
) -> ASGIApp:
    """An ASGI 3 application serving ``server`` over streamable HTTP at ``path``.

    Takes ``serve_http``'s options (without ``host`` and ``port``, which
    belong to the ASGI host); "auto" allow-lists check ``Host`` against the
    loopback names when the host is bound to a loopback address. Run it with
    ``uvicorn module:app`` or ``hypercorn module:app``; with several workers,
    legacy sessions need affinity (see the module docstring). With ``auth=``,
    give ``ResourceServerAuth(resource=...)``: only the host knows the public URL.
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
    if opts.auth is not None and opts.auth.resource is None:
        raise ValueError("under ASGI, ResourceServerAuth needs resource= (the endpoint's URL)")
    return ASGIApp(HTTPServer(server, opts, event_store=event_store))
