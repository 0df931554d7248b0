"""The optimisation's input (``CapacityProblem``): a plan's costs and installed estate beside
its curves and scenarios.

- **Costs** (integer cents, ``units.cents``): each part's price and allocation cap per period
  from its supplier (one figure broadcast over the horizon, or one per period); expediting a
  unit costs its supplier's ``expedite_usd``, else ``costs.expedite_fraction`` of its price in
  the first period; carrying, idle accelerators and rework as the plan states them.
- **Installed estate**: each ``installed`` run directory (what ``design -o`` wrote) read with
  ``assist.read_run``: its bill of materials mapped to plan parts as the curves map theirs
  (``curves.part_of``; lines that are no plan part are not counted), its accelerators from
  its spec, and its fabric choice as the plan's choice with the backend's tier count (-1 when
  none has it, or nothing is installed). Several runs at one site add up.
- **Landing**: ``may_land_at[n, m]`` where the plan's ``landing`` lets site ``n``'s demand land
  at site ``m``.
- **Reservations** (``model.Reservations``): the sites that state a ``reservation``, their
  held power and positions, the prices per kW-quarter and position-quarter in cents and the
  leads; none stated: ``None`` (every site's halls are its own, as before).
- **Lots**: each part's ``supplier.lot`` (units an order now comes in).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clusterloom.capacity.curves import part_of
from clusterloom.capacity.input import PlanInput
from clusterloom.capacity.model import CapacityProblem, Costs, Curves, Reservations, Scenarios
from clusterloom.errors import Problem, SpecError
from clusterloom.units import cents

__all__ = [
    "InstalledSite",
    "build_costs",
    "build_problem",
    "build_reservations",
    "read_installed_site",
]


def _per_period(value: float | list[float], periods: int) -> list[float]:
    return list(value) if isinstance(value, list) else [value] * periods


def build_costs(plan: PlanInput) -> Costs:
    """The plan's prices, caps and cost rates as ``Costs``."""
    T = plan.horizon.periods
    price = np.array(
        [[cents(v) for v in _per_period(p.supplier.price_usd, T)] for p in plan.parts],
        dtype=np.int64,
    ).reshape(len(plan.parts), T)
    cap = np.array([_per_period(p.supplier.cap, T) for p in plan.parts], dtype=np.float64).reshape(
        len(plan.parts), T
    )
    c = plan.costs
    expedite = np.array(
        [
            cents(p.supplier.expedite_usd)
            if p.supplier.expedite_usd is not None
            else round(c.expedite_fraction * price[i, 0])
            for i, p in enumerate(plan.parts)
        ],
        dtype=np.int64,
    )
    lot = np.array([p.supplier.lot for p in plan.parts], dtype=np.int64)
    for a in (price, cap, expedite, lot):
        a.setflags(write=False)
    return Costs(
        price=price,
        cap=cap,
        idle_per_accelerator_period=cents(c.idle_usd_per_accelerator_quarter),
        expedite=expedite,
        carry_fraction=c.carry_fraction_per_quarter,
        rework_per_accelerator=cents(c.rework_usd_per_accelerator),
        lot=lot,
    )


def build_reservations(plan: PlanInput) -> Reservations | None:
    """The sites' ``reservation`` fields as ``Reservations`` (None when no site states one)."""
    if all(s.reservation is None for s in plan.sites):
        return None
    N = len(plan.sites)
    active = np.zeros(N, dtype=np.bool_)
    held = np.zeros((2, N))
    price = np.zeros((2, N), dtype=np.int64)
    spot = np.zeros((2, N), dtype=np.int64)
    lead = np.zeros(N, dtype=np.int64)
    spot_lead = np.full(N, -1, dtype=np.int64)
    for n, site in enumerate(plan.sites):
        r = site.reservation
        if r is None:
            continue
        active[n] = True
        held[:, n] = (r.held_kw, r.held_positions)
        price[:, n] = (cents(r.kw_usd_per_quarter), cents(r.position_usd_per_quarter))
        lead[n] = r.lead_quarters
        if r.unreserved is not None:
            u = r.unreserved
            spot[:, n] = (cents(u.kw_usd_per_quarter), cents(u.position_usd_per_quarter))
            spot_lead[n] = u.lead_quarters
    return Reservations(
        active=active,
        held_kw=held[0].copy(),
        held_positions=held[1].copy(),
        kw_price=price[0].copy(),
        position_price=price[1].copy(),
        lead=lead,
        spot_kw_price=spot[0].copy(),
        spot_position_price=spot[1].copy(),
        spot_lead=spot_lead,
    )


