"""Scenarios: deterministic for a seed; the copula's rank correlation and the marginals'
quantiles are the forecast's; each shock does exactly what the model says (slips shift
deliveries and raise lead times, moves conserve demand, halls bring power when ready)."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import spearmanr

from capacity_helpers import example_data, plan_from
from clusterloom.capacity.input import PlanInput
from clusterloom.capacity.scenarios import correlated_uniforms, inverse_cdf, sample_scenarios
from clusterloom.errors import SpecError


def _quiet(data: dict) -> dict:  # type: ignore[type-arg]
    """No slips, no moves, every hall ready: demand alone."""
    data["vendors"] = []
    data["moves"] = {"probability": 0.0}
    for site in data["sites"]:
        for b in site["buildings"]:
            for h in b["halls"]:
                h.pop("ready", None)
    return data


def test_same_seed_same_scenarios(plan: PlanInput) -> None:
    a, b = sample_scenarios(plan, 200, 11), sample_scenarios(plan, 200, 11)
    for name in ("demand", "accelerators", "power_kw", "positions", "lead_time"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert a.shocks == b.shocks
    c = sample_scenarios(plan, 200, 12)
    assert not np.array_equal(a.demand, c.demand)
    assert a.probability.sum() == pytest.approx(1.0)


def test_inverse_cdf_closed_forms() -> None:
    levels = np.array([0.1, 0.5, 0.9])
    values = np.array([[100.0, 200.0, 400.0]])  # one period
    u = np.array([0.1, 0.5, 0.9, 0.3, 0.0, 1.0])
    got = inverse_cdf(levels, values, u)[:, 0]
    # at the levels, the quantiles; between, linear; beyond, the outer segments extended
    assert got.tolist() == pytest.approx([100, 200, 400, 150, 75, 450])


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(0.0, 1e5), min_size=2, max_size=6).map(sorted),
    st.lists(st.floats(0.0, 1.0), min_size=2, max_size=20),
)
def test_inverse_cdf_is_monotone_and_exact_at_levels(values: list[float], us: list[float]) -> None:
    levels = np.linspace(0.05, 0.95, len(values))
    v = np.array([values])
    at_levels = inverse_cdf(levels, v, levels)[:, 0]
    assert np.allclose(at_levels, values, rtol=1e-9, atol=1e-6)
    u = np.sort(np.array(us))
    got = inverse_cdf(levels, v, u)[:, 0]
    assert np.all(np.diff(got) >= -1e-6 * max(1.0, max(values)))


def test_copula_rank_correlation() -> None:
    """For a Gaussian copula, Spearman's rho is (6 / pi) asin(r / 2)."""
    rng = np.random.default_rng(3)
    r = 0.7
    u = correlated_uniforms(np.array([[1.0, r], [r, 1.0]]), 20_000, rng)
    rho = spearmanr(u[:, 0], u[:, 1]).statistic
    assert rho == pytest.approx(6 / math.pi * math.asin(r / 2), abs=0.02)
    assert u.min() > 0 and u.max() < 1


def test_marginals_match_the_forecast() -> None:
    plan = plan_from(_quiet(example_data()))
    sc = sample_scenarios(plan, 20_000, 5)
    forecast = plan.programs[0].demand["east"]
    levels, values = forecast.quantile_table()
    for t in (1, 4, 7):
        got = np.quantile(sc.demand[:, 0, t], levels)
        assert got == pytest.approx(values[t], rel=0.03, abs=4), t
    assert np.array_equal(sc.accelerators, sc.demand)  # nothing slips
    assert all(not any("moves" in s or "slip" in s for s in x) for x in sc.shocks)
    # cumulative demand never falls
    assert np.all(np.diff(sc.demand, axis=2) >= -1e-9)


def test_a_vendor_slip_shifts_deliveries_and_raises_lead_times() -> None:
    data = _quiet(example_data())
    # the same draws with and without the slip: the vendor is there, its slip never comes
    data["vendors"] = [{"name": "nvidia", "slip": {"probability": 0.0, "quarters": [2, 2]}}]
    base = sample_scenarios(plan_from(data), 50, 9)
    data["vendors"][0]["slip"]["probability"] = 1.0
    slipped = sample_scenarios(plan_from(data), 50, 9)
    plan = plan_from(data)
    nvidia = [p.supplier.vendor == "nvidia" for p in plan.parts]
    assert np.array_equal(slipped.lead_time[:, nvidia], base.lead_time[:, nvidia] + 2)
    assert np.array_equal(
        slipped.lead_time[:, ~np.array(nvidia)], base.lead_time[:, ~np.array(nvidia)]
    )
    # every program is nvidia's: deliveries are demand two quarters late
    assert np.array_equal(slipped.demand, base.demand)
    assert np.array_equal(slipped.accelerators[:, :, 2:], slipped.demand[:, :, :-2])
    assert np.array_equal(slipped.accelerators[:, :, :2], slipped.demand[:, :, :1].repeat(2, 2))
    assert all("nvidia: deliveries slip 2 quarter(s)" in s for s in slipped.shocks)


