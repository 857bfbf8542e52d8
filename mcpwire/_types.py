"""Typed, read-only views of what a server returns, for client users.

Every view keeps the wire form in ``raw`` so nothing the server sent is lost,
and exposes the fields by Python names. ``from_json`` never raises on missing
optional fields; it is lenient about what it reads and strict only where a
field is required for the view to mean anything. ``CallToolResult.from_json``
is strict throughout (``RemoteProtocolError`` naming the member): a tool result
misread, an ``isError`` of ``"true"`` taken for success, would mislead. Views are frozen records
(``sansio._record``): ``raw`` is neither shown by ``repr`` nor compared.
"""

from __future__ import annotations

from ._errors import RemoteProtocolError
from .sansio._json import JSONObject, JSONValue, dig, kind_of
from .sansio._record import FRESH_DICT, Record, fill, setters

__all__ = (
    "CallToolResult",
    "Completion",
    "Content",
    "GetPromptResult",
    "Prompt",
    "PromptArgument",
    "Resource",
    "ResourceContents",
    "ResourceTemplate",
    "Task",
    "Tool",
)


def _str(obj: JSONObject, key: str) -> str | None:
    value = obj.get(key)
    return value if isinstance(value, str) else None


def _obj(obj: JSONObject, key: str) -> JSONObject | None:
    value = obj.get(key)
    return value if isinstance(value, dict) else None


class Content(Record, hidden=("raw",)):
    """One content block: ``type`` is text, image, audio, resource_link or resource."""

    type: str
    text: str | None
    data: str | None
    mime_type: str | None
    uri: str | None
    resource: JSONObject | None
    raw: JSONObject

    def __init__(
        self,
        type: str,
        text: str | None = None,
        data: str | None = None,
        mime_type: str | None = None,
        uri: str | None = None,
        resource: JSONObject | None = None,
        raw: JSONObject = FRESH_DICT,
    ) -> None:
        _content_type(self, type)
        _content_text(self, text)
        _content_data(self, data)
        _content_mime_type(self, mime_type)
        _content_uri(self, uri)
        _content_resource(self, resource)
        _content_raw(self, {} if raw is FRESH_DICT else raw)

    @classmethod
    def from_json(cls, raw: JSONValue) -> Content:
        if not isinstance(raw, dict):
            return cls(type="unknown", raw={"value": raw})
        # Every result's content passes here: plain lookups, no helper calls.
        get = raw.get
        kind, text, data = get("type"), get("text"), get("data")
        mime, uri, resource = get("mimeType"), get("uri"), get("resource")
        return cls(
            kind if isinstance(kind, str) and kind else "unknown",
            text if isinstance(text, str) else None,
            data if isinstance(data, str) else None,
            mime if isinstance(mime, str) else None,
            uri if isinstance(uri, str) else None,
            resource if isinstance(resource, dict) else None,
            raw,
        )


class Tool(Record, hidden=("raw",)):
    name: str
    input_schema: JSONObject
    title: str | None
    description: str | None
    output_schema: JSONObject | None
    annotations: JSONObject | None
    icons: list[JSONValue] | None
    meta: JSONObject | None
    raw: JSONObject

    def __init__(
        self,
        name: str,
        input_schema: JSONObject,
        title: str | None = None,
        description: str | None = None,
        output_schema: JSONObject | None = None,
        annotations: JSONObject | None = None,
        icons: list[JSONValue] | None = None,
        meta: JSONObject | None = None,
        raw: JSONObject = FRESH_DICT,
    ) -> None:
        fill(
            self,
            (name, input_schema, title, description, output_schema, annotations, icons, meta, raw),
        )

    @classmethod
    def from_json(cls, raw: JSONObject) -> Tool:
        icons = raw.get("icons")
        return cls(
            name=_str(raw, "name") or "",
            input_schema=_obj(raw, "inputSchema") or {},
            title=_str(raw, "title"),
            description=_str(raw, "description"),
            output_schema=_obj(raw, "outputSchema"),
            annotations=_obj(raw, "annotations"),
            icons=icons if isinstance(icons, list) else None,
            meta=_obj(raw, "_meta"),
            raw=raw,
        )

    @property
    def task_support(self) -> str:
        """2025-11-25's ``execution.taskSupport``: forbidden (when absent), optional, required."""
        support = dig(self.raw, "execution", "taskSupport")
        return support if support in ("optional", "required") else "forbidden"


