"""mcpwire's side of the 2025-11-25 tasks interop: the tools ``ts_tasks_client.mjs`` checks.

The same six tools as ``ts_tasks_server.mjs`` (the TypeScript SDK's server),
so one client script checks both servers and one mcpwire client drives both:

* ``slow_echo {message, delay_ms=0}`` (task optional): the message, after the delay;
* ``ask_name {}`` (task required): a form elicitation through the task, then
  ``Hello, <name>!`` (``No name given`` unless accepted);
* ``explode {}`` (task required): a tool error, ``boom`` (the task fails);
* ``plain {message}`` (no tasks): the message;
* ``sleepy {seconds}`` (task optional): ``slept``, unless cancelled first;
* ``ask_name_via_task {}`` (no tasks): the other way round, the same question
  asked of the client as a task (``ctx.elicit(..., task=True)``) when it
  declared task-augmented elicitation.

``python tasks_server.py`` serves stdio; ``python tasks_server.py --http PORT``
serves streamable HTTP at ``http://127.0.0.1:PORT/mcp``.
"""

from __future__ import annotations

import sys

import anyio

from mcpwire import Context, Server, TaskStore, ToolError

NAME_SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}},
    "required": ["name"],
}

server = Server("mcpwire-tasks-peer", "1.0.0", tasks=TaskStore(poll_interval_ms=100))


@server.tool(structured=False, task="optional")
async def slow_echo(message: str, delay_ms: int = 0) -> str:
    """Echo the message after ``delay_ms`` milliseconds."""
    await anyio.sleep(delay_ms / 1000)
    return message


@server.tool(structured=False, task="required")
async def ask_name(ctx: Context) -> str:
    """Ask the user's name (a form elicitation), then greet them."""
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA)
    content = answer.get("content")
    if answer.get("action") == "accept" and isinstance(content, dict):
        return f"Hello, {content.get('name')}!"
    return "No name given"


@server.tool(structured=False, task="required")
async def explode() -> str:
    """Fail as a tool (a result with isError)."""
    raise ToolError("boom")


@server.tool(structured=False)
def plain(message: str) -> str:
    """Echo the message, never as a task."""
    return message


@server.tool(structured=False, task="optional")
async def sleepy(seconds: float) -> str:
    """Sleep that long (cancellation stops it)."""
    await anyio.sleep(seconds)
    return "slept"


@server.tool(structured=False)
async def ask_name_via_task(ctx: Context) -> str:
    """Ask the user's name as a task the client runs, then greet them."""
    answer = await ctx.elicit("What is your name?", NAME_SCHEMA, task=True)
    content = answer.get("content")
    if answer.get("action") == "accept" and isinstance(content, dict):
        return f"Hello, {content.get('name')}!"
    return "No name given"


if __name__ == "__main__":
    if sys.argv[1:2] == ["--http"]:
        server.run("http", port=int(sys.argv[2]))
    else:
        server.run()
