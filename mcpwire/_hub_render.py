"""Text for people and models: the system-prompt section, the status table, snippets.

``system_prompt`` renders the "MCP SERVERS" section an agent puts in its
system prompt: each ready server with its instructions, its tools under their
exposed names with a one-line summary of their input schema, and its
resources; servers that are not available are named so the model does not
promise what it cannot do. ``status_table`` is what ``mcpwire hub`` prints.
``config_snippet`` writes one server's entry in a client's own dialect.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ._hub_events import ServerState

if TYPE_CHECKING:
    from ._hub import Hub
    from ._hub_status import ServerStatus
    from .sansio._json import JSONValue

__all__ = ("SNIPPET_CLIENTS", "config_snippet", "schema_summary", "status_table", "system_prompt")

SNIPPET_CLIENTS = ("claude", "cursor", "vscode", "roo", "gemini")
_ERROR_WIDTH = 70


def schema_summary(schema: JSONValue) -> str:
    """``query: string (required) - what to look for; page?: integer``."""
    if not isinstance(schema, dict):
        return ""
    props = schema.get("properties")
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    parts: list[str] = []
    if isinstance(props, dict):
        for name, prop in props.items():
            kind: Any = "any"
            doc = ""
            if isinstance(prop, dict):
                kind = prop.get("type", "any")
                if "enum" in prop and isinstance(prop["enum"], list):
                    kind = "|".join(map(str, prop["enum"]))
                elif isinstance(kind, list):
                    kind = "|".join(map(str, kind))
                elif kind == "array" and isinstance(prop.get("items"), dict):
                    kind = f"{prop['items'].get('type', 'any')}[]"  # type: ignore[union-attr]
                description = prop.get("description")
                doc = f" - {description}" if isinstance(description, str) and description else ""
            mark = " (required)" if name in needed else ""
            parts.append(f"{name}{'' if name in needed else '?'}: {kind}{mark}{doc}")
    return "; ".join(parts)


def system_prompt(hub: Hub) -> str:
    tools_by_server: dict[str, list[str]] = {}
    for tool in hub.tools():
        lines = [f"- {tool.name}: {tool.description or '(no description)'}"]
        summary = schema_summary(tool.input_schema)
        lines.append(f"    Input: {summary}" if summary else "    Input: none")
        tools_by_server.setdefault(tool.server, []).append("\n".join(lines))
    resources: dict[str, list[str]] = {}
    for server, res in hub.resources():
        about = f": {res.description}" if res.description else ""
        resources.setdefault(server, []).append(f"- {res.uri} ({res.name}){about}")
    templates: dict[str, list[str]] = {}
    for server, tpl in hub.resource_templates():
        about = f": {tpl.description}" if tpl.description else ""
        templates.setdefault(server, []).append(f"- {tpl.uri_template} ({tpl.name}){about}")
    instructions = hub.instructions()
    sections: list[str] = []
    unavailable: list[str] = []
    for status in hub.statuses():
        if not status.state.exposed:
            if status.state is not ServerState.DISABLED:
                unavailable.append(f"- {status.name}: {status.state.value}")
            continue
        title = status.server_info.get("title") or status.server_info.get("name")
        head = f"## {status.name}" + (f" ({title})" if title and title != status.name else "")
        parts = [head]
        if status.name in instructions:
            parts.append(f"### Instructions\n{instructions[status.name]}")
        if tools_by_server.get(status.name):
            parts.append("### Available Tools\n" + "\n".join(tools_by_server[status.name]))
        if resources.get(status.name):
            parts.append("### Direct Resources\n" + "\n".join(resources[status.name]))
        if templates.get(status.name):
            parts.append("### Resource Templates\n" + "\n".join(templates[status.name]))
        sections.append("\n\n".join(parts))
    text = [
        "MCP SERVERS",
        "The Model Context Protocol (MCP) connects this system to servers that provide "
        "tools and resources. Call a tool by the exact name shown before its colon; its "
        "arguments are a JSON object with the listed fields (fields marked ? are optional).",
        "# Connected MCP Servers",
        "\n\n".join(sections) if sections else "(no server is connected)",
    ]
    if unavailable:
        text.append(
            "# Unavailable MCP Servers\nThese are configured but cannot be used now:\n"
            + "\n".join(unavailable)
        )
    return "\n\n".join(text) + "\n"


def _one_line(text: str | None, width: int) -> str:
    if not text:
        return "-"
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 3] + "..."


def _cells(
    name: str, state: str, transport: str, tools: str, error: str
) -> tuple[str, str, str, str, str]:
    # A server's error text (its stderr tail) reaches the terminal here: its
    # control characters are shown as escapes (see ``_cli_output.visible``).
    from ._cli_output import visible

    return (
        visible(name, lines=False),
        state,
        visible(transport, lines=False),
        tools,
        visible(error, lines=False),
    )


def status_table(statuses: Sequence[ServerStatus]) -> str:
    """The status of each server as an aligned text table."""
    header = ("SERVER", "STATE", "TRANSPORT", "TOOLS", "LAST ERROR")
    rows = [header]
    for s in statuses:
        error = s.last_error
        if s.state is ServerState.DISABLED:
            error = s.reason
        elif s.state.exposed and s.restarts == 0:
            error = None
        rows.append(
            _cells(s.name, s.state.value, s.transport, str(s.tools), _one_line(error, _ERROR_WIDTH))
        )
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = []
    for row in rows:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1]), row[2].ljust(widths[2])]
        cells.append(row[3].rjust(widths[3]) if row is not header else row[3].ljust(widths[3]))
        cells.append(row[4])
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def config_snippet(
    client: str,
    name: str,
    *,
    command: str | None = None,
    args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    url: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One server's config in ``client``'s dialect, ready to paste into its file.

    ``client`` is one of ``claude``, ``cursor``, ``vscode``, ``roo``, ``gemini``.
    """
    if client not in SNIPPET_CLIENTS:
        raise ValueError(f"client must be one of {', '.join(SNIPPET_CLIENTS)}, not {client!r}")
    if (command is None) == (url is None):
        raise ValueError("give a command or a url (not both)")
    entry: dict[str, Any] = {}
    if command is not None:
        if client in ("vscode", "roo"):
            entry["type"] = "stdio"
        entry["command"] = command
        entry["args"] = list(args)
        if env:
            entry["env"] = dict(env)
    else:
        if client == "gemini":
            entry["httpUrl"] = url
        else:
            kind = {"roo": "streamable-http", "cursor": None}.get(client, "http")
            if kind is not None:
                entry["type"] = kind
            entry["url"] = url
        if headers:
            entry["headers"] = dict(headers)
    if client == "roo":
        entry["disabled"] = False
        entry["alwaysAllow"] = []
    key = "servers" if client == "vscode" else "mcpServers"
    return {key: {name: entry}}
