"""Opaque pagination cursors: ``kind:offset`` in URL-safe base64.

A cursor means something only to the server that made it (pagination.mdx), so
it names what it pages (``kind``) and where the next page starts; one made for
another list, or not made by us at all, is refused with -32602. Shared by the
server's list methods and the ``tasks/list`` of whichever side holds tasks (a
client that runs tasks must not load the server to page them).
"""

from __future__ import annotations

import base64

from ._errors import JSONRPCError
from .sansio._json import JSONValue
from .sansio._messages import ErrorCode

__all__ = ("decode_cursor", "encode_cursor")


def encode_cursor(kind: str, offset: int) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{offset}".encode()).decode("ascii")


def decode_cursor(kind: str, cursor: JSONValue) -> int:
    """The offset ``cursor`` names in the list ``kind``; -32602 if it is not one of ours."""
    if not isinstance(cursor, str):
        raise _invalid()
    try:
        text = base64.urlsafe_b64decode(cursor.encode("ascii")).decode("ascii")
        prefix, _, number = text.partition(":")
        offset = int(number)
    except (ValueError, UnicodeError):
        raise _invalid() from None
    if prefix != kind or offset < 0:
        raise _invalid()
    return offset


def _invalid() -> JSONRPCError:
    return JSONRPCError(ErrorCode.INVALID_PARAMS, "Invalid cursor")
