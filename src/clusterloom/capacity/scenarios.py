"""Seeded Monte Carlo scenarios of a plan (``Scenarios``), with correlated shocks.

The model, and its assumptions (each tested in ``tests/capacity/test_scenarios.py``):

- **Demand.** Each program draws one standard normal per scenario; the programs' normals are
  correlated by the plan's ``correlation`` matrix (a Gaussian copula: ``z = L e`` with
  ``L L^T = R``, ``u = Phi(z)``). A program's demand at a site in every period is its
  forecast's inverse CDF at ``u``: linear between the quantile levels, extrapolated on the
  outer segments to levels 0 and 1, never below 0. One ``u`` for all periods: a program's
  forecast error persists (high stays high). Cumulative demand is kept non-decreasing over
  the periods (a running maximum), which matters only where the extrapolated tails cross.
  A sample set is its order statistics at the Hazen positions ``(i + 0.5) / n``.
- **Demand moving between sites.** With ``moves.probability``, per scenario and program, a
  ``moves.share`` of the program's demand at one of its sites (drawn uniformly among those
  with a ``landing`` rule) moves, in every period, to one of the sites that rule allows.
- **Vendor slips.** With its ``slip.probability``, per scenario, a vendor slips by a whole
  number of quarters drawn uniformly in ``slip.quarters``: every part that vendor supplies
  has its lead time raised by it, and the accelerator deliveries of every program of that
  vendor, at every site, arrive that much later (``accelerators[t] = demand[t - slip]``; what
  the first period wants is taken as already on site or in transit).
- **Lead times** are drawn per scenario and part from their distributions, independently.
- **Readiness.** Each hall's ready quarter is drawn from its distribution, independently of
  the others; a hall brings its IT power and positions from that period on (a hall ready
  before the horizon, or with no date, is ready from its start).

Every random number comes from one ``numpy.random.Generator`` seeded by ``seed``, drawn in a
fixed order, so the same plan and seed give the same scenarios, array for array.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.special import ndtr

from clusterloom.capacity.input import Distribution, PlanInput, quarter_index, quarter_label
from clusterloom.capacity.model import Scenarios
from clusterloom.errors import Problem, SpecError

__all__ = ["correlated_uniforms", "inverse_cdf", "sample_scenarios"]

#: a program is named in a scenario's shocks when its draw is in the outer fifth either way
_HIGH, _LOW = 0.8, 0.2
#: most scenarios one call draws (500 x 10 sites x 12 quarters is the bench)
MAX_SCENARIOS = 100_000


def inverse_cdf(
    levels: NDArray[np.float64], values: NDArray[np.float64], u: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Values at probabilities ``u`` [S] of a distribution given by quantiles ``values``
    [..., L] at ``levels`` [L]: linear between levels, extrapolated on the first and last
    segment out to 0 and 1 (constant with one level). Returns [S, ...]."""
    lv = np.asarray(levels, dtype=np.float64)
    vals = np.asarray(values, dtype=np.float64)
    if lv.size == 1:
        return np.broadcast_to(vals[..., 0], (u.size, *vals.shape[:-1])).copy()
    # segment of each u: 0 .. L-2, the outer ones extended
    seg = np.clip(np.searchsorted(lv, u, side="right") - 1, 0, lv.size - 2)
    lo, hi = lv[seg], lv[seg + 1]
    w = (u - lo) / (hi - lo)  # [S], outside [0, 1] on the extended segments
    v_lo = np.moveaxis(vals[..., seg], -1, 0)  # [S, ...]
    v_hi = np.moveaxis(vals[..., seg + 1], -1, 0)
    shape = (u.size,) + (1,) * (vals.ndim - 1)
    return np.asarray(v_lo + w.reshape(shape) * (v_hi - v_lo), dtype=np.float64)


def correlated_uniforms(
    correlation: NDArray[np.float64], n: int, rng: np.random.Generator
) -> NDArray[np.float64]:
    """[n, R] uniforms whose normal scores have ``correlation`` (positive semi-definite: the
    factor is from its eigen-decomposition, so a singular matrix works too)."""
    w, v = np.linalg.eigh(correlation)
    factor = v * np.sqrt(np.clip(w, 0.0, None))
    z = rng.standard_normal((n, correlation.shape[0])) @ factor.T
    return np.asarray(ndtr(z), dtype=np.float64)


def _dist_draw(
    d: Distribution | int | str | None, rng: np.random.Generator, n: int, origin: int
) -> NDArray[np.int64]:
    """[n] whole quarters: a distribution's draws (a quarter label relative to ``origin``),
    a fixed figure, or 0 for none."""
    if d is None:
        rng.random(n)  # the same draws whatever the input's form, so seeds stay aligned
        return np.zeros(n, dtype=np.int64)
    if isinstance(d, int):
        rng.random(n)
        return np.full(n, d, dtype=np.int64)
    if isinstance(d, str):
        rng.random(n)
        return np.full(n, quarter_index(d) - origin, dtype=np.int64)
    vals = np.asarray(d.values()) - (origin if isinstance(d.quarters[0], str) else 0)
    drawn = inverse_cdf(np.asarray(d.levels), vals, rng.random(n))
    return np.rint(drawn).astype(np.int64)


def program_demand(plan: PlanInput, u: NDArray[np.float64]) -> NDArray[np.float64]:
    """[S, R, N, T] each program's demand at each site."""
    S, R, N, T = u.shape[0], len(plan.programs), len(plan.sites), plan.horizon.periods
    site = {s.name: i for i, s in enumerate(plan.sites)}
    out = np.zeros((S, R, N, T))
    for r, program in enumerate(plan.programs):
        for name, forecast in program.demand.items():
            levels, values = forecast.quantile_table()
            d = np.clip(inverse_cdf(levels, values, u[:, r]), 0.0, None)  # [S, T]
            out[:, r, site[name], :] = np.maximum.accumulate(d, axis=1)
    return out


