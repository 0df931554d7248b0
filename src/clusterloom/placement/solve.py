"""The CP-SAT models: racks onto positions, decomposed campus → hall → row.

**Campus level** (skipped for a one-hall site). Every group (a block with its leaf racks, a
chunk of a spine or core layer) goes to one hall. Per hall: positions (free, less the growth held
back), power and cooling (the least of the hall budget, the sum of its feeds or loops and the
sum of its rows), compute racks against the positions that can carry one, and per block length
the blocks that fit in the hall's free runs. A group whose leaf racks must spread their planes
over feeds only goes to halls with enough feeds. The objective sums, over the links between
groups, the door-to-door distance between their halls plus ``trunk_penalty_m`` per link that
leaves a hall (few inter-hall trunks).

**Hall level** (one model per hall, given the campus assignment). A block takes consecutive free
positions in one row (an interval over the hall's positions, numbered row by row, whose allowed
starts already exclude row ends, blocked or reserved positions and positions whose power,
cooling or floor rating is short for the rack that would land there); a single rack takes one
position. No two units overlap. Row, feed and cooling-loop budgets bound the power of the units
in each row. Leaf racks of one block put at most ``planes_per_feed`` planes on a feed; the racks
of a spine or core layer in a hall spread over at least ``spine_feeds`` feeds (as far as they
have racks and the hall has feeds); a leaf rack stays within its host links' reach of every
rack of its block (Manhattan distance between centres, less ``reach_allowance_m``). The
objective sums, over the links between units of the hall, the Manhattan distance between their
centres (a block counts from its middle) and, for links leaving the hall, the distance to the
door.

Each model starts from a greedy placement as a hint. Effort is CP-SAT's deterministic time, one
worker (or two with interleaved search) and a fixed seed, so the same spec gives the same
placement on any machine. Reported: each model's objective and best bound; the gap is of the
decomposed problem (the campus assignment fixes what the hall models can reach).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from ortools.sat.python import cp_model

from clusterloom.errors import Problem, SpecError
from clusterloom.placement.bounds import campus_path_bound, hall_grid, hall_lp_bound
from clusterloom.placement.demand import COMPUTE, Demand, Unit, plane_key
from clusterloom.placement.floor import FREE, FloorPlan
from clusterloom.placement.improve import polish
from clusterloom.spec.site import SiteSpec
from clusterloom.units import to_kilowatts, to_megawatts

DM = 10  # model coordinates are decimetres
#: Reach under which the greedy start places a rack before heavier ones (copper, short optics).
SHORT_REACH_M = 20.0


@dataclass(frozen=True)
class SolveStats:
    """One CP-SAT model: which, its status, objective and best bound (links x metres)."""

    name: str
    status: str
    units: int
    objective: float
    bound: float

    @property
    def gap(self) -> float:
        return (
            0.0 if self.objective <= 0 else max(0.0, (self.objective - self.bound) / self.objective)
        )

    @property
    def bound_quality(self) -> str:
        """:func:`bound_quality` of this model's gap and status."""
        return bound_quality(self.gap, self.status)


#: Gaps up to this are reported as a tight bound; beyond :data:`WEAK_GAP` as a weak one.
TIGHT_GAP, WEAK_GAP = 0.05, 0.30
#: What each bound quality means, for the reader of a gap.
BOUND_NOTES = {
    "proven optimal": "the objective equals the bound",
    "tight": f"gap at most {TIGHT_GAP:.0%}: the placement is within that of the optimum",
    "loose": f"gap up to {WEAK_GAP:.0%}: the optimum lies somewhere between bound and objective",
    "weak": (
        f"gap over {WEAK_GAP:.0%}, from a weak bound: the bounds leave out part of the problem "
        "(what, is said next to the gap), so the gap overstates how far the placement is from "
        "the optimum (docs/placement.md)"
    ),
}


def bound_quality(gap: float, status: str = "") -> str:
    """The quality of a placement bound, shown next to its gap: a key of :data:`BOUND_NOTES`
    (``proven optimal``, ``tight``, ``loose`` or ``weak``)."""
    if status == "optimal" or gap <= 1e-9:
        return "proven optimal"
    if gap <= TIGHT_GAP:
        return "tight"
    if gap <= WEAK_GAP:
        return "loose"
    return "weak"


def _params(solver: cp_model.CpSolver, site: SiteSpec, effort: float) -> None:
    p = solver.parameters
    p.random_seed = site.solver.seed
    p.num_workers = site.solver.workers
    p.interleave_search = site.solver.workers > 1
    p.max_deterministic_time = effort
    p.log_search_progress = False


def _status(code: Any) -> str:
    return {
        cp_model.OPTIMAL: "optimal",
        cp_model.FEASIBLE: "feasible",
        cp_model.INFEASIBLE: "infeasible",
        cp_model.MODEL_INVALID: "invalid",
    }.get(code, "unknown")


def _mw(watts: float) -> str:
    return f"{to_megawatts(watts):,.2f} MW" if watts >= 1e6 else f"{to_kilowatts(watts):,.0f} kW"


# --- link weights ---------------------------------------------------------------------------


