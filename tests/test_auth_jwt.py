"""``JWTVerifier``: JWT access tokens (RFC 9068) checked locally against the issuer's keys.

End to end, the authorization server is the reference SDK's (``http_auth_as``,
issuing JWTs signed by PyJWT) and the client the reference SDK's, through its
whole OAuth flow; elsewhere tokens are minted by PyJWT and the issuer's
metadata and JWK Set come from a scripted HTTP server (``rawserver``), which
counts fetches and can fail on demand. Every test touching I/O runs on both
anyio backends.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import jwt
import orjson
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from http_auth_as import JWT_KID, AuthServer, MemoryProvider
from http_client.rawserver import Reply, Seen, as_metadata, raw_server
from http_raw import client, init_body, running
from hypothesis import given, settings
from hypothesis import strategies as st
from test_http_auth import guarded_app
from test_http_auth_interop import MemoryStorage, sdk_oauth_client

from mcpwire import AccessToken, Client, JWKSError, JWTVerifier, ResourceServerAuth

pytestmark = pytest.mark.anyio

ISSUER = "https://issuer.example/tenant"
AUDIENCE = "https://mcp.example/mcp"
EC_KEY = ec.generate_private_key(ec.SECP256R1())
RSA_KEY = rsa.generate_private_key(65537, 2048)


def public_jwk(key: Any, kid: str | None, **extra: Any) -> dict[str, Any]:
    family = jwt.algorithms.ECAlgorithm if isinstance(key, ec.EllipticCurvePrivateKey) else None
    family = family or jwt.algorithms.RSAAlgorithm
    jwk: dict[str, Any] = family.to_jwk(key.public_key(), as_dict=True)
    if kid is not None:
        jwk["kid"] = kid
    return {**jwk, **extra}


def claims(**overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    found: dict[str, Any] = {
        "iss": ISSUER,
        "sub": "user-1",
        "aud": AUDIENCE,
        "client_id": "client-1",
        "scope": "mcp:read mcp:write",
        "iat": now,
        "exp": now + 300,
        "jti": uuid.uuid4().hex,
    }
    found.update(overrides)
    return {k: v for k, v in found.items() if v is not None}


def mint(
    key: Any = EC_KEY,
    alg: str = "ES256",
    kid: str | None = "k1",
    typ: str | None = "at+jwt",
    **c: Any,
) -> str:
    headers: dict[str, Any] = {}
    if kid is not None:
        headers["kid"] = kid
    if typ is not None:
        headers["typ"] = typ
    return jwt.encode(claims(**c), key, algorithm=alg, headers=headers)


def static(*keys: dict[str, Any], **options: Any) -> JWTVerifier:
    return JWTVerifier(ISSUER, jwks={"keys": list(keys)}, **options)


EC_JWK = public_jwk(EC_KEY, "k1")
RSA_JWK = public_jwk(RSA_KEY, "r1")


# =================================================================================================
# Claims (a static key set: no I/O but the verifier's own)
# =================================================================================================


async def test_a_valid_token_becomes_an_access_token(anyio_backend: str) -> None:
    token = await static(EC_JWK).verify(mint())
    assert token is not None
    assert token.client_id == "client-1"
    assert token.subject == "user-1"
    assert token.scopes == ("mcp:read", "mcp:write")
    assert token.audience == (AUDIENCE,)
    assert token.expires_at is not None and token.expires_at > time.time()
    assert token.claims["iss"] == ISSUER


@pytest.mark.parametrize(
    ("overrides", "why"),
    [
        ({"iss": "https://other.example/tenant"}, "another issuer"),
        ({"iss": ISSUER + "/"}, "issuers compare as strings"),
        ({"iss": None}, "no issuer"),
        ({"exp": None}, "no exp (RFC 9068 requires it)"),
        ({"exp": int(time.time()) - 120}, "expired beyond the leeway"),
        ({"exp": "tomorrow"}, "exp not a number"),
        ({"nbf": int(time.time()) + 600}, "not valid yet"),
        ({"iat": int(time.time()) + 600}, "issued in the future"),
        ({"aud": None}, "no audience"),
        ({"aud": []}, "an empty audience"),
    ],
)
async def test_claims_that_refuse_a_token(
    anyio_backend: str, overrides: dict[str, Any], why: str
) -> None:
    assert await static(EC_JWK).verify(mint(**overrides)) is None, why


async def test_clock_skew_within_the_leeway_is_allowed(anyio_backend: str) -> None:
    now = int(time.time())
    token = mint(exp=now - 10, nbf=now + 10, iat=now + 10)
    assert await static(EC_JWK).verify(token) is not None
    assert await static(EC_JWK, leeway=0).verify(token) is None


async def test_a_configured_audience_must_be_named(anyio_backend: str) -> None:
    verifier = static(EC_JWK, audience=["https://a.example/mcp", AUDIENCE])
    assert await verifier.verify(mint()) is not None
    assert await verifier.verify(mint(aud=["https://x.example", AUDIENCE])) is not None
    assert await verifier.verify(mint(aud="https://x.example")) is None
    no_aud = static(EC_JWK, require_audience=False)
    assert await no_aud.verify(mint(aud=None)) is not None


@pytest.mark.parametrize(
    ("extra", "scopes"),
    [
        ({"scope": "a b"}, ("a", "b")),
        ({"scope": None, "scp": ["a", "b"]}, ("a", "b")),
        ({"scope": None, "scp": "a b"}, ("a", "b")),
        ({"scope": None}, ()),
    ],
)
async def test_scopes_from_scope_or_scp(
    anyio_backend: str, extra: dict[str, Any], scopes: tuple[str, ...]
) -> None:
    token = await static(EC_JWK).verify(mint(**extra))
    assert token is not None and token.scopes == scopes


async def test_the_client_is_client_id_else_azp(anyio_backend: str) -> None:
    token = await static(EC_JWK).verify(mint(client_id=None, azp="spa"))
    assert token is not None and token.client_id == "spa"


@pytest.mark.parametrize(
    ("typ", "accepted"),
    [
        (None, True),
        ("JWT", True),
        ("at+jwt", True),
        ("application/at+JWT", True),
        ("dpop+jwt", False),  # a DPoP proof is not an access token
        ("logout+jwt", False),
        ("secevent+jwt", False),
    ],
)
async def test_explicit_types_other_than_access_tokens_are_refused(
    anyio_backend: str, typ: str | None, accepted: bool
) -> None:
    """RFC 8725 section 3.11: a JWT of another kind signed by the same keys is not
    an access token."""
    assert (await static(EC_JWK).verify(mint(typ=typ)) is not None) is accepted
    strict = static(EC_JWK, token_types=["at+jwt"])
    assert (await strict.verify(mint(typ=typ)) is not None) is (
        accepted and typ not in (None, "JWT")
    )


# =================================================================================================
# Keys
# =================================================================================================


async def test_rsa_and_ec_keys_of_one_set(anyio_backend: str) -> None:
    verifier = static(EC_JWK, RSA_JWK)
    assert await verifier.verify(mint()) is not None
    assert await verifier.verify(mint(RSA_KEY, "RS256", "r1")) is not None
    assert await verifier.verify(mint(RSA_KEY, "PS256", "r1")) is not None


async def test_the_kid_picks_the_key_and_an_unknown_kid_is_refused(anyio_backend: str) -> None:
    verifier = static(EC_JWK, RSA_JWK)
    assert await verifier.verify(mint(kid="r1")) is None  # EC token, RSA key named
    assert await verifier.verify(mint(kid="k9")) is None


async def test_without_a_kid_the_keys_that_fit_are_tried(anyio_backend: str) -> None:
    other = public_jwk(ec.generate_private_key(ec.SECP256R1()), None)
    verifier = static(other, public_jwk(EC_KEY, None), RSA_JWK)
    assert await verifier.verify(mint(kid=None)) is not None


@pytest.mark.parametrize(
    "extra",
    [{"use": "enc"}, {"key_ops": ["encrypt"]}, {"key_ops": "verify"}, {"alg": "ES384"}],
)
async def test_keys_are_used_only_for_what_they_declare(
    anyio_backend: str, extra: dict[str, Any]
) -> None:
    assert await static(public_jwk(EC_KEY, "k1", **extra)).verify(mint()) is None
    declared = public_jwk(EC_KEY, "k1", use="sig", key_ops=["verify"], alg="ES256")
    assert await static(declared).verify(mint()) is not None


async def test_algorithms_outside_the_allowed_list_are_refused(anyio_backend: str) -> None:
    token = mint(RSA_KEY, "RS512", "r1")
    assert await static(RSA_JWK).verify(token) is None
    assert await static(RSA_JWK, algorithms=["RS512"]).verify(token) is not None


async def test_a_token_signed_by_another_key_is_refused(anyio_backend: str) -> None:
    stranger = ec.generate_private_key(ec.SECP256R1())
    assert await static(EC_JWK).verify(mint(stranger)) is None


async def test_malformed_keys_in_the_set_are_skipped(anyio_backend: str) -> None:
    broken = {"kty": "EC", "crv": "P-256", "x": "AQ", "y": "AQ", "kid": "bad"}
    leaked = {**public_jwk(EC_KEY, "k1"), "d": "AAAA"}
    verifier = static(broken, leaked, "not a key", RSA_JWK)  # type: ignore[arg-type]
    assert await verifier.verify(mint()) is None  # the private-member copy was skipped
    assert await verifier.verify(mint(RSA_KEY, "RS256", "r1")) is not None


@pytest.mark.parametrize(
    "text",
    ["", "not-a-jwt", "a.b.c", mint() + ".x", mint(alg="ES256")[:-3]],
)
async def test_garbage_is_refused_not_raised(anyio_backend: str, text: str) -> None:
    assert await static(EC_JWK).verify(text) is None


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["iss", "exp", "aud", "nbf", "iat", "scope"]),
        st.one_of(
            st.none(),
            st.integers(-(2**63), 2**63 - 1),  # what a JSON encoder writes
            st.floats(allow_nan=True),
            st.text(max_size=20),
            st.lists(st.text(max_size=5), max_size=3),
            st.booleans(),
        ),
    )
)
def test_any_claims_give_a_token_or_none(overrides: dict[str, Any]) -> None:
    """Whatever the claims hold, verifying returns an ``AccessToken`` or ``None``;
    a token comes back only when every rule of the module docstring holds."""
    # Signed as bytes: PyJWT's JWT encoder refuses some of these claims itself.
    payload = orjson.dumps(claims(**overrides))
    token = jwt.api_jws.PyJWS().encode(payload, EC_KEY, algorithm="ES256", headers={"kid": "k1"})
    found = anyio.run(static(EC_JWK).verify, token)
    if found is None:
        return
    final = jwt.decode(token, options={"verify_signature": False})
    assert final["iss"] == ISSUER
    assert isinstance(final["exp"], (int, float)) and not isinstance(final["exp"], bool)
    assert final["exp"] + 60 > time.time()
    assert final.get("aud")


def test_configuration_is_checked() -> None:
    with pytest.raises(ValueError, match="HS256"):
        JWTVerifier(ISSUER, jwks={"keys": []}, algorithms=["HS256"])
    with pytest.raises(ValueError, match="https"):
        JWTVerifier("http://issuer.example")
    with pytest.raises(ValueError, match="https"):
        JWTVerifier(ISSUER, jwks_uri="http://issuer.example/jwks")
    with pytest.raises(ValueError, match="negative"):
        JWTVerifier(ISSUER, jwks={"keys": []}, leeway=-1)
    with pytest.raises(JWKSError, match="keys"):
        JWTVerifier(ISSUER, jwks={"no": "keys"})
    JWTVerifier("http://127.0.0.1:9/issuer")  # http on loopback is allowed


# =================================================================================================
# Fetching the key set
# =================================================================================================


class Issuer:
    """An authorization server's metadata and JWK Set, scripted; ``down`` makes it fail."""

    def __init__(self) -> None:
        self.keys: list[dict[str, Any]] = [EC_JWK]
        self.down = False
        self.base = ""
        self.jwks_delay = 0.0

    @property
    def issuer(self) -> str:
        return self.base + "/tenant"

    async def handle(self, seen: Seen) -> Reply:
        if self.down:
            return Reply.text(503, "unavailable")
        if seen.target == "/.well-known/oauth-authorization-server/tenant":
            return Reply.text(404, "no")
        if seen.target == "/.well-known/openid-configuration/tenant":
            return Reply.json(as_metadata(self.issuer, jwks_uri=self.base + "/keys"))
        if seen.target == "/keys":
            await anyio.sleep(self.jwks_delay)
            return Reply.json({"keys": self.keys})
        return Reply.text(404, "no")


