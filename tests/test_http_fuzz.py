"""Hostile clients over streamable HTTP: every request gets the one answer the
transport rules call for, and the server goes on.

A ``Server`` with tools (a plain function, a coroutine function, one taking a
``Context`` that reports progress and logs, one that raises, one whose input
schema asks for ``Mcp-Param-*`` headers), a prompt, a static resource and a
resource template runs with ``HTTPServer`` on 127.0.0.1, on both anyio
backends; legacy sessions of 2025-11-25, 2025-06-18 and 2025-03-26 are opened
first. Hypothesis then sends, on keep-alive connections, many HTTP requests
mixing both eras:

* modern (2026-07-28) requests for every method the server serves and some it
  does not, their ``params`` holding JSON of any shape under the keys each
  method reads and others, with a ``_meta`` envelope that is valid or not, and
  the ``MCP-Protocol-Version``, ``Mcp-Method``, ``Mcp-Name`` and ``Mcp-Param-*``
  headers a conforming client sends, then perturbed: dropped, changed,
  repeated, base64-escaped (well or badly), raw non-ASCII;
* legacy requests naming a session (or none, or an unknown or repeated id) with
  a protocol version header that is right, absent, another or unsupported;
  ``initialize`` (a fresh session each time it succeeds); 2025-03-26 batches;
* notifications and client responses (well-formed or not), in either era;
* bodies that are not JSON, not UTF-8, truncated, not an object, an empty
  batch, integers outside 64 bits, nesting past the codec's limit, too large;
* ``Accept`` and ``Content-Type`` of every kind, bad ``Host`` and ``Origin``
  values, other paths, and methods other than POST;
* bodies framed by ``Content-Length`` (with ``Expect: 100-continue`` or not) or
  chunked, and requests sent one at a time or pipelined (each written before
  the replies to those ahead of it are read).

The expected answer of each request is worked out from the request alone by an
oracle that follows spec-notes section 7 (7.2 legacy, 7.3 modern, 9 JSON-RPC)
and design.md's bad-input rules, in the order the server documents for its
gate (``_http_server``, ``_http_modern``): path, ``Host``, ``Origin``, method,
size, ``Accept``, ``Content-Type``, the body, then the era's own checks. What
must hold whatever the input:

* every request gets exactly one response on its connection, in order, with
  the status the oracle expects, which is always one of ``ALLOWED``; the
  connection is closed only after a response that says ``Connection: close``
  (then the client reconnects);
* a JSON body is a JSON-RPC response (a list of them for a batch) whose ``id``
  is the request's (``null`` where it could not be read, or where the
  transport refuses a message before JSON-RPC sees it) with exactly one of a
  ``result`` object and an ``error`` with an integer code and a string message;
  an event stream decodes and ends with the response to the request, after
  notifications only; a modern error's status is the one its code calls for;
  a 200's media type is one the client accepts; 202 has an empty body; a
  modern answer has no ``Mcp-Session-Id``, a ``resultType`` in its result and
  never the legacy -32002; a legacy ``initialize`` gets a session id exactly
  when it succeeds; where a handler answers, its error is never one only the
  transport gives (-32700, -32020, -32022);
* a notification or a client response never gets a response with an ``id``;
* nothing is logged at ERROR (the raising tool's exception becomes an
  ``isError`` result and is not logged);
* after each example a modern ``tools/list`` and a legacy ``ping`` are
  answered, and at the end, after every session is deleted, nothing is left:
  no session, no pending session, no kept SSE event, no task but the reaper.

A valid ``subscriptions/listen`` rightly streams until the server ends its
subscriptions: while a response is silent the client has it do so.
"""

from __future__ import annotations

import base64
import json
import logging
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, Union

import anyio
import anyio.from_thread
import h11
import orjson
import pytest
from http_raw import ACCEPT, CAPS, LEGACY, MODERN, PV, Raw, Reply, init_body, note, rpc, running
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from strategies import int64, json_objects, json_values, texts

from mcpwire import Context, HTTPServer, Server
from mcpwire.sansio import (
    Batch,
    ErrorResponse,
    Invalid,
    Notification,
    Request,
    RequestId,
    Response,
    SSEDecoder,
    decode_header_value,
    encode_header_value,
    parse,
)

#: Seconds any one request may take before the test calls it hung.
WAIT = 10.0
#: Seconds a response may stay silent before the client ends the server's
#: subscription streams (a valid ``subscriptions/listen`` waits for that).
IDLE = 0.25
MAX_BODY = 4096
#: What ``GET`` and ``DELETE`` read of a body at most (``_http_legacy._preamble``).
GET_BODY_LIMIT = 4096

LEGACY_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LOG_LEVEL = "io.modelcontextprotocol/logLevel"
CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")

#: Every status these requests may get (spec-notes 7.2-7.4, design.md). The server
#: has others that nothing here can cause: 408 and 431 (a head or body too slow or
#: too large), 409 (a second GET stream: none is ever opened), 500 (no task group
#: for sessions), 503 (session or connection limits, shutdown).
ALLOWED = frozenset({200, 202, 400, 403, 404, 405, 406, 410, 413, 415, 421})
#: JSON-RPC error code -> HTTP status of a modern error sent as JSON (spec-notes
#: 1.5, 5 and 6: header and version errors and missing ``_meta`` 400, an unknown
#: method 404); any other error rides on 200 like a result.
MODERN_STATUS = {
    -32700: 400,
    -32600: 400,
    -32602: 400,
    -32020: 400,
    -32021: 400,
    -32022: 400,
    -32601: 404,
}
#: Errors only the transport gives, before any handler runs (unreadable JSON,
#: headers that disagree with the body, an unsupported version).
GATE_CODES = frozenset({-32700, -32020, -32022})
#: The params member ``Mcp-Name`` mirrors (spec-notes 7.3; SEP-2663 for tasks).
NAME_KEYS = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}
#: ``routed``'s annotated arguments: argument -> (header token, JSON type).
ROUTED_HEADERS = {
    "region": ("Region", "string"),
    "count": ("Count", "integer"),
    "flag": ("Flag", "boolean"),
}
ROUTED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        prop: {"type": kind, "x-mcp-header": token}
        for prop, (token, kind) in ROUTED_HEADERS.items()
    },
}
#: x-mcp-header integers travel only within +-(2**53 - 1) (spec-notes 7.3).
SAFE_INT = 2**53 - 1
DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")

#: Legacy sessions opened before the fuzzing; requests name them by these stand-ins.
BASE_SESSIONS = {b"@legacy": "2025-11-25", b"@june": "2025-06-18", b"@batch": "2025-03-26"}

#: ``Accept`` values -> (takes JSON, takes SSE), by RFC 9110 12.5.1 (None: no header).
ACCEPTS: dict[str | None, tuple[bool, bool]] = {
    ACCEPT: (True, True),
    None: (True, True),
    "": (True, True),
    "*/*": (True, True),
    "application/json": (True, False),
    "text/event-stream": (False, True),
    "text/event-stream; charset=utf-8": (False, True),
    "application/*, text/*;q=0": (True, False),
    "text/html": (False, False),
    "application/json;q=0, text/event-stream;q=0": (False, False),
    "not a media type": (False, False),
}
#: ``Content-Type`` values -> whether they are ``application/json`` (parameters allowed).
CONTENT_TYPES: dict[str | None, bool] = {
    "application/json": True,
    "application/json; charset=utf-8": True,
    'Application/JSON;charset="UTF-8"': True,
    None: False,
    "": False,
    "text/plain": False,
    "application/jsonl": False,
    "application/json-seq": False,
    "application/x-www-form-urlencoded": False,
    "application/json; =x": False,
    "application/json, application/json": False,
}
#: ``Host`` values -> allowed for a server bound to loopback (any port).
HOSTS = {
    "127.0.0.1": True,
    "localhost:8000": True,
    "LOCALHOST": True,
    "[::1]:1": True,
    "evil.example": False,
    "localhost.evil.example": False,
    "127.0.0.1:*": False,
}
#: ``Origin`` values -> allowed by default (pages served from this machine).
ORIGINS = {
    "http://localhost:5173": True,
    "https://127.0.0.1": True,
    "http://evil.example": False,
    "http://localhost.evil.example": False,
    "null": False,
}
#: Request targets -> whether they name the MCP endpoint (the query is not the path).
PATHS = {"/mcp": True, "/mcp?x=1": True, "/": False, "/mcp/": False, "/MCP": False}


