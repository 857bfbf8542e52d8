"""A hostile server against the deprecated HTTP+SSE client transport (2024-11-05).

The peer is a scripted HTTP/1.1 server (``http_client/rawserver.py``) speaking the
2024-11-05 ``basic/transports.mdx`` protocol: ``GET`` opens the event stream, whose
first event names (``endpoint``) the URI every client message is POSTed to; every
server->client message, answers included, comes back as a ``message`` event. The
client is a ``Client`` over ``SSEClientTransport`` (``transport="sse"``), or over
the Streamable HTTP transport that falls back to HTTP+SSE when ``POST
initialize`` is refused with 400/404/405/406. Each example draws one script:

* the ``GET``: a wrong status (2xx without a stream, 3xx, 4xx, 5xx), a 307 to
  another path of the same origin (followed: the endpoint is then resolved
  against the URL the stream came from, RFC 3986 §5.1.3) or to another origin,
  a wrong or parameterized ``Content-Type``, a leading BOM;
* what comes before the ``endpoint`` event: comments, ``retry:``, ``id:``,
  notifications, a server request, answers to nobody, data that is not JSON, an
  ``endpoint`` event with no data (which fires nothing), or a flood of messages;
* the ``endpoint`` event: missing (the stream then ends, breaks, or is held with
  keep-alive comments only), late, repeated with another URI, empty, relative
  (with ``.``, ``..`` and more ``..`` than the path has), absolute, with an odd
  query or a fragment, cross-origin (another host, port or scheme; with and
  without ``message_url``), not a URI (bad host, port, scheme, credentials,
  whitespace, control characters, two data lines), not ASCII;
* the answer to the method under test (``initialize``, ``tools/call``, ``ping``,
  a notification, or the client's answer to a server ``ping`` or ``roots/list``):
  its POST answered with 202, 200 with a body, 204 (with a body after it), 1xx
  first, slowly, cut short, a body dripping for ever, a 307 (same origin, and
  another origin), 302, 4xx/5xx with text, HTML or a JSON-RPC error, no answer
  at all, 1xx for ever, the connection closed without an answer, or garbage in
  place of a status line; then on the event stream, split whole, per byte, in
  halves, per line, or slowly, with LF, CRLF or CR line ends: comments,
  ``retry:``, ``id:`` (with NUL), other event types carrying the answer, a
  second ``endpoint``, data that is not JSON or not UTF-8, JSON that is not
  JSON-RPC, notifications, server requests, answers to unknown ids, empty data,
  an event over ``max_event_size``, the answer (plain, in a batch, over several
  ``data:`` lines, with bytes that are not UTF-8, twice), a malformed answer, an
  error answer; and the stream then held with keep-alive comments, ended
  cleanly, cut, or cut inside an event.

Whatever the server does:

1. each call returns its typed result or raises an ``MCPWireError`` (which one
   follows from the script: ``expect``), within ``FAST`` seconds, far below the
   request timeout; an answer that arrived before the stream broke or ended is
   not lost, and once the stream is gone (``SSEConnection``: the session lives as
   long as the GET stream) the pending call and every later one fail with
   ``ConnectionClosed``;
2. everything goes to the SSE URL's origin, with the configured credentials:
   the endpoint is resolved per RFC 3986 §5 and used only when it is on that
   origin, else ``message_url`` (given the endpoint's query when it has none);
   nothing reaches another host, port or scheme;
3. the client answers the server's requests correctly, on the endpoint;
4. leaving the client is prompt, leaves no socket open (the server sees every
   connection closed), no task running and no warning (``ResourceWarning``
   included), and nothing is logged at ERROR on the ``mcpwire`` loggers.

Both backends; every misbehaviour kind has an explicit ``@example``.
"""

from __future__ import annotations

import gc
import json
import math
import os
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from fuzzing import in_own_thread, mcpwire_errors, stray_tasks
from http_client.rawserver import RawServer, Reply, Seen, raw_server
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcpwire import (
    CallToolResult,
    Client,
    ConnectionClosed,
    JSONRPCError,
    MCPWireError,
    RemoteProtocolError,
    _http_client,
)

pytestmark = pytest.mark.anyio

VERSION = "2024-11-05"
#: Far above how long any answer takes here: a call still waiting at FAST has hung.
REQUEST_TIMEOUT = 30.0
FAST = 10.0
#: The transport's ``timeout``: each POST exchange, and opening the event stream. Generous
#: enough for a loaded CI machine, where a healthy open has taken over 0.5 s.
IO_TIMEOUT = 2.0
#: The client's ``max_event_size``: small, so that an oversized event stays cheap.
MAX_EVENT = 2048
HOSTILE_CODE = -32001
SECRET = "Bearer fuzz-secret"
SSE_PATH = "/prefix/sse"
MOVED_PATH = "/prefix/v2/sse"
SESSION = "session_id=s1"
ROOTS = [{"uri": "file:///work", "name": "work"}]
INIT_RESULT = {
    "protocolVersion": VERSION,
    "capabilities": {"tools": {}},
    "serverInfo": {"name": "hostile", "version": "0"},
}
TOOL_RESULT = {"content": [{"type": "text", "text": "fine"}]}
NOTE = {
    "jsonrpc": "2.0",
    "method": "notifications/message",
    "params": {"level": "info", "data": "hostile"},
}

# -- what the script is made of ------------------------------------------------------------------

