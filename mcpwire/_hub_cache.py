"""The tool cache: what lazy servers offered, kept across runs (pain point #17).

A hub with many servers pays for starting all of them, though most turns use a
few. A server configured ``lazy`` is not started while the cache holds what it
offered the last time (tools, resources, templates, prompts, instructions): the
hub exposes that, the server is ``idle``, and the first call that needs it
starts it. Once it is ready its listing replaces the cached one, and the cache
is written again. Without an entry (first run, or a changed command, args,
env, URL or headers: anything of ``ServerConfig.connection_key``) the server
starts at once, as any other.

The file is JSON (``{"format": 1, "servers": {name: entry}}``), one per hub,
written whole through a temporary file, an fsync and a rename, so a crash
leaves the old one. Writing is ``flush()``, in a worker thread, so a slow disk
never stalls the event loop; the hub flushes after each new listing and when
it closes, and listings that arrive during a write are written together next.
An entry names a hash of the connection key, never the key: env values and
headers can be secrets. A file that cannot be read (missing, not JSON, of
another format, over ``MAX_FILE_BYTES``) counts as empty: the servers start,
and the next listing writes a good one.
"""

from __future__ import annotations

import hashlib
import logging
import os
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import orjson

from ._files import replace_file
from ._hub_status import Discovery
from ._types import Prompt, Resource, ResourceTemplate, Tool

if TYPE_CHECKING:
    from ._hub_config import ServerConfig

__all__ = ("MAX_FILE_BYTES", "ToolCache")

logger = logging.getLogger("mcpwire.hub")

FORMAT = 1
#: A cache file larger than this is not read.
MAX_FILE_BYTES = 64 * 1024 * 1024


def _key(config: ServerConfig) -> str:
    return hashlib.sha256(repr(config.connection_key()).encode()).hexdigest()


class ToolCache:
    """The cache file at ``path`` (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.path.abspath(os.fspath(path))
        self._servers: dict[str, Any] | None = None
        self._dirty = False
        self._writing: anyio.Lock | None = None

    def get(self, config: ServerConfig) -> Discovery | None:
        """What ``config``'s server offered when last listed with this connection."""
        entry = self._load().get(config.name)
        if not isinstance(entry, dict) or entry.get("key") != _key(config):
            return None
        try:
            return Discovery(
                tools=[Tool.from_json(t) for t in entry["tools"]],
                resources=[Resource.from_json(r) for r in entry["resources"]],
                templates=[ResourceTemplate.from_json(t) for t in entry["templates"]],
                prompts=[Prompt.from_json(p) for p in entry["prompts"]],
                instructions=entry["instructions"],
                server_info=dict(entry["serverInfo"]),
                protocol_version=str(entry["protocolVersion"]),
            )
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            logger.warning(
                "tool cache %s: the entry of %r is unusable: %s", self.path, config.name, exc
            )
            return None

    def put(self, config: ServerConfig, found: Discovery) -> None:
        """Keep ``found`` for ``config``'s server (``flush`` writes the file)."""
        servers = self._load()
        servers[config.name] = {
            "key": _key(config),
            # As the server sent them (a listing is always parsed from JSON).
            "tools": [t.raw for t in found.tools],
            "resources": [r.raw for r in found.resources],
            "templates": [t.raw for t in found.templates],
            "prompts": [p.raw for p in found.prompts],
            "instructions": found.instructions,
            "serverInfo": found.server_info,
            "protocolVersion": found.protocol_version,
        }
        self._dirty = True

    async def flush(self) -> None:
        """Write the file, if anything was put since the last write."""
        if self._writing is None:
            self._writing = anyio.Lock()
        async with self._writing:
            if not self._dirty:
                return
            self._dirty = False
            data = orjson.dumps({"format": FORMAT, "servers": self._load()})
            try:
                await anyio.to_thread.run_sync(replace_file, self.path, data)
            except OSError as exc:
                logger.warning("tool cache %s could not be written: %s", self.path, exc)

    def _load(self) -> dict[str, Any]:
        if self._servers is None:
            self._servers = {}
            try:
                if os.path.getsize(self.path) <= MAX_FILE_BYTES:
                    with open(self.path, "rb") as f:
                        document = orjson.loads(f.read())
                    if isinstance(document, dict) and document.get("format") == FORMAT:
                        servers = document.get("servers")
                        self._servers = servers if isinstance(servers, dict) else {}
            except FileNotFoundError:
                pass
            except (OSError, ValueError) as exc:
                logger.warning(
                    "tool cache %s is not readable (%s); starting afresh", self.path, exc
                )
        return self._servers
