"""A handler gate shared by the tasks tests: the test decides when a handler proceeds."""

from __future__ import annotations

import anyio

__all__ = ("Gate",)


class Gate:
    """Lets the test decide when a handler proceeds, and see that it got there."""

    def __init__(self) -> None:
        self.reached = anyio.Event()
        self.go = anyio.Event()
        self.cancelled = False

    async def wait(self) -> None:
        self.reached.set()
        try:
            await self.go.wait()
        except anyio.get_cancelled_exc_class():
            self.cancelled = True
            raise
