"""The ranked menu of moves (``docs/capacity.md``): the two-stage model solved once for
the plan, then once per move with the move undone (its alternative), once with its decision
forced now and once allowed to wait a period (its option value); each move's reasons read
from the model's duals, slacks and cost ranging.

Ranking: a move's ``saving_cents`` is the objective (expected cost plus the weighted CVaR) of
the best plan without it minus that of the best plan with it; the plan's moves save, their
alternatives cost; best first.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from clusterloom.capacity.model import CapacityProblem
from clusterloom.capacity.moves import MoveKind, part_kind
from clusterloom.capacity.optimise import (
    SCALE,
    FloatArray,
    IntArray,
    Model,
    Options,
    Solved,
    Waiting,
    build,
    cvar,
    evaluate,
    information_groups,
    reduce_scenarios,
    solve,
)

__all__ = ["Menu", "MenuMove", "solve_menu"]

_TOL = 1e-6


@dataclass(frozen=True)
class MenuMove:
    """One move: what, where, how much, and what the model says about it."""

    name: str
    kind: str  #: a ``MoveKind`` value
    site: str
    #: the part ordered; for a reservation what is reserved (``kW``, ``positions``); None for
    #: a tier choice or a landing
    part: str | None
    period: str  #: when it is decided (now)
    quantity: float  #: units ordered, accelerators landed elsewhere, or the tier's limit
    expected_cost_cents: int  #: of the best plan that makes this move
    cvar_cents: int  #: of that plan, at the menu's ``risk_alpha``
    protects: tuple[str, ...]  #: shocks of the scenarios where the move matters most
    option_value_cents: int  #: best plan deciding now minus best plan that may wait
    reasons: tuple[str, ...]
    saving_cents: int  #: objective without the move minus with it (ranking key)
    in_plan: bool  #: the optimal plan makes this move


@dataclass(frozen=True)
class Menu:
    """The plan's moves and their alternatives, ranked best first."""

    moves: tuple[MenuMove, ...]
    expected_cost_cents: int
    cvar_cents: int
    risk_alpha: float
    risk_weight: float
    formulation: dict[str, Any]

    def to_dict(self, *, timings: bool = False) -> dict[str, Any]:
        """JSON-able; byte-identical for the same problem unless ``timings`` adds the
        solver's seconds."""
        form = {k: v for k, v in self.formulation.items() if timings or "seconds" not in k}
        return {
            "expected_cost_cents": self.expected_cost_cents,
            "cvar_cents": self.cvar_cents,
            "risk_alpha": self.risk_alpha,
            "risk_weight": self.risk_weight,
            "formulation": form,
            "moves": [
                {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(m).items()}
                for m in self.moves
            ],
        }


@dataclass(frozen=True)
class _Decision:
    """A first-stage decision of the plan, its value and how to undo or force it."""

    kind: MoveKind
    site: int
    part: int  #: part (order), choice (tier), destination site (land), 0 kW / 1 positions
    value: float
    alternative: dict[int, tuple[float, float]]  #: bounds that make the other move
    weight: float  #: money at stake, for choosing which decisions the menu evaluates
    reserve: bool = False  #: a reservation (``RESERVE``, or ``DEFER`` of one), not an order


