"""Hypothesis strategies for the cross-serve property tests: server specs and request programs.

``specs()`` draws a server spec (``spec_common.py`` describes the format): tools with input
schemas from a JSON Schema subset both implementations support (string, integer, number,
boolean, enum, array, nested object; ``required``, ``default``, ``additionalProperties``,
bounds, ``multipleOf``, ``uniqueItems``), each with a behaviour; static text and blob
resources; one-variable templates; prompts with required and optional arguments.

``programs(spec, era)`` draws what a client does with it: calls with valid arguments, with
arguments broken on purpose (a required property dropped, a value of the wrong type, an
unknown property, integral floats for integers) and with arbitrary JSON objects; unknown
tools; reads of static, templated and unknown URIs; prompts with and without their required
arguments and unknown prompts; pings; and notifications interleaved between the requests
(``notifications/roots/list_changed`` in the legacy era, ``notifications/cancelled`` for a
request id that was never sent). The oracle for what is valid is never the strategy: each
server decides, and the tests compare the decisions.
"""

from __future__ import annotations

import base64
import string
from typing import Any

from hypothesis import strategies as st
from strategies import json_objects

__all__ = ("programs", "specs", "valid_value")

_NAME = st.text(string.ascii_lowercase + string.digits + "_", min_size=1, max_size=6)
#: Property names: identifiers, and some that are not (any string is a valid property name).
_PROP = st.one_of(_NAME, st.sampled_from(["with-dash", "dotted.name", "sp ace", "ünï", "$ref"]))
_WORDS = st.text(string.ascii_letters + " .,-", max_size=20)
_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_LEVELS = ("debug", "info", "notice", "warning", "error")


@st.composite
def _scalar_schema(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["string", "integer", "number", "boolean", "enum"]))
    schema: dict[str, Any]
    if kind == "string":
        schema = {"type": "string"}
        if draw(st.booleans()):
            schema["minLength"] = draw(st.integers(0, 3))
        if draw(st.booleans()):
            schema["maxLength"] = draw(st.integers(schema.get("minLength", 0), 8))
    elif kind == "integer":
        schema = {"type": "integer"}
        if draw(st.booleans()):
            schema["minimum"] = draw(st.integers(-50, 50))
        if draw(st.booleans()):
            schema["maximum"] = draw(st.integers(schema.get("minimum", -50), 100))
        if draw(st.integers(0, 3)) == 0:
            schema["multipleOf"] = draw(st.integers(2, 5))
    elif kind == "number":
        schema = {"type": "number"}
        if draw(st.booleans()):
            schema["minimum"] = draw(st.sampled_from([-1.5, 0, 0.5, 10]))
        if draw(st.booleans()):
            schema["exclusiveMaximum"] = draw(st.sampled_from([100, 1e6, 12.25]))
    elif kind == "boolean":
        schema = {"type": "boolean"}
    else:
        values = draw(
            st.lists(st.one_of(_NAME, st.integers(-3, 3)), min_size=1, max_size=4, unique=True)
        )
        schema = {"enum": values}
        if all(isinstance(v, str) for v in values) and draw(st.booleans()):
            schema["type"] = "string"
    if draw(st.integers(0, 3)) == 0:
        schema["description"] = draw(_WORDS)
    return schema


