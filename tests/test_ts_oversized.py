"""Oversized messages between mcpwire and the official TypeScript SDK over stdio.

The TypeScript SDK writes a request as ``{method, params, jsonrpc, id}`` and a
result as ``{result, jsonrpc, id}``: the id comes last. A message over the
size limit is dropped as it arrives, and only its first and last bytes are
kept (``sansio._oversized``); with this peer the id is in the last ones.
Both ways, the call that the oversized message belongs to must fail at once,
naming the limit, and the connection must serve on:

* mcpwire's ``Client`` (1 MiB limit) calls the SDK server's ``plain`` tool
  (``conformance/peers/ts_tasks_server.mjs``) with a 2 MB message, whose
  result comes back over the limit;
* the SDK's client (``conformance/peers/ts_big_request.mjs``) sends a 2 MB
  request to an mcpwire server with a 1 MiB limit and reports what it got
  back, and how soon.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest
from test_tasks_interop import PEERS, node  # noqa: F401  (``node`` is a fixture)

from mcpwire import Client, JSONRPCError
from mcpwire.sansio import Limits

LIMIT = 1 << 20
BIG = 2_000_000
WAIT = 60.0

SERVER = textwrap.dedent(
    f"""
    from mcpwire import Server, StdioServerTransport
    from mcpwire.sansio import Limits
    import anyio

    server = Server("limited", "1.0.0")


    @server.tool()
    def echo(message: str) -> str:
        return message


    async def main() -> None:
        transport = StdioServerTransport(limits=Limits(max_size={LIMIT}))
        try:
            await server.serve(transport)
        finally:
            await transport.aclose()


    anyio.run(main)
    """
)


@pytest.mark.anyio
async def test_an_oversized_result_from_the_ts_server_fails_our_call_at_once(
    node: str,  # noqa: F811
) -> None:
    script = str(PEERS / "ts_tasks_server.mjs")
    with anyio.fail_after(WAIT):
        async with Client.stdio(
            node, [script], mode="2025-11-25", limits=Limits(max_size=LIMIT)
        ) as client:
            with anyio.fail_after(15):  # the call's own timeout is far longer
                with pytest.raises(
                    JSONRPCError, match=f"exceeds the message size limit of {LIMIT}"
                ):
                    await client.call_tool("plain", {"message": "x" * BIG}, timeout=WAIT)
            assert (await client.call_tool("plain", {"message": "fits"})).text == "fits"


def test_the_ts_client_gets_its_oversized_request_refused_by_id(
    node: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    server = tmp_path / "limited_server.py"
    server.write_text(SERVER)
    argv = [node, str(PEERS / "ts_big_request.mjs"), str(BIG), sys.executable, str(server)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=WAIT, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    big = report["big"]
    assert big["code"] == -32600, big
    assert f"exceeds the message size limit of {LIMIT}" in big["message"]
    assert big["ms"] < 15_000  # answered, not timed out (the SDK waits 30 s)
    assert report["small"] == {"text": "small"}
