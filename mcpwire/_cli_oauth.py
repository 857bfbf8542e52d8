"""The command line's OAuth 2.1 options, for URL targets (see ``_cli``).

The options build the same ``OAuthSettings`` a hub config entry's ``oauth``
object does, and override it where both are given; the flow itself is the
hub's (``_hub_auth.oauth_client``). An encrypted key's passphrase is never an
argument (it would show in the process list): ``--key-passphrase-env`` names
the environment variable that holds it.
"""

from __future__ import annotations

import argparse
import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._hub_config import OAuthSettings
    from ._oauth import OAuthClient

__all__ = ("add_oauth_arguments", "oauth_client", "wants_oauth")


def add_oauth_arguments(p: argparse.ArgumentParser) -> None:
    auth = p.add_argument_group("OAuth 2.1 authorization (URL targets)")
    auth.add_argument(
        "--oauth",
        action="store_true",
        help="authorize as the MCP spec says when the server asks (a 401): discovery, "
        "registration, and a browser step through a loopback redirect URI",
    )
    auth.add_argument("--client-id", help="a pre-registered client (implies --oauth)")
    auth.add_argument("--client-secret", help="its secret, for a confidential client")
    auth.add_argument(
        "--scope", action="append", help="a scope to ask for (repeatable; implies --oauth)"
    )
    auth.add_argument(
        "--callback-port",
        type=int,
        default=0,
        help="the redirect URI's port on 127.0.0.1 (default: any free one)",
    )
    auth.add_argument(
        "--token-store", metavar="FILE", help="keep tokens in FILE across runs (mode 0600)"
    )
    auth.add_argument(
        "--dpop-key",
        metavar="PEM",
        help="bind tokens to this private key with DPoP (RFC 9449; implies --oauth)",
    )
    auth.add_argument(
        "--client-key",
        metavar="PEM",
        help="authenticate the client with this private key (private_key_jwt, RFC 7523)",
    )
    auth.add_argument(
        "--key-passphrase-env",
        metavar="VAR",
        help="the environment variable holding the passphrase of an encrypted key",
    )
    auth.add_argument(
        "--browser", action="store_true", help="open the authorization URL in a browser"
    )


def wants_oauth(args: argparse.Namespace) -> bool:
    return bool(
        args.oauth
        or args.client_id
        or args.scope
        or args.callback_port
        or args.token_store
        or args.dpop_key
        or args.client_key
    )


def oauth_client(
    args: argparse.Namespace, url: str, configured: OAuthSettings | None
) -> OAuthClient | None:
    """The ``OAuthClient`` the options (or the config entry's ``oauth``) ask for;
    ``ValueError`` says what is wrong with them."""
    import dataclasses

    from ._hub_auth import oauth_client as make
    from ._hub_auth import oauth_state
    from ._hub_cli import authorization_prompt
    from ._hub_config import OAuthSettings, ServerConfig
    from ._hub_errors import ConfigError

    if not wants_oauth(args) and configured is None:
        return None
    passphrase = None
    if args.key_passphrase_env:
        passphrase = os.environ.get(args.key_passphrase_env)
        if passphrase is None:
            raise ValueError(f"--key-passphrase-env: ${args.key_passphrase_env} is not set")
    # The options given override the config entry's settings; the rest stand.
    given = {
        "client_id": args.client_id,
        "client_secret": args.client_secret,
        "scopes": tuple(args.scope) if args.scope else None,
        "callback_port": args.callback_port,
        "dpop_key_file": args.dpop_key,
        "client_key_file": args.client_key,
        "key_passphrase": passphrase,
    }
    overrides = {name: value for name, value in given.items() if value}
    settings = dataclasses.replace(configured or OAuthSettings(), **overrides)
    config = ServerConfig(name=url, url=url, oauth=settings)
    state = oauth_state(config, settings, args.token_store)
    try:
        return make(config, settings, state, authorization_prompt(args.browser))
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
