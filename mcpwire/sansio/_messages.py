"""JSON-RPC 2.0 envelopes as MCP uses them, and the classifier for peer input.

Theory of operation
-------------------
``classify(value)`` takes any decoded JSON value and returns exactly one of:

* ``Request``, ``Notification``, ``Response``, ``ErrorResponse``: a well-formed
  message (extra top-level members are ignored, as JSON-RPC allows);
* ``Invalid``: not a message. ``reply`` says whether JSON-RPC wants an error
  response (it never does for something that is recognisably a notification,
  and never for a broken response, since answering answers breeds loops);
* ``Batch``: a non-empty JSON array, each element classified in turn. Whether a
  batch is *acceptable* depends on the negotiated protocol version (only
  2025-03-26 allows them) and is the caller's decision, not the classifier's;
  one of more than ``Limits.max_batch`` messages (1,000) is ``Invalid`` whole.

The rules (JSON-RPC 2.0 plus MCP's narrowing, spec-notes §9):

* ``"jsonrpc"`` must be exactly ``"2.0"``.
* A request id is a string or an integer. ``null``, floats (even ``1.0``),
  booleans, arrays and objects are rejected with -32600 and ``id: null``. The id
  keeps its JSON type: ``"7"`` and ``7`` are different ids.
* ``method`` must be a string; ``params``, if present, an object (an array is
  structured but not what MCP allows: -32602 with the id; a scalar: -32600).
* A response has exactly one of ``result``/``error``, and no ``method``: a
  message with both is ``Invalid`` (-32600), answered with its id only when
  that id is valid (it is neither a request to run nor an answer to take).
  MCP results are objects.
  An error object has an integer ``code`` and a string ``message``. Error
  responses may carry ``id: null`` or omit it (2025-11-25 made it optional).

``serialize`` writes the compact form; ``parse`` is ``codec.loads`` followed by
``classify`` with codec failures turned into the right ``Invalid``.
"""

from __future__ import annotations

import enum
from typing import Union

import orjson

from . import _codec
from ._json import JSONObject, JSONValue, kind_of
from ._record import Record, setters

__all__ = (
    "Batch",
    "ErrorCode",
    "ErrorObject",
    "ErrorResponse",
    "Incoming",
    "Invalid",
    "Message",
    "Notification",
    "Request",
    "RequestId",
    "Response",
    "TransportErrorObject",
    "classify",
    "error_response",
    "is_request_id",
    "parse",
    "serialize",
    "serialize_batch",
    "serialize_line",
    "to_json",
)

RequestId = Union[str, int]


