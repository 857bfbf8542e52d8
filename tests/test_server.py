"""Feature tests for ``mcpwire.Server`` in the legacy era, driven with raw JSON-RPC.

The server runs ``serve()`` on one end of ``memory_pair(wire=True)`` (every
message is serialised and parsed, as over a byte stream). The other end is a
plain ``mcpwire.Session`` (or, where the exact frames matter, the raw
transport), so every test sees the exact results and error codes a client on
the wire would see. Modern-era (2026-07-28) server tests live in
``test_modern.py``; this module also holds the per-request era mixing tests and
a Hypothesis sweep over legacy and modern request sequences.
"""

from __future__ import annotations

import base64
import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypedDict

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mcpwire
from mcpwire import Context, JSONRPCError, RequestContext, Server, Session, ToolError
from mcpwire._registry import call_handler, is_quick
from mcpwire.sansio import Batch, ErrorResponse, Notification, Request, Response

pytestmark = pytest.mark.anyio

WAIT = 5.0
LEGACY_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
POST_TEMPLATE = "mem://users/{user_id}/posts/{post_id}"
NAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
BINARY = b"\x00\x01\xfe\xffbinary"


class Weather(TypedDict):
    city: str
    temperature: float


@dataclass
class Point:
    x: int
    y: int


def build_server(**options: Any) -> Server:
    """A server with one of everything the tests below poke at."""
    server = Server("test-server", "1.2.3", title="Test server", instructions="Be nice.", **options)

    @server.tool()
    def echo(message: str) -> str:
        """Echo the message."""
        return message

    @server.tool()
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        await anyio.sleep(0)
        return a + b

    @server.tool()
    def weather(city: str) -> Weather:
        return {"city": city, "temperature": 21.5}

    @server.tool()
    def point() -> Point:
        return Point(1, 2)

    @server.tool()
    def counts() -> dict[str, int]:
        return {"a": 1, "b": 2}

    @server.tool()
    def plain():  # type: ignore[no-untyped-def]  # no annotation: no structured output
        return "plain text"

    @server.tool()
    def crash() -> str:
        raise RuntimeError("kaboom")

    @server.tool()
    def refuse() -> str:
        raise ToolError("not today")

    @server.tool()
    async def progress(ctx: Context, steps: int = 3) -> str:
        for i in range(1, steps + 1):
            await ctx.report_progress(i, steps, f"step {i}")
        return "done"

    @server.tool()
    async def chatty(ctx: Context) -> str:
        for level in ("debug", "info", "warning", "error"):
            await ctx.log(level, f"{level} message", logger="chatty")
        return "logged"

    @server.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", NAME_SCHEMA)
        content = answer.get("content")
        if answer.get("action") == "accept" and isinstance(content, dict):
            return f"hello {content['name']}"
        return f"no answer ({answer.get('action')})"

    @server.resource("mem://text", mime_type="text/plain")
    def text() -> str:
        """A text resource."""
        return "hello resource"

    @server.resource("mem://bin", mime_type="application/octet-stream")
    def binary() -> bytes:
        return BINARY

    @server.resource(POST_TEMPLATE, mime_type="application/json")
    def post(user_id: str, post_id: str) -> dict[str, str]:
        return {"user": user_id, "post": post_id}

    @server.prompt()
    def greet(name: str, style: str = "friendly") -> str:
        """Greet someone."""
        return f"Write a {style} greeting for {name}."

    @server.completion(prompt="greet", argument="style")
    def styles(value: str) -> list[str]:
        return [s for s in ("friendly", "formal", "fancy", "pirate") if s.startswith(value)]

    @server.completion(prompt="greet", argument="name")
    def names(value: str) -> list[str]:
        return [f"{value}{i:03d}" for i in range(150)]

    @server.completion(resource=POST_TEMPLATE, argument="post_id")
    def post_ids(value: str, context: dict[str, str]) -> list[str]:
        user = context.get("user_id", "?")
        return [f"{user}-{n}" for n in ("1", "2", "10") if n.startswith(value)]

    return server


# -- harness -------------------------------------------------------------------------


class Inbox:
    """Collects the notifications a client session receives, in order."""

    def __init__(self) -> None:
        self.items: list[Notification] = []
        self._send, self._receive = anyio.create_memory_object_stream[Notification](1000)

    async def __call__(self, note: Notification) -> None:
        self.items.append(note)
        self._send.send_nowait(note)

    def close(self) -> None:
        self._send.close()
        self._receive.close()

    def methods(self) -> list[str]:
        return [n.method for n in self.items]

    def of(self, method: str) -> list[Notification]:
        return [n for n in self.items if n.method == method]

    async def next(self, method: str) -> Notification:
        with anyio.fail_after(WAIT):
            while True:
                note = await self._receive.receive()
                if note.method == method:
                    return note


