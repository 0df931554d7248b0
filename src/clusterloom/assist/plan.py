"""Change plans validated step by step (issue 21, item 3; ``docs/assist.md``, "Change plans").

``plan_change(baseline, target_spec, floors)`` designs the target against the installed
baseline through the growth path (``run_design(installed=...)``: stable links, pinned racks, the
rework's change plan in waves), then holds every intermediate state of the plan to the floors
(``assist.states``): the fabric connected, no job pair without a path, no host with a spare
link cut off, bisection and the least plane at least ``Floors``' fractions of the target's.
A wave whose drained state breaks a rule is re-packed: its links are taken in turn from each
switch (one link of every switch, then a second ...) into smaller waves, each as large as
still passes (a doubling then a binary search: draining more never raises a max-flow). A link
that breaks a rule even alone in its wave is moved after every other wave (the reorder: their
new links may give it room) and re-packed there; one that still breaks a rule alone cannot pass
in this order and is drained last, with the others of its wave, named in an error finding with
the floor it breaks. A rack
move's wave is never split (every link of the rack is drained at once). Each step's ``checks``
then carry its validated state and, with ``simulate``, the predicted impact
(``assist.impact``).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.assist.floors import Floors
from clusterloom.assist.states import StateModel, state_model
from clusterloom.changes import RACK_TO, ChangePlan, Proposal, Step, apply_plan
from clusterloom.findings import Finding, Severity

if TYPE_CHECKING:
    from clusterloom.exec import Executor
    from clusterloom.growth.drained import LinkTable
    from clusterloom.growth.installed import Installed
    from clusterloom.growth.waves import Waves
    from clusterloom.pipeline import Design
    from clusterloom.spec import ClusterSpec

__all__ = ["PlanResult", "change_kind", "plan_change"]

Checks = dict[str, int | float | str]


@dataclass(frozen=True)
class PlanResult:
    """A validated change plan, its proposal (status proposed until someone decides) and what
    the validation found."""

    plan: ChangePlan
    proposal: Proposal
    findings: tuple[Finding, ...]
    floors: Floors
    #: growth, re-stripe, plane added, switch replaced (``change_kind``; several joined by "+")
    kind: str
    #: the prediction's traffic in words ("" without ``simulate``)
    impact: str
    #: applying the plan to the baseline's links gives the target's links
    reaches_target: bool

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity == Severity.ERROR)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values (``json.dumps(..., sort_keys=True)`` gives the same bytes for the
        same inputs)."""
        prop = asdict(self.proposal)
        prop.pop("plan")
        return {
            "kind": "clusterloom-change-plan",
            "change": self.kind,
            "floors": self.floors.model_dump(),
            "impact": self.impact,
            "reaches_target": self.reaches_target,
            "plan": asdict(self.plan),
            "proposal": prop,
            "findings": [f.to_dict() for f in self.findings],
        }


def change_kind(baseline: Design, target: Design) -> str:
    """What the change is, from the two designs' fabrics: growth (more accelerators), plane
    added, switch replaced (another switch model on a tier), re-stripe (the same accelerators,
    the links differ); ``none`` when the links are the same."""
    kinds = []
    if target.spec.compute.accelerators > baseline.spec.compute.accelerators:
        kinds.append("growth")
    old = {fd.name: fd for fd in baseline.fabrics}
    planes = switches = False
    for fd in target.fabrics:
        was = old.get(fd.name)
        if was is None:
            continue
        planes |= fd.plan.planes > was.plan.planes
        switches |= [t.model for t in fd.plan.switch_tiers] != [
            t.model for t in was.plan.switch_tiers
        ]
    kinds += ["plane added"] * planes + ["switch replaced"] * switches
    return "+".join(kinds)


