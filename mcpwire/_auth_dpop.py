"""DPoP proofs as a protected resource checks them (RFC 9449 §4.3, §7, §9, §11.1).

Theory of operation
-------------------
A DPoP-bound access token is worth nothing without the private key it is
bound to: the authorization server put the SHA-256 thumbprint of the
client's public key (RFC 7638) in the token, as ``cnf.jkt`` (RFC 9449 §6),
and the client sends, with every request, ``Authorization: DPoP <token>``
and a fresh *proof*: a JWT in the ``DPoP`` header, signed with that key,
naming this request (§4.2, §7.1). ``DPoPChecker.check`` is the resource
server's half, pure apart from its two bounded memories (the ``jti``s seen,
and the key that signs nonces): it takes what the request carried and
answers with the key's thumbprint, or raises ``DPoPError`` naming the
``error`` code the challenge carries and what was wrong.

The checks are RFC 9449 §4.3's list, with §7.1 for resources, in this order
(cheap ones before the signature, the nonce after everything else so that
a client asked for one knows its proof was otherwise good):

1. the token is bound to a key: its verified ``cnf.jkt`` (``invalid_token``
   without one: a token that is not DPoP-bound is a Bearer token, §7.1);
2. exactly one ``DPoP`` field; a well-formed JWT (``_jws.decode``, which
   refuses ``none``, the HMAC family, ``crit`` and oversize tokens); ``typ``
   is ``dpop+jwt``; ``alg`` is one this resource accepts; a ``jwk`` object;
3. the claims: ``jti`` a string (of at most ``MAX_JTI``), ``htm`` the
   request's method, ``htu`` the request's URL without query and fragment,
   compared after the normalization of RFC 3986 §6.2.2 and §6.2.3
   (``sansio._oauth.normalize_htu``, on the client's URL rules: case of
   scheme and host, percent-encoding, default port, empty path), ``iat``
   within ``window`` seconds of now either way (§11.1: a proof is usable
   only briefly); ``ath``, the base64url SHA-256 of the access token's
   ASCII (§4.2);
4. the ``jwk`` is a public key (``_jws.public_key`` refuses private
   members), and the signature verifies with it (``_jws.verify``);
5. the binding: the ``jwk``'s thumbprint equals the token's ``cnf.jkt``
   (§6.1, ``invalid_token`` otherwise: the token was stolen or misused);
6. the nonce, when this resource asks for them (§9): a proof without one,
   or with one this process did not issue or issued over ``nonce_lifetime``
   seconds ago, gets ``use_dpop_nonce`` and a fresh nonce for the client's
   retry (``nonce()``); a proof whose nonce is past half its lifetime passes,
   and the answer offers the next one (``DPoP-Nonce``, §8.2), so a client
   that takes it is never refused for a nonce that ran out;
7. replay (§11.1): the ``jti`` was not seen with this key while its proof
   could still be accepted.

Nonces are stateless: ``base64url(t || HMAC-SHA256(k, t)[:16])``, ``t`` the
issue time in seconds (8 bytes, big-endian) and ``k`` 32 random bytes made
on first use and kept for the life of the checker. Nothing is stored per
nonce, and a nonce is good on every connection of the process for its
lifetime. Processes serving one resource behind a load balancer must
share ``nonce_key`` (``ResourceServerAuth(dpop_nonce_key=...)``): otherwise
a client sent to another process than the one that gave its nonce is
refused, and retries only once.

Replay memory is bounded: at most ``replay_capacity`` entries (a 32-byte
digest of thumbprint and ``jti``, and when the proof leaves the window),
about 220 bytes each, so 22 MB at the default 100,000. Entries are
dropped once their proof is too old to be accepted anyway: from the
oldest on, and all of them when the memory is full (at most once a
second). When it is full of live entries the oldest is dropped and a
floor rises to its ``iat``: from then on, proofs with an ``iat`` at or
below the floor are refused as possibly replayed, so replay protection
never lapses; under a flood of valid proofs the usable window narrows.
Only requests with a valid token and a correctly signed proof of the
key the token is bound to get an entry.

Signature checks need the ``cryptography`` package (``mcpwire[jwt]``),
imported when the first proof is checked, so a server that never sees a
DPoP request never loads it. Without it
installed, ``ResourceServerAuth`` takes Bearer tokens only (its default
``dpop="allowed"`` turns ``"off"``) and refuses ``dpop="required"``.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import itertools
import os
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from .sansio import _oauth as o
from .sansio._b64url import b64url_decode, b64url_encode

if TYPE_CHECKING:
    from ._auth_tokens import AccessToken

__all__ = (
    "DEFAULT_NONCE_LIFETIME",
    "DEFAULT_REPLAY_CAPACITY",
    "DEFAULT_WINDOW",
    "DPoPChecker",
    "DPoPError",
    "bound_key",
    "proof_values",
    "request_url",
    "signatures_available",
)

#: Seconds a proof's ``iat`` may lie before or after the server's clock.
DEFAULT_WINDOW = 60.0
#: Seconds a server-provided nonce stays good.
DEFAULT_NONCE_LIFETIME = 300.0
#: The most ``jti``s remembered at once (about 22 MB when full).
DEFAULT_REPLAY_CAPACITY = 100_000
#: The longest ``jti`` accepted: far above any random identifier.
MAX_JTI = 256

_NONCE_TIME = 8
_NONCE_MAC = 16


class DPoPError(Exception):
    """A request's DPoP credentials were refused.

    ``error`` is the code of the ``DPoP`` challenge (``invalid_dpop_proof``,
    ``invalid_token`` or ``use_dpop_nonce``, RFC 9449 §7.1, §9) and the
    message its ``error_description``.
    """

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


def _proof_error(description: str) -> DPoPError:
    return DPoPError("invalid_dpop_proof", description)


def bound_key(token: AccessToken) -> str | None:
    """The thumbprint a token is bound to (its ``cnf.jkt``, RFC 9449 §6), if any."""
    cnf = token.claims.get("cnf")
    jkt = cnf.get("jkt") if isinstance(cnf, dict) else None
    return jkt if isinstance(jkt, str) and jkt else None


def signatures_available() -> bool:
    """Whether the ``cryptography`` package can be imported (without importing it)."""
    if "cryptography" in sys.modules:
        return sys.modules["cryptography"] is not None
    try:
        return importlib.util.find_spec("cryptography") is not None
    except (ImportError, ValueError):
        return False


def request_url(identifier: str, mount: str, path: str) -> str:
    """The URL of a request to ``path`` on the server whose endpoint, mounted at
    ``mount`` on its side, is the resource ``identifier``: the identifier for
    the endpoint itself, else its scheme and authority with ``path`` under the
    same prefix (a proxy may publish ``/mcp`` as ``/public/mcp``)."""
    parts = urlsplit(identifier)
    if path == mount:
        return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))
    own, mount = parts.path.rstrip("/"), mount.rstrip("/")
    prefix = own[: len(own) - len(mount)] if mount and own.endswith(mount) else ""
    return urlunsplit((parts.scheme, parts.netloc, prefix + path, "", ""))


def proof_values(field: str | None, repeated: bool) -> list[str]:
    """The ``DPoP`` field values of a request whose head joined repeated fields
    with ", " (RFC 9110 section 5.3): no JWT holds a comma, so they split apart."""
    if field is None:
        return []
    return field.split(",") if repeated else [field]


class DPoPChecker:
    """Checks DPoP proofs for one protected resource (see the module docstring).

    Args:
        algorithms: the proof signature algorithms accepted (default: all of
            ``_jws.ALGORITHMS``; others are refused whatever is listed).
        window: how far a proof's ``iat`` may lie from now, either way, in seconds.
        nonce: ask for server-provided nonces (RFC 9449 §9).
        nonce_lifetime: how long a nonce stays good, in seconds.
        nonce_key: the HMAC key of nonces (default: 32 random bytes, made
            on first use); share one across processes serving one resource.
        replay_capacity: the most ``jti``s remembered at once.
    """

    def __init__(
        self,
        *,
        algorithms: Iterable[str] | None = None,
        window: float = DEFAULT_WINDOW,
        nonce: bool = False,
        nonce_lifetime: float = DEFAULT_NONCE_LIFETIME,
        nonce_key: bytes | None = None,
        replay_capacity: int = DEFAULT_REPLAY_CAPACITY,
    ) -> None:
        from ._jws import ALGORITHMS  # light: _jws loads cryptography on first use only

        chosen = ALGORITHMS if algorithms is None else frozenset(algorithms)
        unknown = sorted(chosen - ALGORITHMS)
        if isinstance(algorithms, str) or unknown or not chosen:
            raise ValueError(
                f"DPoP algorithms must be some of {' '.join(sorted(ALGORITHMS))}"
                + (f" (not {' '.join(unknown)})" if unknown else "")
            )
        if window <= 0 or nonce_lifetime <= 0 or replay_capacity < 1:
            raise ValueError("window, nonce_lifetime and replay_capacity must be positive")
        if nonce_key is not None and len(nonce_key) < 16:
            raise ValueError("nonce_key must be at least 16 bytes")
        self.algorithms = chosen
        self.window = float(window)
        self.nonces = nonce
        self.nonce_lifetime = float(nonce_lifetime)
        self.replay_capacity = replay_capacity
        self._nonce_key = nonce_key
        #: digest of (thumbprint, jti) -> (time its proof leaves the window, its iat)
        self._seen: dict[bytes, tuple[float, float]] = {}
        #: Proofs with an ``iat`` at or below this are refused (see the module docstring).
        self._floor = float("-inf")
        self._swept = float("-inf")

    @property
    def algs(self) -> str:
        """The ``algs`` parameter of a ``DPoP`` challenge (RFC 9449 §7.1)."""
        return " ".join(sorted(self.algorithms))

    # -- nonces (RFC 9449 §9) ---------------------------------------------------------------

    def _mac(self, stamp: bytes) -> bytes:
        if self._nonce_key is None:
            self._nonce_key = os.urandom(32)
        return hmac.new(self._nonce_key, stamp, hashlib.sha256).digest()[:_NONCE_MAC]

    def nonce(self, now: float | None = None) -> str:
        """A fresh nonce, for a ``DPoP-Nonce`` header."""
        stamp = int(time.time() if now is None else now).to_bytes(_NONCE_TIME, "big")
        return b64url_encode(stamp + self._mac(stamp))

    def nonce_valid(self, value: object, now: float | None = None) -> bool:
        """Whether ``value`` is a nonce of this checker, issued at most
        ``nonce_lifetime`` seconds ago."""
        age = self._nonce_age(value, now)
        return age is not None and -1 <= age <= self.nonce_lifetime

    def _nonce_age(self, value: object, now: float | None) -> float | None:
        """Seconds since this checker issued ``value``; None if it did not."""
        if not isinstance(value, str) or len(value) > 64:
            return None
        try:
            raw = b64url_decode(value)
        except ValueError:
            return None
        if len(raw) != _NONCE_TIME + _NONCE_MAC:
            return None
        stamp, mac = raw[:_NONCE_TIME], raw[_NONCE_TIME:]
        if not hmac.compare_digest(mac, self._mac(stamp)):
            return None
        return (time.time() if now is None else now) - int.from_bytes(stamp, "big")

    # -- proofs (RFC 9449 §4.3) -------------------------------------------------------------

    def check(
        self,
        *,
        method: str,
        url: str,
        proofs: Sequence[str],
        access_token: str,
        token: AccessToken,
        now: float | None = None,
        renew: list[str] | None = None,
    ) -> str:
        """Check the ``DPoP`` field values ``proofs`` of a request ``method url``
        that presented ``access_token`` (verified as ``token``) under the DPoP
        scheme; the thumbprint of the proof's key. With nonces on, a fresh one is
        appended to ``renew`` when the proof's is past half its lifetime.

        Raises:
            DPoPError: a check failed (see the module docstring for the order).
        """
        from . import _jws
        from ._jose import jwk_thumbprint

        now = time.time() if now is None else now
        jkt = bound_key(token)
        if jkt is None:
            raise DPoPError("invalid_token", "the access token is not bound to a DPoP key")
        if len(proofs) != 1:
            raise _proof_error("a request carries exactly one DPoP proof")
        try:
            jwt = _jws.decode(proofs[0].strip())
        except _jws.JWSError as exc:
            raise _proof_error(f"the DPoP proof is not a valid JWS: {exc}") from None
        header, claims = jwt.header, jwt.claims
        typ = header.get("typ")
        if not isinstance(typ, str) or typ.lower() != "dpop+jwt":
            raise _proof_error("the DPoP proof's typ is not dpop+jwt")
        if jwt.alg not in self.algorithms:
            raise _proof_error(f"DPoP proofs signed with {jwt.alg} are not accepted")
        jwk = header.get("jwk")
        if not isinstance(jwk, dict):
            raise _proof_error("the DPoP proof's header has no jwk")
        self._claims(claims, method, url, access_token, now)
        try:
            key = _jws.public_key(jwk)
            _jws.verify(jwt, key)
            thumbprint = jwk_thumbprint(jwk)
        except (_jws.JWSError, ValueError, KeyError, TypeError) as exc:
            raise _proof_error(f"the DPoP proof's key or signature is refused: {exc}") from None
        if thumbprint != jkt:
            raise DPoPError("invalid_token", "the access token is bound to another key")
        if self.nonces and not self.nonce_valid(claims.get("nonce"), now):
            what = "a stale or unknown" if "nonce" in claims else "no"
            raise DPoPError("use_dpop_nonce", f"the DPoP proof carries {what} nonce")
        self._remember(thumbprint, claims["jti"], float(claims["iat"]), now)
        if renew is not None and self.nonces:
            # Past half its life, the answer offers the next nonce (§8.2, §9), so a
            # client that takes it never meets use_dpop_nonce.
            age = self._nonce_age(claims.get("nonce"), now)
            if age is not None and age > self.nonce_lifetime / 2:
                renew.append(self.nonce(now))
        return thumbprint

    def _claims(
        self, claims: Mapping[str, Any], method: str, url: str, access_token: str, now: float
    ) -> None:
        jti = claims.get("jti")
        if not isinstance(jti, str) or not jti or len(jti) > MAX_JTI:
            raise _proof_error("the DPoP proof's jti is missing or not a short string")
        if claims.get("htm") != method:
            raise _proof_error(f"the DPoP proof's htm is not {method}")
        htu = claims.get("htu")
        want = o.normalize_htu(url)
        if not isinstance(htu, str) or want is None or o.normalize_htu(htu) != want:
            raise _proof_error("the DPoP proof's htu is not this request's URL")
        iat = claims.get("iat")
        if not isinstance(iat, (int, float)) or isinstance(iat, bool):
            raise _proof_error("the DPoP proof's iat is missing or not a number")
        if abs(now - iat) > self.window:
            raise _proof_error(f"the DPoP proof's iat is more than {self.window:g} s from now")
        if iat <= self._floor:
            raise _proof_error("the DPoP proof is too old to be checked for replay")
        ath = claims.get("ath")
        if not isinstance(ath, str) or ath != o.access_token_hash(access_token):
            raise _proof_error("the DPoP proof's ath is missing or not the access token's hash")

    def _remember(self, thumbprint: str, jti: str, iat: float, now: float) -> None:
        seen = self._seen
        key = hashlib.sha256(f"{thumbprint} {jti}".encode()).digest()
        found = seen.get(key)
        if found is not None and found[0] >= now:
            raise _proof_error("the DPoP proof was used before (its jti is replayed)")
        # Drop what can no longer be replayed: insertion order is nearly expiry
        # order (iat is within the window of arrival), so this stops early.
        expired = []
        for old, (until, _) in itertools.islice(seen.items(), 64):
            if until >= now:
                break
            expired.append(old)
        for old in expired:
            del seen[old]
        if len(seen) >= self.replay_capacity and now - self._swept >= 1:
            # Full: sweep every entry out of the window (at most once a second,
            # so a flood of live entries costs no sweep per request).
            self._swept = now
            for old in [old for old, (until, _) in seen.items() if until < now]:
                del seen[old]
        while len(seen) >= self.replay_capacity:
            oldest = next(iter(seen))
            self._floor = max(self._floor, seen.pop(oldest)[1])
        seen[key] = (iat + self.window, iat)

    def __len__(self) -> int:
        """How many ``jti``s are remembered now."""
        return len(self._seen)
