"""DPoP (RFC 9449) and ``private_key_jwt`` (RFC 7523 §2.2) end to end:
``Client.http(url, auth=OAuthClient(dpop=..., client_assertion_signer=...))``
against a scripted resource and authorization server on two origins
(``tests/http_client/rawserver.py``) that check every proof and assertion
with PyJWT, as a real server would, and ask for nonces.

The reference SDK has neither a DPoP resource server nor ``private_key_jwt``
verification; the conformance suite's ``auth/dpop``, ``auth/dpop-nonce`` and
``auth/client-credentials-jwt`` scenarios are the real peers
(``conformance/run.py``). Everything here runs on both anyio backends.
"""

from __future__ import annotations

import base64
import hashlib
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

import anyio
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from http_client.child import ChildServer
from http_client.rawserver import (
    Reply,
    Seen,
    approved,
    as_metadata,
    raw_server,
    registered,
    result,
)

from mcpwire import (
    Client,
    ConfigError,
    Hub,
    InMemoryTokenStorage,
    OAuthClient,
    ServerConfig,
    headless_redirect_handler,
)
from mcpwire._hub_config import OAuthSettings
from mcpwire._hub_dialects import parse_config
from mcpwire._jose import ES256Signer, ES384Signer, jwk_thumbprint

pytestmark = pytest.mark.anyio


def check_proof(proof: str | None, method: str, url: str) -> dict[str, Any]:
    """A DPoP proof's claims, after the checks of RFC 9449 §4.3."""
    assert proof is not None, "no DPoP header"
    header = jwt.get_unverified_header(proof)
    assert header["typ"] == "dpop+jwt"
    assert "d" not in header["jwk"]
    claims = jwt.decode(proof, jwt.PyJWK(header["jwk"]).key, algorithms=[header["alg"]])
    assert claims["htm"] == method
    assert claims["htu"] == url
    assert abs(claims["iat"] - time.time()) < 60
    claims["jkt"] = jwk_thumbprint(header["jwk"])
    return claims


