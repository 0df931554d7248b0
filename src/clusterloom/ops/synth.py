"""Telemetry a design would produce under injected faults, with the truth beside it (issue 23,
``clusterloom ops synth``).

:func:`synthesize` runs the design's traffic on the flow engine once per *fabric state* (the
set of capacity-changing faults active: dead or flapped-down links, gray links at a fraction
of their rate, slow NIC ports, congested spines) and turns the runs into counters, probes and
collective timings over a timeline of ``duration_s`` sampled every ``interval_s``. The healthy
state's run is cached per fabric and traffic, so a batch of incidents on one design simulates
the baseline once and each incident only its faulted states. What no simulator failure
expresses is applied where it acts (below).

The model, assumption by assumption:

- **Traffic and load.** The spec's job step flows when it has a job (``sim.scenario``'s ``step``
  traffic; a step of more than :data:`STEP_FLOWS_MAX` flows falls back, noted), else a permutation
  of the scenario's size (2 MB by default) among all hosts, drawn with ``traffic_seed``; run on
  the flow engine with RoCE (one ECMP path per queue pair, ``roce-ecmp``, which reroutes at once:
  the steady state after reconvergence) at ``simulate``'s 1% rate tolerance, hashed under the
  fabric's ``hash_seed``. The traffic repeats as a job's steps do: each step spends the flow
  engine's completion time (its makespan) communicating and a fixed compute time, set so that the
  healthy fabric communicates ``load`` of the time (default 0.5). A fault that slows the
  communication lengthens the step; the bytes a link carries per second are its bytes per step
  over the step time. Rates are steady over an interval (the average of the states it holds,
  weighted by time).
- **Counters** (per interface, cumulative from a seeded value below 2**40, sampled at the start
  and at every interval's end): bytes on the wire (headers included, as the flow engine frames
  them); packets = bytes / (MSS + header); **drops** only from loss (bit errors: a lossless RoCE
  fabric does not drop for congestion), counted at the receiving interface, drawn binomially over
  the packets sent, so tx bytes at one end equal rx bytes plus the dropped packets' bytes at the
  other; **ECN marks** at the egress (tx) interface with probability ``rho**ECN_K`` per packet and
  **PFC pauses** received by the egress interface at ``rho**PFC_K / PFC_PACKETS_PER_PAUSE`` per
  packet (``rho`` the link's utilisation over the capacity it had, a slow port's or a gray link's
  cut rate, capped at 0.99: the probability that an M/M/1 queue holds more than K packets);
  **FEC** codewords (RS(544,514), 5,440 bits) at line rate whenever the link is up, each corrected
  with probability ``FEC_CORRECTED`` (a healthy pre-FEC BER of about 1e-8) and, on a lossy gray
  link, uncorrectable with probability ``loss / codewords per packet`` and corrected
  ``FEC_GRAY_FACTOR`` times as often; **link up** as the state at the sample; the **speed**
  gauge (``speed_bps``) the design's rate, and a gray link's cut rate at both ends while it is
  cut: the assumption that a rate cut is lanes trained down, which the port's operational
  speed shows (``speed_shows_rate_cut=False``: a cut by another cause, invisible there; a slow
  NIC port's is never shown).
- **Probes** (Pingmesh-like): every host probes ``peers`` (2) distinct peers drawn with
  ``traffic_seed`` (a fixed pattern, as a deployment keeps it) among the hosts under other leaves,
  on port ``(host + j) % ports``, with each of ``PROBE_EVS`` as the UDP source port, ``probe_hz``
  (1) probes a second; the reply comes back on the reverse path with the same EV. A probe is lost
  with the path's loss (``1 - prod(1 - loss)`` over both directions), always on a dead EV's path,
  and for ``reconverge_s`` (1 s) after a link on its path goes down (then ECMP routes it around,
  ``OpsFabric.paths`` with the link dead); the count lost is binomial (seeded). RTT = propagation
  (the links' latency) + serialisation of a ``PROBE_BYTES`` packet + queueing, each link's M/M/1
  wait ``rho / (1 - rho)`` MSS-packet times, + ``HOST_US`` at each end; the mean of the probes
  returned adds a Gamma-distributed spread of the queueing and ``HOST_JITTER_US``, the largest the
  expected maximum of that many.
- **Collectives**: one step sampled per interval (a profiler's sampled step): per rank and
  collective (the job's ops; for generic traffic the traffic kind), the time from the rank's first
  flow start to its last flow's end in the state's run, with a 1% lognormal jitter; a rank's flows
  over a lossy link are slower by go-back-N retransmission, ``1 + loss * window`` (``window``: the
  path's bandwidth-delay product in packets). A **straggler** enters each step's first collective
  ``delay`` late: the collective is synchronous, so every *other* rank waits ``delay`` longer in
  it and the straggler's own duration is the base (a straggler is the rank that does not wait).
- **Faults no failure expresses**: a gray link's loss (both directions) acts on the packets
  counted over it, its FEC and the probes crossing it; a dead EV is the check's black-holed
  bucket (``sim.faultforms.black_holed``, :func:`stalled_flows`): the probes (either way) and the
  queue pairs the switch hashes into it are lost, a stalled queue pair's flow and those waiting
  for it carry nothing from the fault on and its rank's collective reports no duration (it never
  ends; the step goes on without it); a mis-hashed switch sends ``share`` of the bytes
  it sends up to its first uplink and the rest evenly to the others (the flows beyond the
  favourite's capacity are slowed by the overload), and the probes it forwards up take that uplink
  with probability ``share``; a congested spine carries ``load`` of its links' capacity as extra
  traffic (the flow engine runs with that capacity taken).

Which engine supplies which signal: the flow engine derives rates, utilisation, collective
times and probe RTTs from the simulated link loads; with ``engine="flow"`` drops, ECN marks and
PFC pauses are the stated models above. With ``engine="packet"`` (designs of at most
:data:`PACKET_HOSTS_MAX` hosts and traffic of at most :data:`PACKET_FLOWS_MAX` flows) they come
from the packet engine's per-port counters instead (``sim.packet.run.PortCounters``): one step
of the same traffic runs per (fabric state, losses in force) on ``roce-ecmp`` over a lossless
fabric (PFC, DCQCN's ECN marking, the engine's buffers), failures and losses from the step's
start with the routes already converged; a segment of the timeline counts its seconds times
that run's count per second of a step (the run's communication time plus the healthy step's
compute time). Drops are counted where they happen: a packet lost on a link's wire (a gray
link's loss) at the interface receiving it, one dropped at a full or dead output port at the
interface sending it. Every other column, the probes and the collectives are the flow
synthesis' (the same draws are made, so they are identical). The faults with a form of their
own take the check's (``sim.faultforms``) in the packet runs: a mis-hashed switch its skewed ECMP
group, a straggler its flows late, a dead EV its black-holed bucket (``run_packets(dead=)``,
dropped at the switch's port); a congested spine is its capacity taken, as in the flow engine.
The NICs' ``retransmissions`` counter is the packet runs' retransmissions of the queue pairs each
host port sends (null on switch ports, and with the flow engine). Same inputs and seed give
identical tables.
"""

from __future__ import annotations

import dataclasses
import json
import math
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.ops.fabric import OpsFabric
from clusterloom.ops.faults import (
    PROBE_EVS,
    flap_windows,
    format_fault,
    probe_streams,
    shifted,
    uplinks,
)
from clusterloom.ops.model import (
    COLLECTIVE_SCHEMA,
    COUNTER_SCHEMA,
    COUNTERS,
    PROBE_SCHEMA,
    Fault,
    FaultKind,
)

if TYPE_CHECKING:
    from clusterloom.sim.faultforms import DeadBucket
    from clusterloom.sim.traffic import Traffic

__all__ = [
    "DEFAULT_START_MS",
    "Synthetic",
    "synthesize",
    "write_synthetic",
]

F64 = NDArray[np.float64]
I64 = NDArray[np.int64]

#: the default start of the synthetic telemetry: 2026-12-01T00:00:00Z
DEFAULT_START_MS = 1_796_083_200_000
MSS = 4096  #: payload bytes per packet (``sim.flow.transports.MSS_BYTES``)
HDR = 64  #: header bytes per packet (``HDR_BYTES``)
PROBE_BYTES = 128  #: a probe packet on the wire
HOST_US = 2.0  #: host stack time at each end of a probe
HOST_JITTER_US = 0.5  #: mean of the host stack's random part per probe
ECN_K = 20  #: ECN marking threshold, packets in the egress queue
PFC_K = 60  #: PFC XOFF threshold, packets
PFC_PACKETS_PER_PAUSE = 64  #: packets held by one pause frame
FEC_BITS = 5440  #: RS(544,514) codeword
FEC_PAYLOAD_BITS = 5140
FEC_CORRECTED = 5.4e-5  #: share of codewords corrected on a healthy link (pre-FEC BER ~1e-8)
FEC_GRAY_FACTOR = 100.0  #: corrected codewords per uncorrectable one on a gray link
RHO_MAX = 0.99
COUNTER_BASE_MAX = 2**40
#: the transport of the runs (flow and packet): RoCE, on a lossless (PFC) fabric with DCQCN's
#: ECN in the packet engine
PACKET_TRANSPORT = "roce-ecmp"


