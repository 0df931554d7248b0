"""Mitigations checked in the simulator before they are proposed (issue 23, item 4).

For the ranked suspects of an incident (:class:`~clusterloom.ops.model.Suspect`, or the faults
themselves when they are known) :func:`candidates` lists the mitigations worth checking: drain
a link, drain a switch, retire the entropy values (EVs) whose paths cross a suspect, reweight
the sprayer's EVs away from it, move a job's ranks off a bad NIC or rack.
:func:`check_mitigations` runs each one through ``sim.predict`` on the design **with the
fault and the job's traffic**, next to doing nothing, and ranks them by the predicted
completion time of the traffic (a step's, when the spec has a job) and their risk.
:func:`propose_mitigation` wraps the best as a ``changes.Proposal`` (a drain and a restore
step, the evidence as its reasons) in the design store or a JSON-lines log; :func:`decide`
and :func:`record_outcome` record the operator's ``changes.Approval``, the
``changes.Decision`` with its context and, later, its measured outcome, through the store's
one approval model.

Assumptions of the check (docs/ops.md, "Mitigations checked before they are proposed"):

- **The window.** The prediction is one run of the traffic (a job's step, else
  :data:`~clusterloom.sim.scenario.DEFAULT_TRAFFIC` of ``DEFAULT_SIZE`` between every host) with
  the fault present from its first instant. A hard fault (a dead link, or a flapping link,
  checked as one flap striking as the step starts) meets the transport's own reaction in the
  do-nothing run (RoCE reroutes after ``reroute_s``, a sprayer retires its dead EVs after
  ``detect_s``); for a link long down and routed around already the gain of draining it is an
  upper bound.
- **A mitigation is planned.** In a mitigated run the transport acts at once on every hard
  failure present (its reaction option set to 0: routes and EVs are set before the traffic
  runs); a drained link or switch is a failure from time 0 (``sim.failures``).
- **Faults in the flow engine.** A link or NIC port below its rate keeps that fraction of its
  capacity; a lossy link (loss ``p``) is a gray link keeping what its resends leave: ``1 - p``
  for a sprayer (selective: one packet resent per loss), ``(1 - p) / (1 + p * W)`` for
  ``roce-ecmp`` (go-back-N: the ``W`` packets in flight resent per loss, ``W`` the bandwidth-
  delay product of a host port over the fabric's longest base round trip,
  :func:`go_back_n_window`); the flow engine has no per-flow loss, so a loss is a capacity
  (the stall of a flow whose tail is lost, a timeout, is not in the figures). Dead and
  flapping links are down. The faults that are no failure have the forms of
  :mod:`clusterloom.sim.faultforms` (:func:`fault_form`): a mis-hashed switch a skewed ECMP
  group (``share`` of its hashes on its first uplink), a congested spine its links' capacity
  taken by the other traffic (``max(0.05, 1 - load)``, as ``ops synth``), a straggler its
  rank's flows of each step ``delay`` late, a dead EV a black-holed bucket of the switch's ECMP
  table (1 in :data:`~clusterloom.sim.faultforms.DEAD_EV_BUCKETS` of what it hashes, the
  probe's EV among them): a sprayer's connection holding such an EV stalls until its
  ``detect_s`` (a fixed split; a balanced one loses the EV's share only, taken as nothing), a
  RoCE queue pair on it never delivers (the same 5-tuple, the same path), so its flow and
  those waiting for it never finish.
- **The packet engine** (``engine="packet"``, small designs and traffic only): the same faults
  as failures, router and traffic, and a dead EV as the engine's black-holed bucket
  (``run_packets(dead=)``: the packets a switch hashes into it dropped at its port, RoCE
  retransmitting on the same path until its retries run out, a sprayer resending elsewhere after
  its own detection); retiring the dead EV takes the bucket away (the sprayer sends nothing into
  it; its other EVs carry what it sent there); a drain there is a failure at time 0 that the
  transport learns as it learns any (no planned retirement: pessimistic for a sprayer), and
  reweighting a sprayer has no counterpart (its EVs follow its own feedback).
- **What each mitigation is in the engine.** Drain: the links down from time 0 (every
  transport routes around them). Retire EVs: the same links down for the job's sprayer only
  (the flow engine's sprayers retire EVs crossing a dead link; no switch changes, so no other
  traffic is touched), or for a dead EV that EV taken out of use at once; not for
  ``roce-ecmp``. Reweight a mis-hashed switch: its ECMP group reprogrammed even (the skew
  removed, any transport). Drain a congested spine: its other traffic moves to its peers
  (:func:`~clusterloom.sim.faultforms.moved_congestion`). Reweight: the sprayer's EV weights
  follow what each EV delivers (``balance=1``, the fluid limit of a weighted load balancer;
  weight moves off the suspect's paths and any other slow path); not for ``roce-ecmp``. Move
  ranks: the traffic of the bad hosts given to spare hosts the traffic does not use (lowest
  numbers first; never a faulty or straggling one), so it needs a traffic on fewer hosts than
  the fabric's.
- **Never worse.** A candidate is proposable only when every flow finishes and its predicted
  time beats doing nothing by more than ``min_gain`` (default the engine's rate tolerance,
  1%); one predicted worse, no better, or leaving flows unfinished is listed as refused with its
  figures.
- **Risk** (ties within the tolerance of the best go to the least risky): links drained for all
  traffic, hosts whose paths change, the capacity left at the switches a drain touches (the
  least of their live capacity on the drained side, as a fraction), and whether a second
  failure would partition (a host left on one live NIC port, or a switch on one live link
  toward the tier above, where it had more).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.ops.model import Fault, FaultKind, Suspect, SuspectKind

if TYPE_CHECKING:
    from clusterloom.changes import Approval, Decision, Proposal, Step
    from clusterloom.ops.fabric import OpsFabric
    from clusterloom.sim.faultforms import DeadBucket
    from clusterloom.sim.scenario import Scenario
    from clusterloom.sim.traffic import Traffic
    from clusterloom.store import Store

__all__ = [
    "PACKET_MAX_BYTES",
    "PACKET_MAX_FLOWS",
    "PACKET_MAX_HOSTS",
    "Checked",
    "FaultForm",
    "Mitigation",
    "MitigationKind",
    "Risk",
    "Verdict",
    "assumed_faults",
    "candidates",
    "check_mitigations",
    "decide",
    "evidence_rate",
    "fault_form",
    "fault_texts",
    "go_back_n_window",
    "proposable",
    "proposal_of",
    "propose_mitigation",
    "record_outcome",
    "suspect_fault",
]

#: payload bytes of a packet, as the engines' transports frame them
MSS_BYTES = 4096
#: the rate a suspected gray link or slow port is assumed to keep when a suspect (not a fault
#: with its severity) is checked
ASSUMED_RATE = 0.5
#: the flow engine's option that sets each transport's reaction to a hard failure
REACTION_OPTION = {"roce-ecmp": "reroute_s", "mrc-spray": "detect_s", "receiver-driven": "detect_s"}
#: the transports that spray over EVs (they can retire and reweight them)
SPRAYERS = ("mrc-spray", "receiver-driven")


class MitigationKind(StrEnum):
    DRAIN_LINK = "drain-link"
    DRAIN_SWITCH = "drain-switch"
    RETIRE_EVS = "retire-evs"
    REWEIGHT = "reweight"
    MOVE_RANKS = "move-ranks"


class Verdict(StrEnum):
    """What the check found: only ``better`` is ever proposed."""

    BETTER = "better"  #: every flow finishes, faster than doing nothing by more than min_gain
    NO_GAIN = "no-gain"  #: within min_gain of doing nothing
    WORSE = "worse"  #: slower than doing nothing
    UNFINISHED = "unfinished"  #: flows left unfinished (a partition), where nothing finished more
    NOT_APPLICABLE = "not-applicable"  #: cannot be expressed for this transport or traffic


@dataclass(frozen=True)
class Mitigation:
    """One mitigation: its kind, what it touches in the design's names (``objects``: link
    labels, switch or server names) and in the topology's ids (physical ``links`` it drains or
    retires, ``hosts`` whose ranks move), and the suspect it answers."""

    kind: MitigationKind
    target: str  #: the suspect's target it answers (a link label, a device, a port)
    objects: tuple[str, ...]
    links: tuple[int, ...] = ()
    hosts: tuple[int, ...] = ()
    #: the node id of a drained switch (its failure text ``switch:N@0``), or of the switch
    #: whose ECMP group a reweight reprograms evenly
    switch: int | None = None
    note: str = ""
    #: the dead EV (``SWITCH#EV`` or ``SRC>DST#EV``) that retiring EVs takes out of use
    ev: str | None = None

    @property
    def id(self) -> str:
        return f"{self.kind.value}:{self.target}"

    def failures(self) -> tuple[str, ...]:
        """The ``sim.failures`` texts that put a drain (or retired EVs) into a run."""
        if self.kind == MitigationKind.RETIRE_EVS and self.ev is not None:
            return ()  # one dead EV retired at the endpoints: no link changes
        if self.kind in (MitigationKind.DRAIN_SWITCH, MitigationKind.RETIRE_EVS) and (
            self.switch is not None
        ):  # one failure of every link: the transport reacts once
            return (f"switch:{self.switch}@0",)
        if self.kind in (MitigationKind.DRAIN_LINK, MitigationKind.RETIRE_EVS):
            return tuple(f"link:{i}@0" for i in self.links)
        return ()


@dataclass(frozen=True)
class Risk:
    """What a mitigation puts at risk (module docstring)."""

    links_drained: int = 0
    hosts_affected: int = 0
    capacity_left: float = 1.0
    second_failure_partitions: bool = False

    def key(self) -> tuple[int, int, int, float]:
        """Least risky first."""
        return (
            int(self.second_failure_partitions),
            self.links_drained,
            self.hosts_affected,
            -self.capacity_left,
        )


@dataclass(frozen=True)
class Checked:
    """A mitigation with its predicted figures next to doing nothing's (picoseconds: the
    completion time of the traffic, for a step the step's communication)."""

    mitigation: Mitigation
    verdict: Verdict
    reason: str
    nothing_ps: int
    nothing_finished: int
    predicted_ps: int | None
    finished: int
    flows: int
    risk: Risk
    transport: str
    #: the failures (fault, then drain) and transport options the mitigated run had
    failures: tuple[str, ...] = ()
    options: tuple[str, ...] = ()

    @property
    def gain(self) -> float | None:
        """The share of doing nothing's time saved (negative: slower)."""
        if self.predicted_ps is None or self.nothing_ps <= 0:
            return None
        return 1.0 - self.predicted_ps / self.nothing_ps

    @property
    def proposable(self) -> bool:
        return self.verdict == Verdict.BETTER

    def to_dict(self) -> dict[str, Any]:
        m = self.mitigation
        return {
            "mitigation": m.id,
            "kind": m.kind.value,
            "target": m.target,
            "objects": list(m.objects),
            "verdict": self.verdict.value,
            "reason": self.reason,
            "transport": self.transport,
            "nothing_ps": self.nothing_ps,
            "nothing_finished": self.nothing_finished,
            "predicted_ps": self.predicted_ps,
            "gain": None if self.gain is None else round(self.gain, 6),
            "finished": self.finished,
            "flows": self.flows,
            "risk": dataclasses.asdict(self.risk),
            "failures": list(self.failures),
            "options": list(self.options),
        }


