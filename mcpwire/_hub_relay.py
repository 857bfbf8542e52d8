"""Relaying a downstream server's asks to the client upstream (``mcpwire hub --serve``).

A server behind the hub may ask its client for a model's completion
(``sampling/createMessage``) or for the user's input (``elicitation/create``)
while it handles a call (``tools/call``, ``prompts/get``, ``resources/read``).
With ``Hub(relay=AskRelay())`` the hub declares both capabilities to every
server, and ``HubServer`` hands each ask to the client whose call it serves,
in that client's era:

* The upstream call is found by the task the ask arrives in: a 2026-07-28
  server asks in an ``InputRequiredResult``, which the hub's client answers in
  the task that made the call. A legacy server asks with a request of its own,
  which names no call. Over streamable HTTP it comes on the response stream
  of the request it is about (``ORIGIN``), which tells the call, however
  many are in flight. Over stdio nothing links the two, so the ask goes to
  the only call in flight to that server; with several in flight it cannot be
  tied to one, and the hub's own callback answers it, as outside any call.
* A legacy upstream client is asked with a request related to its call.
* A 2026-07-28 upstream client is asked with an ``InputRequiredResult``: the
  forwarded call ends, and the client's retry, which carries the answers,
  makes the call again downstream, where the same ask (by its place among the
  call's asks) now finds its answer (mrtr.mdx). A legacy server's tool thus
  runs again from its start, as a 2026-07-28 server's does on every round.
* Outside a call, or when the upstream client did not declare the capability,
  the hub's ``client_options`` callback answers; without one, the ask fails
  with -32601, as from any client that cannot answer it.

A server's log messages (``notifications/message``) about a call go to that
call's client, as log messages of its request: those that come on the call's
response stream (``ORIGIN``), and any while it is the only call in flight to
that server. The client's level filters them (``logging/setLevel``, or the
request's own level in the 2026-07-28 era); the hub asks every server for its
logs from ``debug`` up (``client_options["log_level"]`` sets another level).
Any other log (no call in flight, or several and nothing to tell which) is the
server's own: it goes, as a log message of the hub's, to every legacy client
upstream whose level admits it (``Server.log``), with the server's name as its
``logger`` when it names none; a 2026-07-28 client hears logs only within its
own requests. The hub's own ``on_notification`` sees every log message too.

A server's ``roots/list`` is relayed as well, and the hub declares roots to
every server. During a call it is the calling client's roots, asked as
above. Servers also ask outside calls (after ``initialize``, after a
``notifications/roots/list_changed``): then the one legacy client connected
upstream that declared roots is asked with a request of its own (a
2026-07-28 client can be asked only within one of its own requests). With
none, or several (none of them is the servers' one client),
``client_options["roots"]`` answers, else -32601. ``HubServer`` tells every
legacy server behind the hub that the roots changed
(``notifications/roots/list_changed``) when that upstream client says so,
and when it comes or goes, so servers ask anew.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import TYPE_CHECKING, Protocol, TypeVar

import anyio

from ._asks import ORIGIN
from ._context import CapabilityMissing, InputRequired
from ._errors import JSONRPCError, MCPWireError
from ._hub_connect import chained
from ._hub_subs import Subscriptions
from ._versions import LOG_LEVELS
from .sansio._messages import ErrorCode

if TYPE_CHECKING:
    from ._context import Context
    from ._hub import Hub
    from ._session import Session
    from .sansio._json import JSONObject, JSONValue

__all__ = ("ROOTS_TIMEOUT", "AskRelay", "Upstream")

_T = TypeVar("_T")
#: The ``Client`` option of each relayed method.
_OPTIONS = {"sampling": "sampling/createMessage", "elicitation": "elicitation/create"}
#: Seconds an upstream client gets to list its roots when asked outside a call.
ROOTS_TIMEOUT = 10.0
#: Seconds between looks at whether an upstream client can be asked yet.
_POLL = 0.02


class _Call:
    """An upstream call being forwarded: its context, its asks so far, and what
    a legacy server asked that the upstream client must answer on its retry."""

    __slots__ = ("asks", "ctx", "missing", "scope")

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.asks = 0
        self.missing: dict[str, JSONValue] = {}
        self.scope = anyio.CancelScope()


class AskRelay:
    """Hands downstream servers' asks to the upstream client (see the module docstring)."""

    def __init__(self) -> None:
        self._current: ContextVar[_Call | None] = ContextVar("mcpwire_hub_call", default=None)
        self._calls: dict[str, list[_Call]] = {}
        #: The servers upstream (``HubServer``s over the hub), asked for their
        #: clients' roots outside calls.
        self._upstreams: weakref.WeakSet[Upstream] = weakref.WeakSet()
        #: The upstream clients' resource subscriptions, held at the servers.
        self.subscriptions = Subscriptions(self._updated)

    async def run(self, hub: Hub) -> None:
        """What the relay does in the background while ``hub`` runs (``Hub`` starts it)."""
        await self.subscriptions.run(hub)

    def attach(self, upstream: Upstream) -> None:
        """Ask ``upstream``'s clients for roots outside calls (``HubServer`` does this)."""
        self._upstreams.add(upstream)

    def client_options(self, server: str, options: Mapping[str, object]) -> dict[str, object]:
        """``options`` for ``server``'s ``Client``, with the relayed asks bound to it."""
        bound = dict(options)
        for option, method in _OPTIONS.items():
            fallback = options.get(option)
            bound[option] = functools.partial(self.answer, server, method, fallback)
        bound["roots"] = functools.partial(self.roots, server, options.get("roots"))
        bound["on_notification"] = chained(
            functools.partial(self.notified, server), options.get("on_notification")
        )
        bound.setdefault("log_level", "debug")
        return bound

    async def forward(self, server: str, ctx: Context, call: Callable[[], Awaitable[_T]]) -> _T:
        """``call()`` on behalf of the upstream request of ``ctx``, to ``server``.
        Raises ``InputRequired`` when a legacy server asked what a 2026-07-28 client
        must answer first."""
        record = _Call(ctx)
        calls = self._calls.setdefault(server, [])
        calls.append(record)
        token = self._current.set(record)
        try:
            with record.scope:
                return await call()
        finally:
            self._current.reset(token)
            calls.remove(record)
            if not calls:
                del self._calls[server]
        raise InputRequired(dict(record.missing))

    async def notified(self, server: str, method: str, params: JSONObject) -> None:
        """Pass ``server``'s log message on to the client of the call it is about
        (else to the legacy clients upstream), and an update of a resource
        subscribed at ``server`` to the clients upstream."""
        uri = params.get("uri")
        if method == "notifications/resources/updated" and isinstance(uri, str):
            if self.subscriptions.held_at(uri, server):
                await self._updated(uri)
            return
        level, logger = params.get("level"), params.get("logger")
        if method != "notifications/message" or level not in LOG_LEVELS:
            return
        record = self._call_of(server)
        if record is not None:
            try:
                await record.ctx.log(
                    str(level),
                    params.get("data"),
                    logger=logger if isinstance(logger, str) else None,
                )
            except (MCPWireError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                pass  # the upstream client is gone; its call ends with it
            return
        for upstream in list(self._upstreams):
            await upstream.log(
                str(level), params.get("data"), logger=logger if isinstance(logger, str) else server
            )

    async def _updated(self, uri: str) -> None:
        """Report ``uri`` updated to the clients upstream subscribed to it."""
        for upstream in list(self._upstreams):
            await upstream.notify_resource_updated(uri)

    async def answer(
        self, server: str, method: str, fallback: object, params: JSONObject
    ) -> JSONObject:
        """Answer ``server``'s ask through the upstream client of its call."""
        answered = await self._through_call(server, {"method": method, "params": params})
        if answered is not None:
            return answered
        if callable(fallback):
            got: JSONObject = await fallback(params)
            return got
        raise JSONRPCError(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}")

    async def roots(self, server: str, fallback: object) -> list[JSONObject]:
        """``server``'s ``roots/list``: the calling client's roots, else those of the
        one legacy client upstream that has roots, else ``fallback``'s."""
        answered = await self._through_call(server, {"method": "roots/list"})
        if answered is None:
            answered = await self._from_upstream()
        if answered is not None:
            roots = answered.get("roots")
            return [r for r in roots if isinstance(r, dict)] if isinstance(roots, list) else []
        if isinstance(fallback, list):
            return list(fallback)
        if callable(fallback):
            got: list[JSONObject] = await fallback()
            return got
        raise JSONRPCError(ErrorCode.METHOD_NOT_FOUND, "Method not found: roots/list")

    async def _through_call(self, server: str, ask: JSONObject) -> JSONObject | None:
        """The answer of the upstream client whose call ``server`` serves, or ``None``
        when no call is known or its client cannot answer."""
        record = self._current.get()
        in_task = record is not None
        if record is None:
            record = self._call_of(server)
        if record is None:
            return None
        key = f"ask-{record.asks}"
        record.asks += 1
        try:
            answers = await record.ctx.ask_all({key: ask})
            return answers[key]
        except CapabilityMissing:
            return None
        except InputRequired as exc:
            if in_task:
                raise  # out through the call, as an InputRequiredResult upstream
            record.missing.update(exc.requests)
            record.scope.cancel()
            raise JSONRPCError(
                ErrorCode.INTERNAL_ERROR,
                "the client asks its user first; the call will be made again with the answer",
            ) from None

    def _call_of(self, server: str) -> _Call | None:
        """The call a legacy server's request or log message outside the call's task
        is about: the one whose request it came with (``ORIGIN``), else the only
        call in flight to ``server``."""
        calls = self._calls.get(server, [])
        origin = ORIGIN.get()
        if origin is not None:  # it came during one of our requests: that one's call
            during = origin.get(self._current)
            return during if during in calls else None
        return calls[0] if len(calls) == 1 else None

    async def _from_upstream(self) -> JSONObject | None:
        """``roots/list`` asked of the one legacy client upstream that declared roots.

        Over HTTP such a request travels on the session's GET stream, which a
        client opens once initialized: until it has, the ask waits for it."""
        with anyio.move_on_after(ROOTS_TIMEOUT):
            while True:
                sessions = [s for up in list(self._upstreams) for s in up.roots_sessions()]
                if len(sessions) != 1:
                    return None
                if getattr(sessions[0].transport, "can_ask", True):
                    try:
                        return await sessions[0].request("roots/list", timeout=ROOTS_TIMEOUT)
                    except (MCPWireError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                        return None  # it failed or went away: as if there were none
                await anyio.sleep(_POLL)
        return None


class Upstream(Protocol):
    """What ``AskRelay.attach`` takes: a server whose clients the relay serves."""

    def roots_sessions(self) -> list[Session]:
        """The sessions of the legacy clients connected that declared roots."""
        ...

    async def notify_resource_updated(self, uri: str) -> None:
        """Tell the clients subscribed to ``uri`` that it changed."""
        ...

    async def log(self, level: str, data: JSONValue, *, logger: str | None = None) -> int:
        """Send a log message to the clients whose level admits it; how many were told."""
        ...
