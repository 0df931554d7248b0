"""Reserving power and positions (``Reservations``, the ``reserve`` move) and integer orders:
closed cases on both sides of the threshold, an independent deterministic LP, the menu's
move and its option value, the plan fields and their errors."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest
from capacity_problems import one_site, synthetic
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from clusterloom.capacity import (
    Reservations,
    build_problem,
    example_plan,
    load_plan,
    parse_plan,
    sample_scenarios,
    solve_menu,
)
from clusterloom.capacity.model import CapacityProblem, Curves
from clusterloom.capacity.optimise import Options, build, solve
from clusterloom.capacity.problem import build_costs, build_reservations
from clusterloom.errors import SpecError

IDLE = 1000  # cents per accelerator-period in ``one_site``; 1 kW per accelerator there


def reserved(
    problem: CapacityProblem,
    *,
    price: float,
    lead: int = 0,
    held: float = 0.0,
    spot_price: float = 0.0,
    spot_lead: int = -1,
) -> CapacityProblem:
    """``problem`` with its one site's power to be reserved (positions held aplenty)."""
    r = Reservations(
        active=np.array([True]),
        held_kw=np.array([held]),
        held_positions=np.array([1e9]),
        kw_price=np.array([round(price)], dtype=np.int64),
        position_price=np.zeros(1, dtype=np.int64),
        lead=np.array([lead], dtype=np.int64),
        spot_kw_price=np.array([round(spot_price)], dtype=np.int64),
        spot_position_price=np.zeros(1, dtype=np.int64),
        spot_lead=np.array([spot_lead], dtype=np.int64),
    )
    return dataclasses.replace(problem, reservations=r)


def plan(problem: CapacityProblem, **kw: object) -> tuple[float, float]:
    """(kW reserved now, expected cost) of the risk-neutral plan."""
    model = build(problem, Options(risk_weight=0.0, **kw))  # type: ignore[arg-type]
    s, _ = solve(model)
    return float(s.values[model.reserve[(0, 0)]]), s.expected_cents


# ---- the threshold ----------------------------------------------------------------------------


@pytest.mark.parametrize("lead", [0, 1, 2])
def test_one_scenario_a_reservation_is_taken_exactly_below_the_idle_cost_it_avoids(
    lead: int,
) -> None:
    """512 accelerators want to run in each of 4 periods, parts free, no power held and none
    to be had unreserved: each kW reserved (available from ``lead``) saves an idle
    accelerator in each of the T - lead periods it is paid for, so it is reserved iff its
    price per kW-period is below the idle cost (1 kW an accelerator)."""
    base = one_site([512.0] * 4, price=0)
    for price, want in ((0.9 * IDLE, 512.0), (1.1 * IDLE, 0.0), (IDLE - 1, 512.0)):
        r, cost = plan(reserved(base, price=price, lead=lead))
        assert r == pytest.approx(want, abs=1e-6)
        paid = 4 - lead
        # reserved: pay for it over ``paid`` periods, idle before; else idle throughout
        expect = (price * paid + IDLE * lead) * 512 if want else IDLE * 4 * 512
        assert cost == pytest.approx(expect, rel=1e-9)


def test_two_scenarios_the_marginal_kw_is_reserved_iff_below_its_expected_idle_cost() -> None:
    """Demand 256 or 768 with probability 1/2 each: a kW up to 256 avoids an idle accelerator
    in both scenarios (worth IDLE a period), one between 256 and 768 only in the second
    (worth IDLE / 2 in expectation)."""
    base = one_site([0, 0], scenarios=[[256.0] * 3, [768.0] * 3], price=0)
    for price, want in ((0.4 * IDLE, 768.0), (0.6 * IDLE, 256.0), (1.2 * IDLE, 0.0)):
        r, _ = plan(reserved(base, price=price))
        assert r == pytest.approx(want, abs=1e-6), price
    # on the threshold itself both are optimal: the objective is flat in between
    r_lo, c_lo = plan(reserved(base, price=0.5 * IDLE - 1))
    r_hi, c_hi = plan(reserved(base, price=0.5 * IDLE + 1))
    assert (r_lo, r_hi) == (pytest.approx(768.0), pytest.approx(256.0))
    # the cost is continuous in the price: 2 cents a kW-period apart, 768 kW over 3 periods
    assert abs(c_hi - c_lo) <= 2 * 3 * 768 + 1e-6


