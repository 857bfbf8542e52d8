"""The server's method handlers and per-era request checks.

``dispatch`` decides the era of one request, applies that era's checks (the
legacy handshake gate, or the modern ``_meta`` envelope), finds the handler in
the era's method table, and decorates the result. Handlers are plain async
functions of a ``Call``; they never look at the era except where the
revisions disagree (error codes for unknown resources, multi-round asks).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import anyio

from . import _tasks
from ._compat import shape_legacy_result, shape_server_info
from ._context import (
    CapabilityMissing,
    ClientAnswerError,
    Context,
    InputRequired,
    with_input_rounds,
)
from ._errors import JSONRPCError
from ._params import check_client_capabilities, check_envelope, check_params, invalid_params
from ._registry import (
    ToolDef,
    call_handler,
    error_result,
    prompt_result,
    resource_contents,
    tool_exception_result,
    tool_result,
)
from ._schema import convert_arguments
from ._session import RequestContext
from ._subscriptions import listen, subscribe
from ._versions import (
    LATEST_LEGACY_VERSION,
    LEGACY_VERSIONS,
    LOG_LEVELS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
    META_SERVER_INFO,
    META_SUBSCRIPTION_ID,
    MODERN_VERSIONS,
)
from .sansio._json import JSONObject, JSONValue
from .sansio._messages import ErrorCode, Request
from .sansio._record import Record
from .sansio._state import LifecycleInput

if TYPE_CHECKING:
    from ._server import Connection, Server

__all__ = ("META_SUBSCRIPTION_ID", "Call", "dispatch", "invalid_params")

#: Methods that exist only in the modern era: a request for one is modern
#: even without an envelope (and then fails the envelope check, as it should).
_MODERN_ONLY = frozenset({"server/discover", "subscriptions/listen"})
#: Results the modern era caches (caching.mdx).
_CACHEABLE = frozenset(
    {
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "resources/read",
    }
)
#: Methods whose modern results may be InputRequiredResult (mrtr.mdx).
_MRTR = frozenset({"tools/call", "prompts/get", "resources/read"})
_ABSENT = object()


def _not_found(method: str) -> JSONRPCError:
    return JSONRPCError(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}")


class Call(Record, frozen=False):
    """One request being served, with everything a handler needs."""

    server: Server
    conn: Connection
    request: Request
    rctx: RequestContext
    params: JSONObject
    era: str
    version: str
    client_capabilities: JSONObject
    client_info: JSONObject | None
    log_level: str | None
    answers: dict[str, JSONValue] | None

    def __init__(
        self,
        server: Server,
        conn: Connection,
        request: Request,
        rctx: RequestContext,
        params: JSONObject,
        era: str,
        version: str,
        client_capabilities: JSONObject,
        client_info: JSONObject | None,
        log_level: str | None,
        answers: dict[str, JSONValue] | None = None,
    ) -> None:
        self.server, self.conn, self.request, self.rctx = server, conn, request, rctx
        self.params, self.era, self.version = params, era, version
        self.client_capabilities, self.client_info = client_capabilities, client_info
        self.log_level, self.answers = log_level, answers

    def context(self) -> Context:
        return Context(
            self.server,
            self.conn,
            self.rctx,
            era=self.era,
            protocol_version=self.version,
            client_capabilities=self.client_capabilities,
            client_info=self.client_info,
            log_level=self.log_level,
            answers=self.answers,
        )


Method = Callable[[Call], Awaitable[JSONObject]]


async def dispatch(
    server: Server, conn: Connection, request: Request, rctx: RequestContext
) -> JSONObject:
    params = request.params if request.params is not None else {}
    method = request.method
    meta = check_params(method, params)  # shapes every revision fixes: -32602
    # An initialize that carries the modern envelope is a modern request for a
    # method the modern era does not have (-32601), not a handshake.
    modern = method in _MODERN_ONLY or (
        isinstance(meta, dict)
        and (META_PROTOCOL_VERSION in meta or META_CLIENT_CAPABILITIES in meta)
    )
    if modern:
        return await _dispatch_modern(server, conn, request, rctx, params, meta)
    return await _dispatch_legacy(server, conn, request, rctx, params)


# -- legacy -----------------------------------------------------------------------------


async def _dispatch_legacy(
    server: Server, conn: Connection, request: Request, rctx: RequestContext, params: JSONObject
) -> JSONObject:
    method = request.method
    if method == "initialize":
        return await _initialize(server, conn, params)
    handler = _find(LEGACY_METHODS, server, method)  # unknown: -32601 at any stage
    lifecycle = conn.lifecycle
    if not lifecycle.allows(method):
        raise JSONRPCError(ErrorCode.INVALID_REQUEST, lifecycle.refusal(method))
    call = Call(
        server,
        conn,
        request,
        rctx,
        params,
        "legacy",
        conn.version or LATEST_LEGACY_VERSION,
        conn.client_capabilities,
        conn.client_info,
        conn.log_level,
    )
    result = await handler(call)
    return shape_legacy_result(method, call.version, result)


async def _initialize(server: Server, conn: Connection, params: JSONObject) -> JSONObject:
    if not conn.lifecycle.allows("initialize"):
        raise JSONRPCError(ErrorCode.INVALID_REQUEST, conn.lifecycle.refusal("initialize"))
    requested = params.get("protocolVersion")
    # Objects or left out (check_params); left out, they are taken as empty / unknown.
    given, info = params.get("capabilities"), params.get("clientInfo")
    if not isinstance(requested, str):
        raise invalid_params("initialize: protocolVersion must be a string")
    conn.lifecycle.on(LifecycleInput.INITIALIZE_REQUEST)
    # Echo a version we support, else offer our latest legacy one (lifecycle.mdx).
    version = requested if requested in LEGACY_VERSIONS else LATEST_LEGACY_VERSION
    conn.version = version
    conn.client_capabilities = given if isinstance(given, dict) else {}
    conn.client_info = info if isinstance(info, dict) else None
    assert conn.session is not None
    conn.session.allow_batches = version == "2025-03-26"
    caps = server.capabilities()
    if _tasks.legacy_tasks(server, version):
        caps["tasks"] = _tasks.legacy_capability()
    result: JSONObject = {
        "protocolVersion": version,
        "capabilities": caps,
        "serverInfo": shape_server_info(server.server_info(), version),
    }
    if server.instructions is not None:
        result["instructions"] = server.instructions
    conn.lifecycle.on(LifecycleInput.INITIALIZE_RESULT)
    return result


# -- modern -------------------------------------------------------------------------------


async def _dispatch_modern(
    server: Server,
    conn: Connection,
    request: Request,
    rctx: RequestContext,
    params: JSONObject,
    meta: JSONValue,
) -> JSONObject:
    method = request.method
    if not isinstance(meta, dict):
        meta = check_envelope(params)  # raises: left out (check_params refused the rest)
    version = meta.get(META_PROTOCOL_VERSION, _ABSENT)
    caps = meta.get(META_CLIENT_CAPABILITIES, _ABSENT)
    if version is _ABSENT or caps is _ABSENT:
        check_envelope(params)  # raises, naming the missing key(s)
    if not isinstance(version, str):
        raise invalid_params(f"{META_PROTOCOL_VERSION} must be a string")
    if not isinstance(caps, dict):
        raise invalid_params(f"{META_CLIENT_CAPABILITIES} must be an object")
    if caps:  # the members the schema types (an empty object, the usual, has none)
        check_client_capabilities(caps, META_CLIENT_CAPABILITIES)
    if version not in MODERN_VERSIONS:
        raise JSONRPCError(
            ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            {"supported": server.supported_versions, "requested": version},
        )
    info = meta.get(META_CLIENT_INFO)
    level = meta.get(META_LOG_LEVEL)
    if level is not None and level not in LOG_LEVELS:
        raise invalid_params(f"{META_LOG_LEVEL} must be one of {', '.join(LOG_LEVELS)}")
    handler = _find(MODERN_METHODS, server, method)
    info = info if isinstance(info, dict) else None
    level = level if isinstance(level, str) else None
    call = Call(server, conn, request, rctx, params, "modern", version, caps, info, level)
    if method in _MRTR:
        result = await with_input_rounds(call, handler)
    else:
        result = await handler(call)
    result.setdefault("resultType", "complete")
    result_meta = result.get("_meta")
    new_meta: JSONObject = dict(result_meta) if isinstance(result_meta, dict) else {}
    new_meta[META_SERVER_INFO] = server.server_info()
    result["_meta"] = new_meta
    if method in _CACHEABLE and result["resultType"] == "complete":
        result.setdefault("ttlMs", server.cache_ttl_ms)
        result.setdefault("cacheScope", server.cache_scope)
    return result


def _missing_capability(exc: CapabilityMissing) -> JSONRPCError:
    return JSONRPCError(
        ErrorCode.MISSING_REQUIRED_CLIENT_CAPABILITY,
        str(exc),
        {"requiredCapabilities": exc.capability},
    )


# -- capability gating ------------------------------------------------------------------------


def _find(table: dict[str, Method], server: Server, method: str) -> Method:
    """The era's handler for ``method``; -32601 when unknown or not advertised."""
    handler = table.get(method)
    if handler is None or not server.offers(method.split("/", 1)[0]):
        raise _not_found(method)
    return handler


