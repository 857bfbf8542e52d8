"""The deprecated HTTP+SSE transport (2024-11-05), for clients that predate streamable HTTP.

Theory of operation
-------------------
Two endpoints (``d/2024-11-05/basic/transports.mdx``; spec-notes section 7.4):

* ``GET /sse`` opens a connection: the server answers with an SSE stream
  whose first event is ``event: endpoint``, its data the URL to POST to
  (``/messages?session_id=<32 hex digits>``, an absolute path the client
  resolves against the SSE URL, as the reference SDK sends it). Every message
  from the server, responses included, follows on this stream as
  ``event: message``. The stream *is* the connection: when the client goes
  away, its ``Server.serve`` connection ends.
* ``POST /messages?session_id=...`` carries one message from the client:
  202 when accepted (the answer comes on the stream), 400 without a valid
  ``session_id`` or with a body that is not JSON-RPC (the JSON-RPC error, when
  one is due, is also sent on the stream), 404 for an unknown session.

Each stream is a ``ResponseStream`` that is SSE from the start and never
ends with a response; ``SSEServerTransport`` puts everything on it.
Connections are bounded by ``max_sessions`` (503 beyond) and end with the
server (their streams are closed at shutdown).
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

import anyio

from ._errors import ConnectionClosed
from ._http_gate import content_refusal, declared_length
from ._http_sessions import Inbox
from ._http_streams import SSE_HEADERS, Frame, ResponseStream
from ._http_wire import BodyTooLarge, HTTPExchange, ReadTimeout, RequestHead
from ._transport import Outbound
from .sansio._http import accepts
from .sansio._messages import Invalid, RequestId, parse, serialize_batch
from .sansio._sse import encode_event

if TYPE_CHECKING:
    from ._http_server import HTTPServer

__all__ = ("SSEEndpoint", "SSEServerTransport")

_SESSION_ID = re.compile(r"[0-9a-f]{32}")
#: Messages POSTed to one connection before the next POST waits for its reader.
_INBOUND_BUFFER = 64


class SSEServerTransport(Inbox):
    """The ``Transport`` of one HTTP+SSE connection: POSTs in, one SSE stream out."""

    def __init__(self, stream: ResponseStream) -> None:
        super().__init__(_INBOUND_BUFFER)
        self.stream = stream
        from ._auth_tokens import current_cell  # loaded only where auth is used

        self.auth = current_cell()  # its access token and owner (``_http_auth``)

    async def send(self, message: Outbound, *, related: RequestId | None = None) -> None:
        if not self.stream.attached:
            raise anyio.BrokenResourceError
        if isinstance(message, list):  # a batch reply is one event holding the array
            data = serialize_batch(message).decode("utf-8")
            self.stream.put(Frame("sse", encode_event(data, event="message")))
            return
        await self.stream.event(message)

    async def aclose(self) -> None:
        self.close()

    def close(self) -> None:
        """End both directions now (no wait, so safe in a cancelled ``finally``)."""
        self._in.close()
        self._out.close()

    def close_error(self) -> ConnectionClosed:
        return ConnectionClosed("the HTTP+SSE stream ended")


class SSEEndpoint:
    """``GET /sse`` and ``POST /messages`` behind one ``HTTPServer``."""

    def __init__(self, app: HTTPServer) -> None:
        self.app = app
        self.connections: dict[str, SSEServerTransport] = {}

    def close_all(self) -> None:
        """End every open stream (shutdown)."""
        for transport in list(self.connections.values()):
            transport.stream.end()

    async def get(self, http: HTTPExchange, head: RequestHead) -> None:
        try:
            await http.read_body(4096)
        except BodyTooLarge:
            await http.respond_text(413, "Content Too Large", [("connection", "close")])
            return
        if not accepts(head.headers.get("accept"), "text/event-stream"):
            await http.respond_text(406, "Not Acceptable: this endpoint is text/event-stream")
            return
        if len(self.connections) >= self.app.options.max_sessions:
            await http.respond_text(503, "Too many open connections", [("retry-after", "1")])
            return
        session_id = os.urandom(16).hex()  # as secrets.token_hex(16)
        stream = ResponseStream("", None, sse_ok=True)
        stream.sse = True
        transport = SSEServerTransport(stream)
        self.connections[session_id] = transport
        endpoint = f"{self.app.options.message_path}?session_id={session_id}"
        try:
            await http.start(200, SSE_HEADERS)
            await http.write(encode_event(endpoint, event="endpoint"))

            async def run() -> None:
                try:
                    await self.app.server.serve(transport)
                finally:
                    stream.end()

            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await self.app.exchange(http, stream, started=True)
                transport.end_input()
                stream.detach()
        finally:
            # Also when the head or the endpoint event could not be written (the
            # client left at once): the server never ran to close it.
            transport.close()
            self.connections.pop(session_id, None)

    async def post(self, http: HTTPExchange, head: RequestHead) -> None:
        length = head.headers.get("content-length")
        try:
            body = await http.read_body(
                self.app.options.max_body_size,
                declared_length(length),
            )
        except BodyTooLarge:
            await http.respond_text(413, "Content Too Large", [("connection", "close")])
            return
        except ReadTimeout:
            await http.respond_text(408, "Request Timeout", [("connection", "close")])
            return
        import urllib.parse  # only the deprecated transport needs it

        values = urllib.parse.parse_qs(head.query).get("session_id", [])
        session_id = values[0] if len(values) == 1 else ""
        if not _SESSION_ID.fullmatch(session_id):
            await http.respond_text(400, "Bad Request: session_id is missing or malformed")
            return
        transport = self.connections.get(session_id)
        if transport is None:
            await http.respond_text(404, "Not Found: no such session")
            return
        if (refusal := content_refusal(head.headers.get("content-type"))) is not None:
            await http.respond_text(415, f"Unsupported Media Type: {refusal}")
            return
        item = parse(body)
        auth = self.app.options.auth
        if auth is not None and not await auth.permit(http, item):
            return  # a token without the scopes this operation needs: 403 (_http_auth)
        if not await transport.feed(item):
            await http.respond_text(404, "Not Found: the session ended")
            return
        if type(item) is Invalid:
            await http.respond_text(400, f"Bad Request: {item.error.message}")
            return
        await http.respond_text(202, "Accepted")
