"""Tests for mcpwire._schema (derivation, conversion) and mcpwire._jsonschema (validation)."""

# Optional[X] and Union[...] are spelled out on purpose: they are annotations under test.
# ruff: noqa: UP045

import collections.abc
import dataclasses
import enum
import functools
import inspect
import math
import sys
import typing
from typing import Annotated, Any, Literal, NewType, Optional, TypedDict, Union

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpwire import _schema
from mcpwire._schema import (
    Field,
    ParamInfo,
    Validator,
    compile,
    convert_arguments,
    docstring_summary,
    function_input_schema,
    return_schema,
    to_jsonable,
    validate,
)

if sys.version_info >= (3, 11):
    from typing import NotRequired, Required
else:  # pragma: no cover
    from typing_extensions import NotRequired, Required


# --------------------------------------------------------------------------- fixtures


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Mixed(enum.Enum):
    A = "a"
    B = 1


class Bad(enum.Enum):
    A = (1, 2)


@dataclasses.dataclass
class Point:
    """A point in the plane.

    Attributes:
        x: The abscissa.
    """

    x: int
    y: int = 0
    tags: list[str] = dataclasses.field(default_factory=list)
    label: Annotated[str, "Shown next to the point"] = ""
    hidden: int = dataclasses.field(default=0, init=False)


@dataclasses.dataclass(frozen=True)
class Pair:
    left: int
    right: str = dataclasses.field(default="r", metadata={"description": "The right side"})


@dataclasses.dataclass
class Node:
    value: int
    children: "list[Node]" = dataclasses.field(default_factory=list)


@dataclasses.dataclass
class Tree:
    root: "Branch"


@dataclasses.dataclass
class Branch:
    tree: "Optional[Tree]" = None
    label: str = ""


@dataclasses.dataclass
class Line:
    start: Point
    end: Point


class Movie(TypedDict):
    title: str
    year: int


class Partial(TypedDict, total=False):
    title: Required[str]
    year: int


class WithNotRequired(TypedDict):
    title: str
    year: NotRequired[int]


class Chain(TypedDict):
    next: "Optional[Chain]"


class Ctx:
    """A request-context stand-in that must not appear in schemas."""


class SubCtx(Ctx):
    pass


UserId = NewType("UserId", int)


def schema_of(annotation: object) -> dict[str, Any]:
    """The property schema ``function_input_schema`` derives for one parameter ``x``."""

    def fn(x):  # type: ignore[no-untyped-def]
        return x

    fn.__annotations__ = {"x": annotation}
    schema, _ = function_input_schema(fn)
    prop = schema["properties"]["x"]
    if "$defs" in schema:
        prop = {**prop, "$defs": schema["$defs"]}
    return prop


def make_fn(params: list[inspect.Parameter]) -> Any:
    def fn(**kwargs: object) -> dict[str, object]:
        return kwargs

    fn.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    fn.__annotations__ = {
        p.name: p.annotation for p in params if p.annotation is not inspect.Parameter.empty
    }
    return fn


