"""How a client learns the server's era: probe, handshake, and the era cache.

``connect`` follows the dual-era clauses (``basic/versioning.mdx`` and the
stdio transport page): in ``auto`` mode send ``server/discover`` with the
modern envelope first. A ``DiscoverResult`` naming a modern version we speak,
or a -32022 that names one, means modern; any other answer, or silence until
the probe timeout, falls back to ``initialize`` on the same connection. The
fallback never keys on one particular error code, because legacy servers
answer an unknown method with -32601, -32602, or nothing at all.

What was learned is remembered per process and target (``Client.era_key``),
so a legacy server is probed once, not on every connection. A server can be
upgraded in place, so the memory is not trusted blindly: a legacy verdict
expires after ``ERA_CACHE_TTL`` seconds, and a server remembered as legacy
that refuses ``initialize`` is probed again at once (a modern-only server
answers it with an error), before the refusal is believed.

Also here: the client capabilities a client declares, and the modern
``_meta`` envelope that carries them. The tasks extension (SEP-2663) is
declared under ``extensions`` when ``Client(tasks=True)``, or for one call
(``declaring_tasks``: ``call_tool(task=...)`` and the ``tasks/*`` methods,
which the server refuses with -32021 to requests that do not declare it).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Hashable
from contextvars import ContextVar
from typing import TYPE_CHECKING

from ._errors import JSONRPCError, MCPWireError
from ._versions import (
    LATEST_LEGACY_VERSION,
    LATEST_VERSION,
    LEGACY_TASKS_VERSION,
    LEGACY_VERSIONS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    MODERN_VERSIONS,
    Era,
    at_least,
    era_of,
)
from .sansio._json import JSONObject, JSONValue
from .sansio._messages import ErrorCode

if TYPE_CHECKING:
    from ._client import Client

__all__ = (
    "DECLARE_TASKS",
    "DEFAULT_PROBE_TIMEOUT",
    "ERA_CACHE_TTL",
    "capabilities",
    "check_client_arguments",
    "connect",
    "declaring_tasks",
    "envelope",
    "tasks_declared",
)

#: Seconds the era probe waits before concluding the server is legacy.
DEFAULT_PROBE_TIMEOUT = 10.0


def check_client_arguments(target: object, mode: str) -> None:
    """``Client(target, mode=...)``'s arguments, checked when it is made, not when
    it connects (a string target would otherwise fail deep in the first send)."""
    if mode not in ("auto", "legacy") and mode not in LEGACY_VERSIONS + MODERN_VERSIONS:
        raise ValueError(f"mode must be 'auto', 'legacy' or a protocol version, not {mode!r}")
    server = sys.modules.get("mcpwire._server")  # no Server exists unless it was imported
    is_server = server is not None and isinstance(target, server.Server)
    if isinstance(target, (str, bytes, os.PathLike)) or not (
        is_server or hasattr(target, "receive") or callable(target)
    ):
        raise TypeError(
            "Client() takes a Transport, a Server, or a function that makes a transport, "
            f"not {type(target).__name__}; for a URL use Client.http(url), for a command "
            "Client.stdio(command, args)"
        )


#: Era learned per target in this process, with when it was learned (bounded;
#: oldest entries dropped first).
_ERA_CACHE: dict[Hashable, tuple[Era, float]] = {}
#: Seconds a remembered legacy verdict spares the probe; after that the server
#: is probed again, in case it has learned the modern era meanwhile.
ERA_CACHE_TTL = 600.0
_ERA_CACHE_MAX = 256
#: This call's override of ``Client.tasks`` (``None``: the client's setting).
DECLARE_TASKS: ContextVar[bool | None] = ContextVar("mcpwire_declare_tasks", default=None)


class declaring_tasks:
    """Within the block, modern envelopes declare the tasks extension iff ``declare``.

    A class rather than a generator context manager: it wraps every ``call_tool``.
    """

    __slots__ = ("_declare", "_token")

    def __init__(self, declare: bool | None) -> None:
        self._declare = declare

    def __enter__(self) -> None:
        self._token = DECLARE_TASKS.set(self._declare)

    def __exit__(self, *exc_info: object) -> None:
        DECLARE_TASKS.reset(self._token)


def tasks_declared(client: Client) -> bool:
    """Whether requests made now declare the tasks extension."""
    override = DECLARE_TASKS.get()
    return client.tasks if override is None else override


def capabilities(client: Client, version: str) -> JSONObject:
    """What the client's callbacks and options let it declare, shaped as ``version`` defines."""
    caps: JSONObject = {}
    if client.sampling is not None:
        caps["sampling"] = {}
    if client.elicitation is not None and at_least(version, "2025-06-18"):
        # Elicitation arrived in 2025-06-18; its modes (and URL mode) in 2025-11-25.
        modes: JSONObject = {"form": {}, "url": {}}
        caps["elicitation"] = modes if at_least(version, "2025-11-25") else {}
    if client.roots is not None:
        caps["roots"] = {"listChanged": True} if era_of(version) == "legacy" else {}
    if era_of(version) == "legacy" and client.tasks and at_least(version, LEGACY_TASKS_VERSION):
        # 2025-11-25: the server may make tasks of its asks to us (_client_task_host).
        asks: JSONObject = {}
        if client.sampling is not None:
            asks["sampling"] = {"createMessage": {}}
        if client.elicitation is not None:
            asks["elicitation"] = {"create": {}}
        if asks:
            caps["tasks"] = {"list": {}, "cancel": {}, "requests": asks}
    if era_of(version) == "modern" and tasks_declared(client):
        # SEP-2663 "Capability Negotiation": extensions keyed by id, settings object.
        # The id lives with the server side of the extension, loaded only when a
        # client declares it (``envelope`` computes this once per configuration).
        from ._tasks import TASKS_EXTENSION

        caps["extensions"] = {TASKS_EXTENSION: {}}
    return caps