def test_unreserved_capacity_later_and_dearer_against_reserving_now() -> None:
    """Per kW over 4 periods: reserving now costs 4 p; asking unreserved in period 1 (lead 1)
    gets it from period 2 at 2 q, with the two idle periods before (2 IDLE); nothing costs
    4 IDLE."""
    base = one_site([512.0] * 4, price=0)
    spot = 0.1 * IDLE
    r, cost = plan(reserved(base, price=0.8 * IDLE, spot_price=spot, spot_lead=1))
    assert r == pytest.approx(0.0)  # 3.2 IDLE now against 2.2 IDLE later
    assert cost == pytest.approx(512 * (2 * spot + 2 * IDLE))
    r, cost = plan(reserved(base, price=0.5 * IDLE, spot_price=spot, spot_lead=1))
    assert r == pytest.approx(512.0)  # 2.0 IDLE now against 2.2 later
    assert cost == pytest.approx(512 * 4 * 0.5 * IDLE)


def test_the_halls_still_bound_what_a_reservation_gives() -> None:
    """Only 300 kW of hall: reserving more buys nothing, so the plan reserves 300."""
    r, cost = plan(reserved(one_site([512.0] * 3, price=0, power=300.0), price=0.5 * IDLE))
    assert r == pytest.approx(300.0)
    assert cost == pytest.approx(300 * 3 * 0.5 * IDLE + 212 * 3 * IDLE)


def deterministic(
    wanted: list[float], power: float, held: float, p: float, lead: int, q: float, spot: int
) -> float:
    """One site, one scenario, parts free, written independently and solved with scipy:
    variables r (reserved now), u_1..u_{T-1} (asked unreserved) and x_0..x_{T-1} (running)."""
    T = len(wanted)
    c = np.concatenate(
        [
            [p * max(0, T - lead)],
            [
                q * (T - t - spot) if spot >= 0 and t >= 1 and t + spot < T else 0.0
                for t in range(T)
            ],
            np.full(T, -float(IDLE)),
        ]
    )
    a_ub, b_ub = [], []
    for t in range(T):
        asked = [1.0 if spot >= 0 and tau >= 1 and tau + spot <= t else 0.0 for tau in range(T)]
        a_ub.append(np.concatenate([[-1.0 if t >= lead else 0.0], -np.array(asked), np.eye(T)[t]]))
        b_ub.append(held)
    usable = [(0, 0)] + [(0, None) if spot >= 0 and t + spot < T else (0, 0) for t in range(1, T)]
    bounds = [(0, None), *usable, *[(0, min(w, power)) for w in wanted]]
    r = linprog(c, A_ub=np.array(a_ub), b_ub=np.array(b_ub), bounds=bounds, method="highs")
    assert r.status == 0
    return float(r.fun + IDLE * sum(wanted))


@settings(max_examples=25, deadline=None)
@given(
    wanted=st.lists(st.floats(0, 1500, allow_nan=False), min_size=2, max_size=5),
    power=st.sampled_from([1e6, 700.0]),
    held=st.sampled_from([0.0, 200.0]),
    p=st.sampled_from([100, 400, 900, 1500]),
    lead=st.integers(0, 2),
    q=st.sampled_from([50, 800, 3000]),
    spot=st.integers(-1, 2),
)
def test_one_scenario_plan_with_reservations_is_the_deterministic_optimum(
    wanted: list[float], power: float, held: float, p: int, lead: int, q: int, spot: int
) -> None:
    lead = min(lead, len(wanted) - 1)
    wanted = list(np.maximum.accumulate(wanted))
    problem = reserved(
        one_site(wanted, price=0, power=power),
        price=p,
        lead=lead,
        held=held,
        spot_price=q,
        spot_lead=spot,
    )
    for weight in (0.0, 0.5):
        model = build(problem, Options(risk_weight=weight))
        s, _ = solve(model)
        det = deterministic(wanted, power, held, p, lead, q, spot)
        assert s.expected_cents == pytest.approx(det, rel=1e-7, abs=1e-3)
        assert s.cvar_cents == pytest.approx(s.expected_cents)


