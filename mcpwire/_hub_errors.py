"""The hub's exceptions and the one record every config problem is reported as.

``ConfigIssue`` names the file, the JSON path inside it (``$.mcpServers.github.timeout``)
and the rule that was broken; errors and warnings use the same record, so a user
interface can show both the same way. This module imports only the standard
library, so loading a config never loads an event loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._errors import MCPWireError

__all__ = ("ConfigError", "ConfigIssue", "HubError", "ToolCallRefused")


class HubError(MCPWireError):
    """A hub operation cannot be done (unknown or refused tool, server unavailable, ...).

    The message always says why, in one sentence a user can act on.
    """


class ToolCallRefused(HubError):
    """A tool call was refused before it reached the server: the tool or its server
    is disabled, the tool is filtered out, or the approval hook said no."""


@dataclass(frozen=True, slots=True)
class ConfigIssue:
    """One problem in a config file.

    Attributes:
        file: the file (or ``"<servers>"`` for configs given in code).
        path: where in the document, as a JSON path (``$.mcpServers.github.timeout``).
        message: the rule that was broken, or what was ignored.
    """

    file: str
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: {self.path}: {self.message}"


class ConfigError(HubError):
    """A config file cannot be used; ``issues`` lists every problem found in it."""

    def __init__(self, issues: Sequence[ConfigIssue]) -> None:
        self.issues = tuple(issues)
        if len(self.issues) == 1:
            text = str(self.issues[0])
        else:
            text = f"{len(self.issues)} problems:\n" + "\n".join(f"  {i}" for i in self.issues)
        super().__init__(text)
