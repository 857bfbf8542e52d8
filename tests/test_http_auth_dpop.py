"""The HTTP server as a DPoP-aware protected resource (RFC 9449 §4.3, §7, §9).

Proofs come from two independent implementations: mcpwire's own OAuth
client (``OAuthClient(dpop=...)``, end to end over a socket, with stored
tokens or through a whole flow against a scripted authorization server),
and PyJWT (``import jwt``) for the one-check-per-test section, so a proof
is never judged only by the code that wrote it. Tokens come from a
``StaticTokenVerifier``; a bound token carries ``cnf.jkt`` (RFC 9449 §6),
computed here by hand from RFC 7638.
"""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import jwt
import orjson
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa
from http_client.rawserver import Reply as RawReply
from http_client.rawserver import Seen, approved, as_metadata, raw_server, registered
from http_raw import Reply, client, modern, running
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from jwt.algorithms import ECAlgorithm, OKPAlgorithm, RSAAlgorithm

from mcpwire import (
    AccessToken,
    Client,
    Context,
    HTTPServer,
    InMemoryTokenStorage,
    OAuthClient,
    ResourceServerAuth,
    Server,
    StaticTokenVerifier,
    headless_redirect_handler,
)
from mcpwire._auth_dpop import DPoPChecker, DPoPError, request_url
from mcpwire._jose import ES256Signer
from mcpwire._oauth_storage import OAuthTokens
from mcpwire.sansio._challenge import parse_challenges
from mcpwire.sansio._oauth import normalize_htu

pytestmark = pytest.mark.anyio

AS_URL = "https://auth.example.com"
SCOPES = ("mcp:read",)


# =================================================================================================
# Keys, thumbprints and proofs, independently of mcpwire
# =================================================================================================


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def thumbprint(jwk: dict[str, Any]) -> str:
    """RFC 7638 §3: the required members, sorted, no whitespace, SHA-256."""
    members = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}
    required = {name: jwk[name] for name in members[jwk["kty"]]}
    canonical = orjson.dumps(required, option=orjson.OPT_SORT_KEYS)
    return b64(hashlib.sha256(canonical).digest())


#: A member value that removes the member from a proof (``None`` sends JSON null).
DROP: Any = object()


def ath(token: str) -> str:
    return b64(hashlib.sha256(token.encode("ascii")).digest())


class Holder:
    """A client's DPoP key, and PyJWT proofs signed with it."""

    def __init__(self, alg: str = "ES256") -> None:
        self.alg = alg
        if alg.startswith("ES"):
            curve = {"ES256": ec.SECP256R1, "ES384": ec.SECP384R1, "ES512": ec.SECP521R1}[alg]
            self.key: Any = ec.generate_private_key(curve())
            algorithm: Any = ECAlgorithm
        elif alg == "EdDSA":
            self.key = ed25519.Ed25519PrivateKey.generate()
            algorithm = OKPAlgorithm
        else:
            self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            algorithm = RSAAlgorithm
        self.jwk: dict[str, Any] = algorithm.to_jwk(self.key.public_key(), as_dict=True)
        self.private_jwk: dict[str, Any] = algorithm.to_jwk(self.key, as_dict=True)
        self.jkt = thumbprint(self.jwk)

    def proof(
        self,
        method: str,
        url: str,
        token: str | None,
        *,
        header: dict[str, Any] | None = None,
        claims: dict[str, Any] | None = None,
        alg: str | None = None,
        key: Any = DROP,
    ) -> str:
        """A proof for ``method url`` presenting ``token``; ``header`` and ``claims``
        override (``DROP`` removes a member)."""
        body: dict[str, Any] = {
            "jti": secrets.token_urlsafe(16),
            "htm": method,
            "htu": url,
            "iat": int(time.time()),
        }
        if token is not None:
            body["ath"] = ath(token)
        body.update(claims or {})
        head: dict[str, Any] = {"typ": "dpop+jwt", "jwk": self.jwk, **(header or {})}
        body = {k: v for k, v in body.items() if v is not DROP}
        head = {k: v for k, v in head.items() if v is not DROP}
        if "typ" not in head:
            head["typ"] = None  # PyJWT writes typ=JWT unless told not to
        return jwt.encode(body, self.key if key is DROP else key, alg or self.alg, headers=head)


# =================================================================================================
# The protected server, and a raw client
# =================================================================================================


