"""The modern half of the HTTP endpoint: one self-contained POST per request (2026-07-28).

Theory of operation
-------------------
A modern request carries everything it needs (``params._meta``: version,
client capabilities, client info, log level), so it is served by a
connection of its own: a ``OneShotTransport`` and an ordinary
``Server.serve``, created for the request and gone with it. Nothing is kept
between requests (no session, no ``Mcp-Session-Id``, no resumption), so the
memory one request costs is bounded by that request.

Before anything runs, the request is checked the way the reference SDK
orders it (``basic/transports/streamable-http.mdx``, "Required headers"):
the ``_meta`` envelope (-32602), ``MCP-Protocol-Version``/``Mcp-Method``/
``Mcp-Name`` against the body (-32020), the version's type (-32602) and
support (-32022), then a ``tools/call``'s ``Mcp-Param-*`` headers against
the tool's ``x-mcp-header`` properties (-32020). Each is answered as
``application/json`` with HTTP 400; a method the server does not have is the
dispatcher's -32601, HTTP 404.

The response is JSON, or SSE as soon as a related notification (progress, a
log message, a subscription event) comes first. A client that closes the
response has cancelled the request: the pump returns, the transport reports
end of input, and the session cancels the handler. Notifications POSTed to
a modern endpoint are accepted with 202 and dropped: no client->server
notification means anything on this wire.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from ._http_streams import JSON_HEADERS, OneShotTransport, ResponseStream
from ._http_wire import HTTPExchange, RequestHead
from ._versions import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, MODERN_VERSIONS
from .sansio._http import http_status_for_error, param_header_mismatch, routing_header_mismatch
from .sansio._json import JSONValue
from .sansio._messages import ErrorCode, Request

if TYPE_CHECKING:
    from ._http_server import HTTPServer

__all__ = ("ModernEndpoint",)


class ModernEndpoint:
    """Modern requests behind one ``HTTPServer`` (see the module docstring)."""

    def __init__(self, app: HTTPServer) -> None:
        self.app = app
        self._oneshots: set[OneShotTransport] = set()

    def stop_listening(self) -> None:
        """End open ``subscriptions/listen`` streams with their final result (shutdown)."""
        for conn in self.app.server.connections:
            session = conn.session
            if session is not None and session.transport in self._oneshots and conn.stop_listening:
                conn.stop_listening.set()

    async def notification(self, http: HTTPExchange, version: str | None) -> None:
        # No client->server notification means anything on this wire: cancelling
        # is closing the response stream. Accept and drop (streamable-http.mdx).
        if version is not None and version not in MODERN_VERSIONS:
            await self.app.json_error(
                http,
                400,
                None,
                ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
                {"supported": self.app.server.supported_versions, "requested": version},
            )
            return
        await http.respond(202, JSON_HEADERS)

    def _problem(self, req: Request, head: RequestHead) -> tuple[int, str, JSONValue] | None:
        """The JSON-RPC error a modern request earns before dispatch, if any.

        Order as in the reference SDK: envelope (-32602), headers (-32020),
        version type (-32602), supported version (-32022); an unknown method
        is the dispatcher's -32601 (HTTP 404).
        """
        params = req.params or {}
        meta = params.get("_meta")
        if not isinstance(meta, dict):
            return (
                ErrorCode.INVALID_PARAMS,
                f"params._meta must be an object carrying {META_PROTOCOL_VERSION!r} and "
                f"{META_CLIENT_CAPABILITIES!r}",
                None,
            )
        missing = [k for k in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES) if k not in meta]
        if missing:
            return (
                ErrorCode.INVALID_PARAMS,
                "params._meta is missing the required key(s): " + ", ".join(missing),
                None,
            )
        mismatch = routing_header_mismatch(req.method, params, head.headers, head.duplicated)
        if mismatch is not None:
            return ErrorCode.HEADER_MISMATCH, "Header mismatch: " + mismatch, None
        version = meta[META_PROTOCOL_VERSION]
        if not isinstance(version, str):
            return ErrorCode.INVALID_PARAMS, f"{META_PROTOCOL_VERSION} must be a string", None
        if version not in MODERN_VERSIONS:
            return (
                ErrorCode.UNSUPPORTED_PROTOCOL_VERSION,
                "Unsupported protocol version",
                {"supported": self.app.server.supported_versions, "requested": version},
            )
        if req.method == "tools/call":
            tool = self.app.server.tools.get(params.get("name"))  # type: ignore[arg-type]
            arguments = params.get("arguments")
            if tool is not None and (arguments is None or isinstance(arguments, dict)):
                mismatch = param_header_mismatch(
                    tool.input_schema, arguments or {}, head.headers, head.duplicated
                )
                if mismatch is not None:
                    return ErrorCode.HEADER_MISMATCH, "Header mismatch: " + mismatch, None
        return None

    async def request(
        self, http: HTTPExchange, head: RequestHead, req: Request, can_json: bool, can_sse: bool
    ) -> None:
        problem = self._problem(req, head)
        if problem is not None:
            code, message, data = problem
            await self.app.json_error(
                http, http_status_for_error(code), req.id, code, message, data
            )
            return
        listen = req.method == "subscriptions/listen"
        if listen and not can_sse:
            # A listen response is a notification stream: it cannot be JSON.
            await http.respond_text(406, "Not Acceptable: subscriptions/listen needs SSE")
            return
        sse_ok = can_sse and (listen or not self.app.options.json_response)
        stream = ResponseStream("", req.id, sse_ok=sse_ok, modern=True)
        if not can_json:
            await stream.commit()
        transport = OneShotTransport(req, stream)
        self._oneshots.add(transport)
        self.app.modern_requests += 1

        async def run() -> None:
            try:
                await self.app.server.serve(transport)
            finally:
                stream.end(503)

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(run)
                await self.app.exchange(http, stream)
                transport.finish()  # disconnect or done: the handler, if still running, stops
        finally:
            self._oneshots.discard(transport)
