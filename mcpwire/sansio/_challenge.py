"""HTTP authentication headers, pure: ``WWW-Authenticate`` both ways, Bearer credentials.

One grammar for both sides of MCP authorization. A client reads the
challenges of a ``401``/``403`` with ``parse_challenges`` (RFC 9110
§11.6.1: several challenges, auth-params whose values are tokens or quoted
strings with backslash escapes, or a token68); a protected resource writes
its challenges with ``build_challenge`` (values always quoted) and takes the
access token out of an ``Authorization`` field with ``bearer_token`` (RFC
6750 §2.1), or with ``access_token`` when it also takes DPoP-bound tokens
(``Authorization: DPoP <token>``, RFC 9449 §7.1: the same ``token68``
syntax under another scheme name).

No value can split a header: ``build_challenge`` writes a control character
as ``?``, and ``resource_challenge`` (``bearer_challenge`` for Bearer) keeps
a resource's challenge values to what RFC 6750 §3 allows, printable ASCII,
writing anything else as ``?``; RFC 9449 §7.1 takes the same parameters
for DPoP.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .._errors import AuthorizationError

__all__ = (
    "MAX_CHALLENGE_SIZE",
    "MAX_TOKEN_SIZE",
    "BearerError",
    "Challenge",
    "access_token",
    "bearer_challenge",
    "bearer_token",
    "build_challenge",
    "parse_challenges",
    "resource_challenge",
)

#: RFC 7230 tchar: what a token (scheme name, parameter name, bare value) is made of.
_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
#: RFC 7235 token68: the characters of a challenge's opaque blob (plus trailing '=').
_TOKEN68 = frozenset("-._~+/0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_WS = " \t"
#: The largest header we parse; challenges are a few hundred bytes in practice.
MAX_CHALLENGE_SIZE = 16 * 1024
#: The longest access token accepted. JWTs with many claims run to a few
#: kilobytes; the head limit (16 KiB by default) bounds it anyway.
MAX_TOKEN_SIZE = 8192
# RFC 6750 §2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_NOT_PRINTABLE = re.compile(r"[^\x20-\x7e]")
#: What a quoted string cannot hold, escaped or not: controls but HTAB, and DEL.
_NOT_QDTEXT = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")


class BearerError(ValueError):
    """An ``Authorization`` field that holds token credentials, but malformed ones.

    ``scheme`` is the scheme they came under, lowercased (``bearer``, ``dpop``).
    """

    def __init__(self, message: str, scheme: str = "bearer") -> None:
        super().__init__(message)
        self.scheme = scheme


def access_token(field: str | None, schemes: Sequence[str]) -> tuple[str, str] | None:
    """The scheme (lowercased) and access token of an ``Authorization`` field
    value whose scheme is one of ``schemes`` (lowercase names).

    Returns ``None`` when there is no field or it uses another scheme (the
    request then carries no token credentials at all).

    Raises:
        BearerError: the scheme is one of ``schemes`` but the token is missing,
            too long, or not a ``b64token`` (RFC 6750 §2.1; RFC 9449 §7.1
            keeps that syntax for ``DPoP``).
    """
    if field is None:
        return None
    name, _, rest = field.strip().partition(" ")
    scheme = name.lower()
    if scheme not in schemes:
        return None
    token = rest.strip()
    if not token:
        raise BearerError(f"the {name} credentials are empty", scheme)
    if len(token) > MAX_TOKEN_SIZE:
        raise BearerError(f"the access token is longer than {MAX_TOKEN_SIZE} characters", scheme)
    if not _B64TOKEN.fullmatch(token):
        raise BearerError("the access token is not a b64token (RFC 6750 section 2.1)", scheme)
    return scheme, token


def bearer_token(field: str | None) -> str | None:
    """The access token in an ``Authorization: Bearer`` field value (see
    ``access_token``); ``None`` for no field or another scheme.

    Raises:
        BearerError: the scheme is ``Bearer`` but the token is malformed.
    """
    found = access_token(field, ("bearer",))
    return found[1] if found is not None else None


@dataclass(frozen=True)
class Challenge:
    """One challenge of a ``WWW-Authenticate`` header (RFC 9110 §11.6.1).

    ``scheme`` is lowercased (schemes are case-insensitive, §11.1); parameter
    names are lowercased for the same reason; values are kept as sent.
    """

    scheme: str
    params: Mapping[str, str]
    token68: str | None = None


class _Reader:
    """A cursor over header text, for the challenge grammar below."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip_ws(self) -> None:
        while self.peek() and self.peek() in _WS:
            self.pos += 1

    def token(self) -> str:
        start = self.pos
        while self.peek() and self.peek() in _TCHAR:
            self.pos += 1
        return self.text[start : self.pos]

    def quoted(self) -> str:
        """A quoted-string (RFC 9110 §5.6.4), the opening quote under the cursor."""
        self.pos += 1
        out: list[str] = []
        while True:
            c = self.peek()
            if not c:
                raise AuthorizationError(f"unterminated quoted string in {self.text!r}")
            self.pos += 1
            if c == '"':
                return "".join(out)
            if c == "\\":
                if not self.peek():
                    raise AuthorizationError(f"dangling escape in {self.text!r}")
                c = self.peek()
                self.pos += 1
            if c in "\r\n\0":
                raise AuthorizationError(f"control character in a quoted string: {self.text!r}")
            out.append(c)

    def fail(self, what: str) -> AuthorizationError:
        return AuthorizationError(
            f"malformed WWW-Authenticate ({what} at {self.pos}): {self.text!r}"
        )


