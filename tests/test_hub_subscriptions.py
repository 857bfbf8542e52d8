"""Resource subscriptions of the clients of ``HubServer``, held by the hub at the
servers behind it (``_hub_subs``), in both eras on both sides.

Every peer is real: downstream, a server process of ours with two resources, a
resource template and a ``touch`` tool that reports a resource updated; upstream,
our ``Client`` (legacy ``resources/subscribe``, 2026-07-28 ``subscriptions/listen``)
and the reference SDK's client through ``mcpwire hub --serve stdio``.
"""

from __future__ import annotations

import contextlib
import json
import sys
import textwrap
import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from http_raw import running
from mcp import Client as SdkClient
from mcp import StdioServerParameters
from test_hub_support import LEGACY, MODERN, PY, WAIT, entry, era_pairs, ready, write_config

from mcpwire import (
    AskRelay,
    Client,
    Hub,
    HubServer,
    JSONRPCError,
    ResourcesChanged,
    ServerConfig,
)

pytestmark = pytest.mark.anyio


SUBBER = textwrap.dedent(
    """
    import sys
    from mcpwire import Server

    # "lingering": slow to end a listen its client cancelled (here it never
    # does), it goes on sending that listen's updates.
    class Kept(dict):
        def pop(self, key, default=None):
            return self.get(key, default)

    class Lingering(Server):
        async def _on_request(self, conn, request, rctx):
            if not isinstance(conn.listeners, Kept):
                conn.listeners = Kept(conn.listeners)
            return await super()._on_request(conn, request, rctx)

    server = (Lingering if sys.argv[1:] == ["lingering"] else Server)("subber", "1.0.0")

    if sys.argv[1:] == ["late"]:
        @server.resource("late://x")
        def late_x() -> str:
            return "late"

    @server.resource("note://x")
    def note_x() -> str:
        return "x"

    @server.resource("note://y")
    def note_y() -> str:
        return "y"

    @server.resource("doc://{name}")
    def doc(name: str) -> str:
        return name

    @server.tool()
    async def grow() -> str:
        \"\"\"Start listing late://x: a resources list change.\"\"\"
        server.add_resource(lambda: "late", "late://x", name="late_x")
        await server.notify_resources_changed()
        return "ok"

    @server.tool()
    async def touch(uri: str) -> str:
        \"\"\"Report a resource updated (to the clients subscribed to it).\"\"\"
        await server.notify_resource_updated(uri)
        return "ok"

    server.run()
    """
)


REF_NOTES = textwrap.dedent(
    """
    import warnings
    warnings.simplefilter("ignore")
    from mcp.server.mcpserver import MCPServer

    mcp = MCPServer("ref-notes", version="0.1.0")

    @mcp.resource("ref://note")
    def note() -> str:
        return "note"

    mcp.run("stdio")
    """
)


#: A server that reports a resource updated whether or not it was asked to.
BLURTER = textwrap.dedent(
    """
    from mcpwire import Context, Server

    server = Server("blurter", "1.0.0")

    @server.resource("mark://e")
    def mark() -> str:
        return "e"

    @server.tool()
    async def blurt(uri: str, ctx: Context) -> str:
        \"\"\"Report uri updated unasked (no subscription here), then mark://e.\"\"\"
        await ctx._rctx.session.notify("notifications/resources/updated", {"uri": uri})
        await server.notify_resource_updated("mark://e")
        return "ok"

    server.run()
    """
)


@asynccontextmanager
async def hub_of(tmp: Path, downstream: str, *args: str) -> AsyncIterator[tuple[Hub, HubServer]]:
    script = tmp / "subber.py"
    script.write_text(SUBBER)
    servers = [ServerConfig(name="d", command=PY, args=[str(script), *args])]
    async with Hub(servers=servers, relay=AskRelay(), client_options={"mode": downstream}) as hub:
        await ready(hub)
        yield hub, HubServer(hub)


