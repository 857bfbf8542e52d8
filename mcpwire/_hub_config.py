"""One loader for the MCP config dialects people have, normalized to ``ServerConfig``.

Theory of operation
-------------------
Every client invented its own file. The shapes, and how each is recognized:

=============  ===============================  =========================================
dialect        recognized by                    notes
=============  ===============================  =========================================
``claude``     top-level ``mcpServers``         Claude Desktop/Code, Cursor, Roo, Cline;
                                                ``timeout`` in seconds (1-3600)
``gemini``     ``mcpServers`` in a ``.gemini``  ``httpUrl`` = streamable HTTP, ``url`` =
               directory, or an entry using     SSE, ``timeout`` in milliseconds,
               ``httpUrl`` or ``trust``         ``trust`` = no approval needed
``vscode``     top-level ``servers``            ``.vscode/mcp.json``; ``inputs`` ignored
``connections`` top-level ``connections`` list  ``name`` per entry, ``autoConnect``
=============  ===============================  =========================================

All dialects accept the same per-server keys on top of their own: ``command``,
``args``, ``env``, ``cwd``, ``url``, ``headers``, ``type`` (``stdio``, ``sse``,
``http``, ``streamable-http``, ``streamableHttp``), ``disabled``, ``timeout``,
``startupTimeout``, ``alwaysAllow``, ``disabledTools``, ``watchPaths``,
``includeTools`` and ``excludeTools`` (globs; an allowlist wins), ``lazy``
and ``idleTimeout`` (up to 24 h; stop an unused server). A timeout may
also be a string with its unit (``"30s"``, ``"120000ms"``, ``"2m"``), which
means the same in every dialect. An HTTP server may have ``oauth`` (gemini-cli's
object: ``enabled``, ``clientId``, ``clientSecret``, ``scopes``, ``redirectUri``;
also ``callbackPort``, and ``dpopKeyFile`` and ``clientKeyFile``: PEM private keys
for DPoP and ``private_key_jwt``, relative to the workspace, with ``keyPassphrase``
for encrypted ones, best given as ``${VAR}``) or
``authProviderType: "dynamic_discovery"``: the hub then authorizes with OAuth
2.1 as the MCP spec says (``OAuthSettings``).

Problems are collected, not raised one at a time: each names the file, the JSON
path and the rule. Any error rejects the whole file (a reload keeps the last
good config); unknown keys and ignored features are warnings. ``load_configs``
reads several files in order and a later file's server replaces an earlier
one of the same name (global first, project last: the project wins).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from ._hub_errors import ConfigError, ConfigIssue
from ._hub_expand import read_jsonc

if TYPE_CHECKING:
    from ._hub_profiles import Profile

__all__ = (
    "DEFAULT_CALL_TIMEOUT",
    "LoadedConfig",
    "OAuthSettings",
    "loopback_redirect",
    "ServerConfig",
    "Transport",
    "load_config",
    "load_configs",
)

Transport = Literal["stdio", "sse", "http"]
#: Seconds a tool call may take unless the server's config says otherwise.
DEFAULT_CALL_TIMEOUT = 60.0


@dataclass(frozen=True, kw_only=True)
class OAuthSettings:
    """How the hub authorizes with one HTTP server (MCP ``basic/authorization``).

    The authorization server, its endpoints and the scopes to ask for are
    discovered from the server (RFC 9728, RFC 8414) unless given here. The
    user's step runs through a loopback redirect URI (RFC 8252 §7.3):
    ``http://{callback_host}:{callback_port}{callback_path}``, the port picked
    once per server when ``callback_port`` is 0. The listener binds the
    loopback address (``127.0.0.1`` for ``localhost``).
    """

    #: A pre-registered client; without one, the client registers itself.
    client_id: str | None = None
    client_secret: str | None = None
    #: The scopes to ask for instead of the discovered ones.
    scopes: tuple[str, ...] | None = None
    callback_host: str = "127.0.0.1"
    callback_port: int = 0
    callback_path: str = "/callback"
    #: A PEM private key (EC, RSA or Ed25519) that binds the tokens to it with DPoP (RFC 9449).
    dpop_key_file: str | None = None
    #: A PEM private key the client authenticates with (``private_key_jwt``, RFC 7523).
    client_key_file: str | None = None
    #: The passphrase of those key files, when they are encrypted.
    key_passphrase: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.scopes is not None:
            object.__setattr__(self, "scopes", tuple(self.scopes))
        if not 0 <= self.callback_port <= 65535:
            raise ValueError(f"callback_port must be a TCP port, not {self.callback_port}")
        if not self.callback_path.startswith("/"):
            raise ValueError("callback_path must start with '/'")
        if self.callback_host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("callback_host must be 127.0.0.1, localhost or ::1 (RFC 8252 §7.3)")

    def to_json(self, *, redact: bool = False) -> dict[str, Any]:
        out: dict[str, Any] = {"enabled": True}
        if self.client_id is not None:
            out["clientId"] = self.client_id
        if self.client_secret is not None:
            out["clientSecret"] = "***" if redact else self.client_secret
        if self.scopes is not None:
            out["scopes"] = list(self.scopes)
        if self.callback_port:
            out["redirectUri"] = self.redirect_uri(self.callback_port)
        if self.dpop_key_file is not None:
            out["dpopKeyFile"] = self.dpop_key_file
        if self.client_key_file is not None:
            out["clientKeyFile"] = self.client_key_file
        if self.key_passphrase is not None:
            out["keyPassphrase"] = "***" if redact else self.key_passphrase
        return out

    def redirect_uri(self, port: int) -> str:
        """The loopback redirect URI on ``port``."""
        host = f"[{self.callback_host}]" if ":" in self.callback_host else self.callback_host
        return f"http://{host}:{port}{self.callback_path}"


def loopback_redirect(uri: str) -> tuple[str, int, str] | None:
    """The host, port and path of a loopback redirect URI with a port
    (RFC 8252 §7.3), or ``None`` for any other URI."""
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return None
    if port is None or parts.query or parts.fragment:
        return None
    return parts.hostname, port, parts.path or "/"


@dataclass(frozen=True, kw_only=True)
class ServerConfig:
    """One server, whatever dialect it came from.

    ``transport`` is inferred when empty: ``stdio`` with a ``command``, ``http``
    (streamable HTTP) with a ``url``. Lists given for the tuple fields are
    accepted. Timeouts are in seconds.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    #: What a stdio server inherits of the hub's environment: all (``True``),
    #: only ``ESSENTIAL_ENV`` (``False``), or those and the names given.
    inherit_env: bool | tuple[str, ...] = True
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    transport: Transport | Literal[""] = ""
    disabled: bool = False
    #: Why the server is disabled, when it is (``"disabled in config"``, ...).
    disabled_reason: str = ""
    timeout: float = DEFAULT_CALL_TIMEOUT
    #: Seconds to connect and list everything; ``None``: the hub's default.
    startup_timeout: float | None = None
    always_allow: tuple[str, ...] = ()
    #: Every tool is approved without asking (gemini-cli's ``trust``).
    trust: bool = False
    #: Not started until first use while the hub's tool cache knows its tools.
    lazy: bool = False
    #: Seconds unused after which a running server is stopped, its tools still
    #: exposed; the next call starts it again (``None``: never stopped).
    idle_timeout: float | None = None
    disabled_tools: tuple[str, ...] = ()
    #: Globs of tool names to expose; ``None``: all (minus ``exclude_tools``).
    include_tools: tuple[str, ...] | None = None
    exclude_tools: tuple[str, ...] = ()
    #: The active profile's narrowing of the tools, on top of the two above
    #: (``_hub_profiles``); set by the hub, never read from a server's entry.
    profile_include_tools: tuple[str, ...] | None = None
    profile_exclude_tools: tuple[str, ...] = ()
    watch_paths: tuple[str, ...] = ()
    #: OAuth for an HTTP server (``None``: none, or only what ``headers`` carry).
    oauth: OAuthSettings | None = None
    #: Where it was defined (``file: $.mcpServers.name``); not part of equality.
    origin: str = field(default="<servers>", compare=False)

    def __post_init__(self) -> None:
        for name in ("args", "always_allow", "disabled_tools", "exclude_tools", "watch_paths"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "profile_exclude_tools", tuple(self.profile_exclude_tools))
        for name in ("include_tools", "profile_include_tools"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "env", dict(self.env))
        if not isinstance(self.inherit_env, bool):
            if isinstance(self.inherit_env, str):
                raise ValueError("inherit_env takes True, False or a sequence of names")
            object.__setattr__(self, "inherit_env", tuple(self.inherit_env))
        object.__setattr__(self, "headers", dict(self.headers))
        if not self.name:
            raise ValueError("a server needs a name")
        if not self.transport:
            object.__setattr__(self, "transport", "stdio" if self.command else "http")
        if self.transport not in ("stdio", "sse", "http"):
            raise ValueError(f"transport must be stdio, sse or http, not {self.transport!r}")
        if self.transport == "stdio" and not self.command:
            raise ValueError(f"server {self.name!r}: a stdio server needs a command")
        if self.transport != "stdio" and not self.url:
            raise ValueError(f"server {self.name!r}: an {self.transport} server needs a url")
        if self.oauth is not None and self.transport == "stdio":
            raise ValueError(f"server {self.name!r}: oauth applies to HTTP servers only")
        if self.idle_timeout is not None and not self.idle_timeout > 0:
            raise ValueError(f"server {self.name!r}: idle_timeout must be a positive number")
        if self.disabled and not self.disabled_reason:
            object.__setattr__(self, "disabled_reason", "disabled in config")

    def connection_key(self) -> tuple[object, ...]:
        """What the connection depends on: a change here means a restart."""
        return (
            self.transport,
            self.command,
            self.args,
            tuple(sorted(self.env.items())),
            self.inherit_env,
            self.cwd,
            self.url,
            tuple(sorted(self.headers.items())),
            self.startup_timeout,
            self.oauth,
        )

    def to_json(self, *, redact: bool = False) -> dict[str, Any]:
        """The config as a JSON object in our own (``mcpServers``) spelling.

        ``redact`` hides the values of ``env`` and ``headers`` (where secrets live).
        """
        out: dict[str, Any] = {"type": self.transport}
        if self.command is not None:
            out["command"] = self.command
            out["args"] = list(self.args)
        if self.env:
            out["env"] = dict.fromkeys(self.env, "***") if redact else dict(self.env)
        if self.inherit_env is not True:
            out["inheritEnv"] = list(self.inherit_env) if self.inherit_env else False
        if self.cwd is not None:
            out["cwd"] = self.cwd
        if self.url is not None:
            out["url"] = self.url
        if self.headers:
            out["headers"] = dict.fromkeys(self.headers, "***") if redact else dict(self.headers)
        out["timeout"] = self.timeout
        if self.oauth is not None:
            out["oauth"] = self.oauth.to_json(redact=redact)
        for f in fields(self):
            key = _CAMEL.get(f.name)
            value = getattr(self, f.name)
            if key is None or value is None or (value in ((), False) and key != "includeTools"):
                continue
            out[key] = list(value) if isinstance(value, tuple) else value
        return out


