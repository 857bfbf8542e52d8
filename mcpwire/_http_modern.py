"""The modern half of the HTTP endpoint: one self-contained POST per request (2026-07-28).

Theory of operation
-------------------
A modern request carries everything it needs (``params._meta``: version,
client capabilities, client info, log level), so it is served by a
connection of its own, created for the request and gone with it: while its
handler runs it is one of the server's connections (``Server._connected``),
and what the handler sends goes through a ``OneShotTransport`` to the
request's response stream. Nothing is kept between requests (no session, no
``Mcp-Session-Id``, no resumption), so the memory one request costs is
bounded by that request.

Before anything runs, the request is checked the way the reference SDK
orders it (``basic/transports/streamable-http.mdx``, "Required headers"):
the ``_meta`` envelope (-32602), ``MCP-Protocol-Version``/``Mcp-Method``/
``Mcp-Name`` against the body (-32020), the version's type (-32602) and
support (-32022), then a ``tools/call``'s ``Mcp-Param-*`` headers against
the tool's ``x-mcp-header`` properties (-32020). Each is answered as
``application/json`` with HTTP 400; a method the server does not have is the
dispatcher's -32601, HTTP 404.

The response is JSON, or SSE as soon as a related notification (progress, a
log message, a subscription event) comes first. The handler runs with a
``StreamedSession`` standing in for a session: a request is one message and
its answer, so it needs no reader, correlation or deadlines of a session's.
On asyncio's own TCP streams it runs in the connection's task and the
response is written after it (``handler_first``): a pump task starts beside
it only once a frame must go out first (a notification, or the keep-alive
interval passing), and the stream reports the client's hang-up itself. Elsewhere
(trio, TLS, ASGI) it runs in a task of its own beside the pump (``beside``).
A client that closes the response has cancelled the request: the handler's
cancel scope is cancelled. Notifications POSTed to
a modern endpoint are accepted with 202 and dropped: no client->server
notification means anything on this wire.

The common request is answered without any of that machinery. When the
server's ``serve_inline`` predicate says its handler never waits (a
synchronous tool, a list, ``server/discover``: ``Session.serve_inline``) and
it asked for no progress, nothing can happen while it runs: no related
notification can interleave with it, no disconnect can cancel it, and a
stream has nothing to carry but the response. Such a request is dispatched
right in the connection's task, through the same ``Server`` handler and the
same reply shaping as a session's (``Session._reply``), with an
``InlineSession`` standing in for the session, and its response is written
with one ``respond``: no task, no extra cancel scopes, no pass round the
event loop between the request and its response. The bytes are the ones the
streamed path would write; should such a handler send related
notifications after all (a plain function returning an awaitable), they are
kept and the response becomes the SSE stream the streamed path would have sent.
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

import anyio

from ._errors import ConnectionClosed, JSONRPCError
from ._handler_tasks import beside, wait_shielded
from ._http_streams import (
    JSON_HEADERS,
    NO_SERVER_REQUESTS,
    OUTBOX_LIMIT,
    SSE_HEADERS,
    Frame,
    OneShotTransport,
    PumpResult,
    ResponseStream,
    encode_sse,
    pump,
)
from ._http_wire import HTTPExchange, RequestHead
from ._params import check_envelope
from ._server import Connection
from ._session import RequestContext, RequestHandler, Session
from ._transport import Outbound
from ._versions import META_PROTOCOL_VERSION, MODERN_VERSIONS
from .sansio._http import (
    http_status_for_error,
    param_header_mismatch,
    routing_header_mismatch,
    x_mcp_headers,
)
from .sansio._json import JSONObject, JSONValue
from .sansio._messages import (
    Batch,
    ErrorCode,
    ErrorResponse,
    Message,
    Notification,
    Request,
    RequestId,
    Response,
    serialize,
)

if TYPE_CHECKING:
    from ._http_server import HTTPServer
    from ._registry import ToolDef

__all__ = ("InlineSession", "ModernEndpoint")

#: Tools whose ``x-mcp-header`` verdict is kept before the table starts over.
_MAX_TOOLS_SEEN = 4096


async def _answered(request: Request, ctx: RequestContext) -> JSONObject:
    """An ``InlineSession``'s handler once its one request has been answered."""
    raise JSONRPCError(ErrorCode.INTERNAL_ERROR, "this request has been answered")


