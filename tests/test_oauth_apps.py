"""OAuth in the hub and the command line, end to end against a real peer.

The peer is the reference SDK as an authorization server and protected
resource (``tests/http_client/ref_auth_server.py``, in a child process). The
person in the loop is played by ``browse``: it does what a browser does with
the authorization URL the hub or the command line shows (the server approves
at once and redirects), then follows that redirect to the loopback redirect
URI the hub or the command line listens on (RFC 8252 §7.3).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import anyio
import pytest
from http_client.child import ROOT, ChildServer
from inproc import until_listening

from mcpwire import Hub, ServerConfig, headless_redirect_handler
from mcpwire._hub_config import OAuthSettings
from mcpwire._hub_dialects import parse_config

pytestmark = pytest.mark.anyio


async def browse(url: str) -> None:
    """The user's browser: to the authorization server, then back to the redirect URI."""
    location = await headless_redirect_handler()(url)
    target = urlsplit(location)
    assert target.hostname == "127.0.0.1"
    assert target.port is not None
    async with await anyio.connect_tcp(target.hostname, target.port) as stream:
        head = f"GET {target.path}?{target.query} HTTP/1.1\r\nHost: {target.netloc}\r\n\r\n"
        await stream.send(head.encode())
        answer = b""
        with anyio.fail_after(10):
            while True:
                try:
                    answer += await stream.receive()
                except anyio.EndOfStream:
                    break
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]


async def browse_later(url: str, delay: float) -> None:
    await anyio.sleep(delay)
    await browse(url)


async def test_hub_authorizes_an_oauth_server_through_its_hook(sdk_auth: ChildServer) -> None:
    shown: list[tuple[str, str]] = []

    async def authorize(server: str, url: str) -> None:
        shown.append((server, url))
        await browse(url)

    config = ServerConfig(name="secured", url=sdk_auth.url, oauth=OAuthSettings())
    async with Hub(servers=[config], watch=False, authorize=authorize) as hub:
        await hub.wait_ready(timeout=30)
        [status] = hub.statuses()
        assert status.state == "ready", status
        assert "secured__stats" in {tool.name for tool in hub.tools()}
        result = await hub.call_tool("secured__stats", {})
    assert [server for server, _ in shown] == ["secured"]
    url = shown[0][1]
    assert "code_challenge_method=S256" in url
    assert "redirect_uri=http%3A%2F%2F127.0.0.1%3A" in url
    assert isinstance(result.structured, dict)
    assert result.structured["registrations"] >= 1


async def test_hub_keeps_tokens_in_its_token_store_across_runs(
    sdk_auth: ChildServer, tmp_path: Path
) -> None:
    store = tmp_path / "hub-tokens.json"
    shown: list[str] = []

    async def authorize(server: str, url: str) -> None:
        shown.append(url)
        await browse(url)

    config = ServerConfig(name="secured", url=sdk_auth.url, oauth=OAuthSettings())
    for _ in range(2):
        async with Hub(
            servers=[config], watch=False, authorize=authorize, token_store=store
        ) as hub:
            await hub.wait_ready(timeout=30)
            assert [s.state for s in hub.statuses()] == ["ready"]
    assert len(shown) == 1  # the second hub used the stored token
    assert stat.S_IMODE(store.stat().st_mode) == 0o600
    assert sdk_auth.url in json.loads(store.read_text())["tokens"]


async def test_hub_user_step_does_not_count_against_the_startup_timeout(
    sdk_auth: ChildServer,
) -> None:
    """A person takes longer than the server's startup timeout to authorize: the
    start waits for them (bounded by authorize_timeout), then finishes."""

    async def slow_user(server: str, url: str) -> None:
        await anyio.sleep(2.5)
        await browse(url)

    config = ServerConfig(
        name="secured", url=sdk_auth.url, oauth=OAuthSettings(), startup_timeout=1.0
    )
    async with Hub(servers=[config], watch=False, authorize=slow_user) as hub:
        await hub.wait_ready(timeout=20)
        assert [s.state for s in hub.statuses()] == ["ready"]