class Updates:
    """The ``notifications/resources/updated`` a client got, by URI, in order."""

    def __init__(self) -> None:
        self.uris: list[str] = []

    async def __call__(self, method: str, params: dict[str, Any]) -> None:
        if method == "notifications/resources/updated":
            self.uris.append(params["uri"])


async def until(check: Callable[[], bool]) -> None:
    with anyio.fail_after(WAIT):
        while not check():
            await anyio.sleep(0.02)


async def touch(client: Client, *uris: str) -> None:
    for uri in uris:
        with anyio.fail_after(WAIT):
            assert (await client.call_tool("d__touch", {"uri": uri})).text == "ok"


def held(hub: Hub) -> dict[str, str | None]:
    assert hub.relay is not None
    return dict(hub.relay.subscriptions._held)


@era_pairs
async def test_a_subscribed_resources_updates_reach_the_client(
    tmp_path: Path, upstream: str, downstream: str
) -> None:
    got = Updates()
    async with (
        hub_of(tmp_path, downstream) as (hub, server),
        Client(server, mode=upstream, on_notification=got) as client,
    ):
        assert client.server_capabilities["resources"]["subscribe"] is True
        if upstream == LEGACY:
            await client.subscribe_resource("note://x")
            await client.subscribe_resource("doc://a")  # a template's
            assert held(hub) == {"note://x": "d", "doc://a": "d"}
            await touch(client, "note://y", "note://x", "doc://a", "doc://b")
            await until(lambda: got.uris == ["note://x", "doc://a"])
            await client.unsubscribe_resource("note://x")
            assert held(hub) == {"doc://a": "d"}
            await touch(client, "note://x", "doc://a")
            await until(lambda: got.uris == ["note://x", "doc://a", "doc://a"])
        else:
            async with client.listen(uris=["note://x", "doc://a"]) as subscription:
                await until(lambda: held(hub) == {"note://x": "d", "doc://a": "d"})
                await touch(client, "note://y", "note://x", "doc://a", "doc://b")
                with anyio.fail_after(WAIT):
                    events = [await subscription.__anext__() for _ in range(2)]
                assert [e.params["uri"] for e in events] == ["note://x", "doc://a"]  # type: ignore[index]
            await until(lambda: held(hub) == {})
            await touch(client, "note://x")
            assert got.uris == ["note://x", "doc://a"]
    assert held(hub) == {}


@pytest.mark.parametrize("upstream", [LEGACY, MODERN])
async def test_an_update_counts_only_from_the_server_the_uri_is_held_at(
    tmp_path: Path, upstream: str
) -> None:
    """note://x is held at "d"; "e" reports it updated unasked (as a server whose
    listen the hub is ending may). That update is dropped: the clients upstream
    hear of note://x only from "d". mark://e, held at "e" and reported right
    after on the same connection, shows the relay has seen the stray one."""
    subber, blurter = tmp_path / "subber.py", tmp_path / "blurter.py"
    subber.write_text(SUBBER)
    blurter.write_text(BLURTER)
    servers = [
        ServerConfig(name="d", command=PY, args=[str(subber)]),
        ServerConfig(name="e", command=PY, args=[str(blurter)]),
    ]
    got = Updates()
    options = {"mode": LEGACY}
    async with Hub(servers=servers, relay=AskRelay(), client_options=options) as hub:
        await ready(hub)
        server = HubServer(hub)
        async with (
            Client(server, mode=upstream, on_notification=got) as client,
            contextlib.AsyncExitStack() as stack,
        ):
            if upstream == LEGACY:
                for uri in ("note://x", "mark://e"):
                    await client.subscribe_resource(uri)
            else:
                await stack.enter_async_context(client.listen(uris=["note://x", "mark://e"]))
            await until(lambda: held(hub) == {"note://x": "d", "mark://e": "e"})
            with anyio.fail_after(WAIT):
                assert (await client.call_tool("e__blurt", {"uri": "note://x"})).text == "ok"
            await until(lambda: "mark://e" in got.uris)
            assert got.uris == ["mark://e"]
            await touch(client, "note://x")
            await until(lambda: len(got.uris) == 2)
            assert got.uris == ["mark://e", "note://x"]