@asynccontextmanager
async def serving(server: Server, **session_kw: Any) -> AsyncIterator[tuple[Session, Inbox]]:
    """A client ``Session`` connected to ``server`` over a serialising memory pair."""
    client_end, server_end = mcpwire.memory_pair(wire=True)
    inbox = Inbox()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, server_end)
            async with Session(client_end, on_notification=inbox, **session_kw) as session:
                yield session, inbox
            tg.cancel_scope.cancel()
    finally:
        inbox.close()


@asynccontextmanager
async def raw_serving(server: Server) -> AsyncIterator[mcpwire.MemoryTransport]:
    """The raw client end of a connection to ``server``: the test sends frames itself."""
    client_end, server_end = mcpwire.memory_pair(wire=True)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_end)
        try:
            yield client_end
        finally:
            await client_end.aclose()
            tg.cancel_scope.cancel()


async def receive(raw: mcpwire.MemoryTransport) -> Any:
    with anyio.fail_after(WAIT):
        return await raw.receive()


async def initialize(
    session: Session, version: str = "2025-11-25", caps: dict[str, Any] | None = None
) -> dict[str, Any]:
    result = await session.request(
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": caps or {},
            "clientInfo": {"name": "test-client", "version": "0.0.1"},
        },
    )
    await session.notify("notifications/initialized")
    return result


async def error_of(session: Session, method: str, params: dict[str, Any] | None = None) -> Any:
    with anyio.fail_after(WAIT), pytest.raises(JSONRPCError) as info:
        await session.request(method, params)
    return info.value


async def call(session: Session, name: str, arguments: dict[str, Any] | None = None) -> Any:
    with anyio.fail_after(WAIT):
        return await session.request("tools/call", {"name": name, "arguments": arguments or {}})


def envelope(**extra: Any) -> dict[str, Any]:
    return {PV: MODERN, CC: {}, **extra}


# -- initialize ------------------------------------------------------------------------


@pytest.mark.parametrize("version", LEGACY_VERSIONS)
async def test_initialize_echoes_every_legacy_version(version: str) -> None:
    async with serving(build_server()) as (session, _):
        result = await initialize(session, version)
        assert result["protocolVersion"] == version


@pytest.mark.parametrize("requested", ["1999-01-01", "2025-12-01", MODERN, ""])
async def test_initialize_offers_latest_legacy_for_other_versions(requested: str) -> None:
    async with serving(build_server()) as (session, _):
        result = await initialize(session, requested)
        assert result["protocolVersion"] == "2025-11-25"


async def test_initialize_result_shape() -> None:
    async with serving(build_server()) as (session, _):
        result = await initialize(session)
    assert set(result) == {"protocolVersion", "capabilities", "serverInfo", "instructions"}
    assert "resultType" not in result
    assert result["serverInfo"] == {
        "name": "test-server",
        "version": "1.2.3",
        "title": "Test server",
    }
    assert result["instructions"] == "Be nice."
    caps = result["capabilities"]
    assert caps["tools"] == {"listChanged": True}
    assert caps["resources"] == {"subscribe": True, "listChanged": True}
    assert caps["prompts"] == {"listChanged": True}
    assert "completions" in caps
    assert "logging" in caps


async def test_initialize_without_instructions_omits_them() -> None:
    server = Server("bare")
    async with serving(server) as (session, _):
        result = await initialize(session)
    assert "instructions" not in result
    assert "tools" not in result["capabilities"]


async def test_initialize_with_bad_params_is_invalid_params() -> None:
    async with serving(build_server()) as (session, _):
        err = await error_of(session, "initialize", {"protocolVersion": 20251125})
        assert err.code == -32602
        # The refused handshake did not count: a proper one still works.
        assert (await initialize(session))["protocolVersion"] == "2025-11-25"


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tools/list", None),
        ("tools/call", {"name": "echo", "arguments": {"message": "x"}}),
        ("resources/read", {"uri": "mem://text"}),
        ("prompts/list", None),
        ("logging/setLevel", {"level": "info"}),
        ("no/such/method", None),
    ],
)
async def test_requests_before_initialize_are_refused(
    method: str, params: dict[str, Any] | None
) -> None:
    async with serving(build_server()) as (session, _):
        err = await error_of(session, method, params)
        # A method that does not exist is -32601 at any stage (design.md); the others
        # are refused until the handshake is done.
        assert err.code == (-32601 if method == "no/such/method" else -32600)
        # ping is the exception, and the refusal did not break the connection.
        assert await session.request("ping") == {}
        await initialize(session)
        assert "tools" in await session.request("tools/list")


async def test_ping_before_and_after_initialize() -> None:
    async with serving(build_server()) as (session, _):
        assert await session.request("ping") == {}
        await initialize(session)
        assert await session.request("ping") == {}
        assert await session.request("ping", {"_meta": {"x": 1}}) == {}


async def test_second_initialize_is_refused() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session, "2025-06-18")
        err = await error_of(
            session,
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}},
        )
        assert err.code == -32600
        # The first negotiation stands.
        assert await session.request("ping") == {}


