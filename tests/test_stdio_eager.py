"""Requests served where they are parsed (``mcpwire/_eager.py``), over real pipes.

On asyncio the stdio transport hands each parsed request to the session's fast
path from the loop's readiness callback, and a request whose handler never waits
is served on the spot. On trio the transport parses in the reader task, which
serves every request itself. Every test here runs a ``Server`` in-process on a
pair of ``os.pipe()``s, on both backends, and checks what the peer sees: the same
answers, in the same order, whichever way a request went. One test checks that the
fast path is really taken on asyncio (and never on trio), so the others test it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, ClassVar

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inproc import echo_server
from pipe_peer import WAIT, Peer, line, serving

import mcpwire._session
from mcpwire import Server


def call(rid: int, name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": rid,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


async def settled(peer: Peer) -> None:
    """One ping answered: the reader has dispatched everything sent before."""
    await peer.send({"jsonrpc": "2.0", "id": "settle", "method": "ping"})
    assert (await peer.read())["id"] == "settle"


@pytest.mark.anyio
async def test_the_fast_path_serves_quick_requests_on_asyncio_only(
    anyio_backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken: list[bool] = []
    real = mcpwire._session.serve_eagerly

    def spy(session: Any, request: Any) -> bool:
        taken.append(real(session, request))
        return taken[-1]

    monkeypatch.setattr(mcpwire._session, "serve_eagerly", spy)
    async with serving(echo_server("eager")) as peer:
        await settled(peer)
        taken.clear()
        for rid in range(1, 4):
            await peer.send(call(rid, "echo", message=f"m{rid}"))
            answer = await peer.read()
            assert answer["id"] == rid
            assert answer["result"]["structuredContent"] == {"result": f"m{rid}"}
        await peer.send({"jsonrpc": "2.0", "id": 9, "method": "ping"})
        assert await peer.read() == {"jsonrpc": "2.0", "id": 9, "result": {}}
    # On trio the fast path is offered requests too, from inside the reader task,
    # and declines them all: the reader serves them itself.
    assert taken == ([True] * 4 if anyio_backend == "asyncio" else [False] * 4)


@pytest.mark.anyio
async def test_a_plain_tool_that_waits_after_all_is_finished_in_a_task(anyio_backend: str) -> None:
    """A plain function returning an awaitable is approved, then found to wait.

    On asyncio its coroutine, stepped once by hand in the callback, is driven on by
    a task, so a ping sent meanwhile is answered first. On trio the reader serves it
    and waits with it (the cost of a wrong yes from ``is_quick``, documented there),
    so the ping is answered after. Either way both answers are right."""
    server = Server("eager", "1.0.0")
    release = anyio.Event()

    async def finish() -> str:
        await release.wait()
        return "done"

    @server.tool()
    def later() -> Awaitable[str]:
        """Answer once released."""
        return finish()

    async with serving(server) as peer:
        await settled(peer)
        await peer.send(call(1, "later"))
        await anyio.sleep(0.02)
        await peer.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        await anyio.sleep(0.05)
        release.set()
        answers = [await peer.read(), await peer.read()]
    later_answer = {"type": "text", "text": "done"}
    first, second = answers if anyio_backend == "asyncio" else answers[::-1]
    assert first == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert second["id"] == 1
    assert second["result"]["content"] == [later_answer]


def _in_task() -> bool:
    """Whether the caller runs in a task (on trio, always; on asyncio, not in a callback)."""
    try:
        return asyncio.current_task() is not None
    except RuntimeError:  # no asyncio loop: trio
        return True


class ScopedHook(Server):
    """A request hook that enters a cancel scope, which needs a task."""

    ran: ClassVar[list[tuple[str, bool]]] = []

    async def _on_request(self, conn: Any, request: Any, rctx: Any) -> Any:
        self.ran.append((request.method, _in_task()))
        with anyio.move_on_after(WAIT):
            await anyio.sleep(0)
        return await super()._on_request(conn, request, rctx)


class DeclaredHook(Server):
    """A hook that waits but for ``ping``, and declares so; quick calls are not
    declared (it does not set ``_inline_calls``)."""

    _never_wait = frozenset({"ping"})
    ran: ClassVar[list[tuple[str, bool]]] = []

    async def _on_request(self, conn: Any, request: Any, rctx: Any) -> Any:
        self.ran.append((request.method, _in_task()))
        if request.method != "ping":
            with anyio.move_on_after(WAIT):
                await anyio.sleep(0)
        return await super()._on_request(conn, request, rctx)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", [ScopedHook, DeclaredHook])
async def test_a_subclass_request_hook_is_served_in_tasks_unless_it_declares_otherwise(
    anyio_backend: str, kind: type[ScopedHook] | type[DeclaredHook]
) -> None:
    """A subclass's own ``_on_request`` may wait and enter cancel scopes: its requests
    are served in tasks (before, on asyncio, each failed with -32603, the scope
    entered outside any task), but for the methods it declares in ``_never_wait``,
    which on asyncio are served in the stdio reader's readiness callback."""
    server = kind("hooked", "1.0.0")

    @server.tool()
    def echo(message: str) -> str:
        """Echo the message back."""
        return message

    async with serving(server) as peer:
        await settled(peer)
        kind.ran.clear()
        await peer.send(call(1, "echo", message="m"))
        answer = await peer.read()
        assert answer["id"] == 1
        assert answer["result"]["structuredContent"] == {"result": "m"}
        await peer.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        assert await peer.read() == {"jsonrpc": "2.0", "id": 2, "result": {}}
    eager = anyio_backend == "asyncio"
    expected = [("tools/call", True), ("ping", not (eager and kind is DeclaredHook))]
    assert kind.ran == expected
    assert Server._never_wait >= {"ping", "tools/list"}  # the base class keeps its own
    assert Server._inline_calls


