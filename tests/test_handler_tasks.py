"""Handler tasks (``mcpwire._handler_tasks``): requests whose handlers may wait.

On asyncio they run in plain asyncio tasks, started where the stdio reader
parses the request; on trio, in the session's task group. Either way the session
owns them: cancels reach them, the session waits for them before it ends, an
error escaping one ends the session with it, and each keeps its own context.
"""

from __future__ import annotations

import contextvars
from typing import Any

import anyio
import pytest
from pipe_peer import WAIT, serving

from mcpwire import Server
from mcpwire._handler_tasks import beside
from mcpwire._session import Session, unwrap_group


def call(rid: int, name: str, **arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def ping(rid: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": "ping"}


def text(answer: dict[str, Any]) -> str:
    content: str = answer["result"]["content"][0]["text"]
    return content


@pytest.mark.anyio
async def test_an_async_tool_is_started_where_its_request_is_parsed_on_asyncio(
    anyio_backend: str, dispatched: list[str]
) -> None:
    """On asyncio no request of an ``async def`` tool passes through the session's
    reader task: the stdio reader's readiness callback starts its handler task. On
    trio the reader dispatches each one."""
    server = Server("tasks", "1.0.0")

    @server.tool()
    async def echo(message: str) -> str:
        """Echo the message back, after a checkpoint."""
        await anyio.sleep(0)
        return message

    async with serving(server) as peer:
        await peer.send(ping(0))  # the handshake is over once this is answered
        assert (await peer.read())["id"] == 0
        dispatched.clear()
        for rid in range(1, 4):
            await peer.send(call(rid, "echo", message=f"m{rid}"))
            answer = await peer.read()
            assert answer["id"] == rid and text(answer) == f"m{rid}"
    requests = [kind for kind in dispatched if kind == "Request"]
    assert requests == ([] if anyio_backend == "asyncio" else ["Request"] * 3)


@pytest.mark.anyio
async def test_a_cancelled_async_handler_stops_and_is_not_answered() -> None:
    started, stopped = anyio.Event(), anyio.Event()
    server = Server("tasks", "1.0.0")

    @server.tool()
    async def wait() -> str:
        """Wait until cancelled."""
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()
        return "never"  # pragma: no cover - unreachable

    async with serving(server) as peer:
        await peer.send(call(1, "wait"))
        with anyio.fail_after(WAIT):
            await started.wait()
        cancel = {"requestId": 1, "reason": "no longer needed"}
        await peer.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel})
        with anyio.fail_after(WAIT):
            await stopped.wait()
        await peer.send(ping(2))
        assert await peer.read() == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert peer.after_close == []  # and no answer to the cancelled request came later


@pytest.mark.anyio
async def test_the_session_waits_for_its_running_handlers_before_it_ends() -> None:
    """The peer goes away while a handler runs: the handler is cancelled, and
    ``serve`` returns only once its cleanup (which takes a while) has finished."""
    started = anyio.Event()
    cleaned: list[str] = []
    server = Server("tasks", "1.0.0")

    @server.tool()
    async def hold() -> str:
        """Hold until cancelled, then clean up slowly."""
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            with anyio.CancelScope(shield=True):
                await anyio.sleep(0.05)
            cleaned.append("done")
        return "never"  # pragma: no cover - unreachable

    async with serving(server) as peer:  # its exit waits for ``serve`` to return
        await peer.send(call(1, "hold"))
        with anyio.fail_after(WAIT):
            await started.wait()
    assert cleaned == ["done"]


class Fault(RuntimeError):
    """A fault of the session's own, raised where a handler task serves a request."""


@pytest.mark.anyio
async def test_an_error_escaping_a_handler_task_ends_the_session_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A handler's own errors become error replies; an error of the session's own
    that escapes its task ends the session and comes out of ``serve``, on asyncio
    (a plain task) as on trio (a task of the session's group)."""
    real = Session._serve

    async def faulty(self: Session, request: Any, collect: Any, *, scoped: bool = True) -> None:
        if request.method == "tools/call":
            raise Fault("a fault in serving")
        await real(self, request, collect, scoped=scoped)

    monkeypatch.setattr(Session, "_serve", faulty)
    server = Server("tasks", "1.0.0")

    @server.tool()
    async def echo(message: str) -> str:
        """Echo the message back."""
        return message

    caught: list[BaseException] = []
    with anyio.fail_after(WAIT):
        try:
            async with serving(server) as peer:
                await peer.send(call(1, "echo", message="m"))
                await anyio.sleep_forever()  # ended by the fault
        except BaseException as exc:
            caught.append(exc)
    assert [type(unwrap_group(exc)) for exc in caught] == [Fault]


@pytest.mark.anyio
async def test_a_context_variable_a_handler_sets_stays_its_own() -> None:
    var: contextvars.ContextVar[str] = contextvars.ContextVar("var", default="unset")
    server = Server("tasks", "1.0.0")

    @server.tool()
    async def mark(value: str) -> str:
        """Set the variable; answer what it was before."""
        before = var.get()
        var.set(value)
        await anyio.sleep(0)
        return before

    async with serving(server) as peer:
        for rid, value in enumerate(("a", "b", "c"), 1):
            await peer.send(call(rid, "mark", value=value))
            answer = await peer.read()
            assert answer["id"] == rid and text(answer) == "unset"
    assert var.get() == "unset"


# -- beside: a task beside the one awaiting ---------------------------------------------


@pytest.mark.anyio
async def test_beside_runs_the_side_task_until_main_ends_then_stops_and_waits_for_it() -> None:
    order: list[str] = []
    stop_side = anyio.Event()

    async def side() -> None:
        order.append("side started")
        await stop_side.wait()
        await anyio.sleep(0.02)  # its end takes a while: beside waits for it
        order.append("side ended")

    async def main() -> str:
        await anyio.sleep(0.01)
        order.append("main ended")
        return "result"

    def stop() -> None:
        order.append("stop")
        stop_side.set()

    assert await beside(side, main, stop) == "result"
    assert order == ["side started", "main ended", "stop", "side ended"]


@pytest.mark.anyio
async def test_beside_raises_what_escaped_the_side_task_once_main_has_ended() -> None:
    async def side() -> None:
        raise Fault("in the side task")

    async def main() -> str:
        await anyio.sleep(0.01)
        return "result"

    with pytest.raises(BaseException) as caught:
        await beside(side, main, lambda: None)
    assert type(unwrap_group(caught.value)) is Fault


@pytest.mark.anyio
async def test_beside_stops_and_waits_for_the_side_task_when_main_fails_or_is_cancelled() -> None:
    ended: list[str] = []
    scope = anyio.CancelScope()

    async def side() -> None:
        try:
            with scope:
                await anyio.sleep_forever()
            await anyio.sleep(0.01)
        finally:  # stopped, or (a task group's way, on trio) cancelled outright
            ended.append("side")

    async def failing() -> None:
        await anyio.sleep(0)
        raise Fault("in main")

    with pytest.raises(BaseException) as caught:
        await beside(side, failing, scope.cancel)
    assert type(unwrap_group(caught.value)) is Fault and ended == ["side"]

    scope = anyio.CancelScope()
    with anyio.move_on_after(0.05) as outer:
        await beside(side, anyio.sleep_forever, scope.cancel)
    assert outer.cancelled_caught and ended == ["side", "side"]
