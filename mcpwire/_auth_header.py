"""Bearer headers of a protected resource: ``Authorization`` in, ``WWW-Authenticate`` out.

Pure functions, no I/O. ``bearer_token`` takes the credentials out of an
``Authorization`` field (RFC 6750 section 2.1: the ``Bearer`` scheme, case
insensitive, and a ``b64token``); ``bearer_challenge`` writes the challenge
a 401 or 403 carries (RFC 6750 section 3, RFC 9728 section 5.1), its
parameters as quoted strings with ``"`` and ``\\`` escaped (RFC 9110 section
5.6.4); ``parse_challenges`` reads such a field back, for tests and for
anyone checking what a server sent.

Parameter values are kept to what the grammar allows: RFC 6750 limits
``error_description`` and ``scope`` to printable ASCII, so any other
character (a line break above all, which would split the header) is
replaced with ``?`` before quoting.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = (
    "MAX_TOKEN_SIZE",
    "BearerError",
    "bearer_challenge",
    "bearer_token",
    "parse_challenges",
    "quote_param",
)

#: The longest access token accepted. JWTs with many claims run to a few
#: kilobytes; the head limit (16 KiB by default) bounds it anyway.
MAX_TOKEN_SIZE = 8192

# RFC 6750 section 2.1: b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_NOT_PRINTABLE = re.compile(r"[^\x20-\x7e]")
_TOKEN = r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+"
_PARAM = re.compile(rf'\s*({_TOKEN})\s*=\s*(?:"((?:[^"\\]|\\.)*)"|({_TOKEN}))\s*')
_SCHEME = re.compile(rf"[\s,]*({_TOKEN})")
_ESCAPE = re.compile(r"\\(.)")


class BearerError(ValueError):
    """An ``Authorization`` field that holds bearer credentials, but malformed ones."""


def bearer_token(field: str | None) -> str | None:
    """The access token in an ``Authorization`` field value.

    Returns ``None`` when there is no field or it uses another scheme (the
    request then carries no bearer credentials at all).

    Raises:
        BearerError: the scheme is ``Bearer`` but the token is missing, too
            long, or not a ``b64token``.
    """
    if field is None:
        return None
    scheme, _, rest = field.strip().partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = rest.strip()
    if not token:
        raise BearerError("the Bearer credentials are empty")
    if len(token) > MAX_TOKEN_SIZE:
        raise BearerError(f"the access token is longer than {MAX_TOKEN_SIZE} characters")
    if not _B64TOKEN.fullmatch(token):
        raise BearerError("the access token is not a b64token (RFC 6750 section 2.1)")
    return token


def quote_param(value: str) -> str:
    """``value`` as a quoted string: ``"`` and ``\\`` escaped, non-printables as ``?``."""
    value = _NOT_PRINTABLE.sub("?", value)
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def bearer_challenge(params: Sequence[tuple[str, str]]) -> str:
    """A ``WWW-Authenticate`` value: ``Bearer`` and ``params`` as quoted strings."""
    if not params:
        return "Bearer"
    return "Bearer " + ", ".join(f"{name}={quote_param(value)}" for name, value in params)


def parse_challenges(field: str) -> list[tuple[str, dict[str, str]]]:
    """The challenges in a ``WWW-Authenticate`` value, each as (scheme, params).

    Scheme names are returned as sent; parameter names in lower case (they
    are case-insensitive), values unquoted. ``token68`` credentials are not
    supported (no MCP server sends them). A value that does not parse stops
    the scan: what was read up to there is returned.
    """
    challenges: list[tuple[str, dict[str, str]]] = []
    pos = 0
    size = len(field)
    while pos < size:
        match = _SCHEME.match(field, pos)
        if match is None:
            break
        scheme = match.group(1)
        pos = match.end()
        params: dict[str, str] = {}
        while True:
            param = _PARAM.match(field, pos)
            if param is None:
                break
            name, quoted, bare = param.groups()
            value = _ESCAPE.sub(r"\1", quoted) if quoted is not None else bare
            params.setdefault(name.lower(), value)
            pos = param.end()
            if pos < size and field[pos] == ",":
                # Another parameter follows, or the next challenge does.
                following = _PARAM.match(field, pos + 1)
                if following is None:
                    pos += 1
                    break
                pos += 1
                continue
            break
        challenges.append((scheme, params))
    return challenges
