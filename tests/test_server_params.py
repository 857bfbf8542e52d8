"""Request params every MCP revision's schema forbids get -32602, in both eras.

``schema.ts`` (2024-11-05 ... 2026-07-28) types ``params._meta`` as an object
(optional before 2026-07-28), ``_meta.progressToken`` as ``string | number``,
and these params as objects wherever a revision has them: ``tools/call`` /
``prompts/get`` ``arguments``, ``tools/call`` ``task`` (2025-11-25),
``inputResponses`` of ``tools/call``, ``prompts/get`` and ``resources/read``
(2026-07-28), ``completion/complete`` ``ref``, ``argument``, ``context`` and
``context.arguments``, ``initialize`` ``capabilities`` and ``clientInfo``,
``subscriptions/listen`` ``notifications``. ``null`` is none of these. The
client's capabilities (``initialize`` ``capabilities``; the 2026-07-28
envelope's ``clientCapabilities``) are typed member by member: ``roots``,
``sampling``, ``elicitation``, ``tasks`` objects, ``experimental`` and
``extensions`` objects of objects, ``roots.listChanged`` a boolean, the inner
``sampling`` / ``elicitation`` members objects; the rest is left alone.
The server runs on a serialising memory pair; the client is a plain ``Session``
sending exactly the params under test. ``check_params`` itself is swept with
Hypothesis over any JSON in those places.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from http_raw import client as raw_client
from http_raw import modern, running
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

    @server.completion(prompt="greet", argument="name")
    def names(value: str) -> list[str]:
        return [n for n in ("Ada", "Alan") if n.startswith(value)]

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
        assert message == f"params._meta must be an object, not {kind_of(meta)}"
        # The connection goes on, and the same request with an object _meta is served.
        with anyio.fail_after(WAIT):
            await session.request(method, {**params, "_meta": {}})


@pytest.mark.parametrize("meta", NOT_OBJECTS, ids=kind_of)
async def test_meta_that_is_not_an_object_on_a_modern_only_method(meta: Any) -> None:
    async with serving(build_server()) as (session, _):
        message = await refusal(session, "server/discover", {"_meta": meta})
        assert message == f"params._meta must be an object, not {kind_of(meta)}"


async def test_a_modern_only_method_without_meta_is_told_what_is_missing() -> None:
    """2026-07-28 requests must carry ``_meta``: left out, the refusal names it and
    the two keys it carries; an object without them names the keys missing."""
    async with serving(build_server()) as (session, _):
        message = await refusal(session, "server/discover", {})
        assert message == (
            f"params._meta is missing: a {MODERN} request carries {PV!r} and {CC!r} in it"
        )
        message = await refusal(session, "server/discover", {"_meta": {PV: MODERN}})
        assert message == f"params._meta is missing the required key(s): {CC}"


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


META_CASES: list[Any] = [*NOT_OBJECTS, "absent", {PV: MODERN}, {CC: {}}]


def meta_case_id(meta: Any) -> str:
    return (
        meta
        if meta == "absent"
        else kind_of(meta)
        if not isinstance(meta, dict)
        else "-".join(meta)
    )


@pytest.mark.parametrize("meta", META_CASES, ids=meta_case_id)
async def test_a_bad_meta_over_modern_http_is_told_as_over_any_wire(meta: Any) -> None:
    """A modern POST whose ``_meta`` is no object gets -32602 in the words of
    ``check_params``; one without ``_meta``, or without a key of the envelope, is
    told exactly what is missing. Over a plain JSON-RPC wire the same request
    (``server/discover``: modern whatever its ``_meta``) gets the same error."""
    body, headers = modern(1, "server/discover")
    if meta == "absent":
        del body["params"]["_meta"]
    else:
        body["params"]["_meta"] = meta
    async with running(build_server()) as http, raw_client(http.port or 0) as raw:
        reply = await raw.request(body=body, headers=headers)
    assert reply.status == 400, reply
    error = reply.json()["error"]
    assert error["code"] == -32602
    async with serving(build_server()) as (session, _):
        assert error["message"] == await refusal(session, "server/discover", body["params"])
    if meta == "absent":
        assert error["message"] == (
            f"params._meta is missing: a {MODERN} request carries {PV!r} and {CC!r} in it"
        )
    elif isinstance(meta, dict):
        missing = CC if PV in meta else PV
        assert error["message"] == f"params._meta is missing the required key(s): {missing}"
    else:
        assert error["message"] == f"params._meta must be an object, not {kind_of(meta)}"


COMPLETE = {
    "ref": {"type": "ref/prompt", "name": "greet"},
    "argument": {"name": "name", "value": "A"},
}

#: (method, valid params, member path, optional, eras): each member the schema
#: types as an object, with params that are served when it is one.
OBJECT_MEMBERS: list[tuple[str, dict[str, Any], str, bool, tuple[str, ...]]] = [
    ("tools/call", {"name": "echo"}, "task", True, ("legacy", "modern")),
    ("tools/call", {"name": "echo"}, "inputResponses", True, ("legacy", "modern")),
    ("prompts/get", {"name": "greet"}, "inputResponses", True, ("legacy", "modern")),
    ("resources/read", {"uri": "mem://text"}, "inputResponses", True, ("legacy", "modern")),
    ("completion/complete", COMPLETE, "context", True, ("legacy", "modern")),
    ("completion/complete", COMPLETE, "context.arguments", True, ("legacy", "modern")),
    ("completion/complete", COMPLETE, "ref", False, ("legacy", "modern")),
    ("completion/complete", COMPLETE, "argument", False, ("legacy", "modern")),
    ("initialize", {"protocolVersion": "2025-11-25"}, "capabilities", False, ("legacy",)),
    ("initialize", {"protocolVersion": "2025-11-25"}, "clientInfo", False, ("legacy",)),
    ("subscriptions/listen", {}, "notifications", False, ("modern",)),
]
OBJECT_CASES = [
    pytest.param(era, method, params, path, optional, id=f"{method}-{path}-{era}")
    for method, params, path, optional, eras in OBJECT_MEMBERS
    for era in eras
]


def with_member(params: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """``params`` with ``value`` at ``path`` (``a.b``: in the object ``a``)."""
    out = dict(params)
    outer, _, inner = path.partition(".")
    out[outer] = {inner: value} if inner else value
    return out


@pytest.mark.parametrize("value", NOT_OBJECTS, ids=kind_of)
@pytest.mark.parametrize(("era", "method", "params", "path", "optional"), OBJECT_CASES)
async def test_object_params_that_are_not_objects_are_invalid_params(
    era: str, method: str, params: dict[str, Any], path: str, optional: bool, value: Any
) -> None:
    """Whatever the era and whatever the server offers (no tasks here), a member the
    schema types as an object is refused when it is anything else, naming it."""
    async with serving(build_server()) as (session, _):
        if era == "legacy" and method != "initialize":
            await legacy(session)
        message = await refusal(session, method, params_for(era, with_member(params, path, value)))
        left_out = " (or left out)" if optional else ""
        assert message == (
            f"{method}: params.{path} must be an object{left_out}, not {kind_of(value)}"
        )
        if method in ("initialize", "subscriptions/listen"):
            return  # a handshake is made once; a listen streams on
        # The connection goes on, and with an object there the request is served.
        good = {} if optional else params[path]
        with anyio.fail_after(WAIT):
            await session.request(method, params_for(era, with_member(params, path, good)))


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_completion_without_ref_or_argument_names_what_is_missing(era: str) -> None:
    async with serving(build_server()) as (session, _):
        if era == "legacy":
            await legacy(session)
        message = await refusal(session, "completion/complete", params_for(era, {}))
        assert message == (
            "completion/complete: params.ref and params.argument are required (an object)"
        )
        only_ref = {"ref": COMPLETE["ref"]}
        message = await refusal(session, "completion/complete", params_for(era, only_ref))
        assert message == "completion/complete: params.argument is required (an object)"
        with anyio.fail_after(WAIT):
            result = await session.request("completion/complete", params_for(era, COMPLETE))
        assert result["completion"]["values"] == ["Ada", "Alan"]


async def test_initialize_may_leave_capabilities_and_client_info_out() -> None:
    """The handshake takes left-out ``capabilities`` / ``clientInfo`` as empty /
    unknown; only a value of another type is refused."""
    async with serving(build_server()) as (session, _):
        with anyio.fail_after(WAIT):
            result = await session.request("initialize", {"protocolVersion": "2025-11-25"})
        assert result["protocolVersion"] == "2025-11-25"


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
        assert verdict == f"-32602: params._meta must be an object, not {kind_of(meta)}"
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


def _object_ok(method: str, path: str, value: Any) -> bool:
    """What the schema says of ``value`` at ``path`` of ``method`` (the oracle)."""
    typed = {(m, p) for m, _, p, _, _ in OBJECT_MEMBERS} | {
        ("tools/call", "arguments"),
        ("prompts/get", "arguments"),
    }
    return (method, path) not in typed or isinstance(value, dict)


@given(
    member=st.sampled_from(
        [(m, p) for m, _, p, _, _ in OBJECT_MEMBERS]
        + [("tools/call", "arguments"), ("ping", "task"), ("tools/list", "ref")]
    ),
    value=json_values,
)
def test_check_params_judges_every_object_member(member: tuple[str, str], value: Any) -> None:
    """Exactly the members the schema types as objects are refused when they are no
    object, and each refusal names the method and the member's path."""
    method, path = member
    verdict = _verdict(method, with_member({}, path, value))
    if _object_ok(method, path, value):
        assert verdict is None
    else:
        assert verdict is not None
        assert verdict.startswith(f"-32602: {method}: params.{path} must be an object")
        assert verdict.endswith(f", not {kind_of(value)}")


