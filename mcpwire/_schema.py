"""JSON Schema from Python signatures, JSON arguments to Python values, and back.

Theory of operation
===================

A tool is a plain Python function. ``function_input_schema`` reads its
``inspect.signature`` and ``typing.get_type_hints(..., include_extras=True)`` and
produces the MCP ``inputSchema``: a closed object (``additionalProperties:
false``) with one property per parameter, parameters without defaults in
``required``, and JSON-serialisable defaults as ``default``. ``return_schema``
does the same for ``outputSchema``; ``docstring_summary`` gives the tool
description. The validator lives in ``mcpwire._jsonschema`` and is re-exported
here (``compile``, ``validate``, ``Validator``).

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

Docstrings
    Parameter descriptions come from ``Annotated`` first, then from the
    docstring: Google (``Args:`` with ``name (type): text`` entries and indented
    continuation lines), numpy (``Parameters`` over a dashed rule, ``name :
    type`` entries) and reST (``:param name: text``). The summary is everything
    before the first section header of any of the three styles.

JSON to Python and back
    ``ParamInfo.converter`` is built alongside the schema for annotations whose
    Python value differs from the JSON one: enums, dataclasses, tuples, sets,
    ``int`` (the validator accepts ``2.0`` as an integer; the function gets
    ``2``), and containers or unions holding those. Everything else passes
    through untouched at no cost. A union with a converting member tries its
    members in order and converts with the first whose schema the value
    validates against. ``to_jsonable`` is the inverse, for structured results.
"""

from __future__ import annotations

import collections.abc as cabc
import dataclasses
import enum
import functools
import inspect
import math
import re
import types
import typing
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, TypeAlias

from ._jsonschema import Validator, compile, validate
from .sansio._json import JSONObject, JSONValue

__all__ = (
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
)

_Converter: TypeAlias = "Callable[[Any], object]"
_EMPTY = inspect.Parameter.empty
_NONE_TYPE = type(None)
_SEQUENCES = (list, cabc.Sequence, cabc.MutableSequence)
_SETS = (set, frozenset, cabc.Set, cabc.MutableSet)
_MAPPINGS = (dict, cabc.Mapping, cabc.MutableMapping)
_WRAPPERS = frozenset(("Required", "NotRequired", "ReadOnly"))


@dataclasses.dataclass(frozen=True)
class Field:
    """Schema keywords for ``Annotated[X, Field(...)]``.

    ``min_length``/``max_length`` become ``minLength``/``maxLength`` for strings,
    ``minItems``/``maxItems`` for arrays and ``minProperties``/``maxProperties``
    for objects.
    """

    description: str | None = None
    title: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    examples: Sequence[JSONValue] | None = None

    def __post_init__(self) -> None:
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                msg = f"Field pattern {self.pattern!r} is not a valid regex: {exc}"
                raise ValueError(msg) from exc

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


@dataclasses.dataclass(frozen=True, eq=False)
class ParamInfo:
    """One parameter of a tool or prompt function, as seen by ``function_input_schema``.

    ``default`` is ``inspect.Parameter.empty`` when there is none. ``converter``
    turns the validated JSON argument into the Python value the function
    expects; it is ``None`` when the JSON value can be passed as is.
    """

    name: str
    annotation: object
    required: bool
    default: object = _EMPTY
    description: str | None = None
    schema: JSONObject = dataclasses.field(default_factory=dict)
    converter: Callable[[JSONValue], object] | None = None


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


def _callable_name(fn: object) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return str(name) if name else repr(fn)


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


def _jsonable_default(value: object) -> tuple[bool, JSONValue]:
    try:
        out = to_jsonable(value)
    except (TypeError, ValueError):
        return False, None
    return _finite(out), out


def _finite(value: JSONValue) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_finite(x) for x in value)
    if isinstance(value, dict):
        return all(_finite(x) for x in value.values())
    return True


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


def _type_hints(fn: object, name: str) -> dict[str, Any]:
    target = fn
    while isinstance(target, functools.partial):
        target = target.func
    if isinstance(target, type):
        target = typing.cast(Any, target).__init__
    elif not isinstance(target, type) and not inspect.isroutine(target) and callable(target):
        target = type(target).__call__
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception as exc:
        raise TypeError(f"cannot resolve the type annotations of {name}: {exc!r}") from exc


