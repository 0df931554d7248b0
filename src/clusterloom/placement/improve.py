"""Local search after a hall model: exchange the contents of two rows, move a single rack to a
free position or swap two, while that lowers the cable and keeps every rule of the hall model.

CP-SAT, within its deterministic effort, often returns its greedy start unchanged on large
halls (131k: 72 units on 360 positions). A rack's cost at every position is a vector over the
positions (links x metres to the centres of what it links to, links leaving the hall from the
door), so the best move or swap of each rack is read from those vectors; a candidate is taken
only if it keeps the rules the model enforces (allowed positions, no overlap, row, feed and
loop budgets, planes of a scalable unit per feed, a spine or core layer over its feeds, reach
computed as the model computes it). Row exchanges come first (each the best of all pairs of
rows of one shape, re-checked in full), then racks are visited in id order and the best
improving candidate taken, pass after pass, so the result is deterministic.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from clusterloom.placement.demand import Demand, plane_key
from clusterloom.placement.floor import FloorPlan
from clusterloom.spec.site import SiteSpec

#: Passes over the racks at most (each takes a rack's best improving move or swap).
MAX_PASSES = 12


@dataclass
class _State:
    """Where each unit stands (local start), what covers each position, the loads taken."""

    at: dict[int, int]
    owner: dict[int, int]
    load: dict[tuple[str, int], float] = field(default_factory=lambda: defaultdict(float))
    planes: dict[tuple[str, int], dict[int, int]] = field(default_factory=dict)
    feeds: dict[str, dict[int, int]] = field(default_factory=dict)


class _Hall:
    """One hall's geometry, rules and link lists for the search."""

    def __init__(
        self,
        floor: FloorPlan,
        demand: Demand,
        site: SiteSpec,
        h: int,
        pos: NDArray[np.int64],
        units: list[int],
        links: dict[tuple[int, int], int],
        dm: int,
    ) -> None:
        self.floor, self.demand, self.site, self.dm = floor, demand, site, dm
        self.x = np.round(floor.pos_x[pos] * dm) / dm
        self.y = np.round(floor.pos_y[pos] * dm) / dm
        self.raw_x, self.raw_y = floor.pos_x[pos], floor.pos_y[pos]
        self.row = floor.pos_row[pos].astype(np.int64)
        self.door = floor.hall_door[h]
        self.size = {u: len(demand.units[u].racks) for u in units}
        self.power = {
            u: float(demand.rack_power_w[list(demand.units[u].racks)].sum()) for u in units
        }
        self.nbr: dict[int, list[tuple[int, int]]] = defaultdict(list)
        self.ext: dict[int, int] = defaultdict(int)
        inside = set(units)
        for (a, b), w in links.items():
            if a in inside and b in inside:
                self.nbr[a].append((b, w))
                self.nbr[b].append((a, w))
            elif a in inside or b in inside:
                self.ext[a if a in inside else b] += w
        self.layer_need: dict[str, int] = {}
        hall_feeds = len(set(floor.row_feed[self.row].tolist()))
        members: dict[str, int] = defaultdict(int)
        for u in units:
            key = demand.units[u].spread_key
            if key and ":block:" not in key:
                members[key] += 1
        for key, n in members.items():
            self.layer_need[key] = min(site.spread.spine_feeds, n, hall_feeds)

    def feed(self, a: int) -> int:
        return int(self.floor.row_feed[self.row[a]])

    def centre(self, u: int, a: int) -> tuple[float, float]:
        k = self.size[u]
        return (
            round(float(self.raw_x[a : a + k].mean()) * self.dm) / self.dm,
            round(float(self.raw_y[a : a + k].mean()) * self.dm) / self.dm,
        )

    def cost_vector(self, u: int, st: _State) -> NDArray[np.float64]:
        """Rack ``u``'s links x metres at every position, the others where they stand."""
        c = self.ext.get(u, 0) * (np.abs(self.x - self.door[0]) + np.abs(self.y - self.door[1]))
        for v, w in self.nbr.get(u, []):
            cx, cy = self.centre(v, st.at[v])
            c = c + w * (np.abs(self.x - cx) + np.abs(self.y - cy))
        return c  # type: ignore[no-any-return]