def fuzz_app() -> Server:
    """One of each kind of handler, so that requests reach real code."""
    app = Server("httpfuzz", "1.0.0", page_size=2)

    @app.tool()
    def echo(message: str) -> str:
        """Echo the message back."""
        return message

    @app.tool()
    async def add(a: int, b: int = 0) -> int:
        """Add two integers."""
        await anyio.sleep(0)
        return a + b

    @app.tool()
    async def report(ctx: Context, steps: int = 1) -> str:
        """Report progress and log a line per step (at most three)."""
        for step in range(min(max(steps, 0), 3)):
            await ctx.report_progress(step + 1, 3, f"step {step + 1}")
            await ctx.log("info", {"step": step})
        return "reported"

    @app.tool()
    def fail(message: str = "") -> str:
        """Always raise."""
        raise ValueError("failed " + message)

    @app.tool(input_schema=ROUTED_SCHEMA)
    def routed(region: str = "", count: int = 0, flag: bool = False) -> str:
        """Arguments mirrored in Mcp-Param-* headers."""
        return f"{region}:{count}:{flag}"

    @app.prompt()
    def greet(name: str, style: str = "friendly") -> str:
        """Greet someone."""
        return f"Write a {style} greeting for {name}."

    @app.resource("mem://text", mime_type="text/plain")
    def text() -> str:
        """A text resource."""
        return "hello"

    @app.resource("mem://items/{item_id}", mime_type="text/plain")
    def item(item_id: str) -> str:
        """One item."""
        return f"item {item_id}"

    return app


TOOLS = frozenset({"echo", "add", "report", "fail", "routed"})


# -- requests as they go on the wire ----------------------------------------------------------

Headers = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class Wire:
    """One HTTP request. Header values equal to a key of ``BASE_SESSIONS`` stand for
    that session's id; ``host`` and ``content-length`` are added when sent."""

    body: bytes
    headers: Headers = ()
    verb: str = "POST"
    path: str = "/mcp"
    #: "length" (Content-Length), "chunked", or "expect" (with Expect: 100-continue).
    framing: str = "length"


def dumps(value: object) -> bytes:
    """JSON as a client writes it; the standard library encodes integers of any size."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def post_headers(*extra: tuple[str, bytes | str]) -> Headers:
    base: list[tuple[str, bytes | str]] = [
        ("content-type", "application/json"),
        ("accept", ACCEPT),
        *extra,
    ]
    return tuple((name, v.encode("latin-1") if isinstance(v, str) else v) for name, v in base)


def client_render(value: object) -> str | None:
    """What a client sends in ``Mcp-Param-*`` for an argument, before escaping
    (spec-notes 7.3): strings, safe integers, booleans; nothing for the rest."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if type(value) is int:
        return str(value) if abs(value) <= SAFE_INT else None
    if isinstance(value, str):
        return value
    return None


def routing_headers(method: str, params: dict[str, Any]) -> list[tuple[str, bytes | str]]:
    """The 2026-07-28 headers a conforming client sends with a request."""
    meta = params.get("_meta")
    version = meta.get(PV) if isinstance(meta, dict) else None
    out: list[tuple[str, bytes | str]] = [
        (
            "mcp-protocol-version",
            encode_header_value(version) if isinstance(version, str) else MODERN,
        ),
        ("mcp-method", method),
    ]
    key = NAME_KEYS.get(method)
    name = params.get(key) if key is not None else None
    if name is not None:
        text = name if isinstance(name, str) else json.dumps(name)  # never equal: a mismatch
        out.append(("mcp-name", encode_header_value(text)))
    arguments = params.get("arguments")
    if method == "tools/call" and params.get("name") == "routed" and isinstance(arguments, dict):
        for prop, (token, _) in ROUTED_HEADERS.items():
            rendered = client_render(arguments.get(prop))
            if rendered is not None:
                out.append(("mcp-param-" + token.lower(), encode_header_value(rendered)))
    return out


def modern_wire(
    rid: RequestId, method: str, params: dict[str, Any] | None = None, **meta: Any
) -> Wire:
    """A modern request with a valid envelope (plus ``meta``) and its headers."""
    p = dict(params or {})
    p["_meta"] = {PV: MODERN, CAPS: {}, **meta}
    return Wire(dumps(rpc(rid, method, p)), post_headers(*routing_headers(method, p)))


def legacy_wire(
    rid: RequestId,
    method: str,
    params: dict[str, Any] | None = None,
    session: bytes = b"@legacy",
) -> Wire:
    body = dumps(rpc(rid, method, params))
    version = BASE_SESSIONS.get(session, LEGACY)
    return Wire(body, post_headers(("mcp-session-id", session), ("mcp-protocol-version", version)))


# Header edits: data, so that a failing case prints what was done to it.
Edit = tuple[str, ...]


def edit(wire: Wire, change: Edit) -> Wire:
    """``wire`` with one header change: ("drop", name), ("set", name, value), ("add",
    name, value) (one more field), ("dup", name) (the same field twice), ("b64", name)
    (the value base64-escaped though it need not be), ("upper", name) (the field
    name in capitals), ("raw", name, value) (non-ASCII bytes, unescaped)."""
    kind, name = change[0], change[1]
    headers = list(wire.headers)
    found = [value for key, value in headers if key == name]
    if kind == "drop":
        headers = [(key, value) for key, value in headers if key != name]
    elif kind == "set":
        headers = [(key, value) for key, value in headers if key != name]
        headers.append((name, change[2].encode("latin-1")))
    elif kind == "add":
        headers.append((name, change[2].encode("latin-1")))
    elif kind == "dup" and found:
        headers.append((name, found[0]))
    elif kind == "b64" and found:
        decoded = decode_header_value(found[0].decode("latin-1"))
        if decoded is not None:
            forced = "=?base64?" + base64.b64encode(decoded.encode()).decode() + "?="
            headers = [(k, forced.encode() if k == name else v) for k, v in headers]
    elif kind == "upper":
        headers = [(k.upper() if k == name else k, v) for k, v in headers]
    elif kind == "raw":  # non-ASCII bytes as they are: no escaping
        headers = [(key, value) for key, value in headers if key != name]
        headers.append((name, change[2].encode("utf-8")))
    return replace(wire, headers=tuple(headers))


def edits(wire: Wire, *changes: Edit) -> Wire:
    for change in changes:
        wire = edit(wire, change)
    return wire


# -- the oracle: what each request must get -------------------------------------------------


@dataclass(frozen=True)
class Text:
    """A plain-text refusal before JSON-RPC (``closes``: with ``Connection: close``)."""

    status: int
    closes: bool = False


@dataclass(frozen=True)
class RpcError:
    """A JSON-RPC error body (``id`` None: ``null``)."""

    status: int
    code: int
    id: RequestId | None


@dataclass(frozen=True)
class Accepted:
    """202 with no body."""


@dataclass(frozen=True)
class Answer:
    """The handler's answer to a request: JSON or an event stream."""

    era: str
    id: RequestId
    json_ok: bool
    sse_ok: bool
    method: str
    params: Any = None


@dataclass(frozen=True)
class Answers:
    """A 2025-03-26 batch's array of responses, by id (None: ``null``)."""

    status: int
    ids: tuple[tuple[str, int], ...]


Verdict = Union[Text, RpcError, Accepted, Answer, Answers]


def header_map(headers: Headers) -> tuple[dict[str, str], set[str]]:
    """Fields by lower-case name, repeats joined with ", " (RFC 9110 5.3), and the
    names that came more than once."""
    out: dict[str, str] = {}
    twice: set[str] = set()
    for name, raw in headers:
        key, value = name.lower(), raw.decode("latin-1")
        if key in out:
            twice.add(key)
            out[key] = out[key] + ", " + value
        else:
            out[key] = value
    return out, twice


def id_key(rid: object) -> str:
    """An id as a key that keeps its JSON type (``1`` and ``"1"`` differ)."""
    return orjson.dumps(rid).decode()


@dataclass
class World:
    """The running server and what the test knows about it."""

    http: HTTPServer
    port: int
    #: Stand-in -> session id, and each live session's version.
    sids: dict[bytes, bytes] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    #: Sessions that fuzzed ``initialize`` requests opened.
    created: set[str] = field(default_factory=set)
    raw: Raw | None = None
    statuses: Counter[int] = field(default_factory=Counter)
    kinds: set[str] = field(default_factory=set)
    codes: set[int] = field(default_factory=set)
    reconnects: int = 0


def _session(h: dict[str, str], world: World) -> RpcError | str:
    """A legacy message's session, or the refusal (spec-notes 7.2: no id 400, an
    unknown one 404, an unsupported ``MCP-Protocol-Version`` 400)."""
    sid = h.get("mcp-session-id")
    if sid is None:
        return RpcError(400, -32600, None)
    if sid not in world.versions:
        return RpcError(404, -32600, None)
    version = h.get("mcp-protocol-version")
    if version is not None and version not in LEGACY_VERSIONS:
        return RpcError(400, -32600, None)
    return sid


