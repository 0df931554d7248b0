"""The check catalogue: each check has an ID, a purpose, a setup, a procedure and a pass/fail
observable, and lists the features it needs (``docs/conformance.md`` is the same catalogue).

A check builds one or more :class:`Scenario` for an implementation and judges the
:class:`Outcome` s. Judges read the trace (packets seen at the hosts, events the implementation
reports); those marked ``capture=True`` read only packet records and can also judge a capture
(:mod:`clusterloom.conformance.pcap`).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from clusterloom.conformance.harness import (
    Action,
    FlowSpec,
    Implementation,
    Outcome,
    Rule,
    Scenario,
)
from clusterloom.conformance.trace import Record, Trace
from clusterloom.sim.packet.engine import ACK, DATA, NACK, PROBE_ACK, PULL
from clusterloom.units import BITS_PER_BYTE, PS_PER_S, PS_PER_US, gbps, to_gbps, to_s

__all__ = ["CHECKS", "Check", "Verdict", "by_id"]

US = PS_PER_US
MSS = 4096


@dataclass(frozen=True)
class Verdict:
    passed: bool
    detail: str


Judge = Callable[[Sequence[Outcome], Implementation], Verdict]


@dataclass(frozen=True)
class Check:
    id: str
    group: str
    title: str
    purpose: str
    setup: str
    procedure: str
    observable: str
    requires: frozenset[str]  # all of these
    any_of: frozenset[str]  # and at least one of these (empty: none needed)
    scenarios: Callable[[Implementation], tuple[Scenario, ...]]
    judge: Judge
    capture: bool = False

    def applies(self, features: frozenset[str]) -> bool:
        return self.requires <= features and (not self.any_of or bool(self.any_of & features))


# -- trace helpers -------------------------------------------------------------------------


def data_tx(trace: Trace, flow: int = 0) -> list[Record]:
    return [r for r in trace.records if r.where == "tx" and r.kind == DATA and r.flow == flow]


def tx_counts(trace: Trace, flow: int = 0) -> Counter[int]:
    return Counter(r.seq for r in data_tx(trace, flow))


def retransmissions(trace: Trace, flow: int = 0) -> int:
    return sum(c - 1 for c in tx_counts(trace, flow).values())


class AckView:
    """Which sequences the sender has been told are received, replayed in time order from the
    ACKs it receives (connection-space SACK: cum + bitmap; path-space: per-path cum + bitvector,
    mapped back through the data packets' path sequence numbers)."""

    def __init__(self) -> None:
        self.prefix = 0
        self.acked: set[int] = set()
        self.path_map: dict[tuple[int, int], int] = {}
        self.path_cum: dict[int, int] = defaultdict(int)

    def sent(self, r: Record) -> None:
        if r.path >= 0:
            self.path_map[(r.path, r.pseq)] = r.seq

    def ack(self, r: Record) -> None:
        if r.kind == NACK:
            return
        self.acked.add(r.seq)
        if r.path < 0:
            if r.cum > self.prefix:
                self.prefix = r.cum
            bits, i = r.sack, 0
            while bits:
                if bits & 1:
                    self.acked.add(r.cum + 1 + i)
                bits >>= 1
                i += 1
            return
        p = r.path
        for ps in range(self.path_cum[p], r.cum):
            s = self.path_map.get((p, ps))
            if s is not None:
                self.acked.add(s)
        self.path_cum[p] = max(self.path_cum[p], r.cum)
        bits, i = r.sack, 0
        while bits:
            if bits & 1:
                s = self.path_map.get((p, r.cum + 1 + i))
                if s is not None:
                    self.acked.add(s)
            bits >>= 1
            i += 1

    def covered(self, seq: int) -> bool:
        return seq < self.prefix or seq in self.acked


def sender_view(trace: Trace, flow: int, src: int) -> list[Record]:
    """The flow's records at the sending host, in time order."""
    return [r for r in trace.records if r.flow == flow and r.host == src]


def _ok(passed: bool, detail: str) -> Verdict:
    return Verdict(passed, detail)


def _one(o: Sequence[Outcome]) -> Outcome:
    return o[0]


def _finished(o: Outcome, flow: int = 0) -> bool:
    return o.flows[flow].finish_ps >= 0 and not o.flows[flow].failed


def _width(impl: Implementation) -> int:
    p = getattr(impl, "parameters", {}) or {}
    return int(p.get("evs", p.get("paths", 1)))


# -- scenarios -----------------------------------------------------------------------------


def _single(nbytes: int = 1 << 20, **kw: object) -> Scenario:
    return Scenario(flows=(FlowSpec(0, 5, nbytes),), **kw)  # type: ignore[arg-type]


def _incast(n: int, nbytes: int, victim: bool = False, **kw: object) -> Scenario:
    flows = [FlowSpec(i, 7, nbytes) for i in range(n)]
    if victim:
        flows.append(FlowSpec(0, 6, 2 * nbytes))
    return Scenario(flows=tuple(flows), planes=1, queue_from_ps=QUEUE_FROM, **kw)  # type: ignore[arg-type]


#: incast queues are judged from here on: after the first window's burst (10 base RTTs)
QUEUE_FROM = 150 * US


def _uplink_of(hosts: int, planes: int, radix: int, src: int) -> int:
    """A leaf-to-spine physical link of ``src``'s leaf (plane 0)."""
    import numpy as np

    from clusterloom.sim.packet.fabrics import small_fabric

    t = small_fabric(hosts, planes=planes, radix=radix)
    leaf = int(t.link_dst[np.flatnonzero((t.link_src == src) & (t.link_tier == 1))[0]])
    return int(np.flatnonzero((t.link_src == leaf) & (t.link_tier == 2))[0])


# -- judges --------------------------------------------------------------------------------


def j_spray_balance(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    counts = Counter(r.ev for r in data_tx(out.trace))
    want = _width(impl)
    total = sum(counts.values())
    if total == 0:
        return _ok(False, "no data packet was sent: nothing to balance")
    expect = min(want, total)
    if len(counts) < expect:
        return _ok(False, f"{len(counts)} entropy values used, {expect} active")
    mean = total / len(counts)
    lo, hi = min(counts.values()), max(counts.values())
    ok = hi <= 1.5 * mean + 1 and lo >= 0.5 * mean - 1
    return _ok(ok, f"{len(counts)} EVs, packets per EV {lo}..{hi} (mean {mean:.1f}, bound ±50%)")


def j_denied(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    denied = out.trace.of("denied")
    if not denied:
        return _ok(False, "no EV was in use to deny")
    t, ev = denied[0].t, denied[0].b
    late = [r for r in data_tx(out.trace) if r.ev == ev and r.t > t + out.base_rtt_ps]
    return _ok(not late, f"{len(late)} packets on the denied EV after one RTT")


def j_planes(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    per: Counter[int] = Counter()
    for r in data_tx(out.trace):
        per[r.port // out.ports_per_plane] += r.payload
    total = sum(per.values())
    planes = 2
    shares = [per[p] / total for p in range(planes)] if total else [0.0] * planes
    ok = all(abs(s - 1 / planes) <= 0.05 for s in shares)
    return _ok(ok, "plane shares " + ", ".join(f"{s:.3f}" for s in shares) + " (±0.05)")


def _no_retx_of_acked(out: Outcome, flow: int = 0, src: int = 0) -> list[int]:
    view = AckView()
    bad = []
    for r in sender_view(out.trace, flow, src):
        if r.where == "tx" and r.kind == DATA:
            if view.covered(r.seq):
                bad.append(r.seq)
            view.sent(r)
        elif r.where == "rx" and r.kind in (ACK, NACK):
            view.ack(r)
    return bad


def j_reorder(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    bad = _no_retx_of_acked(out)
    places = Counter(e.a for e in out.trace.of("place", 0))
    f = out.flows[0]
    exact = f.placed_bytes == f.nbytes and all(c == 1 for c in places.values())
    ok = not bad and exact and _finished(out)
    return _ok(
        ok,
        f"{len(bad)} retransmissions of acknowledged data; placed {f.placed_bytes} "
        f"of {f.nbytes} bytes",
    )


def j_completion_order(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    done = [e.a for e in out.trace.of("complete", 0)]
    n = 8
    return _ok(done == list(range(n)), f"completions {done}, expected 0..{n - 1} in order")


def j_dup(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    done = Counter(e.a for e in out.trace.of("complete", 0))
    twice = [m for m, c in done.items() if c > 1]
    ok = not twice and len(done) == 4 and out.flows[0].placed_bytes == out.flows[0].nbytes
    return _ok(ok, f"messages completed more than once: {twice}; {len(done)} of 4 completed")


def j_exact(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    f = out.flows[0]
    done = len(out.trace.of("complete", 0))
    ok = _finished(out) and f.placed_bytes == f.nbytes and done == 4
    return _ok(ok, f"placed {f.placed_bytes} of {f.nbytes} bytes, {done} of 4 messages")


def j_one_retx(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    counts = tx_counts(out.trace)
    extra = {s: c - 1 for s, c in counts.items() if c > 1}
    ok = extra == {10: 1} and _finished(out)
    return _ok(ok, f"retransmitted {dict(sorted(extra.items())[:8])} (expected {{10: 1}})")


def j_sack(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    got: dict[int, set[int]] = defaultdict(set)
    wrong = checked = 0
    for r in out.trace.records:
        if r.flow != 0:
            continue
        if r.where == "rx" and r.kind == DATA and not r.trimmed and r.host == 5:
            got[r.path].add(r.pseq if r.path >= 0 else r.seq)
        elif r.where == "tx" and r.kind == ACK and r.host == 5:
            have = got[r.path]
            cum = 0
            while cum in have:
                cum += 1
            width = 256 if r.path >= 0 else 64
            bits = sum(1 << i for i in range(width) if cum + 1 + i in have)
            checked += 1
            if r.cum != cum or r.sack != bits:
                wrong += 1
    return _ok(wrong == 0 and checked > 0, f"{wrong} of {checked} SACKs differ from what arrived")


def j_trim(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    counts = tx_counts(out.trace)
    first = next(r for r in data_tx(out.trace) if r.seq == 10)
    downs = [
        e for e in out.trace.events if e.what in ("ev-down", "path-down") and (e.b == first.ev)
    ]
    later = [r for r in data_tx(out.trace) if r.ev == first.ev and r.t > first.t]
    ok = counts[10] == 2 and retransmissions(out.trace) == 1 and not downs and bool(later)
    return _ok(
        ok,
        f"seq 10 sent {counts[10]}x, {retransmissions(out.trace)} retransmissions, "
        f"its EV failed {len(downs)}x, used {len(later)}x after",
    )


def j_tail(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    tx = data_tx(out.trace)
    last = max(r.seq for r in tx)
    t0 = min(r.t for r in tx if r.seq == last)
    f = out.flows[0]
    bound = 2000 * US
    ok = _finished(out) and f.finish_ps - t0 <= bound
    took = (f.finish_ps - t0) / US if f.finish_ps >= 0 else float("inf")
    return _ok(ok, f"tail recovered {took:.1f} us after its first send (bound 2000 us)")


def j_dead(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    errs = [e for e in out.trace.of("error", 0) if e.b == 3]
    if not errs:
        return _ok(False, "no error reported: the connection hangs")
    t = errs[0].t
    after = [r for r in data_tx(out.trace) if r.t > t]
    ok = t - 20 * US <= 20_000 * US and not after
    return _ok(
        ok,
        f"error after {(t - 20 * US) / US:.0f} us (bound 20 ms); "
        f"{len(after)} packets sent after it",
    )


def j_clean(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    n = retransmissions(out.trace)
    return _ok(n == 0 and _finished(out), f"{n} retransmissions on a clean fabric")


def j_window(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    worst = 0
    checked = 0
    for flow in range(len(out.flows)):
        cwnd: dict[int, int] = {}
        outstanding: dict[int, int] = {}  # seq -> path
        sizes: dict[int, int] = {}
        view = AckView()
        per_path = "path_windows" in impl.features
        evs = {(e.t, e.a, e.b) for e in out.trace.of("cwnd", flow)}
        events = sorted(evs)
        k = 0
        for r in sender_view(out.trace, flow, flow):
            while k < len(events) and events[k][0] <= r.t:
                cwnd[events[k][1]] = events[k][2]
                k += 1
            if r.where == "rx" and r.kind in (ACK, NACK):
                view.ack(r)
                if r.kind == NACK:
                    outstanding.pop(r.seq, None)
                for s in [s for s in outstanding if view.covered(s)]:
                    del outstanding[s]
            elif r.where == "tx" and r.kind == DATA:
                view.sent(r)
                path = r.path if per_path else -1
                outstanding[r.seq] = path
                sizes[r.seq] = r.payload
                inflight = sum(sizes[s] for s, p in outstanding.items() if p == path)
                if path in cwnd:
                    checked += 1
                    worst = max(worst, inflight - cwnd[path])
    return _ok(
        worst <= 0 and checked > 0,
        f"{checked} sends checked; worst excess over the window {max(worst, 0)} bytes",
    )


def _goodput(out: Outcome, flow: int = 0) -> float:
    f = out.flows[flow]
    return f.nbytes / max(f.finish_ps, 1) if f.finish_ps >= 0 else 0.0


def j_ecn_shift(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    clean, marked = o[0], o[1]
    tx = data_tx(marked.trace)
    share = sum(1 for r in tx if r.ev % 2 == 0) / max(len(tx), 1)
    ratio = _goodput(marked) / max(_goodput(clean), 1e-12)
    ok = share <= 0.35 and ratio >= 0.85
    return _ok(
        ok,
        f"marked EVs carry {share:.2f} of packets (bound 0.35), goodput "
        f"{ratio:.2f} of the unmarked run (bound 0.85)",
    )


def j_incast_queue(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    bound = 384 * 1024
    ok = out.max_queue_bytes <= bound and all(_finished(out, i) for i in range(len(out.flows)))
    return _ok(ok, f"largest queue {out.max_queue_bytes / 1024:.0f} KiB (bound 384 KiB)")


def j_jain(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    rates = [_goodput(out, i) for i in range(len(out.flows) - 1)]
    jain = sum(rates) ** 2 / (len(rates) * sum(x * x for x in rates)) if any(rates) else 0.0
    return _ok(jain >= 0.9, f"Jain fairness {jain:.3f} over {len(rates)} incast flows (≥ 0.9)")


def j_victim(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    n = len(out.flows) - 1
    line = gbps(100) / BITS_PER_BYTE / PS_PER_S  # bytes per ps of one 100G port
    fair = line * (1 - 1 / n)
    got = _goodput(out, n)
    return _ok(
        got >= 0.9 * fair, f"victim at {got / fair:.2f} of its max-min fair rate (bound 0.9)"
    )


def j_credit(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    worst, checked = 0, 0
    for flow in range(len(out.flows)):
        spec = sum(e.a for e in out.trace.of("spec-window", flow))
        extra_events = sorted(e.t for e in out.trace.of("spec-extra", flow))
        credit = 0
        sent = 0
        k = 0
        for r in sender_view(out.trace, flow, flow):
            if r.where == "rx" and r.kind == PULL:
                credit = max(credit, r.cum)
            elif r.where == "tx" and r.kind == DATA:
                while k < len(extra_events) and extra_events[k] <= r.t:
                    k += 1
                sent += MSS
                checked += 1
                worst = max(worst, sent - (spec + (credit + k) * MSS))
    return _ok(
        worst <= 0 and checked > 0,
        f"{checked} sends; worst excess over credit + speculative window {worst} bytes",
    )


def j_hint(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    t0 = 50 * US
    start = t0 + 2 * out.base_rtt_ps
    span = 40 * US
    sent = sum(
        r.payload + 64
        for r in out.trace.records
        if r.where == "tx" and r.kind == DATA and start <= r.t < start + span
    )
    rate = sent * BITS_PER_BYTE / to_s(span)
    target = 40e9
    return _ok(
        abs(rate - target) <= 0.15 * target,
        f"senders at {to_gbps(rate):.1f} Gb/s from 2 RTTs after the hint (target 40, ±15%)",
    )


def _crossing(r: Record, link: int) -> bool:
    return 2 * link in r.route or 2 * link + 1 in r.route


def j_leave_path(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    link = _uplink_of(8, 1, 8, 0)
    t = 30 * US
    bound = 200 * US
    late = [r for r in data_tx(out.trace) if r.t > t + bound and _crossing(r, link)]
    before = [r for r in data_tx(out.trace) if r.t <= t and _crossing(r, link)]
    ok = bool(before) and not late and _finished(out)
    return _ok(
        ok,
        f"{len(before)} packets on the link before, {len(late)} later than 200 us "
        f"after the failure; finished: {_finished(out)}",
    )


def j_probe(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    downs = [e for e in out.trace.events if e.what in ("ev-down", "path-down") and e.flow == 0]
    if not downs:
        return _ok(False, "no path was marked failed after the link failure")
    recs = sender_view(out.trace, 0, 0)
    bad = 0
    for e in downs:
        by_path = e.what == "path-down"
        probed = False
        for r in recs:
            if r.t <= e.t:
                continue
            same = (r.path == e.a) if by_path else (r.ev == e.b or r.echo == e.b)
            if not same:
                continue
            if r.where == "rx" and r.kind == PROBE_ACK:
                probed = True
            elif r.where == "tx" and r.kind == DATA and not probed:
                bad += 1
                break
            if by_path and r.where == "rx" and r.kind == PROBE_ACK:
                break
    return _ok(bad == 0, f"{len(downs)} paths failed; {bad} reused before a probe succeeded")


def j_plane(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)

    def rate(a: int, b: int) -> float:
        return sum(
            r.payload
            for r in out.trace.records
            if r.where == "rx" and r.kind == DATA and r.flow == 0 and not r.trimmed and a <= r.t < b
        ) / (b - a)

    before = rate(40 * US, 100 * US)
    after = rate(250 * US, 330 * US)
    ratio = after / before if before else 0.0
    ok = abs(ratio - 0.75) <= 0.1 and _finished(out)
    return _ok(ok, f"throughput after losing 1 of 4 planes: {ratio:.2f} of before (0.75 ± 0.1)")


def j_gray(o: Sequence[Outcome], impl: Implementation) -> Verdict:
    out = _one(o)
    link = _uplink_of(8, 1, 8, 0)
    t = 30 * US
    tx = data_tx(out.trace)
    pre = [r for r in tx if r.t <= t]
    post = [r for r in tx if r.t > t + 100 * US]
    s0 = sum(_crossing(r, link) for r in pre) / max(len(pre), 1)
    s1 = sum(_crossing(r, link) for r in post) / max(len(post), 1)
    span = (post[-1].t - post[0].t) if len(post) > 1 else 0
    onto = sum(r.payload + 64 for r in post if _crossing(r, link))
    rate = onto * BITS_PER_BYTE / to_s(span) if span else 0.0
    cap = 0.1 * 100e9
    ok = s0 > 0 and s1 < s0 and rate <= 1.1 * cap and _finished(out)
    return _ok(
        ok,
        f"share of packets on the gray link {s0:.3f} before, {s1:.3f} after; sent "
        f"onto it at {to_gbps(rate):.1f} Gb/s (its rate now 10, bound 11)",
    )


def _iso(code: int) -> Judge:
    def judge(o: Sequence[Outcome], impl: Implementation) -> Verdict:
        out = _one(o)
        forged = out.trace.of("forged", 0)
        errs = [e for e in out.trace.of("error", 0) if e.b == code]
        t = forged[0].t if forged else -1
        wrote = [e for e in out.trace.of("place", 0) if e.t == t and e.a == 200]
        f = out.flows[0]
        ok = bool(errs) and not wrote and f.placed_bytes == f.nbytes and _finished(out)
        return _ok(
            ok,
            f"{len(errs)} errors raised, forged packet placed: {bool(wrote)}, "
            f"placed {f.placed_bytes} of {f.nbytes}",
        )

    return judge


# -- the catalogue -------------------------------------------------------------------------

F = frozenset
_RTT_DELAY = 25 * US


def _c(
    id: str,
    group: str,
    title: str,
    purpose: str,
    setup: str,
    procedure: str,
    observable: str,
    scenarios: Callable[[Implementation], tuple[Scenario, ...]],
    judge: Judge,
    requires: frozenset[str] = F(),
    any_of: frozenset[str] = F(),
    capture: bool = False,
) -> Check:
    return Check(
        id,
        group,
        title,
        purpose,
        setup,
        procedure,
        observable,
        requires,
        any_of,
        scenarios,
        judge,
        capture,
    )


CHECKS: tuple[Check, ...] = (
    _c(
        "SPR-01",
        "spraying",
        "every EV used, balanced",
        "A sprayer spreads a connection over all its active entropy values evenly.",
        "8 hosts, 2 planes, 2-tier; one 2 MB flow 0→5; no impairment.",
        "Run to completion; count data packets per EV at the sender.",
        "Distinct EVs ≥ min(declared EVs, packets); every EV within ±50% of the mean count.",
        lambda i: (_single(2 << 20),),
        j_spray_balance,
        F({"spray"}),
        capture=True,
    ),
    _c(
        "SPR-02",
        "spraying",
        "a denied EV not used after one RTT",
        "The control plane can take an EV out of use and the sender obeys at once.",
        "8 hosts, 2 planes; one 2 MB flow 0→5.",
        "At 30 us deny the EV the sender used last.",
        "No data packet carries that EV later than one base RTT after the denial.",
        lambda i: (
            Scenario(flows=(FlowSpec(0, 5, 2 << 20),), actions=(Action(30 * US, "deny-ev", 0),)),
        ),
        j_denied,
        F({"ev_deny"}),
    ),
    _c(
        "SPR-03",
        "spraying",
        "per-plane byte shares balanced",
        "A multi-plane connection loads each plane equally.",
        "8 hosts, 2 planes; one 2 MB flow 0→5.",
        "Run to completion; sum data bytes per NIC plane at the sender.",
        "Each plane's share within 1/P ± 0.05.",
        lambda i: (_single(2 << 20),),
        j_planes,
        F({"multi_plane"}),
        capture=True,
    ),
    _c(
        "ORD-01",
        "ordering",
        "reordering: nothing acknowledged is resent, bytes exact",
        "Out-of-order arrival must not trigger retransmission of data the receiver has.",
        "8 hosts, 2 planes; one 1 MB flow 0→5; every 5th data packet delayed by 25 us.",
        "Run to completion; replay the ACKs the sender received.",
        "No data packet is sent after an ACK covered it; the receiver placed each packet once "
        "and exactly the flow's bytes.",
        lambda i: (_single(1 << 20, rules=(Rule("delay", every=5, delay_ps=_RTT_DELAY),)),),
        j_reorder,
        F({"out_of_order"}),
        capture=True,
    ),
    _c(
        "ORD-02",
        "ordering",
        "completions in posting order",
        "Messages complete in the order they were posted even when their packets arrive out "
        "of order.",
        "8 hosts, 2 planes; one flow of 8 messages (12, 40, 4, 64, 8, 100, 20, 16 KiB); every "
        "4th packet delayed by 25 us.",
        "Run to completion; collect completion events.",
        "Completions are exactly messages 0..7 in that order.",
        lambda i: (
            Scenario(
                flows=(
                    FlowSpec(
                        0,
                        5,
                        sum(m << 10 for m in (12, 40, 4, 64, 8, 100, 20, 16)),
                        0,
                        tuple(m << 10 for m in (12, 40, 4, 64, 8, 100, 20, 16)),
                    ),
                ),
                rules=(Rule("delay", every=4, delay_ps=_RTT_DELAY),),
            ),
        ),
        j_completion_order,
        F({"ordered_completions"}),
    ),
    _c(
        "ORD-03",
        "ordering",
        "a duplicate causes no second completion",
        "A duplicated packet (e.g. a spurious retransmission) must not complete twice.",
        "8 hosts, 2 planes; one flow of 4 messages of 64 KiB; the last packet of message 0 "
        "and every 7th packet delivered twice.",
        "Run to completion; count completion events per message.",
        "Every message completes exactly once; bytes placed equal the flow's.",
        lambda i: (
            Scenario(
                flows=(FlowSpec(0, 5, 4 << 16, 0, (1 << 16,) * 4),),
                rules=(Rule("dup", seq=15), Rule("dup", every=7)),
            ),
        ),
        j_dup,
    ),
    _c(
        "ORD-04",
        "ordering",
        "delivered bytes exact on a clean fabric",
        "Conservation: what is posted is placed, once, and every message completes.",
        "8 hosts, 2 planes; one flow of 4 messages of 64 KiB.",
        "Run to completion.",
        "Bytes placed equal bytes posted; 4 completions; the flow finished.",
        lambda i: (Scenario(flows=(FlowSpec(0, 5, 4 << 16, 0, (1 << 16,) * 4),)),),
        j_exact,
    ),
    _c(
        "LOS-01",
        "loss recovery",
        "one drop, exactly one retransmission",
        "Selective repeat: a single loss costs a single retransmission (no go-back-N).",
        "8 hosts, 2 planes; one 1 MB flow 0→5; the first transmission of packet 10 dropped.",
        "Run to completion; count data transmissions per sequence.",
        "Packet 10 is sent exactly twice and no other packet more than once.",
        lambda i: (_single(1 << 20, rules=(Rule("drop", seq=10),)),),
        j_one_retx,
        F({"selective_retransmit"}),
        capture=True,
    ),
    _c(
        "LOS-02",
        "loss recovery",
        "every SACK matches what was received",
        "A SACK must claim exactly the packets that arrived, never more and never fewer.",
        "8 hosts, 2 planes; one 1 MB flow 0→5; packets 5 and 17 dropped once, every 6th "
        "delayed by 25 us.",
        "Replay the data arriving at the receiver and each ACK it sends.",
        "Each ACK's cumulative point and bitmap (per path for per-path SACK) equal those of "
        "the packets received so far.",
        lambda i: (
            _single(
                1 << 20,
                rules=(
                    Rule("drop", seq=5),
                    Rule("drop", seq=17),
                    Rule("delay", every=6, delay_ps=_RTT_DELAY),
                ),
            ),
        ),
        j_sack,
        F({"sack"}),
        capture=True,
    ),
    _c(
        "LOS-03",
        "loss recovery",
        "a trimmed packet resent, its path not failed",
        "A trim is congestion, not failure: resend the packet, keep the path.",
        "8 hosts, 2 planes; one 2 MB flow 0→5; the first transmission of packet 10 trimmed "
        "to its header.",
        "Run to completion; follow packet 10 and its EV.",
        "Packet 10 sent twice, one retransmission in all, no path-failure event for its EV, "
        "and the EV carries data again afterwards.",
        lambda i: (_single(2 << 20, rules=(Rule("trim", seq=10),)),),
        j_trim,
        F({"trim"}),
    ),
    _c(
        "LOS-04",
        "loss recovery",
        "a lost tail recovered within the bound",
        "Losing the last packet (no later packet reveals the gap) is recovered by timeout.",
        "8 hosts, 2 planes; one 256 KiB flow 0→5; the first transmission of the last packet "
        "dropped.",
        "Run; time from the last packet's first send to completion.",
        "The flow completes within 2 ms of that send.",
        lambda i: (_single(256 << 10, rules=(Rule("drop", seq=63),)),),
        j_tail,
    ),
    _c(
        "LOS-05",
        "loss recovery",
        "all paths dead: error after the retry budget",
        "A connection with no way through must fail cleanly instead of hanging.",
        "8 hosts, 2 planes; one 4 MB flow 0→5; every NIC port of host 0 fails at 20 us.",
        "Run up to 30 ms.",
        "The connection reports a give-up error within 20 ms of the failure and sends no "
        "data after it.",
        lambda i: (
            Scenario(
                flows=(FlowSpec(0, 5, 4 << 20),),
                duration_ps=30_000 * US,
                actions=(
                    Action(20 * US, "fail", arg="port:0:0@0"),
                    Action(20 * US, "fail", arg="port:0:1@0"),
                ),
            ),
        ),
        j_dead,
        F({"retry_budget"}),
    ),
    _c(
        "LOS-06",
        "loss recovery",
        "no spurious retransmission",
        "On a clean, uncongested fabric nothing is resent.",
        "8 hosts, 2 planes; one 1 MB flow 0→5.",
        "Run to completion.",
        "Zero retransmissions; the flow finished.",
        lambda i: (_single(1 << 20),),
        j_clean,
        capture=True,
    ),
    _c(
        "CC-01",
        "congestion control",
        "bytes in flight never exceed the window",
        "A window-based sender keeps its unacknowledged bytes within its window.",
        "8 hosts, 1 plane; 4-to-1 incast of 512 KiB flows; 4 MiB switch buffers (no loss).",
        "Replay sends and ACKs at each sender against the windows it reports.",
        "At every send, unacknowledged bytes (per path for per-path windows) ≤ the window.",
        lambda i: (_incast(4, 512 << 10, config={"buffer_bytes": 4 << 20}),),
        j_window,
        F({"window"}),
    ),
    _c(
        "CC-02",
        "congestion control",
        "partial ECN marking shifts load, total kept",
        "ECN on some paths moves traffic to the others instead of slowing the connection.",
        "8 hosts, 2 planes; one 8 MB flow 0→5; run twice: clean, and with every data packet "
        "on an even EV ECN-marked.",
        "Compare the share of packets on even EVs and the goodput of the two runs.",
        "Even EVs carry ≤ 0.35 of packets; goodput ≥ 0.85 of the clean run's (half the EVs "
        "left means less path diversity: 15% allowance).",
        lambda i: (
            _single(8 << 20),
            _single(8 << 20, rules=(Rule("mark", ev_mod=(2, 0), first_only=False),)),
        ),
        j_ecn_shift,
        F({"ecn_per_ev"}),
    ),
    _c(
        "CC-03",
        "congestion control",
        "incast keeps queues bounded",
        "N-to-1 incast must not fill switch buffers.",
        "8 hosts, 1 plane; 6-to-1 incast of 1 MB flows and a 2 MB victim flow 0→6.",
        "Run to completion; record the largest switch queue from 150 us on (about 10 base RTTs: "
        "after the first windows' burst).",
        "Largest queue ≤ 384 KiB (three quarters of a 512 KiB port buffer); all flows finish.",
        lambda i: (_incast(6, 1 << 20, victim=True),),
        j_incast_queue,
        any_of=F({"ecn_cc", "receiver_credit"}),
    ),
    _c(
        "CC-04",
        "congestion control",
        "incast fairness",
        "Senders of an incast share the receiver fairly.",
        "As CC-03.",
        "Throughput of each incast flow = bytes / completion time.",
        "Jain's index over the incast flows ≥ 0.9.",
        lambda i: (_incast(6, 1 << 20, victim=True),),
        j_jain,
        any_of=F({"ecn_cc", "receiver_credit"}),
    ),
    _c(
        "CC-05",
        "congestion control",
        "a victim flow keeps ≥ 90% of its rate",
        "Congestion at one receiver must not spread to flows that do not cross it.",
        "As CC-03: the victim leaves incast sender 0 for host 6.",
        "Victim throughput against its max-min fair rate (line rate less sender 0's incast "
        "share, R(1 - 1/6)).",
        "Victim ≥ 0.9 of its fair rate.",
        lambda i: (_incast(6, 1 << 20, victim=True),),
        j_victim,
        any_of=F({"ecn_cc", "receiver_credit"}),
    ),
    _c(
        "RCV-01",
        "receiver-driven",
        "sent ≤ credit granted + speculative window",
        "A receiver-driven sender never exceeds what it was granted.",
        "8 hosts, 1 plane; 3-to-1 incast of 512 KiB flows.",
        "Replay each sender's data sends against pulls received and its declared speculative "
        "window (plus one speculative packet per declared timeout).",
        "Bytes sent never exceed credit + speculative window.",
        lambda i: (_incast(3, 512 << 10),),
        j_credit,
        F({"receiver_credit"}),
    ),
    _c(
        "RCV-02",
        "receiver-driven",
        "senders converge to the receiver's rate in 2 RTTs",
        "A receiver's rate hint (or pull rate) controls its senders promptly.",
        "8 hosts, 1 plane; 2-to-1 incast of 2 MB flows; at 50 us the receiver's rate is set "
        "to 40 Gb/s.",
        "Measure the senders' data rate over 40 us starting 2 base RTTs after the hint.",
        "Aggregate sending rate within 40 Gb/s ± 15%.",
        lambda i: (_incast(2, 2 << 20, actions=(Action(50 * US, "rx-rate", 7, arg="40e9"),)),),
        j_hint,
        any_of=F({"receiver_credit", "rate_hint"}),
    ),
    _c(
        "FAIL-01",
        "failure handling",
        "traffic leaves a failed path, connection survives",
        "After a hard failure new packets stop using the dead path within a bound.",
        "8 hosts, 1 plane; one 4 MB flow 0→5; a leaf-spine link of host 0's leaf fails at 30 us.",
        "Follow the routes of data packets.",
        "Packets crossed the link before; none later than 200 us after the failure; the flow "
        "finishes.",
        lambda i: (
            Scenario(
                flows=(FlowSpec(0, 5, 4 << 20),),
                planes=1,
                actions=(Action(30 * US, "fail", arg=f"link:{_uplink_of(8, 1, 8, 0)}@0"),),
            ),
        ),
        j_leave_path,
        F({"spray"}),
    ),
    _c(
        "FAIL-02",
        "failure handling",
        "a failed path reused only after a probe succeeds",
        "Recovery is probe-driven: no data on a path until it is shown to work.",
        "8 hosts, 1 plane; one 8 MB flow 0→5; a leaf-spine link of host 0's leaf down from "
        "30 to 150 us.",
        "For every path-failure event, follow that path (EV or path index).",
        "Its next data packet comes after a probe answer; at least one path was failed.",
        lambda i: (
            Scenario(
                flows=(FlowSpec(0, 5, 8 << 20),),
                planes=1,
                actions=(Action(30 * US, "fail", arg=f"link:{_uplink_of(8, 1, 8, 0)}@0-120us"),),
            ),
        ),
        j_probe,
        F({"probe"}),
    ),
    _c(
        "FAIL-03",
        "failure handling",
        "a plane failure settles near (P-1)/P",
        "Losing one of P planes costs that plane's share, no more.",
        "8 hosts, 4 planes; one 16 MB flow 0→5; plane 3 fails at 100 us.",
        "Receiver goodput over 40-100 us against 250-330 us.",
        "Ratio 0.75 ± 0.1; the flow finishes.",
        lambda i: (
            Scenario(
                flows=(FlowSpec(0, 5, 16 << 20),),
                planes=4,
                actions=(Action(100 * US, "fail", arg="plane:3@0"),),
            ),
        ),
        j_plane,
        F({"multi_plane"}),
    ),
    _c(
        "FAIL-04",
        "failure handling",
        "a gray failure lowers that path's share",
        "A link at a fraction of its rate should carry less, without being declared dead.",
        "8 hosts, 1 plane; one 4 MB flow 0→5; a leaf-spine link of host 0's leaf drops to 10% "
        "of its rate at 30 us.",
        "Share of data packets routed over that link before 30 us and after 130 us; the rate "
        "at which the sender puts data onto it after 130 us.",
        "The share falls, the sender puts no more onto the link than it can now carry "
        "(at most 1.1 times 10 Gb/s), and the flow finishes.",
        lambda i: (
            Scenario(
                flows=(FlowSpec(0, 5, 4 << 20),),
                planes=1,
                actions=(Action(30 * US, "fail", arg=f"link:{_uplink_of(8, 1, 8, 0)}@0*0.1"),),
            ),
        ),
        j_gray,
        any_of=F({"ecn_per_ev", "path_windows"}),
    ),
    _c(
        "ISO-01",
        "isolation",
        "a wrong key writes nothing and raises an error",
        "Packets that fail the security check must not touch memory.",
        "8 hosts, 2 planes; one 1 MB flow 0→5; at 5 us a data packet for sequence 200 with a "
        "wrong key is delivered to the receiver.",
        "Run to completion; watch placement and error events.",
        "A bad-key error is raised, nothing is placed from the forged packet, the flow's "
        "bytes are exact.",
        lambda i: (_single(1 << 20, actions=(Action(5 * US, "forge", 0, 200, "key"),)),),
        _iso(1),
        F({"keys"}),
    ),
    _c(
        "ISO-02",
        "isolation",
        "a wrong job ID writes nothing and raises an error",
        "Tenant isolation: another job's packet is refused.",
        "As ISO-01 with a wrong job ID instead of a wrong key.",
        "Run to completion; watch placement and error events.",
        "A bad-job error is raised, nothing is placed from the forged packet, the flow's "
        "bytes are exact.",
        lambda i: (_single(1 << 20, actions=(Action(5 * US, "forge", 0, 200, "job"),)),),
        _iso(2),
        F({"keys"}),
    ),
)


def by_id(ids: Sequence[str]) -> tuple[Check, ...]:
    known = {c.id: c for c in CHECKS}
    return tuple(known[i] for i in ids if i in known)
