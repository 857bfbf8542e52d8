"""Signed JWTs for the OAuth client: compact JWS (RFC 7515), JWKs (RFC 7517).

Theory of operation
-------------------
Two features of client authorization need an asymmetric signature:
``private_key_jwt`` client authentication (RFC 7523 §2.2, OpenID Connect
Core §9), and DPoP proofs (RFC 9449). Both are JWTs in the JWS compact
serialization: ``base64url(header) . base64url(claims) . base64url(sig)``,
base64url without padding (RFC 7515 §2), JSON by ``orjson``.

The signature comes from a ``JWTSigner``: its ``alg`` (RFC 7518 §3.1), its
public key as a JWK, and ``sign(signing_input) -> bytes``. The ones shipped
here, ``ES256Signer``/``ES384Signer``/``ES512Signer`` (ECDSA on P-256,
P-384, P-521), ``RS256Signer``/``RS384Signer``/``RS512Signer`` (RSASSA
PKCS#1 v1.5), ``PS256Signer``/``PS384Signer``/``PS512Signer`` (RSASSA-PSS)
and ``EdDSASigner`` (Ed25519, RFC 8037), use the ``cryptography`` package, which mcpwire does
not depend on: it is imported when a signer is made, never before, and its
absence raises ``CryptographyMissing`` naming the extra to install
(``pip install 'mcpwire[jwt]'``). Anything that satisfies ``JWTSigner`` can
sign instead (a key in an HSM or a cloud KMS).

ECDSA signatures travel as the fixed-width ``r || s`` (RFC 7518 §3.4), not
the DER that ``cryptography`` returns.
"""

from __future__ import annotations

import abc
import hashlib
import secrets
import time
from collections.abc import Mapping
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from ._errors import AuthorizationError
from .sansio._b64url import b64url_decode, b64url_encode

if TYPE_CHECKING:
    from typing_extensions import Self

__all__ = (
    "CLIENT_ASSERTION_TYPE",
    "CryptographyMissing",
    "ES256Signer",
    "ES384Signer",
    "ES512Signer",
    "EdDSASigner",
    "JWTSigner",
    "PS256Signer",
    "PS384Signer",
    "PS512Signer",
    "RS256Signer",
    "RS384Signer",
    "RS512Signer",
    "SIGNERS",
    "client_assertion",
    "encode_jwt",
    "jwk_thumbprint",
    "load_signer",
)

#: ``client_assertion_type`` of RFC 7523 §2.2.
CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
#: Seconds a client assertion is valid: one token request, with room for clock skew.
ASSERTION_LIFETIME = 60


class CryptographyMissing(AuthorizationError, ImportError):
    """A signer was asked for, and the ``cryptography`` package is not installed."""


def _crypto() -> Any:
    """The ``cryptography`` modules JWTs need (signing here, checking in ``_jws``),
    imported now (see the module docstring)."""
    try:
        import cryptography  # noqa: F401  (the package first: a blocked one fails here)
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa, utils
    except ImportError as exc:
        raise CryptographyMissing(
            "signed JWTs (private_key_jwt, DPoP, JWT access tokens) need the "
            "'cryptography' package: pip install 'mcpwire[jwt]' (or pip install cryptography)"
        ) from exc

    return SimpleNamespace(
        InvalidSignature=InvalidSignature,
        hashes=hashes,
        serialization=serialization,
        ec=ec,
        ed25519=ed25519,
        padding=padding,
        rsa=rsa,
        utils=utils,
    )


#: ECDSA per JWS ``alg`` (RFC 7518 §3.4): the JWK ``crv``, the curve's class in
#: ``cryptography``, and the size of each coordinate (and of ``r``, ``s``) in bytes.
EC_ALGS: dict[str, tuple[str, str, int]] = {
    "ES256": ("P-256", "SECP256R1", 32),
    "ES384": ("P-384", "SECP384R1", 48),
    "ES512": ("P-521", "SECP521R1", 66),
}


def digest_of(m: Any, alg: str) -> Any:
    """The hash a JWS ``alg`` names by its last three digits (RS256, ES384, PS512 ...)."""
    return getattr(m.hashes, f"SHA{alg[2:]}")()


def rsa_padding(m: Any, alg: str, digest: Any) -> Any:
    """PKCS#1 v1.5 for RS*, PSS for PS* with MGF1 and a salt as long as the hash
    (RFC 7518 §3.5)."""
    if alg.startswith("PS"):
        return m.padding.PSS(mgf=m.padding.MGF1(digest), salt_length=digest.digest_size)
    return m.padding.PKCS1v15()