@asynccontextmanager
async def issuer_server() -> AsyncIterator[tuple[Issuer, Any]]:
    issuer = Issuer()
    async with raw_server(issuer.handle) as server:
        issuer.base = f"http://127.0.0.1:{server.port}"
        yield issuer, server


def fetched(server: Any) -> list[str]:
    return [seen.target for seen in server.seen]


async def test_keys_are_found_through_the_issuers_metadata(anyio_backend: str) -> None:
    """RFC 8414 first, then OpenID Connect discovery, then the JWK Set; once."""
    async with issuer_server() as (issuer, server):
        verifier = JWTVerifier(issuer.issuer)
        for _ in range(3):
            assert await verifier.verify(mint(iss=issuer.issuer)) is not None
        assert fetched(server) == [
            "/.well-known/oauth-authorization-server/tenant",
            "/.well-known/openid-configuration/tenant",
            "/keys",
        ]
        await verifier.aclose()


async def test_metadata_of_another_issuer_is_refused(anyio_backend: str) -> None:
    async with issuer_server() as (issuer, _):
        verifier = JWTVerifier(issuer.base + "/other", jwks=None)
        with pytest.raises(JWKSError):
            await verifier.verify(mint(iss=issuer.base + "/other"))
        await verifier.aclose()


async def test_a_rotated_key_is_fetched_when_first_seen(anyio_backend: str) -> None:
    async with issuer_server() as (issuer, server):
        verifier = JWTVerifier(issuer.issuer, jwks_uri=issuer.base + "/keys", refresh_interval=0)
        assert await verifier.verify(mint(iss=issuer.issuer)) is not None
        issuer.keys = [EC_JWK, RSA_JWK]
        assert await verifier.verify(mint(RSA_KEY, "RS256", "r1", iss=issuer.issuer)) is not None
        assert fetched(server) == ["/keys", "/keys"]
        await verifier.aclose()


