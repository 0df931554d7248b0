"""The two-stage stochastic model of capacity moves (``docs/capacity.md``), built as
arrays and solved with HiGHS (``highspy``).

Stage one is what is decided now, in period 0, the same in every scenario: orders
``buy[n, p]``, the fabric choice ``z[n, c]`` of each greenfield site (binary) and the share
``f[m, n]`` of site m's demand landed at site n. Stage two, the recourse, is decided per
scenario from period 1 on, once the scenario is known (the two-stage assumption: what a
period reveals is treated as revealed at once; ``Waiting`` narrows that for one decision):
later orders ``ord`` (arriving after the scenario's lead time, within each period's cap),
expedited orders ``exp`` (arriving the next period), accelerators running ``x`` per choice,
units delivered ``D``, stock carried ``h`` and rework ``r``. The objective is the expected
cost plus ``risk_weight`` times the CVaR at ``risk_alpha`` (Rockafellar and Uryasev).

Curves enter through their lower convex envelope (``envelope``): exact where the stages'
curve is convex, an under-estimate by at most ``Model.envelope_gap`` units elsewhere.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Literal

import highspy
import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from clusterloom.capacity.model import CapacityProblem, Scenarios
from clusterloom.errors import Problem, SpecError

__all__ = [
    "Model",
    "Options",
    "Solved",
    "Waiting",
    "build",
    "cvar",
    "envelope",
    "evaluate",
    "first_stage",
    "information_groups",
    "one_scenario",
    "reduce_scenarios",
    "solve",
]

#: cents per unit of the solver's objective (keeps HiGHS's coefficients near 1)
SCALE = 1e6
_INF = highspy.kHighsInf

IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Options:
    """How the model is built and solved."""

    risk_alpha: float = 0.9
    #: weight of the CVaR next to the expected cost in the objective
    risk_weight: float = 0.5
    #: rework as a binary per scenario and site (else its LP relaxation, a lower bound)
    integer_recourse: bool = False
    #: orders now in whole units (whole lots where ``Costs.lot`` gives one), integer columns
    integer_orders: bool = False
    mip_rel_gap: float = 1e-6
    time_limit_s: float = 600.0


@dataclass(frozen=True, eq=False)
class Waiting:
    """One decision that may wait a period and be taken per group of scenarios that share
    what is revealed by then (``groups[s]``: the group of scenario ``s``).

    ``order``: the period-1 order of part ``target`` at ``site`` is the same within a group
    (one group: decided now). ``tier``: the choice of ``site`` is taken now or at period 1 per
    group (nothing is built there in period 0 if it waits). ``land``: the share of ``site``'s
    demand landed at ``target`` is set now or from period 1 per group. ``reserve``: more of
    ``site``'s power (``target`` 0) or positions (1) may be reserved at period 1 per group, at
    the reservation's price and lead from then, beside what is reserved now."""

    kind: Literal["order", "tier", "land", "reserve"]
    site: int
    target: int
    groups: IntArray


@dataclass(frozen=True, eq=False)
class Model:
    """The built LP/MIP: HiGHS's model and the index of every variable family."""

    lp: highspy.HighsLp
    options: Options
    buy: IntArray  #: [N, P]
    z: dict[tuple[int, int], int]  #: (site, choice) -> column, greenfield sites
    z_wait: dict[tuple[int, int, int], int]  #: (group, site, choice), a waiting tier
    f: dict[tuple[int, int], int]  #: (from, to) -> column
    f_wait: dict[tuple[int, int], int]  #: (group, from) -> column, a waiting share
    sites_choices: tuple[tuple[int, int], ...]  #: K pairs (site, choice) a site may use
    x: IntArray  #: [S, K, T]
    order: IntArray  #: [S, N, P, T] (period 0: -1, it is ``buy``)
    expedite: IntArray  #: [S, N, P, T] (-1 where it cannot help)
    delivered: IntArray  #: [S, N, P, T]
    carried: IntArray  #: [S, N, P, T]
    rework: IntArray  #: [S, K] (-1 where the choice never needs it)
    #: [C] column per scenario of its cost, or -1 for first stage, -2 for the risk columns
    scenario_of: IntArray
    cost_cents: FloatArray  #: [columns] cents a unit of each column costs in its scenario
    constant_cents: FloatArray  #: [S] cost that no decision changes (idle if nothing ran)
    probability: FloatArray  #: [S]
    rows: dict[str, IntArray]  #: row families by name, shaped by their index
    integers: int
    #: largest amount by which a convex envelope under-states its curve, per curve kind
    envelope_gap: dict[str, float]
    #: (site, 0 kW / 1 positions) -> column reserved now, sites with a reservation
    reserve: dict[tuple[int, int], int] = field(default_factory=dict)
    #: [S, N, 2, T] unreserved kW / positions asked for in period t (-1 where none)
    unreserved: IntArray = field(default_factory=lambda: np.empty((0, 0, 2, 0), dtype=np.int64))
    #: (site, part) -> integer column of lots ordered now, where a part's lot is above 1
    lots: dict[tuple[int, int], int] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Solved:
    """A solve: status, values, each scenario's cost."""

    status: str
    objective_cents: float
    values: FloatArray
    scenario_cents: FloatArray  #: [S] the cost of the plan in each scenario
    expected_cents: float
    cvar_cents: float
    row_values: FloatArray
    row_duals: FloatArray  #: empty for a MIP
    mip_gap: float
    seconds: float
    #: the solver's own objective (its CVaR through eta and u), cents
    solver_objective_cents: float


