"""The two-stage model and the menu: closed forms, an independent deterministic LP, option
values non-negative by construction, determinism."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from capacity_problems import one_site, synthetic
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from clusterloom.capacity import Menu, solve_menu
from clusterloom.capacity.moves import MoveKind, part_kind
from clusterloom.capacity.optimise import (
    Options,
    Waiting,
    build,
    cvar,
    envelope,
    information_groups,
    reduce_scenarios,
    solve,
)
from clusterloom.errors import SpecError


def plan_of(problem, **kw):  # type: ignore[no-untyped-def]
    model = build(problem, Options(**kw))
    solved, _ = solve(model)
    return model, solved


# ---- closed forms ---------------------------------------------------------------------------


def test_cvar_closed_forms() -> None:
    losses = np.arange(1.0, 11.0)
    p = np.full(10, 0.1)
    assert cvar(losses, p, 0.9) == pytest.approx(10.0)
    assert cvar(losses, p, 0.8) == pytest.approx(9.5)
    assert cvar(losses, p, 0.0) == pytest.approx(5.5)
    # the boundary scenario counted by the part of it inside the tail: 0.25 of 40 and 0.15 of 30
    four = np.array([10.0, 20.0, 30.0, 40.0])
    assert cvar(four, np.full(4, 0.25), 0.6) == pytest.approx((0.25 * 40 + 0.15 * 30) / 0.4)


def test_envelope_is_exact_on_a_convex_curve_and_states_its_gap_otherwise() -> None:
    x = np.array([0.0, 1.0, 2.0, 3.0])
    convex = np.array([0.0, 1.0, 3.0, 6.0])
    a, b, gap = envelope(x, convex)
    assert gap == 0.0
    assert np.allclose(np.max(a[:, None] + b[:, None] * x, axis=0), convex)
    concave = np.array([0.0, 1.0, 1.5, 1.5])
    a, b, gap = envelope(x, concave)
    # the chord from (0, 0) to (3, 1.5) lies 0.5 under (1, 1) and 0.5 under (2, 1.5)
    assert gap == pytest.approx(0.5)
    assert len(a) == 1 and b[0] == pytest.approx(0.5)


def test_a_tiny_case_by_hand() -> None:
    """64 accelerators want to run in both periods: 2 leaves at 100 cents.

    Lead 0: order both now, nothing idles: 200 cents. Lead 1: they land in period 1, so 64
    idle one period at 1000 cents: 64 200. Wanted only from period 1, lead 0, carry 10%:
    ordering now carries 2 units a period (20 cents), waiting costs 200."""
    _, s = plan_of(one_site([64, 64], lead=0))
    assert s.expected_cents == pytest.approx(200.0)
    assert s.cvar_cents == pytest.approx(200.0)
    assert s.objective_cents == pytest.approx(300.0)  # 200 + 0.5 * 200
    _, s = plan_of(one_site([64, 64], lead=1))
    assert s.expected_cents == pytest.approx(64_200.0)
    m, s = plan_of(one_site([0, 64], lead=0, carry=0.1))
    assert s.expected_cents == pytest.approx(200.0)
    assert s.values[m.buy[0, 0]] == pytest.approx(0.0)
    m, s = plan_of(one_site([0, 64], lead=1, carry=0.1))
    assert s.expected_cents == pytest.approx(200.0)
    assert s.values[m.buy[0, 0]] == pytest.approx(2.0)


def test_the_solvers_cvar_equals_the_closed_form_of_the_plans_losses() -> None:
    """No power anywhere: nothing can run, so scenario s loses 1000 cents per accelerator
    period wanted, whatever the plan; the CVaR at 0.75 of four equiprobable scenarios is the
    worst one's loss, at 0.5 the mean of the worst two."""
    rows = [[10.0, 10.0], [20.0, 20.0], [30.0, 30.0], [40.0, 40.0]]
    p = one_site([0, 0], scenarios=rows, power=0.0)
    for alpha, want in ((0.75, 80_000.0), (0.5, 70_000.0)):
        _, s = plan_of(p, risk_alpha=alpha, risk_weight=1.0)
        assert np.allclose(s.scenario_cents, [20_000, 40_000, 60_000, 80_000])
        assert s.cvar_cents == pytest.approx(want)
        assert s.solver_objective_cents == pytest.approx(50_000.0 + want)


def test_the_solvers_objective_is_expectation_plus_weighted_cvar() -> None:
    _, s = plan_of(synthetic(3), risk_alpha=0.8, risk_weight=0.7)
    assert s.solver_objective_cents == pytest.approx(s.expected_cents + 0.7 * s.cvar_cents)


# ---- one scenario: the deterministic optimum --------------------------------------------------


