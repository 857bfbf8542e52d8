"""Feature tests for ``mcpwire.Client``.

The client talks to an in-process ``Server`` (``Client(server)``), to the
example server over stdio (``python -m mcpwire.examples.everything``), and to
small hand-written peers: a raw legacy-only server that knows nothing of
``server/discover``, and a server that dies mid-call.
"""

from __future__ import annotations

import functools
import gc
import json
import sys
import textwrap
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpwire import (
    CallToolResult,
    Client,
    Completion,
    ConnectionClosed,
    Context,
    GetPromptResult,
    JSONRPCError,
    MCPWireError,
    OutputValidationError,
    Prompt,
    RequestContext,
    RequestTimeout,
    Resource,
    ResourceContents,
    ResourceTemplate,
    Server,
    Session,
    Subscription,
    Tool,
    ToolResult,
    memory_pair,
)
from mcpwire.examples import everything
from mcpwire.sansio import Limits, Notification, Request

pytestmark = pytest.mark.anyio

WAIT = 10.0
MODERN = "2026-07-28"
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
EVERYTHING = ["-m", "mcpwire.examples.everything"]


class CountingServer(Server):
    """A server that records the method of every request it serves."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: list[str] = []

    async def _on_request(self, conn: Any, request: Request, rctx: RequestContext) -> Any:
        self.seen.append(request.method)
        return await super()._on_request(conn, request, rctx)

    def count(self, method: str) -> int:
        return self.seen.count(method)


def _item_tool(i: int) -> Any:
    def tool() -> str:
        return str(i)

    return tool


def _item_resource(i: int) -> Any:
    def resource() -> str:
        return f"resource {i}"

    return resource


def _item_prompt(i: int) -> Any:
    def prompt(topic: str) -> str:
        return f"prompt {i} about {topic}"

    return prompt


def _item_template(i: int) -> Any:
    def template(x: str) -> str:
        return f"template {i}: {x}"

    return template


def paged_server(**options: Any) -> CountingServer:
    """Five of each kind, two per page."""
    server = CountingServer("paged", "3.0", page_size=2, **options)
    for i in range(5):
        server.add_tool(_item_tool(i), name=f"tool{i}")
        server.add_resource(_item_resource(i), f"mem://r{i}", name=f"r{i}")
        server.add_prompt(_item_prompt(i), name=f"prompt{i}")
        server.add_resource(_item_template(i), f"mem://t{i}/{{x}}", name=f"t{i}")
    return server


# -- era detection ----------------------------------------------------------------------


async def test_auto_mode_is_modern() -> None:
    with anyio.fail_after(WAIT):
        async with Client(everything.server) as client:
            assert client.era == "modern"
            assert client.protocol_version == MODERN
            assert client.server_info["name"] == "mcpwire-everything"
            assert client.server_info["version"] == "1.0.0"
            assert MODERN in client.supported_versions
            assert "tools" in client.server_capabilities
            assert client.instructions is not None and "demonstration" in client.instructions


async def test_legacy_mode_negotiates_latest_legacy() -> None:
    with anyio.fail_after(WAIT):
        async with Client(everything.server, mode="legacy") as client:
            assert client.era == "legacy"
            assert client.protocol_version == "2025-11-25"
            assert client.server_info["name"] == "mcpwire-everything"
            assert "tools" in client.server_capabilities
            result = await client.call_tool("echo", {"message": "legacy"})
            assert result.text == "legacy"


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18"])
async def test_pinned_legacy_version(version: str) -> None:
    server = CountingServer("pinned")
    server.add_tool(_item_tool(1), name="one")
    with anyio.fail_after(WAIT):
        async with Client(server, mode=version) as client:
            assert client.era == "legacy"
            assert client.protocol_version == version
            assert [t.name for t in await client.list_tools()] == ["one"]
    assert "server/discover" not in server.seen
    assert server.seen[0] == "initialize"


async def test_pinned_modern_version() -> None:
    server = CountingServer("pinned")
    server.add_tool(_item_tool(1), name="one")
    with anyio.fail_after(WAIT):
        async with Client(server, mode=MODERN) as client:
            assert client.era == "modern"
            assert client.protocol_version == MODERN
            assert (await client.call_tool("one")).text == "1"
    assert "initialize" not in server.seen


def test_invalid_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="mode"):
        Client(everything.server, mode="2030-01-01")


@pytest.mark.parametrize(
    "target", ["http://127.0.0.1:9/mcp", b"python", Path("server.py"), 42, None, object()]
)
def test_a_target_that_is_no_transport_is_refused_when_made(target: Any) -> None:
    """A URL or command string fails at ``Client(...)`` with a pointer to the right
    constructor, not in the first send as an AttributeError masked by anyio."""
    with pytest.raises(TypeError, match=r"Client\.http\(url\).*Client\.stdio"):
        Client(target)


async def test_transports_servers_and_factories_are_accepted() -> None:
    client_end, server_end = memory_pair()
    Client(client_end)
    await client_end.aclose()
    await server_end.aclose()
    Client(everything.server)
    Client(lambda: memory_pair()[0])
    async with Client(everything.server) as client:
        assert (await client.call_tool("add", {"a": 1, "b": 2})).text == "3"


LEGACY_PEER = textwrap.dedent(
    """
    import json
    import sys

    behaviour = sys.argv[1]
    log = open(sys.argv[2], "a") if len(sys.argv) > 2 else None


    def send(obj):
        sys.stdout.write(json.dumps(obj) + "\\n")
        sys.stdout.flush()


    for line in sys.stdin:
        msg = json.loads(line)
        if "method" not in msg or "id" not in msg:
            continue
        rid, method = msg["id"], msg["method"]
        params = msg.get("params") or {}
        if log is not None:
            log.write(method + "\\n")
            log.flush()
        if method == "server/discover":
            if behaviour == "silent":
                continue
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": int(behaviour), "message": "no such method"}})
        elif method == "initialize":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "legacy-peer", "version": "9.9"}}})
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": rid, "result": {"tools": [
                {"name": "show", "inputSchema": {"type": "object"}}]}})
        elif method == "tools/call":
            send({"jsonrpc": "2.0", "id": rid, "result": {
                "content": [{"type": "text", "text": json.dumps(params)}]}})
        else:
            send({"jsonrpc": "2.0", "id": rid,
                  "error": {"code": -32601, "message": "Method not found"}})
    """
)


@pytest.mark.parametrize("behaviour", ["-32601", "-32602", "silent"])
async def test_auto_falls_back_to_initialize_on_a_legacy_peer(
    tmp_path: Path, behaviour: str
) -> None:
    script = tmp_path / "legacy_peer.py"
    script.write_text(LEGACY_PEER)
    with anyio.fail_after(WAIT):
        async with Client.stdio(
            sys.executable, [str(script), behaviour], probe_timeout=0.5
        ) as client:
            assert client.era == "legacy"
            assert client.protocol_version == "2025-06-18"
            assert client.server_info == {"name": "legacy-peer", "version": "9.9"}
            assert [t.name for t in await client.list_tools()] == ["show"]
            result = await client.call_tool("show", {"x": 1})
            sent = json.loads(result.text)
            # Legacy requests carry no modern envelope.
            assert sent == {"name": "show", "arguments": {"x": 1}}


@pytest.mark.parametrize("behaviour", ["-32601", "silent"])
async def test_a_pinned_modern_mode_and_a_peer_without_server_discover(
    tmp_path: Path, behaviour: str
) -> None:
    """Pinned to 2026-07-28: a server/discover answered with an error is kept in
    ``discover_error`` and the pinned version used (the reference SDK pins without
    asking); one never answered fails the connection, as no peer answers."""
    script = tmp_path / "legacy_peer.py"
    script.write_text(LEGACY_PEER)
    with anyio.fail_after(WAIT):
        if behaviour == "silent":
            with pytest.raises(RequestTimeout):
                async with Client.stdio(
                    sys.executable, [str(script), behaviour], mode=MODERN, request_timeout=0.5
                ):
                    pass
            return
        async with Client.stdio(
            sys.executable, [str(script), behaviour], mode=MODERN, request_timeout=0.5
        ) as client:
            assert isinstance(client.discover_error, JSONRPCError)
            assert client.discover_error.code == -32601
            assert client.protocol_version == MODERN


async def test_a_pinned_modern_mode_and_no_version_in_common() -> None:
    async def future_only(request: Request, ctx: RequestContext) -> dict[str, Any]:
        return {"resultType": "complete", "supportedVersions": ["2031-01-01"], "capabilities": {}}

    client_end, server_end = memory_pair()
    with anyio.fail_after(WAIT):
        async with (
            Session(server_end, on_request=future_only),
            Client(client_end, mode=MODERN) as client,
        ):
            assert isinstance(client.discover_error, MCPWireError)
            assert "none of our modern versions" in str(client.discover_error)


ANSWER_THEN_FAIL_TO_LIST = textwrap.dedent(
    """
    import json
    import sys

    def send(obj):
        sys.stdout.write(json.dumps(obj) + "\\n")
        sys.stdout.flush()

    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        if msg["method"] == "initialize":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "answers-once", "version": "1"}}})
        elif msg["method"] == "tools/call":
            send({"jsonrpc": "2.0", "id": msg["id"], "result": {
                "content": [{"type": "text", "text": "the answer"}]}})
            if sys.argv[1] == "exit":
                sys.exit(0)
        # tools/list: never answered
    """
)


@pytest.mark.parametrize("behaviour", ["exit", "silent"])
async def test_a_result_is_not_lost_when_learning_the_output_schema_fails(
    tmp_path: Path, behaviour: str
) -> None:
    """The first call of a tool lists the tools to learn its outputSchema; a server
    that exits, or does not answer the listing, does not cost the caller the
    result it already answered."""
    script = tmp_path / "answers_once.py"
    script.write_text(ANSWER_THEN_FAIL_TO_LIST)
    with anyio.fail_after(WAIT):
        async with Client.stdio(
            sys.executable, [str(script), behaviour], mode="legacy", request_timeout=0.5
        ) as client:
            assert (await client.call_tool("echo", {})).text == "the answer"


DEEP_ANSWER = textwrap.dedent(
    """
    import json
    import sys

    log = open(sys.argv[2], "w")
    for line in sys.stdin:
        log.write(line)
        log.flush()
        msg = json.loads(line)
        if "id" not in msg or "method" not in msg:
            continue
        if msg["method"] == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "deep", "version": "1"}}
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}))
        elif sys.argv[1] == "deep":
            sys.stdout.write('{"jsonrpc":"2.0","id":%s,"result":{"x":%s%s}}'
                             % (json.dumps(msg["id"]), "[" * 70, "]" * 70))
        else:
            sys.stdout.write('{"jsonrpc":"2.0","id":%s,"result":{"n":123456789012345678901234567890}}'
                             % json.dumps(msg["id"]))
        sys.stdout.write("\\n")
        sys.stdout.flush()
    """
)


@pytest.mark.parametrize(("shape", "code"), [("deep", -32600), ("wide", -32700)])
async def test_an_answer_past_the_limits_fails_its_call_at_once(
    tmp_path: Path, shape: str, code: int
) -> None:
    """A response nested past the depth limit, or holding an integer past 64 bits,
    fails the call it answers as it arrives (not after the timeout), and the client
    sends nothing back for it (answering a response breeds loops)."""
    script = tmp_path / "deep_answer.py"
    script.write_text(DEEP_ANSWER)
    log = tmp_path / "received.log"
    with anyio.fail_after(WAIT):
        async with Client.stdio(
            sys.executable, [str(script), shape, str(log)], mode="legacy", request_timeout=30
        ) as client:
            with pytest.raises(JSONRPCError) as info:
                await client.call_tool("t", {})
            assert info.value.code == code
            assert "the response to request" in info.value.message
    received = [json.loads(line) for line in log.read_text().splitlines()]
    assert not [m for m in received if "method" not in m], received


async def test_legacy_era_is_remembered_per_command(tmp_path: Path) -> None:
    script = tmp_path / "legacy_peer.py"
    script.write_text(LEGACY_PEER)
    log = tmp_path / "methods.log"
    with anyio.fail_after(WAIT):
        for _ in range(2):
            async with Client.stdio(
                sys.executable, [str(script), "silent", str(log)], probe_timeout=0.5
            ) as client:
                assert client.era == "legacy"
    methods = log.read_text().split()
    # Probed once; the second connection goes straight to initialize.
    assert methods == ["server/discover", "initialize", "initialize"]


# -- listing -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_list_methods_walk_every_page(mode: str) -> None:
    server = paged_server()
    with anyio.fail_after(WAIT):
        async with Client(server, mode=mode) as client:
            tools = await client.list_tools()
            resources = await client.list_resources()
            templates = await client.list_resource_templates()
            prompts = await client.list_prompts()
    assert [t.name for t in tools] == [f"tool{i}" for i in range(5)]
    assert [r.uri for r in resources] == [f"mem://r{i}" for i in range(5)]
    assert [t.uri_template for t in templates] == [f"mem://t{i}/{{x}}" for i in range(5)]
    assert [p.name for p in prompts] == [f"prompt{i}" for i in range(5)]
    for method in ("tools/list", "resources/list", "resources/templates/list", "prompts/list"):
        assert server.count(method) == 3, method


async def test_typed_results() -> None:
    with anyio.fail_after(WAIT):
        async with Client(everything.server) as client:
            tools = {t.name: t for t in await client.list_tools()}
            echo = tools["echo"]
            assert isinstance(echo, Tool)
            assert echo.description == "Echo the message back."
            assert echo.input_schema["required"] == ["message"]
            assert echo.annotations == {"readOnlyHint": True}
            assert tools["get_weather"].output_schema is not None

            result = await client.call_tool("get_weather", {"city": "Oslo"})
            assert isinstance(result, CallToolResult)
            assert result.is_error is False
            assert result.structured == {"city": "Oslo", "temperature": 21.5, "conditions": "sunny"}
            assert result.content[0].type == "text"

            image = await client.call_tool("image")
            assert image.content[0].type == "image"
            assert image.content[0].mime_type == "image/png"
            assert image.content[0].data

            failed = await client.call_tool("fail", {"message": "nope"})
            assert failed.is_error is True
            assert failed.text == "nope"

            resources = await client.list_resources()
            assert all(isinstance(r, Resource) for r in resources)
            assert {r.uri: r.mime_type for r in resources} == {
                "demo://readme": "text/markdown",
                "demo://pixel.png": "image/png",
            }
            (readme,) = await client.read_resource("demo://readme")
            assert isinstance(readme, ResourceContents)
            assert readme.text is not None and readme.text.startswith("# mcpwire")
            (pixel,) = await client.read_resource("demo://pixel.png")
            assert pixel.blob is not None and pixel.text is None
            (item,) = await client.read_resource("demo://items/42")
            assert json.loads(item.text or "") == {"id": "42", "name": "item 42"}

            (template,) = await client.list_resource_templates()
            assert isinstance(template, ResourceTemplate)
            assert template.uri_template == "demo://items/{item_id}"

            prompts = {p.name: p for p in await client.list_prompts()}
            greet = prompts["greet"]
            assert isinstance(greet, Prompt)
            assert [(a.name, a.required) for a in greet.arguments] == [
                ("name", True),
                ("style", False),
            ]
            got = await client.get_prompt("greet", {"name": "Ada", "style": "pirate"})
            assert isinstance(got, GetPromptResult)
            assert got.messages[0]["content"]["text"] == "Write a pirate greeting for Ada."

            done = await client.complete({"type": "ref/prompt", "name": "greet"}, "style", "p")
            assert isinstance(done, Completion)
            assert done.values == ["pirate", "poetic"]
            assert done.total == 2 and done.has_more is False
            done = await client.complete(
                {"type": "ref/resource", "uri": "demo://items/{item_id}"}, "item_id", "4"
            )
            assert done.values == ["42"]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_protocol_errors_raise(mode: str) -> None:
    with anyio.fail_after(WAIT):
        async with Client(everything.server, mode=mode) as client:
            with pytest.raises(JSONRPCError) as info:
                await client.call_tool("nosuch")
            assert info.value.code == -32602
            with pytest.raises(JSONRPCError) as info:
                await client.read_resource("demo://nothing")
            assert info.value.code == (-32602 if mode == "auto" else -32002)
            with pytest.raises(JSONRPCError) as info:
                await client.get_prompt("greet")
            assert info.value.code == -32602


# -- callbacks -------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_callbacks_answer_elicitation_sampling_and_roots(mode: str) -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    async def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(("elicitation", params))
        return {"action": "accept", "content": {"name": "Ada"}}

    async def sampling(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(("sampling", params))
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "short"},
            "model": "test-model",
        }

    async def roots() -> list[dict[str, Any]]:
        return [{"uri": "file:///work", "name": "work"}, {"uri": "file:///tmp"}]

    with anyio.fail_after(WAIT):
        async with Client(
            everything.server, mode=mode, elicitation=elicitation, sampling=sampling, roots=roots
        ) as client:
            assert client.era == ("modern" if mode == "auto" else "legacy")
            assert (await client.call_tool("ask_name")).text == "Hello, Ada!"
            assert (await client.call_tool("summarize", {"text": "long"})).text == "short"
            assert (await client.call_tool("show_roots")).text == "file:///work\nfile:///tmp"
    kinds = [k for k, _ in asked]
    assert kinds == ["elicitation", "sampling"]
    assert asked[0][1]["message"] == "What is your name?"
    assert asked[0][1]["requestedSchema"]["required"] == ["name"]
    assert asked[1][1]["maxTokens"] == 100


async def test_static_roots_list_and_decline() -> None:
    async def decline(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "decline"}

    with anyio.fail_after(WAIT):
        async with Client(
            everything.server, elicitation=decline, roots=[{"uri": "file:///a"}]
        ) as client:
            assert (await client.call_tool("show_roots")).text == "file:///a"
            assert (await client.call_tool("ask_name")).text == "No name given (decline)"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_missing_callback(mode: str) -> None:
    with anyio.fail_after(WAIT):
        async with Client(everything.server, mode=mode) as client:
            if mode == "legacy":
                result = await client.call_tool("ask_name")
                assert result.is_error
            else:
                with pytest.raises(JSONRPCError) as info:
                    await client.call_tool("ask_name")
                assert info.value.code == -32021


async def test_input_rounds_are_bounded() -> None:
    """At the bound the client stops without asking its callbacks once more: an
    answer it will not send is a question put to the user for nothing."""
    server = Server("greedy")

    @server.tool()
    async def greedy(ctx: Context) -> str:
        for i in range(5):
            await ctx.elicit(f"question {i}", {"type": "object", "properties": {}})
        return "satisfied"

    calls = 0

    async def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        nonlocal calls
        calls += 1
        return {"action": "accept", "content": {}}

    with anyio.fail_after(WAIT):
        async with Client(server, elicitation=elicitation, max_input_rounds=2) as client:
            with pytest.raises(MCPWireError, match="more than 2"):
                await client.call_tool("greedy")
        async with Client(server, elicitation=elicitation, max_input_rounds=5) as client:
            assert (await client.call_tool("greedy")).text == "satisfied"
    assert calls == 2 + 5


async def test_a_refused_initialize_falls_back_over_a_plain_session() -> None:
    """Pain point #22 on a connection (not HTTP): an old server that refuses the
    version offered, listing its own in ``data.supported``, gets a second
    ``initialize`` on the same connection with the newest listed version we
    speak, and the connection then works in that version."""
    offered: list[str] = []

    async def old_server(request: Request, ctx: RequestContext) -> dict[str, Any]:
        if request.method == "initialize":
            assert request.params is not None
            asked = request.params["protocolVersion"]
            offered.append(asked)
            if asked != "2024-11-05":
                data = {"supported": ["2024-11-05", "1.0"], "requested": asked}
                raise JSONRPCError(-32602, "Unsupported protocol version", data)
            return {"protocolVersion": asked, "capabilities": {}, "serverInfo": {"name": "old"}}
        if request.method == "ping":
            return {}
        raise JSONRPCError(-32601, f"Method not found: {request.method}")

    client_end, server_end = memory_pair()
    with anyio.fail_after(WAIT):
        async with (
            Session(server_end, on_request=old_server),
            Client(client_end, mode="legacy") as client,
        ):
            assert client.protocol_version == "2024-11-05"
            await client.ping()
    assert offered == ["2025-11-25", "2024-11-05"]


class ScriptedPeer:
    """A modern server played by a plain ``Session``: tools/call answers come from a script."""

    def __init__(self, answers: list[dict[str, Any]]) -> None:
        self.answers = list(answers)
        self.calls: list[Request] = []

    async def __call__(self, request: Request, ctx: RequestContext) -> dict[str, Any]:
        if request.method == "server/discover":
            return {
                "resultType": "complete",
                "supportedVersions": [MODERN],
                "capabilities": {"tools": {}},
                "ttlMs": 0,
                "cacheScope": "private",
            }
        if request.method == "tools/call":
            self.calls.append(request)
            return self.answers.pop(0)
        raise JSONRPCError(-32601, f"Method not found: {request.method}")


@asynccontextmanager
async def scripted(peer: ScriptedPeer, **options: Any) -> AsyncIterator[Client]:
    client_end, server_end = memory_pair()
    async with Session(server_end, on_request=peer), Client(client_end, **options) as client:
        yield client


DONE = {"resultType": "complete", "content": [{"type": "text", "text": "done"}]}


async def test_input_required_retry_protocol() -> None:
    peer = ScriptedPeer(
        [
            {
                "resultType": "input_required",
                "inputRequests": {
                    "who": {"method": "elicitation/create", "params": {"message": "Who?"}},
                    "where": {"method": "roots/list"},
                },
                "requestState": "opaque-1",
            },
            {"resultType": "input_required", "requestState": "opaque-2"},  # load shedding
            {
                "resultType": "input_required",
                "inputRequests": {"again": {"method": "elicitation/create", "params": {}}},
            },
            DONE,
        ]
    )

    async def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": "Ada"}}

    with anyio.fail_after(WAIT):
        async with scripted(peer, elicitation=elicitation, roots=[{"uri": "file:///r"}]) as c:
            result = await c.call_tool("t", {"a": 1})
    assert result.text == "done"
    first, second, third, fourth = peer.calls
    assert len({r.id for r in peer.calls}) == 4  # a new id every round
    for r in peer.calls:
        assert r.params is not None
        assert r.params["name"] == "t" and r.params["arguments"] == {"a": 1}
        assert r.params["_meta"]["io.modelcontextprotocol/protocolVersion"] == MODERN
    assert first.params is not None
    assert "inputResponses" not in first.params and "requestState" not in first.params
    assert second.params is not None
    assert second.params["inputResponses"] == {
        "who": {"action": "accept", "content": {"name": "Ada"}},
        "where": {"roots": [{"uri": "file:///r"}]},
    }
    assert second.params["requestState"] == "opaque-1"
    assert third.params is not None
    assert third.params["requestState"] == "opaque-2"
    assert "inputResponses" not in third.params
    assert fourth.params is not None
    assert "requestState" not in fourth.params  # none was given, none is sent
    assert fourth.params["inputResponses"] == {
        "again": {"action": "accept", "content": {"name": "Ada"}}
    }


async def test_unknown_result_type_is_refused() -> None:
    peer = ScriptedPeer([{"resultType": "task", "task": {"taskId": "t-1"}}])
    with anyio.fail_after(WAIT):
        async with scripted(peer) as client:
            with pytest.raises(MCPWireError):
                await client.call_tool("t")


async def test_multi_round_results_are_not_cached() -> None:
    server = CountingServer("mrtr-cache", cache_ttl_ms=60000)
    answers = iter(["first", "second"])

    @server.resource("mem://who")
    async def who(ctx: Context) -> str:
        answer = await ctx.elicit("Who?", {"type": "object", "properties": {}})
        return str(answer["content"]["name"])

    async def elicitation(params: dict[str, Any]) -> dict[str, Any]:
        return {"action": "accept", "content": {"name": next(answers)}}

    with anyio.fail_after(WAIT):
        async with Client(server, elicitation=elicitation) as client:
            (one,) = await client.read_resource("mem://who")
            (two,) = await client.read_resource("mem://who")
    assert one.text == "first"
    # The result of a retry (a request with inputResponses/requestState) must
    # not be cached (caching.mdx), so the second read asks again.
    assert two.text == "second"
    assert server.count("resources/read") == 4


async def test_concurrent_listens() -> None:
    server = cached_server()
    subs: dict[str, Subscription] = {}
    opened = anyio.Event()

    async def hold(name: str, client: Client, **flags: Any) -> None:
        async with client.listen(**flags) as sub:
            subs[name] = sub
            if len(subs) == 2:
                opened.set()
            await anyio.sleep_forever()

    with anyio.fail_after(WAIT):
        async with Client(server, request_timeout=2) as client, anyio.create_task_group() as tg:
            tg.start_soon(functools.partial(hold, "tools", client, tools=True))
            tg.start_soon(functools.partial(hold, "doc", client, uris=["mem://doc"]))
            await opened.wait()
            assert subs["tools"].honored == {"toolsListChanged": True}
            assert subs["doc"].honored == {"resourceSubscriptions": ["mem://doc"]}
            tg.cancel_scope.cancel()


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_progress_callback(mode: str) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    with anyio.fail_after(WAIT):
        async with Client(everything.server, mode=mode) as client:
            result = await client.call_tool(
                "long_task", {"steps": 3, "delay": 0}, on_progress=on_progress
            )
    assert result.text == "finished 3 steps"
    assert seen == [(i, 3, f"step {i} of 3") for i in (1, 2, 3)]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_log_messages_reach_on_notification(mode: str) -> None:
    notes: list[tuple[str, dict[str, Any]]] = []

    async def on_notification(method: str, params: dict[str, Any]) -> None:
        notes.append((method, params))

    with anyio.fail_after(WAIT):
        async with Client(
            everything.server, mode=mode, on_notification=on_notification, log_level="warning"
        ) as client:
            await client.set_logging_level("warning")
            assert (await client.call_tool("log_demo")).text == "logged"
    levels = [p["level"] for m, p in notes if m == "notifications/message"]
    assert levels == ["warning", "error"]


# -- output schema validation -------------------------------------------------------------------

OUTPUT_SCHEMA = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
}


def schema_server() -> Server:
    server = Server("schemas")

    @server.tool(output_schema=OUTPUT_SCHEMA)
    def good() -> dict[str, Any]:
        return {"n": 1}

    @server.tool(output_schema=OUTPUT_SCHEMA)
    def bad() -> dict[str, Any]:
        return {"n": "one"}

    @server.tool(output_schema=OUTPUT_SCHEMA)
    def unstructured() -> ToolResult:
        return ToolResult(content=[{"type": "text", "text": "no structure"}])

    @server.tool(output_schema=OUTPUT_SCHEMA)
    def broken() -> ToolResult:
        return ToolResult(content=[{"type": "text", "text": "failed"}], is_error=True)

    return server


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_output_schema_violation_raises(mode: str) -> None:
    with anyio.fail_after(WAIT):
        async with Client(schema_server(), mode=mode) as client:
            tools = {t.name: t for t in await client.list_tools()}
            assert tools["bad"].output_schema == OUTPUT_SCHEMA
            assert (await client.call_tool("good")).structured == {"n": 1}
            with pytest.raises(OutputValidationError):
                await client.call_tool("bad")
            with pytest.raises(OutputValidationError):
                await client.call_tool("unstructured")
            # Error results are not validated.
            assert (await client.call_tool("broken")).is_error


async def test_output_schema_validated_without_listing_first() -> None:
    # A client that calls a tool before listing must still validate its
    # structuredContent against the advertised outputSchema (it can learn the
    # schema by listing on demand, as the reference SDK does).
    with anyio.fail_after(WAIT):
        async with Client(schema_server()) as client:
            with pytest.raises(OutputValidationError):
                await client.call_tool("bad")


class ListingServer(CountingServer):
    """``paged_server``'s tools (three pages), whose ``tools/list`` answers after a
    moment (so that first calls overlap it), with an error, or never."""

    def __init__(self, listing: str, tasks: dict[int, str] | None = None) -> None:
        super().__init__("listing", "1", page_size=2)
        self.listing = listing
        for i in range(5):
            task = (tasks or {}).get(i, "forbidden")
            self.add_tool(_item_tool(i), name=f"tool{i}", task=task)

    async def _on_request(self, conn: Any, request: Request, rctx: RequestContext) -> Any:
        self.seen.append(request.method)
        if request.method == "tools/list":
            await anyio.sleep(0.05 if self.listing != "silent" else WAIT)
            if self.listing == "error":
                raise JSONRPCError(-32603, "listing broke")
        return await Server._on_request(self, conn, request, rctx)


@pytest.mark.parametrize("mode", ["auto", "legacy"])
@pytest.mark.parametrize("listing", ["answered", "error", "silent"])
async def test_concurrent_first_calls_share_one_listing(mode: str, listing: str) -> None:
    """Ten first calls at once learn the tools' output schemas from one listing
    round (its three pages), all waiting on it; an error answer or none fails no
    call: each keeps its result. After no answer, the next first call lists again."""
    server = ListingServer(listing)
    texts: list[str] = []
    with anyio.fail_after(WAIT):
        async with Client(server, mode=mode, request_timeout=0.5) as client:

            async def call(i: int) -> None:
                texts.append((await client.call_tool(f"tool{i % 5}")).text)

            async with anyio.create_task_group() as tg:
                for i in range(10):
                    tg.start_soon(call, i)
            assert sorted(texts) == sorted(str(i % 5) for i in range(10))
            assert server.count("tools/list") == (3 if listing == "answered" else 1)
            await client.call_tool("tool0")
            relisted = {"answered": 3, "error": 1, "silent": 2}[listing]
            assert server.count("tools/list") == relisted


@pytest.mark.parametrize("listing", ["answered", "error", "silent"])
async def test_concurrent_first_calls_share_one_listing_to_learn_task_support(
    listing: str,
) -> None:
    """On 2025-11-25, a server offering tasks is asked with ``tools/list`` whether a
    tool must be called as a task, before its first call. Ten first calls at once
    share one listing round (its three pages), which also teaches the output
    schemas: no other round follows. An error answer lets every call go as asked
    (a task-required tool then refuses it); no answer fails each call with a
    ``RequestTimeout`` of its own."""
    server = ListingServer(listing, tasks={0: "required", 1: "optional"})
    outcomes: list[Any] = []
    with anyio.fail_after(WAIT):
        async with Client(server, mode="legacy", request_timeout=0.5) as client:
            assert client.protocol_version == "2025-11-25"
            assert "tasks" in client.server_capabilities

            async def call(i: int) -> None:
                try:
                    outcomes.append((await client.call_tool(f"tool{i % 5}")).text)
                except MCPWireError as exc:
                    outcomes.append(exc)

            async with anyio.create_task_group() as tg:
                for i in range(10):
                    tg.start_soon(call, i)
    assert server.count("tools/list") == (3 if listing == "answered" else 1)
    texts = sorted(o for o in outcomes if isinstance(o, str))
    errors = [o for o in outcomes if not isinstance(o, str)]
    if listing == "answered":
        assert texts == sorted(str(i % 5) for i in range(10))
        assert server.count("tasks/result") == 2  # tool0 (required) ran as a task, twice
    elif listing == "error":
        assert texts == sorted(str(i % 5) for i in range(10) if i % 5)
        assert [e.code for e in errors] == [-32601, -32601]
        assert all("must be called as a task" in e.message for e in errors)
    else:
        assert texts == [] and len(errors) == 10
        assert all(type(e) is RequestTimeout and e.method == "tools/list" for e in errors)
        assert len({id(e) for e in errors}) == 10  # each call raises its own
        assert server.count("tools/call") == 0


async def test_first_calls_learning_schemas_and_task_support_share_one_listing() -> None:
    """Calls that list to learn output schemas (``task=False``: after their result)
    and calls that list to learn task support (before they are sent) join whichever
    listing runs: one round for all."""
    server = ListingServer("answered", tasks={1: "optional"})
    texts: list[str] = []
    with anyio.fail_after(WAIT):
        async with Client(server, mode="legacy") as client:

            async def call(i: int) -> None:
                task = False if i % 2 else None
                texts.append((await client.call_tool(f"tool{i % 5}", task=task)).text)

            async with anyio.create_task_group() as tg:
                for i in range(10):
                    tg.start_soon(call, i)
    assert sorted(texts) == sorted(str(i % 5) for i in range(10))
    assert server.count("tools/list") == 3


async def cancel_the_lister(
    client: Client,
    server: ListingServer,
    waiters: list[int],
    before_cancel: Callable[[], Awaitable[None]],
) -> list[str]:
    """Call ``tool0`` (the first call: it runs the listing), then, once it lists,
    call ``tool{i}`` for each of ``waiters``; after ``before_cancel``, cancel
    the first call. The waiters' texts, all of which must come within 1 s (not
    the listing's request timeout)."""
    texts: list[str] = []
    async with anyio.create_task_group() as tg:
        lister = anyio.CancelScope()

        async def first() -> None:
            with lister:
                await client.call_tool("tool0")

        async def waiter(i: int) -> None:
            texts.append((await client.call_tool(f"tool{i}")).text)

        tg.start_soon(first)
        while not server.count("tools/list"):
            await anyio.sleep(0.01)
        for i in waiters:
            tg.start_soon(waiter, i)
        await before_cancel()
        with anyio.fail_after(1):
            lister.cancel()
            while len(texts) < len(waiters):
                await anyio.sleep(0.01)
    return texts


