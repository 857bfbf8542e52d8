"""RFC 6570 URI Template syntax: character sets, the operator table and the parser.

Part of the theory of operation of ``mcpwire._uritemplate``.

Parsing (RFC 6570 section 2)
----------------------------
A template is literals and ``{...}`` expressions (section 2.2): an optional
operator, then comma-separated varspecs. A varname is ``varchar *( ["."] varchar )``
where a varchar is ALPHA, DIGIT, ``_`` or a pct-encoded triplet (section 2.3); a
varspec may carry a prefix modifier ``:n`` with 1 <= n <= 9999 or the explode
modifier ``*`` (section 2.4). The operators ``= , ! @ |`` are reserved for future
extensions (section 2.2) and rejected. Every syntax error is a ``ValueError``
naming the offending position (0-based index into the template). Literal
characters that may not appear in a URI are accepted and pct-encoded on output,
as section 3.1 prescribes for expansion.
"""

from __future__ import annotations

import re
from typing import NamedTuple, Union

__all__ = ("_EXPRESSION", "_OPS", "_RESERVED", "_Expr", "_Part", "_VarSpec", "_parse")

# --- RFC 6570 / RFC 3986 character sets -------------------------------------------

_RESERVED = ":/?#[]@!$&'()*+,;="  # RFC 3986 gen-delims + sub-delims
_VARCHAR = r"(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})"
_VARNAME_SRC = rf"{_VARCHAR}(?:\.?{_VARCHAR})*"  # section 2.3
_VARNAME = re.compile(_VARNAME_SRC)
_MAX_LENGTH = re.compile(r"[1-9][0-9]{0,3}")  # section 2.4.1: 1..9999
_FUTURE_OPERATORS = "=,!@|"  # op-reserve, section 2.2
_VARSPEC_SRC = _VARNAME_SRC + r"(?::[1-9][0-9]{0,3}|\*)?"
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_EXPRESSION = re.compile(r"\{[+#./;?&]?" + _VARSPEC_SRC + r"(?:," + _VARSPEC_SRC + r")*\}")


class _Op(NamedTuple):
    """One row of the RFC 6570 Appendix A table."""

    first: str
    sep: str
    named: bool
    ifemp: str
    reserved: bool  # allow reserved characters and pct-triplets (U+R) instead of U


_OPS: dict[str, _Op] = {
    "": _Op("", ",", False, "", False),
    "+": _Op("", ",", False, "", True),
    "#": _Op("#", ",", False, "", True),
    ".": _Op(".", ".", False, "", False),
    "/": _Op("/", "/", False, "", False),
    ";": _Op(";", ";", True, "", False),
    "?": _Op("?", "&", True, "=", False),
    "&": _Op("&", "&", True, "=", False),
}


class _VarSpec(NamedTuple):
    name: str
    prefix: int | None
    explode: bool


class _Expr(NamedTuple):
    op: str
    specs: tuple[_VarSpec, ...]


_Part = Union[str, _Expr]


# --- parsing -----------------------------------------------------------------------


def _error(template: str, pos: int, what: str) -> ValueError:
    return ValueError(f"invalid URI template {template!r}: {what} at position {pos}")


def _parse(template: str) -> list[_Part]:
    surrogate = _SURROGATE.search(template)
    if surrogate is not None:
        raise _error(template, surrogate.start(), "lone surrogate (not encodable as UTF-8)")
    parts: list[_Part] = []
    literal_start = 0
    i = 0
    n = len(template)
    while i < n:
        c = template[i]
        if c == "}":
            raise _error(template, i, "unmatched '}'")
        if c != "{":
            i += 1
            continue
        close = template.find("}", i + 1)
        if close < 0 or template.find("{", i + 1, close) >= 0:
            raise _error(template, i, "unclosed '{'")
        if i > literal_start:
            parts.append(template[literal_start:i])
        parts.append(_parse_expression(template, i, close))
        i = literal_start = close + 1
    if literal_start < n:
        parts.append(template[literal_start:])
    return parts


def _parse_expression(template: str, open_pos: int, close_pos: int) -> _Expr:
    body = template[open_pos + 1 : close_pos]
    base = open_pos + 1
    if not body:
        raise _error(template, open_pos, "empty expression")
    op = ""
    j = 0
    if body[0] in _OPS:
        op, j = body[0], 1
    elif body[0] in _FUTURE_OPERATORS:
        raise _error(template, base, f"operator {body[0]!r} is reserved for future extensions")
    elif not (body[0].isascii() and (body[0].isalnum() or body[0] in "_%")):
        raise _error(template, base, f"invalid operator {body[0]!r}")
    specs: list[_VarSpec] = []
    while True:
        m = _VARNAME.match(body, j)
        if m is None:
            found = repr(body[j]) if j < len(body) else "nothing"
            raise _error(template, base + j, f"invalid variable name (found {found})")
        name, j = m.group(), m.end()
        prefix: int | None = None
        explode = False
        if j < len(body) and body[j] == ":":
            pm = _MAX_LENGTH.match(body, j + 1)
            if pm is None or (pm.end() < len(body) and body[pm.end()].isdigit()):
                raise _error(template, base + j + 1, "invalid prefix modifier (want 1-9999)")
            prefix, j = int(pm.group()), pm.end()
        elif j < len(body) and body[j] == "*":
            explode, j = True, j + 1
        specs.append(_VarSpec(name, prefix, explode))
        if j == len(body):
            return _Expr(op, tuple(specs))
        if body[j] in ":*":
            raise _error(template, base + j, f"invalid modifier {body[j]!r} after a modifier")
        if body[j] != ",":
            raise _error(template, base + j, f"unexpected {body[j]!r} in expression")
        j += 1
