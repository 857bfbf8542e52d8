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
  instead of holding a task and its buffers forever; a request begun but not
  whole in time gets 408 first, while an idle connection closes silently;
* a request h11 refuses is answered with h11's status and words of our own
  (``refuse``), never with the client's bytes.

A response is either whole (``respond``: status, headers, body with its
``Content-Length``, in one write) or streamed (``start``, ``write``...,
``finish``: h11 picks chunked encoding for HTTP/1.1 clients); the answer
to a ``HEAD`` request is its head alone (``bodiless``). While a
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

What a request costs beyond h11's parsing and framing is kept small, since
it is paid on every request of a connection:

* on asyncio the server's connections are ``AsyncioStream``s
  (``_aio_stream``): reads need no cancel scope, since the wait for a head
  is bounded by one timer per connection, moved on only when it fires
  (``_watch``), and a body still on its way by the stream's own timeout;
  a write that the kernel takes at once needs no pass round the loop. Any
  other stream (trio's, a test's) is read and written under anyio cancel
  scopes, with the same deadlines;
* a head that repeats the previous request's gives the same ``RequestHead``
  (``_http_gate``), and a response with the previous one's head, status and
  length reuses its h11 event; response header lists are validated by h11
  once each.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Protocol, Union

import anyio
import anyio.abc
import anyio.lowlevel
import h11

from ._aio_stream import AsyncioStream
from ._http_gate import (
    HeaderItems,
    RequestHead,
    ValidatedHeaders,
    protocol_refusal,
    validated_head,
)

__all__ = (
    "BodyTooLarge",
    "HTTPConnection",
    "HTTPExchange",
    "PeerGone",
    "ReadTimeout",
    "RequestHead",
    "text_body",
)

logger = logging.getLogger("mcpwire.http")

_RECEIVE_SIZE = 65536
#: Lingering close after an error response: how long and how much to drain.
_LINGER_SECONDS = 1.0
_LINGER_BYTES = 256 * 1024

_Sendable = Union[h11.InformationalResponse, h11.Response, h11.Data, h11.EndOfMessage]
#: h11's events are immutable: one end of message serves every response.
_END = h11.EndOfMessage()


class PeerGone(Exception):
    """The client closed the connection, reset it, or stalled past a deadline."""


class ReadTimeout(PeerGone):
    """The request (head or body) did not arrive within ``read_timeout``."""