class ErrorCode(enum.IntEnum):
    """Every error code the JSON-RPC and MCP specifications define (spec-notes §6)."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    #: MCP up to 2025-11-25; 2026-07-28 uses INVALID_PARAMS (clients still accept it).
    RESOURCE_NOT_FOUND = -32002
    #: 2025-11-25 only: URL-mode elicitation is required before the request can proceed.
    URL_ELICITATION_REQUIRED = -32042
    #: 2026-07-28: an HTTP header disagrees with the body, is missing, or is malformed.
    HEADER_MISMATCH = -32020
    #: 2026-07-28: the request needs a client capability the client did not declare.
    MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
    #: 2026-07-28: the request's protocol version is not supported.
    UNSUPPORTED_PROTOCOL_VERSION = -32022


def is_request_id(value: object) -> bool:
    """True for a valid MCP request id: a string or an integer, never a bool."""
    cls = type(value)
    return cls is str or cls is int


class Request(Record):
    id: RequestId
    method: str
    params: JSONObject | None

    def __init__(self, id: RequestId, method: str, params: JSONObject | None = None) -> None:
        _request_id(self, id)
        _request_method(self, method)
        _request_params(self, params)


class Notification(Record):
    method: str
    params: JSONObject | None

    def __init__(self, method: str, params: JSONObject | None = None) -> None:
        _notification_method(self, method)
        _notification_params(self, params)


class Response(Record):
    id: RequestId
    result: JSONObject

    def __init__(self, id: RequestId, result: JSONObject) -> None:
        _response_id(self, id)
        _response_result(self, result)


class ErrorObject(Record):
    """A JSON-RPC error object. ``data=None`` means the member is absent."""

    code: int
    message: str
    data: JSONValue

    def __init__(self, code: int, message: str, data: JSONValue = None) -> None:
        _error_code(self, code)
        _error_message(self, message)
        _error_data(self, data)


class TransportErrorObject(ErrorObject, hidden=("status",)):
    """An error object this side made up for a request whose answer could not be
    had (an HTTP error status, a body that is no JSON-RPC answer, a stream that
    ended first, an answer too large to read), never one the peer sent.

    ``status`` is the HTTP status that stood in for the answer, ``None`` when
    there was none. It is local knowledge: it is never written to the wire (the
    object serializes as a plain error object) and ``==`` ignores it. The async
    layers raise ``mcpwire.TransportError`` for it instead of ``JSONRPCError``.
    """

    status: int | None

    def __init__(
        self, code: int, message: str, data: JSONValue = None, status: int | None = None
    ) -> None:
        _error_code(self, code)
        _error_message(self, message)
        _error_data(self, data)
        _transport_error_status(self, status)


class ErrorResponse(Record):
    """An error response; ``id`` is ``None`` when the request's id was unknowable."""

    id: RequestId | None
    error: ErrorObject

    def __init__(self, id: RequestId | None, error: ErrorObject) -> None:
        _error_response_id(self, id)
        _error_response_error(self, error)


Message = Union[Request, Notification, Response, ErrorResponse]


class Invalid(Record):
    """Input that is not a valid message.

    Attributes:
        error: what a reply would say.
        id: the id recovered from the input, when it was a valid id.
        reply: whether JSON-RPC calls for an error response at all.
        method: the method name, when one could be read (for diagnostics).
    """

    error: ErrorObject
    id: RequestId | None
    reply: bool
    method: str | None

    def __init__(
        self,
        error: ErrorObject,
        id: RequestId | None = None,
        reply: bool = True,
        method: str | None = None,
    ) -> None:
        _invalid_error(self, error)
        _invalid_id(self, id)
        _invalid_reply(self, reply)
        _invalid_method(self, method)

    def response(self) -> ErrorResponse:
        return ErrorResponse(self.id, self.error)

    @property
    def answers(self) -> RequestId | None:
        """The id a malformed response names: input with ``result`` or ``error``
        that is not a valid response (never answered, so ``reply`` is false, and
        with no method). ``None`` for anything else."""
        return self.id if not self.reply and self.method is None else None


class Batch(Record):
    """A non-empty JSON array of items, each classified on its own."""

    items: tuple[Message | Invalid, ...]

    def __init__(self, items: tuple[Message | Invalid, ...]) -> None:
        _batch_items(self, items)


# Each record's __init__ stores its fields through these (see ``_record``).
_request_id, _request_method, _request_params = setters(Request)
_notification_method, _notification_params = setters(Notification)
_response_id, _response_result = setters(Response)
_error_code, _error_message, _error_data = setters(ErrorObject)
_transport_error_status = setters(TransportErrorObject)[-1]
_error_response_id, _error_response_error = setters(ErrorResponse)
_invalid_error, _invalid_id, _invalid_reply, _invalid_method = setters(Invalid)
(_batch_items,) = setters(Batch)

Incoming = Union[Request, Notification, Response, ErrorResponse, Invalid, Batch]


def error_response(
    id: RequestId | None, code: int, message: str, data: JSONValue = None
) -> ErrorResponse:
    return ErrorResponse(id, ErrorObject(int(code), message, data))


