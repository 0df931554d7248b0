"""How well localisation finds injected faults: seeded single-fault incidents per fault kind
(``ops.faults.random_fault`` and ``ops.synth.synthesize``; counters as rates by
``ops.ingest.counter_rates``), each localised and scored against its truth (issue 23, "Tests
and proof"; ``docs/ops.md``).

Per kind: **top-1** (the culprit is the first suspect), **top-3** (among the first three),
**precision** (the first suspect is the culprit, among incidents where anything was
suspected), **recall** (the culprit is among the suspects at all), **kind right** (the first
suspect is the culprit with the fault's kind) and **false first** (a fault to repair ranked
first that is not the culprit; for ``congested-spine`` any fault ranked first, since load is
nothing to repair) and **silent** (nothing suspected: the fault left no symptom the
detectors see). A suspect names the culprit when it names the same object: the same
physical link (either end first), port, switch or rank (a host link and the NIC port at its
end are one object: a link below its rate and a port below its rate look the same, ``kind
right`` tells whether the kind was named too); for a dead EV the same EV where
the truth names it (its pair, or the switch every dead path crosses: naming one dead pair of
a dead switch's EV is not enough), or on the truth's switch an EV in the same dead bucket
(:func:`same_bucket`: the switch black-holes all of them alike, about 1 in 64, and no
telemetry tells which one the truth names); for a congested spine a
``congestion`` suspect on that switch. The targets (``meets_targets``): top-1 at least
:data:`TOP1_TARGET` for every fault kind, no false culprit first for congestion.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from clusterloom.errors import Problem, SpecError
from clusterloom.ops.model import Fault, FaultKind, Suspect, SuspectKind

if TYPE_CHECKING:
    from clusterloom.ops.fabric import OpsFabric
    from clusterloom.ops.synth import Synthetic

__all__ = [
    "PACKET_KINDS",
    "RATE_HIDDEN",
    "SMALL_DESIGNS",
    "TOP1_TARGET",
    "Evaluation",
    "HealthyScore",
    "KindScore",
    "Outcome",
    "evaluate",
    "evaluation_dict",
    "matches",
    "meets_targets",
    "same_bucket",
    "small_design",
    "variant_scores",
]

#: share of single-fault incidents whose culprit must be ranked first (issue 23)
TOP1_TARGET = 0.9
#: the variant of a gray link below its rate localised again with the cut not shown in the
#: speed gauge (``synthesize(speed_shows_rate_cut=False)``); not in the kind's own scores
RATE_HIDDEN = "rate-hidden"
#: the incidents' telemetry: window and interval
DURATION_S = 60.0
INTERVAL_S = 10.0
#: the fault kinds the packet engine's evaluation scores (``ops synth --engine packet``
#: expresses every one: a dead EV as its black-holed bucket, a mis-hashed switch as its
#: skewed ECMP group, a straggler as its late flows; ``ops.synth``)
PACKET_KINDS: tuple[FaultKind, ...] = (
    FaultKind.GRAY_LINK,
    FaultKind.FLAPPING_LINK,
    FaultKind.DEAD_LINK,
    FaultKind.SLOW_NIC_PORT,
    FaultKind.DEAD_EV,
    FaultKind.MIS_HASHED_SWITCH,
    FaultKind.CONGESTED_SPINE,
    FaultKind.STRAGGLER_RANK,
)

#: small designs made from built-in examples, for the packet engine's evaluation (hundreds
#: of incidents: a packet run costs about a second of CPU per hundred hosts): name ->
#: (example, the edits of its text)
SMALL_DESIGNS: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    # 8-port switches: 128 hosts, 3 tiers, 384 links
    "fat-tree-k8": (
        "fat-tree-k16",
        (
            ("accelerators: 1024", "accelerators: 128"),
            ("ports: 16,", "ports: 8,"),
            ("name: fat-tree-k16", "name: fat-tree-k8"),
        ),
    ),
    # 32 nodes of 8 GPUs, one scalable unit of 32: 256 hosts on 8 rails, 2 tiers, 512 links
    "hgx-256-roce": (
        "hgx-1k-roce",
        (
            ("accelerators: 1024", "accelerators: 256"),
            ("scalable_unit_nodes: 64", "scalable_unit_nodes: 32"),
            ("name: hgx-1k-roce", "name: hgx-256-roce"),
        ),
    ),
}


def small_design(name: str) -> OpsFabric:
    """The fabric of one of :data:`SMALL_DESIGNS`: its example's text edited, then read
    through the spec's parser and checks as any spec."""
    from clusterloom.examples import example_text
    from clusterloom.ops.fabric import ops_fabric
    from clusterloom.spec import parse_spec

    base, edits = SMALL_DESIGNS[name]
    text = example_text(base)
    for old, new in edits:
        if old not in text:  # the example changed under the edit
            raise SpecError([Problem(name, f"example {base} no longer holds '{old}'")])
        text = text.replace(old, new)
    return ops_fabric(parse_spec(text, source=f"example {base}, made smaller: {name}"))


