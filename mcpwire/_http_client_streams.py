"""Reading response bodies for the Streamable HTTP client transport.

Theory of operation
-------------------
A response stream (``_Stream``) is whatever the server sends back for one
POSTed request: a JSON body, or a ``text/event-stream`` whose ``message``
events carry JSON-RPC messages. Bodies are parsed with the JSON codec's
limits and events with ``SSEDecoder`` (CR, LF and CRLF line ends, events split
across reads anywhere, ``max_event_size``). Each message goes to the inbox in
arrival order, except the stream's *answer*: the response whose id is the
request's (or an error response with id ``null``, which the server could not
attribute and which we attribute to the only request the stream is about).
The answer ends the stream's job; it is settled through the fast path when no
message of the same stream is queued ahead of it, so a request's progress
notifications are always handled before its result.

Legacy resumability (2025-11-25 ``basic/transports.mdx``, "Resumability and
Redelivery", and the SSE polling of "Sending Messages to the Server"): a
stream that ends, or breaks, before its answer but after an event with an id
is reopened with ``GET`` and ``Last-Event-ID``, after the server's ``retry``
or an exponential, jittered backoff; the attempt count restarts whenever an
event arrives, and ``reconnect_attempts`` fruitless attempts fail the request.
2026-07-28 has no resumability: a modern stream that breaks fails its request.

The legacy standalone stream (``GET`` after ``notifications/initialized``)
carries server->client requests and notifications. 405, or any answer that is
not an event stream, means the server offers none. It reconnects like a
resumed stream (``Last-Event-ID``, ``retry``, backoff, the count restarting on
every event); silence longer than ``stream_idle_timeout`` reopens it without
counting; a 404 means the session ended (the next POST re-initializes); a 410
to a ``Last-Event-ID`` means the server cannot replay what followed that event
(it fell out of its window): the stream is reopened from now, without the id,
and a warning says that messages may have been missed. After
``reconnect_attempts`` consecutive failures the transport ends, and every
pending request fails with the reason (pain point #18), instead of waiting
forever for messages that can no longer arrive.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

import anyio

from ._http_client_base import (
    ERROR_BODY_EXCERPT,
    HTTPClientOptions,
    HTTPTransportBase,
    backoff_delay,
    http_error,
    next_events,
)
from ._http_client_conn import URL, HTTPClient, HTTPError, HTTPResponse, ReadTimeout
from ._http_client_headers import encode_header_value
from .sansio import _messages as m
from .sansio._messages import ErrorCode, RequestId
from .sansio._sse import SSEDecoder, SSEEvent, SSEEventTooLarge

__all__ = ("ACCEPT_BOTH", "ACCEPT_SSE", "EventStreams", "Stream", "drain")

logger = logging.getLogger("mcpwire.http")

ACCEPT_BOTH = "application/json, text/event-stream"
ACCEPT_SSE = "text/event-stream"
#: Seconds spent reading the end of a response stream after its answer, so
#: that its socket can be kept alive.
_DRAIN = 0.05


@dataclass(slots=True)
class Stream:
    """What one response stream (and its resumptions) has shown so far."""

    rid: RequestId | None
    capture: list[m.Response | m.ErrorResponse] | None = None
    done: bool = False
    queued: bool = False
    events: int = 0
    last_id: str = ""
    retry: int | None = None
    cause: str = ""
    #: The last read timed out (the server was silent), as opposed to failing.
    idle: bool = False


class EventStreams(HTTPTransportBase):
    """Response-body handling of ``HTTPClientTransport`` (see the module docstring)."""

    url: URL
    http: HTTPClient
    options: HTTPClientOptions
    session_id: str | None
    protocol_version: str | None
    _init_request: m.Request | None
    _get_running: bool
    _get_answered: anyio.Event | None

    # Defined by HTTPClientTransport: the request headers for ``request``.
    _headers: Callable[..., list[tuple[str, str]]]

    def _peek(self, item: m.Response | m.ErrorResponse) -> None:
        """Learn the negotiated version from the answer to ``initialize``."""
        init = self._init_request
        if init is not None and item.id == init.id and type(item) is m.Response:
            version = item.result.get("protocolVersion")
            if isinstance(version, str):
                self.protocol_version = version

    async def _final(self, stream: Stream, item: m.Response | m.ErrorResponse) -> None:
        if not self._settled(stream, item):
            await self._deliver(item)

    def _settled(self, stream: Stream, item: m.Response | m.ErrorResponse) -> bool:
        """Make ``item`` the stream's answer; False if it still has to be queued."""
        stream.done = True
        if stream.capture is not None:
            stream.capture.append(item)
            return True
        self._peek(item)
        return not stream.queued and self._settle_now(item)

    async def _deliver_body(self, stream: Stream, body: bytes) -> None:
        item = m.parse(body, self.options.limits)
        kind = type(item)
        if (
            (kind is m.Response or kind is m.ErrorResponse)
            and item.id == stream.rid  # type: ignore[union-attr]
            and stream.rid is not None
            and not stream.done
        ):
            # The usual body: the answer itself (what ``_take`` would find).
            await self._final(stream, item)  # type: ignore[arg-type]
            return
        await self._take(stream, item)
        if not stream.done and stream.rid is not None:
            problem = item.error.message if type(item) is m.Invalid else "it holds no answer to it"
            await self._final(
                stream,
                http_error(
                    stream.rid,
                    ErrorCode.INTERNAL_ERROR,
                    "the server's JSON response is not a JSON-RPC answer to the request: "
                    + problem,
                    body=body,
                ),
            )

    async def _take(self, stream: Stream, item: m.Incoming) -> None:
        """Deliver one parsed message of a response; notices this request's answer."""
        kind = type(item)
        if kind is m.Batch:
            for element in item.items:  # type: ignore[union-attr]
                await self._take(stream, element)
            return
        if kind is m.Invalid:
            invalid: m.Invalid = item  # type: ignore[assignment]
            if invalid.answers is not None and invalid.answers == stream.rid and not stream.done:
                # Our answer, malformed: no other is due, so the request fails now.
                why = "the server's answer to the request is malformed: " + invalid.error.message
                await self._final(stream, http_error(stream.rid, ErrorCode.INTERNAL_ERROR, why))
                return
            # Any other goes to the session, as on every transport: it counts it,
            # answers it where JSON-RPC asks (a POST of its own, legacy era), and
            # fails the request a malformed answer names.
        if stream.rid is not None and (
            kind is m.Request or (kind is m.Notification and item.method == "notifications/message")  # type: ignore[union-attr]
        ):
            # A request's stream is read by the task that sent it (``send``).
            self._note_origin(item)
        if kind is m.ErrorResponse or kind is m.Response:
            answer: m.Response | m.ErrorResponse = item  # type: ignore[assignment]
            mine = answer.id is None or answer.id == stream.rid
            if stream.rid is not None and not stream.done and mine:
                if answer.id is None:
                    answer = m.ErrorResponse(stream.rid, answer.error)
                await self._final(stream, answer)
                return
            self._peek(answer)
        stream.queued = True
        await self._deliver(item)

    # -- event streams ----------------------------------------------------------------

    async def _read_stream(
        self, response: HTTPResponse, stream: Stream, *, resumable: bool
    ) -> None:
        """Read a request's event stream to its answer, resuming it if it breaks off."""
        await self._consume(response, stream)
        if stream.done:
            await drain(response)
            return
        if resumable and _last_event_id(stream) and stream.rid is not None:
            await self._resume(stream)
            if stream.done:
                return
        assert stream.rid is not None
        why = f" ({stream.cause})" if stream.cause else ""
        await self._final(
            stream,
            http_error(
                stream.rid,
                ErrorCode.INTERNAL_ERROR,
                f"the server's response stream ended before the answer arrived{why}",
                status=response.status,
            ),
        )

    async def _consume(self, response: HTTPResponse, stream: Stream) -> None:
        """Deliver a stream's messages until it ends or this request's answer arrives."""
        decoder = SSEDecoder(max_event_size=self.options.max_event_size)
        try:
            while not stream.done:
                events = await next_events(response, decoder)
                if events is None:
                    break
                for event in events:
                    await self._event(stream, event)
                    if stream.done:
                        break
        except SSEEventTooLarge as exc:
            stream.cause = str(exc)
            if stream.rid is not None:
                await self._final(
                    stream, http_error(stream.rid, ErrorCode.INVALID_REQUEST, str(exc))
                )
        except ReadTimeout as exc:
            stream.cause, stream.idle = str(exc), True
        except HTTPError as exc:
            stream.cause = str(exc)
        finally:
            stream.last_id = decoder.last_event_id or stream.last_id
            if decoder.retry is not None:
                stream.retry = decoder.retry

    async def _event(self, stream: Stream, event: SSEEvent) -> None:
        stream.events += 1
        if event.event != "message" or not event.data:
            return  # a priming event (an id, no data) or an event type MCP does not use
        await self._take(stream, m.parse(event.data, self.options.limits))

    async def _resume(self, stream: Stream) -> None:
        """2025-11-25 polling: reopen a request's stream with ``GET`` and ``Last-Event-ID``."""
        attempts = 0
        while not stream.done and attempts < self.options.reconnect_attempts:
            attempts += 1
            await anyio.sleep(backoff_delay(attempts, self.options.reconnect_delay, stream.retry))
            headers = self._headers(None, accept=ACCEPT_SSE) + _last_event_id(stream)
            try:
                response = await self.http.request("GET", self.url, headers, timeout=None)
            except HTTPError as exc:
                stream.cause = str(exc)
                continue
            async with response:
                if not 200 <= response.status < 300 or response.media_type != "text/event-stream":
                    stream.cause = f"resuming with GET got HTTP {response.status}"
                    return
                seen = stream.events
                await self._consume(response, stream)
                if stream.events > seen:
                    attempts = 0

    async def _start_get_stream(self) -> None:
        """Open the standalone stream and wait (bounded) until the server answered
        the GET, so a request the server sends on it right away is not missed."""
        if not self.options.get_stream or self._get_running or self.protocol_version is None:
            return
        answered = self._get_answered = anyio.Event()
        self._get_running = self._spawn("GET stream", self._get_stream)
        if not self._get_running:
            logger.debug("%s: no task group, so no standalone GET stream", self.url)
            return
        with anyio.move_on_after(self.options.timeout):
            await answered.wait()

    async def _get_stream(self) -> None:
        """The legacy standalone event stream (see the module docstring)."""
        stream = Stream(None)
        attempts = 0
        try:
            while True:
                if attempts:
                    if attempts > self.options.reconnect_attempts:
                        logger.warning(
                            "%s: giving up on the event stream (%s)", self.url, stream.cause
                        )
                        raise self._fail(
                            f"lost the event stream of the MCP server at {self.url}: "
                            f"{attempts - 1} reconnection attempts failed ({stream.cause})"
                        )
                    await anyio.sleep(
                        backoff_delay(attempts, self.options.reconnect_delay, stream.retry)
                    )
                headers = self._headers(None, accept=ACCEPT_SSE) + _last_event_id(stream)
                try:
                    response = await self.http.request(
                        "GET", self.url, headers, timeout=self.options.timeout
                    )
                except HTTPError as exc:
                    stream.cause = str(exc)
                    attempts += 1
                    continue
                finally:
                    self._answered()
                async with response:
                    status = response.status
                    if status >= 500 or status in (408, 429):
                        stream.cause = f"HTTP {status}"
                        attempts += 1
                        continue
                    if status == 410 and _last_event_id(stream):
                        logger.warning(
                            "%s: the server cannot replay the event stream after event %r "
                            "(HTTP 410): reopened from now; messages since may be missed",
                            self.url,
                            stream.last_id,
                        )
                        await drain(response)
                        stream.last_id = ""
                        continue
                    if status == 404 and self.session_id is not None:
                        logger.info("%s: the session ended; the GET stream stops", self.url)
                        await drain(response)
                        return
                    if not 200 <= status < 300 or response.media_type != "text/event-stream":
                        # 405 is the spec's "no stream here"; other refusals mean the same.
                        logger.debug("%s: no standalone GET stream (HTTP %d)", self.url, status)
                        await drain(response)  # a short refusal leaves the socket reusable
                        return
                    response.timeout = self.options.stream_idle_timeout
                    seen = stream.events
                    stream.cause, stream.idle = "", False
                    await self._consume(response, stream)
                    if stream.events > seen:
                        attempts = 0
                    if not stream.idle:  # silence only reopens the stream, uncounted
                        attempts += 1
                    stream.cause = stream.cause or "the server ended the stream"
        except anyio.BrokenResourceError:
            pass
        finally:
            self._answered()
            self._get_running = False

    def _answered(self) -> None:
        if self._get_answered is not None:
            self._get_answered.set()


def _last_event_id(stream: Stream) -> list[tuple[str, str]]:
    """The ``Last-Event-ID`` header to resume ``stream`` with, if it can be sent.

    An id is sent back verbatim; one that is not plain printable ASCII cannot
    travel in a header, and the stream is reopened from its start instead.
    """
    if stream.last_id and encode_header_value(stream.last_id) == stream.last_id:
        return [("Last-Event-ID", stream.last_id)]
    return []


async def drain(response: HTTPResponse) -> None:
    """Read the rest of a body briefly, so that its socket can be reused.

    When the body ends within ``ERROR_BODY_EXCERPT`` bytes and ``_DRAIN``
    seconds (the end of a finished stream, a short refusal), the socket goes
    back to the pool; a server that keeps writing gets its socket closed.
    """
    left = ERROR_BODY_EXCERPT
    with anyio.move_on_after(_DRAIN):
        try:
            while left >= 0:
                chunk = await response.read_chunk()
                if not chunk:
                    return
                left -= len(chunk)
        except HTTPError:
            pass
