"""Validate captured MCP stdio traffic against the reference SDK's per-version wire types.

The reference SDK (``mcp-types==2.3.0``) ships its wire tables as public API
(``mcp_types.methods``): for every ``(method, protocol version)`` the frame model
of each request and notification and the model (or union) of each result,
generated from that revision's schema. The typed error frames of 2026-07-28
live in the internal module ``mcp_types._v2026_07_28``.

``validate_server_message`` / ``validate_client_message`` check one frame.
``check_capture`` walks a whole capture written by ``tee.py`` (``C>S`` / ``S>C``
lines), works out the protocol version of every frame, pairs responses with
the request they answer (so each result is checked against its own method's
result type) and returns every problem found, one string per bad frame.

Version of a frame:

* a client request whose ``params._meta`` carries
  ``io.modelcontextprotocol/protocolVersion`` is at that version, and so is its
  response (the modern era is per request);
* ``initialize`` is at the version it offers; its result fixes the legacy
  connection's version for every later frame without an envelope;
* a notification is at the connection's version (legacy once initialized,
  else the last modern version seen).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types._v2025_11_25 as v2025
import mcp_types._v2026_07_28 as v2026
from mcp_types import (
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from mcp_types import methods as M

__all__ = (
    "LATEST_LEGACY",
    "MODERN",
    "Frame",
    "check_capture",
    "check_input_rounds",
    "read_capture",
    "validate_client_message",
    "validate_server_message",
)

MODERN = "2026-07-28"
LATEST_LEGACY = "2025-11-25"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

#: 2026-07-28 typed error frames; every other code is a plain JSONRPCErrorResponse.
_ERRORS_2026: dict[int, Any] = {
    -32022: v2026.UnsupportedProtocolVersionError,
    -32021: v2026.MissingRequiredClientCapabilityError,
    -32020: v2026.HeaderMismatchError,
}


def validate_server_message(
    version: str, method: str | None, msg: Mapping[str, Any], *, strict: bool = True
) -> None:
    """Check one server->client frame at ``version``.

    ``method`` is the method of the request a response answers (ignored for
    other frames). ``strict`` also parses the result into the SDK's own model,
    which is what the SDK client does with every response. Raises ``KeyError``
    (no such method at that version), ``pydantic.ValidationError`` or
    ``ValueError``.
    """
    env = jsonrpc_message_adapter.validate_python(dict(msg), by_name=False)
    if isinstance(env, JSONRPCResponse):
        if method is None:
            raise ValueError("a response needs the method of the request it answers")
        check = M.parse_server_result if strict else M.validate_server_result
        check(method, version, env.result)
    elif isinstance(env, JSONRPCError):
        if version == MODERN:
            model = _ERRORS_2026.get(env.error.code, v2026.JSONRPCErrorResponse)
            model.model_validate(dict(msg), by_name=False)
        else:
            v2025.JSONRPCErrorResponse.model_validate(dict(msg), by_name=False)
    elif isinstance(env, JSONRPCNotification):
        M.parse_server_notification(env.method, version, env.params)
    else:  # a server->client request: legacy only (2026-07-28 defines none)
        M.parse_server_request(env.method, version, env.params)


def validate_client_message(version: str, method: str | None, msg: Mapping[str, Any]) -> None:
    """Check one client->server frame at ``version`` (``method``: see above)."""
    env = jsonrpc_message_adapter.validate_python(dict(msg), by_name=False)
    if isinstance(env, JSONRPCRequest):
        M.validate_client_request(env.method, version, env.params)
    elif isinstance(env, JSONRPCNotification):
        M.validate_client_notification(env.method, version, env.params)
    elif isinstance(env, JSONRPCResponse):
        if method is None:
            raise ValueError("a response needs the method of the request it answers")
        M.validate_client_result(method, version, env.result)
    elif version == MODERN:  # clients never send responses in 2026-07-28, errors included
        raise ValueError("a 2026-07-28 client must not send JSON-RPC error responses")
    else:
        v2025.JSONRPCErrorResponse.model_validate(dict(msg), by_name=False)


@dataclass(frozen=True)
class Frame:
    """One captured line: ``direction`` is ``"C>S"`` or ``"S>C"``."""

    lineno: int
    direction: str
    text: str
    msg: Any  # the parsed JSON, or None when the line is not JSON

    def __str__(self) -> str:
        return f"line {self.lineno} {self.direction} {self.text[:400]}"


def read_capture(path: str | Path) -> list[Frame]:
    frames: list[Frame] = []
    for lineno, line in enumerate(Path(path).read_text("utf-8").splitlines(), 1):
        direction, _, text = line.partition(" ")
        try:
            msg = json.loads(text)
        except ValueError:
            msg = None
        frames.append(Frame(lineno, direction, text, msg))
    return frames


def _key(rid: object) -> str:
    return json.dumps(rid)


def _meta_version(params: object) -> str | None:
    if isinstance(params, dict):
        meta = params.get("_meta")
        if isinstance(meta, dict):
            version = meta.get(META_VERSION)
            if isinstance(version, str):
                return version
    return None


def check_capture(
    frames: Iterable[Frame], *, sides: tuple[str, ...] = ("S>C", "C>S"), strict: bool = True
) -> list[str]:
    """Every problem in a capture, one string per frame that fails; ``[]`` when all pass.

    ``sides`` picks whose frames are validated (both directions are always
    read, to pair requests with responses).

    Besides the schema check, one ordering rule of stdio ``subscriptions/listen``
    is enforced on server frames: once the client has cancelled a listen
    request (``notifications/cancelled``) *and then sent another request*, the
    server must send nothing more for that subscription (no response, no
    notification carrying its subscriptionId). Frames that merely cross the
    cancel on the wire are not counted.
    """
    problems: list[str] = []
    legacy_version: str | None = None
    modern_version: str | None = None
    #: outstanding requests, by direction of the request: id -> (method, version)
    client_requests: dict[str, tuple[str, str]] = {}
    server_requests: dict[str, tuple[str, str]] = {}
    #: listen request id -> "open" | "cancelled" | "closed" (cancelled, then another request)
    listens: dict[str, str] = {}

    def connection_version() -> str:
        return legacy_version or modern_version or LATEST_LEGACY

    for frame in frames:
        msg = frame.msg
        if not isinstance(msg, dict):
            if frame.direction in sides:
                problems.append(f"{frame}: not a JSON object")
            continue
        is_request = "method" in msg and "id" in msg
        is_notification = "method" in msg and "id" not in msg
        rid = _key(msg.get("id"))
        method: str | None = None
        if frame.direction == "C>S":
            if is_request:
                method = str(msg["method"])
                version = _meta_version(msg.get("params"))
                if version is not None:
                    modern_version = version
                elif method == "initialize":
                    offered = (msg.get("params") or {}).get("protocolVersion")
                    version = offered if offered in _legacy_versions() else LATEST_LEGACY
                else:
                    version = connection_version()
                client_requests[rid] = (method, version)
                for lid, state in listens.items():
                    if state == "cancelled":
                        listens[lid] = "closed"
                if method == "subscriptions/listen":
                    listens[rid] = "open"
            elif is_notification:
                version = connection_version()
                if msg.get("method") == "notifications/cancelled":
                    target = _key((msg.get("params") or {}).get("requestId"))
                    if listens.get(target) == "open":
                        listens[target] = "cancelled"
            else:  # the client's response to a server->client request
                pending = server_requests.pop(rid, None)
                if pending is None:
                    if frame.direction in sides:
                        problems.append(f"{frame}: response to an unknown server request id")
                    continue
                method, version = pending
        else:
            if is_request:
                method = str(msg["method"])
                version = connection_version()
                server_requests[rid] = (method, version)
            elif is_notification:
                version = connection_version()
            else:
                pending = client_requests.pop(rid, None)
                if pending is None:
                    if frame.direction in sides:
                        problems.append(f"{frame}: response to an unknown client request id")
                    continue
                method, version = pending
                result = msg.get("result")
                if method == "initialize" and isinstance(result, dict):
                    agreed = result.get("protocolVersion")
                    if isinstance(agreed, str):
                        legacy_version = agreed
        if frame.direction not in sides:
            continue
        if frame.direction == "S>C":
            stream = rid if not is_notification else _key(_subscription_id(msg))
            if listens.get(stream) == "closed":
                problems.append(
                    f"{frame}\n    sent for subscription {stream} after the client cancelled it "
                    "and made another request"
                )
        try:
            if frame.direction == "S>C":
                validate_server_message(version, method, msg, strict=strict)
            else:
                validate_client_message(version, method, msg)
        except Exception as exc:  # KeyError, pydantic.ValidationError, ValueError
            detail = " ".join(str(exc).split())[:600]
            problems.append(f"{frame}\n    at {version} ({method}): {type(exc).__name__}: {detail}")
    return problems


def _subscription_id(msg: Mapping[str, Any]) -> object:
    params = msg.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get(META_SUBSCRIPTION_ID) if isinstance(meta, dict) else None


def check_input_rounds(frames: Iterable[Frame]) -> list[str]:
    """Check the client's side of every multi-round-trip exchange (2026-07-28 MRTR).

    For each ``InputRequiredResult`` the client must retry the same request
    (same method and params apart from ``_meta``/``inputResponses``/
    ``requestState``) with a new JSON-RPC id, echo ``requestState`` exactly
    (or send none when there was none), and answer every ``inputRequests`` key.
    """
    problems: list[str] = []
    frames = list(frames)
    requests: dict[str, tuple[int, dict[str, Any]]] = {}
    for index, frame in enumerate(frames):
        msg = frame.msg
        if not isinstance(msg, dict):
            continue
        if frame.direction == "C>S" and "method" in msg and "id" in msg:
            requests[_key(msg["id"])] = (index, msg)
            continue
        result = msg.get("result") if frame.direction == "S>C" else None
        if not isinstance(result, dict) or result.get("resultType") != "input_required":
            continue
        original = requests.get(_key(msg.get("id")))
        if original is None:
            problems.append(f"{frame}: input_required for an unknown request")
            continue
        _, request = original
        subject = _subject(request)
        retry = None
        for later in frames[index + 1 :]:
            lm = later.msg
            if (
                later.direction == "C>S"
                and isinstance(lm, dict)
                and "id" in lm
                and lm.get("method") == request["method"]
                and _subject(lm) == subject
            ):
                retry = later
                break
        if retry is None:
            problems.append(f"{frame}: the client never retried {request['method']}")
            continue
        params = retry.msg.get("params") or {}
        if retry.msg["id"] == request["id"]:
            problems.append(f"{retry}: the retry reuses the JSON-RPC id {request['id']!r}")
        if params.get("requestState") != result.get("requestState"):
            problems.append(
                f"{retry}: requestState {params.get('requestState')!r} is not the exact "
                f"requestState {result.get('requestState')!r} of {frame}"
            )
        asked = result.get("inputRequests")
        answered = params.get("inputResponses")
        if (
            isinstance(asked, dict)
            and asked
            and (not isinstance(answered, dict) or set(answered) != set(asked))
        ):
            problems.append(
                f"{retry}: inputResponses keys {sorted(answered or {})} "
                f"do not match inputRequests keys {sorted(asked)}"
            )
    return problems


def _subject(request: Mapping[str, Any]) -> Any:
    params = request.get("params") or {}
    return {k: v for k, v in params.items() if k not in ("_meta", "inputResponses", "requestState")}


def _legacy_versions() -> tuple[str, ...]:
    return tuple(sorted({v for (_, v) in M.CLIENT_REQUESTS if v != MODERN}))
