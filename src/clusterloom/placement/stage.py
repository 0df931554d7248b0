"""The placement stage: fabric designs and a site in, a :class:`Placement` out."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.fabric import FabricDesign
from clusterloom.findings import Finding, Severity
from clusterloom.placement.artifact import LinkLengths, Placement
from clusterloom.placement.demand import (
    Demand,
    build_demand,
    in_rack_power_problems,
    split_blocks,
)
from clusterloom.placement.floor import BLOCKED, FREE, FloorPlan, floor_plan
from clusterloom.placement.halls import solve_halls
from clusterloom.placement.solve import (
    SolveStats,
    assign_halls,
    precheck,
    start_allowed,
    unit_links,
)
from clusterloom.placement.validate import validate_placement
from clusterloom.spec import ClusterSpec, SiteSpec

if TYPE_CHECKING:
    from clusterloom.exec import Executor

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
    whole = floor_plan(site)
    floor = _frozen_floor(whole, spec, fixed)
    demand = build_demand(spec, fabrics)
    free = floor.pos_state == FREE
    most_w = float(floor.pos_power_w[free].max()) if free.any() else 0.0
    in_rack = in_rack_power_problems(spec, demand, most_w)
    if in_rack:
        raise SpecError(in_rack)
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
    try:
        precheck(floor, demand, site)
    except SpecError as exc:
        closed = int((floor.pos_state != whole.pos_state).sum())
        if not closed:
            raise
        raise SpecError([*exc.problems, _frozen_problem(closed)]) from exc
    return floor, demand


def _frozen_problem(closed: int) -> Problem:
    return Problem(
        "growth.frozen",
        f"{closed:,} free positions of the frozen halls and rows take no new rack; "
        "unfreeze one or free room elsewhere",
    )


def _closed(floor: FloorPlan, spec: ClusterSpec) -> int:
    """Positions of the frozen parts that ``_frozen_floor`` closed (blocked, free on the site)."""
    assert spec.site is not None
    return int((floor.pos_state != floor_plan(spec.site).pos_state).sum())


def frozen_positions(floor: FloorPlan, spec: ClusterSpec) -> NDArray[np.bool_]:
    """Positions in the spec's frozen halls and rows (``growth.frozen``)."""
    frozen = spec.growth.frozen if spec.growth is not None else None
    if frozen is None or not (frozen.halls or frozen.rows):
        return np.zeros(floor.n_positions, dtype=bool)
    halls = np.isin(np.array(floor.hall_names), np.array(frozen.halls, dtype=str))
    rows = np.isin(np.array(floor.row_names), np.array(frozen.rows, dtype=str))
    return halls[floor.pos_hall] | rows[floor.pos_row]


def _frozen_floor(
    floor: FloorPlan, spec: ClusterSpec, fixed: Mapping[str, str] | None
) -> FloorPlan:
    """``floor`` with every free position of a frozen hall or row that no installed rack holds
    blocked: growth puts no new rack there (without ``fixed``, nothing is installed to keep and
    the floor is unchanged)."""
    if not fixed:
        return floor
    frozen = frozen_positions(floor, spec)
    if not frozen.any():
        return floor
    held = np.isin(np.char.replace(np.array(floor.pos_names), "/", "-"), list(fixed.values()))
    state = floor.pos_state.copy()
    state[frozen & ~held & (state == FREE)] = BLOCKED
    state.setflags(write=False)
    return replace(floor, pos_state=state)


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
    executor: Executor | None = None,
) -> Placement:
    """Place the racks and devices of ``fabrics`` on ``spec``'s site. ``fixed`` (rack label ->
    installed rack name) keeps installed racks where they stand; when the site cannot hold the
    growth so, they are placed afresh and a finding lists the moves. Installed racks in a
    frozen hall or row (``growth.frozen``) stay even then, and no new rack goes there; when
    even that cannot hold, they move too and an error finding names them. ``executor`` solves
    the hall models as tasks on it (``placement.halls``; the same placement as without one).

    Raises ``SpecError`` naming what is short and by how much when the site cannot hold them.
    """
    if fixed and spec.site is not None:
        floor, demand = _checked_demand(spec, spec.site, fabrics, fixed)
        stuck = _stuck(floor, demand, fixed)
        try:
            pinned = replace(_place(spec, fabrics, fixed, executor=executor), forced_moves=stuck)
            moved = moved_racks(pinned, fixed)
            if not moved:
                return pinned
            why = (
                "a unit that grew cannot keep its start: it would run past its row, over "
                "another installed rack or onto a position that cannot hold it"
            )
            return _with_moves(pinned, fixed, spec, moved, why)
        except SpecError as exc:
            why = "; ".join(p.message for p in exc.problems)
            free = None
            if frozen_positions(floor, spec).any():
                try:
                    free = _place(
                        spec, fabrics, fixed, soft=True, keep_frozen=True, executor=executor
                    )
                except SpecError as frozen_exc:
                    why += "; with the frozen racks kept: " + "; ".join(
                        p.message for p in frozen_exc.problems
                    )
            if free is None:
                try:
                    free = _place(spec, fabrics, fixed, soft=True, executor=executor)
                except SpecError as last:
                    closed = _closed(floor, spec)
                    if not closed:
                        raise
                    raise SpecError([*last.problems, _frozen_problem(closed)]) from last
            free = replace(free, forced_moves=stuck + 1)
            return _with_moves(free, fixed, spec, moved_racks(free, fixed), why)
    return _place(spec, fabrics, None, executor=executor)


