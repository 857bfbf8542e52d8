"""The reference SDK server (``tests/interop/ref_server.py``) over HTTP, for the HTTP client tests.

``python tests/http_client/ref_http_server.py PORT [streamable-http|sse|json|resumable] [RETRY_MS]``

* ``streamable-http``: the SDK's Streamable HTTP app (legacy sessions and 2026-07-28 on one
  endpoint, ``/mcp``);
* ``json``: the same, answering with ``application/json`` instead of event streams;
* ``resumable``: the same with an in-memory event store (priming events, ``retry``);
* ``sse``: the deprecated HTTP+SSE app (``/sse`` and ``/messages/``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "interop"))

from typing import Annotated

import anyio
from mcp.server.mcpserver import Context
from pydantic import Field
from ref_server import mcp

mcp.settings.log_level = "WARNING"


@mcp.tool()
def locate(
    region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
    count: Annotated[int, Field(json_schema_extra={"x-mcp-header": "Count"})] = 1,
) -> str:
    """A tool whose arguments are mirrored into Mcp-Param-* headers (2026-07-28)."""
    return f"{region}:{count}"


@mcp.tool()
async def poll_me(ctx: Context) -> str:
    """Closes its own event stream mid-call (2025-11-25 polling; needs the event store)."""
    await ctx.report_progress(1, 2, "before")
    await ctx.close_sse_stream()
    await anyio.sleep(0.3)
    await ctx.report_progress(2, 2, "after")
    return "resumed"


@mcp.tool()
async def announce(ctx: Context) -> str:
    """Legacy: a notification unrelated to any request, so it goes on the GET stream."""
    await ctx.session.send_tool_list_changed()
    return "announced"


@mcp.tool()
async def drop_standalone(ctx: Context) -> str:
    """Closes the standalone GET stream (the client reconnects with Last-Event-ID)."""
    await ctx.close_standalone_sse_stream()
    return "dropped"


def main() -> None:
    port = int(sys.argv[1])
    kind = sys.argv[2] if len(sys.argv) > 2 else "streamable-http"
    if kind == "sse":
        mcp.run("sse", host="127.0.0.1", port=port)
    elif kind == "json":
        mcp.run("streamable-http", host="127.0.0.1", port=port, json_response=True)
    elif kind == "resumable":
        from mcp.server.streamable_http import EventStore

        mcp.run(
            "streamable-http",
            host="127.0.0.1",
            port=port,
            event_store=_memory_store(EventStore),
            retry_interval=int(sys.argv[3]) if len(sys.argv) > 3 else 100,
        )
    else:
        mcp.run("streamable-http", host="127.0.0.1", port=port)


def _memory_store(base: type) -> object:
    class MemoryStore(base):  # type: ignore[misc,valid-type]
        def __init__(self) -> None:
            self.events: list[tuple[str, str, object]] = []

        async def store_event(self, stream_id: str, message: object) -> str:
            event_id = str(len(self.events) + 1)
            self.events.append((event_id, stream_id, message))
            return event_id

        async def replay_events_after(
            self, last_event_id: str, send_callback: object
        ) -> str | None:
            stream = next((s for e, s, _ in self.events if e == last_event_id), None)
            if stream is None:
                return None
            after = False
            for event_id, stream_id, message in self.events:
                if after and stream_id == stream and message is not None:
                    await send_callback(_event_message(message, event_id))  # type: ignore[operator]
                after = after or event_id == last_event_id
            return stream

    return MemoryStore()


def _event_message(message: object, event_id: str) -> object:
    from mcp.server.streamable_http import EventMessage

    return EventMessage(message, event_id)  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