# ---- the menu ---------------------------------------------------------------------------------


def test_the_menu_offers_the_reservation_with_its_option_value_in_closed_form() -> None:
    """256 accelerators in period 0, then 256 or 768 (1/2 each), lead 0, p = 0.6 IDLE: the plan
    reserves 256 now (the second 512 pays only in one scenario, 0.5 IDLE < 0.6 IDLE). A plan
    that may wait reserves 512 more at period 1 in the high scenario (three periods at 0.6
    IDLE instead of idling at IDLE): the option value is 1/2 * 512 * 3 * 0.4 IDLE."""
    base = one_site([0, 0], scenarios=[[256.0] * 4, [256.0, 768.0, 768.0, 768.0]], price=0)
    problem = reserved(base, price=0.6 * IDLE)
    menu = solve_menu(problem, risk_weight=0.0, max_decisions=8)
    moves = {m.name: m for m in menu.moves}
    take = moves["reserve 256.0 kW at hall now"]
    assert take.kind == "reserve" and take.in_plan and take.part == "kW"
    assert take.quantity == pytest.approx(256.0)
    assert take.option_value_cents == round(0.5 * 512 * 3 * 0.4 * IDLE)
    alt = moves["defer reserving kW at hall"]
    assert alt.kind == "defer" and not alt.in_plan
    # without it, 256 idle in both scenarios for 4 periods; with it 256 * 4 * 0.6 IDLE paid
    assert take.saving_cents == round(256 * 4 * 0.4 * IDLE)
    assert alt.saving_cents == -take.saving_cents
    text = " ".join(take.reasons)
    assert "available from P0" in text and "no unreserved kWs" in text
    # cost ranging: at least the price, at most the true break-even (the idle cost, 1 kW an
    # accelerator: $10 a kW-period); a degenerate basis may state less than the true range
    m = re.search(r"holds at least up to \$([0-9.,]+) a kW-period", text)
    assert m is not None
    assert 6.0 <= float(m.group(1).replace(",", "")) <= 10.0
    assert menu.formulation["first_stage"]["reservations"] == 2


def test_a_reservation_not_taken_is_priced_as_a_deferral() -> None:
    """Unreserved capacity cheap and quick: nothing is reserved, the menu prices reserving now
    the expected period-1 ask against deferring."""
    base = one_site([512.0] * 4, price=0)
    problem = reserved(base, price=0.9 * IDLE, spot_price=0.1 * IDLE, spot_lead=0)
    menu = solve_menu(problem, risk_weight=0.0)
    moves = {m.name: m for m in menu.moves}
    defer = moves["defer reserving kW at hall"]
    assert defer.in_plan and defer.saving_cents >= 0
    assert not moves["reserve 512.0 kW at hall now"].in_plan
    assert all(m.option_value_cents >= 0 for m in menu.moves)


# ---- integer orders ---------------------------------------------------------------------------