def test_a_subclass_hook_may_declare_quick_calls_inline() -> None:
    class Opted(ScopedHook):
        _inline_calls = True

    assert Opted._inline_calls and Opted._never_wait == frozenset()
    assert not ScopedHook._inline_calls


@pytest.mark.anyio
async def test_a_request_waits_for_the_message_the_reader_is_dispatching() -> None:
    """Order is kept: a request arriving while the reader is still inside an earlier
    notification's handler is served after it, exactly as without the fast path."""
    server = Server("eager", "1.0.0")
    order: list[str] = []
    entered, release = anyio.Event(), anyio.Event()

    async def roots_changed(conn: object) -> None:
        entered.set()
        await release.wait()
        order.append("roots")

    server.on_roots_changed = roots_changed

    @server.tool()
    def mark() -> str:
        """Record that the tool ran."""
        order.append("tool")
        return "ok"

    async with serving(server) as peer:
        await peer.send({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"})
        with anyio.fail_after(WAIT):
            await entered.wait()
        await peer.send(call(1, "mark"))
        await anyio.sleep(0.05)
        assert order == []
        release.set()
        assert (await peer.read())["id"] == 1
        assert order == ["roots", "tool"]


@pytest.mark.anyio
async def test_a_reply_the_pipe_cannot_take_whole_is_finished_and_kept_whole() -> None:
    """A 300 kB reply overflows the pipe while the peer is not reading: the rest is
    written by a task, and the next reply waits for it, so frames never interleave."""
    big = "x" * 300_000
    async with serving(echo_server("eager")) as peer:
        await peer.send(call(1, "echo", message=big))
        await peer.send({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        await anyio.sleep(0.05)  # both served while nothing reads the pipe
        first = await peer.read()
        assert first["id"] == 1
        assert first["result"]["structuredContent"] == {"result": big}
        assert await peer.read() == {"jsonrpc": "2.0", "id": 2, "result": {}}


@pytest.mark.anyio
async def test_an_id_in_use_is_refused_even_for_a_quick_request() -> None:
    server = echo_server("eager")
    release = anyio.Event()

    @server.tool()
    async def slow() -> str:
        """Answer once released."""
        await release.wait()
        return "slow"

    async with serving(server) as peer:
        await peer.send(call(7, "slow"))
        await anyio.sleep(0.02)
        await peer.send(call(7, "echo", message="again"))
        refused = await peer.read()
        assert refused["id"] == 7
        assert refused["error"]["code"] == -32600
        assert "already in use" in refused["error"]["message"]
        release.set()
        answer = await peer.read()
        assert answer["id"] == 7
        assert answer["result"]["content"] == [{"type": "text", "text": "slow"}]


@pytest.mark.anyio
async def test_a_message_that_is_request_and_response_at_once_is_never_run() -> None:
    # JSON-RPC 2.0: a request has no result/error, a response no method. With both,
    # the server neither runs the tool nor takes it as an answer: -32600 with the id,
    # on the fast path (asyncio) as in the reader (trio).
    server = echo_server("eager")
    ran: list[str] = []

    @server.tool()
    def record(message: str) -> str:
        """Record the message."""
        ran.append(message)
        return message

    async with serving(server) as peer:
        for rid, extra in ((3, {"result": {}}), ("e", {"error": {"code": 1, "message": "x"}})):
            await peer.send({**call(rid, "record", message="ran"), **extra})  # type: ignore[arg-type]
            refused = await peer.read()
            assert refused["id"] == rid
            assert refused["error"]["code"] == -32600
            assert "not both" in refused["error"]["message"]
        await peer.send({**call(0, "record", message="ran"), "id": None, "result": {}})
        await peer.send({**call(0, "record", message="ran"), "result": {}, "id": 1.5})
        await settled(peer)  # nothing was answered before the ping
        assert ran == []


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the callback path is asyncio's only
async def test_a_reply_whose_write_fails_is_sent_again_and_the_read_goes_on() -> None:
    """A write failing for a reason other than the pipe or the codec (a bug) must not
    escape the readiness callback: the reply is sent again from a task, and the rest
    of the same read is served."""
    server = echo_server("eager")
    async with serving(server) as peer:
        await settled(peer)
        session = next(iter(server.connections)).session
        assert session is not None
        real = session._start_send
        assert real is not None
        failures = [RuntimeError("boom")]

        def start_send(message: Any) -> Any:
            if failures:
                raise failures.pop()
            return real(message)

        session._start_send = start_send
        await peer.write(line(call(1, "echo", message="a")) + line(call(2, "echo", message="b")))
        answers = {answer["id"]: answer for answer in [await peer.read(), await peer.read()]}
        assert answers[1]["result"]["structuredContent"] == {"result": "a"}
        assert answers[2]["result"]["structuredContent"] == {"result": "b"}
        assert not failures


@pytest.mark.anyio
async def test_names_of_any_json_type_are_refused_and_the_session_goes_on() -> None:
    """A tool, prompt or resource named by a list or an object (unhashable) is refused
    by dispatch; looking it up to decide how to serve it must not raise first."""
    async with serving(echo_server("eager")) as peer:
        await settled(peer)
        odd = [
            ("tools/call", {"name": ["x"], "arguments": {}}),
            ("prompts/get", {"name": {"a": 1}}),
            ("resources/read", {"uri": [1]}),
        ]
        await peer.write(
            b"".join(
                line({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
                for rid, (method, params) in enumerate(odd, start=1)
            )
            + line(call(4, "echo", message="still here"))
        )
        answers = {answer["id"]: answer for answer in [await peer.read() for _ in range(4)]}
    assert answers[1]["error"]["code"] == -32602
    # This server has no prompts or resources: those methods do not exist here.
    assert answers[2]["error"]["code"] == -32601
    assert answers[3]["error"]["code"] == -32601
    assert answers[4]["result"]["structuredContent"] == {"result": "still here"}


# -- any mix of messages, in any split, gets the same answers --------------------------

MESSAGES = st.sampled_from(
    [
        "echo",
        "ping",
        "unknown",
        "bad-args",
        "note",
        "not-json",
        "no-method",
        "odd-name",
    ]
)


def encode(kind: str, rid: int) -> tuple[bytes, dict[str, Any] | None]:
    """A message of ``kind`` with id ``rid`` and the answer it must get (None: none)."""
    if kind == "echo":
        expected = {"structuredContent": {"result": f"m{rid}"}}
        return line(call(rid, "echo", message=f"m{rid}")), expected
    if kind == "ping":
        return line({"jsonrpc": "2.0", "id": rid, "method": "ping"}), {"result": {}}
    if kind == "unknown":
        return line({"jsonrpc": "2.0", "id": rid, "method": "no/such"}), {"error": -32601}
    if kind == "bad-args":
        return line(call(rid, "echo", message=rid)), {"isError": True}
    if kind == "odd-name":  # a name no dict can look up: refused, never a crash
        bad = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {"name": ["x"]}}
        return line(bad), {"error": -32602}
    if kind == "note":
        return line({"jsonrpc": "2.0", "method": "notifications/whatever"}), None
    if kind == "not-json":
        return b'{"jsonrpc": "2.0", "id": \n', {"error": -32700}
    return line({"jsonrpc": "2.0", "id": rid}), {"error": -32600}


def check(expected: dict[str, Any], answer: dict[str, Any]) -> None:
    if "error" in expected:
        assert answer["error"]["code"] == expected["error"]
    elif "result" in expected:
        assert answer["result"] == expected["result"]
    elif "isError" in expected:
        assert answer["result"]["isError"] is True
    else:
        assert answer["result"]["structuredContent"] == expected["structuredContent"]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(kinds=st.lists(MESSAGES, min_size=1, max_size=12), data=st.data())
def test_any_mix_in_any_split_gets_every_answer(
    anyio_backend: str, kinds: list[str], data: st.DataObject
) -> None:
    frames = [encode(kind, rid) for rid, kind in enumerate(kinds, start=1)]
    stream = b"".join(frame for frame, _ in frames)
    cuts = sorted(data.draw(st.sets(st.integers(1, len(stream) - 1), max_size=8)))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    expected = [(rid, answer) for rid, (_, answer) in enumerate(frames, start=1) if answer]

    async def main() -> None:
        async with serving(echo_server("eager")) as peer:
            for chunk in chunks:
                await peer.write(chunk)
                await anyio.sleep(0)
            answers = [await peer.read() for _ in expected]
        # An unknown method is answered from a task of its own, so the order of
        # answers may differ; each request gets exactly its answer.
        by_id = {answer["id"]: answer for answer in answers}
        unparsed = [answer for answer in answers if answer["id"] is None]
        for rid, want in expected:
            if want.get("error") == -32700:
                check(want, unparsed.pop())
            else:
                check(want, by_id.pop(rid))
        assert not by_id.keys() - {None}

    anyio.run(main, backend=anyio_backend)