def proposable(checked: Sequence[Checked]) -> tuple[Checked, ...]:
    """The checked mitigations that may be proposed, best first."""
    return tuple(c for c in checked if c.proposable)


# --- faults and suspects -------------------------------------------------------------------


def evidence_rate(suspect: Suspect) -> float | None:
    """The rate a suspected gray link or slow port keeps when its evidence says it (the
    exporters' operational speed: ``... 25% of the design's 400 Gb/s``, or a ``rate=F``), else
    None. Read defensively: a field ``rate`` or ``speed_share`` on the suspect counts too."""
    import re

    for name in ("speed_share", "rate"):
        v = getattr(suspect, name, None)
        if isinstance(v, int | float) and 0.0 < float(v) < 1.0:
            return float(v)
    for text in suspect.evidence:
        m = re.search(r"(\d+(?:\.\d+)?)% of the design's", text)
        if m is None:
            m2 = re.search(r"\brate=(0?\.\d+|0|1(?:\.0*)?)\b", text)
            value = float(m2.group(1)) if m2 else None
        else:
            value = float(m.group(1)) / 100.0
        if value is not None and 0.0 < value < 1.0:
            return value
    return None


def suspect_fault(suspect: Suspect, *, assumed_rate: float = ASSUMED_RATE) -> Fault:
    """The fault a suspect stands for, for a check: its kind (the suspect's ``fault``, else
    what its kind suggests) on its target, from time 0; a suspected gray link or slow port
    keeps the rate its evidence states (:func:`evidence_rate`: an operational speed below the
    design's), else ``assumed_rate`` (a suspect does not say how bad it is); the other kinds
    take ``ops synth``'s default size (a mis-hashed switch 0.8 of its flows on one uplink, a
    congested spine 0.5 extra load, a straggler 10 ms late)."""
    from clusterloom.ops.faults import default_severity

    kind = suspect.fault
    if kind is None:
        kind = {
            SuspectKind.LINK: FaultKind.GRAY_LINK,
            SuspectKind.PORT: FaultKind.SLOW_NIC_PORT,
            SuspectKind.EV: FaultKind.DEAD_EV,
            SuspectKind.RANK: FaultKind.STRAGGLER_RANK,
            SuspectKind.DEVICE: FaultKind.MIS_HASHED_SWITCH,
            SuspectKind.CONGESTION: FaultKind.CONGESTED_SPINE,
        }[suspect.kind]
    rate = 1.0
    note = f"suspect ({suspect.confidence:.2f})"
    if kind in (FaultKind.GRAY_LINK, FaultKind.SLOW_NIC_PORT):
        told = evidence_rate(suspect)
        rate = assumed_rate if told is None else told
        note += ", rate assumed" if told is None else ", rate from its evidence"
    return Fault(kind, suspect.target, 0, rate=rate, severity=default_severity(kind), note=note)


def _suspect_of(fault: Fault) -> Suspect:
    kind = {
        FaultKind.GRAY_LINK: SuspectKind.LINK,
        FaultKind.FLAPPING_LINK: SuspectKind.LINK,
        FaultKind.DEAD_LINK: SuspectKind.LINK,
        FaultKind.SLOW_NIC_PORT: SuspectKind.PORT,
        FaultKind.DEAD_EV: SuspectKind.EV,
        FaultKind.MIS_HASHED_SWITCH: SuspectKind.DEVICE,
        FaultKind.CONGESTED_SPINE: SuspectKind.CONGESTION,
        FaultKind.STRAGGLER_RANK: SuspectKind.RANK,
    }[fault.kind]
    return Suspect(kind, fault.target, 1.0, fault=fault.kind, evidence=("given as a fault",))


def _as_suspect(x: Fault | Suspect) -> Suspect:
    return x if isinstance(x, Suspect) else _suspect_of(x)


def assumed_faults(
    fabric: OpsFabric, given: Sequence[Fault | Suspect], *, assumed_rate: float = ASSUMED_RATE
) -> list[Fault]:
    """The faults a check runs with: the faults given (known faults, all present at once);
    with none, the most confident suspect whose fault the flow engine expresses, as
    :func:`suspect_fault` states it (suspects are alternative explanations, not faults at
    the same time). ``SpecError`` when no suspect is such a fault (congestion blames none)."""
    faults = [x for x in given if isinstance(x, Fault)]
    if faults:
        return faults
    ranked = sorted(
        (x for x in given if isinstance(x, Suspect)), key=lambda s: (-s.confidence, s.target)
    )
    for s in ranked:
        f = suspect_fault(s, assumed_rate=assumed_rate)
        try:
            fault_texts(f, fabric)
        except SpecError:
            continue
        return [f]
    raise SpecError(
        [
            Problem(
                "suspects",
                "no suspect is a fault the flow engine expresses (a link or a NIC port): "
                "nothing to check a mitigation against",
            )
        ]
    )


