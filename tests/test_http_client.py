"""The HTTP client transports: Streamable HTTP (both eras) and the deprecated HTTP+SSE.

1. Against the reference SDK (``mcp==2.3.0``) served by uvicorn in a child process
   (``tests/http_client/ref_http_server.py``, loopback, a free port): our ``Client.http``
   in modes ``auto`` (must land on 2026-07-28), ``legacy`` and a pinned ``2026-07-28``,
   through tools, progress, elicitation (legacy: a server->client request on the POST's
   event stream; modern: ``InputRequiredResult``), resources, prompts, completion,
   ``x-mcp-header``, cancellation, subscriptions; the session lost (DELETEd, or the server
   restarted) and re-initialized; the SDK's HTTP+SSE server, by fallback and directly.
2. Against scripted servers (``tests/http_client/rawserver.py``, h11 on loopback) for
   what the SDK never does: empty and ``null`` acknowledgements, media-type parameters,
   events split byte by byte, redirects, HTTP errors, oversized bodies, event-stream
   reconnection with ``Last-Event-ID`` and ``retry``, giving up, resumption of a POST
   stream, header escaping, keep-alive.
3. The command line against the SDK server, and against nothing.

Everything runs on both anyio backends (``anyio_backend`` in ``conftest.py``).
"""

from __future__ import annotations

import contextvars
import json
import re
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from http_client.child import ROOT, ChildServer, free_port
from http_client.rawserver import Reply, Seen, event, raw_server, result, self_signed
from hypothesis import given
from hypothesis import strategies as st

from mcpwire import (
    Client,
    ConnectionClosed,
    JSONRPCError,
    RemoteProtocolError,
    RequestTimeout,
    TransportError,
)
from mcpwire._aio_stream import JOIN_LIMIT
from mcpwire._asks import ORIGIN
from mcpwire._http_client import HTTPClientTransport, open_http_transport
from mcpwire._http_client_base import MAX_BACKOFF, MAX_ORIGINS, backoff_delay, repeatable
from mcpwire._http_client_conn import URL, HTTPClient, InvalidRequest, RedirectRefused
from mcpwire._http_client_headers import encode_header_value, media_type, tool_header_map
from mcpwire._http_client_sock import ProtocolSocket
from mcpwire._http_client_sse import SSEClientTransport
from mcpwire.sansio import Notification, Request, Response
from mcpwire.sansio._codec import Limits
from mcpwire.sansio._sse import SSEDecoder

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).resolve().parent / "http_client" / "ref_http_server.py"
MODERN = "2026-07-28"
LEGACY = "2025-11-25"


class SdkServer(ChildServer):
    """The reference SDK server in a child process, restartable on the same port."""

    def __init__(self, kind: str, tmp: Path) -> None:
        super().__init__(SERVER, [kind], tmp, path="/sse" if kind == "sse" else "/mcp")
        self.kind = kind


@pytest.fixture(scope="module")
def sdk_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SdkServer]:
    server = SdkServer("streamable-http", tmp_path_factory.mktemp("sdk"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def sdk_sse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SdkServer]:
    server = SdkServer("sse", tmp_path_factory.mktemp("sdk"))
    server.start()
    yield server
    server.stop()


async def elicit(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": "Ada"}}


async def exercise(c: Client, *, progress_expected: bool = True, asks: bool = True) -> None:
    """Tools, progress, elicitation, resources, prompts and completion, every value checked."""
    tools = {t.name: t for t in await c.list_tools()}
    assert {"echo", "get_weather", "slow_count", "greet", "sleepy", "locate"} <= set(tools)
    assert tools["echo"].input_schema["properties"]["message"]["type"] == "string"
    r = await c.call_tool("echo", {"message": "hi there ü"})
    assert (r.text, r.structured, r.is_error) == ("hi there ü", {"result": "hi there ü"}, False)
    r = await c.call_tool("get_weather", {"city": "Paris"})
    assert r.structured == {"city": "Paris", "temperature": 21.5, "conditions": "sunny"}

    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, total, message))

    r = await c.call_tool("slow_count", {"n": 3}, on_progress=on_progress)
    assert r.text == "counted 3"
    if progress_expected:
        assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]

    if asks:
        r = await c.call_tool("greet", {})
        assert r.text == "Hello, Ada"

    resources = await c.list_resources()
    assert [x.uri for x in resources] == ["config://app"]
    templates = await c.list_resource_templates()
    assert [t.uri_template for t in templates] == ["users://{user_id}/profile"]
    (content,) = await c.read_resource("config://app")
    assert (content.text, content.mime_type) == ('{"debug": false}', "application/json")
    (content,) = await c.read_resource("users://ada/profile")
    assert content.text == "profile of ada"
    with pytest.raises(JSONRPCError):
        await c.read_resource("nothing://here")

    prompts = await c.list_prompts()
    assert [p.name for p in prompts] == ["review"]
    prompt = await c.get_prompt("review", {"code": "x = 1", "language": "rust"})
    assert prompt.messages[0]["content"]["text"] == "Please review this rust code:\nx = 1"
    done = await c.complete({"type": "ref/prompt", "name": "review"}, "language", "r")
    assert done.values == ["rust"]


# =================================================================================================
# 1. The reference SDK server
# =================================================================================================


@pytest.mark.parametrize(
    ("mode", "version"), [("auto", MODERN), ("legacy", LEGACY), (MODERN, MODERN)]
)
async def test_sdk_streamable_http(sdk_http: SdkServer, mode: str, version: str) -> None:
    async with Client.http(sdk_http.url, mode=mode, elicitation=elicit) as c:
        assert (c.era, c.protocol_version) == ("modern" if version == MODERN else "legacy", version)
        if mode != MODERN:
            assert c.server_info == {"name": "ref-server", "version": "1.2.3"}
            assert c.instructions == "reference server"
        transport = c.transport
        assert isinstance(transport, HTTPClientTransport)
        if version == LEGACY:
            assert transport.session_id and transport.protocol_version == LEGACY
        else:
            assert transport.session_id is None and transport.protocol_version is None
        await exercise(c)
        # A handful of sockets however many exchanges: keep-alive works.
        assert transport.http.connections_opened <= 4


async def test_sdk_elicitation_legacy_is_a_server_request(sdk_http: SdkServer) -> None:
    """Legacy: the ask arrives as ``elicitation/create`` on the call's own event stream."""
    asked: list[dict[str, Any]] = []

    async def record(params: dict[str, Any]) -> dict[str, Any]:
        asked.append(params)
        return {"action": "decline"}

    async with Client.http(sdk_http.url, mode="legacy", elicitation=record) as c:
        r = await c.call_tool("greet", {})
        assert r.is_error
        assert asked[0]["message"] == "What is your name?"


async def test_sdk_ask_knows_the_call_it_came_with(sdk_http: SdkServer) -> None:
    """Legacy: each ask comes on its call's event stream, so while it is answered
    ``ORIGIN`` is the context of the caller that made that call, however many
    calls are in flight (the hub's relay routes asks by it)."""
    caller: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="none")
    asked_by: list[str] = []

    async def record(params: dict[str, Any]) -> dict[str, Any]:
        origin = ORIGIN.get()
        assert origin is not None
        asked_by.append(origin.get(caller, "unknown"))
        await anyio.sleep(0.2)  # the other call's ask arrives meanwhile
        return {"action": "decline"}

    async with Client.http(sdk_http.url, mode="legacy", elicitation=record) as c:

        async def call(name: str) -> None:
            caller.set(name)
            assert (await c.call_tool("greet", {})).is_error

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                for name in ("first", "second", "third"):
                    tg.start_soon(call, name)
        assert ORIGIN.get() is None
        assert sorted(asked_by) == ["first", "second", "third"]
        assert c.transport._origins == {}  # type: ignore[attr-defined]


async def test_origins_are_bounded() -> None:
    """An origin is kept until the session asks for it: at most ``MAX_ORIGINS``, the
    oldest dropped first; asked for once, and only for the very message."""
    async with HTTPClientTransport("http://127.0.0.1:9/mcp") as transport:
        notes = [Notification("notifications/message", {"n": n}) for n in range(MAX_ORIGINS + 10)]
        for note in notes:
            transport._note_origin(note)
        assert len(transport._origins) == MAX_ORIGINS
        assert transport.message_origin(notes[9]) is None
        assert transport.message_origin(notes[10]) is not None
        assert transport.message_origin(notes[10]) is None  # once
        assert transport.message_origin(Notification("notifications/message", {"n": 11})) is None


async def test_sdk_cancellation_closes_the_stream(sdk_http: SdkServer) -> None:
    for mode in ("auto", "legacy"):
        async with Client.http(sdk_http.url, mode=mode) as c:
            started = anyio.current_time()
            with pytest.raises(RequestTimeout):
                await c.call_tool("sleepy", {"seconds": 30}, timeout=0.3)
            assert anyio.current_time() - started < 5
            assert (await c.call_tool("echo", {"message": "still here"})).text == "still here"


async def test_sdk_x_mcp_header(sdk_http: SdkServer) -> None:
    async with Client.http(sdk_http.url) as c:
        # Not listed yet: the server refuses (-32020), the client re-lists and retries.
        r = await c.call_tool("locate", {"region": "eu west ü", "count": 3})
        assert r.text == "eu west ü:3"
        assert c.transport.tool_headers["locate"] == {  # type: ignore[attr-defined]
            ("region",): "Region",
            ("count",): "Count",
        }
        assert (await c.call_tool("locate", {"region": " padded "})).text == " padded :1"


async def test_sdk_listen(sdk_http: SdkServer) -> None:
    async with Client.http(sdk_http.url) as c, c.listen(tools=True, uris=["config://app"]) as sub:
        assert sub.honored == {"toolsListChanged": True, "resourceSubscriptions": ["config://app"]}
        await c.call_tool("touch", {})
        seen = []
        with anyio.fail_after(10):
            async for note in sub:
                seen.append(note.method)
                if len(seen) == 2:
                    break
        assert sorted(seen) == [
            "notifications/resources/updated",
            "notifications/tools/list_changed",
        ]


async def test_sdk_session_deleted_reinitializes_once(sdk_http: SdkServer) -> None:
    async with Client.http(sdk_http.url, mode="legacy") as c:
        transport = c.transport
        assert isinstance(transport, HTTPClientTransport)
        old = transport.session_id
        assert old is not None
        # End the session behind the client's back.
        response = await transport.http.request(
            "DELETE",
            transport.url,
            [("Mcp-Session-Id", old), ("MCP-Protocol-Version", LEGACY)],
        )
        assert response.status == 200
        await response.aclose()
        results: list[str] = []

        async def call(i: int) -> None:
            results.append((await c.call_tool("echo", {"message": str(i)})).text)

        async with anyio.create_task_group() as tg:
            for i in range(3):
                tg.start_soon(call, i)
        assert sorted(results) == ["0", "1", "2"]
        assert transport.session_id not in (None, old)
        assert transport._reinits == 1


