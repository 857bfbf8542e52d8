"""mcpwire: a dependency-light toolkit for the Model Context Protocol and JSON-RPC 2.0.

The sans-IO core is ``mcpwire.sansio``. Everything that does I/O (sessions,
transports, ``Server``, ``Client``, ``Hub``) is loaded on first use, so
``import mcpwire`` stays cheap and ``import mcpwire.sansio`` never loads anyio.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._errors import ConnectionClosed as ConnectionClosed
from ._errors import JSONRPCError as JSONRPCError
from ._errors import LocalProtocolError as LocalProtocolError
from ._errors import MCPWireError as MCPWireError
from ._errors import ProtocolError as ProtocolError
from ._errors import RemoteProtocolError as RemoteProtocolError
from ._errors import RequestTimeout as RequestTimeout
from ._version import __version__ as __version__

if TYPE_CHECKING:
    from ._session import RequestContext as RequestContext
    from ._session import Session as Session
    from ._stdio import StdioClientTransport as StdioClientTransport
    from ._stdio import StdioServerTransport as StdioServerTransport
    from ._transport import MemoryTransport as MemoryTransport
    from ._transport import Transport as Transport
    from ._transport import memory_pair as memory_pair

__all__ = (
    "ConnectionClosed",
    "JSONRPCError",
    "LocalProtocolError",
    "MCPWireError",
    "MemoryTransport",
    "ProtocolError",
    "RemoteProtocolError",
    "RequestContext",
    "RequestTimeout",
    "Session",
    "StdioClientTransport",
    "StdioServerTransport",
    "Transport",
    "__version__",
    "memory_pair",
)

# name -> private module that defines it; imported on first attribute access.
_LAZY = {
    "RequestContext": "._session",
    "Session": "._session",
    "StdioClientTransport": "._stdio",
    "StdioServerTransport": "._stdio",
    "MemoryTransport": "._transport",
    "Transport": "._transport",
    "memory_pair": "._transport",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpwire' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
