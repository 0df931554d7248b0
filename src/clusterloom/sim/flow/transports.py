"""Transport models for the fluid engine: how a connection's bytes map onto paths, and what it
does when a link fails. One interface (``Transport``), four models, each with its assumptions:

``roce-ecmp``
    RoCEv2 with ECMP: each queue pair (``qps`` per connection, default one per NIC port, as NCCL
    opens a channel per NIC; QP ``q`` of connection ``c`` uses port ``(c + q) mod ports``) is
    hashed to one path
    by its 5-tuple at every switch (the EV is a hash of source, destination, QP and seed) and is
    its own max-min entity (uncoupled). Its NIC port is the connection's (round-robin by QP). On a
    failure the QPs crossing the link stall until detection plus routing reconvergence
    (``reroute_delay_s``, default 1 s) and are then rehashed over the surviving paths. With
    ``dcqcn=0`` the QPs have no congestion control (htsim's RoCE; the packet engine's
    ``roce-ecmp.dcqcn=0``) on a lossless (PFC) fabric, and the engine's lossless model replaces
    per-flow max-min (input-port sharing at congested ports, head-of-line blocking on paused
    links, ACKs that load the reverse links without holding their sender back; docs/sim.md,
    "Lossless fabric"). ``pfc_hol`` (left out: on exactly when ``dcqcn``
    is off) sets that model apart from ``dcqcn``. With DCQCN (the default) rates are max-min:
    the fluid share that rate control aims at, and PFC rarely pauses.
``mrc-spray``
    MRC-style packet spraying: each connection sprays over ``evs`` entropy values (default 128,
    as the packet engine) spread round-robin over every NIC port (so over every plane); an EV
    maps to a fixed path (a static source route). By default (``balance=False``) the
    connection is ONE max-min entity with a fixed even split over its EVs (a *coupled* flow:
    its most congested EV holds it back). That is what per-packet round-robin spraying whose
    load balancing skips an EV for a few turns after an ECN echo or a trim does at full load
    (MRC's, EQDS's in htsim, the packet engine's): the skips cannot outrun collisions that
    every EV of a busy fabric sees, and both packet-level simulators land at or a little past
    the fixed split on a k=16 permutation (``bench/RESULTS.md``, "Flow engine fidelity").
    With ``balance=True`` each EV is its own max-min entity weighted ``1/evs`` drawing on the
    connection's pool of bytes (a *pooled* flow): a congested EV slows only itself and the
    others carry the rest, the fluid limit of a load balancer that moves every byte it can to
    the EVs that deliver (it does not hand an EV's share entirely to a competing connection,
    so on collisions it lies between fixed spraying and ``ideal``). On a failure, the EVs
    crossing the dead link are black holes (balanced: their share of the sender's bandwidth is
    lost; fixed split: the connection stalls, its window held by packets that never arrive)
    until an endpoint detection delay of a few RTTs (``detect_s``, default 20 us); they are
    then retired and the connection continues on its remaining EVs; nothing is re-routed (no
    reconvergence). Losing a plane costs that plane's share.
``receiver-driven``
    MetaRoCE/NDP-style receiver pacing over the same sprayed paths (``evs`` default 64, as the
    packet engine; coupled by default as ``mrc-spray``): the receiver grants credit so that
    incast shares its downlink fairly without queues (in a fluid model, max-min on the
    receiver link), and a loss rate ``loss`` (default 0) costs ``1 / (1 - loss)`` more bytes on
    the wire (each lost packet is sent again once; trimmed headers are not counted). Its
    first window is ``iw_bdp`` BDPs, then pulls (``cwnd_bdp``, inherited, is not used).

Every transport but ``ideal`` also carries the terms of docs/sim.md, "Latency, headers and
start-up": ``mss``/``hdr`` framing (4096/64, the packet engine's), the path's propagation and
store-and-forward, its ACKs (and pulls) on the reverse links (``roce-ecmp`` one per
``ack_every`` packets, ``mrc-spray`` one SACK per packet, ``receiver-driven`` an ACK and a PULL
per packet), start-up (``handshake_rtts``, the first pull, ``cwnd_bdp``) and ``notify_us``.
``ideal``
    The physical limit with perfect multipath: every connection spreads over all its NIC ports
    (each port a pooled entity, so it uses whatever any port has left) and, inside the fabric,
    over every equal-cost path at once. That is modelled with trunks: a leaf's uplinks are one
    virtual link up and one down of their summed live capacity, and so are (3 tiers) the spine
    uplinks of each pod of each plane; a path crosses its hosts' NIC links and the trunks of the
    leaves (and pods) it leaves and enters. This is exact for a Clos whose upper tier is
    non-blocking (a perfect spray over the spines of a leaf fills its uplinks evenly, and the
    spines' downlinks to a leaf are that leaf's down trunk), so it holds with oversubscription
    at the leaves or pods and with failed or degraded links (the trunk loses their capacity,
    reacting at once). It is optimistic where a failure leaves the links of one trunk unevenly
    loaded in a way no routing could balance (the max-concurrent-flow LP is not solved).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar, Protocol

import numpy as np
from numpy.typing import NDArray

from clusterloom.errors import PluginError, Problem, SpecError
from clusterloom.fabric.topology import Role
from clusterloom.sim.flow._fill import compact_rows, merge_rows
from clusterloom.sim.flow.engine import UnitSet, frozen
from clusterloom.sim.paths import Router, connection_hash, route, splitmix64
from clusterloom.sim.registry import REGISTRY, implemented_by, plugin_implementation
from clusterloom.units import PS_PER_S, PS_PER_US

I64 = NDArray[np.int64]
F64 = NDArray[np.float64]
B = NDArray[np.bool_]

#: a sprayer routes (and merges) its connections' EVs this many at a time
ROUTE_CHUNK_EVS = 1 << 18

#: the packet engine's defaults (``sim.packet.engine.PacketConfig``), so the engines agree
MSS_BYTES = 4096
HDR_BYTES = 64


def _units(flow: I64, paths: I64, share: NDArray[np.float64]) -> UnitSet:
    """Units from per-unit owning flows and ``-1``-padded path rows."""
    # compiled (``_fill.compact_rows``): the CSR of ``paths >= 0`` row by row
    ptr, links = compact_rows(np.ascontiguousarray(paths, dtype=np.int64))
    return UnitSet(
        unit_flow=frozen(flow.astype(np.int64, copy=False)),
        unit_ptr=frozen(ptr),
        unit_link=frozen(links),
        unit_share=frozen(share.astype(np.float64)),
    )


def _crosses_dead(paths: I64, alive: B) -> B:
    """Rows whose path has no link (no route) or crosses a dead physical link."""
    physical = np.where(paths >= 0, paths // 2, 0)
    dead: B = np.asarray((paths < 0).all(axis=1) | ((paths >= 0) & ~alive[physical]).any(axis=1))
    return dead


def _keep_or_stall(f: I64, ids: I64, usable: B, first: B) -> B:
    """Units to keep: the usable ones, and for a connection with none the first unit (on its
    dead path, so that it stalls at rate 0 until the link comes back)."""
    per_flow = np.bincount(f[usable], minlength=int(ids.max(initial=-1)) + 1)
    lost = per_flow[f] == 0
    keep: B = np.asarray(usable | (lost & first), dtype=bool)
    return keep


def _merge_same_paths(f: I64, paths: I64, share: F64) -> tuple[I64, I64, F64]:
    """One unit per distinct path of each flow, carrying the shares of its EVs: exact for a
    coupled flow (its load on a link is its rate times the shares crossing it), and it keeps
    an in-leaf flow of 256 EVs (one path) at one unit."""
    if f.size == 0:
        return f, paths, share
    # compiled (``_fill.merge_rows``): the rows in the order of their first EV, shares summed
    # in EV order, as ``np.unique(axis=0)`` and ``np.bincount`` gave them (8.7 s of 13.6 on
    # the k=32 permutation's routing, 2.1 million EVs)
    first, merged = merge_rows(
        np.ascontiguousarray(f, dtype=np.int64),
        np.ascontiguousarray(paths, dtype=np.int64),
        np.ascontiguousarray(share, dtype=np.float64),
    )
    kept_f: I64 = f[first].astype(np.int64, copy=False)  # a gather is a new array already
    kept_paths: I64 = paths[first].astype(np.int64, copy=False)
    return kept_f, kept_paths, merged


class Transport(Protocol):
    name: ClassVar[str]

    @property
    def mode(self) -> str:
        """How a connection's units share its bytes in the engine: ``split``, ``coupled`` or
        ``pooled`` (see :mod:`clusterloom.sim.flow.engine`)."""
        ...

    def units(
        self, router: Router, src: I64, dst: I64, *, alive: B, seed: int, flows: I64 | None = None
    ) -> UnitSet:
        """Units of the given connections (all of them, or ``flows``) over the live links."""
        ...

    def reroute_delay_s(self) -> float:
        """Seconds from a failure until the transport acts on it."""
        ...

    def wire_factor(self) -> float:
        """Bytes on the wire per byte delivered, besides headers (retransmitted losses)."""
        ...

    def framing(self) -> tuple[int, int] | None:
        """``(mss, hdr)``: payload bytes of a full packet and header bytes of every packet,
        or None for a transport without packets (``ideal``: no headers, no latency)."""
        ...

    def startup_ps(self, wire: F64, rtt_ps: I64, rate_bps: F64) -> I64:
        """Picoseconds from a flow's posting until its bytes flow at its share (handshake,
        the wait for the first pull), per flow of ``wire`` bytes on the wire over a path of
        base round trip ``rtt_ps`` from a sender of ``rate_bps``."""
        ...

    def window_bytes(self, rtt_ps: I64, rate_bps: F64) -> F64 | None:
        """Payload bytes a flow may have in flight (its rate is at most this per RTT), or
        None: not window-limited."""
        ...

    def notify_ps(self) -> int:
        """Picoseconds from a flow's last byte to the start of a flow waiting for it."""
        ...

    def control_bytes(self) -> float:
        """Bytes of control packets (ACKs, pulls) the receiver sends back per data packet."""
        ...

    def trunks(self, router: Router) -> Trunks | None:
        """Virtual links the units cross (numbered after the directed links), or None."""
        ...


