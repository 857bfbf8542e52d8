"""FileTokenStorage: OAuth tokens and client identities kept in a file."""

from __future__ import annotations

import stat
from pathlib import Path

import anyio
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpwire._errors import AuthorizationError
from mcpwire._oauth import ClientInfo, OAuthTokens
from mcpwire._oauth_file import MAX_ENTRIES, MAX_FILE_SIZE, FileTokenStorage

pytestmark = pytest.mark.anyio

TOKENS = OAuthTokens(
    access_token="at-1",
    issuer="https://as.example",
    resource="https://mcp.example/mcp",
    refresh_token="rt-1",
    expires_at=1_900_000_000.5,
    scopes=["mcp:read", "offline_access"],
)
CLIENT = ClientInfo("client-1", "secret-1", "client_secret_basic")


async def test_round_trip_per_server_and_per_issuer(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    one = FileTokenStorage(path, "https://mcp.example/mcp")
    other = FileTokenStorage(path, "https://other.example/mcp")
    assert await one.get_tokens() is None
    assert await one.get_client("https://as.example") is None
    await one.set_tokens(TOKENS)
    await one.set_client("https://as.example", CLIENT)
    assert await one.get_tokens() == TOKENS
    assert await other.get_tokens() is None  # tokens belong to one server (RFC 8707)
    assert await other.get_client("https://as.example") == CLIENT  # identities to the issuer
    # A new process reads the same file.
    again = FileTokenStorage(path, "https://mcp.example/mcp")
    assert await again.get_tokens() == TOKENS
    await again.set_tokens(None)
    assert await one.get_tokens() is None
    assert await one.get_client("https://as.example") == CLIENT


async def test_file_is_private_and_written_whole(tmp_path: Path) -> None:
    path = tmp_path / "new" / "dir" / "tokens.json"
    store = FileTokenStorage(path, "https://mcp.example/mcp")
    await store.set_tokens(TOKENS)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    doc = orjson.loads(path.read_bytes())
    assert doc["format"] == 1
    assert doc["tokens"]["https://mcp.example/mcp"]["access_token"] == "at-1"
    # No temporary file is left behind.
    assert sorted(p.name for p in path.parent.iterdir()) == ["tokens.json", "tokens.json.lock"]


async def test_tables_keep_the_most_recent_entries(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    for i in range(MAX_ENTRIES + 5):
        await FileTokenStorage(path, f"https://s{i}.example/mcp").set_tokens(TOKENS)
    doc = orjson.loads(path.read_bytes())
    assert len(doc["tokens"]) == MAX_ENTRIES
    assert "https://s0.example/mcp" not in doc["tokens"]
    assert f"https://s{MAX_ENTRIES + 4}.example/mcp" in doc["tokens"]


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"{not json", "not JSON"),
        (b"[]", "not a format-1"),
        (b'{"format": 2, "tokens": {}, "clients": {}}', "not a format-1"),
        (b'{"format": 1, "tokens": [], "clients": {}}', "not a format-1"),
        (b'{"format": 1, "tokens": {"u": {"access_token": 1}}, "clients": {}}', "malformed"),
        (b'{"format": 1, "tokens": {"u": {"access_token": "a"}}, "clients": {}}', "malformed"),
        (
            b'{"format": 1, "tokens": {"u": {"access_token": "a", "issuer": "i", '
            b'"resource": "r", "scopes": [1]}}, "clients": {}}',
            "malformed",
        ),
        (
            b'{"format": 1, "tokens": {"u": {"access_token": "a", "issuer": "i", '
            b'"resource": "r", "extra": 1}}, "clients": {}}',
            "malformed",
        ),
    ],
)
async def test_a_bad_file_is_refused_by_name_and_left_alone(
    tmp_path: Path, content: bytes, match: str
) -> None:
    path = tmp_path / "tokens.json"
    path.write_bytes(content)
    store = FileTokenStorage(path, "u")
    with pytest.raises(AuthorizationError, match=match) as caught:
        await store.get_tokens()
    assert str(path) in str(caught.value)
    if b'"u"' not in content:
        with pytest.raises(AuthorizationError, match=match):
            await store.set_tokens(TOKENS)  # a write never clobbers what it cannot read
    assert path.read_bytes() == content


async def test_an_oversized_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_bytes(b" " * (MAX_FILE_SIZE + 1))
    with pytest.raises(AuthorizationError, match="larger than"):
        await FileTokenStorage(path, "u").get_tokens()


async def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    """Read-modify-write under the lock: every writer's entry survives."""
    path = tmp_path / "tokens.json"
    async with anyio.create_task_group() as tg:
        for i in range(20):
            tg.start_soon(FileTokenStorage(path, f"https://s{i}.example").set_tokens, TOKENS)
            tg.start_soon(FileTokenStorage(path, "x").set_client, f"https://as{i}.example", CLIENT)
    doc = orjson.loads(path.read_bytes())
    assert len(doc["tokens"]) == 20
    assert len(doc["clients"]) == 20


async def test_unreadable_file_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.mkdir()
    with pytest.raises(AuthorizationError, match=r"token store .*tokens\.json"):
        await FileTokenStorage(path, "u").get_tokens()


text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


@given(
    tokens=st.builds(
        OAuthTokens,
        access_token=text,
        issuer=text,
        resource=text,
        refresh_token=st.none() | text,
        expires_at=st.none() | st.floats(allow_nan=False, allow_infinity=False),
        scopes=st.lists(text, max_size=4),
        token_type=st.sampled_from(["Bearer", "DPoP"]),
        dpop_jkt=st.none() | text,
    ),
    client=st.builds(
        ClientInfo, client_id=text, client_secret=st.none() | text, token_endpoint_auth_method=text
    ),
    server=text,
    issuer=text,
)
def test_anything_stored_comes_back_equal(
    tmp_path_factory: pytest.TempPathFactory,
    tokens: OAuthTokens,
    client: ClientInfo,
    server: str,
    issuer: str,
) -> None:
    path = tmp_path_factory.mktemp("store") / "tokens.json"

    async def main() -> None:
        store = FileTokenStorage(path, server)
        await store.set_tokens(tokens)
        await store.set_client(issuer, client)
        fresh = FileTokenStorage(path, server)
        assert await fresh.get_tokens() == tokens
        assert await fresh.get_client(issuer) == client

    anyio.run(main)


def test_callback_uri_is_kept_per_server(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    one = FileTokenStorage(path, "https://mcp.example/mcp")
    assert one.callback_uri() is None
    one.keep_callback_uri("http://127.0.0.1:45678/callback")
    assert FileTokenStorage(path, "https://mcp.example/mcp").callback_uri() == (
        "http://127.0.0.1:45678/callback"
    )
    assert FileTokenStorage(path, "https://other.example/mcp").callback_uri() is None
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


async def test_a_file_without_callbacks_is_read_and_kept(tmp_path: Path) -> None:
    """Files written before the callbacks table existed stay valid."""
    path = tmp_path / "tokens.json"
    path.write_bytes(b'{"format": 1, "tokens": {}, "clients": {}}')
    store = FileTokenStorage(path, "u")
    assert store.callback_uri() is None
    await store.set_client("https://as.example", CLIENT)
    assert await store.get_client("https://as.example") == CLIENT


def test_a_malformed_callbacks_table_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_bytes(b'{"format": 1, "tokens": {}, "clients": {}, "callbacks": []}')
    with pytest.raises(AuthorizationError, match="not a format-1"):
        FileTokenStorage(path, "u").callback_uri()
