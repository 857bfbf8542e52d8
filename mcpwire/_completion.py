"""``completion/complete``: argument completion for prompts and resource templates."""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING

from ._registry import call_handler
from .sansio._json import JSONObject, JSONValue

if TYPE_CHECKING:
    from ._methods import Call

__all__ = ("MAX_VALUES", "complete")

#: The spec caps a completion at 100 values.
MAX_VALUES = 100


async def complete(call: Call) -> JSONObject:
    from ._methods import invalid_params

    ref = call.params.get("ref")
    argument = call.params.get("argument")
    if not isinstance(ref, dict) or not isinstance(argument, dict):  # objects, or left out
        missing = [f"params.{k}" for k in ("ref", "argument") if k not in call.params]
        verb = "is" if len(missing) == 1 else "are"
        raise invalid_params(
            f"completion/complete: {' and '.join(missing)} {verb} required (an object)"
        )
    ref_type = ref.get("type")
    arg_name = argument.get("name")
    value = argument.get("value", "")
    if not isinstance(arg_name, str) or not isinstance(value, str):
        raise invalid_params("completion/complete: argument needs string name and value")
    server = call.server
    if ref_type == "ref/prompt":
        target = ref.get("name")
        if not isinstance(target, str) or target not in server.prompts:
            raise invalid_params(f"Unknown prompt: {target}")
    elif ref_type == "ref/resource":
        target = ref.get("uri")
        if not isinstance(target, str):
            raise invalid_params("completion/complete: ref/resource needs a uri")
    else:
        raise invalid_params(f"completion/complete: unknown ref type {ref_type!r}")
    context = call.params.get("context")
    given = context.get("arguments") if isinstance(context, dict) else None
    context_args: dict[str, JSONValue] = dict(given) if isinstance(given, dict) else {}
    for entry in server.completions:
        if entry.ref_type != ref_type or entry.ref != target:
            continue
        if entry.argument is not None and entry.argument != arg_name:
            continue
        offered = {"argument": arg_name, "value": value, "context": context_args}
        names = inspect.signature(entry.fn).parameters
        kwargs: dict[str, object] = {k: v for k, v in offered.items() if k in names}
        produced = await call_handler(entry.fn, kwargs, thread=False)
        return {"completion": _shape(produced)}
    return {"completion": {"values": [], "total": 0, "hasMore": False}}


def _shape(produced: object) -> JSONObject:
    if isinstance(produced, dict):
        values = produced.get("values")
        if isinstance(values, list) and len(values) > MAX_VALUES:
            produced = dict(produced)
            produced["values"] = values[:MAX_VALUES]
            produced["hasMore"] = True
        return produced
    values = [str(v) for v in produced] if isinstance(produced, (list, tuple)) else []
    return {
        "values": values[:MAX_VALUES],
        "total": len(values),
        "hasMore": len(values) > MAX_VALUES,
    }