def solve_menu(
    problem: CapacityProblem,
    *,
    risk_alpha: float = 0.9,
    risk_weight: float = 0.5,
    integer_recourse: bool = False,
    integer_orders: bool = True,
    max_decisions: int = 8,
    max_scenarios: int | None = 40,
    evaluate_all: bool = False,
    time_limit_s: float = 600.0,
    option_node_limit: int = 50,
) -> Menu:
    """Solve ``problem`` and rank its moves.

    ``max_decisions`` bounds how many of the plan's decisions (largest money at stake first)
    get their alternative and option value solved; each costs three solves of the model.
    With more than ``max_scenarios`` scenarios, the model is solved on that many chosen by
    fast forward selection (``reduce_scenarios``; ``formulation["reduction"]`` says so);
    ``evaluate_all`` then prices the plan's first stage in every given scenario, one LP each,
    and the menu's expected cost and CVaR are those. A tier choice's waiting model (binaries
    per information group) stops after ``option_node_limit`` branch-and-bound nodes (a limit on
    work, so the menu is the same on any machine) with its best plan so far, never worse than
    deciding now: its option value is then a lower bound (its reasons say so).
    ``integer_orders`` makes the orders now whole units (whole lots where the part has one):
    the plan and every re-solve are then MIPs; the duals and cost ranging in the reasons are
    those of the LP with the tiers fixed and the orders relaxed."""
    t0 = time.perf_counter()
    options = Options(
        risk_alpha=risk_alpha,
        risk_weight=risk_weight,
        integer_recourse=integer_recourse,
        integer_orders=integer_orders,
        time_limit_s=time_limit_s,
    )
    given = problem
    reduction: dict[str, Any] = {"scenarios_given": len(problem.scenarios.probability)}
    if max_scenarios is not None and len(problem.scenarios.probability) > max_scenarios:
        problem, _ = reduce_scenarios(problem, max_scenarios)
        reduction["method"] = "fast forward selection"
    reduction["scenarios_solved"] = len(problem.scenarios.probability)
    model = build(problem, options)
    plan, _ = solve(model)
    fixed = {int(c): (v, v) for c, v in _tiers(model, plan.values).items()}
    lp, ranging = solve(model, bounds=fixed, continuous=True, ranging=True)
    groups = information_groups(problem)
    decisions = _decisions(problem, model, plan)[:max_decisions]
    moves: list[MenuMove] = []
    solves = 2
    for d in decisions:
        free = d.site if d.kind is MoveKind.TIER else None
        bounds = {**_held(model, model, plan.values, free), **d.alternative}
        other, _ = solve(
            model, bounds=bounds, continuous=_all_held(options, free), relax=_orders(model)
        )
        if options.integer_orders:
            other = _whole(problem, model, other, bounds)
        now, wait, limited = _option(
            problem, options, model, plan, lp, d, groups, option_node_limit
        )
        solves += 3
        option = max(0.0, now - wait)
        ctx = _Context(problem, model, plan, lp, ranging, other, d, option, limited)
        moves.append(_move(ctx, taken=True))
        moves.append(_move(ctx, taken=False))
    moves.sort(key=lambda m: (-m.saving_cents, m.name))
    expected, tail = plan.expected_cents, plan.cvar_cents
    if evaluate_all and given is not problem:
        losses = evaluate(given, options, model, plan.values)
        prob = given.scenarios.probability
        expected, tail = float(prob @ losses), cvar(losses, prob, risk_alpha)
        reduction["solved_expected_cents"] = round(plan.expected_cents)
        reduction["solved_cvar_cents"] = round(plan.cvar_cents)
        reduction["evaluated_on"] = len(prob)
    formulation = _formulation(model, plan, groups, solves, time.perf_counter() - t0)
    formulation["reduction"] = reduction
    return Menu(
        moves=tuple(moves),
        expected_cost_cents=round(expected),
        cvar_cents=round(tail),
        risk_alpha=risk_alpha,
        risk_weight=risk_weight,
        formulation=formulation,
    )


def _orders(model: Model) -> IntArray:
    """The columns of the orders now (and their lots): relaxed in the menu's re-solves."""
    return np.concatenate(
        [model.buy.ravel(), np.array(sorted(model.lots.values()), dtype=np.int64)]
    ).astype(np.int64)


def _whole(
    problem: CapacityProblem,
    model: Model,
    relaxed: Solved,
    bounds: dict[int, tuple[float, float]],
) -> Solved:
    """A re-solve's plan in whole lots: its orders now (solved relaxed) rounded up to whole
    lots (down for a part whose period-0 cap the rounding up would pass), every tier held at
    its choice, the recourse re-optimised. A feasible plan with integer orders, so its cost
    is at least the integer optimum's (the menu's alternatives are upper bounds by at most
    the rounding)."""
    co = problem.costs
    N, P = model.buy.shape
    lot = co.lot if co.lot is not None else np.ones(P, dtype=np.int64)
    v = relaxed.values
    raw = v[model.buy] / lot[None, :]
    up = np.ceil(raw - 1e-6) * lot[None, :]
    down = np.floor(raw + 1e-6) * lot[None, :]
    over = up.sum(axis=0) > co.cap[:, 0] + 1e-6
    q = np.where(over[None, :], down, up)
    fixed = dict(bounds)
    for n in range(N):
        for p in range(P):
            col = int(model.buy[n, p])
            lo, hi = bounds.get(col, (q[n, p], q[n, p]))
            fixed[col] = (lo, hi) if lo == hi else (q[n, p], q[n, p])
            if (n, p) in model.lots:
                k = fixed[col][0] / lot[p]
                fixed[model.lots[(n, p)]] = (k, k)
    for col in model.z.values():
        z = float(round(v[col]))
        fixed[col] = (z, z)
    out, _ = solve(model, bounds=fixed, continuous=not model.options.integer_recourse)
    return out


