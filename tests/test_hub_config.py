"""The config loader (pain point 20): every dialect from a real-looking sample file.

Samples live in ``tests/hub_configs/``: Claude Desktop, Cursor, Roo, VS Code
(JSON with comments and ``inputs``), gemini-cli ``settings.json`` (timeouts in
ms, ``httpUrl``, ``trust``, ``$VAR``) and the ``connections`` list of seed 002.
Errors name the file, the JSON path and the rule; unknown keys are warnings;
global and project configs merge with the project winning (seed 000).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies import json_values

from mcpwire import (
    ConfigError,
    ServerConfig,
    load_config,
    load_configs,
    parse_config,
)

CONFIGS = Path(__file__).resolve().parent / "hub_configs"
ENV = {
    "HOME": "/home/ada",
    "GITHUB_TOKEN": "ghp_secret",
    "LINEAR_API_KEY": "lin_123",
    "PGPASSWORD": "pw",
    "JUPYTER_TOKEN": "jt",
    "DB_CONNECTION_STRING": "postgres://db",
    "EXTERNAL_API_KEY": "ext",
}


def messages(exc: ConfigError) -> list[str]:
    return [str(issue) for issue in exc.issues]


def test_claude_desktop_config_expands_variables_and_defaults() -> None:
    loaded = load_config(CONFIGS / "claude_desktop_config.json", environ=ENV)
    assert loaded.dialects == ("claude",)
    assert list(loaded.servers) == ["filesystem", "github", "sqlite"]
    fs = loaded.servers["filesystem"]
    assert fs.transport == "stdio" and fs.command == "npx"
    assert fs.args == ("-y", "@modelcontextprotocol/server-filesystem", "/home/ada/Desktop",
                       "/home/ada/Downloads")  # fmt: skip
    assert loaded.servers["github"].env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_secret"}
    assert loaded.servers["sqlite"].args[-1] == "/tmp/test.db"  # ${DB_PATH:-/tmp/test.db}
    assert loaded.servers["github"].timeout == 60.0
    assert loaded.warnings == ()  # globalShortcut is Claude Desktop's own setting


def test_unset_variable_is_an_error_naming_file_path_and_variable() -> None:
    env = {k: v for k, v in ENV.items() if k != "GITHUB_TOKEN"}
    with pytest.raises(ConfigError) as info:
        load_config(CONFIGS / "claude_desktop_config.json", environ=env)
    (issue,) = info.value.issues
    assert issue.file.endswith("claude_desktop_config.json")
    assert issue.path == "$.mcpServers.github.env.GITHUB_PERSONAL_ACCESS_TOKEN"
    assert "GITHUB_TOKEN is not set" in issue.message
    assert "claude_desktop_config.json: $.mcpServers.github.env" in str(info.value)


def test_cursor_mcp_json_urls_and_env_forms() -> None:
    loaded = load_config(CONFIGS / "cursor_mcp.json", environ=ENV)
    linear = loaded.servers["linear"]
    assert linear.transport == "http" and linear.url == "https://mcp.linear.app/sse"
    assert linear.headers == {"Authorization": "Bearer lin_123"}  # ${env:VAR}
    assert loaded.servers["postgres"].args[-1] == "postgresql://localhost/mydb"
    assert loaded.servers["postgres"].env == {"PGPASSWORD": "pw"}
    browser = loaded.servers["browser"]
    assert browser.transport == "http" and browser.url == "http://localhost:3333/mcp"


def test_roo_settings_types_timeouts_policies_and_unknown_key_warning() -> None:
    loaded = load_config(CONFIGS / "roo_mcp_settings.json", environ=ENV)
    jupyter = loaded.servers["jupyter-python"]
    assert jupyter.timeout == 300.0
    assert jupyter.always_allow == ("execute_code",)
    assert jupyter.disabled_tools == ("restart_kernel",)
    assert jupyter.cwd == str(CONFIGS / "notebooks")  # relative to the workspace
    assert jupyter.watch_paths == (str(CONFIGS / "jupyter_mcp_bridge.py"),)
    remote = loaded.servers["jupyter-remote"]
    assert remote.transport == "sse" and remote.headers == {"Authorization": "Bearer jt"}
    context7 = loaded.servers["context7"]
    assert context7.transport == "http" and context7.disabled
    assert context7.include_tools == ("resolve-*", "get-library-docs")
    brave = loaded.servers["brave-search"]
    assert brave.env == {"BRAVE_API_KEY": ""}  # ${VAR:-} defaults to empty
    assert brave.exclude_tools == ("brave_local_*",)
    (warning,) = loaded.warnings
    assert warning.path == "$.mcpServers.brave-search.alwaysAlow"
    assert "unknown key 'alwaysAlow'" in warning.message


def test_vscode_mcp_json_with_comments_inputs_and_workspace_folder() -> None:
    loaded = load_config(CONFIGS / "vscode_mcp.json", environ=ENV)
    assert loaded.dialects == ("vscode",)
    fetch = loaded.servers["fetch"]
    assert fetch.env == {"LOG_DIR": f"{CONFIGS}/logs"}  # ${workspaceFolder}
    github = loaded.servers["github"]
    assert github.transport == "http" and github.headers["Authorization"] == "Bearer ghp_secret"
    perplexity = loaded.servers["perplexity"]
    assert perplexity.disabled and "${input:perplexity-key}" in perplexity.disabled_reason
    paths = {w.path: w.message for w in loaded.warnings}
    assert "ignored" in paths["$.inputs"]
    assert "envFile" in paths["$.servers.perplexity.envFile"]
    assert "left disabled" in paths["$.servers.perplexity"]


def test_gemini_settings_units_trust_and_bare_variables() -> None:
    loaded = load_config(CONFIGS / "gemini_settings.json", environ=ENV)
    assert loaded.dialects == ("gemini",)
    tools = loaded.servers["pythonTools"]
    assert tools.timeout == 15.0  # 15000 ms
    assert tools.env == {"DATABASE_URL": "postgres://db", "API_KEY": "ext"}
    assert tools.include_tools == ("safe_tool", "file_reader")
    assert tools.cwd == str(CONFIGS / "mcp-servers" / "python")
    http = loaded.servers["httpServer"]
    assert http.transport == "http" and http.trust and http.timeout == 5.0
    sse = loaded.servers["sseServer"]
    assert sse.transport == "sse"  # gemini-cli's plain url is SSE
    assert sse.headers == {"Authorization": "Bearer dev-token"}
    assert sse.exclude_tools == ("dangerous_tool", "file_deleter")
    assert loaded.warnings == ()  # theme etc. are gemini's own settings


def test_gemini_dialect_can_be_forced() -> None:
    data = {"mcpServers": {"s": {"url": "http://h/sse", "timeout": 30000}}}
    loaded = parse_config(data, dialect="gemini", environ={})
    assert loaded.servers["s"].transport == "sse" and loaded.servers["s"].timeout == 30.0
    with pytest.raises(ConfigError) as info:
        parse_config(data, environ={})  # read as Claude's: seconds
    assert "milliseconds?" in str(info.value)


def test_seed_002_connections_list() -> None:
    loaded = load_config(CONFIGS / "connections.json", environ=ENV)
    assert loaded.dialects == ("connections",)
    remote = loaded.servers["Server Name"]
    assert remote.transport == "sse" and remote.url == "http://localhost:3001"
    local = loaded.servers["local-stdio"]
    assert local.command == "server-command" and local.args == ("--arg1", "value1")
    assert local.cwd == str(CONFIGS)
    assert local.disabled and local.disabled_reason == "autoConnect is false"
    assert local.origin.endswith("connections.json: $.connections[1]")


@pytest.mark.parametrize(
    ("entry", "path", "rule"),
    [
        ({"command": "x", "timeout": 0}, "$.mcpServers.github.timeout", "between 1 and 3600"),
        ({"command": "x", "timeout": 99999}, "$.mcpServers.github.timeout", "milliseconds?"),
        ({"command": "x", "timeout": "soon"}, "$.mcpServers.github.timeout", "duration"),
        ({"command": "x", "args": "--flag"}, "$.mcpServers.github.args", "list of strings"),
        ({"command": "x", "args": ["a", None]}, "$.mcpServers.github.args[1]", "string"),
        ({"command": "x", "disabled": "yes"}, "$.mcpServers.github.disabled", "true or false"),
        ({"command": "x", "env": {"A": []}}, "$.mcpServers.github.env.A", "string"),
        ({"type": "websocket", "url": "http://x"}, "$.mcpServers.github.type", "one of stdio"),
        ({"type": "sse"}, "$.mcpServers.github.url", "needs a url"),
        ({"type": "stdio"}, "$.mcpServers.github.command", "needs a command"),
        ({"url": "ftp://x"}, "$.mcpServers.github.url", "http:// or https://"),
        ({}, "$.mcpServers.github", "needs a command"),
        ({"command": "x", "url": "http://x"}, "$.mcpServers.github", "say which with type"),
        ({"command": "${nope!}"}, "$.mcpServers.github.command", "not a supported variable"),
        ({"command": "x", "env": {"A": "${env:}"}}, "$.mcpServers.github.env.A", "not a variable"),
    ],
)
def test_errors_name_file_json_path_and_rule(
    tmp_path: Path, entry: dict[str, Any], path: str, rule: str
) -> None:
    file = tmp_path / "mcp.json"
    file.write_text(json.dumps({"mcpServers": {"github": entry}}))
    with pytest.raises(ConfigError) as info:
        load_config(file, environ={})
    issue = info.value.issues[0]
    assert (issue.file, issue.path) == (str(file), path), issue
    assert rule in issue.message
    assert str(info.value).startswith(f"{file}: {path}: ")


def test_all_problems_are_reported_together(tmp_path: Path) -> None:
    file = tmp_path / "mcp.json"
    file.write_text(
        json.dumps({"mcpServers": {"a": {"command": 1}, "b": {"url": "x"}, "c": {"command": "ok"}}})
    )
    with pytest.raises(ConfigError) as info:
        load_config(file, environ={})
    assert [i.path for i in info.value.issues] == ["$.mcpServers.a.command", "$.mcpServers.b.url"]
    assert "2 problems" in str(info.value)


def test_json_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    file = tmp_path / "mcp.json"
    file.write_text('{\n  "mcpServers": {\n    "a": {"command": "x",,}\n  }\n}\n')
    with pytest.raises(ConfigError) as info:
        load_config(file)
    assert "not valid JSON: line 3 column" in str(info.value)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("[]", "must be a JSON object"),
        ('{"mcpServer": {}}', "expected a top-level mcpServers, servers or connections"),
        ('{"mcpServers": []}', "must be an object of servers"),
        ('{"connections": [{"type": "stdio"}]}', "needs a non-empty name"),
    ],
)
def test_document_shape_errors(tmp_path: Path, document: str, message: str) -> None:
    file = tmp_path / "mcp.json"
    file.write_text(document)
    with pytest.raises(ConfigError, match=message):
        load_config(file)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_config(tmp_path / "nope.json")


def test_duplicate_keys_and_numbers_are_warnings(tmp_path: Path) -> None:
    file = tmp_path / "mcp.json"
    file.write_text(
        '{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y", "args": [8080],'
        ' "env": {"PORT": 3000}}}}'
    )
    loaded = load_config(file, environ={})
    assert loaded.servers["a"].command == "y"
    assert loaded.servers["a"].args == ("8080",) and loaded.servers["a"].env == {"PORT": "3000"}
    text = [str(w) for w in loaded.warnings]
    assert any("'a' appears more than once" in t for t in text)
    assert any("$.mcpServers.a.args[0]: number 8080" in t for t in text)


def test_global_and_project_configs_merge_with_the_project_winning(tmp_path: Path) -> None:
    home = tmp_path / "global.json"
    home.write_text(
        json.dumps({"mcpServers": {"a": {"command": "global-a"}, "b": {"command": "global-b"}}})
    )
    project = tmp_path / "proj" / ".roo" / "mcp.json"
    project.parent.mkdir(parents=True)
    project.write_text(json.dumps({"mcpServers": {"b": {"command": "project-b", "cwd": "src"}}}))
    loaded = load_configs([home, project], environ={})
    assert loaded.servers["a"].command == "global-a"
    assert loaded.servers["b"].command == "project-b"
    assert loaded.servers["b"].cwd == str(tmp_path / "proj" / "src")  # the workspace, not .roo
    (warning,) = loaded.warnings
    assert warning.path == "$.mcpServers.b" and "replaces the one from" in warning.message
    assert str(home) in warning.message


def test_load_configs_reports_every_bad_file(tmp_path: Path) -> None:
    bad1, bad2 = tmp_path / "1.json", tmp_path / "2.json"
    bad1.write_text("{")
    bad2.write_text('{"mcpServers": {"x": {}}}')
    with pytest.raises(ConfigError) as info:
        load_configs([bad1, bad2])
    assert [i.file for i in info.value.issues] == [str(bad1), str(bad2)]


def test_jsonc_comments_inside_strings_are_kept(tmp_path: Path) -> None:
    file = tmp_path / "mcp.json"
    file.write_text(
        '{"servers": {"s": {"type": "http", "url": "http://h/a//b", // c\n'
        ' "headers": {"X": "/* not a comment */"},}}}'
    )
    server = load_config(file, environ={}).servers["s"]
    assert server.url == "http://h/a//b" and server.headers == {"X": "/* not a comment */"}


def test_durations_with_units_mean_the_same_everywhere() -> None:
    for dialect in ("claude", "gemini"):
        data = {"mcpServers": {"s": {"command": "x", "timeout": "90s", "startupTimeout": "2m"}}}
        server = parse_config(data, dialect=dialect, environ={}).servers["s"]
        assert (server.timeout, server.startup_timeout) == (90.0, 120.0)
    data = {"mcpServers": {"s": {"command": "x", "timeout": "500ms"}}}
    with pytest.raises(ConfigError, match="between 1 and 3600"):
        parse_config(data, environ={})


def test_cline_spellings_are_accepted() -> None:
    data = {
        "mcpServers": {
            "s": {"transportType": "streamableHttp", "url": "http://h", "autoApprove": ["x"]}
        }
    }
    server = parse_config(data, environ={}).servers["s"]
    assert server.transport == "http" and server.always_allow == ("x",)


def test_server_config_in_code_validates_and_round_trips() -> None:
    server = ServerConfig(
        name="py",
        command="python",
        args=["-m", "srv"],
        env={"A": "1"},
        always_allow=["echo"],
        include_tools=["e*"],
        timeout=30,
    )
    assert server.transport == "stdio" and server.args == ("-m", "srv")
    back = parse_config({"mcpServers": {"py": server.to_json()}}, environ={}).servers["py"]
    assert back == server
    assert ServerConfig(name="h", url="http://h").transport == "http"
    with pytest.raises(ValueError, match="needs a command"):
        ServerConfig(name="x", transport="stdio")
    with pytest.raises(ValueError, match="needs a name"):
        ServerConfig(name="", command="x")
    assert ServerConfig(name="d", command="x", disabled=True).disabled_reason


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        (None, True),
        (True, True),
        (False, False),
        (["AWS_PROFILE", "GOPATH"], ("AWS_PROFILE", "GOPATH")),
    ],
)
def test_inherit_env_is_read_round_trips_and_restarts(value: Any, parsed: Any) -> None:
    """``inheritEnv`` (pain point #3's isolation): true, false or a list of the
    variables a stdio server may inherit beside the essential ones. It is part
    of the connection (a change restarts the server) and survives ``to_json``."""
    entry: dict[str, Any] = {"command": "npx", "args": ["srv"]}
    if value is not None:
        entry["inheritEnv"] = value
    server = parse_config({"mcpServers": {"s": entry}}, environ={}).servers["s"]
    assert server.inherit_env == parsed
    back = parse_config({"mcpServers": {"s": server.to_json()}}, environ={}).servers["s"]
    assert back == server
    assert ("inheritEnv" in server.to_json()) == (parsed is not True)
    others = {True, False, ("X",)} - {parsed}
    for other in others:
        changed = ServerConfig(name="s", command="npx", args=["srv"], inherit_env=other)
        assert changed.connection_key() != server.connection_key()


@pytest.mark.parametrize("value", ["PATH", 1, [True], {"A": True}])
def test_inherit_env_of_the_wrong_shape_is_an_error(value: Any) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config({"mcpServers": {"s": {"command": "x", "inheritEnv": value}}}, environ={})
    assert any("inheritEnv" in issue.path for issue in info.value.issues)


def test_connection_key_ignores_policy_fields() -> None:
    a = ServerConfig(name="a", command="x", timeout=10, always_allow=["t"])
    b = ServerConfig(name="a", command="x", timeout=99, exclude_tools=["z"])
    c = ServerConfig(name="a", command="x", args=["--v2"])
    assert a.connection_key() == b.connection_key() != c.connection_key()
    assert a != b


# -- any document: a config or a ConfigError, nothing else ---------------------------------------

_KEYS = sorted(
    {"type", "transportType", "command", "args", "env", "cwd", "url", "serverUrl", "httpUrl"}
    | {"headers", "disabled", "timeout", "startupTimeout", "alwaysAllow", "autoApprove"}
    | {"disabledTools", "watchPaths", "includeTools", "excludeTools", "oauth", "trust"}
    | {"authProviderType", "autoConnect", "name", "envFile", "unknownKey", "inheritEnv"}
)
_OAUTH_KEYS = ["enabled", "clientId", "clientSecret", "scopes", "redirectUri", "callbackPort"]
_odd_numbers = st.sampled_from(
    [10**400, -(10**400), float("nan"), float("inf"), -0.0, 1e308, 2**63, 0.0005]
)
_plausible = st.one_of(
    st.sampled_from(["node", "", " ", "stdio", "sse", "http", "30s", "1.5h", "99999ms"]),
    st.sampled_from(["http://127.0.0.1:9/mcp", "https://x.example/mcp", "ftp://x", "${HOME}"]),
    st.sampled_from(["$HOME", "${input:k}", "${", "${NOPE}", "${A:-b}", "a\nb", "x\x00y"]),
    _odd_numbers,
    st.lists(st.one_of(st.text(max_size=5), st.integers(), _odd_numbers), max_size=3),
    st.dictionaries(
        st.text(max_size=5), st.one_of(st.text(max_size=5), _odd_numbers, st.none()), max_size=3
    ),
)


@st.composite
def _entries(draw: st.DrawFn) -> dict[str, Any]:
    values = st.one_of(_plausible, json_values)
    entry = draw(st.dictionaries(st.sampled_from(_KEYS), values, max_size=8))
    if draw(st.booleans()):
        entry["oauth"] = draw(
            st.one_of(values, st.dictionaries(st.sampled_from(_OAUTH_KEYS), values, max_size=4))
        )
    return entry


@st.composite
def _documents(draw: st.DrawFn) -> Any:
    entries = st.one_of(_entries(), json_values)
    shape = draw(st.sampled_from(["mcpServers", "servers", "connections", "any"]))
    if shape == "connections":
        return {"connections": draw(st.lists(entries, max_size=3))}
    if shape == "any":
        return draw(json_values)
    return {shape: draw(st.dictionaries(st.text(max_size=6), entries, max_size=3))}


@settings(max_examples=300, deadline=None)
@given(
    document=_documents(),
    dialect=st.sampled_from(["auto", "claude", "gemini", "vscode", "connections"]),
)
@example(document={"mcpServers": {"s": {"command": "x", "timeout": 10**400}}}, dialect="gemini")
@example(document={"mcpServers": {"s": {"command": "x", "timeout": 2**1100}}}, dialect="claude")
def test_any_document_is_a_config_or_a_config_error_naming_where(
    document: Any, dialect: str
) -> None:
    try:
        loaded = parse_config(document, file="<fuzz>", dialect=dialect, environ={"HOME": "/h"})
    except ConfigError as exc:
        refused: ConfigError | None = exc
    else:
        refused = None
    if refused is not None:
        assert refused.issues
        for issue in refused.issues:
            assert issue.file == "<fuzz>"
            assert issue.path.startswith("$")
            assert issue.message
        return
    for name, server in loaded.servers.items():
        assert server.name == name
        assert server.transport in ("stdio", "sse", "http")
        assert 1.0 <= server.timeout <= 3600.0
        assert server.startup_timeout is None or 1.0 <= server.startup_timeout <= 3600.0
        json.dumps(server.to_json(redact=True), allow_nan=False)  # shown by the hub's CLI
    for issue in loaded.warnings:
        assert issue.path.startswith("$")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000, "nested too deeply"),
        ('{"a": 1' + "0" * 5000 + "}", "not valid JSON"),
        ('{"mcpServers": {"s": {"command": "x", "args": [NaN]}}}', "NaN is not a JSON value"),
        ('{"mcpServers": {"s": {"timeout": -Infinity}}}', "-Infinity is not a JSON value"),
        ('{"mcpServers": {"s": {"command": "x", "timeout": 1e999}}}', "1e999 is out of range"),
        ('{"mcpServers": {"s": {"command": "x", "timeout": 1' + "0" * 400 + "}}}", "between"),
    ],
)
def test_documents_past_what_json_can_hold_are_config_errors(
    tmp_path: Path, text: str, message: str
) -> None:
    (tmp_path / "c.json").write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(tmp_path / "c.json")
