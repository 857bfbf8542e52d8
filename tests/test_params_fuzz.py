"""Any JSON in ``params`` of any method is answered, and the session goes on.

A ``Server`` with tools (sync, async, one taking a ``Context``, one that may run
as a task, one that asks the client), a prompt, a static resource, a resource
template and completers runs in-process on a pair of ``os.pipe()``s, initialized
with protocol 2025-11-25, on both anyio backends. The peer sends requests for
every method the server serves, in both eras (the modern one is reached through
a valid ``_meta`` envelope), and a few it does not serve, plus notifications.
Their ``params`` hold JSON of any type under the keys each method reads
(``name``, ``uri``, ``arguments``, ``cursor``, ``level``, ``ref``, ``argument``,
``taskId``, ``_meta``, ``progressToken``, ...) and under others; some are
well-formed but for one value, so that checks past the first are reached. Task
ids can name real tasks of the server's store, in each status. Some messages
have no ``params`` or ``params`` that are not an object.

What must hold whatever the values:

* every request gets exactly one answer with its id: a result object, or an
  error object with an integer code and a string message (a request holding an
  integer outside 64 bits is refused whole, as the codec documents: -32700, with
  its id, which the envelope's first bytes show);
* notifications get no answer, not even one holding such an integer;
* the server never closes its stdout, logs no error (a handler that raised),
  and never sends the client a request;
* a ``ping`` sent afterwards is answered with an empty result.

Answers may come in any order (some requests are served in tasks of their own),
so they are collected by id. Two kinds of request rightly wait for something
else: a valid ``subscriptions/listen`` until the server ends its subscription
streams, and a 2025-11-25 ``tasks/result`` until its task ends. While waiting
for answers and hearing nothing, the peer has the server end its streams and
cancels the tasks it made, so that those are answered too.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pipe_peer import Peer, serving
from strategies import int64, texts

from mcpwire import Context, Server
from mcpwire._cursor import encode_cursor
from mcpwire._task_runs import Task
from mcpwire._tasks import TASKS_EXTENSION
from mcpwire._versions import (
    ALL_VERSIONS,
    LOG_LEVELS,
    META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO,
    META_LOG_LEVEL,
    META_PROTOCOL_VERSION,
)
from mcpwire.sansio import JSONObject, JSONValue

WAIT = 10.0
#: How long the peer hears nothing before it ends what rightly waits.
IDLE = 0.1
#: Integers the codec accepts: signed or unsigned 64-bit.
INT_MIN, INT_MAX = -(2**63), 2**64 - 1
FINAL_PING = 10**9

INIT_PARAMS: JSONObject = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "fuzz", "version": "1"},
}

#: Every request method the server serves (either era), with the params keys it
#: reads besides ``_meta``, which every request may carry.
REQUESTS: dict[str, tuple[str, ...]] = {
    "initialize": ("protocolVersion", "capabilities", "clientInfo"),
    "ping": (),
    "server/discover": (),
    "tools/list": ("cursor",),
    "tools/call": ("name", "arguments", "task", "requestState", "inputResponses"),
    "resources/list": ("cursor",),
    "resources/templates/list": ("cursor",),
    "resources/read": ("uri", "requestState", "inputResponses"),
    "resources/subscribe": ("uri",),
    "resources/unsubscribe": ("uri",),
    "prompts/list": ("cursor",),
    "prompts/get": ("name", "arguments", "requestState", "inputResponses"),
    "completion/complete": ("ref", "argument", "context"),
    "logging/setLevel": ("level",),
    "tasks/get": ("taskId",),
    "tasks/result": ("taskId",),
    "tasks/list": ("cursor",),
    "tasks/cancel": ("taskId",),
    "tasks/update": ("taskId", "inputResponses"),
    "subscriptions/listen": ("notifications",),
    # Not served here: answered with an error all the same.
    "no/such": ("name", "uri"),
    "": (),
    "tools": ("name",),
    "notifications/cancelled": ("requestId",),
    "rpc.discover": (),
}
NOTIFICATIONS: dict[str, tuple[str, ...]] = {
    "notifications/cancelled": ("requestId", "reason"),
    "notifications/progress": ("progressToken", "progress", "total", "message"),
    "notifications/initialized": (),
    "notifications/roots/list_changed": (),
}

TEMPLATE = "mem://items/{item_id}"
NAME_SCHEMA: JSONObject = {"type": "object", "properties": {"name": {"type": "string"}}}
#: A modern-era envelope that passes the checks, so the handler sees the other keys.
MODERN_CAPABILITIES: JSONObject = {"elicitation": {}, "extensions": {TASKS_EXTENSION: {}}}
MODERN_META: JSONObject = {
    META_PROTOCOL_VERSION: "2026-07-28",
    META_CLIENT_CAPABILITIES: MODERN_CAPABILITIES,
}
#: Stand-ins for the ids of tasks made for each exchange, one per status.
SEEDS = ("@completed", "@failed", "@cancelled", "@input_required", "@working")


def fuzz_server() -> Server:
    """One of every kind of feature, so that every method reaches real code."""
    server = Server("fuzz", "1.0.0", page_size=2)

    @server.tool()
    def echo(message: str) -> str:
        """Echo the message back."""
        return message

    @server.tool()
    async def add(a: int, b: int = 0) -> int:
        """Add two integers."""
        await anyio.sleep(0)
        return a + b

    @server.tool()
    async def report(ctx: Context, steps: int = 1) -> str:
        """Report progress and log a line per step (at most three)."""
        for step in range(min(max(steps, 0), 3)):
            await ctx.report_progress(step + 1, 3, f"step {step + 1}")
            await ctx.log("info", {"step": step})
        return "reported"

    @server.tool(structured=False, task="optional")
    async def job(label: str = "") -> str:
        """Finish at once, in a task when asked to."""
        await anyio.sleep(0)
        return f"done {label}"

    @server.tool()
    async def ask(ctx: Context) -> str:
        """Ask the client for a name."""
        answer = await ctx.elicit("Your name?", NAME_SCHEMA)
        return str(answer.get("action"))

    @server.tool()
    def mirror(value: Any = None) -> Any:
        """Return the value given."""
        return value

    @server.prompt()
    def greet(name: str, style: str = "friendly") -> str:
        """Greet someone."""
        return f"Write a {style} greeting for {name}."

    @server.resource("mem://text", mime_type="text/plain")
    def text() -> str:
        """A text resource."""
        return "hello"

    @server.resource(TEMPLATE, mime_type="text/plain")
    def item(item_id: str) -> str:
        """One item."""
        return f"item {item_id}"

    @server.completion(prompt="greet", argument="style")
    def styles(value: str) -> list[str]:
        return [s for s in ("friendly", "formal") if s.startswith(value)]

    @server.completion(resource=TEMPLATE, argument="item_id")
    def item_ids(value: str, context: dict[str, Any]) -> list[str]:
        return [f"{value}{n}" for n in range(3)] + [str(len(context))]

    return server


def seed_tasks(server: Server) -> dict[str, Task]:
    """A task in each status, in the server's store, bound to no connection (so
    both eras may name them)."""
    store = server.tasks
    tasks = {seed: store.create() for seed in SEEDS}
    tasks["@completed"].complete({"content": [{"type": "text", "text": "done"}]})
    tasks["@failed"].fail({"code": -32001, "message": "it failed"}, "it failed")
    tasks["@cancelled"].cancel("cancelled")
    ask: JSONObject = {"method": "elicitation/create", "params": {"message": "Name?"}}
    tasks["@input_required"].need_input({"ask-0": ask}, "waiting")
    return tasks


# -- the peer -----------------------------------------------------------------------------


def frame(message: JSONObject) -> bytes:
    """One ndjson line; the standard library encodes integers of any size."""
    text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.encode("utf-8") + b"\n"


def has_wide_int(value: JSONValue) -> bool:
    """Whether ``value`` holds an integer the codec refuses (outside 64 bits)."""
    if type(value) is int:
        return not INT_MIN <= value <= INT_MAX
    if isinstance(value, dict):
        return any(has_wide_int(v) for v in value.values())
    if isinstance(value, list):
        return any(has_wide_int(v) for v in value)
    return False


def substitute(value: JSONValue, names: dict[str, str]) -> JSONValue:
    """``value`` with every string that is a key of ``names`` replaced by its value."""
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, dict):
        return {k: substitute(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, names) for v in value]
    return value


class ErrorLog(logging.Handler):
    """Keeps what the package logs at ERROR and above (a handler that raised, ...)."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@contextmanager