async def test_initialized_notification_accepted_and_never_answered() -> None:
    async with raw_serving(build_server()) as raw:
        await raw.send(
            Request(
                1,
                "initialize",
                {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}},
            )
        )
        reply = await receive(raw)
        assert isinstance(reply, Response) and reply.id == 1
        await raw.send(Notification("notifications/initialized"))
        await raw.send(Notification("notifications/initialized"))  # repeated: harmless
        await raw.send(Notification("notifications/whatever"))  # unknown: ignored
        await raw.send(Request(2, "tools/list"))
        reply = await receive(raw)
        assert isinstance(reply, Response) and reply.id == 2
        assert [t["name"] for t in reply.result["tools"]][:2] == ["echo", "add"]


async def test_requests_between_result_and_initialized_are_served() -> None:
    async with serving(build_server()) as (session, _):
        await session.request(
            "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {}}
        )
        assert "tools" in await session.request("tools/list")


# -- batches -------------------------------------------------------------------------------


async def _raw_initialize(raw: mcpwire.MemoryTransport, version: str) -> None:
    await raw.send(
        Request(0, "initialize", {"protocolVersion": version, "capabilities": {}, "clientInfo": {}})
    )
    reply = await receive(raw)
    assert isinstance(reply, Response) and reply.result["protocolVersion"] == version
    await raw.send(Notification("notifications/initialized"))


async def test_batches_accepted_on_2025_03_26() -> None:
    async with raw_serving(build_server()) as raw:
        await _raw_initialize(raw, "2025-03-26")
        await raw.send(
            [
                Request(1, "ping"),
                Notification("notifications/initialized"),
                Request("two", "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}),
                Request(3, "initialize", {"protocolVersion": "2025-03-26", "capabilities": {}}),
            ]
        )
        reply = await receive(raw)
        assert isinstance(reply, Batch)
        by_id = {item.id: item for item in reply.items}
        assert set(by_id) == {1, "two", 3}
        assert isinstance(by_id[1], Response) and by_id[1].result == {}
        assert isinstance(by_id["two"], Response)
        # 2025-03-26 predates structured output: only the text form is sent.
        assert by_id["two"].result["content"] == [{"type": "text", "text": "5"}]
        assert "structuredContent" not in by_id["two"].result
        assert isinstance(by_id[3], ErrorResponse) and by_id[3].error.code == -32600
        # An all-notification batch gets no reply at all.
        await raw.send([Notification("notifications/initialized")])
        await raw.send(Request(4, "ping"))
        reply = await receive(raw)
        assert isinstance(reply, Response) and reply.id == 4


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25", None])
async def test_batches_refused_elsewhere(version: str | None) -> None:
    async with raw_serving(build_server()) as raw:
        if version is not None:
            await _raw_initialize(raw, version)
        await raw.send([Request(1, "ping"), Request(2, "ping")])
        reply = await receive(raw)
        assert isinstance(reply, ErrorResponse)
        assert reply.id is None and reply.error.code == -32600
        # The connection keeps serving.
        await raw.send(Request(3, "ping"))
        reply = await receive(raw)
        assert isinstance(reply, Response) and reply.id == 3


# -- tools: listing ----------------------------------------------------------------------------


def _numbered_tool(i: int) -> Any:
    def tool() -> str:
        return str(i)

    return tool


def paged_server() -> Server:
    server = Server("paged", page_size=2)
    for i in range(5):
        server.add_tool(_numbered_tool(i), name=f"t{i}", description=f"tool {i}")
    return server


async def _walk(session: Session, method: str, key: str) -> list[list[str]]:
    pages: list[list[str]] = []
    params: dict[str, Any] | None = None
    for _ in range(10):
        result = await session.request(method, params)
        pages.append([item["name"] for item in result[key]])
        if "nextCursor" not in result:
            return pages
        assert isinstance(result["nextCursor"], str)
        params = {"cursor": result["nextCursor"]}
    raise AssertionError("pagination did not end")


async def test_tools_list_pagination() -> None:
    async with serving(paged_server()) as (session, _):
        await initialize(session)
        pages = await _walk(session, "tools/list", "tools")
        assert pages == [["t0", "t1"], ["t2", "t3"], ["t4"]]
        # Deterministic: a second walk sees the same order and cursors.
        assert await _walk(session, "tools/list", "tools") == pages


def _b64(text: str) -> str:
    return base64.urlsafe_b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    "cursor", ["not a cursor!", "", 2, _b64("prompts:2"), _b64("tools:99"), _b64("tools:-1")]
)
async def test_invalid_cursor_is_invalid_params(cursor: Any) -> None:
    async with serving(paged_server()) as (session, _):
        await initialize(session)
        err = await error_of(session, "tools/list", {"cursor": cursor})
        assert err.code == -32602