def _limit(floor: FloorPlan, kind: str, i: int) -> float:
    """The budget of row, feed or loop ``i`` (watts; a row's the least of power and cooling)."""
    if kind == "row":
        return float(min(floor.row_power_w[i], floor.row_cooling_w[i]))
    return float(floor.feed_power_w[i] if kind == "feed" else floor.loop_cooling_w[i])


def _budget_ok(hall: _Hall, st: _State, moves: list[tuple[int, int, int]]) -> bool:
    """Whether moving units (unit, from, to) keeps every row, feed and loop budget."""
    floor = hall.floor
    delta: dict[tuple[str, int], float] = defaultdict(float)
    for u, a, b in moves:
        for sign, p in ((-1.0, a), (1.0, b)):
            r = int(hall.row[p])
            delta[("row", r)] += sign * hall.power[u]
            delta[("feed", int(floor.row_feed[r]))] += sign * hall.power[u]
            delta[("loop", int(floor.row_loop[r]))] += sign * hall.power[u]
    for (kind, i), d in delta.items():
        if d <= 1e-9:
            continue
        if st.load[(kind, i)] + d > _limit(floor, kind, i) + 1e-6:
            return False
    return True


def _spread_ok(hall: _Hall, st: _State, moves: list[tuple[int, int, int]]) -> bool:
    """Planes of a scalable unit per feed and a layer's feeds, after the moves."""
    demand, ppf = hall.demand, hall.site.spread.planes_per_feed
    planes = {k: dict(v) for k, v in st.planes.items()}
    feeds = {k: dict(v) for k, v in st.feeds.items()}
    for u, a, b in moves:
        unit = demand.units[u]
        pkey = plane_key(unit)
        if pkey:
            for sign, p in ((-1, a), (1, b)):
                on = planes.setdefault((pkey, hall.feed(p)), {})
                on[unit.plane] = on.get(unit.plane, 0) + sign
        if unit.spread_key in hall.layer_need:
            used = feeds.setdefault(unit.spread_key, {})
            used[hall.feed(a)] = used.get(hall.feed(a), 0) - 1
            used[hall.feed(b)] = used.get(hall.feed(b), 0) + 1
    touched = {plane_key(demand.units[u]) for u, _, _ in moves} - {""}
    layers = {demand.units[u].spread_key for u, _, _ in moves} & set(hall.layer_need)
    for (pkey, _), on in planes.items():
        if pkey in touched and sum(1 for n in on.values() if n > 0) > ppf:
            return False
    return all(
        sum(1 for n in feeds.get(key, {}).values() if n > 0) >= hall.layer_need[key]
        for key in layers
        if hall.layer_need[key] > 1
    )


def _reach_ok(hall: _Hall, st: _State, moved: dict[int, int], pitch_dm: float) -> bool:
    """Reach of every unit that moved, or that has a reach to one that moved, as the model
    computes it (centres on the decimetre grid, the other unit's half length taken off)."""
    demand, dm = hall.demand, hall.dm
    gx, gy = np.round(hall.raw_x * dm), np.round(hall.raw_y * dm)

    def c(u: int) -> tuple[int, int]:
        a, k = moved.get(u, st.at[u]), hall.size[u]
        return round(float(gx[a : a + k].mean())), round(float(gy[a : a + k].mean()))

    for u in st.at:
        for v, metres in demand.units[u].reach:
            if v not in st.at or (u not in moved and v not in moved):
                continue
            half = math.ceil((hall.size[v] - 1) / 2 * pitch_dm)
            limit = math.floor((metres - hall.site.reach_allowance_m) * dm) - half
            (xu, yu), (xv, yv) = c(u), c(v)
            if abs(xu - xv) + abs(yu - yv) > max(limit, -1):
                return False
    return True


def _state(hall: _Hall, start: dict[int, int]) -> _State:
    st = _State(dict(start), {})
    for u, a in start.items():
        for i in range(hall.size[u]):
            st.owner[a + i] = u
        _apply(hall, st, u, None, a)
    return st