def _relax(options: Options, model: Model) -> IntArray | None:
    """The orders an option's models relax (none with integer rework: then both models keep
    every integer, the deciding-now one being the plan)."""
    return None if options.integer_recourse else _orders(model)


def _tiers(model: Model, values: FloatArray) -> dict[int, float]:
    """The tier binaries at their (rounded) values (the LP for duals fixes these; the orders,
    integer or not, are relaxed there)."""
    return {int(c): float(round(values[c])) for c in sorted(model.z.values())}


def _decisions(problem: CapacityProblem, model: Model, plan: Solved) -> list[_Decision]:
    """The plan's first-stage decisions, largest money at stake first."""
    co = problem.costs
    v = plan.values
    out: list[_Decision] = []
    N, P = model.buy.shape
    later = model.order[:, :, :, 1]
    for n in range(N):
        for p in range(P):
            col = int(model.buy[n, p])
            q = float(v[col])
            price = float(co.price[p, 0])
            if q > _TOL:
                out.append(
                    _Decision(
                        part_kind(problem.curves.parts[p]), n, p, q, {col: (0.0, 0.0)}, q * price
                    )
                )
                continue
            nxt = float(model.probability @ v[later[:, n, p]])
            if nxt > _TOL and model.options.integer_orders:
                # ordered now it is whole lots: the expected period-1 order, to the nearest
                # lot (at least one)
                lot = int(co.lot[p]) if co.lot is not None else 1
                nxt = float(max(1, round(nxt / lot)) * lot)
            if nxt > _TOL:
                out.append(_Decision(MoveKind.DEFER, n, p, nxt, {col: (nxt, nxt)}, nxt * price))
    res = problem.reservations
    T = problem.scenarios.demand.shape[2]
    for (n, q), col in sorted(model.reserve.items()):
        assert res is not None
        unit = float((res.kw_price, res.position_price)[q][n]) * max(0, T - int(res.lead[n]))
        r = float(v[col])
        if r > _TOL:
            out.append(_Decision(MoveKind.RESERVE, n, q, r, {col: (0.0, 0.0)}, r * unit, True))
            continue
        spot = model.unreserved[:, n, q, 1]
        asked = float(model.probability @ v[spot]) if (spot >= 0).all() else 0.0
        if asked > _TOL:
            out.append(
                _Decision(MoveKind.DEFER, n, q, asked, {col: (asked, asked)}, asked * unit, True)
            )
    want = np.minimum(problem.scenarios.demand, problem.scenarios.accelerators)
    top = float(want.max()) * float(co.rework_per_accelerator)
    choices_at = np.bincount([n for n, _c in model.z], minlength=N)
    for (n, c), col in sorted(model.z.items()):
        # a site with one choice has no tier to decide (its alternative would be infeasible)
        if v[col] > 0.5 and choices_at[n] > 1:
            out.append(_Decision(MoveKind.TIER, n, c, 1.0, {col: (0.0, 0.0)}, top))
    for (m, n), col in sorted(model.f.items()):
        if v[col] > _TOL:
            landed = float(v[col] * (model.probability @ want[:, m, -1]))
            out.append(
                _Decision(
                    MoveKind.LAND_ELSEWHERE,
                    m,
                    n,
                    landed,
                    {col: (0.0, 0.0)},
                    landed * float(co.idle_per_accelerator_period),
                )
            )
    out.sort(key=lambda d: (-d.weight, d.kind.value, d.site, d.part))
    return out


