"""The change plan's links in waves that keep capacity (docs/growth.md, "The change plan").

The links to drain (installed links to re-patch or re-pull) are split into *waves*; each wave
is drained, taken off, re-pulled and restored before the next starts, so after every step each
installed switch keeps at least ``growth.min_live_uplinks`` of its installed uplink Gb/s live
(leaves towards spines, spines towards cores) and each installed host keeps a live link.

Every drained link costs the budget of one *resource*, its lower end: a switch's uplinks, or a
host's links (a host keeps one). A resource starts a wave with its live Gb/s; the wave may
drain down to its floor; after the wave its removed links are gone and the new links whose
ports the wave (and earlier ones) freed are live; the new links that need no drain are live
after the first wave's restore.

Rack moves: every link of a moved rack is drained at once, so the moved racks (joined when a
link runs between two of them) each make a wave of their own, after the others; what that wave
cuts is forced by the move, not by the packing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from clusterloom.fabric.topology import Role
from clusterloom.growth.drained import LinkTable

__all__ = ["Packing", "Waves", "pack_waves", "plan_waves"]

_EPS = 1e-9


@dataclass(frozen=True)
class Packing:
    """A packing problem in plain arrays (what :func:`pack_waves` solves).

    Drained links ``i``: ``res[i]`` the resource whose budget they cost, ``cost[i]``, and
    ``removed[i]`` (gone after its wave; else restored). Resources ``r``: ``live[r]`` at the
    start and ``floor[r]``, the least that must stay live (a wave keeps ``live - drained >=
    floor``). New links ``j``: ``gain_res[j]`` (-1: none), ``gain[j]`` and ``deps[j]``, the
    drained links whose ports they take (live after the wave of the last); ``fresh[r]``: Gb/s of
    new links needing no drain, live after the first wave."""

    res: NDArray[np.int64]
    cost: NDArray[np.float64]
    removed: NDArray[np.bool_]
    live: NDArray[np.float64]
    floor: NDArray[np.float64]
    gain_res: NDArray[np.int64]
    gain: NDArray[np.float64]
    deps: tuple[tuple[int, ...], ...]
    fresh: NDArray[np.float64]


def pack_waves(p: Packing) -> tuple[NDArray[np.int64], NDArray[np.bool_]]:
    """Each drained link's wave (from 1) and whether it was forced over its resource's floor.

    Greedy: wave after wave, each resource drains the longest prefix of its links (in index
    order: the plan's, taken-off links first) that keeps it at its floor. A resource that
    can drain nothing waits for a later wave (its budget may grow by refills); when no
    resource can drain anything, each stuck resource drains one link anyway (forced: nothing
    a later wave brings would make room).

    Why it gives the least waves: when every link of a resource has one cost and every new link
    refills the resource of its one drained link by that link's cost (a re-patch in place, as
    every growth step of the examples makes), each resource starts every wave with the same
    live Gb/s whatever was drained before, so its budget per wave ``b_r`` is fixed and no plan
    drains more than ``floor(b_r / c_r)`` of its links in a wave; the resources share no
    budget, so the least number of waves of any plan is the largest over resources of
    ``ceil(d_r / floor(b_r / c_r))``, which the greedy reaches for each resource at once
    (``tests/growth/test_waves.py`` checks it against a brute-force minimum). Otherwise (mixed
    speeds on one switch, links removed without a replacement, refills needing another
    resource's drain) it is a heuristic: every floor is kept but where a link is forced (tested
    on generated cases), the number of waves not proven least."""
    n = p.res.shape[0]
    wave = np.zeros(n, dtype=np.int64)
    forced = np.zeros(n, dtype=bool)
    live = p.live.astype(np.float64).copy()
    left_deps = np.array([len(d) for d in p.deps], dtype=np.int64)
    users: dict[int, list[int]] = {}
    for j, d in enumerate(p.deps):
        for i in d:
            users.setdefault(i, []).append(j)
    w = 0
    while (wave == 0).any():
        w += 1
        todo = np.flatnonzero(wave == 0)
        todo = todo[np.lexsort((todo, p.res[todo]))]
        r = p.res[todo]
        start = np.r_[True, r[1:] != r[:-1]]
        cum = np.cumsum(p.cost[todo])
        base = np.maximum.accumulate(np.where(start, np.arange(len(todo)), 0))
        within = cum - (cum[base] - p.cost[todo][base])
        take = within <= live[r] - p.floor[r] + _EPS
        if not take.any():
            take = start.copy()
            forced[todo[take]] = True
        chosen = todo[take]
        wave[chosen] = w
        gone = chosen[p.removed[chosen]]
        np.subtract.at(live, p.res[gone], p.cost[gone])
        for i in chosen.tolist():
            for j in users.get(i, ()):
                left_deps[j] -= 1
                if left_deps[j] == 0 and p.gain_res[j] >= 0:
                    live[p.gain_res[j]] += p.gain[j]
        if w == 1:
            live += p.fresh
    return wave, forced


@dataclass(frozen=True)
class Waves:
    """The links of a change plan by wave: ``drained[w]`` (removed and re-pulled installed
    links, by name), ``pulled[w]`` (new links), ``racks[w]`` (the moved racks, ``(label, from,
    to)``); wave 0 holds the new links needing no drain (the first pull). ``forced``: the
    drained links the packing had to take over a floor (outside rack moves)."""

    drained: tuple[tuple[str, ...], ...]
    pulled: tuple[tuple[str, ...], ...]
    racks: tuple[tuple[tuple[str, str, str], ...], ...]
    forced: tuple[str, ...]

    @property
    def count(self) -> int:
        """Waves that drain links (wave 0 drains none)."""
        return len(self.drained) - 1


def _device(end: str) -> str:
    return end.split(":", 1)[0]


def _move_groups(
    names: Sequence[str], moved: Mapping[str, str], labels: Sequence[str]
) -> tuple[dict[str, int], list[list[str]]]:
    """Moved racks joined by links running between them: rack label -> group, groups in order."""
    parent = {lab: lab for lab in sorted({*moved.values(), *labels})}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for name in names:
        labs = {moved[d] for d in map(_device, name.split("~")) if d in moved}
        first, *rest = sorted(labs) or [""]
        for other in rest:
            parent[find(other)] = find(first)
    roots = sorted({find(x) for x in parent})
    groups = [[lab for lab in sorted(parent) if find(lab) == root] for root in roots]
    return {lab: k for k, g in enumerate(groups) for lab in g}, groups


def _resources(
    table: LinkTable, rows: NDArray[np.int64], floor: float
) -> tuple[NDArray[np.int64], NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Per row its resource (its lower end) and cost; per resource its live and floor."""
    lo = table.lo[rows]
    node_res, res = np.unique(lo, return_inverse=True)
    host = table.role[node_res] == int(Role.HOST)
    unit = np.where(host[res], 1.0, table.gbps[rows])
    base = table.base
    count = np.bincount(table.lo[base], minlength=len(table.nodes)).astype(np.float64)
    gbps = np.bincount(table.lo[base], weights=table.gbps[base], minlength=len(table.nodes))
    live = np.where(host, count[node_res], gbps[node_res])
    floors = np.where(host, 1.0, np.maximum(floor * live - _EPS, _EPS))
    return res.astype(np.int64), unit, live, floors


