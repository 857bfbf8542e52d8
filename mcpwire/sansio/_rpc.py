"""Request/response correlation, progress and cancellation, sans-IO.

Theory of operation
-------------------
``RPCState`` is the bookkeeping one side of a JSON-RPC connection needs, with
no I/O and no clock. It is role-agnostic: client and server sessions each own one.

Outgoing requests (ours, awaiting the peer's answer):

* ``start_request()`` allocates a fresh integer id (never reused on this
  connection), optionally a progress token (the id itself, which is unique among
  our active requests as MCP requires), and records the request as PENDING.
* ``response_received()`` matches a ``Response``/``ErrorResponse`` to its
  request. Responses for ids we never issued, and late responses for requests
  we already abandoned, are ignored and counted (spec-notes §9 #13): they never
  raise, because a peer's mistake must not crash our side. An error response
  with no id (``null`` or absent) is the peer saying it could not read one of
  our messages: counted on its own as well (``null_id_errors``).
* ``abandon()`` gives up on a request (timeout, caller cancelled) and returns the
  ``notifications/cancelled`` to send, as the cancellation clause asks.

Incoming requests (the peer's, being handled by us):

* ``request_received()`` registers an id as RUNNING; a second request with an id
  that is still running is a duplicate (MCP ids must be unique among the
  sender's in-flight requests) and is refused with -32600.
* ``cancel_received()`` marks a running request CANCELLED; unknown ids are
  ignored and counted.
* ``request_finished()`` says whether to send the response: not when the
  request was cancelled ("receivers SHOULD NOT send a response for a cancelled
  request").

Per-request states move by the tables ``_OUT`` and ``_IN``; a missing row is a
bug in the caller and raises ``LocalProtocolError``.

The states and inputs are enums whose members hash by identity
(``__hash__ = object.__hash__``): they key tables looked up on every message,
and ``Enum``'s own ``__hash__`` is a Python function. A plain ``Enum``
compares its members by identity, so the two agree.
"""

from __future__ import annotations

import enum
from collections import OrderedDict

from .._errors import LocalProtocolError
from ._json import JSONObject, JSONValue
from ._messages import (
    ErrorResponse,
    Invalid,
    Notification,
    Request,
    RequestId,
    Response,
    is_request_id,
)
from ._record import Record

__all__ = ("ABANDONED_MEMORY", "Counters", "InState", "OutState", "Outgoing", "RPCState")

#: How many abandoned ids are remembered so that a late answer is counted as
#: "late" rather than "unknown". Bounded so a long-lived connection cannot grow.
ABANDONED_MEMORY = 1024


class OutState(enum.Enum):
    PENDING = "pending"
    ANSWERED = "answered"
    ABANDONED = "abandoned"

    __hash__ = object.__hash__  # by identity: see the module docstring


class InState(enum.Enum):
    RUNNING = "running"
    CANCELLED = "cancelled"
    FINISHED = "finished"

    __hash__ = object.__hash__  # by identity: see the module docstring


class _OutInput(enum.Enum):
    RESPONSE = "response"
    ABANDON = "abandon"

    __hash__ = object.__hash__  # by identity: see the module docstring


class _InInput(enum.Enum):
    CANCEL = "cancel"
    FINISH = "finish"

    __hash__ = object.__hash__  # by identity: see the module docstring


_OUT: dict[tuple[OutState, _OutInput], OutState] = {
    (OutState.PENDING, _OutInput.RESPONSE): OutState.ANSWERED,
    (OutState.PENDING, _OutInput.ABANDON): OutState.ABANDONED,
}

_IN: dict[tuple[InState, _InInput], InState] = {
    (InState.RUNNING, _InInput.CANCEL): InState.CANCELLED,
    (InState.RUNNING, _InInput.FINISH): InState.FINISHED,
    (InState.CANCELLED, _InInput.CANCEL): InState.CANCELLED,
    (InState.CANCELLED, _InInput.FINISH): InState.FINISHED,
}


class Outgoing(Record, frozen=False):
    """One of our requests awaiting an answer."""

    id: RequestId
    method: str
    progress_token: RequestId | None
    state: OutState

    def __init__(
        self,
        id: RequestId,
        method: str,
        progress_token: RequestId | None,
        state: OutState = OutState.PENDING,
    ) -> None:
        self.id = id
        self.method = method
        self.progress_token = progress_token
        self.state = state


class Counters(Record, frozen=False):
    """What was ignored, for diagnostics. Never affects behaviour."""

    unknown_responses: int
    late_responses: int
    unknown_cancels: int
    unknown_progress: int
    duplicate_requests: int
    null_id_errors: int

    def __init__(
        self,
        unknown_responses: int = 0,
        late_responses: int = 0,
        unknown_cancels: int = 0,
        unknown_progress: int = 0,
        duplicate_requests: int = 0,
        null_id_errors: int = 0,
    ) -> None:
        self.unknown_responses = unknown_responses
        self.late_responses = late_responses
        self.unknown_cancels = unknown_cancels
        self.unknown_progress = unknown_progress
        self.duplicate_requests = duplicate_requests
        #: Error responses with no id (also counted in ``unknown_responses``).
        self.null_id_errors = null_id_errors

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__match_args__}