def _sessionless_modern(item: object, h: dict[str, str]) -> bool:
    """A batch or response is modern (the rule of ``_http_gate.sessionless_modern``)
    when it names no session and a non-legacy version header, an ``Mcp-Method``
    header or (a batch) a modern request in it says so."""
    if "mcp-session-id" in h:
        return False
    pv = h.get("mcp-protocol-version")
    if pv is not None:
        return pv not in LEGACY_VERSIONS
    if "mcp-method" in h:
        return True
    return type(item) is Batch and any(type(x) is Request and _is_modern(x, h) for x in item.items)


def _is_modern(req: Request, h: dict[str, str]) -> bool:
    """The era of a request (spec-notes 7.5; the rule of ``_http_gate.is_modern``):
    the ``_meta`` envelope or a modern-only method; else, without a session, a
    non-legacy version header or an ``Mcp-Method`` header. ``initialize`` is modern
    only when stamped so in both header and body."""
    meta = req.params.get("_meta") if req.params else None
    enveloped = isinstance(meta, dict) and (PV in meta or CAPS in meta)
    pv = h.get("mcp-protocol-version")
    if req.method == "initialize":
        return enveloped and pv is not None and pv not in LEGACY_VERSIONS
    if enveloped or req.method in ("server/discover", "subscriptions/listen"):
        return True
    if "mcp-session-id" in h:
        return False
    return (pv is not None and pv not in LEGACY_VERSIONS) or "mcp-method" in h


def _params_verdict(params: dict[str, Any], h: dict[str, str], twice: set[str]) -> str:
    """``routed``'s ``Mcp-Param-*`` headers against its arguments (spec-notes 7.3):
    "ok", "mismatch", or "unsure" (a fraction, which no client rule covers)."""
    arguments = params.get("arguments")
    if params.get("name") != "routed" or not (arguments is None or isinstance(arguments, dict)):
        return "ok"
    unsure = False
    for prop, (token, kind) in ROUTED_HEADERS.items():
        name = "mcp-param-" + token.lower()
        raw = h.get(name)
        value = (arguments or {}).get(prop)
        if raw is not None and name in twice:
            return "mismatch"
        if value is None or isinstance(value, (list, dict)):
            if raw is not None:
                return "mismatch"
            continue
        want = client_render(value)
        if want is None and type(value) is int:
            # Past +-(2**53 - 1) no header carries an integer, so a conforming client
            # sends none and none may be demanded; one sent anyway must still agree.
            if raw is None:
                continue
            want = str(value)
        if want is None:
            unsure = True
            continue
        got = decode_header_value(raw) if raw is not None else None
        if got == want:
            continue
        if kind == "integer" and type(value) is int and got and DECIMAL.fullmatch(got):
            whole, _, fraction = got.partition(".")
            if set(fraction) <= {"0"} and int(whole) == value:
                continue
        return "mismatch"
    return "unsure" if unsure else "ok"


def _modern(
    req: Request, h: dict[str, str], twice: set[str], ok: tuple[bool, bool]
) -> list[Verdict]:
    """A modern request: envelope (-32602), routing headers (-32020), version
    (-32022), ``Mcp-Param-*`` (-32020), in that order (spec-notes 7.3), all 400."""
    params = req.params or {}
    meta = params.get("_meta")
    if not isinstance(meta, dict) or PV not in meta or CAPS not in meta:
        return [RpcError(400, -32602, req.id)]
    mismatch = RpcError(400, -32020, req.id)
    if twice & {"mcp-protocol-version", "mcp-method", "mcp-name"}:
        return [mismatch]
    pv = h.get("mcp-protocol-version")
    if pv is None or pv != meta[PV] or h.get("mcp-method") != req.method:
        return [mismatch]
    key = NAME_KEYS.get(req.method)
    value = params.get(key) if key is not None else None
    if value is not None and decode_header_value(h.get("mcp-name")) != value:
        return [mismatch]
    if meta[PV] != MODERN:
        return [RpcError(400, -32022, req.id)]
    answer = Answer("modern", req.id, *ok, req.method, params)
    if req.method == "tools/call":
        verdict = _params_verdict(params, h, twice)
        if verdict == "mismatch":
            return [mismatch]
        if verdict == "unsure":
            return [mismatch, answer]
    if req.method == "subscriptions/listen" and not ok[1]:
        return [Text(406)]  # a listen response is a stream of notifications
    return [answer]


def _batch(batch: Batch, version: str) -> Verdict:
    """spec-notes 9.11: 2025-03-26 only; an array of responses to the requests and
    to the invalid items JSON-RPC answers; notifications and responses get none."""
    if version != "2025-03-26":
        return RpcError(400, -32600, None)
    ids: Counter[str] = Counter()
    requests = 0
    for item in batch.items:
        if type(item) is Invalid and item.reply:
            ids[id_key(item.id)] += 1
        elif type(item) is Request:
            assert item.method == "initialize" or ids[id_key(item.id)] == 0, "ids repeat"
            ids[id_key(item.id)] += 1
            requests += item.method != "initialize"
    if not ids:
        return Accepted()
    return Answers(200 if requests else 400, tuple(sorted(ids.items())))


def expect(verb: str, path: str, headers: Headers, body: bytes, world: World) -> list[Verdict]:
    """What the request must get: one of these (usually exactly one)."""
    h, twice = header_map(headers)
    if not PATHS[path]:
        return [Text(404, closes=True)]
    if not HOSTS[h["host"]]:
        return [Text(421, closes=True)]
    if "origin" in h and not ORIGINS[h["origin"]]:
        return [Text(403, closes=True)]
    ok = ACCEPTS[h.get("accept")]
    if verb in ("GET", "DELETE"):
        if len(body) > GET_BODY_LIMIT:
            return [Text(413, closes=True)]
        if h.get("mcp-protocol-version") == MODERN:
            return [Text(405)]  # 2026-07-28 has neither (spec-notes 7.3)
        if verb == "GET" and not ok[1]:
            return [Text(406)]
        sid = _session(h, world)
        if isinstance(sid, RpcError):
            return [sid]
        assert verb == "GET" and h["last-event-id"].partition(":")[0] not in ("", "0")
        return [Text(410)]  # no stream of this session has that id
    if verb != "POST":
        return [Text(405, closes=True)]
    if len(body) > MAX_BODY:
        return [Text(413, closes=True)]
    if not ok[0] and not ok[1]:
        return [Text(406)]
    if not CONTENT_TYPES[h.get("content-type")]:
        return [Text(415)]
    item = parse(body)
    if type(item) is Request:
        if _is_modern(item, h):
            return _modern(item, h, twice, ok)
        if item.method == "initialize":
            return [Answer("legacy", item.id, *ok, item.method, item.params)]
        sid = _session(h, world)
        if isinstance(sid, RpcError):
            return [sid]
        return [Answer("legacy", item.id, *ok, item.method, item.params)]
    if type(item) is Notification:
        pv = h.get("mcp-protocol-version")
        if "mcp-session-id" not in h and (
            (pv is not None and pv not in LEGACY_VERSIONS)
            or (pv is None and item.method == "notifications/cancelled")
        ):
            if pv is not None and pv != MODERN:
                return [RpcError(400, -32022, None)]
            return [Accepted()]
        sid = _session(h, world)
        return [sid if isinstance(sid, RpcError) else Accepted()]
    if type(item) is Invalid and (item.reply or "mcp-session-id" not in h):
        # A message no one can answer with a result; a response or notification
        # refused gets an error "without id" (spec-notes 7.2).
        return [RpcError(400, item.error.code, item.id if item.reply else None)]
    if type(item) is not Invalid and _sessionless_modern(item, h):
        # 2026-07-28 has no batches and no client responses (no session to name).
        pv = h.get("mcp-protocol-version")
        return [RpcError(400, -32022 if pv is not None and pv != MODERN else -32600, None)]
    sid = _session(h, world)  # responses, batches, malformed responses: the session's
    if isinstance(sid, RpcError):
        return [sid]
    if type(item) is Batch:
        return [_batch(item, world.versions[sid])]
    if type(item) is Invalid:
        return [RpcError(400, item.error.code, None)]
    assert type(item) in (Response, ErrorResponse)
    return [Accepted()]


# -- checking one reply ------------------------------------------------------------------------


def response_problem(message: object, rid: object) -> str | None:
    """Why ``message`` is not a JSON-RPC response to ``rid``, or None."""
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return f"not a JSON-RPC 2.0 object: {message!r}"
    if "id" not in message or id_key(message["id"]) != id_key(rid):
        return f"id {message.get('id')!r}, expected {rid!r}"
    if "method" in message or ("result" in message) == ("error" in message):
        return f"not a response: {message!r}"
    if "result" in message:
        return None if isinstance(message["result"], dict) else f"result not an object: {message!r}"
    error = message["error"]
    if not isinstance(error, dict) or type(error.get("code")) is not int:
        return f"error code not an integer: {message!r}"
    if not isinstance(error.get("message"), str):
        return f"error message not a string: {message!r}"
    return None


