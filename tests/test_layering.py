"""The layering promises, checked in a fresh interpreter.

* ``mcpwire.sansio`` is pure: importing it loads no event loop, no sockets.
* ``import mcpwire`` is cheap: no heavy dependency, and not even anyio until
  something that does I/O is first used.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def modules_after(code: str, watch: list[str]) -> list[str]:
    """Run ``code`` in a fresh interpreter; return which ``watch`` modules it loaded
    (names compared whole: a submodule is watched by its dotted name)."""
    probe = (
        "import json, sys\n"
        f"{code}\n"
        f"watch = {watch!r}\n"
        "loaded = sorted(set(sys.modules) & set(watch))\n"
        "print(json.dumps(loaded))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    result: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_sansio_imports_no_io() -> None:
    watch = ["anyio", "asyncio", "socket", "trio", "sniffio", "selectors"]
    assert modules_after("import mcpwire.sansio", watch) == []


def test_sansio_public_names_load_no_io() -> None:
    code = "import mcpwire.sansio as s\nfor n in s.__all__: getattr(s, n)"
    assert modules_after(code, ["anyio", "asyncio", "socket", "trio"]) == []


def test_import_mcpwire_is_lazy() -> None:
    watch = [
        "pydantic",
        "httpx",
        "httpx2",
        "starlette",
        "uvicorn",
        "jsonschema",
        "mcp",
        "mcp_types",
        "anyio",
        "trio",
        "asyncio",
        "h11",
    ]
    assert modules_after("import mcpwire", watch) == []


def test_servers_and_clients_without_auth_load_none_of_it() -> None:
    """Authorization costs a server or client only when it is used: hashlib's OpenSSL digests
    alone added about 0.9 MB to an idle server's RSS (issue 7's RSS target)."""
    code = (
        "from mcpwire import Client, Server\n"
        "import mcpwire._stdio, mcpwire._stdio_client, mcpwire._http_server\n"
        "import mcpwire._http_run, mcpwire._asgi\n"
        "import mcpwire._http_client, mcpwire._http_client_sse"
    )
    watch = [
        "hashlib",
        "_hashlib",
        "mcpwire._auth_tokens",
        "mcpwire._http_auth",
        "mcpwire._auth_introspect",
        "mcpwire._oauth",
        "mcpwire.sansio._oauth",
        "mcpwire._http_client_auth",
        "mcpwire._jose",
        "mcpwire._oauth_dpop",
        "mcpwire._auth_dpop",
        "mcpwire._jws",
    ]
    assert modules_after(code, watch) == []


def test_errors_are_importable_without_anyio() -> None:
    code = "from mcpwire import ConnectionClosed, JSONRPCError, RequestTimeout"
    assert modules_after(code, ["anyio"]) == []


@pytest.mark.parametrize("name", ["Session", "memory_pair", "StdioClientTransport"])
def test_lazy_names_resolve(name: str) -> None:
    code = f"import mcpwire\nmcpwire.{name}"
    assert modules_after(code, ["anyio", "pydantic", "mcp"]) == ["anyio"]


def test_unknown_attribute_is_an_attribute_error() -> None:
    import mcpwire

    with pytest.raises(AttributeError):
        mcpwire.NoSuchThing  # noqa: B018
    assert "Session" in dir(mcpwire)


def test_server_stack_leaves_optional_parts_unloaded() -> None:
    """A server with a plain tool, set up for HTTP, loads no part it has not used yet:
    the modern and HTTP+SSE endpoints, the SSE encoders and the task machinery load
    with the first request that needs them."""
    code = (
        "import mcpwire._http_server as h\n"
        "from mcpwire import Server\n"
        "server = Server('probe')\n"
        "server.tool()(lambda text: text)\n"
        "h.HTTPServer(server)\n"
    )
    watch = {
        "mcpwire._http_modern",
        "mcpwire._http_sse",
        "mcpwire._task_runs",
        "mcpwire.sansio._sse",
    }
    probe = f"{code}import json, sys\nprint(json.dumps(sorted(set(sys.modules) & {watch!r})))\n"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_stdio_server_leaves_the_client_side_unloaded() -> None:
    """A stdio server loads the framing and its own transport, not the child-process
    machinery of the client side (issue 7's idle RSS target)."""
    code = (
        "from mcpwire import Server, StdioServerTransport\n"
        "server = Server('probe')\n"
        "server.tool()(lambda text: text)\n"
        "StdioServerTransport\n"
    )
    watch = {
        "mcpwire._stdio",
        "mcpwire._stdio_client",
        "mcpwire._client",
        "mcpwire._transport",  # the in-memory transports; the Transport protocol is typing only
        "h11",
    }
    probe = f"{code}import json, sys\nprint(json.dumps(sorted(set(sys.modules) & {watch!r})))\n"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == ["mcpwire._stdio"]


def test_a_client_that_runs_tasks_leaves_the_server_unloaded() -> None:
    """``Client(tasks=True)`` answers ``tasks/*`` with the task store's code and pages
    with the shared cursors; none of that loads the server, its dispatch or schemas."""
    code = "from mcpwire import Client\nimport mcpwire._client_task_host, mcpwire._task_legacy\n"
    watch = ["mcpwire._server", "mcpwire._methods", "mcpwire._jsonschema", "mcpwire._cursor"]
    assert modules_after(code, watch) == ["mcpwire._cursor"]


def test_a_server_loads_its_validator_on_the_first_call() -> None:
    """A server that is only listed (a hub's idle server) never loads the JSON Schema
    validator: a derived input schema is compiled on the tool's first call, which
    still validates (issue 7's idle RSS target)."""
    code = """
import anyio, mcpwire, sys
from mcpwire import Server, Session
server = Server("probe")

@server.tool()
def echo(text: str) -> str:
    return text

INIT = {"protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"}}

async def main() -> None:
    ours, theirs = mcpwire.memory_pair(wire=True)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, theirs)
        async with Session(ours) as session:
            await session.request("initialize", INIT)
            await session.notify("notifications/initialized")
            await session.request("tools/list")
            print("listed", "mcpwire._jsonschema" in sys.modules)
            bad = await session.request("tools/call", {"name": "echo", "arguments": {"text": 5}})
            print("bad", bad.get("isError"))
            good = await session.request("tools/call", {"name": "echo", "arguments": {"text": "x"}})
            print("good", good["content"][0]["text"])
            print("called", "mcpwire._jsonschema" in sys.modules)
        tg.cancel_scope.cancel()

anyio.run(main)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:4] == ["listed False", "bad True", "good x", "called True"]
