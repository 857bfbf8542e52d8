"""MCP authorization end to end, with real peers on both sides of mcpwire's protected server.

The authorization server is the reference SDK's (``mcp.server.auth`` routes
over an in-memory provider, plus an RFC 7662 introspection endpoint; see
``http_auth_as``), under uvicorn on 127.0.0.1. The client is the reference
SDK's ``Client`` with its ``OAuthClientProvider``: it meets the 401, reads
our Protected Resource Metadata, discovers the AS, registers dynamically,
runs the authorization code flow with PKCE and the RFC 8707 ``resource``
(headless: the redirect handler performs the GET on the authorization URL
and hands the code to the callback handler), and retries with its token.
mcpwire checks every token with ``IntrospectionVerifier`` against that AS.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import orjson
import pytest
from http_auth_as import RS_CLIENT_ID, RS_CLIENT_SECRET, AuthServer
from http_raw import client, init_body, running
from mcp.server.auth.provider import AccessToken as SdkAccessToken
from test_http_auth import guarded_app

from mcpwire import (
    HTTPServer,
    IntrospectionError,
    IntrospectionVerifier,
    ResourceServerAuth,
)

pytestmark = pytest.mark.anyio

SCOPES = ["mcp:read", "mcp:write"]


@pytest.fixture(scope="module")
def auth_server() -> Iterator[AuthServer]:
    with AuthServer() as server:
        yield server


def verifier(auth_server: AuthServer, **options: Any) -> IntrospectionVerifier:
    return IntrospectionVerifier(
        auth_server.introspection_url,
        client_id=RS_CLIENT_ID,
        client_secret=RS_CLIENT_SECRET,
        **options,
    )


@asynccontextmanager
async def protected(
    auth_server: AuthServer,
    check: IntrospectionVerifier | None = None,
    operation_scopes: dict[str, list[str]] | None = None,
    **options: Any,
) -> AsyncIterator[HTTPServer]:
    check = check or verifier(auth_server)
    auth = ResourceServerAuth(
        check,
        operation_scopes=operation_scopes,
        # The issuer exactly as the AS's metadata spells it (pydantic adds the slash).
        authorization_servers=[auth_server.issuer + "/"],
        scopes_supported=SCOPES,
        required_scopes=["mcp:read"],
    )
    try:
        async with running(guarded_app(), auth=auth, **options) as http:
            yield http
    finally:
        await check.aclose()


def grant(auth_server: AuthServer, resource: str | None, **fields: Any) -> str:
    """A token issued by the AS directly (as if a flow had run), for the verifier rules."""
    token = f"tok-{time.monotonic_ns()}"
    values: dict[str, Any] = {
        "token": token,
        "client_id": "client-x",
        "scopes": SCOPES,
        "expires_at": int(time.time()) + 600,
        "resource": resource,
        "subject": "user-1",
    }
    values.update(fields)
    auth_server.provider.tokens[token] = SdkAccessToken(**values)
    return token


async def post_init(port: int, token: str) -> int:
    async with client(port) as raw:
        reply = await raw.request(body=init_body(), headers={"authorization": f"Bearer {token}"})
        return reply.status


# =================================================================================================
# The reference SDK's OAuth client, the whole flow
# =================================================================================================


class MemoryStorage:
    """The reference client's ``TokenStorage``, in memory."""

    def __init__(self) -> None:
        self.tokens: Any = None
        self.client_info: Any = None

    async def get_tokens(self) -> Any:
        return self.tokens

    async def set_tokens(self, tokens: Any) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> Any:
        return self.client_info

    async def set_client_info(self, client_info: Any) -> None:
        self.client_info = client_info


def oauth_provider(url: str, storage: MemoryStorage) -> Any:
    """The reference SDK's ``OAuthClientProvider`` for ``url``, headless."""
    import httpx2
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.shared.auth import OAuthClientMetadata

    redirected: dict[str, str | None] = {}

    async def redirect_handler(authorization_url: str) -> None:
        # Headless "browser": the AS approves at once and redirects to our callback.
        async with httpx2.AsyncClient() as browser:
            answer = await browser.get(authorization_url, follow_redirects=False)
        assert answer.status_code in (302, 303), answer.text
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(answer.headers["location"]).query)
        assert "code" in query, query
        redirected["code"] = query["code"][0]
        redirected["state"] = query.get("state", [None])[0]
        redirected["iss"] = query.get("iss", [None])[0]

    async def callback_handler() -> AuthorizationCodeResult:
        code = redirected["code"]
        assert code is not None
        return AuthorizationCodeResult(code=code, state=redirected["state"], iss=redirected["iss"])

    return OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            redirect_uris=["http://127.0.0.1:9/callback"],
            client_name="mcpwire interop test",
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=storage,
        redirect_handler=redirect_handler,
        callback_handler=callback_handler,
    )