def cvar(losses: FloatArray, probability: FloatArray, alpha: float) -> float:
    """The conditional value at risk: the expected loss in the worst ``1 - alpha`` of the
    probability mass (a scenario on the boundary counted by the part of it inside)."""
    order = np.lexsort((np.arange(len(losses)), -losses))
    tail = 1.0 - alpha
    if tail <= 0.0:
        return float(losses.max())
    taken, total = 0.0, 0.0
    for i in order:
        w = min(float(probability[i]), tail - taken)
        if w <= 0.0:
            break
        total += w * float(losses[i])
        taken += w
    return total / taken


def envelope(x: FloatArray, y: FloatArray) -> tuple[FloatArray, FloatArray, float]:
    """The lower convex envelope of the points ``(x, y)`` (``x`` ascending) as lines
    ``a + b * x`` whose maximum it is, and the largest amount it lies under a point."""
    hull: list[int] = []
    for i in range(len(x)):
        while len(hull) >= 2:
            i0, i1 = hull[-2], hull[-1]
            cross = (x[i1] - x[i0]) * (y[i] - y[i0]) - (y[i1] - y[i0]) * (x[i] - x[i0])
            if cross <= 0.0:
                hull.pop()
            else:
                break
        hull.append(i)
    if len(hull) == 1:
        return np.array([y[hull[0]]]), np.array([0.0]), 0.0
    h = np.array(hull)
    b = np.diff(y[h]) / np.diff(x[h])
    a = y[h[:-1]] - b * x[h[:-1]]
    fitted = np.max(a[:, None] + b[:, None] * x[None, :], axis=0)
    return a, b, float(np.max(y - fitted, initial=0.0))


def _curve_points(
    sizes: FloatArray, values: FloatArray, upto: float
) -> tuple[FloatArray, FloatArray]:
    """The stages' points, with one more on the last segment's extension at ``upto`` (as
    ``Curves.parts_at`` extrapolates)."""
    if upto <= sizes[-1] or len(sizes) < 2:
        return sizes, values
    slope = (values[-1] - values[-2]) / (sizes[-1] - sizes[-2])
    return np.append(sizes, upto), np.append(values, values[-1] + slope * (upto - sizes[-1]))


def _interp(sizes: FloatArray, values: FloatArray, at: FloatArray) -> FloatArray:
    """The curve at ``at`` as ``Curves.parts_at`` reads it (extrapolated on the last
    segment)."""
    out = np.interp(at, sizes, values)
    if len(sizes) >= 2:
        slope = (values[-1] - values[-2]) / (sizes[-1] - sizes[-2])
        beyond = at > sizes[-1]
        out = np.where(beyond, values[-1] + slope * (at - sizes[-1]), out)
    return np.asarray(out, dtype=np.float64)


def information_groups(problem: CapacityProblem, period: int = 1) -> IntArray:
    """Scenarios that share what is revealed by the end of ``period`` (demand, power,
    positions and deliveries so far, lead times of orders placed) get one group id, numbered
    in the order of their first scenario."""
    sc = problem.scenarios
    cut = period + 1
    keys: dict[bytes, int] = {}
    out = np.empty(len(sc.probability), dtype=np.int64)
    for s in range(len(sc.probability)):
        key = b"".join(
            np.ascontiguousarray(a).tobytes()
            for a in (
                sc.demand[s, :, :cut],
                sc.power_kw[s, :, :cut],
                sc.positions[s, :, :cut],
                sc.accelerators[s, :, :cut],
                sc.lead_time[s],
            )
        )
        out[s] = keys.setdefault(key, len(keys))
    return out


class _Lp:
    """Columns, rows and coefficients gathered as arrays, then one sparse matrix."""

    def __init__(self) -> None:
        self.n_col = 0
        self.n_row = 0
        self._cols: list[tuple[FloatArray, FloatArray, FloatArray, NDArray[np.bool_], IntArray]]
        self._cols = []
        self._rows: list[tuple[FloatArray, FloatArray]] = []
        self._coef: list[tuple[IntArray, IntArray, FloatArray]] = []

    def cols(
        self,
        shape: tuple[int, ...],
        cost: float | FloatArray,
        lb: float | FloatArray = 0.0,
        ub: float | FloatArray = _INF,
        integer: bool | NDArray[np.bool_] = False,
        scenario: int | IntArray = -1,
    ) -> IntArray:
        n = int(np.prod(shape))
        idx = np.arange(self.n_col, self.n_col + n, dtype=np.int64).reshape(shape)
        self.n_col += n

        def flat(v: float | FloatArray) -> FloatArray:
            return np.broadcast_to(np.asarray(v, dtype=np.float64), shape).ravel().copy()

        scen = np.broadcast_to(np.asarray(scenario, dtype=np.int64), shape).ravel().copy()
        integ = np.broadcast_to(np.asarray(integer, dtype=np.bool_), shape).ravel().copy()
        self._cols.append((flat(cost), flat(lb), flat(ub), integ, scen))
        return idx

    def rows(
        self, shape: tuple[int, ...], lo: float | FloatArray, hi: float | FloatArray
    ) -> IntArray:
        n = int(np.prod(shape))
        idx = np.arange(self.n_row, self.n_row + n, dtype=np.int64).reshape(shape)
        self.n_row += n
        lo_a = np.broadcast_to(np.asarray(lo, dtype=np.float64), shape).ravel().copy()
        hi_a = np.broadcast_to(np.asarray(hi, dtype=np.float64), shape).ravel().copy()
        self._rows.append((lo_a, hi_a))
        return idx

    def coef(self, rows: IntArray, cols: IntArray, vals: float | FloatArray) -> None:
        r, c, v = np.broadcast_arrays(rows, cols, np.asarray(vals, dtype=np.float64))
        keep = (c >= 0) & (v != 0.0)
        self._coef.append((r[keep].ravel(), c[keep].ravel(), v[keep].ravel()))

    def column_data(self) -> tuple[FloatArray, FloatArray, FloatArray, NDArray[np.bool_], IntArray]:
        parts = list(zip(*self._cols, strict=True))
        cost, lb, ub, integ, scen = (np.concatenate(p) for p in parts)
        return cost, lb, ub, integ.astype(bool), scen.astype(np.int64)

    def finish(self, objective: FloatArray, offset: float) -> highspy.HighsLp:
        _, lb, ub, integ, _ = self.column_data()
        lo = np.concatenate([r[0] for r in self._rows])
        hi = np.concatenate([r[1] for r in self._rows])
        r = np.concatenate([c[0] for c in self._coef])
        c = np.concatenate([c[1] for c in self._coef])
        v = np.concatenate([c[2] for c in self._coef])
        a = sp.csc_matrix((v, (r, c)), shape=(self.n_row, self.n_col))
        a.sum_duplicates()
        a.eliminate_zeros()
        lp = highspy.HighsLp()
        lp.num_col_ = self.n_col
        lp.num_row_ = self.n_row
        lp.col_cost_ = objective
        lp.col_lower_ = lb
        lp.col_upper_ = ub
        lp.row_lower_ = lo
        lp.row_upper_ = hi
        lp.offset_ = offset
        lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
        lp.a_matrix_.start_ = a.indptr.astype(np.int32)
        lp.a_matrix_.index_ = a.indices.astype(np.int32)
        lp.a_matrix_.value_ = a.data
        if integ.any():
            lp.integrality_ = [
                highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                for i in integ
            ]
        return lp


