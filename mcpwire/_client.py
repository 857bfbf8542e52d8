"""``Client``: every client->server request of both eras, era detection, callbacks.

Theory of operation
-------------------
``async with Client(target) as client`` opens the transport and a ``Session``
and learns the server's era:

* ``mode="auto"`` (default): send ``server/discover`` with the modern envelope.
  A ``DiscoverResult`` naming a modern version we speak, or a -32022 naming
  one, means modern. Anything else (any other error, silence until
  ``probe_timeout``) falls back to ``initialize`` on the same connection, as
  the stdio transport clause asks: the fallback never keys on one error code.
* ``mode="legacy"``: ``initialize`` only. ``mode="<version>"``: pinned.

Modern requests carry the envelope (version, capabilities, client info,
optional log level) in ``params._meta``. Server asks arrive either as legacy
server->client requests or as modern ``InputRequiredResult``s; both are
answered by the same callbacks, and the multi-round loop retries with a fresh
id, the answers, and the exact ``requestState`` (bounded by
``max_input_rounds``). Cacheable modern results are kept for their ``ttlMs``
and dropped when a list-changed or updated notification names them.
"""

from __future__ import annotations

from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Hashable,
    Iterable,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from . import _schema
from ._asks import answer, origin_of, run_rounds, send_tool_call
from ._client_cache import ResultCache
from ._client_learn import ToolListing
from ._client_tasks import TaskMethods, await_task, legacy_task_wanted, legacy_tool_task
from ._errors import MCPWireError, RemoteProtocolError
from ._handshake import (
    DECLARE_TASKS,
    DEFAULT_PROBE_TIMEOUT,
    capabilities,
    check_client_arguments,
    connect,
    envelope,
)
from ._listen import Listen, ListenState, Subscription
from ._session import DEFAULT_REQUEST_TIMEOUT, ProgressCallback, RequestContext, Session
from ._transport import Transport, direct_pair
from ._types import (
    CallToolResult,
    Completion,
    GetPromptResult,
    Prompt,
    Resource,
    ResourceContents,
    ResourceTemplate,
    Task,
    Tool,
)
from ._version import __version__
from ._versions import META_SUBSCRIPTION_ID, Era
from .sansio._json import JSONObject
from .sansio._messages import Notification, Request, RequestId

if TYPE_CHECKING:
    from ._server import Server
    from ._tasks import TaskStore

__all__ = ("Client", "OutputValidationError", "Subscription")

Callback = Callable[[JSONObject], Awaitable[JSONObject]]
RootsSource = Callable[[], Awaitable[list[JSONObject]]]
NotificationCallback = Callable[[str, JSONObject], Awaitable[None]]

#: Bound on multi-round-trip retries of one request.
DEFAULT_MAX_INPUT_ROUNDS = 10
#: What ``Client.stdio`` passes on to ``StdioClientTransport``.
_STDIO_OPTIONS = frozenset({"limits", "stderr_log", "shutdown_timeout", "inherit_env"})
#: Pages a list method follows before it gives up on a server whose cursors never end.
MAX_PAGES = 1000
_CACHEABLE = frozenset(
    {"tools/list", "prompts/list", "resources/list", "resources/templates/list", "resources/read"}
)
_INVALIDATES = {
    "notifications/tools/list_changed": ("tools/list",),
    "notifications/prompts/list_changed": ("prompts/list",),
    "notifications/resources/list_changed": ("resources/list", "resources/templates/list"),
}


class OutputValidationError(MCPWireError):
    """A tool's ``structuredContent`` does not match its advertised ``outputSchema``."""


