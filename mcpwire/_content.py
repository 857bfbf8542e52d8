"""Content blocks and result helpers shared by servers and clients.

Plain classes with ``to_json()``; handlers may return these, lists of them,
or wire-form dicts (anything with a ``"type"`` key passes through as is).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from .sansio._json import JSONObject, JSONValue

__all__ = (
    "Audio",
    "EmbeddedResource",
    "Image",
    "PromptMessage",
    "ResourceLink",
    "Text",
    "ToolError",
    "ToolResult",
    "content_block",
)


def _b64(data: bytes | str) -> str:
    return data if isinstance(data, str) else base64.b64encode(data).decode("ascii")


@dataclass(frozen=True, slots=True)
class Text:
    text: str
    annotations: JSONObject | None = None

    def to_json(self) -> JSONObject:
        out: JSONObject = {"type": "text", "text": self.text}
        if self.annotations:
            out["annotations"] = self.annotations
        return out


@dataclass(frozen=True, slots=True)
class Image:
    """Image content; ``data`` is raw bytes or already-base64 text."""

    data: bytes | str
    mime_type: str = "image/png"
    annotations: JSONObject | None = None

    def to_json(self) -> JSONObject:
        out: JSONObject = {"type": "image", "data": _b64(self.data), "mimeType": self.mime_type}
        if self.annotations:
            out["annotations"] = self.annotations
        return out


@dataclass(frozen=True, slots=True)
class Audio:
    data: bytes | str
    mime_type: str = "audio/wav"
    annotations: JSONObject | None = None

    def to_json(self) -> JSONObject:
        out: JSONObject = {"type": "audio", "data": _b64(self.data), "mimeType": self.mime_type}
        if self.annotations:
            out["annotations"] = self.annotations
        return out


@dataclass(frozen=True, slots=True)
class ResourceLink:
    uri: str
    name: str
    description: str | None = None
    mime_type: str | None = None

    def to_json(self) -> JSONObject:
        out: JSONObject = {"type": "resource_link", "uri": self.uri, "name": self.name}
        if self.description is not None:
            out["description"] = self.description
        if self.mime_type is not None:
            out["mimeType"] = self.mime_type
        return out


@dataclass(frozen=True, slots=True)
class EmbeddedResource:
    """An embedded resource: ``text`` or ``blob`` (bytes) contents."""

    uri: str
    text: str | None = None
    blob: bytes | None = None
    mime_type: str | None = None

    def to_json(self) -> JSONObject:
        res: JSONObject = {"uri": self.uri}
        if self.mime_type is not None:
            res["mimeType"] = self.mime_type
        if self.blob is not None:
            res["blob"] = _b64(self.blob)
        else:
            res["text"] = self.text or ""
        return {"type": "resource", "resource": res}


@dataclass(frozen=True, slots=True)
class PromptMessage:
    """A prompt message; ``content`` is a content helper (``Text``, ``Image``, ...),
    a string, or a wire-form content block."""

    role: str
    content: JSONValue | Text | Image | Audio | ResourceLink | EmbeddedResource

    def to_json(self) -> JSONObject:
        return {"role": self.role, "content": content_block(self.content)}


@dataclass(slots=True)
class ToolResult:
    """Full control over a ``tools/call`` result."""

    content: list[JSONValue] = field(default_factory=list)
    structured: JSONValue = None
    is_error: bool = False
    meta: JSONObject | None = None


class ToolError(Exception):
    """Raise from a tool to return an ``isError`` result with this message."""


def content_block(value: object) -> JSONObject:
    """One content block in wire form."""
    to_json = getattr(value, "to_json", None)
    if to_json is not None:
        out: JSONObject = to_json()
        return out
    if isinstance(value, dict) and "type" in value:
        return value
    if isinstance(value, str):
        return {"type": "text", "text": value}
    raise TypeError(f"cannot turn {type(value).__name__} into a content block")