class DPoPServers:
    """A resource and its authorization server, both asking for DPoP nonces."""

    def __init__(self) -> None:
        self.rs_url = self.as_url = ""
        self.metadata: dict[str, Any] = {}
        self.as_nonce: str | None = "as-nonce-1"
        self.rs_nonces = ["rs-nonce-1"]
        #: The token type the authorization server grants.
        self.token_type = "DPoP"
        self.tokens: dict[str, str] = {}  # access token -> bound key thumbprint
        self.token_proofs: list[dict[str, Any] | None] = []
        self.rs_proofs: list[dict[str, Any]] = []
        self.rs_auth: list[str] = []
        self.authorizations = 0
        #: Metadata fields added to (or replacing) the defaults when the servers start.
        self.extra_metadata: dict[str, Any] = {}
        #: With ``grant_bearer``: (form, Authorization header) of each token request.
        self.token_requests: list[tuple[dict[str, str], str | None]] = []

    def start(self, rs_url: str, as_url: str) -> None:
        self.rs_url, self.as_url = rs_url, as_url.removesuffix("/mcp")
        self.metadata = as_metadata(self.as_url, dpop_signing_alg_values_supported=["ES256"])
        self.metadata.update(self.extra_metadata)

    def grant_bearer(self, token: str) -> None:
        """Answer every token request with the Bearer ``token`` at once, keeping what
        each request carried in ``token_requests``."""
        original = self.authorization

        async def authorization(request: Seen) -> Reply:
            if request.target == "/token":
                form = dict(parse_qsl(request.body.decode()))
                self.token_requests.append((form, request.headers.get("authorization")))
                self.tokens[token] = ""
                return Reply.json({"access_token": token, "token_type": "Bearer"})
            return await original(request)

        self.authorization = authorization  # type: ignore[method-assign]

    @property
    def token_forms(self) -> list[dict[str, str]]:
        return [form for form, _ in self.token_requests]

    async def resource(self, seen: Seen) -> Reply:
        if seen.method == "GET" and seen.target.startswith("/.well-known/oauth-protected-resource"):
            return Reply.json({"resource": self.rs_url, "authorization_servers": [self.as_url]})
        if seen.method != "POST":
            return Reply.empty(405)
        scheme, _, token = seen.headers.get("authorization", "").partition(" ")
        if token not in self.tokens:
            challenge = 'DPoP algs="ES256", Bearer'
            return Reply.json({"error": "invalid_token"}, 401, [("WWW-Authenticate", challenge)])
        self.rs_auth.append(scheme)
        nonce = self.rs_nonces[0]
        if scheme == "DPoP":
            claims = check_proof(seen.headers.get("dpop"), "POST", self.rs_url)
            digest = hashlib.sha256(token.encode()).digest()
            assert claims["ath"] == base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
            assert claims["jkt"] == self.tokens[token]  # the key the token is bound to
            self.rs_proofs.append(claims)
            if claims.get("nonce") != nonce:
                challenge = 'DPoP error="use_dpop_nonce", error_description="nonce"'
                head = [("WWW-Authenticate", challenge), ("DPoP-Nonce", nonce)]
                return Reply.json({"error": "use_dpop_nonce"}, 401, head)
        else:
            assert "dpop" not in seen.headers
        message = seen.json
        method = message.get("method", "")
        if method.startswith("notifications/"):
            return Reply.empty(202)
        # The resource rotates its nonce on a success (RFC 9449 §9).
        rotated = []
        if len(self.rs_nonces) > 1:
            self.rs_nonces.pop(0)
            rotated = [("DPoP-Nonce", self.rs_nonces[0])]
        if method == "initialize":
            value = {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "dpop", "version": "1"},
            }
        elif method == "tools/list":
            value = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
        else:
            value = {"content": [{"type": "text", "text": "ok"}]}
        return Reply.json(result(message["id"], value), headers=rotated)

    async def authorization(self, seen: Seen) -> Reply:
        path, _, query = seen.target.partition("?")
        if path == "/.well-known/oauth-authorization-server":
            return Reply.json(self.metadata)
        if path == "/register":
            return registered()
        if path == "/authorize":
            self.authorizations += 1
            return approved(query, "the-code")[1]
        if path == "/token":
            proof = seen.headers.get("dpop")
            if proof is None:
                self.token_proofs.append(None)
                return Reply.json({"access_token": "plain", "token_type": "Bearer"})
            claims = check_proof(proof, "POST", self.as_url + "/token")
            self.token_proofs.append(claims)
            if self.as_nonce is not None and claims.get("nonce") != self.as_nonce:
                head = [("DPoP-Nonce", self.as_nonce)]
                return Reply.json({"error": "use_dpop_nonce"}, 400, head)
            token = f"token-{len(self.tokens)}"
            self.tokens[token] = claims["jkt"]
            return Reply.json({"access_token": token, "token_type": self.token_type})
        return Reply.empty(404)


async def run(servers: DPoPServers, auth: OAuthClient, *, calls: int = 2) -> None:
    async with raw_server(servers.resource) as rs, raw_server(servers.authorization) as as_:
        servers.start(rs.url, as_.url)
        with anyio.fail_after(20):
            async with Client.http(rs.url, auth=auth, mode="legacy") as client:
                await client.list_tools()
                for _ in range(calls):
                    await client.call_tool("t", {})


def dpop_client(**options: Any) -> OAuthClient:
    return OAuthClient(redirect_handler=headless_redirect_handler(), **options)


