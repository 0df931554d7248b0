"""What every packet-level transport shares: the plug-in interface, segmentation into packets,
out-of-order placement at the receiver, completions in posting order, security context checks.

A transport is a class with a ``name``, the optional ``features`` it implements (the conformance
suite reads them) and a constructor ``(sim, flow, src, dst, nbytes, start_ps, spec)`` that
returns a connection: one object holding both ends of one flow (sender at ``src``, receiver at
``dst``), called by the engine through ``on_packet`` and ``on_timer``. ``ConnSpec`` carries what
the application posts: the message sizes (completions are reported per message), the security
key and job ID, and transport options.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, Protocol, TypeVar

import numpy as np

from clusterloom.sim.packet.engine import ACK, DATA, PROBE, Endpoint, Packet, PacketSim
from clusterloom.sim.paths import splitmix64
from clusterloom.units import gbps, tx_ps

#: the type of a transport option (``clusterloom.sim.packet.options``): a switch, a whole
#: number, a number, a queue size (packets or bytes), bytes
OptionKind = Literal["bool", "int", "float", "size", "bytes"]

__all__ = ["ConnSpec", "Connection", "OptionKind", "Transport"]


def _mix(x: int) -> int:
    """splitmix64 of one integer (the same finaliser as the vectorized one in flow.paths)."""
    z = (x + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return z ^ (z >> 31)


def entropy(*parts: int) -> int:
    """A 32-bit entropy value hashed from integers (connection, path index, generation...)."""
    h = 0
    for p in parts:
        h = _mix(h ^ (p & 0xFFFFFFFFFFFFFFFF))
    return h & 0xFFFFFFFF


def entropy_range(head: Sequence[int], n: int, tail: Sequence[int] = ()) -> list[int]:
    """``[entropy(*head, i, *tail) for i in range(n)]``, vectorized."""
    h = 0
    for p in head:
        h = _mix(h ^ (p & 0xFFFFFFFFFFFFFFFF))
    z = splitmix64(np.uint64(h) ^ np.arange(n, dtype=np.uint64))
    for p in tail:
        z = splitmix64(z ^ np.uint64(p & 0xFFFFFFFFFFFFFFFF))
    out: list[int] = (z & np.uint64(0xFFFFFFFF)).astype(np.int64).tolist()
    return out


def segments(sizes: Sequence[int], mss: int) -> tuple[list[int], list[int]]:
    """The payload of each packet of messages of ``sizes`` bytes cut at ``mss`` (all full
    but each message's last), and the end of each message (the index after its last packet)."""
    pay: list[int] = []
    ends: list[int] = []
    for size in sizes:
        full, rest = divmod(size, mss)
        pay += [mss] * full + ([rest] if rest else [])
        ends.append(len(pay))
    return pay, ends


#: values :func:`shared` keeps per run (the latest; enough for the few kinds of connection a
#: traffic has, bounded for one whose every flow differs)
SHARED_MAX = 64

_T = TypeVar("_T")


def shared(sim: PacketSim, key: Hashable, make: Callable[[], _T]) -> _T:
    """The run's value for ``key``, made by ``make()`` the first time: read-only state the
    connections of a run share instead of one copy each (the packets' payloads of a
    2 MB flow are 4 KB of list; 14,336 connections of one all-reduce cut their flows alike).
    The last :data:`SHARED_MAX` keys are kept; an engine without the table (a stand-in)
    makes a value each time."""
    table: dict[Hashable, Any] | None = getattr(sim, "shared_values", None)
    if table is None:
        return make()
    if key in table:
        value: _T = table[key]
        return value
    if len(table) >= SHARED_MAX:
        del table[next(iter(table))]
    value = table[key] = make()
    return value


@dataclass(frozen=True)
class ConnSpec:
    """What the application posts on a connection."""

    messages: tuple[int, ...] = ()  # message sizes in bytes (empty: one message of the flow)
    key: int = 0x1234  # the security key the receiver expects
    job: int = 1  # the job ID the receiver expects
    options: dict[str, float] = field(default_factory=dict)


class Transport(Protocol):
    """A transport plug-in (module docstring)."""

    name: ClassVar[str]
    features: ClassVar[frozenset[str]]
    wants_pfc: ClassVar[bool]
    wants_trimming: ClassVar[bool]
    wants_buffer_bytes: ClassVar[int | None]

    def __call__(
        self,
        sim: PacketSim,
        flow: int,
        src: int,
        dst: int,
        nbytes: int,
        start_ps: int,
        spec: ConnSpec,
    ) -> Connection: ...


class Connection:
    """Base of every transport's connection. Subclasses implement ``start``, ``sender_packet``
    (a packet arriving at the source host), ``receiver_packet`` (at the destination host) and
    ``on_timer``; the base does segmentation, placement, completions and bookkeeping."""

    name: ClassVar[str] = "base"
    features: ClassVar[frozenset[str]] = frozenset()
    wants_pfc: ClassVar[bool] = False
    wants_trimming: ClassVar[bool] = False
    #: the data buffer per switch port the transport is designed for (None: the default)
    wants_buffer_bytes: ClassVar[int | None] = None
    #: the same in full packets (MTU plus header) of the run; wins over wants_buffer_bytes
    wants_buffer_packets: ClassVar[int | None] = None
    #: options and their defaults; ConnSpec.options overrides them
    defaults: ClassVar[dict[str, float]] = {}
    #: each option's type and closed range, checked where options are given
    #: (:mod:`clusterloom.sim.packet.options`); an option not listed is a float >= 0
    option_types: ClassVar[dict[str, tuple[OptionKind, float, float]]] = {}
    #: whether :meth:`place` keeps ``rbits`` (the received bitmap as an integer, for SACKs);
    #: a transport that sends no SACK (``receiver-driven``) spares its cost
    keeps_rbits: ClassVar[bool] = True

    def __init__(
        self,
        sim: PacketSim,
        flow: int,
        src: int,
        dst: int,
        nbytes: int,
        start_ps: int,
        spec: ConnSpec,
    ) -> None:
        self.sim = sim
        self.flow = flow
        self.src, self.dst = src, dst
        self.nbytes = nbytes
        self.start_ps = start_ps
        self.spec = spec
        unknown = set(spec.options) - set(self.defaults)
        if unknown:
            from clusterloom.sim.packet.engine import PacketSimError

            raise PacketSimError(
                f"{self.name}: unknown option(s) {', '.join(sorted(unknown))}; "
                f"known: {', '.join(self.defaults) or 'none'}"
            )
        #: the options, one dict shared (read only) by the run's connections of this class
        #: given the same options
        self.opt: dict[str, float] = shared(
            sim,
            ("opt", type(self), tuple(spec.options.items())),
            lambda: {**self.defaults, **spec.options},
        )
        cfg = sim.cfg
        self.mss = cfg.mtu
        self.hdr = cfg.header
        sizes = spec.messages or ((nbytes,) if nbytes > 0 else ())
        if sum(sizes) != nbytes:
            from clusterloom.sim.packet.engine import PacketSimError

            raise PacketSimError(f"flow {flow}: messages sum to {sum(sizes)}, not {nbytes}")
        #: the payload of each packet and the end (in packets) of each message: read only,
        #: shared by the connections of one segmentation (``shared``)
        self.pay: list[int]
        self.msg_end: list[int]
        self.pay, self.msg_end = shared(
            sim, ("seg", sizes, self.mss), lambda: segments(sizes, self.mss)
        )
        self.n = len(self.pay)
        # receiver
        self.got: bytearray | memoryview = bytearray(self.n)
        self.rbits = 0  # bit i: packet i placed
        self.cum = 0  # first packet not placed
        self.placed_bytes = 0
        self.done_msgs = 0
        self.finish_ps = -1
        self.errors: list[str] = []
        # sender
        self.tx_count = [0] * self.n
        self.retransmissions = 0
        self.sender_done_ps = -1
        self.failed = False
        self.started = False  # set when the run starts it (its dependencies have ended)
        self.ports = sim.ports_per_host
        self.on_finish: Callable[[Connection], None] | None = None
        tr = sim.tracer
        self.trace = tr

    # -- engine interface ----------------------------------------------------------------

    def on_packet(self, pkt: Packet, now: int) -> None:
        if pkt.kind == DATA or pkt.kind == PROBE:
            self.receiver_packet(pkt, now)
        else:
            self.sender_packet(pkt, now)

    def path_keys(self) -> list[tuple[int, int, int, int, bool]]:
        """(src, dst, port, ev, source_route) of every path the connection will use, so that
        the engine computes them in one vectorized call before the run (others on demand)."""
        return []

    def compact(self) -> None:
        """Both ends are done (the receiver completed, the sender saw every acknowledgement):
        release state only a sender with data to send reads. The connection still answers late
        packets exactly as before. Transports with per-path sender state override it."""

    def retired(self) -> Endpoint | None:
        """Both ends are done: an endpoint, much smaller than the connection, that answers its
        late packets exactly as it would (its timers all end at once then), or None to keep
        the connection. Not used under a tracer (it would not see the late packets' effects)."""
        return None

    def on_timer(self, token: int, now: int) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def start(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def sender_packet(self, pkt: Packet, now: int) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def receiver_packet(self, pkt: Packet, now: int) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- shared pieces -------------------------------------------------------------------

    def event(self, what: str, a: int = 0, b: int = 0) -> None:
        if self.trace is not None:
            self.trace.event(self.sim.now, self.flow, what, a, b)

    def data(self, seq: int) -> Packet:
        """A data packet of sequence ``seq`` (counts a retransmission when sent before)."""
        pkt = Packet(DATA, self.flow, self.src, self.dst, seq, self.pay[seq], self.hdr)
        spec = self.spec
        pkt.key = spec.key
        pkt.job = spec.job
        ends = self.msg_end
        pkt.msg = 0 if len(ends) == 1 and seq < ends[0] else bisect_right(ends, seq)
        c = self.tx_count[seq] + 1
        self.tx_count[seq] = c
        if c > 1:
            self.retransmissions += 1
        return pkt

    def msg_of(self, seq: int) -> int:
        """The index of the message holding packet ``seq`` (the first whose end is past it)."""
        return bisect_right(self.msg_end, seq)

    def control(self, kind: int, seq: int = 0) -> Packet:
        """A control packet from the receiver back to the sender."""
        return Packet(kind, self.flow, self.dst, self.src, seq, 0, self.hdr)

    def authentic(self, pkt: Packet) -> bool:
        """The security context check: a packet with a wrong key or job ID writes nothing and
        raises an error on the connection (reported, the connection carries on)."""
        if pkt.key != self.spec.key or pkt.job != self.spec.job:
            what = "bad-key" if pkt.key != self.spec.key else "bad-job"
            self.errors.append(f"{what} seq {pkt.seq}")
            self.event("error", pkt.seq, 1 if what == "bad-key" else 2)
            return False
        return True

    def place(self, seq: int) -> bool:
        """Place packet ``seq`` at its target address (out of order); True if it is new.
        Completes messages in posting order as the contiguous prefix grows."""
        if seq < 0 or seq >= self.n or self.got[seq]:
            return False
        self.got[seq] = 1
        if self.keeps_rbits:
            self.rbits |= 1 << seq
        self.placed_bytes += self.pay[seq]
        if self.trace is not None:
            self.trace.event(self.sim.now, self.flow, "place", seq, self.pay[seq])
        if seq == self.cum:
            cum = seq + 1
            got = self.got
            n = self.n
            while cum < n and got[cum]:
                cum += 1
            self.cum = cum
            self.complete_ready()
        return True

    def complete_ready(self) -> None:
        ends = self.msg_end
        while self.done_msgs < len(ends) and self.cum >= ends[self.done_msgs]:
            self.event("complete", self.done_msgs)
            self.done_msgs += 1
        if self.done_msgs == len(ends) and self.finish_ps < 0:
            self.finish_ps = self.sim.now
            if self.on_finish is not None:
                self.on_finish(self)

    def sack_bits(self, width: int = 64) -> int:
        """Received packets above ``cum``: bit i is packet ``cum + 1 + i``."""
        return (self.rbits >> (self.cum + 1)) & ((1 << width) - 1)

    def fail(self, reason: str) -> None:
        """Give up: the connection reports an error and stops sending."""
        if not self.failed:
            self.failed = True
            self.errors.append(reason)
            self.event("error", 0, 3)

    def window_event(self, path: int, nbytes: int) -> None:
        if self.trace is not None:
            self.trace.event(self.sim.now, self.flow, "cwnd", path, nbytes)

    def base_rtt_ps(self, port: int = 0, ev: int = 0, path: tuple[int, ...] | None = None) -> int:
        """Round trip of a full packet and its ACK on an idle path (no queueing); ``path``:
        that path's links when the caller has them (its source route for ``port`` and ``ev``)."""
        sim = self.sim
        # on the healthy fabric (a connection made after a failure keeps the same RTT)
        fwd = path or sim.path(self.src, self.dst, port, ev, static=True, keep=False) or ()
        rate = sim.base_rate[fwd[0]] if fwd else gbps(100)
        hops = len(fwd) or 2
        one = sum(sim.prop[d] for d in fwd) if fwd else 0
        ser = tx_ps(self.mss + self.hdr, rate)
        ack = tx_ps(self.hdr, rate)
        return 2 * one + hops * (ser + ack)

    def line_rate_bps(self) -> int:
        link = int(self.sim.router.host_link[self.src, 0])
        return int(self.sim.base_rate[2 * link])

    def ack_packet(self, data: Packet) -> Packet:
        a = self.control(ACK, data.seq)
        a.echo = data.ev
        a.ecn = data.ecn
        a.port = data.port
        return a
