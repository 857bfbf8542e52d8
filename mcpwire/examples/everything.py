"""An example server that exercises every MCP feature mcpwire implements.

Run it with ``python -m mcpwire.examples.everything`` (stdio) and look at it
with ``mcpwire inspect -- python -m mcpwire.examples.everything``; with
``--transport http --port 8000`` it serves streamable HTTP (both protocol
eras) at ``http://127.0.0.1:8000/mcp``; ``--transport sse`` adds the
deprecated HTTP+SSE transport at ``/sse``.
"""

from __future__ import annotations

import argparse
import base64
import sys
from typing import Annotated, Literal, TypedDict

import anyio

from mcpwire import Context, Image, Server, ToolError

__all__ = ("main", "server")

server = Server(
    "mcpwire-everything",
    "1.0.0",
    title="mcpwire example server",
    instructions="A demonstration server: every tool, resource and prompt is safe to try.",
)

# A 1x1 transparent PNG.
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


class Weather(TypedDict):
    city: str
    temperature: float
    conditions: str


@server.tool(annotations={"readOnlyHint": True})
def echo(message: Annotated[str, "The text to send back"]) -> str:
    """Echo the message back."""
    return message


@server.tool(annotations={"readOnlyHint": True, "idempotentHint": True})
def add(a: int, b: int) -> int:
    """Add two integers (structured output)."""
    return a + b


@server.tool()
def get_weather(city: str, units: Literal["celsius", "fahrenheit"] = "celsius") -> Weather:
    """Report the (made-up) weather for a city."""
    temperature = 21.5 if units == "celsius" else 70.7
    return {"city": city, "temperature": temperature, "conditions": "sunny"}


@server.tool()
async def long_task(ctx: Context, steps: int = 5, delay: float = 0.05) -> str:
    """Run for a while, reporting progress after every step."""
    for step in range(1, steps + 1):
        await anyio.sleep(delay)
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    return f"finished {steps} steps"


@server.tool()
async def log_demo(ctx: Context) -> str:
    """Send one log message at each of four levels."""
    await ctx.debug("a debug message")
    await ctx.info("an info message")
    await ctx.warning("a warning message")
    await ctx.error("an error message")
    return "logged"


@server.tool()
def fail(message: str = "this tool always fails") -> str:
    """Always fail, to show an isError result."""
    raise ToolError(message)


@server.tool()
def image() -> Image:
    """Return a tiny PNG image."""
    return Image(PIXEL, "image/png")


@server.tool()
async def ask_name(ctx: Context) -> str:
    """Ask the user for their name (elicitation)."""
    answer = await ctx.elicit(
        "What is your name?",
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    )
    content = answer.get("content")
    if answer.get("action") == "accept" and isinstance(content, dict):
        return f"Hello, {content.get('name')}!"
    return f"No name given ({answer.get('action')})"


@server.tool()
async def summarize(ctx: Context, text: str) -> str:
    """Ask the client's model to summarize a text (sampling)."""
    result = await ctx.sample(
        [{"role": "user", "content": {"type": "text", "text": f"Summarize: {text}"}}],
        max_tokens=100,
    )
    content = result.get("content")
    if isinstance(content, dict) and isinstance(content.get("text"), str):
        return str(content["text"])
    return str(result)


@server.tool()
async def show_roots(ctx: Context) -> str:
    """List the client's roots."""
    roots = await ctx.list_roots()
    return "\n".join(str(r.get("uri")) for r in roots) or "(no roots)"


@server.tool()
async def touch(uri: str = "demo://readme") -> str:
    """Announce that a resource changed (subscriptions)."""
    await server.notify_resource_updated(uri)
    return f"notified subscribers of {uri}"


@server.resource("demo://readme", mime_type="text/markdown")
def readme() -> str:
    """What this server is."""
    return "# mcpwire example server\n\nEvery feature, small and safe.\n"


@server.resource("demo://pixel.png", mime_type="image/png")
def pixel() -> bytes:
    """A 1x1 PNG as a binary resource."""
    return PIXEL


@server.resource("demo://items/{item_id}", mime_type="application/json")
def item(item_id: str) -> dict[str, str]:
    """One item by id."""
    return {"id": item_id, "name": f"item {item_id}"}


@server.prompt()
def greet(name: str, style: str = "friendly") -> str:
    """Greet someone in a given style."""
    return f"Write a {style} greeting for {name}."


@server.prompt()
def code_review(code: str, language: str = "python") -> str:
    """Ask for a review of a piece of code."""
    return f"Please review this {language} code:\n\n{code}"


@server.completion(prompt="greet", argument="style")
def complete_style(value: str) -> list[str]:
    return [s for s in ("friendly", "formal", "pirate", "poetic") if s.startswith(value)]


@server.completion(resource="demo://items/{item_id}", argument="item_id")
def complete_item(value: str) -> list[str]:
    return [i for i in ("1", "2", "3", "42") if i.startswith(value)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m mcpwire.examples.everything")
    parser.add_argument("--transport", choices=("stdio", "http", "sse"), default="stdio")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    if args.transport in ("http", "sse"):
        from mcpwire._http_run import run_main

        # sse adds the deprecated HTTP+SSE endpoints (/sse, /messages) beside /mcp.
        sys.exit(run_main(server, args.host, args.port, legacy_sse=args.transport == "sse"))
    server.run()


if __name__ == "__main__":
    main()