# -- shared handlers ----------------------------------------------------------------------------


async def _ping(call: Call) -> JSONObject:
    return {}


async def _discover(call: Call) -> JSONObject:
    server = call.server
    caps = server.capabilities()
    if server.offers_tasks:  # extensions are modern-era capabilities (SEP-2663)
        caps["extensions"] = {_tasks.TASKS_EXTENSION: {}}
    result: JSONObject = {"supportedVersions": server.supported_versions, "capabilities": caps}
    if server.instructions is not None:
        result["instructions"] = server.instructions
    return result


def _list(call: Call, kind: str, key: str, items: list[JSONValue]) -> JSONObject:
    page, next_cursor = call.server.page(kind, items, call.params.get("cursor"))
    result: JSONObject = {key: page}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return result


async def _tools_list(call: Call) -> JSONObject:
    execution = call.era == "legacy"  # tool-level task negotiation is 2025-11-25's alone
    items: list[JSONValue] = [t.to_json(execution) for t in call.server.tools.values()]
    return _list(call, "tools", "tools", items)


async def _resources_list(call: Call) -> JSONObject:
    items: list[JSONValue] = [r.to_json() for r in call.server.resources.values()]
    return _list(call, "resources", "resources", items)


async def _templates_list(call: Call) -> JSONObject:
    items: list[JSONValue] = [t.to_json() for t in call.server.templates]
    return _list(call, "templates", "resourceTemplates", items)


