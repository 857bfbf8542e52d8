"""The HTTP server as an OAuth 2.1 protected resource: one test per rule.

authorization.mdx (2025-06-18, 2025-11-25; unchanged for servers in
2026-07-28), RFC 9728 (metadata and the ``resource_metadata`` challenge),
RFC 6750 (401/403/400 and their ``WWW-Authenticate``), RFC 8707 (audience).
Every request here goes over a real socket to ``HTTPServer`` with h11 on
the client side; tokens come from a ``StaticTokenVerifier``.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import orjson
import pytest
from http_raw import (
    CAPS,
    LEGACY,
    Raw,
    Reply,
    client,
    init_body,
    modern,
    note,
    rpc,
    running,
)
from hypothesis import example, given
from hypothesis import strategies as st

from mcpwire import (
    AccessToken,
    Context,
    HTTPServer,
    ResourceServerAuth,
    Server,
    StaticTokenVerifier,
)
from mcpwire._errors import AuthorizationError
from mcpwire._http_auth import canonical_resource, metadata_url
from mcpwire._jws import ALGORITHMS
from mcpwire._tasks import TASKS_EXTENSION
from mcpwire.sansio._challenge import (
    MAX_TOKEN_SIZE,
    BearerError,
    bearer_challenge,
    bearer_token,
    parse_challenges,
)

pytestmark = pytest.mark.anyio

READ_WRITE = ("mcp:read", "mcp:write")
AS_URL = "https://auth.example.com"

TOKENS = {
    "good": AccessToken("client-1", READ_WRITE, subject="user-1"),
    "good-refreshed": AccessToken("client-1", (*READ_WRITE, "extra"), subject="user-1"),
    "other-client": AccessToken("client-2", READ_WRITE, subject="user-1"),
    "other-user": AccessToken("client-1", READ_WRITE, subject="user-2"),
    "read-only": AccessToken("client-1", ("mcp:read",), subject="user-1"),
    "expired": AccessToken("client-1", READ_WRITE, expires_at=time.time() - 5),
    "foreign": AccessToken("client-1", READ_WRITE, audience=("https://elsewhere.example/mcp",)),
}


def guarded_app() -> Server:
    app = Server("guarded", "1.0")

    def describe(token: AccessToken | None) -> str:
        if token is None:
            return "anonymous"
        return orjson.dumps(
            {"client": token.client_id, "scopes": list(token.scopes), "subject": token.subject}
        ).decode()

    @app.tool()
    def whoami(ctx: Context) -> str:
        return describe(ctx.auth)

    @app.tool()
    async def whoami_later(ctx: Context) -> str:
        await anyio.sleep(0.01)
        return describe(ctx.auth)

    @app.tool(structured=False, task="required")
    async def job(ctx: Context) -> str:
        await anyio.sleep(0.01)
        return describe(ctx.auth)

    return app


def auth_config(**overrides: Any) -> ResourceServerAuth:
    options: dict[str, Any] = {
        "authorization_servers": [AS_URL],
        "scopes_supported": list(READ_WRITE),
        "required_scopes": list(READ_WRITE),
        "resource_name": "guarded test server",
    }
    options.update(overrides)
    return ResourceServerAuth(StaticTokenVerifier(TOKENS), **options)


@asynccontextmanager
async def protected(**options: Any) -> AsyncIterator[HTTPServer]:
    auth = options.pop("auth", None) or auth_config()
    async with running(guarded_app(), auth=auth, legacy_sse=True, **options) as http:
        yield http


def bearer(token: str) -> dict[str, str | None]:
    return {"authorization": f"Bearer {token}"}


async def once(
    port: int,
    method: str = "POST",
    body: object = None,
    headers: dict[str, str | None] | None = None,
    path: str = "/mcp",
) -> Reply:
    """One exchange on a fresh connection (refusals close theirs)."""
    async with client(port) as raw:
        return await raw.request(method, body, headers, path)


def challenge(reply: Reply) -> dict[str, str]:
    """The Bearer challenge's parameters; a 401 without credentials also offers
    DPoP (``dpop="allowed"``, the default; tests/test_http_auth_dpop.py)."""
    found = parse_challenges(reply.headers["www-authenticate"])
    assert [c.scheme for c in found] in (["bearer"], ["bearer", "dpop"])
    return dict(found[0].params)


def text_of(reply: Reply) -> str:
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        message = reply.messages()[-1]
    else:
        message = reply.json()
    return str(message["result"]["content"][0]["text"])


async def start_session(raw: Raw, token: str = "good") -> dict[str, str | None]:
    reply = await raw.request(body=init_body(), headers=bearer(token))
    assert reply.status == 200, reply
    session: dict[str, str | None] = {
        "mcp-session-id": reply.headers["mcp-session-id"],
        "mcp-protocol-version": LEGACY,
        **bearer(token),
    }
    done = await raw.request(body=note("notifications/initialized"), headers=session)
    assert done.status == 202
    return session


# =================================================================================================
# Protected Resource Metadata (RFC 9728)
# =================================================================================================


async def test_metadata_document_at_path_insertion_and_root(anyio_backend: str) -> None:
    async with protected() as http:
        port = http.port or 0
        resource = f"http://127.0.0.1:{port}/mcp"
        for path in (
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
        ):
            reply = await once(port, "GET", path=path)
            assert reply.status == 200, reply
            assert reply.headers["content-type"] == "application/json"
            assert reply.headers["access-control-allow-origin"] == "*"
            assert reply.json() == {
                "resource": resource,
                "authorization_servers": [AS_URL],
                "bearer_methods_supported": ["header"],
                "scopes_supported": list(READ_WRITE),
                "resource_name": "guarded test server",
                "dpop_signing_alg_values_supported": sorted(ALGORITHMS),
            }
        reply = await once(port, "POST", {}, path="/.well-known/oauth-protected-resource/mcp")
        assert reply.status == 405 and reply.headers["allow"] == "GET"
        reply = await once(port, "GET", path="/.well-known/oauth-protected-resource/other")
        assert reply.status == 404
        # The document, like everything else, answers only allowed Host and Origin values.
        evil = {"host": "evil.example"}
        assert (
            await once(port, "GET", None, evil, "/.well-known/oauth-protected-resource")
        ).status == 421


async def test_explicit_resource_names_the_metadata_url(anyio_backend: str) -> None:
    resource = "https://mcp.example.com/public/mcp"
    auth = auth_config(resource=resource, metadata={"resource_policy_uri": "https://x.example/p"})
    async with protected(auth=auth) as http:
        port = http.port or 0
        reply = await once(
            port, path="/.well-known/oauth-protected-resource/public/mcp", method="GET"
        )
        assert reply.status == 200
        assert reply.json()["resource"] == resource
        assert reply.json()["resource_policy_uri"] == "https://x.example/p"
        reply = await once(port, body=init_body())
        assert challenge(reply)["resource_metadata"] == (
            "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp"
        )


# =================================================================================================
# 401 without a token (RFC 9728 section 5.1, RFC 6750 section 3)
# =================================================================================================


async def test_401_without_a_token_names_the_metadata_and_scopes(anyio_backend: str) -> None:
    async with protected() as http:
        port = http.port or 0
        reply = await once(port, body=init_body())
        assert reply.status == 401
        params = challenge(reply)
        assert params == {
            "resource_metadata": f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp",
            "scope": "mcp:read mcp:write",
        }  # no error code: the request carried no credentials (RFC 6750 section 3.1)
        assert reply.headers["connection"] == "close"
        # Another scheme is no bearer credentials at all.
        reply = await once(port, body=init_body(), headers={"authorization": "Basic Zm9vOmJhcg=="})
        assert reply.status == 401 and "error" not in challenge(reply)


async def test_401_everywhere_both_eras_get_delete_and_http_sse(anyio_backend: str) -> None:
    async with protected() as http:
        port = http.port or 0
        body, headers = modern(1, "tools/list")
        attempts: list[tuple[str, object, dict[str, str | None], str]] = [
            ("POST", init_body(), {}, "/mcp"),  # legacy initialize
            ("POST", rpc(2, "tools/list"), {"mcp-session-id": "0" * 32}, "/mcp"),
            ("POST", body, headers, "/mcp"),  # modern
            ("POST", note("notifications/cancelled", {"requestId": 1}), headers, "/mcp"),
            ("GET", None, {"accept": "text/event-stream"}, "/mcp"),
            ("DELETE", None, {"mcp-session-id": "0" * 32}, "/mcp"),
            ("GET", None, {"accept": "text/event-stream"}, "/sse"),
            ("POST", rpc(3, "ping"), {}, "/messages?session_id=" + "0" * 32),
        ]
        base = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource"
        for method, payload, extra, path in attempts:
            reply = await once(port, method, payload, extra, path)
            assert reply.status == 401, (method, path, reply)
            # The HTTP+SSE endpoints are a resource of their own (clients use the /sse URL).
            suffix = "/mcp" if path == "/mcp" else "/sse"
            assert challenge(reply)["resource_metadata"] == base + suffix


async def test_http_sse_metadata_names_the_sse_resource(anyio_backend: str) -> None:
    async with protected() as http:
        port = http.port or 0
        reply = await once(port, "GET", path="/.well-known/oauth-protected-resource/sse")
        assert reply.status == 200
        assert reply.json()["resource"] == f"http://127.0.0.1:{port}/sse"
    async with running(guarded_app(), auth=auth_config()) as http:  # legacy_sse off
        reply = await once(http.port or 0, "GET", path="/.well-known/oauth-protected-resource/sse")
        assert reply.status == 404


# =================================================================================================
# Invalid and expired tokens, audience, 403 insufficient_scope
# =================================================================================================


@pytest.mark.parametrize(
    ("authorization", "description"),
    [
        ("Bearer unknown-token", "invalid"),
        ("Bearer expired", "expired"),
        ("Bearer foreign", "not issued for this resource"),
        ("Bearer two words", "b64token"),
        ("Bearer", "empty"),
        ("Bearer " + "a" * (MAX_TOKEN_SIZE + 1), "longer"),
    ],
)
async def test_invalid_expired_or_foreign_tokens_get_invalid_token(
    anyio_backend: str, authorization: str, description: str
) -> None:
    async with protected() as http:
        reply = await once(
            http.port or 0, body=init_body(), headers={"authorization": authorization}
        )
        assert reply.status == 401
        params = challenge(reply)
        assert params["error"] == "invalid_token"
        assert description in params["error_description"]
        assert params["scope"] == "mcp:read mcp:write"
        assert params["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")
        assert reply.json()["error"] == "invalid_token"


async def test_audience_naming_this_resource_is_accepted(anyio_backend: str) -> None:
    resource = "http://127.0.0.1:1/mcp"  # checked against the configured resource, not the socket
    tokens = {
        "mine": AccessToken("client-1", READ_WRITE, audience=("HTTP://127.0.0.1:1/mcp/",)),
        "theirs": AccessToken("client-1", READ_WRITE, audience=("http://127.0.0.1:2/mcp",)),
    }
    auth = ResourceServerAuth(
        StaticTokenVerifier(tokens), authorization_servers=[AS_URL], resource=resource
    )
    async with running(guarded_app(), auth=auth) as http:
        port = http.port or 0
        assert (await once(port, body=init_body(), headers=bearer("mine"))).status == 200
        reply = await once(port, body=init_body(), headers=bearer("theirs"))
        assert reply.status == 401 and challenge(reply)["error"] == "invalid_token"


async def test_403_insufficient_scope_names_the_scopes_needed(anyio_backend: str) -> None:
    async with protected() as http:
        port = http.port or 0
        for body, headers in [(init_body(), {}), modern(1, "tools/list")]:
            reply = await once(port, body=body, headers={**headers, **bearer("read-only")})
            assert reply.status == 403
            params = challenge(reply)
            assert params["error"] == "insufficient_scope"
            assert params["scope"] == "mcp:read mcp:write"
            assert "mcp:write" in params["error_description"]
            assert params["resource_metadata"].endswith("/.well-known/oauth-protected-resource/mcp")


async def test_operation_scopes_403_names_held_and_missing_scopes(anyio_backend: str) -> None:
    """Step-up: the 403 lists the scopes the token holds and those the operation needs."""
    auth = auth_config(
        required_scopes=["mcp:read"],
        operation_scopes={"tools/call:whoami_later": ["mcp:write"], "prompts/list": ["mcp:admin"]},
    )
    async with protected(auth=auth) as http:
        port = http.port or 0
        async with client(port) as raw:
            session = {**await start_session(raw, "read-only")}
            fine = rpc(2, "tools/call", {"name": "whoami"})
            assert (await raw.request(body=fine, headers=session)).status == 200
        later = rpc(3, "tools/call", {"name": "whoami_later"})
        modern_later = modern(4, "tools/call", {"name": "whoami_later", "arguments": {}})
        for body, headers in [
            (later, session),
            (modern_later[0], {**modern_later[1], **bearer("read-only")}),
        ]:
            reply = await once(port, body=body, headers=headers)
            assert reply.status == 403, reply
            params = challenge(reply)
            assert params["error"] == "insufficient_scope"
            assert params["scope"] == "mcp:read mcp:write"
            assert params["error_description"] == "this operation needs mcp:write"
        reply = await once(port, body=rpc(5, "prompts/list"), headers={**session, **bearer("good")})
        assert reply.status == 403
        assert challenge(reply)["scope"] == "mcp:read mcp:write mcp:admin"
        # The session goes on: a refused operation ends nothing.
        assert (await once(port, body=fine, headers=session)).status == 200
        assert (await once(port, body=later, headers={**session, **bearer("good")})).status == 200


async def test_operation_scopes_cover_every_request_of_a_batch(anyio_backend: str) -> None:
    auth = auth_config(
        required_scopes=["mcp:read"], operation_scopes={"tools/call:whoami_later": ["mcp:write"]}
    )
    async with protected(auth=auth) as http, client(http.port or 0) as raw:
        reply = await raw.request(body=init_body("2025-03-26"), headers=bearer("read-only"))
        sid = reply.headers["mcp-session-id"]
        session = {
            "mcp-session-id": sid,
            "mcp-protocol-version": "2025-03-26",
            **bearer("read-only"),
        }
        batch = [
            rpc(2, "tools/call", {"name": "whoami"}),
            rpc(3, "tools/call", {"name": "whoami_later"}),
        ]
        reply = await raw.request(body=batch, headers=session)
        assert reply.status == 403 and challenge(reply)["scope"] == "mcp:read mcp:write"


async def test_no_required_scopes_means_no_scope_in_the_challenge(anyio_backend: str) -> None:
    async with protected(auth=auth_config(required_scopes=[])) as http:
        port = http.port or 0
        reply = await once(port, body=init_body())
        assert reply.status == 401 and "scope" not in challenge(reply)
        assert (await once(port, body=init_body(), headers=bearer("read-only"))).status == 200


# =================================================================================================
# Tokens in the query string, two Authorization fields (RFC 6750 sections 2.3, 3.1)
# =================================================================================================


@pytest.mark.parametrize(
    "query", ["?access_token=good", "?x=1&access_token=good", "?access%5Ftoken=good"]
)
async def test_query_string_tokens_are_refused(anyio_backend: str, query: str) -> None:
    async with protected() as http:
        port = http.port or 0
        for headers in ({}, bearer("good")):
            reply = await once(port, body=init_body(), headers=headers, path="/mcp" + query)
            assert reply.status == 400
            params = challenge(reply)
            assert params["error"] == "invalid_request"
            assert "URI" in params["error_description"]


async def test_two_authorization_fields_are_refused(anyio_backend: str) -> None:
    async with protected() as http, client(http.port or 0) as raw:
        await raw.send(
            body=init_body(),
            extra=[("authorization", "Bearer good"), ("authorization", "Bearer other-client")],
        )
        reply = await raw.rest(await raw.head())
        assert reply.status == 400 and challenge(reply)["error"] == "invalid_request"


# =================================================================================================
# Valid tokens: both eras, and what handlers see
# =================================================================================================


async def test_both_eras_serve_a_valid_token_and_handlers_see_it(anyio_backend: str) -> None:
    me = {"client": "client-1", "scopes": list(READ_WRITE), "subject": "user-1"}
    async with protected() as http, client(http.port or 0) as raw:
        session = await start_session(raw)
        for rid, tool in enumerate(("whoami", "whoami_later"), start=2):
            reply = await raw.request(body=rpc(rid, "tools/call", {"name": tool}), headers=session)
            assert reply.status == 200, reply
            assert orjson.loads(text_of(reply)) == me
        for rid, tool in enumerate(("whoami", "whoami_later"), start=10):
            body, headers = modern(rid, "tools/call", {"name": tool, "arguments": {}})
            reply = await raw.request(body=body, headers={**headers, **bearer("good")})
            assert reply.status == 200, reply
            assert orjson.loads(text_of(reply)) == me
        # A session's later requests may carry a refreshed token of the same owner:
        # handlers see the token their request came with.
        refreshed = {**session, **bearer("good-refreshed")}
        reply = await raw.request(
            body=rpc(20, "tools/call", {"name": "whoami_later"}), headers=refreshed
        )
        assert orjson.loads(text_of(reply))["scopes"] == [*READ_WRITE, "extra"]
        reply = await raw.request("DELETE", headers=session)
        assert reply.status == 200


async def test_handlers_without_auth_see_none(anyio_backend: str) -> None:
    async with running(guarded_app()) as http, client(http.port or 0) as raw:
        body, headers = modern(1, "tools/call", {"name": "whoami", "arguments": {}})
        reply = await raw.request(body=body, headers=headers)
        assert text_of(reply) == "anonymous"


# =================================================================================================
# A legacy session belongs to the client and user that started it
# =================================================================================================


@pytest.mark.parametrize("intruder", ["other-client", "other-user"])
async def test_a_session_refuses_the_token_of_another_client_or_user(
    anyio_backend: str, intruder: str
) -> None:
    async with protected() as http:
        port = http.port or 0
        async with client(port) as raw:
            session = await start_session(raw)
        stolen = {**session, **bearer(intruder)}
        for method, body in [("POST", rpc(5, "tools/list")), ("GET", None), ("DELETE", None)]:
            headers = {**stolen, "accept": "text/event-stream"} if method == "GET" else stolen
            reply = await once(port, method, body, headers)
            assert reply.status == 404, (method, reply)  # as if the session did not exist
            assert reply.json()["error"]["message"] == "Session not found"
        # The owner still has it: the intruder's DELETE did nothing.
        reply = await once(port, body=rpc(6, "tools/call", {"name": "whoami"}), headers=session)
        assert reply.status == 200 and "client-1" in text_of(reply)


async def test_a_task_belongs_to_the_client_and_user_that_started_it(anyio_backend: str) -> None:
    """tasks.mdx, "Security": tasks are bound to the authorization context."""
    caps = {"extensions": {TASKS_EXTENSION: {}}}
    async with protected() as http, client(http.port or 0) as raw:
        body, headers = modern(1, "tools/call", {"name": "job", "arguments": {}}, **{CAPS: caps})
        reply = await raw.request(body=body, headers={**headers, **bearer("good")})
        created = reply.json()["result"]
        assert created["resultType"] == "task"
        task_id = created["taskId"]
        for rid, token in enumerate(("other-client", "other-user"), start=2):
            body, headers = modern(rid, "tasks/get", {"taskId": task_id}, **{CAPS: caps})
            headers["mcp-name"] = task_id  # SEP-2663 routing header
            reply = await raw.request(body=body, headers={**headers, **bearer(token)})
            error = reply.json()["error"]
            assert error["code"] == -32602 and "not found" in error["message"]
        with anyio.fail_after(10):
            while True:
                body, headers = modern(9, "tasks/get", {"taskId": task_id}, **{CAPS: caps})
                headers["mcp-name"] = task_id
                reply = await raw.request(body=body, headers={**headers, **bearer("good")})
                got = reply.json()["result"]
                if got["status"] == "completed":
                    break
                await anyio.sleep(0.01)
        assert orjson.loads(got["result"]["content"][0]["text"])["client"] == "client-1"


async def test_http_sse_connection_belongs_to_its_owner(anyio_backend: str) -> None:
    async with protected() as http:
        port = http.port or 0
        async with client(port) as raw:
            await raw.send(
                "GET", headers={"accept": "text/event-stream", **bearer("good")}, path="/sse"
            )
            head = await raw.head()
            assert head.status == 200
            events = raw.sse()
            endpoint = await events.next()
            assert endpoint is not None and endpoint.event == "endpoint"
            path = endpoint.data
            reply = await once(port, body=init_body(), headers=bearer("other-client"), path=path)
            assert reply.status == 404
            reply = await once(port, body=init_body(), headers=bearer("good"), path=path)
            assert reply.status == 202
            message = await events.next()
            assert message is not None and orjson.loads(message.data)["id"] == 1
            reply = await once(port, body=init_body(), path=path)
            assert reply.status == 401


# =================================================================================================
# Configuration, the resource identifier, verifier failures
# =================================================================================================


async def test_public_bind_without_resource_is_a_configuration_error(anyio_backend: str) -> None:
    async with protected(allowed_hosts=None) as http:
        reply = await once(http.port or 0, body=init_body(), headers=bearer("good"))
        assert reply.status == 500 and b"resource=" in reply.body


async def test_a_failing_verifier_gets_503_not_401(anyio_backend: str) -> None:
    class Broken:
        async def verify(self, token: str) -> AccessToken | None:
            raise ConnectionError("the authorization server is down")

    auth = ResourceServerAuth(Broken(), authorization_servers=[AS_URL])
    async with running(guarded_app(), auth=auth) as http:
        reply = await once(http.port or 0, body=init_body(), headers=bearer("good"))
        assert reply.status == 503 and reply.headers["retry-after"] == "5"


def test_configuration_is_checked() -> None:
    verifier = StaticTokenVerifier({})
    with pytest.raises(ValueError, match="authorization_servers"):
        ResourceServerAuth(verifier, authorization_servers=[])
    with pytest.raises(ValueError, match="absolute"):
        ResourceServerAuth(verifier, authorization_servers=["auth.example.com"])
    with pytest.raises(ValueError, match="scope"):
        ResourceServerAuth(verifier, authorization_servers=[AS_URL], required_scopes=['a"b'])
    with pytest.raises(ValueError, match="resource"):
        ResourceServerAuth(verifier, authorization_servers=[AS_URL], resource="https://x/#frag")


def test_canonical_resource_and_metadata_url() -> None:
    assert canonical_resource("HTTPS://MCP.Example.com/mcp/") == "https://mcp.example.com/mcp"
    assert canonical_resource("https://mcp.example.com") == "https://mcp.example.com"
    assert metadata_url("https://mcp.example.com/public/mcp") == (
        "https://mcp.example.com/.well-known/oauth-protected-resource/public/mcp"
    )
    assert metadata_url("https://mcp.example.com/") == (
        "https://mcp.example.com/.well-known/oauth-protected-resource"
    )


# =================================================================================================
# The header helpers (pure)
# =================================================================================================


def test_bearer_token_parsing() -> None:
    assert bearer_token(None) is None
    assert bearer_token("Basic abc") is None
    assert bearer_token("bearer abc.DEF-_~+/==") == "abc.DEF-_~+/=="
    assert bearer_token("BEARER   tok  ") == "tok"
    for bad in ("Bearer", "Bearer a=b", "Bearer a b", "Bearer ä"):
        with pytest.raises(BearerError):
            bearer_token(bad)


_param_names = st.sampled_from(
    ["resource_metadata", "scope", "error", "error_description", "realm"]
)
_values = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=40)


@given(st.lists(st.tuples(_param_names, _values), max_size=5, unique_by=lambda p: p[0]))
@example([("error_description", 'say "hi" \\ there'), ("scope", "a b")])
@example([("error_description", '\\"'), ("realm", "")])
def test_challenge_round_trip(params: list[tuple[str, str]]) -> None:
    """Quotes and backslashes are escaped; what is written parses back to the same values."""
    header = bearer_challenge(params)
    assert "\r" not in header and "\n" not in header
    assert [(c.scheme, dict(c.params)) for c in parse_challenges(header)] == [
        ("bearer", dict(params))
    ]


@given(st.text(max_size=40))
def test_challenge_values_never_break_the_header(value: str) -> None:
    """Any character that is not printable ASCII becomes ``?``: no header splitting."""
    header = bearer_challenge([("error_description", value)])
    assert header.isascii() and header.isprintable()
    parsed = parse_challenges(header)[0].params["error_description"]
    assert len(parsed) == len(value)


_plain = st.text(alphabet="abcXYZ019 :/._-", min_size=1, max_size=30)


@given(st.lists(st.tuples(_param_names, _plain), min_size=1, max_size=4, unique_by=lambda p: p[0]))
def test_challenge_parsed_by_the_reference_client(params: list[tuple[str, str]]) -> None:
    """The reference SDK's client reads the same values out of our challenge."""
    import httpx2
    from mcp.client.auth.utils import extract_field_from_www_auth

    header = bearer_challenge(params)
    response = httpx2.Response(401, headers={"www-authenticate": header})
    for name, value in params:
        assert extract_field_from_www_auth(response, name) == value


@given(st.one_of(st.none(), st.text(max_size=200)))
@example("Bearer " + "A" * MAX_TOKEN_SIZE)
@example("bEaReR \t x")
def test_bearer_token_takes_any_field_value(field: str | None) -> None:
    """Whatever a client sends: a token, no bearer credentials, or ``BearerError``."""
    try:
        token = bearer_token(field)
    except BearerError:
        return
    if token is not None:
        assert 0 < len(token) <= MAX_TOKEN_SIZE and token.isascii() and " " not in token


@given(st.text(max_size=300))
def test_parse_challenges_takes_any_header_value(field: str) -> None:
    """Any header value: its challenges, or ``AuthorizationError`` saying why not."""
    try:
        found = parse_challenges(field)
    except AuthorizationError:
        return
    for c in found:
        assert c.scheme and all(name == name.lower() for name in c.params)