def go_back_n_window(fabric: OpsFabric) -> int:
    """Packets a go-back-N sender resends per loss: those in flight, the bandwidth-delay
    product of the fastest host port over the fabric's longest base round trip (up and down
    every tier and back, the links' median latency), in :data:`MSS_BYTES` packets."""
    t = fabric.topology
    host = np.asarray(t.link_tier) == 1
    rate = float(np.max(np.asarray(t.link_capacity_bps)[host]))
    rtt_ps = 2 * 2 * int(t.plan.tiers) * float(np.median(np.asarray(t.link_latency_ps)))
    return max(1, int(np.ceil(rate * rtt_ps / 1e12 / 8 / MSS_BYTES)))


def fault_texts(
    fault: Fault, fabric: OpsFabric, *, transport: str = "roce-ecmp"
) -> tuple[str, ...]:
    """The ``sim.failures`` texts that put ``fault`` into a checked run, present from time 0
    (module docstring, "Faults in the engines"): ``ops.faults.fault_failures`` of the
    fault in force for the whole run (``at_start``: a flapping link down, one flap striking as
    the step starts), a lossy link as the rate its losses leave ``transport`` (a go-back-N
    ``roce-ecmp`` resends :func:`go_back_n_window` packets per loss, a sprayer one); a
    congested spine as the capacity its extra load takes (``sim.faultforms``). A dead EV, a
    mis-hashed switch and a straggler are no failure (none: :func:`fault_form` gives their
    forms), their targets checked. ``SpecError`` naming the fault when the design has no such
    target."""
    from clusterloom.ops.faults import fault_failures, switch_node

    kind = fault.kind
    where = f"fault {kind.value}:{fault.target}"
    now = fault
    if kind in _FORMED:
        fault_form([fault], fabric)  # SpecError naming a target the design has not
        return ()
    if kind == FaultKind.CONGESTED_SPINE:
        from clusterloom.sim.faultforms import congestion_failures

        node = switch_node(fabric, fault.target, where)
        if int(fabric.topology.node_role[node]) < 2:
            raise SpecError([Problem(where, "a congested switch is a spine (or core)")])
        return congestion_failures(node, fault.severity or 0.5)
    if kind in (FaultKind.GRAY_LINK, FaultKind.SLOW_NIC_PORT):
        resend = go_back_n_window(fabric) if transport == "roce-ecmp" else 0
        now = dataclasses.replace(now, rate=_kept(fault, where, resend), loss=0.0)
    if kind in (FaultKind.GRAY_LINK, FaultKind.DEAD_LINK, FaultKind.FLAPPING_LINK):
        fabric.link_of_label(fault.target)  # SpecError naming it when the design has none
    if kind == FaultKind.SLOW_NIC_PORT:
        dev, _, ifname = fault.target.partition(":")
        if fabric.host_of(dev, ifname) is None:
            raise SpecError([Problem(where, "the design has no such NIC port (device:interface)")])
    texts = fault_failures(now, fabric, at_start=True)
    if not texts:
        raise SpecError([Problem(where, "the fault changes nothing the engines model")])
    return texts


#: the kinds whose form is not a failure (``sim.faultforms``)
_FORMED = (FaultKind.DEAD_EV, FaultKind.MIS_HASHED_SWITCH, FaultKind.STRAGGLER_RANK)


@dataclass(frozen=True)
class FaultForm:
    """What the faults that are no failure are in a run (``sim.faultforms``): mis-hashed
    switches ``(node, share)`` (a skewed ECMP group), stragglers ``(host, delay_ps)`` (their
    flows of each step late), dead EVs ``(target, switch node or None, (src, dst, port) or
    None, ev)``."""

    skews: tuple[tuple[int, float], ...] = ()
    stragglers: tuple[tuple[int, int], ...] = ()
    dead_evs: tuple[tuple[str, int | None, tuple[int, int, int] | None, int], ...] = ()


def fault_form(faults: Sequence[Fault], fabric: OpsFabric) -> FaultForm:
    """The :class:`FaultForm` of ``faults`` (the kinds no failure expresses), their targets
    checked against ``fabric`` (``SpecError`` naming the fault)."""
    from clusterloom.ops.faults import default_severity, switch_node, uplinks
    from clusterloom.units import PS_PER_US

    skews: list[tuple[int, float]] = []
    late: list[tuple[int, int]] = []
    dead: list[tuple[str, int | None, tuple[int, int, int] | None, int]] = []
    t = fabric.topology
    for f in faults:
        where = f"fault {f.kind.value}:{f.target}"
        size = f.severity or default_severity(f.kind)
        if f.kind == FaultKind.MIS_HASHED_SWITCH:
            node = switch_node(fabric, f.target, where)
            if uplinks(fabric, node).size < 2:
                raise SpecError([Problem(where, "has fewer than two uplinks to mis-hash over")])
            skews.append((node, size))
        elif f.kind == FaultKind.STRAGGLER_RANK:
            rank = f.target.removeprefix("rank:")
            if not rank.isdigit() or int(rank) >= t.plan.hosts:
                raise SpecError([Problem(where, f"a rank is rank:N, N < {t.plan.hosts}")])
            late.append((int(rank), max(1, round(size * PS_PER_US))))
        elif f.kind == FaultKind.DEAD_EV:
            path, sep, ev_text = f.target.rpartition("#")
            if not sep or not ev_text.isdigit():
                raise SpecError([Problem(where, "a dead EV is SRC>DST#EV or SWITCH#EV")])
            if ">" in path:
                a, _, b = path.partition(">")
                ha = fabric.host_of(*a.split(":", 1)) if ":" in a else None
                hb = fabric.host_of(*b.split(":", 1)) if ":" in b else None
                if ha is None or hb is None:
                    raise SpecError([Problem(where, "the design has no such NIC ports")])
                dead.append((f.target, None, (ha[0], hb[0], ha[1]), int(ev_text)))
            else:
                dead.append((f.target, switch_node(fabric, path, where), None, int(ev_text)))
    return FaultForm(tuple(skews), tuple(late), tuple(dead))


def _kept(fault: Fault, where: str, resend: int) -> float:
    """The fraction of its capacity a gray link or slow port keeps (rate and loss), with
    ``resend`` packets resent per loss besides the lost one."""
    if not 0.0 <= fault.loss < 1.0 or not 0.0 < fault.rate <= 1.0:
        raise SpecError([Problem(where, "loss is in [0, 1) and rate in (0, 1]")])
    kept = fault.rate * (1.0 - fault.loss) / (1.0 + fault.loss * resend)
    if kept >= 1.0:
        raise SpecError([Problem(where, "no loss and the full rate: that is no fault")])
    return max(round(kept, 6), 1e-4)  # a link at 0.01% is as good as dead


# --- candidates ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Index:
    """Device names to node ids, a node's links."""

    node_of: dict[str, int]
    names: NDArray[np.object_]


def _index(fabric: OpsFabric) -> _Index:
    t = fabric.topology
    names = np.asarray(fabric.names.device(np.arange(t.n_nodes, dtype=np.int64)), dtype=object)
    return _Index({str(n): i for i, n in enumerate(names.tolist())}, names)


def _node_links(fabric: OpsFabric, node: int) -> NDArray[np.int64]:
    t = fabric.topology
    out: NDArray[np.int64] = np.flatnonzero((t.link_src == node) | (t.link_dst == node)).astype(
        np.int64
    )
    return out


def _below(fabric: OpsFabric, node: int) -> NDArray[np.int64]:
    """The hosts below switch ``node`` (down every tier to the hosts), by id."""
    t = fabric.topology
    frontier = np.array([node], dtype=np.int64)
    hosts: list[NDArray[np.int64]] = []
    for _ in range(int(t.plan.tiers)):
        ends = np.unique(t.link_src[np.isin(t.link_dst, frontier)]).astype(np.int64)
        hosts.append(ends[ends < t.plan.hosts])
        frontier = ends[ends >= t.plan.hosts]
        if frontier.size == 0:
            break
    out: NDArray[np.int64] = np.unique(np.concatenate(hosts)) if hosts else frontier[:0]
    return out


def _host_of_target(fabric: OpsFabric, target: str) -> int | None:
    dev, _, ifname = target.partition(":")
    hp = fabric.host_of(dev, ifname)
    return None if hp is None else hp[0]


