"""``propose``: the designs that meet a goal, as a Pareto front with the reason every other
candidate lost (``docs/assist.md``, "propose").

Named steps, one tier each; each tier sees only the survivors of the one before:

1. **enumerate** the candidate space (:func:`enumerate_choices`): fabric family, port speed x
   scale-out ports (the NIC split: the rest serve scale-up) x planes, tiers, switch model, leaf
   and spine oversubscription, leaf placement;
2. **sizing**: the goal's rules that need no sizing (bandwidth, oversubscription limits,
   transports the switch technology carries), then the candidate's spec checked and its backend
   sized (``fabric.sizing.plan_fabric``), then the failure floor on the plan's bisection;
3. **bom**: the bill of materials of the sized fabric (cents, milliwatts: the estimate
   ``design_bom`` gives before cabling) against the budget;
4. **simulate**: the flow simulator's standard traffic (a permutation of 2 MB, the goal's first
   transport, ``sim.predict``) once per distinct fabric shape, as tasks on an executor; the step
   time of the goal's job (``workload.step_time``) when it has one;
5. **pareto**: the non-dominated candidates on the goal's objectives;
6. **design**: the design stages (placement and cabling when the goal has a site) for the front
   only; a member with an error finding, or over budget once cabled, is rejected and the front
   is chosen again from the rest.

Deterministic: candidates in enumeration order, ids hashes of their choice, task results keyed
by task; with one worker or many the result is the same.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from clusterloom.assist.goal import Goal, Objective
from clusterloom.errors import SpecError
from clusterloom.findings import Finding, Severity

if TYPE_CHECKING:
    from clusterloom.exec import Executor
    from clusterloom.fabric.sizing import FabricPlan
    from clusterloom.pipeline import Design
    from clusterloom.sim.predict import Step
    from clusterloom.spec import ClusterSpec

__all__ = [
    "Candidate",
    "Metrics",
    "ProposeResult",
    "Rejected",
    "bisection_bps",
    "bisection_kept",
    "choice_text",
    "dominates",
    "enumerate_choices",
    "pareto_front",
    "propose",
]

TASK_FN = "clusterloom.assist.propose_task:simulate_shape"
#: most scale-out ports per accelerator a candidate may have (as ``fabric.options``)
MAX_PORTS = 16
#: nearest candidates a finding names when no candidate meets the goal
NEAREST = 3
#: rounds of the design tier (a front member refused by a validator lets another in)
MAX_DESIGN_ROUNDS = 8

Progress = Callable[["Step"], None]


@dataclass(frozen=True)
class Metrics:
    """What a candidate is judged on. ``cost_cents`` and ``power_mw`` are the network's bill of
    materials (switches, optics, cables: the estimate before cabling); ``fct_p99_ps`` the p99
    flow completion time of the standard traffic on the goal's first transport; ``failure_kept``
    the fraction of the fabric's bisection left with the goal's ``planes_down`` planes down;
    ``step_time_ps`` the job's predicted step (None without a job)."""

    cost_cents: int
    power_mw: int
    bisection_bps: int
    failure_kept: float
    fct_p99_ps: int | None = None
    makespan_ps: int | None = None
    ideal_makespan_ps: int | None = None
    step_time_ps: int | None = None

    def objective(self, name: Objective) -> float:
        """The value to minimise for objective ``name`` (failure: the bisection lost)."""
        value: float | None = {
            "cost": self.cost_cents,
            "power": self.power_mw,
            "fct": self.fct_p99_ps,
            "failure": 1.0 - self.failure_kept,
            "step_time": self.step_time_ps,
        }[name]
        return math.inf if value is None else float(value)

    def to_dict(self) -> dict[str, Any]:
        return {
            "cost_cents": self.cost_cents,
            "power_mw": self.power_mw,
            "bisection_bps": self.bisection_bps,
            "failure_kept": self.failure_kept,
            "fct_p99_ps": self.fct_p99_ps,
            "makespan_ps": self.makespan_ps,
            "ideal_makespan_ps": self.ideal_makespan_ps,
            "step_time_ps": self.step_time_ps,
        }