def sse_messages(reply: Reply, era: str) -> tuple[list[dict[str, Any]], str | None]:
    decoder = SSEDecoder()
    events = decoder.feed(reply.body)
    decoder.feed_eof()
    messages: list[dict[str, Any]] = []
    for event in events:
        if not event.data:
            if era == "modern" or messages:
                return [], f"an event without data after the first message: {event!r}"
            continue  # a legacy priming event (an id and empty data)
        if era == "modern" and event.id:
            return [], f"a modern event with an id: {event!r}"
        messages.append(orjson.loads(event.data))
    return messages, None


def answer_problem(v: Answer, reply: Reply, world: World) -> str | None:
    kind = reply.headers.get("content-type")
    if kind == "text/event-stream":
        if not v.sse_ok or reply.status != 200:
            return f"SSE with status {reply.status} to a client taking SSE: {v.sse_ok}"
        messages, why = sse_messages(reply, v.era)
        if why is not None:
            return why
        if not messages:
            return "an event stream without the response"
        for message in messages[:-1]:
            if "id" in message or not isinstance(message.get("method"), str):
                return f"not a notification before the response: {message!r}"
        final = messages[-1]
        world.kinds.add("sse")
    elif kind == "application/json":
        if not v.json_ok:
            return "JSON to a client that takes only SSE"
        final = orjson.loads(reply.body)
        world.kinds.add("json")
    else:
        return f"status {reply.status} with content-type {kind!r}: {reply.body[:200]!r}"
    why = response_problem(final, v.id)
    if why is not None:
        return why
    params = v.params if isinstance(v.params, dict) else {}
    error = final.get("error")
    if error is not None:
        # A legacy session judges a modern envelope in a request by itself (-32022).
        meta = params.get("_meta")
        enveloped = v.era == "legacy" and isinstance(meta, dict) and PV in meta
        if error["code"] in GATE_CODES - ({-32022} if enveloped else set()):
            return f"the gate's error where the handler should answer: {final!r}"
        world.codes.add(error["code"])
    if kind == "application/json":
        want = MODERN_STATUS.get(error["code"], 200) if error and v.era == "modern" else 200
        if reply.status != want:
            return f"status {reply.status} for {final!r}, expected {want}"
    if v.era == "modern":
        if "mcp-session-id" in reply.headers:
            return "a modern response with an Mcp-Session-Id"  # spec-notes 7.3: never minted
        if error is not None and error["code"] == -32002:
            return f"-32002 in the modern era (spec-notes 5: -32602): {final!r}"
        if error is None and "resultType" not in final["result"]:
            return f"a modern result without resultType (spec-notes 4): {final!r}"
    if v.method == "initialize" and v.era == "legacy":
        sid = reply.headers.get("mcp-session-id")
        if (sid is not None) != ("result" in final):
            return f"session id {sid!r} for {final!r}: only a success opens one"
        if sid is not None:
            if sid in world.versions or not (
                sid.isascii() and sid.isprintable() and " " not in sid
            ):
                return f"a session id reused or not visible ASCII: {sid!r}"
            world.versions[sid] = str(final["result"].get("protocolVersion"))
            world.created.add(sid)
    if v.method == "tools/call" and params.get("name") == "fail" and "result" in final:
        # The raising tool: its exception is the call's result, not a protocol error.
        result = final["result"]
        if result.get("isError") is not True:
            return f"the raising tool's result is not an error: {result!r}"
        text = result["content"][0]["text"]
        raised = "Error executing tool: ValueError: failed", "Invalid arguments for tool fail"
        if not text.startswith(raised):
            return f"the raising tool's result says {text!r}"
    return None


def verdict_problem(v: Verdict, reply: Reply, world: World) -> str | None:
    """Why ``reply`` is not ``v``, or None."""
    closes = reply.headers.get("connection", "").lower() == "close"
    if isinstance(v, Text):
        if reply.status != v.status or closes != v.closes:
            return f"status {reply.status} (closes: {closes})"
        if not reply.headers.get("content-type", "").startswith("text/plain"):
            return f"content-type {reply.headers.get('content-type')!r}"
        if reply.status == 405 and "POST" not in reply.headers.get("allow", ""):
            return f"405 without POST in Allow: {reply.headers!r}"
        world.kinds.add("text")
        return None
    if closes:
        return "Connection: close"
    if isinstance(v, Accepted):
        if (reply.status, reply.body) != (202, b""):
            return f"status {reply.status}, body {reply.body[:200]!r}"
        world.kinds.add("accepted")
        return None
    if isinstance(v, Answer):
        return answer_problem(v, reply, world)
    if reply.status != v.status or reply.headers.get("content-type") != "application/json":
        return f"status {reply.status}, content-type {reply.headers.get('content-type')!r}"
    body = orjson.loads(reply.body)
    if isinstance(v, RpcError):
        why = response_problem(body, v.id)
        if why is not None:
            return why
        error = body.get("error")
        if error is None or error["code"] != v.code:
            return f"expected error {v.code}: {body!r}"
        world.codes.add(v.code)
        data = error.get("data")
        if v.code == -32022 and not (
            isinstance(data, dict) and MODERN in data.get("supported", ())
        ):
            return f"-32022 without the supported versions: {body!r}"
        world.kinds.add("error")
        return None
    if not isinstance(body, list):
        return f"a batch answered with {body!r}"
    for message in body:
        why = response_problem(message, message.get("id") if isinstance(message, dict) else None)
        if why is not None:
            return why
    got = Counter(id_key(message["id"]) for message in body)
    if tuple(sorted(got.items())) != v.ids:
        return f"answers to {sorted(got.items())}, expected {v.ids}"
    world.kinds.add("batch")
    return None


# -- the client ----------------------------------------------------------------------------


async def connect(world: World) -> Raw:
    if world.raw is None:
        world.raw = await Raw.connect(world.port)
    return world.raw


async def hang_up(world: World) -> None:
    if world.raw is not None:
        await world.raw.aclose()
        world.raw = None


async def waiting(world: World, step: Any) -> Any:
    """``await step()``; while it is silent, have the server end its subscriptions."""
    while True:
        with anyio.move_on_after(IDLE):
            return await step()
        world.http.server.close_subscriptions()


def request_events(
    verb: str, path: str, headers: Headers, body: bytes, framing: str = "length"
) -> list[Any]:
    """The h11 events of one request: ``Content-Length`` framing (with ``Expect:
    100-continue`` for "expect"), or a chunked body in three pieces."""
    items = [(name.encode("latin-1"), value) for name, value in headers]
    if not any(name.lower() == b"host" for name, _ in items):
        items.insert(0, (b"host", b"127.0.0.1"))
    pieces = [body] if body else []
    if framing == "chunked":
        items.append((b"transfer-encoding", b"chunked"))
        third = len(body) // 3 + 1
        pieces = [body[i : i + third] for i in range(0, len(body), third)]
    elif body or verb in ("POST", "PUT", "PATCH"):
        items.append((b"content-length", str(len(body)).encode()))
        if framing == "expect":
            items.append((b"expect", b"100-continue"))
    request = h11.Request(method=verb, target=path, headers=items)
    return [request, *(h11.Data(data=piece) for piece in pieces), h11.EndOfMessage()]


async def write(raw: Raw, events: list[Any]) -> None:
    """Send a request's bytes now (its response may be read later: pipelining)."""
    scratch = h11.Connection(h11.CLIENT)
    await raw.stream.send(b"".join(scratch.send(event) or b"" for event in events))


async def read(world: World, raw: Raw, events: list[Any]) -> Reply:
    """The whole response to the request whose ``events`` were written."""
    for event in events:  # the bytes went out already: only the state machine follows
        raw.conn.send(event)
    reply: Reply = await waiting(world, raw.head)
    parts: list[bytes] = []
    while (part := await waiting(world, raw.chunk)) is not None:
        parts.append(part)
    reply.body = b"".join(parts)
    return reply


async def send(world: World, verb: str, path: str, headers: Headers, body: bytes) -> Reply:
    """One request on the keep-alive connection, and its whole response."""
    raw = await connect(world)
    events = request_events(verb, path, headers, body)
    with anyio.fail_after(WAIT):
        await write(raw, events)
        return await read(world, raw, events)


def materialize(wire: Wire, world: World) -> Headers:
    """The headers as sent: session stand-ins replaced, ``Host`` added when absent."""
    headers = tuple((name, world.sids.get(value, value)) for name, value in wire.headers)
    if any(name.lower() == "host" for name, _ in headers):
        return headers
    return (("host", b"127.0.0.1"), *headers)


