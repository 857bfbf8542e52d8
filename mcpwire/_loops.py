"""Which asyncio loop runs us, if any: the switch for the asyncio-only fast paths.

Several layers (the stdio reader, request waiting, the TCP streams) take a
faster route on asyncio and anyio's portable one elsewhere. They ask here,
without importing asyncio where nothing else has (a trio program need not
load it).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

__all__ = ("outside_task", "running_asyncio_loop")


def running_asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop, or ``None`` (on trio, or outside any loop)."""
    if "asyncio" not in sys.modules:
        return None
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def outside_task(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether the caller runs in one of ``loop``'s callbacks, not in a task of it."""
    import asyncio

    return asyncio.current_task(loop) is None
