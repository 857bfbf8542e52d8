"""One HTTP/1.1 client connection: a byte stream and the h11 machine framing it.

Two implementations share one small interface (``exchange``, ``next_event``,
``body_chunk``, ``reusable``, ``next_cycle``, ``looks_dead``, ``abort``,
``close``), and differ only in how bytes are read and written
(``_receive``, ``_write``):

``StreamSocket``
    Any anyio byte stream: TLS, and every socket on trio.

``ProtocolSocket``
    Plain TCP on asyncio, over an ``AsyncioStream`` (``_aio_stream``): reads
    wait on a future with a timer instead of a cancel scope, and an idle
    socket knows without a system call whether its peer has closed it.

Both feed h11 one received chunk at a time, only when h11 needs more data, so
what h11 buffers stays bounded by its ``max_incomplete_event_size``. A plain
exchange skips h11 altogether (``_http_client_fast``): the request is written
from bytes made once, and a response whose head arrives whole is read by the
fast path, its body taken by ``Content-Length`` (``body``); h11 stays idle for
that cycle. Any other response is handed to h11 as it arrived, after h11 has
been told of the request, and read there as it would have been.
"""

from __future__ import annotations

import anyio
import anyio.abc
import h11

from ._aio_stream import AsyncioStream, message_writes, readable_now
from ._errors import MCPWireError
from ._http_client_fast import BodyLeft, FastResponse, parse_response

__all__ = (
    "NETWORK_ERRORS",
    "BodyCut",
    "BodyTooLarge",
    "ConnectionFailed",
    "HTTPError",
    "InvalidRequest",
    "NoResponse",
    "ProtocolSocket",
    "ReadTimeout",
    "RedirectRefused",
    "StreamSocket",
    "aborted",
    "body_cut",
)

_RECEIVE_SIZE = 65536
_END = h11.EndOfMessage()
#: ``h11.Connection.trailing_data`` when nothing is buffered and the peer has not closed.
_NOTHING = (b"", False)


class HTTPError(MCPWireError):
    """Something went wrong below MCP: at the socket, TLS or HTTP level."""


class ConnectionFailed(HTTPError):
    """The server could not be reached, or the connection broke mid-exchange."""


class NoResponse(ConnectionFailed):
    """The server was reached, but the connection ended (closed, reset, or an
    answer that is no HTTP) after the request went out and before a response
    head came back. ``reused``: it was a kept-alive connection (a server that
    closed it as we sent, or one that read the request and fell over: the same
    from here)."""

    def __init__(self, message: str, *, reused: bool) -> None:
        super().__init__(message)
        self.reused = reused


class ReadTimeout(HTTPError):
    """The server sent nothing for longer than the read timeout."""


class InvalidRequest(HTTPError):
    """The request cannot be written (a header value that is not ASCII, for example)."""


class RedirectRefused(HTTPError):
    """A redirect that is not followed (another origin, a method change, too many hops)."""


class BodyTooLarge(HTTPError):
    """A response body is larger than the caller's limit."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"the response body exceeds the limit of {limit} bytes")
        self.limit = limit


class BodyCut(ConnectionFailed):
    """The connection ended before the response body did.

    Attributes:
        received: bytes of the body that arrived.
        expected: what ``Content-Length`` announced; ``None`` without one.
        chunked: the body was chunked (then it ended before its last chunk).
        partial: the body as far as it arrived.
    """

    def __init__(
        self, received: int, expected: int | None, chunked: bool, partial: bytes, why: str
    ) -> None:
        if expected is not None:
            text = f"received {received} of {expected} bytes"
        elif chunked:
            text = f"the chunked body ended before its last chunk, after {received} bytes"
        else:
            text = f"after {received} bytes"
        super().__init__(f"the response body was cut short ({text}): {why}")
        self.received = received
        self.expected = expected
        self.chunked = chunked
        self.partial = partial


#: What a broken connection raises underneath (the socket, anyio, or h11 parsing).
NETWORK_ERRORS = (
    OSError,
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    anyio.EndOfStream,
    h11.RemoteProtocolError,
)


def body_cut(
    length: str | None, coding: str | None, parts: list[bytes], exc: ConnectionFailed
) -> BodyCut:
    """What reading a body raises when ``exc`` broke it off after ``parts`` arrived;
    ``length`` and ``coding`` are the response's ``Content-Length`` and
    ``Transfer-Encoding`` (h11 has checked them)."""
    expected = int(length) if length and length.strip().isdigit() else None
    chunked = coding is not None and "chunked" in coding.lower()
    return BodyCut(sum(map(len, parts)), expected, chunked, b"".join(parts), str(exc))


def aborted() -> ConnectionFailed:
    """The error of an exchange that ``HTTPClient.abort`` broke."""
    return ConnectionFailed("the exchange was aborted")


def _feed(conn: h11.Connection, data: bytes) -> h11.Event | type[h11.NEED_DATA | h11.PAUSED]:
    """Give h11 what arrived and take its next event. The end of input where
    more of a response was due raises ``EndOfStream`` (the peer closed the
    connection), not h11's complaint about its own state."""
    conn.receive_data(data)
    try:
        return conn.next_event()
    except h11.RemoteProtocolError:
        if data:
            raise
        raise anyio.EndOfStream from None


