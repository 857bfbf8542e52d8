"""Human-readable rendering for the CLI, loading ``serve`` targets, and the HTTP
serving options that ``serve`` and ``hub --serve http`` share."""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._errors import JSONRPCError, RemoteProtocolError, TransportError

if TYPE_CHECKING:
    from ._client import Client
    from ._server import Server
    from ._types import Content, ResourceContents
    from .sansio._json import JSONObject, JSONValue

__all__ = (
    "NO_ANSWER",
    "ProgressLine",
    "UsageError",
    "add_http_serving_arguments",
    "http_bind",
    "http_serving_given",
    "http_serving_options",
    "inspect_report",
    "load_app",
    "render_content",
    "render_inspect",
    "say",
    "show",
    "show_content",
    "show_resource",
    "visible",
)

#: The ``kind`` of a failure whose error the client made up (``TransportError``).
NO_ANSWER = "no answer from the server"


class UsageError(Exception):
    """The command line is wrong: exit status 2, the message on stderr."""


# Text a server chose reaches a person's terminal here: tool descriptions,
# instructions, error messages, log data, progress messages. A terminal obeys
# control characters (ESC starts sequences that move the cursor, erase lines,
# retitle the window or write the clipboard; CR returns to the line start) and
# reorders text around bidirectional overrides, so a hostile server could hide
# or rewrite what the user reads. Such characters are shown as escapes instead.
_BIDI_CONTROLS = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))


def _escapes(*, lines: bool) -> dict[int, str]:
    table = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0))}
    table.update({c: f"\\u{c:04x}" for c in _BIDI_CONTROLS})
    if lines:
        del table[0x0A], table[0x09]  # line feed and tab lay text out, nothing more
    return table


_MULTI_LINE = _escapes(lines=True)
_ONE_LINE = _escapes(lines=False)


def visible(text: str, *, lines: bool = True) -> str:
    """``text`` with every C0 and C1 control character (and DEL, and the
    bidirectional embedding, override and isolate controls) written as a
    backslash escape, so that it displays as what it is. ``lines``: line feeds
    and tabs are kept (a CR LF pair counts as a line feed); otherwise they are
    escaped too, for text that must stay on one line."""
    if lines:
        return text.replace("\r\n", "\n").translate(_MULTI_LINE)
    return text.translate(_ONE_LINE)


def say(text: str) -> None:
    """A diagnostic on stderr, which is a person's terminal: always made visible."""
    print(visible(text), file=sys.stderr)


def show(text: str) -> None:
    """Content the user asked for on stdout: as it is, unless stdout is a terminal
    (a file or a pipe gets the server's exact text)."""
    print(visible(text) if sys.stdout.isatty() else text)


def show_content(content: str | bytes, *, placeholder: str | None = None) -> None:
    """Content the user asked for (a resource's text or decoded blob, a tool's
    text) on stdout. A file or a pipe gets exactly its bytes (text as UTF-8),
    nothing added, so ``> file`` reproduces it. A terminal gets text made visible,
    followed by a line feed for the prompt's sake unless it is empty or ends with
    one; bytes are shown there as ``placeholder`` (a line of its own)."""
    if sys.stdout.isatty():
        if isinstance(content, bytes):
            print(visible(placeholder or f"[{len(content)} bytes]"))
            return
        text = visible(content)
        sys.stdout.write(text if not text or text.endswith("\n") else text + "\n")
        sys.stdout.flush()
        return
    data = content.encode() if isinstance(content, str) else content
    sys.stdout.flush()  # what went out through the text layer goes first
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def show_resource(contents: list[ResourceContents]) -> None:
    """What ``read`` prints: each item's exact text or decoded blob, one after
    another (``--json`` keeps items apart), through ``show_content``. Every blob is
    decoded before anything is written, so a malformed one leaves stdout empty.

    Raises:
        RemoteProtocolError: a blob is not valid base64.
    """
    import base64
    import binascii

    out: list[tuple[str | bytes, str | None]] = []
    for item in contents:
        if item.text is not None:
            out.append((item.text, None))
            continue
        try:
            data = base64.b64decode(item.blob or "", validate=True)
        except binascii.Error:
            raise RemoteProtocolError(
                f"resources/read: the blob of {item.uri!r} is not valid base64"
            ) from None
        kind = item.mime_type or "application/octet-stream"
        out.append((data, f"[binary {kind}, {len(data)} bytes, {item.uri}]"))
    for content, placeholder in out:
        show_content(content, placeholder=placeholder)


