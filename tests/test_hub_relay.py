"""Downstream servers' sampling and elicitation asks, relayed by the hub to the
client upstream of ``HubServer`` (``AskRelay``).

Every peer is real: downstream, a server process of ours whose tool asks for a
completion and then for the user's name, and the reference SDK's ``MCPServer``
eliciting; upstream, our ``Client`` in both eras and the reference SDK's client
through ``mcpwire hub --serve stdio``. The era matrix is the point: a legacy
server asks with a request, a 2026-07-28 one with an ``InputRequiredResult``,
and a 2026-07-28 client upstream answers with a retry of the call.
"""

from __future__ import annotations

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
from http_raw import running
from mcp import Client as SdkClient
from mcp import StdioServerParameters
from mcp import types as sdk_types
from test_hub_support import LEGACY, MODERN, PY, WAIT, era_pairs, ready

from mcpwire import AskRelay, Client, Context, Hub, HubServer, Server, ServerConfig

pytestmark = pytest.mark.anyio


ASKER = textwrap.dedent(
    """
    import sys
    from mcpwire import Context, Server

    server = Server("asker", "1.0.0")
    RUNS = sys.argv[1]

    @server.tool()
    async def ask(topic: str, ctx: Context) -> str:
        \"\"\"Ask the model about a topic, then the user for a name.\"\"\"
        with open(RUNS, "a") as f:
            f.write("run\\n")
        sampled = await ctx.sample(
            [{"role": "user", "content": {"type": "text", "text": topic}}], 20
        )
        answer = await ctx.elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        name = (answer.get("content") or {}).get("name")
        return f"{sampled['content']['text']}|{answer['action']}|{name}"

    @server.prompt()
    async def greet(ctx: Context) -> str:
        \"\"\"Greet the user by the name they give.\"\"\"
        answer = await ctx.elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        return f"Hello, {(answer.get('content') or {}).get('name')}!"

    @server.resource("note://{topic}")
    async def note(topic: str, ctx: Context) -> str:
        \"\"\"What the model says about a topic.\"\"\"
        sampled = await ctx.sample(
            [{"role": "user", "content": {"type": "text", "text": topic}}], 20
        )
        return sampled["content"]["text"]

    @server.tool()
    async def chatty(topic: str, ctx: Context) -> str:
        \"\"\"Log while working.\"\"\"
        await ctx.debug(f"details of {topic}")
        await ctx.info(f"working on {topic}", logger="asker")
        return "done"

    ASIDES = set()

    @server.tool()
    async def aside(topic: str) -> str:
        \"\"\"Log once this call has ended, outside any call.\"\"\"
        import asyncio

        async def later() -> None:
            await asyncio.sleep(0.1)
            await server.log("debug", f"noise on {topic}")
            await server.log("info", f"aside on {topic}")
            await server.log("warning", f"done with {topic}", logger="bg")

        task = asyncio.get_running_loop().create_task(later())
        ASIDES.add(task)
        task.add_done_callback(ASIDES.discard)
        return "later"

    server.run()
    """
)

SDK_ASKER = textwrap.dedent(
    """
    import warnings
    warnings.simplefilter("ignore")
    from pydantic import BaseModel
    from mcp.server.mcpserver import Context, MCPServer

    mcp = MCPServer("sdk-asker", version="0.1.0")

    class Name(BaseModel):
        name: str

    @mcp.tool()
    async def who(ctx: Context) -> str:
        \"\"\"Ask the user for a name.\"\"\"
        result = await ctx.elicit("Your name?", schema=Name)
        return f"{result.action}:{getattr(getattr(result, 'data', None), 'name', None)}"

    mcp.run()
    """
)


def scripts(tmp: Path) -> tuple[str, str, Path]:
    asker, sdk_asker, runs = tmp / "asker.py", tmp / "sdk_asker.py", tmp / "runs.txt"
    asker.write_text(ASKER)
    sdk_asker.write_text(SDK_ASKER)
    return str(asker), str(sdk_asker), runs


