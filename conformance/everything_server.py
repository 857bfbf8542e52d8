"""The conformance suite's fixture server, built with mcpwire.

``python conformance/everything_server.py --port P`` serves it over streamable
HTTP at ``http://127.0.0.1:P/mcp`` (both protocol eras on one endpoint). Every
tool, resource and prompt name, argument and content below is what the
official suite's scenarios ask for (their ``description`` texts and checks in
``@modelcontextprotocol/conformance``); ``fixture_check.py`` asserts the same
values exactly through mcpwire's client.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from typing import Annotated

import anyio

from mcpwire import (
    Context,
    EmbeddedResource,
    Image,
    JSONRPCError,
    PromptMessage,
    Server,
    Text,
    ToolError,
)
from mcpwire.sansio._json import JSONObject, JSONValue

__all__ = ("main", "server")

# A 1x1 red PNG and a minimal WAV, as the suite's descriptions give them.
IMAGE_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8Dw"
    "HwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
AUDIO_B64 = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

SIMPLE_TEXT = "This is a simple text response for testing."
EMBEDDED_TEXT = "This is an embedded resource content."
ERROR_TEXT = "This tool intentionally returns an error for testing"
STATIC_TEXT = "This is the content of the static text resource."
WATCHED_TEXT = "Watched resource content"

server = Server(
    "mcp-conformance-test-server",
    "1.0.0",
    title="mcpwire conformance fixture",
    description="The official MCP conformance suite's everything server, built with mcpwire.",
)


# -- content tools ------------------------------------------------------------------------


@server.tool(structured=False)
def test_simple_text() -> str:
    """Tests simple text content response"""
    return SIMPLE_TEXT


@server.tool(structured=False)
def test_image_content() -> Image:
    """Tests image content response"""
    return Image(IMAGE_B64, "image/png")


@server.tool(structured=False)
def test_audio_content() -> JSONObject:
    """Tests audio content response"""
    return {"type": "audio", "data": AUDIO_B64, "mimeType": "audio/wav"}


@server.tool(structured=False)
def test_embedded_resource() -> EmbeddedResource:
    """Tests embedded resource content response"""
    return EmbeddedResource("test://embedded-resource", text=EMBEDDED_TEXT, mime_type="text/plain")


@server.tool(structured=False)
def test_multiple_content_types() -> list[object]:
    """Tests response with multiple content types (text, image, resource)"""
    return [
        Text("Multiple content types test:"),
        Image(IMAGE_B64, "image/png"),
        EmbeddedResource(
            "test://mixed-content-resource",
            text=json.dumps({"test": "data", "value": 123}),
            mime_type="application/json",
        ),
    ]


@server.tool(structured=False)
def test_error_handling() -> str:
    """Tests error response handling"""
    raise ToolError(ERROR_TEXT)


# -- notifications while a tool runs -------------------------------------------------------


@server.tool(structured=False)
async def test_tool_with_logging(ctx: Context) -> str:
    """Tests tool that emits log messages during execution"""
    await ctx.info("Tool execution started", logger="conformance-test-server")
    await anyio.sleep(0.05)
    await ctx.info("Tool processing data", logger="conformance-test-server")
    await anyio.sleep(0.05)
    await ctx.info("Tool execution completed", logger="conformance-test-server")
    return "Tool with logging executed successfully"


@server.tool(structured=False)
async def test_tool_with_progress(ctx: Context) -> str:
    """Tests tool that reports progress notifications"""
    for step in (0, 50, 100):
        await ctx.report_progress(step, 100, f"Completed step {step} of 100")
        if step < 100:
            await anyio.sleep(0.05)
    return "Progress test completed"


@server.tool(structured=False)
async def test_reconnection(ctx: Context) -> str:
    """Tests SSE polling by closing stream mid-call (SEP-1699)"""
    await ctx.info("Before disconnect")
    await ctx.close_sse_stream()
    await anyio.sleep(0.2)
    await ctx.info("After reconnect")
    return "Reconnection test completed"


# -- asking the client (legacy: server->client requests) -----------------------------------


def _text_of(result: JSONObject) -> str:
    content = result.get("content")
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return str(content["text"])
    return "No response"


@server.tool(structured=False)
async def test_sampling(ctx: Context, prompt: str) -> str:
    """Tests server-initiated sampling (LLM completion request)"""
    result = await ctx.sample(
        [{"role": "user", "content": {"type": "text", "text": prompt}}], max_tokens=100
    )
    return f"LLM response: {_text_of(result)}"


@server.tool(structured=False)
async def test_elicitation(ctx: Context, message: str) -> str:
    """Tests server-initiated elicitation (user input request)"""
    schema: JSONObject = {
        "type": "object",
        "properties": {"response": {"type": "string", "description": "User's response"}},
        "required": ["response"],
    }
    result = await ctx.elicit(message, schema)
    return _elicit_summary("User response", result)


def _elicit_summary(prefix: str, result: JSONObject) -> str:
    action = result.get("action")
    content = result.get("content") if action == "accept" else {}
    return f"{prefix}: action={action}, content={json.dumps(content)}"


SEP1034_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
}


@server.tool(structured=False)
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Tests elicitation with default values for all primitive types (SEP-1034)"""
    result = await ctx.elicit("Please provide user information", SEP1034_SCHEMA)
    return _elicit_summary("Elicitation result", result)


