"""Tool input schemas fitted to what an LLM provider accepts (pain point #24).

Servers publish JSON Schema 2020-12, and the SDKs' own generators produce
``$defs``/``$ref``, ``anyOf`` with ``null`` and ``additionalProperties``. Some
providers take only a subset: Gemini's function declarations follow an OpenAPI
3.0 schema object (no references, ``nullable`` instead of a ``null`` type, a
short list of keywords), and OpenAI and Anthropic want an object at the top.
A schema they refuse either fails the tool list or every request of the
session.

``fit_schema(schema, provider)`` returns a new schema and the warnings of what
it could not carry over; the server's schema is never changed (calls still go
to the server with the arguments as the model gave them). In order:

1. Local references (``#/$defs/X``, ``#/definitions/X``, any ``#/`` pointer)
   are inlined, with their sibling keywords kept over the referenced ones. A
   reference inside its own expansion (a recursive type) is cut: it becomes
   the referenced schema's type with no further structure, and a warning says
   where. Expansion is bounded (``MAX_NODES``), so shared references cannot
   blow up; past the bound references are cut the same way. A reference that
   does not resolve becomes ``{}`` (anything).
2. ``$defs``, ``definitions`` and the identifiers (``$schema``, ``$id``,
   ``$anchor``, ``$comment``) go.
3. Per provider:

   * ``gemini``: a ``null`` in ``type`` or a ``{"type": "null"}`` branch of
     ``anyOf``/``oneOf`` becomes ``nullable: true``; ``oneOf`` becomes
     ``anyOf``; a one-branch ``anyOf`` or ``allOf`` is merged into its parent;
     ``const`` becomes a one-value ``enum``; ``exclusiveMinimum``/``Maximum``
     become ``minimum``/``maximum`` (a warning: the bound is now inclusive);
     ``enum`` keeps string values only; ``required`` keeps only names that are
     in ``properties``; every other keyword outside the schema object's list,
     and every keyword whose value is of the wrong kind (a ``type`` that is
     not one of the six, an ``enum`` that is not a list, ...), is dropped, with
     one warning per keyword and place. Whatever JSON a server sends, the
     result holds only what Gemini takes, and fitting never raises.
   * ``openai``, ``anthropic``: the top level is ``type: object`` with
     ``properties`` (an object schema without them is refused).

Only positions that hold schemas are walked: ``enum``, ``const``, ``default``
and ``examples`` are data, copied as they are, and ``properties`` maps names
(which may look like keywords) to schemas.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from .sansio._json import JSONObject

__all__ = ("MAX_NODES", "PROVIDERS", "FittedSchema", "fit_schema")

PROVIDERS = ("openai", "anthropic", "gemini")
#: Bound on the schema nodes an expansion of references may produce.
MAX_NODES = 10_000

#: Keywords whose value is one schema, a list of schemas, a map of schemas.
_ONE = frozenset(
    {"additionalProperties", "items", "not", "if", "then", "else", "contains", "propertyNames"}
    | {"unevaluatedItems", "unevaluatedProperties", "additionalItems"}
)
_LIST = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
#: (``dependencies`` of draft 7 maps to a schema or to a list of names; a list
#: is data, which ``inline`` copies as it is.)
_MAP = frozenset({"properties", "patternProperties", "dependentSchemas", "dependencies"})
_DROPPED = frozenset({"$defs", "definitions", "$schema", "$id", "$anchor", "$comment"})
#: The OpenAPI 3.0 schema object's fields that Gemini's declarations take.
_GEMINI = frozenset(
    {"type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems"}
    | {"properties", "required", "minProperties", "maxProperties", "minLength", "maxLength"}
    | {"pattern", "example", "anyOf", "propertyOrdering", "default", "items"}
    | {"minimum", "maximum"}
)


def _any(value: object) -> bool:
    return True


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _strings(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


#: The kind of value each of Gemini's keywords takes (``example`` and
#: ``default`` take any).
_GEMINI_SHAPE = {
    "type": lambda v: v in ("string", "number", "integer", "boolean", "array", "object"),
    "nullable": lambda v: isinstance(v, bool),
    "properties": lambda v: isinstance(v, dict),
    "items": lambda v: isinstance(v, dict),
    "anyOf": lambda v: isinstance(v, list) and bool(v),
    "enum": lambda v: isinstance(v, list) and bool(v),
    "required": _strings,
    "propertyOrdering": _strings,
    "minimum": _number,
    "maximum": _number,
    **dict.fromkeys(("format", "title", "description", "pattern"), lambda v: isinstance(v, str)),
    **dict.fromkeys(
        ("maxItems", "minItems", "minProperties", "maxProperties", "minLength", "maxLength"),
        _count,
    ),
}


@dataclass(frozen=True)
class FittedSchema:
    """A schema fitted to a provider, and what could not be carried over."""

    schema: JSONObject
    warnings: tuple[str, ...] = ()


def fit_schema(schema: JSONObject, provider: str) -> FittedSchema:
    """``schema`` as ``provider`` (one of ``PROVIDERS``) accepts it; see the module."""
    if provider not in PROVIDERS:
        raise ValueError(f"provider must be one of {', '.join(PROVIDERS)}, not {provider!r}")
    fitter = _Fitter(schema)
    out = fitter.inline(schema, "$", ())
    if not isinstance(out, dict):
        out = {}
    if provider == "gemini":
        out = fitter.gemini(out, "$")
    if out.get("type", "object") != "object":
        fitter.warn("$", f"the top level is type {out.get('type')!r}, not an object")
    else:
        out["type"] = "object"
        out.setdefault("properties", {})
    return FittedSchema(out, tuple(fitter.warnings))


class _Fitter:
    def __init__(self, root: JSONObject) -> None:
        self.root = root
        self.nodes = 0
        self.warnings: list[str] = []

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(f"{path}: {message}")

    # -- 1 and 2: references inlined, definitions dropped --------------------------

    def inline(self, node: Any, path: str, stack: tuple[str, ...]) -> Any:
        if not isinstance(node, dict):
            return copy.deepcopy(node)  # a boolean schema, or something that is none
        self.nodes += 1
        ref = node.get("$ref")
        if isinstance(ref, str):
            return self._reference(node, ref, path, stack)
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _DROPPED:
                continue
            if key in _ONE and not isinstance(value, list):
                out[key] = self.inline(value, f"{path}.{key}", stack)
            elif (key in _LIST or key in _ONE) and isinstance(value, list):
                # (``items`` as a list: the tuple form of drafts before 2020-12)
                out[key] = [
                    self.inline(v, f"{path}.{key}[{i}]", stack) for i, v in enumerate(value)
                ]
            elif key in _MAP and isinstance(value, dict):
                out[key] = {k: self.inline(v, f"{path}.{key}.{k}", stack) for k, v in value.items()}
            else:
                out[key] = copy.deepcopy(value)
        return out

    def _reference(self, node: JSONObject, ref: str, path: str, stack: tuple[str, ...]) -> Any:
        target = self._resolve(ref)
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        if target is None:
            self.warn(path, f"$ref {ref!r} does not resolve within the schema; taken as any value")
            return self.inline(siblings, path, stack)
        if ref in stack or self.nodes > MAX_NODES:
            why = "recursive" if ref in stack else f"past {MAX_NODES} nodes"
            self.warn(path, f"$ref {ref!r} is {why}; cut to its type")
            cut: dict[str, Any] = {}
            if isinstance(target, dict) and isinstance(target.get("type"), (str, list)):
                cut["type"] = copy.deepcopy(target["type"])
            cut.update(self.inline(siblings, path, stack))
            return cut
        expanded = self.inline(target, path, (*stack, ref))
        if not isinstance(expanded, dict):
            return expanded if not siblings else self.inline(siblings, path, stack)
        return {**expanded, **self.inline(siblings, path, stack)}

    def _resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            return None
        node: Any = self.root
        for token in ref[1:].split("/")[1:] if ref != "#" else []:
            token = unquote(token).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return None
        return node

    # -- 3: Gemini's schema object ---------------------------------------------------

    def gemini(self, node: Any, path: str) -> Any:
        if not isinstance(node, dict):
            if node is not True:
                self.warn(path, f"the schema {node!r} is not supported; taken as any value")
            return {}
        node = dict(node)
        self._nullable(node)
        merged = True
        while merged:  # a branch merged in may hold a one-branch list of its own
            merged = False
            if "oneOf" in node and "anyOf" not in node:
                node["anyOf"] = node.pop("oneOf")
            for key in ("anyOf", "allOf"):
                branches = node.get(key)
                if (
                    isinstance(branches, list)
                    and len(branches) == 1
                    and isinstance(branches[0], dict)
                ):
                    del node[key]
                    node = {**branches[0], **node}
                    self._nullable(node)
                    merged = True
        if "const" in node:
            value = node.pop("const")
            if "enum" not in node:
                node["enum"] = [value]
                if "type" not in node and isinstance(value, str):
                    node["type"] = "string"  # Gemini's enum is a string format
        for bound, plain in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
            if isinstance(node.get(bound), (int, float)) and not isinstance(node[bound], bool):
                node.setdefault(plain, node.pop(bound))
                self.warn(path, f"{bound} is taken as {plain} (inclusive)")
        enum = node.get("enum")
        if isinstance(enum, list) and not all(isinstance(v, str) for v in enum):
            kept = [v for v in enum if isinstance(v, str)]
            self.warn(path, "enum keeps its string values only")
            if kept:
                node["enum"] = kept
            else:
                del node["enum"]
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key not in _GEMINI:
                self.warn(path, f"{key} is not supported; dropped")
            elif not _GEMINI_SHAPE.get(key, _any)(value):
                self.warn(path, f"{key} has a value of the wrong kind; dropped")
            elif key == "properties" and isinstance(value, dict):
                out[key] = {k: self.gemini(v, f"{path}.properties.{k}") for k, v in value.items()}
            elif key == "items":
                out[key] = self.gemini(value, f"{path}.items")
            elif key == "anyOf":
                out[key] = [self.gemini(v, f"{path}.anyOf[{i}]") for i, v in enumerate(value)]
            else:
                out[key] = value
        required = out.get("required")
        if isinstance(required, list):
            properties = out.get("properties")
            names = properties if isinstance(properties, dict) else {}
            kept = [r for r in required if isinstance(r, str) and r in names]
            if len(kept) != len(required):
                self.warn(path, "required names a property that is not in properties; dropped")
            out["required"] = kept
        return out

    @staticmethod
    def _nullable(node: dict[str, Any]) -> None:
        """A list of types becomes one type or ``anyOf``; ``null`` as a type or a
        branch becomes ``nullable: true``."""
        types = node.get("type")
        if isinstance(types, list):
            rest = [t for t in types if t != "null"]
            if len(rest) != len(types):
                node["nullable"] = True
            del node["type"]
            if len(rest) == 1:
                node["type"] = rest[0]
            elif rest and "anyOf" not in node:
                node["anyOf"] = [{"type": t} for t in rest]
        for key in ("anyOf", "oneOf"):
            branches = node.get(key)
            if isinstance(branches, list) and {"type": "null"} in branches:
                rest = [b for b in branches if b != {"type": "null"}]
                node["nullable"] = True
                if rest:
                    node[key] = rest
                else:
                    del node[key]