@dataclass(frozen=True)
class Candidate:
    """One design that meets the goal: its choice, the spec it designs, its metrics and the
    findings of its design stages."""

    id: str
    choice: dict[str, Any]
    spec: ClusterSpec
    metrics: Metrics
    findings: tuple[Finding, ...] = ()
    #: the BOM once cabled (``Design.bom``, when the goal has a site): cents, milliwatts
    cabled_cost_cents: int | None = None
    cabled_power_mw: int | None = None

    def to_dict(self) -> dict[str, Any]:
        from clusterloom.spec import spec_hash

        return {
            "id": self.id,
            "choice": dict(self.choice),
            "spec_name": self.spec.name,
            "spec_hash": spec_hash(self.spec),
            "spec": self.spec.model_dump(mode="json", exclude_none=True),
            "metrics": self.metrics.to_dict(),
            "cabled_cost_cents": self.cabled_cost_cents,
            "cabled_power_mw": self.cabled_power_mw,
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass(frozen=True)
class Rejected:
    """A candidate that lost: the tier, the goal field it failed (``constraint``), in words,
    by how much (``by``, in the constraint's unit: cents, milliwatts, a ratio, a fraction) and
    relatively (``excess``: ``by`` over the limit; 0 when it is no measure), or the front
    member that dominates it."""

    id: str
    choice: dict[str, Any]
    tier: str
    constraint: str
    detail: str
    by: float = 0.0
    excess: float = 0.0
    dominated_by: str = ""
    #: its figures, when it was priced (rejected at the bom tier or later)
    metrics: Metrics | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "choice": dict(self.choice),
            "tier": self.tier,
            "constraint": self.constraint,
            "detail": self.detail,
            "by": self.by,
            "excess": self.excess,
            "dominated_by": self.dominated_by,
            "metrics": None if self.metrics is None else self.metrics.to_dict(),
        }


