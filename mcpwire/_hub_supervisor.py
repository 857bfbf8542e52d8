"""One supervisor per server: connect, discover, watch, restart with backoff.

Theory of operation
-------------------
Each server is an actor: one task (``Supervisor.run``) owns its ``Client``,
entering and leaving it, so no connection is ever closed from a task that did
not open it. Everybody else talks to the actor through flags and a wake-up
event, and through the client's session, which is safe to use from any task.

An *attempt* is one connection: wait for a slot of the hub's start limiter
(the time spent queueing does not count against the server), then connect,
subscribe to list changes (modern era), list tools, resources, templates and
prompts, give the slot back, publish the discovery, and wait until the
connection ends or a refresh is due (a ``list_changed`` notification).

A live ``Client`` is never cancelled from outside (a cancelled client task
group would be left open). Its whole life runs in a shielded scope, and it is
ended cooperatively: a watchdog closes the session when the startup deadline
passes or a restart or stop is asked for during startup (the pending requests
fail at once and the client unwinds normally); once ready, the actor is poked
and leaves ``async with client`` by itself. A call that leaving cuts off is
told why: the server was restarted, stopped or disabled (``_hub_leave``).

The loop around attempts::

    disabled ──────────────────────────────► wait for a config change or restart()
    lazy, listing cached (first time only) ► IDLE, wait for a call, restart() or stop
    ready, unused for idleTimeout ─────────► IDLE (stopped), wait for a call, restart() or stop
    attempt ─► ready ─► connection lost ───► RESTARTING, backoff, attempt
           └─► could not start ────────────► FAILED, backoff, attempt (RESTARTING)
           └─► could not spawn at all ─────► FAILED, wait (retrying cannot help)
    5 losses/failures within 60 s ─────────► FAILED "crash loop", wait

Backoff doubles from ``initial_backoff`` up to ``max_backoff`` with the number
of losses in the crash-loop window, with +-``jitter`` so servers that fail
together do not retry in lockstep. A call that finds the connection dead asks
for a reconnection *now* (``hurry``): the backoff is skipped, once, and the
call waits for that one attempt. A manual ``restart()`` also clears a crash-loop
suspension.

A server with ``idleTimeout`` is stopped once no call has used it for that
long (calls in flight count as use, to their end): the actor leaves the
connection as for a restart, and the server is ``idle`` with its listing still
exposed, until a call (or ``restart()``) starts it again. A call that arrives
while it is being stopped waits for the next start, as after a lost connection.
Stopping an unused server is not a crash: no backoff, no restart counted.

Every error goes into the server's history (last 100, each cut to
1,000 characters) with its time and, for a child process, its stderr tail.
"""

from __future__ import annotations

import collections
import logging
import math
import time
from collections.abc import Awaitable, Callable
from enum import Enum
from typing import TYPE_CHECKING, TypeVar

import anyio
import anyio.abc

from ._errors import ConnectionClosed, JSONRPCError
from ._hub_config import ServerConfig
from ._hub_connect import NoTransport, describe, discover, listen_for_changes, make_client
from ._hub_errors import HubError, ToolCallRefused
from ._hub_events import ServerState
from ._hub_leave import Leaving, watchdog
from ._hub_status import Discovery, ErrorEntry, ServerStatus
from ._session import unwrap_group

if TYPE_CHECKING:
    from ._client import Client
    from ._hub import Hub
    from ._transport import Transport
    from .sansio._json import JSONObject

__all__ = ("Supervisor",)

_T = TypeVar("_T")
logger = logging.getLogger("mcpwire.hub")

#: Error history kept per server (each entry cut to ``MAX_ERROR_LENGTH``).
MAX_ERRORS = 100
_WAITING = (None, ServerState.STARTING)
_REFRESH_ON = frozenset(
    f"notifications/{kind}/list_changed" for kind in ("tools", "resources", "prompts")
)


class _Outcome(Enum):
    RESTART = "restart"  # restart() or a config change: go again now
    LOST = "lost"  # was ready, connection ended
    START_FAILED = "start failed"  # retry with backoff
    BLOCKED = "blocked"  # retrying cannot help (spawn failure, no transport)
    IDLE = "idle"  # stopped after idleTimeout unused: start on the next call


