"""Downstream servers' ``roots/list``, relayed by the hub to the client upstream of
``HubServer`` (``AskRelay``), in a call and outside one, and the roots'
``list_changed`` notifications passed down.

Every peer is real: downstream, a server process of ours that lists the roots
in a tool and, on each ``notifications/roots/list_changed``, asks for them
outside any call (as a filesystem server does), and the reference SDK's
``MCPServer`` listing them in a tool; upstream, our ``Client`` in both eras
and the reference SDK's client through ``mcpwire hub --serve stdio``.
"""

from __future__ import annotations

import json
import sys
import textwrap
import warnings
from collections.abc import AsyncIterator
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
from test_tasks_interop import PEERS, node  # noqa: F401  (``node`` is a fixture)

from mcpwire import AskRelay, Client, Hub, HubServer, ServerConfig

pytestmark = pytest.mark.anyio


ROOTER = textwrap.dedent(
    """
    import sys
    import anyio
    from mcpwire import Context, Server

    server = Server("rooter", "1.0.0")
    SEEN = sys.argv[1]

    def uris(roots):
        return ",".join(r["uri"] for r in roots) or "(none)"

    @server.tool()
    async def roots_now(ctx: Context) -> str:
        \"\"\"The client's roots, asked during this call.\"\"\"
        return uris(await ctx.list_roots())

    async def main():
        async with anyio.create_task_group() as tg:

            async def ask(conn):
                try:
                    result = await conn.session.request("roots/list")
                    line = uris(result.get("roots", []))
                except Exception as exc:
                    line = f"error:{getattr(exc, 'code', type(exc).__name__)}"
                with open(SEEN, "a") as f:
                    f.write(line + "\\n")

            async def changed(conn):
                tg.start_soon(ask, conn)  # the reader must stay free to read the answer

            server.on_roots_changed = changed
            await server.serve_stdio()
            tg.cancel_scope.cancel()

    anyio.run(main)
    """
)

SDK_ROOTER = textwrap.dedent(
    """
    import warnings
    warnings.simplefilter("ignore")
    from mcp.server.mcpserver import Context, MCPServer

    mcp = MCPServer("sdk-rooter", version="0.1.0")

    @mcp.tool()
    async def roots(ctx: Context) -> str:
        \"\"\"The client's roots.\"\"\"
        result = await ctx.session.list_roots()
        return ",".join(str(r.uri) for r in result.roots)

    mcp.run()
    """
)


def scripts(tmp: Path) -> tuple[str, str, Path]:
    """The two servers' scripts, and where ours writes what its asks outside calls got."""
    rooter, sdk_rooter = tmp / "rooter.py", tmp / "sdk_rooter.py"
    rooter.write_text(ROOTER)
    sdk_rooter.write_text(SDK_ROOTER)
    return str(rooter), str(sdk_rooter), tmp / "seen.txt"


@asynccontextmanager
async def relayed(
    tmp: Path, downstream: str, **client_options: Any
) -> AsyncIterator[tuple[Hub, HubServer]]:
    rooter, sdk_rooter, seen = scripts(tmp)
    servers = [
        ServerConfig(name="d", command=PY, args=[rooter, str(seen)]),
        ServerConfig(name="sdk", command=PY, args=[sdk_rooter]),
    ]
    options = {"mode": downstream, **client_options}
    async with Hub(servers=servers, relay=AskRelay(), client_options=options) as hub:
        await ready(hub)
        yield hub, HubServer(hub)


async def seen_becomes(tmp: Path, *expected: str) -> None:
    """Wait until the downstream server's asks outside calls have got ``expected``
    (read from its file: a call to it would be a call in flight, which a legacy
    server's ask would be taken to be part of)."""
    seen = tmp / "seen.txt"
    with anyio.fail_after(WAIT):
        while (seen.read_text().split() if seen.exists() else []) != list(expected):
            await anyio.sleep(0.02)


@era_pairs
async def test_roots_asked_in_a_call_are_the_calling_clients(
    tmp_path: Path, upstream: str, downstream: str
) -> None:
    listed = [{"uri": "file:///work/up", "name": "up"}]
    async with (
        relayed(tmp_path, downstream, roots=[{"uri": "file:///hub"}]) as (hub, server),
        Client(server, mode=upstream, roots=listed) as client,
    ):
        with anyio.fail_after(WAIT):
            result = await client.call_tool("d__roots_now")
        assert not result.is_error, result.text
        assert result.text == "file:///work/up"
        if downstream == LEGACY:
            # The reference SDK's server, asking with a request of its own.
            with anyio.fail_after(WAIT):
                sdk = await client.call_tool("sdk__roots")
            assert sdk.text == "file:///work/up", sdk.text
        assert hub.relay is not None and not hub.relay._calls


