"""The ASGI 3 adapter (``mcpwire.asgi_app``): mcpwire's HTTP server under an ASGI host.

1. In process, no socket: the app is driven with scopes and ``receive``/``send``
   written here, for the adapter's own edge cases: a body split across many
   ``http.request`` messages, a body over the limit (413, before or while it is read),
   ``http.disconnect`` while the body is read and in the middle of an SSE stream
   (modern: the tool is cancelled), a host that stops reading, lifespan startup and
   graceful shutdown (the GET stream ends, sessions end, later requests get 503),
   legacy sessions refused without lifespan and hosted by ``running()``, "auto"
   allow-lists that follow the host's bound address, ``root_path``, HTTP/2 heads
   without hop-by-hop fields, 431, and scopes other than HTTP.
2. Under a real uvicorn in a child process: mcpwire's ``Client.http`` in both eras
   (auto detection lands on 2026-07-28; pinned legacy gets a session, the GET stream
   and a DELETE at the end), the reference SDK's client through every feature of the
   example server, a sample of the status-code rules, disconnect as cancellation,
   the deprecated HTTP+SSE transport, many modern calls across two workers (the modern
   era is stateless; legacy sessions need affinity, so they run on one worker), and
   SIGTERM: lifespan shutdown runs and the process exits cleanly.
3. Under hypercorn's trio worker: both eras and a legacy session, so the app's task
   group and streams also run on trio inside a real server.

The client side runs on both anyio backends; uvicorn runs asyncio in its own process.
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import h11
import orjson
import pytest
from http_raw import (
    ACCEPT,
    LEGACY,
    MODERN,
    client,
    free_port,
    init_body,
    initialize,
    modern,
    note,
    rpc,
)

from mcpwire import ASGIApp, Client, Context, Server, asgi_app
from mcpwire._asgi import request_head
from mcpwire.examples.everything import server as everything
from mcpwire.sansio import SSEDecoder

pytestmark = pytest.mark.anyio

START_TIMEOUT = 30.0
CLEAN_EXIT = (0, -signal.SIGTERM)


# =================================================================================================
# 1. In process: a hand-written ASGI host
# =================================================================================================


class Queue:
    """An unbounded queue of ASGI messages, one consumer (nothing to close)."""

    def __init__(self) -> None:
        self.items: collections.deque[dict[str, Any]] = collections.deque()
        self.wakeup = anyio.Event()

    def put(self, item: dict[str, Any]) -> None:
        self.items.append(item)
        self.wakeup.set()

    async def aput(self, item: Any) -> None:
        self.put(dict(item))

    async def get(self) -> dict[str, Any]:
        while not self.items:
            self.wakeup = anyio.Event()
            await self.wakeup.wait()
        return self.items.popleft()


def http_scope(
    method: str = "POST",
    path: str = "/mcp",
    headers: dict[str, str] | None = None,
    *,
    server: tuple[str, int] | None = ("127.0.0.1", 8000),
    http_version: str = "1.1",
    root_path: str = "",
) -> dict[str, Any]:
    hdrs = {"host": "127.0.0.1:8000"}
    if method == "POST":
        hdrs.update({"content-type": "application/json", "accept": ACCEPT})
    hdrs.update(headers or {})
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": http_version,
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": root_path,
        "headers": [(k.encode(), v.encode()) for k, v in hdrs.items()],
        "server": server,
        "client": ("127.0.0.1", 50000),
    }


class Exchange:
    """One request in flight through the app: feed it messages, read what it sends."""

    def __init__(self, app: ASGIApp, scope: dict[str, Any]) -> None:
        self.app = app
        self.scope = scope
        self.inbox = Queue()
        self.outbox = Queue()
        self.receives = 0
        self.returned = anyio.Event()
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body = b""
        self.complete = False

    async def receive(self) -> dict[str, Any]:
        self.receives += 1
        return await self.inbox.get()

    async def run(self) -> None:
        try:
            await self.app(self.scope, self.receive, self.outbox.aput)
        finally:
            self.returned.set()

    def feed(self, body: bytes, piece: int | None = None) -> int:
        """Queue ``body`` as ``http.request`` messages of ``piece`` bytes; how many."""
        size = piece or max(1, len(body))
        parts = [body[i : i + size] for i in range(0, len(body), size)] or [b""]
        for i, part in enumerate(parts):
            self.inbox.put({"type": "http.request", "body": part, "more_body": i < len(parts) - 1})
        return len(parts)

    def disconnect(self) -> None:
        self.inbox.put({"type": "http.disconnect"})

    async def next_message(self) -> dict[str, Any]:
        message = await self.outbox.get()
        if message["type"] == "http.response.start":
            assert self.status == 0, "two response heads"
            self.status = message["status"]
            self.headers = {k.decode(): v.decode() for k, v in message["headers"]}
        else:
            assert message["type"] == "http.response.body", message
            assert self.status, "a body before the head"
            assert not self.complete, "a body after the end"
            self.body += message.get("body", b"")
            self.complete = not message.get("more_body", False)
        return message

    async def head(self) -> None:
        while not self.status:
            await self.next_message()

    async def until(self, data: bytes) -> None:
        while data not in self.body and not self.complete:
            await self.next_message()

    async def rest(self) -> None:
        while not self.complete:
            await self.next_message()

    def json(self) -> Any:
        return orjson.loads(self.body)

    def messages(self) -> list[dict[str, Any]]:
        decoder = SSEDecoder()
        events = decoder.feed(self.body)
        decoder.feed_eof()
        return [orjson.loads(e.data) for e in events if e.data]


async def request(
    app: ASGIApp,
    method: str = "POST",
    body: object = None,
    headers: dict[str, str] | None = None,
    *,
    piece: int | None = None,
    **scope: Any,
) -> Exchange:
    """One whole exchange; the host reports disconnect once the response is complete."""
    payload = body if isinstance(body, bytes) else b"" if body is None else orjson.dumps(body)
    ex = Exchange(app, http_scope(method, headers=headers, **scope))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ex.run)
            ex.feed(payload, piece)
            await ex.rest()
            ex.disconnect()  # as uvicorn does once the response is complete
    return ex


@asynccontextmanager
async def lifespan(app: ASGIApp) -> AsyncIterator[None]:
    """Run the app's lifespan: startup before the body, shutdown after it."""
    inbox, outbox = Queue(), Queue()
    async with anyio.create_task_group() as tg:
        tg.start_soon(app, {"type": "lifespan", "asgi": {"version": "3.0"}}, inbox.get, outbox.aput)
        inbox.put({"type": "lifespan.startup"})
        with anyio.fail_after(10):
            assert (await outbox.get())["type"] == "lifespan.startup.complete"
        try:
            yield
        except BaseException:
            tg.cancel_scope.cancel()
            raise
        inbox.put({"type": "lifespan.shutdown"})
        with anyio.fail_after(10):
            assert (await outbox.get())["type"] == "lifespan.shutdown.complete"


