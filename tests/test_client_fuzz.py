"""A hostile server against every client method: whatever JSON it answers with,
the client returns a typed result or raises an ``MCPWireError``, at once, and the
connection stays usable.

The peer is a scripted server (a bare ``Session`` over a serialising in-memory
pair, and a scripted HTTP/1.1 server for Streamable HTTP and its event streams):
it completes the handshake properly, then answers the request under test with
JSON of any shape (as the result, as the error, or as the whole message), after
sending the client a notification and a request of its own with parameters of
any shape. The client must answer that request (a result or an error), must not
raise anything but ``MCPWireError`` from the method under test, and must not wait
for its request timeout: a malformed answer fails the call when it arrives
(pain point 1). Both backends.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from http_client.rawserver import Reply, Seen, event, raw_server
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from strategies import json_values

import mcpwire
from mcpwire import Client, JSONRPCError, MCPWireError, RequestContext, Session
from mcpwire.sansio import JSONObject, Request

pytestmark = pytest.mark.anyio

LEGACY = "2025-06-18"
#: Far above how long any answer takes here: a call still waiting at FAST has hung.
REQUEST_TIMEOUT = 30.0
FAST = 10.0

INIT_RESULT: JSONObject = {
    "protocolVersion": LEGACY,
    "capabilities": {
        "tools": {},
        "resources": {"subscribe": True},
        "prompts": {},
        "completions": {},
        "logging": {},
    },
    "serverInfo": {"name": "hostile", "version": "0"},
}

Op = Callable[[Client], Awaitable[object]]
OPS: dict[str, Op] = {
    "list_tools": lambda c: c.list_tools(cache=False),
    "call_tool": lambda c: c.call_tool("x", {"a": 1}),
    "list_resources": lambda c: c.list_resources(cache=False),
    "list_resource_templates": lambda c: c.list_resource_templates(cache=False),
    "read_resource": lambda c: c.read_resource("file:///x", cache=False),
    "subscribe_resource": lambda c: c.subscribe_resource("file:///x"),
    "list_prompts": lambda c: c.list_prompts(cache=False),
    "get_prompt": lambda c: c.get_prompt("p", {"a": "b"}),
    "complete": lambda c: c.complete({"type": "ref/prompt", "name": "p"}, "a", "b"),
    "set_logging_level": lambda c: c.set_logging_level("debug"),
    "ping": lambda c: c.ping(),
}
#: What a server may send a client, each with parameters of any shape.
SERVER_NOTIFICATIONS = [
    "notifications/message",
    "notifications/progress",
    "notifications/cancelled",
    "notifications/tools/list_changed",
    "notifications/resources/updated",
    "notifications/tasks/status",
]
SERVER_REQUESTS = ["ping", "roots/list", "sampling/createMessage", "elicitation/create"]

#: The answer's shape: as the result, as the error object, or the whole message.
SHAPES = ("result", "error", "message")


def answer_body(rid: object, shape: str, value: Any) -> Any:
    if shape == "result":
        return {"jsonrpc": "2.0", "id": rid, "result": value}
    if shape == "error":
        return {"jsonrpc": "2.0", "id": rid, "error": value}
    return value


class Hostile:
    """One round's script: what the peer sends and answers."""

    def __init__(self, shape: str, value: Any, note: str, ask: str, params: Any) -> None:
        self.shape, self.value = shape, value
        self.note, self.ask, self.params = note, ask, params
        self.asked: list[object] = []  # what the client answered to our request
        self.done = False  # the method under test has returned: answer plainly now


async def run_op(client: Client, op: str) -> None:
    """The method under test: any outcome but a non-MCP exception or a hang."""
    with anyio.fail_after(FAST):
        try:
            await OPS[op](client)
        except MCPWireError:
            pass


async def answer_ask(client_session: Session, script: Hostile) -> None:
    params = script.params if isinstance(script.params, dict) else None
    with anyio.fail_after(FAST):
        try:
            script.asked.append(await client_session.request(script.ask, params))
        except JSONRPCError as exc:
            script.asked.append(exc.code)


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    op=st.sampled_from(sorted(OPS)),
    shape=st.sampled_from(SHAPES),
    value=json_values,
    note=st.sampled_from(SERVER_NOTIFICATIONS),
    ask=st.sampled_from(SERVER_REQUESTS),
    params=json_values,
)
def test_any_answer_over_a_serialising_pair(
    anyio_backend: str, op: str, shape: str, value: Any, note: str, ask: str, params: Any
) -> None:
    script = Hostile(shape, value, note, ask, params)

    async def main() -> None:
        async def on_request(request: Request, ctx: RequestContext) -> JSONObject:
            if request.method == "initialize":
                return INIT_RESULT
            if script.done:
                return {}
            await ctx.session.notify(note, params if isinstance(params, dict) else None)
            await answer_ask(ctx.session, script)
            if shape == "result":
                return value  # type: ignore[no-any-return]
            if shape == "error":
                raise JSONRPCError(-32000, "refused", value)
            return {"whole": value}

        client_end, server_end = mcpwire.memory_pair(wire=True)
        async with (
            Session(server_end, on_request=on_request) as server,
            Client(client_end, mode="legacy", request_timeout=REQUEST_TIMEOUT) as client,
        ):
            await run_op(client, op)
            script.done = True
            # The client answered each request of ours (a method may make several calls).
            assert script.asked
            assert all(isinstance(answer, (dict, int)) for answer in script.asked)
            with anyio.fail_after(FAST):
                await client.ping()
            assert not server.closed

    anyio.run(main, backend=anyio_backend)


@settings(max_examples=50, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    op=st.sampled_from(sorted(OPS)),
    shape=st.sampled_from(SHAPES),
    value=json_values,
    stream=st.booleans(),
)
def test_any_answer_over_streamable_http(
    anyio_backend: str, op: str, shape: str, value: Any, stream: bool
) -> None:
    """The same over Streamable HTTP (legacy era, with a session), the answer in a
    JSON body or an event stream."""

    async def handler(seen: Seen) -> Reply:
        if seen.method == "GET":
            return Reply.empty(405)
        if seen.method == "DELETE":
            return Reply.empty(200)
        message = seen.json
        if seen.rpc_method == "initialize":
            init = {"jsonrpc": "2.0", "id": message["id"], "result": INIT_RESULT}
            return Reply.json(init, headers=[("Mcp-Session-Id", "s1")])
        if not isinstance(message, dict) or "id" not in message:
            return Reply.empty(202)
        if seen.rpc_method == "ping" and seen.headers.get("x-after") == "yes":
            return Reply.json({"jsonrpc": "2.0", "id": message["id"], "result": {}})
        body = answer_body(message["id"], shape, value)
        return Reply.sse(event(body)) if stream else Reply.json(body)

    async def main() -> None:
        async with raw_server(handler) as server:
            async with Client.http(
                server.url, mode="legacy", request_timeout=REQUEST_TIMEOUT
            ) as client:
                await run_op(client, op)
            async with Client.http(server.url, mode="legacy", headers={"X-After": "yes"}) as client:
                with anyio.fail_after(FAST):
                    await client.ping()

    anyio.run(main, backend=anyio_backend)
