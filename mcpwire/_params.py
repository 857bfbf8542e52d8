"""The request-params shapes every MCP revision's schema fixes, checked once per request.

``check_params`` runs in ``dispatch`` before any era or method logic, so no
handler sees a request the schema forbids. It checks what is common to every
revision (2024-11-05 ... 2026-07-28, ``schema.ts``):

* ``_meta?: { ... }`` on every request: absent, or an object. ``null`` is
  neither (the schema's ``?`` means the member may be left out, not that it
  may be null), and neither is a number, string, boolean or array;
* ``_meta.progressToken?: ProgressToken`` with ``ProgressToken = string |
  number``: a boolean, ``null``, an object or an array is refused; a number
  with a fraction is a number, and is kept and echoed as it came;
* the params the schema types as optional objects (``tools/call`` and
  ``prompts/get`` ``arguments``): absent, or an object (again not ``null``).

Every refusal is -32602 Invalid params, naming the member and what it was. The
check is a few dictionary lookups: it is on the path of every ``tools/call``.
What each value inside ``arguments`` must be is the method's own business (a
tool's input schema; a prompt's string arguments).
"""

from __future__ import annotations

from ._errors import JSONRPCError
from .sansio._json import JSONObject, JSONValue, kind_of
from .sansio._messages import ErrorCode

__all__ = ("check_params", "invalid_params")

#: Per method, the params the schema types ``name?: { [key: string]: ... }``.
_OBJECT_PARAMS: dict[str, tuple[str, ...]] = {
    "tools/call": ("arguments",),
    "prompts/get": ("arguments",),
}


def invalid_params(message: str, data: JSONValue = None) -> JSONRPCError:
    """-32602 Invalid params with ``message`` (and ``data``, when given)."""
    return JSONRPCError(ErrorCode.INVALID_PARAMS, message, data)


def check_params(method: str, params: JSONObject) -> JSONValue:
    """Raise -32602 for params the schema forbids (see the module docstring).

    Returns ``params._meta`` (``None`` when absent), which the caller reads next.
    """
    meta = params.get("_meta")
    if meta is None:
        if "_meta" in params:
            raise invalid_params("params._meta must be an object (or left out), not null")
    elif not isinstance(meta, dict):
        raise invalid_params(f"params._meta must be an object (or left out), not {kind_of(meta)}")
    elif "progressToken" in meta:
        token = meta["progressToken"]
        if isinstance(token, bool) or not isinstance(token, (str, int, float)):
            raise invalid_params(
                f"params._meta.progressToken must be a string or a number, not {kind_of(token)}"
            )
    keys = _OBJECT_PARAMS.get(method)
    if keys is not None:
        for key in keys:
            if key in params and not isinstance(params[key], dict):
                raise invalid_params(
                    f"{method}: params.{key} must be an object (or left out), "
                    f"not {kind_of(params[key])}"
                )
    return meta