def _class_hints(tp: type) -> dict[str, Any]:
    """Field annotations of a dataclass or ``TypedDict``."""
    try:
        return typing.get_type_hints(tp, include_extras=True)
    except Exception as exc:
        raise TypeError(
            f"cannot resolve the type annotations of {tp.__qualname__}: {exc!r}"
        ) from exc


# --------------------------------------------------------------------------- docstrings

_SECTIONS = frozenset(
    (
        "args",
        "arguments",
        "parameters",
        "params",
        "keyword args",
        "keyword arguments",
        "kwargs",
        "other parameters",
        "attributes",
        "returns",
        "return",
        "yields",
        "yield",
        "raises",
        "raise",
        "receives",
        "warns",
        "examples",
        "example",
        "notes",
        "note",
        "see also",
        "warnings",
        "warning",
        "todo",
        "references",
        "methods",
    )
)
_PARAM_SECTIONS = frozenset(
    (
        "args",
        "arguments",
        "parameters",
        "params",
        "keyword args",
        "keyword arguments",
        "kwargs",
        "other parameters",
        "attributes",
    )
)
_GOOGLE_HEADER = re.compile(r"^\s*([A-Za-z][A-Za-z ]*?)\s*:\s*$")
_GOOGLE_ENTRY = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:(.*)$")
_NUMPY_RULE = re.compile(r"^\s*-{3,}\s*$")
_NUMPY_ENTRY = re.compile(r"^(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)\s*(?::.*)?$")
_REST_FIELD = re.compile(r"^\s*:(\w+)((?:\s+[^:]+?)?)\s*:(.*)$")
_REST_PARAM = frozenset(("param", "parameter", "arg", "argument", "key", "keyword"))
_REST_VAR = frozenset(("ivar", "var", "cvar"))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _is_header(lines: list[str], i: int) -> bool:
    line = lines[i]
    if i + 1 < len(lines) and line.strip() and _NUMPY_RULE.match(lines[i + 1]):
        return True
    m = _GOOGLE_HEADER.match(line)
    if m is not None and m.group(1).lower() in _SECTIONS:
        return True
    return _REST_FIELD.match(line) is not None or line.lstrip().startswith(".. ")


def _summary_from_doc(doc: str | None) -> str | None:
    if not doc:
        return None
    lines = inspect.cleandoc(doc).splitlines()
    end = next((i for i in range(len(lines)) if _is_header(lines, i)), len(lines))
    text = "\n".join(lines[:end]).strip()
    return text or None


def docstring_summary(fn: object) -> str | None:
    """The docstring of ``fn`` up to its first section header, dedented; ``None`` if empty."""
    doc = fn.__doc__ if isinstance(fn, type) else inspect.getdoc(fn)
    return _summary_from_doc(doc if isinstance(doc, str) else None)


def _param_docs(doc: str | None) -> dict[str, str]:
    """Per-parameter descriptions from a Google, numpy or reST docstring."""
    if not doc:
        return {}
    lines = inspect.cleandoc(doc).splitlines()
    found: dict[str, list[str]] = {}
    n = len(lines)
    i = 0
    while i < n:
        line = lines[i]
        header = _GOOGLE_HEADER.match(line)
        numpy = i + 1 < n and line.strip() and _NUMPY_RULE.match(lines[i + 1])
        rest = _REST_FIELD.match(line)
        if header is not None and header.group(1).lower() in _PARAM_SECTIONS:
            i = _google_section(lines, i, found)
        elif numpy and line.strip().lower() in _PARAM_SECTIONS:
            i = _numpy_section(lines, i, found)
        elif rest is not None and (rest.group(1) in _REST_PARAM or rest.group(1) in _REST_VAR):
            names = rest.group(2).split()
            i += 1
            if names:
                parts = found.setdefault(names[-1], [])
                parts.append(rest.group(3))
                while i < n and lines[i].strip() and _indent(lines[i]) > _indent(line):
                    parts.append(lines[i])
                    i += 1
        else:
            i += 1
    out: dict[str, str] = {}
    for name, parts in found.items():
        text = " ".join(" ".join(parts).split())
        if text:
            out[name.lstrip("*")] = text
    return out


