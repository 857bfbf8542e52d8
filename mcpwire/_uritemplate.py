"""RFC 6570 URI Templates: expansion, and matching for MCP resource templates.

Theory of operation
===================

MCP servers advertise resource templates (``resources/templates/list`` carries a
``uriTemplate``) and must route ``resources/read`` for a concrete URI to the
template it came from. ``UriTemplate`` does both directions.

Expansion (section 3 and Appendix A)
------------------------------------
All four levels (section 1.2) are implemented with the operator table of
Appendix A (first string, separator, named, if-empty, allowed set). Values are
strings, ints/floats (``str()``; bools render as ``true``/``false``), lists or
tuples (section 2.3 "list"), and mappings (associative arrays, insertion order).
``None``, empty lists and mappings whose values are all ``None`` are undefined and
skipped (section 2.3); ``None`` members of lists and mappings are dropped. Simple
and the level-3 operators pct-encode everything outside *unreserved*; ``+`` and
``#`` also pass *reserved* characters and existing pct-encoded triplets through
unchanged (section 3.2.1). A prefix modifier counts Unicode code points and is an
error on a composite value (section 2.4.1).

Where the code lives
--------------------
This module holds ``UriTemplate``, expansion and ``is_template``. The syntax
(character sets, the operator table of Appendix A, the parser) is in
``_uritemplate_syntax``; matching, the reverse direction, is in
``_uritemplate_match`` together with its theory of operation.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Union
from urllib.parse import quote

from ._uritemplate_match import (
    UriEscapeError,
    _add_query,
    _HeadCompiler,
    _query_shape,
    _read_slot,
    _Results,
    _split_query,
)
from ._uritemplate_syntax import _EXPRESSION, _OPS, _RESERVED, _Expr, _parse, _Part, _VarSpec

__all__ = ("UriEscapeError", "UriTemplate", "is_template")


_PCT_TRIPLET = re.compile(r"%[0-9A-Fa-f]{2}")
_Value = Union[str, list[str], dict[str, str]]


# --- expansion ---------------------------------------------------------------------


def _encode_unreserved(s: str) -> str:
    return quote(s, safe="")


def _encode_reserved(s: str) -> str:
    if "%" not in s:
        return quote(s, safe=_RESERVED)
    out: list[str] = []
    last = 0
    for m in _PCT_TRIPLET.finditer(s):
        out.append(quote(s[last : m.start()], safe=_RESERVED))
        out.append(m.group())
        last = m.end()
    out.append(quote(s[last:], safe=_RESERVED))
    return "".join(out)


def _scalar(value: object, name: str) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    raise TypeError(f"URI template variable {name!r}: unsupported value {type(value).__name__}")


def _normalize(value: object, name: str) -> _Value | None:
    """A value as str / list / dict, or ``None`` when undefined (RFC 6570 section 2.3)."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        members = [_scalar(m, name) for m in value if m is not None]
        return members or None
    if isinstance(value, Mapping):
        pairs = {_scalar(k, name): _scalar(v, name) for k, v in value.items() if v is not None}
        return pairs or None
    return _scalar(value, name)


def _expand_expression(expr: _Expr, values: Mapping[str, object]) -> str:
    op = _OPS[expr.op]
    enc = _encode_reserved if op.reserved else _encode_unreserved
    out: list[str] = []
    defined = False
    for spec in expr.specs:
        value = _normalize(values.get(spec.name), spec.name)
        if value is None:
            continue
        out.append(op.sep if defined else op.first)
        defined = True
        if isinstance(value, str):
            if spec.prefix is not None:
                value = value[: spec.prefix]
            if op.named:
                out.append(spec.name)
                out.append(op.ifemp if value == "" else "=")
            out.append(enc(value))
            continue
        if spec.prefix is not None:
            raise ValueError(
                f"URI template variable {spec.name!r}: a prefix modifier does not apply"
                " to a list or associative array (RFC 6570 section 2.4.1)"
            )
        if not spec.explode:
            if isinstance(value, list):
                joined = ",".join(enc(m) for m in value)
            else:
                joined = ",".join(f"{enc(k)},{enc(v)}" for k, v in value.items())
            if op.named:
                out.append(spec.name)
                out.append(op.ifemp if joined == "" else "=")
            out.append(joined)
            continue
        if isinstance(value, list):
            if op.named:
                items = [spec.name + (op.ifemp if m == "" else "=" + enc(m)) for m in value]
            else:
                items = [enc(m) for m in value]
        elif op.named:
            items = [enc(k) + (op.ifemp if v == "" else "=" + enc(v)) for k, v in value.items()]
        else:
            items = [f"{enc(k)}={enc(v)}" for k, v in value.items()]
        out.append(op.sep.join(items))
    return "".join(out)