def _ports(router: Router) -> int:
    return int(router.host_link.shape[1])


@dataclass(frozen=True, eq=False)
class Trunks:
    """Virtual links of the ``ideal`` model, numbered after the directed links: ``of_link[d]``
    is the trunk of directed link ``d`` (-1: none); a trunk's capacity is its members' sum.
    ``leaf_up[node]``/``leaf_down[node]`` (-1 for non-leaves) and ``pod_up[plane, pod]``/
    ``pod_down[plane, pod]`` (3 tiers; empty otherwise) are trunk numbers."""

    of_link: I64
    n: int
    leaf_up: I64
    leaf_down: I64
    pod_up: I64
    pod_down: I64

    def capacity(self, directed: NDArray[np.float64]) -> NDArray[np.float64]:
        """Capacity of every trunk given the capacity of every directed link."""
        member = self.of_link >= 0
        cap: NDArray[np.float64] = np.bincount(
            self.of_link[member], directed[: self.of_link.shape[0]][member], minlength=self.n
        ).astype(np.float64)
        return cap


def build_trunks(router: Router) -> Trunks:
    """The leaf and pod trunks of a topology (see ``ideal`` in the module docstring)."""
    t = router.topology
    n_dir = router.n_directed
    of_link = np.full(n_dir, -1, dtype=np.int64)
    leaf_up = np.full(t.n_nodes, -1, dtype=np.int64)
    leaves = np.flatnonzero(t.node_role == Role.LEAF)
    leaf_up[leaves] = 2 * np.arange(leaves.size)
    leaf_down = np.where(leaf_up >= 0, leaf_up + 1, -1)
    up2 = np.flatnonzero(t.link_tier == 2)
    of_link[2 * up2] = leaf_up[t.link_src[up2]]
    of_link[2 * up2 + 1] = leaf_down[t.link_src[up2]]
    n = 2 * leaves.size
    planes, pods = t.plan.planes, t.plan.pods
    pod_up = np.empty((0, 0), dtype=np.int64)
    if t.plan.tiers == 3:
        pod_up = n + 2 * np.arange(planes * pods, dtype=np.int64).reshape(planes, pods)
        up3 = np.flatnonzero(t.link_tier == 3)
        spine = t.link_src[up3]
        trunk = pod_up[t.node_plane[spine], t.node_pod[spine]]
        of_link[2 * up3] = trunk
        of_link[2 * up3 + 1] = trunk + 1
        n += 2 * planes * pods
    return Trunks(of_link, n, leaf_up, leaf_down, pod_up, pod_up + 1)