async def test_first_calls_waiting_for_task_support_list_again_when_the_lister_is_cancelled() -> (
    None
):
    """A call that must know whether it is a task, waiting on a listing whose caller
    is cancelled, lists again (once, for all the waiters) rather than guess."""
    server = ListingServer("silent", tasks={0: "required"})

    async def answer_from_now_on() -> None:
        await anyio.sleep(0.05)  # the three wait on the listing
        server.listing = "answered"

    with anyio.fail_after(WAIT):
        async with Client(server, mode="legacy", request_timeout=WAIT) as client:
            texts = await cancel_the_lister(client, server, [0, 0, 2], answer_from_now_on)
    assert sorted(texts) == ["0", "0", "2"]
    assert server.count("tools/list") == 1 + 3  # the cancelled one, then one round
    assert server.count("tasks/result") == 2


async def test_first_calls_waiting_on_a_cancelled_listing_keep_their_results() -> None:
    """The call that runs the listing is cancelled: the calls waiting on it are not
    left waiting, they return their results unchecked."""
    server = ListingServer("silent")

    async def all_called() -> None:
        while server.count("tools/call") < 4:
            await anyio.sleep(0.01)
        await anyio.sleep(0.05)  # the three wait on the listing

    with anyio.fail_after(WAIT):
        async with Client(server, request_timeout=WAIT) as client:
            texts = await cancel_the_lister(client, server, [1, 2, 3], all_called)
    assert sorted(texts) == ["1", "2", "3"]
    assert server.count("tools/list") == 1