class _StandIn(abc.ABC):
    """What the stand-ins for ``Session`` share: ``notify`` is ``send`` of a
    notification, and a request to the client fails (the modern era has none)."""

    __slots__ = ()

    @abc.abstractmethod
    async def send(
        self, message: Outbound | list[Message], *, related: RequestId | None = None
    ) -> None:
        """Route ``message`` as the stand-in does (each says where)."""

    async def notify(
        self, method: str, params: JSONObject | None = None, *, related: RequestId | None = None
    ) -> None:
        await self.send(Notification(method, params), related=related)

    async def request(self, method: str, *args: Any, **kwargs: Any) -> JSONObject:
        raise JSONRPCError(ErrorCode.INTERNAL_ERROR, NO_SERVER_REQUESTS)


class InlineSession(_StandIn):
    """What a handler served inline sees as its session (see the module docstring).

    It routes what the handler sends as ``OneShotTransport`` does: related
    notifications are kept as SSE frames (when the client takes SSE), the
    request's own response ends the stream, anything else is dropped, and a
    request to the client fails (the modern era has none). At most
    ``OUTBOX_LIMIT`` frames are kept, the bound of a response stream's queue;
    later notifications are dropped.
    """

    __slots__ = ("dropped", "events", "final", "on_request", "served", "sse_ok")

    closed = False

    def __init__(self, on_request: RequestHandler, request: Request, sse_ok: bool) -> None:
        self.on_request = on_request
        self.served = request
        self.sse_ok = sse_ok
        self.events: list[bytes] = []
        self.final: Response | ErrorResponse | None = None
        self.dropped = 0

    @property
    def transport(self) -> InlineSession:
        """Where ``Context`` looks for transport features (``close_sse_stream``): none."""
        return self

    async def send(
        self, message: Outbound | list[Message], *, related: RequestId | None = None
    ) -> None:
        if isinstance(message, list):
            for item in message:
                await self.send(item, related=related)
            return
        cls = type(message)
        if cls is Response or cls is ErrorResponse:
            if message.id == self.served.id and self.final is None:  # type: ignore[union-attr]
                self.final = message  # type: ignore[assignment]
            else:
                self.dropped += 1
            return
        if cls is Request:
            raise JSONRPCError(ErrorCode.INTERNAL_ERROR, NO_SERVER_REQUESTS)
        if (
            related == self.served.id
            and self.sse_ok
            and self.final is None
            and len(self.events) < OUTBOX_LIMIT
        ):
            self.events.append(encode_sse(message, None))
        else:
            self.dropped += 1


class StreamedSession(_StandIn):
    """What a handler that may wait sees as its session (a stand-in for ``Session``).

    A modern request is one message and its answer, so a handler that may wait
    needs none of a session's machinery (reader, correlation, deadlines), only
    somewhere to send: everything goes through the request's
    ``OneShotTransport``, whose response stream ``exchange`` writes meanwhile
    (related notifications as SSE events, the response last). A request to the
    client fails (``_StandIn``). It is closed once the response ended.
    """

    __slots__ = ("_closed", "on_request", "transport")

    # ``Session._send_quietly`` works on it: it sends through ``transport.send``
    # and, should the codec refuse a reply, calls itself again.
    _start_send = None
    _send_quietly = Session._send_quietly

    def __init__(self, on_request: RequestHandler, transport: OneShotTransport) -> None:
        self.on_request = on_request
        self.transport = transport
        self._closed: ConnectionClosed | None = None

    @property
    def closed(self) -> bool:
        return self._closed is not None

    def close(self) -> None:
        self._closed = ConnectionClosed("the HTTP request ended")

    async def send(
        self, message: Outbound | list[Message], *, related: RequestId | None = None
    ) -> None:
        if self._closed is not None:
            raise self._closed.again()
        await self.transport.send(message, related=related)


