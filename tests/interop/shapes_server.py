"""An mcpwire server whose tools return (and take) many Python shapes, for structured output.

Run as ``python tests/interop/shapes_server.py`` (stdio). The reference SDK client checks every
``structuredContent`` against the tool's ``outputSchema`` with jsonschema, so each tool here is
a probe of the schema mcpwire derives from a return annotation. The module uses
``from __future__ import annotations``, as the example server does and as much user code does.
"""

from __future__ import annotations

import dataclasses
import enum
from typing import Literal, NotRequired, TypedDict

from mcpwire import Server

server = Server("shapes", "0.0.1")


@dataclasses.dataclass
class Point:
    x: int
    y: int = 0


class Node(TypedDict):
    value: int
    children: list[Node]


class A(TypedDict):
    kind: Literal["a"]
    a: int


class B(TypedDict):
    kind: Literal["b"]
    b: str


class Partial(TypedDict):
    required: str
    optional: NotRequired[int]


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@server.tool()
def ints() -> list[int]:
    return [1, 2, 3]


@server.tool()
def mapping() -> dict[str, float]:
    return {"a": 1.5, "b": 2}


@server.tool()
def maybe(flag: bool) -> int | None:
    return 1 if flag else None


@server.tool()
def point() -> Point:
    return Point(3, 4)


@server.tool()
def points() -> list[Point]:
    return [Point(1), Point(2, 3)]


@server.tool()
def tree() -> Node:
    return {"value": 1, "children": [{"value": 2, "children": []}]}


@server.tool()
def either(which: Literal["a", "b"]) -> A | B:
    return {"kind": "a", "a": 1} if which == "a" else {"kind": "b", "b": "x"}


@server.tool()
def optional_point(flag: bool) -> Point | None:
    return Point(1) if flag else None


@server.tool()
def color() -> Color:
    return Color.GREEN


@server.tool()
def tagged() -> Literal["x", "y"]:
    return "y"


@server.tool()
def pair() -> tuple[int, str]:
    return (1, "a")


@server.tool()
def number() -> float:
    return 2


@server.tool()
def nested() -> dict[str, list[Point]]:
    return {"k": [Point(1)]}


@server.tool()
def describe(c: Color, p: Point, opt: int | None = None) -> str:
    """Structured arguments: an enum, a dataclass, an optional."""
    return f"{c.value} {p.x},{p.y} {opt}"


@server.tool()
def partial(full: bool) -> Partial:
    """A TypedDict with a NotRequired key, returned with and without it."""
    return {"required": "r", "optional": 1} if full else {"required": "r"}


@server.tool()
def take_partial(p: Partial) -> str:
    """A TypedDict argument whose NotRequired key may be left out."""
    return f"{p['required']} {p.get('optional')}"


if __name__ == "__main__":
    server.run()
