"""The packet-level engine: discrete events in integer picoseconds over a ``Topology``.

Model (every assumption here is also listed in ``docs/packet.md``):

- **Time and order.** Events sit in one binary heap keyed by ``(time_ps, seq)``; ``seq`` is a
  counter incremented on every push, so two events at the same picosecond run in the order they
  were scheduled. The heap and the data plane are compiled (:mod:`._core`); Python's calls are
  applied in the order they were made, so the order is that of a plain loop. ECN marking draws
  from a counter-based generator (splitmix64 of a key from the seed and a draw counter), the
  transports hash their entropy values from the seed: the same inputs give the same run, event
  for event, with or without a tracer.
- **Links.** Every physical link of the topology is two directed links (``2i`` up, ``2i+1``
  down, as in :mod:`clusterloom.sim.paths`) with the link's rate and propagation delay. A
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
  :mod:`clusterloom.sim.paths`), so the switches' choices for one (source, destination,
  port, EV) are a pure function of the routing view; the engine computes that path once per key
  (vectorized, :meth:`PacketSim.prefetch`) and memoizes it. The routing view changes
  ``reroute_ps`` after a hard failure or repair (detection plus reconvergence; default 1 s as in
  the flow-level model); source routes never change. A run may be given its source routes
  (:class:`SourceRoutes`, e.g. the SRv6 path programs of :mod:`clusterloom.srv6.simulate`):
  then the EV of a source-routed packet is an index into that table, not a hash.
- **Failures** (the syntax of :mod:`clusterloom.sim.flow.run`): a hard failure takes both
  directions of the links down at its start, drops what they hold and what is on the wire;
  packets routed onto a dead link are dropped. A gray failure keeps ``fraction`` of the rate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from itertools import chain
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from clusterloom.errors import ClusterloomError
from clusterloom.fabric.topology import Topology
from clusterloom.sim._aot import Kernel
from clusterloom.sim.failures import Failure
from clusterloom.sim.packet import _core as core
from clusterloom.sim.packet._core import (  # bound here: read on every event
    C_CTRL,
    C_ECN,
    C_HEADER,
    C_KMAX,
    C_KMIN,
    C_NHOSTS,
    C_PFC,
    C_PORTS,
    C_RNGKEY,
    C_TRACE,
    C_TRIMMING,
    C_XOFF,
    C_XON,
    CMD_COLS,
    CMD_DOWN,
    CMD_PUSH,
    CMD_SEND,
    CMD_UP,
    EV_ACTION,
    EV_ARRIVE,
    EV_DELIVER,
    EV_DELIVER_MADE,
    EV_MRC_PUMP,
    EV_PACE,
    EV_SACK,
    EV_TIMER,
    L_ALIVE,
    L_LIMIT,
    L_MAXQ,
    L_PROP,
    L_RATE,
    L_SW,
    L_TO,
    P_COLS,
    P_ECN,
    P_FREE,
    P_PRIO,
    P_SIZE,
    P_TAG,
    P_TRIM,
    R_COLS,
    R_DST,
    R_FIN,
    R_SDONE,
    R_SRC,
    S_COLS,
    S_DELIV,
    S_DROPS,
    S_EVENTS,
    S_HN,
    S_MARKS,
    S_NFREE,
    S_NOROUTE,
    S_NOW,
    S_PAUSES,
    S_QSYNC,
    S_RUN_N,
    S_TN,
    S_TRIMS,
    ST_GROW,
    ST_PYTHON,
    ST_SAMPLE,
    ST_STOP_CHECK,
    ST_SYNC,
    TAG_CUM_MASK,
    TAG_FLOW_MASK,
    TAG_FLOW_SHIFT,
    TAG_MADE,
    TAG_QUIET,
    TAG_RX,
    TR_DROP,
    TR_QUIET,
    TR_SENT,
)
from clusterloom.sim.paths import Router, RouteView, build_router, route, route_view
from clusterloom.units import PS_PER_S

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
    "SourceRoutes",
]

# packet kinds
DATA, ACK, NACK, PULL, PROBE, PROBE_ACK, CNP = range(7)
KIND_NAMES = ("data", "ack", "nack", "pull", "probe", "probe-ack", "cnp")


class PacketSimError(ClusterloomError, ValueError):
    """A scenario the packet engine cannot run (bad configuration, a host out of range...)."""


@dataclass(frozen=True)
class PacketConfig:
    """Switch and packet parameters of a run (module docstring: the model).

    ``buffer_bytes``, ``ecn_kmin``, ``ecn_kmax``, ``pfc`` and ``trimming`` default to None: the
    transport's choice (:func:`clusterloom.sim.packet.options.config_for`: PFC for ``roce-ecmp``,
    trimming and 12-packet queues for ``receiver-driven``), else the engine's (512 KiB, marking
    from 64 to 256 KiB or half to all of a smaller buffer, no PFC, no trimming). A field given
    is kept, so ``PacketConfig(mtu=4000)`` changes the MTU and nothing else."""

    mtu: int = 4096  # payload bytes of a full data packet
    header: int = 64  # bytes of every header (a control packet, a trimmed packet)
    buffer_bytes: int | None = None  # data FIFO per switch output port (None: 512 KiB)
    control_buffer_bytes: int = 64 * 1024
    ecn_kmin: int | None = None  # None: min(64 KiB, buffer / 2)
    ecn_kmax: int | None = None  # None: min(256 KiB, buffer)
    ecn: bool = True
    trimming: bool | None = None
    pfc: bool | None = None
    pfc_xoff: int = 256 * 1024
    pfc_xon: int = 128 * 1024
    reroute_ps: int = PS_PER_S  # routing reconvergence after a hard failure or a repair
    max_time_ps: int = 10 * PS_PER_S

    @property
    def packet_bytes(self) -> int:
        """Bytes on the wire of a full data packet (a queue size "in packets" counts these)."""
        return self.mtu + self.header

    def resolved(self) -> PacketConfig:
        """Every None field at the engine's default (what :class:`PacketSim` runs)."""
        buf = DEFAULT_BUFFER_BYTES if self.buffer_bytes is None else self.buffer_bytes
        return replace(
            self,
            buffer_bytes=buf,
            ecn_kmin=min(64 * 1024, buf // 2) if self.ecn_kmin is None else self.ecn_kmin,
            ecn_kmax=min(256 * 1024, buf) if self.ecn_kmax is None else self.ecn_kmax,
            pfc=bool(self.pfc),
            trimming=bool(self.trimming),
        )

    def problems(self) -> list[str]:
        cfg = self.resolved()
        assert cfg.buffer_bytes is not None and cfg.ecn_kmin is not None
        assert cfg.ecn_kmax is not None
        out = []
        if cfg.mtu <= 0 or cfg.header <= 0:
            out.append(f"mtu and header must be positive, got {cfg.mtu} and {cfg.header}")
        if cfg.mtu + cfg.header > 1 << 20:  # the compiled loop computes bits * 10^12 in int64
            out.append(f"mtu plus header is at most 1 MiB, got {cfg.mtu + cfg.header}")
        if cfg.buffer_bytes < cfg.mtu + cfg.header:
            out.append(f"buffer_bytes {cfg.buffer_bytes} holds not even one packet")
        if cfg.control_buffer_bytes < cfg.header:
            out.append(f"control_buffer_bytes {cfg.control_buffer_bytes} holds not one header")
        if not 0 <= cfg.ecn_kmin <= cfg.ecn_kmax:
            out.append(f"need 0 <= ecn_kmin <= ecn_kmax, got {cfg.ecn_kmin}, {cfg.ecn_kmax}")
        if cfg.pfc and not 0 < cfg.pfc_xon <= cfg.pfc_xoff:
            out.append(f"need 0 < pfc_xon <= pfc_xoff, got {cfg.pfc_xon}, {cfg.pfc_xoff}")
        if cfg.pfc and cfg.trimming:
            out.append("pfc (lossless) and trimming exclude each other")
        return out


#: keys computed per vectorized call of :meth:`PacketSim.prefetch`
PREFETCH_CHUNK = 16_384

#: the data buffer of a switch port when neither the run nor the transport sets one
DEFAULT_BUFFER_BYTES = 512 * 1024


class Packet:
    """One packet. ``size`` is bytes on the wire (header plus payload); ``payload`` is the data
    bytes it carries (kept on a trimmed packet so the receiver can NACK it). Transport fields
    (``cum``, ``sack``, ``echo``, ``hint``, ``path``, ``pseq``, ``msg``) are free for the
    transport's headers; ``key`` and ``job`` identify the connection's security context.

    ``quiet`` (not a header field): the connection handles this packet's delivery without
    sending or scheduling anything, only updating its own state (``receiver-driven``'s ACKs),
    so the compiled loop need not stop for it: it logs the delivery and goes on, and Python
    hands the packet over, at its time, before the next event that needs Python (:mod:`._core`).
    The same run with fewer returns to Python; a quiet packet whose handler sends is an error."""

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
        "quiet",
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
        self.quiet = False
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


class SourceRoutes(Protocol):
    """Explicit source routes of a run (a NIC's table of path programs): for each key row
    (src, dst, port, ev) of ``keys`` (an int64 array, n x 4), the directed links of its route
    from the source host to the destination host, or None (no route). ``evs``: the table's EVs
    per connection; a key's ``ev`` is an index below it (a spraying transport uses EVs
    ``0..evs-1``). A pure function of the key: the engine caches and may recompute it."""

    evs: int

    def __call__(self, keys: NDArray[np.int64]) -> list[tuple[int, ...] | None]: ...


class Endpoint(Protocol):
    """What the engine calls on a transport's connection (both ends in one object)."""

    def on_packet(self, pkt: Packet, now: int) -> None:
        """A packet of this connection arrived at one of its hosts."""
        ...

    def on_timer(self, token: int, now: int) -> None:
        """A timer this connection set with :meth:`PacketSim.timer` fired."""
        ...


class _Absorb:
    """The endpoint of a connection id not (or no longer) in use: packets and timers vanish."""

    def on_packet(self, pkt: Packet, now: int) -> None:
        return

    def on_timer(self, token: int, now: int) -> None:
        return


ABSORB = _Absorb()


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


class PacketSim:
    """One run of the packet engine over ``topology`` (module docstring for the model).

    The data plane (queues, wires, the event heap) lives in the integer arrays of
    :mod:`._core` and runs compiled; this object holds what stays in Python: the packets' header
    objects, the connections, the paths and the actions. Calls that change the data plane
    (:meth:`send`, :meth:`timer`, :meth:`at`, failures) are queued and applied, in order, when
    the compiled loop next runs (or when a reader such as :attr:`stats` needs them)."""

    def __init__(
        self,
        topology: Topology,
        config: PacketConfig | None = None,
        *,
        seed: int = 0,
        router: Router | None = None,
        tracer: Tracer | None = None,
        source_routes: SourceRoutes | None = None,
    ) -> None:
        bad = (config or PacketConfig()).problems()
        if bad:
            raise PacketSimError("; ".join(bad))
        self.cfg = cfg = (config or PacketConfig()).resolved()
        assert cfg.buffer_bytes is not None and cfg.ecn_kmin is not None
        self.topology = t = topology
        self.router = router or build_router(t)
        self.seed = seed
        self.tracer = tracer
        #: the run's explicit source routes (None: source routes are ECMP hashing of the EV on
        #: the healthy fabric)
        self.source_routes = source_routes
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
        rate = np.repeat(t.link_capacity_bps, 2).astype(np.int64)
        prop = np.repeat(t.link_latency_ps, 2).astype(np.int64)
        self.base_rate: list[int] = rate.tolist()
        self.prop: list[int] = prop.tolist()
        switch = frm >= self.n_hosts
        self.switch_port: list[bool] = switch.tolist()
        links = core.new_links(n)
        links[:, L_TO] = to
        links[:, L_RATE] = rate
        links[:, L_PROP] = prop
        links[:, L_SW] = switch
        links[:, L_LIMIT] = np.where(switch, cfg.buffer_bytes, 1 << 62)
        self._links = links
        self._pkts = np.zeros((0, P_COLS), dtype=np.int64)
        self._objs: list[Packet | None] = []
        self._heap = np.zeros((1024, 5), dtype=np.int64)
        self._s = np.zeros(S_COLS, dtype=np.int64)
        c = self._s
        c[C_NHOSTS] = self.n_hosts
        c[C_HEADER] = cfg.header
        c[C_CTRL] = cfg.control_buffer_bytes
        c[C_KMIN], c[C_KMAX], c[C_ECN] = cfg.ecn_kmin, cfg.ecn_kmax or 0, cfg.ecn
        c[C_TRIMMING], c[C_PFC] = bool(cfg.trimming), bool(cfg.pfc)
        c[C_XOFF], c[C_XON] = cfg.pfc_xoff, cfg.pfc_xon
        c[C_RNGKEY] = rng_key(seed)
        c[C_TRACE] = tracer is not None
        c[core.S_SAMPLE] = core.NEVER  # no per-port counting unless count_ports() asks
        #: the per-port counters' samples: (time, counters [links, counters]) (count_ports)
        self._samples: list[tuple[int, NDArray[np.int64]]] = []
        self._sample_ps = 0
        #: what the loop logs for Python: drops and trims (traced), quiet deliveries
        self._trace = np.zeros((4096, 4), dtype=np.int64)
        self._rl = np.zeros(1024, dtype=np.int64)  # the links of every route, back to back
        self._rl_used = 0
        #: each route once: its links (the one tuple every key of it shares) and offset in _rl
        self._route_at: dict[tuple[int, ...], tuple[tuple[int, ...], int]] = {}
        #: the same entries by offset (and no route's at -1): :meth:`entry_at`
        self._entry_at: dict[int, tuple[tuple[int, ...] | None, int]] = {-1: (None, -1)}
        self._link_ints: list[int] = list(range(n))  # the routes' links share these objects
        #: commands for the data plane (CMD_COLS integers each), applied at the next step
        self._cm = np.zeros((256, CMD_COLS), dtype=np.int64)
        self._grown = 0  # counts reallocations of the arrays above (the run loop keeps them)
        self._cmv = self._cm.reshape(-1).data  # writes from Python without numpy calls
        self._n_cm = 0
        self._downs = 0
        self._smv = self._s.data
        #: per endpoint id (connections and pacers), state the compiled loop shares with
        #: them (``R_*`` of :mod:`._core`: receiver-driven's pulls); ``ep_state`` is its flat
        #: writable view, replaced when it grows (read it through the engine each time)
        self._r = np.zeros((1024, R_COLS), dtype=np.int64)
        self.ep_state = self._r.reshape(-1).data
        #: route offsets into _rl of pull paths, by a connection's R_ROFF (-1: no route), and
        #: by connection id the keys they were made for and where (recomputed when the
        #: routing view changes, until the connection is done: drop_pull_routes)
        self._rr = np.zeros(1024, dtype=np.int64)
        self._rr_used = 0
        #: the keys as an n x 4 array (32 bytes a key, not a tuple of four ints' 100 or so)
        self._rr_keys: dict[int, tuple[int, NDArray[np.int64]]] = {}
        #: room in _rr of connections done with it (drop_pull_routes), by size: reused by the
        #: next connection that needs that many (a chained collective makes 14,336 of them,
        #: 1,024 at a time: 512 routes each for receiver-driven, 59 MB never reused before)
        #: (route_slots' blocks given back too)
        self._rr_free: dict[int, list[int]] = {}
        #: per packet of a connection that keeps its flags here (receiver-driven: received,
        #: acknowledged, outstanding), read and written by the compiled loop and the
        #: connection's Python side (views, :meth:`packet_flags`); never reused in a run
        self._b = np.zeros(4096, dtype=np.uint8)
        self._b_used = 0
        #: the connections holding views of _b, by id, with where their flags start and how
        #: many bytes: their views are remade when it grows
        self._b_views: dict[int, tuple[int, int, Callable[[memoryview], None]]] = {}
        self._actions: list[tuple[Callable[..., None], Any] | None] = []
        self._injected: list[Packet | None] = []
        #: paths by (src, dst, port, ev): their links (None: no path) and offset in _rl, ECMP
        #: under the current routing view and static source routes
        self._ecmp: dict[tuple[int, int, int, int], tuple[tuple[int, ...] | None, int]] = {}
        self._static: dict[tuple[int, int, int, int], tuple[tuple[int, ...] | None, int]] = {}
        self.live_view = np.ones(t.n_links, dtype=bool)
        self._views: dict[bool, RouteView] = {}  # the routing views of the paths, by static
        self.conns: list[Endpoint] = []
        self.impair: Impair | None = None
        #: state shared by the connections of one host (receiver pacers, rate hints), by name
        self.shared: dict[str, dict[int, Any]] = {}
        #: read-only values the run's connections share (``base.shared``: segmentations,
        #: option dicts)
        self.shared_values: dict[Any, Any] = {}
        self._no_route = 0
        self._delivered = 0
        self._header = cfg.header
        self._plain = type(self).send is PacketSim.send
        self.now = 0
        self._grow_pool(4096)

    # -- state -------------------------------------------------------------------------------

    @property
    def events(self) -> int:
        """Events run so far."""
        return int(self._s[S_EVENTS])

    @property
    def pending_events(self) -> int:
        """Events scheduled and not yet run (after a run: nonzero when it stopped at its time
        limit or on ``stop()``, not for lack of events)."""
        return int(self._s[S_HN]) + self._n_cm

    @property
    def stats(self) -> NetStats:
        """The network's counters so far (a snapshot)."""
        self._flush()
        s = self._s
        return NetStats(
            drops=int(s[S_DROPS]),
            trims=int(s[S_TRIMS]),
            marks=int(s[S_MARKS]),
            no_route=self._no_route + int(s[S_NOROUTE]),
            pauses=int(s[S_PAUSES]),
            data_bytes_delivered=self._delivered + int(s[S_DELIV]),
        )

    @property
    def delivered_bytes(self) -> int:
        """Data payload bytes delivered to receivers so far (duplicates included); cheap to
        read while the run goes on (``stats`` first applies the queued commands)."""
        return self._delivered + int(self._s[S_DELIV])

    @property
    def max_qbytes(self) -> NDArray[np.int64]:
        """The largest data backlog of each directed link's port so far (a writable view)."""
        self._flush()
        view: NDArray[np.int64] = self._links[:, L_MAXQ]
        return view

    @property
    def alive(self) -> list[bool]:
        self._flush()
        return [bool(x) for x in self._links[:, L_ALIVE].tolist()]

    # -- scheduling --------------------------------------------------------------------------

    def timer(self, at_ps: int, conn: int, token: int) -> None:
        """Call ``conns[conn].on_timer(token)`` at ``at_ps`` (never earlier than now)."""
        self._command(CMD_PUSH, max(at_ps, self.now), EV_TIMER, conn, token)

    def at(self, at_ps: int, action: Callable[[], None]) -> None:
        """Run ``action()`` at ``at_ps``."""
        self._call_at(at_ps, action, None)

    def _call_at(self, at_ps: int, fn: Callable[..., None], arg: Any) -> None:
        self._actions.append((fn, arg))
        self._command(CMD_PUSH, max(at_ps, self.now), EV_ACTION, len(self._actions) - 1)

    def add(self, conn: Endpoint) -> int:
        """Register a connection; its id is the ``flow`` its packets carry."""
        self._ids_left(1)
        self.conns.append(conn)
        self._endpoint_rows()
        return len(self.conns) - 1

    def _ids_left(self, n: int) -> None:
        if len(self.conns) + n > TAG_FLOW_MASK + 1:  # the compiled loop's tags hold 28 bits
            raise PacketSimError(f"more than {TAG_FLOW_MASK + 1} connections in one run")

    def reserve(self, n: int) -> int:
        """Reserve ``n`` connection ids (for connections made later); returns the first. Until
        made, an id absorbs timers (no packet can carry it)."""
        self._ids_left(n)
        first = len(self.conns)
        self.conns.extend([ABSORB] * n)
        self._endpoint_rows()
        return first

    def _endpoint_rows(self, least: int = 0) -> None:
        """``ep_state`` rows for every endpoint id (and id ``least - 1``)."""
        need = max(len(self.conns), least)
        if need > len(self._r):
            r = np.zeros((max(2 * len(self._r), need), R_COLS), dtype=np.int64)
            r[: len(self._r)] = self._r
            self._r = r
            self.ep_state = r.reshape(-1).data
            self._grown += 1

    def endpoint_row(self, i: int) -> int:
        """Where endpoint id ``i``'s state starts in :attr:`ep_state` (rows made as needed)."""
        self._endpoint_rows(i + 1)
        return i * R_COLS

    def pull_routes(self, conn: int, keys: list[tuple[int, int, int, int]]) -> int:
        """The ECMP routes of connection ``conn``'s pulls, ``keys`` (src, dst, port, ev),
        stored for the compiled loop (the offsets of their links, -1 for none) and kept up to
        date as the routing view changes while it may pull; returns where they start. The
        room may be that of a connection done with its own (:meth:`drop_pull_routes`)."""
        n = len(keys)
        free = self._rr_free.get(n)
        if free:
            at = free.pop()
            need = at + n
        else:
            at = self._rr_used
            need = at + n
            if need > len(self._rr):
                rr = np.zeros(max(2 * len(self._rr), need), dtype=np.int64)
                rr[:at] = self._rr[:at]
                self._rr = rr
                self._grown += 1
            self._rr_used = need
        self._rr[at:need] = self._route_offsets(keys)
        self._rr_keys[conn] = (at, np.array(keys, dtype=np.int64).reshape(-1, 4))
        return at

    def packet_flags(
        self, conn: int, n: int, bind: Callable[[memoryview], None], regions: int = 3
    ) -> int:
        """Room for ``n`` packets' flag bytes of connection ``conn`` (``regions`` of ``n``
        bytes each, zero: received, acknowledged, outstanding) in the array the compiled loop
        shares; returns where they start. ``bind(view)`` is called now, and again each time
        the array grows, with a writable view of those bytes; :meth:`release_flags` stops
        that."""
        at = self._b_used
        need = at + regions * n
        if need > len(self._b):
            b = np.zeros(max(2 * len(self._b), need), dtype=np.uint8)
            b[:at] = self._b[:at]
            self._b = b
            self._grown += 1
            whole = b.data
            for start, size, rebind in self._b_views.values():
                rebind(whole[start : start + size])
        self._b_used = need
        self._b_views[conn] = (at, need - at, bind)
        bind(self._b.data[at:need])
        return at

    def release_flags(self, conn: int) -> None:
        """Connection ``conn`` no longer needs its flags' views kept up to date."""
        self._b_views.pop(conn, None)

    def route_slots(self, n: int) -> int:
        """``n`` entries of the compiled loop's route offsets (``RR``), at -1 (no route), for a
        caller that fills them (:meth:`set_route_slots`) with routes that never change (a
        connection's held source routes) and gives them back (:meth:`free_route_slots`);
        returns where they start. Freed entries are reused by the next caller of that size."""
        free = self._rr_free.get(n)
        if free:
            at = free.pop()
        else:
            at = self._rr_used
            need = at + n
            if need > len(self._rr):
                rr = np.zeros(max(2 * len(self._rr), need), dtype=np.int64)
                rr[:at] = self._rr[:at]
                self._rr = rr
                self._grown += 1
            self._rr_used = need
        self._rr[at : at + n] = -1
        return at

    @property
    def ep_array(self) -> NDArray[np.int64]:
        """The endpoint state the compiled loop shares (:attr:`ep_state` as its array; it
        is replaced when it grows: read it each time)."""
        return self._r

    @property
    def rr_array(self) -> NDArray[np.int64]:
        """The loop's route offsets and the blocks of :meth:`route_slots` (replaced when it
        grows: read it each time)."""
        return self._rr

    def set_route_slots(self, at: int, offsets: Sequence[int]) -> None:
        """Route offsets (entries' second fields) into the entries from ``at`` (route_slots)."""
        self._rr[at : at + len(offsets)] = offsets

    def free_route_slots(self, at: int, n: int) -> None:
        """Give back ``n`` entries from ``at`` (:meth:`route_slots`): the loop reads them no
        more (the caller made sure)."""
        self._rr_free.setdefault(n, []).append(at)

    def drop_pull_routes(self, conn: int) -> None:
        """Connection ``conn`` is done with its pull routes: they are no longer kept up to
        date, and their room goes to the next connection that needs as many. The caller
        guarantees the loop reads them no more: both ends are done (``R_FIN`` and
        ``R_SDONE``: the pacer skips it) and ``R_CRX`` is cleared (its late packets go to
        Python), as the transports' ``compact`` does."""
        held = self._rr_keys.pop(conn, None)
        if held is not None:
            at, keys = held
            self._rr_free.setdefault(len(keys), []).append(at)

    def _route_offsets(self, keys: list[tuple[int, int, int, int]]) -> list[int]:
        table = self._ecmp
        missing = [k for k in keys if k not in table]
        if missing:
            self._compute(missing, False)
        return [table[k][1] for k in keys]

    def push_pace(self, at_ps: int, pacer: int) -> None:
        """The compiled pacer ``pacer``'s next turn at ``at_ps`` (never earlier than now)."""
        self._command(CMD_PUSH, max(at_ps, self.now), EV_PACE, pacer)

    def forget(self, keys: Iterable[tuple[int, int, int, int, bool]]) -> None:
        """Drop the cached paths of (src, dst, port, ev, source_route) keys (a connection that
        is done); a path asked for again is computed again, the same."""
        ecmp, static = self._ecmp, self._static
        for key in keys:
            (static if key[4] else ecmp).pop(key[:4], None)

    # -- paths -------------------------------------------------------------------------------

    def _compute(
        self, keys: Sequence[tuple[int, int, int, int]], static: bool, *, cache: bool = True
    ) -> list[tuple[tuple[int, ...] | None, int]]:
        """The paths of ``keys``, entered in their table (``cache``) and returned."""
        if not keys:
            return []
        arr = np.array(keys, dtype=np.int64).reshape(-1, 4)
        bad = (arr[:, :2] < 0) | (arr[:, :2] >= self.n_hosts)
        if bad.any() or ((arr[:, 2] < 0) | (arr[:, 2] >= self.ports_per_host)).any():
            raise PacketSimError(f"a path key is out of range: {keys[int(np.argmax(bad.any(1)))]}")
        return self._store(keys, self._paths(arr, static), static, cache)

    def _paths(self, arr: NDArray[np.int64], static: bool) -> list[tuple[int, ...] | None]:
        """The paths of the (src, dst, port, ev) rows of ``arr``, checked by the caller."""
        if static and self.source_routes is not None:
            return self.source_routes(arr)
        view = self._views.get(static)
        if view is None:
            view = route_view(self.router, None if static else self.live_view)
            self._views[static] = view
        rows = route(
            self.router,
            arr[:, 0],
            arr[:, 1],
            arr[:, 2],
            arr[:, 3] & 0xFFFFFFFF,
            seed=self.seed,
            view=view,
        )
        hops = (rows >= 0).sum(axis=1)
        paths: list[tuple[int, ...] | None] = [None] * len(arr)
        if len(arr) > 16 and ((rows >= 0) == (np.arange(rows.shape[1]) < hops[:, None])).all():
            # the usual case: every path is a prefix of its row; tuples made by length
            for n in np.unique(hops[hops > 0]).tolist():
                where = np.flatnonzero(hops == n).tolist()
                for i, made in zip(where, map(tuple, rows[where, :n].tolist()), strict=True):
                    paths[i] = made
        else:
            for i, row in enumerate(rows.tolist()):
                paths[i] = tuple(x for x in row if x >= 0) or None
        return paths

    def _store(
        self,
        keys: Sequence[tuple[int, int, int, int]],
        paths: Sequence[tuple[int, ...] | None],
        static: bool,
        cache: bool = True,
    ) -> list[tuple[tuple[int, ...] | None, int]]:
        """The entries of the ``paths`` of ``keys`` (each route's links once in _rl), entered
        in their table if ``cache``."""
        table = self._static if static else self._ecmp
        entries: list[tuple[tuple[int, ...] | None, int]] = []
        route_at = self._route_at
        entry_at = self._entry_at
        link_ints = self._link_ints
        start = used = self._rl_used
        new: list[tuple[int, ...]] = []
        none: tuple[None, int] = (None, -1)
        for links in paths:
            if links is None:
                entries.append(none)
                continue
            entry = route_at.get(links)
            if entry is None:  # keys of one route share its entry (hundreds of bytes each)
                links = tuple(map(link_ints.__getitem__, links))  # one int object per link
                entry = route_at[links] = entry_at[used] = (links, used)
                used += len(links)
                new.append(links)
            entries.append(entry)
        if cache:
            table.update(zip(keys, entries, strict=True))
        if new:
            if used > len(self._rl):
                grown = np.zeros(max(2 * len(self._rl), used), dtype=np.int64)
                grown[:start] = self._rl[:start]
                self._rl = grown
                self._grown += 1
            self._rl[start:used] = np.fromiter(chain.from_iterable(new), np.int64, used - start)
            self._rl_used = used
        return entries

    def prefetch(self, keys: Iterable[tuple[int, int, int, int]], *, static: bool = False) -> None:
        """Compute the paths of (src, dst, port, ev) keys in one vectorized call."""
        table = self._static if static else self._ecmp
        todo = list(dict.fromkeys(k for k in keys if k not in table))
        for i in range(0, len(todo), PREFETCH_CHUNK):  # bounds the temporaries' memory
            self._compute(todo[i : i + PREFETCH_CHUNK], static)

    def path(
        self, src: int, dst: int, port: int, ev: int, static: bool = False, *, keep: bool = True
    ) -> tuple[int, ...] | None:
        """Directed links from ``src`` to ``dst`` through host port ``port`` for entropy ``ev``:
        the ECMP path under the current routing view, or (``static``) the source route fixed on
        the healthy fabric. None: no live path. ``keep=False``: not cached if it was not."""
        key = (src, dst, port, ev)
        table = self._static if static else self._ecmp
        if key in table:
            return table[key][0]
        self._compute([key], static)
        return table[key][0] if keep else table.pop(key)[0]

    def plane_of_port(self, port: int) -> int:
        return port // max(self.topology.plan.ports_per_host, 1)

    # -- sending -----------------------------------------------------------------------------

    def send(self, pkt: Packet, port: int, ev: int, *, source_route: bool = False) -> bool:
        """Hand ``pkt`` to its source host's NIC port ``port`` with entropy ``ev``. Returns False
        when no route exists (the packet is dropped). A ``pkt.quiet`` packet's delivery does
        not stop the compiled loop (:class:`Packet`), except under a tracer or an impairment."""
        key = (pkt.src, pkt.dst, port, ev)
        table = self._static if source_route else self._ecmp
        entry = table.get(key)
        if entry is None:
            self._compute([key], source_route)
            entry = table[key]
        return self.send_routed(pkt, port, ev, entry)

    def send_tagged(self, pkt: Packet, port: int, ev: int, tag: int) -> bool:
        """:meth:`send` on the ECMP path with the compiled loop's ``tag`` on the packet
        (``TAG_RX``: a data packet the loop may receive, :mod:`._core`); only when
        :attr:`makes_packets`."""
        key = (pkt.src, pkt.dst, port, ev)
        entry = self._ecmp.get(key)
        if entry is None:
            self._compute([key], False)
            entry = self._ecmp[key]
        return self.send_routed(pkt, port, ev, entry, tag)

    def route_entries(
        self, keys: Sequence[tuple[int, int, int, int]], *, static: bool
    ) -> list[tuple[tuple[int, ...] | None, int]]:
        """The paths of (src, dst, port, ev) ``keys`` as entries for :meth:`send_routed`, not
        cached here: for a caller that keeps them (a connection's source routes, which never
        change, held by the connection and dropped with it)."""
        out: list[tuple[tuple[int, ...] | None, int]] = []
        for i in range(0, len(keys), PREFETCH_CHUNK):
            out += self._compute(keys[i : i + PREFETCH_CHUNK], static, cache=False)
        return out

    def pair_entries(
        self, src: int, dst: int, ports: Sequence[int], evs: Sequence[int]
    ) -> list[tuple[tuple[int, ...] | None, int]]:
        """:meth:`route_entries` of the source routes from ``src`` to ``dst`` on each port and
        EV of ``ports`` and ``evs`` followed by those back from ``dst`` to ``src``: the keys
        made as arrays (a connection's batch of EVs), not as tuples."""
        n = len(evs)
        if not (0 <= src < self.n_hosts and 0 <= dst < self.n_hosts) or n != len(ports):
            raise PacketSimError(f"a path key is out of range: {src} -> {dst}")
        arr = np.empty((2 * n, 4), dtype=np.int64)
        arr[:n, 0] = arr[n:, 1] = src
        arr[:n, 1] = arr[n:, 0] = dst
        arr[:n, 2] = arr[n:, 2] = ports
        arr[:n, 3] = arr[n:, 3] = evs
        if n and not ((arr[:, 2] >= 0) & (arr[:, 2] < self.ports_per_host)).all():
            raise PacketSimError(f"a path key's port is out of range: {list(ports)}")
        return self._store((), self._paths(arr, True), True, cache=False)

    def entry_at(self, offset: int) -> tuple[tuple[int, ...] | None, int]:
        """The entry (:meth:`route_entries`) of the route whose links start at ``offset`` (its
        second field; -1: no route), for a caller that keeps offsets instead of entries."""
        return self._entry_at[offset]

    def send_routed(
        self,
        pkt: Packet,
        port: int,
        ev: int,
        entry: tuple[tuple[int, ...] | None, int],
        tag: int = 0,
    ) -> bool:
        """:meth:`send` on the path ``entry`` (one of :meth:`route_entries`, or the cached
        path of ``pkt``'s ends, ``port`` and ``ev``); ``tag``: :meth:`send_tagged`."""
        pkt.ev = ev
        pkt.port = port
        now = pkt.sent_ps = self.now
        links, at = entry
        tracer = self.tracer
        if tracer is not None:
            tracer.packet(now, "tx", pkt.src, pkt)
        if links is None:
            self._no_route += 1
            return False
        pkt.route = links
        pkt.hop = 1
        if tracer is not None:
            tracer.routed(pkt)
        smv = self._smv
        k = smv[S_NFREE] - 1
        if k < 0:
            self._grow_pool(1)
            k = smv[S_NFREE] - 1
        smv[S_NFREE] = k
        pid = self._pmv[k * P_COLS + P_FREE]
        self._objs[pid] = pkt
        n = self._n_cm
        if n == len(self._cm):
            self._grow_commands()
        mv = self._cmv
        i = n * CMD_COLS
        mv[i] = CMD_SEND
        mv[i + 1] = pkt.size
        mv[i + 2] = pkt.prio
        mv[i + 3] = pkt.ecn
        mv[i + 4] = pkt.trimmed
        mv[i + 5] = at
        mv[i + 6] = pid
        if pkt.quiet and tracer is None and self.impair is None:  # quiet needs a real flow
            mv[i + 7] = TAG_QUIET | (pkt.flow << TAG_FLOW_SHIFT)
        else:
            mv[i + 7] = tag
        self._n_cm = n + 1
        return True

    @property
    def holds_routes(self) -> bool:
        """Whether a connection may keep its own paths and send on them (:meth:`send_routed`):
        ``send`` is not overridden (a conformance script's capture sees every send)."""
        return self._plain

    @property
    def makes_packets(self) -> bool:
        """Whether a transport may send control packets without objects (:meth:`send_made`)
        and get the compiled pacer's pulls without objects: a plain engine, no tracer (it
        sees every packet), no impairment (it rewrites packets), ``send`` not overridden (a
        conformance script's capture)."""
        return self.tracer is None and self.impair is None and self._plain

    def send_made(self, src: int, dst: int, port: int, ev: int, tag: int) -> bool:
        """Send a header-only control packet with no Python object, on the ECMP path of
        (``src``, ``dst``, ``port``, ``ev``): what :meth:`send` does with a control packet
        of ``cfg.header`` bytes, without its object. Its delivery is told to the connection
        from ``tag`` (``TAG_QUIET | TAG_MADE``, the flow and a count: :mod:`._core`) by
        ``conns[flow].made_ack(count, now)``, logged by the loop as a quiet packet's. Only
        when :attr:`makes_packets`. Returns False when no route exists (as :meth:`send`)."""
        key = (src, dst, port, ev)
        entry = self._ecmp.get(key)
        if entry is None:
            self._compute([key], False)
            entry = self._ecmp[key]
        links, at = entry
        if links is None:
            self._no_route += 1
            return False
        smv = self._smv
        k = smv[S_NFREE] - 1
        if k < 0:
            self._grow_pool(1)
            k = smv[S_NFREE] - 1
        smv[S_NFREE] = k
        pid = self._pmv[k * P_COLS + P_FREE]
        self._objs[pid] = None
        n = self._n_cm
        if n == len(self._cm):
            self._grow_commands()
        mv = self._cmv
        i = n * CMD_COLS
        mv[i] = CMD_SEND
        mv[i + 1] = self._header
        mv[i + 2] = 1
        mv[i + 3] = 0
        mv[i + 4] = 0
        mv[i + 5] = at
        mv[i + 6] = pid
        mv[i + 7] = tag
        self._n_cm = n + 1
        return True

    def deliver_later(self, pkt: Packet, delay_ps: int) -> None:
        """Deliver ``pkt`` to its destination host after ``delay_ps`` (scripted injection)."""
        pkt.route = ()
        self._injected.append(pkt)
        self._command(CMD_PUSH, self.now + delay_ps, EV_ARRIVE, len(self._injected) - 1)

    # -- the compiled data plane -------------------------------------------------------------

    def _grow_pool(self, need: int) -> None:
        old = len(self._pkts)
        new = max(2 * old, old + need)
        pkts = np.zeros((new, P_COLS), dtype=np.int64)
        pkts[:old] = self._pkts
        nfree = int(self._s[S_NFREE])
        pkts[nfree : nfree + new - old, P_FREE] = np.arange(new - 1, old - 1, -1)
        self._s[S_NFREE] = nfree + new - old
        self._pkts = pkts
        self._grown += 1
        self._pmv = pkts.reshape(-1).data
        self._objs.extend([None] * (new - old))

    def _grow_heap(self, need: int) -> None:
        cap = len(self._heap)
        if need > cap:
            heap = np.zeros((max(2 * cap, need), 5), dtype=np.int64)
            heap[:cap] = self._heap
            self._heap = heap
            self._grown += 1

    def _command(self, op: int, a: int, b: int = 0, c: int = 0, d: int = 0) -> None:
        n = self._n_cm
        if n == len(self._cm):
            self._grow_commands()
        mv = self._cmv
        i = n * CMD_COLS
        mv[i] = op
        mv[i + 1] = a
        mv[i + 2] = b
        mv[i + 3] = c
        mv[i + 4] = d
        self._n_cm = n + 1

    def _grow_commands(self) -> None:
        cm = np.zeros((2 * len(self._cm), CMD_COLS), dtype=np.int64)
        cm[: len(self._cm)] = self._cm
        self._cm = cm
        self._grown += 1
        self._cmv = cm.reshape(-1).data

    def _step(
        self, limit: int, check_stop: bool, skip_check: bool
    ) -> tuple[int, int, int, int, int, int, int, int, int]:
        """Apply the queued commands and run the compiled loop until it needs Python
        (:func:`._core.step`)."""
        n = self._n_cm
        smv = self._smv
        if n:
            need = smv[S_HN] + 3 * n + 16
            if self._downs:
                need += len(self._pkts) - smv[S_NFREE]
                self._downs = 0
            if need > len(self._heap):
                self._grow_heap(need)
            self._n_cm = 0
        out = core.step(
            self._links, self._pkts, self._heap, self._s, self._trace, self._rl, self._cm,
            self._r, self._rr, self._b, n, limit, check_stop, skip_check,
        )  # fmt: skip
        if smv[S_TN]:
            self._drain_trace()
        return out

    def _flush(self) -> None:
        """Apply the queued commands now (before reading the data plane's state)."""
        if self._n_cm:
            self._step(-1, False, False)

    def _drain_trace(self) -> None:
        """Take the loop's log: quiet deliveries (handed to their connections, in order, at
        their times) and, under a tracer, drops and trims."""
        tracer = self.tracer
        n = int(self._s[S_TN])
        self._s[S_TN] = 0
        self._s[S_QSYNC] = 0
        objs = self._objs
        conns = self.conns
        for t, what, pid, x in self._trace[:n].tolist():
            if what == TR_QUIET:
                if x & TAG_MADE:  # a made ACK (send_made): its flow and sequence in the tag
                    flow = (x >> TAG_FLOW_SHIFT) & TAG_FLOW_MASK
                    if flow < len(conns):
                        conns[flow].made_ack(x & TAG_CUM_MASK, t)
                else:
                    self._deliver_quiet(pid, t)
                continue
            if what == TR_SENT:  # the loop answered a pull with this packet (pid: the flow)
                conns[pid].made_sent(x, t)
                continue
            pkt = objs[pid]
            if pkt is not None and tracer is not None:
                tracer.event(t, pkt.flow, "drop" if what == TR_DROP else "trim", pkt.seq, x)

    def _deliver_quiet(self, pid: int, t: int) -> None:
        """A quiet packet reached its host at ``t`` (the loop went on): as the inlined delivery
        of :meth:`run`, with ``now`` at ``t`` for the handler and restored after it."""
        pkt = self._objs[pid]
        self._objs[pid] = None
        assert pkt is not None
        pmv = self._pmv
        row = pid * P_COLS
        pkt.size = pmv[row + P_SIZE]
        pkt.prio = pmv[row + P_PRIO] != 0
        pkt.ecn = pmv[row + P_ECN] != 0
        pkt.trimmed = pmv[row + P_TRIM] != 0
        pkt.hop = len(pkt.route)
        pkt.ingress = -1
        if pkt.kind == DATA and not pkt.trimmed:
            self._delivered += pkt.payload
        conns = self.conns
        if 0 <= pkt.flow < len(conns):
            before, queued = self.now, self._n_cm
            self.now = t
            conns[pkt.flow].on_packet(pkt, t)
            self.now = before
            if self._n_cm != queued:
                raise PacketSimError(
                    f"flow {pkt.flow}: the handler of a quiet packet (kind "
                    f"{KIND_NAMES[pkt.kind]}) sent or scheduled something"
                )

    # -- host events -------------------------------------------------------------------------

    def _python_event(self, out: tuple[int, int, int, int, int, int, int, int, int]) -> None:
        _, kind, a, b, now, size, prio, ecn, trimmed = out
        if kind in (EV_DELIVER, EV_DELIVER_MADE):
            pkt = self._objs[a] if kind == EV_DELIVER else self._made(a)
            self._objs[a] = None
            assert pkt is not None
            pkt.size = size
            pkt.prio = prio != 0
            pkt.ecn = ecn != 0
            pkt.trimmed = trimmed != 0
            pkt.hop = len(pkt.route)
            pkt.ingress = -1
            if self.impair is not None:
                instead = self.impair(pkt, now)
                if instead is not None:
                    for delay, p in instead:
                        self.deliver_later(p, delay) if delay > 0 else self._deliver(p)
                    return
            self._deliver(pkt)
        elif kind == EV_TIMER:
            self.conns[a].on_timer(b, now)
        elif kind == EV_ACTION:
            entry = self._actions[a]
            self._actions[a] = None
            assert entry is not None
            fn, arg = entry
            fn() if arg is None else fn(arg)
        else:
            injected = self._injected[a]
            self._injected[a] = None
            assert injected is not None
            self._deliver(injected)

    def _made(self, pid: int) -> Packet:
        """The object of a packet the compiled loop made (a compiled pacer's pull): the
        fields its receiver reads (kind, flow, ends, the pull count in ``cum``, size); for
        a data packet it sent for a connection (``TAG_RX``), the connection's
        ``made_data(tag)``."""
        row = pid * P_COLS
        pmv = self._pmv
        tag = pmv[row + P_TAG]
        flow = (tag >> TAG_FLOW_SHIFT) & TAG_FLOW_MASK
        if tag & TAG_RX:
            made: Packet = self.conns[flow].made_data(tag)  # type: ignore[attr-defined]
            return made
        r = self.ep_state
        pkt = Packet(
            PULL, flow, r[flow * R_COLS + R_DST], r[flow * R_COLS + R_SRC], 0, 0, self.cfg.header
        )
        pkt.cum = tag & TAG_CUM_MASK
        return pkt

    def _deliver_made(
        self, out: tuple[int, int, int, int, int, int, int, int, int], pkt: Packet
    ) -> None:
        """A data packet the loop sent (no object until now) delivered as the inlined
        delivery of :meth:`run` delivers one with an object."""
        pkt.size = out[5]
        pkt.prio = out[6] != 0
        pkt.ecn = out[7] != 0
        pkt.trimmed = out[8] != 0
        pkt.ingress = -1
        if not pkt.trimmed:
            self._delivered += pkt.payload
        self.conns[pkt.flow].on_packet(pkt, out[4])

    def _deliver(self, pkt: Packet) -> None:
        if self.tracer is not None:
            self.tracer.packet(self.now, "rx", pkt.dst, pkt)
        if pkt.kind == DATA and not pkt.trimmed:
            self._delivered += pkt.payload
        if 0 <= pkt.flow < len(self.conns):
            self.conns[pkt.flow].on_packet(pkt, self.now)

    # -- failures ----------------------------------------------------------------------------

    def schedule_failure(self, f: Failure) -> None:
        """Apply a failure of :mod:`clusterloom.sim.flow.run` at its times."""
        directed = [int(x) for link in f.links.tolist() for x in (2 * link, 2 * link + 1)]
        bad = [d for d in directed if d >= len(self.dl_to)]
        if bad:
            raise PacketSimError(f"failure {f.label}: no directed link {bad[0]}")
        self.at(f.start_ps, lambda: self._set_links(directed, f.fraction, f.fraction == 0.0))
        if f.end_ps is not None:
            self.at(f.end_ps, lambda: self._set_links(directed, 1.0, f.fraction == 0.0))

    def _set_links(self, directed: list[int], fraction: float, hard: bool) -> None:
        for dl in directed:
            if fraction == 0.0:
                self._command(CMD_DOWN, dl)
                self._downs += 1
            else:
                rate = max(1, round(self.base_rate[dl] * fraction))
                self._command(CMD_UP, dl, rate)
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
        self._views.pop(False, None)
        keys = list(self._ecmp)
        self._ecmp.clear()
        self._compute(keys, False)
        r = self.ep_state
        for c, (at, pull) in self._rr_keys.items():  # pull routes follow the view
            if not (r[c * R_COLS + R_FIN] and r[c * R_COLS + R_SDONE]):  # pulls may follow
                self._rr[at : at + len(pull)] = self._route_offsets(
                    [(a, b, p, e) for a, b, p, e in pull.tolist()]
                )

    # -- the loop ----------------------------------------------------------------------------

    def run(self, until_ps: int | None = None, stop: Callable[[], bool] | None = None) -> int:
        """Run events up to ``until_ps`` (default: the config's ``max_time_ps``) or until the
        heap is empty or ``stop()`` is true (checked every 4,096 events). Returns the time.

        The compiled loop (:func:`._core.step`) runs the network's events and returns on each
        event that needs Python: a delivery to a host, a timer, an action."""
        limit = self.cfg.max_time_ps if until_ps is None else until_ps
        self._s[S_RUN_N] = 0
        check = stop is not None
        skip = False
        conns = self.conns
        objs = self._objs
        smv = self._smv
        step = dispatch = core.step
        grown = -1
        while True:
            if self._grown != grown:  # an array was reallocated: take the new ones
                grown = self._grown
                links, pkts, heap, st = self._links, self._pkts, self._heap, self._s
                trace, rl, cm = self._trace, self._rl, self._cm
                r, rr, b = self._r, self._rr, self._b
            # self._step inlined
            n = self._n_cm
            if n:
                need = smv[S_HN] + 3 * n + 16
                if self._downs:
                    need += len(pkts) - smv[S_NFREE]
                    self._downs = 0
                if need > len(heap):
                    self._grow_heap(need)
                    heap = self._heap
                    grown = self._grown
                self._n_cm = 0
            out = step(links, pkts, heap, st, trace, rl, cm, r, rr, b, n, limit, check, skip)
            if step is dispatch:  # compiled now: call its entry point from here on
                args = (links, pkts, heap, st, trace, rl, cm, r, rr, b, n, limit, check, skip)
                step = _entry_point(dispatch, args)
            if smv[S_TN]:
                self._drain_trace()
            was_skip, skip = skip, False
            status = out[0]
            if status == ST_PYTHON:
                now = self.now = out[4]
                kind = out[1]
                if kind == EV_TIMER:
                    conns[out[2]].on_timer(out[3], now)
                elif kind == EV_MRC_PUMP:  # an mrc-spray sender's pump stopped for Python
                    conns[out[2]].made_pump(out[3], out[5], now)  # type: ignore[attr-defined]
                elif kind == EV_SACK:  # an mrc-spray SACK the loop made, by its fields
                    conns[out[2]].made_sack(out[3], out[5], out[6], out[7], now)  # type: ignore[attr-defined]
                elif kind == EV_DELIVER_MADE and self.impair is None and self.tracer is None:
                    # a compiled pacer's pull: no object, its connection told the pull count
                    tag = self._pmv[out[2] * P_COLS + P_TAG]
                    flow = (tag >> TAG_FLOW_SHIFT) & TAG_FLOW_MASK
                    objs[out[2]] = None
                    if tag & TAG_RX:  # a data packet the loop sent: given an object here
                        self._deliver_made(out, conns[flow].made_data(tag))  # type: ignore[attr-defined]
                    elif flow < len(conns):
                        conns[flow].made_pull(tag & TAG_CUM_MASK, now)  # type: ignore[attr-defined]
                elif kind == EV_DELIVER and self.impair is None and self.tracer is None:
                    # the common case inlined: a packet of a connection reaches a host
                    a = out[2]
                    pkt = objs[a]
                    objs[a] = None
                    assert pkt is not None
                    pkt.size = out[5]
                    pkt.prio = out[6] != 0
                    pkt.ecn = out[7] != 0
                    pkt.trimmed = out[8] != 0
                    pkt.hop = len(pkt.route)
                    pkt.ingress = -1
                    if pkt.kind == DATA and not pkt.trimmed:
                        self._delivered += pkt.payload
                    if 0 <= pkt.flow < len(conns):
                        conns[pkt.flow].on_packet(pkt, now)
                else:
                    self._python_event(out)
            elif status == ST_GROW:
                self._grow_heap(int(self._s[S_HN]) + 64)
                if smv[S_NFREE] < 1:
                    self._grow_pool(1)
            elif status == ST_SYNC:  # the log is taken: run the pacer's turn now
                skip = was_skip
            elif status == ST_SAMPLE:  # the counters' sample is due: take it, then the event
                self._sample(int(heap[0, 0]))
                skip = was_skip
            elif status == ST_STOP_CHECK:
                assert stop is not None
                if stop():
                    break
                skip = True
            else:
                break
        self.now = int(self._s[S_NOW])
        return self.now

    # -- per-port counters -------------------------------------------------------------------

    def count_ports(self, sample_ps: int) -> None:
        """Count, per directed link, the packets and bytes sent and received, drops, losses,
        trims, ECN marks and PFC pauses (``_core.L_COUNTERS``) from now on, sampled every
        ``sample_ps`` of simulated time (:meth:`port_samples`). Counting is O(1) per event in
        the compiled loop; a run that does not call this counts nothing."""
        if sample_ps <= 0:
            raise PacketSimError(f"the counters' sample interval must be positive, got {sample_ps}")
        self._flush()
        self._s[C_PORTS] = 1
        self._sample_ps = int(sample_ps)
        self._s[core.S_SAMPLE] = (self.now // sample_ps + 1) * sample_ps

    def _sample(self, time: int) -> None:
        """The loop reached ``time``, at or after the next sample: one sample at the last
        multiple of the interval not after ``time`` (the counters are the same at every
        multiple in between, since no event ran: they are left out, :meth:`port_samples`)."""
        ivl = self._sample_ps
        at = time // ivl * ivl
        self._samples.append((at, self._links[:, list(core.L_COUNTERS)].copy()))
        self._s[core.S_SAMPLE] = at + ivl

    def port_samples(self) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """The per-port counters sampled so far and now: the sample times ``[samples]`` and
        the cumulative counters ``[samples, directed links, counters]`` (``_core.L_COUNTERS``'
        order). A sample is taken at each multiple of the interval at which an event is due
        since the last one (a multiple with no event since is left out: its counters are the
        previous sample's), and the last at ``now``."""
        if not self._s[C_PORTS]:
            raise PacketSimError("per-port counters were not asked for (count_ports)")
        self._flush()
        last = self._links[:, list(core.L_COUNTERS)].copy()
        samples = [x for x in self._samples if x[0] < self.now] + [(self.now, last)]
        times = np.array([t for t, _ in samples], dtype=np.int64)
        return times, np.stack([c for _, c in samples])

    def set_loss(self, link: int, loss: float) -> None:
        """Lose each packet arriving over physical link ``link`` (both directions) with
        probability ``loss`` (a gray link's bit errors after FEC), drawn from the run's
        counter-based generator; counted as a drop (``NetStats.drops``) and, per port, as
        lost on that directed link's wire."""
        if not 0.0 <= loss <= 1.0:
            raise PacketSimError(f"link {link}: loss must be in [0, 1], got {loss}")
        if not 0 <= link < len(self.dl_to) // 2:
            raise PacketSimError(f"loss on link {link}: the fabric has {len(self.dl_to) // 2}")
        self._flush()
        for dl in (2 * link, 2 * link + 1):
            self._links[dl, core.L_LOSS] = round(loss * core.LOSS_ONE)

    # -- observation -------------------------------------------------------------------------

    def max_queue_bytes(self) -> int:
        """The largest data backlog any switch port held."""
        self._flush()
        links = self._links
        held = links[links[:, L_SW] != 0, L_MAXQ]
        return int(held.max()) if held.size else 0


def _entry_point(fn: Any, args: tuple[Any, ...]) -> Any:
    """The compiled entry point of the kernel ``fn`` for the types of ``args`` (it must have
    been called with them): the ahead-of-time extension's function (``sim._aot``), numba's
    entry point, or ``fn`` itself. Calling it skips the argument checks and numba's dispatch
    (typing every argument and choosing an overload: about 1.5 us of the 2.8 us a call of
    :func:`._core.step` costs from Python); the arrays keep their types when they grow."""
    if isinstance(fn, Kernel):
        return fn.entry(args)
    try:
        sig = tuple(fn.typeof_pyval(a) for a in args)
        return fn.overloads[sig].entry_point
    except (AttributeError, KeyError):  # not a numba dispatcher (NUMBA_DISABLE_JIT), no match
        return fn


def rng_key(seed: int) -> int:
    """The key of a run's counter-based generator (ECN marking): splitmix64 of the seed, 63
    bits so that it is a non-negative ``int64``."""
    z = ((seed ^ 0xEC4) + 0x9E3779B97F4A7C15) & _MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
    return (z ^ (z >> 31)) & 0x7FFFFFFFFFFFFFFF


_MASK64 = 0xFFFFFFFFFFFFFFFF