def _google_section(lines: list[str], i: int, found: dict[str, list[str]]) -> int:
    base = _indent(lines[i])
    i += 1
    entry_indent: int | None = None
    current: list[str] | None = None
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        ind = _indent(line)
        if ind <= base:
            break
        if entry_indent is None:
            entry_indent = ind
        m = _GOOGLE_ENTRY.match(line.strip()) if ind <= entry_indent else None
        if m is not None:
            current = found.setdefault(m.group(1), [])
            current.append(m.group(2))
        elif current is not None:
            current.append(line)
        i += 1
    return i


def _numpy_section(lines: list[str], i: int, found: dict[str, list[str]]) -> int:
    base = _indent(lines[i])
    i += 2
    current: list[list[str]] = []
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and line.strip() and _NUMPY_RULE.match(lines[i + 1]):
            break
        if not line.strip():
            i += 1
            continue
        if _indent(line) <= base:
            m = _NUMPY_ENTRY.match(line.strip())
            if m is None:
                break
            names = [x.strip() for x in m.group(1).split(",")]
            current = [found.setdefault(name, []) for name in names]
        else:
            for parts in current:
                parts.append(line)
        i += 1
    return i


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
        required_keys: frozenset[str] = getattr(tp, "__required_keys__", frozenset())
        fields: list[tuple[str, object, bool, object, str | None]] = [
            (name, ann, name in required_keys, _EMPTY, None) for name, ann in hints.items()
        ]
        return self.object_schema(tp, where, fields)


def _class_summary(tp: type) -> str | None:
    doc = tp.__doc__
    if not doc or (_is_dataclass_type(tp) and doc.startswith(tp.__name__ + "(")):
        return None
    return _summary_from_doc(doc)


def _annotated_description(tp: object) -> str | None:
    tp = _strip_wrappers(tp)
    description = None
    if typing.get_origin(tp) is typing.Annotated:
        for meta in tp.__metadata__:  # type: ignore[attr-defined]
            if isinstance(meta, str):
                description = meta
            elif isinstance(meta, Field) and meta.description is not None:
                description = meta.description
    return description


def _is_skipped_type(tp: object, skip_types: tuple[type, ...]) -> bool:
    if not skip_types:
        return False
    tp = _unwrap(tp)
    origin = typing.get_origin(tp)
    if _is_union(origin):
        members = [m for m in typing.get_args(tp) if m is not _NONE_TYPE]
        return bool(members) and all(_is_skipped_type(m, skip_types) for m in members)
    cls = origin if isinstance(origin, type) else tp
    return isinstance(cls, type) and issubclass(cls, skip_types)


def function_input_schema(
    fn: Callable[..., object],
    *,
    skip: Collection[str] = (),
    skip_types: tuple[type, ...] = (),
) -> tuple[JSONObject, dict[str, ParamInfo]]:
    """The MCP ``inputSchema`` of ``fn`` and a ``ParamInfo`` for each schema property.

    Parameters named in ``skip``, and parameters annotated with a subclass of one
    of ``skip_types`` (e.g. a request context, alone or in ``X | None``), are
    left out. Raises ``TypeError`` for ``*args``, ``**kwargs``, positional-only
    parameters and annotations with no JSON Schema equivalent.
    """
    name = _callable_name(fn)
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"cannot read the signature of {name}: {exc}") from exc
    hints = _type_hints(fn, name)
    docs = _param_docs(inspect.getdoc(fn))
    builder = _Builder()
    properties: JSONObject = {}
    required: list[JSONValue] = []
    params: dict[str, ParamInfo] = {}
    for p in sig.parameters.values():
        if p.name in skip:
            continue
        ann = hints.get(p.name, _EMPTY)
        if ann is not _EMPTY and _is_skipped_type(ann, skip_types):
            continue
        if p.kind is p.VAR_POSITIONAL or p.kind is p.VAR_KEYWORD:
            star = "*" if p.kind is p.VAR_POSITIONAL else "**"
            raise TypeError(
                f"{name}: {star}{p.name} is not supported in a tool function; "
                "declare each argument as a named parameter"
            )
        if p.kind is p.POSITIONAL_ONLY:
            raise TypeError(
                f"{name}: parameter {p.name!r} is positional-only; "
                "tool arguments are passed by keyword"
            )
        where = f"parameter {p.name!r} of {name}"
        schema = dict(builder.schema(ann, where)) if ann is not _EMPTY else {}
        description = _annotated_description(ann) or docs.get(p.name)
        if description and "description" not in schema:
            schema["description"] = description
        is_required = p.default is _EMPTY
        if is_required:
            required.append(p.name)
        else:
            ok, value = _jsonable_default(p.default)
            if ok:
                schema["default"] = value
        properties[p.name] = schema
        params[p.name] = ParamInfo(
            name=p.name,
            annotation=Any if ann is _EMPTY else ann,
            required=is_required,
            default=p.default,
            description=description,
            schema=schema,
            converter=None if ann is _EMPTY else _Converters().get(ann),
        )
    root: JSONObject = {"type": "object", "properties": properties}
    if required:
        root["required"] = required
    root["additionalProperties"] = False
    return builder.finish(root), params


