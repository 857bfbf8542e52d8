"""The HTTP server as an OAuth 2.1 protected resource (MCP ``basic/authorization``).

Theory of operation
-------------------
``ResourceServerAuth`` is given to ``serve_http`` / ``asgi_app`` /
``Server.run("http")`` as ``auth=``. The server's gate runs its checks on
the path, ``Host`` and ``Origin`` first (DNS-rebinding protection does not
depend on credentials), then hands every request to ``admit``:

* ``GET /.well-known/oauth-protected-resource`` plus the endpoint's path
  (RFC 9728 section 3.1, path insertion), and the root form, answer the
  Protected Resource Metadata document: ``resource``,
  ``authorization_servers``, ``scopes_supported``,
  ``bearer_methods_supported`` (``header`` only), and the rest of what was
  configured (with DPoP, ``dpop_signing_alg_values_supported`` and
  ``dpop_bound_access_tokens_required``, RFC 9728 section 2). Other
  methods get 405.
* every other request must carry an access token (authorization.mdx,
  "Token Requirements": on every request, both eras, POST, GET and DELETE,
  and the deprecated ``/sse`` and ``/messages``), as ``dpop=`` allows:
  ``Authorization: Bearer <token>`` (``"off"``), ``Authorization: DPoP
  <token>`` with a ``DPoP`` proof (``"required"``, RFC 9449 section 7), or
  either (``"allowed"``, the default). Without one (a Bearer token where
  DPoP is required counts as none): 401 with one challenge per scheme
  taken, Bearer first, in one ``WWW-Authenticate`` field, each with
  ``resource_metadata`` and the required ``scope`` (RFC 9728 section 5.1,
  RFC 6750 section 3), DPoP's with ``algs`` (RFC 9449 section 7.1). A token
  the verifier refuses, that has expired, or whose audience names other
  resources only (RFC 8707; no token passthrough): 401 ``invalid_token``;
  one without a required scope: 403 ``insufficient_scope`` and the scopes
  needed; both under the scheme the request used. A token in the query
  string is refused with 400 ``invalid_request`` (authorization.mdx:
  "Access tokens MUST NOT be included in the URI query string"), as is a
  request with two ``Authorization`` fields.
* DPoP (the proof is ``_auth_dpop``'s to check): a token whose verified
  claims carry ``cnf.jkt`` is bound to a key, and is refused as Bearer
  whatever ``dpop`` says (RFC 9449 section 7.2: without a proof the binding
  would be worth nothing); under the DPoP scheme a token needs ``cnf.jkt``
  and a proof that passes RFC 9449 section 4.3, else 401 ``DPoP
  error="invalid_dpop_proof"`` (``invalid_token`` for the token or its
  binding). With ``dpop_nonce=True`` a proof must carry a nonce this
  object issued (section 9), else 401 ``use_dpop_nonce``; every 401 with a
  DPoP challenge then carries a fresh ``DPoP-Nonce``, and so does the answer
  to a proof whose nonce is past half its lifetime. A proof's ``htu`` is
  compared with the resource identifier's scheme and authority, and the
  request's path under the identifier's mount (``_auth_dpop.request_url``).
* a legacy session (streamable HTTP ``Mcp-Session-Id``, or the HTTP+SSE
  ``session_id``) belongs to the client and subject whose token started it
  (security_best_practices.mdx, "Session Hijacking": bind the session to
  the user). A request naming it with a token of anyone else gets the same
  404 as an unknown session: for that caller the session does not exist,
  and the answer does not tell whether it exists for somebody else.

What an admitted request carried is put in a context variable
(``_auth_tokens.AuthCell``) for the handlers: ``Context.auth``.

The ``resource`` identifier (the canonical URL of the MCP endpoint) is what
the metadata names and what token audiences are checked against. Served by
mcpwire's own server (plain HTTP), it is ``http://<Host><path>`` by default
when the ``Host`` header is checked against an allow-list (the default on a
loopback bind). Otherwise there is no trustworthy default: on a public bind
a client picks the ``Host`` it sends, and under ASGI the scheme and name
the world uses are the host's and its proxy's business. ``resource=`` must
then be given: ``asgi_app`` insists, and ``serve_http`` answers every
request with a 500 that says so. The deprecated HTTP+SSE endpoints are a
resource of their own, the same URL with ``sse_path`` for ``path``
(clients are given the ``/sse`` URL and ask for tokens for it), with its
metadata at its own well-known URI; a token issued for either identifier
is good on both, since both name this server.
"""