class BodyTooLarge(Exception):
    """The request body is larger than the configured limit."""


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

    #: Headers the next response carries besides its own, added before the
    #: response is made (the auth layer's ``DPoP-Nonce``); a response takes them.
    extra_headers: list[tuple[str, str]]


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
        #: The request being answered is a HEAD: its response has a head only
        #: (RFC 9110 section 9.3.2), whatever body the handler gives.
        self.bodiless = False
        #: The last response head: its header list, status, length, h11 event.
        self._last_head: tuple[HeaderItems, int, int | None, h11.Response] | None = None
        self.extra_headers: list[tuple[str, str]] = []
        #: The last request's line, headers, head, and where its length is.
        self._last_request: (
            tuple[bytes, bytes, list[tuple[bytes, bytes]], RequestHead, int] | None
        ) = None
        #: The stream when it is an ``AsyncioStream`` (asyncio's own TCP
        #: connections): read without a cancel scope, written without a pass
        #: round the loop. Its writes count as done only once the kernel has
        #: taken every byte (a write buffer limit of zero), as anyio's streams
        #: do, so the write deadline covers a peer that stops reading.
        self._fast: AsyncioStream | None = None
        # The deadline for the head being awaited on an ``AsyncioStream``
        # (``_watch``): one timer per connection that is moved on only when
        # it fires, not one timer per request.
        self._loop: asyncio.AbstractEventLoop | None = None
        self._head_due: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._timer_due = 0.0
        if isinstance(stream, AsyncioStream):
            self._fast = stream
            self._loop = asyncio.get_running_loop()
            if stream.transport is not None:
                stream.transport.set_write_buffer_limits(0)

    # -- reading ---------------------------------------------------------------------

    async def _receive(self, timeout: float | None) -> bytes | None:
        """The next bytes from the client: ``b""`` at end of input or when the
        connection broke, ``None`` when ``timeout`` seconds passed first.

        On an ``AsyncioStream`` the deadline is a timer on the loop; on any
        other stream it is an anyio cancel scope.
        """
        fast = self._fast
        if fast is not None:
            try:
                return await fast.receive_chunk(timeout)
            except TimeoutError:
                return None
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                return b""
        try:
            if timeout is None:
                return await self.stream.receive(_RECEIVE_SIZE)
            with anyio.move_on_after(timeout):
                return await self.stream.receive(_RECEIVE_SIZE)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return b""
        return None

    async def _fill(self, timeout: float | None) -> int | None:
        """Hand the next bytes to h11: how many (0: end of input), ``None`` on timeout."""
        data = await self._receive(timeout)
        if data is None:
            return None
        if not data:
            self.peer_closed = True
        self.h11.receive_data(data)
        return len(data)

    async def next_request(self, idle_timeout: float) -> RequestHead | None:
        """The next request's head, or ``None`` when the connection is to close.

        ``idle_timeout`` bounds the wait for the request's first byte: a
        client that sends none in time is closed on silently (RFC 9112
        section 9.5; a 408 on an idle keep-alive connection would be taken
        for the answer to the client's next request). From the first byte on,
        the whole head must arrive within ``read_timeout``: a client that
        trickles one in slower is answered 408 and closed on (RFC 9110
        section 15.5.9). Raises ``h11.RemoteProtocolError`` for a malformed
        or oversized head.

        A head that arrives in one piece, the usual case, costs one wait and
        no cancel scope: the ``read_timeout`` deadline is set only once a head
        has turned out to be incomplete, and on an ``AsyncioStream`` both
        deadlines are kept by the connection's own timer (``_watch``).
        """
        timeout: float | None = idle_timeout
        deadline: float | None = None
        begun = False
        buffered, ended = self.h11.trailing_data
        fast = self._fast
        if fast is not None:
            if buffered or fast.looks_dead():
                # Input is waiting already (pipelined requests, or the end):
                # the receive below will not wait, so let other tasks run
                # first, as every anyio stream operation does.
                await anyio.lowlevel.checkpoint()
            self._watch(idle_timeout)
            timeout = None
        # With nothing buffered between requests h11 can only answer
        # NEED_DATA: the first read needs no asking.
        skip = not buffered and not ended and self.h11.their_state is h11.IDLE
        try:
            while True:
                if skip:
                    skip = False
                    event: object = h11.NEED_DATA
                else:
                    event = self.h11.next_event()
                if event is not h11.NEED_DATA:
                    if type(event) is h11.Request:
                        self.bodiless = event.method == b"HEAD"
                        return self._head_of(event)
                    return None  # ConnectionClosed
                if self.peer_closed:
                    return None
                if begun and deadline is None:  # the head has begun: read_timeout from now
                    if fast is not None:
                        self._watch(self.read_timeout)
                    deadline = anyio.current_time() + self.read_timeout
                if deadline is not None and fast is None:
                    timeout = max(0.0, deadline - anyio.current_time())
                got = await self._fill(timeout)
                if got is None:  # nothing, or not enough, in time
                    if begun and self.h11.our_state is h11.IDLE:
                        text = "Request Timeout: the request head did not arrive in time"
                        await self.respond_text(408, text, [("connection", "close")])
                    return None
                begun = begun or got > 0
        finally:
            self._head_due = None
            if fast is not None:
                fast.interrupted = False

    def _head_of(self, event: h11.Request) -> RequestHead:
        """The ``RequestHead`` of ``event``, from the previous one when it can be.

        A client on a keep-alive connection repeats its request line and
        headers, often all but ``Content-Length``: the same bytes give the
        same head (nothing changes a ``RequestHead`` once made), and a new
        length alone gives a copy with that value.
        """
        items = event.headers.raw_items()
        last = self._last_request
        if last is not None and last[1] == event.target and last[0] == event.method:
            if last[2] == items:
                return last[3]
            at = last[4]
            before = last[2]
            if (
                at >= 0
                and len(items) == len(before)
                and items[at][0] == before[at][0]
                and items[:at] == before[:at]
                and items[at + 1 :] == before[at + 1 :]
            ):
                head = last[3].with_length(items[at][1].decode("latin-1"))
                self._last_request = (event.method, event.target, items, head, at)
                return head
        head = RequestHead.from_h11(event, items)
        at = -1
        for i, (name, _) in enumerate(items):
            if name.lower() == b"content-length":
                at = i
        self._last_request = (event.method, event.target, items, head, at)
        return head

    def _watch(self, timeout: float) -> None:
        """Give the head now awaited ``timeout`` seconds (``AsyncioStream`` only).

        The connection keeps one timer: when it fires before the head's
        deadline (which later requests have moved on), it is set again for
        that deadline; when the deadline has passed with the head still
        awaited, the wait is ended (``AsyncioStream.interrupt``) as a timeout,
        the connection left open for a 408.
        """
        assert self._loop is not None
        due = self._loop.time() + timeout
        self._head_due = due
        if self._timer is None or self._timer_due > due:
            if self._timer is not None:
                self._timer.cancel()
            self._timer = self._loop.call_at(due, self._expire)
            self._timer_due = due

    def _expire(self) -> None:
        self._timer = None
        due = self._head_due
        if due is None or self._fast is None:
            return  # no head awaited now: the next wait sets the timer again
        if due > self._timer_due:
            assert self._loop is not None
            self._timer = self._loop.call_at(due, self._expire)
            self._timer_due = due
            return
        self._fast.interrupt()

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
                # Only a body still on its way needs a deadline; one that came
                # with the head is taken as it is.
                if deadline is None:
                    deadline = anyio.current_time() + self.read_timeout
                if self.h11.they_are_waiting_for_100_continue:
                    await self._send(h11.InformationalResponse(status_code=100, headers=[]))
                remaining = deadline - anyio.current_time()
                if remaining > 0 and await self._fill(remaining) is not None:
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
        fast = self._fast
        try:
            if fast is not None:
                # Written at once; only what the kernel did not take at once
                # is waited for (the write buffer limit is zero), under the
                # write deadline.
                fast.write(data)
                transport = fast.transport
                if transport is None or not transport.get_write_buffer_size():
                    return
                with anyio.move_on_after(self.write_timeout) as scope:
                    await fast.drain()
            else:
                with anyio.move_on_after(self.write_timeout) as scope:
                    await self.stream.send(data)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self.h11.send_failed()
            raise PeerGone(str(exc)) from exc
        if scope.cancelled_caught:
            self.h11.send_failed()
            if fast is not None:
                fast.abort()  # what is still buffered will never be read
            raise PeerGone("the client stopped reading")

    def _head(
        self, status: int, headers: list[tuple[str, str]], length: int | None = None
    ) -> h11.Response:
        """The response head for h11; ``length``, when given, becomes ``Content-Length``."""
        if self.extra_headers:
            headers, self.extra_headers = [*headers, *self.extra_headers], []
        known = validated_head(headers)
        if known is None or ValidatedHeaders is None:
            if length is not None:
                headers = [*headers, ("content-length", str(length))]
            for name, value in headers:
                if name.lower() == "connection" and value.lower() == "close":
                    self.closing = True
            return h11.Response(status_code=status, headers=_encode(headers))
        items, closing = known
        if closing:
            self.closing = True
        # Responses on one connection tend to repeat (the same head, status
        # and length): the last head is kept, as h11's events are immutable.
        last = self._last_head
        if last is not None and last[0] is items and last[1] == status and last[2] == length:
            return last[3]
        full = list(items)
        if length is not None:
            full.append((b"content-length", b"content-length", b"%d" % length))
        response = h11.Response(status_code=status, headers=ValidatedHeaders(full))
        self._last_head = (items, status, length, response)
        return response

    async def start(self, status: int, headers: list[tuple[str, str]], data: bytes = b"") -> None:
        """Send the head of a response whose body follows in ``write`` calls.

        ``data``, when given, is the body's first piece, sent with the head.
        """
        head = self._head(status, headers)
        if data and not self.bodiless:
            await self._send(head, h11.Data(data=data))
        else:
            await self._send(head)

    async def write(self, data: bytes) -> None:
        if not self.bodiless:
            await self._send(h11.Data(data=data))

    async def finish(self, data: bytes = b"") -> None:
        """End a streamed response; ``data``, when given, is its last piece."""
        if data and not self.bodiless:
            await self._send(h11.Data(data=data), _END)
        else:
            await self._send(_END)

    async def respond(self, status: int, headers: list[tuple[str, str]], body: bytes = b"") -> None:
        """Send a whole response with its ``Content-Length``: head and body in one write."""
        head = self._head(status, headers, len(body))
        if body and not self.bodiless:
            await self._send(head, h11.Data(data=body), _END)
        else:
            await self._send(head, _END)

    async def respond_text(
        self, status: int, text: str, headers: list[tuple[str, str]] | None = None
    ) -> None:
        await self.respond(status, *text_body(text, headers))

    async def refuse(self, exc: h11.RemoteProtocolError) -> None:
        """Answer a request h11 refused, unless a response has begun: h11's
        status and a fixed text naming the kind of error (``protocol_refusal``),
        never the client's bytes, which h11's message quotes (logged, at DEBUG)."""
        logger.debug("refusing a malformed request: %s", exc)
        if self.h11.our_state in (h11.IDLE, h11.SEND_RESPONSE):
            await self.respond_text(*protocol_refusal(exc), [("connection", "close")])

    async def watch_disconnect(self) -> None:
        """Return when the client closes its end (for use beside a streamed response).

        Bytes that arrive first are a pipelined request: they are handed to h11
        to be read later, up to twice the head limit, after which reading stops
        (and so does watching).
        """
        buffered = 0
        while buffered <= 2 * self.max_header_size:
            data = await self._receive(None)
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

    async def aclose(self, unanswered: str | None = None) -> None:
        """Close the connection; after an error response, linger briefly first.

        A client still sending (a body we refused with 413, a head too large)
        would otherwise get a TCP reset that can destroy the response before
        it is read: so the write side is shut, and input drained (at most
        ``_LINGER_BYTES`` for ``_LINGER_SECONDS``) before the socket closes.

        ``unanswered``: why a request may have been given up on (a shutdown
        past its grace period); a request whose response has not begun then
        gets a 503 saying so, rather than a connection closed without one.
        """
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        fast = self._fast
        transport = fast.transport if fast is not None else None
        if fast is not None and transport is not None and transport.get_write_buffer_size():
            fast.abort()  # a write cut short: what it left is dropped, as anyio does
        with anyio.CancelScope(shield=True):
            try:
                if unanswered is not None and self.h11.our_state is h11.SEND_RESPONSE:
                    headers = [("connection", "close"), ("retry-after", "1")]
                    await self.respond_text(503, f"Service Unavailable: {unanswered}", headers)
                if self.closing and not self.peer_closed:
                    await self._linger()
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError, PeerGone):
                pass
            finally:
                try:
                    # Bounded: a stream that waits to flush what it holds must
                    # not wait on a peer that stopped reading.
                    with anyio.move_on_after(self.write_timeout):
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