async def test_output_validation_can_be_disabled() -> None:
    with anyio.fail_after(WAIT):
        async with Client(schema_server(), validate_output=False) as client:
            await client.list_tools()
            assert (await client.call_tool("bad")).structured == {"n": "one"}


# -- TTL cache ------------------------------------------------------------------------------------


async def next_event(sub: Subscription, method: str) -> Notification:
    """The next event of ``sub`` with ``method`` (skipping any others)."""
    async for event in sub:
        if event.method == method:
            return event
    raise AssertionError(f"the subscription ended before {method}")


def cached_server(ttl: int = 60000) -> CountingServer:
    server = CountingServer("cached", cache_ttl_ms=ttl)

    @server.tool()
    def one() -> str:
        return "1"

    @server.resource("mem://doc")
    def doc() -> str:
        return "doc"

    return server


async def test_cached_lists_do_not_hit_the_server() -> None:
    server = cached_server()
    with anyio.fail_after(WAIT):
        async with Client(server) as client:
            first = await client.list_tools()
            second = await client.list_tools()
            assert [t.name for t in first] == [t.name for t in second] == ["one"]
            assert server.count("tools/list") == 1
            await client.list_tools(cache=False)
            assert server.count("tools/list") == 2
            await client.read_resource("mem://doc")
            await client.read_resource("mem://doc")
            assert server.count("resources/read") == 1


