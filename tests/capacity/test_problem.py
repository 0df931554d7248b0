"""The problem: costs in cents by their closed forms, the installed estate read from a real
run directory (the hgx-1k-roce example as ``design -o`` writes it), landing rules."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from capacity_helpers import example_data, plan_from
from clusterloom.capacity.input import PlanInput
from clusterloom.capacity.model import Curves
from clusterloom.capacity.problem import build_costs, build_problem
from clusterloom.capacity.scenarios import sample_scenarios
from clusterloom.errors import SpecError
from clusterloom.examples import example_text
from clusterloom.pipeline import run_design
from clusterloom.spec import parse_spec
from clusterloom.write import write_design


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("east-run")
    design = run_design(parse_spec(example_text("hgx-1k-roce")), compare=False, place=False)
    write_design(design, out)
    return out


def test_costs_in_cents(plan: PlanInput) -> None:
    costs = build_costs(plan)
    ids = [p.id for p in plan.parts]
    sn, dr4 = ids.index("switch:sn5600"), ids.index("optic:dr4-400g")
    assert costs.price[sn].tolist() == [5_500_000] * 8
    assert costs.price[dr4].tolist() == [
        65_000,
        65_000,
        62_000,
        62_000,
        60_000,
        60_000,
        58_000,
        58_000,
    ]
    assert costs.expedite[sn] == 1_375_000  # a quarter of the first period's price
    assert costs.cap[sn].tolist() == [48.0] * 8
    assert costs.idle_per_accelerator_period == 438_000
    assert costs.rework_per_accelerator == 50_000
    assert costs.carry_fraction == 0.03


def test_greenfield_problem(plan: PlanInput, curves: Curves) -> None:
    problem = build_problem(plan, curves, sample_scenarios(plan, 20, 1))
    assert problem.installed_units.shape == (2, len(plan.parts))
    assert not problem.installed_units.any() and not problem.installed_accelerators.any()
    assert problem.installed_choice.tolist() == [-1, -1]
    assert problem.may_land_at.tolist() == [[False, True], [True, False]]


def test_installed_from_a_run_directory(curves: Curves, run_dir: Path) -> None:
    data = example_data()
    data["installed"] = [{"site": "east", "run": str(run_dir)}]
    plan = plan_from(data)
    problem = build_problem(plan, curves, sample_scenarios(plan, 10, 1))
    ids = list(curves.parts)
    assert problem.installed_accelerators.tolist() == [1024, 0]
    assert problem.installed_choice.tolist() == [0, -1]  # two tiers: the 2-tier choice
    # the example's own design is what the curve holds at 1,024 on two tiers
    k = curves.sizes.tolist().index(1024)
    assert np.array_equal(problem.installed_units[0], curves.units[0, 0, k])
    assert problem.installed_units[0, ids.index("switch:sn5600")] == 24
    assert not problem.installed_units[1].any()


def test_not_a_run_directory_is_named(plan: PlanInput, curves: Curves, tmp_path: Path) -> None:
    data = example_data()
    data["installed"] = [{"site": "west", "run": str(tmp_path)}]
    plan = plan_from(data)
    with pytest.raises(SpecError) as err:
        build_problem(plan, curves, sample_scenarios(plan, 10, 1))
    assert err.value.problems[0].where == "installed[0].run"
    assert "not a design run" in err.value.problems[0].message