class Upstream:
    """The upstream client's callbacks: they record what they were asked."""

    def __init__(self, name: str = "Ann") -> None:
        self.name = name
        self.asked: list[tuple[str, Any]] = []

    async def sampling(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(("sampling", params))
        text = params["messages"][0]["content"]["text"]
        return {
            "role": "assistant",
            "content": {"type": "text", "text": f"model on {text}"},
            "model": "test-model",
        }

    async def elicitation(self, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append(("elicitation", params))
        return {"action": "accept", "content": {"name": self.name}}


@asynccontextmanager
async def relayed(
    tmp: Path, downstream: str, **hub_options: Any
) -> AsyncIterator[tuple[Hub, HubServer, Path]]:
    asker, sdk_asker, runs = scripts(tmp)
    servers = [
        ServerConfig(name="d", command=PY, args=[asker, str(runs)]),
        ServerConfig(name="sdk", command=PY, args=[sdk_asker]),
    ]
    options = {"mode": downstream, **hub_options.pop("client_options", {})}
    async with Hub(servers=servers, relay=AskRelay(), client_options=options, **hub_options) as hub:
        await ready(hub)
        server = HubServer(hub)
        yield hub, server, runs


@asynccontextmanager
async def asking(
    tmp: Path, downstream: str, upstream: str, user: Upstream
) -> AsyncIterator[tuple[Hub, Client, Path]]:
    """The relaying hub, and ``user``'s client of it in the ``upstream`` era."""
    async with (
        relayed(tmp, downstream) as (hub, server, runs),
        Client(
            server, mode=upstream, sampling=user.sampling, elicitation=user.elicitation
        ) as client,
    ):
        yield hub, client, runs


@era_pairs
async def test_asks_reach_the_client_that_made_the_call(
    tmp_path: Path, upstream: str, downstream: str
) -> None:
    user = Upstream()
    async with asking(tmp_path, downstream, upstream, user) as (hub, client, runs):
        with anyio.fail_after(WAIT):
            result = await client.call_tool("d__ask", {"topic": "tides"})
        assert not result.is_error, result.text
        assert result.text == "model on tides|accept|Ann"
        kinds = [kind for kind, _ in user.asked]
        assert set(kinds) == {"sampling", "elicitation"}
        sampled = next(p for k, p in user.asked if k == "sampling")
        assert sampled["maxTokens"] == 20
        assert sampled["messages"][0]["content"]["text"] == "tides"
        elicited = next(p for k, p in user.asked if k == "elicitation")
        assert elicited["message"] == "Your name?"
        assert elicited["requestedSchema"]["properties"] == {"name": {"type": "string"}}
        if upstream == LEGACY and downstream == LEGACY:
            # Each ask went up as a request while the call waited: one run.
            assert runs.read_text().count("run") == 1
        if downstream == LEGACY:
            # The reference SDK's server eliciting, through the same relay. (Its
            # MCPServer elicits only with a request: in the 2026-07-28 era it
            # refuses, having "no back-channel for server-initiated requests".)
            with anyio.fail_after(WAIT):
                who = await client.call_tool("sdk__who")
            assert who.text == "accept:Ann", who.text
        # Nothing of a forwarded call is left behind in the relay.
        assert hub.relay is not None and not hub.relay._calls


@era_pairs
async def test_asks_of_prompts_and_resource_reads_reach_the_client_too(
    tmp_path: Path, upstream: str, downstream: str
) -> None:
    """``prompts/get`` and ``resources/read`` may ask as ``tools/call`` may (in the
    2026-07-28 era all three can end in an ``InputRequiredResult``)."""
    user = Upstream()
    async with asking(tmp_path, downstream, upstream, user) as (hub, client, _runs):
        with anyio.fail_after(WAIT):
            prompt = await client.get_prompt("d__greet")
            contents = await client.read_resource("note://reefs")
        assert prompt.messages[0]["content"]["text"] == "Hello, Ann!"
        assert contents[0].text == "model on reefs"
        assert [kind for kind, _ in user.asked] == ["elicitation", "sampling"]
        assert hub.relay is not None and not hub.relay._calls


async def test_without_an_upstream_answer_the_hubs_own_callback_answers(tmp_path: Path) -> None:
    """The upstream client declared neither capability: the hub's callbacks answer."""
    hub_user = Upstream()
    options = {"sampling": hub_user.sampling, "elicitation": hub_user.elicitation}
    async with (
        relayed(tmp_path, LEGACY, client_options=options) as (_, server, _runs),
        Client(server, mode=MODERN) as client,
    ):
        with anyio.fail_after(WAIT):
            result = await client.call_tool("d__ask", {"topic": "rain"})
        assert result.text == "model on rain|accept|Ann"
        assert [k for k, _ in hub_user.asked] == ["sampling", "elicitation"]


@pytest.mark.parametrize("upstream", [LEGACY, MODERN])
async def test_an_ask_nobody_can_answer_fails_as_method_not_found(
    tmp_path: Path, upstream: str
) -> None:
    """As from a client without the callback: the hub answers the server's ask with
    -32601, which makes the server's tool fail (an ``isError`` result: the client's
    error for the server's own request is no protocol error of the call), and the
    hub passes that result on as it came."""
    async with (
        relayed(tmp_path, LEGACY) as (_, server, _runs),
        Client(server, mode=upstream) as client,
    ):
        with anyio.fail_after(WAIT):
            result = await client.call_tool("d__ask", {"topic": "fog"})
        assert result.is_error
        assert result.text == (
            "Error executing tool: the client answered sampling/createMessage with error "
            "-32601: Method not found: sampling/createMessage"
        )


async def test_a_legacy_servers_ask_with_two_calls_in_flight_is_not_guessed(
    tmp_path: Path,
) -> None:
    """A legacy server's ask names no call: with two in flight to that server it
    goes to neither upstream client, but to the hub's own callback."""
    hub_user, first, second = Upstream(), Upstream(), Upstream()
    gate = anyio.Event()

    async def held_sampling(params: dict[str, Any]) -> dict[str, Any]:
        await gate.wait()  # both calls are in flight before either is answered
        return await hub_user.sampling(params)

    options = {"sampling": held_sampling, "elicitation": hub_user.elicitation}
    results: list[str] = []
    async with relayed(tmp_path, LEGACY, client_options=options) as (_, server, _runs):

        async def call(user: Upstream, topic: str) -> None:
            async with Client(
                server, mode=LEGACY, sampling=user.sampling, elicitation=user.elicitation
            ) as client:
                results.append((await client.call_tool("d__ask", {"topic": topic})).text)

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, first, "one")
                tg.start_soon(call, second, "two")
                await anyio.sleep(0.5)
                gate.set()
    assert sorted(results) == ["model on one|accept|Ann", "model on two|accept|Ann"]
    # Both samplings came while both calls were in flight; an elicitation that
    # came once the other call had ended was that call's, and went up.
    assert [k for k, _ in hub_user.asked].count("sampling") == 2
    assert all(kind == "elicitation" for kind, _ in first.asked + second.asked)


@asynccontextmanager
async def paired_over_http() -> AsyncIterator[HubServer]:
    """A hub whose one server, legacy over streamable HTTP, has tools that wait until
    two calls are in flight, then ask or log: ``HubServer`` over it."""
    app = Server("paired", "1.0.0")
    started = [0]

    async def both_in_flight() -> None:
        started[0] += 1
        while started[0] < 2:
            await anyio.sleep(0.01)

    @app.tool()
    async def ask_pair(topic: str, ctx: Context) -> str:
        """Wait for a second call, then ask the user for a name."""
        await both_in_flight()
        answer = await ctx.elicit(
            "Your name?", {"type": "object", "properties": {"name": {"type": "string"}}}
        )
        return f"{topic}|{answer['action']}|{(answer.get('content') or {}).get('name')}"

    @app.tool()
    async def log_pair(topic: str, ctx: Context) -> str:
        """Wait for a second call, then log."""
        await both_in_flight()
        await ctx.info(f"on {topic}")
        return topic

    async with running(app) as http:
        web = ServerConfig(name="d", url=f"http://127.0.0.1:{http.port}/mcp")
        async with Hub(servers=[web], relay=AskRelay(), client_options={"mode": LEGACY}) as hub:
            await ready(hub)
            yield HubServer(hub)


@pytest.mark.parametrize("upstream", [LEGACY, MODERN])
async def test_over_http_a_legacy_servers_ask_reaches_the_call_it_came_with(
    upstream: str,
) -> None:
    """Over streamable HTTP a legacy server asks on the response stream of the call
    it serves (``ORIGIN``): with two calls in flight to it, each ask still reaches
    the client that made its call, in that client's era."""
    users = {"one": Upstream("Ann"), "two": Upstream("Bo")}
    results: dict[str, str] = {}
    async with paired_over_http() as server:

        async def call(topic: str) -> None:
            user = users[topic]
            async with Client(server, mode=upstream, elicitation=user.elicitation) as client:
                result = await client.call_tool("d__ask_pair", {"topic": topic})
                results[topic] = result.text

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "one")
                tg.start_soon(call, "two")
    assert results == {"one": "one|accept|Ann", "two": "two|accept|Bo"}
    assert [kind for kind, _ in users["one"].asked + users["two"].asked] == ["elicitation"] * 2


