"""Lazy servers and the tool cache (pain point #17, ``_hub_cache``).

Every server is a real process (the hub test server of ``test_hub_support``):
the first run lists a lazy server and writes the cache; the next run exposes
the cached tools with no process at all, and the first call starts it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from test_hub_support import PY, WAIT, ready, wait_event, write_scripts

from mcpwire import (
    Hub,
    HubEvent,
    ServerConfig,
    ServerState,
    ServerStateChanged,
    _hub_cache,
    parse_config,
)
from mcpwire._hub_cache import ToolCache
from mcpwire._hub_status import Discovery
from mcpwire._types import Prompt, Resource, Tool

pytestmark = pytest.mark.anyio


def lazy(script: str, *args: str, **options: Any) -> ServerConfig:
    return ServerConfig(name="lz", command=PY, args=[script, *args], lazy=True, **options)


async def test_a_lazy_server_starts_on_first_use_from_the_cache(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    cache = tmp_path / "tools.json"

    # First run: nothing cached, so it starts like any server, and is cached.
    async with Hub(servers=[lazy(script)], tool_cache=cache) as hub:
        await ready(hub)
        assert hub.status("lz").state is ServerState.READY
        names = sorted(t.name for t in hub.tools())
    document = json.loads(cache.read_text())
    assert document["format"] == 1
    entry = document["servers"]["lz"]
    assert sorted(f"lz__{t['name']}" for t in entry["tools"]) == names
    assert str(tmp_path) not in json.dumps(entry["key"])  # a hash, not the config

    # Second run: idle, no process, the cached tools exposed; a call starts it.
    async with Hub(servers=[lazy(script)], tool_cache=cache) as hub:
        events = hub.events()
        await hub.wait_ready(timeout=WAIT)
        await anyio.sleep(0.5)  # time enough to start, were it not lazy
        status = hub.status("lz")
        assert status.state is ServerState.IDLE and status.pid is None
        assert status.tools == len(names)
        assert sorted(t.name for t in hub.tools()) == names
        with anyio.fail_after(WAIT):
            assert (await hub.call_tool("lz__echo", {"message": "hi"})).text == "hi"
        status = hub.status("lz")
        assert status.state is ServerState.READY and status.pid is not None
        seen: list[HubEvent] = []
        await wait_event(events, lambda e: getattr(e, "new", None) is ServerState.READY, seen=seen)
        changes = [e.new for e in seen if isinstance(e, ServerStateChanged)]
        assert changes[-2:] == [ServerState.STARTING, ServerState.READY]

    # A changed connection (other args) is not served from the old listing.
    async with Hub(servers=[lazy(script, "--tag", "v2")], tool_cache=cache) as hub:
        await ready(hub)
        assert hub.status("lz").state is ServerState.READY
        assert (await hub.call_tool("lz__tag")).text == "v2"


async def test_idle_servers_restart_and_non_lazy_ones_are_not_cached(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    cache = tmp_path / "tools.json"
    eager = ServerConfig(name="eager", command=PY, args=[script])
    async with Hub(servers=[lazy(script), eager], tool_cache=cache) as hub:
        await ready(hub)
    assert list(json.loads(cache.read_text())["servers"]) == ["lz"]
    async with Hub(servers=[lazy(script), eager], tool_cache=cache) as hub:
        await ready(hub)
        assert hub.status("lz").state is ServerState.IDLE
        assert hub.status("eager").state is ServerState.READY
        with anyio.fail_after(WAIT):
            assert await hub.restart("lz") is ServerState.READY


@pytest.mark.parametrize("content", [b"{not json", b'{"format": 99, "servers": {}}', b"[]"])
async def test_an_unreadable_cache_starts_the_servers_and_is_rewritten(
    tmp_path: Path, content: bytes
) -> None:
    script, _ = write_scripts(tmp_path)
    cache = tmp_path / "tools.json"
    cache.write_bytes(content)
    async with Hub(servers=[lazy(script)], tool_cache=cache) as hub:
        await ready(hub)
        assert hub.status("lz").state is ServerState.READY
    assert "lz" in json.loads(cache.read_text())["servers"]


async def test_without_a_cache_lazy_servers_start_at_once(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    async with Hub(servers=[lazy(script)]) as hub:
        await ready(hub)
        assert hub.status("lz").state is ServerState.READY


async def test_the_cache_round_trips_a_listing_and_checks_its_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = ServerConfig(name="s", command="srv", env={"TOKEN": "secret-value"})
    found = Discovery(
        tools=[Tool.from_json({"name": "t", "inputSchema": {"type": "object"}, "title": "T"})],
        resources=[Resource.from_json({"uri": "file:///a", "name": "a"})],
        prompts=[Prompt.from_json({"name": "p", "arguments": [{"name": "x"}]})],
        instructions="use t",
        server_info={"name": "srv", "version": "1"},
        protocol_version="2025-11-25",
    )
    path = tmp_path / "cache.json"
    cache = ToolCache(path)
    cache.put(config, found)
    assert not path.exists()  # written by flush, in a worker thread
    writers: list[threading.Thread] = []
    real = _hub_cache.replace_file

    def recording(*args: Any) -> None:
        writers.append(threading.current_thread())
        real(*args)

    monkeypatch.setattr(_hub_cache, "replace_file", recording)
    await cache.flush()
    await cache.flush()  # nothing new: not written again
    assert len(writers) == 1 and writers[0] is not threading.main_thread()
    monkeypatch.undo()
    assert "secret-value" not in path.read_text()
    back = ToolCache(path).get(config)
    assert back == found
    other = ServerConfig(name="s", command="srv", env={"TOKEN": "another"})
    assert ToolCache(path).get(other) is None
    # A policy change (not the connection) keeps the entry.
    assert ToolCache(path).get(ServerConfig(name="s", command="srv", env={"TOKEN": "secret-value"},
                                            timeout=5, lazy=True)) == found  # fmt: skip
    # Unwritable: a warning, no exception; broken entries are misses.
    unwritable = ToolCache(tmp_path / "no-such-dir" / "c.json")
    unwritable.put(config, found)
    await unwritable.flush()
    path.write_text(json.dumps({"format": 1, "servers": {"s": {"key": 1}, "t": []}}))
    assert ToolCache(path).get(config) is None


def test_lazy_is_read_from_config_files_and_round_trips() -> None:
    loaded = parse_config({"mcpServers": {"s": {"command": "x", "lazy": True}}}, environ={})
    server = loaded.servers["s"]
    assert server.lazy is True
    assert parse_config({"mcpServers": {"s": server.to_json()}}, environ={}).servers["s"] == server


def test_hub_cli_tool_cache(tmp_path: Path) -> None:
    """``mcpwire hub --tool-cache FILE``: an idle lazy server counts as ready (exit 0)."""
    script, _ = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"lz": {"command": PY, "args": [script],
                                                        "lazy": True}}}))  # fmt: skip
    cache = tmp_path / "tools.json"

    def run() -> tuple[int, str]:
        proc = subprocess.run(
            [sys.executable, "-m", "mcpwire", "hub", "--config", str(config), "--json",
             "--tool-cache", str(cache)],
            capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        return proc.returncode, json.loads(proc.stdout)["servers"][0]["state"]

    assert run() == (0, "ready")
    assert run() == (0, "idle")
