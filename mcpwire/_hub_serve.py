"""The hub as one MCP server: every server's tools, prompts and resources behind
a single connection (``mcpwire hub --serve``).

Theory of operation
-------------------
``HubServer(hub)`` is a ``Server`` whose registries mirror a running ``Hub``:
each exposed tool under its exposed name, with the downstream server's input
and output schemas, title, annotations, icons and ``_meta`` as they were
listed; each prompt under its exposed name; each resource and resource
template under its own URI (the first server to list a URI wins it); and as
its ``instructions``, each ready server's, under the server's name. So any
MCP client, in either era, gets the hub's supervision, lazy and idle servers,
profiles, provider-safe names and approvals, through one server entry of its
config (pain points #10, #16, #17).

Calls are forwarded through the hub (``Hub.call_tool``, ``get_prompt``,
``read_resource``), so the hub's routing, refusals, approval hook, timeouts
and reconnection apply. Arguments are not validated here: the server that
owns the tool validates them. A downstream result is passed through as it
came; a downstream JSON-RPC error is answered with the same code, message and
data; what the hub refuses or cannot reach (a disabled or filtered tool, a
crashed server, a timeout) is a tool result with ``isError``, which a model
can read. Progress of a forwarded call is relayed to the client that asked
for it, and cancelling the call upstream cancels it downstream.

``follow()`` keeps the mirror in step: on every hub event (a server ready,
lost or stopped, a list change, a reload or profile switch) it rebuilds the
registries and sends ``notifications/*/list_changed`` for each list that
changed. The capabilities always offer tools, prompts and resources with
``listChanged``, since a server may come up after the client initialized.

With ``search=True`` the tools are the three of ``ToolSearch``
(``search_tools``, ``describe_tool``, ``call_tool``) in place of every schema,
for clients that cap the tool count. With ``profile_tool=True`` (and profiles
in the config) a ``use_profile`` tool lets the client switch the hub's named
profile itself (pain point #10: a set of servers per mode of work); it is off
by default, since a profile may run servers the one in force keeps off.

Completions of a prompt's or a resource template's arguments are asked of
the server that owns it (under its own name for the prompt); a server that
cannot complete gives no values.

A server's sampling and elicitation asks, and its log messages, during a
call (a tool call, a prompt or a resource read) reach the client that made
it when the hub has a ``relay`` (``_hub_relay``; ``mcpwire hub --serve``
gives it one); so do its ``roots/list`` asks, in a call or outside one (then
the one legacy client connected that declared roots answers). This server
tells the servers behind the hub when those roots change: on the client's
``notifications/roots/list_changed``, and when a client with roots comes or
goes. Without a relay, the hub's own ``client_options`` answer. With a
relay, clients may subscribe to resources (legacy ``resources/subscribe``,
or a 2026-07-28 ``subscriptions/listen``): the hub holds the subscriptions
at the servers that offer the resources (``_hub_subs``) and passes their
updates on.
"""

from __future__ import annotations

import collections
import logging
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any, TypeVar

import anyio

from ._content import ToolResult
from ._errors import JSONRPCError, MCPWireError
from ._hub_errors import HubError
from ._hub_search import ToolSearch
from ._registry import CompletionDef, PromptDef, ResourceDef, TemplateDef, ToolDef
from ._server import Connection, Server
from ._subscriptions import listen_uris
from ._uritemplate import UriTemplate
from ._version import __version__
from .sansio._messages import ErrorCode, Request
from .sansio._state import LifecycleState

if TYPE_CHECKING:
    from ._client import Client
    from ._context import Context
    from ._hub import Hub
    from ._hub_names import HubPrompt, HubTool
    from ._hub_subs import Subscriptions
    from ._request_context import RequestContext
    from ._session import Session
    from ._transport import Transport
    from ._types import CallToolResult, Resource, ResourceTemplate
    from .sansio._json import JSONObject, JSONValue
    from .sansio._messages import Notification

__all__ = ("PROFILE_TOOL", "HubServer")

_T = TypeVar("_T")

logger = logging.getLogger("mcpwire.hub")