class Recording(ResourceServerAuth):
    """``ResourceServerAuth`` noting the challenges it answers with (status, error, scheme)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.challenges: list[tuple[int, str | None]] = []

    async def _challenge(
        self, http: Any, status: int, resource: str, *args: Any, **kw: Any
    ) -> None:
        error = args[0] if args else kw.get("error")
        self.challenges.append((status, error))
        await super()._challenge(http, status, resource, *args, **kw)


def guarded() -> tuple[Server, list[AccessToken | None]]:
    """A server whose tool notes the token of every call that reaches it."""
    app = Server("dpop-guarded", "1.0")
    calls: list[AccessToken | None] = []

    @app.tool()
    def whoami(ctx: Context) -> str:
        calls.append(ctx.auth)
        token = ctx.auth
        assert token is not None
        return orjson.dumps({"client": token.client_id, "cnf": token.claims.get("cnf")}).decode()

    return app, calls


def tokens_for(holder: Holder) -> dict[str, AccessToken]:
    bound = {"cnf": {"jkt": holder.jkt}}
    return {
        "bound": AccessToken("client-1", SCOPES, subject="user-1", claims=bound),
        "bound-2": AccessToken("client-1", SCOPES, subject="user-1", claims=bound),
        "bound-other": AccessToken("client-1", SCOPES, claims={"cnf": {"jkt": "A" * 43}}),
        "bound-read-less": AccessToken("client-1", (), subject="user-1", claims=bound),
        "plain": AccessToken("client-1", SCOPES, subject="user-1"),
        "intruder": AccessToken("client-2", SCOPES, subject="user-1", claims=bound),
    }


def auth_for(holder: Holder, **options: Any) -> Recording:
    options.setdefault("authorization_servers", [AS_URL])
    options.setdefault("required_scopes", list(SCOPES))
    return Recording(StaticTokenVerifier(tokens_for(holder)), **options)


class Served:
    def __init__(self, http: HTTPServer, auth: Recording, calls: list[AccessToken | None]) -> None:
        self.http, self.auth, self.calls = http, auth, calls
        self.port = http.port or 0
        self.url = f"http://127.0.0.1:{self.port}/mcp"


@asynccontextmanager
async def serving(holder: Holder, **options: Any) -> AsyncIterator[Served]:
    app, calls = guarded()
    auth = auth_for(holder, **options)
    async with running(app, auth=auth, legacy_sse=True) as http:
        yield Served(http, auth, calls)


async def call(
    served: Served,
    token: str,
    proofs: list[str] | None = None,
    *,
    scheme: str = "DPoP",
    path: str = "/mcp",
) -> Reply:
    """One modern ``tools/call whoami`` on a fresh connection."""
    body, headers = modern(1, "tools/call", {"name": "whoami", "arguments": {}})
    headers["authorization"] = f"{scheme} {token}"
    async with client(served.port) as raw:
        extra = [("dpop", proof) for proof in proofs or []]
        await raw.send("POST", body, headers, path, extra)
        return await raw.rest(await raw.head())


def refused(reply: Reply, status: int, scheme: str, error: str | None) -> dict[str, str]:
    """The one challenge of a refusal, after checking its status, scheme and error."""
    assert reply.status == status, reply
    found = parse_challenges(reply.headers["www-authenticate"])
    assert [c.scheme for c in found] == [scheme], found
    params = dict(found[0].params)
    assert params.get("error") == error, params
    if error is not None:
        assert reply.json()["error"] == error
    return params


def answered(reply: Reply) -> dict[str, Any]:
    assert reply.status == 200, reply
    text = reply.json()["result"]["content"][0]["text"]
    seen: dict[str, Any] = orjson.loads(text)
    return seen


# =================================================================================================
# End to end: mcpwire's OAuth client with a DPoP key
# =================================================================================================


def stored(url: str, holder: Holder) -> InMemoryTokenStorage:
    """A DPoP token for ``url`` bound to ``holder``'s key, as an earlier flow left it."""
    storage = InMemoryTokenStorage()
    storage.tokens = OAuthTokens(
        "bound", AS_URL, url, scopes=list(SCOPES), token_type="DPoP", dpop_jkt=holder.jkt
    )
    return storage


class SignerHolder(Holder):
    """The key of an ``ES256Signer``, for the server's token table."""

    def __init__(self, signer: ES256Signer) -> None:
        self.alg = "ES256"
        self.jwk = dict(signer.public_jwk())
        self.jkt = thumbprint(self.jwk)


def bound_client(served: Served, holder: Holder, signer: ES256Signer) -> OAuthClient:
    """An OAuth client with ``signer``'s DPoP key and a token bound to it already."""
    return OAuthClient(
        redirect_handler=headless_redirect_handler(),
        storage=stored(served.url, holder),
        dpop=signer,
    )


async def whoami(client: Client) -> dict[str, Any]:
    result = await client.call_tool("whoami", {})
    seen: dict[str, Any] = orjson.loads(result.text or "")
    return seen


@pytest.mark.parametrize(("mode", "era"), [("legacy", "legacy"), ("auto", "modern")])
async def test_client_with_a_bound_token_both_eras(anyio_backend: str, mode: str, era: str) -> None:
    signer = ES256Signer.generate()
    holder = SignerHolder(signer)
    async with serving(holder) as served:
        auth = bound_client(served, holder, signer)
        with anyio.fail_after(20):
            async with Client.http(served.url, auth=auth, mode=mode) as mcp:
                assert mcp.era == era
                for _ in range(3):
                    seen = await whoami(mcp)
    assert seen == {"client": "client-1", "cnf": {"jkt": holder.jkt}}
    assert served.auth.challenges == []  # every proof passed the first time
    assert len(served.calls) == 3


async def test_client_over_the_deprecated_http_sse_transport(anyio_backend: str) -> None:
    signer = ES256Signer.generate()
    holder = SignerHolder(signer)
    async with serving(holder, dpop="required") as served:
        url = f"http://127.0.0.1:{served.port}/sse"
        auth = OAuthClient(
            redirect_handler=headless_redirect_handler(), storage=stored(url, holder), dpop=signer
        )
        with anyio.fail_after(20):
            async with Client.http(url, auth=auth, transport="sse") as mcp:
                seen = await whoami(mcp)
                await whoami(mcp)
    assert seen["cnf"] == {"jkt": holder.jkt}
    assert served.auth.challenges == []


async def test_nonce_round_trip(anyio_backend: str) -> None:
    """The server asks for a nonce (401 use_dpop_nonce + DPoP-Nonce); the client
    sends the request once more with it, and keeps it for later proofs."""
    signer = ES256Signer.generate()
    holder = SignerHolder(signer)
    async with serving(holder, dpop_nonce=True) as served:
        auth = bound_client(served, holder, signer)
        with anyio.fail_after(20):
            async with Client.http(served.url, auth=auth, mode="auto") as mcp:
                for _ in range(3):
                    await whoami(mcp)
        assert served.auth.challenges == [(401, "use_dpop_nonce")]
        assert auth.dpop is not None
        [nonce] = auth.dpop.nonces.values()
        checker = served.auth.dpop_checker
        assert checker is not None and checker.nonce_valid(nonce)
    assert len(served.calls) == 3


