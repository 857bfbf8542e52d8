"""A client's error answer to a request the server made inside a handler.

Legacy era: ``ctx.elicit``, ``ctx.sample`` and ``ctx.list_roots`` are
server-to-client requests. When the client answers one with a JSON-RPC error,
that is the client's answer to the server's request, not the server's error for
the client's ``tools/call`` (tools.mdx "Error Handling": protocol errors versus
tool execution errors). The handler sees ``ClientAnswerError`` (the client's
code, message and data); escaping a tool it makes the result ``isError: true``;
escaping a prompt or resource handler, -32603. A ``JSONRPCError`` a handler
raises on purpose is still the request's JSON-RPC error.

Clients here are real: ``mcpwire.Client`` on an in-process server, with
callbacks that raise ``JSONRPCError`` (its session answers with that error),
and a plain ``Session`` over a serialising memory pair whose request handler
raises it.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from inproc import WAIT

from mcpwire import (
    Client,
    ClientAnswerError,
    Context,
    JSONRPCError,
    RequestContext,
    Server,
    Session,
    memory_pair,
)
from mcpwire.sansio import JSONObject, Request

pytestmark = pytest.mark.anyio

SCHEMA: dict[str, Any] = {"type": "object", "properties": {"name": {"type": "string"}}}
REFUSAL = JSONRPCError(-32001, "the user closed the dialog", {"why": "closed"})
VERSIONS = ["2025-06-18", "2025-11-25"]


def build_server(seen: list[ClientAnswerError]) -> Server:
    server = Server("asks", "1")

    @server.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", SCHEMA)
        return f"hello {answer['content']['name']}"

    @server.tool()
    async def sample(ctx: Context) -> str:
        result = await ctx.sample([{"role": "user", "content": {"type": "text", "text": "hi"}}], 9)
        return str(result)

    @server.tool()
    async def roots(ctx: Context) -> str:
        return str(await ctx.list_roots())

    @server.tool()
    async def ask_and_look(ctx: Context) -> str:
        try:
            await ctx.elicit("Your name?", SCHEMA)
        except ClientAnswerError as exc:
            seen.append(exc)
            return "the tool handled it"
        return "answered"

    @server.tool()
    async def ask_and_refuse(ctx: Context) -> str:
        try:
            await ctx.elicit("Your name?", SCHEMA)
        except ClientAnswerError:
            raise JSONRPCError(-32602, "no name, no call") from None
        return "answered"

    @server.tool()
    def refuse_on_purpose() -> str:
        raise JSONRPCError(-32602, "refused on purpose", {"k": 1})

    @server.prompt()
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", SCHEMA)
        return f"Greet {answer['content']['name']}."

    @server.resource("mem://me")
    async def me(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", SCHEMA)
        return str(answer)

    return server


async def refuse(params: JSONObject) -> JSONObject:
    raise REFUSAL


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("tool", "method"),
    [("ask", "elicitation/create"), ("sample", "sampling/createMessage"), ("roots", "roots/list")],
)
async def test_client_error_for_our_ask_is_a_tool_execution_error(
    version: str, tool: str, method: str
) -> None:
    async def roots_refused() -> list[JSONObject]:
        raise REFUSAL

    server = build_server([])
    with anyio.fail_after(WAIT):
        async with Client(
            server, mode=version, elicitation=refuse, sampling=refuse, roots=roots_refused
        ) as client:
            result = await client.call_tool(tool)
            assert result.is_error
            assert result.text == (
                f"Error executing tool: the client answered {method} with error "
                "-32001: the user closed the dialog"
            )
            # The connection serves on.
            assert (await client.call_tool("ask_and_look")).text == "the tool handled it"


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_tool_sees_the_clients_error(version: str) -> None:
    seen: list[ClientAnswerError] = []
    with anyio.fail_after(WAIT):
        async with Client(build_server(seen), mode=version, elicitation=refuse) as client:
            result = await client.call_tool("ask_and_look")
    assert not result.is_error and result.text == "the tool handled it"
    (exc,) = seen
    assert isinstance(exc, JSONRPCError)
    assert (exc.code, exc.message, exc.data) == (REFUSAL.code, REFUSAL.message, REFUSAL.data)
    assert exc.method == "elicitation/create"


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_jsonrpc_error_the_tool_raises_is_still_the_calls_error(version: str) -> None:
    with anyio.fail_after(WAIT):
        async with Client(build_server([]), mode=version, elicitation=refuse) as client:
            with pytest.raises(JSONRPCError) as own:
                await client.call_tool("refuse_on_purpose")
            assert (own.value.code, own.value.message) == (-32602, "refused on purpose")
            assert own.value.data == {"k": 1}
            with pytest.raises(JSONRPCError) as chosen:
                await client.call_tool("ask_and_refuse")
            assert (chosen.value.code, chosen.value.message) == (-32602, "no name, no call")


@pytest.mark.parametrize(
    ("method", "params"),
    [("prompts/get", {"name": "greet"}), ("resources/read", {"uri": "mem://me"})],
)
async def test_client_error_for_our_ask_in_a_prompt_or_resource_is_internal_error(
    method: str, params: JSONObject
) -> None:
    """These results have no isError form: -32603 saying what the client answered,
    never the client's own code passed off as the server's."""

    asked: list[str] = []

    async def on_request(request: Request, ctx: RequestContext) -> JSONObject:
        asked.append(request.method)
        raise REFUSAL

    server = build_server([])
    client_end, server_end = memory_pair(wire=True)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_end)
        async with Session(client_end, on_request=on_request) as session:
            await _initialize(session)
            with anyio.fail_after(WAIT), pytest.raises(JSONRPCError) as info:
                await session.request(method, params)
        tg.cancel_scope.cancel()
    assert info.value.code == -32603
    assert info.value.message == (
        "Internal error: the client answered elicitation/create with error "
        "-32001: the user closed the dialog"
    )
    assert asked == ["elicitation/create"]


async def _initialize(session: Session) -> None:
    init = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "t", "version": "1"},
    }
    with anyio.fail_after(WAIT):
        await session.request("initialize", init)
    await session.notify("notifications/initialized")
