"""Requests whose handlers may wait: the streamed paths.

A modern request (``_http_modern``) is served with a ``StreamedSession``, no
``Session``. On asyncio its handler runs in the connection's task and the
stream itself reports the client going away (``handler_first``); a pump task
writes beside the handler only once something must go out before it ends.
Elsewhere the handler has a task of its own beside the pump (``beside``), and
a second task watches for the hang-up (``pump_watched``). A legacy request
(``_http_legacy``) sent while its session's reader is idle gets its handler's
task from the POST's own task, as the reader would start it.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.abc
import pytest
from http_raw import Events, Raw, initialize, modern, rpc, running

from mcpwire import Context, HTTPServer, HTTPServerOptions, Server, _http_modern
from mcpwire._http_streams import Frame, Outbox
from mcpwire._http_wire import HTTPConnection
from mcpwire.sansio import SSEEvent

pytestmark = pytest.mark.anyio


def waiting_app(state: dict[str, Any]) -> Server:
    app = Server("streamed", "1.0")

    @app.tool()
    async def block(seconds: float = 30.0) -> str:
        """Wait, noting whether it was cancelled."""
        state["connections"] = len(app.connections)
        state["started"].set()
        try:
            await anyio.sleep(seconds)
        except anyio.get_cancelled_exc_class():
            state["cancelled"].set()
            raise
        return "slept"

    @app.tool()
    async def count(n: int, ctx: Context) -> str:
        """Report progress n times, then answer."""
        for i in range(n):
            await ctx.report_progress(i + 1, n)
        return "counted"

    return app


def fresh() -> dict[str, Any]:
    return {"started": anyio.Event(), "cancelled": anyio.Event(), "connections": 0}


async def first_event(
    raw: Raw, body: dict[str, Any], headers: dict[str, str]
) -> tuple[Events, SSEEvent]:
    """Send a request answered with an event stream; the stream and its first event."""
    await raw.send(body=body, headers=headers)
    head = await raw.head()
    assert head.headers["content-type"] == "text/event-stream"
    events = raw.sse()
    first = await events.next()
    assert first is not None
    return events, first


async def test_a_streamed_response_needs_no_watcher_task_on_asyncio(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On asyncio the stream reports the client's hang-up itself, so nothing reads
    beside a streamed response; on trio a watcher task does."""
    watched: list[int] = []
    real = HTTPConnection.watch_disconnect

    async def counting(self: HTTPConnection) -> None:
        watched.append(1)
        await real(self)

    monkeypatch.setattr(HTTPConnection, "watch_disconnect", counting)
    state = fresh()
    async with running(waiting_app(state)) as http, await Raw.connect(http.port or 0) as raw:
        body, headers = modern(1, "tools/call", {"name": "count", "arguments": {"n": 3}})
        body["params"]["_meta"]["progressToken"] = "p"
        reply = await raw.request(body=body, headers=headers)
        messages = reply.messages()
        assert [m["params"]["progress"] for m in messages[:-1]] == [1, 2, 3]
        assert messages[-1]["result"]["content"][0]["text"] == "counted"
    assert len(watched) == (0 if anyio_backend == "asyncio" else 1)


