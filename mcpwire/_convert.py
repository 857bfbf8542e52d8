"""JSON arguments to the Python values a tool function expects.

Part of the theory of operation of ``mcpwire._schema``.

JSON to Python and back
    ``ParamInfo.converter`` is built alongside the schema for annotations whose
    Python value differs from the JSON one: enums, dataclasses, tuples, sets,
    ``int`` (the validator accepts ``2.0`` as an integer; the function gets
    ``2``), and containers or unions holding those. Everything else passes
    through untouched at no cost. A union with a converting member tries its
    members in order and converts with the first whose schema the value
    validates against. ``to_jsonable`` (in ``_jsonable``) is the inverse, for
    structured results.
"""

from __future__ import annotations

import enum
import typing
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeAlias

from ._schema_types import (
    _MAPPINGS,
    _SEQUENCES,
    _SETS,
    ParamInfo,
    _Builder,
    _class_hints,
    _is_dataclass_type,
    _is_typeddict,
    _is_union,
    _unwrap,
)
from .sansio._json import JSONValue

if TYPE_CHECKING:
    from ._jsonschema import Validator

__all__ = ("_Converters", "convert_arguments")

_Converter: TypeAlias = "Callable[[Any], object]"


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
                    from ._jsonschema import compile

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
