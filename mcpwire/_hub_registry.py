"""The hub's registries: which tools and prompts are exposed, under which names.

Theory of operation
-------------------
A registry entry is rebuilt per server whenever that server's discovery or
config changes (a ``list_changed`` notification, a new filter): entries
listed without a usable name are left out (each reported as a ``Nameless``,
which the hub records as a warning in the server's history), the server's
tools are filtered by its ``includeTools``/``excludeTools`` globs, named by
the ``NameTable`` (which refuses collisions), and marked disabled
(``disabledTools``) or pre-approved (``alwaysAllow``, ``trust``). Filtered-out
tools are remembered under the name they would have had, so a call of one is
refused with the reason instead of "unknown tool". A server refused a name is
registered again as soon as that name is free (its holder was removed, or
lists it no more), so the tool does not wait for its own server's next
listing. Each rebuild publishes a ``NameCollisionEvent`` per refused name,
and a ``ToolCountWarning`` when the total crosses a threshold (many clients
refuse more than 40 or 128 tools), naming the largest servers with a rough
token estimate of their definitions.

``ToolsChanged`` and ``ResourcesChanged`` describe what a server *exposes*:
its entries while the hub shows them (``exposed``: the server is ready, idle,
or starting because a call woke it from idle), nothing otherwise. The entries
stay registered while a server is down (a call of one waits for the server to
come back), so what subscribers were
last told is kept apart (``_shown``) and compared with what is exposed after
every rebuild, removal and state change (``show``): the tools of a server that
goes down leave in one ``ToolsChanged`` (to 0), and come back in one, whatever
its new listing holds, since a listing is registered before the server is
exposed again. ``ToolsChanged`` comes when the count moved, ``ResourcesChanged``
when the resource URIs or templates differ.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, TypeVar

from ._hub_errors import HubError, ToolCallRefused
from ._hub_events import (
    HubEvent,
    NameCollisionEvent,
    ResourcesChanged,
    ToolCountWarning,
    ToolsChanged,
)
from ._hub_names import (
    HubPrompt,
    HubTool,
    NameCollision,
    Nameless,
    NameRule,
    NameTable,
    crossed_thresholds,
    estimate_tokens,
    expose,
    may_name,
    tool_selected,
)

if TYPE_CHECKING:
    from ._hub_config import ServerConfig
    from ._hub_status import Discovery
    from ._types import Prompt, Tool

__all__ = ("Registry", "always_allowed", "call_refusal")

logger = logging.getLogger("mcpwire.hub")

_S = TypeVar("_S")


def always_allowed(config: ServerConfig, tool: str) -> bool:
    """Whether calls of ``tool`` skip the approval hook (``trust``, ``alwaysAllow`` globs)."""
    return config.trust or any(fnmatchcase(tool, pattern) for pattern in config.always_allow)


def call_refusal(config: ServerConfig, tool: str) -> str | None:
    """Why a call of ``tool`` is refused by its server's configuration, if it is."""
    if config.disabled:
        return f"server {config.name!r} is disabled ({config.disabled_reason})"
    if tool in config.disabled_tools:
        where = f"disabledTools in {config.origin}"
        return f"tool {tool!r} of server {config.name!r} is disabled ({where})"
    return None