class Supervisor:
    """The actor for one server; created and driven by ``Hub``."""

    def __init__(self, hub: Hub, config: ServerConfig) -> None:
        self.hub = hub
        self.config = config
        self.name = config.name
        self.state: ServerState | None = None
        self.errors: collections.deque[ErrorEntry] = collections.deque(maxlen=MAX_ERRORS)
        self.client: Client | None = None
        self.pid: int | None = None
        self.discovery: Discovery | None = None
        self.restarts = 0
        self.reason = ""
        #: Why this server can never run under this hub (a name it cannot expose).
        self.invalid: str | None = None
        #: Attempts that settled (ready or failed, not cut short), and those that failed.
        self.settled = 0
        self.failures = 0
        self.done = anyio.Event()
        self.attempting = False
        self._crashes: collections.deque[float] = collections.deque()
        self._suspended = False
        self._blocked = False
        self._stopping = False
        self._restart_requested = False
        self.leaving = Leaving(self.name)
        #: Why a call found the server unreachable (ending a connection still open).
        self._unreachable: ConnectionClosed | None = None
        self._hurry = False
        self._refresh = False
        self._ready = False
        self._was_idle = False
        self._waking = False  # starting from idle (``exposed``) until that attempt ends
        #: Calls using the connection now, when the last one ended, and whether
        #: the actor is leaving the connection because it went unused.
        self._busy = 0
        self._last_used = 0.0
        self._idling = False
        self._timed_out = False
        self._spawn_error: BaseException | None = None
        self._spawned: Transport | None = None
        self._queue_scope: anyio.CancelScope | None = None
        self._listing_scope: anyio.CancelScope | None = None
        self._abort = anyio.Event()
        self._wake = anyio.Event()
        self._changed = anyio.Event()
        self._poke = anyio.Event()

    # -- what others call ------------------------------------------------------------

    def status(self, tools: int) -> ServerStatus:
        return ServerStatus.of(self, tools)

    @property
    def exposed(self) -> bool:
        """Whether the hub exposes what this server offers: ready, idle, or woken
        from idle (its tools, shown while it was stopped, stay while it starts)."""
        return self.state is not None and (self.state.exposed or self._waking)

    def live_client(self) -> Client | None:
        """The connection calls may use now (not one that is being replaced)."""
        client = self.client
        if (
            self.state is ServerState.READY
            and client is not None
            and not client.session.closed
            and not (self._restart_requested or self._stopping or self._idling)
        ):
            return client
        return None

    async def connection(self) -> Client:
        """The live client, reconnecting once (without backoff) if the connection is dead."""
        client = self.live_client()
        if client is not None:
            return client
        self._check_usable()
        failures = self.failures
        self.hurry()
        with anyio.move_on_after(self.startup_timeout + 1.0):
            while True:
                changed = self._changed
                client = self.live_client()
                if client is not None:
                    return client
                self._check_usable()
                if self.failures > failures:
                    break
                await changed.wait()
        last = self.errors[-1].message if self.errors else "no connection"
        raise HubError(f"server {self.name!r} is not available ({self.state}): {last}")

    async def call(self, use: Callable[[Client], Awaitable[_T]]) -> _T:
        """``use`` the live client. An HTTP server it cannot reach ends the connection
        (a bare client would serve on): it is lost, and reconnected with backoff, as
        a process that died (pain point #16). The call is use (``idleTimeout``)."""
        self._busy += 1
        try:
            client = await self.connection()
            try:
                return await use(client)
            except ConnectionClosed as exc:
                if not self.leaving.left(client):  # else the error says why the hub left it
                    await self._lose(client, exc)
                raise
        finally:
            self._busy -= 1
            self._last_used = anyio.current_time()
            if self.config.idle_timeout is not None:
                self._poke.set()  # the actor's idle deadline moved

    async def _lose(self, client: Client, exc: ConnectionClosed) -> None:
        if client is self.client and not client.session.closed:
            self._unreachable = exc
            await client.session.close()

    async def restart(self) -> ServerState:
        """Restart now (clearing a crash-loop suspension); returns the state it settles in."""
        self._check_enabled()
        settled = self.settled
        self.restart_soon()
        with anyio.move_on_after(self.startup_timeout + 5.0):
            while self.settled == settled and not self._stopping:
                await self._changed.wait()
        assert self.state is not None
        return self.state

    def restart_soon(self, why: str = "restarted") -> None:
        """Restart without waiting, clearing a crash-loop suspension; ``why`` is
        what calls this cuts off are told the server was."""
        self.leaving.asked = why
        self._suspended = self._blocked = False
        self._crashes.clear()
        self._request_restart()

    def update(self, config: ServerConfig) -> bool:
        """Take a new config for this server; returns whether it restarts because of it."""
        old, self.config = self.config, config
        if old.connection_key() == config.connection_key() and old.disabled == config.disabled:
            if old.idle_timeout != config.idle_timeout:
                self._poke.set()
            return False
        why = "restarted (its config changed)"
        self.restart_soon(f"disabled ({config.disabled_reason})" if config.disabled else why)
        return True

    async def stop(self, why: str = "stopped (the hub closed)") -> None:
        """Close the connection (and its child process) and end the actor."""
        self.leaving.asked = why
        self._stopping = True
        self._interrupt()
        await self.done.wait()

    def hurry(self) -> None:
        """Skip the backoff before the next attempt (a caller is waiting for it)."""
        self._hurry = True
        self._nudge()

    @property
    def settling(self) -> bool:
        """Connecting (not in a backoff), or not yet in step with its config's ``disabled``."""
        if self.state in _WAITING or (self.state is ServerState.RESTARTING and self.attempting):
            return True
        stuck = self.invalid or self.state is ServerState.STOPPED  # these never move
        return not stuck and (self.state is ServerState.DISABLED) != self.config.disabled

    @property
    def startup_timeout(self) -> float:
        return self.config.startup_timeout or self.hub.startup_timeout

    def _check_enabled(self) -> None:
        if self.config.disabled:
            raise ToolCallRefused(
                f"server {self.name!r} is disabled ({self.config.disabled_reason})"
            )
        if self._stopping or self.state is ServerState.STOPPED:
            raise HubError(f"server {self.name!r} is stopped")

    def _check_usable(self) -> None:
        self._check_enabled()
        if self._suspended or self._blocked or self.invalid:
            last = self.errors[-1].message if self.errors else self.reason
            raise HubError(
                f"server {self.name!r} is {self.state} ({self.reason}): {last}; "
                f"fix it and call restart({self.name!r})"
            )

    def _request_restart(self) -> None:
        self._restart_requested = True
        self._interrupt()

    def _interrupt(self) -> None:
        """End what the actor is doing: queueing, starting (closes the session), serving
        (a listing the server leaves unanswered included)."""
        self._abort.set()
        for scope in (self._queue_scope, self._listing_scope):
            if scope is not None:
                scope.cancel()
        self._nudge()

    def _nudge(self) -> None:
        self._wake.set()
        self._poke.set()

    # -- the actor -------------------------------------------------------------------
    #
    # A live Client is never cancelled from outside: its session is closed
    # instead (startup deadline, restart, stop) or the actor is poked and leaves
    # ``async with client`` by itself. The client's whole life runs in a
    # shielded scope, so cancelling the hub's task group cannot reach into it.

    async def run(self) -> None:
        try:
            await self._loop()
        except Exception as exc:  # a bug here must not take the hub down
            logger.exception("supervisor of %r failed", self.name)
            self.record(f"internal error: {exc!r}")
        finally:
            self.client = None
            self.pid = None
            self._set(ServerState.STOPPED)
            self.done.set()

    async def _loop(self) -> None:
        first = True
        while not self._stopping:
            if self.invalid:
                self.reason = self.invalid
                self.record(self.invalid)
                self._set(ServerState.FAILED, self.invalid)
                await self._sleep(math.inf)
                return
            if self.config.disabled or self._suspended or self._blocked:
                if self.config.disabled:
                    self.reason = self.config.disabled_reason
                    self._set(ServerState.DISABLED)
                    self.discovery = None
                    self.hub._forget(self)
                    first = True  # enabled again, it starts afresh
                # Nothing to hurry or restart until restart() or a new config clears this.
                self._restart_requested = self._hurry = False
                await self._sleep(math.inf)
                continue
            if first and self._idle():
                await self._sleep(math.inf)  # until a call needs it, a restart or a stop
                continue
            self.reason = ""
            self.attempting = True  # until the attempt ends (not a backoff: Hub.wait_ready)
            self._waking = self.state is ServerState.IDLE
            self._set(ServerState.STARTING if first else ServerState.RESTARTING)
            first = False
            outcome, error, tail = await self._attempt()
            self.attempting = self._waking = False
            if self._stopping:
                return
            if outcome is _Outcome.RESTART:
                self.restarts += 0 if self.config.disabled else 1
                continue
            if outcome is _Outcome.IDLE:
                first = self._was_idle = True  # the next start is a start, not a restart
                self.reason = f"stopped after {self.config.idle_timeout:g} s unused"
                self._set(ServerState.IDLE)
                await self._sleep(math.inf)  # until a call needs it, a restart or a stop
                continue
            assert error is not None
            self.record(error, stderr_tail=tail)
            if outcome is not _Outcome.LOST:
                self.failures += 1  # attempts that did not reach ready (waiters compare)
            if outcome is _Outcome.BLOCKED:
                self._blocked = True
                self.reason = "could not start"
                self._set(ServerState.FAILED, error)
                continue
            policy = self.hub.restart_policy
            count = policy.count_crash(self._crashes, time.monotonic())
            if count >= policy.crash_loop_count:
                self._suspended = True
                window = policy.crash_loop_window
                self.reason = f"crash loop: {count} failures within {window:g} s"
                self.record(f"suspended after a crash loop ({count} failures within {window:g} s)")
                self._set(ServerState.FAILED, error)
                continue
            if outcome is _Outcome.LOST:
                self._set(ServerState.RESTARTING, error)
            else:
                self.reason = "could not start; retrying"
                self._set(ServerState.FAILED, error)
            self.restarts += 1
            await self._sleep(policy.backoff(count))

    def _idle(self) -> bool:
        """A lazy server whose listing is cached waits for its first use, once."""
        if self._was_idle or not self.config.lazy or self._hurry or self._restart_requested:
            return False
        cached = self.hub.cached(self.config)
        if cached is None:
            return False
        self._was_idle = True
        self.discovery = cached
        self.hub._discovered(self, fresh=False)
        self._set(ServerState.IDLE)
        return True

    async def _sleep(self, seconds: float) -> None:
        """Sleep until woken (restart, config change, hurry, stop) or ``seconds`` pass."""
        self._wake = anyio.Event()
        if self._hurry or self._restart_requested or self._stopping:
            return
        with anyio.move_on_after(seconds):
            await self._wake.wait()

    async def _attempt(self) -> tuple[_Outcome, str | None, str]:
        """One connection, start to end; returns how it ended, the error, the stderr tail."""
        self._restart_requested = self._hurry = self._ready = self._timed_out = False
        self._idling = False
        self._spawn_error = self._spawned = self._unreachable = None
        self._abort = anyio.Event()
        limiter = self.hub._limiter
        holding = False
        with anyio.CancelScope() as queue:
            self._queue_scope = queue
            if not self._stopping:
                await limiter.acquire()
                holding = True
        self._queue_scope = None
        if not holding:
            return _Outcome.RESTART, None, ""
        startup = self.startup_timeout
        error: BaseException | None = None
        lost: ConnectionClosed | None = None
        try:
            async with anyio.create_task_group() as tg:
                with anyio.CancelScope(shield=True):
                    try:
                        client = self._make_client()
                        tg.start_soon(watchdog, self, client, startup)
                        async with client, anyio.create_task_group() as connection:
                            self.client = client
                            self.pid = getattr(client.transport, "pid", None)
                            if client.era == "modern":
                                # Subscribed before listing, so no change slips between.
                                await connection.start(listen_for_changes, client, self)
                            discovery = await discover(client, self.record)
                            limiter.release()
                            holding = False
                            self._ready = True
                            tg.cancel_scope.cancel()  # the watchdog's job is done
                            if not (self._restart_requested or self._stopping):
                                # Registered before it is exposed: its tools come
                                # back in one ToolsChanged (``_hub_registry``).
                                self.discovery = discovery
                                self.hub._discovered(self)
                                self.settled += 1
                                self._set(ServerState.READY)
                                self._last_used = anyio.current_time()
                                await self._serve(client)
                                lost = self._unreachable or client.session.close_reason
                                if lost is None:  # leaving on purpose (``_hub_leave``)
                                    await self.leaving.leave(client, self._leaving_why())
                            connection.cancel_scope.cancel()
                    except Exception as exc:
                        error = unwrap_group(exc)
                tg.cancel_scope.cancel()
        finally:
            if holding:
                limiter.release()
            self.client = None
            self.pid = None
        return self._outcome(error, lost, startup)

    def _outcome(
        self, error: BaseException | None, lost: ConnectionClosed | None, startup: float
    ) -> tuple[_Outcome, str | None, str]:
        if self._restart_requested or self._stopping:
            # Cut short, not settled: restart() waits for the attempt after this one.
            return _Outcome.RESTART, None, ""
        if self._idling:
            return _Outcome.IDLE, None, ""
        if not self._ready:
            self.settled += 1
        stderr = getattr(self._spawned, "stderr", None)
        tail: str = stderr.text() if stderr is not None else ""
        if isinstance(error, ConnectionClosed) and error.stderr_tail:
            tail = error.stderr_tail
        if self._spawn_error is not None:
            return _Outcome.BLOCKED, describe(self._spawn_error), ""
        if isinstance(error, NoTransport):
            return _Outcome.BLOCKED, str(error), ""
        if self._ready:
            reason = lost or error
            text = describe(reason) if reason is not None else "the connection ended"
            if isinstance(reason, ConnectionClosed) and reason.stderr_tail:
                tail = reason.stderr_tail
            return _Outcome.LOST, f"connection lost: {text}", tail
        if self._timed_out:
            return _Outcome.START_FAILED, f"startup timed out after {startup:g} s", tail
        text = describe(error) if error is not None else "unknown error"
        return _Outcome.START_FAILED, f"could not start: {text}", tail

    async def _serve(self, client: Client) -> None:
        """Wait until the connection ends or the actor is told to leave; refresh on request."""

        async def watch_closed() -> None:
            await client.session.wait_closed()
            self._poke.set()

        def leaving() -> bool:
            return (
                client.session.closed or self._restart_requested or self._stopping or self._idling
            )

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch_closed)
            while not leaving():
                self._poke = anyio.Event()
                if self._refresh:
                    self._refresh = False
                    # A restart or stop ends a listing the server leaves unanswered.
                    scope = self._listing_scope = anyio.CancelScope()
                    try:
                        with scope:
                            found = await discover(client, self.record)
                    except (ConnectionClosed, JSONRPCError, TimeoutError) as exc:
                        if isinstance(exc, ConnectionClosed):
                            await self._lose(client, exc)  # as ``call`` does
                        if not leaving():
                            self.record(f"refresh failed: {describe(exc)}", level="warning")
                        continue
                    finally:
                        self._listing_scope = None
                    if not scope.cancelled_caught:
                        self.discovery = found
                        self.hub._discovered(self)
                    continue
                if leaving():
                    break
                wait = self._until_idle()
                if wait <= 0:
                    self._idling = True
                    break
                with anyio.move_on_after(wait):
                    await self._poke.wait()
            tg.cancel_scope.cancel()

    def _leaving_why(self) -> str:
        if self._restart_requested or self._stopping:
            return self.leaving.asked
        return f"stopped after {self.config.idle_timeout:g} s unused"

    def _until_idle(self) -> float:
        """Seconds until this server, unused, is stopped (``idleTimeout``; inf: never)."""
        limit = self.config.idle_timeout
        if limit is None or self._busy:
            return math.inf
        return self._last_used + limit - anyio.current_time()

    def _make_client(self) -> Client:
        def spawned(transport: Transport) -> None:
            self._spawned = transport
            self.pid = getattr(transport, "pid", None)

        def spawn_failed(exc: BaseException) -> None:
            self._spawn_error = exc

        return make_client(
            self.config,
            startup_timeout=self.startup_timeout,
            options=self.hub.options_for(self.name),
            auth=self.hub.oauth.client_for(self.config),
            on_notification=self._on_notification,
            on_spawn=spawned,
            on_spawn_error=spawn_failed,
        )

    async def _on_notification(self, method: str, params: JSONObject) -> None:
        if method in _REFRESH_ON:
            self.want_refresh()

    def want_refresh(self) -> None:
        """List everything again soon (which finds a server it cannot reach lost)."""
        self._refresh = True
        self._poke.set()

    # -- bookkeeping ----------------------------------------------------------------

    def record(self, message: str, *, level: str = "error", stderr_tail: str = "") -> None:
        self.errors.append(ErrorEntry.cut(message, level, stderr_tail))
        log = logger.warning if level != "error" else logger.error
        log("MCP server %r: %s", self.name, message)

    def _set(self, state: ServerState, error: str | None = None) -> None:
        old, self.state = self.state, state
        changed, self._changed = self._changed, anyio.Event()
        changed.set()
        if old is not state or error is not None:
            self.hub._state_changed(self, old, state, error)
