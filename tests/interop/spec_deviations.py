"""What the cross-serve property tests (``tests/test_crossserve.py``) accept as different.

Three lists, all data:

* ``FREEDOMS``: what ``spec_observe.normalise`` removes before any comparison, because the
  specification leaves it to each implementation. Not deviations; listed so that the
  comparison's blind spots are written down.
* ``SERVER``: differences between the mcpwire server and the reference SDK server seen
  through the same client, each with the clause it concerns and which side is right.
* ``CLIENT``: differences between mcpwire's client and the SDK's client seen against the
  same server.

``SERVER`` is empty: with ``FREEDOMS`` removed, every generated example so far (about 300
specs and programs, both transports, both eras) is observed identically through the same
client. ``CLIENT`` has one deliberate difference (ping in the modern era). An entry names the
program steps it applies to (``applies``) and how it folds both sides' observations of such
a step into one (``fold``); ``apply`` does the rest. Through the same client, both servers
must still agree on those steps.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ("CLIENT", "FREEDOMS", "SERVER", "Deviation", "Freedom", "apply")


@dataclass(frozen=True)
class Freedom:
    what: str
    clause: str


@dataclass(frozen=True)
class Deviation:
    what: str
    clause: str
    #: "mcpwire", "reference" or "both" (the specification allows either).
    right: str
    #: Whether the deviation concerns a program step, given ``(op, transport, era)``.
    applies: Callable[[list[Any], str, str], bool]
    #: The observation of such a step, folded so that both sides compare equal.
    fold: Callable[[Any], Any]


FREEDOMS: tuple[Freedom, ...] = (
    Freedom(
        "serverInfo, instructions, and the identity stamp in result _meta",
        "2025-11-25 basic/lifecycle.mdx (Implementation); 2026-07-28 basic/index.mdx "
        "(io.modelcontextprotocol/serverInfo SHOULD)",
    ),
    Freedom(
        "ttlMs and cacheScope on cacheable results, and resultType (absent means complete)",
        "2026-07-28 server/utilities/caching.mdx; schema Result.resultType",
    ),
    Freedom(
        "page size and cursors: lists are followed to the end and compared as sets "
        "(sorted by name or URI)",
        "2025-11-25 server/utilities/pagination.mdx (server chooses the page size, "
        "cursors are opaque); tools/list order is only a 2026-07-28 SHOULD",
    ),
    Freedom(
        "the text of an error result the implementation wrote itself (input validation); "
        "only isError counts. The text of the tool's own failure must still match",
        "2025-11-25 server/tools.mdx Error Handling (messages are for the model, free text)",
    ),
    Freedom(
        "JSON-RPC error messages and data: errors compare by code",
        "JSON-RPC 2.0 section 5.1 (message SHOULD be a short description)",
    ),
    Freedom(
        "capability details: only which of tools, resources, prompts, logging are declared "
        "is compared (not listChanged/subscribe flags, not completions)",
        "2025-11-25 basic/lifecycle.mdx Capability Negotiation (each server declares what "
        "it offers)",
    ),
    Freedom(
        "the order of log notifications across requests (compared as a multiset)",
        "2025-11-25 basic/transports.mdx (Streamable HTTP: each message on one stream, "
        "no order across streams)",
    ),
)

SERVER: tuple[Deviation, ...] = ()

CLIENT: tuple[Deviation, ...] = (
    Deviation(
        "ping on a 2026-07-28 connection: the SDK client sends ping, which that revision "
        "removed, and gets -32601 from either server; mcpwire's Client.ping() checks "
        "liveness with server/discover instead and succeeds",
        "2026-07-28 changelog.mdx (ping removed); basic/lifecycle.mdx (server/discover "
        "MUST be answered)",
        "mcpwire",
        lambda op, transport, era: op[0] == "ping" and era != "legacy",
        lambda observed: ["ping: liveness check, see CLIENT deviations"],
    ),
)


def apply(
    deviations: tuple[Deviation, ...],
    obs: dict[str, Any],
    program: list[list[Any]],
    transport: str,
    era: str,
) -> dict[str, Any]:
    """``obs`` (already normalised) with every applicable deviation folded."""
    if not deviations:
        return obs
    ops = list(obs["ops"])
    for i, op in enumerate(program):
        for deviation in deviations:
            if deviation.applies(op, transport, era):
                ops[i] = deviation.fold(ops[i])
    return {**obs, "ops": ops}
