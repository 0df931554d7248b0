"""The placement stage: fabric designs and a site in, a :class:`Placement` out."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.fabric import FabricDesign
from clusterloom.findings import Finding, Severity
from clusterloom.placement.artifact import LinkLengths, Placement
from clusterloom.placement.demand import Demand, build_demand, split_blocks
from clusterloom.placement.floor import FloorPlan, floor_plan
from clusterloom.placement.solve import (
    SolveStats,
    assign_halls,
    place_hall,
    precheck,
    start_allowed,
    unit_links,
)
from clusterloom.placement.validate import validate_placement
from clusterloom.spec import ClusterSpec, SiteSpec

__all__ = ["LinkLengths", "Placement", "check_site", "moved_racks", "place"]


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
    spec: ClusterSpec,
    site: SiteSpec,
    fabrics: tuple[FabricDesign, ...],
    fixed: Mapping[str, str] | None = None,
) -> tuple[FloorPlan, Demand]:
    """The floor and the racks to place on it, after the campus-wide pre-checks (a block grown
    from an installed one cut after its installed racks)."""
    floor = floor_plan(site)
    demand = build_demand(spec, fabrics)
    if site.split_units or fixed:
        taken = None
        if fixed:  # a new block must fit between the installed racks
            at = {name.replace("/", "-"): i for i, name in enumerate(floor.pos_names)}
            taken = np.zeros(floor.n_positions, dtype=bool)
            taken[[at[r] for r in fixed.values() if r in at]] = True
        longest = max((n for _, _, n in floor.free_runs(taken)), default=0)
        empty = max((n for _, _, n in floor.free_runs(None)), default=0)
        split = site.split_units
        demand = split_blocks(demand, longest if split else 0, fixed, empty if split else 0)
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


def _pins(floor: FloorPlan, demand: Demand, fixed: Mapping[str, str]) -> dict[int, int]:
    """Unit -> start position of every unit whose installed racks stand where ``fixed`` (rack
    label -> rack name, ``b1-h1-r01-p07``) puts them, in order from the unit's start."""
    at = {name.replace("/", "-"): i for i, name in enumerate(floor.pos_names)}
    pins: dict[int, int] = {}
    for u, unit in enumerate(demand.units):
        first = fixed.get(demand.rack_label[unit.racks[0]])
        if first is None or first not in at:
            continue
        s = at[first]
        if all(
            fixed.get(demand.rack_label[r]) in (None, floor.pos_names[s + i].replace("/", "-"))
            if s + i < len(floor.pos_names)
            else False
            for i, r in enumerate(unit.racks)
        ):
            pins[u] = s
    # a unit that cannot keep its start (a grown block running past its row or over another
    # installed rack) is not pinned: it moves, the others stay
    taken = {at[r]: lab for lab, r in fixed.items() if r in at}
    for u, s in list(pins.items()):
        unit = demand.units[u]
        own = {demand.rack_label[r] for r in unit.racks}
        over = any(s + i in taken and taken[s + i] not in own for i in range(len(unit.racks)))
        if over or not start_allowed(floor, demand, unit, s):
            del pins[u]
    return pins


def _stuck(floor: FloorPlan, demand: Demand, fixed: Mapping[str, str]) -> int:
    """Installed racks whose unit cannot keep its start (they must move)."""
    pinned = _pins(floor, demand, fixed)
    return sum(
        1
        for u, unit in enumerate(demand.units)
        if u not in pinned and demand.rack_label[unit.racks[0]] in fixed
        for r in unit.racks
        if demand.rack_label[r] in fixed
    )


def moved_racks(placement: Placement, fixed: Mapping[str, str]) -> list[tuple[str, str, str]]:
    """(rack label, installed position, new position) of every installed rack that moved."""
    names = placement.rack_names
    return [
        (label, fixed[label], names[r])
        for r, label in enumerate(placement.demand.rack_label)
        if label in fixed and fixed[label] != names[r]
    ]


def _moves_finding(moved: list[tuple[str, str, str]], why: str) -> Finding:
    shown = ", ".join(f"{lab} {a} -> {b}" for lab, a, b in moved[:20])
    more = f" and {len(moved) - 20} more" if len(moved) > 20 else ""
    return Finding(
        Severity.WARNING,
        "installed-rack-moved",
        f"the site cannot hold the growth with every installed rack in place ({why}): "
        f"{len(moved)} installed rack(s) move: {shown}{more}",
        "placement",
    )


def place(
    spec: ClusterSpec,
    fabrics: tuple[FabricDesign, ...],
    *,
    fixed: Mapping[str, str] | None = None,
) -> Placement:
    """Place the racks and devices of ``fabrics`` on ``spec``'s site. ``fixed`` (rack label ->
    installed rack name) keeps installed racks where they stand; when the site cannot hold the
    growth so, they are placed afresh and a finding lists the moves.

    Raises ``SpecError`` naming what is short and by how much when the site cannot hold them.
    """
    if fixed and spec.site is not None:
        floor, demand = _checked_demand(spec, spec.site, fabrics, fixed)
        stuck = _stuck(floor, demand, fixed)
        try:
            pinned = replace(_place(spec, fabrics, fixed), forced_moves=stuck)
            moved = moved_racks(pinned, fixed)
            if not moved:
                return pinned
            why = (
                "a unit that grew cannot keep its start: it would run past its row, over "
                "another installed rack or onto a position that cannot hold it"
            )
            return replace(pinned, findings=(*pinned.findings, _moves_finding(moved, why)))
        except SpecError as exc:
            free = replace(_place(spec, fabrics, fixed, soft=True), forced_moves=stuck + 1)
            moved = moved_racks(free, fixed)
            why = "; ".join(p.message for p in exc.problems)
            return replace(free, findings=(*free.findings, _moves_finding(moved, why)))
    return _place(spec, fabrics, None)


def _place(
    spec: ClusterSpec,
    fabrics: tuple[FabricDesign, ...],
    fixed: Mapping[str, str] | None,
    *,
    soft: bool = False,
) -> Placement:
    if spec.site is None:
        raise SpecError([Problem("site", "this spec has no site section to place racks on")])
    site = spec.site
    floor, demand = _checked_demand(spec, site, fabrics, fixed)
    ends: list[tuple[NDArray[Any], NDArray[Any]]] = []
    for dev, fd in zip(demand.devices, fabrics, strict=True):
        t = fd.topology
        ends.append((dev.node_rack[t.link_src], dev.node_rack[t.link_dst]))
    links = unit_links(demand, ends)
    pins = _pins(floor, demand, fixed) if fixed else {}
    group_hall, campus = assign_halls(floor, demand, site, links)
    group_hall = group_hall.copy()
    for u, at in pins.items():  # an installed unit stays in its hall
        group_hall[demand.units[u].group] = floor.pos_hall[at]
    by_hall: dict[int, list[int]] = defaultdict(list)
    for u, unit in enumerate(demand.units):
        by_hall[int(group_hall[unit.group])].append(u)
    rack_position = np.full(demand.n_racks, -1, dtype=np.int32)
    solves: list[SolveStats] = [campus] if campus is not None else []
    for h in sorted(by_hall):
        mine = {u: pins[u] for u in by_hall[h] if u in pins}
        starts, stats = place_hall(floor, demand, site, h, by_hall[h], links, mine, soft)
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