def _invalid(
    message: str,
    id: RequestId | None = None,
    *,
    reply: bool = True,
    code: int = ErrorCode.INVALID_REQUEST,
    method: str | None = None,
) -> Invalid:
    return Invalid(ErrorObject(int(code), message), id, reply, method)


def _classify_error_object(raw: JSONValue) -> ErrorObject | None:
    if type(raw) is not dict:
        return None
    code = raw.get("code")
    message = raw.get("message")
    if type(code) is not int or not isinstance(message, str):
        return None
    return ErrorObject(code, message, raw.get("data"))


def _classify_object(obj: JSONObject) -> Message | Invalid:
    method = obj.get("method")
    has_id = "id" in obj
    raw_id = obj.get("id")
    id_type = type(raw_id)
    id_ok = id_type is str or id_type is int  # is_request_id, inline
    good_id: RequestId | None = raw_id if id_ok else None  # type: ignore[assignment]

    if "method" in obj:
        if "result" in obj or "error" in obj:
            # Both a request and a response (JSON-RPC 2.0 §4 and §5 give them no
            # member in common but the id): taken as either, one side would run
            # what the other meant as an answer. Answered only when its id is valid.
            return _invalid(
                'a message has "method" (a request) or "result"/"error" (a response), not both',
                good_id,
                reply=id_ok,
                method=method if isinstance(method, str) else None,
            )
        # A request or a notification, by the presence of "id".
        # Only something with a string method and no id is recognisably a
        # notification; JSON-RPC's own example answers {"method": 1} with -32600.
        if not isinstance(method, str):
            return _invalid('"method" must be a string', good_id)
        is_notification = not has_id
        if obj.get("jsonrpc") != "2.0":
            return _invalid(
                '"jsonrpc" must be exactly "2.0"', good_id, reply=not is_notification, method=method
            )
        if has_id and not id_ok:
            return _invalid(
                "request id must be a string or an integer, not " + kind_of(raw_id),
                None,
                method=method,
            )
        params = obj.get("params")
        if params is not None and type(params) is not dict:
            if type(params) is list:
                return _invalid(
                    '"params" must be an object in MCP, not an array',
                    good_id,
                    reply=not is_notification,
                    code=ErrorCode.INVALID_PARAMS,
                    method=method,
                )
            return _invalid(
                '"params" must be an object', good_id, reply=not is_notification, method=method
            )
        if "params" in obj and params is None:
            return _invalid(
                '"params" must be an object, not null',
                good_id,
                reply=not is_notification,
                method=method,
            )
        if is_notification:
            return Notification(method, params)
        return Request(good_id, method, params)  # type: ignore[arg-type]

    has_result = "result" in obj
    has_error = "error" in obj
    if has_result or has_error:
        # A response. Malformed responses are reported but never answered.
        if obj.get("jsonrpc") != "2.0":
            return _invalid('"jsonrpc" must be exactly "2.0"', good_id, reply=False)
        if has_result and has_error:
            return _invalid('a response has "result" or "error", not both', good_id, reply=False)
        if has_result:
            if not id_ok:
                return _invalid("response id must be a string or an integer", None, reply=False)
            result = obj["result"]
            if type(result) is not dict:
                return _invalid('"result" must be an object in MCP', good_id, reply=False)
            return Response(good_id, result)  # type: ignore[arg-type]
        if has_id and raw_id is not None and not id_ok:
            return _invalid(
                "error response id must be a string, an integer or null", None, reply=False
            )
        error = _classify_error_object(obj["error"])
        if error is None:
            return _invalid(
                '"error" must be an object with integer "code" and string "message"',
                good_id,
                reply=False,
            )
        return ErrorResponse(good_id, error)

    if obj.get("jsonrpc") != "2.0":
        return _invalid('"jsonrpc" must be exactly "2.0"', good_id)
    return _invalid(
        'not a request, notification or response: no "method", "result" or "error" member', good_id
    )


