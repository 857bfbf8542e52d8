"""MCP authorization end to end: ``Client.http(url, auth=OAuthClient(...))``.

1. Against the reference SDK as a real authorization server and protected
   resource (``tests/http_client/ref_auth_server.py``, uvicorn in a child
   process): dynamic registration, PKCE, the ``resource`` parameter, the
   bearer token on every request, refresh of an expired token, tokens kept in
   a ``TokenStorage`` and reused, and a tampered ``state`` refused.
2. Against a scripted resource and authorization server on two origins
   (``tests/http_client/rawserver.py``) for what the SDK never does: a
   resource metadata document for another server, metadata naming another
   issuer, scope step-up on ``403 insufficient_scope`` and its limit, and the
   token never sent to the authorization server's origin.

Everything runs on both anyio backends.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

import anyio
import pytest
from http_client.child import ChildServer
from http_client.rawserver import (
    Reply,
    Seen,
    approved,
    as_metadata,
    raw_server,
    registered,
    result,
    self_signed,
)

from mcpwire import (
    Client,
    InMemoryTokenStorage,
    JSONRPCError,
    OAuthClient,
    OAuthTokens,
    headless_redirect_handler,
)

pytestmark = pytest.mark.anyio


async def stats(client: Client) -> dict[str, Any]:
    answer = await client.call_tool("stats", {})
    assert isinstance(answer.structured, dict)
    return answer.structured


async def test_sdk_flow(sdk_auth: ChildServer) -> None:
    """Registration, PKCE, the token endpoint, the resource parameter, the bearer token."""
    storage = InMemoryTokenStorage()
    auth = OAuthClient(redirect_handler=headless_redirect_handler(), storage=storage)
    with anyio.fail_after(20):
        async with Client.http(sdk_auth.url, auth=auth) as client:
            assert [t.name for t in await client.list_tools()] == ["stats"]
            before = await stats(client)
    assert before["grants"][-1] == "authorization_code"
    assert before["resources"][-1] == sdk_auth.url
    assert storage.tokens is not None
    assert storage.tokens.resource == sdk_auth.url
    assert storage.tokens.scopes == ["mcp:read"]  # the SDK's PRM scopes_supported
    assert list(storage.clients) == [f"http://127.0.0.1:{sdk_auth.port}"]

    # A second client with the same storage needs no registration and no grant.
    again = OAuthClient(redirect_handler=headless_redirect_handler(), storage=storage)
    with anyio.fail_after(20):
        async with Client.http(sdk_auth.url, auth=again) as client:
            after = await stats(client)
    assert after["registrations"] == before["registrations"]
    assert after["grants"] == before["grants"]


async def test_sdk_refresh(sdk_short: ChildServer) -> None:
    auth = OAuthClient(redirect_handler=headless_redirect_handler())
    with anyio.fail_after(20):
        async with Client.http(sdk_short.url, auth=auth) as client:
            first = await stats(client)
            await anyio.sleep(1.2)
            second = await stats(client)
    # This client authorized once (the server's log is shared by the module's
    # tests) and every later token came by refresh; on a loaded machine the
    # one-second token may have been refreshed already before ``first``.
    grants = second["grants"]
    code = len(grants) - 1 - grants[::-1].index("authorization_code")
    assert code < len(first["grants"])
    later = grants[code + 1 :]
    assert len(later) > len(first["grants"]) - code - 1  # refreshed after ``first``
    assert set(later) == {"refresh_token"}


async def test_sdk_refresh_with_stored_tokens(sdk_short: ChildServer) -> None:
    """Tokens kept by an earlier client (another process, say) are refreshed at
    their authorization server, found anew, rather than authorized again."""
    storage = InMemoryTokenStorage()
    first = OAuthClient(redirect_handler=headless_redirect_handler(), storage=storage)
    with anyio.fail_after(20):
        async with Client.http(sdk_short.url, auth=first) as client:
            before = await stats(client)
    await anyio.sleep(1.2)
    later = OAuthClient(redirect_handler=headless_redirect_handler(), storage=storage)
    with anyio.fail_after(20):
        async with Client.http(sdk_short.url, auth=later) as client:
            after = await stats(client)
    assert after["registrations"] == before["registrations"]
    later = after["grants"][len(before["grants"]) :]
    assert later
    assert set(later) == {"refresh_token"}


async def test_sdk_state_mismatch_is_refused(sdk_auth: ChildServer) -> None:
    """A redirect whose ``state`` is not ours (RFC 6749 §10.12): no token request."""
    follow = headless_redirect_handler()

    async def tampered(url: str) -> str:
        landed = await follow(url)
        parts = urlsplit(landed)
        query = dict(parse_qsl(parts.query))
        query["state"] = "forged"
        return parts._replace(query=urlencode(query)).geturl()

    auth = OAuthClient(redirect_handler=tampered)
    with anyio.fail_after(20), pytest.raises(JSONRPCError, match="state does not match"):
        async with Client.http(sdk_auth.url, auth=auth) as client:
            await client.list_tools()


# -- scripted servers ------------------------------------------------------------------------


class Scripted:
    """A protected MCP resource (``rs``) and its authorization server (``as_``)
    on two origins, scripted: ``prm`` and ``metadata`` may be altered by a test,
    and ``needs`` maps a JSON-RPC method to the scopes its token must carry."""

    def __init__(self) -> None:
        self.rs_url = ""
        self.as_url = ""
        self.prm: dict[str, Any] = {}
        self.metadata: dict[str, Any] = {}
        self.needs: dict[str, list[str]] = {}
        self.granted: dict[str, list[str]] = {}
        #: Scopes the authorization server grants (all asked for, when None).
        self.grantable: set[str] | None = None
        self.authorizations: list[dict[str, str]] = []
        self.as_seen: list[Seen] = []
        #: Each token request's form and Authorization header.
        self.token_requests: list[tuple[dict[str, str], str | None]] = []

    def start(self, rs_url: str, as_url: str) -> None:
        self.rs_url, self.as_url = rs_url, as_url.removesuffix("/mcp")
        base = rs_url.removesuffix("/mcp")
        self.prm = {"resource": rs_url, "authorization_servers": [self.as_url]}
        self.metadata = as_metadata(self.as_url)
        self.prm_url = base + "/.well-known/oauth-protected-resource/mcp"

    async def resource(self, seen: Seen) -> Reply:
        if seen.method == "GET" and seen.target.startswith("/.well-known/oauth-protected-resource"):
            return Reply.json(self.prm)
        if seen.method != "POST":
            return Reply.empty(405)
        message = seen.json
        method = message.get("method", "")
        if method.startswith("notifications/"):
            return Reply.empty(202)
        token = seen.headers.get("authorization", "").removeprefix("Bearer ")
        granted = self.granted.get(token)
        if granted is None:
            challenge = f'Bearer resource_metadata="{self.prm_url}"'
            return Reply.json({"error": "invalid_token"}, 401, [("WWW-Authenticate", challenge)])
        wanted = self.needs.get(method, [])
        if not set(wanted) <= set(granted):
            challenge = (
                f'Bearer error="insufficient_scope", scope="{" ".join(wanted)}", '
                f'resource_metadata="{self.prm_url}"'
            )
            return Reply.json(
                {"error": "insufficient_scope"}, 403, [("WWW-Authenticate", challenge)]
            )
        if method == "initialize":
            return Reply.json(
                result(
                    message["id"],
                    {
                        "protocolVersion": message["params"]["protocolVersion"],
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "scripted", "version": "1"},
                    },
                )
            )
        if method == "tools/list":
            return Reply.json(
                result(message["id"], {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]})
            )
        if method == "tools/call":
            return Reply.json(result(message["id"], {"content": [{"type": "text", "text": "ok"}]}))
        return Reply.json(
            {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": "no"}}
        )

    async def authorization(self, seen: Seen) -> Reply:
        self.as_seen.append(seen)
        path, _, query = seen.target.partition("?")
        if path == "/.well-known/oauth-authorization-server":
            return Reply.json(self.metadata)
        if path == "/register":
            return registered()
        if path == "/authorize":
            params, redirect = approved(query, f"code-{len(self.authorizations) + 1}")
            self.authorizations.append(params)
            return redirect
        if path == "/token":
            form = dict(parse_qsl(seen.body.decode()))
            assert form["resource"] == self.rs_url
            self.token_requests.append((form, seen.headers.get("authorization")))
            if form["grant_type"] != "authorization_code":
                token = f"token-{form['grant_type']}"
                self.granted[token] = form.get("scope", "").split()
                return Reply.json({"access_token": token, "token_type": "Bearer"})
            number = int(form["code"].removeprefix("code-"))
            scopes = self.authorizations[number - 1].get("scope", "").split()
            if self.grantable is not None:
                scopes = [x for x in scopes if x in self.grantable]
            token = f"token-{number}"
            self.granted[token] = scopes
            return Reply.json({"access_token": token, "token_type": "Bearer", "expires_in": 3600})
        return Reply.empty(404)


async def run_scripted(
    scripted: Scripted, *, call: bool = True, auth: OAuthClient | None = None
) -> JSONRPCError | None:
    """Connect, list the tools and call one; the error the client raised, if any
    (returned, so it does not reach the servers' task groups)."""
    async with raw_server(scripted.resource) as rs, raw_server(scripted.authorization) as as_:
        scripted.start(rs.url, as_.url)
        if auth is None:
            auth = OAuthClient(redirect_handler=headless_redirect_handler(), offline_access=False)
        try:
            with anyio.fail_after(20):
                async with Client.http(rs.url, auth=auth, mode="legacy") as client:
                    await client.list_tools()
                    if call:
                        await client.call_tool("t", {})
        except JSONRPCError as exc:
            return exc
    return None


@pytest.mark.parametrize("twice", ["state", "code", "iss"])
async def test_a_redirect_giving_a_parameter_twice_is_refused(twice: str) -> None:
    """RFC 6749 §3.1: parameters MUST NOT be included more than once; which copy
    of ``state`` counts would otherwise be the attacker's choice. No token request."""
    follow = headless_redirect_handler()

    async def doubled(url: str) -> str:
        landed = await follow(url)
        parts = urlsplit(landed)
        pairs = parse_qsl(parts.query)
        value = dict(pairs).get(twice, "x")
        return parts._replace(query=urlencode([(twice, "forged"), *pairs, (twice, value)])).geturl()

    scripted = Scripted()
    auth = OAuthClient(redirect_handler=doubled, offline_access=False)
    error = await run_scripted(scripted, call=False, auth=auth)
    assert error is not None and "more than once" in error.message
    assert not any(s.target.endswith("/token") for s in scripted.as_seen)


async def test_scope_step_up() -> None:
    scripted = Scripted()
    scripted.needs = {"tools/list": ["mcp:basic"], "tools/call": ["mcp:write"]}

    original = scripted.start

    def start(rs_url: str, as_url: str) -> None:
        original(rs_url, as_url)
        scripted.prm["scopes_supported"] = ["mcp:basic"]

    scripted.start = start  # type: ignore[method-assign]
    assert await run_scripted(scripted) is None
    assert [a.get("scope") for a in scripted.authorizations] == ["mcp:basic", "mcp:basic mcp:write"]
    assert all(a["code_challenge_method"] == "S256" for a in scripted.authorizations)
    # The token went to the resource only: the authorization server never saw it.
    assert not any("authorization" in s.headers for s in scripted.as_seen)


async def test_step_up_is_not_repeated_for_scopes_already_asked_for() -> None:
    scripted = Scripted()
    # The server asks for a scope its authorization server never grants.
    scripted.needs = {"tools/list": ["never:granted"]}
    scripted.grantable = set()

    error = await run_scripted(scripted)
    assert error is not None
    assert "403" in str(error)
    # One flow for the 401, one step-up; then the 403 is the answer.
    assert [a.get("scope") for a in scripted.authorizations] == [None, "never:granted"]


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda s: s.prm.update(resource="https://evil.example.com/mcp"), "not for"),
        (lambda s: s.metadata.update(issuer="https://attacker.example.com"), "issuer"),
        (lambda s: s.metadata.update(code_challenge_methods_supported=["plain"]), "S256"),
        (lambda s: s.metadata.pop("code_challenge_methods_supported"), "S256"),
        (lambda s: s.metadata.update(token_endpoint="http://auth.example/token"), "https"),
        # RFC 8414 §2: an issuer is an https URL; its metadata is not fetched in plaintext.
        (
            lambda s: s.prm.update(authorization_servers=["http://auth.invalid"]),
            "issuer 'http://auth.invalid' is not an https URL",
        ),
    ],
)
async def test_refused_documents(change: Any, words: str) -> None:
    scripted = Scripted()
    original = scripted.start

    def start(rs_url: str, as_url: str) -> None:
        original(rs_url, as_url)
        change(scripted)

    scripted.start = start  # type: ignore[method-assign]
    error = await run_scripted(scripted, call=False)
    assert error is not None
    assert words in str(error)
    assert scripted.authorizations == []


