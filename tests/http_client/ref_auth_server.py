"""The reference SDK as an authorization-enabled MCP server, for the OAuth client tests.

``python tests/http_client/ref_auth_server.py PORT [TOKEN_LIFETIME_SECONDS]``

One process is both the authorization server and the protected resource, as the
SDK builds them from ``AuthSettings`` and an ``OAuthAuthorizationServerProvider``:
RFC 8414 metadata, RFC 7591 registration, the authorization endpoint (PKCE
required), the token endpoint (code and refresh grants, client authentication),
RFC 9728 metadata for ``/mcp``, and bearer checks with ``WWW-Authenticate``
challenges on ``/mcp``. The provider is the in-memory one of ``tests/http_auth_as.py``
(it approves every authorization request at once, there being no user, and
redirects straight back with a code), recording what it sees.

The tool ``stats`` reports what the provider saw (registrations, codes issued,
grants used, the resource of each token), so a test can check the flow.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mcp.server.auth.provider import AuthorizationCode, RefreshToken
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script
from http_auth_as import SCOPES, MemoryProvider


class StatsProvider(MemoryProvider):
    """``http_auth_as``'s in-memory, auto-approving provider, recording what it saw."""

    def __init__(self, lifetime: int) -> None:
        super().__init__(token_lifetime=lifetime)
        self.stats: dict[str, Any] = {"registrations": 0, "grants": [], "resources": []}

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        await super().register_client(client_info)
        self.stats["registrations"] += 1

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        self.stats["resources"].append(resource)
        return super()._issue(client_id, scopes, resource)

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.stats["grants"].append("authorization_code")
        return await super().exchange_authorization_code(client, authorization_code)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        self.stats["grants"].append("refresh_token")
        return await super().exchange_refresh_token(client, refresh_token, scopes)


def main() -> None:
    port = int(sys.argv[1])
    lifetime = int(sys.argv[2]) if len(sys.argv) > 2 else 3600
    base = f"http://127.0.0.1:{port}"
    provider = StatsProvider(lifetime)
    mcp = MCPServer(
        "ref-auth-server",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            required_scopes=["mcp:read"],
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=list(SCOPES), default_scopes=["mcp:read"]
            ),
        ),
    )
    mcp.settings.log_level = "WARNING"

    @mcp.tool()
    def stats() -> dict[str, Any]:
        """What the authorization server saw."""
        return provider.stats

    mcp.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
