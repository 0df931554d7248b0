"""Lower bounds on the placement objective that count what the star bounds of ``solve`` ignore.

Both are valid for every feasible placement of their model (the proof is in each docstring),
and ``solve`` reports the larger of each and the bound it had before, so a bound never gets
looser:

- :func:`hall_lp_bound`, for one hall model: every link is charged to a single rack at one of
  its ends (blocks are long and their links reach single racks), and the single racks and the
  blocks then compete for the hall's positions in a linear program, so two racks cannot both
  stand on the one position next to the door, nor on a position a block covers.
- :func:`campus_path_bound`, for the hall assignment: a core rack group links to spine groups
  that link to scalable units. Units do not all fit in the core group's hall, so on each path
  core - spine - unit a link leaves its hall: the spine-core link, or the spine-unit link.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy import sparse
from scipy.optimize import linprog

from clusterloom.placement.floor import FREE, FloorPlan

Links = dict[tuple[int, int], int]
#: Most (unit, position) columns the position LP of a hall takes on; a larger hall keeps the
#: star and CP-SAT bounds only (the LP would take minutes: 1,000,000 columns is about 300
#: single racks on 3,000 positions).
LP_MAX_COLUMNS = 1_000_000


# --- hall level ---------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class HallGrid:
    """One hall's positions as its model sees them: centres (metres, hall frame, in the order
    of the model's positions), which are free, the door and the grid (``1/dm`` metres) the
    model rounds unit centres to."""

    x: NDArray[np.float64]
    y: NDArray[np.float64]
    free: NDArray[np.bool_]
    door: tuple[float, float]
    dm: int

    @property
    def n(self) -> int:
        return int(self.x.shape[0])


def _spans(values: NDArray[np.float64], dm: int, k: int, starts: NDArray[np.int64]) -> Any:
    """Centre coordinate (metres) of a unit of ``k`` positions at each start, as the lowest and
    highest of the two roundings the placement code uses: the CP-SAT model averages positions
    rounded to the grid, the objective of a greedy placement rounds the average."""
    grid = np.round(values * dm)
    c_grid = np.concatenate([[0.0], np.cumsum(grid)])
    c_raw = np.concatenate([[0.0], np.cumsum(values)])
    a = np.round((c_grid[starts + k] - c_grid[starts]) / k) / dm
    b = np.round((c_raw[starts + k] - c_raw[starts]) / k * dm) / dm
    return np.minimum(a, b), np.maximum(a, b)


def _gap(
    a: tuple[NDArray[np.float64], NDArray[np.float64]],
    b: tuple[NDArray[np.float64], NDArray[np.float64]],
) -> NDArray[np.float64]:
    """Least distance between coordinate intervals ``a`` (rows) and ``b`` (columns)."""
    lo_a, hi_a = a[0][:, None], a[1][:, None]
    lo_b, hi_b = b[0][None, :], b[1][None, :]
    return np.maximum(0.0, np.maximum(lo_b - hi_a, lo_a - hi_b))


def hall_grid(floor: FloorPlan, h: int, pos: NDArray[np.int64], dm: int) -> HallGrid:
    """The :class:`HallGrid` of hall ``h``, whose model numbers positions as ``pos``."""
    door = floor.hall_door[h]
    return HallGrid(
        floor.pos_x[pos],
        floor.pos_y[pos],
        floor.pos_state[pos] == FREE,
        (float(door[0]), float(door[1])),
        dm,
    )


class _Geometry:
    """Distances of one hall: position to position, to the door, to each block's centres."""

    def __init__(self, grid: HallGrid) -> None:
        self.grid = grid
        every = np.arange(grid.n, dtype=np.int64)
        self.px = _spans(grid.x, grid.dm, 1, every)
        self.py = _spans(grid.y, grid.dm, 1, every)
        rx, ry = (round(v * grid.dm) / grid.dm for v in grid.door)
        self.dx = (np.array([min(grid.door[0], rx)]), np.array([max(grid.door[0], rx)]))
        self.dy = (np.array([min(grid.door[1], ry)]), np.array([max(grid.door[1], ry)]))
        self.door = (_gap(self.px, self.dx) + _gap(self.py, self.dy))[:, 0]
        self._sorted: NDArray[np.float64] | None = None

    def nearest_others(self) -> NDArray[np.float64]:
        """Per position, the distances to every other free position, nearest first."""
        if self._sorted is None:
            d = _gap(self.px, self.px) + _gap(self.py, self.py)
            d[:, ~self.grid.free] = np.inf
            np.fill_diagonal(d, np.inf)
            self._sorted = np.sort(d, axis=1)
        return self._sorted

    def centres(self, k: int, starts: list[int]) -> Any:
        st = np.array(starts, dtype=np.int64)
        return _spans(self.grid.x, self.grid.dm, k, st), _spans(self.grid.y, self.grid.dm, k, st)

    def to_block(self, k: int, starts: list[int]) -> NDArray[np.float64]:
        """Per position ``p``: the least distance to the centre of a block of ``k`` positions
        at one of ``starts`` that does not cover ``p`` (inf when every start covers it)."""
        cx, cy = self.centres(k, starts)
        d = _gap(self.px, cx) + _gap(self.py, cy)
        st = np.array(starts, dtype=np.int64)
        p = np.arange(self.grid.n)[:, None]
        d[(p >= st[None, :]) & (p < st[None, :] + k)] = np.inf
        return d.min(axis=1) if st.size else np.full(self.grid.n, np.inf)


