"""``mcpwire hub`` run as a user would: ``python -m mcpwire hub ...``.

Contract (design.md): ``--json`` prints one JSON document on stdout; exit 0 when
every enabled server is ready, 1 when some failed, 2 on a usage or config error,
3 when none could connect. ``--emit`` snippets parse as JSON in each client's
dialect and load back through our own loader (seed 002). ``--watch`` redraws
on every change and stops on SIGTERM.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from test_hub_support import CONFIGS, entry, write_config, write_scripts

from mcpwire import parse_config

RUN_TIMEOUT = 40.0


def hub(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(
        [sys.executable, "-m", "mcpwire", "hub", *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
    )


def as_json(proc: subprocess.CompletedProcess[str]) -> Any:
    try:
        return json.loads(proc.stdout)
    except ValueError:
        message = f"not JSON (exit {proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
        raise AssertionError(message) from None


def test_json_status_of_a_sample_config() -> None:
    proc = hub("--config", str(CONFIGS / "local_servers.json"), "--json")
    assert proc.returncode == 1, proc.stderr  # weather-api is not installed
    report = as_json(proc)
    states = {s["name"]: s["state"] for s in report["servers"]}
    assert states == {
        "everything": "ready",
        "notes": "ready",
        "weather-api": "failed",
        "archive": "disabled",
    }
    weather = next(s for s in report["servers"] if s["name"] == "weather-api")
    assert "not found on PATH" in weather["lastError"]
    assert weather["errorHistory"][0]["level"] == "error"
    assert report["summary"] == {"total": 4, "ready": 2, "failed": 1, "disabled": 1}
    names = {t["name"] for t in report["tools"]}
    assert {"everything__echo", "everything__long_task", "notes__echo"} <= names
    assert {"notes__get_weather"} <= names and "notes__add" not in names
    everything = next(s for s in report["servers"] if s["name"] == "everything")
    assert everything["serverInfo"]["name"] == "mcpwire-everything"
    assert everything["config"]["alwaysAllow"] == ["echo", "add"]


def test_human_table() -> None:
    proc = hub("--config", str(CONFIGS / "local_servers.json"))
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["SERVER", "STATE", "TRANSPORT", "TOOLS", "LAST", "ERROR"]
    rows = {line.split()[0]: line.split() for line in lines[1:]}
    assert rows["everything"][1:4] == ["ready", "stdio", "11"]
    assert rows["notes"][1:4] == ["ready", "stdio", "2"]
    assert rows["weather-api"][1] == "failed" and "cannot start" in proc.stdout
    assert rows["archive"][1] == "disabled" and "disabled in config" in proc.stdout


def test_server_text_in_the_table_cannot_drive_the_terminal() -> None:
    """The LAST ERROR column can carry what a server said (an error message from
    it): its control characters print as escapes, so it cannot erase the table,
    move the cursor or retitle the window."""
    from types import SimpleNamespace

    from mcpwire._hub_events import ServerState
    from mcpwire._hub_render import status_table

    said = "tools/list: [-32603] boom \x1b]0;pwned\x07 \x1b[2K\r\u202egone"
    status = SimpleNamespace(
        name="evil\x1b[8m",
        state=ServerState.FAILED,
        transport="stdio",
        tools=0,
        last_error=said,
        reason="",
        restarts=1,
    )
    table = status_table([status])  # type: ignore[list-item]
    assert not {"\x1b", "\x07", "\r", "\u202e"} & set(table)
    assert "evil\\x1b[8m" in table
    # (Whitespace, CR among it, is folded to one space to keep the row on one line.)
    assert "boom \\x1b]0;pwned\\x07 \\x1b[2K \\u202egone" in table


def test_exit_codes_all_ready_and_none_connected(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    write_config(good, {"a": entry(script), "off": entry(script, disabled=True)})
    write_config(bad, {"x": {"command": "no-such-mcp-server-xyz"}})
    assert hub("--config", str(good)).returncode == 0
    none = hub("--config", str(bad), "--json")
    assert none.returncode == 3 and as_json(none)["servers"][0]["state"] == "failed"


def test_config_errors_exit_2_with_file_and_path(tmp_path: Path) -> None:
    bad = tmp_path / "mcp.json"
    bad.write_text(json.dumps({"mcpServers": {"github": {"command": "x", "timeout": 0}}}))
    proc = hub("--config", str(bad))
    assert proc.returncode == 2
    assert f"{bad}: $.mcpServers.github.timeout: must be between 1 and 3600" in proc.stderr
    proc = hub("--config", str(bad), "--json")
    assert proc.returncode == 2
    (issue,) = as_json(proc)["error"]["issues"]
    assert issue["path"] == "$.mcpServers.github.timeout"


def test_config_warnings_go_to_stderr(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    write_config(config, {"a": entry(script, alwaysAlow=["echo"])})
    proc = hub("--config", str(config), "--json")
    assert proc.returncode == 0
    message = f"{config}: $.mcpServers.a.alwaysAlow: unknown key 'alwaysAlow' is ignored"
    assert f"mcpwire hub: warning: {message}" in proc.stderr
    assert as_json(proc)["warnings"] == [message]


@pytest.mark.parametrize(
    "args",
    [
        ["--emit", "claude"],
        ["--emit", "claude", "--name", "x"],
        ["--emit", "claude", "--name", "x", "--url", "http://h", "--", "cmd"],
        ["--name", "x"],
        ["--emit", "nope", "--name", "x", "--url", "http://h"],
        ["--emit", "vscode", "--name", "x", "--url", "http://h", "--header", "novalue"],
        ["--timeout", "0", "--config", "x.json"],
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    proc = hub(*args)
    assert proc.returncode == 2, proc.stdout
    assert proc.stderr


def test_without_config_project_files_are_found(tmp_path: Path) -> None:
    proc = hub(cwd=tmp_path)
    assert proc.returncode == 2 and ".vscode/mcp.json" in proc.stderr
    script, _ = write_scripts(tmp_path)
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode" / "mcp.json").write_text(
        json.dumps({"servers": {"local": {"type": "stdio", **entry(script)}}})
    )
    proc = hub("--json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert as_json(proc)["configFiles"] == [str(tmp_path / ".vscode" / "mcp.json")]


@pytest.mark.parametrize("client", ["claude", "cursor", "vscode", "roo", "gemini"])
def test_emit_stdio_snippets_load_back(client: str) -> None:
    proc = hub(
        "--emit", client, "--name", "everything", "--env", "LOG=debug",
        "--", "python", "-m", "mcpwire.examples.everything",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    snippet = as_json(proc)
    key = "servers" if client == "vscode" else "mcpServers"
    assert list(snippet) == [key]
    raw = snippet[key]["everything"]
    assert raw["command"] == "python" and raw["args"] == ["-m", "mcpwire.examples.everything"]
    if client in ("vscode", "roo"):
        assert raw["type"] == "stdio"
    if client == "roo":
        assert raw["alwaysAllow"] == [] and raw["disabled"] is False
    server = parse_config(snippet, environ={}).servers["everything"]
    assert (server.transport, server.command, server.env) == ("stdio", "python", {"LOG": "debug"})


@pytest.mark.parametrize(
    ("client", "expected"),
    [
        ("claude", {"type": "http", "url": "https://mcp.example.com/mcp"}),
        ("cursor", {"url": "https://mcp.example.com/mcp"}),
        ("vscode", {"type": "http", "url": "https://mcp.example.com/mcp"}),
        ("roo", {"type": "streamable-http", "url": "https://mcp.example.com/mcp"}),
        ("gemini", {"httpUrl": "https://mcp.example.com/mcp"}),
    ],
)
def test_emit_url_snippets_load_back(client: str, expected: dict[str, str]) -> None:
    proc = hub(
        "--emit", client, "--name", "remote", "--url", "https://mcp.example.com/mcp",
        "--header", "Authorization: Bearer ${TOKEN}",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    snippet = as_json(proc)
    raw = next(iter(snippet.values()))["remote"]
    assert {k: raw[k] for k in expected} == expected
    assert raw["headers"] == {"Authorization": "Bearer ${TOKEN}"}
    server = parse_config(snippet, environ={"TOKEN": "t"}).servers["remote"]
    assert server.transport == "http" and server.url == "https://mcp.example.com/mcp"
    assert server.headers == {"Authorization": "Bearer t"}


def test_watch_redraws_on_changes_and_stops_on_sigterm(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    config = tmp_path / "mcp.json"
    write_config(config, {"a": entry(script)})
    argv = [sys.executable, "-m", "mcpwire", "hub", "--config", str(config), "--watch", "--json"]
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
    ) as proc:
        lines: queue.Queue[str] = queue.Queue()
        out = proc.stdout
        assert out is not None
        threading.Thread(target=lambda: [lines.put(x) for x in out], daemon=True).start()
        try:
            first = json.loads(lines.get(timeout=20))
            assert first["servers"][0]["state"] == "ready"
            write_config(config, {"a": entry(script), "b": entry(script)})
            seen: list[dict[str, Any]] = []
            while not any(
                e.get("event") == "ServerStateChanged"
                and e.get("server") == "b"
                and e["new"] == "ready"
                for e in seen
            ):
                seen.append(json.loads(lines.get(timeout=20)))
            assert any(e["event"] == "ConfigReloaded" and e["added"] == ["b"] for e in seen)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=20) == 0
        finally:
            if proc.poll() is None:
                proc.kill()


def test_json_with_a_provider_shows_fitted_schemas() -> None:
    """``--provider gemini`` (pain point #24): each tool's input schema as Gemini
    takes it, and the warnings of what was dropped; without --json it is a
    usage error."""
    proc = hub("--config", str(CONFIGS / "local_servers.json"), "--json", "--provider", "gemini")
    tools = {t["name"]: t for t in as_json(proc)["tools"]}
    echo = tools["everything__echo"]
    assert echo["inputSchema"] == {
        "type": "object",
        "properties": {"message": {"type": "string", "description": "The text to send back"}},
        "required": ["message"],
    }
    assert echo["schemaWarnings"] == ["$: additionalProperties is not supported; dropped"]
    assert all("inputSchema" in t for t in tools.values())
    plain = hub("--config", str(CONFIGS / "local_servers.json"), "--json")
    assert all("inputSchema" not in t for t in as_json(plain)["tools"])
    refused = hub("--config", str(CONFIGS / "local_servers.json"), "--provider", "gemini")
    assert refused.returncode == 2 and "--provider goes with --json" in refused.stderr
    from mcpwire._hub_schema import PROVIDERS

    for provider in PROVIDERS:  # the CLI takes every provider fit_schema takes
        taken = hub(
            "--config", str(CONFIGS / "local_servers.json"), "--json", "--provider", provider
        )
        assert all("inputSchema" in t for t in as_json(taken)["tools"])
