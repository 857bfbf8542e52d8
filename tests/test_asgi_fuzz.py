"""The ASGI 3 adapter (``mcpwire.asgi_app``) fuzzed in process: it answers as the
native server does, and keeps the ASGI contract whatever the host does.

Two properties, each on both anyio backends, with hypothesis drawing the input.
One ``Server`` definition (``test_http_fuzz.fuzz_app``: a plain and a coroutine
tool, one that reports progress and logs, one that raises, one with
``Mcp-Param-*`` headers, a prompt, a static and a templated resource; plus
``slow``, which reports progress between pauses) backs every server here, with
the same options (allowed hosts and origins, a body limit).

1. **Differential.** ``test_http_fuzz``'s hostile requests (both protocol eras,
   every method, bad headers, bodies, paths, verbs, framings) go to the native
   ``HTTPServer`` through a raw h11 client over loopback, and, as the equivalent
   ASGI scope (mounted under a ``root_path`` or not, over HTTP/1.0, 1.1, 2 or 3,
   ``raw_path`` as sent, percent-encoded or absent, the body cut into
   ``http.request`` messages at drawn points, with empty pieces) to the ASGI app
   in process. Both must give the same status, the same response headers (but
   framing: ``Content-Length`` and ``Transfer-Encoding`` belong to the host), a
   session id exactly when the other does, and the same content: the JSON-RPC
   body, the decoded SSE messages (event ids and priming events aside: each side
   mints its own), or the same plain text. Legacy sessions are opened on each side
   first and named by stand-ins; the ASGI app runs inside its lifespan, which
   legacy sessions need. The differences the adapter documents are the oracle's:
   an HTTP/2 or HTTP/3 head carries no hop-by-hop field, and a second ASGI app,
   run without lifespan, answers every request that names no session as the
   native server does, but refuses a legacy ``initialize`` with 500 and -32603
   (``_asgi`` module docstring).
2. **ASGI contract.** The same requests and a few that stream (modern and legacy
   SSE with progress, a session's GET stream, an HTTP+SSE connection: this app
   also serves the deprecated transport) reach the app in scopes the native
   server never sees: header names in capitals, empty, repeated or very long, as
   tuples or lists; values with non-ASCII, control and odd digit bytes
   (``Content-Length`` included); ``http_version`` 1.0, 1.1, 2 and 3; a
   ``root_path``; ``raw_path`` absent or unlike ``path``; a path beyond ASCII; a
   method in lower case or unknown; a query string; optional keys left out;
   other scope types. The host then misbehaves: the body comes in 0..N messages
   (empty ones, ``more_body`` missing, a last piece that never comes),
   ``http.disconnect`` arrives before, during or after the body or after the
   app's k-th ``send`` (mid-stream), ``send`` raises ``OSError`` at its k-th
   call, sends to a client that left are dropped or raise, the host cancels the
   app once its client is gone. Whatever happens:

   * the app returns (it raises only for a scope type it does not serve, as the
     module docstring says and ASGI prescribes), within a deadline;
   * it sends at most one ``http.response.start``, then ``http.response.body``
     messages (bytes, lower-case header names, a valid status), nothing after
     ``more_body: False`` and nothing once it has returned; a response it
     started is finished unless the client left; a request whose client stays
     gets a response; ``Content-Length``, when sent, is the body's length; a
     JSON or SSE body decodes; an HTTP/2 or HTTP/3 head has no hop-by-hop field;
   * a legacy SSE response whose client left stays resumable: a GET with the
     last event id received replays the rest, up to the response, nothing twice;
   * nothing is logged at ERROR on the "mcpwire" loggers, and nothing the
     request used is found unclosed when collected (a ``ResourceWarning``);
   * afterwards a modern ``tools/list`` and a legacy ``ping`` are answered and no
     request counts as in flight; at the end the lifespan shutdown completes and
     leaves no session, no task and no connection of the ``Server``.
"""

from __future__ import annotations

import collections
import gc
import itertools
import json
import logging
import warnings
from collections.abc import AsyncIterator, Callable, Iterator, MutableMapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import unquote

import anyio
import anyio.from_thread
import anyio.lowlevel
import h11
import pytest
from http_raw import Raw, init_body, note, running
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_http_fuzz import (
    BASE_SESSIONS,
    BATCH_CASES,
    BODY_CASES,
    ENVELOPE_CASES,
    FRAMING_CASES,
    HEADER_CASES,
    LEGACY_CASES,
    MAX_BODY,
    MESSAGE_CASES,
    TRANSPORT_CASES,
    Headers,
    Wire,
    _is_modern,
    dumps,
    fuzz_app,
    header_map,
    legacy_wire,
    modern_wire,
    post_headers,
    request_events,
    wires,
    write,
)

from mcpwire import ASGIApp, Context, HTTPServer, Server, asgi_app
from mcpwire.sansio import Request, RequestId, SSEDecoder, parse
from mcpwire.sansio._http import LOOPBACK_HOSTS, LOOPBACK_ORIGINS

#: Seconds any one exchange may take before the test calls it hung.
WAIT = 10.0
#: Seconds of silence after which the servers end their ``subscriptions/listen``
#: streams (a valid listen rightly streams until then).
IDLE = 0.25
#: Options both servers get. ``allowed_hosts`` is spelt out: under ASGI "auto"
#: follows the address in the scope's ``server``, natively the bound address.
OPTIONS: dict[str, Any] = {
    "max_body_size": MAX_BODY,
    "allowed_hosts": LOOPBACK_HOSTS,
    "allowed_origins": LOOPBACK_ORIGINS,
}
#: The ASGI-only app waits this long for a body the host stops delivering (408).
ASGI_READ_TIMEOUT = 1.0
#: Response fields that frame the body: the host's business, not the app's.
FRAMING_FIELDS = frozenset({"content-length", "transfer-encoding"})
#: Fields an HTTP/2 or HTTP/3 response must not carry (RFC 9113 8.2.2).
HOP_BY_HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "upgrade"})

Message = dict[str, Any]


