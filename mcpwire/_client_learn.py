"""Learning tools' ``outputSchema`` for a validating client: one listing at a time.

The first call of a tool lists the server's tools (``Client.list_tools``, every
page) to learn the tool's ``outputSchema``. Calls that come to learn while such a
listing runs wait for it instead of starting their own (single flight): N
concurrent first calls cost one ``tools/list`` round, and they all share its
outcome. A listing answered with an error leaves their tools unvalidated (the
server cannot list); one with no answer (timeout, the connection gone, the call
that ran it cancelled) leaves their results unchecked, and the next first call
lists again. Either way the calls keep their results.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from ._errors import JSONRPCError, MCPWireError

if TYPE_CHECKING:
    from ._client import Client

__all__ = ("SchemaLearning",)


class _Listing:
    __slots__ = ("done", "learnt")

    def __init__(self) -> None:
        self.done = anyio.Event()
        #: The server answered (a list, or an error): what it said is now known.
        self.learnt = False


class SchemaLearning:
    """The listing in flight, if any, of one client."""

    __slots__ = ("_running",)

    def __init__(self) -> None:
        self._running: _Listing | None = None

    async def learn(self, client: Client, name: str) -> bool:
        """Learn ``name``'s output schema into ``client._output_schemas``, with the
        listing in flight or a new one. False: no answer came, so nothing was
        learnt and the result goes unchecked."""
        listing = self._running
        if listing is None:
            listing = self._running = _Listing()
            try:
                await client.list_tools()
                listing.learnt = True
            except JSONRPCError:
                listing.learnt = True  # it cannot list: its tools go unvalidated
            except MCPWireError:
                pass  # no answer, or the connection ended since the result came
            finally:
                self._running = None
                listing.done.set()
        else:
            await listing.done.wait()
        if not listing.learnt:
            return False
        client._output_schemas.setdefault(name, None)  # not listed: nothing to check
        return True