@dataclass(frozen=True)
class _Packets:
    """What every packet transport shares: framing (``mss``, ``hdr``), a handshake of
    ``handshake_rtts`` base round trips before the first byte (0: none of these transports
    has one; RoCE's queue pairs are connected before the job starts, MRC and NDP carry data in
    the first packet), and ``notify_us``, the time from a flow's last byte to the start of a
    flow waiting for it (0: as the packet engine and htsim's triggers, the next step starts
    when the last byte lands)."""

    mss: int = MSS_BYTES
    hdr: int = HDR_BYTES
    handshake_rtts: float = 0.0
    notify_us: float = 0.0

    def __post_init__(self) -> None:
        if self.mss <= 0 or self.hdr < 0:
            raise SpecError(
                [Problem("--option", f"mss > 0 and hdr >= 0, got {self.mss}, {self.hdr}")]
            )
        if self.handshake_rtts < 0 or self.notify_us < 0:
            raise SpecError([Problem("--option", "handshake_rtts and notify_us are >= 0")])

    def framing(self) -> tuple[int, int] | None:
        return self.mss, self.hdr

    def startup_ps(self, wire: F64, rtt_ps: I64, rate_bps: F64) -> I64:
        out: I64 = np.round(self.handshake_rtts * rtt_ps).astype(np.int64)
        return out

    def window_bytes(self, rtt_ps: I64, rate_bps: F64) -> F64 | None:
        return None

    def notify_ps(self) -> int:
        return round(self.notify_us * PS_PER_US)

    def control_bytes(self) -> float:
        return float(self.hdr)  # one header-sized ACK per data packet