def logged_errors() -> Iterator[ErrorLog]:
    handler = ErrorLog()
    log = logging.getLogger("mcpwire")
    log.addHandler(handler)
    try:
        yield handler
    finally:
        log.removeHandler(handler)


# -- one exchange: a batch of messages, every answer, then a ping -------------------------


class NoParams:
    """``params`` left out of the message."""


NO_PARAMS = NoParams()
#: (method, params, whether it is a request). MCP wants ``params`` to be an object,
#: and anything else in a request is answered with an error like any odd value.
Message = tuple[str, "JSONValue | NoParams", bool]


def check_answer(answer: dict[str, Any]) -> None:
    assert answer.get("jsonrpc") == "2.0", answer
    assert ("result" in answer) != ("error" in answer), answer
    if "result" in answer:
        assert isinstance(answer["result"], dict), answer
    else:
        error = answer["error"]
        assert isinstance(error, dict), answer
        assert type(error.get("code")) is int, answer
        assert isinstance(error.get("message"), str), answer


def build(messages: list[Message], task_ids: dict[str, str]) -> tuple[bytes, set[int], set[int]]:
    """Frames for ``messages``; the requests get ids 1, 2, ... by position.

    Returns the bytes, the ids that must be answered, and those of them the codec
    refuses whole (answered -32700 with their id).
    """
    ids = {n for n, (_, _, is_request) in enumerate(messages, start=1) if is_request}
    out: list[bytes] = []
    refused: set[int] = set()
    for rid, (method, raw, is_request) in enumerate(messages, start=1):
        message: JSONObject = {"jsonrpc": "2.0", "method": method}
        if is_request:
            message["id"] = rid
        if isinstance(raw, NoParams):
            out.append(frame(message))
            continue
        params = substitute(raw, task_ids)
        if isinstance(params, dict) and method == "notifications/cancelled" and not is_request:
            # Cancelling one of these requests would rightly leave it unanswered.
            target = params.get("requestId")
            if type(target) is int and target in ids:
                params = {**params, "requestId": "not one of ours"}
        message["params"] = params
        if has_wide_int(params) and is_request:
            refused.add(rid)
        out.append(frame(message))
    return b"".join(out), ids, refused


