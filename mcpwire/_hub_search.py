"""Tool search: three small tools in place of every schema (pain point #10).

A model given every tool of every server pays for their schemas on each turn
(one large server is tens of thousands of tokens), and clients cap the count
(40, 50, 128). ``ToolSearch`` offers a model three tools instead:

``search_tools(query, limit)``
    The hub's enabled tools that best match the words of ``query``, each as
    its exposed name and the first line of its description.
``describe_tool(name)``
    One tool's whole definition (name, description, input schema), fitted to
    the provider when one was given (``_hub_schema``).
``call_tool(name, arguments)``
    Calls it through the hub: the same routing, approval hook and errors as
    ``Hub.call_tool``.

Matching is plain and predictable: query and tool text are split into
lowercase words in any script (``snake_case``, ``camelCase`` and
``server__tool`` split too); a query word scores 3 when it is a word of the
exposed name, 2 when it starts one, 1 when it is a word of the description or
the server's name. Tools with no score are left out; ties go by name. An
empty query lists tools by name.

Errors a model can act on (an unknown tool, bad arguments to a meta tool) come
back as a result with ``is_error``, as a server's tool errors do; a refused
call (``ToolCallRefused``) and transport failures raise, as ``Hub.call_tool``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, cast

from ._types import CallToolResult, Content
from .sansio import _codec

if TYPE_CHECKING:
    from ._hub import Hub
    from ._hub_names import HubTool
    from .sansio._json import JSONObject, JSONValue

__all__ = ("DEFAULT_LIMIT", "MAX_LIMIT", "ToolSearch", "words")

#: Tools a search returns unless asked for another number, and at most.
DEFAULT_LIMIT = 10
MAX_LIMIT = 50

_RUN = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")


def words(text: str) -> list[str]:
    """Lowercase words of ``text``: runs of letters and digits in any script,
    and ASCII runs split further at camelCase and digit boundaries."""
    out: list[str] = []
    for run in _RUN.findall(text):
        if run.isascii():
            out.extend(w.lower() for w in _CAMEL.findall(run))
        else:  # lowercasing may add combining marks ("İ"): split again after it
            out.extend(_RUN.findall(run.lower()))
    return out


class ToolSearch:
    """The three search tools over ``hub``; ``provider`` fits described schemas."""

    def __init__(self, hub: Hub, *, provider: str | None = None) -> None:
        self.hub = hub
        self.provider = provider

    def definitions(self) -> list[dict[str, object]]:
        """The three tools, as function definitions to give a model."""
        return [
            {
                "name": "search_tools",
                "description": "Find tools by what they do. Returns names and summaries; "
                "use describe_tool for a tool's parameters.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "query": {"type": "string", "description": "words to look for"},
                        "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                    },
                    "required": ["query"],
                },
            },
            {
                "name": "describe_tool",
                "description": "A tool's full definition, with its input schema.",
                "inputSchema": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}},
                    "required": ["name"],
                },
            },
            {
                "name": "call_tool",
                "description": "Call a tool found with search_tools.",
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "arguments": {"type": "object"},
                    },
                    "required": ["name"],
                },
            },
        ]

    def search(self, query: str, limit: int = DEFAULT_LIMIT) -> list[HubTool]:
        """The enabled tools that match ``query`` best (see the module docstring)."""
        tools = self.hub.tools()
        wanted = words(query)
        if not wanted:
            return sorted(tools, key=lambda t: t.name)[:limit]
        scored: list[tuple[int, str, HubTool]] = []
        for tool in tools:
            name = words(tool.name)
            other = set(words(tool.description)) | set(words(tool.server))
            score = 0
            for word in wanted:
                if word in name:
                    score += 3
                elif any(w.startswith(word) for w in name):
                    score += 2
                elif word in other:
                    score += 1
            if score:
                scored.append((-score, tool.name, tool))
        scored.sort(key=lambda item: item[:2])
        return [tool for _, _, tool in scored[:limit]]

    async def call(self, name: str, arguments: JSONObject | None = None) -> CallToolResult:
        """Run one of the three tools for a model."""
        args = arguments or {}
        if name == "search_tools":
            query, limit = args.get("query"), args.get("limit", DEFAULT_LIMIT)
            if not isinstance(query, str):
                return _error("search_tools needs a query (a string)")
            if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
                return _error(f"limit must be an integer from 1 to {MAX_LIMIT}")
            found: list[JSONValue] = [
                {"name": t.name, "summary": t.description.strip().split("\n", 1)[0]}
                for t in self.search(query, limit)
            ]
            return _result({"tools": found})
        if name == "describe_tool":
            tool = self._tool(args.get("name"))
            if tool is None:
                return _error(f"no tool named {args.get('name')!r}; use search_tools")
            return _result(cast("JSONObject", tool.definition(self.provider)))
        if name == "call_tool":
            tool = self._tool(args.get("name"))
            inner = args.get("arguments", {})
            if tool is None:
                return _error(f"no tool named {args.get('name')!r}; use search_tools")
            if not isinstance(inner, dict):
                return _error("arguments must be an object")
            return await self.hub.call_tool(tool.name, inner)
        return _error(f"unknown tool {name!r}: use search_tools, describe_tool or call_tool")

    def _tool(self, name: object) -> HubTool | None:
        return next((t for t in self.hub.tools() if t.name == name), None)


def _result(value: JSONObject) -> CallToolResult:
    text = _codec.dumps(value).decode("utf-8")
    return CallToolResult([Content("text", text=text)], structured=value)


def _error(message: str) -> CallToolResult:
    return CallToolResult([Content("text", text=message)], is_error=True)