def candidates(fabric: OpsFabric, suspects: Sequence[Suspect | Fault]) -> tuple[Mitigation, ...]:
    """The mitigations worth checking for the ranked suspects (or faults), in their order,
    each once: a link: drain it, retire its EVs, reweight away from it (a host link also: move
    the host's ranks); a switch: drain it, retire the EVs through it (a leaf also: move the
    ranks of the hosts below it, its rack; a mis-hashed switch also: reweight its uplinks, its
    ECMP group reprogrammed even); a NIC port: move the host's ranks, drain the port's link,
    retire its EVs; a straggler rank: move it to a spare host; a dead EV: retire it (at a
    switch also: drain the switch); congestion on a spine: reweight the sprayers off it, drain
    it (its other traffic moving to its peers: often worse than doing nothing), move the ranks
    of the hosts below it to spares elsewhere (a 3-tier spine's pod; in 2 tiers every host is
    below every spine and no spare avoids it). A suspect naming nothing in the design is
    refused."""
    t = fabric.topology
    idx: _Index | None = None
    out: dict[str, Mitigation] = {}

    def add(m: Mitigation) -> None:
        out.setdefault(m.id, m)

    for x in suspects:
        s = _as_suspect(x)
        if s.kind == SuspectKind.CONGESTION:
            idx = idx or _index(fabric)
            node = idx.node_of.get(s.target)
            if node is None or int(t.node_role[node]) < 2:
                raise SpecError([Problem(s.target, "the design has no such spine (or core)")])
            links = _node_links(fabric, node)
            ids = tuple(int(i) for i in links)
            add(
                Mitigation(
                    MitigationKind.REWEIGHT,
                    s.target,
                    tuple(fabric.link_label(i) for i in ids),
                    links=ids,
                    note="the sprayers' EVs weighted by what they deliver, off the hot spine",
                )
            )
            add(
                Mitigation(
                    MitigationKind.DRAIN_SWITCH,
                    s.target,
                    (s.target,),
                    links=ids,
                    switch=node,
                    note=f"{len(ids)} links; the other traffic moves to its peers",
                )
            )
            below = _below(fabric, node)
            add(
                Mitigation(
                    MitigationKind.MOVE_RANKS,
                    s.target,
                    tuple(f"rank:{h}" for h in below.tolist()),
                    hosts=tuple(int(h) for h in below),
                    note=f"the {below.size} hosts below {s.target}, to spares elsewhere",
                )
            )
            continue
        if s.kind == SuspectKind.LINK:
            link = fabric.link_of_label(s.target)
            label = fabric.link_label(link)
            add(Mitigation(MitigationKind.DRAIN_LINK, s.target, (label,), links=(link,)))
            add(Mitigation(MitigationKind.RETIRE_EVS, s.target, (label,), links=(link,)))
            add(Mitigation(MitigationKind.REWEIGHT, s.target, (label,), links=(link,)))
            if int(t.link_tier[link]) == 1:
                host = int(t.link_src[link])
                add(
                    Mitigation(
                        MitigationKind.MOVE_RANKS, s.target, (f"rank:{host}",), hosts=(host,)
                    )
                )
        elif s.kind == SuspectKind.DEVICE:
            idx = idx or _index(fabric)
            node = idx.node_of.get(s.target)
            if node is None or int(t.node_role[node]) == 0:
                raise SpecError([Problem(s.target, "the design has no such switch")])
            links = _node_links(fabric, node)
            labels = tuple(fabric.link_label(int(i)) for i in links)
            add(
                Mitigation(
                    MitigationKind.DRAIN_SWITCH,
                    s.target,
                    (s.target,),
                    links=tuple(int(i) for i in links),
                    switch=node,
                    note=f"{len(links)} links",
                )
            )
            add(
                Mitigation(
                    MitigationKind.RETIRE_EVS,
                    s.target,
                    labels,
                    links=tuple(int(i) for i in links),
                    switch=node,
                )
            )
            ups = links[t.link_src[links] == node]
            if s.fault in (None, FaultKind.MIS_HASHED_SWITCH) and ups.size >= 2:
                add(
                    Mitigation(
                        MitigationKind.REWEIGHT,
                        s.target,
                        (s.target,),
                        links=tuple(int(i) for i in ups),
                        switch=node,
                        note="its ECMP group reprogrammed even over its uplinks",
                    )
                )
            hosts = np.unique(t.link_src[links[t.link_tier[links] == 1]]).astype(np.int64)
            if hosts.size:
                devs = tuple(f"rank:{h}" for h in hosts.tolist())
                add(
                    Mitigation(
                        MitigationKind.MOVE_RANKS,
                        s.target,
                        devs,
                        hosts=tuple(int(h) for h in hosts),
                        note=f"the {hosts.size} hosts below {s.target}",
                    )
                )
        elif s.kind == SuspectKind.PORT:
            dev, _, ifname = s.target.partition(":")
            hp = fabric.host_of(dev, ifname)
            at = fabric.interface(dev, ifname)
            if hp is None or at is None:
                raise SpecError([Problem(s.target, "the design has no such NIC port")])
            link = at[0]
            label = fabric.link_label(link)
            add(Mitigation(MitigationKind.MOVE_RANKS, s.target, (f"rank:{hp[0]}",), hosts=(hp[0],)))
            add(Mitigation(MitigationKind.DRAIN_LINK, s.target, (label,), links=(link,)))
            add(Mitigation(MitigationKind.RETIRE_EVS, s.target, (label,), links=(link,)))
        elif s.kind == SuspectKind.RANK:
            rank_s = s.target.removeprefix("rank:")
            if not rank_s.isdigit() or int(rank_s) >= t.plan.hosts:
                raise SpecError([Problem(s.target, f"a rank is rank:N, N < {t.plan.hosts}")])
            host = int(rank_s)
            add(Mitigation(MitigationKind.MOVE_RANKS, s.target, (f"rank:{host}",), hosts=(host,)))
        elif s.kind == SuspectKind.EV:
            path, _, _ = s.target.rpartition("#")
            add(Mitigation(MitigationKind.RETIRE_EVS, s.target, (s.target,), ev=s.target))
            if ">" not in path:
                idx = idx or _index(fabric)
                node = idx.node_of.get(path)
                if node is None or int(t.node_role[node]) == 0:
                    raise SpecError([Problem(s.target, "the design has no such switch")])
                links = _node_links(fabric, node)
                add(
                    Mitigation(
                        MitigationKind.DRAIN_SWITCH,
                        path,
                        (path,),
                        links=tuple(int(i) for i in links),
                        switch=node,
                        note=f"{len(links)} links",
                    )
                )
    return tuple(out.values())


# --- the check -----------------------------------------------------------------------------


#: the packet engine checks designs and traffic up to these sizes (a run per candidate; the
#: engine's memory and time grow with the packets in flight and the fabric's queues)
PACKET_MAX_HOSTS = 1024
PACKET_MAX_FLOWS = 512
PACKET_MAX_BYTES = 1 << 30