@dataclass
class _Charges:
    """Every link of a hall charged to one place: a single rack (to the door, to a block, to
    another single rack) or a constant (a block's own links)."""

    door: dict[int, int]
    blocks: dict[int, list[tuple[int, int]]]
    peers: dict[int, list[int]]
    constant: float


def _charge(
    geo: _Geometry, sizes: dict[int, int], starts: dict[int, list[int]], links: Links
) -> _Charges:
    """A link between a single rack and a block goes to the rack, one between two single racks
    to the end with more link weight (ties: the higher id), one leaving the hall to its end in
    the hall. A block's own links (to the door, to another block) cost at least their least
    distance over the block's starts, added as a constant."""
    weight: dict[int, int] = defaultdict(int)
    for (a, b), w in links.items():
        weight[a] += w
        weight[b] += w
    out = _Charges(defaultdict(int), defaultdict(list), defaultdict(list), 0.0)
    for (a, b), w in sorted(links.items()):
        ia, ib = a in sizes, b in sizes
        if not (ia or ib):
            continue
        if not (ia and ib):
            u = a if ia else b
            if sizes[u] == 1:
                out.door[u] += w
            elif starts[u]:
                cx, cy = geo.centres(sizes[u], starts[u])
                out.constant += w * float((_gap(cx, geo.dx) + _gap(cy, geo.dy)).min())
            continue
        if sizes[a] > 1 and sizes[b] > 1:
            out.constant += w * _block_pair(geo, sizes[a], starts[a], sizes[b], starts[b])
        elif sizes[a] > 1 or sizes[b] > 1:
            rack, block = (b, a) if sizes[a] > 1 else (a, b)
            out.blocks[rack].append((block, w))
        else:
            heavy = a if (weight[a], a) > (weight[b], b) else b
            out.peers[heavy].append(w)
    return out


def _block_pair(geo: _Geometry, ka: int, sa: list[int], kb: int, sb: list[int]) -> float:
    """Least centre distance of two blocks at starts that do not overlap."""
    if not sa or not sb:
        return 0.0
    (ax, ay), (bx, by) = geo.centres(ka, sa), geo.centres(kb, sb)
    d = _gap(ax, bx) + _gap(ay, by)
    a = np.array(sa)[:, None]
    b = np.array(sb)[None, :]
    d[(a < b + kb) & (b < a + ka)] = np.inf
    best = float(d.min())
    return 0.0 if math.isinf(best) else best


