"""Modern-era subscriptions on the client: ``Client.listen()``.

A ``subscriptions/listen`` request stays open for the life of the stream.
The client routes every notification whose ``_meta`` names the request's id
to that stream's ``ListenState``: the acknowledgement (which must come first)
fills in what the server honoured; everything after it is an event for the
user. Leaving the ``async with`` cancels the request, which on stdio sends
``notifications/cancelled`` (the spec's way to end a listen). A server that
ends the stream itself (a final result, or ``notifications/cancelled``) ends
the iteration.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from ._errors import MCPWireError
from ._handshake import declaring_tasks
from .sansio._json import JSONObject
from .sansio._messages import Notification, RequestId

if TYPE_CHECKING:
    from ._client import Client

__all__ = ("Listen", "ListenState", "Subscription")

#: Undelivered events kept per subscription; beyond that, new events are dropped
#: (a consumer that stopped reading loses events, never the connection).
LISTEN_BUFFER = 1024


class ListenState:
    """Per-stream routing state (owned by the client, keyed by request id)."""

    def __init__(self) -> None:
        self.send, self.receive = anyio.create_memory_object_stream[Notification](LISTEN_BUFFER)
        self.acked = anyio.Event()
        self.honored: JSONObject = {}
        self.dropped = 0

    def deliver(self, note: Notification) -> None:
        if note.method == "notifications/subscriptions/acknowledged":
            params = note.params or {}
            got = params.get("notifications")
            self.honored.update(got if isinstance(got, dict) else {})
            self.acked.set()
            return
        if note.method == "notifications/cancelled":
            self.send.close()  # the server tore the stream down
            return
        try:
            self.send.send_nowait(note)
        except anyio.WouldBlock:
            self.dropped += 1
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass


class Subscription:
    """An open listen stream: ``async for note in sub`` yields its notifications."""

    def __init__(self, state: ListenState, request_id: RequestId) -> None:
        self.id = request_id
        self._state = state

    @property
    def honored(self) -> JSONObject:
        """The subset of the request the server acknowledged."""
        return self._state.honored

    @property
    def dropped(self) -> int:
        """Events lost because the consumer fell more than the buffer behind."""
        return self._state.dropped

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Notification:
        try:
            return await self._state.receive.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None


class Listen:
    """The async context manager behind ``Client.listen``."""

    def __init__(self, client: Client, wanted: JSONObject) -> None:
        self._client = client
        self._wanted = wanted
        self._id: RequestId | None = None
        self._state: ListenState | None = None
        self._tg: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> Subscription:
        client = self._client
        if client.era != "modern":
            raise MCPWireError(
                "subscriptions/listen needs the modern era (2026-07-28); "
                "use subscribe_resource() and on_notification in the legacy era"
            )
        state = self._state = ListenState()
        failure: list[BaseException] = []

        def on_id(rid: RequestId) -> None:
            self._id = rid
            client._subscriptions[rid] = state

        async def run() -> None:
            params: JSONObject = {"notifications": self._wanted}
            with declaring_tasks(True if "taskIds" in self._wanted else None):
                params["_meta"] = client._envelope(client.protocol_version)
            try:
                await client.session.request(
                    "subscriptions/listen",
                    params,
                    timeout=math.inf,
                    max_timeout=math.inf,
                    on_id=on_id,
                )
            except MCPWireError as exc:
                failure.append(exc)
            finally:
                state.acked.set()
                state.send.close()

        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(run)
        try:
            with anyio.fail_after(client.request_timeout):
                await state.acked.wait()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        if failure:
            await self.__aexit__(None, None, None)
            raise failure[0]
        assert self._id is not None
        return Subscription(state, self._id)

    async def __aexit__(self, *exc_info: object) -> None:
        try:
            if self._tg is not None:
                tg, self._tg = self._tg, None
                tg.cancel_scope.cancel()
                await tg.__aexit__(None, None, None)
        finally:
            if self._id is not None:
                self._client._subscriptions.pop(self._id, None)
            if self._state is not None:
                self._state.send.close()
                self._state.receive.close()