def demand_moves(
    plan: PlanInput, demand: NDArray[np.float64], rng: np.random.Generator
) -> list[list[str]]:
    """Move shares of demand between sites in place; the shock names per scenario."""
    S = demand.shape[0]
    site = {s.name: i for i, s in enumerate(plan.sites)}
    names: list[list[str]] = [[] for _ in range(S)]
    p, share = plan.moves.probability, plan.moves.share
    for r, program in enumerate(plan.programs):
        sources = [name for name in program.demand if plan.landing.get(name)]
        hit = rng.random(S) < p
        src_pick = np.asarray(rng.integers(0, max(1, len(sources)), size=(S,)))
        dst_pick = np.asarray(rng.random(size=(S,)))
        if not sources:
            continue
        for s in np.flatnonzero(hit):
            src = sources[int(src_pick[s])]
            targets = [t for t in plan.landing[src] if t != src]
            if not targets:
                continue
            dst = targets[min(int(float(dst_pick[s]) * len(targets)), len(targets) - 1)]
            moved = share * demand[s, r, site[src]]
            demand[s, r, site[src]] -= moved
            demand[s, r, site[dst]] += moved
            names[s].append(f"{program.name}: {share:.0%} of its demand moves {src} -> {dst}")
    return names


def sample_scenarios(plan: PlanInput, n: int, seed: int) -> Scenarios:
    """``n`` equally likely scenarios of ``plan`` drawn with ``seed`` (module docstring)."""
    if not 1 <= n <= MAX_SCENARIOS:
        raise SpecError([Problem("--scenarios", f"give 1 to {MAX_SCENARIOS:,} scenarios")])
    if not 0 <= seed < 2**63:
        raise SpecError([Problem("--seed", "a seed is a non-negative integer")])
    rng = np.random.default_rng(seed)
    S, N, T = n, len(plan.sites), plan.horizon.periods
    start = quarter_index(plan.horizon.start)
    u = correlated_uniforms(plan.correlation_matrix(), S, rng)  # [S, R]
    per_program = program_demand(plan, u)
    shocks = demand_moves(plan, per_program, rng)
    for r, program in enumerate(plan.programs):
        for s in np.flatnonzero(u[:, r] >= _HIGH):
            shocks[s].append(f"{program.name}: demand high (p{int(100 * u[s, r])})")
        for s in np.flatnonzero(u[:, r] <= _LOW):
            shocks[s].append(f"{program.name}: demand low (p{int(100 * u[s, r])})")

    slip = np.zeros((S, len(plan.vendors)), dtype=np.int64)
    for v, vendor in enumerate(plan.vendors):
        hit = rng.random(S) < vendor.slip.probability
        lo, hi = vendor.slip.quarters
        q = rng.integers(lo, hi + 1, S)
        slip[:, v] = np.where(hit, q, 0)
        for s in np.flatnonzero(hit):
            shocks[s].append(f"{vendor.name}: deliveries slip {q[s]} quarter(s)")
    vendor_index = {v.name: i for i, v in enumerate(plan.vendors)}

    lead = np.zeros((S, len(plan.parts)), dtype=np.int64)
    for p, part in enumerate(plan.parts):
        lt = part.supplier.lead_time
        lead[:, p] = _dist_draw(lt, rng, S, 0)
        if part.supplier.vendor in vendor_index:
            lead[:, p] += slip[:, vendor_index[part.supplier.vendor]]

    delivered = np.zeros((S, N, T))
    t_idx = np.arange(T)
    for r, program in enumerate(plan.programs):
        q = (
            slip[:, vendor_index[program.vendor]]
            if program.vendor in vendor_index
            else np.zeros(S, dtype=np.int64)
        )
        src = np.clip(t_idx[None, :] - q[:, None], 0, T - 1)  # [S, T]
        delivered += np.take_along_axis(per_program[:, r], src[:, None, :], axis=2)

    power = np.zeros((S, N, T))
    positions = np.zeros((S, N, T))
    for i, site in enumerate(plan.sites):
        for b in site.buildings:
            for h in b.halls:
                ready = np.clip(_dist_draw(h.ready, rng, S, start), 0, None)
                on = t_idx[None, :] >= ready[:, None]  # [S, T]
                power[:, i] += on * h.power.it_kw
                positions[:, i] += on * h.positions
                if isinstance(h.ready, Distribution):
                    median = int(
                        np.rint(
                            inverse_cdf(
                                np.asarray(h.ready.levels),
                                np.asarray(h.ready.values())
                                - (start if isinstance(h.ready.quarters[0], str) else 0),
                                np.array([0.5]),
                            )[0]
                        )
                    )
                    for s in np.flatnonzero(ready > max(median, 0)):
                        late = quarter_label(start + int(ready[s]))
                        shocks[s].append(
                            f"{site.name}/{b.name}/{h.name}: ready {late}"
                            f" (median {quarter_label(start + max(median, 0))})"
                        )

    return Scenarios(
        seed=seed,
        periods=plan.periods,
        sites=tuple(s.name for s in plan.sites),
        parts=tuple(p.id for p in plan.parts),
        probability=np.full(S, 1.0 / S),
        demand=per_program.sum(axis=1),
        power_kw=power,
        positions=positions,
        accelerators=delivered,
        lead_time=lead,
        shocks=tuple(tuple(sorted(x)) for x in shocks),
    )