async def test_list_changed_invalidates_the_cache() -> None:
    server = cached_server()
    with anyio.fail_after(WAIT):
        async with Client(server) as client, client.listen(tools=True) as sub:
            await client.list_tools()
            await client.list_tools()
            assert server.count("tools/list") == 1
            await server.notify_tools_changed()
            await next_event(sub, "notifications/tools/list_changed")
            await client.list_tools()
            assert server.count("tools/list") == 2


async def test_resource_updated_invalidates_the_read_cache() -> None:
    server = cached_server()
    with anyio.fail_after(WAIT):
        async with Client(server) as client, client.listen(uris=["mem://doc"]) as sub:
            await client.read_resource("mem://doc")
            await server.notify_resource_updated("mem://doc")
            await next_event(sub, "notifications/resources/updated")
            await client.read_resource("mem://doc")
            assert server.count("resources/read") == 2


@pytest.mark.parametrize(("mode", "ttl"), [("auto", 0), ("legacy", 60000)])
async def test_no_caching_without_ttl_or_in_legacy(mode: str, ttl: int) -> None:
    server = cached_server(ttl)
    with anyio.fail_after(WAIT):
        async with Client(server, mode=mode) as client:
            await client.list_tools()
            await client.list_tools()
    assert server.count("tools/list") == 2


