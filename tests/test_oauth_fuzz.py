"""A hostile protected resource and authorization server against the MCP
authorization client: ``Client.http(url, auth=OAuthClient(...))``.

The servers are two scripted loopback origins (``http_client/rawserver.py``), as
in ``test_oauth_flow``: the MCP server (the protected resource, which also serves
its resource metadata) and its authorization server, which also answers as a
second issuer (``/second``) for a resource that moves. Each example draws

* a client: the authorization code grant with dynamic registration (RFC 7591;
  registered as a public or a confidential client), with a client ID metadata
  document URL, or with a pre-registered confidential client; client
  credentials with a secret or with ``private_key_jwt`` (RFC 7523 §2.2); or a
  JWT bearer assertion (RFC 7523 §2.1); with or without DPoP (RFC 9449);
* a flow: one token; a first token that has expired at once (``expires_in: 0``)
  and is refreshed before use; a first token revoked after one request and
  refreshed on the ``401``; tokens kept by an earlier process, refreshed at an
  authorization server found anew; or a scope step-up on ``403
  insufficient_scope``;
* where the metadata lives: RFC 8414 or OpenID discovery at the root, or OpenID
  discovery appended to an issuer with a path;
* one misbehaviour at one step, for its first occurrence or for every one:

  - ``challenge``: the MCP server's ``401`` with no, odd, garbage or several
    ``WWW-Authenticate`` values (``resource_metadata`` elsewhere, relative,
    invalid, not http, https to a server that speaks plain HTTP, at a closed
    port; odd ``scope``; Basic or DPoP only; parameters twice), or another status;
  - ``prm``, ``asm``, ``register``, ``token``, ``refresh`` (the JSON documents:
    resource metadata, authorization server metadata, the registration answer,
    the token answer, the refresh answer): any status (3xx with and without a
    ``Location``, to another origin or path, looping; 4xx, 5xx; an error status
    around a good document), a wrong ``Content-Type``, bodies that are empty, not
    JSON, not UTF-8, truncated, nested deep, larger than the client reads, with a
    BOM, or JSON of another shape; one member removed or replaced by a value of
    the wrong type or a hostile one (another resource or issuer, endpoints that
    are not https, relative or unreachable, no S256, ``token_type`` not Bearer,
    ``expires_in`` negative, fractional, a string or beyond 64 bits, a token with
    a line break or a non-ASCII character...); the connection dropped, cut,
    answered with garbage or HTTP/1.0, slow, or silent (the exchange timeout
    ends it); a DPoP nonce asked for again and again;
  - ``authorize``: the redirect (driven as ``approved`` does, through
    ``headless_redirect_handler``) with ``error=``, a wrong, missing or
    duplicated ``state``, a missing, empty, odd or duplicated ``code``, a wrong,
    missing or duplicated ``iss`` (RFC 9207), extra parameters, the answer in
    the fragment; or no redirect, or one without ``Location`` or to an invalid
    place, or a dropped, garbled or silent connection;
  - ``resource``: the MCP server's answer to a request with a good token:
    ``401`` again, a ``401`` naming another authorization server,
    ``403 insufficient_scope`` for scopes granted or not, a plain ``403``, a
    redirect to the authorization server's origin, a DPoP nonce, a ``500``.

Whatever the servers do:

1. entering the client and listing the tools ends within ``FAST`` seconds with
   the tools or an ``MCPWireError``, nothing else; a failed flow is the
   documented ``AuthorizationFailed``: the request's ``JSONRPCError`` (-32600)
   saying ``authorization failed`` and naming the step (``STEP_WORDS``, or the
   method and URL of the exchange that failed); leaving the client raises
   nothing and leaves no task running;
2. access tokens go to the MCP server's origin only, in the ``Authorization``
   header only; a pre-registered client's secret and assertions go to token
   endpoints only; what an authorization server gave (a registered secret,
   codes, refresh tokens) goes to its own token endpoint only, never to another
   issuer's (SEP-2352); a token the client had to refuse (an error status or
   object, a ``token_type`` it did not ask for, a bad ``expires_in``) is never
   used; requests name the resource (RFC 8707) and prove PKCE (RFC 7636);
3. each server sees at most ``MAX_SEEN`` requests: challenges, refreshes,
   nonces and step-ups are not retried without end;
4. nothing is logged at ERROR on the ``mcpwire`` loggers;
5. a document that must be refused (another resource or issuer, no S256,
   endpoints that are not https, a wrong ``state`` or ``iss``, an error answer)
   is refused: the call fails and the flow goes no further; with no
   misbehaviour at all the call succeeds.

Both backends; every misbehaviour kind has an explicit ``@example``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, unquote, unquote_plus, urlencode, urljoin, urlsplit

import anyio
import pytest
from fuzzing import mcpwire_errors, stray_tasks
from http_client.rawserver import Reply, Seen, as_metadata, raw_server, result
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strategies import json_values, texts

from mcpwire import (
    Client,
    ES256Signer,
    InMemoryTokenStorage,
    JSONRPCError,
    MCPWireError,
    OAuthClient,
    OAuthTokens,
    Tool,
    headless_redirect_handler,
)

pytestmark = pytest.mark.anyio

#: Far above how long any flow takes here: a call still waiting at FAST has hung.
FAST = 10.0
REQUEST_TIMEOUT = 30.0
#: The OAuth client's exchange timeout; a misbehaviour that goes silent uses HANG.
EXCHANGE_TIMEOUT = 5.0
HANG = 1.0
#: The most requests either server may see in one example. A request of the MCP
#: client runs at most two flows (``MAX_FLOWS``) and two refreshes, a flow at
#: most three metadata fetches per document, a registration, an authorization
#: and two token requests, an exchange at most five redirects. The most seen
#: here is 26 (a refresh redirected in a loop, tried twice, then a new grant);
#: a loop of flows or retries goes far beyond within ``FAST``.
MAX_SEEN = 40

SECRET = "static-secret-Q7"
#: The client secrets dynamic registration gives, at the first and second issuer.
REG_SECRET = "registered-secret-Z9"
REG_SECRET_2 = "registered-secret-W4"
ASSERTION = "assertion-jwt-K3"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
REDIRECT_URI = "http://localhost:3000/callback"
PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
TENANT = "/tenant"
#: The path of a second issuer on the authorization server's origin, where the
#: MCP server may move its authorization (RFC 8414 metadata, path inserted).
SECOND = "/second"

GRANTS = ("dcr", "cimd", "preregistered", "client_credentials", "private_key_jwt", "jwt_bearer")
CODE_GRANTS = ("dcr", "cimd", "preregistered")
#: A client ID metadata document's URL: the client's ID where the server takes those.
CIMD_URL = "https://client.example/mcpwire.json"
FLOWS = ("plain", "expired", "revoked", "stored", "step-up")
#: The flows that begin with a grant (``stored`` begins with a refresh).
GRANT_FLOWS = ("plain", "expired", "revoked", "step-up")
REFRESH_FLOWS = ("expired", "revoked", "stored")
DISCOVERIES = ("oauth", "oidc", "tenant")
REG_METHODS = ("none", "client_secret_basic", "client_secret_post")

#: A member removed from a document.
MISSING = "<missing>"


@dataclass(frozen=True)
class Mis:
    """One misbehaviour: at which step, of which kind, with what, how often."""

    step: str = "none"
    kind: str = "none"
    detail: tuple[Any, ...] = ()
    repeat: bool = False


@dataclass(frozen=True)
class Scenario:
    grant: str = "dcr"
    flow: str = "plain"
    discovery: str = "oauth"
    dpop: bool = False
    reg_method: str = "none"
    mis: Mis = Mis()

    @property
    def hangs(self) -> bool:
        return self.mis.kind == "framing" and self.mis.detail[0].startswith("hang")


# -- the misbehaviours --------------------------------------------------------------------------

DOCUMENT_STEPS = ("prm", "asm", "register", "token", "refresh")
STATUS_CODES = (300, 301, 302, 303, 307, 308, 400, 401, 403, 404, 405, 429, 500, 502, 503)
STATUS_BODIES = ("empty", "text", "good-json", "oauth-error")
REDIRECT_CODES = (301, 302, 303, 307, 308)
REDIRECT_TARGETS = ("none", "same", "other-path", "other-origin", "invalid", "scheme", "relative")
CONTENT_TYPES: tuple[str | None, ...] = (
    None,
    "text/html",
    "application/jwt",
    "application/json; charset=latin-1",
    "APPLICATION/JSON",
    "application/x-www-form-urlencoded",
)
BODY_SHAPES = (
    "empty",
    "whitespace",
    "not-json",
    "not-utf8",
    "truncated",
    "list",
    "null",
    "deep",
    "huge",
    "bom",
    "two",
    "padded",
)
#: Body shapes a strict client refuses and a lenient one may take.
EITHER_SHAPES = frozenset({"bom", "padded"})
FRAMINGS = ("drop", "cut", "garbage", "slow", "hang-head", "hang-body", "http10")

#: Members worth replacing, per document (plus any name at all).
FIELDS: dict[str, tuple[str, ...]] = {
    "prm": ("resource", "authorization_servers", "scopes_supported", "bearer_methods_supported"),
    "asm": (
        "issuer",
        "authorization_endpoint",
        "token_endpoint",
        "registration_endpoint",
        "code_challenge_methods_supported",
        "scopes_supported",
        "token_endpoint_auth_methods_supported",
        "authorization_response_iss_parameter_supported",
        "client_id_metadata_document_supported",
        "dpop_signing_alg_values_supported",
        "token_endpoint_auth_signing_alg_values_supported",
        "response_types_supported",
    ),
    "register": ("client_id", "client_secret", "token_endpoint_auth_method", "redirect_uris"),
    "token": (
        "access_token",
        "token_type",
        "expires_in",
        "refresh_token",
        "scope",
        "error",
        "error_description",
    ),
}
FIELDS["refresh"] = FIELDS["token"]

#: Hostile values per member ("{as}", "{rs}", "{closed}": the origins of the
#: authorization server, the MCP server, and a port nobody listens on).
URLS = (
    "http://auth.example/x",
    "https://127.0.0.1:{asport}/x",
    "{rs}/mcp",
    "{closed}/x",
    "/relative",
    "ftp://127.0.0.1/x",
    "{as}/token?x=1",
    "{as}/x#frag",
    "http://[::1/x",
)
SPECIAL: dict[str, tuple[Any, ...]] = {
    "resource": (
        "{rs}/other",
        "{as}/mcp",
        "{rs}",
        "{rs}/mcp/",
        "HTTP://127.0.0.1:{rsport}/mcp",
        "http://127.0.0.1:{rsport}/mcp/deeper",
        "http://[::1/x",
    ),
    "authorization_servers": (
        ["{as}/"],
        ["http://localhost:{asport}"],
        [],
        ["{rs}"],
        ["{closed}"],
        ["ftp://x"],
        [1],
        "{as}",
        ["{as}", "{rs}"],
    ),
    "issuer": ("{as}/", "http://localhost:{asport}", "{rs}", "{issuer}/x"),
    "authorization_endpoint": URLS,
    "token_endpoint": URLS,
    "registration_endpoint": URLS,
    "code_challenge_methods_supported": (["plain"], [], ["s256"], ["S256", 1], "S256"),
    "scopes_supported": (
        ["mcp:read", "offline_access"],
        ["a b"],
        [""],
        "mcp:read",
        [1, 2],
    ),
    "token_endpoint_auth_methods_supported": (
        ["private_key_jwt"],
        ["client_secret_post"],
        ["none"],
        [],
        "none",
    ),
    "authorization_response_iss_parameter_supported": (False, "true", 1),
    "client_id_metadata_document_supported": (True, "yes"),
    "dpop_signing_alg_values_supported": (["RS256"], "ES256", [1], []),
    "token_endpoint_auth_signing_alg_values_supported": (["RS256"], ["ES256"], "ES256", []),
    "client_id": ("", "a\r\nb", "x" * 20000, "é"),
    "client_secret": ("", 1),
    "token_endpoint_auth_method": ("private_key_jwt", "client_secret_jwt", "", "tls_client_auth"),
    "access_token": ("", "a\r\nX-Injected: yes", "é-token", "x" * 9000, "a b", "tok\x00en"),
    "token_type": ("bearer", "BEARER", "DPoP", "mac", "", "N_A"),
    "expires_in": (-1, 0, 1.5, "3600", True, 2**63 - 1, 10**30, 2**64 - 1),
    "refresh_token": ("", ["x"], 1),
    "scope": (1, ["a"], "", "unasked:scope"),
    "error": ("invalid_grant", "use_dpop_nonce", 1, None, {"x": 1}),
    "error_description": (1, "é" * 300),
}

odd_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**64 - 1),
    st.integers(min_value=2**64),  # beyond what the client's JSON reader takes
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
odd_values = st.one_of(
    st.just(MISSING),
    odd_scalars,
    st.lists(odd_scalars, max_size=3),
    json_values,
)


@st.composite
def field_changes(draw: st.DrawFn, step: str) -> Mis:
    name: str = draw(st.one_of(st.sampled_from(FIELDS[step]), texts))
    hostile: bool = draw(st.booleans())
    special = SPECIAL.get(name, ())
    value: Any = draw(st.sampled_from(special)) if special and hostile else draw(odd_values)
    return Mis(step, "field", (name, value), draw(st.booleans()))


def kind(step: str, name: str, *details: st.SearchStrategy[Any]) -> st.SearchStrategy[Mis]:
    return st.builds(lambda d, r: Mis(step, name, d, r), st.tuples(*details), st.booleans())


def document_misbehaviours(step: str) -> st.SearchStrategy[Mis]:
    options = [
        kind(step, "status", st.sampled_from(STATUS_CODES), st.sampled_from(STATUS_BODIES)),
        kind(step, "redirect", st.sampled_from(REDIRECT_CODES), st.sampled_from(REDIRECT_TARGETS)),
        kind(step, "ctype", st.sampled_from(CONTENT_TYPES)),
        kind(step, "body", st.sampled_from(BODY_SHAPES)),
        kind(step, "json", json_values),
        kind(step, "framing", st.sampled_from(FRAMINGS)),
        field_changes(step),
    ]
    if step in ("token", "refresh"):
        options.append(kind(step, "nonce", st.booleans()))
    return st.one_of(*options)


#: ``WWW-Authenticate`` values: well-formed ones with odd parameters, and any
#: bytes that can stand in a header line (no NUL, CR or LF).
CHALLENGES = (
    'Bearer resource_metadata="{prm}"',
    'Bearer error="invalid_token", resource_metadata="{prm}", scope="mcp:read"',
    'Bearer resource_metadata="{as}/.well-known/oauth-protected-resource"',
    'Bearer resource_metadata="http://[::1/x"',
    'Bearer resource_metadata="ftp://127.0.0.1/x"',
    'Bearer resource_metadata="{closed}/prm"',
    'Bearer resource_metadata="https://127.0.0.1:{rsport}/x"',
    'Bearer resource_metadata=""',
    'Bearer resource_metadata="/relative"',
    'Bearer resource_metadata="{prm}", resource_metadata="{prm}"',
    'Bearer scope="a\\"b c", resource_metadata="{prm}"',
    'Bearer scope="", error="insufficient_scope"',
    'Bearer realm="x", scope="' + "s " * 3000 + '"',
    "Bearer",
    "Bearer abc.def==",
    'Basic realm="mcp"',
    'DPoP algs="ES256", resource_metadata="{prm}"',
    'DPoP error="use_dpop_nonce"',
    'Newauth realm="x", Bearer resource_metadata="{prm}"',
    'Bearer resource_metadata="{prm}',
    "Bearer ,,, resource_metadata={prm}",
    "Bearer resource_metadata=é",
)
garbage_challenges = st.lists(
    st.integers(1, 255).filter(lambda b: b not in (10, 11, 12, 13)), min_size=0, max_size=120
).map(lambda bs: (bytes(bs).strip(b" \t") or b"x").decode("latin-1"))
challenge_values = st.lists(
    st.one_of(st.sampled_from(CHALLENGES), garbage_challenges), max_size=3
).map(tuple)

AUTHORIZE_OPS = (
    "error",
    "error-only",
    "state-wrong",
    "state-missing",
    "state-dup-before",
    "state-dup-after",
    "code-missing",
    "code-empty",
    "code-dup",
    "code-odd",
    "iss-missing",
    "iss-wrong",
    "iss-dup",
    "extra",
    "fragment",
    "percent",
    "other-target",
    "many",
)
AUTHORIZE_REDIRECTS = ("none", "invalid", "relative", "scheme", "control")

authorize_misbehaviours = st.one_of(
    kind(
        "authorize",
        "answer",
        st.lists(st.sampled_from(AUTHORIZE_OPS), min_size=1, max_size=3).map(tuple),
        texts,
    ),
    kind("authorize", "status", st.sampled_from((200, 400, 404, 500))),
    kind(
        "authorize",
        "redirect",
        st.sampled_from(REDIRECT_CODES),
        st.sampled_from(AUTHORIZE_REDIRECTS),
    ),
    kind("authorize", "framing", st.sampled_from(("drop", "garbage", "hang-head"))),
)

RESOURCE_ANSWERS = (
    "401-same",
    "401-moved",
    "401-bare",
    "403-granted",
    "403-more",
    "403-bare",
    "403-plain",
    "redirect-as",
    "redirect-path",
    "nonce",
    "500",
)
resource_misbehaviours = st.one_of(
    kind("resource", "answer", st.sampled_from(RESOURCE_ANSWERS)),
    kind("resource", "challenge", challenge_values),
)
challenge_misbehaviours = st.one_of(
    kind("challenge", "www", st.sampled_from((401, 403)), challenge_values),
    kind("challenge", "status", st.sampled_from((400, 407, 500))),
)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    grant = draw(st.sampled_from(GRANTS))
    flow = draw(st.sampled_from(FLOWS))
    steps = ["none", "challenge", "prm", "asm", "token", "resource"]
    if grant == "dcr":
        steps.append("register")
    if grant in CODE_GRANTS:
        steps.append("authorize")
    if flow in REFRESH_FLOWS:
        steps.append("refresh")
    step = draw(st.sampled_from(steps))
    if step == "none":
        mis = Mis()
    elif step == "challenge":
        mis = draw(challenge_misbehaviours)
    elif step == "authorize":
        mis = draw(authorize_misbehaviours)
    elif step == "resource":
        mis = draw(resource_misbehaviours)
    else:
        mis = draw(document_misbehaviours(step))
    return Scenario(
        grant,
        flow,
        draw(st.sampled_from(DISCOVERIES)),
        draw(st.booleans()),
        draw(st.sampled_from(REG_METHODS)),
        mis,
    )


# -- the hostile servers ------------------------------------------------------------------------


def closed_port() -> int:
    """A loopback port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def challenged(status: int, values: tuple[str, ...]) -> Reply:
    """A challenge written as raw bytes, so that its header values may hold any
    byte a header line can (h11 would refuse to write some of them)."""
    body = b'{"error": "invalid_token"}'
    lines = [f"HTTP/1.1 {status} Denied".encode(), b"Content-Type: application/json"]
    lines += [b"WWW-Authenticate: " + v.encode("latin-1", "replace") for v in values]
    lines.append(f"Content-Length: {len(body)}".encode())
    return Reply(raw=[b"\r\n".join(lines) + b"\r\n\r\n" + body], raw_keep=True)


