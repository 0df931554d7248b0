"""Running traffic over a generated fabric with a transport, under failures.

Failures are written ``KIND:TARGET@START[-END][*FRACTION]``: ``link:17@1ms`` (physical link 17
down at 1 ms for the rest of the run), ``switch:4200@2ms-5ms`` (every link of node 4200 down from
2 to 5 ms), ``port:12:3@0`` (host 12's NIC port 3), ``plane:1@1ms`` (every link of plane 1), and
``link:17@1ms*0.5`` (a gray failure: the link keeps half its capacity). Times take ``ps``, ``ns``,
``us``, ``ms`` or ``s``. A hard failure is acted on by the transport after its reaction delay
(detection and reconvergence for ``roce-ecmp``, detection only for the sprayers); a gray one is
not detected (routing does not see it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from numba import njit
from numpy.typing import ArrayLike, NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.fabric.topology import Topology
from clusterloom.sim.failures import (  # re-exported: the flow engine's public names
    FAILURE_SYNTAX,
    MAX_SIZE_BYTES,
    MAX_TIME_PS,
    MAX_TIME_S,
    Failure,
    parse_failure,
    parse_size,
    parse_time,
)
from clusterloom.sim.flow.engine import (
    RTOL_SATURATED,
    Callback,
    FlowSet,
    Progress,
    Reroute,
    SetCapacity,
    SimResult,
    SimState,
    UnitSet,
    frozen,
    simulate,
    small_pages,
)
from clusterloom.sim.flow.transports import Transport
from clusterloom.sim.paths import Router, build_router
from clusterloom.sim.traffic import Traffic
from clusterloom.units import BITS_PER_BYTE, PS_PER_S

I64 = NDArray[np.int64]

_WATCH_NONE = np.zeros(0, dtype=np.int64)
_WATCH_NONE.setflags(write=False)


def _alive(capacity: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Physical links usable in both directions."""
    return (capacity[0::2] > 0) & (capacity[1::2] > 0)


@small_pages()  # the routing's and the engine's arrays (engine.small_pages)
def run(
    topology: Topology,
    traffic: Traffic,
    transport: Transport,
    failures: tuple[Failure, ...] = (),
    *,
    seed: int = 0,
    max_time_ps: int | None = None,
    router: Router | None = None,
    rtol: float = RTOL_SATURATED,
    watch_links: ArrayLike | None = _WATCH_NONE,
    progress: Progress | None = None,
) -> SimResult:
    """Simulate ``traffic`` (host ids = the topology's hosts) with ``transport``; ``rtol`` is
    the engine's rate tolerance (see ``engine.simulate``). ``watch_links`` are the directed
    links whose loads the result keeps per segment (default none, to bound memory; ``None``
    watches every link). ``progress(done, total)``: bytes delivered (``engine.simulate``)."""
    if traffic.n_hosts > topology.plan.hosts:
        raise SpecError(
            [
                Problem(
                    "traffic",
                    f"traffic has {traffic.n_hosts} hosts, the fabric {topology.plan.hosts}",
                )
            ]
        )
    r = router or build_router(topology)
    directed = r.capacity_bytes()
    n_dir = directed.shape[0]
    trunks = transport.trunks(r)
    capacity = directed if trunks is None else np.concatenate([directed, trunks.capacity(directed)])
    src = traffic.src.astype(np.int64)
    dst = traffic.dst.astype(np.int64)
    units = transport.units(r, src, dst, alive=np.ones(topology.n_links, dtype=bool), seed=seed)
    timing = flow_timing(topology, r, transport, traffic.nbytes, units)
    flows = FlowSet(
        size=timing.wire,
        start_ps=traffic.start_ps,
        dep_ptr=traffic.dep_ptr,
        dep_idx=traffic.dep_idx,
        coupled=np.full(len(traffic), transport.mode == "coupled"),
        pooled=np.full(len(traffic), transport.mode == "pooled"),
        head_ps=timing.head_ps,
        tail_ps=timing.tail_ps,
        notify_ps=np.full(len(traffic), transport.notify_ps(), dtype=np.int64),
        lossless=np.full(len(traffic), bool(getattr(transport, "lossless", False))),
        avoid=np.full(
            len(traffic),
            float(getattr(transport, "avoid", 0.0)) if transport.mode == "coupled" else 0.0,
        ),
    )
    units = timing.capped(units)

    def react(state: SimState) -> Reroute:
        alive = _alive(state.capacity[:n_dir])
        return Reroute(units=timing.capped(transport.units(r, src, dst, alive=alive, seed=seed)))

    delay = round(transport.reroute_delay_s() * PS_PER_S)
    changes: list[tuple[int, I64, NDArray[np.float64]]] = []
    reactions: list[SetCapacity | Callback] = []
    for f in failures:
        links = np.concatenate([2 * f.links, 2 * f.links + 1])
        changes.append((f.start_ps, links, directed[links] * f.fraction))
        if f.fraction == 0.0:
            reactions.append(Callback(f.start_ps + delay, react))
        if f.end_ps is not None:
            changes.append((f.end_ps, links, directed[links]))
            if f.fraction == 0.0:
                reactions.append(Callback(f.end_ps + delay, react))
    # capacity changes in time order (stable), each carrying the trunks it changes
    actions: list[SetCapacity | Callback] = []
    now = directed.copy()
    for time_ps, links, cap in sorted(changes, key=lambda c: c[0]):
        now[links] = cap
        if trunks is None:
            actions.append(SetCapacity(time_ps, links, cap))
            continue
        hit = np.unique(trunks.of_link[links])
        hit = hit[hit >= 0]
        actions.append(
            SetCapacity(
                time_ps,
                np.concatenate([links, n_dir + hit]),
                np.concatenate([cap, trunks.capacity(now)[hit]]),
            )
        )
    actions += reactions
    actions.sort(key=lambda a: a.time_ps)
    if watch_links is None:
        watch_links = np.arange(n_dir)
    return simulate(
        capacity,
        flows,
        units,
        tuple(actions),
        max_time_ps=max_time_ps,
        watch_links=watch_links,
        rtol=rtol,
        progress=progress,
    )


