"""Runs whose flows do not all finish say which and why; the receiver-driven stall of issue 15
(a NACK arriving after the pull its header earned) is gone.

Two hosts under one leaf for the transport's state machine::

    h0 ──1us── leaf ──1us── h1
"""

from __future__ import annotations

import pytest

from clusterloom.sim.failures import parse_failure
from clusterloom.sim.packet._core import (
    R_BOFF,
    R_COLS,
    R_PULLS,
    TAG_EVI_SHIFT,
    TAG_FLOW_SHIFT,
    TAG_MADE,
    TAG_RX,
)
from clusterloom.sim.packet.base import ConnSpec
from clusterloom.sim.packet.engine import ACK, NACK, PULL, Packet, PacketSim
from clusterloom.sim.packet.fabrics import small_fabric
from clusterloom.sim.packet.run import config_for, run_packets
from clusterloom.sim.packet.transports import _NO_PACKETS, _ROUTE_BATCH, ReceiverDriven
from clusterloom.sim.traffic import Traffic


@pytest.fixture(scope="module")
def pair():  # type: ignore[no-untyped-def]
    return small_fabric(2, radix=4)


def _two_packet_flow(pair) -> tuple[PacketSim, ReceiverDriven]:  # type: ignore[no-untyped-def]
    sim = PacketSim(pair, config_for("receiver-driven"))
    conn = ReceiverDriven(sim, 0, 0, 1, 2 * 4096, 0, ConnSpec())
    sim.add(conn)
    conn.on_timer(0, 0)  # the speculative window: both packets
    assert conn.tx_count == [1, 1]
    return sim, conn


def _to_sender(kind: int, seq: int = 0, cum: int = 0) -> Packet:
    p = Packet(kind, 0, 1, 0, seq)
    p.cum = cum
    return p


def test_a_nack_after_its_pull_is_resent_at_once(pair) -> None:  # type: ignore[no-untyped-def]
    """Packet 1 is trimmed; its header earns a pull that overtakes the NACK (a different
    reverse path). The pull finds nothing to send; before the fix it was lost, the NACKed
    packet waited for a pull that never came and the connection failed (retry-exceeded)."""
    _, conn = _two_packet_flow(pair)
    conn.sender_packet(_to_sender(ACK, 0), 10)
    conn.sender_packet(_to_sender(PULL, cum=1), 11)  # nothing to send: kept as credit
    assert conn.credit == 1 and conn.tx_count == [1, 1]
    conn.sender_packet(_to_sender(NACK, 1), 12)
    assert conn.tx_count == [1, 2] and conn.credit == 0


def test_a_packet_waiting_with_nothing_in_flight_is_resent_at_the_timeout(pair) -> None:  # type: ignore[no-untyped-def]
    _, conn = _two_packet_flow(pair)
    conn.sender_packet(_to_sender(ACK, 0), 10)
    conn.sender_packet(_to_sender(NACK, 1), 12)  # no pull came, none will
    assert conn.tx_count == [1, 1] and conn.inflight == 0
    conn.on_timer(1, conn.rto)
    assert conn.tx_count == [1, 2]


def test_unfinished_flows_are_named_with_their_cause(pair) -> None:  # type: ignore[no-untyped-def]
    """A chain 0 -> 1 -> 0 -> 1 over a link that dies at once: the first connection gives up,
    the two after it never start; the report names them and the cause."""
    chain = Traffic.from_arrays(
        [0, 1, 0], [1, 0, 1], [64 * 1024] * 3, n_hosts=2, deps=[[], [0], [1]]
    )
    dead = parse_failure("link:0@0", pair)  # host 0's link to the leaf
    r = run_packets(pair, chain, "roce-ecmp", (dead,), options={"retries": 1, "rto_us": 10})
    assert r.finished == 0 and bool(r.failed[0])
    text = "\n".join(r.unfinished)
    assert "1 connection(s) gave up (retry-exceeded): flow 0 (0->1)" in text
    assert "2 flow(s) never started" in text and "(flow 0 (0->1))" in text
    assert "flow 1 (1->0), 2 (0->1)" in text
    ok = run_packets(pair, chain, "roce-ecmp")
    assert ok.finished == 3 and ok.unfinished == ()


