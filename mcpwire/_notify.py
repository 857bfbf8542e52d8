"""What a ``Server`` sends to all its connections at once: list changes, resource
updates, task status, and server-wide log messages.

A legacy connection hears a notification on its own once initialized (over
HTTP: on its standalone GET stream); a 2026-07-28 client hears only on the
``subscriptions/listen`` streams it opened, each notification tagged with its
stream's ``subscriptionId`` and sent as part of that request. A server-wide log
message goes to legacy connections alone: a 2026-07-28 server MUST NOT log
outside a request that asked for logs (2026-07-28 ``server/utilities/logging``).

A connection that fails while being told is going away (its ``serve`` drops
it); the others are told all the same.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ._methods import META_SUBSCRIPTION_ID
from ._versions import LOG_LEVELS
from .sansio._json import JSONObject, JSONValue
from .sansio._messages import RequestId

if TYPE_CHECKING:
    from ._server import Connection, Listener
    from ._task_runs import Task

__all__ = ("broadcast", "log", "notify_task")


async def broadcast(
    connections: Iterable[Connection], method: str, kind: str, uri: str | None = None
) -> None:
    """``method`` (a list change of ``kind``, or ``"updated"`` for ``uri``) to each
    connection and listen stream that wants it."""
    for conn in list(connections):
        session = conn.session
        if session is None or session.closed:
            continue
        # (params, the request the notification belongs to): legacy change
        # notifications stand alone; a listen stream's belong to its request.
        targets: list[tuple[JSONObject | None, RequestId | None]] = []
        if conn.initialized and (kind != "updated" or uri in conn.subscriptions):
            targets.append(({"uri": uri} if uri is not None else None, None))
        for listener in list(conn.listeners.values()):
            if _listener_wants(listener, kind, uri):
                params: JSONObject = {"_meta": {META_SUBSCRIPTION_ID: listener.id}}
                if uri is not None:
                    params["uri"] = uri
                targets.append((params, listener.id))
        for target, related in targets:
            try:
                if related is not None and not await _acknowledged(conn, related):
                    continue  # its listen ended meanwhile
                await session.notify(method, target, related=related)
            except Exception:  # the connection is going away; it will be dropped
                break


async def notify_task(connections: Iterable[Connection], task: Task) -> None:
    """``notifications/tasks`` (the DetailedTask) to the listen streams that asked for it."""
    for conn in list(connections):
        session = conn.session
        if session is None or session.closed:
            continue
        for listener in list(conn.listeners.values()):
            if task.task_id not in listener.task_ids:
                continue
            params = task.to_json(detailed=True)
            params["_meta"] = {META_SUBSCRIPTION_ID: listener.id}
            try:
                if not await _acknowledged(conn, listener.id):
                    continue  # its listen ended meanwhile
                await session.notify("notifications/tasks", params, related=listener.id)
            except Exception:  # the connection is going away; it will be dropped
                break


async def log(
    connections: Iterable[Connection], level: str, data: JSONValue, logger: str | None
) -> int:
    """A ``notifications/message`` to each initialized legacy connection whose level
    (``logging/setLevel``) admits ``level``; how many were told."""
    if level not in LOG_LEVELS:
        raise ValueError(f"unknown log level {level!r}")
    params: JSONObject = {"level": level, "data": data}
    if logger is not None:
        params["logger"] = logger
    told = 0
    for conn in list(connections):
        session = conn.session
        if session is None or session.closed or not conn.initialized:
            continue
        if not conn.log_admits(level):
            continue
        try:
            await session.notify("notifications/message", params)
        except Exception:  # the connection is going away; it will be dropped
            continue
        told += 1
    return told


async def _acknowledged(conn: Connection, rid: RequestId) -> bool:
    """Wait until the listen stream ``rid`` has been acknowledged (at once, but
    while its acknowledgement is being sent: that MUST come first); False if
    the stream has ended by then."""
    listener = conn.listeners.get(rid)
    ready = listener.acknowledged if listener is not None else None
    if ready is None or ready.is_set():
        return listener is not None
    await ready.wait()
    return conn.listeners.get(rid) is listener


def _listener_wants(listener: Listener, kind: str, uri: str | None) -> bool:
    if kind == "tools":
        return listener.tools
    if kind == "prompts":
        return listener.prompts
    if kind == "resources":
        return listener.resources
    return uri is not None and uri in listener.uris
