"""The mcpwire echo server used by the benchmarks (stdio)."""

from mcpwire import Server

server = Server("bench-echo", "1.0.0")


@server.tool()
def echo(message: str) -> str:
    """Echo the message back."""
    return message


if __name__ == "__main__":
    server.run()
