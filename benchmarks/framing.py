"""Section 5's framing workloads: decoding a stream of messages, whole and in small chunks.

One operation is one message taken out of a stream of ``STREAM_MESSAGES`` typical
``tools/call`` requests and results (alternating, about 200 bytes each), as it
comes off a pipe (newline-delimited JSON) or out of an HTTP response body
(``text/event-stream``). The stream is fed whole (one chunk) or in ``CHUNK``-byte
pieces cut before the clock starts; a fresh decoder takes each pass.

What each implementation does:

- ``split``: ``bytes.split`` on newlines, and for chunks the same over a buffer that
  keeps the unfinished tail. No line limit, no error reporting: the least any
  Python framer can do, so the limit the ndjson rows are compared with.
- ``mcpwire`` (ndjson): ``mcpwire.sansio.NDJSONReader``, the stdio transports' framer
  (bounded lines, oversized and non-JSON lines reported).
- ``mcpwire+parse``: the same, then ``mcpwire.sansio.parse`` on each line: what a
  stdio transport does with what it reads.
- ``sdk+parse``: the reference SDK's message parser (``jsonrpc_message_adapter``,
  pydantic, as its stdio transports call it) on each line of ``split``.
- ``sdk`` (SSE): the reference SDK's SSE reader, ``httpx2.EventSource`` over an
  ``httpx2.Response`` whose body is the chunks (its text decoding included, as the
  SDK's streamable HTTP client uses it).
- ``mcpwire`` (SSE): ``mcpwire.sansio.SSEDecoder``, the HTTP client's decoder.

Each workload checks that it got every message back before it is timed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

#: Messages in one stream: one decoder's work per pass.
STREAM_MESSAGES = 200
#: The small chunks' size, in bytes (a slow network's segments, a reader's short reads).
CHUNK = 16


def messages(request: bytes, response: bytes) -> list[bytes]:
    """The stream's messages without line ends: ``request % id`` and ``response % id`` in turn."""
    out = []
    for i in range(STREAM_MESSAGES):
        line = (request if i % 2 == 0 else response) % (i // 2 + 1)
        out.append(line.rstrip(b"\n"))
    return out


def ndjson_stream(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def sse_stream(lines: list[bytes]) -> bytes:
    """Each message as one event, as a streamable HTTP server sends it: an id and one data line."""
    return b"".join(b"id: %d\nevent: message\ndata: %s\n\n" % (i, m) for i, m in enumerate(lines))


def cut(data: bytes, size: int) -> list[bytes]:
    """``data`` in pieces of ``size`` bytes (``0``: whole)."""
    if size == 0:
        return [data]
    return [data[i : i + size] for i in range(0, len(data), size)]


# -- one pass over a stream: returns the messages (or events) it got --------------------


def _split_pass(pieces: list[bytes]) -> list[bytes]:
    if len(pieces) == 1:
        return [line for line in pieces[0].split(b"\n") if line]
    out: list[bytes] = []
    tail = b""
    for piece in pieces:
        lines = (tail + piece).split(b"\n")
        tail = lines.pop()
        out.extend(line for line in lines if line)
    if tail:
        out.append(tail)
    return out


def _decode(decoder: Any, pieces: list[bytes]) -> list[Any]:
    """Everything a sans-IO decoder (``feed``, ``feed_eof``) makes of the pieces."""
    feed = decoder.feed
    out: list[Any] = []
    for piece in pieces:
        out += feed(piece)
    out += decoder.feed_eof()
    return out


def _ndjson_pass(pieces: list[bytes]) -> list[Any]:
    from mcpwire.sansio import NDJSONReader

    return _decode(NDJSONReader(), pieces)


def _ndjson_parse_pass(pieces: list[bytes]) -> list[Any]:
    from mcpwire.sansio import parse

    return [parse(line) for line in _ndjson_pass(pieces)]


def _sdk_parse_pass(pieces: list[bytes]) -> list[Any]:
    from mcp import types

    validate = types.jsonrpc_message_adapter.validate_json
    return [validate(line, by_name=False) for line in _split_pass(pieces)]


def _sse_mcpwire_pass(pieces: list[bytes]) -> list[Any]:
    from mcpwire.sansio import SSEDecoder

    return _decode(SSEDecoder(), pieces)


def _sse_sdk_pass(pieces: list[bytes]) -> list[Any]:
    import httpx2

    response = httpx2.Response(
        200,
        headers={"content-type": "text/event-stream"},
        content=iter(pieces),
        request=httpx2.Request("POST", "http://127.0.0.1/mcp"),
    )
    return list(httpx2.EventSource(response))


PASSES: dict[tuple[str, str], Callable[[list[bytes]], list[Any]]] = {
    ("ndjson", "split"): _split_pass,
    ("ndjson", "mcpwire"): _ndjson_pass,
    ("ndjson", "mcpwire+parse"): _ndjson_parse_pass,
    ("ndjson", "sdk+parse"): _sdk_parse_pass,
    ("sse", "mcpwire"): _sse_mcpwire_pass,
    ("sse", "sdk"): _sse_sdk_pass,
}


def _data(item: Any) -> bytes:
    """The message an item carries: a line (bytes), an event's data, a parsed message."""
    if isinstance(item, bytes):
        return item
    data = getattr(item, "data", None)
    if isinstance(data, str):
        return data.encode()
    return b""


def loop_for(
    kind: str, impl: str, chunk: int, request: bytes, response: bytes
) -> tuple[Callable[[int], float], dict[str, Any]]:
    """A self-timing loop decoding ``n`` messages (``n`` a multiple of ``STREAM_MESSAGES``),
    and the workload's description for the report's JSON."""
    lines = messages(request, response)
    stream = ndjson_stream(lines) if kind == "ndjson" else sse_stream(lines)
    pieces = cut(stream, chunk)
    one_pass = PASSES[kind, impl]
    got = one_pass(pieces)
    if len(got) != STREAM_MESSAGES:
        raise RuntimeError(f"{kind}/{impl}: {len(got)} messages out of {STREAM_MESSAGES}")
    if "parse" in impl:
        kinds = {type(item).__name__ for item in got}
        if not kinds <= {"Request", "Response", "JSONRPCRequest", "JSONRPCResponse"}:
            raise RuntimeError(f"{kind}/{impl}: parsed as {sorted(kinds)}")
    elif [_data(item) for item in got] != lines:
        raise RuntimeError(f"{kind}/{impl}: the messages came back altered")

    def loop(n: int) -> float:
        passes = range(max(1, n // STREAM_MESSAGES))
        t0 = time.perf_counter()
        for _ in passes:
            one_pass(pieces)
        return time.perf_counter() - t0

    info = {"stream_bytes": len(stream), "messages": STREAM_MESSAGES, "chunk_bytes": chunk}
    return loop, info