def _option(
    problem: CapacityProblem,
    options: Options,
    model: Model,
    plan: Solved,
    lp: Solved,
    d: _Decision,
    groups: IntArray,
    option_node_limit: int,
) -> tuple[float, float, bool]:
    """(best plan that must decide now, best plan that may wait a period) for ``d``.

    The plan that may wait can still decide now, so it is never worse: the now-plan is
    feasible in the waiting model by construction (its columns at the same values, the
    waiting ones at zero or equal to the now-decision), and the better of the two is kept."""
    gs = np.asarray(groups, dtype=np.int64)
    # with integer orders both models of an option (deciding now, may wait) are solved with
    # the orders now relaxed, so that their difference is the value of waiting, not of
    # rounding; deciding now is then the plan's LP (its tiers fixed, the orders relaxed)
    relaxed = options.integer_orders and not options.integer_recourse
    now_value = lp.objective_cents if relaxed else plan.objective_cents
    if d.reserve:
        # may wait: more may be reserved at period 1 per group (the deciding-now plan, with
        # those at 0, is feasible there, so the waiting plan is never worse)
        wait_model = build(problem, options, Waiting("reserve", d.site, d.part, gs))
        added = wait_model.lp.num_col_ - model.lp.num_col_
        wait, _ = solve(
            wait_model,
            bounds=_held(wait_model, model, plan.values, None),
            continuous=_all_held(options, None),
            start=np.concatenate([plan.values, np.zeros(added)]),
            relax=_relax(options, wait_model),
        )
        return now_value, min(wait.objective_cents, now_value), False
    if d.kind in (MoveKind.TIER, MoveKind.LAND_ELSEWHERE):
        kind = "tier" if d.kind is MoveKind.TIER else "land"
        free = d.site if d.kind is MoveKind.TIER else None
        wait_model = build(problem, options, Waiting(kind, d.site, d.part, gs))  # type: ignore[arg-type]
        # the plan in the waiting model's columns: the waiting ones (inserted after the
        # site's choices, or after the shares) at zero
        added = wait_model.lp.num_col_ - model.lp.num_col_
        after = (
            max(model.z[(d.site, c)] for c in range(len(problem.curves.choices)))
            if d.kind is MoveKind.TIER
            else max(model.f.values())
        ) + 1
        start = np.concatenate([plan.values[:after], np.zeros(added), plan.values[after:]])
        wait, _ = solve(
            wait_model,
            bounds=_held(wait_model, model, plan.values, free),
            continuous=_all_held(options, free),
            start=start,
            node_limit=option_node_limit,
            relax=_relax(options, wait_model),
        )
        limited = wait.status != "Optimal"
        return now_value, min(wait.objective_cents, now_value), limited
    one = np.zeros_like(gs)
    now_model = build(problem, options, Waiting("order", d.site, d.part, one))
    held = _held(now_model, model, plan.values, None)
    now, _ = solve(
        now_model,
        bounds=held,
        continuous=_all_held(options, None),
        relax=_relax(options, now_model),
    )
    wait_model = build(problem, options, Waiting("order", d.site, d.part, gs))
    n_groups = int(gs.max()) + 1
    start = np.concatenate([now.values[:-1], np.repeat(now.values[-1:], n_groups)])
    wait, _ = solve(
        wait_model,
        bounds=_held(wait_model, model, plan.values, None),
        continuous=_all_held(options, None),
        start=start,
        relax=_relax(options, wait_model),
    )
    return now.objective_cents, min(wait.objective_cents, now.objective_cents), False


def _held(
    model: Model, plan_model: Model, values: FloatArray, free: int | None
) -> dict[int, tuple[float, float]]:
    """Bounds holding every site's tier choice but ``free``'s at the plan's (the menu's
    re-solves vary one decision at a time)."""
    out: dict[int, tuple[float, float]] = {}
    for (n, c), col in model.z.items():
        if n != free:
            v = float(round(values[plan_model.z[(n, c)]]))
            out[col] = (v, v)
    return out


def _all_held(options: Options, free: int | None) -> bool:
    """Whether a re-solve has no integer left free (then it is solved as an LP)."""
    return free is None and not options.integer_recourse


@dataclass(frozen=True, eq=False)
class _Context:
    problem: CapacityProblem
    model: Model
    plan: Solved
    lp: Solved  #: the plan's LP with its integers fixed: duals
    ranging: object | None
    other: Solved  #: the best plan with the decision undone
    decision: _Decision
    option: float
    option_is_bound: bool  #: the waiting model stopped at its node limit


