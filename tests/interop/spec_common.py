"""The server *spec* shared by the two spec-driven servers of the cross-serve property tests.

A spec is plain JSON (``tests/test_crossserve.py`` generates them with hypothesis)::

    {
      "pageSize": 2,
      "tools": [{"name": "t0", "description": "...", "inputSchema": {...},
                 "behaviour": "echo" | "structured" | "error" | "image" | "progress" | "log",
                 "count": 2, "level": "info"}],
      "resources": [{"uri": "res://r0", "name": "r0", "mimeType": "text/plain",
                     "text": "..."} | {..., "blob": "<base64>"}],
      "templates": [{"uriTemplate": "test://{x}/t0", "name": "t0", "mimeType": "text/plain"}],
      "prompts": [{"name": "p0", "description": "...",
                   "arguments": [{"name": "a", "required": true}],
                   "messages": [{"role": "user", "text": "hello {a}"}]}]
    }

``tests/interop/spec_server_mcpwire.py`` builds an mcpwire ``Server`` from it and
``tests/interop/spec_server_ref.py`` a reference-SDK low-level ``Server``. Everything a
behaviour produces is computed here, once, so both servers answer with the same values
and any difference the tests see comes from the implementations.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

__all__ = (
    "ERROR_PREFIX",
    "IMAGE",
    "echo_text",
    "load_spec",
    "prompt_messages",
    "structured_output_schema",
    "template_text",
    "tool_outcome",
    "template_regex",
)

#: The text of a tool whose behaviour is ``error``; tests tell it from a validation error.
ERROR_PREFIX = "spec-error: "
#: A 1x1 PNG, for the ``image`` behaviour.
IMAGE = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


def load_spec(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        spec: dict[str, Any] = json.load(f)
    return spec


def echo_text(arguments: Any) -> str:
    """The canonical text of a tool's arguments (what ``echo`` returns)."""
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def structured_output_schema() -> dict[str, Any]:
    """The ``outputSchema`` of every ``structured`` tool."""
    return {
        "type": "object",
        "properties": {"echo": {"type": "object"}, "tool": {"type": "string"}},
        "required": ["echo", "tool"],
    }


def tool_outcome(tool: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """The ``CallToolResult`` (wire form, no ``resultType``) a tool returns for valid arguments.

    Notifications (progress, log) are emitted by the servers themselves, before this result.
    """
    behaviour = tool["behaviour"]
    if behaviour == "error":
        return {
            "content": [{"type": "text", "text": ERROR_PREFIX + tool["name"]}],
            "isError": True,
        }
    if behaviour == "structured":
        value = {"echo": arguments, "tool": tool["name"]}
        return {
            "content": [{"type": "text", "text": echo_text(value)}],
            "structuredContent": value,
            "isError": False,
        }
    if behaviour == "image":
        return {
            "content": [
                {"type": "image", "data": IMAGE, "mimeType": "image/png"},
                {"type": "text", "text": echo_text(arguments)},
            ],
            "isError": False,
        }
    return {"content": [{"type": "text", "text": echo_text(arguments)}], "isError": False}


def log_data(tool: dict[str, Any], i: int) -> dict[str, Any]:
    return {"tool": tool["name"], "i": i}


def template_regex(template: str) -> re.Pattern[str]:
    """A matcher for the spec's one-variable templates ``prefix{x}suffix``.

    Level-1 expansion (RFC 6570 section 3.2.2): the value is one non-empty run of
    unreserved or percent-encoded characters, never a ``/``.
    """
    head, _, rest = template.partition("{")
    _, _, tail = rest.partition("}")
    return re.compile(
        re.escape(head) + r"((?:[A-Za-z0-9\-._~]|%[0-9A-Fa-f]{2})+)" + re.escape(tail)
    )


def template_text(template: dict[str, Any], value: str) -> str:
    return f"{template['name']} of {value}"


def prompt_messages(prompt: dict[str, Any], arguments: dict[str, str]) -> list[dict[str, Any]]:
    """The rendered ``messages`` of a prompt: ``{name}`` placeholders filled, others blank."""
    names = [a["name"] for a in prompt.get("arguments", [])]
    out: list[dict[str, Any]] = []
    for message in prompt["messages"]:
        text = message["text"]
        for name in names:
            text = text.replace("{" + name + "}", arguments.get(name, ""))
        out.append({"role": message["role"], "content": {"type": "text", "text": text}})
    return out


def blob_bytes(resource: dict[str, Any]) -> bytes:
    return base64.b64decode(resource["blob"])