@pytest.mark.parametrize("upstream", [LEGACY, MODERN])
async def test_over_http_a_legacy_servers_log_reaches_the_call_it_came_with(
    upstream: str,
) -> None:
    """A log message on a call's response stream is about that call: with two in
    flight, each client hears its own call's log, not the other's."""
    logs: dict[str, list[str]] = {"one": [], "two": []}
    async with paired_over_http() as server:

        async def call(topic: str) -> None:
            async def note(method: str, params: dict[str, Any]) -> None:
                if method == "notifications/message":
                    logs[topic].append(params["data"])

            async with Client(
                server, mode=upstream, on_notification=note, log_level="info"
            ) as client:
                if upstream == LEGACY:
                    await client.set_logging_level("info")
                assert (await client.call_tool("d__log_pair", {"topic": topic})).text == topic

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "one")
                tg.start_soon(call, "two")
    assert logs == {"one": ["on one"], "two": ["on two"]}


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_reference_sdk_client_answers_through_hub_serve(
    tmp_path: Path, mode: str
) -> None:
    """``mcpwire hub --serve stdio`` relays: the SDK's client, in either era, is
    asked, and its answers reach the server behind the hub (which the hub
    speaks to in the 2026-07-28 era)."""
    asker, sdk_asker, runs = scripts(tmp_path)
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "d": {"command": PY, "args": [asker, str(runs)]},
                    "sdk": {"command": PY, "args": [sdk_asker]},
                }
            }
        )
    )
    asked: list[str] = []

    async def sampling(context: Any, params: Any) -> Any:
        asked.append("sampling")
        text = params.messages[0].content.text
        return sdk_types.CreateMessageResult(
            role="assistant",
            content=sdk_types.TextContent(type="text", text=f"sdk model on {text}"),
            model="sdk-model",
        )

    async def elicitation(context: Any, params: Any) -> Any:
        asked.append("elicitation")
        return sdk_types.ElicitResult(action="accept", content={"name": "Bo"})

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcpwire", "hub", "--config", str(config), "--serve", "stdio"],
    )
    texts: list[str] = []
    with warnings.catch_warnings(), anyio.fail_after(60):
        warnings.simplefilter("ignore")
        async with SdkClient(
            params,
            sampling_callback=sampling,
            elicitation_callback=elicitation,
            read_timeout_seconds=30,
            cache=None,
            mode=mode,  # type: ignore[arg-type]
        ) as sdk:
            for topic in ("waves", "sand"):
                result = await sdk.call_tool("d__ask", {"topic": topic})
                texts.append(" ".join(getattr(c, "text", "") for c in result.content))
    assert texts == ["sdk model on waves|accept|Bo", "sdk model on sand|accept|Bo"]
    assert asked == ["sampling", "elicitation"] * 2