def plan_waves(
    table: LinkTable,
    removed: Sequence[str],
    repulled: Sequence[str],
    added: Sequence[str],
    moved: Mapping[str, str],
    moved_racks: Sequence[tuple[str, str, str]],
    floor: float,
) -> Waves:
    """The waves of a change plan (module docstring): ``moved`` maps each device of a moved
    rack to the rack's label; ``floor`` is ``growth.min_live_uplinks``."""
    drained = [*removed, *repulled]
    group_of, groups = _move_groups([*drained, *added], moved, [r[0] for r in moved_racks])
    in_move = [
        min((group_of[moved[d]] for d in map(_device, n.split("~")) if d in moved), default=-1)
        for n in drained
    ]
    free = [k for k, g in enumerate(in_move) if g < 0]
    rows = np.array([table.index[drained[k]] for k in free], dtype=np.int64)
    res, cost, live, floors = _resources(table, rows, floor)
    node_res = {int(v): r for r, v in enumerate(np.unique(table.lo[rows]).tolist())}
    freed = {e: k for k, name in enumerate(drained[: len(removed)]) for e in name.split("~")}
    position = {k: q for q, k in enumerate(free)}
    gain_res, gain, deps, fresh = [], [], [], np.zeros(len(live))
    new_deps: list[list[int]] = []
    for name in added:
        mine = sorted({freed[e] for e in name.split("~") if e in freed})
        new_deps.append(mine)
        row = table.index[name]
        r = node_res.get(int(table.lo[row]), -1)
        g = 1.0 if r >= 0 and table.role[table.lo[row]] == int(Role.HOST) else table.gbps[row]
        free_deps = tuple(position[k] for k in mine if k in position)
        if not mine and r >= 0 and not any(_device(e) in moved for e in name.split("~")):
            fresh[r] += g
        gain_res.append(r if len(free_deps) == len(mine) else -1)
        gain.append(float(g))
        deps.append(free_deps)
    packing = Packing(
        res,
        cost,
        np.array([k < len(removed) for k in free], dtype=bool),
        live,
        floors,
        np.array(gain_res, dtype=np.int64),
        np.array(gain, dtype=np.float64),
        tuple(deps),
        fresh,
    )
    wave_of, forced = pack_waves(packing)
    n_free = int(wave_of.max(initial=0))
    link_wave = np.zeros(len(drained), dtype=np.int64)
    link_wave[free] = wave_of
    for k, g in enumerate(in_move):
        if g >= 0:
            link_wave[k] = n_free + 1 + g
    n = n_free + len(groups)
    out_drained: list[list[str]] = [[] for _ in range(n + 1)]
    for k, name in enumerate(drained):
        out_drained[int(link_wave[k])].append(name)
    out_pulled: list[list[str]] = [[] for _ in range(n + 1)]
    for name, mine in zip(added, new_deps, strict=True):
        w = max((int(link_wave[k]) for k in mine), default=0)
        touch = [group_of[moved[d]] for d in map(_device, name.split("~")) if d in moved]
        if touch:
            w = max(w, n_free + 1 + min(touch))
        out_pulled[w].append(name)
    racks: list[list[tuple[str, str, str]]] = [[] for _ in range(n + 1)]
    for rack in moved_racks:
        racks[n_free + 1 + group_of[rack[0]]].append(rack)
    return Waves(
        tuple(tuple(x) for x in out_drained),
        tuple(tuple(x) for x in out_pulled),
        tuple(tuple(x) for x in racks),
        tuple(drained[free[q]] for q in np.flatnonzero(forced).tolist()),
    )
