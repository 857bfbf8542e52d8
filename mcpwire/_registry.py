"""Tool, resource, template and prompt definitions, and their result conversion.

A definition is made once, at registration: the input schema is derived from
the function (or taken verbatim when given), and the function's parameters are
classified (which ones get the ``Context``, how JSON arguments convert to
Python values). A schema given verbatim is compiled into a validator at once,
so a bad one fails the registration; a derived one, valid by construction, is
compiled on the tool's first call (``ToolDef.checker``), so a server that is
only listed never loads the validator. Calls then only validate, convert, call
and shape the result, so the per-call cost stays small.
"""

from __future__ import annotations

import base64
import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from . import _schema
from ._content import PromptMessage, ToolError, ToolResult, content_block
from ._context import Context
from .sansio import _codec
from .sansio._json import JSONObject, JSONValue
from .sansio._record import FRESH_DICT, Record

if TYPE_CHECKING:
    from ._uritemplate import UriTemplate

__all__ = (
    "CompletionDef",
    "is_quick",
    "PromptDef",
    "ResourceDef",
    "TemplateDef",
    "ToolDef",
    "call_handler",
    "prompt_result",
    "resource_contents",
    "tool_result",
)

Handler = Callable[..., object]


def _context_param(fn: Handler) -> str | None:
    """The name of the parameter annotated ``Context``, if any."""
    try:
        hints = inspect.get_annotations(fn, eval_str=True)
    except Exception:
        hints = getattr(fn, "__annotations__", {})
    for name, hint in hints.items():
        if hint is Context or (isinstance(hint, str) and hint.split(".")[-1] == "Context"):
            return name
    return None


def is_quick(fn: Handler, *, thread: bool = False) -> bool:
    """Whether calling ``fn`` never waits: a plain function run in the loop's thread.

    Quick handlers are served where the request is read (no task of their own,
    no disconnect watch), so a wrong yes stalls that reader while the handler
    waits. The answer comes from the function (a coroutine function waits, and
    so does a plain wrapper of one made with ``functools.wraps``) and is
    corrected by what ``call_handler`` sees: a plain function that returned an
    awaitable once is not quick from then on.
    """
    if thread:
        return False
    try:
        return _quick_cache(fn) and id(fn) not in _WAITED
    except TypeError:  # an unhashable callable object
        return _is_plain(fn)


def _is_plain(fn: Handler) -> bool:
    call = getattr(fn, "__call__", None)  # noqa: B004 - callable objects too
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call):
        return False
    try:
        inner = inspect.unwrap(fn)
    except ValueError:  # a __wrapped__ cycle: nothing to learn from it
        return True
    return inner is fn or not inspect.iscoroutinefunction(inner)


# Asked on every tools/call; the answer for a function never changes.
_quick_cache = functools.lru_cache(maxsize=4096)(_is_plain)
#: Plain functions seen returning an awaitable, by id (held, so the id stays theirs).
_WAITED: dict[int, Handler] = {}
_WAITED_MAX = 4096


#: Result types that are never awaitable.
_PLAIN = frozenset({str, int, float, bool, dict, list, tuple, type(None)})


async def call_handler(fn: Handler, kwargs: dict[str, object], *, thread: bool) -> object:
    """Call a sync or async handler; sync ones run inline unless ``thread``."""
    if thread:
        import anyio.to_thread

        def run() -> object:
            return fn(**kwargs)

        result = await anyio.to_thread.run_sync(run)
    else:
        result = fn(**kwargs)
    # JSON-shaped values (what sync tools return) skip the ABC check of isawaitable.
    if type(result) not in _PLAIN and inspect.isawaitable(result):
        if is_quick(fn, thread=thread):
            if len(_WAITED) >= _WAITED_MAX:
                _WAITED.clear()
            _WAITED[id(fn)] = fn
        result = await result
    return result


