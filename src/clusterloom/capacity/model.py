"""The capacity planner's problem as arrays (issue 22): what the input and scenario side
(``input``, ``curves``, ``scenarios``) hands the optimisation side (``moves``, ``optimise``,
``menu``). Nothing here reads YAML or solves anything; every array is read-only.

Shapes use S scenarios, N sites, T periods (quarters), P parts, C fabric choices and K sizes
at which the design stages ran. Money is integer cents or float cents where it is an
expectation; power is kilowatts of IT load; counts of parts are units (a switch, an optic, a
fibre trunk, a patch panel). Demand and supply are **cumulative**: ``demand[s, n, t]`` is the
accelerators that want to be running at site ``n`` by the end of period ``t`` in scenario
``s``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["CapacityProblem", "Costs", "Curves", "Scenarios"]


def _frozen(*arrays: NDArray[np.generic]) -> None:
    for a in arrays:
        a.setflags(write=False)


@dataclass(frozen=True, eq=False)
class Curves:
    """Network parts, cost and power against accelerators landed, per site and fabric choice,
    computed once by the fabric and cabling stages at ``sizes`` and interpolated linearly in
    between (``parts_at``); never a hard-coded ratio."""

    sites: tuple[str, ...]  #: N
    choices: tuple[str, ...]  #: C, e.g. ``2-tier``, ``3-tier``
    parts: tuple[str, ...]  #: P
    #: [K] accelerator counts the stages ran at, ascending, the first 0
    sizes: NDArray[np.int64]
    #: [N, C, K, P] units of each part a design of that size needs at that site
    units: NDArray[np.float64]
    #: [N, C, K] IT power of the network and the accelerators it serves, kW
    power_kw: NDArray[np.float64]
    #: [N, C, K] rack positions the design takes
    positions: NDArray[np.float64]
    #: [N, C] the largest size a choice can grow to without rework (its tier's limit)
    max_accelerators: NDArray[np.int64]

    def __post_init__(self) -> None:
        _frozen(self.sizes, self.units, self.power_kw, self.positions, self.max_accelerators)

    def parts_at(self, site: int, choice: int, accelerators: float) -> NDArray[np.float64]:
        """[P] units needed for ``accelerators`` at ``site`` with ``choice`` (linear between
        the stage-computed sizes; beyond the last size, extrapolated on the last segment)."""
        x = self.sizes.astype(np.float64)
        y = self.units[site, choice]
        if accelerators <= x[-1]:
            return np.array([np.interp(accelerators, x, y[:, p]) for p in range(y.shape[1])])
        slope = (y[-1] - y[-2]) / (x[-1] - x[-2])
        return np.asarray(y[-1] + slope * (accelerators - x[-1]), dtype=np.float64)


@dataclass(frozen=True, eq=False)
class Scenarios:
    """S seeded Monte Carlo scenarios of demand, site readiness and supply."""

    seed: int
    periods: tuple[str, ...]  #: T labels, e.g. ``2027Q1``
    sites: tuple[str, ...]  #: N
    parts: tuple[str, ...]  #: P
    #: [S] probabilities, summing to 1
    probability: NDArray[np.float64]
    #: [S, N, T] accelerators wanted running by the end of each period (cumulative)
    demand: NDArray[np.float64]
    #: [S, N, T] IT power available by the end of each period, kW (cumulative)
    power_kw: NDArray[np.float64]
    #: [S, N, T] rack positions available by the end of each period (cumulative)
    positions: NDArray[np.float64]
    #: [S, N, T] accelerators delivered to the site by the end of each period (cumulative)
    accelerators: NDArray[np.float64]
    #: [S, P] periods from an order to its delivery (a vendor's slip raises it)
    lead_time: NDArray[np.int64]
    #: [S] the named shocks each scenario drew, for the menu's "protects" text
    shocks: tuple[tuple[str, ...], ...]

    def __post_init__(self) -> None:
        _frozen(
            self.probability,
            self.demand,
            self.power_kw,
            self.positions,
            self.accelerators,
            self.lead_time,
        )


@dataclass(frozen=True, eq=False)
class Costs:
    """What the plan's outcomes cost (cents)."""

    #: [P, T] price of a unit ordered in period t
    price: NDArray[np.int64]
    #: [P, T] units that can be ordered in period t (allocation cap)
    cap: NDArray[np.float64]
    #: cost of one accelerator delivered but idle (no network) for one period
    idle_per_accelerator_period: int
    #: extra cost of a unit expedited (delivered with a lead time of one period), per unit
    expedite: NDArray[np.int64]  #: [P]
    #: carrying cost of a unit on hand but not installed, per period, as a fraction of its price
    carry_fraction: float
    #: cost of reworking a design of one choice into another, per accelerator already landed
    rework_per_accelerator: int


@dataclass(frozen=True, eq=False)
class CapacityProblem:
    """Everything the optimisation reads: scenarios, curves, costs and the installed estate."""

    scenarios: Scenarios
    curves: Curves
    costs: Costs
    #: [N, P] units installed or on hand now
    installed_units: NDArray[np.float64]
    #: [N] accelerators running now
    installed_accelerators: NDArray[np.float64]
    #: [N] the fabric choice each site is built with now (index into ``curves.choices``; -1:
    #: greenfield, either may be chosen)
    installed_choice: NDArray[np.int64]
    #: [N, N] True where demand may land at another site (``land elsewhere``)
    may_land_at: NDArray[np.bool_]

    def __post_init__(self) -> None:
        _frozen(
            self.installed_units,
            self.installed_accelerators,
            self.installed_choice,
            self.may_land_at,
        )
