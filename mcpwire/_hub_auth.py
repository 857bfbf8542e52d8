"""OAuth for the hub's HTTP servers: each server's ``OAuthSettings`` as an ``OAuthClient``.

A server whose config has ``oauth`` (or ``authProviderType:
"dynamic_discovery"``) is connected with ``Client.http(url, auth=...)``: the
client discovers the authorization server, registers itself when no client id
is configured, and authorizes as the MCP spec's ``basic/authorization`` says.

The user's step is the native-app flow of RFC 8252: for the length of one
authorization the hub listens on the server's loopback redirect URI
(``LoopbackRedirect``), hands the authorization URL to the hub's
``authorize`` hook (a UI opens a browser; ``mcpwire hub`` prints it), and
waits for the browser to come back; an async hook runs alongside the wait and
is cancelled once the answer is in. Without a hook the URL is logged at
WARNING level, the only place a person could find it. The step is bounded by
the hub's ``authorize_timeout`` (5 minutes by default), and does not count
against the server's ``startupTimeout``: the startup watchdog waits while a
user step is in progress, then gives the rest of the start its full time.

What outlives one connection is kept per server (``OAuthState``), so a
restart does not send the user through the flow again: the token storage
(in memory, or a ``FileTokenStorage`` shared by all servers when the hub has
a ``token_store`` file) and the callback port, picked once when the config
leaves it to the hub, so that the redirect URI a client registered stays the
one it sends. With a token file the port is kept there too, for later runs.
"""

from __future__ import annotations

import inspect
import logging
import socket
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio

from ._hub_config import loopback_redirect
from ._hub_errors import ConfigError, ConfigIssue
from ._oauth_redirect import LoopbackRedirect

if TYPE_CHECKING:
    from ._hub_config import OAuthSettings, ServerConfig
    from ._jose import JWTSigner
    from ._oauth import OAuthClient, TokenStorage

__all__ = (
    "DEFAULT_AUTHORIZE_TIMEOUT",
    "AuthorizeHook",
    "HubOAuth",
    "OAuthState",
    "oauth_client",
    "oauth_state",
)

logger = logging.getLogger("mcpwire.hub")

#: Seconds the user's step of an authorization may take.
DEFAULT_AUTHORIZE_TIMEOUT = 300.0
#: ``(server name, authorization URL)``: show the URL to the user (open a browser).
AuthorizeHook = Callable[[str, str], "Awaitable[None] | None"]


@dataclass
class OAuthState:
    """What the hub keeps for one OAuth server across its connections."""

    storage: TokenStorage
    #: The loopback address to bind, and the redirect URI's port and path.
    bind: str
    port: int
    redirect_uri: str
    #: Authorizations waiting for the user now (the startup watchdog waits too).
    waiting: int = 0


class HubOAuth:
    """The hub's OAuth: one ``OAuthState`` per server (name, URL and settings), made
    on its first connection and kept for the hub's life."""

    def __init__(
        self, authorize: AuthorizeHook | None, token_store: str | None, timeout: float
    ) -> None:
        if not timeout > 0:
            raise ValueError("authorize_timeout must be a positive number of seconds")
        self.authorize, self.token_store, self.timeout = authorize, token_store, timeout
        self._states: dict[tuple[str, str, OAuthSettings], OAuthState] = {}

    def client_for(self, config: ServerConfig) -> OAuthClient | None:
        """The ``OAuthClient`` for a new connection to ``config``'s server, if it has ``oauth``."""
        settings = config.oauth
        if settings is None or config.url is None:
            return None
        key = (config.name, config.url, settings)
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = oauth_state(config, settings, self.token_store)
        return oauth_client(config, settings, state, self.authorize, timeout=self.timeout)

    def authorizing(self, config: ServerConfig) -> bool:
        """True while an OAuth authorization of ``config``'s server waits for the user."""
        settings = config.oauth
        if settings is None or config.url is None:
            return False
        state = self._states.get((config.name, config.url, settings))
        return state is not None and state.waiting > 0