def _apply(hall: _Hall, st: _State, u: int, a: int | None, b: int) -> None:
    """Book unit ``u`` moving from ``a`` (None: newly placed) to ``b``."""
    floor, unit = hall.floor, hall.demand.units[u]
    pkey = plane_key(unit)
    for sign, p in ((-1, a), (1, b)):
        if p is None:
            continue
        r = int(hall.row[p])
        for kind, i in (
            ("row", r),
            ("feed", int(floor.row_feed[r])),
            ("loop", int(floor.row_loop[r])),
        ):
            st.load[(kind, i)] += sign * hall.power[u]
        if pkey:
            on = st.planes.setdefault((pkey, hall.feed(p)), {})
            on[unit.plane] = on.get(unit.plane, 0) + sign
        if unit.spread_key in hall.layer_need:
            used = st.feeds.setdefault(unit.spread_key, {})
            used[hall.feed(p)] = used.get(hall.feed(p), 0) + sign
    st.at[u] = b


def _candidates(
    hall: _Hall,
    st: _State,
    u: int,
    allowed: NDArray[np.bool_],
    singles: list[int],
    vec: dict[int, NDArray[np.float64]],
) -> list[tuple[float, int, int]]:
    """(gain, position, partner or -1) of every move or swap of ``u`` that lowers the cable,
    best first. Swapping ``u`` (at ``a``) with ``v`` (at ``b``) gains
    ``c_u(a) - c_u(b) + c_v(b) - c_v(a) - 2 w_uv d(a, b)``: the link between them keeps its
    length, but each cost vector counts it from the other's old place."""
    a = st.at[u]
    cu = vec[u]
    out: list[tuple[float, int, int]] = []
    empty = np.ones(hall.x.shape[0], dtype=bool)
    empty[list(st.owner)] = False
    gains = cu[a] - cu
    for p in np.flatnonzero(empty & allowed & (gains > 1e-6)).tolist():
        out.append((float(gains[p]), p, -1))
    w_uv = dict(hall.nbr.get(u, []))
    for v in singles:
        b = st.at[v]
        if v == u or not allowed[b]:
            continue
        d = abs(hall.x[a] - hall.x[b]) + abs(hall.y[a] - hall.y[b])
        gain = float(cu[a] - cu[b] + vec[v][b] - vec[v][a] - 2 * w_uv.get(v, 0) * d)
        if gain > 1e-6:
            out.append((gain, b, v))
    out.sort(key=lambda t: (-t[0], t[1], t[2]))
    return out


def _valid(hall: _Hall, at: dict[int, int], starts: dict[int, list[int]], pitch_dm: float) -> bool:
    """Every rule of the hall model for a whole placement (unit -> local start)."""
    if any(at[u] not in starts[u] for u in at):
        return False
    covered = [p for u, a in at.items() for p in range(a, a + hall.size[u])]
    if len(covered) != len(set(covered)):
        return False
    st = _state(hall, at)
    floor, ppf = hall.floor, hall.site.spread.planes_per_feed
    if any(load > _limit(floor, kind, i) + 1e-6 for (kind, i), load in st.load.items()):
        return False
    if any(sum(1 for n in on.values() if n > 0) > ppf for on in st.planes.values()):
        return False
    for key, need in hall.layer_need.items():
        if need > 1 and sum(1 for n in st.feeds.get(key, {}).values() if n > 0) < need:
            return False
    return _reach_ok(hall, st, dict(at), pitch_dm)


def _row_swaps(
    hall: _Hall,
    at: dict[int, int],
    starts: dict[int, list[int]],
    links: dict[tuple[int, int], int],
    pitch_dm: float,
) -> dict[int, int] | None:
    """The best exchange of the whole contents of two rows of equal shape (each unit keeps its
    place in the row) that lowers the cable and keeps every rule; None when none does."""
    rows: dict[int, list[int]] = defaultdict(list)
    for p in range(hall.x.shape[0]):
        rows[int(hall.row[p])].append(p)
    keys = sorted(rows)
    base = _cable(hall, at, links)
    best: tuple[float, dict[int, int]] | None = None
    for i, ra in enumerate(keys):
        for rb in keys[i + 1 :]:
            pa, pb = rows[ra], rows[rb]
            if len(pa) != len(pb) or not np.allclose(hall.raw_x[pa], hall.raw_x[pb]):
                continue
            swap = dict(zip(pa, pb, strict=True)) | dict(zip(pb, pa, strict=True))
            trial = {u: swap.get(a, a) for u, a in at.items()}
            gain = base - _cable(hall, trial, links)
            if (
                gain > 1e-6
                and (best is None or gain > best[0])
                and _valid(hall, trial, starts, pitch_dm)
            ):
                best = (gain, trial)
    return None if best is None else best[1]