def probe_server() -> tuple[Server, dict[str, int]]:
    """A tool that reports progress (so its response turns SSE) and then waits."""
    app = Server("asgi-probe", "1.0")
    state = {"cancelled": 0, "finished": 0}

    @app.tool()
    async def stall(ctx: Context, seconds: float = 60.0) -> str:
        await ctx.report_progress(1, 2)
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            state["cancelled"] += 1
            raise
        state["finished"] += 1
        return "done"

    return app, state


def echo_call(rid: int = 1, message: str = "hi") -> tuple[dict[str, Any], dict[str, str]]:
    body, headers = modern(rid, "tools/call", {"name": "echo", "arguments": {"message": message}})
    return body, {k: v for k, v in headers.items() if v is not None}


async def test_body_split_across_many_messages(anyio_backend: str) -> None:
    app = asgi_app(everything)
    body, headers = echo_call(message="piece by piece " * 20)
    ex = await request(app, body=body, headers=headers, piece=3)
    assert ex.status == 200 and ex.headers["content-type"] == "application/json"
    assert ex.headers["content-length"] == str(len(ex.body))
    assert ex.json()["result"]["structuredContent"] == {"result": "piece by piece " * 20}
    assert ex.receives >= len(orjson.dumps(body)) // 3


async def test_stream_responses_under_asgi(anyio_backend: str) -> None:
    """``stream_responses`` reaches the ASGI app too: a result with nothing before
    it comes as an event stream; an unknown method is still JSON with its 404."""
    app = asgi_app(everything, stream_responses=True)
    body, headers = echo_call(message="streamed")
    ex = await request(app, body=body, headers=headers)
    assert ex.status == 200 and ex.headers["content-type"] == "text/event-stream"
    assert b'"text":"streamed"' in ex.body
    body, raw_headers = modern(2, "no/such/method")
    headers = {k: v for k, v in raw_headers.items() if v is not None}
    ex = await request(app, body=body, headers=headers)
    assert ex.status == 404 and ex.json()["error"]["code"] == -32601


