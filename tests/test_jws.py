"""Checking compact JWS (``mcpwire._jws``) against tokens signed by another implementation.

Every token here is made by PyJWT, or by hand where PyJWT refuses to make
it (``alg: none``, a ``crit`` header), so the checks meet signatures and
encodings that mcpwire did not produce itself.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from hypothesis import given
from hypothesis import strategies as st

from mcpwire._jws import ALGORITHMS, MAX_JWT_SIZE, JWSError, decode, public_key, verify


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwk_of(public: Any) -> dict[str, Any]:
    """The JWK of a public key, written out here (not by the code under test)."""
    if isinstance(public, rsa.RSAPublicKey):
        n = public.public_numbers()
        return {
            "kty": "RSA",
            "n": b64(n.n.to_bytes((n.n.bit_length() + 7) // 8, "big")),
            "e": b64(n.e.to_bytes(3, "big")),
        }
    if isinstance(public, ec.EllipticCurvePublicKey):
        size = (public.curve.key_size + 7) // 8
        crv = {"secp256r1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"}
        p = public.public_numbers()
        return {
            "kty": "EC",
            "crv": crv[public.curve.name],
            "x": b64(p.x.to_bytes(size, "big")),
            "y": b64(p.y.to_bytes(size, "big")),
        }
    raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    return {"kty": "OKP", "crv": "Ed25519", "x": b64(raw)}


KEYS: dict[str, Any] = {}


def private_for(alg: str) -> Any:
    """One key per family, made once (RSA generation is slow)."""
    if alg.startswith(("RS", "PS")):
        family = "rsa"
    elif alg == "EdDSA":
        family = "ed25519"
    else:
        family = alg
    if family not in KEYS:
        if family == "rsa":
            KEYS[family] = rsa.generate_private_key(65537, 2048)
        elif family == "ed25519":
            KEYS[family] = ed25519.Ed25519PrivateKey.generate()
        else:
            curve = {"ES256": ec.SECP256R1, "ES384": ec.SECP384R1, "ES512": ec.SECP521R1}[alg]
            KEYS[family] = ec.generate_private_key(curve())
    return KEYS[family]


def signed(alg: str, claims: dict[str, Any] | None = None, **header: Any) -> str:
    return jwt.encode(claims or {"sub": "someone"}, private_for(alg), algorithm=alg, headers=header)


def key_for(alg: str) -> Any:
    return public_key(jwk_of(private_for(alg).public_key()))


@pytest.mark.parametrize("alg", sorted(ALGORITHMS))
def test_every_algorithm_verifies_tokens_signed_elsewhere(alg: str) -> None:
    token = signed(alg, {"sub": "someone", "n": 1})
    decoded = decode(token)
    assert decoded.alg == alg
    assert decoded.claims == {"sub": "someone", "n": 1}
    verify(decoded, key_for(alg))


@pytest.mark.parametrize("alg", sorted(ALGORITHMS))
def test_a_changed_payload_does_not_verify(alg: str) -> None:
    head, _, sig = signed(alg).split(".")
    forged = f"{head}.{b64(json.dumps({'sub': 'admin'}).encode())}.{sig}"
    with pytest.raises(JWSError, match="does not verify"):
        verify(decode(forged), key_for(alg))


@pytest.mark.parametrize(
    ("alg", "other"),
    [
        ("ES256", "ES384"),  # right family, wrong curve
        ("ES384", "ES256"),
        ("RS256", "ES256"),
        ("PS256", "EdDSA"),
        ("EdDSA", "RS256"),
        ("ES256", "RS256"),
    ],
)
def test_a_key_is_used_only_with_its_algorithm(alg: str, other: str) -> None:
    with pytest.raises(JWSError, match="needs"):
        verify(decode(signed(alg)), key_for(other))


def test_a_key_of_another_party_does_not_verify() -> None:
    stranger = public_key(jwk_of(ec.generate_private_key(ec.SECP256R1()).public_key()))
    with pytest.raises(JWSError, match="does not verify"):
        verify(decode(signed("ES256")), stranger)


def unsigned(header: dict[str, Any], claims: dict[str, Any], signature: bytes = b"") -> str:
    return ".".join(
        [b64(json.dumps(header).encode()), b64(json.dumps(claims).encode()), b64(signature)]
    )


@pytest.mark.parametrize("alg", ["none", "None", "HS256", "HS512", "RSA-OAEP", "", None, 256])
def test_unsigned_and_symmetric_algorithms_are_refused(alg: object) -> None:
    """``none`` and HMAC are refused before any key is looked at: the confusion where
    an RSA public key serves as an HMAC secret cannot start."""
    with pytest.raises(JWSError, match="algorithm"):
        decode(unsigned({"alg": alg, "typ": "JWT"}, {"sub": "admin"}, b"x" * 32))


def test_an_hmac_token_keyed_with_the_public_key_is_refused() -> None:
    public_pem = (
        private_for("RS256")
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    header = b64(json.dumps({"alg": "HS256"}).encode())
    payload = b64(json.dumps({"sub": "admin"}).encode())
    import hashlib
    import hmac

    mac = hmac.new(public_pem, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    with pytest.raises(JWSError, match="algorithm 'HS256'"):
        decode(f"{header}.{payload}.{b64(mac)}")


def test_critical_extensions_are_refused() -> None:
    token = signed("ES256", crit=["b64"], b64=False)
    with pytest.raises(JWSError, match="critical"):
        decode(token)


ES256_HEADER = b64(b'{"alg":"ES256"}')


@pytest.mark.parametrize(
    ("token", "problem"),
    [
        ("a.b", "three"),
        ("a.b.c.d", "three"),
        ("a.b.c.d.e", "three"),  # a JWE
        ("e30=.e30.", "base64url"),  # padding
        (f"{ES256_HEADER}.e30 .", "base64url"),
        ("e+0.e30.", "base64url"),
        ("W10.e30.", "not a JSON object"),  # header []
        (f"{ES256_HEADER}.W10.", "not a JSON object"),  # payload []
        (f"{ES256_HEADER}.e30.AA=", "base64url"),
        ("bm90IGpzb24.e30.", "not JSON"),
        ("e30.e30.", "algorithm None"),  # {} header: no alg
    ],
)
def test_malformed_compact_serializations_are_refused(token: str, problem: str) -> None:
    with pytest.raises(JWSError, match=problem):
        decode(token)


def test_oversized_tokens_are_refused_before_parsing() -> None:
    big = signed("ES256", {"pad": "x" * MAX_JWT_SIZE})
    with pytest.raises(JWSError, match="longer than"):
        decode(big)


def test_ecdsa_signatures_must_be_fixed_width() -> None:
    head, body, sig = signed("ES256").split(".")
    der_like = b64(base64.urlsafe_b64decode(sig + "==")[:-1])
    with pytest.raises(JWSError, match="64 bytes"):
        verify(decode(f"{head}.{body}.{der_like}"), key_for("ES256"))


@pytest.mark.parametrize("member", ["d", "p", "q", "dp", "dq", "qi", "k"])
def test_jwks_with_private_members_are_refused(member: str) -> None:
    jwk = {**jwk_of(private_for("ES256").public_key()), member: "AAAA"}
    with pytest.raises(JWSError, match="private"):
        public_key(jwk)


@pytest.mark.parametrize(
    ("jwk", "problem"),
    [
        ({"kty": "oct", "k": "c2VjcmV0"}, "private"),
        ({"kty": "oct"}, "unsupported JWK"),
        ({"kty": "EC", "crv": "secp256k1", "x": "AA", "y": "AA"}, "curve"),
        ({"kty": "EC", "crv": "P-256", "x": "AQ", "y": "AQ"}, "not on its curve"),
        ({"kty": "EC", "crv": "P-256", "x": "AQ"}, "'y'"),
        ({"kty": "RSA", "n": "AQAB"}, "'e'"),
        ({"kty": "RSA", "n": "AQ+B", "e": "AQAB"}, "'n'"),
        ({"kty": "OKP", "crv": "Ed25519", "x": "AAAA"}, "Ed25519"),
        ({"kty": "OKP", "crv": "X25519", "x": "A" * 43}, "unsupported JWK"),
    ],
)
def test_malformed_or_unsupported_jwks_are_refused(jwk: dict[str, Any], problem: str) -> None:
    with pytest.raises(JWSError, match=problem):
        public_key(jwk)


def test_rsa_keys_under_2048_bits_are_refused() -> None:
    small = rsa.generate_private_key(65537, 1024).public_key()
    with pytest.raises(JWSError, match="2048"):
        public_key(jwk_of(small))


@given(st.text(max_size=300))
def test_decode_raises_only_jws_errors(text: str) -> None:
    try:
        decode(text)
    except JWSError:
        pass


@given(st.data())
def test_a_changed_character_never_verifies_other_content(data: st.DataObject) -> None:
    """Changing one character of a token either breaks it, or leaves its decoded
    parts as they were (base64url's unused trailing bits): never other content."""
    token = signed("ES256", {"sub": "someone", "scope": "read"})
    original = decode(token)
    index = data.draw(st.integers(0, len(token) - 1))
    char = data.draw(
        st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
    )
    changed = token[:index] + char + token[index + 1 :]
    try:
        jwt_ = decode(changed)
        verify(jwt_, key_for("ES256"))
    except JWSError:
        return
    assert jwt_.header == original.header
    assert jwt_.claims == original.claims
    assert jwt_.signature == original.signature
