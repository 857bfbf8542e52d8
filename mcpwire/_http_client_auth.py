"""The HTTP client of a transport with authorization: bearer tokens and challenges.

``AuthorizedHTTPClient`` is an ``HTTPClient`` whose ``request`` adds
``Authorization: Bearer <token>`` (RFC 6750 §2.1) to every request to the MCP
server's origin, and answers the server's challenges: on ``401``, or on
``403`` with ``error="insufficient_scope"`` (RFC 6750 §3.1, the spec's "Scope
Challenge Handling"), it reads the small error body to its end, lets the
``OAuthClient`` run a flow, and sends the request again, at most
``MAX_FLOWS`` times per request. When no flow helps, the last challenge is
returned as the answer, and the transport reports it as it reports any HTTP
error. A flow that fails raises ``AuthorizationFailed``: an ``AuthorizationError``
that is also the ``InvalidRequest`` every transport already turns into the
failure of the one request (not of the connection), with the flow's reason.

The origin is the one of the first request (the transport's endpoint), and the
token never goes anywhere else: discovery and token requests to the
authorization server go through the plain ``HTTPClient.request``.

With DPoP (``OAuthClient(dpop=...)``, RFC 9449) a DPoP-bound token goes as
``Authorization: DPoP <token>`` with a fresh ``DPoP`` proof per request, every
answer's ``DPoP-Nonce`` is kept for the next proofs, and a ``401`` asking for a
nonce (``WWW-Authenticate: DPoP error="use_dpop_nonce"``, §9) is answered by
sending the request once more with it, without a flow.

A transport without ``auth`` gets a plain ``HTTPClient``, so none of this is on
its path.
"""

from __future__ import annotations

from typing import Any

from ._errors import AuthorizationError
from ._http_client_conn import Headers, HTTPClient, HTTPResponse, InvalidRequest
from ._http_client_net import URL
from ._oauth import OAuthClient
from ._oauth_dpop import wants_nonce_resource
from ._pending import deadline_held

__all__ = ("MAX_FLOWS", "AuthorizationFailed", "AuthorizedHTTPClient")

#: Authorization flows run for one request before its challenge is returned as is.
MAX_FLOWS = 2
#: The most of a challenge's body read before the request is sent again.
_CHALLENGE_BODY = 64 * 1024


class AuthorizationFailed(InvalidRequest, AuthorizationError):
    """A request could not be authorized (see the module docstring)."""


class AuthorizedHTTPClient(HTTPClient):
    """An ``HTTPClient`` that authorizes its requests (see the module docstring)."""

    def __init__(self, auth: OAuthClient, **options: Any) -> None:
        super().__init__(**options)
        self.auth = auth
        self._origin: tuple[str, str, int] | None = None

    def abortable(self, url: URL) -> bool:
        """Never: a request may wait on an authorization flow (the user's step,
        the authorization server), which ``abort()`` cannot break, so the
        transport must run every exchange in a cancel scope it can cancel."""
        return False

    async def _plain(
        self, method: str, url: str, headers: list[tuple[str, str]], body: bytes | None
    ) -> HTTPResponse:
        """An exchange with the authorization server: no bearer token, no challenge handling."""
        return await HTTPClient.request(self, method, URL.parse(url), headers, body)

    async def request(
        self,
        method: str,
        url: URL,
        headers: Headers = (),
        body: bytes | None = None,
        *,
        timeout: float | None = None,
        follow_redirects: bool = True,
        retry: bool | None = None,
    ) -> HTTPResponse:
        origin = self._origin
        if origin is None:
            origin = self._origin = url.origin
        if url.origin != origin:
            return await super().request(
                method,
                url,
                headers,
                body,
                timeout=timeout,
                follow_redirects=follow_redirects,
                retry=retry,
            )
        auth = self.auth
        dpop = auth.dpop
        flows = 0
        nonce_retry = dpop is not None
        while True:
            try:
                with deadline_held():  # a refresh is not the request's time
                    token = await auth.token(self._plain, url.raw)
            except AuthorizationError as exc:
                raise AuthorizationFailed(f"{method} {url}: authorization failed: {exc}") from exc
            if token is None:
                sent = headers
            elif dpop is not None and auth.token_type == "DPoP":
                proof = dpop.proof(method, url.raw, access_token=token)
                sent = [*headers, ("Authorization", f"DPoP {token}"), ("DPoP", proof)]
            else:
                sent = [*headers, ("Authorization", f"Bearer {token}")]
            response = await super().request(
                method,
                url,
                sent,
                body,
                timeout=timeout,
                follow_redirects=follow_redirects,
                retry=retry,
            )
            status = response.status
            fresh_nonce = dpop is not None and dpop.note(url.raw, response.headers)
            if status not in (401, 403) or flows >= MAX_FLOWS:
                return response
            challenges = [v for k, v in response.headers if k == "www-authenticate"]
            if nonce_retry and fresh_nonce and wants_nonce_resource(challenges):
                nonce_retry = False  # RFC 9449 §9: once, with the nonce it gave
                try:
                    await response.read_body(_CHALLENGE_BODY, truncate=True)
                finally:
                    await response.aclose()
                continue
            if status == 403 and not any("insufficient_scope" in c for c in challenges):
                return response
            # The body is read first so the socket can serve the flow; if no
            # flow follows, the response goes back with its body consumed (the
            # transport's error then quotes the challenge header alone).
            try:
                await response.read_body(_CHALLENGE_BODY, truncate=True)
                # The flow may wait for a person: that time is not the request's
                # (its deadline stands still, see _pending); the flow has bounds
                # of its own, and closing the transport still stops it.
                with deadline_held():
                    again = await auth.challenge(self._plain, url.raw, status, challenges, token)
            except AuthorizationError as exc:
                await response.aclose()
                raise AuthorizationFailed(f"{method} {url}: authorization failed: {exc}") from exc
            except BaseException:
                await response.aclose()
                raise
            if not again:
                return response
            await response.aclose()
            flows += 1
