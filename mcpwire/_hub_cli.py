"""``mcpwire hub``: connect every server in config files and show their state.

* ``mcpwire hub [--config FILE]... [--json]`` connects every server, waits
  until none is still starting, prints a table (server, state, transport,
  tools, last error) or one JSON document, and exits 0 when every enabled
  server is ready, 1 when some failed, 3 when none could connect, 2 on a
  usage or config error. Without ``--config`` the project files of the usual
  clients in the current directory are used.
* ``--watch`` keeps running: the table is drawn again whenever a server
  changes (with ``--json``: one JSON line per event), config edits are applied
  live, and Ctrl-C or SIGTERM stops it.
* ``--provider openai|anthropic|gemini`` (with ``--json``) adds each tool's
  input schema fitted to that provider, and the warnings of what could not
  be carried over (``_hub_schema``).
* ``--profile NAME`` runs only the servers and tools of a named profile of
  the config files (``_hub_profiles``); the others show as disabled.
* ``--serve stdio|http`` (``--host``, ``--port``; for HTTP also the allow-lists
  ``--allowed-host``/``--allowed-origin`` and ``--responses``, as ``serve``
  has them) serves every server's tools, prompts and resources as one MCP
  server (``_hub_serve``), following config edits live; ``--search`` offers
  the three tool-search tools instead of every tool; ``--profile-tool`` a
  ``use_profile`` tool that switches the named profile. The servers'
  sampling, elicitation and roots asks during a call go to the client that
  made it, roots asked outside calls to the one legacy client with roots
  (``_hub_relay``).
* ``--login-path`` starts servers with the PATH the user's login shell sets
  (``_login_path``), for hosts started from a desktop without it.
* ``--emit CLIENT --name NAME -- COMMAND [ARGS...]`` (or ``--url URL``)
  prints a config snippet for one server in that client's dialect, to paste
  into its config file.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from ._cli_output import (
    add_http_serving_arguments,
    http_bind,
    http_serving_given,
    http_serving_options,
    say,
    visible,
)
from ._hub_render import SNIPPET_CLIENTS
from ._hub_schema import PROVIDERS

if TYPE_CHECKING:
    from ._hub import Hub
    from ._hub_status import ServerStatus

__all__ = ("PROJECT_CONFIGS", "add_arguments", "authorization_prompt", "exit_status", "main")

EXIT_OK, EXIT_SOME_FAILED, EXIT_USAGE, EXIT_NONE_CONNECTED = 0, 1, 2, 3
#: Files looked for in the current directory when no --config is given.
PROJECT_CONFIGS = (
    ".mcp.json",
    "mcp.json",
    ".vscode/mcp.json",
    ".cursor/mcp.json",
    ".roo/mcp.json",
    ".gemini/settings.json",
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="FILE",
        help="a config file (repeat it; a later file's server wins a name clash)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    p.add_argument("--watch", action="store_true", help="keep running and show every change")
    p.add_argument(
        "--timeout", type=float, default=30.0, help="seconds each server gets to start (30)"
    )
    p.add_argument(
        "--token-store",
        metavar="FILE",
        help="OAuth servers: keep tokens and client registrations in FILE across runs",
    )
    p.add_argument(
        "--browser",
        action="store_true",
        help="OAuth servers: open authorization URLs in the default browser (else printed)",
    )
    p.add_argument("--tool-cache", metavar="FILE", help="lazy servers' tool lists, kept in FILE")
    p.add_argument(
        "--profile", metavar="NAME", help="run only the servers and tools of this named profile"
    )
    p.add_argument(
        "--provider", choices=PROVIDERS, help="--json, --search: schemas fitted to a provider"
    )
    p.add_argument(
        "--serve",
        choices=("stdio", "http"),
        help="serve every server's tools, prompts and resources as one MCP server",
    )
    p.add_argument(
        "--search",
        action="store_true",
        help="--serve: offer search_tools, describe_tool and call_tool instead of every tool",
    )
    p.add_argument(
        "--profile-tool",
        action="store_true",
        help="--serve: offer a use_profile tool, so the client can switch profiles itself",
    )
    add_http_serving_arguments(p, when="--serve http")
    p.add_argument(
        "--login-path",
        action="store_true",
        help="start servers with the PATH your login shell sets (for hosts started from a desktop)",
    )
    p.add_argument(
        "--emit", choices=SNIPPET_CLIENTS, help="print a config snippet for one server instead"
    )
    p.add_argument("--name", help="the server's name in the --emit snippet")
    p.add_argument("--url", help="--emit: an HTTP server (instead of '-- COMMAND ARGS...')")
    p.add_argument(
        "--env", action="append", default=[], metavar="KEY=VALUE", help="--emit: a variable"
    )
    p.add_argument(
        "--header", action="append", default=[], metavar="NAME:VALUE", help="--emit: a header"
    )


class _Usage(Exception):
    pass


def main(args: argparse.Namespace, command: list[str]) -> int:
    try:
        if args.emit:
            return _emit(args, command)
        if command or args.name or args.url or args.env or args.header:
            raise _Usage("--name, --url, --env, --header and '-- COMMAND' go with --emit")
        if args.provider and not (args.json or args.search):
            raise _Usage("--provider goes with --json or --search")
        if (args.search or args.profile_tool) and not args.serve:
            raise _Usage("--search and --profile-tool go with --serve")
        if args.serve and (args.json or args.watch):
            raise _Usage("--serve speaks MCP on its transport: no --json or --watch")
        given = http_serving_given(args)
        if args.serve != "http" and given is not None:
            raise _Usage(f"{given} goes with --serve http")
        try:
            args.host, args.port = http_bind(args)
        except ValueError as exc:
            raise _Usage(str(exc)) from None
        if not args.timeout > 0:
            raise _Usage("--timeout must be a positive number of seconds")
        configs = list(args.config) or [p for p in PROJECT_CONFIGS if os.path.isfile(p)]
        if not configs:
            raise _Usage(
                "no config file: give --config FILE (none of "
                + ", ".join(PROJECT_CONFIGS)
                + " is in the current directory)"
            )
    except _Usage as exc:
        say(f"mcpwire hub: {exc}")
        return EXIT_USAGE
    import anyio

    # The table shows every error; the hub's log lines would only repeat them.
    hub_log = logging.getLogger("mcpwire.hub")
    hub_log.propagate = False
    hub_log.addHandler(logging.NullHandler())
    return anyio.run(_run, args, configs)


def _emit(args: argparse.Namespace, command: list[str]) -> int:
    from ._hub_render import config_snippet

    if not args.name:
        raise _Usage("--emit needs --name NAME")
    if bool(command) == bool(args.url):
        raise _Usage("--emit needs either '-- COMMAND [ARGS...]' or --url URL")
    env = dict(_pair(item, "=", "--env") for item in args.env)
    headers = dict(_pair(item, ":", "--header") for item in args.header)
    snippet = config_snippet(
        args.emit,
        args.name,
        command=command[0] if command else None,
        args=command[1:],
        env=env,
        url=args.url,
        headers=headers,
    )
    print(json.dumps(snippet, indent=2, ensure_ascii=False))
    return EXIT_OK


def _pair(item: str, sep: str, option: str) -> tuple[str, str]:
    key, found, value = item.partition(sep)
    if not found or not key.strip():
        raise _Usage(f"{option} wants KEY{sep}VALUE, not {item!r}")
    return key.strip(), value.strip() if sep == ":" else value


def exit_status(statuses: list[ServerStatus]) -> int:
    """0 every enabled server ready (or idle), 1 some failed, 3 none could connect."""
    from ._hub_events import ServerState

    enabled = [s for s in statuses if s.state is not ServerState.DISABLED]
    ready = sum(1 for s in enabled if s.state.exposed)
    if ready == len(enabled):
        return EXIT_OK
    return EXIT_NONE_CONNECTED if ready == 0 else EXIT_SOME_FAILED


def report(hub: Hub, provider: str | None = None) -> dict[str, object]:
    """The hub's state as JSON; with ``provider``, each tool's input schema
    fitted to it and the warnings of what could not be carried over."""
    statuses = hub.statuses()
    counts: dict[str, int] = {}
    for s in statuses:
        counts[s.state.value] = counts.get(s.state.value, 0) + 1
    tools: list[dict[str, object]] = []
    for t in hub.tools(include_disabled=True):
        entry: dict[str, object] = {
            "name": t.name,
            "server": t.server,
            "tool": t.original_name,
            "enabled": t.enabled,
        }
        if provider is not None:
            fitted = t.fitted_schema(provider)
            entry["inputSchema"], entry["schemaWarnings"] = fitted.schema, list(fitted.warnings)
        tools.append(entry)
    return {
        "servers": [s.to_json() for s in statuses],
        "summary": {"total": len(statuses), **counts},
        "tools": tools,
        "warnings": [str(w) for w in hub.warnings],
        "configFiles": list(hub.config_files),
        "profile": hub.profile,
        "profiles": {name: p.to_json() for name, p in hub.profiles.items()},
    }


async def _run(args: argparse.Namespace, configs: list[str]) -> int:
    from ._hub import Hub
    from ._hub_errors import ConfigError
    from ._hub_relay import AskRelay

    if args.login_path:
        from ._login_path import login_shell_path, merge_paths

        path = await login_shell_path()
        if path is None:
            say("mcpwire hub: warning: could not read the login shell's PATH; keeping this one")
        else:
            os.environ["PATH"] = merge_paths(path, os.environ.get("PATH", ""))
    try:
        hub = Hub(
            configs,
            startup_timeout=args.timeout,
            watch=args.watch or bool(args.serve),
            authorize=authorization_prompt(args.browser),
            token_store=args.token_store,
            tool_cache=args.tool_cache,
            profile=args.profile,
            relay=AskRelay() if args.serve else None,
        )
        async with hub:
            for issue in hub.warnings:
                say(f"mcpwire hub: warning: {issue}")
            try:
                await hub.wait_ready(timeout=args.timeout + 5.0)
            except TimeoutError:
                pass
            if args.serve:
                return await _serve(hub, args)
            if args.watch:
                await _watch(hub, args)
            else:
                _render(hub, args)
            return exit_status(hub.statuses())
    except ConfigError as exc:
        if args.json:
            issues = [{"file": i.file, "path": i.path, "message": i.message} for i in exc.issues]
            print(json.dumps({"error": {"kind": "config error", "issues": issues}}))
        say(f"mcpwire hub: config error: {exc}")
        return EXIT_USAGE


async def _serve(hub: Hub, args: argparse.Namespace) -> int:
    """Serve the hub as one MCP server until the client leaves (stdio) or a signal."""
    import anyio

    from ._hub_serve import HubServer

    server = HubServer(
        hub, search=args.search, provider=args.provider, profile_tool=args.profile_tool
    )
    options = http_serving_options(args) or {}
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.follow)
        if args.serve == "stdio":
            await server.serve_stdio()  # until the client closes stdin
        else:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                try:
                    serve = functools.partial(server.serve_http, **options)
                    port = await tg.start(serve, args.host, args.port)
                except OSError as exc:
                    say(f"mcpwire hub: cannot listen on {args.host}:{args.port}: {exc}")
                    tg.cancel_scope.cancel()
                    return EXIT_NONE_CONNECTED
                say(f"mcpwire hub: serving MCP at http://{args.host}:{port}/mcp")
                async for _ in signals:
                    break
        tg.cancel_scope.cancel()
    return EXIT_OK


def authorization_prompt(browser: bool) -> Callable[[str, str], None]:
    """Shows an OAuth authorization URL to the person at the terminal (on stderr,
    stdout being the report), and opens it in their browser if asked."""

    def show(server: str, url: str) -> None:
        # The URL is built from the authorization server's metadata: shown, not obeyed.
        say(f"mcpwire: {server} needs authorization; open this URL:\n  {visible(url, lines=False)}")
        if browser:
            import webbrowser

            webbrowser.open(url)

    return show


def _render(hub: Hub, args: argparse.Namespace) -> None:
    from ._hub_render import status_table

    if args.json:
        document = report(hub, args.provider)
        print(json.dumps(document, indent=None if args.watch else 2, ensure_ascii=False))
        return
    if args.watch and sys.stdout.isatty():
        print("\x1b[H\x1b[2J", end="")
    print(status_table(hub.statuses()))
    if args.watch:
        print()
    sys.stdout.flush()


async def _watch(hub: Hub, args: argparse.Namespace) -> None:
    import anyio

    stream = hub.events()
    _render(hub, args)

    async def stop_on_signal(scope: anyio.CancelScope) -> None:
        with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async for _ in signals:
                scope.cancel()
                return

    async with anyio.create_task_group() as tg:
        tg.start_soon(stop_on_signal, tg.cancel_scope)
        async for event in stream:
            if args.json:
                print(json.dumps(event.to_json(), ensure_ascii=False), flush=True)
                continue
            await anyio.sleep(0.05)  # let a burst of changes land, then draw once
            stream.pending()
            _render(hub, args)
