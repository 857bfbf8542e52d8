"""The floor of any MCP server built on mcpwire's dependencies: canned answers, no framework.

``python anyio_floor.py`` serves stdio; ``python anyio_floor.py http PORT`` serves
HTTP/1.1 POSTs at any path. It imports what every mcpwire server must (anyio and
orjson; h11 for HTTP), starts anyio's asyncio backend with ``anyio.run``, parses
each message with orjson, and answers ``initialize``, ``tools/list`` and
``tools/call`` with fixed results that pass the benchmark's checks (the call echoes
``message``). No sessions, no validation, no schema: its cold start and idle memory
are what the interpreter, these imports and an event loop cost before any server
code. (Not an MCP server to use: it answers everything else with an empty result.)
"""

import sys

import anyio
import orjson

TOOL = {
    "name": "echo",
    "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}},
}


def answer(body: bytes) -> bytes | None:
    message = orjson.loads(body)
    if "id" not in message:
        return None
    method = message.get("method")
    if method == "initialize":
        result = {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "floor", "version": "0"},
        }
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        text = message["params"]["arguments"]["message"]
        result = {"content": [{"type": "text", "text": text}]}
    else:
        result = {}
    return orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})


def replies(lines: bytes) -> bytes:
    """The answers to a run of whole lines, each a line."""
    answers = (answer(body) for body in lines.splitlines() if body)
    return b"".join(reply + b"\n" for reply in answers if reply is not None)


async def http(port: int) -> None:
    import h11

    async def serve(stream: anyio.abc.SocketStream) -> None:
        conn = h11.Connection(h11.SERVER)
        body = b""
        async with stream:
            while True:
                event = conn.next_event()
                if event is h11.NEED_DATA:
                    try:
                        conn.receive_data(await stream.receive())
                    except anyio.EndOfStream:
                        return
                elif isinstance(event, h11.Data):
                    body += event.data
                elif isinstance(event, h11.EndOfMessage):
                    reply = answer(body) if body else b"{}"
                    body = b""
                    # One fixed session id: enough for the benchmark's legacy handshake.
                    if reply is None:
                        head = h11.Response(status_code=202, headers=[("content-length", "0")])
                        await stream.send(conn.send(head) + conn.send(h11.EndOfMessage()))
                    else:
                        headers = [
                            ("content-type", "application/json"),
                            ("content-length", str(len(reply))),
                            ("mcp-session-id", "floor"),
                        ]
                        head = h11.Response(status_code=200, headers=headers)
                        await stream.send(
                            conn.send(head)
                            + conn.send(h11.Data(data=reply))
                            + conn.send(h11.EndOfMessage())
                        )
                    conn.start_next_cycle()
                elif isinstance(event, h11.ConnectionClosed):
                    return

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
    await listener.serve(serve)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        anyio.run(http, int(sys.argv[2]))
    else:
        from pipe_echo_anyio import serve  # beside this script

        anyio.run(serve, replies)
