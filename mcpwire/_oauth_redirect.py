"""Receiving an OAuth authorization response on a loopback redirect URI.

A native client (a command line, a desktop hub) completes the authorization
code grant by sending the user's browser to the authorization server with a
redirect URI on the loopback interface, and reading the code from the one
request the browser then makes to it. RFC 8252 §7.3 (OAuth for native apps):
the URI is ``http://127.0.0.1:{port}/{path}``, the port is chosen when the
request is made (the authorization server must accept any port), and the
listener is bound to the loopback interface only.

``LoopbackRedirect`` is that listener, on h11::

    async with LoopbackRedirect() as redirect:
        url = authorization_url(redirect_uri=redirect.redirect_uri, state=state, ...)
        open_browser(url)
        response = await redirect.wait(state)
    # exchange response.code for tokens

Rules it follows:

* Only ``GET`` (and ``HEAD``) on the redirect path is the authorization
  response; other paths get 404 (browsers ask for ``/favicon.ico``), other
  methods 405.
* ``state`` must be the one the client sent (RFC 6749 §10.12, CSRF): a
  response with another state is refused with 400 and the listener keeps
  waiting for the real one. Requests that arrive before ``wait`` names the
  state are held until it does.
* A parameter given twice is refused (RFC 6749 §3.1), and ``error`` in the
  response (§4.1.2.1) ends the wait with ``AuthorizationError``, carrying the
  error code and description.
* A response whose state was already answered gets 400. ``wait`` may be
  called again for a later authorization (a step-up to more scopes); a
  request that comes while no wait is in progress is held for
  ``read_timeout``, then refused.
* Pages sent to the browser echo nothing from the request unescaped, are not
  cached, and send no ``Referer`` onwards (the URL holds the code).

Every limit is bounded: the request head (``max_head``), how long a
connection may take to send it (``read_timeout``), connections served at
once (``max_connections``), and how long a request waits for ``wait`` to name
the state (``read_timeout`` as well).
"""

from __future__ import annotations

import collections
import html
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import anyio
import anyio.abc
import h11

from ._aio_stream import open_tcp_listener
from ._errors import AuthorizationError

__all__ = ("AuthorizationDenied", "AuthorizationResponse", "LoopbackRedirect")

_MAX_PARAMS = 64
_USED_STATES = 16


@dataclass(frozen=True)
class AuthorizationResponse:
    """An authorization response received on the redirect URI (RFC 6749 §4.1.2)."""

    code: str
    state: str | None
    #: The issuer identifier, when the server sends one (RFC 9207).
    iss: str | None = None
    #: Every query parameter, as received.
    params: dict[str, str] = field(default_factory=dict)


