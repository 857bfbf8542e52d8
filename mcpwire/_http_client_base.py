"""What both HTTP client transports share: the inbox, failure, background tasks.

Theory of operation
-------------------
An HTTP client transport has no single byte stream to read: messages arrive
on the bodies of many responses (one per POSTed request, plus event streams
opened with GET). Whoever reads a body parses it and puts the messages in one
inbox, a bounded memory stream; ``receive()`` takes them out in arrival order
for the session's reader task. A full inbox makes body readers wait
(back-pressure), it never drops.

A response that is the last thing its stream will carry can be settled at once
through the session's fast path (``set_fast_path``), sparing a hop through the
reader task; only when nothing from the same stream is still queued ahead of
it, so that a request's progress notifications are always handled before its
result.

Failure is one-way: ``_fail(error)`` records why the transport can no longer
work (the server is unreachable, its event stream is gone for good), cancels
every exchange still in flight (their callers are told through the session,
which sees the inbox end and fails every pending request with
``close_error()``), and stops the background tasks. An exchange runs in a
cancel scope the transport keeps (``_exchange``), except where
``HTTPClient.abort`` alone can stop it (see ``_http_client``): closing its
socket ends it there, and it then delivers nothing, as a cancelled one would. Later ``send()`` calls
raise ``anyio.BrokenResourceError``, which the session turns into the same
``ConnectionClosed``.

Background work (reading an event stream that outlives any one request) needs
a task group that lives as long as the transport. ``Client`` lends its own
(``bind_task_group``); used on its own, the transport is an async context
manager that makes one. Each background task runs in a cancel scope the
transport keeps, so ``aclose()`` can stop it from any task.
"""

from __future__ import annotations

import contextvars
import logging
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from ._errors import ConnectionClosed
from ._http_client_conn import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
    DEFAULT_MAX_KEEPALIVE,
    DEFAULT_MAX_REDIRECTS,
    URL,
    HTTPClient,
    HTTPError,
    HTTPResponse,
    Verify,
)
from ._http_client_headers import header_list
from ._http_client_sock import BodyCut, NoResponse
from .sansio import _messages as m
from .sansio._codec import DEFAULT_LIMITS, DEFAULT_MAX_MESSAGE_SIZE, Limits
from .sansio._json import JSONValue
from .sansio._sse import DEFAULT_MAX_EVENT_SIZE, SSEDecoder, SSEEvent

if TYPE_CHECKING:
    from ._oauth import OAuthClient
    from ._transport import Outbound

__all__ = (
    "ERROR_BODY_EXCERPT",
    "MAX_REPLIES_IN_FLIGHT",
    "OPTION_NAMES",
    "HTTPClientOptions",
    "HTTPTransportBase",
    "backoff_delay",
    "check_http_options",
    "excerpt",
    "http_error",
    "jsonrpc_error",
    "make_options",
    "no_response",
    "next_events",
    "repeatable",
    "status_error",
    "unanswered",
)

logger = logging.getLogger("mcpwire.http")

#: Messages parsed but not yet taken by the session before body readers wait.
INBOX_SIZE = 256
#: Bytes of an error response's body kept for the error message.
ERROR_BODY_EXCERPT = 2048
#: Responses to the server POSTed in the background at once (``_reply_in_background``).
MAX_REPLIES_IN_FLIGHT = 16
#: Messages whose origin (``message_origin``) is kept until the session asks for it.
MAX_ORIGINS = 256
#: Ceiling for the exponential reconnection backoff, in seconds.
MAX_BACKOFF = 30.0
#: Requests that change nothing at the server (or set what they set again): sent
#: once more when a kept-alive socket broke before any answer (_http_client_conn).
_REPEATABLE = frozenset(
    {
        "ping",
        "server/discover",
        "tools/list",
        "prompts/list",
        "prompts/get",
        "resources/list",
        "resources/templates/list",
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "completion/complete",
        "logging/setLevel",
        "tasks/get",
        "tasks/list",
    }
)


def repeatable(message: Outbound) -> bool:
    """Whether POSTing ``message`` twice is harmless (``HTTPClient.request(retry=...)``):
    notifications and responses are, and requests that act on nothing."""
    if type(message) is m.Request:  # the usual case: one request
        return message.method in _REPEATABLE
    items = message if isinstance(message, list) else (message,)
    return all(type(one) is not m.Request or one.method in _REPEATABLE for one in items)


