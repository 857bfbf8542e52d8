"""The records (``mcpwire.sansio._record``) behave as the dataclasses they stand in for.

Messages, the client's typed views and the content helpers are frozen records;
the server's definitions are mutable ones. Each is checked for what a
``@dataclass`` would give: constructor defaults and keywords, value equality and
hashing (less hidden fields), ``repr``, immutability, pickling and copying,
pattern matching, and the ``dataclasses`` functions.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import pytest

from mcpwire import (
    CallToolResult,
    Completion,
    Content,
    EmbeddedResource,
    GetPromptResult,
    Image,
    Prompt,
    PromptArgument,
    PromptMessage,
    Resource,
    ResourceContents,
    ResourceLink,
    ResourceTemplate,
    Task,
    Text,
    Tool,
    ToolResult,
)
from mcpwire._registry import CompletionDef, PromptDef, ResourceDef, ToolDef
from mcpwire._schema import Field, ParamInfo
from mcpwire.sansio import (
    Batch,
    ErrorObject,
    ErrorResponse,
    Invalid,
    Notification,
    Request,
    Response,
)
from mcpwire.sansio._record import FRESH_DICT, Record, fill, setters

FROZEN: list[Any] = [
    Request(1, "tools/call", {"name": "echo"}),
    Notification("notifications/initialized"),
    Response("a", {"ok": True}),
    ErrorObject(-32601, "Method not found", {"method": "x"}),
    ErrorResponse(None, ErrorObject(-32700, "Parse error")),
    Invalid(ErrorObject(-32600, "bad"), 3, False, "m"),
    Batch((Request(1, "a"), Notification("b"))),
    Content("text", text="hi", raw={"type": "text", "text": "hi"}),
    Tool("echo", {"type": "object"}, description="Echo"),
    CallToolResult([Content("text", text="x")], {"a": 1}, True),
    Resource("file:///a", "a", size=3),
    ResourceTemplate("file:///{p}", "files"),
    ResourceContents("file:///a", text="body"),
    PromptArgument("who", "whom to greet", True),
    Prompt("greet", [PromptArgument("who")]),
    GetPromptResult([{"role": "user"}], "d"),
    Completion(["a", "b"], 2, True),
    Task("t1", "working", ttl_ms=1000),
    Text("hello"),
    Image(b"\x89PNG"),
    ResourceLink("file:///a", "a"),
    EmbeddedResource("file:///a", blob=b"x"),
    PromptMessage("user", Text("hi")),
    Field(description="d", min_length=1),
]


@pytest.mark.parametrize("record", FROZEN, ids=lambda r: type(r).__name__)
def test_frozen_records_refuse_assignment_and_deletion(record: Any) -> None:
    name = type(record).__match_args__[0]
    before = getattr(record, name)
    with pytest.raises(dataclasses.FrozenInstanceError, match=f"cannot assign to field '{name}'"):
        setattr(record, name, before)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot delete"):
        delattr(record, name)
    with pytest.raises(AttributeError):
        record.not_a_field = 1
    assert getattr(record, name) is before
    assert not hasattr(record, "__dict__")


@pytest.mark.parametrize("record", FROZEN, ids=lambda r: type(r).__name__)
def test_records_copy_pickle_and_compare_by_value(record: Any) -> None:
    for clone in (copy.copy(record), copy.deepcopy(record), pickle.loads(pickle.dumps(record))):
        assert clone == record
        assert clone is not record
        assert type(clone) is type(record)
        for name in type(record).__match_args__:
            assert getattr(clone, name) == getattr(record, name)


@pytest.mark.parametrize("record", FROZEN, ids=lambda r: type(r).__name__)
def test_records_are_dataclasses_to_the_dataclasses_module(record: Any) -> None:
    cls = type(record)
    assert dataclasses.is_dataclass(record)
    assert dataclasses.is_dataclass(cls)
    assert tuple(f.name for f in dataclasses.fields(cls)) == cls.__match_args__
    as_dict = dataclasses.asdict(record)
    assert list(as_dict) == list(cls.__match_args__)
    assert len(dataclasses.astuple(record)) == len(as_dict)
    assert dataclasses.replace(record) == record


def test_constructor_defaults_and_keywords() -> None:
    assert Request(7, "m") == Request(id=7, method="m", params=None)
    assert Notification("m").params is None
    assert ErrorObject(1, "x").data is None
    invalid = Invalid(ErrorObject(-32600, "bad"))
    assert (invalid.id, invalid.reply, invalid.method) == (None, True, None)
    assert invalid.response() == ErrorResponse(None, ErrorObject(-32600, "bad"))
    tool = Tool(name="t", input_schema={})
    assert (tool.title, tool.output_schema, tool.icons, tool.meta, tool.raw) == (
        None,
        None,
        None,
        None,
        {},
    )
    assert Task("t", "working").terminal is False
    assert Completion([]).has_more is False
    assert Image(b"").mime_type == "image/png"
    with pytest.raises(TypeError):
        Request(1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Request(1, "m", None, None)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="not a valid regex"):
        Field(pattern="(")


def test_default_containers_are_fresh_per_instance() -> None:
    a, b = Content("text"), Content("text")
    assert a.raw == {} and a.raw is not b.raw
    assert a.raw is not FRESH_DICT
    r1, r2 = ToolResult(), ToolResult()
    assert r1.content == [] and r1.content is not r2.content
    d1, d2 = ToolDef("a", print, {}), ToolDef("b", print, {})
    assert d1.params == {} and d1.params is not d2.params
    field = dataclasses.fields(Content)[-1]
    assert field.name == "raw"
    assert field.default_factory is dict
    assert dataclasses.fields(ToolResult)[0].default_factory is list


def test_hidden_fields_are_neither_shown_nor_compared() -> None:
    a = Content("text", text="hi", raw={"type": "text", "text": "hi"})
    b = Content("text", text="hi", raw={"type": "text", "text": "hi", "extra": 1})
    assert a == b
    assert hash(a) == hash(b)
    assert repr(a) == (
        "Content(type='text', text='hi', data=None, mime_type=None, uri=None, resource=None)"
    )
    raw = dataclasses.fields(Tool)[-1]
    assert (raw.name, raw.repr, raw.compare) == ("raw", False, False)
    assert Content("text", text="a") != Content("text", text="b")


def test_repr_equality_and_hash_follow_the_fields() -> None:
    request = Request(1, "m", {"a": 1})
    assert repr(request) == "Request(id=1, method='m', params={'a': 1})"
    assert (
        repr(Batch((Notification("n"),))) == "Batch(items=(Notification(method='n', params=None),))"
    )
    assert Request(1, "m") == Request(1, "m")
    assert Request(1, "m") != Request("1", "m")
    assert Request(1, "m") != Notification("m")
    assert Request(1, "m").__eq__(("1", "m")) is NotImplemented
    assert hash(Request(1, "m")) == hash(Request(1, "m"))
    assert len({Request(1, "m"), Request(1, "m"), Request(2, "m")}) == 2
    with pytest.raises(TypeError):
        hash(request)  # a dict field is unhashable, as in a dataclass


def test_pattern_matching_uses_the_constructor_order() -> None:
    match Request(5, "ping"):
        case Request(rid, method, params):
            assert (rid, method, params) == (5, "ping", None)
    match ErrorResponse(1, ErrorObject(-1, "m")):
        case ErrorResponse(error_id, ErrorObject(code, message)):
            assert (error_id, code, message) == (1, -1, "m")
    assert Invalid.__match_args__ == ("error", "id", "reply", "method")


def test_mutable_records_assign_and_are_unhashable() -> None:
    result = ToolResult([{"type": "text", "text": "x"}])
    result.is_error = True
    assert result == ToolResult([{"type": "text", "text": "x"}], is_error=True)
    assert repr(result) == (
        "ToolResult(content=[{'type': 'text', 'text': 'x'}], structured=None, "
        "is_error=True, meta=None)"
    )
    with pytest.raises(TypeError, match="unhashable"):
        hash(result)
    completion = CompletionDef(print, "ref/prompt", "greet", None)
    completion.argument = "who"
    assert completion.argument == "who"
    prompt = PromptDef("p", print, [])
    del prompt.title
    assert not hasattr(prompt, "title")
    assert not dataclasses.fields(ToolResult)[0].kw_only
    assert pickle.loads(pickle.dumps(result)) == result


def test_identity_records_compare_by_identity() -> None:
    a = ParamInfo("x", int, True)
    b = ParamInfo("x", int, True)
    assert a != b
    assert a == a
    assert len({a, b}) == 2
    assert a.schema == {} and a.schema is not b.schema
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.name = "y"  # type: ignore[misc]


def test_subclass_records_list_their_base_fields_first() -> None:
    resource = ResourceDef(uri="file:///a", name="a", fn=print)
    assert ResourceDef.__match_args__[:2] == ("name", "fn")
    assert ResourceDef.__match_args__[-2:] == ("uri", "size")
    assert (resource.uri, resource.size, resource.title) == ("file:///a", None, None)
    assert repr(resource).startswith("ResourceDef(name='a', fn=<built-in function print>")
    fields = dataclasses.fields(ResourceDef)
    assert all(f.kw_only for f in fields)
    assert dataclasses.replace(resource, uri="file:///b").uri == "file:///b"
    with pytest.raises(TypeError):
        ResourceDef("file:///a", "a", print)  # type: ignore[call-arg]  # keywords only


def test_a_record_class_from_scratch() -> None:
    class Point(Record, hidden=("label",)):
        x: int
        y: int
        label: str

        def __init__(self, x: int, y: int = 0, label: str = "") -> None:
            _x(self, x)
            _y(self, y)
            _label(self, label)

    _x, _y, _label = setters(Point)
    assert Point.__slots__ == ("x", "y", "label")
    assert Point.__match_args__ == ("x", "y", "label")
    assert Point(1, 2, "a") == Point(1, 2, "b")
    assert repr(Point(1)).endswith("<locals>.Point(x=1, y=0)")  # the qualified name
    with pytest.raises(dataclasses.FrozenInstanceError):
        Point(1).x = 2  # type: ignore[misc]

    class Pair(Record, frozen=False):
        left: object
        right: object

        def __init__(self, left: object, right: object) -> None:
            self.left = left
            self.right = right

    pair = Pair(1, 2)
    pair.right = 3
    assert pair == Pair(1, 3)
    point = Point.__new__(Point)
    fill(point, (4, 5, "c"))
    assert (point.x, point.y, point.label) == (4, 5, "c")
