"""A loopback TCP relay that records HTTP traffic, and its reading into ``wirecheck`` frames.

``relay(upstream_port)`` (an anyio task, started with ``task_group.start``) accepts on a fresh
loopback port and copies every connection byte for byte to ``127.0.0.1:upstream_port``,
recording each chunk in both directions with a global sequence number. Nothing is
changed, so the peers see each other exactly as without it.

``HttpCapture.frames()`` reads the recording afterwards: each connection's client bytes are
parsed as HTTP/1.1 requests and its server bytes as the responses to them (``h11``); each
request body is a ``C>S`` frame, each response body a ``S>C`` frame (``application/json``) or
one per event (``text/event-stream``; events without data, such as priming events, carry no
frame). Exchanges are ordered by when their request started, and a response's frames follow
its request, which is all ``wirecheck.check_capture`` needs to pair them.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import h11

from interop.wirecheck import Frame

__all__ = ("HttpCapture", "read_stdio_capture")


def read_stdio_capture(path: Path) -> list[Frame]:
    """A ``tee.py`` capture, split on ``\n`` only.

    (``wirecheck.read_capture`` uses ``str.splitlines``, which also splits on U+2028,
    U+2029, U+0085 and U+001C..U+001E: characters JSON carries unescaped inside strings.)
    """
    frames: list[Frame] = []
    text = path.read_text("utf-8")
    for lineno, line in enumerate(text.split("\n")[:-1] if text else [], 1):
        direction, _, payload = line.partition(" ")
        frames.append(_frame(lineno, direction, payload))
    return frames


@dataclass
class _Conn:
    c2s: list[tuple[int, bytes]] = field(default_factory=list)
    s2c: list[tuple[int, bytes]] = field(default_factory=list)


@dataclass
class _Exchange:
    order: int
    method: bytes
    target: bytes
    body: bytes = b""
    status: int | None = None
    content_type: str = ""
    response: bytes = b""


@dataclass
class HttpCapture:
    conns: list[_Conn] = field(default_factory=list)
    _seq: itertools.count[int] = field(default_factory=itertools.count)

    def frames(self) -> list[Frame]:
        exchanges: list[_Exchange] = []
        for conn in self.conns:
            exchanges.extend(_parse(conn))
        exchanges.sort(key=lambda e: e.order)
        frames: list[Frame] = []
        for ex in exchanges:
            for direction, payload in _payloads(ex):
                frames.append(_frame(len(frames) + 1, direction, payload))
        return frames

    async def relay(self, upstream_port: int, *, task_status: anyio.abc.TaskStatus[int]) -> None:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        async with listener:
            task_status.started(listener.extra(anyio.abc.SocketAttribute.local_port))
            await listener.serve(lambda s: self._handle(s, upstream_port))

    async def _handle(self, client: anyio.abc.SocketStream, upstream_port: int) -> None:
        conn = _Conn()
        self.conns.append(conn)
        async with client:
            try:
                upstream = await anyio.connect_tcp("127.0.0.1", upstream_port)
            except OSError:
                return
            async with upstream, anyio.create_task_group() as tg:
                tg.start_soon(self._pump, client, upstream, conn.c2s)
                tg.start_soon(self._pump, upstream, client, conn.s2c)

    async def _pump(
        self,
        src: anyio.abc.SocketStream,
        dst: anyio.abc.SocketStream,
        log: list[tuple[int, bytes]],
    ) -> None:
        try:
            async for chunk in src:
                log.append((next(self._seq), chunk))
                await dst.send(chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass
        try:
            await dst.send_eof()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass


def _parse(conn: _Conn) -> list[_Exchange]:
    exchanges: list[_Exchange] = []
    server = h11.Connection(h11.SERVER)
    current: _Exchange | None = None
    try:
        for order, chunk in conn.c2s:
            server.receive_data(chunk)
            while True:
                event = server.next_event()
                if event is h11.NEED_DATA or event is h11.PAUSED:
                    break
                if isinstance(event, h11.Request):
                    current = _Exchange(order, event.method, event.target)
                elif isinstance(event, h11.Data) and current is not None:
                    current.body += bytes(event.data)
                elif isinstance(event, h11.EndOfMessage) and current is not None:
                    exchanges.append(current)
                    current = None
                    # Close h11's cycle with a stand-in response (the real one is parsed below).
                    server.send(h11.Response(status_code=204, headers=[]))
                    server.send(h11.EndOfMessage())
                    server.start_next_cycle()
                elif isinstance(event, h11.ConnectionClosed):
                    break
    except h11.ProtocolError:
        pass
    client = h11.Connection(h11.CLIENT)
    data = b"".join(chunk for _, chunk in conn.s2c)
    client.receive_data(data)
    client.receive_data(b"")
    for ex in exchanges:
        try:
            client.send(h11.Request(method=ex.method, target=ex.target, headers=[("Host", "x")]))
            client.send(h11.EndOfMessage())
            while True:
                event = client.next_event()
                if event is h11.NEED_DATA or isinstance(event, h11.ConnectionClosed):
                    return exchanges
                if isinstance(event, h11.Response):
                    ex.status = event.status_code
                    for name, value in event.headers:
                        if name == b"content-type":
                            ex.content_type = value.decode("latin-1")
                elif isinstance(event, h11.Data):
                    ex.response += bytes(event.data)
                elif isinstance(event, h11.EndOfMessage):
                    break
            client.start_next_cycle()
        except h11.ProtocolError:
            # A stream cut short (the client closed it): keep what arrived.
            break
    return exchanges


def _payloads(ex: _Exchange) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if ex.body.strip():
        out.append(("C>S", ex.body.decode("utf-8")))
    text = ex.response.decode("utf-8", errors="replace")
    if ex.content_type.startswith("text/event-stream"):
        for block in text.replace("\r\n", "\n").replace("\r", "\n").split("\n\n"):
            data = [
                line[5:].removeprefix(" ") for line in block.split("\n") if line.startswith("data:")
            ]
            if data and "".join(data).strip():
                out.append(("S>C", "\n".join(data)))
    elif text.strip():
        out.append(("S>C", text))
    return out


def _frame(lineno: int, direction: str, text: str) -> Frame:
    msg: Any
    try:
        msg = json.loads(text)
    except ValueError:
        msg = None
    return Frame(lineno, direction, text, msg)
