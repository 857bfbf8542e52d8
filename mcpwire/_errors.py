"""Exception hierarchy.

Who broke the rules is kept apart from what the peer said:

* ``ProtocolError`` (abstract) has two children. ``LocalProtocolError`` means *we*
  were asked to do something the protocol forbids; ``RemoteProtocolError`` means
  the *peer* sent something malformed. Each carries ``error_code``, the JSON-RPC
  code a reply to the offending message should use.
* ``JSONRPCError`` is not a protocol error: the peer answered a well-formed
  request with a well-formed error response. In the sans-IO core that answer is a
  value (``ErrorResponse``); the async layers raise it so callers can ``except``.
* ``TransportError``, a ``JSONRPCError``, is the error this side made up when no
  answer could be had from the peer: an HTTP error status without a JSON-RPC
  error body, a body that is no JSON-RPC answer, a response stream that ended
  before the answer, an answer too large or too deep to read. It has a code,
  message and data like any other, so ``except JSONRPCError`` still catches it;
  ``synthesized`` (True) and ``status`` (the HTTP status, or ``None``) say what
  it is. In the sans-IO core it is an ``ErrorResponse`` whose ``error`` is a
  ``TransportErrorObject``.
* ``ConnectionClosed`` and ``RequestTimeout`` are what a pending call fails with
  when the transport ends (or, over HTTP, the server cannot be reached at all)
  or its deadline passes; both say why.

``TransportError`` is about one exchange: the server was there, this request got
no answer, and the transport goes on. ``ConnectionClosed`` is about the peer:
it is gone, or cannot be reached, and a supervisor (the hub) takes the server
as lost.

This module imports nothing but the standard library so that the sans-IO core
can use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from .sansio._json import JSONObject, JSONValue

__all__ = (
    "AuthorizationError",
    "ConnectionClosed",
    "JSONRPCError",
    "LocalProtocolError",
    "MCPWireError",
    "ProtocolError",
    "RemoteProtocolError",
    "RequestTimeout",
    "TransportError",
    "error_from_object",
    "error_object",
)

# JSON-RPC "Invalid Request" and "Internal error"; duplicated here (not imported)
# to keep this module a leaf.
_INVALID_REQUEST = -32600
_INTERNAL_ERROR = -32603


class MCPWireError(Exception):
    """Base class of every exception mcpwire raises on purpose."""


class ProtocolError(MCPWireError):
    """Somebody broke the protocol. Never raised directly: see the two subclasses.

    ``error_code`` is the JSON-RPC error code that a reply to the offending
    message should carry.
    """

    def __init__(self, message: str, *, error_code: int = _INVALID_REQUEST) -> None:
        if type(self) is ProtocolError:
            raise TypeError("raise LocalProtocolError or RemoteProtocolError")
        super().__init__(message)
        self.error_code = error_code


class LocalProtocolError(ProtocolError):
    """We were about to do something the protocol forbids (a bug in the caller)."""


class RemoteProtocolError(ProtocolError):
    """The peer sent something the protocol forbids."""


class JSONRPCError(MCPWireError):
    """The peer answered a request with a JSON-RPC error response.

    Attributes:
        code: the integer error code (see ``mcpwire.sansio.ErrorCode``).
        message: the peer's one-line description.
        data: the optional ``data`` member, ``None`` when absent.
        synthesized: False: the peer sent this error (see ``TransportError``).
    """

    #: Whether this side made the error up (``TransportError``) rather than the peer.
    synthesized: ClassVar[bool] = False

    def __init__(self, code: int, message: str, data: JSONValue = None) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message
        self.data = data


class TransportError(JSONRPCError):
    """No answer could be had from the peer, and the client made this error up in
    its place: the server answered with an HTTP error status and no JSON-RPC
    error body, or with a body that is no JSON-RPC answer (wrong Content-Type,
    empty, ``null``), or its response stream or body ended before the answer,
    or the answer was too large or too deep to read, or the connection the
    request went out on ended before any response (closed or reset; a request
    that is not safe to repeat, such as ``tools/call``, is not sent again, even
    when the server closed a kept-alive connection just as it went out, and the
    message says the server may have received it). Only this exchange failed:
    the transport stays usable.

    A JSON-RPC error response the peer did send (even on an HTTP 4xx or 5xx) is
    a plain ``JSONRPCError``, never this.

    Attributes:
        code: -32600 for an HTTP 4xx or an answer past a limit, -32603 otherwise.
        message: what went wrong, naming the method and the HTTP status.
        data: ``{"httpStatus": ..., "body": ...}`` where there was one (the
            body an excerpt of at most 2048 bytes), else ``None``.
        status: the HTTP status of the response that stood in for the answer,
            ``None`` when there was none (stdio, an unreachable answer).
        synthesized: True.
    """

    synthesized: ClassVar[bool] = True

    def __init__(
        self, code: int, message: str, data: JSONValue = None, *, status: int | None = None
    ) -> None:
        super().__init__(code, message, data)
        self.status = status


def error_object(exc: JSONRPCError) -> JSONObject:
    """The JSON-RPC error object (wire form) of ``exc``; ``data`` only when set."""
    error: JSONObject = {"code": exc.code, "message": exc.message}
    if exc.data is not None:
        error["data"] = exc.data
    return error


def error_from_object(error: object, fallback: str) -> JSONRPCError:
    """The ``JSONRPCError`` an error object (wire form, as stored) stands for.

    A member of the wrong type does not hide the rest: a code that is no integer
    (``true`` included) becomes -32603, a message that is no string ``fallback``.
    """
    fields = error if isinstance(error, dict) else {}
    code, message = fields.get("code"), fields.get("message")
    return JSONRPCError(
        code if isinstance(code, int) and not isinstance(code, bool) else _INTERNAL_ERROR,
        message if isinstance(message, str) else fallback,
        fields.get("data"),
    )


class ConnectionClosed(MCPWireError):
    """The connection ended, so a pending or new request cannot complete: the
    peer exited or closed its end, the transport was closed, or, over HTTP, the
    server cannot be reached at all (connection refused, no route, name or TLS
    failure, connect timeout; the next request over the same transport tries
    again). A request that reached the server and got no answer is a
    ``TransportError`` instead.

    Attributes:
        reason: one human sentence saying why (peer exited, EOF, closed locally).
        exit_code: the child's exit status when the peer was a child process.
        stderr_tail: the last lines the child wrote to stderr, if any were kept.
    """

    def __init__(
        self,
        reason: str,
        *,
        exit_code: int | None = None,
        stderr_tail: str = "",
    ) -> None:
        text = reason
        if stderr_tail:
            text += "\n--- last stderr lines ---\n" + stderr_tail.rstrip("\n")
        super().__init__(text)
        self.reason = reason
        self.exit_code = exit_code
        self.stderr_tail = stderr_tail

    def again(self) -> ConnectionClosed:
        """The same error, new: each caller a connection's end fails raises its own,
        so that they do not share (and extend) one traceback."""
        return ConnectionClosed(self.reason, exit_code=self.exit_code, stderr_tail=self.stderr_tail)


class RequestTimeout(MCPWireError, TimeoutError):
    """A request got no response before its deadline (raised at the deadline; the
    peer is sent ``notifications/cancelled`` for it as soon as it can take it)."""

    def __init__(self, method: str, seconds: float, detail: str | None = None) -> None:
        message = f"request {method!r} timed out after {seconds:.3g} s"
        super().__init__(message if detail is None else f"{message}: {detail}")
        self.method = method
        self.seconds = seconds
        #: What the transport knew of why no answer came (a line being discarded).
        self.detail = detail


class AuthorizationError(MCPWireError):
    """MCP authorization (OAuth 2.1) failed: a malformed challenge or metadata
    document, a server that refused, or a check that protects the token (a
    resource or issuer that does not match) refused to go on. The message says
    which and where."""