_CAMEL = {
    "disabled": "disabled",
    "startup_timeout": "startupTimeout",
    "always_allow": "alwaysAllow",
    "trust": "trust",
    "lazy": "lazy",
    "idle_timeout": "idleTimeout",
    "disabled_tools": "disabledTools",
    "include_tools": "includeTools",
    "exclude_tools": "excludeTools",
    "watch_paths": "watchPaths",
}


@dataclass(frozen=True)
class LoadedConfig:
    """Servers by name (in file order), the warnings, what was read, and the
    named profiles (``_hub_profiles``)."""

    servers: dict[str, ServerConfig]
    warnings: tuple[ConfigIssue, ...] = ()
    files: tuple[str, ...] = ()
    dialects: tuple[str, ...] = ()
    profiles: Mapping[str, Profile] = field(default_factory=dict)


def load_config(
    path: str | os.PathLike[str],
    *,
    dialect: str = "auto",
    environ: Mapping[str, str] | None = None,
) -> LoadedConfig:
    """Read one config file. Raises ``ConfigError`` listing every problem in it."""
    file = os.fspath(path)
    try:
        with open(file, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError([ConfigIssue(file, "$", f"cannot read the file: {exc}")]) from None
    try:
        data, duplicates = read_jsonc(text)
    except ValueError as exc:
        line, col = getattr(exc, "lineno", 0), getattr(exc, "colno", 0)
        msg = getattr(exc, "msg", str(exc))
        where = f"line {line} column {col}: " if line else ""
        raise ConfigError([ConfigIssue(file, "$", f"not valid JSON: {where}{msg}")]) from None
    except RecursionError:
        issue = ConfigIssue(file, "$", "not valid JSON: nested too deeply to read")
        raise ConfigError([issue]) from None
    from ._hub_dialects import parse_config

    loaded = parse_config(data, file=file, dialect=dialect, environ=environ)
    if duplicates:
        extra = tuple(
            ConfigIssue(file, "$", f"key {k!r} appears more than once; the last one is used")
            for k in dict.fromkeys(duplicates)
        )
        loaded = dataclasses.replace(loaded, warnings=extra + loaded.warnings)
    return loaded


def load_configs(
    paths: Sequence[str | os.PathLike[str]],
    *,
    environ: Mapping[str, str] | None = None,
) -> LoadedConfig:
    """Read several files in order; a later file's server replaces an earlier one's.

    Every file is read even when one fails, and all problems are raised together.
    """
    servers: dict[str, ServerConfig] = {}
    profiles: dict[str, Profile] = {}
    warnings: list[ConfigIssue] = []
    errors: list[ConfigIssue] = []
    dialects: list[str] = []
    for path in paths:
        try:
            loaded = load_config(path, environ=environ)
        except ConfigError as exc:
            errors.extend(exc.issues)
            continue
        warnings.extend(loaded.warnings)
        dialects.extend(loaded.dialects)
        for name, server in loaded.servers.items():
            previous = servers.pop(name, None)
            if previous is not None:
                warnings.append(
                    ConfigIssue(
                        os.fspath(path),
                        server.origin.partition(": ")[2] or "$",
                        f"server {name!r} replaces the one from {previous.origin}",
                    )
                )
            servers[name] = server
        for name, profile in loaded.profiles.items():
            replaced = profiles.pop(name, None)
            if replaced is not None:
                where = profile.origin.partition(": ")[2] or "$"
                message = f"profile {name!r} replaces the one from {replaced.origin}"
                warnings.append(ConfigIssue(os.fspath(path), where, message))
            profiles[name] = profile
    if errors:
        raise ConfigError(errors)
    files = tuple(os.fspath(p) for p in paths)
    return LoadedConfig(servers, tuple(warnings), files, tuple(dialects), profiles)