def fuzz_server() -> Server:
    """``test_http_fuzz``'s app, plus a tool whose SSE response takes a while."""
    app = fuzz_app()

    @app.tool()
    async def slow(ctx: Context, steps: int = 3) -> str:
        """Report progress a few times, pausing in between."""
        count = min(max(steps, 0), 4)
        for step in range(count):
            await ctx.report_progress(step + 1, count)
            await anyio.sleep(0.005)
        return "slow"

    return app


# -- an ASGI host in process ----------------------------------------------------------------


class Host:
    """One request through an ASGI app, driven as a host drives it, and judged.

    ``script``: the ``http.request`` messages ``receive`` hands out, in order; once
    they are taken it waits until the response is complete (or the client left) and
    then reports ``http.disconnect``, as uvicorn does. The client leaves once the
    app has taken ``leave_after_receives`` messages (0: before the first), after the
    app's ``leave_after_sends``-th send, or when the ``fail_send``-th send raises
    ``OSError`` (the connection reset); sends after that are dropped, or raise
    ``OSError`` when ``raise_when_gone``. A host that cancels the app once its
    client is gone (hypercorn does) is ``cancel_after_sends``.
    """

    def __init__(
        self,
        scope: dict[str, Any],
        script: list[Message],
        *,
        leave_after_receives: int | None = None,
        leave_after_sends: int | None = None,
        fail_send: int | None = None,
        raise_when_gone: bool = False,
        cancel_after_sends: int | None = None,
    ) -> None:
        self.scope = scope
        self.script = collections.deque(script)
        self.leave_after_receives = leave_after_receives
        self.leave_after_sends = leave_after_sends
        self.fail_send = fail_send
        self.raise_when_gone = raise_when_gone
        self.cancel_after_sends = cancel_after_sends
        self.app_scope = anyio.CancelScope()
        self.taken = 0
        self.sent: list[Message] = []
        #: The client left, and did so before the response was complete.
        self.gone = leave_after_receives == 0
        self.cut = self.gone
        self.started = False
        #: The app sent ``more_body: False`` (``delivered``: to a client still there).
        self.ended = False
        self.delivered = False
        self.status = 0
        self.headers: list[tuple[str, str]] = []
        #: What the app sent, and what of it reached the client.
        self.body = b""
        self.received = b""
        self.problems: list[str] = []
        self.error: Exception | None = None
        self.returned = anyio.Event()
        self._wakeup = anyio.Event()

    def leave(self) -> None:
        if not self.gone:
            self.gone = True
            self.cut = not self.delivered
            self._wakeup.set()

    async def receive(self) -> Message:
        if self.returned.is_set():
            self.problems.append("receive called after the app returned")
        await anyio.lowlevel.checkpoint()
        while True:
            if self.gone:
                return {"type": "http.disconnect"}
            if self.script:
                message = self.script.popleft()
                self.taken += 1
                if self.taken == self.leave_after_receives:
                    self.leave()
                return message
            if self.delivered:
                self.gone = True  # the response is complete: the host reports disconnect
                continue
            self._wakeup = anyio.Event()
            await self._wakeup.wait()

    async def send(self, message: MutableMapping[str, Any]) -> None:
        if self.returned.is_set():
            self.problems.append(f"send after the app returned: {message!r}")
        self._judge(message)
        index = len(self.sent)
        if self.fail_send == index:
            self.leave()
            raise OSError("connection reset by peer")
        if self.gone:
            if self.raise_when_gone:
                raise OSError("the client went away")
            return
        self.received += (
            message.get("body", b"") if message["type"] == "http.response.body" else b""
        )
        if self.ended:
            self.delivered = True
            self._wakeup.set()
        if self.leave_after_sends == index:
            self.leave()
        if self.cancel_after_sends == index:
            self.leave()
            self.app_scope.cancel()  # as a host that cancels the app when the client goes
        await anyio.lowlevel.checkpoint()

    def _judge(self, message: MutableMapping[str, Any]) -> None:
        """Record ``message`` and what is wrong with it (ASGI HTTP spec)."""
        self.sent.append(dict(message))
        kind = message.get("type")
        if self.ended:
            self.problems.append(f"{kind} after the response was complete")
            return
        if kind == "http.response.start":
            if self.started:
                self.problems.append("a second http.response.start")
                return
            self.started = True
            status = message.get("status")
            if type(status) is not int or not 100 <= status <= 599:
                self.problems.append(f"status {status!r}")
            self.status = status if type(status) is int else 0
            for item in message.get("headers", ()):
                name, value = item
                if type(name) is not bytes or type(value) is not bytes:
                    self.problems.append(f"a header not of bytes: {item!r}")
                    continue
                if name != name.lower() or not name:
                    self.problems.append(f"header name {name!r} not lower case")
                self.headers.append((name.decode("latin-1"), value.decode("latin-1")))
        elif kind == "http.response.body":
            if not self.started:
                self.problems.append("http.response.body before http.response.start")
            body = message.get("body", b"")
            more = message.get("more_body", False)
            if type(body) is not bytes or type(more) is not bool:
                self.problems.append(f"a malformed body message: {message!r}")
                return
            self.body += body
            self.ended = not more
        else:
            self.problems.append(f"a message of type {kind!r}")

    async def run(self, app: ASGIApp) -> None:
        try:
            with self.app_scope:
                await app(self.scope, self.receive, self.send)
        except Exception as exc:  # judged by the caller
            self.error = exc
        finally:
            self.returned.set()

    async def drive(self, app: ASGIApp, on_idle: Callable[[], None]) -> None:
        """Run the app until it returns; while it is silent, call ``on_idle``."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.run, app)
            with anyio.fail_after(WAIT):
                while not self.returned.is_set():
                    before = len(self.sent)
                    with anyio.move_on_after(IDLE):
                        await self.returned.wait()
                    if not self.returned.is_set() and len(self.sent) == before:
                        on_idle()


@asynccontextmanager
async def lifespan(app: ASGIApp) -> AsyncIterator[ASGIApp]:
    """The app's lifespan: startup before the body, a complete shutdown after it."""
    inbox: list[Message] = [{"type": "lifespan.startup"}]
    outbox: list[Message] = []
    wake = anyio.Event()
    step = anyio.Event()

    async def receive() -> Message:
        while not inbox:
            await wake.wait()
        return inbox.pop(0)

    async def send(message: MutableMapping[str, Any]) -> None:
        outbox.append(dict(message))
        step.set()

    async with anyio.create_task_group() as tg:
        scope: dict[str, Any] = {"type": "lifespan", "asgi": {"version": "3.0"}}
        tg.start_soon(app, scope, receive, send)
        with anyio.fail_after(WAIT):
            await step.wait()
        assert outbox == [{"type": "lifespan.startup.complete"}], outbox
        step = anyio.Event()
        try:
            yield app
        except BaseException:
            tg.cancel_scope.cancel()
            raise
        inbox.append({"type": "lifespan.shutdown"})
        wake.set()
        with anyio.fail_after(WAIT):
            await step.wait()
        assert outbox[-1] == {"type": "lifespan.shutdown.complete"}, outbox


