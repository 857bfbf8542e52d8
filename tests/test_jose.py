"""Signed JWTs (``mcpwire._jose``) and DPoP proofs (``mcpwire._oauth_dpop``),
checked by an independent implementation: PyJWT decodes and verifies what
mcpwire signs, and ``cryptography`` verifies the ES256 ``r || s`` signature
once converted back to DER."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from hypothesis import given
from hypothesis import strategies as st

from mcpwire import AuthorizationError, OAuthClient
from mcpwire._jose import (
    CLIENT_ASSERTION_TYPE,
    CryptographyMissing,
    EdDSASigner,
    ES256Signer,
    ES384Signer,
    ES512Signer,
    PS256Signer,
    PS384Signer,
    PS512Signer,
    RS256Signer,
    RS384Signer,
    RS512Signer,
    client_assertion,
    encode_jwt,
    jwk_thumbprint,
    load_signer,
)
from mcpwire._oauth_dpop import DPoPProver, htu, wants_nonce_resource, wants_nonce_token
from mcpwire.sansio import _oauth as o
from mcpwire.sansio._b64url import b64url_decode, b64url_encode

ES256 = ES256Signer.generate()
RS256 = RS256Signer.generate()


def _segments(token: str) -> tuple[dict[str, Any], dict[str, Any], bytes]:
    sig = token.rsplit(".", 1)[1]
    return (
        jwt.get_unverified_header(token),
        jwt.decode(token, options={"verify_signature": False}),
        b64url_decode(sig),
    )


def test_es256_signature_is_raw_r_s_and_verifies() -> None:
    token = encode_jwt({"typ": "JWT"}, {"a": 1}, ES256)
    header, _, signature = _segments(token)
    assert header == {"typ": "JWT", "alg": "ES256"}
    assert len(signature) == 64  # RFC 7518 §3.4: 32-byte r, 32-byte s; not DER
    public = ES256._key.public_key()
    assert jwt.decode(token, public, algorithms=["ES256"]) == {"a": 1}
    # The same signature in DER, verified by cryptography itself.
    r, s = int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big")
    signing_input = token.rsplit(".", 1)[0].encode()
    public.verify(encode_dss_signature(r, s), signing_input, ec.ECDSA(hashes.SHA256()))


def test_rs256_signature_verifies() -> None:
    token = encode_jwt({}, {"sub": "x"}, RS256)
    assert jwt.get_unverified_header(token)["alg"] == "RS256"
    assert jwt.decode(token, RS256._key.public_key(), algorithms=["RS256"]) == {"sub": "x"}


@pytest.mark.parametrize("signer", [ES256, RS256], ids=["ES256", "RS256"])
def test_public_jwk_matches_an_independent_export(signer: Any) -> None:
    jwk = signer.public_jwk()
    assert "d" not in jwk
    # PyJWT's own JWK of the same public key, and back: the key verifies.
    algorithm = jwt.get_algorithm_by_name(signer.alg)
    theirs = algorithm.to_jwk(signer._key.public_key(), as_dict=True)
    assert {k: theirs[k] for k in jwk} == jwk
    token = encode_jwt({}, {"n": 1}, signer)
    assert jwt.decode(token, jwt.PyJWK(jwk).key, algorithms=[signer.alg]) == {"n": 1}
    if jwk["kty"] == "EC":
        assert len(b64url_decode(jwk["x"])) == len(b64url_decode(jwk["y"])) == 32


def test_signers_from_pem_and_jwk() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    formats = [serialization.PrivateFormat.PKCS8, serialization.PrivateFormat.TraditionalOpenSSL]
    for number, fmt in enumerate(formats):
        pem = key.private_bytes(serialization.Encoding.PEM, fmt, serialization.NoEncryption())
        for signer in (ES256Signer.from_pem(pem), load_signer(pem.decode())):
            token = encode_jwt({}, {"k": number}, signer)
            assert jwt.decode(token, key.public_key(), algorithms=["ES256"]) == {"k": number}
    private_jwk = jwt.get_algorithm_by_name("ES256").to_jwk(key, as_dict=True)
    from_jwk = ES256Signer.from_jwk({**private_jwk, "kid": "k1"})
    assert from_jwk.public_jwk()["kid"] == "k1"
    token = client_assertion(from_jwk, "c", "https://as")
    assert jwt.get_unverified_header(token)["kid"] == "k1"
    jwt.decode(token, key.public_key(), algorithms=["ES256"], audience="https://as")

    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = rsa_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    assert isinstance(load_signer(pem), RS256Signer)
    rsa_jwk = jwt.get_algorithm_by_name("RS256").to_jwk(rsa_key, as_dict=True)
    for jwk in (rsa_jwk, {k: rsa_jwk[k] for k in ("kty", "n", "e", "d")}):
        token = encode_jwt({}, {"r": 1}, RS256Signer.from_jwk(jwk))
        assert jwt.decode(token, rsa_key.public_key(), algorithms=["RS256"]) == {"r": 1}


def test_signers_refuse_other_keys() -> None:
    with pytest.raises(ValueError, match="P-256"):
        ES256Signer(ec.generate_private_key(ec.SECP384R1()))
    with pytest.raises(ValueError, match="RSA"):
        RS256Signer(ec.generate_private_key(ec.SECP256R1()))
    with pytest.raises(ValueError, match="P-256"):
        ES256Signer.from_jwk({"kty": "RSA"})
    with pytest.raises(ValueError, match="RSA"):
        RS256Signer.from_jwk({"kty": "EC"})


PS256 = PS256Signer(RS256._key)
EDDSA = EdDSASigner.generate()
#: Every algorithm past ES256/RS256: P-384, P-521, SHA-384/512 RSA and PSS.
MORE = [
    ES384Signer.generate(),
    ES512Signer.generate(),
    RS384Signer(RS256._key),
    RS512Signer(RS256._key),
    PS384Signer(RS256._key),
    PS512Signer(RS256._key),
]


@pytest.mark.parametrize("signer", [PS256, EDDSA, *MORE], ids=lambda s: s.alg)
def test_pss_and_eddsa_signatures_verify_elsewhere(signer: Any) -> None:
    """PyJWT checks them with the public key, and with the JWK we publish."""
    token = encode_jwt({"typ": "JWT"}, {"p": 1}, signer)
    assert jwt.get_unverified_header(token)["alg"] == signer.alg
    public = signer._key.public_key()
    assert jwt.decode(token, public, algorithms=[signer.alg]) == {"p": 1}
    jwk = signer.public_jwk()
    assert "d" not in jwk
    assert jwt.decode(token, jwt.PyJWK(jwk).key, algorithms=[signer.alg]) == {"p": 1}


def test_eddsa_signer_from_pem_jwk_and_load_signer() -> None:
    key = ed25519.Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    raw = key.private_bytes(
        serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()
    )
    public = key.public_key()
    x = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    jwk = {"kty": "OKP", "crv": "Ed25519", "d": b64url_encode(raw), "x": b64url_encode(x)}
    for signer in (
        EdDSASigner.from_pem(pem),
        load_signer(pem),
        EdDSASigner.from_jwk({**jwk, "kid": "e1"}),
    ):
        assert signer.alg == "EdDSA"
        token = encode_jwt({}, {"e": 1}, signer)
        assert jwt.decode(token, public, algorithms=["EdDSA"]) == {"e": 1}
    assert EdDSASigner.from_jwk({**jwk, "kid": "e1"}).public_jwk()["kid"] == "e1"
    with pytest.raises(ValueError, match="Ed25519"):
        EdDSASigner(ec.generate_private_key(ec.SECP256R1()))
    with pytest.raises(ValueError, match="Ed25519"):
        EdDSASigner.from_jwk({"kty": "OKP", "crv": "Ed448", "d": "AA"})


def test_load_signer_picks_the_algorithm_of_the_key() -> None:
    rsa_pem = RS256._key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    assert load_signer(rsa_pem).alg == "RS256"
    for alg in ("PS256", "RS384", "RS512", "PS384", "PS512"):
        assert load_signer(rsa_pem, alg=alg).alg == alg
    with pytest.raises(ValueError, match="does not sign ES256"):
        load_signer(rsa_pem, alg="ES256")
    for signer in MORE[:2]:  # the curve decides
        pem = signer._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(b"secret"),
        )
        loaded = load_signer(pem, b"secret")
        assert (type(loaded), loaded.public_jwk()) == (type(signer), signer.public_jwk())
    with pytest.raises(ValueError, match="signs none"):
        load_signer(
            ec.generate_private_key(ec.SECP256K1()).private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )


@pytest.mark.parametrize("signer", MORE[:2], ids=lambda s: s.alg)
def test_ec_signers_of_every_curve_round_trip_their_jwk(signer: Any) -> None:
    """The private JWK (ours plus ``d``) gives the same key back; the signature is
    the fixed-width ``r || s`` of the curve (RFC 7518 §3.4)."""
    numbers = signer._key.private_numbers()
    size = {"ES384": 48, "ES512": 66}[signer.alg]
    private = {
        **signer.public_jwk(),
        "d": b64url_encode(numbers.private_value.to_bytes(size, "big")),
    }
    again = type(signer).from_jwk({**private, "kid": "k"})
    assert again.public_jwk() == {**signer.public_jwk(), "kid": "k"}
    token = encode_jwt({}, {"n": 1}, again)
    assert len(b64url_decode(token.rsplit(".", 1)[1])) == 2 * size
    assert jwt.decode(token, jwt.PyJWK(signer.public_jwk()).key, algorithms=[signer.alg])
    with pytest.raises(ValueError, match=signer.public_jwk()["crv"]):
        type(signer)(ES256._key)


@pytest.mark.parametrize("signer", [ES256, RS256, PS256, EDDSA, *MORE], ids=lambda s: s.alg)
def test_dpop_proofs_of_every_signer_pass_the_resource_servers_checks(signer: Any) -> None:
    """Our client's proofs, checked by our resource server's DPoP checker."""
    from mcpwire import AccessToken
    from mcpwire._auth_dpop import DPoPChecker

    prover = DPoPProver(signer)
    url = "https://mcp.example/mcp"
    proof = prover.proof("POST", url + "?x=1", access_token="tok")
    token = AccessToken("c", claims={"cnf": {"jkt": prover.jkt}})
    checker = DPoPChecker()
    assert checker.check(
        method="POST", url=url, proofs=[proof], access_token="tok", token=token
    ) == jwk_thumbprint(signer.public_jwk())


def test_jwk_thumbprint_rfc7638_example() -> None:
    # RFC 7638 §3.1.
    jwk = {
        "kty": "RSA",
        "n": "0vx7agoebGcQSuuPiLJXZptN9nndrQmbXEps2aiAFbWhM78LhWx4cbbfAAtVT86zwu1RK7aPFFxuhDR1L6tSo"
        "c_BJECPebWKRXjBZCiFV4n3oknjhMstn64tZ_2W-5JsGY4Hc5n9yBXArwl93lqt7_RN5w6Cf0h4QyQ5v-65YGjQR0_FD"
        "W2QvzqY368QQMicAtaSqzs8KJZgnYb9c7d0zgdAZHzu6qMQvRL5hajrn1n91CbOpbISD08qNLyrdkt-bFTWhAI4vMQFh6"
        "WeZu0fM4lFd2NcRwr3XPksINHaQ-G_xBniIqbw0Ls1jF44-csFCur-kEgU8awapJzKnqDKgw",
        "e": "AQAB",
        "alg": "RS256",
        "kid": "2011-04-29",
    }
    assert jwk_thumbprint(jwk) == "NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs"
    ec_jwk = ES256.public_jwk()
    canonical = '{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}'.format(ec_jwk["x"], ec_jwk["y"])
    expected = base64.urlsafe_b64encode(hashlib.sha256(canonical.encode()).digest())
    assert jwk_thumbprint(ec_jwk) == expected.rstrip(b"=").decode()
    with pytest.raises(ValueError, match="kty"):
        jwk_thumbprint({"kty": "oct", "k": "AA"})


_REGISTERED = {"exp", "nbf", "iat", "aud", "iss", "sub", "jti"}
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(st.dictionaries(st.text().filter(lambda k: k not in _REGISTERED), _json, max_size=6))
def test_any_claims_round_trip_through_pyjwt(claims: dict[str, Any]) -> None:
    token = encode_jwt({"typ": "JWT"}, claims, ES256)
    assert jwt.decode(token, ES256._key.public_key(), algorithms=["ES256"]) == claims


@given(st.binary(max_size=200))
def test_b64url_round_trip(data: bytes) -> None:
    text = b64url_encode(data)
    assert "=" not in text and "+" not in text and "/" not in text
    assert b64url_decode(text) == data
    assert base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)) == data


@pytest.mark.parametrize("text", ["QQ==", "QR", "A", "a+b/", "é"])
def test_b64url_decode_refuses_non_canonical(text: str) -> None:
    with pytest.raises(ValueError, match="base64url"):
        b64url_decode(text)


def test_client_assertion_claims() -> None:
    before = int(time.time())
    first = client_assertion(ES256, "client-1", "https://as.example")
    second = client_assertion(ES256, "client-1", "https://as.example")
    claims = jwt.decode(
        first,
        ES256._key.public_key(),
        algorithms=["ES256"],
        audience="https://as.example",
        issuer="client-1",
    )
    assert claims["sub"] == "client-1"
    assert claims["iat"] >= before
    assert claims["exp"] - claims["iat"] == 60
    assert claims["jti"] != jwt.decode(second, options={"verify_signature": False})["jti"]
    assert CLIENT_ASSERTION_TYPE == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


# -- DPoP proofs -----------------------------------------------------------------------------


def _proof(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Header and claims of a DPoP proof, verified with the key in its header."""
    header = jwt.get_unverified_header(token)
    key = jwt.PyJWK(header["jwk"]).key
    return header, jwt.decode(token, key, algorithms=[header["alg"]])


