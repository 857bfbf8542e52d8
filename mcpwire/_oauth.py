"""MCP client authorization (OAuth 2.1): the flow, token storage, redirect handlers.

Theory of operation
-------------------
``OAuthClient`` is what ``Client.http(url, auth=...)`` takes. The HTTP client
of the transport (``AuthorizedHTTPClient``, in ``_http_client_auth``) asks it
for the bearer token of every request to the MCP server's origin and calls
``challenge`` when the server answers ``401``, or ``403`` with
``error="insufficient_scope"`` (RFC 6750 §3.1); the request is sent again
once the flow has a new token.

A flow, in the order of the spec (``basic/authorization``, 2025-11-25):

1. Refresh (RFC 6749 §6) when a refresh token is held and the answer was a
   plain ``401``: cheapest, and no user interaction.
2. Discovery: protected resource metadata, its ``resource`` checked against
   the server (RFC 9728 §3.3), then the metadata of its first authorization
   server, its ``issuer`` checked (RFC 8414 §3.3). A server with no resource
   metadata is a 2025-03-26 one: its origin is the authorization server, with
   metadata at the root or else the default endpoints.
3. A client identity for that issuer: the pre-registered one, else a Client
   ID Metadata Document URL when the server supports those, else dynamic
   registration (RFC 7591). Identities are kept per issuer, so a server that
   moves to another authorization server never sees the old one's (SEP-2352).
4. The grant: authorization code with PKCE S256 (RFC 7636) through the
   ``redirect_handler``, whose answer is checked for ``state`` and ``iss``
   (RFC 9207); client credentials; or a JWT bearer assertion (RFC 7523) that
   an ``AssertionProvider`` obtains. Every token request names the resource
   (RFC 8707), so the token is minted for this server alone, and
   authenticates the client: with its secret, or with a ``private_key_jwt``
   assertion (RFC 7523 §2.2) its ``client_assertion_signer`` signs. With
   ``dpop``, token requests carry DPoP proofs and the token is bound to the
   client's key (RFC 9449; ``_oauth_dpop``). Signing needs ``cryptography``
   (``pip install 'mcpwire[jwt]'``; ``_jose``).

Flows are serialized by a lock: requests that fail together wait for one flow
and then use its token. Bodies are read with a size limit, every exchange has
a timeout, and a step-up is not repeated for scopes already asked for.
"""

from __future__ import annotations

import base64
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Literal
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import anyio
import orjson

from ._errors import AuthorizationError
from ._http_client_conn import HTTPClient
from ._http_client_net import URL
from ._http_client_sock import HTTPError
from ._jose import CLIENT_ASSERTION_TYPE, ES256Signer, JWTSigner, client_assertion
from ._oauth_discovery import Fetch, Server, discover, exchange
from ._oauth_dpop import DPoPProver, wants_nonce_token
from ._oauth_storage import ClientInfo, InMemoryTokenStorage, OAuthTokens, TokenStorage
from .sansio import _oauth as o

__all__ = (
    "JWT_BEARER",
    "AssertionProvider",
    "ClientInfo",
    "Fetch",
    "InMemoryTokenStorage",
    "OAuthClient",
    "OAuthTokens",
    "RedirectHandler",
    "TokenStorage",
    "headless_redirect_handler",
)

logger = logging.getLogger("mcpwire.oauth")

#: The grant type of RFC 7523 §2.1.
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"

#: Seconds before ``expires_in`` runs out at which a token is renewed.
EXPIRY_MARGIN = 30.0

#: Given the authorization URL, bring the user agent there and return the URL
#: the authorization server redirected it to (the ``redirect_uri`` with
#: ``code``, ``state`` and possibly ``iss`` in its query).
RedirectHandler = Callable[[str], Awaitable[str]]
#: Given the authorization server's issuer and the resource (RFC 8707), an
#: assertion for the RFC 7523 JWT bearer grant: a workload identity token
#: (SEP-1933), or an identity assertion grant obtained from an enterprise
#: identity provider by token exchange (SEP-990, RFC 8693).
AssertionProvider = Callable[[str, str], Awaitable[str]]