@dataclass(frozen=True)
class InstalledSite:
    """What one run directory says is installed: units per plan part, accelerators and the
    backend's tiers."""

    units: dict[str, float]
    accelerators: int
    tiers: int


def read_installed_site(run: Path, where: str) -> InstalledSite:
    """A run directory as ``design -o`` wrote it; ``SpecError`` naming ``where`` when it is
    not one."""
    from clusterloom.assist import read_run

    try:
        files = read_run(run)
        doc = json.loads((run / "design.json").read_text())
        accelerators = int(doc["spec"]["compute"]["accelerators"])
        tiers = next(int(f["tiers"]) for f in doc["fabrics"] if f["name"] == "backend")
    except SpecError as exc:
        raise SpecError([Problem(where, str(p)) for p in exc.problems]) from exc
    except (OSError, ValueError, KeyError, TypeError, StopIteration) as exc:
        raise SpecError([Problem(where, f"{run}: not a design run ({exc})")]) from exc
    units: dict[str, float] = {}
    for (_fabric, _tier, category, item, _length), (quantity, _c, _p) in files.bom.items():
        pid = part_of(category, item)
        if pid is not None:
            units[pid] = units.get(pid, 0.0) + quantity
    return InstalledSite(units, accelerators, tiers)


def build_problem(
    plan: PlanInput,
    curves: Curves,
    scenarios: Scenarios,
    *,
    base: Path | None = None,
) -> CapacityProblem:
    """The ``CapacityProblem`` of ``plan`` (module docstring); ``base`` is where installed
    run paths are relative to."""
    base = base or Path.cwd()
    sites = tuple(s.name for s in plan.sites)
    if curves.sites != sites or scenarios.sites != sites:
        raise ValueError("curves and scenarios must be of this plan's sites, in its order")
    if curves.parts != scenarios.parts:
        raise ValueError("curves and scenarios must name the same parts")
    index = {n: i for i, n in enumerate(sites)}
    part = {p: i for i, p in enumerate(curves.parts)}
    N, P = len(sites), len(curves.parts)
    units = np.zeros((N, P))
    accelerators = np.zeros(N)
    choice = np.full(N, -1, dtype=np.int64)
    for i, inst in enumerate(plan.installed):
        where = f"installed[{i}].run"
        path = Path(inst.run)
        site = read_installed_site(path if path.is_absolute() else base / path, where)
        n = index[inst.site]
        for pid, q in site.units.items():
            if pid in part:
                units[n, part[pid]] += q
        accelerators[n] += site.accelerators
        tiers = [c for c, f in enumerate(plan.fabrics) if f.tiers == site.tiers]
        mine = tiers[0] if tiers else -1
        if choice[n] not in (-1, mine):
            raise SpecError(
                [Problem(where, f"site {inst.site} has runs on {site.tiers} and other tiers")]
            )
        choice[n] = mine
    may_land = np.zeros((N, N), dtype=np.bool_)
    for src, targets in plan.landing.items():
        for t in targets:
            if t != src:
                may_land[index[src], index[t]] = True
    return CapacityProblem(
        scenarios=scenarios,
        curves=curves,
        costs=build_costs(plan),
        installed_units=units,
        installed_accelerators=accelerators,
        installed_choice=choice,
        may_land_at=may_land,
        reservations=build_reservations(plan),
    )
