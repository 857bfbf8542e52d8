"""The legacy half of the HTTP endpoint: sessions, POST, GET, DELETE (2025-03-26 ... 2025-11-25).

Theory of operation
-------------------
``initialize`` starts a session: a ``Server.serve`` connection run as a task
of the HTTP server over a ``SessionTransport`` (``_http_sessions``). The
session joins the table, and its id goes out in ``Mcp-Session-Id``, only when
the initialize *succeeded* (pain point 12); an ``initialize`` that still
carries an old, unknown id is served like any other (pain point 9). Every
later message names the session:

* no ``Mcp-Session-Id`` -> 400; an unknown or ended session -> 404 (the client
  must initialize again); an ``MCP-Protocol-Version`` that is not a supported
  legacy version -> 400 (transports.mdx, "Protocol Version Header");
* a request -> its own ``ResponseStream``: JSON, or SSE once a related
  notification or server->client request comes first; a client that hangs
  up does *not* cancel the request (transports.mdx: "disconnection SHOULD
  NOT be interpreted as the client cancelling"), and the rest of an SSE
  stream stays recorded for a ``Last-Event-ID`` resume. A request whose
  handler never waits, sent while the session's reader is idle, is served
  in the POST's own task (the order the session sees its messages in is the
  same), and its JSON answer written at once, in one write; any other request
  sent then gets its handler's task from the POST's task, as the reader would
  start it;
* notifications and responses (answers to our elicitation, sampling and roots
  requests) -> 202; ``notifications/cancelled`` also ends the POST stream of
  the request it names, which will get no response;
* a batch (2025-03-26 only) -> 202 if it holds no request, else one JSON array.

``GET`` opens the session's standalone stream (one at a time: 409 for a
second), or resumes a stream after ``Last-Event-ID``: the id names its
stream, replay covers that stream only, and an id the session's event store
cannot replay from is refused with 410 Gone: an id of a stream the session
does not keep, one that stream never gave out, or one older than what the
store still holds (a message after it was dropped from the replay window).
A stream with a hole would lose messages silently; 410 tells the client they
are gone, so it can recover. ``DELETE`` ends the session at once. GET and
DELETE with a 2026-07-28 ``MCP-Protocol-Version`` get 405: the modern
protocol has neither.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio

from ._http_sessions import STANDALONE, HTTPSession, SessionTable
from ._http_streams import JSON_HEADERS, SSE_HEADERS, PumpResult, ResponseStream, encode_sse
from ._http_wire import BodyTooLarge, HTTPExchange, PeerGone, RequestHead
from ._versions import LEGACY_VERSIONS, MODERN_VERSIONS
from .sansio._http import LAST_EVENT_ID, MCP_PROTOCOL_VERSION, MCP_SESSION_ID, accepts
from .sansio._messages import (
    Batch,
    ErrorCode,
    ErrorResponse,
    Invalid,
    Notification,
    Request,
    Response,
    error_response,
    is_request_id,
    serialize,
)

if TYPE_CHECKING:
    from ._http_server import HTTPServer

__all__ = ("LegacyEndpoint",)

logger = logging.getLogger("mcpwire.http")

_BATCH_VERSION = "2025-03-26"


class LegacyEndpoint:
    """Legacy sessions behind one ``HTTPServer`` (see the module docstring)."""

    def __init__(self, app: HTTPServer) -> None:
        self.app = app
        opts = app.options
        self.table = SessionTable(opts.max_sessions, opts.session_idle_timeout)

    # -- sessions ------------------------------------------------------------------------

    def _new_session(self) -> HTTPSession | None:
        table = self.table
        if table.full:
            victim = table.lru_idle()
            if victim is None:
                return None
            table.evicted += 1
            logger.info("evicting idle session %s... (max_sessions reached)", victim.id[:8])
            self.terminate(victim)
        opts = self.app.options
        session = HTTPSession(self.app.event_store, retry_ms=opts.retry_ms)
        session.on_ready = table.add
        table.reserve(session)
        session.scope = self.app.spawn(self._run, session)
        return session

    async def _run(self, session: HTTPSession) -> None:
        try:
            await self.app.server.serve(session.transport)
        finally:
            with anyio.CancelScope(shield=True):
                self.table.discard(session)
                await session.wound_down()

    def terminate(self, session: HTTPSession) -> None:
        """End a session now: later requests naming it get 404."""
        self.table.discard(session)
        session.closed = True
        session.transport.end_input()

    async def _session_for(
        self, http: HTTPExchange, head: RequestHead, *, touch: bool = True
    ) -> HTTPSession | None:
        """The live session a message names (answering the client if there is none).

        ``touch``: mark the session used now (a request's ``_answer`` does so
        itself when it is done, which is the time that counts for idleness).
        """
        sid = head.headers.get(MCP_SESSION_ID)
        if sid is None:
            await self.app.json_error(
                http,
                400,
                None,
                ErrorCode.INVALID_REQUEST,
                "Bad Request: an Mcp-Session-Id header is required (send initialize first)",
            )
            return None
        session = self.table.get(sid)
        if session is None or session.closed:
            await self.app.json_error(
                http, 404, None, ErrorCode.INVALID_REQUEST, "Session not found"
            )
            return None
        # "invalid or unsupported" -> 400 (transports.mdx, "Protocol Version Header").
        # A supported legacy version other than the negotiated one is tolerated:
        # clients in the field send their own default on some requests.
        version = head.headers.get(MCP_PROTOCOL_VERSION)
        if version is not None and version not in LEGACY_VERSIONS:
            await self.app.json_error(
                http,
                400,
                None,
                ErrorCode.INVALID_REQUEST,
                f"Bad Request: unsupported MCP-Protocol-Version {version!r} "
                f"(this session speaks {session.version})",
            )
            return None
        if touch:
            session.touch()
        return session

    # -- POST -------------------------------------------------------------------------------

    async def request(
        self, http: HTTPExchange, head: RequestHead, req: Request, can_json: bool, can_sse: bool
    ) -> None:
        if req.method == "initialize":
            await self._initialize(http, req, can_json)
            return
        session = await self._session_for(http, head, touch=False)
        if session is None:
            return
        if req.id in session.streams:
            session.touch()
            await self.app.json_error(
                http,
                400,
                req.id,
                ErrorCode.INVALID_REQUEST,
                f"request id {req.id!r} is already in use by a request in progress",
            )
            return
        options = self.app.options
        sse_ok = can_sse and not options.json_response
        stream = session.open_stream(req.id, sse_ok or not can_json)
        force_sse = not can_json or (sse_ok and options.stream_responses)
        await self._answer(http, session, stream, req, force_sse=force_sse)

    async def _initialize(self, http: HTTPExchange, req: Request, can_json: bool) -> None:
        if not self.app.hosted:
            # A session outlives the request that starts it, so it needs a task
            # group that does too (under ASGI: the lifespan protocol).
            await self.app.json_error(
                http,
                500,
                req.id,
                ErrorCode.INTERNAL_ERROR,
                "Legacy sessions are unavailable: " + self.app.unhosted_reason,
            )
            return
        session = self._new_session()
        if session is None:
            await self.app.json_error(
                http,
                503,
                req.id,
                ErrorCode.INTERNAL_ERROR,
                "Too many open sessions",
                headers=[("retry-after", "1")],
            )
            return
        # JSON unless the client takes only SSE: the session id must be in the
        # response's headers, which are sent once the result is known.
        stream = session.open_stream(req.id, not can_json)
        stream.headers = []
        await self._answer(http, session, stream, req, force_sse=not can_json)
        if not session.registered:
            self.terminate(session)  # the initialize failed: no session was created

    async def _answer(
        self,
        http: HTTPExchange,
        session: HTTPSession,
        stream: ResponseStream,
        req: Request,
        *,
        force_sse: bool,
    ) -> None:
        outbox = stream.outbox
        session.active += 1
        result: PumpResult = "gone"
        try:
            if force_sse:
                await stream.commit()
            transport = session.transport
            deliver = transport.deliver
            idle = transport.idle  # the reader waits with nothing queued (``Inbox.idle``)
            if idle and deliver is not None and self._direct(req):
                # Served here and now, as the session's reader would serve it
                # next (see ``Inbox.idle``): its answer is usually all that the
                # stream holds when this returns, and goes out in one write.
                transport.delivering += 1
                try:
                    await deliver(req)
                finally:
                    transport.delivering -= 1
                frame = outbox.take_json() if outbox is not None else None
                if frame is not None:
                    try:
                        await http.respond(
                            frame.status, [*JSON_HEADERS, *stream.headers], frame.data
                        )
                        result = "done"
                    except PeerGone:
                        pass
                    return
            elif idle and transport.start is not None and transport.start(req):
                # Its handler's task started here, as the idle reader would start
                # it next: no pass through the inbox and the reader task.
                pass
            elif not await session.feed(req):
                session.streams.pop(req.id, None)
                await self.app.json_error(
                    http, 404, None, ErrorCode.INVALID_REQUEST, "Session not found"
                )
                return
            result = await self.app.exchange(http, stream)
        finally:
            session.active -= 1
            session.touch()
            if result == "gone":
                stream.detach(outbox)  # keeps recording for a Last-Event-ID resume
        if result != "gone" and stream.sse:
            await session.forget(stream)  # delivered (or cancelled): nothing to resume

    def _direct(self, req: Request) -> bool:
        """A request that never waits and wants no progress (see ``_answer``)."""
        if not self.app.server._serve_inline(req):
            return False
        params = req.params
        meta = params.get("_meta") if params is not None else None
        return not (isinstance(meta, dict) and "progressToken" in meta)

    async def notification(self, http: HTTPExchange, head: RequestHead, note: Notification) -> None:
        session = await self._session_for(http, head)
        if session is None:
            return
        if not await session.feed(note):
            await self.app.json_error(
                http, 404, None, ErrorCode.INVALID_REQUEST, "Session not found"
            )
            return
        if note.method == "notifications/cancelled" and note.params is not None:
            rid = note.params.get("requestId")
            stream = session.streams.pop(rid, None) if is_request_id(rid) else None  # type: ignore[arg-type]
            if stream is not None:
                stream.end(202)  # the request gets no response (cancellation.mdx)
        await http.respond(202, [("content-type", "application/json")])

    async def other(
        self,
        http: HTTPExchange,
        head: RequestHead,
        item: Response | ErrorResponse | Batch | Invalid,
    ) -> None:
        """A POSTed answer (or batch) for the session; a malformed answer reaches the
        session too (which fails a request it names), and the client gets a 400."""
        session = await self._session_for(http, head)
        if session is None:
            return
        if type(item) is Batch:
            await self._batch(http, session, item)
            return
        if not await session.feed(item):
            await self.app.json_error(
                http, 404, None, ErrorCode.INVALID_REQUEST, "Session not found"
            )
            return
        if type(item) is Invalid:
            await self.app.json_error(http, 400, None, item.error.code, item.error.message)
            return
        await http.respond(202, [("content-type", "application/json")])

    async def _batch(self, http: HTTPExchange, session: HTTPSession, batch: Batch) -> None:
        if session.version != _BATCH_VERSION:
            await self.app.json_error(
                http,
                400,
                None,
                ErrorCode.INVALID_REQUEST,
                f"JSON-RPC batches are only allowed in protocol version {_BATCH_VERSION}",
            )
            return
        replies: list[bytes] = []
        streams: list[ResponseStream] = []
        session.active += 1
        try:
            for item in batch.items:
                cls = type(item)
                if cls is Invalid:
                    invalid: Invalid = item  # type: ignore[assignment]
                    if invalid.reply:
                        replies.append(serialize(invalid.response()))
                    else:
                        await session.feed(invalid)  # a malformed answer: the session judges
                elif cls is Request:
                    req: Request = item  # type: ignore[assignment]
                    problem = None
                    if req.method == "initialize":
                        problem = "initialize must not be part of a JSON-RPC batch"
                    elif req.id in session.streams:
                        problem = f"request id {req.id!r} is already in use"
                    if problem is not None:
                        replies.append(
                            serialize(error_response(req.id, ErrorCode.INVALID_REQUEST, problem))
                        )
                        continue
                    # JSON only: related messages go to the GET stream.
                    streams.append(session.open_stream(req.id, False))
                    await session.feed(req)
                else:
                    await session.feed(item)
            for stream in streams:
                if stream.outbox is not None:
                    frame = await stream.outbox.get()
                    if frame.kind == "json":
                        replies.append(frame.data)
        finally:
            session.active -= 1
        if not streams and not replies:
            await http.respond(202, [("content-type", "application/json")])
            return
        body = b"[" + b",".join(replies) + b"]"
        status = 200 if streams else 400
        await http.respond(status, [("content-type", "application/json"), *session.headers], body)

    # -- GET and DELETE -------------------------------------------------------------------------

    async def _preamble(self, http: HTTPExchange, head: RequestHead) -> HTTPSession | None:
        """What GET and DELETE share: no body, legacy only, a live session."""
        try:
            await http.read_body(4096)
        except BodyTooLarge:
            await http.respond_text(413, "Content Too Large", [("connection", "close")])
            return None
        if head.headers.get(MCP_PROTOCOL_VERSION) in MODERN_VERSIONS:
            # 2026-07-28 has no GET stream and no sessions (streamable-http.mdx).
            await http.respond_text(405, "Method Not Allowed", [("allow", "POST")])
            return None
        if head.method == "GET" and not accepts(head.headers.get("accept"), "text/event-stream"):
            await http.respond_text(406, "Not Acceptable: the GET stream is text/event-stream")
            return None
        return await self._session_for(http, head)

    async def delete(self, http: HTTPExchange, head: RequestHead) -> None:
        session = await self._preamble(http, head)
        if session is None:
            return
        self.terminate(session)
        await http.respond(200, [])

    async def get(self, http: HTTPExchange, head: RequestHead) -> None:
        session = await self._preamble(http, head)
        if session is None:
            return
        last = head.headers.get(LAST_EVENT_ID)
        stream = session.standalone
        if last:
            stream_id = last.partition(":")[0]
            if stream_id != STANDALONE:
                target = session.kept.get(stream_id)
                if target is None:
                    await http.respond_text(410, "Gone: this session has no such event stream")
                    return
                await self._stream_out(http, session, target, last)
                return
        if stream.attached or stream.finished:
            await http.respond_text(409, "Conflict: the session's GET stream is already open")
            return
        await self._stream_out(http, session, stream, last)

    async def _stream_out(
        self, http: HTTPExchange, session: HTTPSession, stream: ResponseStream, last: str | None
    ) -> None:
        """Serve ``stream`` on a GET: replay after ``last``, then follow it live."""
        store = self.app.event_store
        session.active += 1
        outbox = None
        try:
            async with stream.lock:
                # Under the stream's lock no event can be recorded between the
                # replay and the attach: nothing is lost and nothing comes twice.
                replay = await store.replay_after(session.id, last) if last else None
                gone = bool(last) and replay is None
                missed = replay[1] if replay is not None else []
                finished = stream.finished
                priming = None
                if not gone:
                    outbox = stream.attach()
                    if not missed and not finished and session.priming:
                        from .sansio._sse import encode_priming

                        event_id = await session.record(stream, None)
                        priming = encode_priming(event_id, retry=session.retry_ms)
            if gone:
                await http.respond_text(410, "Gone: the events after Last-Event-ID are not kept")
                return
            # The head, the priming event and the replay go out in one write.
            pieces = [priming] if priming is not None else []
            pieces.extend(encode_sse(message, event_id) for event_id, message in missed)
            await http.start(200, [*SSE_HEADERS, *session.headers], b"".join(pieces))
            if finished:
                await http.finish()
                result: PumpResult = "done"
            else:
                result = await self.app.exchange(http, stream, started=True)
            if result == "done" and stream.id != STANDALONE:
                await session.forget(stream)
        except PeerGone:
            pass
        finally:
            if outbox is not None:  # detach(None) would let go of another GET's outbox
                stream.detach(outbox)
            session.active -= 1
            session.touch()