def plan_change(
    baseline: str | Path | Installed,
    target_spec: ClusterSpec | str | Path,
    floors: Floors | None = None,
    *,
    simulate: bool = True,
    executor: Executor | None = None,
    author: str = "clusterloom",
) -> PlanResult:
    """The change from ``baseline`` (a ``design -o`` directory or a ``growth.Installed``) to
    ``target_spec`` (a spec, or its YAML file), every step validated against ``floors``
    (module docstring). Bad input (a baseline the spec cannot grow from, a bad spec) raises
    ``SpecError``; a plan that cannot keep a floor is returned with error findings naming the
    floor and the step. ``executor`` runs placement's and cabling's halls as ``run_design``
    does."""
    from clusterloom.growth.drained import link_table, with_drain_checks
    from clusterloom.growth.installed import Installed, read_installed
    from clusterloom.growth.rework import fabric_link_names, wave_steps
    from clusterloom.pipeline import run_design
    from clusterloom.spec import ClusterSpec, load_spec

    floors = floors or Floors()
    if not isinstance(target_spec, ClusterSpec):
        target_spec = load_spec(target_spec)  # a YAML file: SpecError naming the bad field
    installed = baseline if isinstance(baseline, Installed) else read_installed(Path(baseline))
    design = run_design(target_spec, compare=False, installed=installed, executor=executor)
    growth = design.growth
    assert growth is not None
    base = growth.baseline
    catalog = design.spec.resolved_catalog()
    table = link_table(base.fabrics, design.fabrics, catalog)
    target_names = fabric_link_names(design.fabrics, catalog)
    target = np.zeros(table.n_links, dtype=bool)
    target[[table.index[n] for n in target_names]] = True
    model = state_model(table, target, floors, _job_pairs(base))
    old_names = [n for n, i in table.index.items() if table.base[i]]

    waves, new_racks, why, removed = _waves_of(growth.plan)
    packed, notes = _repack(model, waves, removed)
    steps = wave_steps(old_names, removed, packed, new_racks, why)
    summary = {**growth.plan.summary, "waves": packed.count}
    plan = ChangePlan(growth.plan.id, growth.plan.baseline, growth.plan.target, steps, summary)
    plan, drained = with_drain_checks(plan, base.fabrics, design.fabrics, design.spec, table)
    predictor = _predictor(table, base, design, catalog) if simulate else None
    plan, found = _validated(model, plan, packed, predictor)
    findings = (*notes, *found, *(f for fs in drained.values() for f in fs))
    reaches = apply_plan(old_names, plan) == {n for n in target_names}
    if not reaches:
        raise AssertionError(f"change plan {plan.id}: its last state is not the target design")
    kind = change_kind(base, design) or ("re-stripe" if plan.steps else "none")
    proposal = _proposal(plan, floors, kind, findings, author)
    impact = predictor.describe() if predictor is not None else ""
    return PlanResult(plan, proposal, tuple(findings), floors, kind, impact, reaches)


def _job_pairs(base: Design) -> NDArray[np.int64] | None:
    """The rank pairs of the baseline's job that exchange scale-out traffic (rank r on the
    backend's host r), None without a job or when ranks and hosts do not match one to one."""
    w = base.workload
    backend = next((fd for fd in base.fabrics if fd.name == "backend"), None)
    if w is None or backend is None or w.layout.world != backend.plan.hosts:
        return None
    a, b = w.flows.src.astype(np.int64), w.flows.dst.astype(np.int64)
    pairs: NDArray[np.int64] = np.unique(np.stack([np.minimum(a, b), np.maximum(a, b)], 1), axis=0)
    kept: NDArray[np.int64] = pairs[pairs[:, 0] != pairs[:, 1]]
    return kept


def _predictor(table: LinkTable, base: Design, design: Design, catalog: Any) -> Any:
    from clusterloom.assist.impact import Predictor

    old = next((fd for fd in base.fabrics if fd.name == "backend"), None)
    new = next((fd for fd in design.fabrics if fd.name == "backend"), None)
    if old is None or new is None:
        return None
    return Predictor(table, old, new, design.spec, old.plan.hosts, catalog)


