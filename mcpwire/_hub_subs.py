"""Resource subscriptions of the clients upstream of ``HubServer``, held at the
servers behind the hub (``AskRelay.subscriptions``).

Theory of operation
-------------------
A client of ``HubServer`` subscribes to a resource with a legacy
``resources/subscribe``, or names it in a 2026-07-28 ``subscriptions/listen``.
``HubServer`` tells ``want()`` the URIs its clients hold, after every change;
the hub then holds one subscription per URI, however many clients want it, at
the server that lists the resource (the first, as ``HubServer`` exposes it),
else at the one whose resource template matches it, in that server's era:

* a legacy server that offers subscriptions gets ``resources/subscribe`` (and
  ``resources/unsubscribe`` once no client wants the URI);
* a 2026-07-28 server gets a ``subscriptions/listen`` naming the URIs newly
  held at it (``_listen_again``). A listen cannot be changed, only replaced,
  and replacing it means a while with both open (the server drops the old one
  when it gets to it) or with neither (updates lost): so the listens open at a
  server name disjoint sets of URIs, and each update comes once. A listen ends
  once nothing it names is held (while it lingers at the server, the updates
  it still brings are of URIs no longer held, which the relay drops); one that
  names some URI still held stays open.

The server's ``notifications/resources/updated`` then reaches the hub's client
for it, and ``AskRelay`` passes those of a held URI to every ``HubServer``,
which sends them to the clients subscribed (``Server.notify_resource_updated``).

A new connection has no subscriptions: when a server is ready again (after a
restart, a crash, an idle stop), or a 2026-07-28 server's listen ended while
its connection lives (its streams do not resume: the server behind the URL
restarted, a proxy cut it), everything held at it is subscribed anew, and
each of those URIs is then reported updated to its subscribers (``updated``):
what changed while no connection listened went unheard, so they read it again. A
URI no server offers yet is held at none, and placed when a server that lists
it (or a template matching it) comes up or starts listing it (the hub's
``ResourcesChanged``, after a resources list change).
A legacy ``resources/subscribe`` to a URI whose server is connected and
offers no subscriptions is refused at once (``refusal``, -32602); a
2026-07-28 listen naming it is acknowledged without it (``HubServer``). What a
server refuses later (it was not connected when the client subscribed, or it
answers an error) is logged; the client upstream keeps its subscription, which
then hears nothing.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from ._errors import MCPWireError
from ._hub_connect import Relisten
from ._hub_events import ResourcesChanged, ServerState, ServerStateChanged

if TYPE_CHECKING:
    from ._client import Client
    from ._hub import Hub

__all__ = ("Subscriptions",)

logger = logging.getLogger("mcpwire.hub")

#: Listens open at one server before they are merged into one naming all held
#: there: each is a request the server keeps open, and servers bound how many
#: they serve at once.
MAX_LISTENS = 8


class _Listen:
    """One ``subscriptions/listen`` open at a 2026-07-28 server, naming ``uris``."""

    __slots__ = ("client", "scope", "uris")

    def __init__(self, client: Client, uris: frozenset[str]) -> None:
        self.client = client
        self.uris = uris
        self.scope = anyio.CancelScope()


class Subscriptions:
    """The hub's subscriptions on behalf of its clients upstream (see the module docstring)."""

    def __init__(self, updated: Callable[[str], Awaitable[None]] | None = None) -> None:
        #: Reports a URI updated to the clients upstream subscribed to it.
        self._updated = updated
        #: The URIs each upstream server's clients hold.
        self._wanted: weakref.WeakKeyDictionary[object, frozenset[str]] = (
            weakref.WeakKeyDictionary()
        )
        #: Each URI held, and the server it is held at (``None``: no server offers it).
        self._held: dict[str, str | None] = {}
        #: The open ``subscriptions/listen`` of each 2026-07-28 server (disjoint URIs).
        self._listens: dict[str, list[_Listen]] = {}
        #: The pauses before a server's listens are opened again.
        self._relisten: dict[str, Relisten] = {}
        #: The servers whose listens are to be opened again after a pause.
        self._resuming: set[str] = set()
        self._hub: Hub | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._lock = anyio.Lock()

    def holds(self, uri: str) -> bool:
        """Whether some client upstream is subscribed to ``uri``."""
        return uri in self._held

    def held_at(self, uri: str, server: str) -> bool:
        """Whether ``uri`` is held, and at ``server``: the only server whose updates
        of it count (another's, unasked for or on a listen it still ends, are not)."""
        return self._held.get(uri) == server

    def at(self, server: str) -> list[str]:
        """The URIs held at ``server``."""
        return sorted(u for u, s in self._held.items() if s == server)

    async def run(self, hub: Hub) -> None:
        """Hold subscriptions at ``hub``'s servers until cancelled or the hub closes."""
        self._hub = hub
        async with hub.events() as events, anyio.create_task_group() as tg:
            self._tg = tg
            try:
                async for event in events:
                    if isinstance(event, ServerStateChanged) and event.new is ServerState.READY:
                        await self._place(event.server, again=True)
                    elif isinstance(event, ResourcesChanged):
                        await self._place(event.server, again=False)
            finally:
                self._tg = None
                tg.cancel_scope.cancel()

    async def want(self, upstream: object, uris: Iterable[str]) -> None:
        """``upstream``'s clients now hold ``uris``: subscribe and unsubscribe to match."""
        self._wanted[upstream] = frozenset(uris)
        async with self._lock:
            # Taken under the lock: a later call's wishes are never undone by this one.
            wanted = set[str]().union(*self._wanted.values())
            moved: set[str] = set()
            for uri in [u for u in self._held if u not in wanted]:
                server = self._held.pop(uri)
                if server is not None:
                    await self._change(server, uri, "resources/unsubscribe", moved)
            for uri in sorted(wanted - self._held.keys()):
                server = self._held[uri] = self._owner(uri)
                if server is not None:
                    await self._change(server, uri, "resources/subscribe", moved)
            for server in moved:
                await self._listen_again(server)

    async def _place(self, server: str, *, again: bool) -> None:
        """Place at the server that now offers it what no server held; with
        ``again`` (``server`` has a new connection) subscribe anew all held there,
        then report those updated (nothing listened in between)."""
        async with self._lock:
            gap = self.at(server) if again else []
            todo = [(server, uri) for uri in gap]
            for uri in [u for u, s in self._held.items() if s is None]:
                owner = self._held[uri] = self._owner(uri)
                if owner is not None:
                    todo.append((owner, uri))
            moved: set[str] = set()
            for name, uri in todo:
                await self._change(name, uri, "resources/subscribe", moved)
            for name in moved:
                await self._listen_again(name, renew=again and name == server)
        for uri in gap:
            if self._updated is not None and self.holds(uri):
                await self._updated(uri)

    def refusal(self, uri: str) -> str | None:
        """Why a legacy subscription to ``uri`` cannot be held, if it cannot: the
        server that offers it is connected, legacy, and offers no subscriptions."""
        owner = self._owner(uri)
        client = self._hub.clients().get(owner) if self._hub and owner is not None else None
        if client is None or client.era == "modern" or _offers_subscriptions(client):
            return None
        return f"the server that offers it, {owner!r}, offers no resource subscriptions"

    def _owner(self, uri: str) -> str | None:
        """The server that lists ``uri``, else the one whose template matches it."""
        from ._uritemplate import UriTemplate

        hub = self._hub
        if hub is None:
            return None
        for server, resource in hub.resources():
            if resource.uri == uri:
                return server
        for server, template in hub.resource_templates():
            try:
                if UriTemplate(template.uri_template).match(uri) is not None:
                    return server
            except ValueError:
                continue  # not RFC 6570: HubServer does not expose it either
        return None

    async def _change(self, server: str, uri: str, method: str, moved: set[str]) -> None:
        """Send ``method`` for ``uri`` to a legacy ``server``; a 2026-07-28 one is
        noted in ``moved``, for its listen to be opened again."""
        assert self._hub is not None
        client = self._hub.clients().get(server)
        if client is None:
            return  # subscribed once it is ready
        if client.era == "modern":
            moved.add(server)
            return
        if not _offers_subscriptions(client):
            logger.warning("server %r offers no resource subscriptions: %s not held", server, uri)
            return
        try:
            await client.request(method, {"uri": uri})
        except (MCPWireError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
            logger.warning("server %r: %s %s failed: %s", server, method, uri, exc)

    async def _listen_again(self, server: str, *, renew: bool = False) -> None:
        """Listen at ``server`` for what is held there and no open listen names,
        and end the listens that name nothing held (see the module docstring).

        With ``renew`` (a new connection, or a listen of this one ended), or past
        ``MAX_LISTENS``, one new listen names all held there, and the others end
        once it is acknowledged: an update in between may come twice, never not
        at all. So may one of a URI held again while the listen that named it
        before lingers at the server."""
        held = frozenset(self.at(server))
        client = self._hub.clients().get(server) if self._hub is not None else None
        listens = self._listens.get(server, [])
        keep = [ls for ls in listens if not renew and ls.client is client and ls.uris & held]
        named = frozenset[str]().union(*(ls.uris for ls in keep))
        if held - named and len(keep) >= MAX_LISTENS:
            keep, named = [], frozenset()
        ending = [ls for ls in listens if ls not in keep]
        self._listens[server] = keep
        try:
            if held - named and client is not None and self._tg is not None:
                listen = _Listen(client, held - named)
                keep.append(listen)  # before it starts: it removes itself when it ends
                await self._tg.start(self._listen, server, listen)
        finally:
            for old in ending:
                old.scope.cancel()

    async def _listen(
        self,
        server: str,
        listen: _Listen,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        started = False
        client = listen.client
        relisten = self._relisten.setdefault(server, Relisten())
        with listen.scope:
            try:
                async with client.listen(uris=sorted(listen.uris)) as subscription:
                    task_status.started()
                    started = True
                    if self._listens.get(server) == [listen]:
                        relisten.opened()  # listening at the server starts (again)
                    async for _ in subscription:
                        pass  # the updates reach AskRelay through the client's on_notification
            except (MCPWireError, anyio.BrokenResourceError, anyio.ClosedResourceError) as exc:
                # Ending with the connection is no news: the server is subscribed
                # anew once it is ready again.
                log = logger.debug if client.session.closed else logger.warning
                log("server %r: subscriptions/listen ended: %s", server, exc)
        if not started:
            task_status.started()
        listens = self._listens.get(server, [])
        if listen in listens:
            listens.remove(listen)
            if (
                started
                and not listen.scope.cancel_called
                and not client.session.closed
                and server not in self._resuming
            ):
                # Ended under a live connection (a 2026-07-28 stream does not
                # resume): all opened again, once for however many ended, and
                # what they held reported updated.
                self._resuming.add(server)
                pause, _ = relisten.ended()
                assert self._tg is not None
                self._tg.start_soon(self._resume, server, pause)

    async def _resume(self, server: str, pause: float) -> None:
        try:
            await anyio.sleep(pause)
        finally:
            # Before the listens are opened again: one of those that ends is news.
            self._resuming.discard(server)
        await self._place(server, again=True)


def _offers_subscriptions(client: Client) -> bool:
    """Whether a legacy server declared ``resources.subscribe``."""
    resources = client.server_capabilities.get("resources")
    return isinstance(resources, dict) and resources.get("subscribe") is True