@dataclass(frozen=True)
class RoceEcmp(_Packets):
    name: ClassVar[str] = "roce-ecmp"
    qps: int | None = None  # default: one per NIC port, as NCCL opens a channel per NIC
    reroute_s: float = 1.0
    ack_every: int = 4  # the packet engine's ACK coalescing
    dcqcn: bool = True  # DCQCN rate control; off: line rate until PFC pauses (htsim's RoCE)
    pfc_hol: bool | None = None  # the lossless model; None: on exactly when dcqcn is off

    @property
    def lossless(self) -> bool:
        """The engine's lossless model (``FlowSet.lossless``): input-port sharing and
        head-of-line blocking of PFC without congestion control. It follows ``dcqcn``
        unless ``pfc_hol`` is given (docs/sim.md, "Lossless fabric")."""
        return not self.dcqcn if self.pfc_hol is None else bool(self.pfc_hol)

    def control_bytes(self) -> float:
        return self.hdr / max(1, self.ack_every)

    @property
    def mode(self) -> str:
        return "split"

    def units(
        self, router: Router, src: I64, dst: I64, *, alive: B, seed: int, flows: I64 | None = None
    ) -> UnitSet:
        ids = np.arange(src.size, dtype=np.int64) if flows is None else flows
        qps = self.qps or _ports(router)
        f = np.repeat(ids, qps)
        qp = np.tile(np.arange(qps, dtype=np.int64), ids.size)
        s, d = src[f], dst[f]
        port = (f + qp) % _ports(router)
        # the 5-tuple hash of the queue pair, 32 bits as the packet engine's: the same path
        # for the same seed in both engines
        ev = connection_hash(s, d, qp, seed) & 0xFFFFFFFF
        paths = route(router, s, d, port, ev, seed=seed, alive=alive)
        none = (paths < 0).all(axis=1)
        if none.any():  # no live path: stay on the hashed path of the healthy fabric and stall
            paths[none] = route(router, s[none], d[none], port[none], ev[none], seed=seed)
        return _units(f, paths, np.full(f.size, 1.0 / qps))

    def reroute_delay_s(self) -> float:
        return self.reroute_s

    def wire_factor(self) -> float:
        return 1.0

    def trunks(self, router: Router) -> Trunks | None:
        return None