async def test_hub_authorize_timeout_bounds_the_user_step(sdk_auth: ChildServer) -> None:
    async def absent_user(server: str, url: str) -> None:
        await anyio.sleep_forever()

    config = ServerConfig(
        name="secured", url=sdk_auth.url, oauth=OAuthSettings(), startup_timeout=1.0
    )
    hub = Hub(servers=[config], watch=False, authorize=absent_user, authorize_timeout=0.5)
    with anyio.fail_after(20):
        async with hub:
            with anyio.move_on_after(4):
                await hub.wait_ready(timeout=4)
            [status] = hub.statuses()
    assert status.state != "ready"
    assert status.last_error is not None
    assert "no authorization response" in status.last_error, status.last_error


async def test_hub_without_a_hook_logs_the_url_and_the_server_fails_to_start(
    sdk_auth: ChildServer, caplog: pytest.LogCaptureFixture
) -> None:
    config = ServerConfig(
        name="secured", url=sdk_auth.url, oauth=OAuthSettings(), startup_timeout=1.0
    )
    # Closing the hub stops the flow waiting for a user who never comes, at once.
    with anyio.fail_after(20):
        async with Hub(servers=[config], watch=False) as hub:
            with anyio.move_on_after(3):
                await hub.wait_ready(timeout=3)
            [status] = hub.statuses()
            assert status.state != "ready"
    assert any("needs authorization: open http" in r.getMessage() for r in caplog.records)


def test_config_dialects_read_oauth() -> None:
    doc = {
        "mcpServers": {
            "gemini": {
                "httpUrl": "https://mcp.example/mcp",
                "oauth": {
                    "enabled": True,
                    "clientId": "${CID}",
                    "clientSecret": "s",
                    "scopes": ["a", "b"],
                    "redirectUri": "http://localhost:7777/oauth/callback",
                    "tokenUrl": "https://as.example/token",
                },
            },
            "discovery": {
                "url": "https://mcp.example/mcp",
                "authProviderType": "dynamic_discovery",
            },
            "off": {"url": "https://mcp.example/mcp", "oauth": {"enabled": False}},
        }
    }
    loaded = parse_config(doc, environ={"CID": "client-7"}, dialect="gemini")
    oauth = loaded.servers["gemini"].oauth
    assert oauth == OAuthSettings(
        client_id="client-7",
        client_secret="s",
        scopes=("a", "b"),
        callback_host="localhost",
        callback_port=7777,
        callback_path="/oauth/callback",
    )
    assert loaded.servers["discovery"].oauth == OAuthSettings()
    assert loaded.servers["off"].oauth is None
    assert any("endpoints are discovered" in w.message for w in loaded.warnings)
    redacted = loaded.servers["gemini"].to_json(redact=True)
    assert redacted["oauth"]["clientSecret"] == "***"
    assert redacted["oauth"]["redirectUri"] == "http://localhost:7777/oauth/callback"


@pytest.mark.parametrize(
    ("oauth", "words"),
    [
        ("yes", "must be an object"),
        ({"redirectUri": "https://app.example/cb"}, "loopback http URI"),
        ({"redirectUri": "http://127.0.0.1/cb"}, "loopback http URI"),  # no port
        ({"callbackPort": 70000}, "TCP port"),
        ({"scopes": "a b"}, "list of strings"),
        ({"enabled": "yes"}, "true or false"),
    ],
)
def test_bad_oauth_config_is_an_error(oauth: object, words: str) -> None:
    from mcpwire import ConfigError

    doc = {"mcpServers": {"s": {"url": "https://mcp.example/mcp", "oauth": oauth}}}
    with pytest.raises(ConfigError, match=words):
        parse_config(doc)


def test_unknown_auth_provider_is_an_error_and_google_a_warning() -> None:
    from mcpwire import ConfigError

    doc = {"mcpServers": {"s": {"url": "https://m.example/mcp", "authProviderType": "magic"}}}
    with pytest.raises(ConfigError, match="dynamic_discovery"):
        parse_config(doc)
    doc = {
        "mcpServers": {
            "s": {"url": "https://m.example/mcp", "authProviderType": "google_credentials"}
        }
    }
    loaded = parse_config(doc)
    assert loaded.servers["s"].oauth is None
    assert any("not supported" in w.message for w in loaded.warnings)


