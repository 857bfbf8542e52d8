"""Tokens and client identities kept in a file, so a command line or a hub
restarted later does not send its user through the authorization flow again.

``FileTokenStorage(path, server_url)`` is the ``TokenStorage`` of one MCP
server; any number of them, for any number of servers and processes, share
one file::

    {"format": 1,
     "tokens":  {"<server url>": {"access_token": ..., "refresh_token": ..., ...}},
     "clients": {"<issuer>": {"client_id": ..., "client_secret": ..., ...}},
     "callbacks": {"<server url>": "http://127.0.0.1:<port>/callback"}}

Tokens are kept per server (the resource they were minted for, RFC 8707);
client identities per authorization server, as ``OAuthClient`` asks for them;
and, for the command line and the hub, the loopback redirect URI each server's
client was registered with (``callback_uri``), so that a later run listens on
the same port.

The file holds bearer secrets, so it is created readable by its owner alone
(mode 0600, in a directory made 0700 when it has to be made), and it is
written whole to a temporary file that then replaces it, so a reader never
sees half of it and a crash leaves the old one. A read-modify-write holds an
advisory lock on ``<path>.lock`` (POSIX ``flock``; where there is none, the
last writer wins). The file is bounded: at most ``MAX_FILE_SIZE`` bytes are
read, and each table keeps the ``MAX_ENTRIES`` most recently written entries.
A file that cannot be read as such a document raises ``AuthorizationError``
naming it, rather than being overwritten.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import MISSING, asdict, fields
from pathlib import Path
from typing import Any, TypeVar

import anyio.to_thread
import orjson

from ._errors import AuthorizationError
from ._files import replace_file
from ._oauth import ClientInfo, OAuthTokens

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ("MAX_ENTRIES", "MAX_FILE_SIZE", "FileTokenStorage")

#: The largest token file read, in bytes.
MAX_FILE_SIZE = 1024 * 1024
#: Entries kept in each table (servers' tokens, authorization servers' clients).
MAX_ENTRIES = 256
_FORMAT = 1
_T = TypeVar("_T", OAuthTokens, ClientInfo)


class FileTokenStorage:
    """The ``TokenStorage`` of the server at ``server_url``, kept in ``path``
    (see the module docstring)."""

    def __init__(self, path: str | os.PathLike[str], server_url: str) -> None:
        self.path = Path(path).expanduser()
        self.server_url = server_url

    async def get_tokens(self) -> OAuthTokens | None:
        doc = await anyio.to_thread.run_sync(self._read)
        return _entry(doc["tokens"].get(self.server_url), OAuthTokens, self.path)

    async def set_tokens(self, tokens: OAuthTokens | None) -> None:
        value = None if tokens is None else asdict(tokens)
        await anyio.to_thread.run_sync(self._update, "tokens", self.server_url, value)

    async def get_client(self, issuer: str) -> ClientInfo | None:
        doc = await anyio.to_thread.run_sync(self._read)
        return _entry(doc["clients"].get(issuer), ClientInfo, self.path)

    async def set_client(self, issuer: str, info: ClientInfo) -> None:
        await anyio.to_thread.run_sync(self._update, "clients", issuer, asdict(info))

    def callback_uri(self) -> str | None:
        """The loopback redirect URI kept for this server, if any (blocking: made
        for setting up, once per server, before its flows)."""
        value = self._read()["callbacks"].get(self.server_url)
        return value if isinstance(value, str) else None

    def keep_callback_uri(self, uri: str) -> None:
        """Keep ``uri`` as this server's redirect URI (blocking, as ``callback_uri``).

        A client registers its redirect URI, loopback port included; a later run
        that must authorize again listens on the same one, since authorization
        servers often match registered redirect URIs exactly."""
        self._update("callbacks", self.server_url, uri)

    # -- the file (in a worker thread) ----------------------------------------------------

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            with open(self.path, "rb") as f:
                data = f.read(MAX_FILE_SIZE + 1)
        except FileNotFoundError:
            return {"tokens": {}, "clients": {}, "callbacks": {}}
        except OSError as exc:
            raise AuthorizationError(f"token store {self.path}: {exc.strerror}") from None
        if len(data) > MAX_FILE_SIZE:
            raise AuthorizationError(f"token store {self.path}: larger than {MAX_FILE_SIZE} bytes")
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise AuthorizationError(f"token store {self.path}: not JSON ({exc})") from None
        if (
            not isinstance(doc, dict)
            or doc.get("format") != _FORMAT
            or not isinstance(doc.get("tokens"), dict)
            or not isinstance(doc.get("clients"), dict)
            or not isinstance(doc.setdefault("callbacks", {}), dict)
        ):
            raise AuthorizationError(
                f"token store {self.path}: not a format-{_FORMAT} mcpwire token file"
            )
        return doc

    def _update(self, table: str, key: str, value: object) -> None:
        with self._locked():
            doc = self._read()
            entries = doc[table]
            entries.pop(key, None)  # re-inserted last: the most recently written
            if value is not None:
                entries[key] = value
            while len(entries) > MAX_ENTRIES:
                del entries[next(iter(entries))]
            self._write(
                {
                    "format": _FORMAT,
                    "tokens": doc["tokens"],
                    "clients": doc["clients"],
                    "callbacks": doc["callbacks"],
                }
            )

    def _write(self, doc: dict[str, Any]) -> None:
        folder = self.path.parent
        if not folder.exists():
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        replace_file(self.path, orjson.dumps(doc, option=orjson.OPT_INDENT_2))  # mode 0600

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        if fcntl is None:  # pragma: no cover - not POSIX
            yield
            return
        folder = self.path.parent
        if not folder.exists():
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock


#: What each stored field may hold: a stored entry must match exactly.
_TYPES: dict[type, dict[str, tuple[type, ...]]] = {
    OAuthTokens: {
        "access_token": (str,),
        "issuer": (str,),
        "resource": (str,),
        "refresh_token": (str, type(None)),
        "expires_at": (int, float, type(None)),
        "scopes": (list,),
        "token_type": (str,),
        "dpop_jkt": (str, type(None)),
    },
    ClientInfo: {
        "client_id": (str,),
        "client_secret": (str, type(None)),
        "token_endpoint_auth_method": (str,),
    },
}


def _entry(raw: object, kind: type[_T], path: Path) -> _T | None:
    """A stored entry as ``kind``; a malformed one raises ``AuthorizationError``."""
    if raw is None:
        return None
    types = _TYPES[kind]
    required = {
        f.name for f in fields(kind) if f.default is MISSING and f.default_factory is MISSING
    }
    if (
        not isinstance(raw, dict)
        or not raw.keys() <= types.keys()
        or not required <= raw.keys()
        or not all(isinstance(raw[k], types[k]) for k in raw)
        or not all(isinstance(s, str) for s in raw.get("scopes", ()))
    ):
        raise AuthorizationError(f"token store {path}: a malformed {kind.__name__} entry")
    return kind(**raw)
