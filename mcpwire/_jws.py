"""Checking signed JWTs: compact JWS (RFC 7515) against public JWKs (RFC 7517).

Theory of operation
-------------------
A protected resource checks two kinds of signed JWTs: access tokens in the
JWT profile (RFC 9068), against its authorization server's published keys,
and DPoP proofs (RFC 9449), against the key each proof carries. Both arrive
in the compact serialization ``header . payload . signature``, base64url
without padding, and both are attacker-supplied until the signature checks
out, so ``decode`` is strict:

* at most ``MAX_JWT_SIZE`` bytes, exactly three parts, the strict base64url
  alphabet (no padding, no whitespace), and a JSON object on both sides;
* ``alg`` must be one of ``ALGORITHMS``: asymmetric signatures only. ``none``
  and the HMAC family are refused whatever the caller allows, which closes
  the classic confusions (an unsigned token; an RSA public key used as an
  HMAC secret);
* a ``crit`` header is refused: no extension is understood here, and RFC
  7515 section 4.1.11 makes a token listing one it does not understand
  invalid (this also refuses the unencoded payloads of RFC 7797).

``public_key`` turns a JWK into a key object, refusing private members (a
JWK that carries them was published by mistake or is a trap) and RSA keys
under 2048 bits; ``verify`` then checks that the key's type fits the
algorithm (``kty`` and curve) before it checks the signature, so a key
cannot be used with an algorithm it was not made for. ECDSA signatures are
the fixed-width ``r || s`` of RFC 7518 section 3.4; EdDSA is Ed25519 (RFC
8037).

The signature arithmetic is the ``cryptography`` package's, imported on first
use (the optional extra ``mcpwire[jwt]``), as for signing in ``_jose``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import orjson

from ._jose import EC_ALGS, _crypto, digest_of, rsa_padding
from .sansio._b64url import b64url_decode

__all__ = ("ALGORITHMS", "MAX_JWT_SIZE", "JWSError", "SignedJWT", "decode", "public_key", "verify")

#: The signature algorithms checked here (RFC 7518 section 3.1, RFC 8037).
ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
#: The largest JWT accepted, in bytes: far above real access tokens and proofs
#: (a few hundred bytes to a few kB), low enough that parsing one costs little.
MAX_JWT_SIZE = 16 * 1024

_PART = re.compile(r"[A-Za-z0-9_-]*")
_PRIVATE_MEMBERS = ("d", "p", "q", "dp", "dq", "qi", "oth", "k")


class JWSError(ValueError):
    """A JWT is malformed, or its signature does not verify; the message says which."""


class SignedJWT:
    """A decoded compact JWS whose signature has not been checked yet."""

    __slots__ = ("claims", "header", "signature", "signing_input")

    def __init__(
        self,
        header: dict[str, Any],
        claims: dict[str, Any],
        signing_input: bytes,
        signature: bytes,
    ) -> None:
        self.header = header
        self.claims = claims
        self.signing_input = signing_input
        self.signature = signature

    @property
    def alg(self) -> str:
        alg: str = self.header["alg"]
        return alg


def _part(text: str, what: str) -> bytes:
    if not _PART.fullmatch(text):
        raise JWSError(f"the JWT {what} is not base64url")
    try:
        return b64url_decode(text)
    except ValueError:
        raise JWSError(f"the JWT {what} is not base64url") from None


def _object(data: bytes, what: str) -> dict[str, Any]:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise JWSError(f"the JWT {what} is not JSON") from None
    if not isinstance(value, dict):
        raise JWSError(f"the JWT {what} is not a JSON object")
    return value


def decode(token: str) -> SignedJWT:
    """The parts of a compact JWS, checked as the module docstring says (not the signature)."""
    if len(token) > MAX_JWT_SIZE:
        raise JWSError(f"the JWT is longer than {MAX_JWT_SIZE} bytes")
    parts = token.split(".")
    if len(parts) != 3:
        raise JWSError("not a compact JWS (three dot-separated parts)")
    header = _object(_part(parts[0], "header"), "header")
    alg = header.get("alg")
    if alg not in ALGORITHMS:
        raise JWSError(f"JWS algorithm {alg!r} is not accepted")
    if "crit" in header:
        raise JWSError("the JWT header lists critical extensions")
    claims = _object(_part(parts[1], "payload"), "payload")
    signature = _part(parts[2], "signature")
    signing_input = (parts[0] + "." + parts[1]).encode("ascii")
    return SignedJWT(header, claims, signing_input, signature)


def _int(jwk: Mapping[str, object], name: str) -> int:
    value = jwk.get(name)
    if not isinstance(value, str) or not _PART.fullmatch(value) or not value:
        raise JWSError(f"JWK member {name!r} is missing or not base64url")
    return int.from_bytes(b64url_decode(value), "big")


def public_key(jwk: Mapping[str, object]) -> Any:
    """The public key of a JWK (RSA, EC P-256/384/521, OKP Ed25519)."""
    m = _crypto()
    leaked = [name for name in _PRIVATE_MEMBERS if name in jwk]
    if leaked:
        raise JWSError(f"the JWK carries private members ({', '.join(leaked)})")
    kty = jwk.get("kty")
    if kty == "RSA":
        n, e = _int(jwk, "n"), _int(jwk, "e")
        if n.bit_length() < 2048:
            raise JWSError("RSA keys under 2048 bits are refused")
        return m.rsa.RSAPublicNumbers(e, n).public_key()
    if kty == "EC":
        curves = {crv: getattr(m.ec, curve) for crv, curve, _ in EC_ALGS.values()}
        curve = curves.get(jwk.get("crv"))  # type: ignore[call-overload]
        if curve is None:
            raise JWSError(f"unsupported EC curve {jwk.get('crv')!r}")
        x, y = _int(jwk, "x"), _int(jwk, "y")
        try:
            return m.ec.EllipticCurvePublicNumbers(x, y, curve()).public_key()
        except ValueError:
            raise JWSError("the EC point is not on its curve") from None
    if kty == "OKP" and jwk.get("crv") == "Ed25519":
        text = jwk.get("x")
        raw = b64url_decode(text) if isinstance(text, str) and _PART.fullmatch(text) else b""
        if len(raw) != 32:
            raise JWSError("JWK member 'x' is not an Ed25519 key")
        return m.ed25519.Ed25519PublicKey.from_public_bytes(raw)
    raise JWSError(f"unsupported JWK (kty {kty!r}, crv {jwk.get('crv')!r})")


def verify(jwt: SignedJWT, key: Any) -> None:
    """Check ``jwt``'s signature with ``key`` (from ``public_key``); raises ``JWSError``."""
    m = _crypto()
    alg, data, signature = jwt.alg, jwt.signing_input, jwt.signature
    try:
        if alg.startswith(("RS", "PS")):
            if not isinstance(key, m.rsa.RSAPublicKey):
                raise JWSError(f"{alg} needs an RSA key")
            digest = digest_of(m, alg)
            key.verify(signature, data, rsa_padding(m, alg, digest), digest)
        elif alg.startswith("ES"):
            crv, curve, size = EC_ALGS[alg]
            if (
                not isinstance(key, m.ec.EllipticCurvePublicKey)
                or key.curve.name != getattr(m.ec, curve).name
            ):
                raise JWSError(f"{alg} needs an EC key on {crv}")
            if len(signature) != 2 * size:
                raise JWSError(f"an {alg} signature is {2 * size} bytes")
            r = int.from_bytes(signature[:size], "big")
            s = int.from_bytes(signature[size:], "big")
            der = m.utils.encode_dss_signature(r, s)
            key.verify(der, data, m.ec.ECDSA(digest_of(m, alg)))
        else:
            if not isinstance(key, m.ed25519.Ed25519PublicKey):
                raise JWSError("EdDSA needs an Ed25519 key")
            key.verify(signature, data)
    except m.InvalidSignature:
        raise JWSError("the JWT signature does not verify") from None