async def test_full_flow_in_required_mode_with_a_scripted_authorization_server(
    anyio_backend: str,
) -> None:
    """No token yet: the 401 offers DPoP only, the client discovers, gets a
    DPoP-bound token for its key, and presents it with proofs (and a nonce)."""
    signer = ES256Signer.generate()
    holder = SignerHolder(signer)
    token_proofs: list[str] = []

    async def authorization(seen: Seen) -> RawReply:
        path, _, query = seen.target.partition("?")
        issuer = f"http://127.0.0.1:{as_.port}"
        if path == "/.well-known/oauth-authorization-server":
            return RawReply.json(as_metadata(issuer, dpop_signing_alg_values_supported=["ES256"]))
        if path == "/register":
            return registered()
        if path == "/authorize":
            return approved(query, "the-code")[1]
        if path == "/token":
            token_proofs.append(seen.headers["dpop"])
            return RawReply.json({"access_token": "bound", "token_type": "DPoP"})
        return RawReply.empty(404)

    async with raw_server(authorization) as as_:
        issuer = f"http://127.0.0.1:{as_.port}"
        async with serving(
            holder, dpop="required", dpop_nonce=True, authorization_servers=[issuer]
        ) as served:
            auth = OAuthClient(redirect_handler=headless_redirect_handler(), dpop=signer)
            with anyio.fail_after(30):
                async with Client.http(served.url, auth=auth) as mcp:
                    seen = await whoami(mcp)
            statuses = served.auth.challenges
    assert seen["cnf"] == {"jkt": holder.jkt}
    # One 401, without credentials; its DPoP-Nonce went into the first proof,
    # so no use_dpop_nonce round trip was needed.
    assert statuses == [(401, None)]
    [proof] = token_proofs
    assert thumbprint(jwt.get_unverified_header(proof)["jwk"]) == holder.jkt


async def test_a_bearer_client_gets_the_dpop_challenge_in_required_mode(
    anyio_backend: str,
) -> None:
    holder = Holder()
    async with serving(holder, dpop="required") as served:
        reply = await call(served, "plain", scheme="Bearer")
        params = refused(reply, 401, "dpop", None)  # as if it carried no credentials
        # A malformed Bearer field too: Bearer is not taken here at all.
        refused(await call(served, "two words", scheme="Bearer"), 401, "dpop", None)
        assert params["algs"] == "ES256 ES384 ES512 EdDSA PS256 PS384 PS512 RS256 RS384 RS512"
        assert params["resource_metadata"] == (
            f"http://127.0.0.1:{served.port}/.well-known/oauth-protected-resource/mcp"
        )
        document = await metadata(served)
        assert document["dpop_bound_access_tokens_required"] is True
    assert served.calls == []


async def metadata(served: Served) -> dict[str, Any]:
    async with client(served.port) as raw:
        reply = await raw.request("GET", path="/.well-known/oauth-protected-resource/mcp")
    assert reply.status == 200
    document: dict[str, Any] = reply.json()
    return document


# =================================================================================================
# Challenges: both schemes without credentials; the scheme the request used otherwise
# =================================================================================================


async def test_401_without_credentials_offers_both_schemes(anyio_backend: str) -> None:
    import httpx2
    from mcp.client.auth.utils import extract_field_from_www_auth

    holder = Holder()
    async with serving(holder, dpop_algorithms=["ES256", "EdDSA"], dpop_nonce=True) as served:
        body, headers = modern(1, "tools/list")
        async with client(served.port) as raw:
            reply = await raw.request(body=body, headers=headers)
        document = await metadata(served)
    assert reply.status == 401
    header = reply.headers["www-authenticate"]
    found = parse_challenges(header)
    assert [c.scheme for c in found] == ["bearer", "dpop"]
    resource_metadata = f"http://127.0.0.1:{served.port}/.well-known/oauth-protected-resource/mcp"
    assert dict(found[0].params) == {"resource_metadata": resource_metadata, "scope": "mcp:read"}
    assert dict(found[1].params) == {
        "algs": "ES256 EdDSA",
        "resource_metadata": resource_metadata,
        "scope": "mcp:read",
    }
    assert reply.headers["dpop-nonce"]  # nonces on: the first proof can carry one
    # The reference SDK's client reads the same values out of the one field.
    response = httpx2.Response(401, headers={"www-authenticate": header})
    assert extract_field_from_www_auth(response, "resource_metadata") == resource_metadata
    assert extract_field_from_www_auth(response, "scope") == "mcp:read"
    assert document["dpop_signing_alg_values_supported"] == ["ES256", "EdDSA"]
    assert "dpop_bound_access_tokens_required" not in document


async def test_dpop_off_is_bearer_only(anyio_backend: str) -> None:
    holder = Holder()
    async with serving(holder, dpop="off") as served:
        proof = holder.proof("POST", served.url, "bound")
        refused(await call(served, "bound", [proof]), 401, "bearer", None)
        answered(await call(served, "plain", scheme="Bearer"))
        assert "dpop_signing_alg_values_supported" not in await metadata(served)
    assert len(served.calls) == 1


async def test_bearer_with_a_bound_token_is_refused(anyio_backend: str) -> None:
    """RFC 9449 §7.2: a bound token presented as Bearer would defeat the binding,
    with a proof beside it or not, whatever the mode."""
    holder = Holder()
    for mode in ("allowed", "off"):
        async with serving(holder, dpop=mode) as served:
            proof = holder.proof("POST", served.url, "bound")
            for proofs in ([], [proof]):
                reply = await call(served, "bound", proofs, scheme="Bearer")
                params = refused(reply, 401, "bearer", "invalid_token")
                assert "DPoP scheme" in params["error_description"]
            answered(await call(served, "plain", scheme="Bearer"))
        assert len(served.calls) == 1


