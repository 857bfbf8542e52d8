"""base64url without padding (RFC 4648 §5, as RFC 7515 §2 uses it): tokens, ids,
signed state, JWS parts, PKCE challenges."""

from __future__ import annotations

import base64

__all__ = ("b64url_decode", "b64url_encode")


def b64url_encode(data: bytes) -> str:
    """``data`` as unpadded base64url text."""
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    """The inverse of ``b64url_encode``; anything else raises ``ValueError``."""
    if not text.isascii() or "=" in text or len(text) % 4 == 1:
        raise ValueError("not unpadded base64url")
    try:
        data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError:
        raise ValueError("not unpadded base64url") from None
    if b64url_encode(data) != text:
        raise ValueError("not canonical base64url")
    return data
