"""Named and batched asks (``Context.ask_all``) in both eras, and the version retry."""

from __future__ import annotations

import pytest

import mcpwire
from mcpwire import Client, Context, Server, Session
from mcpwire.sansio import JSONObject, Request

pytestmark = pytest.mark.anyio

NAME: JSONObject = {
    "method": "elicitation/create",
    "params": {
        "mode": "form",
        "message": "Name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
    },
}
SAMPLE: JSONObject = {
    "method": "sampling/createMessage",
    "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
        "maxTokens": 5,
    },
}
ROOTS: JSONObject = {"method": "roots/list"}


def build() -> Server:
    server = Server("asks")

    @server.tool(structured=False)
    async def together(ctx: Context) -> str:
        got = await ctx.ask_all({"user_name": NAME, "greeting": SAMPLE, "client_roots": ROOTS})
        return ",".join(sorted(got))

    @server.tool(structured=False)
    async def named(ctx: Context) -> str:
        answer = await ctx.elicit("Name?", {"type": "object"}, key="who")
        return str(answer.get("action"))

    return server


async def answer_all(params: JSONObject) -> JSONObject:
    return {"action": "accept", "content": {"name": "Ada"}}


async def sampled(params: JSONObject) -> JSONObject:
    return {"role": "assistant", "content": {"type": "text", "text": "yo"}, "model": "m"}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_ask_all_in_both_eras(mode: str) -> None:
    async with Client(
        build(), mode=mode, elicitation=answer_all, sampling=sampled, roots=[{"uri": "file:///x"}]
    ) as client:
        result = await client.call_tool("together")
        assert result.text == "client_roots,greeting,user_name"


async def test_ask_all_sends_every_unanswered_ask_in_one_round() -> None:
    client_end, server_end = mcpwire.memory_pair()
    server = build()
    meta: JSONObject = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "elicitation": {},
            "sampling": {},
            "roots": {},
        },
    }
    import anyio

    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_end)
        async with Session(client_end) as session:
            first = await session.request(
                "tools/call", {"name": "together", "arguments": {}, "_meta": meta}
            )
            assert first["resultType"] == "input_required"
            assert set(first["inputRequests"]) == {"user_name", "greeting", "client_roots"}  # type: ignore[arg-type]
            retry = await session.request(
                "tools/call",
                {
                    "name": "together",
                    "arguments": {},
                    "_meta": meta,
                    "requestState": first["requestState"],
                    "inputResponses": {
                        "user_name": {"action": "accept", "content": {"name": "Ada"}},
                        "greeting": {
                            "role": "assistant",
                            "model": "m",
                            "content": {"type": "text", "text": "yo"},
                        },
                        "client_roots": {"roots": []},
                    },
                },
            )
            assert retry["content"] == [{"type": "text", "text": "client_roots,greeting,user_name"}]
            named = await session.request(
                "tools/call", {"name": "named", "arguments": {}, "_meta": meta}
            )
            assert list(named["inputRequests"]) == ["who"]  # type: ignore[call-overload]
        tg.cancel_scope.cancel()


async def test_ask_all_checks_every_capability() -> None:
    async with Client(build(), elicitation=answer_all) as client:
        with pytest.raises(mcpwire.JSONRPCError) as info:
            await client.call_tool("together")
    assert info.value.code == -32021


async def test_discover_retries_once_with_a_version_the_server_names() -> None:
    """A -32022 naming our own version is retried once, never a fall back to initialize."""
    calls: list[str] = []

    async def on_request(request: Request, ctx: mcpwire.RequestContext) -> JSONObject:
        calls.append(request.method)
        if request.method == "server/discover" and calls.count("server/discover") == 1:
            raise mcpwire.JSONRPCError(
                -32022,
                "Unsupported protocol version",
                {"supported": ["2026-07-28"], "requested": "2026-07-28"},
            )
        if request.method == "server/discover":
            return {
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {},
                "ttlMs": 0,
                "cacheScope": "private",
            }
        raise mcpwire.JSONRPCError(-32601, "no")

    import anyio

    client_end, server_end = mcpwire.memory_pair()
    async with anyio.create_task_group() as tg, Session(server_end, on_request=on_request):
        async with Client(client_end) as client:
            assert client.era == "modern"
        tg.cancel_scope.cancel()
    assert calls == ["server/discover", "server/discover"]