def _frame(conn: h11.Connection, events: tuple[h11.Event, ...]) -> bytes:
    pieces: list[bytes] = []
    for event in events:
        pieces.extend(conn.send_with_data_passthrough(event) or ())
    return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _events(request: h11.Request, body: bytes | None) -> tuple[h11.Event, ...]:
    """A request's h11 events: its head, its body, its end."""
    return (request, h11.Data(data=body), _END) if body else (request, _END)


def _timed_out(timeout: float) -> ReadTimeout:
    return ReadTimeout(f"no data from the server for {timeout:g} s")


class StreamSocket:
    """A connection over an anyio byte stream."""

    __slots__ = ("body", "bytes_in", "h11", "idle_since", "limit", "origin", "raw", "stream")

    def __init__(self, stream: anyio.abc.ByteStream, origin: tuple[str, str, int], limit: int):
        self.stream = stream
        self.origin = origin
        self.limit = limit
        self.h11 = h11.Connection(h11.CLIENT, max_incomplete_event_size=limit)
        #: The body of this cycle's response when the fast path read its head
        #: (h11 stays idle for the cycle); ``None`` when h11 reads the cycle.
        self.body: BodyLeft | None = None
        self.idle_since = 0.0
        #: Bytes received for the current request (0: the server never answered it).
        self.bytes_in = 0
        #: The socket underneath, polled before reuse (looked up once).
        self.raw = stream.extra(anyio.abc.SocketAttribute.raw_socket, None)

    # -- bytes: how each kind of socket reads and writes ---------------------------------

    async def _receive(self, timeout: float | None) -> bytes:
        """The next bytes from the server (``b""``: end of input), counted in
        ``bytes_in``. Raises ``ReadTimeout`` when none came within ``timeout``."""
        data = b""
        try:
            if timeout is None:  # the caller's own deadline is in charge
                data = await self.stream.receive(_RECEIVE_SIZE)
            else:
                with anyio.move_on_after(timeout) as scope:
                    data = await self.stream.receive(_RECEIVE_SIZE)
                if scope.cancelled_caught:
                    raise _timed_out(timeout)
        except anyio.EndOfStream:
            pass
        self.bytes_in += len(data)
        return data

    async def _write(self, data: bytes, large: bytes = b"") -> None:
        """Write ``data``, then ``large`` uncopied (``message_writes``)."""
        await self.stream.send(data)
        if large:
            await self.stream.send(large)

    # -- one exchange ----------------------------------------------------------------------

    async def exchange(
        self, request: h11.Request, head: bytes | None, body: bytes | None, timeout: float | None
    ) -> h11.Event | type[h11.PAUSED] | FastResponse:
        """Send a request (head and body in one write), then return the first
        event of the answer, or the whole head as the fast path read it.

        ``head`` is the bytes of ``request`` for the fast path
        (``_http_client_fast.request_bytes``), or ``None`` (h11 writes it).
        The fast path is taken when h11 is fresh for a new cycle; a response
        it does not take is handed to h11, told of the request as if it had
        written it, so that the exchange goes on there as it would have.
        """
        conn = self.h11
        events = _events(request, body)
        if (
            head is None
            or conn.our_state is not h11.IDLE
            or conn.their_state is not h11.IDLE
            or conn.trailing_data != _NOTHING
        ):
            await self._write(_frame(conn, events))
            if conn.trailing_data != _NOTHING:  # h11 holds bytes already: those come first
                return await self.next_event(timeout)
            data = await self._receive(timeout)
        else:
            await self._write(*message_writes(head, body or b""))
            data = await self._receive(timeout)
            fast = parse_response(data, self.limit)
            if fast is not None:
                self.body = BodyLeft(fast, data)
                return fast
            _frame(conn, events)  # h11's now: the bytes are out already
        # Right after a request h11 holds nothing, so it is given the first
        # bytes before it is asked for an event.
        event = _feed(conn, data)
        if event is h11.NEED_DATA:
            return await self.next_event(timeout)
        return event  # type: ignore[return-value]

    async def next_event(self, timeout: float | None) -> h11.Event | type[h11.PAUSED]:
        """The next event of the answer, read from the socket as h11 needs."""
        conn = self.h11
        event = conn.next_event()
        while event is h11.NEED_DATA:
            event = _feed(conn, await self._receive(timeout))
        return event  # type: ignore[return-value]

    async def body_chunk(self, timeout: float | None) -> bytes:
        """The next piece of the response body; ``b""`` once it has ended.

        Raises what a broken connection raises (``NETWORK_ERRORS``; the end of
        input before the body's end is ``anyio.EndOfStream``), ``ReadTimeout``,
        or ``ConnectionFailed`` for an answer that is no body.
        """
        left = self.body
        if left is not None:
            held = left.held
            if held:
                left.held = b""
                return held
            if not left.due:
                left.ended = True
                return b""
            data = await self._receive(timeout)
            if not data:
                raise anyio.EndOfStream
            return left.take(data)
        conn = self.h11
        while True:
            # What h11 holds already (usually the whole body, which came
            # with the head) is taken without a trip through the socket.
            event = conn.next_event()
            if event is h11.NEED_DATA:
                event = await self.next_event(timeout)
            if type(event) is h11.Data:
                if event.data:
                    return bytes(event.data)
                continue
            if type(event) is h11.EndOfMessage:
                return b""
            raise ConnectionFailed(f"unexpected HTTP event while reading the body: {event!r}")

    def reusable(self) -> bool:
        """Whether the exchange ended cleanly and nothing came after the response.

        Bytes past a complete response (a body on a 204 or 304, a Content-Length
        that fell short) answer no request: RFC 9112 §6.3 forbids reading them as
        the next response, so the socket is not kept.
        """
        left = self.body
        if left is not None:
            return left.ended and not left.past
        conn = self.h11
        return (
            conn.our_state is h11.DONE
            and conn.their_state is h11.DONE
            and conn.trailing_data == _NOTHING
        )

    def next_cycle(self) -> None:
        """Make a ``reusable`` socket ready for its next exchange."""
        if self.body is not None:
            self.body = None  # h11 was left idle
        else:
            self.h11.start_next_cycle()

    def looks_dead(self) -> bool:
        """True if an idle socket is readable: the peer closed it (or sent garbage)."""
        return readable_now(self.raw)

    def abort(self) -> None:
        """Close at once from any task, if that needs no wait (here it does: no-op)."""

    async def close(self) -> None:
        await anyio.aclose_forcefully(self.stream)


class ProtocolSocket(StreamSocket):
    """A plain TCP connection on asyncio (see the module docstring)."""

    __slots__ = ()
    stream: AsyncioStream

    def __init__(self, stream: AsyncioStream, origin: tuple[str, str, int], limit: int) -> None:
        super().__init__(stream, origin, limit)

    async def _receive(self, timeout: float | None) -> bytes:
        try:
            data = await self.stream.receive_chunk(timeout)
        except TimeoutError:
            raise _timed_out(timeout or 0.0) from None
        self.bytes_in += len(data)
        return data

    async def _write(self, data: bytes, large: bytes = b"") -> None:
        stream = self.stream
        stream.write(data)
        if large:
            stream.write(memoryview(large))
        await stream.drain()

    def looks_dead(self) -> bool:
        """True if an idle socket got anything: the peer's FIN (or garbage)."""
        return self.stream.looks_dead()

    def abort(self) -> None:
        """Close at once: a read or write waiting on the socket fails."""
        self.stream.abort()

    async def close(self) -> None:
        self.stream.abort()
