"""Exact assertions on the fixture server, through mcpwire's HTTP client.

``python conformance/fixture_check.py http://127.0.0.1:P/mcp`` (``run.py``
runs it as the ``fixture`` leg). Several of the suite's checks pass against a
server that lacks a tool or returns other content (they look only for "some
text", or skip when a diagnostic tool is absent); these make a pass mean
something: every name the suite uses is listed, every fixed content is exact,
``isError`` is set only where it should be, and the modern era's asks and
capability errors behave. One line per assertion, ``PASS name`` or ``FAIL name
why``; the exit status is 1 if any failed.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

sys.path.insert(0, __file__.rsplit("/", 1)[0])

import everything_server as fx

from mcpwire import Client, JSONRPCError
from mcpwire.sansio._json import JSONObject

TOOLS = {
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_error_handling",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool",
    "test_reconnection",
    "test_x_mcp_header",
    "test_missing_capability",
    "test_trigger_tool_change",
    "test_trigger_prompt_change",
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities",
    "test_streaming_elicitation",
    "test_logging_tool",
    # tasks extension fixtures (served synchronously: mcpwire has no tasks yet)
    "greet",
    "slow_compute",
    "failing_job",
    "protocol_error_job",
    "confirm_delete",
    "multi_input",
    "test_tool_with_task",
}
RESOURCES = {"test://static-text", "test://static-binary", "test://watched-resource"}
TEMPLATES = {"test://template/{id}/data"}
PROMPTS = {
    "test_simple_prompt",
    "test_prompt_with_arguments",
    "test_prompt_with_embedded_resource",
    "test_prompt_with_image",
    "test_input_required_result_prompt",
}
IMAGE: JSONObject = {"type": "image", "data": fx.IMAGE_B64, "mimeType": "image/png"}
CONTENT: dict[str, list[JSONObject]] = {
    "test_simple_text": [{"type": "text", "text": fx.SIMPLE_TEXT}],
    "test_image_content": [IMAGE],
    "test_audio_content": [{"type": "audio", "data": fx.AUDIO_B64, "mimeType": "audio/wav"}],
    "test_embedded_resource": [
        {
            "type": "resource",
            "resource": {
                "uri": "test://embedded-resource",
                "mimeType": "text/plain",
                "text": fx.EMBEDDED_TEXT,
            },
        }
    ],
    "test_multiple_content_types": [
        {"type": "text", "text": "Multiple content types test:"},
        IMAGE,
        {
            "type": "resource",
            "resource": {
                "uri": "test://mixed-content-resource",
                "mimeType": "application/json",
                "text": '{"test": "data", "value": 123}',
            },
        },
    ],
}

failures = 0


def report(name: str, ok: bool, why: str = "") -> None:
    global failures
    if ok:
        print(f"PASS {name}", flush=True)
    else:
        failures += 1
        print(f"FAIL {name} {why}", flush=True)


def expect_equal(name: str, actual: object, expected: object) -> None:
    report(name, actual == expected, f"expected {expected!r}, got {actual!r}")


async def guarded(name: str, step: Callable[[], Awaitable[None]]) -> None:
    try:
        with anyio.fail_after(30):
            await step()
    except Exception as exc:
        report(name, False, f"raised {type(exc).__name__}: {exc}")


async def elicit(params: JSONObject) -> JSONObject:
    schema = params.get("requestedSchema")
    props = schema.get("properties") if isinstance(schema, dict) else {}
    answers: JSONObject = {"name": "Ada", "context": "ctx", "color": "blue", "ok": True}
    content: JSONObject = {}
    for key in props if isinstance(props, dict) else {}:
        content[key] = answers.get(key, "answer")
    return {"action": "accept", "content": content}


async def sample(params: JSONObject) -> JSONObject:
    return {
        "role": "assistant",
        "content": {"type": "text", "text": "Paris"},
        "model": "fixture-check",
        "stopReason": "endTurn",
    }


ROOTS = [{"uri": "file:///tmp/fixture", "name": "fixture"}]


Connect = Callable[..., Client]


async def check_era(connect: Connect, mode: str) -> None:
    notes: list[tuple[str, JSONObject]] = []

    async def on_note(method: str, params: JSONObject) -> None:
        notes.append((method, params))

    era = "legacy" if mode == "legacy" else "modern"
    options: dict[str, Any] = {
        "mode": mode,
        "elicitation": elicit,
        "sampling": sample,
        "roots": ROOTS,
        "on_notification": on_note,
    }
    if era == "modern":
        options["log_level"] = "debug"
    async with connect(**options) as client:
        expect_equal(f"{era}/era", client.era, era)
        tools = {t.name: t for t in await client.list_tools()}
        missing = TOOLS - set(tools)
        report(f"{era}/tools-listed", not missing, f"missing {sorted(missing)}")
        expect_equal(
            f"{era}/json-schema-2020-12-verbatim",
            tools["json_schema_2020_12_tool"].input_schema,
            fx.JSON_SCHEMA_2020_12_INPUT_SCHEMA,
        )
        props = tools["test_x_mcp_header"].input_schema.get("properties")
        region = props.get("region") if isinstance(props, dict) else None
        expect_equal(
            f"{era}/x-mcp-header-annotation",
            region.get("x-mcp-header") if isinstance(region, dict) else None,
            "Region",
        )
        resources = {r.uri for r in await client.list_resources()}
        report(f"{era}/resources-listed", resources >= RESOURCES, f"got {sorted(resources)}")
        templates = {t.uri_template for t in await client.list_resource_templates()}
        report(f"{era}/templates-listed", templates >= TEMPLATES, f"got {sorted(templates)}")
        prompts = {p.name for p in await client.list_prompts()}
        report(f"{era}/prompts-listed", prompts >= PROMPTS, f"got {sorted(prompts)}")

        for name, content in CONTENT.items():

            async def call(name: str = name, content: list[JSONObject] = content) -> None:
                result = await client.call_tool(name, {})
                expect_equal(f"{era}/{name}/content", result.raw.get("content"), content)
                expect_equal(f"{era}/{name}/isError", result.is_error, False)

            await guarded(f"{era}/{name}", call)

        async def error() -> None:
            result = await client.call_tool("test_error_handling", {})
            expect_equal(f"{era}/test_error_handling/isError", result.is_error, True)
            expect_equal(f"{era}/test_error_handling/text", result.text, fx.ERROR_TEXT)

        await guarded(f"{era}/test_error_handling", error)

        async def tasks_fixtures() -> None:
            result = await client.call_tool("greet", {"name": "World"})
            expect_equal(f"{era}/greet", (result.text, result.is_error), ("Hello, World!", False))
            if era == "modern":
                # task="required": a client without the tasks extension gets -32021.
                try:
                    await client.call_tool("failing_job", {})
                except JSONRPCError as exc:
                    expect_equal(f"{era}/failing_job/code", exc.code, -32021)
                else:
                    report(f"{era}/failing_job/code", False, "no -32021 error")
            else:
                result = await client.call_tool("failing_job", {})
                expect_equal(f"{era}/failing_job/isError", result.is_error, True)
            try:
                await client.call_tool("protocol_error_job", {})
            except JSONRPCError as exc:
                expect_equal(f"{era}/protocol_error_job/code", exc.code, -32603)
            else:
                report(f"{era}/protocol_error_job/code", False, "no protocol error")

        await guarded(f"{era}/tasks-fixtures", tasks_fixtures)

        async def progress() -> None:
            seen: list[tuple[float, float | None]] = []

            async def on_progress(p: float, total: float | None, message: str | None) -> None:
                seen.append((p, total))

            result = await client.call_tool("test_tool_with_progress", {}, on_progress=on_progress)
            expect_equal(f"{era}/progress/values", seen, [(0, 100), (50, 100), (100, 100)])
            expect_equal(f"{era}/progress/isError", result.is_error, False)

        await guarded(f"{era}/progress", progress)

        async def logging() -> None:
            notes.clear()
            result = await client.call_tool("test_tool_with_logging", {})
            logged = [p.get("data") for m, p in notes if m == "notifications/message"]
            expect_equal(
                f"{era}/logging/messages",
                logged,
                ["Tool execution started", "Tool processing data", "Tool execution completed"],
            )
            expect_equal(f"{era}/logging/isError", result.is_error, False)

        await guarded(f"{era}/logging", logging)

        async def asks() -> None:
            result = await client.call_tool("test_sampling", {"prompt": "Capital of France?"})
            expect_equal(f"{era}/test_sampling/text", result.text, "LLM response: Paris")
            result = await client.call_tool("test_elicitation", {"message": "Say something"})
            expect_equal(
                f"{era}/test_elicitation/text",
                result.text,
                'User response: action=accept, content={"response": "answer"}',
            )
            if era == "modern":
                expected = {
                    "test_input_required_result_elicitation": "Hello, Ada!",
                    "test_input_required_result_sampling": "Model said: Paris",
                    "test_input_required_result_list_roots": "Client exposed 1 root(s).",
                    "test_input_required_result_request_state": "state-ok: confirmation received",
                    "test_input_required_result_multiple_inputs": "All inputs received.",
                    "test_input_required_result_multi_round": "Ada likes blue.",
                }
                for tool, text in expected.items():
                    result = await client.call_tool(tool, {})
                    expect_equal(f"{era}/{tool}/text", result.text, text)
                prompt = await client.get_prompt("test_input_required_result_prompt", {})
                expect_equal(
                    f"{era}/test_input_required_result_prompt/messages",
                    prompt.messages,
                    [
                        {
                            "role": "user",
                            "content": {"type": "text", "text": "Use the following context: ctx"},
                        }
                    ],
                )

        await guarded(f"{era}/asks", asks)

        async def reads() -> None:
            expected: dict[str, JSONObject] = {
                "test://static-text": {
                    "uri": "test://static-text",
                    "mimeType": "text/plain",
                    "text": fx.STATIC_TEXT,
                },
                "test://static-binary": {
                    "uri": "test://static-binary",
                    "mimeType": "image/png",
                    "blob": fx.IMAGE_B64,
                },
                "test://template/123/data": {
                    "uri": "test://template/123/data",
                    "mimeType": "application/json",
                    "text": '{"id": "123", "templateTest": true, "data": "Data for ID: 123"}',
                },
                "test://watched-resource": {
                    "uri": "test://watched-resource",
                    "mimeType": "text/plain",
                    "text": fx.WATCHED_TEXT,
                },
            }
            for uri, item in expected.items():
                contents = await client.read_resource(uri, cache=False)
                expect_equal(f"{era}/read {uri}", [c.raw for c in contents], [item])

        await guarded(f"{era}/resources", reads)

        async def prompts_get() -> None:
            got = await client.get_prompt("test_simple_prompt", {})
            expect_equal(
                f"{era}/test_simple_prompt",
                got.messages,
                [
                    {
                        "role": "user",
                        "content": {"type": "text", "text": "This is a simple prompt for testing."},
                    }
                ],
            )
            got = await client.get_prompt(
                "test_prompt_with_arguments", {"arg1": "testValue1", "arg2": "testValue2"}
            )
            text = "Prompt with arguments: arg1='testValue1', arg2='testValue2'"
            expect_equal(
                f"{era}/test_prompt_with_arguments",
                got.messages,
                [{"role": "user", "content": {"type": "text", "text": text}}],
            )
            got = await client.get_prompt(
                "test_prompt_with_embedded_resource", {"resourceUri": "test://example-resource"}
            )
            expect_equal(
                f"{era}/test_prompt_with_embedded_resource",
                got.messages[0]["content"],
                {
                    "type": "resource",
                    "resource": {
                        "uri": "test://example-resource",
                        "mimeType": "text/plain",
                        "text": "Embedded resource content for testing.",
                    },
                },
            )
            got = await client.get_prompt("test_prompt_with_image", {})
            expect_equal(f"{era}/test_prompt_with_image", got.messages[0]["content"], IMAGE)

        await guarded(f"{era}/prompts", prompts_get)

    if era == "modern":
        await check_missing_capability(connect)


async def check_missing_capability(connect: Connect) -> None:
    """Without the sampling capability, test_missing_capability is a -32021 error."""

    async def step() -> None:
        async with connect(mode="2026-07-28") as bare:
            try:
                result = await bare.call_tool("test_missing_capability", {})
            except JSONRPCError as exc:
                expect_equal("modern/missing-capability/code", exc.code, -32021)
                data = exc.data if isinstance(exc.data, dict) else {}
                expect_equal(
                    "modern/missing-capability/data",
                    data.get("requiredCapabilities"),
                    {"sampling": {}},
                )
            else:
                report("modern/missing-capability/code", False, f"no error: {result.raw}")
            result = await bare.call_tool("test_input_required_result_capabilities", {})
            expect_equal(
                "modern/capabilities-neither",
                result.text,
                "The client declared neither sampling nor elicitation.",
            )

    await guarded("modern/missing-capability", step)


async def run_checks(connect: Connect) -> int:
    """Every assertion, in both eras; the number that failed."""
    global failures
    failures = 0
    await check_era(connect, "legacy")
    await check_era(connect, "2026-07-28")
    print(f"fixture: {failures} failed", flush=True)
    return failures


async def main(url: str) -> int:
    def connect(**options: Any) -> Client:
        return Client.http(url, **options)

    return 1 if await run_checks(connect) else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: fixture_check.py URL")
    sys.exit(anyio.run(main, sys.argv[1]))