@dataclass(frozen=True)
class Outcome:
    """One incident: its truth, the rank of the culprit among the suspects (None: not
    suspected), the first suspect's target and kind."""

    kind: FaultKind
    index: int
    truth: str
    rank: int | None
    first: str
    first_fault: str
    false_first: bool
    seconds: float
    #: a gray link's variant: ``loss``, ``rate`` (the cut in the speed gauge) or
    #: :data:`RATE_HIDDEN` (the same incident without it; empty for the other kinds)
    variant: str = ""


@dataclass(frozen=True)
class KindScore:
    kind: FaultKind
    incidents: int
    top1: float
    top3: float
    precision: float
    recall: float
    kind_right: float
    false_first: float
    silent: float
    seconds: float


@dataclass(frozen=True)
class HealthyScore:
    """Windows with no fault: the share naming a fault first (``named``: a false alarm),
    calling congestion (the traffic's own load; nothing to repair), suspecting nothing
    (``silent``: the right answer), the first suspects of the false alarms."""

    incidents: int
    named: float
    congestion: float
    silent: float
    seconds: float
    firsts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Evaluation:
    design: str
    seed: int
    incidents_per_kind: int
    scores: tuple[KindScore, ...]
    outcomes: tuple[Outcome, ...]
    #: the engine that synthesised the telemetry (``flow`` or ``packet``)
    engine: str = "flow"
    #: the healthy windows' score, when some were asked for
    healthy: HealthyScore | None = None


def _same_link(fabric: OpsFabric, a: str, b: str) -> bool:
    try:
        return fabric.link_of_label(a) == fabric.link_of_label(b)
    except SpecError:
        return False


def matches(fabric: OpsFabric, truth: Fault, s: Suspect) -> bool:
    """Whether suspect ``s`` names the culprit of ``truth``."""
    k = truth.kind
    if k is FaultKind.CONGESTED_SPINE:
        return s.kind is SuspectKind.CONGESTION and s.target == truth.target
    if s.kind is SuspectKind.CONGESTION:
        return False
    if k in (FaultKind.GRAY_LINK, FaultKind.FLAPPING_LINK, FaultKind.DEAD_LINK):
        if s.kind is SuspectKind.PORT:  # a host link's NIC end: the same object
            return _nic_end(fabric, truth.target) == s.target
        return s.kind is SuspectKind.LINK and _same_link(fabric, truth.target, s.target)
    if k is FaultKind.SLOW_NIC_PORT and s.kind is SuspectKind.LINK:
        return _nic_end(fabric, s.target) == truth.target
    if k is FaultKind.DEAD_EV:  # the same EV at the same place: its pair, or its switch
        if s.kind is not SuspectKind.EV:
            return False
        return s.target == truth.target or same_bucket(fabric, truth.target, s.target)
    return s.target == truth.target


def same_bucket(fabric: OpsFabric, truth: str, named: str) -> bool:
    """Whether ``named`` (``SWITCH#EV``) names the switch of ``truth`` (``SWITCH#EV``) and an
    EV in its dead bucket: one that the switch's ECMP hash (``sim.faultforms.dead_hops``'s,
    under the fabric's ``hash_seed``, near or far seed) puts in the same entry of its table of
    ``DEAD_EV_BUCKETS``. Every EV there is black-holed alike (about 1 in 64), so the probes
    cannot tell which of them the truth names; a pair's dead EV (``SRC>DST#EV``) is matched
    exactly."""
    from clusterloom.sim.faultforms import DEAD_EV_BUCKETS
    from clusterloom.sim.paths import splitmix64

    sw_t, _, ev_t = truth.rpartition("#")
    sw_n, _, ev_n = named.rpartition("#")
    if ">" in sw_t or sw_t != sw_n or not ev_t.isdigit() or not ev_n.isdigit():
        return False
    from clusterloom.ops.faults import switch_node

    try:
        node = switch_node(fabric, sw_t, truth)
    except SpecError:
        return False
    mask = 0xFFFFFFFFFFFFFFFF
    with np.errstate(over="ignore"):
        evs = np.array([int(ev_t), int(ev_n)], dtype=np.uint64) & np.uint64(0xFFFFFFFF)
        key = evs ^ (np.uint64(node) * np.uint64(0x9E3779B97F4A7C15))
        near = splitmix64(key ^ np.uint64(fabric.hash_seed & mask)) % np.uint64(DEAD_EV_BUCKETS)
        far = splitmix64(key ^ np.uint64((fabric.hash_seed ^ 0x5EED) & mask)) % np.uint64(
            DEAD_EV_BUCKETS
        )
    return bool(near[0] == near[1] or far[0] == far[1])