async def test_unknown_kids_cannot_make_it_hammer_the_issuer(anyio_backend: str) -> None:
    """A refetch for an unknown ``kid`` at most once per ``refresh_interval``."""
    async with issuer_server() as (issuer, server):
        verifier = JWTVerifier(issuer.issuer, jwks_uri=issuer.base + "/keys")
        assert await verifier.verify(mint(iss=issuer.issuer)) is not None
        for n in range(20):
            assert await verifier.verify(mint(kid=f"random-{n}", iss=issuer.issuer)) is None
        # The first fetch was less than refresh_interval (30 s) ago: none of them refetched.
        assert fetched(server) == ["/keys"]
        issuer.keys = [EC_JWK, RSA_JWK]
        verifier.refresh_interval = 0
        assert await verifier.verify(mint(RSA_KEY, "RS256", "r1", iss=issuer.issuer)) is not None
        assert fetched(server) == ["/keys", "/keys"]
        await verifier.aclose()


async def test_concurrent_requests_share_one_fetch(anyio_backend: str) -> None:
    async with issuer_server() as (issuer, server):
        issuer.jwks_delay = 0.05
        verifier = JWTVerifier(issuer.issuer, jwks_uri=issuer.base + "/keys")
        results: list[AccessToken | None] = []

        async def one() -> None:
            results.append(await verifier.verify(mint(iss=issuer.issuer)))

        async with anyio.create_task_group() as tg:
            for _ in range(10):
                tg.start_soon(one)
        assert len(results) == 10 and all(r is not None for r in results)
        assert fetched(server) == ["/keys"]
        await verifier.aclose()


