"""Reading the config in force, and applying a new one to a running hub, server by server.

``load_servers`` reads the config files (``ConfigError`` for a bad one), puts
the servers given in code over them, and applies the named profile. Two
servers whose exposed names could not be told apart before they list their
tools (``name_overlap``: ``my.server`` and ``my server`` both become
``my_server``) make the config an error, naming both, where each is defined
and the sanitized form: a call could otherwise wait for, or be refused on
behalf of, the wrong one.

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

from ._hub_config import load_configs
from ._hub_errors import ConfigError, ConfigIssue, HubError
from ._hub_events import ConfigReloaded
from ._hub_names import name_overlap
from ._hub_profiles import apply_profile, check_profiles, unknown_profile

if TYPE_CHECKING:
    from ._hub import Hub
    from ._hub_config import ServerConfig

__all__ = ("apply_config", "load_servers", "on_paths_changed", "watched_paths")

logger = logging.getLogger("mcpwire.hub")


def load_servers(hub: Hub, profile: str | None) -> dict[str, ServerConfig]:
    """The servers of ``hub``'s config files and code, as ``profile`` runs them; sets
    the hub's ``warnings`` and ``profiles`` from the files."""
    loaded = load_configs(hub.config_files, environ=hub.environ)
    servers = dict(loaded.servers)
    for config in hub.explicit_servers:
        servers.pop(config.name, None)
        servers[config.name] = config
    chosen = None
    if profile is not None:
        chosen = loaded.profiles.get(profile)
        if chosen is None:
            raise ConfigError([unknown_profile(profile, loaded.profiles, hub.config_files)])
    overlaps = _overlaps(hub, list(servers.values()))
    if overlaps:
        raise ConfigError(overlaps)
    hub.warnings = list(loaded.warnings) + check_profiles(servers, loaded.profiles)
    hub.profiles = dict(loaded.profiles)
    for issue in hub.warnings:
        logger.warning("%s", issue)
    return apply_profile(servers, chosen)


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


def _overlaps(hub: Hub, servers: list[ServerConfig]) -> list[ConfigIssue]:
    """A problem for each server whose exposed names overlap an earlier one's
    (servers whose names are refused on their own are left to that refusal)."""
    named = [c for c in servers if hub._registry.check_server_name(c.name) is None]
    issues = []
    for i, later in enumerate(named):
        for earlier in named[:i]:
            why = name_overlap(earlier.name, later.name, hub.separator, hub.rule)
            if why is not None:
                file, _, path = later.origin.partition(": ")
                message = (
                    f"servers {earlier.name!r} ({earlier.origin}) and {later.name!r} {why} "
                    f"(name rule {hub.rule.pattern}), so a tool name could route to "
                    "either; rename one of them"
                )
                issues.append(ConfigIssue(file, path or "$", message))
    return issues


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
            sup.restart_soon("restarted (a watched path changed)")


def _absolute(paths: tuple[str, ...]) -> set[str]:
    return {os.path.abspath(p) for p in paths}
