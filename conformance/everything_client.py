"""The conformance suite's client under test, built with mcpwire.

The harness runs ``python conformance/everything_client.py URL`` once per
client scenario, naming the scenario in ``MCP_CONFORMANCE_SCENARIO``, the
protocol revision of its mock server in ``MCP_CONFORMANCE_PROTOCOL_VERSION``
(0.2.x harnesses), and scenario data in ``MCP_CONFORMANCE_CONTEXT`` (JSON).
Each scenario's handler does what the scenario's mock server waits for (its
source in ``@modelcontextprotocol/conformance`` says what); the checks are on
the wire, so a handler only has to drive mcpwire's ``Client`` the ordinary way.

Exit status: 0 when the scenario's steps ran, 1 when one raised.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlencode

import anyio

from mcpwire import (
    AssertionProvider,
    Client,
    OAuthClient,
    headless_redirect_handler,
    load_signer,
)
from mcpwire._http_client_conn import URL, HTTPClient
from mcpwire.sansio._json import JSONObject, JSONValue

Handler = Callable[[str], Awaitable[None]]
HANDLERS: dict[str, Handler] = {}
MODERN_VERSIONS = ("2026-07-28",)

log = logging.getLogger("everything_client")


def scenario(name: str) -> Callable[[Handler], Handler]:
    def register(fn: Handler) -> Handler:
        HANDLERS[name] = fn
        return fn

    return register


def client_mode() -> str:
    """The era to speak: what the harness says its mock speaks, else ``auto``."""
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
    if version is None or version in MODERN_VERSIONS:
        return "auto"
    return "legacy"


def context() -> JSONObject:
    raw = os.environ.get("MCP_CONFORMANCE_CONTEXT")
    if not raw:
        return {}
    value = json.loads(raw)
    return value if isinstance(value, dict) else {}


# -- callbacks ---------------------------------------------------------------------------


async def elicit_with_defaults(params: JSONObject) -> JSONObject:
    """Accept, filling every field that has a default (SEP-1034)."""
    schema = params.get("requestedSchema")
    content: JSONObject = {}
    props = schema.get("properties") if isinstance(schema, dict) else None
    if isinstance(props, dict):
        for name, prop in props.items():
            if isinstance(prop, dict) and "default" in prop:
                content[name] = prop["default"]
    return {"action": "accept", "content": content}


async def sample_stub(params: JSONObject) -> JSONObject:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "This is a test response from the client"},
        "model": "mcpwire-conformance-stub",
        "stopReason": "endTurn",
    }


def open_client(url: str, **options: Any) -> Client:
    options.setdefault("mode", client_mode())
    options.setdefault("elicitation", elicit_with_defaults)
    options.setdefault("sampling", sample_stub)
    options.setdefault("roots", [])
    options.setdefault("client_info", {"name": "mcpwire-conformance-client", "version": "1.0.0"})
    # Below the harness's own 60 s budget per client, so a lost answer fails fast.
    options.setdefault("request_timeout", 20.0)
    return Client.http(url, **options)


def stub_arguments(schema: JSONObject) -> JSONObject:
    """The least arguments that satisfy a tool's ``required`` list."""
    by_type: dict[str, JSONValue] = {
        "string": "x",
        "integer": 0,
        "number": 0,
        "boolean": False,
        "object": {},
        "array": [],
        "null": None,
    }
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    required = schema.get("required")
    args: JSONObject = {}
    for name in required if isinstance(required, list) else []:
        if not isinstance(name, str):
            continue
        prop = props.get(name)
        kind = prop.get("type") if isinstance(prop, dict) else None
        args[name] = by_type.get(kind, "x") if isinstance(kind, str) else "x"
    return args


# -- scenarios -----------------------------------------------------------------------------


@scenario("initialize")
@scenario("json-schema-ref-no-deref")
async def list_only(url: str) -> None:
    async with open_client(url) as client:
        await client.list_tools()


@scenario("tools_call")
@scenario("http-standard-headers")
@scenario("request-metadata")
async def add_numbers(url: str) -> None:
    async with open_client(url) as client:
        await client.list_tools()
        result = await client.call_tool("add_numbers", {"a": 5, "b": 3})
        log.info("add_numbers: %s", result)


@scenario("sse-retry")
async def reconnection(url: str) -> None:
    async with open_client(url) as client:
        await client.list_tools()
        await client.call_tool("test_reconnection", {})


@scenario("elicitation-sep1034-client-defaults")
async def elicitation_defaults(url: str) -> None:
    async with open_client(url) as client:
        await client.list_tools()
        await client.call_tool("test_client_elicitation_defaults", {})


@scenario("json-schema-2020-12-preservation")
async def schema_echo(url: str) -> None:
    async with open_client(url) as client:
        tools = await client.list_tools()
        focal = next(t for t in tools if t.name == "json_schema_2020_12_tool")
        await client.call_tool("json_schema_echo", {"schema": focal.input_schema})


@scenario("sep-2322-client-request-state")
async def request_state(url: str) -> None:
    async def confirm(params: JSONObject) -> JSONObject:
        return {"action": "accept", "content": {"confirmed": True}}

    async with open_client(url, elicitation=confirm) as client:
        await client.list_tools()
        for name in (
            "test_mrtr_echo_state",
            "test_mrtr_unrelated",
            "test_mrtr_no_state",
            "test_mrtr_no_result_type",
        ):
            await client.call_tool(name, {})


