"""The reference SDK as an authorization-enabled MCP server, for the OAuth client tests.

``python tests/http_client/ref_auth_server.py PORT [TOKEN_LIFETIME_SECONDS]``

One process is both the authorization server and the protected resource, as the
SDK builds them from ``AuthSettings`` and an ``OAuthAuthorizationServerProvider``:
RFC 8414 metadata, RFC 7591 registration, the authorization endpoint (PKCE
required), the token endpoint (code and refresh grants, client authentication),
RFC 9728 metadata for ``/mcp``, and bearer checks with ``WWW-Authenticate``
challenges on ``/mcp``. The provider below is the only part written here: it
keeps everything in memory and approves every authorization request at once
(there is no user), redirecting straight back with a code.

The tool ``stats`` reports what the provider saw (registrations, codes issued,
grants used, the resource of each token), so a test can check the flow.
"""

from __future__ import annotations

import secrets
import sys
import time
from typing import Any

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

SCOPES = ["mcp:read", "mcp:write"]


class MemoryProvider:
    """An in-memory, auto-approving authorization server provider."""

    def __init__(self, lifetime: int) -> None:
        self.lifetime = lifetime
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.stats: dict[str, Any] = {"registrations": 0, "grants": [], "resources": []}

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.stats["registrations"] += 1

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = secrets.token_urlsafe(16)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 60,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        token = secrets.token_urlsafe(16)
        refresh = secrets.token_urlsafe(16)
        expires = int(time.time()) + self.lifetime
        self.access[token] = AccessToken(
            token=token, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource
        )
        self.stats["resources"].append(resource)
        return OAuthToken(
            access_token=token,
            expires_in=self.lifetime,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        del self.codes[authorization_code.code]
        self.stats["grants"].append("authorization_code")
        return self._issue(
            authorization_code.client_id, authorization_code.scopes, authorization_code.resource
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        del self.refresh[refresh_token.token]
        self.stats["grants"].append("refresh_token")
        return self._issue(
            refresh_token.client_id, scopes or refresh_token.scopes, refresh_token.resource
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def main() -> None:
    port = int(sys.argv[1])
    lifetime = int(sys.argv[2]) if len(sys.argv) > 2 else 3600
    base = f"http://127.0.0.1:{port}"
    provider = MemoryProvider(lifetime)
    mcp = MCPServer(
        "ref-auth-server",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            required_scopes=["mcp:read"],
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=SCOPES, default_scopes=["mcp:read"]
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