def _move(ctx: _Context, *, taken: bool) -> MenuMove:
    d, pr = ctx.decision, ctx.problem
    with_, without = (ctx.plan, ctx.other) if taken else (ctx.other, ctx.plan)
    kind, name, quantity, part = _label(ctx, taken)
    delta = without.scenario_cents - with_.scenario_cents
    saving = without.objective_cents - with_.objective_cents
    reasons = [
        f"best plan with it: expected {_money(with_.expected_cents)}, CVaR "
        f"{_money(with_.cvar_cents)}; without it the objective is "
        f"{'higher' if saving >= 0 else 'lower'} by {_money(abs(saving))}",
        *_probability_reason(delta, ctx.model.probability),
        *_binding(ctx),
    ]
    if taken:
        reasons.extend(_break_even(ctx))
    reasons.append(
        f"option value {_money(ctx.option)}: "
        + (
            "waiting a period to decide on what it reveals is worth that much"
            if ctx.option > 0.5
            else "waiting a period to decide buys nothing"
        )
        + (
            " (at least: the waiting model stopped at its node limit)"
            if ctx.option_is_bound
            else ""
        )
    )
    return MenuMove(
        name=name,
        kind=kind.value,
        site=pr.curves.sites[d.site],
        part=part,
        period=pr.scenarios.periods[0],
        quantity=round(quantity, 3),
        expected_cost_cents=round(with_.expected_cents),
        cvar_cents=round(with_.cvar_cents),
        protects=_protects(pr, delta),
        option_value_cents=round(ctx.option),
        reasons=tuple(reasons),
        saving_cents=round(saving),
        in_plan=taken,
    )


def _label(ctx: _Context, taken: bool) -> tuple[MoveKind, str, float, str | None]:
    d, pr = ctx.decision, ctx.problem
    site = pr.curves.sites[d.site]
    if d.kind is MoveKind.TIER:
        c = d.part if taken else _other_choice(ctx)
        limit = float(pr.curves.max_accelerators[d.site, c])
        return MoveKind.TIER, f"build {site} as {pr.curves.choices[c]}", limit, None
    if d.reserve:
        unit = ("kW", "positions")[d.part]
        if (d.kind is MoveKind.RESERVE) == taken:
            return MoveKind.RESERVE, f"reserve {d.value:.1f} {unit} at {site} now", d.value, unit
        return MoveKind.DEFER, f"defer reserving {unit} at {site}", 0.0, unit
    if d.kind is MoveKind.LAND_ELSEWHERE:
        to = pr.curves.sites[d.part]
        if taken:
            return MoveKind.LAND_ELSEWHERE, f"land {site}'s demand at {to}", d.value, None
        return MoveKind.DEFER, f"keep {site}'s demand at {site} (not at {to})", 0.0, None
    part = pr.curves.parts[d.part]
    order_kind = part_kind(part)
    if d.kind is MoveKind.DEFER:
        if taken:
            return MoveKind.DEFER, f"defer ordering {part} for {site}", 0.0, part
        return order_kind, f"order {d.value:.1f} {part} for {site} now", d.value, part
    if taken:
        return order_kind, f"order {d.value:.1f} {part} for {site} now", d.value, part
    return MoveKind.DEFER, f"defer ordering {part} for {site}", 0.0, part


def _other_choice(ctx: _Context) -> int:
    m, v = ctx.model, ctx.other.values
    site = ctx.decision.site
    return next(c for (n, c), col in sorted(m.z.items()) if n == site and v[col] > 0.5)


def _protects(problem: CapacityProblem, delta: FloatArray, top: int = 3) -> tuple[str, ...]:
    """The shocks of the (at most ``top``) scenarios where the move saves most."""
    order = np.lexsort((np.arange(len(delta)), -delta))
    out: list[str] = []
    for s in order[:top]:
        if delta[s] <= 0.5:
            break
        for shock in problem.scenarios.shocks[s] or ("no shock",):
            if shock not in out:
                out.append(shock)
    return tuple(out)


def _probability_reason(delta: FloatArray, prob: FloatArray) -> list[str]:
    """The probability of the scenarios where the move pays below which, with both plans
    held as they are, it would stop paying in expectation."""
    gain = delta > 0.5
    if not gain.any():
        return ["it pays in no scenario; it is there for its alternative to be priced"]
    pos = float(prob[gain] @ delta[gain])
    neg = float(prob[~gain] @ delta[~gain])
    q = float(prob[gain].sum())
    if neg >= 0.0:
        return [f"it pays or breaks even in every scenario (pays in {q:.0%} of the mass)"]
    k = -neg / pos
    if k >= 1.0:
        return [
            f"it pays in {q:.0%} of the probability mass but loses more elsewhere; it would "
            f"pay if those scenarios were {k:.2f} times as likely (both plans held)"
        ]
    return [
        f"it pays in {q:.0%} of the probability mass; it stops paying in expectation if "
        f"those scenarios fell below {k * q:.1%} (both plans held)"
    ]


