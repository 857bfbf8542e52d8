"""Legacy streamable-HTTP sessions (2025-03-26 ... 2025-11-25): state, routing, table.

Theory of operation
-------------------
A legacy session is one ``Server.serve(transport)`` connection, exactly like
a stdio connection, whose ``SessionTransport`` is fed by many HTTP requests
instead of one pipe. Inbound, every POSTed message is queued for the
session's reader (bounded, so a flood of POSTs waits instead of piling up).
Outbound, ``send()`` routes each message to the HTTP response that should
carry it (transports.mdx, "Multiple Connections": every message goes out on
exactly one stream):

* a response -> the stream of the POST that carried its request;
* a notification or server->client request with ``related=<id>`` -> that
  POST's stream, turning it into SSE (elicitation asks during a tool call,
  progress, logs);
* anything else -> the standalone GET stream (stream ``"0"``), which is
  recorded for ``Last-Event-ID`` replay even while no GET is open. A
  server->client request with nowhere to go fails at once rather than
  waiting out its timeout.

Sessions live in a ``SessionTable`` (pain point 12): a session is added only
once its ``initialize`` succeeded, ``DELETE`` removes it at once, sessions
idle (no open request or stream) for ``idle_timeout`` seconds are ended by
the server's reaper, and at ``max_sessions`` a new ``initialize`` evicts the
least recently used idle session, or is refused with 503 when every session
is busy. Ids are 32 bytes from ``os.urandom`` in URL-safe base64: 43 visible ASCII characters,
256 bits of randomness.
"""

from __future__ import annotations

import collections
import os
from collections.abc import Awaitable, Callable, Iterator

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ._errors import ConnectionClosed, JSONRPCError
from ._http_events import EventStore
from ._http_streams import ResponseStream
from ._transport import Outbound
from ._versions import at_least
from .sansio._b64url import b64url_encode
from .sansio._http import MCP_SESSION_ID
from .sansio._messages import (
    ErrorCode,
    ErrorResponse,
    Incoming,
    Message,
    Request,
    RequestId,
    Response,
    error_response,
)

__all__ = ("HTTPSession", "Inbox", "SessionTable", "SessionTransport", "new_session_id")

#: POSTed messages queued for a session's reader before the next POST waits.
INBOUND_BUFFER = 64
#: Streams with SSE ids kept per session for resumption (oldest dropped first).
MAX_KEPT_STREAMS = 32
STANDALONE = "0"


def new_session_id() -> str:
    """A fresh session id: visible ASCII (0x21-0x7E), cryptographically random."""
    # What secrets.token_urlsafe(32) gives, without importing secrets (and hashlib, hmac):
    # about 0.8 MB less in an idle server.
    return b64url_encode(os.urandom(32))