def _check(problem: CapacityProblem, options: Options) -> None:
    sc, cu, co = problem.scenarios, problem.curves, problem.costs
    problems: list[Problem] = []
    S, N, T = sc.demand.shape
    P, C = len(cu.parts), len(cu.choices)
    if not 0.0 <= options.risk_alpha < 1.0:
        problems.append(Problem("risk_alpha", f"{options.risk_alpha} is not in [0, 1)"))
    if options.risk_weight < 0.0:
        problems.append(Problem("risk_weight", "must not be negative"))
    if S == 0 or T == 0 or N == 0:
        problems.append(Problem("scenarios", "needs at least one scenario, site and period"))
    if abs(float(sc.probability.sum()) - 1.0) > 1e-9 or (sc.probability < 0).any():
        problems.append(Problem("scenarios.probability", "must be non-negative and sum to 1"))
    if sc.lead_time.shape != (S, P) or (sc.lead_time < 0).any():
        problems.append(Problem("scenarios.lead_time", f"must be [{S}, {P}] and >= 0"))
    if co.price.shape != (P, T) or co.cap.shape != (P, T):
        problems.append(Problem("costs.price", f"price and cap must be [{P}, {T}]"))
    if cu.units.shape[:2] != (N, C) or cu.sizes[0] != 0:
        problems.append(Problem("curves.units", f"must be [{N}, {C}, K, {P}], sizes from 0"))
    if problem.installed_units.shape != (N, P):
        problems.append(Problem("installed_units", f"must be [{N}, {P}]"))
    bad = [int(n) for n in range(N) if problem.installed_choice[n] >= C]
    if bad:
        problems.append(Problem("installed_choice", f"sites {bad} name no choice"))
    for name, arr in (("demand", sc.demand), ("power_kw", sc.power_kw)):
        if (arr < 0).any():
            problems.append(Problem(f"scenarios.{name}", "must not be negative"))
    if problems:
        raise SpecError(problems)


