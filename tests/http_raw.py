"""A raw HTTP/1.1 client on ``h11`` for the streamable-HTTP server tests.

``Raw`` is one keep-alive client connection driven by hand, so that status codes,
headers and SSE bytes are seen exactly as they go over the wire; nothing depends on
mcpwire's own HTTP client. ``running(app, **options)`` serves an app on 127.0.0.1
(a free port) for the length of a ``with`` block, ``client(port)`` connects, and
``rpc``, ``note``, ``modern``, ``init_body`` and ``initialize`` build the messages
(and headers) of both protocol eras.

Import as ``from http_raw import ...`` (``tests/`` is on ``sys.path``).
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.abc
import h11
import orjson

from mcpwire import HTTPServer, HTTPServerOptions, Server
from mcpwire.examples.everything import server as everything
from mcpwire.sansio import SSEDecoder, SSEEvent, encode_header_value

__all__ = (
    "ACCEPT",
    "CAPS",
    "LEGACY",
    "MODERN",
    "PV",
    "Events",
    "Raw",
    "Reply",
    "client",
    "free_port",
    "init_body",
    "initialize",
    "modern",
    "note",
    "rpc",
    "running",
)

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
PV = "io.modelcontextprotocol/protocolVersion"
CAPS = "io.modelcontextprotocol/clientCapabilities"


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes = b""

    def json(self) -> Any:
        return orjson.loads(self.body)

    def events(self) -> list[SSEEvent]:
        decoder = SSEDecoder()
        events = decoder.feed(self.body)
        decoder.feed_eof()
        return events

    def messages(self) -> list[dict[str, Any]]:
        return [orjson.loads(e.data) for e in self.events() if e.data]


class Raw:
    """One keep-alive client connection; every call is one exchange (or part of one)."""

    def __init__(self, stream: anyio.abc.SocketStream, port: int) -> None:
        self.stream = stream
        self.port = port
        self.conn = h11.Connection(h11.CLIENT)

    @classmethod
    async def connect(cls, port: int) -> Raw:
        return cls(await anyio.connect_tcp("127.0.0.1", port), port)

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def __aenter__(self) -> Raw:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _event(self) -> Any:
        while True:
            event = self.conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            try:
                data = await self.stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                data = b""
            self.conn.receive_data(data)

    async def send(
        self,
        method: str = "POST",
        body: object = None,
        headers: dict[str, str | None] | None = None,
        path: str = "/mcp",
        extra: list[tuple[str, str]] | None = None,
    ) -> None:
        hdrs: dict[str, str | None] = {"host": f"127.0.0.1:{self.port}"}
        if method == "POST":
            hdrs.update({"content-type": "application/json", "accept": ACCEPT})
        hdrs.update(headers or {})
        payload = body if isinstance(body, bytes) else b"" if body is None else orjson.dumps(body)
        if method == "POST" or payload:
            hdrs.setdefault("content-length", str(len(payload)))
        lines = [(k, v) for k, v in hdrs.items() if v is not None] + (extra or [])
        await self.stream.send(
            self.conn.send(h11.Request(method=method, target=path, headers=lines))
        )
        if payload:
            await self.stream.send(self.conn.send(h11.Data(data=payload)))
        await self.stream.send(self.conn.send(h11.EndOfMessage()))

    async def head(self) -> Reply:
        while True:
            event = await self._event()
            if isinstance(event, h11.Response):
                headers = {k.decode().lower(): v.decode() for k, v in event.headers}
                return Reply(event.status_code, headers)
            if isinstance(event, h11.ConnectionClosed):
                raise EOFError("the server closed the connection")

    async def chunk(self) -> bytes | None:
        event = await self._event()
        if isinstance(event, h11.Data):
            return bytes(event.data)
        if isinstance(event, h11.EndOfMessage):
            if self.conn.our_state is h11.DONE and self.conn.their_state is h11.DONE:
                self.conn.start_next_cycle()
            return None
        raise EOFError(f"unexpected {event!r}")

    async def rest(self, reply: Reply) -> Reply:
        parts = []
        while (part := await self.chunk()) is not None:
            parts.append(part)
        reply.body = b"".join(parts)
        return reply

    async def request(
        self,
        method: str = "POST",
        body: object = None,
        headers: dict[str, str | None] | None = None,
        path: str = "/mcp",
    ) -> Reply:
        await self.send(method, body, headers, path)
        return await self.rest(await self.head())

    def sse(self) -> Events:
        return Events(self)


class Events:
    """The SSE events of a response being read (a plain object: no async generator)."""

    def __init__(self, raw: Raw) -> None:
        self.raw = raw
        self.decoder = SSEDecoder()
        self.pending: list[SSEEvent] = []

    async def next(self) -> SSEEvent | None:
        """The next event, or None at the end of the response."""
        while not self.pending:
            part = await self.raw.chunk()
            if part is None:
                return None
            self.pending.extend(self.decoder.feed(part))
        return self.pending.pop(0)

    async def rest(self) -> list[SSEEvent]:
        out = []
        while (event := await self.next()) is not None:
            out.append(event)
        return out


def rpc(rid: int | str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        out["params"] = params
    return out


def note(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        out["params"] = params
    return out


def modern(
    rid: int | str, method: str, params: dict[str, Any] | None = None, **meta: Any
) -> tuple[dict[str, Any], dict[str, str | None]]:
    """A modern request and the headers a conforming client sends with it."""
    p = dict(params or {})
    p["_meta"] = {PV: MODERN, CAPS: {}, **meta}
    headers: dict[str, str | None] = {"mcp-protocol-version": MODERN, "mcp-method": method}
    key = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}.get(method)
    if key is not None and key in p:
        headers["mcp-name"] = encode_header_value(p[key])
    return rpc(rid, method, p), headers


def init_body(version: str = LEGACY, rid: int = 1) -> dict[str, Any]:
    return rpc(
        rid,
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    )


async def initialize(raw: Raw, version: str = LEGACY) -> str:
    """A legacy session: initialize, then notifications/initialized; its id."""
    reply = await raw.request(body=init_body(version))
    assert reply.status == 200, reply
    assert reply.json()["result"]["protocolVersion"] == version
    sid = reply.headers["mcp-session-id"]
    done = await raw.request(
        body=note("notifications/initialized"),
        headers={"mcp-session-id": sid, "mcp-protocol-version": version},
    )
    assert done.status == 202
    return sid


@asynccontextmanager
async def running(app: Server = everything, **options: Any) -> AsyncIterator[HTTPServer]:
    http = HTTPServer(app, HTTPServerOptions(**options))
    async with anyio.create_task_group() as tg:
        await tg.start(http.serve, "127.0.0.1", 0)
        try:
            yield http
        finally:
            tg.cancel_scope.cancel()


@asynccontextmanager
async def client(port: int) -> AsyncIterator[Raw]:
    raw = await Raw.connect(port)
    try:
        yield raw
    finally:
        await raw.aclose()


def free_port() -> int:
    """A TCP port free on the loopback address (for a server another process starts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