@dataclass
class Sent:
    """A request written (or about to be) and what it must get."""

    wire: Wire
    events: list[Any]
    verdicts: list[Verdict]

    @property
    def closes(self) -> bool:
        return any(isinstance(v, Text) and v.closes for v in self.verdicts)


def prepare(world: World, wire: Wire) -> Sent:
    headers = materialize(wire, world)
    events = request_events(wire.verb, wire.path, headers, wire.body, wire.framing)
    return Sent(wire, events, expect(wire.verb, wire.path, headers, wire.body, world))


BROKEN = (EOFError, anyio.EndOfStream, anyio.BrokenResourceError, h11.ProtocolError)


async def check_reply(world: World, sent: Sent, before: str) -> str:
    """Read the reply to ``sent`` and check it against the oracle; a line saying
    what happened."""
    raw = await connect(world)
    with anyio.fail_after(WAIT):
        try:
            reply = await read(world, raw, sent.events)
        except BROKEN as exc:
            where = f"on {sent.wire!r}, after {before}"
            raise AssertionError(f"the connection broke ({exc!r}) {where}") from exc
    world.statuses[reply.status] += 1
    problems = [verdict_problem(v, reply, world) for v in sent.verdicts]
    summary = (
        f"{sent.wire!r} -> {reply.status} {reply.headers.get('content-type')} {reply.body[:300]!r}"
    )
    assert reply.status in ALLOWED, summary
    assert None in problems, f"{summary}\nexpected {sent.verdicts}: {problems}\nafter {before}"
    if reply.headers.get("connection", "").lower() == "close":
        world.reconnects += 1
        await hang_up(world)
    return summary


async def probe(world: World) -> None:
    """The server still answers both eras on the same connection."""
    wire = modern_wire(-7, "tools/list")
    reply = await send(world, "POST", "/mcp", materialize(wire, world), wire.body)
    assert reply.status == 200, reply
    assert {tool["name"] for tool in reply.json()["result"]["tools"]} <= TOOLS, reply
    wire = legacy_wire(-8, "ping")
    reply = await send(world, "POST", "/mcp", materialize(wire, world), wire.body)
    assert (reply.status, reply.json()) == (200, {"jsonrpc": "2.0", "id": -8, "result": {}})


async def run_case(world: World, wires: list[Wire], pipelined: bool) -> None:
    """Each request in turn; ``pipelined``: written before the replies to the ones
    ahead of it are read, up to one that rightly closes the connection."""
    before = "nothing"
    queue = list(wires)
    while queue:
        raw = await connect(world)
        batch: list[Sent] = []
        for wire in queue:
            batch.append(prepare(world, wire))
            if not pipelined or batch[-1].closes:
                break
        try:
            for sent in batch:
                await write(raw, sent.events)
        except BROKEN as exc:
            raise AssertionError(f"the connection broke ({exc!r}), after {before}") from exc
        for sent in batch:
            before = await check_reply(world, sent, before)
        del queue[: len(batch)]
    await probe(world)


async def open_sessions(world: World) -> None:
    for placeholder, version in BASE_SESSIONS.items():
        reply = await send(world, "POST", "/mcp", post_headers(), dumps(init_body(version)))
        sid = reply.headers["mcp-session-id"]
        world.sids[placeholder] = sid.encode()
        world.versions[sid] = version
        headers = post_headers(("mcp-session-id", sid), ("mcp-protocol-version", version))
        done = await send(world, "POST", "/mcp", headers, dumps(note("notifications/initialized")))
        assert done.status == 202, done


async def close_all(world: World) -> None:
    """Delete every session; nothing may be left behind."""
    http = world.http
    stats = http.stats()
    assert stats["sessions"] == len(world.versions), (stats, len(world.created))
    assert stats["sessions_pending"] == 0, stats
    for sid in world.versions:
        reply = await send(world, "DELETE", "/mcp", (("mcp-session-id", sid.encode()),), b"")
        assert reply.status == 200, reply
    await hang_up(world)
    with anyio.fail_after(WAIT):
        while (
            http.stats()["connections"]
            or http.stats()["busy_requests"]
            or http.stats()["tasks"] > 1  # the idle-session reaper
            or http.server.connections
        ):
            await anyio.sleep(0.01)
    stats = http.stats()
    assert (stats["sessions"], stats["sessions_pending"], stats["sse_connections"]) == (0, 0, 0)
    assert len(http.event_store) == 0  # type: ignore[arg-type]


# -- strategies ----------------------------------------------------------------------------

REQUESTS: dict[str, tuple[str, ...]] = {
    "initialize": ("protocolVersion", "capabilities", "clientInfo"),
    "ping": (),
    "server/discover": (),
    "tools/list": ("cursor",),
    "tools/call": ("name", "arguments"),
    "resources/list": ("cursor",),
    "resources/templates/list": ("cursor",),
    "resources/read": ("uri",),
    "resources/subscribe": ("uri",),
    "resources/unsubscribe": ("uri",),
    "prompts/list": ("cursor",),
    "prompts/get": ("name", "arguments"),
    "completion/complete": ("ref", "argument"),
    "logging/setLevel": ("level",),
    "tasks/get": ("taskId",),
    "tasks/list": ("cursor",),
    "tasks/cancel": ("taskId",),
    "tasks/result": ("taskId",),
    "subscriptions/listen": ("notifications",),
    # Not served: answered with an error all the same.
    "no/such": ("name", "uri"),
    "": (),
    "rpc.discover": (),
    "notifications/initialized": (),
}
NOTIFICATIONS = (
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "notifications/roots/list_changed",
    "notifications/unknown",
)

request_ids: st.SearchStrategy[RequestId] = st.one_of(
    int64, texts, st.sampled_from([0, -1, "", "0", 2**63 - 1, 2**64 - 1, -(2**63)])
)
#: Values no request id may be (MCP: a string or an integer).
odd_ids = st.sampled_from([None, 1.5, True, False, [], {}, [1], {"a": 1}])
arguments = st.fixed_dictionaries(
    {},
    optional={
        "message": st.one_of(texts, json_values),
        "a": st.one_of(int64, json_values),
        "b": int64,
        "steps": st.integers(-1, 4),
        "region": st.one_of(texts, st.integers(-9, 9)),
        "count": st.one_of(
            st.integers(-(2**60), 2**60), st.sampled_from([3.0, 2.5, 2**53, -(2**53)])
        ),
        "flag": st.one_of(st.booleans(), st.none()),
        "name": st.one_of(texts, json_values),
    },
)
NEAR: dict[str, st.SearchStrategy[Any]] = {
    "name": st.sampled_from([*sorted(TOOLS), "greet", "nope", ""]),
    "uri": st.sampled_from(["mem://text", "mem://items/1", "mem://nope", ""]),
    "arguments": arguments,
    "cursor": texts,
    "level": st.sampled_from(LOG_LEVELS),
    "protocolVersion": st.sampled_from([*LEGACY_VERSIONS, MODERN, "1999-01-01"]),
    "capabilities": st.just({}),
    "clientInfo": st.just({"name": "fuzz", "version": "1"}),
    "notifications": st.fixed_dictionaries(
        {},
        optional={
            "toolsListChanged": st.booleans(),
            "resourceSubscriptions": st.lists(st.just("mem://text"), max_size=1),
        },
    ),
    "ref": st.sampled_from(
        [{"type": "ref/prompt", "name": "greet"}, {"type": "ref/resource", "uri": "mem://x"}]
    ),
    "argument": st.fixed_dictionaries({"name": st.just("style"), "value": texts}),
    "taskId": texts,
}
good_meta = st.fixed_dictionaries(
    {PV: st.just(MODERN), CAPS: st.sampled_from([{}, {"elicitation": {}}])},
    optional={
        "progressToken": st.one_of(int64, texts),
        LOG_LEVEL: st.sampled_from(LOG_LEVELS),
        CLIENT_INFO: json_objects,
    },
)
odd_meta = st.one_of(
    st.just({CAPS: {}}),
    st.just({PV: MODERN}),
    st.builds(lambda v: {PV: v, CAPS: {}}, st.sampled_from(["2099-01-01", LEGACY, ""])),
    st.builds(lambda v: {PV: v, CAPS: {}}, json_values),
    json_values.filter(lambda v: not isinstance(v, dict)),
)


@st.composite
def params_for(draw: st.DrawFn, method: str) -> dict[str, Any]:
    """Some of the keys ``method`` reads, holding values near valid or any JSON, and
    maybe another key."""
    keys = REQUESTS.get(method, ())
    chosen = draw(st.lists(st.sampled_from(keys), unique=True)) if keys else []
    params = {key: draw(st.one_of(NEAR[key], json_values)) for key in chosen}
    if draw(st.integers(0, 5)) == 5:
        params.update(draw(st.dictionaries(texts, json_values, max_size=2)))
    return params


