"""``IntrospectionVerifier``: ask the authorization server about each token (RFC 7662).

Theory of operation
-------------------
A token the server has not seen lately is POSTed to the authorization
server's introspection endpoint (``application/x-www-form-urlencoded``,
``token`` and ``token_type_hint=access_token``), with the resource server's
own client credentials in HTTP Basic when it has them (RFC 7662 section
2.1: the endpoint must be protected). The answer is trusted only when it is
a JSON object whose ``active`` is ``true``, whose ``exp`` (if any) is still
ahead, and which names at least one audience (``aud``), since an MCP server
must reject tokens not issued for it (authorization.mdx, "Token Audience
Binding and Validation"); the HTTP server then checks that this resource is
among them. ``require_audience=False`` drops the last rule for
authorization servers that do not put the audience in introspection
answers, at the price of that guarantee.

Answers are kept in a bounded LRU cache keyed by the token's SHA-256
digest, for ``cache_ttl`` seconds at most and never past the token's
``exp``; an ``active: false`` answer is not cached (the AS decides again
next time). The request uses mcpwire's own HTTP client: no dependency is
added. Failures to reach the AS, or answers that are not JSON, raise
``IntrospectionError``: the HTTP server turns that into a 503, not a 401,
since the token was not found to be invalid.
"""

from __future__ import annotations

import base64
import collections
import time
import urllib.parse

import orjson

from ._auth_tokens import AccessToken, token_digest
from ._errors import AuthorizationError
from ._http_client_conn import HTTPClient
from ._http_client_net import URL
from ._http_client_sock import HTTPError
from .sansio import _oauth as o
from .sansio._json import JSONValue

__all__ = ("IntrospectionError", "IntrospectionVerifier")

#: The largest introspection answer read (they are a few hundred bytes).
MAX_ANSWER_SIZE = 64 * 1024


class IntrospectionError(Exception):
    """The authorization server could not say whether a token is valid."""


class IntrospectionVerifier:
    """A ``TokenVerifier`` that asks an RFC 7662 introspection endpoint.

    Args:
        endpoint: the introspection URL; ``https``, or ``http`` on a loopback
            host only (authorization.mdx: AS endpoints MUST use HTTPS).
        client_id, client_secret: the resource server's credentials at the
            AS, sent with HTTP Basic (both or neither).
        require_audience: refuse tokens whose answer names no audience.
        cache_size: answers kept at most; ``cache_ttl``: seconds each is kept.
        timeout: seconds to wait for the AS.
        client: an ``HTTPClient`` to use (default: one of its own).
    """

    def __init__(
        self,
        endpoint: str,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        require_audience: bool = True,
        cache_size: int = 1024,
        cache_ttl: float = 60.0,
        timeout: float = 10.0,
        client: HTTPClient | None = None,
    ) -> None:
        url = URL.parse(endpoint)
        try:
            o.check_tls(endpoint, "the introspection endpoint")
        except AuthorizationError:
            raise ValueError(
                "the introspection endpoint must use https (http only on loopback)"
            ) from None
        if (client_id is None) != (client_secret is None):
            raise ValueError("give both client_id and client_secret, or neither")
        if cache_size < 0 or cache_ttl < 0:
            raise ValueError("cache_size and cache_ttl must not be negative")
        self.endpoint = url
        self.require_audience = require_audience
        self.cache_size = cache_size
        self.cache_ttl = cache_ttl
        self.timeout = timeout
        self._client = client or HTTPClient()
        self._headers = [
            ("content-type", "application/x-www-form-urlencoded"),
            ("accept", "application/json"),
        ]
        if client_id is not None and client_secret is not None:
            # RFC 6749 section 2.3.1: each part form-encoded before base64.
            pair = f"{_form(client_id)}:{_form(client_secret)}".encode()
            self._headers.append(("authorization", "Basic " + base64.b64encode(pair).decode()))
        self._cache: collections.OrderedDict[bytes, tuple[float, AccessToken]] = (
            collections.OrderedDict()
        )
        #: Introspection requests sent (for tests and monitoring).
        self.requests = 0

    async def verify(self, token: str) -> AccessToken | None:
        key = token_digest(token)
        now = time.monotonic()
        cached = self._cache.get(key)
        if cached is not None:
            until, found = cached
            if until > now and (found.expires_at is None or found.expires_at > time.time()):
                self._cache.move_to_end(key)
                return found
            del self._cache[key]
        answer = await self._introspect(token)
        found_token = self._accept(answer)
        if found_token is not None and self.cache_size and self.cache_ttl:
            self._cache[key] = (now + self.cache_ttl, found_token)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
        return found_token

    async def aclose(self) -> None:
        """Close the HTTP client's pooled connections."""
        await self._client.aclose()

    async def _introspect(self, token: str) -> dict[str, JSONValue]:
        body = urllib.parse.urlencode({"token": token, "token_type_hint": "access_token"})
        self.requests += 1
        post = self._client.request(
            "POST", self.endpoint, self._headers, body.encode(), timeout=self.timeout
        )
        try:
            async with await post as response:
                data = await response.read_body(MAX_ANSWER_SIZE)
        except (HTTPError, OSError, TimeoutError) as exc:
            raise IntrospectionError(f"introspection at {self.endpoint} failed: {exc}") from exc
        if response.status != 200:
            raise IntrospectionError(
                f"introspection at {self.endpoint} answered HTTP {response.status}"
            )
        try:
            answer = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise IntrospectionError("the introspection answer is not JSON") from exc
        if not isinstance(answer, dict):
            raise IntrospectionError("the introspection answer is not a JSON object")
        return answer

    def _accept(self, answer: dict[str, JSONValue]) -> AccessToken | None:
        if answer.get("active") is not True:
            return None
        exp = answer.get("exp")
        expires_at: float | None = None
        if exp is not None:
            if not isinstance(exp, (int, float)) or isinstance(exp, bool):
                return None
            expires_at = float(exp)
            if expires_at <= time.time():
                return None
        aud = answer.get("aud")
        audience: tuple[str, ...]
        if isinstance(aud, str):
            audience = (aud,) if aud else ()
        elif isinstance(aud, list):
            audience = tuple(a for a in aud if isinstance(a, str) and a)
        else:
            audience = ()
        if self.require_audience and not audience:
            return None
        scope = answer.get("scope")
        client_id = answer.get("client_id")
        sub = answer.get("sub")
        return AccessToken(
            client_id=client_id if isinstance(client_id, str) else "",
            scopes=tuple(scope.split()) if isinstance(scope, str) else (),
            expires_at=expires_at,
            audience=audience,
            subject=sub if isinstance(sub, str) else None,
            claims=answer,
        )


def _form(value: str) -> str:
    return urllib.parse.quote_plus(value)