@dataclass(frozen=True, eq=False)
class Synthetic:
    """Synthetic telemetry in ``ops.model``'s schemas and the faults injected (``truth``, times
    in epoch milliseconds like the telemetry's ``ts_ms``); ``start_ms`` is the first sample.
    ``notes`` say what produced it (engine, traffic, load)."""

    counters: pa.Table
    probes: pa.Table
    collectives: pa.Table
    truth: tuple[Fault, ...]
    start_ms: int
    notes: tuple[str, ...] = field(default=())


# -- the flow engine's states ----------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class _State:
    """One fabric state's run: bytes per step on each directed link, the step's
    communication time (ps) and each (group, rank)'s time in it (us), the flows' units."""

    link_bytes: F64
    makespan_ps: int
    rank_us: F64  # [groups, hosts], NaN where the rank has no flow of the group
    unit_flow: I64
    unit_ptr: I64
    unit_link: I64
    unit_bytes: F64 = field(default_factory=lambda: np.zeros(0))
    #: [groups, hosts]: the rank's collective never ends (a flow of it stalled on a dead EV)
    hung: NDArray[np.bool_] | None = None


#: per fabric (weakly: a fabric dropped drops its entries): the traffic built and the
#: healthy state's run, by (traffic asked, seed), so a batch of incidents on one design
#: simulates the baseline once
_CACHE: weakref.WeakKeyDictionary[OpsFabric, dict[tuple[str | None, int], Any]] = (
    weakref.WeakKeyDictionary()
)


def _cached(fabric: OpsFabric, key: tuple[str | None, int], make: Any) -> Any:
    per = _CACHE.setdefault(fabric, {})
    if key not in per:
        per[key] = make()
    return per[key]


def _run_state(fabric: OpsFabric, traffic: Traffic, fractions: dict[int, float]) -> _State:
    """The flow engine on ``traffic`` with physical links ``fractions`` (link -> the fraction
    of capacity left; 0: down) from the start."""
    from clusterloom.sim.failures import Failure
    from clusterloom.sim.flow.run import run
    from clusterloom.sim.flow.transports import transport
    from clusterloom.sim.scenario import DEFAULT_RTOL

    fails = tuple(
        Failure(f"link:{link}", np.array([link], dtype=np.int64), 0, None, frac)
        for link, frac in sorted(fractions.items())
    )
    tr = transport("roce-ecmp", reroute_s=0.0)
    r = run(
        fabric.topology,
        traffic,
        tr,
        fails,
        seed=fabric.hash_seed,  # the switches' ECMP hash, as the probes' paths use it
        router=fabric.router,
        rtol=DEFAULT_RTOL,  # simulate's rate tolerance: 1%, 50 times faster at 16k hosts
        watch_links=np.zeros(0, dtype=np.int64),
    )
    units = r.units
    live = r.unit_replaced_ps < 0
    n_dir = 2 * fabric.topology.n_links
    counts = np.diff(units.unit_ptr)
    per_link = np.repeat(r.unit_bytes, counts)
    keep = units.unit_link < n_dir
    link_bytes = np.bincount(units.unit_link[keep], weights=per_link[keep], minlength=n_dir).astype(
        np.float64
    )
    real = ~traffic.barrier if traffic.barrier.size else np.ones(len(traffic), dtype=bool)
    done = (r.finish_ps >= 0) & real
    end = int(r.finish_ps[done].max(initial=0))
    makespan = end if done.all() or not real.any() else max(end, int(r.end_ps))
    groups = max(len(traffic.group_names), int(traffic.group.max(initial=-1)) + 1, 1)
    hosts = int(fabric.topology.plan.hosts)
    g = np.where(traffic.group >= 0, traffic.group, 0).astype(np.int64)[real]
    src = traffic.src.astype(np.int64)[real]
    start = r.start_ps[real].astype(np.float64)
    finish = np.where(r.finish_ps[real] >= 0, r.finish_ps[real], makespan).astype(np.float64)
    key = g * hosts + src
    first = np.full(groups * hosts, np.inf)
    last = np.full(groups * hosts, -np.inf)
    np.minimum.at(first, key, start)
    np.maximum.at(last, key, finish)
    rank_us = np.where(np.isfinite(first), (last - first) / 1e6, np.nan).reshape(groups, hosts)
    # the units that carry each flow at the end (one path per queue pair), data links only
    sel = np.flatnonzero(live)
    idx = _ranges(units.unit_ptr[sel], counts[sel])
    data = (~units.control[idx] if units.control.size else np.ones(idx.size, dtype=bool)) & (
        units.unit_link[idx] < n_dir
    )
    owner = np.repeat(np.arange(sel.size), counts[sel])[data]
    ptr = np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=sel.size))]).astype(np.int64)
    idx = idx[data]
    return _State(
        link_bytes=link_bytes,
        makespan_ps=max(makespan, 1),
        rank_us=rank_us,
        unit_flow=units.unit_flow[sel].astype(np.int64),
        unit_ptr=ptr,
        unit_link=units.unit_link[idx].astype(np.int64),
        unit_bytes=np.asarray(r.unit_bytes, dtype=np.float64)[sel],
    )


# -- dead EVs: the check's form (sim.faultforms.black_holed) ---------------------------------

#: the entry in a fabric state's key of fault ``i`` of the incident that has a form of its own
#: (``sim.faultforms``: a dead EV, and with ``engine="packet"`` a mis-hashed switch and a
#: straggler): ``(DEAD_KEY - i, 1.0)`` (no link has a negative id); :func:`_split_key`
#: separates them from the links
DEAD_KEY = -1


def _split_key(key: tuple[tuple[int, float], ...]) -> tuple[dict[int, float], tuple[int, ...]]:
    """A state key's links (link -> fraction) and its formed faults (indices into the
    faults)."""
    links = {link: x for link, x in key if link >= 0}
    dead = tuple(DEAD_KEY - link for link, _x in key if link < 0)
    return links, dead


def dead_bucket(fabric: OpsFabric, fault: Fault) -> DeadBucket:
    """The ``sim.faultforms.DeadBucket`` of a dead-EV fault (``SWITCH#EV`` or ``SRC>DST#EV``),
    as ``ops.mitigate.fault_form`` reads it."""
    from clusterloom.ops.faults import switch_node
    from clusterloom.sim.faultforms import DeadBucket

    path, _, ev_text = fault.target.rpartition("#")
    if ">" in path:
        a, _, b = path.partition(">")
        ha, hb = fabric.host_of(*a.split(":", 1)), fabric.host_of(*b.split(":", 1))
        assert ha is not None and hb is not None
        return DeadBucket(int(ev_text), pair=(ha[0], hb[0], ha[1]))
    return DeadBucket(int(ev_text), switch=switch_node(fabric, path, path))


def stalled_flows(
    fabric: OpsFabric,
    traffic: Traffic,
    faults: Sequence[Fault],
    alive: NDArray[np.bool_] | None = None,
) -> tuple[NDArray[np.bool_], I64, NDArray[np.bool_]]:
    """``(dead, unit_flow, stalled)`` of ``traffic`` on the synthesis' transport (RoCE, one
    queue pair per host port and flow) under the dead-EV ``faults``: per unit (as
    ``sim.faultforms.unit_evs`` draws them) whether a dead bucket loses it, the unit's flow,
    and per flow whether it never finishes (a dead queue pair, or waiting for such a flow):
    exactly what ``ops.mitigate``'s check takes for the same fault (``black_holed`` with the
    fabric's hash seed)."""
    from clusterloom.sim.faultforms import black_holed, waiting_on

    src = traffic.src.astype(np.int64)
    dst = traffic.dst.astype(np.int64)
    dead_any: NDArray[np.bool_] | None = None
    owner = np.zeros(0, dtype=np.int64)
    for f in faults:
        hole = dead_bucket(fabric, f)
        dead, owner = black_holed(
            fabric.router,
            PACKET_TRANSPORT,
            src,
            dst,
            fabric.hash_seed,
            alive=alive,
            switch=hole.switch,
            ev=hole.ev,
            pair=hole.pair,
        )
        dead_any = dead if dead_any is None else dead_any | dead
    if dead_any is None:
        return np.zeros(0, dtype=bool), owner, np.zeros(len(traffic), dtype=bool)
    hit = np.bincount(owner[dead_any], minlength=len(traffic)) > 0
    return dead_any, owner, waiting_on(traffic, hit)