async def cli_with_browser(*argv: str, delay: float = 0.0) -> tuple[int, str, str, list[str]]:
    """Run the command line; browse to every authorization URL it prints (after
    ``delay`` seconds, as a person reading it would)."""
    shown: list[str] = []
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    async with await anyio.open_process(
        [sys.executable, "-m", "mcpwire", *argv], env=env, cwd=ROOT
    ) as proc:
        assert proc.stdout is not None
        assert proc.stderr is not None
        out, err = b"", b""

        async def read_out() -> None:
            nonlocal out
            async for chunk in proc.stdout:  # type: ignore[union-attr]
                out += chunk

        async with anyio.create_task_group() as tg:
            tg.start_soon(read_out)
            with anyio.fail_after(60):
                async for chunk in proc.stderr:
                    err += chunk
                    lines = err.decode().splitlines()
                    for i, line in enumerate(lines):
                        if line.endswith("needs authorization; open this URL:") and i + 1 < len(
                            lines
                        ):
                            url = lines[i + 1].strip()
                            if url not in shown:
                                shown.append(url)
                                tg.start_soon(browse_later, url, delay)
        code = await proc.wait()
    return code, out.decode(), err.decode(), shown


async def test_cli_inspect_with_oauth_and_a_token_store(
    sdk_auth: ChildServer, tmp_path: Path
) -> None:
    store = tmp_path / "cli-tokens.json"
    argv = ("inspect", sdk_auth.url, "--json", "--oauth", "--token-store", str(store))
    code, out, err, shown = await cli_with_browser(*argv)
    assert code == 0, err
    assert len(shown) == 1
    assert "stats" in {tool["name"] for tool in json.loads(out)["tools"]}
    # Again: the stored token is used, nobody is asked.
    code, out, err, shown = await cli_with_browser(*argv)
    assert code == 0, err
    assert shown == []


async def test_cli_token_store_keeps_the_registered_redirect_port(
    sdk_auth: ChildServer, tmp_path: Path
) -> None:
    """A client registered by an earlier run (its redirect URI names a port) is
    used again when a later run must authorize anew; the reference authorization
    server matches redirect URIs exactly, so the later run listens on the port
    the registration names, kept in the token store."""
    store = tmp_path / "cli-tokens.json"
    argv = ("inspect", sdk_auth.url, "--json", "--oauth", "--token-store", str(store))
    code, _, err, first = await cli_with_browser(*argv)
    assert code == 0, err
    doc = json.loads(store.read_text())
    del doc["tokens"][sdk_auth.url]  # the tokens are gone (say, revoked); the client stays
    store.write_text(json.dumps(doc))
    code, _, err, second = await cli_with_browser(*argv)
    assert code == 0, err
    assert len(first) == len(second) == 1

    def redirect(url: str) -> str:
        return dict(parse_qsl(urlsplit(url).query))["redirect_uri"]

    assert redirect(second[0]) == redirect(first[0])
    assert (
        dict(parse_qsl(urlsplit(second[0]).query))["client_id"]
        == dict(parse_qsl(urlsplit(first[0]).query))["client_id"]
    )


async def test_cli_token_store_refreshes_an_expired_token_in_a_later_run(
    sdk_short: ChildServer, tmp_path: Path
) -> None:
    """The next process finds the access token expired and refreshes it (after
    discovering the authorization server again) instead of asking the user."""
    store = tmp_path / "cli-tokens.json"
    argv = ("inspect", sdk_short.url, "--json", "--oauth", "--token-store", str(store))
    code, _, err, shown = await cli_with_browser(*argv)
    assert code == 0, err
    assert len(shown) == 1
    first = json.loads(store.read_text())["tokens"][sdk_short.url]
    await anyio.sleep(1.5)
    code, out, err, shown = await cli_with_browser(*argv)
    assert code == 0, err
    assert shown == []
    assert "stats" in {tool["name"] for tool in json.loads(out)["tools"]}
    second = json.loads(store.read_text())["tokens"][sdk_short.url]
    assert second["access_token"] != first["access_token"]
    assert second["refresh_token"] != first["refresh_token"]  # the server rotates them


