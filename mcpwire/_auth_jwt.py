"""``JWTVerifier``: JWT access tokens checked locally, against the issuer's published keys.

Theory of operation
-------------------
Many authorization servers issue access tokens as signed JWTs (RFC 9068) and
publish their public keys as a JWK Set (RFC 7517 section 5) at the
``jwks_uri`` of their metadata (RFC 8414 section 2). A resource server can
then check a token without asking anyone: no round trip per token, and no
outage when the authorization server is briefly away.

A token is accepted only when all of these hold, else ``verify`` returns
``None`` and the request gets ``401 invalid_token``:

* it is a compact JWS (``_jws.decode``: asymmetric algorithms only, no
  ``crit``, bounded size) whose ``alg`` is one of ``algorithms``;
* its ``typ`` is one of ``token_types``: by default none, ``JWT`` or
  ``at+jwt`` (RFC 9068 section 2.1), so that a DPoP proof, a logout token or
  another explicitly typed JWT signed by the same keys cannot pass for an
  access token (RFC 8725 section 3.11);
* a key of the set verifies it: the one its ``kid`` names, or, without a
  ``kid``, one of the keys that fit its algorithm. A key is usable only for
  what it declares: ``use`` (if any) is ``sig``, ``key_ops`` (if any) has
  ``verify``, ``alg`` (if any) is the token's;
* ``iss`` is the configured issuer, as strings (RFC 9068 section 4);
* ``exp`` is present and ahead, ``nbf`` (if any) is past and ``iat`` (if
  any) is not in the future, each allowing ``leeway`` seconds of clock skew;
* ``aud`` names ``audience`` when one is configured, and is present at all
  unless ``require_audience=False``. The HTTP server checks besides that it
  names this resource (RFC 8707), so that a token for another server is
  refused even when no audience was configured here.

Scopes come from ``scope`` (space-separated, RFC 9068 section 2.2.3) or
``scp`` (a list or a string, as some servers write it); the client from
``client_id``, else ``azp``. Every claim is kept in ``AccessToken.claims``
(DPoP's ``cnf`` among them).

The key set is fetched from ``jwks_uri`` (found in the issuer's metadata
when not given; ``https``, or ``http`` on a loopback host), at most
``MAX_JWKS_SIZE`` bytes and ``MAX_KEYS`` keys, and kept for ``cache_ttl``
seconds. A ``kid`` that is not in it makes the verifier fetch it again, since
the server may have rotated its keys, but not more often than once per
``refresh_interval`` seconds, so random ``kid`` values cannot make it hammer
the server. One fetch serves every request waiting on it. When a fetch
fails, keys fetched earlier stay in use; only a token that none of them can
check, while the server cannot be reached, makes ``verify`` raise
``JWKSError``, which the HTTP server answers with 503 rather than 401 (the
token was not found to be invalid).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

import anyio
import orjson

from ._auth_tokens import AccessToken
from ._errors import AuthorizationError
from ._http_client_conn import HTTPClient, HTTPResponse
from ._http_client_net import URL
from ._jws import ALGORITHMS, JWSError, SignedJWT, decode, public_key, verify
from ._oauth_discovery import exchange, get_json
from .sansio import _oauth as o
from .sansio._json import JSONValue

__all__ = ("MAX_JWKS_SIZE", "MAX_KEYS", "JWKSError", "JWTVerifier")

logger = logging.getLogger("mcpwire.auth")

#: The largest JWK Set or metadata document read (real ones are a few kB).
MAX_JWKS_SIZE = 256 * 1024
#: Keys kept from one JWK Set; the rest are ignored (real sets hold a handful).
MAX_KEYS = 64
#: What ``typ`` may say by default (compared without case and ``application/``).
DEFAULT_TOKEN_TYPES: tuple[str | None, ...] = (None, "jwt", "at+jwt")
#: The most keys tried for a token that names no ``kid``.
_MAX_TRIES = 8


class JWKSError(Exception):
    """The issuer's keys could not be fetched, so a token could not be checked."""


