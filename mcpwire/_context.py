"""What a tool, resource or prompt handler can do while it runs: ``Context``.

Theory of operation
-------------------
One ``Context`` serves a handler in either era. Reporting progress and logging
are notifications on the request's own connection in both. Asking the client
for something (elicitation, sampling, roots) differs:

* legacy: a server->client JSON-RPC request on the same connection, awaited
  in place (``Session.request``);
* modern (2026-07-28): servers may not send requests, so the ask becomes a
  multi-round-trip result. The first ``await ctx.elicit(...)`` that has no
  answer yet raises ``InputRequired``; the server turns it into an
  ``InputRequiredResult`` whose ``inputRequests`` holds the ask under a
  positional key (``ask-0``, ``ask-1``, ...) and whose ``requestState`` carries
  every answer gathered so far, sealed with HMAC-SHA256. When the client
  retries with ``inputResponses``, the handler runs again from the top and
  each ask, in the same order, returns its recorded answer. Handlers must
  therefore ask in a deterministic order and keep side effects after the
  asks: the same contract every stateless multi-round protocol imposes.

``requestState`` is attacker-controlled input (mrtr.mdx): it is bound to the
method, the request's arguments and an expiry, and any mismatch or a bad MAC
is refused with -32602 before the handler runs.
"""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING

import anyio

from ._errors import JSONRPCError, MCPWireError
from ._versions import LEGACY_TASKS_VERSION, LOG_LEVELS, at_least
from .sansio import _codec
from .sansio._b64url import b64url_decode, b64url_encode
from .sansio._json import JSONObject, JSONValue
from .sansio._messages import ErrorCode, RequestId

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from ._auth_tokens import AccessToken
    from ._methods import Call
    from ._server import Connection, Server
    from ._session import RequestContext
    from ._task_legacy import LegacyTaskRun
    from ._task_runs import TaskRun

__all__ = (
    "CapabilityMissing",
    "ClientAnswerError",
    "Context",
    "InputRequired",
    "StateSealer",
    "URLElicitationRequired",
    "with_input_rounds",
)

#: Seconds a sealed requestState stays valid (an MRTR round trip includes a human answering).
DEFAULT_STATE_TTL = 15 * 60


class InputRequired(Exception):
    """Raised by an ask in the modern era when answers are not known yet.

    ``requests`` maps each input key to its request in wire form
    (``{"method": ..., "params": ...}``); they all go out in one
    ``InputRequiredResult``.
    """

    def __init__(self, requests: dict[str, JSONValue]) -> None:
        super().__init__("input required: " + ", ".join(sorted(requests)))
        self.requests = requests


class URLElicitationRequired(JSONRPCError):
    """Raise from a handler when the user must first complete URL elicitations.

    2025-11-25 only: the request fails with -32042 and ``data.elicitations``
    (each ``{"mode": "url", "elicitationId", "url", "message"}``); the client
    retries after the user is done. The modern era has no such error: use
    ``await ctx.elicit_url(...)`` there, which becomes a multi-round-trip ask.
    """

    def __init__(
        self,
        elicitations: list[JSONValue],
        message: str = "This request requires more information.",
    ) -> None:
        super().__init__(
            ErrorCode.URL_ELICITATION_REQUIRED, message, {"elicitations": elicitations}
        )


class ClientAnswerError(JSONRPCError):
    """The client answered a request a handler made (``ctx.elicit``, ``ctx.sample``,
    ``ctx.list_roots``, ``ctx.ask_all``; legacy era) with a JSON-RPC error.

    ``code``, ``message`` and ``data`` are the client's; ``method`` names the
    request it answered. It is the peer's error for the server's own request,
    not the server's error for the client's request, so the server never
    relays it as one: raised out of a tool it makes the call's result a tool
    execution error (``isError: true``, tools.mdx "Error Handling"); out of a
    prompt or resource handler, -32603 saying what the client answered. A
    handler may catch it like any ``JSONRPCError``; one that means to answer
    the client's request with a JSON-RPC error raises a ``JSONRPCError`` of
    its own.
    """

    def __init__(self, method: str, answer: JSONRPCError) -> None:
        super().__init__(answer.code, answer.message, answer.data)
        self.method = method
        self.args = (f"the client answered {method} with error {answer.code}: {answer.message}",)


