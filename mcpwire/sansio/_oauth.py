"""OAuth 2.1 for MCP clients, pure: challenges, discovery URLs, metadata, PKCE, tokens.

Theory of operation
-------------------
MCP authorization (``basic/authorization``, 2025-11-25) chains four documents,
each read here from text alone; the async driver in ``mcpwire._oauth`` does
the fetching in the order these functions give.

1. The resource server's ``401`` carries ``WWW-Authenticate: Bearer ...``
   (RFC 6750 §3). ``_challenge.parse_challenges`` reads the header by the
   grammar of RFC 9110 §11.6.1 (several challenges, auth-params whose values
   are tokens or quoted strings with backslash escapes); ``bearer_params`` picks the
   Bearer one (else a DPoP one, RFC 9449 §7.1). Its ``resource_metadata``
   (RFC 9728 §5.1) and ``scope`` guide what follows.
2. Protected resource metadata (RFC 9728 §3): at ``resource_metadata`` when
   given, else at ``/.well-known/oauth-protected-resource`` with the
   resource's path appended, then at the root (``prm_urls``). Its
   ``resource`` must name the server we talk to (RFC 9728 §3.3;
   ``check_resource``), or the document is refused: a server must not get a
   token minted for another.
3. Authorization server metadata (RFC 8414 §3, OpenID Connect Discovery 1.0
   §4): for an issuer with a path, the RFC 8414 URL with the path inserted
   after the well-known segment, then the OIDC one inserted the same way,
   then the OIDC one appended (``as_metadata_urls``, the order the spec
   lists). The ``issuer`` inside must equal the issuer the URL was built
   from, compared as strings (RFC 8414 §3.3; ``check_as_metadata``).
4. The token response (RFC 6749 §5.1), read by ``parse_token_response``.

Everything that refuses input raises ``AuthorizationError`` with what was
wrong and where; nothing else escapes these functions.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlencode, urlsplit, urlunsplit

from .._errors import AuthorizationError
from ._b64url import b64url_encode
from ._challenge import parse_challenges
from ._codec import CodecError, loads
from ._json import JSONObject

__all__ = (
    "TokenResponse",
    "access_token_hash",
    "as_metadata_urls",
    "bearer_params",
    "canonical_resource",
    "check_as_metadata",
    "check_iss",
    "check_tls",
    "check_resource",
    "fallback_endpoints",
    "form_body",
    "json_object",
    "normalize_htu",
    "origin_of",
    "parse_token_response",
    "pkce_pair",
    "prm_urls",
    "select_scopes",
    "string_list",
)

PRM_WELL_KNOWN = "/.well-known/oauth-protected-resource"
AS_WELL_KNOWN = "/.well-known/oauth-authorization-server"
OIDC_WELL_KNOWN = "/.well-known/openid-configuration"


def bearer_params(headers: Iterable[str]) -> dict[str, str]:
    """The parameters of the Bearer challenge among ``WWW-Authenticate`` values,
    else of the DPoP one (RFC 9449 §7.1: the same parameters); empty when there
    is neither. A malformed header raises ``AuthorizationError``."""
    dpop: dict[str, str] = {}
    for header in headers:
        for challenge in parse_challenges(header):
            if challenge.scheme == "bearer":
                return dict(challenge.params)
            if challenge.scheme == "dpop" and not dpop:
                dpop = dict(challenge.params)
    return dpop


# -- URLs ----------------------------------------------------------------------------


def _split(url: str) -> tuple[str, str, str]:
    """(scheme, authority, path) of an absolute http(s) URL, lowercased where
    RFC 3986 §6.2.2.1 says case does not matter."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise AuthorizationError(f"not a valid URL: {url!r} ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise AuthorizationError(f"not an absolute http(s) URL: {url!r}")
    host = parts.hostname.lower()
    if ":" in host:
        host = f"[{host}]"
    default = 443 if scheme == "https" else 80
    authority = host if port in (None, default) else f"{host}:{port}"
    return scheme, authority, parts.path