def deterministic(
    wanted: list[float], lead: int, carry: float, power: float, installed: float, expedite: float
) -> float:
    """The one-site problem written independently: orders o_t (lead ``lead``), expedited
    orders e_t from period 1 (lead 1, when ``lead`` > 1) and running x_t, units delivered as
    cumulative sums, solved with scipy's linprog."""
    T = len(wanted)
    price, idle = 100.0, 1000.0
    fast = lead > 1
    # variables: o_0..o_{T-1}, e_0..e_{T-1}, x_0..x_{T-1}, h_0..h_{T-1}
    c = np.concatenate(
        [
            np.full(T, price),
            np.full(T, price + expedite),
            np.full(T, -idle),
            np.full(T, carry * price),
        ]
    )
    a_ub, b_ub = [], []
    for t in range(T):
        arrived = np.array([1.0 if tau + lead <= t else 0.0 for tau in range(T)])
        rushed = np.array([1.0 if fast and tau >= 1 and tau + 1 <= t else 0.0 for tau in range(T)])
        a_ub.append(np.concatenate([-arrived, -rushed, np.eye(T)[t] / 32.0, np.zeros(T)]))
        b_ub.append(installed)  # x_t / 32 <= installed + arrived orders
        a_ub.append(np.concatenate([arrived, rushed, np.zeros(T), -np.eye(T)[t]]))
        b_ub.append(wanted[t] / 32.0 - installed)  # h_t >= delivered - wanted / 32
    rush = [(0, 0)] + [(0, None) if fast else (0, 0)] * (T - 1)
    bounds = [(0, None)] * T + rush + [(0, min(w, power)) for w in wanted] + [(0, None)] * T
    r = linprog(c, A_ub=np.array(a_ub), b_ub=np.array(b_ub), bounds=bounds, method="highs")
    assert r.status == 0
    return float(r.fun + idle * sum(wanted))


@settings(max_examples=25)
@given(
    wanted=st.lists(st.floats(0, 2000, allow_nan=False), min_size=2, max_size=5),
    lead=st.integers(0, 3),
    carry=st.sampled_from([0.0, 0.02, 0.3]),
    power=st.sampled_from([1e6, 500.0]),
    installed=st.sampled_from([0.0, 8.0]),
    expedite=st.sampled_from([0, 50, 5000]),
)
def test_one_scenario_plan_is_the_deterministic_optimum(
    wanted: list[float], lead: int, carry: float, power: float, installed: float, expedite: int
) -> None:
    problem = one_site(
        wanted, lead=lead, carry=carry, power=power, installed=installed, expedite=expedite
    )
    _, s = plan_of(problem, risk_weight=0.5)
    det = deterministic(wanted, lead, carry, power, installed, expedite)
    assert s.expected_cents == pytest.approx(det, rel=1e-7, abs=1e-3)
    # one scenario: its CVaR is its cost, the objective (1 + weight) times it
    assert s.cvar_cents == pytest.approx(s.expected_cents)


def test_one_scenario_multi_site_plan_does_not_depend_on_the_risk_weight() -> None:
    p = synthetic(5, n_scenarios=1, n_sites=2, n_periods=4)
    _, a = plan_of(p, risk_weight=0.0)
    _, b = plan_of(p, risk_weight=2.0)
    assert a.expected_cents == pytest.approx(b.expected_cents, rel=1e-9)
    assert b.objective_cents == pytest.approx(3.0 * a.expected_cents, rel=1e-9)


# ---- waiting and option values ----------------------------------------------------------------


def covered_now(problem):  # type: ignore[no-untyped-def]
    """The same problem with the installed estate covering every scenario's period 0."""
    from capacity_problems import clos_units

    want = np.minimum(problem.scenarios.demand, problem.scenarios.accelerators)[:, :, 0]
    top = want.max(axis=0) + 1.0
    choice = np.zeros(len(top), dtype=np.int64)
    units = np.array([clos_units(float(top[n]), 0) for n in range(len(top))])
    return dataclasses.replace(
        problem, installed_units=units, installed_choice=choice, installed_accelerators=top
    )


def test_with_no_lead_time_and_no_price_rise_ordering_now_never_beats_waiting() -> None:
    problem = covered_now(
        synthetic(11, n_scenarios=4, n_sites=2, n_periods=4, lead=0, rise=0.0, slips=False)
    )
    model, s = plan_of(problem)
    assert np.allclose(s.values[model.buy], 0.0, atol=1e-6)
    menu = solve_menu(problem, max_decisions=20)
    orders = [m for m in menu.moves if m.kind in {"order", "pre-build", "pre-pull"}]
    assert orders, "the menu prices ordering now against deferring"
    for move in orders:
        assert not move.in_plan
        assert move.saving_cents <= 0
        assert move.option_value_cents >= 0


