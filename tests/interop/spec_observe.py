"""Run a request program through a client against a spec server and record what the client sees.

Two observers, one per client, both returning the same plain-JSON *observation*::

    {"capabilities": [...] | None,   # legacy: which of tools/resources/prompts/logging
     "ops": [[...], ...],             # one entry per program step, see below
     "progress": {"3": [[1, 2, "step 1"], ...]},   # per call that asked for progress
     "logs": [{"level": ..., "logger": ..., "data": ...}, ...]}

An op entry is ``["list", kind, [items...]]``, ``["result", {...}]``, ``["ok"]`` (ping,
notifications), ``["error", code]`` (a JSON-RPC error) or ``["client-error", exception type]``
(the client refused or failed on its own side). Items and results are the wire JSON as the
client hands it over: ``Tool.raw`` etc. for mcpwire, ``model_dump(by_alias=True,
mode="json", exclude_unset=True)`` for the SDK.

``normalise`` then removes what the specification leaves to each implementation (see its
docstring); ``spec_deviations.py`` lists the differences the tests accept beyond that.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp.types as types
from mcp import Client as SdkClient
from mcp import MCPError, StdioServerParameters
from mcp.shared.exceptions import MCPDeprecationWarning

from mcpwire import Client, JSONRPCError

from .spec_common import ERROR_PREFIX

__all__ = ("MODERN", "Target", "normalise", "observe")

MODERN = "2026-07-28"
INTEROP = Path(__file__).resolve().parent
TEE = INTEROP / "tee.py"
SERVER_SCRIPTS = {
    "mcpwire": INTEROP / "spec_server_mcpwire.py",
    "ref": INTEROP / "spec_server_ref.py",
}
CANCEL_ID = 987654321
#: What an op waits for at most; a hang is a failure, not a stuck test.
OP_TIMEOUT = 20.0
CAPABILITIES = ("tools", "resources", "prompts", "logging")
#: Result members that are the implementation's business: identity stamps and cache hints.
_RESULT_NOISE = ("_meta", "resultType", "ttlMs", "cacheScope")
IMPLEMENTATION_MESSAGE = "<implementation's message>"


@dataclass(frozen=True)
class Target:
    """One server to talk to: stdio (a command, maybe tee'd) or a streamable-HTTP URL."""

    impl: str
    transport: str
    spec_path: Path
    capture: Path | None = None
    url: str | None = None

    def argv(self) -> list[str]:
        args = [str(SERVER_SCRIPTS[self.impl]), "stdio", str(self.spec_path)]
        if self.capture is not None:
            return [str(TEE), str(self.capture), sys.executable, *args]
        return args


async def observe(
    client: str, target: Target, era: str, program: list[list[Any]]
) -> dict[str, Any]:
    observer = _observe_mcpwire if client == "mcpwire" else _observe_sdk
    return await observer(target, era, program)


# --------------------------------------------------------------------------- mcpwire's Client


async def _observe_mcpwire(target: Target, era: str, program: list[list[Any]]) -> dict[str, Any]:
    logs: list[dict[str, Any]] = []

    async def on_notification(method: str, params: dict[str, Any]) -> None:
        if method == "notifications/message":
            logs.append({k: params.get(k) for k in ("level", "logger", "data")})

    mode = "legacy" if era == "legacy" else MODERN
    options: dict[str, Any] = {
        "mode": mode,
        "log_level": "info",
        "on_notification": on_notification,
        "request_timeout": OP_TIMEOUT,
        "era_key": None,
    }
    if target.transport == "stdio":
        client = Client.stdio(sys.executable, target.argv(), **options)
    else:
        assert target.url is not None
        client = Client.http(target.url, **options)
    ops: list[Any] = []
    progress: dict[str, list[Any]] = {}
    async with client as c:
        caps = None
        if era == "legacy":
            caps = sorted(k for k in c.server_capabilities if k in CAPABILITIES)
        for i, op in enumerate(program):
            ops.append(await _mcpwire_op(c, op, progress, str(i)))
    return {"capabilities": caps, "ops": ops, "progress": progress, "logs": logs}


async def _mcpwire_op(c: Client, op: list[Any], progress: dict[str, list[Any]], key: str) -> Any:
    kind = op[0]
    try:
        if kind == "list":
            lister = {
                "tools": c.list_tools,
                "resources": c.list_resources,
                "templates": c.list_resource_templates,
                "prompts": c.list_prompts,
            }[op[1]]
            return ["list", op[1], [item.raw for item in await lister()]]  # type: ignore[operator]
        if kind == "call":
            seen: list[Any] | None = progress.setdefault(key, []) if op[3] else None

            async def on_progress(value: float, total: float | None, message: str | None) -> None:
                assert seen is not None
                seen.append([value, total, message])

            result = await c.call_tool(
                op[1], op[2], on_progress=on_progress if seen is not None else None
            )
            return ["result", result.raw]
        if kind == "read":
            contents = await c.read_resource(op[1])
            return ["result", {"contents": [x.raw for x in contents]}]
        if kind == "prompt":
            prompt = await c.get_prompt(op[1], op[2])
            return ["result", prompt.raw]
        if kind == "ping":
            await c.ping()
        elif kind == "roots_changed":
            await c.send_roots_changed()
        elif kind == "cancel_unknown":
            await c.session.notify(
                "notifications/cancelled", {"requestId": CANCEL_ID, "reason": "never sent"}
            )
        return ["ok"]
    except JSONRPCError as exc:
        return ["error", exc.code]
    except Exception as exc:
        return ["client-error", type(exc).__name__]


# --------------------------------------------------------------------------- the SDK's Client


def _dump(model: Any) -> Any:
    return model.model_dump(by_alias=True, mode="json", exclude_unset=True)


@asynccontextmanager
async def _sdk_client(target: Target, era: str, **callbacks: Any) -> AsyncIterator[SdkClient]:
    server: StdioServerParameters | str
    if target.transport == "stdio":
        server = StdioServerParameters(command=sys.executable, args=target.argv())
    else:
        assert target.url is not None
        server = target.url
    mode = "legacy" if era == "legacy" else MODERN
    async with SdkClient(
        server, mode=mode, log_level="info", read_timeout_seconds=OP_TIMEOUT, **callbacks
    ) as c:
        yield c


async def _observe_sdk(target: Target, era: str, program: list[list[Any]]) -> dict[str, Any]:
    logs: list[dict[str, Any]] = []

    async def logging_callback(params: types.LoggingMessageNotificationParams) -> None:
        logs.append({"level": params.level, "logger": params.logger, "data": params.data})

    ops: list[Any] = []
    progress: dict[str, list[Any]] = {}
    async with _sdk_client(target, era, logging_callback=logging_callback) as c:
        caps = None
        if era == "legacy":
            dumped = _dump(c.server_capabilities)
            caps = sorted(k for k in dumped if k in CAPABILITIES and dumped[k] is not None)
        for i, op in enumerate(program):
            ops.append(await _sdk_op(c, op, progress, str(i)))
    return {"capabilities": caps, "ops": ops, "progress": progress, "logs": logs}


async def _sdk_list(c: SdkClient, kind: str) -> list[Any]:
    items: list[Any] = []
    cursor: str | None = None
    for _ in range(1000):
        if kind == "tools":
            page: Any = await c.list_tools(cursor=cursor)
            items.extend(page.tools)
        elif kind == "resources":
            page = await c.list_resources(cursor=cursor)
            items.extend(page.resources)
        elif kind == "templates":
            page = await c.list_resource_templates(cursor=cursor)
            items.extend(page.resource_templates)
        else:
            page = await c.list_prompts(cursor=cursor)
            items.extend(page.prompts)
        cursor = page.next_cursor
        if cursor is None:
            break
    return [_dump(item) for item in items]


async def _sdk_op(c: SdkClient, op: list[Any], progress: dict[str, list[Any]], key: str) -> Any:
    kind = op[0]
    try:
        with warnings.catch_warnings():
            # ping and roots/list_changed are deprecated SDK calls; we make them on purpose.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            if kind == "list":
                return ["list", op[1], await _sdk_list(c, op[1])]
            if kind == "call":
                seen: list[Any] | None = progress.setdefault(key, []) if op[3] else None

                async def on_progress(
                    value: float, total: float | None, message: str | None
                ) -> None:
                    assert seen is not None
                    seen.append([value, total, message])

                result = await c.call_tool(
                    op[1], op[2], progress_callback=on_progress if seen is not None else None
                )
                return ["result", _dump(result)]
            if kind == "read":
                return ["result", _dump(await c.read_resource(op[1]))]
            if kind == "prompt":
                return ["result", _dump(await c.get_prompt(op[1], op[2]))]
            if kind == "ping":
                await c.send_ping()
            elif kind == "roots_changed":
                await c.send_roots_list_changed()
            elif kind == "cancel_unknown":
                await c.session.send_notification(
                    types.CancelledNotification(
                        params=types.CancelledNotificationParams(
                            request_id=CANCEL_ID, reason="never sent"
                        )
                    )
                )
            return ["ok"]
    except MCPError as exc:
        return ["error", exc.code]
    except Exception as exc:
        return ["client-error", type(exc).__name__]


# --------------------------------------------------------------------------- normalisation


def _item_key(item: Any) -> str:
    if isinstance(item, dict):
        for key in ("name", "uri", "uriTemplate"):
            if isinstance(item.get(key), str):
                return f"{item[key]}\x00{item.get('uri', '')}{item.get('uriTemplate', '')}"
    return repr(item)


def _strip_meta(item: Any) -> Any:
    if isinstance(item, dict):
        return {k: v for k, v in item.items() if k != "_meta"}
    return item


def normalise(obs: dict[str, Any], program: list[list[Any]]) -> dict[str, Any]:
    """What must be equal, and only that.

    Removed or canonicalised because the specification leaves them to the implementation:
    ``_meta`` (identity stamps), ``resultType`` / ``ttlMs`` / ``cacheScope`` (cache hints a
    server chooses), the order of list items (sorted by name/URI; pagination is already
    followed to the end), an absent ``isError`` (= false), and the text of a tool error the
    implementation wrote itself (an input validation failure): only that it is an error
    counts, while ``spec-error: ...`` texts (the tool's own failure) must match exactly.
    JSON-RPC errors are compared by code; their messages are free text.
    """
    ops: list[Any] = []
    for op, entry in zip(program, obs["ops"], strict=True):
        if entry[0] == "list":
            items = sorted((_strip_meta(i) for i in entry[2]), key=_item_key)
            ops.append(["list", entry[1], items])
        elif entry[0] == "result":
            result = {k: v for k, v in entry[1].items() if k not in _RESULT_NOISE}
            if op[0] == "call":
                result["isError"] = bool(result.get("isError", False))
                if result["isError"]:
                    result["content"] = [
                        block
                        if isinstance(block, dict)
                        and str(block.get("text", "")).startswith(ERROR_PREFIX)
                        else IMPLEMENTATION_MESSAGE
                        for block in result.get("content", [])
                    ]
            if op[0] == "read":
                result["contents"] = [_strip_meta(c) for c in result.get("contents", [])]
            ops.append(["result", result])
        else:
            ops.append(list(entry))
    logs = sorted(obs["logs"], key=repr)
    return {
        "capabilities": obs["capabilities"],
        "ops": ops,
        "progress": obs["progress"],
        "logs": logs,
    }