async def test_sdk_server_restart(tmp_path: Path) -> None:
    server = SdkServer("streamable-http", tmp_path)
    server.start()
    try:
        async with Client.http(server.url, mode="legacy", reconnect_delay=0.2) as c:
            assert (await c.call_tool("echo", {"message": "before"})).text == "before"
            old = c.transport.session_id  # type: ignore[attr-defined]
            server.stop()
            server.start()
            assert (await c.call_tool("echo", {"message": "after"})).text == "after"
            assert c.transport.session_id not in (None, old)  # type: ignore[attr-defined]
    finally:
        server.stop()


async def test_sdk_sends_crlf_events(sdk_http: SdkServer) -> None:
    """The SDK frames events with CRLF; the decoder must (and does) take them."""
    http = HTTPClient()
    init = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "0"},
        },
    }
    response = await http.request(
        "POST",
        URL.parse(sdk_http.url),
        [("Accept", "application/json, text/event-stream"), ("Content-Type", "application/json")],
        json.dumps(init).encode(),
    )
    async with response:
        assert response.media_type == "text/event-stream"
        body = await response.read_body(1 << 20)
    await http.aclose()
    assert b"\r\n" in body
    (message,) = SSEDecoder().feed(body)
    assert json.loads(message.data)["result"]["protocolVersion"] == LEGACY


@pytest.mark.parametrize("transport", ["auto", "sse"])
async def test_sdk_http_sse(sdk_sse: SdkServer, transport: str) -> None:
    async with Client.http(
        sdk_sse.url, mode="legacy", transport=transport, elicitation=elicit
    ) as c:
        assert c.protocol_version == LEGACY
        # "auto": by fallback, or directly once this process has seen the URL fall back.
        assert isinstance(c.transport, SSEClientTransport) or c.transport.fell_back  # type: ignore[attr-defined]
        await exercise(c)


async def test_sdk_http_sse_auto_mode(sdk_sse: SdkServer) -> None:
    """Auto mode: the discover probe and initialize are refused with 405, then HTTP+SSE."""
    url = sdk_sse.url + f"?fresh={anyio.current_time()}"  # not yet known to be HTTP+SSE
    async with Client.http(url, elicitation=elicit) as c:
        assert c.transport.fell_back  # type: ignore[attr-defined]
        assert (await c.call_tool("echo", {"message": "hi"})).text == "hi"
    # The next client for that URL goes straight to HTTP+SSE.
    again = open_http_transport(url)
    assert isinstance(again, SSEClientTransport)
    await again.aclose()


# =================================================================================================
# 2. Scripted servers
# =================================================================================================

INIT_RESULT = {
    "protocolVersion": LEGACY,
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "raw", "version": "0"},
}
TOOL_RESULT = {"content": [{"type": "text", "text": "done"}]}


def rid(seen: Seen) -> Any:
    return seen.json["id"]


def legacy(routes: dict[str, Any], *, get: Any = None, ack: Any = None, session: str = "s1") -> Any:
    """A legacy Streamable HTTP server: initialize, 202 for notifications, ``routes`` for the rest.

    A route is a ``Reply``, or an async function of the request returning one.
    """

    async def handler(seen: Seen) -> Reply:
        if seen.method == "GET":
            return await get(seen) if get is not None else Reply.empty(405)
        if seen.method == "DELETE":
            return Reply.empty(200)
        message = seen.json
        if seen.rpc_method == "initialize":
            return Reply.json(
                result(message["id"], INIT_RESULT), headers=[("Mcp-Session-Id", session)]
            )
        if "id" not in message or seen.rpc_method is None:
            return ack if ack is not None else Reply.empty(202)
        route = routes[seen.rpc_method]
        return await route(seen) if callable(route) else route

    return handler


def legacy_client(url: str, **kw: Any) -> Client:
    kw.setdefault("request_timeout", 10)
    return Client.http(url, mode="legacy", validate_output=False, **kw)


@pytest.mark.parametrize(
    ("mode", "status", "supported", "offered"),
    [
        ("legacy", 400, ["2024-11-05", "2025-03-26", "2099-01-01"], ["2025-11-25", "2025-03-26"]),
        ("auto", 200, ["2025-06-18"], ["2025-11-25", "2025-06-18"]),
        ("auto", 400, ["2024-11-05"], ["2025-11-25", "2024-11-05"]),
        ("legacy", 400, ["2099-01-01"], ["2025-11-25"]),  # nothing in common: refused
        ("legacy", 400, ["2025-11-25"], ["2025-11-25"]),  # only the one refused: no retry
        ("2025-06-18", 400, ["2024-11-05"], ["2025-06-18"]),  # pinned: no fallback
    ],
    ids=["400-listed", "200-auto", "400-auto", "none-mutual", "same-again", "pinned"],
)
async def test_a_refused_initialize_falls_back_once_to_a_listed_version(
    mode: str, status: int, supported: list[str], offered: list[str]
) -> None:
    """Pain point #22: a server that refuses the version we offer (here with the
    lifecycle page's example error, as a 400 or a 200) instead of answering with
    one it speaks gets one more ``initialize`` with the newest version it lists
    that we speak; without one, or with a pinned version, the refusal stands."""

    async def handler(seen: Seen) -> Reply:
        if seen.method != "POST":
            return Reply.empty(405)
        message = seen.json
        if "id" not in message:
            return Reply.empty(202)
        if seen.rpc_method != "initialize":
            unknown = {"code": -32601, "message": "legacy only"}  # server/discover
            return Reply.json({"jsonrpc": "2.0", "id": message["id"], "error": unknown})
        asked = message["params"]["protocolVersion"]
        if asked in supported and asked != "2025-11-25":  # that one is always refused
            return Reply.json(result(message["id"], {**INIT_RESULT, "protocolVersion": asked}))
        refusal = {
            "code": -32602,
            "message": "Unsupported protocol version",
            "data": {"supported": supported, "requested": asked},
        }
        return Reply.json({"jsonrpc": "2.0", "id": message["id"], "error": refusal}, status)

    async with raw_server(handler) as server:
        client = Client.http(server.url, mode=mode, validate_output=False, request_timeout=10)
        if len(offered) == 2:
            async with client as c:
                assert c.protocol_version == offered[-1]
                assert c.session.allow_batches == (offered[-1] == "2025-03-26")
        else:
            with anyio.fail_after(5), pytest.raises(JSONRPCError) as info:
                async with client:
                    pass
            assert info.value.code == -32602
            assert info.value.data == {"supported": supported, "requested": offered[0]}
        initializes = [s for s in server.seen if s.rpc_method == "initialize"]
        assert [s.json["params"]["protocolVersion"] for s in initializes] == offered


@pytest.mark.parametrize(
    "ack",
    [
        Reply.empty(202),
        Reply.empty(200),
        Reply.empty(204),
        Reply.json(None),
        Reply([(200)][0], [("Content-Type", "application/json")], []),  # read-until-close, empty
    ],
    ids=["202", "200-empty", "204", "200-null", "200-json-no-length"],
)
async def test_notification_acknowledgements(ack: Reply) -> None:
    """Any 2xx acknowledges a notification (pain point #23); the GET stream follows."""

    async def tools_call(seen: Seen) -> Reply:
        return Reply.sse(
            event(result(rid(seen), TOOL_RESULT)), content_type="text/event-stream;charset=utf-8"
        )

    async with raw_server(legacy({"tools/call": tools_call}, ack=ack)) as server:
        async with legacy_client(server.url) as c:
            assert (await c.call_tool("t", {})).text == "done"
            # notifications/initialized was taken as accepted: the client tries the GET stream.
            with anyio.fail_after(5):
                while "GET" not in [s.method for s in server.seen]:
                    await anyio.sleep(0.01)
        assert server.methods() == ["initialize", "notifications/initialized", "tools/call"]


async def test_events_split_byte_by_byte() -> None:
    async def tools_call(seen: Seen) -> Reply:
        token = seen.json["params"]["_meta"]["progressToken"]
        text = (
            event(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": 1, "total": 2},
                }
            ).replace("\n", "\r\n")
            + ": a comment\r"
            + event(result(rid(seen), TOOL_RESULT)).replace("\n", "\r")
        ).encode()
        return Reply.sse(*[text[i : i + 1] for i in range(len(text))], delay=0.0005)

    progress: list[float] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(value)

    async with (
        raw_server(legacy({"tools/call": tools_call})) as server,
        legacy_client(server.url) as c,
    ):
        assert (await c.call_tool("t", {}, on_progress=on_progress)).text == "done"
    assert progress == [1]


async def test_redirects() -> None:
    async def handler(seen: Seen) -> Reply:
        if seen.target == "/mcp":
            return Reply(307, [("Location", "/moved?x=1"), ("Content-Length", "0")])
        if seen.target == "/elsewhere":
            port = seen.headers["host"].split(":")[1]
            return Reply(
                308, [("Location", f"http://localhost:{port}/mcp"), ("Content-Length", "0")]
            )
        if seen.target == "/see-other":
            return Reply(303, [("Location", "/moved?x=1"), ("Content-Length", "0")])
        assert seen.target == "/moved?x=1"
        return Reply.json(result(rid(seen), TOOL_RESULT))

    async with raw_server(handler) as server:
        base = server.url.rsplit("/", 1)[0]
        async with Client.http(server.url, mode=MODERN, validate_output=False) as c:
            assert (await c.call_tool("t", {})).text == "done"  # same origin: followed
        calls = [s.target for s in server.seen if s.rpc_method == "tools/call"]
        assert calls == ["/mcp", "/moved?x=1"]
        for path, words in (("/elsewhere", "another origin"), ("/see-other", "only 307 and 308")):
            async with Client.http(base + path, mode=MODERN, validate_output=False) as c:
                with pytest.raises(JSONRPCError, match=words):
                    await c.call_tool("t", {})