class ToolDef(Record, frozen=False):
    name: str
    fn: Handler
    input_schema: JSONObject
    output_schema: JSONObject | None
    wrap_output: bool
    title: str | None
    description: str | None
    annotations: JSONObject | None
    icons: list[JSONValue] | None
    meta: JSONObject | None
    thread: bool
    context_param: str | None
    params: dict[str, _schema.ParamInfo]
    validator: _schema.Validator | None
    #: Tasks extension (SEP-2663): "forbidden" | "optional" | "required", and
    #: whether the task starts before the handler ("auto") or at ctx.start_task().
    task: str
    task_start: str

    def __init__(
        self,
        name: str,
        fn: Handler,
        input_schema: JSONObject,
        output_schema: JSONObject | None = None,
        wrap_output: bool = False,
        title: str | None = None,
        description: str | None = None,
        annotations: JSONObject | None = None,
        icons: list[JSONValue] | None = None,
        meta: JSONObject | None = None,
        thread: bool = False,
        context_param: str | None = None,
        params: dict[str, _schema.ParamInfo] = FRESH_DICT,
        validator: _schema.Validator | None = None,
        task: str = "forbidden",
        task_start: str = "auto",
    ) -> None:
        self.name = name
        self.fn = fn
        self.input_schema = input_schema
        self.output_schema = output_schema
        self.wrap_output = wrap_output
        self.title = title
        self.description = description
        self.annotations = annotations
        self.icons = icons
        self.meta = meta
        self.thread = thread
        self.context_param = context_param
        self.params = {} if params is FRESH_DICT else params
        self.validator = validator
        self.task = task
        self.task_start = task_start

    @classmethod
    def from_function(
        cls,
        fn: Handler,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: JSONObject | None = None,
        icons: list[JSONValue] | None = None,
        meta: JSONObject | None = None,
        input_schema: JSONObject | None = None,
        output_schema: JSONObject | None = None,
        structured: bool | None = None,
        thread: bool = False,
        task: str = "forbidden",
        task_start: str = "auto",
    ) -> ToolDef:
        if task not in ("forbidden", "optional", "required"):
            raise ValueError(f"task must be 'forbidden', 'optional' or 'required', not {task!r}")
        if task_start not in ("auto", "manual"):
            raise ValueError(f"task_start must be 'auto' or 'manual', not {task_start!r}")
        ctx = _context_param(fn)
        skip = (ctx,) if ctx else ()
        derived, params = _schema.function_input_schema(fn, skip=skip, skip_types=(Context,))
        schema = input_schema if input_schema is not None else derived
        wrap = False
        if output_schema is None and structured is not False:
            output_schema, wrap = _schema.return_schema(fn)
        if structured is False:
            output_schema = None
        return cls(
            name=name or fn.__name__,
            fn=fn,
            input_schema=schema,
            output_schema=output_schema,
            wrap_output=wrap,
            title=title,
            description=description if description is not None else _schema.docstring_summary(fn),
            annotations=annotations,
            icons=icons,
            meta=meta,
            thread=thread,
            context_param=ctx,
            params=params,
            validator=None if input_schema is None else _schema.compile(schema),
            task=task,
            task_start=task_start,
        )

    def checker(self) -> _schema.Validator:
        """The validator of the input schema, compiled on first use."""
        validator = self.validator
        if validator is None:
            validator = self.validator = _schema.compile(self.input_schema)
        return validator

    def to_json(self, execution: bool = False) -> JSONObject:
        """The wire ``Tool``; ``execution`` adds 2025-11-25's ``execution.taskSupport``."""
        out: JSONObject = {"name": self.name, "inputSchema": self.input_schema}
        if self.title is not None:
            out["title"] = self.title
        if self.description is not None:
            out["description"] = self.description
        if self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        if self.annotations is not None:
            out["annotations"] = self.annotations
        if self.icons is not None:
            out["icons"] = self.icons
        if self.meta is not None:
            out["_meta"] = self.meta
        if execution and self.task != "forbidden":
            out["execution"] = {"taskSupport": self.task}
        return out


