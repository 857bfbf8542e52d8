"""The deprecated HTTP+SSE client transport (2024-11-05 ``basic/transports.mdx``).

Theory of operation
-------------------
Two endpoints. The client opens ``GET <sse url>`` with
``Accept: text/event-stream`` and keeps it open for the whole connection; the
server MUST first send an ``endpoint`` event whose data is the URI to POST
messages to, and then sends every server->client message (responses
included) as a ``message`` event on that stream. Each client message is one
``POST`` to the endpoint, answered with 202 (any 2xx will do); the answer to a
request comes later on the event stream, so ``send()`` returns as soon as the
POST is accepted.

The endpoint is resolved against the SSE URL as RFC 3986 §5 says (pain point
#26: resolving it any other way loses a reverse proxy's path prefix). It must
be on the same origin as the SSE URL, because our headers (credentials
included) go with every POST; a server behind a proxy that announces an
internal address can be overridden with ``message_url``, resolved the same way
and given the endpoint's query (which carries the server's session id) when
it has none of its own.

Every wait is bounded by ``timeout`` as a whole, not only read by read: opening
the stream up to its endpoint event, and each POST up to its answer's head and
the first ``ERROR_BODY_EXCERPT`` bytes of its body (a 2xx head is acceptance,
however its body goes on). Messages that come before the endpoint event are
kept for after it, at most ``MAX_EARLY_EVENTS`` and ``max_event_size``
characters of them; beyond that the server is refused.

The session lives as long as the GET stream: when that ends or breaks the
transport ends with it (every pending request fails with the reason), since
the protocol has no way to resume a stream or a session. A POST is one
message's exchange only: one refused (a 4xx or 5xx, a redirect not followed,
no head in time) or whose connection ends before any response head (closed,
reset, no HTTP) fails the requests it carried with a ``TransportError`` naming
the status or the cause (``http_error``, ``no_response``), and the session goes
on, in-flight requests included; a notification or response has nothing to
fail and is logged at WARNING. Only a POST that cannot reach the server at all
(refused, no route) ends the transport: the server is gone.

``SSEConnection`` is the engine; ``SSEClientTransport`` is a transport built on
it, and the Streamable HTTP transport uses one directly when a server turns
out to speak only this older protocol.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio

from ._http_client_base import (
    ERROR_BODY_EXCERPT,
    INBOX_SIZE,
    HTTPClientOptions,
    HTTPTransportBase,
    excerpt,
    http_error,
    make_options,
    next_events,
    no_response,
    repeatable,
)
from ._http_client_conn import (
    URL,
    ConnectionFailed,
    HTTPClient,
    HTTPError,
    HTTPResponse,
    InvalidRequest,
    ReadTimeout,
    RedirectRefused,
)
from ._http_client_sock import NoResponse
from ._transport import Outbound
from .sansio import _messages as m
from .sansio._messages import ErrorCode, RequestId
from .sansio._sse import SSEDecoder, SSEEvent, SSEEventTooLarge

__all__ = ("SSEClientTransport", "SSEConnection")

logger = logging.getLogger("mcpwire.http")

#: Messages kept while waiting for the ``endpoint`` event (see ``connect``);
#: together they may also not exceed ``max_event_size`` characters.
MAX_EARLY_EVENTS = INBOX_SIZE


class SSEConnection:
    """One HTTP+SSE session, delivering into ``owner``'s inbox (see the module docstring)."""

    def __init__(
        self, owner: HTTPTransportBase, http: HTTPClient, url: URL, options: HTTPClientOptions
    ) -> None:
        self.owner = owner
        self.http = http
        self.url = url
        self.options = options
        #: Where messages are POSTed, once the server has said.
        self.endpoint: URL | None = None

    async def connect(self) -> None:
        """Open the event stream and wait for the ``endpoint`` event.

        Raises:
            HTTPError: the stream could not be opened, or announced no usable endpoint.
        """
        if self.owner._tg is None:
            raise HTTPError(
                "the HTTP+SSE transport needs a task group for its event stream "
                "(use Client.http, or 'async with' the transport)"
            )
        headers = [("Accept", "text/event-stream"), *self.options.headers]
        timeout = self.options.timeout
        response: HTTPResponse | None = None
        started = False
        try:
            try:
                # One deadline for the head and the endpoint event together: each
                # read has its own too, but a server that trickles comments (or
                # 1xx heads) would otherwise keep the caller waiting for ever.
                with anyio.fail_after(timeout):
                    response = await self.http.request("GET", self.url, headers, timeout=timeout)
                    decoder, early = await self._await_endpoint(response)
            except TimeoutError:
                raise HTTPError(f"{self.url}: no endpoint event within {timeout:g} s") from None
            except SSEEventTooLarge as exc:
                raise HTTPError(f"{self.url}: {exc}") from None
            response.timeout = None  # the stream may be quiet for as long as it likes
            logger.info("%s: HTTP+SSE session, posting to %s", self.url, self.endpoint)
            stream = response
            started = self.owner._spawn(
                "HTTP+SSE stream", lambda: self._read(stream, decoder, early)
            )
            if not started:
                raise HTTPError(f"{self.url}: the transport is closed")
        finally:
            if not started and response is not None:
                with anyio.CancelScope(shield=True):
                    await response.aclose()

    async def _await_endpoint(self, response: HTTPResponse) -> tuple[SSEDecoder, list[SSEEvent]]:
        """Check the head, read up to the ``endpoint`` event and resolve it; the
        decoder, and the events to handle before reading on."""
        if not 200 <= response.status < 300:
            body = await response.read_body(ERROR_BODY_EXCERPT, truncate=True)
            raise HTTPError(f"GET {self.url}: HTTP {response.status} {excerpt(body)}".rstrip())
        if response.media_type != "text/event-stream":
            raise HTTPError(
                f"GET {self.url}: expected text/event-stream, got {response.media_type!r}"
            )
        decoder = SSEDecoder(max_event_size=self.options.max_event_size)
        early: list[SSEEvent] = []
        held = 0
        while self.endpoint is None:
            events = await next_events(response, decoder)
            if events is None:
                raise HTTPError(f"{self.url}: the stream ended before an endpoint event")
            for event in events:
                if self.endpoint is not None:
                    early.append(event)  # after it in the same chunk: in order
                elif event.event == "endpoint":
                    # RFC 3986 §5.1.3: the base of a representation retrieved
                    # through redirects is the last URI used.
                    self.endpoint = self._resolve(event.data, response.url)
                elif event.event == "message" and event.data:
                    # The server MUST send the endpoint first. Messages before it
                    # are kept for later, within the bounds of one event.
                    early.append(event)
                    held += len(event.data)
                    if len(early) > MAX_EARLY_EVENTS or held > self.options.max_event_size:
                        raise HTTPError(
                            f"{self.url}: more than {MAX_EARLY_EVENTS} messages or "
                            f"{self.options.max_event_size} characters before the "
                            "endpoint event, which the server must send first"
                        )
        return decoder, early

    def _resolve(self, data: str, base: URL) -> URL:
        try:
            announced = base.join(data.strip())
        except ValueError as exc:
            raise HTTPError(f"{self.url}: unusable endpoint event {data!r}: {exc}") from None
        override = self.options.message_url
        if override is not None:
            target = base.join(override)
            if "?" not in target.target and "?" in announced.target:
                target = URL.parse(target.raw + "?" + announced.target.split("?", 1)[1])
            return target
        if announced.origin != self.url.origin:
            raise HTTPError(
                f"{self.url}: the server's message endpoint {announced} is on another origin; "
                "pass message_url= to post there (or to the right public address) anyway"
            )
        return announced

    async def _read(
        self, response: HTTPResponse, decoder: SSEDecoder, early: list[SSEEvent]
    ) -> None:
        cause = "the server ended the event stream"
        try:
            async with response:
                for event in early:
                    await self._event(event)
                while True:
                    events = await next_events(response, decoder)
                    if events is None:
                        break
                    for event in events:
                        await self._event(event)
        except (HTTPError, SSEEventTooLarge) as exc:
            cause = str(exc)
        self.owner._fail(
            f"HTTP+SSE connection to the MCP server at {self.url} lost: {cause} "
            "(the deprecated HTTP+SSE transport cannot resume a session)"
        )

    async def _event(self, event: SSEEvent) -> None:
        if event.event != "message" or not event.data:
            if event.event == "endpoint":
                logger.debug("%s: ignoring a second endpoint event", self.url)
            return
        item = m.parse(event.data, self.options.limits)
        items = item.items if type(item) is m.Batch else (item,)
        for one in items:
            # Invalid ones too: the session answers or counts them, as on any transport,
            # and a malformed answer fails the request it names.
            await self.owner._deliver(one)

    async def send(self, message: Outbound) -> None:
        """POST one message (or batch) to the endpoint.

        A response (our answer to the server, or the error that answers what it
        sent malformed) is POSTed in the background when a slot is free
        (``_reply_in_background``): the answers to our requests come on the
        event stream, which must not wait behind it.
        """
        kind = type(message)
        if (kind is m.Response or kind is m.ErrorResponse) and self.owner._reply_in_background(
            "HTTP+SSE reply", lambda: self._post(message)
        ):
            return
        await self._post(message)

    async def _post(self, message: Outbound) -> None:
        assert self.endpoint is not None
        body = m.serialize_batch(message) if isinstance(message, list) else m.serialize(message)
        headers = [("Content-Type", "application/json"), *self.options.headers]
        timeout = self.options.timeout
        failure: HTTPError | None = None
        cut: NoResponse | None = None
        problem = ""
        status: int | None = None
        text = b""
        with self.owner._exchange():
            # ``timeout`` bounds the whole exchange, not only each read: a server
            # that sends 1xx heads or drips a body for ever must not hold the
            # message (or, for a notification, its sender) any longer.
            deadline = anyio.current_time() + timeout
            response: HTTPResponse | None = None
            with anyio.CancelScope(deadline=deadline) as scope:
                try:
                    response = await self.http.request(
                        "POST",
                        self.endpoint,
                        headers,
                        body,
                        timeout=timeout,
                        retry=repeatable(message),
                    )
                except (RedirectRefused, ReadTimeout, InvalidRequest) as exc:
                    problem = str(exc)
                except NoResponse as exc:  # reached, but no answer: this POST fails alone
                    cut, problem = exc, f"the connection ended before any response ({exc})"
                except ConnectionFailed as exc:
                    failure = exc
            if scope.cancelled_caught:
                problem = f"no answer within {timeout:g} s"
            if response is not None:
                async with response:
                    status = response.status
                    parts: list[bytes] = []
                    with anyio.CancelScope(deadline=deadline):
                        await _read_excerpt(response, parts)
                    text = b"".join(parts)[:ERROR_BODY_EXCERPT]
                    if 200 <= status < 300:
                        return  # accepted, whatever the body
                    problem = f"HTTP {status} {response.reason} {excerpt(text)}".rstrip()
        if failure is not None:
            raise self.owner._fail(f"cannot reach the MCP server at {self.endpoint}: {failure}")
        if not problem or self.owner._stopped():
            return  # the exchange was aborted by close or failure
        items = message if isinstance(message, list) else (message,)
        requests = [one for one in items if type(one) is m.Request]
        if len(requests) < len(items):
            what = "a batch" if isinstance(message, list) else _what(message)
            logger.warning("%s: %s was not delivered: %s", self.endpoint, what, problem)
        code = (
            ErrorCode.INVALID_REQUEST
            if status is not None and status < 500
            else ErrorCode.INTERNAL_ERROR
        )
        for request in requests:
            if cut is not None:
                await self.owner._deliver(no_response(request, cut))
                continue
            await self.owner._deliver(
                http_error(
                    request.id,
                    code,
                    f"{request.method}: the server refused the message: {problem}",
                    status=status,
                    body=text,
                )
            )