#: GET misbehaviours: ("ok",), ("status", code), ("informational",) (1xx for ever),
#: ("ctype", value), ("redirect", code, where).
CTYPES_OK = ("text/event-stream", "text/event-stream; charset=utf-8", "Text/Event-Stream")
CTYPES_BAD: tuple[str | None, ...] = (
    None,
    "application/json",
    "text/plain",
    "text/event-streams",
    "",
)
GET_STATUSES = (201, 204, 400, 401, 404, 405, 500, 503)
#: Before the endpoint event (``flood``: more than any buffer should hold).
PRELUDE = (
    "comment",
    "retry",
    "id",
    "note",
    "server-ping",
    "unknown-id",
    "not-json",
    "other-event",
    "no-data-endpoint",
    "flood",
)
#: Endpoint forms that resolve on the SSE URL's origin.
ENDPOINT_OK = (
    "relative",
    "dotdot",
    "excess-dotdot",
    "dot-segments",
    "path",
    "absolute",
    "upper-scheme",
    "fragment",
    "query-only",
    "odd-query",
    "empty",
)
ENDPOINT_CROSS = ("other-host", "other-port", "other-scheme", "network-path")
ENDPOINT_BAD = (
    "bracket",
    "mailto",
    "ftp",
    "userinfo",
    "bad-port",
    "space",
    "control",
    "two-lines",
)
ENDPOINTS = (*ENDPOINT_OK, *ENDPOINT_CROSS, *ENDPOINT_BAD, "non-ascii", "missing")
OVERRIDES: tuple[str | None, ...] = (None, "/override/messages", "/override/messages?mine=1")
OPS = ("initialize", "tools/call", "ping", "notify", "server-ping", "server-roots")
#: POST answers after which the message counts as delivered.
POST_ACCEPTING = (
    "202",
    "200-body",
    "204",
    "204-garbage",
    "1xx",
    "slow",
    "cut-body",
    "drip-2xx",
    "307-same",
)
#: POST answers refusing the message, or no answer at all (the connection closed
#: or garbage in place of a head): a request fails with a ``TransportError``, a
#: notification or response is logged, and the session goes on.
POST_REFUSING = (
    "400-text",
    "404-empty",
    "500-html",
    "503-json-error",
    "302",
    "307-cross",
    "stall",
    "1xx-flood",
    "drip-4xx",
    "drop",
    "garbage-head",
)
POSTS = (*POST_ACCEPTING, *POST_REFUSING)
POST_CODES = {
    "400-text": -32600,
    "404-empty": -32600,
    "500-html": -32603,
    "503-json-error": -32603,
    "drop": -32603,
    "garbage-head": -32603,
}
TOKENS = (
    "comment",
    "retry",
    "id",
    "id-nul",
    "other-event",
    "endpoint-again",
    "not-json",
    "garbage-bytes",
    "not-jsonrpc",
    "note",
    "server-ping",
    "unknown-id",
    "empty-data",
    "big",
    "answer",
    "batch",
    "multiline",
    "not-utf8",
    "dup",
    "bad-answer",
    "error-answer",
)
#: Tokens that answer the pending request, and how.
ANSWERS = {
    "answer": "ok",
    "batch": "ok",
    "multiline": "ok",
    "not-utf8": "ok",
    "dup": "ok",
    "bad-answer": "malformed",
    "error-answer": "error",
}
ENDS = ("hold", "clean", "cut", "cut-mid-event")
EOLS = (b"\n", b"\r\n", b"\r")
SPLITS = ("whole", "bytes", "halves", "lines", "slow")


@dataclass(frozen=True)
class Case:
    entry: str = "sse"  # or "fallback" (the Streamable HTTP transport falls back)
    fallback_status: int = 405
    head: tuple[Any, ...] = ("ok",)
    bom: bool = False
    prelude: tuple[str, ...] = ()
    endpoint: str = "relative"
    late: bool = False
    repeat: bool = False
    message_url: str | None = None
    op: str = "tools/call"
    post: str = "202"
    tokens: tuple[str, ...] = ("answer",)
    end: str = "hold"
    eol: bytes = b"\n"
    split: str = "whole"


def normalized(case: Case) -> Case:
    """A stream held open with no answer would wait for the request timeout:
    such a script gets its answer last (what the rest of it tests is unchanged)."""
    if case.end == "hold" and not any(t in ANSWERS or t == "big" for t in case.tokens):
        return Case(**{**case.__dict__, "tokens": (*case.tokens, "answer")})
    return case


# -- expectations ----------------------------------------------------------------------------------


@dataclass
class Expect:
    #: Entering the client: "ok", or the error kind of a failed entry.
    entry: str = "ok"
    #: The method under test: "ok", "error" (JSONRPCError), "malformed"
    #: (RemoteProtocolError), "closed" (ConnectionClosed); a set when a race
    #: the script cannot rule out leaves two outcomes.
    op: frozenset[str] = frozenset({"ok"})
    code: int | None = None
    #: After the method: later calls succeed (True) or fail with ConnectionClosed
    #: (False); None when that depends on a race (then once one fails, all do).
    usable: bool | None = True
    #: The POST target the endpoint resolves to (None: no POST to it is possible).
    target: str | None = None


def base_path(case: Case) -> str:
    """RFC 3986 §5.1.3: a representation retrieved through a redirect has the
    last URI used as its base."""
    followed = case.head[0] == "redirect" and case.head[1] in (307, 308) and case.head[2] == "same"
    return MOVED_PATH if followed else SSE_PATH


def head_fails(case: Case) -> bool:
    kind = case.head[0]
    if kind in ("status", "informational"):
        return True
    if kind == "ctype":
        return case.head[1] not in CTYPES_OK
    if kind == "redirect":
        return base_path(case) == SSE_PATH  # refused: another origin, or not 307/308
    return False


