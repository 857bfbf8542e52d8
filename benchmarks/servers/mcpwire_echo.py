"""The mcpwire echo server used by the benchmarks.

``python mcpwire_echo.py`` serves stdio; ``python mcpwire_echo.py http PORT`` serves
streamable HTTP (both eras) at ``http://127.0.0.1:PORT/mcp``. Imported for the
in-process cases.
"""

import os
import sys

from mcpwire import Server

server = Server("bench-echo", "1.0.0")

#: Message size limit: the 10 MB payload cases need more than the 16 MiB default
#: (an echo result carries the text twice, as content and as structuredContent).
MAX_SIZE = 64 * 1024 * 1024


def echo(message: str) -> str:
    """Echo the message back."""
    return message


async def echo_async(message: str) -> str:
    """Echo the message back."""
    return message


# Section 11 of the report serves the same tool as a coroutine function.
server.tool(name="echo")(echo_async if os.environ.get("BENCH_ASYNC_TOOL") == "1" else echo)


def main(argv: list[str]) -> None:
    if len(argv) > 2 and argv[1] == "http":
        server.run("http", port=int(argv[2]), max_body_size=MAX_SIZE)
        return
    import anyio

    from mcpwire import StdioServerTransport
    from mcpwire.sansio import Limits

    async def serve() -> None:
        transport = StdioServerTransport(limits=Limits(max_size=MAX_SIZE))
        try:
            await server.serve(transport)
        finally:
            await transport.aclose()

    anyio.run(serve)


if __name__ == "__main__":
    main(sys.argv)