class CapabilityMissing(MCPWireError):
    """The client did not declare the capability an ask needs."""

    def __init__(self, capability: JSONObject, what: str) -> None:
        super().__init__(f"the client did not declare the {what} capability")
        self.capability = capability


class StateSealer:
    """Seals and opens ``requestState`` tokens (HMAC-SHA256, expiring).

    Give every server process of one deployment the same ``secret`` so that a
    retry may land on any of them; by default each process draws its own.
    """

    def __init__(self, secret: bytes | None = None, ttl: float = DEFAULT_STATE_TTL) -> None:
        self._key = secret if secret is not None else os.urandom(32)
        self.ttl = ttl

    def seal(self, payload: JSONObject) -> str:
        body = dict(payload)
        body["exp"] = int(time.time() + self.ttl)
        raw = _codec.dumps(body)
        mac = _mac(self._key, raw)
        return "v1." + b64url_encode(raw) + "." + b64url_encode(mac)

    def open(self, token: str) -> JSONObject:
        """The payload of a token this sealer made; raises ``JSONRPCError`` (-32602) otherwise."""
        parts = token.split(".")
        if len(parts) != 3 or parts[0] != "v1":
            raise _bad_state("malformed")
        try:
            raw = b64url_decode(parts[1])
            mac = b64url_decode(parts[2])
        except ValueError:
            raise _bad_state("malformed") from None
        import hmac

        if not hmac.compare_digest(mac, _mac(self._key, raw)):
            raise _bad_state("its signature does not match")
        try:
            body = _codec.loads(raw)
        except _codec.CodecError:
            raise _bad_state("malformed") from None
        if not isinstance(body, dict):
            raise _bad_state("malformed")
        exp = body.get("exp")
        if not isinstance(exp, int) or exp < time.time():
            raise _bad_state("it has expired")
        return body


# hashlib and hmac load OpenSSL's digests (about 1 MB resident); a server that
# never seals a requestState (stdio, legacy era) never pays for them.
def _mac(key: bytes, raw: bytes) -> bytes:
    import hashlib
    import hmac

    return hmac.new(key, raw, hashlib.sha256).digest()


def _bad_state(why: str) -> JSONRPCError:
    return JSONRPCError(ErrorCode.INVALID_PARAMS, f"Invalid requestState: {why}")


def request_digest(method: str, params: JSONObject) -> str:
    """A digest of what a retry must repeat unchanged (method and arguments)."""
    subject = {
        k: v for k, v in params.items() if k not in ("_meta", "inputResponses", "requestState")
    }
    raw = _codec.dumps({"m": method, "p": subject})
    import hashlib

    return hashlib.sha256(raw).hexdigest()[:32]


async def with_input_rounds(
    call: Call, handler: Callable[[Call], Awaitable[JSONObject]]
) -> JSONObject:
    """Run an MRTR-capable handler, turning an unanswered ask into InputRequiredResult."""
    params = call.params
    state = params.get("requestState")
    responses = params.get("inputResponses")
    answers: dict[str, JSONValue] = {}
    if state is not None:
        if not isinstance(state, str):
            raise JSONRPCError(ErrorCode.INVALID_PARAMS, "requestState must be a string")
        payload = call.server.sealer.open(state)
        if payload.get("d") != request_digest(call.request.method, params):
            raise _bad_state("it belongs to a different request")
        earlier = payload.get("a")
        if isinstance(earlier, dict):
            answers.update(earlier)
    if responses is not None:
        if not isinstance(responses, dict):
            raise JSONRPCError(ErrorCode.INVALID_PARAMS, "inputResponses must be an object")
        answers.update(responses)
    call.answers = answers
    try:
        return await handler(call)
    except InputRequired as ask:
        digest = request_digest(call.request.method, params)
        sealed = call.server.sealer.seal({"d": digest, "a": answers})
        return {
            "resultType": "input_required",
            "inputRequests": ask.requests,
            "requestState": sealed,
        }


