"""The placement stage: fabric designs and a site in, a :class:`Placement` out."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.fabric import FabricDesign
from clusterloom.findings import Finding
from clusterloom.placement.demand import Demand, FabricDevices, build_demand, split_blocks
from clusterloom.placement.floor import FloorPlan, floor_plan
from clusterloom.placement.solve import (
    SolveStats,
    assign_halls,
    bound_quality,
    place_hall,
    precheck,
    unit_links,
)
from clusterloom.spec import ClusterSpec, SiteSpec


@dataclass(frozen=True)
class LinkLengths:
    """Floor distance of one fabric's links of one tier (metres, before vertical runs)."""

    fabric: str
    tier: int
    links: int
    total_m: float
    longest_m: float
    inter_hall: int


@dataclass(frozen=True, eq=False)
class Placement:
    """Where every rack and device stands. Arrays are read-only and indexed by rack id (into
    ``demand``) or by topology node id (``devices``).

    - ``rack_position[r]``: the floor position of rack ``r`` (into ``floor``'s positions), whose
      building, hall, row, name and x/y the floor holds;
    - ``device(fabric).node_rack[v]`` / ``node_u[v]`` / ``node_height[v]``: rack, lowest rack
      unit and height of topology node ``v`` (a backend host sits in its server);
    - ``solves``: each CP-SAT model's objective and bound (links x metres).
    """

    floor: FloorPlan
    demand: Demand
    rack_position: NDArray[np.int32]
    solves: tuple[SolveStats, ...]
    lengths: tuple[LinkLengths, ...]
    findings: tuple[Finding, ...]

    @property
    def n_racks(self) -> int:
        return self.demand.n_racks

    @property
    def objective(self) -> float:
        return sum(s.objective for s in self.solves)

    @property
    def bound(self) -> float:
        return sum(s.bound for s in self.solves)

    @property
    def gap(self) -> float:
        obj = self.objective
        return 0.0 if obj <= 0 else max(0.0, (obj - self.bound) / obj)

    @cached_property
    def free_positions(self) -> NDArray[np.int64]:
        """Per hall, the usable positions (not blocked or reserved) no rack stands on: where
        the hall can still grow."""
        f = self.floor
        free = f.free_mask().copy()
        free[self.rack_position] = False
        out: NDArray[np.int64] = np.bincount(f.pos_hall[free], minlength=f.n_halls).astype(np.int64)
        out.setflags(write=False)
        return out

    @property
    def bound_quality(self) -> str:
        """How far the gap can be trusted (:func:`~clusterloom.placement.solve.bound_quality`
        of the summed objective and bound)."""
        return bound_quality(self.gap)

    @cached_property
    def rack_names(self) -> tuple[str, ...]:
        """Each rack's name: its position's path with dashes (``b1-h1-r03-p12``)."""
        names = self.floor.pos_names
        return tuple(names[p].replace("/", "-") for p in self.rack_position.tolist())

    def device(self, fabric: str) -> FabricDevices:
        for d in self.demand.devices:
            if d.fabric == fabric:
                return d
        raise KeyError(fabric)

    def node_position(self, fabric: str) -> NDArray[np.int32]:
        """Floor position of every topology node of ``fabric``."""
        return self.rack_position[self.device(fabric).node_rack]

    def link_distance_m(self, fd: FabricDesign) -> NDArray[np.float64]:
        """Floor distance of every link of ``fd`` (metres; see :mod:`placement.floor`)."""
        pos = self.node_position(fd.name)
        t = fd.topology
        return self.floor.distance(pos[t.link_src], pos[t.link_dst])


def _lengths(placement: Placement, fabrics: tuple[FabricDesign, ...]) -> tuple[LinkLengths, ...]:
    out = []
    floor = placement.floor
    for fd in fabrics:
        d = placement.link_distance_m(fd)
        pos = placement.node_position(fd.name)
        t = fd.topology
        cross = floor.pos_hall[pos[t.link_src]] != floor.pos_hall[pos[t.link_dst]]
        for tier in range(1, fd.plan.tiers + 1):
            sel = t.link_tier == tier
            out.append(
                LinkLengths(
                    fd.name,
                    tier,
                    int(sel.sum()),
                    round(float(d[sel].sum()), 1),
                    round(float(d[sel].max()) if sel.any() else 0.0, 1),
                    int(cross[sel].sum()),
                )
            )
    return tuple(out)


def _checked_demand(
    spec: ClusterSpec, site: SiteSpec, fabrics: tuple[FabricDesign, ...]
) -> tuple[FloorPlan, Demand]:
    """The floor and the racks to place on it, after the campus-wide pre-checks."""
    floor = floor_plan(site)
    demand = build_demand(spec, fabrics)
    if site.split_units:
        longest = max((n for _, _, n in floor.free_runs()), default=0)
        demand = split_blocks(demand, longest)
    precheck(floor, demand, site)
    return floor, demand


def check_site(spec: ClusterSpec, fabrics: tuple[FabricDesign, ...]) -> None:
    """What ``place`` checks before it solves, without solving: the site has the positions,
    power, cooling, rack fit and runs the racks of ``fabrics`` need. Takes seconds where the
    placement takes minutes (``clusterloom validate``).

    Raises ``SpecError`` naming what is short and by how much.
    """
    if spec.site is None:
        raise SpecError([Problem("site", "this spec has no site section to place racks on")])
    _checked_demand(spec, spec.site, fabrics)


def place(spec: ClusterSpec, fabrics: tuple[FabricDesign, ...]) -> Placement:
    """Place the racks and devices of ``fabrics`` on ``spec``'s site.

    Raises ``SpecError`` naming what is short and by how much when the site cannot hold them.
    """
    if spec.site is None:
        raise SpecError([Problem("site", "this spec has no site section to place racks on")])
    from clusterloom.placement.validate import validate_placement

    site = spec.site
    floor, demand = _checked_demand(spec, site, fabrics)
    ends: list[tuple[NDArray[Any], NDArray[Any]]] = []
    for dev, fd in zip(demand.devices, fabrics, strict=True):
        t = fd.topology
        ends.append((dev.node_rack[t.link_src], dev.node_rack[t.link_dst]))
    links = unit_links(demand, ends)
    group_hall, campus = assign_halls(floor, demand, site, links)
    by_hall: dict[int, list[int]] = defaultdict(list)
    for u, unit in enumerate(demand.units):
        by_hall[int(group_hall[unit.group])].append(u)
    rack_position = np.full(demand.n_racks, -1, dtype=np.int32)
    solves: list[SolveStats] = [campus] if campus is not None else []
    for h in sorted(by_hall):
        starts, stats = place_hall(floor, demand, site, h, by_hall[h], links)
        solves.append(stats)
        for u, s in starts.items():
            for i, rack in enumerate(demand.units[u].racks):
                rack_position[rack] = s + i
    rack_position.setflags(write=False)
    draft = Placement(floor, demand, rack_position, tuple(solves), (), ())
    lengths = _lengths(draft, fabrics)
    draft = Placement(floor, demand, rack_position, tuple(solves), lengths, ())
    findings = validate_placement(draft, spec, fabrics)
    return Placement(floor, demand, rack_position, tuple(solves), lengths, tuple(findings))
