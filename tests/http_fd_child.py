"""A streamable-HTTP server with few file descriptors to spare, in a process of its own.

``python http_fd_child.py BACKEND SPARE`` serves a one-tool server (``echo``)
on 127.0.0.1, a free port, with anyio's BACKEND; once it listens, it lowers
its soft ``RLIMIT_NOFILE`` to SPARE descriptors above the highest one open,
then prints the port on stdout. A client holding SPARE connections open
makes the server's next ``accept`` fail with EMFILE. The ``mcpwire`` loggers
write to stderr, one record a line (``LEVEL message``).
"""

from __future__ import annotations

import logging
import os
import resource
import sys

import anyio

from mcpwire import HTTPServer, HTTPServerOptions, Server

__all__ = ()


async def main(spare: int) -> None:
    app = Server("fd", "1.0")

    @app.tool()
    def echo(message: str) -> str:
        return message

    # Idle connections are held for as long as the test needs them.
    http = HTTPServer(app, HTTPServerOptions(read_timeout=120.0, keep_alive_timeout=120.0))
    async with anyio.create_task_group() as tg:
        port = await tg.start(http.serve, "127.0.0.1", 0)
        highest = max(int(fd) for fd in os.listdir("/proc/self/fd"))
        _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (highest + 1 + spare, hard))
        print(port, flush=True)


if __name__ == "__main__":
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(levelname)s %(message)s")
    anyio.run(main, int(sys.argv[2]), backend=sys.argv[1])