async def test_cache_can_be_turned_off() -> None:
    server = cached_server()
    with anyio.fail_after(WAIT):
        async with Client(server, cache=False) as client:
            await client.list_tools()
            await client.list_tools()
    assert server.count("tools/list") == 2


# -- listen ---------------------------------------------------------------------------------------


async def test_listen_yields_events() -> None:
    with anyio.fail_after(WAIT):
        async with (
            Client(everything.server) as client,
            client.listen(tools=True, uris=["demo://readme"]) as sub,
        ):
            assert sub.honored == {
                "toolsListChanged": True,
                "resourceSubscriptions": ["demo://readme"],
            }
            await client.call_tool("touch", {"uri": "demo://readme"})
            await client.call_tool("touch", {"uri": "demo://other"})
            await everything.server.notify_tools_changed()
            # Only the stream's events: the acknowledgement was consumed
            # by listen() (its content is ``sub.honored``).
            first = await sub.__anext__()
            assert first.method == "notifications/resources/updated"
            assert first.params is not None and first.params["uri"] == "demo://readme"
            second = await sub.__anext__()
            assert second.method == "notifications/tools/list_changed"
            assert second.params is not None
            assert second.params["_meta"][SUBSCRIPTION_ID] == sub.id


async def test_listen_ends_when_the_server_closes_subscriptions() -> None:
    server = cached_server()
    with anyio.fail_after(WAIT):
        async with Client(server) as client, client.listen(tools=True) as sub:
            await server.notify_tools_changed()
            server.close_subscriptions()
            events = [event.method async for event in sub]
            assert events == ["notifications/tools/list_changed"]


