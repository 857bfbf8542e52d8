"""Named profiles: the servers, and the tools of each, that one kind of work uses.

Theory of operation
-------------------
Clients cap how many tools a model may see, and every schema costs tokens
(pain point #10), yet one config file serves many kinds of work. A config
file may name *profiles* at its top level, in any dialect::

    "profiles": {
      "review": ["github", "docs"],
      "coding": {
        "description": "edit and test",
        "servers": {
          "fs": {},
          "github": {"includeTools": ["get_*", "list_*"], "excludeTools": ["*_secret*"]}
        }
      }
    }

A profile lists its servers (a list of names, or an object of names to tool
globs); ``Hub(profile=...)``, ``Hub.use_profile`` and ``mcpwire hub
--profile`` put one in force. Then every server it does not list is disabled
("not in profile 'review'"), and a listed server's tools are narrowed: a tool
must pass the server's own ``includeTools``/``excludeTools`` *and* the
profile's (which follow the same rule: an allowlist wins over a denylist). A
profile only narrows: a server disabled in its config stays disabled, and a
tool the config hides stays hidden. Without a profile in force, every server
runs as configured.

Profiles from several files merge by name (a later file's profile replaces an
earlier one's, with a warning), like servers. A profile naming a server that
no config defines is a warning, not an error: the server may come and go
with the files. Switching profiles is applied like a config reload: servers
that leave the set are stopped, those that join are started, and a server
whose narrowing changed only has its tools re-registered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ._hub_config import ServerConfig
from ._hub_errors import ConfigIssue
from ._hub_expand import json_path

__all__ = (
    "Profile",
    "ProfileServer",
    "apply_profile",
    "check_profiles",
    "parse_profiles",
    "unknown_profile",
)

Report = Callable[[str, str], None]


@dataclass(frozen=True)
class ProfileServer:
    """How a profile narrows one server's tools (globs; ``None``: no allowlist)."""

    include_tools: tuple[str, ...] | None = None
    exclude_tools: tuple[str, ...] = ()


@dataclass(frozen=True)
class Profile:
    """A named set of servers, each with the tools it may expose."""

    name: str
    servers: Mapping[str, ProfileServer] = field(default_factory=dict)
    description: str = ""
    #: Where it was defined (``file: $.profiles.name``); not part of equality.
    origin: str = field(default="<profiles>", compare=False)

    def to_json(self) -> dict[str, object]:
        servers: dict[str, object] = {}
        for name, narrowing in self.servers.items():
            entry: dict[str, object] = {}
            if narrowing.include_tools is not None:
                entry["includeTools"] = list(narrowing.include_tools)
            if narrowing.exclude_tools:
                entry["excludeTools"] = list(narrowing.exclude_tools)
            servers[name] = entry
        out: dict[str, object] = {"servers": servers}
        if self.description:
            out["description"] = self.description
        return out


def parse_profiles(data: object, file: str, error: Report, warn: Report) -> dict[str, Profile]:
    """Read a document's ``profiles`` value (``None``: it has none); problems go to
    ``error`` and ``warn`` as (JSON path, message)."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        error(json_path("profiles"), "must be an object of profiles")
        return {}
    out: dict[str, Profile] = {}
    for name, value in data.items():
        at = json_path("profiles", name)
        if not name:
            error(at, "a profile needs a name")
            continue
        description, listing = "", value
        path: tuple[str, ...] = ("profiles", name)
        if isinstance(value, dict):
            for key in value:
                if key not in ("servers", "description"):
                    warn(json_path("profiles", name, key), f"unknown key {key!r} is ignored")
            description = value.get("description", "")
            if not isinstance(description, str):
                error(json_path("profiles", name, "description"), "must be a string")
                description = ""
            listing, path = value.get("servers"), (*path, "servers")
            if listing is None:
                error(json_path(*path), "a profile lists its servers")
                continue
        servers = _servers(listing, path, error, warn)
        if servers is not None:
            out[name] = Profile(name, servers, description, origin=f"{file}: {at}")
    return out


def _servers(
    listing: object, path: tuple[str, ...], error: Report, warn: Report
) -> dict[str, ProfileServer] | None:
    if isinstance(listing, list):
        names: dict[str, ProfileServer] = {}
        for i, item in enumerate(listing):
            if not isinstance(item, str) or not item:
                error(json_path(*path, i), "must be a server's name")
                return None
            if item in names:
                warn(json_path(*path, i), f"server {item!r} is listed twice")
            names[item] = ProfileServer()
        return names
    if not isinstance(listing, dict):
        error(
            json_path(*path),
            "must be a list of server names, or an object of servers to tool globs",
        )
        return None
    out: dict[str, ProfileServer] = {}
    for server, entry in listing.items():
        where = (*path, server)
        if entry is True or entry is None:
            entry = {}
        if not isinstance(entry, dict):
            error(json_path(*where), "must be an object with includeTools and/or excludeTools")
            return None
        for key in entry:
            if key not in ("includeTools", "excludeTools"):
                warn(json_path(*where, key), f"unknown key {key!r} is ignored")
        include, exclude = entry.get("includeTools"), entry.get("excludeTools", [])
        for key, globs in (("includeTools", include), ("excludeTools", exclude)):
            if globs is not None and not (
                isinstance(globs, list) and all(isinstance(g, str) for g in globs)
            ):
                error(json_path(*where, key), "must be a list of glob strings")
                return None
        out[server] = ProfileServer(
            None if include is None else tuple(include), tuple(exclude or ())
        )
    return out


def apply_profile(
    servers: Mapping[str, ServerConfig], profile: Profile | None
) -> dict[str, ServerConfig]:
    """The servers as ``profile`` runs them (see the module docstring)."""
    if profile is None:
        return dict(servers)
    out: dict[str, ServerConfig] = {}
    for name, config in servers.items():
        narrowing = profile.servers.get(name)
        if narrowing is None:
            if not config.disabled:
                reason = f"not in profile {profile.name!r}"
                config = dataclasses.replace(config, disabled=True, disabled_reason=reason)
        elif narrowing != ProfileServer():
            config = dataclasses.replace(
                config,
                profile_include_tools=narrowing.include_tools,
                profile_exclude_tools=narrowing.exclude_tools,
            )
        out[name] = config
    return out


def unknown_profile(
    name: str, profiles: Mapping[str, Profile], files: Sequence[str]
) -> ConfigIssue:
    """The problem of asking for a profile that no config file defines."""
    known = ", ".join(map(repr, profiles)) or "none"
    message = f"no profile named {name!r} (profiles: {known})"
    return ConfigIssue(", ".join(files) or "<hub>", "$.profiles", message)


def check_profiles(
    servers: Mapping[str, ServerConfig], profiles: Mapping[str, Profile]
) -> list[ConfigIssue]:
    """Warnings for profiles that name servers no config defines."""
    issues = []
    for profile in profiles.values():
        file, _, at = profile.origin.partition(": ")
        for name in profile.servers:
            if name not in servers:
                message = f"profile {profile.name!r} names server {name!r}, which no config defines"
                issues.append(ConfigIssue(file, at or "$", message))
    return issues
