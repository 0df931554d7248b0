"""Running traffic (:class:`clusterloom.sim.traffic.Traffic`) over a topology with one
packet-level transport, under failures, and the figures of the run.

Flow dependencies of a ``Traffic`` are honoured: a flow starts at its ``start_ps`` or when the
last flow it depends on has completed at its receiver, whichever is later.

A dead EV (``run_packets(dead=...)``, :class:`clusterloom.sim.faultforms.DeadBucket`) is a
black-holed entry of a switch's ECMP table: no link is down and no routing event happens; the
packets whose hash lands in the dead bucket at that switch are dropped at the output port they
would have taken. The engine is given it through its inputs: every output port of a dead
switch gets a *phantom* port (a physical link of the run's topology beyond the design's, from
the switch to itself, down from time 0, never on any ECMP path since the router is the
design's), and a path the switch hashes into the dead bucket (``faultforms.dead_hops``, the
rule the flow-engine check and ``ops synth`` use) leaves the switch on the phantom of the port
it would have taken, where the packet is dropped. ``PortCounters`` count those drops at that
real port (the phantoms' columns folded in and left out); the run's ``drops`` include them.
Every path a dead bucket does not touch is the same, so units outside it run as without the
fault, event for event (when they share no queue with the dead ones). Source routes given to
the run (``source_routes``: SRv6 path programs) are not hashed and never hit.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.fabric.topology import Topology
from clusterloom.sim.failures import Failure
from clusterloom.sim.packet.base import Connection, ConnSpec
from clusterloom.sim.packet.engine import (
    PacketConfig,
    PacketSim,
    PacketSimError,
    SourceRoutes,
    Tracer,
)
from clusterloom.sim.packet.options import config_for
from clusterloom.sim.packet.transports import transport_class
from clusterloom.sim.paths import Router, build_router
from clusterloom.sim.traffic import Traffic

if TYPE_CHECKING:
    from clusterloom.sim.faultforms import DeadBucket

__all__ = ["DeadPorts", "PacketResult", "PortCounters", "config_for", "run_packets"]


@dataclass(frozen=True)
class PortCounters:
    """Per directed link (``2i`` and ``2i + 1`` for physical link ``i``, as the engine's), the
    counters of one run, cumulative from the run's start, sampled in simulated time: row ``k``
    holds every event before ``times_ps[k]`` (the last row, at the run's end, every event).
    Samples are at multiples of ``sample_ps``; a multiple at which no event was due since the
    previous sample is left out (its counters equal the previous row's: :meth:`at`).

    - ``tx_packets``, ``tx_bytes``: packets (data, control, trimmed headers) that started on
      the link's wire at its source, and their bytes on the wire (headers included);
    - ``rx_packets``, ``rx_bytes``: those that arrived at its far end (the same, less
      ``lost`` and what is still on the wire);
    - ``drops``: packets dropped at the link's output port (buffer or control FIFO full, the
      link dead), before they were sent; ``lost``: packets lost on its wire (a random loss,
      ``run_packets(losses=)``, or the wire emptied by a hard failure);
    - ``trims``, ``marks``: packets trimmed, ECN-marked at the link's output port;
    - ``pauses``: PFC pauses that stopped the link's sender (sent by the device at its far
      end, received by the one at its source).

    Summed over links, the last row's ``drops + lost``, ``trims``, ``marks`` and ``pauses``
    equal the run's ``PacketResult.drops``, ``trims``, ``marks`` and ``pauses``."""

    sample_ps: int
    times_ps: NDArray[np.int64]
    tx_packets: NDArray[np.int64]
    tx_bytes: NDArray[np.int64]
    rx_packets: NDArray[np.int64]
    rx_bytes: NDArray[np.int64]
    drops: NDArray[np.int64]
    lost: NDArray[np.int64]
    trims: NDArray[np.int64]
    marks: NDArray[np.int64]
    pauses: NDArray[np.int64]

    #: the counter fields, in the engine's column order (``_core.L_COUNTERS``)
    NAMES = (
        "tx_packets",
        "tx_bytes",
        "rx_packets",
        "rx_bytes",
        "drops",
        "lost",
        "trims",
        "marks",
        "pauses",
    )

    @classmethod
    def of(cls, sample_ps: int, times: NDArray[np.int64], cube: NDArray[np.int64]) -> PortCounters:
        """From :meth:`PacketSim.port_samples`' ``(times, [samples, links, counters])``."""
        cols = {name: np.ascontiguousarray(cube[:, :, j]) for j, name in enumerate(cls.NAMES)}
        return cls(sample_ps, times, **cols)

    def counter(self, name: str) -> NDArray[np.int64]:
        """One counter by name, ``[samples, links]``."""
        if name not in self.NAMES:
            raise KeyError(f"no counter {name!r}; known: {', '.join(self.NAMES)}")
        out: NDArray[np.int64] = getattr(self, name)
        return out

    def total(self, name: str) -> NDArray[np.int64]:
        """One counter at the run's end, per link."""
        out: NDArray[np.int64] = self.counter(name)[-1]
        return out

    def at(self, time_ps: int) -> int:
        """The row that holds the counters at ``time_ps`` (every event before it), for any
        time from the first sample on: the last sample at or before it."""
        return max(0, int(np.searchsorted(self.times_ps, time_ps, side="right")) - 1)


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
    #: per-port counters, when asked for (``run_packets(ports_sample_ps=...)``)
    ports: PortCounters | None = None
    #: with dead EVs and per-port counters: per directed link, the drops of the packets a dead
    #: bucket held at that port (included in ``ports.drops`` and ``drops``)
    dead_drops: NDArray[np.int64] | None = None

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


class Flows:
    """The connections of a traffic on one run, made when they start and retired when both of
    their ends are done.

    Making a connection allocates its per-packet state and its paths (up to 256 entropy values,
    each a path both ways); a chained collective of 14,336 flows of which 1,024 run at a time
    held all of them from the start (4.9 GB for ``mrc-spray`` at 1,024 hosts). Now a flow's
    connection is made when it starts (flows without dependencies at once, their paths in one
    vectorized call), and when its receiver has completed and its sender has seen every
    acknowledgement, its paths are dropped from the engine's cache (a pure function of the
    routing view: recomputed, the same, if a late packet needs one) and its sender's per-path
    state is released (:meth:`Connection.compact`); the connection itself stays and answers
    late packets as before. A run's events and figures are unchanged."""

    def __init__(
        self,
        sim: PacketSim,
        traffic: Traffic,
        name: str,
        options: dict[str, float] | None = None,
        specs: Sequence[ConnSpec] | None = None,
    ) -> None:
        if traffic.n_hosts > sim.n_hosts:
            raise PacketSimError(f"traffic has {traffic.n_hosts} hosts, the fabric {sim.n_hosts}")
        self.sim = sim
        self.traffic = traffic
        self.cls = cls = transport_class(name)
        unknown = set(options or {}) - set(cls.defaults)
        if unknown:
            raise PacketSimError(
                f"{cls.name}: unknown option(s) {', '.join(sorted(unknown))}; "
                f"known: {', '.join(cls.defaults) or 'none'}"
            )
        self.default = ConnSpec(options=dict(options or {}))
        self.specs = specs
        n = len(traffic)
        self.base = sim.reserve(n)
        self.src = traffic.src.tolist()
        self.dst = traffic.dst.tolist()
        self.size = traffic.nbytes.tolist()
        self.start_ps = traffic.start_ps.astype(np.int64).copy()
        self.finish_ps = np.full(n, -1, dtype=np.int64)
        self.retransmissions = np.zeros(n, dtype=np.int64)
        self.failed = np.zeros(n, dtype=bool)
        self.started = np.zeros(n, dtype=bool)
        #: the connections by index (None: not made yet, or retired: figures in the arrays)
        self.live: list[Connection | None] = [None] * n
        self.retired = 0

    def __len__(self) -> int:
        return len(self.live)

    def make(self, flows: Sequence[int]) -> list[Connection]:
        """Make the connections of ``flows`` (indices into the traffic) and their paths."""
        sim, cls = self.sim, self.cls
        made = []
        for i in flows:
            spec = self.specs[i] if self.specs is not None else self.default
            c = cls(
                sim, self.base + i, self.src[i], self.dst[i], self.size[i], self.start_ps[i], spec
            )
            sim.conns[self.base + i] = c
            self.live[i] = c
            made.append(c)
        keys = [k for c in made for k in c.path_keys()]
        sim.prefetch([k[:4] for k in keys if not k[4]])
        sim.prefetch([k[:4] for k in keys if k[4]], static=True)
        return made

    def done(self, i: int) -> bool:
        """Flow ``i`` finished or gave up (it stays so)."""
        c = self.live[i]
        if c is None:
            return bool(self.finish_ps[i] >= 0)  # retired, or not made yet (-1)
        return c.finish_ps >= 0 or c.failed

    def retire(self, i: int) -> bool:
        """Retire flow ``i`` if both of its ends are done; True if it was."""
        c = self.live[i]
        if c is None or c.finish_ps < 0 or c.sender_done_ps < 0:
            return False
        self.retired += 1
        self.sim.forget(c.path_keys())
        c.compact()
        light = c.retired() if self.sim.tracer is None else None
        if light is not None:  # the connection goes, its figures stay here
            self._keep(i, c)
            self.sim.conns[c.flow] = light
            self.live[i] = None
        return True

    def _keep(self, i: int, c: Connection) -> None:
        self.start_ps[i] = c.start_ps
        self.finish_ps[i] = c.finish_ps
        self.retransmissions[i] = c.retransmissions
        self.failed[i] = c.failed

    def figures(self) -> Flows:
        """The figures of every flow (live ones copied now)."""
        for i, c in enumerate(self.live):
            if c is not None:
                self._keep(i, c)
        return self


def build(
    sim: PacketSim,
    traffic: Traffic,
    name: str,
    *,
    options: dict[str, float] | None = None,
    specs: Sequence[ConnSpec] | None = None,
) -> Flows:
    """The flows of ``traffic`` on ``sim``, not started (:class:`Flows`)."""
    return Flows(sim, traffic, name, options, specs)


def start_with_deps(sim: PacketSim, traffic: Traffic, flows: Flows) -> list[int]:
    """Start flows without dependencies now and the others when their last dependency ends.
    Returns the list to which finished flows are appended (to be retired)."""
    n = len(flows)
    ptr = traffic.dep_ptr.tolist()
    idx = traffic.dep_idx.tolist()
    waiting = [ptr[i + 1] - ptr[i] for i in range(n)]
    children: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        for j in idx[ptr[i] : ptr[i + 1]]:
            children[j].append(i)
    finished: list[int] = []

    def begin(c: Connection) -> None:
        c.started = True
        flows.started[c.flow - flows.base] = True
        c.on_finish = done
        if c.n == 0:  # a zero-byte flow (a barrier) ends as it starts
            c.finish_ps = c.start_ps
            c.sender_done_ps = c.start_ps
            done(c)
        else:
            c.start()

    def done(c: Connection) -> None:
        i = c.flow - flows.base
        finished.append(i)
        for k in children[i]:
            waiting[k] -= 1
            if waiting[k] == 0:
                (kc,) = flows.make([k])
                kc.start_ps = max(kc.start_ps, sim.now)
                begin(kc)

    for c in flows.make([i for i in range(n) if waiting[i] == 0]):
        begin(c)
    return finished


@dataclass(frozen=True, eq=False)
class DeadPorts:
    """The phantom ports of a run's dead EVs (module docstring): the run's topology (the
    design's links, then one phantom per real output port of a dead switch), and per phantom
    directed link the real one whose drops it counts."""

    holes: tuple[DeadBucket, ...]
    topology: Topology
    router: Router
    seed: int
    real_dirs: int  # directed links of the design
    phantom_of: NDArray[np.int64]  # per design directed link: its phantom (-1: none)
    real_of: NDArray[np.int64]  # per phantom directed link (from real_dirs on): the real one

    @classmethod
    def make(
        cls, topology: Topology, router: Router, holes: Sequence[DeadBucket], seed: int
    ) -> DeadPorts:
        t = topology
        n = t.n_links
        switches: set[int] = set()
        for h in holes:
            if h.switch is not None:
                if not t.plan.hosts <= h.switch < t.n_nodes:
                    raise PacketSimError(f"dead EV {h.ev}: node {h.switch} is not a switch")
                switches.add(int(h.switch))
            else:
                assert h.pair is not None
                a, b, p = h.pair
                if not (0 <= a < t.plan.hosts and 0 <= b < t.plan.hosts):
                    raise PacketSimError(f"dead EV {h.ev}: hosts {a}, {b} out of range")
                if not 0 <= p < router.host_link.shape[1]:
                    raise PacketSimError(f"dead EV {h.ev}: port {p} out of range")
                switches.add(int(t.link_dst[router.host_link[a, p]]))
        sw = np.array(sorted(switches), dtype=np.int64)
        up = np.isin(t.link_src, sw)  # the link leaves the switch upward: 2l
        down = np.isin(t.link_dst, sw)  # downward: 2l + 1
        real = np.sort(
            np.concatenate([2 * np.flatnonzero(up), 2 * np.flatnonzero(down) + 1])
        ).astype(np.int64)
        frm = np.where(real % 2 == 0, t.link_src[real // 2], t.link_dst[real // 2])
        k = real.size
        phys = real // 2

        def grown(a: Any, extra: Any) -> Any:
            out = np.concatenate([a, np.asarray(extra).astype(a.dtype)])
            out.setflags(write=False)
            return out

        ran = dataclasses.replace(
            t,
            link_src=grown(t.link_src, frm),
            link_dst=grown(t.link_dst, frm),
            link_src_port=grown(t.link_src_port, np.full(k, -1)),
            link_dst_port=grown(t.link_dst_port, np.full(k, -1)),
            link_plane=grown(t.link_plane, t.link_plane[phys]),
            link_tier=grown(t.link_tier, t.link_tier[phys]),
            link_capacity_bps=grown(t.link_capacity_bps, t.link_capacity_bps[phys]),
            link_latency_ps=grown(t.link_latency_ps, t.link_latency_ps[phys]),
        )
        phantom_of = np.full(2 * n, -1, dtype=np.int64)
        phantom_of[real] = 2 * (n + np.arange(k, dtype=np.int64))
        real_of = np.full(2 * k, -1, dtype=np.int64)
        real_of[0::2] = real
        return cls(tuple(holes), ran, router, seed, 2 * n, phantom_of, real_of)

    @property
    def failure(self) -> Failure:
        """The phantom ports down from time 0 (a packet sent onto one is dropped there)."""
        n = self.real_dirs // 2
        links = np.arange(n, n + self.real_of.size // 2, dtype=np.int64)
        return Failure("dead-ev-ports", links, 0, None, 0.0)

    def apply(
        self,
        keys: NDArray[np.int64],
        paths: list[tuple[int, ...] | None],
        alive: NDArray[np.bool_] | None,
    ) -> list[tuple[int, ...] | None]:
        """``paths`` of the (src, dst, port, ev) ``keys`` with each path a dead bucket holds
        cut at its dead hop, which leaves on the phantom of the port it would have taken."""
        from clusterloom.sim.faultforms import dead_hops

        width = self.router.max_hops
        rows = np.full((len(paths), width), -1, dtype=np.int64)
        for i, p in enumerate(paths):
            if p is not None:
                rows[i, : len(p)] = p
        ev = keys[:, 3] & 0xFFFFFFFF
        hop = np.full(len(paths), -1, dtype=np.int64)
        live = None if alive is None else np.asarray(alive[: self.real_dirs // 2], dtype=bool)
        for h in self.holes:
            got = dead_hops(
                self.router, rows, keys[:, 0], keys[:, 1], keys[:, 2], ev, self.seed, h,
                alive=live,
            )  # fmt: skip
            hop = np.where((got >= 0) & ((hop < 0) | (got < hop)), got, hop)
        out = list(paths)
        for i in np.flatnonzero(hop >= 0).tolist():
            p = paths[i]
            assert p is not None
            j = int(hop[i])
            out[i] = (*p[:j], int(self.phantom_of[p[j]]))
        return out

    def dropped(self, cube: NDArray[np.int64]) -> NDArray[np.int64]:
        """Per design directed link, the phantoms' drops at the run's end (the packets the
        dead buckets held at that port)."""
        out = np.zeros(self.real_dirs, dtype=np.int64)
        drop = PortCounters.NAMES.index("drops")
        last = cube[-1, self.real_dirs :, drop]
        real = self.real_of >= 0
        np.add.at(out, self.real_of[real], last[real])
        return out

    def fold(self, cube: NDArray[np.int64]) -> NDArray[np.int64]:
        """Per-port counters ``[samples, run's directed links, counters]`` with the phantoms'
        drops counted at their real ports, and the phantoms' columns left out."""
        out = cube[:, : self.real_dirs, :].copy()
        drop = PortCounters.NAMES.index("drops")
        for j, real in enumerate(self.real_of.tolist()):
            if real >= 0:
                out[:, real, drop] += cube[:, self.real_dirs + j, drop]
        return out


class _HoledSim(PacketSim):
    """The engine with a run's dead EVs (:class:`DeadPorts`): its ECMP paths (and the
    sprayers' paths, ECMP on the healthy fabric) pass through the dead buckets."""

    dead: DeadPorts

    def _paths(self, arr: NDArray[np.int64], static: bool) -> list[tuple[int, ...] | None]:
        paths = super()._paths(arr, static)
        if static and self.source_routes is not None:
            return paths  # explicit source routes: not hashed
        return self.dead.apply(arr, paths, None if static else self.live_view)


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
    progress: Callable[[float, float], None] | None = None,
    source_routes: SourceRoutes | None = None,
    actions: Sequence[tuple[int, Callable[[PacketSim], None]]] = (),
    ports_sample_ps: int | None = None,
    losses: Mapping[int, float] | None = None,
    dead: Sequence[DeadBucket] = (),
) -> PacketResult:
    """Simulate ``traffic`` with one transport at the packet level (module docstring).

    ``config`` fields left unset (None) take the transport's choice (:func:`config_for`).
    ``progress(done, total)`` is called every few thousand events (when the engine checks
    whether to stop) with the payload bytes delivered so far, at most ``total``, the bytes of
    every flow: the work measure of an ETA (duplicates count, so it runs a little ahead
    under loss). It does not change the run. ``source_routes``: the run's explicit source
    routes (:class:`~clusterloom.sim.packet.engine.SourceRoutes`); ``actions``: (time, call)
    pairs, each ``call(sim)`` run at its time (a control plane's notifications).
    ``ports_sample_ps``: count per-port counters, sampled every so many picoseconds
    (``PacketResult.ports``, :class:`PortCounters`; None: not counted, nothing changes).
    ``losses``: physical link -> the probability that a packet arriving over it (either
    direction) is lost, for the whole run (:meth:`PacketSim.set_loss`). ``dead``: dead EVs
    (:class:`~clusterloom.sim.faultforms.DeadBucket`) for the whole run, their packets
    dropped at the output port of the switch where they hash into the dead bucket (module
    docstring)."""
    cfg = config_for(transport, config)
    holes: DeadPorts | None = None
    if dead:
        router = router or build_router(topology)
        holes = DeadPorts.make(topology, router, dead, seed)
        failures = (*failures, holes.failure)
        sim: PacketSim = _HoledSim(
            holes.topology,
            cfg,
            seed=seed,
            router=router,
            tracer=tracer,
            source_routes=source_routes,
        )
        sim.dead = holes  # type: ignore[attr-defined]
    else:
        sim = PacketSim(
            topology, cfg, seed=seed, router=router, tracer=tracer, source_routes=source_routes
        )
    t0 = time.perf_counter()
    if ports_sample_ps is not None:
        sim.count_ports(ports_sample_ps)
    for link, p in sorted((losses or {}).items()):
        sim.set_loss(link, p)
    flows = build(sim, traffic, transport, options=options)
    for f in failures:
        sim.schedule_failure(f)
    for at_ps, call in actions:
        sim.at(at_ps, partial(call, sim))
    finished = start_with_deps(sim, traffic, flows)
    first = [0]  # every flow before it has finished or failed (they stay so)
    n = len(flows)
    total = float(traffic.nbytes.sum())

    def stop() -> bool:
        if progress is not None:
            progress(min(float(sim.delivered_bytes), total), total)
        # retire what both ends are done with; keep the others to try again next time
        keep = [i for i in finished if not flows.retire(i)]
        finished[:] = keep
        i = first[0]
        while i < n and flows.done(i):
            i += 1
        first[0] = i
        return i == n

    limit = max_time_ps if max_time_ps is not None else cfg.max_time_ps
    sim.run(limit, stop)
    wall = time.perf_counter() - t0
    fig = flows.figures()
    stats = sim.stats  # applies the queued commands: the counters below see them too
    ports = None
    dead_drops = None
    if ports_sample_ps is not None:
        times, cube = sim.port_samples()
        if holes is not None:
            dead_drops = holes.dropped(cube)
            cube = holes.fold(cube)
        ports = PortCounters.of(ports_sample_ps, times, cube)
    return PacketResult(
        transport=transport,
        start_ps=fig.start_ps.copy(),
        finish_ps=fig.finish_ps.copy(),
        retransmissions=fig.retransmissions.copy(),
        failed=fig.failed.copy(),
        end_ps=sim.now,
        events=sim.events,
        wall_s=wall,
        drops=stats.drops,
        trims=stats.trims,
        marks=stats.marks,
        pauses=stats.pauses,
        max_queue_bytes=sim.max_queue_bytes(),
        data_bytes_delivered=stats.data_bytes_delivered,
        unfinished=why_unfinished(flows, sim.now, limit, sim.pending_events > 0),
        ports=ports,
        dead_drops=dead_drops,
    )


def why_unfinished(
    flows: Flows, now: int, limit: int, cut_off: bool, show: int = 5
) -> tuple[str, ...]:
    """One line per cause of flows left unfinished: connections that gave up (with their
    error), flows never started because a flow they wait on did not finish, flows still
    running when the run stopped (``cut_off``: at the time limit ``limit``; else at ``now``,
    with no event left). At most ``show`` flows named per line."""
    traffic = flows.traffic

    def named(some: Sequence[int]) -> str:
        head = ", ".join(f"{i} ({flows.src[i]}->{flows.dst[i]})" for i in some[:show])
        return head + (f" and {len(some) - show:,} more" if len(some) > show else "")

    out: list[str] = []
    failed: dict[str, list[int]] = {}
    running: list[int] = []
    waiting: list[int] = []
    for i in np.flatnonzero(flows.finish_ps < 0).tolist():
        c = flows.live[i]
        if c is not None and c.failed:
            failed.setdefault(c.errors[-1] if c.errors else "error", []).append(i)
        elif flows.started[i]:
            running.append(i)
        else:
            waiting.append(i)
    for reason, some in failed.items():
        out.append(f"{len(some):,} connection(s) gave up ({reason}): flow {named(some)}")
    if running:
        end = (
            f"the time limit ({limit / 1e6:,.1f} us)"
            if cut_off
            else f"the last event ({now / 1e6:,.1f} us)"
        )
        out.append(f"{len(running):,} flow(s) still unfinished at {end}: flow {named(running)}")
    if waiting:
        stuck = sorted(
            {
                j
                for i in waiting
                for j in traffic.deps(i).tolist()
                if flows.finish_ps[j] < 0 and flows.started[j]
            }
        )
        out.append(
            f"{len(waiting):,} flow(s) never started: they wait on flows that did not finish"
            + (f" (flow {named(stuck)})" if stuck else "")
            + f": flow {named(waiting)}"
        )
    return tuple(out)