async def exchange(peer: Peer, server: Server, messages: list[Message]) -> None:
    """Send ``messages``; check that each request gets one answer and a ping still does."""
    seeds = seed_tasks(server)
    data, ids, refused = build(messages, {seed: task.task_id for seed, task in seeds.items()})
    answers: dict[int, dict[str, Any]] = {}

    def take(message: dict[str, Any]) -> None:
        if "id" not in message:  # a notification (progress, log, acknowledgement)
            assert isinstance(message.get("method"), str), message
            return
        assert "method" not in message, f"the server sent the client a request: {message}"
        check_answer(message)
        rid = message["id"]
        assert rid in ids, f"an answer to no request of this batch: {message}"
        if rid in refused:
            assert message["error"]["code"] == -32700, message
        assert rid not in answers, f"a second answer: {message}, after {answers[rid]}"
        answers[rid] = message

    async with anyio.create_task_group() as tg:
        tg.start_soon(peer.write, data)
        with anyio.fail_after(WAIT):
            while answers.keys() != ids:
                with anyio.move_on_after(IDLE) as idle:
                    take(await peer.read())
                if idle.cancelled_caught:
                    server.close_subscriptions()
                    for task in seeds.values():
                        task.cancel("The test ended the task")

    await peer.write(frame({"jsonrpc": "2.0", "id": FINAL_PING, "method": "ping"}))
    with anyio.fail_after(WAIT):
        while True:
            message = await peer.read()
            if message.get("id") == FINAL_PING:
                break
            take(message)
    assert message == {"jsonrpc": "2.0", "id": FINAL_PING, "result": {}}


