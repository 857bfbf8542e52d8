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
    from ._client import Client as Client
    from ._client import OutputValidationError as OutputValidationError
    from ._client import Subscription as Subscription
    from ._content import Audio as Audio
    from ._content import EmbeddedResource as EmbeddedResource
    from ._content import Image as Image
    from ._content import PromptMessage as PromptMessage
    from ._content import ResourceLink as ResourceLink
    from ._content import Text as Text
    from ._content import ToolError as ToolError
    from ._content import ToolResult as ToolResult
    from ._context import Context as Context
    from ._context import URLElicitationRequired as URLElicitationRequired
    from ._server import Connection as Connection
    from ._server import Server as Server
    from ._session import RequestContext as RequestContext
    from ._session import Session as Session
    from ._stdio import StdioClientTransport as StdioClientTransport
    from ._stdio import StdioServerTransport as StdioServerTransport
    from ._transport import MemoryTransport as MemoryTransport
    from ._transport import Transport as Transport
    from ._transport import memory_pair as memory_pair
    from ._types import CallToolResult as CallToolResult
    from ._types import Completion as Completion
    from ._types import Content as Content
    from ._types import GetPromptResult as GetPromptResult
    from ._types import Prompt as Prompt
    from ._types import PromptArgument as PromptArgument
    from ._types import Resource as Resource
    from ._types import ResourceContents as ResourceContents
    from ._types import ResourceTemplate as ResourceTemplate
    from ._types import Tool as Tool

__all__ = (
    "Audio",
    "CallToolResult",
    "Client",
    "Completion",
    "Connection",
    "ConnectionClosed",
    "Content",
    "Context",
    "EmbeddedResource",
    "GetPromptResult",
    "Image",
    "OutputValidationError",
    "Prompt",
    "PromptArgument",
    "PromptMessage",
    "Resource",
    "ResourceContents",
    "ResourceLink",
    "ResourceTemplate",
    "Server",
    "Subscription",
    "Text",
    "Tool",
    "ToolError",
    "ToolResult",
    "URLElicitationRequired",
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
    "Client": "._client",
    "OutputValidationError": "._client",
    "Subscription": "._client",
    "Audio": "._content",
    "EmbeddedResource": "._content",
    "Image": "._content",
    "PromptMessage": "._content",
    "ResourceLink": "._content",
    "Text": "._content",
    "ToolError": "._content",
    "ToolResult": "._content",
    "Context": "._context",
    "URLElicitationRequired": "._context",
    "Connection": "._server",
    "Server": "._server",
    "CallToolResult": "._types",
    "Completion": "._types",
    "Content": "._types",
    "GetPromptResult": "._types",
    "Prompt": "._types",
    "PromptArgument": "._types",
    "Resource": "._types",
    "ResourceContents": "._types",
    "ResourceTemplate": "._types",
    "Tool": "._types",
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