def check_mitigations(
    fabric: OpsFabric,
    faults: Sequence[Fault | Suspect],
    candidates: Sequence[Mitigation],
    *,
    traffic: str | None = None,
    engine: str = "flow",
    seed: int = 0,
    transport: str | None = None,
    size: str | None = None,
    hosts: int | None = None,
    min_gain: float | None = None,
    progress: Callable[[str], None] | None = None,
    assumed_rate: float = ASSUMED_RATE,
    seeds: int = 1,
) -> tuple[Checked, ...]:
    """Each candidate simulated on the design with the faults (:func:`assumed_faults`: the
    faults given, all present at once; for suspects, the most confident one the engine can
    express) and the job's traffic, against doing nothing; ranked: the
    proposable (:data:`Verdict.BETTER`) first, those within the engine's tolerance of the best
    by risk then time, the others by time; then the refused (module docstring).

    ``engine`` is ``flow`` (default) or ``packet`` (small designs and traffic only:
    :data:`PACKET_MAX_HOSTS`, :data:`PACKET_MAX_FLOWS`, :data:`PACKET_MAX_BYTES`; a dead EV is
    the engine's black-holed bucket there). ``traffic`` is a ``sim.scenario`` traffic kind
    (default: ``step`` when the spec has a job, else the standard permutation), ``size`` its
    message size, ``hosts`` how many hosts it spans (the rest are spares to move ranks to);
    ``transport`` the job's transport (default: the spec scenario's first, else ``roce-ecmp``);
    ``min_gain`` the share of doing nothing's time a mitigation must save (default the engine's
    rate tolerance); ``progress`` is told what runs as each run starts; ``assumed_rate`` the
    rate a suspected gray link or slow port keeps when its evidence does not say; ``seeds`` how
    many seeds (``seed``, ``seed + 1``...: the traffic's draw and the switches' hash) every run
    is made with: the figures are their means, and a candidate is proposable only when it is
    better on every one."""
    from clusterloom.sim.scenario import DEFAULT_TRAFFIC, build_traffic, resolve_scenario

    if engine not in ("flow", "packet"):
        raise SpecError([Problem("engine", f"the flow or the packet engine, not '{engine}'")])
    if not faults:
        raise SpecError([Problem("faults", "give the fault (or suspects) to check against")])
    spec, topo = fabric.spec, fabric.topology
    fault_list = assumed_faults(fabric, faults, assumed_rate=assumed_rate)
    names = _transport_of(spec, transport, engine)
    texts = tuple(t for f in fault_list for t in fault_texts(f, fabric, transport=names))
    form = fault_form(fault_list, fabric)
    kind = traffic or ("step" if spec.job is not None else DEFAULT_TRAFFIC)
    base = resolve_scenario(
        spec,
        topo,
        engine="packet" if engine == "packet" else "flow",
        traffic=kind,
        size=size,
        transports=[names],
        failures=list(texts),
        hosts=hosts,
        seed=seed,
    )
    if not 1 <= seeds <= 16:
        raise SpecError([Problem("seeds", f"from 1 to 16 seeds, got {seeds}")])
    gain_floor = base.rtol if min_gain is None else min_gain
    if not 0.0 <= gain_floor < 1.0:
        raise SpecError([Problem("min_gain", f"a share in [0, 1), got {gain_floor}")])
    if engine == "packet":
        _packet_fits(fabric, base, form)

    def figures(sc: Scenario, m: Mitigation | None) -> tuple[int, int, int]:
        return _figures(fabric, sc, form, m, base)

    say = progress or (lambda _text: None)
    bases = [base] + [
        dataclasses.replace(
            base,
            seed=seed + r,
            traffic=build_traffic(
                spec, base.traffic_kind, base.nbytes, hosts, seed + r, topo.plan.hosts
            ),
        )
        for r in range(1, seeds)
    ]
    nothing = []
    for b in bases:
        say(f"doing nothing, seed {b.seed}: {len(b.traffic or ()):,} flows on {names} ({engine})")
        nothing.append(figures(b, None))
    flows = nothing[0][2]
    nothing_ps = round(sum(x[0] for x in nothing) / len(nothing))
    nothing_done = min(x[1] for x in nothing)
    used = np.zeros(topo.plan.hosts, dtype=bool)
    for b in bases:
        assert b.traffic is not None
        used[b.traffic.src] = True
        used[b.traffic.dst] = True
    out: list[Checked] = []
    for m in candidates:
        risk = _risk(fabric, m, used)
        common = {
            "mitigation": m,
            "nothing_ps": nothing_ps,
            "nothing_finished": nothing_done,
            "flows": flows,
            "risk": risk,
            "transport": names,
        }
        variants = [_variant(fabric, b, m, used, fault_list) for b in bases]
        why = next((v for v in variants if isinstance(v, str)), None)
        if why is not None:
            out.append(
                Checked(
                    verdict=Verdict.NOT_APPLICABLE,
                    reason=why,
                    predicted_ps=None,
                    finished=0,
                    **common,  # type: ignore[arg-type]
                )
            )
            continue
        say(f"{m.id} ({len(out) + 1} of {len(candidates)})")
        ready = [v for v in variants if not isinstance(v, str)]
        runs = []
        for (sc, _), (n_ps, n_done, _) in zip(ready, nothing, strict=True):
            ps, done, _ = figures(sc, m)
            runs.append((ps, done, _verdict(ps, done, n_ps, n_done, flows, gain_floor)))
        verdict, reason = _combined(runs, [b.seed for b in bases])
        sc, options = ready[0]
        out.append(
            Checked(
                verdict=verdict,
                reason=reason,
                predicted_ps=round(sum(r[0] for r in runs) / len(runs)),
                finished=min(r[1] for r in runs),
                failures=sc.failure_texts,
                options=options,
                **common,  # type: ignore[arg-type]
            )
        )
    return _ranked(out, base.rtol)


def _packet_fits(fabric: OpsFabric, base: Scenario, form: FaultForm) -> None:
    """Refuse a packet-engine check the engine cannot express or that is too big."""
    problems: list[Problem] = []
    hosts = int(fabric.topology.plan.hosts)
    load = base.traffic
    assert load is not None
    if hosts > PACKET_MAX_HOSTS:
        problems.append(
            Problem(
                "--engine packet",
                f"the design has {hosts:,} hosts, the packet engine checks up to "
                f"{PACKET_MAX_HOSTS:,}: use the flow engine",
            )
        )
    if len(load) > PACKET_MAX_FLOWS or int(load.nbytes.sum()) > PACKET_MAX_BYTES:
        problems.append(
            Problem(
                "--engine packet",
                f"{len(load):,} flows of {int(load.nbytes.sum()):,} B: the packet engine checks "
                f"up to {PACKET_MAX_FLOWS:,} flows and {PACKET_MAX_BYTES:,} B (give --hosts and "
                "--size, or use the flow engine)",
            )
        )
    if problems:
        raise SpecError(problems)


def _figures(
    fabric: OpsFabric, sc: Scenario, form: FaultForm, m: Mitigation | None, base: Scenario
) -> tuple[int, int, int]:
    """``(completion ps, flows finished, flows)`` of one run: ``sc`` with the faults' forms
    (``sim.faultforms``) as mitigation ``m`` leaves them (None: doing nothing)."""
    from clusterloom.sim.predict import FlowPrediction, predict

    topo = fabric.topology
    sc, router, stalled = _formed(fabric, sc, form, m, base)
    if sc.engine == "packet" and form.dead_evs:
        return _packet_figures(fabric, sc, router, _dead_buckets(form, m))
    p = predict(topo, sc, router=router, keep_runs=stalled is not None)
    if isinstance(p, FlowPrediction):
        sm = p.summaries[0]
        ps, done, flows = sm.makespan_ps, sm.finished, sm.flows
        if stalled is not None:  # black-holed RoCE queue pairs never deliver
            assert sc.traffic is not None
            real = ~sc.traffic.barrier
            finish = p.runs[0].result.finish_ps
            done -= int(((finish >= 0) & stalled & real).sum())
        return ps, done, flows
    r = p.outcomes[0].result
    fin = np.asarray(r.finish_ps)
    ok = fin >= 0
    return int(fin[ok].max(initial=0)), int(ok.sum()), int(fin.size)


def _dead_buckets(form: FaultForm, m: Mitigation | None) -> tuple[DeadBucket, ...]:
    """The dead EVs of ``form`` as the packet engine takes them, less the one ``m`` retires
    (a sprayer that retires the EV sends nothing into its bucket)."""
    from clusterloom.sim.faultforms import DeadBucket

    return tuple(
        DeadBucket(ev, None if pair is not None else switch, pair)
        for target, switch, pair, ev in form.dead_evs
        if not (m is not None and m.kind == MitigationKind.RETIRE_EVS and m.ev == target)
    )