async def session(batches: list[list[Message]]) -> None:
    """Each batch in turn over one connection; then nothing more is answered and
    nothing was logged as an error."""
    server = fuzz_server()
    with logged_errors() as errors:
        async with serving(server) as peer:
            for messages in batches:
                await exchange(peer, server, messages)
        assert not [m for m in peer.after_close if "id" in m], peer.after_close
    assert not errors.lines, "\n\n".join(errors.lines)


# -- strategies -----------------------------------------------------------------------------

scalars: st.SearchStrategy[JSONValue] = st.one_of(
    st.none(),
    st.booleans(),
    int64,
    st.sampled_from([INT_MIN, INT_MAX, 2**63]),  # unsigned 64-bit is accepted too
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)
json_values: st.SearchStrategy[JSONValue] = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(texts, children, max_size=4)
    ),
    max_leaves=10,
)
#: Integers just past what the codec accepts (a message holding one is refused whole).
wide_ints = st.sampled_from([INT_MIN - 1, INT_MAX + 1, 2**70, -(2**70)])


def _cursor(kind: str, rest: str) -> str:
    return base64.urlsafe_b64encode(f"{kind}:{rest}".encode()).decode("ascii")


CURSOR_KINDS = ["tools", "prompts", "resources", "templates", "tasks", "other"]
cursors = st.one_of(
    st.builds(encode_cursor, st.sampled_from(CURSOR_KINDS), st.integers(0, 6)),
    st.builds(_cursor, st.sampled_from(CURSOR_KINDS), st.one_of(texts, st.just("-1"))),
)
tool_names = st.sampled_from(["echo", "add", "report", "job", "ask", "mirror", "greet", ""])
uris = st.one_of(
    st.sampled_from(["mem://text", "mem://items/1", "mem://items/", "mem://items/a/b", TEMPLATE]),
    texts.map(lambda s: "mem://items/" + s),
)
argument_names = st.sampled_from(["message", "a", "b", "steps", "label", "value", "name", "style"])
arguments = st.dictionaries(argument_names, json_values, max_size=3)
task_ids = st.one_of(st.sampled_from(SEEDS), texts)
input_responses = st.dictionaries(
    st.one_of(st.just("ask-0"), texts),
    st.one_of(st.just({"action": "accept", "content": {"name": "n"}}), json_values),
    max_size=2,
)
request_states = st.one_of(texts, texts.map(lambda s: f"v1.{s}.{s}"))
task_params = st.fixed_dictionaries(
    {}, optional={"ttl": st.one_of(st.integers(-1, 10**6), json_values)}
)
listen_notifications = st.fixed_dictionaries(
    {},
    optional={
        "toolsListChanged": st.one_of(st.just(True), json_values),
        "resourcesListChanged": st.one_of(st.just(True), json_values),
        "resourceSubscriptions": st.one_of(st.lists(uris, max_size=2), json_values),
        "taskIds": st.one_of(st.lists(task_ids, max_size=2), json_values),
    },
)
metas = st.one_of(
    st.fixed_dictionaries({}, optional={"progressToken": st.one_of(int64, texts, json_values)}),
    st.fixed_dictionaries(
        {
            META_PROTOCOL_VERSION: st.just("2026-07-28"),
            META_CLIENT_CAPABILITIES: st.sampled_from(
                [{}, MODERN_CAPABILITIES, {"elicitation": {}}]
            ),
        },
        optional={
            "progressToken": st.one_of(int64, texts, json_values),
            META_CLIENT_INFO: json_values,
            META_LOG_LEVEL: st.one_of(st.sampled_from(LOG_LEVELS), json_values),
        },
    ),
    st.fixed_dictionaries(
        {},
        optional={
            META_PROTOCOL_VERSION: st.one_of(st.sampled_from(ALL_VERSIONS), json_values),
            META_CLIENT_CAPABILITIES: json_values,
            META_LOG_LEVEL: json_values,
        },
    ),
)