async def inspect_report(client: Client) -> JSONObject:
    caps = client.server_capabilities
    report: JSONObject = {
        "serverInfo": client.server_info,
        "era": client.era,
        "protocolVersion": client.protocol_version,
        "supportedVersions": list(client.supported_versions),
        "capabilities": caps,
        "instructions": client.instructions,
    }
    sections = (
        ("tools", "tools", client.list_tools),
        ("resources", "resources", client.list_resources),
        ("resourceTemplates", "resources", client.list_resource_templates),
        ("prompts", "prompts", client.list_prompts),
    )
    for key, cap, fetch in sections:
        if cap not in caps:
            report[key] = []
            continue
        try:
            items = await fetch()
        except TransportError as exc:
            # No answer, and no code the server chose: what the client made up.
            error: JSONObject = {"kind": NO_ANSWER, "message": exc.message}
            if exc.data is not None:
                error["data"] = exc.data
            report[key] = {"error": error}
            continue
        except JSONRPCError as exc:
            report[key] = {"error": {"code": exc.code, "message": exc.message}}
            continue
        report[key] = [item.raw for item in items]
    return report


def section_error(section: JSONObject) -> str:
    """A report section's ``{"error": {...}}`` as people read it: ``error [code]
    message``, or ``no answer from the server: message`` for one the client made up."""
    error = section.get("error")
    error = error if isinstance(error, dict) else {}
    if "code" not in error and "kind" in error:
        return f"{error.get('kind')}: {error.get('message')}"
    return f"error [{error.get('code')}] {error.get('message')}"


def _signature(schema: JSONValue) -> str:
    if not isinstance(schema, dict):
        return ""
    props = schema.get("properties")
    required = schema.get("required")
    required_set = set(required) if isinstance(required, list) else set()
    parts = []
    if isinstance(props, dict):
        for name, prop in props.items():
            kind = prop.get("type", "any") if isinstance(prop, dict) else "any"
            if isinstance(kind, list):
                kind = "|".join(map(str, kind))
            mark = "" if name in required_set else "?"
            parts.append(f"{name}{mark}: {kind}")
    return ", ".join(parts)


def render_inspect(report: JSONObject) -> str:
    from ._types import Tool  # not loaded by ``serve``, which shares this module

    info = report.get("serverInfo")
    info = info if isinstance(info, dict) else {}
    lines = []
    title = f" - {info['title']}" if info.get("title") else ""
    lines.append(f"{info.get('name', '(unnamed server)')} {info.get('version', '')}{title}")
    lines.append(f"era: {report.get('era')}  protocol: {report.get('protocolVersion')}")
    caps = report.get("capabilities")
    if isinstance(caps, dict):
        names = []
        for name, value in caps.items():
            flags = [k for k, v in value.items() if v is True] if isinstance(value, dict) else []
            names.append(f"{name} ({', '.join(flags)})" if flags else name)
        lines.append("capabilities: " + (", ".join(names) or "none"))
    if report.get("instructions"):
        lines.append(f"instructions: {report['instructions']}")

    def section(title: str, key: str, fmt: Callable[[JSONObject], str]) -> None:
        items = report.get(key)
        if isinstance(items, dict):
            lines.append(f"\n{title}: {section_error(items)}")
            return
        items = items if isinstance(items, list) else []
        lines.append(f"\n{title} ({len(items)})")
        for item in items:
            if isinstance(item, dict):
                lines.append("  " + fmt(item))

    def tool_line(t: JSONObject) -> str:
        head = f"{t.get('name')}({_signature(t.get('inputSchema'))})"
        support = Tool.from_json(t).task_support  # 2025-11-25 tasks
        if support != "forbidden":
            head += f" [task {support}]"
        return f"{head:<44} {t.get('description') or ''}".rstrip()

    def resource_line(r: JSONObject) -> str:
        head = f"{r.get('uri')}  {r.get('mimeType') or ''}"
        return f"{head:<44} {r.get('description') or r.get('name') or ''}".rstrip()

    def template_line(r: JSONObject) -> str:
        head = f"{r.get('uriTemplate')}  {r.get('mimeType') or ''}"
        return f"{head:<44} {r.get('description') or r.get('name') or ''}".rstrip()

    def prompt_line(p: JSONObject) -> str:
        args = p.get("arguments")
        names = [
            f"{a.get('name')}{'' if a.get('required') else '?'}"
            for a in (args if isinstance(args, list) else [])
            if isinstance(a, dict)
        ]
        head = f"{p.get('name')}({', '.join(names)})"
        return f"{head:<44} {p.get('description') or ''}".rstrip()

    section("Tools", "tools", tool_line)
    section("Resources", "resources", resource_line)
    section("Resource templates", "resourceTemplates", template_line)
    section("Prompts", "prompts", prompt_line)
    return "\n".join(lines)


def render_content(blocks: list[Content]) -> str:
    out = []
    for block in blocks:
        if block.type == "text" and block.text is not None:
            out.append(block.text)
        elif block.type in ("image", "audio"):
            size = len(block.data or "") * 3 // 4
            out.append(f"[{block.type} {block.mime_type}, ~{size} bytes]")
        elif block.type == "resource_link":
            out.append(f"[link {block.uri}]")
        elif block.type == "resource" and block.resource is not None:
            res = block.resource
            text = res.get("text")
            out.append(text if isinstance(text, str) else f"[embedded {res.get('uri')}]")
        else:
            out.append(f"[{block.type}]")
    return "\n".join(out)