#: Changes to the routing headers of a modern request.
routing_edits = st.one_of(
    st.tuples(st.just("drop"), st.sampled_from(["mcp-method", "mcp-name", "mcp-protocol-version"])),
    st.tuples(st.just("dup"), st.sampled_from(["mcp-method", "mcp-name", "mcp-protocol-version"])),
    st.tuples(st.just("b64"), st.sampled_from(["mcp-name", "mcp-param-region"])),
    st.tuples(st.just("upper"), st.sampled_from(["mcp-method", "mcp-name"])),
    st.tuples(
        st.just("set"), st.just("mcp-method"), st.sampled_from(["tools/list", "Tools/Call", ""])
    ),
    st.tuples(
        st.just("set"),
        st.just("mcp-name"),
        st.sampled_from(["nope", "=?base64?!!?=", "=?base64?ZWNobw=?=", "=?base64?/w==?=", "echo"]),
    ),
    st.tuples(st.just("raw"), st.sampled_from(["mcp-name", "mcp-param-region"]), st.just("zürich")),
    st.tuples(
        st.just("set"),
        st.just("mcp-protocol-version"),
        st.sampled_from([LEGACY, "1999-01-01", ""]),
    ),
    st.tuples(
        st.just("set"),
        st.sampled_from(["mcp-param-region", "mcp-param-count", "mcp-param-flag"]),
        st.sampled_from(["eu", "3", "3.0", "03", "-0", "true", "=?base64?ZXU=?=", "=?base64?#?="]),
    ),
    st.tuples(st.just("drop"), st.sampled_from(["mcp-param-region", "mcp-param-count"])),
    st.tuples(st.just("dup"), st.sampled_from(["mcp-param-region", "mcp-param-flag"])),
    st.tuples(st.just("add"), st.just("mcp-param-other"), st.just("1")),
    st.tuples(st.just("add"), st.just("mcp-session-id"), st.sampled_from(["@legacy", "nope"])),
)


def routing_edit_lists(size: int) -> st.SearchStrategy[list[Edit]]:
    return st.lists(routing_edits, min_size=size, max_size=size)


@st.composite
def modern_requests(draw: st.DrawFn) -> Wire:
    method = draw(st.sampled_from(sorted(REQUESTS)))
    params = draw(params_for(method))
    if method == "tools/call" and draw(st.booleans()):
        params = {"name": "routed", "arguments": draw(arguments)}
    meta = draw(st.sampled_from(["good"] * 5 + ["odd", "none"]))
    if meta == "good":
        params["_meta"] = draw(good_meta)
    elif meta == "odd":
        params["_meta"] = draw(odd_meta)
    body = dumps(rpc(draw(request_ids), method, params))
    wire = Wire(body, post_headers(*routing_headers(method, params)))
    # Most requests keep the headers a client sends, so that they reach their handler.
    for change in draw(st.sampled_from([0, 0, 0, 0, 1, 1, 2]).flatmap(routing_edit_lists)):
        wire = edit(wire, change)
    return wire


#: The session a legacy message names: a live one mostly; none, unknown, or repeated.
session_headers = st.sampled_from(
    [(b"@legacy",), (b"@june",), (b"@batch",)] * 3
    + [(), (b"nope",), (b"",), (b"@legacy", b"@legacy"), (b"\xff\xfe",), (b"A" * 43,)]
)


@st.composite
def legacy_headers(draw: st.DrawFn) -> Headers:
    """A session header (or none, or a bad one) and a version header."""
    sessions = draw(session_headers)
    version = BASE_SESSIONS.get(sessions[0], LEGACY) if sessions else LEGACY
    versions = draw(
        st.sampled_from([(version,)] * 4 + [(), ("2025-03-26",), (MODERN,), ("bogus",)])
    )
    extra = [("mcp-session-id", sid) for sid in sessions]
    extra += [("mcp-protocol-version", v.encode()) for v in versions]
    if draw(st.integers(0, 7)) == 7:
        extra.append(("mcp-method", b"ping"))
    return post_headers(*extra)


@st.composite
def legacy_requests(draw: st.DrawFn) -> Wire:
    method = draw(st.sampled_from(sorted(REQUESTS)))
    params: dict[str, Any] | None = draw(params_for(method))
    if method == "initialize" and draw(st.booleans()):
        params = init_body(draw(st.sampled_from(LEGACY_VERSIONS)))["params"]
    if draw(st.integers(0, 7)) == 7:
        params = {**(params or {}), "_meta": draw(st.one_of(good_meta, odd_meta))}
    elif not params and draw(st.booleans()):
        params = None
    return Wire(dumps(rpc(draw(request_ids), method, params)), draw(legacy_headers()))


@st.composite
def notifications(draw: st.DrawFn) -> Wire:
    method = draw(st.sampled_from(NOTIFICATIONS))
    params = draw(st.one_of(st.none(), json_objects, st.builds(lambda r: {"requestId": r}, int64)))
    era = draw(st.sampled_from(["modern", "legacy", "odd"]))
    if era == "modern":  # no session; the version header, or none for a cancellation
        sessions: tuple[bytes, ...] = ()
        versions = draw(st.sampled_from([(MODERN,), ()]))
    elif era == "legacy":
        sessions = draw(st.sampled_from([(b"@legacy",), (b"@june",), (b"@batch",)]))
        versions = draw(st.sampled_from([(BASE_SESSIONS[sessions[0]],), ()]))
    else:
        sessions = draw(session_headers)
        versions = draw(st.sampled_from([(), (MODERN,), (LEGACY,), ("2099-01-01",)]))
    extra = [("mcp-session-id", sid) for sid in sessions]
    extra += [("mcp-protocol-version", v.encode()) for v in versions]
    return Wire(dumps(note(method, params)), post_headers(*extra))


@st.composite
def client_answers(draw: st.DrawFn) -> Wire:
    """What a client POSTs back: a response, an error response, or a broken one."""
    rid = draw(request_ids)
    message = draw(
        st.sampled_from(
            [
                {"jsonrpc": "2.0", "id": rid, "result": {}},
                {"jsonrpc": "2.0", "id": rid, "result": {"action": "accept"}},
                {"jsonrpc": "2.0", "id": rid, "error": {"code": -1, "message": "no"}},
                {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "no"}},
                {"jsonrpc": "2.0", "id": rid, "result": ["accept"]},
                {"jsonrpc": "2.0", "id": rid, "result": {}, "error": {}},
                {"jsonrpc": "2.0", "id": rid, "error": {"code": "x"}},
                {"jsonrpc": "1.0", "id": rid, "result": {}},
                {"jsonrpc": "2.0", "id": 1.5, "result": {}},
            ]
        )
    )
    sessions = draw(st.one_of(session_headers, st.just(())))
    return Wire(dumps(message), post_headers(*[("mcp-session-id", sid) for sid in sessions]))


#: Batch elements that are no message (each answered with -32600 in a batch).
ODD_ITEMS: list[Any] = [
    1,
    "x",
    None,
    [],
    {},
    {"jsonrpc": "1.0", "id": "bad", "method": "ping"},
    {"jsonrpc": "2.0", "id": "m", "method": 1},
]


@st.composite
def batches(draw: st.DrawFn) -> Wire:
    items: list[Any] = []
    for n in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["request", "request", "note", "answer", "odd"]))
        if kind == "request":
            method = draw(
                st.sampled_from(["ping", "tools/list", "tools/call", "initialize", "no/such"])
            )
            items.append(rpc(n, method, draw(params_for(method)) or None))
        elif kind == "note":
            items.append(note(draw(st.sampled_from(NOTIFICATIONS))))
        elif kind == "answer":
            items.append({"jsonrpc": "2.0", "id": 1000 + n, "result": {}})
        else:
            items.append(draw(st.sampled_from(ODD_ITEMS)))
    sessions = draw(st.sampled_from([(b"@batch",), (b"@batch",), (b"@legacy",), ()]))
    return Wire(dumps(items), post_headers(*[("mcp-session-id", sid) for sid in sessions]))


def deep(depth: int) -> bytes:
    return (
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":'
        + b"[" * depth
        + b"]" * depth
        + b"}}"
    )