@dataclass(frozen=True, eq=False)
class Timing:
    """What a transport adds to the fluid transfer of each flow (docs/sim.md, "Latency,
    headers and start-up"): ``wire`` bytes on the wire (payload, one header per packet, lost
    bytes again), ``head_ps`` from posting to the first byte at full share, ``tail_ps`` from
    the fluid end (the last bit leaves the sender) to the last byte at the receiver (the
    path's propagation plus the last packet's serialization at every hop after the first),
    ``rtt_ps`` the base round trip of a full packet and its header-sized ACK, ``rate_bps``
    the sender's NIC rate, ``cap`` the window-limited rate per flow (bytes/s on the wire,
    ``inf`` when not window-limited), ``control`` the bytes of ACKs and pulls the receiver
    sends back per byte of data on the wire (they load the reverse of the data's links)."""

    wire: NDArray[np.float64]
    head_ps: I64
    tail_ps: I64
    rtt_ps: I64
    rate_bps: NDArray[np.float64]
    cap: NDArray[np.float64]
    control: float = 0.0

    def capped(self, units: UnitSet) -> UnitSet:
        """``units`` with each unit's share of its flow's window cap and, when the transport
        sends control packets, the reverse of every link of its path carrying them (weight
        ``control``: control bytes per wire byte of data)."""
        cap = units.cap
        if not np.isinf(self.cap).all():
            cap = np.minimum(units.cap, self.cap[units.unit_flow] * units.unit_share)
        if self.control <= 0:
            return dataclasses.replace(units, cap=cap) if cap is not units.cap else units
        # per unit its data links in path order, then their reverses (the control packets)
        links, weight, control = _with_control(
            units.unit_ptr, units.unit_link, units.link_weight, units.control, self.control
        )
        return UnitSet(
            unit_flow=units.unit_flow,
            unit_ptr=frozen(2 * units.unit_ptr),
            unit_link=frozen(links),
            unit_share=units.unit_share,
            cap=cap if cap is units.cap else frozen(cap),
            link_weight=frozen(weight),
            control=frozen(control),
        )


@njit(cache=True)
def _with_control(unit_ptr: Any, unit_link: Any, weight: Any, control: Any, ctl: float) -> Any:
    """Per unit its entries (link, weight, control flag), then one entry on the reverse of
    each of its links carrying ``ctl`` of control packets per byte (``Timing.capped``)."""
    n = unit_link.shape[0]
    links = np.empty(2 * n, dtype=np.int64)
    weights = np.empty(2 * n, dtype=np.float64)
    flags = np.empty(2 * n, dtype=np.bool_)
    for u in range(unit_ptr.shape[0] - 1):
        a, b = unit_ptr[u], unit_ptr[u + 1]
        for k in range(a, b):
            links[a + k] = unit_link[k]
            weights[a + k] = weight[k]
            flags[a + k] = control[k]
            links[b + k] = unit_link[k] ^ 1  # the other direction of the same physical link
            weights[b + k] = ctl
            flags[b + k] = True
    return links, weights, flags


