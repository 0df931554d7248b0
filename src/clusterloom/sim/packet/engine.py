"""The packet-level engine: discrete events in integer picoseconds over a ``Topology``.

Model (every assumption here is also listed in ``docs/packet.md``):

- **Time and order.** Events sit in one binary heap keyed by ``(time_ps, seq)``; ``seq`` is a
  counter incremented on every push, so two events at the same picosecond run in the order they
  were scheduled. All randomness (ECN marking, transports) comes from ``random.Random(seed)``
  objects created from the run's seed: the same inputs give the same run, event for event.
- **Links.** Every physical link of the topology is two directed links (``2i`` up, ``2i+1``
  down, as in :mod:`clusterloom.sim.flow.paths`) with the link's rate and propagation delay. A
  directed link is an output port at its source node: one FIFO for data and one strict-priority
  FIFO for control packets (ACK, NACK, pull, probe, CNP) and trimmed headers. Serialization takes
  ``size * 8 / rate`` (integer picoseconds, rounded down); the packet arrives at the far node
  one propagation delay after its last bit leaves.
- **Switches** are output-queued with a fixed buffer per port (``buffer_bytes``, data FIFO only;
  the control FIFO has its own ``control_buffer_bytes``). A data packet that finds more than
  ``ecn_kmin`` bytes queued is ECN-marked with a probability rising linearly to 1 at
  ``ecn_kmax`` (RED/DCQCN-style marking at enqueue). A data packet that does not fit is dropped
  (drop-tail) or, with ``trimming``, cut to its header and queued in the control FIFO (NDP).
  Host NIC ports have unbounded queues (host memory) and never mark or drop.
- **PFC** (``pfc=True``, lossless): a switch counts the bytes it holds per ingress link; above
  ``pfc_xoff`` it pauses the upstream port (after one propagation delay, the pause frame's
  flight), below ``pfc_xon`` it resumes it. A paused port still sends control packets. No data
  packet is dropped for lack of buffer in this mode (headroom is assumed sufficient).
- **Paths.** A packet carries its route as a tuple of directed links and the index of its next
  hop. Either the route is an explicit segment list (a source route, as SRv6 would carry) chosen
  by the sender, or it is the path that per-hop ECMP hashing of the packet's entropy value (EV)
  gives. ECMP hashing is stateless (``splitmix64(ev ^ seed ^ switch * golden)`` at every switch,
  :mod:`clusterloom.sim.flow.paths`), so the switches' choices for one (source, destination,
  port, EV) are a pure function of the routing view; the engine computes that path once per key
  (vectorized, :meth:`PacketSim.prefetch`) and memoizes it. The routing view changes
  ``reroute_ps`` after a hard failure or repair (detection plus reconvergence; default 1 s as in
  the flow-level model); source routes never change.
- **Failures** (the syntax of :mod:`clusterloom.sim.flow.run`): a hard failure takes both
  directions of the links down at its start, drops what they hold and what is on the wire;
  packets routed onto a dead link are dropped. A gray failure keeps ``fraction`` of the rate.
"""

from __future__ import annotations

import heapq
import itertools
import random
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from clusterloom.errors import ClusterloomError
from clusterloom.fabric.topology import Topology
from clusterloom.sim.flow.paths import Router, build_router, route
from clusterloom.sim.flow.run import Failure
from clusterloom.units import PS_PER_S, PS_PER_US

__all__ = [
    "ACK",
    "CNP",
    "DATA",
    "KIND_NAMES",
    "NACK",
    "PROBE",
    "PROBE_ACK",
    "PULL",
    "Endpoint",
    "Packet",
    "PacketConfig",
    "PacketSim",
    "PacketSimError",
]

# packet kinds
DATA, ACK, NACK, PULL, PROBE, PROBE_ACK, CNP = range(7)
KIND_NAMES = ("data", "ack", "nack", "pull", "probe", "probe-ack", "cnp")

# event kinds
_ARRIVE, _TXDONE, _TIMER, _ACTION, _WIRE = range(5)


class PacketSimError(ClusterloomError, ValueError):
    """A scenario the packet engine cannot run (bad configuration, a host out of range...)."""