def _capability_for(method: str, params: JSONObject | None) -> tuple[JSONObject, str, str | None]:
    """The client capability an ask needs: (capability, name for errors, elicitation mode)."""
    if method == "elicitation/create":
        mode = params.get("mode", "form") if params else "form"
        if mode == "url":
            return {"elicitation": {"url": {}}}, "URL elicitation", "url"
        return {"elicitation": {}}, "elicitation", "form"
    if method == "sampling/createMessage":
        return {"sampling": {}}, "sampling", None
    if method == "roots/list":
        return {"roots": {}}, "roots", None
    return {}, method, None


class Context:
    """Passed to handlers that declare a parameter annotated ``Context``."""

    def __init__(
        self,
        server: Server,
        connection: Connection,
        rctx: RequestContext,
        *,
        era: str,
        protocol_version: str,
        client_capabilities: JSONObject,
        client_info: JSONObject | None,
        log_level: str | None,
        answers: dict[str, JSONValue] | None = None,
    ) -> None:
        self.server = server
        self.connection = connection
        self._rctx = rctx
        #: ``"legacy"`` or ``"modern"``.
        self.era = era
        self.protocol_version = protocol_version
        self.client_capabilities = client_capabilities
        self.client_info = client_info
        self._log_threshold = LOG_LEVELS.index(log_level) if log_level in LOG_LEVELS else None
        self._answers: dict[str, JSONValue] = answers or {}
        self._asks = 0
        #: Set by the tasks extension for a tools/call that may run as a task.
        self.task_run: TaskRun | None = None
        #: Set for a 2025-11-25 task-augmented tools/call (``_task_legacy``).
        self.legacy_task: LegacyTaskRun | None = None

    # -- the tasks extension (SEP-2663) ---------------------------------------------

    @property
    def _in_task(self) -> bool:
        return self.task_run is not None and self.task_run.task is not None

    @property
    def task_id(self) -> str | None:
        """The id of the task this call runs as, once it is one (either revision's tasks)."""
        if self.legacy_task is not None:
            return self.legacy_task.task.task_id
        task = self.task_run.task if self.task_run is not None else None
        return task.task_id if task is not None else None

    async def start_task(self) -> bool:
        """Continue as a task: the client gets a ``CreateTaskResult`` now (tasks extension).

        For tools registered with ``task_start="manual"``: asks made before are
        multi-round-trip asks of the request; after, they park the task
        (``input_required``) until ``tasks/update`` answers. Returns False, and
        the call simply goes on synchronously, when it cannot be a task (the
        legacy era, a tool without task support, a request that did not
        declare the extension, an optional task while the store is full).
        """
        if self.task_run is None:
            return False
        return await self.task_run.start()

    # -- facts -----------------------------------------------------------------

    @property
    def auth(self) -> AccessToken | None:
        """The verified access token of this request (HTTP with ``auth=``), else None."""
        from ._auth_tokens import current_auth  # not loaded by servers that never ask

        return current_auth()

    @property
    def request_id(self) -> RequestId:
        return self._rctx.request_id

    @property
    def method(self) -> str:
        return self._rctx.request.method

    @property
    def cancelled(self) -> bool:
        """True once the client cancelled this request (or, as a task, the task)."""
        if self.task_run is not None and self.task_run.task is not None:
            return self.task_run.cancelled
        if self.legacy_task is not None:
            return self.legacy_task.task.status == "cancelled"
        return self._rctx.cancelled

    def check_cancelled(self) -> None:
        """Raise the backend's cancellation exception if the request was cancelled."""
        if self.cancelled:
            raise anyio.get_cancelled_exc_class()()

    # -- notifications ---------------------------------------------------------

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send progress if the client asked for it (a progress token was given).

        In a task, where notifications are not supported (SEP-2663), the
        message becomes the task's ``statusMessage`` instead.
        """
        if self.task_run is not None and self.task_run.task is not None:
            if message is not None:
                await self.task_run.note(message)
            return
        if self.legacy_task is not None:  # the token stays valid for the task's life
            await self.legacy_task.progress(progress, total, message)
            return
        await self._rctx.report_progress(progress, total, message)

    async def log(self, level: str, data: JSONValue, *, logger: str | None = None) -> None:
        """Send a ``notifications/message`` if the client's level admits ``level``.

        Legacy: the level set by ``logging/setLevel`` (everything until one is
        set). Modern: only when the request's ``_meta`` carried a log level.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"unknown log level {level!r}")
        if self._in_task:  # not supported on tasks (SEP-2663): dropped
            return
        if self.era == "modern":
            if self._log_threshold is None or LOG_LEVELS.index(level) < self._log_threshold:
                return
        elif not self.connection.log_admits(level):
            return
        params: JSONObject = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        if self.legacy_task is not None:
            await self.legacy_task.notify("notifications/message", params)
            return
        await self._rctx.session.notify(
            "notifications/message", params, related=self._rctx.request_id
        )

    async def debug(self, data: JSONValue, *, logger: str | None = None) -> None:
        await self.log("debug", data, logger=logger)

    async def info(self, data: JSONValue, *, logger: str | None = None) -> None:
        await self.log("info", data, logger=logger)

    async def warning(self, data: JSONValue, *, logger: str | None = None) -> None:
        await self.log("warning", data, logger=logger)

    async def error(self, data: JSONValue, *, logger: str | None = None) -> None:
        await self.log("error", data, logger=logger)

    # -- asking the client -------------------------------------------------------

    async def elicit(
        self, message: str, schema: JSONObject, *, key: str | None = None, task: bool = False
    ) -> JSONObject:
        """Ask the user for structured input (form mode).

        Returns the client's ``ElicitResult``: ``{"action": "accept"|"decline"|
        "cancel", "content": {...}}``. ``task``: with 2025-11-25, a client that
        declared task-augmented elicitation gets it as a task, polled until the
        user answers, however long that takes (see ``_task_legacy.ask_as_task``).
        """
        params: JSONObject = {"mode": "form", "message": message, "requestedSchema": schema}
        if self.era == "legacy" and not at_least(self.protocol_version, "2025-11-25"):
            del params["mode"]
        return await self._ask(
            "elicitation/create",
            params,
            {"elicitation": {}},
            "elicitation",
            mode="form",
            key=key,
            task=task,
        )

    async def close_sse_stream(self) -> None:
        """Close this request's SSE response stream now (HTTP, 2025-11-25 polling).

        The client reconnects with ``Last-Event-ID`` and the rest of the reply
        (progress, the result) reaches it on the resumed stream (SEP-1699). On
        transports without per-request streams (stdio) this does nothing.
        """
        close = getattr(self._rctx.session.transport, "close_sse_stream", None)
        if close is not None and not self._in_task:
            await close(self.request_id)

    async def notify_elicitation_complete(self, elicitation_id: str) -> None:
        """Tell a legacy client that an out-of-band URL elicitation finished (2025-11-25)."""
        if self.era == "legacy":
            await self._rctx.session.notify(
                "notifications/elicitation/complete",
                {"elicitationId": elicitation_id},
                related=self._rctx.request_id,
            )

    async def elicit_url(
        self, message: str, url: str, elicitation_id: str | None = None, *, key: str | None = None
    ) -> JSONObject:
        """Ask the user to visit ``url`` (URL mode, 2025-11-25 and later)."""
        params: JSONObject = {"mode": "url", "message": message, "url": url}
        if self.era == "legacy":
            params["elicitationId"] = elicitation_id or os.urandom(16).hex()
        return await self._ask(
            "elicitation/create",
            params,
            {"elicitation": {"url": {}}},
            "URL elicitation",
            mode="url",
            key=key,
        )

    async def sample(
        self,
        messages: list[JSONValue],
        max_tokens: int,
        *,
        key: str | None = None,
        task: bool = False,
        **options: JSONValue,
    ) -> JSONObject:
        """Ask the client's model for a completion (``sampling/createMessage``).

        ``options`` are further request fields in wire form (``systemPrompt``,
        ``temperature``, ``modelPreferences``, ...). ``task`` as for ``elicit``.
        """
        params: JSONObject = {"messages": messages, "maxTokens": max_tokens, **options}
        return await self._ask(
            "sampling/createMessage", params, {"sampling": {}}, "sampling", key=key, task=task
        )

    async def list_roots(self, *, key: str | None = None) -> list[JSONObject]:
        """The client's roots (``roots/list``)."""
        result = await self._ask("roots/list", None, {"roots": {}}, "roots", key=key)
        roots = result.get("roots")
        return [r for r in roots if isinstance(r, dict)] if isinstance(roots, list) else []

    async def ask_all(self, asks: dict[str, JSONObject]) -> dict[str, JSONObject]:
        """Ask the client several things at once; returns the answers by key.

        Each ask is a request in wire form, ``{"method": "elicitation/create" |
        "sampling/createMessage" | "roots/list", "params": {...}}``. Modern era:
        every unanswered ask goes out in one ``InputRequiredResult`` under its
        key (the keys are the client-visible ``inputRequests`` names). Legacy
        era: the asks are sent as server-to-client requests, one after another.
        """
        for ask in asks.values():
            method = ask.get("method")
            params = ask.get("params")
            need, what, mode = _capability_for(
                method if isinstance(method, str) else "",
                params if isinstance(params, dict) else None,
            )
            if not self._client_has(need, mode):
                raise CapabilityMissing(need, what)
        if self.era == "legacy":
            answers: dict[str, JSONObject] = {}
            for key, ask in asks.items():
                params = ask.get("params")
                answers[key] = await self._legacy_ask(
                    str(ask.get("method")), params if isinstance(params, dict) else None
                )
            return answers
        missing: dict[str, JSONValue] = {k: a for k, a in asks.items() if k not in self._answers}
        if missing and self.task_run is not None and self.task_run.task is not None:
            # A task asks through inputRequests on tasks/get, answered by tasks/update.
            asked = {k: a for k, a in asks.items() if k not in self._answers}
            self._answers.update(await self.task_run.ask(asked))
        elif missing:
            raise InputRequired(missing)
        out: dict[str, JSONObject] = {}
        for key in asks:
            answer = self._answers[key]
            if not isinstance(answer, dict):
                raise JSONRPCError(
                    ErrorCode.INVALID_PARAMS, f"inputResponses[{key!r}] is not an object"
                )
            out[key] = answer
        return out

    async def _ask(
        self,
        method: str,
        params: JSONObject | None,
        capability: JSONObject,
        what: str,
        *,
        mode: str | None = None,
        key: str | None = None,
        task: bool = False,
    ) -> JSONObject:
        if not self._client_has(capability, mode):
            raise CapabilityMissing(capability, what)
        if self.era == "legacy":
            return await self._legacy_ask(method, params, task)
        if key is None:
            key = f"ask-{self._asks}"
            self._asks += 1
        request: JSONObject = {"method": method}
        if params is not None:
            request["params"] = params
        return (await self.ask_all({key: request}))[key]

    async def _legacy_ask(
        self, method: str, params: JSONObject | None, task: bool = False
    ) -> JSONObject:
        try:
            if self.legacy_task is not None:  # through the task (input_required)
                return await self.legacy_task.ask(method, params)
            related = self._rctx.request_id
            if task and at_least(self.protocol_version, LEGACY_TASKS_VERSION):
                from ._task_legacy import ask_as_task, client_receives

                if client_receives(self.client_capabilities, method):
                    return await ask_as_task(self._rctx.session, method, params, related)
            return await self._rctx.session.request(method, params, related=related)
        except JSONRPCError as exc:  # the client's answer: not ours to relay as such
            raise ClientAnswerError(method, exc) from exc

    def _client_has(self, capability: JSONObject, mode: str | None) -> bool:
        if not capability:
            return True
        name = next(iter(capability))
        declared = self.client_capabilities.get(name)
        if not isinstance(declared, dict):
            return False
        if name == "elicitation" and mode is not None:
            if not declared:  # {} means form only
                return mode == "form"
            return mode in declared or (mode == "form" and "url" not in declared)
        return True

    @property
    def answers(self) -> dict[str, JSONValue]:
        """Answers to asks gathered so far in the modern era (by ask key)."""
        return dict(self._answers)
