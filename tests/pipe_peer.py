"""A ``Server`` served in-process on a pair of ``os.pipe()``s, and the raw peer.

``serving(server)`` runs ``server.serve`` over ``StdioServerTransport`` on the
server's ends of two pipes, initializes it (2025-11-25) and gives the ``Peer``:
raw bytes out, whole JSON lines in, on either anyio backend. On exit it closes
the peer's input (the server's session ends), drains what the server still
writes (so no write of its stays blocked) and keeps that in ``peer.after_close``.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import orjson

from mcpwire import Server, StdioServerTransport

__all__ = ("INIT", "INITIALIZED", "WAIT", "Peer", "line", "serving")

#: Seconds a single read, or the drain at the end, may take.
WAIT = 10.0

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def line(message: object) -> bytes:
    return orjson.dumps(message) + b"\n"


class Peer:
    """The client end of the two pipes: raw bytes out, whole JSON lines in."""

    def __init__(self, to_server: int, from_server: int) -> None:
        self.wfd = to_server
        self.rfd = from_server
        self.buf = b""
        #: What the server wrote after the peer closed its input (filled on exit).
        self.after_close: list[dict[str, Any]] = []
        os.set_blocking(self.rfd, False)

    async def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.wfd, view) :]
            except BlockingIOError:
                await anyio.wait_writable(self.wfd)

    async def send(self, message: object) -> None:
        await self.write(line(message))

    async def read(self) -> dict[str, Any]:
        with anyio.fail_after(WAIT):
            while b"\n" not in self.buf:
                try:
                    chunk = os.read(self.rfd, 1 << 16)
                except BlockingIOError:
                    await anyio.wait_readable(self.rfd)
                    continue
                assert chunk, "the server closed its stdout"
                self.buf += chunk
        first, _, self.buf = self.buf.partition(b"\n")
        answer: dict[str, Any] = orjson.loads(first)
        return answer


@asynccontextmanager
async def serving(server: Server, init: dict[str, Any] | None = None) -> AsyncIterator[Peer]:
    """``init``: the ``initialize`` request to send instead of ``INIT``."""
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.set_blocking(in_w, False)
    transport = StdioServerTransport(stdin_fd=in_r, stdout_fd=out_w, protect_stdout=False)
    os.close(in_r)
    os.close(out_w)
    peer = Peer(in_w, out_r)
    async with anyio.create_task_group() as tg:

        async def serve() -> None:
            try:
                await server.serve(transport)
            finally:
                await transport.aclose()

        tg.start_soon(serve)
        try:
            await peer.send(INIT if init is None else init)
            assert "result" in await peer.read()
            await peer.send(INITIALIZED)
            yield peer
        finally:
            os.close(in_w)
            rest = peer.buf
            with anyio.fail_after(WAIT):
                while True:
                    try:
                        chunk = os.read(out_r, 1 << 16)
                    except BlockingIOError:
                        await anyio.wait_readable(out_r)
                        continue
                    if not chunk:
                        break
                    rest += chunk
            os.close(out_r)
            peer.after_close.extend(orjson.loads(raw) for raw in rest.splitlines() if raw)
