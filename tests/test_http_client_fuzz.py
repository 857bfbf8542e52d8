"""A server that misbehaves at the HTTP level against the Streamable HTTP client.

The peer is a scripted HTTP/1.1 server (``http_client/rawserver.py``) that writes
most answers as raw bytes, so that it can break HTTP itself, not only the JSON
inside it. It completes the handshake properly, in one of three revisions
(2026-07-28, pinned, with its ``server/discover``; 2025-11-25 and 2025-06-18,
pinned, with ``initialize`` and a session id), then answers a ``tools/call``,
``tools/list``, ``ping`` (2026-07-28: ``server/discover``) or ``resources/read``
with one drawn misbehaviour (the first such request, or every one of them):

* any status: 1xx informational answers before the real one (and a 101 nobody
  asked for), other 2xx, 204/304 with a body, 3xx with and without ``Location``
  (to another origin, to an invalid URL, loops), 401/403 with garbage
  ``WWW-Authenticate``, 404 for the session, 429/503 with ``Retry-After``, 4xx/5xx
  with text, HTML or a JSON-RPC error in the body;
* ``Content-Type`` missing, wrong, with parameters, in upper case, or naming JSON
  for an event stream and the other way round;
* JSON bodies: the answer to another id (or to ``"3"`` for ``3``, or ``3.0``), a
  batch, truncated, not UTF-8, nested 2000 deep, empty, ``null``;
* event streams whole, split at every byte, in halves or by lines (at once or
  slowly), with LF, CRLF or CR line ends, comments, priming events, garbage
  ``retry:``, ``id:`` with NUL or non-ASCII, other event names, data that is not
  JSON, notifications and requests before the answer, an event larger than
  ``max_event_size``, the answer never coming and the stream ending cleanly,
  being cut between or inside events, or (legacy) resumed with ``GET`` and
  ``Last-Event-ID``;
* framing: chunked (with extensions and trailers), Content-Length, read until
  close, HTTP/1.0, bare LF line ends, ``Connection: close``, closing after the
  answer without saying so, a Content-Length larger or smaller than the body, a
  bad chunk size, an unasked-for ``Content-Encoding: gzip``, conflicting lengths,
  a head cut short or not HTTP, a NUL in a header, the socket closed without an
  answer, slow answers;
* odd ``Mcp-Session-Id`` values (empty, spaces, control characters, non-ASCII,
  very long, twice) on the handshake's answer and later.

Whatever the server does:

1. the method returns its typed result or raises an ``MCPWireError``, within
   ``FAST`` seconds (the request timeout is far above it), and which one follows
   from the misbehaviour (``expect``): in an event stream the first answer or
   oversized event decides, in stream order, however the bytes were split; a
   request whose kept-alive socket closed with nothing sent back goes out once
   more on a new one (as ``_http_client_conn`` documents), and only then;
2. leaving ``async with client`` raises nothing, promptly, and leaves no task
   running;
3. afterwards the client is usable (a well-answered ``ping``, and the method
   again, succeed: bytes that follow a complete response on its connection are
   never taken for the next response, RFC 9112 §6.3), also after a response
   whose head never arrived intact (``HEAD_FAILURES`` and an unasked-for 101:
   the server was reached but that exchange got no answer, so it fails with a
   ``TransportError``, -32603, as ``_http_client`` documents, and only that one;
   pain point #9). A 404 to a request
   carrying the session id re-initializes exactly once; the session id the client
   echoes is the one ``initialize`` gave, and only if it is visible ASCII; the
   modern era never sends one;
4. nothing is logged at ERROR on the ``mcpwire`` loggers.

Both backends; every misbehaviour kind has an explicit ``@example``.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

import anyio
import pytest
from fuzzing import in_own_thread, mcpwire_errors, stray_tasks
from http_client.rawserver import Reply, Seen, raw_server
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from mcpwire import (
    CallToolResult,
    Client,
    ConnectionClosed,
    JSONRPCError,
    MCPWireError,
    ResourceContents,
    Tool,
)

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
VERSIONS = (MODERN, "2025-11-25", "2025-06-18")
#: Far above how long any answer takes here: a call still waiting at FAST has hung.
REQUEST_TIMEOUT = 30.0
FAST = 10.0
#: The client's ``max_event_size``: small, so that an oversized event stays cheap.
MAX_EVENT = 2048
#: The JSON-RPC error code the hostile server uses in its error bodies.
HOSTILE_CODE = -32001

Op = Callable[[Client], Awaitable[object]]
OPS: dict[str, Op] = {
    "tools/call": lambda c: c.call_tool("t", {"a": 1}),
    "tools/list": lambda c: c.list_tools(cache=False),
    "ping": lambda c: c.ping(),
    "resources/read": lambda c: c.read_resource("file:///x", cache=False),
}
RESULTS: dict[str, dict[str, Any]] = {
    "tools/call": {"content": [{"type": "text", "text": "fine"}]},
    "tools/list": {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]},
    "ping": {},
    "resources/read": {"contents": [{"uri": "file:///x", "text": "fine"}]},
    "server/discover": {
        "supportedVersions": [MODERN],
        "capabilities": {"tools": {}, "resources": {}},
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "hostile", "version": "0"}},
    },
}
NOTE = {
    "jsonrpc": "2.0",
    "method": "notifications/message",
    "params": {"level": "info", "data": "hostile"},
}


def check_result(op: str, value: object) -> None:
    """The typed value a well-answered ``op`` returns."""
    if op == "tools/call":
        assert isinstance(value, CallToolResult)
        assert (value.text, value.is_error) == ("fine", False)
    elif op == "tools/list":
        assert isinstance(value, list)
        assert all(isinstance(t, Tool) for t in value)
        assert [t.name for t in value] == ["t"]
    elif op == "ping":
        assert value is None
    else:
        assert isinstance(value, list)
        assert all(isinstance(c, ResourceContents) for c in value)
        assert [c.text for c in value] == ["fine"]


def wire_method(op: str, version: str) -> str:
    """2026-07-28 has no ``ping``: ``Client.ping`` sends ``server/discover``."""
    return "server/discover" if op == "ping" and version == MODERN else op


# -- raw HTTP -----------------------------------------------------------------------------------

Headers = list[tuple[str, "str | bytes"]]


def head(
    status: int, headers: Headers, *, version: bytes = b"HTTP/1.1", reason: bytes | None = None
) -> bytes:
    if reason is None:
        try:
            reason = HTTPStatus(status).phrase.encode()
        except ValueError:
            reason = b"Odd"
    lines = [version + b" " + str(status).encode() + (b" " + reason if reason else b"")]
    for name, value in headers:
        lines.append(
            name.encode() + b": " + (value if isinstance(value, bytes) else value.encode())
        )
    return b"\r\n".join(lines) + b"\r\n\r\n"


def sized(status: int, headers: Headers, body: bytes) -> bytes:
    return head(status, [*headers, ("Content-Length", str(len(body)))]) + body


def chunked(pieces: list[bytes], *, end: bool = True) -> list[bytes]:
    framed = [f"{len(p):x}\r\n".encode() + p + b"\r\n" for p in pieces if p]
    return [*framed, b"0\r\n\r\n"] if end else framed


def as_json(value: Any) -> bytes:
    return json.dumps(value).encode()


def json_headers() -> Headers:
    return [("Content-Type", "application/json")]


def raw(*pieces: bytes, keep: bool = True, **kw: Any) -> Reply:
    return Reply(raw=list(pieces), raw_keep=keep, **kw)


def rpc_error(rid: Any, message: str = "refused by the hostile server") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": HOSTILE_CODE, "message": message}}


def media_type(value: bytes | None) -> str:
    """RFC 9110 §8.3.1: type/subtype, case-insensitive, parameters aside
    (h11 strips the whitespace around a header value)."""
    if value is None:
        return ""
    return value.decode("latin-1").split(";", 1)[0].strip().lower()


# -- the misbehaviours --------------------------------------------------------------------------


@dataclass(frozen=True)
class Mis:
    """One misbehaviour: its kind, its parameters, and whether it is repeated for
    every request of the method under test (or only the first)."""

    kind: str
    detail: tuple[Any, ...] = ()
    repeat: bool = False


@dataclass
class Expect:
    outcome: str  # "ok" (the typed result), "error" (JSONRPCError) or "closed"
    code: int | None = None  # the JSONRPCError's code, where it is determined


STATUS_BODIES = ("empty", "text", "html", "rpc-null", "rpc-other", "rpc-mine")
REDIRECT_CODES = (300, 301, 302, 303, 305, 306, 307, 308)
REDIRECT_TARGETS = ("none", "self", "other-path", "other-origin", "invalid", "scheme", "control")
CONTENT_TYPES: tuple[bytes | None, ...] = (
    None,
    b"",
    b"text/html",
    b"application/json; charset=utf-8",
    b"APPLICATION/JSON",
    b"Application/Json ;Charset=UTF-8",
    b"application/json;",
    b"application/jsonx",
    b"application/json-seq",
    b"text/plain; charset=utf-8",
    b"text/event-stream",
    b"TEXT/EVENT-STREAM; charset=UTF-8",
    b"text/event-stream;",
    b"application/json, text/event-stream",
    b"multipart/mixed",
)
JSON_SHAPES = (
    "other-id",
    "string-id",
    "float-id",
    "batch",
    "batch-reversed",
    "batch-without",
    "empty-batch",
    "truncated",
    "not-utf8",
    "deep",
    "deep-answer",
    "empty",
    "whitespace",
    "null",
    "notification",
    "two-objects",
    "result-array",
    "error-mine",
    "jsonrpc-1",
)
#: JSON shapes that do answer the request.
JSON_ANSWERS = frozenset({"batch", "batch-reversed"})
SSE_TOKENS = (
    "comment",
    "retry-garbage",
    "retry-small",
    "id",
    "id-nul",
    "id-utf8",
    "priming",
    "other-event",
    "not-json",
    "note",
    "server-ping",
    "other-id",
    "empty-data",
    "big",
    "answer",
    "batch",
    "multiline",
)
SSE_ANSWERS = frozenset({"answer", "batch", "multiline"})
SSE_ENDS = ("clean", "cut", "cut-mid-event", "hold")
EOLS = ("\n", "\r\n", "\r")
SPLITS = ("whole", "bytes", "halves", "lines", "slow")
#: Framings that deliver the answer intact.
FRAMINGS_OK = (
    "chunked",
    "chunk-ext-trailer",
    "close-delimited",
    "http10",
    "no-reason",
    "conn-close",
    "close-after",
    "slow",
    "lf-only",
)
#: Framings whose answer never arrives as a response head: the exchange fails
#: below HTTP (``NoResponse``), a ``TransportError`` for that request alone.
HEAD_FAILURES = ("drop", "garbage-head", "cut-head", "dup-cl", "nul-header")
FRAMINGS = (*FRAMINGS_OK, "gzip", "cl-long", "cl-short", "bad-chunk", *HEAD_FAILURES)
SESSION_VALUES: tuple[bytes, ...] = (
    b"",
    b"a b",
    b"\x01x",
    b"s\x7f",
    b"\xc3\xa9t\xc3\xa9",
    b"\t padded \t",
    b"x" * 2000,
    b"ok-session",
)


def session_echo(values: tuple[bytes, ...]) -> str | None:
    """What a client echoes of the ``Mcp-Session-Id`` values of an ``initialize``
    answer: the first (a singleton field), as h11 reads it (surrounding whitespace
    dropped), and only if it is visible ASCII (``basic/transports.mdx``: 0x21-0x7E)."""
    value = values[0].strip(b" \t").decode("latin-1")
    return value if value and all(0x21 <= ord(c) <= 0x7E for c in value) else None


def kind(name: str, *details: st.SearchStrategy[Any]) -> st.SearchStrategy[Mis]:
    return st.builds(lambda d, r: Mis(name, d, r), st.tuples(*details), st.booleans())


def _sse_detail(
    items: list[str], end: str, eol: str, split: str, framing: str, resume: bool
) -> tuple[Any, ...]:
    if end == "hold" and not SSE_ANSWERS & set(items):
        end = "clean"  # a stream held open without an answer waits for the request timeout
    return (tuple(items), end, eol, split, framing, resume)


#: ``WWW-Authenticate`` values of any bytes that can stand in a header line: no NUL,
#: and no whitespace but spaces and tabs inside (h11's field-value; anything else
#: breaks the response head itself, which ``HEAD_FAILURES`` covers).
challenges = st.lists(
    st.integers(1, 255).filter(lambda b: b not in (10, 11, 12, 13)), min_size=0, max_size=200
).map(lambda bs: bytes(bs).strip(b" \t") or b"x")

misbehaviours = st.one_of(
    kind("status", st.integers(400, 599), st.sampled_from(STATUS_BODIES)),
    kind("informational", st.lists(st.sampled_from((100, 102, 103, 150, 199)), min_size=1)),
    kind("switching"),
    kind("success", st.integers(200, 299).filter(lambda s: s != 204), st.booleans()),
    kind(
        "bodied",
        st.sampled_from((204, 304)),
        st.sampled_from(("garbage", "response")),
        st.booleans(),
    ),
    kind("redirect", st.sampled_from(REDIRECT_CODES), st.sampled_from(REDIRECT_TARGETS)),
    kind("auth", st.sampled_from((401, 403)), st.lists(challenges, min_size=1, max_size=2)),
    kind(
        "retry-after",
        st.sampled_from((429, 503)),
        st.sampled_from((b"120", b"Wed, 21 Oct 2015 07:28:00 GMT", b"soon", b"-1", b"9" * 30)),
    ),
    kind("ctype", st.sampled_from(CONTENT_TYPES), st.sampled_from(("json", "sse"))),
    kind("json", st.sampled_from(JSON_SHAPES)),
    st.builds(
        lambda d, r: Mis("sse", _sse_detail(*d), r),
        st.tuples(
            st.lists(st.sampled_from(SSE_TOKENS), max_size=6),
            st.sampled_from(SSE_ENDS),
            st.sampled_from(EOLS),
            st.sampled_from(SPLITS),
            st.sampled_from(("chunked", "close")),
            st.booleans(),
        ),
        st.booleans(),
    ),
    kind("framing", st.sampled_from(FRAMINGS)),
    kind(
        "session",
        st.sampled_from(("handshake", "later")),
        st.lists(st.sampled_from(SESSION_VALUES), min_size=1, max_size=2).map(tuple),
    ),
)


def sse_expect(detail: tuple[Any, ...], legacy: bool) -> Expect:
    """What an event stream leads to: its first answer (or oversized event) decides;
    a stream that ends without one fails the request, unless (legacy) an event id
    that can travel in a header was seen: then it is resumed with GET."""
    items, _end, _eol, _split, _framing, resume = detail
    last_id = ""
    for token in items:
        if token in SSE_ANSWERS:
            return Expect("ok")
        if token == "big":
            return Expect("error", code=-32600)
        if token in ("id", "priming", "id-utf8"):
            last_id = {"id": "e-7", "priming": "p-1", "id-utf8": "é-7"}[token]
    if legacy and last_id.isascii() and last_id and resume:
        return Expect("ok")
    return Expect("error", code=-32603)


def expect(mis: Mis, version: str) -> Expect:
    """The outcome of the method under test."""
    legacy = version != MODERN
    kind, d = mis.kind, mis.detail
    if kind == "status":
        code, body = d
        if code == 404 and legacy:
            # The session is gone: re-initialize once and retry once (transports.mdx).
            return Expect("error", code=-32600) if mis.repeat else Expect("ok")
        if body.startswith("rpc-"):
            return Expect("error", code=HOSTILE_CODE)
        return Expect("error", code=-32600 if code < 500 else -32603)
    if kind in ("informational", "session"):
        return Expect("ok")
    if kind == "switching":
        return Expect("error", code=-32603)
    if kind == "success":
        return Expect("ok") if d[1] else Expect("error", code=-32603)
    if kind == "bodied":
        # RFC 9112 §6.3: a 204/304 has no body, and what follows it on the
        # connection MUST NOT be taken for the next response.
        return Expect("error", code=-32603)
    if kind == "redirect":
        code, where = d
        if code in (307, 308) and where in ("self", "other-path"):
            return Expect("error", code=-32600) if mis.repeat else Expect("ok")
        return Expect("error", code=-32600)
    if kind == "auth":
        return Expect("error", code=-32600)
    if kind == "retry-after":
        return Expect("error", code=-32600 if d[0] == 429 else -32603)
    if kind == "ctype":
        content_type, body = d
        wanted = "application/json" if body == "json" else "text/event-stream"
        return Expect("ok") if media_type(content_type) == wanted else Expect("error")
    if kind == "json":
        shape = d[0]
        if shape in JSON_ANSWERS:
            return Expect("ok")
        if shape == "deep-answer":
            # Read from its first bytes: our request's answer, too deep to take.
            return Expect("error", code=-32600)
        return Expect("error", code=HOSTILE_CODE if shape == "error-mine" else -32603)
    if kind == "sse":
        return sse_expect(d, legacy)
    assert kind == "framing"
    how = d[0]
    if how in FRAMINGS_OK:
        return Expect("ok")
    return Expect("error", code=-32603)  # HEAD_FAILURES among them


# -- the hostile server -------------------------------------------------------------------------


@dataclass
class Script:
    version: str
    op: str
    mis: Mis
    phase: str = "handshake"  # then "fuzz" (the method under test), then "after"
    port: int = 0
    sessions: int = 0
    #: The requests of the method under test seen in the "fuzz" phase.
    op_seen: list[Seen] = field(default_factory=list)
    misbehaved: int = 0
    pending: Any = None  # the id of the request last misbehaved to
    release: anyio.Event = field(default_factory=anyio.Event)

    @property
    def legacy(self) -> bool:
        return self.version != MODERN

    @property
    def method(self) -> str:
        return wire_method(self.op, self.version)

    def good(self, rid: Any, method: str) -> dict[str, Any]:
        value = dict(RESULTS[method])
        if not self.legacy:
            value["resultType"] = "complete"
        return {"jsonrpc": "2.0", "id": rid, "result": value}

    async def handler(self, seen: Seen) -> Reply:
        if seen.method == "DELETE":
            return Reply.empty(200)
        if seen.method == "GET":
            resume = self.mis.kind == "sse" and self.mis.detail[5]
            if seen.headers.get("last-event-id") and resume and self.pending is not None:
                # Legacy resumption: the answer, on the stream reopened after its last id.
                answer = json.dumps(self.good(self.pending, self.method))
                return Reply.sse(f"id: r-1\nevent: message\ndata: {answer}\n\n")
            return Reply.empty(405)
        message = seen.json
        if not isinstance(message, dict) or "method" not in message or "id" not in message:
            return Reply.empty(202)  # notifications, and the client's answers to our requests
        method, rid = message["method"], message["id"]
        if method == "initialize":
            self.sessions += 1
            init = {
                "jsonrpc": "2.0",
                "id": rid,
                "result": {
                    "protocolVersion": self.version,
                    "capabilities": {"tools": {}, "resources": {}},
                    "serverInfo": {"name": "hostile", "version": "0"},
                },
            }
            if (
                self.sessions == 1
                and self.mis.kind == "session"
                and self.mis.detail[0] == "handshake"
            ):
                return self.with_sessions(init)
            return Reply.json(init, headers=[("Mcp-Session-Id", f"s-{self.sessions}")])
        if method == "server/discover" and self.phase == "handshake":
            if self.mis.kind == "session" and self.mis.detail[0] == "handshake":
                return self.with_sessions(self.good(rid, method))
            return Reply.json(self.good(rid, method))
        if self.phase == "fuzz" and method == self.method:
            self.op_seen.append(seen)
            if self.mis.repeat or not self.misbehaved:
                self.misbehaved += 1
                self.pending = rid
                return self.misbehave(rid)
        return Reply.json(self.good(rid, method))

    def with_sessions(self, answer: dict[str, Any]) -> Reply:
        headers: Headers = [*json_headers(), *(("Mcp-Session-Id", v) for v in self.mis.detail[1])]
        return raw(sized(200, headers, as_json(answer)))

    def misbehave(self, rid: Any) -> Reply:
        kind, d = self.mis.kind, self.mis.detail
        good = self.good(rid, self.method)
        body = as_json(good)
        if kind == "status":
            code, shape = d
            if shape == "empty":
                return raw(sized(code, [], b""))
            if shape in ("text", "html"):
                text = b"upstream trouble" if shape == "text" else b"<html><b>oops</b></html>"
                return raw(
                    sized(
                        code,
                        [("Content-Type", f"text/{'plain' if shape == 'text' else 'html'}")],
                        text,
                    )
                )
            target = {"rpc-null": None, "rpc-other": "someone-else", "rpc-mine": rid}[shape]
            return raw(sized(code, json_headers(), as_json(rpc_error(target))))
        if kind == "informational":
            early = b"".join(head(c, [("X-Early", "yes")]) for c in d[0])
            return raw(early + sized(200, json_headers(), body))
        if kind == "switching":
            return raw(
                head(101, [("Upgrade", "h2c"), ("Connection", "Upgrade")])
                + sized(200, json_headers(), body),
                keep=False,
            )
        if kind == "success":
            code, with_answer = d
            return raw(sized(code, json_headers(), body if with_answer else b""))
        if kind == "bodied":
            code, extra, keep = d
            if extra == "garbage":
                tail = b"hello"
            else:  # a whole response, for the next request (the client numbers them 1, 2, 3...)
                smuggled = rpc_error(rid + 1 if isinstance(rid, int) else rid, "smuggled")
                tail = sized(200, json_headers(), as_json(smuggled))
            return raw(head(code, [("Content-Length", str(len(tail)))]) + tail, keep=keep)
        if kind == "redirect":
            code, where = d
            base = f"http://127.0.0.1:{self.port}"
            location: bytes | None = {
                "none": None,
                "self": f"{base}/mcp".encode(),
                "other-path": b"/mcp-moved?x=1",
                "other-origin": f"http://localhost:{self.port}/mcp".encode(),
                "invalid": b"http://[::1/mcp",
                "scheme": b"ftp://127.0.0.1/mcp",
                "control": b"/mcp\x7f",
            }[where]
            headers: Headers = [("Content-Type", "text/plain")]
            if location is not None:
                headers.append(("Location", location))
            return raw(sized(code, headers, b"moved"))
        if kind == "auth":
            code, values = d
            headers = [("Content-Type", "text/plain"), *(("WWW-Authenticate", v) for v in values)]
            return raw(sized(code, headers, b"who are you"))
        if kind == "retry-after":
            code, value = d
            return raw(
                sized(code, [("Content-Type", "text/plain"), ("Retry-After", value)], b"later")
            )
        if kind == "ctype":
            content_type, shape = d
            headers = [] if content_type is None else [("Content-Type", content_type)]
            if shape == "json":
                return raw(sized(200, headers, body))
            block = f"event: message\ndata: {json.dumps(good)}\n\n".encode()
            return raw(head(200, [*headers, ("Transfer-Encoding", "chunked")]), *chunked([block]))
        if kind == "json":
            return raw(sized(200, json_headers(), json_body(d[0], rid, good)))
        if kind == "sse":
            return self.sse(d, rid, good)
        if kind == "session":
            return raw(sized(200, [*json_headers(), *(("Mcp-Session-Id", v) for v in d[1])], body))
        assert kind == "framing"
        return framing(d[0], body)

    def sse(self, detail: tuple[Any, ...], rid: Any, good: dict[str, Any]) -> Reply:
        items, end, eol, split, how, _resume = detail
        text = "".join(sse_block(token, rid, good) for token in items)
        if end == "cut-mid-event":
            block = sse_block("answer", rid, good)
            text += block[: len(block) // 2]
        text = text.replace("\n", eol)
        data = text.encode()
        if split == "whole":
            pieces = [data]
        elif split == "bytes":
            pieces = [data[i : i + 1] for i in range(len(data))]
        elif split == "halves":
            pieces = [data[: len(data) // 2], data[len(data) // 2 :]]
        else:  # line by line, at once or 20 ms apart
            step = eol.encode()
            pieces = [p + step for p in data.split(step)]
            pieces[-1] = pieces[-1][: -len(step)]
        hold = self.release if end == "hold" else None
        delay = 0.02 if split == "slow" else 0.0
        if how == "chunked":
            # Only a clean end finishes the chunked body; a cut leaves it unfinished.
            framed = chunked(pieces, end=end == "clean")
            sse_head = head(
                200, [("Content-Type", "text/event-stream"), ("Transfer-Encoding", "chunked")]
            )
            return raw(sse_head, *framed, keep=end == "clean", hold=hold, delay=delay)
        return raw(
            head(200, [("Content-Type", "text/event-stream"), ("Connection", "close")]),
            *pieces,
            keep=False,
            hold=hold,
            delay=delay,
        )


def sse_block(token: str, rid: Any, good: dict[str, Any]) -> str:
    """One event-stream block (LF line ends; the caller swaps them)."""
    answer = json.dumps(good)
    lines = {
        "comment": [": keep-alive"],
        "retry-garbage": ["retry: 1.5e3", "retry: -5", "retry: soon"],
        "retry-small": ["retry: 10"],
        "id": ["id: e-7"],
        "id-nul": ["id: a\x00b"],
        "id-utf8": ["id: é-7"],
        "priming": ["id: p-1", "data:"],
        "other-event": ["event: mystery", "data: " + answer],
        "not-json": ["data: this is not json"],
        "note": ["event: message", "data: " + json.dumps(NOTE)],
        "server-ping": ["data: " + json.dumps({"jsonrpc": "2.0", "id": "srv-1", "method": "ping"})],
        "other-id": ["data: " + json.dumps({**good, "id": "someone-else"})],
        "empty-data": ["data:"],
        "big": ["data: " + "x" * (MAX_EVENT + 50)],
        "answer": ["event: message", "data: " + answer],
        "batch": ["data: " + json.dumps([NOTE, good])],
        "multiline": ["data: " + line for line in answer.replace(", ", ",\n").split("\n")],
    }[token]
    return "\n".join(lines) + "\n\n"


def json_body(shape: str, rid: Any, good: dict[str, Any]) -> bytes:
    other = {**good, "id": "someone-else"}
    if shape == "other-id":
        return as_json(other)
    if shape == "string-id":
        return as_json({**good, "id": str(rid)})
    if shape == "float-id":
        return as_json({**good, "id": float(rid) if isinstance(rid, int) else rid + ".0"})
    if shape == "batch":
        return as_json([NOTE, good])
    if shape == "batch-reversed":
        return as_json([good, other])
    if shape == "batch-without":
        return as_json([NOTE, other])
    if shape == "empty-batch":
        return b"[]"
    if shape == "truncated":
        return as_json(good)[:-5]
    if shape == "not-utf8":
        return as_json({**good, "note": "@"}).replace(b'"@"', b'"\xff\xfe\xc3"')
    if shape == "deep":
        return b"[" * 2000 + b"]" * 2000
    if shape == "deep-answer":
        return as_json(good)[:-1] + b', "x": ' + b"[" * 2000 + b"]" * 2000 + b"}"
    if shape == "empty":
        return b""
    if shape == "whitespace":
        return b" \r\n\t "
    if shape == "null":
        return b"null"
    if shape == "notification":
        return as_json(NOTE)
    if shape == "two-objects":
        return as_json(good) + as_json(good)
    if shape == "result-array":
        return as_json({"jsonrpc": "2.0", "id": rid, "result": [1]})
    if shape == "error-mine":
        return as_json(rpc_error(rid))
    assert shape == "jsonrpc-1"
    return as_json({**good, "jsonrpc": "1.0"})


def framing(how: str, body: bytes) -> Reply:
    ctype = ("Content-Type", "application/json")
    if how == "chunked":
        third = max(len(body) // 3, 1)
        pieces = [body[:third], body[third : 2 * third], body[2 * third :]]
        return raw(head(200, [ctype, ("Transfer-Encoding", "chunked")]), *chunked(pieces))
    if how == "chunk-ext-trailer":
        framed = f"{len(body):x};name=value\r\n".encode() + body + b"\r\n0\r\nX-Trailer: t\r\n\r\n"
        return raw(head(200, [ctype, ("Transfer-Encoding", "chunked")]) + framed)
    if how == "close-delimited":
        return raw(head(200, [ctype, ("Connection", "close")]), body, keep=False)
    if how == "http10":
        return raw(head(200, [ctype], version=b"HTTP/1.0") + body, keep=False)
    if how == "no-reason":
        return raw(head(200, [ctype, ("Content-Length", str(len(body)))], reason=b"") + body)
    if how == "conn-close":
        return raw(sized(200, [ctype, ("Connection", "close")], body), keep=False)
    if how == "close-after":
        return raw(sized(200, [ctype], body), keep=False)
    if how == "slow":
        half = len(body) // 2
        return raw(
            head(200, [ctype, ("Content-Length", str(len(body)))]),
            body[:half],
            body[half:],
            delay=0.05,
        )
    if how == "lf-only":
        return raw(
            head(200, [ctype, ("Content-Length", str(len(body)))]).replace(b"\r\n", b"\n") + body
        )
    if how == "gzip":  # never asked for (no Accept-Encoding), so not JSON to the client
        packed = gzip.compress(body)
        return raw(sized(200, [ctype, ("Content-Encoding", "gzip")], packed))
    if how == "cl-long":
        return raw(head(200, [ctype, ("Content-Length", str(len(body) + 20))]) + body, keep=False)
    if how == "cl-short":
        return raw(head(200, [ctype, ("Content-Length", str(len(body) - 3))]) + body)
    if how == "bad-chunk":
        return raw(
            head(200, [ctype, ("Transfer-Encoding", "chunked")]) + b"zz\r\n" + body, keep=False
        )
    if how == "drop":
        return Reply(drop=True)
    if how == "garbage-head":
        return raw(b"hello there\r\n\r\n" + body, keep=False)
    if how == "cut-head":
        return raw(b"HTTP/1.1 200 OK\r\nContent-Ty", keep=False)
    if how == "dup-cl":
        cls = [("Content-Length", str(len(body))), ("Content-Length", str(len(body) + 1))]
        return raw(head(200, [ctype, *cls]) + body, keep=False)
    assert how == "nul-header"
    return raw(sized(200, [ctype, ("X-Odd", b"a\x00b")], body), keep=False)


# -- the test -----------------------------------------------------------------------------------


async def attempt(client: Client, op: str) -> tuple[str, Any]:
    """Call ``op``: ("ok", value), ("error", JSONRPCError), ("closed", ConnectionClosed)
    or ("other", another MCPWireError). Any other exception propagates; FAST bounds it."""
    with anyio.move_on_after(FAST):
        try:
            value = await OPS[op](client)
        except ConnectionClosed as exc:
            return "closed", exc
        except JSONRPCError as exc:
            return "error", exc
        except MCPWireError as exc:
            return "other", exc
        return "ok", value
    raise AssertionError(f"{op} still had no outcome after {FAST} s")


def observed_expectation(script: Script) -> Expect:
    """``expect``, and for a socket closed without an answer what the client did:
    the request goes out once more, on a new connection, when it went on a
    kept-alive socket and nothing at all came back (``_http_client_conn``:
    the server may have closed it just as we sent); the answer to that decides."""
    expected = expect(script.mis, script.version)
    if script.mis.kind == "framing" and script.mis.detail[0] == "drop":
        seen = script.op_seen
        assert len(seen) <= 2, "a dropped request is sent again at most once"
        if len(seen) == 2:
            assert seen[0].connection != seen[1].connection
            if not script.mis.repeat:
                return Expect("ok")
    return expected


async def exercise(script: Script, url: str) -> None:
    client = Client.http(
        url,
        mode=script.version,
        request_timeout=REQUEST_TIMEOUT,
        validate_output=False,
        max_event_size=MAX_EVENT,
        reconnect_delay=0.05,
        reconnect_attempts=2,
    )
    # Entered and left here, in this task's own scopes (run_script bounds it all).
    started = anyio.current_time()
    async with client:
        assert anyio.current_time() - started < FAST, "the handshake took too long"
        script.phase = "fuzz"
        outcome, value = await attempt(client, script.op)
        expected = observed_expectation(script)
        assert outcome == expected.outcome, (outcome, expected, value)
        if outcome == "ok":
            check_result(script.op, value)
        elif outcome == "error" and expected.code is not None:
            assert value.code == expected.code, value
        script.phase = "after"
        for op in ("ping", script.op):  # whatever happened, the client serves on
            outcome, value = await attempt(client, op)
            assert outcome == "ok", (op, value)
            check_result(op, value)
        started = anyio.current_time()
    assert anyio.current_time() - started < FAST, "leaving the client took too long"


def check_traffic(script: Script, seen: list[Seen]) -> None:
    """Session ids and versions as the client sent them."""
    if not script.legacy:
        # 2026-07-28 has no sessions: an Mcp-Session-Id from the server is ignored.
        assert all("mcp-session-id" not in s.headers for s in seen)
        assert {s.method for s in seen} == {"POST"}
        return
    inits = [s for s in seen if s.rpc_method == "initialize"]
    reinit = script.mis.kind == "status" and script.mis.detail[0] == 404
    assert len(inits) == (2 if reinit else 1), "a lost session is re-initialized exactly once"
    current: str | None = None
    for s in seen:
        if s.rpc_method == "initialize":
            assert "mcp-session-id" not in s.headers
            assert "mcp-protocol-version" not in s.headers
            number = inits.index(s) + 1
            current = f"s-{number}"
            if number == 1 and script.mis.kind == "session" and script.mis.detail[0] == "handshake":
                current = session_echo(script.mis.detail[1])
            continue
        assert s.headers.get("mcp-session-id") == current, (s.method, s.rpc_method)
        assert s.headers.get("mcp-protocol-version") == script.version


async def run_script(script: Script, backend: str) -> None:
    with anyio.fail_after(4 * FAST):
        async with raw_server(script.handler) as server:
            script.port = server.port
            try:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(exercise, script, server.url)
            finally:
                script.release.set()
            check_traffic(script, server.seen)
    await anyio.sleep(0)
    assert not stray_tasks(backend)


NEW = "2025-11-25"
OLD = "2025-06-18"
EXAMPLES: list[tuple[str, str, Mis]] = [
    (MODERN, "tools/call", Mis("status", (503, "text"))),
    (NEW, "tools/call", Mis("status", (500, "html"))),
    (NEW, "tools/list", Mis("status", (404, "rpc-null"))),
    (OLD, "ping", Mis("status", (404, "empty"), repeat=True)),
    (MODERN, "resources/read", Mis("status", (404, "rpc-mine"))),
    (MODERN, "tools/call", Mis("status", (405, "empty"))),
    (NEW, "tools/call", Mis("status", (400, "rpc-other"))),
    (MODERN, "tools/call", Mis("informational", ((100, 103),))),
    (NEW, "ping", Mis("switching")),
    (MODERN, "tools/list", Mis("success", (202, False))),
    (OLD, "tools/call", Mis("success", (203, True))),
    (NEW, "tools/call", Mis("bodied", (204, "response", True))),
    (MODERN, "ping", Mis("bodied", (304, "garbage", True))),
    (MODERN, "tools/call", Mis("bodied", (204, "garbage", False))),
    (MODERN, "tools/call", Mis("redirect", (307, "self"), repeat=True)),
    (NEW, "tools/call", Mis("redirect", (308, "other-path"))),
    (MODERN, "tools/call", Mis("redirect", (307, "other-origin"))),
    (MODERN, "ping", Mis("redirect", (302, "none"))),
    (NEW, "resources/read", Mis("redirect", (301, "invalid"))),
    (MODERN, "tools/call", Mis("redirect", (308, "control"))),
    (MODERN, "tools/call", Mis("redirect", (307, "scheme"))),
    (NEW, "tools/call", Mis("auth", (401, (b"Bearer \xff\x01 ,,,=", b"x" * 300)))),
    (MODERN, "tools/list", Mis("auth", (403, (b'Bearer error="insufficient_scope", scope=',)))),
    (MODERN, "tools/call", Mis("retry-after", (429, b"120"))),
    (OLD, "tools/call", Mis("retry-after", (503, b"soon"))),
    (MODERN, "tools/call", Mis("ctype", (None, "json"))),
    (MODERN, "tools/call", Mis("ctype", (b"text/html", "json"))),
    (NEW, "tools/call", Mis("ctype", (b"Application/Json ;Charset=UTF-8", "json"))),
    (MODERN, "tools/call", Mis("ctype", (b"application/json", "sse"))),
    (NEW, "tools/call", Mis("ctype", (b"text/event-stream", "json"))),
    (MODERN, "tools/call", Mis("ctype", (b"TEXT/EVENT-STREAM; charset=UTF-8", "sse"))),
    *[
        ((MODERN, NEW, OLD)[i % 3], sorted(OPS)[i % 4], Mis("json", (shape,)))
        for i, shape in enumerate(JSON_SHAPES)
    ],
    (
        MODERN,
        "tools/call",
        Mis(
            "sse",
            (
                ("comment", "retry-garbage", "id-nul", "note", "answer"),
                "clean",
                "\r",
                "bytes",
                "chunked",
                False,
            ),
        ),
    ),
    (
        NEW,
        "tools/call",
        Mis(
            "sse",
            (
                (
                    "priming",
                    "other-event",
                    "not-json",
                    "server-ping",
                    "other-id",
                    "empty-data",
                    "multiline",
                ),
                "clean",
                "\r\n",
                "lines",
                "close",
                False,
            ),
        ),
    ),
    (
        MODERN,
        "tools/list",
        Mis("sse", (("comment", "comment"), "clean", "\n", "whole", "chunked", False)),
    ),
    (
        NEW,
        "resources/read",
        Mis("sse", (("note",), "cut-mid-event", "\n", "halves", "chunked", False)),
    ),
    (
        NEW,
        "tools/call",
        Mis("sse", (("priming", "retry-small"), "clean", "\n", "whole", "chunked", True)),
    ),
    (OLD, "tools/call", Mis("sse", (("id",), "cut", "\r\n", "whole", "chunked", False))),
    (NEW, "tools/call", Mis("sse", (("id-utf8",), "clean", "\n", "whole", "close", True))),
    (
        MODERN,
        "tools/call",
        Mis("sse", (("big", "answer"), "clean", "\n", "halves", "chunked", False)),
    ),
    # An oversized event after a priming one, then the stream breaks: the size
    # error, not the break (nor a resumption after the priming id).
    (NEW, "ping", Mis("sse", (("priming", "big"), "cut", "\n", "whole", "chunked", True))),
    (MODERN, "ping", Mis("sse", (("priming", "big"), "cut", "\n", "whole", "chunked", False))),
    # The answer, then an oversized event, in one write: the answer came first.
    (NEW, "tools/call", Mis("sse", (("answer", "big"), "clean", "\n", "whole", "chunked", False))),
    (NEW, "ping", Mis("sse", (("answer",), "hold", "\n", "whole", "chunked", False))),
    (MODERN, "tools/call", Mis("sse", (("priming",), "clean", "\n", "whole", "chunked", True))),
    *[
        ((MODERN, NEW, OLD)[i % 3], sorted(OPS)[i % 4], Mis("framing", (how,)))
        for i, how in enumerate(FRAMINGS)
    ],
    (MODERN, "tools/call", Mis("framing", ("drop",), repeat=True)),
    (NEW, "tools/call", Mis("session", ("handshake", (b"\x01x",)))),
    (OLD, "tools/list", Mis("session", ("handshake", (b"x" * 2000,)))),
    (NEW, "tools/call", Mis("session", ("handshake", (b"ok-session", b"second")))),
    (NEW, "ping", Mis("session", ("handshake", (b"",)))),
    (NEW, "tools/call", Mis("session", ("handshake", (b"\t padded \t",)))),
    (NEW, "tools/call", Mis("session", ("later", (b"other",)))),
    (MODERN, "tools/call", Mis("session", ("handshake", (b"ok-session",)))),
    (MODERN, "tools/call", Mis("session", ("later", (b"a b",)))),
]


def with_examples(test: Callable[..., None]) -> Callable[..., None]:
    for version, op, mis in EXAMPLES:
        test = example(version=version, op=op, mis=mis)(test)
    return test


@settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(version=st.sampled_from(VERSIONS), op=st.sampled_from(sorted(OPS)), mis=misbehaviours)
@with_examples
def test_http_misbehaviour(
    anyio_backend: str, caplog: pytest.LogCaptureFixture, version: str, op: str, mis: Mis
) -> None:
    caplog.clear()
    script = Script(version, op, mis)
    in_own_thread(anyio.run, run_script, script, anyio_backend, backend=anyio_backend)
    assert not mcpwire_errors(caplog)
