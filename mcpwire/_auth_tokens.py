"""Access tokens as a protected resource sees them, and the verifiers that vouch for them.

``AccessToken`` is what a verifier learned about a token: who it was issued
to (``client_id``, ``subject``), what it allows (``scopes``), until when
(``expires_at``), and for which resources (``audience``, RFC 8707). It
never holds the token string itself: a token received by an MCP server is
for that server only and must not be passed on to anything upstream
(authorization.mdx, "Access Token Privilege Restriction").

``TokenVerifier`` is the one method a resource server needs; mcpwire ships
``StaticTokenVerifier`` (tokens known in advance, for tests and simple
deployments) here and ``IntrospectionVerifier`` (RFC 7662) in
``_auth_introspect``.

Handlers learn who is calling through ``Context.auth``: the HTTP server
puts an ``AuthCell`` in a context variable before it routes a request, and
the tasks that serve the request inherit it. A legacy session keeps the
cell of the request that started it and the server updates it with the
token of each later request on the session, so a handler always sees the
token its request came with (a refreshed one, with new scopes, included).
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from .sansio._json import JSONValue

__all__ = (
    "AccessToken",
    "AuthCell",
    "StaticTokenVerifier",
    "TokenVerifier",
    "current_auth",
    "current_cell",
    "enter_cell",
    "token_digest",
)


@dataclass(frozen=True)
class AccessToken:
    """A verified access token (never the token string itself).

    Attributes:
        client_id: the OAuth client the token was issued to.
        scopes: the scopes it grants.
        expires_at: when it expires (seconds since the epoch), if it does.
        audience: the resources it was issued for (``aud``, RFC 8707
            ``resource``); empty when the verifier vouches for it otherwise.
        subject: the resource owner (``sub``), when known.
        claims: everything else the verifier learned (introspection fields).
    """

    client_id: str
    scopes: tuple[str, ...] = ()
    expires_at: float | None = None
    audience: tuple[str, ...] = ()
    subject: str | None = None
    claims: Mapping[str, JSONValue] = field(default_factory=dict)

    @property
    def owner(self) -> tuple[str, str | None]:
        """Who a legacy session started with this token belongs to: (client, subject)."""
        return self.client_id, self.subject


class TokenVerifier(Protocol):
    """Checks an access token: its ``AccessToken``, or ``None`` when it is not valid.

    A verifier may raise when it cannot tell (its authorization server is
    unreachable): the request then gets 503, not 401, so the client does
    not throw away a token that may well be good.
    """

    async def verify(self, token: str) -> AccessToken | None: ...


def token_digest(token: str) -> bytes:
    """The SHA-256 of a token: how verifiers keep and look up tokens without
    holding the strings themselves."""
    # Imported here: this module is on every server's import path (``Context.auth``),
    # and hashlib's OpenSSL digests cost an idle server about 0.9 MB of RSS.
    import hashlib

    return hashlib.sha256(token.encode("utf-8")).digest()


class StaticTokenVerifier:
    """Tokens known in advance, mapped to what they grant.

    Tokens are kept and looked up by their SHA-256 digest: neither the table
    nor the time a lookup takes (which depends on the digest only) gives a
    token away.
    """

    def __init__(self, tokens: Mapping[str, AccessToken]) -> None:
        self._tokens = {token_digest(token): info for token, info in tokens.items()}

    async def verify(self, token: str) -> AccessToken | None:
        return self._tokens.get(token_digest(token))


class AuthCell:
    """The token of a request or a legacy session, as handlers see it."""

    __slots__ = ("owner", "token")

    def __init__(self, token: AccessToken) -> None:
        self.token = token
        #: Who the session is bound to: the first token's (client, subject).
        self.owner = token.owner


_cell: contextvars.ContextVar[AuthCell | None] = contextvars.ContextVar(
    "mcpwire_auth", default=None
)


def current_cell() -> AuthCell | None:
    """The cell of the request being served, if it was authorized."""
    return _cell.get()


def enter_cell(cell: AuthCell | None) -> None:
    """Make ``cell`` the current one for the rest of this task (and tasks it starts)."""
    _cell.set(cell)


def current_auth() -> AccessToken | None:
    """The access token of the request being served (``None`` without ``auth=``)."""
    cell = _cell.get()
    return cell.token if cell is not None else None