@st.composite
def raw_bodies(draw: st.DrawFn) -> Wire:
    """Bodies that are not one well-formed message, in either era's clothes."""
    valid = dumps(rpc(draw(request_ids), "tools/list", {"_meta": {PV: MODERN, CAPS: {}}}))
    body = draw(
        st.one_of(
            st.sampled_from(
                [
                    b"",
                    b"{",
                    b"nul",
                    b"[1,",
                    b"{'a': 1}",
                    b"NaN",
                    b"\xff\xfe",
                    b'{"jsonrpc":"2.0","id":1,"method":"\xff"}',
                    b"\xef\xbb\xbf" + valid,
                    valid + b" x",
                    b"[]",
                    b'{"jsonrpc":"2.0","id":18446744073709551616,"method":"ping"}',
                    b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"n":-9223372036854775809}}',
                    b'{"jsonrpc":"2.0","method":"notifications/x","params":{"n":99999999999999999999}}',
                    deep(64),
                    deep(200),
                ]
            ),
            st.builds(lambda n: valid[:n], st.integers(0, len(valid) - 1)),
            json_values.filter(lambda v: not isinstance(v, (dict, list))).map(dumps),
            st.builds(lambda rid: dumps(rpc(rid, "ping")), odd_ids),
            st.builds(
                lambda p: dumps({"jsonrpc": "2.0", "id": 3, "method": "ping", "params": p}), odd_ids
            ),
        )
    )
    headers = draw(
        st.sampled_from(
            [
                post_headers(("mcp-protocol-version", MODERN), ("mcp-method", "tools/list")),
                post_headers(("mcp-session-id", b"@legacy")),
                post_headers(("mcp-session-id", b"@batch")),
                post_headers(),
            ]
        )
    )
    return Wire(body, headers)


@st.composite
def other_verbs(draw: st.DrawFn) -> Wire:
    verb = draw(st.sampled_from(["GET", "GET", "DELETE", "PUT", "PATCH", "OPTIONS"]))
    headers: list[tuple[str, bytes]] = []
    sessions = draw(st.sampled_from([(), (b"nope",), (b"@legacy", b"@legacy"), (b"@legacy",)]))
    if verb == "DELETE" and sessions == (b"@legacy",):
        sessions = (b"nope",)  # deleting a session the test uses is not a hostile act
    headers += [("mcp-session-id", sid) for sid in sessions]
    if verb == "GET" and sessions == (b"@legacy",):
        headers.append(("last-event-id", draw(st.sampled_from([b"999999:1", b"x"]))))
    for v in draw(st.sampled_from([(), (MODERN,), (LEGACY,), ("bogus",)])):
        headers.append(("mcp-protocol-version", v.encode()))
    accept = draw(st.sampled_from(["text/event-stream", "application/json", None]))
    if accept is not None:
        headers.append(("accept", accept.encode()))
    body = b"{}" if verb in ("PUT", "PATCH") else b""
    return Wire(body, tuple(headers), verb)


@st.composite
def with_transport(draw: st.DrawFn, wire: Wire) -> Wire:
    """Maybe one change to what the HTTP layer judges first."""
    kinds = ["accept", "type", "host", "origin", "path", "size"]
    kind = draw(st.sampled_from([None] * 3 * len(kinds) + kinds))
    if kind == "accept":
        value = draw(st.sampled_from(list(ACCEPTS)))
        wire = edit(wire, ("drop", "accept") if value is None else ("set", "accept", value))
    elif kind == "type":
        value = draw(st.sampled_from(list(CONTENT_TYPES)))
        wire = edit(
            wire, ("drop", "content-type") if value is None else ("set", "content-type", value)
        )
    elif kind == "host":
        wire = edit(wire, ("set", "host", draw(st.sampled_from(sorted(HOSTS)))))
    elif kind == "origin":
        wire = edit(wire, ("set", "origin", draw(st.sampled_from(sorted(ORIGINS)))))
    elif kind == "path":
        wire = replace(wire, path=draw(st.sampled_from(sorted(PATHS))))
    elif kind == "size" and wire.verb == "POST":
        pad = MAX_BODY + 1 - len(wire.body) + draw(st.integers(0, 500))
        wire = replace(wire, body=wire.body + b" " * max(pad, 0))
    if wire.verb == "POST":
        wire = replace(wire, framing=draw(st.sampled_from(["length"] * 6 + ["chunked", "expect"])))
    return wire


wires = st.one_of(
    modern_requests(),
    modern_requests(),
    legacy_requests(),
    legacy_requests(),
    notifications(),
    client_answers(),
    batches(),
    raw_bodies(),
    other_verbs(),
).flatmap(with_transport)


# -- the examples: each kind of perturbation, whatever hypothesis draws --------------------

ROUTED_ARGS = {"region": "eu", "count": 3, "flag": True}
ROUTED = modern_wire(1, "tools/call", {"name": "routed", "arguments": ROUTED_ARGS})
ZURICH = modern_wire(2, "tools/call", {"name": "routed", "arguments": {"region": "zürich"}})
STAMPED_INIT = modern_wire(9, "initialize", {"protocolVersion": MODERN})

