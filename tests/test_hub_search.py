"""Tool search over a live hub (pain point #10, ``_hub_search``).

The hub runs real server processes (the hub test server of
``test_hub_support``); a model sees three tools, finds the one it needs by
words, reads its schema, and calls it through the hub's approval hook.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from test_hub_support import PY, ready, write_scripts

from mcpwire import Hub, ServerConfig, ToolCallRefused, ToolSearch
from mcpwire._hub_search import MAX_LIMIT, words

pytestmark = pytest.mark.anyio


def test_words_split_the_ways_tools_are_named() -> None:
    assert words("github__create_issue") == ["github", "create", "issue"]
    assert words("listPullRequests") == ["list", "pull", "requests"]
    assert words("HTTPServer2 up-time") == ["http", "server", "2", "up", "time"]
    assert words("") == []
    assert words("Météo für München") == ["météo", "für", "münchen"]
    assert words("天気_予報") == ["天気", "予報"]


@given(st.text())
@example("İstanbul ΣΑΣ")
def test_words_are_lowercase_letters_and_digits(text: str) -> None:
    for word in words(text):
        assert word and word == word.lower() and word.isalnum()
        assert word in text.lower()  # taken from the text, not made up


async def test_a_model_finds_describes_and_calls_a_tool(tmp_path: Path) -> None:
    script, _ = write_scripts(tmp_path)
    asked: list[dict[str, Any]] = []

    async def approve(server: str, tool: str, args: dict[str, Any]) -> bool:
        asked.append(args)
        return args.get("message") != "no"

    servers = [
        ServerConfig(name="alpha", command=PY, args=[script]),
        ServerConfig(name="beta", command=PY, args=[script], disabled_tools=["echo"]),
    ]
    async with Hub(servers=servers, approve=approve) as hub:
        await ready(hub)
        search = ToolSearch(hub, provider="gemini")
        assert [d["name"] for d in search.definitions()] == [
            "search_tools",
            "describe_tool",
            "call_tool",
        ]
        # A word of the name beats one of the description; disabled tools are not found.
        assert [t.name for t in search.search("echo")] == ["alpha__echo"]
        found = [t.name for t in search.search("process id")]
        assert found[:2] == ["alpha__pid", "beta__pid"]  # "process id" is its description
        assert [t.name for t in search.search("sle")] == []  # no word starts a name
        assert [t.name for t in search.search("na")] == ["alpha__nap", "beta__nap"]
        assert len(search.search("", limit=3)) == 3
        assert search.search("zebra quux") == []

        result = await search.call("search_tools", {"query": "echo the message", "limit": 1})
        assert result.structured == {
            "tools": [{"name": "alpha__echo", "summary": "Echo the message back."}]
        }
        described = await search.call("describe_tool", {"name": "alpha__echo"})
        assert isinstance(described.structured, dict)
        assert described.structured["inputSchema"] == {
            "type": "object",
            "properties": {"message": {"type": "string"}},
            "required": ["message"],
        }
        called = await search.call(
            "call_tool", {"name": "alpha__echo", "arguments": {"message": "hi"}}
        )
        assert called.text == "hi" and not called.is_error
        assert asked == [{"message": "hi"}]
        with pytest.raises(ToolCallRefused, match="not approved"):
            await search.call("call_tool", {"name": "alpha__echo", "arguments": {"message": "no"}})

        for name, args, words_of_error in [
            ("describe_tool", {"name": "beta__echo"}, "no tool named 'beta__echo'"),
            ("call_tool", {"name": "nope"}, "no tool named 'nope'"),
            ("call_tool", {"name": "alpha__echo", "arguments": [1]}, "must be an object"),
            ("search_tools", {}, "needs a query"),
            ("search_tools", {"query": "x", "limit": MAX_LIMIT + 1}, "limit must be"),
            ("search_tools", {"query": "x", "limit": True}, "limit must be"),
            ("launch", {}, "unknown tool 'launch'"),
        ]:
            refused = await search.call(name, args)
            assert refused.is_error and words_of_error in refused.text, (name, refused.text)