@pytest.mark.parametrize("upstream", [LEGACY, MODERN])
async def test_each_update_comes_once_while_a_server_is_slow_to_end_a_listen(
    tmp_path: Path, upstream: str
) -> None:
    """A 2026-07-28 server may go on sending on a listen the hub cancelled for a
    while (this one for good). The hub names each URI it holds there in one open
    listen, so each update reaches the client once, and one of a URI no longer
    held not at all. ``note://y``, touched last, marks the end of each round."""
    got = Updates()
    ends: dict[str, anyio.Event] = {}
    async with (
        hub_of(tmp_path, MODERN, "lingering") as (hub, server),
        Client(server, mode=upstream, on_notification=got) as client,
        anyio.create_task_group() as tg,
    ):

        async def listening(
            uri: str, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
        ) -> None:
            async with client.listen(uris=[uri]):
                task_status.started()
                await ends.setdefault(uri, anyio.Event()).wait()

        async def subscribe(uri: str) -> None:
            if upstream == LEGACY:
                await client.subscribe_resource(uri)
            else:
                await tg.start(listening, uri)

        async def unsubscribe(uri: str) -> None:
            if upstream == LEGACY:
                await client.unsubscribe_resource(uri)
            else:
                ends[uri].set()

        async def round_of(*uris: str) -> list[str]:
            got.uris.clear()
            await touch(client, *uris, "note://y")
            await until(lambda: "note://y" in got.uris)
            return got.uris[: got.uris.index("note://y")]

        for uri in ("note://y", "note://x", "doc://a"):
            await subscribe(uri)
        await until(lambda: held(hub) == {"note://y": "d", "note://x": "d", "doc://a": "d"})
        assert await round_of("note://x", "doc://a") == ["note://x", "doc://a"]
        await unsubscribe("note://x")
        await until(lambda: held(hub) == {"note://y": "d", "doc://a": "d"})
        assert await round_of("note://x", "doc://a") == ["doc://a"]
        await unsubscribe("doc://a")
        await until(lambda: held(hub) == {"note://y": "d"})
        assert await round_of("note://x", "doc://a") == []
        tg.cancel_scope.cancel()


@pytest.mark.parametrize("downstream", [LEGACY, MODERN])
async def test_subscriptions_are_held_again_when_the_server_comes_back(
    tmp_path: Path, downstream: str
) -> None:
    """A restarted server has a new connection, with no subscriptions: the hub
    subscribes anew once it is ready, and reports every URI held there updated,
    since what changed while nothing listened went unheard."""
    got = Updates()
    async with (
        hub_of(tmp_path, downstream) as (hub, server),
        Client(server, mode=LEGACY, on_notification=got) as client,
    ):
        await client.subscribe_resource("note://x")
        await client.subscribe_resource("doc://a")
        await hub.restart("d")
        await until(lambda: len(got.uris) >= 2)
        assert sorted(got.uris) == ["doc://a", "note://x"]  # with no update sent
        # Held there again: the server's own updates come through.
        await touch(client, "note://y", "note://x")
        await until(lambda: len(got.uris) >= 3)
        assert got.uris[2:] == ["note://x"]