def build(problem: CapacityProblem, options: Options, waiting: Waiting | None = None) -> Model:
    """The model of ``problem``; with ``waiting``, one decision may wait a period."""
    _check(problem, options)
    sc, cu, co = problem.scenarios, problem.curves, problem.costs
    S, N, T = sc.demand.shape
    P, C = len(cu.parts), len(cu.choices)
    prob = sc.probability
    lead = sc.lead_time
    want = np.minimum(sc.demand, sc.accelerators)  # [S, N, T]
    land = problem.may_land_at & ~np.eye(N, dtype=bool)
    pairs = [(m, n) for m in range(N) for n in range(N) if land[m, n]]
    # [S, N, T] the most that can run at a site: its own wanted accelerators and all that may
    # land there; ``upper`` its largest value, the range the curves must cover
    reach = want + np.einsum("mn,smt->snt", land.astype(np.float64), want)
    upper = np.maximum(1.0, reach.max(axis=(0, 2)))
    sizes = cu.sizes.astype(np.float64)
    lp = _Lp()
    rows: dict[str, IntArray] = {}
    gaps = {"parts": 0.0, "power": 0.0, "positions": 0.0}
    tw = waiting if waiting is not None and waiting.kind == "tier" else None
    lw = waiting if waiting is not None and waiting.kind == "land" else None
    groups = waiting.groups if waiting is not None else np.zeros(S, dtype=np.int64)
    n_groups = int(groups.max()) + 1

    # ---- stage one ------------------------------------------------------------------------
    lot = co.lot if co.lot is not None else np.ones(P, dtype=np.int64)
    whole = options.integer_orders
    buy = lp.cols(
        (N, P),
        cost=co.price[:, 0][None, :].astype(np.float64),
        integer=np.broadcast_to((lot == 1)[None, :] & whole, (N, P)),
    )
    rows["cap_now"] = lp.rows((P,), -_INF, co.cap[:, 0])
    lp.coef(rows["cap_now"][None, :], buy, 1.0)
    lots: dict[tuple[int, int], int] = {}
    big = [p for p in range(P) if whole and lot[p] > 1]
    if big:
        # buy[n, p] = lot[p] * k[n, p], k a whole number of lots
        kc = lp.cols((N, len(big)), 0.0, integer=True)
        kr = lp.rows((N, len(big)), 0.0, 0.0)
        lp.coef(kr, buy[:, big], 1.0)
        lp.coef(kr, kc, -lot[big][None, :].astype(np.float64))
        rows["lots"] = kr
        lots = {(n, p): int(kc[n, j]) for n in range(N) for j, p in enumerate(big)}
    ks = tuple(
        (n, c)
        for n in range(N)
        for c in range(C)
        if problem.installed_choice[n] < 0 or problem.installed_choice[n] == c
    )
    z: dict[tuple[int, int], int] = {}
    z_wait: dict[tuple[int, int, int], int] = {}
    for n in range(N):
        if problem.installed_choice[n] >= 0:
            continue
        cols = lp.cols((C,), 0.0, 0.0, 1.0, integer=True)
        z.update({(n, c): int(cols[c]) for c in range(C)})
        if tw is not None and tw.site == n:
            zw = lp.cols((n_groups, C), 0.0, 0.0, 1.0, integer=True)
            z_wait.update({(g, n, c): int(zw[g, c]) for g in range(n_groups) for c in range(C)})
            r = lp.rows((n_groups,), 1.0, 1.0)
            lp.coef(r[:, None], cols[None, :], 1.0)
            lp.coef(r[:, None], zw, 1.0)
            rows[f"choice_{n}"] = r
        else:
            r = lp.rows((1,), 1.0, 1.0)
            lp.coef(r, cols, 1.0)
            rows[f"choice_{n}"] = r

    def zterms(n: int, c: int) -> list[tuple[IntArray, FloatArray]]:
        """Columns [S, T] (and multipliers) whose sum is 1 where site n runs choice c."""
        if (n, c) not in z:
            return []
        now = np.full((S, T), z[(n, c)], dtype=np.int64)
        terms = [(now, np.ones((S, T)))]
        if tw is not None and tw.site == n:
            later = np.array([z_wait[(g, n, c)] for g in range(n_groups)])[groups]
            mult = np.ones((S, T))
            mult[:, 0] = 0.0
            terms.append((np.broadcast_to(later[:, None], (S, T)).copy(), mult))
        return terms

    f: dict[tuple[int, int], int] = {}
    f_wait: dict[tuple[int, int], int] = {}
    if pairs:
        fc = lp.cols((len(pairs),), 0.0, 0.0, 1.0)
        f = {pair: int(fc[i]) for i, pair in enumerate(pairs)}
        for m in sorted({m for m, _ in pairs}):
            own = [f[p] for p in pairs if p[0] == m]
            if lw is not None and lw.site == m:
                fw = lp.cols((n_groups,), 0.0, 0.0, 1.0)
                f_wait.update({(g, m): int(fw[g]) for g in range(n_groups)})
                r = lp.rows((n_groups,), -_INF, 1.0)
                lp.coef(r[:, None], np.array(own)[None, :], 1.0)
                lp.coef(r, fw, 1.0)
            else:
                r = lp.rows((1,), -_INF, 1.0)
                lp.coef(r, np.array(own), 1.0)
            rows[f"share_{m}"] = r

    # reservations now: kW and positions per site that states one, available from its lead,
    # paid each period from then to the horizon's end
    res = problem.reservations
    reserve: dict[tuple[int, int], int] = {}
    if res is not None:
        for n in range(N):
            if not res.active[n]:
                continue
            periods = max(0, T - int(res.lead[n]))
            room = (
                max(0.0, float(sc.power_kw[:, n, :].max()) - float(res.held_kw[n])),
                max(0.0, float(sc.positions[:, n, :].max()) - float(res.held_positions[n])),
            )
            for q, price_q in enumerate((res.kw_price[n], res.position_price[n])):
                reserve[(n, q)] = int(lp.cols((1,), float(price_q) * periods, 0.0, room[q])[0])

    # ---- stage two ------------------------------------------------------------------------
    scen = np.arange(S, dtype=np.int64)
    K = len(ks)
    k_site = np.array([n for n, _ in ks], dtype=np.int64)
    x = lp.cols(
        (S, K, T),
        cost=-float(co.idle_per_accelerator_period),
        ub=reach[:, k_site, :],
        scenario=scen[:, None, None],
    )
    price = co.price.astype(np.float64)
    order = np.full((S, N, P, T), -1, dtype=np.int64)
    order[:, :, :, 1:] = lp.cols(
        (S, N, P, T - 1), cost=price[None, None, :, 1:], scenario=scen[:, None, None, None]
    )
    exp_ok = (lead[:, None, :, None] > 1) & (np.arange(T)[None, None, None, :] + 1 < T)
    exp_ok = np.broadcast_to(exp_ok, (S, N, P, T)).copy()
    exp_ok[:, :, :, 0] = False
    expedite = np.full((S, N, P, T), -1, dtype=np.int64)
    n_exp = int(exp_ok.sum())
    if n_exp:
        e_cost = (price + co.expedite.astype(np.float64)[:, None])[None, None, :, :]
        e_cost = np.broadcast_to(e_cost, (S, N, P, T))[exp_ok]
        expedite[exp_ok] = lp.cols(
            (n_exp,),
            cost=e_cost,
            scenario=np.broadcast_to(scen[:, None, None, None], (S, N, P, T))[exp_ok],
        )
    delivered = lp.cols((S, N, P, T), cost=0.0, scenario=scen[:, None, None, None])
    carried = lp.cols(
        (S, N, P, T),
        cost=co.carry_fraction * price[None, None, :, :],
        scenario=scen[:, None, None, None],
    )
    limit = cu.max_accelerators.astype(np.float64)
    rework = np.full((S, K), -1, dtype=np.int64)
    for k, (n, c) in enumerate(ks):
        outgrows = reach[:, n, :].max(axis=1) > limit[n, c]  # [S]
        if outgrows.any():
            rework[:, k] = lp.cols(
                (S,),
                cost=float(co.rework_per_accelerator) * limit[n, c],
                ub=outgrows.astype(np.float64),
                integer=options.integer_recourse,
                scenario=scen,
            )
    use_risk = options.risk_weight > 0.0
    eta = lp.cols((1,), cost=0.0, lb=-_INF, scenario=-2) if use_risk else None
    u = lp.cols((S,), cost=0.0, scenario=-2) if use_risk else None

    # link: x <= min(limit, reach) * z + (reach - limit)^+ * r, and r <= z (per scenario and
    # period, so the relaxation of a fractional z is as tight as the data allows)
    link = lp.rows((S, K, T), -_INF, 0.0)
    rows["link"] = link
    lp.coef(link, x, 1.0)
    for k, (n, c) in enumerate(ks):
        lim = np.minimum(limit[n, c], reach[:, n, :])  # [S, T]
        terms = zterms(n, c)
        if terms:
            for cols, mult in terms:
                lp.coef(link[:, k, :], cols, -lim * mult)
        else:
            _set_hi(lp, link[:, k, :], lim)
        if rework[0, k] >= 0:
            excess = np.maximum(reach[:, n, :] - limit[n, c], 0.0)
            lp.coef(link[:, k, :], rework[:, k][:, None], -excess)
            if terms:
                rz = lp.rows((S,), -_INF, 0.0)
                lp.coef(rz, rework[:, k], 1.0)
                for cols, mult in terms:
                    lp.coef(rz, cols[:, -1], -mult[:, -1])

    # parts, power and positions: the sum over a site's choices of each choice's envelope at
    # its x (only the chosen one is not zero); a choice whose envelope has several pieces gets
    # an epigraph column per scenario and period
    def curve_rows(
        name: str,
        n: int,
        values: FloatArray,
        *,
        cols: IntArray | None = None,
        avail: FloatArray | None = None,
    ) -> None:
        """sum_c envelope_c(x_c, z_c) <= the columns ``cols`` [S, T] or the data ``avail``."""
        row = lp.rows((S, T), -_INF, avail if avail is not None else 0.0)
        rows[name] = row
        if cols is not None:
            lp.coef(row, cols, -1.0)
        for k, (site, c) in enumerate(ks):
            if site != n:
                continue
            px, py = _curve_points(sizes, values[c], upper[n])
            a, b, gap = envelope(px, py)
            kind = name.removeprefix("contract_").split("_")[0]
            gaps[kind] = max(gaps[kind], gap)
            terms = zterms(n, c)
            if len(a) == 1:
                lp.coef(row, x[:, k, :], float(b[0]))
                for cols, mult in terms:
                    lp.coef(row, cols, float(a[0]) * mult)
                if not terms:
                    _shift_hi(lp, row, -float(a[0]))
                continue
            epi = lp.cols((S, T), 0.0, -_INF, _INF, scenario=scen[:, None])
            lp.coef(row, epi, 1.0)
            for j in range(len(a)):
                r = lp.rows((S, T), -_INF, 0.0 if terms else -float(a[j]))
                lp.coef(r, x[:, k, :], float(b[j]))
                lp.coef(r, epi, -1.0)
                for cols, mult in terms:
                    lp.coef(r, cols, float(a[j]) * mult)

    for n in range(N):
        for p in range(P):
            curve_rows(f"parts_{n}_{p}", n, cu.units[n, :, :, p], cols=delivered[:, n, p, :])
        curve_rows(f"power_{n}", n, cu.power_kw[n].astype(np.float64), avail=sc.power_kw[:, n, :])
        curve_rows(
            f"positions_{n}", n, cu.positions[n].astype(np.float64), avail=sc.positions[:, n, :]
        )

    # contracted power and positions: what is used at a site with a reservation is also at
    # most what it holds, what it reserved now (from its lead) and what it asked for later
    # unreserved (from the ask plus the unreserved lead)
    unreserved = np.full((S, N, 2, T), -1, dtype=np.int64)
    if res is not None:
        for n in range(N):
            if not res.active[n]:
                continue
            spot_lead = int(res.spot_lead[n])
            for q, (name, curve, held, spot_price) in enumerate(
                (
                    ("power", cu.power_kw[n], res.held_kw[n], res.spot_kw_price[n]),
                    (
                        "positions",
                        cu.positions[n],
                        res.held_positions[n],
                        res.spot_position_price[n],
                    ),
                )
            ):
                row_name = f"contract_{name}_{n}"
                curve_rows(
                    row_name, n, curve.astype(np.float64), avail=np.full((S, T), float(held))
                )
                row = rows[row_name]
                lead_n = int(res.lead[n])
                if lead_n < T:
                    lp.coef(row[:, lead_n:], np.array(reserve[(n, q)], dtype=np.int64), -1.0)
                if spot_lead < 0:
                    continue
                for t in range(1, T):
                    at = t + spot_lead
                    if at >= T:
                        break
                    ask = lp.cols((S,), float(spot_price) * (T - at), scenario=scen)
                    unreserved[:, n, q, t] = ask
                    lp.coef(row[:, at:], ask[:, None], -1.0)

    # demand: what runs at a site is at most what is wanted there after landing elsewhere
    dem = lp.rows((S, N, T), -_INF, want)
    rows["demand"] = dem
    for k, (n, _) in enumerate(ks):
        lp.coef(dem[:, n, :], x[:, k, :], 1.0)
    for (m, n), col in f.items():
        share = np.array(col, dtype=np.int64)
        lp.coef(dem[:, m, :], share, want[:, m, :])
        lp.coef(dem[:, n, :], share, -want[:, m, :])
        if lw is not None and lw.site == m and lw.target == n:
            later = np.array([f_wait[(g, m)] for g in range(n_groups)])[groups]
            w = want.copy()
            w[:, :, 0] = 0.0
            lp.coef(dem[:, m, :], later[:, None], w[:, m, :])
            lp.coef(dem[:, n, :], later[:, None], -w[:, m, :])

    # caps of later periods, shared by the sites
    cap = lp.rows((S, P, T - 1), -_INF, np.broadcast_to(co.cap[None, :, 1:], (S, P, T - 1)))
    rows["cap"] = cap
    for n in range(N):
        lp.coef(cap, order[:, n, :, 1:], 1.0)
        lp.coef(cap, expedite[:, n, :, 1:], 1.0)

    # balance: delivered[t] = delivered[t-1] + arrivals[t]
    lo = np.zeros((S, N, P, T))
    lo[:, :, :, 0] = problem.installed_units[None, :, :]
    bal = lp.rows((S, N, P, T), lo, lo)
    rows["balance"] = bal
    lp.coef(bal, delivered, 1.0)
    lp.coef(bal[:, :, :, 1:], delivered[:, :, :, :-1], -1.0)
    ss, nn, pp, tt = np.meshgrid(
        np.arange(S), np.arange(N), np.arange(P), np.arange(T), indexing="ij"
    )
    arrive = tt + lead[ss, pp]
    ok = arrive < T
    first = ok & (tt == 0)
    lp.coef(bal[ss[first], nn[first], pp[first], arrive[first]], buy[nn[first], pp[first]], -1.0)
    later = ok & (tt >= 1)
    lp.coef(
        bal[ss[later], nn[later], pp[later], arrive[later]],
        order[ss[later], nn[later], pp[later], tt[later]],
        -1.0,
    )
    lp.coef(bal[ss[exp_ok], nn[exp_ok], pp[exp_ok], tt[exp_ok] + 1], expedite[exp_ok], -1.0)
    if waiting is not None and waiting.kind == "order":
        n, p = waiting.site, waiting.target
        shared = lp.cols((n_groups,), 0.0)
        na = lp.rows((S,), 0.0, 0.0)
        lp.coef(na, order[:, n, p, 1], 1.0)
        lp.coef(na, shared[groups], -1.0)
        rows["nonanticipative"] = na

    # carried: stock beyond what the wanted accelerators need, at the period's price
    car = lp.rows((S, N, P, T), 0.0, _INF)
    rows["carry"] = car
    lp.coef(car, carried, 1.0)
    lp.coef(car, delivered, -1.0)
    fixed_need = np.zeros((S, N, P, T))
    for n, c in ks:
        terms = zterms(n, c)
        need = np.stack(
            [_interp(sizes, cu.units[n, c, :, p], want[:, n, :]) for p in range(P)], axis=1
        )  # [S, P, T]
        if not terms:
            fixed_need[:, n] += need
        for cols, mult in terms:
            lp.coef(car[:, n], cols[:, None, :], need * mult[:, None, :])
    _set_lo(lp, car, -fixed_need)

    if waiting is not None and waiting.kind == "reserve":
        # more reserved at period 1, per group: per-scenario columns (each carrying its
        # scenario's cost) equal within a group
        assert res is not None
        n, q = waiting.site, waiting.target
        at = 1 + int(res.lead[n])
        if at < T:
            price_q = float((res.kw_price, res.position_price)[q][n])
            late = lp.cols((S,), price_q * (T - at), scenario=scen)
            name = ("power", "positions")[q]
            lp.coef(rows[f"contract_{name}_{n}"][:, at:], late[:, None], -1.0)
            shared = lp.cols((n_groups,), 0.0)
            na = lp.rows((S,), 0.0, 0.0)
            lp.coef(na, late, 1.0)
            lp.coef(na, shared[groups], -1.0)
            rows["nonanticipative"] = na

    # ---- objective: expectation + weight * CVaR ---------------------------------------------
    cost, _, _, _, scen_of = lp.column_data()
    constant = float(co.idle_per_accelerator_period) * want.sum(axis=(1, 2))
    if use_risk:
        assert eta is not None and u is not None
        # u[s] >= loss[s] - eta, in the solver's units (cents / SCALE)
        risk = lp.rows((S,), constant / SCALE, _INF)
        rows["risk"] = risk
        lp.coef(risk, u, 1.0)
        lp.coef(risk, eta, 1.0)
        stage_one = np.flatnonzero(scen_of == -1)
        lp.coef(risk[:, None], stage_one[None, :], -cost[stage_one][None, :] / SCALE)
        rec = np.flatnonzero(scen_of >= 0)
        lp.coef(risk[scen_of[rec]], rec, -cost[rec] / SCALE)
    weight = np.where(scen_of >= 0, prob[np.maximum(scen_of, 0)], 1.0)
    weight = np.where(scen_of == -2, 0.0, weight)
    objective = cost * weight / SCALE
    if use_risk:
        assert eta is not None and u is not None
        objective[eta[0]] = options.risk_weight
        objective[u] = options.risk_weight * prob / (1.0 - options.risk_alpha)
    highs_lp = lp.finish(objective, float(prob @ constant) / SCALE)
    _, _, _, integ, _ = lp.column_data()
    return Model(
        lp=highs_lp,
        options=options,
        buy=buy,
        z=z,
        z_wait=z_wait,
        f=f,
        f_wait=f_wait,
        sites_choices=ks,
        x=x,
        order=order,
        expedite=expedite,
        delivered=delivered,
        carried=carried,
        rework=rework,
        scenario_of=scen_of,
        cost_cents=cost,
        constant_cents=constant,
        probability=prob,
        rows=rows,
        integers=int(integ.sum()),
        envelope_gap=gaps,
        reserve=reserve,
        unreserved=unreserved,
        lots=lots,
    )


