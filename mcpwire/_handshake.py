"""How a client learns the server's era: probe, handshake, and the era cache.

``connect`` follows the dual-era clauses (``basic/versioning.mdx`` and the
stdio transport page): in ``auto`` mode send ``server/discover`` with the
modern envelope first. A ``DiscoverResult`` naming a modern version we speak,
or a -32022 that names one, means modern; any other answer, or silence until
the probe timeout, falls back to ``initialize`` on the same connection. The
fallback never keys on one particular error code, because legacy servers
answer an unknown method with -32601, -32602, or nothing at all.

What was learned is remembered per process and target (``Client.era_key``),
so a legacy server is probed once, not on every connection.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING

from ._errors import JSONRPCError, MCPWireError
from ._versions import (
    LATEST_LEGACY_VERSION,
    LATEST_VERSION,
    LEGACY_VERSIONS,
    META_SERVER_INFO,
    MODERN_VERSIONS,
    Era,
)
from .sansio._json import JSONObject, JSONValue
from .sansio._messages import ErrorCode

if TYPE_CHECKING:
    from ._client import Client

__all__ = ("DEFAULT_PROBE_TIMEOUT", "connect")

#: Seconds the era probe waits before concluding the server is legacy.
DEFAULT_PROBE_TIMEOUT = 10.0
#: Era learned per target in this process (bounded; oldest entries dropped first).
_ERA_CACHE: dict[Hashable, Era] = {}
_ERA_CACHE_MAX = 256


async def connect(client: Client) -> None:
    mode = client.mode
    if mode in MODERN_VERSIONS:
        client.era, client.protocol_version = "modern", mode
        await _discover(client, mode, timeout=client.request_timeout)
        return
    if mode == "auto":
        known = _ERA_CACHE.get(client.era_key) if client.era_key is not None else None
        if known != "legacy" and await _discover(
            client, LATEST_VERSION, timeout=client.probe_timeout
        ):
            _remember(client, "modern")
            return
    await _initialize(client, mode if mode in LEGACY_VERSIONS else LATEST_LEGACY_VERSION)
    if mode == "auto":
        _remember(client, "legacy")


def _remember(client: Client, era: Era) -> None:
    if client.era_key is None:
        return
    if len(_ERA_CACHE) >= _ERA_CACHE_MAX:
        _ERA_CACHE.pop(next(iter(_ERA_CACHE)))
    _ERA_CACHE[client.era_key] = era


async def _discover(client: Client, version: str, *, timeout: float, retried: bool = False) -> bool:
    """Try ``server/discover``; True when the server speaks a modern version we speak.

    A -32022 naming a modern version we speak is answered by one retry with
    that version (even the one just tried: the client SHOULD retry with a
    version from ``data.supported``); it never leads to ``initialize``.
    """
    params: JSONObject = {"_meta": client._envelope(version, with_level=False)}
    try:
        result = await client.session.request("server/discover", params, timeout=timeout)
    except JSONRPCError as exc:
        supported = exc.data.get("supported") if isinstance(exc.data, dict) else None
        if exc.code == ErrorCode.UNSUPPORTED_PROTOCOL_VERSION and isinstance(supported, list):
            mutual = [v for v in MODERN_VERSIONS if v in supported]
            if mutual and not retried:
                return await _discover(client, mutual[-1], timeout=timeout, retried=True)
        return False
    except TimeoutError:
        return False
    versions: JSONValue = result.get("supportedVersions")
    offered = [v for v in versions if isinstance(v, str)] if isinstance(versions, list) else []
    mutual = [v for v in MODERN_VERSIONS if v in offered]
    if not mutual:
        return False
    client.era, client.protocol_version = "modern", mutual[-1]
    client.supported_versions = offered
    _learn(client, result.get("capabilities"), result.get("instructions"))
    meta = result.get("_meta")
    info = meta.get(META_SERVER_INFO) if isinstance(meta, dict) else None
    client.server_info = info if isinstance(info, dict) else {}
    return True


async def _initialize(client: Client, version: str) -> None:
    params: JSONObject = {
        "protocolVersion": version,
        "capabilities": client._capabilities(version),
        "clientInfo": client.client_info,
    }
    result = await client.session.request("initialize", params)
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


def _learn(client: Client, capabilities: JSONValue, instructions: JSONValue) -> None:
    client.server_capabilities = capabilities if isinstance(capabilities, dict) else {}
    client.instructions = instructions if isinstance(instructions, str) else None
