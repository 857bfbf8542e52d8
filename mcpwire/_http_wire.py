"""One HTTP/1.1 server connection: an anyio byte stream driven by ``h11``.

Theory of operation
-------------------
``h11`` is the sans-IO HTTP/1.1 state machine; ``HTTPConnection`` only
moves bytes between it and the socket, under limits and deadlines. Reading
requests (limits, deadlines, the fast path for plain requests) and writing
bytes under the write deadline are its base, ``_http_read.RequestReader``;
this module makes the responses. A request h11 refuses is answered with
h11's status and words of our own (``refuse``), never with the client's bytes.

A response is either whole (``respond``: status, headers, body with its
``Content-Length``, in one write) or streamed (``start``, ``write``...,
``finish``: h11 picks chunked encoding for HTTP/1.1 clients); the answer
to a ``HEAD`` request is its head alone (``bodiless``). A whole response to
a request the fast path read is written by it too (``_http_fast``); any
other answer to one first hands the request to h11 (``_handover``). While a
streamed response is being written, ``watch_disconnect`` reads the socket in
another task: end of input means the client went away (the caller cancels
the work it was doing for it); bytes that arrive instead are a pipelined
next request and are kept for the next cycle, bounded. ``reusable`` says
whether the connection may serve another request (keep-alive) once a
response is complete.

The request handlers (``_http_server``, ``_http_modern``, ``_http_legacy``,
``_http_sse``) see only ``HTTPExchange`` (``_http_exchange``), the part of
this interface that concerns one request and its response, and a
``RequestHead``; the ASGI adapter (``_asgi``) provides the same two from an
ASGI scope and its ``receive``/``send``, so both ways in share every rule.

What a response costs beyond h11's framing is kept small, since it is paid
on every request of a connection: on an ``AsyncioStream`` a write that the
kernel takes at once needs no pass round the loop; a response with the
previous one's head, status and length reuses its h11 event; response header
lists are validated by h11 once each.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import anyio
import h11

from ._aio_stream import message_writes
from ._http_exchange import BodyTooLarge, HTTPExchange, PeerGone, ReadTimeout, text_body
from ._http_fast import response_head
from ._http_gate import (
    HeaderItems,
    RequestHead,
    ValidatedHeaders,
    protocol_refusal,
    validated_head,
)
from ._http_read import RECEIVE_SIZE, Cycle, RequestReader

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

#: Lingering close after an error response: how long and how much to drain.
_LINGER_SECONDS = 1.0
_LINGER_BYTES = 256 * 1024

_CONTENT_LENGTH = b"content-length: %d\r\n\r\n"


#: h11's events are immutable: one end of message serves every response.
_END = h11.EndOfMessage()


class HTTPConnection(RequestReader):
    """HTTP/1.1 on one accepted byte stream (see the module docstring)."""

    # -- writing ---------------------------------------------------------------------

    def _head(
        self, status: int, headers: list[tuple[str, str]], length: int | None = None
    ) -> h11.Response:
        """The response head for h11; ``length``, when given, becomes ``Content-Length``."""
        headers, items = self._validated(headers)
        if items is None or ValidatedHeaders is None:
            if length is not None:
                headers = [*headers, ("content-length", str(length))]
            for name, value in headers:
                if name.lower() == "connection" and value.lower() == "close":
                    self.closing = True
            return h11.Response(status_code=status, headers=_encode(headers))
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

    def _validated(
        self, headers: list[tuple[str, str]]
    ) -> tuple[list[tuple[str, str]], HeaderItems | None]:
        """A response's headers with the ``extra_headers`` taken in, and the same
        as h11 validated them (``None`` when they frame the body themselves);
        ``closing`` is set when validated headers close the connection."""
        if self.extra_headers:
            headers, self.extra_headers = [*headers, *self.extra_headers], []
        known = validated_head(headers)
        if known is None:
            return headers, None
        if known[1]:
            self.closing = True
        return headers, known[0]

    async def start(self, status: int, headers: list[tuple[str, str]], data: bytes = b"") -> None:
        """Send the head of a response whose body follows in ``write`` calls.

        ``data``, when given, is the body's first piece, sent with the head.
        """
        self._handover()
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
        if self._cycle is not None:
            if 200 <= status < 600 and status not in (204, 304):
                await self._respond_fast(self._cycle, status, headers, body)
                return
            self._handover()
        head = self._head(status, headers, len(body))
        if body and not self.bodiless:
            await self._send(head, h11.Data(data=body), _END)
        else:
            await self._send(head, _END)

    async def _respond_fast(
        self, cycle: Cycle, status: int, headers: list[tuple[str, str]], body: bytes
    ) -> None:
        """``respond`` for a fast-path request: the bytes h11 would write."""
        headers, items = self._validated(headers)
        if items is None:
            self._handover()
            await self._send(self._head(status, headers, len(body)), h11.Data(data=body), _END)
            return
        last = self._fast_head
        if last is not None and last[0] is items and last[1] == status:
            head = last[2]
        else:
            head = response_head(status, items)
            self._fast_head = (items, status, head)
        cycle.answered = True
        await self._write(*message_writes(head + _CONTENT_LENGTH % len(body), body))

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
            if self._cycle is not None:  # after the cycle's own bytes
                self._cycle.rest += data
            else:
                self.h11.receive_data(data)
        await anyio.sleep_forever()

    def on_disconnect(self, callback: Callable[[], None]) -> Callable[[], None] | None:
        """On an ``AsyncioStream``: ``callback`` is called once input ends, told by
        the stream itself, so no task reads beside the response. Bytes that arrive
        meanwhile (a pipelined request) stay in the stream, bounded by its
        ``max_buffered``, for the next cycle. Elsewhere ``None``: use
        ``watch_disconnect``."""
        fast = self._fast
        if fast is None:
            return None

        def ended() -> None:
            self.peer_closed = True
            callback()

        if fast.at_end:
            ended()
            return _keep
        fast.on_end = ended

        def stop() -> None:
            if fast.on_end is ended:
                fast.on_end = None

        return stop

    @property
    def reusable(self) -> bool:
        """Whether another request may follow on this connection."""
        cycle = self._cycle
        if cycle is not None:
            return (
                not self.closing
                and not self.peer_closed
                and cycle.answered
                and len(cycle.body) == cycle.length
            )
        return (
            not self.closing
            and not self.peer_closed
            and self.h11.our_state is h11.DONE
            and self.h11.their_state is h11.DONE
        )

    def next_cycle(self) -> None:
        cycle, self._cycle = self._cycle, None
        if cycle is None:
            data, closed = self.h11.trailing_data
            if not data or data[:1] not in b"\r\n":
                self.h11.start_next_cycle()
                return
            # Empty lines before the next request line (RFC 9112 section 2.2)
            # are in h11's buffer: a new machine gets what follows them.
            self.h11 = h11.Connection(h11.SERVER, max_incomplete_event_size=self.max_header_size)
            if data := data.lstrip(b"\r\n"):
                self.h11.receive_data(data)
            if closed:
                self.h11.receive_data(b"")
        else:  # h11 stayed idle: it reads what came next, but for empty lines
            # before it (RFC 9112 section 2.2, as ``next_request``)
            rest = cycle.rest.lstrip(b"\r\n")
            if rest:  # (no bytes at all would tell h11 the input ended)
                self.h11.receive_data(rest)

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
                cycle = self._cycle
                if unanswered is not None and (
                    self.h11.our_state is h11.SEND_RESPONSE if cycle is None else not cycle.answered
                ):
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
                    data = await self.stream.receive(RECEIVE_SIZE)
                except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return
                drained += len(data)


def _keep() -> None:
    """Nothing to stop (``on_disconnect`` found the input ended already)."""


def _encode(headers: list[tuple[str, str]]) -> list[tuple[bytes, bytes]]:
    return [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers]