async def test_an_unreachable_issuer_is_an_error_not_a_refusal(anyio_backend: str) -> None:
    async with issuer_server() as (issuer, _):
        issuer.down = True
        verifier = JWTVerifier(issuer.issuer, jwks_uri=issuer.base + "/keys")
        with pytest.raises(JWKSError, match="503"):
            await verifier.verify(mint(iss=issuer.issuer))
        await verifier.aclose()


async def test_known_keys_outlive_an_outage(anyio_backend: str) -> None:
    """Past ``cache_ttl`` with the issuer down, the keys fetched before still check
    tokens; only a key never seen cannot be checked (an error, then: 503)."""
    async with issuer_server() as (issuer, _):
        verifier = JWTVerifier(
            issuer.issuer, jwks_uri=issuer.base + "/keys", cache_ttl=0, refresh_interval=0
        )
        assert await verifier.verify(mint(iss=issuer.issuer)) is not None
        issuer.down = True
        assert await verifier.verify(mint(iss=issuer.issuer)) is not None
        with pytest.raises(JWKSError):
            await verifier.verify(mint(RSA_KEY, "RS256", "r1", iss=issuer.issuer))
        await verifier.aclose()


async def test_an_oversized_key_set_is_an_error(anyio_backend: str) -> None:
    async def handle(seen: Seen) -> Reply:
        return Reply.json({"keys": [EC_JWK], "pad": "x" * 300_000})

    async with raw_server(handle) as server:
        verifier = JWTVerifier(ISSUER, jwks_uri=f"http://127.0.0.1:{server.port}/keys")
        with pytest.raises(JWKSError):
            await verifier.verify(mint())
        await verifier.aclose()