async def test_dpop_scheme_with_an_unbound_token_is_refused(anyio_backend: str) -> None:
    holder = Holder()
    async with serving(holder) as served:
        reply = await call(served, "plain", [holder.proof("POST", served.url, "plain")])
        params = refused(reply, 401, "dpop", "invalid_token")
        assert "not bound" in params["error_description"]
        assert params["algs"]
        # Token problems on the DPoP path use its scheme too.
        reply = await call(served, "unknown", [holder.proof("POST", served.url, "unknown")])
        refused(reply, 401, "dpop", "invalid_token")
    assert served.calls == []


async def test_403_insufficient_scope_uses_the_scheme_of_the_request(anyio_backend: str) -> None:
    holder = Holder()
    async with serving(holder, operation_scopes={"tools/call:whoami": ["mcp:admin"]}) as served:
        proof = holder.proof("POST", served.url, "bound")
        params = refused(await call(served, "bound", [proof]), 403, "dpop", "insufficient_scope")
        assert params["scope"] == "mcp:read mcp:admin"
        proof = holder.proof("POST", served.url, "bound-read-less")
        reply = await call(served, "bound-read-less", [proof])
        assert refused(reply, 403, "dpop", "insufficient_scope")["scope"] == "mcp:read"
        reply = await call(served, "plain", scheme="Bearer")
        refused(reply, 403, "bearer", "insufficient_scope")
    assert served.calls == []


# =================================================================================================
# RFC 9449 §4.3: one check per test, proofs from PyJWT
# =================================================================================================

Mutation = Callable[[Holder, str], str]


def _other_signature(holder: Holder, url: str) -> str:
    """Signed by another key, with the holder's jwk in the header."""
    return holder.proof("POST", url, "bound", key=Holder().key)


def _other_key(holder: Holder, url: str) -> str:
    """A valid proof of another key: the token is not bound to it."""
    return Holder().proof("POST", url, "bound")


def _hs256(holder: Holder, url: str) -> str:
    return holder.proof("POST", url, "bound", alg="HS256", key=b"k" * 32)


def _none(holder: Holder, url: str) -> str:
    return holder.proof("POST", url, "bound", alg="none", key=None)


def _other_port(url: str) -> str:
    port = int(url.split(":")[2].split("/")[0])
    return url.replace(f":{port}/", f":{port + 1}/")


MUTATIONS: dict[str, tuple[Mutation, str]] = {
    "not a JWT": (lambda h, u: "not-a-jwt", "invalid_dpop_proof"),
    "typ JWT": (lambda h, u: h.proof("POST", u, "bound", header={"typ": "JWT"}), "invalid"),
    "no typ": (lambda h, u: h.proof("POST", u, "bound", header={"typ": DROP}), "invalid"),
    "alg none": (_none, "invalid"),
    "alg HS256": (_hs256, "invalid"),
    "no jwk": (lambda h, u: h.proof("POST", u, "bound", header={"jwk": DROP}), "invalid"),
    "jwk not an object": (lambda h, u: h.proof("POST", u, "bound", header={"jwk": "x"}), "invalid"),
    "private jwk": (
        lambda h, u: h.proof("POST", u, "bound", header={"jwk": h.private_jwk}),
        "invalid",
    ),
    "bad signature": (_other_signature, "invalid"),
    "wrong htm": (lambda h, u: h.proof("GET", u, "bound"), "invalid"),
    "wrong htu path": (lambda h, u: h.proof("POST", u + "/other", "bound"), "invalid"),
    "wrong htu port": (lambda h, u: h.proof("POST", _other_port(u), "bound"), "invalid"),
    "wrong htu scheme": (
        lambda h, u: h.proof("POST", u.replace("http:", "https:"), "bound"),
        "invalid",
    ),
    "no jti": (lambda h, u: h.proof("POST", u, "bound", claims={"jti": DROP}), "invalid"),
    "jti not a string": (lambda h, u: h.proof("POST", u, "bound", claims={"jti": 7}), "invalid"),
    "iat too old": (
        lambda h, u: h.proof("POST", u, "bound", claims={"iat": int(time.time()) - 120}),
        "invalid",
    ),
    "iat too new": (
        lambda h, u: h.proof("POST", u, "bound", claims={"iat": int(time.time()) + 120}),
        "invalid",
    ),
    "iat a string": (
        lambda h, u: h.proof("POST", u, "bound", claims={"iat": str(int(time.time()))}),
        "invalid",
    ),
    "no ath": (lambda h, u: h.proof("POST", u, None), "invalid"),
    "ath of another token": (lambda h, u: h.proof("POST", u, "bound-2"), "invalid"),
    "jkt mismatch": (_other_key, "invalid_token"),
}


@pytest.mark.parametrize("case", sorted(MUTATIONS))
async def test_each_proof_check_refuses(anyio_backend: str, case: str) -> None:
    holder = Holder()
    async with serving(holder) as served:
        mutate, error = MUTATIONS[case]
        proof = mutate(holder, served.url)
        reply = await call(served, "bound", [proof])
        error = "invalid_dpop_proof" if error == "invalid" else error
        params = refused(reply, 401, "dpop", error)
        assert params["error_description"]
        # The same request with a good proof passes: the refusal was for the one fault.
        answered(await call(served, "bound", [holder.proof("POST", served.url, "bound")]))
    assert len(served.calls) == 1


async def test_a_missing_proof_is_refused(anyio_backend: str) -> None:
    holder = Holder()
    async with serving(holder) as served:
        params = refused(await call(served, "bound", []), 401, "dpop", "invalid_dpop_proof")
        assert "exactly one" in params["error_description"]
    assert served.calls == []


