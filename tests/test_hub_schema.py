"""Tool input schemas fitted to LLM providers (pain point #24, ``_hub_schema``).

The schemas come from the reference SDK's own generator (pydantic models with
optional and recursive fields), hand-made corner cases, and hypothesis: random
schemas with acyclic ``$defs`` keep their meaning when inlined (checked with
mcpwire's validator on random instances), the Gemini form holds only the
keywords Gemini takes, and the server's schema is never changed.
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel
from strategies import json_values

from mcpwire import HubTool, Tool
from mcpwire._hub_schema import MAX_NODES, PROVIDERS, fit_schema
from mcpwire._schema import validate

GEMINI_KEYWORDS = {
    "type", "format", "title", "description", "nullable", "enum", "maxItems", "minItems",
    "properties", "required", "minProperties", "maxProperties", "minLength", "maxLength",
    "pattern", "example", "anyOf", "propertyOrdering", "default", "items", "minimum", "maximum",
}  # fmt: skip


def schema_nodes(schema: Any) -> list[dict[str, Any]]:
    """Every schema node of a fitted (reference-free) schema, by its keywords."""
    found = [schema] if isinstance(schema, dict) else []
    if isinstance(schema, dict):
        for key in ("items", "additionalProperties", "not"):
            found += schema_nodes(schema.get(key))
        for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            for branch in schema.get(key) or []:
                found += schema_nodes(branch)
        for key in ("properties", "patternProperties"):
            for sub in (schema.get(key) or {}).values():
                found += schema_nodes(sub)
    return found


class Address(BaseModel):
    city: str
    zip: str | None = None


class Node(BaseModel):
    value: int
    next: Node | None = None


async def sdk_schema() -> dict[str, Any]:
    """What the reference SDK publishes for a tool taking nested models."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("schemas")

    @server.tool()
    def ship(address: Address, tree: Node, note: str | None = None) -> str:
        return "ok"

    (tool,) = await server.list_tools()
    schema: dict[str, Any] = tool.input_schema
    return schema


@pytest.mark.anyio
async def test_the_reference_sdks_schema_fits_gemini(anyio_backend: str) -> None:
    schema = await sdk_schema()
    before = copy.deepcopy(schema)
    assert "$defs" in schema  # what Gemini refuses: references, null unions
    fitted = fit_schema(schema, "gemini")
    assert schema == before  # the server's schema is untouched
    text = json.dumps(fitted.schema)
    assert "$ref" not in text and "$defs" not in text and '"null"' not in text
    for node in schema_nodes(fitted.schema):
        assert set(node) <= GEMINI_KEYWORDS, node
    props = fitted.schema["properties"]
    assert props["address"]["properties"]["city"] == {"title": "City", "type": "string"}
    assert props["address"]["properties"]["zip"]["nullable"] is True
    assert props["note"]["type"] == "string" and props["note"]["nullable"] is True
    # The recursive Node: where it refers to itself it is cut to its type, said so.
    assert props["tree"]["properties"]["value"] == {"title": "Value", "type": "integer"}
    assert props["tree"]["properties"]["next"] == {
        "type": "object",
        "nullable": True,
        "default": None,
    }
    assert any("recursive" in w for w in fitted.warnings)


def test_gemini_translations_and_warnings() -> None:
    schema = {
        "type": "object",
        "properties": {
            "kind": {"const": "x"},
            "n": {"type": ["integer", "null"], "exclusiveMinimum": 0},
            "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
            "one": {"allOf": [{"type": "string", "maxLength": 3}]},
            "level": {"enum": ["low", 2, "high"]},
            "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
            # Property names that look like keywords are names, not keywords.
            "$ref": {"type": "string"},
            "type": {"type": "boolean"},
        },
        "required": ["kind", "ghost"],
        "additionalProperties": False,
    }
    fitted = fit_schema(schema, "gemini")
    props = fitted.schema["properties"]
    assert props["kind"] == {"enum": ["x"], "type": "string"}
    assert props["n"] == {"nullable": True, "type": "integer", "minimum": 0}
    assert props["either"] == {"anyOf": [{"type": "string"}, {"type": "integer"}]}
    assert props["one"] == {"type": "string", "maxLength": 3}
    assert props["level"] == {"enum": ["low", "high"]}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["$ref"] == {"type": "string"} and props["type"] == {"type": "boolean"}
    assert fitted.schema["required"] == ["kind"]
    assert "additionalProperties" not in fitted.schema
    assert sorted(fitted.warnings) == sorted(
        [
            "$.properties.n: exclusiveMinimum is taken as minimum (inclusive)",
            "$.properties.level: enum keeps its string values only",
            "$.properties.tags: uniqueItems is not supported; dropped",
            "$: additionalProperties is not supported; dropped",
            "$: required names a property that is not in properties; dropped",
        ]
    )


