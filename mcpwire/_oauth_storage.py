"""What an ``OAuthClient`` keeps: tokens, client identities, and where it keeps them.

``TokenStorage`` is the interface (tokens for the one server an ``OAuthClient``
serves, client identities per authorization server issuer, as SEP-2352 asks:
an identity is never presented to another authorization server);
``InMemoryTokenStorage`` the default, kept for the life of the process.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ("ClientInfo", "InMemoryTokenStorage", "OAuthTokens", "TokenStorage")


@dataclass
class OAuthTokens:
    """What the authorization server granted, and to whom it applies."""

    access_token: str
    issuer: str
    resource: str
    refresh_token: str | None = None
    #: ``time.time()`` after which the access token is renewed before use
    #: (a little before it expires), if the server said when it does.
    expires_at: float | None = None
    #: The scopes asked for (what a step-up adds to).
    scopes: list[str] = field(default_factory=list)
    #: ``Bearer``, or ``DPoP`` for a token bound to the client's DPoP key (RFC 9449).
    token_type: str = "Bearer"
    #: For a ``DPoP`` token: the RFC 7638 thumbprint of the key it is bound to, so
    #: that a client holding another key leaves it unused.
    dpop_jkt: str | None = None

    def expired(self, now: float | None = None) -> bool:
        at = self.expires_at
        return at is not None and (time.time() if now is None else now) >= at


@dataclass(frozen=True)
class ClientInfo:
    """A client identity at one authorization server."""

    client_id: str
    client_secret: str | None = None
    #: ``none``, ``client_secret_basic``, ``client_secret_post`` or
    #: ``private_key_jwt`` (RFC 7591 §2).
    token_endpoint_auth_method: str = "none"


class TokenStorage(Protocol):
    """Where an ``OAuthClient`` keeps its tokens and client identities."""

    async def get_tokens(self) -> OAuthTokens | None: ...

    async def set_tokens(self, tokens: OAuthTokens | None) -> None: ...

    async def get_client(self, issuer: str) -> ClientInfo | None: ...

    async def set_client(self, issuer: str, info: ClientInfo) -> None: ...


class InMemoryTokenStorage:
    """The default ``TokenStorage``: kept for the life of the process."""

    def __init__(self) -> None:
        self.tokens: OAuthTokens | None = None
        self.clients: dict[str, ClientInfo] = {}

    async def get_tokens(self) -> OAuthTokens | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthTokens | None) -> None:
        self.tokens = tokens

    async def get_client(self, issuer: str) -> ClientInfo | None:
        return self.clients.get(issuer)

    async def set_client(self, issuer: str, info: ClientInfo) -> None:
        self.clients[issuer] = info