def scope_of(
    verb: str,
    target: str,
    headers: list[tuple[bytes, bytes]],
    *,
    root_path: str = "",
    http_version: str = "1.1",
    raw_path: str = "same",
    port: int = 8000,
) -> dict[str, Any]:
    """The ASGI ``http`` scope a host builds for ``target``: ``path`` decoded and
    prefixed with the mount point, the query apart, and ``raw_path`` as received
    ("same"), or percent-encoding every character ("encoded": a client may write
    the path so, and the host decodes it), or left out ("absent": it is optional)."""
    path, _, query = target.partition("?")
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": http_version,
        "method": verb,
        "scheme": "http",
        "path": root_path + unquote(path),
        "raw_path": (root_path + path).encode("latin-1"),
        "query_string": query.encode("latin-1"),
        "root_path": root_path,
        "headers": headers,
        "server": ("127.0.0.1", port),
        "client": ("127.0.0.1", 50000),
    }
    if raw_path == "encoded":
        scope["raw_path"] = "".join(f"%{b:02X}" for b in scope["path"].encode()).encode()
    elif raw_path == "absent":
        del scope["raw_path"]
    return scope


def pieces(body: bytes, cuts: tuple[int, ...], empty_tail: bool) -> list[Message]:
    """``body`` as ``http.request`` messages cut at ``cuts`` (repeats: empty pieces)."""
    points = [0, *sorted(min(cut, len(body)) for cut in cuts), len(body)]
    parts = [body[a:b] for a, b in itertools.pairwise(points)]
    if empty_tail:
        parts.append(b"")
    return [
        {"type": "http.request", "body": part, "more_body": i < len(parts) - 1}
        for i, part in enumerate(parts)
    ]


def materialize(wire: Wire, sids: dict[bytes, bytes]) -> Headers:
    """The headers as sent: session stand-ins replaced, ``Host`` added when absent."""
    headers = tuple((name, sids.get(value, value)) for name, value in wire.headers)
    if any(name.lower() == "host" for name, _ in headers):
        return headers
    return (("host", b"127.0.0.1"), *headers)


# -- the native side --------------------------------------------------------------------------


@dataclass
class Native:
    """The native server, a keep-alive client connection to it, its sessions."""

    http: HTTPServer
    port: int
    sids: dict[bytes, bytes] = field(default_factory=dict)
    raw: Raw | None = None

    async def hang_up(self) -> None:
        if self.raw is not None:
            await self.raw.aclose()
            self.raw = None

    async def _quiet(self, raw: Raw) -> Any:
        """The next h11 event; while the server is silent, end its listen streams."""
        while True:
            with anyio.move_on_after(IDLE):
                return await raw._event()
            self.http.server.close_subscriptions()

    async def exchange(self, events: list[Any]) -> tuple[int, list[tuple[str, str]], bytes]:
        """Send one request's h11 ``events``: the whole response."""
        if self.raw is None:
            self.raw = await Raw.connect(self.port)
        raw = self.raw
        with anyio.fail_after(WAIT):
            await write(raw, events)
            for event in events:  # the bytes went out already: only the state follows
                raw.conn.send(event)
            while True:
                head = await self._quiet(raw)
                if isinstance(head, h11.Response):
                    break
                assert isinstance(head, h11.InformationalResponse), head
            parts = []
            while type(event := await self._quiet(raw)) is h11.Data:
                parts.append(bytes(event.data))
            assert type(event) is h11.EndOfMessage, event
        headers = [(k.decode().lower(), v.decode("latin-1")) for k, v in head.headers]
        if raw.conn.our_state is h11.DONE and raw.conn.their_state is h11.DONE:
            raw.conn.start_next_cycle()
        if ("connection", "close") in [(k, v.lower()) for k, v in headers]:
            await self.hang_up()
        return head.status_code, headers, b"".join(parts)


@asynccontextmanager
async def connected(http: HTTPServer) -> AsyncIterator[Native]:
    """The native side; its client connection is closed at the end, whatever happened."""
    native = Native(http, http.port or 0)
    try:
        yield native
    finally:
        await native.hang_up()


# -- comparing answers ------------------------------------------------------------------------


def canonical(
    status: int, headers: list[tuple[str, str]], body: bytes, sids: dict[bytes, bytes]
) -> dict[str, Any]:
    """What must agree: status, fields (but framing and the session id's value),
    and the content with this side's session ids put back to their stand-ins."""
    for stand_in, sid in sids.items():
        body = body.replace(sid, stand_in)
    fields = sorted((k, v) for k, v in headers if k not in FRAMING_FIELDS | {"mcp-session-id"})
    media = dict(headers).get("content-type", "")
    content: Any = body
    if media == "text/event-stream":
        decoder = SSEDecoder()
        events = decoder.feed(body)
        decoder.feed_eof()
        # Event ids and priming events (empty data) are each side's own.
        content = [(e.event, json.loads(e.data)) for e in events if e.data]
    elif media == "application/json" and body:
        content = json.loads(body)
    return {
        "status": status,
        "fields": fields,
        "session id": any(k == "mcp-session-id" for k, _ in headers),
        "content": content,
    }