def _dead_state(
    fabric: OpsFabric,
    traffic: Traffic,
    st: _State,
    fractions: dict[int, float],
    dead_faults: Sequence[Fault],
) -> _State:
    """``st`` (the fabric state's run) with its dead EVs in force, as the check has them: a
    queue pair in a dead bucket never delivers and the flows waiting for it never start, so
    their bytes leave every link they crossed (a stalled queue pair resends a window per
    retransmission timeout: nothing at these rates), and the collective of a rank holding one
    never ends (``hung``: the profiler reports no duration for it). The others' step is the
    run's (the check's run: the stalled flows had their share of the links in it)."""
    t = fabric.topology
    alive = np.ones(t.n_links, dtype=bool)
    for link, x in fractions.items():
        if x == 0.0:
            alive[link] = False
    dead, owner, stalled = stalled_flows(fabric, traffic, dead_faults, alive)
    n_dir = 2 * t.n_links
    counts = np.diff(st.unit_ptr)
    first = np.full(counts.size, -1, dtype=np.int64)  # a unit's first data link: its host's
    first[counts > 0] = st.unit_link[st.unit_ptr[:-1][counts > 0]]
    # the state's units by (flow, first link): the host link of their port
    _f, port, _ev = _units_of(fabric, traffic)
    src = traffic.src.astype(np.int64)
    host_dl = 2 * fabric.router.host_link[src[owner], port]
    dead_key = set((owner[dead] * n_dir + host_dl[dead]).tolist())
    key = st.unit_flow * n_dir + first
    gone = np.isin(key, np.fromiter(dead_key, np.int64, len(dead_key))) | stalled[st.unit_flow]
    gone_bytes = np.repeat(np.where(gone, st.unit_bytes, 0.0), counts)
    link_bytes = st.link_bytes - np.bincount(st.unit_link, weights=gone_bytes, minlength=n_dir)
    hosts = int(t.plan.hosts)
    hung = np.zeros(st.rank_us.shape, dtype=bool)
    if stalled.any():
        g = np.where(traffic.group >= 0, traffic.group, 0).astype(np.int64)
        hung.reshape(-1)[np.unique(g[stalled] * hosts + src[stalled])] = True
    return dataclasses.replace(
        st,
        link_bytes=np.maximum(link_bytes, 0.0),
        hung=hung,
    )


def _units_of(fabric: OpsFabric, traffic: Traffic) -> tuple[I64, I64, I64]:
    from clusterloom.sim.faultforms import unit_evs

    return unit_evs(
        PACKET_TRANSPORT,
        fabric.router,
        traffic.src.astype(np.int64),
        traffic.dst.astype(np.int64),
        fabric.hash_seed,
    )


# -- the packet engine's states (engine="packet") --------------------------------------------

#: the largest fabric and traffic ``engine="packet"`` runs: one packet run of a 2 MB
#: permutation on 1,024 hosts takes tens of seconds per fabric state (docs/ops.md)
PACKET_HOSTS_MAX = 1024
PACKET_FLOWS_MAX = 16_384


@dataclass(frozen=True, eq=False)
class _PacketState:
    """One (fabric state, losses)'s packet run: per directed link, what one step did
    (``sim.packet.run.PortCounters``' totals) and the step's communication time (ps)."""

    drops: I64  # dropped at the link's output port
    lost: I64  # lost on its wire
    marks: I64
    pauses: I64
    retransmissions: int
    makespan_ps: int
    unfinished: int
    #: per directed link: the retransmissions of the queue pairs sending on it (a host
    #: port's uplink: the NIC's own), 0 elsewhere
    retx: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: a dead EV's part (not in the above): the drops at the dead buckets' ports and the
    #: stalled queue pairs' retransmissions over the whole run, which lasted ``run_ps`` (until
    #: their retries ran out): a stalled queue pair keeps retrying at that rate, step or not
    dead_drops: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    dead_retx: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    run_ps: int = 0


def _check_packet_size(fabric: OpsFabric, traffic: Traffic) -> None:
    hosts = int(fabric.topology.plan.hosts)
    problems = []
    if hosts > PACKET_HOSTS_MAX:
        problems.append(
            Problem(
                "--engine",
                f"the packet engine runs designs of at most {PACKET_HOSTS_MAX:,} hosts here "
                f"(this one has {hosts:,}); use --engine flow (drops, ECN and PFC modelled)",
            )
        )
    if len(traffic) > PACKET_FLOWS_MAX:
        problems.append(
            Problem(
                "--engine",
                f"the packet engine runs at most {PACKET_FLOWS_MAX:,} flows a step here (this "
                f"traffic has {len(traffic):,}); use --traffic permutation or --engine flow",
            )
        )
    if problems:
        raise SpecError(problems)


def _loss_windows(
    faults: Sequence[Fault], fabric: OpsFabric, horizon_ms: int
) -> list[tuple[int, int, dict[int, float]]]:
    """``(start, end, {link: loss})`` of the gray links that lose packets."""
    out = []
    for f in faults:
        if f.kind is FaultKind.GRAY_LINK and f.loss > 0.0:
            end = f.end_ms if f.end_ms is not None else horizon_ms
            out.append((f.start_ms, end, {fabric.link_of_label(f.target): f.loss}))
    return out


def _packet_forms(
    fabric: OpsFabric, traffic: Traffic, formed: Sequence[Fault]
) -> tuple[Any, Traffic, tuple[DeadBucket, ...]]:
    """The packet run's router, traffic and dead EVs for the faults that have a form of their
    own, as the check (``ops.mitigate``) has them: a mis-hashed switch its skewed ECMP group
    (``faultforms.skewed_router``, ``share`` of its hashes on its first uplink), a straggler its
    rank's flows that wait for nothing ``delay`` late (``faultforms.straggling``), a dead EV
    its black-holed bucket (``run_packets(dead=)``)."""
    from clusterloom.ops.faults import switch_node
    from clusterloom.sim.faultforms import skewed_router, straggling
    from clusterloom.units import PS_PER_US

    router = fabric.router
    dead: list[DeadBucket] = []
    for f in formed:
        if f.kind is FaultKind.MIS_HASHED_SWITCH:
            router, _ = skewed_router(router, switch_node(fabric, f.target, f.target), f.severity)
        elif f.kind is FaultKind.STRAGGLER_RANK:
            host = int(f.target.split(":")[1])
            traffic = straggling(traffic, [host], max(1, round(f.severity * PS_PER_US)))
        elif f.kind is FaultKind.DEAD_EV:
            dead.append(dead_bucket(fabric, f))
    return router, traffic, tuple(dead)


def _run_packet_state(
    fabric: OpsFabric,
    traffic: Traffic,
    fractions: dict[int, float],
    losses: dict[int, float],
    limit_ps: int,
    *,
    router: Any = None,
    dead: Sequence[DeadBucket] = (),
) -> _PacketState:
    """The packet engine on one step of ``traffic`` with physical links ``fractions`` (0:
    down) and ``losses`` in force from the start. The traffic starts 1 ps after the failures,
    whose reroute is immediate, so its routes are the fabric's after reconvergence (the
    flow engine's steady state)."""
    from dataclasses import replace

    from clusterloom.sim.failures import Failure
    from clusterloom.sim.packet.engine import PacketConfig
    from clusterloom.sim.packet.run import config_for, run_packets

    fails = tuple(
        Failure(f"link:{link}", np.array([link], dtype=np.int64), 0, None, frac)
        for link, frac in sorted(fractions.items())
    )
    cfg = config_for(PACKET_TRANSPORT, PacketConfig(reroute_ps=0, max_time_ps=limit_ps))
    later = replace(traffic, start_ps=traffic.start_ps + 1)
    r = run_packets(
        fabric.topology,
        later,
        PACKET_TRANSPORT,
        fails,
        config=cfg,
        seed=fabric.hash_seed,
        router=router if router is not None else fabric.router,
        ports_sample_ps=limit_ps,  # one sample: the step's totals are what is used
        losses=losses,
        dead=dead,
    )
    p = r.ports
    assert p is not None
    real = ~traffic.barrier if traffic.barrier.size else np.ones(len(traffic), dtype=bool)
    done = (r.finish_ps >= 0) & real
    end = int(r.finish_ps[done].max(initial=0))
    # each flow's one queue pair sends on host port ``flow % ports`` (transports.RoceEcmp)
    rt = router if router is not None else fabric.router
    ports = int(rt.host_link.shape[1])
    flows = np.arange(len(traffic), dtype=np.int64)
    nic = 2 * rt.host_link[traffic.src.astype(np.int64), flows % ports]
    n_dir = 2 * fabric.topology.n_links
    stalled = (r.finish_ps < 0) & real if dead else np.zeros(len(traffic), dtype=bool)
    retx = np.bincount(nic, weights=r.retransmissions * ~stalled, minlength=n_dir)
    dead_retx = np.bincount(nic, weights=r.retransmissions * stalled, minlength=n_dir)
    dead_drops = (
        r.dead_drops.astype(np.int64)
        if r.dead_drops is not None
        else np.zeros(n_dir, dtype=np.int64)
    )
    return _PacketState(
        retx=retx.astype(np.int64),
        dead_retx=dead_retx.astype(np.int64),
        dead_drops=dead_drops,
        run_ps=int(r.end_ps),
        drops=p.total("drops").astype(np.int64) - dead_drops,
        lost=p.total("lost").astype(np.int64),
        marks=p.total("marks").astype(np.int64),
        pauses=p.total("pauses").astype(np.int64),
        retransmissions=int(r.retransmissions.sum()),
        # flows stalled on a dead EV: the step goes on without them (as the flow synthesis');
        # a partition's flows are cut off at the run's end
        makespan_ps=max(end if done.sum() == real.sum() or dead else int(r.end_ps), 1),
        unfinished=int(real.sum() - done.sum()),
    )