def test_dpop_proof_contents() -> None:
    prover = DPoPProver(ES256)
    url = "https://rs.example:8443/mcp/?a=1#frag"
    header, claims = _proof(prover.proof("POST", url))
    assert header["typ"] == "dpop+jwt"
    assert header["alg"] == "ES256"
    assert header["jwk"] == ES256.public_jwk()
    assert claims["htm"] == "POST"
    assert claims["htu"] == "https://rs.example:8443/mcp/"
    assert abs(claims["iat"] - time.time()) < 5
    assert "ath" not in claims and "nonce" not in claims

    token = "an-access-token"
    _, claims = _proof(prover.proof("GET", url, access_token=token))
    expected = base64.urlsafe_b64encode(hashlib.sha256(token.encode()).digest()).rstrip(b"=")
    assert claims["ath"] == expected.decode()
    assert claims["htm"] == "GET"

    jtis = {_proof(prover.proof("POST", url))[1]["jti"] for _ in range(20)}
    assert len(jtis) == 20


def test_dpop_nonces_per_origin() -> None:
    prover = DPoPProver(RS256)
    assert prover.note("https://as.example/token", [("dpop-nonce", "n1")])
    assert not prover.note("https://as.example/other", [("DPoP-Nonce", "n1")])  # not new
    assert not prover.note("https://as.example/token", [("content-type", "x")])
    _, claims = _proof(prover.proof("POST", "https://as.example/token"))
    assert claims["nonce"] == "n1"
    _, claims = _proof(prover.proof("POST", "https://rs.example/mcp"))
    assert "nonce" not in claims
    assert prover.note("https://as.example/token", [("dpop-nonce", "n2")])
    assert _proof(prover.proof("POST", "https://as.example/x"))[1]["nonce"] == "n2"


