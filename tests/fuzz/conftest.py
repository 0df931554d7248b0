"""Fuzzing budget: every test here runs in the normal suite with a small, fixed number of
examples; ``pytest -m fuzz`` selects only them and runs each with a long budget.

The budget is a number of Hypothesis examples (``FUZZ_EXAMPLES``), never a wall-clock limit, so
that a run is repeatable. ``CLUSTERLOOM_FUZZ_EXAMPLES`` overrides both budgets.

A fuzz test takes the profile with ``@settings(settings.get_profile("clusterloom-fuzz"))``;
inputs that ever failed are kept as files under ``corpus/<target>/`` and replayed as
regression tests.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

#: examples per fuzz test in the normal run, and with ``-m fuzz``
NORMAL_BUDGET = 60
LONG_BUDGET = 3_000


def _budget(config: pytest.Config) -> int:
    given = os.environ.get("CLUSTERLOOM_FUZZ_EXAMPLES")
    if given:
        return int(given)
    markexpr = str(config.getoption("markexpr", "") or "")
    return LONG_BUDGET if "fuzz" in markexpr and "not fuzz" not in markexpr else NORMAL_BUDGET


def pytest_configure(config: pytest.Config) -> None:
    settings.register_profile(
        "clusterloom-fuzz",
        max_examples=_budget(config),
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        database=None,
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/fuzz/" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(pytest.mark.fuzz)
