"""The client's side of server asks: answering them, in both eras.

A legacy server asks with a server-to-client request; a modern one returns an
``InputRequiredResult`` (mrtr.mdx). Both reach the same callbacks through
``answer``. ``run_rounds`` drives the modern loop: retry with a fresh id, the
original params, the answers under the server's keys, and ``requestState``
echoed exactly; bounded by ``Client.max_input_rounds``. A result type the
client does not know is refused, as ``basic/index.mdx`` requires; a
``tools/call`` may also end in a ``CreateTaskResult`` (``resultType: "task"``,
SEP-2663), which ``Client.call_tool`` awaits.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import anyio

from ._errors import JSONRPCError, MCPWireError
from ._handshake import tasks_declared
from .sansio._json import JSONObject
from .sansio._messages import ErrorCode, Incoming

if TYPE_CHECKING:
    from ._client import Client
    from ._session import ProgressCallback

__all__ = ("ORIGIN", "answer", "more_rounds", "origin_of", "run_rounds", "send_tool_call")

#: While the client handles a legacy server's request or log message: the
#: context of the client's request it was sent during, when the transport
#: knows it (streamable HTTP: it came on that request's response stream), else
#: ``None``. The hub's relay reads it to tell which of several calls in flight
#: to a server an ask or a log message is about.
ORIGIN: contextvars.ContextVar[contextvars.Context | None] = contextvars.ContextVar(
    "mcpwire_origin", default=None
)


@contextmanager
def origin_of(client: Client, message: Incoming) -> Iterator[None]:
    """``ORIGIN`` set to ``message``'s origin while the client handles it."""
    find = getattr(client.transport, "message_origin", None)
    token = ORIGIN.set(find(message)) if find is not None else None
    try:
        yield
    finally:
        if token is not None:
            ORIGIN.reset(token)


#: Pause before retrying a state-only ``InputRequiredResult`` (load shedding).
_SHED_PAUSE = 0.05


async def run_rounds(
    client: Client,
    method: str,
    params: JSONObject,
    *,
    timeout: float | None = None,
    on_progress: ProgressCallback | None = None,
) -> tuple[JSONObject, int]:
    """Send ``method``, answering asks; returns the final result and the rounds taken."""
    result = await client.request(method, params, timeout=timeout, on_progress=on_progress)
    return await more_rounds(
        client, method, params, result, timeout=timeout, on_progress=on_progress
    )


async def more_rounds(
    client: Client,
    method: str,
    params: JSONObject,
    result: JSONObject,
    *,
    timeout: float | None = None,
    on_progress: ProgressCallback | None = None,
) -> tuple[JSONObject, int]:
    """``run_rounds`` from the first answer, ``result``, to ``params`` on."""
    rounds = 0
    while True:
        kind = result.get("resultType", "complete")
        # A task only answers a tools/call that declared the extension (SEP-2663).
        if kind == "complete" or (
            kind == "task" and method == "tools/call" and tasks_declared(client)
        ):
            return result, rounds
        if kind != "input_required":
            raise MCPWireError(f"{method}: the server returned unknown resultType {kind!r}")
        if rounds == client.max_input_rounds:
            raise MCPWireError(
                f"{method}: the server asked for input more than {client.max_input_rounds} times"
            )
        retry = await _answer_round(client, params, result)
        rounds += 1
        result = await client.request(method, retry, timeout=timeout, on_progress=on_progress)


async def send_tool_call(
    client: Client,
    params: JSONObject,
    timeout: float | None,
    on_progress: ProgressCallback | None,
) -> JSONObject:
    """A ``tools/call`` to its final result, answering asks; once more after -32020."""
    try:
        raw = await client.request("tools/call", params, timeout=timeout, on_progress=on_progress)
        if raw.get("resultType", "complete") == "complete":
            return raw  # the usual case, without the rounds' coroutine
        result, _ = await more_rounds(
            client, "tools/call", params, raw, timeout=timeout, on_progress=on_progress
        )
        return result
    except JSONRPCError as exc:
        if exc.code != ErrorCode.HEADER_MISMATCH or not hasattr(client.transport, "learn_tools"):
            raise
    # 2026-07-28 streamable-http.mdx: on -32020 the client SHOULD re-list the
    # tools (their x-mcp-header annotations) and retry once.
    await client.list_tools(cache=False)
    result, _ = await run_rounds(
        client, "tools/call", params, timeout=timeout, on_progress=on_progress
    )
    return result


async def _answer_round(client: Client, params: JSONObject, result: JSONObject) -> JSONObject:
    """The retry of an ``InputRequiredResult``: original params, answers, exact state."""
    asks = result.get("inputRequests")
    retry = dict(params)
    if isinstance(asks, dict) and asks:
        answers: JSONObject = {}
        for key, ask in asks.items():
            if isinstance(ask, dict) and isinstance(ask.get("method"), str):
                ask_params = ask.get("params")
                answers[key] = await answer(
                    client, str(ask["method"]), ask_params if isinstance(ask_params, dict) else {}
                )
        retry["inputResponses"] = answers
    else:
        await anyio.sleep(_SHED_PAUSE)
    if "requestState" in result:
        retry["requestState"] = result["requestState"]
    return retry


async def answer(client: Client, method: str, params: JSONObject) -> JSONObject:
    """The client's answer to one ask, from its callbacks (-32601 when it has none)."""
    if method == "ping":
        return {}
    if method == "sampling/createMessage" and client.sampling is not None:
        return await client.sampling(params)
    if method == "elicitation/create" and client.elicitation is not None:
        return await client.elicitation(params)
    if method == "roots/list" and client.roots is not None:
        roots = client.roots if isinstance(client.roots, list) else await client.roots()
        return {"roots": list(roots)}
    raise JSONRPCError(ErrorCode.METHOD_NOT_FOUND, f"Method not found: {method}")
