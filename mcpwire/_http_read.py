"""Reading requests off one HTTP/1.1 server connection: h11, or the fast path.

``RequestReader`` is the base of ``_http_wire.HTTPConnection``: the
connection's state and its byte I/O. It moves bytes from the socket to
``h11`` under limits and deadlines, or, for a plain request whose head
arrives whole, reads it with the fast path (``_http_fast``) and leaves h11
idle for that cycle (``Cycle``); and it writes bytes (``_send``, ``_write``)
under the write deadline, so that a peer that stops reading is dropped
(``PeerGone``). ``HTTPConnection`` makes the responses.

* a request head larger than ``max_header_size`` is refused by h11 itself
  (``max_incomplete_event_size``; it reports status 431);
* a body larger than ``max_body_size`` is refused (``BodyTooLarge``, a 413)
  from the ``Content-Length`` before any of it is read, or as soon as a
  chunked body passes the limit;
* every read of a head or body has a deadline, so a peer that stalls
  mid-request is dropped (``PeerGone``) instead of holding a task and its
  buffers forever; a request head begun but not whole in time raises
  ``HeadTimeout`` (the server answers it with 408), while an idle connection
  closes silently;
* on asyncio the server's connections are ``AsyncioStream``s
  (``_aio_stream``): reads need no cancel scope, since the wait for a head
  is bounded by one timer per connection, moved on only when it fires
  (``_watch``), and a body still on its way by the stream's own timeout.
  Any other stream (trio's, a test's) is read under anyio cancel scopes,
  with the same deadlines;
* a head that repeats the previous request's gives the same ``RequestHead``
  (``_head_of``), or a copy with the new ``Content-Length``.
"""

from __future__ import annotations

import asyncio
from typing import Union

import anyio
import anyio.abc
import anyio.lowlevel
import h11

from ._aio_stream import AsyncioStream
from ._http_exchange import BodyTooLarge, HeadTimeout, PeerGone, ReadTimeout
from ._http_fast import FastHead, parse_head
from ._http_gate import HeaderItems, RequestHead

__all__ = ("RECEIVE_SIZE", "Cycle", "RequestReader")

RECEIVE_SIZE = 65536

_Sendable = Union[h11.InformationalResponse, h11.Response, h11.Data, h11.EndOfMessage]


class Cycle:
    """A request the fast path read (``_http_fast``), which h11 has not seen:
    its head's bytes, the body so far, and bytes past the body (a pipelined
    next request, h11's once this cycle is over)."""

    __slots__ = ("answered", "body", "head", "length", "rest")

    def __init__(self, head: bytes, body: bytes, length: int, rest: bytes) -> None:
        self.head = head
        self.body = body
        self.length = length
        self.rest = rest
        self.answered = False


