"""The loopback redirect URI listener (RFC 8252 §7.3) that receives authorization responses."""

from __future__ import annotations

from urllib.parse import urlencode

import anyio
import h11
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpwire._errors import AuthorizationError
from mcpwire._oauth_redirect import AuthorizationDenied, LoopbackRedirect

pytestmark = pytest.mark.anyio


async def exchange(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send raw request bytes; the status, headers and body of the answer."""
    async with await anyio.connect_tcp("127.0.0.1", port) as stream:
        await stream.send(raw)
        conn = h11.Connection(h11.CLIENT)
        conn.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
        status, headers, body = 0, {}, b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                try:
                    conn.receive_data(await stream.receive())
                except anyio.EndOfStream:
                    conn.receive_data(b"")
                continue
            if isinstance(event, h11.Response):
                status = event.status_code
                headers = {k.decode(): v.decode() for k, v in event.headers}
            elif isinstance(event, h11.Data):
                body += bytes(event.data)
            elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
                return status, headers, body


def get(path: str, method: str = "GET") -> bytes:
    return f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode()


async def test_code_and_state_end_the_wait() -> None:
    async with LoopbackRedirect() as redirect:
        assert redirect.redirect_uri == f"http://127.0.0.1:{redirect.port}/callback"
        async with anyio.create_task_group() as tg:
            answers: list[tuple[int, dict[str, str], bytes]] = []

            async def browser() -> None:
                query = urlencode({"code": "c-1", "state": "s-1", "iss": "https://as.example"})
                answers.append(await exchange(redirect.port, get(f"/callback?{query}")))

            tg.start_soon(browser)
            response = await redirect.wait("s-1", timeout=10)
    assert (response.code, response.state, response.iss) == ("c-1", "s-1", "https://as.example")
    assert response.params["code"] == "c-1"
    status, headers, body = answers[0]
    assert status == 200
    assert headers["cache-control"] == "no-store"
    assert headers["referrer-policy"] == "no-referrer"
    assert b"Authorization complete" in body


async def test_request_before_wait_is_held_until_the_state_is_known() -> None:
    async with LoopbackRedirect() as redirect, anyio.create_task_group() as tg:
        done = anyio.Event()
        statuses: list[int] = []

        async def browser() -> None:
            statuses.append((await exchange(redirect.port, get("/callback?code=k&state=early")))[0])
            done.set()

        tg.start_soon(browser)
        await anyio.sleep(0.05)
        assert not done.is_set()  # held: nobody has said which state is valid
        response = await redirect.wait("early", timeout=10)
        await done.wait()
    assert response.code == "k"
    assert statuses == [200]


async def test_wrong_state_is_refused_and_the_listener_keeps_waiting() -> None:
    """RFC 6749 §10.12: a response with a state the client did not send is a
    forgery (CSRF); it must not end the flow, the real one still can."""
    async with LoopbackRedirect() as redirect, anyio.create_task_group() as tg:

        async def browser() -> None:
            status, _, body = await exchange(redirect.port, get("/callback?code=evil&state=x"))
            assert status == 400
            assert b"state does not match" in body
            status, _, _ = await exchange(redirect.port, get("/callback?code=good&state=real"))
            assert status == 200

        tg.start_soon(browser)
        response = await redirect.wait("real", timeout=10)
    assert response.code == "good"


async def test_error_response_raises_authorization_denied() -> None:
    async with LoopbackRedirect() as redirect, anyio.create_task_group() as tg:
        query = urlencode(
            {"error": "access_denied", "error_description": "user said <no>", "state": "s"}
        )
        answers: list[bytes] = []

        async def browser() -> None:
            answers.append((await exchange(redirect.port, get(f"/callback?{query}")))[2])

        tg.start_soon(browser)
        with pytest.raises(AuthorizationDenied) as caught:
            await redirect.wait("s", timeout=10)
    assert isinstance(caught.value, AuthorizationError)
    assert caught.value.error == "access_denied"
    assert caught.value.description == "user said <no>"
    assert "access_denied" in str(caught.value)
    assert b"<no>" not in answers[0]  # nothing from the request reaches the page unescaped


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        (get("/favicon.ico"), 404),
        (get("/callback?code=a&state=s", method="POST"), 405),
        (get("/callback?code=a&code=b&state=s"), 400),  # RFC 6749 §3.1: no repeated parameter
        (get("/callback?state=s"), 400),  # neither code nor error
        (get("/callback?" + "&".join(f"p{i}=1" for i in range(100))), 400),
        (b"GET /callback HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20_000 + b"\r\n\r\n", 431),
        (b"NOT HTTP\r\n\r\n", 400),
    ],
)
async def test_bad_requests_get_precise_statuses_and_do_not_end_the_wait(
    raw: bytes, status: int
) -> None:
    async with LoopbackRedirect() as redirect, anyio.create_task_group() as tg:

        async def browser() -> None:
            assert (await exchange(redirect.port, raw))[0] == status
            assert (await exchange(redirect.port, get("/callback?code=ok&state=s")))[0] == 200

        tg.start_soon(browser)
        assert (await redirect.wait("s", timeout=10)).code == "ok"


async def test_head_gets_headers_only() -> None:
    async with LoopbackRedirect() as redirect:
        raw = get("/elsewhere", method="HEAD")
        async with await anyio.connect_tcp("127.0.0.1", redirect.port) as stream:
            await stream.send(raw)
            received = b""
            with anyio.fail_after(10):
                while True:
                    try:
                        received += await stream.receive()
                    except anyio.EndOfStream:
                        break
    assert received.startswith(b"HTTP/1.1 404 ")
    assert received.endswith(b"\r\n\r\n")  # no body after the head


async def test_later_responses_are_refused_once_one_was_taken() -> None:
    async with LoopbackRedirect() as redirect, anyio.create_task_group() as tg:
        tg.start_soon(exchange, redirect.port, get("/callback?code=first&state=s"))
        assert (await redirect.wait("s", timeout=10)).code == "first"
        status, _, body = await exchange(redirect.port, get("/callback?code=second&state=s"))
    assert status == 400
    assert b"already received" in body


async def test_redirect_handler_serves_an_oauth_client_flow_twice() -> None:
    """The handler ``OAuthClient`` calls: it shows the authorization URL, takes the
    state from it, and returns the URL the browser came back with; a second
    authorization (a scope step-up) waits again on the same listener."""
    shown: list[str] = []
    async with LoopbackRedirect() as redirect, anyio.create_task_group() as tg:

        def show(url: str) -> None:
            shown.append(url)
            # The "browser": the authorization server redirects it back at once.
            state = url.rsplit("state=", 1)[1]
            tg.start_soon(
                exchange, redirect.port, get(f"/callback?code=c{len(shown)}&state={state}")
            )

        handle = redirect.redirect_handler(show, timeout=10)
        first = await handle("https://as.example/authorize?client_id=x&state=one")
        second = await handle("https://as.example/authorize?client_id=x&state=two")
    assert first == f"{redirect.redirect_uri}?code=c1&state=one"
    assert second == f"{redirect.redirect_uri}?code=c2&state=two"
    assert len(shown) == 2


async def test_response_with_no_wait_in_progress_is_refused_after_read_timeout() -> None:
    async with LoopbackRedirect(read_timeout=0.1) as redirect:
        status, _, body = await exchange(redirect.port, get("/callback?code=c&state=s"))
    assert status == 400
    assert b"No authorization is in progress" in body


async def test_one_wait_at_a_time() -> None:
    async with LoopbackRedirect() as redirect, anyio.create_task_group() as tg:
        tg.start_soon(redirect.wait, "s")
        await anyio.sleep(0.01)
        with pytest.raises(RuntimeError, match="another wait"):
            await redirect.wait("t")
        tg.cancel_scope.cancel()


async def test_redirect_handler_times_out_with_authorization_error() -> None:
    async with LoopbackRedirect() as redirect:
        handle = redirect.redirect_handler(timeout=0.05)
        with pytest.raises(AuthorizationError, match="no authorization response"):
            await handle("https://as.example/authorize?state=s")


async def test_wait_times_out() -> None:
    async with LoopbackRedirect() as redirect:
        with pytest.raises(TimeoutError):
            await redirect.wait("s", timeout=0.05)


async def test_silent_connection_is_dropped_after_read_timeout() -> None:
    async with (
        LoopbackRedirect(read_timeout=0.1) as redirect,
        await anyio.connect_tcp("127.0.0.1", redirect.port) as stream,
    ):
        with anyio.fail_after(10), pytest.raises((anyio.EndOfStream, anyio.BrokenResourceError)):
            await stream.receive()


async def test_fixed_port_and_path() -> None:
    async with LoopbackRedirect(path="/oauth/cb") as first:
        port = first.port
    async with LoopbackRedirect(port=port, path="/oauth/cb") as redirect:
        assert redirect.redirect_uri == f"http://127.0.0.1:{port}/oauth/cb"


async def test_misuse_is_reported() -> None:
    redirect = LoopbackRedirect()
    with pytest.raises(RuntimeError):
        _ = redirect.redirect_uri
    with pytest.raises(RuntimeError):
        await redirect.wait("s")
    with pytest.raises(ValueError, match="path"):
        LoopbackRedirect(path="callback")


@given(
    code=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40),
    state=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40),
)
def test_any_code_and_state_round_trip_through_the_query(code: str, state: str) -> None:
    """Whatever an authorization server puts in the code and state (percent-encoded
    as RFC 6749 Appendix B says) comes back out exactly."""

    async def main() -> None:
        async with LoopbackRedirect() as redirect, anyio.create_task_group() as tg:
            query = urlencode({"code": code, "state": state})
            tg.start_soon(exchange, redirect.port, get(f"/callback?{query}"))
            response = await redirect.wait(state, timeout=10)
        assert (response.code, response.state) == (code, state)

    anyio.run(main)