async def test_a_redirect_can_be_returned_unfollowed() -> None:
    """``follow_redirects=False``: the redirect itself is the answer (how an OAuth
    client reads an authorization endpoint's redirect back to it)."""

    async def handler(seen: Seen) -> Reply:
        return Reply(302, [("Location", "http://127.0.0.1:9/cb?code=c"), ("Content-Length", "0")])

    async with raw_server(handler) as server:
        http = HTTPClient()
        try:
            response = await http.request("GET", URL.parse(server.url), follow_redirects=False)
            async with response:
                assert response.status == 302
                assert response.header("location") == "http://127.0.0.1:9/cb?code=c"
            with pytest.raises(RedirectRefused, match="only 307 and 308"):
                await http.request("GET", URL.parse(server.url))
        finally:
            await http.aclose()


@pytest.mark.parametrize(
    ("reply", "code", "words"),
    [
        (Reply.text(503, "upstream is down"), -32603, "HTTP 503.*upstream is down"),
        (Reply.text(500, "<html>boom</html>"), -32603, "HTTP 500"),
        (Reply.text(400, "bad"), -32600, "HTTP 400.*bad"),
        (
            Reply.text(401, "no", [("WWW-Authenticate", 'Bearer realm="x"')]),
            -32600,
            "authorization.*Bearer",
        ),
        (
            Reply.json(
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32602, "message": "nope"}}, 400
            ),
            -32602,
            "nope",
        ),
        (
            Reply.json(
                {
                    "jsonrpc": "2.0",
                    "id": 999,
                    "error": {"code": -32601, "message": "no such method"},
                },
                404,
            ),
            -32601,
            "no such method",
        ),
        (Reply.empty(202), -32603, "HTTP 202 and no response body"),
        (Reply.text(200, "hello"), -32603, "text/plain"),
        (
            Reply(200, [("Content-Length", "2")], [b"{}"]),
            -32603,
            "HTTP 200 and a body without a Content-Type",
        ),
        (Reply.json(None), -32603, "a null body"),
        (Reply.sse(": just a comment\n\n"), -32603, "stream ended before the answer"),
        (Reply.sse(": cut\n\n", cut=True), -32603, "stream ended before the answer"),
        (Reply.json({"jsonrpc": "2.0", "method": "notifications/x"}), -32603, "no answer"),
        (Reply.json([1, 2]), -32603, "not a JSON-RPC answer"),
    ],
    ids=[
        "503",
        "500-html",
        "400-text",
        "401",
        "400-jsonrpc-id-null",
        "404-jsonrpc-other-id",
        "202",
        "200-text",
        "200-no-content-type",
        "200-null",
        "sse-no-answer",
        "sse-cut",
        "json-notification",
        "json-garbage",
    ],
)
async def test_http_errors_fail_the_request_promptly(reply: Reply, code: int, words: str) -> None:
    async def handler(seen: Seen) -> Reply:
        return reply

    async with (
        raw_server(handler) as server,
        Client.http(server.url, mode=MODERN, validate_output=False, request_timeout=20) as c,
    ):
        with anyio.fail_after(5), pytest.raises(JSONRPCError, match=words) as info:
            await c.call_tool("t", {})
        assert info.value.code == code


@pytest.mark.parametrize("framing", ["json", "sse"])
@pytest.mark.parametrize("answer", [{"result": None}, {"result": [1]}, {"error": {"code": "x"}}])
async def test_a_malformed_answer_fails_the_request_with_its_defect(
    framing: str, answer: dict[str, Any]
) -> None:
    """An answer with our id that is not a valid response fails the call at once,
    saying what is wrong with it, in a JSON body and in an event stream alike."""

    async def handler(seen: Seen) -> Reply:
        body = {"jsonrpc": "2.0", "id": rid(seen), **answer}
        return Reply.json(body) if framing == "json" else Reply.sse(event(body))

    async with (
        raw_server(handler) as server,
        Client.http(server.url, mode=MODERN, validate_output=False, request_timeout=20) as c,
    ):
        with (
            anyio.fail_after(5),
            pytest.raises(JSONRPCError, match="answer to the request is malformed") as info,
        ):
            await c.call_tool("t", {})
        assert info.value.code == -32603
        assert ("result" if "result" in answer else "error") in info.value.message