# --- public API --------------------------------------------------------------------


class UriTemplate:
    """A parsed RFC 6570 URI Template (levels 1-4) that can expand and match URIs.

    >>> t = UriTemplate("users://{user}/posts{?limit,offset}")
    >>> t.expand(user="ada", limit=10)
    'users://ada/posts?limit=10'
    >>> t.match("users://ada/posts?offset=5&limit=10")
    {'user': 'ada', 'limit': '10', 'offset': '5'}
    """

    __slots__ = ("_head", "_parts", "_query", "_slots", "_template", "_variables")

    def __init__(self, template: str) -> None:
        if not isinstance(template, str):
            raise TypeError(f"URI template must be a str, not {type(template).__name__}")
        parsed = _parse(template)
        self._template = template
        # Literals are kept in their expanded (pct-encoded) form (section 3.1).
        self._parts: tuple[_Part, ...] = tuple(
            _encode_reserved(p) if isinstance(p, str) else p for p in parsed
        )
        names: dict[str, None] = {}
        for part in self._parts:
            if isinstance(part, _Expr):
                names.update(dict.fromkeys(spec.name for spec in part.specs))
        self._variables = tuple(names)
        head, self._query = _split_query(list(self._parts))
        compiler = _HeadCompiler(head)
        self._head = compiler.compile()
        self._slots = tuple(compiler.slots)

    @property
    def template(self) -> str:
        """The template string, as given."""
        return self._template

    @property
    def variables(self) -> tuple[str, ...]:
        """Variable names in order of first appearance, without repeats."""
        return self._variables

    def expand(self, values: Mapping[str, object] | None = None, /, **kwargs: object) -> str:
        """Expand the template (RFC 6570 section 3). Keyword arguments override ``values``.

        Raises ``TypeError`` for a value that is not a str, int, float, list, tuple or
        mapping, and ``ValueError`` for a prefix modifier on a composite value or a
        string that cannot be encoded as UTF-8 (a lone surrogate).
        """
        merged: Mapping[str, object]
        if values is None:
            merged = kwargs
        elif kwargs:
            merged = {**values, **kwargs}
        else:
            merged = values
        return "".join(
            part if isinstance(part, str) else _expand_expression(part, merged)
            for part in self._parts
        )

    def match(self, uri: str) -> dict[str, str | list[str]] | None:
        """Extract the variables that ``uri`` was expanded from, or ``None``.

        Values come back percent-decoded as UTF-8, the reverse of expansion (RFC
        6570 section 3.2.1 encodes a value's UTF-8 octets). A ``uri`` of the
        template's shape (its literals and delimiters in place, every query key
        known) whose value holds a ``%`` not followed by two hex digits, or
        escapes whose octets are not UTF-8, raises ``UriEscapeError`` naming the
        variable and the escape: expansion never produces either, so such a URI
        names no value. Otherwise never raises for a ``str`` argument, and runs
        in time linear in ``len(uri)``. See the ``_uritemplate_match`` docstring
        for the shapes supported and the rules.
        """
        head = uri
        pairs: list[tuple[_VarSpec, str]] = []
        if self._query is not None:
            head, mark, query = uri.partition("?")
            if mark:
                shaped = _query_shape(self._query, query)
                if shaped is None:
                    return None
                pairs = shaped
            elif self._query.fixed:
                return None
        m = self._head.fullmatch(head)
        if m is None:
            return None
        result = _Results()
        if pairs and not _add_query(pairs, result):
            return None
        for slot in self._slots:
            raw = m.group(slot.group)
            if raw is None:
                continue
            value = _read_slot(slot, raw)
            if value is None or not result.add(slot.spec, value):
                return None
        values = result.finish()
        if values is None:
            return None
        return {name: values[name] for name in self._variables if name in values}

    def __eq__(self, other: object) -> bool:
        if isinstance(other, UriTemplate):
            return self._template == other._template
        return NotImplemented

    def __hash__(self) -> int:
        return hash((UriTemplate, self._template))

    def __repr__(self) -> str:
        return f"UriTemplate({self._template!r})"

    def __str__(self) -> str:
        return self._template


def is_template(s: str) -> bool:
    """True if ``s`` contains at least one well-formed ``{...}`` expression.

    A plain URI (no expression) is a concrete resource, not a template. The rest of
    ``s`` is not validated: construct a ``UriTemplate`` for that.
    """
    return _EXPRESSION.search(s) is not None
