"""The placement stage: fabric designs and a site in, a :class:`Placement` out."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.fabric import FabricDesign
from clusterloom.placement.artifact import LinkLengths, Placement
from clusterloom.placement.demand import Demand, build_demand, split_blocks
from clusterloom.placement.floor import FloorPlan, floor_plan
from clusterloom.placement.solve import SolveStats, assign_halls, place_hall, precheck, unit_links
from clusterloom.placement.validate import validate_placement
from clusterloom.spec import ClusterSpec, SiteSpec

__all__ = ["LinkLengths", "Placement", "check_site", "place"]


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
