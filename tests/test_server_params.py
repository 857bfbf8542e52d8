"""Request params every MCP revision's schema forbids get -32602, in both eras.

``schema.ts`` (2024-11-05 ... 2026-07-28) types ``params._meta`` as an optional
object, ``_meta.progressToken`` as ``string | number``, and ``tools/call`` /
``prompts/get`` ``arguments`` as optional objects. ``null`` is none of these.
The server runs on a serialising memory pair; the client is a plain ``Session``
sending exactly the params under test. ``check_params`` itself is swept with
Hypothesis over any JSON in those places.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from inproc import WAIT, serving
from strategies import json_values

from mcpwire import Context, JSONRPCError, Server, Session
from mcpwire._params import check_params
from mcpwire.sansio._json import kind_of

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
PV = "io.modelcontextprotocol/protocolVersion"
CC = "io.modelcontextprotocol/clientCapabilities"
NOT_OBJECTS: list[Any] = [None, 5, 1.5, "x", True, []]
BAD_TOKENS: list[Any] = [None, True, False, {}, {"a": 1}, [], [1]]


def build_server() -> Server:
    server = Server("params", "1")

    @server.tool()
    def echo(message: str = "hi") -> str:
        return message

    @server.tool()
    async def progress(ctx: Context) -> str:
        await ctx.report_progress(1, 2)
        return "done"

    @server.prompt()
    def greet(name: str = "you") -> str:
        return f"Hello {name}."

    @server.resource("mem://text", mime_type="text/plain")
    def text() -> str:
        return "hello"

    return server


async def legacy(session: Session) -> None:
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t"}}
    with anyio.fail_after(WAIT):
        await session.request("initialize", init)
    await session.notify("notifications/initialized")


def params_for(era: str, params: dict[str, Any], **meta: Any) -> dict[str, Any]:
    """``params`` with ``meta`` in ``_meta`` (plus the envelope in the modern era)."""
    out = dict(params)
    if era == "modern":
        out["_meta"] = {PV: MODERN, CC: {}, **meta}
    elif meta:
        out["_meta"] = dict(meta)
    return out


async def refusal(session: Session, method: str, params: dict[str, Any]) -> str:
    with anyio.fail_after(WAIT), pytest.raises(JSONRPCError) as info:
        await session.request(method, params)
    assert info.value.code == -32602, info.value
    return info.value.message


REQUESTS = [
    ("tools/list", {}),
    ("tools/call", {"name": "echo", "arguments": {}}),
    ("prompts/get", {"name": "greet"}),
    ("resources/read", {"uri": "mem://text"}),
    ("ping", {}),
    ("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}}),
]


@pytest.mark.parametrize("meta", NOT_OBJECTS, ids=kind_of)
@pytest.mark.parametrize(("method", "params"), REQUESTS, ids=[m for m, _ in REQUESTS])
async def test_meta_that_is_not_an_object_is_invalid_params(
    method: str, params: dict[str, Any], meta: Any
) -> None:
    async with serving(build_server()) as (session, _):
        if method != "initialize":
            await legacy(session)
        message = await refusal(session, method, {**params, "_meta": meta})
        assert message == f"params._meta must be an object (or left out), not {kind_of(meta)}"
        # The connection goes on, and the same request with an object _meta is served.
        with anyio.fail_after(WAIT):
            await session.request(method, {**params, "_meta": {}})


@pytest.mark.parametrize("meta", NOT_OBJECTS, ids=kind_of)
async def test_meta_that_is_not_an_object_on_a_modern_only_method(meta: Any) -> None:
    async with serving(build_server()) as (session, _):
        message = await refusal(session, "server/discover", {"_meta": meta})
        assert message == f"params._meta must be an object (or left out), not {kind_of(meta)}"


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("token", BAD_TOKENS, ids=kind_of)
async def test_progress_token_of_the_wrong_type_is_invalid_params(era: str, token: Any) -> None:
    async with serving(build_server()) as (session, _):
        if era == "legacy":
            await legacy(session)
        params = params_for(era, {"name": "echo", "arguments": {}}, progressToken=token)
        message = await refusal(session, "tools/call", params)
        assert message == (
            f"params._meta.progressToken must be a string or a number, not {kind_of(token)}"
        )


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("token", ["t", 0, -7, 2**63 - 1, 1.5])
async def test_every_progress_token_the_schema_allows_is_echoed(era: str, token: Any) -> None:
    async with serving(build_server()) as (session, inbox):
        if era == "legacy":
            await legacy(session)
        params = params_for(era, {"name": "progress", "arguments": {}}, progressToken=token)
        with anyio.fail_after(WAIT):
            result = await session.request("tools/call", params)
        assert result["content"][0]["text"] == "done"
        (note,) = inbox.of("notifications/progress")
        assert note.params is not None
        got = note.params["progressToken"]
        assert got == token and type(got) is type(token)


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("arguments", NOT_OBJECTS, ids=kind_of)
@pytest.mark.parametrize(("method", "name"), [("tools/call", "echo"), ("prompts/get", "greet")])
async def test_arguments_that_are_not_an_object_are_invalid_params(
    era: str, arguments: Any, method: str, name: str
) -> None:
    async with serving(build_server()) as (session, _):
        if era == "legacy":
            await legacy(session)
        params = params_for(era, {"name": name, "arguments": arguments})
        message = await refusal(session, method, params)
        kind = kind_of(arguments)
        assert message == f"{method}: params.arguments must be an object (or left out), not {kind}"
        # Left out, arguments are an empty object.
        with anyio.fail_after(WAIT):
            result = await session.request(method, params_for(era, {"name": name}))
        assert not result.get("isError")


# -- check_params itself --------------------------------------------------------------------


def _verdict(method: str, params: dict[str, Any]) -> str | None:
    try:
        check_params(method, params)
    except JSONRPCError as exc:
        return f"{exc.code}: {exc.message}"
    return None


def _token_ok(token: Any) -> bool:
    return isinstance(token, (str, int, float)) and not isinstance(token, bool)


@given(meta=json_values, method=st.sampled_from(["tools/call", "prompts/get", "ping", "x/y"]))
def test_check_params_refuses_exactly_the_non_object_meta(meta: Any, method: str) -> None:
    verdict = _verdict(method, {"_meta": meta})
    if not isinstance(meta, dict):
        assert (
            verdict == f"-32602: params._meta must be an object (or left out), not {kind_of(meta)}"
        )
    elif "progressToken" in meta and not _token_ok(meta["progressToken"]):
        assert verdict is not None and verdict.startswith(
            "-32602: params._meta.progressToken must be"
        )
    else:
        assert verdict is None


@given(token=json_values, arguments=json_values)
def test_check_params_judges_token_and_arguments(token: Any, arguments: Any) -> None:
    params = {"name": "t", "arguments": arguments, "_meta": {"progressToken": token}}
    verdict = _verdict("tools/call", params)
    if not _token_ok(token):
        assert verdict is not None and verdict.startswith("-32602: params._meta.progressToken")
    elif not isinstance(arguments, dict):
        assert verdict is not None and verdict.startswith("-32602: tools/call: params.arguments")
    else:
        assert verdict is None
    # Only tools/call and prompts/get type ``arguments``; other methods leave it be.
    other = _verdict("resources/read", {"arguments": arguments})
    assert other is None


def test_check_params_returns_meta() -> None:
    meta = {"progressToken": 1}
    assert check_params("ping", {"_meta": meta}) is meta
    assert check_params("ping", {}) is None
