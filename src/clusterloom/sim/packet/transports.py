"""The packet-level transports: state machines behind one interface (:mod:`.base`).

``roce-ecmp`` (RoCEv2-like)
    One queue pair per connection on one path: its entropy value is the hash of the queue pair
    (the same hash as the flow-level model), routed by ECMP at the switches. In-order receiver
    (go-back-N): an out-of-order packet is discarded and NAKed once per gap, the sender goes back
    to the NAKed sequence; a retransmission timeout (``rto_us``) also goes back, and after
    ``retries`` timeouts without progress the queue pair errors out (as an RC QP's retry count).
    Rate control is DCQCN-style: the sender starts at line rate; a receiver that sees an ECN mark
    sends a CNP at most every ``cnp_us``; on a CNP the rate is cut by ``alpha / 2``; every
    ``timer_us`` without a CNP alpha decays by ``(1 - g)`` and the rate recovers (five fast
    recovery stages halfway to the target, then additive increase by ``rai`` of line rate).
    The receiver acknowledges every ``ack_every`` packets and each message's last (ACK
    coalescing, as RDMA NICs do). Runs on a lossless (PFC) fabric by default. With ``dcqcn=0``
    there is no rate control (htsim's RoCE): line rate, no CNP, only PFC pauses slow it.
``mrc-spray`` (MRC-like)
    Per-packet spraying over ``evs`` entropy values (up to 256) spread round-robin over every
    NIC port, hence every plane; each EV maps to a fixed source route (a segment list computed
    on the healthy fabric). The receiver places packets out of order and answers each with a
    SACK: cumulative sequence, a 64-bit bitmap of the packets above it, the echoed EV and ECN.
    A packet is lost when a later packet on the same EV (a FIFO path) is acknowledged while it
    is not; it is retransmitted on another EV. An ECN echo (or a trim) makes the sender skip
    that EV for its next turns, 1, 3, 7... while signals repeat, up to ``max_skip`` (active
    load balancing); the window (starting at ``cwnd_bdp`` base-RTT
    bandwidth-delay products, capped at ``max_bdp``) follows NSCC's idea that ECN with low delay
    is a load-balancing signal and ECN with high delay is congestion: an ACK counts as
    congested when it is marked and its RTT exceeds ``delay_factor`` base RTTs; once per RTT,
    when more than ``ecn_threshold`` of the RTT's ACKs were congested, the window is cut by
    half that fraction (DCTCP-like); otherwise it grows by one packet per window. A trimmed packet
    is NACKed and retransmitted at once without blaming its EV. An EV with a packet unacked for
    ``rto_us`` is marked bad and its packets are retransmitted elsewhere; bad EVs are probed
    every ``probe_us`` and a probe's answer brings them back. With every EV bad for
    ``retries`` probe rounds the connection errors out. Completions in posting order. With
    ``ecmp=1`` the EVs are hashed hop by hop by ECMP instead of source-routed (the paths follow
    the routing view, which reconverges ``reroute_us`` after a failure). On a run given its
    source routes (``PacketSim.source_routes``: SRv6 path programs) EV ``i`` is the table's
    index ``i``; a control plane may withdraw an EV (:meth:`MrcSpray.withdraw_ev`).
``metaroce`` (MetaRoCE-like)
    ``paths`` paths, each a UDP source port (an EV hashed by ECMP) on a NIC port chosen
    round-robin (the NIC picks the plane). Each path has its own sequence numbers, window (AIMD
    on ECN, per path) and a 256-bit SACK bitvector in its ACKs; a gap on a path (a later packet
    of the path acknowledged) is retransmitted at once. The receiver places out of order,
    completes in posting order and puts a fair-share rate hint in every ACK (its link rate over
    the connections it receives); the sender paces at the hint. A path whose oldest packet is
    unacked for ``rto_us`` is failed (failure, not congestion), takes a new source port (and
    after two failures the next NIC port: plane failover) and carries only probes until one is
    answered. ``retries`` probe rounds with every path failed: the connection errors out.
``receiver-driven`` (NDP/EQDS-like)
    Switches keep shallow data queues (12 packets per port, as NDP's 8-packet queues). The
    sender sends a speculative first window (``iw_bdp`` BDPs) sprayed over ``evs`` ECMP
    entropy values, then one packet per PULL. Switches trim overflowing packets to their header
    (the transport asks for trimming); a header is NACKed, the packet queued for retransmission.
    Every arriving data packet or header makes the receiver queue one PULL; a per-host pacer
    sends the pulls of all its connections round-robin at the receiver's rate (link rate, or
    what :func:`set_receiver_rate` set). A retransmission timeout (``rto_us`` without progress)
    resends the oldest unacknowledged packet as one more speculative packet; ``retries`` timeouts
    without progress: the connection errors out.
"""

from __future__ import annotations

from array import array
from collections import deque
from typing import Any, ClassVar, overload

import numpy as np

from clusterloom.errors import PluginError, Problem
from clusterloom.sim.packet import _core
from clusterloom.sim.packet._core import (
    CRX_MRC,
    CRX_RD,
    CRX_ROCE,
    NIL,
    R_ARMED,
    R_BOFF,
    R_COLS,
    R_CREDIT,
    R_CRX,
    R_CUM,
    R_DST,
    R_FAST,
    R_FIN,
    R_HEAD,
    R_INFL,
    R_IVL,
    R_K,
    R_LAST,
    R_MSS,
    R_N,
    R_NACKED,
    R_NEXTFREE,
    R_NXT,
    R_PACER,
    R_PLACED,
    R_PSEEN,
    R_QNEXT,
    R_ROFF,
    R_RR,
    R_SDONE,
    R_SDPS,
    R_SRC,
    R_TAIL,
    R_WANT,
    RC_EVERY,
    RC_NAKSENT,
    RC_RETRIES,
    RC_UNA,
    RC_UNACKED,
    TAG_EVI_SHIFT,
    TAG_FLOW_SHIFT,
    TAG_MADE,
    TAG_QUIET,
    TAG_RX,
    TAG_SEQ_MASK,
)
from clusterloom.sim.packet.base import (
    Connection,
    ConnSpec,
    OptionKind,
    entropy,
    entropy_range,
)
from clusterloom.sim.packet.engine import (
    ACK,
    CNP,
    DATA,
    NACK,
    PROBE,
    PROBE_ACK,
    PULL,
    Packet,
    PacketSim,
    PacketSimError,
)
from clusterloom.sim.paths import connection_hash
from clusterloom.sim.registry import REGISTRY, implemented_by, plugin_implementation
from clusterloom.units import BITS_PER_BYTE, PS_PER_S, PS_PER_US, bdp_bytes

__all__ = [
    "TRANSPORTS",
    "MetaRoce",
    "MrcSpray",
    "ReceiverDriven",
    "RoceEcmp",
    "packet_transports",
    "set_receiver_rate",
    "transport_class",
]

_PACE, _RTO, _AUX = 0, 1, 2
#: the ranges of the window and recovery options the sprayers share (mrc-spray, metaroce)
_WINDOW_OPTIONS: dict[str, tuple[OptionKind, float, float]] = {
    "cwnd_bdp": ("float", 0.01, 1_000.0),
    "max_bdp": ("float", 0.01, 1_000.0),
    "rto_us": ("float", 1.0, 1e9),
    "probe_us": ("float", 1.0, 1e9),
    "retries": ("int", 0, 1_000),
}