from __future__ import annotations

import contextvars
import logging
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Literal

import orjson

from ._auth_dpop import (
    DEFAULT_NONCE_LIFETIME,
    DEFAULT_WINDOW,
    DPoPChecker,
    DPoPError,
    bound_key,
    proof_values,
    request_url,
    signatures_available,
)
from ._auth_tokens import AccessToken, AuthCell, TokenVerifier, current_auth, enter_cell
from ._errors import AuthorizationError
from ._http_wire import BodyTooLarge, HTTPExchange, RequestHead
from .sansio import _oauth as o
from .sansio._challenge import BearerError, access_token, resource_challenge
from .sansio._http import MCP_SESSION_ID, NAME_BEARING_METHODS
from .sansio._json import JSONValue
from .sansio._messages import Batch, ErrorCode, Incoming, Request

if TYPE_CHECKING:
    from ._http_server import HTTPServer

__all__ = ("WELL_KNOWN", "ResourceServerAuth", "canonical_resource", "metadata_url")

logger = logging.getLogger("mcpwire.http")

#: RFC 9728 section 3: the well-known URI suffix of protected resource metadata.
WELL_KNOWN = o.PRM_WELL_KNOWN

_CLOSE = ("connection", "close")

#: The resource identifier of the request being served (set by ``admit``).
_request_resource: contextvars.ContextVar[str] = contextvars.ContextVar(
    "mcpwire_auth_resource", default=""
)
#: The scheme its token came under, lowercased (set by ``admit``).
_request_scheme: contextvars.ContextVar[str] = contextvars.ContextVar(
    "mcpwire_auth_scheme", default="bearer"
)
_SCHEME_NAMES = {"bearer": "Bearer", "dpop": "DPoP"}


def canonical_resource(url: str) -> str:
    """``url`` as compared with token audiences, the client's canonical form
    (RFC 8707 section 2, authorization.mdx "Canonical Server URI"); an audience
    that is not an http(s) URL is compared as it is."""
    try:
        return o.canonical_resource(url.strip())
    except AuthorizationError:
        return url.strip()


def metadata_url(resource: str) -> str:
    """Where the metadata of ``resource`` is served: the well-known URI with its
    path inserted, the first place a client looks (RFC 9728 section 3.1)."""
    return o.prm_urls(resource, None)[0]


def _absolute(url: str, what: str) -> str:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
        raise ValueError(f"{what} must be an absolute http(s) URL without a fragment: {url!r}")
    return url