def _family(alg: str) -> tuple[str, str | None]:
    """The ``kty`` (and curve) a key needs for ``alg``."""
    if alg.startswith(("RS", "PS")):
        return "RSA", None
    if alg.startswith("ES"):
        return "EC", {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}[alg]
    return "OKP", "Ed25519"


class _Key:
    __slots__ = ("alg", "crv", "key", "kid", "kty")

    def __init__(self, jwk: Mapping[str, JSONValue]) -> None:
        self.key = public_key(jwk)
        kid, alg = jwk.get("kid"), jwk.get("alg")
        self.kid = kid if isinstance(kid, str) else None
        self.alg = alg if isinstance(alg, str) else None
        self.kty = jwk.get("kty")
        self.crv = jwk.get("crv")

    def fits(self, alg: str) -> bool:
        if self.alg is not None and self.alg != alg:
            return False
        kty, crv = _family(alg)
        return self.kty == kty and (crv is None or self.crv == crv)


def _usable(jwk: Mapping[str, JSONValue]) -> bool:
    use, ops = jwk.get("use"), jwk.get("key_ops")
    if use is not None and use != "sig":
        return False
    return ops is None or (isinstance(ops, list) and "verify" in ops)


def _keys(doc: object) -> list[_Key]:
    """The usable signature keys of a JWK Set; malformed or unsupported ones are skipped."""
    if not isinstance(doc, dict) or not isinstance(doc.get("keys"), list):
        raise JWKSError("the JWK Set is not an object with a 'keys' list")
    keys: list[_Key] = []
    for jwk in doc["keys"][:MAX_KEYS]:
        if not isinstance(jwk, dict) or not _usable(jwk):
            continue
        try:
            keys.append(_Key(jwk))
        except JWSError as exc:
            logger.warning("auth: skipped a key of the JWK Set: %s", exc)
    return keys