def _packet_figures(
    fabric: OpsFabric, sc: Scenario, router: Any, dead: Sequence[DeadBucket]
) -> tuple[int, int, int]:
    """``(completion ps, flows finished, flows)`` of ``sc`` on the packet engine with the
    ``dead`` EVs (``run_packets(dead=)``), run as ``sim.predict`` runs its transport."""
    from clusterloom.sim.packet.options import config_from, split_options
    from clusterloom.sim.packet.run import run_packets

    name = sc.transports[0]
    assert sc.traffic is not None
    knobs, opts = split_options(sc.options_of(name))
    r = run_packets(
        fabric.topology,
        sc.traffic,
        name,
        sc.failures,
        seed=sc.seed,
        options=opts or None,
        config=config_from({**dict(sc.packet), **knobs}),
        router=router or fabric.router,
        dead=dead,
    )
    fin = np.asarray(r.finish_ps)
    ok = fin >= 0
    return int(fin[ok].max(initial=0)), int(ok.sum()), int(fin.size)


def _formed(
    fabric: OpsFabric, sc: Scenario, form: FaultForm, m: Mitigation | None, base: Scenario
) -> tuple[Scenario, Any, NDArray[np.bool_] | None]:
    """``sc`` with the forms of the faults no failure expresses, as ``m`` leaves them: the
    router with each mis-hashed switch's skewed group (unless ``m`` reweights that switch),
    stragglers' flows late (by host: ranks moved off a straggler are on time), a dead EV's
    units lost (unless ``m`` retires that EV): a sprayer's connections holding one stall until
    its detection, RoCE's flows holding one (and those waiting for them) never finish."""
    from clusterloom.sim.faultforms import black_holed, skewed_router, straggling
    from clusterloom.sim.flow.transports import transport as make

    router = None
    for node, share in form.skews:
        if m is not None and m.kind == MitigationKind.REWEIGHT and m.switch == node:
            continue
        router, _ = skewed_router(router or fabric.router, node, share)
    traffic = sc.traffic
    assert traffic is not None
    if form.stragglers:
        for host, delay_ps in form.stragglers:
            traffic = straggling(traffic, [host], delay_ps)
    stalled: NDArray[np.bool_] | None = None
    name = sc.transports[0]
    planned = m is not None and m.kind in (
        MitigationKind.DRAIN_LINK,
        MitigationKind.DRAIN_SWITCH,
        MitigationKind.RETIRE_EVS,
    )
    alive = np.ones(fabric.topology.n_links, dtype=bool)
    if planned:
        for f in sc.failures:
            if f.fraction == 0.0 and f.start_ps == 0:
                alive[f.links] = False
    opts = sc.options_of(name)
    for target, switch, pair, ev in form.dead_evs if sc.engine != "packet" else ():
        if m is not None and m.kind == MitigationKind.RETIRE_EVS and m.ev == target:
            continue
        src = traffic.src.astype(np.int64)
        dst = traffic.dst.astype(np.int64)
        dead, owner = black_holed(
            router or fabric.router,
            name,
            src,
            dst,
            sc.seed,
            alive=alive,
            switch=switch,
            ev=ev,
            pair=pair,
            qps=int(opts["qps"]) if opts.get("qps") else None,
            evs=int(opts["evs"]) if opts.get("evs") else None,
        )
        hit = np.bincount(owner[dead], minlength=len(traffic)) > 0
        if name == "roce-ecmp":
            stalled = _waiting(traffic, hit | (stalled if stalled is not None else hit))
        elif not bool(opts.get("balance", 0.0)):
            # a fixed split stalls until the sprayer's own detection retires the EV
            detect = make(name, **base.options_of(name)).reroute_delay_s()
            from clusterloom.units import PS_PER_S

            free = np.diff(traffic.dep_ptr) == 0
            late = hit & free
            start = traffic.start_ps.astype(np.int64)
            start = np.where(late, np.maximum(start, round(detect * PS_PER_S)), start)
            traffic = dataclasses.replace(traffic, start_ps=start)
    return dataclasses.replace(sc, traffic=traffic), router, stalled


def _waiting(traffic: Traffic, hit: NDArray[np.bool_]) -> NDArray[np.bool_]:
    """``hit`` and every flow that waits for one of them, directly or not."""
    from clusterloom.sim.faultforms import waiting_on

    return waiting_on(traffic, hit)


def _transport_of(spec: Any, given: str | None, engine: str = "flow") -> str:
    from clusterloom.sim.registry import REGISTRY

    if given is not None:
        if given not in REGISTRY or engine not in REGISTRY[given].engines:
            raise SpecError([Problem("--transport", f"not a {engine}-engine transport: {given}")])
        if REGISTRY[given].bound:
            raise SpecError([Problem("--transport", "the ideal bound is no job's transport")])
        return given
    sc = spec.scenario
    for name in sc.transports if sc and sc.transports else ():
        if name in REGISTRY and engine in REGISTRY[name].engines and not REGISTRY[name].bound:
            return str(name)
    return "roce-ecmp"


def _verdict(
    ps: int, done: int, nothing_ps: int, nothing_done: int, flows: int, floor: float
) -> tuple[Verdict, str]:
    if done < flows and done <= nothing_done:
        return Verdict.UNFINISHED, f"{flows - done:,} of {flows:,} flows never finish"
    if done > nothing_done:  # doing nothing leaves flows unfinished, this finishes more
        if done == flows:
            return Verdict.BETTER, "every flow finishes; doing nothing leaves some unfinished"
        return Verdict.UNFINISHED, f"{flows - done:,} of {flows:,} flows never finish"
    if ps < nothing_ps * (1.0 - floor):
        return Verdict.BETTER, f"{1 - ps / nothing_ps:.1%} faster than doing nothing"
    if ps > nothing_ps:
        return Verdict.WORSE, f"{ps / nothing_ps - 1:.1%} slower than doing nothing"
    return Verdict.NO_GAIN, f"within {floor:.1%} of doing nothing"


def _combined(
    runs: Sequence[tuple[int, int, tuple[Verdict, str]]], seeds: Sequence[int]
) -> tuple[Verdict, str]:
    """One verdict over the seeds' runs: better only when better on every seed; else the
    first seed's that left flows unfinished, was worse, or gained nothing (in that order)."""
    if len(runs) == 1:
        return runs[0][2]
    for bad in (Verdict.UNFINISHED, Verdict.WORSE, Verdict.NO_GAIN):
        for (_, _, (v, why)), seed in zip(runs, seeds, strict=True):
            if v == bad:
                return v, f"seed {seed}: {why}"
    return Verdict.BETTER, f"better on each of {len(runs)} seeds: " + ", ".join(
        r[2][1].split(" than")[0] for r in runs
    )


def _ranked(checked: list[Checked], rtol: float) -> tuple[Checked, ...]:
    good = [c for c in checked if c.proposable]
    rest = [c for c in checked if not c.proposable]
    best = min((c.predicted_ps or 0 for c in good), default=0)

    def key(c: Checked) -> tuple[Any, ...]:
        ps = c.predicted_ps or 0
        if ps <= best * (1.0 + rtol):
            return (0, c.risk.key(), ps, c.mitigation.id)
        return (1, ps, c.risk.key(), c.mitigation.id)

    order = list(Verdict)

    def refused(c: Checked) -> tuple[Any, ...]:
        ps = c.predicted_ps if c.predicted_ps is not None else 2**63
        return (order.index(c.verdict), ps, c.mitigation.id)

    return tuple(sorted(good, key=key)) + tuple(sorted(rest, key=refused))