def _set_hi(lp: _Lp, rows: IntArray, hi: float | FloatArray) -> None:
    """Change the upper bounds of rows already added."""
    _set_bound(lp, rows, hi, 1)


def _shift_hi(lp: _Lp, rows: IntArray, by: float) -> None:
    """Add ``by`` to the upper bounds of rows already added."""
    flat = rows.ravel()
    start = 0
    for block in lp._rows:
        n = len(block[0])
        sel = (flat >= start) & (flat < start + n)
        if sel.any():
            block[1][flat[sel] - start] += by
        start += n


def _set_lo(lp: _Lp, rows: IntArray, lo: float | FloatArray) -> None:
    _set_bound(lp, rows, lo, 0)


def _set_bound(lp: _Lp, rows: IntArray, value: float | FloatArray, which: int) -> None:
    flat = rows.ravel()
    vals = np.broadcast_to(np.asarray(value, dtype=np.float64), rows.shape).ravel()
    start = 0
    for block in lp._rows:
        n = len(block[0])
        sel = (flat >= start) & (flat < start + n)
        if sel.any():
            block[which][flat[sel] - start] = vals[sel]
        start += n


_BANNER_SHOWN = False


def _highs() -> highspy.Highs:
    """A HiGHS instance. HiGHS prints its banner on the first one a process makes, from C on
    file descriptor 1, before any option can silence it; that one is made with fd 1 pointed at
    /dev/null, so a command's standard output (``clusterloom plan --json``) stays its own."""
    global _BANNER_SHOWN
    if _BANNER_SHOWN:
        return highspy.Highs()  # type: ignore[no-untyped-call]
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 1)
            h = highspy.Highs()  # type: ignore[no-untyped-call]
    finally:
        os.dup2(saved, 1)
        os.close(saved)
    _BANNER_SHOWN = True
    return h