def _binding(ctx: _Context) -> list[str]:
    """Constraints of the plan's LP (its integers fixed) that bind at the move's site and
    part, with their expected shadow prices."""
    m, lp, d, pr = ctx.model, ctx.lp, ctx.decision, ctx.problem
    if lp.row_duals.size == 0:
        return []
    S, _, T = pr.scenarios.demand.shape
    duals = lp.row_duals * SCALE
    out: list[str] = []
    site = d.site if d.kind is not MoveKind.LAND_ELSEWHERE else d.part
    periods = pr.scenarios.periods
    if d.reserve:
        out.extend(_reservation_terms(pr, d))
    elif d.kind in (MoveKind.DEFER, MoveKind.ORDER, MoveKind.PRE_BUILD, MoveKind.PRE_PULL):
        p = d.part
        part = pr.curves.parts[p]
        dual = np.abs(duals[m.rows[f"parts_{site}_{p}"]])
        hits = np.flatnonzero((dual > 1e-3).any(axis=0))
        if hits.size:
            t = int(hits[0])
            n_s = int((dual[:, t] > 1e-3).sum())
            out.append(
                f"{part} at {pr.curves.sites[site]} is short by {periods[t]} in {n_s} of {S} "
                f"scenarios: a unit more then is worth {_money(float(dual[:, t].sum()))} in "
                "expectation"
            )
        lead = pr.scenarios.lead_time[:, p]
        out.append(
            f"lead time of {part}: {int(lead.min())} to {int(lead.max())} periods (mean "
            f"{float(pr.scenarios.probability @ lead):.2f}); ordered now it lands by "
            f"{periods[min(int(lead.min()), T - 1)]}"
        )
        cap_now = float(abs(duals[m.rows["cap_now"][p]]))
        if cap_now > 1e-3:
            out.append(
                f"the {periods[0]} allocation cap of {part} binds ({_money(cap_now)} a unit)"
            )
        cap_later = np.abs(duals[m.rows["cap"][:, p, :]]) > 1e-3
        if cap_later.any():
            out.append(
                f"later allocation caps of {part} bind in {int(cap_later.any(axis=1).sum())} of "
                f"{S} scenarios"
            )
    for name in ("power", "positions"):
        for row, what in (
            (f"{name}_{site}", name),
            (f"contract_{name}_{site}", f"contracted {name}"),
        ):
            if row not in m.rows:
                continue
            hit = np.abs(duals[m.rows[row]]) > 1e-3
            if hit.any():
                out.append(
                    f"{what} at {pr.curves.sites[site]} binds in {int(hit.any(axis=1).sum())} "
                    f"of {S} scenarios (first in "
                    f"{periods[int(np.flatnonzero(hit.any(axis=0))[0])]})"
                )
    if d.kind is MoveKind.TIER:
        reworked = [
            int((ctx.other.values[m.rework[:, k]] > _TOL).sum())
            for k, (n, _) in enumerate(m.sites_choices)
            if n == d.site and m.rework[0, k] >= 0
        ]
        if reworked and max(reworked) > 0:
            out.append(
                f"without it {max(reworked)} of {S} scenarios outgrow the other choice's "
                "limit and pay rework"
            )
    gap = max(m.envelope_gap.values())
    if gap > 1e-9:
        out.append(f"curves enter as convex envelopes, up to {gap:.2f} units under the stages'")
    return out


def _reservation_terms(pr: CapacityProblem, d: _Decision) -> list[str]:
    """What a reservation at the decision's site costs and when it is available, beside what
    asking later unreserved would."""
    res = pr.reservations
    assert res is not None
    n, q = d.site, d.part
    periods = pr.scenarios.periods
    T = len(periods)
    unit = ("kW", "position")[q]
    price = float((res.kw_price, res.position_price)[q][n])
    held = float((res.held_kw, res.held_positions)[q][n])
    lead = int(res.lead[n])
    out = [
        f"held now {held:,.0f} {unit}s; reserved now it is available from "
        f"{periods[min(lead, T - 1)]} at {_money(price)} a {unit}-period, paid for "
        f"{max(0, T - lead)} periods used or not"
    ]
    if res.spot_lead[n] < 0:
        out.append(f"no unreserved {unit}s can be had later at {pr.curves.sites[n]}")
    else:
        spot = float((res.spot_kw_price, res.spot_position_price)[q][n])
        out.append(
            f"unreserved {unit}s asked for later arrive {int(res.spot_lead[n])} periods after "
            f"the ask at {_money(spot)} a {unit}-period"
        )
    return out


