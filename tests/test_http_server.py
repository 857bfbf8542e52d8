"""The streamable-HTTP server transport (``Server.serve_http``), both protocol eras.

Every network test talks to a server bound to 127.0.0.1 on a free port, with a raw
HTTP/1.1 client on ``h11`` (``Raw``, in ``http_raw.py``), so status codes, headers and
SSE bytes are checked exactly as they go over the wire; nothing depends on mcpwire's
own HTTP client. The sections:

1. the sans-IO header helpers (``mcpwire.sansio._http``);
2. one test per status-code rule of spec-notes sections 7.2-7.4 and design.md's
   bad-input rules (202, 400, 403, 404, 405, 406, 409, 410, 413, 415, 421, 431,
   -32020, -32022, -32601/404, -32700);
3. streams: the SSE upgrade when progress comes first, priming events and ``retry``,
   ``Last-Event-ID`` replay scoped to its session, keep-alive comments, disconnect
   (modern: cancels; legacy: does not), batches, keep-alive connections, graceful
   shutdown, slow clients;
4. sessions: limits, eviction, idle expiry, and a soak (1,000 sessions, flat RSS);
5. interop with the reference SDK (``mcp==2.3.0``): its ``Client`` drives our example
   server over HTTP in every mode, and the SDK server's own SSE output (CRLF line
   ends) goes through our ``SSEDecoder`` split at every few bytes;
6. the command line (``mcpwire serve --transport http``, the example's ``--transport
   http``) in child processes.
"""

from __future__ import annotations

import functools
import gc
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import h11
import orjson
import pytest
from http_raw import (
    ACCEPT,
    LEGACY,
    MODERN,
    PV,
    Events,
    Raw,
    Reply,
    client,
    free_port,
    init_body,
    initialize,
    modern,
    note,
    rpc,
    running,
)
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies import json_values

from mcpwire import (
    Client,
    Context,
    HTTPServer,
    HTTPServerOptions,
    JSONRPCError,
    MemoryEventStore,
    Server,
    Session,
)
from mcpwire._aio_stream import JOIN_LIMIT
from mcpwire._http_modern import StreamedSession
from mcpwire._http_wire import HTTPConnection
from mcpwire.examples.everything import server as everything
from mcpwire.sansio import (
    SSEDecoder,
    SSEEvent,
    accepts,
    decode_header_value,
    encode_header_value,
    host_allowed,
    invalid_x_mcp_header,
    is_json_media_type,
    is_loopback,
    is_token,
    origin_allowed,
    param_header_mismatch,
    parse_media_type,
    routing_header_mismatch,
    split_host,
)
from mcpwire.sansio._xmcp import param_header_value

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT = 15


# =================================================================================================
# A probe app (the raw HTTP/1.1 client on h11 is in http_raw.py)
# =================================================================================================


def probe_app(wrap: Callable[[Any], Any] = lambda fn: fn) -> tuple[Server, dict[str, int]]:
    """A small server whose tools report what happened to them (``block`` decorated
    with ``wrap``)."""
    app = Server("probe", "1.0")
    state = {"cancelled": 0, "finished": 0}

    @app.tool()
    @wrap
    async def block(seconds: float = 30.0) -> str:
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            state["cancelled"] += 1
            raise
        state["finished"] += 1
        return "done"

    @app.tool()
    async def steps(ctx: Context, count: int = 3, delay: float = 0.05) -> str:
        for i in range(1, count + 1):
            await anyio.sleep(delay)
            await ctx.report_progress(i, count)
        state["finished"] += 1
        return f"{count} steps"

    schema = {
        "type": "object",
        "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "flag": {"type": "boolean", "x-mcp-header": "Flag"},
        },
        "required": ["region"],
    }

    @app.tool()
    async def polled(ctx: Context) -> str:
        await ctx.info("before")
        # The HTTP session transport's hook for SEP-1699 polling (no Context API yet).
        transport = ctx._rctx.session.transport
        assert await transport.close_sse_stream(ctx.request_id)  # type: ignore[attr-defined]
        await anyio.sleep(0.2)
        await ctx.info("after")
        return "polled"

    @app.tool(input_schema=schema)
    def routed(region: str, count: int = 0, flag: bool = False) -> str:
        return f"{region}:{count}:{flag}"

    return app, state


# =================================================================================================
# 1. Header helpers (pure)
# =================================================================================================


def test_media_types_with_parameters() -> None:
    parsed = parse_media_type('text/event-stream; charset="utf-8"; q=0.5')
    assert parsed is not None
    assert (parsed.essence, parsed.param("charset"), parsed.q) == (
        "text/event-stream",
        "utf-8",
        0.5,
    )
    assert is_json_media_type("application/json")
    assert is_json_media_type("Application/JSON; charset=utf-8")
    assert not is_json_media_type("application/jsonl")
    assert not is_json_media_type("text/plain")
    assert not is_json_media_type(None)
    assert parse_media_type("nonsense") is None
    assert parse_media_type("a/b; =x") is None


@pytest.mark.parametrize(
    ("accept", "json_ok", "sse_ok"),
    [
        (None, True, True),
        ("", True, True),
        ("application/json, text/event-stream", True, True),
        ("text/event-stream;charset=utf-8", False, True),
        ("application/json", True, False),
        ("*/*", True, True),
        ("text/*", False, True),
        ("application/*;q=0.2, text/event-stream;q=0", True, False),
        ("text/html", False, False),
    ],
)
def test_accept_negotiation(accept: str | None, json_ok: bool, sse_ok: bool) -> None:
    assert accepts(accept, "application/json") is json_ok
    assert accepts(accept, "text/event-stream") is sse_ok


def test_host_and_origin_matching() -> None:
    local = ("localhost", "127.0.0.1", "[::1]")
    assert host_allowed("localhost:8000", local)
    assert host_allowed("LOCALHOST", local)
    assert host_allowed("[::1]:9", local)
    assert host_allowed("127.0.0.1", local)
    assert not host_allowed("evil.example", local)
    assert not host_allowed("localhost.evil.example:80", local)
    assert not host_allowed(None, local)
    assert host_allowed("api.example:443", ["api.example:443"])
    assert not host_allowed("api.example:8443", ["api.example:443"])
    assert host_allowed("api.example:8443", ["api.example:*"])
    assert host_allowed("anything", ["*"])
    assert split_host("[::1]:80") == ("[::1]", "80")
    assert split_host("a:b") is None
    origins = ("http://localhost", "https://localhost")
    assert origin_allowed("http://localhost:3000", origins)
    assert not origin_allowed("http://evil.example", origins)
    assert not origin_allowed("ftp://localhost", origins)
    assert not origin_allowed("null", origins)
    assert origin_allowed("null", ["null"])
    assert origin_allowed("http://x:1", ["*"])
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.1")


def test_header_value_encoding() -> None:
    assert encode_header_value("plain") == "plain"
    for special in ["héllo", " lead", "trail ", "a\tb", "=?base64?eA==?=", "line\nbreak"]:
        encoded = encode_header_value(special)
        assert encoded.startswith("=?base64?") and encoded.isascii()
        assert decode_header_value(encoded) == special
    assert decode_header_value("=?base64?not base64!?=") is None
    assert decode_header_value("=?base64?YQ=?=") is None  # not canonical
    assert decode_header_value("=?base64?/w==?=") is None  # not UTF-8
    assert decode_header_value(None) is None
    assert is_token("Region") and not is_token("Bad Name") and not is_token("")