@asynccontextmanager
async def sdk_oauth_client(
    url: str, storage: MemoryStorage, mode: str = "auto"
) -> AsyncIterator[Any]:
    """The reference SDK's client over streamable HTTP, authorizing with
    ``oauth_provider`` (its whole OAuth flow) into ``storage``."""
    import httpx2
    from mcp import Client as SdkClient
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(auth=oauth_provider(url, storage), timeout=15) as web,
        SdkClient(
            streamable_http_client(url, http_client=web),
            mode=mode,  # type: ignore[arg-type]
            read_timeout_seconds=15,
            cache=None,
        ) as mcp_client,
    ):
        yield mcp_client


async def exercise(mcp_client: Any, storage: MemoryStorage) -> None:
    for tool in ("whoami", "whoami_later"):
        result = await mcp_client.call_tool(tool, {})
        seen = orjson.loads(result.content[0].text)
        assert seen["client"] == storage.client_info.client_id
        assert seen["subject"] == "user-1"
        assert "mcp:read" in seen["scopes"]


# SDK deviation: on trio, httpx2 inside the SDK client leaves async generators
# unfinished when a stream is closed, and trio reports them when they are collected.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_reference_client_completes_the_oauth_flow(
    anyio_backend: str, auth_server: AuthServer, mode: str
) -> None:
    """Streamable HTTP: a legacy session, and the modern era ("auto" probes it first)."""

    storage = MemoryStorage()
    async with protected(auth_server) as http:
        url = f"http://127.0.0.1:{http.port}/mcp"
        with anyio.fail_after(60):
            async with sdk_oauth_client(url, storage, mode) as mcp_client:
                await exercise(mcp_client, storage)
        # The token was issued for this server (RFC 8707), and we checked it with the AS.
        issued = auth_server.provider.tokens[storage.tokens.access_token]
        assert issued.resource == url
        assert auth_server.provider.introspections >= 1


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # see above
async def test_reference_client_steps_up_on_insufficient_scope(
    anyio_backend: str, auth_server: AuthServer
) -> None:
    """authorization.mdx, "Step-Up Authorization Flow": the first token holds the
    challenged ``mcp:read``; a tool that needs ``mcp:write`` gets 403
    ``insufficient_scope``, the client re-authorizes for both and retries."""

    storage = MemoryStorage()
    operations = {"tools/call:whoami_later": ["mcp:write"]}
    async with protected(auth_server, operation_scopes=operations) as http:
        url = f"http://127.0.0.1:{http.port}/mcp"
        with anyio.fail_after(60):
            async with sdk_oauth_client(url, storage, "legacy") as mcp_client:
                first = await mcp_client.call_tool("whoami", {})
                assert orjson.loads(first.content[0].text)["scopes"] == ["mcp:read"]  # type: ignore[union-attr]
                stepped = await mcp_client.call_tool("whoami_later", {})
                seen = orjson.loads(stepped.content[0].text)  # type: ignore[union-attr]
                assert sorted(seen["scopes"]) == SCOPES
        assert sorted(storage.tokens.scope.split()) == SCOPES


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # see above
async def test_reference_sse_client_completes_the_oauth_flow(
    anyio_backend: str, auth_server: AuthServer
) -> None:
    """The deprecated HTTP+SSE transport: /sse and /messages are protected resources too."""
    from mcp import Client as SdkClient
    from mcp.client.sse import sse_client

    storage = MemoryStorage()
    async with protected(auth_server, legacy_sse=True) as http:
        url = f"http://127.0.0.1:{http.port}/sse"
        with anyio.fail_after(60):
            async with SdkClient(
                sse_client(url, auth=oauth_provider(url, storage)),
                mode="legacy",
                read_timeout_seconds=15,
                cache=None,
            ) as mcp_client:
                await exercise(mcp_client, storage)
        issued = auth_server.provider.tokens[storage.tokens.access_token]
        assert issued.resource == url


# =================================================================================================
# mcpwire's own OAuth client against the same server and AS
# =================================================================================================


@pytest.mark.parametrize(("mode", "era"), [("legacy", "legacy"), ("auto", "modern")])
async def test_mcpwire_client_completes_the_oauth_flow(
    anyio_backend: str, auth_server: AuthServer, mode: str, era: str
) -> None:
    from mcpwire import Client, OAuthClient, headless_redirect_handler

    async with protected(auth_server) as http:
        url = f"http://127.0.0.1:{http.port}/mcp"
        oauth = OAuthClient(
            redirect_handler=headless_redirect_handler(),
            redirect_uri="http://127.0.0.1:9/callback",
        )
        with anyio.fail_after(60):
            async with Client.http(url, auth=oauth, mode=mode) as mcp_client:
                assert mcp_client.era == era
                for tool in ("whoami", "whoami_later"):
                    result = await mcp_client.call_tool(tool, {})
                    seen = orjson.loads(result.content[0].text or "")
                    assert seen["subject"] == "user-1" and "mcp:read" in seen["scopes"]


