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
  to call from many tasks at once: frames never interleave.
* ``close_error()`` describes, as a ``ConnectionClosed``, why the transport
  ended: the peer's exit status and stderr tail for a child process, for example.
* ``aclose()`` is idempotent.
"""

from __future__ import annotations

from typing import Protocol, Union

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ._errors import ConnectionClosed
from .sansio import _messages as m

__all__ = ("MemoryTransport", "Outbound", "Transport", "memory_pair")

#: Messages in flight per direction before a sender waits (back-pressure, not loss).
MEMORY_BUFFER = 256

Outbound = Union[m.Message, "list[m.Message]"]


class Transport(Protocol):
    async def send(self, message: Outbound) -> None: ...

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

    async def send(self, message: Outbound) -> None:
        if self._wire:
            # Full serialise/parse round trip, as a byte transport would do.
            data = (
                m.serialize_batch(message) if isinstance(message, list) else m.serialize(message)
            )
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
