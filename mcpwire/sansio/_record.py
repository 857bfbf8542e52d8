"""Records: what ``@dataclass(slots=True)`` gives, made cheaply.

A record class declares its fields as annotations, in constructor order, and
writes a plain ``__init__``; ``Record`` supplies the rest. Each field gets a
slot (a subclass adds slots for its own fields and lists its base's fields
first), ``__match_args__`` lists the fields, and ``__repr__``, ``__eq__`` and
``__hash__`` work over them, except the fields named in ``hidden=`` in the
class statement, which ``repr`` leaves out and ``==`` ignores. Records pickle
and copy, and the ``dataclasses`` functions (``fields``, ``asdict``,
``astuple``, ``replace``, ``is_dataclass``) accept them: the field table they
read is built the first time it is asked for. Field annotations are read from
the class body as written, so modules defining records use postponed
evaluation (``from __future__ import annotations``).

Records are frozen unless the class statement says ``frozen=False``:
assigning or deleting an attribute raises ``dataclasses.FrozenInstanceError``,
so a frozen record's ``__init__`` stores each field through the slot's own
descriptor (``setters``, or ``fill`` where speed does not matter). A mutable
record's ``__init__`` assigns plainly. ``eq=False`` compares by identity;
a mutable record compared by value is unhashable, as a dataclass would be.

Why not ``@dataclass`` itself: it writes its methods with ``exec`` when the
class is defined (about a millisecond a class, on every import, and with
``slots=True`` it builds the class twice), and a frozen dataclass's
``__init__`` stores each field with a generic ``object.__setattr__``; a slot
descriptor's ``__set__`` costs less. Messages are records, and one is made
for everything that crosses the wire.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Final, TypeVar

__all__ = ("FRESH_DICT", "FRESH_LIST", "FRESH_SET", "Record", "fill", "setters")

_T = TypeVar("_T")

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:
    # Only type checkers read the decorator; at run time it is the identity.
    def dataclass_transform(**_: object) -> Callable[[_T], _T]:
        return lambda cls: cls


#: Constructor defaults standing for a new empty dict, list or set per instance (what
#: ``field(default_factory=dict)`` means): ``{} if value is FRESH_DICT else value``.
FRESH_DICT: Final[dict[Any, Any]] = {}
FRESH_LIST: Final[list[Any]] = []
FRESH_SET: Final[set[Any]] = set()

_FACTORIES: Final[dict[int, Callable[[], object]]] = {
    id(FRESH_DICT): dict,
    id(FRESH_LIST): list,
    id(FRESH_SET): set,
}


class _RecordType(type):
    """Gives each record class its slots and ``__match_args__`` from its annotations."""

    def __new__(
        mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any
    ) -> _RecordType:
        if "__slots__" not in namespace:
            own = tuple(
                [
                    field
                    for field, annotation in namespace.get("__annotations__", {}).items()
                    if not str(annotation).startswith(("ClassVar", "typing.ClassVar"))
                ]
            )
            inherited: tuple[str, ...] = getattr(bases[0], "__match_args__", ()) if bases else ()
            namespace["__slots__"] = own
            namespace["__match_args__"] = inherited + own
        return super().__new__(mcls, name, bases, namespace, **kwargs)


class _FieldTable:
    """``__dataclass_fields__`` of a record class, built from the class on first use."""

    def __get__(self, instance: object, owner: type[Record]) -> dict[str, dataclasses.Field[Any]]:
        table: dict[str, dataclasses.Field[Any]] | None = owner.__dict__.get("_field_table")
        if table is None:
            table = _build_table(owner)
            setattr(owner, "_field_table", table)  # noqa: B010 (a class attribute)
        return table


def _build_table(owner: type[Record]) -> dict[str, dataclasses.Field[Any]]:
    import inspect

    params = inspect.signature(owner).parameters
    annotations: dict[str, Any] = {}
    for klass in reversed(owner.__mro__):
        annotations.update(inspect.get_annotations(klass))
    spec: list[tuple[str, Any, Any]] = []
    for name in owner.__match_args__:
        param = params.get(name)  # absent: taken by a subclass's ``**kwargs``
        default = inspect.Parameter.empty if param is None else param.default
        options: dict[str, Any] = {
            "repr": name in owner._shown,
            "compare": name in owner._shown,
            "kw_only": param is None or param.kind is param.KEYWORD_ONLY,
        }
        factory = _FACTORIES.get(id(default))
        if factory is not None:
            options["default_factory"] = factory
        elif default is not inspect.Parameter.empty:
            options["default"] = default
        spec.append((name, annotations.get(name, Any), dataclasses.field(**options)))
    frozen = owner.__setattr__ is Record.__setattr__
    model: Any = dataclasses.make_dataclass(owner.__name__, spec, frozen=frozen)
    fields: dict[str, dataclasses.Field[Any]] = model.__dataclass_fields__
    return fields


@dataclass_transform(frozen_default=True, eq_default=True)
class Record(metaclass=_RecordType):
    """Base of the records (see the module docstring)."""

    __slots__ = ()

    #: Every field, in constructor order (a subclass lists its base's first).
    __match_args__: ClassVar[tuple[str, ...]] = ()
    #: The fields that ``repr`` shows and ``==`` and ``hash`` compare.
    _shown: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(
        cls,
        *,
        frozen: bool = True,
        eq: bool = True,
        hidden: tuple[str, ...] = (),
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        cls._shown = tuple([name for name in cls.__match_args__ if name not in hidden])
        if not frozen:
            setattr(cls, "__setattr__", object.__setattr__)  # noqa: B010
            setattr(cls, "__delattr__", object.__delattr__)  # noqa: B010
        if not eq:
            setattr(cls, "__eq__", object.__eq__)  # noqa: B010
            setattr(cls, "__hash__", object.__hash__)  # noqa: B010
        elif not frozen:
            setattr(cls, "__hash__", None)  # noqa: B010 (mutable and compared by value)

    def _key(self) -> tuple[object, ...]:
        return tuple([getattr(self, name) for name in self._shown])

    def __repr__(self) -> str:
        shown = ", ".join([f"{name}={getattr(self, name)!r}" for name in self._shown])
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._key() == other._key()
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def __setattr__(self, name: str, value: object) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    # Pickling and copying: the field values, stored back past ``__setattr__``.
    def __getstate__(self) -> tuple[object, ...]:
        return tuple([getattr(self, name) for name in self.__match_args__])

    def __setstate__(self, state: tuple[object, ...]) -> None:
        fill(self, state)


setattr(Record, "__dataclass_fields__", _FieldTable())  # noqa: B010 (hidden from type checkers)


def setters(cls: type[Record]) -> tuple[Callable[[Any, Any], None], ...]:
    """The ``__set__`` of each field's slot descriptor, in field order: what a frozen
    record's ``__init__`` stores fields with."""
    return tuple([getattr(cls, name).__set__ for name in cls.__match_args__])


def fill(record: Record, values: tuple[object, ...]) -> None:
    """Store ``values`` as ``record``'s fields, in field order, a ``FRESH_*`` default as a
    new empty container: a shorter ``__init__`` for records made too rarely for the
    ``setters`` to matter."""
    for name, value in zip(record.__match_args__, values, strict=True):
        factory = _FACTORIES.get(id(value))
        object.__setattr__(record, name, value if factory is None else factory())