#: Values close to valid for each key, so that checks past the first are reached.
NEAR: dict[str, st.SearchStrategy[Any]] = {
    "name": tool_names,
    "uri": uris,
    "arguments": arguments,
    "cursor": cursors,
    "level": st.sampled_from(LOG_LEVELS),
    "task": task_params,
    "taskId": task_ids,
    "inputResponses": input_responses,
    "requestState": request_states,
    "ref": st.fixed_dictionaries(
        {"type": st.one_of(st.sampled_from(["ref/prompt", "ref/resource"]), json_values)},
        optional={"name": st.one_of(tool_names, json_values), "uri": uris},
    ),
    "argument": st.fixed_dictionaries(
        {},
        optional={
            "name": st.one_of(st.sampled_from(["name", "style", "item_id"]), json_values),
            "value": st.one_of(texts, json_values),
        },
    ),
    "context": st.fixed_dictionaries({}, optional={"arguments": st.one_of(arguments, json_values)}),
    "notifications": listen_notifications,
    "protocolVersion": st.sampled_from(ALL_VERSIONS),
    "capabilities": st.just(MODERN_CAPABILITIES),
    "requestId": st.one_of(int64, texts),
    "progressToken": st.one_of(int64, texts),
    "_meta": metas,
}


def _call(name: str, required: dict[str, Any], optional: dict[str, Any]) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries(
        {"name": st.just(name), "arguments": st.fixed_dictionaries(required, optional=optional)},
        optional={
            "task": task_params,
            "inputResponses": input_responses,
            "requestState": request_states,
        },
    )


LIST_PARAMS = st.fixed_dictionaries({}, optional={"cursor": cursors})
TASK_PARAMS = st.fixed_dictionaries({"taskId": st.sampled_from(SEEDS)})
#: Params that are well-formed as a whole (the values inside may still be odd).
WELL_FORMED: dict[str, st.SearchStrategy[Any]] = {
    "initialize": st.just(INIT_PARAMS),
    "tools/list": LIST_PARAMS,
    "prompts/list": LIST_PARAMS,
    "resources/list": LIST_PARAMS,
    "resources/templates/list": LIST_PARAMS,
    "tasks/list": LIST_PARAMS,
    "tools/call": st.one_of(
        _call("echo", {"message": texts}, {}),
        _call("add", {"a": int64}, {"b": int64}),
        _call("report", {}, {"steps": st.integers(-1, 4)}),
        _call("job", {}, {"label": texts}),
        _call("ask", {}, {}),
        _call("mirror", {}, {"value": json_values}),
    ),
    "prompts/get": st.fixed_dictionaries(
        {
            "name": st.just("greet"),
            "arguments": st.fixed_dictionaries(
                {"name": st.one_of(texts, json_values)},
                optional={"style": st.one_of(texts, json_values)},
            ),
        }
    ),
    "resources/read": st.fixed_dictionaries({"uri": uris}),
    "resources/subscribe": st.fixed_dictionaries({"uri": uris}),
    "resources/unsubscribe": st.fixed_dictionaries({"uri": uris}),
    "completion/complete": st.fixed_dictionaries(
        {
            "ref": st.sampled_from(
                [
                    {"type": "ref/prompt", "name": "greet"},
                    {"type": "ref/resource", "uri": TEMPLATE},
                    {"type": "ref/resource", "uri": "mem://text"},
                ]
            ),
            "argument": st.fixed_dictionaries(
                {"name": st.sampled_from(["style", "name", "item_id"]), "value": texts}
            ),
        },
        optional={"context": st.fixed_dictionaries({"arguments": arguments})},
    ),
    "logging/setLevel": st.fixed_dictionaries({"level": st.sampled_from(LOG_LEVELS)}),
    "tasks/get": TASK_PARAMS,
    "tasks/result": TASK_PARAMS,
    "tasks/cancel": TASK_PARAMS,
    "tasks/update": st.fixed_dictionaries(
        {"taskId": st.sampled_from(SEEDS), "inputResponses": input_responses}
    ),
    "subscriptions/listen": st.fixed_dictionaries({"notifications": listen_notifications}),
}