def endpoint_data(form: str, port: int, decoy: int) -> list[bytes]:
    """The ``data`` lines of the endpoint event (LF-free)."""
    here = f"127.0.0.1:{port}"
    value = {
        "relative": f"messages/?{SESSION}",
        "dotdot": f"../messages/?{SESSION}",
        "excess-dotdot": f"../../../../messages?{SESSION}",
        "dot-segments": f"./a/../messages/?{SESSION}",
        "path": f"/messages/?{SESSION}",
        "absolute": f"http://{here}/abs/messages?{SESSION}",
        "upper-scheme": f"HTTP://{here}/abs/messages?{SESSION}",
        "fragment": f"messages/?{SESSION}#part",
        "query-only": f"?{SESSION}",
        "odd-query": "messages?a=%20b&c=/../d&e=?f",
        "empty": "",
        "other-host": f"http://localhost:{port}/messages?{SESSION}",
        "other-port": f"http://127.0.0.1:{decoy}/messages?{SESSION}",
        "other-scheme": f"https://{here}/messages?{SESSION}",
        "network-path": f"//localhost:{port}/messages?{SESSION}",
        "bracket": "http://[::1/messages",
        "mailto": "mailto:someone@example.org",
        "ftp": "ftp://127.0.0.1/messages",
        "userinfo": f"http://user:pw@{here}/messages?{SESSION}",
        "bad-port": "http://127.0.0.1:99999/messages",
        "space": f"/mess ages?{SESSION}",
        "control": f"/messages\x01?{SESSION}",
        "two-lines": f"/messages?{SESSION}\n/other",
        "non-ascii": f"/méssages?{SESSION}",
    }[form]
    return [line.encode() for line in value.split("\n")]


def endpoint_target(case: Case) -> str | None:
    """Where messages go (RFC 3986 §5.2 by hand), or None when nowhere."""
    base = base_path(case)
    folder = base.rsplit("/", 1)[0] + "/"
    parent = folder.rstrip("/").rsplit("/", 1)[0] + "/"
    form = case.endpoint
    resolved = {
        "relative": f"{folder}messages/?{SESSION}",
        "dotdot": f"{parent}messages/?{SESSION}",
        "excess-dotdot": f"/messages?{SESSION}",
        "dot-segments": f"{folder}messages/?{SESSION}",
        "path": f"/messages/?{SESSION}",
        "absolute": f"/abs/messages?{SESSION}",
        "upper-scheme": f"/abs/messages?{SESSION}",
        "fragment": f"{folder}messages/?{SESSION}",  # §3.5: a fragment is not sent
        "query-only": f"{base}?{SESSION}",
        "odd-query": f"{folder}messages?a=%20b&c=/../d&e=?f",
        "empty": base,  # §5.2.2: an empty reference is the base itself
    }
    if form in ENDPOINT_BAD or form == "missing":
        return None
    override = case.message_url
    if override is not None:
        # ``message_url`` replaces the endpoint, with the endpoint's query (the
        # session id) when it has none of its own.
        query = resolved.get(form, f"/?{SESSION}").partition("?")[2]
        return override if "?" in override or not query else f"{override}?{query}"
    return resolved.get(form)


def prelude_flooded(case: Case) -> bool:
    return "flood" in case.prelude


def token_outcome(case: Case) -> tuple[str, bool]:
    """The request's outcome from the tokens that follow its POST, in stream order,
    and whether the stream is still alive afterwards."""
    outcome = ""
    for token in case.tokens:
        if token in ANSWERS:
            outcome = ANSWERS[token]
            break
        if token == "big":
            outcome = "closed"
            break
    alive = "big" not in case.tokens and case.end == "hold"
    return outcome or "closed", alive


def expect(case: Case) -> Expect:
    entry_error = "closed" if case.entry == "sse" else "error"
    if head_fails(case) or prelude_flooded(case) or case.endpoint == "missing":
        return Expect(entry=entry_error, op=frozenset({entry_error}))
    target = endpoint_target(case)
    if target is None:
        # Not on the SSE URL's origin, or not a URI: the stream is refused; a
        # path that is no ASCII cannot be written in a request line at all.
        refused = "error" if case.endpoint == "non-ascii" else entry_error
        return Expect(entry=refused, op=frozenset({refused}))
    post, op = case.post, case.op
    tokens, alive = token_outcome(case)
    if op in ("server-ping", "server-roots"):
        # The POST under test is the client's answer; the server answers the
        # tools/call that prompted its request whatever that POST got back.
        return Expect(op=frozenset({tokens}), usable=alive, target=target)
    if op == "notify":
        if post in POST_REFUSING:
            # Logged, not raised ("drop" on a kept-alive socket is sent again:
            # see ``observed``).
            return Expect(usable=True, target=target)
        # The stream may end before the POST's own answer is read: the exchange
        # is then abandoned with the transport.
        outcomes = frozenset({"ok"} if alive else {"ok", "closed"})
        return Expect(op=outcomes, usable=alive, target=target)
    if post in POST_REFUSING:
        result = Expect(op=frozenset({"error"}), code=POST_CODES.get(post), target=target)
    else:
        result = Expect(op=frozenset({tokens}), usable=alive, target=target)
        if tokens == "error":
            result.code = HOSTILE_CODE
    if op == "initialize":
        if result.op == {"ok"} and result.usable is False:
            # Answered, but the stream is gone before ``notifications/initialized``
            # (part of entering) can go, or just after.
            result.op = frozenset({"ok", "closed"})
        result.entry = "ok" if "ok" in result.op else next(iter(result.op))
    return result


# -- building the stream -----------------------------------------------------------------------


def sse_block(*lines: bytes) -> bytes:
    return b"\n".join(lines) + b"\n\n"


def data(value: Any) -> bytes:
    return b"data: " + json.dumps(value).encode()


