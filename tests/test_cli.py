"""The ``mcpwire`` command line, run as a new user would: ``python -m mcpwire ...``.

Targets are the bundled example server, servers written to ``tmp_path`` and
served with ``mcpwire serve``, a hand-written legacy-only peer, and a server
built on the reference SDK (``mcp==2.3.0``). Contract (design.md): ``--json``
prints one JSON document on stdout; exit status 0 success, 1 server error or
``isError``, 2 usage error, 3 could not connect or timed out.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

EVERYTHING = ["--", sys.executable, "-m", "mcpwire.examples.everything"]
ROOT = Path(__file__).resolve().parent.parent
RUN_TIMEOUT = 30.0


def mcpwire(*args: str, timeout: float = RUN_TIMEOUT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpwire", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def as_json(proc: subprocess.CompletedProcess[str]) -> Any:
    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(
            f"stdout is not JSON (exit {proc.returncode}):\n{proc.stdout}\n--- stderr ---\n"
            f"{proc.stderr}"
        ) from None


# -- inspect -------------------------------------------------------------------------------


def test_inspect_human_output() -> None:
    proc = mcpwire("inspect", *EVERYTHING)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "mcpwire-everything 1.0.0" in out
    assert "era: modern" in out and "2026-07-28" in out
    for name in ("echo(message: string)", "get_weather", "long_task", "ask_name"):
        assert name in out
    assert "demo://readme" in out and "demo://pixel.png" in out
    assert "demo://items/{item_id}" in out
    assert "greet(name, style?)" in out


def test_inspect_json() -> None:
    proc = mcpwire("inspect", "--json", *EVERYTHING)
    assert proc.returncode == 0, proc.stderr
    report = as_json(proc)
    assert report["serverInfo"]["name"] == "mcpwire-everything"
    assert report["era"] == "modern"
    assert report["protocolVersion"] == "2026-07-28"
    assert "tools" in report["capabilities"]
    assert "echo" in {t["name"] for t in report["tools"]}
    assert {r["uri"] for r in report["resources"]} == {"demo://readme", "demo://pixel.png"}
    assert [t["uriTemplate"] for t in report["resourceTemplates"]] == ["demo://items/{item_id}"]
    assert {p["name"] for p in report["prompts"]} == {"greet", "code_review"}


@pytest.mark.parametrize(
    ("mode", "version"), [("legacy", "2025-11-25"), ("2025-06-18", "2025-06-18")]
)
def test_inspect_mode(mode: str, version: str) -> None:
    proc = mcpwire("inspect", "--json", "--mode", mode, *EVERYTHING)
    assert proc.returncode == 0, proc.stderr
    report = as_json(proc)
    assert report["era"] == "legacy"
    assert report["protocolVersion"] == version
    assert "echo" in {t["name"] for t in report["tools"]}


def test_inspect_and_call_a_2025_11_25_task_server() -> None:
    """Task support shows in the listing; a task-required tool is called as a task."""
    target = ["--", sys.executable, str(ROOT / "conformance" / "peers" / "tasks_server.py")]
    proc = mcpwire("inspect", "--mode", "2025-11-25", *target)
    assert proc.returncode == 0, proc.stderr
    assert "slow_echo(message: string, delay_ms?: integer) [task optional]" in proc.stdout
    assert "explode() [task required]" in proc.stdout
    assert "plain(message: string)  " in proc.stdout
    proc = mcpwire("call", "--json", "--mode", "2025-11-25", "explode", *target)
    result = as_json(proc)
    assert result["content"] == [{"type": "text", "text": "boom"}] and result["isError"]
    assert "io.modelcontextprotocol/related-task" in result["_meta"]


# -- call ------------------------------------------------------------------------------------


def test_call_json_echo() -> None:
    proc = mcpwire("call", "--json", "echo", "--args", '{"message":"hi"}', *EVERYTHING)
    assert proc.returncode == 0, proc.stderr
    result = as_json(proc)
    assert result["content"] == [{"type": "text", "text": "hi"}]
    assert result["structuredContent"] == {"result": "hi"}
    assert result.get("isError") is not True


def test_call_human_echo_in_legacy_mode() -> None:
    proc = mcpwire(
        "call", "--mode", "legacy", "echo", "--args", '{"message":"hi there"}', *EVERYTHING
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hi there"


def test_call_tool_error_exits_1() -> None:
    proc = mcpwire("call", "fail", *EVERYTHING)
    assert proc.returncode == 1
    assert "this tool always fails" in proc.stderr
    proc = mcpwire("call", "--json", "fail", "--args", '{"message":"bad day"}', *EVERYTHING)
    assert proc.returncode == 1
    result = as_json(proc)
    assert result["isError"] is True
    assert result["content"][0]["text"] == "bad day"


def test_call_unknown_tool_exits_1_with_the_error() -> None:
    proc = mcpwire("call", "nosuch", *EVERYTHING)
    assert proc.returncode == 1
    assert "-32602" in proc.stderr and "nosuch" in proc.stderr
    proc = mcpwire("call", "--json", "nosuch", *EVERYTHING)
    assert proc.returncode == 1
    error = as_json(proc)["error"]
    assert error["code"] == -32602
    assert "nosuch" in error["message"]


@pytest.mark.parametrize(
    "bad",
    [
        "{not json",
        "[1, 2]",
        '"text"',
        # Python's json reads these; none is JSON the wire could carry as written.
        '{"message": NaN}',
        '{"message": 1e999}',
        '{"message": "x", "n": 18446744073709551616}',
        "[" * 100_000,
    ],
)
def test_call_bad_args_exits_2(bad: str) -> None:
    proc = mcpwire("call", "echo", "--args", bad, *EVERYTHING)
    assert proc.returncode == 2
    assert "--args" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_call_image_and_logs_in_human_output() -> None:
    proc = mcpwire("call", "image", *EVERYTHING)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("[image image/png")
    proc = mcpwire("call", "log_demo", *EVERYTHING)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "logged"
    assert "[warning] a warning message" in proc.stderr


def test_call_json_stdout_is_only_json() -> None:
    proc = mcpwire("call", "--json", "log_demo", *EVERYTHING)
    assert proc.returncode == 0, proc.stderr
    assert as_json(proc)["content"][0]["text"] == "logged"


# -- usage and connection errors --------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["call", "echo"],  # no target
        ["inspect"],  # no target
        ["read"],  # no URI, no target
        ["call", "echo", "extra", *EVERYTHING],  # too many positionals
        ["frobnicate"],  # no such command
        ["call", "--config", "x.json", "echo", *EVERYTHING],  # two targets
        ["inspect", "--mode", "bogus", *EVERYTHING],  # no such mode
        ["call", "--timeout", "0", "echo", *EVERYTHING],  # a timeout must be positive
        ["call", "--timeout", "3601", "echo", *EVERYTHING],  # past the session's cap
        ["call", "--timeout", "inf", "echo", *EVERYTHING],
        # Bad --args is found before connecting, whatever the target would do.
        ["call", "echo", "--args", "{bad", "--", "mcpwire-nonexistent-command-xyz"],
        ["call", "--args", "{bad", "http://127.0.0.1:9/mcp", "echo"],
        # Prompt arguments are strings in every revision's schema.
        ["prompt", "greet", "--args", '{"name": null}', *EVERYTHING],
        ["prompt", "greet", "--args", '{"name": "a", "style": {"b": 1}}', *EVERYTHING],
        ["serve", "mcpwire.examples.everything:server", "--transport", "http", "--port", "70000"],
        ["serve", "mcpwire.examples.everything:server", "--port", "9999"],  # stdio: no port
        ["serve", "mcpwire.examples.everything:server", "--host", "0.0.0.0"],
    ],
    ids=[
        "call-no-target",
        "inspect-no-target",
        "read-nothing",
        "extra-positional",
        "unknown-command",
        "two-targets",
        "bad-mode",
        "zero-timeout",
        "timeout-past-cap",
        "infinite-timeout",
        "bad-args-bad-command",
        "bad-args-unreachable-url",
        "prompt-null-argument",
        "prompt-object-argument",
        "serve-port-out-of-range",
        "serve-stdio-port",
        "serve-stdio-host",
    ],
)
def test_usage_errors_exit_2(args: list[str]) -> None:
    proc = mcpwire(*args)
    assert proc.returncode == 2, (proc.stdout, proc.stderr)
    assert proc.stderr
    assert "Traceback" not in proc.stderr


def test_help_exits_0() -> None:
    proc = mcpwire("--help")
    assert proc.returncode == 0
    for command in ("inspect", "call", "read", "prompt", "serve"):
        assert command in proc.stdout


def test_version_prints_the_package_version() -> None:
    """``--version`` prints ``mcpwire.__version__`` (the one place the version is
    written, which the package metadata is built from), for ``python -m mcpwire``
    and the console script alike, and exits 0."""
    import importlib.metadata

    import mcpwire as package

    assert importlib.metadata.version("mcpwire") == package.__version__
    script = Path(sys.executable).with_name("mcpwire")
    for argv in ([sys.executable, "-m", "mcpwire"], [str(script)]):
        proc = subprocess.run(
            [*argv, "--version"],
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
        assert (proc.returncode, proc.stdout, proc.stderr) == (
            0,
            f"mcpwire {package.__version__}\n",
            "",
        )


@pytest.mark.parametrize(("command", "thing"), [("inspect", ""), ("call", " TOOL"),
                                                ("read", " URI"), ("prompt", " NAME")])  # fmt: skip
def test_each_client_commands_help_shows_every_target_form(command: str, thing: str) -> None:
    proc = mcpwire(command, "--help")
    assert proc.returncode == 0, proc.stderr
    usage = proc.stdout
    assert f"mcpwire {command} [options] URL{thing}\n" in usage
    assert f"mcpwire {command} [options]{thing} --config FILE --server NAME" in usage
    assert f"mcpwire {command} [options]{thing} -- COMMAND [ARGS...]" in usage


def test_serve_help_says_what_app_and_the_options_are() -> None:
    proc = mcpwire("serve", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert "module:attr or path/to/file.py:attr (attr defaults to 'server')" in text
    assert "the address to bind (default: 127.0.0.1)" in text
    assert "the TCP port (default: 8000)" in text


def test_nonexistent_command_exits_3() -> None:
    proc = mcpwire("call", "echo", "--", "mcpwire-nonexistent-command-xyz")
    assert proc.returncode == 3
    assert "mcpwire-nonexistent-command-xyz" in proc.stderr
    proc = mcpwire("inspect", "--json", "--", "mcpwire-nonexistent-command-xyz")
    assert proc.returncode == 3
    assert "error" in as_json(proc)


def test_server_that_exits_at_once_exits_3() -> None:
    proc = mcpwire("inspect", "--", sys.executable, "-c", "import sys; sys.exit(4)")
    assert proc.returncode == 3
    assert "Traceback" not in proc.stderr


# -- read and prompt --------------------------------------------------------------------------


def test_read_text_resource() -> None:
    proc = mcpwire("read", "demo://readme", *EVERYTHING)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# mcpwire example server")


def test_read_json_and_binary() -> None:
    proc = mcpwire("read", "--json", "demo://items/7", *EVERYTHING)
    assert proc.returncode == 0, proc.stderr
    (item,) = as_json(proc)["contents"]
    assert item["uri"] == "demo://items/7"
    assert json.loads(item["text"]) == {"id": "7", "name": "item 7"}
    # A blob goes to a file or a pipe decoded, byte for byte.
    proc = mcpwire("read", "--json", "demo://pixel.png", *EVERYTHING)
    (item,) = as_json(proc)["contents"]
    raw = raw_run("read", "demo://pixel.png", *EVERYTHING)
    assert raw.returncode == 0, raw.stderr
    assert raw.stdout == base64.b64decode(item["blob"])
    assert raw.stdout.startswith(b"\x89PNG")


def test_read_unknown_resource_exits_1() -> None:
    proc = mcpwire("read", "--json", "demo://nothing", *EVERYTHING)
    assert proc.returncode == 1
    assert as_json(proc)["error"]["code"] == -32602


def test_prompt_human_and_json() -> None:
    proc = mcpwire("prompt", "greet", "--args", '{"name": "Ada"}', *EVERYTHING)
    assert proc.returncode == 0, proc.stderr
    assert "Write a friendly greeting for Ada." in proc.stdout
    proc = mcpwire(
        "prompt", "--json", "greet", "--args", '{"name": "Ada", "style": "pirate"}', *EVERYTHING
    )
    assert proc.returncode == 0, proc.stderr
    messages = as_json(proc)["messages"]
    assert messages == [
        {"role": "user", "content": {"type": "text", "text": "Write a pirate greeting for Ada."}}
    ]


def test_prompt_missing_argument_exits_1() -> None:
    proc = mcpwire("prompt", "greet", *EVERYTHING)
    assert proc.returncode == 1
    assert "-32602" in proc.stderr


# -- --config targets -----------------------------------------------------------------------------


def test_config_target(tmp_path: Path) -> None:
    config = tmp_path / "servers.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "everything": {
                        "command": sys.executable,
                        "args": ["-m", "mcpwire.examples.everything"],
                    }
                }
            }
        )
    )
    proc = mcpwire(
        "call", "--json", "--config", str(config), "--server", "everything", "echo",
        "--args", '{"message": "from config"}',
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert as_json(proc)["content"][0]["text"] == "from config"
    proc = mcpwire("inspect", "--config", str(config), "--server", "missing")
    assert proc.returncode == 2
    proc = mcpwire("inspect", "--config", str(config))
    assert proc.returncode == 2


def test_config_target_reads_configs_as_the_hub_does(tmp_path: Path) -> None:
    """``--config`` takes every file ``mcpwire hub`` takes: ``${VAR}`` expansion
    (with defaults), comments and trailing commas (VS Code), and a ``connections``
    list; and it names the servers there when the one asked for is not."""
    import os

    vscode = tmp_path / "mcp.json"
    vscode.write_text(
        "// comments, as VS Code allows\n"
        '{"servers": {"ev": {"type": "stdio", "command": "${env:MCPWIRE_TEST_PY}",\n'
        '  "args": ["-m", "mcpwire.examples.everything"],},},}'
    )
    dotted = tmp_path / "servers.json"
    dotted.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "ev": {
                        "command": "${MCPWIRE_TEST_PY:-python}",
                        "args": ["-m", "mcpwire.examples.everything"],
                        "env": {"FROM_CONFIG": "${MCPWIRE_TEST_VALUE:-unset}"},
                    }
                }
            }
        )
    )
    env = {**os.environ, "MCPWIRE_TEST_PY": sys.executable, "MCPWIRE_TEST_VALUE": "v"}
    for config in (vscode, dotted):
        proc = subprocess.run(
            [sys.executable, "-m", "mcpwire", "call", "--json", "--config", str(config),
             "--server", "ev", "echo", "--args", '{"message": "via the hub loader"}'],
            capture_output=True, text=True, timeout=RUN_TIMEOUT, env=env,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert proc.returncode == 0, (config.name, proc.stderr)
        assert as_json(proc)["content"][0]["text"] == "via the hub loader"
    proc = mcpwire("inspect", "--config", str(dotted), "--server", "missing")
    assert proc.returncode == 2
    assert "no server named 'missing' (servers: ev)" in proc.stderr
    proc = mcpwire("call", "--transport", "sse", "echo", *EVERYTHING)
    assert proc.returncode == 2
    assert "--transport applies to URL targets only" in proc.stderr


# -- serve ----------------------------------------------------------------------------------------

APP = textwrap.dedent(
    """
    from mcpwire import Server

    server = Server("tmp-app", "0.0.7")


    @server.tool()
    def shout(text: str) -> str:
        \"\"\"Upper-case the text.\"\"\"
        print("stray output must not break the protocol")
        return text.upper()


    @server.resource("tmp://hello")
    def hello() -> str:
        return "hello from a file"


    other = Server("other-app")


    @other.tool()
    def ping_back() -> str:
        return "pong"
    """
)


@pytest.fixture
def app(tmp_path: Path) -> Path:
    path = tmp_path / "app.py"
    path.write_text(APP)
    return path


def test_serve_file_app(app: Path) -> None:
    serve = ["--", sys.executable, "-m", "mcpwire", "serve", f"{app}:server"]
    proc = mcpwire("call", "--json", "shout", "--args", '{"text": "hey"}', *serve)
    assert proc.returncode == 0, proc.stderr
    assert as_json(proc)["content"][0]["text"] == "HEY"
    proc = mcpwire("inspect", "--json", "--mode", "legacy", *serve)
    assert proc.returncode == 0, proc.stderr
    report = as_json(proc)
    assert report["serverInfo"] == {"name": "tmp-app", "version": "0.0.7"}
    assert [t["name"] for t in report["tools"]] == ["shout"]
    proc = mcpwire("read", "tmp://hello", *serve)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello from a file"


def test_serve_other_attribute_and_module_form(app: Path) -> None:
    proc = mcpwire(
        "call", "ping_back", "--", sys.executable, "-m", "mcpwire", "serve", f"{app}:other"
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "pong"
    proc = mcpwire(
        "call", "echo", "--args", '{"message": "m"}', "--",
        sys.executable, "-m", "mcpwire", "serve", "mcpwire.examples.everything:server",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "m"


@pytest.mark.parametrize(
    ("source", "shown"),
    [
        ("x = 1 // 0\n", "ZeroDivisionError: integer division or modulo by zero (at "),
        ("def broken(:\n", "SyntaxError"),
    ],
)
def test_an_app_that_fails_to_load_is_a_usage_error_naming_its_error(
    tmp_path: Path, source: str, shown: str
) -> None:
    (tmp_path / "broken.py").write_text(source)
    proc = mcpwire("serve", f"{tmp_path / 'broken.py'}:server")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert shown in proc.stderr and "broken.py" in proc.stderr


def test_the_console_script_serves_a_module_of_the_current_directory(app: Path) -> None:
    """``mcpwire serve app:server`` finds ``app.py`` in the current directory, as
    ``python -m mcpwire serve app:server`` does (the script's own directory is
    what Python puts first on ``sys.path`` for it)."""
    script = Path(sys.executable).with_name("mcpwire")
    assert script.is_file(), script
    proc = subprocess.run(
        [sys.executable, "-m", "mcpwire", "call", "ping_back", "--", str(script), "serve",
         "app:other"],
        capture_output=True, text=True, timeout=RUN_TIMEOUT, cwd=app.parent,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "pong"


@pytest.mark.parametrize("spec", ["{missing}:server", "{app}:nothing", "{app}:Server"])
def test_serve_bad_app_is_a_usage_error(app: Path, tmp_path: Path, spec: str) -> None:
    target = spec.format(app=app, missing=tmp_path / "missing.py")
    proc = mcpwire("serve", target)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip()


# -- a legacy-only peer ----------------------------------------------------------------------------

LEGACY_PEER = textwrap.dedent(
    """
    import json
    import sys

    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        rid, method = msg["id"], msg["method"]
        if method == "server/discover":
            continue  # never answered: a legacy server that drops unknown requests
        if method == "initialize":
            result = {"protocolVersion": "2025-03-26", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "quiet-legacy", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "hello", "inputSchema": {"type": "object"}}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": "hello, legacy"}]}
        else:
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid,
                "error": {"code": -32601, "message": "Method not found"}}) + "\\n")
            sys.stdout.flush()
            continue
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}) + "\\n")
        sys.stdout.flush()
    """
)


def test_timeout_bounds_the_era_probe(tmp_path: Path) -> None:
    peer = tmp_path / "quiet_legacy.py"
    peer.write_text(LEGACY_PEER)
    # --timeout is "seconds per request"; the server/discover probe is a
    # request too, so a peer that never answers it must not cost the default
    # 10 s probe wait before the fallback to initialize.
    started = time.monotonic()
    try:
        proc = mcpwire(
            "call", "--timeout", "0.5", "hello", "--", sys.executable, str(peer), timeout=4.0
        )
    except subprocess.TimeoutExpired:
        pytest.fail("--timeout 0.5 did not bound the era probe: no answer within 4 s")
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hello, legacy"
    assert elapsed < 4.0, elapsed


def test_legacy_mode_timeout_exits_3(tmp_path: Path) -> None:
    silent = tmp_path / "silent.py"
    silent.write_text("import sys\nfor _ in sys.stdin:\n    pass\n")
    proc = mcpwire(
        "inspect", "--mode", "legacy", "--timeout", "0.5", "--", sys.executable, str(silent)
    )
    assert proc.returncode == 3
    assert "timed out" in proc.stderr


STUCK_PEER = textwrap.dedent(
    """
    import json
    import signal
    import sys
    import time

    behaviour = sys.argv[1]
    with open(sys.argv[2], "w") as stamp:
        stamp.write(repr(time.time()))  # when the child started
    if behaviour == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


    def send(rid, **answer):
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": rid, **answer}) + "\\n")
        sys.stdout.flush()


    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        rid, method = msg["id"], msg["method"]
        if behaviour in ("mute", "stubborn"):
            continue  # reads every request, answers none
        if behaviour == "slow-probe" and method == "server/discover":
            time.sleep(60)  # nothing else is read or answered meanwhile
        if behaviour == "slow":
            time.sleep(0.4)  # each answer in time for a per-request bound
        if method == "initialize":
            send(rid, result={"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                              "serverInfo": {"name": "stuck", "version": "1"}})
        elif method == "tools/list":
            send(rid, result={"tools": [{"name": "t", "inputSchema": {"type": "object"}}]})
        elif method == "tools/call":
            send(rid, result={"content": [{"type": "text", "text": "late"}]})
        else:
            send(rid, error={"code": -32601, "message": "Method not found"})
    while behaviour == "stubborn":
        time.sleep(1)  # stdin closed: still here, and SIGTERM is ignored
    """
)


@pytest.mark.parametrize("behaviour", ["slow", "slow-probe", "mute", "stubborn"])
def test_timeout_bounds_the_whole_command_and_closing_is_bounded(
    tmp_path: Path, behaviour: str
) -> None:
    """``--timeout 1`` bounds connecting and the command's requests together: a
    server whose every answer comes within 1 s but whose answers together take
    longer, one that answers the era probe late, and one that answers nothing,
    end the command with status 3 a second after the child started; stopping the
    child (even one that ignores stdin closing and SIGTERM) takes under 2 s more."""
    peer = tmp_path / "stuck.py"
    peer.write_text(STUCK_PEER)
    stamp = tmp_path / "started"
    proc = mcpwire(
        "call", "--timeout", "1", "t", "--", sys.executable, str(peer), behaviour, str(stamp),
        timeout=20,
    )  # fmt: skip
    elapsed = time.time() - float(stamp.read_text())
    assert proc.returncode == 3, (proc.stdout, proc.stderr)
    assert "did not finish within --timeout 1 s" in proc.stderr, proc.stderr
    assert proc.stdout == ""
    assert 0.9 <= elapsed < 1.0 + 2.0, elapsed  # the deadline starts as the child does


def test_timeout_help_says_what_it_bounds() -> None:
    proc = mcpwire("call", "--help")
    text = " ".join(proc.stdout.split())
    assert "the era probe (at most half of it), the handshake and every request together" in text
    assert "a stdio child gets 0.5 s after stdin is closed, as much after SIGTERM" in text


# -- the reference SDK as the server ------------------------------------------------------------

REFERENCE_SERVER = textwrap.dedent(
    """
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("reference-echo")


    @app.tool()
    def echo(message: str) -> str:
        \"\"\"Echo the message back.\"\"\"
        return message


    if __name__ == "__main__":
        app.run()
    """
)


@pytest.fixture(scope="module")
def reference_runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, subprocess.CompletedProcess[str]]:
    """Every CLI run against the reference server, started at once (each costs ~1 s of imports)."""
    script = tmp_path_factory.mktemp("reference") / "reference_server.py"
    script.write_text(REFERENCE_SERVER)
    target = ["--", sys.executable, str(script)]
    commands = {
        "inspect-auto": ["inspect", "--json", *target],
        "inspect-legacy": ["inspect", "--json", "--mode", "legacy", *target],
        "call-auto": ["call", "--json", "echo", "--args", '{"message": "hi ref"}', *target],
        "call-legacy": [
            "call",
            "--mode",
            "legacy",
            "echo",
            "--args",
            '{"message": "hi ref"}',
            *target,
        ],
    }
    procs = {
        key: subprocess.Popen(
            [sys.executable, "-m", "mcpwire", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        for key, args in commands.items()
    }
    runs: dict[str, subprocess.CompletedProcess[str]] = {}
    for key, proc in procs.items():
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate()
        runs[key] = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    return runs


@pytest.mark.parametrize(("mode", "era"), [("auto", "modern"), ("legacy", "legacy")])
def test_inspect_reference_server(
    reference_runs: dict[str, subprocess.CompletedProcess[str]], mode: str, era: str
) -> None:
    proc = reference_runs[f"inspect-{mode}"]
    assert proc.returncode == 0, proc.stderr
    report = as_json(proc)
    assert report["serverInfo"]["name"] == "reference-echo"
    assert report["era"] == era
    assert report["protocolVersion"] == ("2026-07-28" if era == "modern" else "2025-11-25")
    (tool,) = report["tools"]
    assert tool["name"] == "echo"
    assert tool["inputSchema"]["required"] == ["message"]


def test_call_reference_server(reference_runs: dict[str, subprocess.CompletedProcess[str]]) -> None:
    proc = reference_runs["call-auto"]
    assert proc.returncode == 0, proc.stderr
    assert as_json(proc)["content"] == [{"type": "text", "text": "hi ref"}]
    proc = reference_runs["call-legacy"]
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "hi ref"


# -- what a hostile server cannot do to the terminal ----------------------------------------

HOSTILE = textwrap.dedent(
    """
    from mcpwire import Context, Server, ToolError

    server = Server("evil\\x1b]0;pwned\\x07", "1\\x9b31m", instructions="use me\\x1b[2K\\rnot")


    @server.tool(description="harmless\\x1b[8m hidden\\u202e txet")
    async def paint(ctx: Context) -> str:
        await ctx.warning("log \\x1b[1A\\x1b[2K up")
        return "colour \\x1b[31mred\\x1b[0m\\r\\nline"


    @server.tool()
    def fail() -> str:
        raise ToolError("failed \\x1b[2J cleared")
    """
)

#: What a terminal would act on: C0 controls but line feed, DEL, C1, bidi controls.
ACTIVE = {chr(c) for c in (*range(0x0A), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0))} | {
    "\u202a",
    "\u202b",
    "\u202c",
    "\u202d",
    "\u202e",
    "\u2066",
    "\u2067",
    "\u2068",
    "\u2069",
}


@pytest.fixture
def hostile(tmp_path: Path) -> list[str]:
    path = tmp_path / "hostile.py"
    path.write_text(HOSTILE)
    return ["--", sys.executable, "-m", "mcpwire", "serve", f"{path}:server"]


def test_server_text_reaches_the_terminal_as_escapes(hostile: list[str]) -> None:
    """A server's names, descriptions, instructions, log messages and errors cannot
    move the cursor, erase, retitle the window or reorder what the user reads in
    the human output: every control character shows as an escape."""
    proc = mcpwire("inspect", *hostile)
    assert proc.returncode == 0, proc.stderr
    assert not ACTIVE & set(proc.stdout), repr(proc.stdout)
    assert "evil\\x1b]0;pwned\\x07 1\\x9b31m" in proc.stdout
    assert "instructions: use me\\x1b[2K\\x0dnot" in proc.stdout
    assert "harmless\\x1b[8m hidden\\u202e txet" in proc.stdout

    proc = mcpwire("call", "paint", *hostile)
    assert proc.returncode == 0, proc.stderr
    assert "[warning] log \\x1b[1A\\x1b[2K up" in proc.stderr
    assert not ACTIVE & set(proc.stderr), repr(proc.stderr)
    # stdout is a pipe here: the content is the server's exact text.
    raw = subprocess.run(
        [sys.executable, "-m", "mcpwire", "call", "paint", *hostile],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=RUN_TIMEOUT,
    )
    assert raw.stdout == b"colour \x1b[31mred\x1b[0m\r\nline"

    proc = mcpwire("call", "fail", *hostile)
    assert proc.returncode == 1
    assert "failed \\x1b[2J cleared" in proc.stderr
    assert not ACTIVE & set(proc.stderr), repr(proc.stderr)


def on_terminal(*args: str) -> tuple[subprocess.CompletedProcess[bytes], bytes]:
    """Run ``mcpwire ARGS`` with stdout on a pseudo-terminal: the run and what the
    terminal received (the terminal driver turns each line feed into CR LF)."""
    import os
    import pty

    leader, follower = pty.openpty()
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "mcpwire", *args],
            stdout=follower,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            timeout=RUN_TIMEOUT,
        )
        os.close(follower)
        follower = -1
        out = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the terminal's other side is closed
                break
            if not chunk:
                break
            out += chunk
    finally:
        os.close(leader)
        if follower >= 0:
            os.close(follower)
    return proc, out


def test_content_on_a_terminal_is_escaped(hostile: list[str]) -> None:
    """Content goes out as it is to a file or a pipe, but not to a terminal."""
    proc, out = on_terminal("call", "paint", *hostile)
    assert proc.returncode == 0, proc.stderr
    assert out.decode().replace("\r\n", "\n") == "colour \\x1b[31mred\\x1b[0m\nline\n"


EXACT = textwrap.dedent(
    """
    from mcpwire import Server

    server = Server("exact")
    TEXTS = {"plain": "no newline", "newline": "ends with one\\n", "empty": "",
             "crlf": "a\\r\\nb ü\\r\\n", "blank": "\\n"}
    BLOBS = {"bin": bytes(range(256)) + b"\\n", "tail": b"\\x89PNG\\x00 no newline",
             "none": b""}


    @server.tool()
    def say(key: str) -> str:
        return TEXTS[key]


    @server.resource("exact://text/{key}", mime_type="text/plain")
    def text(key: str) -> str:
        return TEXTS[key]


    @server.resource("exact://blob/{key}", mime_type="application/x-test")
    def blob(key: str) -> bytes:
        return BLOBS[key]
    """
)
EXACT_TEXTS = {"plain": "no newline", "newline": "ends with one\n", "empty": "",
               "crlf": "a\r\nb ü\r\n", "blank": "\n"}  # fmt: skip
EXACT_BLOBS = {"bin": bytes(range(256)) + b"\n", "tail": b"\x89PNG\x00 no newline",
               "none": b""}  # fmt: skip


@pytest.fixture
def exact(tmp_path: Path) -> list[str]:
    path = tmp_path / "exact.py"
    path.write_text(EXACT)
    return ["--", sys.executable, "-m", "mcpwire", "serve", f"{path}:server"]


def raw_run(*args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "mcpwire", *args],
        capture_output=True,
        stdin=subprocess.DEVNULL,
        timeout=RUN_TIMEOUT,
    )


@pytest.mark.parametrize("key", EXACT_TEXTS)
def test_text_to_a_pipe_is_exactly_the_content(exact: list[str], key: str) -> None:
    """``read`` of a text resource and ``call`` of a tool with a text result write
    the content's UTF-8 bytes and nothing more to a file or a pipe (no line feed
    added, none taken away), so ``> file`` reproduces it."""
    want = EXACT_TEXTS[key].encode()
    proc = raw_run("read", f"exact://text/{key}", *exact)
    assert (proc.returncode, proc.stdout) == (0, want), proc.stderr
    proc = raw_run("call", "say", "--args", json.dumps({"key": key}), *exact)
    assert (proc.returncode, proc.stdout) == (0, want), proc.stderr
    # --json output is a JSON document and its line feed, as before.
    proc = raw_run("read", "--json", f"exact://text/{key}", *exact)
    assert proc.returncode == 0 and proc.stdout.endswith(b"}\n"), proc.stderr
    assert json.loads(proc.stdout)["contents"][0]["text"] == EXACT_TEXTS[key]


@pytest.mark.parametrize("key", EXACT_BLOBS)
def test_a_blob_resource_to_a_pipe_is_its_decoded_bytes(exact: list[str], key: str) -> None:
    proc = raw_run("read", f"exact://blob/{key}", *exact)
    assert (proc.returncode, proc.stdout) == (0, EXACT_BLOBS[key]), proc.stderr


BAD_BLOB = textwrap.dedent(
    """
    import json
    import sys

    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        if msg["method"] == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"resources": {}},
                      "serverInfo": {"name": "bad-blob", "version": "1"}}
        else:
            result = {"contents": [{"uri": "x://a", "text": "first"},
                                   {"uri": "x://b", "blob": "not base64!"}]}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\\n")
        sys.stdout.flush()
    """
)


def test_a_blob_that_is_not_base64_is_an_error_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "bad_blob.py"
    path.write_text(BAD_BLOB)
    proc = raw_run("read", "--mode", "legacy", "x://a", "--", sys.executable, str(path))
    assert (proc.returncode, proc.stdout) == (1, b""), proc.stderr
    assert b"the blob of 'x://b' is not valid base64" in proc.stderr


def test_content_on_a_terminal_ends_with_one_line_feed(exact: list[str]) -> None:
    """On a terminal a line feed follows content that does not end with one (for
    the prompt), and none is added to content that does, or to no content; a blob
    is a line about it."""
    for key, shown in [("plain", "no newline\n"), ("newline", "ends with one\n"),
                       ("empty", ""), ("blank", "\n"), ("crlf", "a\nb ü\n")]:  # fmt: skip
        for args in (
            ["read", f"exact://text/{key}"],
            ["call", "say", "--args", f'{{"key": "{key}"}}'],
        ):
            proc, out = on_terminal(*args, *exact)
            assert proc.returncode == 0, proc.stderr
            assert out.decode().replace("\r\n", "\n") == shown, (key, args)
    proc, out = on_terminal("read", "exact://blob/tail", *exact)
    assert proc.returncode == 0, proc.stderr
    assert out == b"[binary application/x-test, 16 bytes, exact://blob/tail]\r\n"


def escaped(text: str, kept: set[str]) -> str:
    """The expected rendering, character by character."""
    out = []
    for c in text:
        if c in kept or c not in ACTIVE | {"\n"}:
            out.append(c)
        else:
            out.append(f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
    return "".join(out)


@given(st.text(alphabet=st.characters(codec="utf-8")))
def test_visible_escapes_exactly_the_controls(text: str) -> None:
    from mcpwire._cli_output import visible

    assert visible(text, lines=False) == escaped(text, set())
    assert visible(text) == escaped(text.replace("\r\n", "\n"), {"\n", "\t"})
    for lines in (True, False):
        shown = visible(text, lines=lines)
        assert not (ACTIVE - {"\t"} if lines else ACTIVE | {"\n"}) & set(shown)


# -- what an audit of the contract found -------------------------------------------------------

FAULTY_LISTS = textwrap.dedent(
    """
    import json
    import sys

    RESULTS = {
        "initialize": {"protocolVersion": "2025-06-18",
                       "capabilities": {"tools": {}, "resources": {}, "prompts": {}},
                       "serverInfo": {"name": "faulty-lists", "version": "1"}},
        "tools/list": {"tools": [{"name": "fine", "inputSchema": {"type": "object"}}]},
        "resources/list": {"resources": []},
        "resources/templates/list": {"resourceTemplates": []},
        "resources/read": {"contents": [{"uri": "https://example.com/doc",
                                         "text": "a resource at an https URI"}]},
    }
    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        if msg["method"] == "prompts/list":
            answer = {"error": {"code": -32603, "message": "prompts broke"}}
        elif msg["method"] in RESULTS:
            answer = {"result": RESULTS[msg["method"]]}
        else:
            answer = {"error": {"code": -32601, "message": "Method not found"}}
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], **answer}) + "\\n")
        sys.stdout.flush()
    """
)


@pytest.fixture
def faulty(tmp_path: Path) -> list[str]:
    path = tmp_path / "faulty.py"
    path.write_text(FAULTY_LISTS)
    return ["--", sys.executable, str(path)]


@pytest.mark.parametrize("json_output", [False, True])
def test_inspect_exits_1_when_a_list_is_answered_with_an_error(
    faulty: list[str], json_output: bool
) -> None:
    proc = mcpwire("inspect", *(["--json"] if json_output else []), *faulty)
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert "server error listing prompts: error [-32603] prompts broke" in proc.stderr
    if json_output:
        report = as_json(proc)
        assert report["prompts"] == {"error": {"code": -32603, "message": "prompts broke"}}
        assert [t["name"] for t in report["tools"]] == ["fine"]
    else:
        assert "Prompts: error [-32603] prompts broke" in proc.stdout
        assert "fine()" in proc.stdout


def test_read_takes_an_https_uri_with_a_command_target(faulty: list[str]) -> None:
    proc = mcpwire("read", "https://example.com/doc", *faulty)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "a resource at an https URI"
    # A URL and a command are still two targets.
    proc = mcpwire("read", "http://127.0.0.1:9/mcp", "https://example.com/doc", *faulty)
    assert proc.returncode == 2
    assert "exactly one TARGET" in proc.stderr


def test_a_pinned_modern_mode_without_a_modern_server_fails(tmp_path: Path) -> None:
    """``--mode 2026-07-28`` against a server that refuses server/discover is not a
    success with an empty report."""
    peer = tmp_path / "legacy_peer.py"
    peer.write_text(LEGACY_PEER.replace("continue  # never answered", "pass  # refused"))
    proc = mcpwire("inspect", "--json", "--mode", "2026-07-28", "--", sys.executable, str(peer))
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert as_json(proc)["error"]["code"] == -32601
    assert "-32601" in proc.stderr
    silent = tmp_path / "silent_peer.py"
    silent.write_text(LEGACY_PEER)
    proc = mcpwire(
        "inspect", "--mode", "2026-07-28", "--timeout", "0.5", "--", sys.executable, str(silent)
    )
    assert proc.returncode == 3, (proc.stdout, proc.stderr)


def test_a_reader_that_stops_reading_does_not_change_the_status() -> None:
    """``mcpwire call --json fail ... | head -c1``: the tool result is an error, so
    the status is 1, though writing it met a closed pipe."""
    big = json.dumps({"message": "x" * 120_000})  # over a pipe buffer, under ARG_MAX
    proc = subprocess.Popen(
        [sys.executable, "-m", "mcpwire", "call", "--json", "fail", "--args", big, *EVERYTHING],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdout is not None
    assert proc.stdout.read(1) == b"{"
    proc.stdout.close()
    assert proc.wait(timeout=RUN_TIMEOUT) == 1