def _nic_end(fabric: OpsFabric, label: str) -> str | None:
    """The NIC port at the lower end of a host link (None for a link between switches)."""
    try:
        link = fabric.link_of_label(label)
    except SpecError:
        return None
    if int(fabric.topology.link_tier[link]) != 1:
        return None
    dev, ifs = fabric.end_names
    return f"{dev[link, 0]}:{ifs[link, 0]}"


def _is_fault(s: Suspect) -> bool:
    return s.kind is not SuspectKind.CONGESTION


def evaluate(
    fabric: OpsFabric,
    kinds: Sequence[FaultKind],
    incidents_per_kind: int,
    seed: int,
    *,
    design: str = "",
    duration_s: float = DURATION_S,
    interval_s: float = INTERVAL_S,
    engine: str = "flow",
    traffics: int = 1,
    healthy: int = 0,
) -> Evaluation:
    """Localise ``incidents_per_kind`` seeded single-fault incidents of each kind and score
    them. Incident ``i`` of kind number ``k`` draws from ``default_rng([seed, k, i])``.

    ``engine`` synthesises the telemetry (``"packet"``: drops, ECN marks and PFC pauses from
    the packet engine, ``ops.synth``'s limits). ``traffics`` distinct traffics (permutations:
    ``traffic_seed`` ``i % traffics``) are cycled over the incidents, so the detectors meet
    as many patterns of ECMP collisions rather than one (1, the default: every incident on
    traffic seed 0, as before). ``healthy`` windows with no fault (window ``i`` seeded by
    ``[seed, len(FaultKind), i]``, on traffic ``i % traffics``) are scored too
    (:class:`HealthyScore`)."""
    from clusterloom.ops.faults import random_fault
    from clusterloom.ops.synth import synthesize

    if traffics < 1 or healthy < 0 or incidents_per_kind < 0:
        raise SpecError(
            [Problem("evaluate", "traffics must be at least 1, incidents and healthy at least 0")]
        )
    order = list(FaultKind)
    outcomes: list[Outcome] = []

    def synth(faults: list[Fault], seed_i: int, i: int, *, shown: bool = True) -> Synthetic:
        return synthesize(
            fabric,
            faults,
            duration_s=duration_s,
            interval_s=interval_s,
            seed=seed_i,
            engine=engine,
            traffic_seed=i % traffics,
            speed_shows_rate_cut=shown,
        )

    for kind in kinds:
        kn = order.index(kind)
        for i in range(incidents_per_kind):
            t0 = time.perf_counter()
            rng = np.random.default_rng([seed, kn, i])
            fault = random_fault(fabric, kind, rng, duration_ms=int(duration_s * 1000))
            seed_i = int(rng.integers(2**31))
            syn = synth([fault], seed_i, i)
            truth = syn.truth[0] if syn.truth else fault
            outcomes.append(_outcome(fabric, kind, i, syn, truth, t0, _variant(truth)))
            if _variant(truth) == "rate":  # the same incident with the cut not in the speed
                t0 = time.perf_counter()
                hidden = synth([fault], seed_i, i, shown=False)
                outcomes.append(_outcome(fabric, kind, i, hidden, truth, t0, RATE_HIDDEN))
    scores = tuple(
        _score(k, [o for o in outcomes if o.kind is k and o.variant != RATE_HIDDEN]) for k in kinds
    )
    calm = None
    if healthy:
        calm = _healthy(fabric, healthy, seed, len(order), synth)
    return Evaluation(design, seed, incidents_per_kind, scores, tuple(outcomes), engine, calm)


def _healthy(
    fabric: OpsFabric,
    n: int,
    seed: int,
    stream: int,
    synth: Callable[[list[Fault], int, int], Synthetic],
) -> HealthyScore:
    """Localise ``n`` healthy windows: what is named first, if anything."""
    from clusterloom.ops.ingest import counter_rates
    from clusterloom.ops.localise import localise

    named, congestion, silent, seconds = 0, 0, 0, 0.0
    firsts: list[str] = []
    for i in range(n):
        t0 = time.perf_counter()
        rng = np.random.default_rng([seed, stream, i])
        syn = synth([], int(rng.integers(2**31)), i)
        rates = counter_rates(syn.counters, fabric)
        loc = localise(fabric, rates=rates, probes=syn.probes, collectives=syn.collectives)
        congestion += loc.congestion
        silent += not loc.suspects
        if loc.suspects and _is_fault(loc.suspects[0]):
            named += 1
            firsts.append(f"{i}: {loc.suspects[0].fault} {loc.suspects[0].target}")
        seconds += time.perf_counter() - t0
    return HealthyScore(n, named / n, congestion / n, silent / n, seconds, tuple(firsts))


