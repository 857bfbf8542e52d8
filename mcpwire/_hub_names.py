"""Exposed tool names: injective, provider-safe, stable; and which tools are exposed.

Theory of operation
-------------------
A language model sees one flat list of functions, so every server's tool gets
an exposed name ``{server}{sep}{tool}`` (``github__search``). The scheme must be

* injective: two different (server, tool) pairs never share a name. Server
  names containing the separator are refused (``a__b`` + ``c`` would read the
  same as ``a`` + ``b__c``); everything else follows from the raw name being
  unambiguous and from the hash below. A name must also say which server it
  belongs to before that server has listed its tools (a call made while it
  starts waits for that one server): two servers whose names would begin
  alike once sanitized (``my.server``, ``my server``) are refused together
  (``name_overlap``), since the hash cannot tell them apart without the tool;
* provider-safe: providers reject names outside a pattern (OpenAI and Anthropic
  ``^[A-Za-z0-9_-]{1,64}$``, Gemini ``^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$``). A raw
  name that breaks the rule has its disallowed characters replaced, is cut to
  fit, and always gets ``_`` plus 8 hex digits of SHA-256 over the *original*
  server and tool names. Sanitizing alone is not injective (``my server`` and
  ``my.server`` both become ``my_server``); the hash restores it;
* stable: the name depends only on the server name, the tool name, the
  separator and the rule, never on connection order.

A tool or prompt listed without a name (absent, not a string, or empty)
cannot be called: it is not exposed (``Nameless`` says which entry it was),
rather than shown as a bare ``{server}{sep}``.

A clash that still happens (a server listing one name twice; or a tool whose
literal name equals another server's hashed name, which takes two servers
``name_overlap`` finds, so the hub's config refuses it first) is refused
loudly: the newcomer is not exposed, and a ``NameCollision`` names both sides;
the name already in use keeps working. The reverse map takes
an exposed name back to the server and the tool's original name.

Which tools are exposed at all: ``includeTools`` globs form an allowlist (when
given, exactly the tools matching it are exposed, whatever ``excludeTools``
says); otherwise every tool not matching ``excludeTools`` is.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._hub_schema import FittedSchema
    from ._types import Prompt, Tool
    from .sansio._json import JSONObject

__all__ = (
    "NAME_PROFILES",
    "HubPrompt",
    "HubTool",
    "NameCollision",
    "NameRule",
    "NameTable",
    "Nameless",
    "crossed_thresholds",
    "estimate_tokens",
    "expose",
    "may_name",
    "name_overlap",
    "resolve_rule",
    "tool_selected",
)

_SIMPLE = re.compile(r"\^(?:\[([^\]]+)\])?\[([^\]]+)\]\{(\d+),(\d+)\}\$\Z")
_HASH_LEN = 8


@dataclass(frozen=True)
class NameRule:
    """What a provider accepts as a function name.

    Attributes:
        pattern: the full regular expression a name must match.
        allowed: the character-class body (``A-Za-z0-9_-``) used to sanitize.
        first: the character-class body for the first character, if stricter.
        max_length: the longest name allowed.
    """

    pattern: str
    allowed: str
    first: str | None = None
    max_length: int = 64

    @classmethod
    def from_pattern(cls, pattern: str) -> NameRule:
        """A rule from a pattern of the forms ``^[class]{m,n}$`` or ``^[first][class]{m,n}$``."""
        match = _SIMPLE.match(pattern)
        if match is None:
            raise ValueError(
                f"cannot derive a name rule from {pattern!r}: give a NameRule, a profile "
                f"({', '.join(NAME_PROFILES)}), or a pattern like ^[A-Za-z0-9_-]{{1,64}}$"
            )
        first, allowed, _low, high = match.groups()
        return cls(pattern, allowed, first, int(high) + (1 if first else 0))

    def matches(self, name: str) -> bool:
        return re.fullmatch(self.pattern, name) is not None


NAME_PROFILES: dict[str, NameRule] = {
    "default": NameRule(r"^[A-Za-z0-9_-]{1,64}$", "A-Za-z0-9_-"),
    "openai": NameRule(r"^[A-Za-z0-9_-]{1,64}$", "A-Za-z0-9_-"),
    "anthropic": NameRule(r"^[a-zA-Z0-9_-]{1,64}$", "a-zA-Z0-9_-"),
    "gemini": NameRule(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,63}$", "A-Za-z0-9_.:-", "A-Za-z_"),
}


def resolve_rule(rule: str | NameRule) -> NameRule:
    if isinstance(rule, NameRule):
        return rule
    if rule in NAME_PROFILES:
        return NAME_PROFILES[rule]
    return NameRule.from_pattern(rule)


def _filler(char_class: str) -> str:
    for candidate in "_-x":
        if re.fullmatch(f"[{char_class}]", candidate):
            return candidate
    raise ValueError(f"the name rule [{char_class}] allows none of '_', '-', 'x'")


def _sanitized(raw: str, rule: NameRule) -> str:
    """``raw`` with the characters ``rule`` disallows replaced, starting with one it
    allows first. Character by character, so it keeps prefixes: the sanitized
    ``server + sep`` begins the sanitized ``server + sep + tool``."""
    clean = re.sub(f"[^{rule.allowed}]", _filler(rule.allowed), raw)
    if rule.first is not None and not re.fullmatch(f"[{rule.first}]", clean[:1]):
        clean = _filler(rule.first) + clean
    return clean


def expose(server: str, tool: str, sep: str, rule: NameRule) -> str:
    """The exposed name of ``tool`` on ``server`` (see the module docstring)."""
    raw = f"{server}{sep}{tool}"
    if rule.matches(raw):
        return raw
    digest = hashlib.sha256(f"{server}\x00{tool}".encode()).hexdigest()[:_HASH_LEN]
    suffix = _filler(rule.allowed) + digest
    name = _sanitized(raw, rule)[: max(rule.max_length - len(suffix), 1)] + suffix
    if not rule.matches(name):
        raise ValueError(f"cannot fit {raw!r} to the name rule {rule.pattern}")
    return name


def may_name(exposed: str, server: str, sep: str, rule: NameRule) -> bool:
    """Whether ``expose`` could give ``exposed`` to some tool (or prompt) of ``server``.

    How a name that routes nowhere yet (its server has not listed) finds its
    server, whose tool names are not known. ``exposed`` is either the raw
    ``server + sep + tool`` the rule accepts, or a hashed name: sanitized
    ``server + sep + tool``, possibly cut, then the filler and 8 hex digits.
    The hash cannot be checked without the tool name, so two servers that
    sanitize alike (``my server``, ``my.server``) would both match a hashed name:
    the hub refuses a config with two such servers (``name_overlap``), which
    leaves at most one server for any name.
    """
    if exposed.startswith(server + sep) and rule.matches(exposed):
        return True
    cut = len(exposed) - 1 - _HASH_LEN
    suffix = re.escape(_filler(rule.allowed)) + f"[0-9a-f]{{{_HASH_LEN}}}"
    if cut < 1 or not re.fullmatch(suffix, exposed[cut:]) or not rule.matches(exposed):
        return False
    head, prefix = exposed[:cut], _sanitized(server + sep, rule)
    if head.startswith(prefix):
        return True
    return cut == max(rule.max_length - 1 - _HASH_LEN, 1) and prefix.startswith(head)


def name_overlap(a: str, b: str, sep: str, rule: NameRule) -> str | None:
    """Why ``may_name`` could hold for a name and both servers ``a`` and ``b``,
    as a clause to follow "servers a and b"; ``None`` when it cannot.

    ``may_name`` matches a server by the sanitized ``server + sep`` its names
    begin with (the raw one is never longer), or, for a name cut to fit, by
    the part left of it: the two overlap when those prefixes are equal, when
    one begins the other (``a__`` and ``a___``: servers ``a`` and ``a_``), or
    when both are cut to the same characters.
    """
    pa, pb = _sanitized(a + sep, rule), _sanitized(b + sep, rule)
    if pa == pb:
        return f"both become {pa[: -len(sep)]!r} in exposed tool names"
    if pa.startswith(pb) or pb.startswith(pa):
        return f"have exposed tool names beginning {pa!r} and {pb!r}"
    cut = max(rule.max_length - 1 - _HASH_LEN, 1)
    if pa[:cut] == pb[:cut]:
        return f"have exposed tool names cut to the same first {cut} characters {pa[:cut]!r}"
    return None


def tool_selected(name: str, include: Sequence[str] | None, exclude: Sequence[str]) -> bool:
    """Whether ``includeTools``/``excludeTools`` globs expose ``name`` (allowlist wins)."""
    if include is not None:
        return any(fnmatchcase(name, pattern) for pattern in include)
    return not any(fnmatchcase(name, pattern) for pattern in exclude)


@dataclass(frozen=True)
class NameCollision:
    """Two tools want the same exposed name; ``server``/``tool`` is the one refused."""

    exposed_name: str
    server: str
    tool: str
    other_server: str
    other_tool: str

    def __str__(self) -> str:
        return (
            f"tool {self.tool!r} of server {self.server!r} is not exposed: its name "
            f"{self.exposed_name!r} is taken by tool {self.other_tool!r} of server "
            f"{self.other_server!r}"
        )


@dataclass(frozen=True)
class Nameless:
    """A ``kind`` (``"tool"`` or ``"prompt"``) that ``server`` listed at ``index``
    (0-based) without a usable name; ``listed`` is its ``name`` member as sent
    (``None`` when absent). It is not exposed: no call could name it."""

    server: str
    kind: str
    index: int
    listed: object

    def __str__(self) -> str:
        return (
            f"{self.kind} #{self.index} of server {self.server!r} is not exposed: its name "
            f"{self.listed!r} is not a non-empty string, so it cannot be called"
        )


class NameTable:
    """Exposed name <-> (server, original name), one server's entries replaced at a time."""

    def __init__(self, sep: str, rule: NameRule) -> None:
        self.sep = sep
        self.rule = rule
        self._owner: dict[str, tuple[str, str]] = {}
        self._by_server: dict[str, dict[str, str]] = {}

    def check_server_name(self, server: str) -> str | None:
        """Why ``server`` cannot have exposed names, or ``None`` when it can."""
        if not server:
            return "a server name must not be empty"
        if self.sep in server:
            return (
                f"the server name {server!r} contains the separator {self.sep!r}, which "
                "would make its tool names ambiguous; rename the server"
            )
        return None

    def assign(
        self, server: str, tools: Iterable[str]
    ) -> tuple[dict[str, str], list[NameCollision]]:
        """Replace ``server``'s names; returns original -> exposed, and what was refused."""
        self.remove(server)
        mine: dict[str, str] = {}
        refused: list[NameCollision] = []
        for tool in tools:
            name = expose(server, tool, self.sep, self.rule)
            # A server listing one tool twice is a clash with itself: the first stands.
            owner = self._owner.get(name)
            if owner is not None:
                refused.append(NameCollision(name, server, tool, *owner))
                continue
            self._owner[name] = (server, tool)
            mine[tool] = name
        self._by_server[server] = mine
        return dict(mine), refused

    def remove(self, server: str) -> None:
        for name in self._by_server.pop(server, {}).values():
            self._owner.pop(name, None)

    def lookup(self, exposed: str) -> tuple[str, str] | None:
        return self._owner.get(exposed)

    def names_of(self, server: str) -> dict[str, str]:
        return dict(self._by_server.get(server, {}))