async def test_on_asyncio_a_waiting_handler_runs_in_the_connections_task(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No task beside a modern request's handler on asyncio when nothing must go
    out before it ends (``beside`` is not used); on trio it is."""
    used: list[int] = []
    real = _http_modern.beside

    async def counting(*args: Any) -> Any:
        used.append(1)
        return await real(*args)

    monkeypatch.setattr(_http_modern, "beside", counting)
    state = fresh()
    async with running(waiting_app(state)) as http, await Raw.connect(http.port or 0) as raw:
        for rid in (1, 2):
            body, headers = modern(
                rid, "tools/call", {"name": "block", "arguments": {"seconds": 0}}
            )
            reply = await raw.request(body=body, headers=headers)
            assert reply.headers["content-type"] == "application/json"
            assert reply.json()["result"]["content"][0]["text"] == "slept"
    assert len(used) == (0 if anyio_backend == "asyncio" else 2)


async def test_progress_reaches_the_client_while_the_handler_still_runs() -> None:
    """A notification sent mid-call goes out at once (the pump starts beside the
    handler), not with the answer: the handler here waits until the client has
    read its first progress event."""
    seen = anyio.Event()
    app = Server("streamed", "1.0")

    @app.tool()
    async def step(ctx: Context) -> str:
        """Report progress, then wait until the client has it."""
        await ctx.report_progress(1, 2)
        with anyio.fail_after(5):
            await seen.wait()
        await ctx.report_progress(2, 2)
        return "stepped"

    async with running(app) as http, await Raw.connect(http.port or 0) as raw:
        body, headers = modern(1, "tools/call", {"name": "step", "arguments": {}})
        body["params"]["_meta"]["progressToken"] = "p"
        with anyio.fail_after(5):
            events, first = await first_event(raw, body, headers)
            assert '"progress":1' in first.data
            seen.set()
            rest = await events.rest()
        assert '"progress":2' in rest[0].data and "stepped" in rest[-1].data


async def test_a_client_gone_mid_stream_cancels_the_handler_and_its_pump() -> None:
    """The client hangs up after the first progress event, the pump writing beside
    the handler: the handler is cancelled and the request ends (nothing left
    busy), as when it hangs up before anything was written."""
    cancelled = anyio.Event()
    app = Server("streamed", "1.0")

    @app.tool()
    async def report_then_wait(ctx: Context) -> str:
        """Report progress, then wait until cancelled."""
        await ctx.report_progress(1, 2)
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        return "never"

    async with running(app) as http:
        raw = await Raw.connect(http.port or 0)
        body, headers = modern(1, "tools/call", {"name": "report_then_wait", "arguments": {}})
        body["params"]["_meta"]["progressToken"] = "p"
        with anyio.fail_after(5):
            await first_event(raw, body, headers)
        await raw.aclose()
        with anyio.fail_after(5):
            await cancelled.wait()
            while http.stats()["busy_requests"]:
                await anyio.sleep(0.01)


async def test_a_client_that_stops_reading_a_stream_stops_the_handler() -> None:
    """A handler that reports faster than its client reads: once a write has
    waited ``write_timeout`` the pump gives the client up, and the handler is
    stopped (its request cancelled, its next report refused) long before its end,
    whichever way the pump started."""
    stopped = anyio.Event()
    reports = [0]
    app = Server("streamed", "1.0")

    @app.tool()
    async def flood(ctx: Context) -> str:
        """Report progress with a large message, a million times."""
        try:
            for i in range(1_000_000):
                await ctx.report_progress(i, None, "x" * 20_000)
                reports[0] += 1
        finally:
            stopped.set()
        return "flooded"

    options = {"write_timeout": 0.5}
    async with running(app, **options) as http, await Raw.connect(http.port or 0) as raw:
        body, headers = modern(1, "tools/call", {"name": "flood", "arguments": {}})
        body["params"]["_meta"]["progressToken"] = "p"
        await raw.send(body=body, headers=headers)  # and never reads the response
        with anyio.fail_after(20):
            await stopped.wait()
            while http.stats()["busy_requests"]:
                await anyio.sleep(0.01)
    assert reports[0] < 1_000_000


async def test_a_client_that_half_closes_cancels_the_waiting_handler() -> None:
    """End of the client's input is its going away (as ``watch_disconnect`` has
    it): the handler is cancelled, on either backend."""
    state = fresh()
    async with running(waiting_app(state)) as http, await Raw.connect(http.port or 0) as raw:
        body, headers = modern(1, "tools/call", {"name": "block", "arguments": {}})
        await raw.send(body=body, headers=headers)
        with anyio.fail_after(5):
            await state["started"].wait()
        await raw.stream.send_eof()
        with anyio.fail_after(5):
            await state["cancelled"].wait()
            while http.stats()["busy_requests"]:
                await anyio.sleep(0.01)


async def test_a_waiting_request_is_a_connection_of_the_server_while_it_runs() -> None:
    """Server-wide notifications reach a modern request's connection while its
    handler runs; the server forgets it once the response is written."""
    state = fresh()
    app = waiting_app(state)
    async with running(app) as http, await Raw.connect(http.port or 0) as raw:
        body, headers = modern(1, "tools/call", {"name": "block", "arguments": {"seconds": 0}})
        reply = await raw.request(body=body, headers=headers)
        assert reply.json()["result"]["content"][0]["text"] == "slept"
        assert state["connections"] == 1
        with anyio.fail_after(5):  # the response may come before the request's end
            while app.connections:
                await anyio.sleep(0.01)


async def test_a_request_followed_at_once_by_the_end_of_input_is_cancelled() -> None:
    """The client's input had ended before the response began (request and FIN
    together): the waiting handler does not run on to its end, on either backend."""
    state = fresh()
    async with running(waiting_app(state)) as http, await Raw.connect(http.port or 0) as raw:
        body, headers = modern(1, "tools/call", {"name": "block", "arguments": {}})
        await raw.send(body=body, headers=headers)
        await raw.stream.send_eof()
        with anyio.fail_after(5):
            while http.stats()["modern_requests"] == 0 or http.stats()["busy_requests"]:
                await anyio.sleep(0.01)


async def test_a_graceful_shutdown_ends_a_listen_stream_with_its_result() -> None:
    """``subscriptions/listen`` answers once the server stops (lifecycle: the
    result ends the stream): a shutdown ends an open listen response with its
    final result at once, not after ``shutdown_timeout`` with a 503."""
    app = waiting_app(fresh())
    http = HTTPServer(app, HTTPServerOptions(shutdown_timeout=5))
    scope = anyio.CancelScope()

    async def serve(*, task_status: anyio.abc.TaskStatus[int]) -> None:
        with scope:
            await http.serve("127.0.0.1", 0, task_status=task_status)

    async with anyio.create_task_group() as tg:
        port = await tg.start(serve)
        async with await Raw.connect(port) as raw:
            body, headers = modern(1, "subscriptions/listen", {"notifications": {}})
            with anyio.fail_after(5):
                events, first = await first_event(raw, body, headers)
            assert "subscriptions/acknowledged" in first.data
            started = anyio.current_time()
            scope.cancel()
            with anyio.fail_after(5):
                rest = await events.rest()
            assert '"result"' in rest[-1].data and '"id":1' in rest[-1].data
            assert anyio.current_time() - started < 3


# -- legacy: a request that may wait, started from the POST's task ---------------------------


async def test_a_legacy_request_that_may_wait_skips_the_session_reader(
    dispatched: list[str],
) -> None:
    """Sent while the session's reader waits with nothing queued, a request whose
    handler may wait gets its task from the POST's task: no request passes
    through the reader (``Session._dispatch``), on either backend, and a handler
    that reports progress still streams it (SSE) before its answer. (Each is sent
    once the reader waits: a 202 can come before the reader has taken the
    notification it answers, and a request sent then goes to the reader.)"""
    state = fresh()
    async with running(waiting_app(state)) as http, await Raw.connect(http.port or 0) as raw:
        sid = await initialize(raw)
        headers = {"mcp-session-id": sid}
        session = http.legacy.table.get(sid)
        assert session is not None

        async def reader_waits() -> None:
            with anyio.fail_after(5):
                while not session.transport.idle:
                    await anyio.sleep(0.001)

        dispatched.clear()
        for rid in (2, 3):
            await reader_waits()
            params = {"name": "block", "arguments": {"seconds": 0}}
            reply = await raw.request(body=rpc(rid, "tools/call", params), headers=headers)
            assert reply.json()["result"]["content"][0]["text"] == "slept"
        await reader_waits()
        params = {"name": "count", "arguments": {"n": 2}, "_meta": {"progressToken": "p"}}
        reply = await raw.request(body=rpc(4, "tools/call", params), headers=headers)
        assert reply.headers["content-type"] == "text/event-stream"
        messages = reply.messages()
        assert [m["params"]["progress"] for m in messages[:-1]] == [1, 2]
        assert messages[-1]["result"]["content"][0]["text"] == "counted"
    assert "Request" not in dispatched


async def test_a_legacy_request_sent_while_another_runs_is_served_beside_it() -> None:
    """A second POST while the first request's handler waits: each gets its own
    handler task and its own answer, and the first, still running, is not
    cancelled by the second (legacy requests end by notifications/cancelled)."""
    state = fresh()
    async with (
        running(waiting_app(state)) as http,
        await Raw.connect(http.port or 0) as first,
        await Raw.connect(http.port or 0) as second,
    ):
        sid = await initialize(first)
        headers = {"mcp-session-id": sid}
        long = {"name": "block", "arguments": {"seconds": 0.3}}
        await first.send(body=rpc(2, "tools/call", long), headers=headers)
        with anyio.fail_after(5):
            await state["started"].wait()
        short = {"name": "count", "arguments": {"n": 0}}
        reply = await second.request(body=rpc(3, "tools/call", short), headers=headers)
        assert reply.json()["result"]["content"][0]["text"] == "counted"
        with anyio.fail_after(5):
            answer = await first.rest(await first.head())
        assert answer.json()["result"]["content"][0]["text"] == "slept"
        assert not state["cancelled"].is_set()


# -- Outbox.get_within: the pump's wait for the next frame ---------------------------------


async def test_get_within_gives_a_queued_frame_at_once_and_none_after_the_timeout() -> None:
    outbox = Outbox()
    outbox.put(Frame("sse", b"queued"))
    frame = await outbox.get_within(10)
    assert frame is not None and frame.data == b"queued"
    with anyio.fail_after(5):
        assert await outbox.get_within(0.02) is None
    outbox.put(Frame("sse", b"after a timeout"))  # the expired wait left nothing behind
    frame = await outbox.get_within(10)
    assert frame is not None and frame.data == b"after a timeout"


async def test_get_within_wakes_for_a_frame_put_while_it_waits() -> None:
    outbox = Outbox()
    got: list[bytes] = []

    async def consumer() -> None:
        frame = await outbox.get_within(10)
        assert frame is not None
        got.append(frame.data)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(consumer)
            await anyio.sleep(0.01)
            outbox.put(Frame("sse", b"woken"))
    assert got == [b"woken"]


async def test_a_cancelled_get_within_leaves_the_outbox_usable() -> None:
    outbox = Outbox()
    with anyio.move_on_after(0.02) as scope:
        await outbox.get_within(10)
    assert scope.cancelled_caught
    outbox.put(Frame("sse", b"later"))
    frame = await outbox.get_within(10)
    assert frame is not None and frame.data == b"later"
