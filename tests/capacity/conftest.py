"""Shared fixtures of the capacity tests: the example plan, its curves (designed once per
session, with the fabric stage alone as the example asks) and scenarios."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterloom.capacity.curves import compute_curves
from clusterloom.capacity.input import PlanInput, example_plan, load_plan
from clusterloom.capacity.model import Curves


@pytest.fixture(scope="session")
def plan() -> PlanInput:
    return load_plan(example_plan())


@pytest.fixture(scope="session")
def curves_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("curves")


@pytest.fixture(scope="session")
def curves(plan: PlanInput, curves_cache: Path) -> Curves:
    return compute_curves(plan, cache=curves_cache)
