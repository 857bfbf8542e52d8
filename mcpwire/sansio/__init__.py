"""The sans-IO core of mcpwire: pure, synchronous, no I/O.

Bytes in, messages and events out, bytes back. Nothing here imports anyio,
asyncio, sockets, threads or clocks, so it can be driven from any I/O model:
another event loop, threads, a synchronous program, a test with no I/O at all.
"""

from ._codec import DEFAULT_MAX_DEPTH as DEFAULT_MAX_DEPTH
from ._codec import DEFAULT_MAX_MESSAGE_SIZE as DEFAULT_MAX_MESSAGE_SIZE
from ._codec import CodecError as CodecError
from ._codec import Limits as Limits
from ._codec import MessageTooDeep as MessageTooDeep
from ._codec import MessageTooLarge as MessageTooLarge
from ._codec import NotJSON as NotJSON
from ._codec import dumps as dumps
from ._codec import loads as loads
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
from ._messages import classify as classify
from ._messages import error_response as error_response
from ._messages import is_request_id as is_request_id
from ._messages import parse as parse
from ._messages import serialize as serialize
from ._messages import serialize_batch as serialize_batch
from ._messages import to_json as to_json
from ._ndjson import DEFAULT_MAX_LINE as DEFAULT_MAX_LINE
from ._ndjson import LineTooLong as LineTooLong
from ._ndjson import NDJSONItem as NDJSONItem
from ._ndjson import NDJSONReader as NDJSONReader
from ._ndjson import NonJSONLine as NonJSONLine
from ._ndjson import frame as frame
from ._rpc import Counters as Counters
from ._rpc import InState as InState
from ._rpc import Outgoing as Outgoing
from ._rpc import OutState as OutState
from ._rpc import RPCState as RPCState
from ._state import REQUEST_GATE as REQUEST_GATE
from ._state import Lifecycle as Lifecycle
from ._state import LifecycleInput as LifecycleInput
from ._state import LifecycleState as LifecycleState
from ._state import RequestKind as RequestKind

__all__ = (
    "DEFAULT_MAX_DEPTH",
    "DEFAULT_MAX_LINE",
    "DEFAULT_MAX_MESSAGE_SIZE",
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
    "classify",
    "dumps",
    "error_response",
    "frame",
    "is_request_id",
    "loads",
    "parse",
    "serialize",
    "serialize_batch",
    "to_json",
)