def _variant(
    fabric: OpsFabric, base: Scenario, m: Mitigation, used: NDArray[np.bool_], faults: list[Fault]
) -> tuple[Scenario, tuple[str, ...]] | str:
    """The mitigated scenario and its options, or why the mitigation cannot be expressed."""
    from clusterloom.sim.failures import parse_failure

    name = base.transports[0]
    packet = base.engine == "packet"
    options = dict(base.options_of(name))
    even = m.kind == MitigationKind.REWEIGHT and m.switch is not None  # a switch's ECMP group
    if m.kind in (MitigationKind.RETIRE_EVS, MitigationKind.REWEIGHT) and not even:
        if name not in SPRAYERS:
            verb = "retire" if m.kind == MitigationKind.RETIRE_EVS else "reweight"
            return f"{name} does not spray: it has no EVs to {verb}"
        if not m.links and m.ev is None:
            return m.note or "names no link the flow engine can take the EVs off"
        if packet and m.kind == MitigationKind.REWEIGHT:
            return "the packet engine's sprayers weigh their EVs by their own feedback: no weights"
    texts = tuple(base.failure_texts)
    traffic = base.traffic
    if m.kind in (
        MitigationKind.DRAIN_LINK,
        MitigationKind.DRAIN_SWITCH,
        MitigationKind.RETIRE_EVS,
    ):
        texts = texts + m.failures()
    if m.kind == MitigationKind.DRAIN_SWITCH and m.switch is not None:
        texts = texts + _moved_load(fabric, m.switch, faults)
    if m.kind == MitigationKind.REWEIGHT and not even:
        options["balance"] = 1.0
    if m.kind == MitigationKind.MOVE_RANKS:
        assert traffic is not None
        moved = _moved(fabric, traffic, m, used, faults)
        if isinstance(moved, str):
            return moved
        traffic = moved
    planned = (MitigationKind.DRAIN_LINK, MitigationKind.DRAIN_SWITCH, MitigationKind.RETIRE_EVS)
    option = None if packet else REACTION_OPTION.get(name)
    if m.kind in planned and option is not None and m.failures():  # planned: acted on first
        options[option] = 0.0
    if not packet:
        from clusterloom.sim.flow.transports import transport as make

        make(name, **options)  # checked as the scenario's own options are
    topo = fabric.topology
    sc = dataclasses.replace(
        base,
        failure_texts=texts,
        failures=tuple(parse_failure(t, topo) for t in texts),
        options=((name, tuple(sorted(options.items()))),) if options else (),
        traffic=traffic,
    )
    return sc, tuple(f"{name}.{k}={v:g}" for k, v in sorted(options.items()))


def _moved_load(fabric: OpsFabric, node: int, faults: Sequence[Fault]) -> tuple[str, ...]:
    """The other traffic of a congested switch that is drained, on its peers
    (``sim.faultforms.moved_congestion``); none when it is not congested."""
    from clusterloom.ops.faults import default_severity, switch_node
    from clusterloom.sim.faultforms import moved_congestion

    out: tuple[str, ...] = ()
    for f in faults:
        if f.kind != FaultKind.CONGESTED_SPINE:
            continue
        if switch_node(fabric, f.target, f.target) == node:
            load = f.severity or default_severity(f.kind)
            out += moved_congestion(fabric.topology, node, load)
    return out


def _moved(
    fabric: OpsFabric, traffic: Traffic, m: Mitigation, used: NDArray[np.bool_], faults: list[Fault]
) -> Traffic | str:
    """``traffic`` with the ranks of ``m.hosts`` on spare hosts (lowest first), or why not."""
    t = fabric.topology
    bad = np.zeros(t.plan.hosts, dtype=bool)
    bad[list(m.hosts)] = True
    for f in faults:  # never move a rank onto a faulty host
        h = _host_of_target(fabric, f.target) if f.kind == FaultKind.SLOW_NIC_PORT else None
        if f.kind == FaultKind.STRAGGLER_RANK and f.target.removeprefix("rank:").isdigit():
            h = int(f.target.removeprefix("rank:"))
        if h is not None and h < t.plan.hosts:
            bad[h] = True
    movers = np.flatnonzero(bad & used)
    if movers.size == 0:
        return "the traffic uses none of these hosts: nothing to move"
    spares = np.flatnonzero(~used & ~bad)
    if spares.size < movers.size:
        return (
            f"{movers.size} ranks to move, {spares.size} spare hosts: run the traffic on fewer "
            "hosts than the fabric's (hosts=N)"
        )
    where = np.arange(t.plan.hosts, dtype=np.int64)
    where[movers] = spares[: movers.size]
    src = where[traffic.src].astype(np.int32)
    dst = where[traffic.dst].astype(np.int32)
    n = int(max(int(src.max(initial=0)), int(dst.max(initial=0))) + 1)
    return dataclasses.replace(traffic, src=src, dst=dst, n_hosts=max(n, traffic.n_hosts))


def _risk(fabric: OpsFabric, m: Mitigation, used: NDArray[np.bool_]) -> Risk:
    t = fabric.topology
    if m.kind == MitigationKind.MOVE_RANKS:
        return Risk(hosts_affected=2 * len(m.hosts))
    if m.kind == MitigationKind.REWEIGHT:
        # weights move off the suspect for the job's hosts below its lower end
        return Risk(hosts_affected=_hosts_below(fabric, np.asarray(m.links), used))
    if not m.links:
        return Risk()
    links = np.asarray(m.links, dtype=np.int64)
    cap = np.asarray(t.link_capacity_bps, dtype=np.float64)
    alive = np.ones(t.n_links, dtype=bool)
    alive[links] = False
    touched = np.unique(np.concatenate([t.link_src[links], t.link_dst[links]]))
    least = 1.0
    partitions = False
    for node in touched.tolist():
        if m.switch is not None and node == m.switch:
            continue
        mine = (t.link_src == node) | (t.link_dst == node)
        for side in (t.link_src == node, t.link_dst == node):  # toward the tier above, below
            sel = mine & side
            if not (sel & ~alive).any():
                continue
            before = float(cap[sel].sum())
            after = float(cap[sel & alive].sum())
            least = min(least, after / before if before > 0 else 1.0)
        up = t.link_src == node
        if int((up & alive).sum()) == 1 and int(up.sum()) > 1:
            partitions = True
    hosts = _hosts_below(fabric, links, used if m.kind == MitigationKind.RETIRE_EVS else None)
    return Risk(
        links_drained=0 if m.kind == MitigationKind.RETIRE_EVS else int(links.size),
        hosts_affected=hosts,
        capacity_left=round(least, 6),
        second_failure_partitions=partitions,
    )


def _hosts_below(
    fabric: OpsFabric, links: NDArray[np.int64], used: NDArray[np.bool_] | None
) -> int:
    """Hosts whose paths change when ``links`` go: those at a host link's end, and those
    below the lower-end switch of a fabric link (only the traffic's, with ``used``)."""
    t = fabric.topology
    if links.size == 0:
        return 0
    lower = t.link_src[links]
    below = np.zeros(t.plan.hosts, dtype=bool)
    host_side = lower < t.plan.hosts
    below[lower[host_side]] = True
    switches = np.unique(lower[~host_side])
    frontier = switches
    for _ in range(3):  # down the tiers to the hosts
        if frontier.size == 0:
            break
        sel = np.isin(t.link_dst, frontier)
        ends = np.unique(t.link_src[sel])
        below[ends[ends < t.plan.hosts]] = True
        frontier = ends[ends >= t.plan.hosts]
    if used is not None:
        below &= used
    return int(below.sum())


# --- proposing -----------------------------------------------------------------------------


def _fmt_ps(ps: int | None) -> str:
    from clusterloom.sim.flow.run import fmt_time

    return "-" if ps is None else fmt_time(ps)


def _steps(fabric: OpsFabric, c: Checked) -> tuple[Step, ...]:
    from clusterloom.changes import Step

    m = c.mitigation
    checks: dict[str, int | float | str] = {
        "ops:nothing-ps": c.nothing_ps,
        "ops:predicted-ps": c.predicted_ps or 0,
        "ops:gain": round(c.gain or 0.0, 6),
        "ops:capacity-left": c.risk.capacity_left,
        "ops:hosts-affected": c.risk.hosts_affected,
        "ops:second-failure-partitions": int(c.risk.second_failure_partitions),
        "ops:transport": c.transport,
        "ops:mitigation": m.id,
    }
    labels = tuple(fabric.link_label(i) for i in m.links)
    live = fabric.topology.n_links - (c.risk.links_drained)
    what = {
        MitigationKind.DRAIN_LINK: f"drain {', '.join(m.objects)}",
        MitigationKind.DRAIN_SWITCH: f"drain switch {m.target} ({len(labels)} links)",
        MitigationKind.RETIRE_EVS: f"retire the EVs whose paths cross {m.target} at the "
        "endpoints' sprayers (no switch change)",
        MitigationKind.REWEIGHT: f"reweight the sprayers' EVs by delivery, away from {m.target}",
        MitigationKind.MOVE_RANKS: f"move the job's ranks off {', '.join(m.objects)} to spares",
    }[m.kind]
    if m.kind == MitigationKind.RETIRE_EVS and m.ev is not None:
        what = f"retire the dead EV {m.ev} at the endpoints' sprayers (no switch change)"
    if m.kind == MitigationKind.REWEIGHT and m.switch is not None:
        what = f"reprogram {m.target}'s ECMP group even over its {len(m.links)} uplinks"
    drain = labels if m.kind in (MitigationKind.DRAIN_LINK, MitigationKind.DRAIN_SWITCH) else ()
    first = Step(
        order=1,
        action="drain",
        objects=m.objects,
        reason=f"{what}: predicted {_fmt_ps(c.predicted_ps)} against {_fmt_ps(c.nothing_ps)} "
        f"doing nothing ({c.reason})",
        drain=drain,
        live_links=live,
        checks=checks,
        valid=True,
    )
    restore = Step(
        order=2,
        action="restore",
        objects=m.objects,
        reason=f"after the repair of {m.target}: undo ({what}) and check its counters and probes",
        live_links=fabric.topology.n_links,
    )
    return first, restore