def envelope(client: Client, version: str, *, with_level: bool = True) -> JSONObject:
    """The modern ``_meta`` envelope (a fresh dict; the parts are computed once)."""
    level = client.log_level if with_level else None
    override = DECLARE_TASKS.get()  # tasks_declared(client), inline
    # Everything the envelope depends on (callbacks decide the capabilities).
    key = (
        version,
        level,
        id(client.client_info),
        client.sampling is None,
        client.elicitation is None,
        client.roots is None,
        client.tasks if override is None else override,
    )
    cache = client._envelopes
    cached = cache.get(key)
    if cached is None:
        cached = {
            META_PROTOCOL_VERSION: version,
            META_CLIENT_CAPABILITIES: capabilities(client, version),
            META_CLIENT_INFO: client.client_info,
        }
        if level is not None:
            cached[META_LOG_LEVEL] = level
        if len(cache) > 16:
            cache.clear()
        cache[key] = cached
    return dict(cached)


async def connect(client: Client) -> None:
    mode = client.mode
    if mode in MODERN_VERSIONS:
        client.era, client.protocol_version = "modern", mode
        # A pinned version needs no probe: discover is asked for the capabilities.
        # An error answer (or no version in common) is kept in ``discover_error``
        # and the pinned version used, as the reference SDK pins without asking;
        # no answer at all is no peer, and fails the connection.
        await _discover(client, mode, timeout=client.request_timeout, pinned=True)
        return
    if mode == "auto":
        known = _known_legacy(client)
        if not known and await _discover(client, LATEST_VERSION, timeout=client.probe_timeout):
            _remember(client, "modern")
            return
        try:
            await _initialize(client, LATEST_LEGACY_VERSION, fallback=True)
        except JSONRPCError:
            # Remembered as legacy but refusing the legacy handshake: it may have
            # been replaced by a modern-only server. Probe before believing it.
            if not known:
                raise
            _ERA_CACHE.pop(client.era_key, None)
            if await _discover(client, LATEST_VERSION, timeout=client.probe_timeout):
                _remember(client, "modern")
                return
            raise
        _remember(client, "legacy")
        return
    pinned = mode in LEGACY_VERSIONS
    await _initialize(client, mode if pinned else LATEST_LEGACY_VERSION, fallback=not pinned)


def _known_legacy(client: Client) -> bool:
    """Whether the era cache holds a legacy verdict for this target younger than
    ``ERA_CACHE_TTL``."""
    known = _ERA_CACHE.get(client.era_key) if client.era_key is not None else None
    return (
        known is not None and known[0] == "legacy" and (time.monotonic() - known[1] < ERA_CACHE_TTL)
    )


