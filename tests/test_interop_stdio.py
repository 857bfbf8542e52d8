"""Interop with the reference MCP Python SDK (``mcp==2.3.0``) over real stdio child processes.

Nothing is mocked: every peer is a separate process speaking newline-delimited JSON-RPC.

1. The SDK's ``Client`` drives our example server (``python -m mcpwire.examples.everything``)
   in each of its modes: ``legacy`` (initialize handshake), ``auto`` (server/discover probe,
   must land on 2026-07-28) and a pinned ``2026-07-28``; also two small mcpwire servers in
   ``tests/interop/``: ``paged_server.py`` (pagination) and ``shapes_server.py`` (structured
   output the SDK client checks against our derived ``outputSchema``).
2. Our ``Client`` drives an SDK ``MCPServer`` (``tests/interop/ref_server.py``) in modes
   ``auto``, ``legacy`` and ``2026-07-28``.
3. Wire validation: the traffic is captured by ``tests/interop/tee.py`` and every frame
   mcpwire wrote (server frames in 1, client frames in 2) is checked against the SDK's
   per-version wire types (``tests/interop/wirecheck.py``, strict).

Every test runs on both anyio backends (``anyio_backend`` in ``conftest.py``); the SDK client
works on trio too. Deviations of the SDK from the specification are asserted as observed and
marked "SDK deviation" so that a change in the SDK shows up here.
"""

from __future__ import annotations

import base64
import gc
import json
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp.types as types
import pytest
from interop.wirecheck import check_capture, check_input_rounds, read_capture
from mcp import Client as SdkClient
from mcp import MCPError, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning
from mcp.shared.subscriptions import ResourceUpdated

from mcpwire import Client, JSONRPCError, MCPWireError, RequestTimeout

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent
INTEROP = Path(__file__).resolve().parent / "interop"
TEE = INTEROP / "tee.py"
REF_SERVER = INTEROP / "ref_server.py"
PAGED_SERVER = INTEROP / "paged_server.py"
SHAPES_SERVER = INTEROP / "shapes_server.py"
EVERYTHING = ("-m", "mcpwire.examples.everything")
#: The SDK's stdio client passes only HOME, LOGNAME, PATH, SHELL, TERM and USER to the child.
CHILD_ENV = {"PYTHONPATH": str(ROOT)}
MODERN = "2026-07-28"
LEGACY = "2025-11-25"
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)
TEST_TIMEOUT = 30


def sdk_params(*argv: str, capture: Path | None = None) -> StdioServerParameters:
    """Launch parameters for the SDK client; ``capture`` puts the tee in between."""
    args = list(argv)
    if capture is not None:
        args = [str(TEE), str(capture), sys.executable, *args]
    return StdioServerParameters(command=sys.executable, args=args, env=CHILD_ENV)


def ref_server_argv(capture: Path | None = None) -> list[str]:
    """Arguments (after ``sys.executable``) that start the SDK server, optionally tee'd."""
    if capture is None:
        return [str(REF_SERVER)]
    return [str(TEE), str(capture), sys.executable, str(REF_SERVER)]