@dataclass(frozen=True)
class ProposeResult:
    """The front (cheapest first, then by id), every other candidate with its reason, the
    findings (no candidate meets the goal: the binding constraint and the nearest candidates)
    and the candidates evaluated per tier."""

    goal: Goal
    front: tuple[Candidate, ...]
    rejected: tuple[Rejected, ...]
    findings: tuple[Finding, ...]
    tiers: dict[str, int]
    #: the front's designs (``propose(keep_designs=True)``), in the front's order
    designs: tuple[Design, ...] = field(default=(), compare=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        from clusterloom._version import __version__

        return {
            "kind": "clusterloom-proposals",
            "clusterloom_version": __version__,
            "goal": self.goal.model_dump(mode="json"),
            "objectives": list(self.goal.optimise),
            "front": [c.to_dict() for c in self.front],
            "rejected": [r.to_dict() for r in self.rejected],
            "findings": [f.to_dict() for f in self.findings],
            "tiers": dict(self.tiers),
        }

    def to_json(self) -> str:
        """:meth:`to_dict` as JSON: sorted keys, the same bytes for the same goal."""
        import json

        return json.dumps(self.to_dict(), indent=1, sort_keys=True) + "\n"

    def run_id(self) -> str:
        """The SHA-256 of the result's canonical JSON: the same goal gives the same id."""
        from clusterloom.exec import canonical_json

        return hashlib.sha256(canonical_json(self.to_dict()).encode()).hexdigest()


# --- the bisection of a multi-plane fabric -------------------------------------------------


def bisection_bps(plan: FabricPlan, planes_up: int | None = None) -> int:
    """The fabric's bisection: the sum over its planes (``planes_up`` of them live) of each
    plane's min-cut between the two halves of its hosts, from the tier capacities
    (``FabricPlan.bisection_bps``; every plane is the same Clos)."""
    up = plan.planes if planes_up is None else max(0, min(planes_up, plan.planes))
    return sum(plan.bisection_bps for _ in range(up))


def bisection_kept(plan: FabricPlan, planes_down: int) -> float:
    """The fraction of the bisection left with ``planes_down`` planes down."""
    full = bisection_bps(plan)
    return bisection_bps(plan, plan.planes - planes_down) / full if full else 0.0


# --- enumerate ---------------------------------------------------------------------------


def _candidate_id(choice: Mapping[str, Any]) -> str:
    from clusterloom.exec import canonical_json

    return hashlib.sha256(canonical_json(dict(choice)).encode()).hexdigest()[:12]


def _switches(goal: Goal) -> tuple[str, ...]:
    from clusterloom.spec import builtin_catalog

    return goal.space.switches or tuple(sorted(builtin_catalog().switches))


def _speeds(goal: Goal) -> tuple[int, ...]:
    """The port speeds to try, fastest first: the NIC's, else every one the switches offer."""
    from clusterloom.spec import builtin_catalog

    if goal.network.nic.port_speeds_gbps:
        return tuple(sorted(set(goal.network.nic.port_speeds_gbps), reverse=True))
    catalog = builtin_catalog().switches
    return tuple(sorted({s for m in _switches(goal) for s in catalog[m].speeds_gbps}, reverse=True))


def _port_counts(goal: Goal, speed: int) -> tuple[int, ...]:
    """Scale-out ports per accelerator at ``speed``: with a fixed NIC every split of its ports
    (too few for the bandwidth are rejected, naming it), else just enough for the bandwidth."""
    need = math.ceil(goal.network.bandwidth_per_accelerator_gbps / speed - 1e-9)
    fixed = goal.network.nic.ports
    if fixed is not None:
        return tuple(range(1, fixed + 1))
    return (need,) if need <= MAX_PORTS else ()


def enumerate_choices(goal: Goal) -> Iterator[dict[str, Any]]:
    """Every candidate's choice, in a fixed order (family, speed fastest first, ports, planes,
    tiers, switch, oversubscription leaf then spine, leaf placement)."""
    sp = goal.space
    ratios = sorted(set(sp.leaf_oversubscription))
    for family in sp.families:
        placements = [p for p in sp.leaf_placement if family == "fat-tree" or p == "network-rack"]
        for speed in _speeds(goal):
            for ports in _port_counts(goal, speed):
                planes = [p for p in range(1, ports + 1) if ports % p == 0]
                for n_planes in [p for p in planes if not sp.planes or p in sp.planes]:
                    for tiers in sorted(set(sp.tiers)):
                        for switch in _switches(goal):
                            for leaf in ratios:
                                for spine in ratios if tiers == 3 else [1.0]:
                                    for where in placements:
                                        yield {
                                            "family": family,
                                            "port_speed_gbps": speed,
                                            "scale_out_ports": ports,
                                            "planes": n_planes,
                                            "tiers": tiers,
                                            "switch": switch,
                                            "oversubscription_leaf": leaf,
                                            "oversubscription_spine": spine,
                                            "leaf_placement": where,
                                        }


def _spec_doc(goal: Goal, choice: Mapping[str, Any], cid: str) -> dict[str, Any]:
    """The cluster spec a choice designs (plain JSON values)."""
    nic: dict[str, Any] = {
        "ports_per_accelerator": goal.network.nic.ports or choice["scale_out_ports"],
        "port_speed_gbps": choice["port_speed_gbps"],
    }
    if goal.network.nic.ports is not None:
        nic["scale_out_ports"] = choice["scale_out_ports"]
    doc: dict[str, Any] = {
        "version": 1,
        "name": f"{goal.name}-{cid}",
        "description": f"proposed for goal {goal.name}: {choice_text(choice)}",
        "compute": {**goal.compute.model_dump(mode="json"), "nic": nic},
        "fabrics": {
            "backend": {
                "family": choice["family"],
                "planes": choice["planes"],
                "tiers": choice["tiers"],
                "switch": choice["switch"],
                "oversubscription": {
                    "leaf": choice["oversubscription_leaf"],
                    "spine": choice["oversubscription_spine"],
                },
                "leaf_placement": choice["leaf_placement"],
            }
        },
    }
    if goal.job is not None:
        doc["job"] = goal.job.model_dump(mode="json")
    if goal.site is not None:
        doc["site"] = goal.site.model_dump(mode="json")
    if goal.growth_to_accelerators is not None:
        doc["growth"] = {"plan_for_accelerators": goal.growth_to_accelerators}
    return doc


def choice_text(choice: Mapping[str, Any]) -> str:
    """A candidate's choice in words (``rail-optimized 2 tiers, 8 x 100G in 8 planes, ...``)."""
    ports, planes = choice["scale_out_ports"], choice["planes"]
    over = f"{choice['oversubscription_leaf']:g}:1"
    if choice["tiers"] == 3:
        over += f"/{choice['oversubscription_spine']:g}:1"
    return (
        f"{choice['family']} {choice['tiers']} tiers, {ports} x {choice['port_speed_gbps']}G "
        f"in {planes} plane{'s' if planes != 1 else ''}, {choice['switch']}, {over}"
        + (", leaves in-rack" if choice["leaf_placement"] == "in-rack" else "")
    )


# --- sizing ------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Sized:
    id: str
    choice: dict[str, Any]
    spec: ClusterSpec
    plan: FabricPlan
    kept: float


def _rule(goal: Goal, cid: str, choice: dict[str, Any]) -> Rejected | None:
    """The goal's rules that need no sizing, in order: bandwidth, oversubscription limits,
    the transports the switch technology carries, the port speed the switch offers."""
    from clusterloom.sim.registry import REGISTRY
    from clusterloom.spec import builtin_catalog

    net = goal.network

    def lost(constraint: str, detail: str, by: float = 0.0, limit: float = 0.0) -> Rejected:
        return Rejected(cid, choice, "sizing", constraint, detail, by, by / limit if limit else 0.0)

    have = choice["scale_out_ports"] * choice["port_speed_gbps"]
    need = net.bandwidth_per_accelerator_gbps
    if have < need:
        return lost(
            "network.bandwidth_per_accelerator_gbps",
            f"{have:g}G per accelerator is {need - have:g}G short of {need:g}G",
            need - have,
            need,
        )
    for tier in ("leaf", "spine"):
        ratio = choice[f"oversubscription_{tier}"]
        most = getattr(net.max_oversubscription, tier)
        if ratio > most + 1e-9:
            return lost(
                f"network.max_oversubscription.{tier}",
                f"{ratio:g}:1 exceeds the {most:g}:1 allowed by {ratio - most:g}",
                ratio - most,
                most,
            )
    switch = builtin_catalog().switches[choice["switch"]]
    if switch.technology != "ethernet":
        carried = [t for t in net.transports if not REGISTRY[t].bound]
        if carried:
            return lost(
                "network.transports",
                f"{choice['switch']} is an {switch.technology} switch and cannot carry "
                f"{', '.join(carried)} (transports over Ethernet)",
            )
    if switch.radix(choice["port_speed_gbps"]) is None:
        offered = ", ".join(f"{s}G" for s in switch.speeds_gbps)
        return lost(
            "sizing", f"{choice['switch']} has no {choice['port_speed_gbps']}G ports ({offered})"
        )
    return None


def _size(goal: Goal, choice: dict[str, Any]) -> _Sized | Rejected:
    """One choice through the rules, the spec's checks and the sizing."""
    from pydantic import ValidationError

    from clusterloom.fabric.sizing import plan_fabric
    from clusterloom.spec import ClusterSpec, check_spec
    from clusterloom.spec.load import validation_problems

    cid = _candidate_id(choice)
    refused = _rule(goal, cid, choice)
    if refused is not None:
        return refused
    try:
        try:
            spec = ClusterSpec.model_validate(_spec_doc(goal, choice, cid))
        except ValidationError as exc:
            raise SpecError(validation_problems(exc)) from exc
        problems = check_spec(spec)
        if problems:
            raise SpecError(problems)
        plan = plan_fabric(spec)
    except SpecError as exc:
        p = exc.problems[0]
        return Rejected(cid, choice, "sizing", "sizing", f"{p.where}: {p.message}")
    kept = bisection_kept(plan, goal.failure.planes_down)
    floor = goal.failure.floors.bisection
    if kept < floor - 1e-12:
        return Rejected(
            cid,
            choice,
            "sizing",
            "failure.floors.bisection",
            f"{goal.failure.planes_down} of {plan.planes} planes down keeps {kept:.1%} of the "
            f"bisection, {floor - kept:.1%} below the {floor:.0%} floor",
            floor - kept,
            (floor - kept) / floor,
        )
    return _Sized(cid, choice, spec, plan, kept)


# --- bill of materials -------------------------------------------------------------------


def _bom(goal: Goal, s: _Sized) -> Candidate | Rejected:
    """The estimate BOM of the sized fabric (``design_bom.estimate_bom``) against the budget."""
    from clusterloom.design_bom import estimate_bom
    from clusterloom.fabric.bom import bill_of_materials
    from clusterloom.units import cents, milliwatts

    bom = estimate_bom([("backend", bill_of_materials(s.plan, s.spec.resolved_catalog()))])
    metrics = Metrics(bom.cost_cents, bom.power_mw, bisection_bps(s.plan), s.kept)
    b = goal.budget
    for field_name, have, most, unit in (
        (
            "max_cost_usd",
            bom.cost_cents,
            None if b.max_cost_usd is None else cents(b.max_cost_usd),
            "$",
        ),
        (
            "max_power_kw",
            bom.power_mw,
            None if b.max_power_kw is None else milliwatts(b.max_power_kw * 1000),
            "kW",
        ),
    ):
        if most is not None and have > most:
            return Rejected(
                s.id,
                s.choice,
                "bom",
                f"budget.{field_name}",
                f"{_amount(have, unit)} is {_amount(have - most, unit)} over the "
                f"{_amount(most, unit)} allowed",
                float(have - most),
                (have - most) / most,
                metrics=metrics,
            )
    return Candidate(s.id, s.choice, s.spec, metrics)


def _amount(value: int, unit: str) -> str:
    """Cents as dollars, milliwatts as kilowatts, for the reasons' words."""
    return f"${value / 100:,.0f}" if unit == "$" else f"{value / 1e6:,.1f} kW"


# --- simulate ----------------------------------------------------------------------------


def _shape(plan: FabricPlan) -> str:
    """What the flow simulator sees of a plan: its counts, stripes, speed and latencies
    without the switch models and media (candidates that differ only in them share a run)."""
    bare = replace(
        plan, switch_tiers=tuple(replace(t, model="") for t in plan.switch_tiers), media=()
    )
    return hashlib.sha256(repr(bare).encode()).hexdigest()


def _simulate(
    goal: Goal,
    candidates: Sequence[Candidate],
    plans: Mapping[str, FabricPlan],
    executor: Executor,
    say: Progress,
) -> tuple[list[Candidate], list[Rejected], int]:
    """Each distinct shape's standard traffic as one task; every candidate gets its shape's
    figures (and its job's step time). The candidates with figures, those whose run failed,
    and the runs."""
    from clusterloom.exec import Task
    from clusterloom.sim.predict import Step

    shapes: dict[str, Task] = {}
    of: dict[str, str] = {}
    for c in candidates:
        key = _shape(plans[c.id])
        of[c.id] = key
        if key not in shapes:
            shapes[key] = Task(
                TASK_FN,
                {
                    "spec": c.spec.model_dump(mode="json"),
                    "transport": goal.network.transports[0],
                    "seed": goal.seed,
                },
            )
    results: dict[str, dict[str, Any]] = {}
    errors: dict[str, str] = {}
    by_task = {t.key: k for k, t in shapes.items()}
    total = len(shapes)
    say(Step("simulate", 0, total, f"{total:,} fabric shapes"))
    # the largest fabrics first (most links, then by key), so that no long run starts last
    # on a pool; results are read by key, so the order changes nothing else
    size = {of[c.id]: sum(plans[c.id].links_per_tier) * plans[c.id].planes for c in candidates}
    ordered = sorted(shapes, key=lambda k: (-size[k], k))
    for n, outcome in enumerate(executor.run([shapes[k] for k in ordered]), start=1):
        shape = by_task[outcome.task.key]
        if outcome.ok:
            results[shape] = outcome.table.to_pylist()[0]
        else:
            errors[shape] = outcome.error
        say(Step("simulate", n, total, f"{n:,} of {total:,} fabric shapes"))
    kept: list[Candidate] = []
    lost: list[Rejected] = []
    for c in candidates:
        shape = of[c.id]
        if shape in errors:
            why = f"the flow simulator could not run this fabric: {errors[shape]}"
            lost.append(Rejected(c.id, c.choice, "simulate", "simulation", why))
            continue
        row = results[shape]
        metrics = replace(
            c.metrics,
            fct_p99_ps=row["fct_p99_ps"],
            makespan_ps=row["makespan_ps"],
            ideal_makespan_ps=row["ideal_makespan_ps"],
            step_time_ps=_step_time_ps(c.spec),
        )
        if row["finished"] < row["flows"]:
            lost.append(
                Rejected(
                    c.id,
                    c.choice,
                    "simulate",
                    "simulation",
                    f"{row['flows'] - row['finished']:,} of {row['flows']:,} flows of the "
                    "standard traffic did not finish",
                )
            )
            continue
        kept.append(replace(c, metrics=metrics))
    return kept, lost, len(shapes)


def _step_time_ps(spec: ClusterSpec) -> int | None:
    """The job's predicted step (the analytic model of ``workload.timing``), None without one."""
    if spec.job is None:
        return None
    from clusterloom.units import PS_PER_S
    from clusterloom.workload import step_ops, step_time

    return round(step_time(spec, step_ops(spec)).step_s * PS_PER_S)


# --- pareto ------------------------------------------------------------------------------


def dominates(a: Metrics, b: Metrics, objectives: Sequence[Objective]) -> bool:
    """``a`` is no worse than ``b`` on every objective and better on one."""
    va = [a.objective(o) for o in objectives]
    vb = [b.objective(o) for o in objectives]
    return all(x <= y for x, y in zip(va, vb, strict=True)) and va != vb


def _order(c: Candidate, objectives: Sequence[Objective]) -> tuple[Any, ...]:
    return (*(c.metrics.objective(o) for o in objectives), c.id)


def pareto_front(
    candidates: Sequence[Candidate], objectives: Sequence[Objective]
) -> tuple[list[Candidate], list[tuple[Candidate, Candidate]]]:
    """The non-dominated candidates (in the order of their objectives, then id) and each
    other one with the first front member that dominates it."""
    ranked = sorted(candidates, key=lambda c: _order(c, objectives))
    front: list[Candidate] = []
    for c in ranked:  # a dominator sorts before what it dominates
        if not any(dominates(f.metrics, c.metrics, objectives) for f in front):
            front.append(c)
    on_front = {c.id for c in front}
    beaten = [
        (c, next(f for f in front if dominates(f.metrics, c.metrics, objectives)))
        for c in ranked
        if c.id not in on_front
    ]
    return front, beaten


def _dominated(c: Candidate, by: Candidate, objectives: Sequence[Objective]) -> Rejected:
    words = []
    for o in objectives:
        a, b = c.metrics.objective(o), by.metrics.objective(o)
        if a > b:
            words.append(f"{o} {_delta(o, a - b, b)} worse")
    return Rejected(
        c.id,
        c.choice,
        "pareto",
        "dominated",
        f"dominated by {by.id} ({choice_text(by.choice)}): " + ", ".join(words),
        dominated_by=by.id,
        metrics=c.metrics,
    )


def _delta(objective: Objective, diff: float, base: float) -> str:
    if objective == "failure":
        return f"{diff:.1%} of the bisection"
    if objective == "cost":
        text = f"${diff / 100:,.0f}"
    elif objective == "power":
        text = f"{diff / 1e6:,.1f} kW"
    else:
        text = f"{diff / 1e6:,.1f} us"
    return text + (f" ({diff / base:+.0%})" if base else "")


# --- design ------------------------------------------------------------------------------


def _design(goal: Goal, c: Candidate) -> tuple[Candidate, Design] | tuple[Rejected, None]:
    """The design stages for one front member: placement and cabling when the goal has a site;
    a site that cannot hold it (``SpecError`` of the stages), an error finding, or a cabled BOM
    over budget rejects it."""
    from clusterloom.pipeline import run_design
    from clusterloom.units import cents, milliwatts

    try:
        design = run_design(c.spec, compare=False)
    except SpecError as exc:  # the site cannot hold it (placement's pre-checks), ...
        p = exc.problems[0]
        more = f" (and {len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
        constraint = "site" if p.where.startswith("site") else "design"
        return Rejected(
            c.id, c.choice, "design", constraint, f"{p.where}: {p.message}{more}", metrics=c.metrics
        ), None
    bad = [f for f in design.findings if f.severity is Severity.ERROR]
    if bad:
        f = bad[0]
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        return Rejected(
            c.id,
            c.choice,
            "design",
            "validator",
            f"{f.code} {f.where}: {f.message}{more}",
            metrics=c.metrics,
        ), None
    cabled = design.cabling is not None
    cost, power = design.bom.cost_cents, design.bom.power_mw
    b = goal.budget
    if cabled:
        for name, have, most in (
            ("max_cost_usd", cost, None if b.max_cost_usd is None else cents(b.max_cost_usd)),
            (
                "max_power_kw",
                power,
                None if b.max_power_kw is None else milliwatts(b.max_power_kw * 1000),
            ),
        ):
            if most is not None and have > most:
                unit = "$" if name == "max_cost_usd" else "kW"
                return Rejected(
                    c.id,
                    c.choice,
                    "design",
                    f"budget.{name}",
                    f"as cabled {_amount(have, unit)} is {_amount(have - most, unit)} over the "
                    f"{_amount(most, unit)} allowed",
                    float(have - most),
                    (have - most) / most,
                    metrics=c.metrics,
                ), None
    found = tuple(f for f in design.findings if f.severity is not Severity.INFO)
    done = replace(
        c,
        findings=found,
        cabled_cost_cents=cost if cabled else None,
        cabled_power_mw=power if cabled else None,
    )
    return done, design


#: the checks in the order a candidate meets them: the furthest one any candidate reached is
#: the binding constraint when none meets the goal (it passed every check before it)
CHECK_ORDER = (
    "network.bandwidth_per_accelerator_gbps",
    "network.max_oversubscription.leaf",
    "network.max_oversubscription.spine",
    "network.transports",
    "sizing",
    "failure.floors.bisection",
    "budget.max_cost_usd",
    "budget.max_power_kw",
    "simulation",
    "site",
    "design",
    "validator",
)


def _unmet(goal: Goal, rejected: Sequence[Rejected]) -> Finding:
    """No candidate meets the goal: the binding constraint (the furthest check any candidate
    reached, ``CHECK_ORDER``; at the design tier, after the validators, the cabled budget)
    and its nearest candidates (the smallest excess)."""
    if not rejected:
        return Finding(
            Severity.WARNING,
            "goal-unmet",
            f"goal {goal.name}: the candidate space is empty; widen space or the NIC",
            "space",
        )

    def reached(r: Rejected) -> tuple[int, int]:
        rank = CHECK_ORDER.index(r.constraint) if r.constraint in CHECK_ORDER else 0
        return (_TIER_ORDER[r.tier], rank)

    furthest = max(reached(r) for r in rejected)
    at = sorted((r for r in rejected if reached(r) == furthest), key=lambda r: (r.excess, r.id))
    binding = at[0].constraint
    near = at[:NEAREST]
    shown = "; ".join(f"{r.id} ({choice_text(r.choice)}): {r.detail}" for r in near)
    by = f" by {near[0].excess:.1%} and more" if near[0].excess > 0 else ""
    message = (
        f"no candidate meets goal {goal.name}; the binding constraint is {binding} "
        f"({len(at):,} candidates got that far and failed it); the nearest miss it{by}: {shown}"
    )
    return Finding(Severity.WARNING, "goal-unmet", message, binding)


# --- the whole ---------------------------------------------------------------------------


def propose(
    goal: Goal,
    *,
    executor: Executor | None = None,
    progress: Progress | None = None,
    keep_designs: bool = False,
) -> ProposeResult:
    """The Pareto front of the candidate designs that meet ``goal`` (module docstring).
    ``executor`` runs the simulations (default: serially here); ``progress`` receives a
    ``Step`` per tier as it goes; ``keep_designs`` keeps the front's designs (for writing and
    recording them)."""
    from clusterloom.exec import LocalExecutor
    from clusterloom.sim.predict import Step

    say: Progress = progress or (lambda _s: None)
    objectives = goal.optimise
    rejected: list[Rejected] = []
    tiers: dict[str, int] = {}

    choices = list(enumerate_choices(goal))
    say(Step("sizing", 0, len(choices), f"{len(choices):,} candidates"))
    sized: list[_Sized] = []
    for choice in choices:
        out = _size(goal, choice)
        if isinstance(out, Rejected):
            rejected.append(out)
        else:
            sized.append(out)
    tiers["sizing"] = len(choices)
    say(Step("sizing", len(choices), len(choices), f"{len(sized):,} sized"))

    priced: list[Candidate] = []
    for s in sized:
        got = _bom(goal, s)
        if isinstance(got, Rejected):
            rejected.append(got)
        else:
            priced.append(got)
    tiers["bom"] = len(sized)
    say(Step("bom", len(sized), len(sized), f"{len(priced):,} within budget"))

    plans = {s.id: s.plan for s in sized}
    pool = executor if executor is not None else LocalExecutor(1)
    try:
        simulated, failed, runs = _simulate(goal, priced, plans, pool, say)
    finally:
        if executor is None:
            pool.close()
    rejected += failed
    tiers["simulate"] = len(priced)
    tiers["simulations"] = runs

    front, designs, lost, designed = _choose(goal, simulated, objectives, keep_designs, say)
    rejected += lost
    tiers["pareto"] = len(simulated)
    tiers["design"] = designed
    findings: tuple[Finding, ...] = () if front else (_unmet(goal, rejected),)
    order = {r.id: i for i, r in enumerate(sorted(rejected, key=lambda r: r.id))}
    return ProposeResult(
        goal,
        tuple(front),
        tuple(sorted(rejected, key=lambda r: (_TIER_ORDER[r.tier], order[r.id]))),
        findings,
        tiers,
        tuple(designs),
    )


_TIER_ORDER = {"sizing": 0, "bom": 1, "simulate": 2, "design": 3, "pareto": 4}


def _choose(
    goal: Goal,
    simulated: Sequence[Candidate],
    objectives: Sequence[Objective],
    keep_designs: bool,
    say: Progress,
) -> tuple[list[Candidate], list[Design], list[Rejected], int]:
    """The front, each member designed; a member the design tier rejects lets the front be
    chosen again from the rest. The front (cheapest first), its designs, the rejected (the
    design tier's and the dominated) and how many were designed."""
    from clusterloom.sim.predict import Step

    alive = list(simulated)
    done: dict[str, tuple[Candidate, Design | None]] = {}
    refused: list[Rejected] = []
    for _ in range(MAX_DESIGN_ROUNDS):
        front, _beaten = pareto_front(alive, objectives)
        todo = [c for c in front if c.id not in done]
        if not todo:
            break
        for n, c in enumerate(todo, start=1):
            say(Step("design", n, len(todo), f"{c.id}: {choice_text(c.choice)}"))
            out, design = _design(goal, c)
            if isinstance(out, Rejected):
                refused.append(out)
                alive = [a for a in alive if a.id != c.id]
            else:
                done[c.id] = (out, design if keep_designs else None)
    front, beaten = pareto_front(alive, objectives)
    members = [done[c.id][0] for c in front if c.id in done]
    members.sort(key=lambda c: (c.metrics.cost_cents, c.id))
    designs = [d for c in members if (d := done[c.id][1]) is not None]
    lost = refused + [_dominated(c, by, objectives) for c, by in beaten]
    # members not designed within the rounds are left out, and said so
    lost += [
        Rejected(c.id, c.choice, "design", "design-rounds", "not designed within the rounds")
        for c in front
        if c.id not in done
    ]
    return members, designs, lost, len(done) + len(refused)