# =================================================================================================
# End to end, behind mcpwire's HTTP server
# =================================================================================================


@pytest.fixture(scope="module")
def jwt_as() -> Iterator[AuthServer]:
    with AuthServer(MemoryProvider(jwt_key=ec.generate_private_key(ec.SECP256R1()))) as server:
        yield server


def protected_by(verifier: JWTVerifier, issuer: str) -> ResourceServerAuth:
    return ResourceServerAuth(
        verifier,
        authorization_servers=[issuer],
        scopes_supported=["mcp:read", "mcp:write"],
        required_scopes=["mcp:read"],
    )


# SDK deviation: on trio, httpx2 inside the SDK client leaves async generators
# unfinished when a stream is closed, and trio reports them when they are collected.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
async def test_reference_client_and_server_tokens_checked_without_introspection(
    anyio_backend: str, jwt_as: AuthServer
) -> None:
    """The reference SDK's client runs its OAuth flow against the reference SDK's
    authorization server, which issues JWTs; mcpwire checks them with the published
    key and never asks the authorization server about a token."""
    issuer = jwt_as.issuer + "/"  # as its metadata spells it
    verifier = JWTVerifier(issuer, jwks_uri=jwt_as.issuer + "/jwks")
    storage = MemoryStorage()
    before = jwt_as.provider.introspections
    async with running(guarded_app(), auth=protected_by(verifier, issuer)) as http:
        url = f"http://127.0.0.1:{http.port}/mcp"
        with anyio.fail_after(60):
            async with sdk_oauth_client(url, storage) as mcp_client:
                result = await mcp_client.call_tool("whoami", {})
        seen = orjson.loads(result.content[0].text)
        assert seen["client"] == storage.client_info.client_id
        assert seen["subject"] == "user-1"
        assert "mcp:read" in seen["scopes"]
        header = jwt.get_unverified_header(storage.tokens.access_token)
        assert header["kid"] == JWT_KID and header["typ"] == "at+jwt"
    assert jwt_as.provider.introspections == before
    assert verifier.fetches == 1
    await verifier.aclose()