async def test_the_modern_era_puts_no_client_response_on_the_wire(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """2026-07-28 has no server->client requests (MRTR replaces them), so a request
    found in a response stream is not answered with a POST; the call goes on."""

    async def handler(seen: Seen) -> Reply:
        ping = {"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}
        return Reply.sse(event(ping) + event(result(rid(seen), TOOL_RESULT)))

    async with (
        raw_server(handler) as server,
        Client.http(server.url, mode=MODERN, validate_output=False, request_timeout=20) as c,
    ):
        with anyio.fail_after(5):
            assert (await c.call_tool("t", {})).content[0].text == "done"  # type: ignore[union-attr]
            await c.call_tool("t", {})
        # server/discover, then the two calls: requests only, no POSTed response.
        assert server.methods() == ["server/discover", "tools/call", "tools/call"]
    assert "the 2026-07-28 era takes no responses: an answer" in caplog.text


#: Malformed messages a server may put on a response stream before its answer.
MALFORMED_EVENTS = (
    "event: message\ndata: {not json\n\n"
    + event({"jsonrpc": "2.0", "id": "bad-1", "method": 5})
    + event({"jsonrpc": "2.0", "method": "notifications/message", "params": 3})
)


@pytest.mark.parametrize("era", ["legacy", MODERN])
async def test_malformed_messages_on_a_response_stream_are_answered_or_counted(
    era: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Pain point #15 over Streamable HTTP: what a server sends malformed on a
    response stream reaches the session, as on every other transport. It is
    counted; in the legacy era each one JSON-RPC answers gets its error POSTed
    (-32700 with id null, -32600 with the request's id); in 2026-07-28, which
    takes no responses, the error is logged instead. The call is answered."""

    async def tools_call(seen: Seen) -> Reply:
        return Reply.sse(MALFORMED_EVENTS + event(result(rid(seen), TOOL_RESULT)))

    if era == "legacy":
        handler, client = legacy({"tools/call": tools_call}), legacy_client
    else:

        async def handler(seen: Seen) -> Reply:
            if seen.rpc_method == "tools/call":
                return await tools_call(seen)
            return Reply.json(result(rid(seen), {}))  # server/discover: nothing learned

        def client(url: str) -> Client:
            return Client.http(url, mode=MODERN, validate_output=False, request_timeout=10)

    async with raw_server(handler) as server, client(server.url) as c:
        with anyio.fail_after(5):
            assert (await c.call_tool("t", {})).text == "done"
        assert c.session.invalid_received == 3

        def replies() -> list[Any]:
            posts = [s.json for s in server.seen if s.method == "POST" and s.body]
            return sorted((p for p in posts if "method" not in p), key=lambda p: str(p["id"]))

        if era == "legacy":
            with anyio.fail_after(5):  # they are POSTed in the background
                while len(replies()) < 2:
                    await anyio.sleep(0.01)
            parse, bad = replies()
            assert (parse["id"], parse["error"]["code"]) == (None, -32700)
            assert (bad["id"], bad["error"]["code"]) == ("bad-1", -32600)
        else:
            assert replies() == []
            assert caplog.text.count("the 2026-07-28 era takes no responses") == 2


async def test_size_limits() -> None:
    big = "x" * 5000

    async def handler(seen: Seen) -> Reply:
        answer = result(rid(seen), {"content": [{"type": "text", "text": big}]})
        if seen.headers.get("mcp-name") == "json":
            return Reply.json(answer)
        return Reply.sse(event(answer))

    async with raw_server(handler) as server:
        async with Client.http(
            server.url, mode=MODERN, validate_output=False, max_body_size=1000, max_event_size=1000
        ) as c:
            with pytest.raises(JSONRPCError, match="exceeds the limit of 1000 bytes"):
                await c.call_tool("json", {})
            with pytest.raises(JSONRPCError, match="SSE event exceeds the limit of 1000"):
                await c.call_tool("sse", {})
        async with Client.http(server.url, mode=MODERN, validate_output=False) as c:
            assert (await c.call_tool("json", {})).text == big


@pytest.mark.parametrize("after", ["held", "cut"])
async def test_an_oversized_event_fails_the_request_whatever_follows(after: str) -> None:
    """An oversized event that ends a chunk after a complete one (a priming event
    with an id) fails the request at once with the size error: not after the
    request timeout when the server then holds the stream open, and not with
    "the stream ended" (or a resumption that replays it) when it cuts it."""
    release = anyio.Event()
    big = "event: message\ndata: " + "x" * 2000 + "\n\n"

    async def tools_call(seen: Seen) -> Reply:
        return Reply.sse(
            "id: p-1\ndata:\n\n" + big, hold=release if after == "held" else None, cut=True
        )

    async def get(seen: Seen) -> Reply:
        return Reply.empty(405)

    try:
        async with (
            raw_server(legacy({"tools/call": tools_call}, get=get)) as server,
            legacy_client(server.url, request_timeout=20, max_event_size=1000) as c,
        ):
            with (
                anyio.fail_after(5),
                pytest.raises(JSONRPCError, match="SSE event exceeds the limit of 1000") as info,
            ):
                await c.call_tool("t", {})
            assert info.value.code == -32600
            assert [s for s in server.seen if "last-event-id" in s.headers] == []
    finally:
        release.set()


async def test_get_stream_reconnects_with_last_event_id_and_retry() -> None:
    gets: list[tuple[float, Seen]] = []
    answered = anyio.Event()
    notes: list[tuple[str, dict[str, Any]]] = []

    async def get(seen: Seen) -> Reply:
        gets.append((anyio.current_time(), seen))
        if len(gets) == 1:
            log = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": "one"},
            }
            return Reply.sse("retry: 50\n\n", event(log, id="7"))  # then a clean end
        ping = {"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}
        return Reply.sse(event(ping, id="8"), hold=anyio.Event())

    async def on_note(method: str, params: dict[str, Any]) -> None:
        notes.append((method, params))

    async def handler(seen: Seen) -> Reply:
        if seen.method == "POST" and seen.json.get("id") == "srv-1":
            answered.set()
        return await legacy({}, get=get)(seen)

    async with raw_server(handler) as server:
        # The default backoff would wait >= 3.75 s: the server's retry (50 ms) is honoured.
        async with legacy_client(server.url, reconnect_delay=5.0, on_notification=on_note):
            with anyio.fail_after(3):
                await answered.wait()
        reply = next(s for s in server.seen if s.method == "POST" and s.json.get("id") == "srv-1")
    assert reply.json == {"jsonrpc": "2.0", "id": "srv-1", "result": {}}
    assert notes == [("notifications/message", {"level": "info", "data": "one"})]
    first, second = gets[0][1], gets[1][1]
    assert "last-event-id" not in first.headers
    assert second.headers["last-event-id"] == "7"
    for seen in (first, second):
        assert seen.headers["accept"] == "text/event-stream"
        assert seen.headers["mcp-session-id"] == "s1"
        assert seen.headers["mcp-protocol-version"] == LEGACY


async def test_get_stream_reopens_from_now_when_its_events_cannot_be_replayed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A 410 to a ``Last-Event-ID`` (what followed the event fell out of the
    server's replay window) reopens the standalone stream without the id, with a
    warning that messages may have been missed, rather than ending it for good."""
    gets: list[Seen] = []
    answered = anyio.Event()

    async def get(seen: Seen) -> Reply:
        gets.append(seen)
        if len(gets) == 1:
            log = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": "one"},
            }
            return Reply.sse("retry: 50\n\n", event(log, id="s:7"))  # then a clean end
        if "last-event-id" in seen.headers:
            return Reply.text(410, "gone")
        ping = {"jsonrpc": "2.0", "id": "srv-1", "method": "ping"}
        return Reply.sse(event(ping, id="s:40"), hold=anyio.Event())

    async def handler(seen: Seen) -> Reply:
        if seen.method == "POST" and seen.json.get("id") == "srv-1":
            answered.set()
        return await legacy({}, get=get)(seen)

    async with raw_server(handler) as server, legacy_client(server.url, reconnect_delay=5.0):
        with anyio.fail_after(3):
            await answered.wait()
    assert [s.headers.get("last-event-id") for s in gets] == [None, "s:7", None]
    assert any(
        "cannot replay" in r.getMessage() and "'s:7'" in r.getMessage() for r in caplog.records
    )


def _held_answer(kind: str) -> Any:
    """An answer to a request that never comes: an open event stream, no head at
    all, or a JSON head whose body stops short."""
    if kind == "sse":
        return Reply.sse(hold=anyio.Event())
    if kind == "json-body":
        head = [("Content-Type", "application/json"), ("Content-Length", "100")]
        return Reply(200, head, [b'{"jsonrpc":'], hold=anyio.Event())

    async def never(seen: Seen) -> Reply:
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    return never


@pytest.mark.parametrize("answer", ["sse", "json-head", "json-body"])
@pytest.mark.parametrize("failure", ["503", "clean-end", "refused"])
async def test_get_stream_gives_up_and_fails_pending_requests(failure: str, answer: str) -> None:
    async def get(seen: Seen) -> Reply:
        if failure == "503":
            return Reply.text(503, "busy")
        if failure == "clean-end":
            return Reply.sse(": nothing\n\n")
        return Reply(drop=True)  # the connection drops before the head

    handler = legacy({"tools/call": _held_answer(answer)}, get=get)
    async with (
        raw_server(handler) as server,
        legacy_client(
            server.url, reconnect_attempts=2, reconnect_delay=0.05, request_timeout=30
        ) as c,
    ):
        with (
            anyio.fail_after(5),
            pytest.raises(ConnectionClosed, match="lost the event stream") as info,
        ):
            await c.call_tool("t", {})
        assert "2 reconnection attempts failed" in str(info.value)
        with pytest.raises(ConnectionClosed):  # and later calls fail at once
            await c.call_tool("t", {})


@pytest.mark.parametrize("answer", ["sse", "json-head", "json-body"])
async def test_closing_the_client_ends_a_call_still_waiting(answer: str) -> None:
    """Closing stops an exchange wherever it waits: for the answer (the socket is not
    left to the server), or for a connection slot (one slot, two calls)."""
    handler = legacy({"tools/call": _held_answer(answer)})
    failed: list[BaseException] = []

    async def call(c: Client) -> None:
        try:
            await c.call_tool("t", {})
        except ConnectionClosed as exc:
            failed.append(exc)

    async with raw_server(handler) as server:
        with anyio.fail_after(5):
            # The client closes first, while both calls wait; they end at once.
            async with (
                anyio.create_task_group() as tg,
                legacy_client(server.url, request_timeout=30, max_connections=1) as c,
            ):
                tg.start_soon(call, c)
                tg.start_soon(call, c)
                while server.seen[-1].rpc_method != "tools/call":
                    await anyio.sleep(0.01)
                await anyio.sleep(0.05)  # the second call waits for the slot
        assert len(failed) == 2
        transport = c.transport
        assert isinstance(transport, HTTPClientTransport)
        assert not transport.http._busy


async def test_post_stream_resumes_with_get() -> None:
    """2025-11-25 polling: a POST stream that closes after a priming event is resumed."""

    call: dict[str, Any] = {}

    async def tools_call(seen: Seen) -> Reply:
        call["id"] = rid(seen)
        return Reply.sse("id: p1\nretry: 20\ndata:\n\n")  # priming event, then the server closes

    async def get(seen: Seen) -> Reply:
        if seen.headers.get("last-event-id") == "p1":
            progress = {
                "jsonrpc": "2.0",
                "method": "notifications/message",
                "params": {"level": "info", "data": "x"},
            }
            return Reply.sse(
                event(progress, id="x"), event(result(call["id"], TOOL_RESULT), id="p2")
            )
        return Reply.empty(405)

    async with raw_server(legacy({"tools/call": tools_call}, get=get)) as server:
        async with legacy_client(server.url, get_stream=False) as c:
            assert (await c.call_tool("t", {})).text == "done"
        resumed = [s for s in server.seen if s.method == "GET"]
        assert [s.headers["last-event-id"] for s in resumed] == ["p1"]


async def test_modern_headers_and_cancellation() -> None:
    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "flag": {"type": "boolean", "x-mcp-header": "Flag"},
            "deep": {
                "type": "object",
                "properties": {"id": {"type": "string", "x-mcp-header": "Deep"}},
            },
        },
    }
    bad = {"type": "object", "properties": {"x": {"type": "number", "x-mcp-header": "X"}}}
    tools = [
        {"name": "tool ü", "inputSchema": schema},
        {"name": "bad", "inputSchema": bad},
        {"name": "slow", "inputSchema": {"type": "object"}},
    ]

    async def handler(seen: Seen) -> Reply:
        method = seen.rpc_method
        if method == "tools/list":
            return Reply.json(
                result(
                    rid(seen),
                    {"tools": tools, "resultType": "complete", "ttlMs": 0, "cacheScope": "private"},
                )
            )
        if method == "tools/call" and seen.json["params"]["name"] == "slow":
            return Reply.sse(": working\n\n", hold=anyio.Event())
        if method == "resources/read":
            contents = [{"uri": seen.json["params"]["uri"], "text": "r"}]
            return Reply.json(
                result(rid(seen), {"contents": contents, "ttlMs": 0, "cacheScope": "private"})
            )
        if method == "tools/call":
            return Reply.json(result(rid(seen), TOOL_RESULT))
        return Reply.empty(202)

    async with raw_server(handler) as server:
        async with Client.http(
            server.url, mode=MODERN, headers={"Authorization": "Bearer t0k"}
        ) as c:
            assert [t.name for t in await c.list_tools()] == ["tool ü", "slow"]  # "bad" dropped
            arguments = {
                "region": " eu\u2028",
                "n": 7,
                "flag": False,
                "deep": {"id": "=?base64?x?="},
            }
            await c.call_tool("tool ü", arguments)
            await c.read_resource("file:///a b.txt")
            with pytest.raises(RequestTimeout):
                await c.call_tool("slow", {}, timeout=0.2)
        call = next(s for s in server.seen if s.rpc_method == "tools/call")
        assert call.headers["mcp-method"] == "tools/call"
        assert call.headers["mcp-protocol-version"] == MODERN
        assert (
            call.headers["mcp-name"] == encode_header_value("tool ü") == "=?base64?dG9vbCDDvA==?="
        )
        assert call.headers["mcp-param-region"] == encode_header_value(" eu\u2028")
        assert call.headers["mcp-param-n"] == "7"
        assert call.headers["mcp-param-flag"] == "false"
        assert call.headers["mcp-param-deep"].startswith("=?base64?")
        read = next(s for s in server.seen if s.rpc_method == "resources/read")
        assert read.headers["mcp-name"] == "file:///a b.txt"
        for seen in server.seen:
            assert seen.headers["authorization"] == "Bearer t0k"
            assert "mcp-session-id" not in seen.headers
        # Modern cancellation is closing the stream: no notifications/cancelled, no DELETE.
        assert "notifications/cancelled" not in server.methods()
        assert {s.method for s in server.seen} == {"POST"}


async def test_legacy_headers_cancellation_and_delete() -> None:
    async def tools_call(seen: Seen) -> Reply:
        if seen.json["params"]["name"] == "slow":
            return Reply.sse(hold=anyio.Event())
        return Reply.json(result(rid(seen), TOOL_RESULT))

    async with raw_server(legacy({"tools/call": tools_call})) as server:
        async with legacy_client(server.url, headers={"Authorization": "Bearer t0k"}) as c:
            assert c.protocol_version == LEGACY
            await c.call_tool("quick", {})
            with pytest.raises(RequestTimeout):
                await c.call_tool("slow", {}, timeout=0.2)
        init, *rest = server.seen
        assert init.rpc_method == "initialize"
        assert "mcp-session-id" not in init.headers and "mcp-protocol-version" not in init.headers
        assert init.headers["accept"] == "application/json, text/event-stream"
        assert init.headers["content-type"] == "application/json"
        for seen in rest:
            assert seen.headers["mcp-session-id"] == "s1"
            assert seen.headers["mcp-protocol-version"] == LEGACY
        for seen in server.seen:
            assert seen.headers["authorization"] == "Bearer t0k"
        cancel = next(s for s in server.seen if s.rpc_method == "notifications/cancelled")
        assert cancel.json["params"]["requestId"] == 3
        assert server.seen[-1].method == "DELETE"


def slow_to_take_cancel_notices(seconds: float) -> Callable[[Seen], Awaitable[Reply]]:
    """A legacy server whose ``tools/call`` never answers (its SSE stream is held
    open) and that takes ``seconds`` to accept a ``notifications/cancelled``."""

    async def tools_call(seen: Seen) -> Reply:
        return Reply.sse(hold=anyio.Event())

    base = legacy({"tools/call": tools_call})

    async def handler(seen: Seen) -> Reply:
        if seen.rpc_method == "notifications/cancelled":
            await anyio.sleep(seconds)
        reply: Reply = await base(seen)
        return reply

    return handler


async def test_a_timeout_does_not_wait_for_the_server_to_take_the_cancel_notice() -> None:
    # The notice is a POST that a slow server may take long to accept: the caller
    # gets RequestTimeout at its deadline, and the notice is still delivered, before
    # the DELETE that ends the session.
    async with raw_server(slow_to_take_cancel_notices(1.0)) as server:
        async with legacy_client(server.url) as c:
            start = time.monotonic()
            with pytest.raises(RequestTimeout):
                await c.call_tool("slow", {}, timeout=0.2)
            elapsed = time.monotonic() - start
        assert 0.19 <= elapsed < 0.2 + 0.5
        methods = [s.rpc_method or s.method for s in server.seen]
        assert methods[-2:] == ["notifications/cancelled", "DELETE"]


async def test_a_cancel_notice_the_server_never_takes_does_not_hold_the_close() -> None:
    # Closing gives queued notices a bounded time to go out, then stops trying.
    async with raw_server(slow_to_take_cancel_notices(60)) as server:
        client = legacy_client(server.url, timeout=30)
        async with client as c:
            with pytest.raises(RequestTimeout):
                await c.call_tool("slow", {}, timeout=0.2)
            start = time.monotonic()
        assert time.monotonic() - start < 2.0 + 2.5
        assert "notifications/cancelled" in server.methods()


@pytest.mark.parametrize(
    ("option", "value", "error"),
    [
        ("timeout", 0, "timeout must be a positive number of seconds, not 0"),
        ("connect_timeout", -1.0, "connect_timeout must be a positive number of seconds"),
        ("reconnect_delay", float("nan"), "reconnect_delay must be a positive number"),
        ("stream_idle_timeout", "5", "stream_idle_timeout must be a positive number"),
        ("timeout", True, "timeout must be a positive number of seconds, not True"),
        ("max_body_size", 0, "max_body_size must be an integer of at least 1, not 0"),
        ("max_event_size", 1.5, "max_event_size must be an integer of at least 1"),
        ("max_connections", 0, "max_connections must be an integer of at least 1"),
        ("max_keepalive", -1, "max_keepalive must be an integer of at least 0"),
        ("max_redirects", None, "max_redirects must be an integer of at least 0"),
        ("reconnect_attempts", -2, "reconnect_attempts must be an integer of at least 0"),
        ("message_url", "ftp://host/m", "unusable message_url 'ftp://host/m': only http://"),
        ("message_url", "/m\nx", "unusable message_url '/m\\nx': not a valid URL (whitespace"),
        ("message_url", "https://u:p@host/m", "unusable message_url 'https://u:p@host/m': cred"),
        ("message_url", "http://host:99999/m", "unusable message_url 'http://host:99999/m': the"),
        ("message_url", b"/m", "message_url must be a string"),
    ],
)
def test_http_options_are_checked_when_the_client_is_made(
    option: str, value: Any, error: str
) -> None:
    """A setting that cannot work is refused by ``Client.http`` at once, naming it,
    not by the first exchange that uses it (or, for ``message_url``, only once
    an HTTP+SSE server has announced its endpoint)."""
    with pytest.raises((ValueError, TypeError), match="^" + re.escape(error)):
        Client.http("http://127.0.0.1:9/mcp", **{option: value})


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("timeout", 0.001),
        ("stream_idle_timeout", None),
        ("max_keepalive", 0),
        ("max_redirects", 0),
        ("reconnect_attempts", 0),
        ("message_url", "messages?session=1"),
        ("message_url", "/other/path"),
        ("message_url", "https://public.example/mcp/messages"),
    ],
)
def test_http_options_at_their_edges_are_accepted(option: str, value: Any) -> None:
    Client.http("http://127.0.0.1:9/mcp", **{option: value})