def _packet_counters(
    fabric: OpsFabric,
    faults: Sequence[Fault],
    traffic: Traffic,
    cache_key: tuple[str | None, int],
    seg_a: I64,
    seg_b: I64,
    seg_interval: I64,
    seg_state: list[tuple[tuple[int, float], ...]],
    losses: list[tuple[int, int, dict[int, float]]],
    states: dict[tuple[tuple[int, float], ...], _State],
    compute_ps: float,
    n_int: int,
    interval_ms: int,
) -> tuple[dict[str, I64], str]:
    """Per interval and directed link, the packet engine's drops (``drops`` at the output
    port, ``lost`` on the wire), ECN ``marks`` and PFC ``pauses``: each segment of the
    timeline takes its (fabric state, losses)'s packet run, repeated as the job's steps are
    (a step: the run's communication time and the healthy step's compute time), so a
    segment's count is its seconds times the run's count per second; an interval's counts
    are the whole part of the running sum (cumulative counts exact to one). A note says what
    was run."""
    seg_key = []
    for a, b, cap_key in zip(seg_a.tolist(), seg_b.tolist(), seg_state, strict=True):
        lo: dict[int, float] = {}
        for wa, wb, links in losses:
            if wa <= a and b <= wb:
                for link, p in links.items():
                    lo[link] = 1.0 - (1.0 - lo.get(link, 0.0)) * (1.0 - p)
        seg_key.append((cap_key, tuple(sorted(lo.items()))))
    runs: dict[Any, _PacketState] = {}
    for key in sorted(set(seg_key)):
        cap_key, loss_key = key
        flow = states[cap_key]
        late = sum(  # a straggler's flows start this late
            round(faults[i].severity * 1_000_000)
            for i in _split_key(cap_key)[1]
            if faults[i].kind is FaultKind.STRAGGLER_RANK
        )
        limit = 50 * flow.makespan_ps + 1_000_000_000 + late  # a partition's flows: cut off

        def make(cap_key: Any = cap_key, loss_key: Any = loss_key, limit: int = limit) -> Any:
            links, formed = _split_key(cap_key)
            router, load, dead = _packet_forms(fabric, traffic, [faults[i] for i in formed])
            return _run_packet_state(
                fabric, load, links, dict(loss_key), limit, router=router, dead=dead
            )

        if key == ((), ()):
            runs[key] = _cached(fabric, ("packet:" + str(cache_key[0]), cache_key[1]), make)
        else:
            runs[key] = make()
    n_dir = 2 * fabric.topology.n_links
    out: dict[str, I64] = {}
    seconds = (seg_b - seg_a).astype(np.float64) / 1000.0
    for name in ("drops", "lost", "marks", "pauses", "retx"):
        expected = np.zeros((n_int, n_dir))
        for j, key in enumerate(seg_key):
            r = runs[key]
            per_s = getattr(r, name).astype(np.float64) / ((r.makespan_ps + compute_ps) / 1e12)
            if name in ("drops", "retx") and r.run_ps > 0:  # a stalled queue pair's, in time
                per_s = per_s + getattr(r, "dead_" + name) / (r.run_ps / 1e12)
            expected[seg_interval[j]] += seconds[j] * per_s
        cum = np.floor(np.cumsum(expected, axis=0) + 1e-9).astype(np.int64)
        out[name] = np.diff(cum, axis=0, prepend=np.zeros((1, n_dir), dtype=np.int64))
    unfinished = sum(r.unfinished for r in runs.values())
    note = (
        f"packet engine ({PACKET_TRANSPORT}, PFC, DCQCN): drops, ECN marks and PFC pauses "
        f"from {len(runs)} packet run(s) of one step, "
        f"{sum(r.retransmissions for r in runs.values()):,} retransmissions"
    ) + (
        f", {unfinished:,} flow(s) unfinished (no path left, or stalled on a dead EV)"
        if unfinished
        else ""
    )
    return out, note


