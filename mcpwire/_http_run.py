"""Running the HTTP server from a program's entry point: signals and exit status.

Theory of operation
-------------------
``Server.run("http")``, ``mcpwire serve --transport http`` and the example
server's ``--transport http`` all end up in ``run_until_signalled``: it starts
``serve_http``, announces the bound URL on stderr (stdout stays clean), and
waits for SIGINT or SIGTERM, on which it cancels the server, which then shuts
down gracefully (requests in flight finish, streams end). ``run_main`` wraps
that in ``anyio.run`` and turns a port that cannot be bound into a message
and exit status 3, the CLI's "could not connect" status.
"""

from __future__ import annotations

import functools
import logging
import signal
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc

from ._http_server import serve_http

if TYPE_CHECKING:
    from ._server import Server

__all__ = ("run_main", "run_until_signalled")

logger = logging.getLogger("mcpwire.http")


async def run_until_signalled(
    server: Server, host: str, port: int, *, announce: bool = False, **kwargs: Any
) -> None:
    """``serve_http`` until SIGINT or SIGTERM, then shut down gracefully (``Server.run``)."""
    failure: list[OSError] = []
    async with anyio.create_task_group() as tg:

        async def serve(*, task_status: anyio.abc.TaskStatus[int]) -> None:
            await serve_http(server, host, port, task_status=task_status, **kwargs)
            tg.cancel_scope.cancel()

        try:
            bound = await tg.start(serve)
        except OSError as exc:  # cannot bind: report it plainly, not as a group
            failure.append(exc)
            tg.cancel_scope.cancel()
            bound = 0
        if announce and bound:
            base = f"http://{_url_host(host)}:{bound}"
            print(f"mcpwire: serving MCP at {base}{kwargs.get('path', '/mcp')}", file=sys.stderr)
            if kwargs.get("legacy_sse"):
                sse = kwargs.get("sse_path", "/sse")
                print(f"mcpwire: deprecated HTTP+SSE at {base}{sse}", file=sys.stderr)
        try:
            with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                async for _ in signals:
                    logger.info("signal received: shutting down")
                    tg.cancel_scope.cancel()
                    break
        except NotImplementedError:  # pragma: no cover - no signal support (Windows)
            await anyio.sleep_forever()
    if failure:
        raise failure[0]


def run_main(
    server: Server,
    host: str,
    port: int,
    *,
    allowed_hosts: Sequence[str] | None = None,
    allowed_origins: Sequence[str] | None = None,
    backend: str = "asyncio",
    **options: Any,
) -> int:
    """Command-line entry: serve until SIGINT/SIGTERM; the exit status.

    ``None`` for an allow-list means the default ("auto"); a list is used as
    given (``["*"]`` accepts anything). ``options`` go to ``serve_http``
    (``legacy_sse=True`` adds the deprecated HTTP+SSE endpoints).
    """
    try:
        anyio.run(
            functools.partial(
                run_until_signalled,
                server,
                host,
                port,
                announce=True,
                allowed_hosts=allowed_hosts if allowed_hosts else "auto",
                allowed_origins=allowed_origins if allowed_origins else "auto",
                **options,
            ),
            backend=backend,
        )
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        print(f"mcpwire: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        return 3
    return 0


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