async def test_one_subscription_downstream_for_many_clients(tmp_path: Path) -> None:
    """The hub holds a URI while any client wants it; the last to leave ends it."""
    first, second = Updates(), Updates()
    async with (
        hub_of(tmp_path, LEGACY) as (hub, server),
        Client(server, mode=LEGACY, on_notification=first) as one,
    ):
        await one.subscribe_resource("note://x")
        async with Client(server, mode=MODERN, on_notification=second) as two:
            async with two.listen(uris=["note://x"]):
                await one.unsubscribe_resource("note://x")
                assert held(hub) == {"note://x": "d"}
                await touch(one, "note://x")
                await until(lambda: second.uris == ["note://x"])
            await until(lambda: held(hub) == {})
            await one.subscribe_resource("note://x")
        await touch(one, "note://x")
        await until(lambda: first.uris == ["note://x"])
        assert second.uris == ["note://x"]
    assert held(hub) == {}


@pytest.mark.parametrize("downstream", [LEGACY, MODERN])
async def test_a_uri_no_server_offers_is_placed_when_one_does(
    tmp_path: Path, downstream: str
) -> None:
    """Subscribed upstream at once, held at no server; once a server that lists it
    is ready (here one added to the config), held there, and its updates come."""
    script = tmp_path / "subber.py"
    script.write_text(SUBBER)
    config = tmp_path / "mcp.json"
    write_config(config, {"d": entry(str(script))})
    got = Updates()
    async with Hub([config], relay=AskRelay(), client_options={"mode": downstream}) as hub:
        await ready(hub)
        server = HubServer(hub)
        async with Client(server, mode=LEGACY, on_notification=got) as client:
            await client.subscribe_resource("late://x")
            assert held(hub) == {"late://x": None}
            write_config(config, {"d": entry(str(script)), "e": entry(str(script), "late")})
            await hub.reload()
            await until(lambda: held(hub) == {"late://x": "e"})
            with anyio.fail_after(WAIT):
                while not got.uris:  # subscribed at "e" just after it was ready
                    assert (await hub.call_tool("e__touch", {"uri": "late://x"})).text == "ok"
                    await anyio.sleep(0.05)
            assert set(got.uris) == {"late://x"}


@pytest.mark.parametrize("downstream", [LEGACY, MODERN])
async def test_a_uri_is_placed_when_a_running_server_starts_listing_it(
    tmp_path: Path, downstream: str
) -> None:
    """Held at no server until the running one lists it (a resources list
    change, no restart): then held there at once, and its updates come."""
    events: list[ResourcesChanged] = []
    got = Updates()
    async with hub_of(tmp_path, downstream) as (hub, server), hub.events() as stream:

        async def collect() -> None:
            async for event in stream:
                if isinstance(event, ResourcesChanged):
                    events.append(event)

        async with (
            anyio.create_task_group() as tg,
            Client(server, mode=LEGACY, on_notification=got) as client,
        ):
            tg.start_soon(collect)
            await client.subscribe_resource("late://x")
            assert held(hub) == {"late://x": None}
            with anyio.fail_after(WAIT):
                assert (await client.call_tool("d__grow")).text == "ok"
            await until(lambda: held(hub) == {"late://x": "d"})
            with anyio.fail_after(WAIT):
                while not got.uris:  # held, and subscribed a moment later
                    await touch(client, "late://x")
                    await anyio.sleep(0.05)
            assert set(got.uris) == {"late://x"}
            tg.cancel_scope.cancel()
    assert [(e.server, e.before, e.after) for e in events] == [("d", 3, 4)]


async def test_a_subscription_the_server_cannot_hold_is_refused_at_once(tmp_path: Path) -> None:
    """The reference SDK's server lists resources but offers no subscriptions: a
    legacy client subscribing to one of them through the hub gets -32602 naming
    that server, instead of a subscription that never hears anything."""
    script = tmp_path / "ref_notes.py"
    script.write_text(REF_NOTES)
    servers = [ServerConfig(name="r", command=PY, args=[str(script)])]
    async with Hub(servers=servers, relay=AskRelay(), client_options={"mode": LEGACY}) as hub:
        await ready(hub)
        async with Client(HubServer(hub), mode=LEGACY) as client:
            assert [r.uri for r in await client.list_resources()] == ["ref://note"]
            with anyio.fail_after(WAIT), pytest.raises(JSONRPCError) as info:
                await client.subscribe_resource("ref://note")
            assert info.value.code == -32602
            assert "'r', offers no resource subscriptions" in info.value.message
            assert held(hub) == {}
            await client.subscribe_resource("ref://nowhere")  # no server yet: held at none
            assert held(hub) == {"ref://nowhere": None}


