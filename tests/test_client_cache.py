"""The client's result cache (``mcpwire/_client_cache.py``) against a model.

A sequence of ``put``, ``get`` and ``forget`` with a clock that moves: the cache
answers as an unbounded map of unexpired entries would, except that it keeps at
most ``MAX_CACHED`` of them and drops the least recently used first.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mcpwire._client_cache as cache_module
from mcpwire._client_cache import MAX_CACHED, ResultCache

METHODS = ["tools/list", "resources/read"]
keys = st.sampled_from([f"k{n}" for n in range(MAX_CACHED + 40)])
ops = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.sampled_from(METHODS), keys, st.integers(1, 5000)),
        st.tuples(st.just("get"), st.sampled_from(METHODS), keys),
        st.tuples(st.just("forget"), st.sampled_from(METHODS), st.one_of(st.none(), keys)),
        st.tuples(st.just("tick"), st.integers(0, 3000)),
    ),
    max_size=600,
)


class Clock:
    now = 1000.0

    def monotonic(self) -> float:
        return self.now


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops)
def test_cache_against_a_model(monkeypatch: pytest.MonkeyPatch, steps: list[Any]) -> None:
    clock = Clock()
    monkeypatch.setattr(cache_module, "time", clock)
    cache = ResultCache()
    model: dict[tuple[str, str], tuple[float, dict[str, Any]]] = {}  # in order of use
    for step in steps:
        if step[0] == "tick":
            clock.now += step[1] / 1000.0
            continue
        method, key = step[1], step[2]
        if step[0] == "put":
            value = {"v": len(model), "key": key}
            cache.put(method, key, step[3], value)
            model.pop((method, key), None)
            model[(method, key)] = (clock.now + step[3] / 1000.0, value)
            while len(model) > MAX_CACHED:
                del model[next(iter(model))]
        elif step[0] == "get":
            entry = model.pop((method, key), None)
            expected = entry[1] if entry is not None and entry[0] > clock.now else None
            if expected is not None:
                model[(method, key)] = entry  # type: ignore[assignment]
            assert cache.get(method, key) == expected
        else:
            cache.forget(method, key)
            for found in [k for k in model if k[0] == method and key in (None, k[1])]:
                del model[found]
        assert len(cache) <= MAX_CACHED
        assert len(cache) == len(model)