def _cable(hall: _Hall, at: dict[int, int], links: dict[tuple[int, int], int]) -> float:
    """The hall objective (links x metres) of a placement given by local starts."""
    total = 0.0
    for u, a in at.items():
        cx, cy = hall.centre(u, a)
        total += hall.ext.get(u, 0) * (abs(cx - hall.door[0]) + abs(cy - hall.door[1]))
        for v, w in hall.nbr.get(u, []):
            if v < u:
                continue
            vx, vy = hall.centre(v, at[v])
            total += w * (abs(cx - vx) + abs(cy - vy))
    return total


def improve_singles(
    hall: _Hall,
    starts: dict[int, list[int]],
    links: dict[tuple[int, int], int],
    placed: dict[int, int],
    pitch_dm: float,
) -> dict[int, int]:
    """``placed`` (unit -> local start) after the search: rows exchanged (when ``placed``
    keeps every rule; a block moves only with its row), then single racks moved or swapped,
    while the cable falls and every rule of the hall model holds."""
    st = _state(hall, placed)
    singles = sorted(u for u in placed if hall.size[u] == 1)
    n = hall.x.shape[0]
    allowed: dict[int, NDArray[np.bool_]] = {}
    for u in singles:
        mask = np.zeros(n, dtype=bool)
        mask[starts[u]] = True
        allowed[u] = mask
    if _valid(hall, dict(st.at), starts, pitch_dm):
        for _ in range(MAX_PASSES):
            swapped = _row_swaps(hall, dict(st.at), starts, links, pitch_dm)
            if swapped is None:
                break
            st = _state(hall, swapped)
    vec = {u: hall.cost_vector(u, st) for u in singles}
    for _ in range(MAX_PASSES):
        changed = False
        for u in singles:
            for _gain, p, v in _candidates(hall, st, u, allowed[u], singles, vec)[:40]:
                a = st.at[u]
                if v >= 0 and not allowed[v][a]:
                    continue
                moves = [(u, a, p)] + ([(v, p, a)] if v >= 0 else [])
                moved = {x: b for x, _, b in moves}
                if not (
                    _budget_ok(hall, st, moves)
                    and _spread_ok(hall, st, moves)
                    and _reach_ok(hall, st, moved, pitch_dm)
                ):
                    continue
                for x, frm, to in moves:
                    _apply(hall, st, x, frm, to)
                if v < 0:
                    del st.owner[a]
                for x, to in moved.items():
                    st.owner[to] = x
                for x in {y for m in moved for y, _ in hall.nbr.get(m, [])} | set(moved):
                    if x in vec:
                        vec[x] = hall.cost_vector(x, st)
                changed = True
                break
        if not changed:
            break
    return dict(st.at)


def polish(
    floor: FloorPlan,
    demand: Demand,
    site: SiteSpec,
    h: int,
    units: list[int],
    starts: dict[int, list[int]],
    links: dict[tuple[int, int], int],
    placed: dict[int, int],
    objective: float,
    *,
    dm: int,
    pitch_dm: float,
) -> tuple[dict[int, int], float]:
    """A hall model's placement (unit -> global position of its start) and objective, after
    :func:`improve_singles` when that lowers the objective (else as given): rows exchanged
    and single racks moved or swapped, every rule of the model kept."""
    pos = floor.hall_positions(h)
    local = {int(g): a for a, g in enumerate(pos.tolist())}
    hall = _Hall(floor, demand, site, h, pos, units, links, dm)
    better = improve_singles(
        hall, starts, links, {u: local[g] for u, g in placed.items()}, pitch_dm
    )
    cost = _cable(hall, better, links)
    if cost < objective - 1e-6:
        return {u: int(pos[a]) for u, a in better.items()}, cost
    return placed, objective