def _ranges(starts: I64, counts: I64) -> I64:
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    offs = np.repeat(starts - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    out: I64 = (np.arange(total, dtype=np.int64) + offs).astype(np.int64)
    return out


# -- the timeline ----------------------------------------------------------------------------


def _capacity_windows(
    fault: Fault, fabric: OpsFabric, horizon_ms: int
) -> list[tuple[int, int, dict[int, float]]]:
    """``(start, end, {link: fraction})`` windows in which ``fault`` changes capacities."""
    t = fabric.topology
    end = fault.end_ms if fault.end_ms is not None else horizon_ms
    if fault.kind is FaultKind.DEAD_LINK:
        return [(fault.start_ms, end, {fabric.link_of_label(fault.target): 0.0})]
    if fault.kind is FaultKind.FLAPPING_LINK:
        link = fabric.link_of_label(fault.target)
        return [(a, b, {link: 0.0}) for a, b in flap_windows(fault, horizon_ms)]
    if fault.kind is FaultKind.GRAY_LINK and fault.rate < 1.0:
        return [(fault.start_ms, end, {fabric.link_of_label(fault.target): fault.rate})]
    if fault.kind is FaultKind.SLOW_NIC_PORT:
        hit = fabric.host_of(*fault.target.split(":", 1))
        assert hit is not None
        link = int(fabric.router.host_link[hit[0], hit[1]])
        return [(fault.start_ms, end, {link: fault.rate})]
    if fault.kind is FaultKind.CONGESTED_SPINE:
        from clusterloom.ops.faults import switch_node

        node = switch_node(fabric, fault.target, fault.target)
        links = np.flatnonzero((t.link_src == node) | (t.link_dst == node))
        left = max(0.05, 1.0 - fault.severity)
        return [(fault.start_ms, end, {int(x): left for x in links})]
    return []


def _active(fault: Fault, a: int, b: int, horizon_ms: int) -> float:
    """Share of ``[a, b)`` during which ``fault`` is on."""
    end = fault.end_ms if fault.end_ms is not None else horizon_ms
    return max(0, min(b, end) - max(a, fault.start_ms)) / (b - a)


def synthesize(
    fabric: OpsFabric,
    faults: Sequence[Fault],
    *,
    duration_s: float,
    interval_s: float,
    seed: int,
    engine: str = "flow",
    traffic: str | None = None,
    load: float = 0.5,
    peers: int = 2,
    evs: int = len(PROBE_EVS),
    probe_hz: float = 1.0,
    reconverge_s: float = 1.0,
    start_ms: int = DEFAULT_START_MS,
    traffic_seed: int = 0,
    speed_shows_rate_cut: bool = True,
) -> Synthetic:
    """The telemetry of ``fabric`` running its traffic for ``duration_s`` with ``faults``
    (times as offsets from the start, ``ops.faults``), sampled every ``interval_s``; seeded
    by ``seed`` (module docstring for the model). ``traffic`` is a ``sim.scenario`` traffic
    kind (default: the job's step, else a permutation); ``load`` the share of a healthy step
    spent communicating; ``peers`` and ``evs`` the probes' pattern. ``traffic_seed`` seeds
    the traffic (a permutation's pairs) and the probe pairs, which a deployment keeps fixed:
    incidents with different ``seed`` on one fabric share one healthy run (cached); the
    flows and probes hash under the fabric's ``hash_seed``. ``speed_shows_rate_cut``: a gray
    link's rate cut shows in both ends' speed gauge (``speed_bps``: lanes trained down), or
    not (another cause: the gauge keeps the design's rate)."""
    problems = _check(fabric, faults, duration_s, interval_s, engine, load, peers, evs, probe_hz)
    if problems:
        raise SpecError(problems)
    interval_ms = round(interval_s * 1000)
    horizon = _horizon_ms(duration_s, interval_s)
    n_int = horizon // interval_ms
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x5E7]))
    load_traffic, kind, fallback = _cached(
        fabric,
        ("traffic:" + str(traffic), traffic_seed),
        lambda: _traffic(fabric, traffic, traffic_seed),
    )
    if engine == "packet":
        _check_packet_size(fabric, load_traffic)
    t = fabric.topology
    n_dir = 2 * t.n_links
    cap = fabric.router.capacity_bytes()  # bytes/s per directed link

    # elementary segments: interval ends and every capacity window's ends
    windows: list[tuple[int, int, dict[int, float]]] = []
    for i, f in enumerate(faults):
        windows += _capacity_windows(f, fabric, horizon)
        formed = f.kind is FaultKind.DEAD_EV or (  # a state of its own (_split_key)
            engine == "packet" and f.kind in (FaultKind.MIS_HASHED_SWITCH, FaultKind.STRAGGLER_RANK)
        )
        if formed:
            end = f.end_ms if f.end_ms is not None else horizon
            windows.append((f.start_ms, end, {DEAD_KEY - i: 1.0}))
    cuts = {0, horizon, *(k * interval_ms for k in range(n_int + 1))}
    losses = _loss_windows(faults, fabric, horizon) if engine == "packet" else []
    for a, b, _ in [*windows, *losses]:
        cuts |= {min(max(a, 0), horizon), min(max(b, 0), horizon)}
    bounds = np.array(sorted(cuts), dtype=np.int64)
    seg_a, seg_b = bounds[:-1], bounds[1:]
    seg_state: list[tuple[tuple[int, float], ...]] = []
    for a, b in zip(seg_a.tolist(), seg_b.tolist(), strict=True):
        fr: dict[int, float] = {}
        for wa, wb, links in windows:
            if wa <= a and b <= wb:
                for link, x in links.items():
                    fr[link] = min(fr.get(link, 1.0), x)
        seg_state.append(tuple(sorted(fr.items())))
    keys = sorted(set(seg_state))
    states: dict[tuple[tuple[int, float], ...], _State] = {}

    def healthy() -> _State:
        return _run_state(fabric, load_traffic, {})

    base: _State = _cached(fabric, ("baseline:" + str(traffic), traffic_seed), healthy)
    runs: dict[tuple[tuple[int, float], ...], _State] = {(): base}
    for key in keys:
        links, dead = _split_key(key)
        cap_key = tuple(sorted(links.items()))
        if cap_key not in runs:
            runs[cap_key] = _run_state(fabric, load_traffic, links)
        run = runs[cap_key]
        dead_faults = [faults[i] for i in dead if faults[i].kind is FaultKind.DEAD_EV]
        states[key] = (
            _dead_state(fabric, load_traffic, run, links, dead_faults) if dead_faults else run
        )
    compute_ps = base.makespan_ps * (1.0 / load - 1.0)
    state_index = {k: i for i, k in enumerate(keys)}
    seg_interval = np.searchsorted(np.arange(1, n_int + 1) * interval_ms, seg_b, side="left")
    seg_ms = (seg_b - seg_a).astype(np.float64)
    weights = np.zeros((n_int, len(keys)))
    seg_key = np.array([state_index[k] for k in seg_state], dtype=np.int64)
    np.add.at(weights, (seg_interval, seg_key), seg_ms)
    weights /= interval_ms
    # bytes/s per directed link per state: bytes per step over the step's time
    rates = np.stack(
        [states[k].link_bytes / ((states[k].makespan_ps + compute_ps) / 1e12) for k in keys]
    )
    rate = weights @ rates  # [intervals, directed links], bytes/s
    loss = np.zeros((n_int, n_dir))
    ends = np.arange(1, n_int + 1) * interval_ms
    starts_ms = ends - interval_ms
    for f in faults:
        act = np.array(
            [_active(f, int(a), int(b), horizon) for a, b in zip(starts_ms, ends, strict=True)]
        )
        if f.kind is FaultKind.GRAY_LINK and f.loss > 0.0:
            link = fabric.link_of_label(f.target)
            for d in (2 * link, 2 * link + 1):
                loss[:, d] = 1.0 - (1.0 - loss[:, d]) * (1.0 - act * f.loss)
        elif f.kind is FaultKind.CONGESTED_SPINE:
            from clusterloom.ops.faults import switch_node

            node = switch_node(fabric, f.target, f.target)
            at_node = np.flatnonzero((t.link_src == node) | (t.link_dst == node))
            dl = np.concatenate([2 * at_node, 2 * at_node + 1])
            rate[:, dl] += act[:, None] * f.severity * cap[dl][None, :]
        elif f.kind is FaultKind.MIS_HASHED_SWITCH:
            from clusterloom.ops.faults import switch_node

            node = switch_node(fabric, f.target, f.target)
            dl = 2 * uplinks(fabric, node)
            total = rate[:, dl].sum(axis=1)
            skew = np.full(dl.size, (1.0 - f.severity) / (dl.size - 1))
            skew[0] = f.severity
            rate[:, dl] = (1.0 - act[:, None]) * rate[:, dl] + act[:, None] * total[:, None] * skew[
                None, :
            ]
    # the capacity each directed link had over each interval: a dead, gray-by-rate or slow
    # link's is cut (a congested spine keeps its capacity: the extra load is traffic on it)
    eff = np.ones((n_int, t.n_links))
    for f in faults:
        if f.kind is FaultKind.CONGESTED_SPINE:
            continue
        for wa, wb, links in _capacity_windows(f, fabric, horizon):
            share = np.clip(
                (np.minimum(ends, wb) - np.maximum(starts_ms, wa)) / interval_ms, 0.0, 1.0
            )
            for link, frac in links.items():
                eff[:, link] -= share * (1.0 - frac)
    cap_eff = np.repeat(np.clip(eff, 0.0, 1.0), 2, axis=1) * cap[None, :]
    offered = rate.copy()
    rate = np.minimum(rate, cap[None, :])
    with np.errstate(invalid="ignore", divide="ignore"):
        util = np.where(cap_eff > 0, np.minimum(rate / cap_eff, 1.0), 0.0)

    up_at = _link_up(faults, fabric, n_int, interval_ms, horizon)
    sample_ms = start_ms + np.arange(n_int + 1, dtype=np.int64) * interval_ms
    measured = None
    if engine == "packet":
        measured, packet_note = _packet_counters(
            fabric,
            faults,
            load_traffic,
            (traffic, traffic_seed),
            seg_a,
            seg_b,
            seg_interval,
            seg_state,
            losses,
            states,
            compute_ps,
            n_int,
            interval_ms,
        )
    retx_rng = np.random.default_rng(np.random.SeedSequence([seed, 0x5E7, 1]))
    counters = _counters(
        fabric,
        rate,
        loss,
        util,
        up_at,
        weights,
        keys,
        interval_s,
        sample_ms,
        rng,
        measured,
        retx_rng,
    )
    counters = counters.set_column(  # the speed gauge (ops-loc): a gauge, no draws
        counters.schema.get_field_index("speed_bps"),
        "speed_bps",
        _speed(faults, fabric, n_int, interval_ms, horizon, speed_shows_rate_cut),
    )
    probes = _probes(
        fabric,
        faults,
        util,
        loss,
        seg_a,
        seg_b,
        seg_interval,
        seg_state,
        windows,
        n_int,
        interval_ms,
        horizon,
        sample_ms,
        rng,
        peers=peers,
        evs=evs,
        probe_hz=probe_hz,
        reconverge_s=reconverge_s,
        traffic_seed=traffic_seed,
    )
    collectives = _collectives(
        fabric,
        faults,
        load_traffic,
        kind,
        states,
        keys,
        seg_a,
        seg_b,
        seg_state,
        compute_ps,
        loss,
        offered / cap[None, :],
        n_int,
        interval_ms,
        sample_ms,
        rng,
    )
    truth = tuple(shifted(f, start_ms) for f in faults)
    notes = (
        (
            f"flow engine (roce-ecmp), {kind} traffic, load {load:g}, "
            f"{len({tuple(sorted(_split_key(k)[0].items())) for k in keys})} fabric "
            "state(s) simulated",
        )
        + ((packet_note,) if measured is not None else ())
        + ((fallback,) if fallback else ())
    )
    return Synthetic(counters, probes, collectives, truth, int(start_ms), notes)