@njit(cache=True)
def _path_terms(
    unit_flow: Any,
    unit_ptr: Any,
    unit_link: Any,
    link_bps: Any,
    link_latency_ps: Any,
    last: Any,
    full: int,
    hdr: int,
    n_flows: int,
) -> Any:
    """Per flow, over its units (``flow_timing``): the largest tail (propagation plus the
    serialization of the flow's ``last`` packet at every hop after the first) and base RTT
    (propagation both ways plus a ``full`` packet and a ``hdr`` ACK at every hop), each
    serialization in whole picoseconds rounded down (as the packet engine's), and the
    largest rate of a unit's first link (bits/s). Every link of a packet transport's path
    is a directed physical link (``link // 2``)."""
    tail = np.zeros(n_flows, dtype=np.int64)
    rtt = np.zeros(n_flows, dtype=np.int64)
    rate = np.zeros(n_flows, dtype=np.float64)
    scale = BITS_PER_BYTE * PS_PER_S
    for u in range(unit_flow.shape[0]):
        f = unit_flow[u]
        t = 0
        r = 0
        for k in range(unit_ptr[u], unit_ptr[u + 1]):
            link = unit_link[k] // 2
            bps = float(link_bps[link])
            div = int(max(bps, 1.0))
            prop = link_latency_ps[link]
            if k == unit_ptr[u]:
                rate[f] = max(rate[f], bps)
            else:
                t += last[f] * scale // div
            t += prop
            r += 2 * prop + full * scale // div + hdr * scale // div
        tail[f] = max(tail[f], t)
        rtt[f] = max(rtt[f], r)
    return tail, rtt, rate