class CallToolResult(Record, hidden=("raw",)):
    content: list[Content]
    structured: JSONValue
    is_error: bool
    meta: JSONObject | None
    raw: JSONObject

    def __init__(
        self,
        content: list[Content],
        structured: JSONValue = None,
        is_error: bool = False,
        meta: JSONObject | None = None,
        raw: JSONObject = FRESH_DICT,
    ) -> None:
        _call_tool_result_content(self, content)
        _call_tool_result_structured(self, structured)
        _call_tool_result_is_error(self, is_error)
        _call_tool_result_meta(self, meta)
        _call_tool_result_raw(self, raw)

    @property
    def text(self) -> str:
        """All text blocks joined by newlines."""
        return "\n".join(c.text for c in self.content if c.text is not None)

    @classmethod
    def from_json(cls, raw: JSONObject) -> CallToolResult:
        """Read a result as every revision's schema has it: ``content`` an array of
        content blocks (objects with a string ``type``), ``isError`` a boolean and
        ``_meta`` an object where present. ``structuredContent`` may be any JSON
        value (an object up to 2025-11-25; 2026-07-28 allows any).

        Raises:
            RemoteProtocolError: a member breaks the schema; the message names it.
        """
        content = raw.get("content")
        if type(content) is not list:
            raise _malformed("content", "an array of content blocks", content)
        parse = Content.from_json
        blocks = []
        for i, item in enumerate(content):
            if type(item) is not dict or type(item.get("type")) is not str:
                raise _malformed(
                    f"content[{i}]", "a content block (an object with a string type)", item
                )
            blocks.append(parse(item))
        is_error = raw.get("isError", False)
        if type(is_error) is not bool:
            raise _malformed("isError", "a boolean", is_error)
        meta = raw.get("_meta")
        if type(meta) is not dict:
            if "_meta" in raw:
                raise _malformed("_meta", "an object", meta)
            meta = None
        return cls(blocks, raw.get("structuredContent"), is_error, meta, raw)


def _malformed(member: str, wanted: str, value: object) -> RemoteProtocolError:
    return RemoteProtocolError(
        f"malformed CallToolResult: {member!r} must be {wanted}, not {kind_of(value)}"
    )


class Resource(Record, hidden=("raw",)):
    uri: str
    name: str
    title: str | None
    description: str | None
    mime_type: str | None
    size: int | None
    raw: JSONObject

    def __init__(
        self,
        uri: str,
        name: str,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        raw: JSONObject = FRESH_DICT,
    ) -> None:
        fill(self, (uri, name, title, description, mime_type, size, raw))

    @classmethod
    def from_json(cls, raw: JSONObject) -> Resource:
        size = raw.get("size")
        return cls(
            uri=_str(raw, "uri") or "",
            name=_str(raw, "name") or "",
            title=_str(raw, "title"),
            description=_str(raw, "description"),
            mime_type=_str(raw, "mimeType"),
            size=size if isinstance(size, int) else None,
            raw=raw,
        )


class ResourceTemplate(Record, hidden=("raw",)):
    uri_template: str
    name: str
    title: str | None
    description: str | None
    mime_type: str | None
    raw: JSONObject

    def __init__(
        self,
        uri_template: str,
        name: str,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        raw: JSONObject = FRESH_DICT,
    ) -> None:
        fill(self, (uri_template, name, title, description, mime_type, raw))

    @classmethod
    def from_json(cls, raw: JSONObject) -> ResourceTemplate:
        return cls(
            uri_template=_str(raw, "uriTemplate") or "",
            name=_str(raw, "name") or "",
            title=_str(raw, "title"),
            description=_str(raw, "description"),
            mime_type=_str(raw, "mimeType"),
            raw=raw,
        )


class ResourceContents(Record, hidden=("raw",)):
    """One item of ``resources/read``: ``text`` or base64 ``blob``."""

    uri: str
    mime_type: str | None
    text: str | None
    blob: str | None
    raw: JSONObject

    def __init__(
        self,
        uri: str,
        mime_type: str | None = None,
        text: str | None = None,
        blob: str | None = None,
        raw: JSONObject = FRESH_DICT,
    ) -> None:
        fill(self, (uri, mime_type, text, blob, raw))

    @classmethod
    def from_json(cls, raw: JSONValue) -> ResourceContents:
        if not isinstance(raw, dict):
            return cls(uri="", raw={"value": raw})
        return cls(
            uri=_str(raw, "uri") or "",
            mime_type=_str(raw, "mimeType"),
            text=_str(raw, "text"),
            blob=_str(raw, "blob"),
            raw=raw,
        )


class PromptArgument(Record):
    name: str
    description: str | None
    required: bool

    def __init__(self, name: str, description: str | None = None, required: bool = False) -> None:
        fill(self, (name, description, required))


class Prompt(Record, hidden=("raw",)):
    name: str
    arguments: list[PromptArgument]
    title: str | None
    description: str | None
    raw: JSONObject

    def __init__(
        self,
        name: str,
        arguments: list[PromptArgument],
        title: str | None = None,
        description: str | None = None,
        raw: JSONObject = FRESH_DICT,
    ) -> None:
        fill(self, (name, arguments, title, description, raw))

    @classmethod
    def from_json(cls, raw: JSONObject) -> Prompt:
        args = raw.get("arguments")
        parsed = [
            PromptArgument(_str(a, "name") or "", _str(a, "description"), a.get("required") is True)
            for a in (args if isinstance(args, list) else [])
            if isinstance(a, dict)
        ]
        return cls(
            name=_str(raw, "name") or "",
            arguments=parsed,
            title=_str(raw, "title"),
            description=_str(raw, "description"),
            raw=raw,
        )