def _with_moves(
    p: Placement,
    fixed: Mapping[str, str],
    spec: ClusterSpec,
    moved: list[tuple[str, str, str]],
    why: str,
) -> Placement:
    """``p`` with the finding that lists its installed racks' moves and, for those that stood
    in a frozen hall or row, an error finding naming them and the frozen part."""
    extra = [_moves_finding(moved, why)]
    frozen = frozen_positions(p.floor, spec)
    at = {name.replace("/", "-"): i for i, name in enumerate(p.floor.pos_names)}
    held = [(lab, a, b) for lab, a, b in moved if a in at and frozen[at[a]]]
    if held:
        f = p.floor
        frozen_rows = spec.growth.frozen.rows if spec.growth is not None else ()
        part = sorted(
            {
                f.row_names[f.pos_row[at[a]]]
                if f.row_names[f.pos_row[at[a]]] in frozen_rows
                else f.hall_names[f.pos_hall[at[a]]]
                for _, a, _ in held
            }
        )
        shown = ", ".join(f"{lab} {a} -> {b}" for lab, a, b in held[:20])
        extra.append(
            Finding(
                Severity.ERROR,
                "frozen-rack-moved",
                f"the site cannot hold the growth without moving {len(held)} installed rack(s) "
                f"of frozen {', '.join(part)}: {shown}"
                + (f" and {len(held) - 20} more" if len(held) > 20 else "")
                + "; free room elsewhere or unfreeze it (growth.frozen)",
                "growth.frozen",
            )
        )
    return replace(p, findings=(*p.findings, *extra))


def _campus(
    floor: FloorPlan,
    demand: Demand,
    site: SiteSpec,
    links: dict[tuple[int, int], int],
    pins: Mapping[int, int],
    soft: bool,
) -> tuple[NDArray[np.int32], SolveStats | None]:
    """The hall of every group, the groups of installed units kept in their hall (so the
    campus model counts their power, positions and cooling there and sends new groups where
    room is left). When that has no solution the pinned placement fails (``SpecError``); the
    costed re-solve (``soft``) then assigns the halls as without pins."""
    held: dict[int, int] = {}
    for u, at in sorted(pins.items()):
        held.setdefault(demand.units[u].group, int(floor.pos_hall[at]))
    try:
        return assign_halls(floor, demand, site, links, held)
    except SpecError:
        if not soft or not held:
            raise
        return assign_halls(floor, demand, site, links)


def _place(
    spec: ClusterSpec,
    fabrics: tuple[FabricDesign, ...],
    fixed: Mapping[str, str] | None,
    *,
    soft: bool = False,
    keep_frozen: bool = False,
    executor: Executor | None = None,
) -> Placement:
    """One placement; ``soft`` lets installed units move at a cost, except (``keep_frozen``)
    those standing in a frozen hall or row."""
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
    frozen = frozen_positions(floor, spec) if keep_frozen else None
    hard = frozenset(
        u
        for u, at in pins.items()
        if frozen is not None and frozen[at : at + len(demand.units[u].racks)].all()
    )
    group_hall, campus = _campus(floor, demand, site, links, pins, soft)
    group_hall = group_hall.copy()
    for u, at in pins.items():  # an installed unit stays in its hall
        group_hall[demand.units[u].group] = floor.pos_hall[at]
    by_hall: dict[int, list[int]] = defaultdict(list)
    for u, unit in enumerate(demand.units):
        by_hall[int(group_hall[unit.group])].append(u)
    rack_position = np.full(demand.n_racks, -1, dtype=np.int32)
    solves: list[SolveStats] = [campus] if campus is not None else []
    jobs = [(h, by_hall[h], {u: pins[u] for u in by_hall[h] if u in pins}) for h in sorted(by_hall)]
    for starts, stats in solve_halls(floor, demand, site, jobs, links, soft, executor, hard):
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
