"""Tests for the anyio session layer, on both backends.

Peers are either two ``Session`` objects over ``memory_pair()`` (with and
without a serialise/parse round trip) or a ``Session`` facing a raw transport
end that the test drives message by message, so that exactly what crosses the
wire can be asserted.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

import mcpwire
from mcpwire import ConnectionClosed, JSONRPCError, RequestContext, RequestTimeout, Session
from mcpwire._inflow import MAX_HANDLERS, MAX_PARKED
from mcpwire._pending import MAX_STRAY_WARNINGS
from mcpwire.sansio import (
    Batch,
    ErrorObject,
    ErrorResponse,
    Incoming,
    JSONObject,
    Message,
    Notification,
    Request,
    Response,
    parse,
)
from mcpwire.sansio._rpc import ABANDONED_MEMORY

pytestmark = pytest.mark.anyio

Outbound = Message | list[Message]

WAIT = 5.0  # generous bound for anything that should happen "now"


@pytest.fixture(params=[False, True], ids=["objects", "wire"])
def wire(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


async def echo_server(request: Request, ctx: RequestContext) -> JSONObject:
    if request.method == "echo":
        return {"echo": request.params}
    if request.method == "fail":
        raise JSONRPCError(-32042, "needs a URL", {"url": "https://example.com"})
    if request.method == "crash":
        raise RuntimeError("boom")
    if request.method == "sleep":
        params = request.params or {}
        delay = params.get("s", 0)
        assert isinstance(delay, (int, float))
        await anyio.sleep(delay)
        return {"slept": delay}
    if request.method == "whoami":
        return {"id": request.id}
    raise JSONRPCError(-32601, f"Method not found: {request.method}")


@asynccontextmanager
async def connected(
    *, wire: bool = False, on_request: Any = echo_server, **client_kw: Any
) -> AsyncIterator[tuple[Session, Session]]:
    client_end, server_end = mcpwire.memory_pair(wire=wire)
    async with (
        Session(server_end, on_request=on_request) as server,
        Session(client_end, **client_kw) as client,
    ):
        yield client, server


@asynccontextmanager
async def facing_raw(
    *, wire: bool = False, **session_kw: Any
) -> AsyncIterator[tuple[Session, mcpwire.MemoryTransport]]:
    """A session on one end; the other end is returned raw for the test to drive."""
    ours, raw = mcpwire.memory_pair(wire=wire)
    try:
        async with Session(ours, **session_kw) as session:
            yield session, raw
    finally:
        await raw.aclose()


class FakeTransport:
    """Feeds parsed frames to a session and records what it sends back."""

    def __init__(self) -> None:
        self._in: tuple[MemoryObjectSendStream[Incoming], MemoryObjectReceiveStream[Incoming]] = (
            anyio.create_memory_object_stream[Incoming](100)
        )
        self._out: tuple[MemoryObjectSendStream[Outbound], MemoryObjectReceiveStream[Outbound]] = (
            anyio.create_memory_object_stream[Outbound](100)
        )

    async def feed(self, data: bytes) -> None:
        await self._in[0].send(parse(data))

    async def sent(self) -> Outbound:
        with anyio.fail_after(WAIT):
            return await self._out[1].receive()

    async def send(self, message: Outbound, *, related: object = None) -> None:
        await self._out[0].send(message)

    async def receive(self) -> Incoming:
        try:
            return await self._in[1].receive()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise anyio.EndOfStream from None

    async def aclose(self) -> None:
        for stream in (*self._in, *self._out):
            stream.close()

    def close_error(self) -> ConnectionClosed:
        return ConnectionClosed("fake transport closed")


async def receive(raw: mcpwire.MemoryTransport) -> Incoming:
    with anyio.fail_after(WAIT):
        return await raw.receive()


# -- requests and responses --------------------------------------------------


async def test_round_trip(wire: bool) -> None:
    async with connected(wire=wire) as (client, _):
        assert await client.request("echo", {"a": [1, "x", None]}) == {
            "echo": {"a": [1, "x", None]}
        }
        assert await client.request("echo") == {"echo": None}


async def test_error_response_raises_jsonrpc_error(wire: bool) -> None:
    async with connected(wire=wire) as (client, _):
        with pytest.raises(JSONRPCError) as info:
            await client.request("fail")
    assert info.value.code == -32042
    assert info.value.message == "needs a URL"
    assert info.value.data == {"url": "https://example.com"}


async def test_handler_exception_is_internal_error(wire: bool) -> None:
    async with connected(wire=wire) as (client, _):
        with pytest.raises(JSONRPCError) as info:
            await client.request("crash")
        assert info.value.code == -32603
        assert "boom" in info.value.message
        # The server keeps serving.
        assert await client.request("echo", {}) == {"echo": {}}


async def test_unknown_method_by_default(wire: bool) -> None:
    client_end, server_end = mcpwire.memory_pair(wire=wire)
    async with Session(server_end), Session(client_end) as client:
        with pytest.raises(JSONRPCError) as info:
            await client.request("tools/list")
    assert info.value.code == -32601
    assert "tools/list" in info.value.message


async def test_requests_both_ways(wire: bool) -> None:
    # A handler may call back into the requester (legacy server->client requests).
    async def on_request(request: Request, ctx: RequestContext) -> JSONObject:
        roots = await ctx.session.request("roots/list")
        return {"got": roots}

    async def client_side(request: Request, ctx: RequestContext) -> JSONObject:
        return {"roots": [request.method]}

    client_end, server_end = mcpwire.memory_pair(wire=wire)
    async with (
        Session(server_end, on_request=on_request),
        Session(client_end, on_request=client_side) as client,
    ):
        assert await client.request("tools/call") == {"got": {"roots": ["roots/list"]}}


async def test_notifications_are_delivered_in_order(wire: bool) -> None:
    seen: list[Notification] = []
    done = anyio.Event()

    async def on_notification(note: Notification) -> None:
        seen.append(note)
        if len(seen) == 20:
            done.set()

    client_end, server_end = mcpwire.memory_pair(wire=wire)
    async with Session(server_end, on_notification=on_notification), Session(client_end) as client:
        for i in range(20):
            await client.notify("notifications/message", {"i": i})
        with anyio.fail_after(WAIT):
            await done.wait()
    assert [n.params for n in seen] == [{"i": i} for i in range(20)]


async def test_failing_notification_handler_does_not_stop_the_session() -> None:
    async def on_notification(note: Notification) -> None:
        raise RuntimeError("bad handler")

    client_end, server_end = mcpwire.memory_pair()
    async with (
        Session(server_end, on_request=echo_server, on_notification=on_notification),
        Session(client_end) as client,
    ):
        await client.notify("x")
        assert await client.request("echo", {}) == {"echo": {}}


async def test_hundred_concurrent_requests_correlate(wire: bool) -> None:
    async def on_request(request: Request, ctx: RequestContext) -> JSONObject:
        params = request.params or {}
        n = params["n"]
        assert isinstance(n, int)
        await anyio.sleep((n * 7 % 10) / 1000)  # answers come back out of order
        return {"n": n, "id": request.id}

    results: dict[int, JSONObject] = {}
    async with connected(wire=wire, on_request=on_request) as (client, server):

        async def one(n: int) -> None:
            results[n] = await client.request("m", {"n": n})

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                for n in range(100):
                    tg.start_soon(one, n)
        assert client.rpc.pending_count == 0
        assert server.rpc.running_count == 0
    assert sorted(results) == list(range(100))
    assert all(results[n]["n"] == n for n in range(100))
    assert len({r["id"] for r in results.values()}) == 100


# -- timeouts and cancellation -------------------------------------------------


async def test_timeout_raises_and_sends_cancelled() -> None:
    async with facing_raw() as (client, raw):
        start = time.monotonic()
        with pytest.raises(RequestTimeout) as info:
            await client.request("slow", {"x": 1}, timeout=0.2)
        elapsed = time.monotonic() - start
        assert 0.19 <= elapsed < 0.2 + 0.8
        assert info.value.method == "slow"
        assert isinstance(info.value, TimeoutError)
        request = await receive(raw)
        assert type(request) is Request and request.method == "slow"
        notice = await receive(raw)
        assert type(notice) is Notification
        assert notice.method == "notifications/cancelled"
        assert notice.params is not None
        assert notice.params["requestId"] == request.id
        assert client.rpc.pending_count == 0
        # A late answer is ignored and counted, and the session keeps working.
        await raw.send(Response(request.id, {}))
        task_result: list[JSONObject] = []

        async def ask() -> None:
            task_result.append(await client.request("again"))

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            again = await receive(raw)
            assert type(again) is Request
            await raw.send(Response(again.id, {"ok": True}))
        assert task_result == [{"ok": True}]
        assert client.rpc.counters.late_responses == 1


async def test_a_late_answer_reaches_on_late_response_once(wire: bool) -> None:
    # A request given up on (timed out, or its caller cancelled) may still be
    # answered; the hook hears that answer once, with the method, and nothing else.
    heard: list[tuple[str, Response]] = []
    async with facing_raw(wire=wire) as (client, raw):
        client.on_late_response = lambda method, response: heard.append((method, response))
        with pytest.raises(RequestTimeout):
            await client.request("slow", timeout=0.05)
        first, notice = await receive(raw), await receive(raw)
        assert type(first) is Request
        assert type(notice) is Notification and notice.method == "notifications/cancelled"
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.request, "cancelled")
                second = await receive(raw)
                scope.cancel()
        assert type(second) is Request
        notice = await receive(raw)
        assert type(notice) is Notification and notice.method == "notifications/cancelled"
        await raw.send(ErrorResponse(first.id, ErrorObject(-32000, "too late")))
        await raw.send(Response(second.id, {"made": "x"}))
        await raw.send(Response(second.id, {"made": "again"}))  # a duplicate: not heard
        await raw.send(Response(12345, {}))  # never asked for: not heard
        got = await settled(client, "late", raw)
        assert got == {"late": True}
        assert [(method, r.result) for method, r in heard] == [("cancelled", {"made": "x"})]
        assert client._late == {}


async def test_late_answers_are_remembered_within_a_bound() -> None:
    async def drain(raw: mcpwire.MemoryTransport) -> None:
        while True:
            await raw.receive()

    async with facing_raw() as (client, raw), anyio.create_task_group() as tg:
        tg.start_soon(drain, raw)
        client.on_late_response = lambda method, response: None
        for _ in range(ABANDONED_MEMORY + 5):
            with pytest.raises(RequestTimeout):
                await client.request("slow", timeout=0.001)
        assert len(client._late) == ABANDONED_MEMORY
        tg.cancel_scope.cancel()


async def settled(client: Session, method: str, raw: mcpwire.MemoryTransport) -> JSONObject:
    """One more request answered by the test: everything sent before it has been read."""
    results: list[JSONObject] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(lambda: _collect(client.request(method), results))
        while True:
            item = await receive(raw)
            if type(item) is Request and item.method == method:
                await raw.send(Response(item.id, {method: True}))
                break
    return results[0]


async def _collect(result: Any, into: list[JSONObject]) -> None:
    into.append(await result)


async def test_timeout_cancels_the_peer_handler(wire: bool) -> None:
    observed = anyio.Event()

    async def on_request(request: Request, ctx: RequestContext) -> JSONObject:
        try:
            await anyio.sleep_forever()
        finally:
            observed.set()
            assert ctx.cancelled
        raise AssertionError("unreachable")

    async with connected(wire=wire, on_request=on_request) as (client, server):
        with pytest.raises(RequestTimeout):
            await client.request("slow", timeout=0.1)
        with anyio.fail_after(WAIT):
            await observed.wait()
        assert server.rpc.counters.unknown_cancels == 0


async def test_timeout_covers_a_blocked_send() -> None:
    # The peer stopped reading (a wedged child whose stdin pipe is full): the
    # request's deadline must still hold; it may not hang in send() forever.
    from mcpwire._transport import MEMORY_BUFFER

    async with facing_raw() as (client, _raw):
        for i in range(MEMORY_BUFFER):
            await client.notify("filler", {"i": i})
        start = time.monotonic()
        with anyio.fail_after(3), pytest.raises(RequestTimeout):
            await client.request("stuck", timeout=0.3)
        # 0.3 s deadline, plus at most the bounded attempt to send the cancel notice.
        assert time.monotonic() - start < 3


async def test_default_timeout_is_used() -> None:
    async with facing_raw(request_timeout=0.1) as (client, _raw):
        with pytest.raises(RequestTimeout) as info:
            await client.request("slow")
    assert info.value.seconds == pytest.approx(0.1)


async def test_progress_callback_receives_updates_in_order(wire: bool) -> None:
    async def on_request(request: Request, ctx: RequestContext) -> JSONObject:
        assert ctx.progress_token == request.id
        await ctx.report_progress(1, 3, "one")
        await ctx.report_progress(2, 3)
        await ctx.report_progress(3.5)
        return {"done": True}

    updates: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with connected(wire=wire, on_request=on_request) as (client, _):
        result = await client.request("work", {"p": 1}, on_progress=on_progress)
    assert result == {"done": True}
    assert updates == [(1.0, 3.0, "one"), (2.0, 3.0, None), (3.5, None, None)]


async def test_report_progress_without_token_sends_nothing() -> None:
    async def on_request(request: Request, ctx: RequestContext) -> JSONObject:
        assert ctx.progress_token is None
        await ctx.report_progress(1, 2, "ignored")
        return {}

    seen: list[Notification] = []

    async def on_notification(note: Notification) -> None:
        seen.append(note)

    async with connected(on_request=on_request, on_notification=on_notification) as (
        client,
        _,
    ):
        assert await client.request("work") == {}
    assert seen == []


async def test_progress_extends_the_deadline(wire: bool) -> None:
    async def on_request(request: Request, ctx: RequestContext) -> JSONObject:
        for i in range(6):  # 0.6 s in all, progress every 0.1 s
            await anyio.sleep(0.1)
            await ctx.report_progress(i + 1, 6)
        return {"finished": True}

    # The deadline (0.45 s) is shorter than the work (0.6 s) but leaves a loaded
    # machine 0.35 s of slack between two progress notifications.

    updates: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append(progress)

    async with connected(wire=wire, on_request=on_request) as (client, _):
        result = await client.request("work", timeout=0.45, on_progress=on_progress)
    assert result == {"finished": True}
    assert updates == [1, 2, 3, 4, 5, 6]


async def test_progress_never_extends_past_max_timeout() -> None:
    cancelled = anyio.Event()

    async def on_request(request: Request, ctx: RequestContext) -> JSONObject:
        try:
            while True:
                await anyio.sleep(0.05)
                await ctx.report_progress(1)
        finally:
            cancelled.set()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        pass

    async with connected(on_request=on_request) as (client, _):
        start = time.monotonic()
        with pytest.raises(RequestTimeout):
            await client.request("work", timeout=0.2, max_timeout=0.5, on_progress=on_progress)
        elapsed = time.monotonic() - start
        assert 0.49 <= elapsed < 0.5 + 0.8
        with anyio.fail_after(WAIT):
            await cancelled.wait()


async def test_session_max_request_timeout_caps_timeout_none() -> None:
    async with facing_raw(request_timeout=0.1, max_request_timeout=0.2) as (client, _raw):
        start = time.monotonic()
        with pytest.raises(RequestTimeout):
            await client.request("slow", timeout=None)
        assert time.monotonic() - start < 0.2 + 0.8


async def test_caller_cancellation_sends_cancelled() -> None:
    async with facing_raw() as (client, raw):
        sent: list[Incoming] = []
        with anyio.CancelScope() as scope:

            async def cancel_once_sent() -> None:
                sent.append(await receive(raw))
                scope.cancel()

            async with anyio.create_task_group() as tg:
                tg.start_soon(cancel_once_sent)
                await client.request("slow", timeout=30)
        assert scope.cancelled_caught
        request = sent[0]
        assert type(request) is Request and request.method == "slow"
        notice = await receive(raw)
        assert type(notice) is Notification
        assert notice.method == "notifications/cancelled"
        assert notice.params is not None
        assert notice.params["requestId"] == request.id
        assert isinstance(notice.params.get("reason", ""), str)
        assert client.rpc.pending_count == 0


async def test_caller_move_on_after_sends_cancelled() -> None:
    async with facing_raw() as (client, raw):
        with anyio.move_on_after(0.1):
            await client.request("slow", timeout=30)
        request = await receive(raw)
        notice = await receive(raw)
        assert type(request) is Request
        assert type(notice) is Notification
        assert notice.method == "notifications/cancelled"
        assert notice.params is not None and notice.params["requestId"] == request.id


async def test_incoming_cancel_stops_the_handler_and_suppresses_the_response(
    wire: bool,
) -> None:
    started = anyio.Event()
    stopped = anyio.Event()

    async def on_request(request: Request, ctx: RequestContext) -> JSONObject:
        if request.method != "slow":
            return {"method": request.method}
        started.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            assert ctx.cancelled
            stopped.set()
            raise
        raise AssertionError("unreachable")

    async with facing_raw(wire=wire, on_request=on_request) as (server, raw):
        await raw.send(Request(1, "slow"))
        with anyio.fail_after(WAIT):
            await started.wait()
        await raw.send(Notification("notifications/cancelled", {"requestId": 1}))
        with anyio.fail_after(WAIT):
            await stopped.wait()
        # Nothing was sent for request 1: the next thing on the wire answers 2.
        await raw.send(Request(2, "after"))
        reply = await receive(raw)
        assert reply == Response(2, {"method": "after"})
        assert server.rpc.running_count == 0
        # The cancelled id may be reused afterwards.
        await raw.send(Request(1, "reuse"))
        assert await receive(raw) == Response(1, {"method": "reuse"})


async def test_cancel_for_unknown_id_is_ignored() -> None:
    async with facing_raw(on_request=echo_server) as (server, raw):
        await raw.send(Notification("notifications/cancelled", {"requestId": 77}))
        await raw.send(Notification("notifications/cancelled", {}))
        await raw.send(Request(1, "echo"))
        assert await receive(raw) == Response(1, {"echo": None})
        assert server.rpc.counters.unknown_cancels == 2


async def test_duplicate_incoming_id_is_refused() -> None:
    gate = anyio.Event()

    async def on_request(request: Request, ctx: RequestContext) -> JSONObject:
        await gate.wait()
        return {"m": request.method}

    async with facing_raw(on_request=on_request) as (_server, raw):
        await raw.send(Request(1, "first"))
        await raw.send(Request(1, "second"))
        reply = await receive(raw)
        assert type(reply) is ErrorResponse
        assert reply.id == 1 and reply.error.code == -32600
        gate.set()
        assert await receive(raw) == Response(1, {"m": "first"})


async def test_unknown_response_is_counted() -> None:
    async with facing_raw(on_request=echo_server) as (session, raw):
        await raw.send(Response(12345, {}))
        await raw.send(ErrorResponse(None, ErrorObject(-32700, "x")))
        await raw.send(Request(1, "echo"))
        assert await receive(raw) == Response(1, {"echo": None})
        assert session.rpc.counters.unknown_responses == 2


MALFORMED_RESULTS = [b"null", b"[1]", b'"done"', b"42"]


@pytest.mark.parametrize("result", MALFORMED_RESULTS)
async def test_a_malformed_response_fails_its_request_at_once(result: bytes) -> None:
    """A peer answering our id with something that is no response (here a result
    that is no object) fails that request now with ``RemoteProtocolError``, not
    after the request timeout (pain point 1); other requests and the session go on."""
    transport = FakeTransport()
    async with Session(transport, request_timeout=60) as session:
        outcome: dict[str, object] = {}

        async def call(name: str) -> None:
            try:
                outcome[name] = await session.request(name)
            except Exception as exc:
                outcome[name] = exc

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "tools/call")
                first = await transport.sent()
                tg.start_soon(call, "ping")
                second = await transport.sent()
                assert type(first) is Request and type(second) is Request
                await transport.feed(b'{"jsonrpc":"2.0","id":%d,"result":%s}' % (first.id, result))
                await transport.feed(b'{"jsonrpc":"2.0","id":%d,"result":{}}' % second.id)
        failed = outcome["tools/call"]
        assert type(failed) is mcpwire.RemoteProtocolError
        assert str(failed) == 'malformed response to tools/call: "result" must be an object in MCP'
        assert outcome["ping"] == {}
        assert not session.closed
        assert session.invalid_received == 1


# -- end of connection -----------------------------------------------------------


async def test_transport_end_fails_all_pending_at_once() -> None:
    errors: list[BaseException] = []
    async with facing_raw() as (client, raw):

        async def one(i: int) -> None:
            try:
                await client.request("slow", {"i": i}, timeout=30)
            except ConnectionClosed as exc:
                errors.append(exc)

        with anyio.fail_after(WAIT):
            async with anyio.create_task_group() as tg:
                for i in range(5):
                    tg.start_soon(one, i)
                for _ in range(5):
                    assert type(await raw.receive()) is Request
                await raw.aclose()
        assert len(errors) == 5
        assert all(isinstance(e, ConnectionClosed) for e in errors)
        assert "peer closed" in str(errors[0])
        assert client.closed
        assert client.close_reason is not None
        with anyio.fail_after(WAIT):
            await client.wait_closed()
        start = time.monotonic()
        with pytest.raises(ConnectionClosed):
            await client.request("after")
        with pytest.raises(ConnectionClosed):
            await client.notify("after")
        assert time.monotonic() - start < 0.5
        assert client.rpc.pending_count == 0


async def test_close_is_idempotent_and_works_from_another_task() -> None:
    failures: list[BaseException] = []
    # The waiter and the closers run outside the session's own scope.
    async with anyio.create_task_group() as outer, facing_raw() as (client, raw):

        async def waiter() -> None:
            try:
                await client.request("slow", timeout=30)
            except ConnectionClosed as exc:
                failures.append(exc)

        outer.start_soon(waiter)
        assert type(await receive(raw)) is Request
        outer.start_soon(client.close)
        outer.start_soon(client.close)
        with anyio.fail_after(WAIT):
            await client.wait_closed()
    await client.close()  # still fine after the context exited
    assert len(failures) == 1
    assert "closed" in str(failures[0])
    assert client.closed
    with pytest.raises(ConnectionClosed):
        await client.request("after")


async def test_close_does_not_cancel_the_session_body() -> None:
    # close() ends the session's own tasks; it must not silently cancel the
    # code of the ``async with`` block that called it (or any other task).
    client_end, server_end = mcpwire.memory_pair()
    reached: list[str] = []
    async with Session(server_end, on_request=echo_server), Session(client_end) as client:
        await client.close()
        reached.append("after close")
        await anyio.sleep(0)
        reached.append("after a checkpoint")
    assert reached == ["after close", "after a checkpoint"]


async def test_close_from_a_handler() -> None:
    async def on_request(request: Request, ctx: RequestContext) -> JSONObject:
        await ctx.session.close()
        return {}

    ours, raw = mcpwire.memory_pair()
    try:
        async with Session(ours, on_request=on_request) as server:
            await raw.send(Request(1, "bye"))
            with anyio.fail_after(WAIT):
                await server.wait_closed()
        assert server.closed
        # No response was sent, and the peer sees the end of the connection.
        with pytest.raises(anyio.EndOfStream):
            await receive(raw)
    finally:
        await raw.aclose()


async def test_close_cancels_running_handlers() -> None:
    stopped = anyio.Event()
    started = anyio.Event()

    async def on_request(request: Request, ctx: RequestContext) -> JSONObject:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()
        raise AssertionError("unreachable")

    async with (
        anyio.create_task_group() as outer,
        facing_raw(on_request=on_request) as (
            server,
            raw,
        ),
    ):
        await raw.send(Request(1, "slow"))
        with anyio.fail_after(WAIT):
            await started.wait()
        outer.start_soon(server.close)
        with anyio.fail_after(WAIT):
            await server.wait_closed()
    assert stopped.is_set()


async def test_body_exception_propagates_without_exception_group() -> None:
    client_end, server_end = mcpwire.memory_pair()

    async def body_raises() -> None:
        async with Session(server_end, on_request=echo_server), Session(client_end) as client:
            assert await client.request("echo") == {"echo": None}
            raise ValueError("from the body")

    with pytest.raises(ValueError, match="from the body") as info:
        await body_raises()
    assert type(info.value) is ValueError


async def test_body_exception_with_busy_handlers() -> None:
    started = anyio.Event()

    async def on_request(request: Request, ctx: RequestContext) -> JSONObject:
        started.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    client_end, server_end = mcpwire.memory_pair()

    async def body_raises() -> None:
        async with Session(server_end, on_request=on_request), Session(client_end):
            # A request the client session does not track keeps a handler busy.
            await client_end.send(Request("raw-1", "slow"))
            with anyio.fail_after(WAIT):
                await started.wait()
            raise ValueError("boom")

    with pytest.raises(ValueError, match="boom") as info:
        await body_raises()
    assert type(info.value) is ValueError


async def test_session_can_be_entered_once() -> None:
    client_end, _server_end = mcpwire.memory_pair()
    session = Session(client_end)
    async with session:
        with pytest.raises(RuntimeError):
            await session.__aenter__()
    await _server_end.aclose()


@pytest.mark.parametrize(("timeout", "max_timeout"), [(0, 1), (-1, 1), (2, 1), (math.inf, 1)])
async def test_bad_timeouts_are_rejected(timeout: float, max_timeout: float) -> None:
    client_end, server_end = mcpwire.memory_pair()
    with pytest.raises(ValueError):
        Session(client_end, request_timeout=timeout, max_request_timeout=max_timeout)
    await client_end.aclose()
    await server_end.aclose()


# -- bad input -------------------------------------------------------------------

SENTINEL = b'{"jsonrpc":"2.0","id":"sentinel","method":"echo"}'

BAD_INPUT: list[tuple[str, bytes, ErrorResponse | None]] = [
    ("parse-error", b'{"jsonrpc":', ErrorResponse(None, ErrorObject(-32700, ""))),
    ("binary", b"\xff\x00\xfe", ErrorResponse(None, ErrorObject(-32700, ""))),
    ("empty-batch", b"[]", ErrorResponse(None, ErrorObject(-32600, ""))),
    ("string", b'"hello"', ErrorResponse(None, ErrorObject(-32600, ""))),
    (
        "id-null",
        b'{"jsonrpc":"2.0","id":null,"method":"echo"}',
        ErrorResponse(None, ErrorObject(-32600, "")),
    ),
    (
        "id-float",
        b'{"jsonrpc":"2.0","id":1.5,"method":"echo"}',
        ErrorResponse(None, ErrorObject(-32600, "")),
    ),
    (
        "bad-version",
        b'{"jsonrpc":"1.0","id":3,"method":"echo"}',
        ErrorResponse(3, ErrorObject(-32600, "")),
    ),
    (
        "params-array",
        b'{"jsonrpc":"2.0","id":"p","method":"echo","params":[1]}',
        ErrorResponse("p", ErrorObject(-32602, "")),
    ),
    (
        "unknown-method",
        b'{"jsonrpc":"2.0","id":4,"method":"nope"}',
        ErrorResponse(4, ErrorObject(-32601, "")),
    ),
    (
        "string-id-kept",
        b'{"jsonrpc":"2.0","id":"4","method":"nope"}',
        ErrorResponse("4", ErrorObject(-32601, "")),
    ),
    # Both a request and a response: never run ("echo" would answer), -32600 with the id.
    (
        "method-and-result",
        b'{"jsonrpc":"2.0","id":5,"method":"echo","result":{}}',
        ErrorResponse(5, ErrorObject(-32600, "")),
    ),
    (
        "method-and-error",
        b'{"jsonrpc":"2.0","id":"e","method":"echo","error":{"code":1,"message":"x"}}',
        ErrorResponse("e", ErrorObject(-32600, "")),
    ),
    ("method-and-result-no-id", b'{"jsonrpc":"2.0","method":"echo","result":{}}', None),
    ("method-and-result-null-id", b'{"jsonrpc":"2.0","id":null,"method":"echo","result":{}}', None),
    ("notification-unknown", b'{"jsonrpc":"2.0","method":"nope"}', None),
    ("notification-bad-params", b'{"jsonrpc":"2.0","method":"n","params":[1]}', None),
    ("notification-bad-version", b'{"jsonrpc":"1.0","method":"n"}', None),
    ("broken-response", b'{"jsonrpc":"2.0","id":1,"result":[]}', None),
    ("unknown-response", b'{"jsonrpc":"2.0","id":999,"result":{}}', None),
    ("error-response-no-id", b'{"jsonrpc":"2.0","error":{"code":1,"message":"x"}}', None),
    (
        "batch-refused",
        b'[{"jsonrpc":"2.0","id":1,"method":"echo"}]',
        ErrorResponse(None, ErrorObject(-32600, "")),
    ),
    ("batch-of-junk-refused", b"[1,2,3]", ErrorResponse(None, ErrorObject(-32600, ""))),
]


def same_error(got: object, expected: ErrorResponse) -> None:
    assert type(got) is ErrorResponse, got
    assert got.id == expected.id and type(got.id) is type(expected.id), got
    assert got.error.code == expected.error.code, got
    assert got.error.message


@pytest.mark.parametrize(
    ("frame", "expected"), [r[1:] for r in BAD_INPUT], ids=[r[0] for r in BAD_INPUT]
)
async def test_bad_input_is_answered_exactly(frame: bytes, expected: ErrorResponse | None) -> None:
    transport = FakeTransport()
    async with Session(transport, on_request=echo_server) as session:
        await transport.feed(frame)
        await transport.feed(SENTINEL)
        first = await transport.sent()
        if expected is not None:
            same_error(first, expected)
            first = await transport.sent()
        # Nothing else was sent before the sentinel's answer.
        assert first == Response("sentinel", {"echo": None})
        await session.close()


async def test_answers_to_no_request_of_ours_are_logged_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Ignored as JSON-RPC asks (a response is never answered), but visible: a
    # WARNING naming the id, or for an id-less error the code and message (the
    # peer could not read something we sent). An answer to a request given up on
    # is expected: DEBUG only.
    transport = FakeTransport()
    async with Session(transport, on_request=echo_server) as session:
        with pytest.raises(RequestTimeout):
            await session.request("slow", timeout=0.05)
        abandoned = await transport.sent()
        assert type(abandoned) is Request
        with caplog.at_level(logging.DEBUG, logger="mcpwire"):
            await transport.feed(b'{"jsonrpc":"2.0","id":"never-sent","result":{}}')
            await transport.feed(b'{"jsonrpc":"2.0","id":4242,"error":{"code":-1,"message":"m"}}')
            await transport.feed(
                b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: x"}}'
            )
            await transport.feed(b'{"jsonrpc":"2.0","error":{"code":-32600,"message":"no id"}}')
            await transport.feed(b'{"jsonrpc":"2.0","id":%d,"result":{}}' % abandoned.id)
            await transport.feed(SENTINEL)
            while (sent := await transport.sent()) != Response("sentinel", {"echo": None}):
                assert type(sent) is Notification  # the cancel notice, nothing else
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert all(r.name.startswith("mcpwire") for r in caplog.records)
        assert len(warnings) == 4, warnings
        assert "'never-sent'" in warnings[0] and "4242" in warnings[1]
        assert (
            "id null" in warnings[2] and "-32700" in warnings[2] and "Parse error: x" in warnings[2]
        )
        assert "-32600" in warnings[3] and "no id" in warnings[3]
        late = [r for r in caplog.records if r.levelno == logging.DEBUG and "given up" in r.msg]
        assert len(late) == 1
        counters = session.rpc.counters
        assert (counters.unknown_responses, counters.null_id_errors) == (4, 2)
        assert counters.late_responses == 1


async def test_a_flood_of_stray_answers_is_logged_at_warning_only_so_often(
    caplog: pytest.LogCaptureFixture,
) -> None:
    transport = FakeTransport()
    async with Session(transport, on_request=echo_server) as session:
        with caplog.at_level(logging.DEBUG, logger="mcpwire"):
            for n in range(MAX_STRAY_WARNINGS + 30):
                await transport.feed(b'{"jsonrpc":"2.0","id":%d,"result":{}}' % (10_000 + n))
            await transport.feed(SENTINEL)
            assert await transport.sent() == Response("sentinel", {"echo": None})
        levels = [r.levelno for r in caplog.records if "not one in flight" in r.getMessage()]
        assert levels.count(logging.WARNING) == MAX_STRAY_WARNINGS
        assert levels.count(logging.DEBUG) == 30
        assert session.rpc.counters.unknown_responses == MAX_STRAY_WARNINGS + 30


async def test_bad_input_sequence_keeps_serving() -> None:
    transport = FakeTransport()
    async with Session(transport, on_request=echo_server) as session:
        for _, frame, expected in BAD_INPUT:
            await transport.feed(frame)
            if expected is not None:
                same_error(await transport.sent(), expected)
        await transport.feed(SENTINEL)
        assert await transport.sent() == Response("sentinel", {"echo": None})
        assert session.invalid_received >= 10


async def test_batches_served_when_allowed() -> None:
    transport = FakeTransport()
    async with Session(transport, on_request=echo_server) as session:
        session.allow_batches = True
        await transport.feed(
            b'[{"jsonrpc":"2.0","id":1,"method":"echo","params":{"a":1}},'
            b'{"jsonrpc":"2.0","method":"notifications/x"},'
            b'{"jsonrpc":"2.0","id":"two","method":"whoami"},'
            b'{"jsonrpc":"2.0","id":3,"method":"nope"},'
            b'{"jsonrpc":"2.0","id":null,"method":"echo"},'
            b'{"jsonrpc":"2.0","method":"n","params":[1]},'
            b"5]"
        )
        reply = await transport.sent()
        assert isinstance(reply, list)
        by_id: dict[Any, Message] = {}
        nulls: list[Message] = []
        for item in reply:
            assert isinstance(item, (Response, ErrorResponse))
            if item.id is None:
                nulls.append(item)
            else:
                by_id[item.id] = item
        assert by_id[1] == Response(1, {"echo": {"a": 1}})
        assert by_id["two"] == Response("two", {"id": "two"})
        assert type(by_id[3]) is ErrorResponse and by_id[3].error.code == -32601
        assert len(by_id) == 3
        # id null request and the bare 5: two -32600 errors with id null.
        assert len(nulls) == 2
        assert all(type(n) is ErrorResponse and n.error.code == -32600 for n in nulls)


async def test_a_batch_runs_within_the_sessions_bounds_on_handlers() -> None:
    """A batch of thousands of requests whose handlers wait runs at most
    ``MAX_HANDLERS`` of them at once, parks ``MAX_PARKED`` more and stops the
    reader there, as single requests do; once they finish, one array answers
    every request. (Each request in a batch once started a task of its own at
    once, and batch after batch grew memory without bound.)"""
    total = MAX_HANDLERS + MAX_PARKED + 300
    release = anyio.Event()
    running = peak = 0

    async def slow(request: Request, ctx: RequestContext) -> dict[str, Any]:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        try:
            await release.wait()
        finally:
            running -= 1
        return {"n": request.id}

    transport = FakeTransport()
    async with Session(transport, on_request=slow) as session:
        session.allow_batches = True
        items = (b'{"jsonrpc":"2.0","id":%d,"method":"slow"}' % i for i in range(total))
        await transport.feed(b"[" + b",".join(items) + b"]")
        with anyio.fail_after(WAIT):
            while len(session.inflow.parked) < MAX_PARKED:
                await anyio.sleep(0.01)
        await anyio.wait_all_tasks_blocked()
        assert running == MAX_HANDLERS
        assert len(session.inflow.parked) == MAX_PARKED  # the reader waits for room
        release.set()
        with anyio.fail_after(WAIT):
            reply = await transport.sent()
        assert isinstance(reply, list)
        assert sorted(item.id for item in reply) == list(range(total))  # type: ignore[union-attr,type-var]
        assert all(type(item) is Response for item in reply)
        assert peak == MAX_HANDLERS
        assert session.inflow.handlers == 0


async def test_notification_only_batch_gets_no_reply() -> None:
    seen: list[str] = []

    async def on_notification(note: Notification) -> None:
        seen.append(note.method)

    transport = FakeTransport()
    async with Session(
        transport, on_request=echo_server, on_notification=on_notification
    ) as session:
        session.allow_batches = True
        await transport.feed(b'[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]')
        await transport.feed(SENTINEL)
        assert await transport.sent() == Response("sentinel", {"echo": None})
    assert seen == ["a", "b"]


async def test_initialize_in_a_batch_is_refused() -> None:
    transport = FakeTransport()
    async with Session(transport, on_request=echo_server) as session:
        session.allow_batches = True
        await transport.feed(
            b'[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}},'
            b'{"jsonrpc":"2.0","id":2,"method":"echo"}]'
        )
        reply = await transport.sent()
        assert isinstance(reply, list)
        by_id = {item.id: item for item in reply}  # type: ignore[union-attr]
        assert set(by_id) == {1, 2}
        assert type(by_id[1]) is ErrorResponse and by_id[1].error.code == -32600
        assert by_id[2] == Response(2, {"echo": None})


async def test_batch_refused_by_default_over_memory_pair() -> None:
    async with facing_raw(on_request=echo_server) as (_server, raw):
        await raw.send([Request(1, "echo"), Request(2, "echo")])
        reply = await receive(raw)
        assert type(reply) is ErrorResponse
        assert reply.id is None and reply.error.code == -32600


async def test_an_answer_inside_a_refused_batch_fails_its_request_at_once(wire: bool) -> None:
    """Batches are refused outside 2025-03-26, answers inside them too: the request
    they answer fails at once with the reason, not at its timeout."""
    async with facing_raw(wire=wire) as (session, raw):
        outcome: list[BaseException | JSONObject] = []

        async def call() -> None:
            try:
                outcome.append(await session.request("echo", timeout=30))
            except Exception as exc:
                outcome.append(exc)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            request = await receive(raw)
            assert type(request) is Request
            with anyio.fail_after(WAIT):
                await raw.send([Response(request.id, {"echo": None}), Notification("n")])
                refusal = await receive(raw)
        assert type(refusal) is ErrorResponse
        assert refusal.id is None and refusal.error.code == -32600
        assert len(outcome) == 1 and isinstance(outcome[0], mcpwire.RemoteProtocolError)
        assert "answered echo inside a JSON-RPC batch" in str(outcome[0])
        assert not session.closed
        # An answer to an id not in flight changes nothing; the session serves on.
        await raw.send([Response(999, {})])
        assert (await receive(raw)).error.code == -32600  # type: ignore[union-attr]


async def test_batch_reply_over_the_wire() -> None:
    async with facing_raw(wire=True, on_request=echo_server) as (server, raw):
        server.allow_batches = True
        await raw.send([Request(1, "echo"), Notification("n"), Request(2, "echo")])
        reply = await receive(raw)
        assert type(reply) is Batch
        assert sorted(reply.items, key=lambda r: r.id) == [  # type: ignore[union-attr,return-value,arg-type]
            Response(1, {"echo": None}),
            Response(2, {"echo": None}),
        ]


async def unencodable_server(request: Request, ctx: RequestContext) -> JSONObject:
    if request.method == "set":
        return {"members": {1, 2}}  # JSON has no sets: the codec refuses the reply
    return await echo_server(request, ctx)


async def test_a_reply_the_codec_refuses_is_answered_with_internal_error() -> None:
    """Serialising happens before any byte is written, so the request still gets
    its one answer (-32603) and the connection serves on, on both backends."""
    async with connected(wire=True, on_request=unencodable_server) as (client, server):
        with pytest.raises(JSONRPCError) as info:
            await client.request("set")
        assert info.value.code == -32603
        assert "could not be encoded (TypeError)" in info.value.message
        assert await client.request("echo", {"still": "serving"}) == {"echo": {"still": "serving"}}
        assert not server.closed


async def test_a_batch_reply_the_codec_refuses_keeps_its_other_replies() -> None:
    async with facing_raw(wire=True, on_request=unencodable_server) as (server, raw):
        server.allow_batches = True
        await raw.send([Request(1, "echo"), Request(2, "set"), Request(3, "whoami")])
        reply = await receive(raw)
        assert type(reply) is Batch
        by_id = {item.id: item for item in reply.items}  # type: ignore[union-attr]
        assert by_id[1] == Response(1, {"echo": None})
        assert by_id[3] == Response(3, {"id": 3})
        failed = by_id[2]
        assert type(failed) is ErrorResponse and failed.error.code == -32603
        await raw.send(Request(4, "echo"))
        assert await receive(raw) == Response(4, {"echo": None})


class FailingClose(FakeTransport):
    async def aclose(self) -> None:
        await super().aclose()
        raise RuntimeError("the transport could not close")


async def test_a_transport_that_fails_to_close_leaves_the_scopes_sound() -> None:
    """The session's task group is exited even when ``transport.aclose()`` raises:
    the caller sees that error, not anyio's complaint about a corrupted scope stack
    (pain point 8), and cancel scopes around the session still work afterwards."""
    with anyio.CancelScope(), pytest.raises(RuntimeError, match="could not close"):
        async with Session(FailingClose(), on_request=echo_server):
            pass
    with anyio.move_on_after(0.01) as scope:
        await anyio.sleep(1)
    assert scope.cancelled_caught


async def test_deadline_held_time_is_not_the_requests(anyio_backend: str) -> None:
    """What a transport spends inside ``deadline_held()`` while sending (an OAuth
    flow waiting for a person) counts against neither the request's deadline nor
    its hard cap; time outside it does, and outside a send it does nothing."""
    from mcpwire._pending import deadline_held

    with deadline_held():  # no request being sent: nothing to hold
        pass

    class SlowToSend(mcpwire.MemoryTransport):
        held = True

        async def send(self, message: Any, *, related: Any = None) -> None:
            if isinstance(message, Request):
                if self.held:
                    with deadline_held():
                        await anyio.sleep(0.4)
                else:
                    await anyio.sleep(0.4)
            await super().send(message, related=related)

    client_end, server_end = mcpwire.memory_pair()
    client_end.__class__ = SlowToSend
    assert isinstance(client_end, SlowToSend)
    async with (
        Session(server_end, on_request=echo_server),
        Session(client_end, request_timeout=0.2, max_request_timeout=0.3) as client,
    ):
        assert await client.request("whoami") == {"id": 1}
        client_end.held = False  # the same time, not held: the request times out
        with pytest.raises(RequestTimeout):
            await client.request("whoami")