HEADER_CASES = [
    ROUTED,
    ZURICH,
    edit(ROUTED, ("drop", "mcp-method")),
    edit(ROUTED, ("set", "mcp-method", "tools/list")),
    edit(ROUTED, ("dup", "mcp-method")),
    edit(ROUTED, ("upper", "mcp-method")),
    edit(ROUTED, ("drop", "mcp-name")),
    edit(ROUTED, ("set", "mcp-name", "echo")),
    edit(ROUTED, ("b64", "mcp-name")),
    edit(ROUTED, ("set", "mcp-name", "=?base64?!!?=")),
    edit(ROUTED, ("raw", "mcp-name", "röuted")),
    edit(ROUTED, ("dup", "mcp-name")),
    edit(ROUTED, ("drop", "mcp-protocol-version")),
    edit(ROUTED, ("set", "mcp-protocol-version", "1999-01-01")),
    edit(ROUTED, ("dup", "mcp-protocol-version")),
    edit(ROUTED, ("drop", "mcp-param-count")),
    edit(ROUTED, ("set", "mcp-param-count", "4")),
    edit(ROUTED, ("set", "mcp-param-count", "3.0")),
    edit(ROUTED, ("b64", "mcp-param-region")),
    edit(ROUTED, ("set", "mcp-param-region", "=?base64?#?=")),
    edit(ZURICH, ("raw", "mcp-param-region", "zürich")),
    edit(ROUTED, ("dup", "mcp-param-flag")),
    edit(ZURICH, ("add", "mcp-param-flag", "false")),
    # An integer no header can carry: the client sends no Mcp-Param-Count for it.
    modern_wire(3, "tools/call", {"name": "routed", "arguments": {"count": 2**60}}),
    edit(ROUTED, ("add", "mcp-session-id", "@legacy")),
]
ENVELOPE_CASES = [
    Wire(
        dumps(rpc(1, "tools/list", {"_meta": {PV: MODERN}})), modern_wire(1, "tools/list").headers
    ),
    Wire(dumps(rpc(2, "tools/list", {"_meta": {CAPS: {}}})), modern_wire(2, "tools/list").headers),
    Wire(dumps(rpc(3, "tools/list", {"_meta": 7})), modern_wire(3, "tools/list").headers),
    Wire(dumps(rpc(4, "tools/list")), modern_wire(4, "tools/list").headers),
    edits(
        Wire(
            dumps(rpc(5, "tools/list", {"_meta": {PV: "2099-01-01", CAPS: {}}})),
            modern_wire(5, "tools/list").headers,
        ),
        ("set", "mcp-protocol-version", "2099-01-01"),
    ),
    modern_wire(6, "no/such/method"),
    modern_wire(7, "ping"),
    STAMPED_INIT,
    modern_wire("sub", "subscriptions/listen", {"notifications": {"toolsListChanged": True}}),
    edit(
        modern_wire(8, "subscriptions/listen", {"notifications": {}}),
        ("set", "accept", "application/json"),
    ),
    modern_wire(10, "tools/call", {"name": "report", "arguments": {"steps": 2}}, progressToken=1),
    modern_wire(11, "tools/call", {"name": "report"}, **{LOG_LEVEL: "debug"}),
    modern_wire(12, "tools/call", {"name": "fail", "arguments": {"message": "x"}}),
    modern_wire(13, "tools/call", {"name": "add", "arguments": {"a": -(2**63), "b": -(2**63)}}),
    modern_wire(14, "prompts/get", {"name": "greet", "arguments": {"name": [1]}}),
    modern_wire(15, "resources/read", {"uri": "mem://items/7"}),
    modern_wire(16, "server/discover"),
]
LEGACY_CASES = [
    legacy_wire(1, "ping"),
    legacy_wire(
        2,
        "tools/call",
        {"name": "report", "arguments": {"steps": 2}, "_meta": {"progressToken": "p"}},
    ),
    legacy_wire(3, "logging/setLevel", {"level": "debug"}),
    legacy_wire(4, "tools/call", {"name": "report"}, session=b"@june"),
    legacy_wire(5, "tools/call", {"name": "fail"}),
    legacy_wire(6, "subscriptions/listen", {"notifications": {}}),
    edit(legacy_wire(7, "ping"), ("drop", "mcp-session-id")),
    edit(legacy_wire(8, "ping"), ("set", "mcp-session-id", "nope")),
    edit(legacy_wire(9, "ping"), ("dup", "mcp-session-id")),
    edit(legacy_wire(10, "ping"), ("set", "mcp-protocol-version", "bogus")),
    edit(legacy_wire(11, "ping"), ("set", "mcp-protocol-version", MODERN)),
    edit(legacy_wire(12, "ping"), ("set", "mcp-protocol-version", "2025-03-26")),
    edit(legacy_wire(13, "ping"), ("set", "accept", "text/event-stream")),
    Wire(dumps(init_body("2025-06-18", 14)), post_headers()),
    edit(
        Wire(dumps(init_body(LEGACY, 15)), post_headers()), ("set", "accept", "text/event-stream")
    ),
    Wire(dumps(rpc(16, "initialize", {"protocolVersion": 5})), post_headers()),
    Wire(dumps(rpc(17, "ping")), post_headers()),
    Wire(dumps(rpc(18, "ping")), post_headers(("mcp-protocol-version", MODERN))),
]
MESSAGE_CASES = [
    Wire(dumps(note("notifications/progress", {"progressToken": 1})), legacy_wire(0, "x").headers),
    Wire(dumps(note("notifications/cancelled", {"requestId": 1})), post_headers()),
    Wire(dumps(note("notifications/cancelled")), post_headers(("mcp-protocol-version", MODERN))),
    Wire(
        dumps(note("notifications/cancelled")), post_headers(("mcp-protocol-version", "2099-01-01"))
    ),
    Wire(dumps(note("notifications/initialized")), post_headers()),
    Wire(dumps(note("notifications/initialized")), post_headers(("mcp-session-id", b"nope"))),
    Wire(b'{"jsonrpc":"1.0","method":"notifications/x"}', legacy_wire(0, "x").headers),
    Wire(b'{"jsonrpc":"2.0","method":"notifications/x","params":[1]}', post_headers()),
    Wire(dumps({"jsonrpc": "2.0", "id": 5, "result": {}}), legacy_wire(0, "x").headers),
    Wire(dumps({"jsonrpc": "2.0", "id": 5, "error": {"code": 1, "message": "m"}}), post_headers()),
    Wire(dumps({"jsonrpc": "2.0", "id": 5, "result": [1]}), legacy_wire(0, "x").headers),
    Wire(dumps({"jsonrpc": "2.0", "id": 5, "result": [1]}), post_headers()),
    Wire(
        dumps({"jsonrpc": "2.0", "id": 5, "result": {}}), post_headers(("mcp-session-id", b"nope"))
    ),
]
BATCH_HEADERS = post_headers(("mcp-session-id", b"@batch"))
BATCH_CASES = [
    Wire(
        dumps([rpc(1, "ping"), note("notifications/x"), rpc(2, "tools/list"), {"bad": 1}]),
        BATCH_HEADERS,
    ),
    Wire(
        dumps([note("notifications/x"), {"jsonrpc": "2.0", "id": 9, "result": {}}]), BATCH_HEADERS
    ),
    Wire(dumps([1, 2, "x"]), BATCH_HEADERS),
    Wire(dumps([init_body("2025-03-26", 3), rpc(4, "ping")]), BATCH_HEADERS),
    Wire(b"[]", BATCH_HEADERS),
    Wire(dumps([rpc(5, "ping")]), legacy_wire(0, "x").headers),
    Wire(dumps([rpc(6, "ping")]), post_headers()),
]
BODY_CASES = [
    Wire(body, modern_wire(1, "tools/list").headers)
    for body in [
        b"",
        b"not json",
        b"\xff\xfe",
        b'{"jsonrpc":"2.0","id":1,"method"',
        b"42",
        b'"text"',
        b"[]",
        b'{"jsonrpc":"2.0","id":18446744073709551616,"method":"tools/list"}',
        deep(200),
        b"\xef\xbb\xbf{}",
        b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}',
        b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":[1]}',
    ]
]
TRANSPORT_CASES = [
    edit(modern_wire(1, "tools/list"), ("set", "accept", "text/html")),
    edit(modern_wire(2, "tools/list"), ("set", "accept", "text/event-stream")),
    edit(modern_wire(3, "tools/list"), ("set", "accept", "application/json")),
    edit(modern_wire(4, "tools/list"), ("drop", "accept")),
    edit(modern_wire(5, "tools/list"), ("set", "content-type", "text/plain")),
    edit(modern_wire(6, "tools/list"), ("drop", "content-type")),
    edit(modern_wire(7, "tools/list"), ("set", "content-type", "application/json; charset=utf-8")),
    edit(modern_wire(8, "tools/list"), ("set", "host", "evil.example")),
    edit(modern_wire(9, "tools/list"), ("set", "origin", "http://evil.example")),
    edit(modern_wire(10, "tools/list"), ("set", "origin", "http://localhost:5173")),
    Wire(modern_wire(11, "tools/list").body, modern_wire(11, "tools/list").headers, path="/"),
    Wire(
        modern_wire(12, "tools/list").body + b" " * MAX_BODY, modern_wire(12, "tools/list").headers
    ),
    Wire(b"{}", post_headers(), "PUT"),
    Wire(b"", (("mcp-protocol-version", MODERN.encode()), ("accept", b"text/event-stream")), "GET"),
    Wire(b"", (("mcp-session-id", b"@legacy"), ("accept", b"application/json")), "GET"),
    Wire(b"", (("accept", b"text/event-stream"),), "GET"),
    Wire(b"", (("mcp-session-id", b"nope"), ("accept", b"text/event-stream")), "GET"),
    Wire(
        b"",
        (
            ("mcp-session-id", b"@legacy"),
            ("accept", b"text/event-stream"),
            ("last-event-id", b"999999:1"),
        ),
        "GET",
    ),
    Wire(b"", (("mcp-session-id", b"nope"),), "DELETE"),
    Wire(b"", (("mcp-protocol-version", MODERN.encode()),), "DELETE"),
]
FRAMING_CASES = [
    replace(
        modern_wire(1, "tools/call", {"name": "echo", "arguments": {"message": "c"}}), framing=f
    )
    for f in ("chunked", "expect")
] + [
    replace(TRANSPORT_CASES[11], framing="chunked"),
    replace(TRANSPORT_CASES[11], framing="expect"),
    replace(legacy_wire(2, "ping"), framing="chunked"),
    replace(BATCH_CASES[0], framing="expect"),
]
#: (cases, pipelined): each kind of perturbation, one request at a time and pipelined.
EXAMPLES = [
    (HEADER_CASES, False),
    (ENVELOPE_CASES, False),
    (LEGACY_CASES, False),
    (MESSAGE_CASES, False),
    (BATCH_CASES, False),
    (BODY_CASES, False),
    (TRANSPORT_CASES, False),
    (FRAMING_CASES, False),
    (LEGACY_CASES + MESSAGE_CASES + ENVELOPE_CASES, True),
    (TRANSPORT_CASES + FRAMING_CASES, True),
]


# -- the test ------------------------------------------------------------------------------


def test_hostile_http_clients_get_the_answer_the_rules_call_for(
    anyio_backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    world: World
    with (
        caplog.at_level(logging.ERROR, logger="mcpwire"),
        anyio.from_thread.start_blocking_portal(anyio_backend) as portal,
        portal.wrap_async_context_manager(running(fuzz_app(), max_body_size=MAX_BODY)) as http,
    ):
        world = World(http, http.port or 0)
        portal.call(open_sessions, world)

        def check(cases: list[Wire], pipelined: bool) -> None:
            logged = len(caplog.records)
            try:
                portal.call(run_case, world, cases, pipelined)
            except BaseException:
                portal.call(hang_up, world)  # the next case starts on a clean connection
                raise
            errors = [r for r in caplog.records[logged:] if r.levelno >= logging.ERROR]
            assert not errors, "\n".join(caplog.text.splitlines()[-40:])

        fuzz = given(cases=st.lists(wires, min_size=1, max_size=6), pipelined=st.booleans())(check)
        for cases, pipelined in EXAMPLES:
            fuzz = example(cases=cases, pipelined=pipelined)(fuzz)
        settings(
            max_examples=500,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )(fuzz)()
        portal.call(close_all, world)
    # The examples and the drawn cases reached every kind of answer.
    assert set(world.statuses) >= ALLOWED, world.statuses
    assert world.kinds >= {"json", "sse", "text", "error", "accepted", "batch"}, world.kinds
    assert world.codes >= {-32700, -32600, -32601, -32602, -32020, -32022}, world.codes
    assert world.reconnects > 0
