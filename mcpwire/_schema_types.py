"""Annotations to JSON Schema: ``Field``, ``ParamInfo`` and the recursive builder.

Part of the theory of operation of ``mcpwire._schema``, which holds the entry
points (``function_input_schema``, ``return_schema``).

Annotations to schema
    One recursive function, ``_Builder.schema``, maps an annotation to a schema:
    scalars to ``type``; ``list``/``Sequence``/``tuple[X, ...]`` to arrays,
    fixed tuples to ``prefixItems`` with equal ``minItems``/``maxItems``, sets to
    ``uniqueItems`` arrays; ``dict[str, X]``/``Mapping`` to objects whose
    ``additionalProperties`` is X; unions to a flattened, de-duplicated
    ``anyOf`` (``Any`` anywhere in a union makes it ``{}``); ``Literal`` and
    ``Enum`` to ``enum`` (with ``type`` when all values share one); dataclasses
    and ``TypedDict`` to closed objects. ``Annotated`` metadata adds keywords: a
    plain string is a description, a ``Field`` gives the rest. Anything else is
    a ``TypeError`` naming the parameter and the type.

Inline first, ``$ref`` only for cycles
    Several LLM providers reject ``$ref``/``$defs`` (see pain point 24), so
    classes are inlined at every use. Only a class that is reached again while
    it is still being expanded goes to ``$defs``: the inner occurrence becomes
    ``{"$ref": "#/$defs/Name"}``, and when the outer expansion finishes the class
    is marked recursive, stored in ``$defs`` and referenced from then on. A
    recursive class that *is* the output schema refers to itself as ``#``.
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import enum
import inspect
import re
import types
import typing
from collections.abc import Callable, Sequence
from typing import Any

from ._docstrings import _param_docs, _summary_from_doc
from ._jsonable import _jsonable_default
from .sansio._json import JSONObject, JSONValue
from .sansio._record import FRESH_DICT, Record, fill

__all__ = (
    "Field",
    "ParamInfo",
    "_EMPTY",
    "_MAPPINGS",
    "_NONE_TYPE",
    "_SEQUENCES",
    "_SETS",
    "_Builder",
    "_class_hints",
    "_is_dataclass_type",
    "_is_typeddict",
    "_is_union",
    "_strip_wrappers",
    "_unwrap",
)

_EMPTY = inspect.Parameter.empty
_NONE_TYPE = type(None)
_SEQUENCES = (list, cabc.Sequence, cabc.MutableSequence)
_SETS = (set, frozenset, cabc.Set, cabc.MutableSet)
_MAPPINGS = (dict, cabc.Mapping, cabc.MutableMapping)
_WRAPPERS = frozenset(("Required", "NotRequired", "ReadOnly"))


class Field(Record):
    """Schema keywords for ``Annotated[X, Field(...)]``.

    ``min_length``/``max_length`` become ``minLength``/``maxLength`` for strings,
    ``minItems``/``maxItems`` for arrays and ``minProperties``/``maxProperties``
    for objects.
    """

    description: str | None
    title: str | None
    minimum: float | None
    maximum: float | None
    min_length: int | None
    max_length: int | None
    pattern: str | None
    examples: Sequence[JSONValue] | None

    def __init__(
        self,
        description: str | None = None,
        title: str | None = None,
        minimum: float | None = None,
        maximum: float | None = None,
        min_length: int | None = None,
        max_length: int | None = None,
        pattern: str | None = None,
        examples: Sequence[JSONValue] | None = None,
    ) -> None:
        if pattern is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                msg = f"Field pattern {pattern!r} is not a valid regex: {exc}"
                raise ValueError(msg) from exc
        fill(
            self, (description, title, minimum, maximum, min_length, max_length, pattern, examples)
        )

    def apply(self, schema: JSONObject) -> None:
        """Add this field's keywords to ``schema`` (in place)."""
        if self.title is not None:
            schema["title"] = self.title
        if self.description is not None:
            schema["description"] = self.description
        if self.minimum is not None:
            schema["minimum"] = self.minimum
        if self.maximum is not None:
            schema["maximum"] = self.maximum
        if self.min_length is not None or self.max_length is not None:
            kinds = _json_types(schema)
            for kind, lo, hi in (
                ("string", "minLength", "maxLength"),
                ("array", "minItems", "maxItems"),
                ("object", "minProperties", "maxProperties"),
            ):
                if kind in kinds or (not kinds and kind == "string"):
                    if self.min_length is not None:
                        schema[lo] = self.min_length
                    if self.max_length is not None:
                        schema[hi] = self.max_length
        if self.pattern is not None:
            schema["pattern"] = self.pattern
        if self.examples is not None:
            schema["examples"] = list(self.examples)