async def test_listen_releases_its_stream() -> None:
    server = cached_server()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with anyio.fail_after(WAIT):
            async with Client(server) as client:
                async with client.listen(tools=True) as sub:
                    assert sub.honored == {"toolsListChanged": True}
                del sub
                gc.collect()
    leaks = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert leaks == []


async def test_legacy_listen_raises() -> None:
    with anyio.fail_after(WAIT):
        async with Client(everything.server, mode="legacy") as client:
            with pytest.raises(MCPWireError, match="modern"):
                async with client.listen(tools=True):
                    pass
            # Legacy subscriptions go through subscribe_resource instead.
            await client.subscribe_resource("demo://readme")


async def test_legacy_subscribe_and_on_notification() -> None:
    notes: list[tuple[str, dict[str, Any]]] = []
    got = anyio.Event()

    async def on_notification(method: str, params: dict[str, Any]) -> None:
        notes.append((method, params))
        if method == "notifications/resources/updated":
            got.set()

    with anyio.fail_after(WAIT):
        async with Client(
            everything.server, mode="legacy", on_notification=on_notification
        ) as client:
            await client.subscribe_resource("demo://readme")
            await client.call_tool("touch", {"uri": "demo://readme"})
            await got.wait()
    assert ("notifications/resources/updated", {"uri": "demo://readme"}) in notes