SEP1330_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "untitledSingle": {
            "type": "string",
            "description": "Simple enum without titles",
            "enum": ["option1", "option2", "option3"],
        },
        "titledSingle": {
            "type": "string",
            "description": "Enum with titled options (oneOf)",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "description": "Legacy enum with enumNames",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "description": "Multi-select without titles",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "description": "Multi-select with titled options",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


@server.tool(structured=False)
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Tests elicitation with enum schema variations per SEP-1330"""
    result = await ctx.elicit(
        "Please select values using different enum schema types", SEP1330_SCHEMA
    )
    return _elicit_summary("Elicitation completed", result)


@server.tool(structured=False)
async def test_missing_capability(ctx: Context) -> str:
    """Needs the client's sampling capability: without it the request fails with -32021"""
    result = await ctx.sample(
        [{"role": "user", "content": {"type": "text", "text": "Say hello"}}], max_tokens=20
    )
    return f"Client declared sampling; model said: {_text_of(result)}"


# -- modern era: InputRequiredResult (SEP-2322) --------------------------------------------
#
# The suite names each input request (``user_name``, ``step1``, ...) and reads
# the answer back under that name: ``ctx.ask_all`` takes the names, and sends
# several asks in one InputRequiredResult when they are asked together.

NAME_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}


def _elicit_request(message: str, schema: JSONObject) -> JSONObject:
    return {
        "method": "elicitation/create",
        "params": {"mode": "form", "message": message, "requestedSchema": schema},
    }


def _sampling_request(text: str, max_tokens: int) -> JSONObject:
    return {
        "method": "sampling/createMessage",
        "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            "maxTokens": max_tokens,
        },
    }


async def ask(ctx: Context, key: str, request: JSONObject) -> JSONObject:
    """The client's answer to ``request``, asked under ``key`` (both eras)."""
    return (await ctx.ask_all({key: request}))[key]


def _content_field(answer: JSONObject, field: str) -> JSONValue:
    content = answer.get("content")
    return content.get(field) if isinstance(content, dict) else None


@server.tool(structured=False)
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Tests InputRequiredResult with a single elicitation request"""
    answer = await ask(ctx, "user_name", _elicit_request("What is your name?", NAME_SCHEMA))
    return f"Hello, {_content_field(answer, 'name') or 'stranger'}!"


@server.tool(structured=False)
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Tests InputRequiredResult with a single sampling request"""
    answer = await ask(
        ctx, "capital_question", _sampling_request("What is the capital of France?", 100)
    )
    return f"Model said: {_text_of(answer)}"