def _rack_costs(
    geo: _Geometry,
    ch: _Charges,
    r: int,
    allowed: list[int],
    sizes: dict[int, int],
    starts: dict[int, list[int]],
    cache: dict[int, NDArray[np.float64]],
) -> NDArray[np.float64]:
    """What rack ``r``'s charged links cost at least, at each of its allowed positions."""
    at = np.array(allowed, dtype=np.int64)
    cost = ch.door.get(r, 0) * geo.door[at]
    for b, w in ch.blocks.get(r, []):
        if b not in cache:
            cache[b] = geo.to_block(sizes[b], starts[b])
        cost = cost + w * cache[b][at]
    ws = sorted(ch.peers.get(r, []), reverse=True)
    if ws:
        near = geo.nearest_others()[at, : len(ws)]
        near = np.where(np.isinf(near), 0.0, near)  # fewer free positions than peers: no cost
        cost = cost + near @ np.array(ws[: near.shape[1]], dtype=np.float64)
    return cost


def hall_lp_bound(
    grid: HallGrid, sizes: dict[int, int], starts: dict[int, list[int]], links: Links
) -> float:
    """A lower bound on a hall model's objective (links x metres between unit centres, links
    leaving the hall from the door), valid for every placement of its units at their allowed
    starts with no two overlapping.

    ``sizes``: positions of each unit of the hall (1: a single rack, more: a block);
    ``starts``: each unit's allowed starts (indices into ``grid``); ``links``: link weights
    between units (pairs with one end outside the hall leave it).

    Why it is valid. Charge every link to one place (:func:`_charge`): to the single rack at
    one end if there is one, else it is a block's own link and costs at least its least
    distance over the block's starts (a constant). For a single rack ``r`` at position ``p``,
    its charged links cost at least ``l(r, p)``: its links leaving the hall their door
    distance; a link to a block at least the distance from ``p`` to the nearest centre of a
    start of that block that does not cover ``p``; its links to other single racks, which
    stand on distinct free positions other than ``p``, at least the heaviest on the nearest
    such position, the next on the next nearest, and so on. So any placement costs at least
    the constant plus the sum of ``l(r, p_r)``. A placement is a 0/1 point of the linear
    program "each single rack at one allowed position, each block at one allowed start, each
    position covered at most once, minimize the sum of ``l``", so that program's minimum is a
    bound too; it is read from a dual solution (any dual solution bounds a minimum from
    below, so solver tolerances cannot push it above). Centres are taken as the lowest and
    highest of the two roundings the placement code uses, distances as the least between
    them. Row, feed, reach and spreading rules only remove placements: ignoring them keeps
    the bound valid. Returns 0 when the program has no solution or more than
    :data:`LP_MAX_COLUMNS` columns."""
    if sum(len(starts[u]) for u in sizes) > LP_MAX_COLUMNS:
        return 0.0
    geo = _Geometry(grid)
    ch = _charge(geo, sizes, starts, links)
    cols: list[tuple[int, list[int]]] = []  # (unit, covered positions) per variable
    cost: list[float] = []
    cache: dict[int, NDArray[np.float64]] = {}
    units = sorted(sizes)
    for row, u in enumerate(units):
        if sizes[u] == 1:
            c = _rack_costs(geo, ch, u, starts[u], sizes, starts, cache).tolist()
            keep = [(a, v) for a, v in zip(starts[u], c, strict=True) if math.isfinite(v)]
        else:
            keep = [(s, 0.0) for s in starts[u]]
        if not keep:
            return 0.0
        for s, v in keep:
            cols.append((row, list(range(s, s + sizes[u]))))
            cost.append(v)
    return ch.constant + _solve_lp(np.array(cost), cols, len(units), grid.n)