# -- stdio -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_stdio_example_server(mode: str) -> None:
    with anyio.fail_after(WAIT):
        async with Client.stdio(sys.executable, EVERYTHING, mode=mode) as client:
            assert client.era == ("modern" if mode == "auto" else "legacy")
            tools = await client.list_tools()
            assert "echo" in {t.name for t in tools}
            result = await client.call_tool("echo", {"message": "over stdio"})
            assert result.text == "over stdio"
            (readme,) = await client.read_resource("demo://readme")
            assert readme.text is not None and "mcpwire" in readme.text


async def test_stdio_passes_limits_and_an_oversized_reply_fails_its_call(tmp_path: Path) -> None:
    # A 3 MB echo answers with the text twice (content + structuredContent):
    # over a 1 MiB limit the client refuses the reply; with 8 MiB it fits.
    text = "x" * 3_000_000
    log = tmp_path / "stderr.log"
    with anyio.fail_after(WAIT), open(log, "wb") as sink:
        async with Client.stdio(
            sys.executable, EVERYTHING, limits=Limits(max_size=1 << 20), stderr_log=sink
        ) as client:
            # Its first bytes name the call it answers: the call fails at once.
            with pytest.raises(JSONRPCError, match="exceeds the message size limit of 1048576"):
                await client.call_tool("echo", {"message": text})
            assert (await client.call_tool("echo", {"message": "still here"})).text == "still here"
        async with Client.stdio(
            sys.executable, EVERYTHING, limits=Limits(max_size=8 << 20), shutdown_timeout=0.5
        ) as client:
            result = await client.call_tool("echo", {"message": text})
            assert result.text == text


