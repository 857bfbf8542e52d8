"""Server states and the hub's events, delivered to any number of subscribers.

Theory of operation
-------------------
Events are immutable facts named after what happened (``ServerStateChanged``,
``ToolsChanged``, ...). The hub publishes them synchronously, from whichever
of its tasks saw the change; publishing never waits. Each subscriber
(``hub.events()``) has its own bounded buffer: when a subscriber falls behind,
its *oldest* events are dropped and counted in ``EventStream.dropped``, so a
slow user interface costs memory bounded by the buffer size and never slows
the hub. A stream ends (``StopAsyncIteration``) when the hub closes or the
stream is closed; streams nobody references any more are forgotten.
"""

from __future__ import annotations

import collections
import enum
import time
import weakref
from dataclasses import asdict, dataclass, field
from typing import Any

import anyio

__all__ = (
    "ConfigRejected",
    "ConfigReloaded",
    "EventBus",
    "EventStream",
    "HubEvent",
    "NameCollisionEvent",
    "ResourcesChanged",
    "ServerState",
    "ServerStateChanged",
    "ToolCountWarning",
    "ToolsChanged",
)

#: Events kept per subscriber before the oldest are dropped.
DEFAULT_EVENT_BUFFER = 256


class ServerState(str, enum.Enum):
    """Where a server is in its life under the hub."""

    DISABLED = "disabled"  #: configured off; never started
    STARTING = "starting"  #: first connection and discovery in progress
    READY = "ready"  #: connected; its tools are exposed
    IDLE = "idle"  #: lazy, not started: its cached tools are exposed; starts on first use
    FAILED = "failed"  #: could not start, or suspended after a crash loop
    RESTARTING = "restarting"  #: lost or restarted; reconnecting (with backoff)
    STOPPED = "stopped"  #: removed from the config, or the hub closed

    def __str__(self) -> str:
        return self.value

    @property
    def exposed(self) -> bool:
        """Whether a server in this state has its tools, resources and prompts exposed."""
        return self is ServerState.READY or self is ServerState.IDLE


@dataclass(frozen=True, kw_only=True)
class HubEvent:
    """Base class of every hub event; ``timestamp`` is ``time.time()``."""

    timestamp: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        """The event as a JSON object, with its kind under ``"event"``."""
        data = asdict(self)
        for key, value in data.items():
            if isinstance(value, ServerState):
                data[key] = value.value
        return {"event": type(self).__name__, **data}


@dataclass(frozen=True, kw_only=True)
class ServerStateChanged(HubEvent):
    server: str
    old: ServerState | None
    new: ServerState
    #: The error that caused the change (a crash, a startup failure), if any.
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class ToolsChanged(HubEvent):
    """The number of tools a server exposes changed: discovery, a list change, a
    config change, or the server went down (``after`` 0: restarting, failed,
    disabled, stopped) or came back. It follows ``Hub.tools(include_disabled=True)``."""

    server: str
    before: int
    after: int


@dataclass(frozen=True, kw_only=True)
class ResourcesChanged(HubEvent):
    """The resources and resource templates a server exposes changed (discovery, a
    list change, removal, the server went down or came back, as for ``ToolsChanged``);
    the counts are of both together."""

    server: str
    before: int
    after: int


@dataclass(frozen=True, kw_only=True)
class ConfigReloaded(HubEvent):
    """A changed config was applied; each tuple holds server names."""

    files: tuple[str, ...]
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    restarted: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    #: The profile in force after it (``None``: none).
    profile: str | None = None


@dataclass(frozen=True, kw_only=True)
class ConfigRejected(HubEvent):
    """A changed config was invalid; the last good one stays in force."""

    files: tuple[str, ...]
    error: str


@dataclass(frozen=True, kw_only=True)
class NameCollisionEvent(HubEvent):
    """A tool was not exposed because its exposed name is taken (see ``NameCollision``)."""

    exposed_name: str
    server: str
    tool: str
    other_server: str
    other_tool: str


@dataclass(frozen=True, kw_only=True)
class ToolCountWarning(HubEvent):
    """More tools are exposed than ``threshold``; ``largest`` is (server, tools, ~tokens)."""

    total: int
    threshold: int
    largest: tuple[tuple[str, int, int], ...]


class EventStream:
    """One subscriber's view of the hub's events: ``async for event in stream``.

    Attributes:
        dropped: events lost because this subscriber fell more than its buffer behind.
    """

    def __init__(self, bus: EventBus, maxlen: int) -> None:
        self._bus = bus
        self._buffer: collections.deque[HubEvent] = collections.deque(maxlen=maxlen)
        self._wake: anyio.Event | None = None
        self._closed = False
        self.dropped = 0

    def _push(self, event: HubEvent) -> None:
        if self._closed:
            return
        if len(self._buffer) == self._buffer.maxlen:
            self.dropped += 1
        self._buffer.append(event)
        self._poke()

    def _poke(self) -> None:
        if self._wake is not None:
            self._wake.set()
            self._wake = None

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> HubEvent:
        while not self._buffer:
            if self._closed:
                raise StopAsyncIteration
            self._wake = anyio.Event()
            await self._wake.wait()
        return self._buffer.popleft()

    def pending(self) -> list[HubEvent]:
        """Take every buffered event without waiting."""
        items = list(self._buffer)
        self._buffer.clear()
        return items

    def close(self) -> None:
        """Stop receiving; buffered events can still be read, then iteration ends."""
        self._closed = True
        self._bus._streams.discard(self)
        self._poke()

    async def aclose(self) -> None:
        self.close()

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.close()


class EventBus:
    """Fans events out to subscribers (see the module docstring)."""

    def __init__(self) -> None:
        self._streams: weakref.WeakSet[EventStream] = weakref.WeakSet()
        self.closed = False

    def subscribe(self, maxlen: int = DEFAULT_EVENT_BUFFER) -> EventStream:
        if maxlen < 1:
            raise ValueError("an event buffer needs room for at least one event")
        stream = EventStream(self, maxlen)
        if self.closed:
            stream.close()
        else:
            self._streams.add(stream)
        return stream

    def publish(self, event: HubEvent) -> None:
        for stream in list(self._streams):
            stream._push(event)

    def close(self) -> None:
        self.closed = True
        for stream in list(self._streams):
            stream.close()
