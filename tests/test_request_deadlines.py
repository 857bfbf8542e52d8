"""Deadlines of requests whose send is awaited: in-process and over HTTP.

A transport that cannot write a request without waiting (``Client(server)``,
streamable HTTP) runs the send and the wait in a cancel scope. On trio the
scope keeps the deadline; on asyncio the session's one loop timer
(``_pending.Sweep``) keeps every request's deadline and cancels the scope when
it passes, so a request costs no timer of its own. The behaviour must be the
same either way: each request expires at its own deadline, not before, and an
answered one leaves nothing behind. The peers are our own server, in process
or over a real loopback socket.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from http_raw import running
from inproc import echo_server, two_deadlines

from mcpwire import Client, Context, RequestTimeout, Server

pytestmark = pytest.mark.anyio

WAIT = 20.0
HOW = ("in-process", "http")


def _slow_server() -> Server:
    server = Server("slow", "1.0.0")

    @server.tool()
    async def nap(seconds: float, tag: str) -> str:
        """Sleep, then answer the tag."""
        await anyio.sleep(seconds)
        return tag

    return server


@asynccontextmanager
async def _client(how: str, server: Server) -> AsyncIterator[Client]:
    if how == "in-process":
        async with Client(server) as client:
            yield client
        return
    async with running(server) as http, Client.http(f"http://127.0.0.1:{http.port}/mcp") as client:
        yield client


@pytest.mark.parametrize("how", HOW)
async def test_requests_with_different_timeouts_each_expire_at_their_own_deadline(
    how: str,
) -> None:
    # One timer serves every waiting request on asyncio: a shorter deadline set
    # after a longer one must move it earlier, and the longer one must still
    # expire, on time and not before, once the shorter one has.
    async with _client(how, _slow_server()) as client:

        async def expire(tag: str, timeout: float) -> None:
            with pytest.raises(RequestTimeout):
                await client.call_tool("nap", {"seconds": 30, "tag": tag}, timeout=timeout)

        expired = await two_deadlines(expire)
        with anyio.fail_after(WAIT):
            answer = await client.call_tool("nap", {"seconds": 0, "tag": "after"}, timeout=5)
        assert answer.structured == {"result": "after"}
        assert client.session._pending == {}
    assert 0.2 <= expired["short"] < 0.9
    assert expired["long"] >= 1.0


@pytest.mark.parametrize("how", HOW)
async def test_progress_keeps_a_request_alive_past_its_timeout(how: str) -> None:
    server = Server("steps", "1.0.0")

    @server.tool()
    async def steps(ctx: Context, count: int, every: float) -> int:
        """Report progress ``count`` times, ``every`` seconds apart."""
        for i in range(count):
            await anyio.sleep(every)
            await ctx.report_progress(i + 1, count)
        return count

    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with _client(how, server) as client:
        with anyio.fail_after(WAIT):
            began = anyio.current_time()
            result = await client.call_tool(
                "steps", {"count": 6, "every": 0.1}, timeout=0.3, on_progress=on_progress
            )
            took = anyio.current_time() - began
    assert result.structured == {"result": 6}
    assert seen == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert took >= 0.6  # twice the timeout: only progress kept it alive


def _counting_scope_timers(
    loop: Any,
) -> tuple[list[float], Callable[..., Any]]:
    """Replace ``loop.call_at`` with one that counts the timers anyio's cancel
    scopes set (their deadlines), and return the count and the original."""
    timers: list[float] = []
    call_at = loop.call_at

    def counting_call_at(when: float, callback: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(getattr(callback, "__self__", None), anyio.CancelScope):
            timers.append(when)
        return call_at(when, callback, *args, **kwargs)

    loop.call_at = counting_call_at
    return timers, call_at


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
@pytest.mark.parametrize("how", HOW)
async def test_answered_requests_cost_no_deadline_timer_each(how: str) -> None:
    """On asyncio the session's one timer keeps the deadlines: a run of calls with
    the same timeout sets no cancel scope deadline timer per call. (The tool is
    a plain function, served where the request is read: the server, in this
    process too, sets no timer of its own for it.)"""
    import asyncio

    loop = asyncio.get_running_loop()
    async with _client(how, echo_server()) as client:
        with anyio.fail_after(WAIT):
            await client.call_tool("echo", {"message": "first"}, timeout=30)
            timers, _ = _counting_scope_timers(loop)
            try:
                for i in range(50):
                    text = f"call {i}"
                    result = await client.call_tool("echo", {"message": text}, timeout=30)
                    assert result.structured == {"result": text}
            finally:
                del loop.call_at
    assert timers == []


async def test_a_deadline_passed_during_a_held_send_moves_on_with_it() -> None:
    """``deadline_held`` (an authorization flow inside a send) stops the request's
    deadline and moves it on by the time held, on both backends."""
    from mcpwire import _pending

    server = _slow_server()
    held = 0.0

    async with Client(server) as client:
        send = client.session.transport.send

        async def holding_send(message: Any, **kwargs: Any) -> None:
            nonlocal held
            with _pending.deadline_held():
                began = anyio.current_time()
                await anyio.sleep(0.5)
                held = anyio.current_time() - began
            await send(message, **kwargs)

        client.session.transport.send = holding_send  # type: ignore[method-assign]
        with anyio.fail_after(WAIT):
            result = await client.call_tool("nap", {"seconds": 0.1, "tag": "held"}, timeout=0.3)
    assert result.structured == {"result": "held"}
    assert held >= 0.5
