"""Shared test configuration.

* ``anyio_backend`` is parametrized so that every ``@pytest.mark.anyio`` test
  runs on both anyio backends, asyncio and trio.
* ``sdk_auth`` / ``sdk_short``: the reference SDK's authorization-enabled
  server in a child process, for the OAuth tests.
* ``dispatched``: the kinds of message that sessions' readers dispatch
  (``Session._dispatch``), in order, for tests of what bypasses the reader.
* The client's per-process era cache is emptied before each test: test
  servers come and go on reused loopback ports, and one test's legacy server
  must not decide another's era (``test_era_cache.py`` tests the cache).
* Hypothesis profiles: ``default`` and ``ci`` (identical: 100 examples, no
  deadline, since timing on a loaded 2-core machine is not what we test).
  ``HYPOTHESIS_PROFILE`` selects one; ``ci`` is loaded when it is unset.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

settings.register_profile("default", max_examples=100, deadline=None)
settings.register_profile("ci", max_examples=100, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(autouse=True)
def _forget_eras() -> None:
    handshake = sys.modules.get("mcpwire._handshake")
    if handshake is not None:
        handshake._ERA_CACHE.clear()


def _sdk_auth_server(tmp_path_factory: pytest.TempPathFactory, lifetime: int) -> Iterator[Any]:
    from http_client.child import ChildServer

    script = Path(__file__).resolve().parent / "http_client" / "ref_auth_server.py"
    server = ChildServer(script, [str(lifetime)], tmp_path_factory.mktemp("sdk-auth"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def sdk_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The reference SDK as authorization server and protected resource
    (``http_client/ref_auth_server.py``) in a child process; tokens live an hour."""
    yield from _sdk_auth_server(tmp_path_factory, 3600)


@pytest.fixture(scope="module")
def sdk_short(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The same with access tokens that live one second, so that they must be refreshed."""
    yield from _sdk_auth_server(tmp_path_factory, 1)


@pytest.fixture
def dispatched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from mcpwire._session import Session

    kinds: list[str] = []
    real = Session._dispatch

    async def spy(self: Session, item: object, *, inline: bool = False) -> None:
        kinds.append(type(item).__name__)
        await real(self, item, inline=inline)

    monkeypatch.setattr(Session, "_dispatch", spy)
    return kinds