def test_other_providers_get_an_object_at_the_top() -> None:
    for provider in ("openai", "anthropic"):
        assert fit_schema({}, provider).schema == {"type": "object", "properties": {}}
        odd = fit_schema({"type": "string"}, provider)
        assert odd.schema == {"type": "string"} and "not an object" in odd.warnings[0]
    with pytest.raises(ValueError, match="provider"):
        fit_schema({}, "llama")


def test_references_that_do_not_resolve_and_sibling_keywords() -> None:
    schema = {
        "type": "object",
        "definitions": {"Id": {"type": "string", "description": "an id"}},
        "properties": {
            "a": {"$ref": "#/definitions/Id", "description": "the a"},
            "b": {"$ref": "https://example.com/schema"},
            "c": {"$ref": "#/properties/a"},
            "t": {"type": "array", "items": [{"$ref": "#/definitions/Id"}]},  # tuple form
        },
        "dependencies": {"a": {"$ref": "#/definitions/Id"}, "c": ["a"]},  # draft 7
    }
    fitted = fit_schema(schema, "anthropic")
    props = fitted.schema["properties"]
    assert props["t"]["items"] == [{"type": "string", "description": "an id"}]
    assert fitted.schema["dependencies"] == {
        "a": {"type": "string", "description": "an id"},
        "c": ["a"],
    }
    assert props["a"] == {"type": "string", "description": "the a"}
    assert props["b"] == {}
    assert props["c"] == {"type": "string", "description": "the a"}
    assert "definitions" not in fitted.schema
    assert fitted.warnings == ("$.properties.b: $ref 'https://example.com/schema' does not "
                               "resolve within the schema; taken as any value",)  # fmt: skip


def test_shared_references_cannot_blow_up() -> None:
    """Thirty definitions each using the next twice would expand to 2**30
    nodes; the expansion stops near ``MAX_NODES`` and says so."""
    defs = {
        f"D{i}": {"type": "object", "properties": {"l": {"$ref": f"#/$defs/D{i + 1}"},
                                                   "r": {"$ref": f"#/$defs/D{i + 1}"}}}
        for i in range(30)
    }  # fmt: skip
    defs["D30"] = {"type": "string"}
    schema = {"type": "object", "$defs": defs, "properties": {"x": {"$ref": "#/$defs/D0"}}}
    started = time.monotonic()
    fitted = fit_schema(schema, "gemini")
    assert time.monotonic() - started < 10
    assert len(json.dumps(fitted.schema)) < 100 * MAX_NODES
    assert any(f"past {MAX_NODES} nodes" in w for w in fitted.warnings)


def test_hub_tool_definition_for_a_provider() -> None:
    schema = {"type": "object", "properties": {"q": {"type": ["string", "null"]}}}
    tool = HubTool("s__search", "s", Tool("search", schema, description="Search."))
    assert tool.definition()["inputSchema"] is schema
    fitted = tool.definition("gemini")["inputSchema"]
    assert fitted == {"type": "object", "properties": {"q": {"nullable": True, "type": "string"}}}
    assert schema["properties"]["q"]["type"] == ["string", "null"]


# -- properties -------------------------------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "type", "$ref", "items"])


def leaves() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.just({"type": "string"}),
        st.integers(-3, 3).map(lambda k: {"type": "integer", "minimum": k}),
        st.just({"type": ["string", "null"]}),
        st.lists(st.sampled_from(["x", "y", 1]), min_size=1, max_size=3).map(lambda v: {"enum": v}),
        st.sampled_from(["x", 1, None]).map(lambda v: {"const": v}),
    )