@contextmanager
def sdk_deprecated() -> Iterator[None]:
    """The SDK warns (MCPDeprecationWarning) on its legacy-only calls; we call them on purpose."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        yield


def dump(model: Any) -> dict[str, Any]:
    result: dict[str, Any] = model.model_dump(by_alias=True, mode="json", exclude_none=True)
    return result


def report(problems: list[str]) -> str:
    return f"{len(problems)} problem(s):\n" + "\n".join(problems)


# =================================================================================================
# 1. The reference SDK client drives mcpwire's example server
# =================================================================================================


@dataclass
class SdkPeer:
    """The SDK client's callbacks; records what our server sent and answers from a script."""

    elicit_actions: list[str] = field(default_factory=list)
    elicitations: list[dict[str, Any]] = field(default_factory=list)
    samplings: list[dict[str, Any]] = field(default_factory=list)
    roots_asked: int = 0
    logs: list[tuple[str, Any]] = field(default_factory=list)
    notifications: list[Any] = field(default_factory=list)
    updated: anyio.Event | None = None

    async def elicitation(self, ctx: Any, params: Any) -> types.ElicitResult:
        self.elicitations.append(dump(params))
        action = self.elicit_actions.pop(0) if self.elicit_actions else "accept"
        if action == "accept":
            return types.ElicitResult(action="accept", content={"name": "Ada"})
        return types.ElicitResult(action=action)  # type: ignore[arg-type]

    async def sampling(self, ctx: Any, params: Any) -> types.CreateMessageResult:
        self.samplings.append(dump(params))
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="SAMPLED"), model="m"
        )

    async def roots(self, ctx: Any) -> types.ListRootsResult:
        self.roots_asked += 1
        return types.ListRootsResult(
            roots=[types.Root(uri="file:///tmp/a", name="a"), types.Root(uri="file:///tmp/b")]
        )

    async def logging(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logs.append((params.level, params.data))

    async def messages(self, message: Any) -> None:
        self.notifications.append(message)
        if isinstance(message, types.ResourceUpdatedNotification) and self.updated is not None:
            self.updated.set()

    def callbacks(self) -> dict[str, Any]:
        return {
            "elicitation_callback": self.elicitation,
            "sampling_callback": self.sampling,
            "list_roots_callback": self.roots,
            "logging_callback": self.logging,
            "message_handler": self.messages,
        }

    def updates(self) -> list[str]:
        return [
            n.params.uri
            for n in self.notifications
            if isinstance(n, types.ResourceUpdatedNotification)
        ]


async def sdk_exercise_everything(c: SdkClient, peer: SdkPeer, mode: str) -> None:
    """Every feature of the example server through the SDK client, checking every value."""
    modern = c.protocol_version == MODERN
    # -- identity --------------------------------------------------------------------------
    if mode != MODERN:  # a pinned 2026 SDK client skips discovery, so it knows neither
        assert c.server_info is not None
        assert (c.server_info.name, c.server_info.version) == ("mcpwire-everything", "1.0.0")
        assert c.server_info.title == "mcpwire example server"
        caps = c.server_capabilities
        assert caps.tools is not None and caps.tools.list_changed is True
        assert caps.resources is not None and caps.resources.subscribe is True
        assert caps.prompts is not None and caps.completions is not None
        assert caps.logging is not None
        assert c.instructions is not None and c.instructions.startswith("A demonstration")

    # -- tools/list ------------------------------------------------------------------------
    tools = {t.name: t for t in (await c.list_tools()).tools}
    assert set(tools) == {
        "echo",
        "add",
        "get_weather",
        "long_task",
        "log_demo",
        "fail",
        "image",
        "ask_name",
        "summarize",
        "show_roots",
        "touch",
    }
    echo = tools["echo"]
    assert echo.description == "Echo the message back."
    assert echo.input_schema["type"] == "object"
    assert echo.input_schema["properties"]["message"]["type"] == "string"
    assert echo.input_schema["properties"]["message"]["description"] == "The text to send back"
    assert echo.input_schema["required"] == ["message"]
    assert echo.output_schema is not None
    assert echo.output_schema["properties"]["result"]["type"] == "string"
    assert echo.annotations is not None and echo.annotations.read_only_hint is True
    add_schema = tools["add"].input_schema
    assert add_schema["properties"] == {"a": {"type": "integer"}, "b": {"type": "integer"}}
    assert sorted(add_schema["required"]) == ["a", "b"]
    weather = tools["get_weather"]
    assert weather.input_schema["properties"]["units"]["enum"] == ["celsius", "fahrenheit"]
    assert weather.input_schema["required"] == ["city"]
    assert weather.output_schema is not None
    assert weather.output_schema["type"] == "object"
    assert sorted(weather.output_schema["required"]) == ["city", "conditions", "temperature"]
    assert weather.output_schema["properties"]["temperature"]["type"] == "number"
    assert tools["image"].output_schema is None

    # -- tools/call ------------------------------------------------------------------------
    r = await c.call_tool("echo", {"message": "hi there"})
    assert not r.is_error
    assert dump(r)["content"] == [{"type": "text", "text": "hi there"}]
    assert r.structured_content == {"result": "hi there"}
    r = await c.call_tool("add", {"a": 2, "b": 40})
    assert r.structured_content == {"result": 42}
    assert r.content[0].text == "42"  # type: ignore[union-attr]
    # The SDK client validates structuredContent against the outputSchema (RuntimeError if not).
    r = await c.call_tool("get_weather", {"city": "Paris"})
    assert r.structured_content == {"city": "Paris", "temperature": 21.5, "conditions": "sunny"}
    assert json.loads(r.content[0].text) == r.structured_content  # type: ignore[union-attr]
    r = await c.call_tool("get_weather", {"city": "Oslo", "units": "fahrenheit"})
    assert r.structured_content == {"city": "Oslo", "temperature": 70.7, "conditions": "sunny"}
    r = await c.call_tool("fail", {})
    assert r.is_error is True
    assert r.content[0].text == "this tool always fails"  # type: ignore[union-attr]
    r = await c.call_tool("fail", {"message": "custom failure"})
    assert r.is_error is True and r.content[0].text == "custom failure"  # type: ignore[union-attr]
    r = await c.call_tool("image", {})
    assert not r.is_error
    block = r.content[0]
    assert isinstance(block, types.ImageContent)
    assert block.mime_type == "image/png"
    assert base64.b64decode(block.data) == PIXEL
    # Arguments that fail the input schema: a tool execution error, not a protocol error.
    r = await c.call_tool("add", {"a": "two", "b": 1})
    assert r.is_error is True

    # -- progress ----------------------------------------------------------------------------
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    r = await c.call_tool("long_task", {"delay": 0.01}, progress_callback=on_progress)
    assert r.content[0].text == "finished 5 steps"  # type: ignore[union-attr]
    assert [p[0] for p in progress] == [1, 2, 3, 4, 5]
    assert {p[1] for p in progress} == {5}
    assert progress[0][2] == "step 1 of 5"

    # -- logging -----------------------------------------------------------------------------
    peer.logs.clear()
    await c.call_tool("log_demo", {})
    if mode == "legacy":  # no logging/setLevel yet: everything is sent
        assert peer.logs == [
            ("debug", "a debug message"),
            ("info", "an info message"),
            ("warning", "a warning message"),
            ("error", "an error message"),
        ]
        with sdk_deprecated():
            await c.set_logging_level("warning")
        peer.logs.clear()
        await c.call_tool("log_demo", {})
        assert peer.logs == [("warning", "a warning message"), ("error", "an error message")]
    elif mode == "auto":  # log_level="debug" rides in every request's _meta
        assert [lvl for lvl, _ in peer.logs] == ["debug", "info", "warning", "error"]
    else:  # log_level="warning"
        assert peer.logs == [("warning", "a warning message"), ("error", "an error message")]

    # -- elicitation: legacy server->client request; modern InputRequiredResult round trip ----
    peer.elicit_actions[:] = ["accept", "decline", "cancel"]
    r = await c.call_tool("ask_name", {})
    assert r.content[0].text == "Hello, Ada!"  # type: ignore[union-attr]
    assert r.structured_content == {"result": "Hello, Ada!"}
    asked = peer.elicitations[-1]
    assert asked["message"] == "What is your name?"
    assert asked["requestedSchema"]["properties"] == {"name": {"type": "string"}}
    assert asked.get("mode", "form") == "form"
    r = await c.call_tool("ask_name", {})
    assert r.content[0].text == "No name given (decline)"  # type: ignore[union-attr]
    r = await c.call_tool("ask_name", {})
    assert r.content[0].text == "No name given (cancel)"  # type: ignore[union-attr]
    assert len(peer.elicitations) == 3

    # -- sampling and roots ------------------------------------------------------------------
    r = await c.call_tool("summarize", {"text": "a long story"})
    assert r.content[0].text == "SAMPLED"  # type: ignore[union-attr]
    assert peer.samplings[-1]["maxTokens"] == 100
    assert peer.samplings[-1]["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "Summarize: a long story"}}
    ]
    r = await c.call_tool("show_roots", {})
    assert r.content[0].text == "file:///tmp/a\nfile:///tmp/b"  # type: ignore[union-attr]
    assert peer.roots_asked == 1

    # -- unknown tool: a protocol error in both eras -----------------------------------------
    with pytest.raises(MCPError) as err:
        await c.call_tool("no_such_tool", {})
    assert err.value.code == -32602
    assert "no_such_tool" in err.value.error.message

    # -- resources ---------------------------------------------------------------------------
    resources = {res.uri: res for res in (await c.list_resources()).resources}
    assert set(resources) == {"demo://readme", "demo://pixel.png"}
    assert resources["demo://readme"].mime_type == "text/markdown"
    assert resources["demo://readme"].name == "readme"
    assert resources["demo://pixel.png"].mime_type == "image/png"
    templates = (await c.list_resource_templates()).resource_templates
    assert [(t.uri_template, t.name, t.mime_type) for t in templates] == [
        ("demo://items/{item_id}", "item", "application/json")
    ]
    contents = (await c.read_resource("demo://readme")).contents
    assert len(contents) == 1
    assert isinstance(contents[0], types.TextResourceContents)
    assert contents[0].text.startswith("# mcpwire example server")
    assert contents[0].mime_type == "text/markdown"
    contents = (await c.read_resource("demo://pixel.png")).contents
    assert isinstance(contents[0], types.BlobResourceContents)
    assert base64.b64decode(contents[0].blob) == PIXEL
    assert contents[0].mime_type == "image/png"
    contents = (await c.read_resource("demo://items/7")).contents
    assert isinstance(contents[0], types.TextResourceContents)
    assert str(contents[0].uri) == "demo://items/7"
    assert json.loads(contents[0].text) == {"id": "7", "name": "item 7"}
    with pytest.raises(MCPError) as err:
        await c.read_resource("demo://missing")
    # Resource not found: -32002 in the legacy era, -32602 from 2026-07-28 on; data names the uri.
    assert err.value.code == (-32602 if modern else -32002)
    assert err.value.error.data == {"uri": "demo://missing"}

    # -- prompts -----------------------------------------------------------------------------
    prompts = {p.name: p for p in (await c.list_prompts()).prompts}
    assert set(prompts) == {"greet", "code_review"}
    assert [(a.name, a.required) for a in prompts["greet"].arguments or []] == [
        ("name", True),
        ("style", False),
    ]
    got = await c.get_prompt("greet", {"name": "Ada", "style": "formal"})
    assert [(m.role, dump(m.content)) for m in got.messages] == [
        ("user", {"type": "text", "text": "Write a formal greeting for Ada."})
    ]
    got = await c.get_prompt("greet", {"name": "Bob"})
    assert got.messages[0].content.text == "Write a friendly greeting for Bob."  # type: ignore[union-attr]
    with pytest.raises(MCPError) as err:
        await c.get_prompt("no_such_prompt", {})
    assert err.value.code == -32602
    with pytest.raises(MCPError) as err:
        await c.get_prompt("greet", {})  # missing required argument
    assert err.value.code == -32602

    # -- completion --------------------------------------------------------------------------
    done = await c.complete(
        types.PromptReference(type="ref/prompt", name="greet"), {"name": "style", "value": "f"}
    )
    assert done.completion.values == ["friendly", "formal"]
    done = await c.complete(
        types.ResourceTemplateReference(type="ref/resource", uri="demo://items/{item_id}"),
        {"name": "item_id", "value": "4"},
    )
    assert done.completion.values == ["42"]
    done = await c.complete(
        types.ResourceTemplateReference(type="ref/resource", uri="demo://items/{item_id}"),
        {"name": "item_id", "value": ""},
    )
    assert done.completion.values == ["1", "2", "3", "42"]

    # -- change notifications ----------------------------------------------------------------
    if modern:
        async with c.listen(
            tools_list_changed=True, resource_subscriptions=["demo://readme"]
        ) as sub:
            assert sub.honored.tools_list_changed is True
            assert sub.honored.resource_subscriptions == ["demo://readme"]
            await c.call_tool("touch", {"uri": "demo://elsewhere"})  # not subscribed
            await c.call_tool("touch", {})
            events = []
            async for event in sub:
                events.append(event)
                if isinstance(event, ResourceUpdated):
                    break
            assert events == [ResourceUpdated(uri="demo://readme")]
    else:
        peer.updated = anyio.Event()
        with sdk_deprecated():
            await c.subscribe_resource("demo://readme")
        await c.call_tool("touch", {"uri": "demo://elsewhere"})  # not subscribed
        await c.call_tool("touch", {})
        await peer.updated.wait()
        assert peer.updates() == ["demo://readme"]
        with sdk_deprecated():
            await c.unsubscribe_resource("demo://readme")
            await c.send_ping()
    await anyio.sleep(0.3)  # the SDK sends the listen cancel from a background task
    await c.call_tool("touch", {})  # nobody listens any more
    r = await c.call_tool("echo", {"message": "still alive"})
    assert r.content[0].text == "still alive"  # type: ignore[union-attr]
    if not modern:
        assert peer.updates() == ["demo://readme"]


SDK_MODES = [
    # (mode, expected protocol version, log level the client asks for)
    pytest.param("legacy", LEGACY, None, id="legacy"),
    pytest.param("auto", MODERN, "debug", id="auto"),
    pytest.param(MODERN, MODERN, "warning", id="pinned-2026"),
]


@pytest.mark.parametrize(("mode", "version", "log_level"), SDK_MODES)
async def test_sdk_client_drives_mcpwire_server(
    anyio_backend: str, mode: str, version: str, log_level: str | None
) -> None:
    peer = SdkPeer()
    with anyio.fail_after(TEST_TIMEOUT):
        async with SdkClient(
            sdk_params(*EVERYTHING),
            mode=mode,  # type: ignore[arg-type]
            log_level=log_level,  # type: ignore[arg-type]
            read_timeout_seconds=15,
            cache=None,
            **peer.callbacks(),
        ) as c:
            assert c.protocol_version == version
            await sdk_exercise_everything(c, peer, mode)


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_sdk_client_without_capabilities(anyio_backend: str, mode: str) -> None:
    """A client that declares no elicitation/sampling/roots, and (modern) asks for no logs."""
    peer = SdkPeer()
    with anyio.fail_after(TEST_TIMEOUT):
        async with SdkClient(
            sdk_params(*EVERYTHING),
            mode=mode,  # type: ignore[arg-type]
            read_timeout_seconds=15,
            cache=None,
            logging_callback=peer.logging,
        ) as c:
            await c.call_tool("log_demo", {})
            if mode == MODERN:
                # No io.modelcontextprotocol/logLevel in _meta: the server MUST NOT log.
                assert peer.logs == []
                for tool, args, capability in [
                    ("ask_name", {}, "elicitation"),
                    ("summarize", {"text": "x"}, "sampling"),
                    ("show_roots", {}, "roots"),
                ]:
                    with pytest.raises(MCPError) as err:
                        await c.call_tool(tool, args)
                    assert err.value.code == -32021, tool
                    data = err.value.error.data
                    assert isinstance(data, dict)
                    assert capability in data["requiredCapabilities"], tool
            else:
                assert len(peer.logs) == 4
                for tool, args in [
                    ("ask_name", {}),
                    ("summarize", {"text": "x"}),
                    ("show_roots", {}),
                ]:
                    r = await c.call_tool(tool, args)
                    assert r.is_error is True, tool
                    assert "did not declare" in r.content[0].text  # type: ignore[union-attr]
            r = await c.call_tool("echo", {"message": "ok"})
            assert r.structured_content == {"result": "ok"}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_client_pages_through_mcpwire_lists(anyio_backend: str, mode: str) -> None:
    """Our opaque cursors work for the SDK client (two items per page); bad cursors are -32602."""
    with anyio.fail_after(TEST_TIMEOUT):
        async with SdkClient(
            sdk_params(str(PAGED_SERVER)), mode=mode, read_timeout_seconds=15, cache=None
        ) as c:
            for lister, key in [
                (c.list_tools, "tools"),
                (c.list_resources, "resources"),
                (c.list_prompts, "prompts"),
            ]:
                names: list[str] = []
                cursor: str | None = None
                pages = 0
                while True:
                    page = await lister(cursor=cursor)
                    pages += 1
                    items = getattr(page, key)
                    assert len(items) <= 2
                    names.extend(i.name for i in items)
                    if mode == "auto":
                        wire = dump(page)
                        assert (wire["ttlMs"], wire["cacheScope"]) == (60_000, "public")
                    cursor = page.next_cursor
                    if cursor is None:
                        break
                assert pages == 3, key
                prefix = key[0]
                assert names == [f"{prefix}{i}" for i in range(5)], key
            with pytest.raises(MCPError) as err:
                await c.list_tools(cursor="not-a-cursor")
            assert err.value.code == -32602
            r = await c.call_tool("t3", {"x": 1})
            assert r.structured_content == {"result": 4}


SHAPES = [
    # (tool, arguments, expected structuredContent)
    ("ints", {}, {"result": [1, 2, 3]}),
    ("mapping", {}, {"a": 1.5, "b": 2}),
    ("maybe", {"flag": True}, {"result": 1}),
    ("maybe", {"flag": False}, {"result": None}),
    ("point", {}, {"x": 3, "y": 4}),
    ("points", {}, {"result": [{"x": 1, "y": 0}, {"x": 2, "y": 3}]}),
    ("tree", {}, {"value": 1, "children": [{"value": 2, "children": []}]}),
    ("either", {"which": "a"}, {"result": {"kind": "a", "a": 1}}),
    ("either", {"which": "b"}, {"result": {"kind": "b", "b": "x"}}),
    ("optional_point", {"flag": True}, {"result": {"x": 1, "y": 0}}),
    ("optional_point", {"flag": False}, {"result": None}),
    ("color", {}, {"result": "green"}),
    ("tagged", {}, {"result": "y"}),
    ("pair", {}, {"result": [1, "a"]}),
    ("number", {}, {"result": 2}),
    ("nested", {}, {"k": [{"x": 1, "y": 0}]}),
    ("describe", {"c": "red", "p": {"x": 1}}, {"result": "red 1,0 None"}),
    ("describe", {"c": "green", "p": {"x": 1, "y": 2}, "opt": 3}, {"result": "green 1,2 3"}),
    ("partial", {"full": True}, {"required": "r", "optional": 1}),
]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_client_accepts_mcpwire_structured_output(
    anyio_backend: str, tmp_path: Path, mode: str
) -> None:
    """The SDK client validates every structuredContent against our derived outputSchema."""
    capture = tmp_path / "wire.log"
    with anyio.fail_after(TEST_TIMEOUT):
        async with SdkClient(
            sdk_params(str(SHAPES_SERVER), capture=capture),
            mode=mode,
            read_timeout_seconds=15,
            cache=None,
        ) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            for name, args, expected in SHAPES:
                assert tools[name].output_schema is not None, name
                r = await c.call_tool(name, args)  # RuntimeError if the schema rejects it
                assert not r.is_error, (name, r.content)
                assert r.structured_content == expected, name
            r = await c.call_tool("describe", {"c": "blue", "p": {"x": 1}})
            assert r.is_error is True  # not one of the enum's values
    problems = check_capture(read_capture(capture), sides=("S>C",))
    assert problems == [], report(problems)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_client_typeddict_notrequired_under_future_annotations(
    anyio_backend: str, mode: str
) -> None:
    """A TypedDict key marked ``NotRequired`` may be absent, in results and in arguments.

    ``tests/interop/shapes_server.py`` uses ``from __future__ import annotations``; there
    ``Partial.__required_keys__`` wrongly contains every key (CPython evaluates the
    qualifiers only for non-string annotations), so a schema built from it lists the
    NotRequired key under ``required``. The SDK client then rejects the server's own valid
    result ("Invalid structured content returned by tool partial: 'optional' is a required
    property"), and our server rejects a valid argument.
    """
    with anyio.fail_after(TEST_TIMEOUT):
        async with SdkClient(
            sdk_params(str(SHAPES_SERVER)), mode=mode, read_timeout_seconds=15, cache=None
        ) as c:
            tools = {t.name: t for t in (await c.list_tools()).tools}
            out = tools["partial"].output_schema
            assert out is not None
            assert out.get("required") == ["required"], out
            arg = tools["take_partial"].input_schema["properties"]["p"]
            assert arg.get("required") == ["required"], arg
            r = await c.call_tool("take_partial", {"p": {"required": "r"}})
            assert not r.is_error, r.content
            assert r.structured_content == {"result": "r None"}
            r = await c.call_tool("partial", {"full": False})
            assert r.structured_content == {"required": "r"}


# =================================================================================================
# 2. mcpwire's client drives the reference SDK server
# =================================================================================================


@dataclass
class OurPeer:
    """Our client's callbacks (wire-form dicts in, wire-form dicts out)."""

    elicit_actions: list[str] = field(default_factory=list)
    elicitations: list[dict[str, Any]] = field(default_factory=list)
    samplings: list[dict[str, Any]] = field(default_factory=list)
    notifications: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    async def elicitation(self, params: dict[str, Any]) -> dict[str, Any]:
        self.elicitations.append(params)
        action = self.elicit_actions.pop(0) if self.elicit_actions else "accept"
        if action == "accept":
            return {"action": "accept", "content": {"name": "Ada"}}
        return {"action": action}

    async def sampling(self, params: dict[str, Any]) -> dict[str, Any]:
        self.samplings.append(params)
        return {
            "role": "assistant",
            "content": {"type": "text", "text": "SAMPLED"},
            "model": "test-model",
        }

    async def on_notification(self, method: str, params: dict[str, Any]) -> None:
        self.notifications.append((method, params))

    def logs(self) -> list[tuple[str, Any]]:
        return [
            (p["level"], p["data"]) for m, p in self.notifications if m == "notifications/message"
        ]

    def options(self) -> dict[str, Any]:
        return {
            "elicitation": self.elicitation,
            "sampling": self.sampling,
            "roots": [{"uri": "file:///tmp/a", "name": "a"}, {"uri": "file:///tmp/b"}],
            "on_notification": self.on_notification,
        }


async def ours_exercise_ref_server(c: Client, peer: OurPeer, mode: str) -> None:
    modern = c.era == "modern"
    # -- identity --------------------------------------------------------------------------
    assert c.server_info == {"name": "ref-server", "version": "1.2.3"}
    assert c.instructions == "reference server"
    assert "tools" in c.server_capabilities and "completions" in c.server_capabilities
    if modern:
        assert MODERN in c.supported_versions
        assert c.server_capabilities["resources"] == {"listChanged": True, "subscribe": True}

    # -- tools/list ------------------------------------------------------------------------
    tools = {t.name: t for t in await c.list_tools(cache=False)}
    assert set(tools) == {
        "echo",
        "get_weather",
        "slow_count",
        "greet",
        "summarize",
        "show_roots",
        "sleepy",
        "touch",
    }
    assert tools["echo"].description == "Echo the message back."
    assert tools["echo"].input_schema["properties"]["message"]["type"] == "string"
    assert tools["echo"].input_schema["required"] == ["message"]
    weather_out = tools["get_weather"].output_schema
    assert weather_out is not None
    assert weather_out["required"] == ["city", "temperature", "conditions"]
    assert weather_out["properties"]["temperature"] == {
        "description": "Celsius",
        "title": "Temperature",
        "type": "number",
    }

    # -- tools/call ------------------------------------------------------------------------
    r = await c.call_tool("echo", {"message": "hi there"})
    assert not r.is_error
    assert r.text == "hi there"
    assert r.structured == {"result": "hi there"}
    assert [b.type for b in r.content] == ["text"]
    # Our client checks structuredContent against the advertised outputSchema.
    r = await c.call_tool("get_weather", {"city": "Paris"})
    assert r.structured == {"city": "Paris", "temperature": 21.5, "conditions": "sunny"}
    assert json.loads(r.text) == r.structured
    if modern:
        assert r.raw["resultType"] == "complete"
        assert r.meta == {"io.modelcontextprotocol/serverInfo": c.server_info}
    # Bad arguments: the SDK answers with an isError result (spec-conformant).
    r = await c.call_tool("echo", {"message": 1})
    assert r.is_error is True
    # SDK deviation: an unknown tool is an isError result ("Unknown tool: ..."), where the
    # specification (tools.mdx, both eras) asks for a JSON-RPC error -32602.
    r = await c.call_tool("no_such_tool", {})
    assert r.is_error is True
    assert r.text == "Unknown tool: no_such_tool"

    # -- a request we give up on: RequestTimeout, and notifications/cancelled goes out -------
    with pytest.raises(RequestTimeout):
        await c.call_tool("sleepy", {"seconds": 10}, timeout=0.3)
    r = await c.call_tool("sleepy", {"seconds": 0})
    assert r.text == "slept 0.0"

    # -- progress and logging ----------------------------------------------------------------
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    peer.notifications.clear()
    r = await c.call_tool("slow_count", {"n": 3}, on_progress=on_progress)
    assert r.text == "counted 3"
    assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    if mode == MODERN:  # log_level="info": the SDK honours the level we put in _meta
        assert peer.logs() == [("info", "counting to 3")]
    else:  # legacy: the SDK logs everything; auto: log_level="debug"
        assert peer.logs() == [("info", "counting to 3"), ("debug", "done")]

    # -- elicitation (legacy: elicitation/create; modern: InputRequiredResult + retry) --------
    peer.elicit_actions[:] = ["accept", "decline"]
    r = await c.call_tool("greet", {})
    assert not r.is_error
    assert r.text == "Hello, Ada"
    asked = peer.elicitations[-1]
    assert asked["message"] == "What is your name?"
    assert asked["requestedSchema"]["properties"]["name"]["type"] == "string"
    assert asked["requestedSchema"]["required"] == ["name"]
    r = await c.call_tool("greet", {})  # declined: the SDK's resolver turns it into a tool error
    assert r.is_error is True
    assert len(peer.elicitations) == 2

    # -- sampling and roots ------------------------------------------------------------------
    r = await c.call_tool("summarize", {})
    assert r.text == "sampled: SAMPLED"
    assert peer.samplings[-1]["maxTokens"] == 10
    assert peer.samplings[-1]["messages"] == [
        {"role": "user", "content": {"type": "text", "text": "hi"}}
    ]
    r = await c.call_tool("show_roots", {})
    assert r.text == "file:///tmp/a,file:///tmp/b"

    # -- resources ---------------------------------------------------------------------------
    resources = await c.list_resources(cache=False)
    assert [(x.uri, x.name, x.mime_type) for x in resources] == [
        ("config://app", "app-config", "application/json")
    ]
    templates = await c.list_resource_templates(cache=False)
    assert [(t.uri_template, t.name, t.mime_type) for t in templates] == [
        ("users://{user_id}/profile", "user-profile", "text/plain")
    ]
    contents = await c.read_resource("config://app", cache=False)
    assert [(x.uri, x.mime_type, x.text, x.blob) for x in contents] == [
        ("config://app", "application/json", '{"debug": false}', None)
    ]
    contents = await c.read_resource("users://ada/profile", cache=False)
    assert [(x.uri, x.text) for x in contents] == [("users://ada/profile", "profile of ada")]
    with pytest.raises(JSONRPCError) as err:
        await c.read_resource("nope://x", cache=False)
    # -32602 with data.uri, as 2026-07-28 asks. (SDK deviation in the legacy era: the
    # 2025-11-25 spec gives -32002 for resource-not-found.)
    assert err.value.code == -32602
    assert err.value.data == {"uri": "nope://x"}

    # -- prompts -----------------------------------------------------------------------------
    prompts = await c.list_prompts(cache=False)
    assert [(p.name, p.title) for p in prompts] == [("review", "Code review")]
    assert [(a.name, a.required) for a in prompts[0].arguments] == [
        ("code", True),
        ("language", False),
    ]
    got = await c.get_prompt("review", {"code": "x = 1", "language": "rust"})
    assert got.messages == [
        {
            "role": "user",
            "content": {"type": "text", "text": "Please review this rust code:\nx = 1"},
        }
    ]

    # -- completion --------------------------------------------------------------------------
    done = await c.complete({"type": "ref/prompt", "name": "review"}, "language", "r")
    assert (done.values, done.total, done.has_more) == (["rust"], 1, False)
    done = await c.complete(
        {"type": "ref/resource", "uri": "users://{user_id}/profile"}, "user_id", "", {"x": "y"}
    )
    assert done.values == ["alice", "bob"]

    # -- subscriptions -----------------------------------------------------------------------
    if modern:
        async with c.listen(tools=True, uris=["config://app"]) as sub:
            assert sub.honored == {
                "toolsListChanged": True,
                "resourceSubscriptions": ["config://app"],
            }
            await c.call_tool("touch", {})
            seen: list[tuple[str, dict[str, Any]]] = []
            async for note in sub:
                params = note.params or {}
                assert params["_meta"]["io.modelcontextprotocol/subscriptionId"] == sub.id
                seen.append((note.method, params))
                if note.method == "notifications/resources/updated":
                    break
            assert [m for m, _ in seen] == [
                "notifications/tools/list_changed",
                "notifications/resources/updated",
            ]
            assert seen[-1][1]["uri"] == "config://app"
    else:
        with pytest.raises(MCPWireError):
            async with c.listen(tools=True):
                pass
    r = await c.call_tool("echo", {"message": "after"})
    assert r.text == "after"


OUR_MODES = [
    # (mode, era, protocol version, log level we ask for)
    pytest.param("auto", "modern", MODERN, "debug", id="auto"),
    pytest.param("legacy", "legacy", LEGACY, None, id="legacy"),
    pytest.param(MODERN, "modern", MODERN, "info", id="pinned-2026"),
]


@pytest.mark.parametrize(("mode", "era", "version", "log_level"), OUR_MODES)
async def test_mcpwire_client_drives_sdk_server(
    anyio_backend: str, mode: str, era: str, version: str, log_level: str | None
) -> None:
    peer = OurPeer()
    with anyio.fail_after(TEST_TIMEOUT):
        async with Client.stdio(
            sys.executable,
            ref_server_argv(),
            mode=mode,
            log_level=log_level,
            request_timeout=15,
            **peer.options(),
        ) as c:
            assert (c.era, c.protocol_version) == (era, version)
            await ours_exercise_ref_server(c, peer, mode)


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_mcpwire_client_without_capabilities_sdk_server(
    anyio_backend: str, mode: str
) -> None:
    """The SDK refuses asks our client cannot answer with -32021 naming the capability.

    SDK deviation: it does so on legacy connections as well, although -32021 exists only
    from 2026-07-28 on.
    """
    with anyio.fail_after(TEST_TIMEOUT):
        async with Client.stdio(
            sys.executable, ref_server_argv(), mode=mode, request_timeout=15
        ) as c:
            for tool, capability in [
                ("greet", {"elicitation": {"form": {}}}),
                ("summarize", {"sampling": {}}),
                ("show_roots", {"roots": {}}),
            ]:
                with pytest.raises(JSONRPCError) as err:
                    await c.call_tool(tool, {})
                assert err.value.code == -32021, tool
                assert err.value.data == {"requiredCapabilities": capability}, tool


async def test_mcpwire_listen_releases_its_stream(anyio_backend: str) -> None:
    """Leaving ``async with client.listen()`` must release the Subscription's stream.

    Regression: the first ``_Listen`` never closed the receive end of the stream it gave the
    ``Subscription``; anyio then reported ``ResourceWarning: Unclosed
    <MemoryObjectReceiveStream ...>`` at garbage collection, failing a later, unrelated test.
    """
    with anyio.fail_after(TEST_TIMEOUT):
        async with Client.stdio(
            sys.executable, ref_server_argv(), mode=MODERN, request_timeout=15
        ) as c:
            async with c.listen(uris=["config://app"]) as sub:
                await c.call_tool("touch", {})
                async for note in sub:
                    if note.method == "notifications/resources/updated":
                        break
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", ResourceWarning)
                del sub, note
                gc.collect()
            leaks = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
            assert leaks == [], leaks
            r = await c.call_tool("echo", {"message": "after"})
            assert r.text == "after"


# =================================================================================================
# 3. Wire validation of everything mcpwire writes
# =================================================================================================


@pytest.mark.parametrize(("mode", "version", "log_level"), SDK_MODES[:2])
async def test_wire_mcpwire_server_frames_validate(
    anyio_backend: str, tmp_path: Path, mode: str, version: str, log_level: str | None
) -> None:
    """Every line our server writes passes the SDK's strict per-version wire validation."""
    capture = tmp_path / "wire.log"
    peer = SdkPeer()
    with anyio.fail_after(TEST_TIMEOUT):
        async with SdkClient(
            sdk_params(*EVERYTHING, capture=capture),
            mode=mode,  # type: ignore[arg-type]
            log_level=log_level,  # type: ignore[arg-type]
            read_timeout_seconds=15,
            cache=None,
            **peer.callbacks(),
        ) as c:
            assert c.protocol_version == version
            await sdk_exercise_everything(c, peer, mode)
            # A request the client gives up on: the server must stop it and not answer.
            with pytest.raises(MCPError) as err:
                await c.call_tool(
                    "long_task", {"steps": 40, "delay": 0.05}, read_timeout_seconds=0.4
                )
            assert err.value.code == -32001
            await anyio.sleep(0.3)
            r = await c.call_tool("echo", {"message": "after the cancel"})
            assert r.content[0].text == "after the cancel"  # type: ignore[union-attr]
    frames = read_capture(capture)
    methods = [f.msg.get("method") for f in frames if isinstance(f.msg, dict)]
    if version == MODERN:
        assert "subscriptions/listen" in methods
        assert "notifications/subscriptions/acknowledged" in methods
        assert "initialize" not in methods
    else:
        assert "initialize" in methods and "elicitation/create" in methods
        assert "sampling/createMessage" in methods and "roots/list" in methods
    assert "notifications/progress" in methods and "notifications/message" in methods
    server_frames = [f for f in frames if f.direction == "S>C"]
    assert len(server_frames) > 40
    problems = check_capture(frames, sides=("S>C",))
    assert problems == [], report(problems)
    # The timed-out call: the client cancelled it; no response may follow.
    cancelled = [
        f.msg["params"]["requestId"]
        for f in frames
        if f.direction == "C>S"
        and isinstance(f.msg, dict)
        and f.msg.get("method") == "notifications/cancelled"
        and isinstance(f.msg["params"]["requestId"], int)
    ]
    assert cancelled, "the SDK client sent no notifications/cancelled for the timed-out call"
    answered = [
        f
        for f in server_frames
        if isinstance(f.msg, dict) and "method" not in f.msg and f.msg.get("id") in cancelled
    ]
    assert answered == [], "server answered a request the client had cancelled"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_wire_mcpwire_client_frames_validate(
    anyio_backend: str, tmp_path: Path, mode: str
) -> None:
    """Every line our client writes passes the SDK's per-version validation of client frames,
    and every multi-round-trip retry echoes requestState exactly with a fresh id."""
    capture = tmp_path / "wire.log"
    peer = OurPeer()
    with anyio.fail_after(TEST_TIMEOUT):
        async with Client.stdio(
            sys.executable,
            ref_server_argv(capture),
            mode=mode,
            log_level="debug" if mode == "auto" else None,
            request_timeout=15,
            **peer.options(),
        ) as c:
            await ours_exercise_ref_server(c, peer, mode)
    frames = read_capture(capture)
    client_frames = [f for f in frames if f.direction == "C>S"]
    assert len(client_frames) > 20
    problems = check_capture(frames, sides=("C>S",))
    assert problems == [], report(problems)
    methods = [f.msg.get("method") for f in client_frames if isinstance(f.msg, dict)]
    if mode == "auto":
        assert methods[0] == "server/discover"
        assert "initialize" not in methods and "notifications/initialized" not in methods
        rounds = [
            f
            for f in frames
            if f.direction == "S>C"
            and isinstance(f.msg, dict)
            and (f.msg.get("result") or {}).get("resultType") == "input_required"
        ]
        assert len(rounds) >= 4  # greet x2, summarize, show_roots
        problems = check_input_rounds(frames)
        assert problems == [], report(problems)
        # Leaving listen() ends the stream with notifications/cancelled for its id.
        listen_ids = [
            f.msg["id"]
            for f in client_frames
            if isinstance(f.msg, dict) and f.msg.get("method") == "subscriptions/listen"
        ]
        cancels = [
            f.msg["params"]["requestId"]
            for f in client_frames
            if isinstance(f.msg, dict) and f.msg.get("method") == "notifications/cancelled"
        ]
        assert len(listen_ids) == 1 and listen_ids[0] in cancels
    else:
        cancels = [
            f.msg["params"]["requestId"]
            for f in client_frames
            if isinstance(f.msg, dict) and f.msg.get("method") == "notifications/cancelled"
        ]
        assert methods[:2] == ["initialize", "notifications/initialized"]
        assert "server/discover" not in methods
        # Our answers to the SDK's server->client requests are responses in the client frames.
        responses = [f for f in client_frames if isinstance(f.msg, dict) and "result" in f.msg]
        assert len(responses) >= 4  # elicitation x2, sampling, roots
    # The timed-out call was cancelled by id.
    sleepy_ids = [
        f.msg["id"]
        for f in client_frames
        if isinstance(f.msg, dict)
        and f.msg.get("method") == "tools/call"
        and f.msg["params"]["name"] == "sleepy"
        and f.msg["params"]["arguments"] == {"seconds": 10}
    ]
    assert len(sleepy_ids) == 1 and sleepy_ids[0] in cancels
    # The SDK server's own frames, for the record (its deviations are asserted elsewhere).
    assert check_capture(frames, sides=("S>C",)) == []


def test_wirecheck_is_not_vacuous(tmp_path: Path) -> None:
    """The validator rejects what it must, so the wire tests above can be trusted."""
    env = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    sub = {"io.modelcontextprotocol/subscriptionId": 9}
    lines = [
        ("C>S", {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": env}}),
        # 2026 tools/list result without ttlMs/cacheScope: invalid
        ("S>C", {"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete", "tools": []}}),
        ("C>S", {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),  # no envelope, legacy
        # a response to nothing
        ("S>C", {"jsonrpc": "2.0", "id": 77, "result": {}}),
        # -32022 without its required data
        ("C>S", {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"_meta": env}}),
        ("S>C", {"jsonrpc": "2.0", "id": 3, "error": {"code": -32022, "message": "nope"}}),
        # a server->client request in 2026
        ("S>C", {"jsonrpc": "2.0", "id": 5, "method": "roots/list"}),
        # listen, cancel, another request, then a stream notification: too late
        (
            "C>S",
            {
                "jsonrpc": "2.0",
                "id": 9,
                "method": "subscriptions/listen",
                "params": {"_meta": env, "notifications": {"toolsListChanged": True}},
            },
        ),
        (
            "C>S",
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}},
        ),
        ("C>S", {"jsonrpc": "2.0", "id": 10, "method": "tools/list", "params": {"_meta": env}}),
        (
            "S>C",
            {
                "jsonrpc": "2.0",
                "method": "notifications/tools/list_changed",
                "params": {"_meta": sub},
            },
        ),
        ("S>C", "not json"),
    ]
    capture = tmp_path / "bad.log"
    capture.write_text(
        "".join(f"{d} {m if isinstance(m, str) else json.dumps(m)}\n" for d, m in lines)
    )
    problems = check_capture(read_capture(capture), sides=("S>C",))
    flagged = sorted({int(p.split()[1]) for p in problems})
    assert flagged == [2, 4, 6, 7, 11, 12], report(problems)
    client_problems = check_capture(read_capture(capture), sides=("C>S",))
    # line 3: no envelope on a connection that never initialized (so not legacy either);
    # line 5: the enveloped tools/call has no name
    assert [int(p.split()[1]) for p in client_problems] == [3, 5], report(client_problems)
    # MRTR: a retry that alters requestState, and one that never comes
    state = "v1.state"
    rounds = [
        (
            "C>S",
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {"_meta": env, "name": "t", "arguments": {}},
            },
        ),
        (
            "S>C",
            {
                "jsonrpc": "2.0",
                "id": 1,
                "result": {
                    "resultType": "input_required",
                    "requestState": state,
                    "inputRequests": {"k": {"method": "roots/list"}},
                },
            },
        ),
        (
            "C>S",
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {
                    "_meta": env,
                    "name": "t",
                    "arguments": {},
                    "requestState": state + "x",
                    "inputResponses": {"j": {"roots": []}},
                },
            },
        ),
        (
            "C>S",
            {
                "jsonrpc": "2.0",
                "id": 3,
                "method": "tools/call",
                "params": {"_meta": env, "name": "u", "arguments": {}},
            },
        ),
        (
            "S>C",
            {
                "jsonrpc": "2.0",
                "id": 3,
                "result": {"resultType": "input_required", "requestState": state},
            },
        ),
    ]
    capture.write_text("".join(f"{d} {json.dumps(m)}\n" for d, m in rounds))
    problems = check_input_rounds(read_capture(capture))
    assert len(problems) == 3, report(problems)
    assert "requestState" in problems[0] and "inputResponses" in problems[1]
    assert "never retried" in problems[2]
