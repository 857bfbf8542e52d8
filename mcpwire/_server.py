"""``Server``: MCP features on top of the session layer, for both eras.

Theory of operation
-------------------
A ``Server`` is a registry (tools, resources, templates, prompts,
completions) plus a dispatcher. ``serve(transport)`` runs one connection; any
number may run at once, each with its own ``Connection`` (legacy handshake
state, client facts, subscriptions).

Each request picks its era by its own shape (design.md, "Both protocol eras"):
a request whose ``params._meta`` carries the modern envelope, or a method that
only exists in the modern era, is served statelessly under 2026-07-28; every
other request is legacy and must follow the connection's ``initialize``
handshake (``sansio.Lifecycle``). The same handlers serve both; the era only
changes the envelope checks, the error codes where the revisions differ, how a
handler asks the client for input (a request, or an ``InputRequiredResult``),
and how results are decorated (``resultType``, caching hints, ``serverInfo``).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

import anyio
import anyio.abc

from . import _methods, _notify
from ._context import StateSealer
from ._cursor import decode_cursor, encode_cursor
from ._registry import CompletionDef, PromptDef, ResourceDef, TemplateDef, ToolDef, is_quick
from ._session import RequestContext, Session
from ._tasks import TaskStore
from ._versions import ALL_VERSIONS, LOG_LEVELS
from .sansio._json import JSONObject, JSONValue
from .sansio._messages import Notification, Request, RequestId
from .sansio._record import FRESH_DICT, FRESH_SET, Record
from .sansio._state import Lifecycle, LifecycleInput, LifecycleState

if TYPE_CHECKING:
    from collections.abc import Sequence

    from anyio.abc import TaskStatus

    from ._http_events import EventStore
    from ._registry import Handler
    from ._task_runs import Task
    from ._transport import Transport
    from ._uritemplate import UriTemplate

__all__ = ("Connection", "Server")

F = TypeVar("F", bound=Callable[..., object])

#: Methods whose handlers never wait (served inline, see ``Session.serve_inline``).
_NEVER_WAIT = frozenset(
    {
        "initialize",
        "ping",
        "server/discover",
        "tools/list",
        "resources/list",
        "resources/templates/list",
        "prompts/list",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
    }
)
#: Default page size for every list method.
DEFAULT_PAGE_SIZE = 100


class Listener(Record, frozen=False, hidden=("acknowledged",)):
    """One modern ``subscriptions/listen`` stream. ``acknowledged`` is set once
    its acknowledgement is out (or could not be sent): what is published for it
    before then waits, as the acknowledgement MUST come first."""

    id: RequestId
    tools: bool
    prompts: bool
    resources: bool
    uris: frozenset[str]
    task_ids: frozenset[str]
    acknowledged: anyio.Event | None

    def __init__(
        self,
        id: RequestId,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        uris: frozenset[str] = frozenset(),
        task_ids: frozenset[str] = frozenset(),
        acknowledged: anyio.Event | None = None,
    ) -> None:
        self.id = id
        self.tools = tools
        self.prompts = prompts
        self.resources = resources
        self.uris = uris
        self.task_ids = task_ids
        self.acknowledged = acknowledged


class Connection(Record, frozen=False, eq=False):
    """Per-connection server state."""

    server: Server
    session: Session | None
    lifecycle: Lifecycle
    version: str | None
    client_capabilities: JSONObject
    client_info: JSONObject | None
    log_level: str | None
    subscriptions: set[str]
    listeners: dict[RequestId, Listener]
    stop_listening: anyio.Event | None
    #: Where this connection's task handlers run when the server hosts none.
    task_host: anyio.abc.TaskGroup | None

    def __init__(
        self,
        server: Server,
        session: Session | None = None,
        lifecycle: Lifecycle | None = None,
        version: str | None = None,
        client_capabilities: JSONObject = FRESH_DICT,
        client_info: JSONObject | None = None,
        log_level: str | None = None,
        subscriptions: set[str] = FRESH_SET,
        listeners: dict[RequestId, Listener] = FRESH_DICT,
        stop_listening: anyio.Event | None = None,
        task_host: anyio.abc.TaskGroup | None = None,
    ) -> None:
        self.server = server
        self.session = session
        self.lifecycle = Lifecycle() if lifecycle is None else lifecycle
        self.version = version
        self.client_capabilities = {} if client_capabilities is FRESH_DICT else client_capabilities
        self.client_info = client_info
        self.log_level = log_level
        self.subscriptions = set() if subscriptions is FRESH_SET else subscriptions
        self.listeners = {} if listeners is FRESH_DICT else listeners
        self.stop_listening = stop_listening
        self.task_host = task_host

    async def server_stopping(self, rid: RequestId) -> None:
        """Wait until the server ends its subscription streams (``close_subscriptions``)."""
        if self.stop_listening is None:
            self.stop_listening = anyio.Event()
        await self.stop_listening.wait()

    @property
    def initialized(self) -> bool:
        return self.lifecycle.state in (LifecycleState.AWAITING_INITIALIZED, LifecycleState.READY)

    def log_admits(self, level: str) -> bool:
        if self.log_level is None:
            return True
        return LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.log_level)


class Server:
    """An MCP server: register features, then ``run()`` or ``serve(transport)``.

    Args:
        name: the server's name in ``serverInfo``.
        version: its version string.
        title, description, website_url, icons: more ``serverInfo`` fields.
        instructions: text for the client's model about how to use the server.
        page_size: items per page of every list result.
        cache_ttl_ms, cache_scope: modern-era caching hints for cacheable results.
        state_secret: key that seals multi-round ``requestState`` (share it
            across processes that serve one deployment).
        tasks: where tasks-extension tasks are kept (default: an in-memory
            ``TaskStore()``); see ``add_tool``'s ``task`` option.
    """

    #: Methods whose handler never waits (served where the request is read, on
    #: asyncio's stdio: ``_eager``); narrowed where a handler waits.
    _never_wait: ClassVar[frozenset[str]] = _NEVER_WAIT
    #: Whether quick tools, prompts and resources are served there too.
    _inline_calls: ClassVar[bool] = True

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """A subclass's own ``_on_request`` may wait for any request, and enter a cancel
        scope, which needs a task: its requests are all served in tasks, but for what
        it declares its hook never waits in: the methods of its own ``_never_wait``,
        and quick calls if it sets ``_inline_calls = True`` itself."""
        super().__init_subclass__(**kwargs)
        if "_on_request" in vars(cls):
            if "_never_wait" not in vars(cls):
                cls._never_wait = frozenset()
            if "_inline_calls" not in vars(cls):
                cls._inline_calls = False

    def __init__(
        self,
        name: str,
        version: str = "0.1.0",
        *,
        title: str | None = None,
        description: str | None = None,
        website_url: str | None = None,
        icons: list[JSONValue] | None = None,
        instructions: str | None = None,
        page_size: int = DEFAULT_PAGE_SIZE,
        cache_ttl_ms: int = 0,
        cache_scope: Literal["public", "private"] = "private",
        state_secret: bytes | None = None,
        tasks: TaskStore | None = None,
    ) -> None:
        self.name = name
        self.version = version
        self.title = title
        self.description = description
        self.website_url = website_url
        self.icons = icons
        self.instructions = instructions
        self.page_size = page_size
        self.cache_ttl_ms = cache_ttl_ms
        self.cache_scope = cache_scope
        self.sealer = StateSealer(state_secret)
        self.tasks = tasks if tasks is not None else TaskStore()
        self.tasks.on_change = self.notify_task
        self.tools: dict[str, ToolDef] = {}
        self.resources: dict[str, ResourceDef] = {}
        self.templates: list[TemplateDef] = []
        self.prompts: dict[str, PromptDef] = {}
        self.completions: list[CompletionDef] = []
        self.connections: set[Connection] = set()
        #: Called with the connection when a legacy client says its roots changed.
        self.on_roots_changed: Callable[[Connection], Awaitable[None]] | None = None

    # -- identity ----------------------------------------------------------------

    def server_info(self) -> JSONObject:
        info: JSONObject = {"name": self.name, "version": self.version}
        if self.title is not None:
            info["title"] = self.title
        if self.description is not None:
            info["description"] = self.description
        if self.website_url is not None:
            info["websiteUrl"] = self.website_url
        if self.icons is not None:
            info["icons"] = self.icons
        return info

    def capabilities(self) -> JSONObject:
        """What ``initialize`` and ``server/discover`` advertise: the features ``offers``."""
        caps: JSONObject = {"logging": {}}
        if self.offers("tools"):
            caps["tools"] = {"listChanged": True}
        if self.offers("resources"):
            caps["resources"] = {"subscribe": True, "listChanged": True}
        if self.offers("prompts"):
            caps["prompts"] = {"listChanged": True}
        if self.offers("completion"):
            caps["completions"] = {}
        return caps

    def offers(self, feature: str) -> bool:
        """Whether the methods of ``feature`` (a method's prefix: ``"tools"``,
        ``"resources"``, ...) are served; the rest are -32601. ``capabilities``
        advertises what this offers, so a subclass overrides this alone."""
        if feature == "tools":
            return bool(self.tools)
        if feature == "resources":
            return bool(self.resources or self.templates)
        if feature == "prompts":
            return bool(self.prompts)
        if feature == "completion":
            return bool(self.completions or self.prompts or self.templates)
        if feature == "tasks":
            return self.offers_tasks
        return True

    @property
    def offers_tasks(self) -> bool:
        """Whether any tool may run as a task (the tasks extension is advertised)."""
        return any(tool.task != "forbidden" for tool in self.tools.values())

    @property
    def supported_versions(self) -> list[JSONValue]:
        """Every protocol version served, newest first (both eras)."""
        newest_first: list[JSONValue] = [*reversed(ALL_VERSIONS)]
        return newest_first

    # -- registration --------------------------------------------------------------

    def tool(self, name: str | None = None, **options: Any) -> Callable[[F], F]:
        """Decorator form of ``add_tool``."""

        def register(fn: F) -> F:
            self.add_tool(fn, name=name, **options)
            return fn

        return register

    def add_tool(self, fn: Handler, *, name: str | None = None, **options: Any) -> ToolDef:
        """Register ``fn`` as a tool.

        Options: ``title``, ``description`` (default: the docstring summary),
        ``annotations``, ``icons``, ``meta``, ``input_schema`` (served verbatim
        instead of the derived one), ``output_schema``, ``structured`` (False
        disables structured output), ``thread`` (run a sync function in a
        worker thread), ``task`` (tasks extension, modern era: ``"forbidden"``,
        the default, always answers in place; ``"optional"`` runs as a task
        when the request declares the extension; ``"required"`` also refuses
        requests that do not, with -32021) and ``task_start`` (``"auto"``: the
        task starts before the handler; ``"manual"``: at ``ctx.start_task()``,
        after any multi-round-trip asks).
        """
        tool = ToolDef.from_function(fn, name=name, **options)
        self.tools[tool.name] = tool
        return tool

    def remove_tool(self, name: str) -> None:
        del self.tools[name]

    def resource(self, uri: str, **options: Any) -> Callable[[F], F]:
        """Decorator form of ``add_resource``; a URI with ``{...}`` makes a template."""

        def register(fn: F) -> F:
            self.add_resource(fn, uri, **options)
            return fn

        return register

    def add_resource(
        self,
        fn: Handler,
        uri: str,
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        mime_type: str | None = None,
        size: int | None = None,
        annotations: JSONObject | None = None,
        icons: list[JSONValue] | None = None,
        meta: JSONObject | None = None,
    ) -> ResourceDef | TemplateDef:
        from ._registry import _context_param
        from ._schema import docstring_summary

        desc = description if description is not None else docstring_summary(fn)
        ctx = _context_param(fn)
        common: dict[str, Any] = {
            "name": name or fn.__name__,
            "fn": fn,
            "title": title,
            "description": desc,
            "mime_type": mime_type,
            "annotations": annotations,
            "icons": icons,
            "meta": meta,
            "context_param": ctx,
        }
        if "{" in uri:
            tdef = TemplateDef(template=_template(uri), **common)
            self.templates.append(tdef)
            return tdef
        rdef = ResourceDef(uri=uri, size=size, **common)
        self.resources[uri] = rdef
        return rdef

    def prompt(self, name: str | None = None, **options: Any) -> Callable[[F], F]:
        def register(fn: F) -> F:
            self.add_prompt(fn, name=name, **options)
            return fn

        return register

    def add_prompt(self, fn: Handler, *, name: str | None = None, **options: Any) -> PromptDef:
        """Register ``fn`` as a prompt; its parameters become the prompt's arguments."""
        pdef = PromptDef.from_function(fn, name=name, **options)
        self.prompts[pdef.name] = pdef
        return pdef

    def completion(
        self, *, prompt: str | None = None, resource: str | None = None, argument: str | None = None
    ) -> Callable[[F], F]:
        """Register a completer for a prompt's or a resource template's argument.

        The function receives any of ``argument`` (name), ``value`` and
        ``context`` (the other arguments already given) and returns a list of
        strings (at most 100 are sent) or a wire-form ``completion`` object.
        """
        if (prompt is None) == (resource is None):
            raise ValueError("give exactly one of prompt= or resource=")

        def register(fn: F) -> F:
            ref_type = "ref/prompt" if prompt is not None else "ref/resource"
            self.completions.append(CompletionDef(fn, ref_type, prompt or resource or "", argument))
            return fn

        return register

    # -- change notifications ----------------------------------------------------

    async def notify_tools_changed(self) -> None:
        await _notify.broadcast(self.connections, "notifications/tools/list_changed", "tools")

    async def notify_prompts_changed(self) -> None:
        await _notify.broadcast(self.connections, "notifications/prompts/list_changed", "prompts")

    async def notify_resources_changed(self) -> None:
        method = "notifications/resources/list_changed"
        await _notify.broadcast(self.connections, method, "resources")

    async def notify_resource_updated(self, uri: str) -> None:
        method = "notifications/resources/updated"
        await _notify.broadcast(self.connections, method, "updated", uri)

    async def notify_task(self, task: Task) -> None:
        """Send ``notifications/tasks`` (the DetailedTask) to listen streams that asked for it."""
        await _notify.notify_task(self.connections, task)

    async def log(self, level: str, data: JSONValue, *, logger: str | None = None) -> int:
        """Send a server-wide log message, outside any request: to every initialized
        legacy connection whose ``logging/setLevel`` admits ``level`` (all levels
        until one is set). A 2026-07-28 client gets logs only within a request that
        asked for them (``Context.log``). Returns how many connections were told."""
        return await _notify.log(self.connections, level, data, logger)

    def close_subscriptions(self) -> None:
        """End every open ``subscriptions/listen`` stream with its final result."""
        for conn in self.connections:
            if conn.stop_listening is not None:
                conn.stop_listening.set()
                conn.stop_listening = None

    # -- serving -------------------------------------------------------------------

    async def serve(self, transport: Transport) -> None:
        """Serve one connection until the peer goes away or the task is cancelled."""
        conn = Connection(self)
        on_request = functools.partial(self._on_request, conn)
        on_notification = functools.partial(self._on_notification, conn)
        async with Session(
            transport, on_request=on_request, on_notification=on_notification
        ) as session:
            session.serve_inline = self._serve_inline
            async with self._connected(conn, session):
                await session.wait_closed()

    @contextlib.asynccontextmanager
    async def _connected(self, conn: Connection, session: Session) -> AsyncIterator[None]:
        """For the block, ``conn`` (served by ``session``) is one of this server's
        connections: server-wide notifications reach it, its tasks are hosted, and
        are forgotten after."""
        conn.session = session
        self.connections.add(conn)
        try:
            # Tasks outlive their request: the server-wide host (HTTP), else this one's.
            async with self.tasks.connection_host() as host:
                conn.task_host = host
                yield
        finally:
            self.connections.discard(conn)
            self.tasks.forget_connection(conn)

    async def serve_stdio(self) -> None:
        """Serve MCP on this process's stdin/stdout until stdin closes."""
        from ._stdio import StdioServerTransport

        transport = StdioServerTransport()
        try:
            await self.serve(transport)
        finally:
            await transport.aclose()

    async def serve_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8000,
        *,
        path: str = "/mcp",
        allowed_hosts: Sequence[str] | None | Literal["auto"] = "auto",
        allowed_origins: Sequence[str] | None | Literal["auto"] = "auto",
        json_response: bool = False,
        session_idle_timeout: float | None = 30 * 60.0,
        max_sessions: int = 10_000,
        event_store: EventStore | None = None,
        task_status: TaskStatus[int] | None = None,
        **options: Any,
    ) -> None:
        """Serve MCP over streamable HTTP, both eras, at ``http://host:port/path``.

        Runs until cancelled, then shuts down gracefully; reports the bound port
        through ``task_status`` (``await tg.start(server.serve_http, "127.0.0.1", 0)``).
        ``mcpwire._http_server.serve_http`` has every argument; ``options`` are
        further limits and timeouts (``HTTPServerOptions``)."""
        from ._http_server import serve_http

        # anyio's TASK_STATUS_IGNORED is named here rather than as the default:
        # naming it at import time would load anyio's task-group modules.
        await serve_http(
            self,
            host,
            port,
            path=path,
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            json_response=json_response,
            session_idle_timeout=session_idle_timeout,
            max_sessions=max_sessions,
            event_store=event_store,
            task_status=anyio.TASK_STATUS_IGNORED if task_status is None else task_status,
            **options,
        )

    def run(
        self,
        transport: Literal["stdio", "http"] = "stdio",
        *,
        backend: str = "asyncio",
        host: str = "127.0.0.1",
        port: int = 8000,
        **options: Any,
    ) -> None:
        """Blocking entry point: serve stdio, or HTTP (``serve_http`` options) until a signal."""
        if transport == "stdio":
            anyio.run(self.serve_stdio, backend=backend)
        elif transport == "http":
            from ._http_run import run_until_signalled

            anyio.run(
                functools.partial(run_until_signalled, self, host, port, **options),
                backend=backend,
            )
        else:
            raise ValueError(f"unsupported transport {transport!r} for run()")

    def _serve_inline(self, request: Request) -> bool:
        """Requests whose handler never waits are served without a task of their own."""
        method = request.method
        if method in self._never_wait:
            return True
        if not self._inline_calls:
            return False
        # Only a string name is looked up (any JSON may stand there; dispatch refuses it).
        key = (request.params or {}).get("uri" if method == "resources/read" else "name")
        if type(key) is not str:
            return False
        if method == "tools/call":
            tool = self.tools.get(key)
            return (
                tool is not None
                and tool.task == "forbidden"
                and is_quick(tool.fn, thread=tool.thread)
            )
        if method in ("prompts/get", "resources/read"):
            found = (self.prompts if method == "prompts/get" else self.resources).get(key)
            return found is not None and is_quick(found.fn)
        return False

    async def _on_request(
        self, conn: Connection, request: Request, rctx: RequestContext
    ) -> JSONObject:
        return await _methods.dispatch(self, conn, request, rctx)

    async def _on_notification(self, conn: Connection, note: Notification) -> None:
        if note.method == "notifications/initialized":
            if conn.lifecycle.state is LifecycleState.AWAITING_INITIALIZED:
                conn.lifecycle.on(LifecycleInput.INITIALIZED_NOTIFICATION)
        elif (
            note.method == "notifications/roots/list_changed" and self.on_roots_changed is not None
        ):
            await self.on_roots_changed(conn)

    # -- pagination ----------------------------------------------------------------

    def page(
        self, kind: str, items: list[JSONValue], cursor: JSONValue
    ) -> tuple[list[JSONValue], str | None]:
        """One page of ``items`` and the cursor of the next, or raise -32602."""
        start = 0
        if cursor is not None:
            start = decode_cursor(kind, cursor)
            if start > len(items):
                raise _methods.invalid_params("Invalid cursor")
        end = start + self.page_size
        next_cursor = encode_cursor(kind, end) if end < len(items) else None
        return items[start:end], next_cursor


def _template(uri: str) -> UriTemplate:
    # Imported on first use: most servers never register a template.
    from ._uritemplate import UriTemplate

    return UriTemplate(uri)
