"""What the hub reports about a server, and the policy that restarts it.

Plain data, no I/O: ``RestartPolicy`` (backoff and crash-loop limits),
``ErrorEntry`` (one line of a server's error history), ``Discovery`` (what a
server offered when last listed) and ``ServerStatus`` (a snapshot for user
interfaces, with a JSON form).
"""

from __future__ import annotations

import collections
import random
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._hub_config import ServerConfig
from ._hub_events import ServerState

if TYPE_CHECKING:
    from ._hub_supervisor import Supervisor
    from ._types import Prompt, Resource, ResourceTemplate, Tool
    from .sansio._json import JSONObject

__all__ = ("MAX_ERROR_LENGTH", "Discovery", "ErrorEntry", "RestartPolicy", "ServerStatus")

#: What an error history entry's message and stderr tail are cut to.
MAX_ERROR_LENGTH = 1000


@dataclass(frozen=True)
class RestartPolicy:
    """How crashed servers are restarted (see the module docstring)."""

    initial_backoff: float = 0.5
    max_backoff: float = 30.0
    multiplier: float = 2.0
    jitter: float = 0.2
    crash_loop_count: int = 5
    crash_loop_window: float = 60.0

    def backoff(self, failures: int) -> float:
        """Seconds to wait before the attempt after ``failures`` recent failures."""
        base = self.initial_backoff * self.multiplier ** max(failures - 1, 0)
        base = min(base, self.max_backoff)
        return max(0.0, base * (1 + random.uniform(-self.jitter, self.jitter)))

    def count_crash(self, crashes: collections.deque[float], now: float) -> int:
        """Add a crash at ``now`` to ``crashes``, forget those older than the window,
        and return how many are left (``crash_loop_count`` of them: a crash loop)."""
        crashes.append(now)
        while crashes and now - crashes[0] > self.crash_loop_window:
            crashes.popleft()
        return len(crashes)


@dataclass(frozen=True)
class ErrorEntry:
    """One entry of a server's error history."""

    timestamp: float
    message: str
    level: str = "error"
    stderr_tail: str = ""

    @classmethod
    def cut(cls, message: str, level: str = "error", stderr_tail: str = "") -> ErrorEntry:
        """An entry made now, the message and stderr tail cut to ``MAX_ERROR_LENGTH``."""
        if len(message) > MAX_ERROR_LENGTH:
            message = message[:MAX_ERROR_LENGTH] + "...(truncated)"
        if len(stderr_tail) > MAX_ERROR_LENGTH:
            stderr_tail = "...(truncated)" + stderr_tail[-MAX_ERROR_LENGTH:]
        return cls(time.time(), message, level, stderr_tail)

    def to_json(self) -> dict[str, Any]:
        return {
            "timestamp": self.timestamp,
            "level": self.level,
            "message": self.message,
            "stderrTail": self.stderr_tail,
        }


@dataclass
class Discovery:
    """What a server offered at its last discovery."""

    tools: list[Tool] = field(default_factory=list)
    resources: list[Resource] = field(default_factory=list)
    templates: list[ResourceTemplate] = field(default_factory=list)
    prompts: list[Prompt] = field(default_factory=list)
    instructions: str | None = None
    server_info: JSONObject = field(default_factory=dict)
    protocol_version: str = ""


@dataclass(frozen=True)
class ServerStatus:
    """A snapshot of one server under the hub."""

    name: str
    state: ServerState
    transport: str
    config: ServerConfig
    #: Tools exposed (after include/exclude filters and refused collisions).
    tools: int
    last_error: str | None
    error_history: tuple[ErrorEntry, ...]
    pid: int | None
    restarts: int
    #: Why the server is not running when it is not (disabled, crash loop, ...).
    reason: str = ""
    server_info: JSONObject = field(default_factory=dict)
    protocol_version: str = ""

    @classmethod
    def of(cls, sup: Supervisor, tools: int) -> ServerStatus:
        """The snapshot of ``sup`` now, with ``tools`` exposed."""
        d = sup.discovery
        return cls(
            name=sup.name,
            state=sup.state or ServerState.STARTING,
            transport=sup.config.transport,
            config=sup.config,
            tools=tools,
            last_error=sup.errors[-1].message if sup.errors else None,
            error_history=tuple(sup.errors),
            pid=sup.pid,
            restarts=sup.restarts,
            reason=sup.reason,
            server_info=dict(d.server_info) if d else {},
            protocol_version=d.protocol_version if d else "",
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "state": self.state.value,
            "transport": self.transport,
            "tools": self.tools,
            "lastError": self.last_error,
            "reason": self.reason,
            "pid": self.pid,
            "restarts": self.restarts,
            "serverInfo": self.server_info,
            "protocolVersion": self.protocol_version,
            "errorHistory": [e.to_json() for e in self.error_history],
            "config": self.config.to_json(redact=True),
            "origin": self.config.origin,
        }
