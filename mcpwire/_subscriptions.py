"""Subscription requests: legacy ``resources/subscribe`` / ``resources/unsubscribe``
and the 2026-07-28 ``subscriptions/listen``.

A legacy connection keeps the set of URIs it subscribed to; a listen request
stays open as a stream until the server stops (``Connection.server_stopping``),
first acknowledging what it honours (``notifications/subscriptions/acknowledged``),
and ends with its ``subscriptionId`` result. ``_notify`` sends what each wants.
Both are bounded per connection or request (``MAX_SUBSCRIPTIONS`` URIs, each at
most ``MAX_SUBSCRIBED_URI`` characters).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from . import _tasks
from ._params import invalid_params
from ._versions import META_SUBSCRIPTION_ID
from .sansio._json import JSONObject

if TYPE_CHECKING:
    from ._methods import Call

__all__ = ("MAX_SUBSCRIBED_URI", "MAX_SUBSCRIPTIONS", "listen", "listen_uris", "subscribe")


#: Subscriptions one connection may hold, and the longest URI one may name: a
#: client cannot make the server keep more than about 8 MiB for it this way.
MAX_SUBSCRIPTIONS = 1000
MAX_SUBSCRIBED_URI = 8192


async def subscribe(call: Call) -> JSONObject:
    uri = call.params.get("uri")
    if not isinstance(uri, str):
        raise invalid_params("uri must be a string")
    subscriptions = call.conn.subscriptions
    if call.request.method == "resources/subscribe":
        if uri not in subscriptions:
            if len(uri) > MAX_SUBSCRIBED_URI:
                raise invalid_params(f"uri is longer than {MAX_SUBSCRIBED_URI} characters")
            if len(subscriptions) >= MAX_SUBSCRIPTIONS:
                raise invalid_params(
                    f"this connection already holds {MAX_SUBSCRIPTIONS} subscriptions, "
                    "the most it may: unsubscribe from one first"
                )
        subscriptions.add(uri)
    else:
        subscriptions.discard(uri)
    return {}


def listen_uris(params: JSONObject) -> list[str] | None:
    """The resource URIs a ``subscriptions/listen`` names (``None``: no list)."""
    wanted = params.get("notifications")
    uris = wanted.get("resourceSubscriptions") if isinstance(wanted, dict) else None
    return [u for u in uris if isinstance(u, str)] if isinstance(uris, list) else None


async def listen(call: Call) -> JSONObject:
    from ._server import Listener

    wanted = call.params.get("notifications") or {}
    if not isinstance(wanted, dict):
        raise invalid_params("subscriptions/listen: notifications must be an object")
    caps = call.server.capabilities()
    honored: JSONObject = {}
    for flag, cap in (
        ("toolsListChanged", "tools"),
        ("promptsListChanged", "prompts"),
        ("resourcesListChanged", "resources"),
    ):
        if wanted.get(flag) is True and cap in caps:
            honored[flag] = True
    kept = listen_uris(call.params)
    if kept is not None and "resources" in caps:
        if len(kept) > MAX_SUBSCRIPTIONS or any(len(u) > MAX_SUBSCRIBED_URI for u in kept):
            raise invalid_params(
                f"resourceSubscriptions: at most {MAX_SUBSCRIPTIONS} URIs, "
                f"each at most {MAX_SUBSCRIBED_URI} characters"
            )
        if kept:
            honored["resourceSubscriptions"] = list(kept)
    task_ids = _tasks.listen_task_ids(call, wanted) if call.server.offers_tasks else []
    if task_ids:
        honored["taskIds"] = list(task_ids)
    rid = call.request.id
    acknowledged = anyio.Event()
    listener = Listener(
        rid,
        tools="toolsListChanged" in honored,
        prompts="promptsListChanged" in honored,
        resources="resourcesListChanged" in honored,
        uris=frozenset(
            u
            for u in honored.get("resourceSubscriptions", [])  # type: ignore[union-attr]
            if isinstance(u, str)
        ),
        task_ids=frozenset(task_ids),
        acknowledged=acknowledged,
    )
    session = call.rctx.session
    # Listening starts before the acknowledgement is sent, so that nothing
    # published while it is on its way is lost; the acknowledgement MUST be the
    # first message of the subscription, so what is published meanwhile waits
    # for it (``_notify``).
    call.conn.listeners[rid] = listener
    try:
        try:
            await session.notify(
                "notifications/subscriptions/acknowledged",
                {"_meta": {META_SUBSCRIPTION_ID: rid}, "notifications": honored},
                related=rid,
            )
        finally:
            acknowledged.set()
        await call.conn.server_stopping(rid)
    finally:
        call.conn.listeners.pop(rid, None)
    return {"_meta": {META_SUBSCRIPTION_ID: rid}}