async def test_dpop_flow_with_nonces() -> None:
    servers = DPoPServers()
    servers.rs_nonces = ["rs-nonce-1", "rs-nonce-2"]
    storage = InMemoryTokenStorage()
    auth = dpop_client(dpop=True, storage=storage)
    await run(servers, auth)
    # The token request: without a nonce, then once more with the one given.
    first, second = servers.token_proofs
    assert first is not None and second is not None
    assert "nonce" not in first
    assert second["nonce"] == "as-nonce-1"
    assert first["jti"] != second["jti"]
    assert servers.authorizations == 1  # the nonce retries ran no new flow
    assert set(servers.rs_auth) == {"DPoP"}
    assert storage.tokens is not None and storage.tokens.token_type == "DPoP"
    proofs = servers.rs_proofs
    # First proof: no nonce, refused; the retry carries it; after the
    # rotation on a success, the next proofs carry the new one.
    assert "nonce" not in proofs[0]
    assert proofs[1]["nonce"] == "rs-nonce-1"
    assert proofs[-1]["nonce"] == "rs-nonce-2"
    assert sum(p.get("nonce") != "rs-nonce-2" for p in proofs) == 2
    jtis = [p["jti"] for p in proofs]
    assert len(set(jtis)) == len(jtis)
    assert all("ath" in p for p in proofs)


async def test_dpop_with_a_given_key() -> None:
    signer = ES256Signer.generate()
    servers = DPoPServers()
    servers.as_nonce = None
    await run(servers, dpop_client(dpop=signer), calls=1)
    [proof] = servers.token_proofs
    assert proof is not None
    assert proof["jkt"] == jwk_thumbprint(signer.public_jwk())


async def test_a_stored_dpop_token_is_used_only_with_its_key() -> None:
    """A DPoP token in the store is bound to the key it was issued for (RFC 9449 §6):
    the same key uses it at once; another key (a new process with a fresh key)
    leaves it unused and authorizes anew instead of meeting a 401."""
    signer = ES256Signer.generate()
    servers = DPoPServers()
    servers.as_nonce = None
    storage = InMemoryTokenStorage()
    async with raw_server(servers.resource) as rs, raw_server(servers.authorization) as as_:
        servers.start(rs.url, as_.url)

        async def session(key: ES256Signer) -> None:
            with anyio.fail_after(20):
                auth = dpop_client(dpop=key, storage=storage)
                async with Client.http(rs.url, auth=auth, mode="legacy") as client:
                    await client.call_tool("t", {})

        await session(signer)
        assert servers.authorizations == 1
        assert storage.tokens is not None
        assert storage.tokens.dpop_jkt == jwk_thumbprint(signer.public_jwk())
        await session(signer)
        assert servers.authorizations == 1  # the stored token served
        other = ES256Signer.generate()
        await session(other)
        assert servers.authorizations == 2
        assert storage.tokens.dpop_jkt == jwk_thumbprint(other.public_jwk())
    # Every proof matched the key its token is bound to (``resource`` checks each):
    # the old token never went out with the new key.
    assert {p["jkt"] for p in servers.rs_proofs} == {
        jwk_thumbprint(signer.public_jwk()),
        jwk_thumbprint(other.public_jwk()),
    }


async def test_a_bearer_answer_to_a_proof_is_used_as_bearer() -> None:
    """An authorization server that ignores DPoP grants a Bearer token (RFC 9449 §5)."""
    servers = DPoPServers()
    servers.as_nonce = None
    servers.token_type = "Bearer"
    await run(servers, dpop_client(dpop=True), calls=1)
    assert set(servers.rs_auth) == {"Bearer"}
    assert servers.rs_proofs == []


async def test_no_proof_where_the_server_takes_another_alg() -> None:
    servers = DPoPServers()
    servers.extra_metadata["dpop_signing_alg_values_supported"] = ["RS256"]
    servers.tokens["plain"] = ""
    await run(servers, dpop_client(dpop=True), calls=1)
    assert servers.token_proofs == [None]
    assert set(servers.rs_auth) == {"Bearer"}


async def test_without_dpop_no_proofs_are_sent() -> None:
    servers = DPoPServers()
    servers.tokens["plain"] = ""
    await run(servers, dpop_client(), calls=1)
    assert servers.token_proofs == [None]
    assert set(servers.rs_auth) == {"Bearer"}