# =================================================================================================
# IntrospectionVerifier's rules, against the same AS
# =================================================================================================


async def test_introspection_accepts_a_token_for_this_resource(
    anyio_backend: str, auth_server: AuthServer
) -> None:
    async with protected(auth_server) as http:
        port = http.port or 0
        token = grant(auth_server, f"http://127.0.0.1:{port}/mcp")
        assert await post_init(port, token) == 200


async def test_introspection_refuses_another_resource_or_no_audience(
    anyio_backend: str, auth_server: AuthServer
) -> None:
    """RFC 8707 / authorization.mdx: only tokens issued for this server (no passthrough)."""
    async with protected(auth_server) as http:
        port = http.port or 0
        other = grant(auth_server, "http://127.0.0.1:1/mcp")
        assert await post_init(port, other) == 401
        unbound = grant(auth_server, None)
        assert await post_init(port, unbound) == 401


async def test_introspection_refuses_inactive_and_expired_tokens(
    anyio_backend: str, auth_server: AuthServer
) -> None:
    async with protected(auth_server) as http:
        port = http.port or 0
        assert await post_init(port, "never-issued") == 401
        resource = f"http://127.0.0.1:{port}/mcp"
        expired = grant(auth_server, resource, expires_at=int(time.time()) - 5)
        assert await post_init(port, expired) == 401
        narrow = grant(auth_server, resource, scopes=["mcp:write"])
        assert await post_init(port, narrow) == 403


async def test_introspection_answers_are_cached_and_bounded(
    anyio_backend: str, auth_server: AuthServer
) -> None:
    check = verifier(auth_server, cache_size=2)
    async with protected(auth_server, check) as http:
        port = http.port or 0
        resource = f"http://127.0.0.1:{port}/mcp"
        tokens = [grant(auth_server, resource) for _ in range(3)]
        for _ in range(3):
            assert await post_init(port, tokens[0]) == 200
        assert check.requests == 1
        for token in tokens:
            assert await post_init(port, token) == 200
        assert check.requests == 3
        assert len(check._cache) == 2  # the oldest answer was dropped
        assert await post_init(port, tokens[0]) == 200
        assert check.requests == 4


async def test_without_a_cache_revocation_takes_effect_at_once(
    anyio_backend: str, auth_server: AuthServer
) -> None:
    check = verifier(auth_server, cache_ttl=0)
    async with protected(auth_server, check) as http:
        port = http.port or 0
        token = grant(auth_server, f"http://127.0.0.1:{port}/mcp")
        assert await post_init(port, token) == 200
        del auth_server.provider.tokens[token]
        assert await post_init(port, token) == 401


async def test_introspection_failures_are_503_not_401(
    anyio_backend: str, auth_server: AuthServer
) -> None:
    wrong = IntrospectionVerifier(
        auth_server.introspection_url, client_id=RS_CLIENT_ID, client_secret="wrong"
    )
    async with protected(auth_server, wrong) as http:
        port = http.port or 0
        token = grant(auth_server, f"http://127.0.0.1:{port}/mcp")
        assert await post_init(port, token) == 503
    direct = IntrospectionVerifier(
        auth_server.introspection_url, client_id=RS_CLIENT_ID, client_secret="wrong"
    )
    unreachable = IntrospectionVerifier("http://127.0.0.1:9/introspect", timeout=2)
    try:
        with pytest.raises(IntrospectionError, match="HTTP 401"):
            await direct.verify(token)
        with pytest.raises(IntrospectionError):
            await unreachable.verify(token)
    finally:
        await direct.aclose()
        await unreachable.aclose()


def test_introspection_endpoint_must_be_https() -> None:
    with pytest.raises(ValueError, match="https"):
        IntrospectionVerifier("http://auth.example.com/introspect")
    with pytest.raises(ValueError, match="both"):
        IntrospectionVerifier("https://auth.example.com/introspect", client_id="x")
    IntrospectionVerifier("https://auth.example.com/introspect")


@pytest.mark.parametrize("aud", ["", [""], [None, ""], 7])
async def test_an_empty_or_malformed_audience_is_no_audience(anyio_backend: str, aud: Any) -> None:
    """``aud: ""`` names no resource: with ``require_audience`` the token is refused."""
    from http_client.rawserver import Reply, Seen, raw_server

    async def answer(seen: Seen) -> Reply:
        return Reply.json({"active": True, "client_id": "c", "scope": "mcp:read", "aud": aud})

    async with raw_server(answer) as server:
        check = IntrospectionVerifier(f"http://127.0.0.1:{server.port}/introspect")
        try:
            assert await check.verify("some-token") is None
            check.require_audience = False
            found = await check.verify("some-token")
            assert found is not None and found.audience == ()
        finally:
            await check.aclose()
