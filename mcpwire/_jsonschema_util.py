"""Shared by the JSON Schema compiler and its checks: types, errors, rendering, equality.

Part of ``mcpwire._jsonschema``: the check signature (``_Check``, with paths as
tuples, ``_Path``); ``_Run``, the error collector of the second pass;
``_accept``/``_reject`` for ``true``/``false`` schemas; paths rendered as
``$.items[2].name`` and values rendered short at a cost bounded whatever their
size; and ``_canon``, a hashable canonical form under which JSON-equal values
are equal (``1`` and ``1.0`` are, ``true`` and ``1`` are not).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final, TypeAlias

__all__ = (
    "_NONE",
    "_Check",
    "_Path",
    "_Run",
    "_accept",
    "_fmt_path",
    "_quoted",
    "_reject",
    "_render",
    "_try_canon",
)

_Path: TypeAlias = "tuple[object, ...]"
# Checks of a type-specific group receive instances of that type only, hence ``Any``.
_Check: TypeAlias = "Callable[[Any, _Run | None, _Path, int], bool]"

_NONE = type(None)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_CANON_DEPTH: Final = 256


class _Run:
    """Error collection for the second pass."""

    __slots__ = ("errors", "limit")

    def __init__(self, limit: int) -> None:
        self.errors: list[tuple[_Path, str]] = []
        self.limit = limit

    @property
    def full(self) -> bool:
        return len(self.errors) >= self.limit

    def add(self, path: _Path, text: str) -> None:
        if len(self.errors) < self.limit:
            self.errors.append((path, text))


def _accept(inst: object, run: _Run | None, path: _Path, depth: int) -> bool:
    return True


def _reject(inst: object, run: _Run | None, path: _Path, depth: int) -> bool:
    if run is not None:
        run.add(path, "no value is allowed here (the schema is false)")
    return False


# --------------------------------------------------------------------------- rendering


def _fmt_path(path: _Path) -> str:
    parts = ["$"]
    for p in path:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        elif isinstance(p, str) and _IDENT.match(p):
            parts.append("." + p)
        else:
            parts.append("[" + _render(p) + "]")
    return "".join(parts)


def _render(value: object, limit: int = 60) -> str:
    """A short JSON-looking rendering of ``value``; cost is bounded whatever its size."""
    out: list[str] = []
    _render_into(value, out, 2)
    text = "".join(out)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _render_into(v: object, out: list[str], depth: int) -> None:
    if v is None:
        out.append("null")
    elif v is True or v is False:
        out.append("true" if v else "false")
    elif isinstance(v, str):
        out.append(json.dumps(v[:61], ensure_ascii=False))
    elif isinstance(v, int):
        out.append(str(v) if -(10**60) < v < 10**60 else "<large integer>")
    elif isinstance(v, float):
        out.append(repr(v))
    elif isinstance(v, (list, tuple)):
        if depth <= 0 and v:
            out.append("[…]")
            return
        out.append("[")
        for i, x in enumerate(v):
            if i:
                out.append(", ")
            if i == 4:
                out.append("…")
                break
            _render_into(x, out, depth - 1)
        out.append("]")
    elif isinstance(v, dict):
        if depth <= 0 and v:
            out.append("{…}")
            return
        out.append("{")
        for i, (k, x) in enumerate(v.items()):
            if i:
                out.append(", ")
            if i == 4:
                out.append("…")
                break
            _render_into(k, out, 0)
            out.append(": ")
            _render_into(x, out, depth - 1)
        out.append("}")
    else:
        out.append(f"<{type(v).__name__}>")


def _quoted(names: list[str]) -> str:
    return ", ".join(json.dumps(n, ensure_ascii=False) for n in names)


# --------------------------------------------------------------------------- JSON equality


class _Uncomparable(Exception):
    pass


def _canon(v: object, depth: int = 0) -> object:
    """A hashable form of a JSON value such that JSON-equal values are equal."""
    t = type(v)
    if t is str or v is None or t is int:
        return v
    if t is bool:
        return ("b", v)
    if t is float:
        return int(v) if v.is_integer() else v  # type: ignore[attr-defined, call-overload]
    if depth > _CANON_DEPTH:
        raise _Uncomparable
    if isinstance(v, (list, tuple)):
        return ("a", tuple([_canon(x, depth + 1) for x in v]))
    if isinstance(v, dict):
        return ("o", frozenset([(k, _canon(x, depth + 1)) for k, x in v.items()]))
    if isinstance(v, bool):
        return ("b", bool(v))
    if isinstance(v, str):
        return str(v)
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return _canon(float(v))
    raise _Uncomparable


def _try_canon(v: object) -> tuple[bool, object]:
    try:
        return True, _canon(v)
    except (_Uncomparable, RecursionError, TypeError):
        return False, None