def return_schema(fn: Callable[..., object]) -> tuple[JSONObject | None, bool]:
    """The MCP ``outputSchema`` of ``fn`` and whether results must be wrapped.

    Object-like returns (``dict[str, X]``, ``TypedDict``, dataclass) are used as
    is: ``(schema, False)``. Any other JSON type is wrapped as ``{"result":
    value}``: ``(wrapper_schema, True)``. No annotation, ``None``, ``Any`` and
    types with no JSON Schema equivalent (content blocks, custom classes) give
    ``(None, False)``: such tools have no structured output.
    """
    name = _callable_name(fn)
    try:
        ann = _type_hints(fn, name).get("return", _EMPTY)
    except TypeError:
        return None, False
    if ann is _EMPTY or ann is None or ann is _NONE_TYPE or ann is Any:
        return None, False
    if getattr(ann, "_name", None) in ("NoReturn", "Never"):
        return None, False
    bare = _unwrap(ann)
    builder = _Builder(root_class=bare if isinstance(bare, type) else None)
    try:
        schema = builder.schema(ann, f"return value of {name}")
    except TypeError:
        return None, False
    if not schema:
        return None, False
    if schema.get("type") == "object":
        return builder.finish(dict(schema)), False
    wrapper: JSONObject = {
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
    }
    return builder.finish(wrapper), True


# --------------------------------------------------------------------------- conversion


def _to_int(v: object) -> object:
    return int(v) if type(v) is float and v.is_integer() else v


class _Converters:
    """Builds the JSON-to-Python converter of an annotation; ``None`` means identity."""

    def __init__(self) -> None:
        self.cells: dict[type, list[_Converter]] = {}

    def get(self, tp: object) -> _Converter | None:
        tp = _unwrap(tp)
        if tp is int:
            return _to_int
        if tp is tuple or tp is typing.Tuple:  # noqa: UP006
            return lambda v: tuple(v) if isinstance(v, list) else v
        origin = typing.get_origin(tp)
        args = typing.get_args(tp)
        if args == ((),):
            args = ()
        if origin is typing.Literal:
            return _literal_converter(args)
        if _is_union(origin):
            return self.union(args)
        if origin in _SEQUENCES or origin in _SETS or origin is tuple:
            return self.sequence(origin, args)
        if origin in _MAPPINGS and len(args) == 2:
            conv = self.get(args[1])
            if conv is None:
                return None
            return lambda v: {k: conv(x) for k, x in v.items()} if isinstance(v, dict) else v
        if tp in _SETS:
            make = frozenset if tp is frozenset else set
            return lambda v: make(v) if isinstance(v, list) else v
        if isinstance(tp, type):
            if issubclass(tp, enum.Enum):
                return tp
            if _is_dataclass_type(tp) or _is_typeddict(tp):
                return self.cls(tp)
        return None

    def sequence(self, origin: object, args: tuple[object, ...]) -> _Converter | None:
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            convs = [self.get(a) for a in args]
            return lambda v: (
                tuple(c(x) if c else x for c, x in zip(convs, v, strict=False))
                if isinstance(v, list)
                else v
            )
        conv = self.get(args[0]) if args else None
        make: Callable[[Any], object] | None = None
        if origin is tuple:
            make = tuple
        elif origin in _SETS:
            make = frozenset if origin is frozenset else set
        if conv is None and make is None:
            return None
        build = make or list

        def convert_sequence(v: object) -> object:
            if not isinstance(v, list):
                return v
            return build([conv(x) for x in v] if conv else v)

        return convert_sequence

    def union(self, members: tuple[object, ...]) -> _Converter | None:
        convs = [self.get(m) for m in members]
        if not any(convs):
            return None
        checks: list[Validator | None] = [None] * len(members)

        def convert_union(v: object) -> object:
            for i, (m, conv) in enumerate(zip(members, convs, strict=True)):
                check = checks[i]
                if check is None:
                    builder = _Builder()
                    check = checks[i] = compile(builder.finish(dict(builder.schema(m, "union"))))
                if check.is_valid(v):
                    return conv(v) if conv else v
            return v

        return convert_union

    def cls(self, tp: type) -> _Converter | None:
        cell = self.cells.get(tp)
        if cell is not None:  # recursive: forward through the cell filled below
            forward = cell
            return lambda v: forward[0](v)
        cell = self.cells[tp] = [_identity]
        hints = _class_hints(tp)
        convs = {k: c for k, ann in hints.items() if (c := self.get(ann)) is not None}
        if _is_typeddict(tp):
            if not convs:
                cell[0] = _identity
                return None

            def convert_typeddict(v: object) -> object:
                if not isinstance(v, dict):
                    return v
                return {k: (convs[k](x) if k in convs else x) for k, x in v.items()}

            cell[0] = convert_typeddict
            return convert_typeddict

        def convert_dataclass(v: object) -> object:
            if not isinstance(v, dict):
                return v
            return tp(**{k: (convs[k](x) if k in convs else x) for k, x in v.items()})

        cell[0] = convert_dataclass
        return convert_dataclass