def excerpt(body: bytes, limit: int = 300) -> str:
    """A short, printable rendering of a response body for error messages."""
    text = body.decode("utf-8", "replace").strip()
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def http_error(
    rid: m.RequestId, code: int, message: str, *, status: int | None = None, body: bytes = b""
) -> m.ErrorResponse:
    """A JSON-RPC error standing in for an answer the server did not give: its
    error is a ``TransportErrorObject``, raised as ``TransportError``."""
    data: dict[str, JSONValue] = {}
    if status is not None:
        data["httpStatus"] = status
    if body:
        data["body"] = excerpt(body, ERROR_BODY_EXCERPT)
    return m.ErrorResponse(rid, m.TransportErrorObject(int(code), message, data or None, status))


def jsonrpc_error(body: bytes) -> m.ErrorObject | None:
    """The JSON-RPC error in an HTTP error body, if it holds one."""
    if not body.strip():
        return None
    item = m.parse(body)
    return item.error if type(item) is m.ErrorResponse else None


def status_error(request: m.Request, response: HTTPResponse, body: bytes) -> m.ErrorObject:
    """What stands in for an HTTP error answer that holds no JSON-RPC error."""
    status = response.status
    text = f"HTTP {status} {response.reason}".rstrip()
    if status in (401, 403):
        challenge = response.header("www-authenticate")
        text += " (the server requires authorization"
        text += f"; WWW-Authenticate: {challenge})" if challenge else ")"
    message = f"{request.method}: the server answered {text}"
    if body.strip():
        message += ": " + " ".join(body.decode("utf-8", "replace").split())[:300]
    code = m.ErrorCode.INVALID_REQUEST if 400 <= status < 500 else m.ErrorCode.INTERNAL_ERROR
    return http_error(request.id, code, message, status=status, body=body).error


def unanswered(
    request: m.Request, status: int, kind: str, body: bytes, broken: HTTPError | None
) -> m.ErrorResponse:
    """What stands in for a 2xx answer to ``request`` with no JSON-RPC answer in
    it: a body of media type ``kind`` that is empty, ``null`` or not JSON, or one
    that ``broken`` cut short (a ``BodyCut`` says how much of it arrived)."""
    answered = f"the server answered {request.method} with HTTP {status}"
    if isinstance(broken, BodyCut):
        message, body = f"{answered}, but {broken}", broken.partial
    elif broken is not None:
        message = f"{answered}, but reading the body failed: {broken}"
    else:
        if body.strip() == b"null":
            what = "a null body"
        elif not body.strip():
            what = "no response body"
        else:
            what = f"a {kind} body" if kind else "a body without a Content-Type"
        message = f"{answered} and {what}, not a JSON-RPC response"
    return http_error(request.id, m.ErrorCode.INTERNAL_ERROR, message, status=status, body=body)


def no_response(request: m.Request, exc: NoResponse) -> m.ErrorResponse:
    """What stands in for the answer to ``request`` when its connection ended after
    it went out and before any response head (``NoResponse``): -32603, no status.
    Only this exchange failed: the server was reached, and the next request tries
    again. A request that is not ``repeatable`` was sent once, and the server may
    have acted on it: the caller, who knows what it does, decides to send it again."""
    kept = " (kept alive from an earlier exchange)" if exc.reused else ""
    message = f"{request.method}: the connection{kept} ended before any response ({exc})"
    if not repeatable(request):
        message += "; it was not sent again, since the server may have received it"
    return http_error(request.id, m.ErrorCode.INTERNAL_ERROR, message)


def backoff_delay(attempt: int, base: float, retry_ms: int | None) -> float:
    """Seconds before reconnection ``attempt`` (1-based).

    The server's ``retry`` if it gave one, jittered upward only, by at most
    10 % and 50 ms: the client MUST NOT reconnect sooner than it was asked
    (SEP-1699), and a server that names a delay expects it to be kept, not
    stretched; the little jitter only spreads many clients of one server.
    Otherwise exponential from ``base``, jittered by +-25 %.
    """
    if retry_ms is not None:
        asked = retry_ms / 1000.0
        return asked + random.uniform(0.0, min(asked * 0.1, 0.05))
    delay: float = min(base * 2.0 ** max(attempt - 1, 0), MAX_BACKOFF)
    jitter: float = random.uniform(0.75, 1.25)
    return delay * jitter


