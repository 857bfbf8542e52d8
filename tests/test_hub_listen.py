"""The hub's list-change listen at a 2026-07-28 server over streamable HTTP, when
it ends while the connection lives: the server behind the stateless endpoint
restarted, or a proxy cut the stream (2026-07-28 streams do not resume).

The servers are ours, served in-process on a fixed port so that one can take
the other's place, as a restarted process would.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.abc
import pytest
from http_raw import free_port
from test_hub_support import FAST, LEGACY, MODERN, WAIT, ready

from mcpwire import (
    AskRelay,
    Client,
    HTTPServer,
    HTTPServerOptions,
    Hub,
    HubServer,
    Server,
    ServerConfig,
    ServerState,
)

pytestmark = pytest.mark.anyio


def app(*tools: str) -> Server:
    server = Server("listened", "1.0.0")
    for name in tools:
        server.add_tool(lambda: "ok", name=name)
    return server


class Serving:
    """A server on ``port`` in a task of ``tg``, until ``stop()``."""

    def __init__(self, server: Server, port: int) -> None:
        self.server, self.port = server, port
        self.scope = anyio.CancelScope()
        self.stopped = anyio.Event()

    async def start(self, tg: anyio.abc.TaskGroup) -> None:
        await tg.start(self._run)

    async def _run(self, *, task_status: anyio.abc.TaskStatus[int]) -> None:
        http = HTTPServer(self.server, HTTPServerOptions(shutdown_timeout=0.1))
        try:
            with self.scope:
                await http.serve("127.0.0.1", self.port, task_status=task_status)
        finally:
            self.stopped.set()

    async def stop(self) -> None:
        self.scope.cancel()
        with anyio.fail_after(WAIT):
            await self.stopped.wait()


@asynccontextmanager
async def hub_at(port: int, **options: Any) -> AsyncIterator[Hub]:
    """A ready hub whose one server, "w", is the 2026-07-28 endpoint on ``port``."""
    config = ServerConfig(name="w", url=f"http://127.0.0.1:{port}/mcp")
    modern = {"mode": MODERN}
    async with Hub(servers=[config], client_options=modern, restart_policy=FAST, **options) as hub:
        await ready(hub)
        yield hub


def names(hub: Hub) -> set[str]:
    return {t.name for t in hub.tools()}


async def until(check: object) -> None:
    with anyio.fail_after(WAIT):
        while not check():  # type: ignore[operator]
            await anyio.sleep(0.02)


async def test_a_server_that_restarted_behind_the_url_is_listed_again_and_listened_to() -> None:
    """Its listen ends: the hub lists again (no call needed to notice) and listens
    again, so the new server's own list changes are heard too."""
    port = free_port()
    first = Serving(app("one"), port)
    second = Serving(app("one", "two"), port)
    async with anyio.create_task_group() as tg:
        await first.start(tg)
        async with hub_at(port) as hub:
            assert names(hub) == {"w__one"}
            await first.stop()  # the hub is told nothing
            await second.start(tg)
            await until(lambda: names(hub) == {"w__one", "w__two"})
            # Listening again, at the new server:
            await until(lambda: any(c.listeners for c in second.server.connections))
            second.server.add_tool(lambda: "ok", name="three")
            await second.server.notify_tools_changed()
            await until(lambda: names(hub) == {"w__one", "w__two", "w__three"})
            history = hub.status("w").error_history
            assert any("list-change listen ended" in e.message for e in history)
        tg.cancel_scope.cancel()


async def test_a_server_gone_for_good_is_found_lost_without_a_call() -> None:
    """Its listen ends and cannot be opened again: the hub lists again, cannot
    reach it, and takes it for lost (reconnecting with backoff), instead of
    showing it ready until some call fails (pain point #16)."""
    port = free_port()
    only = Serving(app("one"), port)
    async with anyio.create_task_group() as tg:
        await only.start(tg)
        async with hub_at(port) as hub:
            await only.stop()
            await until(lambda: hub.status("w").state is not ServerState.READY)
            assert hub.status("w").state in (ServerState.RESTARTING, ServerState.FAILED)
        tg.cancel_scope.cancel()


def noted() -> Server:
    server = Server("noted", "1.0.0")
    server.add_resource(lambda: "x", "note://x", name="note_x")
    server.add_resource(lambda: "y", "note://y", name="note_y")
    return server


def listened(server: Server) -> list[list[str]]:
    """The URIs each open listen at ``server`` for resources names, sorted."""
    return sorted(
        sorted(lst.uris) for c in server.connections for lst in c.listeners.values() if lst.uris
    )


