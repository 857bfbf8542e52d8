"""``mcpwire`` against a URL that is no MCP endpoint: exit status 3, not 1.

Contract (design.md): exit 1 means the server answered with an error; 3 that
the command could not connect. A URL whose server answers the handshake with
no JSON-RPC answer at all (404, 405, 501, an HTML page) was never connected
to: after the era probe (``server/discover``), ``initialize`` and, for 404 and
405, the HTTP+SSE fallback have all failed, the command exits 3 and says which
status came back from which URL. A JSON-RPC error the server sent to the
handshake is its answer, and still exits 1; a 404 to the probe alone only
moves on to ``initialize``. Once connected, an answer the client had to make
up (``TransportError``: a bare 502, a body that is no JSON-RPC answer, one cut
off) is no answer from the server either: exit 3, naming the status or cause;
a JSON-RPC error the server sent stays 1. Scripted servers
(``tests/http_client/rawserver.py``); the command line runs as ``python -m
mcpwire``, on both anyio backends.
"""

from __future__ import annotations

import inspect
import json
import sys
from typing import Any

import anyio
import pytest
from http_client.rawserver import Reply, Seen, raw_server, result
from test_transport_errors import scripted

pytestmark = pytest.mark.anyio

INIT_RESULT = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "raw", "version": "0"},
}
HTML = b"<html><body>Welcome</body></html>"


async def run_cli(
    reply: Any, *args: str, path: str = "/notmcp", command: tuple[str, ...] = ("inspect",)
) -> tuple[int, str, str, Any]:
    """``mcpwire inspect URL *args`` (or another ``command``) against a server
    answering with ``reply(seen)``: exit status, stdout, stderr, and what the
    server saw."""

    async def handler(seen: Seen) -> Reply:
        answer = reply(seen)
        return await answer if inspect.isawaitable(answer) else answer  # type: ignore[no-any-return]

    async with raw_server(handler) as server:
        url = server.url.replace("/mcp", path)
        with anyio.fail_after(30):
            proc = await anyio.run_process(
                [sys.executable, "-m", "mcpwire", command[0], url, *command[1:], *args],
                check=False,
            )
        seen = [(s.method, s.rpc_method) for s in server.seen]
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode(), (url, seen)


@pytest.mark.parametrize(
    ("status", "reply"),
    [
        (404, lambda seen: Reply.text(404, "Not Found")),
        (405, lambda seen: Reply.text(405, "Method Not Allowed")),
        (501, lambda seen: Reply.text(501, "Not Implemented")),
        (
            200,
            lambda seen: Reply(
                200, [("Content-Type", "text/html"), ("Content-Length", str(len(HTML)))], [HTML]
            ),
        ),
    ],
    ids=["404", "405", "501", "html-200"],
)
async def test_a_url_that_is_no_mcp_endpoint_exits_3(status: int, reply: Any) -> None:
    code, _, stderr, (url, seen) = await run_cli(reply)
    assert code == 3, stderr
    assert stderr.startswith(f"mcpwire: could not connect: no MCP server answered at {url}: ")
    assert f"HTTP {status}" in stderr
    # Every era was tried before giving up.
    assert ("POST", "server/discover") in seen and ("POST", "initialize") in seen
    if status in (404, 405):
        assert ("GET", None) in seen  # the HTTP+SSE fallback


async def test_json_output_says_could_not_connect_with_the_status() -> None:
    code, stdout, _, _ = await run_cli(lambda seen: Reply.text(404, "Not Found"), "--json")
    assert code == 3
    error = json.loads(stdout)["error"]
    assert error["kind"] == "could not connect"
    assert error["data"]["httpStatus"] == 404
    assert "code" not in error  # the client's own error has no JSON-RPC code to show


@pytest.mark.parametrize("status", [200, 400])
async def test_a_handshake_error_the_server_sent_still_exits_1(status: int) -> None:
    def reply(seen: Seen) -> Reply:
        refusal = {"code": -32602, "message": "this server refuses you"}
        return Reply.json({"jsonrpc": "2.0", "id": seen.json["id"], "error": refusal}, status)

    code, _, stderr, _ = await run_cli(reply, path="/mcp")
    assert code == 1, stderr
    assert "server error: [-32602] this server refuses you" in stderr