async def next_events(response: HTTPResponse, decoder: SSEDecoder) -> list[SSEEvent] | None:
    """The events the next piece of a ``text/event-stream`` body completes;
    ``None`` once the body has ended.

    Raises what ``read_chunk`` or the decoder raise (a broken connection, a
    read timeout, an oversized event). An oversized event that the last chunk
    ended with is raised before any more is read: the stream may stall or
    break after it, and it is what went wrong.
    """
    decoder.check()
    chunk = await response.read_chunk()
    if not chunk:
        decoder.feed_eof()
        return None
    return decoder.feed(chunk)


@dataclass
class HTTPClientOptions:
    """Settings shared by the HTTP client transports.

    Attributes:
        headers: sent with every request (``Authorization``, for example).
        timeout: seconds for exchanges that carry no JSON-RPC request
            (notifications, responses, ``DELETE``), and for opening event streams.
        connect_timeout: seconds to open a connection, TLS included.
        verify: TLS verification: ``True``, ``False`` or an ``ssl.SSLContext``.
        max_body_size: the largest JSON response body accepted.
        max_event_size: the largest SSE event accepted.
        max_connections: sockets open at once.
        max_keepalive: idle sockets kept open for reuse (keep-alive) once
            their response is read; calls from more concurrent callers than
            this open new connections. 0 closes every socket after its response.
        max_redirects: same-origin 307/308 hops followed.
        get_stream: legacy era: open the standalone ``GET`` event stream.
        reconnect_attempts: consecutive fruitless reconnections of an event
            stream before giving up (the count restarts whenever an event arrives).
        reconnect_delay: first backoff delay in seconds, when the server sent no ``retry``.
        stream_idle_timeout: seconds of silence after which the standalone
            event stream is reopened (``None``: never).
        terminate_on_close: legacy era: ``DELETE`` the session when closing.
        message_url: HTTP+SSE: POST here instead of the ``endpoint`` event's URL.
        limits: JSON size and depth limits for parsed messages. When not
            given, the size limit follows ``max_body_size`` and
            ``max_event_size`` where those are larger than the default.
        auth: an ``OAuthClient``: MCP authorization (OAuth 2.1) for the
            requests to the server, answering its ``401`` and
            ``insufficient_scope`` challenges.
    """

    headers: list[tuple[str, str]] = field(default_factory=list)
    timeout: float = 30.0
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    verify: Verify = True
    max_body_size: int = DEFAULT_MAX_MESSAGE_SIZE
    max_event_size: int = DEFAULT_MAX_EVENT_SIZE
    max_connections: int = DEFAULT_MAX_CONNECTIONS
    max_keepalive: int = DEFAULT_MAX_KEEPALIVE
    max_redirects: int = DEFAULT_MAX_REDIRECTS
    get_stream: bool = True
    reconnect_attempts: int = 5
    reconnect_delay: float = 1.0
    stream_idle_timeout: float | None = 300.0
    terminate_on_close: bool = True
    message_url: str | None = None
    limits: Limits = DEFAULT_LIMITS
    auth: OAuthClient | None = None

    def __post_init__(self) -> None:
        """Refuse nonsensical settings now, not at the first exchange that uses them."""
        for name in ("timeout", "connect_timeout", "reconnect_delay", "stream_idle_timeout"):
            value = getattr(self, name)
            if value is None and name == "stream_idle_timeout":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
                raise ValueError(f"{name} must be a positive number of seconds, not {value!r}")
        for name, least in _LEAST.items():
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{name} must be an integer of at least {least}, not {value!r}")
        if self.message_url is not None:
            if not isinstance(self.message_url, str):
                raise TypeError(f"message_url must be a string, not {self.message_url!r}")
            try:
                # A relative reference resolves against the event stream's URL later.
                URL.parse("http://mcp.invalid/sse").join(self.message_url)
            except ValueError as exc:
                raise ValueError(f"unusable message_url {self.message_url!r}: {exc}") from None

    def client(self) -> HTTPClient:
        from ._version import __version__

        settings: dict[str, Any] = {
            "connect_timeout": self.connect_timeout,
            "verify": self.verify,
            "max_connections": self.max_connections,
            "max_keepalive": self.max_keepalive,
            "max_redirects": self.max_redirects,
            "user_agent": f"mcpwire/{__version__}",
        }
        if self.auth is None:
            return HTTPClient(**settings)
        # Only a transport with authorization pays for it (see _http_client_auth).
        from ._http_client_auth import AuthorizedHTTPClient

        return AuthorizedHTTPClient(self.auth, **settings)


