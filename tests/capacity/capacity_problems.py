"""Synthetic ``CapacityProblem``s for the menu's tests and the solve benchmark.

Curves are built from closed forms of a rail-optimised Clos: a 64-port leaf serves 32
accelerators and sends 32 uplinks; a 2-tier fabric's spines take 64 leaf uplinks each and top
out at 64 * 32 = 2048 accelerators; a 3-tier fabric adds core switches (one per 2 spines) and
grows to 65 536. Two optics per link, one fibre trunk of 144 fibres per 72 links that cross
the building. Scenarios draw multiplicative demand shocks, power loss, delivery slips and
optic lead-time slips from a seeded generator. Prices are list-price scale (cents), not quotes.
"""

from __future__ import annotations

import numpy as np

from clusterloom.capacity import CapacityProblem, Costs, Curves, Scenarios

PARTS = ("leaf-switch", "spine-switch", "core-switch", "optic", "backbone-fibre")
CHOICES = ("2-tier", "3-tier")
SIZES = np.array([0, 512, 1024, 2048, 4096, 8192], dtype=np.int64)


def clos_units(accelerators: float, choice: int) -> np.ndarray:
    """[P] parts of a rail-optimised fabric of ``accelerators`` (fractional, as the LP)."""
    leaves = accelerators / 32.0
    spines = leaves * 32.0 / 64.0
    core = spines / 2.0 if choice == 1 else 0.0
    links = leaves * 32.0 + (spines * 32.0 if choice == 1 else 0.0)
    trunks = links / 2.0 / 72.0
    return np.array([leaves, spines, core, 2.0 * links, trunks])


def curves(n_sites: int) -> Curves:
    units = np.array(
        [[[clos_units(float(k), c) for k in SIZES] for c in range(2)] for _ in range(n_sites)]
    )
    # 1.2 kW per accelerator with its share of host and cooling; 0.9 kW per switch
    switches = units[..., :3].sum(axis=-1)
    power = 1.2 * SIZES[None, None, :] + 0.9 * switches
    positions = SIZES[None, None, :] / 8.0 + switches / 16.0
    limits = np.array([[2048, 65536]] * n_sites, dtype=np.int64)
    return Curves(
        sites=tuple(f"site{n}" for n in range(n_sites)),
        choices=CHOICES,
        parts=PARTS,
        sizes=SIZES.copy(),
        units=units,
        power_kw=power,
        positions=positions,
        max_accelerators=limits,
    )


def costs(n_periods: int, *, rise: float = 0.02, cap: float = 1e9) -> Costs:
    base = np.array([2_500_000, 4_000_000, 6_000_000, 90_000, 600_000], dtype=np.float64)
    growth = (1.0 + rise) ** np.arange(n_periods)
    return Costs(
        price=np.round(base[:, None] * growth[None, :]).astype(np.int64),
        cap=np.full((len(PARTS), n_periods), cap),
        idle_per_accelerator_period=900_000,
        expedite=np.round(base * 0.3).astype(np.int64),
        carry_fraction=0.03,
        rework_per_accelerator=150_000,
    )