def _waves_of(plan: ChangePlan) -> tuple[Waves, list[str], str, set[str]]:
    """The waves a growth plan's steps were made from (``growth.rework._wave_steps``), the new
    racks, the reason its links go, and the links it takes off."""
    from clusterloom.growth.waves import Waves

    n = max((s.wave for s in plan.steps), default=0)
    drained: list[list[str]] = [[] for _ in range(n + 1)]
    pulled: list[list[str]] = [[] for _ in range(n + 1)]
    racks: list[list[tuple[str, str, str]]] = [[] for _ in range(n + 1)]
    new_racks: list[str] = []
    removed: set[str] = set()
    why = "their ends are not in the new design"
    for s in plan.steps:
        if s.action == "install":
            new_racks += s.objects
        elif s.action == "drain":
            drained[s.wave] += s.objects
        elif s.action == "pull":
            pulled[s.wave] += s.objects
        elif s.action == "remove":
            removed |= set(s.objects)
            why = s.reason.split(": ", 1)[-1]
        elif s.action == "move-rack":
            for obj in s.objects:
                head, to = obj.rsplit(RACK_TO, 1)
                label, _, at = head.partition(" ")
                racks[s.wave].append((label, at, to))
    waves = Waves(
        tuple(map(tuple, drained)), tuple(map(tuple, pulled)), tuple(map(tuple, racks)), ()
    )
    return waves, new_racks, why, removed


def _turns(table: LinkTable, names: Sequence[str]) -> list[str]:
    """``names`` taken in turn from each lower end: the first link of every switch, then the
    second ... (the plan's order within a switch)."""
    seen: Counter[int] = Counter()
    rank = []
    for k, name in enumerate(names):
        lo = int(table.lo[table.index[name]])
        rank.append((seen[lo], k))
        seen[lo] += 1
    return [names[k] for _, k in sorted(rank)]


class _Cabling:
    """The cabled links (a mask) and the ends they use, as waves go by."""

    def __init__(self, table: LinkTable, model: StateModel) -> None:
        self.table, self.model = table, model
        self.cabled = table.base.copy()
        self.live = table.base.copy()
        self.use: Counter[str] = Counter(
            e for n, i in table.index.items() if table.base[i] for e in n.split("~")
        )

    def rows(self, names: Sequence[str]) -> NDArray[np.int64]:
        return np.array([self.table.index[n] for n in names], dtype=np.int64)

    def drained(self, names: Sequence[str]) -> NDArray[np.bool_]:
        state = self.live.copy()
        state[self.rows(names)] = False
        return state

    def passes(self, names: Sequence[str]) -> bool:
        return not self.model.broken(self.model.checks(self.drained(names)))

    def pull(self, names: Sequence[str]) -> None:
        self.cabled[self.rows(names)] = True
        self.use.update(e for n in names for e in n.split("~"))

    def remove(self, names: Sequence[str]) -> None:
        self.cabled[self.rows(names)] = False
        self.use.subtract(e for n in names for e in n.split("~"))

    def free(self, name: str) -> bool:
        return all(self.use[e] <= 0 for e in name.split("~"))

    def restore(self) -> None:
        self.live = self.cabled.copy()


def _largest(ok: Callable[[int], bool], most: int) -> int:
    """The largest ``k <= most`` with ``ok(k)``, assuming ``ok`` holds up to some k and not
    beyond (0: not even one); doubling, then a binary search."""
    if not ok(1):
        return 0
    lo, hi = 1, 2
    while hi <= most and ok(hi):
        lo, hi = hi, hi * 2
    hi = min(hi, most + 1)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