def _number(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise JWSError(f"claim {name!r} is not a number")
    return float(value)


def _strings(value: object) -> tuple[str, ...]:
    """A string or a list of strings as a tuple; empty strings and other values dropped."""
    if isinstance(value, str):
        return (value,) if value else ()
    if isinstance(value, list):
        return tuple(v for v in value if isinstance(v, str) and v)
    return ()


def _type(typ: object) -> str | None:
    if not isinstance(typ, str):
        return None if typ is None else "?"
    typ = typ.lower()
    return typ[len("application/") :] if typ.startswith("application/") else typ


class JWTVerifier:
    """A ``TokenVerifier`` for JWT access tokens (see the module docstring).

    Args:
        issuer: the authorization server's issuer identifier; ``iss`` must equal it.
        audience: what ``aud`` must name (one of them, when several are given).
        jwks_uri: where the JWK Set is; by default the ``jwks_uri`` of the
            issuer's metadata (RFC 8414, then OpenID Connect discovery).
        jwks: a JWK Set to use as it is, instead of fetching one.
        algorithms: the signature algorithms accepted.
        token_types: the ``typ`` values accepted (``None``: no ``typ``).
        require_audience: refuse tokens without ``aud``.
        leeway: seconds of clock skew allowed for ``exp``, ``nbf`` and ``iat``.
        cache_ttl: seconds a fetched key set is used before it is fetched again.
        refresh_interval: the least seconds between two fetches for unknown keys.
        timeout: seconds to wait for the authorization server.
        client: an ``HTTPClient`` to fetch with (default: one of its own).
    """

    def __init__(
        self,
        issuer: str,
        *,
        audience: str | Sequence[str] | None = None,
        jwks_uri: str | None = None,
        jwks: Mapping[str, JSONValue] | None = None,
        algorithms: Sequence[str] = ("RS256", "ES256", "PS256", "EdDSA"),
        token_types: Sequence[str | None] = DEFAULT_TOKEN_TYPES,
        require_audience: bool = True,
        leeway: float = 60.0,
        cache_ttl: float = 3600.0,
        refresh_interval: float = 30.0,
        timeout: float = 10.0,
        client: HTTPClient | None = None,
    ) -> None:
        unknown = [alg for alg in algorithms if alg not in ALGORITHMS]
        if unknown or not algorithms:
            raise ValueError(
                f"unsupported algorithms {unknown!r}; choose from {sorted(ALGORITHMS)}"
            )
        if jwks_uri is not None:
            _fetchable(jwks_uri, "jwks_uri")
        if jwks is None and jwks_uri is None:
            _fetchable(issuer, "the issuer")
        if leeway < 0 or cache_ttl < 0 or refresh_interval < 0:
            raise ValueError("leeway, cache_ttl and refresh_interval must not be negative")
        self.issuer = issuer
        self.audience = (audience,) if isinstance(audience, str) else tuple(audience or ())
        self.jwks_uri = jwks_uri
        self.algorithms = frozenset(algorithms)
        self.token_types = frozenset(_type(t) for t in token_types)
        self.require_audience = require_audience
        self.leeway = leeway
        self.cache_ttl = cache_ttl
        self.refresh_interval = refresh_interval
        self.timeout = timeout
        self._static = jwks is not None
        self._keys: list[_Key] = _keys(dict(jwks)) if jwks is not None else []
        self._fetched_at = -float("inf")
        self._client = client
        self._lock = anyio.Lock()
        #: Key set fetches made (for tests and monitoring).
        self.fetches = 0

    async def verify(self, token: str) -> AccessToken | None:
        try:
            jwt = decode(token)
        except JWSError as exc:
            logger.info("auth: refused a JWT: %s", exc)
            return None
        if jwt.alg not in self.algorithms or _type(jwt.header.get("typ")) not in self.token_types:
            logger.info("auth: refused a JWT of alg %r, typ %r", jwt.alg, jwt.header.get("typ"))
            return None
        if not await self._check_signature(jwt):
            return None
        try:
            return self._accept(jwt.claims)
        except JWSError as exc:
            logger.info("auth: refused a JWT: %s", exc)
            return None

    async def aclose(self) -> None:
        """Close the HTTP client's pooled connections (when it made its own)."""
        if self._client is not None:
            await self._client.aclose()

    # -- keys ------------------------------------------------------------------------------

    def _candidates(self, jwt: SignedJWT) -> list[_Key]:
        kid = jwt.header.get("kid")
        if isinstance(kid, str):
            return [key for key in self._keys if key.kid == kid and key.fits(jwt.alg)]
        return [key for key in self._keys if key.fits(jwt.alg)][:_MAX_TRIES]

    async def _check_signature(self, jwt: SignedJWT) -> bool:
        stale = time.monotonic() - self._fetched_at >= self.cache_ttl
        if not self._static and stale:
            await self._refresh(forced=False)
        candidates = self._candidates(jwt)
        if not candidates and not self._static and await self._refresh(forced=True):
            candidates = self._candidates(jwt)
        for key in candidates:
            try:
                verify(jwt, key.key)
                return True
            except JWSError:
                continue
        logger.info("auth: no key of the issuer verifies the JWT (kid %r)", jwt.header.get("kid"))
        return False

    async def _refresh(self, *, forced: bool) -> bool:
        """Fetch the key set again if it is due; True when a fetch succeeded.

        A fetch failure raises ``JWKSError`` only when there are no keys to go on
        with (see the module docstring); otherwise it is logged.
        """
        started = time.monotonic()
        async with self._lock:
            if self._fetched_at >= started:
                return True  # another request fetched while this one waited
            since = time.monotonic() - self._fetched_at
            if since < (self.refresh_interval if forced else self.cache_ttl):
                return False
            try:
                keys = await self._fetch()
            except JWKSError as exc:
                if not self._keys or forced:
                    raise
                logger.warning("auth: kept the previous keys: %s", exc)
                return False
            self._keys = keys
            self._fetched_at = time.monotonic()
            return True

    async def _fetch(self) -> list[_Key]:
        self.fetches += 1
        try:
            if self.jwks_uri is None:
                self.jwks_uri = await self._discover()
            status, _, body = await exchange(
                self._request,
                "GET",
                self.jwks_uri,
                [("Accept", "application/json")],
                None,
                self.timeout,
                limit=MAX_JWKS_SIZE,
            )
        except AuthorizationError as exc:
            raise JWKSError(f"fetching the JWK Set failed: {exc}") from None
        if status != 200:
            raise JWKSError(f"fetching the JWK Set from {self.jwks_uri}: HTTP {status}")
        try:
            return _keys(orjson.loads(body))
        except orjson.JSONDecodeError:
            raise JWKSError(f"the JWK Set at {self.jwks_uri} is not JSON") from None

    async def _discover(self) -> str:
        """``jwks_uri`` from the issuer's metadata, found where the client looks
        (``_oauth_discovery``), its ``issuer`` checked."""
        for url in o.as_metadata_urls(self.issuer):
            doc = await get_json(self._request, url, "authorization server metadata", self.timeout)
            if doc is None:
                continue
            if doc.get("issuer") != self.issuer:
                raise JWKSError(f"the metadata at {url} is not the issuer {self.issuer!r}'s")
            uri = doc.get("jwks_uri")
            if not isinstance(uri, str):
                raise JWKSError(f"the metadata at {url} names no jwks_uri")
            return _fetchable(uri, "jwks_uri", error=JWKSError)
        raise JWKSError(f"no authorization server metadata found for {self.issuer!r}")

    def _request(
        self, method: str, url: str, headers: list[tuple[str, str]], body: bytes | None
    ) -> Awaitable[HTTPResponse]:
        if self._client is None:
            self._client = HTTPClient()
        return self._client.request(method, URL.parse(url), headers, body)

    # -- claims ----------------------------------------------------------------------------

    def _accept(self, claims: dict[str, Any]) -> AccessToken | None:
        if claims.get("iss") != self.issuer:
            raise JWSError(f"issuer {claims.get('iss')!r} is not {self.issuer!r}")
        now = time.time()
        exp = _number(claims, "exp")
        if exp is None:
            raise JWSError("the token has no 'exp'")
        if exp + self.leeway <= now:
            raise JWSError("the token has expired")
        nbf = _number(claims, "nbf")
        if nbf is not None and nbf - self.leeway > now:
            raise JWSError("the token is not valid yet ('nbf')")
        iat = _number(claims, "iat")
        if iat is not None and iat - self.leeway > now:
            raise JWSError("the token was issued in the future ('iat')")
        audience = _strings(claims.get("aud"))
        if self.require_audience and not audience:
            raise JWSError("the token has no 'aud'")
        if self.audience and not set(self.audience) & set(audience):
            raise JWSError(f"the token's audience {list(audience)} is not {list(self.audience)}")
        scope = claims.get("scope")
        scopes = tuple(scope.split()) if isinstance(scope, str) else ()
        if not scopes:
            scp = claims.get("scp")
            scopes = tuple(scp.split()) if isinstance(scp, str) else _strings(scp)
        client = claims.get("client_id", claims.get("azp"))
        sub = claims.get("sub")
        return AccessToken(
            client_id=client if isinstance(client, str) else "",
            scopes=scopes,
            expires_at=exp,
            audience=audience,
            subject=sub if isinstance(sub, str) else None,
            claims=claims,
        )


def _fetchable(url: str, what: str, *, error: type[Exception] = ValueError) -> str:
    """``url`` if it is https, or http on a loopback host (AS endpoints MUST use
    https: ``sansio._oauth.check_tls``)."""
    try:
        o.check_tls(url, what)
    except AuthorizationError as exc:
        raise error(f"{exc} (https, or http on loopback only)") from None
    return url