async def test_two_dpop_headers_are_refused(anyio_backend: str) -> None:
    holder = Holder()
    async with serving(holder) as served:
        good = holder.proof("POST", served.url, "bound")
        twice = [good, holder.proof("POST", served.url, "bound")]
        params = refused(await call(served, "bound", twice), 401, "dpop", "invalid_dpop_proof")
        assert "exactly one" in params["error_description"]
        refused(await call(served, "bound", [good, good]), 401, "dpop", "invalid_dpop_proof")
        answered(await call(served, "bound", [good]))  # not spent by the refusals
    assert len(served.calls) == 1


async def test_a_replayed_proof_is_refused(anyio_backend: str) -> None:
    holder = Holder()
    async with serving(holder) as served:
        proof = holder.proof("POST", served.url, "bound")
        answered(await call(served, "bound", [proof]))
        params = refused(await call(served, "bound", [proof]), 401, "dpop", "invalid_dpop_proof")
        assert "replayed" in params["error_description"]
        # The same jti under another token of the same key is the same proof reused.
        jti = orjson.loads(base64.urlsafe_b64decode(proof.split(".")[1] + "=="))["jti"]
        again = holder.proof("POST", served.url, "bound-2", claims={"jti": jti})
        refused(await call(served, "bound-2", [again]), 401, "dpop", "invalid_dpop_proof")
    assert len(served.calls) == 1


async def test_htu_ignores_the_query_and_normalizes(anyio_backend: str) -> None:
    holder = Holder()
    async with serving(holder) as served:
        # The request has a query, the proof's htu has none (RFC 9449 §4.2).
        proof = holder.proof("POST", served.url, "bound")
        answered(await call(served, "bound", [proof], path="/mcp?x=1"))
        # Case of scheme and host, and the query or fragment in htu, do not matter.
        loud = served.url.replace("http://127.0.0.1", "HTTP://127.0.0.1") + "?y=2#z"
        answered(await call(served, "bound", [holder.proof("POST", loud, "bound")]))
    assert len(served.calls) == 2


@pytest.mark.parametrize("alg", ["ES256", "ES384", "ES512", "RS256", "PS256", "EdDSA"])
async def test_pyjwt_proofs_of_every_algorithm_pass(anyio_backend: str, alg: str) -> None:
    holder = Holder(alg)
    async with serving(holder) as served:
        seen = answered(await call(served, "bound", [holder.proof("POST", served.url, "bound")]))
    assert seen["cnf"] == {"jkt": holder.jkt}


async def test_an_algorithm_not_configured_is_refused(anyio_backend: str) -> None:
    holder = Holder("EdDSA")
    async with serving(holder, dpop_algorithms=["ES256"]) as served:
        reply = await call(served, "bound", [holder.proof("POST", served.url, "bound")])
        params = refused(reply, 401, "dpop", "invalid_dpop_proof")
        assert params["algs"] == "ES256"
    assert served.calls == []


async def test_nonces_missing_stale_or_foreign_get_use_dpop_nonce(anyio_backend: str) -> None:
    holder = Holder()
    async with serving(holder, dpop_nonce=True) as served:
        checker = served.auth.dpop_checker
        assert checker is not None
        stale = checker.nonce(time.time() - checker.nonce_lifetime - 5)
        foreign = DPoPChecker(nonce=True).nonce()
        for nonce in (None, stale, foreign, "not-a-nonce"):
            claims = {"nonce": nonce} if nonce is not None else {}
            proof = holder.proof("POST", served.url, "bound", claims=claims)
            reply = await call(served, "bound", [proof])
            refused(reply, 401, "dpop", "use_dpop_nonce")
            fresh = reply.headers["dpop-nonce"]
            assert checker.nonce_valid(fresh) and fresh != nonce
        proof = holder.proof("POST", served.url, "bound", claims={"nonce": fresh})
        answered(await call(served, "bound", [proof]))
        # A proof that fails another check is told so, not asked for a nonce.
        reply = await call(served, "bound", [holder.proof("GET", served.url, "bound")])
        refused(reply, 401, "dpop", "invalid_dpop_proof")
    assert len(served.calls) == 1


async def test_a_nonce_past_half_its_life_gets_the_next_one_on_success(anyio_backend: str) -> None:
    """RFC 9449 §8.2/§9: the answer offers a new nonce before the old one runs out."""
    holder = Holder()
    async with serving(holder, dpop_nonce=True) as served:
        checker = served.auth.dpop_checker
        assert checker is not None
        lifetime = checker.nonce_lifetime
        for age, offered in ((0, False), (lifetime * 0.4, False), (lifetime * 0.6, True)):
            nonce = checker.nonce(time.time() - age)
            proof = holder.proof("POST", served.url, "bound", claims={"nonce": nonce})
            reply = await call(served, "bound", [proof])
            answered(reply)
            assert ("dpop-nonce" in reply.headers) is offered, (age, reply.headers)
            if offered:
                fresh = reply.headers["dpop-nonce"]
                assert checker.nonce_valid(fresh) and fresh != nonce
                assert checker._nonce_age(fresh, None) is not None
                assert abs(checker._nonce_age(fresh, None) or 0) < 5


