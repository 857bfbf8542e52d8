"""Applying a new config to a running hub, server by server.

The new config has been validated in full before this runs (a reload, or a
switch of profile, that fails validation never gets here). Each server is
compared with the one in force: a removed server is stopped; an added one is
started; one whose connection changed (``ServerConfig.connection_key``) or
that was enabled or disabled is restarted; one whose policy alone changed
(timeouts, approvals, tool filters, a profile's narrowing) takes the new
config in place and has its tools registered again; an unchanged one is left
alone. The servers then follow the new config's order, also a server added in
place of another (a rename keeps its place).

The hub's watcher calls ``on_paths_changed``: a changed config file is
reloaded, and a server one of whose ``watchPaths`` changed is restarted.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from ._hub_errors import HubError
from ._hub_events import ConfigReloaded

if TYPE_CHECKING:
    from ._hub import Hub
    from ._hub_config import ServerConfig

__all__ = ("apply_config", "on_paths_changed", "watched_paths")

logger = logging.getLogger("mcpwire.hub")


async def apply_config(hub: Hub, new: dict[str, ServerConfig]) -> ConfigReloaded:
    """Bring ``hub``'s supervisors in line with ``new``; returns what changed."""
    old = hub._configs
    removed = [n for n in old if n not in new]
    added = [n for n in new if n not in old]
    restarted: list[str] = []
    updated: list[str] = []
    for name in removed:
        await hub._stop(name)
    for name, config in new.items():
        sup = hub._sups.get(name)
        if sup is None:
            hub._start(config)
        elif config == old.get(name):
            sup.config = config  # same settings; the origin may have moved
        elif sup.update(config):
            restarted.append(name)
        else:
            updated.append(name)
            hub._discovered(sup)
    hub._sups = {name: hub._sups[name] for name in new}
    hub._configs = new
    hub._watcher.set_paths(watched_paths(hub))
    return ConfigReloaded(
        files=tuple(hub.config_files),
        added=tuple(added),
        removed=tuple(removed),
        restarted=tuple(restarted),
        updated=tuple(updated),
        warnings=tuple(map(str, hub.warnings)),
        profile=hub.profile,
    )


def watched_paths(hub: Hub) -> list[str]:
    """The config files and every server's ``watchPaths``."""
    paths = list(hub.config_files)
    for config in hub._configs.values():
        paths.extend(config.watch_paths)
    return paths


async def on_paths_changed(hub: Hub, paths: set[str]) -> None:
    if paths & set(hub.config_files):
        try:
            await hub.reload()
        except HubError:
            pass  # ConfigRejected was published (the last good config stays), or closing
    for name, config in list(hub._configs.items()):
        sup = hub._sups.get(name)
        watched = _absolute(config.watch_paths)
        if sup is not None and watched & paths and not config.disabled:
            logger.info("restarting %r: %s changed", name, ", ".join(sorted(watched & paths)))
            sup.restart_soon()


def _absolute(paths: tuple[str, ...]) -> set[str]:
    return {os.path.abspath(p) for p in paths}