async def test_body_over_the_limit_is_413(anyio_backend: str) -> None:
    app = asgi_app(everything, max_body_size=256)
    body, headers = echo_call(message="x" * 1000)
    ex = await request(app, body=body, headers=headers, piece=16)  # no Content-Length
    assert ex.status == 413 and ex.headers["connection"] == "close"
    assert ex.receives == 256 // 16 + 1  # refused as soon as the limit was passed
    declared = {**headers, "content-length": str(len(orjson.dumps(body)))}
    ex = await request(app, body=body, headers=declared)
    assert ex.status == 413 and ex.receives == 0  # refused from the header alone
    # HTTP/2 forbids Connection: the same refusal goes out without it.
    ex = await request(app, body=body, headers=declared, http_version="2")
    assert ex.status == 413 and "connection" not in ex.headers


async def test_disconnect_while_the_body_is_read(anyio_backend: str) -> None:
    app = asgi_app(everything)
    ex = Exchange(app, http_scope())
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ex.run)
            ex.inbox.put({"type": "http.request", "body": b'{"jsonrpc":', "more_body": True})
            ex.disconnect()
            await ex.returned.wait()
    assert not ex.outbox.items  # nobody left to answer


async def test_disconnect_mid_stream_cancels_the_modern_tool(anyio_backend: str) -> None:
    server, state = probe_server()
    app = asgi_app(server)
    body, headers = modern(1, "tools/call", {"name": "stall", "arguments": {}}, progressToken="p")
    ex = Exchange(app, http_scope(headers={k: v for k, v in headers.items() if v}))
    with anyio.fail_after(10):
        async with anyio.create_task_group() as tg:
            tg.start_soon(ex.run)
            ex.feed(orjson.dumps(body))
            await ex.until(b"notifications/progress")
            assert ex.status == 200 and ex.headers["content-type"] == "text/event-stream"
            assert not ex.complete
            ex.disconnect()
            await ex.returned.wait()
        while not state["cancelled"]:
            await anyio.sleep(0.01)
    assert state == {"cancelled": 1, "finished": 0}
    assert app.http_server.busy == 0


async def test_a_host_that_stops_taking_the_response_drops_the_request(anyio_backend: str) -> None:
    app = asgi_app(everything, write_timeout=0.05)
    body, headers = echo_call()
    started = anyio.Event()

    async def send(message: Any) -> None:
        if message["type"] == "http.response.body":
            started.set()
            await anyio.sleep_forever()  # a client that stopped reading

    inbox = Queue()
    inbox.put({"type": "http.request", "body": orjson.dumps(body), "more_body": False})
    with anyio.fail_after(10):
        await app(http_scope(headers=headers), inbox.get, send)
    assert started.is_set() and app.http_server.busy == 0


async def test_lifespan_hosts_sessions_and_shuts_down_gracefully(anyio_backend: str) -> None:
    app = asgi_app(everything)
    http = app.http_server
    async with anyio.create_task_group() as tg:
        async with lifespan(app):
            ex = await request(app, body=init_body())
            assert ex.status == 200, ex.body
            sid = ex.headers["mcp-session-id"]
            session = {"mcp-session-id": sid, "mcp-protocol-version": LEGACY}
            ex = await request(app, body=note("notifications/initialized"), headers=session)
            assert ex.status == 202
            headers = {**session, "accept": "text/event-stream"}
            get = Exchange(app, http_scope("GET", headers=headers))
            tg.start_soon(get.run)
            get.feed(b"")
            with anyio.fail_after(10):
                await get.until(b"id:")  # the priming event
            assert get.status == 200 and not get.complete
            assert len(http.legacy.table) == 1 and http.stats()["busy_requests"] == 1
            # leaving the block sends lifespan.shutdown: the GET stream ends first
        with anyio.fail_after(10):
            await get.rest()
            await get.returned.wait()
    assert get.complete
    assert len(http.legacy.table) == 0 and http.busy == 0
    ex = await request(app, body=init_body())
    assert ex.status == 503  # shut down: no new requests


