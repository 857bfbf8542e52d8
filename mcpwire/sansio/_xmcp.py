"""The ``x-mcp-header`` rules of the 2026-07-28 revision, pure (see ``_http``).

A tool's input schema may name a statically reachable argument (a chain of
``properties`` only) that the client mirrors in an ``Mcp-Param-*`` header:
``invalid_x_mcp_header`` checks a schema's annotations, ``x_mcp_headers``
lists them, ``param_header_value`` renders an argument for its header, and
``param_header_mismatch`` compares the headers a request carries with its
arguments (integers compared as numbers, strings after the base64 escape).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator, Mapping
from typing import Final

from ._http import MCP_PARAM_PREFIX, decode_header_value, is_token
from ._json import JSONObject, JSONValue

__all__ = (
    "argument_at",
    "invalid_x_mcp_header",
    "param_header_mismatch",
    "param_header_value",
    "x_mcp_headers",
)

_X_MCP_HEADER: Final = "x-mcp-header"
_CANONICAL_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
_X_MCP_TYPES = frozenset({"string", "integer", "boolean"})
_MAX_SAFE_INTEGER = 2**53 - 1

# JSON Schema 2020-12 applicators. Only a chain of ``properties`` keeps a
# position "statically reachable"; crossing any other applicator loses it.
_SUB_ONE = frozenset({"items", "contains", "unevaluatedItems", "additionalProperties", "not"})
_SUB_ONE |= {"propertyNames", "unevaluatedProperties", "if", "then", "else", "contentSchema"}
_SUB_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SUB_MAP = frozenset({"patternProperties", "dependentSchemas", "$defs", "definitions"})


def _positions(root: JSONValue) -> Iterator[tuple[tuple[str, ...] | None, JSONObject]]:
    """Every schema position with its ``properties`` path (``None`` once lost)."""
    stack: list[tuple[tuple[str, ...] | None, JSONValue]] = [((), root)]
    while stack:
        path, node = stack.pop()
        if not isinstance(node, dict):
            continue
        yield path, node
        for keyword, value in node.items():
            if keyword == "properties" and isinstance(value, dict):
                for name, sub in value.items():
                    stack.append(((*path, name) if path is not None else None, sub))
            elif keyword in _SUB_ONE:
                stack.append((None, value))
            elif keyword in _SUB_LIST and isinstance(value, list):
                stack.extend((None, sub) for sub in value)
            elif keyword in _SUB_MAP and isinstance(value, dict):
                stack.extend((None, sub) for sub in value.values())


def invalid_x_mcp_header(schema: JSONValue) -> str | None:
    """Why a tool's ``x-mcp-header`` annotations are invalid, or ``None`` if they are fine.

    Valid: on a property reachable through ``properties`` alone, naming a
    non-empty token, on an ``integer``/``string``/``boolean`` property, unique
    case-insensitively (streamable-http.mdx, "x-mcp-header").
    """
    seen: dict[str, str] = {}
    for path, node in _positions(schema):
        if _X_MCP_HEADER not in node:
            continue
        if not path:
            return "x-mcp-header on a schema position not reachable through properties"
        where = ".".join(path)
        name = node[_X_MCP_HEADER]
        if not isinstance(name, str) or not is_token(name):
            return f"property {where!r}: x-mcp-header is not a token"
        if node.get("type") not in _X_MCP_TYPES:
            return f"property {where!r}: x-mcp-header needs an integer, string or boolean type"
        lower = name.lower()
        if lower in seen:
            return f"x-mcp-header {name!r} on {where!r} duplicates the one on {seen[lower]!r}"
        seen[lower] = where
    return None


def x_mcp_headers(schema: JSONValue) -> dict[tuple[str, ...], tuple[str, str]]:
    """Property path -> (header token, JSON type) for every ``x-mcp-header``.

    Empty when the annotations are invalid: clients drop such tools, so no
    header can be expected for them.
    """
    if invalid_x_mcp_header(schema) is not None:
        return {}
    out: dict[tuple[str, ...], tuple[str, str]] = {}
    for path, node in _positions(schema):
        name = node.get(_X_MCP_HEADER)
        kind = node.get("type")
        if path and isinstance(name, str) and isinstance(kind, str):
            out[path] = (name, kind)
    return out


def argument_at(arguments: JSONValue, path: tuple[str, ...]) -> JSONValue:
    """The argument at a ``properties`` path (``None`` when absent)."""
    node: JSONValue = arguments
    for key in path:
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _render(value: JSONValue) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


def param_header_value(value: JSONValue) -> str | None:
    """What a client sends in ``Mcp-Param-*`` for an argument, before escaping.

    Strings as they are, integers in decimal (only within +-(2**53 - 1), the
    range every JSON peer reads exactly), booleans ``true``/``false``; nothing
    for anything else, null included (streamable-http.mdx, "x-mcp-header").
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if abs(value) <= _MAX_SAFE_INTEGER else None
    if isinstance(value, str):
        return value
    return None


def _value_matches(kind: str, value: JSONValue, rendered: str, decoded: str) -> bool:
    # Integers compare numerically ("SHOULD", streamable-http.mdx): 42 == 42.0 == "42".
    if (
        kind == "integer"
        and not isinstance(value, bool)
        and isinstance(value, (int, float))
        and float(value).is_integer()
        and _CANONICAL_DECIMAL.fullmatch(decoded)
    ):
        whole, _, fraction = decoded.partition(".")
        return set(fraction) <= {"0"} and int(whole) == int(value)
    return decoded == rendered


def param_header_mismatch(
    schema: JSONValue,
    arguments: JSONObject,
    headers: Mapping[str, str],
    duplicated: Collection[str] = (),
) -> str | None:
    """Check the ``Mcp-Param-*`` headers of a ``tools/call`` against its arguments.

    For each annotated property, the header and the argument must be present
    together (``null`` counts as absent) and agree after decoding; the header is
    not expected for a value ``param_header_value`` gives no header for.
    """
    for path, (token, kind) in x_mcp_headers(schema).items():
        name = MCP_PARAM_PREFIX + token.lower()
        label = "Mcp-Param-" + token
        raw = headers.get(name)
        if raw is not None and name in duplicated:
            return f"the {label} header appears more than once"
        value = argument_at(arguments, path)
        argument = ".".join(path)
        rendered = _render(value) if value is not None else None
        if rendered is None:
            if raw is not None:
                return f"{label} header is present but argument {argument!r} is not"
            continue
        if raw is None:
            if param_header_value(value) is None:
                # A value no header can carry (an integer past +-(2**53 - 1), a
                # float): a client omits the header for it, as ours does, so it
                # is not demanded; the tool's own schema judges the value.
                continue
            return f"{label} header is missing but argument {argument!r} is present"
        decoded = decode_header_value(raw)
        if decoded is None:
            return f"{label} header carries a malformed base64 value"
        if not _value_matches(kind, value, rendered, decoded):
            return f"{label} header {raw!r} does not match argument {argument!r}"
    return None