OPTION_NAMES = frozenset(f.name for f in fields(HTTPClientOptions))
#: The least value of each integer option.
_LEAST = {
    "max_body_size": 1,
    "max_event_size": 1,
    "max_connections": 1,
    "max_keepalive": 0,
    "max_redirects": 0,
    "reconnect_attempts": 0,
}


def make_options(
    headers: Mapping[str, str] | Iterable[tuple[str, str]] | None, **options: Any
) -> HTTPClientOptions:
    """``HTTPClientOptions`` from keyword arguments (``TypeError`` names an unknown one)."""
    unknown = set(options) - OPTION_NAMES
    if unknown:
        raise TypeError(f"unknown HTTP transport option(s): {', '.join(sorted(unknown))}")
    if "limits" not in options:
        # A larger body or event limit also admits the message it carries:
        # without this, a 64 MiB JSON body would be read whole and then
        # refused by the parser's default 16 MiB limit.
        largest = max(
            options.get("max_body_size", DEFAULT_MAX_MESSAGE_SIZE),
            options.get("max_event_size", DEFAULT_MAX_EVENT_SIZE),
        )
        if largest > DEFAULT_LIMITS.max_size:
            options["limits"] = Limits(max_size=largest, max_depth=DEFAULT_LIMITS.max_depth)
    return HTTPClientOptions(headers=header_list(headers), **options)


