"""Feature tests for ``mcpwire.Server`` in the modern era (2026-07-28), over raw JSON-RPC.

Every request here carries the per-request ``_meta`` envelope (or, in the
envelope tests, deliberately breaks it). The client end is a plain
``mcpwire.Session`` on a serialising memory pair, so the tests assert exact
results, error codes and notifications (``/tmp/notes/modern.md`` §1-§7).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from inproc import Inbox, serving

import mcpwire
from mcpwire import Context, JSONRPCError, Server, Session
from mcpwire.sansio import Notification, Request, RequestId, Response

pytestmark = pytest.mark.anyio

WAIT = 5.0
MODERN = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
CI = "io.modelcontextprotocol/clientInfo"
LL = "io.modelcontextprotocol/logLevel"
SI = "io.modelcontextprotocol/serverInfo"
SUB = "io.modelcontextprotocol/subscriptionId"
NAME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}
ELICIT = {"elicitation": {}}
TEMPLATE = "mem://items/{item_id}"


def build_server(**options: Any) -> Server:
    server = Server("modern-server", "2.0.0", instructions="Modern only.", **options)

    @server.tool()
    def echo(message: str) -> str:
        return message

    @server.tool()
    async def chatty(ctx: Context) -> str:
        for level in ("debug", "info", "warning", "error"):
            await ctx.log(level, f"{level} message")
        return "logged"

    @server.tool()
    async def progress(ctx: Context) -> str:
        await ctx.report_progress(1, 2)
        await ctx.report_progress(2, 2)
        return "done"

    @server.tool()
    async def ask(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", NAME_SCHEMA)
        return f"hello {answer['content']['name']}"

    @server.tool()
    async def ask_twice(ctx: Context) -> str:
        first = await ctx.elicit("First name?", NAME_SCHEMA)
        second = await ctx.elicit("Last name?", NAME_SCHEMA)
        return f"{first['content']['name']} {second['content']['name']}"

    @server.tool()
    async def ask_about(ctx: Context, topic: str) -> str:
        answer = await ctx.elicit(f"What about {topic}?", NAME_SCHEMA)
        return f"{topic}: {answer['content']['name']}"

    @server.resource("mem://text", mime_type="text/plain")
    def text() -> str:
        return "hello"

    @server.resource(TEMPLATE)
    def item(item_id: str) -> str:
        return f"item {item_id}"

    @server.prompt()
    def greet(name: str) -> str:
        return f"Hi {name}"

    @server.prompt()
    async def personal(ctx: Context) -> str:
        answer = await ctx.elicit("Who are you?", NAME_SCHEMA)
        return f"Write to {answer['content']['name']}"

    return server


def meta(caps: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        PV: MODERN,
        CC: caps if caps is not None else {},
        CI: {"name": "t", "version": "1"},
        **extra,
    }


def mp(
    caps: dict[str, Any] | None = None, meta_extra: dict[str, Any] | None = None, **params: Any
) -> dict[str, Any]:
    """Modern request params: ``params`` plus the envelope."""
    return {"_meta": meta(caps, **(meta_extra or {})), **params}


async def request(session: Session, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
    with anyio.fail_after(WAIT):
        return await session.request(method, params)


async def error_of(session: Session, method: str, params: dict[str, Any] | None) -> Any:
    with anyio.fail_after(WAIT), pytest.raises(JSONRPCError) as info:
        await session.request(method, params)
    return info.value


# -- the envelope ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad_meta",
    [
        {CC: {}},  # no protocol version
        {PV: MODERN},  # no client capabilities
        {PV: 20260728, CC: {}},  # version not a string
        {PV: None, CC: {}},
        {PV: MODERN, CC: "all"},  # capabilities not an object
    ],
    ids=["no-version", "no-capabilities", "int-version", "null-version", "string-caps"],
)
@pytest.mark.parametrize("method", ["server/discover", "tools/list", "tools/call"])
async def test_broken_envelope_is_invalid_params(bad_meta: dict[str, Any], method: str) -> None:
    params: dict[str, Any] = {"_meta": bad_meta}
    if method == "tools/call":
        params.update(name="echo", arguments={"message": "x"})
    async with serving(build_server()) as (session, _):
        err = await error_of(session, method, params)
        assert err.code == -32602


@pytest.mark.parametrize("params", [None, {}, {"_meta": {}}, {"_meta": "x"}])
async def test_discover_without_envelope_is_invalid_params(params: Any) -> None:
    async with serving(build_server()) as (session, _):
        err = await error_of(session, "server/discover", params)
        assert err.code == -32602


@pytest.mark.parametrize("version", ["2099-01-01", "2025-11-25", "latest"])
async def test_unsupported_version_is_32022_with_data(version: str) -> None:
    async with serving(build_server()) as (session, _):
        err = await error_of(session, "tools/list", {"_meta": {PV: version, CC: {}}})
        assert err.code == -32022
        assert err.data["requested"] == version
        assert MODERN in err.data["supported"]
        assert all(isinstance(v, str) for v in err.data["supported"])


async def test_invalid_log_level_is_invalid_params() -> None:
    async with serving(build_server()) as (session, _):
        err = await error_of(session, "tools/list", mp(meta_extra={LL: "loud"}))
        assert err.code == -32602


@pytest.mark.parametrize(
    "method", ["ping", "no/such", "logging/setLevel", "resources/subscribe", "initialize/x"]
)
async def test_unknown_or_removed_method_is_32601(method: str) -> None:
    async with serving(build_server()) as (session, _):
        err = await error_of(session, method, mp(level="info", uri="mem://text"))
        assert err.code == -32601


# -- server/discover and result decoration ---------------------------------------------------


async def test_discover_result() -> None:
    server = build_server(cache_ttl_ms=1234, cache_scope="public")
    async with serving(server) as (session, _):
        result = await request(session, "server/discover", mp())
    assert MODERN in result["supportedVersions"]
    assert result["resultType"] == "complete"
    assert result["ttlMs"] == 1234
    assert result["cacheScope"] == "public"
    assert result["instructions"] == "Modern only."
    assert result["_meta"][SI] == {"name": "modern-server", "version": "2.0.0"}
    caps = result["capabilities"]
    assert {"tools", "resources", "prompts"} <= set(caps)
    assert "serverInfo" not in result and "protocolVersion" not in result


async def test_default_cache_hints() -> None:
    async with serving(build_server()) as (session, _):
        result = await request(session, "server/discover", mp())
    assert result["ttlMs"] == 0
    assert result["cacheScope"] == "private"


CACHEABLE = [
    ("server/discover", {}),
    ("tools/list", {}),
    ("prompts/list", {}),
    ("resources/list", {}),
    ("resources/templates/list", {}),
    ("resources/read", {"uri": "mem://text"}),
]
NOT_CACHEABLE = [
    ("tools/call", {"name": "echo", "arguments": {"message": "x"}}),
    ("prompts/get", {"name": "greet", "arguments": {"name": "Ada"}}),
    (
        "completion/complete",
        {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": ""}},
    ),
]


@pytest.mark.parametrize(("method", "params"), CACHEABLE + NOT_CACHEABLE)
async def test_every_result_has_result_type_and_server_info(
    method: str, params: dict[str, Any]
) -> None:
    async with serving(build_server(cache_ttl_ms=5000)) as (session, _):
        result = await request(session, method, mp(**params))
    assert result["resultType"] == "complete"
    assert result["_meta"][SI]["name"] == "modern-server"
    if (method, params) in CACHEABLE:
        assert result["ttlMs"] == 5000
        assert result["cacheScope"] == "private"
    else:
        assert "ttlMs" not in result
        assert "cacheScope" not in result


async def test_unknown_resource_is_32602_with_uri() -> None:
    async with serving(build_server()) as (session, _):
        err = await error_of(session, "resources/read", mp(uri="mem://missing"))
        assert err.code == -32602
        assert err.data == {"uri": "mem://missing"}


async def test_unknown_tool_is_32602() -> None:
    async with serving(build_server()) as (session, _):
        err = await error_of(session, "tools/call", mp(name="nosuch", arguments={}))
        assert err.code == -32602


async def test_modern_needs_no_handshake_and_keeps_no_state() -> None:
    async with serving(build_server()) as (session, _):
        # Each request stands alone: a bad one does not poison the next.
        await error_of(session, "tools/list", {"_meta": {PV: "1900-01-01", CC: {}}})
        result = await request(session, "tools/call", mp(name="echo", arguments={"message": "a"}))
        assert result["content"] == [{"type": "text", "text": "a"}]
        assert result["structuredContent"] == {"result": "a"}


async def test_methods_of_undeclared_capabilities_are_32601() -> None:
    server = Server("tools-only")

    @server.tool()
    def noop() -> str:
        return ""

    async with serving(server) as (session, _):
        discover = await request(session, "server/discover", mp())
        assert set(discover["capabilities"]) >= {"tools"}
        assert "prompts" not in discover["capabilities"]
        for method, params in [
            ("prompts/list", {}),
            ("resources/read", {"uri": "mem://x"}),
            (
                "completion/complete",
                {
                    "ref": {"type": "ref/prompt", "name": "p"},
                    "argument": {"name": "a", "value": ""},
                },
            ),
        ]:
            err = await error_of(session, method, mp(**params))
            assert err.code == -32601, method


# -- logging and progress ----------------------------------------------------------------------


async def test_logging_only_with_log_level_in_meta() -> None:
    async with serving(build_server()) as (session, inbox):
        await request(session, "tools/call", mp(name="chatty"))
        assert inbox.of("notifications/message") == []
        await request(session, "tools/call", mp(name="chatty", meta_extra={LL: "warning"}))
        assert [n.params for n in inbox.of("notifications/message")] == [
            {"level": "warning", "data": "warning message"},
            {"level": "error", "data": "error message"},
        ]


async def test_progress_with_token_in_meta() -> None:
    async with serving(build_server()) as (session, inbox):
        await request(
            session, "tools/call", mp(name="progress", meta_extra={"progressToken": "p1"})
        )
        assert [n.params for n in inbox.of("notifications/progress")] == [
            {"progressToken": "p1", "progress": 1, "total": 2},
            {"progressToken": "p1", "progress": 2, "total": 2},
        ]
        inbox.items.clear()
        await request(session, "tools/call", mp(name="progress"))
        assert inbox.of("notifications/progress") == []


# -- multi-round-trip requests ---------------------------------------------------------------


def _answer(name: str) -> dict[str, Any]:
    return {"action": "accept", "content": {"name": name}}


async def test_elicit_returns_input_required() -> None:
    async with serving(build_server()) as (session, inbox):
        result = await request(session, "tools/call", mp(ELICIT, name="ask", arguments={}))
        assert result["resultType"] == "input_required"
        assert result["inputRequests"] == {
            "ask-0": {
                "method": "elicitation/create",
                "params": {"mode": "form", "message": "Your name?", "requestedSchema": NAME_SCHEMA},
            }
        }
        assert isinstance(result["requestState"], str) and result["requestState"]
        assert "ttlMs" not in result and "cacheScope" not in result
        assert "content" not in result
        # Servers never send requests in the modern era.
        assert inbox.items == []


async def test_retry_with_new_id_and_answers_completes() -> None:
    async with serving(build_server()) as (session, _):
        ids: list[RequestId] = []
        with anyio.fail_after(WAIT):
            first = await session.request(
                "tools/call", mp(ELICIT, name="ask", arguments={}), on_id=ids.append
            )
            final = await session.request(
                "tools/call",
                mp(
                    ELICIT,
                    name="ask",
                    arguments={},
                    inputResponses={"ask-0": _answer("Ada")},
                    requestState=first["requestState"],
                ),
                on_id=ids.append,
            )
        assert ids[0] != ids[1]
        assert final["resultType"] == "complete"
        assert final["content"] == [{"type": "text", "text": "hello Ada"}]
        assert "requestState" not in final and "inputRequests" not in final


async def test_two_asks_take_two_rounds() -> None:
    async with serving(build_server()) as (session, _):
        base = {"name": "ask_twice", "arguments": {}}
        r1 = await request(session, "tools/call", mp(ELICIT, **base))
        assert list(r1["inputRequests"]) == ["ask-0"]
        assert r1["inputRequests"]["ask-0"]["params"]["message"] == "First name?"
        r2 = await request(
            session,
            "tools/call",
            mp(
                ELICIT,
                **base,
                inputResponses={"ask-0": _answer("Ada")},
                requestState=r1["requestState"],
            ),
        )
        assert r2["resultType"] == "input_required"
        assert list(r2["inputRequests"]) == ["ask-1"]
        assert r2["inputRequests"]["ask-1"]["params"]["message"] == "Last name?"
        # Only the new answer is sent; the earlier one travels in requestState.
        r3 = await request(
            session,
            "tools/call",
            mp(
                ELICIT,
                **base,
                inputResponses={"ask-1": _answer("Lovelace")},
                requestState=r2["requestState"],
            ),
        )
        assert r3["resultType"] == "complete"
        assert r3["content"][0]["text"] == "Ada Lovelace"


def _tamper(state: str) -> str:
    i = len(state) // 2
    return state[:i] + ("A" if state[i] != "A" else "B") + state[i + 1 :]


async def test_tampered_request_state_is_invalid_params() -> None:
    async with serving(build_server()) as (session, _):
        r1 = await request(session, "tools/call", mp(ELICIT, name="ask", arguments={}))
        for state in (_tamper(r1["requestState"]), "garbage", "v1.x.y", ""):
            err = await error_of(
                session,
                "tools/call",
                mp(
                    ELICIT,
                    name="ask",
                    arguments={},
                    inputResponses={"ask-0": _answer("Ada")},
                    requestState=state,
                ),
            )
            assert err.code == -32602, state


async def test_request_state_from_another_server_is_refused() -> None:
    async with serving(build_server()) as (session, _):
        r1 = await request(session, "tools/call", mp(ELICIT, name="ask", arguments={}))
    async with serving(build_server()) as (session, _):
        err = await error_of(
            session,
            "tools/call",
            mp(
                ELICIT,
                name="ask",
                arguments={},
                inputResponses={"ask-0": _answer("A")},
                requestState=r1["requestState"],
            ),
        )
        assert err.code == -32602


async def test_shared_state_secret_lets_another_server_continue() -> None:
    secret = b"k" * 32
    async with serving(build_server(state_secret=secret)) as (session, _):
        r1 = await request(session, "tools/call", mp(ELICIT, name="ask", arguments={}))
    async with serving(build_server(state_secret=secret)) as (session, _):
        final = await request(
            session,
            "tools/call",
            mp(
                ELICIT,
                name="ask",
                arguments={},
                inputResponses={"ask-0": _answer("Ada")},
                requestState=r1["requestState"],
            ),
        )
        assert final["content"][0]["text"] == "hello Ada"


async def test_request_state_reused_with_other_arguments_is_refused() -> None:
    async with serving(build_server()) as (session, _):
        r1 = await request(
            session, "tools/call", mp(ELICIT, name="ask_about", arguments={"topic": "cats"})
        )
        assert r1["resultType"] == "input_required"
        err = await error_of(
            session,
            "tools/call",
            mp(
                ELICIT,
                name="ask_about",
                arguments={"topic": "dogs"},
                inputResponses={"ask-0": _answer("Rex")},
                requestState=r1["requestState"],
            ),
        )
        assert err.code == -32602
        # The same state with the original arguments still works.
        final = await request(
            session,
            "tools/call",
            mp(
                ELICIT,
                name="ask_about",
                arguments={"topic": "cats"},
                inputResponses={"ask-0": _answer("Tom")},
                requestState=r1["requestState"],
            ),
        )
        assert final["content"][0]["text"] == "cats: Tom"


async def test_request_state_reused_with_another_tool_is_refused() -> None:
    async with serving(build_server()) as (session, _):
        r1 = await request(session, "tools/call", mp(ELICIT, name="ask", arguments={}))
        err = await error_of(
            session,
            "tools/call",
            mp(
                ELICIT,
                name="ask_twice",
                arguments={},
                inputResponses={"ask-0": _answer("A")},
                requestState=r1["requestState"],
            ),
        )
        assert err.code == -32602


async def test_missing_answer_asks_again() -> None:
    async with serving(build_server()) as (session, _):
        r1 = await request(session, "tools/call", mp(ELICIT, name="ask", arguments={}))
        r2 = await request(
            session,
            "tools/call",
            mp(
                ELICIT,
                name="ask",
                arguments={},
                inputResponses={"other": _answer("x")},
                requestState=r1["requestState"],
            ),
        )
        assert r2["resultType"] == "input_required"
        assert list(r2["inputRequests"]) == ["ask-0"]


async def test_expired_request_state_is_refused() -> None:
    server = build_server()
    server.sealer.ttl = -10  # every state is sealed already expired
    async with serving(server) as (session, _):
        r1 = await request(session, "tools/call", mp(ELICIT, name="ask", arguments={}))
        err = await error_of(
            session,
            "tools/call",
            mp(
                ELICIT,
                name="ask",
                arguments={},
                inputResponses={"ask-0": _answer("Ada")},
                requestState=r1["requestState"],
            ),
        )
        assert err.code == -32602
        assert "expired" in err.message


async def test_elicit_without_capability_is_32021() -> None:
    async with serving(build_server()) as (session, _):
        err = await error_of(session, "tools/call", mp({}, name="ask", arguments={}))
        assert err.code == -32021
        assert err.data == {"requiredCapabilities": {"elicitation": {}}}


async def test_prompt_can_ask_too() -> None:
    async with serving(build_server()) as (session, _):
        r1 = await request(session, "prompts/get", mp(ELICIT, name="personal"))
        assert r1["resultType"] == "input_required"
        assert "ttlMs" not in r1
        final = await request(
            session,
            "prompts/get",
            mp(
                ELICIT,
                name="personal",
                inputResponses={"ask-0": _answer("Ada")},
                requestState=r1["requestState"],
            ),
        )
        assert final["resultType"] == "complete"
        assert final["messages"][0]["content"]["text"] == "Write to Ada"


# -- subscriptions/listen ---------------------------------------------------------------------


class Listening:
    """A ``subscriptions/listen`` request in flight on a task of its own."""

    def __init__(self) -> None:
        self.id: RequestId | None = None
        self.result: dict[str, Any] | None = None
        self.error: BaseException | None = None
        self.done = anyio.Event()
        self.scope = anyio.CancelScope()

    async def run(self, session: Session, notifications: dict[str, Any]) -> None:
        with self.scope:
            try:
                self.result = await session.request(
                    "subscriptions/listen",
                    mp(notifications=notifications),
                    timeout=30,
                    on_id=self._set_id,
                )
            except Exception as exc:
                self.error = exc
            finally:
                self.done.set()

    def _set_id(self, rid: RequestId) -> None:
        self.id = rid


def _subscription(note: Notification) -> Any:
    assert note.params is not None
    return note.params["_meta"][SUB]


@asynccontextmanager
async def listening(
    session: Session, inbox: Inbox, notifications: dict[str, Any]
) -> AsyncIterator[tuple[Listening, Notification]]:
    listen = Listening()
    async with anyio.create_task_group() as tg:
        tg.start_soon(listen.run, session, notifications)
        ack = await inbox.next("notifications/subscriptions/acknowledged")
        yield listen, ack
        listen.scope.cancel()


async def test_listen_resource_subscriptions_are_bounded() -> None:
    """As ``resources/subscribe`` is per connection: at most ``MAX_SUBSCRIPTIONS``
    URIs in one listen, each at most ``MAX_SUBSCRIBED_URI`` long (-32602)."""
    from mcpwire._subscriptions import MAX_SUBSCRIBED_URI, MAX_SUBSCRIPTIONS

    server = build_server()
    async with serving(server) as (session, _):
        many = [f"mem://{n}" for n in range(MAX_SUBSCRIPTIONS + 1)]
        long = ["mem://" + "x" * MAX_SUBSCRIBED_URI]
        for uris in (many, long):
            err = await error_of(
                session, "subscriptions/listen", mp(notifications={"resourceSubscriptions": uris})
            )
            assert err.code == -32602 and "resourceSubscriptions" in err.message


async def test_listen_ack_first_with_id_and_honored_filter() -> None:
    server = build_server()
    async with serving(server) as (session, inbox):
        wanted = {
            "toolsListChanged": True,
            "promptsListChanged": True,
            "resourcesListChanged": False,
            "resourceSubscriptions": ["mem://text"],
        }
        async with listening(session, inbox, wanted) as (listen, ack):
            assert listen.id is not None
            assert _subscription(ack) == listen.id
            assert ack.params is not None
            assert ack.params["notifications"] == {
                "toolsListChanged": True,
                "promptsListChanged": True,
                "resourceSubscriptions": ["mem://text"],
            }
            first = next(
                n for n in inbox.items if (n.params or {}).get("_meta", {}).get(SUB) == listen.id
            )
            assert first is ack


async def test_listen_honors_only_what_the_server_has() -> None:
    server = Server("tools-only")

    @server.tool()
    def noop() -> str:
        return ""

    async with serving(server) as (session, inbox):
        wanted = {
            "toolsListChanged": True,
            "promptsListChanged": True,
            "resourcesListChanged": True,
            "resourceSubscriptions": ["mem://x"],
        }
        async with listening(session, inbox, wanted) as (_, ack):
            assert ack.params is not None
            assert ack.params["notifications"] == {"toolsListChanged": True}
            await server.notify_prompts_changed()
            await server.notify_resource_updated("mem://x")
            await request(session, "tools/list", mp())
            assert [n.method for n in inbox.items] == ["notifications/subscriptions/acknowledged"]


async def test_listen_delivers_requested_notifications_only() -> None:
    server = build_server()
    async with serving(server) as (session, inbox):
        wanted = {"toolsListChanged": True, "resourceSubscriptions": ["mem://text"]}
        async with listening(session, inbox, wanted) as (listen, _):
            await server.notify_prompts_changed()  # not asked for
            await server.notify_resources_changed()  # not asked for
            await server.notify_resource_updated("mem://other")  # not subscribed
            await server.notify_tools_changed()
            await server.notify_resource_updated("mem://text")
            changed = await inbox.next("notifications/tools/list_changed")
            assert changed.params == {"_meta": {SUB: listen.id}}
            updated = await inbox.next("notifications/resources/updated")
            assert updated.params == {"_meta": {SUB: listen.id}, "uri": "mem://text"}
            await request(session, "tools/list", mp())
            assert [n.method for n in inbox.items] == [
                "notifications/subscriptions/acknowledged",
                "notifications/tools/list_changed",
                "notifications/resources/updated",
            ]
            assert not listen.done.is_set()


async def test_two_listens_are_told_apart() -> None:
    server = build_server()
    async with (
        serving(server) as (session, inbox),
        listening(session, inbox, {"toolsListChanged": True}) as (a, _),
        listening(session, inbox, {"promptsListChanged": True}) as (b, _),
    ):
        assert a.id != b.id
        await server.notify_tools_changed()
        await server.notify_prompts_changed()
        tools = await inbox.next("notifications/tools/list_changed")
        prompts = await inbox.next("notifications/prompts/list_changed")
        assert _subscription(tools) == a.id
        assert _subscription(prompts) == b.id


async def test_cancelled_listen_ends_without_response() -> None:
    server = build_server()
    async with serving(server) as (session, inbox):
        async with listening(session, inbox, {"toolsListChanged": True}) as (listen, _):
            await session.notify("notifications/cancelled", {"requestId": listen.id})
            await request(session, "tools/list", mp())
            (conn,) = server.connections
            assert conn.listeners == {}
            await server.notify_tools_changed()
            server.close_subscriptions()
            await request(session, "tools/list", mp())
            await anyio.sleep(0.05)
            assert inbox.of("notifications/tools/list_changed") == []
            assert not listen.done.is_set(), (listen.result, listen.error)
        assert session.rpc.counters.late_responses == 0


async def test_close_subscriptions_ends_listen_with_result() -> None:
    server = build_server()
    async with (
        serving(server) as (session, inbox),
        listening(session, inbox, {"toolsListChanged": True}) as (listen, _),
    ):
        server.close_subscriptions()
        with anyio.fail_after(WAIT):
            await listen.done.wait()
        assert listen.error is None
        assert listen.result is not None
        assert listen.result["resultType"] == "complete"
        assert listen.result["_meta"][SUB] == listen.id
        # The stream is over: nothing more is delivered on it.
        await server.notify_tools_changed()
        await request(session, "tools/list", mp())
        assert inbox.of("notifications/tools/list_changed") == []


async def test_listen_survives_other_traffic_and_can_be_reopened() -> None:
    server = build_server()
    async with serving(server) as (session, inbox):
        async with listening(session, inbox, {"toolsListChanged": True}) as (first, _):
            server.close_subscriptions()
            with anyio.fail_after(WAIT):
                await first.done.wait()
        async with listening(session, inbox, {"toolsListChanged": True}) as (second, _):
            await request(session, "tools/call", mp(name="echo", arguments={"message": "x"}))
            await server.notify_tools_changed()
            note = await inbox.next("notifications/tools/list_changed")
            assert _subscription(note) == second.id


async def test_listen_keeps_a_string_id() -> None:
    server = build_server()
    client_end, server_end = mcpwire.memory_pair(wire=True)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, server_end)
        try:
            with anyio.fail_after(WAIT):
                await client_end.send(
                    Request(
                        "listen-1",
                        "subscriptions/listen",
                        mp(notifications={"toolsListChanged": True}),
                    )
                )
                ack = await client_end.receive()
                assert isinstance(ack, Notification)
                assert ack.method == "notifications/subscriptions/acknowledged"
                assert ack.params is not None and ack.params["_meta"] == {SUB: "listen-1"}
                await server.notify_tools_changed()
                changed = await client_end.receive()
                assert isinstance(changed, Notification)
                assert changed.params == {"_meta": {SUB: "listen-1"}}
                server.close_subscriptions()
                final = await client_end.receive()
                assert isinstance(final, Response) and final.id == "listen-1"
                assert final.result["_meta"][SUB] == "listen-1"
        finally:
            await client_end.aclose()
            tg.cancel_scope.cancel()


class AckHeld:
    """A listen of ``mem://text`` whose acknowledgement the server's transport
    holds until ``go`` is set, and an update of it published meanwhile
    (``published`` is set once the server has done with that update)."""

    def __init__(self, server: Server, session: Session, inbox: Inbox, go: anyio.Event) -> None:
        self.server = server
        self.session = session
        self.inbox = inbox
        self.go = go
        self.listen = Listening()
        self.published = anyio.Event()


@asynccontextmanager
async def ack_held() -> AsyncIterator[AckHeld]:
    server = build_server()
    client_end, server_end = mcpwire.memory_pair(wire=True)
    acking, go = anyio.Event(), anyio.Event()
    send = server_end.send

    async def holding(message: Any, *, related: RequestId | None = None) -> None:
        if getattr(message, "method", None) == "notifications/subscriptions/acknowledged":
            acking.set()
            await go.wait()
        await send(message, related=related)

    server_end.send = holding  # type: ignore[method-assign]
    inbox = Inbox()
    with anyio.fail_after(WAIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(server.serve, server_end)
            async with Session(client_end, on_notification=inbox) as session:
                held = AckHeld(server, session, inbox, go)
                uris = {"resourceSubscriptions": ["mem://text"]}
                tg.start_soon(held.listen.run, session, uris)
                await acking.wait()

                async def publish() -> None:
                    await server.notify_resource_updated("mem://text")
                    held.published.set()

                tg.start_soon(publish)
                await anyio.sleep(0.05)  # published while the acknowledgement is held
                yield held
                held.listen.scope.cancel()
            tg.cancel_scope.cancel()
    inbox.close()


async def test_an_update_published_while_the_listen_is_acknowledged_comes_after_the_ack() -> None:
    """Listening starts before the acknowledgement goes out: what is published
    while it is on its way is neither lost nor sent ahead of it (the
    acknowledgement MUST be the subscription's first message)."""
    async with ack_held() as held:
        held.go.set()
        updated = await held.inbox.next("notifications/resources/updated")
        await held.published.wait()
        assert [n.method for n in held.inbox.items] == [
            "notifications/subscriptions/acknowledged",
            "notifications/resources/updated",
        ]
        assert updated.params == {"_meta": {SUB: held.listen.id}, "uri": "mem://text"}


async def test_an_update_waiting_for_an_acknowledgement_that_never_went_out_is_dropped() -> None:
    """A listen cancelled while its acknowledgement is on its way ends without
    one; what was published for it meanwhile is not sent either."""
    async with ack_held() as held:
        assert not held.published.is_set()
        session = held.session
        await session.notify("notifications/cancelled", {"requestId": held.listen.id})
        await held.published.wait()
        await request(session, "tools/list", mp())
        (conn,) = held.server.connections
        assert conn.listeners == {}
        assert held.inbox.items == []