#: statuses that leave a feasible solution (a MIP stopped at a limit keeps its incumbent)
_STATUS_OK = {
    "Optimal",
    "Time limit reached",
    "Solution limit reached",
    "Interrupted by user",
}


def solve(
    model: Model,
    *,
    bounds: dict[int, tuple[float, float]] | None = None,
    continuous: bool = False,
    start: FloatArray | None = None,
    ranging: bool = False,
    node_limit: int | None = None,
    relax: IntArray | None = None,
) -> tuple[Solved, object | None]:
    """Solve ``model`` with some columns' ``bounds`` changed. ``continuous`` drops the
    integrality (a relaxation, or an LP once the integers are fixed by ``bounds``); ``relax``
    drops it for those columns alone (the orders now, with their lots); ``start``
    is a feasible solution the MIP starts from, so its result is never worse. Raises
    ``SpecError`` if the problem has no feasible plan."""
    t0 = time.perf_counter()
    h = _highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("random_seed", 0)
    h.setOptionValue("mip_rel_gap", model.options.mip_rel_gap)
    h.setOptionValue("time_limit", model.options.time_limit_s)
    if node_limit is not None:
        # a limit on work, not time, so that the result is the same on any machine
        h.setOptionValue("mip_max_nodes", node_limit)
        h.setOptionValue("mip_heuristic_effort", 0.0)
    h.passModel(model.lp)
    if bounds:
        cols = np.array(sorted(bounds), dtype=np.int32)
        lo = np.array([bounds[int(c)][0] for c in cols])
        hi = np.array([bounds[int(c)][1] for c in cols])
        h.changeColsBounds(len(cols), cols, lo, hi)
    is_mip = model.integers > 0 and not continuous
    if is_mip and relax is not None and len(relax):
        # these columns (the orders now) continuous, the other integers kept
        cols = np.asarray(relax, dtype=np.int32)
        h.changeColsIntegrality(
            len(cols), cols, np.full(len(cols), highspy.HighsVarType.kContinuous)
        )
        left = sum(1 for v in model.lp.integrality_ if int(v) != 0) - sum(
            1 for c in cols if int(model.lp.integrality_[int(c)]) != 0
        )
        if left == 0:
            is_mip = False
            continuous = True
    if model.integers > 0 and continuous:
        n = model.lp.num_col_
        h.changeColsIntegrality(
            n,
            np.arange(n, dtype=np.int32),
            np.full(n, highspy.HighsVarType.kContinuous),
        )
    if start is not None and is_mip:
        sol = highspy.HighsSolution()
        sol.col_value = list(start)
        sol.value_valid = True
        h.setSolution(sol)
    h.run()
    status = h.modelStatusToString(h.getModelStatus())
    if status not in _STATUS_OK:
        raise SpecError(
            [Problem("capacity", f"the plan cannot be solved: HiGHS reports {status.lower()}")]
        )
    sol = h.getSolution()
    values = np.asarray(sol.col_value, dtype=np.float64)
    info = h.getInfo()
    rng = h.getRanging()[1] if ranging and not is_mip else None
    return (
        _solved(
            model,
            status,
            values,
            np.asarray(sol.row_value, dtype=np.float64),
            np.asarray(sol.row_dual, dtype=np.float64) if not is_mip else np.empty(0),
            float(info.mip_gap) if is_mip else 0.0,
            time.perf_counter() - t0,
            float(info.objective_function_value) * SCALE,
        ),
        rng,
    )


