"""Per-response streams of the HTTP server: JSON or SSE, decided as messages arrive.

Theory of operation
-------------------
Each POST that carries a request gets a ``ResponseStream``; so does a
session's standalone GET stream. Producers (the session's handler tasks,
through the transports) call ``event()`` for a notification or server->client
request that belongs to the request, and ``final()`` for its response. The
one consumer, the task that owns the HTTP connection, runs ``pump()``, which
turns what the producers queued into bytes on the socket.

JSON or SSE is decided by order of arrival (pain point 13): if the response
comes first, it goes out as one ``application/json`` body (a modern error
with the status its code calls for); as soon as anything related comes
first, the stream commits to ``text/event-stream`` (with ``Cache-Control:
no-cache`` and ``X-Accel-Buffering: no``, pain point 25) and the response
ends it. While nothing arrives, ``pump()`` commits anyway after
``keepalive`` seconds when the client accepts SSE, and then writes a comment
line every ``keepalive`` seconds, so that proxies with idle timeouts keep the
connection open during a long tool call.

Frames already queued when the pump wakes go out together, the first with
the response's head and the last with its end: one write where the stream
has everything at hand.

Producers never wait for the network: frames go into a bounded ``Outbox``
whose overflow (a client that stopped reading) ends the response. In a legacy
session each SSE frame is first recorded in the session's ``EventStore`` and
carries the id the store gave it, a priming event (id, empty data, ``retry``)
opens the stream for 2025-11-25 sessions, and a lock per stream keeps ids and
frames in the same order; in the modern era there are no ids and nothing is
kept. A stream whose client went away is *detached*: in a legacy session
what it produces is still recorded for a ``Last-Event-ID`` resume; in the
modern era disconnect means cancellation (``_http_modern``).
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

import anyio

from ._errors import JSONRPCError
from ._http_wire import HTTPExchange, PeerGone
from ._loops import running_asyncio_loop
from ._transport import Outbound
from .sansio._http import http_status_for_error
from .sansio._messages import (
    ErrorCode,
    ErrorResponse,
    Message,
    Request,
    RequestId,
    Response,
    serialize,
)

if TYPE_CHECKING:
    import asyncio

    from ._http_sessions import HTTPSession

__all__ = (
    "JSON_HEADERS",
    "NO_SERVER_REQUESTS",
    "SSE_HEADERS",
    "Frame",
    "OneShotTransport",
    "Outbox",
    "PumpResult",
    "ResponseStream",
    "encode_sse",
    "pump",
    "pump_watched",
)

#: Why a modern request's handler cannot send a request to the client.
NO_SERVER_REQUESTS = (
    "the 2026-07-28 protocol has no server-to-client requests (ask through an InputRequiredResult)"
)
#: Frames queued for one response before its client counts as not reading.
OUTBOX_LIMIT = 1024

SSE_HEADERS: list[tuple[str, str]] = [
    ("content-type", "text/event-stream"),
    ("cache-control", "no-cache"),
    ("x-accel-buffering", "no"),
]
JSON_HEADERS: list[tuple[str, str]] = [("content-type", "application/json")]

PumpResult = Literal["done", "ended", "gone"]


class Frame:
    """One item of an outbox: SSE bytes, a JSON response, or the end of the response."""

    __slots__ = ("data", "final", "kind", "status")

    def __init__(self, kind: str, data: bytes = b"", *, final: bool = False, status: int = 200):
        self.kind = kind  # "sse", "json", "end", "close" or "overflow"
        self.data = data
        self.final = final
        self.status = status


class Outbox:
    """A bounded queue of frames with one waiting consumer; ``put`` never blocks."""

    __slots__ = ("_items", "_waiter", "_wakeup", "limit", "on_put")

    def __init__(self, limit: int = OUTBOX_LIMIT) -> None:
        self._items: collections.deque[Frame] = collections.deque()
        self._wakeup: anyio.Event | None = None
        self._waiter: asyncio.Future[None] | None = None  # ``get_within`` on asyncio
        self.limit = limit
        #: Told of each frame queued while no consumer waits yet (``handler_first``).
        self.on_put: Callable[[Frame], None] | None = None

    def put(self, frame: Frame) -> bool:
        """Queue ``frame``; on overflow the queue is replaced by one "overflow" frame."""
        ok = len(self._items) < self.limit
        if not ok:
            self._items.clear()
            frame = Frame("overflow")
        self._items.append(frame)
        if self.on_put is not None:
            self.on_put(frame)
        if self._wakeup is not None:
            self._wakeup.set()
            self._wakeup = None
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        return ok

    async def get(self) -> Frame:
        while not self._items:
            self._wakeup = anyio.Event()
            await self._wakeup.wait()
        return self._items.popleft()

    async def get_within(self, timeout: float) -> Frame | None:
        """The next frame, or ``None`` if none came within ``timeout`` seconds.

        On asyncio the wait is a future and a loop timer: a cancel scope per
        frame costs more than the rest of a short response's pumping.
        """
        items = self._items
        if items:
            return items.popleft()
        loop = running_asyncio_loop()
        if loop is None:
            with anyio.move_on_after(timeout):
                return await self.get()
            return None
        waiter = self._waiter = loop.create_future()
        timer = loop.call_later(timeout, _expire, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None
        return items.popleft() if items else None

    def take_stream_frame(self) -> Frame | None:
        """The next frame if it is one more piece of an SSE body (to write together)."""
        items = self._items
        if items and items[0].kind in ("sse", "close"):
            return items.popleft()
        return None

    def take_json(self) -> Frame | None:
        """The frame queued, when it is all there is and it is a JSON response."""
        items = self._items
        if len(items) == 1 and items[0].kind == "json":
            return items.popleft()
        return None


def _expire(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


# The SSE encoders (``sansio._sse``, mostly the client's decoder) load with the
# first SSE frame: a server whose answers are all JSON never needs them. The
# per-event one is kept in a module global once loaded, so that encoding an
# event costs no import statement; the rarer frames import where they are made.
_encode_event: Callable[..., bytes] | None = None


def encode_sse(message: Message, event_id: str | None) -> bytes:
    encode = _encode_event or _load_event_encoder()
    return encode(serialize(message).decode("utf-8"), event="message", id=event_id)


def _load_event_encoder() -> Callable[..., bytes]:
    global _encode_event
    from .sansio._sse import encode_event

    _encode_event = encode_event
    return encode_event


class ResponseStream:
    """Where the messages for one HTTP response go (see the module docstring).

    Args:
        stream_id: the stream's id within its session ("" in the modern era).
        request_id: the request whose response ends the stream (None: GET).
        sse_ok: whether the client accepts SSE and the server may use it.
        owner: the legacy session whose event store records the frames.
        modern: errors sent as JSON get their modern HTTP status.
    """

    __slots__ = (
        "_lock",
        "finished",
        "headers",
        "id",
        "modern",
        "outbox",
        "owner",
        "prefer_sse",
        "request_id",
        "sse",
        "sse_ok",
    )

    def __init__(
        self,
        stream_id: str,
        request_id: RequestId | None,
        *,
        sse_ok: bool,
        owner: HTTPSession | None = None,
        modern: bool = False,
    ) -> None:
        self.id = stream_id
        self.request_id = request_id
        self.sse_ok = sse_ok
        self.owner = owner
        self.modern = modern
        self.sse = False
        self.finished = False
        self.outbox: Outbox | None = Outbox()
        # Made when first needed (``lock``): a stream whose response is all it
        # carries never needs one.
        self._lock: anyio.Lock | None = None
        #: Extra response headers (``Mcp-Session-Id``), read when the response starts.
        self.headers: list[tuple[str, str]] = []
        #: A modern result with nothing before it goes as a one-event stream, not
        #: JSON (``stream_responses``); an error stays JSON, with its status.
        self.prefer_sse = False

    @property
    def attached(self) -> bool:
        return self.outbox is not None

    def put(self, frame: Frame) -> None:
        """Queue a frame for the consumer (dropped while detached)."""
        if self.outbox is not None and not self.outbox.put(frame):
            self.outbox = None  # the consumer sees "overflow" and drops the client

    _put = put

    async def _record(self, message: Message | None) -> str | None:
        if self.owner is None:
            return None
        return await self.owner.record(self, message)

    async def _commit(self) -> None:
        # Caller holds the lock.
        if self.sse:
            return
        self.sse = True
        if self.owner is not None:
            await self.owner.keep(self)
            if self.owner.priming:
                # 2025-11-25 "SHOULD immediately send an SSE event consisting of an
                # event ID and an empty data field" (transports.mdx).
                from .sansio._sse import encode_priming

                event_id = await self._record(None)
                assert event_id is not None
                self._put(Frame("sse", encode_priming(event_id, retry=self.owner.retry_ms)))

    async def commit(self) -> None:
        """Switch to ``text/event-stream`` now (the consumer's keep-alive path)."""
        async with self.lock:
            if not self.finished:
                await self._commit()

    async def event(self, message: Message) -> None:
        """Send a notification or request that belongs to this response."""
        async with self.lock:
            if self.finished:
                return
            if not self.sse:
                if self.outbox is None:
                    return  # its client is gone and holds no event id to resume from
                await self._commit()
            self._put(Frame("sse", encode_sse(message, await self._record(message))))

    async def final(self, message: Response | ErrorResponse) -> None:
        """Send the response that ends the stream."""
        lock = self._lock
        if lock is None and not self.sse:
            # No producer ever took the lock, and a JSON answer is queued
            # without a pause: nothing can come between.
            if not self.finished:
                self._final_json(message)
            return
        lock = self.lock
        if lock.locked():
            async with lock:
                await self._final(message)
            return
        # Free: taken without a pass round the event loop. The response comes
        # once per stream, so no producer can loop here and starve the pump.
        lock.acquire_nowait()
        try:
            await self._final(message)
        finally:
            lock.release()

    async def _final(self, message: Response | ErrorResponse) -> None:
        # Caller holds the lock.
        if self.finished:
            return
        self.finished = True
        if self.sse:
            data = encode_sse(message, await self._record(message))
            self._put(Frame("sse", data, final=True))
            return
        self._final_json(message)

    def _final_json(self, message: Response | ErrorResponse) -> None:
        self.finished = True
        if self.prefer_sse and self.owner is None and type(message) is Response:
            self.sse = True
            self._put(Frame("sse", encode_sse(message, None), final=True))
            return
        status = 200
        if self.modern and type(message) is ErrorResponse:
            status = http_status_for_error(message.error.code)
        self._put(Frame("json", serialize(message), final=True, status=status))

    async def close_sse(self, retry_ms: int) -> bool:
        """Close the client's connection to this stream mid-call (SEP-1699 polling).

        The stream must be resumable: it becomes SSE (primed with an event id)
        if it was not, gets a ``retry`` hint, and is detached, so that what the
        request still produces is recorded until the client comes back with
        ``Last-Event-ID``. False when that is not possible (modern era, JSON
        only, already finished).
        """
        async with self.lock:
            if self.finished or self.owner is None or not self.sse_ok or self.outbox is None:
                return False
            await self._commit()
            from .sansio._sse import encode_retry

            self._put(Frame("close", encode_retry(retry_ms)))
            self.outbox = None
            return True

    def end(self, status: int = 503) -> None:
        """End the response without a JSON-RPC response (``status`` if nothing was sent yet)."""
        if not self.finished:
            self.finished = True
            self._put(Frame("end", status=status))

    def attach(self) -> Outbox:
        """Give the stream a new consumer; a previous one is told to stop."""
        if self.outbox is not None:
            self.outbox.put(Frame("overflow"))
        self.outbox = Outbox()
        return self.outbox

    def detach(self, outbox: Outbox | None = None) -> None:
        """The consumer went away (only if ``outbox`` is still the current one)."""
        if outbox is None or self.outbox is outbox:
            self.outbox = None

    @property
    def lock(self) -> anyio.Lock:
        """Held while frames are recorded and queued, so ids and frames keep one order.

        Taking it yields to the loop: a producer that emits in a tight loop
        lets the pump drain the outbox between frames (which is bounded).
        """
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock


async def pump(
    http: HTTPExchange,
    stream: ResponseStream,
    *,
    keepalive: float,
    started: bool = False,
    first_wait: float | None = None,
) -> PumpResult:
    """Write ``stream``'s frames as the HTTP response until it ends.

    Returns "done" when the final response was written, "ended" when the
    stream ended without one, "gone" when the client went away, stopped
    reading, or was hung up on to resume later (``close_sse``). ``started``:
    the SSE head was already sent (a resumed stream). ``first_wait``: how long
    to wait for the first frame before the keep-alive (``keepalive`` if None).
    """
    outbox = stream.outbox
    if outbox is None:
        return "gone"
    wait = keepalive if first_wait is None else first_wait
    try:
        while True:
            frame = await outbox.get_within(wait)
            wait = keepalive
            if frame is None:
                if not stream.sse and stream.sse_ok:
                    await stream.commit()  # its priming frame (if any) is next in line
                if stream.sse:
                    from .sansio._sse import encode_comment

                    comment = encode_comment("keep-alive")
                    if not started:
                        await http.start(200, [*SSE_HEADERS, *stream.headers], comment)
                        started = True
                    else:
                        await http.write(comment)
                continue
            kind = frame.kind
            if kind == "json":
                await http.respond(frame.status, [*JSON_HEADERS, *stream.headers], frame.data)
                return "done"
            if kind == "overflow":
                return "gone"
            if kind == "end":
                if started:
                    await http.finish()
                else:
                    await http.respond(frame.status, stream.headers)
                return "ended"
            # SSE bytes: everything already queued behind this frame goes out
            # in the same write, up to the end of the response.
            pieces = [frame.data]
            while not frame.final and frame.kind != "close":
                more = outbox.take_stream_frame()
                if more is None:
                    break
                frame = more
                pieces.append(frame.data)
            data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
            last = frame.final or frame.kind == "close"
            if not started:
                await http.start(200, [*SSE_HEADERS, *stream.headers], data)
                started = True
                if last:
                    await http.finish()
            elif last:
                await http.finish(data)
            else:
                await http.write(data)
            if frame.kind == "close":  # the server hangs up; the client resumes later
                return "gone"
            if frame.final:
                return "done"
    except PeerGone:
        return "gone"


async def pump_watched(
    http: HTTPExchange, stream: ResponseStream, *, keepalive: float, started: bool = False
) -> PumpResult:
    """``pump``, stopped ("gone") if the client hangs up meanwhile.

    Where the connection reports its end by itself (``on_disconnect``), the
    pump runs in a cancel scope that the report cancels. Elsewhere a second
    task awaits ``watch_disconnect`` beside it, and is cancelled when the pump
    ends: a task group, a task and a cancellation more per response.
    """
    with anyio.CancelScope() as scope:
        stop = http.on_disconnect(scope.cancel)
        if stop is not None:
            try:
                return await pump(http, stream, keepalive=keepalive, started=started)
            finally:
                stop()
    if stop is not None:
        return "gone"
    result: PumpResult = "gone"
    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            await http.watch_disconnect()
            tg.cancel_scope.cancel()

        tg.start_soon(watch)
        result = await pump(http, stream, keepalive=keepalive, started=started)
        tg.cancel_scope.cancel()
    return result


class OneShotTransport:
    """Where what the handler of one modern (2026-07-28) request sends goes.

    The request's own response ends its stream; notifications that name the
    request go to the stream (as SSE events); anything else is counted in
    ``dropped``. The modern era has no server->client requests, so sending one
    fails. (``_http_modern.StreamedSession`` sends through it; a disconnect is
    cancellation, streamable-http.mdx "Cancellation", done by its caller.)
    """

    __slots__ = ("dropped", "request", "stream")

    def __init__(self, request: Request, stream: ResponseStream) -> None:
        self.request = request
        self.stream = stream
        self.dropped = 0

    async def send(self, message: Outbound, *, related: RequestId | None = None) -> None:
        if isinstance(message, list):
            for item in message:
                await self.send(item, related=related)
            return
        cls = type(message)
        if cls is Response or cls is ErrorResponse:
            if message.id == self.request.id:  # type: ignore[union-attr]
                await self.stream.final(message)  # type: ignore[arg-type]
            else:
                self.dropped += 1
            return
        if cls is Request:
            raise JSONRPCError(ErrorCode.INTERNAL_ERROR, NO_SERVER_REQUESTS)
        if related == self.request.id and self.stream.sse_ok:
            await self.stream.event(message)
        else:
            self.dropped += 1
