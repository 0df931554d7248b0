"""Running traffic (:class:`clusterloom.sim.traffic.Traffic`) over a topology with one
packet-level transport, under failures, and the figures of the run.

Flow dependencies of a ``Traffic`` are honoured: a flow starts at its ``start_ps`` or when the
last flow it depends on has completed at its receiver, whichever is later.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from clusterloom.fabric.topology import Topology
from clusterloom.sim.failures import Failure
from clusterloom.sim.packet.base import Connection, ConnSpec
from clusterloom.sim.packet.engine import PacketConfig, PacketSim, PacketSimError, Tracer
from clusterloom.sim.packet.transports import transport_class
from clusterloom.sim.paths import Router
from clusterloom.sim.traffic import Traffic

__all__ = ["PacketResult", "config_for", "run_packets"]


@dataclass(frozen=True)
class PacketResult:
    """Outcome of one packet-level run."""

    transport: str
    start_ps: NDArray[np.int64]
    finish_ps: NDArray[np.int64]  # receiver completion, -1 if the flow did not finish
    retransmissions: NDArray[np.int64]
    failed: NDArray[np.bool_]
    end_ps: int
    events: int
    wall_s: float
    drops: int
    trims: int
    marks: int
    pauses: int
    max_queue_bytes: int
    data_bytes_delivered: int
    #: why flows did not finish, one line per cause (empty when every flow finished)
    unfinished: tuple[str, ...] = ()

    @property
    def fct_ps(self) -> NDArray[np.int64]:
        out = self.finish_ps - self.start_ps
        out[self.finish_ps < 0] = -1
        return out

    @property
    def events_per_s(self) -> float:
        return self.events / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def finished(self) -> int:
        return int((self.finish_ps >= 0).sum())


def config_for(name: str | type[Connection], base: PacketConfig | None = None) -> PacketConfig:
    """The switch configuration a transport asks for, on ``base``: PFC for ``roce-ecmp``,
    trimming and shallow buffers for ``receiver-driven``, drop-tail with ECN for the others.

    Only the fields ``base`` leaves unset (None) take the transport's choice; a field given is
    kept. So a bare ``PacketConfig(mtu=4000)`` keeps PFC for ``roce-ecmp`` and trimming for
    ``receiver-driven``, and ``PacketConfig(pfc=False)`` turns PFC off on purpose."""
    cls = transport_class(name) if isinstance(name, str) else name
    cfg = base or PacketConfig()
    wanted: dict[str, object] = {}
    if cfg.pfc is None:
        wanted["pfc"] = cls.wants_pfc
    if cfg.trimming is None:
        wanted["trimming"] = cls.wants_trimming
    if cfg.buffer_bytes is None:
        if cls.wants_buffer_packets is not None:
            wanted["buffer_bytes"] = cls.wants_buffer_packets * cfg.packet_bytes
        elif cls.wants_buffer_bytes is not None:
            wanted["buffer_bytes"] = cls.wants_buffer_bytes
    return replace(cfg, **wanted).resolved()  # type: ignore[arg-type]


def build(
    sim: PacketSim,
    traffic: Traffic,
    name: str,
    *,
    options: dict[str, float] | None = None,
    specs: Sequence[ConnSpec] | None = None,
) -> list[Connection]:
    """Create the connections of ``traffic`` on ``sim`` (not started) and prefetch their paths."""
    if traffic.n_hosts > sim.n_hosts:
        raise PacketSimError(f"traffic has {traffic.n_hosts} hosts, the fabric {sim.n_hosts}")
    cls = transport_class(name)
    default = ConnSpec(options=dict(options or {}))
    conns: list[Connection] = []
    src = traffic.src.tolist()
    dst = traffic.dst.tolist()
    size = traffic.nbytes.tolist()
    start = traffic.start_ps.tolist()
    for i in range(len(traffic)):
        spec = specs[i] if specs is not None else default
        flow = len(sim.conns)
        conn = cls(sim, flow, src[i], dst[i], size[i], start[i], spec)
        sim.add(conn)
        conns.append(conn)
    keys = [k for c in conns for k in c.path_keys()]
    sim.prefetch([k[:4] for k in keys if not k[4]])
    sim.prefetch([k[:4] for k in keys if k[4]], static=True)
    return conns


def start_with_deps(sim: PacketSim, traffic: Traffic, conns: list[Connection]) -> None:
    """Start flows without dependencies now and the others when their last dependency ends."""
    ptr = traffic.dep_ptr.tolist()
    idx = traffic.dep_idx.tolist()
    waiting = [ptr[i + 1] - ptr[i] for i in range(len(conns))]
    children: list[list[int]] = [[] for _ in conns]
    for i in range(len(conns)):
        for j in idx[ptr[i] : ptr[i + 1]]:
            children[j].append(i)
    order = {id(c): i for i, c in enumerate(conns)}

    def begin(i: int) -> None:
        c = conns[i]
        c.started = True
        if c.n == 0:  # a zero-byte flow (a barrier) ends as it starts
            c.finish_ps = c.start_ps
            if children[i]:
                done(c)
        else:
            c.start()

    def done(c: Connection) -> None:
        for k in children[order[id(c)]]:
            waiting[k] -= 1
            if waiting[k] == 0:
                conns[k].start_ps = max(conns[k].start_ps, sim.now)
                begin(k)

    for i, c in enumerate(conns):
        if children[i]:
            c.on_finish = done
    for i in range(len(conns)):
        if waiting[i] == 0:
            begin(i)


def run_packets(
    topology: Topology,
    traffic: Traffic,
    transport: str,
    failures: tuple[Failure, ...] = (),
    *,
    config: PacketConfig | None = None,
    options: dict[str, float] | None = None,
    seed: int = 0,
    router: Router | None = None,
    tracer: Tracer | None = None,
    max_time_ps: int | None = None,
) -> PacketResult:
    """Simulate ``traffic`` with one transport at the packet level (module docstring).

    ``config`` fields left unset (None) take the transport's choice (:func:`config_for`)."""
    cfg = config_for(transport, config)
    sim = PacketSim(topology, cfg, seed=seed, router=router, tracer=tracer)
    t0 = time.perf_counter()
    conns = build(sim, traffic, transport, options=options)
    for f in failures:
        sim.schedule_failure(f)
    start_with_deps(sim, traffic, conns)
    first = [0]  # every connection before it has finished or failed (they stay so)

    def stop() -> bool:
        i = first[0]
        while i < len(conns) and (conns[i].finish_ps >= 0 or conns[i].failed):
            i += 1
        first[0] = i
        return i == len(conns)

    limit = max_time_ps if max_time_ps is not None else cfg.max_time_ps
    sim.run(limit, stop)
    wall = time.perf_counter() - t0
    return PacketResult(
        transport=transport,
        start_ps=np.array([c.start_ps for c in conns], dtype=np.int64),
        finish_ps=np.array([c.finish_ps for c in conns], dtype=np.int64),
        retransmissions=np.array([c.retransmissions for c in conns], dtype=np.int64),
        failed=np.array([c.failed for c in conns], dtype=bool),
        end_ps=sim.now,
        events=sim.events,
        wall_s=wall,
        drops=sim.stats.drops,
        trims=sim.stats.trims,
        marks=sim.stats.marks,
        pauses=sim.stats.pauses,
        max_queue_bytes=sim.max_queue_bytes(),
        data_bytes_delivered=sim.stats.data_bytes_delivered,
        unfinished=why_unfinished(traffic, conns, sim.now, limit, sim.pending_events > 0),
    )