def test_check_params_returns_meta() -> None:
    meta = {"progressToken": 1}
    assert check_params("ping", {"_meta": meta}) is meta
    assert check_params("ping", {}) is None


# -- client capabilities ----------------------------------------------------------------------

NOT_BOOLEANS: list[Any] = [None, 0, 1.5, "true", {}, []]
#: Each ``ClientCapabilities`` member the schema types, as a path into the
#: capabilities (``a.b``: member ``b`` of ``a``; ``a[k]``: entry ``k`` of the map
#: ``a``), with the kind it must be and values of every other kind.
CAPABILITY_MEMBERS: list[tuple[str, str, list[Any]]] = [
    ("experimental", "an object", NOT_OBJECTS),
    ("experimental[x]", "an object", NOT_OBJECTS),
    ("extensions", "an object", NOT_OBJECTS),
    ("extensions[com.example/ui]", "an object", NOT_OBJECTS),
    ("roots", "an object", NOT_OBJECTS),
    ("roots.listChanged", "a boolean", NOT_BOOLEANS),
    ("sampling", "an object", NOT_OBJECTS),
    ("sampling.context", "an object", NOT_OBJECTS),
    ("sampling.tools", "an object", NOT_OBJECTS),
    ("elicitation", "an object", NOT_OBJECTS),
    ("elicitation.form", "an object", NOT_OBJECTS),
    ("elicitation.url", "an object", NOT_OBJECTS),
    ("tasks", "an object", NOT_OBJECTS),
]
CAPABILITY_CASES = [
    pytest.param(era, path, want, value, id=f"{path}-{kind_of(value)}-{era}")
    for path, want, wrong in CAPABILITY_MEMBERS
    for value in wrong
    for era in ("legacy", "modern")
]