@scenario("http-invalid-tool-headers")
async def call_every_tool(url: str) -> None:
    async with open_client(url) as client:
        for tool in await client.list_tools():
            try:
                await client.call_tool(tool.name, stub_arguments(tool.input_schema))
            except Exception as exc:
                log.warning("%s: %s", tool.name, exc)


@scenario("http-custom-headers")
async def custom_headers(url: str) -> None:
    calls = context().get("toolCalls")
    async with open_client(url) as client:
        surfaced = {t.name for t in await client.list_tools()}
        for call in calls if isinstance(calls, list) else []:
            if not isinstance(call, dict) or call.get("name") not in surfaced:
                continue
            args = call.get("arguments")
            try:
                await client.call_tool(str(call["name"]), args if isinstance(args, dict) else {})
            except Exception as exc:
                log.warning("%s: %s", call.get("name"), exc)


#: The client ID metadata document URL the harness expects ('auth/basic-cimd').
CIMD_URL = "https://conformance-test.local/client-metadata.json"


def identity_assertion_grant(ctx: JSONObject) -> AssertionProvider:
    """SEP-990: the identity assertion grant (ID-JAG) for the MCP authorization
    server, from the enterprise identity provider by RFC 8693 token exchange of
    the user's ID token the harness hands over."""

    async def exchange(issuer: str, resource: str) -> str:
        endpoint = ctx.get("idp_token_endpoint")
        if not isinstance(endpoint, str):
            raise RuntimeError("the context has no idp_token_endpoint")
        form = {
            "grant_type": "urn:ietf:params:oauth:grant-type:token-exchange",
            "requested_token_type": "urn:ietf:params:oauth:token-type:id-jag",
            "subject_token": str(ctx.get("idp_id_token")),
            "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
            "audience": issuer,
            "resource": resource,
            "client_id": str(ctx.get("idp_client_id")),
        }
        http = HTTPClient()
        try:
            response = await http.request(
                "POST",
                URL.parse(endpoint),
                [("Content-Type", "application/x-www-form-urlencoded")],
                urlencode(form).encode(),
                timeout=20.0,
            )
            async with response:
                body = json.loads(await response.read_body(1 << 20))
        finally:
            await http.aclose()
        if response.status != 200 or not isinstance(body.get("access_token"), str):
            raise RuntimeError(f"token exchange refused: HTTP {response.status} {body}")
        return str(body["access_token"])

    return exchange


def oauth_client() -> OAuthClient:
    """Authorization for an ``auth/*`` scenario, from what the harness gives.

    Client credentials when the scenario says so; otherwise the authorization
    code grant, its user step done by fetching the authorization URL (the
    harness's endpoint redirects at once), with the pre-registered client of
    the context when there is one.
    """
    ctx = context()
    client_id = ctx.get("client_id")
    secret = ctx.get("client_secret")
    client_id = client_id if isinstance(client_id, str) else None
    secret = secret if isinstance(secret, str) else None
    name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if name.startswith("auth/client-credentials"):
        pem = ctx.get("private_key_pem")
        return OAuthClient(
            grant="client_credentials",
            client_id=client_id,
            client_secret=secret,
            # private_key_jwt (RFC 7523 §2.2) when the harness hands over a key.
            client_assertion_signer=load_signer(pem) if isinstance(pem, str) else None,
        )
    if name == "auth/wif-jwt-bearer":
        workload = ctx.get("valid_jwt")

        async def workload_token(issuer: str, resource: str) -> str:
            if not isinstance(workload, str):
                raise RuntimeError("the context has no valid_jwt")
            return workload

        return OAuthClient(grant="jwt_bearer", client_id=client_id, assertion=workload_token)
    if name in ("auth/enterprise-managed-authorization", "auth/cross-app-access-complete-flow"):
        return OAuthClient(
            grant="jwt_bearer",
            client_id=client_id,
            client_secret=secret,
            assertion=identity_assertion_grant(ctx),
        )
    return OAuthClient(
        redirect_handler=headless_redirect_handler(),
        client_name="mcpwire-conformance-client",
        client_id=client_id,
        client_secret=secret,
        client_metadata_url=CIMD_URL,
        # SEP-1932: DPoP-bound tokens, with a key made for this run.
        dpop=name in ("auth/dpop", "auth/dpop-nonce"),
    )


async def default(url: str) -> None:
    """Scenarios with no handler of their own: the ``auth/*`` ones.

    List the tools and call the first one (scope step-up scenarios ask for
    more on the call); a refused call is logged, as the scenario may mean it.
    """
    name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    auth = oauth_client() if name.startswith("auth/") else None
    async with open_client(url, auth=auth) as client:
        tools = await client.list_tools()
        if tools:
            try:
                await client.call_tool(tools[0].name, stub_arguments(tools[0].input_schema))
            except Exception as exc:
                log.warning("%s: %s", tools[0].name, exc)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: everything_client.py URL", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    handler = HANDLERS.get(name, default)
    log.info("scenario %r (mode %s) against %s", name, client_mode(), args[0])
    try:
        anyio.run(handler, args[0])
    except Exception:
        log.exception("scenario %r failed", name)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