async def _prompts_list(call: Call) -> JSONObject:
    return _list(call, "prompts", "prompts", [p.to_json() for p in call.server.prompts.values()])


async def _tools_call(call: Call) -> JSONObject:
    name = call.params.get("name")
    if not isinstance(name, str):
        raise invalid_params("tools/call: name must be a string")
    tool = call.server.tools.get(name)
    if tool is None:
        # An unknown tool is a protocol error in both eras (tools.mdx, SEP-1303).
        raise invalid_params(f"Unknown tool: {name}")
    args = call.params.get("arguments")
    if not isinstance(args, dict):  # left out (check_params refused any other value)
        args = {}
    problems = (tool.validator or tool.checker()).validate(args)
    tasked = call.era == "legacy" and (tool.task != "forbidden" or "task" in call.params)
    if tasked and _tasks.legacy_tasks(call.server, call.version):  # 2025-11-25 tasks

        async def checked(ctx: Context) -> JSONObject:
            if problems:
                return _invalid_arguments(name, problems)
            return await _invoke_tool(call, tool, args, ctx)

        return await _tasks.legacy_call(call, name, tool.task, checked)
    if problems:
        return _invalid_arguments(name, problems)

    if tool.task != "forbidden" and call.era == "modern":
        from ._task_runs import call_tool

        async def invoke(ctx: Context) -> JSONObject:
            return await _invoke_tool(call, tool, args, ctx)

        return await call_tool(call, tool.task, tool.task_start == "manual", invoke)
    # A tool that takes no Context gets none built for it: the common case pays nothing.
    return await _invoke_tool(call, tool, args, call.context() if tool.context_param else None)


def _invalid_arguments(name: str, problems: list[str]) -> JSONObject:
    # Input validation failures are tool execution errors the model can fix.
    return error_result(f"Invalid arguments for tool {name}: " + "; ".join(problems))


async def _invoke_tool(
    call: Call, tool: ToolDef, args: JSONObject, ctx: Context | None
) -> JSONObject:
    try:
        kwargs = convert_arguments(tool.params, args)
        if tool.context_param is not None:
            kwargs[tool.context_param] = ctx
        value = await call_handler(tool.fn, kwargs, thread=tool.thread)
        # Shaping the value may fail too (a type with no JSON form): still the tool's error.
        return tool_result(tool, value)
    except ClientAnswerError as exc:  # an execution problem, not our error for the call
        return error_result(f"Error executing tool: {exc}")
    except (InputRequired, JSONRPCError):
        raise
    except CapabilityMissing as exc:
        if call.era == "modern":
            raise _missing_capability(exc) from None
        return error_result(str(exc))
    except anyio.get_cancelled_exc_class():
        raise
    except Exception as exc:
        return tool_exception_result(exc)