def test_integer_orders_are_whole_lots_and_cost_at_least_the_relaxation() -> None:
    """100 accelerators in both periods, lead 1, a leaf per 32: the relaxation orders 3.125
    leaves now; whole units order 4, whole lots of 5 order 5 (idle beats nothing here)."""
    base = one_site([100.0, 100.0, 100.0], lead=1, price=100)
    cont = build(base, Options(risk_weight=0.0))
    s0, _ = solve(cont)
    assert s0.values[cont.buy[0, 0]] == pytest.approx(3.125)
    whole = build(base, Options(risk_weight=0.0, integer_orders=True))
    s1, _ = solve(whole)
    assert s1.values[whole.buy[0, 0]] == pytest.approx(4.0)
    assert whole.integers == 1
    lots = dataclasses.replace(
        base, costs=dataclasses.replace(base.costs, lot=np.array([5], dtype=np.int64))
    )
    m5 = build(lots, Options(risk_weight=0.0, integer_orders=True))
    s5, _ = solve(m5)
    assert s5.values[m5.buy[0, 0]] == pytest.approx(5.0)
    assert s5.values[m5.lots[(0, 0)]] == pytest.approx(1.0)
    assert s0.expected_cents <= s1.expected_cents <= s5.expected_cents


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), lot=st.sampled_from([1, 4]))
def test_integer_orders_are_integral_multiples_of_their_lot(seed: int, lot: int) -> None:
    p = synthetic(seed, n_scenarios=3, n_sites=2, n_periods=3)
    p = dataclasses.replace(
        p, costs=dataclasses.replace(p.costs, lot=np.full(5, lot, dtype=np.int64))
    )
    relaxed, _ = solve(build(p, Options()))
    model = build(p, Options(integer_orders=True))
    s, _ = solve(model)
    buy = s.values[model.buy]
    assert np.allclose(buy / lot, np.round(buy / lot), atol=1e-6)
    assert s.objective_cents >= relaxed.objective_cents - 1e-6 * abs(relaxed.objective_cents)
    assert model.integers == 2 + 10  # one greenfield site's two choices, 2 x 5 orders


# ---- the plan fields --------------------------------------------------------------------------


def _plan_text(reservation: str, lot: str = "") -> str:
    text = example_plan().read_text()
    text = text.replace(
        "  - name: west\n    buildings:",
        f"  - name: west\n    reservation: {reservation}\n    buildings:",
    )
    return text.replace("price_usd: 150, cap: 5000}", f"price_usd: 150, cap: 5000{lot}}}")


def test_a_plans_reservation_and_lots_reach_the_problem() -> None:
    plan = parse_plan(
        _plan_text(
            "{held_kw: 500, kw_usd_per_quarter: 45.5, position_usd_per_quarter: 300, "
            "lead_quarters: 1, unreserved: {kw_usd_per_quarter: 70, "
            "position_usd_per_quarter: 500, lead_quarters: 2}}",
            ", lot: 24",
        )
    )
    r = build_reservations(plan)
    assert r is not None
    assert r.active.tolist() == [False, True]
    assert r.held_kw.tolist() == [0.0, 500.0]
    assert r.kw_price.tolist() == [0, 4550] and r.position_price.tolist() == [0, 30000]
    assert r.lead.tolist() == [0, 1] and r.spot_lead.tolist() == [-1, 2]
    assert r.spot_kw_price.tolist() == [0, 7000]
    assert build_costs(plan).lot is not None
    assert build_costs(plan).lot.tolist() == [1, 1, 1, 1, 1, 1, 24]  # type: ignore[union-attr]
    assert build_reservations(parse_plan(example_plan().read_text())) is None


@pytest.mark.parametrize(
    "reservation, where",
    [
        (
            "{kw_usd_per_quarter: 10, position_usd_per_quarter: 1, lead_quarters: 8}",
            "sites[1].reservation.lead_quarters",
        ),
        (
            "{kw_usd_per_quarter: -1, position_usd_per_quarter: 1}",
            "sites[1].reservation.kw_usd_per_quarter",
        ),
        ("{kw_usd_per_quarter: 10}", "sites[1].reservation.position_usd_per_quarter"),
        (
            "{kw_usd_per_quarter: 10, position_usd_per_quarter: 1, kva_usd_per_quarter: 3}",
            "sites[1].reservation.kva_usd_per_quarter",
        ),
        (
            "{kw_usd_per_quarter: 10, position_usd_per_quarter: 1, unreserved: "
            "{kw_usd_per_quarter: 1, position_usd_per_quarter: 1, lead_quarters: 9}}",
            "sites[1].reservation.unreserved.lead_quarters",
        ),
    ],
)
def test_bad_reservations_name_the_field(reservation: str, where: str) -> None:
    with pytest.raises(SpecError) as exc:
        parse_plan(_plan_text(reservation))
    assert any(p.where == where for p in exc.value.problems), exc.value.problems


