"""A server's connection ended by the hub on purpose, and the calls that cuts off.

Theory of operation
-------------------
The supervisor (``_hub_supervisor``) ends a connection itself in two ways. A
live ``Client`` is never cancelled from outside, so both are cooperative:

* during startup, the watchdog closes the session when the startup deadline
  passes, or when a restart or stop is asked for: the pending requests fail at
  once and the client unwinds normally (no call is in flight then: calls use
  ready servers only);
* once ready, the actor leaves ``async with client`` when a restart is asked
  for (``restart()``, a config change, a changed ``watchPaths`` file), when
  the server is stopped (removed from the config, the hub closed) or disabled,
  or when it went unused for ``idleTimeout``.

A call in flight on a connection left that way fails with ``ConnectionClosed``,
as it must (the session's close is what fails it, and callers catch that). A
bare "the session was closed" would read like a crash, so ``Leaving.leave``
closes the session itself with the reason, and every call pending on it, made
through the hub or directly on ``Hub.clients()``, says it: "server 'x' was
restarted while the call was in flight". ``Leaving`` also remembers which
connections were left (while their ``Client`` lives), so that such a failure
does not count the server as lost.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING

import anyio

from ._errors import MCPWireError

if TYPE_CHECKING:
    from ._client import Client
    from ._hub_supervisor import Supervisor

__all__ = ("Leaving", "watchdog")

#: Seconds between looks at whether an OAuth user step is still in progress.
_AUTHORIZING_POLL = 0.1


class Leaving:
    """Why the hub left each of one server's connections on purpose."""

    def __init__(self, server: str) -> None:
        self.server = server
        #: What the restart or stop asked for last does to the server, as a
        #: participle: ``"restarted"``, ``"stopped (the hub closed)"``.
        self.asked = "restarted"
        self._left: weakref.WeakKeyDictionary[Client, str] = weakref.WeakKeyDictionary()

    async def leave(self, client: Client, why: str) -> None:
        """``client``'s connection is being left on purpose: the server was ``why``.
        Its session closes now, so that every request still pending on it, the
        hub's and any made directly (``Hub.clients()``), fails saying so."""
        self._left[client] = why
        await client.session.close(self._said(why))

    def left(self, client: Client) -> bool:
        """Whether the hub left ``client``'s connection on purpose (then its calls
        fail with the reason ``leave`` closed the session with, and the server is
        not lost)."""
        return client in self._left

    def _said(self, why: str) -> str:
        return f"server {self.server!r} was {why} while the call was in flight"


async def watchdog(sup: Supervisor, client: Client, startup: float) -> None:
    """Close ``client``'s session if the server is not ready in ``startup`` seconds
    (or a restart or stop is asked for first)."""
    with anyio.move_on_after(startup):
        await sup._abort.wait()
    oauth = sup.hub.oauth
    while not sup._ready and not sup._abort.is_set() and oauth.authorizing(sup.config):
        # The user's step of an OAuth flow is not startup time (it has its own
        # bound); once it is over, the rest of the start gets the full time.
        while oauth.authorizing(sup.config) and not sup._abort.is_set():
            await anyio.sleep(_AUTHORIZING_POLL)
        with anyio.move_on_after(startup):
            await sup._abort.wait()
    if sup._ready:
        return
    if not sup._abort.is_set():
        sup._timed_out = True
    while not sup._ready:
        try:
            session = client.session
        except MCPWireError:  # not connected yet: the transport is still opening
            await anyio.sleep(0.01)
            continue
        await session.close()
        return