def origin_of(url: str) -> tuple[str, str]:
    """(scheme, authority) of an absolute http(s) URL, normalized for comparison."""
    scheme, authority, _ = _split(url)
    return scheme, authority


def canonical_resource(url: str) -> str:
    """The canonical URI of an MCP server (RFC 8707 §2, the spec's "Canonical
    Server URI"): lowercase scheme and host, no default port, no query or
    fragment, no trailing slash unless the path is just ``/``."""
    scheme, authority, path = _split(url)
    if path.endswith("/") and path != "/":
        path = path.rstrip("/")
    return urlunsplit((scheme, authority, path, "", ""))


_PERCENT = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _percent(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def normalize_htu(url: str) -> str | None:
    """``url`` as DPoP ``htu`` values are compared (RFC 9449 §4.3 step 9, RFC 3986
    §6.2.2 and §6.2.3): the normalized scheme and authority of ``_split``, ``/``
    for an empty path, percent-encoding in upper case and unreserved characters
    decoded; query, fragment and userinfo dropped. ``None``: not an absolute
    http(s) URL."""
    try:
        scheme, authority, path = _split(url)
    except AuthorizationError:
        return None
    return urlunsplit((scheme, authority, _PERCENT.sub(_percent, path) or "/", "", ""))


def check_resource(resource: object, server_url: str) -> str:
    """The PRM ``resource`` after checking it names ``server_url`` (RFC 9728 §3.3):
    the same origin, and the server's path at or below the resource's path.

    Raises:
        AuthorizationError: it names another server.
    """
    if not isinstance(resource, str):
        raise AuthorizationError("protected resource metadata has no 'resource' string")
    try:
        got = canonical_resource(resource)
    except AuthorizationError as exc:
        raise AuthorizationError(f"protected resource metadata 'resource': {exc}") from None
    want = canonical_resource(server_url)
    g_scheme, g_auth, g_path = _split(got)
    w_scheme, w_auth, w_path = _split(want)
    g_path = g_path.rstrip("/")
    inside = w_path.rstrip("/") == g_path or w_path.startswith(g_path + "/")
    if (g_scheme, g_auth) != (w_scheme, w_auth) or not inside:
        raise AuthorizationError(
            f"protected resource metadata is for {resource!r}, not for {server_url!r}"
        )
    return got


def prm_urls(server_url: str, resource_metadata: str | None) -> list[str]:
    """Where to look for protected resource metadata, in order (RFC 9728 §3.1, §5.1)."""
    urls: list[str] = []
    if resource_metadata:
        urls.append(resource_metadata)
    scheme, authority, path = _split(server_url)
    path = path.rstrip("/")
    if path:
        urls.append(urlunsplit((scheme, authority, PRM_WELL_KNOWN + path, "", "")))
    urls.append(urlunsplit((scheme, authority, PRM_WELL_KNOWN, "", "")))
    return urls


def as_metadata_urls(issuer: str) -> list[str]:
    """Where to look for an authorization server's metadata, in the spec's order."""
    scheme, authority, path = _split(issuer)
    path = path.rstrip("/")
    if not path:
        return [
            urlunsplit((scheme, authority, AS_WELL_KNOWN, "", "")),
            urlunsplit((scheme, authority, OIDC_WELL_KNOWN, "", "")),
        ]
    return [
        urlunsplit((scheme, authority, AS_WELL_KNOWN + path, "", "")),
        urlunsplit((scheme, authority, OIDC_WELL_KNOWN + path, "", "")),
        urlunsplit((scheme, authority, path + OIDC_WELL_KNOWN, "", "")),
    ]


def fallback_endpoints(server_url: str) -> dict[str, str]:
    """2025-03-26 servers without metadata: the default endpoints at the MCP
    server's origin (that revision's "Fallbacks for Servers without Metadata
    Discovery"), in the shape of RFC 8414 metadata."""
    scheme, authority, _ = _split(server_url)
    base = urlunsplit((scheme, authority, "", "", ""))
    return {
        "issuer": base,
        "authorization_endpoint": base + "/authorize",
        "token_endpoint": base + "/token",
        "registration_endpoint": base + "/register",
    }


# -- documents -----------------------------------------------------------------------


def json_object(body: bytes, what: str) -> JSONObject:
    """A JSON object body, or ``AuthorizationError`` naming ``what`` it should be."""
    try:
        value = loads(body)
    except CodecError as exc:
        raise AuthorizationError(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise AuthorizationError(f"{what} is not a JSON object")
    return value


def string_list(doc: Mapping[str, object], key: str) -> list[str] | None:
    """``doc[key]`` as a list of strings; ``None`` when absent, an error when malformed."""
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise AuthorizationError(f"metadata {key!r} is not a list of strings")
    return [v for v in value if isinstance(v, str)]


def check_as_metadata(doc: JSONObject, issuer: str, *, require_pkce: bool = False) -> JSONObject:
    """Authorization server metadata after the checks that protect the flow.

    * The ``issuer`` equals the one its URL was built from, as strings
      (RFC 8414 §3.3): otherwise another server could pose as this one.
    * The endpoints are https URLs (OAuth 2.1 §1.5), or http on a loopback
      host (a server on the same machine, as in tests).
    * PKCE S256 is offered (RFC 7636; the spec's "Authorization Code
      Protection"): a list without S256 is refused, and with
      ``require_pkce`` so is a server that lists no methods at all, which the
      spec says means it does not support PKCE.
    """
    if doc.get("issuer") != issuer:
        raise AuthorizationError(
            f"authorization server metadata names issuer {doc.get('issuer')!r}, "
            f"but was fetched for {issuer!r}"
        )
    for key in ("authorization_endpoint", "token_endpoint", "registration_endpoint"):
        value = doc.get(key)
        if value is None and key == "registration_endpoint":
            continue
        if not isinstance(value, str):
            raise AuthorizationError(f"authorization server metadata has no {key!r} string")
        check_tls(value, key)
    methods = string_list(doc, "code_challenge_methods_supported")
    if (methods is None and require_pkce) or (methods is not None and "S256" not in methods):
        raise AuthorizationError("the authorization server does not support PKCE S256")
    return doc


def check_tls(url: str, what: str) -> None:
    """Refuse an endpoint that is neither https nor http on a loopback host."""
    try:
        scheme, _, _ = _split(url)
    except AuthorizationError as exc:
        raise AuthorizationError(f"{what}: {exc}") from None
    if scheme != "https" and urlsplit(url).hostname not in ("localhost", "127.0.0.1", "::1"):
        raise AuthorizationError(f"{what} {url!r} is not an https URL")


def check_iss(params: Mapping[str, str], issuer: str, metadata: Mapping[str, object]) -> None:
    """RFC 9207 §2.4: an ``iss`` in the authorization response must equal the
    issuer, compared as strings; when the server advertises the parameter
    (``authorization_response_iss_parameter_supported``), it must be there."""
    iss = params.get("iss")
    if iss is None:
        if metadata.get("authorization_response_iss_parameter_supported") is True:
            raise AuthorizationError(
                "the authorization response has no 'iss', which its server advertises (RFC 9207)"
            )
        return
    if iss != issuer:
        raise AuthorizationError(
            f"the authorization response came from issuer {iss!r}, not {issuer!r} (RFC 9207)"
        )


def select_scopes(
    challenged: str | None,
    resource_scopes: Sequence[str] | None,
    server_scopes: Sequence[str] | None,
    previous: Sequence[str] = (),
    *,
    offline: bool = False,
) -> list[str]:
    """The scopes to ask for (the spec's "Scope Selection Strategy").

    The challenge's ``scope`` first, else the resource's ``scopes_supported``,
    else none (the parameter is then omitted). Scopes asked for before are
    kept on a step-up, so that the new token does not lose them. With
    ``offline``, ``offline_access`` is added when, and only when, the
    authorization server lists it (SEP-2207): asking for a scope the server
    does not know would make the request fail.
    """
    if challenged is not None and challenged.split():
        scopes = challenged.split()
    elif resource_scopes:
        scopes = list(resource_scopes)
    else:
        scopes = []
    out = list(dict.fromkeys([*previous, *scopes]))
    if offline and server_scopes and "offline_access" in server_scopes:
        out = list(dict.fromkeys([*out, "offline_access"]))
    return out


def access_token_hash(token: str) -> str:
    """A DPoP proof's ``ath``: base64url SHA-256 of the access token's ASCII
    (RFC 9449 §4.2); the proof's maker and its checker both use this one."""
    return b64url_encode(hashlib.sha256(token.encode("ascii", "replace")).digest())


def pkce_pair() -> tuple[str, str]:
    """A PKCE verifier (43-128 unreserved characters, RFC 7636 §4.1) and its
    S256 challenge (§4.2)."""
    verifier = secrets.token_urlsafe(48)
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return verifier, b64url_encode(digest)


def form_body(fields: Mapping[str, str | None]) -> bytes:
    """``application/x-www-form-urlencoded`` (RFC 6749 Appendix B); ``None`` values left out."""
    return urlencode({k: v for k, v in fields.items() if v is not None}).encode("ascii")


@dataclass(frozen=True)
class TokenResponse:
    """A successful token response (RFC 6749 §5.1)."""

    access_token: str
    token_type: str = "Bearer"
    expires_in: int | None = None
    refresh_token: str | None = None
    scope: str | None = None


_VSCHARS = re.compile(r"[\x20-\x7e]+")


def parse_token_response(status: int, body: bytes, *, dpop: bool = False) -> TokenResponse:
    """Read a token endpoint's answer; an error response (RFC 6749 §5.2) or a
    malformed success raises ``AuthorizationError`` with the server's words.

    ``token_type`` must be ``Bearer``, or ``DPoP`` when the request carried a
    DPoP proof (``dpop``, RFC 9449 §5); it is returned in that spelling."""
    try:
        doc = json_object(body, "the token response")
    except AuthorizationError:
        if status == 200:
            raise
        doc = {}
    if status != 200 or "error" in doc:
        error = doc.get("error", f"HTTP {status}")
        described = doc.get("error_description")
        text = f"{error}: {described}" if isinstance(described, str) else str(error)
        raise AuthorizationError(f"the token endpoint refused: {text}")
    token = doc.get("access_token")
    kind = doc.get("token_type")
    if not isinstance(token, str) or not token:
        raise AuthorizationError("the token response has no access_token")
    kinds = ("bearer", "dpop") if dpop else ("bearer",)
    if not isinstance(kind, str) or kind.lower() not in kinds:
        allowed = "Bearer or DPoP" if dpop else "only Bearer"
        raise AuthorizationError(f"unsupported token_type {kind!r} ({allowed})")
    # RFC 6749 A.12, A.17: tokens are VSCHARs. Anything else could not travel in
    # a header (CR, LF, NUL, non-ASCII), so the answer is refused, not stored;
    # the token itself is not quoted in the error.
    if not _VSCHARS.fullmatch(token):
        raise AuthorizationError("the token response's access_token is not printable ASCII")
    expires = doc.get("expires_in")
    if expires is not None and (type(expires) is not int or expires < 0):
        raise AuthorizationError(f"expires_in is not a non-negative integer: {expires!r}")
    refresh = doc.get("refresh_token")
    if isinstance(refresh, str) and not _VSCHARS.fullmatch(refresh):
        raise AuthorizationError("the token response's refresh_token is not printable ASCII")
    scope = doc.get("scope")
    return TokenResponse(
        token,
        "DPoP" if kind.lower() == "dpop" else "Bearer",
        expires,
        refresh if isinstance(refresh, str) and refresh else None,
        scope if isinstance(scope, str) else None,
    )
