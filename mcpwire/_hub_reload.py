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
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._hub_events import ConfigReloaded

if TYPE_CHECKING:
    from ._hub import Hub
    from ._hub_config import ServerConfig

__all__ = ("apply_config",)


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
    hub._watcher.set_paths(hub._watched())
    return ConfigReloaded(
        files=tuple(hub.config_files),
        added=tuple(added),
        removed=tuple(removed),
        restarted=tuple(restarted),
        updated=tuple(updated),
        warnings=tuple(map(str, hub.warnings)),
        profile=hub.profile,
    )
