"""The menu of a problem built by the scenario side from the example plan (``two-sites``)."""

from __future__ import annotations

import json

from clusterloom.capacity import build_problem, sample_scenarios, solve_menu
from clusterloom.capacity.input import PlanInput, example_plan
from clusterloom.capacity.model import Curves


def test_the_example_plans_menu(plan: PlanInput, curves: Curves) -> None:
    scenarios = sample_scenarios(plan, 12, 0)
    problem = build_problem(plan, curves, scenarios, base=example_plan().parent)
    menu = solve_menu(problem, max_decisions=3)
    assert menu.formulation["status"] == "Optimal"
    assert menu.moves, "the example's plan decides something now"
    savings = [m.saving_cents for m in menu.moves]
    assert savings == sorted(savings, reverse=True)
    objective = menu.expected_cost_cents + menu.risk_weight * menu.cvar_cents
    for m in menu.moves:
        assert m.option_value_cents >= 0
        assert m.reasons
        assert m.site in problem.curves.sites
        assert m.expected_cost_cents + menu.risk_weight * m.cvar_cents >= objective - 2
        assert (m.saving_cents >= 0) == m.in_plan or m.saving_cents == 0
    assert json.loads(json.dumps(menu.to_dict())) == menu.to_dict()