class ParamInfo(Record, eq=False):
    """One parameter of a tool or prompt function, as seen by ``function_input_schema``.

    ``default`` is ``inspect.Parameter.empty`` when there is none. ``converter``
    turns the validated JSON argument into the Python value the function
    expects; it is ``None`` when the JSON value can be passed as is.
    """

    name: str
    annotation: object
    required: bool
    default: object
    description: str | None
    schema: JSONObject
    converter: Callable[[JSONValue], object] | None

    def __init__(
        self,
        name: str,
        annotation: object,
        required: bool,
        default: object = _EMPTY,
        description: str | None = None,
        schema: JSONObject = FRESH_DICT,
        converter: Callable[[JSONValue], object] | None = None,
    ) -> None:
        fill(self, (name, annotation, required, default, description, schema, converter))


# --------------------------------------------------------------------------- helpers


def _json_types(schema: JSONObject) -> set[str]:
    """The JSON types a schema (or the branches of its ``anyOf``) declares."""
    found: set[str] = set()
    t = schema.get("type")
    if isinstance(t, str):
        found.add(t)
    elif isinstance(t, list):
        found.update(x for x in t if isinstance(x, str))
    branches = schema.get("anyOf")
    if isinstance(branches, list):
        for b in branches:
            if isinstance(b, dict):
                found |= _json_types(b)
    return found


def _type_name(tp: object) -> str:
    if isinstance(tp, type):
        return tp.__qualname__
    return repr(tp).replace("typing.", "")


def _strip_wrappers(tp: object) -> object:
    """Remove ``Required``/``NotRequired``/``ReadOnly`` qualifiers."""
    while True:
        origin = typing.get_origin(tp)
        if origin is None or getattr(origin, "_name", None) not in _WRAPPERS:
            return tp
        tp = typing.get_args(tp)[0]


def _unwrap(tp: object) -> object:
    """The bare type under ``Annotated``, qualifiers, ``NewType`` and ``type`` aliases."""
    while True:
        tp = _strip_wrappers(tp)
        if typing.get_origin(tp) is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif hasattr(tp, "__supertype__"):
            tp = tp.__supertype__
        elif type(tp).__name__ == "TypeAliasType" and hasattr(tp, "__value__"):
            tp = tp.__value__
        else:
            return tp


def _is_typeddict(tp: object) -> bool:
    return (
        isinstance(tp, type)
        and issubclass(tp, dict)
        and hasattr(tp, "__required_keys__")
        and hasattr(tp, "__total__")
    )


def _is_dataclass_type(tp: object) -> bool:
    return isinstance(tp, type) and dataclasses.is_dataclass(tp)


def _is_union(origin: object) -> bool:
    return origin is typing.Union or origin is types.UnionType


def _scalar_type(values: Sequence[object]) -> str | None:
    """The JSON type shared by all ``values`` (ints and floats share "number")."""
    kinds: set[str] = set()
    for v in values:
        if v is None:
            kinds.add("null")
        elif isinstance(v, bool):
            kinds.add("boolean")
        elif isinstance(v, int):
            kinds.add("integer")
        elif isinstance(v, float):
            kinds.add("number")
        elif isinstance(v, str):
            kinds.add("string")
        else:
            return None
    if kinds == {"integer", "number"}:
        return "number"
    return kinds.pop() if len(kinds) == 1 else None


def _class_hints(tp: type) -> dict[str, Any]:
    """Field annotations of a dataclass or ``TypedDict``."""
    try:
        return typing.get_type_hints(tp, include_extras=True)
    except Exception as exc:
        raise TypeError(
            f"cannot resolve the type annotations of {tp.__qualname__}: {exc!r}"
        ) from exc


# --------------------------------------------------------------------------- schema


