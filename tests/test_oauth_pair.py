"""mcpwire's OAuth client against mcpwire's protected server, the reference SDK's
authorization server between them (``http_auth_as``: its ``mcp.server.auth``
routes under uvicorn, with RFC 7662 introspection).

The two halves were written against the spec separately; this is where they
meet: the 401 and its metadata, discovery, dynamic registration, PKCE, the
RFC 8707 resource, introspection with the audience check, a step-up on 403
``insufficient_scope``, refresh, and the handler seeing who called, in both
protocol eras and over the deprecated HTTP+SSE transport.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import orjson
import pytest
from http_auth_as import AuthServer, MemoryProvider
from test_http_auth_interop import SCOPES, protected, verifier

from mcpwire import Client, InMemoryTokenStorage, OAuthClient, headless_redirect_handler

pytestmark = pytest.mark.anyio


class Counting(MemoryProvider):
    """The test authorization server's provider, counting authorization requests."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.authorizations = 0

    async def authorize(self, client: Any, params: Any) -> str:
        self.authorizations += 1
        return await super().authorize(client, params)


@pytest.fixture(scope="module")
def auth_server() -> Iterator[AuthServer]:
    with AuthServer(Counting()) as server:
        yield server


@pytest.fixture(scope="module")
def short_lived() -> Iterator[AuthServer]:
    """Access tokens that expire after two seconds."""
    with AuthServer(Counting(token_lifetime=2)) as server:
        yield server


def authorizations(server: AuthServer) -> int:
    provider = server.provider
    assert isinstance(provider, Counting)
    return provider.authorizations


def oauth(storage: InMemoryTokenStorage | None = None) -> OAuthClient:
    return OAuthClient(redirect_handler=headless_redirect_handler(), storage=storage)


async def whoami(client: Client, tool: str = "whoami") -> dict[str, object]:
    result = await client.call_tool(tool, {})
    text = result.content[0].text  # type: ignore[union-attr]
    seen: dict[str, object] = orjson.loads(text)
    return seen


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_full_flow_both_eras(anyio_backend: str, auth_server: AuthServer, mode: str) -> None:
    storage = InMemoryTokenStorage()
    async with protected(auth_server) as http:
        url = f"http://127.0.0.1:{http.port}/mcp"
        with anyio.fail_after(60):
            async with Client.http(url, auth=oauth(storage), mode=mode) as client:
                assert client.era == ("legacy" if mode == "legacy" else "modern")
                seen = await whoami(client)
    assert seen["subject"] == "user-1"
    assert seen["scopes"] == ["mcp:read"]  # what the 401 challenged for
    tokens = storage.tokens
    assert tokens is not None
    issued = auth_server.provider.tokens[tokens.access_token]
    assert issued.resource == url  # minted for this server alone (RFC 8707)
    assert auth_server.provider.introspections >= 1


async def test_step_up_on_insufficient_scope(anyio_backend: str, auth_server: AuthServer) -> None:
    storage = InMemoryTokenStorage()
    operations = {"tools/call:whoami_later": ["mcp:write"]}
    async with protected(auth_server, operation_scopes=operations) as http:
        url = f"http://127.0.0.1:{http.port}/mcp"
        with anyio.fail_after(60):
            async with Client.http(url, auth=oauth(storage), mode="legacy") as client:
                assert (await whoami(client))["scopes"] == ["mcp:read"]
                stepped = await whoami(client, "whoami_later")
                assert sorted(stepped["scopes"]) == SCOPES  # type: ignore[arg-type]
                # The session goes on with the new token.
                assert sorted((await whoami(client))["scopes"]) == SCOPES  # type: ignore[arg-type]
    assert storage.tokens is not None
    assert sorted(storage.tokens.scopes) == SCOPES


async def test_expired_token_is_refreshed(anyio_backend: str, short_lived: AuthServer) -> None:
    storage = InMemoryTokenStorage()
    async with protected(short_lived) as http:
        url = f"http://127.0.0.1:{http.port}/mcp"
        with anyio.fail_after(60):
            async with Client.http(url, auth=oauth(storage), mode="legacy") as client:
                await whoami(client)
                assert storage.tokens is not None
                first = storage.tokens.access_token
                before = authorizations(short_lived)
                await anyio.sleep(2.5)
                await whoami(client)
                assert storage.tokens.access_token != first
    assert authorizations(short_lived) == before  # refreshed, not authorized anew


async def test_http_sse_transport(anyio_backend: str, auth_server: AuthServer) -> None:
    async with protected(auth_server, legacy_sse=True) as http:
        url = f"http://127.0.0.1:{http.port}/sse"
        with anyio.fail_after(60):
            async with Client.http(url, auth=oauth(), transport="sse") as client:
                seen = await whoami(client)
    assert seen["subject"] == "user-1"


async def test_a_revoked_token_is_replaced(anyio_backend: str, auth_server: AuthServer) -> None:
    """The server's introspection stops accepting the token (revoked at the AS):
    the next request gets 401 invalid_token, the client gets a new token by
    refreshing (no new authorization code), and the request goes through."""
    storage = InMemoryTokenStorage()
    async with protected(auth_server, verifier(auth_server, cache_ttl=0)) as http:
        url = f"http://127.0.0.1:{http.port}/mcp"
        with anyio.fail_after(60):
            async with Client.http(url, auth=oauth(storage), mode="legacy") as client:
                await whoami(client)
                assert storage.tokens is not None
                old = storage.tokens.access_token
                before = authorizations(auth_server)
                del auth_server.provider.tokens[old]
                assert (await whoami(client))["subject"] == "user-1"
                assert storage.tokens.access_token != old
                assert authorizations(auth_server) == before