async def test_tools_list_shape_and_order() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        result = await session.request("tools/list")
        assert "nextCursor" not in result and "resultType" not in result
        tools = {t["name"]: t for t in result["tools"]}
        assert list(tools)[:4] == ["echo", "add", "weather", "point"]
        echo = tools["echo"]
        assert echo["description"] == "Echo the message."
        assert echo["inputSchema"]["type"] == "object"
        assert echo["inputSchema"]["required"] == ["message"]
        assert echo["inputSchema"]["properties"]["message"]["type"] == "string"
        # Context parameters are not arguments.
        assert "ctx" not in tools["progress"]["inputSchema"].get("properties", {})
        assert "outputSchema" not in tools["plain"]


# -- tools: calling ---------------------------------------------------------------------------


async def test_sync_and_async_tools() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        result = await call(session, "echo", {"message": "hi"})
        assert result["content"] == [{"type": "text", "text": "hi"}]
        assert result.get("isError") is not True
        result = await call(session, "add", {"a": 2, "b": 40})
        assert result["content"][0]["text"] == "42"
        assert result["structuredContent"] == {"result": 42}


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({}, "message"),
        ({"message": 5}, "message"),
    ],
)
async def test_validation_failure_is_error_result_naming_argument(
    arguments: dict[str, Any], named: str
) -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        result = await call(session, "echo", arguments)
        assert result["isError"] is True
        assert named in result["content"][0]["text"]


async def test_validation_failure_names_wrong_typed_argument() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        result = await call(session, "add", {"a": 1, "b": "two"})
        assert result["isError"] is True
        assert "b" in result["content"][0]["text"]


async def test_unknown_tool_is_invalid_params() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        err = await error_of(session, "tools/call", {"name": "nosuch", "arguments": {}})
        assert err.code == -32602
        assert "nosuch" in err.message


async def test_tool_exception_is_error_result() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        result = await call(session, "crash")
        assert result["isError"] is True
        assert "kaboom" in result["content"][0]["text"]
        assert "structuredContent" not in result


async def test_tool_error_is_error_result_with_its_message() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        result = await call(session, "refuse")
        assert result == {"content": [{"type": "text", "text": "not today"}], "isError": True}


@pytest.mark.parametrize(
    ("tool", "structured"),
    [
        ("weather", {"city": "Oslo", "temperature": 21.5}),
        ("point", {"x": 1, "y": 2}),
        ("counts", {"a": 1, "b": 2}),
    ],
)
async def test_object_returns_are_structured_as_is(tool: str, structured: Any) -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        listed = {t["name"]: t for t in (await session.request("tools/list"))["tools"]}
        schema = listed[tool]["outputSchema"]
        assert schema["type"] == "object"
        assert "result" not in schema.get("properties", {})
        args = {"city": "Oslo"} if tool == "weather" else {}
        result = await call(session, tool, args)
        assert result["structuredContent"] == structured
        # The same data is also serialised as text.
        assert result["content"][0]["type"] == "text"
        assert "1" in result["content"][0]["text"]


@pytest.mark.parametrize(
    ("tool", "args", "value", "json_type"),
    [("echo", {"message": "hi"}, "hi", "string"), ("add", {"a": 1, "b": 2}, 3, "integer")],
)
async def test_scalar_returns_are_wrapped(
    tool: str, args: dict[str, Any], value: Any, json_type: str
) -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        listed = {t["name"]: t for t in (await session.request("tools/list"))["tools"]}
        schema = listed[tool]["outputSchema"]
        assert schema["type"] == "object"
        assert schema["required"] == ["result"]
        assert schema["properties"]["result"]["type"] == json_type
        result = await call(session, tool, args)
        assert result["structuredContent"] == {"result": value}


async def test_unannotated_tool_has_content_only() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        result = await call(session, "plain")
        assert result["content"] == [{"type": "text", "text": "plain text"}]
        assert "structuredContent" not in result


# -- context: progress and logging ----------------------------------------------------------------


async def test_progress_only_with_a_token() -> None:
    async with serving(build_server()) as (session, inbox):
        await initialize(session)
        seen: list[tuple[float, float | None, str | None]] = []

        async def on_progress(p: float, total: float | None, message: str | None) -> None:
            seen.append((p, total, message))

        result = await session.request(
            "tools/call",
            {"name": "progress", "arguments": {"steps": 3}},
            on_progress=on_progress,
        )
        assert result["content"][0]["text"] == "done"
        assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
        # Without a token: no progress at all.
        await call(session, "progress", {"steps": 2})
        assert inbox.of("notifications/progress") == []


async def test_progress_echoes_a_string_token() -> None:
    async with serving(build_server()) as (session, inbox):
        await initialize(session)
        await session.request(
            "tools/call",
            {"name": "progress", "arguments": {"steps": 2}, "_meta": {"progressToken": "tok"}},
        )
        notes = inbox.of("notifications/progress")
        assert [n.params for n in notes] == [
            {"progressToken": "tok", "progress": 1, "total": 2, "message": "step 1"},
            {"progressToken": "tok", "progress": 2, "total": 2, "message": "step 2"},
        ]