async def test_a_subscription_listen_that_ended_is_opened_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hub's ``subscriptions/listen`` streams holding a client's subscriptions
    (one per subscribe: they name disjoint URIs) end with their server: once the
    new server is there, one listen names them all, and the client is told each
    resource was updated, once (what changed in between went unheard)."""
    resumes = _recorded_resumes(monkeypatch)
    port = free_port()
    first, second = Serving(noted(), port), Serving(noted(), port)
    got: list[str] = []

    async def note(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/resources/updated":
            got.append(params["uri"])

    async with anyio.create_task_group() as tg:
        await first.start(tg)
        async with _subscribed_to_x_and_y(port, first.server, note):
            await first.stop()
            await second.start(tg)
            await until(lambda: len(got) >= 2)  # the gap, reported
            assert sorted(got) == ["note://x", "note://y"]
            await until(lambda: listened(second.server) == [["note://x", "note://y"]])
            await second.server.notify_resource_updated("note://x")
            await until(lambda: len(got) >= 3)
            assert got[2:] == ["note://x"]
            assert [server for server, _ in resumes] == ["w"]  # once for both that ended
        tg.cancel_scope.cancel()


async def test_listens_that_end_quickly_are_opened_again_ever_more_slowly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server that ends every listen at once is not asked again at a fixed rate:
    the pause doubles until a listen holds ``LISTEN_PAUSE_MAX``; the end is recorded
    once for the series, and the lists are asked for again after each reopening."""
    from mcpwire import _hub_connect

    monkeypatch.setattr(_hub_connect, "LISTEN_PAUSE", 0.01)
    monkeypatch.setattr(_hub_connect, "LISTEN_PAUSE_MAX", 10.0)
    pauses: list[float] = []
    real = anyio.sleep

    async def sleep(seconds: float) -> None:
        pauses.append(seconds)
        await real(seconds)

    class Anyio:
        """``anyio`` as the module sees it, with the pauses counted."""

        def __getattr__(self, name: str) -> Any:
            return sleep if name == "sleep" else getattr(anyio, name)

    monkeypatch.setattr(_hub_connect, "anyio", Anyio())

    class Owner:
        def __init__(self) -> None:
            self.records: list[str] = []
            self.refreshes = 0

        def record(self, message: str, *, level: str = "error") -> None:
            self.records.append(message)

        def want_refresh(self) -> None:
            self.refreshes += 1

    server, owner = app("one"), Owner()
    server.add_tool(lambda: "ok", name="two")
    async with Client(server, mode=MODERN) as client, anyio.create_task_group() as tg:
        assert client.server_capabilities["tools"]["listChanged"] is True
        await tg.start(_hub_connect.listen_for_changes, client, owner)
        with anyio.fail_after(WAIT):
            while len(pauses) < 4:
                await until(lambda: any(c.listeners for c in server.connections))
                server.close_subscriptions()
                await real(0)
        tg.cancel_scope.cancel()
    assert pauses[:4] == [0.01, 0.02, 0.04, 0.08]
    assert len(owner.records) == 1 and "list-change listen ended" in owner.records[0]
    assert owner.refreshes >= 3


async def test_subscription_listens_that_end_quickly_are_opened_again_ever_more_slowly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The same for the listen that holds clients' subscriptions: each quick end
    doubles the pause before it is opened again."""
    from mcpwire import _hub_connect

    monkeypatch.setattr(_hub_connect, "LISTEN_PAUSE", 0.01)
    monkeypatch.setattr(_hub_connect, "LISTEN_PAUSE_MAX", 10.0)
    resumes = _recorded_resumes(monkeypatch)
    port = free_port()
    only = Serving(noted(), port)

    def listening() -> bool:
        return any(lst.uris for c in only.server.connections for lst in c.listeners.values())

    async with anyio.create_task_group() as tg:
        await only.start(tg)
        async with (
            hub_at(port, relay=AskRelay()) as hub,
            Client(HubServer(hub), mode=LEGACY) as client,
        ):
            await client.subscribe_resource("note://x")
            with anyio.fail_after(WAIT):
                while len(resumes) < 3:
                    await until(listening)
                    only.server.close_subscriptions()
                    await anyio.sleep(0)
        tg.cancel_scope.cancel()
    assert [pause for _, pause in resumes[:3]] == [0.01, 0.02, 0.04]


async def test_subscription_listens_name_disjoint_uris_and_merge_past_a_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each subscribe opens a listen for its URI alone, each unsubscribe ends the
    listen left naming nothing held; past ``MAX_LISTENS`` open at a server, one
    listen naming all held there takes their place. Updates come once throughout."""
    from mcpwire import _hub_subs

    monkeypatch.setattr(_hub_subs, "MAX_LISTENS", 2)
    port = free_port()
    server = noted()
    server.add_resource(lambda: "z", "note://z", name="note_z")
    only = Serving(server, port)
    got: list[str] = []

    async def note(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/resources/updated":
            got.append(params["uri"])

    async def updated(uri: str) -> None:
        before = len(got)
        await server.notify_resource_updated(uri)
        await until(lambda: len(got) > before)

    async with anyio.create_task_group() as tg:
        await only.start(tg)
        async with _subscribed_to_x_and_y(port, server, note) as client:
            await client.unsubscribe_resource("note://x")
            await until(lambda: listened(server) == [["note://y"]])
            await client.subscribe_resource("note://x")
            await client.subscribe_resource("note://z")  # a third listen: merged
            await until(lambda: listened(server) == [["note://x", "note://y", "note://z"]])
            for uri in ("note://x", "note://y", "note://z"):
                await updated(uri)
            assert got == ["note://x", "note://y", "note://z"]
        tg.cancel_scope.cancel()


def _recorded_resumes(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, float]]:
    """Record each time the hub opens a server's subscription listens again
    (``Subscriptions._resume``): the server and the pause before it."""
    from mcpwire import _hub_subs

    resumes: list[tuple[str, float]] = []
    resume = _hub_subs.Subscriptions._resume

    async def recorded(self: _hub_subs.Subscriptions, server: str, pause: float) -> None:
        resumes.append((server, pause))
        await resume(self, server, pause)

    monkeypatch.setattr(_hub_subs.Subscriptions, "_resume", recorded)
    return resumes


@asynccontextmanager
async def _subscribed_to_x_and_y(
    port: int, server: Server, note: Callable[[str, dict[str, Any]], Awaitable[None]]
) -> AsyncIterator[Client]:
    """A legacy client of a hub in front of the server on ``port``, subscribed
    to ``note://x`` and then ``note://y``: two listens there, one for each."""
    async with (
        hub_at(port, relay=AskRelay()) as hub,
        Client(HubServer(hub), mode=LEGACY, on_notification=note) as client,
    ):
        await client.subscribe_resource("note://x")
        await client.subscribe_resource("note://y")
        await until(lambda: listened(server) == [["note://x"], ["note://y"]])
        yield client
