"""An mcpwire server built from a cross-serve spec (``spec_common.py``).

``python tests/interop/spec_server_mcpwire.py stdio SPEC.json`` serves the spec on stdio.
``python tests/interop/spec_server_mcpwire.py http`` is a long-lived HTTP host: every line on
its stdin names a spec file; it stops the server it was running, starts a fresh ``Server`` for
that spec on a new loopback port and answers ``PORT <n>`` on stdout (so a test run pays for
one interpreter start, not one per spec). End of stdin stops it.

Tools are registered with ``add_tool(fn, input_schema=...)``: the generated schema is served
verbatim and mcpwire validates arguments against it before the call. The handler takes its
arguments as ``**arguments`` (so any property name reaches it) and shows mcpwire a signature
with only the ``Context`` parameter.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anyio
import spec_common as common

from mcpwire import Context, Server, ToolError, ToolResult


def _with_signature(fn: Any, params: list[inspect.Parameter]) -> Any:
    fn.__signature__ = inspect.Signature(params)
    fn.__annotations__ = {p.name: p.annotation for p in params}
    return fn


def _tool_handler(tool: dict[str, Any]) -> Any:
    behaviour = tool["behaviour"]
    count = int(tool.get("count", 0))

    async def handler(ctx: Context, **arguments: Any) -> ToolResult:
        if behaviour == "progress":
            for i in range(1, count + 1):
                await ctx.report_progress(i, count, f"step {i}")
        elif behaviour == "log":
            for i in range(1, count + 1):
                await ctx.log(tool["level"], common.log_data(tool, i), logger="spec")
        outcome = common.tool_outcome(tool, arguments)
        if outcome.get("isError"):
            raise ToolError(outcome["content"][0]["text"])
        return ToolResult(content=outcome["content"], structured=outcome.get("structuredContent"))

    ctx_param = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
    return _with_signature(handler, [ctx_param])


def _prompt_handler(prompt: dict[str, Any]) -> Any:
    def handler(**arguments: str) -> list[dict[str, Any]]:
        return common.prompt_messages(prompt, arguments)

    params = [
        inspect.Parameter(
            a["name"],
            inspect.Parameter.KEYWORD_ONLY,
            annotation=str,
            **({} if a.get("required") else {"default": ""}),
        )
        for a in prompt.get("arguments", [])
    ]
    return _with_signature(handler, params)


def build(spec: dict[str, Any]) -> Server:
    server = Server("spec-mcpwire", "0.0.1", page_size=int(spec.get("pageSize", 100)))
    for tool in spec["tools"]:
        server.add_tool(
            _tool_handler(tool),
            name=tool["name"],
            description=tool.get("description"),
            input_schema=tool["inputSchema"],
            output_schema=(
                common.structured_output_schema() if tool["behaviour"] == "structured" else None
            ),
            structured=tool["behaviour"] == "structured",
        )
    for res in spec["resources"]:
        if "blob" in res:
            data: str | bytes = common.blob_bytes(res)
        else:
            data = res["text"]

        def read(data: str | bytes = data) -> str | bytes:
            return data

        server.add_resource(
            read,
            res["uri"],
            name=res["name"],
            mime_type=res.get("mimeType"),
            description=res.get("description"),
        )
    for tpl in spec["templates"]:

        def read_template(tpl: dict[str, Any] = tpl, **variables: str) -> str:
            (value,) = variables.values()
            return common.template_text(tpl, value)

        server.add_resource(
            read_template,
            tpl["uriTemplate"],
            name=tpl["name"],
            mime_type=tpl.get("mimeType"),
            description=tpl.get("description"),
        )
    for prompt in spec["prompts"]:
        server.add_prompt(
            _prompt_handler(prompt), name=prompt["name"], description=prompt.get("description")
        )
    return server


async def http_host() -> None:
    async with anyio.create_task_group() as tg:
        running: anyio.CancelScope | None = None
        while True:
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            if running is not None:
                running.cancel()
                running = None
            if not line:
                break
            server = build(common.load_spec(line.strip()))
            scope = anyio.CancelScope()

            async def serve(
                server: Server = server,
                scope: anyio.CancelScope = scope,
                *,
                task_status: anyio.abc.TaskStatus[int] = anyio.TASK_STATUS_IGNORED,
            ) -> None:
                with scope:
                    await server.serve_http("127.0.0.1", 0, task_status=task_status)

            port = await tg.start(serve)
            running = scope
            print(f"PORT {port}", flush=True)
        tg.cancel_scope.cancel()


def main() -> None:
    if sys.argv[1] == "stdio":
        build(common.load_spec(sys.argv[2])).run("stdio")
    else:
        anyio.run(http_host)


if __name__ == "__main__":
    main()