def test_dpop_usable_at() -> None:
    prover = DPoPProver(ES256)
    assert prover.usable_at({})
    assert prover.usable_at({"dpop_signing_alg_values_supported": ["RS256", "ES256"]})
    assert not prover.usable_at({"dpop_signing_alg_values_supported": ["RS256"]})


def test_htu_drops_query_and_fragment() -> None:
    assert htu("http://h:1/p?q=1#f") == "http://h:1/p"
    assert htu("https://h/") == "https://h/"


@pytest.mark.parametrize(
    ("status", "body", "wanted"),
    [
        (400, b'{"error": "use_dpop_nonce"}', True),
        (400, b'{"error": "invalid_dpop_proof"}', False),
        (401, b'{"error": "use_dpop_nonce"}', False),
        (400, b"not json", False),
        (400, b"[]", False),
    ],
)
def test_wants_nonce_token(status: int, body: bytes, wanted: bool) -> None:
    assert wants_nonce_token(status, body) is wanted


@pytest.mark.parametrize(
    ("headers", "wanted"),
    [
        (['DPoP error="use_dpop_nonce"'], True),
        (['Bearer realm="x"', 'DPoP algs="ES256", error="use_dpop_nonce"'], True),
        (['Bearer error="use_dpop_nonce"'], False),
        (['DPoP error="invalid_token"'], False),
        (['DPoP error="unterminated'], False),
        ([], False),
    ],
)
def test_wants_nonce_resource(headers: list[str], wanted: bool) -> None:
    assert wants_nonce_resource(headers) is wanted