async def test_log_respects_set_level() -> None:
    async with serving(build_server()) as (session, inbox):
        await initialize(session)
        await call(session, "chatty")
        # No level set yet: everything is sent.
        assert [n.params["level"] for n in inbox.of("notifications/message")] == [  # type: ignore[index]
            "debug",
            "info",
            "warning",
            "error",
        ]
        inbox.items.clear()
        assert await session.request("logging/setLevel", {"level": "warning"}) == {}
        await call(session, "chatty")
        messages = inbox.of("notifications/message")
        assert [n.params for n in messages] == [
            {"level": "warning", "data": "warning message", "logger": "chatty"},
            {"level": "error", "data": "error message", "logger": "chatty"},
        ]


@pytest.mark.parametrize("level", ["verbose", "", 3, None, "WARNING"])
async def test_set_level_invalid_is_invalid_params(level: Any) -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        err = await error_of(session, "logging/setLevel", {"level": level})
        assert err.code == -32602


# -- resources -------------------------------------------------------------------------------------


async def test_resources_list_and_templates() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        resources = (await session.request("resources/list"))["resources"]
        assert resources == [
            {
                "uri": "mem://text",
                "name": "text",
                "description": "A text resource.",
                "mimeType": "text/plain",
            },
            {"uri": "mem://bin", "name": "binary", "mimeType": "application/octet-stream"},
        ]
        templates = (await session.request("resources/templates/list"))["resourceTemplates"]
        assert templates == [
            {"uriTemplate": POST_TEMPLATE, "name": "post", "mimeType": "application/json"}
        ]


async def test_read_static_text() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        result = await session.request("resources/read", {"uri": "mem://text"})
        assert result == {
            "contents": [{"uri": "mem://text", "text": "hello resource", "mimeType": "text/plain"}]
        }


async def test_read_binary_is_base64_blob() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        result = await session.request("resources/read", {"uri": "mem://bin"})
        (item,) = result["contents"]
        assert "text" not in item
        assert base64.b64decode(item["blob"]) == BINARY
        assert item["mimeType"] == "application/octet-stream"


async def test_read_template_match_with_variables() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        uri = "mem://users/ada/posts/7"
        result = await session.request("resources/read", {"uri": uri})
        (item,) = result["contents"]
        assert item["uri"] == uri
        assert item["mimeType"] == "application/json"
        import json

        assert json.loads(item["text"]) == {"user": "ada", "post": "7"}


@pytest.mark.parametrize("uri", ["mem://nope", "mem://users/ada", "other://text"])
async def test_read_unknown_resource_is_32002_with_uri(uri: str) -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        err = await error_of(session, "resources/read", {"uri": uri})
        assert err.code == -32002
        assert err.data == {"uri": uri}


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize(
    ("post", "escape", "why"),
    [
        ("%ZZ", "%ZZ", "which is not a percent-escape ('%' and two hex digits)"),
        ("7%", "%", "which is not a percent-escape ('%' and two hex digits)"),
        ("%ff", "%ff", "which do not decode as UTF-8"),
        ("%E2%82", "%E2%82", "which do not decode as UTF-8"),
    ],
)
async def test_read_template_with_a_bad_escape_is_invalid_params(
    era: str, post: str, escape: str, why: str
) -> None:
    """A URI of a template's shape whose value is not percent-encoded UTF-8 names
    no value: one -32602 naming the escape, malformed or not UTF-8 alike (the
    handler never sees the raw text), in both eras."""
    seen: list[str] = []
    server = build_server()

    @server.resource("mem://raw/{post_id}")
    def raw(post_id: str) -> str:
        seen.append(post_id)
        return post_id

    async with serving(server) as (session, _):
        params: dict[str, Any] = {"uri": f"mem://raw/{post}"}
        if era == "legacy":
            await initialize(session)
        else:
            params["_meta"] = envelope()
        err = await error_of(session, "resources/read", params)
        assert err.code == -32602
        assert err.message.startswith(
            f"resources/read: the value of URI template variable 'post_id' holds {escape!r}"
            if "UTF-8" not in why
            else "resources/read: the value of URI template variable 'post_id' holds the "
            f"percent-escape(s) {escape!r}"
        )
        assert err.message.endswith(why)
        assert err.data == {"uri": f"mem://raw/{post}"}
        # A well-formed escape reaches the handler decoded.
        ok = {**params, "uri": "mem://raw/a%20%C3%A9"}
        result = await session.request("resources/read", ok)
        assert result["contents"][0]["text"] == "a é"
    assert seen == ["a é"]