def _solve_lp(
    c: NDArray[np.float64], cols: list[tuple[int, list[int]]], rows: int, n: int
) -> float:
    """min ``c x`` over ``0 <= x <= 1``, one variable per (unit, positions it covers), every
    unit once, every position at most once; the bound of a dual solution (0 if infeasible)."""
    ue, ve, ui, vi = [], [], [], []
    for j, (unit, covered) in enumerate(cols):
        ue.append(unit)
        ve.append(j)
        ui += covered
        vi += [j] * len(covered)
    m = len(cols)
    a_eq = sparse.csr_matrix((np.ones(len(ue)), (ue, ve)), shape=(rows, m))
    a_ub = sparse.csr_matrix((np.ones(len(ui)), (ui, vi)), shape=(n, m))
    b_eq, b_ub = np.ones(rows), np.ones(n)
    res = linprog(c, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=(0, 1), method="highs")
    if res.status != 0:
        return 0.0
    lam = np.asarray(res.eqlin.marginals, dtype=np.float64)
    mu = np.minimum(np.asarray(res.ineqlin.marginals, dtype=np.float64), 0.0)
    reduced = c - a_eq.T @ lam - a_ub.T @ mu
    return max(0.0, float(b_eq @ lam + b_ub @ mu + np.minimum(reduced, 0.0).sum()))


# --- campus level -------------------------------------------------------------------------------


def metric_closure(cost: NDArray[np.float64]) -> NDArray[np.float64]:
    """Shortest-path costs between halls over ``cost``: never above it and, unlike a rounded
    table, always keeps the triangle inequality."""
    c = np.array(cost, dtype=np.float64)
    for k in range(c.shape[0]):
        c = np.minimum(c, c[:, k, None] + c[None, k, :])
    return c


def _spread_cost(
    mult: dict[int, float],
    dem: NDArray[np.float64],
    cap: NDArray[np.float64],
    cost_to: NDArray[np.float64],
) -> float:
    """Least cost of spreading the units of ``mult`` over the halls, fractionally, when a unit
    in hall ``h`` costs ``mult[u] * cost_to[h]`` and the halls hold ``cap`` of each resource
    (columns of ``dem``): the largest over the resources of the one-resource optimum, which
    fills the cheapest halls with the units of most cost per unit of the resource (for costs
    of this product form that order is optimal)."""
    best = 0.0
    order: list[int] = np.argsort(cost_to, kind="stable").tolist()
    units = sorted(mult)
    for r in range(dem.shape[1]):
        size = {u: float(dem[u, r]) for u in units}
        if not any(size.values()):
            continue
        room = np.maximum(cap[:, r].astype(np.float64), 0.0)
        total, at = 0.0, 0
        for u in sorted((u for u in units if size[u] > 0), key=lambda u: (-mult[u] / size[u], u)):
            need = size[u]
            while need > 1e-12 and at < len(order):
                h = order[at]
                take = min(need, float(room[h]))
                total += mult[u] * float(cost_to[h]) * take / size[u]
                room[h] -= take
                need -= take
                if room[h] <= 1e-12:
                    at += 1
        best = max(best, total)
    return best


def _star(
    root: int,
    mult: dict[int, float],
    cap: NDArray[np.float64],
    dem: NDArray[np.float64],
    allowed: list[list[int]],
    cost: NDArray[np.float64],
) -> float:
    """Least over the halls ``k`` the root may take of :func:`_spread_cost` to ``k``, with
    hall ``k`` holding the root too."""
    best = math.inf
    for k in allowed[root]:
        room = cap.copy()
        room[k] -= dem[root]
        best = min(best, _spread_cost(mult, dem, room, cost[:, k]))
    return 0.0 if math.isinf(best) else best