DECLINED = {"action": "decline"}


async def test_a_stalled_reply_post_holds_up_no_answer() -> None:
    """Legacy era: the client's answer to a server message is a POST of its own, and
    the session sends some from its reader task (here: refusing a duplicate id).
    A server that never answers that POST must not hold up the answer to the
    client's request, which arrives on the request's event stream meanwhile (not
    after the transport's whole ``timeout``)."""
    stalled = anyio.Event()
    release = anyio.Event()
    streams: list[Any] = []

    async def decline(params: dict[str, Any]) -> dict[str, Any]:
        with anyio.fail_after(5):
            await stalled.wait()  # the duplicate arrives while this one is served
        return DECLINED

    async with anyio.create_task_group() as tg:

        async def tools_call(seen: Seen) -> Reply:
            send, receive = anyio.create_memory_object_stream[bytes](8)
            streams.append(receive)
            # The same id twice while the first is served: the session refuses the
            # second from its reader task.
            ask = {"message": "?", "requestedSchema": {"type": "object", "properties": {}}}
            elicit = event(
                {"jsonrpc": "2.0", "id": "e1", "method": "elicitation/create", "params": ask}
            )
            send.send_nowait((elicit + elicit).encode())

            async def answer_once_stalled() -> None:
                with anyio.fail_after(5):
                    await stalled.wait()
                send.send_nowait(event(result(rid(seen), TOOL_RESULT)).encode())
                send.close()

            tg.start_soon(answer_once_stalled)
            return Reply.sse(feed=receive)

        scripted = legacy({"tools/call": tools_call})

        async def handler(seen: Seen) -> Reply:
            if seen.method == "POST" and seen.rpc_method is None and "error" in seen.json:
                stalled.set()  # the refusal: never answered
                return Reply(raw=[], hold=release)
            return await scripted(seen)

        try:
            async with (
                raw_server(handler) as server,
                legacy_client(server.url, timeout=20, elicitation=decline) as c,
            ):
                with anyio.fail_after(2):
                    assert (await c.call_tool("t", {})).text == "done"

                def replies() -> list[Any]:
                    posts = [s.json for s in server.seen if s.method == "POST"]
                    return sorted((p for p in posts if "method" not in p), key=str)

                with anyio.fail_after(5):  # the answer to e1 may still be on its way
                    while len(replies()) < 2:
                        await anyio.sleep(0.01)
                refusal, answer = replies()
                assert answer == {"jsonrpc": "2.0", "id": "e1", "result": DECLINED}
                assert refusal["error"]["code"] == -32600
        finally:
            release.set()
            for stream in streams:
                stream.close()


async def test_session_expiry_reinitializes_except_for_cursors() -> None:
    sessions = iter(["s1", "s2", "s3"])
    current = {"id": next(sessions)}

    async def handler(seen: Seen) -> Reply:
        if seen.method in ("GET", "DELETE"):
            return Reply.empty(405)
        message = seen.json
        if seen.rpc_method == "initialize":
            current["id"] = next(sessions)
            return Reply.json(
                result(message["id"], INIT_RESULT), headers=[("Mcp-Session-Id", current["id"])]
            )
        if seen.headers.get("mcp-session-id") != current["id"]:
            return Reply.json(
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32600, "message": "Session not found"},
                },
                404,
            )
        if "id" not in message:
            return Reply.empty(202)
        if seen.rpc_method == "tools/list":
            cursor = message.get("params", {}).get("cursor")
            if cursor is None:
                current["id"] = "expired-by-the-server"  # the session ends between the pages
                return Reply.json(result(rid(seen), {"tools": [], "nextCursor": "page2"}))
        return Reply.json(result(rid(seen), TOOL_RESULT))

    async with raw_server(handler) as server:
        async with legacy_client(server.url) as c:
            assert c.transport.session_id == "s2"  # type: ignore[attr-defined]
            current["id"] = "gone"
            assert (await c.call_tool("t", {})).text == "done"
            assert c.transport.session_id == "s3"  # type: ignore[attr-defined]
            with pytest.raises(JSONRPCError, match="cursor belonged to the old session"):
                await c.list_tools()
        replays = [s for s in server.seen if s.rpc_method == "initialize"]
        assert [r.json["id"] for r in replays] == [1, "mcpwire-reinit-1"]
        assert replays[0].json["params"] == replays[1].json["params"]


async def test_keepalive_reuse_and_stale_sockets() -> None:
    async def handler(seen: Seen) -> Reply:
        reply = Reply.json(result(rid(seen), TOOL_RESULT))
        reply.close_after = seen.headers.get("mcp-name") == "stale"
        return reply

    async with (
        raw_server(handler) as server,
        Client.http(server.url, mode=MODERN, validate_output=False) as c,
    ):
        for _ in range(5):
            await c.call_tool("t", {})
        assert server.connections == 1
        for _ in range(5):  # the server drops every socket after answering on it
            # Once its FIN is in, the idle check sees it and a fresh socket is used (a
            # tools/call is never sent twice, so the check is what keeps it whole).
            await anyio.sleep(0.02)
            assert (await c.call_tool("stale", {})).text == "done"


async def test_a_tool_call_is_not_sent_twice_when_its_kept_alive_socket_breaks() -> None:
    """A server that reads a request on a kept-alive socket and then drops it
    without an answer looks, from here, like one that closed the idle socket as
    we sent: a read-only request is sent once more, but a ``tools/call`` is
    delivered at most once and fails (RFC 9110 section 9.2.2), with a
    ``TransportError``: the server is there (a fresh connection to it is made),
    only this exchange got no answer."""
    dropped: set[str] = set()

    async def handler(seen: Seen) -> Reply:
        name = seen.headers.get("mcp-name") or seen.rpc_method or ""
        if name.startswith("drop") and name not in dropped:
            dropped.add(name)
            return Reply(drop=True)  # read whole, then the socket closes unanswered
        if seen.rpc_method == "tools/list":
            return Reply.json(result(rid(seen), {"tools": [], "resultType": "complete"}))
        return Reply.json(result(rid(seen), TOOL_RESULT))

    async with (
        raw_server(handler) as server,
        Client.http(server.url, mode=MODERN, validate_output=False) as c,
    ):
        await c.call_tool("warm", {})  # a socket to keep alive
        with anyio.fail_after(5), pytest.raises(TransportError) as info:
            await c.call_tool("drop-call", {})
        assert (info.value.code, info.value.status) == (-32603, None)
        assert info.match(r"^\[-32603\] tools/call: the connection \(kept alive from an ")
        assert info.match("not sent again, since the server may have received it")
        calls = [s for s in server.seen if s.headers.get("mcp-name") == "drop-call"]
        assert len(calls) == 1
        # The same break under a read-only request: sent again on a fresh socket.
        await c.call_tool("warm", {})
        server.seen.clear()
        dropped.discard("tools/list")

        async def drop_list_once(seen: Seen) -> Reply:
            if seen.rpc_method == "tools/list" and "tools/list" not in dropped:
                dropped.add("tools/list")
                return Reply(drop=True)
            return await handler(seen)

        server.handler = drop_list_once
        assert await c.list_tools(cache=False) == []
        assert [s.rpc_method for s in server.seen].count("tools/list") == 2