async def _resources_read(call: Call) -> JSONObject:
    uri = call.params.get("uri")
    if not isinstance(uri, str):
        raise invalid_params("resources/read: uri must be a string")
    server = call.server
    static = server.resources.get(uri)
    if static is not None:
        kwargs: dict[str, object] = {}
        if static.context_param:
            kwargs[static.context_param] = call.context()
        value = await _run_reader(call, static.fn, kwargs)
        return {"contents": resource_contents(uri, static.mime_type, value)}
    for template in server.templates:
        try:
            variables = template.template.match(uri)
        except ValueError as exc:  # UriEscapeError: the template's shape, but no value
            raise invalid_params(f"resources/read: {exc}", {"uri": uri}) from None
        if variables is None:
            continue
        kwargs = dict(variables)
        if template.context_param:
            kwargs[template.context_param] = call.context()
        value = await _run_reader(call, template.fn, kwargs)
        return {"contents": resource_contents(uri, template.mime_type, value)}
    if call.era == "modern":
        raise invalid_params("Resource not found", {"uri": uri})
    raise JSONRPCError(ErrorCode.RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri})


async def _run_reader(call: Call, fn: Callable[..., object], kwargs: dict[str, object]) -> object:
    """Run a resource or prompt handler (these have no ``isError`` form)."""
    try:
        return await call_handler(fn, kwargs, thread=False)
    except CapabilityMissing as exc:
        if call.era == "modern":
            raise _missing_capability(exc) from None
        raise JSONRPCError(ErrorCode.INTERNAL_ERROR, str(exc)) from None
    except ClientAnswerError as exc:  # the client's error for our ask: we failed
        raise JSONRPCError(ErrorCode.INTERNAL_ERROR, f"Internal error: {exc}") from None


async def _set_level(call: Call) -> JSONObject:
    level = call.params.get("level")
    if level not in LOG_LEVELS:
        raise invalid_params(f"level must be one of {', '.join(LOG_LEVELS)}")
    call.conn.log_level = level
    return {}


async def _prompts_get(call: Call) -> JSONObject:
    name = call.params.get("name")
    if not isinstance(name, str):
        raise invalid_params("prompts/get: name must be a string")
    prompt = call.server.prompts.get(name)
    if prompt is None:
        raise invalid_params(f"Unknown prompt: {name}")
    args = call.params.get("arguments")
    if not isinstance(args, dict):  # left out (check_params refused any other value)
        args = {}
    wrong = next((k for k, v in args.items() if not isinstance(v, str)), None)
    if wrong is not None:  # every revision's schema: arguments are {[key: string]: string}
        raise invalid_params(f"prompts/get: argument {wrong!r} must be a string")
    missing = [a["name"] for a in prompt.arguments if a.get("required") and a["name"] not in args]
    if missing:
        raise invalid_params("Missing required argument(s): " + ", ".join(map(str, missing)))
    known = {a["name"] for a in prompt.arguments}
    kwargs: dict[str, object] = {k: v for k, v in args.items() if k in known}
    if prompt.context_param:
        kwargs[prompt.context_param] = call.context()
    return prompt_result(prompt, await _run_reader(call, prompt.fn, kwargs))


async def _complete(call: Call) -> JSONObject:
    from ._completion import complete

    return await complete(call)


LEGACY_METHODS: dict[str, Method] = {
    "ping": _ping,
    "tools/list": _tools_list,
    "tools/call": _tools_call,
    "resources/list": _resources_list,
    "resources/templates/list": _templates_list,
    "resources/read": _resources_read,
    "resources/subscribe": subscribe,
    "resources/unsubscribe": subscribe,
    "prompts/list": _prompts_list,
    "prompts/get": _prompts_get,
    "completion/complete": _complete,
    "logging/setLevel": _set_level,
    "tasks/get": _tasks.legacy_get,
    "tasks/result": _tasks.legacy_result,
    "tasks/list": _tasks.legacy_list,
    "tasks/cancel": _tasks.legacy_cancel,
}

MODERN_METHODS: dict[str, Method] = {
    "server/discover": _discover,
    "tools/list": _tools_list,
    "tools/call": _tools_call,
    "resources/list": _resources_list,
    "resources/templates/list": _templates_list,
    "resources/read": _resources_read,
    "prompts/list": _prompts_list,
    "prompts/get": _prompts_get,
    "completion/complete": _complete,
    "subscriptions/listen": listen,
    "tasks/get": _tasks.tasks_get,
    "tasks/update": _tasks.tasks_update,
    "tasks/cancel": _tasks.tasks_cancel,
}