def estimate_tokens(tools: Iterable[object]) -> int:
    """A rough token count of tool definitions (JSON length / 4, the usual rule of thumb)."""
    total = 0
    for tool in tools:
        raw = getattr(tool, "raw", None)
        total += len(json.dumps(raw if raw is not None else str(tool))) // 4
    return total


def crossed_thresholds(before: int, after: int, thresholds: Iterable[int]) -> list[int]:
    """The thresholds that ``after`` exceeds and ``before`` did not."""
    return sorted(t for t in thresholds if before <= t < after)


@dataclass(frozen=True)
class HubTool:
    """A tool as the hub exposes it.

    Attributes:
        name: the exposed name (``server__tool``), what a model calls.
        server: the server that has it.
        tool: the tool as the server listed it (``tool.name`` is the original name).
        enabled: ``False`` for tools in the server's ``disabledTools`` (calls are refused).
        always_allow: calls skip the approval hook (``alwaysAllow`` or ``trust``).
    """

    name: str
    server: str
    tool: Tool
    enabled: bool = True
    always_allow: bool = False

    @property
    def original_name(self) -> str:
        return self.tool.name

    @property
    def description(self) -> str:
        return self.tool.description or self.tool.title or ""

    @property
    def input_schema(self) -> JSONObject:
        return self.tool.input_schema

    def fitted_schema(self, provider: str) -> FittedSchema:
        """The input schema as ``provider`` (``"openai"``, ``"anthropic"``,
        ``"gemini"``) accepts it, and the warnings of what it could not carry
        over (``_hub_schema``); the server's schema is left as it is."""
        from ._hub_schema import fit_schema

        return fit_schema(self.tool.input_schema, provider)

    def definition(self, provider: str | None = None) -> dict[str, object]:
        """The function definition to give a model: exposed name, description,
        and the input schema, as the server gave it or fitted to ``provider``."""
        schema = self.tool.input_schema if provider is None else self.fitted_schema(provider).schema
        return {"name": self.name, "description": self.description, "inputSchema": schema}


@dataclass(frozen=True)
class HubPrompt:
    """A prompt as the hub exposes it: ``name`` is exposed like a tool's."""

    name: str
    server: str
    prompt: Prompt
