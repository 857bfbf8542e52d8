"""The legacy-era lifecycle (initialize handshake) as a transition table.

Theory of operation
-------------------
The table knows nothing about which side we are: the same ``Lifecycle`` object
tracks a client's view and a server's view, fed with what crossed the wire in
either direction (h11's "Rule 2"). A server calls ``on(INITIALIZE_REQUEST)`` when
one arrives, a client when it sends one.

Every transition is a row of ``_TRANSITIONS``; a ``(state, input)`` pair with no
row is a protocol violation and raises ``LocalProtocolError`` (the caller turns
that into ``RemoteProtocolError`` when the input came from the peer). A
violation does not move the machine to an error state by itself: the caller
answers the offending message with an error and the connection carries on, as
MCP servers must keep serving after bad input.

``REQUEST_GATE`` says which kinds of request may cross in each state, from the
lifecycle clauses (2025-11-25 ``basic/lifecycle``): before the handshake only
``initialize`` and ``ping``; once the result is out, anything (a client SHOULD
wait for ``notifications/initialized`` to be sent, and we accept pipelined
requests rather than punishing a peer for a SHOULD); a second ``initialize`` is
refused.

The modern era (2026-07-28) has no connection state: every request carries
its version in ``_meta`` and is judged alone, so it never touches this table.

The states and inputs are enums whose members hash by identity
(``__hash__ = object.__hash__``): they key tables looked up on every message,
and ``Enum``'s own ``__hash__`` is a Python function. A plain ``Enum``
compares its members by identity, so the two agree.
"""

from __future__ import annotations

import enum

from .._errors import LocalProtocolError

__all__ = ("REQUEST_GATE", "Lifecycle", "LifecycleInput", "LifecycleState", "RequestKind")


class LifecycleState(enum.Enum):
    IDLE = "idle"
    INITIALIZING = "initializing"
    AWAITING_INITIALIZED = "awaiting-initialized"
    READY = "ready"
    CLOSED = "closed"

    __hash__ = object.__hash__  # by identity: see the module docstring


class LifecycleInput(enum.Enum):
    INITIALIZE_REQUEST = "initialize request"
    INITIALIZE_RESULT = "initialize result"
    INITIALIZE_ERROR = "initialize error"
    INITIALIZED_NOTIFICATION = "initialized notification"
    CONNECTION_LOST = "connection lost"

    __hash__ = object.__hash__  # by identity: see the module docstring


class RequestKind(enum.Enum):
    INITIALIZE = "initialize"
    PING = "ping"
    OTHER = "other"

    __hash__ = object.__hash__  # by identity: see the module docstring


S = LifecycleState
I = LifecycleInput  # noqa: E741

_TRANSITIONS: dict[tuple[LifecycleState, LifecycleInput], LifecycleState] = {
    (S.IDLE, I.INITIALIZE_REQUEST): S.INITIALIZING,
    (S.INITIALIZING, I.INITIALIZE_RESULT): S.AWAITING_INITIALIZED,
    (S.INITIALIZING, I.INITIALIZE_ERROR): S.IDLE,
    (S.AWAITING_INITIALIZED, I.INITIALIZED_NOTIFICATION): S.READY,
    # A repeated initialized notification is harmless; tolerate it.
    (S.READY, I.INITIALIZED_NOTIFICATION): S.READY,
    (S.IDLE, I.CONNECTION_LOST): S.CLOSED,
    (S.INITIALIZING, I.CONNECTION_LOST): S.CLOSED,
    (S.AWAITING_INITIALIZED, I.CONNECTION_LOST): S.CLOSED,
    (S.READY, I.CONNECTION_LOST): S.CLOSED,
    (S.CLOSED, I.CONNECTION_LOST): S.CLOSED,
}

REQUEST_GATE: dict[LifecycleState, frozenset[RequestKind]] = {
    S.IDLE: frozenset({RequestKind.INITIALIZE, RequestKind.PING}),
    S.INITIALIZING: frozenset({RequestKind.PING}),
    S.AWAITING_INITIALIZED: frozenset({RequestKind.PING, RequestKind.OTHER}),
    S.READY: frozenset({RequestKind.PING, RequestKind.OTHER}),
    S.CLOSED: frozenset(),
}

del S, I


def request_kind(method: str) -> RequestKind:
    if method == "initialize":
        return RequestKind.INITIALIZE
    if method == "ping":
        return RequestKind.PING
    return RequestKind.OTHER


class Lifecycle:
    """Legacy handshake state for one connection (role-agnostic)."""

    __slots__ = ("state",)

    def __init__(self) -> None:
        self.state = LifecycleState.IDLE

    def on(self, event: LifecycleInput) -> LifecycleState:
        """Apply ``event``; raises ``LocalProtocolError`` if the table has no row."""
        try:
            self.state = _TRANSITIONS[(self.state, event)]
        except KeyError:
            raise LocalProtocolError(
                f"{event.value} is not allowed while the connection is {self.state.value}"
            ) from None
        return self.state

    def allows(self, method: str) -> bool:
        """Whether a request for ``method`` may cross in the current state."""
        return request_kind(method) in REQUEST_GATE[self.state]

    def refusal(self, method: str) -> str:
        """One sentence saying why ``method`` is refused now."""
        kind = request_kind(method)
        if kind is RequestKind.INITIALIZE:
            return (
                "the connection is already initialized"
                if self.state is not LifecycleState.IDLE
                else "initialize is not allowed now"
            )
        if self.state in (LifecycleState.IDLE, LifecycleState.INITIALIZING):
            return f"{method!r} before initialization completed: send initialize first"
        return f"{method!r} is not allowed while the connection is {self.state.value}"
