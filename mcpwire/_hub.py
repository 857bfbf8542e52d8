"""``Hub``: many MCP servers from config files, discovered in parallel and supervised.

Theory of operation
-------------------
``async with Hub(configs=[...]) as hub`` reads and validates the config files
(a bad file raises ``ConfigError`` right there), starts one supervisor task
per server (``_hub_supervisor``) and a watcher task (``_hub_watch``), and
returns at once: servers connect in the background, at most
``max_concurrent_starts`` at a time, each under its own startup timeout, and
one server's failure never touches another. The hub is usable while some are
still starting; ``wait_ready()`` waits until none is.

The hub itself holds the registries, kept in step with the supervisors'
discoveries: exposed tool and prompt names (``_hub_names``), the tools each
server exposes after its include/exclude globs, and the reverse map a call
goes through. A registry change publishes events (``_hub_events``).

A call goes: exposed name -> (server, original name) -> refusals (disabled
server, tool in ``disabledTools``, filtered out) -> the approval hook unless
``alwaysAllow``/``trust`` -> the server's live connection (a dead one is
reconnected once, without backoff) -> ``Client.call_tool`` with the server's
timeout. A crash during the call fails that call with the exit status and
stderr tail; the call is not retried, because tools need not be idempotent.

A config change (seen by the watcher, or ``reload()``) is validated in full
before anything is touched; an invalid one publishes ``ConfigRejected`` and
the last good config stays. A valid one is applied per server: added ->
started, removed -> stopped, connection changed -> restarted, only policy
changed (timeouts, approvals, tool filters) -> applied in place, unchanged ->
untouched (``_hub_reload``). A named profile (``_hub_profiles``) narrows the
servers and their tools; switching profiles is applied the same way.

Servers marked ``lazy`` start on first use while the tool cache knows what
they offer (``_hub_cache``): until then they are ``idle`` and their cached
tools, resources and prompts are exposed like a ready server's.

The hub must be entered and left in the same task (like any anyio task group).
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import anyio
import anyio.abc

from ._client_tasks import call_as_required
from ._hub_auth import DEFAULT_AUTHORIZE_TIMEOUT, AuthorizeHook, HubOAuth
from ._hub_cache import ToolCache
from ._hub_config import ServerConfig
from ._hub_errors import ConfigError, ConfigIssue, HubError, ToolCallRefused
from ._hub_events import (
    DEFAULT_EVENT_BUFFER,
    ConfigRejected,
    ConfigReloaded,
    EventBus,
    EventStream,
    HubEvent,
    ServerState,
    ServerStateChanged,
)
from ._hub_names import (
    HubPrompt,
    HubTool,
    NameRule,
    resolve_rule,
)
from ._hub_profiles import Profile, unknown_profile
from ._hub_registry import Registry, always_allowed, call_refusal
from ._hub_reload import apply_config, load_servers, on_paths_changed, watched_paths
from ._hub_status import RestartPolicy, ServerStatus
from ._hub_supervisor import Supervisor
from ._hub_watch import DEFAULT_DEBOUNCE, DEFAULT_POLL_INTERVAL, PathWatcher

if TYPE_CHECKING:
    from ._client import Client
    from ._hub_relay import AskRelay
    from ._session import ProgressCallback
    from ._types import (
        CallToolResult,
        Completion,
        GetPromptResult,
        Resource,
        ResourceContents,
        ResourceTemplate,
    )
    from .sansio._json import JSONObject

__all__ = ("ApproveHook", "Hub")

logger = logging.getLogger("mcpwire.hub")

#: ``approve(server, tool, arguments)``: may this call go ahead?
ApproveHook = Callable[[str, str, "JSONObject"], Awaitable[bool]]
#: Seconds a server gets to connect and list everything, unless its config says.
DEFAULT_STARTUP_TIMEOUT = 30.0
DEFAULT_MAX_CONCURRENT_STARTS = 8
DEFAULT_TOOL_COUNT_WARNINGS = (40, 128)


class Hub:
    """Many MCP servers behind one object (see the module docstring).

    Args:
        configs: config files, read in order; a later file's server replaces an
            earlier one of the same name (give the global config first, the
            project's last).
        servers: servers given in code; they replace config servers of the same name.
        approve: ``async (server, tool, arguments) -> bool``, asked before each call
            of a tool not in its server's ``alwaysAllow`` (``None``: allow all).
        separator: between server and tool in exposed names.
        name_rule: what exposed names must match: ``"default"``, ``"openai"``,
            ``"anthropic"``, ``"gemini"``, a pattern, or a ``NameRule``.
        max_concurrent_starts: servers connecting at the same time.
        startup_timeout: seconds to connect and list everything (per server).
        restart_policy: backoff and crash-loop limits.
        watch: reload when a config file changes; restart a server when one of
            its ``watchPaths`` changes.
        poll_interval, debounce: the watcher's timing, in seconds.
        tool_count_warnings: warn when the exposed tools exceed these counts.
        event_buffer: events kept per ``events()`` subscriber.
        environ: variables for ``${VAR}`` expansion (default ``os.environ``).
        client_options: passed to every ``Client`` (``mode``, ``client_info``,
            ``sampling``, ``elicitation``, ``roots``...).
        authorize: ``(server, url)``, sync or async: show the user an OAuth
            authorization URL (open a browser) for a server with ``oauth``
            in its config (``None``: the URL is logged). See ``_hub_auth``.
        token_store: a file to keep OAuth tokens and client registrations in
            across runs (mode 0600; ``None``: in memory, for this hub's life).
        authorize_timeout: seconds the user's step of an OAuth authorization
            may take; it does not count against a server's startup timeout.
        tool_cache: a file keeping what ``lazy`` servers offered across runs, so
            they start on first use (``_hub_cache``; ``None``: lazy is ignored).
        profile: the named profile to run (``_hub_profiles``): only its servers,
            each narrowed to its tools; ``use_profile`` switches it.
        relay: hands servers' sampling, elicitation and roots asks to the
            client upstream of a ``HubServer`` (``_hub_relay``).
    """

    def __init__(
        self,
        configs: Sequence[str | os.PathLike[str]] = (),
        *,
        servers: Sequence[ServerConfig] = (),
        approve: ApproveHook | None = None,
        separator: str = "__",
        name_rule: str | NameRule = "default",
        max_concurrent_starts: int = DEFAULT_MAX_CONCURRENT_STARTS,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        restart_policy: RestartPolicy | None = None,
        watch: bool = True,
        poll_interval: float = DEFAULT_POLL_INTERVAL,
        debounce: float = DEFAULT_DEBOUNCE,
        tool_count_warnings: Sequence[int] = DEFAULT_TOOL_COUNT_WARNINGS,
        event_buffer: int = DEFAULT_EVENT_BUFFER,
        environ: Mapping[str, str] | None = None,
        client_options: Mapping[str, object] | None = None,
        authorize: AuthorizeHook | None = None,
        token_store: str | os.PathLike[str] | None = None,
        authorize_timeout: float = DEFAULT_AUTHORIZE_TIMEOUT,
        tool_cache: str | os.PathLike[str] | None = None,
        profile: str | None = None,
        relay: AskRelay | None = None,
    ) -> None:
        if isinstance(configs, (str, os.PathLike)):
            configs = [configs]
        self.config_files = [os.path.abspath(os.path.expanduser(os.fspath(p))) for p in configs]
        self.explicit_servers = list(servers)
        self.approve = approve
        self.rule = resolve_rule(name_rule)
        if not separator or not all(re.fullmatch(f"[{self.rule.allowed}]", c) for c in separator):
            raise ValueError(f"the separator {separator!r} must be made of allowed name characters")
        self.separator = separator
        if max_concurrent_starts < 1 or startup_timeout <= 0:
            raise ValueError("need max_concurrent_starts >= 1 and startup_timeout > 0")
        self.startup_timeout = startup_timeout
        self.restart_policy = restart_policy or RestartPolicy()
        self.tool_count_warnings = tuple(tool_count_warnings)
        self.environ = environ
        self.client_options: dict[str, object] = dict(client_options or {})
        self.relay = relay
        store = None if token_store is None else os.fspath(token_store)
        #: OAuth for the servers with ``oauth`` in their config (``_hub_auth``).
        self.oauth = HubOAuth(authorize, store, authorize_timeout)
        self.tool_cache = ToolCache(tool_cache) if tool_cache is not None else None
        #: The profile in force (``None``: every server as configured), and the
        #: profiles the config in force defines (``_hub_profiles``).
        self.profile = profile
        self.profiles: dict[str, Profile] = {}
        #: Warnings from the config currently in force (unknown keys, overrides...).
        self.warnings: list[ConfigIssue] = []
        self._max_starts = max_concurrent_starts
        self._watch = watch
        self._watcher = PathWatcher(interval=poll_interval, debounce=debounce)
        self._event_buffer = event_buffer
        self._bus = EventBus()
        self._configs: dict[str, ServerConfig] = {}
        self._sups: dict[str, Supervisor] = {}
        self._registry = Registry(
            separator, self.rule, tool_count_warnings, self._publish, self._exposes
        )
        self._tg: anyio.abc.TaskGroup | None = None
        self._watch_scope: anyio.CancelScope | None = None
        self._limiter: anyio.CapacityLimiter
        self._reload_lock: anyio.Lock | None = None
        self._changed: anyio.Event | None = None
        self._closed = False

    # -- lifecycle -----------------------------------------------------------------

    async def __aenter__(self) -> Hub:
        if self._tg is not None or self._closed:
            raise HubError("a Hub can be entered only once")
        servers = load_servers(self, self.profile)
        self._limiter = anyio.CapacityLimiter(self._max_starts)
        self._reload_lock = anyio.Lock()
        self._changed = anyio.Event()
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        for config in servers.values():
            self._start(config)
        self._configs = servers
        if self.relay is not None:
            self._tg.start_soon(self.relay.run, self)
        if self._watch:
            self._watcher.set_paths(watched_paths(self))
            self._watch_scope = anyio.CancelScope()
            self._tg.start_soon(self._watch_paths, self._watch_scope)
        return self

    async def _watch_paths(self, scope: anyio.CancelScope) -> None:
        with scope:
            await self._watcher.run(functools.partial(on_paths_changed, self))

    async def __aexit__(self, *exc_info: object) -> None:
        tg = self._tg
        try:
            await self.aclose()
        finally:
            self._tg = None
            if tg is not None:
                tg.cancel_scope.cancel()
                await tg.__aexit__(None, None, None)

    async def aclose(self) -> None:
        """Stop every server (and its child process) and end the event streams. Idempotent.

        Safe anywhere inside ``async with``, under any cancel scope or task group:
        the hub's task group is exited by the block's own exit, in the nesting it
        was entered in (as anyio requires).
        """
        already, self._closed = self._closed, True
        if self._tg is None or already:
            self._bus.close()
            return
        try:
            # No reload is left half-applied: wait for one in progress, then stop
            # every server cooperatively and in parallel (each closes its own
            # connection and ends its actor), and the watcher.
            with anyio.CancelScope(shield=True):
                assert self._reload_lock is not None
                async with self._reload_lock, anyio.create_task_group() as stopping:
                    for sup in list(self._sups.values()):
                        stopping.start_soon(sup.stop)
                if self.tool_cache is not None:
                    await self.tool_cache.flush()
            if self._watch_scope is not None:
                self._watch_scope.cancel()
        finally:
            self._bus.close()

    def _start(self, config: ServerConfig) -> None:
        assert self._tg is not None
        sup = Supervisor(self, config)
        sup.invalid = self._registry.check_server_name(config.name)
        self._sups[config.name] = sup
        self._tg.start_soon(sup.run)

    async def _stop(self, name: str) -> None:
        sup = self._sups.get(name)
        if sup is None:
            return
        await sup.stop("stopped (removed from the config)")
        self._forget(sup)
        del self._sups[name]

    def options_for(self, server: str) -> dict[str, object]:
        """The ``Client`` options ``server`` connects with."""
        options = self.client_options
        return options if self.relay is None else self.relay.client_options(server, options)

    def _check_open(self) -> None:
        if self._tg is None or self._closed:
            raise HubError("the hub is not running (use 'async with Hub(...)')")

    # -- state -----------------------------------------------------------------------

    @property
    def server_names(self) -> list[str]:
        return list(self._sups)

    def status(self, name: str) -> ServerStatus:
        """A snapshot of one server; raises ``HubError`` for an unknown name."""
        sup = self._sups.get(name)
        if sup is None:
            raise HubError(f"no server named {name!r} (servers: {', '.join(self._sups) or 'none'})")
        return sup.status(len(self._registry.tools_of(name)))

    def clients(self) -> dict[str, Client]:
        """Each ready server's connection, by name: for what the hub does not wrap. A
        request on one that the hub cuts off (a restart, say) fails saying why."""
        return {n: c for n, sup in self._sups.items() if (c := sup.live_client()) is not None}

    def statuses(self) -> list[ServerStatus]:
        """Every server's snapshot, in config order."""
        return [self.status(name) for name in self._sups]

    async def wait_ready(self, timeout: float | None = None) -> None:
        """Wait until no server is connecting (backoffs aside); TimeoutError after ``timeout``."""
        self._check_open()
        with anyio.fail_after(timeout):
            await self._until(lambda: not any(s.settling for s in self._sups.values()))

    async def _until(self, settled: Callable[[], bool]) -> None:
        """Wait until ``settled()`` holds; it is checked after each state change."""
        while True:
            assert self._changed is not None
            changed = self._changed  # taken before the check: no change is missed
            if settled():
                return
            await changed.wait()

    async def restart(self, name: str) -> ServerState:
        """Restart a server now, clearing a crash-loop suspension; returns where it settled."""
        self._check_open()
        self.status(name)
        sup = self._sups[name]
        if sup.invalid:
            raise HubError(sup.invalid)
        return await sup.restart()

    def events(self, *, buffer: int | None = None) -> EventStream:
        """A new subscription to the hub's events (``async for event in hub.events()``)."""
        return self._bus.subscribe(buffer or self._event_buffer)

    def system_prompt(self) -> str:
        """The connected servers, their tools and resources, as text for a system prompt."""
        from ._hub_render import system_prompt

        return system_prompt(self)

    # -- registries --------------------------------------------------------------------

    def tools(self, *, include_disabled: bool = False) -> list[HubTool]:
        """The tools of ready (or idle) servers, under their exposed names."""
        return [
            tool
            for name, sup in self._sups.items()
            if sup.exposed
            for tool in self._registry.tools_of(name)
            if tool.enabled or include_disabled
        ]

    def resolve(self, exposed_name: str) -> tuple[str, str]:
        """The (server, original tool name) an exposed name routes to."""
        try:
            return self._registry.route_tool(exposed_name)
        except ToolCallRefused:
            raise
        except HubError:
            sup = self._registry.server_of(
                exposed_name, self._sups, lambda s: s.config.disabled or not s.exposed
            )
            if sup is None:
                raise
            if sup.config.disabled:
                reason = sup.config.disabled_reason
                raise ToolCallRefused(f"server {sup.name!r} is disabled ({reason})") from None
            if not sup.exposed:
                state = sup.state or ServerState.STARTING
                raise HubError(
                    f"unknown tool {exposed_name!r}: server {sup.name!r} is {state} "
                    "and has not listed its tools"
                ) from None
            raise

    async def _route(self, name: str, route: Callable[[str], tuple[str, str]]) -> tuple[str, str]:
        """``route(name)``. A name that does not route yet, of a server that a reload
        or profile switch has just enabled (or that is connecting), is routed again
        once the server has settled, within its startup timeout: such a server's
        tools are not known until it has listed them, and a call made right after
        enabling it must not fail for that."""
        try:
            return route(name)
        except ToolCallRefused:
            raise
        except HubError:
            sup = self._registry.server_of(name, self._sups, lambda s: s.settling)
            if sup is None:
                raise
        with anyio.move_on_after(sup.startup_timeout + 1.0):
            await self._until(lambda: not sup.settling)
        return route(name)

    def resources(self) -> list[tuple[str, Resource]]:
        """(server, resource) for every resource of a ready server."""
        return [(n, r) for n, d in self._ready_discoveries() for r in d.resources]

    def resource_templates(self) -> list[tuple[str, ResourceTemplate]]:
        return [(n, t) for n, d in self._ready_discoveries() for t in d.templates]

    def prompts(self) -> list[HubPrompt]:
        return [
            p for n, sup in self._sups.items() if sup.exposed for p in self._registry.prompts_of(n)
        ]

    def instructions(self) -> dict[str, str]:
        """The ``instructions`` of each ready server that gave some."""
        return {n: d.instructions for n, d in self._ready_discoveries() if d.instructions}

    def _ready_discoveries(self) -> list[tuple[str, Discovery]]:
        return [
            (n, sup.discovery)
            for n, sup in self._sups.items()
            if sup.exposed and sup.discovery is not None
        ]

    # -- calls -------------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: JSONObject | None = None,
        *,
        on_progress: ProgressCallback | None = None,
        timeout: float | None = None,
        task: bool | None = None,
    ) -> CallToolResult:
        """Call a tool by its exposed name; as a task (awaited) if ``task``, or if it
        requires one (``execution.taskSupport``) and ``task`` is not ``False``.

        Raises:
            ToolCallRefused: the server or tool is disabled or filtered out, or
                the approval hook said no.
            HubError: unknown name, or the server cannot be reached.
            ConnectionClosed: the server died during the call (exit status, stderr
                tail), or an HTTP server could not be reached; either way it is
                reconnected (with backoff) as after a crash. Or the hub restarted,
                stopped or disabled the server meanwhile, as the message says.
            RequestTimeout: no answer within ``timeout`` (default: the server's).
        """
        self._check_open()
        server, tool = await self._route(name, self.resolve)
        sup = self._sups[server]
        config = sup.config
        refused = call_refusal(config, tool)
        if refused is not None:
            raise ToolCallRefused(refused)
        args: JSONObject = dict(arguments or {})
        approve = self.approve
        if approve is not None and not always_allowed(config, tool):
            approved = await approve(server, tool, args)
            if not approved:
                raise ToolCallRefused(f"the call of {name!r} was not approved")
        return await sup.call(
            lambda client: call_as_required(
                client, tool, args, timeout or config.timeout, on_progress, task
            )
        )

    async def read_resource(self, uri: str, *, server: str | None = None) -> list[ResourceContents]:
        """Read a resource from ``server``, or from the ready server that lists ``uri``."""
        self._check_open()
        if server is None:
            owners = [n for n, r in self.resources() if r.uri == uri]
            if len(owners) != 1:
                why = "no ready server lists it" if not owners else f"listed by {owners}"
                raise HubError(f"say which server to read {uri!r} from ({why})")
            server = owners[0]
        self.status(server)
        return await self._sups[server].call(lambda client: client.read_resource(uri))

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None
    ) -> GetPromptResult:
        """Get a prompt by its exposed name."""
        self._check_open()
        route = await self._route(name, self._registry.route_prompt)
        return await self._sups[route[0]].call(
            lambda client: client.get_prompt(route[1], arguments)
        )

    async def complete(
        self,
        ref: JSONObject,
        argument: str,
        value: str,
        context: dict[str, str] | None = None,
        *,
        server: str | None = None,
    ) -> Completion:
        """Complete an argument of a prompt (``{"type": "ref/prompt", "name": exposed
        name}``) or of ``server``'s resource template (``{"type": "ref/resource",
        "uri": template}``), as the server that owns it does."""
        self._check_open()
        if ref.get("type") == "ref/prompt":
            server, name = await self._route(str(ref.get("name")), self._registry.route_prompt)
            ref = {"type": "ref/prompt", "name": name}
        elif server is None:
            raise HubError("say which server's resource template to complete")
        self.status(server)
        return await self._sups[server].call(
            lambda client: client.complete(ref, argument, value, context)
        )

    # -- what supervisors report -------------------------------------------------------

    def _state_changed(
        self, sup: Supervisor, old: ServerState | None, new: ServerState, error: str | None
    ) -> None:
        self._publish(ServerStateChanged(server=sup.name, old=old, new=new, error=error))
        self._registry.show(sup.name)  # its tools and resources left, or are back
        if self._changed is not None:
            changed, self._changed = self._changed, anyio.Event()
            changed.set()

    def cached(self, config: ServerConfig) -> Discovery | None:
        """What a lazy server offered last time (``None``: start it now)."""
        return self.tool_cache.get(config) if self.tool_cache is not None else None

    def _discovered(self, sup: Supervisor, *, fresh: bool = True) -> None:
        """Register (or re-register, after a list change or a policy change) a server's
        tools; a ``fresh`` listing of a lazy server is kept in the tool cache."""
        found = sup.discovery
        if found is None or sup.invalid or sup.config.disabled:
            return
        for refused in self._registry.register(sup.config, found):
            sup.record(str(refused), level="warning")
        if fresh and sup.config.lazy and self.tool_cache is not None and self._tg is not None:
            self.tool_cache.put(sup.config, found)
            self._tg.start_soon(self.tool_cache.flush)

    def _forget(self, sup: Supervisor) -> None:
        self._registry.forget(sup.name)

    def _exposes(self, name: str) -> bool:
        sup = self._sups.get(name)
        return sup is not None and sup.exposed

    def _publish(self, event: HubEvent) -> None:
        self._bus.publish(event)

    # -- reloading ---------------------------------------------------------------------

    async def reload(self) -> ConfigReloaded:
        """Re-read the config files and apply the difference (see the module docstring).

        Raises ``ConfigError`` (and publishes ``ConfigRejected``) when the new
        config is invalid; the config in force is then left as it was.
        """
        return await self._reload(self.profile)

    async def use_profile(self, name: str | None) -> ConfigReloaded:
        """Put the profile ``name`` in force (``None``: none, every server as
        configured), re-reading the config files, and apply the difference.

        Raises ``ConfigError`` for a profile no config defines (nothing changes)
        and as ``reload`` does; the profile in force then stays.
        """
        self._check_open()
        if name is not None and name not in self.profiles:
            raise ConfigError([unknown_profile(name, self.profiles, self.config_files)])
        return await self._reload(name)

    async def _reload(self, profile: str | None) -> ConfigReloaded:
        self._check_open()
        assert self._reload_lock is not None
        async with self._reload_lock:
            self._check_open()  # the hub may have closed while this waited
            try:
                new = load_servers(self, profile)
            except ConfigError as exc:
                logger.error("config not applied, the last good one stays: %s", exc)
                self._publish(ConfigRejected(files=tuple(self.config_files), error=str(exc)))
                raise
            self.profile = profile
            event = await apply_config(self, new)
            self._publish(event)
            return event


if TYPE_CHECKING:
    from ._hub_status import Discovery