def capabilities_with(path: str, value: Any) -> dict[str, Any]:
    """Client capabilities holding ``value`` at ``path`` (see ``CAPABILITY_MEMBERS``)."""
    if "[" in path:
        outer, _, key = path.partition("[")
        return {outer: {key.rstrip("]"): value}}
    outer, _, inner = path.partition(".")
    return {outer: {inner: value}} if inner else {outer: value}


def capability_path(path: str) -> str:
    """``path`` as a refusal names it: a map's key as a JSON string."""
    if "[" not in path:
        return path
    outer, _, key = path.partition("[")
    return f"{outer}[{json.dumps(key[:-1])}]"


async def offer_capabilities(session: Session, era: str, caps: dict[str, Any]) -> Any:
    """``caps`` where the era carries them: ``initialize``'s ``capabilities``, or
    a 2026-07-28 request's envelope (``tools/list`` here)."""
    if era == "legacy":
        init = {"protocolVersion": "2025-11-25", "capabilities": caps, "clientInfo": {"name": "t"}}
        return await session.request("initialize", init)
    return await session.request("tools/list", {"_meta": {PV: MODERN, CC: caps}})


@pytest.mark.parametrize(("era", "path", "want", "value"), CAPABILITY_CASES)
async def test_client_capabilities_of_the_wrong_kind_are_invalid_params(
    era: str, path: str, want: str, value: Any
) -> None:
    """Each member of the client's capabilities the schema types is refused when it
    is of another kind, in the era's words and naming it; the same handshake or
    request with the member right is served on the same connection."""
    async with serving(build_server()) as (session, _):
        with anyio.fail_after(WAIT), pytest.raises(JSONRPCError) as info:
            await offer_capabilities(session, era, capabilities_with(path, value))
        where = "initialize: params.capabilities" if era == "legacy" else CC
        assert info.value.code == -32602
        assert info.value.message == (
            f"{where}.{capability_path(path)} must be {want} (or left out), not {kind_of(value)}"
        )
        right = True if want == "a boolean" else {}
        with anyio.fail_after(WAIT):
            await offer_capabilities(session, era, capabilities_with(path, right))


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_client_capabilities_the_schema_allows_and_unknown_members_are_served(
    era: str,
) -> None:
    """Every typed member right, and members the schema does not name of any kind
    (a newer client's): served; ``null`` members of an unnamed one are its own."""
    caps = {
        "experimental": {"x": {"on": True}},
        "extensions": {"com.example/ui": {}},
        "roots": {"listChanged": False, "future": 1},
        "sampling": {"context": {}, "tools": {}},
        "elicitation": {"form": {}, "url": {}, "other": "x"},
        "tasks": {"list": {}, "requests": {"sampling": {"createMessage": {}}}},
        "someday": "anything",
        "nothing": None,
    }
    async with serving(build_server()) as (session, _):
        with anyio.fail_after(WAIT):
            result = await offer_capabilities(session, era, caps)
    assert ("protocolVersion" if era == "legacy" else "tools") in result