async def test_the_client_takes_the_nonce_offered_on_success(anyio_backend: str) -> None:
    """Our client keeps the ``DPoP-Nonce`` of a 200 and proves with it next time, so
    the one ``use_dpop_nonce`` round trip is the first."""
    signer = ES256Signer.generate()
    holder = SignerHolder(signer)
    async with serving(holder, dpop_nonce=True) as served:
        checker = served.auth.dpop_checker
        assert checker is not None
        auth = bound_client(served, holder, signer)
        with anyio.fail_after(20):
            async with Client.http(served.url, auth=auth, mode="auto") as mcp:
                await whoami(mcp)  # 401 use_dpop_nonce, then with the nonce
                assert auth.dpop is not None
                [origin] = auth.dpop.nonces
                old = checker.nonce(time.time() - checker.nonce_lifetime * 0.75)
                auth.dpop.nonces[origin] = old
                await whoami(mcp)  # still good; the answer offers the next one
                offered = auth.dpop.nonces[origin]
                assert offered != old and (checker._nonce_age(offered, None) or 99) < 5
                await whoami(mcp)
        assert served.auth.challenges == [(401, "use_dpop_nonce")]
    assert len(served.calls) == 3


# =================================================================================================
# Legacy sessions and HTTP+SSE: DPoP exactly as Bearer
# =================================================================================================


async def test_a_legacy_session_with_dpop_belongs_to_its_owner(anyio_backend: str) -> None:
    from http_raw import LEGACY, init_body, note, rpc

    holder = Holder()
    async with serving(holder) as served, client(served.port) as raw:

        def dpop(token: str = "bound") -> dict[str, str | None]:
            proof = holder.proof("POST", served.url, token)
            return {"authorization": f"DPoP {token}", "dpop": proof}

        reply = await raw.request(body=init_body(), headers=dpop())
        assert reply.status == 200, reply
        session = {
            "mcp-session-id": reply.headers["mcp-session-id"],
            "mcp-protocol-version": LEGACY,
        }
        done = await raw.request(
            body=note("notifications/initialized"), headers={**session, **dpop()}
        )
        assert done.status == 202
        body = rpc(2, "tools/call", {"name": "whoami"})
        reply = await raw.request(body=body, headers={**session, **dpop()})
        assert reply.status == 200 and "client-1" in reply.body.decode()
        # The same key, but a token of another client: the session does not exist for it.
        reply = await raw.request(body=body, headers={**session, **dpop("intruder")})
        assert reply.status == 404
    assert len(served.calls) == 1


async def test_http_sse_paths_take_dpop(anyio_backend: str) -> None:
    holder = Holder()
    async with serving(holder) as served, client(served.port) as raw:
        sse_url = f"http://127.0.0.1:{served.port}/sse"
        headers: dict[str, str | None] = {
            "accept": "text/event-stream",
            "authorization": "DPoP bound",
            "dpop": holder.proof("GET", sse_url, "bound"),
        }
        await raw.send("GET", headers=headers, path="/sse")
        head = await raw.head()
        assert head.status == 200, head
        endpoint = await raw.sse().next()
        assert endpoint is not None and endpoint.event == "endpoint"
        messages = f"http://127.0.0.1:{served.port}/messages"
        wrong = holder.proof("POST", sse_url, "bound")  # htu of /sse, not /messages
        reply = await call(served, "bound", [wrong], path=endpoint.data)
        refused(reply, 401, "dpop", "invalid_dpop_proof")
        # htu has no query, the request has the session id in it.
        right = holder.proof("POST", messages, "bound")
        reply = await call(served, "bound", [right], path=endpoint.data)
        assert reply.status == 202, reply


# =================================================================================================
# The checker alone (pure): properties
# =================================================================================================

URL = "https://mcp.example.com/mcp"
KEY = Holder()
BOUND = AccessToken("c", claims={"cnf": {"jkt": KEY.jkt}})


def check(proof: str, checker: DPoPChecker, now: float | None = None, token: str = "tok") -> str:
    return checker.check(
        method="POST", url=URL, proofs=[proof], access_token=token, token=BOUND, now=now
    )


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=5,
)
_bad_claims = st.one_of(
    st.tuples(st.just("htm"), _json.filter(lambda v: v != "POST")),
    st.tuples(
        st.just("htu"),
        st.one_of(
            _json.filter(lambda v: not isinstance(v, str)),
            st.text(alphabet="abcxyz/", min_size=1).map(lambda p: "https://mcp.example.com/" + p),
            st.text(max_size=30).filter(lambda v: "mcp.example.com" not in v.lower()),
        ).filter(lambda v: v != URL),
    ),
    st.tuples(
        st.just("iat"),
        st.one_of(
            _json.filter(lambda v: not isinstance(v, (int, float)) or isinstance(v, bool)),
            st.integers(min_value=61).map(lambda d: int(time.time()) + d * 2),
            st.integers(min_value=61).map(lambda d: int(time.time()) - d * 2),
        ),
    ),
    st.tuples(st.just("ath"), _json.filter(lambda v: v != ath("tok"))),
    st.tuples(st.just("jti"), _json.filter(lambda v: not isinstance(v, str) or not v)),
)
_bad_headers = st.one_of(
    st.tuples(
        st.just("typ"), _json.filter(lambda v: not isinstance(v, str) or v.lower() != "dpop+jwt")
    ),
    st.tuples(st.just("jwk"), _json),
)


@settings(suppress_health_check=[HealthCheck.too_slow], max_examples=60)
@given(
    st.one_of(_bad_claims.map(lambda c: ("claims", c)), _bad_headers.map(lambda h: ("header", h)))
)
def test_a_mutated_member_of_a_valid_proof_never_passes(
    change: tuple[str, tuple[str, Any]],
) -> None:
    where, (name, value) = change
    checker = DPoPChecker()
    proof = KEY.proof("POST", URL, "tok", **{where: {name: value}})
    with pytest.raises(DPoPError):
        check(proof, checker)
    check(KEY.proof("POST", URL, "tok"), checker)  # the unmutated proof passes