class Registry:
    """Exposed tools and prompts of every server (see the module docstring)."""

    def __init__(
        self,
        separator: str,
        rule: NameRule,
        thresholds: Sequence[int],
        publish: Callable[[HubEvent], None],
        exposed: Callable[[str], bool] = lambda server: True,
    ) -> None:
        self.separator = separator
        self.rule = rule
        self.thresholds = tuple(thresholds)
        self._publish = publish
        self._exposed = exposed
        self._tool_names = NameTable(separator, rule)
        self._prompt_names = NameTable(separator, rule)
        self._tools: dict[str, list[HubTool]] = {}
        self._prompts: dict[str, list[HubPrompt]] = {}
        #: Exposed name -> (server, tool, what filtered it out).
        self._hidden: dict[str, tuple[str, str, str]] = {}
        #: What subscribers were last told each server exposes: its tool count,
        #: resource URIs and URI templates (absent: nothing).
        self._shown: dict[str, tuple[int, frozenset[str], frozenset[str]]] = {}
        #: Each server's last listing, and the tool and prompt names it was refused:
        #: it is registered again once another server lets one of those go.
        self._listed: dict[str, tuple[ServerConfig, Discovery]] = {}
        self._refused: dict[str, tuple[set[str], set[str]]] = {}

    def check_server_name(self, name: str) -> str | None:
        return self._tool_names.check_server_name(name)

    def tools_of(self, server: str) -> list[HubTool]:
        return list(self._tools.get(server, ()))

    def prompts_of(self, server: str) -> list[HubPrompt]:
        return list(self._prompts.get(server, ()))

    def total(self) -> int:
        return sum(len(tools) for tools in self._tools.values())

    def route_tool(self, exposed: str) -> tuple[str, str]:
        """(server, original name); refuses filtered-out tools with the reason."""
        route = self._tool_names.lookup(exposed)
        if route is not None:
            return route
        hidden = self._hidden.get(exposed)
        if hidden is not None:
            raise ToolCallRefused(
                f"tool {hidden[1]!r} of server {hidden[0]!r} is not exposed: it is filtered "
                f"out by {hidden[2]}"
            )
        raise HubError(f"unknown tool {exposed!r}")

    def route_prompt(self, exposed: str) -> tuple[str, str]:
        route = self._prompt_names.lookup(exposed)
        if route is None:
            raise HubError(f"unknown prompt {exposed!r}")
        return route

    def server_of(
        self, exposed: str, servers: Mapping[str, _S], pick: Callable[[_S], bool]
    ) -> _S | None:
        """The first of ``servers`` (by name) that ``pick`` accepts and that
        ``exposed`` may name a tool or prompt of (``may_name``): where a name that
        routes nowhere yet belongs, through the mapping that makes exposed names."""
        for name, server in servers.items():
            if may_name(exposed, name, self.separator, self.rule) and pick(server):
                return server
        return None

    def register(self, config: ServerConfig, found: Discovery) -> list[Nameless | NameCollision]:
        """Rebuild one server's entries; returns the entries it lists without a
        usable name, and the names it was refused."""
        refused = self._register(config, found)
        self._retry_refused()
        return refused

    def _retry_refused(self) -> None:
        """Register again each server refused a name that is free now (its holder was
        forgotten or no longer lists it), so that tool is exposed at once."""
        for name, (tools, prompts) in list(self._refused.items()):
            free = any(self._tool_names.lookup(n) is None for n in tools) or any(
                self._prompt_names.lookup(n) is None for n in prompts
            )
            if free and name in self._listed:
                self._register(*self._listed[name])

    def _register(self, config: ServerConfig, found: Discovery) -> list[Nameless | NameCollision]:
        name = config.name
        self._listed[name] = (config, found)
        before_total = self.total()
        self._hidden = {k: v for k, v in self._hidden.items() if v[0] != name}
        named_tools, nameless = _named(name, "tool", found.tools)
        named_prompts, nameless_prompts = _named(name, "prompt", found.prompts)
        for entry in nameless + nameless_prompts:
            logger.warning("%s", entry)
        selected = []
        for t in named_tools:
            if not tool_selected(t.name, config.include_tools, config.exclude_tools):
                why = "the server's includeTools/excludeTools"
            elif not tool_selected(
                t.name, config.profile_include_tools, config.profile_exclude_tools
            ):
                why = "the profile in force"
            else:
                selected.append(t)
                continue
            self._hidden[expose(name, t.name, self.separator, self.rule)] = (name, t.name, why)
        exposed, collisions = self._tool_names.assign(name, [t.name for t in selected])
        self._tools[name] = [
            HubTool(
                exposed[t.name],
                name,
                t,
                enabled=t.name not in config.disabled_tools,
                always_allow=always_allowed(config, t.name),
            )
            for t in _first_of_each(selected)
            if t.name in exposed
        ]
        prompt_names, prompt_collisions = self._prompt_names.assign(
            name, [p.name for p in named_prompts]
        )
        self._prompts[name] = [
            HubPrompt(prompt_names[p.name], name, p)
            for p in _first_of_each(named_prompts)
            if p.name in prompt_names
        ]
        refused = collisions + prompt_collisions
        self._refused.pop(name, None)
        if refused:
            tools = {c.exposed_name for c in collisions}
            self._refused[name] = (tools, {c.exposed_name for c in prompt_collisions})
        for clash in refused:
            logger.warning("%s", clash)
            self._publish(
                NameCollisionEvent(
                    exposed_name=clash.exposed_name,
                    server=clash.server,
                    tool=clash.tool,
                    other_server=clash.other_server,
                    other_tool=clash.other_tool,
                )
            )
        self.show(name)
        self._check_total(before_total)
        return [*nameless, *nameless_prompts, *refused]

    def show(self, name: str) -> None:
        """Publish ``ToolsChanged`` and ``ResourcesChanged`` for the difference between
        what ``name`` exposes now and what subscribers were last told."""
        listed = self._listed.get(name) if self._exposed(name) else None
        found = listed[1] if listed is not None else None
        tools = len(self._tools.get(name, ())) if listed is not None else 0
        uris = frozenset(r.uri for r in found.resources) if found else frozenset()
        templates = frozenset(t.uri_template for t in found.templates) if found else frozenset()
        empty: frozenset[str] = frozenset()
        before, old_uris, old_templates = self._shown.pop(name, (0, empty, empty))
        if tools or uris or templates:
            self._shown[name] = (tools, uris, templates)
        if tools != before:
            self._publish(ToolsChanged(server=name, before=before, after=tools))
        if (uris, templates) != (old_uris, old_templates):
            was, now = len(old_uris) + len(old_templates), len(uris) + len(templates)
            self._publish(ResourcesChanged(server=name, before=was, after=now))

    def forget(self, name: str) -> None:
        self._tools.pop(name, None)
        self._tool_names.remove(name)
        self._prompt_names.remove(name)
        self._prompts.pop(name, None)
        self._hidden = {k: v for k, v in self._hidden.items() if v[0] != name}
        self._listed.pop(name, None)
        self._refused.pop(name, None)
        self.show(name)
        self._retry_refused()

    def _check_total(self, before: int) -> None:
        total = self.total()
        crossed = crossed_thresholds(before, total, self.thresholds)
        if not crossed:
            return
        largest = sorted(
            ((n, len(t), estimate_tokens(x.tool for x in t)) for n, t in self._tools.items()),
            key=lambda item: -item[1],
        )[:3]
        names = ", ".join(f"{n} ({count} tools, ~{tokens} tokens)" for n, count, tokens in largest)
        for threshold in crossed:
            logger.warning(
                "%d tools are exposed, more than %d (some clients refuse more); largest: %s. "
                "Narrow them with includeTools/excludeTools.",
                total,
                threshold,
                names,
            )
            self._publish(
                ToolCountWarning(total=total, threshold=threshold, largest=tuple(largest))
            )


_Named = TypeVar("_Named", "Tool", "Prompt")


def _named(server: str, kind: str, listed: Iterable[_Named]) -> tuple[list[_Named], list[Nameless]]:
    """``listed`` split into the entries with a usable name and those without one
    (a name absent, not a string or empty parses as ``""``)."""
    named: list[_Named] = []
    nameless: list[Nameless] = []
    for index, item in enumerate(listed):
        if item.name:
            named.append(item)
        else:
            nameless.append(Nameless(server, kind, index, item.raw.get("name")))
    return named, nameless


def _first_of_each(listed: Iterable[_Named]) -> list[_Named]:
    """``listed`` without the entries whose name an earlier one has (a server that
    lists a name twice: the first stands, as ``NameTable.assign`` keeps it)."""
    seen: set[str] = set()
    first: list[_Named] = []
    for item in listed:
        if item.name not in seen:
            seen.add(item.name)
            first.append(item)
    return first