@settings(max_examples=8)
@given(
    seed=st.integers(0, 10_000),
    lead=st.integers(0, 2),
    rise=st.sampled_from([0.0, 0.05]),
    n_sites=st.integers(1, 2),
)
def test_option_values_are_never_negative(seed: int, lead: int, rise: float, n_sites: int) -> None:
    problem = synthetic(seed, n_scenarios=3, n_sites=n_sites, n_periods=3, lead=lead, rise=rise)
    options = Options()
    base = solve(build(problem, options))[0].objective_cents
    groups = information_groups(problem)
    for site in range(n_sites):
        for part in (0, 3):
            now = build(problem, options, Waiting("order", site, part, np.zeros(3, np.int64)))
            wait = build(problem, options, Waiting("order", site, part, groups))
            v_now = solve(now)[0].objective_cents
            v_wait = solve(wait)[0].objective_cents
            # deciding now is a restriction of waiting, which is one of the base model
            assert v_now >= v_wait - 1e-6 * abs(v_now)
            assert v_wait >= base - 1e-6 * abs(base)
    menu = solve_menu(problem, max_decisions=4)
    assert all(m.option_value_cents >= 0 for m in menu.moves)


def test_a_tier_choice_that_may_wait_is_never_worse() -> None:
    problem = synthetic(2, n_scenarios=3, n_sites=1, n_periods=4, greenfield=1, spread=0.8)
    options = Options()
    now = solve(build(problem, options))[0].objective_cents
    wait_model = build(problem, options, Waiting("tier", 0, 0, information_groups(problem)))
    assert len(wait_model.z_wait) == 3 * 2
    assert solve(wait_model)[0].objective_cents <= now + 1e-6 * now


# ---- the menu ---------------------------------------------------------------------------------


def test_the_menu_is_deterministic_and_ranked() -> None:
    problem = synthetic(4, n_scenarios=4, n_sites=2, n_periods=4)
    a = solve_menu(problem, max_decisions=5)
    b = solve_menu(problem, max_decisions=5)
    ja = json.dumps(a.to_dict(), sort_keys=True)
    assert ja == json.dumps(b.to_dict(), sort_keys=True)
    assert "seconds" not in ja
    assert isinstance(a, Menu)
    savings = [m.saving_cents for m in a.moves]
    assert savings == sorted(savings, reverse=True)
    taken = [m for m in a.moves if m.in_plan]
    assert taken and all(m.saving_cents >= 0 and m.reasons for m in taken)
    # one greenfield site's two choices and the 2 x 5 orders now, in whole units
    assert a.formulation["integer_variables"] == 2 + 10
    assert a.formulation["first_stage"]["integer_orders"] == 10
    for m in a.moves:
        assert m.expected_cost_cents >= a.expected_cost_cents - 1


@pytest.mark.parametrize("whole", [False, True])
def test_the_menu_reports_the_plans_cost_and_its_alternatives_cost_more(whole: bool) -> None:
    problem = synthetic(9, n_scenarios=4, n_sites=2, n_periods=4)
    model, s = plan_of(problem, integer_orders=whole)
    if whole:
        assert np.allclose(s.values[model.buy], np.round(s.values[model.buy]), atol=1e-6)
    menu = solve_menu(problem, max_decisions=3, integer_orders=whole)
    assert menu.expected_cost_cents == round(s.expected_cents)
    assert menu.cvar_cents == round(s.cvar_cents)
    plan_objective = s.objective_cents
    for m in menu.moves:
        if not m.in_plan:
            # an alternative's plan is feasible for the model, so never better than its optimum
            assert m.expected_cost_cents + 0.5 * m.cvar_cents >= plan_objective - 1


def test_part_names_decide_the_kind_of_an_order() -> None:
    assert part_kind("spine-switch") is MoveKind.PRE_BUILD
    assert part_kind("core-switch") is MoveKind.PRE_BUILD
    assert part_kind("backbone-fibre") is MoveKind.PRE_PULL
    assert part_kind("optic") is MoveKind.ORDER


# ---- scenarios --------------------------------------------------------------------------------


def test_reduction_keeps_probability_and_merges_duplicates() -> None:
    p = one_site([0, 0], scenarios=[[10, 10], [10, 10], [50, 50], [50, 50]])
    reduced, near = reduce_scenarios(p, 2)
    assert np.allclose(reduced.scenarios.probability, [0.5, 0.5])
    assert near.tolist() == [0, 0, 1, 1]
    same, _ = reduce_scenarios(p, 4)
    assert same is p


def test_groups_are_what_period_one_reveals() -> None:
    p = one_site([0, 0, 0], scenarios=[[1, 2, 3], [1, 2, 9], [1, 5, 3]])
    assert information_groups(p).tolist() == [0, 0, 1]


def test_bad_input_names_each_problem() -> None:
    p = synthetic(1)
    bad = dataclasses.replace(
        p,
        scenarios=dataclasses.replace(p.scenarios, probability=np.array([0.5, 0.5, 0.5, 0.5])),
    )
    with pytest.raises(SpecError) as err:
        solve_menu(bad, risk_alpha=1.5)
    where = {q.where for q in err.value.problems}
    assert where == {"risk_alpha", "scenarios.probability"}
