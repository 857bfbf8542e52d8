"""Making the ``Client`` for one configured server, whatever its transport.

stdio servers get a client whose transport is spawned when the client is
entered; the supervisor hears about the spawned transport (for its stderr tail)
and about a failure to spawn (a missing command cannot be fixed by retrying).
HTTP servers (``url``) are connected through ``Client.http`` when this
installation has it, passing only the options it accepts; without it the
server fails with "HTTP transport not available".
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import anyio.abc

from ._errors import ConnectionClosed, JSONRPCError, MCPWireError
from ._hub_errors import HubError
from ._hub_status import Discovery

if TYPE_CHECKING:
    from ._client import Client
    from ._hub_config import ServerConfig
    from ._oauth import OAuthClient
    from ._transport import Transport
    from .sansio._json import JSONObject

__all__ = ("NoTransport", "chained", "describe", "discover", "listen_for_changes", "make_client")


class NoTransport(HubError):
    """The transport this server needs is not built into this installation."""


def chained(
    first: Callable[[str, JSONObject], Awaitable[None]], then: object
) -> Callable[[str, JSONObject], Awaitable[None]]:
    """A notification callback that runs ``first``, then ``then`` if it is one (the
    ``on_notification`` a user gave in ``client_options``)."""
    if not callable(then):
        return first

    async def both(method: str, params: JSONObject) -> None:
        await first(method, params)
        await then(method, params)

    return both


def make_client(
    config: ServerConfig,
    *,
    startup_timeout: float,
    options: Mapping[str, object],
    auth: OAuthClient | None = None,
    on_notification: Callable[[str, JSONObject], Awaitable[None]],
    on_spawn: Callable[[Transport], None],
    on_spawn_error: Callable[[BaseException], None],
) -> Client:
    """A client for ``config`` (not yet connected). Raises ``NoTransport``."""
    from ._client import Client
    from ._stdio_client import StdioClientTransport

    kwargs: dict[str, Any] = dict(options)
    kwargs.setdefault("request_timeout", config.timeout)
    kwargs.setdefault("probe_timeout", min(10.0, max(startup_timeout / 2, 0.5)))
    kwargs["on_notification"] = chained(on_notification, options.get("on_notification"))
    if config.transport == "stdio":
        assert config.command is not None
        command, args, env, cwd = config.command, config.args, dict(config.env), config.cwd
        inherit = config.inherit_env

        def spawn() -> Transport:
            try:
                made = StdioClientTransport(
                    command, args, env=env or None, inherit_env=inherit, cwd=cwd
                )
            except BaseException as exc:
                on_spawn_error(exc)
                raise
            on_spawn(made)
            return made

        kwargs.setdefault("era_key", ("stdio", command, tuple(args), cwd))
        return Client(spawn, **kwargs)
    factory = getattr(Client, "http", None)
    if factory is None:
        raise NoTransport("HTTP transport not available")
    accepted = _parameters(factory)
    if "**" not in accepted:
        kwargs = {k: v for k, v in kwargs.items() if k in accepted}
    if auth is not None:
        if "auth" not in accepted and "**" not in accepted:
            raise NoTransport("OAuth not available for HTTP servers")
        kwargs["auth"] = auth
    if config.headers and ("headers" in accepted or "**" in accepted):
        kwargs["headers"] = dict(config.headers)
    if "transport" in accepted:
        # http: streamable HTTP, falling back to HTTP+SSE when that is all the server has.
        kwargs["transport"] = "sse" if config.transport == "sse" else "auto"
    client: Client = factory(config.url, **kwargs)
    return client


def _parameters(factory: Callable[..., Any]) -> set[str]:
    """The keyword names ``factory`` accepts; ``"**"`` when it takes any."""
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return {"**"}
    names = set(params)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        names.add("**")
    return names


async def discover(client: Client, record: Callable[..., None]) -> Discovery:
    """What a connected server offers: its tools, resources, templates and
    prompts (each listed only when its capability is declared; a listing that
    fails is ``record``-ed as a warning and taken as empty)."""
    caps = client.server_capabilities
    found = Discovery(
        instructions=client.instructions,
        server_info=dict(client.server_info),
        protocol_version=client.protocol_version,
    )
    listings: list[tuple[str, str, Callable[..., Any]]] = [
        ("tools", "tools", client.list_tools),
        ("resources", "resources", client.list_resources),
        ("resource templates", "resources", client.list_resource_templates),
        ("prompts", "prompts", client.list_prompts),
    ]
    results: list[list[Any]] = []
    for what, capability, fetch in listings:
        if capability not in caps:
            results.append([])
            continue
        try:
            results.append(list(await fetch(cache=False)))
        except JSONRPCError as exc:
            record(f"listing {what} failed: {exc}", level="warning")
            results.append([])
    found.tools, found.resources, found.templates, found.prompts = results
    return found


class ListenOwner(Protocol):
    """What ``listen_for_changes`` reports to (the server's supervisor)."""

    def record(self, message: str, *, level: str = ...) -> None: ...

    def want_refresh(self) -> None: ...


#: Seconds before a listen that ended is opened again, doubling while listens
#: keep failing or ending within ``LISTEN_PAUSE_MAX``, up to that.
LISTEN_PAUSE = 1.0
LISTEN_PAUSE_MAX = 30.0


class Relisten:
    """The pauses before a listen that ended is opened again (every 2026-07-28
    listen the hub holds: list changes, clients' subscriptions)."""

    def __init__(self) -> None:
        self._pause = LISTEN_PAUSE
        self._opened: float | None = None

    def opened(self) -> None:
        """The listen was acknowledged."""
        self._opened = anyio.current_time()

    def ended(self) -> tuple[float, bool]:
        """The listen ended (or could not be opened): the pause before the next, and
        whether this end starts a series (one that held ``LISTEN_PAUSE_MAX`` does)."""
        opened, self._opened = self._opened, None
        if opened is not None and anyio.current_time() - opened >= LISTEN_PAUSE_MAX:
            self._pause = LISTEN_PAUSE
        pause = self._pause
        self._pause = min(pause * 2, LISTEN_PAUSE_MAX)
        return pause, pause == LISTEN_PAUSE


async def listen_for_changes(
    client: Client,
    owner: ListenOwner,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Modern era: keep a ``subscriptions/listen`` open for list changes.

    Reports started once the server first acknowledged (or refused) it; a
    server that refuses it is not asked again. The notifications also reach the
    client's ``on_notification`` (the supervisor's, which asks for a refresh);
    the stream only has to be open and drained.

    A 2026-07-28 stream does not resume: a listen that ends while the connection
    lives (the server restarted behind a stateless endpoint, a proxy cut the
    stream) may have missed changes, and the server may be gone. It is opened
    again after ``LISTEN_PAUSE`` (doubling while that fails), and then the owner
    lists everything again: once listening, so that no change slips between;
    and when it cannot listen, which finds a server it cannot reach lost. The
    pause starts over only after a listen that held ``LISTEN_PAUSE_MAX``.
    """
    caps = client.server_capabilities

    def changes(kind: str) -> bool:
        cap = caps.get(kind)
        return isinstance(cap, dict) and cap.get("listChanged") is True

    tools, prompts, resources = changes("tools"), changes("prompts"), changes("resources")
    if not (tools or prompts or resources):
        task_status.started()
        return
    started = again = False
    relisten = Relisten()
    while True:
        try:
            async with client.listen(tools=tools, prompts=prompts, resources=resources) as sub:
                if not started:
                    task_status.started()
                    started = True
                if again:
                    owner.want_refresh()  # what changed while nothing listened
                relisten.opened()
                async for _ in sub:
                    pass
            why = "the server ended it"
        except MCPWireError as exc:
            if client.session.closed:
                break
            if not started:
                owner.record(f"cannot listen for list changes: {exc}", level="warning")
                break
            why = describe(exc)
            if again:
                owner.want_refresh()  # the server may be gone
        if client.session.closed:
            break
        pause, first = relisten.ended()
        if first:
            owner.record(f"the list-change listen ended ({why}): listening again", level="warning")
        again = True
        await anyio.sleep(pause)
    if not started:
        task_status.started()


def describe(exc: BaseException) -> str:
    """An exception as one line for a server's error history."""
    if isinstance(exc, ConnectionClosed):
        return exc.reason
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