@given(st.text())
def test_header_value_round_trip(value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return
    encoded = encode_header_value(value)
    assert all(0x20 <= ord(c) <= 0x7E for c in encoded)
    assert decode_header_value(encoded) == value


@given(value=json_values, kind=st.sampled_from(["integer", "string", "boolean"]))
def test_the_server_accepts_the_param_headers_our_client_sends(value: Any, kind: str) -> None:
    """Whatever the argument, the headers our client derives from it (or leaves
    out) pass the server's check: client and server follow one rule."""
    schema = {"type": "object", "properties": {"p": {"type": kind, "x-mcp-header": "P"}}}
    rendered = param_header_value(value)
    headers = {} if rendered is None else {"mcp-param-p": encode_header_value(rendered)}
    assert param_header_mismatch(schema, {"p": value}, headers) is None


@given(method=st.text(), name=st.text())
def test_the_server_accepts_the_routing_headers_our_client_sends(method: str, name: str) -> None:
    """Any method and tool name, written as our client writes them (escaped when
    a header cannot carry them as they are), pass the server's check."""
    params = {"name": name, "_meta": {PV: MODERN}}
    headers = {
        "mcp-protocol-version": MODERN,
        "mcp-method": encode_header_value(method),
        "mcp-name": encode_header_value(name),
    }
    assert routing_header_mismatch(method, params, headers) is None


def test_routing_and_param_header_checks() -> None:
    params = {"name": "routed", "_meta": {PV: MODERN}}
    good = {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "routed"}
    assert routing_header_mismatch("tools/call", params, good) is None
    for key, value in [("mcp-method", "tools/list"), ("mcp-name", "other"), ("mcp-name", None)]:
        bad = {**good, key: value}
        bad = {k: v for k, v in bad.items() if v is not None}
        assert routing_header_mismatch("tools/call", params, bad) is not None
    assert routing_header_mismatch("tools/call", params, good, {"mcp-method"}) is not None
    schema = {
        "type": "object",
        "properties": {
            "n": {"type": "integer", "x-mcp-header": "N"},
            "s": {"type": "string", "x-mcp-header": "S"},
        },
    }
    assert invalid_x_mcp_header(schema) is None
    assert (
        param_header_mismatch(
            schema, {"n": 42, "s": "x"}, {"mcp-param-n": "42", "mcp-param-s": "x"}
        )
        is None
    )
    assert param_header_mismatch(schema, {"n": 42.0}, {"mcp-param-n": "42"}) is None
    assert param_header_mismatch(schema, {"n": 42}, {"mcp-param-n": "42.0"}) is None
    assert param_header_mismatch(schema, {"n": 42}, {"mcp-param-n": "43"}) is not None
    assert param_header_mismatch(schema, {"n": 42}, {}) is not None
    # No header can carry these (our client omits it): not demanded, and a
    # header that is sent anyway must still match.
    assert param_header_mismatch(schema, {"n": 2**60}, {}) is None
    assert param_header_mismatch(schema, {"n": 3.5}, {}) is None
    assert param_header_mismatch(schema, {"n": 2**60}, {"mcp-param-n": str(2**60)}) is None
    assert param_header_mismatch(schema, {"n": 2**60}, {"mcp-param-n": "1"}) is not None
    assert param_header_mismatch(schema, {}, {"mcp-param-s": "x"}) is not None
    assert invalid_x_mcp_header({"properties": {"f": {"type": "number", "x-mcp-header": "F"}}})
    assert invalid_x_mcp_header({"items": {"x-mcp-header": "F", "type": "string"}})
    dup = {
        "properties": {
            "a": {"type": "string", "x-mcp-header": "A"},
            "b": {"type": "string", "x-mcp-header": "a"},
        }
    }
    assert invalid_x_mcp_header(dup)


async def test_memory_event_store_is_bounded_and_scoped(anyio_backend: str) -> None:
    from mcpwire.sansio import Notification

    store = MemoryEventStore(max_events_per_stream=3, max_streams_per_session=2)
    prime = await store.store("s1", "1", None)
    ids = [await store.store("s1", "1", Notification(f"n{i}")) for i in range(5)]
    # Only the newest 3 are kept: a replay from before them would have a hole.
    assert await store.replay_after("s1", prime) is None
    assert await store.replay_after("s1", ids[0]) is None
    replay = await store.replay_after("s1", ids[1])
    assert replay is not None and replay[0] == "1"
    assert [m.method for _, m in replay[1]] == ["n2", "n3", "n4"]
    assert [i for i, _ in replay[1]] == ids[2:]
    assert await store.replay_after("s2", prime) is None  # another session sees nothing
    assert await store.replay_after("s1", "1:99") is None
    assert await store.replay_after("s1", "garbage") is None
    await store.store("s1", "2", None)
    await store.store("s1", "3", None)  # evicts stream "1"
    assert await store.replay_after("s1", ids[1]) is None
    await store.forget("s1")
    assert len(store) == 0


def test_an_empty_event_store_given_is_the_one_used() -> None:
    """``MemoryEventStore`` has a length (its sessions), so an empty one is falsy:
    the server still uses the store it is given, not a default one."""
    store = MemoryEventStore(max_events_per_stream=2)
    assert HTTPServer(everything, HTTPServerOptions(), event_store=store).event_store is store


async def test_server_serve_http_reports_its_port(anyio_backend: str) -> None:
    """The public entry point: ``await tg.start(server.serve_http, host, 0)`` -> the port."""
    app, _ = probe_app()
    async with anyio.create_task_group() as tg:
        port = await tg.start(app.serve_http, "127.0.0.1", 0)
        assert isinstance(port, int) and port > 0
        async with client(port) as raw:
            body, headers = modern(1, "tools/list")
            reply = await raw.request(body=body, headers=headers)
            assert {t["name"] for t in reply.json()["result"]["tools"]} >= {"block", "routed"}
        tg.cancel_scope.cancel()
    with pytest.raises(ValueError, match="session_idle_timeout"):
        await app.serve_http("127.0.0.1", 0, session_idle_timeout=-1)


# =================================================================================================
# 2. Status codes (spec-notes 7.2-7.4, design.md "Behaviour on bad input")
# =================================================================================================


async def test_notifications_get_202(anyio_backend: str) -> None:
    async with running() as http, client(http.port or 0) as raw:
        sid = await initialize(raw)  # notifications/initialized -> 202 inside
        reply = await raw.request(
            body=note("notifications/progress", {"progressToken": 1, "progress": 1}),
            headers={"mcp-session-id": sid},
        )
        assert (reply.status, reply.body) == (202, b"")
        assert reply.headers["content-type"] == "application/json"  # pain point 23
        # Modern: no session; a client notification is accepted and dropped.
        reply = await raw.request(
            body=note("notifications/cancelled", {"requestId": 1}),
            headers={"mcp-protocol-version": MODERN},
        )
        assert (reply.status, reply.body) == (202, b"")
        reply = await raw.request(
            body=note("notifications/cancelled", {"requestId": 1}),
            headers={"mcp-protocol-version": "1999-01-01"},
        )
        assert reply.status == 400 and reply.json()["error"]["code"] == -32022


async def test_legacy_request_without_session_is_400(anyio_backend: str) -> None:
    async with running() as http, client(http.port or 0) as raw:
        reply = await raw.request(body=rpc(1, "tools/list"))
        assert reply.status == 400
        body = reply.json()
        assert body["id"] is None and body["error"]["code"] == -32600
        reply = await raw.request(body=note("notifications/initialized"))
        assert reply.status == 400


async def test_unknown_and_deleted_sessions_are_404(anyio_backend: str) -> None:
    async with running() as http, client(http.port or 0) as raw:
        reply = await raw.request(body=rpc(1, "tools/list"), headers={"mcp-session-id": "nope"})
        assert reply.status == 404
        assert reply.json()["error"] == {"code": -32600, "message": "Session not found"}
        sid = await initialize(raw)
        ok = await raw.request(body=rpc(2, "tools/list"), headers={"mcp-session-id": sid})
        assert ok.status == 200 and "tools" in ok.json()["result"]
        deleted = await raw.request("DELETE", headers={"mcp-session-id": sid})
        assert deleted.status == 200
        assert len(http.legacy.table) == 0
        for method, body in [("POST", rpc(3, "tools/list")), ("GET", None), ("DELETE", None)]:
            headers: dict[str, str | None] = {"mcp-session-id": sid}
            if method == "GET":
                headers["accept"] = "text/event-stream"
            reply = await raw.request(method, body, headers)
            assert reply.status == 404, method
        # pain point 9: initialize with a stale id is served and gets a new session.
        reply = await raw.request(body=init_body(), headers={"mcp-session-id": sid})
        assert reply.status == 200
        assert reply.headers["mcp-session-id"] not in (sid, "")
        new = reply.headers["mcp-session-id"]
        assert new.isascii() and all(0x21 <= ord(c) <= 0x7E for c in new) and len(new) >= 32


async def test_legacy_protocol_version_header_must_be_supported(anyio_backend: str) -> None:
    async with running() as http, client(http.port or 0) as raw:
        sid = await initialize(raw, "2025-06-18")
        # Another supported legacy version is tolerated (the 0.1.16 conformance harness
        # sends 2025-03-26 in a 2025-11-25 session); unsupported ones are 400.
        for version, status in [
            ("2025-06-18", 200),
            (None, 200),
            ("2025-03-26", 200),
            ("bogus", 400),
            (MODERN, 400),
        ]:
            reply = await raw.request(
                body=rpc(5, "ping"),
                headers={"mcp-session-id": sid, "mcp-protocol-version": version},
            )
            assert reply.status == status, version


async def test_modern_get_and_delete_are_405(anyio_backend: str) -> None:
    async with running() as http, client(http.port or 0) as raw:
        for method in ("GET", "DELETE"):
            reply = await raw.request(
                method, headers={"mcp-protocol-version": MODERN, "accept": "text/event-stream"}
            )
            assert reply.status == 405
            assert reply.headers["allow"] == "POST"
        reply = await raw.request("PUT", b"{}")
        assert reply.status == 405 and "POST" in reply.headers["allow"]


async def test_accept_and_content_type_rules_406_415(anyio_backend: str) -> None:
    async with running() as http, client(http.port or 0) as raw:
        body, headers = modern(1, "tools/list")
        reply = await raw.request(body=body, headers={**headers, "accept": "text/html"})
        assert reply.status == 406
        reply = await raw.request(body=body, headers={**headers, "content-type": "text/plain"})
        assert reply.status == 415
        reply = await raw.request(body=body, headers={**headers, "content-type": None})
        assert reply.status == 415
        # Lenient where it costs nothing (pain point 23): no Accept, JSON-only Accept,
        # parameters on the media types.
        for extra in (
            {"accept": None},
            {"accept": "application/json"},
            {"content-type": "application/json; charset=utf-8"},
        ):
            reply = await raw.request(body=body, headers={**headers, **extra})
            assert reply.status == 200, extra
            assert reply.json()["result"]["tools"]
        # A GET stream needs text/event-stream.
        sid = await initialize(raw)
        reply = await raw.request(
            "GET", headers={"mcp-session-id": sid, "accept": "application/json"}
        )
        assert reply.status == 406


async def test_oversized_body_is_413(anyio_backend: str) -> None:
    async with running(max_body_size=1000) as http:
        async with client(http.port or 0) as raw:
            body, headers = modern(
                1, "tools/call", {"name": "echo", "arguments": {"message": "x" * 2000}}
            )
            reply = await raw.request(body=body, headers=headers)
            assert reply.status == 413
        async with client(http.port or 0) as raw:  # chunked: refused once past the limit
            raw_headers = {**headers, "transfer-encoding": "chunked", "content-length": None}
            await raw.stream.send(
                raw.conn.send(
                    h11.Request(
                        method="POST",
                        target="/mcp",
                        headers=[
                            ("host", "localhost"),
                            ("content-type", "application/json"),
                            *[(k, v) for k, v in raw_headers.items() if v is not None],
                        ],
                    )
                )
            )
            for _ in range(3):
                await raw.stream.send(raw.conn.send(h11.Data(data=b"x" * 600)))
            assert (await raw.head()).status == 413
        async with client(http.port or 0) as raw:
            body, headers = modern(2, "tools/list")
            assert (await raw.request(body=body, headers=headers)).status == 200


async def test_origin_403_and_host_421(anyio_backend: str) -> None:
    body, headers = modern(1, "tools/list")
    async with running() as http:
        for extra, status in [
            ({"origin": "http://evil.example"}, 403),
            ({"origin": "http://localhost:5173"}, 200),
            ({"origin": "https://127.0.0.1"}, 200),
            ({"host": "evil.example"}, 421),
            ({"host": "evil.example:8000"}, 421),
            ({"host": "localhost"}, 200),
            ({"host": "[::1]:1234"}, 200),
        ]:
            async with client(http.port or 0) as raw:
                reply = await raw.request(body=body, headers={**headers, **extra})
            assert reply.status == status, extra
            if status != 200:
                assert reply.headers["content-type"].startswith("text/plain")
    # Both checks can be configured or switched off.
    options: dict[str, Any] = {"allowed_hosts": None, "allowed_origins": ("http://app.example",)}
    async with running(**options) as http, client(http.port or 0) as raw:
        reply = await raw.request(
            body=body,
            headers={**headers, "host": "mcp.example", "origin": "http://app.example"},
        )
        assert reply.status == 200


async def test_invalid_bodies_get_their_json_rpc_error(anyio_backend: str) -> None:
    async with running() as http, client(http.port or 0) as raw:
        _, headers = modern(1, "tools/list")
        cases: list[tuple[bytes, int, Any]] = [
            (b'{"jsonrpc": "2.0", "id": 1, "method"', -32700, None),
            (b"\xff\xfe", -32700, None),
            (b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}', -32600, None),
            (b'{"jsonrpc":"1.0","id":7,"method":"tools/list"}', -32600, 7),
            (b'{"jsonrpc":"2.0","id":8,"method":"tools/list","params":[1]}', -32602, 8),
            (b"42", -32600, None),
            # A malformed response is not answered in JSON-RPC: the 400 names no id.
            (b'{"jsonrpc":"2.0","id":5,"result":[1]}', -32600, None),
            (b'{"jsonrpc":"1.0","id":6,"result":{}}', -32600, None),
            # Both a request and a response: not run, -32600 with its id.
            (b'{"jsonrpc":"2.0","id":4,"method":"tools/list","result":{}}', -32600, 4),
        ]
        for payload, code, rid in cases:
            reply = await raw.request(body=payload, headers=headers)
            assert reply.status == 400, payload
            error = reply.json()
            assert error["error"]["code"] == code, payload
            assert error["id"] == rid
        # Still serving after all of it.
        body, headers = modern(9, "tools/list")
        assert (await raw.request(body=body, headers=headers)).status == 200


async def test_targets_route_as_asgi_hosts_route_them(anyio_backend: str) -> None:
    """Percent-encoded octets compare as what they encode (RFC 3986 section
    6.2.2.2), and the absolute form is accepted (RFC 9112 section 3.2.2): the
    native server routes a target as an ASGI host would hand it to the app."""
    async with running() as http:
        body, headers = modern(1, "tools/list")
        absolute = f"http://127.0.0.1:{http.port}/mcp"
        for path, status in [("/m%63p", 200), (absolute, 200), ("/mcp%2F", 404), ("*", 404)]:
            async with client(http.port or 0) as raw:
                reply = await raw.request(body=body, headers=headers, path=path)
            assert reply.status == status, (path, reply.body)
            if status == 200:
                assert "tools" in reply.json()["result"]


async def test_an_absolute_form_target_is_judged_by_its_authority(anyio_backend: str) -> None:
    """RFC 9112 section 3.2.2: the server MUST ignore ``Host`` for an absolute-form
    target and use the target's authority, so that is what the allow-list checks:
    a foreign authority is 421 whatever ``Host`` says, a loopback one is served."""
    async with running() as http:
        body, headers = modern(1, "tools/list")
        local = f"127.0.0.1:{http.port}"
        for target, host, status in [
            ("http://rebound.example/mcp", local, 421),
            (f"http://rebound.example:{http.port}/mcp", local, 421),
            ("https://user@127.0.0.1/mcp", local, 421),
            ("http:///mcp", local, 421),
            (f"HTTP://LOCALHOST:{http.port}/mcp", "rebound.example", 200),
            (f"http://[::1]:{http.port}/mcp?x=1", local, 200),
        ]:
            async with client(http.port or 0) as raw:
                reply = await raw.request(body=body, headers={**headers, "host": host}, path=target)
            assert reply.status == status, (target, host, reply.body)


async def test_modern_header_rules_32020_32022_and_404(anyio_backend: str) -> None:
    app, _ = probe_app()
    async with running(app) as http, client(http.port or 0) as raw:

        async def check(body: Any, headers: Any, status: int, code: int | None) -> dict[str, Any]:
            reply = await raw.request(body=body, headers=headers)
            assert reply.status == status, (body, headers, reply.body)
            payload: dict[str, Any] = reply.json()
            if code is not None:
                assert payload["error"]["code"] == code, payload
            return payload

        args = {"region": "eu", "count": 3, "flag": True}
        body, headers = modern(1, "tools/call", {"name": "routed", "arguments": args})
        param = {"mcp-param-region": "eu", "mcp-param-count": "3", "mcp-param-flag": "true"}
        ok = await check(body, {**headers, **param}, 200, None)
        assert ok["result"]["content"][0]["text"] == "eu:3:True"
        await check(body, {**headers, **param, "mcp-param-count": "3.0"}, 200, None)  # numeric
        # Mcp-Method: missing, or not the body's method.
        await check(body, {**headers, **param, "mcp-method": None}, 400, -32020)
        await check(body, {**headers, **param, "mcp-method": "tools/list"}, 400, -32020)
        # Mcp-Name: missing, different, and the base64 escape (good and broken).
        await check(body, {**headers, **param, "mcp-name": None}, 400, -32020)
        await check(body, {**headers, **param, "mcp-name": "other"}, 400, -32020)
        escaped = encode_header_value(" routed")
        assert escaped.startswith("=?base64?")
        await check(body, {**headers, **param, "mcp-name": escaped}, 400, -32020)
        await check(body, {**headers, **param, "mcp-name": "=?base64?cm91dGVk?="}, 200, None)
        await check(body, {**headers, **param, "mcp-name": "=?base64?!!?="}, 400, -32020)
        # Mcp-Param-*: missing, different, or present without its argument.
        await check(body, {**headers, **param, "mcp-param-region": None}, 400, -32020)
        await check(body, {**headers, **param, "mcp-param-count": "4"}, 400, -32020)
        only_region, h2 = modern(2, "tools/call", {"name": "routed", "arguments": {"region": "eu"}})
        await check(only_region, {**h2, "mcp-param-region": "eu"}, 200, None)
        await check(
            only_region, {**h2, "mcp-param-region": "eu", "mcp-param-flag": "false"}, 400, -32020
        )
        # A non-ASCII value travels base64-encoded.
        uni, h3 = modern(3, "tools/call", {"name": "routed", "arguments": {"region": "zürich"}})
        await check(uni, {**h3, "mcp-param-region": encode_header_value("zürich")}, 200, None)
        # MCP-Protocol-Version: missing or not the body's version -> -32020 ...
        await check(body, {**headers, **param, "mcp-protocol-version": None}, 400, -32020)
        await check(body, {**headers, **param, "mcp-protocol-version": "2026-01-01"}, 400, -32020)
        # ... and a version we do not serve (header and body agreeing) -> -32022.
        old, h4 = modern(4, "tools/list")
        old["params"]["_meta"][PV] = "2099-01-01"
        error = await check(old, {**h4, "mcp-protocol-version": "2099-01-01"}, 400, -32022)
        assert error["error"]["data"]["requested"] == "2099-01-01"
        assert MODERN in error["error"]["data"]["supported"]
        # Missing envelope -> -32602; unknown method -> HTTP 404 with -32601.
        await check(
            rpc(5, "tools/list", {"_meta": {PV: MODERN}}),
            h4 | {"mcp-protocol-version": MODERN},
            400,
            -32602,
        )
        unknown, h5 = modern(6, "no/such/method")
        await check(unknown, h5, 404, -32601)
        # initialize stamped as modern (header and envelope) is an unknown modern method.
        stamped, h6 = modern(7, "initialize", {"protocolVersion": MODERN})
        await check(stamped, h6, 404, -32601)
        # A routing header sent twice is a mismatch too (which copy would count?).
        await raw.send(
            body=body, headers={**headers, **param}, extra=[("mcp-method", "tools/call")]
        )
        reply = await raw.rest(await raw.head())
        assert reply.status == 400 and reply.json()["error"]["code"] == -32020


# =================================================================================================
# 3. Streams, connections, shutdown
# =================================================================================================


async def test_sse_upgrade_when_progress_comes_first_modern(anyio_backend: str) -> None:
    async with running() as http, client(http.port or 0) as raw:
        params = {"name": "long_task", "arguments": {"steps": 3, "delay": 0.01}}
        body, headers = modern(1, "tools/call", params, progressToken="tok")
        reply = await raw.request(body=body, headers=headers)
        assert reply.status == 200
        assert reply.headers["content-type"] == "text/event-stream"
        assert reply.headers["x-accel-buffering"] == "no"
        assert reply.headers["cache-control"] == "no-cache"
        assert "mcp-session-id" not in reply.headers  # modern: never minted
        events = reply.events()
        assert all(e.id == "" for e in events)  # no resumability in the modern era
        messages = reply.messages()
        assert [m["params"]["progress"] for m in messages[:-1]] == [1, 2, 3]
        assert messages[-1]["id"] == 1
        assert messages[-1]["result"]["content"][0]["text"] == "finished 3 steps"
        # No progress token: nothing comes first, so the answer is plain JSON.
        body, headers = modern(2, "tools/call", params)
        reply = await raw.request(body=body, headers=headers)
        assert reply.headers["content-type"] == "application/json"
        assert reply.json()["result"]["content"][0]["text"] == "finished 3 steps"
        # Logs asked for in _meta ride the same stream, before the result.
        body, headers = modern(
            3, "tools/call", {"name": "log_demo"}, **{"io.modelcontextprotocol/logLevel": "warning"}
        )
        messages = (await raw.request(body=body, headers=headers)).messages()
        assert [m["params"]["level"] for m in messages[:-1]] == ["warning", "error"]


@pytest.mark.parametrize(("version", "primed"), [("2025-11-25", True), ("2025-06-18", False)])
async def test_sse_upgrade_legacy_with_priming_and_retry(
    anyio_backend: str, version: str, primed: bool
) -> None:
    async with running() as http, client(http.port or 0) as raw:
        sid = await initialize(raw, version)
        params = {"name": "long_task", "arguments": {"steps": 2, "delay": 0.01}}
        params["_meta"] = {"progressToken": 7}
        reply = await raw.request(
            body=rpc(2, "tools/call", params), headers={"mcp-session-id": sid}
        )
        assert reply.headers["content-type"] == "text/event-stream"
        assert reply.headers["mcp-session-id"] == sid
        events = reply.events()
        if primed:  # transports.mdx 2025-11-25: an event id and empty data, first
            assert events[0].data == "" and events[0].id and events[0].retry == 1000
            events = events[1:]
        assert [orjson.loads(e.data).get("method") for e in events] == [
            "notifications/progress",
            "notifications/progress",
            None,
        ]
        ids = [e.id for e in events]
        assert len(set(ids)) == 3 and all(":" in i for i in ids)
        assert len({i.split(":")[0] for i in ids}) == 1  # one stream, named in every id


async def test_sse_keepalive_comments_while_a_tool_is_quiet(anyio_backend: str) -> None:
    app, _ = probe_app()
    async with running(app, sse_keepalive=0.1) as http, client(http.port or 0) as raw:
        body, headers = modern(1, "tools/call", {"name": "block", "arguments": {"seconds": 0.45}})
        reply = await raw.request(body=body, headers=headers)
        assert reply.headers["content-type"] == "text/event-stream"
        assert reply.body.count(b":keep-alive\n\n") >= 2
        assert reply.messages()[-1]["result"]["content"][0]["text"] == "done"
        # A client that takes only JSON gets JSON, however long it takes.
        body, headers = modern(2, "tools/call", {"name": "block", "arguments": {"seconds": 0.25}})
        reply = await raw.request(body=body, headers={**headers, "accept": "application/json"})
        assert reply.headers["content-type"] == "application/json"


async def test_json_response_mode_never_streams(anyio_backend: str) -> None:
    async with running(json_response=True) as http, client(http.port or 0) as raw:
        params = {"name": "long_task", "arguments": {"steps": 2, "delay": 0.01}}
        body, headers = modern(1, "tools/call", params, progressToken="t")
        reply = await raw.request(body=body, headers=headers)
        assert reply.headers["content-type"] == "application/json"
        assert reply.json()["result"]["content"][0]["text"] == "finished 2 steps"


async def test_stream_responses_mode_answers_with_event_streams(anyio_backend: str) -> None:
    """``stream_responses``: a POSTed request whose client takes SSE gets an event
    stream even with nothing before its answer (legacy: a priming event first), as
    the reference SDK's server answers. A 2026-07-28 error stays JSON, its HTTP
    status telling what it is; a legacy initialize stays JSON (its session id is a
    header); a client that takes only JSON gets JSON."""
    app = Server("streams")

    @app.tool()
    def echo(message: str) -> str:  # answered inline, where the request is read
        return message

    @app.tool()
    async def later(message: str) -> str:  # run in a task of its own
        await anyio.sleep(0)
        return message

    @app.tool()
    async def refuse() -> str:
        await anyio.sleep(0)
        raise JSONRPCError(-32602, "refused")

    async with running(app, stream_responses=True) as http, client(http.port or 0) as raw:
        sid = await initialize(raw)  # JSON: ``initialize`` reads reply.json()
        legacy = {"mcp-session-id": sid, "mcp-protocol-version": LEGACY}
        reply = await raw.request(body=rpc(2, "tools/list"), headers=legacy)
        assert reply.headers["content-type"] == "text/event-stream"
        priming, *_ = reply.events()
        assert priming.id and priming.data == ""
        assert [m["id"] for m in reply.messages()] == [2]
        for rid, name in enumerate(["echo", "later"], 3):
            body, headers = modern(
                rid, "tools/call", {"name": name, "arguments": {"message": name}}
            )
            reply = await raw.request(body=body, headers=headers)
            assert reply.headers["content-type"] == "text/event-stream"
            (answer,) = reply.messages()
            assert answer["id"] == rid and answer["result"]["content"][0]["text"] == name
        for rid, (method, params, status, code) in enumerate(
            [
                ("no/such/method", None, 404, -32601),
                ("tools/call", {"name": "nope", "arguments": {}}, 400, -32602),
                ("tools/call", {"name": "refuse", "arguments": {}}, 400, -32602),
            ],
            5,
        ):
            body, headers = modern(rid, method, params)
            reply = await raw.request(body=body, headers=headers)
            assert (reply.status, reply.headers["content-type"]) == (status, "application/json")
            assert reply.json()["error"]["code"] == code
        only_json = {**legacy, "accept": "application/json"}
        reply = await raw.request(body=rpc(8, "tools/list"), headers=only_json)
        assert reply.headers["content-type"] == "application/json"


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_our_client_in_stream_responses_mode(anyio_backend: str, mode: str) -> None:
    """mcpwire's client reads the event streams of ``stream_responses`` in both eras:
    results, progress before them, and errors."""
    seen: list[float] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        seen.append(done)

    async with running(stream_responses=True) as http:
        url = f"http://127.0.0.1:{http.port}/mcp"
        async with Client.http(url, mode=mode) as c:
            assert (await c.call_tool("echo", {"message": "hi"})).text == "hi"
            arguments = {"steps": 2, "delay": 0}
            result = await c.call_tool("long_task", arguments, on_progress=progress)
            assert result.text == "finished 2 steps"
            assert seen == [1, 2]
            with pytest.raises(JSONRPCError) as info:
                await c.call_tool("nope")
            assert info.value.code == -32602


def test_json_response_and_stream_responses_exclude_each_other() -> None:
    with pytest.raises(ValueError, match="exclude each other"):
        HTTPServerOptions(json_response=True, stream_responses=True)


async def test_modern_disconnect_cancels_the_handler(anyio_backend: str) -> None:
    app, state = probe_app()
    await hang_up_on_block(app, state)
    assert state["finished"] == 0


async def hang_up_on_block(app: Server, state: dict[str, int]) -> None:
    """Call the ``block`` tool (modern era), hang up mid-call, and see it cancelled."""
    async with running(app) as http:
        raw = await Raw.connect(http.port or 0)
        body, headers = modern(1, "tools/call", {"name": "block", "arguments": {"seconds": 30}})
        await raw.send(body=body, headers=headers)
        await anyio.sleep(0.2)
        await raw.aclose()
        with anyio.fail_after(5):
            while state["cancelled"] == 0:
                await anyio.sleep(0.02)
        assert http.stats()["busy_requests"] == 0


async def test_modern_disconnect_cancels_a_plainly_wrapped_coroutine_tool(
    anyio_backend: str,
) -> None:
    # A plain (not async-aware) decorator around an async tool: the tool still
    # waits, so it must not take the inline path, where nothing watches for the
    # client hanging up.
    def plain(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        return wrapper

    app, state = probe_app(wrap=plain)
    await hang_up_on_block(app, state)


@settings(max_examples=200, deadline=None)
@given(
    event_id=st.one_of(
        st.text(),
        st.builds(lambda s, n: f"{s}:{n}", st.sampled_from(["0", "1"]), st.text()),
        st.builds(lambda n: "1:" + "9" * n, st.integers(0, 12_000)),
    )
)
def test_memory_event_store_replays_or_refuses_any_event_id(event_id: str) -> None:
    """Whatever a client puts in ``Last-Event-ID`` (a header, up to the head
    limit), the store answers: a replay of what it recorded, or ``None``."""
    from mcpwire.sansio import Notification

    async def check() -> None:
        store = MemoryEventStore()
        given = [await store.store("s", "1", Notification(f"n{i}")) for i in range(3)]
        replay = await store.replay_after("s", event_id)
        if event_id in given:
            assert replay is not None
        if replay is not None:
            assert replay[0] == "1" and {i for i, _ in replay[1]} <= set(given)

    anyio.run(check)


async def test_a_last_event_id_of_any_length_gets_an_answer(anyio_backend: str) -> None:
    """A ``Last-Event-ID`` whose sequence number has thousands of digits names no
    event of the GET stream: it is refused (410) as any id the session never gave."""
    async with running() as http:
        port = http.port or 0
        async with client(port) as raw:
            sid = await initialize(raw)
        get = {"mcp-session-id": sid, "accept": "text/event-stream"}
        (session,) = http.legacy.table
        for last in ["0:" + "9" * 5000, "0:" + "9" * 21, None]:
            async with client(port) as raw:
                with anyio.fail_after(10):
                    await raw.send("GET", headers={**get, "last-event-id": last})
                    head = await raw.head()
                    assert head.status == (200 if last is None else 410), last
                    if last is None:
                        assert (await raw.sse().next()) is not None  # the priming event
            with anyio.fail_after(10):
                while session.standalone.attached:
                    await anyio.sleep(0.01)


async def test_last_event_id_replay_is_scoped_to_its_session(anyio_backend: str) -> None:
    app, state = probe_app()
    async with running(app) as http:
        port = http.port or 0
        async with client(port) as setup:
            sid_a = await initialize(setup)
            sid_b = await initialize(setup)
        # Session A: a request streams progress; its client hangs up after two events.
        raw = await Raw.connect(port)
        params = {
            "name": "steps",
            "arguments": {"count": 4, "delay": 0.15},
            "_meta": {"progressToken": 1},
        }
        await raw.send(body=rpc(9, "tools/call", params), headers={"mcp-session-id": sid_a})
        assert (await raw.head()).headers["content-type"] == "text/event-stream"
        events = raw.sse()
        priming, first = await events.next(), await events.next()
        await raw.aclose()
        assert priming is not None and first is not None
        assert priming.data == "" and first.data
        # Disconnecting does not cancel a legacy request (transports.mdx).
        with anyio.fail_after(5):
            while state["finished"] == 0:
                await anyio.sleep(0.02)
        assert state["cancelled"] == 0
        async with client(port) as raw:
            # Session B cannot read session A's stream, whatever id it presents.
            get_b = {
                "mcp-session-id": sid_b,
                "accept": "text/event-stream",
                "last-event-id": first.id,
            }
            reply = await raw.request("GET", headers=get_b)
            assert reply.status == 410
            assert b"progress" not in reply.body
            # Session A resumes after the first progress event: the rest, then the result.
            get_a = {**get_b, "mcp-session-id": sid_a}
            reply = await raw.request("GET", headers=get_a)
            assert reply.status == 200
            messages = reply.messages()
            assert [m["params"]["progress"] for m in messages[:-1]] == [2, 3, 4]
            assert messages[-1]["id"] == 9 and "result" in messages[-1]
            ids = [e.id for e in reply.events()]
            assert all(i.split(":")[0] == first.id.split(":")[0] for i in ids)
            # Delivered in full, the stream is forgotten; unknown streams are 410.
            assert (await raw.request("GET", headers=get_a)).status == 410
            bogus = {**get_a, "last-event-id": "999:0"}
            assert (await raw.request("GET", headers=bogus)).status == 410


async def test_a_resume_from_before_the_replay_window_is_gone(anyio_backend: str) -> None:
    """A ``Last-Event-ID`` of a kept stream whose later messages fell out of the
    store's window (2 per stream here), or that the stream never gave out, is
    answered 410 Gone, not with the rest of the stream and a silent hole; an id
    inside the window still resumes in full."""
    app, state = probe_app()
    store = MemoryEventStore(max_events_per_stream=2)
    http = HTTPServer(app, HTTPServerOptions(), event_store=store)
    async with anyio.create_task_group() as tg:
        port = await tg.start(http.serve, "127.0.0.1", 0)
        async with client(port) as setup:
            sid = await initialize(setup)
        raw = await Raw.connect(port)
        params = {"name": "steps", "arguments": {"count": 4}, "_meta": {"progressToken": 1}}
        await raw.send(body=rpc(9, "tools/call", params), headers={"mcp-session-id": sid})
        assert (await raw.head()).headers["content-type"] == "text/event-stream"
        events = raw.sse()
        priming, first = await events.next(), await events.next()
        await raw.aclose()
        assert priming is not None and first is not None and first.data
        with anyio.fail_after(5):
            while state["finished"] == 0:
                await anyio.sleep(0.02)
        # Recorded: progress 1 to 4, then the result; the window holds the last two.
        stream, _, number = first.id.partition(":")
        get = {"mcp-session-id": sid, "accept": "text/event-stream"}
        async with client(port) as raw:
            for last in (priming.id, first.id, f"{stream}:{int(number) + 1}", f"{stream}:99"):
                reply = await raw.request("GET", headers={**get, "last-event-id": last})
                assert reply.status == 410, (last, reply.body)
                assert b"progress" not in reply.body
            reply = await raw.request("GET", headers={**get, "last-event-id": "0:99"})
            assert reply.status == 410  # the standalone stream never gave it out either
            window = f"{stream}:{int(number) + 2}"  # progress 3: all after it is held
            reply = await raw.request("GET", headers={**get, "last-event-id": window})
            assert reply.status == 200
            messages = reply.messages()
            assert [m["params"]["progress"] for m in messages[:-1]] == [4]
            assert messages[-1]["id"] == 9 and messages[-1]["result"]["content"]
        tg.cancel_scope.cancel()


async def test_server_closes_a_post_stream_and_the_client_resumes(anyio_backend: str) -> None:
    """2025-11-25 polling (SEP-1699): the server hangs up mid-call after an event with an
    id and a retry hint; the client comes back with Last-Event-ID and gets the rest."""
    app, _ = probe_app()
    async with running(app) as http, client(http.port or 0) as raw:
        sid = await initialize(raw)
        reply = await raw.request(
            body=rpc(4, "tools/call", {"name": "polled"}), headers={"mcp-session-id": sid}
        )
        assert reply.headers["content-type"] == "text/event-stream"
        events = reply.events()
        assert events[0].data == "" and events[0].id  # priming
        assert orjson.loads(events[1].data)["params"]["data"] == "before"
        assert reply.body.endswith(b"retry: 1000\n\n")  # SHOULD precede the close
        assert all(orjson.loads(e.data).get("id") != 4 for e in events if e.data)  # no result yet
        get = {"mcp-session-id": sid, "accept": "text/event-stream", "last-event-id": events[1].id}
        with anyio.fail_after(5):
            resumed = await raw.request("GET", headers=get)
        messages = resumed.messages()
        assert [m.get("params", {}).get("data") for m in messages[:-1]] == ["after"]
        assert messages[-1]["id"] == 4 and messages[-1]["result"]["content"][0]["text"] == "polled"


async def test_standalone_get_stream(anyio_backend: str) -> None:
    async with running() as http:
        port = http.port or 0
        async with client(port) as posts, client(port) as listener:
            sid = await initialize(posts)
            get = {"mcp-session-id": sid, "accept": "text/event-stream"}
            await listener.send("GET", headers=get)
            head = await listener.head()
            assert head.status == 200 and head.headers["content-type"] == "text/event-stream"
            events = listener.sse()
            priming = await events.next()
            assert priming.data == "" and priming.id.startswith("0:")
            async with client(port) as other:  # one standalone stream per session
                assert (await other.request("GET", headers=get)).status == 409
            headers = {"mcp-session-id": sid}
            reply = await posts.request(
                body=rpc(2, "resources/subscribe", {"uri": "demo://readme"}), headers=headers
            )
            assert reply.json()["result"] == {}
            await posts.request(body=rpc(3, "tools/call", {"name": "touch"}), headers=headers)
            with anyio.fail_after(5):
                update = await events.next()
            assert orjson.loads(update.data) == {
                "jsonrpc": "2.0",
                "method": "notifications/resources/updated",
                "params": {"uri": "demo://readme"},
            }
            assert update.id.startswith("0:")
            # DELETE ends the session and its stream.
            assert (await posts.request("DELETE", headers=headers)).status == 200
            with anyio.fail_after(5):
                rest = await events.rest()
            assert rest == []


async def call_ask_name(raw: Raw, sid: str) -> tuple[Events, dict[str, Any]]:
    """Call the example's ``ask_name`` tool: its event stream and the elicitation on it."""
    await raw.send(body=rpc(5, "tools/call", {"name": "ask_name"}), headers={"mcp-session-id": sid})
    assert (await raw.head()).headers["content-type"] == "text/event-stream"
    events = raw.sse()
    event = await events.next()
    if event.data == "":  # the priming event
        event = await events.next()
    ask = orjson.loads(event.data)
    assert ask["method"] == "elicitation/create"
    return events, ask


async def test_legacy_elicitation_over_the_post_stream(anyio_backend: str) -> None:
    async with running() as http:
        port = http.port or 0
        async with client(port) as raw, client(port) as answers:
            sid = await initialize(raw)
            events, ask = await call_ask_name(raw, sid)
            answer = {
                "jsonrpc": "2.0",
                "id": ask["id"],
                "result": {"action": "accept", "content": {"name": "Ada"}},
            }
            reply = await answers.request(body=answer, headers={"mcp-session-id": sid})
            assert (reply.status, reply.body) == (202, b"")
            final = orjson.loads((await events.next()).data)
            assert final["id"] == 5
            assert final["result"]["content"][0]["text"] == "Hello, Ada!"


@pytest.mark.parametrize("batched", [False, True], ids=["single", "in-a-batch"])
async def test_legacy_malformed_answer_fails_the_servers_request_at_once(
    anyio_backend: str, batched: bool
) -> None:
    """A client answering the server's elicitation with something that is no
    response (a result that is no object) gets a 400 saying so, and the tool's
    ``ctx.elicit`` fails at once (pain point 1) instead of at its request timeout:
    the tool call ends with an error result naming the defect."""
    async with running() as http:
        port = http.port or 0
        async with client(port) as raw, client(port) as answers:
            sid = await initialize(raw, "2025-03-26" if batched else "2025-06-18")
            events, ask = await call_ask_name(raw, sid)
            answer: object = {"jsonrpc": "2.0", "id": ask["id"], "result": ["accept"]}
            reply = await answers.request(
                body=[answer] if batched else answer, headers={"mcp-session-id": sid}
            )
            if batched:
                assert reply.status == 202  # a batch of answers alone gets no replies
            else:
                assert reply.status == 400
                assert reply.json()["error"]["message"] == '"result" must be an object in MCP'
            with anyio.fail_after(5):
                final = orjson.loads((await events.next()).data)
            assert final["id"] == 5
            assert final["result"]["isError"] is True
            assert "malformed response to elicitation/create" in str(final["result"]["content"])


async def test_legacy_cancel_ends_the_post_stream(anyio_backend: str) -> None:
    app, state = probe_app()
    async with running(app) as http:
        port = http.port or 0
        async with client(port) as raw, client(port) as other:
            sid = await initialize(raw)
            params = {"name": "block", "arguments": {"seconds": 30}}
            await raw.send(body=rpc(5, "tools/call", params), headers={"mcp-session-id": sid})
            await anyio.sleep(0.1)
            cancel = note("notifications/cancelled", {"requestId": 5, "reason": "changed my mind"})
            assert (await other.request(body=cancel, headers={"mcp-session-id": sid})).status == 202
            with anyio.fail_after(5):
                reply = await raw.rest(await raw.head())
            assert (reply.status, reply.body) == (202, b"")  # no response for a cancelled request
            while state["cancelled"] == 0:
                await anyio.sleep(0.02)


async def test_batches_in_2025_03_26(anyio_backend: str) -> None:
    async with running() as http, client(http.port or 0) as raw:
        sid = await initialize(raw, "2025-03-26")
        headers: dict[str, str | None] = {"mcp-session-id": sid}
        only_notes = [
            note("notifications/roots/list_changed"),
            note("notifications/roots/list_changed"),
        ]
        assert (await raw.request(body=only_notes, headers=headers)).status == 202
        batch = [
            rpc(1, "ping"),
            note("notifications/roots/list_changed"),
            rpc(2, "tools/list"),
            {"bad": 1},
        ]
        reply = await raw.request(body=batch, headers=headers)
        assert reply.status == 200
        answers = reply.json()
        assert isinstance(answers, list) and len(answers) == 3
        by_id = {a["id"]: a for a in answers}
        assert by_id[1]["result"] == {} and "tools" in by_id[2]["result"]
        assert by_id[None]["error"]["code"] == -32600
        reply = await raw.request(body=[init_body("2025-03-26", 9)], headers=headers)
        assert reply.json()[0]["error"]["code"] == -32600
        # Other revisions have no batches.
        # Past Limits.max_batch (1,000): one -32600, id null, nothing served.
        too_many = [rpc(100 + i, "ping") for i in range(1001)]
        reply = await raw.request(body=too_many, headers=headers)
        assert reply.status == 400
        assert reply.json()["id"] is None and reply.json()["error"]["code"] == -32600
        assert "exceeds the limit of 1000" in reply.json()["error"]["message"]
        reply = await raw.request(body=too_many[:1000], headers=headers)
        assert reply.status == 200 and len(reply.json()) == 1000
        sid2 = await initialize(raw, "2025-06-18")
        reply = await raw.request(body=[rpc(1, "ping")], headers={"mcp-session-id": sid2})
        assert reply.status == 400 and reply.json()["error"]["code"] == -32600


async def test_keep_alive_serves_many_requests_on_one_connection(anyio_backend: str) -> None:
    async with running() as http, client(http.port or 0) as raw:
        local = raw.stream.extra(anyio.abc.SocketAttribute.local_port)
        for i in range(3):
            body, headers = modern(
                i, "tools/call", {"name": "echo", "arguments": {"message": f"m{i}"}}
            )
            reply = await raw.request(body=body, headers=headers)
            assert reply.json()["result"]["content"][0]["text"] == f"m{i}"
        sid = await initialize(raw)
        assert (
            await raw.request(body=rpc(5, "ping"), headers={"mcp-session-id": sid})
        ).status == 200
        assert raw.stream.extra(anyio.abc.SocketAttribute.local_port) == local
        assert http.stats()["connections"] == 1


async def start_stoppable(
    tg: anyio.abc.TaskGroup, http: HTTPServer
) -> tuple[int, anyio.CancelScope]:
    """Start ``http`` in ``tg`` on a free loopback port: the port, and the scope
    whose cancellation shuts it down (gracefully, as a signal would)."""
    scope = anyio.CancelScope()

    async def serve(*, task_status: anyio.abc.TaskStatus[int]) -> None:
        with scope:
            await http.serve("127.0.0.1", 0, task_status=task_status)

    return await tg.start(serve), scope


async def test_graceful_shutdown_finishes_requests_in_flight(anyio_backend: str) -> None:
    app, state = probe_app()
    http = HTTPServer(app, HTTPServerOptions(shutdown_timeout=5))
    async with anyio.create_task_group() as tg:
        port, scope = await start_stoppable(tg, http)
        idle = await Raw.connect(port)  # an idle keep-alive connection: closed at once
        busy = await Raw.connect(port)
        body, headers = modern(1, "tools/call", {"name": "block", "arguments": {"seconds": 0.5}})
        await busy.send(body=body, headers=headers)
        await anyio.sleep(0.15)
        started = anyio.current_time()
        scope.cancel()
        with anyio.fail_after(5):
            reply = await busy.rest(await busy.head())
        assert reply.json()["result"]["content"][0]["text"] == "done"
        assert state == {"cancelled": 0, "finished": 1}
        with anyio.fail_after(5), pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
            await idle.stream.receive()
    assert anyio.current_time() - started < 3
    assert http.stats()["connections"] == 0 and http.stats()["tasks"] == 0
    with pytest.raises(OSError):
        await anyio.connect_tcp("127.0.0.1", port)
    await idle.aclose()
    await busy.aclose()


async def test_requests_cut_short_by_shutdown_get_503(anyio_backend: str) -> None:
    """A request still running when ``shutdown_timeout`` has passed is cancelled,
    and its client is told so (503, ``Connection: close``), in both eras, instead
    of seeing the connection close without an answer."""
    app, state = probe_app()
    http = HTTPServer(app, HTTPServerOptions(shutdown_timeout=0.3))
    async with anyio.create_task_group() as tg:
        port, scope = await start_stoppable(tg, http)
        async with client(port) as setup:
            sid = await initialize(setup)
        busy = [await Raw.connect(port), await Raw.connect(port)]
        body, headers = modern(1, "tools/call", {"name": "block", "arguments": {"seconds": 30}})
        await busy[0].send(body=body, headers=headers)
        call = rpc(2, "tools/call", {"name": "block", "arguments": {"seconds": 30}})
        await busy[1].send(body=call, headers={"mcp-session-id": sid})
        with anyio.fail_after(5):
            while http.stats()["busy_requests"] < 2:
                await anyio.sleep(0.01)
        scope.cancel()
        for raw in busy:
            with anyio.fail_after(5):
                reply = await raw.rest(await raw.head())
            assert reply.status == 503, reply
            assert reply.headers["connection"] == "close"
            await raw.aclose()
    assert state["finished"] == 0
    assert http.stats()["connections"] == 0 and http.stats()["tasks"] == 0


async def test_stalled_and_idle_clients_are_dropped(anyio_backend: str) -> None:
    async with running(read_timeout=0.3, keep_alive_timeout=0.3) as http:
        async with client(http.port or 0) as raw:  # a head that never finishes: 408
            await raw.stream.send(b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Le")
            started = anyio.current_time()
            with anyio.fail_after(5):
                reply = await raw.head()
            assert reply.status == 408 and reply.headers["connection"] == "close"
            assert anyio.current_time() - started < 2
        async with client(http.port or 0) as raw:  # a body that never finishes: 408
            await raw.stream.send(
                b"POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                b"Content-Length: 100\r\n\r\n{"
            )
            with anyio.fail_after(5):
                reply = await raw.head()
            assert reply.status == 408
        async with client(http.port or 0) as raw:  # idle keep-alive
            body, headers = modern(1, "tools/list")
            assert (await raw.request(body=body, headers=headers)).status == 200
            with anyio.fail_after(5):
                with pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
                    await raw.stream.receive()


async def test_a_request_framed_both_ways_is_400_and_closes(anyio_backend: str) -> None:
    """RFC 9112 sections 6.1 and 6.3: Transfer-Encoding and Content-Length together
    are refused and the connection closed, so what a Content-Length proxy takes for
    this request's body is never served as a request of its own."""
    hidden = b'{"jsonrpc":"2.0","id":66,"method":"ping"}'
    smuggled = (
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n"
        b"accept: application/json, text/event-stream\r\n"
        b"content-length: %d\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n" % len(hidden)
    )
    follow = (
        b"POST /mcp HTTP/1.1\r\nHost: localhost\r\ncontent-type: application/json\r\n"
        b"accept: application/json, text/event-stream\r\ncontent-length: %d\r\n\r\n" % len(hidden)
    ) + hidden
    async with running() as http, client(http.port or 0) as raw:
        await raw.stream.send(smuggled + follow)
        reply = await raw.head()
        assert reply.status == 400
        with anyio.fail_after(5):
            rest = b""
            try:
                while True:
                    rest += await raw.stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                pass
        assert b"HTTP/1.1" not in rest  # no second answer: the connection closed


async def test_oversized_head_is_431(anyio_backend: str) -> None:
    async with running(max_header_size=2048) as http:
        async with client(http.port or 0) as raw:  # arriving whole
            body, headers = modern(1, "tools/list")
            await raw.send(body=body, headers={**headers, "x-padding": "p" * 4000})
            assert (await raw.head()).status == 431
        async with client(http.port or 0) as raw:  # trickling in: h11's own bound
            await raw.stream.send(b"GET /mcp HTTP/1.1\r\nHost: localhost\r\nX-Padding: ")
            for _ in range(40):
                await raw.stream.send(b"p" * 100)
                await anyio.sleep(0)
            with anyio.fail_after(5):
                assert (await raw.head()).status == 431


# =================================================================================================
# 4. Sessions: limits, expiry, soak
# =================================================================================================


async def test_session_limit_evicts_the_least_recently_used_idle_session(
    anyio_backend: str,
) -> None:
    async with running(max_sessions=2) as http:
        port = http.port or 0
        async with client(port) as raw:
            first = await initialize(raw)
            second = await initialize(raw)
            await raw.request(
                body=rpc(2, "ping"), headers={"mcp-session-id": first}
            )  # first: recent
            third = await initialize(raw)  # evicts `second`, the least recently used
            assert http.stats()["sessions_evicted"] == 1
            for sid, status in [(first, 200), (second, 404), (third, 200)]:
                reply = await raw.request(body=rpc(3, "ping"), headers={"mcp-session-id": sid})
                assert reply.status == status
            # Busy sessions (an open GET stream) are never evicted: then 503.
            async with client(port) as g1, client(port) as g2:
                for stream, sid in [(g1, first), (g2, third)]:
                    await stream.send(
                        "GET", headers={"mcp-session-id": sid, "accept": "text/event-stream"}
                    )
                    assert (await stream.head()).status == 200
                reply = await raw.request(body=init_body())
                assert reply.status == 503 and reply.headers["retry-after"] == "1"
                assert len(http.legacy.table) == 2


async def test_idle_sessions_expire(anyio_backend: str) -> None:
    async with running(session_idle_timeout=0.2) as http, client(http.port or 0) as raw:
        sid = await initialize(raw)
        await anyio.sleep(0.6)
        reply = await raw.request(body=rpc(2, "ping"), headers={"mcp-session-id": sid})
        assert reply.status == 404
        assert http.stats()["sessions_expired"] == 1
        assert len(http.legacy.table) == 0


def rss_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")  # pragma: no cover


async def test_soak_sessions_created_and_deleted_leave_nothing(anyio_backend: str) -> None:
    store = MemoryEventStore()
    http = HTTPServer(everything, HTTPServerOptions(), event_store=store)
    async with anyio.create_task_group() as tg:
        port = await tg.start(http.serve, "127.0.0.1", 0)
        async with client(port) as raw:

            async def cycle(count: int) -> None:
                for i in range(count):
                    reply = await raw.request(body=init_body(rid=i))
                    sid = reply.headers["mcp-session-id"]
                    headers: dict[str, str | None] = {"mcp-session-id": sid}
                    assert (
                        await raw.request(body=note("notifications/initialized"), headers=headers)
                    ).status == 202
                    assert (await raw.request("DELETE", headers=headers)).status == 200

            await cycle(200)  # warm-up: caches, allocator arenas
            await anyio.sleep(0.1)
            gc.collect()
            before = rss_kib()
            await cycle(1000)
            await anyio.sleep(0.1)
            gc.collect()
            grown = rss_kib() - before
        with anyio.fail_after(5):
            while http.stats()["tasks"] > 1 or len(everything.connections):  # 1: the reaper
                await anyio.sleep(0.02)
        stats = http.stats()
        assert stats["sessions"] == 0 and stats["sessions_pending"] == 0
        assert stats["sessions_created"] == 1200
        assert len(store) == 0
        assert grown < 5 * 1024, f"RSS grew by {grown} KiB over 1,000 sessions"
        tg.cancel_scope.cancel()


# =================================================================================================
# 5. Interop with the reference SDK (mcp==2.3.0)
# =================================================================================================


@pytest.mark.parametrize(
    ("mode", "version", "log_level"),
    [("legacy", LEGACY, None), ("auto", MODERN, "debug"), (MODERN, MODERN, "warning")],
)
# SDK deviation: on trio, httpx2/httpcore2 inside the SDK client leave async generators
# unfinished when a stream is closed, and trio reports them when they are collected.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_sdk_client_drives_our_server_over_http(
    anyio_backend: str, mode: str, version: str, log_level: str | None
) -> None:
    """Every feature of the example server through the SDK's streamable-HTTP client.

    Legacy: elicitation, sampling and roots arrive as server->client requests on the
    POST's SSE stream, resource updates on the GET stream. Modern: the same asks come
    back as InputRequiredResult, subscription events on the listen request's stream.
    """
    from mcp import Client as SdkClient
    from test_interop_stdio import SdkPeer, sdk_exercise_everything

    peer = SdkPeer()
    async with running() as http:
        with anyio.fail_after(30):
            async with SdkClient(
                f"http://127.0.0.1:{http.port}/mcp",
                mode=mode,  # type: ignore[arg-type]
                log_level=log_level,  # type: ignore[arg-type]
                read_timeout_seconds=15,
                cache=None,
                **peer.callbacks(),
            ) as c:
                assert c.protocol_version == version
                await sdk_exercise_everything(c, peer, mode)
        with anyio.fail_after(5):  # the SDK's DELETE ended the session
            while len(http.legacy.table):
                await anyio.sleep(0.02)


SDK_SERVER = """
import sys
from mcp.server.mcpserver import Context, MCPServer

mcp = MCPServer("ref-http", version="1.0")


@mcp.tool()
async def count(n: int, ctx: Context) -> str:
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, "step \\u00e9\\u2028 " + str(i))
    return "counted " + str(n)


mcp.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
"""


async def test_sdk_server_sse_through_our_decoder(anyio_backend: str, tmp_path: Path) -> None:
    """The SDK server writes SSE with CRLF line ends; our decoder, fed in pieces of
    1 to 7 bytes, must see exactly what a whole-body parse sees."""
    script = tmp_path / "sdk_http_server.py"
    script.write_text(SDK_SERVER)
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(script), str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with anyio.fail_after(30):
            while True:
                try:
                    raw = await Raw.connect(port)
                    break
                except OSError:
                    await anyio.sleep(0.1)
        async with raw:
            raw_bodies: list[bytes] = []

            async def exchange(body: Any, headers: dict[str, str | None]) -> Reply:
                reply = await raw.request(body=body, headers=headers)
                raw_bodies.append(reply.body)
                return reply

            reply = await exchange(init_body(), {})
            assert reply.headers["content-type"].startswith("text/event-stream")
            sid = reply.headers["mcp-session-id"]
            headers: dict[str, str | None] = {"mcp-session-id": sid, "mcp-protocol-version": LEGACY}
            await raw.request(body=note("notifications/initialized"), headers=headers)
            params = {"name": "count", "arguments": {"n": 3}, "_meta": {"progressToken": "p"}}
            await exchange(rpc(2, "tools/call", params), headers)
        for body in raw_bodies:
            assert b"\r\n" in body  # the SDK ends lines with CRLF
            whole = SSEDecoder()
            expected = whole.feed(body)
            whole.feed_eof()
            assert expected
            for seed in range(5):
                decoder = SSEDecoder()
                got: list[SSEEvent] = []
                pos, step = 0, seed
                while pos < len(body):
                    step = step * 7 % 11 + 1
                    size = step % 7 + 1
                    got.extend(decoder.feed(body[pos : pos + size]))
                    pos += size
                decoder.feed_eof()
                assert got == expected
        final = orjson.loads(expected[-1].data)
        assert final["result"]["content"][0]["text"] == "counted 3"
        progress = [orjson.loads(e.data) for e in expected[:-1] if e.data]
        assert [p["params"]["message"] for p in progress] == [
            f"step \u00e9\u2028 {i}" for i in (1, 2, 3)
        ]
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # see above
async def test_sdk_sse_client_drives_our_deprecated_http_sse_transport(anyio_backend: str) -> None:
    from mcp import Client as SdkClient
    from mcp.client.sse import sse_client
    from test_interop_stdio import SdkPeer, sdk_exercise_everything

    peer = SdkPeer()
    async with running(legacy_sse=True) as http:
        with anyio.fail_after(30):
            async with SdkClient(
                sse_client(f"http://127.0.0.1:{http.port}/sse"),
                mode="legacy",
                read_timeout_seconds=15,
                cache=None,
                **peer.callbacks(),
            ) as c:
                assert c.protocol_version == LEGACY
                await sdk_exercise_everything(c, peer, "legacy")
        with anyio.fail_after(5):
            while http.sse.connections:
                await anyio.sleep(0.02)


async def test_deprecated_http_sse_status_codes(anyio_backend: str) -> None:
    async with running() as http, client(http.port or 0) as raw:  # off by default
        assert (await raw.request("POST", b"{}", path="/messages")).status == 404
    async with running(legacy_sse=True) as http:
        port = http.port or 0
        async with client(port) as stream, client(port) as raw:
            await stream.send("GET", path="/sse", headers={"accept": "text/event-stream"})
            head = await stream.head()
            assert head.status == 200 and head.headers["content-type"] == "text/event-stream"
            events = stream.sse()
            endpoint = await events.next()
            assert endpoint is not None and endpoint.event == "endpoint"
            path, _, query = endpoint.data.partition("?")
            assert path == "/messages" and query.startswith("session_id=")
            sid = query.removeprefix("session_id=")
            assert len(sid) == 32 and int(sid, 16) >= 0
            for target, status in [
                ("/messages", 400),
                ("/messages?session_id=zz", 400),
                ("/messages?session_id=" + "0" * 32, 404),
            ]:
                assert (await raw.request(body=rpc(1, "ping"), path=target)).status == status
            reply = await raw.request(body=init_body(), path=endpoint.data)
            assert (reply.status, reply.body) == (202, b"Accepted\n")
            answer = await events.next()
            assert answer is not None and answer.event == "message"
            assert orjson.loads(answer.data)["result"]["protocolVersion"] == LEGACY
            reply = await raw.request(body=b"{not json", path=endpoint.data)
            assert reply.status == 400
            error = await events.next()
            assert error is not None and orjson.loads(error.data)["error"]["code"] == -32700
            assert (await raw.request("GET", path="/messages")).status == 405
            async with client(port) as other:  # a 405 closes the connection
                assert (await other.request("POST", b"{}", path="/sse")).status == 405
        with anyio.fail_after(5):  # the stream was the connection: its session is gone
            while http.sse.connections:
                await anyio.sleep(0.02)
        async with client(port) as raw:
            assert (await raw.request(body=rpc(2, "ping"), path=endpoint.data)).status == 404


# =================================================================================================
# 6. The command line
# =================================================================================================


async def wait_for_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    with anyio.fail_after(20):
        while True:
            assert proc.poll() is None, "the server exited"
            try:
                stream = await anyio.connect_tcp("127.0.0.1", port)
            except OSError:
                await anyio.sleep(0.05)
                continue
            await stream.aclose()
            return


def command_line_server(argv: list[str], *, stdout: int) -> subprocess.Popen[bytes]:
    """``python ARGV`` with this checkout importable, stderr piped."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, *argv], stdout=stdout, stderr=subprocess.PIPE, env=env)


@pytest.mark.parametrize(
    "argv",
    [
        ["-m", "mcpwire", "serve", "mcpwire.examples.everything:server", "--transport", "http"],
        ["-m", "mcpwire.examples.everything", "--transport", "http"],
        ["-m", "mcpwire", "serve", "mcpwire.examples.everything:server", "--transport", "sse"],
    ],
    ids=["mcpwire-serve", "example", "mcpwire-serve-sse"],
)
async def test_command_line_serves_http_and_stops_on_sigterm(
    anyio_backend: str, argv: list[str]
) -> None:
    port = free_port()
    proc = command_line_server([*argv, "--port", str(port)], stdout=subprocess.PIPE)
    try:
        await wait_for_port(port, proc)
        async with client(port) as raw:
            sid = await initialize(raw)
            reply = await raw.request(
                body=rpc(2, "tools/call", {"name": "echo", "arguments": {"message": "via cli"}}),
                headers={"mcp-session-id": sid},
            )
            assert reply.json()["result"]["content"][0]["text"] == "via cli"
            body, headers = modern(3, "tools/list")
            assert (await raw.request(body=body, headers=headers)).status == 200
            await raw.send("GET", path="/sse", headers={"accept": "text/event-stream"})
            assert (await raw.head()).status == (200 if "sse" in argv else 404)
        proc.send_signal(signal.SIGTERM)
        started = time.monotonic()
        out, err = proc.communicate(timeout=10)
        assert proc.returncode == 0, err
        assert time.monotonic() - started < 5
        assert f"http://127.0.0.1:{port}/mcp".encode() in err
        assert (f"http://127.0.0.1:{port}/sse".encode() in err) == ("sse" in argv)
        assert out == b""
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize(
    ("responses", "kind"), [("stream", "text/event-stream"), ("json", "application/json")]
)
async def test_command_line_chooses_how_posts_are_answered(
    anyio_backend: str, responses: str, kind: str
) -> None:
    """``mcpwire serve --responses``: ``stream`` answers with an event stream even a
    request with nothing before its answer, ``json`` never streams, not even a
    request that reports progress."""
    port = free_port()
    argv = ["-m", "mcpwire", "serve", "mcpwire.examples.everything:server", "--transport"]
    proc = command_line_server(
        [*argv, "http", "--port", str(port), "--responses", responses], stdout=subprocess.DEVNULL
    )
    try:
        await wait_for_port(port, proc)
        async with client(port) as raw:
            for rid, (name, arguments, meta) in enumerate(
                [
                    ("echo", {"message": "hi"}, {}),
                    ("long_task", {"steps": 1, "delay": 0}, {"progressToken": "p"}),
                ]
            ):
                body, headers = modern(
                    rid, "tools/call", {"name": name, "arguments": arguments}, **meta
                )
                reply = await raw.request(body=body, headers=headers)
                assert reply.headers["content-type"] == kind
                last = reply.messages()[-1] if kind != "application/json" else reply.json()
                assert last["id"] == rid and "result" in last
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_command_line_responses_apply_to_http_only() -> None:
    argv = ["-m", "mcpwire", "serve", "mcpwire.examples.everything:server", "--responses", "json"]
    done = subprocess.run([sys.executable, *argv], capture_output=True, timeout=30)
    assert done.returncode == 2
    assert b"--responses applies to --transport http or sse" in done.stderr


def test_command_line_allow_lists_apply_to_http_only() -> None:
    """The allow-lists, like ``--responses``, are refused without HTTP (they were
    ignored), as ``hub`` refuses all three without ``--serve http``."""
    argv = ["-m", "mcpwire", "serve", "mcpwire.examples.everything:server"]
    done = subprocess.run(
        [sys.executable, *argv, "--allowed-origin", "https://app.example"],
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert b"--allowed-origin applies to --transport http or sse" in done.stderr


# =================================================================================================
# 7. The inline path and one-write responses
# =================================================================================================


def inline_app() -> Server:
    """Handlers of every kind the inline path meets: plain functions that answer, fail or
    read their context, one that returns an awaitable (it logs: the answer becomes SSE),
    and a coroutine function (never inline: the streamed path on both sides)."""
    app = Server("inline", "1.0")

    @app.tool()
    def echo(message: str) -> str:
        return message

    @app.tool()
    def boom(message: str = "") -> str:
        raise ValueError("boom " + message)

    @app.tool()
    def refuse(message: str = "") -> str:
        raise JSONRPCError(-32602, "refused", {"why": message})

    @app.tool()
    def facts(ctx: Context) -> dict[str, Any]:
        return {"era": ctx.era, "cancelled": ctx.cancelled, "method": ctx.method}

    @app.tool()
    def sneaky(ctx: Context, message: str = ""):  # type: ignore[no-untyped-def]
        async def run() -> str:
            await ctx.info(message)
            await ctx.report_progress(1, 2)
            return message

        return run()

    @app.tool()
    async def slow(message: str = "") -> str:
        await anyio.sleep(0)
        return message

    @app.prompt()
    def greet(name: str = "you") -> str:
        return f"hello {name}"

    @app.resource("data://x")
    def data() -> str:
        return "x"

    return app


@st.composite
def inline_cases(draw: st.DrawFn) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    """(era, Accept, method and params, extra _meta) of one request."""
    era = draw(st.sampled_from(["modern", "legacy"]))
    accept = draw(st.sampled_from([ACCEPT, "application/json", "text/event-stream"]))
    message = draw(st.text(max_size=20))
    arguments = draw(
        st.sampled_from(
            [{"message": message}, {}, {"message": 5}, None, {"message": message, "x": 1}]
        )
    )
    call: dict[str, Any] = draw(
        st.sampled_from(
            [
                {"method": "tools/call", "params": {"name": name}}
                for name in ("echo", "boom", "refuse", "facts", "sneaky", "slow", "nosuch")
            ]
            + [
                {"method": "tools/list"},
                {"method": "prompts/list"},
                {"method": "resources/list"},
                {"method": "ping"},
                {"method": "server/discover"},
                {"method": "no/such/method"},
                {"method": "prompts/get", "params": {"name": "greet"}},
                {"method": "prompts/get", "params": {"name": "nosuch"}},
                {"method": "resources/read", "params": {"uri": "data://x"}},
                {"method": "resources/read", "params": {"uri": "data://nosuch"}},
            ]
        )
    )
    call = {"method": call["method"], "params": dict(call.get("params") or {})}
    if call["method"] == "tools/call" and arguments is not None:
        call["params"]["arguments"] = arguments
    meta: dict[str, Any] = {}
    if draw(st.booleans()):
        meta["io.modelcontextprotocol/logLevel"] = draw(st.sampled_from(["debug", "error"]))
    if draw(st.booleans()):
        meta["progressToken"] = draw(st.sampled_from([7, "p"]))
    return era, accept, call, meta


async def _answer(raw: Raw, sid: str | None, case: tuple[Any, ...], rid: int) -> tuple[Any, ...]:
    era, accept, call, meta = case
    if era == "modern":
        body, headers = modern(rid, call["method"], call["params"] or None, **meta)
    else:
        params = dict(call["params"])
        legacy_meta = {k: v for k, v in meta.items() if k == "progressToken"}
        if legacy_meta:
            params["_meta"] = legacy_meta
        body = rpc(rid, call["method"], params or None)
        headers = {"mcp-session-id": sid, "mcp-protocol-version": LEGACY}
    headers["accept"] = accept
    reply = await raw.request(body=body, headers=headers)
    kind = reply.headers.get("content-type")
    # SSE ids differ between sessions (and are none in the modern era): compare messages.
    content = reply.messages() if kind == "text/event-stream" else reply.body
    return reply.status, kind, "content-length" in reply.headers, content


def test_inline_path_answers_exactly_like_the_full_path() -> None:
    """Any request, through the inline path (modern: no Session; legacy: served in the
    POST's task) and through the full one (the same server with the inline path off),
    gets the same status, media type, framing and content."""
    app = inline_app()
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(running(app)) as fast,
        portal.wrap_async_context_manager(running(app)) as full,
    ):
        full.modern._inline = lambda req: False  # type: ignore[method-assign]
        full.legacy._direct = lambda req: False  # type: ignore[method-assign]
        raws = [portal.call(Raw.connect, http.port or 0) for http in (fast, full)]
        sids = [portal.call(initialize, raw) for raw in raws]
        counter = iter(range(10, 10**6))
        seen: set[tuple[Any, ...]] = set()

        # Drawn cases cover statuses by chance; these cover each kind for sure.
        @settings(max_examples=150, deadline=None, database=None)
        @given(case=inline_cases())
        @example(case=("modern", ACCEPT, {"method": "no/such/method", "params": {}}, {}))
        @example(case=("modern", ACCEPT, {"method": "tools/call", "params": {"name": "x"}}, {}))
        @example(case=("legacy", "text/event-stream", {"method": "ping", "params": {}}, {}))
        def check(case: tuple[Any, ...]) -> None:
            rid = next(counter)
            answers = [
                portal.call(_answer, raw, sid, case, rid)
                for raw, sid in zip(raws, sids, strict=True)
            ]
            assert answers[0] == answers[1]
            seen.add(answers[0][:3])

        try:
            check()
        finally:
            for raw in raws:
                portal.call(raw.aclose)
        # The cases covered JSON answers and errors of several statuses, and SSE.
        assert {status for status, _, _ in seen} >= {200, 400, 404}
        assert {kind for _, kind, _ in seen} == {"application/json", "text/event-stream"}


async def test_quick_requests_need_no_session_and_no_task(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A modern request whose handler never waits is answered in the connection's
    task; one that may wait or stream gets a task and a ``StreamedSession``; no
    modern request makes a ``Session``."""
    created: list[Session] = []
    streamed: list[StreamedSession] = []
    init, streamed_init = Session.__init__, StreamedSession.__init__

    def counting(self: Session, *args: Any, **kwargs: Any) -> None:
        created.append(self)
        init(self, *args, **kwargs)

    def counting_streamed(self: StreamedSession, *args: Any, **kwargs: Any) -> None:
        streamed.append(self)
        streamed_init(self, *args, **kwargs)

    monkeypatch.setattr(Session, "__init__", counting)
    monkeypatch.setattr(StreamedSession, "__init__", counting_streamed)
    app = inline_app()
    async with running(app) as http, client(http.port or 0) as raw:
        for i in range(3):
            body, headers = modern(i, "tools/call", {"name": "echo", "arguments": {"message": "m"}})
            reply = await raw.request(body=body, headers=headers)
            assert reply.headers["content-type"] == "application/json"
            assert reply.json()["result"]["content"][0]["text"] == "m"
        assert created == [] and streamed == []
        # A request that may stream (progress asked for) takes the streamed path.
        body, headers = modern(
            9, "tools/call", {"name": "echo", "arguments": {"message": "m"}}, progressToken=1
        )
        assert (await raw.request(body=body, headers=headers)).status == 200
        assert created == [] and len(streamed) == 1
        assert http.stats()["modern_requests"] == 4


class _Recorder:
    """A byte stream that records every write (and serves canned input)."""

    def __init__(self, incoming: bytes) -> None:
        self.incoming = [incoming]
        self.sent: list[bytes] = []

    async def receive(self, max_bytes: int = 65536) -> bytes:
        return self.incoming.pop(0) if self.incoming else b""

    async def send(self, data: bytes) -> None:
        self.sent.append(bytes(data))


async def test_a_response_is_one_write_unless_its_body_is_large(anyio_backend: str) -> None:
    """Head and body go out in one write; a body of ``JOIN_LIMIT`` bytes or more
    follows its head as a second write, uncopied."""
    request = b"POST /mcp HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\n{}"
    for body in (b"", b"{}", b"x" * (JOIN_LIMIT - 1), b"x" * JOIN_LIMIT, b"x" * 200_000):
        stream = _Recorder(request)
        http = HTTPConnection(
            stream,  # type: ignore[arg-type]
            max_header_size=16384,
            read_timeout=5,
            write_timeout=5,
        )
        head = await http.next_request(5)
        assert head is not None and head.method == "POST"
        assert await http.read_body(1024, 2) == b"{}"
        await http.respond(200, [("content-type", "application/json")], body)
        if len(body) < JOIN_LIMIT:
            assert len(stream.sent) == 1
        else:
            assert len(stream.sent) == 2 and stream.sent[1] == body
        parser = h11.Connection(h11.CLIENT)
        parser.send(h11.Request(method="POST", target="/mcp", headers=[("host", "x")]))
        parser.send(h11.EndOfMessage())
        parser.receive_data(b"".join(stream.sent))
        response = parser.next_event()
        assert isinstance(response, h11.Response) and response.status_code == 200
        received = b""
        while not isinstance(event := parser.next_event(), h11.EndOfMessage):
            assert isinstance(event, h11.Data)
            received += event.data
        assert received == body
        assert http.reusable
    # A streamed response: the head carries the first piece, the end the last.
    stream = _Recorder(request)
    http = HTTPConnection(
        stream,  # type: ignore[arg-type]
        max_header_size=16384,
        read_timeout=5,
        write_timeout=5,
    )
    assert await http.next_request(5) is not None
    await http.read_body(1024)
    await http.start(200, [("content-type", "text/event-stream")], b"data: 1\n\n")
    await http.finish(b"data: 2\n\n")
    assert len(stream.sent) == 2
    assert b"data: 1" in stream.sent[0] and stream.sent[1].endswith(b"0\r\n\r\n")


@settings(max_examples=300, deadline=None)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("store"), st.sampled_from("0123"), st.booleans()),
            st.tuples(st.just("forget"), st.sampled_from("0123"), st.just(False)),
            st.tuples(st.just("replay"), st.integers(0, 60), st.just(False)),
        ),
        max_size=60,
    )
)
def test_memory_event_store_ids_never_repeat_and_replays_are_whole(
    ops: list[tuple[str, Any, bool]],
) -> None:
    """Against a model that keeps everything: every id given out in a session is
    new (even for a stream forgotten or evicted and written again), and a replay,
    when there is one, is exactly what was recorded on that stream after the id;
    the id given out last replays (to nothing)."""
    from mcpwire.sansio import Notification

    async def check() -> None:
        store = MemoryEventStore(max_events_per_stream=3, max_streams_per_session=2)
        given: list[tuple[str, str, Notification | None]] = []  # (id, stream, message)
        for op, arg, with_message in ops:
            if op == "store":
                message = Notification(f"n{len(given)}") if with_message else None
                event_id = await store.store("s", arg, message)
                assert event_id not in {g[0] for g in given}
                assert event_id.startswith(f"{arg}:")
                given.append((event_id, arg, message))
            elif op == "forget":
                await store.forget("s", arg)
            elif given:
                event_id, stream, _ = given[arg % len(given)]
                replay = await store.replay_after("s", event_id)
                if replay is not None:
                    at = [g[0] for g in given].index(event_id)
                    later = [(i, m) for i, s_, m in given[at + 1 :] if s_ == stream and m]
                    assert replay == (stream, later)
        if ops and ops[-1][0] == "store":
            last_id, last_stream, _ = given[-1]
            assert await store.replay_after("s", last_id) == (last_stream, [])

    anyio.run(check)