async def test_dpop_against_a_real_server_without_dpop(sdk_auth: ChildServer) -> None:
    """The reference SDK's authorization server knows no DPoP: it ignores the
    proofs and grants a Bearer token, used as Bearer (RFC 9449 §5)."""
    storage = InMemoryTokenStorage()
    auth = dpop_client(dpop=True, storage=storage)
    with anyio.fail_after(20):
        async with Client.http(sdk_auth.url, auth=auth) as client:
            assert [t.name for t in await client.list_tools()] == ["stats"]
    assert storage.tokens is not None
    assert storage.tokens.token_type == "Bearer"


# -- private_key_jwt -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("methods", "secret", "expected"),
    [
        (["private_key_jwt"], None, "private_key_jwt"),
        (["client_secret_basic", "private_key_jwt"], "s", "private_key_jwt"),
        (None, None, "private_key_jwt"),
        (None, "s", "client_secret_basic"),
        (["client_secret_post"], "s", "client_secret_post"),
    ],
)
async def test_private_key_jwt(
    methods: list[str] | None, secret: str | None, expected: str
) -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    servers = DPoPServers()
    servers.grant_bearer("cc")
    if methods is not None:
        servers.extra_metadata["token_endpoint_auth_methods_supported"] = methods
    auth = OAuthClient(
        grant="client_credentials",
        client_id="cid",
        client_secret=secret,
        client_assertion_signer=ES256Signer.from_pem(pem),
    )
    await run(servers, auth, calls=1)
    [(form, header)] = servers.token_requests
    assert form["grant_type"] == "client_credentials"
    assert form["resource"] == servers.rs_url
    if expected == "private_key_jwt":
        assert header is None
        assert "client_secret" not in form
        assert form["client_assertion_type"] == (
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        )
        claims = jwt.decode(
            form["client_assertion"],
            key.public_key(),
            algorithms=["ES256"],
            audience=servers.as_url,
            issuer="cid",
        )
        assert claims["sub"] == "cid"
        assert claims["exp"] > time.time()
    else:
        assert "client_assertion" not in form
        assert (header is not None) == (expected == "client_secret_basic")


@pytest.mark.parametrize("secret", ["s", None])
async def test_private_key_jwt_only_with_an_algorithm_the_server_takes(
    secret: str | None,
) -> None:
    """RFC 8414 §2 ``token_endpoint_auth_signing_alg_values_supported``: an ES256
    signer where only RS256 is taken falls back to the secret, or, without one,
    fails before anything is sent, saying why."""
    servers = DPoPServers()
    servers.grant_bearer("cc")
    servers.extra_metadata["token_endpoint_auth_methods_supported"] = [
        "client_secret_basic",
        "private_key_jwt",
    ]
    servers.extra_metadata["token_endpoint_auth_signing_alg_values_supported"] = ["RS256"]
    auth = OAuthClient(
        grant="client_credentials",
        client_id="cid",
        client_secret=secret,
        client_assertion_signer=ES256Signer.generate(),
    )
    if secret is None:
        with pytest.raises(BaseException) as caught:
            await run(servers, auth, calls=1)
        found: list[BaseException] = [caught.value]
        while getattr(found[-1], "exceptions", None):  # exception groups, any version
            found.append(found[-1].exceptions[0])  # type: ignore[attr-defined]
        # The request fails with the flow's reason (an authorization failure, -32600).
        assert "authorization failed" in str(found[-1]), found
        assert "no client assertion signed with ES256" in str(found[-1])
        assert servers.token_requests == []
        return
    await run(servers, auth, calls=1)
    [form] = servers.token_forms
    assert "client_assertion" not in form


async def test_the_resource_nonce_retry_is_once_per_request() -> None:
    """A resource that asks for a new nonce every time gets one retry per
    request, then its challenge goes to the authorization flow as any 401."""
    servers = DPoPServers()
    servers.as_nonce = None
    counter = iter(range(1000))
    original = servers.resource

    async def resource(seen: Seen) -> Reply:
        servers.rs_nonces = [f"n-{next(counter)}"]  # never the one just given
        return await original(seen)

    servers.resource = resource  # type: ignore[method-assign]
    auth = dpop_client(dpop=True)
    async with raw_server(servers.resource) as rs, raw_server(servers.authorization) as as_:
        servers.start(rs.url, as_.url)
        with anyio.fail_after(20):
            with pytest.raises(Exception, match="401"):
                async with Client.http(rs.url, auth=auth, mode="legacy") as client:
                    await client.list_tools()
    # The first flow's token: a proof without a nonce, then one retry with it;
    # its refusal runs the second flow (MAX_FLOWS), whose refusal is the answer.
    assert ["nonce" in p for p in servers.rs_proofs] == [False, True, True]
    assert servers.authorizations == 2