def campus_path_bound(
    cap: NDArray[np.float64],
    dem: NDArray[np.float64],
    allowed: list[list[int]],
    cost: NDArray[np.float64],
    links: Links,
    units: set[int],
) -> float:
    """A lower bound on the campus objective (link weight x ``cost`` between the halls of the
    groups at its ends) over every assignment of groups to allowed halls within the halls'
    capacities (``cap``: halls x resources; ``dem``: groups x resources).

    ``units`` are the scalable units; a network group linked to units is a *child* (a spine
    group), one linked only to children a *root* (a core group). Why it is valid:

    - Root ``c`` in hall ``k``, child ``s`` in ``h'``, unit ``u`` in ``h``. Give root ``c`` the
      ``c``-``s`` links (``w_cs``) and the share ``a = w_cs / sum of s's root links`` of the
      ``s``-``u`` links (``w_su``; the shares of a child's links add up to 1 over its roots),
      and split ``w_cs`` over ``s``'s units in proportion ``b_u`` of ``w_su``. With ``d`` the
      shortest-path closure of ``cost`` (:func:`metric_closure`, at most ``cost``),
      ``b_u w_cs d(h', k) + a w_su d(h, h') >= min(b_u w_cs, a w_su) d(h, k)`` by the triangle
      inequality, whatever ``h'``. Summing over the children, root ``c``'s links cost at least
      ``sum_u m_u d(h_u, k)`` with ``m_u`` the sum of those minima.
    - The units' halls respect the capacities (hall ``k`` also holds ``c``), so that sum is at
      least the least fractional spreading of the units over the halls (:func:`_spread_cost`,
      one resource at a time), and the least of that over ``c``'s allowed halls bounds
      ``c``'s links wherever ``c`` is.
    - A child with no root keeps its unit links as a star of its own, with ``cost`` itself.
    - Every link is given to one root or one star (shares adding up to at most 1), so the
      bounds add up; links between two roots, two children or two units count 0.
    """
    closure = metric_closure(cost)
    unit_w: dict[int, dict[int, int]] = defaultdict(dict)
    net: dict[int, dict[int, int]] = defaultdict(dict)
    for (a, b), w in links.items():
        if (a in units) == (b in units):
            if a not in units:
                net[a][b] = net[a].get(b, 0) + w
                net[b][a] = net[b].get(a, 0) + w
            continue
        g, u = (b, a) if a in units else (a, b)
        unit_w[g][u] = unit_w[g].get(u, 0) + w
    children = set(unit_w)
    roots = {g for g in net if g not in children and any(s in children for s in net[g])}
    total = 0.0
    for c in sorted(roots):
        mult: dict[int, float] = defaultdict(float)
        for s, w_cs in net[c].items():
            if s not in children:
                continue
            share = w_cs / sum(w for r, w in net[s].items() if r in roots)
            w_s = sum(unit_w[s].values())
            for u, w_su in unit_w[s].items():
                mult[u] += min(w_cs * w_su / w_s, share * w_su)
        total += _star(c, dict(mult), cap, dem, allowed, closure)
    for s in sorted(children):
        if not any(r in roots for r in net.get(s, {})):
            total += _star(s, {u: float(w) for u, w in unit_w[s].items()}, cap, dem, allowed, cost)
    return total


# --- what the bounds leave out ------------------------------------------------------------------

#: What a hall model's bound ignores (the larger of CP-SAT's, the star and :func:`hall_lp_bound`).
HALL_IGNORES = (
    "that a block stands in one place (each single rack is priced as if the nearest start of "
    "every block it links to were its alone), that the racks linked to one rack compete for "
    "the positions around it, and the row, feed, reach and spreading rules"
)
#: What the campus model's bound ignores (the star bound and :func:`campus_path_bound`).
CAMPUS_IGNORES = (
    "that the units linked to different spine or core groups compete for the same halls (each "
    "group's bound spreads them as if alone, fractionally) and the links between two groups "
    "of one layer"
)


def gap_note(parts: list[tuple[str, float, float]]) -> str:
    """Which models a gap comes from and what their bounds ignore, for the reader of a gap
    that is not tight: ``parts`` are (model name, objective, bound), the campus model named
    ``campus``. Empty when there is no gap."""
    total = sum(o for _, o, _ in parts)
    gap = sum(o - b for _, o, b in parts)
    if total <= 0 or gap <= 0:
        return ""
    pieces = []
    for label, mine, ignores in (
        ("the hall models'", [p for p in parts if p[0] != "campus"], HALL_IGNORES),
        ("the campus model's", [p for p in parts if p[0] == "campus"], CAMPUS_IGNORES),
    ):
        share = sum(o - b for _, o, b in mine) / total
        if mine and share > 0:
            pieces.append(f"{share * 100:.2f} points are {label} (the bound ignores {ignores})")
    return f"of the {gap / total * 100:.2f}% gap, " + "; ".join(pieces)