class LoopbackRedirect:
    """A one-shot redirect URI listener on the loopback interface (see the module docstring).

    Args:
        host: the loopback address to bind (RFC 8252 §8.3: a literal address,
            not ``localhost``).
        port: 0 for a port the system picks (the usual case), or a fixed one
            for an authorization server that registered it.
        path: the redirect URI's path.
        max_head: the largest request head accepted, in bytes.
        read_timeout: seconds a connection may take to send its request, and
            a request may wait for ``wait`` to name the state.
        max_connections: connections served at once.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        path: str = "/callback",
        max_head: int = 8 * 1024,
        read_timeout: float = 30.0,
        max_connections: int = 16,
    ) -> None:
        if not path.startswith("/"):
            raise ValueError("path must start with '/'")
        self.host = host
        self.port = port
        self.path = path
        self.max_head = max_head
        self.read_timeout = read_timeout
        self._limiter = anyio.CapacityLimiter(max_connections)
        self._listener: anyio.abc.Listener[Any] | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        #: Set when a ``wait`` starts; replaced by a fresh one when it ends.
        self._arming = anyio.Event()
        self._waiting = False
        self._state: str | None = None
        self._got = anyio.Event()
        self._outcome: AuthorizationResponse | AuthorizationError | None = None
        #: States already answered, so that a repeated response is told so.
        self._used: collections.deque[str | None] = collections.deque(maxlen=_USED_STATES)

    @property
    def redirect_uri(self) -> str:
        """The URI to register and to send as ``redirect_uri`` (known once entered)."""
        if self._listener is None:
            raise RuntimeError("enter the LoopbackRedirect first: its port is chosen then")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{self.path}"

    async def __aenter__(self) -> LoopbackRedirect:
        self._listener = await open_tcp_listener(self.host, self.port)
        self.port = self._listener.extra(anyio.abc.SocketAttribute.local_port)
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
        tg.start_soon(self._listener.serve, self._serve_one)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        tg, self._tg = self._tg, None
        if tg is None:
            return
        tg.cancel_scope.cancel()
        try:
            await tg.__aexit__(None, None, None)
        finally:
            if self._listener is not None:
                await self._listener.aclose()

    async def wait(
        self, state: str | None, *, timeout: float | None = 300.0
    ) -> AuthorizationResponse:
        """The authorization response that carries ``state``.

        ``state`` is the value the client put in the authorization request
        (``None`` if it sent none: then any response is taken). One wait at a
        time; a later authorization (a step-up to more scopes) waits again.

        Raises:
            AuthorizationDenied: the server answered with ``error``.
            TimeoutError: nothing valid arrived within ``timeout`` seconds.
        """
        if self._tg is None:
            raise RuntimeError("enter the LoopbackRedirect before waiting on it")
        if self._waiting:
            raise RuntimeError("another wait is in progress")
        self._state, self._outcome, self._got = state, None, anyio.Event()
        self._waiting = True
        self._arming.set()
        try:
            with anyio.fail_after(timeout):
                await self._got.wait()
        finally:
            self._waiting = False
            self._arming = anyio.Event()
        outcome = self._outcome
        if isinstance(outcome, AuthorizationError):
            raise outcome
        assert outcome is not None
        return outcome

    def redirect_handler(
        self, show: Callable[[str], object] | None = None, *, timeout: float = 300.0
    ) -> Callable[[str], Awaitable[str]]:
        """A redirect handler for ``OAuthClient`` (``redirect_uri=self.redirect_uri``).

        Given the authorization URL, it calls ``show`` with it (open a
        browser, print it for the user), waits for the response with the
        URL's ``state``, and returns the URL the browser was sent to, which
        ``OAuthClient`` checks and reads the code from. Nothing within
        ``timeout`` seconds raises ``AuthorizationError``.
        """

        async def handle(authorization_url: str) -> str:
            state = dict(parse_qsl(urlsplit(authorization_url).query)).get("state")
            if show is not None:
                show(authorization_url)
            try:
                response = await self.wait(state, timeout=timeout)
            except TimeoutError:
                raise AuthorizationError(
                    f"no authorization response at {self.redirect_uri} within {timeout:g} s "
                    "(the user's step in the browser did not finish)"
                ) from None
            return f"{self.redirect_uri}?{urlencode(response.params)}"

        return handle

    # -- one connection ----------------------------------------------------------------

    async def _serve_one(self, stream: anyio.abc.ByteStream) -> None:
        async with stream, self._limiter:
            conn = h11.Connection(h11.SERVER, max_incomplete_event_size=self.max_head)
            try:
                with anyio.fail_after(self.read_timeout):
                    request = await _read_request(stream, conn, self.max_head)
            except h11.RemoteProtocolError as exc:  # a malformed or oversized head: 400 or 431
                await _respond(stream, conn, exc.error_status_hint, _page("Bad request", str(exc)))
                return
            except (TimeoutError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                return
            if request is None:
                return
            status, page = await self._answer(request)
            await _respond(stream, conn, status, "" if request.method == b"HEAD" else page)

    async def _answer(self, request: h11.Request) -> tuple[int, str]:
        if request.method not in (b"GET", b"HEAD"):
            return 405, _page("Method not allowed", "Only GET is served here.")
        target = urlsplit(request.target.decode("ascii", "replace"))
        if target.path != self.path:
            return 404, _page(
                "Not found", "This listener only receives the authorization response."
            )
        try:
            pairs = parse_qsl(
                target.query,
                keep_blank_values=True,
                strict_parsing=False,
                max_num_fields=_MAX_PARAMS,
            )
        except ValueError:
            return 400, _page("Bad request", "Too many parameters.")
        params: dict[str, str] = {}
        for key, value in pairs:
            if key in params:
                return 400, _page("Bad request", f"Parameter {key!r} appears more than once.")
            params[key] = value
        state = params.get("state")
        if state is not None and state in self._used:
            return 400, _page("Already done", "This authorization response was already received.")
        if not self._waiting:
            # The browser can be quicker than the application's call to wait.
            with anyio.move_on_after(self.read_timeout):
                await self._arming.wait()
            if not self._waiting:
                return 400, _page("Bad request", "No authorization is in progress here.")
        if self._state is not None and state != self._state:
            return 400, _page(
                "Bad request", "The state does not match the request this client made."
            )
        if "error" in params:
            self._finish(state, _denied(params))
            return 200, _page(
                "Authorization failed", "The authorization server refused; see the application."
            )
        code = params.get("code")
        if not code:
            return 400, _page("Bad request", "The response carries neither a code nor an error.")
        self._finish(state, AuthorizationResponse(code, state, params.get("iss"), params))
        return 200, _page(
            "Authorization complete", "You can close this window and return to the application."
        )

    def _finish(
        self, state: str | None, outcome: AuthorizationResponse | AuthorizationError
    ) -> None:
        self._used.append(state)
        self._outcome = outcome
        self._waiting = False
        self._got.set()


class AuthorizationDenied(AuthorizationError):
    """The authorization server answered the authorization request with an
    error (RFC 6749 §4.1.2.1): ``access_denied`` when the user declined."""

    def __init__(self, error: str, description: str | None = None, uri: str | None = None) -> None:
        text = f"the authorization server refused: {error}"
        if description:
            text += f" ({description})"
        super().__init__(text)
        self.error = error
        self.description = description
        self.uri = uri


def _denied(params: dict[str, str]) -> AuthorizationDenied:
    return AuthorizationDenied(
        params["error"], params.get("error_description"), params.get("error_uri")
    )


async def _read_request(
    stream: anyio.abc.ByteStream, conn: h11.Connection, limit: int
) -> h11.Request | None:
    received = 0
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            try:
                data = await stream.receive()
            except anyio.EndOfStream:
                data = b""
            # h11 bounds only a head still incomplete; one that arrives whole in
            # a single read is bounded here.
            received += len(data)
            if received > limit:
                raise h11.RemoteProtocolError("request head too large", error_status_hint=431)
            conn.receive_data(data)
            continue
        if isinstance(event, h11.Request):
            return event
        return None  # ConnectionClosed: the peer left without asking


async def _respond(
    stream: anyio.abc.ByteStream, conn: h11.Connection, status: int, page: str
) -> None:
    body = page.encode()
    headers = [
        ("Content-Type", "text/html; charset=utf-8"),
        ("Cache-Control", "no-store"),
        ("Referrer-Policy", "no-referrer"),
        ("Connection", "close"),
    ]
    try:
        if body:
            headers.append(("Content-Length", str(len(body))))
        out = conn.send(h11.Response(status_code=status, headers=headers)) or b""
        if body:
            out += conn.send(h11.Data(data=body)) or b""
        out += conn.send(h11.EndOfMessage()) or b""
        with anyio.move_on_after(5.0):
            await stream.send(out)
    except (h11.LocalProtocolError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass


def _page(title: str, text: str) -> str:
    return (
        "<!doctype html><html><head><meta charset=utf-8>"
        f"<title>{html.escape(title)}</title></head>"
        f"<body><h1>{html.escape(title)}</h1><p>{html.escape(text)}</p></body></html>"
    )