def _literal_converter(values: tuple[object, ...]) -> _Converter | None:
    members = [m for m in values if isinstance(m, enum.Enum)]
    if not members:
        return None

    def convert_literal(v: object) -> object:
        for m in members:
            if m.value == v and isinstance(m.value, bool) == isinstance(v, bool):
                return m
        return v

    return convert_literal


def _identity(v: object) -> object:
    return v


def convert_arguments(
    fn_params: Mapping[str, ParamInfo], args: Mapping[str, JSONValue]
) -> dict[str, object]:
    """Turn validated JSON arguments into the Python values ``fn`` expects.

    Enums from values, dataclasses from objects, tuples and sets from lists,
    recursively; other values pass through. Names without a ``ParamInfo`` pass
    through unchanged. Raises ``ValueError`` naming the argument if a value
    cannot be converted (which validation against the schema rules out).
    """
    out: dict[str, object] = {}
    for name, value in args.items():
        param = fn_params.get(name)
        if param is None or param.converter is None:
            out[name] = value
            continue
        try:
            out[name] = param.converter(value)
        except (TypeError, ValueError, KeyError) as exc:
            raise ValueError(f"argument {name!r}: {exc}") from exc
    return out


def to_jsonable(value: object) -> JSONValue:
    """Convert a result to plain JSON values: dataclasses and mappings to objects,
    enums to their values, tuples, lists and sets to arrays, recursively.

    A dataclass becomes the object of its ``__init__`` fields, matching its
    schema (``field(init=False)`` values are computed, not data).

    Raises ``TypeError`` for anything else and ``ValueError`` for cycles.
    """
    return _jsonable(value, set())


def _jsonable(v: object, active: set[int]) -> JSONValue:
    if v is None or v is True or v is False:
        return v
    t = type(v)
    if t is str or t is int or t is float:
        return v  # type: ignore[return-value]
    if isinstance(v, enum.Enum):
        return _jsonable(v.value, active)
    if isinstance(v, str):
        return str(v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return float(v)
    is_dc = dataclasses.is_dataclass(v) and not isinstance(v, type)
    if not (is_dc or isinstance(v, (Mapping, list, tuple, set, frozenset))):
        raise TypeError(f"Object of type {type(v).__qualname__} is not JSON serializable")
    if id(v) in active:
        raise ValueError("circular reference detected")
    active.add(id(v))
    try:
        if is_dc:
            return {
                f.name: _jsonable(getattr(v, f.name), active)
                for f in dataclasses.fields(v)  # type: ignore[arg-type]
                if f.init
            }
        if isinstance(v, Mapping):
            obj: JSONObject = {}
            for k, x in v.items():
                key = k.value if isinstance(k, enum.Enum) else k
                if not isinstance(key, str):
                    raise TypeError(f"object keys must be strings, got {type(k).__qualname__}")
                obj[str(key)] = _jsonable(x, active)
            return obj
        items: list[JSONValue] = [_jsonable(x, active) for x in v]  # type: ignore[attr-defined]
        if isinstance(v, (set, frozenset)):
            try:
                items.sort()
            except TypeError:
                pass
        return items
    finally:
        active.discard(id(v))