def _what(message: m.Message) -> str:
    """A one-way message as a log line names it."""
    return message.method if type(message) is m.Notification else "a response"


async def _read_excerpt(response: HTTPResponse, parts: list[bytes]) -> None:
    """Read the body into ``parts`` up to ``ERROR_BODY_EXCERPT`` bytes (what was
    read stays there if the caller's deadline cuts this short)."""
    size = 0
    try:
        while size < ERROR_BODY_EXCERPT:
            chunk = await response.read_chunk()
            if not chunk:
                return
            parts.append(chunk)
            size += len(chunk)
    except HTTPError:
        pass


class SSEClientTransport(HTTPTransportBase):
    """A client transport for servers that speak only the deprecated HTTP+SSE protocol.

    The event stream is opened by the first ``send()``; it needs a task group
    (``Client`` lends one, or use ``async with``).

    Args:
        url: the server's SSE endpoint (often ``.../sse``).
        headers: sent with every request.
        options: the other ``HTTPClientOptions`` fields (``message_url`` in particular).
    """

    def __init__(self, url: str, *, headers: Any = None, **options: Any) -> None:
        self.url = URL.parse(url)
        super().__init__(f"MCP server at {self.url} (HTTP+SSE)")
        self.options = make_options(headers, **options)
        self.http = self.options.client()
        self.connection = SSEConnection(self, self.http, self.url, self.options)
        self._lock = anyio.Lock()

    async def send(self, message: Outbound, *, related: RequestId | None = None) -> None:
        self._check_open()
        if self.connection.endpoint is None:
            async with self._lock:
                if self.connection.endpoint is None:
                    await self._connect()
        await self.connection.send(message)

    async def _connect(self) -> None:
        failure: HTTPError | None = None
        with self._exchange():
            try:
                await self.connection.connect()
            except HTTPError as exc:
                failure = exc
        if failure is not None:
            raise self._fail(f"cannot open the HTTP+SSE stream at {self.url}: {failure}")
        if self.connection.endpoint is None:
            raise anyio.ClosedResourceError

    async def aclose(self) -> None:
        if self._closed:
            return
        self._close_inbox()
        with anyio.CancelScope(shield=True):
            await self.http.aclose()
