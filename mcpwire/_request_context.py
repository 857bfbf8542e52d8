"""What a request handler is told about the request it serves: ``RequestContext``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from .sansio._json import JSONObject
from .sansio._messages import Request, RequestId

if TYPE_CHECKING:
    from ._session import Session

__all__ = ("RequestContext",)


class RequestContext:
    """What a request handler knows about the request it is serving."""

    __slots__ = ("_scope", "request", "session")

    def __init__(self, session: Session, request: Request, scope: anyio.CancelScope) -> None:
        self.session = session
        self.request = request
        self._scope = scope

    @property
    def request_id(self) -> RequestId:
        return self.request.id

    @property
    def cancelled(self) -> bool:
        """True once the peer cancelled this request (or the session is closing)."""
        return self._scope.cancel_called

    @property
    def progress_token(self) -> str | int | float | None:
        """The requester's ``ProgressToken`` (``string | number``), as it came."""
        params = self.request.params
        meta = params.get("_meta") if params else None
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        if isinstance(token, bool) or not isinstance(token, (str, int, float)):
            return None
        return token

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send ``notifications/progress`` if the requester asked for progress."""
        token = self.progress_token
        if token is None:
            return
        params: JSONObject = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.session.notify("notifications/progress", params, related=self.request.id)
