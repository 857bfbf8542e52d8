"""``auth=`` through every public entry point: ``asgi_app`` and ``Server.serve_http``.

Under ASGI the resource URL must be configured (only the host and its proxy
know the scheme and name clients use); the rules are the same as under
mcpwire's own server (``test_http_auth``).
"""

from __future__ import annotations

import functools

import anyio
import pytest
from http_raw import init_body
from test_asgi import echo_call, lifespan, request
from test_http_auth import TOKENS, auth_config, bearer, challenge, guarded_app, once

from mcpwire import ResourceServerAuth, StaticTokenVerifier, asgi_app
from mcpwire.examples.everything import server as everything

pytestmark = pytest.mark.anyio

RESOURCE = "https://mcp.example.com/mcp"


def test_asgi_needs_the_resource_url() -> None:
    with pytest.raises(ValueError, match="resource="):
        asgi_app(everything, auth=auth_config())


async def test_asgi_app_is_protected(anyio_backend: str) -> None:
    app = asgi_app(everything, auth=auth_config(resource=RESOURCE))
    body, headers = echo_call()
    reply = await request(app, body=body, headers=headers)
    assert reply.status == 401
    assert challenge(reply)["resource_metadata"] == (  # type: ignore[arg-type]
        "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
    )
    reply = await request(app, body=body, headers={**headers, "authorization": "Bearer read-only"})
    assert reply.status == 403
    reply = await request(app, body=body, headers={**headers, "authorization": "Bearer good"})
    assert reply.status == 200 and reply.json()["result"]["content"][0]["text"] == "hi"
    reply = await request(app, "GET", path="/.well-known/oauth-protected-resource/mcp")
    assert reply.status == 200 and reply.json()["resource"] == RESOURCE
    # Legacy sessions (hosted by the lifespan) are bound to their owner here too.
    async with lifespan(app):
        reply = await request(app, body=init_body(), headers={"authorization": "Bearer good"})
        assert reply.status == 200
        sid = reply.headers["mcp-session-id"]
        stolen = {"mcp-session-id": sid, "authorization": "Bearer other-client"}
        reply = await request(
            app, body={"jsonrpc": "2.0", "id": 2, "method": "ping"}, headers=stolen
        )
        assert reply.status == 404


async def test_server_serve_http_takes_auth(anyio_backend: str) -> None:
    app = guarded_app()
    auth = ResourceServerAuth(
        StaticTokenVerifier(TOKENS), authorization_servers=["https://a.example"]
    )
    async with anyio.create_task_group() as tg:
        port = await tg.start(functools.partial(app.serve_http, "127.0.0.1", 0, auth=auth))
        reply = await once(port, body=init_body())
        assert reply.status == 401
        assert (await once(port, body=init_body(), headers=bearer("good"))).status == 200
        tg.cancel_scope.cancel()