def test_a_zero_byte_flow_started_by_a_dependency_finishes(pair) -> None:  # type: ignore[no-untyped-def]
    """A barrier (zero bytes) after a flow used to start and never finish, so the flow after
    it never started."""
    chain = Traffic.from_arrays(
        [0, 0, 1], [1, 1, 0], [8192, 0, 8192], n_hosts=2, deps=[[], [0], [1]]
    )
    for name in ("roce-ecmp", "receiver-driven"):
        r = run_packets(pair, chain, name)
        assert r.finished == 3, (name, r.unfinished)
        assert r.finish_ps[1] == r.finish_ps[0]


def _chained_ring(n_hosts: int, group: int, nbytes: int) -> Traffic:
    """A ring all-reduce in groups of ``group`` ranks strided across the fabric (rank r of
    group g is host g + r * n_hosts / group), its 2(group-1) steps chained: a rank sends
    step s once it has received step s-1."""
    src, dst, deps = [], [], []
    stride = n_hosts // group
    for g in range(stride):
        base = len(src)
        for s in range(2 * (group - 1)):
            for r in range(group):
                src.append(g + r * stride)
                dst.append(g + ((r + 1) % group) * stride)
                deps.append([] if s == 0 else [base + (s - 1) * group + (r - 1) % group])
    return Traffic.from_arrays(src, dst, nbytes // group, n_hosts=n_hosts, deps=deps)


def test_connections_are_made_when_they_start_and_their_paths_dropped_when_done() -> None:
    from clusterloom.sim.packet.run import build, start_with_deps

    fabric = small_fabric(8, planes=2)
    load = _chained_ring(8, 4, 4 * 64 * 1024)  # 2 groups of 4, 6 steps: 48 flows
    sim = PacketSim(fabric, config_for("mrc-spray"))
    flows = build(sim, load, "mrc-spray")
    finished = start_with_deps(sim, load, flows)
    made = [c is not None for c in flows.live]
    roots = [i for i in range(len(load)) if not load.deps(i).size]
    assert [i for i, m in enumerate(made) if m] == roots and len(roots) == 8  # step 0 only
    # its paths (128 EVs, both ways) are held by each connection, none in the engine's table
    assert [(len(c._fwd), len(c._rev)) for c in flows.live if c is not None] == [(128, 128)] * 8
    assert len(sim._static) == 0
    sim.run()
    assert all(c is not None and c.finish_ps >= 0 for c in flows.live)
    held = [c for c in flows.live if c is not None]
    assert all(flows.retire(i) for i in finished)
    assert all(not c._fwd and not c._rev for c in held)  # dropped with the connection
    assert _NO_PACKETS == []  # the EVs' shared empty list of packets in flight stayed empty
    assert len(sim._static) == 0


def test_held_source_routes_are_made_in_batches_as_their_evs_are_first_used() -> None:
    """A connection's source routes are computed 32 EVs at a time, on the first packet of
    one of them: before the run only EV 0's batch (the base RTT reads EV 0's route); after a
    flow of 40 packets (EVs 1 to 40 round-robin, 128 EVs) the first two batches, the others
    never. Each held route is the one the engine computes for that key, both ways."""
    from clusterloom.sim.packet.run import build, start_with_deps

    fabric = small_fabric(8, planes=2)
    cfg = config_for("mrc-spray")
    load = Traffic.from_arrays([0], [5], 40 * cfg.mtu, n_hosts=8)
    sim = PacketSim(fabric, cfg)
    flows = build(sim, load, "mrc-spray")
    start_with_deps(sim, load, flows)
    (c,) = [c for c in flows.live if c is not None]
    assert c.k == 128 and _ROUTE_BATCH == 32
    held = [i for i in range(c.k) if c._fwd[i] is not None]
    assert held == list(range(32)) and held == [i for i in range(c.k) if c._rev[i] is not None]
    sim.run()
    assert c.finish_ps >= 0
    if not c._loop:  # in the loop (a plain engine) the EVs' lists are its records
        used = [i for i in range(c.k) if c.ev_out[i] is not _NO_PACKETS]
        assert used == list(range(1, 41))
    assert [i for i in range(c.k) if c._fwd[i] is not None] == list(range(64))
    assert all(c._rev[i] is not None for i in range(64)) and c._rev[64:] == [None] * 64
    for i in range(64):
        port, ev = c.ev_port[i], c.evs[i]
        fwd, rev = c._fwd[i], c._rev[i]
        assert fwd is not None and rev is not None
        assert fwd[0] == sim.path(0, 5, port, ev, static=True, keep=False)
        assert rev[0] == sim.path(5, 0, port, ev, static=True, keep=False)
    assert len(sim._static) == 0


@pytest.mark.slow
def test_receiver_driven_finishes_the_chained_all_reduce_of_issue_15() -> None:
    """The case that failed (k=8, 128 hosts, groups of 8, 2 MB per step): flow 53 gave up
    (retry-exceeded) and its 7 dependents never started. About 70 s."""
    from clusterloom.sim.packet.fabrics import fat_tree

    fabric = fat_tree(8)
    r = run_packets(fabric, _chained_ring(128, 8, 16_000_000), "receiver-driven")
    assert r.finished == 1792 and r.unfinished == ()


def test_a_subclass_that_handles_packets_gets_its_pulls_and_acks_as_packets(pair) -> None:  # type: ignore[no-untyped-def]
    """``receiver-driven`` sends its ACKs and receives the compiled pacer's pulls without
    packet objects (``made_ack``, ``made_pull``); a subclass overriding ``sender_packet``
    (a plug-in, a conformance variant) is still handed every one of them as a packet."""
    seen: list[int] = []

    class Counting(ReceiverDriven):
        name = "receiver-driven-counting"

        def sender_packet(self, pkt: Packet, now: int) -> None:
            seen.append(pkt.kind)
            super().sender_packet(pkt, now)

    sim = PacketSim(pair, config_for("receiver-driven"))
    conn = Counting(sim, 0, 0, 1, 40 * 4096, 0, ConnSpec())
    sim.add(conn)
    conn.start()
    sim.run()
    assert conn.finish_ps >= 0 and conn.sender_done_ps >= 0
    assert seen.count(ACK) == 40  # one per packet, none lost on an idle pair
    pulls = sim.ep_state[conn.flow * R_COLS + R_PULLS]  # sent by the compiled pacer
    assert 0 < seen.count(PULL) == pulls
    plain = ReceiverDriven(
        PacketSim(pair, config_for("receiver-driven")), 0, 0, 1, 4096, 0, ConnSpec()
    )
    assert plain._made_acks and not conn._made_acks


def test_packet_flags_stay_shared_when_their_array_grows(pair) -> None:  # type: ignore[no-untyped-def]
    """A ``receiver-driven`` connection's received, acknowledged and outstanding flags are
    views of the engine's array the compiled loop reads; when more connections make it grow,
    the older ones' views are remade on the new array and keep what they held."""
    sim = PacketSim(pair, config_for("receiver-driven"))
    first = ReceiverDriven(sim, sim.reserve(1), 0, 1, 600 * 4096, 0, ConnSpec())
    first.got[5] = first.acked[6] = first.outstanding[7] = 1
    before = sim._b
    more = [ReceiverDriven(sim, sim.reserve(1), 0, 1, 600 * 4096, 0, ConnSpec()) for _ in range(4)]
    assert sim._b is not before  # it grew
    at, n = sim.ep_state[first.flow * R_COLS + R_BOFF], first.n
    assert (sim._b[at + 5], sim._b[at + n + 6], sim._b[at + 2 * n + 7]) == (1, 1, 1)
    first.got[9] = 1  # written through the new view
    assert sim._b[at + 9] == 1 and sum(sim._b[at : at + 3 * n]) == 4
    last = more[-1]
    assert sim.ep_state[last.flow * R_COLS + R_BOFF] == sim._b_used - 3 * last.n


def test_a_late_packet_the_loop_sent_is_rebuilt_alike_after_retirement(pair) -> None:  # type: ignore[no-untyped-def]
    """A data packet the compiled loop sent has no object; Python builds one when it must
    take it, from the connection (``made_data``) or, once the connection is retired, from
    its answerer, which computes the EV again from its index: the same packet either way."""
    sim = PacketSim(pair, config_for("receiver-driven"))
    conn = ReceiverDriven(sim, sim.reserve(1), 0, 1, 10 * 4096 + 100, 0, ConnSpec(key=7, job=3))
    light = conn.retired()
    fields = ("kind", "flow", "src", "dst", "seq", "payload", "size", "key", "job", "msg", "ev")
    for i, seq in ((0, 0), (5, 3), (63, 10), (17, 9)):
        tag = TAG_RX | TAG_MADE | (conn.flow << TAG_FLOW_SHIFT) | (i << TAG_EVI_SHIFT) | seq
        a, b = conn.made_data(tag), light.made_data(tag)
        assert [getattr(a, f) for f in fields] == [getattr(b, f) for f in fields]
        assert a.port == b.port == conn.ev_port[i] and a.ev == conn.evs[i]
        assert a.payload == (100 if seq == 10 else 4096)
