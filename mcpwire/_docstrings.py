"""Docstring parsing: a function's summary and its parameters' descriptions.

Part of the theory of operation of ``mcpwire._schema``.

Docstrings
    Parameter descriptions come from ``Annotated`` first, then from the
    docstring: Google (``Args:`` with ``name (type): text`` entries and indented
    continuation lines), numpy (``Parameters`` over a dashed rule, ``name :
    type`` entries) and reST (``:param name: text``). The summary is everything
    before the first section header of any of the three styles.
"""

from __future__ import annotations

import inspect
import re

__all__ = ("_param_docs", "_summary_from_doc", "docstring_summary")

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