class ProgressLine:
    """A one-line progress display on stderr (only on a terminal)."""

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled
        self.shown = False

    async def update(self, progress: float, total: float | None, message: str | None) -> None:
        if not self.enabled:
            return
        width = 24
        if total:
            filled = max(0, min(width, int(width * progress / total)))
            bar = "#" * filled + "." * (width - filled)
            text = f"[{bar}] {progress:g}/{total:g}"
        else:
            text = f"[{progress:g}]"
        if message:
            text += f" {visible(message, lines=False)}"
        sys.stderr.write("\r\x1b[2K" + text[:200])
        sys.stderr.flush()
        self.shown = True

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()


def load_app(spec: str) -> Server:
    """Load ``module:attr`` or ``path/to/file.py:attr`` (attr defaults to ``server``).

    Raises:
        ValueError: the target cannot be loaded or is not a ``Server`` (a usage error).
    """
    from ._server import Server

    target, _, attr = spec.partition(":")
    attr = attr or "server"
    try:
        if target.endswith(".py") or os.path.sep in target:
            path = os.path.abspath(target)
            if not os.path.isfile(path):
                raise ValueError(f"{path}: no such file")
            name = os.path.splitext(os.path.basename(path))[0]
            module_spec = importlib.util.spec_from_file_location(name, path)
            if module_spec is None or module_spec.loader is None:
                raise ValueError(f"cannot load {path}")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[name] = module
            module_spec.loader.exec_module(module)
        else:
            if "" not in sys.path and os.getcwd() not in sys.path:
                # As ``python -m mcpwire`` has it: an app module in the current directory.
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(target)
    except ImportError as exc:
        raise ValueError(f"cannot import {target!r}: {exc}") from None
    except Exception as exc:
        # The app's own code failed as it loaded: say what and where, not our frames.
        detail = "".join(traceback.format_exception_only(exc)).strip()
        frames = traceback.extract_tb(exc.__traceback__)
        at = ""
        if frames and not isinstance(exc, SyntaxError):  # a SyntaxError names its line
            at = f" (at {frames[-1].filename}, line {frames[-1].lineno})"
        raise ValueError(f"cannot load {target!r}: {detail}{at}") from None
    obj = getattr(module, attr, None)
    if not isinstance(obj, Server):
        found = "nothing" if obj is None else f"a {type(obj).__name__}"
        raise ValueError(f"{spec}: expected an mcpwire.Server, found {found}")
    return obj


def add_http_serving_arguments(p: argparse.ArgumentParser, *, when: str) -> None:
    """``--host``, ``--port``, ``--allowed-host``, ``--allowed-origin`` and
    ``--responses``; ``when`` names the option they go with, for the help."""
    p.add_argument("--host", help=f"{when}: the address to bind (default: 127.0.0.1)")
    p.add_argument("--port", type=int, help=f"{when}: the TCP port (default: 8000)")
    p.add_argument(
        "--allowed-host",
        action="append",
        metavar="HOST",
        help=f"{when}: a Host header to accept (repeatable, '*' for any; "
        "default: localhost names when bound to loopback)",
    )
    p.add_argument(
        "--allowed-origin",
        action="append",
        metavar="ORIGIN",
        help=f"{when}: an Origin header to accept (repeatable, '*' for any; default: localhost)",
    )
    p.add_argument(
        "--responses",
        choices=("auto", "json", "stream"),
        default="auto",
        help=f"{when}: how a POST is answered: JSON unless something precedes the answer "
        "(auto), always JSON (json), or an event stream whenever the client takes one (stream)",
    )


def http_serving_given(args: argparse.Namespace) -> str | None:
    """The first of those options given on the command line, if any (for the
    usage error of a command that serves no HTTP)."""
    if args.host is not None:
        return "--host"
    if args.port is not None:
        return "--port"
    if args.allowed_host is not None:
        return "--allowed-host"
    if args.allowed_origin is not None:
        return "--allowed-origin"
    return "--responses" if args.responses != "auto" else None


def http_bind(args: argparse.Namespace) -> tuple[str, int]:
    """The address and port to serve HTTP on. Raises ValueError for a bad port."""
    port = 8000 if args.port is None else args.port
    if not 0 <= port <= 65535:
        raise ValueError(f"--port must be a TCP port (0-65535), not {port}")
    return ("127.0.0.1" if args.host is None else args.host), port


def http_serving_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The ``serve_http`` keywords the header and response options give; None when
    none of them was given."""
    if args.allowed_host is None and args.allowed_origin is None and args.responses == "auto":
        return None
    return {
        "allowed_hosts": "auto" if args.allowed_host is None else args.allowed_host,
        "allowed_origins": "auto" if args.allowed_origin is None else args.allowed_origin,
        "json_response": args.responses == "json",
        "stream_responses": args.responses == "stream",
    }
