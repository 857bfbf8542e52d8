"""The ``mcpwire`` command line: inspect, call, read, prompt, serve, hub.

Output for people goes to stdout, diagnostics to stderr; ``--json`` prints one
JSON document on stdout instead. Exit status: 0 success, 1 the server answered
with an error (or a tool result with ``isError``), 2 usage error, 3 could not
connect or timed out, or got no answer (a ``TransportError``: an error the
client made up in place of one, such as a bare HTTP 502).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from ._cli_oauth import add_oauth_arguments, oauth_client, wants_oauth
from ._cli_output import (
    NO_ANSWER,
    UsageError,
    add_http_serving_arguments,
    say,
    show,
)
from ._errors import ConnectionClosed, JSONRPCError, MCPWireError, RequestTimeout, TransportError
from ._version import __version__

if TYPE_CHECKING:
    from ._client import Client
    from ._hub_config import ServerConfig
    from .sansio._json import JSONObject

__all__ = ("run",)

TARGETS = (
    "TARGET is a URL (Streamable HTTP, era detected, falling back to HTTP+SSE), "
    "'--config FILE --server NAME', or '-- COMMAND [ARGS...]' (a child process over "
    "stdio; always last)."
)

EXIT_OK, EXIT_SERVER_ERROR, EXIT_USAGE, EXIT_CONNECT = 0, 1, 2, 3

#: Seconds for each step of stopping a stdio child after the command's work (stdin
#: closed, SIGTERM, SIGKILL): with the sweep of its process group, under 2 s.
CLOSE_STEP = 0.5


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcpwire",
        description="Inspect, call and serve Model Context Protocol servers.",
        epilog="TARGET is a URL, '--config FILE --server NAME', or '-- COMMAND [ARGS...]' "
        "(always last).",
    )
    parser.add_argument(
        "--version", action="version", version=f"mcpwire {__version__}", help="print the version"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
        p.add_argument(
            "--mode", default="auto", help="auto (default), legacy, or a protocol version to pin"
        )
        p.add_argument(
            "--timeout",
            type=float,
            default=60.0,
            metavar="SECONDS",
            help="the most the command takes from starting or reaching the server to its "
            "last answer: the era probe (at most half of it), the handshake and every "
            "request together (default: %(default)g), less any time spent waiting for you "
            "to authorize (OAuth); exceeded: exit status 3. Ending the "
            "connection comes after it: a notice of an unanswered request gets at most "
            f"2 s; a stdio child gets {CLOSE_STEP:g} s after stdin is closed, as much after "
            "SIGTERM, then SIGKILL; an HTTP session's DELETE gets at most 2 s",
        )
        p.add_argument("--config", help="a config file with mcpServers / servers")
        p.add_argument("--server", help="the server's name in --config")
        p.add_argument(
            "--header",
            action="append",
            default=[],
            metavar="'NAME: VALUE'",
            help="URL targets: an HTTP header to send (repeatable), e.g. 'Authorization: Bearer x'",
        )
        p.add_argument(
            "--transport",
            choices=("auto", "streamable", "sse"),
            default="auto",
            help="URL targets: Streamable HTTP with HTTP+SSE fallback (auto), or only one of them",
        )
        add_oauth_arguments(p)

    def client_parser(name: str, what: str, thing: str | None) -> argparse.ArgumentParser:
        """A client command: ``mcpwire NAME [options] [URL] THING [-- COMMAND ...]``."""
        rest = f" {thing}" if thing else ""
        p = sub.add_parser(
            name,
            help=what,
            description=f"{what[0].upper()}{what[1:]}. {TARGETS}",
            usage=f"mcpwire {name} [options] URL{rest}\n"
            f"       mcpwire {name} [options]{rest} --config FILE --server NAME\n"
            f"       mcpwire {name} [options]{rest} -- COMMAND [ARGS...]",
        )
        if thing:
            p.add_argument("positional", nargs="+", metavar=f"[URL] {thing}")
        else:
            p.add_argument("url", nargs="?", metavar="URL")
        return p

    p = client_parser("inspect", "show a server's info, tools, resources and prompts", None)
    common(p)
    p = client_parser("call", "call a tool", "TOOL")
    p.add_argument("--args", default="{}", help="tool arguments as a JSON object")
    common(p)
    p = client_parser("read", "read a resource", "URI")
    common(p)
    p = client_parser("prompt", "get a prompt", "NAME")
    p.add_argument("--args", default="{}", help="prompt arguments as a JSON object (strings)")
    common(p)
    p = sub.add_parser(
        "serve",
        help="run a Server object (module:attr or file.py:attr)",
        description="Run a Server object over stdio, Streamable HTTP (/mcp) or HTTP+SSE (/sse).",
    )
    p.add_argument(
        "app",
        metavar="APP",
        help="module:attr or path/to/file.py:attr (attr defaults to 'server'); "
        "modules are found from the current directory too",
    )
    p.add_argument(
        "--transport",
        choices=("stdio", "http", "sse"),
        default="stdio",
        help="stdio (the default); http: Streamable HTTP at /mcp, both eras; "
        "sse: also the deprecated HTTP+SSE endpoints /sse and /messages",
    )
    add_http_serving_arguments(p, when="http, sse")
    auth = p.add_argument_group(
        "OAuth 2.1 (http, sse): serve as a protected resource, tokens checked by RFC 7662 "
        "introspection at the authorization server"
    )
    auth.add_argument(
        "--auth-server", action="append", metavar="ISSUER", help="an authorization server"
    )
    auth.add_argument("--introspect", metavar="URL", help="its token introspection endpoint")
    auth.add_argument("--introspect-client-id", metavar="ID", help="this server's client id there")
    auth.add_argument(
        "--introspect-secret-env",
        metavar="VAR",
        default="MCPWIRE_INTROSPECTION_SECRET",
        help="the environment variable holding its secret (default: %(default)s)",
    )
    auth.add_argument(
        "--required-scope", action="append", metavar="SCOPE", help="a scope every request needs"
    )
    auth.add_argument(
        "--resource", metavar="URL", help="this server's canonical URL (on a public bind)"
    )
    auth.add_argument(
        "--dpop",
        choices=("allowed", "required", "off"),
        help="DPoP-bound tokens (RFC 9449): taken beside Bearer ones (allowed, the default), "
        "only they (required), or not at all (off)",
    )
    auth.add_argument(
        "--dpop-nonce",
        action="store_true",
        help="DPoP proofs must carry a nonce this server issued (RFC 9449 section 9); "
        "processes serving one resource share the nonce key in $MCPWIRE_DPOP_NONCE_KEY",
    )
    p = sub.add_parser("hub", help="connect every server in config files, show their state")
    _hub_arguments(p)
    return parser


def run(argv: list[str]) -> int:
    command: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, command = argv[:cut], argv[cut + 1 :]
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return EXIT_USAGE if exc.code not in (0, None) else EXIT_OK
    try:
        if args.command == "serve":
            from ._cli_serve import serve

            return serve(args)
        if args.command == "hub":
            return _hub_command(args, command)
        return anyio.run(_client_command, args, command)
    except BrokenPipeError:
        # The reader of our stdout went away (``| head``): not an error of ours.
        sys.stderr.close()
        return getattr(args, "status", EXIT_OK)
    except UsageError as exc:
        say(f"mcpwire: {exc}")
        return EXIT_USAGE


def _split_target(
    args: argparse.Namespace, command: list[str], wanted: int
) -> tuple[str | None, list[str]]:
    """Separate a leading URL from the command's own positionals."""
    positional: list[str] = list(getattr(args, "positional", []) or [])
    if getattr(args, "url", None):
        positional.insert(0, args.url)
    url = None
    other = bool(command) or bool(args.config)
    # With '-- COMMAND' or --config, a leading URL is the command's own argument
    # (``read`` of an https:// resource) unless there is one positional too many.
    if (
        positional
        and positional[0].lower().startswith(("http://", "https://"))
        and (not other or len(positional) > wanted)
    ):
        url = positional.pop(0)
    if len(positional) != wanted:
        raise UsageError(
            f"{args.command}: expected {wanted} argument(s) besides the target, got {positional}"
        )
    targets = sum(1 for t in (url, command or None, args.config) if t)
    if targets != 1:
        raise UsageError(
            "give exactly one TARGET: a URL, '--config FILE --server NAME', or "
            "'-- COMMAND [ARGS...]' at the end"
        )
    return url, positional