def _horizon_ms(duration_s: float, interval_s: float) -> int:
    """The telemetry's length: its whole intervals (at least one)."""
    interval_ms = round(interval_s * 1000)
    return max(1, round(duration_s * 1000) // interval_ms) * interval_ms


def _check(
    fabric: OpsFabric,
    faults: Sequence[Fault],
    duration_s: float,
    interval_s: float,
    engine: str,
    load: float,
    peers: int,
    evs: int,
    probe_hz: float,
) -> list[Problem]:
    problems: list[Problem] = []
    if engine not in ("flow", "packet"):
        problems.append(Problem("--engine", f"unknown engine '{engine}'; use flow or packet"))
    if not 0.001 <= interval_s <= 3600:
        problems.append(Problem("--interval", "an interval from 1 ms to an hour"))
    elif not interval_s <= duration_s <= 86_400:
        problems.append(Problem("--duration", "at least one interval and at most a day"))
    if not 0.0 < load <= 1.0:
        problems.append(Problem("--load", "the share of a step spent communicating, in (0, 1]"))
    if not 1 <= peers <= 64:
        problems.append(Problem("--peers", "from 1 to 64 probe peers per host"))
    if not 1 <= evs <= len(PROBE_EVS):
        problems.append(Problem("--evs", f"from 1 to {len(PROBE_EVS)} EVs"))
    if not 0.0 < probe_hz <= 1000:
        problems.append(Problem("--probe-hz", "probes per second per pair and EV, above 0"))
    for f in faults:
        if not isinstance(f, Fault):
            problems.append(Problem("faults", f"{f!r} is not a Fault"))
        elif interval_s >= 0.001 and f.start_ms >= _horizon_ms(duration_s, interval_s):
            problems.append(
                Problem(
                    f"fault {format_fault(f)}",
                    "starts at or after the end of the telemetry (its last whole interval, "
                    f"{_horizon_ms(duration_s, interval_s) / 1000:g} s)",
                )
            )
    return problems


#: the most flows a job's step may have for its traffic to be synthesized by default; a larger
#: step (a MoE job's all-to-alls: hundreds of thousands of flows) takes the flow engine minutes
#: per fabric state, so the default falls back to a permutation (``traffic="step"`` forces it)
STEP_FLOWS_MAX = 50_000


def _traffic(fabric: OpsFabric, kind: str | None, seed: int) -> tuple[Traffic, str, str]:
    """The traffic to run, its kind, and a note when the default fell back."""
    from clusterloom.sim.failures import parse_size
    from clusterloom.sim.scenario import DEFAULT_SIZE, build_traffic

    spec = fabric.spec
    sc = spec.scenario
    hosts = int(fabric.topology.plan.hosts)
    size = parse_size(sc.size if sc is not None and sc.size else DEFAULT_SIZE)
    note = ""
    if kind is None and spec.job is not None:
        step = build_traffic(spec, "step", size, None, seed, hosts)
        if len(step) <= STEP_FLOWS_MAX:
            return step, "step", note
        note = (
            f"the job's step has {len(step):,} flows (more than {STEP_FLOWS_MAX:,}): "
            "a permutation stands in"
        )
    kind = kind or "permutation"
    return build_traffic(spec, kind, size, None, seed, hosts), kind, note


def _link_up(
    faults: Sequence[Fault], fabric: OpsFabric, n_int: int, interval_ms: int, horizon: int
) -> NDArray[np.bool_]:
    """``[samples, links]``: each physical link up at each sample."""
    up = np.ones((n_int + 1, fabric.topology.n_links), dtype=bool)
    at = np.arange(n_int + 1, dtype=np.int64) * interval_ms
    for f in faults:
        if f.kind is FaultKind.DEAD_LINK:
            wins = [(f.start_ms, f.end_ms if f.end_ms is not None else horizon + 1)]
        elif f.kind is FaultKind.FLAPPING_LINK:
            wins = list(flap_windows(f, horizon + 1))
        else:
            continue
        link = fabric.link_of_label(f.target)
        for a, b in wins:
            up[(at >= a) & (at < b), link] = False
    return up


def _speed(
    faults: Sequence[Fault],
    fabric: OpsFabric,
    n_int: int,
    interval_ms: int,
    horizon: int,
    shows_cut: bool,
) -> pa.Array:
    """The ``speed_bps`` gauge of every interface at every sample, in the counters' row order
    (samples, then end 0 of every link, then end 1): the design's rate, and a gray link's cut
    rate at both ends while its fault is on when ``shows_cut`` (a rate cut by lanes trained
    down is visible in the speed; one by other causes, a slow NIC port's included, is not)."""
    t = fabric.topology
    speed = np.tile(t.link_capacity_bps.astype(np.float64), (n_int + 1, 1))
    at = np.arange(n_int + 1, dtype=np.int64) * interval_ms
    for f in faults if shows_cut else ():
        if f.kind is FaultKind.GRAY_LINK and f.rate < 1.0:
            end = f.end_ms if f.end_ms is not None else horizon + 1
            on = (at >= f.start_ms) & (at < end)
            link = fabric.link_of_label(f.target)
            speed[on, link] = np.floor(speed[on, link] * f.rate)
    return pa.array(np.concatenate([speed, speed], axis=1).reshape(-1).astype(np.uint64))


def _counters(
    fabric: OpsFabric,
    rate: F64,
    loss: F64,
    util: F64,
    up_at: NDArray[np.bool_],
    weights: F64,
    keys: list[tuple[tuple[int, float], ...]],
    interval_s: float,
    sample_ms: I64,
    rng: np.random.Generator,
    measured: dict[str, I64] | None = None,
    retx_rng: np.random.Generator | None = None,
) -> pa.Table:
    """The counters table; ``measured`` (``engine="packet"``): the packet engine's drops,
    losses, ECN marks and PFC pauses per interval and directed link, in place of the models."""
    t = fabric.topology
    n_int = rate.shape[0]
    links = np.arange(t.n_links, dtype=np.int64)
    # interfaces: end 0 of every link, then end 1 (OpsFabric.interface_table's order)
    link2 = np.concatenate([links, links])
    end2 = np.repeat(np.array([0, 1], dtype=np.int64), t.n_links)
    tx = 2 * link2 + end2
    rx = 2 * link2 + 1 - end2
    pkt = MSS + HDR
    sent_bytes = rate * interval_s  # per directed link
    sent_pkts = np.floor(sent_bytes / pkt).astype(np.int64)
    drops = _binomial(rng, sent_pkts, loss)
    rho = np.minimum(util, RHO_MAX)
    ecn = _binomial(rng, sent_pkts, rho**ECN_K)
    pfc = _poisson(rng, sent_pkts * rho**PFC_K / PFC_PACKETS_PER_PAUSE)
    egress = np.zeros_like(drops)  # dropped at the output port before sending (packet engine)
    if measured is not None:  # the packet engine's, in place of the models' (same draws made)
        drops = np.minimum(measured["lost"], sent_pkts)
        egress = measured["drops"]
        ecn, pfc = measured["marks"], measured["pauses"]
    # FEC: codewords at line rate while the link is up (share of the interval up)
    down_share = np.zeros((n_int, t.n_links))
    for j, key in enumerate(keys):
        for link, frac in key:
            if frac == 0.0:
                down_share[:, link] += weights[:, j]
    up_share = np.clip(1.0 - down_share, 0.0, 1.0)
    cw = (t.link_capacity_bps.astype(np.float64)[None, :] * interval_s / FEC_BITS) * up_share
    cw_dir = np.repeat(cw, 2, axis=1)
    cw_per_pkt = pkt * 8 / FEC_PAYLOAD_BITS
    unc_p = loss / cw_per_pkt
    cw_n = np.floor(cw_dir).astype(np.int64)
    unc = _binomial(rng, cw_n, np.minimum(unc_p, 1.0))
    corr = _binomial(rng, cw_n, np.minimum(FEC_CORRECTED + FEC_GRAY_FACTOR * unc_p, 0.5))
    n_if = 2 * t.n_links
    received = sent_pkts[:, rx] - drops[:, rx]
    increments: dict[str, Any] = {  # each counter's increments per interval, made in turn
        "bytes_tx": lambda: sent_pkts[:, tx] * pkt,  # whole packets
        "bytes_rx": lambda: received * pkt,
        "packets_tx": lambda: sent_pkts[:, tx],
        "packets_rx": lambda: received,
        "drops": lambda: drops[:, rx] + egress[:, tx],
        "ecn_marks": lambda: ecn[:, tx],
        "pfc_pauses": lambda: pfc[:, tx],
        "fec_corrected": lambda: corr[:, rx],
        "fec_uncorrected": lambda: unc[:, rx],
    }
    base = rng.integers(0, COUNTER_BASE_MAX, size=(len(COUNTERS), n_if), dtype=np.uint64)
    n_s = n_int + 1
    dev, ifs = fabric.end_names
    dev_names = pa.array(np.concatenate([dev[:, 0], dev[:, 1]]).tolist(), pa.string())
    if_names = pa.array(np.concatenate([ifs[:, 0], ifs[:, 1]]).tolist(), pa.string())
    take = pa.array(np.tile(np.arange(n_if, dtype=np.int64), n_s))
    cols: dict[str, Any] = {
        "ts_ms": pa.array(np.repeat(sample_ms, n_if), pa.int64()),
        "device": dev_names.take(take),
        "interface": if_names.take(take),
    }
    for c, name in enumerate(COUNTERS):
        inc = np.asarray(increments[name](), dtype=np.uint64)
        cum = np.empty((n_s, n_if), dtype=np.uint64)
        cum[0] = base[c]
        for k in range(n_int):  # a loop of vector adds beats numpy's cumsum along this axis
            np.add(cum[k], inc[k], out=cum[k + 1])
        cols[name] = pa.array(cum.reshape(-1), pa.uint64())
        del inc, cum
    cols["link_up"] = pa.array(up_at[:, link2].reshape(-1), pa.bool_())
    cols["speed_bps"] = pa.nulls(n_s * n_if, pa.uint64())  # synthesize sets it (_speed)
    cols["retransmissions"] = _retransmissions(fabric, measured, tx, n_s, retx_rng)
    return pa.table(cols, schema=COUNTER_SCHEMA)


def _retransmissions(
    fabric: OpsFabric,
    measured: dict[str, I64] | None,
    tx: I64,
    n_s: int,
    rng: np.random.Generator | None,
) -> pa.Array:
    """The NICs' retransmissions counter: with the packet engine, per host interface the
    retransmissions of the queue pairs it sends (cumulative from a seeded base below 2**40,
    drawn from a generator of its own so that no other draw moves); null on switch
    interfaces (they export none) and with the flow engine (not simulated)."""
    t = fabric.topology
    n_if = 2 * t.n_links
    if measured is None or rng is None:
        return pa.nulls(n_s * n_if, pa.uint64())
    # interfaces: end 0 of every link, then end 1; a host is end 0 of its tier-1 link
    nic = np.concatenate([t.link_tier == 1, np.zeros(t.n_links, dtype=bool)])
    inc = measured["retx"][:, tx].astype(np.uint64)
    cum = np.empty((n_s, n_if), dtype=np.uint64)
    cum[0] = rng.integers(0, COUNTER_BASE_MAX, size=n_if, dtype=np.uint64)
    for k in range(n_s - 1):
        np.add(cum[k], inc[k], out=cum[k + 1])
    mask = np.broadcast_to(~nic, (n_s, n_if)).reshape(-1)
    return pa.array(cum.reshape(-1), pa.uint64(), mask=mask)


#: above this variance a binomial draw is taken from its normal approximation (rounded,
#: clipped to [0, n]): the error is far below the counters' own spread, and it is much faster
NORMAL_ABOVE = 1000.0


def _binomial(rng: np.random.Generator, n: I64, p: F64) -> I64:
    """Binomial draws, made only where they can be non-zero (the rest are 0); the normal
    approximation where the variance exceeds :data:`NORMAL_ABOVE`."""
    out = np.zeros(n.shape, dtype=np.int64)
    hit = (n > 0) & (p > 0)
    if not hit.any():
        return out
    nn, pp = n[hit], p[hit]
    var = nn * pp * (1.0 - pp)
    big = var > NORMAL_ABOVE
    got = np.empty(nn.shape, dtype=np.int64)
    if big.any():
        mean = nn[big] * pp[big]
        draw = np.rint(mean + np.sqrt(var[big]) * rng.standard_normal(mean.shape))
        got[big] = np.clip(draw, 0, nn[big]).astype(np.int64)
    if (~big).any():
        got[~big] = rng.binomial(nn[~big], pp[~big])
    out[hit] = got
    return out


def _poisson(rng: np.random.Generator, lam: F64) -> I64:
    out = np.zeros(lam.shape, dtype=np.int64)
    hit = lam > 0
    if hit.any():
        out[hit] = rng.poisson(lam[hit])
    return out


def _probes(
    fabric: OpsFabric,
    faults: Sequence[Fault],
    util: F64,
    loss: F64,
    seg_a: I64,
    seg_b: I64,
    seg_interval: I64,
    seg_state: list[tuple[tuple[int, float], ...]],
    windows: list[tuple[int, int, dict[int, float]]],
    n_int: int,
    interval_ms: int,
    horizon: int,
    sample_ms: I64,
    rng: np.random.Generator,
    *,
    peers: int,
    evs: int,
    probe_hz: float,
    reconverge_s: float,
    traffic_seed: int,
) -> pa.Table:
    from clusterloom.ops.faults import switch_node

    t = fabric.topology
    src, dst, port, ev = probe_streams(fabric, peers=peers, evs=evs, traffic_seed=traffic_seed)
    n = src.size
    cap_bps = np.repeat(t.link_capacity_bps.astype(np.float64), 2)
    lat_us = np.repeat(t.link_latency_ps.astype(np.float64), 2) / 1e6
    ser_us = PROBE_BYTES * 8 / cap_bps * 1e6
    pkt_us = (MSS + HDR) * 8 / cap_bps * 1e6
    # directed links that are dead in each segment (routing around them)
    dead_of: list[frozenset[int]] = [
        frozenset(link for link, x in key if x == 0.0) for key in seg_state
    ]
    path_cache: dict[frozenset[int], tuple[I64, I64]] = {}
    mis = [f for f in faults if f.kind is FaultKind.MIS_HASHED_SWITCH]
    pick = rng.random(n)  # a fixed draw per probe stream: does a mis-hashed switch divert it

    def paths(dead: frozenset[int]) -> tuple[I64, I64]:
        if dead not in path_cache:
            alive = np.ones(t.n_links, dtype=bool)
            alive[list(dead)] = False
            fwd = fabric.paths(src, dst, port, ev, alive if dead else None)
            rev = fabric.paths(dst, src, port, ev, alive if dead else None)
            for f in mis:
                node = switch_node(fabric, f.target, f.target)
                ups = uplinks(fabric, node)
                divert = alive.copy()
                divert[ups[1:]] = False
                for arr, a, b in ((fwd, src, dst), (rev, dst, src)):
                    crosses = np.isin(arr, 2 * ups).any(axis=1) & (pick < f.severity)
                    if crosses.any():
                        idx = np.flatnonzero(crosses)
                        alt = fabric.paths(a[idx], b[idx], port[idx], ev[idx], divert)
                        ok = alt[:, 0] >= 0
                        arr[idx[ok]] = alt[ok]
            path_cache[dead] = (fwd, rev)
        return path_cache[dead]

    # per-interval accumulators: survival probability and RTT, weighted by segment time
    p_ok = np.zeros((n_int, n))
    rtt = np.zeros((n_int, n))
    qsum = np.zeros((n_int, n))
    n_dir = 2 * t.n_links
    # per interval and directed link (a zero column at n_dir for the padding): the log of
    # surviving the link, and its M/M/1 wait
    rho = np.minimum(util, RHO_MAX)
    wait = np.zeros((n_int, n_dir + 1))
    wait[:, :n_dir] = rho / (1.0 - rho) * pkt_us[None, :]
    logs = np.zeros((n_int, n_dir + 1))
    logs[:, :n_dir] = np.log1p(-np.minimum(loss, 0.999999))
    lossy: NDArray[np.bool_] = np.asarray((loss > 0).any(axis=1), dtype=bool)
    fixed = np.append(lat_us + ser_us, 0.0)
    gathered: dict[frozenset[int], tuple[I64, NDArray[np.bool_], F64]] = {}
    for s, (a, b) in enumerate(zip(seg_a.tolist(), seg_b.tolist(), strict=True)):
        i = int(seg_interval[s])
        w = (b - a) / interval_ms
        dead = dead_of[s]
        if dead not in gathered:
            fwd, rev = paths(dead)
            both = np.concatenate([fwd, rev], axis=1)
            li = np.where(both >= 0, both, n_dir)
            routed = (fwd[:, 0] >= 0) & (rev[:, 0] >= 0)
            gathered[dead] = (li, routed, fixed[li].sum(axis=1) + 2 * HOST_US)
        li, routed, base = gathered[dead]
        if lossy[i]:
            surv = np.where(routed, np.exp(logs[i][li].sum(axis=1)), 0.0)
        else:
            surv = routed.astype(np.float64)
        q = wait[i][li].sum(axis=1)
        p_ok[i] += w * surv
        rtt[i] += w * surv * base
        qsum[i] += w * surv * q
    # reconvergence: probes whose path crossed a link as it went down are lost for a while
    for wa, _wb, links in windows:
        downs = [link for link, x in links.items() if x == 0.0]
        if not downs or not 0 <= wa < horizon:
            continue
        i = min(wa // interval_ms, n_int - 1)
        before = int(np.searchsorted(seg_b, wa, side="right")) - 1
        fwd, rev = paths(dead_of[before] if before >= 0 else frozenset())
        dl = np.array([2 * x for x in downs] + [2 * x + 1 for x in downs])
        hit = np.isin(fwd, dl).any(axis=1) | np.isin(rev, dl).any(axis=1)
        share = min(reconverge_s * 1000 / interval_ms, 1.0)
        p_ok[i, hit] = np.maximum(p_ok[i, hit] - share, 0.0)
    # dead EVs: a probe (either way) that a dead bucket holds (the check's rule,
    # sim.faultforms.dead_hops), on the paths of the healthy fabric
    starts_ms = np.arange(n_int, dtype=np.int64) * interval_ms
    for f in faults:
        if f.kind is not FaultKind.DEAD_EV:
            continue
        from clusterloom.sim.faultforms import dead_hops

        hole = dead_bucket(fabric, f)
        fwd, rev = paths(frozenset())
        seed = fabric.hash_seed
        hit = dead_hops(fabric.router, fwd, src, dst, port, ev, seed, hole) >= 0
        hit |= dead_hops(fabric.router, rev, dst, src, port, ev, seed, hole) >= 0
        act = np.array([_active(f, int(x), int(x) + interval_ms, horizon) for x in starts_ms])
        p_ok[:, hit] *= (1.0 - act)[:, None]
    sent_n = max(1, round(probe_hz * interval_ms / 1000))
    p_loss = np.clip(1.0 - p_ok, 0.0, 1.0)
    lost = _binomial(rng, np.full(p_loss.shape, sent_n, dtype=np.int64), p_loss)
    back = sent_n - lost
    with np.errstate(invalid="ignore", divide="ignore"):
        base_rtt = np.where(p_ok > 0, rtt / p_ok, 0.0)
        q_mean = np.where(p_ok > 0, qsum / p_ok, 0.0) + HOST_JITTER_US
    k = np.maximum(back, 1)
    spread = rng.gamma(k, 1.0 / k)
    harmonic = np.cumsum(1.0 / np.arange(1, sent_n + 1))[k - 1]
    mean_rtt = base_rtt + q_mean * spread
    max_rtt = np.maximum(
        mean_rtt, base_rtt + q_mean * harmonic * rng.gamma(8.0, 1.0 / 8.0, k.shape)
    )
    none = back == 0
    names = fabric.names
    sdev = pa.array(names.device(src).tolist(), pa.string())
    sif = pa.array(names.interface(src, port).tolist(), pa.string())
    ddev = pa.array(names.device(dst).tolist(), pa.string())
    dif = pa.array(names.interface(dst, port).tolist(), pa.string())
    take = pa.array(np.tile(np.arange(n, dtype=np.int64), n_int))
    return pa.table(
        {
            "ts_ms": pa.array(np.repeat(sample_ms[1:], n), pa.int64()),
            "src_device": sdev.take(take),
            "src_interface": sif.take(take),
            "dst_device": ddev.take(take),
            "dst_interface": dif.take(take),
            "ev": pa.array(np.tile(ev, n_int).astype(np.int32), pa.int32()),
            "sent": pa.array(np.full(n_int * n, sent_n, dtype=np.int32), pa.int32()),
            "lost": pa.array(lost.reshape(-1).astype(np.int32), pa.int32()),
            "rtt_us": pa.array(mean_rtt.reshape(-1), pa.float64(), mask=none.reshape(-1)),
            "rtt_max_us": pa.array(max_rtt.reshape(-1), pa.float64(), mask=none.reshape(-1)),
        },
        schema=PROBE_SCHEMA,
    )


def _collectives(
    fabric: OpsFabric,
    faults: Sequence[Fault],
    traffic: Traffic,
    kind: str,
    states: dict[tuple[tuple[int, float], ...], _State],
    keys: list[tuple[tuple[int, float], ...]],
    seg_a: I64,
    seg_b: I64,
    seg_state: list[tuple[tuple[int, float], ...]],
    compute_ps: float,
    loss: F64,
    overload: F64,
    n_int: int,
    interval_ms: int,
    sample_ms: I64,
    rng: np.random.Generator,
) -> pa.Table:
    """One sampled step per interval: each rank's time in each collective (module
    docstring)."""
    hosts = int(fabric.topology.plan.hosts)
    names = traffic.group_names or (kind,)
    n_groups = states[keys[0]].rank_us.shape[0]
    names = tuple(names) + tuple(f"{kind}-{g}" for g in range(len(names), n_groups))
    # the step counter: steps completed up to each sample
    seg_steps = (
        (seg_b - seg_a) * 1e9 / np.array([states[k].makespan_ps + compute_ps for k in seg_state])
    )
    cum = np.concatenate([[0.0], np.cumsum(seg_steps)])
    ends = np.arange(1, n_int + 1, dtype=np.int64) * interval_ms
    at = np.searchsorted(seg_b, ends, side="left")  # the segment holding each sample's end
    step_no = np.floor(cum[at + 1]).astype(np.int64)
    rows_dur: list[F64] = []
    rows_grp: list[I64] = []
    rows_rank: list[I64] = []
    rows_int: list[I64] = []
    stragglers = [f for f in faults if f.kind is FaultKind.STRAGGLER_RANK]
    mis = [f for f in faults if f.kind is FaultKind.MIS_HASHED_SWITCH]
    src_all = traffic.src.astype(np.int64)
    g_all = np.where(traffic.group >= 0, traffic.group, 0).astype(np.int64)
    for i in range(n_int):
        st = states[seg_state[int(at[i])]]
        dur = st.rank_us.copy()
        # go-back-N on lossy paths, and the overload of a mis-hashed uplink
        if st.unit_link.size:
            lg = np.log1p(-np.minimum(loss[i][st.unit_link], 0.999999))
            seg = np.repeat(np.arange(st.unit_flow.size), np.diff(st.unit_ptr))
            flow_loss = 1.0 - np.exp(np.bincount(seg, weights=lg, minlength=st.unit_flow.size))
            slow = np.ones(st.unit_flow.size)
            if mis:
                over = np.maximum(overload[i][st.unit_link], 1.0)
                worst = np.zeros(st.unit_flow.size)
                np.maximum.at(worst, seg, over)
                slow = np.maximum(slow, worst)
            window = _window_packets(fabric)
            factor = (1.0 + flow_loss * window) * slow
            per_flow = np.ones(len(traffic))
            np.maximum.at(per_flow, st.unit_flow, factor)
            if np.any(per_flow > 1.0):
                f_rank = np.ones(dur.size)
                np.maximum.at(f_rank, g_all * hosts + src_all, per_flow)
                dur = dur * f_rank.reshape(dur.shape)
        if st.hung is not None:  # a collective that never ends reports no duration
            dur[st.hung] = np.nan
        for f in stragglers:
            if not _active(f, int(ends[i]) - 1, int(ends[i]), 10**15) > 0:
                continue
            r = int(f.target.split(":")[1])
            first = int(np.flatnonzero(np.isfinite(dur).any(axis=1))[0])
            row = dur[first]
            others = np.isfinite(row) & (np.arange(hosts) != r)
            row[others] += f.severity
        ok = np.isfinite(dur)
        g_idx, r_idx = np.nonzero(ok)
        rows_dur.append(dur[ok])
        rows_grp.append(g_idx.astype(np.int64))
        rows_rank.append(r_idx.astype(np.int64))
        rows_int.append(np.full(g_idx.size, i, dtype=np.int64))
    dur_all = np.concatenate(rows_dur)
    dur_all = dur_all * rng.lognormal(0.0, 0.01, dur_all.size)
    grp = np.concatenate(rows_grp)
    rank = np.concatenate(rows_rank)
    iv = np.concatenate(rows_int)
    job = fabric.spec.name
    gnames = pa.array(list(names), pa.string())
    return pa.table(
        {
            "ts_ms": pa.array(sample_ms[1:][iv], pa.int64()),
            "job": pa.array(np.full(iv.size, job, dtype=object).tolist(), pa.string()),
            "step": pa.array(step_no[iv], pa.int64()),
            "rank": pa.array(rank.astype(np.int32), pa.int32()),
            "device": pa.array(fabric.names.device(rank).tolist(), pa.string()),
            "collective": gnames.take(pa.array(grp)),
            "duration_us": pa.array(dur_all, pa.float64()),
        },
        schema=COLLECTIVE_SCHEMA,
    )


def _window_packets(fabric: OpsFabric) -> float:
    """A RoCE sender's go-back-N window: the bandwidth-delay product of a host port over the
    fabric's longest path, in packets (at least one)."""
    t = fabric.topology
    rtt_s = 2.0 * float(np.sort(t.link_latency_ps)[-1]) * 2 * t.plan.tiers / 1e12
    bps = float(t.link_capacity_bps[t.link_tier == 1].max(initial=0))
    return max(1.0, math.ceil(bps * rtt_s / 8 / (MSS + HDR)))


# -- writing ---------------------------------------------------------------------------------


def truth_doc(synthetic: Synthetic) -> dict[str, Any]:
    """``truth.json``: the faults injected, with their texts (offsets from ``start_ms``)."""
    return {
        "kind": "clusterloom-ops-truth",
        "start_ms": synthetic.start_ms,
        "notes": list(synthetic.notes),
        "faults": [
            {
                "kind": f.kind.value,
                "target": f.target,
                "start_ms": f.start_ms,
                "end_ms": f.end_ms,
                "loss": f.loss,
                "rate": f.rate,
                "severity": f.severity,
                "text": format_fault(shifted(f, -synthetic.start_ms)),
            }
            for f in synthetic.truth
        ],
    }


def openmetrics(counters: pa.Table, *, last_only: bool = True) -> str:
    """The counters as OpenMetrics text (``clusterloom_interface_<counter>_total`` with ``device``
    and ``interface`` labels, timestamps in seconds; ``clusterloom_interface_link_up`` a gauge): the
    last scrape by default, else every sample."""
    table = counters
    if last_only and table.num_rows:
        last = pa.compute.max(table["ts_ms"]).as_py()
        table = table.filter(pa.compute.equal(table["ts_ms"], last))
    ts = table["ts_ms"].to_numpy()
    dev = table["device"].to_pylist()
    ifs = table["interface"].to_pylist()
    stamp = [f"{x // 1000}.{x % 1000:03d}" for x in ts.tolist()]
    labels = [f'{{device="{d}",interface="{f}"}}' for d, f in zip(dev, ifs, strict=True)]
    lines: list[str] = []
    for name in COUNTERS:
        metric = f"clusterloom_interface_{name}"
        lines.append(f"# TYPE {metric} counter")
        vals = table[name].to_pylist()
        lines += [
            f"{metric}_total{lab} {v} {s}"
            for lab, v, s in zip(labels, vals, stamp, strict=True)
            if v is not None
        ]
    if "retransmissions" in table.column_names:  # the NICs' (optional): where exported
        metric = "clusterloom_interface_retransmissions"
        retx = table["retransmissions"].to_pylist()
        if any(v is not None for v in retx):
            lines.append(f"# TYPE {metric} counter")
            lines += [
                f"{metric}_total{lab} {v} {s}"
                for lab, v, s in zip(labels, retx, stamp, strict=True)
                if v is not None
            ]
    lines.append("# TYPE clusterloom_interface_link_up gauge")
    ups = table["link_up"].to_pylist()
    lines += [
        f"clusterloom_interface_link_up{lab} {int(u)} {s}"
        for lab, u, s in zip(labels, ups, stamp, strict=True)
        if u is not None
    ]
    lines.append("# EOF")
    return "\n".join(lines) + "\n"


def write_synthetic(
    synthetic: Synthetic, directory: str | Path, *, prom_all: bool = False
) -> tuple[Path, ...]:
    """Write ``counters.parquet``, ``probes.parquet``, ``collectives.parquet``, ``truth.json``
    and ``counters.prom`` (OpenMetrics text of the last scrape, or of every sample with
    ``prom_all``) into ``directory`` (atomically, file by file); the paths written."""
    import pyarrow.parquet as pq

    from clusterloom.atomic import atomic_write

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    out: list[Path] = []
    for name, table in (
        ("counters", synthetic.counters),
        ("probes", synthetic.probes),
        ("collectives", synthetic.collectives),
    ):
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, compression="zstd")
        out.append(atomic_write(d / f"{name}.parquet", sink.getvalue().to_pybytes()))
    doc = json.dumps(truth_doc(synthetic), indent=1, sort_keys=True) + "\n"
    out.append(atomic_write(d / "truth.json", doc))
    out.append(
        atomic_write(d / "counters.prom", openmetrics(synthetic.counters, last_only=not prom_all))
    )
    return tuple(out)


def read_truth(path: str | Path) -> tuple[Fault, ...]:
    """The faults of a ``truth.json`` (times in epoch milliseconds)."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
        return tuple(
            Fault(
                FaultKind(x["kind"]),
                str(x["target"]),
                int(x["start_ms"]),
                None if x["end_ms"] is None else int(x["end_ms"]),
                loss=float(x["loss"]),
                rate=float(x["rate"]),
                severity=float(x["severity"]),
            )
            for x in doc["faults"]
        )
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SpecError([Problem(str(p), f"not a truth.json: {exc}")]) from exc
