"""The transport contract the session layer drives, and the in-memory pair.

A transport moves whole messages. It frames and parses on the way in (bytes ->
``Incoming`` items via the sans-IO core) and serialises on the way out, so the
session above it never sees bytes and the drivers below never see protocol
state.

Contract:

* ``receive()`` returns the next ``Incoming`` item (a message, an ``Invalid``
  to be answered, or a ``Batch``); at end of input it raises
  ``anyio.EndOfStream``. It is called by one task only.
* ``send()`` takes a message or a list of messages (a batch reply) and is safe
  to call from many tasks at once: frames never interleave. ``related`` names
  the peer's request a notification or request belongs to (progress, logs,
  asks made while serving it, a subscription's events); transports that keep
  one stream per request (HTTP) route by it, the others ignore it.
* ``close_error()`` describes, as a ``ConnectionClosed``, why the transport
  ended: the peer's exit status and stderr tail for a child process, for example.
* ``aclose()`` is idempotent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, Union

import anyio
import anyio.lowlevel

from ._errors import ConnectionClosed
from .sansio import _messages as m
from .sansio._messages import RequestId

if TYPE_CHECKING:
    # Only the memory pair needs these, and anyio loads them on first use.
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

__all__ = (
    "DirectTransport",
    "MemoryTransport",
    "Outbound",
    "Transport",
    "direct_pair",
    "memory_pair",
)

#: Messages in flight per direction before a sender waits (back-pressure, not loss).
MEMORY_BUFFER = 256
#: A direct transport's sends between two checkpoints (see ``DirectTransport.send``).
YIELD_EVERY = 16

Outbound = Union[m.Message, "list[m.Message]"]


class Transport(Protocol):
    async def send(self, message: Outbound, *, related: RequestId | None = None) -> None: ...

    async def receive(self) -> m.Incoming: ...

    async def aclose(self) -> None: ...

    def close_error(self) -> ConnectionClosed: ...


class MemoryTransport:
    """One end of an in-process connection (see ``memory_pair``)."""

    def __init__(
        self,
        send_stream: MemoryObjectSendStream[Outbound],
        receive_stream: MemoryObjectReceiveStream[Outbound],
        *,
        wire: bool,
        name: str,
    ) -> None:
        self._send = send_stream
        self._receive = receive_stream
        self._wire = wire
        self._name = name
        self._closed_locally = False

    async def send(self, message: Outbound, *, related: RequestId | None = None) -> None:
        if self._wire:
            # Full serialise/parse round trip, as a byte transport would do.
            data = m.serialize_batch(message) if isinstance(message, list) else m.serialize(message)
            await self._send.send(_Wire(data))  # type: ignore[arg-type]
            return
        await self._send.send(message)

    async def receive(self) -> m.Incoming:
        try:
            item = await self._receive.receive()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise anyio.EndOfStream from None
        if isinstance(item, _Wire):
            return m.parse(item.data)
        if isinstance(item, list):
            return m.Batch(tuple(item))
        return item

    async def aclose(self) -> None:
        self._closed_locally = True
        self._send.close()
        self._receive.close()

    def close_error(self) -> ConnectionClosed:
        if self._closed_locally:
            return ConnectionClosed(f"{self._name}: connection closed locally")
        return ConnectionClosed(f"{self._name}: the peer closed the connection")


class _Wire:
    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


def memory_pair(*, wire: bool = False) -> tuple[MemoryTransport, MemoryTransport]:
    """Two connected in-memory transports: ``(client_end, server_end)``.

    With ``wire=True`` every message is serialised and parsed on its way
    across, exactly as over a byte stream; otherwise message objects are handed
    over as they are (immutable, so sharing them is safe), which is the fastest
    way to run a server in-process.
    """
    a_send, b_receive = anyio.create_memory_object_stream[Outbound](MEMORY_BUFFER)
    b_send, a_receive = anyio.create_memory_object_stream[Outbound](MEMORY_BUFFER)
    return (
        MemoryTransport(a_send, a_receive, wire=wire, name="in-memory client end"),
        MemoryTransport(b_send, b_receive, wire=wire, name="in-memory server end"),
    )


Deliver = Callable[[m.Incoming], Awaitable[None]]


class DirectTransport:
    """One end of an in-process connection that hands messages over by call.

    ``send()`` runs the peer session's dispatch in the sender's own task, and
    the peer serves a request inline there: a round trip costs no task switch
    at all (but for one checkpoint every ``YIELD_EVERY`` sends, so that a loop
    of calls cannot starve the event loop). Each caller's request runs in that
    caller's task, so concurrent callers stay concurrent, and a caller's
    deadline or cancellation reaches the handler directly. Until the peer
    session attaches, messages wait in a queue (bounded like the memory pair's).
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self.peer: DirectTransport | None = None
        self._deliver: Deliver | None = None
        self._early: list[m.Incoming] = []
        self._ended = False
        self._closed_locally = False
        self._end_event: anyio.Event | None = None
        self._sends = 0

    def attach(self, deliver: Deliver) -> None:
        """Called by the session that owns this end: where peer messages go."""
        self._deliver = deliver

    async def send(self, message: Outbound, *, related: RequestId | None = None) -> None:
        peer = self.peer
        if self._ended or peer is None or peer._ended:
            raise anyio.BrokenResourceError
        # A call served inline never waits, so a caller looping over calls would
        # never let the event loop run: no other task, timer or deadline. Every
        # YIELD_EVERY-th send is a checkpoint (before anything is sent).
        self._sends += 1
        if self._sends >= YIELD_EVERY:
            self._sends = 0
            await anyio.lowlevel.checkpoint()
            if self._ended or peer._ended:
                raise anyio.BrokenResourceError
        item: m.Incoming = m.Batch(tuple(message)) if isinstance(message, list) else message
        deliver = peer._deliver
        if deliver is None:
            if len(peer._early) >= MEMORY_BUFFER:
                raise anyio.BrokenResourceError
            peer._early.append(item)
            return
        await deliver(item)

    async def receive(self) -> m.Incoming:
        # Messages arrive by call; this only flushes early ones and waits for the end.
        if self._early and self._deliver is not None:
            early, self._early = self._early, []
            for item in early[:-1]:
                await self._deliver(item)
            return early[-1]
        if self._end_event is None:
            self._end_event = anyio.Event()
        if not self._ended:
            await self._end_event.wait()
        raise anyio.EndOfStream

    def _end(self) -> None:
        self._ended = True
        if self._end_event is not None:
            self._end_event.set()

    async def aclose(self) -> None:
        if not self._ended:
            self._closed_locally = True
            self._end()
        if self.peer is not None and not self.peer._ended:
            self.peer._end()

    def close_error(self) -> ConnectionClosed:
        if self._closed_locally:
            return ConnectionClosed(f"{self._name}: connection closed locally")
        return ConnectionClosed(f"{self._name}: the peer closed the connection")


def direct_pair() -> tuple[DirectTransport, DirectTransport]:
    """Two connected direct transports: ``(client_end, server_end)`` (see ``DirectTransport``)."""
    client_end = DirectTransport("in-process client end")
    server_end = DirectTransport("in-process server end")
    client_end.peer = server_end
    server_end.peer = client_end
    return client_end, server_end