class ModernEndpoint:
    """Modern requests behind one ``HTTPServer`` (see the module docstring)."""

    def __init__(self, app: HTTPServer) -> None:
        self.app = app
        #: The connections of the streamed requests in progress.
        self._running: set[Connection] = set()
        #: Never entered, so never cancelled: the scope of handlers served inline.
        self._no_cancel: anyio.CancelScope | None = None
        #: Per tool (by identity): the schema seen and whether it annotates headers.
        self._headers: dict[int, tuple[ToolDef, JSONObject, bool]] = {}

    def stop_listening(self) -> None:
        """End open ``subscriptions/listen`` streams with their final result (shutdown)."""
        for conn in self._running:
            if conn.stop_listening:
                conn.stop_listening.set()

    async def notification(self, http: HTTPExchange, version: str | None) -> None:
        # No client->server notification means anything on this wire: cancelling
        # is closing the response stream. Accept and drop (streamable-http.mdx).
        if version is not None and version not in MODERN_VERSIONS:
            await self.app.json_error(
                http,
                400,
                None,
                ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
                {"supported": self.app.server.supported_versions, "requested": version},
            )
            return
        await http.respond(202, JSON_HEADERS)

    async def other(self, http: HTTPExchange, version: str | None, item: object) -> None:
        """A batch or a response POSTed in the modern era: 400, -32600 (id null).

        2026-07-28 has no JSON-RPC batches (they were 2025-03-26's alone) and no
        server-to-client requests, so no client response (streamable-http.mdx:
        a POST body is exactly one request or notification). An unsupported
        ``MCP-Protocol-Version`` is answered as for any message (-32022).
        """
        if version is not None and version not in MODERN_VERSIONS:
            await self.notification(http, version)  # -32022, as for a notification
            return
        if type(item) is Batch:
            why = (
                "JSON-RPC batches are not part of protocol version 2026-07-28 "
                "(only 2025-03-26 had them): send each message in a POST of its own"
            )
        else:
            why = (
                "a JSON-RPC response has nothing to answer in protocol version 2026-07-28: "
                "its servers send clients no requests"
            )
        await self.app.json_error(http, 400, None, ErrorCode.INVALID_REQUEST, why)

    def _problem(self, req: Request, head: RequestHead) -> tuple[int, str, JSONValue] | None:
        """The JSON-RPC error a modern request earns before dispatch, if any.

        Order as in the reference SDK: envelope (-32602), headers (-32020),
        version type (-32602), supported version (-32022); an unknown method
        is the dispatcher's -32601 (HTTP 404).
        """
        params = req.params or {}
        try:  # in the words of every transport's dispatch (_params)
            meta = check_envelope(params)
        except JSONRPCError as exc:
            return exc.code, exc.message, exc.data
        mismatch = routing_header_mismatch(req.method, params, head.headers, head.duplicated)
        if mismatch is not None:
            return ErrorCode.HEADER_MISMATCH, "Header mismatch: " + mismatch, None
        version = meta[META_PROTOCOL_VERSION]
        if not isinstance(version, str):
            return ErrorCode.INVALID_PARAMS, f"{META_PROTOCOL_VERSION} must be a string", None
        if version not in MODERN_VERSIONS:
            return (
                ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
                {"supported": self.app.server.supported_versions, "requested": version},
            )
        if req.method == "tools/call":
            name = params.get("name")  # a string by now (it matched Mcp-Name), but checked
            tool = self.app.server.tools.get(name) if type(name) is str else None
            arguments = params.get("arguments")
            if (
                tool is not None
                and (arguments is None or isinstance(arguments, dict))
                and self._annotated(tool)
            ):
                mismatch = param_header_mismatch(
                    tool.input_schema, arguments or {}, head.headers, head.duplicated
                )
                if mismatch is not None:
                    return ErrorCode.HEADER_MISMATCH, "Header mismatch: " + mismatch, None
        return None

    async def request(
        self, http: HTTPExchange, head: RequestHead, req: Request, can_json: bool, can_sse: bool
    ) -> None:
        problem = self._problem(req, head)
        if problem is not None:
            code, message, data = problem
            await self.app.json_error(
                http, http_status_for_error(code), req.id, code, message, data
            )
            return
        listen = req.method == "subscriptions/listen"
        if listen and not can_sse:
            # A listen response is a notification stream: it cannot be JSON.
            await http.respond_text(406, "Not Acceptable: subscriptions/listen needs SSE")
            return
        options = self.app.options
        sse_ok = can_sse and (listen or not options.json_response)
        # ``stream_responses`` streams results only: an error's HTTP status tells
        # what it is (SEP-2575), and an event stream is a 200.
        prefer_sse = sse_ok and options.stream_responses
        if self._inline(req):
            await self._answer_inline(
                http, req, sse_ok, force_sse=not can_json, prefer_sse=prefer_sse
            )
            return
        stream = ResponseStream("", req.id, sse_ok=sse_ok, modern=True)
        stream.prefer_sse = prefer_sse
        if not can_json:
            await stream.commit()
        transport = OneShotTransport(req, stream)
        self.app.modern_requests += 1
        server = self.app.server
        conn = Connection(server)
        self._running.add(conn)
        streamed = StreamedSession(functools.partial(server._on_request, conn), transport)
        session = cast(Session, streamed)
        scope = anyio.CancelScope()
        ended = False

        async def run() -> None:
            nonlocal ended
            try:
                with scope:
                    reply = await Session._reply(session, req, RequestContext(session, req, scope))
                    await Session._send_quietly(session, reply)
            finally:
                ended = True
                stream.end(503)

        def stop() -> None:
            streamed.close()
            if not ended:
                scope.cancel()  # the client went away: disconnect is cancellation

        try:
            async with server._connected(conn, session):
                unwatch = http.on_disconnect(stop)
                if unwatch is None:  # trio, TLS, ASGI: a task pumps beside the handler
                    await beside(run, functools.partial(self.app.exchange, http, stream), stop)
                else:
                    try:
                        keepalive = self.app.options.sse_keepalive
                        await handler_first(run, stop, http, stream, keepalive=keepalive)
                    finally:
                        unwatch()
                        streamed.close()
        finally:
            self._running.discard(conn)

    def _annotated(self, tool: ToolDef) -> bool:
        """Whether ``tool``'s input schema has ``x-mcp-header`` properties (else no
        ``Mcp-Param-*`` check is needed). Found once per tool: like its compiled
        validator, a registered tool's schema is taken as fixed."""
        found = self._headers.get(id(tool))
        if found is None or found[0] is not tool or found[1] is not tool.input_schema:
            if len(self._headers) >= _MAX_TOOLS_SEEN:
                self._headers.clear()
            found = (tool, tool.input_schema, bool(x_mcp_headers(tool.input_schema)))
            self._headers[id(tool)] = found
        return found[2]

    def _inline(self, req: Request) -> bool:
        """Whether ``req`` is answered in the connection's task (see the module docstring)."""
        if not self.app.server._serve_inline(req):
            return False
        params = req.params
        meta = params.get("_meta") if params is not None else None
        return not (isinstance(meta, dict) and "progressToken" in meta)

    async def _answer_inline(
        self,
        http: HTTPExchange,
        req: Request,
        sse_ok: bool,
        *,
        force_sse: bool,
        prefer_sse: bool = False,
    ) -> None:
        server = self.app.server
        self.app.modern_requests += 1
        conn = Connection(server)
        inline = InlineSession(functools.partial(server._on_request, conn), req, sse_ok)
        session = cast(Session, inline)
        conn.session = session
        if self._no_cancel is None:
            self._no_cancel = anyio.CancelScope()
        # The reply exactly as a session shapes it: the result, the handler's
        # JSONRPCError, or -32603 for anything else (logged).
        try:
            reply = await Session._reply(
                session, req, RequestContext(session, req, self._no_cancel)
            )
        finally:
            # The connection and its session refer to each other: undone here,
            # they go as soon as the request does, not at the next collection.
            inline.on_request = _answered
        final = inline.final or reply
        if not inline.events and not force_sse and not (prefer_sse and type(final) is Response):
            status = 200
            if type(final) is ErrorResponse:
                status = http_status_for_error(final.error.code)
            await http.respond(status, JSON_HEADERS, serialize(final))
            return
        inline.events.append(encode_sse(final, None))
        await http.start(200, SSE_HEADERS, b"".join(inline.events))
        await http.finish()