@server.tool(structured=False)
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """Tests InputRequiredResult with a single roots/list request"""
    answer = await ask(ctx, "client_roots", {"method": "roots/list"})
    roots = answer.get("roots")
    return f"Client exposed {len(roots) if isinstance(roots, list) else 0} root(s)."


CONFIRM_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}},
    "required": ["ok"],
}


@server.tool(structured=False)
async def test_input_required_result_request_state(ctx: Context) -> str:
    """Tests requestState round-tripping in the InputRequiredResult flow"""
    # mcpwire seals every requestState (HMAC) and refuses a retry whose state does
    # not verify, so reaching the answer means the echoed state was validated.
    await ask(ctx, "confirm", _elicit_request("Please confirm", CONFIRM_SCHEMA))
    return "state-ok: confirmation received"


@server.tool(structured=False)
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Tests InputRequiredResult carrying elicitation, sampling and roots requests together"""
    await ctx.ask_all(
        {
            "user_name": _elicit_request("What is your name?", NAME_SCHEMA),
            "greeting": _sampling_request("Generate a greeting", 50),
            "client_roots": {"method": "roots/list"},
        }
    )
    return "All inputs received."


@server.tool(structured=False)
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Tests a three-round InputRequiredResult flow with evolving requestState"""
    step1 = await ask(ctx, "step1", _elicit_request("Step 1: What is your name?", NAME_SCHEMA))
    color_schema: JSONObject = {
        "type": "object",
        "properties": {"color": {"type": "string"}},
        "required": ["color"],
    }
    step2 = await ask(
        ctx, "step2", _elicit_request("Step 2: What is your favorite color?", color_schema)
    )
    return f"{_content_field(step1, 'name')} likes {_content_field(step2, 'color')}."


@server.tool(structured=False)
async def test_input_required_result_tampered_state(ctx: Context) -> str:
    """Tests that the server rejects a tampered requestState echo"""
    await ask(ctx, "confirm", _elicit_request("Please confirm", CONFIRM_SCHEMA))
    return "state-ok: the sealed requestState verified"


@server.tool(structured=False)
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Tests that inputRequests only include methods the client declared support for"""
    caps = ctx.client_capabilities
    if "sampling" in caps:
        answer = await ask(ctx, "sample", _sampling_request("Say hello", 50))
        return f"Model said: {_text_of(answer)}"
    if "elicitation" in caps:
        answer = await ask(ctx, "ask", _elicit_request("What is your name?", NAME_SCHEMA))
        return f"Hello, {_content_field(answer, 'name')}!"
    return "The client declared neither sampling nor elicitation."


# -- diagnostic tools of the stateless scenario (SEP-2575) ---------------------------------


@server.tool(structured=False)
async def test_streaming_elicitation(ctx: Context) -> str:
    """Asks for input mid-call: modern era, an InputRequiredResult, never a request"""
    answer = await ctx.elicit("Please confirm", CONFIRM_SCHEMA)
    return _elicit_summary("Streaming elicitation", answer)


@server.tool(structured=False)
async def test_logging_tool(ctx: Context) -> str:
    """Logs at every level; modern era, only when the request's _meta asks for a level"""
    for level in ("debug", "info", "warning", "error"):
        await ctx.log(level, f"test_logging_tool {level} message", logger="conformance-test-server")
    return "logged"


# -- tasks extension fixtures (SEP-2663, io.modelcontextprotocol/tasks) -------------------
#
# ``task=`` is the tool's task support: "optional" tools answer a request that
# declares the extension with a CreateTaskResult and run in the background
# (polled with tasks/get), and answer in place otherwise; "required" ones
# refuse non-declaring requests with -32021. Asks made inside a task park it
# in input_required until tasks/update answers them.


@server.tool(structured=False)
def greet(name: str) -> str:
    """Sync-only greeting"""
    return f"Hello, {name}!"