async def test_a_listen_is_acknowledged_without_what_cannot_be_held(tmp_path: Path) -> None:
    """A 2026-07-28 listen naming a URI whose server offers no subscriptions: the
    acknowledgement honours the rest only (the protocol's way of refusing part of
    a listen), and only the rest is held."""
    ref = tmp_path / "ref_notes.py"
    ref.write_text(REF_NOTES)
    subber = tmp_path / "subber.py"
    subber.write_text(SUBBER)
    servers = [
        ServerConfig(name="r", command=PY, args=[str(ref)]),
        ServerConfig(name="d", command=PY, args=[str(subber)]),
    ]
    got = Updates()
    async with Hub(servers=servers, relay=AskRelay(), client_options={"mode": LEGACY}) as hub:
        await ready(hub)
        async with Client(HubServer(hub), mode=MODERN, on_notification=got) as client:
            wanted = ["ref://note", "note://x", "ref://nowhere"]
            async with client.listen(uris=wanted) as subscription:
                # Not offered by any server yet: kept, and held once one lists it.
                assert subscription.honored["resourceSubscriptions"] == wanted[1:]
                await until(lambda: held(hub) == {"note://x": "d", "ref://nowhere": None})
                await touch(client, "note://x")
                with anyio.fail_after(WAIT):
                    event = await subscription.__anext__()
                assert event.params["uri"] == "note://x"  # type: ignore[index]
            await until(lambda: held(hub) == {})


@pytest.mark.parametrize("upstream", [LEGACY, MODERN])
async def test_updates_reach_a_client_over_streamable_http(tmp_path: Path, upstream: str) -> None:
    """The hub served over HTTP: a legacy client's updates come on its session's
    GET stream, a 2026-07-28 client's on its listen's response stream."""
    got = Updates()
    async with (
        hub_of(tmp_path, MODERN) as (hub, server),
        running(server) as http,
    ):
        url = f"http://127.0.0.1:{http.port}/mcp"
        async with Client.http(url, mode=upstream, on_notification=got) as client:
            if upstream == LEGACY:
                await client.subscribe_resource("doc://a")
                await touch(client, "doc://a")
            else:
                async with client.listen(uris=["doc://a"]):
                    await until(lambda: held(hub) == {"doc://a": "d"})
                    await touch(client, "doc://a")
                    await until(lambda: got.uris == ["doc://a"])
            await until(lambda: got.uris == ["doc://a"])
        await until(lambda: held(hub) == {})


async def test_the_reference_sdk_client_subscribes_through_hub_serve(tmp_path: Path) -> None:
    """``mcpwire hub --serve stdio`` under the SDK's client (legacy, where it can
    subscribe): the update our server reports reaches it."""
    script = tmp_path / "subber.py"
    script.write_text(SUBBER)
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"d": {"command": PY, "args": [str(script)]}}}))
    updated: list[str] = []

    async def on_message(message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", None) == "notifications/resources/updated":
            updated.append(str(root.params.uri))

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcpwire", "hub", "--config", str(config), "--serve", "stdio"],
    )
    with warnings.catch_warnings(), anyio.fail_after(60):
        warnings.simplefilter("ignore")
        async with SdkClient(
            params, message_handler=on_message, read_timeout_seconds=30, cache=None, mode="legacy"
        ) as sdk:
            await sdk.subscribe_resource("note://x")
            await sdk.call_tool("d__touch", {"uri": "note://y"})
            await sdk.call_tool("d__touch", {"uri": "note://x"})
            while updated != ["note://x"]:
                await anyio.sleep(0.02)