@era_pairs
async def test_a_servers_logs_during_a_call_reach_its_client(
    tmp_path: Path, upstream: str, downstream: str
) -> None:
    """At the level the upstream client set; the hub's own ``on_notification`` in
    ``client_options`` still sees them too."""
    at_hub: list[str] = []

    async def hub_note(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/message":
            at_hub.append(str(params.get("data")))

    logs: list[tuple[str, str, str | None]] = []

    async def note(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/message":
            logs.append((params["level"], params["data"], params.get("logger")))

    options = {"on_notification": hub_note}
    async with (
        relayed(tmp_path, downstream, client_options=options) as (_, server, _runs),
        Client(server, mode=upstream, on_notification=note, log_level="info") as client,
    ):
        if upstream == LEGACY:
            await client.set_logging_level("info")
        with anyio.fail_after(WAIT):
            assert (await client.call_tool("d__chatty", {"topic": "tea"})).text == "done"
    assert logs == [("info", "working on tea", "asker")]
    assert at_hub == ["details of tea", "working on tea"]


async def test_a_servers_logs_outside_calls_reach_the_legacy_clients(tmp_path: Path) -> None:
    """A log with no call in flight names no request: it is the server's, and goes
    to every legacy client upstream at its level (``Server.log``), its ``logger``
    the server's name when it gives none; a 2026-07-28 client hears logs only
    within its own requests."""
    logs: dict[str, list[tuple[str, str, str | None]]] = {LEGACY: [], MODERN: []}

    def note_to(era: str) -> Callable[[str, dict[str, Any]], Awaitable[None]]:
        async def note(method: str, params: dict[str, Any]) -> None:
            if method == "notifications/message":
                logs[era].append((params["level"], params["data"], params.get("logger")))

        return note

    async with (
        relayed(tmp_path, LEGACY) as (_, server, _runs),
        Client(server, mode=LEGACY, on_notification=note_to(LEGACY)) as legacy,
        Client(server, mode=MODERN, on_notification=note_to(MODERN), log_level="debug") as modern,
    ):
        await legacy.set_logging_level("info")
        with anyio.fail_after(WAIT):
            assert (await modern.call_tool("d__aside", {"topic": "tea"})).text == "later"
            while len(logs[LEGACY]) < 2:
                await anyio.sleep(0.02)
            await modern.list_tools()  # a round trip: anything sent to it has arrived
    assert logs[LEGACY] == [("info", "aside on tea", "d"), ("warning", "done with tea", "bg")]
    assert logs[MODERN] == []


@pytest.mark.parametrize("upstream", [LEGACY, MODERN])
async def test_asks_are_relayed_through_search_mode_too(tmp_path: Path, upstream: str) -> None:
    """``call_tool`` of the tool-search mode forwards as a mirrored tool does."""
    user = Upstream()
    async with relayed(tmp_path, LEGACY) as (hub, _, _runs):
        server = HubServer(hub, search=True)
        async with Client(
            server, mode=upstream, sampling=user.sampling, elicitation=user.elicitation
        ) as client:
            with anyio.fail_after(WAIT):
                result = await client.call_tool(
                    "call_tool", {"name": "d__ask", "arguments": {"topic": "dunes"}}
                )
                unknown = await client.call_tool("call_tool", {"name": "d__nope"})
    assert result.text == "model on dunes|accept|Ann"
    assert [kind for kind, _ in user.asked] == ["sampling", "elicitation"]
    assert unknown.is_error and "d__nope" in unknown.text
