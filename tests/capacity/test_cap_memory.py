"""Decision memory (``capacity.memory``): a plan's decision and its outcome round trip
through the JSON-lines log and a real (SQLite) store with the same ids; the latest record on
a proposal is its outcome; the realised cost is never below the hindsight optimum; nothing
to price is refused naming ``--actuals``; the CLI end to end and its exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clusterloom.capacity.actuals import Actual
from clusterloom.capacity.input import PlanInput, example_plan
from clusterloom.capacity.memory import (
    OUTCOME_SCHEMA,
    find_decision,
    latest,
    learn_from_records,
    outcome_of,
    outcome_record,
    plan_record,
    read_decisions,
    realised_cost,
    record_decision,
    record_id,
)
from clusterloom.capacity.menu import Menu, solve_menu
from clusterloom.capacity.model import CapacityProblem, Curves
from clusterloom.capacity.problem import build_problem
from clusterloom.capacity.scenarios import sample_scenarios
from clusterloom.changes import Decision
from clusterloom.cli.main import app
from clusterloom.errors import SpecError
from clusterloom.store import open_store

runner = CliRunner()


@pytest.fixture(scope="module")
def solved(plan: PlanInput, curves: Curves) -> tuple[CapacityProblem, Menu]:
    problem = build_problem(plan, curves, sample_scenarios(plan, 6, 1), base=example_plan().parent)
    return problem, solve_menu(problem, max_decisions=2)


def _actuals(plan: PlanInput, factor: float, periods: int) -> list[Actual]:
    out = []
    for p in plan.programs:
        for site, f in p.demand.items():
            values = f.quantile_table()[1]
            for t in range(periods):
                out.append(
                    Actual("demand", site, p.name, plan.periods[t], round(values[t, 1] * factor))
                )
    return out


def test_decision_and_outcome_round_trip_log_and_store(
    plan: PlanInput, solved: tuple[CapacityProblem, Menu], curves: Curves, tmp_path: Path
) -> None:
    problem, menu = solved
    rec = plan_record(plan, problem, menu, plan_dir=example_plan().parent)
    mem = rec.context["memory"]
    assert rec.chosen == menu.moves[0].name
    assert rec.context["menu"]["moves"][0]["name"] == rec.chosen
    assert PlanInput.model_validate(mem["plan"]).model_dump() == plan.model_dump()
    assert {(f["program"], f["site"]) for f in mem["forecasts"]} == {
        ("pretrain", "east"), ("inference", "west"),
    }  # fmt: skip
    acts = _actuals(plan, 0.9, 4)
    real = realised_cost(rec, acts, curves=curves)
    assert real.periods == plan.periods[:4]
    out = outcome_record(rec, acts, real)
    assert out.proposal == rec.proposal and out.context == rec.context
    doc = outcome_of(out)
    assert doc is not None and doc["schema"] == OUTCOME_SCHEMA
    assert len(doc["actuals"]) == len(acts)
    log = tmp_path / "decisions.jsonl"
    ids = [record_decision(r, log=log) for r in (rec, out)]
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    try:
        assert [record_decision(r, store=store) for r in (rec, out)] == ids
        for where in ({"log": log}, {"store": store}):
            back = read_decisions(**where)  # type: ignore[arg-type]
            assert [d for _, d in back] == [rec, out]
            assert [i for i, _ in back] == ids
            rid, found = find_decision(back, ids[0][:8])
            assert (rid, found) == (ids[1], out)  # the latest on the proposal: its outcome
            assert find_decision(back, rec.proposal)[1] == out
            assert latest(back)[rec.proposal][1] == out
            learned = learn_from_records(back)
            assert learned.decisions == 1
            assert set(learned.sources) == {"pretrain", "inference"}
    finally:
        store.close()
    assert record_id(out) == ids[1]


def test_realised_cost_against_hindsight(
    plan: PlanInput, solved: tuple[CapacityProblem, Menu], curves: Curves
) -> None:
    problem, menu = solved
    rec = plan_record(plan, problem, menu)
    for factor in (0.6, 1.0, 1.4):
        real = realised_cost(rec, _actuals(plan, factor, 8), curves=curves)
        assert real.periods == plan.periods
        assert real.cost_cents >= real.hindsight_cents - 1.0  # fixing a decision never helps
        assert real.first_stage["orders"] or real.first_stage["tiers"]
    more = realised_cost(rec, _actuals(plan, 1.4, 8), curves=curves)
    less = realised_cost(rec, _actuals(plan, 0.6, 8), curves=curves)
    assert more.hindsight_cents > less.hindsight_cents  # more demand costs more to serve


def test_nothing_to_price_and_bad_references(
    plan: PlanInput, solved: tuple[CapacityProblem, Menu], curves: Curves
) -> None:
    problem, menu = solved
    rec = plan_record(plan, problem, menu)
    late = [a for a in _actuals(plan, 1.0, 4) if a.period != plan.periods[0]]
    with pytest.raises(SpecError) as err:
        realised_cost(rec, late, curves=curves)
    assert err.value.problems[0].where == "--actuals"
    with pytest.raises(SpecError):
        find_decision([("abcdef0123456789", rec)], "nope")
    bare = Decision(proposal="x", context={}, chosen="")
    with pytest.raises(SpecError) as err:
        realised_cost(bare, _actuals(plan, 1.0, 4))
    assert "no capacity memory" in err.value.problems[0].message


def test_cli_plan_log_outcome_and_learn(tmp_path: Path) -> None:
    env = {"CLUSTERLOOM_CACHE": str(tmp_path / "cache")}
    log = tmp_path / "d.jsonl"
    ex = str(example_plan())
    r = runner.invoke(app, ["plan", ex, "-n", "6", "--log", str(log)], env=env)
    assert r.exit_code == 0, r.output
    (rid, rec), = read_decisions(log=log)  # fmt: skip
    from clusterloom.capacity.input import load_plan

    acts = tmp_path / "a.csv"
    rows = ["quantity,site,program,period,value"] + [
        f"{a.quantity},{a.site},{a.program},{a.period},{a.value}"
        for a in _actuals(load_plan(ex), 0.8, 3)
    ]
    acts.write_text("\n".join(rows) + "\n")
    r = runner.invoke(
        app, ["capacity", "outcome", rid, "--actuals", str(acts), "--log", str(log), "--json"],
        env=env,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["proposal"] == rec.proposal and doc["realised"]["periods"][-1] == "2027Q3"
    assert len(read_decisions(log=log)) == 2
    run = tmp_path / "run"
    r = runner.invoke(
        app,
        ["plan", ex, "-n", "6", "--no-menu", "--learn-from", str(log), "--json", "-o", str(run)],
        env=env,
    )
    assert r.exit_code == 0, r.output
    learning = json.loads(r.stdout)["learning"]
    assert json.loads((run / "menu.json").read_text())["learning"] == learning
    page = (run / "plan.html").read_text()
    assert 'id="learning"' in page and "pretrain: " in page
    assert learning["decisions"] == 1
    assert learning["sources"]["pretrain"]["mean_log_ratio"] < -0.1  # forecasts ran high
    # the same through the store: the log imported as it is, the outcome recorded there
    url = f"sqlite:///{tmp_path / 'store.db'}"
    store = open_store(url)
    try:
        store.import_records(log)
    finally:
        store.close()
    r = runner.invoke(
        app,
        ["capacity", "outcome", rec.proposal, "--actuals", str(acts), "--store",
         "--store-url", url],
        env=env,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    r = runner.invoke(
        app,
        ["plan", ex, "-n", "6", "--no-menu", "--learn-from", "store", "--store-url", url,
         "--json"],
        env=env,
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["learning"]["sources"] == learning["sources"]
    # bad input: exit 2, one line naming the field
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_text('{"kind": "decision"}\nnot json\n')
    for args in (
        ["plan", ex, "--no-menu", "--learn-from", str(garbage)],
        ["plan", ex, "--no-menu", "--log", str(log)],
        ["capacity", "outcome", rid, "--actuals", str(acts), "--log", str(log), "--store"],
        ["capacity", "outcome", "nosuchdecision", "--actuals", str(acts), "--log", str(log)],
        ["capacity", "outcome", rid, "--actuals", str(acts)],
        ["capacity", "outcome", rid, "--actuals", str(tmp_path / "none.csv"), "--log", str(log)],
        ["plan", ex, "--learn-from", str(tmp_path / "none.jsonl")],
    ):
        r = runner.invoke(app, args, env=env)
        assert r.exit_code == 2, (args, r.output)
        assert "Traceback" not in r.output


def test_a_decision_priced_on_its_own_certain_future_has_no_regret(tmp_path: Path) -> None:
    """Closed case: a plan whose forecast is one certain path decides the optimum for that
    path; priced against that path as the actual, its cost is the hindsight optimum."""
    from clusterloom.capacity.backtest import backtest_plan, synthetic_history
    from clusterloom.capacity.curves import compute_curves

    history = synthetic_history(2, 5)
    certain = backtest_plan(history, 1, "truth")
    curves = compute_curves(certain, cache=tmp_path)
    problem = build_problem(certain, curves, sample_scenarios(certain, 1, 0))
    menu = solve_menu(problem, max_decisions=20)
    assert any(m.in_plan and m.part for m in menu.moves)
    rec = plan_record(certain, problem, menu)
    acts = [
        Actual("demand", "east", p.name, certain.periods[t], f.quantile_table()[1][t, 0])
        for p in certain.programs
        for f in p.demand.values()
        for t in range(certain.horizon.periods)
    ]
    real = realised_cost(rec, acts, curves=curves)
    assert real.cost_cents >= real.hindsight_cents - 1.0
    assert real.regret_cents <= 1e-5 * real.hindsight_cents + 100.0  # menu quantities: 3 dp
    assert abs(real.hindsight_cents - menu.expected_cost_cents) <= 1.0