async def test_a_dpop_token_survives_a_file_store(tmp_path: Any) -> None:
    from mcpwire import FileTokenStorage

    signer = ES256Signer.generate()
    servers = DPoPServers()
    servers.as_nonce = None
    servers.rs_nonces = ["same"]
    path = tmp_path / "tokens.json"
    async with raw_server(servers.resource) as rs, raw_server(servers.authorization) as as_:
        servers.start(rs.url, as_.url)
        for _ in range(2):
            # The second client, with the same key and store, needs no new token.
            auth = dpop_client(dpop=signer, storage=FileTokenStorage(path, rs.url))
            with anyio.fail_after(20):
                async with Client.http(rs.url, auth=auth, mode="legacy") as client:
                    await client.list_tools()
            stored = await FileTokenStorage(path, rs.url).get_tokens()
            assert stored is not None and stored.token_type == "DPoP"
    assert servers.authorizations == 1
    assert set(servers.rs_auth) == {"DPoP"}


async def test_private_key_jwt_by_dynamic_registration() -> None:
    """No client_id, a signer, an authorization server that takes only
    private_key_jwt: the client registers its public key (RFC 7591 §2,
    ``jwks``) and signs its token requests with it."""
    signer = ES256Signer.generate()
    registrations: list[dict[str, Any]] = []
    servers = DPoPServers()
    servers.grant_bearer("pk")
    granting = servers.authorization

    async def authorization(request: Seen) -> Reply:
        if request.target == "/register":
            registrations.append(request.json)
            body = {"client_id": "dyn", "token_endpoint_auth_method": "private_key_jwt"}
            return Reply.json(body, 201)
        return await granting(request)

    servers.authorization = authorization  # type: ignore[method-assign]
    servers.extra_metadata["token_endpoint_auth_methods_supported"] = ["private_key_jwt"]
    await run(servers, dpop_client(client_assertion_signer=signer), calls=1)
    [registration] = registrations
    assert registration["token_endpoint_auth_method"] == "private_key_jwt"
    [jwk] = registration["jwks"]["keys"]
    assert jwk == signer.public_jwk()
    [form] = servers.token_forms
    assert form["grant_type"] == "authorization_code"
    assert "client_secret" not in form
    claims = jwt.decode(
        form["client_assertion"],
        jwt.PyJWK(jwk).key,
        algorithms=["ES256"],
        audience=servers.as_url,
        issuer="dyn",
    )
    assert claims["sub"] == "dyn"


# -- keys from a hub config (dpopKeyFile, clientKeyFile) ------------------------------------


def write_key(path: Path, key: Any, passphrase: bytes | None = None) -> Path:
    """``key`` as a PKCS#8 PEM file, encrypted with ``passphrase`` if one is given."""
    encryption = (
        serialization.BestAvailableEncryption(passphrase)
        if passphrase is not None
        else serialization.NoEncryption()
    )
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)
    )
    return path


def test_config_reads_key_files_relative_to_the_workspace(tmp_path: Path) -> None:
    config = tmp_path / ".gemini" / "settings.json"
    config.parent.mkdir()
    doc = {
        "mcpServers": {
            "s": {
                "httpUrl": "https://mcp.example/mcp",
                "oauth": {"dpopKeyFile": "keys/dpop.pem", "clientKeyFile": "${KEYS}/client.pem"},
            }
        }
    }
    loaded = parse_config(doc, file=str(config), environ={"KEYS": "/etc/mcp"}, dialect="gemini")
    oauth = loaded.servers["s"].oauth
    assert oauth is not None
    assert oauth.dpop_key_file == str(tmp_path / "keys" / "dpop.pem")
    assert oauth.client_key_file == "/etc/mcp/client.pem"
    assert loaded.servers["s"].to_json()["oauth"]["dpopKeyFile"] == oauth.dpop_key_file
    with pytest.raises(ConfigError, match="must be a string"):
        parse_config(
            {"mcpServers": {"s": {"url": "https://m.example", "oauth": {"dpopKeyFile": 1}}}}
        )