async def test_mcpwire_client_with_a_jwt_and_the_resource_audience_rule(
    anyio_backend: str,
) -> None:
    """A token for this server passes; one for another resource gets 401 from the
    server's RFC 8707 check although the verifier has no audience configured."""
    verifier = static(EC_JWK)
    async with running(guarded_app(), auth=protected_by(verifier, ISSUER)) as http:
        url = f"http://127.0.0.1:{http.port}/mcp"
        good = mint(aud=url)
        async with Client.http(url, headers={"Authorization": f"Bearer {good}"}) as mcp:
            result = await mcp.call_tool("whoami", {})
            seen = json.loads(result.content[0].text)  # type: ignore[union-attr]
            assert seen == {
                "client": "client-1",
                "scopes": ["mcp:read", "mcp:write"],
                "subject": "user-1",
            }
        for token in (mint(aud="https://elsewhere.example/mcp"), mint(exp=1)):
            async with client(http.port) as raw:
                reply = await raw.request(
                    body=init_body(), headers={"authorization": f"Bearer {token}"}
                )
            assert reply.status == 401
            assert 'error="invalid_token"' in reply.headers["www-authenticate"]


async def test_an_unreachable_issuer_makes_the_server_answer_503(anyio_backend: str) -> None:
    async with issuer_server() as (issuer, _):
        issuer.down = True
        verifier = JWTVerifier(issuer.issuer, jwks_uri=issuer.base + "/keys")
        async with running(guarded_app(), auth=protected_by(verifier, issuer.issuer)) as http:
            token = mint(iss=issuer.issuer, aud=f"http://127.0.0.1:{http.port}/mcp")
            async with client(http.port) as raw:
                reply = await raw.request(
                    body=init_body(), headers={"authorization": f"Bearer {token}"}
                )
        assert reply.status == 503
        await verifier.aclose()


async def test_a_dpop_bound_jwt_needs_proofs_of_its_key(anyio_backend: str) -> None:
    """A JWT with ``cnf.jkt`` (RFC 9449 §6.1) verified by ``JWTVerifier``: mcpwire's
    client presents it with proofs of its key; as a plain Bearer token it is refused."""
    from mcpwire import InMemoryTokenStorage, OAuthClient, OAuthTokens, headless_redirect_handler
    from mcpwire._jose import ES256Signer, jwk_thumbprint

    signer = ES256Signer.generate()
    jkt = jwk_thumbprint(signer.public_jwk())
    verifier = static(EC_JWK)
    auth = protected_by(verifier, ISSUER)
    async with running(guarded_app(), auth=auth) as http:
        url = f"http://127.0.0.1:{http.port}/mcp"
        token = mint(aud=url, cnf={"jkt": jkt})
        storage = InMemoryTokenStorage()
        storage.tokens = OAuthTokens(token, ISSUER, url, token_type="DPoP", dpop_jkt=jkt)
        client_auth = OAuthClient(
            redirect_handler=headless_redirect_handler(), storage=storage, dpop=signer
        )
        with anyio.fail_after(20):
            async with Client.http(url, auth=client_auth) as mcp:
                result = await mcp.call_tool("whoami", {})
        assert json.loads(result.text or "")["client"] == "client-1"
        async with client(http.port) as raw:
            reply = await raw.request(
                body=init_body(), headers={"authorization": f"Bearer {token}"}
            )
        assert reply.status == 401
        assert 'error="invalid_token"' in reply.headers["www-authenticate"]
