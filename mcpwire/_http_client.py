"""The Streamable HTTP client transport, both eras, with the HTTP+SSE fallback.

Theory of operation
-------------------
Every message the session sends is one ``POST`` to the endpoint with
``Accept: application/json, text/event-stream`` (``basic/transports.mdx``,
"Sending Messages to the Server"). ``send()`` carries out the whole exchange
in the caller's own task: for a request it returns once the answer is in the
inbox (or settled through the fast path), so the session's deadline for the
request also bounds the HTTP exchange, and a caller that gives up closes the
response stream by unwinding.

The answer to a request is an ``application/json`` body or a
``text/event-stream`` (media-type parameters such as ``charset`` are
ignored); ``_http_client_streams`` reads both, resumes legacy streams that
break off, and runs the legacy standalone ``GET`` stream. A 2xx with no body,
``null``, or another media type answers nothing: the request fails at once
with an error naming the status, rather than hanging.

Notifications and responses are acknowledged by any 2xx, empty or not
(pain point #23: 202, 200 with no body and ``null`` all occur); a 4xx/5xx is
logged. HTTP errors to requests never leave the caller waiting: a JSON-RPC
error in the body (400/404 with JSON) is delivered as the answer to the
request that was sent, whatever id the body names (servers use ``null`` when
they rejected the request before reading its id); any other failure becomes a
synthesized error naming the status and quoting the body (-32600 for 4xx,
-32603 otherwise), raised as ``TransportError`` (``http_error``). So is a
request whose exchange ends without an answer once the server was reached:
its connection closed or reset before the response head (``no_response``;
a ``tools/call`` is not sent twice, so a kept-alive socket the server closed
as it went out fails it this way too, saying so) or in the middle of the
body. That exchange got no answer; the transport stays usable. A request
that cannot reach the server at all (connection refused, no route, name or
TLS failure, connect timeout) fails with ``ConnectionClosed``: the server is
gone for now (a hub takes it as lost), though the transport fails only that
request and the next one tries again, so a server that restarts does not
end the client (pain point #9; a legacy session it lost is replaced on its
404). A notification or response that cannot reach it is logged.

Eras are learned from the traffic, not configured:

* modern (2026-07-28): a request whose ``params._meta`` names the protocol
  version gets ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` and
  ``Mcp-Param-*`` (see ``_http_client_headers``); there is no session, no GET
  stream, and cancelling is closing the response stream, so the session's
  ``notifications/cancelled`` is not POSTed (``basic/patterns/cancellation.mdx``).
* legacy: the ``initialize`` request is remembered, and its result tells the
  negotiated version, sent as ``MCP-Protocol-Version`` on every later request
  (2025-06-18+: MUST). An ``Mcp-Session-Id`` from a 2xx answer to
  ``initialize`` is echoed on every later request and ``DELETE``d on close.
  A 404 to a request carrying it means the session is gone: the transport
  drops the id, replays ``initialize`` and ``notifications/initialized``, and
  retries the request once (pain point #9), except for paginated requests,
  whose cursor belonged to the old session. Concurrent failures re-initialize
  once. After ``notifications/initialized`` the standalone ``GET`` event
  stream is opened for server->client requests and notifications.

Deprecated HTTP+SSE (2024-11-05): when ``POST initialize`` is refused with
400, 404, 405 or 406 and no JSON-RPC error body, the server is taken to be an
HTTP+SSE server (the backwards-compatibility clause of ``basic/transports.mdx``)
and the transport switches to ``SSEConnection`` for the rest of its life
(``transport="auto"``, the default; ``"streamable"`` never falls back). The
URLs found to be HTTP+SSE are remembered for the process, so the next client
for the same URL goes there directly.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import anyio

from ._errors import ConnectionClosed
from ._http_client_base import (
    ERROR_BODY_EXCERPT,
    http_error,
    jsonrpc_error,
    make_options,
    no_response,
    repeatable,
    status_error,
    unanswered,
)
from ._http_client_conn import (
    URL,
    BodyTooLarge,
    ConnectionFailed,
    Headers,
    HTTPError,
    HTTPResponse,
    InvalidRequest,
    NoResponse,
    ReadTimeout,
    RedirectRefused,
)
from ._http_client_headers import (
    NAME_PARAMS,
    ToolHeaderMap,
    modern_headers,
    request_protocol_version,
    tool_header_map,
)
from ._http_client_sse import SSEClientTransport, SSEConnection
from ._http_client_streams import ACCEPT_BOTH, ACCEPT_SSE, EventStreams, Stream
from ._transport import Outbound
from .sansio import _messages as m
from .sansio._messages import ErrorCode, RequestId

__all__ = ("HTTPClientTransport", "open_http_transport")

logger = logging.getLogger("mcpwire.http")

TransportKind = Literal["auto", "streamable", "sse"]

#: Statuses to ``POST initialize`` that mean "not a Streamable HTTP endpoint".
_FALLBACK_STATUSES = frozenset({400, 404, 405, 406})
#: URLs found to serve the deprecated HTTP+SSE transport in this process.
_KNOWN_SSE: set[str] = set()
_KNOWN_SSE_MAX = 256
#: Distinct request header sets kept (see ``_request_headers``).
_HEADER_CACHE_SIZE = 128


class HTTPClientTransport(EventStreams):
    """A Streamable HTTP client transport (see the module docstring).

    Args:
        url: the MCP endpoint, ``http://`` or ``https://``.
        transport: ``"auto"`` (fall back to HTTP+SSE when the server is one)
            or ``"streamable"``.
        tool_headers: ``{tool name: {argument path: header token}}`` for
            ``Mcp-Param-*`` headers; ``Client.list_tools`` fills it in from the
            tools' ``x-mcp-header`` annotations (``learn_tools``). A path is a
            tuple of ``properties`` keys; a plain string means a top-level argument.
        options: ``headers`` and the other ``HTTPClientOptions`` fields.

    Background work (the legacy GET stream, the HTTP+SSE fallback's event
    stream) runs in a task group: ``Client`` lends its own; on its own, use the
    transport as an async context manager (without one there is no GET stream
    and no fallback).
    """

    def __init__(
        self,
        url: str,
        *,
        transport: TransportKind = "auto",
        tool_headers: Mapping[str, Mapping[str | tuple[str, ...], str]] | None = None,
        **options: Any,
    ) -> None:
        if transport not in ("auto", "streamable"):
            raise ValueError("transport must be 'auto' or 'streamable' (use open_http_transport)")
        self.url = URL.parse(url)
        super().__init__(f"MCP server at {self.url}")
        self.options = make_options(options.pop("headers", None), **options)
        self.http = self.options.client()
        self.kind = transport
        self.tool_headers: dict[str, ToolHeaderMap] = {
            name: {(k,) if isinstance(k, str) else tuple(k): v for k, v in mapping.items()}
            for name, mapping in (tool_headers or {}).items()
        }
        #: Legacy era: the session the server assigned, and the negotiated version.
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self._init_request: m.Request | None = None
        self._reinit_lock = anyio.Lock()
        self._reinits = 0
        self._get_running = False
        self._get_answered: anyio.Event | None = None
        self._sse: SSEConnection | None = None
        #: Request headers by what they depend on (see ``_request_headers``).
        self._header_cache: dict[tuple[object, ...], Headers] = {}
        self._extra_headers = list(self.options.headers)

    # -- learning ---------------------------------------------------------------------

    def learn_tools(self, tools: list[Any], *, drop_invalid: bool) -> list[Any]:
        """Record the ``x-mcp-header`` annotations of listed tools.

        Returns the tools to keep: with ``drop_invalid`` (the modern era), a tool
        whose annotations break the rules is dropped, as an HTTP client MUST
        (2026-07-28 ``server/tools.mdx``), with a warning.
        """
        kept = []
        for tool in tools:
            found = tool_header_map(tool.input_schema)
            if found is None:
                if drop_invalid:
                    logger.warning(
                        "dropping tool %r: its x-mcp-header annotations are invalid", tool.name
                    )
                    self.tool_headers.pop(tool.name, None)
                    continue
                found = {}
            if found:
                self.tool_headers[tool.name] = found
            else:
                self.tool_headers.pop(tool.name, None)
            kept.append(tool)
        return kept

    @property
    def fell_back(self) -> bool:
        """True once the server turned out to speak the deprecated HTTP+SSE transport."""
        return self._sse is not None

    # -- sending ----------------------------------------------------------------------

    async def send(self, message: Outbound, *, related: RequestId | None = None) -> None:
        self._check_open()
        if self._sse is not None:
            await self._sse.send(message)
            return
        kind = type(message)
        if kind is m.Request:
            await self._send_request(message)  # type: ignore[arg-type]
        elif kind is m.Notification:
            await self._send_notification(message)  # type: ignore[arg-type]
        elif self._init_request is None:  # 2026-07-28: no server requests, nothing to POST
            what = message.error.message if kind is m.ErrorResponse else "an answer"  # type: ignore[union-attr]
            logger.warning(
                "%s: not sent, the 2026-07-28 era takes no responses: %s", self.url, what
            )
        else:  # our answers to the server, off the reader's path (``_reply_in_background``)
            body = m.serialize_batch(message) if kind is list else m.serialize(message)  # type: ignore[arg-type]
            if not self._reply_in_background("HTTP reply", lambda: self._post_one_way(body)):
                await self._post_one_way(body)

    def _headers(
        self, request: m.Request | None, *, accept: str = ACCEPT_BOTH
    ) -> list[tuple[str, str]]:
        headers = [("Accept", accept)]
        if accept != ACCEPT_SSE:
            headers.append(("Content-Type", "application/json"))
        version = request_protocol_version(request) if request is not None else None
        if request is not None and version is not None and request.method != "initialize":
            headers.extend(modern_headers(request, version, self.tool_headers))
        elif request is None or request.method != "initialize":
            # The handshake itself goes without: the version is not agreed yet.
            if self.protocol_version is not None:
                headers.append(("MCP-Protocol-Version", self.protocol_version))
            if self.session_id is not None:
                headers.append(("Mcp-Session-Id", self.session_id))
        headers.extend(self.options.headers)
        return headers

    def _request_headers(self, request: m.Request) -> Headers:
        """``_headers(request)``, kept for the next request that shares them.

        Requests that differ only in id and arguments (the usual traffic) get
        the same headers, so they are built once per method, name and era
        state; ``Mcp-Param-*`` values depend on the arguments and are built
        every time.
        """
        extra = self.options.headers
        if extra != self._extra_headers:  # the options were changed in place
            self._extra_headers = list(extra)
            self._header_cache.clear()
        method = request.method
        version = request_protocol_version(request)
        key: tuple[object, ...]
        if version is not None and method != "initialize":
            field = NAME_PARAMS.get(method)
            name = request.params.get(field) if field is not None and request.params else None
            if name is not None and (
                type(name) is not str or (method == "tools/call" and name in self.tool_headers)
            ):
                return self._headers(request)
            key = (version, method, name)
        else:
            key = (method == "initialize", self.protocol_version, self.session_id)
        headers = self._header_cache.get(key)
        if headers is None:
            if len(self._header_cache) >= _HEADER_CACHE_SIZE:
                self._header_cache.clear()
            headers = self._header_cache[key] = tuple(self._headers(request))
        return headers

    async def _send_request(self, request: m.Request) -> None:
        if request.method == "initialize":
            self._init_request = request
            self.session_id = self.protocol_version = None
        elif self._reinit_lock.locked():
            async with self._reinit_lock:  # a re-initialization is under way: wait for it
                pass
        for attempt in (1, 2):
            sent_session = self.session_id
            stream = Stream(request.id)
            expired = await self._request_exchange(request, stream, self._request_headers(request))
            if not expired:
                return
            # 404 to a request carrying our session id: the session is gone and the
            # client MUST start a new one (transports.mdx, "Session Management").
            if attempt == 2 or _has_cursor(request):
                why = "its cursor belonged to the old session" if attempt == 1 else "again"
                await self._deliver_final(
                    http_error(
                        request.id,
                        ErrorCode.INVALID_REQUEST,
                        f"the server ended the MCP session (HTTP 404) and {request.method} "
                        f"was not retried: {why}",
                        status=404,
                    ),
                    queued_ahead=False,
                )
                return
            if not await self._reinitialize(sent_session):
                await self._deliver_final(
                    http_error(
                        request.id,
                        ErrorCode.INVALID_REQUEST,
                        "the server ended the MCP session (HTTP 404) and a new one "
                        "could not be started",
                        status=404,
                    ),
                    queued_ahead=False,
                )
                return

    async def _request_exchange(self, request: m.Request, stream: Stream, headers: Headers) -> bool:
        """POST one request and deliver its answer; True if the session had expired.

        Failure and close must stop an exchange wherever it waits. Where
        ``HTTPClient.abort`` alone does that (plain TCP on asyncio: it closes
        the socket, and cancels waits for a slot or a connection), the usual
        exchange, a request and its JSON answer, runs without a cancel scope of
        its own: entering and leaving one is a sizeable share of the CPU a
        request costs on asyncio. What waits on more than the socket (an event
        stream, an error answer, a fallback) gets the scope as always.
        """
        if self.http.abortable(self.url):
            if self._stopped():
                return False  # as the pre-cancelled exchange scope would: nothing is sent
            outcome = await self._post_request(request, stream, headers, scoped=False)
            if isinstance(outcome, HTTPError) and self._stopped():
                return False  # aborted by failure or close (see _stop_everything)
        else:
            outcome = False
            with self._exchange():
                outcome = await self._post_request(request, stream, headers, scoped=True)
        if isinstance(outcome, HTTPError):
            raise ConnectionClosed(f"cannot reach the MCP server at {self.url}: {outcome}")
        return outcome

    async def _post_request(
        self, request: m.Request, stream: Stream, headers: Headers, *, scoped: bool
    ) -> bool | HTTPError:
        """The exchange of ``_request_exchange``: whether the session had expired,
        or why the server could not be reached."""
        try:
            response = await self.http.request(
                "POST",
                self.url,
                headers,
                m.serialize(request),
                timeout=None,
                retry=repeatable(request),
            )
        except (RedirectRefused, InvalidRequest) as exc:
            await self._final(stream, http_error(request.id, ErrorCode.INVALID_REQUEST, str(exc)))
            return False
        except NoResponse as exc:  # reached, but no answer: this exchange fails, not the rest
            if not self._stopped():  # else aborted by failure or close: nothing to deliver
                await self._final(stream, no_response(request, exc))
            return False
        except (ConnectionFailed, ReadTimeout) as exc:
            return exc  # the server cannot be reached: ConnectionClosed
        try:
            if scoped or (
                200 <= response.status < 300 and response.media_type != "text/event-stream"
            ):
                return await self._answer(request, response, stream, headers)
            with self._exchange():
                return await self._answer(request, response, stream, headers)
            return False  # the exchange was stopped by failure or close
        finally:
            if not response.release():  # ``async with response``, minus two awaits
                with anyio.CancelScope(shield=True):
                    await response.aclose()

    async def _answer(
        self,
        request: m.Request,
        response: HTTPResponse,
        stream: Stream,
        headers: Headers,
    ) -> bool:
        status = response.status
        rid = request.id
        if 200 <= status < 300:
            if request.method == "initialize":
                self._learn_session(response)
            kind = response.media_type
            if kind == "text/event-stream":
                await self._read_stream(
                    response, stream, resumable=request_protocol_version(request) is None
                )
                return False
            body = b""
            broken: HTTPError | None = None
            try:
                body = await response.read_body(self.options.max_body_size)
            except BodyTooLarge as exc:
                await self._final(
                    stream, http_error(rid, ErrorCode.INVALID_REQUEST, f"{request.method}: {exc}")
                )
                return False
            except HTTPError as exc:
                stream.cause, broken = str(exc), exc
                if self._stopped():
                    return False  # the transport failed or closed meanwhile: nothing to deliver
            if broken is None and kind == "application/json" and body.strip() not in (b"", b"null"):
                await self._deliver_body(stream, body)
                return False
            await self._final(stream, unanswered(request, status, kind, body, broken))
            return False
        if status == 404 and any(k == "Mcp-Session-Id" for k, _ in headers):
            return True
        try:
            body = await response.read_body(ERROR_BODY_EXCERPT, truncate=True)
        except HTTPError:
            body = b""
        error = jsonrpc_error(body) if response.media_type == "application/json" else None
        if (
            error is None
            and request.method == "initialize"
            and status in _FALLBACK_STATUSES
            and self.kind == "auto"
            and stream.capture is None  # not a re-initialization: the server did speak it
        ):
            await self._fall_back(request, stream, status)
            return False
        if error is None:
            error = status_error(request, response, body)
        await self._final(stream, m.ErrorResponse(rid, error))
        return False

    def _learn_session(self, response: HTTPResponse) -> None:
        sid = response.header("mcp-session-id")
        # Session ids are visible ASCII (0x21-0x7E); anything else is not echoed.
        if sid and all(0x21 <= ord(c) <= 0x7E for c in sid):
            self.session_id = sid

    # -- notifications, responses -----------------------------------------------------

    async def _send_notification(self, note: m.Notification) -> None:
        if note.method == "notifications/cancelled" and self.protocol_version is None:
            # Modern era: closing the response stream was the cancellation
            # (2026-07-28 cancellation.mdx); the caller's exchange already did.
            return
        ok = await self._post_one_way(m.serialize(note), note.method)
        if ok and note.method == "notifications/initialized":
            await self._start_get_stream()

    async def _post_one_way(self, body: bytes, what: str = "a response") -> bool:
        """POST a notification or response; True when the server accepted it."""
        timeout = self.options.timeout
        # One deadline for the whole exchange: 1xx heads or a dripped body cannot hold it.
        with self._exchange(), anyio.move_on_after(timeout) as scope:
            try:
                response = await self.http.request(
                    "POST", self.url, self._headers(None), body, timeout=timeout, retry=True
                )
            except (RedirectRefused, ReadTimeout, InvalidRequest, ConnectionFailed) as exc:
                logger.warning("%s: %s was not delivered: %s", self.url, what, exc)
                return False
            else:
                async with response:
                    try:
                        text = await response.read_body(ERROR_BODY_EXCERPT, truncate=True)
                    except HTTPError:
                        text = b""
                    if 200 <= response.status < 300:
                        return True
                    logger.warning(
                        "%s: the server refused %s: HTTP %d %s",
                        self.url,
                        what,
                        response.status,
                        text.decode("utf-8", "replace")[:200],
                    )
                    return False
        if scope.cancelled_caught:
            logger.warning("%s: %s was not delivered in %g s", self.url, what, timeout)
        return False

    # -- session recovery -------------------------------------------------------------

    async def _reinitialize(self, expired: str | None) -> bool:
        """Start a new session after a 404 (once, however many requests noticed)."""
        async with self._reinit_lock:
            if self.session_id != expired:
                return True  # another request already started a new session
            init = self._init_request
            if init is None:
                return False
            self._reinits += 1
            logger.info("%s: the session expired; re-initializing", self.url)
            self.session_id = None
            replay = m.Request(f"mcpwire-reinit-{self._reinits}", "initialize", init.params)
            stream = Stream(replay.id, capture=[])
            try:
                await self._request_exchange(replay, stream, self._headers(replay))
            finally:
                answer = stream.capture[0] if stream.capture else None
                if type(answer) is not m.Response:  # the next request's 404 tries again
                    self.session_id = expired
            if type(answer) is not m.Response:
                logger.warning("%s: re-initialization failed: %r", self.url, answer)
                return False
            version = answer.result.get("protocolVersion")
            if isinstance(version, str):
                self.protocol_version = version
            await self._send_notification(m.Notification("notifications/initialized"))
            return True

    # -- fallback to HTTP+SSE ---------------------------------------------------------

    async def _fall_back(self, request: m.Request, stream: Stream, status: int) -> None:
        logger.info(
            "%s refused POST initialize with HTTP %d: using the deprecated HTTP+SSE transport",
            self.url,
            status,
        )
        if len(_KNOWN_SSE) < _KNOWN_SSE_MAX:
            _KNOWN_SSE.add(self.url.raw)
        connection = SSEConnection(self, self.http, self.url, self.options)
        try:
            await connection.connect()
        except HTTPError as exc:
            _KNOWN_SSE.discard(self.url.raw)
            await self._final(
                stream,
                http_error(
                    request.id,
                    ErrorCode.INVALID_REQUEST,
                    f"the server refused POST initialize (HTTP {status}) and is not an "
                    f"HTTP+SSE server either: {exc}",
                    status=status,
                ),
            )
            return
        self._sse = connection
        await connection.send(request)

    # -- closing ----------------------------------------------------------------------

    async def aclose(self) -> None:
        if self._closed:
            return
        failed = self._error is not None
        self._close_inbox()
        with anyio.CancelScope(shield=True):
            if (
                self._sse is None
                and self.session_id is not None
                and self.options.terminate_on_close
                and not failed
            ):
                # Legacy: end the session (transports.mdx: clients SHOULD DELETE it).
                with anyio.move_on_after(min(self.options.timeout, 2.0)):
                    try:
                        response = await self.http.request(
                            "DELETE", self.url, self._headers(None), timeout=self.options.timeout
                        )
                        await response.aclose()
                    except HTTPError:
                        pass
            await self.http.aclose()


def _has_cursor(request: m.Request) -> bool:
    return bool(request.params) and "cursor" in request.params  # type: ignore[operator]


def open_http_transport(
    url: str,
    *,
    transport: TransportKind = "auto",
    headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
    **options: Any,
) -> HTTPClientTransport | SSEClientTransport:
    """The transport for ``url``: Streamable HTTP (falling back to HTTP+SSE when
    ``transport="auto"``), or HTTP+SSE directly with ``transport="sse"``.

    ``options`` are ``HTTPClientOptions`` fields, plus ``tool_headers`` for Streamable HTTP.
    """
    if transport not in ("auto", "streamable", "sse"):
        raise ValueError(f"transport must be 'auto', 'streamable' or 'sse', not {transport!r}")
    if transport == "sse" or (transport == "auto" and url in _KNOWN_SSE):
        options.pop("tool_headers", None)
        return SSEClientTransport(url, headers=headers, **options)
    return HTTPClientTransport(url, transport=transport, headers=headers, **options)