async def test_subscribe_and_updated_only_for_subscribed_uri() -> None:
    server = build_server()
    async with serving(server) as (session, inbox):
        await initialize(session)
        assert await session.request("resources/subscribe", {"uri": "mem://text"}) == {}
        await server.notify_resource_updated("mem://bin")
        await server.notify_resource_updated("mem://text")
        await session.request("ping")  # everything sent before the reply has arrived
        updates = inbox.of("notifications/resources/updated")
        assert [n.params for n in updates] == [{"uri": "mem://text"}]
        assert await session.request("resources/unsubscribe", {"uri": "mem://text"}) == {}
        await server.notify_resource_updated("mem://text")
        await session.request("ping")
        assert len(inbox.of("notifications/resources/updated")) == 1


async def test_server_log_reaches_each_legacy_connection_at_its_level() -> None:
    """``Server.log`` speaks outside any request: to every initialized connection
    whose ``logging/setLevel`` admits the level (all of them until one is set),
    never to a connection that did not initialize (a 2026-07-28 client's)."""
    server = build_server()
    async with (
        serving(server) as (strict, strict_inbox),
        serving(server) as (default, default_inbox),
        serving(server) as (bare, bare_inbox),
    ):
        await initialize(strict)
        await initialize(default)
        await bare.request("ping")  # connected, never initialized
        assert await strict.request("logging/setLevel", {"level": "warning"}) == {}
        assert await server.log("info", "routine") == 1
        assert await server.log("error", {"disk": "full"}, logger="store") == 2
        with pytest.raises(ValueError, match="loud"):
            await server.log("loud", "x")
        for session in (strict, default, bare):
            await session.request("ping")  # everything sent before the reply has arrived
        error = {"level": "error", "data": {"disk": "full"}, "logger": "store"}
        assert [n.params for n in strict_inbox.of("notifications/message")] == [error]
        assert [n.params for n in default_inbox.of("notifications/message")] == [
            {"level": "info", "data": "routine"},
            error,
        ]
        assert bare_inbox.of("notifications/message") == []


async def test_subscriptions_per_connection_are_bounded() -> None:
    """A client cannot make the server hold subscriptions without end: at most
    ``MAX_SUBSCRIPTIONS`` per connection, each URI at most ``MAX_SUBSCRIBED_URI``
    long; subscribing again to a held URI, or after an unsubscribe, still works."""
    from mcpwire._subscriptions import MAX_SUBSCRIBED_URI, MAX_SUBSCRIPTIONS

    server = build_server()
    async with serving(server) as (session, _):
        await initialize(session)
        for n in range(MAX_SUBSCRIPTIONS):
            assert await session.request("resources/subscribe", {"uri": f"mem://{n}"}) == {}
        err = await error_of(session, "resources/subscribe", {"uri": "mem://one-more"})
        assert err.code == -32602 and f"{MAX_SUBSCRIPTIONS} subscriptions" in err.message
        assert await session.request("resources/subscribe", {"uri": "mem://0"}) == {}
        assert await session.request("resources/unsubscribe", {"uri": "mem://0"}) == {}
        assert await session.request("resources/subscribe", {"uri": "mem://one-more"}) == {}
        assert await session.request("resources/unsubscribe", {"uri": "mem://1"}) == {}
        long = "mem://" + "x" * MAX_SUBSCRIBED_URI
        err = await error_of(session, "resources/subscribe", {"uri": long})
        assert err.code == -32602 and "longer than" in err.message


async def test_list_changed_notifications() -> None:
    server = build_server()
    async with serving(server) as (session, inbox):
        await initialize(session)
        await server.notify_tools_changed()
        await server.notify_prompts_changed()
        await server.notify_resources_changed()
        note = await inbox.next("notifications/tools/list_changed")
        assert not note.params
        await inbox.next("notifications/prompts/list_changed")
        await inbox.next("notifications/resources/list_changed")


async def test_no_notifications_before_initialize() -> None:
    server = build_server()
    async with serving(server) as (session, inbox):
        await server.notify_tools_changed()
        await session.request("ping")
        assert inbox.items == []


# -- prompts -------------------------------------------------------------------------------------


async def test_prompts_list_with_required_flags() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        (prompt,) = (await session.request("prompts/list"))["prompts"]
        assert prompt["name"] == "greet"
        assert prompt["description"] == "Greet someone."
        assert prompt["arguments"] == [
            {"name": "name", "required": True},
            {"name": "style", "required": False},
        ]


async def test_prompts_get_with_arguments() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        result = await session.request(
            "prompts/get", {"name": "greet", "arguments": {"name": "Ada", "style": "formal"}}
        )
        assert result["messages"] == [
            {
                "role": "user",
                "content": {"type": "text", "text": "Write a formal greeting for Ada."},
            }
        ]
        result = await session.request(
            "prompts/get", {"name": "greet", "arguments": {"name": "Bo"}}
        )
        assert result["messages"][0]["content"]["text"] == "Write a friendly greeting for Bo."


async def test_prompts_get_missing_required_argument() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        err = await error_of(session, "prompts/get", {"name": "greet", "arguments": {}})
        assert err.code == -32602
        assert "name" in err.message


