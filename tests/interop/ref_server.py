"""A reference-SDK (``mcp==2.3.0``) MCP server: the peer for mcpwire's client in the interop tests.

Run as ``python tests/interop/ref_server.py`` (stdio). One process serves either era: the SDK
locks the connection to the era of the first request (``initialize`` -> legacy, an enveloped
request -> 2026-07-28).
"""

from __future__ import annotations

import warnings
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, Elicit, ListRoots, MCPServer, Resolve, Sample
from mcp.types import (
    Completion,
    CompletionArgument,
    CompletionContext,
    ListRootsResult,
    PromptReference,
    ResourceTemplateReference,
    SamplingMessage,
    TextContent,
)
from pydantic import BaseModel, Field

# ctx.info()/ctx.debug() warn (deprecated logging feature); keep stderr quiet.
warnings.simplefilter("ignore")

mcp = MCPServer("ref-server", version="1.2.3", instructions="reference server")


@mcp.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return message


class Weather(BaseModel):
    city: str
    temperature: float = Field(description="Celsius")
    conditions: str


@mcp.tool()
def get_weather(city: str) -> Weather:
    """Structured output (outputSchema + structuredContent)."""
    return Weather(city=city, temperature=21.5, conditions="sunny")


@mcp.tool()
async def slow_count(n: int, ctx: Context) -> str:
    """Progress (when the request has a progressToken) and logging."""
    await ctx.info(f"counting to {n}")
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
    await ctx.debug("done")
    return f"counted {n}"


class Name(BaseModel):
    name: str


async def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@mcp.tool()
async def greet(name: Annotated[Name, Resolve(ask_name)]) -> str:
    """Elicitation in both eras: legacy elicitation/create, 2026 InputRequiredResult."""
    return f"Hello, {name.name}"


async def want_sample() -> Sample:
    return Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text="hi"))],
        max_tokens=10,
    )


@mcp.tool()
async def summarize(text: Annotated[object, Resolve(want_sample)]) -> str:
    """Sampling in both eras."""
    return f"sampled: {text.content.text}"  # type: ignore[attr-defined]


async def want_roots() -> ListRoots:
    return ListRoots()


@mcp.tool()
async def show_roots(roots: Annotated[ListRootsResult, Resolve(want_roots)]) -> str:
    """Roots in both eras."""
    return ",".join(str(r.uri) for r in roots.roots)


@mcp.tool()
async def sleepy(seconds: float) -> str:
    """Sleep, for cancellation and timeouts."""
    await anyio.sleep(seconds)
    return f"slept {seconds}"


@mcp.tool()
async def touch(ctx: Context) -> str:
    """Publish change events to subscriptions/listen streams (2026)."""
    await ctx.notify_tools_changed()
    await ctx.notify_resource_updated("config://app")
    return "ok"


@mcp.resource("config://app", name="app-config", mime_type="application/json")
def app_config() -> str:
    return '{"debug": false}'


@mcp.resource("users://{user_id}/profile", name="user-profile", mime_type="text/plain")
def user_profile(user_id: str) -> str:
    return f"profile of {user_id}"


@mcp.prompt(title="Code review")
def review(code: str, language: str = "python") -> str:
    return f"Please review this {language} code:\n{code}"


@mcp.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> Completion | None:
    if isinstance(ref, PromptReference) and argument.name == "language":
        values = [v for v in ("python", "rust", "go") if v.startswith(argument.value)]
        return Completion(values=values, total=len(values), has_more=False)
    if isinstance(ref, ResourceTemplateReference) and argument.name == "user_id":
        return Completion(values=["alice", "bob"])
    return None


if __name__ == "__main__":
    mcp.run("stdio")
