"""Replies the session sends: a batch's, gathered into one array; the refusal of a
batch the negotiated version does not allow; a fallback for replies the codec refuses.

JSON-RPC 2.0 answers a batch with one array holding a response per request in
it (notifications get none); ``initialize`` may not travel in a batch
(2025-03-26 ``basic/lifecycle``), and an id already in use is refused as for a
single request. The batch's requests run concurrently, each in its own cancel
scope, within the session's bounds on handlers, and the array is sent when the
last has finished.

A handler's result that the codec cannot encode (a value JSON has no form for)
fails when the reply is serialised, before any byte is written. ``writable``
turns each such reply into a -32603 error for the same id, so every request
still gets exactly one answer and the connection carries on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._errors import RemoteProtocolError
from .sansio._messages import (
    Batch,
    ErrorCode,
    ErrorResponse,
    Invalid,
    Message,
    Request,
    Response,
    error_response,
    serialize,
)

if TYPE_CHECKING:
    from ._session import Session

__all__ = ("Gathered", "refuse_batch", "serve_batch", "writable")


class Gathered:
    """A batch's replies, and how many of its requests are still being served."""

    __slots__ = ("outstanding", "replies")

    def __init__(self) -> None:
        self.replies: list[Message] = []
        #: Requests admitted or parked but not finished, plus one while dispatching.
        self.outstanding = 1

    async def done(self, session: Session) -> None:
        """One request (or the dispatch itself) finished: the last sends the array."""
        self.outstanding -= 1
        if self.outstanding == 0 and self.replies:
            await session._send_quietly(self.replies)


async def serve_batch(session: Session, batch: Batch) -> None:
    """Dispatch a JSON-RPC batch in the session's reader; its replies go out as one array.

    Its requests are admitted to handler tasks, or parked, exactly as single ones
    (``_inflow``): a batch of many thousand requests runs at most ``MAX_HANDLERS``
    handlers at once, and the reader waits while ``MAX_PARKED`` are parked, so a
    batch, or many, cannot grow memory beyond the parsed message itself.
    """
    gathered = Gathered()
    replies = gathered.replies
    assert session._handlers is not None
    for item in batch.items:
        cls = type(item)
        if cls is Request:
            req: Request = item  # type: ignore[assignment]
            if req.method == "initialize":
                problem = "initialize must not be part of a JSON-RPC batch"
                replies.append(error_response(req.id, ErrorCode.INVALID_REQUEST, problem))
            elif not session.rpc.request_received(req):
                problem = f"request id {req.id!r} is already in use"
                replies.append(error_response(req.id, ErrorCode.INVALID_REQUEST, problem))
            else:
                gathered.outstanding += 1
                if session.inflow.admit(req):
                    session._handlers.start(req, gathered)
                else:
                    await session.inflow.park(req, gathered)
        elif cls is Invalid:
            reply = session._invalid(item)  # type: ignore[arg-type]
            if reply is not None:
                replies.append(reply)
        else:
            await session._dispatch(item)
    await gathered.done(session)


#: Why a batch is refused. A connection has no era of its own (stdio serves
#: both, chosen per request), so the reason holds for either: a legacy one that
#: negotiated another version, a 2026-07-28 one, one not yet initialized.
BATCH_REFUSAL = (
    "JSON-RPC batches are only allowed once an initialize has negotiated protocol "
    "version 2025-03-26 (later revisions, 2026-07-28 included, have none)"
)


async def refuse_batch(session: Session, batch: Batch) -> None:
    """Answer a batch the negotiated version does not allow: one -32600, id null.

    Each of our requests that the batch answers fails now with
    ``RemoteProtocolError``: its answer was sent but may not be taken, and no
    other is due, so waiting on would only turn the peer's mistake into a
    timeout.
    """
    session.invalid_received += 1
    await session._send_quietly(
        error_response(
            None,
            ErrorCode.INVALID_REQUEST,
            BATCH_REFUSAL,
        )
    )
    for item in batch.items:
        if type(item) is Response or type(item) is ErrorResponse:
            out = session.rpc.response_received(item)
            pending = session._pending.get(out.id) if out is not None else None
            if out is not None and pending is not None:
                why = (
                    f"the peer answered {out.method} inside a JSON-RPC batch, which the "
                    "negotiated protocol version does not allow"
                )
                pending.settle(RemoteProtocolError(why))


def writable(message: Message | list[Message], exc: Exception) -> Message | list[Message]:
    """``message`` with each reply the codec refuses replaced by -32603 for its id."""

    def check(reply: Message) -> Message:
        try:
            serialize(reply)
        except Exception:
            rid = reply.id if type(reply) is Response or type(reply) is ErrorResponse else None
            why = f"Internal error: the result could not be encoded ({type(exc).__name__})"
            return error_response(rid, ErrorCode.INTERNAL_ERROR, why)
        return reply

    return [check(r) for r in message] if isinstance(message, list) else check(message)