def _ser(nbytes: int, bps: float) -> int:
    return int(nbytes * BITS_PER_BYTE * PS_PER_S // max(bps, 1.0))


class _InRow:
    """An integer attribute of a connection kept in its row of the engine's endpoint state
    (column ``col``), where the compiled loop reads and writes it (``receiver-driven``,
    ``roce-ecmp``)."""

    __slots__ = ("col",)

    def __init__(self, col: int) -> None:
        self.col = col

    @overload
    def __get__(self, obj: None, owner: Any) -> _InRow: ...
    @overload
    def __get__(self, obj: Connection, owner: Any) -> int: ...
    def __get__(self, obj: Connection | None, owner: Any) -> int | _InRow:
        if obj is None:
            return self
        value: int = obj.sim.ep_state[obj.flow * R_COLS + self.col]
        return value

    def __set__(self, obj: Connection, value: int) -> None:
        obj.sim.ep_state[obj.flow * R_COLS + self.col] = value


class _FlagInRow:
    """A boolean attribute of a connection kept in its row of the engine's endpoint state
    (column ``col``, 0 or 1), as :class:`_InRow`."""

    __slots__ = ("col",)

    def __init__(self, col: int) -> None:
        self.col = col

    @overload
    def __get__(self, obj: None, owner: Any) -> _FlagInRow: ...
    @overload
    def __get__(self, obj: Connection, owner: Any) -> bool: ...
    def __get__(self, obj: Connection | None, owner: Any) -> bool | _FlagInRow:
        if obj is None:
            return self
        return obj.sim.ep_state[obj.flow * R_COLS + self.col] != 0

    def __set__(self, obj: Connection, value: bool) -> None:
        obj.sim.ep_state[obj.flow * R_COLS + self.col] = 1 if value else 0


class RoceEcmp(Connection):
    name: ClassVar[str] = "roce-ecmp"
    #: no "ecn_cc": on its lossless fabric a 6-to-1 incast pauses the senders' links and a
    #: victim flow sharing them gets about a third of its rate (docs/conformance.md)
    features: ClassVar[frozenset[str]] = frozenset({"ordered_completions", "keys", "retry_budget"})
    wants_pfc: ClassVar[bool] = True
    defaults: ClassVar[dict[str, float]] = {
        "rto_us": 500.0,
        "retries": 7,
        "cnp_us": 50.0,
        "timer_us": 55.0,
        "g": 1 / 16,
        "rai": 0.02,
        "min_rate": 0.01,
        "ack_every": 4,
        "dcqcn": 1,
    }
    option_types: ClassVar[dict[str, tuple[OptionKind, float, float]]] = {
        "rto_us": ("float", 1.0, 1e9),
        "retries": ("int", 0, 1_000),
        "cnp_us": ("float", 0.0, 1e6),
        "timer_us": ("float", 1.0, 1e6),
        "g": ("float", 1e-6, 1.0),
        "rai": ("float", 1e-6, 1.0),
        "min_rate": ("float", 1e-6, 1.0),
        "ack_every": ("int", 1, 65_536),
        "dcqcn": ("bool", 0, 1),
    }
    keeps_rbits: ClassVar[bool] = False  # no SACK
    # the state the compiled loop shares (_core._roce_receive, _core._roce_acked)
    cum = _InRow(R_CUM)
    placed_bytes = _InRow(R_PLACED)
    sender_done_ps = _InRow(R_SDPS)
    una = _InRow(RC_UNA)
    retries = _InRow(RC_RETRIES)
    unacked = _InRow(RC_UNACKED)
    nak_sent = _InRow(RC_NAKSENT)
    # and its pacer's (_core._roce_pace)
    nxt = _InRow(_core.RP_NXT)
    pacing = _FlagInRow(_core.RP_PACING)
    next_free = _InRow(_core.RP_NEXTFREE)
    failed = _FlagInRow(_core.RP_FAILED)
    retransmissions = _InRow(_core.RP_RETX)

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
        sim.endpoint_row(flow)  # the row holds attributes the base sets
        super().__init__(sim, flow, src, dst, nbytes, start_ps, spec)
        self.port = flow % self.ports
        h = connection_hash(np.array([src]), np.array([dst]), np.array([0]), sim.seed)
        self.ev = int(h[0]) & 0xFFFFFFFF
        self.line = float(self.line_rate_bps())
        self.rc = self.rt = self.line
        self.alpha = 1.0
        self.stage = 0
        self.cnp_seen = False
        self.nxt = 0
        self.una = 0
        self.pacing = False
        self.next_free = 0
        self.check_una = -1
        self.retries = 0
        self.nak_sent = False
        self.unacked = 0
        self.last_cnp = -(1 << 60)
        self.rto = round(self.opt["rto_us"] * PS_PER_US)
        #: the serialization time of the last packet paced, of its size and rate (the size
        #: and the rate change rarely: every full packet, and DCQCN's updates)
        self._ser_size, self._ser_rc, self._ser_ps = -1, -1.0, 0
        self._ack_every = self.opt["ack_every"]  # read on every data packet
        #: DCQCN rate control; without it (``dcqcn=0``, htsim's RoCE) the sender stays at line
        #: rate, the receiver sends no CNP and only PFC slows it
        self.dcqcn = bool(self.opt["dcqcn"])
        n = self.n
        self.got = memoryview(b"")
        at = sim.packet_flags(flow, n, self._bind_flags, regions=1)
        row = flow * R_COLS
        r = sim.ep_state
        r[row + R_N], r[row + R_BOFF], r[row + R_MSS] = n, at, self.mss
        r[row + R_LAST] = self.pay[-1] if n else 0
        r[row + RC_EVERY] = int(self._ack_every)
        cls = type(self)
        own = (
            cls.on_packet is Connection.on_packet
            and cls.receiver_packet is RoceEcmp.receiver_packet
            and cls.sender_packet is RoceEcmp.sender_packet
        )
        #: whether the compiled loop may receive its data in order and its ACKs
        #: (_core._roce_receive, once started): without DCQCN (no CNP to send), on a plain
        #: engine, one message, sequences in the tag's 24 bits
        self.rx_in_loop = own and not self.dcqcn and sim.makes_packets
        self.rx_in_loop &= len(self.msg_end) == 1 and n <= TAG_SEQ_MASK + 1
        self._rx_tag = TAG_RX | (flow << TAG_FLOW_SHIFT)
        #: whether the loop paces it too (_core._roce_pace, once started): the same, and
        #: on_timer and the pacer's steps its own; a retransmission then is a send below the
        #: highest sequence sent (go-back-N sends in order), not a count per packet
        self.pace_in_loop = self.rx_in_loop and cls.on_timer is RoceEcmp.on_timer

    def _bind_flags(self, view: memoryview) -> None:
        self.got = view

    def _data_hw(self, seq: int) -> Packet:
        """:meth:`data` as the loop's pacer counts transmissions (``_core._roce_pace``): a
        retransmission is a send below the highest sequence sent plus one."""
        pkt = Packet(DATA, self.flow, self.src, self.dst, seq, self.pay[seq], self.hdr)
        pkt.key, pkt.job, pkt.msg = self.spec.key, self.spec.job, 0
        at = self.flow * R_COLS + _core.RP_HW
        r = self.sim.ep_state
        if seq < r[at]:
            self.retransmissions += 1
        else:
            r[at] = seq + 1
        return pkt

    def made_data(self, tag: int) -> Packet:
        """The object of a data packet the loop's pacer sent (``_core._roce_pace``), for the
        Python receiver (out of order, or the one that completes the flow)."""
        seq = tag & TAG_SEQ_MASK
        pkt = Packet(DATA, self.flow, self.src, self.dst, seq, self.pay[seq], self.hdr)
        pkt.key, pkt.job, pkt.msg = self.spec.key, self.spec.job, 0
        pkt.ev, pkt.port = self.ev, self.port
        return pkt

    def path_keys(self) -> list[tuple[int, int, int, int, bool]]:
        return [
            (self.src, self.dst, self.port, self.ev, False),
            (self.dst, self.src, self.port, self.ev ^ 1, False),
        ]

    def start(self) -> None:
        if self.rx_in_loop:  # the ACKs' path, kept up to date for the loop
            sim = self.sim
            keys = [(self.dst, self.src, self.port, self.ev ^ 1)]
            if self.pace_in_loop:  # and the data's
                keys.append((self.src, self.dst, self.port, self.ev))
            at = sim.pull_routes(self.flow, keys)
            row = self.flow * R_COLS
            r = sim.ep_state
            r[row + R_ROFF] = at
            r[row + R_CRX] = CRX_ROCE
            if self.pace_in_loop:
                full = _ser(self.mss + self.hdr, self.rc)
                r[row + _core.RP_SERF] = full
                r[row + _core.RP_SERL] = _ser(self.pay[-1] + self.hdr, self.rc) if self.n else full
                r[row + _core.RP_ON] = 1
        self.sim.timer(self.start_ps, self.flow, _PACE)
        self.pacing = True
        self.sim.timer(self.start_ps + self.rto, self.flow, _RTO)
        if self.dcqcn:
            self.sim.timer(self.start_ps + round(self.opt["timer_us"] * PS_PER_US), self.flow, _AUX)

    def _kick(self, now: int) -> None:
        if not self.pacing and not self.failed and self.nxt < self.n:
            self.pacing = True
            self.sim.timer(max(now, self.next_free), self.flow, _PACE)

    def on_timer(self, token: int, now: int) -> None:
        if token == _PACE:
            if self.failed or self.nxt >= self.n or self.una >= self.n:
                self.pacing = False
                return
            seq = self.nxt
            self.nxt += 1
            pkt = self._data_hw(seq) if self.pace_in_loop else self.data(seq)
            if self.rx_in_loop:  # tagged for the loop's receiver (_core._roce_receive)
                self.sim.send_tagged(pkt, self.port, self.ev, self._rx_tag | seq)
            else:
                self.sim.send(pkt, self.port, self.ev)
            if pkt.size != self._ser_size or self.rc != self._ser_rc:  # _ser, remembered
                self._ser_size, self._ser_rc = pkt.size, self.rc
                self._ser_ps = _ser(pkt.size, self.rc)
            self.next_free = now + self._ser_ps
            self.sim.timer(self.next_free, self.flow, _PACE)
        elif token == _RTO:
            if self.una >= self.n or self.failed:
                return
            if self.una == self.check_una and self.nxt > self.una:
                self.retries += 1
                self.event("timeout", self.una)
                if self.retries > self.opt["retries"]:
                    self.fail("retry-exceeded")
                    return
                self.nxt = self.una
                self._kick(now)
            self.check_una = self.una
            self.sim.timer(now + self.rto, self.flow, _RTO)
        else:  # DCQCN timer: alpha decay and rate recovery
            if self.una >= self.n or self.failed:
                return
            g = self.opt["g"]
            if not self.cnp_seen:
                self.alpha *= 1 - g
                self.stage += 1
                if self.stage > 5:  # additive, then (after 5 more stages) hyper increase
                    step = self.opt["rai"] * (5 if self.stage > 10 else 1)
                    self.rt = min(self.line, self.rt + step * self.line)
                self.rc = min(self.line, (self.rt + self.rc) / 2)
            self.cnp_seen = False
            self.sim.timer(now + round(self.opt["timer_us"] * PS_PER_US), self.flow, _AUX)

    def sender_packet(self, pkt: Packet, now: int) -> None:
        if pkt.kind == ACK:
            if pkt.cum > self.una:
                self.una = pkt.cum
                self.retries = 0
                if self.una >= self.n and self.sender_done_ps < 0:
                    self.sender_done_ps = now
        elif pkt.kind == NACK:
            if pkt.cum >= self.una:
                self.una = pkt.cum
                self.nxt = pkt.cum  # go back N
                self._kick(now)
        elif pkt.kind == CNP:
            g = self.opt["g"]
            self.rt = self.rc
            self.rc = max(self.opt["min_rate"] * self.line, self.rc * (1 - self.alpha / 2))
            self.alpha = (1 - g) * self.alpha + g
            self.stage = 0
            self.cnp_seen = True

    def receiver_packet(self, pkt: Packet, now: int) -> None:
        if pkt.kind != DATA or not self.authentic(pkt):
            return
        if pkt.ecn and self.dcqcn and now - self.last_cnp >= self.opt["cnp_us"] * PS_PER_US:
            self.last_cnp = now
            self._reply(self.control(CNP))
        if pkt.trimmed:
            return
        if pkt.seq == self.cum:
            self.place(pkt.seq)
            self.nak_sent = False
            self.unacked += 1
            if self.unacked >= self._ack_every or self.cum in self.msg_end:
                self.unacked = 0
                a = self.control(ACK, pkt.seq)
                a.cum = self.cum
                self._reply(a)
        elif pkt.seq > self.cum:
            if not self.nak_sent:
                self.nak_sent = True
                a = self.control(NACK, pkt.seq)
                a.cum = self.cum
                self._reply(a)
        else:
            a = self.control(ACK, pkt.seq)
            a.cum = self.cum
            self._reply(a)

    def _reply(self, a: Packet) -> None:
        self.sim.send(a, self.port, self.ev ^ 1)

    def compact(self) -> None:
        """Both ends done: the loop receives no more for it (a late packet is out of order:
        Python answers it) and its ACKs' path is no longer kept up to date."""
        sim = self.sim
        sim.ep_state[self.flow * R_COLS + R_CRX] = 0
        sim.ep_state[self.flow * R_COLS + _core.RP_ON] = 0  # its late turns: Python's
        sim.drop_pull_routes(self.flow)
        sim.release_flags(self.flow)

    def retired(self) -> _RoceAnswerer | None:
        """Both ends done: a small answerer (:class:`_RoceAnswerer`) unless a subclass
        handles packets or timers itself."""
        cls = type(self)
        own = (
            cls.on_packet is Connection.on_packet
            and cls.receiver_packet is RoceEcmp.receiver_packet
            and cls.sender_packet is RoceEcmp.sender_packet
            and cls.on_timer is RoceEcmp.on_timer
        )
        return _RoceAnswerer(self) if own else None


class _RoceAnswerer:
    """A retired ``roce-ecmp`` connection (both ends done: every packet placed in order and
    acknowledged), answering late packets as the connection would: a late data packet is
    below the cumulative sequence, so it gets an ACK of it with the cumulative sequence at
    the end, and a CNP first if it is marked and DCQCN's CNP interval has passed (the
    connection's last CNP time carried over); a packet to its sender (ACK, NACK, CNP) and
    every timer change nothing it would send. About 150 bytes instead of several kilobytes
    per finished flow (a chained all-reduce keeps 14,336 of them)."""

    __slots__ = (
        "cnp_us",
        "dcqcn",
        "dst",
        "ev",
        "flow",
        "hdr",
        "job",
        "key",
        "last_cnp",
        "n",
        "port",
        "sim",
        "src",
    )

    def __init__(self, c: RoceEcmp) -> None:
        self.sim, self.flow, self.src, self.dst = c.sim, c.flow, c.src, c.dst
        self.key, self.job, self.n, self.hdr = c.spec.key, c.spec.job, c.cum, c.hdr
        self.port, self.ev = c.port, c.ev
        self.dcqcn, self.cnp_us, self.last_cnp = c.dcqcn, c.opt["cnp_us"], c.last_cnp

    def on_timer(self, token: int, now: int) -> None:
        return  # every timer of a connection done at both ends returns at once

    def made_ack(self, seq: int, now: int) -> None:
        return  # a late ACK: everything was acknowledged

    def made_data(self, tag: int) -> Packet:
        """A late data packet the loop's pacer sent (``RoceEcmp.made_data``; a go-back-N
        resend still in flight when the connection retired): its payload from the row."""
        seq = tag & TAG_SEQ_MASK
        r = self.sim.ep_state
        row = self.flow * R_COLS
        pay = r[row + R_LAST] if seq == r[row + R_N] - 1 else r[row + R_MSS]
        pkt = Packet(DATA, self.flow, self.src, self.dst, seq, pay, self.hdr)
        pkt.key, pkt.job, pkt.msg = self.key, self.job, 0
        pkt.ev, pkt.port = self.ev, self.port
        return pkt

    def on_packet(self, pkt: Packet, now: int) -> None:
        if pkt.kind != DATA or pkt.key != self.key or pkt.job != self.job:
            return
        if pkt.ecn and self.dcqcn and now - self.last_cnp >= self.cnp_us * PS_PER_US:
            self.last_cnp = now
            cnp = Packet(CNP, self.flow, self.dst, self.src, 0, 0, self.hdr)
            self.sim.send(cnp, self.port, self.ev ^ 1)
        if pkt.trimmed:
            return
        a = Packet(ACK, self.flow, self.dst, self.src, pkt.seq, 0, self.hdr)
        a.cum = self.n
        self.sim.send(a, self.port, self.ev ^ 1)


class _Sprayer(Connection):
    """Shared sender machinery of the SACK-based sprayers: a retransmission queue, per-sequence
    transmission numbers, bytes in flight against a window."""

    def _init_sender(self) -> None:
        self.acked: bytearray | memoryview = bytearray(self.n)
        self.outstanding: bytearray | memoryview = bytearray(self.n)
        self.n_acked = 0
        self.nxt = 0
        self.rtx: deque[int] = deque()
        self.inflight = 0
        self.rto = round(self.opt["rto_us"] * PS_PER_US)

    def _next_seq(self) -> int:
        """The next sequence to send (retransmissions first) without taking it; -1 if none."""
        rtx = self.rtx
        while rtx:
            s = rtx[0]
            if self.acked[s] or self.outstanding[s]:
                rtx.popleft()
                continue
            return s
        return self.nxt if self.nxt < self.n else -1

    def _take(self, seq: int) -> None:
        if self.rtx and self.rtx[0] == seq:
            self.rtx.popleft()
        else:
            self.nxt += 1

    def _ack(self, s: int, now: int) -> bool:
        if self.acked[s]:
            return False
        self.acked[s] = 1
        self.n_acked += 1
        if self.outstanding[s]:
            self.outstanding[s] = 0
            self.inflight -= self.pay[s]
        if self.n_acked == self.n and self.sender_done_ps < 0:
            self.sender_done_ps = now
        return True

    def _lost(self, s: int) -> None:
        if self.outstanding[s]:
            self.outstanding[s] = 0
            self.inflight -= self.pay[s]
        if not self.acked[s]:
            self.rtx.append(s)
            self.event("lost", s)


_MASK64 = (1 << 64) - 1
#: the records an mrc-spray sender in the loop starts with: so many per packet of its
#: largest window, and spare (its packets in flight and retransmissions; when they run
#: short the loop stops for Python, which gives it a larger block)
_Q_PER_WINDOW, _Q_SPARE, _Q_GROWTH = 2, 64, 2
#: what an mrc-spray sender in the loop holds of its state between Python's handlers
_NO_STATE: list[int] = []
_NO_RTX: deque[int] = deque()
#: the packets in flight of an EV that has sent none (shared, never appended to)
_NO_PACKETS: list[tuple[int, int, int]] = []
#: EVs whose source routes a connection computes together, on the first use of one of them
_ROUTE_BATCH = 32


class MrcSpray(_Sprayer):
    name: ClassVar[str] = "mrc-spray"
    features: ClassVar[frozenset[str]] = frozenset(
        {
            "spray",
            "multi_plane",
            "sack",
            "selective_retransmit",
            "ecn_per_ev",
            "ev_deny",
            "probe",
            "trim",
            "window",
            "ordered_completions",
            "keys",
            "retry_budget",
            "out_of_order",
            "ecn_cc",
        }
    )
    defaults: ClassVar[dict[str, float]] = {
        "evs": 128,
        "cwnd_bdp": 1.25,
        "max_bdp": 2.0,
        "rto_us": 60.0,
        "probe_us": 20.0,
        "retries": 8,
        "ecn_threshold": 0.25,
        "max_skip": 4,
        "delay_factor": 1.25,
        "ecmp": 0,
    }
    option_types: ClassVar[dict[str, tuple[OptionKind, float, float]]] = {
        "evs": ("int", 1, 256),
        **_WINDOW_OPTIONS,
        "ecn_threshold": ("float", 0.0, 1.0),
        "max_skip": ("int", 0, 1_024),
        "delay_factor": ("float", 1.0, 1_000.0),
        "ecmp": ("bool", 0, 1),
    }
    # the receiver's state the compiled loop shares (_core._mrc_receive), in the engine's row,
    # and what the run reads of the sender's while the loop runs it (_core._mrc_sacked)
    cum = _InRow(R_CUM)
    placed_bytes = _InRow(R_PLACED)
    sender_done_ps = _InRow(_core.R_SDPS)
    retransmissions = _InRow(_core.MR_RETX)

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
        sim.endpoint_row(flow)  # the row holds attributes the base sets
        super().__init__(sim, flow, src, dst, nbytes, start_ps, spec)
        k = int(self.opt["evs"])
        if not 1 <= k <= 256:
            raise PacketSimError(f"{self.name}: evs is 1..256, got {k}")
        self.k = k
        #: source-routed (the default) or hashed hop by hop by ECMP (``ecmp=1``)
        self.sr = not self.opt.get("ecmp", 0)  # a subclass's defaults may lack it
        table = sim.source_routes
        if table is not None and self.sr:  # explicit programs: EV i is the table's index i
            if k > table.evs:
                raise PacketSimError(f"{self.name}: evs {k} exceeds the {table.evs} EVs routed")
            evs = list(range(k))
        else:
            evs = entropy_range((sim.seed, flow), k)
        #: the EVs' values (32-bit) and ports as machine arrays, the denied flags as bytes: a
        #: Python list of 256 ints is about 9 KB, these 1.3 KB (issue 15, pkt-mem2); read as
        #: the lists were (an int per index)
        self.evs: array[int] = array("I", evs)
        self.ev_port: array[int] = array("H", [i % self.ports for i in range(k)])
        #: EV value -> index (the last index of a value, as a dict built in order keeps it);
        #: no dict when the values are distinct and the loop runs the connection
        #: (:meth:`_evi` searches the array then: a handler's look-up, not a packet's)
        self._ev_index: dict[int, int] | None = {ev: i for i, ev in enumerate(evs)}
        self.bad = [False] * k
        self.denied: bytearray | list[bool] = bytearray(k)
        self.penalty = [0] * k  # uses to skip, earned by ECN echoes and trims
        self.level = [0] * k  # the penalty a signal earns: doubles while signals repeat
        #: per EV, its packets in flight in sending order (seq, transmission, time): a list,
        #: not a deque (a few entries each; an empty deque is 10 times an empty list's bytes),
        #: made on the EV's first packet (a short flow uses few of its EVs): until then the
        #: shared empty _NO_PACKETS, which nothing appends to (send_on makes the EV's own)
        self.ev_out: list[list[tuple[int, int, int]]] = [_NO_PACKETS] * k
        self.rr = 0
        self._init_sender()
        #: source routes never change, so the connection holds its paths (EV i's forward and
        #: reverse entries, sim.route_entries) instead of the engine's table keeping a key
        #: per path: about 150 bytes less per path, 256 paths per connection. Not when the
        #: engine's send is overridden (a conformance capture): then through ``send``.
        #: Computed in batches of _ROUTE_BATCH EVs on an EV's first use (_hold): a 250 KB
        #: flow uses about 64 of its 256 EVs; None until then. The same paths either way
        #: (source routes are fixed on the healthy fabric).
        self._held = self.sr and sim.holds_routes
        self._fwd_l: list[tuple[tuple[int, ...] | None, int] | None] = []
        self._rev_l: list[tuple[tuple[int, ...] | None, int] | None] = []
        #: while the loop runs the sender (from start to compaction) the routes' offsets in
        #: its blocks are the only copy (_fwd_l and _rev_l go: 4 KB at 256 EVs): EV i's
        #: forward offset at MB_FWD (NOT_HELD until its batch is computed), its reverse at
        #: the receiver's route slots, their entries by offset (``PacketSim.entry_at``)
        self._lean = False
        cls = type(self)
        own = (
            cls.on_packet is Connection.on_packet
            and cls.receiver_packet is MrcSpray.receiver_packet
            and cls.sender_packet is MrcSpray.sender_packet
            and cls._on_ack is MrcSpray._on_ack
            and cls._reply is MrcSpray._reply
            and cls.send_on is MrcSpray.send_on
            and cls.on_timer is MrcSpray.on_timer
            and cls.pump is MrcSpray.pump
            and cls._pick is MrcSpray._pick
            and cls._window is MrcSpray._window
            and cls._penalise is MrcSpray._penalise
            and cls._lost is MrcSpray._lost
        )
        #: whether the compiled loop receives its data and answers with SACKs
        #: (_core._mrc_receive, once started): held source routes (their reverse routes in
        #: the loop's route slots, filled as _hold computes them), a plain engine, one
        #: message, sequences in the tag's 24 bits
        n = self.n
        self.rx_in_loop = own and self._held and sim.makes_packets and src != dst
        self.rx_in_loop &= len(self.msg_end) == 1 and n <= TAG_SEQ_MASK + 1
        self._rx_tag = TAG_RX | (flow << TAG_FLOW_SHIFT)
        self._slots = -1
        if self.rx_in_loop and len(self._ev_index) == k:  # distinct values: the array serves
            self._ev_index = None
        #: the sender in the loop (_core._mrc_sacked, from start to compact): its state is
        #: the loop's between Python's handlers, each of which takes it (_pull) and gives it
        #: back (_push); the RR blocks of its EVs and packets and of its records
        self._loop = False
        self._in = False
        self._blk = self._qb = -1
        self._qcap = 0
        if self.rx_in_loop:
            self.got = self.acked = self.outstanding = memoryview(b"")
            at = sim.packet_flags(flow, n, self._bind_got, regions=3)
            self._slots = sim.route_slots(k)
            row = flow * R_COLS
            r = sim.ep_state
            r[row + R_N], r[row + R_BOFF], r[row + R_MSS] = n, at, self.mss
            r[row + R_LAST] = self.pay[-1] if n else 0
            r[row + R_ROFF] = self._slots
        first = None
        if self._held:
            self._fwd_l = [None] * k
            self._rev_l = [None] * k
            first = self._hold(0)[0]  # EV 0's path, port 0
        self.rtt = self.base_rtt_ps(0, self.evs[0], first)
        bdp = bdp_bytes(self.line_rate_bps() * self.ports, self.rtt)
        self.cwnd = max(float(self.mss), self.opt["cwnd_bdp"] * bdp)
        self.max_cwnd = max(self.cwnd, self.opt["max_bdp"] * bdp)
        self.win_end = 0
        self.win_acks = 0
        self.win_marks = 0
        self.timer_on = False
        self.probing = False
        self.probe_rounds = 0
        self.sent_at = [0] * self.n
        self.delay_bound = round(self.opt["delay_factor"] * self.rtt)

    def _hold(self, i: int) -> tuple[tuple[int, ...] | None, int]:
        """EV ``i``'s forward entry, its batch's forward and reverse entries computed."""
        lo = i - i % _ROUTE_BATCH
        hi = min(lo + _ROUTE_BATCH, self.k)
        entries = self.sim.pair_entries(self.src, self.dst, self.ev_port[lo:hi], self.evs[lo:hi])
        n = hi - lo
        if not self._lean:
            self._fwd_l[lo:hi] = entries[:n]
            self._rev_l[lo:hi] = entries[n:]
        if self._slots >= 0:  # the SACKs' routes, for the loop's receiver
            self.sim.set_route_slots(self._slots + lo, [e[1] for e in entries[n:]])
        if self._blk >= 0:  # the data's, for the loop's sender
            self.sim.set_route_slots(self._blk + self.k + lo, [e[1] for e in entries[:n]])
        return entries[i - lo]

    def _fwd_entry(self, i: int) -> tuple[tuple[int, ...] | None, int]:
        """EV ``i``'s held forward entry, its batch computed if it was not."""
        if self._lean:
            off = int(self.sim.rr_array[self._blk + self.k + i])
            return self._hold(i) if off == _core.NOT_HELD else self.sim.entry_at(off)
        return self._fwd_l[i] or self._hold(i)

    def _rev_entry(self, i: int) -> tuple[tuple[int, ...] | None, int]:
        """EV ``i``'s held reverse entry, its batch computed if it was not."""
        if self._lean:
            if self.sim.rr_array[self._blk + self.k + i] == _core.NOT_HELD:
                self._hold(i)
            return self.sim.entry_at(int(self.sim.rr_array[self._slots + i]))
        entry = self._rev_l[i]
        if entry is None:
            self._hold(i)
            entry = self._rev_l[i]
            assert entry is not None
        return entry

    @property
    def _fwd(self) -> list[tuple[tuple[int, ...] | None, int] | None]:
        """The held forward entries by EV index (None: not computed), for tests."""
        if not self._lean:
            return self._fwd_l
        rr, at = self.sim.rr_array, self._blk + self.k
        return [
            None if rr[at + i] == _core.NOT_HELD else self.sim.entry_at(int(rr[at + i]))
            for i in range(self.k)
        ]

    @property
    def _rev(self) -> list[tuple[tuple[int, ...] | None, int] | None]:
        """The held reverse entries by EV index (None: not computed), for tests."""
        if not self._lean:
            return self._rev_l
        rr, at = self.sim.rr_array, self._blk + self.k
        return [
            None if rr[at + i] == _core.NOT_HELD else self.sim.entry_at(int(rr[self._slots + i]))
            for i in range(self.k)
        ]

    @property
    def ev_index(self) -> dict[int, int]:
        """EV value -> its index (for plug-ins and tests; the transport uses :meth:`_evi`)."""
        if self._ev_index is not None:
            return self._ev_index
        return {ev: i for i, ev in enumerate(self.evs)}

    def _evi(self, ev: int) -> int:
        """The index of EV value ``ev``, -1 if none (``ev_index.get(ev, -1)``)."""
        d = self._ev_index
        if d is not None:
            return d.get(ev, -1)
        if 0 <= ev <= 0xFFFFFFFF:
            try:
                return self.evs.index(ev)  # distinct values: the first is the last
            except ValueError:
                pass
        return -1

    def _bind_got(self, view: memoryview) -> None:
        """The received, acknowledged and outstanding flags as views of the engine's array
        (``packet_flags``)."""
        n = self.n
        self.got, self.acked, self.outstanding = view[:n], view[n : 2 * n], view[2 * n :]

    # -- the sender in the loop --------------------------------------------------------------

    def _loop_on(self) -> None:
        """Hand the sender to the loop (at start): its blocks made, its state written."""
        sim, k, n = self.sim, self.k, self.n
        self._blk = sim.route_slots(7 * k + 2 * n)
        fwd = [_core.NOT_HELD if e is None else e[1] for e in self._fwd_l]
        evmap = [self._evi(ev) for ev in self.evs]
        sim.set_route_slots(self._blk, evmap + fwd)
        self._qcap = _Q_PER_WINDOW * int(self.max_cwnd // self.mss) + _Q_SPARE
        self._qb = sim.route_slots(4 * self._qcap)
        row = self.flow * R_COLS
        r = sim.ep_state
        r[row + _core.MR_A], r[row + _core.MR_QB], r[row + _core.MR_K] = self._blk, self._qb, k
        r[row + _core.MR_RTT], r[row + _core.MR_DBOUND] = self.rtt, self.delay_bound
        r[row + _core.MR_RTO] = self.rto
        r[row + _core.MR_MAXSKIP] = int(self.opt["max_skip"])
        f = r.cast("B").cast("d")
        f[row + _core.MR_MAXCWND] = self.max_cwnd
        f[row + _core.MR_ECNT] = float(self.opt["ecn_threshold"])
        self._push()
        r[row + _core.MR_ON] = 1
        self._loop = True
        if self._held and self._slots >= 0:  # the blocks hold the routes' offsets from now on
            self._lean = True
            self._fwd_l = self._rev_l = []

    def _enter(self) -> bool:
        """At the start of a Python handler: take the sender's state from the loop (once,
        for nested handlers); True if this call did (then :meth:`_leave` gives it back)."""
        if self._loop and not self._in:
            self._pull()
            self._in = True
            return True
        return False

    def _leave(self, entered: bool) -> None:
        if entered:
            self._in = False
            self._push()

    def _pull(self) -> None:
        """The sender's state as the Python handlers keep it, from the loop's."""
        sim, k, n = self.sim, self.k, self.n
        row = self.flow * R_COLS
        r = sim.ep_state
        (
            self.snd_cum, self.n_acked, self.inflight, self.nxt, self.rr, _, _,
            self.win_end, self.win_acks, self.win_marks, timer, failed,
        ) = r[row + _core.MR_SNDCUM : row + _core.MR_FAILED + 1].tolist()  # fmt: skip
        self.timer_on, self.failed = bool(timer), bool(failed)
        self.cwnd = r.cast("B").cast("d")[row + _core.MR_CWND]
        blk = sim.rr_array[self._blk + 2 * k : self._blk + 7 * k + 2 * n].tolist()
        self.penalty, self.level = blk[:k], blk[k : 2 * k]
        self.bad = [x != 0 for x in blk[2 * k : 3 * k]]
        self.tx_count, self.sent_at = blk[5 * k : 5 * k + n], blk[5 * k + n :]
        ev_out: list[list[tuple[int, int, int]]] = [[] for _ in range(k)]
        rtx: deque[int] = deque()
        for i, seq, tx, t in _core.mrc_export(sim.ep_array, sim.rr_array, self.flow).tolist():
            if i >= 0:
                ev_out[i].append((seq, tx, t))
            else:
                rtx.append(seq)
        self.ev_out, self.rtx = ev_out, rtx

    def _push(self) -> None:
        """The Python handlers' state of the sender back to the loop."""
        sim, k = self.sim, self.k
        row = self.flow * R_COLS
        r = sim.ep_state
        for col, v in (
            (_core.MR_SNDCUM, self.snd_cum), (_core.MR_NACKED, self.n_acked),
            (_core.MR_INFL, self.inflight), (_core.MR_NXT, self.nxt), (_core.MR_RR, self.rr),
            (_core.MR_WEND, self.win_end), (_core.MR_WACKS, self.win_acks),
            (_core.MR_WMARKS, self.win_marks), (_core.MR_TIMER, int(self.timer_on)),
            (_core.MR_FAILED, int(self.failed)),
        ):  # fmt: skip
            r[row + col] = v
        r.cast("B").cast("d")[row + _core.MR_CWND] = self.cwnd
        state = self.penalty + self.level + [int(b) for b in self.bad]
        sim.set_route_slots(self._blk + 2 * k, state)
        sim.set_route_slots(self._blk + 7 * k, self.tx_count + self.sent_at)
        rows = [(i, s, t, tm) for i, dq in enumerate(self.ev_out) for s, t, tm in dq]
        rows += [(-1, s, 0, 0) for s in self.rtx]
        if len(rows) + _Q_SPARE > self._qcap:  # a larger block of records
            sim.free_route_slots(self._qb, 4 * self._qcap)
            self._qcap = _Q_GROWTH * len(rows) + _Q_SPARE
            self._qb = sim.route_slots(4 * self._qcap)
            r[row + _core.MR_QB] = self._qb
        arr = np.array(rows, dtype=np.int64).reshape(-1, 4)
        _core.mrc_import(sim.ep_array, sim.rr_array, self.flow, arr, self._qcap)
        # the loop's now: the Python copies go until the next handler takes them (_pull)
        self.tx_count = self.sent_at = self.penalty = self.level = _NO_STATE
        self.ev_out, self.bad = [], []
        self.rtx = _NO_RTX

    def made_pump(self, i: int, seq: int, now: int) -> None:
        """The loop's pump stopped before a send it could not make (``EV_MRC_PUMP``): send
        ``seq`` on EV ``i`` (its route computed here) and pump on, or (``i`` -1) pump."""
        e = self._enter()
        if i >= 0:
            self._take(seq)
            self.send_on(seq, i, now)
        self.pump(now)
        self._leave(e)

    def path_keys(self) -> list[tuple[int, int, int, int, bool]]:
        if self._held:  # held by the connection
            return []
        out = []
        sr = self.sr
        for ev, port in zip(self.evs, self.ev_port, strict=True):
            out.append((self.src, self.dst, port, ev, sr))
            out.append((self.dst, self.src, port, ev, sr))
        return out

    def start(self) -> None:
        if self.rx_in_loop:  # from now on the loop receives its data and SACKs
            self.sim.ep_state[self.flow * R_COLS + R_CRX] = CRX_MRC
            self._loop_on()
        self.sim.timer(self.start_ps, self.flow, _PACE)

    def compact(self) -> None:
        """Every packet acknowledged: no EV is picked, timed or probed again, and a late ACK
        finds no EV (its echo is unknown), so the per-EV state goes (128 deques and lists).
        The loop receives no more for it (late packets: Python's answerer; a late SACK the
        loop made: :meth:`made_pull`), its route slots are given back."""
        if self.rx_in_loop and self._slots >= 0:
            sim = self.sim
            if self._loop:  # the sender's state back from the loop, its blocks given back
                self._pull()
                self._loop = False
                sim.ep_state[self.flow * R_COLS + _core.MR_ON] = 0
                self._lean = False
                sim.free_route_slots(self._blk, 7 * self.k + 2 * self.n)
                sim.free_route_slots(self._qb, 4 * self._qcap)
                self._blk = self._qb = -1
            sim.ep_state[self.flow * R_COLS + R_CRX] = 0
            sim.release_flags(self.flow)
            sim.free_route_slots(self._slots, self.k)
            self._slots = -1
        self._ev_index = {}
        self.ev_out = []
        self._fwd_l = self._rev_l = []
        self.evs = self.ev_port = array("I")
        self.bad = self.denied = []
        self.penalty = self.level = []

    def retired(self) -> _Answerer:
        return _Answerer(self, echo_path=False, source_route=self.sr)

    def deny_ev(self, ev: int) -> None:
        """The control plane denies entropy value ``ev``: never used again."""
        i = self._evi(ev)
        if i >= 0:
            e = self._enter()
            self.denied[i] = self.bad[i] = True
            self.event("ev-deny", i, ev)
            self._leave(e)

    def withdraw_ev(self, ev: int, now: int) -> None:
        """The endpoint is told that ``ev``'s path is dead (a notified failover): the EV is
        denied, its packets in flight count as lost at once and go out on the other EVs."""
        e = self._enter()
        self._withdraw_ev(ev, now)
        self._leave(e)

    def _withdraw_ev(self, ev: int, now: int) -> None:
        i = self._evi(ev)
        if i < 0 or self.denied[i]:
            return
        self.deny_ev(ev)
        dq = self.ev_out[i]
        while dq:
            s, t, _ = dq.pop(0)
            if not self.acked[s] and self.tx_count[s] == t:
                self._lost(s)
        if self.n_acked < self.n and not self.failed:
            self.pump(now)

    def _penalise(self, i: int) -> None:
        self.level[i] = min(int(self.opt["max_skip"]), 2 * self.level[i] + 1)
        self.penalty[i] = self.level[i]

    def _pick(self, now: int) -> int:
        """The next good EV round-robin, skipping penalised EVs (a congestion signal on an EV
        earns 1, 3, 7... skipped turns while signals repeat, up to ``max_skip``; an unmarked
        ACK halves that level); the least penalised good EV if all are penalised."""
        k = self.k
        best, best_pen = -1, 1 << 30
        i = self.rr
        pen = self.penalty
        for _ in range(k):
            i = i + 1 if i + 1 < k else 0
            if self.bad[i]:
                continue
            if pen[i] == 0:
                self.rr = i
                return i
            pen[i] -= 1
            if pen[i] < best_pen:
                best, best_pen = i, pen[i]
        if best >= 0:
            self.rr = best
        return best

    def pump(self, now: int) -> None:
        sim = self.sim
        while not self.failed:
            seq = self._next_seq()
            if seq < 0 or self.inflight + self.pay[seq] > self.cwnd:
                break
            i = self._pick(now)
            if i < 0:
                break
            self._take(seq)
            self.send_on(seq, i, now)
        if not self.timer_on and self.n_acked < self.n and not self.failed:
            self.timer_on = True
            sim.timer(now + self.rto // 2, self.flow, _RTO)

    def send_on(self, seq: int, i: int, now: int) -> None:
        pkt = self.data(seq)
        self.sent_at[seq] = now
        dq = self.ev_out[i]
        if dq is _NO_PACKETS:
            dq = self.ev_out[i] = []
        dq.append((seq, self.tx_count[seq], now))
        self.outstanding[seq] = 1
        self.inflight += pkt.payload
        if self._slots >= 0:  # tagged for the loop's receiver (_core._mrc_receive)
            entry = self._fwd_entry(i)
            tag = self._rx_tag | (i << TAG_EVI_SHIFT) | seq
            self.sim.send_routed(pkt, self.ev_port[i], self.evs[i], entry, tag)
        elif self._held:
            entry = self._fwd_entry(i)
            self.sim.send_routed(pkt, self.ev_port[i], self.evs[i], entry)
        else:
            self.sim.send(pkt, self.ev_port[i], self.evs[i], source_route=self.sr)

    def made_sack(self, count: int, cum: int, sack: int, ecn: int, now: int) -> None:
        """A SACK the loop made (``_core._mrc_receive``) reached the sender: the ACK of
        sequence ``count & TAG_SEQ_MASK`` sent on EV index ``count >> TAG_EVI_SHIFT``, with
        the cumulative sequence, the 64 SACK bits (as a signed 64-bit integer) and the ECN
        echo; handled as :meth:`sender_packet` handles the ACK it stands for."""
        i = self._evi(self.evs[count >> TAG_EVI_SHIFT])
        e = self._enter()
        self._sacked(cum, sack & _MASK64, count & TAG_SEQ_MASK, ecn != 0, i, now)
        self._leave(e)

    def made_data(self, tag: int) -> Packet:
        """The object of a data packet the loop sent (``_core._mrc_pump``), for the Python
        receiver: the fields :meth:`data` gives it, on the EV of its index."""
        seq = tag & TAG_SEQ_MASK
        i = (tag >> TAG_EVI_SHIFT) & 255
        pkt = Packet(DATA, self.flow, self.src, self.dst, seq, self.pay[seq], self.hdr)
        pkt.key, pkt.job, pkt.msg = self.spec.key, self.spec.job, 0
        pkt.ev, pkt.port = self.evs[i], self.ev_port[i]
        return pkt

    def made_pull(self, count: int, now: int) -> None:
        """A SACK the loop made reached the sender after both ends were done (the loop gave
        it to Python, :meth:`compact`): every packet was acknowledged, nothing changes."""
        return

    def sack_bits(self, width: int = 64) -> int:
        """Received packets above ``cum`` (the base's), read from the flags the loop shares
        when it receives for the connection (it does not keep ``rbits``)."""
        if not self.rx_in_loop:
            return super().sack_bits(width)
        got, cum = self.got, self.cum
        bits = 0
        for j in range(min(width, self.n - cum - 1)):
            if got[cum + 1 + j]:
                bits |= 1 << j
        return bits

    def on_timer(self, token: int, now: int) -> None:
        e = self._enter()
        self._on_timer(token, now)
        self._leave(e)

    def _on_timer(self, token: int, now: int) -> None:
        if token == _PACE:
            self.window_event(-1, int(self.cwnd))
            self.pump(now)
        elif token == _RTO:
            self.timer_on = False
            if self.n_acked >= self.n or self.failed:
                return
            acked, tx_count, rto = self.acked, self.tx_count, self.rto
            for i, dq in enumerate(self.ev_out):
                while dq:
                    s, t, sent = dq[0]
                    if acked[s] or tx_count[s] != t:
                        dq.pop(0)
                        continue
                    if sent + rto <= now:
                        self._ev_timeout(i, now)
                    break
            self.pump(now)
            if not self.timer_on and self.n_acked < self.n and not self.failed:
                self.timer_on = True
                self.sim.timer(now + self.rto // 2, self.flow, _RTO)
        else:
            self._probe(now)

    def _ev_timeout(self, i: int, now: int) -> None:
        self.bad[i] = True
        self.event("ev-down", i, self.evs[i])
        dq = self.ev_out[i]
        while dq:
            s, t, _ = dq.pop(0)
            if not self.acked[s] and self.tx_count[s] == t:
                self._lost(s)
        if not self.probing:
            self.probing = True
            self.sim.timer(now + round(self.opt["probe_us"] * PS_PER_US), self.flow, _AUX)

    def _probe(self, now: int) -> None:
        self.probing = False
        if self.failed or self.n_acked >= self.n:
            return
        targets = [i for i in range(self.k) if self.bad[i] and not self.denied[i]]
        if not targets:
            return
        if all(self.bad):
            self.probe_rounds += 1
            if self.probe_rounds > self.opt["retries"]:
                self.fail("all-paths-dead")
                return
        for i in targets:
            p = Packet(PROBE, self.flow, self.src, self.dst, 0, 0, self.hdr)
            p.key, p.job = self.spec.key, self.spec.job
            if self._held:
                entry = self._fwd_entry(i)
                self.sim.send_routed(p, self.ev_port[i], self.evs[i], entry)
            else:
                self.sim.send(p, self.ev_port[i], self.evs[i], source_route=self.sr)
        self.probing = True
        self.sim.timer(now + round(self.opt["probe_us"] * PS_PER_US), self.flow, _AUX)

    def sender_packet(self, pkt: Packet, now: int) -> None:
        e = self._enter()
        self._sender_packet(pkt, now)
        self._leave(e)

    def _sender_packet(self, pkt: Packet, now: int) -> None:
        i = self._evi(pkt.echo)
        if pkt.kind == ACK:
            self._on_ack(pkt, i, now)
        elif pkt.kind == NACK:  # a trimmed packet: resend, the EV stays good
            if i >= 0:
                self._penalise(i)
            self.win_marks += 1
            self.win_acks += 1
            s = pkt.seq
            if self.outstanding[s]:
                self._lost(s)
            self.pump(now)
        elif pkt.kind == PROBE_ACK and i >= 0 and self.bad[i] and not self.denied[i]:
            self.bad[i] = False
            self.probe_rounds = 0
            self.event("ev-up", i, self.evs[i])
            self.pump(now)

    def _on_ack(self, pkt: Packet, i: int, now: int) -> None:
        self._sacked(pkt.cum, pkt.sack, pkt.seq, pkt.ecn, i, now)

    def _sacked(self, cum: int, bits: int, seq: int, ecn: bool, i: int, now: int) -> None:
        """An ACK of ``seq`` on EV index ``i`` (-1: unknown) with its cumulative sequence,
        SACK bits and ECN echo (:meth:`_on_ack`, :meth:`made_sack`)."""
        for s in range(self._acked_upto(), cum):
            self._ack(s, now)
        self.snd_cum = max(self.snd_cum, cum)
        self._ack(seq, now)
        if i >= 0:
            dq = self.ev_out[i]
            while dq:
                s, t, _ = dq.pop(0)
                if s == seq:
                    break
                if (
                    not self.acked[s]
                    and self.tx_count[s] == t
                    and not (s > cum and s - cum - 1 < 64 and bits >> (s - cum - 1) & 1)
                ):
                    self._lost(s)
            if ecn:
                self._penalise(i)
            elif self.level[i]:
                self.level[i] >>= 1
        self._window(ecn and now - self.sent_at[seq] > self.delay_bound, now)
        self.pump(now)

    snd_cum = 0

    def _acked_upto(self) -> int:
        return self.snd_cum

    def _window(self, marked: bool, now: int) -> None:
        self.win_acks += 1
        if marked:
            self.win_marks += 1
        else:
            self.cwnd = min(self.max_cwnd, self.cwnd + self.mss * self.mss / self.cwnd)
            if self.trace is not None:
                self.window_event(-1, int(self.cwnd))
        if now >= self.win_end:
            frac = self.win_marks / max(self.win_acks, 1)
            if frac > self.opt["ecn_threshold"]:
                self.cwnd = max(float(self.mss), self.cwnd * (1 - frac / 2))
            self.win_end = now + self.rtt
            self.win_acks = self.win_marks = 0
            self.window_event(-1, int(self.cwnd))

    def receiver_packet(self, pkt: Packet, now: int) -> None:
        if not self.authentic(pkt):
            return
        if pkt.kind == PROBE:
            a = self.control(PROBE_ACK)
            a.echo = pkt.ev
            self._reply(a, pkt)
            return
        if pkt.trimmed:
            a = self.control(NACK, pkt.seq)
        else:
            self.place(pkt.seq)
            a = self.control(ACK, pkt.seq)
            a.sack = self.sack_bits(64)
            a.ecn = pkt.ecn
        a.echo = pkt.ev
        a.cum = self.cum
        self._reply(a, pkt)

    def _reply(self, a: Packet, to: Packet) -> None:
        """Send ``a`` back on the reverse path of ``to``'s port and EV."""
        i = self._evi(to.ev) if self._held else -1
        if i >= 0 and self.ev_port[i] == to.port:
            entry = self._rev_entry(i)
            self.sim.send_routed(a, to.port, to.ev, entry)
        else:
            self.sim.send(a, to.port, to.ev, source_route=self.sr)


class MetaRoce(_Sprayer):
    name: ClassVar[str] = "metaroce"
    features: ClassVar[frozenset[str]] = frozenset(
        {
            "spray",
            "multi_plane",
            "sack",
            "selective_retransmit",
            "path_windows",
            "window",
            "probe",
            "ordered_completions",
            "keys",
            "retry_budget",
            "out_of_order",
            "rate_hint",
            "ecn_cc",
            "path_sack",
        }
    )
    defaults: ClassVar[dict[str, float]] = {
        "paths": 8,
        "cwnd_bdp": 1.25,
        "max_bdp": 2.0,
        "rto_us": 60.0,
        "probe_us": 20.0,
        "retries": 8,
    }
    option_types: ClassVar[dict[str, tuple[OptionKind, float, float]]] = {
        "paths": ("int", 1, 256),
        **_WINDOW_OPTIONS,
    }

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
        super().__init__(sim, flow, src, dst, nbytes, start_ps, spec)
        p = int(self.opt["paths"])
        if not 1 <= p <= 256:
            raise PacketSimError(f"{self.name}: paths is 1..256, got {p}")
        self.p = p
        self.gen = [0] * p
        self.pport = [i % self.ports for i in range(p)]
        self.pev = entropy_range((sim.seed, flow), p, (0,))
        self.failures = [0] * p
        self.pfailed = [False] * p
        self.pnext = [0] * p
        self.pin = [0] * p
        self.pout: list[deque[tuple[int, int, int, int]]] = [deque() for _ in range(p)]
        self.pwin_end = [0] * p
        self._init_sender()
        self.rtt = self.base_rtt_ps(0, self.pev[0])
        self.line = float(self.line_rate_bps() * self.ports)
        bdp = bdp_bytes(self.line, self.rtt)
        self.pwin = [max(float(self.mss), self.opt["cwnd_bdp"] * bdp / p)] * p
        self.pmax = max(self.pwin[0], self.opt["max_bdp"] * bdp / p)
        self.rate = self.line
        self.next_free = 0
        self.pace_armed = False
        self.timer_on = False
        self.probing = False
        self.probe_rounds = 0
        self.rr = 0
        # receiver: per path
        self.rcum = [0] * p
        self.rpbits = [0] * p
        self.rgen = [0] * p
        self.r_active = False

    def path_keys(self) -> list[tuple[int, int, int, int, bool]]:
        out = []
        for ev, port in zip(self.pev, self.pport, strict=True):
            out.append((self.src, self.dst, port, ev, False))
            out.append((self.dst, self.src, port, ev, False))
        return out

    def start(self) -> None:
        self.sim.timer(self.start_ps, self.flow, _PACE)

    def _pick(self, size: int) -> int:
        p = self.p
        i = self.rr
        for _ in range(p):
            i = i + 1 if i + 1 < p else 0
            if not self.pfailed[i] and self.pin[i] + size <= self.pwin[i]:
                self.rr = i
                return i
        return -1

    def pump(self, now: int) -> None:
        while not self.failed:
            seq = self._next_seq()
            if seq < 0:
                break
            if now < self.next_free:
                if not self.pace_armed:
                    self.pace_armed = True
                    self.sim.timer(self.next_free, self.flow, _PACE)
                break
            i = self._pick(self.pay[seq])
            if i < 0:
                break
            self._take(seq)
            self.send_on(seq, i, now)
        if not self.timer_on and self.n_acked < self.n and not self.failed:
            self.timer_on = True
            self.sim.timer(now + self.rto // 2, self.flow, _RTO)

    def send_on(self, seq: int, i: int, now: int) -> None:
        pkt = self.data(seq)
        pkt.path = i
        pkt.pseq = self.pnext[i]
        self.pnext[i] += 1
        self.pout[i].append((pkt.pseq, seq, self.tx_count[seq], now))
        self.outstanding[seq] = 1
        self.inflight += pkt.payload
        self.pin[i] += pkt.payload
        self.next_free = max(now, self.next_free) + _ser(pkt.size, self.rate)
        self.sim.send(pkt, self.pport[i], self.pev[i])

    def on_timer(self, token: int, now: int) -> None:
        if token == _PACE:
            self.pace_armed = False
            if now == self.start_ps:
                for i in range(self.p):
                    self.window_event(i, int(self.pwin[i]))
            self.pump(now)
        elif token == _RTO:
            self.timer_on = False
            if self.n_acked >= self.n or self.failed:
                return
            for i in range(self.p):
                dq = self.pout[i]
                while dq:
                    _, s, t, sent = dq[0]
                    if self.acked[s] or self.tx_count[s] != t:
                        dq.popleft()
                        continue
                    if sent + self.rto <= now:
                        self._path_timeout(i, now)
                    break
            self.pump(now)
            if not self.timer_on and self.n_acked < self.n and not self.failed:
                self.timer_on = True
                self.sim.timer(now + self.rto // 2, self.flow, _RTO)
        else:
            self._probe(now)

    def _drop_path_packets(self, i: int) -> None:
        dq = self.pout[i]
        while dq:
            _, s, t, _ = dq.popleft()
            if not self.acked[s] and self.tx_count[s] == t:
                self._lost(s)
        self.pin[i] = 0

    def _path_timeout(self, i: int, now: int) -> None:
        self.pfailed[i] = True
        self.event("path-down", i, self.pev[i])
        self._drop_path_packets(i)
        self.pnext[i] = 0
        self.pin[i] = 0
        if not self.probing:
            self.probing = True
            self.sim.timer(now + round(self.opt["probe_us"] * PS_PER_US), self.flow, _AUX)

    def _new_port(self, i: int) -> None:
        """A new UDP source port (EV) for path ``i``; every second one on the next NIC port
        (plane failover)."""
        self.gen[i] += 1
        self.failures[i] += 1
        if self.failures[i] >= 2 and self.ports > 1:
            self.pport[i] = (self.pport[i] + 1) % self.ports
            self.failures[i] = 0
        self.pev[i] = entropy(self.sim.seed, self.flow, i, self.gen[i])

    def _probe(self, now: int) -> None:
        self.probing = False
        if self.failed or self.n_acked >= self.n:
            return
        targets = [i for i in range(self.p) if self.pfailed[i]]
        if not targets:
            return
        if len(targets) == self.p:
            self.probe_rounds += 1
            if self.probe_rounds > self.opt["retries"]:
                self.fail("all-paths-dead")
                return
        for i in targets:
            self._new_port(i)
            pr = Packet(PROBE, self.flow, self.src, self.dst, 0, 0, self.hdr)
            pr.key, pr.job, pr.path = self.spec.key, self.spec.job, i
            pr.pseq = self.gen[i]
            self.sim.send(pr, self.pport[i], self.pev[i])
        self.probing = True
        self.sim.timer(now + round(self.opt["probe_us"] * PS_PER_US), self.flow, _AUX)

    def sender_packet(self, pkt: Packet, now: int) -> None:
        i = pkt.path
        if pkt.kind == PROBE_ACK:
            if 0 <= i < self.p and self.pfailed[i] and pkt.pseq == self.gen[i]:
                self.pfailed[i] = False
                self.probe_rounds = 0
                self.pnext[i] = 0
                self.event("path-up", i, self.pev[i])
                self.pump(now)
            return
        if pkt.kind != ACK or not 0 <= i < self.p:
            return
        if pkt.hint > 0:
            self.rate = min(self.line, float(pkt.hint))
        self._ack(pkt.seq, now)
        if self.pfailed[i] or pkt.echo != self.pev[i]:
            self.pump(now)
            return
        cum, bits = pkt.cum, pkt.sack
        dq = self.pout[i]
        while dq:
            ps, s, t, _ = dq[0]
            if ps == pkt.pseq:
                dq.popleft()
                self.pin[i] -= self.pay[s]
                break
            if ps > pkt.pseq:
                break
            dq.popleft()
            self.pin[i] -= self.pay[s]
            covered = ps < cum or (ps > cum and ps - cum - 1 < 256 and bits >> (ps - cum - 1) & 1)
            if not covered and not self.acked[s] and self.tx_count[s] == t:
                self._lost(s)  # a gap on the path: retransmit at once
        self.pin[i] = max(0, self.pin[i])
        w = self.pwin[i]
        if pkt.ecn:
            if now >= self.pwin_end[i]:
                self.pwin[i] = max(float(self.mss), w * 0.7)
                self.pwin_end[i] = now + self.rtt
                self.window_event(i, int(self.pwin[i]))
        else:
            nw = min(self.pmax, w + self.mss * self.mss / w)
            if int(nw) != int(w):
                self.pwin[i] = nw
                self.window_event(i, int(nw))
            else:
                self.pwin[i] = nw
        self.pump(now)

    def rcum_reset(self, i: int) -> None:
        """A restored path starts its sequence space again (sender and receiver agree through
        the probe's generation)."""
        self.rcum[i] = 0
        self.rpbits[i] = 0

    def _hint(self) -> int:
        rates = self.sim.shared.setdefault("rx_rate", {})
        active = self.sim.shared.setdefault("rx_active", {})
        rate = rates.get(self.dst, self.line)
        return int(rate // max(1, active.get(self.dst, 1)))

    def receiver_packet(self, pkt: Packet, now: int) -> None:
        if not self.authentic(pkt):
            return
        i = pkt.path
        if not 0 <= i < self.p:
            return
        if pkt.kind == PROBE:
            if pkt.pseq != self.rgen[i]:
                self.rcum_reset(i)
                self.rgen[i] = pkt.pseq
            a = self.control(PROBE_ACK)
            a.path, a.pseq, a.echo = i, pkt.pseq, pkt.ev
            self.sim.send(a, pkt.port, pkt.ev)
            return
        if not self.r_active and self.finish_ps < 0:
            self.r_active = True
            active = self.sim.shared.setdefault("rx_active", {})
            active[self.dst] = active.get(self.dst, 0) + 1
        if pkt.trimmed:
            return
        self.place(pkt.seq)
        if self.finish_ps >= 0 and self.r_active:
            self.r_active = False
            active = self.sim.shared["rx_active"]
            active[self.dst] -= 1
        ps = pkt.pseq
        if ps >= self.rcum[i]:
            self.rpbits[i] |= 1 << ps
            c = self.rcum[i]
            bits = self.rpbits[i]
            while bits >> c & 1:
                c += 1
            self.rcum[i] = c
        a = self.control(ACK, pkt.seq)
        a.path, a.pseq, a.echo, a.ecn = i, ps, pkt.ev, pkt.ecn
        a.cum = self.rcum[i]
        a.sack = (self.rpbits[i] >> (a.cum + 1)) & ((1 << 256) - 1)
        a.hint = self._hint()
        self.sim.send(a, pkt.port, pkt.ev)


class _Pacer:
    """The pull pacer of one receiving host, shared by its connections (receiver-driven); an
    endpoint of the engine of its own, for its timer.

    Compiled (``self.compiled``, on a plain engine: no tracer, no impairment, ``send`` not
    overridden): its queue, its turns and the pulls they send run in the compiled loop
    (``_core._pace``, the same steps as :meth:`on_timer`) over the engine's endpoint state
    (``R_*``), and :meth:`request` only queues the connection and arms the turn. Otherwise
    its turns are timers handled here, each pull sent through ``sim.send``."""

    def __init__(self, sim: PacketSim, host: int) -> None:
        self.sim = sim
        self.host = host
        self.queue: deque[ReceiverDriven] = deque()
        self.armed = False
        self.id = sim.add(self)
        self.next_free = 0
        self.compiled = (
            sim.tracer is None and sim.impair is None and type(sim).send is PacketSim.send
        )
        link = int(sim.router.host_link[host, 0])
        self.line = sim.base_rate[2 * link] * sim.ports_per_host  # unless set_receiver_rate
        self.rates = sim.shared.setdefault("rx_rate", {})
        self.packet_bytes = sim.cfg.mtu + sim.cfg.header
        self._rate: float = -1.0
        self._interval = 0
        if self.compiled:
            row = self.id * R_COLS
            r = sim.ep_state
            r[row + R_HEAD] = r[row + R_TAIL] = NIL
            self.rate_changed()

    def rate_changed(self) -> None:
        """``set_receiver_rate`` changed this host's rate: the compiled turns' interval."""
        if self.compiled:
            self.sim.ep_state[self.id * R_COLS + R_IVL] = self.interval()

    def interval(self) -> int:
        rate = self.rates.get(self.host, self.line)
        if rate != self._rate:  # set_receiver_rate changed it (or the first pull)
            self._rate = rate
            self._interval = _ser(self.packet_bytes, rate)
        return self._interval

    def request(self, conn: ReceiverDriven, now: int) -> None:
        if self.compiled:
            r = self.sim.ep_state
            c = conn.flow * R_COLS
            if conn.pull_at < 0:
                conn.pull_at = self.sim.pull_routes(conn.flow, conn.loop_keys())
                r[c + R_ROFF] = conn.pull_at
                r[c + R_PACER] = self.id
                # from now on the loop receives its data and ACKs (_core._receive)
                r[c + R_CRX] = CRX_RD if conn.rx_in_loop else 0
            want = r[c + R_WANT]
            h = self.id * R_COLS
            if want == 0:  # to the back of the queue (_core._pace_append)
                r[c + R_QNEXT] = NIL
                tail = r[h + R_TAIL]
                if tail == NIL:
                    r[h + R_HEAD] = conn.flow
                else:
                    r[tail * R_COLS + R_QNEXT] = conn.flow
                r[h + R_TAIL] = conn.flow
            r[c + R_WANT] = want + 1
            if not r[h + R_ARMED]:
                r[h + R_ARMED] = 1
                self.sim.push_pace(max(now, r[h + R_NEXTFREE]), self.id)
            return
        if conn.pull_wanted == 0:
            self.queue.append(conn)
        conn.pull_wanted += 1
        if not self.armed:
            self.armed = True
            self.sim.timer(max(now, self.next_free), self.id, 0)

    def on_timer(self, token: int, now: int) -> None:
        self.armed = False
        while self.queue:
            conn = self.queue.popleft()
            if conn.pull_wanted <= 0 or (conn.sender_done_ps >= 0 and conn.finish_ps >= 0):
                conn.pull_wanted = 0
                continue
            conn.pull_wanted -= 1
            if conn.pull_wanted > 0:
                self.queue.append(conn)
            conn.send_pull()
            self.next_free = now + self.interval()
            if self.queue:
                self.armed = True
                self.sim.timer(self.next_free, self.id, 0)
            return

    def on_packet(self, pkt: Packet, now: int) -> None:
        return


class ReceiverDriven(_Sprayer):
    name: ClassVar[str] = "receiver-driven"
    features: ClassVar[frozenset[str]] = frozenset(
        {
            "spray",
            "multi_plane",
            "trim",
            "receiver_credit",
            "selective_retransmit",
            "ordered_completions",
            "keys",
            "retry_budget",
            "out_of_order",
        }
    )
    wants_trimming: ClassVar[bool] = True
    #: NDP's shallow queues: 12 full packets per port, so that the first window's burst is
    #: trimmed instead of becoming a standing queue that pulls keep full
    wants_buffer_bytes: ClassVar[int | None] = 12 * (4096 + 64)  # at the default MTU
    wants_buffer_packets: ClassVar[int | None] = 12
    defaults: ClassVar[dict[str, float]] = {
        "evs": 64,
        "iw_bdp": 1.0,
        "rto_us": 100.0,
        "retries": 8,
    }
    option_types: ClassVar[dict[str, tuple[OptionKind, float, float]]] = {
        "evs": ("int", 1, 256),
        "iw_bdp": ("float", 0.0, 1_000.0),
        "rto_us": ("float", 1.0, 1e9),
        "retries": ("int", 0, 1_000),
    }
    keeps_rbits: ClassVar[bool] = False  # no SACK
    # the state the compiled loop shares (_core._receive, _core._acked), in the engine's row
    cum = _InRow(R_CUM)
    placed_bytes = _InRow(R_PLACED)
    n_acked = _InRow(R_NACKED)
    inflight = _InRow(R_INFL)
    sender_done_ps = _InRow(R_SDPS)
    nxt = _InRow(R_NXT)
    rr = _InRow(R_RR)
    pulls_seen = _InRow(R_PSEEN)
    credit = _InRow(R_CREDIT)

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
        sim.endpoint_row(flow)  # the row holds attributes the base sets
        super().__init__(sim, flow, src, dst, nbytes, start_ps, spec)
        k = int(self.opt["evs"])
        if not 1 <= k <= 256:
            raise PacketSimError(f"{self.name}: evs is 1..256, got {k}")
        self.k = k
        self.evs = entropy_range((sim.seed, flow), k)
        self.ev_port = [i % self.ports for i in range(k)]
        self.bad = [False] * k
        self.rr = flow % k
        self._init_sender()
        n = self.n
        self.got = self.acked = self.outstanding = memoryview(b"")
        at = sim.packet_flags(flow, n, self._bind_flags)  # got, acked, outstanding there
        self.rtt = self.base_rtt_ps(0, self.evs[0])
        bdp = bdp_bytes(self.line_rate_bps() * self.ports, self.rtt)
        self.spec_pkts = max(1, int(self.opt["iw_bdp"] * bdp / self.mss))
        self.pulls_seen = 0
        self.check = -1
        self.retries = 0
        self.pulls_sent = 0
        #: where the compiled pacer's pull routes start (-1: not made yet)
        self.pull_at = -1
        row = sim.endpoint_row(flow)
        r = sim.ep_state
        r[row + R_K], r[row + R_SRC], r[row + R_DST] = k, src, dst
        r[row + R_N], r[row + R_BOFF], r[row + R_MSS] = n, at, self.mss
        r[row + R_LAST] = self.pay[-1] if n else 0
        #: pulls that found nothing to send while packets were unacknowledged: spent on the
        #: next retransmission (a NACK can arrive after the pull its header earned)
        self.credit = 0
        self.sent: deque[tuple[int, int, int, int]] = deque()  # seq, txn, time, EV index
        self._pacer: _Pacer | None = None
        #: ACKs and pulls without objects (made_ack, made_pull) unless a subclass handles
        #: packets itself: then it is given them as packets
        cls = type(self)
        own = (
            cls.on_packet is Connection.on_packet
            and cls.sender_packet is ReceiverDriven.sender_packet
        )
        self._made_acks = own
        #: whether the compiled loop may receive its data and ACKs (_core._receive, once its
        #: pull routes are made): a plain engine, one message, sequences in the tag's 24 bits
        self.rx_in_loop = own and sim.makes_packets and len(self.msg_end) == 1
        self.rx_in_loop &= n <= TAG_SEQ_MASK + 1
        self._rx_tag = TAG_RX | (flow << TAG_FLOW_SHIFT)
        r[row + R_FAST] = 1  # nothing to resend, no EV bad (_fast)

    def _fast(self) -> None:
        """Whether the loop may answer this sender's pulls (``_core._pulled``): nothing waits
        to be resent, no EV is bad, the connection has not failed. Set after each of its
        Python handlers that may change one of them."""
        slow = self.rtx or self.failed or True in self.bad
        self.sim.ep_state[self.flow * R_COLS + R_FAST] = 0 if slow else 1

    def loop_keys(self) -> list[tuple[int, int, int, int]]:
        """The paths the compiled loop sends on, by EV index: the pulls' and ACKs' (the
        reverse paths, :meth:`pull_keys`), then, when the loop answers pulls, the data's."""
        keys = self.pull_keys()
        if self.rx_in_loop:
            pairs = zip(self.evs, self.ev_port, strict=True)
            keys += [(self.src, self.dst, p, ev) for ev, p in pairs]
        return keys

    def made_sent(self, x: int, now: int) -> None:
        """The loop answered a pull with the first transmission of sequence ``x &
        TAG_SEQ_MASK`` on EV index ``x >> TAG_EVI_SHIFT`` at ``now`` (``_core._pulled``; it
        kept the flags and counters): the timeout's record of it, as :meth:`send_one`."""
        seq = x & TAG_SEQ_MASK
        self.tx_count[seq] = 1
        self.sent.append((seq, 1, now, x >> TAG_EVI_SHIFT))

    def made_data(self, tag: int) -> Packet:
        """The object of a data packet the loop sent (``_core._pulled``), for the Python
        receiver: the fields :meth:`data` gives it, on the EV of its index."""
        seq = tag & TAG_SEQ_MASK
        i = (tag >> TAG_EVI_SHIFT) & 255
        pkt = Packet(DATA, self.flow, self.src, self.dst, seq, self.pay[seq], self.hdr)
        pkt.key, pkt.job, pkt.msg = self.spec.key, self.spec.job, 0
        pkt.ev, pkt.port = self.evs[i], self.ev_port[i]
        return pkt

    def _bind_flags(self, view: memoryview) -> None:
        """The packets' flags as views of the engine's array (``packet_flags``)."""
        n = self.n
        self.got, self.acked, self.outstanding = view[:n], view[n : 2 * n], view[2 * n :]

    @property
    def pull_wanted(self) -> int:
        """Pulls the receiver has queued and not sent (kept where the compiled pacer reads
        them)."""
        return self.sim.ep_state[self.flow * R_COLS + R_WANT]

    @pull_wanted.setter
    def pull_wanted(self, n: int) -> None:
        self.sim.ep_state[self.flow * R_COLS + R_WANT] = n

    def pull_keys(self) -> list[tuple[int, int, int, int]]:
        """The paths of the pulls, by ``pulls_sent % k`` (:meth:`send_pull`)."""
        pairs = zip(self.evs, self.ev_port, strict=True)
        return [(self.dst, self.src, p, ev ^ 1) for ev, p in pairs]

    def _ack(self, s: int, now: int) -> bool:
        if self.acked[s]:
            return False
        self.acked[s] = 1
        self.n_acked += 1
        if self.outstanding[s]:
            self.outstanding[s] = 0
            self.inflight -= self.pay[s]
        if self.n_acked == self.n and self.sender_done_ps < 0:
            self.sender_done_ps = now
            self.sim.ep_state[self.flow * R_COLS + R_SDONE] = 1  # read by the compiled pacer
        return True

    @property
    def pacer(self) -> _Pacer:
        """The receiving host's pull pacer (made on first use, so that flow ids stay dense)."""
        if self._pacer is None:
            pacers = self.sim.shared.setdefault("pacer", {})
            if self.dst not in pacers:
                pacers[self.dst] = _Pacer(self.sim, self.dst)
            self._pacer = pacers[self.dst]
        return self._pacer

    def path_keys(self) -> list[tuple[int, int, int, int, bool]]:
        out = []
        for ev, port in zip(self.evs, self.ev_port, strict=True):
            out.append((self.src, self.dst, port, ev, False))
            out.append((self.dst, self.src, port, ev ^ 1, False))  # ACKs and pulls
        return out

    def start(self) -> None:
        self.sim.timer(self.start_ps, self.flow, _PACE)

    def retired(self) -> _Answerer:
        return _Answerer(self, echo_path=True, source_route=False)

    def compact(self) -> None:
        """Every packet acknowledged: nothing is sent or pulled again (a late pull finds no
        sequence to send, the pacer skips the connection), so the per-EV lists go."""
        self.evs = self.ev_port = []
        self.bad = []
        self.sent.clear()
        self.sim.drop_pull_routes(self.flow)
        self.sim.ep_state[self.flow * R_COLS + R_CRX] = 0  # late packets: Python's answerer
        self.sim.release_flags(self.flow)

    def _ev(self) -> int:
        k = self.k
        i = self.rr
        for _ in range(k):
            i = i + 1 if i + 1 < k else 0
            if not self.bad[i]:
                self.rr = i
                return i
        return -1

    def send_one(self, now: int) -> bool:
        seq = self._next_seq()
        if seq < 0 or self.failed:
            return False
        i = self._ev()
        if i < 0:
            return False
        self._take(seq)
        pkt = self.data(seq)
        self.outstanding[seq] = 1
        self.inflight += pkt.payload
        self.sent.append((seq, self.tx_count[seq], now, i))
        if self.rx_in_loop:  # tagged for the loop's receiver (_core._receive)
            tag = self._rx_tag | (i << TAG_EVI_SHIFT) | seq
            self.sim.send_tagged(pkt, self.ev_port[i], self.evs[i], tag)
        else:
            self.sim.send(pkt, self.ev_port[i], self.evs[i])
        return True

    def on_timer(self, token: int, now: int) -> None:
        self._on_timer(token, now)
        self._fast()

    def _on_timer(self, token: int, now: int) -> None:
        if token == _PACE:
            self.event("spec-window", self.spec_pkts * self.mss)
            for _ in range(self.spec_pkts):
                if not self.send_one(now):
                    break
            self.sim.timer(now + self.rto // 2, self.flow, _RTO)
            return
        if self.n_acked >= self.n or self.failed:
            return
        # packets unacknowledged for rto: their EV is bad, each is resent as one more
        # speculative packet (declared, so that it counts against the credit check)
        expired = []
        while self.sent:
            seq, txn, t, i = self.sent[0]
            if self.acked[seq] or self.tx_count[seq] != txn or not self.outstanding[seq]:
                self.sent.popleft()
                continue
            if t + self.rto > now:
                break
            self.sent.popleft()
            expired.append(seq)
            if not self.bad[i]:
                self.bad[i] = True
                self.event("ev-down", i, self.evs[i])
        if all(self.bad):  # every EV failed once: try them all again
            self.bad = [False] * self.k
        if self.n_acked == self.check and (expired or self.nxt >= self.n):
            self.retries += 1
            if self.retries > self.opt["retries"]:
                self.fail("retry-exceeded")
                return
        elif self.n_acked != self.check:
            self.retries = 0
        # nothing in flight and no pull queued at the receiver: no pull will come
        stalled = (
            not expired and self.inflight <= 0 and self.pull_wanted <= 0 and self._next_seq() >= 0
        )
        self.check = self.n_acked
        for seq in expired:
            self._lost(seq)
            self.event("spec-extra", self.mss)
            self.send_one(now)
        if stalled:  # a packet waits for a pull: send it as one more speculative packet
            self.event("spec-extra", self.mss)
            self.send_one(now)
        self.sim.timer(now + self.rto // 2, self.flow, _RTO)

    def sender_packet(self, pkt: Packet, now: int) -> None:
        if pkt.kind == ACK:
            self._ack(pkt.seq, now)
        elif pkt.kind == NACK:
            self._lost(pkt.seq)
            if self.credit > 0 and self.send_one(now):
                self.credit -= 1
        elif pkt.kind == PULL:
            self._pulled(pkt.cum, now)
        self._fast()

    def made_pull(self, count: int, now: int) -> None:
        """A compiled pacer's pull reached the sender, the receiver's ``count``-th (it has no
        packet object; a subclass that handles packets itself is given one)."""
        if self._made_acks:
            self._pulled(count, now)
            self._fast()
        else:
            p = self.control(PULL)
            p.cum = count
            self.on_packet(p, now)

    def _pulled(self, count: int, now: int) -> None:
        new = count - self.pulls_seen
        if new > 0:
            self.pulls_seen = count
            for _ in range(new):
                if not self.send_one(now) and self.credit < self.n - self.n_acked:
                    self.credit += 1

    def made_ack(self, seq: int, now: int) -> None:
        """The ACK of ``seq`` reached the sender, one sent without an object
        (:meth:`PacketSim.send_made`; an ACK's handling is only this)."""
        self._ack(seq, now)

    def send_pull(self) -> None:
        self.pulls_sent += 1
        p = self.control(PULL)
        p.cum = self.pulls_sent
        i = self.pulls_sent % self.k
        self.sim.send(p, self.ev_port[i], self.evs[i] ^ 1)

    def receiver_packet(self, pkt: Packet, now: int) -> None:
        if pkt.kind != DATA or not self.authentic(pkt):
            return
        sim = self.sim
        if pkt.trimmed:
            a = self.control(NACK, pkt.seq)
        else:
            self.place(pkt.seq)
            if self.finish_ps >= 0:
                sim.ep_state[self.flow * R_COLS + R_FIN] = 1  # read by the compiled pacer
            if self._made_acks and sim.makes_packets:  # no object: made_ack at the sender
                tag = TAG_QUIET | TAG_MADE | (self.flow << TAG_FLOW_SHIFT) | pkt.seq
                sim.send_made(self.dst, self.src, pkt.port, pkt.ev ^ 1, tag)
                if self.finish_ps < 0:
                    self.pacer.request(self, now)
                return
            a = self.control(ACK, pkt.seq)
            a.cum = self.cum
        a.echo = pkt.ev
        a.quiet = not pkt.trimmed  # an ACK only updates the sender's state (_ack)
        self.sim.send(a, pkt.port, pkt.ev ^ 1)
        if self.finish_ps < 0:
            self.pacer.request(self, now)


class _Answerer:
    """A retired ``mrc-spray`` or ``receiver-driven`` connection (both ends done): its receiver
    has every packet, so a late data packet is a duplicate, answered as the connection answers
    one (an ACK of its sequence with the cumulative sequence at the end and no SACK bits; a
    NACK for a trimmed one; a probe's answer), and a late packet to its sender changes nothing
    it would send. About 100 bytes instead of several kilobytes per finished flow."""

    __slots__ = (
        "dst",
        "ev_is_index",
        "flow",
        "hdr",
        "job",
        "key",
        "n",
        "reverse",
        "sim",
        "source_route",
        "src",
    )

    def __init__(self, c: _Sprayer, *, echo_path: bool, source_route: bool) -> None:
        self.sim, self.flow, self.src, self.dst = c.sim, c.flow, c.src, c.dst
        self.key, self.job, self.n, self.hdr = c.spec.key, c.spec.job, c.cum, c.hdr
        self.reverse = 1 if echo_path else 0  # receiver-driven answers on ev ^ 1
        self.source_route = source_route
        #: an mrc-spray run given its source routes: EV i is the table's index i
        self.ev_is_index = source_route and c.sim.source_routes is not None

    def on_timer(self, token: int, now: int) -> None:
        return  # every timer of a connection done at both ends returns at once

    def made_pull(self, count: int, now: int) -> None:
        return  # a late pull: nothing is left to send

    def made_ack(self, seq: int, now: int) -> None:
        return  # a late ACK: everything was acknowledged

    def made_data(self, tag: int) -> Packet:
        """A late data packet the loop sent (``ReceiverDriven.made_data``): its EV computed
        again from its index (``entropy_range`` of the connection, one value)."""
        seq = tag & TAG_SEQ_MASK
        i = (tag >> TAG_EVI_SHIFT) & 255
        sim = self.sim
        r = sim.ep_state
        row = self.flow * R_COLS
        pay = r[row + R_LAST] if seq == r[row + R_N] - 1 else r[row + R_MSS]
        pkt = Packet(DATA, self.flow, self.src, self.dst, seq, pay, self.hdr)
        pkt.key, pkt.job, pkt.msg = self.key, self.job, 0
        ev = i if self.ev_is_index else entropy(sim.seed, self.flow, i)
        pkt.ev, pkt.port = ev, i % sim.ports_per_host
        return pkt

    def on_packet(self, pkt: Packet, now: int) -> None:
        kind = pkt.kind
        if (kind != DATA and kind != PROBE) or pkt.key != self.key or pkt.job != self.job:
            return
        if kind == PROBE:
            if self.reverse:
                return  # receiver-driven sends no probes
            a = Packet(PROBE_ACK, self.flow, self.dst, self.src, 0, 0, self.hdr)
        else:
            a = Packet(
                NACK if pkt.trimmed else ACK, self.flow, self.dst, self.src, pkt.seq, 0, self.hdr
            )
            if not (pkt.trimmed and self.reverse):  # receiver-driven's NACK carries no cum
                a.cum = self.n
            if not pkt.trimmed and not self.reverse:
                a.ecn = pkt.ecn
        a.echo = pkt.ev
        a.quiet = a.kind == ACK and self.reverse == 1  # receiver-driven's sender: _ack only
        self.sim.send(a, pkt.port, pkt.ev ^ self.reverse, source_route=self.source_route)


def set_receiver_rate(sim: PacketSim, host: int, bps: float) -> None:
    """The receiver ``host`` takes data at ``bps`` from now on: the rate its ACK hints carry
    (``metaroce``) and its pull pacer's rate (``receiver-driven``)."""
    sim.shared.setdefault("rx_rate", {})[host] = bps
    pacer = sim.shared.get("pacer", {}).get(host)
    if pacer is not None:
        pacer.rate_changed()
    if sim.tracer is not None:
        sim.tracer.event(sim.now, -1, "rx-rate", host, int(bps))


TRANSPORTS: dict[str, type[Connection]] = {
    t.name: t for t in (RoceEcmp, MrcSpray, MetaRoce, ReceiverDriven)
}


def packet_transports() -> dict[str, type[Connection]]:
    """Every packet model by name: the built-ins, then the installed plug-ins'."""
    names = [n for n in implemented_by("packet") if n not in TRANSPORTS]
    return {**TRANSPORTS, **{n: transport_class(n) for n in names}}


def transport_class(name: str) -> type[Connection]:
    """The packet model named ``name``: a built-in, or an installed plug-in's
    (:mod:`clusterloom.sim.registry`), checked to be a :class:`Connection`."""
    if name in TRANSPORTS:
        return TRANSPORTS[name]
    impl = plugin_implementation(name, "packet")
    if impl is None:
        raise PacketSimError(
            f"unknown packet transport '{name}'; known: {', '.join(implemented_by('packet'))}"
        )
    if not issubclass(impl, Connection):
        raise PluginError(
            [Problem(REGISTRY[name].origin, "its packet model is not a sim.packet Connection")]
        )
    return impl