@pytest.mark.parametrize("value", [None, 1, True, {"x": [1]}, ["a"]])
async def test_prompts_get_argument_values_must_be_strings(value: object) -> None:
    """Every revision types prompt arguments ``{[key: string]: string}``: anything
    else is -32602, not a handler called with a dict (whose repr leaked out)."""
    async with serving(build_server()) as (session, _):
        await initialize(session)
        arguments = {"name": "Ada", "style": value}
        err = await error_of(session, "prompts/get", {"name": "greet", "arguments": arguments})
        assert err.code == -32602
        assert "'style' must be a string" in err.message


async def test_prompts_get_unknown_prompt() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        err = await error_of(session, "prompts/get", {"name": "nosuch"})
        assert err.code == -32602


# -- completion ---------------------------------------------------------------------------------


async def test_complete_prompt_argument() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        result = await session.request(
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "greet"},
                "argument": {"name": "style", "value": "f"},
            },
        )
        assert result == {
            "completion": {"values": ["friendly", "formal", "fancy"], "total": 3, "hasMore": False}
        }


async def test_complete_template_argument_with_context() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        result = await session.request(
            "completion/complete",
            {
                "ref": {"type": "ref/resource", "uri": POST_TEMPLATE},
                "argument": {"name": "post_id", "value": "1"},
                "context": {"arguments": {"user_id": "ada"}},
            },
        )
        assert result["completion"]["values"] == ["ada-1", "ada-10"]


async def test_complete_truncates_to_100_with_has_more() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        result = await session.request(
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "greet"},
                "argument": {"name": "name", "value": "n"},
            },
        )
        completion = result["completion"]
        assert len(completion["values"]) == 100
        assert completion["values"][0] == "n000"
        assert completion["hasMore"] is True
        assert completion["total"] == 150


async def test_complete_without_completer_is_empty_and_unknown_prompt_fails() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        result = await session.request(
            "completion/complete",
            {
                "ref": {"type": "ref/resource", "uri": "mem://other/{x}"},
                "argument": {"name": "x", "value": ""},
            },
        )
        assert result["completion"]["values"] == []
        err = await error_of(
            session,
            "completion/complete",
            {
                "ref": {"type": "ref/prompt", "name": "nosuch"},
                "argument": {"name": "x", "value": ""},
            },
        )
        assert err.code == -32602


# -- legacy elicitation (server -> client request) ---------------------------------------------


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
async def test_elicitation_is_a_server_request(version: str) -> None:
    asked: list[Request] = []

    async def on_request(request: Request, ctx: RequestContext) -> dict[str, Any]:
        asked.append(request)
        return {"action": "accept", "content": {"name": "Ada"}}

    async with serving(build_server(), on_request=on_request) as (session, _):
        await initialize(session, version, {"elicitation": {}})
        result = await call(session, "ask")
        assert result["content"][0]["text"] == "hello Ada"
        assert result.get("isError") is not True
    (request,) = asked
    assert request.method == "elicitation/create"
    assert request.params is not None
    assert request.params["message"] == "Your name?"
    assert request.params["requestedSchema"] == NAME_SCHEMA
    if version == "2025-11-25":
        assert request.params["mode"] == "form"
    else:
        assert "mode" not in request.params


async def test_elicitation_decline_reaches_the_tool() -> None:
    async def on_request(request: Request, ctx: RequestContext) -> dict[str, Any]:
        return {"action": "decline"}

    async with serving(build_server(), on_request=on_request) as (session, _):
        await initialize(session, caps={"elicitation": {}})
        result = await call(session, "ask")
        assert result["content"][0]["text"] == "no answer (decline)"


async def test_elicitation_without_capability_is_error_result() -> None:
    asked: list[Request] = []

    async def on_request(request: Request, ctx: RequestContext) -> dict[str, Any]:
        asked.append(request)
        return {"action": "accept", "content": {"name": "Ada"}}

    async with serving(build_server(), on_request=on_request) as (session, _):
        await initialize(session, caps={})
        result = await call(session, "ask")
        assert result["isError"] is True
        assert "elicitation" in result["content"][0]["text"]
    assert asked == []


# -- one connection, both eras ------------------------------------------------------------------


async def test_modern_request_on_a_legacy_connection() -> None:
    async with serving(build_server()) as (session, _):
        await initialize(session)
        modern = await session.request("tools/list", {"_meta": envelope()})
        assert modern["resultType"] == "complete"
        assert "ttlMs" in modern and "cacheScope" in modern
        legacy = await session.request("tools/list")
        assert "resultType" not in legacy and "ttlMs" not in legacy
        assert [t["name"] for t in modern["tools"]] == [t["name"] for t in legacy["tools"]]
        discover = await session.request("server/discover", {"_meta": envelope()})
        assert MODERN in discover["supportedVersions"]


