"""Deprecated HTTP+SSE (2024-11-05): one failed POST fails only what it carried.

Each client message is its own ``POST`` to the endpoint, and answers come on the
event stream, which lives on. So a POST answered with an HTTP error status, or
whose connection ends before any response head, fails the request it carried
with a ``TransportError`` naming the status or the cause; the other requests in
flight, and the later ones, go on over the same session. A notification or a
response whose POST fails has nothing to fail: it is logged at WARNING. The
transport ends with the event stream alone.

The peer is a scripted HTTP/1.1 server (``http_client/rawserver.py``) that keeps
its event stream open and fails exactly one POST; both anyio backends.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import pytest
from http_client.rawserver import Reply, Seen, event, raw_server, result

from mcpwire import Client, TransportError

pytestmark = pytest.mark.anyio

INIT_RESULT = {
    "protocolVersion": "2024-11-05",
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "raw-sse", "version": "0"},
}

#: The failing POST's answer: status (None: the connection ends with no response).
FAILURES: dict[str, Callable[[], Reply]] = {
    "500": lambda: Reply.text(500, "Internal Server Error"),
    "400": lambda: Reply.text(400, "no such session"),
    "503-html": lambda: Reply(
        503, [("Content-Type", "text/html"), ("Content-Length", "11")], [b"<b>busy</b>"]
    ),
    "cut": lambda: Reply(drop=True),
}
STATUSES = {"500": 500, "400": 400, "503-html": 503, "cut": None}


def done(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}]}


@dataclass
class SSEScript:
    """An HTTP+SSE server: ``GET`` opens the event stream (the endpoint first);
    every request is answered on it, ``tools/call`` with its ``name`` as the text.
    A POST for which ``fails(seen)`` is true gets ``failure``'s reply (one message
    only: a notification or response cut off on a kept-alive connection is sent
    once more, and fails again); a call named ``slow`` is answered only once
    ``release`` is set."""

    fails: Callable[[Seen], bool]
    failure: Callable[[], Reply]
    release: anyio.Event = field(default_factory=anyio.Event)
    streams: list[anyio.abc.ObjectSendStream[bytes]] = field(default_factory=list)
    failed: list[Seen] = field(default_factory=list)
    gets: int = 0

    async def answer_later(self, message: dict[str, Any]) -> None:
        await self.release.wait()
        await self.streams[-1].send(event(result(message["id"], done("slow"))).encode())

    async def handler(self, seen: Seen, tg: anyio.abc.TaskGroup) -> Reply:
        if seen.method == "GET":
            self.gets += 1
            send, receive = anyio.create_memory_object_stream[bytes](16)
            self.streams.append(send)
            return Reply.sse("event: endpoint\ndata: /messages?session_id=s1\n\n", feed=receive)
        message = seen.json
        if self.fails(seen):
            self.failed.append(seen)
            return self.failure()
        method = message.get("method")
        if method == "initialize":
            answer = result(message["id"], INIT_RESULT)
        elif method == "tools/call" and message["params"]["name"] == "slow":
            tg.start_soon(self.answer_later, message)
            return Reply.text(202, "Accepted")
        elif method == "tools/call":
            answer = result(message["id"], done(message["params"]["name"]))
        elif method == "tools/list":
            answer = result(message["id"], {"tools": []})
        else:  # notifications, and the client's answers to our requests
            return Reply.text(202, "Accepted")
        await self.streams[-1].send(event(answer).encode())
        return Reply.text(202, "Accepted")


@asynccontextmanager
async def sse_client(script: SSEScript) -> AsyncIterator[Client]:
    async with anyio.create_task_group() as tg:

        async def handler(seen: Seen) -> Reply:
            return await script.handler(seen, tg)

        try:
            async with raw_server(handler) as server:
                url = server.url.replace("/mcp", "/sse")
                async with Client.http(
                    url, transport="sse", mode="legacy", request_timeout=30, validate_output=False
                ) as client:
                    yield client
        finally:
            script.release.set()
            for send in script.streams:
                send.close()
            tg.cancel_scope.cancel()


def is_call(name: str) -> Callable[[Seen], bool]:
    def match(seen: Seen) -> bool:
        message = seen.json
        return message.get("method") == "tools/call" and message["params"]["name"] == name

    return match


@pytest.mark.parametrize("failure", list(FAILURES))
async def test_a_failed_post_fails_only_its_request(failure: str) -> None:
    script = SSEScript(is_call("bad"), FAILURES[failure])
    async with sse_client(script) as c:
        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                slow: list[str] = []

                async def in_flight() -> None:
                    slow.append((await c.call_tool("slow", {})).text)

                tg.start_soon(in_flight)
                with pytest.raises(TransportError) as info:
                    await c.call_tool("bad", {})
                script.release.set()  # the request in flight is answered after the failure
            assert slow == ["slow"]
            assert (await c.call_tool("after", {})).text == "after"
            assert await c.list_tools() == []
    error = info.value
    assert error.status == STATUSES[failure]
    assert error.message.startswith("tools/call: ")
    if error.status is None:
        assert "ended before any response" in error.message
        assert "the server may have received it" in error.message  # tools/call: not resent
        assert error.code == -32603
    else:
        assert f"HTTP {error.status}" in error.message
        assert error.code == (-32600 if error.status < 500 else -32603)
        assert error.data["httpStatus"] == error.status  # type: ignore[index]
    assert script.gets == 1  # one session throughout


@pytest.mark.parametrize("failure", list(FAILURES))
async def test_a_failed_notification_post_is_logged_and_the_session_goes_on(
    failure: str, caplog: pytest.LogCaptureFixture
) -> None:
    def roots_changed(seen: Seen) -> bool:
        return bool(seen.rpc_method == "notifications/roots/list_changed")

    script = SSEScript(roots_changed, FAILURES[failure])
    caplog.set_level(logging.WARNING, logger="mcpwire")
    async with sse_client(script) as c:
        with anyio.fail_after(10):
            await c.session.notify("notifications/roots/list_changed")
            assert (await c.call_tool("after", {})).text == "after"
    assert script.failed, "the notification was POSTed"
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert any("not delivered" in r.getMessage() for r in warnings), warnings
    cause = "ended before any response" if failure == "cut" else f"HTTP {STATUSES[failure]}"
    assert any(cause in r.getMessage() for r in warnings), warnings
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert script.gets == 1


async def test_a_failed_post_of_our_answer_is_logged_and_the_session_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The client's answer to a server ``ping`` is a POST too: one that is cut off
    fails nothing, and what the server sends next still gets through."""

    def our_answer(seen: Seen) -> bool:
        message = seen.json
        return isinstance(message, dict) and "method" not in message and message.get("id") == "p1"

    script = SSEScript(our_answer, FAILURES["cut"])
    caplog.set_level(logging.WARNING, logger="mcpwire")
    async with sse_client(script) as c:
        with anyio.fail_after(10):
            ping = {"jsonrpc": "2.0", "id": "p1", "method": "ping"}
            await script.streams[-1].send(event(ping).encode())
            while not script.failed:
                await anyio.sleep(0.01)
            assert (await c.call_tool("after", {})).text == "after"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("not delivered" in w and "ended before any response" in w for w in warnings)
    assert script.gets == 1