@dataclass(frozen=True)
class PacketConfig:
    """Switch and packet parameters of a run (module docstring: the model)."""

    mtu: int = 4096  # payload bytes of a full data packet
    header: int = 64  # bytes of every header (a control packet, a trimmed packet)
    buffer_bytes: int = 512 * 1024  # data FIFO per switch output port
    control_buffer_bytes: int = 64 * 1024
    ecn_kmin: int = 64 * 1024
    ecn_kmax: int = 256 * 1024
    ecn: bool = True
    trimming: bool = False
    pfc: bool = False
    pfc_xoff: int = 256 * 1024
    pfc_xon: int = 128 * 1024
    reroute_ps: int = PS_PER_S  # routing reconvergence after a hard failure or a repair
    max_time_ps: int = 10 * PS_PER_S

    def problems(self) -> list[str]:
        out = []
        if self.mtu <= 0 or self.header <= 0:
            out.append(f"mtu and header must be positive, got {self.mtu} and {self.header}")
        if self.buffer_bytes < self.mtu + self.header:
            out.append(f"buffer_bytes {self.buffer_bytes} holds not even one packet")
        if not 0 <= self.ecn_kmin <= self.ecn_kmax:
            out.append(f"need 0 <= ecn_kmin <= ecn_kmax, got {self.ecn_kmin}, {self.ecn_kmax}")
        if self.pfc and not 0 < self.pfc_xon <= self.pfc_xoff:
            out.append(f"need 0 < pfc_xon <= pfc_xoff, got {self.pfc_xon}, {self.pfc_xoff}")
        if self.pfc and self.trimming:
            out.append("pfc (lossless) and trimming exclude each other")
        return out


class Packet:
    """One packet. ``size`` is bytes on the wire (header plus payload); ``payload`` is the data
    bytes it carries (kept on a trimmed packet so the receiver can NACK it). Transport fields
    (``cum``, ``sack``, ``echo``, ``hint``, ``path``, ``pseq``, ``msg``) are free for the
    transport's headers; ``key`` and ``job`` identify the connection's security context."""

    __slots__ = (
        "cum",
        "dst",
        "echo",
        "ecn",
        "ev",
        "flow",
        "hint",
        "hop",
        "ingress",
        "job",
        "key",
        "kind",
        "msg",
        "path",
        "payload",
        "port",
        "prio",
        "pseq",
        "route",
        "sack",
        "sent_ps",
        "seq",
        "size",
        "src",
        "trimmed",
    )

    def __init__(
        self,
        kind: int,
        flow: int,
        src: int,
        dst: int,
        seq: int = 0,
        payload: int = 0,
        header: int = 64,
    ) -> None:
        self.kind = kind
        self.flow = flow
        self.src = src
        self.dst = dst
        self.seq = seq
        self.payload = payload
        self.size = header + payload
        self.prio = kind != DATA and kind != PROBE  # probes test the data path
        self.ecn = False
        self.trimmed = False
        self.ev = 0
        self.port = 0
        self.route: tuple[int, ...] = ()
        self.hop = 0
        self.ingress = -1
        self.cum = 0
        self.sack = 0
        self.echo = -1
        self.hint = 0
        self.path = -1
        self.pseq = -1
        self.msg = -1
        self.key = 0
        self.job = 0
        self.sent_ps = 0

    def copy(self) -> Packet:
        out = Packet.__new__(Packet)
        for name in Packet.__slots__:
            setattr(out, name, getattr(self, name))
        return out


class Endpoint(Protocol):
    """What the engine calls on a transport's connection (both ends in one object)."""

    def on_packet(self, pkt: Packet, now: int) -> None:
        """A packet of this connection arrived at one of its hosts."""
        ...

    def on_timer(self, token: int, now: int) -> None:
        """A timer this connection set with :meth:`PacketSim.timer` fired."""
        ...


class Tracer(Protocol):
    def packet(self, now: int, where: str, host: int, pkt: Packet) -> None: ...

    def event(self, now: int, flow: int, what: str, a: int = 0, b: int = 0) -> None: ...

    def routed(self, pkt: Packet) -> None: ...