class GetPromptResult(Record, hidden=("raw",)):
    messages: list[JSONObject]
    description: str | None
    raw: JSONObject

    def __init__(
        self,
        messages: list[JSONObject],
        description: str | None = None,
        raw: JSONObject = FRESH_DICT,
    ) -> None:
        fill(self, (messages, description, raw))

    @classmethod
    def from_json(cls, raw: JSONObject) -> GetPromptResult:
        messages = raw.get("messages")
        return cls(
            messages=[m for m in messages if isinstance(m, dict)]
            if isinstance(messages, list)
            else [],
            description=_str(raw, "description"),
            raw=raw,
        )


class Completion(Record):
    values: list[str]
    total: int | None
    has_more: bool

    def __init__(self, values: list[str], total: int | None = None, has_more: bool = False) -> None:
        fill(self, (values, total, has_more))

    @classmethod
    def from_json(cls, raw: JSONObject) -> Completion:
        comp = _obj(raw, "completion") or {}
        values = comp.get("values")
        total = comp.get("total")
        return cls(
            values=[v for v in values if isinstance(v, str)] if isinstance(values, list) else [],
            total=total if isinstance(total, int) else None,
            has_more=comp.get("hasMore") is True,
        )


#: The statuses after which a task never changes (SEP-2663 "Task Status").
_TERMINAL = frozenset({"completed", "failed", "cancelled"})

#: Seconds between polls of a task that names no ``pollInterval``.
DEFAULT_POLL_SECONDS = 0.5


def poll_seconds(interval_ms: object) -> float:
    """How long to wait before asking about a task again, whichever side asks: its
    ``pollInterval`` (at least 1 ms), or ``DEFAULT_POLL_SECONDS`` if it names none."""
    if isinstance(interval_ms, (int, float)) and not isinstance(interval_ms, bool):
        return max(interval_ms, 1) / 1000
    return DEFAULT_POLL_SECONDS


class Task(Record, hidden=("raw",)):
    """A task, as a ``CreateTaskResult`` or ``tasks/get`` shows it (the tasks extension,
    SEP-2663, or 2025-11-25's tasks): ``status`` is working, input_required,
    completed, failed or cancelled.

    ``input_requests`` (input_required), ``result`` (completed) and ``error``
    (failed) are what the extension's ``tasks/get`` inlines for the status; a
    ``CreateTaskResult`` carries none of them, nor does anything of 2025-11-25
    (there ``tasks/result`` gives the outcome). Times are the server's ISO 8601
    strings; ``ttl_ms`` and ``poll_interval_ms`` read 2025-11-25's ``ttl`` and
    ``pollInterval`` too.
    """

    task_id: str
    status: str
    status_message: str | None
    created_at: str | None
    last_updated_at: str | None
    ttl_ms: int | None
    poll_interval_ms: int | None
    input_requests: JSONObject | None
    result: JSONObject | None
    error: JSONObject | None
    raw: JSONObject

    def __init__(
        self,
        task_id: str,
        status: str,
        status_message: str | None = None,
        created_at: str | None = None,
        last_updated_at: str | None = None,
        ttl_ms: int | None = None,
        poll_interval_ms: int | None = None,
        input_requests: JSONObject | None = None,
        result: JSONObject | None = None,
        error: JSONObject | None = None,
        raw: JSONObject = FRESH_DICT,
    ) -> None:
        fill(
            self,
            (
                task_id,
                status,
                status_message,
                created_at,
                last_updated_at,
                ttl_ms,
                poll_interval_ms,
                input_requests,
                result,
                error,
                raw,
            ),
        )

    @property
    def terminal(self) -> bool:
        """Completed, failed or cancelled: the task will not change again."""
        return self.status in _TERMINAL

    @property
    def tool_result(self) -> CallToolResult | None:
        """A completed tool task's ``CallToolResult`` (``None`` before, or for other ends)."""
        return CallToolResult.from_json(self.result) if self.result is not None else None

    @classmethod
    def from_json(cls, raw: JSONObject) -> Task:
        # 2025-11-25 names them ``ttl`` and ``pollInterval``; both are milliseconds.
        ttl = raw.get("ttlMs", raw.get("ttl"))
        poll = raw.get("pollIntervalMs", raw.get("pollInterval"))
        return cls(
            task_id=_str(raw, "taskId") or "",
            status=_str(raw, "status") or "unknown",
            status_message=_str(raw, "statusMessage"),
            created_at=_str(raw, "createdAt"),
            last_updated_at=_str(raw, "lastUpdatedAt"),
            ttl_ms=ttl if isinstance(ttl, int) and not isinstance(ttl, bool) else None,
            poll_interval_ms=poll if isinstance(poll, int) and not isinstance(poll, bool) else None,
            input_requests=_obj(raw, "inputRequests"),
            result=_obj(raw, "result"),
            error=_obj(raw, "error"),
            raw=raw,
        )


# The hot records' __init__ store their fields through these (see ``sansio._record``).
(
    _content_type,
    _content_text,
    _content_data,
    _content_mime_type,
    _content_uri,
    _content_resource,
    _content_raw,
) = setters(Content)
(
    _call_tool_result_content,
    _call_tool_result_structured,
    _call_tool_result_is_error,
    _call_tool_result_meta,
    _call_tool_result_raw,
) = setters(CallToolResult)