class _Builder:
    """Maps annotations to schemas, collecting ``$defs`` for recursive classes only."""

    def __init__(self, root_class: object = None) -> None:
        self.defs: dict[str, JSONValue] = {}
        self.names: dict[type, str] = {}
        self.stack: list[type] = []
        self.root_class = root_class

    def finish(self, schema: JSONObject) -> JSONObject:
        if self.defs:
            schema["$defs"] = dict(self.defs)
        return schema

    def schema(self, tp: object, where: str) -> JSONObject:
        tp = _strip_wrappers(tp)
        if tp is Any or tp is object:
            return {}
        if tp is None or tp is _NONE_TYPE:
            return {"type": "null"}
        if tp is str:
            return {"type": "string"}
        if tp is bool:
            return {"type": "boolean"}
        if tp is int:
            return {"type": "integer"}
        if tp is float:
            return {"type": "number"}
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if origin is typing.Annotated:
            return self.annotated(args[0], tp.__metadata__, where)  # type: ignore[attr-defined]
        if _is_union(origin):
            return self.union(args, where)
        if origin is typing.Literal:
            return self.literal(args, tp, where)
        if tp in _SEQUENCES or tp is tuple or tp is typing.Tuple:  # noqa: UP006
            return {"type": "array"}
        if tp in _SETS:
            return {"type": "array", "uniqueItems": True}
        if tp in _MAPPINGS:
            return {"type": "object"}
        if origin in _SEQUENCES:
            return self.array_schema(args[0] if args else Any, where)
        if origin in _SETS:
            return {**self.array_schema(args[0] if args else Any, where), "uniqueItems": True}
        if origin is tuple:
            return self.tuple_schema(args, where)
        if origin in _MAPPINGS:
            return self.mapping(args, tp, where)
        if hasattr(tp, "__supertype__") or type(tp).__name__ == "TypeAliasType":
            return self.schema(_unwrap(tp), where)
        if isinstance(tp, type):
            if issubclass(tp, enum.Enum):
                return self.enum_schema(tp, where)
            if _is_dataclass_type(tp) or _is_typeddict(tp):
                return self.class_schema(tp, where)
        raise TypeError(f"{where}: unsupported type {_type_name(tp)}")

    def annotated(self, base: object, metadata: tuple[object, ...], where: str) -> JSONObject:
        schema = dict(self.schema(base, where))
        for meta in metadata:
            if isinstance(meta, str):
                schema["description"] = meta
            elif isinstance(meta, Field):
                meta.apply(schema)
        return schema

    def union(self, members: tuple[object, ...], where: str) -> JSONObject:
        branches: list[JSONObject] = []
        for m in members:
            s = self.schema(m, where)
            if not s:
                return {}
            nested = s.get("anyOf")
            flat = nested if len(s) == 1 and isinstance(nested, list) else [s]
            for b in flat:
                if isinstance(b, dict) and b not in branches:
                    branches.append(b)
        if len(branches) == 1:
            return branches[0]
        return {"anyOf": list[JSONValue](branches)}

    def literal(self, values: tuple[object, ...], tp: object, where: str) -> JSONObject:
        out: list[JSONValue] = []
        for v in values:
            if isinstance(v, enum.Enum):
                v = v.value
            if v is not None and not isinstance(v, (str, int, float, bool)):
                raise TypeError(f"{where}: unsupported Literal value {v!r} in {_type_name(tp)}")
            out.append(v)
        schema: JSONObject = {"enum": out}
        kind = _scalar_type(out)
        if kind is not None:
            schema = {"type": kind, "enum": out}
        return schema

    def enum_schema(self, tp: type[enum.Enum], where: str) -> JSONObject:
        values: list[JSONValue] = []
        for member in tp:
            v = member.value
            if v is not None and not isinstance(v, (str, int, float, bool)):
                raise TypeError(
                    f"{where}: enum {tp.__qualname__} has a value that is not a JSON scalar: {v!r}"
                )
            values.append(v)
        if not values:
            raise TypeError(f"{where}: enum {tp.__qualname__} has no members")
        kind = _scalar_type(values)
        return {"type": kind, "enum": values} if kind is not None else {"enum": values}

    def array_schema(self, item: object, where: str) -> JSONObject:
        items = self.schema(item, where)
        return {"type": "array", "items": items} if items else {"type": "array"}

    def tuple_schema(self, args: tuple[object, ...], where: str) -> JSONObject:
        if args == ((),):  # Python 3.10 spells tuple[()] this way
            args = ()
        if len(args) == 2 and args[1] is Ellipsis:
            return self.array_schema(args[0], where)
        prefix: list[JSONValue] = [self.schema(a, where) for a in args]
        if not prefix:
            return {"type": "array", "maxItems": 0}
        n = len(prefix)
        return {"type": "array", "prefixItems": prefix, "minItems": n, "maxItems": n}

    def mapping(self, args: tuple[object, ...], tp: object, where: str) -> JSONObject:
        if not args:
            return {"type": "object"}
        key = _unwrap(args[0])
        schema: JSONObject = {"type": "object"}
        if typing.get_origin(key) is typing.Literal and all(
            isinstance(k, str) for k in typing.get_args(key)
        ):
            schema["propertyNames"] = {"enum": list(typing.get_args(key))}
        elif key is not str and key is not Any:
            raise TypeError(f"{where}: unsupported type {_type_name(tp)} (keys must be str)")
        values = self.schema(args[1], where)
        if values:
            schema["additionalProperties"] = values
        return schema

    def class_schema(self, tp: type, where: str) -> JSONObject:
        if tp in self.stack:
            if tp is self.root_class:
                return {"$ref": "#"}
            return {"$ref": f"#/$defs/{self.def_name(tp)}"}
        name = self.names.get(tp)
        if name is not None and name in self.defs:
            return {"$ref": f"#/$defs/{name}"}
        self.stack.append(tp)
        try:
            schema = self.typeddict(tp, where) if _is_typeddict(tp) else self.dataclass(tp, where)
        finally:
            self.stack.pop()
        name = self.names.get(tp)
        if name is not None:  # reached itself while being expanded
            self.defs[name] = schema
            return {"$ref": f"#/$defs/{name}"}
        return schema

    def def_name(self, tp: type) -> str:
        name = self.names.get(tp)
        if name is None:
            name = tp.__name__
            taken = set(self.names.values())
            n = 2
            while name in taken:
                name = f"{tp.__name__}{n}"
                n += 1
            self.names[tp] = name
        return name

    def object_schema(
        self,
        tp: type,
        where: str,
        fields: list[tuple[str, object, bool, object, str | None]],
    ) -> JSONObject:
        docs = _param_docs(tp.__doc__)
        props: JSONObject = {}
        required: list[JSONValue] = []
        for name, ann, is_required, default, description in fields:
            prop = self.schema(ann, f"{where}: field {name!r} of {tp.__qualname__}")
            prop = dict(prop)
            if "description" not in prop:
                text = description or docs.get(name)
                if text:
                    prop["description"] = text
            if is_required:
                required.append(name)
            elif default is not _EMPTY:
                ok, value = _jsonable_default(default)
                if ok:
                    prop["default"] = value
            props[name] = prop
        schema: JSONObject = {"type": "object"}
        summary = _class_summary(tp)
        if summary:
            schema["description"] = summary
        schema["properties"] = props
        if required:
            schema["required"] = required
        schema["additionalProperties"] = False
        return schema

    def dataclass(self, tp: type, where: str) -> JSONObject:
        hints = _class_hints(tp)
        fields: list[tuple[str, object, bool, object, str | None]] = []
        for f in dataclasses.fields(tp):
            if not f.init:
                continue
            has_default = f.default is not dataclasses.MISSING
            no_factory = f.default_factory is dataclasses.MISSING
            description = f.metadata.get("description")
            fields.append(
                (
                    f.name,
                    hints.get(f.name, Any),
                    not has_default and no_factory,
                    f.default if has_default else _EMPTY,
                    description if isinstance(description, str) else None,
                )
            )
        return self.object_schema(tp, where, fields)

    def typeddict(self, tp: type, where: str) -> JSONObject:
        hints = _class_hints(tp)
        required_keys = _typeddict_required(tp, hints)
        fields: list[tuple[str, object, bool, object, str | None]] = [
            (name, ann, name in required_keys, _EMPTY, None) for name, ann in hints.items()
        ]
        return self.object_schema(tp, where, fields)