@settings(max_examples=60)
@given(st.data())
def test_any_change_to_the_signed_text_is_refused(data: st.DataObject) -> None:
    proof = KEY.proof("POST", URL, "tok")
    signed = proof.rsplit(".", 1)[0]
    at = data.draw(st.integers(min_value=0, max_value=len(signed) - 1))
    char = data.draw(st.sampled_from("ABCabc019-_.").filter(lambda c: c != signed[at]))
    tampered = signed[:at] + char + signed[at + 1 :] + proof[len(signed) :]
    with pytest.raises(DPoPError) as refusal:
        check(tampered, DPoPChecker())
    assert refusal.value.error == "invalid_dpop_proof"


_step = st.tuples(
    st.booleans(),  # replay an accepted proof (else a fresh one)
    st.one_of(st.just(0), st.integers(min_value=0, max_value=40)),  # seconds the clock moves
    st.integers(min_value=0, max_value=1000),  # which accepted proof
    st.integers(min_value=-30, max_value=30),  # the fresh proof's iat, from now
)


@settings(max_examples=80)
@given(st.lists(_step, min_size=1, max_size=40), st.integers(min_value=1, max_value=6))
@example([(False, 0, 0, 0), (False, 0, 0, 0), (True, 0, 0, 0)], 1)  # evicted, then replayed
@example([(False, 0, 0, -30), (False, 0, 0, 30), (False, 31, 0, 0), (True, 0, 1, 0)], 2)
def test_the_jti_memory_stays_bounded_and_never_takes_a_proof_twice(
    steps: list[tuple[bool, int, int, int]], capacity: int
) -> None:
    """Random fresh proofs (iat anywhere in the window) and replays of accepted
    ones, the clock moving on: at most ``capacity`` jtis are remembered, and no
    proof is accepted twice, even once its jti was pushed out of the memory."""
    checker = DPoPChecker(replay_capacity=capacity, window=30)
    now = 1_000_000.0
    accepted: list[str] = []
    taken: set[str] = set()
    errors: list[str] = []
    for replay, advance, pick, skew in steps:
        now += advance
        if replay and accepted:
            proof = accepted[pick % len(accepted)]
        else:
            proof = KEY.proof("POST", URL, "tok", claims={"iat": int(now) + skew})
        try:
            check(proof, checker, now)
        except DPoPError as exc:
            errors.append(exc.error)
        else:
            assert proof not in taken
            taken.add(proof)
            accepted.append(proof)
        assert len(checker) <= capacity
    assert accepted  # the first fresh proof always passes
    assert set(errors) <= {"invalid_dpop_proof"}


# =================================================================================================
# The pure helpers
# =================================================================================================


def test_normalize_htu() -> None:
    assert normalize_htu("HTTPS://Mcp.Example.COM:443/mcp?q=1#f") == "https://mcp.example.com/mcp"
    assert normalize_htu("http://h:80") == "http://h/"
    assert normalize_htu("http://h:8080/a%7eb%2f") == "http://h:8080/a~b%2F"
    assert normalize_htu("http://user@h/x") == "http://h/x"
    assert normalize_htu("http://[::1]:3000/mcp") == "http://[::1]:3000/mcp"
    for bad in ("ftp://h/x", "/mcp", "http://", "http://h:99999/", "http://h:x/"):
        assert normalize_htu(bad) is None


def test_request_url_maps_paths_under_the_published_mount() -> None:
    published = "https://mcp.example.com/public/mcp"
    assert request_url(published, "/mcp", "/mcp") == published
    assert request_url(published, "/mcp", "/messages") == "https://mcp.example.com/public/messages"
    assert request_url("http://h/other", "/mcp", "/sse") == "http://h/sse"


def test_checker_configuration_is_checked() -> None:
    for bad in ({"algorithms": ["HS256"]}, {"algorithms": []}, {"algorithms": "ES256"}):
        with pytest.raises(ValueError, match="algorithms"):
            DPoPChecker(**bad)
    with pytest.raises(ValueError, match="positive"):
        DPoPChecker(window=0)
    with pytest.raises(ValueError, match="nonce_key"):
        DPoPChecker(nonce_key=b"short")
    with pytest.raises(ValueError, match="dpop"):
        ResourceServerAuth(StaticTokenVerifier({}), authorization_servers=[AS_URL], dpop="on")  # type: ignore[arg-type]


def test_nonces_share_a_key_across_checkers() -> None:
    one, two = (
        DPoPChecker(nonce=True, nonce_key=b"k" * 32),
        DPoPChecker(nonce=True, nonce_key=b"k" * 32),
    )
    assert two.nonce_valid(one.nonce())
    assert not DPoPChecker(nonce=True).nonce_valid(one.nonce())
    assert not one.nonce_valid(one.nonce(time.time() - one.nonce_lifetime - 2))


# =================================================================================================
# Layering and the command line
# =================================================================================================