def test_bearer_params_fall_back_to_the_dpop_challenge() -> None:
    assert o.bearer_params(['DPoP resource_metadata="https://r/m"']) == {
        "resource_metadata": "https://r/m"
    }
    both = ['DPoP resource_metadata="https://d"', 'Bearer resource_metadata="https://b"']
    assert o.bearer_params(both) == {"resource_metadata": "https://b"}


def test_dpop_token_type_only_after_a_proof() -> None:
    body = b'{"access_token": "t", "token_type": "dpop"}'
    assert o.parse_token_response(200, body, dpop=True).token_type == "DPoP"
    with pytest.raises(AuthorizationError, match="token_type"):
        o.parse_token_response(200, body)
    bearer = b'{"access_token": "t", "token_type": "Bearer"}'
    assert o.parse_token_response(200, bearer, dpop=True).token_type == "Bearer"


# -- without cryptography --------------------------------------------------------------------


def test_without_cryptography_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "cryptography", None)
    for make in (
        ES256Signer.generate,
        RS256Signer.generate,
        lambda: load_signer("pem"),
        lambda: OAuthClient(
            grant="client_credentials", client_id="c", client_secret="s", dpop=True
        ),
    ):
        with pytest.raises(CryptographyMissing, match=r"pip install 'mcpwire\[jwt\]'") as info:
            make()
        assert isinstance(info.value, AuthorizationError)
        assert isinstance(info.value, ImportError)
    # Everything else goes on without it.
    OAuthClient(grant="client_credentials", client_id="c", client_secret="s")