def json_bytes(value: Any) -> bytes:
    return json.dumps(value).encode()


def token_verdict(status: int, doc: Any, dpop_sent: bool) -> str:
    """Whether a client must refuse a token answer (RFC 6749 §5.1, §5.2; RFC 9449 §5):
    ``valid``, ``poisoned`` (must be refused), or ``either``."""
    if status != 200 or not isinstance(doc, dict):
        return "poisoned"
    if "error" in doc:
        error = doc["error"]
        return "poisoned" if isinstance(error, str) and error else "either"
    kind = doc.get("token_type")
    kinds = ("bearer", "dpop") if dpop_sent else ("bearer",)
    if not isinstance(kind, str) or kind.lower() not in kinds:
        return "poisoned"
    expires = doc.get("expires_in")
    if expires is not None and (type(expires) is not int or expires < 0):
        return "poisoned"
    return "valid"


@dataclass
class Issued:
    """A token answer the authorization server gave."""

    access: str
    refresh: str | None
    verdict: str
    scopes: list[str]
    issuer: str


@dataclass
class Script:
    scenario: Scenario
    rs_origin: str = ""
    as_origin: str = ""
    closed: str = ""
    #: Occurrences of each step so far.
    counts: dict[str, int] = field(default_factory=dict)
    #: The global sequence number of each request, and of the first misbehaviour.
    sequence: list[tuple[str, Seen]] = field(default_factory=list)
    misbehaved_at: int | None = None
    #: Access tokens the MCP server takes, with their scopes; the first one.
    granted: dict[str, list[str]] = field(default_factory=dict)
    first_token: str | None = None
    used_once: set[str] = field(default_factory=set)
    issued: list[Issued] = field(default_factory=list)
    #: Authorization codes: their scopes, PKCE challenge and issuer; every code's
    #: issuer; the codes of answers the client must refuse.
    codes: dict[str, tuple[list[str], str | None, str]] = field(default_factory=dict)
    code_issuers: dict[str, str] = field(default_factory=dict)
    refused_codes: set[str] = field(default_factory=set)
    #: Refresh tokens: their scopes and issuer.
    refresh_scopes: dict[str, tuple[list[str], str]] = field(default_factory=dict)
    #: The private_key_jwt client assertions the token endpoint received.
    client_assertions: set[str] = field(default_factory=set)
    #: Token endpoints named (origin + path) per issuer, where its secrets may go.
    token_endpoints: dict[str, set[str]] = field(default_factory=dict)
    #: What the servers saw the client do wrong (asserted empty at the end).
    violations: list[str] = field(default_factory=list)
    #: An authorization answer the client must refuse was given.
    refused_answer: bool = False
    nonces: int = 0
    numbers: int = 0
    release: anyio.Event = field(default_factory=anyio.Event)

    # -- configuration ----------------------------------------------------------------

    @property
    def mis(self) -> Mis:
        return self.scenario.mis

    @property
    def issuer(self) -> str:
        return self.as_origin + (TENANT if self.scenario.discovery == "tenant" else "")

    @property
    def second(self) -> str:
        return self.as_origin + SECOND

    @property
    def rs_url(self) -> str:
        return self.rs_origin + "/mcp"

    @property
    def prm_url(self) -> str:
        return self.rs_origin + PRM_WELL_KNOWN + "/mcp"

    @property
    def metadata_path(self) -> str:
        discovery = self.scenario.discovery
        if discovery == "oauth":
            return "/.well-known/oauth-authorization-server"
        if discovery == "oidc":
            return "/.well-known/openid-configuration"
        return TENANT + "/.well-known/openid-configuration"

    def resolve(self, value: Any) -> Any:
        if isinstance(value, str):
            return (
                value.replace("{prm}", self.prm_url)
                .replace("{issuer}", self.issuer)
                .replace("{asport}", self.as_origin.rsplit(":", 1)[1])
                .replace("{rsport}", self.rs_origin.rsplit(":", 1)[1])
                .replace("{as}", self.as_origin)
                .replace("{rs}", self.rs_origin)
                .replace("{closed}", self.closed)
            )
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.resolve(v) for v in value)
        return value

    def prm(self, issuer: str | None = None) -> dict[str, Any]:
        servers = [issuer or self.issuer]
        doc: dict[str, Any] = {"resource": self.rs_url, "authorization_servers": servers}
        if self.scenario.flow == "step-up" or self.scenario.grant not in CODE_GRANTS:
            doc["scopes_supported"] = ["mcp:read"]
        return doc

    def metadata(self, issuer: str) -> dict[str, Any]:
        doc = as_metadata(issuer, authorization_response_iss_parameter_supported=True)
        doc["scopes_supported"] = ["mcp:read", "mcp:write", "offline_access"]
        if self.scenario.grant != "dcr":
            del doc["registration_endpoint"]
        if self.scenario.grant == "cimd":
            doc["client_id_metadata_document_supported"] = True
        if self.scenario.grant == "private_key_jwt":
            doc["token_endpoint_auth_methods_supported"] = ["private_key_jwt"]
        return doc

    def oauth_client(self) -> OAuthClient:
        s = self.scenario
        timeout = HANG if s.hangs else EXCHANGE_TIMEOUT
        common: dict[str, Any] = {"timeout": timeout, "dpop": s.dpop}
        if s.flow == "stored":
            # Tokens an earlier process kept: refreshed at their issuer, found anew.
            storage = InMemoryTokenStorage()
            storage.tokens = OAuthTokens(
                "access-0x", self.issuer, self.rs_url, "refresh-0x", None, ["mcp:read"]
            )
            self.refresh_scopes["refresh-0x"] = (["mcp:read"], self.issuer)
            self.issued.append(Issued("access-0x", "refresh-0x", "valid", [], self.issuer))
            common["storage"] = storage
        if s.grant == "dcr":
            return OAuthClient(
                redirect_handler=headless_redirect_handler(timeout=timeout), **common
            )
        if s.grant == "preregistered":
            return OAuthClient(
                redirect_handler=headless_redirect_handler(timeout=timeout),
                client_id="cid",
                client_secret=SECRET,
                **common,
            )
        if s.grant == "cimd":
            return OAuthClient(
                redirect_handler=headless_redirect_handler(timeout=timeout),
                client_metadata_url=CIMD_URL,
                **common,
            )
        if s.grant == "client_credentials":
            return OAuthClient(
                grant="client_credentials", client_id="cid", client_secret=SECRET, **common
            )
        if s.grant == "private_key_jwt":
            return OAuthClient(
                grant="client_credentials",
                client_id="cid",
                client_assertion_signer=ES256Signer.generate(),
                **common,
            )

        async def assertion(issuer: str, resource: str) -> str:
            # The issuer: the one discovered, or with no resource metadata the
            # MCP server's origin (a 2025-03-26 server is its own authorization server).
            if issuer not in (self.issuer, self.second, self.rs_origin):
                self.violations.append(f"assertion asked for issuer {issuer!r}")
            self.check_resource("assertion", resource)
            return ASSERTION

        return OAuthClient(
            grant="jwt_bearer", client_id="cid", client_secret=SECRET, assertion=assertion, **common
        )

    # -- misbehaving ------------------------------------------------------------------

    def hit(self, step: str) -> bool:
        """Count an occurrence of ``step``; True when it is to misbehave."""
        number = self.counts[step] = self.counts.get(step, 0) + 1
        if self.mis.step != step or not (self.mis.repeat or number == 1):
            return False
        if self.misbehaved_at is None:
            self.misbehaved_at = len(self.sequence)
        return True

    def render(
        self, step: str, path: str, doc: dict[str, Any], status: int = 200
    ) -> tuple[Reply, int, Any, str]:
        """A JSON document's answer, misbehaving if it is the turn of ``step``: the
        reply, its status, the document as sent (``None`` if none), and whether a
        strict reader takes the body (``plain``, ``either`` or ``broken``)."""
        if not self.hit(step):
            return Reply.json(doc, status), status, doc, "plain"
        kind, d = self.mis.kind, self.resolve(self.mis.detail)
        ctype = [("Content-Type", "application/json")]
        sent: Any
        if kind == "status":
            code, body = d
            if body == "empty":
                return Reply.empty(code), code, None, "broken"
            if body == "text":
                return Reply.text(code, "no"), code, None, "broken"
            sent = doc if body == "good-json" else {"error": "invalid_request"}
            return Reply.json(sent, code), code, sent, "plain"
        if kind == "redirect":
            code, where = d
            other = self.rs_origin if path.startswith(self.as_origin + "/") else self.as_origin
            location = {
                "none": None,
                "same": path,
                "other-path": "/moved"
                + path.removeprefix(self.as_origin).removeprefix(self.rs_origin),
                "other-origin": other + urlsplit(path).path,
                "invalid": "http://[::1/x",
                "scheme": "ftp://127.0.0.1/x",
                "relative": "moved",
            }[where]
            headers = [] if location is None else [("Location", location)]
            return Reply.text(code, "moved", headers), code, None, "broken"
        if kind == "ctype":
            body = json_bytes(doc)
            head = [("Content-Length", str(len(body)))]
            if d[0] is not None:
                head.append(("Content-Type", d[0]))
            return Reply(status, head, [body]), status, doc, "plain"
        if kind == "body":
            shape = d[0]
            good = json_bytes(doc)
            data = {
                "empty": b"",
                "whitespace": b" \r\n\t ",
                "not-json": b"<html>hello</html>",
                "not-utf8": json_bytes({**doc, "note": "@"}).replace(b'"@"', b'"\xff\xfe\xc3"'),
                "truncated": good[:-3],
                "list": json_bytes([doc]),
                "null": b"null",
                "deep": b'{"a":' * 3000 + b"1" + b"}" * 3000,
                "huge": json_bytes({**doc, "padding": "x" * (1024 * 1024 + 10)}),
                "bom": b"\xef\xbb\xbf" + good,
                "two": good + good,
                "padded": b"\n\n   " + good + b"  \n",
            }[shape]
            sent = doc if shape in EITHER_SHAPES else None
            verdict = "either" if shape in EITHER_SHAPES else "broken"
            head = [*ctype, ("Content-Length", str(len(data)))]
            return Reply(status, head, [data]), status, sent, verdict
        if kind == "json":
            sent = d[0]
            return Reply.json(sent, status), status, sent, "plain"
        if kind == "field":
            name, value = d
            changed = dict(doc)
            if value == MISSING:
                changed.pop(name, None)
            else:
                changed[name] = value
            return Reply.json(changed, status), status, changed, "plain"
        assert kind == "framing"
        return self.framing(d[0], status, doc)

    def framing(self, how: str, status: int, doc: Any) -> tuple[Reply, int, Any, str]:
        body = json_bytes(doc)
        head = f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\n"
        if how == "drop":
            return Reply(drop=True), 0, None, "broken"
        if how == "cut":
            sized = head + f"Content-Length: {len(body)}\r\n\r\n"
            return Reply(raw=[sized.encode() + body[: len(body) // 2]]), 0, None, "broken"
        if how == "garbage":
            return Reply(raw=[b"hello there\r\n\r\n" + body]), 0, None, "broken"
        if how == "slow":
            half = len(body) // 2
            head_ = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
            return (
                Reply(status, head_, [body[:half], body[half:]], delay=0.02),
                status,
                doc,
                "plain",
            )
        if how == "hang-head":
            return Reply(raw=[b""], hold=self.release), 0, None, "broken"
        if how == "hang-body":
            sized = head + f"Content-Length: {len(body)}\r\n\r\n"
            return Reply(raw=[sized.encode() + body[:3]], hold=self.release), 0, None, "broken"
        assert how == "http10"
        head10 = f"HTTP/1.0 {status} OK\r\nContent-Type: application/json\r\n\r\n"
        return Reply(raw=[head10.encode() + body]), status, doc, "plain"

    # -- the MCP server (protected resource) ----------------------------------------------

    async def resource(self, seen: Seen) -> Reply:
        return self._guarded("rs", "resource server", self._resource, seen)

    def _guarded(self, tag: str, who: str, answer: Callable[[Seen], Reply], seen: Seen) -> Reply:
        self.sequence.append((tag, seen))
        try:
            return answer(seen)
        except Exception:  # the test's own mistake: kept, and asserted on
            self.violations.append(f"{who} failed:\n" + traceback.format_exc())
            return Reply.empty(500)

    def _resource(self, seen: Seen) -> Reply:
        path = seen.target.partition("?")[0]
        moved = path.startswith("/moved/")
        path = path.removeprefix("/moved")
        if seen.method == "GET" and path == PRM_WELL_KNOWN + SECOND:
            return Reply.json(self.prm(self.second))
        if seen.method == "GET" and path in (PRM_WELL_KNOWN + "/mcp", PRM_WELL_KNOWN):
            if moved:
                return Reply.json(self.prm())
            reply, *_ = self.render("prm", self.rs_origin + path, self.prm())
            return reply
        if path != "/mcp":
            return Reply.empty(404)
        if seen.method != "POST":
            return Reply.empty(405)
        try:
            message = json.loads(seen.body)
        except ValueError:
            return Reply.text(400, "not JSON")
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return Reply.text(400, "not a JSON-RPC message")
        method = message["method"]
        token = self.presented(seen)
        if token is None or token not in self.granted or self.revoked(token):
            return self.challenge()
        if self.hit("resource"):
            return self.resource_misbehaviour(token)
        scoped = self.scenario.flow == "step-up" and method == "tools/list"
        if scoped and "mcp:write" not in self.granted[token]:
            challenge = (
                'Bearer error="insufficient_scope", scope="mcp:read mcp:write", '
                f'resource_metadata="{self.prm_url}"'
            )
            return Reply.json(
                {"error": "insufficient_scope"}, 403, [("WWW-Authenticate", challenge)]
            )
        self.used_once.add(token)
        if "id" not in message:
            return Reply.empty(202)
        rid = message["id"]
        if method == "initialize":
            params = message.get("params") or {}
            return Reply.json(
                result(
                    rid,
                    {
                        "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "hostile", "version": "0"},
                    },
                )
            )
        if method == "tools/list":
            return Reply.json(
                result(rid, {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]})
            )
        return Reply.json({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no"}})

    def presented(self, seen: Seen) -> str | None:
        value = seen.headers.get("authorization")
        if value is None:
            return None
        scheme, _, token = value.partition(" ")
        if scheme.lower() not in ("bearer", "dpop"):
            return None
        return token

    def revoked(self, token: str) -> bool:
        """In the ``revoked`` flow the first token serves one request only."""
        return (
            self.scenario.flow == "revoked"
            and token == self.first_token
            and token in self.used_once
        )

    def challenge(self) -> Reply:
        prm = f'Bearer error="invalid_token", resource_metadata="{self.prm_url}"'
        if not self.hit("challenge"):
            return Reply.json({"error": "invalid_token"}, 401, [("WWW-Authenticate", prm)])
        kind, d = self.mis.kind, self.resolve(self.mis.detail)
        if kind == "status":
            return Reply.text(d[0], "no")
        code, values = d
        return challenged(code, values)

    def resource_misbehaviour(self, token: str) -> Reply:
        kind, d = self.mis.kind, self.resolve(self.mis.detail)
        if kind == "challenge":
            return challenged(401, d[0])
        answer = d[0]
        prm = f'resource_metadata="{self.prm_url}"'
        granted = " ".join(self.granted[token])
        if answer == "401-same":
            return Reply.json(
                {}, 401, [("WWW-Authenticate", f'Bearer error="invalid_token", {prm}')]
            )
        if answer == "401-bare":
            return Reply.empty(401)
        if answer == "401-moved":  # another authorization server now (SEP-2352)
            moved = f'resource_metadata="{self.rs_origin}{PRM_WELL_KNOWN}{SECOND}"'
            return Reply.json({}, 401, [("WWW-Authenticate", f"Bearer {moved}")])
        if answer in ("403-granted", "403-more", "403-bare"):
            scope = {
                "403-granted": f', scope="{granted}"',
                "403-more": ', scope="mcp:admin"',
                "403-bare": "",
            }[answer]
            value = f'Bearer error="insufficient_scope"{scope}, {prm}'
            return Reply.json({}, 403, [("WWW-Authenticate", value)])
        if answer == "403-plain":
            return Reply.text(403, "forbidden")
        if answer == "redirect-as":
            return Reply.text(307, "moved", [("Location", self.as_origin + "/mcp")])
        if answer == "redirect-path":
            return Reply.text(307, "moved", [("Location", "/elsewhere")])
        if answer == "nonce":
            self.nonces += 1
            return Reply.json(
                {},
                401,
                [
                    ("WWW-Authenticate", 'DPoP error="use_dpop_nonce"'),
                    ("DPoP-Nonce", f"rn-{self.nonces}"),
                ],
            )
        assert answer == "500"
        return Reply.text(500, "trouble")

    # -- the authorization server -----------------------------------------------------------

    async def authorization(self, seen: Seen) -> Reply:
        return self._guarded("as", "authorization server", self._authorization, seen)

    def _authorization(self, seen: Seen) -> Reply:
        target, _, query = seen.target.partition("?")
        moved = target.startswith("/moved/")
        path = target.removeprefix("/moved")
        url = self.as_origin + path
        prefix = TENANT if self.scenario.discovery == "tenant" else ""
        if seen.method == "GET" and path == self.metadata_path:
            metadata = self.metadata(self.issuer)
            if moved:
                reply, sent = Reply.json(metadata), metadata
            else:
                reply, _, sent, _ = self.render("asm", url, metadata)
            if isinstance(sent, dict):
                self.name_token_endpoint(self.issuer, sent.get("token_endpoint"))
            return reply
        if seen.method == "GET" and path == "/.well-known/oauth-authorization-server" + SECOND:
            metadata = self.metadata(self.second)
            self.name_token_endpoint(self.second, metadata["token_endpoint"])
            return Reply.json(metadata)
        if path.startswith(SECOND + "/"):
            issuer, path = self.second, path.removeprefix(SECOND)
        elif path.startswith(prefix + "/"):
            issuer, path = self.issuer, path.removeprefix(prefix)
        else:
            return Reply.empty(404)
        if seen.method == "POST" and path == "/register":
            return self.register(seen, url, moved, issuer)
        if seen.method == "GET" and path == "/authorize":
            return self.authorize(query, moved, issuer)
        if seen.method == "POST" and path == "/token":
            return self.token(seen, url, moved, issuer)
        return Reply.empty(404)

    def name_token_endpoint(self, issuer: str, value: object) -> None:
        if not isinstance(value, str) or not value:
            return
        try:
            parts = urlsplit(value)
        except ValueError:
            return  # not a URL: nothing can be sent there
        named = f"{parts.scheme}://{parts.netloc}{parts.path}".lower()
        self.token_endpoints.setdefault(issuer, set()).add(named)

    def register(self, seen: Seen, url: str, moved: bool, issuer: str) -> Reply:
        try:
            asked = json.loads(seen.body)
        except ValueError:
            asked = None
        if not isinstance(asked, dict) or asked.get("redirect_uris") != [REDIRECT_URI]:
            self.violations.append(f"registration request {seen.body!r}")
        self.numbers += 1
        doc: dict[str, Any] = {
            "client_id": f"reg-{self.numbers}x",
            "token_endpoint_auth_method": self.scenario.reg_method,
            "redirect_uris": [REDIRECT_URI],
        }
        if self.scenario.reg_method != "none":
            doc["client_secret"] = REG_SECRET if issuer == self.issuer else REG_SECRET_2
        if moved:
            return Reply.json(doc, 201)
        reply, *_ = self.render("register", url, doc, 201)
        return reply

    def authorize(self, query: str, moved: bool, issuer: str) -> Reply:
        params = dict(parse_qsl(query, keep_blank_values=True))
        for name, want in (
            ("response_type", "code"),
            ("code_challenge_method", "S256"),
            ("redirect_uri", REDIRECT_URI),
        ):
            if params.get(name) != want:
                self.violations.append(f"authorization request {name}={params.get(name)!r}")
        self.check_resource("authorization", params.get("resource", ""))
        if not params.get("state") or not params.get("code_challenge"):
            self.violations.append(f"authorization request without state or PKCE: {params}")
        self.numbers += 1
        code = f"code-{self.numbers}x"
        self.codes[code] = (params.get("scope", "").split(), params.get("code_challenge"), issuer)
        self.code_issuers[code] = issuer
        state = params.get("state", "")
        pairs = [("code", code), ("state", state), ("iss", issuer)]
        if moved or not self.hit("authorize"):
            return self.redirect(302, REDIRECT_URI + "?" + urlencode(pairs))
        kind, d = self.mis.kind, self.mis.detail
        if kind == "status":
            return Reply.text(d[0], "<html>log in</html>")
        if kind == "framing":
            self.refused_answer = True
            reply, *_ = self.framing(d[0], 302, {})
            return reply
        if kind == "redirect":
            code_, where = d
            query_ = urlencode(pairs)
            location = {
                "none": None,
                "invalid": f"http://[::1/callback?{query_}",
                "relative": f"callback?{query_}",
                "scheme": f"myapp:/callback?{query_}",
                "control": f"/callback\x7f?{query_}",
            }[where]
            if where != "relative":  # the answer never reaches the client
                self.refused_answer = True
                self.refused_codes.add(code)
            headers = [] if location is None else [("Location", location)]
            return Reply.text(code_, "moved", headers)
        ops, odd = d
        base = REDIRECT_URI
        for op in ops:
            if op == "error":
                pairs = [("error", "access_denied"), ("error_description", "no"), *pairs[1:]]
            elif op == "error-only":
                pairs = [("error", "server_error")]
            elif op == "state-wrong":
                pairs = [(k, "forged" if k == "state" else v) for k, v in pairs]
            elif op == "state-missing":
                pairs = [(k, v) for k, v in pairs if k != "state"]
            elif op == "state-dup-before":
                pairs = [("state", "forged"), *pairs]
            elif op == "state-dup-after":
                pairs = [*pairs, ("state", "forged")]
            elif op == "code-missing":
                pairs = [(k, v) for k, v in pairs if k != "code"]
            elif op == "code-empty":
                pairs = [(k, "" if k == "code" else v) for k, v in pairs]
            elif op == "code-dup":
                pairs = [("code", "stale-code"), *pairs]
            elif op == "code-odd":
                pairs = [(k, odd if k == "code" else v) for k, v in pairs]
            elif op == "iss-missing":
                pairs = [(k, v) for k, v in pairs if k != "iss"]
            elif op == "iss-wrong":
                pairs = [(k, self.rs_origin if k == "iss" else v) for k, v in pairs]
            elif op == "iss-dup":
                pairs = [("iss", self.rs_origin), *pairs]
            elif op == "extra":
                pairs = [*pairs, ("foo", "bar"), ("access_token", "nope")]
            elif op == "many":
                pairs = [*pairs, *((f"p{i}", "v") for i in range(300))]
            elif op == "other-target":
                base = self.rs_origin + "/callback"
        query_ = urlencode(pairs)
        if "percent" in ops:
            query_ += "&code=%ff%fe%00"
        if self.must_refuse_answer(query_, state, issuer, fragment="fragment" in ops):
            self.refused_answer = True
            self.refused_codes.add(code)
        if "fragment" in ops:
            return self.redirect(302, f"{base}#{query_}")
        return self.redirect(302, f"{base}?{query_}")

    def must_refuse_answer(self, query: str, state: str, issuer: str, *, fragment: bool) -> bool:
        """Whether a client must refuse this authorization answer: an error
        (RFC 6749 §4.1.2.1), another or no ``state`` (§10.12), no code, another or
        no ``iss`` where the server advertises it (RFC 9207 §2.4). An answer with a
        parameter twice (§3.1 forbids it) may go either way."""
        if fragment:
            return True  # the query holds nothing: no state
        pairs = parse_qsl(query, keep_blank_values=True)
        answer = dict(pairs)
        if len(answer) != len(pairs):
            return False
        return (
            answer.get("state") != state
            or "error" in answer
            or not answer.get("code")
            or answer.get("iss") != issuer
        )

    def check_resource(self, what: str, resource: str) -> None:
        """RFC 8707: the request names the MCP server, by its URL or by the
        resource its metadata named, which holds it (RFC 9728 §3.3)."""
        parts = urlsplit(resource)
        inside = "/mcp".startswith(parts.path.rstrip("/"))
        if f"{parts.scheme}://{parts.netloc}".lower() != self.rs_origin or not inside:
            self.violations.append(f"{what} request for resource {resource!r}")

    def redirect(self, status: int, location: str) -> Reply:
        return Reply(status, [("Location", location), ("Content-Length", "0")])

    def token(self, seen: Seen, url: str, moved: bool, issuer: str) -> Reply:
        if seen.headers.get("content-type") != "application/x-www-form-urlencoded":
            return Reply.json({"error": "invalid_request"}, 400)  # not a token request
        form = dict(parse_qsl(seen.body.decode("latin-1"), keep_blank_values=True))
        self.check_resource("token", form.get("resource", ""))
        grant = form.get("grant_type")
        dpop_sent = "dpop" in seen.headers
        if "client_assertion" in form:  # RFC 7523 §2.2: a credential, like a secret
            self.client_assertions.add(form["client_assertion"])
        step = "refresh" if grant == "refresh_token" else "token"
        if self.mis.kind == "nonce" and self.mis.step == step and self.hit(step):
            # RFC 9449 §8: a nonce demanded (the same one again, or a new one).
            self.nonces += 1
            nonce = "n-1" if self.mis.detail[0] else f"n-{self.nonces}"
            return Reply.json({"error": "use_dpop_nonce"}, 400, [("DPoP-Nonce", nonce)])
        if grant == "authorization_code":
            code = form.get("code", "")
            known = self.codes.get(code)
            if code in self.refused_codes:
                self.violations.append(f"a refused authorization answer's code redeemed: {code}")
            if known is None or known[2] != issuer:
                return Reply.json({"error": "invalid_grant"}, 400)
            scopes, challenge, _ = known
            verifier = form.get("code_verifier", "")
            digest = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest())
            if digest.rstrip(b"=").decode() != challenge:
                self.violations.append("the code_verifier does not match the code_challenge")
            if form.get("redirect_uri") != REDIRECT_URI:
                self.violations.append(f"token request redirect_uri {form.get('redirect_uri')!r}")
            del self.codes[code]
        elif grant == "refresh_token":
            refreshed = self.refresh_scopes.get(form.get("refresh_token", ""))
            if refreshed is None or refreshed[1] != issuer:
                return Reply.json({"error": "invalid_grant"}, 400)
            scopes = refreshed[0]
        elif grant in ("client_credentials", JWT_BEARER):
            scopes = form.get("scope", "").split()
            if grant == JWT_BEARER and form.get("assertion") != ASSERTION:
                self.violations.append(f"token request assertion {form.get('assertion')!r}")
        else:
            return Reply.json({"error": "unsupported_grant_type"}, 400)
        self.numbers += 1
        access = f"access-{self.numbers}x"
        doc: dict[str, Any] = {
            "access_token": access,
            "token_type": "DPoP" if dpop_sent else "Bearer",
            "expires_in": 3600,
        }
        first = self.first_token is None and step == "token"
        if self.scenario.flow in REFRESH_FLOWS and step == "token":
            doc["refresh_token"] = f"refresh-{self.numbers}x"
        if self.scenario.flow == "expired" and first:
            doc["expires_in"] = 0
        if moved:
            reply, status, sent, shape = Reply.json(doc), 200, doc, "plain"
        else:
            reply, status, sent, shape = self.render(step, url, doc)
        if self.mis.kind == "redirect" and status in (307, 308):
            location = {k.lower(): v for k, v in reply.headers}.get("location", "")
            try:
                self.name_token_endpoint(issuer, urljoin(url, location))
            except ValueError:
                pass  # not a URL: nothing is sent there
        self.keep(Issued(access, None, "", scopes, issuer), status, sent, shape, dpop_sent, first)
        return reply

    def keep(
        self, issued: Issued, status: int, sent: Any, shape: str, dpop_sent: bool, first: bool
    ) -> None:
        """Note what a token answer gave, and whether the client may use it."""
        if shape == "broken" or sent is None:
            verdict = "poisoned"
        else:
            verdict = token_verdict(status, sent, dpop_sent)
            if shape == "either" and verdict == "valid":
                verdict = "either"
        doc = sent if isinstance(sent, dict) else {}
        token = doc.get("access_token") if isinstance(doc.get("access_token"), str) else None
        refresh = doc.get("refresh_token")
        refresh = refresh if isinstance(refresh, str) and refresh else None
        issued.access = token if token is not None else issued.access
        issued.refresh, issued.verdict = refresh, verdict
        self.issued.append(issued)
        if verdict == "poisoned" or token is None:
            return
        self.granted[token] = issued.scopes
        if first:
            self.first_token = token
        if refresh is not None:
            self.refresh_scopes[refresh] = (issued.scopes, issued.issuer)


# -- checking what the client sent --------------------------------------------------------------


def haystack(seen: Seen, *, headers: bool = True) -> str:
    """Everything a request carries, as text, decoded every way it may be encoded."""
    parts = [seen.target, unquote(seen.target), seen.body.decode("latin-1")]
    parts.append(unquote_plus(seen.body.decode("latin-1")))
    if headers:
        for _name, value in seen.fields:
            parts.append(value)
            scheme, _, rest = value.partition(" ")
            if scheme.lower() == "basic":
                try:
                    parts.append(unquote(base64.b64decode(rest.strip()).decode("latin-1")))
                except ValueError:
                    pass
    return "\n".join(parts)


def check_traffic(script: Script, rs_seen: list[Seen], as_seen: list[Seen]) -> None:
    """Invariants 2 and 3: where each secret went, and how much traffic there was."""
    assert len(rs_seen) <= MAX_SEEN, [(s.method, s.target) for s in rs_seen]
    assert len(as_seen) <= MAX_SEEN, [(s.method, s.target) for s in as_seen]
    access = {i.access for i in script.issued if i.access.startswith("access-")}
    poisoned = {i.access for i in script.issued if i.verdict == "poisoned"}
    named = script.token_endpoints
    everywhere = set().union(*named.values())
    fallback = any(
        s.method == "GET" and s.target.startswith("/.well-known/oauth-authorization-server")
        for s in rs_seen
    )
    if fallback:  # a 2025-03-26 server: its origin is the authorization server
        everywhere.add(script.rs_origin + "/token")
    # Where each secret may go: a pre-registered client's secret and assertions
    # to any token endpoint (its identity is used at every authorization server),
    # what one authorization server gave to its own token endpoints only.
    anywhere = (SECRET, ASSERTION, *script.client_assertions)
    secrets: dict[str, set[str]] = dict.fromkeys(anywhere, everywhere)
    secrets[REG_SECRET] = named.get(script.issuer, set())
    secrets[REG_SECRET_2] = named.get(script.second, set())
    for issued in script.issued:
        if issued.refresh is not None and issued.refresh.startswith("refresh-"):
            secrets[issued.refresh] = named.get(issued.issuer, set())
    for code, issuer in script.code_issuers.items():
        secrets[code] = named.get(issuer, set())
    for where, origin, seen in [
        *(("rs", script.rs_origin, s) for s in rs_seen),
        *(("as", script.as_origin, s) for s in as_seen),
    ]:
        url = (origin + seen.target.partition("?")[0]).lower()
        everything = haystack(seen)
        for token in access:
            if token not in everything:
                continue
            assert where == "rs", f"access token {token} sent to {url}"
            assert token not in haystack(seen, headers=False), f"access token in {url}'s body"
            assert seen.headers.get("authorization", "").endswith(" " + token), seen.fields
        if where == "rs":
            value = seen.headers.get("authorization")
            if value is not None:
                token = value.partition(" ")[2]
                assert token not in poisoned, f"a refused token answer's token was used: {value}"
            assert "x-injected" not in seen.headers
        for secret, endpoints in secrets.items():
            if secret in everything:
                assert seen.method == "POST" and url in endpoints, (
                    f"{secret} sent with {seen.method} {url}; its token endpoints: {endpoints}"
                )
    assert not script.violations, script.violations


# -- the outcome --------------------------------------------------------------------------------

#: What an authorization failure's message names, per step where it failed; a
#: failure may also show at a later step the misbehaviour led to (``LATER``).
STEP_WORDS: dict[str, tuple[str, ...]] = {
    "challenge": ("www-authenticate",),
    "prm": ("protected resource metadata", "metadata '", "oauth-protected-resource", "/prm"),
    "asm": (
        "authorization server",
        "metadata",
        "issuer",
        "pkce",
        "endpoint",
        "oauth-authorization-server",
        "openid-configuration",
    ),
    "register": ("registration", "/register"),
    "authorize": ("authorization endpoint", "authorization response", "authorization re"),
    "token": ("token", "expires_in"),
    "refresh": ("token", "expires_in"),
    "resource": ("www-authenticate",),
}
LATER: dict[str, tuple[str, ...]] = {
    "none": (),
    "challenge": ("prm", "asm", "register", "authorize", "token"),
    "prm": ("asm", "register", "authorize", "token"),
    "asm": ("register", "authorize", "token"),
    "register": ("authorize", "token"),
    "authorize": ("token",),
    "token": (),
    "refresh": ("prm", "asm", "register", "authorize", "token"),
    "resource": ("prm", "asm", "register", "authorize", "token"),
}


def named_step(message: str, script: Script) -> bool:
    """Whether an authorization failure's message names the step that failed:
    its words, or the URL a misbehaving document or challenge sent the client to
    (an exchange that fails is named by its method and URL)."""
    text = message.lower()
    step = script.mis.step
    steps = (step, *LATER[step]) if step in STEP_WORDS else LATER[step]
    words = [word for s in steps for word in STEP_WORDS[s]]
    detail = script.resolve(script.mis.detail)
    urls: list[str] = []
    if script.mis.kind in ("www", "challenge"):
        urls += re.findall(r'resource_metadata="?([^",]+)', " ".join(detail[-1]).lower())
    if script.mis.kind == "field" and isinstance(detail[1], str):
        urls.append(detail[1].lower())
    words += [f"{method} {url}" for url in urls for method in ("get", "post")]
    return any(word in text for word in words)


def readable(value: Any) -> bool:
    """Whether a JSON value can be read by a client that takes 64-bit integers only
    (a document that cannot is no document: the next place is tried)."""
    if isinstance(value, bool):
        return True
    if isinstance(value, int):
        return -(2**63) <= value < 2**64
    if isinstance(value, list):
        return all(readable(v) for v in value)
    if isinstance(value, dict):
        return all(readable(v) for v in value.values())
    return True


def must_refuse(scenario: Scenario) -> str | None:
    """What the flow must not go on to, after a document that must be refused
    (``None``: nothing is required)."""
    mis = scenario.mis
    if scenario.flow == "stored" and not mis.repeat:
        return None  # refused while refreshing stored tokens: the flow starts over
    if mis.kind == "field" and readable(mis.detail[1]):
        name, value = mis.detail
        if mis.step == "prm" and name == "resource":
            ok = ("{rs}", "{rs}/mcp/", "HTTP://127.0.0.1:{rsport}/mcp")
            if value not in ok:
                return "authorization server"
        if mis.step == "asm":
            if name == "issuer":
                return "grant"
            if name == "code_challenge_methods_supported" and not (
                isinstance(value, list) and "S256" in value
            ):
                lists = isinstance(value, list) or value not in (MISSING, None)
                if lists or scenario.grant in CODE_GRANTS:
                    return "grant"
            endpoint = name in ("authorization_endpoint", "token_endpoint")
            if (endpoint or name == "registration_endpoint") and value == "http://auth.example/x":
                return "grant"
    return None


def check_refusal(script: Script, outcome: str) -> None:
    """Invariant 5: a document that must be refused stops the flow."""
    refuse = must_refuse(script.scenario)
    if script.refused_answer and script.scenario.mis.step == "authorize":
        refuse = "token"
    if refuse is None:
        return
    assert outcome == "error", "the client went on after a document it must refuse"
    assert script.misbehaved_at is not None
    later = [seen for where, seen in script.sequence[script.misbehaved_at :] if where == "as"]
    if refuse == "authorization server":
        assert not later, [s.target for s in later]
    elif refuse == "grant":
        # Metadata may be looked for again (a refresh's discovery failed, a new one
        # starts), but nothing of the grant follows.
        assert not [s for s in later if "/.well-known/" not in s.target], [s.target for s in later]
    else:
        assert not [s for s in later if s.method == "POST"], [s.target for s in later]


@dataclass
class Outcome:
    kind: str = "none"  # "ok", "error", "hang", "close-raised", "leak"
    value: Any = None


async def exercise(script: Script, outcome: Outcome) -> None:
    client = Client.http(
        script.rs_url,
        auth=script.oauth_client(),
        mode="legacy",
        request_timeout=REQUEST_TIMEOUT,
    )
    closing = False
    with anyio.move_on_after(FAST) as scope:
        try:
            async with client:
                try:
                    tools = await client.list_tools(cache=False)
                    outcome.kind, outcome.value = "ok", tools
                except MCPWireError as exc:
                    outcome.kind, outcome.value = "error", exc
                closing = True
        except MCPWireError as exc:
            if closing:
                outcome.kind, outcome.value = "close-raised", exc
            else:
                outcome.kind, outcome.value = "error", exc
        except Exception as exc:  # kept for the assertion, with its traceback
            outcome.kind = "leak"
            outcome.value = "".join(traceback.format_exception(exc))
    if scope.cancelled_caught:
        outcome.kind = "hang"


async def run_script(script: Script, backend: str) -> Outcome:
    outcome = Outcome()
    with anyio.fail_after(4 * FAST):
        async with raw_server(script.resource) as rs, raw_server(script.authorization) as as_:
            script.rs_origin = rs.url.removesuffix("/mcp")
            script.as_origin = as_.url.removesuffix("/mcp")
            script.closed = f"http://127.0.0.1:{closed_port()}"
            started = anyio.current_time()
            await exercise(script, outcome)
            elapsed = anyio.current_time() - started
            script.release.set()
    await anyio.sleep(0)
    # Checked here, outside the servers' task groups, so that a failure reads plainly.
    assert outcome.kind not in ("hang", "leak", "close-raised"), outcome.value
    assert elapsed < FAST, f"the call took {elapsed:.1f} s"
    assert not stray_tasks(backend)
    check_traffic(script, rs.seen, as_.seen)
    check_refusal(script, outcome.kind)
    return outcome


def check_outcome(script: Script, outcome: Outcome) -> None:
    """Invariant 1: the tools, or an MCPWireError that names the failed step."""
    if outcome.kind == "ok":
        assert [t.name for t in outcome.value] == ["t"]
        assert all(isinstance(t, Tool) for t in outcome.value)
        return
    assert outcome.kind == "error", outcome
    error = outcome.value
    message = str(error)
    step = script.mis.step
    assert step != "none", message
    if step in ("prm", "asm", "register", "authorize"):
        # Only the flow can fail there: AuthorizationFailed, the request's failure.
        assert "authorization failed" in message, message
    if "authorization failed" in message:
        assert isinstance(error, JSONRPCError), repr(error)
        assert error.code == -32600, repr(error)
        assert named_step(message, script), message


# -- the test -----------------------------------------------------------------------------------


def mis(step: str, kind: str, *detail: Any, repeat: bool = False) -> Mis:
    return Mis(step, kind, detail, repeat)


def at(i: int, kind: str, *detail: Any) -> Scenario:
    """The ``i``-th of a series of examples: the documents in turn, each with a
    grant and flow that reach it, repeated or not."""
    step = DOCUMENT_STEPS[i % len(DOCUMENT_STEPS)]
    grant = "dcr" if step == "register" else GRANTS[i % len(GRANTS)]
    flows = REFRESH_FLOWS if step == "refresh" else FLOWS if step in ("prm", "asm") else GRANT_FLOWS
    flow = flows[i % len(flows)]
    misbehaviour = mis(step, kind, *detail, repeat=i % 2 == 0)
    return Scenario(grant, flow, DISCOVERIES[i % 3], i % 3 == 0, mis=misbehaviour)


EXAMPLES: list[Scenario] = [
    # Every grant, flow and discovery without misbehaviour.
    *(
        Scenario(grant, flow, DISCOVERIES[i % 3], i % 2 == 0, REG_METHODS[i % 3])
        for i, (grant, flow) in enumerate((g, f) for g in GRANTS for f in FLOWS)
    ),
    # The MCP server's challenge: each value alone (one of them https to a server
    # that speaks plain HTTP: its TLS handshake ends at once), several, none.
    *(
        Scenario(GRANTS[i % 6], dpop=i % 5 == 0, mis=mis("challenge", "www", 401, (c,)))
        for i, c in enumerate(CHALLENGES)
    ),
    Scenario(mis=mis("challenge", "www", 401, ())),
    Scenario("client_credentials", mis=mis("challenge", "www", 401, ("\x01\xff ,,,=",))),
    Scenario(mis=mis("challenge", "www", 401, CHALLENGES[2:5], repeat=True)),
    Scenario(mis=mis("challenge", "www", 403, CHALLENGES[8:12], repeat=True)),
    Scenario(dpop=True, mis=mis("challenge", "www", 401, CHALLENGES[-6:], repeat=True)),
    Scenario(mis=mis("challenge", "status", 500)),
    # The documents: statuses, redirects, content types, bodies, framing.
    Scenario(mis=mis("prm", "status", 404, "empty", repeat=True)),
    Scenario("client_credentials", mis=mis("prm", "status", 500, "good-json", repeat=True)),
    Scenario(mis=mis("prm", "redirect", 307, "other-path")),
    Scenario(mis=mis("prm", "redirect", 308, "same", repeat=True)),
    Scenario(mis=mis("asm", "redirect", 302, "other-origin")),
    Scenario(mis=mis("asm", "redirect", 307, "none", repeat=True)),
    Scenario(mis=mis("register", "redirect", 307, "other-path")),
    Scenario(mis=mis("register", "redirect", 308, "other-origin")),
    Scenario("preregistered", mis=mis("token", "redirect", 307, "other-origin")),
    Scenario("client_credentials", mis=mis("token", "redirect", 307, "other-path")),
    Scenario("jwt_bearer", mis=mis("token", "redirect", 303, "invalid")),
    Scenario(mis=mis("asm", "redirect", 301, "scheme", repeat=True)),
    Scenario(mis=mis("token", "redirect", 308, "relative")),
    Scenario(mis=mis("asm", "ctype", "text/html")),
    Scenario("client_credentials", mis=mis("token", "ctype", None)),
    Scenario(mis=mis("register", "ctype", "application/x-www-form-urlencoded")),
    *(at(i, "body", shape) for i, shape in enumerate(BODY_SHAPES)),
    Scenario(mis=mis("token", "json", [1, 2])),
    Scenario(mis=mis("asm", "json", None, repeat=True)),
    *(at(i + 1, "framing", how) for i, how in enumerate(FRAMINGS)),
    Scenario(dpop=True, mis=mis("token", "nonce", False, repeat=True)),
    Scenario("client_credentials", dpop=True, mis=mis("token", "nonce", True)),
    Scenario(flow="revoked", dpop=True, mis=mis("refresh", "nonce", False, repeat=True)),
    # Members replaced: the checks that protect the token.
    Scenario(mis=mis("prm", "field", "resource", "{rs}/other")),
    Scenario("client_credentials", mis=mis("prm", "field", "resource", "{as}/mcp")),
    Scenario(mis=mis("prm", "field", "resource", "{rs}")),
    Scenario(mis=mis("prm", "field", "resource", MISSING, repeat=True)),
    Scenario(mis=mis("prm", "field", "authorization_servers", ["{as}/"])),
    Scenario(mis=mis("prm", "field", "authorization_servers", ["http://localhost:{asport}"])),
    Scenario(mis=mis("prm", "field", "authorization_servers", ["{rs}"], repeat=True)),
    Scenario(mis=mis("prm", "field", "authorization_servers", ["{closed}"])),
    Scenario(mis=mis("prm", "field", "authorization_servers", ["ftp://x"])),
    Scenario(mis=mis("prm", "field", "resource", "http://[::1/x")),
    Scenario(mis=mis("prm", "field", "scopes_supported", [1, 2])),
    Scenario(mis=mis("asm", "field", "issuer", "{as}/")),
    Scenario("jwt_bearer", mis=mis("asm", "field", "issuer", MISSING)),
    Scenario(mis=mis("asm", "field", "code_challenge_methods_supported", ["plain"])),
    Scenario(mis=mis("asm", "field", "code_challenge_methods_supported", MISSING)),
    Scenario("client_credentials", mis=mis("asm", "field", "code_challenge_methods_supported", 7)),
    Scenario(mis=mis("asm", "field", "token_endpoint", "http://auth.example/x")),
    Scenario(mis=mis("asm", "field", "authorization_endpoint", "http://auth.example/x")),
    Scenario(mis=mis("asm", "field", "registration_endpoint", "http://auth.example/x")),
    Scenario(mis=mis("asm", "field", "registration_endpoint", MISSING)),
    Scenario("preregistered", mis=mis("asm", "field", "token_endpoint", "{rs}/mcp")),
    # https to a server that speaks plain HTTP: the TLS handshake ends at once.
    Scenario(
        "client_credentials",
        mis=mis("asm", "field", "token_endpoint", "https://127.0.0.1:{asport}/x"),
    ),
    Scenario(mis=mis("asm", "field", "authorization_endpoint", "https://127.0.0.1:{asport}/x")),
    Scenario(mis=mis("asm", "field", "authorization_endpoint", "{as}/token?x=1")),
    Scenario(mis=mis("asm", "field", "registration_endpoint", "{as}/token?x=1")),
    Scenario("private_key_jwt", mis=mis("asm", "field", "token_endpoint", "{as}/token?x=1")),
    # Not an absolute URL: the error still names the member, or the document.
    Scenario("jwt_bearer", mis=mis("asm", "field", "token_endpoint", "/relative")),
    Scenario(mis=mis("asm", "field", "scopes_supported", "mcp:read")),
    Scenario(
        "preregistered",
        mis=mis("asm", "field", "token_endpoint_auth_methods_supported", ["client_secret_post"]),
    ),
    Scenario(mis=mis("asm", "field", "token_endpoint_auth_methods_supported", "none")),
    Scenario(dpop=True, mis=mis("asm", "field", "dpop_signing_alg_values_supported", ["RS256"])),
    Scenario(dpop=True, mis=mis("asm", "field", "dpop_signing_alg_values_supported", [1])),
    Scenario(mis=mis("asm", "field", "authorization_response_iss_parameter_supported", False)),
    Scenario("cimd", mis=mis("asm", "field", "client_id_metadata_document_supported", "yes")),
    Scenario(
        "private_key_jwt",
        mis=mis("asm", "field", "token_endpoint_auth_methods_supported", ["none"]),
    ),
    Scenario(
        "private_key_jwt",
        mis=mis("asm", "field", "token_endpoint_auth_signing_alg_values_supported", ["RS256"]),
    ),
    Scenario(mis=mis("register", "field", "client_id", MISSING)),
    Scenario(mis=mis("register", "field", "client_id", "x" * 20000)),
    Scenario(mis=mis("register", "field", "client_id", "a\r\nb")),
    Scenario(reg_method="client_secret_post", mis=mis("register", "field", "client_secret", 1)),
    Scenario(mis=mis("register", "field", "token_endpoint_auth_method", "private_key_jwt")),
    Scenario(mis=mis("register", "status", 400, "oauth-error")),
    Scenario(mis=mis("token", "field", "access_token", MISSING)),
    Scenario(mis=mis("token", "field", "access_token", "a\r\nX-Injected: yes")),
    Scenario(mis=mis("token", "field", "access_token", "é-token")),
    Scenario("client_credentials", mis=mis("token", "field", "token_type", "mac")),
    Scenario(mis=mis("token", "field", "token_type", "DPoP")),
    Scenario(dpop=True, mis=mis("token", "field", "token_type", "bearer")),
    Scenario(mis=mis("token", "field", "token_type", MISSING)),
    Scenario(mis=mis("token", "field", "expires_in", -1)),
    Scenario(mis=mis("token", "field", "expires_in", "3600")),
    Scenario(mis=mis("token", "field", "expires_in", 1.5)),
    Scenario(mis=mis("token", "field", "expires_in", 2**64 - 1)),
    Scenario(mis=mis("token", "field", "expires_in", 10**30)),
    Scenario(mis=mis("token", "field", "expires_in", 0, repeat=True)),
    Scenario(flow="revoked", mis=mis("token", "field", "refresh_token", ["x"])),
    Scenario(mis=mis("token", "field", "scope", 1)),
    Scenario(mis=mis("token", "field", "error", "invalid_grant")),
    Scenario(mis=mis("token", "field", "error", None)),
    Scenario(mis=mis("token", "status", 400, "good-json")),
    Scenario("jwt_bearer", mis=mis("token", "status", 401, "oauth-error", repeat=True)),
    Scenario(flow="expired", mis=mis("refresh", "status", 400, "oauth-error")),
    Scenario(flow="revoked", mis=mis("refresh", "status", 500, "good-json", repeat=True)),
    Scenario(flow="expired", mis=mis("refresh", "field", "token_type", "mac", repeat=True)),
    Scenario(flow="revoked", mis=mis("refresh", "field", "expires_in", 0, repeat=True)),
    Scenario("client_credentials", "expired", mis=mis("refresh", "framing", "hang-body")),
    # The authorization answer.
    *(
        Scenario(
            CODE_GRANTS[i % 3], GRANT_FLOWS[i % 4], mis=mis("authorize", "answer", (op,), "é ?&=")
        )
        for i, op in enumerate(AUTHORIZE_OPS)
    ),
    Scenario(mis=mis("authorize", "answer", ("state-dup-before", "code-dup"), "")),
    Scenario(mis=mis("authorize", "status", 200)),
    Scenario(mis=mis("authorize", "status", 500)),
    *(
        Scenario(mis=mis("authorize", "redirect", 302, where, repeat=True))
        for where in AUTHORIZE_REDIRECTS
    ),
    Scenario(mis=mis("authorize", "redirect", 303, "relative")),
    Scenario("preregistered", mis=mis("authorize", "framing", "drop")),
    Scenario(mis=mis("authorize", "framing", "garbage")),
    Scenario(mis=mis("authorize", "framing", "hang-head")),
    # The MCP server's answer with a good token.
    *(
        Scenario(GRANTS[i % 6], FLOWS[i % 5], dpop=i % 3 == 0, mis=mis("resource", "answer", a))
        for i, a in enumerate(RESOURCE_ANSWERS)
    ),
    *(
        Scenario(GRANTS[i % 6], "step-up", mis=mis("resource", "answer", a, repeat=True))
        for i, a in enumerate(RESOURCE_ANSWERS)
    ),
    Scenario(dpop=True, mis=mis("resource", "answer", "nonce", repeat=True)),
    Scenario(reg_method="client_secret_post", mis=mis("resource", "answer", "401-moved")),
    Scenario(
        "dcr",
        "revoked",
        reg_method="client_secret_basic",
        mis=mis("resource", "answer", "401-moved", repeat=True),
    ),
    Scenario("preregistered", "stored", mis=mis("resource", "answer", "401-moved")),
    Scenario(mis=mis("resource", "challenge", ("\x01garbage",), repeat=True)),
    Scenario(flow="revoked", mis=mis("resource", "challenge", (), repeat=True)),
]


def with_examples(test: Callable[..., None]) -> Callable[..., None]:
    for scenario in EXAMPLES:
        test = example(scenario=scenario)(test)
    return test


@settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(scenario=scenarios())
@with_examples
def test_hostile_authorization(
    anyio_backend: str, caplog: pytest.LogCaptureFixture, scenario: Scenario
) -> None:
    caplog.clear()
    script = Script(scenario)
    outcome = anyio.run(run_script, script, anyio_backend, backend=anyio_backend)
    check_outcome(script, outcome)
    assert not mcpwire_errors(caplog)