@dataclass(frozen=True)
class Delivery:
    """How the ASGI host hands the request over: mounted at ``root_path`` or not,
    over HTTP ``http_version``, ``raw_path`` as ``scope_of`` says, the body cut at
    ``cuts`` with an empty last piece or not. None of it may change the answer."""

    root_path: str = ""
    http_version: str = "1.1"
    raw_path: str = "same"
    cuts: tuple[int, ...] = ()
    empty_tail: bool = False


deliveries = st.builds(
    Delivery,
    root_path=st.sampled_from(["", "", "/api", "/a/b"]),
    http_version=st.sampled_from(["1.1", "1.1", "1.0", "2", "3"]),
    raw_path=st.sampled_from(["same", "same", "encoded", "absent"]),
    cuts=st.lists(st.integers(0, 300), max_size=4).map(tuple),
    empty_tail=st.booleans(),
)


def legacy_initialize(wire: Wire, headers: Headers) -> RequestId | None:
    """The id of a legacy ``initialize`` (by the era rule of ``_http_gate.is_modern``,
    spec-notes 7.5), or None for any other request."""
    item = parse(wire.body)
    if type(item) is not Request or item.method != "initialize" or wire.verb != "POST":
        return None
    return None if _is_modern(item, header_map(headers)[0]) else item.id


@dataclass
class Pair:
    """The native server and two ASGI apps: one run with its lifespan, one without;
    each side's sessions by stand-in."""

    native: Native
    app: ASGIApp
    bare: ASGIApp
    sids: dict[bytes, bytes] = field(default_factory=dict)
    compared: collections.Counter[str] = field(default_factory=collections.Counter)

    async def asgi(
        self,
        wire: Wire,
        delivery: Delivery,
        app: ASGIApp | None = None,
        sids: dict[bytes, bytes] | None = None,
    ) -> tuple[Host, tuple[int, list[tuple[str, str]], bytes]]:
        app = app or self.app
        headers = materialize(wire, self.sids if sids is None else sids)
        events = request_events(wire.verb, wire.path, headers, wire.body, wire.framing)
        request: h11.Request = events[0]
        # What an HTTP/1.1 host passes on: the fields as received, names in lower case.
        fields = [(bytes(k), bytes(v)) for k, v in request.headers]
        scope = scope_of(
            wire.verb,
            wire.path,
            fields,
            root_path=delivery.root_path,
            http_version=delivery.http_version,
            raw_path=delivery.raw_path,
            port=self.native.port,
        )
        host = Host(scope, pieces(wire.body, delivery.cuts, delivery.empty_tail))
        await host.drive(app, app.http_server.server.close_subscriptions)
        summary = f"{wire!r} {delivery!r}"
        assert host.error is None, f"{summary}: the app raised {host.error!r}"
        assert not host.problems, f"{summary}: {host.problems}"
        assert host.delivered, f"{summary}: no complete response: {host.sent!r}"
        return host, (host.status, host.headers, host.body)

    async def both(self, wire: Wire, delivery: Delivery) -> None:
        headers = materialize(wire, self.native.sids)
        events = request_events(wire.verb, wire.path, headers, wire.body, wire.framing)
        native = await self.native.exchange(events)
        _, asgi = await self.asgi(wire, delivery)
        summary = f"{wire!r} {delivery!r}"
        ours = canonical(*native, self.native.sids)
        theirs = canonical(*asgi, self.sids)
        if delivery.http_version not in ("1.0", "1.1"):
            # "Connection headers, which HTTP/2 and HTTP/3 forbid, are only passed on to
            # HTTP/1.x hosts" (``_asgi`` module docstring; RFC 9113 8.2.2).
            assert not {k for k, _ in theirs["fields"]} & HOP_BY_HOP, theirs
            ours["fields"] = [(k, v) for k, v in ours["fields"] if k not in HOP_BY_HOP]
        assert ours == theirs, f"{summary}\nnative: {ours!r}\nASGI:   {theirs!r}"
        self.compared[f"{native[0]} {dict(native[1]).get('content-type')}"] += 1
        if any(name.lower() == "mcp-session-id" for name, _ in wire.headers):
            return  # the app without lifespan has no session to name
        # Without lifespan, "modern requests ... work as usual ...; a legacy initialize
        # is refused (HTTP 500, JSON-RPC -32603, with a message that says why)" (``_asgi``
        # module docstring, "Without lifespan"); every other request is answered alike.
        _, bare = await self.asgi(wire, delivery, self.bare, {})
        alone = canonical(*bare, {})
        rid = legacy_initialize(wire, headers)
        refused = dict(ours["fields"]).get("content-type", "").startswith("text/plain")
        if rid is not None and not refused:  # a legacy initialize past the transport's gate
            error = alone["content"].get("error") if isinstance(alone["content"], dict) else None
            assert alone["status"] == 500 and error is not None, f"{summary}\n{alone!r}"
            assert error["code"] == -32603 and "lifespan" in error["message"], alone
            assert alone["content"]["id"] == rid and not alone["session id"], alone
            self.compared["refused without lifespan"] += 1
            return
        assert ours == alone, f"{summary}\nnative: {ours!r}\nno lifespan: {alone!r}"
        self.compared["alike without lifespan"] += 1


async def open_sessions(pair: Pair) -> None:
    """The stand-in sessions, opened on each side with the same requests."""
    for stand_in, version in BASE_SESSIONS.items():
        init = Wire(dumps(init_body(version)), post_headers())
        headers = materialize(init, {})
        events = request_events("POST", "/mcp", headers, init.body)
        status, fields, _ = await pair.native.exchange(events)
        assert status == 200, fields
        pair.native.sids[stand_in] = dict(fields)["mcp-session-id"].encode()
        host, (status, fields, _) = await pair.asgi(init, Delivery())
        assert status == 200, host.sent
        pair.sids[stand_in] = dict(fields)["mcp-session-id"].encode()
        done = Wire(
            dumps(note("notifications/initialized")),
            post_headers(("mcp-session-id", stand_in), ("mcp-protocol-version", version)),
        )
        await pair.both(done, Delivery())


async def differential_case(pair: Pair, cases: list[tuple[Wire, Delivery]]) -> None:
    for wire, delivery in cases:
        await pair.both(wire, delivery)