async def test_without_lifespan_legacy_is_refused_and_modern_works(anyio_backend: str) -> None:
    app = asgi_app(everything)
    ex = await request(app, body=init_body())
    assert ex.status == 500
    error = ex.json()["error"]
    assert error["code"] == -32603 and "lifespan" in error["message"]
    body, headers = echo_call()
    assert (await request(app, body=body, headers=headers)).json()["result"]["content"] == [
        {"type": "text", "text": "hi"}
    ]
    async with app.running():  # what an outer framework's lifespan does for a mounted app
        with pytest.raises(RuntimeError, match="already running"):
            async with app.running():
                pass
        ex = await request(app, body=init_body())
        assert ex.status == 200 and ex.headers["mcp-session-id"]
        assert len(app.http_server.legacy.table) == 1
    assert len(app.http_server.legacy.table) == 0


async def test_lifespan_startup_failure_is_reported(anyio_backend: str) -> None:
    app = asgi_app(everything)
    inbox, outbox = Queue(), Queue()
    inbox.put({"type": "lifespan.startup"})
    async with app.running():
        with anyio.fail_after(10):
            await app({"type": "lifespan"}, inbox.get, outbox.aput)
    failed = await outbox.get()
    assert failed["type"] == "lifespan.startup.failed" and "already running" in failed["message"]


async def test_auto_allow_lists_follow_the_bound_address(anyio_backend: str) -> None:
    body, headers = echo_call()
    local = asgi_app(everything)
    evil = {**headers, "host": "evil.example"}
    assert (await request(local, body=body, headers=evil)).status == 421
    bad_origin = {**headers, "origin": "http://evil.example"}
    assert (await request(local, body=body, headers=bad_origin)).status == 403
    public = asgi_app(everything)  # bound to a public address: no Host check by default
    assert (await request(public, body=body, headers=evil, server=("10.1.2.3", 80))).status == 200
    unix = asgi_app(everything)  # a Unix socket (no server address): likewise
    assert (await request(unix, body=body, headers=evil, server=None)).status == 200
    pinned = asgi_app(everything, allowed_hosts=["mcp.example"])
    ok = {**headers, "host": "mcp.example"}
    assert (await request(pinned, body=body, headers=ok, server=("10.1.2.3", 80))).status == 200
    assert (await request(pinned, body=body, headers=evil, server=("10.1.2.3", 80))).status == 421


async def test_paths_heads_and_other_scopes(anyio_backend: str) -> None:
    head = request_head(
        {
            "method": "post",
            "path": "/api/mcp",
            "root_path": "/api",
            "query_string": b"a=1",
            "headers": [(b"x-a", b"1"), (b"x-a", b"2")],
        }
    )
    assert (head.method, head.path, head.query) == ("POST", "/mcp", "a=1")
    assert head.headers["x-a"] == "1, 2" and head.duplicated == {"x-a"}
    app = asgi_app(everything, max_header_size=1024)
    body, headers = echo_call()
    ex = await request(app, body=body, headers=headers, path="/api/mcp", root_path="/api")
    assert ex.status == 200
    ex = await request(app, body=body, headers=headers, path="/elsewhere")
    assert ex.status == 404
    # Mounted at "/ap", "/api/mcp" is not "/i/mcp" under it: only whole segments match.
    for root, path, status in [("/ap", "/api/mcp", 404), ("/api/", "/api/mcp", 200)]:
        ex = await request(app, body=body, headers=headers, path=path, root_path=root)
        assert ex.status == status, (root, path)
    assert request_head({"path": "/api", "root_path": "/api"}).path == "/"
    ex = await request(app, body=body, headers={**headers, "x-big": "y" * 2000})
    assert ex.status == 431
    ex = await request(app, "PUT", headers=headers)
    assert ex.status == 405 and ex.headers["allow"] == "GET, POST, DELETE"
    with pytest.raises(ValueError, match="HTTP only"):
        await app({"type": "websocket"}, Queue().get, Queue().aput)


# =================================================================================================
# 2. Under a real uvicorn (and hypercorn)
# =================================================================================================

