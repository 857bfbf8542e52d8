"""Helpers the hostile-peer fuzz tests share.

Each hypothesis example runs its event loop in a thread of its own
(``in_own_thread``): a backend's run state is per thread, so an example cannot
leave it behind for the next one (or for later tests), whatever happens inside
it. Afterwards the example must have left no task running (``stray_tasks``)
and logged nothing at ERROR on the ``mcpwire`` loggers (``mcpwire_errors``).

Import as ``from fuzzing import ...`` (``tests/`` is on ``sys.path``).
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

__all__ = ("in_own_thread", "mcpwire_errors", "stray_tasks")

_T = TypeVar("_T")


def in_own_thread(fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """``fn(*args, **kwargs)`` in a fresh thread; its result, or what it raised."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(fn, *args, **kwargs).result()


def stray_tasks(backend: str) -> list[str]:
    """Tasks still alive besides this one (trio's nurseries make leaks impossible)."""
    if backend != "asyncio":
        return []
    import asyncio

    me = asyncio.current_task()
    return [repr(t) for t in asyncio.all_tasks() if t is not me and not t.done()]


def mcpwire_errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the ``mcpwire`` loggers said at ERROR or above."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.split(".")[0] == "mcpwire" and r.levelno >= logging.ERROR
    ]