def capability_oracle(caps: dict[str, Any]) -> str | None:
    """What the schema says of ``caps``, one member at a time (``CAPABILITY_MEMBERS``):
    ``None``, or the path and kind of the first member that is wrong."""
    typed = {path: want for path, want, _ in CAPABILITY_MEMBERS}
    maps = {path.partition("[")[0] for path in typed if "[" in path}  # objects of objects
    for key, value in caps.items():
        if key not in typed:
            continue
        if not isinstance(value, dict):
            return f"{key}: {typed[key]}, not {kind_of(value)}"
        for name, item in value.items():
            if key in maps:
                path, want = f"{key}[{json.dumps(name)}]", "an object"
            else:
                path, want = f"{key}.{name}", typed.get(f"{key}.{name}")
            if want == "an object" and not isinstance(item, dict):
                return f"{path}: {want}, not {kind_of(item)}"
            if want == "a boolean" and not isinstance(item, bool):
                return f"{path}: {want}, not {kind_of(item)}"
    return None


@given(
    member=st.sampled_from([path for path, _, _ in CAPABILITY_MEMBERS] + ["someday", "roots.x"]),
    value=json_values,
)
def test_check_params_judges_every_client_capability(member: str, value: Any) -> None:
    """Exactly the typed capability members of another kind are refused, each
    naming its path and kind; other methods' ``capabilities`` are theirs."""
    caps = capabilities_with(member, value)
    params = {"protocolVersion": "2025-11-25", "capabilities": caps}
    verdict = _verdict("initialize", params)
    wrong = capability_oracle(caps)
    if wrong is None:
        assert verdict is None
    else:
        path, _, rest = wrong.partition(": ")
        want, _, kind = rest.partition(", not ")
        assert verdict == (
            f"-32602: initialize: params.capabilities.{path} "
            f"must be {want} (or left out), not {kind}"
        )
    assert _verdict("tools/call", params) is None