class _Packer:
    """The waves being re-packed: each wave's drained links, new links and moved racks."""

    def __init__(self, c: _Cabling, removed: set[str], first_pull: tuple[str, ...]) -> None:
        self.c, self.removed = c, removed
        self.drained: list[tuple[str, ...]] = [()]
        self.pulled: list[tuple[str, ...]] = [first_pull]
        self.racks: list[tuple[tuple[str, str, str], ...]] = [()]
        self.pending: list[str] = []

    def close(self, group: list[str], racks: tuple[tuple[str, str, str], ...] = ()) -> None:
        """One wave: ``group`` drained, its removed links off, the new links whose ports are
        free then pulled (the others wait for a later wave), everything restored."""
        c = self.c
        c.remove([n for n in group if n in self.removed])
        now = [n for n in self.pending if c.free(n)]
        chosen = set(now)
        self.pending = [n for n in self.pending if n not in chosen]
        c.pull(now)
        c.restore()
        self.drained.append(tuple(group))
        self.pulled.append(tuple(now))
        self.racks.append(racks)

    def finish(self) -> None:
        """The new links still waiting, pulled in the last wave: every removal is done, so
        their ports are free (``ports-in-use-twice`` would say otherwise)."""
        if self.pending:
            self.c.pull(self.pending)
            self.c.restore()
            self.pulled[-1] = (*self.pulled[-1], *self.pending)
            self.pending = []


def _passes(c: _Cabling, names: list[str], k: int) -> bool:
    return c.passes(names[:k])


def _split(model: StateModel, p: _Packer, drained: list[str]) -> list[str]:
    """``drained`` into waves each as large as passes, in turn from each switch; the links
    that break a rule even alone are returned, not drained."""
    order = _turns(model.table, drained)
    left: list[str] = []
    i = 0
    while i < len(order):
        rest = order[i:]
        k = _largest(partial(_passes, p.c, rest), len(rest))
        if k == 0:
            left.append(order[i])
            i += 1
            continue
        p.close(rest[:k])
        i += k
    return left


def _waves(sizes: list[int]) -> str:
    n = len(sizes)
    return f"{n} wave{'s' * (n != 1)} of {', '.join(map(str, sizes))} links"


def _split_note(w: int, drained: int, before: list[str], sizes: list[int], left: int) -> Finding:
    later = (
        f"; {left:,} break a floor even alone after those: moved after the later waves"
        if left
        else ""
    )
    return Finding(
        Severity.INFO,
        "plan-split",
        f"wave {w} drained {drained:,} links at once and broke {'; '.join(before)}: re-packed "
        f"into {_waves(sizes)}, taking links in turn "
        f"from each switch{later}",
        f"change.waves[{w}]",
    )


def _repack(model: StateModel, waves: Waves, removed: set[str]) -> tuple[Waves, list[Finding]]:
    """``waves`` with each wave whose drained state breaks a rule split into smaller ones, the
    links that cannot keep the floors in their wave moved after the later waves (whose new
    links may give them room), and an info finding per wave split or moved."""
    from clusterloom.growth.waves import Waves

    c = _Cabling(model.table, model)
    c.pull(waves.pulled[0])  # the first pull: cabled, live after the first restore
    p = _Packer(c, removed, waves.pulled[0])
    notes: list[Finding] = []
    later: list[str] = []
    origin: dict[str, int] = {}  #: a moved link's wave
    for w in range(1, len(waves.drained)):
        drained, racks = list(waves.drained[w]), waves.racks[w]
        p.pending += waves.pulled[w]
        if racks or not drained or c.passes(drained):
            p.close(drained, racks)
            continue
        before = model.broken(model.checks(c.drained(drained)))
        first = len(p.drained)
        left = _split(model, p, drained)
        later += left
        origin.update(dict.fromkeys(left, w))
        sizes = [len(g) for g in p.drained[first:]]
        notes.append(_split_note(w, len(drained), before, sizes, len(left)))
    forced: list[str] = []
    if later:
        first = len(p.drained)
        if c.passes(later):
            p.close(later)
        else:
            forced = _split(model, p, later)
            for w in sorted({origin[n] for n in forced}):  # as the growth grouped them
                p.close([n for n in forced if origin[n] == w])
        sizes = [len(g) for g in p.drained[first:]]
        how = (
            f"{len(forced):,} of them break a floor even alone: drained last, in their waves"
            if forced
            else "each keeps the floors there"
        )
        notes.append(
            Finding(
                Severity.INFO,
                "plan-reorder",
                f"{len(later):,} links that could not keep the floors in their wave moved after "
                f"the other waves, in {_waves(sizes)}: " + how,
                f"change.waves[{first}]",
            )
        )
    p.finish()
    packed = Waves(tuple(p.drained), tuple(p.pulled), tuple(p.racks), tuple(forced))
    return packed, notes