@st.composite
def schemas_with_defs(draw: st.DrawFn) -> dict[str, Any]:
    """A top-level object schema whose ``$defs`` reference only earlier ones."""
    defs: dict[str, Any] = {}

    def node(depth: int) -> Any:
        options = [leaves()]
        if defs:
            options.append(st.sampled_from(sorted(defs)).map(lambda d: {"$ref": f"#/$defs/{d}"}))
        if depth < 2:
            options.append(
                st.builds(
                    lambda props, req: {
                        "type": "object",
                        "properties": props,
                        "required": sorted(set(req) & set(props)),
                    },
                    st.dictionaries(
                        NAMES, st.deferred(lambda: node_strategy(depth + 1)), max_size=3
                    ),
                    st.lists(NAMES, max_size=3),
                )
            )
            options.append(
                st.lists(st.deferred(lambda: node_strategy(depth + 1)), min_size=1, max_size=3).map(
                    lambda branches: {"anyOf": branches}
                )
            )
        return draw(st.one_of(options))

    def node_strategy(depth: int) -> st.SearchStrategy[Any]:
        return st.just(None).map(lambda _: node(depth))

    for i in range(draw(st.integers(0, 3))):
        defs[f"D{i}"] = node(1)
    props = {name: node(1) for name in draw(st.lists(NAMES, max_size=3, unique=True))}
    return {"type": "object", "$defs": defs, "properties": props}


@settings(max_examples=150, deadline=None)
@given(schema=schemas_with_defs(), instances=st.lists(json_values, max_size=5), data=st.data())
def test_inlining_keeps_the_meaning(
    schema: dict[str, Any], instances: list[Any], data: Any
) -> None:
    """With acyclic references, the fitted schema (anthropic: inlining and the
    top-level object only) accepts exactly the instances the original does."""
    before = copy.deepcopy(schema)
    fitted = fit_schema(schema, "anthropic")
    assert schema == before
    assert not fitted.warnings
    assert all("$ref" not in node for node in schema_nodes(fitted.schema))
    props = list(schema["properties"])
    values = data.draw(st.lists(json_values, min_size=len(props), max_size=len(props)))
    objects = [dict(zip(props, values, strict=True))]
    for instance in [*instances, *objects]:
        assert (not validate(instance, schema)) == (not validate(instance, fitted.schema)), instance


@settings(max_examples=150, deadline=None)
@given(schema=schemas_with_defs())
@example(  # a $ref to a one-branch anyOf, inside a one-branch anyOf: both merged at once
    schema={
        "type": "object",
        "$defs": {"D0": {"anyOf": [{"type": "string"}]}},
        "properties": {"a": {"anyOf": [{"$ref": "#/$defs/D0"}]}},
    }
)
def test_the_gemini_form_holds_only_gemini_keywords(schema: dict[str, Any]) -> None:
    before = copy.deepcopy(schema)
    fitted = fit_schema(schema, "gemini")
    assert schema == before
    for node in schema_nodes(fitted.schema):
        assert set(node) <= GEMINI_KEYWORDS, node
        kind = node.get("type")
        assert kind is None or (isinstance(kind, str) and kind != "null"), node
        assert node.get("anyOf") != []
        if "required" in node:
            assert set(node["required"]) <= set(node.get("properties", {}))
    again = fit_schema(fitted.schema, "gemini")
    assert again.schema == fitted.schema


KEYWORDS = st.sampled_from(
    ["$ref", "$defs", "definitions", "type", "properties", "items", "anyOf", "oneOf", "allOf",
     "const", "enum", "required", "exclusiveMinimum", "nullable", "additionalProperties", "a"]
)  # fmt: skip
REFS = st.sampled_from(["#", "#/$defs/a", "#/properties/a", "#/definitions/x/y", "#/a/0", "x"])
junk = st.recursive(
    st.one_of(json_values, REFS),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYWORDS, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(schema=st.dictionaries(KEYWORDS, junk, max_size=5), provider=st.sampled_from(PROVIDERS))
@example(schema={"const": 1, "enum": 5}, provider="gemini")
@example(schema={"properties": {"a": {"anyOf": [{"type": "null"}]}}}, provider="gemini")
@example(schema={"type": ["string", 5], "items": [1], "required": "a"}, provider="gemini")
@example(schema={"$ref": "#", "properties": {"a": {"$ref": "#/properties/a"}}}, provider="openai")
def test_any_schema_a_server_sends_is_fitted_without_failing(
    schema: dict[str, Any], provider: str
) -> None:
    """A server's schema may be anything JSON: fitting never raises, ends, and
    gives JSON (bad input gets warnings, not an exception that would take the
    whole tool list down)."""
    before = copy.deepcopy(schema)
    fitted = fit_schema(schema, provider)
    assert schema == before
    json.dumps(fitted.schema, allow_nan=False)
    assert isinstance(fitted.schema, dict)
    if provider == "gemini":
        for node in schema_nodes(fitted.schema):
            assert set(node) <= GEMINI_KEYWORDS, node
            kind = node.get("type")
            assert kind is None or kind in ("string", "number", "integer", "boolean", "array",
                                            "object"), node  # fmt: skip