OBJ_POINT = {
    "type": "object",
    "description": "A point in the plane.",
    "properties": {
        "x": {"type": "integer", "description": "The abscissa."},
        "y": {"type": "integer", "default": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "label": {"type": "string", "description": "Shown next to the point", "default": ""},
    },
    "required": ["x"],
    "additionalProperties": False,
}

# --------------------------------------------------------------------------- annotations

ANNOTATION_CASES: list[tuple[object, dict[str, Any]]] = [
    (str, {"type": "string"}),
    (int, {"type": "integer"}),
    (float, {"type": "number"}),
    (bool, {"type": "boolean"}),
    (None, {"type": "null"}),
    (type(None), {"type": "null"}),
    (Any, {}),
    (object, {}),
    (list[int], {"type": "array", "items": {"type": "integer"}}),
    (typing.List[int], {"type": "array", "items": {"type": "integer"}}),  # noqa: UP006
    (collections.abc.Sequence[str], {"type": "array", "items": {"type": "string"}}),
    (typing.Sequence[str], {"type": "array", "items": {"type": "string"}}),
    (list, {"type": "array"}),
    (list[Any], {"type": "array"}),
    (tuple, {"type": "array"}),
    (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
    (
        tuple[int, str],
        {
            "type": "array",
            "prefixItems": [{"type": "integer"}, {"type": "string"}],
            "minItems": 2,
            "maxItems": 2,
        },
    ),
    (tuple[()], {"type": "array", "maxItems": 0}),
    (set[str], {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
    (frozenset[int], {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}),
    (set, {"type": "array", "uniqueItems": True}),
    (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
    (dict[str, Any], {"type": "object"}),
    (dict, {"type": "object"}),
    (
        collections.abc.Mapping[str, float],
        {"type": "object", "additionalProperties": {"type": "number"}},
    ),
    (
        dict[Literal["a", "b"], int],
        {
            "type": "object",
            "propertyNames": {"enum": ["a", "b"]},
            "additionalProperties": {"type": "integer"},
        },
    ),
    (Optional[int], {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
    (int | None, {"anyOf": [{"type": "integer"}, {"type": "null"}]}),
    (None | int, {"anyOf": [{"type": "null"}, {"type": "integer"}]}),
    (
        Union[int, str, None],
        {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]},
    ),
    (
        Union[int, Optional[list[str]]],
        {
            "anyOf": [
                {"type": "integer"},
                {"type": "array", "items": {"type": "string"}},
                {"type": "null"},
            ]
        },
    ),
    (Union[int, Any], {}),
    (Optional[Any], {}),
    (Union[list[int], typing.List[int]], {"type": "array", "items": {"type": "integer"}}),  # noqa: UP006
    (Literal["a", "b"], {"type": "string", "enum": ["a", "b"]}),
    (Literal[1, 2], {"type": "integer", "enum": [1, 2]}),
    (Literal[1, 2.5], {"type": "number", "enum": [1, 2.5]}),
    (Literal[True], {"type": "boolean", "enum": [True]}),
    (Literal["a", 1], {"enum": ["a", 1]}),
    (Literal["a", None], {"enum": ["a", None]}),
    (Literal[Color.RED], {"type": "string", "enum": ["red"]}),
    (Color, {"type": "string", "enum": ["red", "green"]}),
    (Level, {"type": "integer", "enum": [1, 2]}),
    (Mixed, {"enum": ["a", 1]}),
    (UserId, {"type": "integer"}),
    (Annotated[int, "How many"], {"type": "integer", "description": "How many"}),
    (
        Annotated[str, Field(min_length=1, max_length=5, pattern="^a", title="T")],
        {"type": "string", "minLength": 1, "maxLength": 5, "pattern": "^a", "title": "T"},
    ),
    (
        Annotated[list[int], Field(min_length=1, max_length=3)],
        {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3},
    ),
    (
        Annotated[dict[str, int], Field(max_length=3)],
        {"type": "object", "additionalProperties": {"type": "integer"}, "maxProperties": 3},
    ),
    (
        Annotated[float, Field(minimum=0, maximum=1, examples=[0.5], description="Ratio")],
        {"type": "number", "minimum": 0, "maximum": 1, "examples": [0.5], "description": "Ratio"},
    ),
    (
        Annotated[Optional[str], Field(max_length=4)],
        {"anyOf": [{"type": "string"}, {"type": "null"}], "maxLength": 4},
    ),
    (
        list[Annotated[int, Field(minimum=0)]],
        {"type": "array", "items": {"type": "integer", "minimum": 0}},
    ),
    (Annotated[Annotated[int, "inner"], "outer"], {"type": "integer", "description": "outer"}),
    (Point, OBJ_POINT),
    (
        Pair,
        {
            "type": "object",
            "properties": {
                "left": {"type": "integer"},
                "right": {"type": "string", "description": "The right side", "default": "r"},
            },
            "required": ["left"],
            "additionalProperties": False,
        },
    ),
    (
        Line,
        {
            "type": "object",
            "properties": {"start": OBJ_POINT, "end": OBJ_POINT},
            "required": ["start", "end"],
            "additionalProperties": False,
        },
    ),
    (
        Movie,
        {
            "type": "object",
            "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
            "required": ["title", "year"],
            "additionalProperties": False,
        },
    ),
    (
        Partial,
        {
            "type": "object",
            "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
            "required": ["title"],
            "additionalProperties": False,
        },
    ),
    (
        WithNotRequired,
        {
            "type": "object",
            "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
            "required": ["title"],
            "additionalProperties": False,
        },
    ),
    (
        Node,
        {
            "$ref": "#/$defs/Node",
            "$defs": {
                "Node": {
                    "type": "object",
                    "properties": {
                        "value": {"type": "integer"},
                        "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                    },
                    "required": ["value"],
                    "additionalProperties": False,
                }
            },
        },
    ),
    (
        Tree,
        {
            "$ref": "#/$defs/Tree",
            "$defs": {
                "Tree": {
                    "type": "object",
                    "properties": {
                        "root": {
                            "type": "object",
                            "properties": {
                                "tree": {
                                    "anyOf": [{"$ref": "#/$defs/Tree"}, {"type": "null"}],
                                    "default": None,
                                },
                                "label": {"type": "string", "default": ""},
                            },
                            "additionalProperties": False,
                        }
                    },
                    "required": ["root"],
                    "additionalProperties": False,
                }
            },
        },
    ),
    (
        Chain,
        {
            "$ref": "#/$defs/Chain",
            "$defs": {
                "Chain": {
                    "type": "object",
                    "properties": {
                        "next": {"anyOf": [{"$ref": "#/$defs/Chain"}, {"type": "null"}]}
                    },
                    "required": ["next"],
                    "additionalProperties": False,
                }
            },
        },
    ),
]


@pytest.mark.parametrize(("annotation", "expected"), ANNOTATION_CASES, ids=repr)
def test_annotation_schema(annotation: object, expected: dict[str, Any]) -> None:
    assert schema_of(annotation) == expected


@pytest.mark.parametrize(("annotation", "expected"), ANNOTATION_CASES, ids=repr)
def test_derived_schemas_are_valid_2020_12(annotation: object, expected: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator.check_schema(expected)


def test_whole_input_schema() -> None:
    def add(a: int, b: float = 1.5, *, label: Optional[str] = None) -> float:
        """Add two numbers."""
        return a + b

    schema, params = function_input_schema(add)
    assert schema == {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "number", "default": 1.5},
            "label": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        },
        "required": ["a"],
        "additionalProperties": False,
    }
    assert list(params) == ["a", "b", "label"]
    a, b, label = params["a"], params["b"], params["label"]
    assert isinstance(a, ParamInfo)
    assert (a.name, a.annotation, a.required, a.default) == (
        "a",
        int,
        True,
        inspect.Parameter.empty,
    )
    assert (b.required, b.default, b.converter) == (False, 1.5, None)
    assert label.annotation == Optional[str]
    assert label.schema == schema["properties"]["label"]


def test_no_parameters_has_no_required() -> None:
    def ping() -> None:
        pass

    assert function_input_schema(ping) == (
        {"type": "object", "properties": {}, "additionalProperties": False},
        {},
    )


def test_missing_annotation_is_any() -> None:
    def f(x, y: int = 2):  # type: ignore[no-untyped-def]
        return x

    schema, params = function_input_schema(f)
    assert schema["properties"] == {"x": {}, "y": {"type": "integer", "default": 2}}
    assert params["x"].annotation is Any
    assert params["x"].converter is None


def test_non_recursive_class_used_twice_is_inlined() -> None:
    def f(a: Point, b: list[Point]) -> None:
        pass

    schema, _ = function_input_schema(f)
    assert "$defs" not in schema
    assert schema["properties"]["a"] == OBJ_POINT
    assert schema["properties"]["b"] == {"type": "array", "items": OBJ_POINT}


def test_recursive_class_used_twice_has_one_def() -> None:
    def f(a: Node, b: Optional[Node] = None) -> None:
        pass

    schema, _ = function_input_schema(f)
    assert schema["properties"]["a"] == {"$ref": "#/$defs/Node"}
    assert schema["properties"]["b"] == {
        "anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}],
        "default": None,
    }
    assert list(schema["$defs"]) == ["Node"]
    v = jsonschema.Draft202012Validator(schema)
    instance = {"a": {"value": 1, "children": [{"value": 2, "children": []}]}}
    assert v.is_valid(instance)
    assert validate(instance, schema) == []
    assert validate({"a": {"value": 1, "children": [{"value": "x"}]}}, schema) == [
        '$.a.children[0].value: "x" is not of type "integer"'
    ]


def test_mutual_recursion_entered_from_the_other_side() -> None:
    def f(t: Tree, b: Branch) -> None:
        pass

    schema, _ = function_input_schema(f)
    assert schema["properties"]["t"] == {"$ref": "#/$defs/Tree"}
    # Branch was expanded inline inside Tree's definition, and is inlined again here.
    assert schema["properties"]["b"]["type"] == "object"
    assert list(schema["$defs"]) == ["Tree"]
    jsonschema.Draft202012Validator.check_schema(schema)
    instance = {"t": {"root": {"tree": {"root": {}}}}, "b": {"tree": None}}
    assert validate(instance, schema) == []
    assert jsonschema.Draft202012Validator(schema).is_valid(instance)


# --------------------------------------------------------------------------- defaults


def test_defaults() -> None:
    sentinel = object()

    def f(
        a: int = 3,
        c: Color = Color.GREEN,
        t: tuple[int, int] = (1, 2),
        p: Point = Point(1),  # noqa: B008
        o: Any = sentinel,
        n: float = math.nan,
        s: frozenset[int] = frozenset({3, 1}),
    ) -> None:
        pass

    schema, params = function_input_schema(f)
    props = schema["properties"]
    assert "required" not in schema
    assert props["a"]["default"] == 3
    assert props["c"]["default"] == "green"
    assert props["t"]["default"] == [1, 2]
    assert props["p"]["default"] == {"x": 1, "y": 0, "tags": [], "label": ""}
    assert "default" not in props["o"]
    assert "default" not in props["n"]
    assert props["s"]["default"] == [1, 3]
    assert params["o"].default is sentinel


# --------------------------------------------------------------------------- skipping, errors


def test_skip_names_and_types() -> None:
    def f(ctx: Ctx, x: int, sub: SubCtx, maybe: Optional[Ctx] = None, self_: int = 0) -> None:
        pass

    schema, params = function_input_schema(f, skip=("self_",), skip_types=(Ctx,))
    assert list(schema["properties"]) == ["x"]
    assert list(params) == ["x"]
    with pytest.raises(TypeError, match="parameter 'ctx'"):
        function_input_schema(f)


def test_skipped_var_args_are_allowed() -> None:
    def f(x: int, *args: int, **kwargs: int) -> None:
        pass

    schema, _ = function_input_schema(f, skip=("args", "kwargs"))
    assert list(schema["properties"]) == ["x"]


def test_var_positional_rejected() -> None:
    def f(x: int, *args: int) -> None:
        pass

    with pytest.raises(TypeError, match=r"\*args is not supported"):
        function_input_schema(f)


def test_var_keyword_rejected() -> None:
    def f(x: int, **options: int) -> None:
        pass

    with pytest.raises(TypeError, match=r"\*\*options is not supported"):
        function_input_schema(f)


def test_positional_only_rejected() -> None:
    def f(x: int, /, y: int) -> None:
        pass

    with pytest.raises(TypeError, match="positional-only"):
        function_input_schema(f)


@pytest.mark.parametrize(
    ("annotation", "type_text"),
    [
        (bytes, "bytes"),
        (list[bytes], "bytes"),
        (dict[int, str], "keys must be str"),
        (Ctx, "Ctx"),
        (Optional[complex], "complex"),
        (Bad, "not a JSON scalar"),
        (Literal[b"x"], "Literal value"),
        (typing.TypeVar("T"), "T"),
    ],
    ids=repr,
)
def test_unsupported_annotation(annotation: object, type_text: str) -> None:
    def fn(count):  # type: ignore[no-untyped-def]
        return count

    fn.__annotations__ = {"count": annotation}
    with pytest.raises(TypeError, match="parameter 'count'") as info:
        function_input_schema(fn)
    assert type_text in str(info.value)


def test_unresolvable_annotation() -> None:
    def fn(x: "NoSuchType") -> None:  # type: ignore[name-defined]  # noqa: F821
        pass

    with pytest.raises(TypeError, match="cannot resolve the type annotations"):
        function_input_schema(fn)


def test_field_pattern_is_checked() -> None:
    with pytest.raises(ValueError, match="not a valid regex"):
        Field(pattern="(")


def test_callable_objects_and_partials() -> None:
    class Tool:
        def __call__(self, x: int, y: str = "") -> str:
            return y * x

    schema, _ = function_input_schema(Tool())
    assert schema["properties"] == {
        "x": {"type": "integer"},
        "y": {"type": "string", "default": ""},
    }

    def g(a: int, b: Color) -> None:
        pass

    schema, params = function_input_schema(functools.partial(g, b=Color.RED))
    assert schema["properties"]["b"]["default"] == "red"
    assert "a" in params


# --------------------------------------------------------------------------- docstrings


def google(count: int, name: str, flag: Annotated[bool, "From Annotated"] = False) -> None:
    """Greet someone.

    Longer explanation
    over two lines.

    Args:
        count: How many times.
        name (str): Who to greet,
            continued here.
        flag: Docstring text that Annotated overrides.

    Returns:
        Nothing.
    """


def rest_style(count: int, name: str) -> None:
    """Greet someone, reST style.

    :param count: How many times.
    :param str name: Who to greet,
        continued here.
    :returns: Nothing.
    """


def numpy_style(count: int, name: str, other: int = 0) -> None:
    """Greet someone, numpy style.

    Parameters
    ----------
    count : int
        How many times.
    name
        Who to greet,
        continued here.

    Returns
    -------
    None
    """


def undocumented(x: int) -> None:
    pass


@pytest.mark.parametrize(
    ("fn", "summary"),
    [
        (google, "Greet someone.\n\nLonger explanation\nover two lines."),
        (rest_style, "Greet someone, reST style."),
        (numpy_style, "Greet someone, numpy style."),
        (undocumented, None),
    ],
)
def test_docstring_summary(fn: Any, summary: Optional[str]) -> None:
    assert docstring_summary(fn) == summary


@pytest.mark.parametrize("fn", [google, rest_style, numpy_style])
def test_docstring_parameter_descriptions(fn: Any) -> None:
    schema, params = function_input_schema(fn)
    props = schema["properties"]
    assert props["count"]["description"] == "How many times."
    assert props["name"]["description"] == "Who to greet, continued here."
    assert params["name"].description == "Who to greet, continued here."


def test_annotated_beats_docstring() -> None:
    schema, params = function_input_schema(google)
    assert schema["properties"]["flag"] == {
        "type": "boolean",
        "description": "From Annotated",
        "default": False,
    }
    assert params["flag"].description == "From Annotated"


def test_docstring_summary_stops_at_any_header_style() -> None:
    def f() -> None:
        """Summary line.

        Example:
            f()
        """

    def g() -> None:
        """Only a summary."""

    assert docstring_summary(f) == "Summary line."
    assert docstring_summary(g) == "Only a summary."


def test_google_multiple_names_and_types_and_kwargs_section() -> None:
    def f(a: int, b: int, c: int) -> None:
        """Do.

        Args:
            a (int, optional): First.

            b: Second.
        Keyword Args:
            c: Third.
        """

    schema, _ = function_input_schema(f)
    descs = {k: v.get("description") for k, v in schema["properties"].items()}
    assert descs == {"a": "First.", "b": "Second.", "c": "Third."}


def test_numpy_comma_separated_names() -> None:
    def f(a: int, b: int) -> None:
        """Do.

        Parameters
        ----------
        a, b : int
            Both numbers.
        """

    schema, _ = function_input_schema(f)
    assert schema["properties"]["a"]["description"] == "Both numbers."
    assert schema["properties"]["b"]["description"] == "Both numbers."


# --------------------------------------------------------------------------- return_schema


def _ret(annotation: object) -> Any:
    def fn():  # type: ignore[no-untyped-def]
        return None

    fn.__annotations__ = {"return": annotation}
    return fn


def _wrapped(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"result": schema}, "required": ["result"]}


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (str, (_wrapped({"type": "string"}), True)),
        (int, (_wrapped({"type": "integer"}), True)),
        (list[int], (_wrapped({"type": "array", "items": {"type": "integer"}}), True)),
        (Optional[int], (_wrapped({"anyOf": [{"type": "integer"}, {"type": "null"}]}), True)),
        (Color, (_wrapped({"type": "string", "enum": ["red", "green"]}), True)),
        (dict[str, int], ({"type": "object", "additionalProperties": {"type": "integer"}}, False)),
        (dict, ({"type": "object"}, False)),
        (Point, (OBJ_POINT, False)),
        (
            Annotated[Movie, "A movie"],
            (
                {
                    "type": "object",
                    "properties": {"title": {"type": "string"}, "year": {"type": "integer"}},
                    "required": ["title", "year"],
                    "additionalProperties": False,
                    "description": "A movie",
                },
                False,
            ),
        ),
        (Optional[Point], (_wrapped({"anyOf": [OBJ_POINT, {"type": "null"}]}), True)),
        (
            Node,
            (
                {
                    "type": "object",
                    "properties": {
                        "value": {"type": "integer"},
                        "children": {"type": "array", "items": {"$ref": "#"}},
                    },
                    "required": ["value"],
                    "additionalProperties": False,
                },
                False,
            ),
        ),
        (
            list[Node],
            (
                {
                    **_wrapped({"type": "array", "items": {"$ref": "#/$defs/Node"}}),
                    "$defs": {"Node": schema_of(Node)["$defs"]["Node"]},
                },
                True,
            ),
        ),
        (None, (None, False)),
        (type(None), (None, False)),
        (Any, (None, False)),
        (typing.NoReturn, (None, False)),
        (bytes, (None, False)),
        (Ctx, (None, False)),
    ],
    ids=repr,
)
def test_return_schema(annotation: object, expected: tuple[Any, bool]) -> None:
    result = return_schema(_ret(annotation))
    assert result == expected
    if result[0] is not None:
        jsonschema.Draft202012Validator.check_schema(result[0])
        assert result[0]["type"] == "object"


def test_return_schema_without_annotation() -> None:
    def f():  # type: ignore[no-untyped-def]
        return 1

    assert return_schema(f) == (None, False)

    def g(x: "Unresolvable") -> int:  # type: ignore[name-defined]  # noqa: F821
        return 1

    assert return_schema(g) == (None, False)


# --------------------------------------------------------------------------- to_jsonable


def test_to_jsonable() -> None:
    class Key(str, enum.Enum):
        A = "a"

    class MyStr(str):
        pass

    value = {
        "line": Line(Point(1, 2, ["t"]), Point(3)),
        "color": Color.RED,
        "level": Level.HIGH,
        "tuple": (1, (2, 3)),
        "set": {3, 1, 2},
        "mixed_set": frozenset({1}),
        Key.A: MyStr("s"),
        "none": None,
        "float": 1.5,
        "movie": Movie(title="x", year=1),
    }
    out = to_jsonable(value)
    assert out == {
        "line": {
            "start": {"x": 1, "y": 2, "tags": ["t"], "label": ""},
            "end": {"x": 3, "y": 0, "tags": [], "label": ""},
        },
        "color": "red",
        "level": 2,
        "tuple": [1, [2, 3]],
        "set": [1, 2, 3],
        "mixed_set": [1],
        "a": "s",
        "none": None,
        "float": 1.5,
        "movie": {"title": "x", "year": 1},
    }
    assert type(out["a"]) is str  # type: ignore[index,call-overload]
    assert type(out["level"]) is int  # type: ignore[index,call-overload]


@pytest.mark.parametrize("bad", [b"x", object(), {1: "a"}, [1, {"a": b"x"}], Point, 1j])
def test_to_jsonable_rejects(bad: object) -> None:
    with pytest.raises(TypeError):
        to_jsonable(bad)


def test_to_jsonable_cycle() -> None:
    a: list[object] = []
    a.append(a)
    with pytest.raises(ValueError, match="circular"):
        to_jsonable(a)
    shared = [1]
    assert to_jsonable([shared, shared]) == [[1], [1]]


# --------------------------------------------------------------------------- convert_arguments


def test_convert_arguments() -> None:
    def f(
        color: Color,
        point: Point,
        pair: tuple[int, Color],
        nums: tuple[int, ...],
        tags: set[str],
        colors: list[Color],
        by_name: dict[str, Level],
        maybe: Optional[Point] = None,
        count: int = 0,
        plain: list[str] = [],  # noqa: B006
        either: Union[Point, Color, None] = None,
        lit: Literal[Color.RED, "x"] = "x",
        node: Optional[Node] = None,
        movie: Optional[Movie] = None,
    ) -> None:
        pass

    _, params = function_input_schema(f)
    assert params["plain"].converter is None
    assert params["movie"].converter is not None  # year: int accepts 2.0 and gets 2
    args = {
        "color": "green",
        "point": {"x": 1, "tags": ["a"]},
        "pair": [1, "red"],
        "nums": [1, 2],
        "tags": ["a", "b"],
        "colors": ["red", "green"],
        "by_name": {"a": 1},
        "maybe": None,
        "count": 3.0,
        "plain": ["x"],
        "either": "red",
        "lit": "red",
        "node": {"value": 1, "children": [{"value": 2}]},
        "unknown": "passes through",
    }
    out = convert_arguments(params, args)
    assert out == {
        "color": Color.GREEN,
        "point": Point(1, tags=["a"]),
        "pair": (1, Color.RED),
        "nums": (1, 2),
        "tags": {"a", "b"},
        "colors": [Color.RED, Color.GREEN],
        "by_name": {"a": Level.LOW},
        "maybe": None,
        "count": 3,
        "plain": ["x"],
        "either": Color.RED,
        "lit": Color.RED,
        "node": Node(1, [Node(2)]),
        "unknown": "passes through",
    }
    assert type(out["count"]) is int
    assert args["point"] == {"x": 1, "tags": ["a"]}  # input untouched
    assert convert_arguments(params, {"either": {"x": 2}})["either"] == Point(2)
    assert convert_arguments(params, {"lit": "x"})["lit"] == "x"


def test_convert_arguments_error_names_the_argument() -> None:
    def f(color: Color) -> None:
        pass

    _, params = function_input_schema(f)
    with pytest.raises(ValueError, match="argument 'color'"):
        convert_arguments(params, {"color": "purple"})


# --------------------------------------------------------------------------- validation tables

V = True
X = False

VALIDATION_CASES: list[tuple[Any, Any, bool]] = [
    # boolean schemas and permissive cases
    (True, 1, V),
    (False, 1, X),
    ({}, {"a": [1]}, V),
    ({"unknownKeyword": 1}, 1, V),
    ({"format": "email"}, "not an email", V),
    ({"type": "string", "format": "date-time"}, "nope", V),
    # type
    ({"type": "integer"}, 1, V),
    ({"type": "integer"}, 1.0, V),
    ({"type": "integer"}, 1.5, X),
    ({"type": "integer"}, True, X),
    ({"type": "integer"}, "1", X),
    ({"type": "number"}, 1, V),
    ({"type": "number"}, 2.5, V),
    ({"type": "number"}, False, X),
    ({"type": "boolean"}, True, V),
    ({"type": "boolean"}, 0, X),
    ({"type": "null"}, None, V),
    ({"type": "null"}, 0, X),
    ({"type": "string"}, "", V),
    ({"type": "array"}, [], V),
    ({"type": "array"}, (1,), V),
    ({"type": "array"}, {}, X),
    ({"type": "object"}, {}, V),
    ({"type": "object"}, [], X),
    ({"type": ["string", "null"]}, None, V),
    ({"type": ["string", "null"]}, 1, X),
    ({"type": ["integer", "string"]}, 2.0, V),
    ({"type": "nonsense"}, 1, V),
    ({"type": ["string", "nonsense"]}, 1, V),
    ({"type": 5}, 1, V),
    # enum / const
    ({"enum": [1, "a", None]}, 1.0, V),
    ({"enum": [1, "a", None]}, True, X),
    ({"enum": [True]}, 1, X),
    ({"enum": [0]}, False, X),
    ({"enum": [[1, 2], {"a": 1}]}, [1.0, 2], V),
    ({"enum": [[1, 2], {"a": 1}]}, {"a": 1.0}, V),
    ({"enum": [[1, 2], {"a": 1}]}, [2, 1], X),
    ({"enum": [[True]]}, [1], X),
    ({"enum": "notalist"}, 1, V),
    ({"const": 1}, 1.0, V),
    ({"const": 1}, True, X),
    ({"const": False}, 0, X),
    ({"const": None}, None, V),
    ({"const": None}, 0, X),
    ({"const": {"a": [1]}}, {"a": [1]}, V),
    ({"const": "a"}, "b", X),
    # numbers
    ({"minimum": 2}, 2, V),
    ({"minimum": 2}, 1.9, X),
    ({"minimum": 2}, "a", V),
    ({"minimum": 2}, True, V),
    ({"maximum": 2}, 2.0, V),
    ({"maximum": 2}, 3, X),
    ({"exclusiveMinimum": 2}, 2, X),
    ({"exclusiveMinimum": 2}, 2.1, V),
    ({"exclusiveMaximum": 2}, 2, X),
    ({"exclusiveMaximum": 2}, 1, V),
    ({"minimum": 2, "exclusiveMinimum": True}, 2, X),
    ({"maximum": 2, "exclusiveMaximum": True}, 1.5, V),
    ({"minimum": "2"}, 1, V),
    ({"multipleOf": 3}, 9, V),
    ({"multipleOf": 3}, 10, X),
    ({"multipleOf": 3}, 9.0, V),
    ({"multipleOf": 0.1}, 0.3, V),
    ({"multipleOf": 0.01}, 19.99, V),
    ({"multipleOf": 0.1}, 0.35, X),
    ({"multipleOf": 1e-308}, 1e308, X),
    ({"multipleOf": 0}, 5, V),
    ({"multipleOf": -2}, 5, V),
    ({"minimum": 0}, 10**400, V),
    ({"multipleOf": 0.5}, 10**400, V),
    ({"multipleOf": 0.3}, 10**400 + 1, X),
    ({"multipleOf": 0.1}, math.inf, X),
    # strings
    ({"minLength": 2}, "ab", V),
    ({"minLength": 2}, "a", X),
    ({"minLength": 2}, "\U0001f600\U0001f600", V),
    ({"maxLength": 1}, "\U0001f600", V),
    ({"maxLength": 1}, "ab", X),
    ({"maxLength": 1.0}, "ab", X),
    ({"maxLength": -1}, "ab", V),
    ({"minLength": 5}, 1, V),
    ({"pattern": "^a+$"}, "aaa", V),
    ({"pattern": "b"}, "abc", V),
    ({"pattern": "^b"}, "abc", X),
    ({"pattern": "("}, "abc", V),
    ({"pattern": "^a"}, 5, V),
    # arrays
    ({"items": {"type": "integer"}}, [1, 2], V),
    ({"items": {"type": "integer"}}, [1, "2"], X),
    ({"items": {"type": "integer"}}, "not an array", V),
    ({"prefixItems": [{"type": "integer"}, {"type": "string"}]}, [1, "a", None], V),
    ({"prefixItems": [{"type": "integer"}, {"type": "string"}]}, [1, 2], X),
    ({"prefixItems": [{"type": "integer"}], "items": False}, [1], V),
    ({"prefixItems": [{"type": "integer"}], "items": False}, [1, 2], X),
    ({"prefixItems": [{"type": "integer"}], "items": {"type": "string"}}, [1, "a", "b"], V),
    ({"prefixItems": [{"type": "integer"}], "items": {"type": "string"}}, [1, "a", 2], X),
    ({"items": [{"type": "integer"}]}, [1, "anything"], V),
    ({"items": [{"type": "integer"}]}, ["x"], X),
    ({"items": [{"type": "integer"}], "additionalItems": False}, [1, 2], X),
    ({"minItems": 2}, [1, 2], V),
    ({"minItems": 2}, [1], X),
    ({"maxItems": 1}, [1, 2], X),
    ({"uniqueItems": True}, [1, 2], V),
    ({"uniqueItems": True}, [1, 1.0], X),
    ({"uniqueItems": True}, [1, True], V),
    ({"uniqueItems": True}, [0, False], V),
    ({"uniqueItems": True}, [{"a": 1}, {"a": 1.0}], X),
    ({"uniqueItems": True}, [[1], [True]], V),
    ({"uniqueItems": False}, [1, 1], V),
    ({"contains": {"type": "string"}}, [1, "a"], V),
    ({"contains": {"type": "string"}}, [1, 2], X),
    ({"contains": {"type": "string"}}, [], X),
    ({"contains": {"type": "string"}, "minContains": 0}, [], V),
    ({"contains": {"type": "string"}, "minContains": 2}, ["a", 1, "b"], V),
    ({"contains": {"type": "string"}, "minContains": 2}, ["a", 1], X),
    ({"contains": {"type": "string"}, "maxContains": 1}, ["a", "b"], X),
    ({"contains": {"type": "string"}, "maxContains": 1}, ["a", 1], V),
    ({"minContains": 2}, [], V),
    # objects
    ({"properties": {"a": {"type": "integer"}}}, {"a": 1, "b": "x"}, V),
    ({"properties": {"a": {"type": "integer"}}}, {"a": "x"}, X),
    ({"properties": {"a": {"type": "integer"}}}, [1], V),
    ({"required": ["a"]}, {"a": None}, V),
    ({"required": ["a"]}, {"b": 1}, X),
    ({"required": ["a"]}, "not an object", V),
    ({"required": "a"}, {}, V),
    ({"properties": {"a": {}}, "additionalProperties": False}, {"a": 1}, V),
    ({"properties": {"a": {}}, "additionalProperties": False}, {"a": 1, "b": 2}, X),
    ({"additionalProperties": {"type": "string"}}, {"a": "x"}, V),
    ({"additionalProperties": {"type": "string"}}, {"a": 1}, X),
    ({"patternProperties": {"^x": {"type": "integer"}}}, {"xa": 1, "y": "s"}, V),
    ({"patternProperties": {"^x": {"type": "integer"}}}, {"xa": "s"}, X),
    (
        {"patternProperties": {"^x": {}}, "additionalProperties": False},
        {"xa": 1, "y": 2},
        X,
    ),
    ({"patternProperties": {"(": {"type": "integer"}}}, {"(": "s"}, V),
    ({"propertyNames": {"maxLength": 2}}, {"ab": 1}, V),
    ({"propertyNames": {"maxLength": 2}}, {"abc": 1}, X),
    ({"propertyNames": False}, {}, V),
    ({"propertyNames": False}, {"a": 1}, X),
    ({"minProperties": 1}, {}, X),
    ({"minProperties": 1}, {"a": 1}, V),
    ({"maxProperties": 1}, {"a": 1, "b": 2}, X),
    ({"dependentRequired": {"a": ["b"]}}, {"a": 1, "b": 2}, V),
    ({"dependentRequired": {"a": ["b"]}}, {"a": 1}, X),
    ({"dependentRequired": {"a": ["b"]}}, {"b": 1}, V),
    ({"dependentSchemas": {"a": {"required": ["b"]}}}, {"a": 1}, X),
    ({"dependentSchemas": {"a": {"required": ["b"]}}}, {"c": 1}, V),
    ({"dependencies": {"a": ["b"]}}, {"a": 1}, X),
    ({"dependencies": {"a": {"required": ["c"]}}}, {"a": 1, "c": 1}, V),
    # applicators
    ({"allOf": [{"type": "integer"}, {"minimum": 2}]}, 3, V),
    ({"allOf": [{"type": "integer"}, {"minimum": 2}]}, 1, X),
    ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, None, V),
    ({"anyOf": [{"type": "integer"}, {"type": "null"}]}, "x", X),
    ({"oneOf": [{"type": "integer"}, {"minimum": 2}]}, 1, V),
    ({"oneOf": [{"type": "integer"}, {"minimum": 2}]}, 3, X),
    ({"oneOf": [{"type": "integer"}, {"minimum": 2}]}, "x", V),
    ({"oneOf": [{"type": "integer"}, {"type": "string"}]}, None, X),
    ({"not": {"type": "integer"}}, "x", V),
    ({"not": {"type": "integer"}}, 1, X),
    ({"if": {"type": "integer"}, "then": {"minimum": 2}, "else": {"type": "string"}}, 3, V),
    ({"if": {"type": "integer"}, "then": {"minimum": 2}, "else": {"type": "string"}}, 1, X),
    ({"if": {"type": "integer"}, "then": {"minimum": 2}, "else": {"type": "string"}}, "s", V),
    ({"if": {"type": "integer"}, "then": {"minimum": 2}, "else": {"type": "string"}}, None, X),
    ({"if": {"type": "integer"}}, "anything", V),
    ({"then": False}, 1, V),
    ({"anyOf": []}, 1, V),
    # $ref
    ({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"}, 1, V),
    ({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"}, "x", X),
    ({"definitions": {"n": {"type": "integer"}}, "$ref": "#/definitions/n"}, "x", X),
    ({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n", "minimum": 5}, 3, X),
    ({"$defs": {"a/b": {"type": "integer"}}, "$ref": "#/$defs/a~1b"}, "x", X),
    ({"$defs": {"a b": {"type": "integer"}}, "$ref": "#/$defs/a%20b"}, "x", X),
    ({"$defs": {"a~b": {"type": "integer"}}, "$ref": "#/$defs/a~0b"}, "x", X),
    ({"prefixItems": [{"type": "string"}], "items": {"$ref": "#/prefixItems/0"}}, ["a", 1], X),
    ({"$defs": {"x": {"$anchor": "num", "type": "integer"}}, "$ref": "#num"}, "x", X),
    ({"$ref": "#/$defs/missing"}, 1, V),
    ({"$ref": "https://example.com/schema.json"}, 1, V),
    ({"$ref": "other.json#/x"}, 1, V),
    ({"$ref": 5}, 1, V),
    (
        {
            "type": "object",
            "properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
            "required": ["next"],
        },
        {"next": {"next": {"next": None}}},
        V,
    ),
    (
        {
            "type": "object",
            "properties": {"next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
            "required": ["next"],
        },
        {"next": {"next": {}}},
        X,
    ),
]


@pytest.mark.parametrize(("schema", "instance", "valid"), VALIDATION_CASES, ids=repr)
def test_validation(schema: Any, instance: Any, valid: bool) -> None:
    errors = validate(instance, schema)
    assert (errors == []) is valid, errors
    assert compile(schema).is_valid(instance) is valid
    for e in errors:
        assert e.startswith("$")


# (schema, instance) pairs where we deliberately differ from the jsonschema package.
DEVIATIONS = {
    repr(case)
    for case in [
        ({"multipleOf": 0.1}, 0.3),  # relative tolerance for non-integer divisors
        ({"multipleOf": 0.01}, 19.99),
        ({"type": "array"}, (1,)),  # Python tuples count as arrays
        ({"dependencies": {"a": ["b"]}}, {"a": 1}),  # draft-07 keyword still honoured
    ]
}


def _oracle_verdict(schema: Any, instance: Any) -> bool | None:
    """jsonschema's verdict, or None where it cannot judge (a schema it refuses as
    malformed, where we are deliberately permissive, or a $ref it cannot resolve)."""
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
        return bool(jsonschema.Draft202012Validator(schema).is_valid(instance))
    except Exception:
        return None


# The table cases the oracle can judge; the others are covered by test_validation alone.
ORACLE_CASES = [
    (schema, instance, valid, verdict)
    for schema, instance, valid in VALIDATION_CASES
    if (verdict := _oracle_verdict(schema, instance)) is not None
]


def test_most_table_cases_are_checked_against_the_oracle() -> None:
    assert len(ORACLE_CASES) >= len(VALIDATION_CASES) - 30


@pytest.mark.parametrize(("schema", "instance", "valid", "expected"), ORACLE_CASES, ids=repr)
def test_validation_table_matches_jsonschema(
    schema: Any, instance: Any, valid: bool, expected: bool
) -> None:
    if repr((schema, instance)) in DEVIATIONS:
        assert valid != expected
    else:
        assert valid == expected


def test_messages() -> None:
    schema = {
        "type": "object",
        "properties": {
            "count": {"type": "integer", "minimum": 1},
            "name": {"type": "string", "maxLength": 3},
            "tags": {"type": "array", "items": {"type": "string"}},
            "weird key": {"type": "boolean"},
            "opt": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
            "color": {"enum": ["red", "green"]},
        },
        "required": ["count", "needed"],
        "additionalProperties": False,
    }
    instance = {
        "count": "abc",
        "name": "abcd",
        "tags": ["a", 2],
        "weird key": 1,
        "opt": "x",
        "color": "blue",
        "extra": 1,
    }
    assert validate(instance, schema) == [
        '$.count: "abc" is not of type "integer"',
        '$.name: "abcd" is longer than 3 characters',
        '$.tags[1]: 2 is not of type "string"',
        '$["weird key"]: 1 is not of type "boolean"',
        '$.opt: "x" does not match any of the alternatives '
        '("x" is not of type "integer"; "x" is not of type "null")',
        '$.color: "blue" is not one of ["red", "green"]',
        '$: unexpected property "extra" (allowed: "color", "count", "name", "opt", "tags", '
        '"weird key")',
        '$: missing required property "needed"',
    ]


@pytest.mark.parametrize(
    ("schema", "instance", "message"),
    [
        ({"const": 1}, True, "$: 1 was expected, got true"),
        ({"minimum": 5}, 3, "$: 3 is less than the minimum of 5"),
        ({"exclusiveMaximum": 5}, 5, "$: 5 is greater than or equal to the exclusive maximum of 5"),
        ({"multipleOf": 2}, 3, "$: 3 is not a multiple of 2"),
        ({"pattern": "^a"}, "b", '$: "b" does not match the pattern "^a"'),
        ({"minItems": 2}, [1], "$: expected at least 2 items, got 1"),
        ({"maxProperties": 1}, {"a": 1, "b": 2}, "$: expected at most 1 property, got 2"),
        ({"uniqueItems": True}, [1, 2, 1], "$: items 0 and 2 are equal (1); items must be unique"),
        (
            {"contains": {"type": "string"}},
            [1],
            "$: expected an item matching the 'contains' schema, found 0",
        ),
        ({"not": {}}, 1, "$: 1 matches a schema it must not match (not)"),
        (
            {"oneOf": [{}, {"type": "integer"}]},
            1,
            "$: 1 matches more than one alternative of oneOf (#0 and #1)",
        ),
        (False, 1, "$: no value is allowed here (the schema is false)"),
        (
            {"prefixItems": [{}], "items": False},
            [1, 2],
            "$: expected at most 1 items, got 2",
        ),
        (
            {"propertyNames": {"pattern": "^a"}},
            {"b": 1},
            '$: invalid property name "b" ("b" does not match the pattern "^a")',
        ),
        (
            {"dependentRequired": {"a": ["b"]}},
            {"a": 1},
            '$: property "b" is required when "a" is present',
        ),
        (
            {"anyOf": [{"properties": {"a": {"type": "string"}}}, {"type": "null"}]},
            {"a": 1},
            '$: {"a": 1} does not match any of the alternatives '
            '($.a: 1 is not of type "string"; {"a": 1} is not of type "null")',
        ),
    ],
    ids=repr,
)
def test_single_messages(schema: Any, instance: Any, message: str) -> None:
    assert validate(instance, schema) == [message]


def test_long_values_are_truncated_in_messages() -> None:
    [msg] = validate("x" * 10_000, {"type": "integer"})
    assert len(msg) < 100
    assert msg.endswith('… is not of type "integer"')
    [msg] = validate(list(range(1000)), {"type": "object"})
    assert msg == '$: [0, 1, 2, 3, …] is not of type "object"'
    [msg] = validate(10**5000, {"type": "string"})
    assert "<large integer>" in msg


def test_error_count_is_capped() -> None:
    schema = {"type": "array", "items": {"type": "string"}}
    errors = validate(list(range(100)), schema)
    assert len(errors) == 20
    assert errors[0] == '$[0]: 0 is not of type "string"'
    assert len(compile(schema, max_errors=3).validate(list(range(100)))) == 3
    # required/additionalProperties flood
    schema2 = {"required": [f"k{i}" for i in range(50)]}
    assert len(validate({}, schema2)) == 20


def test_recursion_is_capped() -> None:
    loop = {"$ref": "#"}
    assert validate(1, loop) == ["$: nesting exceeds the validation depth limit (128)"]
    assert compile(loop).is_valid(1) is False
    mutual = {
        "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},
        "$ref": "#/$defs/a",
    }
    assert validate(1, mutual) == ["$: nesting exceeds the validation depth limit (128)"]
    tree = {"type": "array", "items": {"$ref": "#"}}
    deep: list[Any] = []
    for _ in range(500):
        deep = [deep]
    [msg] = validate(deep, tree)
    assert "depth limit" in msg
    assert compile(tree, max_depth=1000).validate([[[]]]) == []


def test_deep_schema_nesting_is_bounded() -> None:
    schema: Any = {"type": "integer"}
    for _ in range(5000):
        schema = {"not": schema}
    # Must not raise RecursionError, whatever it answers.
    assert isinstance(validate(1, schema), list)
    schema = {"type": "integer"}
    for _ in range(5000):
        schema = {"items": schema}
    assert isinstance(validate([[[["x"]]]], schema), list)


def test_deep_instances_in_enum_and_unique_items() -> None:
    deep: Any = 1
    for _ in range(3000):
        deep = [deep]
    assert isinstance(validate(deep, {"enum": [1]}), list)
    assert isinstance(validate([deep, deep], {"uniqueItems": True}), list)
    assert validate(deep, {"const": 1}) != []


@pytest.mark.parametrize(
    "schema",
    [
        None,
        5,
        "string",
        [],
        {"properties": 5},
        {"properties": {"a": 5}},
        {"items": "x"},
        {"prefixItems": 5},
        {"allOf": {}},
        {"anyOf": "x"},
        {"not": 3},
        {"enum": [object()]},
        {"const": object()},
        {"minLength": "x", "maxItems": None, "minProperties": -1},
        {"dependentRequired": {"a": "b"}},
        {"dependentSchemas": {"a": 5}},
        {"contains": {}, "minContains": "x"},
        {"$ref": "#/a/0/b"},
        {"a": [1], "$ref": "#/a/5"},
        {"$ref": "#%ZZ"},
        {"patternProperties": {5: {}}},
        {"required": [1, "a"]},
        {"type": []},
    ],
    ids=repr,
)
def test_malformed_schemas_never_raise(schema: Any) -> None:
    for instance in (None, 1, "a", [1, {"a": 1}], {"a": [1]}, object(), {1: 2}):
        errors = validate(instance, schema)
        assert isinstance(errors, list)


def test_weird_python_instances_do_not_raise() -> None:
    class OddInt(int):
        pass

    class OddDict(dict):  # type: ignore[type-arg]
        pass

    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer", "minimum": 1}, "e": {"enum": [1]}},
        "uniqueItems": True,
    }
    assert validate(OddDict(n=OddInt(3)), schema) == []
    assert validate({"n": OddInt(0)}, schema) == ["$.n: 0 is less than the minimum of 1"]
    assert validate({"e": {1, 2}}, schema) == ["$.e: <set> is not one of [1]"]
    assert validate([{1, 2}, {1, 2}], {"uniqueItems": True}) == []
    assert validate({(1, 2): 1}, {"additionalProperties": False})[0].startswith("$: unexpected")

    class Key(str, enum.Enum):
        A = "a"

    assert validate(Key.A, {"type": "string"}) == []  # str-based enums are strings
    assert validate(Color.RED, {"type": "string"}) == ['$: <Color> is not of type "string"']
    assert validate(object(), {"type": "string"}) == ['$: <object> is not of type "string"']


def test_validator_reuse_and_repr() -> None:
    v = compile({"type": "integer"})
    assert isinstance(v, Validator)
    assert v.validate(1) == []
    assert v.validate("a") == ['$: "a" is not of type "integer"']
    assert v.is_valid(2)
    assert "Validator" in repr(v)


def test_public_api() -> None:
    assert set(_schema.__all__) == {
        "Field",
        "ParamInfo",
        "Validator",
        "compile",
        "convert_arguments",
        "docstring_summary",
        "function_input_schema",
        "return_schema",
        "to_jsonable",
        "validate",
    }


def test_no_anyio_import() -> None:
    import subprocess

    code = "import sys, mcpwire._schema; print('anyio' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --------------------------------------------------------------------------- hypothesis: oracle

NAMES = st.sampled_from(["a", "b", "c"])
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-4, 4)
    | st.sampled_from([0.0, 1.0, 2.5, -1.5, 3.0])
    | st.text(alphabet="abc", max_size=3)
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), children, max_size=3)
    ),
    max_leaves=8,
)
TYPE_NAMES = st.sampled_from(["null", "boolean", "integer", "number", "string", "array", "object"])
PATTERNS = st.sampled_from(["^a", "b$", "a+", "^[ab]*$", "c"])


def _keywords(children: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    small = st.integers(0, 3)
    num = st.integers(-3, 3) | st.sampled_from([0.5, 1.5, -2.5])
    return st.one_of(
        st.builds(
            lambda t: {"type": t},
            TYPE_NAMES | st.lists(TYPE_NAMES, min_size=1, max_size=3, unique=True),
        ),
        st.builds(lambda v: {"enum": v}, st.lists(JSON_VALUES, min_size=1, max_size=3)),
        st.builds(lambda v: {"const": v}, JSON_VALUES),
        st.builds(
            lambda k, v: {k: v},
            st.sampled_from(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]),
            num,
        ),
        st.builds(lambda v: {"multipleOf": v}, st.integers(1, 3)),
        st.builds(
            lambda k, v: {k: v},
            st.sampled_from(
                ["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"]
            ),
            small,
        ),
        st.builds(lambda p: {"pattern": p}, PATTERNS),
        st.builds(lambda u: {"uniqueItems": u}, st.booleans()),
        st.builds(lambda r: {"required": r}, st.lists(NAMES, max_size=2, unique=True)),
        st.builds(lambda p: {"properties": p}, st.dictionaries(NAMES, children, max_size=2)),
        st.builds(
            lambda p: {"patternProperties": p}, st.dictionaries(PATTERNS, children, max_size=1)
        ),
        st.builds(lambda s: {"additionalProperties": s}, children),
        st.builds(lambda s: {"propertyNames": s}, children),
        st.builds(lambda s: {"items": s}, children),
        st.builds(lambda s: {"prefixItems": s}, st.lists(children, min_size=1, max_size=2)),
        st.builds(
            lambda s, lo, hi: {
                "contains": s,
                **({} if lo is None else {"minContains": lo}),
                **({} if hi is None else {"maxContains": hi}),
            },
            children,
            st.none() | small,
            st.none() | small,
        ),
        st.builds(
            lambda k, s: {k: s},
            st.sampled_from(["anyOf", "allOf", "oneOf"]),
            st.lists(children, min_size=1, max_size=3),
        ),
        st.builds(lambda s: {"not": s}, children),
        st.builds(lambda i, t, e: {"if": i, "then": t, "else": e}, children, children, children),
        st.builds(
            lambda d: {"dependentRequired": d},
            st.dictionaries(NAMES, st.lists(NAMES, max_size=2, unique=True), max_size=2),
        ),
        st.builds(lambda d: {"dependentSchemas": d}, st.dictionaries(NAMES, children, max_size=1)),
    )


def _merge(parts: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in parts:
        out.update(p)
    return out


SCHEMAS = st.recursive(
    st.booleans() | st.just({}) | _keywords(st.just({})),
    lambda children: st.lists(_keywords(children), min_size=1, max_size=3).map(_merge),
    max_leaves=6,
)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=SCHEMAS, instance=JSON_VALUES)
def test_matches_jsonschema_oracle(schema: Any, instance: Any) -> None:
    expected = jsonschema.Draft202012Validator(schema).is_valid(instance)
    errors = validate(instance, schema)
    assert (errors == []) is expected, (errors, schema, instance)
    assert compile(schema).is_valid(instance) is expected
    assert len(errors) <= 20
    assert all(e.startswith("$") for e in errors)


@settings(max_examples=300, deadline=None)
@given(schema=SCHEMAS, instance=JSON_VALUES)
def test_oracle_with_ref_indirection(schema: Any, instance: Any) -> None:
    wrapped = {"$defs": {"target": schema}, "$ref": "#/$defs/target"}
    expected = jsonschema.Draft202012Validator(wrapped).is_valid(instance)
    assert (validate(instance, wrapped) == []) is expected


# --------------------------------------------------------------------------- hypothesis: derivation


@st.composite
def _nodes(draw: st.DrawFn, depth: int = 0) -> tuple[Node, dict[str, Any]]:
    value = draw(st.integers(-5, 5))
    kids = [] if depth >= 2 else draw(st.lists(_nodes(depth + 1), max_size=2))
    py = Node(value, [k[0] for k in kids])
    js: dict[str, Any] = {"value": value}
    if kids or draw(st.booleans()):
        js["children"] = [k[1] for k in kids]
    return py, js


def _same(v: Any) -> Any:
    return v, v


def _point(x: int, y: Optional[int], tags: list[str]) -> tuple[Point, dict[str, Any]]:
    js: dict[str, Any] = {"x": x, "tags": tags}
    if y is not None:
        js["y"] = y
    return Point(x, 0 if y is None else y, tags), js


INTS = st.integers(-1000, 1000)
FLOATS = st.floats(allow_nan=False, allow_infinity=False)
TEXT = st.text(max_size=5)
POINTS = st.builds(_point, INTS, st.none() | INTS, st.lists(TEXT, max_size=2))
COLORS = st.sampled_from(list(Color)).map(lambda c: (c, c.value))

# annotation -> strategy of (python value, JSON value)
POOL: list[tuple[object, st.SearchStrategy[tuple[Any, Any]]]] = [
    (int, INTS.map(_same)),
    (float, FLOATS.map(_same)),
    (str, TEXT.map(_same)),
    (bool, st.booleans().map(_same)),
    (Any, JSON_VALUES.map(_same)),
    (Optional[int], (st.none() | INTS).map(_same)),
    (list[int], st.lists(INTS, max_size=3).map(_same)),
    (tuple[int, str], st.tuples(INTS, TEXT).map(lambda t: (t, list(t)))),
    (tuple[float, ...], st.lists(FLOATS, max_size=3).map(lambda v: (tuple(v), v))),
    (set[str], st.sets(TEXT, max_size=3).map(lambda s: (s, sorted(s)))),
    (frozenset[int], st.frozensets(INTS, max_size=3).map(lambda s: (s, sorted(s)))),
    (dict[str, int], st.dictionaries(TEXT, INTS, max_size=3).map(_same)),
    (Literal["a", "b"], st.sampled_from(["a", "b"]).map(_same)),
    (Color, COLORS),
    (
        list[Color],
        st.lists(COLORS, max_size=3).map(lambda v: ([p for p, _ in v], [j for _, j in v])),
    ),
    (Point, POINTS),
    (Optional[Point], st.none().map(_same) | POINTS),
    (Node, _nodes()),
    (Movie, st.builds(lambda t, y: Movie(title=t, year=y), TEXT, INTS).map(_same)),
    (Union[int, str], (INTS | TEXT).map(_same)),
    (Union[Point, Color], POINTS | COLORS),
    (Annotated[int, Field(minimum=0, maximum=100)], st.integers(0, 100).map(_same)),
    (
        Annotated[str, Field(min_length=1, max_length=3, pattern="^x")],
        st.from_regex(r"\Ax[a-z]{0,2}\Z").map(_same),
    ),
    (
        dict[str, list[Level]],
        st.dictionaries(TEXT, st.lists(st.sampled_from(list(Level)), max_size=2), max_size=2).map(
            lambda d: (d, {k: [int(x) for x in v] for k, v in d.items()})
        ),
    ),
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_derived_schema_accepts_and_converts_generated_arguments(data: st.DataObject) -> None:
    picks = data.draw(st.lists(st.integers(0, len(POOL) - 1), max_size=6))
    params: list[inspect.Parameter] = []
    py_args: dict[str, Any] = {}
    js_args: dict[str, Any] = {}
    for i, k in enumerate(picks):
        annotation, values = POOL[k]
        name = f"p{i}"
        has_default = data.draw(st.booleans())
        default = data.draw(values)[0] if has_default else inspect.Parameter.empty
        params.append(
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation
            )
        )
        if not has_default or data.draw(st.booleans()):
            py, js = data.draw(values)
            py_args[name] = py
            js_args[name] = js
    fn = make_fn(params)
    schema, infos = function_input_schema(fn)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert validate(js_args, schema) == []
    assert jsonschema.Draft202012Validator(schema).is_valid(js_args)
    converted = convert_arguments(infos, js_args)
    assert converted == py_args
    for name, py in py_args.items():
        assert type(converted[name]) is type(py)
    assert fn(**converted) == py_args
    for prop in schema["properties"].values():
        if "default" in prop:
            assert validate(prop["default"], {**prop, "$defs": schema.get("$defs", {})}) == []
    # Results: the JSON form of the Python values round-trips through to_jsonable.
    assert to_jsonable(py_args) == _normalise(js_args, py_args)
    # Missing required arguments and unknown arguments are reported.
    if any(p.default is inspect.Parameter.empty for p in params):
        assert validate({}, schema) != []
    assert validate({**js_args, "zz_unknown": 1}, schema) != []


def _normalise(js: dict[str, Any], py: dict[str, Any]) -> dict[str, Any]:
    """Fill in the dataclass defaults that the JSON form omitted."""
    return {
        k: to_jsonable(v) if dataclasses.is_dataclass(v) or _has_dataclass(v) else js[k]
        for k, v in py.items()
    }


def _has_dataclass(v: Any) -> bool:
    if isinstance(v, (list, tuple)):
        return any(dataclasses.is_dataclass(x) or _has_dataclass(x) for x in v)
    return False


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_return_values_validate_against_return_schema(data: st.DataObject) -> None:
    annotation, values = data.draw(st.sampled_from(POOL))
    schema, wrapped = return_schema(_ret(annotation))
    if schema is None:
        assert annotation is Any
        return
    jsonschema.Draft202012Validator.check_schema(schema)
    py, _ = data.draw(values)
    result = to_jsonable(py)
    instance = {"result": result} if wrapped else result
    assert validate(instance, schema) == []
    assert jsonschema.Draft202012Validator(schema).is_valid(instance)