@dataclass(frozen=True)
class MrcSpray(_Packets):
    name: ClassVar[str] = "mrc-spray"
    evs: int = 128
    detect_s: float = 20e-6
    balance: bool = False
    cwnd_bdp: float = 1.25  # the packet engine's initial window, in base-RTT BDPs
    avoid: float = 0.2  # ECN-driven path avoidance of the fixed split (docs/sim.md)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.avoid < 1.0:
            raise SpecError([Problem("--option", f"avoid is in [0, 1), got {self.avoid}")])

    def window_bytes(self, rtt_ps: I64, rate_bps: F64) -> F64 | None:
        bdp: F64 = rate_bps * rtt_ps / 8 / PS_PER_S
        return np.maximum(float(self.mss), self.cwnd_bdp * bdp)

    @property
    def mode(self) -> str:
        return "pooled" if self.balance else "coupled"

    def units(
        self, router: Router, src: I64, dst: I64, *, alive: B, seed: int, flows: I64 | None = None
    ) -> UnitSet:
        """Routed in chunks of about :data:`ROUTE_CHUNK_EVS` EVs, each merged (fixed split)
        before the next: merging is per flow, so the units are the same, and the peak memory
        is one chunk's EVs, not every connection's (3.7 million EVs on the k=16 chain)."""
        ids = np.arange(src.size, dtype=np.int64) if flows is None else flows
        step = max(1, ROUTE_CHUNK_EVS // self.evs)
        parts = [
            self._chunk(router, src, dst, ids[i : i + step], alive, seed)
            for i in range(0, max(ids.size, 1), step)
        ]
        f = np.concatenate([x[0] for x in parts])
        paths = np.concatenate([x[1] for x in parts])
        share = np.concatenate([x[2] for x in parts])
        return _units(f, paths, share)

    def _chunk(
        self, router: Router, src: I64, dst: I64, ids: I64, alive: B, seed: int
    ) -> tuple[I64, I64, F64]:
        f = np.repeat(ids, self.evs)
        k = np.tile(np.arange(self.evs, dtype=np.int64), ids.size)
        s, d = src[f], dst[f]
        port = k % _ports(router)
        paths = self.ev_paths(router, s, d, port, k, f, seed)
        # EVs whose route crosses a dead link retire
        if alive.all():  # a healthy fabric: every EV has its route
            share = np.full(f.size, 1.0 / self.evs)
        else:
            keep = _keep_or_stall(f, ids, ~_crosses_dead(paths, alive), k == 0)
            share = 1.0 / np.bincount(f[keep], minlength=int(ids.max(initial=-1)) + 1)[f]
            f, paths, share = f[keep], paths[keep], share[keep]
        if not self.balance:  # one entity per flow: EVs on the same path are one unit
            f, paths, share = _merge_same_paths(f, paths, share)
        return f, paths, share

    def ev_paths(self, router: Router, s: I64, d: I64, port: I64, k: I64, f: I64, seed: int) -> I64:
        """The static source route (``-1``-padded directed links) of EV ``k`` of connection
        ``f`` (``s`` to ``d`` on host port ``port``), chosen on the healthy fabric: each
        connection draws its own EVs (random 32-bit values per queue pair), so different
        connections' EVs hash independently. A subclass may pin them otherwise (the SRv6
        programs of :mod:`clusterloom.srv6.simulate`)."""
        ev = connection_hash(s, d, f, seed) ^ splitmix64(k.astype(np.uint64)).astype(np.int64)
        paths: I64 = route(router, s, d, port, ev & 0xFFFFFFFF, seed=seed)
        return paths

    def reroute_delay_s(self) -> float:
        return self.detect_s

    def wire_factor(self) -> float:
        return 1.0

    def trunks(self, router: Router) -> Trunks | None:
        return None


@dataclass(frozen=True)
class ReceiverDriven(MrcSpray):
    name: ClassVar[str] = "receiver-driven"
    evs: int = 64  # the packet engine's
    loss: float = 0.0
    avoid: float = 0.0  # NDP's pulls, not ECN, steer it: the plain fixed split
    iw_bdp: float = 1.0  # the speculative first window, in base-RTT BDPs (packet engine's)

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0.0 <= self.loss < 1.0:
            raise SpecError([Problem("--loss", f"a loss rate is in [0, 1), got {self.loss}")])

    def window_bytes(self, rtt_ps: I64, rate_bps: F64) -> F64 | None:
        return None  # pulled at the receiver's rate after the first window

    def control_bytes(self) -> float:
        return 2.0 * self.hdr  # an ACK and a PULL per data packet

    def startup_ps(self, wire: F64, rtt_ps: I64, rate_bps: F64) -> I64:
        """The first window (``iw_bdp`` BDPs, whole packets, at least one) goes at line rate;
        the first pull comes back one base RTT after the first packet left, so a flow longer
        than its first window waits ``rtt - window time`` once when the window is short."""
        bdp = rate_bps * rtt_ps / 8 / PS_PER_S
        pkts = np.maximum(1, np.floor(self.iw_bdp * bdp / self.mss))
        window_ps = pkts * (self.mss + self.hdr) * 8 * PS_PER_S / rate_bps
        wait = np.where(
            wire > pkts * (self.mss + self.hdr), np.maximum(0.0, rtt_ps - window_ps), 0.0
        )
        out: I64 = super().startup_ps(wire, rtt_ps, rate_bps) + np.round(wait).astype(np.int64)
        return out

    def wire_factor(self) -> float:
        return 1.0 / (1.0 - self.loss)


@dataclass(frozen=True)
class Ideal:
    name: ClassVar[str] = "ideal"

    @property
    def mode(self) -> str:
        return "pooled"

    def units(
        self, router: Router, src: I64, dst: I64, *, alive: B, seed: int, flows: I64 | None = None
    ) -> UnitSet:
        ids = np.arange(src.size, dtype=np.int64) if flows is None else flows
        t = router.topology
        ports = _ports(router)
        f = np.repeat(ids, ports)
        port = np.tile(np.arange(ports, dtype=np.int64), ids.size)
        a = router.host_link[src[f], port]
        b = router.host_link[dst[f], port]
        paths = np.full((f.size, 6), -1, dtype=np.int64)
        paths[:, 0] = 2 * a
        paths[:, 5] = 2 * b + 1
        if t.plan.tiers >= 2:
            trunks = self.trunks(router)
            base = router.n_directed
            la, lb = t.link_dst[a], t.link_dst[b]
            cross = la != lb
            paths[cross, 1] = base + trunks.leaf_up[la[cross]]
            paths[cross, 4] = base + trunks.leaf_down[lb[cross]]
            if t.plan.tiers == 3:
                plane = t.node_plane[la]
                pa, pb = t.node_pod[la], t.node_pod[lb]
                far = cross & (pa != pb)
                paths[far, 2] = base + trunks.pod_up[plane[far], pa[far]]
                paths[far, 3] = base + trunks.pod_down[plane[far], pb[far]]
        keep = _keep_or_stall(f, ids, alive[a] & alive[b], port == 0)
        share = 1.0 / np.bincount(f[keep], minlength=int(ids.max(initial=-1)) + 1)[f]
        return _units(f[keep], paths[keep], share[keep])

    def reroute_delay_s(self) -> float:
        return 0.0

    def wire_factor(self) -> float:
        return 1.0

    def framing(self) -> tuple[int, int] | None:
        return None

    def startup_ps(self, wire: F64, rtt_ps: I64, rate_bps: F64) -> I64:
        return np.zeros(wire.shape[0], dtype=np.int64)

    def window_bytes(self, rtt_ps: I64, rate_bps: F64) -> F64 | None:
        return None

    def notify_ps(self) -> int:
        return 0

    def control_bytes(self) -> float:
        return 0.0

    def trunks(self, router: Router) -> Trunks:
        return build_trunks(router)


TRANSPORTS: dict[str, type] = {t.name: t for t in (RoceEcmp, MrcSpray, ReceiverDriven, Ideal)}
_METHODS = ("units", "reroute_delay_s", "wire_factor", "trunks")


def transport_type(name: str) -> type:
    """The flow model named ``name``: a built-in, or an installed plug-in's
    (:mod:`clusterloom.sim.registry`), checked to be a dataclass with the methods of
    :class:`Transport`."""
    if name in TRANSPORTS:
        return TRANSPORTS[name]
    impl = plugin_implementation(name, "flow")
    if impl is None:
        known = ", ".join(implemented_by("flow"))
        raise SpecError([Problem("--transport", f"unknown transport '{name}'; known: {known}")])
    missing = [m for m in ("mode", *_METHODS) if not hasattr(impl, m)]
    if not dataclasses.is_dataclass(impl) or missing:
        what = f"lacks {', '.join(missing)}" if missing else "is not a dataclass"
        raise PluginError([Problem(REGISTRY[name].origin, f"its flow model {what}")])
    return impl


def option_kinds(name: str) -> dict[str, str]:
    """Each option of a (known) transport and its kind: ``bool`` (a switch), ``int`` (a whole
    number) or ``float``."""
    kinds = {}
    for f in dataclasses.fields(transport_type(name)):
        types = {t.strip() for t in str(f.type).split("|")}
        kinds[f.name] = "bool" if "bool" in types else "int" if "int" in types else "float"
    return kinds


def transport(name: str, **options: float) -> Transport:
    """A transport by name with its options (e.g. ``qps=4``, ``evs=256``, ``loss=0.01``,
    ``balance=0``); numbers are converted to the option's kind (whole numbers, switches)."""
    cls = transport_type(name)
    kinds = option_kinds(name)
    convert = {"bool": bool, "int": int, "float": float}
    typed = {k: convert[kinds.get(k, "float")](v) for k, v in options.items()}
    made: Transport = cls(**typed)
    return made
