"""Parsing one config document in any of the dialects, with precise error paths.

See ``_hub_config`` for the dialects and how each is recognized. Each entry is
read key by key into a ``ServerConfig``; every problem is recorded with the
file, the JSON path and the rule, and all of them are raised together as one
``ConfigError`` once the document has been read through.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._hub_config import (
    DEFAULT_CALL_TIMEOUT,
    LoadedConfig,
    OAuthSettings,
    ServerConfig,
    Transport,
    loopback_redirect,
)
from ._hub_errors import ConfigError, ConfigIssue
from ._hub_expand import Expander, InputVariable, json_path, workspace_of
from ._hub_profiles import parse_profiles

__all__ = ("DIALECTS", "detect_dialect", "parse_config")

DIALECTS = ("auto", "claude", "gemini", "vscode", "connections")
_TIMEOUT_RANGE = (1.0, 3600.0)
_TYPES: dict[str, Transport] = {
    "stdio": "stdio",
    "sse": "sse",
    "http": "http",
    "streamable-http": "http",
    "streamablehttp": "http",
    "streamable_http": "http",
}
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}
_DURATION = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*(ms|s|min|m|h)\s*\Z")
_COMMON = frozenset(
    {
        "type", "command", "args", "env", "inheritEnv", "cwd", "url", "headers", "disabled",
        "timeout", "startupTimeout", "alwaysAllow", "disabledTools", "watchPaths", "includeTools",
        "excludeTools", "description", "oauth", "authProviderType", "lazy", "idleTimeout",
    }
)  # fmt: skip
_EXTRA = {
    "claude": frozenset({"transportType", "autoApprove", "serverUrl", "trust"}),
    "gemini": frozenset({"httpUrl", "trust"}),
    "vscode": frozenset({"trust"}),
    "connections": frozenset({"name", "autoConnect", "trust"}),
}
#: Keys some clients use for features this hub does not have: warned about, by name.
_UNSUPPORTED = {
    "targetAudience": "Google service-account auth is not supported",
    "targetServiceAccount": "Google service-account auth is not supported",
    "envFile": "envFile is not read; put the variables in env",
    "dev": "VS Code's dev mode is not supported; use watchPaths",
}


class _Doc:
    """Problems found while reading one document."""

    def __init__(
        self, file: str, environ: Mapping[str, str], workspace: Path, *, bare: bool = False
    ) -> None:
        self.file = file
        self.errors: list[ConfigIssue] = []
        self.warnings: list[ConfigIssue] = []
        self.expander = Expander(environ, workspace, bare=bare)
        self.workspace = workspace

    def error(self, path: str, message: str) -> None:
        self.errors.append(ConfigIssue(self.file, path, message))

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(ConfigIssue(self.file, path, message))


def detect_dialect(data: Mapping[str, object], file: str) -> str:
    if isinstance(data.get("servers"), dict) and "mcpServers" not in data:
        return "vscode"
    if isinstance(data.get("connections"), list) and "mcpServers" not in data:
        return "connections"
    parent = Path(file).resolve().parent.name if not file.startswith("<") else ""
    servers = data.get("mcpServers")
    if parent == ".gemini":
        return "gemini"
    if isinstance(servers, dict) and any(
        isinstance(s, dict) and ("httpUrl" in s or "trust" in s) for s in servers.values()
    ):
        return "gemini"
    return "claude"


def parse_config(
    data: object,
    *,
    file: str = "<config>",
    dialect: str = "auto",
    environ: Mapping[str, str] | None = None,
) -> LoadedConfig:
    """Normalize an already-parsed config document. Raises ``ConfigError``."""
    if dialect not in DIALECTS:
        raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}, not {dialect!r}")
    if not isinstance(data, dict):
        issue = ConfigIssue(file, "$", f"the document must be a JSON object, not {_kind(data)}")
        raise ConfigError([issue])
    if dialect == "auto":
        dialect = detect_dialect(data, file)
    workspace = workspace_of(None if file.startswith("<") else file)
    env = os.environ if environ is None else environ
    doc = _Doc(file, env, workspace, bare=dialect == "gemini")
    entries: list[tuple[str, tuple[str | int, ...], dict[str, object]]] = []
    if dialect == "connections":
        entries = _connection_entries(doc, data)
    else:
        key = "servers" if dialect == "vscode" else "mcpServers"
        container = data.get(key)
        if container is None:
            doc.error("$", "no servers: expected a top-level mcpServers, servers or connections")
        elif not isinstance(container, dict):
            doc.error(json_path(key), f"must be an object of servers, not {_kind(container)}")
        else:
            for name, entry in container.items():
                if not isinstance(entry, dict):
                    doc.error(json_path(key, name), f"must be an object, not {_kind(entry)}")
                else:
                    entries.append((name, (key, name), entry))
        if dialect == "vscode" and data.get("inputs"):
            doc.warn(json_path("inputs"), "prompted inputs are ignored (no editor to ask)")
    servers: dict[str, ServerConfig] = {}
    for name, where, entry in entries:
        server = _server(doc, dialect, name, where, entry)
        if server is not None:
            servers[name] = server
    profiles = parse_profiles(data.get("profiles"), file, doc.error, doc.warn)
    if doc.errors:
        raise ConfigError(doc.errors)
    return LoadedConfig(servers, tuple(doc.warnings), (file,), (dialect,), profiles)


def _connection_entries(
    doc: _Doc, data: Mapping[str, object]
) -> list[tuple[str, tuple[str | int, ...], dict[str, object]]]:
    entries: list[tuple[str, tuple[str | int, ...], dict[str, object]]] = []
    items = data.get("connections")
    if not isinstance(items, list):
        doc.error(json_path("connections"), f"must be a list, not {_kind(items)}")
        return entries
    seen: set[str] = set()
    for i, entry in enumerate(items):
        where: tuple[str | int, ...] = ("connections", i)
        if not isinstance(entry, dict):
            doc.error(json_path(*where), f"must be an object, not {_kind(entry)}")
            continue
        name = entry.get("name")
        if not isinstance(name, str) or not name:
            doc.error(json_path(*where, "name"), "every connection needs a non-empty name")
            continue
        if name in seen:
            doc.warn(json_path(*where, "name"), f"{name!r} appears more than once; last one used")
        seen.add(name)
        entries.append((name, where, entry))
    return entries


def _server(
    doc: _Doc, dialect: str, name: str, where: tuple[str | int, ...], entry: dict[str, object]
) -> ServerConfig | None:
    def at(*more: str | int) -> str:
        return json_path(*where, *more)

    errors_before = len(doc.errors)
    if not name.strip():
        doc.error(at(), "a server name must not be empty")
    allowed = _COMMON | _EXTRA[dialect]
    for key in entry:
        if key in _UNSUPPORTED:
            doc.warn(at(key), _UNSUPPORTED[key])
        elif key not in allowed:
            doc.warn(at(key), f"unknown key {key!r} is ignored")
    inputs: list[str] = []

    def text(key: str, *, expand: bool = True) -> str | None:
        value = entry.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            doc.error(at(key), f"must be a string, not {_kind(value)}")
            return None
        return _expand(doc, value, at(key), inputs) if expand else value

    def strings(key: str, *, expand: bool = False) -> tuple[str, ...] | None:
        value = entry.get(key)
        if value is None:
            return None
        if not isinstance(value, list):
            doc.error(at(key), f"must be a list of strings, not {_kind(value)}")
            return None
        out: list[str] = []
        for i, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, (str, int, float)):
                doc.error(at(key, i), f"must be a string, not {_kind(item)}")
                continue
            if not isinstance(item, str):
                doc.warn(at(key, i), f"number {item} is used as the string {str(item)!r}")
            out.append(_expand(doc, str(item), at(key, i), inputs) if expand else str(item))
        return tuple(out)

    def mapping(key: str) -> dict[str, str]:
        value = entry.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            doc.error(at(key), f"must be an object of strings, not {_kind(value)}")
            return {}
        out: dict[str, str] = {}
        for k, v in value.items():
            if isinstance(v, bool) or not isinstance(v, (str, int, float)):
                doc.error(at(key, k), f"must be a string, not {_kind(v)}")
                continue
            if not isinstance(v, str):
                doc.warn(at(key, k), f"number {v} is used as the string {str(v)!r}")
            out[k] = _expand(doc, str(v), at(key, k), inputs)
        return out

    def flag(key: str) -> bool | None:
        value = entry.get(key)
        if value is not None and not isinstance(value, bool):
            doc.error(at(key), f"must be true or false, not {_kind(value)}")
            return None
        return value

    command = text("command")
    if command is not None and not command.strip():
        doc.error(at("command"), "must not be empty")
    args = strings("args", expand=True) or ()
    env = mapping("env")
    inherit_env: bool | tuple[str, ...] | None = True
    inherit_value = entry.get("inheritEnv")
    if isinstance(inherit_value, bool):
        inherit_env = inherit_value
    elif inherit_value is not None:
        inherit_env = strings("inheritEnv")  # a list of names (None: an error was noted)
    headers = mapping("headers")
    cwd = text("cwd")
    url_key = next((k for k in ("url", "serverUrl", "httpUrl") if entry.get(k) is not None), "url")
    url = text(url_key)
    transport = _transport(doc, dialect, entry, at, command, url, url_key)
    if url is not None and not url.startswith(("http://", "https://")):
        doc.error(at(url_key), f"must be an http:// or https:// URL, not {url!r}")
    default_unit = 0.001 if dialect == "gemini" else 1.0
    timeout = _duration(doc, entry.get("timeout"), at("timeout"), default_unit)
    startup = _duration(doc, entry.get("startupTimeout"), at("startupTimeout"), default_unit)
    idle = _duration(doc, entry.get("idleTimeout"), at("idleTimeout"), default_unit, high=86400.0)
    always = strings("alwaysAllow") or ()
    if "autoApprove" in entry:
        always += strings("autoApprove") or ()
    include = strings("includeTools")
    exclude = strings("excludeTools") or ()
    disabled_tools = strings("disabledTools") or ()
    watch = strings("watchPaths", expand=True) or ()
    oauth = _oauth(doc, entry, at, inputs)
    disabled = flag("disabled") or False
    reason = "disabled in config" if disabled else ""
    if flag("autoConnect") is False:
        disabled, reason = True, "autoConnect is false"
    if inputs:
        ids = ", ".join(f"${{input:{i}}}" for i in dict.fromkeys(inputs))
        doc.warn(at(), f"uses VS Code input variables ({ids}); the server is left disabled")
        disabled, reason = True, f"needs VS Code input variables: {ids}"
    if len(doc.errors) > errors_before or transport is None:
        return None
    if cwd is not None and not os.path.isabs(cwd):
        cwd = str(doc.workspace / cwd)
    watch = tuple(p if os.path.isabs(p) else str(doc.workspace / p) for p in watch)
    return ServerConfig(
        name=name,
        command=command if transport == "stdio" else None,
        args=args if transport == "stdio" else (),
        env=env if transport == "stdio" else {},
        inherit_env=inherit_env if transport == "stdio" and inherit_env is not None else True,
        cwd=cwd if transport == "stdio" else None,
        url=url if transport != "stdio" else None,
        headers=headers if transport != "stdio" else {},
        transport=transport,
        disabled=disabled,
        disabled_reason=reason,
        timeout=DEFAULT_CALL_TIMEOUT if timeout is None else timeout,
        startup_timeout=startup,
        always_allow=always,
        trust=flag("trust") or False,
        lazy=flag("lazy") or False,
        idle_timeout=idle,
        disabled_tools=disabled_tools,
        include_tools=include,
        exclude_tools=exclude,
        watch_paths=watch,
        oauth=oauth if transport != "stdio" else None,
        origin=f"{doc.file}: {at()}",
    )


def _transport(
    doc: _Doc,
    dialect: str,
    entry: Mapping[str, object],
    at: Any,
    command: str | None,
    url: str | None,
    url_key: str,
) -> Transport | None:
    type_key = "type" if "type" in entry else "transportType"
    raw = entry.get(type_key)
    if raw is not None:
        if not isinstance(raw, str) or raw.lower() not in _TYPES:
            doc.error(
                at(type_key),
                f"must be one of stdio, sse, http, streamable-http, streamableHttp; got {raw!r}",
            )
            return None
        transport = _TYPES[raw.lower()]
        if transport == "stdio" and command is None:
            doc.error(at("command"), f"a {raw} server needs a command")
            return None
        if transport != "stdio" and url is None:
            doc.error(at("url"), f"a {raw} server needs a url")
            return None
        other = "url" if transport == "stdio" else "command"
        if (url if transport == "stdio" else command) is not None:
            doc.warn(at(other), f"ignored: type is {raw}")
        return transport
    if command is not None and url is not None:
        doc.error(at(), "has both command and url: say which with type")
        return None
    if command is not None:
        return "stdio"
    if url is not None:
        if url_key == "httpUrl":
            return "http"
        # gemini-cli's plain url is the legacy SSE transport; elsewhere a bare url
        # is streamable HTTP (whose client falls back to SSE by itself).
        return "sse" if dialect == "gemini" else "http"
    if not any(k in entry for k in ("command", "url", "serverUrl", "httpUrl")):
        doc.error(at(), "needs a command (stdio) or a url (HTTP)")
    return None  # otherwise the bad command or url was reported already


#: gemini-cli's ``oauth`` keys for endpoints, which the MCP spec has clients discover.
_OAUTH_DISCOVERED = frozenset(
    {"authorizationUrl", "tokenUrl", "registrationUrl", "issuer", "audiences", "tokenParamName"}
)
_OAUTH_KEYS = frozenset(
    {
        "enabled",
        "clientId",
        "clientSecret",
        "scopes",
        "redirectUri",
        "callbackPort",
        "dpopKeyFile",
        "clientKeyFile",
        "keyPassphrase",
    }
)
_GOOGLE_AUTH = ("google_credentials", "service_account_impersonation")


def _oauth(
    doc: _Doc, entry: Mapping[str, object], at: Any, inputs: list[str]
) -> OAuthSettings | None:
    """``oauth`` and ``authProviderType`` as ``OAuthSettings`` (``None``: no OAuth)."""
    provider = entry.get("authProviderType")
    discovery = provider == "dynamic_discovery"
    if provider is not None and not discovery:
        if provider in _GOOGLE_AUTH:
            doc.warn(at("authProviderType"), f"{provider} (Google auth) is not supported")
        else:
            doc.error(
                at("authProviderType"),
                f"must be dynamic_discovery, {' or '.join(_GOOGLE_AUTH)}; got {provider!r}",
            )
    raw = entry.get("oauth")
    if raw is None:
        return OAuthSettings() if discovery else None
    if not isinstance(raw, dict):
        doc.error(at("oauth"), f"must be an object, not {_kind(raw)}")
        return None
    for key in raw:
        if key in _OAUTH_DISCOVERED:
            doc.warn(at("oauth", key), "ignored: endpoints are discovered from the server")
        elif key not in _OAUTH_KEYS:
            doc.warn(at("oauth", key), f"unknown key {key!r} is ignored")
    errors = len(doc.errors)
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        doc.error(at("oauth", "enabled"), f"must be true or false, not {_kind(enabled)}")
    values: dict[str, str] = {}
    strings = ("clientId", "clientSecret", "redirectUri", "dpopKeyFile", "clientKeyFile")
    for key in (*strings, "keyPassphrase"):
        value = raw.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            doc.error(at("oauth", key), f"must be a string, not {_kind(value)}")
        else:
            values[key] = _expand(doc, value, at("oauth", key), inputs)
    scopes = raw.get("scopes")
    if scopes is not None and (
        not isinstance(scopes, list) or not all(isinstance(x, str) for x in scopes)
    ):
        doc.error(at("oauth", "scopes"), "must be a list of strings")
    host = "127.0.0.1"
    port = raw.get("callbackPort", 0)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        doc.error(at("oauth", "callbackPort"), f"must be a TCP port number, not {port!r}")
        port = 0
    path = "/callback"
    if "redirectUri" in values:
        loopback = loopback_redirect(values["redirectUri"])
        if loopback is None:
            doc.error(
                at("oauth", "redirectUri"),
                "must be a loopback http URI with a port, like http://127.0.0.1:8765/callback "
                "(RFC 8252 §7.3: the hub receives the redirect itself)",
            )
        else:
            host, port, path = loopback
    keys = {
        key: str(doc.workspace / os.path.expanduser(values[key]))
        for key in ("dpopKeyFile", "clientKeyFile")
        if key in values
    }
    if len(doc.errors) > errors or (enabled is False and not discovery):
        return None
    return OAuthSettings(
        client_id=values.get("clientId"),
        client_secret=values.get("clientSecret"),
        scopes=tuple(scopes) if isinstance(scopes, list) else None,
        callback_host=host,
        callback_port=port,
        callback_path=path,
        dpop_key_file=keys.get("dpopKeyFile"),
        client_key_file=keys.get("clientKeyFile"),
        key_passphrase=values.get("keyPassphrase"),
    )


def _duration(
    doc: _Doc, value: object, path: str, unit: float, *, high: float = _TIMEOUT_RANGE[1]
) -> float | None:
    if value is None:
        return None
    seconds: float
    if isinstance(value, str):
        match = _DURATION.match(value)
        if match is None:
            doc.error(path, f"must be a number or a duration like '30s' or '500ms', not {value!r}")
            return None
        seconds = float(match.group(1)) * _UNITS[match.group(2)]
    elif (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and (isinstance(value, int) or math.isfinite(value))
    ):
        try:
            seconds = value * unit
        except OverflowError:  # an integer too large for a float: out of range
            seconds = math.inf
    else:
        doc.error(path, f"must be a number of {'milliseconds' if unit < 1 else 'seconds'}")
        return None
    low = _TIMEOUT_RANGE[0]
    if not low <= seconds <= high:
        hint = ""
        if unit == 1.0 and not isinstance(value, str) and seconds > high:
            hint = " (milliseconds? write it as a string with its unit, e.g. '30000ms')"
        doc.error(path, f"must be between {low:g} and {high:g} seconds, got {value!r}{hint}")
        return None
    return seconds


def _expand(doc: _Doc, value: str, path: str, inputs: list[str]) -> str:
    try:
        return doc.expander.expand(value)
    except InputVariable as var:
        inputs.append(var.name)
        return value
    except KeyError as exc:
        doc.error(path, str(exc.args[0]))
        return value


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__
