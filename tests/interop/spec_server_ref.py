"""A reference-SDK (``mcp==2.3.0``) server built from a cross-serve spec (``spec_common.py``).

``python tests/interop/spec_server_ref.py stdio SPEC.json`` serves the spec on stdio;
``python tests/interop/spec_server_ref.py http`` is a long-lived HTTP host like the mcpwire
one (``spec_server_mcpwire.py``): one spec file name per stdin line, a fresh server on a new
loopback port for each, ``PORT <n>`` on stdout.

It is built on the SDK's low-level ``mcp.server.lowlevel.Server``, which serves the raw
schemas and results given to it (``MCPServer`` would derive schemas from Python signatures).
The SDK does everything of the protocol: both eras on one endpoint, handshake, envelopes,
``_meta`` checks, sessions, error framing, progress and log delivery (incl. the 2026-07-28
per-request ``logLevel`` opt-in), HTTP. What the low-level API leaves to the handler author,
this server does as the specification says:

* arguments are validated against the tool's ``inputSchema`` with ``jsonschema`` (the SDK's
  own validator dependency, Draft 2020-12, the MCP default dialect); a failure is a tool
  execution error (``isError``) (2025-11-25 ``server/tools.mdx``, SEP-1303);
* an unknown tool or prompt, or a missing required prompt argument, is -32602
  (``server/tools.mdx`` and ``server/prompts.mdx`` "Error Handling");
* an unknown resource is -32002 up to 2025-11-25 and -32602 with ``data.uri`` in 2026-07-28
  (``server/resources.mdx`` "Error Handling" of each revision);
* lists are paginated with the spec's ``pageSize``; the cursor is the next offset.
"""

from __future__ import annotations

import socket
import sys
import warnings
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio
import jsonschema
import mcp_types as types
import spec_common as common
from mcp import MCPError
from mcp.server.lowlevel import Server

# The SDK warns (MCPDeprecationWarning) on the legacy logging handler; we register it on purpose.
warnings.simplefilter("ignore")

MODERN = "2026-07-28"
INVALID_PARAMS = -32602
RESOURCE_NOT_FOUND = -32002


def _page(items: list[Any], params: Any, size: int) -> tuple[list[Any], str | None]:
    cursor = getattr(params, "cursor", None) if params is not None else None
    try:
        start = int(cursor) if cursor is not None else 0
    except ValueError:
        raise MCPError(INVALID_PARAMS, "Invalid cursor") from None
    if start < 0 or start > len(items):
        raise MCPError(INVALID_PARAMS, "Invalid cursor")
    end = start + size
    return items[start:end], (str(end) if end < len(items) else None)