async def hub_calls(servers: DPoPServers, settings: OAuthSettings) -> None:
    """A hub with one server, ``servers``' resource, authorized with ``settings``,
    calls its tool once."""
    from test_oauth_apps import browse

    async with raw_server(servers.resource) as rs, raw_server(servers.authorization) as as_:
        servers.start(rs.url, as_.url)
        config = ServerConfig(name="bound", url=rs.url, oauth=settings)
        async with Hub(servers=[config], watch=False, authorize=lambda _, url: browse(url)) as hub:
            await hub.wait_ready(timeout=30)
            await hub.call_tool("bound__t", {})


async def hub_error(settings: OAuthSettings) -> str:
    """The error a hub records for a server it cannot start with ``settings``."""
    config = ServerConfig(name="broken", url="http://127.0.0.1:9/mcp", oauth=settings)
    async with Hub(servers=[config], watch=False) as hub:
        with anyio.fail_after(10):
            while hub.statuses()[0].last_error is None:
                await anyio.sleep(0.01)
        message = hub.statuses()[0].last_error
    assert message is not None
    return message


async def test_hub_binds_tokens_to_the_configured_dpop_key(tmp_path: Path) -> None:
    """``dpopKeyFile``: every token the hub gets is bound to that key, so a token kept
    in the hub's token store stays usable by the next run."""
    key = ec.generate_private_key(ec.SECP256R1())
    settings = OAuthSettings(dpop_key_file=str(write_key(tmp_path / "dpop.pem", key)))
    servers = DPoPServers()
    await hub_calls(servers, settings)
    expected = jwk_thumbprint(ES256Signer(key).public_jwk())
    assert servers.rs_proofs and {p["jkt"] for p in servers.rs_proofs} == {expected}
    assert set(servers.tokens.values()) == {expected}


async def test_hub_authenticates_with_the_configured_client_key(tmp_path: Path) -> None:
    """``clientKeyFile`` with a pre-registered client: ``private_key_jwt`` (RFC 7523)."""
    key = ec.generate_private_key(ec.SECP256R1())
    settings = OAuthSettings(
        client_id="hub-client", client_key_file=str(write_key(tmp_path / "client.pem", key))
    )
    servers = DPoPServers()
    servers.grant_bearer("granted")
    servers.extra_metadata["token_endpoint_auth_methods_supported"] = ["private_key_jwt"]
    await hub_calls(servers, settings)
    [form] = servers.token_forms
    assert form["client_id"] == "hub-client"
    assertion = jwt.decode(
        form["client_assertion"],
        key.public_key(),
        algorithms=["ES256"],
        audience=servers.as_url,
    )
    assert assertion["iss"] == assertion["sub"] == "hub-client"


async def test_an_unreadable_key_file_fails_the_connection_by_name(tmp_path: Path) -> None:
    missing = str(tmp_path / "nowhere.pem")
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a key")
    for path, words in ((missing, "cannot read the key"), (str(garbage), "PEM private key")):
        message = await hub_error(OAuthSettings(dpop_key_file=path))
        assert words in message and path in message


async def test_cli_binds_tokens_to_its_dpop_key(tmp_path: Path) -> None:
    """``mcpwire call URL --dpop-key PEM``: the proofs the resource sees are that key's."""
    from test_oauth_apps import cli_with_browser

    key = ec.generate_private_key(ec.SECP256R1())
    pem = write_key(tmp_path / "dpop.pem", key)
    servers = DPoPServers()
    async with raw_server(servers.resource) as rs, raw_server(servers.authorization) as as_:
        servers.start(rs.url, as_.url)
        code, _, err, shown = await cli_with_browser(
            "call", rs.url, "t", "--mode", "legacy", "--dpop-key", str(pem)
        )
    assert code == 0, err
    assert len(shown) == 1
    expected = jwk_thumbprint(ES256Signer(key).public_jwk())
    assert servers.rs_proofs and {p["jkt"] for p in servers.rs_proofs} == {expected}