def _remember(client: Client, era: Era) -> None:
    if client.era_key is None:
        return
    _ERA_CACHE.pop(client.era_key, None)  # re-learned: now the newest entry
    if len(_ERA_CACHE) >= _ERA_CACHE_MAX:
        _ERA_CACHE.pop(next(iter(_ERA_CACHE)))
    _ERA_CACHE[client.era_key] = (era, time.monotonic())


async def _discover(
    client: Client, version: str, *, timeout: float, retried: bool = False, pinned: bool = False
) -> bool:
    """Try ``server/discover``; True when the server speaks a modern version we speak.

    A -32022 naming a modern version we speak is answered by one retry with
    that version (even the one just tried: the client SHOULD retry with a
    version from ``data.supported``); it never leads to ``initialize``.
    ``pinned``: a timeout raises, and an error answer or no version in common is
    kept in ``client.discover_error``.
    """
    params: JSONObject = {"_meta": client._envelope(version, with_level=False)}
    try:
        result = await client.session.request("server/discover", params, timeout=timeout)
    except JSONRPCError as exc:
        listed = _supported(exc, MODERN_VERSIONS)
        if exc.code == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION and listed and not retried:
            again = _discover(client, listed[-1], timeout=timeout, retried=True, pinned=pinned)
            return await again
        if pinned:
            client.discover_error = exc
        return False
    except TimeoutError:
        if pinned:
            raise
        return False
    versions: JSONValue = result.get("supportedVersions")
    offered = [v for v in versions if isinstance(v, str)] if isinstance(versions, list) else []
    mutual = _ours(MODERN_VERSIONS, offered)
    if not mutual:
        if pinned:
            client.discover_error = MCPWireError(
                f"the server speaks none of our modern versions ({', '.join(MODERN_VERSIONS)}): "
                f"server/discover offered {offered}"
            )
        return False
    client.era, client.protocol_version = "modern", mutual[-1]
    client.supported_versions = offered
    _learn(client, result.get("capabilities"), result.get("instructions"))
    meta = result.get("_meta")
    info = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
    client.server_info = info if isinstance(info, dict) else {}
    return True


async def _initialize(client: Client, version: str, *, fallback: bool) -> None:
    """The legacy handshake, offering ``version``.

    A server SHOULD answer a version it does not speak with one it does, but
    some refuse ``initialize`` instead (pain point #22). When the refusal lists
    the versions the server speaks in ``data.supported`` (the lifecycle page's
    example: -32602, ``{"supported": [...], "requested": ...}``; any code is
    taken), ``fallback`` offers the newest of them that we speak, once. A
    pinned version never falls back.
    """
    params: JSONObject = {
        "protocolVersion": version,
        "capabilities": client._capabilities(version),
        "clientInfo": client.client_info,
    }
    try:
        result = await client.session.request("initialize", params)
    except JSONRPCError as exc:
        listed = [v for v in _supported(exc, LEGACY_VERSIONS) if v != version]
        if not (fallback and listed):
            raise
        await _initialize(client, listed[-1], fallback=False)
        return
    agreed = result.get("protocolVersion")
    if not isinstance(agreed, str) or agreed not in LEGACY_VERSIONS:
        raise MCPWireError(
            f"server answered initialize with unsupported protocol version {agreed!r}"
        )
    client.era, client.protocol_version = "legacy", agreed
    client.supported_versions = [agreed]
    _learn(client, result.get("capabilities"), result.get("instructions"))
    info = result.get("serverInfo")
    client.server_info = info if isinstance(info, dict) else {}
    client.session.allow_batches = agreed == "2025-03-26"
    await client.session.notify("notifications/initialized")


def _ours(ours: tuple[str, ...], listed: object) -> list[str]:
    """The versions of ``ours`` (oldest first) that ``listed`` names."""
    return [v for v in ours if v in listed] if isinstance(listed, list) else []


def _supported(exc: JSONRPCError, ours: tuple[str, ...]) -> list[str]:
    """Our versions among those an error lists in ``data.supported`` (a version
    refusal: -32022 for ``server/discover``, the lifecycle page's example for
    ``initialize``)."""
    return _ours(ours, exc.data.get("supported") if isinstance(exc.data, dict) else None)


def _learn(client: Client, capabilities: JSONValue, instructions: JSONValue) -> None:
    client.server_capabilities = capabilities if isinstance(capabilities, dict) else {}
    client.instructions = instructions if isinstance(instructions, str) else None
