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

__all__ = ["CapacityProblem", "Costs", "Curves", "Reservations", "Scenarios"]


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
    #: [P] units an order now comes in (the supplier's lot); None: whole units of 1. Used
    #: only when orders now are integer (``Options.integer_orders``)
    lot: NDArray[np.int64] | None = None


@dataclass(frozen=True, eq=False)
class Reservations:
    """Power and rack positions that must be contracted before they can be used, per site.

    At a site with ``active[n]``, the IT power (and positions) the network and its
    accelerators draw is bounded twice: by what the halls physically give (the scenario's
    ``power_kw``, ``positions``: readiness and power shocks) and by what is *contracted*:
    ``held`` now, plus what is **reserved now** (a first-stage move, available from period
    ``lead`` on, paid at ``price`` per unit and period from then to the horizon's end, used or
    not), plus what is asked for later **unreserved** (recourse: asked in period t >= 1,
    available from ``t + spot_lead``, paid at ``spot_price`` per unit and period from then;
    ``spot_lead < 0``: none can be had). A site without ``active`` is as before: its halls'
    power and positions are its own. Money in cents per unit (kW or position) and period."""

    active: NDArray[np.bool_]  #: [N]
    held_kw: NDArray[np.float64]  #: [N]
    held_positions: NDArray[np.float64]  #: [N]
    kw_price: NDArray[np.int64]  #: [N] cents per reserved kW and period
    position_price: NDArray[np.int64]  #: [N] cents per reserved position and period
    lead: NDArray[np.int64]  #: [N] periods from reserving (now) to availability
    spot_kw_price: NDArray[np.int64]  #: [N] cents per unreserved kW and period
    spot_position_price: NDArray[np.int64]  #: [N]
    spot_lead: NDArray[np.int64]  #: [N] periods from asking to availability; -1: none

    def __post_init__(self) -> None:
        _frozen(
            self.active,
            self.held_kw,
            self.held_positions,
            self.kw_price,
            self.position_price,
            self.lead,
            self.spot_kw_price,
            self.spot_position_price,
            self.spot_lead,
        )


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
    #: power and positions that must be reserved (None: every site's halls are its own)
    reservations: Reservations | None = None

    def __post_init__(self) -> None:
        _frozen(
            self.installed_units,
            self.installed_accelerators,
            self.installed_choice,
            self.may_land_at,
        )