class HTTPSession:
    """One legacy session: its transport, its open streams, its bookkeeping."""

    def __init__(self, store: EventStore, *, retry_ms: int) -> None:
        self.id = new_session_id()
        self.store = store
        self.retry_ms = retry_ms
        self.version: str | None = None
        self.registered = False
        self.closed = False
        #: HTTP exchanges in progress (POSTs being answered, the GET stream).
        self.active = 0
        self.last_used = anyio.current_time()
        self.dropped = 0
        self.next_stream = 1
        #: Open POST streams by the JSON-RPC id of the request they answer.
        self.streams: dict[RequestId, ResponseStream] = {}
        #: Streams that have given out SSE ids, by stream id (resumable).
        self.kept: collections.OrderedDict[str, ResponseStream] = collections.OrderedDict()
        self.standalone = ResponseStream(STANDALONE, None, sse_ok=True, owner=self)
        self.standalone.sse = True
        self.standalone.detach()
        self.headers: list[tuple[str, str]] = [(MCP_SESSION_ID, self.id)]
        self.transport = SessionTransport(self)
        self.scope: anyio.CancelScope | None = None
        #: Called when the session's initialize succeeded (registers it).
        self.on_ready: Callable[[HTTPSession], None] | None = None
        #: Counted in ``SessionTable.pending`` until registered or discarded.
        self.reserved = False
        #: The access token it was started with, and its owner (``_http_auth``).
        from ._auth_tokens import current_cell  # loaded only where auth is used

        self.auth = current_cell()

    @property
    def priming(self) -> bool:
        """Whether SSE streams open with a priming event (2025-11-25 and later)."""
        return self.version is not None and at_least(self.version, "2025-11-25")

    def touch(self) -> None:
        self.last_used = anyio.current_time()

    async def record(self, stream: ResponseStream, message: Message | None) -> str:
        return await self.store.store(self.id, stream.id, message)

    async def keep(self, stream: ResponseStream) -> None:
        if stream.id == STANDALONE:
            return
        self.kept[stream.id] = stream
        while len(self.kept) > MAX_KEPT_STREAMS:
            old_id, _ = self.kept.popitem(last=False)
            await self.store.forget(self.id, old_id)

    async def forget(self, stream: ResponseStream) -> None:
        """The stream was delivered in full (or abandoned): drop what it recorded."""
        if self.kept.pop(stream.id, None) is not None:
            await self.store.forget(self.id, stream.id)

    def open_stream(self, request_id: RequestId, sse_ok: bool) -> ResponseStream:
        stream = ResponseStream(str(self.next_stream), request_id, sse_ok=sse_ok, owner=self)
        stream.headers = self.headers
        self.next_stream += 1
        self.streams[request_id] = stream
        return stream

    async def feed(self, item: Incoming) -> bool:
        """Hand a POSTed message to the session's reader; False if the session ended."""
        return await self.transport.feed(item)

    async def wound_down(self) -> None:
        """The session's connection ended: answer what is still open, drop what is kept."""
        self.closed = True
        for stream in list(self.streams.values()):
            if not stream.finished and stream.request_id is not None:
                await stream.final(
                    error_response(
                        stream.request_id,
                        ErrorCode.INTERNAL_ERROR,
                        "the session ended before the request completed",
                    )
                )
        self.streams.clear()
        self.standalone.end()
        self.kept.clear()
        await self.store.forget(self.id)


class Inbox:
    """The receiving half of a server-side HTTP transport: POST handlers ``feed``
    parsed messages in (bounded: a full inbox makes them wait), the session's
    reader ``receive``s them, ``end_input`` ends the connection.

    ``idle`` says that the reader waits for the next message with nothing
    queued and nothing in hand: a message handed over now is the next one it
    would take, so a request that never waits may then be served at once in
    the POST's own task (``deliver``, given by the session through ``attach``)
    without changing the order in which the session sees its messages, and any
    other request may get its handler's task from the POST's task (``start``,
    given through ``attach_start``) as the reader would give it.
    """

    def __init__(self, size: int = INBOUND_BUFFER) -> None:
        send, receive = anyio.create_memory_object_stream[Incoming](size)
        self._in: MemoryObjectSendStream[Incoming] = send
        self._out: MemoryObjectReceiveStream[Incoming] = receive
        #: The session's entry point for a message served in the caller's task.
        self.deliver: Callable[[object], Awaitable[None]] | None = None
        #: Messages being served through ``deliver`` right now.
        self.delivering = 0
        #: The session's way to start a request's handler task now (False: it
        #: cannot, and the request goes to the reader).
        self.start: Callable[[Request], bool] | None = None

    def attach(self, deliver: Callable[[object], Awaitable[None]]) -> None:
        """Called by the session on start (``Session.__aenter__``)."""
        self.deliver = deliver

    def attach_start(self, start: Callable[[Request], bool]) -> None:
        """Called by the session on start, after ``attach``."""
        self.start = start

    @property
    def idle(self) -> bool:
        # A reader parked in receive() with an empty buffer: a message sent to
        # it would be handed straight over (and then it no longer counts as
        # waiting, so a second message is never thought to be the next one).
        if self.deliver is None or self.delivering:
            return False
        stats = self._out.statistics()
        return stats.tasks_waiting_receive > 0 and stats.current_buffer_used == 0

    async def feed(self, item: Incoming) -> bool:
        try:
            await self._in.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return False
        return True

    def end_input(self) -> None:
        """No more messages: the session's reader sees end of input and shuts down."""
        self._in.close()

    async def receive(self) -> Incoming:
        try:
            return await self._out.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise anyio.EndOfStream from None