async def handler_first(
    run: Callable[[], Awaitable[None]],
    stop: Callable[[], None],
    http: HTTPExchange,
    stream: ResponseStream,
    *,
    keepalive: float,
) -> PumpResult:
    """On asyncio: await ``run()``, a request's handler sending to ``stream``, in
    this task, then write the response; a pump task writes beside the handler
    only once something must go out before the handler ends.

    That is a frame queued that does not end the response (a progress
    notification, a log message: the response becomes an event stream), or
    ``keepalive`` seconds with nothing queued (the pump then switches to SSE and
    sends its keep-alive comment, as ``pump`` would have by then). A handler
    that answers without either, the usual case, costs no task and no pump
    waiting beside it. As with ``beside``, ``stop`` (which must end ``run``
    soon) is called once that pump has ended: the client gone or not reading.
    The caller watches for the client going away meanwhile (``on_disconnect``).
    """
    import asyncio

    loop = asyncio.get_running_loop()
    outbox = stream.outbox
    pumping: asyncio.Task[PumpResult] | None = None

    async def pump_then_stop(first_wait: float | None) -> PumpResult:
        try:
            return await pump(http, stream, keepalive=keepalive, first_wait=first_wait)
        finally:
            stop()

    def start(first_wait: float | None) -> None:
        nonlocal pumping
        if pumping is None:
            timer.cancel()
            if outbox is not None:
                outbox.on_put = None
            pumping = loop.create_task(pump_then_stop(first_wait))

    def queued(frame: Frame) -> None:
        if not frame.final and frame.kind != "end":
            start(None)

    timer = loop.call_later(keepalive, start, 0.0)
    if outbox is not None:
        outbox.on_put = queued
    try:
        await run()
    except BaseException:
        if pumping is not None:
            pumping.cancel()
            await wait_shielded((pumping,))
        raise
    finally:
        timer.cancel()
        if outbox is not None:
            outbox.on_put = None
    if pumping is None:
        return await pump(http, stream, keepalive=keepalive)
    try:
        return await pumping  # cancelling this task cancels the pump task with it
    finally:
        if not pumping.done():
            await wait_shielded((pumping,))