TYPESCRIPT_ORDER_SERVER = textwrap.dedent(
    """
    import json
    import sys

    # Writes results the way the TypeScript SDK does: {result, jsonrpc, id}, the id last.
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue
        if message["method"] == "initialize":
            result = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "id-last", "version": "0"},
            }
        elif message["method"] == "tools/call":
            text = message["params"]["arguments"]["text"]
            result = {"content": [{"type": "text", "text": text}]}
        elif message["method"] == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}
        else:
            result = {}
        print(json.dumps({"result": result, "jsonrpc": "2.0", "id": message["id"]}), flush=True)
    """
)


async def test_an_oversized_reply_with_its_id_last_fails_its_call_at_once(tmp_path: Path) -> None:
    """Its first bytes do not name the call it answers; its last ones do, so the
    call still fails at once, not at its timeout, and the connection serves on."""
    script = tmp_path / "id_last.py"
    script.write_text(TYPESCRIPT_ORDER_SERVER)
    with anyio.fail_after(WAIT):
        async with Client.stdio(
            sys.executable, [str(script)], mode="legacy", limits=Limits(max_size=1 << 16)
        ) as client:
            with pytest.raises(JSONRPCError, match="exceeds the message size limit of 65536"):
                await client.call_tool("echo", {"text": "x" * 100_000}, timeout=WAIT * 4)
            assert (await client.call_tool("echo", {"text": "fits"})).text == "fits"


DYING_SERVER = textwrap.dedent(
    """
    import os
    import sys

    from mcpwire import Server

    server = Server("dying")


    @server.tool()
    def die() -> str:
        sys.stderr.write("about to die\\n")
        sys.stderr.flush()
        os._exit(7)


    @server.tool()
    def ok() -> str:
        return "ok"


    server.run()
    """
)


async def test_connection_closed_when_the_stdio_server_dies(tmp_path: Path) -> None:
    script = tmp_path / "dying.py"
    script.write_text(DYING_SERVER)
    with anyio.fail_after(WAIT):
        async with Client.stdio(sys.executable, [str(script)]) as client:
            assert (await client.call_tool("ok")).text == "ok"
            with pytest.raises(ConnectionClosed) as info:
                await client.call_tool("die")
            assert info.value.exit_code == 7
            assert "about to die" in info.value.stderr_tail
            # Later calls fail at once, the same way.
            with pytest.raises(ConnectionClosed):
                await client.call_tool("ok")


async def test_stdio_command_not_found() -> None:
    with anyio.fail_after(WAIT), pytest.raises(ConnectionClosed):
        async with Client.stdio("mcpwire-no-such-command-xyz"):
            pass


# -- closing -----------------------------------------------------------------------------


@asynccontextmanager
async def closing_target(transport: str) -> AsyncIterator[Client]:
    """A client of the example server over ``transport``, ready to be closed early."""
    if transport == "memory":
        async with Client(everything.server) as client:
            yield client
    elif transport == "stdio":
        async with Client.stdio(sys.executable, EVERYTHING) as client:
            yield client
    else:
        async with anyio.create_task_group() as tg:
            port = await tg.start(everything.server.serve_http, "127.0.0.1", 0)
            async with Client.http(f"http://127.0.0.1:{port}/mcp") as client:
                yield client
            tg.cancel_scope.cancel()


@pytest.mark.parametrize("transport", ["memory", "stdio", "http"])
async def test_aclose_inside_async_with_under_any_scope(transport: str) -> None:
    # The task groups ``async with`` entered may only be exited in that nesting:
    # aclose() from under a deadline scope, with calls in flight in a task group
    # of the caller's, ends the connection and leaves those exits to the block.
    outcomes: list[str] = []
    with anyio.fail_after(WAIT):
        async with closing_target(transport) as client:

            async def caller() -> None:
                try:
                    while True:
                        await client.call_tool("echo", {"message": "x"})
                except ConnectionClosed:
                    outcomes.append("closed")

            async with anyio.create_task_group() as callers:
                for _ in range(4):
                    callers.start_soon(caller)
                await anyio.sleep(0.05)
                with anyio.move_on_after(WAIT):
                    await client.aclose()
                    await client.aclose()  # idempotent
            with pytest.raises(ConnectionClosed):
                await client.call_tool("echo", {"message": "after"})
    assert outcomes == ["closed"] * 4


async def test_a_loop_of_in_process_calls_does_not_starve_the_event_loop() -> None:
    # Client(server) serves a quick call inline: nothing in it waits. The loop
    # must still reach a checkpoint now and then, or this deadline never fires.
    calls = 0
    async with Client(everything.server) as client:
        with anyio.move_on_after(0.2) as scope:
            while True:
                await client.call_tool("echo", {"message": "x"})
                calls += 1
    assert scope.cancelled_caught
    assert calls > 0
