"""What a client learns from listing the tools on a tool's first call: one listing at a time.

Two things are learnt from ``tools/list`` (``Client.list_tools``, every page)
when a tool is first called: its ``outputSchema``, for a validating client, after
the call (``learn``); and, before a 2025-11-25 call to a server offering tasks,
its ``execution.taskSupport``, whether the call must go as a task
(``task_support``). Both come from one ``ToolListing``: calls that need a listing
while one runs wait for it instead of starting their own (single flight), so N
concurrent first calls cost one ``tools/list`` round, whichever of the two they
need it for, and they all share its outcome.

A listing answered with an error leaves their tools unvalidated and not tasks
(the server cannot list). One with no answer (timeout, the connection gone, a
``TransportError``: an error this side made up because no answer could be read)
leaves nothing learnt, and the next first call lists again: a result already in
goes unchecked (it is the caller's all the same), while a call that had to know
whether it is a task fails with why no answer came: the error of the listing
for the call that ran it, a new one of the same kind (``ConnectionClosed``,
``RequestTimeout``, ``TransportError``) for each call that waited on it, so that callers share no
traceback. A call that waited on a listing whose caller was cancelled runs a
listing of its own if it still needs one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from ._errors import (
    ConnectionClosed,
    JSONRPCError,
    MCPWireError,
    RequestTimeout,
    TransportError,
)

if TYPE_CHECKING:
    from ._client import Client

__all__ = ("ToolListing",)


class _Listing:
    __slots__ = ("done", "error", "learnt")

    def __init__(self) -> None:
        self.done = anyio.Event()
        #: The server answered (a list, or an error): what it said is now known.
        self.learnt = False
        #: Why no answer came; ``None`` when one did, or the lister was cancelled.
        self.error: MCPWireError | None = None


class ToolListing:
    """The ``tools/list`` round in flight, if any, of one client."""

    __slots__ = ("_running",)

    def __init__(self) -> None:
        self._running: _Listing | None = None

    async def _listing(self, client: Client) -> tuple[_Listing, bool]:
        """The listing in flight, waited for, or a new one run here; and whether it
        ran here."""
        listing = self._running
        if listing is not None:
            await listing.done.wait()
            return listing, False
        listing = self._running = _Listing()
        try:
            await client.list_tools()
            listing.learnt = True
        except TransportError as exc:
            listing.error = exc  # made up here: the server said nothing about listing
        except JSONRPCError:
            listing.learnt = True  # it cannot list: its tools go unvalidated, not tasks
        except MCPWireError as exc:
            listing.error = exc  # no answer, or the connection ended since
        finally:
            self._running = None
            listing.done.set()
        return listing, True

    @staticmethod
    def _known(client: Client, name: str) -> None:
        # A tool the listing did not name: nothing to check, and no task.
        client._output_schemas.setdefault(name, None)
        client._task_support.setdefault(name, "forbidden")

    async def learn(self, client: Client, name: str) -> bool:
        """Learn ``name``'s output schema into ``client._output_schemas``, with the
        listing in flight or a new one. False: no answer came, so nothing was
        learnt and the result goes unchecked."""
        listing, _ = await self._listing(client)
        if not listing.learnt:
            return False
        self._known(client, name)
        return True

    async def task_support(self, client: Client, name: str) -> str:
        """``name``'s 2025-11-25 ``taskSupport`` (forbidden, optional, required), with
        the listing in flight or a new one. Raises why no answer came, if none did."""
        while True:
            listing, ran_here = await self._listing(client)
            if listing.learnt:
                self._known(client, name)
                return client._task_support[name]
            error = listing.error
            if error is None:
                continue  # its lister was cancelled: list here
            if ran_here:
                raise error
            if isinstance(error, ConnectionClosed):
                raise error.again()
            if isinstance(error, RequestTimeout):
                raise RequestTimeout(error.method, error.seconds, error.detail)
            if isinstance(error, TransportError):
                raise TransportError(error.code, error.message, error.data, status=error.status)
            raise MCPWireError(
                f"tools/list, which tells whether tool {name!r} must be called as a task, "
                f"got no answer: {error}"
            )
