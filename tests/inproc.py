"""In-process helpers shared by the modern-era and tasks tests.

``serving(server)`` runs a server on a wire-faithful in-memory pair and gives
the client ``Session`` and an ``Inbox`` of the notifications it receives;
``Gate`` lets a test decide when a handler proceeds; ``until_listening``
waits for a server another process starts; ``echo_server`` is a server with
one synchronous ``echo`` tool and nothing else; ``two_deadlines`` times two
requests that expire at different deadlines.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import anyio

import mcpwire
from mcpwire import Server, Session
from mcpwire.sansio import Notification

__all__ = (
    "WAIT",
    "Gate",
    "Inbox",
    "echo_server",
    "serving",
    "two_deadlines",
    "until_listening",
)

#: Seconds any single wait in these helpers may take.
WAIT = 5.0


class Inbox:
    def __init__(self) -> None:
        self.items: list[Notification] = []
        self._send, self._receive = anyio.create_memory_object_stream[Notification](1000)

    async def __call__(self, note: Notification) -> None:
        self.items.append(note)
        self._send.send_nowait(note)

    def close(self) -> None:
        self._send.close()
        self._receive.close()

    def of(self, method: str) -> list[Notification]:
        return [n for n in self.items if n.method == method]

    async def next(self, method: str) -> Notification:
        with anyio.fail_after(WAIT):
            while True:
                note = await self._receive.receive()
                if note.method == method:
                    return note


@asynccontextmanager
async def serving(server: Server) -> AsyncIterator[tuple[Session, Inbox]]:
    client_end, server_end = mcpwire.memory_pair(wire=True)
    inbox = Inbox()
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, server_end)
            async with Session(client_end, on_notification=inbox) as session:
                yield session, inbox
            tg.cancel_scope.cancel()
    finally:
        inbox.close()


class Gate:
    """Lets the test decide when a handler proceeds, and see that it got there."""

    def __init__(self) -> None:
        self.reached = anyio.Event()
        self.go = anyio.Event()
        self.cancelled = False

    async def wait(self) -> None:
        self.reached.set()
        try:
            await self.go.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise


async def until_listening(port: int, timeout: float = WAIT) -> None:
    """Return once something accepts TCP connections on 127.0.0.1:``port``."""
    with anyio.fail_after(timeout):
        while True:
            try:
                await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                return
            except OSError:
                await anyio.sleep(0.05)


def echo_server(name: str = "echo") -> Server:
    """A server with one tool, ``echo(message) -> message``, a plain function (so
    that it is answered where the request is read, on every transport that can)."""
    server = Server(name, "1.0.0")

    @server.tool()
    def echo(message: str) -> str:
        """Echo the message back."""
        return message

    return server


async def two_deadlines(expire: Callable[[str, float], Awaitable[None]]) -> dict[str, float]:
    """How long each of two requests took to expire: ``expire(tag, timeout)``
    makes one that is never answered and returns once it timed out. "long"
    (1 s) is made first and "short" (0.2 s) just after, so a timer kept for
    the earliest deadline must move earlier, and the longer one still expire
    on time, not before. Within 20 s in all."""
    expired: dict[str, float] = {}

    async def wait(tag: str, timeout: float) -> None:
        began = anyio.current_time()
        await expire(tag, timeout)
        expired[tag] = anyio.current_time() - began

    with anyio.fail_after(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(wait, "long", 1.0)
            await anyio.sleep(0.05)
            tg.start_soon(wait, "short", 0.2)
    return expired