class RequestReader:
    """The state of one HTTP/1.1 server connection, and the reading of its
    requests (see the module docstring); ``_http_wire.HTTPConnection`` adds
    the writing of responses."""

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
        #: This cycle's request when the fast path read it (h11 stays idle);
        #: ``None`` when h11 reads and answers the cycle.
        self._cycle: Cycle | None = None
        #: The fast path's last response head: header list, status, bytes.
        self._fast_head: tuple[HeaderItems, int, bytes] | None = None
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
                return await self.stream.receive(RECEIVE_SIZE)
            with anyio.move_on_after(timeout):
                return await self.stream.receive(RECEIVE_SIZE)
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            return b""
        return None

    async def _fill(self, timeout: float | None) -> int | None:
        """Hand the next bytes to h11: how many (0: end of input), ``None`` on timeout."""
        return self._feed(await self._receive(timeout))

    def _feed(self, data: bytes | None) -> int | None:
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
        trickles one in slower is owed a 408 (RFC 9110 section 15.5.9):
        ``HeadTimeout`` says so. Raises ``h11.RemoteProtocolError`` for a malformed
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
            if buffered or fast.has_input():
                # Input is waiting already (pipelined requests, or the end):
                # the receive below will not wait, so let other tasks run
                # first, as every anyio stream operation does.
                await anyio.lowlevel.checkpoint()
            self._watch(idle_timeout)
            timeout = None
        # With nothing buffered between requests h11 can only answer
        # NEED_DATA: the first read needs no asking, and what it brings may
        # be a head for the fast path.
        skip = plain = not buffered and not ended and self.h11.their_state is h11.IDLE
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
                        return self._head_of(event.method, event.target, event.headers.raw_items())
                    return None  # ConnectionClosed
                if self.peer_closed:
                    return None
                if begun and deadline is None:  # the head has begun: read_timeout from now
                    if fast is not None:
                        self._watch(self.read_timeout)
                    deadline = anyio.current_time() + self.read_timeout
                if deadline is not None and fast is None:
                    timeout = max(0.0, deadline - anyio.current_time())
                data = await self._receive(timeout)
                if plain and data and data[:1] in b"\r\n":
                    # RFC 9112 section 2.2: a server SHOULD ignore empty lines
                    # received before a request line. Only read_timeout's worth.
                    data = data.lstrip(b"\r\n")
                    if not data:
                        begun = True
                        continue
                if plain and data:
                    plain = False
                    quick = parse_head(data, self.max_header_size)
                    if quick is not None:
                        return self._take(quick, data)
                got = self._feed(data)
                if got is None:  # nothing, or not enough, in time
                    if begun and self.h11.our_state is h11.IDLE:
                        raise HeadTimeout("the request head did not arrive in time")
                    return None
                begun = begun or got > 0
        finally:
            self._head_due = None
            if fast is not None:
                fast.interrupted = False

    def _take(self, fast: FastHead, data: bytes) -> RequestHead:
        """Begin a cycle with the request the fast path read from ``data``."""
        end = fast.end
        stop = end + fast.length
        self._cycle = Cycle(data[:end], data[end:stop], fast.length, data[stop:])
        self.bodiless = False
        return self._head_of(b"POST", fast.target, fast.items)

    def _handover(self) -> None:
        """Give h11 the fast-path request of this cycle (head, the body so far,
        and what followed), for an answer the fast path does not write."""
        cycle, self._cycle = self._cycle, None
        if cycle is None:
            return
        conn = self.h11
        conn.receive_data(cycle.head + cycle.body + cycle.rest)
        while True:  # the request, its body as far as it came, its end
            event = conn.next_event()
            if event is h11.NEED_DATA or event is h11.PAUSED or type(event) is h11.EndOfMessage:
                return

    def _head_of(
        self, method: bytes, target: bytes, items: list[tuple[bytes, bytes]]
    ) -> RequestHead:
        """The ``RequestHead`` of a request, from the previous one when it can be.

        A client on a keep-alive connection repeats its request line and
        headers, often all but ``Content-Length``: the same bytes give the
        same head (nothing changes a ``RequestHead`` once made), and a new
        length alone gives a copy with that value.
        """
        last = self._last_request
        if last is not None and last[1] == target and last[0] == method:
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
                self._last_request = (method, target, items, head, at)
                return head
        head = RequestHead.from_parts(method, target, items)
        at = -1
        for i, (name, _) in enumerate(items):
            if name.lower() == b"content-length":
                at = i
        self._last_request = (method, target, items, head, at)
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
        if self._cycle is not None:
            return await self._fast_body(self._cycle, limit)
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

    async def _fast_body(self, cycle: Cycle, limit: int) -> bytes:
        """``read_body`` for a fast-path request: its ``Content-Length`` bytes."""
        if cycle.length > limit:
            raise BodyTooLarge
        missing = cycle.length - len(cycle.body)
        if missing:
            pieces = [cycle.body]
            deadline = anyio.current_time() + self.read_timeout
            while missing > 0:
                remaining = deadline - anyio.current_time()
                data = await self._receive(remaining) if remaining > 0 else None
                if data is None:
                    raise ReadTimeout("the request body did not arrive in time")
                if not data:
                    self.peer_closed = True
                    raise PeerGone("the client closed the connection mid-request")
                if len(data) > missing:
                    cycle.rest, data = data[missing:], data[:missing]
                pieces.append(data)
                missing -= len(data)
            cycle.body = b"".join(pieces)
        return cycle.body

    # -- writing bytes -----------------------------------------------------------------

    async def _send(self, *events: _Sendable) -> None:
        """Frame ``events`` with h11 and write the bytes in one piece."""
        pieces: list[bytes] = []
        try:
            for event in events:
                pieces.extend(self.h11.send_with_data_passthrough(event) or ())
        except h11.LocalProtocolError as exc:
            raise PeerGone(str(exc)) from exc
        if pieces:
            await self._write(pieces[0] if len(pieces) == 1 else b"".join(pieces))

    async def _write(self, data: bytes, large: bytes = b"") -> None:
        """Write ``data``, then ``large`` uncopied (``message_writes``), under one
        write deadline."""
        fast = self._fast
        try:
            if fast is not None:
                # Written at once; only what the kernel did not take at once
                # is waited for (the write buffer limit is zero), under the
                # write deadline. ``large`` as a memoryview (see ``JOIN_LIMIT``).
                fast.write(data)
                if large:
                    fast.write(memoryview(large))
                transport = fast.transport
                if transport is None or not transport.get_write_buffer_size():
                    return
                with anyio.move_on_after(self.write_timeout) as scope:
                    await fast.drain()
            else:
                with anyio.move_on_after(self.write_timeout) as scope:
                    await self.stream.send(data)
                    if large:
                        await self.stream.send(large)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
            self.h11.send_failed()
            raise PeerGone(str(exc)) from exc
        if scope.cancelled_caught:
            self.h11.send_failed()
            if fast is not None:
                fast.abort()  # what is still buffered will never be read
            raise PeerGone("the client stopped reading")