def flow_timing(
    topology: Topology, router: Router, transport: Transport, nbytes: I64, units: UnitSet
) -> Timing:
    """Per-flow framing, path latency and start-up of ``transport`` (see :class:`Timing`);
    a flow's path is the slowest of its units on the healthy fabric (all equal on a Clos)."""
    n = nbytes.shape[0]
    size = nbytes.astype(np.int64)
    ports = int(router.host_link.shape[1])
    framing = transport.framing()
    zero = np.zeros(n, dtype=np.int64)
    rate = np.zeros(n)
    if framing is None:  # no packets: the bandwidth bound
        wire = size.astype(np.float64) * transport.wire_factor()
        return Timing(wire, zero, zero, zero, rate, np.full(n, np.inf))
    mss, hdr = framing
    pkts = -(-size // mss)
    wire = (size + pkts * hdr).astype(np.float64) * transport.wire_factor()
    # the packet that decides the store-and-forward: the last one queues behind the one
    # before it at every hop, so a full packet (a flow of one packet: that packet)
    last = np.where(size > 0, np.minimum(size, mss) + hdr, 0)
    # per unit: propagation and the store-and-forward at every hop after the first; per
    # flow the slowest unit, and its NIC rate (compiled: one pass over the units' links)
    tail, rtt, rate = _path_terms(
        units.unit_flow,
        units.unit_ptr,
        units.unit_link,
        topology.link_capacity_bps,
        topology.link_latency_ps,
        last.astype(np.int64),
        mss + hdr,
        hdr,
        n,
    )
    rate = rate * ports
    head = transport.startup_ps(wire, rtt, rate)
    window = transport.window_bytes(rtt, rate)
    cap = np.full(n, np.inf)
    if window is not None:
        cap = window * (mss + hdr) / mss * transport.wire_factor() * PS_PER_S / np.maximum(rtt, 1)
    empty = size == 0  # a zero-byte flow (a barrier) completes at once
    return Timing(
        wire,
        np.where(empty, 0, head).astype(np.int64),
        np.where(empty, 0, tail).astype(np.int64),
        rtt,
        rate,
        cap,
        transport.control_bytes() / (mss + hdr),
    )


class Run(NamedTuple):
    """One transport's run: its name, the traffic, the engine's result and the nominal capacity
    (bytes/s) of every directed link (what the writers of ``sim.flow.results`` read)."""

    transport: str
    traffic: Traffic
    result: SimResult
    capacity: NDArray[np.float64]


@dataclass(frozen=True)
class Summary:
    """One transport's outcome on one traffic and failure scenario."""

    transport: str
    flows: int
    finished: int
    makespan_ps: int
    fct_p50_ps: float
    fct_p99_ps: float
    fct_max_ps: float
    events: int


def summarize(name: str, result: SimResult, barrier: NDArray[np.bool_] | None = None) -> Summary:
    """Completion figures of one run; ``barrier`` marks flows to leave out (the zero-byte
    barriers of step traffic)."""
    real = np.ones(result.finish_ps.shape[0], dtype=bool) if barrier is None else ~barrier
    finish = result.finish_ps[real]
    fct = result.fct_ps[real]
    done = finish >= 0
    pct = (
        np.percentile(fct[done].astype(np.float64), [50, 99, 100])
        if done.any()
        else np.full(3, np.nan)
    )
    return Summary(
        transport=name,
        flows=int(real.sum()),
        finished=int(done.sum()),
        makespan_ps=int(finish[done].max(initial=0)),
        fct_p50_ps=float(pct[0]),
        fct_p99_ps=float(pct[1]),
        fct_max_ps=float(pct[2]),
        events=result.events,
    )


__all__ = [
    "FAILURE_SYNTAX",
    "MAX_SIZE_BYTES",
    "MAX_TIME_PS",
    "MAX_TIME_S",
    "Compared",
    "Failure",
    "Run",
    "Summary",
    "Timing",
    "compare",
    "flow_timing",
    "fmt_time",
    "parse_failure",
    "parse_size",
    "parse_time",
    "reaction",
    "run",
    "summarize",
]


def fmt_time(ps: float) -> str:
    """A duration in the unit that reads best: ``1 s``, ``20 µs``, ``0.240 ms``."""
    for scale, unit in ((PS_PER_S, "s"), (PS_PER_S // 1000, "ms"), (PS_PER_S // 10**6, "µs")):
        if ps >= scale:
            return f"{ps / scale:,.6g} {unit}"
    return f"{ps / 1000:,.4g} ns"


#: the option of each transport that sets its reaction to a hard failure
_REACTION_OPTION = {
    "roce-ecmp": "reroute_s",
    "mrc-spray": "detect_s",
    "receiver-driven": "detect_s",
}
_REACTION_WHAT = {
    "reroute_s": "reroutes {t} after a failure (detection and routing reconvergence)",
    "detect_s": "retires dead paths {t} after a failure (endpoint detection)",
}


def reaction(tr: Transport) -> tuple[int, str]:
    """When ``tr`` acts on a hard failure (picoseconds after it) and that assumption in words,
    naming the option that sets it (``roce-ecmp.reroute_s=1``)."""
    delay = round(tr.reroute_delay_s() * PS_PER_S)
    option = _REACTION_OPTION.get(tr.name)
    if option is None or not hasattr(tr, option):
        return delay, "acts on a failure at once" if delay == 0 else (
            f"acts on a failure {fmt_time(delay)} after it"
        )
    what = _REACTION_WHAT[option].format(t=fmt_time(delay))
    return delay, f"{what}; assumed: {tr.name}.{option}={getattr(tr, option):g}"


@dataclass(frozen=True)
class Compared:
    """One transport's row of a comparison, computed once for every renderer (the terminal
    table and ``simulation.html``): ``completion_ps`` is the last finish only when every flow
    finished (else None), ``vs_ideal`` that completion over the ideal transport's (None unless
    both are complete), ``assumption`` the failure reaction that drives the figures when the run
    has hard failures (empty otherwise)."""

    summary: Summary
    completion_ps: int | None
    vs_ideal: float | None
    reaction_ps: int | None = None
    assumption: str = ""

    @property
    def transport(self) -> str:
        return self.summary.transport


def compare(
    summaries: Sequence[Summary],
    transports: Sequence[Transport] | None = None,
    failures: Sequence[Failure] = (),
) -> tuple[Compared, ...]:
    """The comparison of ``summaries`` (one per transport, ``transports`` in the same order
    when known); reactions are stated only when ``failures`` hold a hard one."""
    hard = any(f.fraction == 0.0 for f in failures)

    def done(s: Summary) -> int | None:
        return s.makespan_ps if s.flows and s.finished == s.flows else None

    ideal = next((done(s) for s in summaries if s.transport == "ideal"), None)
    rows = []
    for i, s in enumerate(summaries):
        completion = done(s)
        ratio = completion / ideal if completion is not None and ideal else None
        delay, text = (None, "")
        if hard and transports is not None:
            delay, text = reaction(transports[i])
        rows.append(Compared(s, completion, ratio, delay, text))
    return tuple(rows)