def _solved(
    model: Model,
    status: str,
    values: FloatArray,
    row_values: FloatArray,
    row_duals: FloatArray,
    gap: float,
    seconds: float,
    solver_objective: float,
) -> Solved:
    S = len(model.constant_cents)
    spend = model.cost_cents * values
    stage_one = float(spend[model.scenario_of == -1].sum())
    rec = model.scenario_of >= 0
    per = np.bincount(model.scenario_of[rec], weights=spend[rec], minlength=S)
    losses = stage_one + per + model.constant_cents
    sc_prob = model.probability
    expected = float(sc_prob @ losses)
    tail = cvar(losses, sc_prob, model.options.risk_alpha)
    return Solved(
        status=status,
        objective_cents=expected + model.options.risk_weight * tail,
        values=values,
        scenario_cents=losses,
        expected_cents=expected,
        cvar_cents=tail,
        row_values=row_values,
        row_duals=row_duals,
        mip_gap=gap,
        seconds=seconds,
        solver_objective_cents=solver_objective,
    )


def reduce_scenarios(problem: CapacityProblem, keep: int) -> tuple[CapacityProblem, IntArray]:
    """``keep`` of the problem's scenarios by fast forward selection (Heitsch and Römisch,
    2003): each step keeps the scenario that most lowers the probability-weighted distance of
    every scenario to its nearest kept one; each dropped scenario's probability goes to its
    nearest kept one. Distances are Euclidean over demand, power, positions, deliveries (each
    divided by its largest value) and lead times (in periods). Returns the reduced problem and
    ``nearest[s]``, the kept scenario (index into the reduced one) standing for each ``s``."""
    sc = problem.scenarios
    S = len(sc.probability)
    if keep >= S:
        return problem, np.arange(S, dtype=np.int64)
    blocks = []
    for a in (sc.demand, sc.power_kw, sc.positions, sc.accelerators):
        flat = a.reshape(S, -1).astype(np.float64)
        scale = float(np.abs(flat).max()) or 1.0
        blocks.append(flat / scale)
    blocks.append(sc.lead_time.astype(np.float64))
    feat = np.concatenate(blocks, axis=1)
    sq = (feat**2).sum(axis=1)
    dist = np.sqrt(np.maximum(sq[:, None] + sq[None, :] - 2.0 * feat @ feat.T, 0.0))
    p = sc.probability
    best = np.full(S, np.inf)
    kept: list[int] = []
    for _ in range(keep):
        score = p @ np.minimum(best[:, None], dist)  # [S] if each candidate were kept
        score[kept] = np.inf
        u = int(np.argmin(score))
        kept.append(u)
        best = np.minimum(best, dist[:, u])
    kept.sort()
    near = np.argmin(dist[:, kept], axis=1).astype(np.int64)
    prob = np.bincount(near, weights=p, minlength=len(kept))
    idx = np.array(kept)
    reduced = replace(
        sc,
        probability=prob / prob.sum(),
        demand=sc.demand[idx].copy(),
        power_kw=sc.power_kw[idx].copy(),
        positions=sc.positions[idx].copy(),
        accelerators=sc.accelerators[idx].copy(),
        lead_time=sc.lead_time[idx].copy(),
        shocks=tuple(sc.shocks[i] for i in kept),
    )
    return replace(problem, scenarios=reduced), near


