"""``CallToolResult.from_json`` reads a tool result as the MCP schema has it.

``content`` is an array of content blocks, ``isError`` a boolean and ``_meta`` an
object where present (every revision); ``structuredContent`` is any JSON value
(an object up to 2025-11-25, any value in 2026-07-28). A result that breaks
this raises ``RemoteProtocolError`` naming the member, and ``Client.call_tool``
fails that call with it while the connection serves on.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import json_objects, json_values, texts

from mcpwire import CallToolResult, Client, Content, RemoteProtocolError
from mcpwire.sansio import JSONObject, JSONValue

_block_types = st.sampled_from(["text", "image", "audio", "resource_link", "resource", "future"])
content_blocks = st.builds(lambda kind, rest: {**rest, "type": kind}, _block_types, json_objects)


@st.composite
def results(draw: st.DrawFn) -> JSONObject:
    """A valid CallToolResult (extra members included: results are open objects)."""
    raw: JSONObject = dict(draw(json_objects))
    for key in ("content", "isError", "structuredContent", "_meta"):
        raw.pop(key, None)
    raw["content"] = draw(st.lists(content_blocks, max_size=4))
    if draw(st.booleans()):
        raw["isError"] = draw(st.booleans())
    if draw(st.booleans()):
        raw["structuredContent"] = draw(json_values)
    if draw(st.booleans()):
        raw["_meta"] = draw(json_objects)
    return raw


@given(results())
def test_a_valid_result_round_trips(raw: JSONObject) -> None:
    result = CallToolResult.from_json(raw)
    assert result.raw is raw
    assert result.content == [Content.from_json(b) for b in raw["content"]]  # type: ignore[union-attr]
    assert result.is_error is raw.get("isError", False)
    assert result.structured == raw.get("structuredContent")
    assert result.meta == raw.get("_meta")
    again = CallToolResult.from_json(orjson.loads(orjson.dumps(result.raw)))
    assert again == result


def _not(kind: type | tuple[type, ...]) -> st.SearchStrategy[JSONValue]:
    return json_values.filter(lambda v: not isinstance(v, kind))


_not_a_block = st.one_of(
    _not(dict),
    json_objects.map(lambda o: {k: v for k, v in o.items() if k != "type"}),
    st.builds(lambda o, t: {**o, "type": t}, json_objects, _not(str)),
)


@st.composite
def malformed(draw: st.DrawFn) -> tuple[JSONObject, str]:
    """A valid result with one member broken, and the member's name."""
    raw = draw(results())
    member = draw(st.sampled_from(["content", "content[i]", "isError", "_meta"]))
    if member == "content":
        if draw(st.booleans()):
            raw[member] = draw(_not(list))
        else:
            del raw[member]
    elif member == "content[i]":
        blocks: list[JSONValue] = list(raw["content"])  # type: ignore[arg-type]
        i = draw(st.integers(0, len(blocks)))
        blocks.insert(i, draw(_not_a_block))
        raw["content"], member = blocks, f"content[{i}]"
    elif member == "isError":
        # ``bool`` is an ``int``: 0 and 1 are not booleans, nor are "true" and null.
        raw[member] = draw(json_values.filter(lambda v: type(v) is not bool))
    else:
        raw[member] = draw(_not(dict))
    return raw, member


@given(malformed())
def test_each_malformed_member_is_a_precise_error(case: tuple[JSONObject, str]) -> None:
    raw, member = case
    with pytest.raises(RemoteProtocolError) as info:
        CallToolResult.from_json(raw)
    assert f"malformed CallToolResult: {member!r} must be" in str(info.value)


@given(texts)
def test_the_message_says_what_the_member_was(text: str) -> None:
    with pytest.raises(RemoteProtocolError, match="'isError' must be a boolean, not a string"):
        CallToolResult.from_json({"content": [], "isError": text})
    wanted = "'content' must be an array of content blocks, not an object"
    with pytest.raises(RemoteProtocolError, match=wanted):
        CallToolResult.from_json({"content": {"type": "text", "text": text}})


# -- through the client ------------------------------------------------------------------

ECHO_RESULT = textwrap.dedent(
    """
    import json
    import sys

    for line in sys.stdin:
        msg = json.loads(line)
        if "id" not in msg:
            continue
        if msg["method"] == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "echo-result", "version": "1"}}
        elif msg["method"] == "tools/list":
            result = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
        else:  # tools/call: answers with the result it is given
            result = msg["params"]["arguments"]["result"]
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}) + "\\n")
        sys.stdout.flush()
    """
)


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("result", "member"),
    [
        ({"content": "hello"}, "content"),
        ({}, "content"),
        ({"content": [{"type": "text", "text": "a"}, "b"]}, "content[1]"),
        ({"content": [], "isError": "true"}, "isError"),
        ({"content": [], "isError": 1}, "isError"),
        ({"content": [], "_meta": []}, "_meta"),
    ],
)
async def test_the_client_fails_the_call_naming_the_member(
    tmp_path: Path, result: dict[str, Any], member: str
) -> None:
    script = tmp_path / "echo_result.py"
    script.write_text(ECHO_RESULT)
    with anyio.fail_after(10):
        async with Client.stdio(sys.executable, [str(script)], mode="legacy") as client:
            with pytest.raises(RemoteProtocolError) as info:
                await client.call_tool("t", {"result": result})
            assert f"malformed CallToolResult: {member!r}" in str(info.value)
            # The call failed alone: the connection serves the next one.
            fine = {"content": [{"type": "text", "text": "ok"}], "isError": False}
            assert (await client.call_tool("t", {"result": fine})).text == "ok"