def build(spec: dict[str, Any]) -> Server[Any]:
    size = int(spec.get("pageSize", 100))
    tools = {t["name"]: t for t in spec["tools"]}
    validators = {
        name: jsonschema.Draft202012Validator(t["inputSchema"]) for name, t in tools.items()
    }
    resources = {r["uri"]: r for r in spec["resources"]}
    templates = [(t, common.template_regex(t["uriTemplate"])) for t in spec["templates"]]
    prompts = {p["name"]: p for p in spec["prompts"]}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        listed = [
            types.Tool(
                name=t["name"],
                description=t.get("description"),
                input_schema=t["inputSchema"],
                output_schema=(
                    common.structured_output_schema() if t["behaviour"] == "structured" else None
                ),
            )
            for t in tools.values()
        ]
        page, nxt = _page(listed, params, size)
        return types.ListToolsResult(tools=page, next_cursor=nxt)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = tools.get(params.name)
        if tool is None:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {params.name}")
        arguments = params.arguments or {}
        problems = [e.message for e in validators[params.name].iter_errors(arguments)]
        if problems:
            text = f"Invalid arguments for tool {params.name}: " + "; ".join(problems)
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)], is_error=True
            )
        count = int(tool.get("count", 0))
        if tool["behaviour"] == "progress":
            for i in range(1, count + 1):
                await ctx.session.report_progress(i, count, f"step {i}")
        elif tool["behaviour"] == "log":
            for i in range(1, count + 1):
                await ctx.session.send_log_message(
                    level=tool["level"],
                    data=common.log_data(tool, i),
                    logger="spec",
                    related_request_id=ctx.request_id,
                )
        return types.CallToolResult.model_validate(common.tool_outcome(tool, arguments))

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        listed = [
            types.Resource(
                uri=r["uri"],
                name=r["name"],
                mime_type=r.get("mimeType"),
                description=r.get("description"),
            )
            for r in resources.values()
        ]
        page, nxt = _page(listed, params, size)
        return types.ListResourcesResult(resources=page, next_cursor=nxt)

    async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
        listed = [
            types.ResourceTemplate(
                uri_template=t["uriTemplate"],
                name=t["name"],
                mime_type=t.get("mimeType"),
                description=t.get("description"),
            )
            for t, _ in templates
        ]
        page, nxt = _page(listed, params, size)
        return types.ListResourceTemplatesResult(resource_templates=page, next_cursor=nxt)

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        res = resources.get(uri)
        if res is not None:
            entry: dict[str, Any] = {"uri": uri}
            if "blob" in res:
                entry["blob"] = res["blob"]
            else:
                entry["text"] = res["text"]
            if res.get("mimeType") is not None:
                entry["mimeType"] = res["mimeType"]
            return types.ReadResourceResult.model_validate({"contents": [entry]})
        for tpl, pattern in templates:
            m = pattern.fullmatch(uri)
            if m is not None:
                entry = {"uri": uri, "text": common.template_text(tpl, m.group(1))}
                if tpl.get("mimeType") is not None:
                    entry["mimeType"] = tpl["mimeType"]
                return types.ReadResourceResult.model_validate({"contents": [entry]})
        if ctx.protocol_version == MODERN:
            raise MCPError(INVALID_PARAMS, "Resource not found", {"uri": uri})
        raise MCPError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": uri})

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        listed = [
            types.Prompt(
                name=p["name"],
                description=p.get("description"),
                arguments=[
                    types.PromptArgument(name=a["name"], required=bool(a.get("required")))
                    for a in p.get("arguments", [])
                ]
                or None,
            )
            for p in prompts.values()
        ]
        page, nxt = _page(listed, params, size)
        return types.ListPromptsResult(prompts=page, next_cursor=nxt)

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        prompt = prompts.get(params.name)
        if prompt is None:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {params.name}")
        arguments = dict(params.arguments or {})
        missing = [
            a["name"]
            for a in prompt.get("arguments", [])
            if a.get("required") and a["name"] not in arguments
        ]
        if missing:
            raise MCPError(INVALID_PARAMS, "Missing required argument(s): " + ", ".join(missing))
        return types.GetPromptResult.model_validate(
            {
                "description": prompt.get("description"),
                "messages": common.prompt_messages(prompt, arguments),
            }
        )

    async def set_level(ctx: Any, params: Any) -> types.EmptyResult:
        return types.EmptyResult()

    return Server(
        "spec-ref",
        version="0.0.1",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_set_logging_level=set_level,
    )


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def http_host() -> None:
    import uvicorn

    running: tuple[uvicorn.Server, anyio.Event] | None = None
    async with anyio.create_task_group() as tg:
        while True:
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            if running is not None:
                running[0].should_exit = True
                await running[1].wait()
                running = None
            if not line:
                break
            app = build(common.load_spec(line.strip())).streamable_http_app()
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
            config = uvicorn.Config(app, log_level="warning", lifespan="on")
            server = uvicorn.Server(config)
            done = anyio.Event()

            async def serve(
                server: uvicorn.Server = server,
                sock: socket.socket = sock,
                done: anyio.Event = done,
            ) -> None:
                try:
                    await server.serve(sockets=[sock])
                finally:
                    sock.close()
                    done.set()

            tg.start_soon(serve)
            while not server.started:
                await anyio.sleep(0.005)
            running = (server, done)
            print(f"PORT {port}", flush=True)


def main() -> None:
    if sys.argv[1] == "stdio":
        anyio.run(serve_stdio, build(common.load_spec(sys.argv[2])))
    else:
        anyio.run(http_host)


if __name__ == "__main__":
    main()
