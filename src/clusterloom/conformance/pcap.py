"""Checks decided from a packet capture of a real implementation (classic libpcap files, read
with ``struct``), and a writer of such captures from a simulated trace.

Layout parsed (and written):

- pcap global header: magic ``a1b2c3d4`` (microseconds) or ``a1b23c4d`` (nanoseconds), either
  byte order; link type 1 (Ethernet). Each record: seconds, fraction, captured length,
  original length, then the frame.
- Ethernet II (an 802.1Q tag is skipped), IPv4 (ECN = the low two bits of TOS, CE = 3) or
  IPv6 (ECN in the traffic class), UDP to port 4791 (RoCEv2). **The entropy value is the UDP
  source port** (as MRC and RoCEv2 multipath carry it).
- InfiniBand BTH, 12 bytes: opcode, flags, P_Key, reserved, destination QP (24 bits), ack-req
  bit, PSN (24 bits). Opcodes 0x00-0x0B (RC SEND/RDMA WRITE first/middle/last/only) are data,
  0x11 (ACKNOWLEDGE) is an ACK followed by the 4-byte AETH (syndrome: ``000xxxxx`` ACK,
  ``011xxxxx`` NAK) acknowledging every PSN up to the BTH PSN.
- SACK extension (defined here, not part of RoCEv2: MRC's exact header is in its
  specification): an ACK whose UDP payload carries 12 more bytes after the AETH holds a
  4-byte cumulative PSN (low 24 bits: the first PSN not received) and an 8-byte bitmap, bit
  ``i`` = PSN ``cum + 1 + i`` received.

One connection per (sender IP, receiver IP) pair; PSNs are taken relative to the first data
PSN of the pair. A capture sees both directions at one point, so data packets count as sent
by the sender and received by the receiver at the capture time, and ACKs the other way round.
Checks a capture can decide: SPR-01 (EVs balanced; the set of active EVs is unknown, so every
EV seen counts), ORD-01 (no retransmission of acknowledged data), LOS-02 (every SACK matches
the data seen; valid for a capture taken at the receiver). A capture without a RoCEv2 data
packet decides nothing: each check fails with that reason.

Input limits (a capture may come from anywhere; beyond them it is refused with a
``ConformanceInputError`` naming the file or the packet and the fix, before any large
allocation): the file at most :data:`PCAP_MAX_BYTES` (256 MiB; :func:`check_capture` checks
the size before reading), at most :data:`PCAP_MAX_PACKETS` records (2**20), each record's
captured length at most :data:`PCAP_MAX_RECORD_BYTES` (262,144, libpcap's own largest
snapshot length). Every check is linear in the number of packets.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from clusterloom.conformance.checks import Check, j_spray_balance
from clusterloom.conformance.harness import (
    ConformanceInputError,
    FlowOutcome,
    Outcome,
    Scenario,
)
from clusterloom.conformance.suite import CheckResult, Status
from clusterloom.conformance.trace import Record, Trace
from clusterloom.errors import Problem
from clusterloom.sim.packet.engine import ACK, DATA, NACK
from clusterloom.units import PS_PER_NS, PS_PER_S, PS_PER_US

__all__ = ["CAPTURE_CHECKS", "check_capture", "read_pcap", "write_pcap"]

ROCE_PORT = 4791
_DATA_OPS = set(range(0x00, 0x0C))
_ACK_OP = 0x11
CAPTURE_CHECKS = ("SPR-01", "ORD-01", "LOS-02")

#: the largest capture read, in bytes
PCAP_MAX_BYTES = 256 * 2**20
#: the most records (packets) a capture may hold
PCAP_MAX_PACKETS = 2**20
#: the largest captured length of one record (libpcap's MAXIMUM_SNAPLEN)
PCAP_MAX_RECORD_BYTES = 262_144


@dataclass
class _Pair:
    flow: int
    base: int


def _fail(n: int, why: str) -> ConformanceInputError:
    return ConformanceInputError([Problem(f"packet {n}", why)])


def _too_big(source: str, size: int) -> Problem:
    return Problem(
        source,
        f"{size} bytes, over the {PCAP_MAX_BYTES // 2**20} MiB limit of a capture: "
        "split it into smaller files",
    )


def read_pcap(data: bytes, *, source: str = "<pcap>") -> Trace:
    """A trace of the RoCEv2 packets in a classic pcap file (module docstring). Malformed
    input raises ConformanceInputError naming the packet (``packet 3: ...``), and so does a
    capture past the limits of the module docstring."""
    if len(data) > PCAP_MAX_BYTES:
        raise ConformanceInputError([_too_big(source, len(data))])
    if len(data) < 24:
        raise ConformanceInputError([Problem(source, "not a pcap file: shorter than its header")])
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        end = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        end = ">"
    else:
        raise ConformanceInputError(
            [Problem(source, f"not a classic pcap file (magic {magic.hex()}; pcapng is not read)")]
        )
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    linktype = struct.unpack(end + "I", data[20:24])[0]
    if linktype != 1:
        raise ConformanceInputError([Problem(source, f"link type {linktype}; only Ethernet (1)")])
    trace = Trace()
    pairs: dict[tuple[bytes, bytes], _Pair] = {}
    off, n, t0 = 24, 0, None
    while off < len(data):
        n += 1
        if n > PCAP_MAX_PACKETS:
            raise _fail(
                n,
                f"more than {PCAP_MAX_PACKETS} packets in the capture: split it into smaller files",
            )
        if off + 16 > len(data):
            raise _fail(n, "truncated record header")
        sec, frac, incl, _orig = struct.unpack(end + "IIII", data[off : off + 16])
        off += 16
        if incl > PCAP_MAX_RECORD_BYTES:
            raise _fail(
                n,
                f"record says {incl} bytes, more than any capture holds "
                f"({PCAP_MAX_RECORD_BYTES}): the file is corrupt from here on",
            )
        if off + incl > len(data):
            raise _fail(n, f"record says {incl} bytes, {len(data) - off} left in the file")
        frame = data[off : off + incl]
        off += incl
        t = sec * PS_PER_S + frac * (PS_PER_NS if nano else PS_PER_US)
        t0 = t if t0 is None else t0
        _frame(frame, t - t0, n, trace, pairs)
    return trace


def _frame(
    frame: bytes, t: int, n: int, trace: Trace, pairs: dict[tuple[bytes, bytes], _Pair]
) -> None:
    if len(frame) < 14:
        raise _fail(n, "shorter than an Ethernet header")
    etype = struct.unpack("!H", frame[12:14])[0]
    p = 14
    if etype == 0x8100:
        if len(frame) < 18:
            raise _fail(n, "truncated 802.1Q tag")
        etype = struct.unpack("!H", frame[16:18])[0]
        p = 18
    if etype == 0x0800:
        if len(frame) < p + 20:
            raise _fail(n, "truncated IPv4 header")
        ihl = (frame[p] & 0x0F) * 4
        ecn = frame[p + 1] & 3
        proto = frame[p + 9]
        src, dst = frame[p + 12 : p + 16], frame[p + 16 : p + 20]
        p += ihl
    elif etype == 0x86DD:
        if len(frame) < p + 40:
            raise _fail(n, "truncated IPv6 header")
        ecn = (struct.unpack("!I", frame[p : p + 4])[0] >> 20) & 3
        proto = frame[p + 6]
        src, dst = frame[p + 8 : p + 24], frame[p + 24 : p + 40]
        p += 40
    else:
        return  # not IP: ignored
    if proto != 17:
        return
    if len(frame) < p + 8:
        raise _fail(n, "truncated UDP header")
    sport, dport, _ulen, _ = struct.unpack("!HHHH", frame[p : p + 8])
    if dport != ROCE_PORT:
        return
    p += 8
    if len(frame) < p + 12:
        raise _fail(n, "truncated BTH (RoCEv2 needs 12 bytes after UDP)")
    opcode = frame[p]
    pkey = struct.unpack("!H", frame[p + 2 : p + 4])[0]
    psn = struct.unpack("!I", frame[p + 8 : p + 12])[0] & 0xFFFFFF
    body = frame[p + 12 :]
    if opcode in _DATA_OPS:
        pair = pairs.setdefault((src, dst), _Pair(len(pairs), psn))
        seq = (psn - pair.base) & 0xFFFFFF
        common = dict(
            flow=pair.flow,
            seq=seq,
            ev=sport,
            port=0,
            path=-1,
            pseq=-1,
            payload=max(len(body) - 4, 0),
            ecn=ecn == 3,
            trimmed=False,
            cum=0,
            sack=0,
            echo=-1,
            hint=0,
            key=pkey,
            job=0,
            msg=-1,
            route=(),
        )
        trace.records.append(Record(t=t, where="tx", host=0, kind=DATA, **common))
        trace.records.append(Record(t=t, where="rx", host=1, kind=DATA, **common))
    elif opcode == _ACK_OP:
        if len(body) < 4:
            raise _fail(n, "ACK without its 4-byte AETH")
        known = pairs.get((dst, src))
        if known is None:
            return  # an ACK of a connection whose data the capture missed
        syndrome = body[0]
        seq = (psn - known.base) & 0xFFFFFF
        kind = NACK if syndrome >> 5 == 0b011 else ACK
        cum, sack = seq + 1, 0
        if kind == NACK:
            cum = seq
        if len(body) >= 16:
            cum = (struct.unpack("!I", body[4:8])[0] - known.base) & 0xFFFFFF
            sack = struct.unpack("!Q", body[8:16])[0]
        common = dict(
            flow=known.flow,
            seq=seq,
            ev=sport,
            port=0,
            path=-1,
            pseq=-1,
            payload=0,
            ecn=ecn == 3,
            trimmed=False,
            cum=cum,
            sack=sack,
            echo=-1,
            hint=0,
            key=pkey,
            job=0,
            msg=-1,
            route=(),
        )
        trace.records.append(Record(t=t, where="tx", host=1, kind=kind, **common))
        trace.records.append(Record(t=t, where="rx", host=0, kind=kind, **common))


def write_pcap(trace: Trace, path: Path | str, *, flow: int = 0, at: str = "sender") -> Path:
    """Write the data and ACK packets of ``flow`` as a capture at the sender's NIC (or, with
    ``at="receiver"``, at the receiver's: what arrived there and the ACKs it sent), in the
    layout of the module docstring: PSN = sequence, UDP source port = EV folded into
    49152..65535, the SACK extension on ACKs."""
    from clusterloom.atomic import atomic_write

    out = [struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)]
    data_at, ack_at = ("tx", "rx") if at == "sender" else ("rx", "tx")
    mine = [
        r
        for r in trace.records
        if r.flow == flow
        and not r.trimmed
        and (
            (r.where == data_at and r.kind == DATA) or (r.where == ack_at and r.kind in (ACK, NACK))
        )
    ]
    for r in mine:
        data = r.kind == DATA
        a, b = (2 * flow, 2 * flow + 1) if data else (2 * flow + 1, 2 * flow)
        sport = 0xC000 | (r.ev & 0x3FFF)
        if data:
            bth = struct.pack("!BBHBBBBI", 0x0A, 0, 0xFFFF, 0, 0, 0, 1, r.seq & 0xFFFFFF)
            body = bth + b"\0" * 4  # payload left out, the ICRC kept
            payload_len = r.payload
        else:
            syndrome = 0x60 if r.kind == NACK else 0x1F
            psn = r.seq if r.kind == ACK else r.cum
            bth = struct.pack("!BBHBBBBI", _ACK_OP, 0, 0xFFFF, 0, 0, 0, 2, psn & 0xFFFFFF)
            body = bth + struct.pack("!I", syndrome << 24)
            body += struct.pack("!IQ", r.cum & 0xFFFFFF, r.sack & 0xFFFFFFFFFFFFFFFF)
            body += b"\0" * 4
            payload_len = 0
        udp = struct.pack("!HHHH", sport, ROCE_PORT, 8 + len(body), 0) + body
        total = 20 + len(udp)
        ip = struct.pack(
            "!BBHHHBBH4s4s",
            0x45,
            3 if r.ecn else 2,
            total,
            0,
            0,
            64,
            17,
            0,
            bytes([10, 0, a >> 8 & 255, a & 255]),
            bytes([10, 0, b >> 8 & 255, b & 255]),
        )
        eth = b"\x02\0\0\0\0\x01" + b"\x02\0\0\0\0\x02" + b"\x08\x00"
        frame = eth + ip + udp
        sec, ns = divmod(r.t // PS_PER_NS, PS_PER_S // PS_PER_NS)
        out.append(struct.pack("<IIII", sec, ns, len(frame), len(frame) + payload_len) + frame)
    target = Path(path)
    atomic_write(target, b"".join(out))
    return target


def _judge_capture(check_id: str, trace: Trace) -> tuple[bool, str]:
    from clusterloom.conformance.checks import AckView

    if not any(r.kind == DATA for r in trace.records):
        return False, (
            "no RoCEv2 data packet in the capture: nothing to judge; capture the connection's "
            f"traffic (UDP to port {ROCE_PORT}, RC SEND/WRITE opcodes)"
        )
    outcome = Outcome(trace=trace, flows=[FlowOutcome(0, -1, False, [], 0)])
    if check_id == "SPR-01":

        class _Any:
            """A capture's implementation: nothing is known about it."""

            parameters: ClassVar[dict[str, float]] = {}
            features = frozenset[str]()
            name = "capture"

            def run(self, scenario: Scenario) -> Outcome:
                raise NotImplementedError("a capture is not run")

        v = j_spray_balance([outcome], _Any())
        return v.passed, v.detail
    if check_id == "ORD-01":
        bad = 0
        views: dict[int, AckView] = {}  # one per flow, in one pass over the records
        for r in trace.records:
            if r.host != 0:
                continue
            view = views.setdefault(r.flow, AckView())
            if r.where == "tx" and r.kind == DATA:
                bad += view.covered(r.seq)
            elif r.where == "rx" and r.kind in (ACK, NACK):
                view.ack(r)
        return bad == 0, f"{bad} retransmissions of acknowledged data"
    # LOS-02: each ACK claims exactly the data seen before it
    wrong = checked = 0
    got: dict[int, set[int]] = {}
    prefix: dict[int, int] = {}  # per flow: the first sequence not seen (only grows)
    for r in trace.records:
        if r.host != 1:
            continue
        have = got.setdefault(r.flow, set())
        if r.where == "rx" and r.kind == DATA:
            have.add(r.seq)
        elif r.where == "tx" and r.kind == ACK:
            cum = prefix.get(r.flow, 0)
            while cum in have:
                cum += 1
            prefix[r.flow] = cum
            bits = sum(1 << i for i in range(64) if cum + 1 + i in have)
            checked += 1
            wrong += r.cum != cum or r.sack != bits
    return wrong == 0 and checked > 0, f"{wrong} of {checked} ACKs differ from the data seen"


def check_capture(path: Path | str, checks: Sequence[Check] = ()) -> list[CheckResult]:
    """Evaluate the capture-decidable checks (those in ``checks`` if given) on a pcap file."""
    p = Path(path)
    try:
        with p.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > PCAP_MAX_BYTES:
                raise ConformanceInputError([_too_big(str(p), size)])
            data = fh.read(PCAP_MAX_BYTES + 1)  # a pipe or device has no size
    except OSError as exc:
        raise ConformanceInputError([Problem(str(p), f"cannot read: {exc}")]) from exc
    trace = read_pcap(data, source=str(p))
    wanted = [c.id for c in checks if c.id in CAPTURE_CHECKS] if checks else list(CAPTURE_CHECKS)
    from clusterloom.conformance.checks import by_id

    out = []
    for c in by_id(wanted):
        ok, detail = _judge_capture(c.id, trace)
        out.append(
            CheckResult(c.id, c.group, c.title, p.name, Status.PASS if ok else Status.FAIL, detail)
        )
    return out
