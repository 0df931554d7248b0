"""The run's files: the scenario tables hold the arrays row for row; the menu recorded in a
real (SQLite) design store as a decision and read back equal."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from capacity_helpers import MENU
from clusterloom.capacity.input import PlanInput
from clusterloom.capacity.model import Curves
from clusterloom.capacity.problem import build_problem
from clusterloom.capacity.scenarios import sample_scenarios
from clusterloom.capacity.write import plan_decision, plan_hash, write_plan
from clusterloom.changes import Decision
from clusterloom.store import open_store


def test_files_hold_the_scenarios(plan: PlanInput, curves: Curves, tmp_path: Path) -> None:
    problem = build_problem(plan, curves, sample_scenarios(plan, 30, 8))
    paths = write_plan(tmp_path, plan, problem, MENU)
    assert [p.name for p in paths] == [
        "plan.html", "menu.json", "scenarios.parquet", "lead_times.parquet",
    ]  # fmt: skip
    sc = problem.scenarios
    rows = pq.read_table(tmp_path / "scenarios.parquet").to_pydict()
    demand = np.array(rows["demand"]).reshape(sc.demand.shape)
    assert np.array_equal(demand, sc.demand)
    first = [i for i, s in enumerate(rows["scenario"]) if s == 5]
    assert {rows["shocks"][i] for i in first} == {"; ".join(sc.shocks[5])}
    assert [str(x) for x in rows["site"][:8]] == ["east"] * 8
    lead = pq.read_table(tmp_path / "lead_times.parquet").to_pydict()
    assert np.array_equal(np.array(lead["lead_time_quarters"]).reshape(30, -1), sc.lead_time)


def test_the_menu_is_recorded_as_a_decision(
    plan: PlanInput, curves: Curves, tmp_path: Path
) -> None:
    problem = build_problem(plan, curves, sample_scenarios(plan, 10, 8))
    decision = plan_decision(plan, problem, MENU)
    assert decision.chosen == "order switch:sn5600 now"
    assert decision.proposal == f"capacity-plan/two-sites/{plan_hash(plan)[:16]}/seed-8"
    assert decision.context["menu"]["moves"][0]["quantity"] == 24
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        rec_id = store.record(decision)
        assert store.record(decision) == rec_id  # the same record again changes nothing
        back = store.change_record(rec_id)
        assert isinstance(back, Decision) and back == decision
    finally:
        store.close()
