"""Content blocks and result helpers shared by servers and clients.

Frozen records (``sansio._record``) with ``to_json()``, and the mutable
``ToolResult``; handlers may return these, lists of them, or wire-form dicts
(anything with a ``"type"`` key passes through as is).
"""

from __future__ import annotations

import base64

from .sansio._json import JSONObject, JSONValue
from .sansio._record import FRESH_LIST, Record, setters

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


class Text(Record):
    text: str
    annotations: JSONObject | None

    def __init__(self, text: str, annotations: JSONObject | None = None) -> None:
        _text_text(self, text)
        _text_annotations(self, annotations)

    def to_json(self) -> JSONObject:
        out: JSONObject = {"type": "text", "text": self.text}
        if self.annotations:
            out["annotations"] = self.annotations
        return out


class Image(Record):
    """Image content; ``data`` is raw bytes or already-base64 text."""

    data: bytes | str
    mime_type: str
    annotations: JSONObject | None

    def __init__(
        self, data: bytes | str, mime_type: str = "image/png", annotations: JSONObject | None = None
    ) -> None:
        _image_data(self, data)
        _image_mime_type(self, mime_type)
        _image_annotations(self, annotations)

    def to_json(self) -> JSONObject:
        out: JSONObject = {"type": "image", "data": _b64(self.data), "mimeType": self.mime_type}
        if self.annotations:
            out["annotations"] = self.annotations
        return out


class Audio(Record):
    data: bytes | str
    mime_type: str
    annotations: JSONObject | None

    def __init__(
        self, data: bytes | str, mime_type: str = "audio/wav", annotations: JSONObject | None = None
    ) -> None:
        _audio_data(self, data)
        _audio_mime_type(self, mime_type)
        _audio_annotations(self, annotations)

    def to_json(self) -> JSONObject:
        out: JSONObject = {"type": "audio", "data": _b64(self.data), "mimeType": self.mime_type}
        if self.annotations:
            out["annotations"] = self.annotations
        return out


class ResourceLink(Record):
    uri: str
    name: str
    description: str | None
    mime_type: str | None

    def __init__(
        self, uri: str, name: str, description: str | None = None, mime_type: str | None = None
    ) -> None:
        _link_uri(self, uri)
        _link_name(self, name)
        _link_description(self, description)
        _link_mime_type(self, mime_type)

    def to_json(self) -> JSONObject:
        out: JSONObject = {"type": "resource_link", "uri": self.uri, "name": self.name}
        if self.description is not None:
            out["description"] = self.description
        if self.mime_type is not None:
            out["mimeType"] = self.mime_type
        return out


class EmbeddedResource(Record):
    """An embedded resource: ``text`` or ``blob`` (bytes) contents."""

    uri: str
    text: str | None
    blob: bytes | None
    mime_type: str | None

    def __init__(
        self,
        uri: str,
        text: str | None = None,
        blob: bytes | None = None,
        mime_type: str | None = None,
    ) -> None:
        _embedded_uri(self, uri)
        _embedded_text(self, text)
        _embedded_blob(self, blob)
        _embedded_mime_type(self, mime_type)

    def to_json(self) -> JSONObject:
        res: JSONObject = {"uri": self.uri}
        if self.mime_type is not None:
            res["mimeType"] = self.mime_type
        if self.blob is not None:
            res["blob"] = _b64(self.blob)
        else:
            res["text"] = self.text or ""
        return {"type": "resource", "resource": res}


class PromptMessage(Record):
    """A prompt message; ``content`` is a content helper (``Text``, ``Image``, ...),
    a string, or a wire-form content block."""

    role: str
    content: JSONValue | Text | Image | Audio | ResourceLink | EmbeddedResource

    def __init__(
        self, role: str, content: JSONValue | Text | Image | Audio | ResourceLink | EmbeddedResource
    ) -> None:
        _message_role(self, role)
        _message_content(self, content)

    def to_json(self) -> JSONObject:
        return {"role": self.role, "content": content_block(self.content)}


class ToolResult(Record, frozen=False):
    """Full control over a ``tools/call`` result."""

    content: list[JSONValue]
    structured: JSONValue
    is_error: bool
    meta: JSONObject | None

    def __init__(
        self,
        content: list[JSONValue] = FRESH_LIST,
        structured: JSONValue = None,
        is_error: bool = False,
        meta: JSONObject | None = None,
    ) -> None:
        self.content = [] if content is FRESH_LIST else content
        self.structured = structured
        self.is_error = is_error
        self.meta = meta


# Each frozen record's __init__ stores its fields through these (see ``sansio._record``).
_text_text, _text_annotations = setters(Text)
_image_data, _image_mime_type, _image_annotations = setters(Image)
_audio_data, _audio_mime_type, _audio_annotations = setters(Audio)
_link_uri, _link_name, _link_description, _link_mime_type = setters(ResourceLink)
_embedded_uri, _embedded_text, _embedded_blob, _embedded_mime_type = setters(EmbeddedResource)
_message_role, _message_content = setters(PromptMessage)


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
