"""The measure of a growth step's rework and the change plan a crew follows.

Figures (:class:`Rework`), each next to what the growth forces (its lower bound):

- racks moved: installed racks on another position (bound 0 when every installed rack could
  stay; otherwise the count found, not proven minimal);
- links re-patched: installed links whose ends change or go (bound: the links the new shape
  forces off their ports, ``fabric/stable.py``);
- fibres re-pulled: installed links with the same ends whose cable is pulled again (another
  rack, medium, length or frame pair);
- links added, new trunks, and the cost of the step (what the new design's bill of materials
  adds to the baseline's).

:func:`change_plan` orders the work: install the new racks, pull the links that touch nothing
live, then wave after wave (``growth.waves``) drain a batch of the links to re-patch or re-pull,
take them off, move racks (a rack move is a wave of its own), pull their new ends and restore
them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.changes import RACK_TO, ChangePlan, Step
from clusterloom.export.naming import topology_names
from clusterloom.growth.drained import link_table
from clusterloom.growth.waves import Waves, plan_waves
from clusterloom.spec.growth import GrowthSpec

if TYPE_CHECKING:
    from clusterloom.cabling import Cabling
    from clusterloom.cabling.change import Change
    from clusterloom.fabric import FabricDesign
    from clusterloom.fabric.stable import Move
    from clusterloom.findings import Finding
    from clusterloom.growth.installed import Installed
    from clusterloom.pipeline import Design
    from clusterloom.spec import Catalog

__all__ = [
    "Growth",
    "Rework",
    "change_plan",
    "fabric_link_names",
    "link_names",
    "measure",
    "wave_steps",
]


@dataclass(frozen=True)
class Rework:
    racks_installed: int
    racks_moved: int
    racks_moved_bound: int  #: at least this many installed racks must move
    links_installed: int
    links_repatched: int
    links_repatched_bound: int
    fibres_repulled: int
    links_added: int
    new_trunks: int
    cost_cents: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        bound = f"{self.racks_moved_bound:,}"
        if self.racks_moved > self.racks_moved_bound:
            bound = f">= {bound}"
        return (
            f"rework: {self.racks_moved:,} of {self.racks_installed:,} installed racks moved "
            f"(forced: {bound}); {self.links_repatched:,} of {self.links_installed:,} links "
            f"re-patched (forced: {self.links_repatched_bound:,}); {self.fibres_repulled:,} "
            f"re-pulled; {self.links_added:,} links added, {self.new_trunks:,} new trunks; "
            f"step cost ${self.cost_cents / 100:,.2f}"
        )


def link_names(c: Cabling, fabrics: tuple[FabricDesign, ...], catalog: Catalog) -> list[str]:
    """``device:interface~device:interface`` of every cabling row (the identity a crew reads)."""
    out = np.empty(c.n_links, dtype=object)
    for i, fd in enumerate(fabrics):
        names = topology_names(fd.topology, catalog)
        m = np.flatnonzero(c.fabric == i)
        a = names.device(c.a_node[m]) + ":" + names.interface(c.a_node[m], c.a_port[m])
        b = names.device(c.b_node[m]) + ":" + names.interface(c.b_node[m], c.b_port[m])
        out[m] = a + "~" + b
    return [str(x) for x in out]


def change_plan(
    plan_id: str,
    baseline: str,
    target: str,
    old_names: list[str],
    new_names: list[str],
    change: Change,
    new_racks: list[str],
    moved_racks: list[tuple[str, str, str]],
    moves: tuple[Move, ...],
    waves: Waves,
) -> ChangePlan:
    """The ordered steps from the installed links (``old_names``) to the new (``new_names``),
    the drains in ``waves`` (``growth.waves.plan_waves``)."""
    removed = [old_names[i] for i in change.removed.tolist()]
    added = [new_names[i] for i in change.added.tolist()]
    repulled = [new_names[i] for i in change.changed.tolist()]
    why = "; ".join(sorted({m.reason for m in moves})) or "their ends are not in the new design"
    steps = _wave_steps(len(old_names), set(removed), waves, new_racks, why)
    summary = {
        "links_installed": len(old_names),
        "links_kept_live": len(old_names) - len(removed) - len(repulled),
        "links_removed": len(removed),
        "links_added": len(added),
        "links_repulled": len(repulled),
        "racks_new": len(new_racks),
        "racks_moved": len(moved_racks),
        "waves": waves.count,
    }
    return ChangePlan(plan_id, baseline, target, _checked(old_names, steps), summary)


def wave_steps(
    old_names: list[str], removed: set[str], waves: Waves, new_racks: list[str], why: str
) -> tuple[Step, ...]:
    """The steps of ``waves`` from the installed links ``old_names`` (install, the first pull,
    then per wave drain, take off, move racks, pull, re-pull, restore), each with the state
    validated after it (``ports-in-use-twice``, ``links``): what :func:`change_plan` makes, for
    a caller that re-packs the waves (``assist.plan``)."""
    return _checked(old_names, _wave_steps(len(old_names), removed, waves, new_racks, why))


def _wave_steps(
    installed: int, removed: set[str], waves: Waves, new_racks: list[str], why: str
) -> list[Step]:
    """Install, the first pull, then per wave: drain, take off, move racks, pull the new ends,
    re-pull, restore; ``live_links`` the installed links live through each step."""
    steps: list[Step] = []
    gone = 0

    def add(action: Any, objs: Any, reason: str, wave: int, drain: Any = (), live: int = 0) -> None:
        if objs:
            steps.append(
                Step(len(steps) + 1, action, tuple(objs), reason, tuple(drain), live, wave=wave)
            )

    add("install", new_racks, "new racks and their switches on free positions", 0, live=installed)
    add(
        "pull",
        waves.pulled[0],
        "new links on free ports: nothing live is touched",
        0,
        live=installed,
    )
    for w in range(1, len(waves.drained)):
        drained, pulled, racks = waves.drained[w], waves.pulled[w], waves.racks[w]
        off = [n for n in drained if n in removed]
        again = [n for n in drained if n not in removed]
        of = f"wave {w} of {waves.count}"
        during = installed - gone - len(drained)
        if racks:
            reason = f"{of}: every link of the moved racks carries no traffic first (the move)"
        else:
            reason = f"{of}: links to re-patch or re-pull carry no traffic first"
        add("drain", drained, reason, w, (), during)
        add("remove", off, f"{of}: {why}", w, off, during)
        add(
            "move-rack",
            [f"{lab} {a}{RACK_TO}{b}" for lab, a, b in racks],
            f"{of}: the site cannot hold the growth with these racks in place (placement finding)",
            w,
            drained,
            during,
        )
        add("pull", pulled, f"{of}: the re-patched links' new ends", w, off, during)
        add("re-pull", again, f"{of}: same ends, cable pulled again", w, again, during)
        gone += len(off)
        left = installed - gone
        add("restore", drained, f"{of}: undrain, the wave's links carry traffic", w, (), left)
    return steps


def _checked(old_names: list[str], steps: list[Step]) -> tuple[Step, ...]:
    """Each step with the state validated after it, on the links by name: ``ports-in-use-twice``
    (an interface cabled to two links at once: a pull before the removal it needs) and
    ``links`` (how many are cabled then); a step is valid when no port is used twice.

    Links and their ends are numbered once; a step then only counts the ends it takes off or
    adds (``twice`` is the ends in use less the distinct ones)."""
    link_id: dict[str, int] = {}
    end_id: dict[str, int] = {}
    ends: list[int] = []

    def ids(names: tuple[str, ...] | list[str]) -> NDArray[np.int64]:
        out = np.empty(len(names), dtype=np.int64)
        for k, name in enumerate(names):
            i = link_id.get(name)
            if i is None:
                i = link_id[name] = len(link_id)
                ends.extend(end_id.setdefault(e, len(end_id)) for e in name.split("~"))
            out[k] = i
        return out

    cabled = ids(old_names)
    per_step = [ids(s.objects) if s.action in ("remove", "pull") else None for s in steps]
    end = np.array(ends, dtype=np.int64).reshape(-1, 2)
    on = np.zeros(len(link_id), dtype=bool)
    on[cabled] = True
    use = np.bincount(end[on].ravel(), minlength=len(end_id))
    out = []
    for step, objs in zip(steps, per_step, strict=True):
        if objs is not None:
            objs = np.unique(objs)
            objs = objs[on[objs]] if step.action == "remove" else objs[~on[objs]]
            on[objs] = step.action == "pull"
            sign = 1 if step.action == "pull" else -1
            np.add.at(use, end[objs].ravel(), sign)
        twice = int(use.sum() - np.count_nonzero(use))
        checks: dict[str, int | float | str] = {"ports-in-use-twice": twice, "links": int(on.sum())}
        out.append(replace(step, checks=checks, valid=twice == 0))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class Growth:
    """A design grown from an installed baseline: the baseline rebuilt, the cable change,
    the links and racks that move, the rework figures and the change plan."""

    installed: str  #: the baseline's directory
    baseline: Design
    change: Change | None
    moves: tuple[Move, ...]
    moved_racks: tuple[tuple[str, str, str], ...]
    rework: Rework
    plan: ChangePlan
    #: per fabric, the findings of the change plan's capacity checks (``growth.drained``)
    drain_findings: dict[str, list[Finding]] = field(default_factory=dict)


def fabric_link_names(fabrics: tuple[FabricDesign, ...], catalog: Catalog) -> set[str]:
    """Every link of ``fabrics`` as ``device:interface~device:interface`` (no cabling needed)."""
    out: set[str] = set()
    for fd in fabrics:
        t = fd.topology
        names = topology_names(t, catalog)
        a = names.device(t.link_src) + ":" + names.interface(t.link_src, t.link_src_port)
        b = names.device(t.link_dst) + ":" + names.interface(t.link_dst, t.link_dst_port)
        out |= {str(x) for x in a + "~" + b}
    return out


def measure(new: Design, baseline: Design, installed: Installed) -> Growth:
    """The rework of ``new`` against ``baseline`` (the installed design rebuilt)."""
    from clusterloom.cabling.change import plan_change
    from clusterloom.placement import moved_racks

    moves = tuple(m for fd in new.fabrics for m in fd.moves)
    forced = sum(fd.forced for fd in new.fabrics)
    moved: list[tuple[str, str, str]] = []
    new_racks: list[str] = []
    if new.placement is not None:
        moved = moved_racks(new.placement, installed.racks)
        names = new.placement.rack_names
        new_racks = [
            f"{lab}{RACK_TO}{names[r]}"
            for r, lab in enumerate(new.placement.demand.rack_label)
            if lab not in installed.racks
        ]
    catalog = new.spec.resolved_catalog()
    change = None
    if new.cabling is not None and baseline.cabling is not None:
        assert new.placement is not None and baseline.placement is not None
        change = plan_change(
            baseline.cabling,
            baseline.fabrics,
            baseline.placement,
            new.cabling,
            new.fabrics,
            new.placement,
        )
        old_names = link_names(baseline.cabling, baseline.fabrics, catalog)
        new_names = link_names(new.cabling, new.fabrics, catalog)
        repatched, repulled = int(change.removed.shape[0]), int(change.changed.shape[0])
        added, trunks = int(change.added.shape[0]), change.new_trunks
    else:
        before = fabric_link_names(baseline.fabrics, catalog)
        after = fabric_link_names(new.fabrics, catalog)
        old_names, new_names = sorted(before), sorted(after)
        repatched, repulled, added, trunks = len(before - after), 0, len(after - before), 0
    rework = Rework(
        racks_installed=len(installed.racks),
        racks_moved=len(moved),
        racks_moved_bound=new.placement.forced_moves if new.placement is not None else 0,
        links_installed=len(old_names),
        links_repatched=repatched,
        links_repatched_bound=forced,
        fibres_repulled=repulled,
        links_added=added,
        new_trunks=trunks,
        cost_cents=new.bom.cost_cents - baseline.bom.cost_cents,
    )
    plan_id = f"growth-{baseline.provenance.spec_hash[:12]}-{new.provenance.spec_hash[:12]}"
    table = link_table(baseline.fabrics, new.fabrics, catalog)
    floor = (new.spec.growth or GrowthSpec()).min_live_uplinks
    if change is not None:
        devices = _moved_devices(new, moved, catalog)
        waves = plan_waves(
            table,
            [old_names[i] for i in change.removed.tolist()],
            [new_names[i] for i in change.changed.tolist()],
            [new_names[i] for i in change.added.tolist()],
            devices,
            moved,
            floor,
        )
        plan = change_plan(
            plan_id,
            baseline.provenance.spec_hash,
            new.provenance.spec_hash,
            old_names,
            new_names,
            change,
            new_racks,
            moved,
            moves,
            waves,
        )
    else:
        gone = sorted(set(old_names) - set(new_names))
        waves = plan_waves(table, gone, [], sorted(set(new_names) - set(old_names)), {}, [], floor)
        plan = _topology_plan(plan_id, baseline, new, old_names, new_names, new_racks, moves, waves)
    from clusterloom.growth.drained import with_drain_checks

    plan, drained = with_drain_checks(plan, baseline.fabrics, new.fabrics, new.spec, table)
    return Growth(installed.source, baseline, change, moves, tuple(moved), rework, plan, drained)


def _moved_devices(
    new: Design, moved: list[tuple[str, str, str]], catalog: Catalog
) -> dict[str, str]:
    """Device name -> rack label of every device standing in a moved rack."""
    if not moved or new.placement is None:
        return {}
    p = new.placement
    label_of = {lab: r for r, lab in enumerate(p.demand.rack_label)}
    racks = np.array([label_of[lab] for lab, _, _ in moved], dtype=np.int64)
    out: dict[str, str] = {}
    for fd in new.fabrics:
        node_rack = p.device(fd.name).node_rack
        names = topology_names(fd.topology, catalog).devices
        for v in np.flatnonzero(np.isin(node_rack, racks)).tolist():
            out[str(names[v])] = p.demand.rack_label[int(node_rack[v])]
    return out


def _topology_plan(
    plan_id: str,
    baseline: Design,
    new: Design,
    old_names: list[str],
    new_names: list[str],
    new_racks: list[str],
    moves: tuple[Move, ...],
    waves: Waves,
) -> ChangePlan:
    """The change plan of a design without cabling: links by name only."""
    before, after = set(old_names), set(new_names)
    gone = before - after
    reason = "; ".join(sorted({m.reason for m in moves})) or "their ends are not in the new design"
    steps = _wave_steps(len(before), gone, waves, new_racks, reason)
    summary = {
        "links_installed": len(before),
        "links_removed": len(gone),
        "links_added": len(after - before),
        "waves": waves.count,
    }
    return ChangePlan(
        plan_id,
        baseline.provenance.spec_hash,
        new.provenance.spec_hash,
        _checked(old_names, steps),
        summary,
    )