def why_unfinished(
    traffic: Traffic,
    conns: Sequence[Connection],
    now: int,
    limit: int,
    cut_off: bool,
    show: int = 5,
) -> tuple[str, ...]:
    """One line per cause of flows left unfinished: connections that gave up (with their
    error), flows never started because a flow they wait on did not finish, flows still
    running when the run stopped (``cut_off``: at the time limit ``limit``; else at ``now``,
    with no event left). At most ``show`` flows named per line."""

    def named(flows: Sequence[int]) -> str:
        head = ", ".join(
            f"{i} ({int(traffic.src[i])}->{int(traffic.dst[i])})" for i in flows[:show]
        )
        return head + (f" and {len(flows) - show:,} more" if len(flows) > show else "")

    out: list[str] = []
    failed: dict[str, list[int]] = {}
    running: list[int] = []
    waiting: list[int] = []
    for i, c in enumerate(conns):
        if c.finish_ps >= 0:
            continue
        if c.failed:
            failed.setdefault(c.errors[-1] if c.errors else "error", []).append(i)
        elif c.started:
            running.append(i)
        else:
            waiting.append(i)
    for reason, flows in failed.items():
        out.append(f"{len(flows):,} connection(s) gave up ({reason}): flow {named(flows)}")
    if running:
        end = (
            f"the time limit ({limit / 1e6:,.1f} us)"
            if cut_off
            else f"the last event ({now / 1e6:,.1f} us)"
        )
        out.append(
            f"{len(running):,} flow(s) still unfinished at {end}: "
            f"flow {named(running)}"
        )
    if waiting:
        stuck = sorted(
            {
                int(j)
                for i in waiting
                for j in traffic.deps(i).tolist()
                if conns[int(j)].finish_ps < 0 and conns[int(j)].started
            }
        )
        out.append(
            f"{len(waiting):,} flow(s) never started: they wait on flows that did not finish"
            + (f" (flow {named(stuck)})" if stuck else "")
            + f": flow {named(waiting)}"
        )
    return tuple(out)
