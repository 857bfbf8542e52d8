"""mcpwire: a dependency-light toolkit for the Model Context Protocol and JSON-RPC 2.0.

The sans-IO core is ``mcpwire.sansio``. Everything that does I/O (sessions,
transports, ``Server``, ``Client``, ``Hub``) is loaded on first use, so
``import mcpwire`` stays cheap and ``import mcpwire.sansio`` never loads anyio.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from ._errors import AuthorizationError as AuthorizationError
from ._errors import ConnectionClosed as ConnectionClosed
from ._errors import JSONRPCError as JSONRPCError
from ._errors import LocalProtocolError as LocalProtocolError
from ._errors import MCPWireError as MCPWireError
from ._errors import ProtocolError as ProtocolError
from ._errors import RemoteProtocolError as RemoteProtocolError
from ._errors import RequestTimeout as RequestTimeout
from ._errors import TransportError as TransportError
from ._version import __version__ as __version__

if TYPE_CHECKING:
    from ._asgi import ASGIApp as ASGIApp
    from ._asgi import asgi_app as asgi_app
    from ._auth_introspect import IntrospectionError as IntrospectionError
    from ._auth_introspect import IntrospectionVerifier as IntrospectionVerifier
    from ._auth_jwt import JWKSError as JWKSError
    from ._auth_jwt import JWTVerifier as JWTVerifier
    from ._auth_tokens import AccessToken as AccessToken
    from ._auth_tokens import StaticTokenVerifier as StaticTokenVerifier
    from ._auth_tokens import TokenVerifier as TokenVerifier
    from ._client import Client as Client
    from ._client import OutputValidationError as OutputValidationError
    from ._client import Subscription as Subscription
    from ._client_tasks import TaskCancelled as TaskCancelled
    from ._content import Audio as Audio
    from ._content import EmbeddedResource as EmbeddedResource
    from ._content import Image as Image
    from ._content import PromptMessage as PromptMessage
    from ._content import ResourceLink as ResourceLink
    from ._content import Text as Text
    from ._content import ToolError as ToolError
    from ._content import ToolResult as ToolResult
    from ._context import ClientAnswerError as ClientAnswerError
    from ._context import Context as Context
    from ._context import URLElicitationRequired as URLElicitationRequired
    from ._http_auth import ResourceServerAuth as ResourceServerAuth
    from ._http_client import HTTPClientTransport as HTTPClientTransport
    from ._http_client_base import HTTPClientOptions as HTTPClientOptions
    from ._http_client_sse import SSEClientTransport as SSEClientTransport
    from ._http_events import EventStore as EventStore
    from ._http_events import MemoryEventStore as MemoryEventStore
    from ._http_server import HTTPServer as HTTPServer
    from ._http_server import HTTPServerOptions as HTTPServerOptions
    from ._hub import Hub as Hub
    from ._hub_config import OAuthSettings as OAuthSettings
    from ._hub_config import ServerConfig as ServerConfig
    from ._hub_config import load_config as load_config
    from ._hub_config import load_configs as load_configs
    from ._hub_dialects import parse_config as parse_config
    from ._hub_errors import ConfigError as ConfigError
    from ._hub_errors import ConfigIssue as ConfigIssue
    from ._hub_errors import HubError as HubError
    from ._hub_errors import ToolCallRefused as ToolCallRefused
    from ._hub_events import ConfigRejected as ConfigRejected
    from ._hub_events import ConfigReloaded as ConfigReloaded
    from ._hub_events import EventStream as EventStream
    from ._hub_events import HubEvent as HubEvent
    from ._hub_events import NameCollisionEvent as NameCollisionEvent
    from ._hub_events import ResourcesChanged as ResourcesChanged
    from ._hub_events import ServerState as ServerState
    from ._hub_events import ServerStateChanged as ServerStateChanged
    from ._hub_events import ToolCountWarning as ToolCountWarning
    from ._hub_events import ToolsChanged as ToolsChanged
    from ._hub_names import HubPrompt as HubPrompt
    from ._hub_names import HubTool as HubTool
    from ._hub_names import NameRule as NameRule
    from ._hub_profiles import Profile as Profile
    from ._hub_relay import AskRelay as AskRelay
    from ._hub_search import ToolSearch as ToolSearch
    from ._hub_serve import HubServer as HubServer
    from ._hub_status import ErrorEntry as ErrorEntry
    from ._hub_status import RestartPolicy as RestartPolicy
    from ._hub_status import ServerStatus as ServerStatus
    from ._jose import CryptographyMissing as CryptographyMissing
    from ._jose import EdDSASigner as EdDSASigner
    from ._jose import ES256Signer as ES256Signer
    from ._jose import ES384Signer as ES384Signer
    from ._jose import ES512Signer as ES512Signer
    from ._jose import JWTSigner as JWTSigner
    from ._jose import PS256Signer as PS256Signer
    from ._jose import PS384Signer as PS384Signer
    from ._jose import PS512Signer as PS512Signer
    from ._jose import RS256Signer as RS256Signer
    from ._jose import RS384Signer as RS384Signer
    from ._jose import RS512Signer as RS512Signer
    from ._jose import load_signer as load_signer
    from ._login_path import login_shell_path as login_shell_path
    from ._login_path import merge_paths as merge_paths
    from ._oauth import AssertionProvider as AssertionProvider
    from ._oauth import OAuthClient as OAuthClient
    from ._oauth import RedirectHandler as RedirectHandler
    from ._oauth import headless_redirect_handler as headless_redirect_handler
    from ._oauth_file import FileTokenStorage as FileTokenStorage
    from ._oauth_redirect import AuthorizationDenied as AuthorizationDenied
    from ._oauth_redirect import AuthorizationResponse as AuthorizationResponse
    from ._oauth_redirect import LoopbackRedirect as LoopbackRedirect
    from ._oauth_storage import ClientInfo as ClientInfo
    from ._oauth_storage import InMemoryTokenStorage as InMemoryTokenStorage
    from ._oauth_storage import OAuthTokens as OAuthTokens
    from ._oauth_storage import TokenStorage as TokenStorage
    from ._server import Connection as Connection
    from ._server import Server as Server
    from ._session import RequestContext as RequestContext
    from ._session import Session as Session
    from ._stdio import StdioServerTransport as StdioServerTransport
    from ._stdio_client import StdioClientTransport as StdioClientTransport
    from ._tasks import TaskStore as TaskStore
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
    from ._types import Task as Task
    from ._types import Tool as Tool

__all__ = (
    "ASGIApp",
    "AccessToken",
    "AskRelay",
    "Audio",
    "CallToolResult",
    "Client",
    "Completion",
    "ConfigError",
    "ConfigIssue",
    "ConfigRejected",
    "ConfigReloaded",
    "Connection",
    "ConnectionClosed",
    "Content",
    "Context",
    "EmbeddedResource",
    "ErrorEntry",
    "EventStream",
    "EventStore",
    "GetPromptResult",
    "HTTPServer",
    "HTTPServerOptions",
    "Hub",
    "HubServer",
    "HubError",
    "HubEvent",
    "HubPrompt",
    "HubTool",
    "Image",
    "IntrospectionError",
    "IntrospectionVerifier",
    "JWKSError",
    "JWTVerifier",
    "MemoryEventStore",
    "NameCollisionEvent",
    "NameRule",
    "OutputValidationError",
    "Prompt",
    "Profile",
    "PromptArgument",
    "PromptMessage",
    "Resource",
    "ResourceContents",
    "ResourceLink",
    "ResourceServerAuth",
    "ResourceTemplate",
    "ResourcesChanged",
    "RestartPolicy",
    "Server",
    "ServerConfig",
    "StaticTokenVerifier",
    "TokenVerifier",
    "ServerState",
    "ServerStateChanged",
    "ServerStatus",
    "Subscription",
    "Task",
    "TaskCancelled",
    "TaskStore",
    "Text",
    "Tool",
    "ToolCallRefused",
    "ToolCountWarning",
    "ToolError",
    "ToolResult",
    "ToolSearch",
    "ToolsChanged",
    "URLElicitationRequired",
    "ClientAnswerError",
    "JSONRPCError",
    "LocalProtocolError",
    "MCPWireError",
    "MemoryTransport",
    "ProtocolError",
    "RemoteProtocolError",
    "RequestContext",
    "RequestTimeout",
    "TransportError",
    "Session",
    "HTTPClientOptions",
    "HTTPClientTransport",
    "SSEClientTransport",
    "StdioClientTransport",
    "StdioServerTransport",
    "Transport",
    "__version__",
    "asgi_app",
    "load_config",
    "load_configs",
    "login_shell_path",
    "memory_pair",
    "merge_paths",
    "parse_config",
    "AuthorizationError",
    "AssertionProvider",
    "ClientInfo",
    "InMemoryTokenStorage",
    "OAuthClient",
    "OAuthTokens",
    "RedirectHandler",
    "TokenStorage",
    "headless_redirect_handler",
    "CryptographyMissing",
    "ES256Signer",
    "ES384Signer",
    "ES512Signer",
    "EdDSASigner",
    "JWTSigner",
    "PS256Signer",
    "PS384Signer",
    "PS512Signer",
    "RS256Signer",
    "RS384Signer",
    "RS512Signer",
    "load_signer",
    "AuthorizationDenied",
    "AuthorizationResponse",
    "FileTokenStorage",
    "LoopbackRedirect",
    "OAuthSettings",
)

# name -> private module that defines it; imported on first attribute access.
_LAZY = {
    "ASGIApp": "._asgi",
    "asgi_app": "._asgi",
    "IntrospectionError": "._auth_introspect",
    "IntrospectionVerifier": "._auth_introspect",
    "JWKSError": "._auth_jwt",
    "JWTVerifier": "._auth_jwt",
    "AccessToken": "._auth_tokens",
    "StaticTokenVerifier": "._auth_tokens",
    "TokenVerifier": "._auth_tokens",
    "ResourceServerAuth": "._http_auth",
    "Client": "._client",
    "OutputValidationError": "._client",
    "Subscription": "._client",
    "TaskCancelled": "._client_tasks",
    "Audio": "._content",
    "EmbeddedResource": "._content",
    "Image": "._content",
    "PromptMessage": "._content",
    "ResourceLink": "._content",
    "Text": "._content",
    "ToolError": "._content",
    "ToolResult": "._content",
    "ClientAnswerError": "._context",
    "Context": "._context",
    "URLElicitationRequired": "._context",
    "Hub": "._hub",
    "login_shell_path": "._login_path",
    "merge_paths": "._login_path",
    "ServerConfig": "._hub_config",
    "load_config": "._hub_config",
    "load_configs": "._hub_config",
    "parse_config": "._hub_dialects",
    "ConfigError": "._hub_errors",
    "ConfigIssue": "._hub_errors",
    "HubError": "._hub_errors",
    "ToolCallRefused": "._hub_errors",
    "ConfigRejected": "._hub_events",
    "ConfigReloaded": "._hub_events",
    "EventStream": "._hub_events",
    "HubEvent": "._hub_events",
    "NameCollisionEvent": "._hub_events",
    "ResourcesChanged": "._hub_events",
    "ServerState": "._hub_events",
    "ServerStateChanged": "._hub_events",
    "ToolCountWarning": "._hub_events",
    "ToolsChanged": "._hub_events",
    "ToolSearch": "._hub_search",
    "HubServer": "._hub_serve",
    "AskRelay": "._hub_relay",
    "Profile": "._hub_profiles",
    "HubPrompt": "._hub_names",
    "HubTool": "._hub_names",
    "NameRule": "._hub_names",
    "ErrorEntry": "._hub_status",
    "RestartPolicy": "._hub_status",
    "ServerStatus": "._hub_status",
    "EventStore": "._http_events",
    "MemoryEventStore": "._http_events",
    "HTTPServer": "._http_server",
    "HTTPServerOptions": "._http_server",
    "Connection": "._server",
    "Server": "._server",
    "TaskStore": "._tasks",
    "CallToolResult": "._types",
    "Completion": "._types",
    "Content": "._types",
    "GetPromptResult": "._types",
    "Prompt": "._types",
    "PromptArgument": "._types",
    "Resource": "._types",
    "ResourceContents": "._types",
    "ResourceTemplate": "._types",
    "Task": "._types",
    "Tool": "._types",
    "RequestContext": "._session",
    "Session": "._session",
    "HTTPClientTransport": "._http_client",
    "HTTPClientOptions": "._http_client_base",
    "SSEClientTransport": "._http_client_sse",
    "StdioClientTransport": "._stdio_client",
    "StdioServerTransport": "._stdio",
    "MemoryTransport": "._transport",
    "Transport": "._transport",
    "memory_pair": "._transport",
    "AssertionProvider": "._oauth",
    "ClientInfo": "._oauth_storage",
    "InMemoryTokenStorage": "._oauth_storage",
    "OAuthClient": "._oauth",
    "OAuthTokens": "._oauth_storage",
    "RedirectHandler": "._oauth",
    "TokenStorage": "._oauth_storage",
    "headless_redirect_handler": "._oauth",
    "CryptographyMissing": "._jose",
    "ES256Signer": "._jose",
    "ES384Signer": "._jose",
    "ES512Signer": "._jose",
    "EdDSASigner": "._jose",
    "JWTSigner": "._jose",
    "PS256Signer": "._jose",
    "PS384Signer": "._jose",
    "PS512Signer": "._jose",
    "RS256Signer": "._jose",
    "RS384Signer": "._jose",
    "RS512Signer": "._jose",
    "load_signer": "._jose",
    "AuthorizationDenied": "._oauth_redirect",
    "AuthorizationResponse": "._oauth_redirect",
    "FileTokenStorage": "._oauth_file",
    "LoopbackRedirect": "._oauth_redirect",
    "OAuthSettings": "._hub_config",
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
