"""The sans-IO core of mcpwire: pure, synchronous, no I/O.

Bytes in, messages and events out, bytes back. Nothing here imports anyio,
asyncio, sockets, threads or clocks, so it can be driven from any I/O model:
another event loop, threads, a synchronous program, a test with no I/O at all.
"""

from typing import TYPE_CHECKING

# Every name loads on first use (PEP 562): importing mcpwire.sansio costs
# nothing, and a program pays only for the parts it touches (a stdio server
# never loads the HTTP header rules or the SSE codec; an HTTP client never
# loads the ndjson framer). mcpwire's own modules import the submodules
# directly.
_LAZY = {
    "CodecError": "_codec",
    "DEFAULT_MAX_BATCH": "_codec",
    "DEFAULT_MAX_DEPTH": "_codec",
    "DEFAULT_MAX_MESSAGE_SIZE": "_codec",
    "Limits": "_codec",
    "MessageTooDeep": "_codec",
    "MessageTooLarge": "_codec",
    "NotJSON": "_codec",
    "dumps": "_codec",
    "loads": "_codec",
    "LAST_EVENT_ID": "_http",
    "LOOPBACK_HOSTS": "_http",
    "LOOPBACK_ORIGINS": "_http",
    "MCP_METHOD": "_http",
    "MCP_NAME": "_http",
    "MCP_PARAM_PREFIX": "_http",
    "MCP_PROTOCOL_VERSION": "_http",
    "MCP_SESSION_ID": "_http",
    "MediaType": "_http",
    "NAME_BEARING_METHODS": "_http",
    "accepts": "_http",
    "decode_header_value": "_http",
    "duplicated_headers": "_http",
    "encode_header_value": "_http",
    "host_allowed": "_http",
    "http_status_for_error": "_http",
    "invalid_x_mcp_header": "_http",
    "is_json_media_type": "_http",
    "is_loopback": "_http",
    "is_token": "_http",
    "origin_allowed": "_http",
    "param_header_mismatch": "_http",
    "parse_accept": "_http",
    "parse_media_type": "_http",
    "routing_header_mismatch": "_http",
    "split_host": "_http",
    "x_mcp_headers": "_http",
    "JSONArray": "_json",
    "JSONObject": "_json",
    "JSONValue": "_json",
    "Batch": "_messages",
    "ErrorCode": "_messages",
    "ErrorObject": "_messages",
    "ErrorResponse": "_messages",
    "Incoming": "_messages",
    "Invalid": "_messages",
    "Message": "_messages",
    "Notification": "_messages",
    "Request": "_messages",
    "RequestId": "_messages",
    "Response": "_messages",
    "TransportErrorObject": "_messages",
    "classify": "_messages",
    "error_response": "_messages",
    "is_request_id": "_messages",
    "parse": "_messages",
    "serialize": "_messages",
    "serialize_batch": "_messages",
    "serialize_line": "_messages",
    "to_json": "_messages",
    "DEFAULT_MAX_LINE": "_ndjson",
    "LineTooLong": "_ndjson",
    "NDJSONItem": "_ndjson",
    "NDJSONReader": "_ndjson",
    "NonJSONLine": "_ndjson",
    "frame": "_ndjson",
    "oversized": "_oversized",
    "Counters": "_rpc",
    "InState": "_rpc",
    "OutState": "_rpc",
    "Outgoing": "_rpc",
    "RPCState": "_rpc",
    "DEFAULT_MAX_EVENT_SIZE": "_sse",
    "SSEDecoder": "_sse",
    "SSEEvent": "_sse",
    "SSEEventTooLarge": "_sse",
    "encode_comment": "_sse",
    "encode_event": "_sse",
    "encode_priming": "_sse",
    "encode_retry": "_sse",
    "Lifecycle": "_state",
    "LifecycleInput": "_state",
    "LifecycleState": "_state",
    "REQUEST_GATE": "_state",
    "RequestKind": "_state",
}