@pytest.mark.parametrize("method", ["tools/call", "tools/list"])
@pytest.mark.parametrize("connection", ["fresh", "kept-alive"])
async def test_a_connection_that_ends_before_any_response_fails_only_that_exchange(
    connection: str, method: str
) -> None:
    """The server is reached, reads the request, and its connection ends with no
    response head: like a body cut short, this one exchange got no answer, a
    ``TransportError`` (-32603, no status) saying so, and the transport serves on.
    A ``tools/call`` is sent once, and the error says it may have been received; a
    read-only request broken on a kept-alive socket goes out once more, on a
    fresh one (broken again there, it fails the same way)."""
    seen_drops: list[int] = []

    async def handler(seen: Seen) -> Reply:
        if seen.rpc_method == method and not seen.headers.get("mcp-name", "").startswith("ok"):
            seen_drops.append(seen.connection)
            return Reply(drop=True)
        answer = {"tools": [], "resultType": "complete"}
        listing = seen.rpc_method == "tools/list"
        reply = Reply.json(result(rid(seen), answer if listing else TOOL_RESULT))
        reply.close_after = connection == "fresh"
        return reply

    async with (
        raw_server(handler) as server,
        Client.http(server.url, mode=MODERN, validate_output=False) as c,
    ):
        await anyio.sleep(0.05)  # "fresh": the FIN is in, the idle check drops the socket
        ask = c.call_tool("drop", {}) if method == "tools/call" else c.list_tools(cache=False)
        with anyio.fail_after(5), pytest.raises(TransportError) as info:
            await ask
        assert (info.value.code, info.value.status, info.value.data) == (-32603, None, None)
        message = info.value.message
        assert message.startswith(f"{method}: the connection")
        assert "ended before any response (POST " in message
        assert "the peer closed the connection" in message
        once = method == "tools/call"
        assert ("not sent again, since the server may have received it" in message) is once
        kept = "(kept alive from an earlier exchange)" in message
        assert len(seen_drops) == (1 if once or connection == "fresh" else 2)
        assert kept is (connection == "kept-alive" and once)
        assert len(set(seen_drops)) == len(seen_drops)  # a retry goes on a new connection
        # Only that exchange failed: the same client is answered at once.
        assert not c.session.closed
        assert (await c.call_tool("ok", {})).text == "done"


@pytest.mark.parametrize(
    "refusal",
    [Reply.empty(405), Reply.text(405, "no standalone stream here"), Reply.empty(404)],
    ids=["405-empty", "405-text", "404"],
)
async def test_a_refused_get_stream_leaves_its_socket_for_the_next_request(refusal: Reply) -> None:
    async def get(seen: Seen) -> Reply:
        return refusal

    async def call(seen: Seen) -> Reply:
        return Reply.json(result(rid(seen), TOOL_RESULT))

    routes = {"tools/call": call}
    async with raw_server(legacy(routes, get=get)) as server:
        async with legacy_client(server.url) as c:
            with anyio.fail_after(5):
                while not any(s.method == "GET" for s in server.seen):
                    await anyio.sleep(0.01)
                await anyio.sleep(0.1)  # the refusal read and its socket pooled
                await c.call_tool("t", {})
        [refused] = [s for s in server.seen if s.method == "GET"]
        later = [s for s in server.seen if s.rpc_method == "tools/call"]
        assert later[0].connection == refused.connection


RESTARTABLE = """
import sys

from mcpwire.examples.everything import server

server.run("http", port=int(sys.argv[1]))
"""