@server.tool(structured=False, task="optional")
async def slow_compute(seconds: float = 0, label: str = "") -> str:
    """Sleeps for `seconds`, then answers (a task when the client takes tasks)"""
    await anyio.sleep(max(seconds, 0))
    return f"computed {label}".strip()


@server.tool(structured=False, task="required")
async def failing_job() -> str:
    """Always ends with a tool execution error (needs the tasks extension)"""
    raise ToolError("failing_job failed on purpose")


@server.tool(structured=False, task="optional")
async def protocol_error_job() -> str:
    """Always ends with a protocol-level error"""
    raise JSONRPCError(-32603, "protocol_error_job failed on purpose")


@server.tool(structured=False, task="optional")
async def confirm_delete(ctx: Context, filename: str) -> str:
    """Asks the user to confirm, then 'deletes' the file"""
    answer = await ctx.elicit(f"Delete {filename}?", CONFIRM_SCHEMA)
    confirmed = answer.get("action") == "accept"
    return f"deleted {filename}" if confirmed else f"kept {filename}"


@server.tool(structured=False, task="optional")
async def multi_input(ctx: Context) -> str:
    """Asks two questions at once (two inputRequests pending together)"""
    answers = await ctx.ask_all(
        {
            "name": _elicit_request("What is your name?", NAME_SCHEMA),
            "confirm": _elicit_request("Please confirm", CONFIRM_SCHEMA),
        }
    )
    name = _content_field(answers["name"], "name")
    return f"name={name}, confirmed={answers['confirm'].get('action') == 'accept'}"


@server.tool(structured=False, task="required", task_start="manual")
async def test_tool_with_task(ctx: Context) -> str:
    """Asks for a name (multi-round-trip), then continues as a task"""
    answer = await ask(ctx, "user_name", _elicit_request("What is your name?", NAME_SCHEMA))
    await ctx.start_task()
    return f"Hello, {_content_field(answer, 'name') or 'stranger'}, from a task!"


# -- schemas and headers -------------------------------------------------------------------

JSON_SCHEMA_2020_12_INPUT_SCHEMA: JSONObject = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@server.tool(
    name="json_schema_2020_12_tool",
    input_schema=JSON_SCHEMA_2020_12_INPUT_SCHEMA,
    structured=False,
)
def json_schema_2020_12_tool(
    name: str | None = None,
    address: dict[str, str] | None = None,
    contactMethod: str | None = None,
    phone: str | None = None,
    email: str | None = None,
) -> str:
    """Tests JSON Schema 2020-12 keyword preservation in tools/list"""
    given = {
        "name": name,
        "address": address,
        "contactMethod": contactMethod,
        "phone": phone,
        "email": email,
    }
    kept = {k: v for k, v in given.items() if v is not None}
    return f"json_schema_2020_12_tool received {json.dumps(kept, sort_keys=True)}"


X_MCP_HEADER_SCHEMA: JSONObject = {
    "type": "object",
    "properties": {
        "region": {
            "type": "string",
            "description": "Mirrored into the Mcp-Param-Region header",
            "x-mcp-header": "Region",
        }
    },
}


@server.tool(name="test_x_mcp_header", input_schema=X_MCP_HEADER_SCHEMA, structured=False)
def x_mcp_header(region: Annotated[str, "Mirrored into Mcp-Param-Region"] = "<none>") -> str:
    """Tests SEP-2243 Mcp-Param-* server-side validation"""
    return f"region={region}"


# -- list changes (subscriptions/listen) ---------------------------------------------------


def _dynamic() -> str:
    """Registered and removed again by the test_trigger_* tools."""
    return "dynamic"


@server.tool(structured=False)
async def test_trigger_tool_change() -> str:
    """Mutates the tool list and announces it to subscribers (SEP-2575)"""
    server.add_tool(_dynamic, name="test_dynamic_tool")
    server.remove_tool("test_dynamic_tool")
    await server.notify_tools_changed()
    return "tool list changed"


