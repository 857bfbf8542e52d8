"""One HTTP/1.1 server connection: an anyio byte stream driven by ``h11``.

Theory of operation
-------------------
``h11`` is the sans-IO HTTP/1.1 state machine; this module only moves bytes
between it and the socket, under limits and deadlines:

* a request head larger than ``max_header_size`` is refused by h11 itself
  (``max_incomplete_event_size``; it reports status 431);
* a body larger than ``max_body_size`` is refused with 413, from the
  ``Content-Length`` before any of it is read, or as soon as a chunked body
  passes the limit (``BodyTooLarge``);
* every read of a head or body and every write has a deadline, so a peer that
  stalls mid-request or stops reading a response is dropped (``PeerGone``)
  instead of holding a task and its buffers forever.

A response is either whole (``respond``: status, headers, body with its
``Content-Length``, in one write) or streamed (``start``, ``write``...,
``finish``: h11 picks chunked encoding for HTTP/1.1 clients). While a
streamed response is being written, ``watch_disconnect`` reads the socket in
another task: end of input means the client went away (the caller cancels
the work it was doing for it); bytes that arrive instead are a pipelined
next request and are kept in h11's buffer, bounded. ``reusable`` says
whether the connection may serve another request (keep-alive) once a
response is complete.

The request handlers (``_http_server``, ``_http_modern``, ``_http_legacy``,
``_http_sse``) see only ``HTTPExchange``, the part of this interface that
concerns one request and its response, and a ``RequestHead``; the ASGI
adapter (``_asgi``) provides the same two from an ASGI scope and its
``receive``/``send``, so both ways in share every rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, Union

import anyio
import anyio.abc
import h11

__all__ = (
    "BodyTooLarge",
    "HTTPConnection",
    "HTTPExchange",
    "PeerGone",
    "ReadTimeout",
    "RequestHead",
    "text_body",
)

_RECEIVE_SIZE = 65536
#: Lingering close after an error response: how long and how much to drain.
_LINGER_SECONDS = 1.0
_LINGER_BYTES = 256 * 1024

_Sendable = Union[h11.InformationalResponse, h11.Response, h11.Data, h11.EndOfMessage]


class PeerGone(Exception):
    """The client closed the connection, reset it, or stalled past a deadline."""


class ReadTimeout(PeerGone):
    """The request (head or body) did not arrive within ``read_timeout``."""


class BodyTooLarge(Exception):
    """The request body is larger than the configured limit."""


class RequestHead:
    """The parts of a request's head the server looks at, decoded once.

    Built from an ``h11.Request`` (``from_h11``) or from an ASGI scope
    (``_asgi.request_head``): header names are lower case either way (h11
    and ASGI both normalise them), values are latin-1 decoded.
    """

    __slots__ = ("duplicated", "headers", "method", "path", "query", "raw_headers", "size")

    def __init__(
        self,
        method: str,
        path: str,
        query: str,
        raw_headers: Iterable[tuple[bytes, bytes]],
        *,
        size: int | None = None,
    ) -> None:
        self.method = method.upper()
        self.path = path
        self.query = query
        # One pass: decode, measure, and combine repeated fields with ", "
        # (RFC 9110 section 5.3); the names seen more than once are kept for
        # the checks that forbid that.
        raw: list[tuple[str, str]] = []
        headers: dict[str, str] = {}
        duplicated: set[str] = set()
        measured = len(method) + len(path) + len(query)
        for raw_name, raw_value in raw_headers:
            name = raw_name.decode("latin-1")
            value = raw_value.decode("latin-1")
            raw.append((name, value))
            measured += len(name) + len(value) + 4
            if name in headers:
                duplicated.add(name)
                headers[name] = headers[name] + ", " + value
            else:
                headers[name] = value
        self.raw_headers = raw
        #: About the size of the head on the wire (h11 only bounds heads that
        #: arrive in pieces; one that arrives whole is measured here).
        self.size = size if size is not None else measured
        self.headers = headers
        self.duplicated = duplicated

    @classmethod
    def from_h11(cls, event: h11.Request) -> RequestHead:
        target = event.target.decode("latin-1")
        path, _, query = target.partition("?")
        return cls(event.method.decode("ascii", "replace"), path, query, event.headers)


class HTTPExchange(Protocol):
    """One request's body and its response, whatever carries them.

    ``HTTPConnection`` (h11 on a socket) and ``_asgi.ASGIExchange`` (an ASGI
    host) implement it. A response is whole (``respond``) or streamed
    (``start``, ``write``..., ``finish``); ``watch_disconnect`` returns when
    the client goes away, for use beside a streamed response. Writing to a
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


