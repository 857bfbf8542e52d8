"""Resumable SSE streams: the ``EventStore`` interface and the bounded in-memory store.

Theory of operation
-------------------
The 2025-11-25 transport lets a client that lost an SSE stream reconnect with
``GET`` and ``Last-Event-ID`` and receive what it missed, but only the
messages of *that* stream (transports.mdx, "Resumability and Redelivery").
Every SSE event the HTTP server writes in a legacy session is first recorded
here and carries the id the store gave it; replay looks the id up.

Ids are unique per session and name their stream: ``"<stream>:<sequence>"``.
The server numbers streams per session (``"0"`` is the standalone GET stream,
``"1"``, ``"2"``, ... the POST streams), so an id says which stream to resume
and nothing about any other. The sequence numbers are the session's, not the
stream's: a stream that was forgotten (or evicted) and is written again
never gives out an id it gave before (the spec wants event ids unique within
the session), and an id from before its new start gets no replay, since what
followed it in the earlier log is gone. Lookups are keyed by the session id as well,
so an id presented in another session finds nothing: replay never crosses
sessions (pain point 18, a published advisory against another server).

A priming event (an id with empty data, sent first on a stream so the client
holds a resume point before any message arrives) is recorded with
``message=None``: it takes a sequence number and is never replayed.

Memory is bounded three ways: each stream keeps its last
``max_events_per_stream`` messages, each session keeps its newest
``max_streams_per_session`` streams (the most recently written: the
standalone stream, written now and then for the whole session, is not the
first to go), and the server calls ``forget`` when a
stream was delivered completely or its session ended. A resumer whose id is
older than what its stream still holds (a message after it was dropped) gets
no replay (``None``) rather than the newer part alone: a replay with a hole
would lose messages silently, and the server answers 410 Gone instead, so the
client knows to recover.

Another store (a shared cache behind several server processes, say) only has
to implement the three coroutines of ``EventStore``.
"""

from __future__ import annotations

import collections
from typing import Protocol

from .sansio._messages import Message

__all__ = ("EventStore", "MemoryEventStore", "Replay")

#: The longest sequence number an id of ``MemoryEventStore`` can hold; a
#: ``Last-Event-ID`` with more digits names no event (and is never given to
#: ``int``, which refuses numbers of more than 4300 digits).
_MAX_SEQUENCE_DIGITS = 20
#: ``(stream id, [(event id, message), ...])``: what ``replay_after`` returns.
Replay = tuple[str, "list[tuple[str, Message]]"]


class EventStore(Protocol):
    """Where a legacy session's SSE events are kept for ``Last-Event-ID`` replay."""

    async def store(self, session: str, stream: str, message: Message | None) -> str:
        """Record ``message`` (``None``: a priming point) on ``stream``; return its event id.

        Ids must be unique within the session and identify the stream.
        """
        ...

    async def replay_after(self, session: str, event_id: str) -> Replay | None:
        """The stream ``event_id`` belongs to and its messages recorded after it.

        ``None`` when the id is unknown in this session (malformed, from
        another session, or its stream was forgotten), or when a message
        recorded after it is no longer held: a replay must be complete (the
        server then answers 410 Gone).
        """
        ...

    async def forget(self, session: str, stream: str | None = None) -> None:
        """Drop one stream of a session, or (``stream=None``) the whole session."""
        ...


class _Log:
    __slots__ = ("dropped", "events", "first")

    def __init__(self, limit: int, first: int) -> None:
        #: The session's sequence number of this log's first event.
        self.first = first
        #: The sequence number of the newest message dropped for room (-1: none).
        self.dropped = -1
        self.events: collections.deque[tuple[int, Message]] = collections.deque(maxlen=limit)


class _Session:
    __slots__ = ("logs", "next_seq")

    def __init__(self) -> None:
        self.next_seq = 0
        #: The session's streams, least recently written first.
        self.logs: collections.OrderedDict[str, _Log] = collections.OrderedDict()


class MemoryEventStore:
    """A bounded ``EventStore`` in this process's memory (see the module docstring)."""

    def __init__(self, max_events_per_stream: int = 256, max_streams_per_session: int = 32) -> None:
        if max_events_per_stream < 1 or max_streams_per_session < 1:
            raise ValueError("the limits must be at least 1")
        self.max_events_per_stream = max_events_per_stream
        self.max_streams_per_session = max_streams_per_session
        self._sessions: dict[str, _Session] = {}

    def __len__(self) -> int:
        """Number of sessions recorded (each until ``forget(session)``)."""
        return len(self._sessions)

    def event_count(self) -> int:
        return sum(len(log.events) for s in self._sessions.values() for log in s.logs.values())

    async def store(self, session: str, stream: str, message: Message | None) -> str:
        state = self._sessions.get(session)
        if state is None:
            state = self._sessions[session] = _Session()
        logs = state.logs
        seq = state.next_seq
        state.next_seq += 1
        log = logs.get(stream)
        if log is None:
            log = logs[stream] = _Log(self.max_events_per_stream, seq)
            while len(logs) > self.max_streams_per_session:
                logs.popitem(last=False)
        else:
            logs.move_to_end(stream)
        if message is not None:
            if len(log.events) == log.events.maxlen:
                log.dropped = log.events[0][0]
            log.events.append((seq, message))
        return f"{stream}:{seq}"

    async def replay_after(self, session: str, event_id: str) -> Replay | None:
        stream, colon, number = event_id.partition(":")
        if (
            not colon
            or len(number) > _MAX_SEQUENCE_DIGITS
            or not number.isascii()
            or not number.isdigit()
        ):
            return None
        state = self._sessions.get(session)
        log = state.logs.get(stream) if state is not None else None
        if log is None:
            return None
        after = int(number)
        if after >= state.next_seq:  # type: ignore[union-attr]  # (log is not None)
            return None  # an id this session never gave out
        if after < log.first:
            return None  # from an earlier log of this stream, forgotten since
        if after < log.dropped:
            return None  # a message after it was dropped: the replay would have a hole
        return stream, [(f"{stream}:{seq}", msg) for seq, msg in log.events if seq > after]

    async def forget(self, session: str, stream: str | None = None) -> None:
        if stream is None:
            self._sessions.pop(session, None)
            return
        state = self._sessions.get(session)
        if state is not None:
            # The session's numbering stays until the session is forgotten: its
            # ids must stay unique, whichever of its streams come and go.
            state.logs.pop(stream, None)