#: An impairment hook at delivery: returns None (deliver as is) or a list of (delay_ps, packet)
#: to deliver instead (empty: drop).
Impair = Callable[[Packet, int], "list[tuple[int, Packet]] | None"]


@dataclass
class NetStats:
    drops: int = 0
    trims: int = 0
    marks: int = 0
    no_route: int = 0
    pauses: int = 0
    data_bytes_delivered: int = 0


@dataclass
class _Route:
    ecmp: dict[tuple[int, int, int, int], tuple[int, ...] | None] = field(default_factory=dict)
    static: dict[tuple[int, int, int, int], tuple[int, ...] | None] = field(default_factory=dict)


class PacketSim:
    """One run of the packet engine over ``topology`` (module docstring for the model)."""

    def __init__(
        self,
        topology: Topology,
        config: PacketConfig | None = None,
        *,
        seed: int = 0,
        router: Router | None = None,
        tracer: Tracer | None = None,
    ) -> None:
        self.cfg = cfg = config or PacketConfig()
        bad = cfg.problems()
        if bad:
            raise PacketSimError("; ".join(bad))
        self.topology = t = topology
        self.router = router or build_router(t)
        self.seed = seed
        self.rng = random.Random(seed)
        self.tracer = tracer
        self.n_hosts = t.plan.hosts
        self.ports_per_host = int(self.router.host_link.shape[1])
        n = 2 * t.n_links
        lo = t.link_src.astype(np.int64)
        hi = t.link_dst.astype(np.int64)
        to = np.empty(n, dtype=np.int64)
        to[0::2], to[1::2] = hi, lo
        frm = np.empty(n, dtype=np.int64)
        frm[0::2], frm[1::2] = lo, hi
        self.dl_to: list[int] = to.tolist()
        self.dl_from: list[int] = frm.tolist()
        self.base_rate: list[int] = np.repeat(t.link_capacity_bps, 2).tolist()
        self.rate: list[int] = list(self.base_rate)
        self.prop: list[int] = np.repeat(t.link_latency_ps, 2).tolist()
        self.switch_port: list[bool] = (frm >= self.n_hosts).tolist()
        big = 1 << 62
        self.limit: list[int] = [cfg.buffer_bytes if s else big for s in self.switch_port]
        self.q: list[deque[Packet]] = [deque() for _ in range(n)]
        self.hq: list[deque[Packet]] = [deque() for _ in range(n)]
        self.qbytes = [0] * n
        self.hbytes = [0] * n
        self.max_qbytes = [0] * n
        self.free_at = [0] * n
        self.pending = [False] * n
        self.paused = [False] * n
        self.alive = [True] * n
        self.epoch = [0] * n
        #: packets on each directed link's wire, in order: (arrival time, packet); the heap
        #: holds one event per busy link (its first arrival), not one per packet in flight
        self.wire: list[deque[tuple[int, Packet]]] = [deque() for _ in range(n)]
        self.ingress_bytes = [0] * n
        self.routes = _Route()
        self.live_view = np.ones(t.n_links, dtype=bool)
        self.conns: list[Endpoint] = []
        self.impair: Impair | None = None
        #: state shared by the connections of one host (receiver pacers, rate hints), by name
        self.shared: dict[str, dict[int, Any]] = {}
        self.stats = NetStats()
        self.heap: list[tuple[int, int, int, Any, Any]] = []
        self._counter = itertools.count(1)
        self.now = 0
        self.events = 0

    # -- scheduling --------------------------------------------------------------------------

    def _push(self, time: int, kind: int, a: Any, b: Any) -> None:
        heapq.heappush(self.heap, (time, next(self._counter), kind, a, b))

    def timer(self, at_ps: int, conn: int, token: int) -> None:
        """Call ``conns[conn].on_timer(token)`` at ``at_ps`` (never earlier than now)."""
        self._push(max(at_ps, self.now), _TIMER, conn, token)

    def at(self, at_ps: int, action: Callable[[], None]) -> None:
        """Run ``action()`` at ``at_ps``."""
        self._push(max(at_ps, self.now), _ACTION, action, None)

    def add(self, conn: Endpoint) -> int:
        """Register a connection; its id is the ``flow`` its packets carry."""
        self.conns.append(conn)
        return len(self.conns) - 1

    # -- paths -------------------------------------------------------------------------------

    def _compute(self, keys: Sequence[tuple[int, int, int, int]], static: bool) -> None:
        if not keys:
            return
        arr = np.array(keys, dtype=np.int64).reshape(-1, 4)
        bad = (arr[:, :2] < 0) | (arr[:, :2] >= self.n_hosts)
        if bad.any() or ((arr[:, 2] < 0) | (arr[:, 2] >= self.ports_per_host)).any():
            raise PacketSimError(f"a path key is out of range: {keys[int(np.argmax(bad.any(1)))]}")
        alive = None if static else self.live_view
        rows = route(
            self.router,
            arr[:, 0],
            arr[:, 1],
            arr[:, 2],
            arr[:, 3] & 0xFFFFFFFF,
            seed=self.seed,
            alive=alive,
        )
        table = self.routes.static if static else self.routes.ecmp
        for key, row in zip(keys, rows.tolist(), strict=True):
            links = tuple(x for x in row if x >= 0)
            table[key] = links or None

    def prefetch(self, keys: Iterable[tuple[int, int, int, int]], *, static: bool = False) -> None:
        """Compute the paths of (src, dst, port, ev) keys in one vectorized call."""
        table = self.routes.static if static else self.routes.ecmp
        todo = list(dict.fromkeys(k for k in keys if k not in table))
        self._compute(todo, static)

    def path(
        self, src: int, dst: int, port: int, ev: int, static: bool = False
    ) -> tuple[int, ...] | None:
        """Directed links from ``src`` to ``dst`` through host port ``port`` for entropy ``ev``:
        the ECMP path under the current routing view, or (``static``) the source route fixed on
        the healthy fabric. None: no live path."""
        key = (src, dst, port, ev)
        table = self.routes.static if static else self.routes.ecmp
        if key not in table:
            self._compute([key], static)
        return table[key]

    def plane_of_port(self, port: int) -> int:
        return port // max(self.topology.plan.ports_per_host, 1)

    # -- sending -----------------------------------------------------------------------------

    def send(self, pkt: Packet, port: int, ev: int, *, source_route: bool = False) -> bool:
        """Hand ``pkt`` to its source host's NIC port ``port`` with entropy ``ev``. Returns False
        when no route exists (the packet is dropped)."""
        pkt.ev = ev
        pkt.port = port
        pkt.sent_ps = self.now
        r = self.path(pkt.src, pkt.dst, port, ev, source_route)
        if self.tracer is not None:
            self.tracer.packet(self.now, "tx", pkt.src, pkt)
        if r is None:
            self.stats.no_route += 1
            return False
        pkt.route = r
        pkt.hop = 1
        if self.tracer is not None:
            self.tracer.routed(pkt)
        self._enqueue(r[0], pkt)
        return True

    def deliver_later(self, pkt: Packet, delay_ps: int) -> None:
        """Deliver ``pkt`` to its destination host after ``delay_ps`` (scripted injection)."""
        pkt.route = ()
        self._push(self.now + delay_ps, _ARRIVE, pkt, -1)

    # -- the data plane ----------------------------------------------------------------------

    def _enqueue(self, dl: int, pkt: Packet) -> None:
        if not self.alive[dl]:
            self.stats.drops += 1
            self._release(pkt)
            return
        size = pkt.size
        if pkt.prio:
            if self.hbytes[dl] + size > self.cfg.control_buffer_bytes and self.switch_port[dl]:
                self.stats.drops += 1
                self._release(pkt)
                return
            self.hq[dl].append(pkt)
            self.hbytes[dl] += size
        else:
            qb = self.qbytes[dl]
            if self.switch_port[dl]:
                cfg = self.cfg
                if qb + size > self.limit[dl] and not cfg.pfc:
                    if cfg.trimming:
                        self._trim(dl, pkt)
                        return
                    self.stats.drops += 1
                    if self.tracer is not None:
                        self.tracer.event(self.now, pkt.flow, "drop", pkt.seq, dl)
                    self._release(pkt)
                    return
                span = cfg.ecn_kmax - cfg.ecn_kmin
                if (
                    cfg.ecn
                    and qb > cfg.ecn_kmin
                    and not pkt.ecn
                    and (qb >= cfg.ecn_kmax or self.rng.random() * span < qb - cfg.ecn_kmin)
                ):
                    pkt.ecn = True
                    self.stats.marks += 1
            self.q[dl].append(pkt)
            qb += size
            self.qbytes[dl] = qb
            if qb > self.max_qbytes[dl]:
                self.max_qbytes[dl] = qb
        if not self.pending[dl]:
            if self.free_at[dl] <= self.now:
                self._transmit(dl)
            else:
                self.pending[dl] = True
                self._push(self.free_at[dl], _TXDONE, dl, None)

    def _trim(self, dl: int, pkt: Packet) -> None:
        """Cut a data packet that does not fit to its header, queued at high priority."""
        self.stats.trims += 1
        pkt.trimmed = True
        pkt.prio = True
        pkt.size = self.cfg.header
        if self.tracer is not None:
            self.tracer.event(self.now, pkt.flow, "trim", pkt.seq, dl)
        self._enqueue(dl, pkt)

    def _release(self, pkt: Packet) -> None:
        """PFC accounting of a packet that leaves its switch (sent on or dropped)."""
        ing = pkt.ingress
        if ing >= 0:
            pkt.ingress = -1
            left = self.ingress_bytes[ing] - pkt.size
            self.ingress_bytes[ing] = left
            if self.paused[ing] and left <= self.cfg.pfc_xon:
                self._push(self.now + self.prop[ing], _ACTION, self._resume, ing)

    def _transmit(self, dl: int) -> None:
        """Start sending the next packet of port ``dl`` if it has one it may send."""
        hq = self.hq[dl]
        if hq:
            pkt = hq.popleft()
            self.hbytes[dl] -= pkt.size
        elif self.q[dl] and not self.paused[dl]:
            pkt = self.q[dl].popleft()
            self.qbytes[dl] -= pkt.size
        else:
            return
        if pkt.ingress >= 0:
            self._release(pkt)
        end = self.now + pkt.size * 8 * PS_PER_S // self.rate[dl]
        self.free_at[dl] = end
        arrival = end + self.prop[dl]
        wire = self.wire[dl]
        wire.append((arrival, pkt))
        if len(wire) == 1:
            self._push(arrival, _WIRE, dl, self.epoch[dl])
        if hq or (self.q[dl] and not self.paused[dl]):
            self.pending[dl] = True
            self._push(end, _TXDONE, dl, None)

    def _resume(self, dl: Any) -> None:
        if self.paused[dl] and self.ingress_bytes[dl] <= self.cfg.pfc_xon:
            self.paused[dl] = False
            if not self.pending[dl] and self.q[dl]:
                if self.free_at[dl] <= self.now:
                    self._transmit(dl)
                else:
                    self.pending[dl] = True
                    self._push(self.free_at[dl], _TXDONE, dl, None)

    def _pause(self, dl: Any) -> None:
        if self.ingress_bytes[dl] > self.cfg.pfc_xon and not self.paused[dl]:
            self.paused[dl] = True
            self.stats.pauses += 1

    def _arrive(self, pkt: Packet, dl: int) -> None:
        """``pkt`` came off directed link ``dl`` (-1: injected at its destination host)."""
        node = self.dl_to[dl] if dl >= 0 else pkt.dst
        if node < self.n_hosts:
            if self.impair is not None and dl >= 0:
                instead = self.impair(pkt, self.now)
                if instead is not None:
                    for delay, p in instead:
                        self.deliver_later(p, delay) if delay > 0 else self._deliver(p)
                    return
            self._deliver(pkt)
            return
        r = pkt.route
        nxt = r[pkt.hop]
        pkt.hop += 1
        if self.cfg.pfc and not pkt.prio:
            pkt.ingress = dl
            held = self.ingress_bytes[dl] + pkt.size
            self.ingress_bytes[dl] = held
            if held > self.cfg.pfc_xoff and not self.paused[dl]:
                self._push(self.now + self.prop[dl], _ACTION, self._pause, dl)
        self._enqueue(nxt, pkt)

    def _deliver(self, pkt: Packet) -> None:
        if self.tracer is not None:
            self.tracer.packet(self.now, "rx", pkt.dst, pkt)
        if pkt.kind == DATA and not pkt.trimmed:
            self.stats.data_bytes_delivered += pkt.payload
        if 0 <= pkt.flow < len(self.conns):
            self.conns[pkt.flow].on_packet(pkt, self.now)

    # -- failures ----------------------------------------------------------------------------

    def schedule_failure(self, f: Failure) -> None:
        """Apply a failure of :mod:`clusterloom.sim.flow.run` at its times."""
        directed = [int(x) for link in f.links.tolist() for x in (2 * link, 2 * link + 1)]
        bad = [d for d in directed if d >= len(self.alive)]
        if bad:
            raise PacketSimError(f"failure {f.label}: no directed link {bad[0]}")
        self.at(f.start_ps, lambda: self._set_links(directed, f.fraction, f.fraction == 0.0))
        if f.end_ps is not None:
            self.at(f.end_ps, lambda: self._set_links(directed, 1.0, f.fraction == 0.0))

    def _set_links(self, directed: list[int], fraction: float, hard: bool) -> None:
        for dl in directed:
            if fraction == 0.0:
                if self.alive[dl]:
                    self.alive[dl] = False
                    self.epoch[dl] += 1  # what is on the wire is lost
                    self.stats.drops += len(self.wire[dl])
                    self.wire[dl].clear()
                    for queue in (self.q[dl], self.hq[dl]):
                        self.stats.drops += len(queue)
                        for pkt in queue:
                            self._release(pkt)
                        queue.clear()
                    self.qbytes[dl] = self.hbytes[dl] = 0
            else:
                self.alive[dl] = True
                self.rate[dl] = max(1, round(self.base_rate[dl] * fraction))
        if self.tracer is not None:
            self.tracer.event(
                self.now,
                -1,
                "link-down" if fraction == 0 else "link-rate",
                directed[0] // 2,
                round(fraction * 1000),
            )
        if hard:
            self.at(self.now + self.cfg.reroute_ps, self._reroute)

    def _reroute(self) -> None:
        """The switches' routing view catches up with the links (ECMP paths recomputed)."""
        alive = np.array(self.alive, dtype=bool)
        self.live_view = alive[0::2] & alive[1::2]
        keys = list(self.routes.ecmp)
        self.routes.ecmp.clear()
        self._compute(keys, False)

    # -- the loop ----------------------------------------------------------------------------

    def run(self, until_ps: int | None = None, stop: Callable[[], bool] | None = None) -> int:
        """Run events up to ``until_ps`` (default: the config's ``max_time_ps``) or until the
        heap is empty or ``stop()`` is true (checked every 4,096 events). Returns the time.

        The common cases (a packet arriving at a switch and queued on its output port, a port
        finishing a packet) are inlined here; the rest calls the methods above, which keep the
        same state."""
        limit = self.cfg.max_time_ps if until_ps is None else until_ps
        heap = self.heap
        pop, push = heapq.heappop, heapq.heappush
        counter = self._counter
        conns = self.conns
        arrive_slow, transmit = self._arrive, self._transmit
        pending, free_at, epoch, wire = self.pending, self.free_at, self.epoch, self.wire
        dl_to, n_hosts = self.dl_to, self.n_hosts
        q, hq, qbytes, hbytes, max_q = self.q, self.hq, self.qbytes, self.hbytes, self.max_qbytes
        limit_b, alive, paused = self.limit, self.alive, self.paused
        rate, prop = self.rate, self.prop
        ingress_bytes = self.ingress_bytes
        cfg = self.cfg
        slow = self.impair is not None or self.tracer is not None
        pfc, trimming = cfg.pfc, cfg.trimming
        xoff = cfg.pfc_xoff
        release, trim, pause = self._release, self._trim, self._pause
        ecn, kmin, kmax = cfg.ecn, cfg.ecn_kmin, cfg.ecn_kmax
        span = kmax - kmin
        ctrl_limit = cfg.control_buffer_bytes
        rnd = self.rng.random
        stats = self.stats
        ps8 = 8 * PS_PER_S
        n = 0
        while heap:
            item = pop(heap)
            time = item[0]
            if time > limit:
                push(heap, item)
                break
            if stop is not None and not (n + 1) & 4095 and stop():
                push(heap, item)  # not run: a later run() takes it up
                break
            self.now = time
            n += 1
            kind = item[2]
            if kind == _WIRE:
                dl = item[3]
                ep = item[4]
                if ep != epoch[dl]:  # the link failed since: its wire was emptied
                    continue
                w = wire[dl]
                pkt = w.popleft()[1]
                if w:
                    push(heap, (w[0][0], next(counter), _WIRE, dl, ep))
                if slow:
                    arrive_slow(pkt, dl)
                    continue
                node = dl_to[dl]
                if node < n_hosts:
                    if pkt.kind == DATA:
                        stats.data_bytes_delivered += pkt.payload
                    conns[pkt.flow].on_packet(pkt, time)
                    continue
                dl_in = dl
                dl = pkt.route[pkt.hop]
                pkt.hop += 1
                # enqueue on output port dl
                if not alive[dl]:
                    stats.drops += 1
                    continue
                size = pkt.size
                if pfc and not pkt.prio:
                    pkt.ingress = dl_in
                    held = ingress_bytes[dl_in] + size
                    ingress_bytes[dl_in] = held
                    if held > xoff and not paused[dl_in]:
                        push(heap, (time + prop[dl_in], next(counter), _ACTION, pause, dl_in))
                if pkt.prio:
                    hb = hbytes[dl] + size
                    if hb > ctrl_limit:
                        stats.drops += 1
                        continue
                    hq[dl].append(pkt)
                    hbytes[dl] = hb
                else:
                    qb = qbytes[dl]
                    if qb + size > limit_b[dl] and not pfc:
                        if trimming:
                            trim(dl, pkt)
                        else:
                            stats.drops += 1
                        continue
                    if (
                        ecn
                        and qb > kmin
                        and not pkt.ecn
                        and (qb >= kmax or rnd() * span < qb - kmin)
                    ):
                        pkt.ecn = True
                        stats.marks += 1
                    q[dl].append(pkt)
                    qb += size
                    qbytes[dl] = qb
                    if qb > max_q[dl]:
                        max_q[dl] = qb
                if pending[dl]:
                    continue
                if free_at[dl] > time:
                    pending[dl] = True
                    push(heap, (free_at[dl], next(counter), _TXDONE, dl, None))
                    continue
                # fall through: transmit now
            elif kind == _TXDONE:
                dl = item[3]
                pending[dl] = False
                if slow:
                    transmit(dl)
                    continue
            elif kind == _TIMER:
                conns[item[3]].on_timer(item[4], time)
                continue
            elif kind == _ARRIVE:
                arrive_slow(item[3], item[4])
                continue
            else:
                a, b = item[3], item[4]
                a() if b is None else a(b)
                continue
            # transmit the next packet of port dl (switch_port or host port; no PFC here)
            hqd = hq[dl]
            if hqd:
                pkt = hqd.popleft()
                hbytes[dl] -= pkt.size
            else:
                qd = q[dl]
                if not qd or paused[dl]:
                    continue
                pkt = qd.popleft()
                qbytes[dl] -= pkt.size
            if pkt.ingress >= 0:
                release(pkt)
            end = time + pkt.size * ps8 // rate[dl]
            free_at[dl] = end
            arrival = end + prop[dl]
            w = wire[dl]
            w.append((arrival, pkt))
            if len(w) == 1:
                push(heap, (arrival, next(counter), _WIRE, dl, epoch[dl]))
            if hqd or q[dl]:
                pending[dl] = True
                push(heap, (end, next(counter), _TXDONE, dl, None))
        self.events += n
        return self.now

    # -- observation -------------------------------------------------------------------------

    def max_queue_bytes(self) -> int:
        """The largest data backlog any switch port held."""
        return max(
            (b for b, s in zip(self.max_qbytes, self.switch_port, strict=True) if s), default=0
        )


def us(value: float) -> int:
    """Microseconds to picoseconds."""
    return round(value * PS_PER_US)
