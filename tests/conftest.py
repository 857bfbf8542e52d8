"""Shared test configuration.

* ``anyio_backend`` is parametrized so that every ``@pytest.mark.anyio`` test
  runs on both anyio backends, asyncio and trio.
* Hypothesis profiles: ``default`` and ``ci`` (identical: 100 examples, no
  deadline, since timing on a loaded 2-core machine is not what we test).
  ``HYPOTHESIS_PROFILE`` selects one; ``ci`` is loaded when it is unset.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("default", max_examples=100, deadline=None)
settings.register_profile("ci", max_examples=100, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)
