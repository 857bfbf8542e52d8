"""Protocol revisions, eras, and the reserved ``_meta`` keys.

MCP has two eras (design.md): the legacy revisions negotiate once with
``initialize``; the modern revision (2026-07-28) carries its version and the
client's capabilities in ``params._meta`` of every request. The order of each
tuple is oldest first; versions are compared by position, never as dates.
"""

from __future__ import annotations

from typing import Final, Literal

__all__ = (
    "ALL_VERSIONS",
    "LATEST_LEGACY_VERSION",
    "LATEST_VERSION",
    "LEGACY_VERSIONS",
    "LOG_LEVELS",
    "LEGACY_TASKS_VERSION",
    "META_CLIENT_CAPABILITIES",
    "META_CLIENT_INFO",
    "META_LOG_LEVEL",
    "META_PROTOCOL_VERSION",
    "META_SERVER_INFO",
    "META_SUBSCRIPTION_ID",
    "MODERN_VERSIONS",
    "Era",
    "at_least",
    "era_of",
)

LEGACY_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS: Final = ("2026-07-28",)
ALL_VERSIONS: Final = LEGACY_VERSIONS + MODERN_VERSIONS
LATEST_LEGACY_VERSION: Final = LEGACY_VERSIONS[-1]
LATEST_VERSION: Final = MODERN_VERSIONS[-1]
#: The revision with tasks in its core (later they are the tasks extension).
LEGACY_TASKS_VERSION: Final = "2025-11-25"

Era = Literal["legacy", "modern"]

META_PROTOCOL_VERSION: Final = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES: Final = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO: Final = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL: Final = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO: Final = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID: Final = "io.modelcontextprotocol/subscriptionId"

#: RFC 5424 severities as MCP names them, least severe first.
LOG_LEVELS: Final = (
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
)


def era_of(version: str) -> Era:
    return "modern" if version in MODERN_VERSIONS else "legacy"


def at_least(version: str, minimum: str) -> bool:
    """Whether ``version`` is ``minimum`` or newer; unknown versions are never newer."""
    try:
        return ALL_VERSIONS.index(version) >= ALL_VERSIONS.index(minimum)
    except ValueError:
        return False