async def test_a_404_to_the_era_probe_alone_moves_on_to_initialize() -> None:
    def reply(seen: Seen) -> Reply:
        if seen.method != "POST":
            return Reply.empty(405)
        if seen.rpc_method == "server/discover":
            return Reply.text(404, "Not Found")
        if seen.rpc_method == "initialize":
            return Reply.json(result(seen.json["id"], INIT_RESULT))
        if "id" not in seen.json:
            return Reply.empty(202)
        return Reply.json(result(seen.json["id"], {"tools": []}))

    code, stdout, stderr, (_, seen) = await run_cli(reply, "--json", path="/mcp")
    assert code == 0, stderr
    assert json.loads(stdout)["protocolVersion"] == "2025-11-25"
    assert seen[:2] == [("POST", "server/discover"), ("POST", "initialize")]


async def test_a_pinned_modern_probe_answered_with_a_404_exits_3() -> None:
    code, _, stderr, (url, seen) = await run_cli(
        lambda seen: Reply.text(404, "Not Found"), "--mode", "2026-07-28"
    )
    assert code == 3, stderr
    assert f"no MCP server answered at {url}: " in stderr and "HTTP 404" in stderr
    assert seen == [("POST", "server/discover")]


#: Answers to ``tools/call`` (and ``tools/list``) that hold no JSON-RPC answer, and
#: what the message names.
MADE_UP = {
    "bare-502": (lambda: Reply.text(502, "Bad Gateway"), "HTTP 502"),
    "empty-502": (lambda: Reply.empty(502), "HTTP 502"),
    "html-200": (
        lambda: Reply(
            200, [("Content-Type", "text/html"), ("Content-Length", str(len(HTML)))], [HTML]
        ),
        "text/html",
    ),
    "cut-body": (
        lambda: Reply(
            200,
            [("Content-Type", "application/json"), ("Content-Length", "100")],
            [b'{"jsonrpc":'],
            cut=True,
        ),
        "HTTP 200",
    ),
}


def after_handshake(method: str, failure: Any) -> Any:
    """A legacy server (404 to the era probe) that handshakes properly and gives
    ``method`` ``failure()``, every other request an empty list."""

    def answer(seen: Seen) -> Reply:
        if seen.rpc_method == "server/discover":
            return Reply.text(404, "Not Found")
        if seen.rpc_method == method:
            return failure()  # type: ignore[no-any-return]
        return Reply.json(result(seen.json["id"], {"tools": [], "resources": []}))

    return scripted(answer)


CALL = ("call", "t", "--args", "{}")


@pytest.mark.parametrize("json_output", [False, True], ids=["human", "json"])
@pytest.mark.parametrize("made_up", list(MADE_UP))
async def test_a_made_up_answer_to_the_call_after_the_handshake_exits_3(
    made_up: str, json_output: bool
) -> None:
    failure, named = MADE_UP[made_up]
    extra = ("--json",) if json_output else ()
    code, stdout, stderr, (_, seen) = await run_cli(
        after_handshake("tools/call", failure), *extra, path="/mcp", command=CALL
    )
    assert code == 3, stderr
    assert ("POST", "initialize") in seen and ("POST", "tools/call") in seen
    assert stderr.startswith("mcpwire: no answer from the server: "), stderr
    assert "tools/call" in stderr and named in stderr
    if json_output:
        error = json.loads(stdout)["error"]
        assert error["kind"] == "no answer from the server"
        assert "tools/call" in error["message"] and named in error["message"]
        assert "code" not in error  # the client's own error has no JSON-RPC code to show
        if made_up.endswith("502"):
            assert error["data"]["httpStatus"] == 502
    else:
        assert stdout == ""


async def test_an_error_the_server_sent_to_the_call_on_a_502_still_exits_1() -> None:
    def failure_for(seen: Seen) -> Reply:
        refusal = {"code": -32000, "message": "upstream is down"}
        return Reply.json({"jsonrpc": "2.0", "id": seen.json["id"], "error": refusal}, 502)

    def answer(seen: Seen) -> Reply:
        if seen.rpc_method == "server/discover":
            return Reply.text(404, "Not Found")
        return failure_for(seen)

    code, _, stderr, _ = await run_cli(scripted(answer), path="/mcp", command=CALL)
    assert code == 1, stderr
    assert "server error: [-32000] upstream is down" in stderr


async def test_inspect_with_a_list_that_got_a_made_up_answer_exits_3() -> None:
    code, stdout, stderr, _ = await run_cli(
        after_handshake("tools/list", lambda: Reply.text(502, "Bad Gateway")), "--json", path="/mcp"
    )
    assert code == 3, stderr
    assert "mcpwire: no answer from the server listing tools: tools/list: " in stderr
    assert "HTTP 502" in stderr
    report = json.loads(stdout)
    error = report["tools"]["error"]
    assert error["kind"] == "no answer from the server" and "code" not in error
    assert error["data"]["httpStatus"] == 502
    assert report["resources"] == []  # the rest of the report is there
