"""The request-params shapes every MCP revision's schema fixes, checked once per request.

``check_params`` runs in ``dispatch`` before any era or method logic, so no
handler sees a request the schema forbids. It checks what every revision
that has a member agrees on (2024-11-05 ... 2026-07-28, ``schema.ts``):

* ``_meta`` on every request: absent, or an object. ``null`` is not an
  object (the schema's ``?`` means the member may be left out, not that it
  may be null), and neither is a number, string, boolean or array. The
  message does not say it may be left out: 2026-07-28 requests must carry it
  (``check_envelope``);
* ``_meta.progressToken?: ProgressToken`` with ``ProgressToken = string |
  number``: a boolean, ``null``, an object or an array is refused; a number
  with a fraction is a number, and is kept and echoed as it came;
* the params the schema types as objects (``_OBJECT_PARAMS``): absent or an
  object where optional, an object where required (again not ``null``).
  ``task`` (2025-11-25 only) and ``inputResponses`` (2026-07-28 only) are
  checked in every era: no revision gives them another type. A required
  object that is absent is the method's business: ``completion/complete``
  refuses it, while ``initialize`` (``capabilities``, ``clientInfo``) and
  ``subscriptions/listen`` (``notifications``) take it as empty: a client
  that leaves them out is served.

* the client's capabilities (``ClientCapabilities``: ``initialize``
  ``params.capabilities`` in the legacy era, ``_meta``'s
  ``io.modelcontextprotocol/clientCapabilities`` on every 2026-07-28 request;
  ``check_client_capabilities``): ``experimental`` and ``extensions`` objects
  of objects; ``roots``, ``sampling``, ``elicitation`` and ``tasks`` objects,
  with ``roots.listChanged`` a boolean and ``sampling.context`` /
  ``sampling.tools`` / ``elicitation.form`` / ``elicitation.url`` objects, each
  where it is given (2024-11-05 has ``experimental``, ``roots``, ``sampling``;
  2025-06-18 adds ``elicitation``, 2025-11-25 ``tasks`` and the inner objects,
  2026-07-28 ``extensions`` and drops ``tasks``; again no revision gives one
  another type). Members the schema does not name are left alone: the set is
  open, and a newer client may declare what this server does not know.

Every refusal is -32602 Invalid params, naming the member and what it was. The
check is a few dictionary lookups: it is on the path of every ``tools/call``.
The capabilities are walked member by member only where given: an empty
object, what most requests carry, costs nothing more.
What the values inside those objects must be is the method's own business (a
tool's input schema; a prompt's string arguments; the answers in
``inputResponses``).
"""

from __future__ import annotations

import json

from ._errors import JSONRPCError
from ._versions import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, MODERN_VERSIONS
from .sansio._json import JSONObject, JSONValue, kind_of
from .sansio._messages import ErrorCode

__all__ = ("check_client_capabilities", "check_envelope", "check_params", "invalid_params")

#: Per method, the params the schema types as objects, each with whether it is
#: optional (``name?: {...}``), in every revision that has the method and member:
#: ``arguments`` (all), ``task`` (2025-11-25), ``inputResponses`` (2026-07-28),
#: ``completion/complete`` ``ref``/``argument`` (all) and ``context`` (2025-06-18+),
#: ``initialize`` ``capabilities``/``clientInfo`` (all legacy revisions),
#: ``subscriptions/listen`` ``notifications`` (2026-07-28).
_OBJECT_PARAMS: dict[str, tuple[tuple[str, bool], ...]] = {
    "tools/call": (("arguments", True), ("task", True), ("inputResponses", True)),
    "prompts/get": (("arguments", True), ("inputResponses", True)),
    "resources/read": (("inputResponses", True),),
    "completion/complete": (("ref", False), ("argument", False), ("context", True)),
    "initialize": (("capabilities", False), ("clientInfo", False)),
    "subscriptions/listen": (("notifications", False),),
}

#: Optional objects one level down: ``completion/complete`` ``context.arguments?``
#: (2025-06-18+).
_INNER_OBJECTS: dict[str, tuple[str, str]] = {
    "completion/complete": ("context", "arguments"),
}


#: ``ClientCapabilities`` members the schema types, each as (its members typed as
#: objects, those typed as booleans); ``None`` for a map whose values are objects.
_CAPABILITIES: dict[str, tuple[tuple[str, ...], tuple[str, ...]] | None] = {
    "experimental": None,
    "extensions": None,
    "roots": ((), ("listChanged",)),
    "sampling": (("context", "tools"), ()),
    "elicitation": (("form", "url"), ()),
    "tasks": ((), ()),
}