def _qualifier(tp: object) -> str | None:
    """``"Required"``/``"NotRequired"`` when ``tp`` (maybe inside Annotated) carries one."""
    while True:
        origin = typing.get_origin(tp)
        if origin is None:
            return None
        name = getattr(origin, "_name", None)
        if name in ("Required", "NotRequired"):
            return str(name)
        if origin is typing.Annotated or name == "ReadOnly":
            tp = typing.get_args(tp)[0]
            continue
        return None


def _typeddict_required(tp: type, hints: dict[str, Any]) -> frozenset[str]:
    """The required keys of a TypedDict.

    ``__required_keys__`` is computed when the class is made; under
    ``from __future__ import annotations`` the ``Required``/``NotRequired``
    qualifiers are still strings then, so Python counts only totality. The
    evaluated hints carry the qualifiers, and they win.
    """
    required = set(getattr(tp, "__required_keys__", frozenset()))
    for name, hint in hints.items():
        marked = _qualifier(hint)
        if marked == "Required":
            required.add(name)
        elif marked == "NotRequired":
            required.discard(name)
    return frozenset(required)


def _class_summary(tp: type) -> str | None:
    doc = tp.__doc__
    if not doc or (_is_dataclass_type(tp) and doc.startswith(tp.__name__ + "(")):
        return None
    return _summary_from_doc(doc)