async def test_cli_refuses_an_unusable_key_file(tmp_path: Path) -> None:
    from test_oauth_apps import cli_with_browser

    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a key")
    for option in ("--dpop-key", "--client-key"):
        code, _, err, _ = await cli_with_browser(
            "inspect", "http://127.0.0.1:9/mcp", option, str(garbage)
        )
        assert code == 2, err
        assert "PEM private key" in err and str(garbage) in err


# -- encrypted keys (keyPassphrase, --key-passphrase-env) -------------------------------------


def test_config_takes_a_key_passphrase_from_the_environment(tmp_path: Path) -> None:
    doc = {
        "mcpServers": {
            "s": {
                "url": "https://mcp.example/mcp",
                "oauth": {"dpopKeyFile": "k.pem", "keyPassphrase": "${KEY_PASS}"},
            }
        }
    }
    loaded = parse_config(doc, file=str(tmp_path / "c.json"), environ={"KEY_PASS": "s3cret"})
    oauth = loaded.servers["s"].oauth
    assert oauth is not None and oauth.key_passphrase == "s3cret"
    assert "s3cret" not in repr(oauth)
    assert loaded.servers["s"].to_json(redact=True)["oauth"]["keyPassphrase"] == "***"


async def test_hub_uses_an_encrypted_p384_key_with_its_passphrase(tmp_path: Path) -> None:
    """An encrypted key with ``keyPassphrase`` signs (here ES384, where the server
    takes it); without the passphrase the server's error names the key file."""

    key = ec.generate_private_key(ec.SECP384R1())
    path = str(write_key(tmp_path / "dpop.pem", key, b"s3cret"))
    servers = DPoPServers()
    servers.extra_metadata["dpop_signing_alg_values_supported"] = ["ES384"]
    await hub_calls(servers, OAuthSettings(dpop_key_file=path, key_passphrase="s3cret"))
    expected = jwk_thumbprint(ES384Signer(key).public_jwk())
    assert servers.rs_proofs and {p["jkt"] for p in servers.rs_proofs} == {expected}
    for passphrase in (None, "wrong"):
        message = await hub_error(OAuthSettings(dpop_key_file=path, key_passphrase=passphrase))
        assert path in message and "PEM private key" in message


async def test_cli_reads_the_passphrase_from_the_named_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_oauth_apps import cli_with_browser

    key = ec.generate_private_key(ec.SECP256R1())
    pem = str(write_key(tmp_path / "dpop.pem", key, b"s3cret"))
    code, _, err, _ = await cli_with_browser(
        "inspect", "http://127.0.0.1:9/mcp", "--dpop-key", pem, "--key-passphrase-env", "NO_SUCH"
    )
    assert code == 2 and "$NO_SUCH is not set" in err
    code, _, err, _ = await cli_with_browser("inspect", "http://127.0.0.1:9/mcp", "--dpop-key", pem)
    assert code == 2 and pem in err and "encrypted" in err.lower()
    monkeypatch.setenv("MCPWIRE_TEST_PASS", "s3cret")
    servers = DPoPServers()
    async with raw_server(servers.resource) as rs, raw_server(servers.authorization) as as_:
        servers.start(rs.url, as_.url)
        code, _, err, shown = await cli_with_browser(
            "call", rs.url, "t", "--mode", "legacy", "--dpop-key", pem,
            "--key-passphrase-env", "MCPWIRE_TEST_PASS",
        )  # fmt: skip
    assert code == 0, err
    assert len(shown) == 1
    expected = jwk_thumbprint(ES256Signer(key).public_jwk())
    assert {p["jkt"] for p in servers.rs_proofs} == {expected}