#: The keyword a forwarding handler receives its ``Context`` under: a name no
#: client sends as a tool argument (JSON allows it, but no schema declares it).
_CTX = "\x00context"
#: Seconds a burst of hub events may take to land before the mirror is rebuilt.
_SETTLE = 0.05
_ACCEPT_ANY: JSONObject = {}
#: The tool that switches profiles (``profile_tool=True``); no exposed name can be it.
PROFILE_TOOL = "use_profile"
#: Offered whatever the hub holds now: a server may come up after the client initialized.
_ALWAYS = ("tools", "prompts", "resources")
#: Seconds the servers behind the hub get to take a roots/list_changed notification.
_NOTIFY_WITHIN = 5.0


class HubServer(Server):
    """A ``Server`` that mirrors ``hub`` (see the module docstring)."""

    #: Subscribing waits for the servers behind the hub: it needs a task.
    _never_wait = Server._never_wait - {"resources/subscribe", "resources/unsubscribe"}

    def __init__(
        self,
        hub: Hub,
        *,
        name: str = "mcpwire-hub",
        search: bool = False,
        provider: str | None = None,
        profile_tool: bool = False,
    ) -> None:
        super().__init__(name, __version__)
        self.hub = hub
        self.search = ToolSearch(hub, provider=provider) if search else None
        self.profile_tool = profile_tool
        #: The sessions of the clients whose roots the servers behind the hub get.
        self._roots_seen: frozenset[Session] = frozenset()
        #: The URIs the clients' open ``subscriptions/listen`` streams name.
        self._listening: collections.Counter[str] = collections.Counter()
        if hub.relay is not None:
            hub.relay.attach(self)
            self.on_roots_changed = self._roots_changed
        self.sync()

    def capabilities(self) -> JSONObject:
        caps = super().capabilities()
        # Subscriptions are held at the servers by the relay (``_hub_subs``).
        subscribe = self.hub.relay is not None
        caps["resources"] = (
            {"subscribe": True, "listChanged": True} if subscribe else {"listChanged": True}
        )
        return caps

    def offers(self, feature: str) -> bool:
        return feature in _ALWAYS or super().offers(feature)

    def sync(self) -> list[str]:
        """Rebuild the registries from the hub; returns the lists that changed
        (``"tools"``, ``"prompts"``, ``"resources"``)."""
        before = self._listings()
        parts = [f"{server}: {text}" for server, text in self.hub.instructions().items()]
        self.instructions = "\n\n".join(parts) or None  # for connections made from now on
        if self.search is not None:
            self.tools = {d.name: d for d in map(self._search_tool, self.search.definitions())}
        else:
            self.tools = {t.name: self._tool(t) for t in self.hub.tools()}
        if self.profile_tool and self.hub.profiles:
            self.tools[PROFILE_TOOL] = self._use_profile()
        self.prompts = {p.name: self._prompt(p) for p in self.hub.prompts()}
        resources: dict[str, ResourceDef] = {}
        for server, resource in self.hub.resources():
            resources.setdefault(resource.uri, self._resource(server, resource))
        self.resources = resources
        templates: dict[str, TemplateDef] = {}
        owners: dict[str, str] = {}
        for server, template in self.hub.resource_templates():
            if template.uri_template in templates:
                continue
            try:
                templates[template.uri_template] = self._template(server, template)
                owners[template.uri_template] = server
            except ValueError as exc:  # not RFC 6570: nothing could be routed to it
                logger.warning("server %r: resource template left out: %s", server, exc)
        self.templates = list(templates.values())
        self.completions = [
            *(self._completer("ref/prompt", p.name, p.server) for p in self.hub.prompts()),
            *(self._completer("ref/resource", t, owners[t]) for t in templates),
        ]
        after = self._listings()
        return [kind for kind, listing in after.items() if listing != before.get(kind)]

    async def follow(self) -> None:
        """Keep the mirror in step with the hub and tell clients what changed.
        Runs until cancelled or the hub closes."""
        events = self.hub.events()
        async for _ in events:
            await anyio.sleep(_SETTLE)
            events.pending()
            await self.refresh()

    async def refresh(self) -> None:
        """``sync``, and send ``notifications/*/list_changed`` for what changed."""
        for kind in self.sync():
            if kind == "tools":
                await self.notify_tools_changed()
            elif kind == "prompts":
                await self.notify_prompts_changed()
            else:
                await self.notify_resources_changed()

    # -- the clients' roots and subscriptions, relayed by the hub's AskRelay ---------------

    def roots_sessions(self) -> list[Session]:
        """The sessions of the legacy clients connected that declared roots."""
        return [
            c.session
            for c in self.connections
            if c.session is not None
            and not c.session.closed
            and c.lifecycle.state is LifecycleState.READY
            and isinstance(c.client_capabilities.get("roots"), dict)
        ]

    async def serve(self, transport: Transport) -> None:
        try:
            await super().serve(transport)
        finally:
            with anyio.CancelScope(shield=True):
                # A client with roots, or with subscriptions, may have gone.
                await self._roots_moved()
                await self._subscriptions_moved()

    async def _on_request(
        self, conn: Connection, request: Request, rctx: RequestContext
    ) -> JSONObject:
        method = request.method
        if method == "subscriptions/listen" and self.hub.relay is not None:
            request, named = self._holdable(request, self.hub.relay.subscriptions)
            self._listening.update(named)
            try:
                await self._subscriptions_moved()
                return await super()._on_request(conn, request, rctx)
            finally:
                self._listening.subtract(named)
                with anyio.CancelScope(shield=True):
                    await self._subscriptions_moved()
        if method == "resources/subscribe" and self.hub.relay is not None:
            # Refused at once rather than accepted and never heard from.
            uri = (request.params or {}).get("uri")
            why = self.hub.relay.subscriptions.refusal(uri) if isinstance(uri, str) else None
            if why is not None:
                raise JSONRPCError(ErrorCode.INVALID_PARAMS, f"cannot subscribe to {uri}: {why}")
        result = await super()._on_request(conn, request, rctx)
        if method in ("resources/subscribe", "resources/unsubscribe"):
            await self._subscriptions_moved()
        return result

    @staticmethod
    def _holdable(request: Request, subs: Subscriptions) -> tuple[Request, list[str]]:
        """A listen without the URIs no subscription can be held for (``refusal``),
        and the URIs left: its acknowledgement honours only those, the
        2026-07-28 way of refusing some of what a listen asks for."""
        params = request.params or {}
        named = listen_uris(params) or []
        kept = [u for u in named if subs.refusal(u) is None]
        if len(kept) == len(named):
            return request, named
        wanted = params.get("notifications")
        assert isinstance(wanted, dict)  # it named URIs
        uris: list[JSONValue] = list(kept)
        narrowed: JSONObject = {**wanted, "resourceSubscriptions": uris}
        trimmed: JSONObject = {**params, "notifications": narrowed}
        return Request(request.id, request.method, trimmed), kept

    async def _subscriptions_moved(self) -> None:
        """Tell the relay which URIs this server's clients are subscribed to now."""
        relay = self.hub.relay
        if relay is not None:
            uris = {u for c in self.connections for u in c.subscriptions}
            uris.update(u for u, n in self._listening.items() if n > 0)
            await relay.subscriptions.want(self, uris)

    async def _on_notification(self, conn: Connection, note: Notification) -> None:
        await super()._on_notification(conn, note)
        if note.method == "notifications/initialized":
            await self._roots_moved()

    async def _roots_changed(self, conn: Connection) -> None:
        await self._tell_roots_changed()

    async def _roots_moved(self) -> None:
        """Tell the servers when the clients whose roots they get came or went."""
        if self.hub.relay is None:
            return  # the servers get the hub's own roots, which did not change
        now = frozenset(self.roots_sessions())
        if now != self._roots_seen:
            self._roots_seen = now
            await self._tell_roots_changed()

    async def _tell_roots_changed(self) -> None:
        """``notifications/roots/list_changed`` to every legacy server behind the hub."""

        async def tell(client: Client) -> None:
            with suppress(MCPWireError, anyio.BrokenResourceError, anyio.ClosedResourceError):
                await client.send_roots_changed()

        with anyio.move_on_after(_NOTIFY_WITHIN):
            async with anyio.create_task_group() as tg:
                for client in self.hub.clients().values():
                    tg.start_soon(tell, client)

    def _listings(self) -> dict[str, list[JSONValue]]:
        resources: list[JSONValue] = [r.to_json() for r in self.resources.values()]
        return {
            "tools": [t.to_json() for t in self.tools.values()],
            "prompts": [p.to_json() for p in self.prompts.values()],
            "resources": resources + [t.to_json() for t in self.templates],
        }

    # -- the mirrored definitions ---------------------------------------------------------

    def _relayed(
        self, server: str, ctx: Context, call: Callable[[], Awaitable[_T]]
    ) -> Awaitable[_T]:
        """``call()`` to ``server``, with its asks and logs relayed to the client of ``ctx``."""
        relay = self.hub.relay
        return call() if relay is None else relay.forward(server, ctx, call)

    def _tool(self, exposed: HubTool) -> ToolDef:
        listed = exposed.tool
        hub, name = self.hub, exposed.name

        async def forward(**kwargs: Any) -> ToolResult:
            ctx: Context = kwargs.pop(_CTX)

            async def progress(done: float, total: float | None, message: str | None) -> None:
                await ctx.report_progress(done, total, message)

            def call() -> Awaitable[ToolResult]:
                return _forwarded(hub.call_tool(name, kwargs, on_progress=progress))

            return await self._relayed(exposed.server, ctx, call)

        return _tool_def(
            name,
            forward,
            listed.input_schema,
            output_schema=listed.output_schema,
            title=listed.title,
            description=listed.description,
            annotations=listed.annotations,
            icons=listed.icons,
            meta=listed.meta,
        )

    def _use_profile(self) -> ToolDef:
        hub = self.hub
        names = sorted(hub.profiles)
        lines = [
            f"- {n}: servers {', '.join(hub.profiles[n].servers) or '(none)'}"
            + (f" ({hub.profiles[n].description})" if hub.profiles[n].description else "")
            for n in names
        ]
        description = (
            "Switch the set of MCP servers (and so the tools) this hub offers to a named "
            f"profile; an empty name runs every server. In force now: {_now_of(hub)}. "
            "Profiles:\n" + "\n".join(lines)
        )
        schema: JSONObject = {
            "type": "object",
            "properties": {"profile": {"type": "string", "enum": ["", *names]}},
            "required": ["profile"],
        }

        async def use(**kwargs: Any) -> ToolResult:
            kwargs.pop(_CTX)
            wanted = kwargs.get("profile")
            if not isinstance(wanted, str):
                text = "profile must be a profile's name, or empty for every server"
                return ToolResult([{"type": "text", "text": text}], is_error=True)
            try:
                await hub.use_profile(wanted or None)
                await hub.wait_ready(timeout=hub.startup_timeout + 1.0)
            except (MCPWireError, TimeoutError) as exc:
                return ToolResult([{"type": "text", "text": str(exc)}], is_error=True)
            await self.refresh()  # the new tools are callable once this answers
            servers = sorted({t.server for t in hub.tools()})
            text = f"now running {_now_of(hub)}: {len(hub.tools())} tools from " + (
                ", ".join(servers) or "no server"
            )
            return ToolResult([{"type": "text", "text": text}])

        return _tool_def(PROFILE_TOOL, use, schema, description=description)

    def _search_tool(self, definition: dict[str, Any]) -> ToolDef:
        search, name = self.search, definition["name"]
        assert search is not None

        hub = self.hub

        async def run(**kwargs: Any) -> ToolResult:
            ctx: Context = kwargs.pop(_CTX)

            def call() -> Awaitable[ToolResult]:
                return _forwarded(search.call(name, kwargs))

            target = kwargs.get("name")
            if hub.relay is None or name != "call_tool" or not isinstance(target, str):
                return await call()
            try:
                server = hub.resolve(target)[0]
            except HubError:
                return await call()  # it answers what is wrong with the name
            return await self._relayed(server, ctx, call)

        return _tool_def(
            name, run, definition["inputSchema"], description=definition["description"]
        )

    def _prompt(self, exposed: HubPrompt) -> PromptDef:
        hub, name, raw = self.hub, exposed.name, exposed.prompt.raw
        listed = raw.get("arguments")
        arguments = [
            a
            for a in (listed if isinstance(listed, list) else [])
            if isinstance(a, dict) and isinstance(a.get("name"), str)
        ]

        async def get(**kwargs: Any) -> JSONObject:
            ctx: Context = kwargs.pop(_CTX)
            strings = {k: v if isinstance(v, str) else str(v) for k, v in kwargs.items()}
            result = await self._relayed(exposed.server, ctx, lambda: hub.get_prompt(name, strings))
            return result.raw or {"messages": []}

        described = _listed(get, raw)
        return PromptDef(
            name, get, arguments, title=described["title"], description=described["description"],
            icons=described["icons"], meta=described["meta"], context_param=_CTX,
        )  # fmt: skip

    def _resource(self, server: str, resource: Resource) -> ResourceDef:
        hub, uri = self.hub, resource.uri

        async def read(**kwargs: Any) -> list[JSONValue]:
            ctx: Context = kwargs.pop(_CTX)
            got = await self._relayed(server, ctx, lambda: hub.read_resource(uri, server=server))
            return [c.raw for c in got]

        return ResourceDef(uri=uri, size=resource.size, **_listed(read, resource.raw))

    def _completer(self, kind: str, name: str, server: str) -> CompletionDef:
        hub, key = self.hub, "name" if kind == "ref/prompt" else "uri"

        async def complete(argument: str, value: str, context: dict[str, Any]) -> JSONObject:
            given = {k: v if isinstance(v, str) else str(v) for k, v in context.items()}
            try:
                found = await hub.complete(
                    {"type": kind, key: name}, argument, value, given or None, server=server
                )
            except (MCPWireError, TimeoutError):
                return {"values": [], "total": 0, "hasMore": False}
            out: JSONObject = {"values": list(found.values), "hasMore": found.has_more}
            if found.total is not None:
                out["total"] = found.total
            return out

        return CompletionDef(complete, kind, name, None)

    def _template(self, server: str, template: ResourceTemplate) -> TemplateDef:
        hub, parsed = self.hub, UriTemplate(template.uri_template)

        async def read(**variables: Any) -> list[JSONValue]:
            ctx: Context = variables.pop(_CTX)
            uri = parsed.expand(variables)
            got = await self._relayed(server, ctx, lambda: hub.read_resource(uri, server=server))
            return [c.raw for c in got]

        return TemplateDef(template=parsed, **_listed(read, template.raw))