def tool_result(tool: ToolDef, value: object) -> JSONObject:
    """Shape a tool's return value into a ``CallToolResult`` (without ``resultType``)."""
    if isinstance(value, ToolResult):
        out: JSONObject = {"content": [content_block(c) for c in value.content]}
        if value.structured is not None:
            out["structuredContent"] = value.structured
        if value.is_error:
            out["isError"] = True
        if value.meta is not None:
            out["_meta"] = value.meta
        return out
    if tool.output_schema is not None:
        plain = _schema.to_jsonable(value)
        structured: JSONValue = {"result": plain} if tool.wrap_output else plain
        # Structured output SHOULD also be serialised as text (tools.mdx); a bare
        # string is its own best text form.
        text = plain if isinstance(plain, str) else _codec.dumps(plain).decode("utf-8")
        return {
            "content": [{"type": "text", "text": text}],
            "structuredContent": structured,
            "isError": False,
        }
    return {"content": _content_list(value), "isError": False}


def _content_list(value: object) -> list[JSONValue]:
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return [_one_block(v) for v in value]
    return [_one_block(value)]


def _one_block(value: object) -> JSONObject:
    try:
        return content_block(value)
    except TypeError:
        pass
    try:
        text = _codec.dumps(_schema.to_jsonable(value)).decode("utf-8")
    except (TypeError, ValueError):
        text = str(value)  # no JSON form (a datetime, a UUID): its own text
    return {"type": "text", "text": text}


def error_result(message: str) -> JSONObject:
    return {"content": [{"type": "text", "text": message}], "isError": True}


def tool_exception_result(exc: BaseException) -> JSONObject:
    if isinstance(exc, ToolError):
        return error_result(str(exc))
    return error_result(f"Error executing tool: {type(exc).__name__}: {exc}")


class _Listed(Record, frozen=False):
    """What resources and resource templates share: how they are described."""

    name: str
    fn: Handler
    title: str | None
    description: str | None
    mime_type: str | None
    annotations: JSONObject | None
    icons: list[JSONValue] | None
    meta: JSONObject | None
    context_param: str | None

    def __init__(
        self,
        *,
        name: str,
        fn: Handler,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        annotations: JSONObject | None = None,
        icons: list[JSONValue] | None = None,
        meta: JSONObject | None = None,
        context_param: str | None = None,
    ) -> None:
        self.name = name
        self.fn = fn
        self.title = title
        self.description = description
        self.mime_type = mime_type
        self.annotations = annotations
        self.icons = icons
        self.meta = meta
        self.context_param = context_param

    def _describe(self, out: JSONObject) -> JSONObject:
        for key, value in (
            ("title", self.title),
            ("description", self.description),
            ("mimeType", self.mime_type),
            ("annotations", self.annotations),
            ("icons", self.icons),
            ("_meta", self.meta),
        ):
            if value is not None:
                out[key] = value
        return out


class ResourceDef(_Listed, frozen=False):
    uri: str
    size: int | None

    def __init__(self, *, uri: str, size: int | None = None, **listed: Any) -> None:
        super().__init__(**listed)
        self.uri = uri
        self.size = size

    def to_json(self) -> JSONObject:
        out = self._describe({"uri": self.uri, "name": self.name})
        if self.size is not None:
            out["size"] = self.size
        return out


class TemplateDef(_Listed, frozen=False):
    template: UriTemplate

    def __init__(self, *, template: UriTemplate, **listed: Any) -> None:
        super().__init__(**listed)
        self.template = template

    def to_json(self) -> JSONObject:
        return self._describe({"uriTemplate": self.template.template, "name": self.name})