def _outcome(
    fabric: OpsFabric,
    kind: FaultKind,
    index: int,
    syn: Synthetic,
    truth: Fault,
    t0: float,
    variant: str,
) -> Outcome:
    """Localise one incident's telemetry and score it against its truth."""
    from clusterloom.ops.ingest import counter_rates
    from clusterloom.ops.localise import localise

    rates = counter_rates(syn.counters, fabric)
    loc = localise(fabric, rates=rates, probes=syn.probes, collectives=syn.collectives)
    rank = next((j for j, s in enumerate(loc.suspects) if matches(fabric, truth, s)), None)
    first = loc.suspects[0] if loc.suspects else None
    return Outcome(
        kind,
        index,
        truth.target,
        rank,
        "" if first is None else first.target,
        "" if first is None or first.fault is None else str(first.fault),
        first is not None and _is_fault(first) and rank != 0,
        time.perf_counter() - t0,
        variant,
    )


def _variant(fault: Fault) -> str:
    if fault.kind is not FaultKind.GRAY_LINK:
        return ""
    return "loss" if fault.loss > 0 else "rate"


def variant_scores(ev: Evaluation) -> tuple[tuple[FaultKind, str, KindScore], ...]:
    """The scores of each kind's variants (a gray link losing packets, or running below its
    rate with the cut in its speed gauge, or without), for the kinds that have them."""
    out = []
    for k in ev.scores:
        variants = sorted({o.variant for o in ev.outcomes if o.kind is k.kind} - {""})
        for v in variants:
            got = [o for o in ev.outcomes if o.kind is k.kind and o.variant == v]
            out.append((k.kind, v, _score(k.kind, got)))
    return tuple(out)


def _score(kind: FaultKind, got: Sequence[Outcome]) -> KindScore:
    n = max(len(got), 1)
    named = [o for o in got if o.first]
    return KindScore(
        kind,
        len(got),
        sum(o.rank == 0 for o in got) / n,
        sum(o.rank is not None and o.rank < 3 for o in got) / n,
        sum(o.rank == 0 for o in named) / max(len(named), 1),
        sum(o.rank is not None for o in got) / n,
        sum(o.rank == 0 and o.first_fault == str(kind) for o in got) / n,
        sum(o.false_first for o in got) / n,
        sum(not o.first for o in got) / n,
        sum(o.seconds for o in got),
    )


def meets_targets(ev: Evaluation) -> bool:
    """Top-1 at least :data:`TOP1_TARGET` per kind; no false culprit first for congestion;
    no fault named first in a healthy window (when healthy windows were scored)."""
    for k in ev.scores:
        if k.top1 < TOP1_TARGET:
            return False
        if k.kind is FaultKind.CONGESTED_SPINE and k.false_first > 0:
            return False
    return ev.healthy is None or ev.healthy.named == 0.0


def evaluation_dict(ev: Evaluation) -> dict[str, object]:
    """An evaluation as JSON-ready data."""
    calm = ev.healthy
    return {
        "design": ev.design,
        "engine": ev.engine,
        "seed": ev.seed,
        "incidents_per_kind": ev.incidents_per_kind,
        "scores": [
            {
                "kind": str(k.kind),
                "incidents": k.incidents,
                "top1": k.top1,
                "top3": k.top3,
                "precision": k.precision,
                "recall": k.recall,
                "kind_right": k.kind_right,
                "false_first": k.false_first,
                "silent": k.silent,
            }
            for k in ev.scores
        ],
        "variants": [
            {"kind": str(kind), "variant": v, "incidents": k.incidents, "top1": k.top1}
            for kind, v, k in variant_scores(ev)
        ],
        "misses": [
            {
                "kind": str(o.kind),
                "variant": o.variant,
                "index": o.index,
                "truth": o.truth,
                "first": o.first,
            }
            for o in ev.outcomes
            if o.rank != 0
        ],
        "healthy": None
        if calm is None
        else {
            "incidents": calm.incidents,
            "named": calm.named,
            "congestion": calm.congestion,
            "silent": calm.silent,
            "false_alarms": list(calm.firsts),
        },
    }