def classify(value: JSONValue, max_batch: int = _codec.DEFAULT_MAX_BATCH) -> Incoming:
    """Classify one decoded JSON value (see the module docstring); a batch of more
    than ``max_batch`` messages is ``Invalid`` (-32600, id null) as a whole."""
    if type(value) is dict:
        return _classify_object(value)
    if type(value) is list:
        if not value:
            return _invalid("empty batch", None)
        if len(value) > max_batch:
            return _invalid(
                f"a batch of {len(value)} messages exceeds the limit of {max_batch}", None
            )
        items: list[Message | Invalid] = []
        for element in value:
            if type(element) is dict:
                items.append(_classify_object(element))
            else:
                items.append(_invalid("batch element is not an object", None))
        return Batch(tuple(items))
    return _invalid(f"a JSON-RPC message is an object, not {kind_of(value)}", None)


def parse(
    data: bytes | bytearray | memoryview | str, limits: _codec.Limits = _codec.DEFAULT_LIMITS
) -> Incoming:
    """Decode and classify one frame. Never raises for bad input.

    Undecodable text becomes ``Invalid`` with -32700 and ``id: null``; a frame
    over the size or depth limit becomes ``Invalid`` with -32600.
    """
    try:
        value = _codec.loads(data, limits)
    except (_codec.MessageTooDeep, _codec.IntegerTooWide) as exc:
        return _past_limits(data, exc)
    except _codec.CodecError as exc:
        return _invalid(str(exc), None, code=exc.error_code)
    if type(value) is dict:  # the usual message: classify's first case, one call less
        return _classify_object(value)
    return classify(value, limits.max_batch)


def _past_limits(data: bytes | bytearray | memoryview | str, exc: _codec.CodecError) -> Incoming:
    """JSON past our depth or integer limits, read as an oversized message is: from
    its first and last bytes, so a response fails its own call, a request gets its
    id back, and a notification no answer (``_oversized``)."""
    from ._ndjson import HEAD_BYTES, TAIL_BYTES
    from ._oversized import unreadable

    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if isinstance(exc, _codec.MessageTooDeep):
        problem = f"nests deeper than the limit of {exc.limit} levels"
    else:
        problem = "holds an integer that does not fit in 64 bits"
    return unreadable(raw[:HEAD_BYTES], raw[-TAIL_BYTES:], problem, exc.error_code)


def to_json(message: Message) -> JSONObject:
    """The JSON object form of ``message`` (compact: absent members left out)."""
    if type(message) is Request:
        out: JSONObject = {"jsonrpc": "2.0", "id": message.id, "method": message.method}
        if message.params is not None:
            out["params"] = message.params
        return out
    if type(message) is Notification:
        out = {"jsonrpc": "2.0", "method": message.method}
        if message.params is not None:
            out["params"] = message.params
        return out
    if type(message) is Response:
        return {"jsonrpc": "2.0", "id": message.id, "result": message.result}
    if type(message) is ErrorResponse:
        err = message.error
        error: JSONObject = {"code": err.code, "message": err.message}
        if err.data is not None:
            error["data"] = err.data
        # JSON-RPC requires the member, null when the id was unknowable.
        return {"jsonrpc": "2.0", "id": message.id, "error": error}
    raise TypeError(f"not a message: {message!r}")


def serialize(message: Message) -> bytes:
    """Compact UTF-8 JSON for ``message``, with no raw newline bytes."""
    return _codec.dumps(to_json(message))


def serialize_batch(messages: list[Message]) -> bytes:
    return _codec.dumps([to_json(m) for m in messages])


_orjson_dumps = orjson.dumps
_APPEND_NEWLINE = orjson.OPT_APPEND_NEWLINE


def serialize_line(message: Message | list[Message]) -> bytes:
    """One ndjson frame for ``message`` (or a batch): its JSON and ``\n``."""
    if isinstance(message, list):
        return _codec.dumps_line([to_json(m) for m in message])
    return _orjson_dumps(to_json(message), option=_APPEND_NEWLINE)  # dumps_line, inline
