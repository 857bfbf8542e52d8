"""The reference SDK (``mcp``) echo server used by the benchmarks.

``python sdk_echo.py`` serves stdio; ``python sdk_echo.py http PORT`` serves the SDK's
streamable-HTTP app (legacy sessions and 2026-07-28 on one endpoint) under uvicorn at
``http://127.0.0.1:PORT/mcp``. Imported for the in-process cases.
"""

import os
import sys

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-echo", version="1.0.0", log_level="WARNING")

#: Request body limit for the 10 MB payload cases (the SDK's default is 4 MiB).
MAX_SIZE = 64 * 1024 * 1024


def echo(message: str) -> str:
    """Echo the message back."""
    return message


async def echo_async(message: str) -> str:
    """Echo the message back."""
    return message


# Section 11 of the report serves the same tool as a coroutine function.
server.tool(name="echo")(echo_async if os.environ.get("BENCH_ASYNC_TOOL") == "1" else echo)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=int(sys.argv[2]),
            max_request_body_size=MAX_SIZE,
        )
    else:
        server.run("stdio")