def rpc_result(rid: Any, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": value}


def rpc_error(rid: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": HOSTILE_CODE, "message": "refused"}}


def token_bytes(token: str, answer: dict[str, Any], server_id: str) -> bytes:
    """One event-stream block for ``token`` (LF line ends; the caller swaps them)."""
    rid = answer["id"]
    text = json.dumps(answer)
    if token == "comment":
        return b": keep-alive\n"
    if token == "retry":
        return sse_block(b"retry: 10", b"retry: soon", b"retry: -5")
    if token == "id":
        return sse_block(b"id: e-7")
    if token == "id-nul":
        return sse_block(b"id: a\x00b", data(NOTE))
    if token == "other-event":
        return sse_block(b"event: mystery", data(answer))
    if token == "endpoint-again":
        return sse_block(b"event: endpoint", b"data: /elsewhere/messages?session_id=s2")
    if token == "not-json":
        return sse_block(b"event: message", b"data: this is not json {")
    if token == "garbage-bytes":
        return sse_block(b"event: message", b"data: \xff\xfe\x00\xc3(")
    if token == "not-jsonrpc":
        return b"".join(sse_block(b"data: " + v) for v in (b'{"hello": 1}', b"42", b"null", b"[]"))
    if token == "note":
        return sse_block(b"event: message", data(NOTE))
    if token == "server-ping":
        return sse_block(data({"jsonrpc": "2.0", "id": server_id, "method": "ping"}))
    if token == "unknown-id":
        return sse_block(data({**answer, "id": "nobody"})) + sse_block(
            data({**answer, "id": str(rid) + "0"})
        )
    if token == "empty-data":
        return sse_block(b"event: message", b"data:")
    if token == "big":
        return sse_block(b"data: " + b"x" * (MAX_EVENT + 50))
    if token == "answer":
        return sse_block(b"event: message", data(answer))
    if token == "batch":
        return sse_block(data([NOTE, answer]))
    if token == "multiline":
        return sse_block(*(b"data: " + p.encode() for p in text.replace(", ", ",\n").split("\n")))
    if token == "not-utf8":
        marked = json.dumps({**answer, "note": "@"}).encode()
        return sse_block(b"data: " + marked.replace(b'"@"', b'"\xff\xfe\xc3"'))
    if token == "dup":
        return sse_block(data(answer)) + sse_block(data(answer))
    if token == "bad-answer":
        return sse_block(data({"jsonrpc": "2.0", "id": rid, "result": [1]}))
    assert token == "error-answer"
    return sse_block(data(rpc_error(rid)))


def pieces_of(blob: bytes, split: str, eol: bytes) -> list[bytes]:
    if split == "whole" or not blob:
        return [blob]
    if split == "bytes":
        # Byte by byte for a while, then in pieces of an odd size (an oversized
        # event byte by byte would cost thousands of writes).
        head, rest = blob[:600], blob[600:]
        return [head[i : i + 1] for i in range(len(head))] + [
            rest[i : i + 61] for i in range(0, len(rest), 61)
        ]
    if split == "halves":
        return [blob[: len(blob) // 2], blob[len(blob) // 2 :]]
    parts = blob.split(eol)
    return [p + eol for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def raw(*pieces: bytes, keep: bool = False, **kw: Any) -> Reply:
    return Reply(raw=list(pieces), raw_keep=keep, **kw)


def sized(status: int, reason: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
    lines = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in headers)]
    lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


# -- the hostile server --------------------------------------------------------------------------


@dataclass
class Script:
    case: Case
    port: int = 0
    decoy: int = 0
    phase: str = "setup"  # "fuzz" once the method under test runs, "after" when it is done
    release: anyio.Event = field(default_factory=anyio.Event)
    lock: anyio.Lock = field(default_factory=anyio.Lock)
    tg: anyio.abc.TaskGroup | None = None
    feeds: list[MemoryObjectSendStream[bytes]] = field(default_factory=list)
    receivers: list[MemoryObjectReceiveStream[bytes]] = field(default_factory=list)
    ended: bool = False  # the event stream was ended or cut on purpose
    gets: list[Seen] = field(default_factory=list)
    op_posts: list[Seen] = field(default_factory=list)
    #: Server requests pushed (id -> method) and the client's answers to them.
    asked: dict[str, str] = field(default_factory=dict)
    answered: dict[str, Any] = field(default_factory=dict)
    pending_call: Any = None  # server-* ops: the tools/call waiting for our answer
    asks: int = 0

    @property
    def feed(self) -> MemoryObjectSendStream[bytes] | None:
        return self.feeds[-1] if self.feeds else None

    def start(self, fn: Callable[[], Any]) -> None:
        assert self.tg is not None
        if not self.release.is_set():  # set before the task group closes
            self.tg.start_soon(fn)

    async def push(self, blob: bytes, *, final: bool = False, whole: bool = False) -> None:
        """Write ``blob`` on the event stream, as the script splits it."""
        case = self.case
        blob = blob.replace(b"\n", case.eol)
        async with self.lock:
            feed = self.feed
            if feed is None or self.ended:
                return
            for piece in [blob] if whole else pieces_of(blob, case.split, case.eol):
                if not piece:
                    continue
                if case.split == "slow":
                    await anyio.sleep(0.005)
                try:
                    feed.send_nowait(piece)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return
            if final:
                self.ended = True
                feed.close()

    async def keepalive(self) -> None:
        """Comments only, until the script is done: a stream that stays open."""
        while not self.release.is_set() and not self.ended:
            await self.push(b": ka\n\n")
            with anyio.move_on_after(0.05):
                await self.release.wait()

    def ask(self, method: str, rid: str | None = None) -> bytes:
        self.asks += 1
        rid = rid or f"srv-{self.asks}"
        self.asked[rid] = method
        return sse_block(data({"jsonrpc": "2.0", "id": rid, "method": method}))

    def tokens_for(self, answer: dict[str, Any]) -> bytes:
        blob = b""
        for token in self.case.tokens:
            if token == "server-ping":
                blob += self.ask("ping")
            else:
                blob += token_bytes(token, answer, "")
        return blob

    # -- GET -------------------------------------------------------------------------------------

    async def get(self, seen: Seen) -> Reply:
        self.gets.append(seen)
        case = self.case
        kind = case.head[0]
        if kind == "status":
            code = case.head[1]
            return raw(sized(code, "Odd", [("Content-Type", "text/plain")], b"no stream here"))
        if kind == "informational":  # for ever, each well within the read timeout
            return raw(*[b"HTTP/1.1 102 Processing\r\n\r\n"] * 3000, delay=0.02)
        if kind == "redirect" and seen.target == SSE_PATH:
            code, where = case.head[1], case.head[2]
            location = (
                MOVED_PATH if where == "same" else f"http://localhost:{self.port}{MOVED_PATH}"
            )
            return raw(sized(code, "Moved", [("Location", location)], b""))
        ctype = case.head[1] if kind == "ctype" else "text/event-stream"
        send, receive = anyio.create_memory_object_stream[bytes](math.inf)
        self.feeds.append(send)
        # Closed at the end, also when the connection went on to serve
        # another request (the server then no longer closes it).
        self.receivers.append(receive)
        headers = [("Cache-Control", "no-cache")]
        if ctype is not None:
            headers.append(("Content-Type", ctype))
        reply = Reply(200, headers, [], feed=receive, cut=case.end in ("cut", "cut-mid-event"))
        self.start(self.open_stream)
        return reply

    async def open_stream(self) -> None:
        case = self.case
        blob = b"\xef\xbb\xbf" if case.bom else b""
        for token in case.prelude:
            blob += self.prelude_token(token)
        endpoint = b""
        if case.endpoint != "missing":
            lines = endpoint_data(case.endpoint, self.port, self.decoy)
            endpoint = sse_block(b"event: endpoint", *(b"data: " + v for v in lines))
            if case.repeat:
                endpoint += sse_block(b"event: endpoint", b"data: /elsewhere/messages")
        if not case.late:
            blob += endpoint
        await self.push(blob, whole="flood" in case.prelude)
        if case.late:
            for _ in range(2):
                await anyio.sleep(0.03)
                await self.push(b": waiting\n\n")
            await self.push(endpoint)
        if case.endpoint == "missing":
            if case.end == "hold":
                self.start(self.keepalive)
            else:
                await self.push(b"", final=True)

    def prelude_token(self, token: str) -> bytes:
        nobody = rpc_result("nobody", {})
        if token == "comment":
            return b": hello\n"
        if token == "retry":
            return sse_block(b"retry: 100")
        if token == "id":
            return sse_block(b"id: p-1")
        if token == "note":
            return sse_block(b"event: message", data(NOTE))
        if token == "server-ping":
            return self.ask("ping", "early-ping")
        if token == "unknown-id":
            return sse_block(b"event: message", data(nobody))
        if token == "not-json":
            return sse_block(b"event: message", b"data: {not json")
        if token == "other-event":
            return sse_block(b"event: greeting", b"data: hello")
        if token == "no-data-endpoint":
            return sse_block(b"event: endpoint")
        assert token == "flood"
        return sse_block(b"event: message", data(NOTE)) * 300

    # -- POST ------------------------------------------------------------------------------------

    async def handler(self, seen: Seen) -> Reply:
        if seen.method == "GET":
            return await self.get(seen)
        if seen.method != "POST":
            return Reply.empty(405)
        message = seen.json
        case = self.case
        if case.entry == "fallback" and not self.gets:
            # Not a Streamable HTTP endpoint: the client is to try HTTP+SSE.
            return Reply.text(case.fallback_status, "use the SSE endpoint")
        if isinstance(message, dict) and "method" not in message:
            return await self.answer_post(seen, message)
        if not isinstance(message, dict):
            return Reply.text(202, "Accepted")
        method, rid = message["method"], message.get("id")
        if self.under_test(method):
            if case.op.startswith("server-"):
                # The server asks first; the client's answer is the POST under test.
                self.pending_call = rid
                method = "roots/list" if case.op == "server-roots" else "ping"
                await self.push(self.ask(method, "srv-op"))
                return Reply.text(202, "Accepted")
            self.op_posts.append(seen)
            if len(self.op_posts) == 1:
                return await self.misbehave(seen, rid)
            # Sent again (after a 307, or a socket closed with no answer): accepted.
            await self.deliver(rid)
            return Reply.text(202, "Accepted")
        if rid is None:
            return Reply.text(202, "Accepted")
        await self.push(sse_block(b"event: message", data(self.good(method, rid))))
        return Reply.text(202, "Accepted")

    def under_test(self, method: str) -> bool:
        op = self.case.op
        if op == "initialize":
            return method == "initialize"
        if self.phase != "fuzz":
            return False
        if op == "notify":
            return method == "notifications/roots/list_changed"
        return method == ("tools/call" if op.startswith("server-") else op)

    def good(self, method: str, rid: Any) -> dict[str, Any]:
        value = {"initialize": INIT_RESULT, "tools/call": TOOL_RESULT}.get(method, {})
        if method == "tools/list":
            value = {"tools": []}
        return rpc_result(rid, value)

    async def answer_post(self, seen: Seen, message: dict[str, Any]) -> Reply:
        rid = message.get("id")
        self.answered[str(rid)] = message
        if rid != "srv-op":
            return Reply.text(202, "Accepted")
        self.op_posts.append(seen)
        if len(self.op_posts) > 1:
            return Reply.text(202, "Accepted")
        # The tools/call that prompted the request is answered whatever the POST gets.
        await self.deliver(self.pending_call, "tools/call")
        return self.post_reply(seen)

    async def misbehave(self, seen: Seen, rid: Any) -> Reply:
        if self.case.post in POST_ACCEPTING and self.case.post != "307-same":
            await self.deliver(rid)
        return self.post_reply(seen)

    async def deliver(self, rid: Any, method: str | None = None) -> None:
        """The tokens (the answer among them) for the POST under test, and the
        stream's end, in one go (nothing else is written in between)."""
        answer = self.good(method or self.case.op, "nobody" if rid is None else rid)
        blob = self.tokens_for(answer)
        if self.case.end == "hold":
            await self.push(blob)
            self.start(self.keepalive)
            return
        if self.case.end == "cut-mid-event":
            block = token_bytes("answer", answer, "")
            blob += block[: len(block) // 2]
        await self.push(blob, final=True)

    def post_reply(self, seen: Seen) -> Reply:
        post = self.case.post
        accepted = [("Content-Type", "text/plain")]
        if post == "202":
            return Reply.text(202, "Accepted")
        if post == "200-body":
            return Reply.json({"ok": True})
        if post == "204":
            return raw(b"HTTP/1.1 204 No Content\r\n\r\n", keep=True)
        if post == "204-garbage":
            return raw(b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello")
        if post == "1xx":
            early = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"
            return raw(early + sized(202, "Accepted", accepted, b"Accepted"), keep=True)
        if post == "slow":
            return raw(sized(202, "Accepted", accepted, b"Accepted"), keep=True, delay=0.1)
        if post == "cut-body":
            return raw(b"HTTP/1.1 202 Accepted\r\nContent-Length: 100\r\n\r\nAccep")
        if post in ("drip-2xx", "drip-4xx"):
            status = b"202 Accepted" if post == "drip-2xx" else b"400 Bad Request"
            start = b"HTTP/1.1 " + status + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
            return raw(start, *[b"1\r\nx\r\n"] * 3000, delay=0.02)
        if post == "307-same":
            return Reply(307, [("Location", "/moved/messages?x=1"), ("Content-Length", "0")])
        if post == "400-text":
            return Reply.text(400, "bad session")
        if post == "404-empty":
            return raw(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", keep=True)
        if post == "500-html":
            return raw(sized(500, "Oops", [("Content-Type", "text/html")], b"<b>oops</b>"))
        if post == "503-json-error":
            return Reply.json(rpc_error(None), 503)
        if post == "302":
            return Reply(302, [("Location", "/elsewhere"), ("Content-Length", "0")])
        if post == "307-cross":
            location = f"http://localhost:{self.port}/messages?{SESSION}"
            return Reply(307, [("Location", location), ("Content-Length", "0")])
        if post == "stall":
            return raw(hold=self.release)
        if post == "1xx-flood":
            return raw(*[b"HTTP/1.1 102 Processing\r\n\r\n"] * 3000, delay=0.02)
        if post == "drop":
            return Reply(drop=True)
        assert post == "garbage-head"
        return raw(b"hello there\r\n\r\n")


# -- the client side -----------------------------------------------------------------------------


async def outcome_of(call: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", value) or (``classify``, the MCPWireError); any other exception
    propagates; FAST bounds it."""
    with anyio.move_on_after(FAST):
        try:
            value = await call()
        except MCPWireError as exc:
            return classify(exc), exc
        return "ok", value
    raise AssertionError(f"no outcome after {FAST} s")


def check_value(op: str, value: Any) -> None:
    if op in ("tools/call", "server-ping", "server-roots"):
        assert isinstance(value, CallToolResult)
        assert (value.text, value.is_error) == ("fine", False)
    else:
        assert value is None


def observed(script: Script, expected: Expect) -> Expect:
    """A POST dropped on a kept-alive socket is sent once more on a new one
    (``_http_client_conn``): then the second answer decides."""
    if script.case.post == "drop" and len(script.op_posts) == 2:
        first, second = script.op_posts
        assert first.connection != second.connection
        return expect(Case(**{**script.case.__dict__, "post": "202"}))
    return expected


async def exercise(script: Script, url: str) -> None:
    case = script.case
    client = Client.http(
        url,
        headers={"Authorization": SECRET},
        mode="legacy",
        transport="sse" if case.entry == "sse" else "auto",
        request_timeout=REQUEST_TIMEOUT,
        validate_output=False,
        max_event_size=MAX_EVENT,
        timeout=IO_TIMEOUT,
        message_url=case.message_url,
        roots=ROOTS,
    )
    if case.op == "initialize":
        script.phase = "fuzz"
    inside = False
    refused: MCPWireError | None = None
    started = anyio.current_time()
    try:
        async with client:
            inside = True
            assert anyio.current_time() - started < FAST, "entering took too long"
            await session(script, client)
            started = anyio.current_time()
    except MCPWireError as exc:
        if inside:
            raise
        refused = exc
    assert anyio.current_time() - started < FAST, "entering or leaving took too long"
    if refused is not None:
        expected = observed(script, expect(case))
        outcome = classify(refused)
        if case.op == "initialize":
            assert outcome in expected.op - {"ok"}, (refused, expected)
        else:
            assert outcome == expected.entry, (refused, expected)


def classify(exc: MCPWireError) -> str:
    if isinstance(exc, ConnectionClosed):
        return "closed"
    if isinstance(exc, JSONRPCError):
        return "error"
    if isinstance(exc, RemoteProtocolError):
        return "malformed"
    return "other"


async def session(script: Script, client: Client) -> None:
    """The method under test and the calls after it, in an entered client."""
    case = script.case
    expected = observed(script, expect(case))
    assert expected.entry == "ok", expected
    assert client.protocol_version == VERSION
    if case.op == "initialize":
        assert "ok" in expected.op, expected
    else:
        script.phase = "fuzz"
        outcome, value = await outcome_of(lambda: run_op(client, case.op))
        expected = observed(script, expected)
        assert outcome in expected.op, (outcome, value, expected)
        if outcome == "ok":
            check_value(case.op, value)
        elif outcome == "error" and expected.code is not None:
            assert value.code == expected.code, value
    script.phase = "after"
    usable = expected.usable
    for op in ("ping", "tools/call", "ping"):
        outcome, value = await outcome_of(lambda: run_op(client, op))  # noqa: B023
        if usable is None and outcome == "closed":
            usable = False  # and from now on
        if usable is False:
            assert outcome == "closed", (op, outcome, value)
        else:
            assert outcome == "ok", (op, outcome, value)
            check_value(op, value)
    if usable:
        # Every server request is answered (the answers may still be on their way).
        with anyio.fail_after(FAST):
            while set(script.asked) - set(script.answered):
                await anyio.sleep(0.01)


async def run_op(client: Client, op: str) -> Any:
    if op in ("tools/call", "server-ping", "server-roots"):
        return await client.call_tool("t", {"a": 1})
    if op == "ping":
        return await client.ping()
    assert op == "notify"
    return await client.send_roots_changed()


def check_traffic(script: Script, server: RawServer, decoy: RawServer) -> None:
    case = script.case
    assert not decoy.seen, "nothing may go to another origin"
    host = f"127.0.0.1:{script.port}"
    for s in server.seen:
        assert s.headers.get("host") == host, (s.method, s.target, s.headers.get("host"))
        assert s.headers.get("authorization") == SECRET
    gets = [s for s in server.seen if s.method == "GET"]
    posts = [s for s in server.seen if s.method == "POST"]
    assert all(s.headers.get("accept") == "text/event-stream" for s in gets)
    if head_fails(case) or case.head[0] != "redirect":
        assert [s.target for s in gets] == [SSE_PATH]
    else:
        assert [s.target for s in gets] == [SSE_PATH, MOVED_PATH]
    if case.entry == "fallback":
        assert posts and posts[0].target == SSE_PATH and posts[0].rpc_method == "initialize"
        posts = posts[1:]
    target = expect(case).target
    for s in posts:
        assert s.headers.get("content-type") == "application/json"
        if case.post == "307-same" and s.target == "/moved/messages?x=1":
            continue
        assert s.target == target, (s.target, target, s.json)
    for rid, message in script.answered.items():
        if rid == "None":
            # What is not JSON-RPC gets the JSON-RPC error (design.md, "Behaviour on
            # bad input"): -32700 for what is not JSON, -32600 for the rest.
            assert message["error"]["code"] in (-32700, -32600), message
            assert set(message) == {"jsonrpc", "id", "error"}, message
            continue
        assert rid in script.asked, message
        method = script.asked[rid]
        wanted = {"roots": ROOTS} if method == "roots/list" else {}
        assert message == {"jsonrpc": "2.0", "id": rid, "result": wanted}, message


async def run_script(script: Script, backend: str) -> None:
    async def nothing(seen: Seen) -> Reply:
        return Reply.empty(404)

    with anyio.fail_after(4 * FAST):
        async with raw_server(nothing) as decoy, raw_server(script.handler) as server:
            script.port, script.decoy = server.port, decoy.port
            url = f"http://127.0.0.1:{server.port}{SSE_PATH}"
            _http_client._KNOWN_SSE.discard(url)
            try:
                async with anyio.create_task_group() as tg:
                    script.tg = tg
                    try:
                        await exercise(script, url)
                    finally:
                        script.release.set()
                        for feed in script.feeds:
                            feed.close()
                        for receiver in script.receivers:
                            receiver.close()
            finally:
                _http_client._KNOWN_SSE.discard(url)
            # The client closed every socket it opened: each server side ends.
            with anyio.move_on_after(FAST):
                while server.open or decoy.open:
                    await anyio.sleep(0.01)
            assert (server.open, decoy.open) == (0, 0), "a connection was left open"
            check_traffic(script, server, decoy)
    await anyio.sleep(0)
    assert not stray_tasks(backend)


# -- strategies and examples ---------------------------------------------------------------------

#: (``informational`` costs ``IO_TIMEOUT`` each time: it has its explicit example.)
heads = st.one_of(
    st.just(("ok",)),
    st.tuples(st.just("status"), st.sampled_from(GET_STATUSES)),
    st.tuples(st.just("ctype"), st.sampled_from((*CTYPES_OK, *CTYPES_BAD))),
    st.tuples(
        st.just("redirect"),
        st.sampled_from((301, 302, 307, 308)),
        st.sampled_from(("same", "cross")),
    ),
)
cases = st.builds(
    Case,
    entry=st.sampled_from(("sse", "fallback")),
    fallback_status=st.sampled_from((400, 404, 405, 406)),
    head=st.one_of(st.just(("ok",)), st.just(("ok",)), heads),
    bom=st.booleans(),
    prelude=st.lists(st.sampled_from(PRELUDE[:-1]), max_size=3).map(tuple) | st.just(("flood",)),
    endpoint=st.sampled_from(ENDPOINT_OK) | st.sampled_from(ENDPOINTS),
    late=st.booleans(),
    repeat=st.booleans(),
    message_url=st.sampled_from(OVERRIDES),
    op=st.sampled_from(OPS),
    post=st.sampled_from(POST_ACCEPTING) | st.sampled_from(POSTS),
    tokens=st.lists(st.sampled_from(TOKENS), max_size=5).map(tuple),
    end=st.sampled_from(ENDS),
    eol=st.sampled_from(EOLS),
    split=st.sampled_from(SPLITS),
).map(normalized)

CR, CRLF = b"\r", b"\r\n"
EXAMPLES: list[Case] = [
    # The stream is refused, whatever follows.
    Case(head=("status", 204), bom=True),
    Case(entry="fallback", fallback_status=404, head=("status", 404)),
    Case(op="initialize", head=("status", 503), split="bytes"),
    Case(head=("informational",)),
    *[Case(head=("ctype", value)) for value in CTYPES_BAD],
    Case(head=("redirect", 302, "same")),
    Case(entry="fallback", head=("redirect", 307, "cross")),
    *[Case(endpoint=form, split="lines", eol=CR) for form in ENDPOINT_BAD],
    Case(entry="fallback", fallback_status=400, endpoint="non-ascii"),
    Case(endpoint="other-host", message_url=None),
    Case(entry="fallback", fallback_status=406, endpoint="other-port"),
    Case(prelude=("no-data-endpoint",), endpoint="missing", end="clean"),
    Case(prelude=("comment", "note"), endpoint="missing", end="cut", split="bytes"),
    Case(entry="fallback", endpoint="missing", end="hold"),
    Case(prelude=("flood",)),
    Case(entry="fallback", fallback_status=400, prelude=("flood",)),
    # Served, each with one way to answer the POST under test.
    Case(),
    Case(entry="fallback", op="initialize", tokens=("multiline",), eol=CR, split="bytes"),
    Case(head=("ctype", CTYPES_OK[1]), endpoint="dotdot", op="ping", post="200-body"),
    Case(head=("ctype", CTYPES_OK[2]), endpoint="excess-dotdot", op="notify", post="204"),
    Case(
        head=("redirect", 307, "same"),
        endpoint="dotdot",
        tokens=("comment", "retry", "id", "id-nul", "note", "answer"),
        split="bytes",
    ),
    Case(head=("redirect", 308, "same"), op="server-roots", post="500-html"),
    Case(bom=True, eol=CRLF, split="bytes", endpoint="dot-segments", post="1xx"),
    Case(
        prelude=("comment", "retry", "id", "note"),
        endpoint="path",
        eol=CR,
        split="lines",
        post="slow",
        tokens=("other-event", "endpoint-again", "not-json", "garbage-bytes", "answer"),
    ),
    Case(
        prelude=("server-ping", "unknown-id", "not-json", "other-event"),
        endpoint="absolute",
        post="cut-body",
        tokens=("not-jsonrpc", "server-ping", "unknown-id", "empty-data", "batch"),
    ),
    Case(endpoint="upper-scheme", op="server-ping", post="204-garbage", tokens=("not-utf8",)),
    Case(endpoint="fragment", post="drip-2xx", tokens=("dup",), eol=CRLF, split="halves"),
    Case(endpoint="query-only", op="ping", post="307-same", tokens=("error-answer",)),
    Case(endpoint="odd-query", post="400-text"),
    Case(endpoint="empty", op="ping", post="404-empty"),
    Case(endpoint="other-scheme", message_url=OVERRIDES[1], post="503-json-error"),
    Case(endpoint="network-path", message_url=OVERRIDES[2], post="302"),
    Case(endpoint="non-ascii", message_url=OVERRIDES[2], post="307-cross"),
    Case(endpoint="relative", message_url=OVERRIDES[1], tokens=("bad-answer",)),
    Case(late=True, repeat=True, post="1xx"),
    Case(post="stall", tokens=("comment", "answer"), split="slow"),
    Case(late=True, prelude=("comment",), split="slow", op="notify", post="1xx-flood"),
    Case(op="initialize", post="drip-4xx"),
    Case(op="initialize", post="garbage-head"),
    Case(op="initialize", tokens=("bad-answer",)),
    Case(op="initialize", tokens=(), end="cut"),
    Case(post="drop"),
    Case(op="notify", post="drop", tokens=("answer",), end="clean"),
    Case(op="server-roots", post="drop"),
    Case(op="server-ping", post="1xx-flood", tokens=("note", "answer"), end="cut"),
    # Stream contents and ends: the first answer (or oversized event) decides.
    Case(tokens=("big", "answer")),
    Case(tokens=("answer", "big"), split="bytes"),
    Case(tokens=("note",), end="clean"),
    Case(tokens=("answer",), end="clean"),
    Case(op="ping", tokens=("server-ping", "answer"), end="cut"),
    Case(tokens=("note",), end="cut-mid-event", split="lines"),
    # Eight error replies on their way when the stream breaks: every socket closes.
    Case(op="ping", post="1xx", tokens=("not-jsonrpc", "not-jsonrpc"), end="cut"),
]


def with_examples(test: Callable[..., None]) -> Callable[..., None]:
    for case in EXAMPLES:
        test = example(case=normalized(case))(test)
    return test


@settings(
    # SSE_FUZZ_EXAMPLES: more for a longer hunt outside the suite.
    max_examples=int(os.environ.get("SSE_FUZZ_EXAMPLES", "20")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=cases)
@with_examples
def test_sse_misbehaviour(anyio_backend: str, caplog: pytest.LogCaptureFixture, case: Case) -> None:
    caplog.clear()
    script = Script(case)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        in_own_thread(anyio.run, run_script, script, anyio_backend, backend=anyio_backend)
        # What the example left unreachable (young objects: a full collection
        # per example would cost more than the example).
        gc.collect(1)
    assert not [str(w.message) for w in caught]
    assert not mcpwire_errors(caplog)


async def test_a_stalled_reply_holds_up_no_answer() -> None:
    """The client's answer to a server message is one more POST; a server that
    never answers that POST must not hold up the answers to the client's own
    requests, which come on the event stream meanwhile (they are not queued
    behind the reply for the transport's whole ``timeout``)."""
    feeds: list[MemoryObjectSendStream[bytes]] = []
    stalled = anyio.Event()
    release = anyio.Event()

    async def handler(seen: Seen) -> Reply:
        if seen.method == "GET":
            send, receive = anyio.create_memory_object_stream[bytes](math.inf)
            feeds.append(send)
            endpoint = sse_block(b"event: endpoint", b"data: messages?" + SESSION.encode())
            return Reply(200, [("Content-Type", "text/event-stream")], [endpoint], feed=receive)
        message = seen.json
        if "method" not in message:  # our answer to what was not JSON: never answered
            stalled.set()
            return raw(hold=release)
        if message["method"] == "initialize":
            feeds[-1].send_nowait(sse_block(data(rpc_result(message["id"], INIT_RESULT))))
        elif message["method"] == "tools/call":
            feeds[-1].send_nowait(sse_block(b"data: {not json"))
            with anyio.fail_after(FAST):
                await stalled.wait()
            feeds[-1].send_nowait(sse_block(data(rpc_result(message["id"], TOOL_RESULT))))
        return Reply.text(202, "Accepted")

    async with raw_server(handler) as server:
        url = f"http://127.0.0.1:{server.port}{SSE_PATH}"
        try:
            async with Client.http(
                url, mode="legacy", transport="sse", timeout=4 * FAST, validate_output=False
            ) as c:
                with anyio.fail_after(FAST / 2):
                    assert (await c.call_tool("t", {})).text == "fine"
        finally:
            release.set()
            for feed in feeds:
                feed.close()