class SessionTransport(Inbox):
    """The ``Transport`` of one legacy session (see the module docstring)."""

    def __init__(self, session: HTTPSession) -> None:
        super().__init__()
        self.session = session

    @property
    def can_ask(self) -> bool:
        """Whether a request the server makes outside any of the client's can reach
        the client now: only on the GET stream, so only while it is open."""
        return self.session.standalone.attached

    async def send(self, message: Outbound, *, related: RequestId | None = None) -> None:
        if isinstance(message, list):
            for item in message:
                await self.send(item, related=related)
            return
        session = self.session
        cls = type(message)
        if cls is Response or cls is ErrorResponse:
            rid = message.id  # type: ignore[union-attr]
            stream = session.streams.pop(rid, None) if rid is not None else None
            if stream is None:
                session.dropped += 1
                return
            if cls is Response and not session.registered and session.on_ready is not None:
                result = message.result  # type: ignore[union-attr]
                version = result.get("protocolVersion")
                session.version = version if isinstance(version, str) else None
                session.on_ready(session)
                stream.headers = session.headers
            await stream.final(message)  # type: ignore[arg-type]
            return
        stream = session.streams.get(related) if related is not None else None
        if stream is not None and stream.sse_ok and not stream.finished:
            await stream.event(message)
            return
        standalone = session.standalone
        if cls is Request and not standalone.attached:
            raise JSONRPCError(
                ErrorCode.INTERNAL_ERROR,
                "no open stream to the client can carry this request "
                "(it needs an SSE response or the session's GET stream)",
            )
        await standalone.event(message)
        if not standalone.attached:
            session.dropped += 1

    async def close_sse_stream(self, request_id: RequestId) -> bool:
        """Hang up on the client's SSE stream for ``request_id``; it resumes with GET.

        The 2025-11-25 polling pattern (SEP-1699): the server may close a
        request's stream after an event with an id and keep working; the
        client reconnects after ``retry`` ms with ``Last-Event-ID`` and gets
        what it missed. False when the request has no such stream.
        """
        stream = self.session.streams.get(request_id)
        if stream is None:
            return False
        return await stream.close_sse(self.session.retry_ms)

    async def aclose(self) -> None:
        self._in.close()
        self._out.close()

    def close_error(self) -> ConnectionClosed:
        return ConnectionClosed("the HTTP session ended")


class SessionTable:
    """The live legacy sessions, least recently used first (see the module docstring)."""

    def __init__(self, max_sessions: int, idle_timeout: float | None) -> None:
        if max_sessions < 1:
            raise ValueError("max_sessions must be at least 1")
        self.max_sessions = max_sessions
        self.idle_timeout = idle_timeout
        self._sessions: collections.OrderedDict[str, HTTPSession] = collections.OrderedDict()
        #: Sessions whose initialize is in progress (they count against the limit).
        self.pending = 0
        self.created = 0
        self.evicted = 0
        self.expired_count = 0

    def __len__(self) -> int:
        return len(self._sessions)

    def __iter__(self) -> Iterator[HTTPSession]:
        return iter(list(self._sessions.values()))

    @property
    def full(self) -> bool:
        return len(self._sessions) + self.pending >= self.max_sessions

    def get(self, session_id: str) -> HTTPSession | None:
        session = self._sessions.get(session_id)
        if session is not None:
            self._sessions.move_to_end(session_id)
        return session

    def reserve(self, session: HTTPSession) -> None:
        """Count a session whose initialize is in progress against the limit."""
        session.reserved = True
        self.pending += 1
        self.created += 1

    def add(self, session: HTTPSession) -> None:
        """Register a session whose initialize succeeded."""
        if session.reserved:
            session.reserved = False
            self.pending -= 1
        session.registered = True
        self._sessions[session.id] = session

    def discard(self, session: HTTPSession) -> None:
        """Forget a session (idempotent); later requests naming it get 404."""
        if session.reserved:
            session.reserved = False
            self.pending -= 1
        self._sessions.pop(session.id, None)

    def lru_idle(self) -> HTTPSession | None:
        """The least recently used session with nothing in progress, if any."""
        for session in self._sessions.values():
            if session.active == 0:
                return session
        return None

    def expired(self, now: float) -> list[HTTPSession]:
        if self.idle_timeout is None:
            return []
        limit = now - self.idle_timeout
        return [s for s in self._sessions.values() if s.active == 0 and s.last_used < limit]
