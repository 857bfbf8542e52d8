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

The work is split by responsibility; each module's docstring carries its part of
the theory:

``_schema_types``
    Annotations to schema: ``Field``, ``ParamInfo`` and the recursive builder
    that inlines classes and uses ``$defs`` only for cycles.
``_docstrings``
    The summary and the per-parameter descriptions of a docstring.
``_convert``
    JSON arguments to the Python values a function expects
    (``convert_arguments``).
``_jsonable``
    Python results to plain JSON values (``to_jsonable``).

This module keeps the entry points that put those together and re-exports the
public names of the others.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import typing
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Collection

    from ._convert import convert_arguments as convert_arguments
    from ._docstrings import docstring_summary as docstring_summary
    from ._jsonable import to_jsonable as to_jsonable
    from ._jsonschema import Validator as Validator
    from ._jsonschema import compile as compile
    from ._jsonschema import validate as validate
    from ._schema_types import Field as Field
    from ._schema_types import ParamInfo as ParamInfo
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

# The re-exported names load on first use (PEP 562), and so do the modules the
# schema builders below need: a client imports this module for ``compile`` alone
# (output validation, once it lists tools), and should not pay for the rest.
_LAZY = {
    "convert_arguments": "._convert",
    "docstring_summary": "._docstrings",
    "to_jsonable": "._jsonable",
    "Validator": "._jsonschema",
    "compile": "._jsonschema",
    "validate": "._jsonschema",
    "Field": "._schema_types",
    "ParamInfo": "._schema_types",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __package__), name)
    globals()[name] = value
    return value


def _callable_name(fn: object) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return str(name) if name else repr(fn)


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


def _annotated_description(tp: object) -> str | None:
    from ._schema_types import Field, _strip_wrappers

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
    from ._schema_types import _NONE_TYPE, _is_union, _unwrap

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
    from ._convert import _Converters
    from ._docstrings import _param_docs
    from ._jsonable import _jsonable_default
    from ._schema_types import _EMPTY, ParamInfo, _Builder

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
    from ._schema_types import _EMPTY, _NONE_TYPE, _Builder, _unwrap

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