class Client(TaskMethods):
    """An MCP client over any transport, a ``Server`` in-process, or a stdio command.

    Args:
        target: a ``Transport``, a ``Server`` to run in-process, or a function
            that makes the transport when the client is entered.
        mode: ``"auto"``, ``"legacy"``, or a protocol version to pin.
        client_info: ``{"name": ..., "version": ...}`` sent to the server.
        sampling: answers ``sampling/createMessage`` (params -> result, wire form).
        elicitation: answers ``elicitation/create``.
        roots: the client's roots, as a list or an async function returning one.
        on_notification: called with ``(method, params)`` for server notifications.
        log_level: modern era: ask for log messages at this level and above.
        request_timeout: default seconds per request.
        probe_timeout: seconds the ``auto`` era probe waits before trying ``initialize``.
        max_input_rounds: bound on multi-round-trip retries of one request.
        validate_output: check ``structuredContent`` against a listed tool's ``outputSchema``.
        cache: keep cacheable modern results for their ``ttlMs``.
        tasks: declare the tasks extension (SEP-2663) on modern requests; see
            ``call_tool(task=...)`` and ``mcpwire._client_tasks``. With 2025-11-25,
            take the server's asks as tasks (``mcpwire._client_task_host``).
        era_key: identifies the server in the per-process era cache (``Client.stdio``
            sets it from the command line), so a legacy server is not probed on
            every connection (see ``mcpwire._handshake.ERA_CACHE_TTL``).
    """

    def __init__(
        self,
        target: Transport | Server | Callable[[], Transport],
        *,
        mode: str = "auto",
        client_info: JSONObject | None = None,
        sampling: Callback | None = None,
        elicitation: Callback | None = None,
        roots: list[JSONObject] | RootsSource | None = None,
        on_notification: NotificationCallback | None = None,
        log_level: str | None = None,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        probe_timeout: float = DEFAULT_PROBE_TIMEOUT,
        max_input_rounds: int = DEFAULT_MAX_INPUT_ROUNDS,
        validate_output: bool = True,
        cache: bool = True,
        era_key: Hashable | None = None,
        tasks: bool = False,
    ) -> None:
        check_client_arguments(target, mode)
        self._target = target
        self.mode = mode
        self.client_info: JSONObject = client_info or {"name": "mcpwire", "version": __version__}
        self.sampling = sampling
        self.elicitation = elicitation
        self.roots = roots
        self.on_notification = on_notification
        self.log_level = log_level
        self.request_timeout = request_timeout
        self.probe_timeout = probe_timeout
        self.max_input_rounds = max_input_rounds
        self.validate_output = validate_output
        self.use_cache = cache
        self.tasks = tasks
        #: Identifies the server for the per-process era cache (None: never cached).
        self.era_key = era_key
        #: Filled in by ``connect``.
        self.era: Era = "legacy"
        self.protocol_version: str = ""
        self.server_info: JSONObject = {}
        self.server_capabilities: JSONObject = {}
        self.instructions: str | None = None
        self.supported_versions: list[str] = []
        #: Pinned to a modern version: why server/discover gave nothing (None: it did).
        self.discover_error: Exception | None = None
        self._session: Session | None = None
        self._closed_session: Session | None = None
        self._session_entered = False
        self._tg: anyio.abc.TaskGroup | None = None
        self._output_schemas: dict[str, _schema.Validator | None] = {}
        self._tool_listing = ToolListing()
        #: 2025-11-25 ``execution.taskSupport`` by tool name, from ``list_tools``; and
        #: the polls that ``notifications/tasks/status`` wakes, by task id.
        self._task_support: dict[str, str] = {}
        self._task_polls: dict[str, anyio.Event] = {}
        self._task_store: TaskStore | None = None  # tasks the server asked of us
        self._envelopes: dict[tuple[object, ...], JSONObject] = {}
        self._cache = ResultCache()
        self._subscriptions: dict[RequestId, ListenState] = {}

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: dict[str, str | None] | None = None,
        cwd: str | None = None,
        **options: Any,
    ) -> Client:
        """A client for a server started as a child process (no shell).

        ``options`` are those of ``Client`` plus the transport's
        (``StdioClientTransport``: ``limits`` on message size and depth,
        ``stderr_log``, ``shutdown_timeout``, ``inherit_env``). The process
        starts when the client is entered, not here.
        """
        from ._stdio_client import StdioClientTransport

        wire = {k: options.pop(k) for k in list(options) if k in _STDIO_OPTIONS}

        def spawn() -> Transport:
            return StdioClientTransport(command, args, env=env, cwd=cwd, **wire)

        options.setdefault("era_key", ("stdio", command, tuple(args), cwd))
        return cls(spawn, **options)

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
        mode: str = "auto",
        transport: str = "auto",
        **options: Any,
    ) -> Client:
        """A client for a server at an ``http://`` or ``https://`` URL.

        ``transport`` is ``"auto"`` (Streamable HTTP, falling back to the
        deprecated HTTP+SSE transport when the server turns out to speak only
        that), ``"streamable"`` or ``"sse"``. ``headers`` go with every HTTP
        request (``Authorization``, for example). ``options`` are those of
        ``Client`` plus the transport's (``HTTPClientOptions``: ``timeout``,
        ``connect_timeout``, ``verify``, ``message_url``, ...). Nothing
        connects until the client is entered.
        """
        from ._http_client import open_http_transport
        from ._http_client_base import OPTION_NAMES, check_http_options
        from ._http_client_headers import header_list

        pairs = header_list(headers)
        wire = {k: options.pop(k) for k in list(options) if k in OPTION_NAMES | {"tool_headers"}}
        # A malformed URL or option fails here, not on entry.
        check_http_options(url, transport, pairs, **wire)

        def connect() -> Transport:
            return open_http_transport(url, transport=transport, headers=pairs, **wire)  # type: ignore[arg-type]

        options.setdefault("era_key", ("http", url))
        return cls(connect, mode=mode, **options)

    # -- connection ------------------------------------------------------------------

    @property
    def session(self) -> Session:
        if self._session is None:
            raise MCPWireError("the client is not connected (use 'async with')")
        return self._session

    @property
    def transport(self) -> Transport:
        return self.session.transport

    async def __aenter__(self) -> Client:
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        try:
            transport = self._open_transport()
            self._session = Session(
                transport,
                on_request=self._on_request,
                on_notification=self._on_notification,
                request_timeout=self.request_timeout,
            )
            self._session.on_late_response = self._on_late_response
            await self._session.__aenter__()
            self._session_entered = True
            await connect(self)
        except BaseException:
            await self._exit()
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self._exit()

    async def aclose(self) -> None:
        """End the connection: pending calls fail with ``ConnectionClosed`` and the
        transport closes (a stdio child is stopped). Idempotent.

        Safe anywhere inside ``async with``, under any cancel scope or task group:
        the task groups ``async with`` entered are exited by its own exit, the only
        place anyio allows (the nesting they were entered in). A client entered by
        hand (``await client.__aenter__()``) is finished with ``__aexit__``, as an
        ``AsyncExitStack`` does.
        """
        session = self._session
        if session is not None and self._session_entered:
            await session.close()

    async def _exit(self) -> None:
        # Task groups must be exited in the scope nesting they were entered in, so
        # no shielding scope wraps these exits; Session.close shields its own I/O.
        tg, self._tg = self._tg, None
        session, self._session_entered = self._session, False
        try:
            if session is not None and session is not self._closed_session:
                self._closed_session = session
                await session.__aexit__(None, None, None)
        finally:
            # Even when the session's exit raised (the holder was cancelled), our
            # task group must be exited, or the cancel-scope stack is corrupted.
            if tg is not None:
                tg.cancel_scope.cancel()
                await tg.__aexit__(None, None, None)

    def _open_transport(self) -> Transport:
        from ._server import Server

        target = self._target
        if isinstance(target, Server):
            client_end, server_end = direct_pair()
            assert self._tg is not None
            self._tg.start_soon(target.serve, server_end)
            return client_end
        if callable(target) and not hasattr(target, "receive"):
            made: Transport = target()
        else:
            made = target  # type: ignore[assignment]
        bind = getattr(made, "bind_task_group", None)
        if bind is not None:
            # Transports with background work (HTTP event streams) run it in our group.
            bind(self._tg)
        return made

    def _capabilities(self, version: str) -> JSONObject:
        """What the callbacks let us declare, in the shape ``version`` defines."""
        return capabilities(self, version)

    def _envelope(self, version: str, *, with_level: bool = True) -> JSONObject:
        """The modern ``_meta`` envelope (a fresh dict; the parts are computed once)."""
        return envelope(self, version, with_level=with_level)

    # -- requests ----------------------------------------------------------------------

    def request(
        self,
        method: str,
        params: JSONObject | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Awaitable[JSONObject]:
        """Send any request (with the modern envelope in the modern era); await the result.
        A plain function returning the session's awaitable: one coroutine fewer a call."""
        if self.era == "modern":
            params = dict(params) if params else {}
            fresh = envelope(self, self.protocol_version)  # self._envelope, one call less
            meta = params.get("_meta")
            if isinstance(meta, dict):
                fresh = {**meta, **fresh}
            params["_meta"] = fresh
        if timeout is None:  # the session's default
            return self.session.request(method, params or None, on_progress=on_progress)
        return self.session.request(
            method, params or None, timeout=timeout, on_progress=on_progress
        )

    async def _cached(
        self, method: str, key: str, params: JSONObject, use_cache: bool
    ) -> JSONObject:
        cacheable = self.era == "modern" and self.use_cache and method in _CACHEABLE
        if cacheable and use_cache and (hit := self._cache.get(method, key)) is not None:
            return hit
        result, rounds = await run_rounds(self, method, params)
        ttl = result.get("ttlMs")
        # Results of multi-round retries are never cached (caching.mdx).
        if cacheable and rounds == 0 and isinstance(ttl, (int, float)) and ttl > 0:
            self._cache.put(method, key, ttl, result)
        return result

    async def _pages(
        self, method: str, key: str, cursor_kind: str, use_cache: bool
    ) -> AsyncIterator[list[JSONObject]]:
        cursor: str | None = None
        seen: set[str] = set()
        while True:
            if len(seen) >= MAX_PAGES:
                raise RemoteProtocolError(f"{method}: more than {MAX_PAGES} pages")
            params: JSONObject = {"cursor": cursor} if cursor is not None else {}
            result = await self._cached(method, f"{cursor_kind}:{cursor}", params, use_cache)
            items = result.get(key)
            yield [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []
            nxt = result.get("nextCursor")
            if not isinstance(nxt, str) or nxt in seen:
                return
            seen.add(nxt)
            cursor = nxt

    async def ping(self) -> None:
        """Check that the server answers (2026-07-28 has no ping: ``server/discover``)."""
        await self.request("ping" if self.era == "legacy" else "server/discover")

    async def list_tools(self, *, cache: bool = True) -> list[Tool]:
        """Every tool, across all pages."""
        tools: list[Tool] = []
        async for page in self._pages("tools/list", "tools", "tools", cache):
            tools.extend(Tool.from_json(t) for t in page)
        learn = getattr(self.transport, "learn_tools", None)
        if learn is not None:
            # HTTP: x-mcp-header annotations become Mcp-Param-* headers (2026-07-28).
            tools = learn(tools, drop_invalid=self.era == "modern")
        for tool in tools:
            self._output_schemas[tool.name] = (
                _schema.compile(tool.output_schema) if tool.output_schema is not None else None
            )
            self._task_support[tool.name] = tool.task_support
        return tools

    async def call_tool(
        self,
        name: str,
        arguments: JSONObject | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        task: bool | None = None,
    ) -> CallToolResult:
        """Call a tool. A tool failure is a result with ``is_error``; protocol errors raise.

        ``task`` declares the tasks extension for this call (``None``: as
        ``Client(tasks=...)``). A task the server makes is awaited
        (``await_task``: ``timeout`` bounds the whole wait, a failed task
        raises its ``JSONRPCError``, cancelling the caller cancels the task).
        With 2025-11-25, where the client decides, ``task=True`` makes the call
        a task, as does ``None`` for a tool that requires one (a server that
        offers tasks is asked which do, once, with ``tools/list``).
        """
        params: JSONObject = {"name": name, "arguments": arguments or {}}
        legacy_tasks = self.era == "legacy" and (task or "tasks" in self.server_capabilities)
        if legacy_tasks and await legacy_task_wanted(self, name, task):
            raw = await legacy_tool_task(self, params, timeout, on_progress)
        else:
            # ``declaring_tasks(task)``, spelt out: no context manager's calls on every call.
            token = DECLARE_TASKS.set(task)
            try:
                raw = await send_tool_call(self, params, timeout, on_progress)
                if raw.get("resultType") == "task":
                    raw = await await_task(self, Task.from_json(raw), timeout=timeout)
            finally:
                DECLARE_TASKS.reset(token)
        result = CallToolResult.from_json(raw)
        # Learn the tool's outputSchema once, as a validating client must, with one
        # listing for all the first calls in flight. No answer: the result is the
        # caller's all the same, unchecked (learnt again next call).
        if (
            self.validate_output
            and name not in self._output_schemas
            and not result.is_error
            and not await self._tool_listing.learn(self, name)
        ):
            return result
        validator = self._output_schemas.get(name)
        if self.validate_output and validator is not None and not result.is_error:
            if result.structured is None:
                raise OutputValidationError(
                    f"tool {name!r} declares an outputSchema but returned no structuredContent"
                )
            problems = validator.validate(result.structured)
            if problems:
                raise OutputValidationError(
                    f"tool {name!r} returned structuredContent that "
                    "does not match its outputSchema: " + "; ".join(problems)
                )
        return result

    async def list_resources(self, *, cache: bool = True) -> list[Resource]:
        out: list[Resource] = []
        async for page in self._pages("resources/list", "resources", "resources", cache):
            out.extend(Resource.from_json(r) for r in page)
        return out

    async def list_resource_templates(self, *, cache: bool = True) -> list[ResourceTemplate]:
        out: list[ResourceTemplate] = []
        async for page in self._pages(
            "resources/templates/list", "resourceTemplates", "templates", cache
        ):
            out.extend(ResourceTemplate.from_json(r) for r in page)
        return out

    async def read_resource(self, uri: str, *, cache: bool = True) -> list[ResourceContents]:
        result = await self._cached("resources/read", uri, {"uri": uri}, cache)
        contents = result.get("contents")
        return (
            [ResourceContents.from_json(c) for c in contents] if isinstance(contents, list) else []
        )

    async def subscribe_resource(self, uri: str) -> None:
        """Legacy: ask for ``notifications/resources/updated`` about ``uri``."""
        await self.request("resources/subscribe", {"uri": uri})

    async def unsubscribe_resource(self, uri: str) -> None:
        await self.request("resources/unsubscribe", {"uri": uri})

    async def list_prompts(self, *, cache: bool = True) -> list[Prompt]:
        out: list[Prompt] = []
        async for page in self._pages("prompts/list", "prompts", "prompts", cache):
            out.extend(Prompt.from_json(p) for p in page)
        return out

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None
    ) -> GetPromptResult:
        params: JSONObject = {"name": name}
        if arguments:
            params["arguments"] = dict(arguments)
        result, _ = await run_rounds(self, "prompts/get", params)
        return GetPromptResult.from_json(result)

    async def complete(
        self, ref: JSONObject, argument: str, value: str, context: dict[str, str] | None = None
    ) -> Completion:
        """Complete an argument; ``ref`` is ``{"type": "ref/prompt", "name": ...}`` or
        ``{"type": "ref/resource", "uri": ...}``."""
        params: JSONObject = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": dict(context)}
        return Completion.from_json(await self.request("completion/complete", params))

    async def set_logging_level(self, level: str) -> None:
        """Legacy ``logging/setLevel``; in the modern era, the level for later requests."""
        if self.era == "modern":
            self.log_level = level
            return
        await self.request("logging/setLevel", {"level": level})

    async def send_roots_changed(self) -> None:
        if self.era == "legacy":
            await self.session.notify("notifications/roots/list_changed")

    def listen(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        uris: Sequence[str] = (),
        task_ids: Sequence[str] = (),
    ) -> Listen:
        """Modern ``subscriptions/listen``: ``async with client.listen(tools=True) as sub``.

        ``task_ids``: ``notifications/tasks`` for these tasks (the tasks extension,
        which the listen then declares)."""
        wanted: JSONObject = {}
        if tools:
            wanted["toolsListChanged"] = True
        if prompts:
            wanted["promptsListChanged"] = True
        if resources:
            wanted["resourcesListChanged"] = True
        if uris:
            wanted["resourceSubscriptions"] = list(uris)
        if task_ids:
            wanted["taskIds"] = list(task_ids)
        return Listen(self, wanted)

    # -- from the server -----------------------------------------------------------------

    async def _on_request(self, request: Request, rctx: RequestContext) -> JSONObject:
        params = request.params or {}
        if "task" in params or request.method.startswith("tasks/"):  # 2025-11-25 tasks
            from ._client_task_host import receive

            return await receive(self, request)
        with origin_of(self, request):
            return await answer(self, request.method, params)

    async def _on_notification(self, note: Notification) -> None:
        params = note.params or {}
        for method in _INVALIDATES.get(note.method, ()):
            self._cache.forget(method)
        if note.method == "notifications/resources/updated":
            uri = params.get("uri")
            self._cache.forget("resources/read", uri if isinstance(uri, str) else "")
        meta = params.get("_meta")
        sub = meta.get(META_SUBSCRIPTION_ID) if isinstance(meta, dict) else None
        state = self._subscriptions.get(sub) if isinstance(sub, (str, int)) else None
        if state is not None:
            state.deliver(note)
        task_id = params.get("taskId") if note.method == "notifications/tasks/status" else None
        if isinstance(task_id, str) and task_id in self._task_polls:
            self._task_polls.pop(task_id).set()
        if note.method == "notifications/message":
            with origin_of(self, note):  # whose request a log is about, where known
                if self.on_notification is not None:
                    await self.on_notification(note.method, params)
        elif self.on_notification is not None:
            await self.on_notification(note.method, params)
