"""A real OAuth 2.1 authorization server for the tests, built from the reference SDK's pieces.

The reference SDK's ``mcp.server.auth`` routes (metadata, dynamic client
registration, authorize with PKCE, token, revoke) run over a small
in-memory provider that approves every authorization at once (the resource
owner is ``user-1``) and keeps the RFC 8707 ``resource`` of each grant; an
RFC 7662 introspection endpoint, which the SDK leaves to the deployment, is
added beside them and answers only the resource server's own credentials.
Given a signing key, the provider issues JWT access tokens (RFC 9068) instead of
opaque ones, and ``/jwks`` publishes the key.
uvicorn serves it on 127.0.0.1 in a thread with its own event loop, so tests
on either anyio backend can use it over TCP.
"""

from __future__ import annotations

import base64
import hmac
import secrets
import socket
import threading
import time
from typing import Any

import jwt
import uvicorn
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.routes import create_auth_routes
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

__all__ = ("JWT_KID", "RS_CLIENT_ID", "RS_CLIENT_SECRET", "AuthServer", "MemoryProvider")

#: The scopes this authorization server grants.
SCOPES = ("mcp:read", "mcp:write")

#: The ``kid`` of the key that signs JWT access tokens.
JWT_KID = "as-key-1"

#: The resource server's credentials at the introspection endpoint.
RS_CLIENT_ID = "mcp-resource-server"
RS_CLIENT_SECRET = secrets.token_urlsafe(24)


class MemoryProvider:
    """An ``OAuthAuthorizationServerProvider`` that keeps everything in dictionaries."""

    def __init__(self, *, token_lifetime: int = 3600, jwt_key: Any = None) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.tokens: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.token_lifetime = token_lifetime
        self.introspections = 0
        #: With a private key (P-256), access tokens are JWTs (RFC 9068) signed by PyJWT,
        #: whose public key the app serves at ``/jwks``; without, they are opaque.
        self.jwt_key = jwt_key
        self.issuer = ""

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        # Every registered client may ask for every scope this AS knows (what it is
        # granted is decided per authorization): a later step-up is not refused
        # for scopes the client did not list when it registered.
        client_info.scope = " ".join(SCOPES)
        self.clients[client_info.client_id] = client_info

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        code = secrets.token_urlsafe(24)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject="user-1",
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access = secrets.token_urlsafe(32)
        refresh = secrets.token_urlsafe(32)
        expires = int(time.time()) + self.token_lifetime
        if self.jwt_key is not None:
            claims = {
                "iss": self.issuer,
                "sub": "user-1",
                "client_id": client_id,
                "scope": " ".join(scopes),
                "iat": int(time.time()),
                "exp": expires,
                "jti": secrets.token_urlsafe(12),
            }
            if resource is not None:
                claims["aud"] = resource
            headers = {"kid": JWT_KID, "typ": "at+jwt"}
            access = jwt.encode(claims, self.jwt_key, algorithm="ES256", headers=headers)
        self.tokens[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=expires,
            resource=resource,
            subject="user-1",
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject="user-1"
        )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.token_lifetime,
            scope=" ".join(scopes),
            refresh_token=refresh,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        assert client.client_id is not None
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(
        self,
        client: OAuthClientInformationFull,
        refresh_token: RefreshToken,
        scopes: list[str],
    ) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        assert client.client_id is not None
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.tokens.get(token)
        if found is None or (found.expires_at is not None and found.expires_at < time.time()):
            return None
        return found

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        self.tokens.pop(token.token, None)
        self.refresh.pop(token.token, None)

    async def exchange_identity_assertion(self, *args: Any, **kwargs: Any) -> OAuthToken:
        raise NotImplementedError


def _app(provider: MemoryProvider, issuer: str) -> Starlette:
    routes = create_auth_routes(
        provider,  # type: ignore[arg-type]
        AnyHttpUrl(issuer),
        client_registration_options=ClientRegistrationOptions(
            enabled=True, valid_scopes=list(SCOPES), default_scopes=["mcp:read"]
        ),
        revocation_options=RevocationOptions(enabled=True),
    )
    expected = "Basic " + base64.b64encode(f"{RS_CLIENT_ID}:{RS_CLIENT_SECRET}".encode()).decode()

    async def introspect(request: Request) -> JSONResponse:
        # RFC 7662 section 2.1: the endpoint is protected; only the resource server may ask.
        given = request.headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), expected.encode()):
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        form = await request.form()
        provider.introspections += 1
        found = await provider.load_access_token(str(form.get("token", "")))
        if found is None:
            return JSONResponse({"active": False})
        answer: dict[str, Any] = {
            "active": True,
            "client_id": found.client_id,
            "scope": " ".join(found.scopes),
            "exp": found.expires_at,
            "sub": found.subject,
            "token_type": "Bearer",
        }
        if found.resource is not None:
            answer["aud"] = found.resource
        return JSONResponse(answer)

    async def jwks(request: Request) -> JSONResponse:
        keys = []
        if provider.jwt_key is not None:
            public = jwt.algorithms.ECAlgorithm.to_jwk(provider.jwt_key.public_key(), as_dict=True)
            keys.append({**public, "kid": JWT_KID, "use": "sig", "alg": "ES256"})
        return JSONResponse({"keys": keys})

    routes.append(Route("/introspect", introspect, methods=["POST"]))
    routes.append(Route("/jwks", jwks, methods=["GET"]))
    return Starlette(routes=routes)


class AuthServer:
    """The authorization server under uvicorn in a thread (a context manager)."""

    def __init__(self, provider: MemoryProvider | None = None) -> None:
        self.provider = provider or MemoryProvider()
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.issuer = f"http://127.0.0.1:{self.port}"
        # The issuer as the metadata spells it (pydantic adds the slash), for JWT ``iss``.
        self.provider.issuer = self.issuer + "/"
        config = uvicorn.Config(
            _app(self.provider, self.issuer), log_level="warning", lifespan="off"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._sock]}, daemon=True
        )

    @property
    def introspection_url(self) -> str:
        return self.issuer + "/introspect"

    def __enter__(self) -> AuthServer:
        self._thread.start()
        deadline = time.monotonic() + 15
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the authorization server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.should_exit = True
        self._thread.join(15)
        self._sock.close()