def oauth_state(
    config: ServerConfig, settings: OAuthSettings, token_store: str | None
) -> OAuthState:
    """A server's ``OAuthState``, made once (see the module docstring)."""
    from ._oauth import InMemoryTokenStorage
    from ._oauth_file import FileTokenStorage

    assert config.url is not None
    bind = "::1" if settings.callback_host == "::1" else "127.0.0.1"
    if token_store is None:
        port = settings.callback_port or _free_port(bind)
        return OAuthState(InMemoryTokenStorage(), bind, port, settings.redirect_uri(port))
    # A file store outlives this process, and so does the client registered in
    # it with its redirect URI: a later run listens on the port it names.
    storage = FileTokenStorage(token_store, config.url)
    kept = storage.callback_uri()
    port = settings.callback_port or _kept_port(kept, settings) or _free_port(bind)
    uri = settings.redirect_uri(port)
    if not settings.callback_port and kept != uri:
        storage.keep_callback_uri(uri)
    return OAuthState(storage, bind, port, uri)


def _kept_port(kept: str | None, settings: OAuthSettings) -> int:
    """The port of a kept redirect URI with the configured host and path (0: none)."""
    found = loopback_redirect(kept) if kept is not None else None
    if found is None or (found[0], found[2]) != (settings.callback_host, settings.callback_path):
        return 0
    return found[1]


def oauth_client(
    config: ServerConfig,
    settings: OAuthSettings,
    state: OAuthState,
    authorize: AuthorizeHook | None,
    *,
    timeout: float = DEFAULT_AUTHORIZE_TIMEOUT,
) -> OAuthClient:
    """The ``OAuthClient`` for one connection to ``config``'s server."""
    from ._oauth import OAuthClient

    name = config.name
    path = settings.callback_path

    async def redirect_handler(authorization_url: str) -> str:
        async with (
            LoopbackRedirect(host=state.bind, port=state.port, path=path) as redirect,
            anyio.create_task_group() as tg,
        ):
            waiting = redirect.redirect_handler(timeout=timeout)
            if authorize is None:
                logger.warning(
                    "MCP server %r needs authorization: open %s", name, authorization_url
                )
            else:
                # An async hook runs alongside the wait (it may be what drives
                # the browser back to us) and is stopped once the answer is in.
                shown = authorize(name, authorization_url)
                if inspect.isawaitable(shown):
                    tg.start_soon(_finish, shown)
            state.waiting += 1
            try:
                answer = await waiting(authorization_url)
            finally:
                state.waiting -= 1
            tg.cancel_scope.cancel()
        return answer

    return OAuthClient(
        redirect_handler=redirect_handler,
        redirect_uri=state.redirect_uri,
        client_name=f"mcpwire hub ({name})",
        client_id=settings.client_id,
        client_secret=settings.client_secret,
        scopes=list(settings.scopes) if settings.scopes is not None else None,
        storage=state.storage,
        dpop=_signer(settings.dpop_key_file, "dpopKeyFile", settings.key_passphrase) or False,
        client_assertion_signer=_signer(
            settings.client_key_file, "clientKeyFile", settings.key_passphrase
        ),
    )


def _signer(path: str | None, what: str, passphrase: str | None) -> JWTSigner | None:
    """The signer of a PEM private key file; an encrypted one needs ``keyPassphrase``
    (from the config, as nobody is there to type it when the hub reconnects)."""
    if path is None:
        return None
    from ._jose import load_signer

    try:
        pem = Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError([ConfigIssue(path, what, f"cannot read the key: {exc}")]) from exc
    try:
        return load_signer(pem, passphrase.encode() if passphrase is not None else None)
    except ImportError as exc:  # CryptographyMissing: says which extra to install
        raise ConfigError([ConfigIssue(path, what, str(exc))]) from exc
    except (ValueError, TypeError) as exc:
        # cryptography says which: encrypted without a passphrase, a wrong one, a
        # key of no supported type, not a key at all.
        problem = f"not a usable PEM private key (EC, RSA or Ed25519): {exc}"
        raise ConfigError([ConfigIssue(path, what, problem)]) from exc


async def _finish(shown: Awaitable[None]) -> None:
    await shown


def _free_port(host: str) -> int:
    """A port free on ``host`` now, for a redirect URI that keeps it from then on."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
    return port