@server.tool(structured=False)
async def test_trigger_prompt_change() -> str:
    """Mutates the prompt list and announces it to subscribers (SEP-2575)"""
    server.add_prompt(_dynamic, name="test_dynamic_prompt")
    del server.prompts["test_dynamic_prompt"]
    await server.notify_prompts_changed()
    return "prompt list changed"


# -- resources -----------------------------------------------------------------------------


@server.resource("test://static-text", name="static_text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource for testing"""
    return STATIC_TEXT


@server.resource("test://static-binary", name="static_binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (image) for testing"""
    return base64.b64decode(IMAGE_B64)


@server.resource("test://template/{id}/data", name="template_data", mime_type="application/json")
def template_data(id: str) -> str:
    """A resource template with parameter substitution"""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.resource("test://watched-resource", name="watched_resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource that can be subscribed to for updates"""
    return WATCHED_TEXT


# -- prompts -------------------------------------------------------------------------------


@server.prompt()
def test_simple_prompt() -> list[PromptMessage]:
    """A simple prompt without arguments"""
    return [PromptMessage("user", Text("This is a simple prompt for testing.").to_json())]


@server.prompt()
def test_prompt_with_arguments(
    arg1: Annotated[str, "First test argument"], arg2: Annotated[str, "Second test argument"]
) -> list[PromptMessage]:
    """A prompt with required arguments"""
    return [
        PromptMessage(
            "user", Text(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'").to_json()
        )
    ]


@server.prompt()
def test_prompt_with_embedded_resource(
    resourceUri: Annotated[str, "URI of the resource to embed"],
) -> list[PromptMessage]:
    """A prompt that includes an embedded resource"""
    return [
        PromptMessage(
            "user",
            EmbeddedResource(
                resourceUri, text="Embedded resource content for testing.", mime_type="text/plain"
            ).to_json(),
        ),
        PromptMessage("user", Text("Please process the embedded resource above.").to_json()),
    ]


@server.prompt()
def test_prompt_with_image() -> list[PromptMessage]:
    """A prompt that includes image content"""
    return [
        PromptMessage("user", Image(IMAGE_B64, "image/png").to_json()),
        PromptMessage("user", Text("Please analyze the image above.").to_json()),
    ]


@server.prompt()
async def test_input_required_result_prompt(ctx: Context) -> list[PromptMessage]:
    """Tests InputRequiredResult from prompts/get (SEP-2322 non-tool request)"""
    schema: JSONObject = {
        "type": "object",
        "properties": {"context": {"type": "string"}},
        "required": ["context"],
    }
    answer = await ask(
        ctx, "user_context", _elicit_request("What context should the prompt use?", schema)
    )
    text = _content_field(answer, "context")
    return [PromptMessage("user", Text(f"Use the following context: {text}").to_json())]


# -- completions ---------------------------------------------------------------------------


@server.completion(prompt="test_prompt_with_arguments")
def complete_prompt_argument(argument: str, value: str) -> list[str]:
    options = {"arg1": ["testValue1", "testValue2"], "arg2": ["testValue1", "testValue2"]}
    return [o for o in options.get(argument, []) if o.startswith(value)]


@server.completion(resource="test://template/{id}/data", argument="id")
def complete_template_id(value: str) -> list[str]:
    return [i for i in ("1", "2", "3", "123") if i.startswith(value)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3001)
    parser.add_argument("--stdio", action="store_true", help="serve stdio instead of HTTP")
    parser.add_argument(
        "--stream-responses",
        action="store_true",
        help="answer every POST with an event stream when the client takes one",
    )
    args = parser.parse_args(argv)
    if args.stdio:
        server.run()
        return
    if not hasattr(server, "serve_http"):
        sys.exit("everything_server.py: this mcpwire has no HTTP server (Server.serve_http)")
    server.run("http", host=args.host, port=args.port, stream_responses=args.stream_responses)


if __name__ == "__main__":
    main()