def _int_b64(value: int, size: int | None = None) -> str:
    size = size if size is not None else max(1, (value.bit_length() + 7) // 8)
    return b64url_encode(value.to_bytes(size, "big"))


def _pem_key(pem: str | bytes, password: bytes | None) -> Any:
    """A private key from PEM (PKCS#8, SEC1 or PKCS#1)."""
    data = pem.encode() if isinstance(pem, str) else pem
    return _crypto().serialization.load_pem_private_key(data, password)


def _b64_int(text: object) -> int:
    if not isinstance(text, str):
        raise ValueError("a JWK member is missing or not a string")
    return int.from_bytes(b64url_decode(text), "big")


class JWTSigner(Protocol):
    """What signs a JWT: an algorithm, its public key, and the signing itself."""

    #: The JWS ``alg`` (RFC 7518 §3.1), e.g. ``ES256``.
    alg: str

    def public_jwk(self) -> dict[str, str]:
        """The public key as a JWK (RFC 7517), without private members."""
        ...

    def sign(self, signing_input: bytes) -> bytes:
        """The JWS signature of ``signing_input`` (for ECDSA: ``r || s``)."""
        ...


class _KeySigner(abc.ABC):
    """What the shipped signers share: a private key the subclass checks
    (``_fits``), its ``kid``, and loading from PEM (PKCS#8, or the key type's
    own format; encrypted with ``password``). Every signer is also made with
    ``generate()`` or ``from_jwk()``, and raises ``CryptographyMissing``
    without ``cryptography``."""

    alg: str
    #: What ``_fits`` accepts, for the error message.
    _needs: str

    def __init__(self, key: Any, *, kid: str | None = None) -> None:
        self._m = _crypto()
        if not self._fits(key):
            raise ValueError(f"{self.alg} needs {self._needs}")
        self._key = key
        self.kid = kid

    @abc.abstractmethod
    def _fits(self, key: Any) -> bool:
        """Whether ``key`` is the kind of private key this algorithm signs with."""

    @classmethod
    def from_pem(cls, pem: str | bytes, password: bytes | None = None) -> Self:
        return cls(_pem_key(pem, password))

    @classmethod
    def _from_private(cls, key: Any, jwk: Mapping[str, object]) -> Self:
        """The signer of ``key``, a JWK's private key, keeping its ``kid``."""
        kid = jwk.get("kid")
        return cls(key, kid=kid if isinstance(kid, str) else None)

    def _public(self, jwk: dict[str, str]) -> dict[str, str]:
        if self.kid is not None:
            jwk["kid"] = self.kid
        return jwk


class _ECSigner(_KeySigner):
    """ECDSA (RFC 7518 §3.4): the curve and hash the subclass's ``alg`` names."""

    alg = "ES256"
    #: From ``EC_ALGS``, for each subclass by its ``alg``.
    _crv: str
    _curve: str
    _size: int

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._crv, cls._curve, cls._size = EC_ALGS[cls.alg]
        cls._needs = f"a {cls._crv} private key"

    def _fits(self, key: Any) -> bool:
        ec = self._m.ec
        curve = getattr(ec, self._curve).name
        return isinstance(key, ec.EllipticCurvePrivateKey) and key.curve.name == curve

    @classmethod
    def generate(cls) -> Self:
        m = _crypto()
        return cls(m.ec.generate_private_key(getattr(m.ec, cls._curve)()))

    @classmethod
    def from_jwk(cls, jwk: Mapping[str, object]) -> Self:
        m = _crypto()
        if jwk.get("kty") != "EC" or jwk.get("crv") != cls._crv:
            raise ValueError(f"not a {cls._crv} EC JWK")
        public = m.ec.EllipticCurvePublicNumbers(
            _b64_int(jwk.get("x")), _b64_int(jwk.get("y")), getattr(m.ec, cls._curve)()
        )
        numbers = m.ec.EllipticCurvePrivateNumbers(_b64_int(jwk.get("d")), public)
        return cls._from_private(numbers.private_key(), jwk)

    def public_jwk(self) -> dict[str, str]:
        numbers = self._key.public_key().public_numbers()
        jwk = {
            "kty": "EC",
            "crv": self._crv,
            "x": _int_b64(numbers.x, self._size),
            "y": _int_b64(numbers.y, self._size),
        }
        return self._public(jwk)

    def sign(self, signing_input: bytes) -> bytes:
        m = self._m
        der = self._key.sign(signing_input, m.ec.ECDSA(digest_of(m, self.alg)))
        r, s = m.utils.decode_dss_signature(der)
        return int(r).to_bytes(self._size, "big") + int(s).to_bytes(self._size, "big")


class ES256Signer(_ECSigner):
    """ECDSA with P-256 and SHA-256 (RFC 7518 §3.4)."""


class ES384Signer(_ECSigner):
    """ECDSA with P-384 and SHA-384 (RFC 7518 §3.4)."""

    alg = "ES384"


class ES512Signer(_ECSigner):
    """ECDSA with P-521 and SHA-512 (RFC 7518 §3.4: 66-byte ``r`` and ``s``)."""

    alg = "ES512"


class RS256Signer(_KeySigner):
    """RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 §3.3), keys of 2048 bits or more.

    ``RS384Signer``/``RS512Signer`` hash with SHA-384/512; the ``PS*`` signers
    use RSASSA-PSS with MGF1 and a salt as long as the hash (§3.5).
    """

    alg = "RS256"
    _needs = "an RSA private key of at least 2048 bits"

    def _fits(self, key: Any) -> bool:
        return isinstance(key, self._m.rsa.RSAPrivateKey) and key.key_size >= 2048

    @classmethod
    def generate(cls, bits: int = 2048) -> Self:
        m = _crypto()
        return cls(m.rsa.generate_private_key(public_exponent=65537, key_size=bits))

    @classmethod
    def from_jwk(cls, jwk: Mapping[str, object]) -> Self:
        m = _crypto()
        if jwk.get("kty") != "RSA":
            raise ValueError("not an RSA JWK")
        n, e, d = (_b64_int(jwk.get(k)) for k in ("n", "e", "d"))
        if "p" in jwk and "q" in jwk:
            p, q = _b64_int(jwk.get("p")), _b64_int(jwk.get("q"))
        else:
            p, q = m.rsa.rsa_recover_prime_factors(n, e, d)
        numbers = m.rsa.RSAPrivateNumbers(
            p,
            q,
            d,
            m.rsa.rsa_crt_dmp1(d, p),
            m.rsa.rsa_crt_dmq1(d, q),
            m.rsa.rsa_crt_iqmp(p, q),
            m.rsa.RSAPublicNumbers(e, n),
        )
        return cls._from_private(numbers.private_key(), jwk)

    def public_jwk(self) -> dict[str, str]:
        numbers = self._key.public_key().public_numbers()
        return self._public({"kty": "RSA", "n": _int_b64(numbers.n), "e": _int_b64(numbers.e)})

    def sign(self, signing_input: bytes) -> bytes:
        m = self._m
        digest = digest_of(m, self.alg)
        return bytes(self._key.sign(signing_input, rsa_padding(m, self.alg, digest), digest))


class RS384Signer(RS256Signer):
    alg = "RS384"


class RS512Signer(RS256Signer):
    alg = "RS512"


class PS256Signer(RS256Signer):
    """RSASSA-PSS with SHA-256 and MGF1 (RFC 7518 §3.5): the salt is as long as
    the hash, as that section requires."""

    alg = "PS256"


class PS384Signer(RS256Signer):
    alg = "PS384"


class PS512Signer(RS256Signer):
    alg = "PS512"


class EdDSASigner(_KeySigner):
    """EdDSA with Ed25519 (RFC 8037): small keys, deterministic signatures."""

    alg = "EdDSA"
    _needs = "an Ed25519 private key"

    def _fits(self, key: Any) -> bool:
        return isinstance(key, self._m.ed25519.Ed25519PrivateKey)

    @classmethod
    def generate(cls) -> Self:
        return cls(_crypto().ed25519.Ed25519PrivateKey.generate())

    @classmethod
    def from_jwk(cls, jwk: Mapping[str, object]) -> Self:
        m = _crypto()
        d = jwk.get("d")
        if jwk.get("kty") != "OKP" or jwk.get("crv") != "Ed25519" or not isinstance(d, str):
            raise ValueError("not an Ed25519 OKP JWK with its private part")
        key = m.ed25519.Ed25519PrivateKey.from_private_bytes(b64url_decode(d))
        return cls._from_private(key, jwk)

    def public_jwk(self) -> dict[str, str]:
        m = _crypto()
        raw = self._key.public_key().public_bytes(
            m.serialization.Encoding.Raw, m.serialization.PublicFormat.Raw
        )
        return self._public({"kty": "OKP", "crv": "Ed25519", "x": b64url_encode(raw)})

    def sign(self, signing_input: bytes) -> bytes:
        return bytes(self._key.sign(signing_input))


#: The signer of each algorithm (RFC 7518 §3.1, RFC 8037).
SIGNERS: dict[str, type[JWTSigner]] = {
    "ES256": ES256Signer,
    "ES384": ES384Signer,
    "ES512": ES512Signer,
    "RS256": RS256Signer,
    "RS384": RS384Signer,
    "RS512": RS512Signer,
    "PS256": PS256Signer,
    "PS384": PS384Signer,
    "PS512": PS512Signer,
    "EdDSA": EdDSASigner,
}


def _ec_alg(m: Any, key: Any) -> str | None:
    """The ES algorithm of an EC private key on a curve JWS names, else None."""
    if not isinstance(key, m.ec.EllipticCurvePrivateKey):
        return None
    on = key.curve.name
    return next((alg for alg, (_, c, _) in EC_ALGS.items() if getattr(m.ec, c).name == on), None)


def load_signer(
    pem: str | bytes, password: bytes | None = None, *, alg: str | None = None
) -> JWTSigner:
    """The signer for a PEM private key: the ES algorithm of its curve (P-256,
    P-384, P-521), EdDSA for Ed25519, and for RSA ``alg`` (``RS256`` unless
    ``RS384``/``RS512``/``PS256``/``PS384``/``PS512`` is asked for)."""
    m = _crypto()
    key = _pem_key(pem, password)
    if isinstance(key, m.rsa.RSAPrivateKey):
        chosen = alg if alg is not None and alg[:2] in ("RS", "PS") else "RS256"
    elif isinstance(key, m.ed25519.Ed25519PrivateKey):
        chosen = "EdDSA"
    elif (ec_alg := _ec_alg(m, key)) is not None:
        chosen = ec_alg
    else:
        raise ValueError(f"a {type(key).__name__} signs none of {', '.join(SIGNERS)}")
    if alg is not None and chosen != alg:
        raise ValueError(f"a {type(key).__name__} does not sign {alg}")
    if chosen not in SIGNERS:
        raise ValueError(f"unknown algorithm {alg}")
    return SIGNERS[chosen](key)  # type: ignore[call-arg]


def jwk_thumbprint(jwk: Mapping[str, str]) -> str:
    """The SHA-256 JWK thumbprint (RFC 7638 §3): the required members only,
    sorted, no whitespace; base64url."""
    required = {
        "EC": ("crv", "kty", "x", "y"),
        "RSA": ("e", "kty", "n"),
        "OKP": ("crv", "kty", "x"),
    }
    names = required.get(jwk.get("kty", ""))
    if names is None:
        raise ValueError(f"unsupported JWK kty {jwk.get('kty')!r}")
    canonical = orjson.dumps({k: jwk[k] for k in names}, option=orjson.OPT_SORT_KEYS)
    return b64url_encode(hashlib.sha256(canonical).digest())


def encode_jwt(
    header: Mapping[str, object], claims: Mapping[str, object], signer: JWTSigner
) -> str:
    """A compact JWS of ``claims``; ``alg`` in the header is the signer's."""
    protected = {**header, "alg": signer.alg}
    signing_input = (
        b64url_encode(orjson.dumps(protected)) + "." + b64url_encode(orjson.dumps(claims))
    )
    signature = signer.sign(signing_input.encode("ascii"))
    return signing_input + "." + b64url_encode(signature)


def client_assertion(
    signer: JWTSigner, client_id: str, audience: str, *, now: float | None = None
) -> str:
    """A ``private_key_jwt`` client assertion (RFC 7523 §3, OpenID Connect Core
    §9): issued by and about the client, for ``audience`` (the authorization
    server's issuer), once (``jti``), for ``ASSERTION_LIFETIME`` seconds."""
    issued = int(time.time() if now is None else now)
    claims = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "jti": secrets.token_urlsafe(24),
        "iat": issued,
        "exp": issued + ASSERTION_LIFETIME,
    }
    header: dict[str, object] = {"typ": "JWT"}
    kid = getattr(signer, "kid", None)
    if isinstance(kid, str):
        header["kid"] = kid
    return encode_jwt(header, claims, signer)