APP_MODULE = '''
"""ASGI apps for the uvicorn tests (written out by tests/test_asgi.py)."""

import os

import anyio

from mcpwire import Context, Server, asgi_app
from mcpwire.examples.everything import server as everything

app = asgi_app(everything, legacy_sse=True)

probe = Server("asgi-probe", "1.0")
STATE = {"cancelled": 0, "finished": 0}


@probe.tool()
async def stall(ctx: Context, seconds: float = 60.0) -> str:
    await ctx.report_progress(1, 2)
    try:
        await anyio.sleep(seconds)
    except anyio.get_cancelled_exc_class():
        STATE["cancelled"] += 1
        raise
    STATE["finished"] += 1
    return "done"


@probe.tool()
def state() -> dict[str, int]:
    return {**STATE, "pid": os.getpid()}


probe_app = asgi_app(probe, path="/probe")


async def composed(scope, receive, send):
    """Both apps behind one host, their lifespans entered through running()."""
    if scope["type"] == "lifespan":
        await receive()
        async with app.running(), probe_app.running():
            await send({"type": "lifespan.startup.complete"})
            await receive()
        await send({"type": "lifespan.shutdown.complete"})
        return
    await (probe_app if scope["path"].startswith("/probe") else app)(scope, receive, send)
'''