class HTTPTransportBase:
    """Inbox, failure and task plumbing (see the module docstring)."""

    http: HTTPClient

    def __init__(self, description: str) -> None:
        self._description = description
        self._inbox_in, self._inbox = anyio.create_memory_object_stream[m.Incoming](INBOX_SIZE)
        self._error: ConnectionClosed | None = None
        self._closed = False
        self._tg: anyio.abc.TaskGroup | None = None
        self._own_tg: anyio.abc.TaskGroup | None = None
        self._background: set[anyio.CancelScope] = set()
        self._inflight: set[anyio.CancelScope] = set()
        self._fast: Callable[[m.Incoming], bool] | None = None
        self._replies = anyio.Semaphore(MAX_REPLIES_IN_FLIGHT)
        #: By ``id()``: a server request or log message that came on a request's
        #: response stream, and the context of that request's sender.
        self._origins: dict[int, tuple[m.Incoming, contextvars.Context]] = {}

    # -- wiring ------------------------------------------------------------------

    def bind_task_group(self, tg: anyio.abc.TaskGroup) -> None:
        """Run background tasks (event streams) in ``tg``, which outlives the transport."""
        self._tg = tg

    def set_fast_path(self, fast: Callable[[m.Incoming], bool]) -> None:
        self._fast = fast

    async def __aenter__(self) -> Any:
        self._own_tg = anyio.create_task_group()
        await self._own_tg.__aenter__()
        self._tg = self._own_tg
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            await self.aclose()
        finally:
            # Exited whatever closing raised, or anyio's scope stack is corrupted.
            tg, self._own_tg = self._own_tg, None
            if tg is not None:
                tg.cancel_scope.cancel()
                await tg.__aexit__(None, None, None)

    # -- the session's side ----------------------------------------------------------

    async def aclose(self) -> None:  # pragma: no cover - every transport defines its own
        """Close the transport (each concrete transport defines it)."""

    async def receive(self) -> m.Incoming:
        try:
            return await self._inbox.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise anyio.EndOfStream from None

    def message_origin(self, message: m.Incoming) -> contextvars.Context | None:
        """The context of the request during which the server sent ``message`` (a
        request of its own, or a log message) on that request's response stream,
        once; ``None`` for one on the standalone stream. A legacy server asks and
        logs about the request it is serving this way, so the client can tell which
        of several in flight a message is about."""
        kept = self._origins.pop(id(message), None)
        return kept[1] if kept is not None and kept[0] is message else None

    def _note_origin(self, message: m.Incoming) -> None:
        """Remember the current context (a request's sender's) as ``message``'s origin."""
        origins = self._origins
        if len(origins) >= MAX_ORIGINS:
            del origins[next(iter(origins))]  # the oldest, never asked for
        origins[id(message)] = (message, contextvars.copy_context())

    def close_error(self) -> ConnectionClosed:
        if self._error is not None:
            return ConnectionClosed(self._error.reason)
        if self._closed:
            return ConnectionClosed(f"{self._description}: the connection was closed")
        return ConnectionClosed(f"{self._description}: the connection ended")

    def _check_open(self) -> None:
        if self._error is not None:
            raise anyio.BrokenResourceError
        if self._closed:
            raise anyio.ClosedResourceError

    # -- delivering -------------------------------------------------------------------

    async def _deliver(self, item: m.Incoming) -> None:
        try:
            await self._inbox_in.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the transport ended; nobody is listening any more

    async def _deliver_final(self, item: m.Incoming, *, queued_ahead: bool) -> None:
        """Deliver a stream's last message, through the fast path when order allows."""
        if queued_ahead or not self._settle_now(item):
            await self._deliver(item)

    def _settle_now(self, item: m.Incoming) -> bool:
        """Settle ``item`` through the fast path; False when it must go to the inbox."""
        fast = self._fast
        return fast is not None and self._error is None and fast(item)

    # -- failure and shutdown ---------------------------------------------------------

    def _fail(self, reason: str) -> anyio.BrokenResourceError:
        """End the transport for good (see the module docstring); returns what to raise."""
        if self._error is None and not self._closed:
            logger.debug("%s", reason)
            self._error = ConnectionClosed(reason)
            self._stop_everything()
        return anyio.BrokenResourceError(reason)

    def _stopped(self) -> bool:
        """True once the transport has failed or been closed."""
        return self._error is not None or self._closed

    def _stop_everything(self) -> None:
        self._inbox_in.close()
        for scope in list(self._inflight) + list(self._background):
            scope.cancel()
        # Exchanges that run without a scope of their own (see _http_client) stop here.
        self.http.abort()

    def _exchange(self) -> _Exchange:
        """Track one in-flight exchange so that failure or close can abort it."""
        return _Exchange(self)

    def _spawn(self, name: str, fn: Callable[[], Awaitable[None]]) -> bool:
        """Start ``fn`` in the background; False when no task group is available."""
        if self._tg is None or self._error is not None or self._closed:
            return False
        scope = anyio.CancelScope()
        self._background.add(scope)

        async def run() -> None:
            try:
                with scope:
                    await fn()
            except Exception:  # pragma: no cover - defensive: a bug must not kill the client
                logger.exception("%s: background task %s failed", self._description, name)
            finally:
                self._background.discard(scope)

        self._tg.start_soon(run, name=f"mcpwire {name}")
        return True

    def _reply_in_background(self, name: str, post: Callable[[], Awaitable[object]]) -> bool:
        """POST a response in the background when a slot is free; False: send it yourself.

        Nobody waits for our answer to the server (or for the error that answers
        what it sent malformed), and the session sends some from its reader
        task: a server that stalls that POST would otherwise hold up the reader,
        and every answer queued behind it. At most ``MAX_REPLIES_IN_FLIGHT`` run
        at once; past that the sender posts itself, which is the back-pressure.
        """
        try:
            self._replies.acquire_nowait()
        except anyio.WouldBlock:
            return False

        async def run() -> None:
            try:
                await post()
            except anyio.BrokenResourceError:
                pass  # the transport failed (``_fail`` says why to whoever waits)
            finally:
                self._replies.release()

        if self._spawn(name, run):
            return True
        self._replies.release()
        return False

    def _close_inbox(self) -> None:
        self._closed = True
        self._stop_everything()
        self._inbox.close()


class _Exchange:
    """The cancel scope of one exchange, known to its transport while it runs.

    A plain context manager class rather than a generator-based one: it is on
    every exchange's path, and the generator would add about half the cost of
    the scope itself.
    """

    __slots__ = ("_owner", "_scope")

    def __init__(self, owner: HTTPTransportBase) -> None:
        self._owner = owner
        self._scope = anyio.CancelScope()

    def __enter__(self) -> anyio.CancelScope:
        scope = self._scope.__enter__()
        owner = self._owner
        if owner._error is not None or owner._closed:
            scope.cancel()
        owner._inflight.add(scope)
        return scope

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        scope = self._scope
        self._owner._inflight.discard(scope)
        return scope.__exit__(exc_type, exc, tb)


def check_http_options(
    url: str,
    transport: str,
    headers: Mapping[str, str] | Iterable[tuple[str, str]] | None,
    **options: Any,
) -> None:
    """Raise ``ValueError``/``TypeError`` for what ``open_http_transport`` would reject."""
    URL.parse(url)
    if transport not in ("auto", "streamable", "sse"):
        raise ValueError(f"transport must be 'auto', 'streamable' or 'sse', not {transport!r}")
    options.pop("tool_headers", None)
    make_options(headers, **options)
