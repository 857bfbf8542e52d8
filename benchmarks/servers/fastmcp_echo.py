"""The FastMCP echo server used by the benchmarks (runs in the FastMCP venv).

``python fastmcp_echo.py`` serves stdio; ``python fastmcp_echo.py http PORT`` serves
FastMCP's streamable-HTTP app under uvicorn at ``http://127.0.0.1:PORT/mcp``. Imported
for the in-process cases.
"""

import sys

from fastmcp import FastMCP

server = FastMCP("bench-echo", version="1.0.0")


@server.tool
def echo(message: str) -> str:
    """Echo the message back."""
    return message


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run(
            "http",
            show_banner=False,
            host="127.0.0.1",
            port=int(sys.argv[2]),
            path="/mcp",
            log_level="warning",
        )
    else:
        server.run("stdio", show_banner=False, log_level="warning")