class Host:
    """An ASGI host (uvicorn or hypercorn) in a child process, on loopback and a free port."""

    def __init__(self, app_dir: Path, target: str, *, workers: int = 1, kind: str = "uvicorn"):
        self.port = free_port()
        self.log = app_dir / f"{kind}-{self.port}.log"
        if kind == "uvicorn":
            argv = [
                *("uvicorn", "--app-dir", str(app_dir), target),
                *("--host", "127.0.0.1", "--port", str(self.port), "--workers", str(workers)),
                *("--lifespan", "on", "--timeout-graceful-shutdown", "2"),
            ]
        else:  # hypercorn on trio: the app's other anyio backend, under a real server
            argv = [
                *("hypercorn", target, "--bind", f"127.0.0.1:{self.port}"),
                *("--workers", str(workers), "--worker-class", "trio", "--graceful-timeout", "2"),
            ]
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", *argv],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=app_dir,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        try:
            self._wait_until_listening()
        except BaseException:
            self.stop()
            raise

    def _wait_until_listening(self) -> None:
        with anyio.from_thread.start_blocking_portal() as portal:
            portal.call(self._poll)

    async def _poll(self) -> None:
        with anyio.fail_after(START_TIMEOUT):
            while True:
                assert self.process.poll() is None, self.output()
                try:
                    stream = await anyio.connect_tcp("127.0.0.1", self.port)
                except OSError:
                    await anyio.sleep(0.05)
                    continue
                await stream.aclose()
                return

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def stop(self) -> int:
        """SIGTERM, and the exit status (uvicorn re-raises the signal once it has shut
        down, so a clean single-process exit is -SIGTERM; the multi-worker parent exits 0)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


@pytest.fixture(scope="module")
def app_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("asgi_apps")
    (path / "mcpwire_asgi_apps.py").write_text(APP_MODULE)
    return path


@pytest.fixture(scope="module")
def one_worker(app_dir: Path) -> Iterator[Host]:
    server = Host(app_dir, "mcpwire_asgi_apps:composed")
    yield server
    assert server.stop() in CLEAN_EXIT, server.output()


@pytest.fixture(scope="module")
def two_workers(app_dir: Path) -> Iterator[Host]:
    server = Host(app_dir, "mcpwire_asgi_apps:app", workers=2)
    yield server
    assert server.stop() in CLEAN_EXIT, server.output()


@pytest.mark.parametrize(
    ("mode", "era", "version"), [("auto", "modern", MODERN), ("legacy", "legacy", LEGACY)]
)
async def test_mcpwire_client_under_uvicorn(
    anyio_backend: str, one_worker: Host, mode: str, era: str, version: str
) -> None:
    notes: list[tuple[str, Any]] = []

    async def on_notification(method: str, params: Any) -> None:
        notes.append((method, params))

    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    with anyio.fail_after(30):
        async with Client.http(
            one_worker.url, mode=mode, on_notification=on_notification, log_level="debug"
        ) as c:
            assert (c.era, c.protocol_version) == (era, version)
            sid = getattr(c.transport, "session_id", None)
            assert (sid is not None) == (era == "legacy")
            if era == "legacy":
                await c.set_logging_level("debug")
            result = await c.call_tool("echo", {"message": "through uvicorn"})
            assert [b.text for b in result.content] == ["through uvicorn"]
            result = await c.call_tool(
                "long_task", {"steps": 3, "delay": 0.01}, on_progress=on_progress
            )
            assert result.structured == {"result": "finished 3 steps"}
            assert progress == [(i, 3, f"step {i} of 3") for i in (1, 2, 3)]
            assert (await c.call_tool("log_demo")).structured == {"result": "logged"}
            logged = [p["data"] for m, p in notes if m == "notifications/message"]
            assert logged == [
                "a debug message",
                "an info message",
                "a warning message",
                "an error message",
            ]
            assert (await c.call_tool("fail")).is_error
    if era == "legacy":  # the client DELETEd its session on the way out
        async with client(one_worker.port) as raw:
            reply = await raw.request(body=rpc(9, "ping"), headers={"mcp-session-id": str(sid)})
            assert reply.status == 404


# SDK deviation: on trio, httpx2/httpcore2 inside the SDK client leave async generators
# unfinished when a stream is closed, and trio reports them when they are collected.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize(("mode", "version"), [("legacy", LEGACY), ("auto", MODERN)])
async def test_sdk_client_under_uvicorn(
    anyio_backend: str, one_worker: Host, mode: str, version: str
) -> None:
    """Every feature of the example server through the reference SDK's HTTP client:
    legacy asks as server->client requests on the POST's event stream and resource
    updates on the GET stream; modern asks as InputRequiredResult."""
    from mcp import Client as SdkClient
    from test_interop_stdio import SdkPeer, sdk_exercise_everything

    peer = SdkPeer()
    with anyio.fail_after(60):
        async with SdkClient(
            one_worker.url,
            mode=mode,  # type: ignore[arg-type]
            log_level="debug" if mode == "auto" else None,
            read_timeout_seconds=15,
            cache=None,
            **peer.callbacks(),
        ) as c:
            assert c.protocol_version == version
            await sdk_exercise_everything(c, peer, mode)


async def test_status_codes_under_uvicorn(anyio_backend: str, one_worker: Host) -> None:
    port = one_worker.port
    body, headers = modern(1, "tools/list")
    async with client(port) as raw:
        reply = await raw.request(body=body, headers={**headers, "accept": "text/html"})
        assert reply.status == 406
        reply = await raw.request(body=body, headers={**headers, "content-type": "text/plain"})
        assert reply.status == 415
        reply = await raw.request(body=rpc(2, "tools/list"))  # legacy, no session
        assert reply.status == 400 and reply.json()["error"]["code"] == -32600
        reply = await raw.request(body=rpc(3, "tools/list"), headers={"mcp-session-id": "nope"})
        assert reply.status == 404
        bad = modern(4, "tools/list")[0]
        reply = await raw.request(body=bad, headers={**headers, "mcp-method": "tools/call"})
        assert reply.status == 400 and reply.json()["error"]["code"] == -32020
        reply = await raw.request(body=b"{oops", headers=headers)
        assert reply.status == 400 and reply.json()["error"]["code"] == -32700
        sid = await initialize(raw)
        session = {"mcp-session-id": sid, "mcp-protocol-version": LEGACY}
        assert (await raw.request("DELETE", headers=session)).status == 200
        assert (await raw.request(body=rpc(5, "ping"), headers=session)).status == 404
        assert (await raw.request("DELETE", headers=session)).status == 404
    async with client(port) as raw:  # these close the connection
        reply = await raw.request(body=body, headers={**headers, "origin": "http://evil.example"})
        assert reply.status == 403
    async with client(port) as raw:
        reply = await raw.request(body=body, headers={**headers, "host": "evil.example"})
        assert reply.status == 421
    async with client(port) as raw:
        assert (await raw.request("PUT")).status == 405


async def test_disconnect_cancels_a_modern_tool_under_uvicorn(
    anyio_backend: str, one_worker: Host
) -> None:
    url = f"http://127.0.0.1:{one_worker.port}/probe"
    async with Client.http(url, mode=MODERN) as c:
        before = (await c.call_tool("state")).structured
    assert isinstance(before, dict)
    body, headers = modern(1, "tools/call", {"name": "stall", "arguments": {}}, progressToken="p")
    with anyio.fail_after(20):
        async with client(one_worker.port) as raw:
            await raw.send(body=body, headers=headers, path="/probe")
            head = await raw.head()
            assert head.status == 200 and head.headers["content-type"] == "text/event-stream"
            event = await raw.sse().next()
            assert event is not None and "notifications/progress" in event.data
        # the connection is closed: the tool must be cancelled, not finish
        async with Client.http(url, mode=MODERN) as c:
            while True:
                after = (await c.call_tool("state")).structured
                assert isinstance(after, dict)
                if after["cancelled"] > before["cancelled"]:
                    break
                await anyio.sleep(0.05)
    assert after["finished"] == before["finished"]


async def test_deprecated_http_sse_under_uvicorn(anyio_backend: str, one_worker: Host) -> None:
    url = f"http://127.0.0.1:{one_worker.port}/sse"
    with anyio.fail_after(30):
        async with Client.http(url, transport="sse", mode="legacy") as c:
            assert c.era == "legacy"
            result = await c.call_tool("add", {"a": 2, "b": 40})
            assert result.structured == {"result": 42}


async def test_modern_calls_across_two_workers(anyio_backend: str, two_workers: Host) -> None:
    """The modern era keeps no state between requests, so it does not matter which
    worker answers which: every call from every client (each with connections of
    its own) succeeds."""
    results: list[Any] = []

    async def one_client(n: int) -> None:
        async with Client.http(two_workers.url, era_key=("asgi-workers", n)) as c:
            assert c.era == "modern"
            for i in range(10):
                result = await c.call_tool("add", {"a": n, "b": i})
                results.append(result.structured)

    async def one_connection(n: int) -> None:
        body, headers = modern(n, "tools/call", {"name": "echo", "arguments": {"message": str(n)}})
        async with client(two_workers.port) as raw:
            reply = await raw.request(body=body, headers=headers)
            results.append(reply.json()["result"]["structuredContent"])

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            for n in range(4):
                tg.start_soon(one_client, n)
            for n in range(20):
                tg.start_soon(one_connection, n)
    expected = [{"result": n + i} for n in range(4) for i in range(10)]
    expected += [{"result": str(n)} for n in range(20)]
    assert sorted(map(repr, results)) == sorted(map(repr, expected))


async def test_sigterm_runs_lifespan_shutdown_and_cuts_streams(
    anyio_backend: str, app_dir: Path
) -> None:
    """uvicorn waits for requests in flight (a GET stream is one) up to its graceful
    timeout, then the lifespan shutdown drains the app; the process exits cleanly."""
    server = Host(app_dir, "mcpwire_asgi_apps:app")
    try:
        with anyio.fail_after(30):
            async with client(server.port) as raw, client(server.port) as stream:
                sid = await initialize(raw)
                session = {"mcp-session-id": sid, "mcp-protocol-version": LEGACY}
                await stream.send("GET", headers={**session, "accept": "text/event-stream"})
                assert (await stream.head()).status == 200
                events = stream.sse()
                priming = await events.next()
                assert priming is not None and priming.id
                server.process.send_signal(signal.SIGTERM)
                # cut: no further event, and no clean end of the chunked body
                with pytest.raises((EOFError, h11.RemoteProtocolError)):
                    await events.next()
    finally:
        status = server.stop()
    output = server.output()
    assert status in CLEAN_EXIT, output
    assert "Application shutdown complete" in output, output


async def test_hypercorn_on_trio(anyio_backend: str, app_dir: Path) -> None:
    """The same app under hypercorn's trio worker: both eras, a legacy session hosted by
    the lifespan task group (on trio), DELETE, and a sample of status codes."""
    server = Host(app_dir, "mcpwire_asgi_apps:app", kind="hypercorn")
    try:
        with anyio.fail_after(30):
            for mode, era in [("auto", "modern"), ("legacy", "legacy")]:
                async with Client.http(server.url, mode=mode) as c:
                    assert c.era == era
                    result = await c.call_tool("echo", {"message": f"hypercorn {mode}"})
                    assert [b.text for b in result.content] == [f"hypercorn {mode}"]
            body, headers = modern(1, "tools/list")
            async with client(server.port) as raw:
                assert (await raw.request(body=body, headers=headers)).status == 200
                reply = await raw.request(body=body, headers={**headers, "accept": "text/html"})
                assert reply.status == 406
                sid = await initialize(raw)
                session = {"mcp-session-id": sid, "mcp-protocol-version": LEGACY}
                assert (await raw.request("DELETE", headers=session)).status == 200
                assert (await raw.request(body=rpc(2, "ping"), headers=session)).status == 404
    finally:
        status = server.stop()
    assert status in CLEAN_EXIT, server.output()