class RPCState:
    """Bookkeeping for one side of a connection (see the module docstring)."""

    __slots__ = ("_abandoned", "_by_token", "_incoming", "_next_id", "_pending", "counters")

    def __init__(self) -> None:
        self.counters = Counters()
        self._next_id = 1
        self._pending: dict[RequestId, Outgoing] = {}
        self._by_token: dict[RequestId, RequestId] = {}
        self._abandoned: OrderedDict[RequestId, None] = OrderedDict()
        self._incoming: dict[RequestId, InState] = {}

    # -- outgoing -------------------------------------------------------------

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    @property
    def running_count(self) -> int:
        return len(self._incoming)

    def start_request(
        self, method: str, params: JSONObject | None = None, *, progress: bool = False
    ) -> tuple[Request, Outgoing]:
        """Build a request with a fresh id and record it as pending.

        With ``progress=True`` the request's ``params._meta.progressToken`` is
        set (a copy of ``params`` is made; the caller's dict is not modified).
        """
        rid = self._next_id
        self._next_id = rid + 1
        token: RequestId | None = None
        if progress:
            token = rid
            params = dict(params) if params else {}
            meta = params.get("_meta")
            new_meta: JSONObject = dict(meta) if isinstance(meta, dict) else {}
            new_meta["progressToken"] = token
            params["_meta"] = new_meta
            self._by_token[token] = rid
        out = Outgoing(rid, method, token)
        self._pending[rid] = out
        return Request(rid, method, params), out

    def response_received(self, message: Response | ErrorResponse) -> Outgoing | None:
        """The pending request ``message`` answers, or ``None`` (ignored, counted)."""
        rid = message.id
        out = self._pending.pop(rid, None) if rid is not None else None
        if out is None:
            if rid is not None and rid in self._abandoned:
                self.counters.late_responses += 1
            else:
                self.counters.unknown_responses += 1
                if rid is None:
                    self.counters.null_id_errors += 1
            return None
        out.state = _OUT[(out.state, _OutInput.RESPONSE)]
        if out.progress_token is not None:
            self._forget_token(out)
        return out

    def was_abandoned(self, rid: RequestId | None) -> bool:
        """Whether ``rid`` is one of ours given up on (among the last ``ABANDONED_MEMORY``)."""
        return rid is not None and rid in self._abandoned

    def malformed_response_received(self, invalid: Invalid) -> Outgoing | None:
        """The pending request that a malformed response names, now ended; else ``None``.

        The peer answered one of our ids with something that is not a response
        (a ``result`` that is no object, a broken ``error``, both at once). No
        well-formed answer is due after it, so waiting on would only turn the
        peer's mistake into a timeout: the caller learns of it at once.
        """
        rid = invalid.answers
        out = self._pending.pop(rid, None) if rid is not None else None
        if out is None:
            return None
        out.state = _OUT[(out.state, _OutInput.RESPONSE)]
        self._forget_token(out)
        return out

    def abandon(self, rid: RequestId, reason: str | None = None) -> Notification | None:
        """Stop waiting for ``rid``; returns the ``notifications/cancelled`` to send.

        Returns ``None`` when the request is no longer pending (already answered
        or abandoned), in which case nothing should be sent.
        """
        out = self._pending.pop(rid, None)
        if out is None:
            return None
        out.state = _OUT[(out.state, _OutInput.ABANDON)]
        self._forget_token(out)
        self._abandoned[rid] = None
        if len(self._abandoned) > ABANDONED_MEMORY:
            self._abandoned.popitem(last=False)
        params: JSONObject = {"requestId": rid}
        if reason:
            params["reason"] = reason
        return Notification("notifications/cancelled", params)

    def progress_received(self, params: JSONObject | None) -> RequestId | None:
        """The pending request a ``notifications/progress`` belongs to, or ``None``."""
        token = params.get("progressToken") if params else None
        if not is_request_id(token):
            self.counters.unknown_progress += 1
            return None
        rid = self._by_token.get(token)  # type: ignore[arg-type]
        if rid is None or rid not in self._pending:
            self.counters.unknown_progress += 1
            return None
        return rid

    def fail_all(self) -> list[Outgoing]:
        """Forget every pending request (the connection is gone); returns them.

        They count as given up on (``was_abandoned``): an answer to one that was
        already on its way when the connection was closed is late, not stray.
        """
        failed = list(self._pending.values())
        abandoned = self._abandoned
        for rid in self._pending:
            abandoned[rid] = None
        while len(abandoned) > ABANDONED_MEMORY:
            abandoned.popitem(last=False)
        self._pending.clear()
        self._by_token.clear()
        return failed

    def _forget_token(self, out: Outgoing) -> None:
        if out.progress_token is not None:
            self._by_token.pop(out.progress_token, None)

    # -- incoming -------------------------------------------------------------

    def request_received(self, request: Request) -> bool:
        """Register a peer's request; ``False`` if its id is already running."""
        if request.id in self._incoming:
            self.counters.duplicate_requests += 1
            return False
        self._incoming[request.id] = InState.RUNNING
        return True

    def cancel_received(self, params: JSONObject | None) -> RequestId | None:
        """The running request a ``notifications/cancelled`` names, or ``None``."""
        rid: JSONValue = params.get("requestId") if params else None
        if not is_request_id(rid) or rid not in self._incoming:
            self.counters.unknown_cancels += 1
            return None
        key: RequestId = rid  # type: ignore[assignment]
        self._incoming[key] = _IN[(self._incoming[key], _InInput.CANCEL)]
        return key

    def is_cancelled(self, rid: RequestId) -> bool:
        return self._incoming.get(rid) is InState.CANCELLED

    def request_finished(self, rid: RequestId) -> bool:
        """Forget a handled request; ``True`` if its response should be sent."""
        state = self._incoming.pop(rid, None)
        if state is None:
            raise LocalProtocolError(f"request {rid!r} is not running")
        _IN[(state, _InInput.FINISH)]
        return state is InState.RUNNING
