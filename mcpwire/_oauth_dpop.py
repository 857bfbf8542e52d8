"""DPoP for the OAuth client (RFC 9449, SEP-1932): proofs and server nonces.

Theory of operation
-------------------
An ``OAuthClient`` made with ``dpop=`` holds one ``DPoPProver``: one key for
its life, so every token it gets is bound to that key (the access token's
``cnf.jkt`` is the key's thumbprint, RFC 9449 §6) and only this client can
present it.

- Token requests carry a proof (``DPoP`` header, §5) when the authorization
  server may take one: its metadata lists the signer's ``alg`` in
  ``dpop_signing_alg_values_supported``, or lists none (§5.1: a server that
  does not know DPoP ignores the header and answers with a Bearer token).
- An answer with ``token_type`` ``DPoP`` is presented as
  ``Authorization: DPoP <token>`` with a fresh proof on every request to the
  MCP server, whose ``ath`` is the token's hash (§7). A Bearer answer is
  presented as Bearer, without proofs.
- A server may ask for a nonce: the authorization server by ``400`` with
  ``error: use_dpop_nonce`` (§8), the MCP server by ``401`` with
  ``WWW-Authenticate: DPoP error="use_dpop_nonce"`` (§9), both with a
  ``DPoP-Nonce`` header. The request is sent once more with the nonce in its
  proof. The latest ``DPoP-Nonce`` each origin sent, on any answer, goes
  into every later proof for that origin.

Proofs are built per request (a fresh ``jti``, the current ``iat``), so a
retried request never repeats one.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit, urlunsplit

from ._errors import AuthorizationError
from ._jose import JWTSigner, encode_jwt, jwk_thumbprint
from .sansio import _oauth as o
from .sansio._challenge import parse_challenges
from .sansio._codec import CodecError, loads

__all__ = ("DPoPProver", "htu", "wants_nonce_resource", "wants_nonce_token")


def htu(url: str) -> str:
    """The ``htu`` of a request: its URL without query and fragment (RFC 9449 §4.2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


class DPoPProver:
    """Proofs of possession of one key, and the nonces servers asked for."""

    def __init__(self, signer: JWTSigner) -> None:
        self.signer = signer
        self._jwk = signer.public_jwk()
        #: The key's RFC 7638 thumbprint: the ``cnf.jkt`` of the tokens bound to it.
        self.jkt = jwk_thumbprint(self._jwk)
        #: The last ``DPoP-Nonce`` per origin (scheme, authority).
        self.nonces: dict[tuple[str, str], str] = {}

    def proof(self, method: str, url: str, *, access_token: str | None = None) -> str:
        """A DPoP proof JWT for one request (RFC 9449 §4.2)."""
        claims: dict[str, object] = {
            "jti": secrets.token_urlsafe(24),
            "htm": method,
            "htu": htu(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = o.access_token_hash(access_token)
        nonce = self.nonces.get(o.origin_of(url))
        if nonce is not None:
            claims["nonce"] = nonce
        return encode_jwt({"typ": "dpop+jwt", "jwk": self._jwk}, claims, self.signer)

    def note(self, url: str, headers: Iterable[tuple[str, str]]) -> bool:
        """Keep the ``DPoP-Nonce`` of an answer from ``url``; True when it was new."""
        for name, value in headers:
            if name.lower() == "dpop-nonce" and value:
                origin = o.origin_of(url)
                if self.nonces.get(origin) == value:
                    return False
                self.nonces[origin] = value
                return True
        return False

    def usable_at(self, metadata: Mapping[str, object]) -> bool:
        """Whether the authorization server may take this key's proofs (see above)."""
        algs = o.string_list(metadata, "dpop_signing_alg_values_supported")
        return algs is None or self.signer.alg in algs


def wants_nonce_token(status: int, body: bytes) -> bool:
    """A token endpoint's answer asking for a DPoP nonce (RFC 9449 §8)."""
    if status != 400:
        return False
    try:
        doc = loads(body)
    except CodecError:
        return False
    return isinstance(doc, dict) and doc.get("error") == "use_dpop_nonce"


def wants_nonce_resource(challenges: Iterable[str]) -> bool:
    """A resource server's ``WWW-Authenticate`` asking for a DPoP nonce (RFC 9449 §9)."""
    for header in challenges:
        try:
            parsed = parse_challenges(header)
        except AuthorizationError:
            continue
        for challenge in parsed:
            if challenge.scheme == "dpop" and challenge.params.get("error") == "use_dpop_nonce":
                return True
    return False