def synthetic(
    seed: int,
    *,
    n_scenarios: int = 4,
    n_sites: int = 2,
    n_periods: int = 4,
    lead: int = 2,
    rise: float = 0.02,
    greenfield: int = 1,
    land: bool = True,
    spread: float = 0.35,
    cap: float = 1e9,
    slips: bool = True,
) -> CapacityProblem:
    """A problem whose sites grow from 512 towards a few thousand accelerators, with
    ``greenfield`` sites free to choose their tier."""
    rng = np.random.default_rng(seed)
    S, N, T = n_scenarios, n_sites, n_periods
    start = rng.uniform(300, 700, size=N)
    slope = rng.uniform(150, 500, size=N)
    shock = np.exp(rng.normal(0.0, spread, size=(S, N)))
    t = np.arange(T)
    demand = start[None, :, None] + slope[None, :, None] * shock[:, :, None] * t[None, None, :]
    slip = rng.integers(0, 2, size=(S, N))
    delivered = np.maximum(
        start[None, :, None],
        start[None, :, None]
        + slope[None, :, None] * shock[:, :, None] * (t[None, None, :] - slip[:, :, None]),
    )
    power = np.full((S, N, T), 0.0) + (1.3 * demand.max(axis=(0, 2)) + 200)[None, :, None]
    lose = rng.random((S, N)) < 0.2
    power = np.where(lose[:, :, None] & (t[None, None, :] >= T // 2), power * 0.7, power)
    positions = np.full((S, N, T), 1e6)
    lead_time = np.full((S, len(PARTS)), lead, dtype=np.int64)
    slip_optics = (rng.random(S) < 0.3) & slips
    lead_time[slip_optics, 3] += 1
    shocks = tuple(
        tuple(
            [
                f"demand x{shock[s, n]:.2f} at site{n}"
                for n in range(N)
                if abs(shock[s, n] - 1) > 0.3
            ]
            + [f"power -30% at site{n}" for n in range(N) if lose[s, n]]
            + (["optics slip a quarter"] if slip_optics[s] else [])
        )
        for s in range(S)
    )
    cu = curves(N)
    installed_choice = np.array([-1 if n < greenfield else 0 for n in range(N)], dtype=np.int64)
    installed_acc = np.where(installed_choice >= 0, np.floor(start), 0.0)
    installed_units = np.array(
        [clos_units(float(installed_acc[n]), max(0, int(installed_choice[n]))) for n in range(N)]
    )
    may = np.eye(N, dtype=bool)
    if land and N > 1:
        may[0, 1] = may[1, 0] = True
    return CapacityProblem(
        scenarios=Scenarios(
            seed=seed,
            periods=tuple(
                f"2027Q{q % 4 + 1}" if q < 4 else f"{2027 + q // 4}Q{q % 4 + 1}" for q in range(T)
            ),
            sites=cu.sites,
            parts=PARTS,
            probability=np.full(S, 1.0 / S),
            demand=demand,
            power_kw=power,
            positions=positions,
            accelerators=delivered,
            lead_time=lead_time,
            shocks=shocks,
        ),
        curves=cu,
        costs=costs(T, rise=rise, cap=cap),
        installed_units=installed_units,
        installed_accelerators=installed_acc,
        installed_choice=installed_choice,
        may_land_at=may,
    )


def one_site(
    wanted: list[float],
    *,
    lead: int = 0,
    price: float = 100.0,
    idle: int = 1000,
    carry: float = 0.0,
    power: float = 1e6,
    installed: float = 0.0,
    expedite: int = 0,
    scenarios: list[list[float]] | None = None,
) -> CapacityProblem:
    """One site, one part (a leaf switch per 32 accelerators), one fabric choice (built):
    ``wanted[t]`` accelerators want to run in each period (or one row per scenario in
    ``scenarios``, equally likely); power is ``power`` kW at 1 kW an accelerator."""
    rows = np.array(scenarios if scenarios is not None else [wanted], dtype=np.float64)
    S, T = rows.shape
    sizes = np.array([0, 1024], dtype=np.int64)
    cu = Curves(
        sites=("hall",),
        choices=("2-tier",),
        parts=("leaf-switch",),
        sizes=sizes,
        units=np.array([[[[0.0], [32.0]]]]),
        power_kw=np.array([[[0.0, 1024.0]]]),
        positions=np.array([[[0.0, 1.0]]]),
        max_accelerators=np.array([[1 << 20]], dtype=np.int64),
    )
    demand = rows[:, None, :]
    return CapacityProblem(
        scenarios=Scenarios(
            seed=0,
            periods=tuple(f"P{t}" for t in range(T)),
            sites=("hall",),
            parts=("leaf-switch",),
            probability=np.full(S, 1.0 / S),
            demand=demand.copy(),
            power_kw=np.full((S, 1, T), power),
            positions=np.full((S, 1, T), 1e9),
            accelerators=demand.copy(),
            lead_time=np.full((S, 1), lead, dtype=np.int64),
            shocks=tuple((f"scenario {s}",) for s in range(S)),
        ),
        curves=cu,
        costs=Costs(
            price=np.full((1, T), price, dtype=np.int64),
            cap=np.full((1, T), 1e9),
            idle_per_accelerator_period=idle,
            expedite=np.full(1, expedite, dtype=np.int64),
            carry_fraction=carry,
            rework_per_accelerator=0,
        ),
        installed_units=np.array([[installed]]),
        installed_accelerators=np.zeros(1),
        installed_choice=np.zeros(1, dtype=np.int64),
        may_land_at=np.ones((1, 1), dtype=bool),
    )