def _now_of(hub: Hub) -> str:
    return f"profile {hub.profile!r}" if hub.profile is not None else "every server"


def _tool_def(name: str, fn: Any, input_schema: JSONObject, **listed: Any) -> ToolDef:
    from ._jsonschema import compile

    # The owning server validates the arguments; here every object is let through.
    return ToolDef(
        name, fn, input_schema, context_param=_CTX, validator=compile(_ACCEPT_ANY), **listed
    )


def _listed(fn: Any, raw: JSONObject) -> dict[str, Any]:
    def text(key: str) -> str | None:
        value = raw.get(key)
        return value if isinstance(value, str) else None

    annotations, icons, meta = raw.get("annotations"), raw.get("icons"), raw.get("_meta")
    return {
        "name": text("name") or "",
        "fn": fn,
        "title": text("title"),
        "description": text("description"),
        "mime_type": text("mimeType"),
        "annotations": annotations if isinstance(annotations, dict) else None,
        "icons": icons if isinstance(icons, list) else None,
        "meta": meta if isinstance(meta, dict) else None,
        "context_param": _CTX,
    }


async def _forwarded(call: Any) -> ToolResult:
    """The result of a forwarded call as it came; what the hub could not do, as an error
    result a model can read; a downstream JSON-RPC error, raised as it came."""
    try:
        result: CallToolResult = await call
    except JSONRPCError:
        raise
    except (MCPWireError, TimeoutError) as exc:
        return ToolResult([{"type": "text", "text": str(exc)}], is_error=True)
    raw = result.raw
    if raw:
        content = raw.get("content")
        meta = raw.get("_meta")
        return ToolResult(
            content if isinstance(content, list) else [],
            raw.get("structuredContent"),
            raw.get("isError") is True,
            meta if isinstance(meta, dict) else None,
        )
    blocks: list[JSONValue] = [
        c.raw or {"type": "text", "text": c.text or ""} for c in result.content
    ]
    return ToolResult(blocks, result.structured, result.is_error, result.meta)