def first_stage(model: Model) -> IntArray:
    """The columns decided now that every build of the problem shares (orders and their
    lots, choices, shares, reservations), in the same places."""
    cols = [
        model.buy.ravel(),
        np.array(sorted(model.lots.values()), dtype=np.int64),
        np.array(sorted(model.z.values()), dtype=np.int64),
        np.array(sorted(model.f.values()), dtype=np.int64),
        np.array(sorted(model.reserve.values()), dtype=np.int64),
    ]
    return np.concatenate(cols)


def one_scenario(sc: Scenarios, s: int) -> Scenarios:
    """Scenario ``s`` of ``sc`` alone, with probability 1."""
    return replace(
        sc,
        probability=np.ones(1),
        demand=sc.demand[s : s + 1].copy(),
        power_kw=sc.power_kw[s : s + 1].copy(),
        positions=sc.positions[s : s + 1].copy(),
        accelerators=sc.accelerators[s : s + 1].copy(),
        lead_time=sc.lead_time[s : s + 1].copy(),
        shocks=(sc.shocks[s],),
    )


def evaluate(
    problem: CapacityProblem, options: Options, model: Model, values: FloatArray
) -> FloatArray:
    """[S] the cost in each of ``problem``'s scenarios of the first stage of a plan of
    ``model`` (a build of the same estate, e.g. on fewer scenarios), its recourse
    re-optimised scenario by scenario. Minimising each scenario's cost minimises both the
    expectation and the CVaR once the first stage is fixed, so no risk term is needed."""
    cols = first_stage(model)
    fixed = {int(c): (float(values[c]), float(values[c])) for c in cols}
    sc = problem.scenarios
    out = np.empty(len(sc.probability))
    flat = replace(options, risk_weight=0.0)
    for s in range(len(sc.probability)):
        m = build(replace(problem, scenarios=one_scenario(sc, s)), flat)
        solved, _ = solve(m, bounds=fixed, continuous=not options.integer_recourse)
        out[s] = solved.scenario_cents[0]
    return out
