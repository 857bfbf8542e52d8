"""``mcpwire serve``: run a server app over stdio or HTTP, with the OAuth
resource-server options turned into ``auth=``."""

from __future__ import annotations

import argparse
from typing import Any

from ._cli_output import UsageError, http_bind, http_serving_given, http_serving_options, load_app

__all__ = ("serve", "serve_auth")


def serve(args: argparse.Namespace) -> int:
    """Run ``args.app`` until it stops; exit status 0, or ``run_main``'s over HTTP."""
    try:
        server = load_app(args.app)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if args.transport in ("http", "sse"):
        from ._http_run import run_main

        try:
            host, port = http_bind(args)
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        # sse: the deprecated HTTP+SSE endpoints (/sse, /messages) beside /mcp.
        return run_main(
            server,
            host,
            port,
            legacy_sse=args.transport == "sse",
            **(http_serving_options(args) or {}),
            **serve_auth(args),
        )
    if args.auth_server or args.introspect or args.dpop or args.dpop_nonce:
        raise UsageError("OAuth options apply to --transport http or sse")
    given = http_serving_given(args)
    if given is not None:
        raise UsageError(f"{given} applies to --transport http or sse")
    server.run()
    return 0


def _nonce_key() -> bytes | None:
    """The DPoP nonce key from ``$MCPWIRE_DPOP_NONCE_KEY`` (never the command line)."""
    import os

    text = os.environ.get("MCPWIRE_DPOP_NONCE_KEY")
    if not text:
        return None
    if len(text.encode()) < 16:
        raise UsageError("$MCPWIRE_DPOP_NONCE_KEY must be at least 16 bytes")
    return text.encode()


def serve_auth(args: argparse.Namespace) -> dict[str, Any]:
    """``auth=`` for ``serve``'s OAuth options (none given: no authorization)."""
    if not args.auth_server and not args.introspect:
        if args.dpop or args.dpop_nonce:
            raise UsageError("--dpop and --dpop-nonce need --auth-server and --introspect")
        return {}
    if not args.auth_server or not args.introspect:
        raise UsageError("--auth-server and --introspect go together")
    import os

    from ._auth_introspect import IntrospectionVerifier
    from ._http_auth import ResourceServerAuth

    secret = None
    if args.dpop_nonce and args.dpop == "off":
        raise UsageError("--dpop-nonce needs DPoP (not --dpop off)")
    if args.introspect_client_id:
        secret = os.environ.get(args.introspect_secret_env)
        if not secret:
            raise UsageError(
                f"--introspect-client-id needs its secret in ${args.introspect_secret_env}"
            )
    try:
        verifier = IntrospectionVerifier(
            args.introspect, client_id=args.introspect_client_id, client_secret=secret
        )
        auth = ResourceServerAuth(
            verifier,
            authorization_servers=args.auth_server,
            required_scopes=args.required_scope or (),
            scopes_supported=args.required_scope or (),
            resource=args.resource,
            dpop=args.dpop or "allowed",
            dpop_nonce=args.dpop_nonce,
            dpop_nonce_key=_nonce_key(),
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return {"auth": auth}