def _spec_hash(fabric: OpsFabric) -> str:
    from clusterloom.spec.load import spec_hash

    return spec_hash(fabric.spec)


def proposal_of(
    fabric: OpsFabric,
    checked: Sequence[Checked],
    *,
    suspects: Sequence[Suspect | Fault] = (),
    author: str = "ops",
) -> Proposal | None:
    """The best proposable mitigation as a ``changes.Proposal`` (None: none beats doing
    nothing): a drain and a restore step; its reasons the suspects, the prediction of each
    candidate (refused ones too). The id is a hash of the design, the suspects and the
    figures, so the same check proposes the same id."""
    from clusterloom.changes import ChangePlan, Proposal

    good = proposable(checked)
    if not good:
        return None
    best = good[0]
    spec = _spec_hash(fabric)
    reasons = [
        f"suspect {s.kind.value} {s.target} ({s.confidence:.2f}"
        + (f", {s.fault.value}" if s.fault else "")
        + ")"
        + (": " + "; ".join(s.evidence) if s.evidence else "")
        for s in (_as_suspect(x) for x in suspects)
    ]
    reasons += [
        f"{c.verdict.value}: {c.mitigation.id} predicted {_fmt_ps(c.predicted_ps)} "
        f"against {_fmt_ps(c.nothing_ps)} doing nothing on {c.transport} ({c.reason})"
        for c in checked
    ]
    digest = hashlib.sha256(
        json.dumps(
            {"spec": spec, "reasons": reasons, "best": best.to_dict()}, sort_keys=True
        ).encode()
    ).hexdigest()[:12]
    pid = f"ops-{best.mitigation.kind.value}-{digest}"
    plan = ChangePlan(
        id=pid,
        baseline=spec,
        target=spec,
        steps=_steps(fabric, best),
        summary={"candidates": len(checked), "proposable": len(good)},
    )
    return Proposal(id=pid, plan=plan, author=author, reasons=tuple(reasons))


def propose_mitigation(
    fabric: OpsFabric,
    checked: Sequence[Checked],
    *,
    suspects: Sequence[Suspect | Fault] = (),
    author: str = "ops",
    store: Store | None = None,
    log: str | Path | None = None,
) -> Proposal | None:
    """:func:`proposal_of`, recorded in ``store`` (``Store.record``) or appended to the
    JSON-lines ``log`` (``changes.append_record``); None (nothing recorded) when no candidate
    beats doing nothing."""
    from clusterloom.changes import append_record

    proposal = proposal_of(fabric, checked, suspects=suspects, author=author)
    if proposal is None:
        return None
    if store is not None:
        store.record(proposal, user=author)
    elif log is not None:
        known = _log_ids(Path(log))
        if proposal.id not in known:
            append_record(log, proposal)
    return proposal


# --- deciding ------------------------------------------------------------------------------


def _log_ids(path: Path) -> set[str]:
    from clusterloom.changes import Proposal, read_records

    if not path.exists():
        return set()
    return {r.id for r in read_records(path) if isinstance(r, Proposal)}


def _proposal(store: Store, proposal_id: str) -> Proposal:
    from clusterloom.changes import Proposal
    from clusterloom.errors import StoreError

    rec = store.change_record(proposal_id)
    if not isinstance(rec, Proposal):
        raise StoreError(f"record {proposal_id[:64]!r} is a {rec.kind}, not a proposal")
    return rec


def _context(p: Proposal) -> dict[str, Any]:
    step = p.plan.steps[0] if p.plan.steps else None
    checks = dict(step.checks) if step is not None else {}
    return {
        "design": p.plan.baseline,
        "mitigation": checks.get("ops:mitigation", ""),
        "objects": list(step.objects) if step is not None else [],
        "predicted_ps": checks.get("ops:predicted-ps"),
        "nothing_ps": checks.get("ops:nothing-ps"),
        "transport": checks.get("ops:transport"),
        "reasons": list(p.reasons),
    }


def _chosen(p: Proposal) -> str:
    return str(_context(p)["mitigation"] or p.id)


def decide(
    proposal_id: str,
    *,
    by: str,
    approved: bool,
    note: str,
    store: Store,
    log: str | Path | None = None,
) -> tuple[Approval, Decision]:
    """``by``'s approval (or rejection) of a proposed mitigation and the
    ``changes.Decision`` with its context (the proposal's prediction and evidence, the note),
    recorded in ``store`` and, when given, appended to the JSON-lines ``log`` too (for a log
    alone, ``store`` is ``clusterloom.store.log_store(log)``: the store's approval model over
    the log). A decision is made once: a proposal decided or superseded already is refused
    (``StoreError``), as the store's ``approve`` refuses it. The caller opens the store (a
    lifecycle part imports none)."""
    from clusterloom.changes import Approval, Decision, append_record

    p = _proposal(store, proposal_id)
    store.approve(proposal_id, user=by, reason=note, approved=approved)
    approval = Approval(proposal=proposal_id, approver=by, approved=approved, note=note)
    context = {**_context(p), "approver": by, "approved": approved, "note": note}
    decision = Decision(
        proposal=proposal_id, context=context, chosen=_chosen(p) if approved else "nothing"
    )
    store.record(decision, user=by)
    if log is not None:
        append_record(log, approval)
        append_record(log, decision)
    return approval, decision


def record_outcome(
    proposal_id: str,
    *,
    measured_ps: int,
    by: str,
    note: str = "",
    store: Store,
    log: str | Path | None = None,
) -> Decision:
    """The outcome of an approved mitigation: the decision again with ``outcome`` filled
    (the measured time next to the prediction, the error) and the measured figure in its
    context, recorded in ``store`` (and appended to ``log`` when given, as :func:`decide`);
    refused (``StoreError``) unless the proposal was approved."""
    from clusterloom.changes import Decision, append_record
    from clusterloom.errors import StoreError

    if measured_ps <= 0:
        raise SpecError([Problem("--measured", "a measured time is > 0")])
    status = store.proposal_status(proposal_id)
    if status != "approved":
        raise StoreError(
            f"proposal {proposal_id[:64]!r} is {status}: an outcome is recorded for an "
            "approved mitigation"
        )
    p = _proposal(store, proposal_id)
    context = _context(p)
    predicted = context.get("predicted_ps")
    nothing = context.get("nothing_ps")
    error = (
        measured_ps / float(predicted) - 1.0
        if isinstance(predicted, int | float) and predicted
        else None
    )
    outcome = (
        f"measured {_fmt_ps(measured_ps)}; predicted {_fmt_ps(_int(predicted))} "
        f"(doing nothing {_fmt_ps(_int(nothing))})"
        + (f"; error {error:+.1%}" if error is not None else "")
        + (f"; {note}" if note else "")
    )
    decision = Decision(
        proposal=proposal_id,
        context={
            **context,
            "measured_ps": measured_ps,
            "error": None if error is None else round(error, 6),
            "by": by,
            "note": note,
        },
        chosen=_chosen(p),
        outcome=outcome,
    )
    store.record(decision, user=by)
    if log is not None:
        append_record(log, decision)
    return decision


def _int(x: object) -> int | None:
    return int(x) if isinstance(x, int | float) else None