def invalid_params(message: str, data: JSONValue = None) -> JSONRPCError:
    """-32602 Invalid params with ``message`` (and ``data``, when given)."""
    return JSONRPCError(ErrorCode.INVALID_PARAMS, message, data)


def _meta_not_an_object(meta: JSONValue) -> JSONRPCError:
    return invalid_params(f"params._meta must be an object, not {kind_of(meta)}")


def _not_an_object(method: str, path: str, value: JSONValue, optional: bool) -> JSONRPCError:
    left_out = " (or left out)" if optional else ""
    return invalid_params(
        f"{method}: params.{path} must be an object{left_out}, not {kind_of(value)}"
    )


def _wrong_kind(where: str, want: str, value: JSONValue) -> JSONRPCError:
    return invalid_params(f"{where} must be {want} (or left out), not {kind_of(value)}")


def check_client_capabilities(caps: JSONObject, where: str) -> None:
    """Raise -32602 for client capabilities the schema forbids (see the module
    docstring); ``where`` names ``caps`` in the message (``initialize:
    params.capabilities``), a map's key is quoted as a JSON string."""
    for key, value in caps.items():
        if key not in _CAPABILITIES:
            continue  # not one the schema names: an open set
        if not isinstance(value, dict):
            raise _wrong_kind(f"{where}.{key}", "an object", value)
        shape = _CAPABILITIES[key]
        if shape is None:
            for name, item in value.items():
                if not isinstance(item, dict):
                    raise _wrong_kind(f"{where}.{key}[{json.dumps(name)}]", "an object", item)
            continue
        objects, booleans = shape
        for name in objects:
            if name in value and not isinstance(value[name], dict):
                raise _wrong_kind(f"{where}.{key}.{name}", "an object", value[name])
        for name in booleans:
            if name in value and not isinstance(value[name], bool):
                raise _wrong_kind(f"{where}.{key}.{name}", "a boolean", value[name])


def check_params(method: str, params: JSONObject) -> JSONValue:
    """Raise -32602 for params the schema forbids (see the module docstring).

    Returns ``params._meta`` (``None`` when absent), which the caller reads next.
    """
    meta = params.get("_meta")
    if meta is None:
        if "_meta" in params:
            raise _meta_not_an_object(meta)
    elif not isinstance(meta, dict):
        raise _meta_not_an_object(meta)
    elif "progressToken" in meta:
        token = meta["progressToken"]
        if isinstance(token, bool) or not isinstance(token, (str, int, float)):
            raise invalid_params(
                f"params._meta.progressToken must be a string or a number, not {kind_of(token)}"
            )
    members = _OBJECT_PARAMS.get(method)
    if members is not None:
        for key, optional in members:
            if key in params and not isinstance(params[key], dict):
                raise _not_an_object(method, key, params[key], optional)
        inner = _INNER_OBJECTS.get(method)
        if inner is not None:
            outer = params.get(inner[0])
            if isinstance(outer, dict) and inner[1] in outer:
                value = outer[inner[1]]
                if not isinstance(value, dict):
                    raise _not_an_object(method, ".".join(inner), value, True)
        elif method == "initialize":
            caps = params.get("capabilities")
            if isinstance(caps, dict) and caps:  # an object by now, or left out
                check_client_capabilities(caps, "initialize: params.capabilities")
    return meta


def check_envelope(params: JSONObject) -> JSONObject:
    """The 2026-07-28 envelope, ``params._meta``: required, an object, with the
    protocol version and client capabilities in it. Raises -32602 naming what is
    missing or wrong; a ``_meta`` that is no object gets the words of
    ``check_params``, whichever of the two checks finds it first."""
    meta = params.get("_meta")
    if isinstance(meta, dict):
        if META_PROTOCOL_VERSION in meta and META_CLIENT_CAPABILITIES in meta:
            return meta
        missing = [k for k in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES) if k not in meta]
        raise invalid_params("params._meta is missing the required key(s): " + ", ".join(missing))
    if "_meta" not in params:
        raise invalid_params(
            f"params._meta is missing: a {MODERN_VERSIONS[-1]} request carries "
            f"{META_PROTOCOL_VERSION!r} and {META_CLIENT_CAPABILITIES!r} in it"
        )
    raise _meta_not_an_object(meta)