def _break_even(ctx: _Context) -> list[str]:
    """The unit price at which ordering (or reserving) now would change (cost ranging of the
    LP)."""
    d, rng = ctx.decision, ctx.ranging
    if d.reserve:
        return _reserve_break_even(ctx)
    if rng is None or d.kind not in (
        MoveKind.ORDER,
        MoveKind.PRE_BUILD,
        MoveKind.PRE_PULL,
        MoveKind.DEFER,
    ):
        return []
    col = int(ctx.model.buy[d.site, d.part])
    price = float(ctx.problem.costs.price[d.part, 0])
    if d.kind is MoveKind.DEFER:
        dn = float(rng.col_cost_dn.value_[col]) * SCALE  # type: ignore[attr-defined]
        if np.isfinite(dn) and dn > 0:
            return [
                f"ordering now would start to pay below {_money(dn)} a unit (now {_money(price)})"
            ]
        return ["no price of the part alone makes ordering now pay"]
    up = float(rng.col_cost_up.value_[col]) * SCALE  # type: ignore[attr-defined]
    if np.isfinite(up) and up < 1e15:
        return [f"the quantity ordered now holds up to {_money(up)} a unit (now {_money(price)})"]
    return ["the quantity ordered now holds at any higher price"]


def _reserve_break_even(ctx: _Context) -> list[str]:
    d, rng, pr = ctx.decision, ctx.ranging, ctx.problem
    res = pr.reservations
    if rng is None or res is None:
        return []
    col = ctx.model.reserve[(d.site, d.part)]
    periods = max(1, len(pr.scenarios.periods) - int(res.lead[d.site]))
    unit = ("kW", "position")[d.part]
    price = float((res.kw_price, res.position_price)[d.part][d.site])
    if d.kind is MoveKind.DEFER:
        dn = float(rng.col_cost_dn.value_[col]) * SCALE / periods  # type: ignore[attr-defined]
        if np.isfinite(dn) and dn > 0:
            return [
                f"reserving now would start to pay below {_money(dn)} a {unit}-period "
                f"(now {_money(price)})"
            ]
        return [f"no price of a reserved {unit} alone makes reserving now pay"]
    up = float(rng.col_cost_up.value_[col]) * SCALE / periods  # type: ignore[attr-defined]
    if np.isfinite(up) and up < 1e15:
        return [
            f"the amount reserved now holds at least up to {_money(up)} a {unit}-period "
            f"(now {_money(price)}; cost ranging of the LP's basis, which at a degenerate "
            "vertex understates the range)"
        ]
    return ["the amount reserved now holds at any higher price"]


def _money(cents: float) -> str:
    return f"${cents / 100:,.0f}"


def _formulation(
    model: Model, plan: Solved, groups: IntArray, solves: int, seconds: float
) -> dict[str, Any]:
    lp = model.lp
    return {
        "variables": int(lp.num_col_),
        "constraints": int(lp.num_row_),
        "nonzeros": len(lp.a_matrix_.value_),
        "integer_variables": model.integers,
        "first_stage": {
            "orders": int(model.buy.size),
            "tier_binaries": len(model.z),
            "landing_shares": len(model.f),
            "reservations": len(model.reserve),
            "integer_orders": int(
                sum(
                    1
                    for c in [*model.buy.ravel(), *model.lots.values()]
                    if model.integers and int(model.lp.integrality_[int(c)]) != 0
                )
            ),
        },
        "scenarios": len(model.constant_cents),
        "information_groups_period_1": int(np.max(groups)) + 1,
        "status": plan.status,
        "mip_gap": plan.mip_gap,
        "objective_cents": round(plan.objective_cents),
        "envelope_gap_units": {k: round(v, 6) for k, v in sorted(model.envelope_gap.items())},
        "solves": solves,
        "plan_seconds": round(plan.seconds, 3),
        "menu_seconds": round(seconds, 3),
    }