if TYPE_CHECKING:
    from ._codec import DEFAULT_MAX_BATCH as DEFAULT_MAX_BATCH
    from ._codec import DEFAULT_MAX_DEPTH as DEFAULT_MAX_DEPTH
    from ._codec import DEFAULT_MAX_MESSAGE_SIZE as DEFAULT_MAX_MESSAGE_SIZE
    from ._codec import CodecError as CodecError
    from ._codec import Limits as Limits
    from ._codec import MessageTooDeep as MessageTooDeep
    from ._codec import MessageTooLarge as MessageTooLarge
    from ._codec import NotJSON as NotJSON
    from ._codec import dumps as dumps
    from ._codec import loads as loads
    from ._http import LAST_EVENT_ID as LAST_EVENT_ID
    from ._http import LOOPBACK_HOSTS as LOOPBACK_HOSTS
    from ._http import LOOPBACK_ORIGINS as LOOPBACK_ORIGINS
    from ._http import MCP_METHOD as MCP_METHOD
    from ._http import MCP_NAME as MCP_NAME
    from ._http import MCP_PARAM_PREFIX as MCP_PARAM_PREFIX
    from ._http import MCP_PROTOCOL_VERSION as MCP_PROTOCOL_VERSION
    from ._http import MCP_SESSION_ID as MCP_SESSION_ID
    from ._http import NAME_BEARING_METHODS as NAME_BEARING_METHODS
    from ._http import MediaType as MediaType
    from ._http import accepts as accepts
    from ._http import decode_header_value as decode_header_value
    from ._http import duplicated_headers as duplicated_headers
    from ._http import encode_header_value as encode_header_value
    from ._http import host_allowed as host_allowed
    from ._http import http_status_for_error as http_status_for_error
    from ._http import invalid_x_mcp_header as invalid_x_mcp_header
    from ._http import is_json_media_type as is_json_media_type
    from ._http import is_loopback as is_loopback
    from ._http import is_token as is_token
    from ._http import origin_allowed as origin_allowed
    from ._http import param_header_mismatch as param_header_mismatch
    from ._http import parse_accept as parse_accept
    from ._http import parse_media_type as parse_media_type
    from ._http import routing_header_mismatch as routing_header_mismatch
    from ._http import split_host as split_host
    from ._http import x_mcp_headers as x_mcp_headers
    from ._json import JSONArray as JSONArray
    from ._json import JSONObject as JSONObject
    from ._json import JSONValue as JSONValue
    from ._messages import Batch as Batch
    from ._messages import ErrorCode as ErrorCode
    from ._messages import ErrorObject as ErrorObject
    from ._messages import ErrorResponse as ErrorResponse
    from ._messages import Incoming as Incoming
    from ._messages import Invalid as Invalid
    from ._messages import Message as Message
    from ._messages import Notification as Notification
    from ._messages import Request as Request
    from ._messages import RequestId as RequestId
    from ._messages import Response as Response
    from ._messages import TransportErrorObject as TransportErrorObject
    from ._messages import classify as classify
    from ._messages import error_response as error_response
    from ._messages import is_request_id as is_request_id
    from ._messages import parse as parse
    from ._messages import serialize as serialize
    from ._messages import serialize_batch as serialize_batch
    from ._messages import serialize_line as serialize_line
    from ._messages import to_json as to_json
    from ._ndjson import DEFAULT_MAX_LINE as DEFAULT_MAX_LINE
    from ._ndjson import LineTooLong as LineTooLong
    from ._ndjson import NDJSONItem as NDJSONItem
    from ._ndjson import NDJSONReader as NDJSONReader
    from ._ndjson import NonJSONLine as NonJSONLine
    from ._ndjson import frame as frame
    from ._oversized import oversized as oversized
    from ._rpc import Counters as Counters
    from ._rpc import InState as InState
    from ._rpc import Outgoing as Outgoing
    from ._rpc import OutState as OutState
    from ._rpc import RPCState as RPCState
    from ._sse import DEFAULT_MAX_EVENT_SIZE as DEFAULT_MAX_EVENT_SIZE
    from ._sse import SSEDecoder as SSEDecoder
    from ._sse import SSEEvent as SSEEvent
    from ._sse import SSEEventTooLarge as SSEEventTooLarge
    from ._sse import encode_comment as encode_comment
    from ._sse import encode_event as encode_event
    from ._sse import encode_priming as encode_priming
    from ._sse import encode_retry as encode_retry
    from ._state import REQUEST_GATE as REQUEST_GATE
    from ._state import Lifecycle as Lifecycle
    from ._state import LifecycleInput as LifecycleInput
    from ._state import LifecycleState as LifecycleState
    from ._state import RequestKind as RequestKind


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = (
    "DEFAULT_MAX_BATCH",
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_EVENT_SIZE",
    "DEFAULT_MAX_LINE",
    "DEFAULT_MAX_MESSAGE_SIZE",
    "LAST_EVENT_ID",
    "LOOPBACK_HOSTS",
    "LOOPBACK_ORIGINS",
    "MCP_METHOD",
    "MCP_NAME",
    "MCP_PARAM_PREFIX",
    "MCP_PROTOCOL_VERSION",
    "MCP_SESSION_ID",
    "NAME_BEARING_METHODS",
    "REQUEST_GATE",
    "Batch",
    "CodecError",
    "Counters",
    "ErrorCode",
    "ErrorObject",
    "ErrorResponse",
    "InState",
    "Incoming",
    "Invalid",
    "JSONArray",
    "JSONObject",
    "JSONValue",
    "Lifecycle",
    "LifecycleInput",
    "LifecycleState",
    "Limits",
    "LineTooLong",
    "MediaType",
    "Message",
    "MessageTooDeep",
    "MessageTooLarge",
    "NDJSONItem",
    "NDJSONReader",
    "NonJSONLine",
    "NotJSON",
    "Notification",
    "OutState",
    "Outgoing",
    "RPCState",
    "Request",
    "RequestId",
    "RequestKind",
    "Response",
    "SSEDecoder",
    "SSEEvent",
    "SSEEventTooLarge",
    "TransportErrorObject",
    "accepts",
    "classify",
    "decode_header_value",
    "dumps",
    "duplicated_headers",
    "encode_comment",
    "encode_event",
    "encode_header_value",
    "encode_priming",
    "encode_retry",
    "error_response",
    "frame",
    "host_allowed",
    "http_status_for_error",
    "invalid_x_mcp_header",
    "is_json_media_type",
    "is_loopback",
    "is_request_id",
    "oversized",
    "is_token",
    "loads",
    "origin_allowed",
    "param_header_mismatch",
    "parse",
    "parse_accept",
    "parse_media_type",
    "routing_header_mismatch",
    "serialize",
    "serialize_batch",
    "serialize_line",
    "split_host",
    "to_json",
    "x_mcp_headers",
)