async def test_roots_asked_outside_calls_follow_the_upstream_client(tmp_path: Path) -> None:
    """The servers behind the hub are told when the client with roots comes, when it
    says its roots changed, and when it goes; each time they ask, and get its roots,
    then the hub's own once it has gone."""
    current = [{"uri": "file:///a"}]

    async def roots() -> list[dict[str, Any]]:
        return list(current)

    async with relayed(tmp_path, LEGACY, roots=[{"uri": "file:///hub"}]) as (_, server):
        async with Client(server, mode=LEGACY, roots=roots) as client:
            await seen_becomes(tmp_path, "file:///a")
            current[:] = [{"uri": "file:///b"}, {"uri": "file:///c"}]
            await client.send_roots_changed()
            await seen_becomes(tmp_path, "file:///a", "file:///b,file:///c")
        await seen_becomes(tmp_path, "file:///a", "file:///b,file:///c", "file:///hub")


async def test_with_two_clients_with_roots_the_hubs_own_answer(tmp_path: Path) -> None:
    """Outside a call no one of two upstream clients is the servers' client."""
    async with (
        relayed(tmp_path, LEGACY) as (_, server),
        Client(server, mode=LEGACY, roots=[{"uri": "file:///one"}]) as one,
    ):
        await seen_becomes(tmp_path, "file:///one")
        async with Client(server, mode=LEGACY, roots=[{"uri": "file:///two"}]) as two:
            # No fallback in client_options: the ask fails as from a client
            # without roots.
            await seen_becomes(tmp_path, "file:///one", "error:-32601")
            with anyio.fail_after(WAIT):
                # In a call, the calling client's own roots, whoever else is there.
                assert (await two.call_tool("d__roots_now")).text == "file:///two"
                assert (await one.call_tool("d__roots_now")).text == "file:///one"
        # Once the second has gone, the first is the servers' client again.
        await seen_becomes(tmp_path, "file:///one", "error:-32601", "file:///one")


async def test_roots_outside_calls_reach_a_client_over_streamable_http(tmp_path: Path) -> None:
    """The hub served over HTTP: an ask outside a call goes to the legacy client on
    its session's standalone stream, and the session's end is a change of roots."""
    async with (
        relayed(tmp_path, LEGACY, roots=[{"uri": "file:///hub"}]) as (_, server),
        running(server) as http,
    ):
        url = f"http://127.0.0.1:{http.port}/mcp"
        async with Client.http(url, mode=LEGACY, roots=[{"uri": "file:///web"}]) as client:
            await seen_becomes(tmp_path, "file:///web")
            with anyio.fail_after(WAIT):
                assert (await client.call_tool("d__roots_now")).text == "file:///web"
        await seen_becomes(tmp_path, "file:///web", "file:///hub")


@pytest.mark.parametrize("upstream", [LEGACY, MODERN])
async def test_roots_nobody_has_fail_as_method_not_found(tmp_path: Path, upstream: str) -> None:
    """The hub answers the server's roots/list with -32601; the server's tool fails
    with it (an ``isError`` result, not the call's JSON-RPC error), passed on as is."""
    async with (
        relayed(tmp_path, LEGACY) as (_, server),
        Client(server, mode=upstream) as client,
    ):
        with anyio.fail_after(WAIT):
            result = await client.call_tool("d__roots_now")
        assert result.is_error
        assert result.text == (
            "Error executing tool: the client answered roots/list with error "
            "-32601: Method not found: roots/list"
        )


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_the_reference_sdk_clients_roots_reach_the_servers(
    tmp_path: Path,
    mode: str,
    node: str,  # noqa: F811
) -> None:
    """``mcpwire hub --serve stdio`` under the Python SDK's client, as a desktop app
    runs it, in front of our server (spoken to in the 2026-07-28 era) and the
    TypeScript SDK's legacy server, which asks for the roots as a filesystem
    server does: once initialized and on every change, outside any call. The
    client's roots answer every ask in a call; outside calls, a legacy client's
    (a 2026-07-28 client cannot be asked there, and the hub has none of its own)."""
    rooter, _, seen = scripts(tmp_path)
    ts_seen = tmp_path / "ts_seen.txt"
    config = tmp_path / "mcp.json"
    servers = {
        "d": {"command": PY, "args": [rooter, str(seen)]},
        "ts": {"command": node, "args": [str(PEERS / "ts_roots_server.mjs"), str(ts_seen)]},
    }
    config.write_text(json.dumps({"mcpServers": servers}))

    async def list_roots(context: Any) -> Any:
        return sdk_types.ListRootsResult(
            roots=[sdk_types.Root(uri="file:///sdk/project", name="project")]
        )

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "mcpwire", "hub", "--config", str(config), "--serve", "stdio"],
    )

    def text(result: Any) -> str:
        return " ".join(getattr(c, "text", "") for c in result.content)

    expected = "file:///sdk/project" if mode == "legacy" else "error:-32601"
    with warnings.catch_warnings(), anyio.fail_after(60):
        warnings.simplefilter("ignore")
        async with SdkClient(
            params,
            list_roots_callback=list_roots,
            read_timeout_seconds=30,
            cache=None,
            mode=mode,  # type: ignore[arg-type]
        ) as sdk:
            assert text(await sdk.call_tool("d__roots_now", {})) == "file:///sdk/project"
            assert text(await sdk.call_tool("ts__roots", {})) == "file:///sdk/project"
            # Its asks outside calls: first when the hub started it, before the
            # client came (-32601), then, legacy, once the client had initialized.
            while not ts_seen.exists() or ts_seen.read_text().split()[-1] != expected:
                await anyio.sleep(0.05)