def headless_redirect_handler(*, timeout: float = 30.0, verify: bool = True) -> RedirectHandler:
    """A ``RedirectHandler`` that GETs the authorization URL and returns the
    ``Location`` it redirects to, with no user in the loop.

    For authorization servers that grant at once (test servers, the
    conformance suite); a real one shows a login page instead, for which an
    application passes a handler that opens a browser and waits for the
    redirect to its ``redirect_uri``.
    """

    async def follow(authorization_url: str) -> str:
        url = URL.parse(authorization_url)
        http = HTTPClient(verify=verify)
        try:
            # The redirect is the answer here: read, not followed.
            response = await http.request("GET", url, timeout=timeout, follow_redirects=False)
            async with response:
                location = response.header("location")
                if response.status not in (301, 302, 303, 307, 308) or not location:
                    raise AuthorizationError(
                        f"the authorization endpoint answered HTTP {response.status} "
                        "without redirecting"
                    )
                return url.join(location).raw
        except HTTPError as exc:
            raise AuthorizationError(f"cannot reach the authorization endpoint: {exc}") from None
        except ValueError as exc:
            raise AuthorizationError(f"the authorization redirect is invalid: {exc}") from None
        finally:
            await http.aclose()

    return follow


class OAuthClient:
    """Authorization for ``Client.http`` (see the module docstring).

    Args:
        redirect_handler: runs the authorization code grant's user step (see
            ``RedirectHandler``); required for that grant.
        redirect_uri: where the authorization server sends the user back.
        client_name: the name registered dynamically.
        client_id: a pre-registered client (with ``client_secret`` for a
            confidential one); used at every authorization server.
        client_metadata_url: an HTTPS URL serving this client's metadata
            document, used as the client ID where the server supports that.
        grant: ``authorization_code``; ``client_credentials`` (needs
            ``client_id`` and ``client_secret``); or ``jwt_bearer`` (RFC 7523,
            needs ``client_id`` and ``assertion``).
        assertion: for ``jwt_bearer``: where the assertion comes from.
        scopes: scopes to ask for instead of the spec's selection.
        offline_access: ask for ``offline_access`` (a refresh token) when the
            authorization server lists it.
        storage: where tokens and client identities are kept.
        timeout: seconds for each exchange with the authorization server.
        application_type: sent with dynamic registration (SEP-837).
        client_assertion_signer: signs ``private_key_jwt`` client assertions
            (with ``client_id``), used where the server lists that method.
        dpop: bind tokens to a key with DPoP (RFC 9449): True for a key made
            now (ES256), or the ``JWTSigner`` of a key to use.
    """

    def __init__(
        self,
        *,
        redirect_handler: RedirectHandler | None = None,
        redirect_uri: str = "http://localhost:3000/callback",
        client_name: str = "mcpwire",
        client_id: str | None = None,
        client_secret: str | None = None,
        client_metadata_url: str | None = None,
        grant: Literal["authorization_code", "client_credentials", "jwt_bearer"] = (
            "authorization_code"
        ),
        assertion: AssertionProvider | None = None,
        scopes: list[str] | None = None,
        offline_access: bool = True,
        storage: TokenStorage | None = None,
        timeout: float = 30.0,
        application_type: str = "native",
        client_assertion_signer: JWTSigner | None = None,
        dpop: bool | JWTSigner = False,
    ) -> None:
        if grant == "authorization_code" and redirect_handler is None:
            raise ValueError("the authorization_code grant needs a redirect_handler")
        secret = client_secret is not None or client_assertion_signer is not None
        if grant == "client_credentials" and (client_id is None or not secret):
            needs = "client_id and client_secret (or client_assertion_signer)"
            raise ValueError(f"the client_credentials grant needs {needs}")
        if grant == "jwt_bearer" and (client_id is None or assertion is None):
            raise ValueError("the jwt_bearer grant needs client_id and assertion")
        self.assertion = assertion
        self.redirect_handler = redirect_handler
        self.redirect_uri = redirect_uri
        self.client_name = client_name
        self.client_id = client_id
        self.client_secret = client_secret
        self.client_metadata_url = client_metadata_url
        self.grant = grant
        self.scopes = scopes
        self.offline_access = offline_access
        self.storage: TokenStorage = storage if storage is not None else InMemoryTokenStorage()
        self.timeout = timeout
        self.application_type = application_type
        self.client_assertion_signer = client_assertion_signer
        self.dpop: DPoPProver | None = None
        if dpop is not False:
            self.dpop = DPoPProver(ES256Signer.generate() if dpop is True else dpop)
        self._lock = anyio.Lock()
        self._tokens: OAuthTokens | None = None
        self._loaded = False
        self._server: Server | None = None
        self._client: ClientInfo | None = None

    # -- what the HTTP client asks -------------------------------------------------------

    @property
    def token_type(self) -> str:
        """``DPoP`` when the current token is bound to ``dpop``'s key, else ``Bearer``."""
        tokens = self._tokens
        return tokens.token_type if tokens is not None else "Bearer"

    async def token(self, fetch: Fetch, server_url: str) -> str | None:
        """The access token to send to ``server_url`` now (refreshed first if it
        has expired)."""
        if not self._loaded:
            stored = await self.storage.get_tokens()
            self._loaded = True
            try:
                # A token minted for another resource (RFC 8707) is not sent here.
                if stored is not None:
                    o.check_resource(stored.resource, server_url)
                    self._check_binding(stored)
                    self._tokens = stored
            except AuthorizationError as exc:
                logger.info("stored tokens left unused: %s", exc)
        tokens = self._tokens
        if tokens is not None and tokens.expired():
            async with self._lock:
                if self._tokens is tokens and tokens.refresh_token and self._server:
                    try:
                        await self._refresh(fetch, tokens)
                    except AuthorizationError as exc:
                        logger.info("token refresh failed: %s", exc)
            tokens = self._tokens
        return tokens.access_token if tokens is not None else None

    def _check_binding(self, stored: OAuthTokens) -> None:
        """A stored DPoP token is only good with the key it is bound to (RFC 9449 §6):
        held by another process's key, or by none, it would be refused with a 401, and a
        bound refresh token cannot be used either; the flow starts over instead."""
        if stored.token_type.lower() != "dpop":
            return
        mine = self.dpop.jkt if self.dpop is not None else None
        if mine is None or stored.dpop_jkt != mine:
            raise AuthorizationError("the stored DPoP token is bound to another key")

    async def challenge(
        self, fetch: Fetch, server_url: str, status: int, headers: list[str], sent: str | None
    ) -> bool:
        """Answer a ``401`` or ``403`` challenge; False when trying again is pointless
        (a step-up for scopes already asked for).

        Raises:
            AuthorizationError: the flow failed (the message says where).
        """
        params = o.bearer_params(headers)
        async with self._lock:
            current = self._tokens
            if current is not None and current.access_token != sent and status == 401:
                return True  # another request's flow already got a new token
            if status == 403:
                wanted = (params.get("scope") or "").split()
                asked = current.scopes if current is not None else []
                if not wanted or set(wanted) <= set(asked):
                    return False
                await self._authorize(fetch, server_url, params, step_up=True)
                return True
            if current is not None and current.refresh_token:
                try:
                    if self._server is None:
                        # Tokens from storage, kept by an earlier process: find
                        # their authorization server before refreshing there.
                        server = await self._discover(
                            fetch, server_url, params.get("resource_metadata")
                        )
                        self._client = await self._identity(fetch, server)
                        self._server = server
                    await self._refresh(fetch, current)
                    return True
                except AuthorizationError as exc:
                    logger.info("token refresh failed, authorizing anew: %s", exc)
            await self._authorize(fetch, server_url, params, step_up=False)
            return True

    # -- the flow -------------------------------------------------------------------------

    async def _authorize(
        self, fetch: Fetch, server_url: str, params: Mapping[str, str], *, step_up: bool
    ) -> None:
        server = await self._discover(fetch, server_url, params.get("resource_metadata"))
        previous = self._tokens
        if previous is not None and previous.issuer != server.issuer:
            previous = None  # another authorization server: nothing carries over
        scopes = self.scopes
        if scopes is None:
            scopes = o.select_scopes(
                params.get("scope"),
                server.resource_scopes,
                o.string_list(server.metadata, "scopes_supported"),
                previous.scopes if (step_up and previous is not None) else (),
                offline=self.offline_access and self.grant == "authorization_code",
            )
        client = await self._identity(fetch, server)
        self._server, self._client = server, client
        if self.grant == "client_credentials":
            fields: dict[str, str | None] = {"grant_type": "client_credentials"}
        elif self.grant == "jwt_bearer":
            assert self.assertion is not None  # checked in __init__
            fields = {
                "grant_type": JWT_BEARER,
                "assertion": await self.assertion(server.issuer, server.resource),
            }
        else:
            code, verifier = await self._authorization_code(server, client, scopes)
            fields = {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": self.redirect_uri,
                "code_verifier": verifier,
            }
        fields["scope"] = (
            " ".join(scopes) if scopes and self.grant != "authorization_code" else None
        )
        answer = await self._token_request(fetch, server, client, fields)
        await self._keep(answer, server, scopes, previous_refresh=None)

    async def _refresh(self, fetch: Fetch, tokens: OAuthTokens) -> None:
        server, client = self._server, self._client
        if server is None or client is None or server.issuer != tokens.issuer:
            raise AuthorizationError("no authorization server known for refreshing")
        fields: dict[str, str | None] = {
            "grant_type": "refresh_token",
            "refresh_token": tokens.refresh_token,
        }
        answer = await self._token_request(fetch, server, client, fields)
        await self._keep(answer, server, tokens.scopes, previous_refresh=tokens.refresh_token)

    async def _keep(
        self,
        answer: o.TokenResponse,
        server: Server,
        scopes: list[str],
        *,
        previous_refresh: str | None,
    ) -> None:
        expires = None
        if answer.expires_in is not None:
            # Renewed a little early, so a request never carries a token that
            # runs out on its way; by at most half its life, for short ones.
            life = answer.expires_in
            expires = time.time() + life - min(EXPIRY_MARGIN, life / 2)
        tokens = OAuthTokens(
            answer.access_token,
            server.issuer,
            server.resource,
            # RFC 6749 §6: a refresh answer may leave the old refresh token in force.
            answer.refresh_token or previous_refresh,
            expires,
            scopes,
            answer.token_type,
            self.dpop.jkt if self.dpop is not None and answer.token_type == "DPoP" else None,
        )
        self._tokens = tokens
        await self.storage.set_tokens(tokens)

    async def _discover(
        self, fetch: Fetch, server_url: str, resource_metadata: str | None
    ) -> Server:
        # 2025-03-26 servers did not yet have to list their PKCE methods (see discover).
        pkce = self.grant == "authorization_code"
        return await discover(fetch, server_url, resource_metadata, self.timeout, pkce=pkce)

    async def _identity(self, fetch: Fetch, server: Server) -> ClientInfo:
        supported = o.string_list(server.metadata, "token_endpoint_auth_methods_supported")
        if self.client_id is not None:
            method = "none"
            listed = supported is not None and "private_key_jwt" in supported
            unlisted = supported is None and self.client_secret is None
            signs = self._assertion_alg_taken(server)
            if self.client_assertion_signer is not None and (listed or unlisted) and signs:
                method = "private_key_jwt"
            elif self.client_secret is not None:
                # RFC 8414 §2: client_secret_basic when the server lists nothing.
                basic = supported is None or "client_secret_basic" in supported
                method = "client_secret_basic" if basic else "client_secret_post"
            if method == "none" and self.client_assertion_signer is not None and not signs:
                raise AuthorizationError(
                    f"{server.issuer} takes no client assertion signed with "
                    f"{self.client_assertion_signer.alg} (token_endpoint_auth_signing_alg_"
                    "values_supported), and no client_secret was given"
                )
            return ClientInfo(self.client_id, self.client_secret, method)
        known = await self.storage.get_client(server.issuer)
        if known is not None:
            return known
        cimd = server.metadata.get("client_id_metadata_document_supported") is True
        if cimd and self.client_metadata_url is not None:
            info = ClientInfo(self.client_metadata_url)
        else:
            info = await self._register(fetch, server, supported)
        await self.storage.set_client(server.issuer, info)
        return info

    def _assertion_alg_taken(self, server: Server) -> bool:
        """Whether the server verifies client assertions signed with our signer's
        ``alg`` (RFC 8414 §2: a list, when given, names the algorithms it takes)."""
        signer = self.client_assertion_signer
        algs = o.string_list(server.metadata, "token_endpoint_auth_signing_alg_values_supported")
        return signer is not None and (algs is None or signer.alg in algs)

    async def _register(
        self, fetch: Fetch, server: Server, supported: list[str] | None
    ) -> ClientInfo:
        """Dynamic client registration (RFC 7591 §3)."""
        endpoint = server.metadata.get("registration_endpoint")
        if not isinstance(endpoint, str):
            raise AuthorizationError(
                f"{server.issuer} offers no registration and no client_id was given"
            )
        wanted = "none"
        if supported is not None and "none" not in supported:
            wanted = next(
                (m for m in ("client_secret_basic", "client_secret_post") if m in supported),
                "none",
            )
        signer = self.client_assertion_signer
        listed = supported is not None and "private_key_jwt" in supported
        if signer is not None and listed and self._assertion_alg_taken(server):
            wanted = "private_key_jwt"  # RFC 7591 §2: with the key that verifies it
        grants = ["authorization_code", "refresh_token"]
        request: dict[str, object] = {
            "client_name": self.client_name,
            "redirect_uris": [self.redirect_uri],
            "grant_types": grants,
            "response_types": ["code"],
            "token_endpoint_auth_method": wanted,
            "application_type": self.application_type,
        }
        if signer is not None and wanted == "private_key_jwt":
            request["jwks"] = {"keys": [signer.public_jwk()]}
        headers = [("Content-Type", "application/json"), ("Accept", "application/json")]
        answer = await exchange(
            fetch, "POST", endpoint, headers, orjson.dumps(request), self.timeout
        )
        status, _, data = answer
        if status not in (200, 201):
            raise AuthorizationError(f"dynamic client registration refused: HTTP {status}")
        doc = o.json_object(data, "the registration response")
        client_id = doc.get("client_id")
        if not isinstance(client_id, str) or not client_id:
            raise AuthorizationError("the registration response has no client_id")
        secret = doc.get("client_secret")
        secret = secret if isinstance(secret, str) else None
        method = doc.get("token_endpoint_auth_method")
        if not isinstance(method, str):
            method = "client_secret_basic" if secret else "none"
        return ClientInfo(client_id, secret, method)

    async def _authorization_code(
        self, server: Server, client: ClientInfo, scopes: list[str]
    ) -> tuple[str, str]:
        """The user step: PKCE (RFC 7636) and state, then the checked answer."""
        verifier, challenge = o.pkce_pair()
        state = secrets.token_urlsafe(32)
        endpoint = server.metadata["authorization_endpoint"]
        assert isinstance(endpoint, str)  # check_as_metadata / fallback_endpoints
        query = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": self.redirect_uri,
            "state": state,
            "code_challenge": challenge,
            "code_challenge_method": "S256",
            "resource": server.resource,
        }
        if scopes:
            query["scope"] = " ".join(scopes)
        sep = "&" if urlsplit(endpoint).query else "?"
        handler = self.redirect_handler
        assert handler is not None  # checked in __init__
        landed = await handler(endpoint + sep + urlencode(query))
        pairs = parse_qsl(urlsplit(landed).query, keep_blank_values=True)
        answer = dict(pairs)
        if len(answer) != len(pairs):  # which copy of state or iss would count?
            raise AuthorizationError(
                "the authorization response gives a parameter more than once (RFC 6749 §3.1)"
            )
        if answer.get("state") != state:
            raise AuthorizationError("the authorization response's state does not match")
        if "error" in answer:
            described = answer.get("error_description", "")
            raise AuthorizationError(f"authorization refused: {answer['error']} {described}")
        o.check_iss(answer, server.issuer, server.metadata)
        code = answer.get("code")
        if not code:
            raise AuthorizationError("the authorization response has no code")
        return code, verifier

    async def _token_request(
        self, fetch: Fetch, server: Server, client: ClientInfo, fields: dict[str, str | None]
    ) -> o.TokenResponse:
        endpoint = server.metadata["token_endpoint"]
        assert isinstance(endpoint, str)  # check_as_metadata / fallback_endpoints
        fields["resource"] = server.resource
        headers = [
            ("Content-Type", "application/x-www-form-urlencoded"),
            ("Accept", "application/json"),
        ]
        method = client.token_endpoint_auth_method
        # The client_id names the client in every case (RFC 6749 §4.1.3 needs it
        # from public clients, and some servers look for it even with Basic);
        # the secret travels one way only (§2.3: one authentication method).
        fields["client_id"] = client.client_id
        if method == "client_secret_basic" and client.client_secret is not None:
            # RFC 6749 §2.3.1: each part form-encoded before the Basic encoding.
            pair = f"{quote(client.client_id, safe='')}:{quote(client.client_secret, safe='')}"
            headers.append(("Authorization", "Basic " + base64.b64encode(pair.encode()).decode()))
        elif method == "client_secret_post":
            fields["client_secret"] = client.client_secret
        signer = self.client_assertion_signer if method == "private_key_jwt" else None
        dpop = self.dpop if self.dpop is not None and self.dpop.usable_at(server.metadata) else None
        for attempt in (1, 2):
            # Assertion and proof are made per attempt: each has its own jti.
            if signer is not None:
                fields["client_assertion_type"] = CLIENT_ASSERTION_TYPE
                fields["client_assertion"] = client_assertion(
                    signer, client.client_id, server.issuer
                )
            sent = headers if dpop is None else [*headers, ("DPoP", dpop.proof("POST", endpoint))]
            body = o.form_body(fields)
            status, answer, data = await exchange(fetch, "POST", endpoint, sent, body, self.timeout)
            fresh = dpop is not None and dpop.note(endpoint, answer)
            if not (fresh and attempt == 1 and wants_nonce_token(status, data)):
                break  # RFC 9449 §8: once more only when asked for a nonce it gave
        return o.parse_token_response(status, data, dpop=dpop is not None)