async def test_no_plaintext_metadata_for_a_resource_reached_over_tls(tmp_path: Path) -> None:
    """A server reached over https that names ``http`` resource metadata in its
    challenge is refused before that document is fetched: whoever could rewrite
    it would choose the authorization server the user signs in to."""
    server_tls, trusting = self_signed(tmp_path)
    seen: list[str] = []

    async def resource(request: Seen) -> Reply:
        seen.append(f"{request.method} {request.target}")
        challenge = (
            'Bearer resource_metadata="http://rs.invalid/.well-known/oauth-protected-resource"'
        )
        return Reply.json({"error": "invalid_token"}, 401, [("WWW-Authenticate", challenge)])

    auth = OAuthClient(redirect_handler=headless_redirect_handler(), offline_access=False)
    async with raw_server(resource, tls=server_tls) as rs:
        with anyio.fail_after(20), pytest.raises(JSONRPCError) as caught:
            async with Client.http(rs.url, auth=auth, mode="legacy", verify=trusting):
                pass
    assert "the challenge's resource_metadata 'http://rs.invalid/" in str(caught.value)
    assert "is not an https URL" in str(caught.value)
    assert seen == ["POST /mcp"]


_AUTH_METHODS = [
    (["client_secret_basic"], "s3cret", "basic"),
    (None, "s:3", "basic"),
    (["client_secret_post"], "s3cret", "post"),
    (["none"], None, "none"),
]