def parse_challenges(header: str) -> list[Challenge]:
    """Every challenge in a ``WWW-Authenticate`` value (or several joined by commas).

    Raises:
        AuthorizationError: the value does not follow RFC 9110 §11.6.1.
    """
    if len(header) > MAX_CHALLENGE_SIZE:
        raise AuthorizationError(f"WWW-Authenticate longer than {MAX_CHALLENGE_SIZE} characters")
    r = _Reader(header)
    out: list[Challenge] = []
    while True:
        # Empty list elements are allowed (RFC 9110 §5.6.1).
        r.skip_ws()
        while r.peek() == ",":
            r.pos += 1
            r.skip_ws()
        if r.at_end():
            return out
        scheme = r.token()
        if not scheme:
            raise r.fail("expected an auth-scheme")
        params: dict[str, str] = {}
        token68: str | None = None
        spaced = r.peek() in _WS
        r.skip_ws()
        if spaced and not r.at_end() and r.peek() != ",":
            token68, more = _params_or_token68(r, params)
            if not more:
                out.append(Challenge(scheme.lower(), params, token68))
                return out
        elif not r.at_end() and r.peek() != ",":
            raise r.fail("expected a space after the auth-scheme")
        out.append(Challenge(scheme.lower(), params, token68))


def _params_or_token68(r: _Reader, params: dict[str, str]) -> tuple[str | None, bool]:
    """Read a challenge's token68 or auth-params into ``params``; the token68 if
    there was one, and whether another challenge may follow."""
    start = r.pos
    name = r.token()
    r.skip_ws()
    if r.peek() != "=" or not name:
        # Not a parameter: a token68, alone in its challenge.
        r.pos = start
        while r.peek() and r.peek() in _TOKEN68:
            r.pos += 1
        while r.peek() == "=":
            r.pos += 1
        blob = r.text[start : r.pos]
        if not blob:
            raise r.fail("expected a token68 or an auth-param")
        r.skip_ws()
        if r.at_end():
            return blob, False
        if r.peek() != ",":
            raise r.fail("unexpected text after a token68")
        return blob, True
    # A token68 can end in '=' too ("abc=" vs "abc=value"): a token68 is
    # followed by a comma or the end, a parameter by a value.
    eq = r.pos
    r.pos += 1
    r.skip_ws()
    if r.at_end() or r.peek() in ",=":
        r.pos = eq
        while r.peek() == "=":
            r.pos += 1
        r.skip_ws()
        return r.text[start:eq].rstrip(_WS) + r.text[eq : r.pos].strip(_WS), not r.at_end()
    while True:
        value = r.quoted() if r.peek() == '"' else r.token()
        if not value and r.text[r.pos - 1 : r.pos] != '"':
            raise r.fail("expected a parameter value")
        key = name.lower()
        if key in params:
            raise r.fail(f"parameter {key!r} given twice")
        params[key] = value
        r.skip_ws()
        if r.at_end():
            return None, False
        if r.peek() != ",":
            raise r.fail("expected ',' between parameters")
        # After a comma: another parameter of this challenge, or a new challenge.
        while r.peek() == ",":
            r.pos += 1
            r.skip_ws()
        if r.at_end():
            return None, False
        mark = r.pos
        name = r.token()
        r.skip_ws()
        if not name or r.peek() != "=":
            r.pos = mark
            return None, True
        r.pos += 1
        r.skip_ws()


def build_challenge(scheme: str, params: Mapping[str, str]) -> str:
    """A challenge in the form ``parse_challenges`` reads: values always quoted,
    and a control character, which a quoted string cannot hold (RFC 9110 §5.6.4),
    written as ``?``."""
    if not scheme or not set(scheme) <= _TCHAR:
        raise ValueError(f"not a token: {scheme!r}")
    parts = []
    for name, value in params.items():
        if not name or not set(name) <= _TCHAR:
            raise ValueError(f"not a token: {name!r}")
        allowed = _NOT_QDTEXT.sub("?", value)
        escaped = allowed.replace("\\", "\\\\").replace('"', '\\"')
        parts.append(f'{name}="{escaped}"')
    return f"{scheme} {', '.join(parts)}" if parts else scheme


def resource_challenge(scheme: str, params: Sequence[tuple[str, str]]) -> str:
    """A protected resource's challenge under ``scheme`` (``Bearer``: RFC 6750 §3,
    ``DPoP``: RFC 9449 §7.1; ``resource_metadata``: RFC 9728 §5.1), its values
    kept to printable ASCII (anything else written as ``?``)."""
    return build_challenge(scheme, {name: _NOT_PRINTABLE.sub("?", v) for name, v in params})


def bearer_challenge(params: Sequence[tuple[str, str]]) -> str:
    """A protected resource's ``Bearer`` challenge (see ``resource_challenge``)."""
    return resource_challenge("Bearer", params)