def _merge(*parts: JSONObject) -> JSONObject:
    out: JSONObject = {}
    for part in parts:
        out.update(part)
    return out


def params_for(method: str, keys: tuple[str, ...]) -> st.SearchStrategy[JSONObject]:
    """Objects with ``keys`` (all of them, or some) holding any JSON, or well-formed
    ones; each with any ``_meta`` and maybe other keys."""
    known = {
        key: st.one_of(json_values, NEAR[key]) if key in NEAR else json_values
        for key in (*keys, "_meta")
    }
    shapes = [st.fixed_dictionaries(known), st.fixed_dictionaries({}, optional=known)]
    if method in WELL_FORMED:
        meta = st.fixed_dictionaries({}, optional={"_meta": known["_meta"]})
        shapes.append(st.builds(_merge, WELL_FORMED[method], meta))
    extra = st.dictionaries(texts, json_values, max_size=2)
    return st.builds(_merge, extra, st.one_of(shapes))


def _tagged(method: str, is_request: bool) -> st.SearchStrategy[Message]:
    keys = (REQUESTS if is_request else NOTIFICATIONS)[method]
    return params_for(method, keys).map(lambda params: (method, params, is_request))


@st.composite
def wide_messages(draw: st.DrawFn) -> Message:
    """A request or notification with an integer outside 64 bits under one of its keys."""
    is_request = draw(st.booleans())
    table = REQUESTS if is_request else NOTIFICATIONS
    method = draw(st.sampled_from(sorted(table)))
    key = draw(st.sampled_from([*table[method], "_meta"]))
    value: JSONValue = draw(wide_ints)
    nest = draw(st.sampled_from(["bare", "list", "object"]))
    if nest == "list":
        value = [value]
    elif nest == "object":
        value = {"n": value}
    return method, {key: value}, is_request


@st.composite
def not_object_messages(draw: st.DrawFn) -> Message:
    """A request or notification whose ``params`` is absent or not an object."""
    is_request = draw(st.booleans())
    method = draw(st.sampled_from(sorted(REQUESTS if is_request else NOTIFICATIONS)))
    params: JSONValue | NoParams = draw(
        st.one_of(st.just(NO_PARAMS), json_values.filter(lambda v: not isinstance(v, dict)))
    )
    return method, params, is_request


fuzz_messages: st.SearchStrategy[Message] = st.one_of(
    *[_tagged(method, True) for method in REQUESTS],
    *[_tagged(method, False) for method in NOTIFICATIONS],
    wide_messages(),
    not_object_messages(),
)


# -- tests ----------------------------------------------------------------------------------


@settings(
    max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=st.lists(st.lists(fuzz_messages, min_size=1, max_size=8), min_size=1, max_size=2))
def test_any_json_in_params_of_any_method_gets_one_answer_and_the_session_goes_on(
    anyio_backend: str, batches: list[list[Message]]
) -> None:
    """One batch, or two in turn on one connection: the state the first leaves (a log
    level, subscriptions, tasks) is what the second meets."""
    anyio.run(session, batches, backend=anyio_backend)


ODD_VALUES: list[JSONValue] = [[], {}, [1], {"a": 1}, None, True, 1.5, 2**70, ""]