def unit_links(
    demand: Demand, link_ends: list[tuple[NDArray[Any], NDArray[Any]]]
) -> dict[tuple[int, int], int]:
    """Links between units (a < b), from every fabric's link ends given as rack ids."""
    n = len(demand.units)
    acc: dict[tuple[int, int], int] = defaultdict(int)
    for src_rack, dst_rack in link_ends:
        ua = demand.rack_unit[src_rack].astype(np.int64)
        ub = demand.rack_unit[dst_rack].astype(np.int64)
        lo, hi = np.minimum(ua, ub), np.maximum(ua, ub)
        keep = lo != hi
        keys, counts = np.unique(lo[keep] * n + hi[keep], return_counts=True)
        for k, c in zip(keys.tolist(), counts.tolist(), strict=True):
            acc[(k // n, k % n)] += c
    return dict(acc)


# --- pre-checks -------------------------------------------------------------------------------


def _fits(floor: FloorPlan, demand: Demand, rack: int) -> NDArray[np.bool_]:
    """Free positions that can carry ``rack`` (power, cooling, weight)."""
    p = demand.rack_power_w[rack]
    return (  # type: ignore[no-any-return]
        (floor.pos_state == FREE)
        & (floor.pos_power_w >= p - 1e-6)
        & (floor.pos_cooling_w >= p - 1e-6)
        & (floor.pos_weight_kg >= demand.rack_weight_kg[rack] - 1e-6)
    )


def hall_power_w(floor: FloorPlan, h: int) -> float:
    """The most power hall ``h`` can deliver: hall budget, feeds, rows and free positions."""
    feeds = floor.feed_power_w[floor.feed_hall == h]
    rows = floor.row_power_w[floor.row_hall == h]
    free = (floor.pos_hall == h) & (floor.pos_state == FREE)
    return float(min(floor.hall_power_w[h], feeds.sum(), rows.sum(), floor.pos_power_w[free].sum()))


def hall_cooling_w(floor: FloorPlan, h: int) -> float:
    loops = floor.loop_cooling_w[floor.loop_hall == h]
    rows = floor.row_cooling_w[floor.row_hall == h]
    free = (floor.pos_hall == h) & (floor.pos_state == FREE)
    return float(
        min(floor.hall_cooling_w[h], loops.sum(), rows.sum(), floor.pos_cooling_w[free].sum())
    )


def hall_room(floor: FloorPlan, h: int) -> int:
    free = int(((floor.pos_hall == h) & (floor.pos_state == FREE)).sum())
    return free - int(floor.hall_hold_back[h])


def precheck(floor: FloorPlan, demand: Demand, site: SiteSpec) -> None:
    """Campus-wide shortfalls, before any solve: positions, power, cooling, rack fit, runs."""
    problems: list[Problem] = []
    one = floor.n_halls == 1
    where = f"hall {floor.hall_names[0]}" if one else "site"
    n = demand.n_racks
    room = sum(hall_room(floor, h) for h in range(floor.n_halls))
    held = int(floor.hall_hold_back.sum())
    if n > room:
        problems.append(
            Problem(
                "site",
                f"{where}: needs {n:,} rack positions, has {room:,} free"
                + (f" after holding back {held:,} for growth" if held else ""),
            )
        )
    need_w = float(demand.rack_power_w.sum())
    have_w = sum(hall_power_w(floor, h) for h in range(floor.n_halls))
    if need_w > have_w + 1e-6:
        problems.append(
            Problem("site", f"{where}: needs {_mw(need_w)} of power, has {_mw(have_w)}")
        )
    have_c = sum(hall_cooling_w(floor, h) for h in range(floor.n_halls))
    if need_w > have_c + 1e-6:
        problems.append(
            Problem("site", f"{where}: needs {_mw(need_w)} of cooling, has {_mw(have_c)}")
        )
    # racks of each profile against the positions that can carry them
    seen: set[tuple[str, float, float]] = set()
    for r in range(n):
        key = (demand.rack_model[r], float(demand.rack_power_w[r]), float(demand.rack_weight_kg[r]))
        if key in seen:
            continue
        seen.add(key)
        same = [
            i
            for i in range(n)
            if demand.rack_power_w[i] >= key[1] - 1e-6 and demand.rack_weight_kg[i] >= key[2] - 1e-6
        ]
        able = int(_fits(floor, demand, r).sum())
        if len(same) > able:
            problems.append(
                Problem(
                    "site",
                    f"{where}: {len(same):,} racks need a position for "
                    f"{to_kilowatts(key[1]):,.1f} kW and "
                    f"{key[2]:,.0f} kg ({demand.rack_role[r]} racks of type {key[0]} and "
                    f"heavier), {able:,} free positions can carry one",
                )
            )
    if not site.split_units:
        runs = floor.free_runs()
        longest = max(runs, key=lambda x: (x[2], -x[1]), default=(0, 0, 0))
        for u in demand.units:
            if u.kind == "block" and len(u.racks) > longest[2]:
                row = floor.row_names[longest[0]] if runs else "-"
                problems.append(
                    Problem(
                        "site.split_units",
                        f"{u.label} needs {len(u.racks)} adjacent positions, the largest free "
                        f"run is {longest[2]} (row {row}); lengthen rows or set split_units: true",
                    )
                )
                break
    if problems:
        raise SpecError(problems)


# --- campus level -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Group:
    units: tuple[int, ...]
    positions: int
    power_w: float
    compute: int
    blocks: tuple[int, ...]  # block lengths
    planes_needing_feeds: int  # planes of separate leaf racks (0 when none)


def _groups(demand: Demand, site: SiteSpec) -> list[_Group]:
    by_group: dict[int, list[int]] = defaultdict(list)
    for i, u in enumerate(demand.units):
        by_group[u.group].append(i)
    out = []
    for g in range(demand.n_groups):
        units = by_group.get(g, [])
        racks = [r for i in units for r in demand.units[i].racks]
        planes = {
            demand.units[i].plane for i in units if demand.units[i].spread_key.count(":block:")
        }
        out.append(
            _Group(
                units=tuple(units),
                positions=len(racks),
                power_w=float(demand.rack_power_w[racks].sum()) if racks else 0.0,
                compute=int((demand.rack_kind[racks] == COMPUTE).sum()) if racks else 0,
                blocks=tuple(
                    len(demand.units[i].racks) for i in units if demand.units[i].kind == "block"
                ),
                planes_needing_feeds=len(planes),
            )
        )
    return out


def _feeds_with_room(floor: FloorPlan, h: int) -> int:
    free = (floor.pos_hall == h) & (floor.pos_state == FREE)
    return len(set(floor.row_feed[floor.pos_row[free]].tolist()))


def _run_capacity(floor: FloorPlan, h: int, length: int) -> int:
    return sum(n // length for row, _, n in floor.free_runs() if floor.row_hall[row] == h)


@dataclass(frozen=True)
class _HallRoom:
    """What each hall holds for the campus model: positions, power, cooling, feeds with room,
    positions able to carry the heaviest compute rack, and per block length its free runs."""

    room: list[int]
    power: list[float]
    cooling: list[float]
    feeds: list[int]
    compute_fit: list[int]
    lengths: list[int]
    runs: dict[tuple[int, int], int]

    def capacity(self) -> NDArray[np.float64]:
        """Per hall, the resources in the order of :func:`_group_demand`'s columns."""
        return np.array(
            [
                [
                    self.room[h],
                    self.power[h],
                    self.cooling[h],
                    self.compute_fit[h],
                    *(self.runs[(k, h)] for k in self.lengths),
                ]
                for h in range(len(self.room))
            ],
            dtype=np.float64,
        )


def _hall_room(floor: FloorPlan, demand: Demand, groups: list[_Group]) -> _HallRoom:
    n_h = floor.n_halls
    compute_racks = np.flatnonzero(demand.rack_kind == COMPUTE)
    compute_fit = [0] * n_h
    if compute_racks.size:
        heaviest = int(compute_racks[np.argmax(demand.rack_power_w[compute_racks])])
        fits = _fits(floor, demand, heaviest)
        compute_fit = [int((fits & (floor.pos_hall == h)).sum()) for h in range(n_h)]
    lengths = sorted({k for g in groups for k in g.blocks})
    return _HallRoom(
        room=[hall_room(floor, h) for h in range(n_h)],
        power=[hall_power_w(floor, h) for h in range(n_h)],
        cooling=[hall_cooling_w(floor, h) for h in range(n_h)],
        feeds=[_feeds_with_room(floor, h) for h in range(n_h)],
        compute_fit=compute_fit,
        lengths=lengths,
        runs={(k, h): _run_capacity(floor, h, k) for k in lengths for h in range(n_h)},
    )


def _group_demand(groups: list[_Group], lengths: list[int]) -> NDArray[np.float64]:
    """Per group, what it takes of each resource of :meth:`_HallRoom.capacity`."""
    return np.array(
        [
            [g.positions, g.power_w, g.power_w, g.compute, *(g.blocks.count(k) for k in lengths)]
            for g in groups
        ],
        dtype=np.float64,
    ).reshape(len(groups), 4 + len(lengths))


def _allowed_halls(
    floor: FloorPlan, demand: Demand, site: SiteSpec, groups: list[_Group], hr: _HallRoom
) -> list[list[int]]:
    """Per group, the halls with feeds enough for its planes and free runs for its blocks;
    ``SpecError`` naming each group no hall can take."""
    n_h = floor.n_halls
    feeds, runs = hr.feeds, hr.runs
    ppf = site.spread.planes_per_feed
    allowed: list[list[int]] = []
    problems: list[Problem] = []
    for gi, g in enumerate(groups):
        need = -(-g.planes_needing_feeds // ppf) if g.planes_needing_feeds else 0
        ok = [h for h in range(n_h) if feeds[h] >= need and all(runs[(k, h)] > 0 for k in g.blocks)]
        if not ok:
            best = max(range(n_h), key=lambda h: feeds[h])
            problems.append(
                Problem(
                    "site.spread.planes_per_feed",
                    f"{demand.group_labels[gi]} spreads {g.planes_needing_feeds} planes at most "
                    f"{ppf} per feed: it needs {need} feeds in one hall with room; the most any "
                    f"hall has is {feeds[best]} ({floor.hall_names[best]})"
                    if need > max(feeds)
                    else f"{demand.group_labels[gi]}: no hall has a free run long enough for "
                    f"its blocks of {', '.join(map(str, g.blocks))} positions",
                )
            )
        allowed.append(ok)
    if problems:
        raise SpecError(problems)
    return allowed


def _relaxed_campus(
    groups: list[_Group], allowed: list[list[int]], hr: _HallRoom
) -> tuple[cp_model.CpModel, dict[tuple[int, int], Any], dict[tuple[str, int], Any]]:
    """The campus model with every hall resource relaxed by a slack variable, minimizing their
    sum: zero is a feasible assignment, else the slacks say what is short."""
    n_g, n_h = len(groups), len(hr.room)
    m = cp_model.CpModel()
    x = {(g, h): m.new_bool_var(f"x{g}_{h}") for g in range(n_g) for h in allowed[g]}
    for g in range(n_g):
        m.add_exactly_one(x[(g, h)] for h in allowed[g])
    over: dict[tuple[str, int], Any] = {}

    def cap(kind: str, h: int, terms: list[tuple[int, Any]], limit: float) -> None:
        if not terms or math.isinf(limit):
            return
        s = m.new_int_var(0, sum(c for c, _ in terms), f"s{kind}{h}")
        over[(kind, h)] = s
        m.add(sum(c * v for c, v in terms) <= int(limit) + s)

    for h in range(n_h):
        on = [(g, x[(g, h)]) for g in range(n_g) if (g, h) in x]
        cap("positions", h, [(groups[g].positions, v) for g, v in on], hr.room[h])
        cap("power", h, [(round(groups[g].power_w / 100), v) for g, v in on], hr.power[h] / 100)
        cap("cooling", h, [(round(groups[g].power_w / 100), v) for g, v in on], hr.cooling[h] / 100)
        cap(
            "compute",
            h,
            [(groups[g].compute, v) for g, v in on if groups[g].compute],
            hr.compute_fit[h],
        )
        for k in hr.lengths:
            cap(
                f"run{k}",
                h,
                [(groups[g].blocks.count(k), v) for g, v in on if k in groups[g].blocks],
                hr.runs[(k, h)],
            )
    hall = [m.new_int_var(0, n_h - 1, f"h{g}") for g in range(n_g)]
    for g in range(n_g):
        m.add(hall[g] == sum(h * x[(g, h)] for h in allowed[g]))
    m.minimize(sum(over.values()))
    return m, x, over


def _shortfall(
    floor: FloorPlan, hr: _HallRoom, solver: cp_model.CpSolver, over: dict[tuple[str, int], Any]
) -> list[Problem]:
    """What each hall is short of, read from the relaxed model's slacks."""
    limits: dict[str, list[float]] = {
        "positions": [float(v) for v in hr.room],
        "power": hr.power,
        "cooling": hr.cooling,
        "compute": [float(v) for v in hr.compute_fit],
    }
    problems: list[Problem] = []
    for (kind, h), var in sorted(over.items()):
        s = solver.value(var)
        if s <= 0:
            continue
        name = floor.hall_names[h]
        if kind in ("power", "cooling"):
            have = limits[kind][h]
            problems.append(
                Problem(
                    "site",
                    f"hall {name}: needs {_mw(have + s * 100)} of {kind}, has {_mw(have)}",
                )
            )
        elif kind.startswith("run"):
            problems.append(
                Problem(
                    "site",
                    f"hall {name}: {s} more blocks of {kind[3:]} adjacent positions than its "
                    f"free runs hold",
                )
            )
        else:
            what = "positions" if kind == "positions" else "positions able to carry a compute rack"
            have = int(limits[kind][h])
            problems.append(
                Problem("site", f"hall {name}: needs {have + s:,} {what}, has {have:,}")
            )
    return problems


def assign_halls(
    floor: FloorPlan,
    demand: Demand,
    site: SiteSpec,
    links: dict[tuple[int, int], int],
    pinned: Mapping[int, int] | None = None,
) -> tuple[NDArray[np.int32], SolveStats | None]:
    """Hall of every group (campus level); a one-hall site needs no model. ``pinned`` (group
    -> hall: the groups holding installed units) keeps those groups in their hall, so they
    take their share of its positions, power and cooling before any new group is put there
    (``SpecError`` naming what is short when the pinned groups and the rest cannot fit)."""
    groups = _groups(demand, site)
    n_g, n_h = len(groups), floor.n_halls
    if n_h == 1:
        return np.zeros(n_g, dtype=np.int32), None
    hr = _hall_room(floor, demand, groups)
    allowed = _allowed_halls(floor, demand, site, groups, hr)
    for g, h in (pinned or {}).items():
        allowed[g] = [h]
    dist = floor.hall_distance()
    table = [
        round(dist[a, b] + (site.trunk_penalty_m if a != b else 0.0))
        for a in range(n_h)
        for b in range(n_h)
    ]
    group_links: dict[tuple[int, int], int] = defaultdict(int)
    for (ua, ub), w in links.items():
        ga, gb = demand.units[ua].group, demand.units[ub].group
        if ga != gb:
            group_links[(min(ga, gb), max(ga, gb))] += w

    cap = hr.capacity()
    dem = _group_demand(groups, hr.lengths)
    blocks = np.array([bool(g.blocks) for g in groups])
    quota = -(-int(blocks.sum()) // n_h)
    order = sorted(range(n_g), key=lambda g: g not in (pinned or {}))  # pinned groups first
    start = _first_fit(cap, dem, allowed, blocks, quota, order)
    if start is None:
        start = _first_fit(cap, dem, allowed, blocks, n_g, order)
    # the least overflow of every hall resource: zero is a feasible start, else what is short
    relaxed, xr, over = _relaxed_campus(groups, allowed, hr)
    solver = cp_model.CpSolver()
    if start is None:
        _params(solver, site, site.solver.campus_effort)
        status = solver.solve(relaxed)
        if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            raise SpecError([Problem("site", "no assignment of racks to halls was found")])
        if solver.objective_value == 0:
            start = np.array(
                [
                    next(h for h in allowed[g] if solver.boolean_value(xr[(g, h)]))
                    for g in range(n_g)
                ],
                dtype=np.int64,
            )
    if start is not None:
        cost = np.array(table, dtype=np.float64).reshape(n_h, n_h)
        layers = _layers(demand)
        hall, stats = _alternate(start, cap, dem, allowed, cost, group_links, layers, site)
        return hall.astype(np.int32), stats
    problems = _shortfall(floor, hr, solver, over)
    raise SpecError(problems or [Problem("site", "the racks do not fit the halls")])


def _first_fit(
    cap: NDArray[np.float64],
    dem: NDArray[np.float64],
    allowed: list[list[int]],
    blocks: NDArray[np.bool_],
    quota: int,
    order: list[int],
) -> NDArray[np.int64] | None:
    """Groups in ``order`` (pinned groups first, then scalable units, so a pod's units stay
    together), each into the first allowed hall with room on every resource and, for units,
    fewer than ``quota`` units already (so units spread evenly and leave room for the network
    racks beside them); None when one does not fit."""
    left = cap.copy()
    count = np.zeros(cap.shape[0], dtype=np.int64)
    out = np.full(dem.shape[0], -1, dtype=np.int64)
    for g in order:
        for h in allowed[g]:
            if blocks[g] and count[h] >= quota:
                continue
            if (left[h] >= dem[g] - 1e-6).all():
                count[h] += int(blocks[g])
                left[h] -= dem[g]
                out[g] = h
                break
        else:
            return None
    return out


def _layers(demand: Demand) -> list[list[int]]:
    """Groups by layer: spine and core layers of each fabric first, then the scalable units
    (no links run between two groups of one layer)."""
    key: dict[int, str] = {}
    for u in demand.units:
        if u.kind == "block":
            key[u.group] = "~block"
        elif u.group not in key and u.spread_key and ":block:" not in u.spread_key:
            key[u.group] = ":".join(u.spread_key.split(":")[:2])
    by: dict[str, list[int]] = defaultdict(list)
    for g in range(demand.n_groups):
        by[key.get(g, "~block")].append(g)
    return [by[k] for k in sorted(by)]


def _alternate(
    hall: NDArray[np.int64],
    cap: NDArray[np.float64],
    dem: NDArray[np.float64],
    allowed: list[list[int]],
    cost: NDArray[np.float64],
    links: dict[tuple[int, int], int],
    layers: list[list[int]],
    site: SiteSpec,
    rounds: int = 2,
) -> tuple[NDArray[np.int64], SolveStats]:
    """Improve a feasible hall assignment one layer at a time: with every other group fixed,
    moving one layer is an assignment problem with linear costs, which CP-SAT solves to a
    proven optimum. The bound reported is the larger of :func:`_campus_bound` and
    :func:`~clusterloom.placement.bounds.campus_path_bound`, each valid for the whole campus."""
    n_g, n_h = dem.shape[0], cap.shape[0]
    nbr: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for (a, b), w in links.items():
        nbr[a].append((b, w))
        nbr[b].append((a, w))
    steps = [layer for layer in layers if layer] * rounds
    effort = site.solver.campus_effort / max(len(steps), 1)
    for layer in steps:
        members = set(layer)
        left = cap.copy()
        for g in range(n_g):
            if g not in members:
                left[hall[g]] -= dem[g]
        m = cp_model.CpModel()
        x = {(g, h): m.new_bool_var("") for g in layer for h in allowed[g]}
        objective = []
        for g in layer:
            m.add_exactly_one(x[(g, h)] for h in allowed[g])
            for h in allowed[g]:
                c = sum(w * cost[h, hall[b]] for b, w in nbr[g] if b not in members)
                if c:
                    objective.append(round(c) * x[(g, h)])
                m.add_hint(x[(g, h)], h == hall[g])
        for h in range(n_h):
            on = [g for g in layer if (g, h) in x]
            for r in range(cap.shape[1]):
                if math.isinf(left[h, r]) or not any(dem[g, r] for g in on):
                    continue
                scale = 100.0 if r in (1, 2) else 1.0  # watts in hundreds
                m.add(
                    sum(math.ceil(dem[g, r] / scale) * x[(g, h)] for g in on)
                    <= math.floor(left[h, r] / scale + 1e-9)
                )
        m.minimize(sum(objective) if objective else 0)
        solver = cp_model.CpSolver()
        _params(solver, site, effort)
        if solver.solve(m) in (cp_model.OPTIMAL, cp_model.FEASIBLE):
            for g in layer:
                hall[g] = next(h for h in allowed[g] if solver.boolean_value(x[(g, h)]))
    total = float(sum(w * cost[hall[a], hall[b]] for (a, b), w in links.items()))
    units = set(layers[-1]) if layers else set()
    star = _campus_bound(cap, dem, allowed, cost, nbr, layers)
    bound = min(max(star, campus_path_bound(cap, dem, allowed, cost, links, units)), total)
    status = "optimal" if total - bound <= 1e-6 * max(total, 1.0) else "feasible"
    return hall, SolveStats("campus", status, n_g, total, bound)


def _campus_bound(
    cap: NDArray[np.float64],
    dem: NDArray[np.float64],
    allowed: list[list[int]],
    cost: NDArray[np.float64],
    nbr: dict[int, list[tuple[int, int]]],
    layers: list[list[int]],
) -> float:
    """A lower bound on the campus objective valid for every feasible assignment.

    Only links between a network group (spine or core chunk) and a scalable unit are counted
    (others cost at least 0). For one network group ``b`` in hall ``k``, its units cannot all
    sit in ``k``: each hall holds at most as many units as its positions, power and cooling
    allow (counting the smallest unit). Sending the heaviest links to the cheapest halls first
    under those counts costs no more than any real placement of those units; the least of
    that over ``b``'s allowed halls is a bound for ``b``, and the bounds of different network
    groups add up because they count different links."""
    units = set(layers[-1]) if layers else set()
    if not units:
        return 0.0
    smallest = dem[sorted(units)].min(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(smallest[None, :] > 0, np.floor(cap / smallest[None, :] + 1e-9), np.inf)
    slots = per[:, :3].min(axis=1)  # positions, power, cooling
    bound = 0.0
    for b in range(dem.shape[0]):
        if b in units:
            continue
        weights = sorted((w for a, w in nbr.get(b, []) if a in units), reverse=True)
        if not weights:
            continue
        best = math.inf
        for k in allowed[b]:
            order = np.argsort(cost[:, k], kind="stable")
            total, i = 0.0, 0
            for h in order.tolist():
                take = int(min(slots[h], len(weights) - i))
                total += cost[h, k] * sum(weights[i : i + take])
                i += take
                if i >= len(weights):
                    break
            best = min(best, total)
        bound += 0.0 if math.isinf(best) else best
    return bound


# --- hall level ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _HallModel:
    model: Any
    start: dict[int, Any]
    row_of: dict[tuple[int, int], Any]


def _hall_tables(floor: FloorPlan, pos: NDArray[np.int64]) -> dict[str, Any]:
    x = np.round(floor.pos_x[pos] * DM).astype(np.int64)
    y = np.round(floor.pos_y[pos] * DM).astype(np.int64)
    rows = floor.pos_row[pos]
    return {"x": x, "y": y, "row": rows}


def _allowed_starts(
    floor: FloorPlan, demand: Demand, pos: NDArray[np.int64], unit: Unit
) -> list[int]:
    k = len(unit.racks)
    n = pos.shape[0]
    ok = np.ones(max(n - k + 1, 0), dtype=bool)
    rows = floor.pos_row[pos]
    for i, rack in enumerate(unit.racks):
        fits = _fits(floor, demand, rack)[pos]
        ok &= fits[i : n - k + 1 + i]
    if k > 1 and ok.size:
        same_row = rows[: n - k + 1] == rows[k - 1 :]
        ok &= same_row
    starts: list[int] = np.flatnonzero(ok).tolist()
    return starts


def start_allowed(floor: FloorPlan, demand: Demand, unit: Unit, at: int) -> bool:
    """Whether ``unit`` may start at global position ``at`` (one row, every rack fits)."""
    h = int(floor.pos_hall[at])
    pos = floor.hall_positions(h)
    local = np.flatnonzero(pos == at)
    return bool(local.size) and int(local[0]) in _allowed_starts(floor, demand, pos, unit)


class _Budgets:
    """The power and cooling a greedy placement has taken of each row, feed and loop."""

    def __init__(self, floor: FloorPlan) -> None:
        self.floor = floor
        self.row: dict[int, float] = defaultdict(float)
        self.feed: dict[int, float] = defaultdict(float)
        self.loop: dict[int, float] = defaultdict(float)

    def fits(self, r: int, w: float) -> bool:
        """Whether ``w`` watts more in row ``r`` keep its row, feed and loop budgets."""
        floor = self.floor
        f, lp = int(floor.row_feed[r]), int(floor.row_loop[r])
        return bool(
            self.row[r] + w <= floor.row_power_w[r] + 1e-6
            and self.row[r] + w <= floor.row_cooling_w[r] + 1e-6
            and self.feed[f] + w <= floor.feed_power_w[f] + 1e-6
            and self.loop[lp] + w <= floor.loop_cooling_w[lp] + 1e-6
        )

    def take(self, r: int, w: float) -> None:
        self.row[r] += w
        self.feed[int(self.floor.row_feed[r])] += w
        self.loop[int(self.floor.row_loop[r])] += w


@dataclass
class _Greedy:
    """The state of one greedy placement of a hall: positions taken, budgets used, each
    placed unit's start (``out``)."""

    floor: FloorPlan
    demand: Demand
    rows: NDArray[Any]
    xs: NDArray[np.float64]
    ys: NDArray[np.float64]
    taken: NDArray[np.bool_]
    budgets: _Budgets
    out: dict[int, int]

    def take(self, u: int, a: int, w: float) -> None:
        k = len(self.demand.units[u].racks)
        self.taken[a : a + k] = True
        self.budgets.take(int(self.rows[a]), w)
        self.out[u] = a

    def centre(self, u: int) -> tuple[float, float]:
        a, k = self.out[u], len(self.demand.units[u].racks)
        return float(self.xs[a : a + k].mean()), float(self.ys[a : a + k].mean())


def _greedy_blocks(
    g: _Greedy,
    blocks: list[int],
    starts: dict[int, list[int]],
    power: dict[int, float],
    door_d: NDArray[np.float64],
) -> bool:
    """Blocks in order, each in the first row with an allowed run whose budgets still hold it,
    at the start farthest from the door (so the row's free positions, for its leaf racks, lie
    between the block and the door). False when one does not fit."""
    demand, rows = g.demand, g.rows
    for u in sorted(blocks, key=lambda u: (demand.units[u].group, u)):
        k = len(demand.units[u].racks)
        fitting = [a for a in starts[u] if not g.taken[a : a + k].any()]
        fitting = [a for a in fitting if g.budgets.fits(int(rows[a]), power[u])]
        if not fitting:
            return False
        row = int(rows[fitting[0]])
        in_row = [a for a in fitting if int(rows[a]) == row]
        g.take(u, max(in_row, key=lambda a: (float(door_d[a : a + k].mean()), -a)), power[u])
    return True


def _single_order(
    demand: Demand, singles: list[int], nbr: dict[int, list[tuple[int, int]]], heavy_first: bool
) -> list[int]:
    """Single racks with a reach first (with ``heavy_first``: only those tied to their unit by
    a short reach), then the most linked."""
    total_w = {u: sum(w for _, w in nbr[u]) for u in singles}
    if heavy_first:
        short = {u for u in singles if any(m < SHORT_REACH_M for _, m in demand.units[u].reach)}
        return sorted(singles, key=lambda u: (u not in short, -total_w[u], u))
    return sorted(singles, key=lambda u: (not demand.units[u].reach, -total_w[u], u))


def _greedy_start(
    g: _Greedy,
    site: SiteSpec,
    u: int,
    power: float,
    starts: list[int],
    anchor: NDArray[np.float64],
    pitch: float,
    planes_on: dict[tuple[str, int], set[int]],
    layer_feeds: dict[str, set[int]],
) -> int | None:
    """The allowed start of single unit ``u`` that adds the least cable to the ``anchor``
    points (x, y, weight) while keeping the budgets, the planes per feed and the reach; a
    spine or core layer is steered towards feeds it does not use yet. None when none does."""
    floor, demand, rows, xs, ys = g.floor, g.demand, g.rows, g.xs, g.ys
    unit = demand.units[u]
    pkey = plane_key(unit)
    best: tuple[float, int] | None = None
    for a in starts:
        if g.taken[a]:
            continue
        r = int(rows[a])
        if not g.budgets.fits(r, power):
            continue
        feed = int(floor.row_feed[r])
        penalty = 0.0
        if pkey:
            planes = planes_on[(pkey, feed)]
            if unit.plane not in planes and len(planes) >= site.spread.planes_per_feed:
                continue
        if ":block:" not in unit.spread_key and feed in layer_feeds[unit.spread_key]:
            penalty = 1e12  # prefer a feed the layer does not use yet
        ok = True
        for v, metres in unit.reach:
            if v in g.out:
                cx, cy = g.centre(v)
                half = (len(demand.units[v].racks) - 1) / 2 * pitch
                if abs(xs[a] - cx) + abs(ys[a] - cy) + half > metres - site.reach_allowance_m:
                    ok = False
        if not ok:
            continue
        d = penalty + float(
            (anchor[:, 2] * (np.abs(xs[a] - anchor[:, 0]) + np.abs(ys[a] - anchor[:, 1]))).sum()
        )
        if best is None or d < best[0]:
            best = (d, a)
    return None if best is None else best[1]


def _greedy(
    floor: FloorPlan,
    demand: Demand,
    site: SiteSpec,
    h: int,
    pos: NDArray[np.int64],
    units: list[int],
    starts: dict[int, list[int]],
    links: dict[tuple[int, int], int],
    heavy_first: bool = False,
) -> dict[int, int] | None:
    """A placement that keeps every constraint, built greedily: blocks in order, each in the
    first row with an allowed run whose row, feed and loop budgets still hold it, at the start
    farthest from the door; then single racks (those with a reach first, or with
    ``heavy_first`` only those with a short reach, then the most linked), each at the allowed
    position that adds the least cable to what is already placed (links leaving the hall count
    from the door) while keeping the budgets, the planes per feed and the reach; a spine or
    core layer is only steered towards feeds it does not use yet. None when it gets stuck."""
    xs, ys = floor.pos_x[pos], floor.pos_y[pos]
    taken = np.zeros(pos.shape[0], dtype=bool)
    g = _Greedy(floor, demand, floor.pos_row[pos], xs, ys, taken, _Budgets(floor), {})
    power = {u: float(demand.rack_power_w[list(demand.units[u].racks)].sum()) for u in units}
    blocks = [u for u in units if demand.units[u].kind == "block"]
    singles = [u for u in units if demand.units[u].kind != "block"]
    door = floor.hall_door[h]
    door_d = np.abs(xs - door[0]) + np.abs(ys - door[1])
    if not _greedy_blocks(g, blocks, starts, power, door_d):
        return None

    pitch = _pitch_dm(floor, pos) / DM
    planes_on: dict[tuple[str, int], set[int]] = defaultdict(set)
    layer_feeds: dict[str, set[int]] = defaultdict(set)
    leaf_xy: list[tuple[float, float]] = []
    inside = set(units)
    nbr: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for (a, b), w in links.items():
        if a in inside:
            nbr[a].append((b, w))
        if b in inside:
            nbr[b].append((a, w))
    for u in _single_order(demand, singles, nbr, heavy_first):
        unit = demand.units[u]
        # the position that adds the least cable to what is placed: links to placed units
        # from their centres, links leaving the hall from the door
        anchors: list[tuple[float, float, int]] = []
        for v, w in nbr[u]:
            if v in g.out:
                anchors.append((*g.centre(v), w))
            elif v not in inside:
                anchors.append((float(door[0]), float(door[1]), w))
        if not anchors:
            anchors = [(x, y, 1) for x, y in leaf_xy] or [(float(xs.mean()), float(ys.mean()), 1)]
        anchor = np.array(anchors, dtype=np.float64)
        at = _greedy_start(g, site, u, power[u], starts[u], anchor, pitch, planes_on, layer_feeds)
        if at is None:
            return None
        g.take(u, at, power[u])
        feed = int(floor.row_feed[int(g.rows[at])])
        pkey = plane_key(unit)
        if pkey:
            planes_on[(pkey, feed)].add(unit.plane)
        if ":block:" in unit.spread_key:
            leaf_xy.append((float(xs[at]), float(ys[at])))
        elif unit.spread_key:
            layer_feeds[unit.spread_key].add(feed)
    return g.out


def _objective_m(
    floor: FloorPlan,
    demand: Demand,
    h: int,
    placed: dict[int, int],
    links: dict[tuple[int, int], int],
) -> float:
    """The hall model's objective (links x metres) of a placement given by unit starts."""

    def centre(u: int) -> tuple[float, float]:
        a, k = placed[u], len(demand.units[u].racks)
        sl = slice(a, a + k)
        return (
            round(float(floor.pos_x[sl].mean()) * DM) / DM,
            round(float(floor.pos_y[sl].mean()) * DM) / DM,
        )

    door = floor.hall_door[h]
    total = 0.0
    for (a, b), w in links.items():
        if a in placed and b in placed:
            (xa, ya), (xb, yb) = centre(a), centre(b)
            total += w * (abs(xa - xb) + abs(ya - yb))
        elif a in placed or b in placed:
            x, y = centre(a if a in placed else b)
            total += w * (abs(x - door[0]) + abs(y - door[1]))
    return total


@dataclass(frozen=True)
class _UnitVars:
    """The hall model's variables per unit: its start, a literal per row it may stand in,
    its centre (decimetres); per row the units that may stand in it with their literal."""

    start: dict[int, Any]
    row_of: dict[tuple[int, int], Any]
    cx: dict[int, Any]
    cy: dict[int, Any]
    row_units: dict[int, list[tuple[int, Any]]]


def _unit_vars(
    m: cp_model.CpModel,
    demand: Demand,
    units: list[int],
    starts: dict[int, list[int]],
    tab: dict[str, Any],
) -> _UnitVars:
    """Each unit's start among its allowed ones (none: infeasible, diagnosed by the caller),
    in exactly one row, no two overlapping; its centre from its start."""
    xs, ys, rows = tab["x"], tab["y"], tab["row"]
    n = rows.shape[0]
    uv = _UnitVars({}, {}, {}, {}, defaultdict(list))
    intervals = []
    for u in units:
        unit = demand.units[u]
        k = len(unit.racks)
        allowed = starts[u] or [0]
        s = m.new_int_var_from_domain(cp_model.Domain.from_values(allowed), f"s{u}")
        if not starts[u]:
            m.add(s != s)  # nothing fits: infeasible, diagnosed by the caller
        uv.start[u] = s
        intervals.append(m.new_fixed_size_interval_var(s, k, f"i{u}"))
        by_row: dict[int, list[int]] = defaultdict(list)
        for a in allowed:
            by_row[int(rows[a])].append(a)
        lits = []
        for r, values in sorted(by_row.items()):
            b = m.new_bool_var(f"r{u}_{r}")
            m.add_linear_expression_in_domain(
                s, cp_model.Domain.from_values(values)
            ).only_enforce_if(b)
            uv.row_of[(u, r)] = b
            uv.row_units[r].append((u, b))
            lits.append(b)
        m.add_exactly_one(lits)
        # centre of the unit
        cxt = [0] * n
        cyt = [0] * n
        for a in allowed:
            cxt[a] = round(float(xs[a : a + k].mean()))
            cyt[a] = round(float(ys[a : a + k].mean()))
        uv.cx[u] = m.new_int_var(min(cxt), max(cxt), f"cx{u}")
        uv.cy[u] = m.new_int_var(min(cyt), max(cyt), f"cy{u}")
        m.add_element(s, cxt, uv.cx[u])
        m.add_element(s, cyt, uv.cy[u])
    m.add_no_overlap(intervals)
    return uv


def _budget_constraints(
    m: cp_model.CpModel, floor: FloorPlan, demand: Demand, units: list[int], uv: _UnitVars
) -> None:
    """The power and cooling of each row, feed and loop within its budget."""
    power = {
        u: math.ceil(float(demand.rack_power_w[list(demand.units[u].racks)].sum())) for u in units
    }
    feed_terms: dict[int, list[tuple[int, Any]]] = defaultdict(list)
    loop_terms: dict[int, list[tuple[int, Any]]] = defaultdict(list)
    for r, items in sorted(uv.row_units.items()):
        terms = [(power[u], b) for u, b in items]
        for limit in (floor.row_power_w[r], floor.row_cooling_w[r]):
            if not math.isinf(limit):
                m.add(sum(c * b for c, b in terms) <= int(limit))
        feed_terms[int(floor.row_feed[r])] += terms
        loop_terms[int(floor.row_loop[r])] += terms
    for f, terms in sorted(feed_terms.items()):
        if not math.isinf(floor.feed_power_w[f]):
            m.add(sum(c * b for c, b in terms) <= int(floor.feed_power_w[f]))
    for lp, terms in sorted(loop_terms.items()):
        if not math.isinf(floor.loop_cooling_w[lp]):
            m.add(sum(c * b for c, b in terms) <= int(floor.loop_cooling_w[lp]))


def _spread_constraints(
    m: cp_model.CpModel,
    demand: Demand,
    site: SiteSpec,
    units: list[int],
    uv: _UnitVars,
    feeds_of_row: dict[int, int],
) -> None:
    """At most ``planes_per_feed`` planes of a scalable unit (leaf racks) or of a pod (spine
    or core racks) on one feed; a spine or core layer over ``spine_feeds`` feeds."""
    row_of = uv.row_of
    layers: dict[str, list[int]] = defaultdict(list)
    by_planes: dict[str, list[int]] = defaultdict(list)
    for u in units:
        if demand.units[u].spread_key:
            layers[demand.units[u].spread_key].append(u)
        key = plane_key(demand.units[u])
        if key:
            by_planes[key].append(u)
    hall_feeds = sorted(set(feeds_of_row.values()))
    for key, members in sorted(by_planes.items()):
        planes = sorted({demand.units[u].plane for u in members})
        if len(planes) <= site.spread.planes_per_feed:
            continue
        for f in hall_feeds:
            uses = []
            for q in planes:
                on = [
                    row_of[(u, r)]
                    for u in members
                    if demand.units[u].plane == q
                    for r in feeds_of_row
                    if feeds_of_row[r] == f and (u, r) in row_of
                ]
                if on:
                    z = m.new_bool_var(f"z{key}{q}{f}")
                    for b in on:
                        m.add_implication(b, z)
                    uses.append(z)
            if len(uses) > site.spread.planes_per_feed:
                m.add(sum(uses) <= site.spread.planes_per_feed)
    for key, members in sorted(layers.items()):
        if ":block:" in key:
            continue
        need = min(site.spread.spine_feeds, len(members), len(hall_feeds))
        if need <= 1:
            continue
        used = []
        for f in hall_feeds:
            on = [
                row_of[(u, r)]
                for u in members
                for r in feeds_of_row
                if feeds_of_row[r] == f and (u, r) in row_of
            ]
            if on:
                z = m.new_bool_var(f"y{key}{f}")
                m.add(z <= sum(on))
                used.append(z)
        m.add(sum(used) >= need)


def _manhattan(m: cp_model.CpModel, x: Any, y: Any) -> Any:
    """A variable equal to ``|x| + |y|`` (decimetres)."""
    dx = m.new_int_var(0, 10**7, "")
    dy = m.new_int_var(0, 10**7, "")
    m.add_abs_equality(dx, x)
    m.add_abs_equality(dy, y)
    return dx + dy


def _reach_constraints(
    m: cp_model.CpModel,
    floor: FloorPlan,
    demand: Demand,
    site: SiteSpec,
    pos: NDArray[np.int64],
    units: list[int],
    uv: _UnitVars,
) -> None:
    """A unit with a reach to another stands within it of the other's nearest rack."""
    pitch = _pitch_dm(floor, pos)
    for u in units:
        for v, metres in demand.units[u].reach:
            if v not in uv.start:
                continue
            half = math.ceil((len(demand.units[v].racks) - 1) / 2 * pitch)
            limit = math.floor((metres - site.reach_allowance_m) * DM) - half
            m.add(_manhattan(m, uv.cx[u] - uv.cx[v], uv.cy[u] - uv.cy[v]) <= max(limit, -1))


def _cable_objective(
    m: cp_model.CpModel,
    floor: FloorPlan,
    h: int,
    units: list[int],
    links: dict[tuple[int, int], int],
    uv: _UnitVars,
    moves: tuple[Any, ...] = (),
) -> None:
    """Minimize links x decimetres between unit centres, links leaving the hall from its
    door; each of ``moves`` (an installed unit leaves its start, weighted by the links it
    touches) costs more than any cable could."""
    inside = set(units)
    door = np.round(floor.hall_door[h] * DM).astype(np.int64)
    obj: list[Any] = []
    external: dict[int, int] = defaultdict(int)
    for (ua, ub), w in sorted(links.items()):
        if ua in inside and ub in inside:
            obj.append(w * _manhattan(m, uv.cx[ua] - uv.cx[ub], uv.cy[ua] - uv.cy[ub]))
        elif ua in inside:
            external[ua] += w
        elif ub in inside:
            external[ub] += w
    for u, w in sorted(external.items()):
        obj.append(w * _manhattan(m, uv.cx[u] - int(door[0]), uv.cy[u] - int(door[1])))
    if moves:
        span = int(np.ptp(floor.pos_x) + np.ptp(floor.pos_y) + 2 * DM) * DM
        obj.append((sum(links.values()) + 1) * span * sum(moves))
    m.minimize(sum(obj) if obj else 0)


def _hall_model(
    floor: FloorPlan,
    demand: Demand,
    site: SiteSpec,
    h: int,
    units: list[int],
    links: dict[tuple[int, int], int],
    *,
    spread: bool = True,
    reach: bool = True,
    budgets: bool = True,
    objective: bool = True,
    pins: dict[int, int] | None = None,
    soft: bool = False,
    hard: frozenset[int] = frozenset(),
) -> tuple[_HallModel, dict[int, list[int]], NDArray[np.int64]]:
    pos = floor.hall_positions(h)
    tab = _hall_tables(floor, pos)
    m = cp_model.CpModel()
    starts = {u: _allowed_starts(floor, demand, pos, demand.units[u]) for u in units}
    for u, at in (pins or {}).items():
        # an installed unit keeps its start (global position ``at``): its variable is fixed;
        # when ``soft``, only the ``hard`` ones (in a frozen hall or row) stay fixed
        if u in starts and (not soft or u in hard):
            starts[u] = [a for a in starts[u] if int(pos[a]) == at]
    uv = _unit_vars(m, demand, units, starts, tab)
    moves: list[Any] = []
    local = {int(g): a for a, g in enumerate(pos.tolist())}
    touching: dict[int, int] = defaultdict(int)
    for (ua, ub), w in links.items():
        touching[ua] += w
        touching[ub] += w
    for u, at in sorted((pins or {}).items()) if soft else ():
        if u in hard:
            continue
        # an installed unit may move, at a cost above any cable (growth when pins cannot hold)
        stay = m.new_bool_var(f"stay{u}")
        if at in local and local[at] in starts[u]:
            m.add(uv.start[u] == local[at]).only_enforce_if(stay)
            m.add(uv.start[u] != local[at]).only_enforce_if(stay.Not())
        else:
            m.add(stay == 0)
        # a move costs in proportion to the links it re-pulls (a leaf rack's hundreds of
        # links weigh more than a compute rack's)
        moves.append((1 + touching.get(u, 0)) * (1 - stay))
    if budgets:
        _budget_constraints(m, floor, demand, units, uv)
    if spread:
        feeds_of_row = {r: int(floor.row_feed[r]) for r in set(tab["row"].tolist())}
        _spread_constraints(m, demand, site, units, uv, feeds_of_row)
    if reach:
        _reach_constraints(m, floor, demand, site, pos, units, uv)
    if objective:
        _cable_objective(m, floor, h, units, links, uv, tuple(moves))
    return _HallModel(m, uv.start, uv.row_of), starts, pos


def _pitch_dm(floor: FloorPlan, pos: NDArray[np.int64]) -> float:
    """Largest centre-to-centre step between neighbours of a row (decimetres)."""
    if pos.shape[0] < 2:
        return 0.0
    same = floor.pos_row[pos[1:]] == floor.pos_row[pos[:-1]]
    step = np.abs(np.diff(floor.pos_x[pos])) + np.abs(np.diff(floor.pos_y[pos]))
    return float(step[same].max() * DM) if same.any() else 0.0


def place_hall(
    floor: FloorPlan,
    demand: Demand,
    site: SiteSpec,
    h: int,
    units: list[int],
    links: dict[tuple[int, int], int],
    pins: dict[int, int] | None = None,
    soft: bool = False,
    hard: frozenset[int] = frozenset(),
) -> tuple[dict[int, int], SolveStats]:
    """Start position (global position id) of every unit of hall ``h``; ``pins`` fixes
    installed units to their start (growth: they do not move); ``soft`` lets them move at a
    cost, except the ``hard`` ones (frozen)."""
    hm, starts, pos = _hall_model(
        floor, demand, site, h, units, links, pins=pins, soft=soft, hard=hard
    )
    pair_bound = max(
        _pair_bound(floor, demand, h, pos, units, starts, links),
        hall_lp_bound(
            hall_grid(floor, h, pos, DM),
            {u: len(demand.units[u].racks) for u in units},
            starts,
            links,
        ),
    )
    hint: dict[int, int] | None = None
    best = math.inf
    for heavy_first in (False, True):
        found = _greedy(floor, demand, site, h, pos, units, starts, links, heavy_first)
        if found is not None:
            cost = _objective_m(floor, demand, h, {u: int(pos[a]) for u, a in found.items()}, links)
            if cost < best:
                hint, best = found, cost
    if soft and pins:
        # start from the installed racks where they stand: hint their starts, not the greedy's
        local = {int(g): a for a, g in enumerate(pos.tolist())}
        staying = {u: local[at] for u, at in pins.items() if at in local and local[at] in starts[u]}
        taken = {a + i for u, a in staying.items() for i in range(len(demand.units[u].racks))}
        rest = {
            u: a
            for u, a in (hint or {}).items()
            if u not in staying and not taken & set(range(a, a + len(demand.units[u].racks)))
        }
        for u, a in {**rest, **staying}.items():
            hm.model.add_hint(hm.start[u], a)
        hint = None
    if hint is not None:
        _complete_hint(hm, hint, site)
    solver = cp_model.CpSolver()
    _params(solver, site, site.solver.hall_effort)
    status = solver.solve(hm.model)
    if status in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        placed = {u: int(pos[solver.value(hm.start[u])]) for u in units}
        if soft and pins:  # the objective carries the cost of moves: report the cable only
            cable_m = _objective_m(floor, demand, h, placed, links)
            return placed, SolveStats(
                floor.hall_names[h], "feasible", len(units), cable_m, min(pair_bound, cable_m)
            )
        objective = float(solver.objective_value) / DM
        if status != cp_model.OPTIMAL:  # CP-SAT stopped at its effort: a local search follows
            pitch = _pitch_dm(floor, pos)
            placed, objective = polish(
                floor,
                demand,
                site,
                h,
                units,
                starts,
                links,
                placed,
                objective,
                dm=DM,
                pitch_dm=pitch,
            )
        return placed, SolveStats(
            floor.hall_names[h],
            _status(status),
            len(units),
            objective,
            max(float(solver.best_objective_bound) / DM, pair_bound),
        )
    if hint is not None and status != cp_model.INFEASIBLE:
        # CP-SAT found nothing within the effort: keep the greedy placement, with CP-SAT's
        # bound; it keeps every rule but perhaps a layer's spread over feeds, which the
        # validators report as an error finding if so
        placed = {u: int(pos[s]) for u, s in hint.items()}
        cost = _objective_m(floor, demand, h, placed, links)
        pitch = _pitch_dm(floor, pos)
        placed, cost = polish(
            floor, demand, site, h, units, starts, links, placed, cost, dm=DM, pitch_dm=pitch
        )
        return placed, SolveStats(
            floor.hall_names[h],
            "heuristic",
            len(units),
            cost,
            max(0.0, float(solver.best_objective_bound) / DM, pair_bound),
        )
    raise SpecError(_diagnose_hall(floor, demand, site, h, units, links, starts, status, pins))


def _complete_hint(hm: _HallModel, hint: dict[int, int], site: SiteSpec) -> None:
    """Hint every variable of the model: solve once with the greedy starts fixed (a quick
    propagation), then hint the whole assignment, so CP-SAT starts from a full solution."""
    model = hm.model
    for u, s in hint.items():
        model.add_hint(hm.start[u], s)
    solver = cp_model.CpSolver()
    _params(solver, site, min(1.0, site.solver.hall_effort))
    solver.parameters.fix_variables_to_their_hinted_value = True
    if solver.solve(model) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return
    values = [
        solver.value(model.get_int_var_from_proto_index(i))
        for i in range(len(model.proto.variables))
    ]
    model.clear_hints()
    for i, v in enumerate(values):
        model.add_hint(model.get_int_var_from_proto_index(i), v)


def _pair_bound(
    floor: FloorPlan,
    demand: Demand,
    h: int,
    pos: NDArray[np.int64],
    units: list[int],
    starts: dict[int, list[int]],
    links: dict[tuple[int, int], int],
) -> float:
    """A lower bound on the hall objective (links x metres) from stars.

    Every link is given to one star: to its block end (a link between two blocks counts 0),
    else to the end with more link weight; links leaving the hall go to the door's star. For a
    star centred on a unit, its neighbours stand on distinct free positions outside the centre,
    so, for each place of the centre, the heaviest neighbour gets the nearest position, the
    next the next nearest, and so on; the least over the centre's allowed places bounds the
    star. The door is fixed: single racks take the nearest distinct positions, blocks their
    nearest allowed centre. Stars share positions in this relaxation, so their sum is a bound.
    """
    x = np.round(floor.pos_x[pos] * DM) / DM
    y = np.round(floor.pos_y[pos] * DM) / DM
    free = floor.pos_state[pos] == FREE
    csum_x = np.concatenate([[0.0], np.cumsum(floor.pos_x[pos])])
    csum_y = np.concatenate([[0.0], np.cumsum(floor.pos_y[pos])])
    inside = set(units)
    size = {u: len(demand.units[u].racks) for u in units}
    weight: dict[int, int] = defaultdict(int)
    for (a, b), w in links.items():
        weight[a] += w
        weight[b] += w
    stars: dict[int, list[int]] = defaultdict(list)  # centre -> link weights (-1: door)
    door_blocks: list[tuple[int, int]] = []
    leaving: dict[int, int] = defaultdict(int)
    for (a, b), w in links.items():
        ia, ib = a in inside, b in inside
        if ia and ib:
            if size[a] > 1 and size[b] > 1:
                continue
            if size[a] > 1 or (size[b] == 1 and (weight[a], a) > (weight[b], b)):
                stars[a].append(w)
            else:
                stars[b].append(w)
        elif ia or ib:
            u = a if ia else b
            if size[u] > 1:
                door_blocks.append((u, w))
            else:
                leaving[u] += w
    # one entry per rack: all of a rack's links leave from its one position
    stars[-1] = list(leaving.values())

    def centres(u: int) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
        st = np.array(starts[u], dtype=np.int64)
        k = size[u]
        cx = np.round((csum_x[st + k] - csum_x[st]) / k * DM) / DM
        cy = np.round((csum_y[st + k] - csum_y[st]) / k * DM) / DM
        return cx, cy, st

    total = 0.0
    idx = np.arange(pos.shape[0])
    door = floor.hall_door[h]
    for centre, ws in stars.items():
        wts = np.sort(np.array(ws, dtype=np.float64))[::-1]
        m = wts.shape[0]
        if centre == -1:
            d = np.sort((np.abs(x - door[0]) + np.abs(y - door[1]))[free])
            take = min(m, d.shape[0])
            total += float(wts[:take] @ d[:take])
            continue
        if not starts[centre]:
            continue
        cx, cy, st = centres(centre)
        d = np.abs(cx[:, None] - x[None, :]) + np.abs(cy[:, None] - y[None, :])
        covered = (idx[None, :] >= st[:, None]) & (idx[None, :] < st[:, None] + size[centre])
        d = np.where(covered | ~free[None, :], np.inf, d)
        take = min(m, d.shape[1] - size[centre])
        if take <= 0:
            continue
        near = np.partition(d, take - 1, axis=1)[:, :take] if take < d.shape[1] else d
        near = np.sort(near, axis=1)[:, :take]
        near = np.where(np.isinf(near), 0.0, near)
        total += float((near @ wts[:take]).min())
    for u, w_ in door_blocks:
        if starts[u]:
            cx, cy, _ = centres(u)
            total += w_ * float((np.abs(cx - door[0]) + np.abs(cy - door[1])).min())
    return total


def _feasible(
    floor: FloorPlan,
    demand: Demand,
    site: SiteSpec,
    h: int,
    units: list[int],
    links: dict[tuple[int, int], int],
    pins: dict[int, int] | None = None,
    **relax: bool,
) -> bool:
    hm, _, _ = _hall_model(
        floor, demand, site, h, units, links, objective=False, pins=pins, hard=frozenset(), **relax
    )
    solver = cp_model.CpSolver()
    _params(solver, site, site.solver.hall_effort)
    return solver.solve(hm.model) in (cp_model.OPTIMAL, cp_model.FEASIBLE)


def _diagnose_hall(
    floor: FloorPlan,
    demand: Demand,
    site: SiteSpec,
    h: int,
    units: list[int],
    links: dict[tuple[int, int], int],
    starts: dict[int, list[int]],
    status: Any,
    pins: dict[int, int] | None = None,
) -> list[Problem]:
    """Why hall ``h`` has no placement (with ``pins``, installed units at their starts): drop
    one family of constraints at a time."""
    name = floor.hall_names[h]
    runs = [(r, n) for r, _, n in floor.free_runs() if floor.row_hall[r] == h]
    longest = max(runs, key=lambda x: x[1], default=(0, 0))
    for u in units:
        if not starts[u]:
            unit = demand.units[u]
            k = len(unit.racks)
            if unit.kind == "block":
                return [
                    Problem(
                        "site",
                        f"{unit.label} needs {k} adjacent positions, the largest free run in "
                        f"hall {name} is {longest[1]} (row {floor.row_names[longest[0]]})",
                    )
                ]
            return [Problem("site", f"hall {name}: no free position can carry {unit.label}")]
    if _status(status) == "unknown":
        return [
            Problem(
                "site.solver.hall_effort",
                f"hall {name}: no placement found within an effort of "
                f"{site.solver.hall_effort:g}; raise it",
            )
        ]
    if _feasible(floor, demand, site, h, units, links, pins, spread=False):
        return [
            Problem(
                "site.spread",
                f"hall {name}: the failure-domain spreading (at most "
                f"{site.spread.planes_per_feed} plane(s) of a scalable unit per feed, spine "
                f"layers over {site.spread.spine_feeds} feeds) cannot be met with the rows and "
                "feeds that have room; add feeds or relax site.spread",
            )
        ]
    if _feasible(floor, demand, site, h, units, links, pins, reach=False):
        return [
            Problem(
                "site.reach_allowance_m",
                f"hall {name}: leaf racks cannot all stand within their host links' reach of "
                "their scalable unit's racks; use rows with room beside each unit or a medium "
                "of longer reach",
            )
        ]
    if _feasible(floor, demand, site, h, units, links, pins, budgets=False):
        need = sum(float(demand.rack_power_w[list(demand.units[u].racks)].sum()) for u in units)
        return [
            Problem(
                "site",
                f"hall {name}: the row, feed or cooling-loop budgets cannot carry the "
                f"{_mw(need)} placed in it in whole units",
            )
        ]
    sizes = sorted(
        (len(demand.units[u].racks) for u in units if demand.units[u].kind == "block"), reverse=True
    )
    return [
        Problem(
            "site",
            f"hall {name}: blocks of {', '.join(map(str, sizes))} adjacent positions and "
            f"{sum(1 for u in units if demand.units[u].kind == 'rack')} single racks do not "
            f"pack into its free runs ({', '.join(str(n) for _, n in runs)}); the largest is "
            f"{longest[1]} (row {floor.row_names[longest[0]]})",
        )
    ]