async def test_legacy_handshake_after_modern_requests() -> None:
    async with serving(build_server()) as (session, _):
        discover = await session.request("server/discover", {"_meta": envelope()})
        assert discover["resultType"] == "complete"
        # A modern request does not initialize the legacy side.
        err = await error_of(session, "tools/list")
        assert err.code == -32600
        result = await initialize(session, "2025-06-18")
        assert result["protocolVersion"] == "2025-06-18"
        assert "resultType" not in await session.request("tools/list")
        assert (await session.request("tools/list", {"_meta": envelope()}))[
            "resultType"
        ] == "complete"


# -- Hypothesis: state x input sweep -------------------------------------------------------------

OPERATIONS = (
    "initialize",
    "ping",
    "tools/list",
    "initialized",
    "modern tools/list",
    "modern ping",
    "unknown notification",
    "legacy unknown method",
)


def _frame(op: str, rid: int) -> Request | Notification:
    if op == "initialize":
        return Request(
            rid,
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "h"}},
        )
    if op == "ping":
        return Request(rid, "ping")
    if op == "tools/list":
        return Request(rid, "tools/list")
    if op == "initialized":
        return Notification("notifications/initialized")
    if op == "modern tools/list":
        return Request(rid, "tools/list", {"_meta": envelope()})
    if op == "modern ping":
        return Request(rid, "ping", {"_meta": envelope()})
    if op == "unknown notification":
        return Notification("notifications/made_up", {"x": 1})
    return Request(rid, "made/up")


def _expected(op: str, initialized: bool) -> tuple[str, int | None]:
    """("result"|"error", error code) a request should get, by a model of the server."""
    if op == "initialize":
        return ("error", -32600) if initialized else ("result", None)
    if op == "ping":
        return ("result", None)
    if op == "tools/list":
        return ("result", None) if initialized else ("error", -32600)
    if op == "modern tools/list":
        return ("result", None)
    if op == "modern ping":
        return ("error", -32601)
    assert op == "legacy unknown method"
    return ("error", -32601)  # at any stage: no such method


@settings(max_examples=40)
@given(ops=st.lists(st.sampled_from(OPERATIONS), max_size=12))
async def test_sweep_every_request_answered_once_notifications_never(ops: list[str]) -> None:
    server = Server("sweep")
    server.add_tool(_numbered_tool(0), name="t0")
    async with raw_serving(server) as raw:
        initialized = False
        for rid, op in enumerate(ops):
            frame = _frame(op, rid)
            await raw.send(frame)
            if isinstance(frame, Notification):
                continue
            reply = await receive(raw)
            assert isinstance(reply, (Response, ErrorResponse)), reply
            assert reply.id == rid, (op, reply)
            kind, code = _expected(op, initialized)
            if kind == "result":
                assert isinstance(reply, Response), (op, reply)
                if op.startswith("modern"):
                    assert reply.result["resultType"] == "complete"
                else:
                    assert "resultType" not in reply.result
            else:
                assert isinstance(reply, ErrorResponse), (op, reply)
                assert reply.error.code == code, (op, reply)
            if op == "initialize" and isinstance(reply, Response):
                initialized = True
        # A final round trip: nothing else (no reply to a notification, no
        # duplicate reply) is queued before its answer.
        await raw.send(Request("end", "ping"))
        last = await receive(raw)
        assert isinstance(last, Response) and last.id == "end", last


# -- which handlers are served inline ----------------------------------------------------


def _plain_wrapper(fn: Any) -> Any:
    """A decorator that is not async-aware: a plain function returning fn's coroutine."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper


async def test_a_plain_wrapper_of_a_coroutine_function_does_not_stall_the_reader() -> None:
    # Served inline, the wrapped tool would hold the session's reader while it
    # waits, and the request that releases it would never be read.
    server = Server("wrapped")
    reached, go = anyio.Event(), anyio.Event()

    @server.tool()
    @_plain_wrapper
    async def waits() -> str:
        reached.set()
        await go.wait()
        return "went"

    @server.tool()
    def release() -> str:
        go.set()
        return "released"

    assert not is_quick(waits)
    client_end, server_end = mcpwire.memory_pair()
    results: list[str] = []

    async def call(name: str) -> None:
        results.append((await client.call_tool(name)).text)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, server_end)
            async with mcpwire.Client(client_end) as client, anyio.create_task_group() as calls:
                calls.start_soon(call, "waits")
                await reached.wait()
                await call("release")
            tg.cancel_scope.cancel()
    assert results == ["released", "went"]


async def test_a_plain_function_seen_returning_an_awaitable_is_not_quick_again() -> None:
    async def later() -> str:
        return "later"

    def sneaky() -> Any:  # nothing in the function says it returns a coroutine
        return later()

    assert is_quick(sneaky)
    assert await call_handler(sneaky, {}, thread=False) == "later"
    assert not is_quick(sneaky)
    assert is_quick(release_like := (lambda: "plain"))  # a plain result teaches nothing
    assert await call_handler(release_like, {}, thread=False) == "plain"
    assert is_quick(release_like)
