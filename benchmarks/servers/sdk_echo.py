"""The reference SDK (``mcp``) echo server used by the benchmarks (stdio)."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("bench-echo", version="1.0.0")


@server.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return message


if __name__ == "__main__":
    server.run("stdio")