def test_importing_mcpwire_does_not_import_cryptography() -> None:
    code = (
        "import sys, mcpwire, mcpwire._oauth, mcpwire._jose, mcpwire._oauth_dpop, "
        "mcpwire._http_client_auth; from mcpwire import OAuthClient; "
        "OAuthClient(grant='client_credentials', client_id='c', client_secret='s'); "
        "assert 'cryptography' not in sys.modules, 'imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


_paths = st.text(st.sampled_from("abz09-._~/%"), max_size=20)


@given(
    st.sampled_from(["GET", "POST", "DELETE"]),
    st.sampled_from(["http", "https"]),
    _paths,
    st.text(st.sampled_from("ab=&"), max_size=8),
    st.text(st.sampled_from("xy"), max_size=4),
    st.one_of(st.none(), st.text(min_size=1, max_size=40).filter(str.isascii)),
)
def test_any_dpop_proof_verifies_and_names_the_request(
    method: str, scheme: str, path: str, query: str, fragment: str, token: str | None
) -> None:
    url = f"{scheme}://host.example:8080/{path}" + (f"?{query}" if query else "")
    url += f"#{fragment}" if fragment else ""
    _, claims = _proof(DPoPProver(ES256).proof(method, url, access_token=token))
    assert claims["htm"] == method
    assert claims["htu"] == f"{scheme}://host.example:8080/{path}"
    assert ("ath" in claims) == (token is not None)