def resource_contents(uri: str, mime_type: str | None, value: object) -> list[JSONValue]:
    """Shape a resource handler's return value into ``contents``.

    ``str`` -> text, ``bytes`` -> base64 blob, a dict with ``text``/``blob``
    -> passed through (``uri`` filled in), a list -> one entry each.
    """
    items = value if isinstance(value, list) else [value]
    out: list[JSONValue] = []
    for item in items:
        entry: JSONObject
        if isinstance(item, str):
            entry = {"uri": uri, "text": item}
        elif isinstance(item, (bytes, bytearray, memoryview)):
            entry = {"uri": uri, "blob": base64.b64encode(bytes(item)).decode("ascii")}
        elif isinstance(item, dict) and ("text" in item or "blob" in item):
            entry = dict(item)
            entry.setdefault("uri", uri)
        else:
            entry = {"uri": uri, "text": _codec.dumps(_schema.to_jsonable(item)).decode("utf-8")}
            entry.setdefault("mimeType", "application/json")
        if mime_type is not None:
            entry.setdefault("mimeType", mime_type)
        out.append(entry)
    return out


class PromptDef(Record, frozen=False):
    name: str
    fn: Handler
    arguments: list[JSONObject]
    title: str | None
    description: str | None
    icons: list[JSONValue] | None
    meta: JSONObject | None
    context_param: str | None

    def __init__(
        self,
        name: str,
        fn: Handler,
        arguments: list[JSONObject],
        title: str | None = None,
        description: str | None = None,
        icons: list[JSONValue] | None = None,
        meta: JSONObject | None = None,
        context_param: str | None = None,
    ) -> None:
        self.name = name
        self.fn = fn
        self.arguments = arguments
        self.title = title
        self.description = description
        self.icons = icons
        self.meta = meta
        self.context_param = context_param

    @classmethod
    def from_function(
        cls,
        fn: Handler,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: list[JSONValue] | None = None,
        meta: JSONObject | None = None,
    ) -> PromptDef:
        ctx = _context_param(fn)
        schema, _ = _schema.function_input_schema(
            fn, skip=(ctx,) if ctx else (), skip_types=(Context,)
        )
        props = schema.get("properties")
        required = schema.get("required")
        required_names = set(required) if isinstance(required, list) else set()
        arguments: list[JSONObject] = []
        if isinstance(props, dict):
            for arg_name, arg_schema in props.items():
                arg: JSONObject = {"name": arg_name, "required": arg_name in required_names}
                if isinstance(arg_schema, dict) and isinstance(arg_schema.get("description"), str):
                    arg["description"] = arg_schema["description"]
                arguments.append(arg)
        return cls(
            name=name or fn.__name__,
            fn=fn,
            arguments=arguments,
            title=title,
            description=description if description is not None else _schema.docstring_summary(fn),
            icons=icons,
            meta=meta,
            context_param=ctx,
        )

    def to_json(self) -> JSONObject:
        out: JSONObject = {"name": self.name}
        if self.title is not None:
            out["title"] = self.title
        if self.description is not None:
            out["description"] = self.description
        if self.arguments:
            out["arguments"] = list(self.arguments)
        if self.icons is not None:
            out["icons"] = self.icons
        if self.meta is not None:
            out["_meta"] = self.meta
        return out


def prompt_result(prompt: PromptDef, value: object) -> JSONObject:
    """Shape a prompt handler's return value into a ``GetPromptResult``."""
    if isinstance(value, dict) and "messages" in value:
        return value
    items = value if isinstance(value, (list, tuple)) else [value]
    messages: list[JSONValue] = []
    for item in items:
        if isinstance(item, PromptMessage):
            messages.append(item.to_json())
        elif isinstance(item, dict) and "role" in item:
            messages.append(item)
        else:
            messages.append({"role": "user", "content": content_block(item)})
    out: JSONObject = {"messages": messages}
    if prompt.description is not None:
        out["description"] = prompt.description
    return out


class CompletionDef(Record, frozen=False):
    """Completes one argument of a prompt or a resource template."""

    fn: Callable[..., Awaitable[object] | object]
    ref_type: str  # "ref/prompt" | "ref/resource"
    ref: str  # prompt name or template string
    argument: str | None  # None: every argument

    def __init__(
        self,
        fn: Callable[..., Awaitable[object] | object],
        ref_type: str,
        ref: str,
        argument: str | None,
    ) -> None:
        self.fn = fn
        self.ref_type = ref_type
        self.ref = ref
        self.argument = argument