def _make_client(args: argparse.Namespace, url: str | None, command: list[str]) -> Client:
    from ._client import Client
    from ._handshake import DEFAULT_PROBE_TIMEOUT
    from ._session import DEFAULT_MAX_REQUEST_TIMEOUT

    notes: list[str] = []

    async def on_note(method: str, params: JSONObject) -> None:
        if method == "notifications/message" and not args.json:
            say(f"[{params.get('level')}] {params.get('data')}")
        notes.append(method)

    if not 0 < args.timeout <= DEFAULT_MAX_REQUEST_TIMEOUT:
        most = f"{DEFAULT_MAX_REQUEST_TIMEOUT:g}"
        raise UsageError(f"--timeout must be a positive number of seconds, at most {most}")
    common: dict[str, Any] = {
        "mode": args.mode,
        "request_timeout": args.timeout,
        # The probe leaves half of --timeout to the initialize it may fall back to.
        "probe_timeout": min(args.timeout / 2, DEFAULT_PROBE_TIMEOUT),
        "on_notification": on_note,
        "log_level": "debug",
    }
    headers = _header_options(args.header)
    transport = args.transport
    oauth = None
    entry = None
    if args.config:
        if not args.server:
            raise UsageError("--config needs --server NAME")
        entry = _config_server(args.config, args.server)
        if entry.transport != "stdio":
            url = entry.url
            headers = list(entry.headers.items()) + headers
            transport = "sse" if entry.transport == "sse" and transport == "auto" else transport
            oauth = entry.oauth
    if url is not None:
        try:
            auth = oauth_client(args, url, oauth)
            return Client.http(
                url,
                headers=headers,
                transport=transport,
                connect_timeout=min(args.timeout, 10.0),
                auth=auth,
                **common,
            )
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    if args.header:
        raise UsageError("--header applies to URL targets only")
    if wants_oauth(args):
        raise UsageError("OAuth options apply to URL targets only")
    if args.transport != "auto":
        raise UsageError("--transport applies to URL targets only")
    env: dict[str, str | None] | None = None
    cwd: str | None = None
    if entry is not None:
        assert entry.command is not None  # a stdio entry has one (ServerConfig)
        command = [entry.command, *entry.args]
        env, cwd = dict(entry.env) or None, entry.cwd
        common["inherit_env"] = entry.inherit_env
    try:
        return Client.stdio(
            command[0], command[1:], env=env, cwd=cwd, shutdown_timeout=CLOSE_STEP, **common
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _config_server(path: str, name: str) -> ServerConfig:
    """``--config FILE --server NAME``, read as ``mcpwire hub`` reads it: every
    dialect, comments, ``${VAR}`` expansion, ``inheritEnv`` and ``oauth``."""
    from ._hub_config import load_config
    from ._hub_errors import ConfigError

    try:
        loaded = load_config(path)
    except ConfigError as exc:
        raise UsageError(str(exc)) from None
    entry = loaded.servers.get(name)
    if entry is None:
        names = ", ".join(loaded.servers) or "none"
        raise UsageError(f"{path}: no server named {name!r} (servers: {names})")
    return entry


def _header_options(values: list[str]) -> list[tuple[str, str]]:
    headers = []
    for value in values:
        name, colon, rest = value.partition(":")
        if not colon or not name.strip():
            raise UsageError(f"--header needs 'NAME: VALUE', not {value!r}")
        headers.append((name.strip(), rest.strip()))
    return headers


async def _client_command(args: argparse.Namespace, command: list[str]) -> int:
    handlers: dict[
        str, tuple[int, Callable[[Client, argparse.Namespace, list[str]], Awaitable[int]]]
    ] = {
        "inspect": (0, _inspect),
        "call": (1, _call),
        "read": (1, _read),
        "prompt": (1, _prompt),
    }
    wanted, handler = handlers[args.command]
    try:
        url, rest = _split_target(args, command, wanted)
        if args.command in ("call", "prompt"):
            # A usage error, found before any server is started or connected.
            args.arguments = _json_args(args.args, strings=args.command == "prompt")
        client = _make_client(args, url, command)
    except UsageError as exc:
        say(f"mcpwire: {exc}")
        return EXIT_USAGE
    connected: list[bool] = []  # one entry once the handshake is done
    try:
        return await _within_timeout(client, args, handler, rest, connected)
    except UsageError as exc:
        say(f"mcpwire: {exc}")
        return EXIT_USAGE
    except TransportError as exc:
        # An error the client made up in place of an answer is no answer from
        # the server (3), before the handshake or after it: a 404 or an HTML
        # page to ``initialize`` is nothing to connect to; a bare 502, a body
        # that is no JSON-RPC answer or one cut off to the command's request,
        # an answer that never came. The message names the status or cause.
        if not connected:
            where = f" at {url}" if url else ""
            message = f"no MCP server answered{where}: {exc.message}"
            _fail(args, "could not connect", None, message, exc.data)
        else:
            _fail(args, NO_ANSWER, None, exc.message, exc.data)
        return EXIT_CONNECT
    except JSONRPCError as exc:
        # An error the server sent is its answer (1), whatever the HTTP status.
        _fail(args, "server error", exc.code, exc.message, exc.data)
        return EXIT_SERVER_ERROR
    except (ConnectionClosed, RequestTimeout, TimeoutError) as exc:
        _fail(args, "could not connect or timed out", None, str(exc), None)
        return EXIT_CONNECT
    except MCPWireError as exc:
        _fail(args, "error", None, str(exc), None)
        return EXIT_SERVER_ERROR


async def _within_timeout(
    client: Client,
    args: argparse.Namespace,
    handler: Callable[[Client, argparse.Namespace, list[str]], Awaitable[int]],
    rest: list[str],
    connected: list[bool],
) -> int:
    """Connect and run ``handler``, the two together within ``--timeout``. Ending
    the connection is not counted: its steps are bounded on their own (``CLOSE_STEP``).
    ``connected`` gets an entry once the handshake is done, so the caller can tell
    an error made up at connect (exit 3) from one during the work.

    Raises:
        TimeoutError: ``--timeout`` passed first; the message says in which part.
    """
    status: int | None = None
    doing = "while connecting (era probe and handshake)"
    from ._pending import work_deadline

    # Time a person spends authorizing (OAuth) stands still, as for each request.
    deadline = anyio.current_time() + args.timeout
    with anyio.CancelScope(deadline=deadline) as scope, work_deadline(scope):
        async with client:
            if client.discover_error is not None:
                # Pinned to a modern version, the command line wants the server to
                # say what it is: a server that could not is an error, not a report.
                raise client.discover_error
            connected.append(True)
            doing = f"while waiting for the server's answers to {args.command}"
            status = await handler(client, args, rest)
            scope.deadline = math.inf  # the work is done: what is left is closing
    if status is None:
        raise TimeoutError(
            f"the command did not finish within --timeout {args.timeout:g} s, {doing}"
        )
    return status


def _fail(
    args: argparse.Namespace, kind: str, code: int | None, message: str, data: object
) -> None:
    if args.json:
        err: dict[str, object] = {"kind": kind, "message": message}
        if code is not None:
            err["code"] = code
        if data is not None:
            err["data"] = data
        print(json.dumps({"error": err}))
    # The diagnostic goes to stderr either way (with --json, beside the document).
    prefix = f"[{code}] " if code is not None else ""
    say(f"mcpwire: {kind}: {prefix}{message}")


def _json_args(text: str, *, strings: bool = False) -> JSONObject:
    """``--args`` as a JSON object; ``strings``: every value a string (prompt
    arguments are ``{[key: string]: string}`` in every revision's schema)."""
    from .sansio import CodecError, loads

    try:
        # The wire's own reader: NaN, Infinity, 1e999, integers past 64 bits and
        # lone surrogates are refused here, not sent as something else.
        value = loads(text)
    except CodecError as exc:
        raise UsageError(f"--args: {exc}") from None
    if not isinstance(value, dict):
        raise UsageError("--args must be a JSON object")
    if strings:
        for key, item in value.items():
            if not isinstance(item, str):
                raise UsageError(
                    f"--args: prompt arguments are strings; {key!r} is {json.dumps(item)}"
                )
    return value


async def _inspect(client: Client, args: argparse.Namespace, rest: list[str]) -> int:
    from ._cli_output import inspect_report, render_inspect, section_error, visible

    report = await inspect_report(client)
    # A list the server answered with an error is reported in its section, and
    # makes the status 1 (the server answered with an error); one that got no
    # answer (an error the client made up, its section's ``kind``) makes it 3.
    sections = ("tools", "resources", "resourceTemplates", "prompts")
    failed = [key for key in sections if isinstance(report.get(key), dict)]
    args.status = EXIT_SERVER_ERROR if failed else EXIT_OK
    for key in failed:
        section: JSONObject = report[key]  # type: ignore[assignment]
        error = section.get("error")
        if isinstance(error, dict) and error.get("kind") == NO_ANSWER:
            args.status = EXIT_CONNECT
            say(f"mcpwire: {NO_ANSWER} listing {key}: {error.get('message')}")
        else:
            say(f"mcpwire: server error listing {key}: {section_error(section)}")
    if args.json:
        print(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        print(visible(render_inspect(report)))
    return int(args.status)


async def _call(client: Client, args: argparse.Namespace, rest: list[str]) -> int:
    from ._cli_output import ProgressLine, render_content, show_content

    arguments = args.arguments
    progress = ProgressLine(enabled=not args.json and sys.stderr.isatty())
    try:
        result = await client.call_tool(rest[0], arguments, on_progress=progress.update)
    finally:
        progress.done()
    # Kept for ``run``: a reader that stops reading (``| head``) changes no status.
    args.status = EXIT_SERVER_ERROR if result.is_error else EXIT_OK
    if args.json:
        print(json.dumps(result.raw, indent=2, ensure_ascii=False))
    else:
        text = render_content(result.content)
        if result.is_error:
            say(f"mcpwire: tool {rest[0]!r} reported an error:\n{text}")
        else:
            show_content(text)
    return int(args.status)


async def _read(client: Client, args: argparse.Namespace, rest: list[str]) -> int:
    from ._cli_output import show_resource

    contents = await client.read_resource(rest[0])
    if args.json:
        print(json.dumps({"contents": [c.raw for c in contents]}, indent=2, ensure_ascii=False))
        return EXIT_OK
    show_resource(contents)
    return EXIT_OK


async def _prompt(client: Client, args: argparse.Namespace, rest: list[str]) -> int:
    from ._cli_output import render_content
    from ._types import Content

    result = await client.get_prompt(rest[0], args.arguments)
    if args.json:
        print(json.dumps(result.raw, indent=2, ensure_ascii=False))
        return EXIT_OK
    if result.description:
        show(f"# {result.description}\n")
    for message in result.messages:
        content = message.get("content")
        blocks = content if isinstance(content, list) else [content]
        show(f"{message.get('role')}:")
        show(render_content([Content.from_json(b) for b in blocks]))
        print()
    return EXIT_OK


def _hub_arguments(p: argparse.ArgumentParser) -> None:
    from ._hub_cli import add_arguments

    add_arguments(p)


def _hub_command(args: argparse.Namespace, command: list[str]) -> int:
    from ._hub_cli import main

    return main(args, command)