def _children(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def array_or_object(draw: st.DrawFn) -> dict[str, Any]:
        if draw(st.booleans()):
            schema: dict[str, Any] = {"type": "array", "items": draw(children)}
            if draw(st.booleans()):
                schema["minItems"] = draw(st.integers(0, 2))
            if draw(st.booleans()):
                schema["maxItems"] = draw(st.integers(schema.get("minItems", 0), 4))
            if draw(st.integers(0, 3)) == 0:
                schema["uniqueItems"] = True
            return schema
        return draw(_object_schema(children, max_props=3))

    return array_or_object()


@st.composite
def _object_schema(
    draw: st.DrawFn, children: st.SearchStrategy[dict[str, Any]], max_props: int = 5
) -> dict[str, Any]:
    names = draw(st.lists(_PROP, max_size=max_props, unique=True))
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name in names:
        prop = dict(draw(children))
        if draw(st.booleans()):
            required.append(name)
        elif draw(st.integers(0, 2)) == 0:
            default = draw(valid_value(prop))
            if default is not None:
                prop["default"] = default
        properties[name] = prop
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if draw(st.booleans()):
        schema["additionalProperties"] = False
    return schema


_schemas = st.recursive(_scalar_schema(), _children, max_leaves=6)


def input_schemas() -> st.SearchStrategy[dict[str, Any]]:
    return _object_schema(_schemas)


def valid_value(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values meant to satisfy ``schema`` (the servers judge; this only aims)."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        lo = schema.get("minLength", 0)
        chars = st.characters(exclude_categories=("Cs",))
        return st.text(chars, min_size=lo, max_size=max(lo, schema.get("maxLength", 12)))
    if kind == "integer":
        step = schema.get("multipleOf", 1)
        lo, hi = schema.get("minimum", -(10**6)), schema.get("maximum", 10**6)
        first, last = -(-lo // step), hi // step
        if first > last:  # nothing fits; the servers will say so
            return st.just(lo)
        ints = st.integers(first, last).map(lambda i: i * step)
        # 2020-12: an integer is any number with a zero fractional part, so 3.0 is one too.
        return st.one_of(ints, ints.map(float)) if lo <= 0 <= hi else ints
    if kind == "number":
        lo = schema.get("minimum", -1e9)
        hi = schema.get("exclusiveMaximum", 1e9)
        return st.one_of(
            st.floats(lo, hi, exclude_max=True, allow_nan=False),
            st.integers(int(lo) + 1, int(hi) - 1),
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        lo = schema.get("minItems", 0)
        hi = schema.get("maxItems", 4)
        return st.lists(valid_value(schema["items"]), min_size=lo, max_size=hi)
    if kind == "object":
        return _valid_object(schema)
    return st.none()


@st.composite
def _valid_object(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    required = set(schema.get("required", []))
    for name, prop in schema.get("properties", {}).items():
        if name in required or draw(st.booleans()):
            out[name] = draw(valid_value(prop))
    return out


_WRONG = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(-2, 2), _TEXT, st.just([1, "a"]),
    st.just({"k": "v"}),
)  # fmt: skip


@st.composite
def arguments(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    """Arguments for a tool: valid, broken in one place, or arbitrary."""
    how = draw(st.sampled_from(["valid", "valid", "drop", "wrong", "extra", "random"]))
    if how == "random":
        return draw(json_objects)
    args = draw(_valid_object(schema))
    if how == "drop" and schema.get("required"):
        args.pop(draw(st.sampled_from(schema["required"])), None)
    elif how == "wrong" and schema.get("properties"):
        args[draw(st.sampled_from(sorted(schema["properties"])))] = draw(_WRONG)
    elif how == "extra":
        args[draw(_PROP)] = draw(_WRONG)
    return args


_BEHAVIOURS = ("echo", "echo", "structured", "error", "image", "progress", "log")


@st.composite
def _tool(draw: st.DrawFn, name: str) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "name": name,
        "inputSchema": draw(input_schemas()),
        "behaviour": draw(st.sampled_from(_BEHAVIOURS)),
    }
    if draw(st.booleans()):
        tool["description"] = draw(_WORDS)
    if tool["behaviour"] in ("progress", "log"):
        tool["count"] = draw(st.integers(1, 3))
    if tool["behaviour"] == "log":
        tool["level"] = draw(st.sampled_from(_LEVELS))
    return tool


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    tool_names = draw(st.lists(_NAME, min_size=1, max_size=5, unique=True))
    tools = [draw(_tool(f"tool_{n}")) for n in tool_names]
    resources: list[dict[str, Any]] = []
    for n in draw(st.lists(_NAME, max_size=3, unique=True)):
        res: dict[str, Any] = {"uri": f"res://{n}", "name": f"res-{n}"}
        if draw(st.booleans()):
            res["blob"] = base64.b64encode(draw(st.binary(max_size=12))).decode("ascii")
        else:
            res["text"] = draw(_TEXT)
            if draw(st.booleans()):
                res["mimeType"] = "text/plain"
        resources.append(res)
    templates = [
        {"uriTemplate": f"test://{{{var}}}/{n}", "name": f"tpl-{n}", "mimeType": "text/plain"}
        for n, var in draw(
            st.lists(st.tuples(_NAME, st.sampled_from(["x", "id", "key"])), max_size=2).map(
                lambda pairs: list({n: (n, v) for n, v in pairs}.values())
            )
        )
    ]
    if not resources and not templates:
        resources.append({"uri": "res://only", "name": "only", "text": "only"})
    prompts = []
    for n in draw(st.lists(_NAME, min_size=1, max_size=3, unique=True)):
        arg_names = draw(st.lists(_NAME, max_size=3, unique=True))
        # mcpwire derives prompt arguments from a signature: identifiers only.
        args = [{"name": "arg_" + a, "required": draw(st.booleans())} for a in arg_names]
        text = " ".join(["say"] + ["{" + a["name"] + "}" for a in args])
        prompt: dict[str, Any] = {
            "name": f"prompt_{n}",
            "arguments": args,
            "messages": [{"role": draw(st.sampled_from(["user", "assistant"])), "text": text}],
        }
        if draw(st.booleans()):
            prompt["description"] = draw(_WORDS)
        prompts.append(prompt)
    return {
        "pageSize": draw(st.sampled_from([1, 2, 3, 100])),
        "tools": tools,
        "resources": resources,
        "templates": templates,
        "prompts": prompts,
    }


_VALUE = st.text(string.ascii_letters + string.digits + "-._~", min_size=1, max_size=8)


@st.composite
def _op(draw: st.DrawFn, spec: dict[str, Any], era: str) -> list[Any]:
    kinds = ["call", "call", "call", "call", "unknown_tool", "read", "read", "prompt", "prompt"]
    kinds += ["cancel_unknown", "list", "ping"]
    if era == "legacy":
        kinds += ["roots_changed"]  # 2026-07-28 has no roots/list_changed (changelog)
    kind = draw(st.sampled_from(kinds))
    if kind == "call":
        tool = draw(st.sampled_from(spec["tools"]))
        return ["call", tool["name"], draw(arguments(tool["inputSchema"])), draw(st.booleans())]
    if kind == "unknown_tool":
        return ["call", "no_such_tool_" + draw(_NAME), {}, False]
    if kind == "read":
        choices = [r["uri"] for r in spec["resources"]]
        for tpl in spec["templates"]:
            head, _, rest = tpl["uriTemplate"].partition("{")
            choices.append(head + draw(_VALUE) + rest.partition("}")[2])
        choices.append("res://missing-" + draw(_NAME))
        choices.append("test://a/b/" + draw(_NAME))
        return ["read", draw(st.sampled_from(choices))]
    if kind == "prompt":
        if draw(st.integers(0, 5)) == 0:
            return ["prompt", "no_such_prompt", {}]
        prompt = draw(st.sampled_from(spec["prompts"]))
        args = {a["name"]: draw(_TEXT) for a in prompt["arguments"] if draw(st.booleans())}
        if draw(st.integers(0, 3)) == 0:
            args["unlisted_" + draw(_NAME)] = draw(_TEXT)
        return ["prompt", prompt["name"], args]
    if kind == "list":
        return ["list", draw(st.sampled_from(["tools", "resources", "templates", "prompts"]))]
    return [kind]


def programs(spec: dict[str, Any], era: str) -> st.SearchStrategy[list[list[Any]]]:
    """A request program: lists first (a client learns what is there), then random operations."""
    first = [["list", k] for k in ("tools", "resources", "templates", "prompts")]
    return st.lists(_op(spec, era), min_size=3, max_size=14).map(lambda ops: first + ops)