@contextmanager
def restartable(tmp_path: Path) -> Iterator[ChildServer]:
    """The ``RESTARTABLE`` server in a child process, started; stopped at the end."""
    script = tmp_path / "restartable.py"
    script.write_text(RESTARTABLE)
    child = ChildServer(script, [], tmp_path)
    child.start()
    try:
        yield child
    finally:
        child.stop()


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_a_server_restart_fails_only_the_calls_made_while_it_is_down(
    mode: str, tmp_path: Path
) -> None:
    """Pain point #9: a call made while the server is down fails at once with
    ``ConnectionClosed``; the client is not ended by it, and once the server is
    back the same client serves on (legacy: a new session, after the 404 that
    says the old one is gone)."""
    with restartable(tmp_path) as child:
        with anyio.fail_after(30):
            async with Client.http(child.url, mode=mode, reconnect_delay=0.5) as c:
                assert (await c.call_tool("echo", {"message": "a"})).text == "a"
                child.stop()
                for _ in range(2):
                    # Kept-alive sockets are stale now: the one retry goes out on a fresh one.
                    with pytest.raises(ConnectionClosed) as info:
                        await c.call_tool("echo", {"message": "down"})
                    assert info.match(f"cannot reach the MCP server at {child.url}: ")
                    assert info.match("cannot connect to 127.0.0.1:.*: Connection refused")
                assert not c.session.closed
                child.start()
                assert (await c.call_tool("echo", {"message": "b"})).text == "b"


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_a_tool_call_on_a_kept_alive_socket_to_a_server_gone_is_connection_closed(
    mode: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``tools/call`` on a kept-alive socket whose server has since exited (the
    idle check made to miss it, as a race may): it is not sent again, and the fresh
    connection that tells the two cases apart is refused, so the call fails with
    ``ConnectionClosed`` (the server is lost, as for a hub), not with the
    ``TransportError`` of a server that is still there."""
    from mcpwire import _http_client_sock

    for cls in (_http_client_sock.StreamSocket, _http_client_sock.ProtocolSocket):
        monkeypatch.setattr(cls, "looks_dead", lambda self: False)
    with restartable(tmp_path) as child:
        with anyio.fail_after(30):
            async with Client.http(child.url, mode=mode, reconnect_delay=0.5) as c:
                assert (await c.call_tool("echo", {"message": "a"})).text == "a"
                child.stop()
                with pytest.raises(ConnectionClosed) as info:
                    await c.call_tool("echo", {"message": "down"})
                assert info.match(f"cannot reach the MCP server at {child.url}: ")
                assert info.match("cannot connect to 127.0.0.1:.*: Connection refused")
                assert not c.session.closed


async def test_connection_refused_is_connection_closed() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    with anyio.fail_after(5), pytest.raises(ConnectionClosed, match="cannot reach the MCP server"):
        async with Client.http(url):
            pass


def http_sse_script(answer_call: Callable[[dict[str, Any]], str]) -> tuple[Any, list[Any]]:
    """A deprecated HTTP+SSE server: GET opens the event stream (the endpoint
    first), ``initialize`` is answered on it, and each ``tools/call`` with the
    events ``answer_call`` gives. Returns the handler and the streams' send ends."""
    streams: list[Any] = []

    async def handler(seen: Seen) -> Reply:
        if seen.method == "GET":
            send, receive = anyio.create_memory_object_stream[bytes](16)
            streams.append(send)
            return Reply.sse("event: endpoint\ndata: /messages/?session_id=abc\n\n", feed=receive)
        message = seen.json
        if message.get("method") == "initialize":
            await streams[-1].send(event(result(message["id"], INIT_RESULT)).encode())
        elif message.get("method") == "tools/call":
            await streams[-1].send(answer_call(message).encode())
        return Reply.text(202, "Accepted")

    return handler, streams


async def test_http_sse_malformed_answer_fails_its_request_at_once() -> None:
    """On the deprecated HTTP+SSE transport answers come on the event stream: one
    with our id that is not a valid response fails that call now (pain point 1),
    not at the request timeout, and the connection serves on."""

    def answer(message: dict[str, Any]) -> str:
        if message["params"]["name"] == "bad":
            return event({"jsonrpc": "2.0", "id": message["id"], "result": [1]})
        return event(result(message["id"], TOOL_RESULT))

    handler, streams = http_sse_script(answer)
    try:
        async with raw_server(handler) as server:
            sse_url = server.url.replace("/mcp", "/sse")
            async with legacy_client(sse_url, transport="sse", request_timeout=30) as c:
                with (
                    anyio.fail_after(5),
                    pytest.raises(RemoteProtocolError, match="malformed") as info,
                ):
                    await c.call_tool("bad", {})
                assert str(info.value) == (
                    'malformed response to tools/call: "result" must be an object in MCP'
                )
                assert (await c.call_tool("t", {})).text == "done"
    finally:
        for send in streams:
            send.close()


async def test_http_sse_oversized_event_ends_the_transport_at_once() -> None:
    """HTTP+SSE: an oversized event in the same chunk as a message before it ends
    the transport as soon as it arrives, with the size in the reason, although
    the server holds the stream open: the pending call does not wait for its
    timeout (the transport cannot resume the stream past it)."""

    def answer(message: dict[str, Any]) -> str:
        note = {"jsonrpc": "2.0", "method": "notifications/message"}
        note["params"] = {"level": "info", "data": "hi"}
        return event(note) + "event: message\ndata: " + "x" * 2000 + "\n\n"

    handler, streams = http_sse_script(answer)
    try:
        async with raw_server(handler) as server:
            sse_url = server.url.replace("/mcp", "/sse")
            client = legacy_client(
                sse_url, transport="sse", request_timeout=30, max_event_size=1000
            )
            async with client as c:
                with (
                    anyio.fail_after(5),
                    pytest.raises(ConnectionClosed, match="SSE event exceeds the limit of 1000"),
                ):
                    await c.call_tool("t", {})
    finally:
        for send in streams:
            send.close()


async def test_http_sse_endpoint_resolution_and_override() -> None:
    """The endpoint is resolved against the SSE URL (RFC 3986); other origins need message_url."""
    endpoint = {"data": "messages/?session_id=abc"}
    streams: list[Any] = []  # the send side of each GET's event stream

    async def handler(seen: Seen) -> Reply:
        if seen.method == "GET":
            send, receive = anyio.create_memory_object_stream[bytes](16)
            streams.append(send)
            return Reply.sse(f"event: endpoint\ndata: {endpoint['data']}\n\n", feed=receive)
        assert seen.target.startswith("/prefix/messages/?session_id=abc"), seen.target
        message = seen.json
        if message.get("method") == "initialize":
            await streams[-1].send(event(result(message["id"], INIT_RESULT)).encode())
        elif message.get("method") == "tools/call":
            await streams[-1].send(event(result(message["id"], TOOL_RESULT)).encode())
        return Reply.text(202, "Accepted")

    async with raw_server(handler) as server:
        sse_url = server.url.replace("/mcp", "/prefix/sse")
        async with legacy_client(sse_url, transport="sse") as c:
            assert (await c.call_tool("t", {})).text == "done"
        endpoint["data"] = "http://internal.example:9/prefix/messages/?session_id=abc"
        with pytest.raises(ConnectionClosed, match="another origin"):
            async with legacy_client(sse_url, transport="sse"):
                pass
        async with legacy_client(sse_url, transport="sse", message_url="/prefix/messages/") as c:
            assert (await c.call_tool("t", {})).text == "done"
        for send in streams:
            send.close()


def test_helpers() -> None:
    assert media_type("Text/Event-Stream; charset=utf-8") == "text/event-stream"
    assert media_type(None) == ""
    assert encode_header_value("plain value") == "plain value"
    for odd in (" lead", "trail ", "tab\there", "ü", "=?base64?abc?=", "\x7f"):
        assert encode_header_value(odd).startswith("=?base64?"), odd
    assert encode_header_value("=?Base64?abc?=") == "=?Base64?abc?="  # markers are case-sensitive
    good = {"type": "object", "properties": {"a": {"type": "integer", "x-mcp-header": "A"}}}
    assert tool_header_map(good) == {("a",): "A"}
    assert tool_header_map({"type": "object"}) == {}
    bad = [
        {"properties": {"a": {"type": "number", "x-mcp-header": "A"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": "not a token"}}},
        {"properties": {"a": {"type": "string", "x-mcp-header": ""}}},
        {
            "properties": {
                "a": {"type": "string", "x-mcp-header": "A"},
                "b": {"type": "string", "x-mcp-header": "a"},
            }
        },
        {"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]},
        {"x-mcp-header": "Root", "type": "string"},
    ]
    for schema in bad:
        assert tool_header_map(schema) is None, schema
    url = URL.parse("https://Example.com:8443/a/b/sse?x=1")
    assert (url.host, url.port, url.target, url.authority) == (
        "example.com",
        8443,
        "/a/b/sse?x=1",
        "example.com:8443",
    )
    assert url.join("../messages?s=1").target == "/a/messages?s=1"
    assert url.join("//other.example/x").origin == ("https", "other.example", 443)
    assert URL.parse("http://[::1]/mcp").authority == "[::1]"
    for wrong in (
        "ftp://x/",
        "http:///nohost",
        "http://u:p@host/",
        "http://host:99999/",
        "http://h/a b",
    ):
        with pytest.raises(ValueError):
            URL.parse(wrong)
    with pytest.raises(ValueError):
        Client.http("http://h/", headers={"Bad Name": "x"})
    with pytest.raises(ValueError):
        Client.http("http://h/", headers={"X": "a\r\nInjected: 1"})
    with pytest.raises(ValueError):
        Client.http("http://h/", headers={"X": "é"})
    with pytest.raises(TypeError, match="no_such_option"):
        Client.http("http://h/", no_such_option=1)
    with pytest.raises(ValueError):
        Client.http("http://h/", transport="carrier-pigeon")


async def test_http_client_refusals() -> None:
    async def handler(seen: Seen) -> Reply:
        return Reply(302, [("Location", "/x"), ("Content-Length", "0")])

    async with raw_server(handler) as server:
        http = HTTPClient()
        with pytest.raises(RedirectRefused, match="302"):
            await http.request("GET", URL.parse(server.url))
        with pytest.raises(InvalidRequest):
            await http.request("GET", URL.parse(server.url), [("Last-Event-ID", "é")])
        await http.aclose()


# =================================================================================================
# 3. The command line
# =================================================================================================


def mcpwire(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpwire", *args],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
    )


def test_cli_inspect_json(sdk_http: SdkServer) -> None:
    proc = mcpwire("inspect", sdk_http.url, "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    text = json.dumps(report)
    assert MODERN in text and "ref-server" in text
    for name in ("echo", "greet", "config://app", "review"):
        assert name in text


def test_cli_call_read_prompt(sdk_http: SdkServer, sdk_sse: SdkServer) -> None:
    proc = mcpwire(
        "call", sdk_http.url, "echo", "--args", '{"message": "hi ü"}', "--mode", "legacy"
    )
    assert (proc.returncode, proc.stdout.strip()) == (0, "hi ü"), proc.stderr
    proc = mcpwire("read", sdk_http.url, "config://app", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["contents"][0]["text"] == '{"debug": false}'
    proc = mcpwire("prompt", sdk_sse.url, "review", "--args", '{"code": "x"}', "--transport", "sse")
    assert proc.returncode == 0, proc.stderr
    assert "Please review this python code:" in proc.stdout
    proc = mcpwire(
        "call", sdk_http.url, "echo", "--args", '{"message": "h"}', "--header", "X-Test: 1"
    )
    assert proc.returncode == 0, proc.stderr
    proc = mcpwire("call", sdk_http.url, "echo", "--header", "no colon")
    assert proc.returncode == 2


def test_cli_config_url_entry(sdk_http: SdkServer, sdk_sse: SdkServer, tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    servers = {
        "http": {"url": sdk_http.url, "headers": {"X-Test": "1"}},
        "old": {"type": "sse", "serverUrl": sdk_sse.url},
    }
    config.write_text(json.dumps({"mcpServers": servers}))
    for name in ("http", "old"):
        proc = mcpwire(
            "call",
            "echo",
            "--args",
            '{"message": "cfg"}',
            "--config",
            str(config),
            "--server",
            name,
        )
        assert (proc.returncode, proc.stdout.strip()) == (0, "cfg"), proc.stderr


def test_cli_unreachable_exits_3() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    proc = mcpwire("inspect", url, "--json")
    assert proc.returncode == 3
    error = json.loads(proc.stdout)["error"]
    assert "Connection refused" in error["message"] and url in error["message"]
    proc = mcpwire("call", url, "echo")
    assert proc.returncode == 3
    assert "cannot reach the MCP server" in proc.stderr and "Traceback" not in proc.stderr


@pytest.fixture(scope="module")
def sdk_resumable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SdkServer]:
    server = SdkServer("resumable", tmp_path_factory.mktemp("sdk"))
    server.start()
    yield server
    server.stop()


async def test_sdk_resumes_a_closed_post_stream(sdk_resumable: SdkServer) -> None:
    """The SDK closes a call's stream mid-way (with an event store): resumed via GET."""
    progress: list[str | None] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async with Client.http(sdk_resumable.url, mode="legacy", reconnect_delay=0.05) as c:
        r = await c.call_tool("poll_me", {}, on_progress=on_progress)
        assert r.text == "resumed"
        assert progress == ["before", "after"]


async def test_sdk_standalone_stream_reconnects(sdk_resumable: SdkServer) -> None:
    """The SDK drops the GET stream; the client reopens it and keeps receiving."""
    changed = anyio.Event()

    async def on_note(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/tools/list_changed":
            changed.set()

    async with Client.http(
        sdk_resumable.url, mode="legacy", reconnect_delay=0.05, on_notification=on_note
    ) as c:
        with anyio.fail_after(10):
            while not changed.is_set():  # until the GET stream is up
                await c.call_tool("announce", {})
                with anyio.move_on_after(0.1):
                    await changed.wait()
        changed = anyio.Event()
        assert (await c.call_tool("drop_standalone", {})).text == "dropped"
        with anyio.fail_after(10):
            while not changed.is_set():
                await c.call_tool("announce", {})
                with anyio.move_on_after(0.1):
                    await changed.wait()
        assert c.transport._get_running  # type: ignore[attr-defined]


async def test_https(tmp_path: Path) -> None:
    server_tls, trusting = self_signed(tmp_path)

    async def handler(seen: Seen) -> Reply:
        return Reply.json(result(rid(seen), TOOL_RESULT))

    async with raw_server(handler, tls=server_tls) as server:
        for verify in (trusting, False):
            async with Client.http(
                server.url, mode=MODERN, validate_output=False, verify=verify
            ) as c:
                for _ in range(3):
                    assert (await c.call_tool("t", {})).text == "done"
                assert c.transport.http.connections_opened == 1  # type: ignore[attr-defined]
        # The default context verifies the certificate: a self-signed one is refused.
        with pytest.raises(ConnectionClosed, match=r"TLS: .*self.signed certificate"):
            async with Client.http(server.url, mode=MODERN):
                pass


async def test_https_to_a_peer_that_hangs_up_is_connection_closed() -> None:
    """A peer that closes during the TLS handshake (not an https server, or one
    that refuses us) fails the connect with mcpwire's error, not anyio's."""

    async def hang_up(stream: anyio.abc.SocketStream) -> None:
        await stream.receive()  # the ClientHello read first: a clean close, not a reset
        await stream.aclose()

    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, hang_up)
            with pytest.raises(ConnectionClosed, match="the peer closed the connection"):
                async with Client.http(f"https://127.0.0.1:{port}/mcp", mode=MODERN):
                    pass
            tg.cancel_scope.cancel()


@pytest.mark.parametrize(
    "refusal",
    [
        Reply.json({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "no"}}, 400),
        Reply.text(400, "Bad Request: Missing session ID"),
        Reply.text(404, "Not Found"),
    ],
    ids=["400-jsonrpc", "400-text", "404-text"],
)
async def test_auto_mode_falls_back_to_initialize(refusal: Reply) -> None:
    """A legacy-only server refuses the discover probe; initialize follows on the same URL
    (only a refused initialize would mean HTTP+SSE)."""
    routes = {"server/discover": refusal, "tools/call": Reply.json(result(3, TOOL_RESULT))}
    async with raw_server(legacy(routes)) as server:
        async with Client.http(server.url + f"?{refusal.status}", validate_output=False) as c:
            assert (c.era, c.protocol_version) == ("legacy", LEGACY)
            assert not c.transport.fell_back  # type: ignore[attr-defined]
            assert (await c.call_tool("t", {})).text == "done"
        assert server.methods()[:2] == ["server/discover", "initialize"]
        probe = server.seen[0]
        assert probe.headers["mcp-protocol-version"] == MODERN
        assert probe.headers["mcp-method"] == "server/discover"


async def test_a_stale_socket_is_retried_once_only_for_what_may_be_repeated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Even when the idle check misses a closed socket, a read-only request goes out
    again, once; a ``tools/call`` is not sent again (from here a server that read it
    and then closed looks the same) and fails, and the next call goes out fresh."""
    from mcpwire import _http_client_sock

    for cls in (_http_client_sock.StreamSocket, _http_client_sock.ProtocolSocket):
        monkeypatch.setattr(cls, "looks_dead", lambda self: False)

    async def handler(seen: Seen) -> Reply:
        answer = {"tools": [], "resultType": "complete"}
        reply = Reply.json(
            result(rid(seen), answer if seen.rpc_method == "tools/list" else TOOL_RESULT)
        )
        reply.close_after = True
        return reply

    async with (
        raw_server(handler) as server,
        Client.http(server.url, mode=MODERN, validate_output=False) as c,
    ):
        for _ in range(3):
            await anyio.sleep(0.02)  # let the FIN arrive before the socket is reused
            assert await c.list_tools(cache=False) == []
        assert server.connections == 4  # discover + 3 listings, each on a fresh socket
        assert [s.rpc_method for s in server.seen].count("tools/list") == 3
        await anyio.sleep(0.02)
        with pytest.raises(TransportError, match="the peer closed the connection"):
            await c.call_tool("t", {})
        assert (await c.call_tool("t", {})).text == "done"  # a fresh socket
        assert [s.rpc_method for s in server.seen].count("tools/call") == 1


@pytest.fixture(scope="module")
def sdk_json(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SdkServer]:
    server = SdkServer("json", tmp_path_factory.mktemp("sdk"))
    server.start()
    yield server
    server.stop()


async def test_sdk_json_responses(sdk_json: SdkServer) -> None:
    """JSON answers only (``json_response=True``), both eras.

    SDK behaviour: progress notifications are dropped in both eras, and in the legacy
    era a server->client request fails at the server ("no back-channel") instead of
    going out on the standalone GET stream, which the client has open.
    """
    for mode in ("legacy", "auto"):
        async with Client.http(sdk_json.url, mode=mode, elicitation=elicit) as c:
            legacy = mode == "legacy"
            await exercise(c, progress_expected=False, asks=not legacy)
            if legacy:
                assert c.transport._get_running  # type: ignore[attr-defined]
                with pytest.raises(JSONRPCError, match="no back-channel"):
                    await c.call_tool("greet", {})


@given(
    retry_ms=st.integers(min_value=0, max_value=600_000),
    attempt=st.integers(min_value=1, max_value=50),
)
def test_backoff_keeps_the_servers_retry_within_a_small_upward_jitter(
    retry_ms: int, attempt: int
) -> None:
    # SEP-1699: never sooner than the server's retry; the conformance suite warns
    # beyond +200 ms, so the jitter stays within 10 % and 50 ms.
    delay = backoff_delay(attempt, 1.0, retry_ms)
    asked = retry_ms / 1000.0
    assert asked <= delay <= asked + min(asked * 0.1, 0.05)


@given(attempt=st.integers(min_value=1, max_value=50))
def test_backoff_without_retry_is_exponential_jittered_and_capped(attempt: int) -> None:
    delay = backoff_delay(attempt, 0.5, None)
    expected = min(0.5 * 2.0 ** (attempt - 1), MAX_BACKOFF)
    assert expected * 0.75 <= delay <= expected * 1.25


async def test_idle_pool_keeps_32_sockets_by_default_and_is_configurable() -> None:
    """32 concurrent callers keep their sockets between waves (the default pool holds
    32 idle sockets per origin); ``max_keepalive`` sets the pool's size."""
    wave = {"arrived": 0, "callers": 0, "gate": anyio.Event()}

    async def handler(seen: Seen) -> Reply:
        # Nobody is answered before every caller of the wave holds a socket of its own.
        wave["arrived"] += 1  # type: ignore[operator]
        if wave["arrived"] == wave["callers"]:
            wave["gate"].set()  # type: ignore[union-attr]
        with anyio.fail_after(10):
            await wave["gate"].wait()  # type: ignore[union-attr]
        return Reply.json(result(None, {}))

    async def waves(http: HTTPClient, url: URL, callers: int) -> list[int]:
        opened = []
        for _ in range(2):
            wave.update(arrived=0, callers=callers, gate=anyio.Event())

            async def call() -> None:
                async with await http.request("POST", url, body=b"{}", timeout=10) as response:
                    assert await response.read_body(1024)

            async with anyio.create_task_group() as tg:
                for _ in range(callers):
                    tg.start_soon(call)
            opened.append(http.connections_opened)
        await http.aclose()
        return opened

    assert HTTPClient().max_keepalive == 32
    async with raw_server(handler) as server:
        url = URL.parse(server.url)
        assert await waves(HTTPClient(), url, 32) == [32, 32]
        assert await waves(HTTPClient(max_keepalive=4), url, 8) == [8, 12]
    with pytest.raises(ValueError, match="max_keepalive"):
        HTTPClient(max_keepalive=-1)


async def test_max_keepalive_option_of_client_http() -> None:
    async def handler(seen: Seen) -> Reply:
        return Reply.json(result(rid(seen), TOOL_RESULT))

    async with raw_server(handler) as server:
        for option, expected in (({}, 32), ({"max_keepalive": 3}, 3)):
            async with Client.http(server.url, mode=MODERN, validate_output=False, **option) as c:
                assert c.transport.http.max_keepalive == expected  # type: ignore[attr-defined]
                assert (await c.call_tool("t", {})).text == "done"


async def test_a_request_is_one_write_unless_its_body_is_large() -> None:
    """Head and body of a POST go to the socket in one ``send``; a body of
    ``JOIN_LIMIT`` bytes or more follows its head in a second one, as it is."""

    async def handler(seen: Seen) -> Reply:
        return Reply.json(result(None, {}), headers=[])

    class Recording:
        """Wraps the anyio stream (``send``) or the asyncio transport (``write``)."""

        def __init__(self, inner: Any) -> None:
            self.inner = inner
            self.sent: list[bytes] = []

        async def send(self, data: bytes) -> None:
            self.sent.append(bytes(data))
            await self.inner.send(data)

        def write(self, data: bytes) -> None:
            self.sent.append(bytes(data))
            self.inner.write(data)

        def __getattr__(self, name: str) -> Any:
            return getattr(self.inner, name)

    async with raw_server(handler) as server:
        http = HTTPClient()
        url = URL.parse(server.url)
        sock = await http._connect(url)
        if isinstance(sock, ProtocolSocket):  # asyncio: the transport is written to
            recording = Recording(sock.stream.transport)
            sock.stream.transport = recording  # type: ignore[assignment]
        else:
            recording = Recording(sock.stream)
            sock.stream = recording  # type: ignore[assignment]
        sock.idle_since = time.monotonic()
        http._idle[url.origin] = [sock]
        bodies = (b'{"jsonrpc":"2.0","id":1,"method":"ping"}', b"x" * (JOIN_LIMIT - 1), b"")
        for body in (*bodies, b"y" * JOIN_LIMIT, b"z" * 100_000):
            async with await http.request("POST", url, body=body, timeout=10) as response:
                assert response.status == 200
                await response.read_body(1024)
            if len(body) >= JOIN_LIMIT:
                assert recording.sent.pop() == body
            sent = recording.sent.pop()
            assert recording.sent == []
            assert sent.startswith(b"POST /mcp HTTP/1.1\r\n")
            assert sent.endswith(b"\r\n\r\n" + (b"" if len(body) >= JOIN_LIMIT else body))
            assert server.seen[-1].body == body
        assert http.connections_opened == 1
        await http.aclose()


async def test_a_larger_max_body_size_admits_the_message_too() -> None:
    """``max_body_size`` alone is enough for a JSON response above the default
    16 MiB parse limit; an explicit ``limits`` still wins."""
    big = "x" * (17 * 1024 * 1024)

    async def handler(seen: Seen) -> Reply:
        rpc = seen.json
        if rpc.get("method") == "tools/call":
            value = {"content": [{"type": "text", "text": big}], "isError": False}
            return Reply.json(result(rpc["id"], value))
        return Reply.json(result(rpc.get("id"), {}))

    async with raw_server(handler) as server:
        size = 32 * 1024 * 1024
        async with Client.http(
            server.url, mode=MODERN, validate_output=False, max_body_size=size
        ) as c:
            assert c.transport.options.limits.max_size == size  # type: ignore[attr-defined]
            assert (await c.call_tool("t", {})).text == big
        tight = Limits(max_size=1024 * 1024)
        async with Client.http(
            server.url, mode=MODERN, validate_output=False, max_body_size=size, limits=tight
        ) as c:
            with pytest.raises(JSONRPCError, match="exceeds the limit of 1048576 bytes"):
                await c.call_tool("t", {})


async def test_a_server_whose_cursors_never_end_is_given_up_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``list_tools`` follows ``nextCursor`` until the server stops giving one, a
    cursor repeats, or ``MAX_PAGES`` pages came: a server that makes a new cursor
    for every page must not hold the caller (and its memory) forever."""
    import mcpwire._client

    monkeypatch.setattr(mcpwire._client, "MAX_PAGES", 25)

    async def tools_list(seen: Seen) -> Reply:
        n = int(seen.json.get("params", {}).get("cursor") or 0)
        page = {"tools": [{"name": f"t{n}", "inputSchema": {"type": "object"}}]}
        return Reply.json(result(rid(seen), {**page, "nextCursor": str(n + 1)}))

    async with raw_server(legacy({"tools/list": tools_list})) as server:
        async with legacy_client(server.url) as c:
            with anyio.fail_after(10), pytest.raises(RemoteProtocolError, match="25 pages"):
                await c.list_tools()
        assert len([s for s in server.seen if s.rpc_method == "tools/list"]) == 25


@pytest.mark.parametrize("stall", ["drip", "1xx"])
async def test_a_notification_post_the_server_stalls_is_bounded_as_a_whole(stall: str) -> None:
    """``timeout`` bounds a one-way POST's whole exchange, not only each read: a
    server that drips the answer's body, or sends 1xx heads without end, does not
    hold the sender (here ``notifications/initialized``, so the connect) longer."""
    if stall == "drip":
        pieces = [b"HTTP/1.1 202 Accepted\r\nContent-Length: 4000\r\n\r\n"] + [b"x"] * 4000
    else:
        pieces = [b"HTTP/1.1 102 Processing\r\n\r\n"] * 4000
    ack = Reply(raw=pieces, delay=0.05)
    async with raw_server(legacy({}, ack=ack)) as server:
        with anyio.fail_after(20):  # the stall would last 100 s and more
            async with legacy_client(server.url, timeout=1.0):
                pass


def test_which_messages_may_be_posted_twice() -> None:
    """A POST is sent once more after a kept-alive socket broke before any answer
    only if that is harmless: notifications, responses and requests that change
    nothing; a batch only if every request in it is such."""
    listing, call = Request(1, "tools/list"), Request(2, "tools/call", {"name": "x"})
    assert repeatable(listing)
    assert not repeatable(call)
    assert repeatable(Notification("notifications/initialized"))
    assert repeatable(Response(3, {}))
    assert repeatable([listing, Notification("notifications/cancelled", {"requestId": 9})])
    assert not repeatable([listing, call])