def test_a_server_with_auth_loads_no_signature_code_until_a_dpop_request() -> None:
    """Bearer requests (and challenges, nonces included) cost no signature code;
    the first DPoP request loads it."""
    import json
    import subprocess
    import sys

    holder = Holder()
    proof = holder.proof("POST", "http://h/mcp", "b")
    message, routing = modern(1, "tools/list")
    request = json.dumps([message, sorted(routing.items())])
    code = f"""
import json, sys, anyio, orjson
from mcpwire import Server, AccessToken, StaticTokenVerifier, ResourceServerAuth
from mcpwire._asgi import asgi_app
bound = AccessToken("c", claims={{"cnf": {{"jkt": "{holder.jkt}"}}}})
tokens = {{"t": AccessToken("c"), "b": bound}}
auth = ResourceServerAuth(StaticTokenVerifier(tokens), authorization_servers=["https://a.example"],
    resource="http://h/mcp", dpop_nonce=False)
server = Server("x")
@server.tool()
def hello() -> str:
    return "hi"
app = asgi_app(server, auth=auth, allowed_hosts=None, allowed_origins=None)
sent = []
message, routing = json.loads({request!r})
async def go(extra):
    body = orjson.dumps(message)
    headers = [(b"host", b"h"), (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"), *extra]
    headers += [(k.encode(), v.encode()) for k, v in routing]
    scope = {{"type": "http", "method": "POST", "path": "/mcp", "headers": headers}}
    async def receive():
        return {{"type": "http.request", "body": body, "more_body": False}}
    async def send(message):
        if "status" in message:
            sent.append(message["status"])
    await app(scope, receive, send)
watch = ("cryptography", "cryptography.hazmat.primitives.asymmetric.ec")
anyio.run(go, [])
anyio.run(go, [(b"authorization", b"Bearer t")])
before = [name for name in watch if name in sys.modules]
anyio.run(go, [(b"authorization", b"DPoP b"), (b"dpop", b"{proof}")])
after = [name for name in watch if name in sys.modules]
print(json.dumps([sent, before, after]))
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    sent, before, after = json.loads(out.stdout.strip().splitlines()[-1])
    assert sent == [401, 200, 200], out.stderr
    assert before == []
    assert after == ["cryptography", "cryptography.hazmat.primitives.asymmetric.ec"]


def test_without_cryptography_dpop_is_off_by_default_and_required_is_refused() -> None:
    """The optional extra missing (an import of it fails): the default server
    still serves Bearer tokens, and asking for DPoP outright fails at once."""
    import subprocess
    import sys

    code = """
import sys
sys.modules["cryptography"] = None  # what an absent package looks like to import
from mcpwire import CryptographyMissing, ResourceServerAuth, StaticTokenVerifier
auth = ResourceServerAuth(StaticTokenVerifier({}), authorization_servers=["https://a.example"])
assert auth.dpop == "off" and auth.dpop_checker is None and auth.schemes == ("bearer",)
assert "dpop_signing_alg_values_supported" not in auth.document("https://r.example/mcp")
try:
    ResourceServerAuth(StaticTokenVerifier({}), authorization_servers=["https://a.example"],
        dpop="required")
except CryptographyMissing as exc:
    print("refused:", exc)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert "refused: dpop='required' needs 'cryptography'" in out.stdout


def test_cli_dpop_options() -> None:
    """``mcpwire serve --auth-server ... --introspect ... --dpop MODE --dpop-nonce``."""
    from mcpwire._cli import UsageError, _parser
    from mcpwire._cli_serve import serve_auth as _serve_auth

    base = ["serve", "m:s", "--transport", "http", "--auth-server", "https://a.example"]
    base += ["--introspect", "https://a.example/introspect"]
    args = _parser().parse_args([*base, "--dpop", "required", "--dpop-nonce"])
    auth = _serve_auth(args)["auth"]
    assert auth.dpop == "required" and auth.schemes == ("dpop",)
    assert auth.dpop_checker is not None and auth.dpop_checker.nonces
    default = _serve_auth(_parser().parse_args(base))["auth"]
    assert default.dpop == "allowed" and default.dpop_checker is not None
    assert not default.dpop_checker.nonces
    off = _serve_auth(_parser().parse_args([*base, "--dpop", "off"]))["auth"]
    assert off.dpop_checker is None
    with pytest.raises(UsageError, match="--dpop-nonce needs DPoP"):
        _serve_auth(_parser().parse_args([*base, "--dpop", "off", "--dpop-nonce"]))
    with pytest.raises(UsageError, match="need --auth-server"):
        _serve_auth(_parser().parse_args(["serve", "m:s", "--transport", "http", "--dpop-nonce"]))
    with pytest.raises(SystemExit):
        _parser().parse_args([*base, "--dpop", "sometimes"])


def test_processes_sharing_a_nonce_key_take_each_others_nonces(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Behind a load balancer: ``dpop_nonce_key`` (``$MCPWIRE_DPOP_NONCE_KEY`` for
    ``serve``) makes a nonce one process issued good at every other."""
    from mcpwire._cli import UsageError, _parser
    from mcpwire._cli_serve import serve_auth as _serve_auth

    base = ["serve", "m:s", "--transport", "http", "--auth-server", "https://a.example"]
    base += ["--introspect", "https://a.example/introspect", "--dpop-nonce"]
    monkeypatch.setenv("MCPWIRE_DPOP_NONCE_KEY", "a shared secret of 32 bytes.....")
    one, two = (_serve_auth(_parser().parse_args(base))["auth"] for _ in range(2))
    assert one.dpop_checker.nonce_valid(two.dpop_checker.nonce())
    monkeypatch.delenv("MCPWIRE_DPOP_NONCE_KEY")
    alone = _serve_auth(_parser().parse_args(base))["auth"]
    assert not alone.dpop_checker.nonce_valid(one.dpop_checker.nonce())
    shared = b"k" * 16
    direct = [
        ResourceServerAuth(
            StaticTokenVerifier({}),
            authorization_servers=[AS_URL],
            dpop_nonce=True,
            dpop_nonce_key=shared,
        )
        for _ in range(2)
    ]
    assert direct[0].dpop_checker.nonce_valid(direct[1].dpop_checker.nonce())
    monkeypatch.setenv("MCPWIRE_DPOP_NONCE_KEY", "short")
    with pytest.raises(UsageError, match="at least 16 bytes"):
        _serve_auth(_parser().parse_args(base))


def test_cli_dpop_options_need_an_http_transport(capsys: pytest.CaptureFixture[str]) -> None:
    from mcpwire._cli import EXIT_USAGE, run

    assert run(["serve", "mcpwire.examples.everything:server", "--dpop", "required"]) == EXIT_USAGE
    assert "OAuth options apply to --transport http or sse" in capsys.readouterr().err