def test_demand_moves_conserve_the_total() -> None:
    data = _quiet(example_data())
    still = sample_scenarios(plan_from(data), 300, 4)
    data["moves"] = {"probability": 1.0, "share": 0.5}
    moved = sample_scenarios(plan_from(data), 300, 4)
    assert np.allclose(moved.demand.sum(axis=1), still.demand.sum(axis=1))
    assert not np.allclose(moved.demand, still.demand)
    # each program moves half of one site's demand: the shock names say which way
    assert all(sum("moves" in x for x in s) == 2 for s in moved.shocks)


def test_halls_bring_power_and_positions_when_ready() -> None:
    data = _quiet(example_data())
    data["sites"][1]["buildings"][0]["halls"][0]["ready"] = "2027Q3"
    sc = sample_scenarios(plan_from(data), 20, 1)
    west = sc.power_kw[:, 1]
    assert np.all(west[:, :2] == 0) and np.all(west[:, 2:] == 2400)
    assert np.all(sc.positions[:, 1, 2:] == 64)
    east = sc.power_kw[:, 0]
    assert np.all(east == 4800)  # both halls from the start


def test_readiness_draws_follow_the_distribution(plan: PlanInput) -> None:
    sc = sample_scenarios(plan, 4000, 2)
    west_ready = (sc.power_kw[:, 1] > 0).argmax(axis=1)  # first period with power
    # levels 0.1 / 0.5 / 0.9 at 2027Q1 / 2027Q3 / 2028Q2: periods 0 / 2 / 5
    assert np.median(west_ready) == 2
    # rounded to the nearest quarter: ready by period 5 when the draw is below 5.5, which the
    # last segment (2 at 0.5 to 5 at 0.9, extended) reaches at u = 0.9 + 0.5 * 0.4 / 3
    assert np.mean(west_ready <= 5) == pytest.approx(0.9 + 0.5 * 0.4 / 3, abs=0.01)
    assert np.mean(west_ready == 0) == pytest.approx(0.1 + 0.5 * 0.4 / 2, abs=0.02)
    assert np.all(sc.power_kw[:, 1] <= 2400 + 1e-9)


def test_scenario_count_is_bounded(plan: PlanInput) -> None:
    with pytest.raises(SpecError, match="scenarios"):
        sample_scenarios(plan, 0, 1)


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    r=st.floats(-0.99, 0.99),
    slip=st.floats(0.0, 1.0),
    move=st.floats(0.0, 1.0),
    share=st.floats(0.01, 1.0),
)
def test_invariants_over_generated_plans(
    seed: int, r: float, slip: float, move: float, share: float
) -> None:
    """Whatever the correlation, slip and move odds: demand is non-negative and cumulative,
    nothing is delivered before it is wanted, power and positions never exceed the halls',
    and a slip only ever lengthens lead times."""
    data = example_data()
    data["correlation"] = [[1.0, r], [r, 1.0]]
    data["vendors"][0]["slip"]["probability"] = slip
    data["moves"] = {"probability": move, "share": share}
    plan = plan_from(data)
    sc = sample_scenarios(plan, 64, seed)
    assert np.all(sc.demand >= 0) and np.all(np.diff(sc.demand, axis=2) >= -1e-9)
    assert np.all(sc.accelerators <= sc.demand + 1e-9)
    halls = [s.halls for s in plan.sites]
    top_kw = np.array([sum(h.power.it_kw for h in hs) for hs in halls])
    assert np.all(sc.power_kw <= top_kw[None, :, None] + 1e-9)
    assert np.all(np.diff(sc.power_kw, axis=2) >= 0)
    assert np.all(
        sc.positions <= np.array([sum(h.positions for h in hs) for hs in halls])[None, :, None]
    )
    quiet = copy.deepcopy(data)
    quiet["vendors"][0]["slip"]["probability"] = 0.0
    quiet["vendors"][1]["slip"]["probability"] = 0.0
    base = sample_scenarios(plan_from(quiet), 64, seed)
    assert np.all(sc.lead_time >= base.lead_time)
