"""Exception hierarchy.

Who broke the rules is kept apart from what the peer said:

* ``ProtocolError`` (abstract) has two children. ``LocalProtocolError`` means *we*
  were asked to do something the protocol forbids; ``RemoteProtocolError`` means
  the *peer* sent something malformed. Each carries ``error_code``, the JSON-RPC
  code a reply to the offending message should use.
* ``JSONRPCError`` is not a protocol error: the peer answered a well-formed
  request with a well-formed error response. In the sans-IO core that answer is a
  value (``ErrorResponse``); the async layers raise it so callers can ``except``.
* ``ConnectionClosed`` and ``RequestTimeout`` are what a pending call fails with
  when the transport ends or its deadline passes; both say why.

This module imports nothing but the standard library so that the sans-IO core
can use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

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
    """

    def __init__(self, code: int, message: str, data: JSONValue = None) -> None:
        super().__init__(f"[{code}] {message}")
        self.code = code
        self.message = message
        self.data = data


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
    """The connection ended, so a pending or new request cannot complete.

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
