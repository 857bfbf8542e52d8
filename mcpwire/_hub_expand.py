"""Reading config documents: JSON with comments, JSON paths, and ``${VAR}`` expansion.

Theory of operation
-------------------
Config files are JSON, but the editors that write them (VS Code's ``mcp.json``,
gemini-cli's ``settings.json``) accept comments and trailing commas. ``read_jsonc``
blanks ``//`` and ``/* */`` comments and drops trailing commas outside strings,
keeping every newline, so a syntax error still points at the right line and
column. Duplicate keys in one object are reported (JSON silently keeps the last).

``Expander`` substitutes variables in the fields that name programs, arguments,
environment values, URLs and headers (the places people put secrets):

* ``${VAR}`` and ``${env:VAR}``: the variable; unset is an error naming it;
* ``${VAR:-default}``: the variable when set and non-empty, else ``default``
  (which is literal text: a ``${`` in it is an error, not a nested variable);
* ``${workspaceFolder}``, ``${userHome}``, ``${pathSeparator}``: the editor
  variables, resolved from the config file's location when not in the environment;
* ``${input:ID}``: VS Code's prompted inputs need an editor; the server that
  uses one is reported and left disabled rather than started with a hole in it.

With gemini-cli's dialect, bare ``$VAR`` is a variable too. Each reference is
replaced in one pass, so a value that holds ``${...}`` or ``$NAME`` is used as
it is, never expanded again. Anything else in ``${...}``, and a ``${`` that is
never closed, is an error, never passed through literally.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from pathlib import Path

__all__ = ("Expander", "InputVariable", "json_path", "read_jsonc", "workspace_of")

#: Directories whose parent is the workspace a project config belongs to.
_CONFIG_DIRS = frozenset({".vscode", ".cursor", ".roo", ".gemini", ".claude", ".kilocode"})
#: ``${...}``, or a ``${`` never closed (group 2: what follows it).
_VAR = re.compile(r"\$\{([^}]*)\}|\$\{([^}]*)\Z")
#: The same, and gemini-cli's bare ``$VAR`` (group 3).
_VAR_OR_BARE = re.compile(_VAR.pattern + r"|\$([A-Za-z_][A-Za-z0-9_]*)")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")


def json_path(*parts: str | int) -> str:
    """A JSON path: ``("mcpServers", "my server", "args", 0)`` ->
    ``$.mcpServers["my server"].args[0]``."""
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENT.match(part):
            out += f".{part}"
        else:
            out += f"[{json.dumps(part)}]"
    return out


def _strip_jsonc(text: str) -> str:
    """Blank comments and trailing commas outside strings; newlines are kept."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    pending_comma = -1  # index in ``out`` of a comma that may be trailing
    last = ""  # the last character outside strings, comments and whitespace
    while i < n:
        c = text[i]
        if in_string:
            out.append(c)
            if c == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 1
            elif c == '"':
                in_string = False
            i += 1
            continue
        if c == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
            continue
        if c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append("".join(ch if ch == "\n" else " " for ch in text[i:end]))
            i = end
            continue
        if c in "]}" and pending_comma >= 0:
            out[pending_comma] = " "
        if c == ",":
            # Trailing only after a value: "[,]", "{,}" and "[1,,]" stay errors.
            pending_comma = len(out) if last and last not in "[{,:" else -1
        elif not c.isspace():
            pending_comma = -1
        if not c.isspace():
            last = c
        if c == '"':
            in_string = True
        out.append(c)
        i += 1
    return "".join(out)


class _Duplicates:
    """An ``object_pairs_hook`` that keeps the last value and remembers duplicate keys."""

    def __init__(self) -> None:
        self.keys: list[str] = []

    def __call__(self, pairs: list[tuple[str, object]]) -> dict[str, object]:
        result: dict[str, object] = {}
        for key, value in pairs:
            if key in result:
                self.keys.append(key)
            result[key] = value
        return result


def read_jsonc(text: str) -> tuple[object, list[str]]:
    """Parse JSON with comments; returns the value and any duplicated keys.

    Raises ``ValueError`` (a ``json.JSONDecodeError``) with line and column.
    """
    if text.startswith("\ufeff"):
        text = text[1:]
    hook = _Duplicates()
    value = json.loads(
        _strip_jsonc(text),
        object_pairs_hook=hook,
        parse_constant=_not_json,
        parse_float=_finite,
    )
    return value, hook.keys


def _not_json(word: str) -> object:
    raise ValueError(f"{word} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"the number {text} is out of range")
    return value


def workspace_of(file: str | os.PathLike[str] | None) -> Path:
    """The workspace a config file belongs to (``proj`` for ``proj/.vscode/mcp.json``)."""
    if file is None:
        return Path.cwd()
    parent = Path(file).resolve().parent
    return parent.parent if parent.name in _CONFIG_DIRS else parent


class InputVariable(Exception):
    """A ``${input:ID}`` reference: VS Code asks the user for these; we cannot."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


class Expander:
    """Substitutes ``${...}`` variables; see the module docstring for the forms."""

    def __init__(self, environ: Mapping[str, str], workspace: Path, *, bare: bool = False) -> None:
        self.environ = environ
        #: Also expand ``$VAR`` (gemini-cli does; the other clients do not).
        self.bare = bare
        self.builtins = {
            "workspaceFolder": str(workspace),
            "workspaceRoot": str(workspace),
            "userHome": str(Path.home()),
            "pathSeparator": os.sep,
        }

    def expand(self, value: str) -> str:
        """Raises ``KeyError`` (message: the rule) or ``InputVariable``."""
        if "$" not in value:
            return value
        # One pass: a variable's value is used as it is, never expanded again.
        return (_VAR_OR_BARE if self.bare else _VAR).sub(self._match, value)

    def _match(self, match: re.Match[str]) -> str:
        which = match.lastindex  # the alternative that matched: one group each
        if which == 1:
            return self._one(match.group(1))
        if which == 2:
            raise KeyError(f"${{{match.group(2)}: the '${{' is never closed")
        return self._lookup(match.group(3), match.group(0))

    def _one(self, body: str) -> str:
        if body.startswith("input:"):
            raise InputVariable(body[len("input:") :])
        if body.startswith("env:"):
            name = body[len("env:") :]
            return self._lookup(name, f"${{env:{name}}}")
        name, sep, default = body.partition(":-")
        if sep:
            if not _NAME.match(name):
                raise KeyError(f"${{{body}}}: {name!r} is not a variable name")
            if "${" in default:
                # ``${A:-${B}}`` would read as the default ``${B`` and a stray ``}``.
                raise KeyError(
                    f"${{{name}:-...}}: a default cannot hold another ${{...}} "
                    "(nested variables are not supported)"
                )
            value = self.environ.get(name)
            return value if value else default
        if _NAME.match(body):
            if body in self.environ:
                return self.environ[body]
            if body in self.builtins:
                return self.builtins[body]
            return self._lookup(body, f"${{{body}}}")
        raise KeyError(
            f"${{{body}}} is not a supported variable "
            "(use ${VAR}, ${env:VAR} or ${VAR:-default})"
        )

    def _lookup(self, name: str, shown: str) -> str:
        if not _NAME.match(name):
            raise KeyError(f"{shown}: {name!r} is not a variable name")
        value = self.environ.get(name)
        if value is None:
            raise KeyError(
                f"{shown}: environment variable {name} is not set "
                f"(set it, or give a default: ${{{name}:-default}})"
            )
        return value
