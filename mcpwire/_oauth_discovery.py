"""Discovery for the OAuth client: from an MCP server's URL to its authorization server.

``discover`` follows the spec's order (``basic/authorization``, 2025-11-25):
protected resource metadata (RFC 9728) at the URL the challenge named, else at
the well-known URIs, its ``resource`` checked against the server; then the
metadata of its first authorization server (RFC 8414, OpenID discovery), its
``issuer`` checked. A server with no resource metadata is a 2025-03-26 one: its
origin is the authorization server, with metadata at the root or else the
default endpoints. The URL order and every check are the sans-IO core's
(``sansio._oauth``); this module only fetches.

``exchange`` is every request made to an authorization server, by the client
and by the resource server's verifiers: bounded in time (``timeout``) and in
size (``MAX_DOCUMENT_SIZE`` unless less is asked for), its failures raised as
``AuthorizationError``.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

from ._errors import AuthorizationError
from ._http_client_conn import HTTPResponse
from ._http_client_sock import HTTPError
from .sansio import _oauth as o
from .sansio._json import JSONObject

__all__ = ("MAX_DOCUMENT_SIZE", "Fetch", "Server", "discover", "exchange", "get_json")

logger = logging.getLogger("mcpwire.oauth")

#: The largest metadata, registration or token body read.
MAX_DOCUMENT_SIZE = 1024 * 1024

#: An HTTP exchange without the bearer token: (method, url, headers, body) -> response.
Fetch = Callable[[str, str, list[tuple[str, str]], "bytes | None"], Awaitable[HTTPResponse]]


@dataclass
class Server:
    """What discovery found for one resource."""

    resource: str
    issuer: str
    metadata: JSONObject
    resource_scopes: list[str] | None


async def exchange(
    fetch: Fetch,
    method: str,
    url: str,
    headers: list[tuple[str, str]],
    body: bytes | None,
    timeout: float,
    *,
    limit: int = MAX_DOCUMENT_SIZE,
) -> tuple[int, list[tuple[str, str]], bytes]:
    """One request to an authorization server: (status, headers, body), the body
    at most ``limit`` bytes."""
    try:
        with anyio.fail_after(timeout):
            response = await fetch(method, url, headers, body)
            async with response:
                data = await response.read_body(limit)
                return response.status, response.headers, data
    except TimeoutError:
        raise AuthorizationError(f"{method} {url}: no answer in {timeout:g} s") from None
    except (HTTPError, ValueError) as exc:
        raise AuthorizationError(f"{method} {url}: {exc}") from None


async def discover(
    fetch: Fetch,
    server_url: str,
    resource_metadata: str | None,
    timeout: float,
    *,
    pkce: bool,
) -> Server:
    """The resource and authorization server of the MCP server at ``server_url``.

    ``pkce``: the authorization server must list S256 (the authorization code
    grant), except a 2025-03-26 one, which did not yet have to.
    """
    if resource_metadata and o.origin_of(server_url)[0] == "https":
        # A server reached over TLS cannot send the client to plaintext metadata:
        # whoever could rewrite that document would choose the authorization
        # server, and with it the page where the user signs in.
        o.check_tls(resource_metadata, "the challenge's resource_metadata")
    prm: JSONObject | None = None
    for url in o.prm_urls(server_url, resource_metadata):
        prm = await get_json(fetch, url, "protected resource metadata", timeout)
        if prm is not None:
            break
    if prm is None:
        # A 2025-03-26 server: its origin is the authorization server.
        fallback = o.fallback_endpoints(server_url)
        issuer = fallback["issuer"]
        metadata = await _as_metadata(fetch, issuer, timeout, legacy=True, pkce=False)
        if metadata is None:
            metadata = o.check_as_metadata(dict(fallback), issuer)
        named = metadata["issuer"]
        assert isinstance(named, str)  # _as_metadata / fallback_endpoints
        return Server(o.canonical_resource(server_url), named, metadata, None)
    resource = o.check_resource(prm.get("resource"), server_url)
    servers = o.string_list(prm, "authorization_servers")
    if not servers:
        raise AuthorizationError("protected resource metadata names no authorization server")
    issuer = servers[0]
    metadata = await _as_metadata(fetch, issuer, timeout, legacy=False, pkce=pkce)
    if metadata is None:
        raise AuthorizationError(f"no authorization server metadata found for {issuer!r}")
    return Server(resource, issuer, metadata, o.string_list(prm, "scopes_supported"))


async def _as_metadata(
    fetch: Fetch, issuer: str, timeout: float, *, legacy: bool, pkce: bool
) -> JSONObject | None:
    # RFC 8414 §2: an issuer is an https URL (or, as everywhere here, http on a
    # loopback host). Its metadata names the endpoints the user's credentials go
    # to, so it is not fetched over plaintext to be checked afterwards.
    what = (
        "the MCP server's origin"
        if legacy
        else "protected resource metadata 'authorization_servers'"
    )
    try:
        urls = o.as_metadata_urls(issuer)
        o.check_tls(issuer, "issuer")
    except AuthorizationError as exc:
        raise AuthorizationError(f"{what}: {exc}") from None
    for url in urls[:1] if legacy else urls:
        doc = await get_json(fetch, url, "authorization server metadata", timeout)
        if doc is None:
            continue
        if legacy:
            # 2025-03-26 had no issuer to check against: the server's origin is
            # its authorization server, so the metadata at that origin may name
            # an issuer with a path, on that origin only.
            named = doc.get("issuer")
            if not isinstance(named, str) or o.origin_of(named) != o.origin_of(issuer):
                raise AuthorizationError(
                    f"authorization server metadata at {url} names issuer {named!r}, "
                    "not one on the MCP server's origin"
                )
            issuer = named
        return o.check_as_metadata(doc, issuer, require_pkce=pkce)
    return None


async def get_json(fetch: Fetch, url: str, what: str, timeout: float) -> JSONObject | None:
    """A metadata document, or ``None`` when the server has none there (any
    answer but 200, or one that is not a JSON object)."""
    status, _, data = await exchange(
        fetch, "GET", url, [("Accept", "application/json")], None, timeout
    )
    if status != 200:
        return None
    try:
        return o.json_object(data, f"{what} at {url}")
    except AuthorizationError as exc:
        logger.info("%s", exc)
        return None