class ResourceServerAuth:
    """OAuth 2.1 protection of an MCP HTTP endpoint (see the module docstring).

    Args:
        verifier: checks each access token (``StaticTokenVerifier``,
            ``IntrospectionVerifier``, or your own ``TokenVerifier``).
        authorization_servers: issuer URLs of the authorization servers the
            client may get tokens from (at least one).
        scopes_supported: scopes listed in the metadata document.
        required_scopes: scopes every request's token must hold; named in
            the 401 challenge and, when missing, in the 403.
        resource: the canonical URL of the endpoint (default: see the module
            docstring); tokens must be issued for it.
        resource_name, resource_documentation: for the metadata document.
        operation_scopes: further scopes some operations need, by method
            (``"tools/list"``) or by method and name (``"tools/call:deploy"``,
            ``"prompts/get:NAME"``, ``"resources/read:URI"``); a token without
            them gets 403 ``insufficient_scope`` naming the scopes it holds and
            those it lacks, so that the client can step up (authorization.mdx,
            "Step-Up Authorization Flow").
        metadata: further metadata fields (RFC 9728 section 2), as given.
        check_audience: refuse tokens whose audience names other resources
            only (RFC 8707); a token with no audience is the verifier's word
            (``IntrospectionVerifier`` refuses those by default).
        dpop: ``"allowed"`` (Bearer and DPoP-bound tokens), ``"required"``
            (DPoP only) or ``"off"`` (Bearer only); see the module docstring.
        dpop_algorithms: the proof algorithms accepted (default: all of
            ``_jws.ALGORITHMS``, RS/PS/ES 256-512 and EdDSA).
        dpop_window: how far a proof's ``iat`` may lie from the server's
            clock, either way (default 60 seconds).
        dpop_nonce: require server-provided nonces (RFC 9449 section 9;
            default off), stateless and good for ``dpop_nonce_lifetime``
            seconds (default 300; see ``_auth_dpop``); ``dpop_nonce_key`` (16
            bytes or more) is their HMAC key, the same in every process that
            serves this resource (default: random, this process only).
    """

    def __init__(
        self,
        verifier: TokenVerifier,
        *,
        authorization_servers: Sequence[str],
        scopes_supported: Sequence[str] = (),
        required_scopes: Sequence[str] = (),
        resource: str | None = None,
        resource_name: str | None = None,
        resource_documentation: str | None = None,
        operation_scopes: Mapping[str, Sequence[str]] | None = None,
        metadata: Mapping[str, JSONValue] | None = None,
        check_audience: bool = True,
        dpop: Literal["allowed", "required", "off"] = "allowed",
        dpop_algorithms: Sequence[str] | None = None,
        dpop_window: float = DEFAULT_WINDOW,
        dpop_nonce: bool = False,
        dpop_nonce_lifetime: float = DEFAULT_NONCE_LIFETIME,
        dpop_nonce_key: bytes | None = None,
    ) -> None:
        operation_scopes = dict(operation_scopes or {})
        if isinstance(authorization_servers, str) or not authorization_servers:
            raise ValueError("authorization_servers must list at least one issuer URL")
        extra = [scope for scopes in operation_scopes.values() for scope in scopes]
        for scope in (*scopes_supported, *required_scopes, *extra):
            if not scope or any(c in scope for c in ' "\\') or not scope.isprintable():
                raise ValueError(f"invalid scope {scope!r}")
        self.verifier = verifier
        self.authorization_servers = tuple(
            _absolute(url, "an authorization server") for url in authorization_servers
        )
        self.scopes_supported = tuple(scopes_supported)
        self.required_scopes = tuple(required_scopes)
        self.operation_scopes = {key: tuple(scopes) for key, scopes in operation_scopes.items()}
        self.resource = _absolute(resource, "resource") if resource is not None else None
        self.resource_name = resource_name
        self.resource_documentation = resource_documentation
        self.metadata = dict(metadata or {})
        self.check_audience = check_audience
        if dpop not in ("allowed", "required", "off"):
            raise ValueError(f"dpop must be 'allowed', 'required' or 'off', not {dpop!r}")
        if dpop != "off" and not signatures_available():
            # The default must not break a server without the optional extra:
            # "allowed" becomes Bearer only; "required" cannot be honoured.
            if dpop == "required":
                from ._jose import CryptographyMissing

                raise CryptographyMissing("dpop='required' needs 'cryptography': mcpwire[jwt]")
            logger.info("auth: DPoP is off: checking proofs needs the 'cryptography' package")
            dpop = "off"
        self.dpop = dpop
        #: The proof checker (``None`` with ``dpop="off"``).
        self.dpop_checker: DPoPChecker | None = None
        if dpop != "off":
            self.dpop_checker = DPoPChecker(
                algorithms=dpop_algorithms,
                window=dpop_window,
                nonce=dpop_nonce,
                nonce_lifetime=dpop_nonce_lifetime,
                nonce_key=dpop_nonce_key,
            )
        #: The schemes a token may come under, the first one's challenge for errors.
        self.schemes = {"allowed": ("bearer", "dpop"), "required": ("dpop",)}.get(dpop, ("bearer",))

    # -- routing ---------------------------------------------------------------------------

    def serves(self, path: str) -> bool:
        """Whether ``path`` is one of the metadata document's (any path insertion)."""
        return path == WELL_KNOWN or path.startswith(WELL_KNOWN + "/")

    def identifiers(self, app: HTTPServer, head: RequestHead) -> tuple[str, str] | None:
        """This server's resource identifiers: the endpoint's and the HTTP+SSE
        transport's (the same URL with ``sse_path`` for ``path``); ``None``: unknown."""
        opts = app.options
        main = self.resource
        if main is None:
            host = head.headers.get("host")
            if app.port is None or app.allowed_hosts is None or not host:
                return None  # not mcpwire's own server (ASGI), or a Host nobody checked
            main = f"http://{host.lower()}{opts.path}"
        parts = urllib.parse.urlsplit(main)
        path = parts.path.rstrip("/")
        if not opts.legacy_sse or not path.endswith(opts.path.rstrip("/")):
            return main, main
        sse_path = path[: len(path) - len(opts.path.rstrip("/"))] + opts.sse_path
        return main, urllib.parse.urlunsplit((parts.scheme, parts.netloc, sse_path, "", ""))

    def resource_for(self, app: HTTPServer, head: RequestHead) -> str | None:
        """The resource identifier a request is checked against: the HTTP+SSE
        transport's for its paths and its metadata, else the endpoint's."""
        found = self.identifiers(app, head)
        if found is None:
            return None
        main, sse = found
        opts = app.options
        if opts.legacy_sse and head.path in (
            opts.sse_path,
            opts.message_path,
            WELL_KNOWN + opts.sse_path,
            WELL_KNOWN + urllib.parse.urlsplit(sse).path,
        ):
            return sse
        return main

    def document(self, resource: str) -> dict[str, JSONValue]:
        """The Protected Resource Metadata document (RFC 9728 section 2)."""
        doc: dict[str, JSONValue] = {
            "resource": resource,
            "authorization_servers": list(self.authorization_servers),
            "bearer_methods_supported": ["header"],
        }
        if self.scopes_supported:
            doc["scopes_supported"] = list(self.scopes_supported)
        if self.dpop_checker is not None:
            algs: list[JSONValue] = [*sorted(self.dpop_checker.algorithms)]
            doc["dpop_signing_alg_values_supported"] = algs
            if self.dpop == "required":
                doc["dpop_bound_access_tokens_required"] = True
        if self.resource_name is not None:
            doc["resource_name"] = self.resource_name
        if self.resource_documentation is not None:
            doc["resource_documentation"] = self.resource_documentation
        doc.update(self.metadata)
        return doc

    # -- the gate --------------------------------------------------------------------------

    async def admit(self, app: HTTPServer, http: HTTPExchange, head: RequestHead) -> bool:
        """Let a request through (True), or answer it here (False)."""
        enter_cell(None)
        found = self.identifiers(app, head)
        resource = self.resource_for(app, head)
        if found is None or resource is None:
            logger.error("auth: no resource URL; give ResourceServerAuth(resource=...)")
            await http.respond_text(
                500,
                "Internal Server Error: the protected resource has no canonical URL "
                "(configure resource= or allowed_hosts=)",
                [_CLOSE],
            )
            return False
        if self.serves(head.path):
            await self._metadata(app, http, head, resource)
            return False
        if _query_token(head.query):
            await self._challenge(
                http, 400, resource, "invalid_request", "access tokens are not accepted in the URI"
            )
            return False
        if "authorization" in head.duplicated:
            await self._challenge(
                http, 400, resource, "invalid_request", "more than one Authorization field"
            )
            return False
        try:
            # A Bearer token is read where DPoP is required too, to be refused
            # below like no credentials; a DPoP one only where DPoP is on.
            found_token = access_token(
                head.headers.get("authorization"),
                ("bearer", "dpop") if self.dpop_checker is not None else ("bearer",),
            )
        except BearerError as exc:
            if exc.scheme not in self.schemes:  # Bearer where DPoP is required: see below
                await self._challenge(http, 401, resource, scheme=None)
                return False
            await self._challenge(http, 401, resource, "invalid_token", str(exc), scheme=exc.scheme)
            return False
        if found_token is None or found_token[0] not in self.schemes:
            # No credentials this resource takes: no error code (RFC 6750 section 3.1).
            await self._challenge(http, 401, resource, scheme=None)
            return False
        scheme, raw = found_token
        _request_scheme.set(scheme)
        try:
            token = await self.verifier.verify(raw)
        except Exception as exc:
            logger.warning("auth: the token verifier failed: %s", exc)
            await http.respond_text(
                503,
                "Service Unavailable: the access token cannot be checked right now",
                [("retry-after", "5"), _CLOSE],
            )
            return False
        problem = self._problem(token, found)
        if problem is not None:
            await self._challenge(http, 401, resource, "invalid_token", problem, scheme=scheme)
            return False
        assert token is not None
        if scheme == "dpop":
            assert self.dpop_checker is not None
            renewed: list[str] = []
            try:
                self.dpop_checker.check(
                    method=head.method,
                    url=request_url(found[0], app.options.path, head.path),
                    proofs=proof_values(head.headers.get("dpop"), "dpop" in head.duplicated),
                    access_token=raw,
                    token=token,
                    renew=renewed,
                )
            except DPoPError as exc:
                await self._challenge(http, 401, resource, exc.error, str(exc), scheme=scheme)
                return False
            http.extra_headers.extend(("dpop-nonce", nonce) for nonce in renewed)
        elif bound_key(token) is not None:
            why = "the access token is bound to a DPoP key: present it with the DPoP scheme"
            await self._challenge(http, 401, resource, "invalid_token", why, scheme=scheme)
            return False
        missing = [s for s in self.required_scopes if s not in token.scopes]
        if missing:
            await self._challenge(
                http,
                403,
                resource,
                "insufficient_scope",
                "the access token lacks " + " ".join(missing),
                tuple(dict.fromkeys((*self.required_scopes, *token.scopes))),
                scheme=scheme,
            )
            return False
        return await self._bind(app, http, head, token, resource)

    def scopes_for(self, request: Request) -> tuple[str, ...]:
        """The scopes ``request`` needs beyond ``required_scopes`` (``operation_scopes``)."""
        if not self.operation_scopes:
            return ()
        needed = self.operation_scopes.get(request.method, ())
        member = NAME_BEARING_METHODS.get(request.method)
        name = request.params.get(member) if member is not None and request.params else None
        if isinstance(name, str):
            needed = (*needed, *self.operation_scopes.get(f"{request.method}:{name}", ()))
        return needed

    async def permit(self, http: HTTPExchange, item: Incoming) -> bool:
        """Let a parsed message through (True), or answer 403 for missing scopes."""
        token = current_auth()
        if token is None or not self.operation_scopes:
            return True
        requests = [item] if type(item) is Request else []
        if type(item) is Batch:
            requests = [m for m in item.items if type(m) is Request]
        needed: list[str] = []
        for request in requests:
            needed.extend(self.scopes_for(request))
        missing = [scope for scope in dict.fromkeys(needed) if scope not in token.scopes]
        if not missing:
            return True
        resource = _request_resource.get()
        # Both what the token holds and what it lacks, so that re-authorizing for
        # these scopes loses nothing already granted (authorization.mdx, "Runtime
        # Insufficient Scope Errors", recommended approach).
        scopes = tuple(dict.fromkeys((*self.required_scopes, *token.scopes, *missing)))
        await self._challenge(
            http,
            403,
            resource,
            "insufficient_scope",
            "this operation needs " + " ".join(missing),
            scopes,
            scheme=_request_scheme.get(),
        )
        return False

    def _problem(self, token: AccessToken | None, resources: tuple[str, str]) -> str | None:
        if token is None:
            return "the access token is invalid, revoked or expired"
        if token.expires_at is not None and token.expires_at <= time.time():
            return "the access token has expired"
        if self.check_audience and token.audience:
            mine = {canonical_resource(resource) for resource in resources}
            if not any(canonical_resource(aud) in mine for aud in token.audience):
                return "the access token was not issued for this resource"
        return None

    async def _bind(
        self,
        app: HTTPServer,
        http: HTTPExchange,
        head: RequestHead,
        token: AccessToken,
        resource: str,
    ) -> bool:
        """Check a request on a legacy session against the session's owner."""
        opts = app.options
        cell: AuthCell | None = None
        sid = head.headers.get(MCP_SESSION_ID)
        sse = False
        if sid is not None and head.path == opts.path:
            session = app.legacy.table.get(sid)
            cell = session.auth if session is not None else None
        elif opts.legacy_sse and head.path == opts.message_path:
            sse = True
            values = _query_values(head.query, "session_id")
            transport = app.sse.connections.get(values[0]) if len(values) == 1 else None
            cell = transport.auth if transport is not None else None
        if cell is None:
            cell = AuthCell(token)
        elif cell.owner != token.owner:
            logger.warning("auth: refused a request on a session of another client")
            if sse:
                await http.respond_text(404, "Not Found: no such session", [_CLOSE])
            else:
                await app.json_error(
                    http, 404, None, ErrorCode.INVALID_REQUEST, "Session not found", None, [_CLOSE]
                )
            return False
        else:
            cell.token = token
        enter_cell(cell)
        _request_resource.set(resource)
        return True

    async def _metadata(
        self, app: HTTPServer, http: HTTPExchange, head: RequestHead, resource: str
    ) -> None:
        opts = app.options
        allowed = {
            WELL_KNOWN,
            WELL_KNOWN + urllib.parse.urlsplit(resource).path.rstrip("/"),
            WELL_KNOWN + opts.path.rstrip("/"),
        }
        if opts.legacy_sse:
            allowed.add(WELL_KNOWN + opts.sse_path)
        if head.path not in allowed:
            await http.respond_text(404, "Not Found", [_CLOSE])
            return
        if head.method != "GET":
            await http.respond_text(405, "Method Not Allowed", [("allow", "GET"), _CLOSE])
            return
        try:
            await http.read_body(4096)
        except BodyTooLarge:
            await http.respond_text(413, "Content Too Large", [_CLOSE])
            return
        headers = [
            ("content-type", "application/json"),
            ("cache-control", "max-age=300"),
            ("access-control-allow-origin", "*"),
        ]
        await http.respond(200, headers, orjson.dumps(self.document(resource)))

    async def _challenge(
        self,
        http: HTTPExchange,
        status: int,
        resource: str,
        error: str | None = None,
        description: str | None = None,
        scopes: tuple[str, ...] | None = None,
        *,
        scheme: str | None = "",
    ) -> None:
        """Answer with a challenge: under ``scheme`` (lowercased; ``""``: the first
        scheme taken), or ``None``: one per scheme taken, without an error."""
        params = [("resource_metadata", metadata_url(resource))]
        scopes = self.required_scopes if scopes is None else scopes
        if scopes and error != "invalid_request":
            params.append(("scope", " ".join(scopes)))
        if error is not None:
            params.append(("error", error))
            if description is not None:
                params.append(("error_description", description))
        schemes = self.schemes if scheme is None else (scheme or self.schemes[0],)
        challenges = []
        for name in schemes:
            extra = []
            if name == "dpop" and self.dpop_checker is not None:
                extra.append(("algs", self.dpop_checker.algs))
            challenges.append(resource_challenge(_SCHEME_NAMES[name], [*extra, *params]))
        body: dict[str, str] = {"error": error or "unauthorized"}
        if description is not None:
            body["error_description"] = description
        headers = [
            ("content-type", "application/json"),
            # One field, Bearer first: RFC 9110 section 11.6.1 allows a list, and
            # clients that read one field (or join several) still see every challenge.
            ("www-authenticate", ", ".join(challenges)),
            _CLOSE,
        ]
        checker = self.dpop_checker
        if status == 401 and "dpop" in schemes and checker is not None and checker.nonces:
            headers.append(("dpop-nonce", checker.nonce()))
        await http.respond(status, headers, orjson.dumps(body))


def _query_values(query: str, name: str) -> list[str]:
    """The values of parameter ``name`` in a query string (the head bounds its size)."""
    values = []
    for part in query.split("&"):
        key, _, value = part.partition("=")
        if urllib.parse.unquote_plus(key) == name:
            values.append(urllib.parse.unquote_plus(value))
    return values


def _query_token(query: str) -> bool:
    """Whether a query string carries an ``access_token`` parameter (RFC 6750 section 2.3)."""
    if not query or ("token" not in query.lower() and "%" not in query):
        return False
    return bool(_query_values(query, "access_token"))