async def test_cli_user_slower_than_the_request_timeout(sdk_auth: ChildServer) -> None:
    """The person takes longer than --timeout (and the era probe's shorter one):
    time in the authorization flow is not the request's, so the one URL shown
    stays good and the command succeeds."""
    code, out, err, shown = await cli_with_browser(
        "inspect", sdk_auth.url, "--json", "--oauth", "--timeout", "1.5", delay=3.0
    )
    assert code == 0, err
    assert len(shown) == 1
    assert "stats" in {tool["name"] for tool in json.loads(out)["tools"]}


async def test_cli_call_from_a_config_entry_with_oauth(
    sdk_auth: ChildServer, tmp_path: Path
) -> None:
    config = tmp_path / "mcp.json"
    entry = {"url": sdk_auth.url, "oauth": {"enabled": True, "scopes": ["mcp:read"]}}
    config.write_text(json.dumps({"mcpServers": {"secured": entry}}))
    code, out, err, shown = await cli_with_browser(
        "call", "stats", "--json", "--config", str(config), "--server", "secured"
    )
    assert code == 0, err
    assert "registrations" in json.loads(out)["structuredContent"]
    assert len(shown) == 1
    assert "scope=mcp%3Aread" in shown[0]


async def test_cli_oauth_options_need_a_url_target() -> None:
    code, _, err, _ = await cli_with_browser("inspect", "--oauth", "--", sys.executable, "-c", "")
    assert code == 2
    assert "OAuth options apply to URL targets only" in err


async def test_cli_serve_as_a_protected_resource(tmp_path: Path) -> None:
    """``mcpwire serve --auth-server --introspect``: the example server behind OAuth,
    tokens checked at the reference SDK's authorization server, reached by
    mcpwire's OAuth client through the whole flow."""
    from http_auth_as import RS_CLIENT_ID, RS_CLIENT_SECRET, AuthServer
    from http_client.child import free_port

    from mcpwire import Client, OAuthClient

    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    with AuthServer() as auth_server:
        env = {**os.environ, "MCPWIRE_INTROSPECTION_SECRET": RS_CLIENT_SECRET}
        argv = [
            *(sys.executable, "-m", "mcpwire", "serve", "mcpwire.examples.everything:server"),
            *("--transport", "http", "--port", str(port)),
            *("--auth-server", auth_server.issuer + "/", "--introspect"),
            *(auth_server.introspection_url, "--introspect-client-id", RS_CLIENT_ID),
            *("--required-scope", "mcp:read"),
        ]
        async with await anyio.open_process(argv, env=env, cwd=ROOT) as proc:
            try:
                with anyio.fail_after(30):
                    await until_listening(port, 30)
                    auth = OAuthClient(redirect_handler=headless_redirect_handler())
                    async with Client.http(url, auth=auth) as client:
                        result = await client.call_tool("echo", {"message": "hi"})
                        assert "hi" in (result.text or "")
                assert auth_server.provider.introspections >= 1
            finally:
                proc.terminate()
    assert await proc.wait() is not None


HTTP = ("--transport", "http", "--port", "0")
ISSUER = ("--auth-server", "https://a.example")


@pytest.mark.parametrize(
    ("more", "words"),
    [
        (ISSUER, "apply to --transport http or sse"),
        ((*HTTP, *ISSUER), "--auth-server and --introspect go together"),
        ((*HTTP, "--introspect", "https://a.example/i"), "go together"),
        ((*HTTP, *ISSUER, "--introspect", "http://a.example/i"), "must use https"),
        (
            (*HTTP, *ISSUER, "--introspect", "https://a.example/i", "--introspect-client-id", "x"),
            "needs its secret in $MCPWIRE_INTROSPECTION_SECRET",
        ),
    ],
)
async def test_cli_serve_oauth_options_are_checked(
    more: tuple[str, ...], words: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCPWIRE_INTROSPECTION_SECRET", raising=False)
    code, _, err, _ = await cli_with_browser("serve", "mcpwire.examples.everything:server", *more)
    assert code == 2
    assert words in err