def test_a_lot_of_zero_is_refused() -> None:
    with pytest.raises(SpecError) as exc:
        parse_plan(_plan_text("{kw_usd_per_quarter: 1, position_usd_per_quarter: 1}", ", lot: 0"))
    assert any(p.where == "parts[6].supplier.lot" for p in exc.value.problems)


# ---- the colocation example, end to end -------------------------------------------------------


def test_the_colocation_example_reserves_at_west_and_orders_whole_lots(curves: Curves) -> None:
    """``two-sites-colo``: west's power and positions are contracted (300 kW, 8 positions
    held). Its curves are the example's (same sites, choices and parts)."""
    colo = load_plan(example_plan("two-sites-colo"))
    problem = build_problem(colo, curves, sample_scenarios(colo, 8, 0), base=example_plan().parent)
    assert problem.reservations is not None
    assert problem.reservations.active.tolist() == [False, True]
    menu = solve_menu(problem, max_decisions=12)
    assert menu.formulation["first_stage"]["reservations"] == 2
    assert menu.formulation["first_stage"]["integer_orders"] == 14
    kinds = {m.kind for m in menu.moves}
    assert "reserve" in kinds, [m.name for m in menu.moves]
    lots = {p.id: p.supplier.lot for p in colo.parts}
    objective = menu.expected_cost_cents + menu.risk_weight * menu.cvar_cents
    for m in menu.moves:
        assert m.option_value_cents >= 0
        assert m.expected_cost_cents + menu.risk_weight * m.cvar_cents >= objective - 2
        if m.kind in ("order", "pre-build", "pre-pull") and m.part:
            q = m.quantity / lots[m.part]
            assert abs(q - round(q)) < 1e-6, m
        if m.kind == "reserve":
            assert m.site == "west" and m.part in ("kW", "positions")


def test_the_cli_refuses_a_bad_reservation_naming_the_field(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from clusterloom.cli.main import app

    bad = tmp_path / "bad.yaml"
    bad.write_text(
        _plan_text(
            "{kw_usd_per_quarter: 10, position_usd_per_quarter: -3, lead_quarters: 12}",
            ", lot: 0",
        )
    )
    result = CliRunner().invoke(app, ["plan", str(bad), "--no-menu"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    for field in (
        "sites[1].reservation.position_usd_per_quarter",
        "parts[6].supplier.lot",
    ):
        assert field in result.output, result.output


def test_a_recorded_reservation_is_priced_as_made() -> None:
    """Realised cost holds the menu's reservation (and none beyond it): 256 kW reserved for
    demand of 512 over 4 periods leaves 256 idle in periods 1-3 and all 512 in period 0 (no
    switch was ordered now, so none is there before period 1's order lands); hindsight
    orders now and reserves all 512."""
    from clusterloom.capacity.memory import price_first_stage

    problem = reserved(one_site([512.0] * 4, price=0), price=0.5 * IDLE)
    held, free, _ = price_first_stage(
        problem, {"orders": {}, "tiers": {}, "reservations": {"hall": {"kW": 256.0}}}
    )
    assert held == pytest.approx(256 * 4 * 0.5 * IDLE + (512 + 3 * 256) * IDLE)
    assert free == pytest.approx(512 * 4 * 0.5 * IDLE)
    none, _, _ = price_first_stage(problem, {"orders": {}, "tiers": {}})
    assert none == pytest.approx(512 * 4 * IDLE)