@pytest.mark.parametrize(
    ("grant", "methods", "secret", "expected"),
    [
        *(("client_credentials", *case) for case in _AUTH_METHODS if case[1] is not None),
        *(("jwt_bearer", *case) for case in _AUTH_METHODS),
    ],
)
async def test_grants_without_a_user(
    grant: str, methods: list[str] | None, secret: str | None, expected: str
) -> None:
    """Client credentials and JWT bearer assertions (RFC 7523): client
    authentication as the server offers it, the resource, the assertion."""
    scripted = Scripted()
    asked: list[tuple[str, str]] = []

    async def assertion(issuer: str, resource: str) -> str:
        asked.append((issuer, resource))
        return "signed.elsewhere.jwt"

    original = scripted.start

    def start(rs_url: str, as_url: str) -> None:
        original(rs_url, as_url)
        scripted.prm["scopes_supported"] = ["mcp:read"]
        if methods is not None:
            scripted.metadata["token_endpoint_auth_methods_supported"] = methods

    scripted.start = start  # type: ignore[method-assign]
    auth = OAuthClient(
        grant=grant,  # type: ignore[arg-type]
        client_id="cid",
        client_secret=secret,
        assertion=assertion if grant == "jwt_bearer" else None,
    )
    assert await run_scripted(scripted, auth=auth) is None
    [(form, header)] = scripted.token_requests
    assert form["client_id"] == "cid"
    assert form["scope"] == "mcp:read"
    if expected == "basic":
        assert secret is not None
        pair = base64.b64decode(str(header).removeprefix("Basic ")).decode()
        assert pair == f"cid:{quote(secret, safe='')}"
        assert "client_secret" not in form
    elif expected == "post":
        assert header is None
        assert form["client_secret"] == secret
    else:
        assert header is None
        assert "client_secret" not in form
    if grant == "jwt_bearer":
        assert form["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer"
        assert form["assertion"] == "signed.elsewhere.jwt"
        assert asked == [(scripted.as_url, scripted.rs_url)]
    else:
        assert form["grant_type"] == "client_credentials"
    assert scripted.authorizations == []


async def test_concurrent_challenges_share_one_flow() -> None:
    """Requests refused together (their token revoked) wait for one flow and
    then all use its token."""
    scripted = Scripted()
    async with raw_server(scripted.resource) as rs, raw_server(scripted.authorization) as as_:
        scripted.start(rs.url, as_.url)
        auth = OAuthClient(redirect_handler=headless_redirect_handler())
        with anyio.fail_after(20):
            async with Client.http(rs.url, auth=auth, mode="legacy") as client:
                await client.list_tools()
                scripted.granted.clear()
                async with anyio.create_task_group() as tg:
                    for _ in range(5):
                        tg.start_soon(client.call_tool, "t", {})
    assert len(scripted.authorizations) == 2


async def test_stored_tokens_for_another_resource_are_not_sent() -> None:
    scripted = Scripted()
    scripted.granted["foreign"] = []  # the resource would take it, if it were sent
    storage = InMemoryTokenStorage()
    storage.tokens = OAuthTokens("foreign", "https://as.example", "https://other.example/mcp")
    auth = OAuthClient(redirect_handler=headless_redirect_handler(), storage=storage)
    assert await run_scripted(scripted, auth=auth) is None
    assert len(scripted.authorizations) == 1
    assert storage.tokens.access_token == "token-1"


def test_grants_need_their_parameters() -> None:
    with pytest.raises(ValueError, match="redirect_handler"):
        OAuthClient()
    with pytest.raises(ValueError, match="client_secret"):
        OAuthClient(grant="client_credentials", client_id="x")
    with pytest.raises(ValueError, match="assertion"):
        OAuthClient(grant="jwt_bearer", client_id="x")