#: Valid params for each method; the odd value replaces one value at a time in them.
EXAMPLES: dict[str, list[JSONObject]] = {
    "initialize": [INIT_PARAMS],
    "tools/list": [{"cursor": encode_cursor("tools", 2)}],
    "prompts/list": [{"cursor": encode_cursor("prompts", 0)}],
    "resources/list": [{"cursor": encode_cursor("resources", 0)}],
    "resources/templates/list": [{"cursor": encode_cursor("templates", 0)}],
    "tasks/list": [{"cursor": encode_cursor("tasks", 0)}],
    "tools/call": [
        {"name": "echo", "arguments": {"message": "hi"}},
        {"name": "add", "arguments": {"a": 1, "b": 2}},
        {"name": "report", "arguments": {"steps": 2}},
        {"name": "job", "arguments": {"label": "x"}, "task": {"ttl": 60_000}},
        {"name": "ask", "arguments": {}, "inputResponses": {"ask-0": {"action": "accept"}}},
        {"name": "mirror", "arguments": {"value": 1}},
    ],
    "prompts/get": [{"name": "greet", "arguments": {"name": "a", "style": "formal"}}],
    "resources/read": [{"uri": "mem://text"}, {"uri": "mem://items/1"}],
    "resources/subscribe": [{"uri": "mem://text"}],
    "resources/unsubscribe": [{"uri": "mem://text"}],
    "completion/complete": [
        {
            "ref": {"type": "ref/prompt", "name": "greet"},
            "argument": {"name": "style", "value": "f"},
            "context": {"arguments": {"name": "a"}},
        },
        {
            "ref": {"type": "ref/resource", "uri": TEMPLATE},
            "argument": {"name": "item_id", "value": "1"},
            "context": {"arguments": {"x": "y"}},
        },
    ],
    "logging/setLevel": [{"level": "debug"}],
    "tasks/get": [{"taskId": seed} for seed in SEEDS],
    "tasks/result": [{"taskId": seed} for seed in SEEDS],
    "tasks/cancel": [{"taskId": seed} for seed in SEEDS],
    "tasks/update": [
        {"taskId": seed, "inputResponses": {"ask-0": {"action": "accept"}}} for seed in SEEDS
    ],
    "subscriptions/listen": [
        {
            "notifications": {
                "toolsListChanged": True,
                "resourceSubscriptions": ["mem://text"],
                "taskIds": ["@working"],
            }
        }
    ],
}


def one_value_odd(example: JSONObject, value: JSONValue) -> Iterator[JSONObject]:
    """``example`` with one value (at the top or one level down) replaced by ``value``."""
    for key, inner in example.items():
        yield {**example, key: value}
        if isinstance(inner, dict):
            for sub in inner:
                yield {**example, key: {**inner, sub: value}}


def odd_batch(value: JSONValue) -> list[Message]:
    """For every method: its keys all set to ``value``, each alone, and each value of
    a valid example in turn; in the legacy era and (through a valid envelope) the
    modern one. Notifications likewise."""
    batch: list[Message] = []
    for table, is_request in ((REQUESTS, True), (NOTIFICATIONS, False)):
        for method, keys in table.items():
            every = dict.fromkeys(keys, value)
            variants: list[JSONObject] = [
                {**every, "_meta": value},
                {**every, "_meta": {"progressToken": value}},
                {**every, "_meta": {**MODERN_META, "progressToken": value}},
                *({key: value} for key in keys),
            ]
            for example in EXAMPLES.get(method, []) if is_request else []:
                variants.append(example)
                variants.extend(one_value_odd(example, value))
            for params in variants:
                batch.append((method, params, is_request))
                if "_meta" not in params:
                    batch.append((method, {**params, "_meta": MODERN_META}, is_request))
            batch.append((method, NO_PARAMS, is_request))
            if not isinstance(value, dict):
                batch.append((method, value, is_request))
    return batch


@pytest.mark.anyio
@pytest.mark.parametrize("value", ODD_VALUES, ids=repr)
async def test_every_key_of_every_method_holding_an_odd_value_is_answered(
    value: JSONValue,
) -> None:
    await session([odd_batch(value)])