# -- examples: each kind of perturbation of test_http_fuzz, as the differential sees them ----

PLAIN = Delivery()
MOUNTED = Delivery(root_path="/api", raw_path="encoded")
SPLIT = Delivery(cuts=(0, 1, 1, 7, 40), empty_tail=True, http_version="2", raw_path="absent")
OLD = Delivery(root_path="/a/b", http_version="1.0", cuts=(3, 3))
QUIC = Delivery(http_version="3", cuts=(1,), empty_tail=True)
DIFFERENTIAL_EXAMPLES: list[list[tuple[Wire, Delivery]]] = [
    [(wire, PLAIN) for wire in HEADER_CASES],
    [(wire, SPLIT) for wire in ENVELOPE_CASES],
    [(wire, MOUNTED) for wire in LEGACY_CASES],
    [(wire, OLD) for wire in MESSAGE_CASES],
    [(wire, MOUNTED) for wire in BATCH_CASES],
    [(wire, SPLIT) for wire in BODY_CASES],
    [(wire, QUIC) for wire in TRANSPORT_CASES],
    [(wire, SPLIT) for wire in FRAMING_CASES],
]


def test_asgi_answers_as_the_native_server_does(
    anyio_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    pair: Pair
    with (
        caplog.at_level(logging.ERROR, logger="mcpwire"),
        anyio.from_thread.start_blocking_portal(anyio_backend) as portal,
        portal.wrap_async_context_manager(running(fuzz_server(), **OPTIONS)) as http,
        portal.wrap_async_context_manager(connected(http)) as native,
        portal.wrap_async_context_manager(lifespan(asgi_app(fuzz_server(), **OPTIONS))) as app,
    ):
        pair = Pair(native, app, asgi_app(fuzz_server(), **OPTIONS))
        portal.call(open_sessions, pair)

        def check(cases: list[tuple[Wire, Delivery]]) -> None:
            logged = len(caplog.records)
            try:
                portal.call(differential_case, pair, cases)
            except BaseException:
                portal.call(pair.native.hang_up)  # the next case starts on a clean connection
                raise
            errors = [r for r in caplog.records[logged:] if r.levelno >= logging.ERROR]
            assert not errors, "\n".join(caplog.text.splitlines()[-40:])

        fuzz = given(cases=st.lists(st.tuples(wires, deliveries), min_size=1, max_size=4))(check)
        for cases in DIFFERENTIAL_EXAMPLES:
            fuzz = example(cases=cases)(fuzz)
        settings(
            max_examples=150,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )(fuzz)()
    # Every kind of answer was compared, and the app without lifespan was too.
    kinds = {key.split(" ", 1)[1] for key in pair.compared}
    assert kinds >= {"application/json", "text/event-stream", "text/plain; charset=utf-8"}, kinds
    assert pair.compared["refused without lifespan"], pair.compared
    assert pair.compared["alike without lifespan"], pair.compared


# =================================================================================================
# 2. The ASGI contract, whatever the host does
# =================================================================================================


@dataclass(frozen=True)
class Perturbed:
    """A request as an odd or failing ASGI host hands it over (see ``host_for``)."""

    wire: Wire
    kind: str = "http"
    #: The scope's ``method`` and ``path`` instead of the request's (ASGI: the method in
    #: upper case, the path decoded, so possibly beyond ASCII).
    method: str | None = None
    path: str | None = None
    #: Optional scope keys left out (ASGI gives their defaults).
    missing: tuple[str, ...] = ()
    http_version: str = "1.1"
    root_path: str = ""
    raw_path: str = "same"
    query: bytes = b""
    #: Header names in capitals (ASGI asks hosts for lower case but does not require it),
    #: and the fields as two-item lists rather than tuples (ASGI: any iterables).
    upper: bool = False
    listed: bool = False
    #: Fields taken out of the request's own (names in lower case), and fields added.
    drop: tuple[bytes, ...] = ()
    odd: tuple[tuple[bytes, bytes], ...] = ()
    cuts: tuple[int, ...] = ()
    empty_tail: bool = False
    #: The last ``http.request`` message without ``more_body`` (which defaults to False).
    bare_last: bool = False
    #: The last piece of the body never comes.
    stall: bool = False
    leave_after_receives: int | None = None
    leave_after_sends: int | None = None
    fail_send: int | None = None
    raise_when_gone: bool = False
    cancel_after_sends: int | None = None


def method_of(p: Perturbed) -> str:
    """The method the app reads from the scope (none given: GET)."""
    return (p.wire.verb if p.method is None else p.method).upper() or "GET"


def host_for(p: Perturbed, sids: dict[bytes, bytes]) -> Host:
    headers = materialize(p.wire, sids)
    events = request_events(p.wire.verb, p.wire.path, headers, p.wire.body, p.wire.framing)
    request: h11.Request = events[0]
    fields = [
        (k.upper() if p.upper else k.lower(), bytes(v))
        for k, v in request.headers.raw_items()
        if k.lower() not in p.drop
    ]
    fields += [(k, sids.get(v, v)) for k, v in p.odd]
    scope = scope_of(
        p.wire.verb if p.method is None else p.method,
        p.wire.path,
        fields,
        root_path=p.root_path,
        http_version=p.http_version,
        raw_path=p.raw_path,
    )
    scope["type"] = p.kind
    if p.path is not None:
        scope["path"] = p.root_path + p.path
    for key in p.missing:
        scope.pop(key, None)
    if p.listed:
        scope["headers"] = [list(item) for item in fields]
    if p.query:
        scope["query_string"] = p.query
    script = pieces(p.wire.body, p.cuts, p.empty_tail)
    if p.bare_last:
        del script[-1]["more_body"]
    if p.stall:
        script.pop()
    return Host(
        scope,
        script,
        leave_after_receives=p.leave_after_receives,
        leave_after_sends=p.leave_after_sends,
        fail_send=p.fail_send,
        raise_when_gone=p.raise_when_gone,
        cancel_after_sends=p.cancel_after_sends,
    )


@contextmanager
def unclosed() -> Iterator[list[str]]:
    """What is found unclosed (a ``ResourceWarning`` as it is collected) meanwhile."""
    leaked: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield leaked
    leaked.extend(str(w.message) for w in caught if w.category is ResourceWarning)


def contract_problems(p: Perturbed, host: Host) -> list[str]:
    """What ``host`` saw the app do that the ASGI contract (and the adapter's own
    promises) forbid."""
    if p.kind != "http":
        # "an application raises for a scope type it does not support" (``_asgi``).
        ok = isinstance(host.error, ValueError) and not host.sent
        return [] if ok else [f"a {p.kind!r} scope: raised {host.error!r}, sent {host.sent!r}"]
    problems = list(host.problems)
    if host.error is not None:
        problems.append(f"the app raised {host.error!r}")
    if not host.cut and not host.delivered:
        problems.append("the client stayed but got no complete response")
    if host.started and p.http_version not in ("1.0", "1.1"):
        hop = {k for k, _ in host.headers} & HOP_BY_HOP
        if hop:
            problems.append(f"hop-by-hop fields in an HTTP/{p.http_version} head: {hop}")
    if not host.ended:
        return problems
    fields = dict(host.headers)
    length = fields.get("content-length")
    if length is not None and length != str(len(host.body)):
        problems.append(f"Content-Length {length} for {len(host.body)} bytes")
    media = fields.get("content-type", "")
    try:
        if media == "application/json" and host.body:
            json.loads(host.body)
        elif media == "text/event-stream":
            decoder = SSEDecoder()
            events = decoder.feed(host.body)
            decoder.feed_eof()
            for event in events:
                if event.data:
                    json.loads(event.data)
    except ValueError as exc:
        problems.append(f"a {media} body that does not decode ({exc}): {host.body[:300]!r}")
    return problems


@dataclass
class Hosted:
    """The ASGI app under test, its sessions, and what the fuzz reached."""

    app: ASGIApp
    sids: dict[bytes, bytes] = field(default_factory=dict)
    seen: collections.Counter[str] = field(default_factory=collections.Counter)

    def idle(self) -> None:
        self.app.http_server.server.close_subscriptions()

    async def plain(self, wire: Wire) -> Host:
        """A request as a well-behaved host delivers it, answered completely."""
        host = host_for(Perturbed(wire), self.sids)
        await host.drive(self.app, self.idle)
        assert host.error is None and not host.problems and host.delivered, host.sent
        return host


async def open_asgi_sessions(hosted: Hosted) -> None:
    for stand_in, version in BASE_SESSIONS.items():
        host = await hosted.plain(Wire(dumps(init_body(version)), post_headers()))
        assert host.status == 200, host.sent
        hosted.sids[stand_in] = dict(host.headers)["mcp-session-id"].encode()
        headers = post_headers(("mcp-session-id", stand_in), ("mcp-protocol-version", version))
        host = await hosted.plain(Wire(dumps(note("notifications/initialized")), headers))
        assert host.status == 202, host.sent


async def resume(hosted: Hosted, p: Perturbed, host: Host) -> None:
    """A legacy POST stream whose client left goes on ("a legacy request keeps running
    and its stream stays resumable", ``_asgi``): a GET with the last event id the
    client got replays the rest, which ends with the response, and nothing twice."""
    fields = dict(host.headers)
    sid = fields.get("mcp-session-id")  # on a legacy response only
    if not host.cut or sid is None or fields.get("content-type") != "text/event-stream":
        return
    if method_of(p) != "POST":
        return  # a GET stream: resuming it opens it again, for as long as the session lasts
    before = SSEDecoder().feed(host.received)  # an event cut short was not received
    last = before[-1].id if before else ""
    if not last:
        return
    headers = (
        ("mcp-session-id", sid.encode()),
        ("accept", b"text/event-stream"),
        ("last-event-id", last.encode()),
    )
    again = await hosted.plain(Wire(b"", headers, "GET"))
    assert again.status == 200, again.sent
    decoder = SSEDecoder()
    after = decoder.feed(again.body)
    decoder.feed_eof()
    ids = [e.id for e in before + after if e.data]
    assert len(set(ids)) == len(ids), ids
    messages = [json.loads(e.data) for e in before + after if e.data]
    rid = json.loads(p.wire.body)["id"]
    assert messages and messages[-1].get("id") == rid, messages
    assert "result" in messages[-1] or "error" in messages[-1], messages
    assert all("method" in m and "id" not in m for m in messages[:-1]), messages
    hosted.seen["resumed"] += 1


PROBE_MODERN = modern_wire(-7, "tools/list")
PROBE_LEGACY = legacy_wire(-8, "ping")


async def contract_case(hosted: Hosted, p: Perturbed) -> None:
    host = host_for(p, hosted.sids)
    await host.drive(hosted.app, hosted.idle)
    problems = contract_problems(p, host)
    assert not problems, f"{p!r}\nsent: {host.sent!r}\n" + "\n".join(problems)
    http = hosted.app.http_server
    assert http.busy == 0, http.stats()
    hosted.seen[f"{host.status} {'cut' if host.cut else 'whole'}"] += 1
    await resume(hosted, p, host)
    # The app goes on serving both eras.
    probe = await hosted.plain(PROBE_MODERN)
    assert probe.status == 200 and "tools" in json.loads(probe.body)["result"], probe.body
    probe = await hosted.plain(PROBE_LEGACY)
    assert (probe.status, json.loads(probe.body)) == (
        200,
        {"jsonrpc": "2.0", "id": -8, "result": {}},
    ), probe.body
    # Nothing the finished request held may write to it later.
    await anyio.sleep(0)
    assert not host.problems, host.problems


# -- strategies -------------------------------------------------------------------------------

#: Responses that stream: modern and legacy SSE with progress (2025-11-25 primes its
#: stream, 2025-06-18 does not), and a session's GET stream (only drawn with a client
#: that leaves: it lasts as long as the session).
MODERN_SLOW = modern_wire(
    "slow", "tools/call", {"name": "slow", "arguments": {"steps": 3}}, progressToken="p"
)
MODERN_REPORT = modern_wire(
    "report",
    "tools/call",
    {"name": "report", "arguments": {"steps": 2}},
    progressToken=1,
    **{"io.modelcontextprotocol/logLevel": "debug"},
)
LEGACY_SLOW = legacy_wire(
    "slow", "tools/call", {"name": "slow", "arguments": {"steps": 3}, "_meta": {"progressToken": 2}}
)
JUNE_SLOW = legacy_wire(
    "june",
    "tools/call",
    {"name": "slow", "arguments": {"steps": 2}, "_meta": {"progressToken": 3}},
    session=b"@june",
)
#: An HTTP+SSE connection (the deprecated transport): it lasts until the client leaves.
SSE_GET = Wire(b"", (("accept", b"text/event-stream"),), "GET", "/sse")
GET_STREAM = Wire(
    b"",
    (
        ("mcp-session-id", b"@legacy"),
        ("mcp-protocol-version", b"2025-11-25"),
        ("accept", b"text/event-stream"),
    ),
    "GET",
)
streaming = st.sampled_from([MODERN_SLOW, MODERN_REPORT, LEGACY_SLOW, JUNE_SLOW])

ODD_NAMES = [
    b"",
    b"x-odd",
    b"X-Odd",
    b"x-\xff\xfe",
    b"host",
    b"content-type",
    b"accept",
    b"content-length",
    b"mcp-session-id",
    b"mcp-protocol-version",
    b"mcp-method",
    b"mcp-name",
    b"origin",
    b"last-event-id",
    b"connection",
    b"transfer-encoding",
    b"x" * 300,
]
ODD_VALUES = [
    b"",
    b"\xff\xfe",
    "zürich".encode(),
    b"\r\n",
    b"\x00",
    b" 5 ",
    b"\xb2",
    b"9" * 5000,
    b"-1",
    b"1e3",
    b"0",
    b"x" * 20000,
    b"=?base64?/w==?=",
    b"*/*",
    b"application/json",
    b"text/event-stream",
    b"close",
    b"chunked",
    b"nope",
    b"localhost",
]
#: ``Content-Length`` values a host might pass on unchecked (an HTTP/2 or HTTP/3 host
#: may leave the field to the app): digits beyond ASCII, more than ``int()`` takes,
#: signs, spaces, separators, nothing.
ODD_LENGTHS = [b"\xb2", b"\xb9", b"9" * 5000, b"-1", b"+5", b" 5", b"5 ", b"1_0", b"0x10", b""]
#: Paths the host may give (decoded: beyond ASCII, or a percent sign left as it is).
ODD_PATHS = ["/mcp/€", "/m%63p", "", "mcp", "/mcp\x00"]
#: The keys of an ``http`` scope that ASGI marks optional.
OPTIONAL_KEYS = ["root_path", "scheme", "raw_path", "client", "server"]
DROPPABLE = [b"content-length", b"host", b"content-type", b"accept", b"mcp-method"]
odd_fields = st.lists(
    st.tuples(
        st.sampled_from(ODD_NAMES),
        st.one_of(st.sampled_from(ODD_VALUES), st.binary(max_size=24)),
    ),
    max_size=3,
).map(tuple)


@st.composite
def perturbations(draw: st.DrawFn) -> Perturbed:
    wire = draw(st.one_of(wires, wires, streaming))
    departure = draw(st.sampled_from(["stays"] * 5 + ["receives", "sends", "fail", "cancel"]))
    if departure in ("sends", "fail", "cancel"):
        # A client that leaves mid-stream: mostly a response that streams.
        wire = draw(st.sampled_from([wire, GET_STREAM, SSE_GET, *[draw(streaming)] * 3]))
    p = Perturbed(
        wire,
        kind=draw(st.sampled_from(["http"] * 20 + ["websocket", "webtransport"])),
        http_version=draw(st.sampled_from(["1.1", "1.1", "1.0", "2", "3"])),
        root_path=draw(st.sampled_from(["", "", "/api", "/api/", "/mcp"])),
        raw_path=draw(st.sampled_from(["same", "same", "encoded", "absent"])),
        query=draw(st.sampled_from([b"", b"", b"a=1", b"x=%ff&y", b"\xff"])),
        method=draw(st.sampled_from([None] * 12 + ["post", "get", "", "BREW", "OPTIONS"])),
        path=draw(st.sampled_from([None] * 25 + [*ODD_PATHS, "/sse", "/messages"])),
        missing=tuple(draw(st.lists(st.sampled_from(OPTIONAL_KEYS), max_size=3, unique=True))),
        upper=draw(st.integers(0, 4)) == 0,
        listed=draw(st.booleans()),
        drop=tuple(draw(st.lists(st.sampled_from(DROPPABLE), max_size=2, unique=True))),
        odd=draw(st.one_of(st.just(()), odd_fields)),
        cuts=tuple(draw(st.lists(st.integers(0, 300), max_size=5))),
        empty_tail=draw(st.booleans()),
        bare_last=draw(st.integers(0, 3)) == 0,
        raise_when_gone=draw(st.booleans()),
    )
    length = draw(st.sampled_from([None] * 9 + ODD_LENGTHS))
    if length is not None:  # the request's own Content-Length replaced
        p = replace(p, drop=(*p.drop, b"content-length"), odd=(*p.odd, (b"content-length", length)))
    if method_of(p) == "GET" and departure == "stays":
        # A GET (the default method) naming a session may open its standalone stream,
        # and one of /sse opens an HTTP+SSE connection: each rightly lasts until the
        # client leaves.
        if p.wire.verb != "GET":
            p = replace(p, method="post")
        if p.path == "/sse":
            p = replace(p, path=None)
    # A GET stream sends its head and a priming event (or none), then waits.
    sends = 4
    if method_of(p) == "GET":  # /sse: the head, an empty body and the endpoint event
        sends = 3 if (p.path or p.wire.path) == "/sse" else 2
    count = len(pieces(p.wire.body, p.cuts, p.empty_tail))
    if departure == "receives":
        # Before the body (0), during it, or after it; when the body stalls the
        # client leaves with it unfinished (a stall alone waits for the read timeout).
        stall = draw(st.booleans())
        p = replace(p, stall=stall, leave_after_receives=draw(st.integers(0, count - stall)))
    elif departure == "sends":
        p = replace(p, leave_after_sends=draw(st.integers(1, sends)))
    elif departure == "fail":
        p = replace(p, fail_send=draw(st.integers(1, sends)))
    elif departure == "cancel":
        p = replace(p, cancel_after_sends=draw(st.integers(1, sends)))
    return p


ECHO = modern_wire(1, "tools/call", {"name": "echo", "arguments": {"message": "odd"}})
#: Each kind of perturbation at least once.
CONTRACT_EXAMPLES = [
    # Odd header bytes: capitals, non-ASCII, empty name and value, repeats, control bytes.
    Perturbed(ECHO, upper=True, listed=True, odd=((b"x-odd", "zürich".encode()), (b"", b""))),
    Perturbed(ECHO, method="post"),
    Perturbed(ECHO, drop=(b"host",), odd=((b"host", b"localhost"), (b"mcp-method", b"\x00\r\n"))),
    Perturbed(ECHO, odd=((b"x-\xff\xfe", b"\xff\xfe"), (b"accept", b"text/event-stream"))),
    # Content-Length with odd digits: a superscript two, and more digits than int() takes.
    Perturbed(ECHO, drop=(b"content-length",), odd=((b"content-length", b"\xb2"),)),
    Perturbed(ECHO, drop=(b"content-length",), odd=((b"content-length", b"9" * 5000),)),
    # A head too large (431), and one for HTTP/2 (no Connection: close on the refusal).
    Perturbed(ECHO, odd=((b"x-big", b"x" * 20000),)),
    Perturbed(ECHO, http_version="2", odd=((b"x-big", b"x" * 20000),)),
    Perturbed(ECHO, http_version="1.0"),
    Perturbed(replace(ECHO, path="/"), http_version="3"),
    # Mounted; raw_path unlike path, or absent; a query string.
    Perturbed(ECHO, root_path="/api", raw_path="encoded", query=b"x=%ff&y"),
    Perturbed(LEGACY_SLOW, root_path="/mcp", raw_path="absent", query=b"\xff"),
    Perturbed(ECHO, path="/mcp/€", missing=("root_path", "scheme", "server", "client")),
    # The body in many pieces, empty ones, the last without more_body.
    Perturbed(MODERN_SLOW, cuts=(0, 0, 5, 5, 80), empty_tail=True, bare_last=True),
    # No http.request at all: the client leaves first.
    Perturbed(ECHO, leave_after_receives=0),
    # The client leaves during the body, after it, and with it half sent.
    Perturbed(ECHO, cuts=(10, 20), leave_after_receives=2),
    Perturbed(MODERN_SLOW, leave_after_receives=1),
    Perturbed(LEGACY_SLOW, cuts=(30,), stall=True, leave_after_receives=1),
    # The client leaves mid-stream: modern (the tool is cancelled), legacy, GET stream.
    Perturbed(MODERN_SLOW, leave_after_sends=2),
    Perturbed(JUNE_SLOW, leave_after_sends=2, raise_when_gone=True),
    Perturbed(GET_STREAM, leave_after_sends=1),
    Perturbed(SSE_GET, leave_after_sends=3),
    Perturbed(SSE_GET, fail_send=1),
    Perturbed(SSE_GET, cancel_after_sends=2),
    Perturbed(ECHO, path="/messages", query=b"session_id=nope"),
    # send raises OSError: on the head, on the first body message, mid-stream.
    Perturbed(ECHO, fail_send=1),
    Perturbed(MODERN_REPORT, fail_send=2),
    Perturbed(LEGACY_SLOW, fail_send=3, raise_when_gone=True),
    # The host cancels the app once the client is gone: mid-stream, and after a head.
    Perturbed(MODERN_SLOW, cancel_after_sends=2),
    Perturbed(LEGACY_SLOW, cancel_after_sends=3),
    Perturbed(GET_STREAM, cancel_after_sends=1),
    # The client left after the body; sends to it raise.
    Perturbed(MODERN_SLOW, leave_after_receives=1, raise_when_gone=True),
    # Scopes the app does not serve.
    Perturbed(ECHO, kind="websocket"),
    # The body stops coming and the client stays: 408 after the read timeout.
    Perturbed(ECHO, cuts=(20,), stall=True),
]


def test_asgi_contract_holds_whatever_the_host_does(
    anyio_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    # With the deprecated HTTP+SSE transport (at /sse and /messages) too.
    app = asgi_app(fuzz_server(), read_timeout=ASGI_READ_TIMEOUT, legacy_sse=True, **OPTIONS)
    hosted = Hosted(app)
    with (
        caplog.at_level(logging.ERROR, logger="mcpwire"),
        anyio.from_thread.start_blocking_portal(anyio_backend) as portal,
    ):
        with portal.wrap_async_context_manager(lifespan(app)):
            portal.call(open_asgi_sessions, hosted)

            def check(p: Perturbed) -> None:
                logged = len(caplog.records)
                with unclosed() as leaked:
                    portal.call(contract_case, hosted, p)
                    gc.collect(1)  # young cycles; a full collection ends the test
                assert not leaked, f"left unclosed: {leaked}"
                errors = [r for r in caplog.records[logged:] if r.levelno >= logging.ERROR]
                assert not errors, "\n".join(caplog.text.splitlines()[-40:])

            fuzz = given(p=perturbations())(check)
            for case in CONTRACT_EXAMPLES:
                fuzz = example(p=case)(fuzz)
            settings(
                max_examples=300,
                deadline=None,
                database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
            )(fuzz)()
        # The lifespan shutdown completed (``lifespan`` checks): nothing is left.
        http = app.http_server
        stats = http.stats()
        assert (stats["sessions"], stats["sessions_pending"], stats["tasks"]) == (0, 0, 0), stats
        assert stats["busy_requests"] == 0 and not http.server.connections, stats
    with unclosed() as leaked:
        gc.collect()
    assert not leaked, f"left unclosed: {leaked}"
    assert {"whole", "cut"} <= {key.split(" ")[-1] for key in hosted.seen}, hosted.seen
    assert hosted.seen["resumed"], hosted.seen