def _validated(
    model: StateModel, plan: ChangePlan, waves: Waves, predictor: Any
) -> tuple[ChangePlan, list[Finding]]:
    """``plan`` with each step's state held to the floors (its ``checks``, ``valid``) and the
    findings: an error per rule some step breaks, naming the floor and the steps; a warning
    for hosts a step takes out of service whatever the order (one link, or a rack move)."""
    from clusterloom.growth.drained import live_after_steps

    moves = {s.wave for s in plan.steps if s.action == "move-rack"}
    forced = set(waves.forced)
    steps: list[Step] = []
    broke: dict[str, list[Step]] = {}
    out: dict[str, list[Step]] = {}
    cache: dict[bytes, tuple[Checks, list[str]]] = {}
    for step, live in zip(plan.steps, live_after_steps(model.table, plan.steps), strict=True):
        key = np.packbits(live).tobytes()
        if key not in cache:
            checks = model.checks(live)
            if predictor is not None:
                checks.update(predictor.checks(live))
            cache[key] = (checks, model.broken(checks))
        checks, broken = cache[key]
        for rule in broken:
            broke.setdefault(rule.split(" (", 1)[0], []).append(step)
        step = replace(step, checks={**step.checks, **checks}, valid=step.valid and not broken)
        for fs in model.fabrics:
            if int(checks[f"{fs.name}:hosts-out"]) > 0:
                out.setdefault(fs.name, []).append(step)
        steps.append(step)
    findings: list[Finding] = []
    for rule, where in broke.items():
        first = where[0]
        why = (
            "a rack move drains every link of the rack at once"
            if first.wave in moves
            else "links that break it even alone, after every other wave"
            if forced & set(first.drain or first.objects)
            else "the state between waves (part of the old links and part of the new)"
            if first.action in ("restore", "pull", "install")
            else "no smaller drain passes"
        )
        findings.append(
            Finding(
                Severity.ERROR,
                "plan-floor",
                f"{rule} is not kept in any order: steps {_orders(where)} ({why}); lower the "
                "floor, or take the traffic off first",
                f"change.steps[{first.order - 1}]",
            )
        )
    for fabric, where in out.items():
        worst = max(where, key=lambda s: (int(s.checks[f"{fabric}:hosts-out"]), -s.order))
        findings.append(
            Finding(
                Severity.WARNING,
                "plan-hosts-out",
                f"steps {_orders(where)} take {fabric} hosts out of service (step {worst.order}: "
                f"{worst.checks[f'{fabric}:hosts-out']}, "
                f"{worst.checks[f'{fabric}:hosts-out-forced']} with a single link): drain their "
                "jobs first",
                f"change.steps[{worst.order - 1}]",
            )
        )
    return replace(plan, steps=tuple(steps)), findings


def _orders(steps: list[Step]) -> str:
    shown = ", ".join(f"{s.order} ({s.action})" for s in steps[:8])
    return shown + (f" and {len(steps) - 8} more" if len(steps) > 8 else "")


def _proposal(
    plan: ChangePlan, floors: Floors, kind: str, findings: Sequence[Finding], author: str
) -> Proposal:
    """The plan as a proposal; its id the hash of the plan and the floors it was held to."""
    body = json.dumps([asdict(plan), floors.model_dump()], sort_keys=True, default=str)
    pid = f"change-{hashlib.sha256(body.encode()).hexdigest()[:16]}"
    errors = sum(f.severity == Severity.ERROR for f in findings)
    reasons = (
        f"{kind or 'change'}: {len(plan.steps)} steps in {plan.summary.get('waves', 0)} waves",
        f"floors: bisection {floors.bisection:.0%}, each plane {floors.plane:.0%}",
        f"{errors} error findings" if errors else "every step keeps the floors",
    )
    return Proposal(pid, plan, author, reasons)
