"""A scripted HTTP/1.1 server for the HTTP client tests (loopback only, h11 server side).

Each request is recorded (``Seen``) and answered by a test-supplied async handler
that returns a ``Reply``: a status, headers, and a body given as chunks, each written
separately (``delay`` apart), optionally held open afterwards or cut off without a
proper end. Keep-alive is supported, so tests can check connection reuse. For
malformed HTTP, a reply can instead be raw bytes written as they are (``raw``).
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

import anyio
import anyio.abc
import h11
from anyio.streams.tls import TLSListener


@dataclass
class Seen:
    method: str
    target: str
    headers: dict[str, str]
    body: bytes
    connection: int
    #: Every header field as sent, in order, names lowercased (``headers`` keeps
    #: the last of each name).
    fields: list[tuple[str, str]] = field(default_factory=list)

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None

    @property
    def rpc_method(self) -> str | None:
        value = self.json
        return value.get("method") if isinstance(value, dict) else None


@dataclass
class Reply:
    status: int = 200
    headers: list[tuple[str, str]] = field(default_factory=list)
    chunks: list[bytes] = field(default_factory=list)
    delay: float = 0.0
    #: After the chunks: keep the response open until this event is set.
    hold: anyio.Event | None = None
    #: End by closing the socket instead of finishing the body (a broken stream).
    cut: bool = False

    #: After the chunks (and before ``hold``): forward what arrives here until it closes.
    feed: anyio.abc.ObjectReceiveStream[bytes] | None = None
    #: Close the socket after a complete response, without saying so (a keep-alive race).
    close_after: bool = False
    #: Close the socket without any response at all.
    drop: bool = False
    #: Bytes written as they are instead of a response framed by h11 (malformed HTTP
    #: on purpose), one piece at a time (``delay`` apart), then ``hold``; afterwards
    #: the socket closes, unless ``raw_keep`` says the pieces were one complete
    #: response and the connection goes on to serve the next request.
    raw: list[bytes] | None = None
    raw_keep: bool = False

    @classmethod
    def json(
        cls, value: Any, status: int = 200, headers: list[tuple[str, str]] | None = None, **kw: Any
    ) -> Reply:
        body = json.dumps(value).encode()
        head = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
        return cls(status, head + (headers or []), [body], **kw)

    @classmethod
    def sse(
        cls,
        *events: bytes | str,
        content_type: str = "text/event-stream",
        headers: list[tuple[str, str]] | None = None,
        **kw: Any,
    ) -> Reply:
        chunks = [e.encode() if isinstance(e, str) else e for e in events]
        return cls(200, [("Content-Type", content_type), *(headers or [])], chunks, **kw)

    @classmethod
    def text(cls, status: int, text: str, headers: list[tuple[str, str]] | None = None) -> Reply:
        body = text.encode()
        head = [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))]
        return cls(status, head + (headers or []), [body])

    @classmethod
    def empty(cls, status: int = 202, **kw: Any) -> Reply:
        return cls(status, [("Content-Length", "0")], [], **kw)


def event(message: Any, *, id: str | None = None, retry: int | None = None) -> str:
    """One SSE ``message`` event carrying ``message`` as JSON."""
    lines = []
    if id is not None:
        lines.append(f"id: {id}")
    if retry is not None:
        lines.append(f"retry: {retry}")
    lines.append("event: message")
    lines.append("data: " + json.dumps(message))
    return "\n".join(lines) + "\n\n"


def result(rid: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": value}


Handler = Callable[[Seen], Awaitable[Reply]]


class RawServer:
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.seen: list[Seen] = []
        self.connections = 0
        #: Connections open right now (the server's side of each closes once the
        #: client has closed its own, or the script is done with it).
        self.open = 0
        self.port = 0
        self.scheme = "http"

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}/mcp"

    def methods(self, http_method: str = "POST") -> list[str | None]:
        return [s.rpc_method for s in self.seen if s.method == http_method]

    async def _serve_one(self, stream: anyio.abc.ByteStream) -> None:
        self.connections += 1
        self.open += 1
        number = self.connections
        raw = stream.extra(anyio.abc.SocketAttribute.raw_socket)
        raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = h11.Connection(h11.SERVER)
        reply: Reply | None = None
        try:
            while True:
                request: h11.Request | None = None
                body = b""
                while True:
                    ev = conn.next_event()
                    if ev is h11.NEED_DATA:
                        try:
                            data = await stream.receive()
                        except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                            data = b""
                        conn.receive_data(data)
                        continue
                    if isinstance(ev, h11.Request):
                        request = ev
                    elif isinstance(ev, h11.Data):
                        body += ev.data
                    elif isinstance(ev, h11.EndOfMessage):
                        break
                    elif isinstance(ev, h11.ConnectionClosed):
                        return
                assert request is not None
                fields = [(k.decode().lower(), v.decode()) for k, v in request.headers]
                seen = Seen(
                    request.method.decode(),
                    request.target.decode(),
                    dict(fields),
                    body,
                    number,
                    fields,
                )
                self.seen.append(seen)
                reply = await self.handler(seen)
                if reply.drop:
                    return
                if reply.raw is not None:
                    for piece in reply.raw:
                        if reply.delay:
                            await anyio.sleep(reply.delay)
                        if piece:
                            await stream.send(piece)
                    if reply.hold is not None:
                        await reply.hold.wait()
                    if not reply.raw_keep:
                        return
                    # h11 saw no response: a fresh machine serves the next request.
                    leftover = conn.trailing_data[0]
                    conn = h11.Connection(h11.SERVER)
                    if leftover:
                        conn.receive_data(leftover)
                    continue
                await stream.send(
                    conn.send(h11.Response(status_code=reply.status, headers=reply.headers))
                )
                for chunk in reply.chunks:
                    if reply.delay:
                        await anyio.sleep(reply.delay)
                    await stream.send(conn.send(h11.Data(data=chunk)))
                if reply.feed is not None:
                    async for chunk in reply.feed:
                        await stream.send(conn.send(h11.Data(data=chunk)))
                if reply.hold is not None:
                    await reply.hold.wait()
                if reply.cut:
                    return
                await stream.send(conn.send(h11.EndOfMessage()))
                if reply.close_after:
                    return
                if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                    return
                conn.start_next_cycle()
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError, h11.ProtocolError):
            return
        finally:
            if reply is not None and reply.feed is not None:
                reply.feed.close()  # type: ignore[attr-defined]
            self.open -= 1
            await anyio.aclose_forcefully(stream)


@asynccontextmanager
async def raw_server(
    handler: Handler, *, tls: ssl.SSLContext | None = None
) -> AsyncIterator[RawServer]:
    server = RawServer(handler)
    tcp = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    server.port = tcp.extra(anyio.abc.SocketAttribute.local_port)
    server.scheme = "https" if tls is not None else "http"
    listener: anyio.abc.Listener[Any] = tcp
    if tls is not None:
        listener = TLSListener(tcp, tls, standard_compatible=False)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, server._serve_one)
            try:
                yield server
            finally:
                tg.cancel_scope.cancel()
    finally:
        await listener.aclose()


def self_signed(tmp: Any) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A certificate for 127.0.0.1: (the server's context, a client context trusting it)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "mcpwire test")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp / "cert.pem", tmp / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_file, key_file)
    client = ssl.create_default_context(cafile=str(cert_file))
    return server, client


def as_metadata(issuer: str, **extra: Any) -> dict[str, Any]:
    """RFC 8414 metadata of a scripted authorization server at ``issuer``."""
    return {
        "issuer": issuer,
        "authorization_endpoint": issuer + "/authorize",
        "token_endpoint": issuer + "/token",
        "registration_endpoint": issuer + "/register",
        "code_challenge_methods_supported": ["S256"],
        **extra,
    }


def registered(client_id: str = "c1") -> Reply:
    """A dynamic client registration answer (RFC 7591 §3.2.1): a public client."""
    return Reply.json({"client_id": client_id, "token_endpoint_auth_method": "none"}, 201)


def approved(query: str, code: str) -> tuple[dict[str, str], Reply]:
    """An authorization request approved at once: its parameters, and the redirect
    to its ``redirect_uri`` carrying ``code`` and its ``state``."""
    params = dict(parse_qsl(query))
    answer = urlencode({"code": code, "state": params["state"]})
    target = f"{params['redirect_uri']}?{answer}"
    return params, Reply(302, [("Location", target), ("Content-Length", "0")])