def text_body(
    text: str, headers: list[tuple[str, str]] | None
) -> tuple[list[tuple[str, str]], bytes]:
    """The headers and body of a short plain-text response (``respond_text``)."""
    return [("content-type", "text/plain; charset=utf-8"), *(headers or [])], (text + "\n").encode()


class HTTPConnection:
    """HTTP/1.1 on one accepted byte stream (see the module docstring)."""

    def __init__(
        self,
        stream: anyio.abc.ByteStream,
        *,
        max_header_size: int,
        read_timeout: float,
        write_timeout: float,
    ) -> None:
        self.stream = stream
        self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=max_header_size)
        self.max_header_size = max_header_size
        self.read_timeout = read_timeout
        self.write_timeout = write_timeout
        #: The client sent end of input (or the connection broke).
        self.peer_closed = False
        #: A response that must close the connection was sent (``Connection: close``).
        self.closing = False

    # -- reading ---------------------------------------------------------------------

    async def _fill(self) -> int:
        try:
            data = await self.stream.receive(_RECEIVE_SIZE)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            data = b""
        if not data:
            self.peer_closed = True
        self.h11.receive_data(data)
        return len(data)

    async def next_request(self, idle_timeout: float) -> RequestHead | None:
        """The next request's head, or ``None`` when the client closed or idled out.

        ``idle_timeout`` bounds the wait for the request's first byte; from
        then on the whole head must arrive within ``read_timeout`` (a client
        that trickles a head in byte by byte is dropped). Raises
        ``h11.RemoteProtocolError`` for a malformed or oversized head.
        """
        deadline = anyio.current_time() + idle_timeout
        begun = False
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                if isinstance(event, h11.Request):
                    return RequestHead.from_h11(event)
                return None  # ConnectionClosed
            if self.peer_closed:
                return None
            with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                if await self._fill() and not begun:
                    begun = True
                    deadline = anyio.current_time() + self.read_timeout
                continue
            return None  # nothing, or not enough, in time

    async def read_body(self, limit: int, declared: int | None = None) -> bytes:
        """The request body, whole. Raises ``BodyTooLarge`` or ``PeerGone``.

        ``declared`` is the ``Content-Length``: when it is over the limit the
        body is refused before a byte of it is read.
        """
        if declared is not None and declared > limit:
            raise BodyTooLarge
        chunks: list[bytes] = []
        size = 0
        deadline: float | None = None
        while True:
            event = self.h11.next_event()
            if event is h11.NEED_DATA:
                # Only a body still on its way needs a deadline (and a cancel
                # scope); one that came with the head is taken as it is.
                if deadline is None:
                    deadline = anyio.current_time() + self.read_timeout
                with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                    if self.h11.they_are_waiting_for_100_continue:
                        await self._send(h11.InformationalResponse(status_code=100, headers=[]))
                    await self._fill()
                    continue
                raise ReadTimeout("the request body did not arrive in time")
            cls = type(event)
            if cls is h11.Data:
                data = event.data  # type: ignore[union-attr]
                size += len(data)
                if size > limit:
                    raise BodyTooLarge
                chunks.append(bytes(data))
            elif cls is h11.EndOfMessage:
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)
            else:
                raise PeerGone("the client closed the connection mid-request")

    # -- writing ---------------------------------------------------------------------

    async def _send(self, *events: _Sendable) -> None:
        """Frame ``events`` with h11 and write the bytes in one piece."""
        pieces: list[bytes] = []
        try:
            for event in events:
                pieces.extend(self.h11.send_with_data_passthrough(event) or ())
        except h11.LocalProtocolError as exc:
            raise PeerGone(str(exc)) from exc
        if not pieces:
            return
        data = pieces[0] if len(pieces) == 1 else b"".join(pieces)
        try:
            with anyio.move_on_after(self.write_timeout) as scope:
                await self.stream.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self.h11.send_failed()
            raise PeerGone(str(exc)) from exc
        if scope.cancelled_caught:
            self.h11.send_failed()
            raise PeerGone("the client stopped reading")

    def _head(self, status: int, headers: list[tuple[str, str]]) -> h11.Response:
        for name, value in headers:
            if name.lower() == "connection" and value.lower() == "close":
                self.closing = True
        return h11.Response(status_code=status, headers=_encode(headers))

    async def start(self, status: int, headers: list[tuple[str, str]], data: bytes = b"") -> None:
        """Send the head of a response whose body follows in ``write`` calls.

        ``data``, when given, is the body's first piece, sent with the head.
        """
        head = self._head(status, headers)
        if data:
            await self._send(head, h11.Data(data=data))
        else:
            await self._send(head)

    async def write(self, data: bytes) -> None:
        await self._send(h11.Data(data=data))

    async def finish(self, data: bytes = b"") -> None:
        """End a streamed response; ``data``, when given, is its last piece."""
        if data:
            await self._send(h11.Data(data=data), h11.EndOfMessage())
        else:
            await self._send(h11.EndOfMessage())

    async def respond(self, status: int, headers: list[tuple[str, str]], body: bytes = b"") -> None:
        """Send a whole response with its ``Content-Length``: head and body in one write."""
        head = self._head(status, [*headers, ("content-length", str(len(body)))])
        if body:
            await self._send(head, h11.Data(data=body), h11.EndOfMessage())
        else:
            await self._send(head, h11.EndOfMessage())

    async def respond_text(
        self, status: int, text: str, headers: list[tuple[str, str]] | None = None
    ) -> None:
        await self.respond(status, *text_body(text, headers))

    async def watch_disconnect(self) -> None:
        """Return when the client closes its end (for use beside a streamed response).

        Bytes that arrive first are a pipelined request: they are handed to h11
        to be read later, up to twice the head limit, after which reading stops
        (and so does watching).
        """
        buffered = 0
        while buffered <= 2 * self.max_header_size:
            try:
                data = await self.stream.receive(_RECEIVE_SIZE)
            except (
                anyio.EndOfStream,
                anyio.BrokenResourceError,
                anyio.ClosedResourceError,
                OSError,
            ):
                data = b""
            if not data:
                self.peer_closed = True
                return
            buffered += len(data)
            self.h11.receive_data(data)
        await anyio.sleep_forever()

    @property
    def reusable(self) -> bool:
        """Whether another request may follow on this connection."""
        return (
            not self.closing
            and not self.peer_closed
            and self.h11.our_state is h11.DONE
            and self.h11.their_state is h11.DONE
        )

    def next_cycle(self) -> None:
        self.h11.start_next_cycle()

    async def aclose(self) -> None:
        """Close the connection; after an error response, linger briefly first.

        A client still sending (a body we refused with 413, a head too large)
        would otherwise get a TCP reset that can destroy the response before
        it is read: so the write side is shut, and input drained (at most
        ``_LINGER_BYTES`` for ``_LINGER_SECONDS``) before the socket closes.
        """
        with anyio.CancelScope(shield=True):
            try:
                if self.closing and not self.peer_closed:
                    await self._linger()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                pass
            finally:
                try:
                    await self.stream.aclose()
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    pass

    async def _linger(self) -> None:
        send_eof = getattr(self.stream, "send_eof", None)
        if send_eof is None:
            return
        await send_eof()
        drained = 0
        with anyio.move_on_after(_LINGER_SECONDS):
            while drained < _LINGER_BYTES:
                try:
                    data = await self.stream.receive(_RECEIVE_SIZE)
                except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return
                drained += len(data)


def _encode(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers]
