"""Legacy results carry exactly the fields the negotiated revision defines (spec-notes §4)."""

from __future__ import annotations

import pytest

from mcpwire import Client, Server
from mcpwire._compat import shape_legacy_result, shape_server_info

pytestmark = pytest.mark.anyio

TOOL = {
    "name": "t",
    "title": "T",
    "description": "d",
    "inputSchema": {"type": "object"},
    "outputSchema": {"type": "object"},
    "annotations": {"readOnlyHint": True},
    "icons": [{"src": "data:,"}],
    "_meta": {"k": 1},
}

EXPECTED_TOOL_KEYS = {
    "2024-11-05": {"name", "description", "inputSchema"},
    "2025-03-26": {"name", "description", "inputSchema", "annotations"},
    "2025-06-18": {
        "name",
        "description",
        "inputSchema",
        "annotations",
        "title",
        "outputSchema",
        "_meta",
    },
    "2025-11-25": set(TOOL),
}


@pytest.mark.parametrize("version", sorted(EXPECTED_TOOL_KEYS))
def test_tools_list_fields_per_version(version: str) -> None:
    shaped = shape_legacy_result("tools/list", version, {"tools": [TOOL]})
    assert set(shaped["tools"][0]) == EXPECTED_TOOL_KEYS[version]  # type: ignore[index,call-overload]


@pytest.mark.parametrize(
    ("version", "has_structured"),
    [("2024-11-05", False), ("2025-03-26", False), ("2025-06-18", True), ("2025-11-25", True)],
)
def test_structured_content_only_where_defined(version: str, has_structured: bool) -> None:
    result = {"content": [], "structuredContent": {"a": 1}, "isError": False}
    shaped = shape_legacy_result("tools/call", version, result)
    assert ("structuredContent" in shaped) is has_structured


def test_server_info_fields() -> None:
    info = {"name": "n", "version": "1", "title": "T", "description": "D", "websiteUrl": "u"}
    assert set(shape_server_info(info, "2024-11-05")) == {"name", "version"}
    assert set(shape_server_info(info, "2025-06-18")) == {"name", "version", "title"}
    assert shape_server_info(info, "2025-11-25") == info


def test_unchanged_results_are_not_copied() -> None:
    result = {"tools": [{"name": "t", "inputSchema": {}}]}
    assert shape_legacy_result("ping", "2024-11-05", result) is result
    assert shape_legacy_result("tools/list", "2025-11-25", result) is result


async def test_a_2024_client_sees_the_old_shapes() -> None:
    server = Server("s", "1", title="Title")

    @server.tool(title="Adder")
    def add(a: int, b: int) -> int:
        return a + b

    async with Client(server, mode="2024-11-05") as client:
        assert client.protocol_version == "2024-11-05"
        assert set(client.server_info) == {"name", "version"}
        [tool] = await client.list_tools()
        assert tool.title is None and tool.output_schema is None
        result = await client.call_tool("add", {"a": 2, "b": 3})
        assert result.structured is None
        assert result.text == "5"


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("2024-11-05", None),
        ("2025-03-26", None),
        ("2025-06-18", {}),
        ("2025-11-25", {"form": {}, "url": {}}),
        ("2026-07-28", {"form": {}, "url": {}}),
    ],
)
def test_client_declares_elicitation_only_where_defined(version: str, expected: object) -> None:
    async def answer(params: dict[str, object]) -> dict[str, object]:
        return {"action": "decline"}

    client = Client(Server("s"), elicitation=answer)  # type: ignore[arg-type]
    assert client._capabilities(version).get("elicitation") == expected


async def test_a_value_with_no_json_form_becomes_text() -> None:
    import datetime

    server = Server("s")
    moment = datetime.datetime(2026, 7, 28, 12, 0)

    @server.tool(structured=False)
    def when():  # type: ignore[no-untyped-def]
        return moment

    async with Client(server) as client:
        result = await client.call_tool("when")
        assert not result.is_error
        assert result.text == str(moment)
