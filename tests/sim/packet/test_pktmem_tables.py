"""The packet engine's memory (issue 15): tables shared or reused instead of kept per
connection, and finished connections replaced by small answerers, with every run unchanged.

Each saving is checked against the same run without it (the old behaviour, patched back in):
the figures of the run must be identical, and the saving must be real (less room used, fewer
objects kept)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.sim.crossval import HTSIM_ROCE, chained_ring_all_reduce
from clusterloom.sim.packet import base
from clusterloom.sim.packet.base import SHARED_MAX, ConnSpec, segments, shared
from clusterloom.sim.packet.engine import ACK, CNP, DATA, NACK, Packet, PacketSim
from clusterloom.sim.packet.fabrics import fat_tree, small_fabric
from clusterloom.sim.packet.run import PacketResult, build, config_for, run_packets
from clusterloom.sim.packet.transports import ReceiverDriven, RoceEcmp, _RoceAnswerer
from clusterloom.sim.traffic import Traffic
from helpers import packet_figures


@pytest.fixture(scope="module")
def k4():  # type: ignore[no-untyped-def]
    return fat_tree(4)


def _chain(hosts: int = 16) -> Traffic:
    """Ring all-reduces in groups of 4: 6 steps of 16 flows of 250 KB, each waiting on one
    flow of the step before (96 flows, at most 16 running; long enough that the run checks
    for finished connections, every 4,096 events, while the chain goes on)."""
    return chained_ring_all_reduce(hosts, 4, 1_000_000)


def _run(
    topology: Any, traffic: Traffic, transport: str, **kw: Any
) -> tuple[PacketResult, PacketSim]:
    held: list[PacketSim] = []
    res = run_packets(topology, traffic, transport, actions=[(0, held.append)], **kw)
    return res, held[0]


def _no_reuse(self: PacketSim, conn: int) -> None:
    """``drop_pull_routes`` as it was: the room is never given again."""
    self._rr_keys.pop(conn, None)


@pytest.mark.parametrize(
    ("transport", "kw"),
    [
        ("receiver-driven", {}),
        ("roce-ecmp", {"config": HTSIM_ROCE[0], "options": HTSIM_ROCE[1]}),
    ],
)
def test_pull_routes_room_is_reused_and_the_run_unchanged(
    k4: Any, monkeypatch: pytest.MonkeyPatch, transport: str, kw: dict[str, Any]
) -> None:
    """The loop's reverse routes (``_rr``) of a connection done at both ends go to the next
    connection: a chain of 96 flows, 16 at a time, uses the room of about 16 connections, not
    96, and every figure of the run is the same as without the reuse."""
    chain = _chain()
    got, sim = _run(k4, chain, transport, **kw)
    assert got.finished == len(chain)
    with monkeypatch.context() as m:
        m.setattr(PacketSim, "drop_pull_routes", _no_reuse)
        old, old_sim = _run(k4, chain, transport, **kw)
    assert packet_figures(got) == packet_figures(old)
    # without the reuse every connection has its own room: receiver-driven its pulls' and
    # its data's routes by EV, roce-ecmp its ACKs' route (and its data's, paced in the loop)
    per_conn, rest = divmod(old_sim._rr_used, len(chain))
    assert rest == 0
    assert per_conn == (2 * ReceiverDriven.defaults["evs"] if transport == "receiver-driven" else 2)
    assert sim._rr_used <= 2 * 16 * per_conn  # about the running ones' (a step overlaps)
    assert sim._rr_used < old_sim._rr_used / 2


def test_a_route_room_is_given_only_to_a_connection_of_its_size(k4: Any) -> None:
    sim = PacketSim(k4, config_for("receiver-driven"))
    keys = [(0, 5, 0, ev) for ev in range(8)]
    a = sim.pull_routes(0, keys)
    b = sim.pull_routes(1, keys[:3])
    assert (a, b) == (0, 8)
    sim.drop_pull_routes(0)
    sim.drop_pull_routes(0)  # a second drop frees nothing twice
    assert sim.pull_routes(2, keys[:3]) == 11  # the 8 free ones are not for 3
    assert sim.pull_routes(3, [(1, 6, 0, ev) for ev in range(8)]) == 0  # they are for 8
    assert sim.pull_routes(4, keys) == 14  # taken: new room
    ref = sim._route_offsets([(1, 6, 0, ev) for ev in range(8)])
    assert sim._rr[0:8].tolist() == ref  # the new owner's routes, not the old ones
    at, held = sim._rr_keys[3]
    assert at == 0 and held.tolist() == [[1, 6, 0, ev] for ev in range(8)]


@pytest.mark.parametrize(
    ("kw"),
    [{}, {"config": HTSIM_ROCE[0], "options": HTSIM_ROCE[1]}],
    ids=["dcqcn", "htsim"],
)
def test_finished_roce_connections_retire_and_the_run_is_unchanged(
    k4: Any, monkeypatch: pytest.MonkeyPatch, kw: dict[str, Any]
) -> None:
    chain = _chain()
    got, sim = _run(k4, chain, "roce-ecmp", **kw)
    assert got.finished == len(chain)
    light = sum(isinstance(c, _RoceAnswerer) for c in sim.conns)
    assert light >= len(chain) - 16  # all but the last checked ones
    with monkeypatch.context() as m:
        m.setattr(RoceEcmp, "retired", lambda self: None)
        old, old_sim = _run(k4, chain, "roce-ecmp", **kw)
    assert not any(isinstance(c, _RoceAnswerer) for c in old_sim.conns)
    assert packet_figures(got) == packet_figures(old)


def _finished_roce(dcqcn: bool) -> tuple[PacketSim, RoceEcmp]:
    """One 3-packet roce-ecmp flow from host 0 to host 1, run to its end (both ends done)."""
    fabric = small_fabric(2, radix=4)
    sim = PacketSim(fabric, config_for("roce-ecmp"))
    traffic = Traffic.from_arrays([0], [1], 3 * 4096, n_hosts=2)
    flows = build(sim, traffic, "roce-ecmp", options={"dcqcn": float(dcqcn)})
    (c,) = flows.make([0])
    c.start()
    sim.run()
    assert isinstance(c, RoceEcmp) and c.finish_ps >= 0 and c.sender_done_ps >= 0
    c.compact()
    return sim, c


def _late(kind: int, seq: int, *, to_sender: bool = False, ecn: bool = False) -> Packet:
    p = Packet(kind, 0, 1, 0, seq) if to_sender else Packet(kind, 0, 0, 1, seq, 4096)
    p.ecn = ecn
    p.cum = seq
    p.key, p.job = ConnSpec.key, ConnSpec.job  # the connection's security context
    return p


def _answers(
    sim: PacketSim, endpoint: Any, packets: list[tuple[int, Packet]]
) -> list[tuple[int, ...]]:
    sent: list[tuple[int, ...]] = []

    def capture(pkt: Packet, port: int, ev: int, *, source_route: bool = False) -> bool:
        sent.append((pkt.kind, pkt.flow, pkt.src, pkt.dst, pkt.seq, pkt.cum, pkt.size, port, ev))
        return True

    sim.send = capture  # type: ignore[method-assign]
    for now, pkt in packets:
        endpoint.on_packet(pkt, now)
    for token in range(3):
        endpoint.on_timer(token, packets[-1][0] + 1)
    del sim.send
    return sent


@pytest.mark.parametrize("dcqcn", [True, False])
def test_a_retired_roce_connection_answers_late_packets_as_the_connection(dcqcn: bool) -> None:
    """Duplicates (marked or not, one trimmed), packets to the sender (ACK, NACK, CNP) and
    every timer: the answerer sends what the finished connection sends, in order."""
    late = [
        (10**9, _late(DATA, 1, ecn=True)),  # a CNP (with DCQCN) and an ACK of 1, cum 3
        (10**9 + 5, _late(DATA, 0, ecn=True)),  # within the CNP interval: the ACK only
        (10**9 + 6, _late(DATA, 2)),
        (10**9 + 7, _trimmed(_late(DATA, 2, ecn=True))),
        (2 * 10**9, _late(DATA, 2, ecn=True)),  # the interval passed: a CNP again
        (2 * 10**9, _late(ACK, 1, to_sender=True)),
        (2 * 10**9, _late(NACK, 3, to_sender=True)),
        (2 * 10**9, _late(CNP, 0, to_sender=True)),
        (2 * 10**9, _wrong_key(_late(DATA, 0))),
    ]
    sim, conn = _finished_roce(dcqcn)
    light = conn.retired()
    assert isinstance(light, _RoceAnswerer)
    want = _answers(sim, conn, late)
    sim2, conn2 = _finished_roce(dcqcn)
    assert _answers(sim2, conn2.retired(), late) == want
    kinds = [a[0] for a in want]
    assert kinds.count(ACK) == 4 and kinds.count(CNP) == (2 if dcqcn else 0)
    assert all(a[5] == 3 for a in want if a[0] == ACK)  # the cumulative sequence at the end


def _trimmed(p: Packet) -> Packet:
    p.trimmed = True
    return p


def _wrong_key(p: Packet) -> Packet:
    p.key = 99
    return p


def test_a_roce_subclass_with_its_own_handlers_keeps_its_connection() -> None:
    class Mine(RoceEcmp):
        def receiver_packet(self, pkt: Packet, now: int) -> None:
            super().receiver_packet(pkt, now)

    _, conn = _finished_roce(False)
    conn.__class__ = Mine
    assert conn.retired() is None


# -- shared read-only state --------------------------------------------------------------


def test_connections_of_one_segmentation_share_it(k4: Any) -> None:
    sim = PacketSim(k4, config_for("mrc-spray"))
    traffic = Traffic.from_arrays([0, 1, 2], [5, 6, 7], [2_000_000, 2_000_000, 10_000], n_hosts=16)
    a, b, c = build(sim, traffic, "mrc-spray").make([0, 1, 2])
    assert a.pay is b.pay and a.msg_end is b.msg_end and a.opt is b.opt
    assert c.pay is not a.pay and c.opt is a.opt
    assert c.pay == [4096, 4096, 1808] and c.msg_end == [3]
    assert len(a.pay) == 489 and a.pay[-1] == 2_000_000 - 488 * 4096
    other = build(sim, traffic, "mrc-spray", options={"evs": 8.0}).make([0])[0]
    assert other.opt is not a.opt and other.opt["evs"] == 8.0 and a.opt["evs"] == 128


def test_the_shared_table_is_bounded() -> None:
    class Sim:
        def __init__(self) -> None:
            self.shared_values: dict[Any, Any] = {}

    made: list[int] = []

    def make(i: int) -> Callable[[], list[int]]:
        return lambda: made.append(i) or [i]

    sim: Any = Sim()
    first = shared(sim, 0, make(0))
    assert shared(sim, 0, make(0)) is first and made == [0]
    for i in range(1, SHARED_MAX + 1):
        shared(sim, i, make(i))
    assert len(sim.shared_values) == SHARED_MAX and 0 not in sim.shared_values
    again = shared(sim, 0, make(0))
    assert again == first and again is not first and made.count(0) == 2
    assert shared(object(), 1, make(1)) == [1]  # no table: made each time


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 100_000), min_size=1, max_size=8),
    st.integers(64, 9000),
)
def test_segments_cut_every_message_into_full_packets_and_a_rest(
    sizes: list[int], mss: int
) -> None:
    pay, ends = segments(sizes, mss)
    assert sum(pay) == sum(sizes) and all(0 < p <= mss for p in pay)
    assert len(ends) == len(sizes) and ends[-1] == len(pay)
    start = 0
    for size, end in zip(sizes, ends, strict=True):
        assert end - start == -(-size // mss)  # ceil: the packets of this message
        assert sum(pay[start:end]) == size
        assert all(p == mss for p in pay[start:end][:-1])
        start = end


def test_a_bad_message_split_is_still_refused(k4: Any) -> None:
    sim = PacketSim(k4, config_for("mrc-spray"))
    with pytest.raises(ValueError, match="messages sum to"):
        base.Connection(sim, 0, 0, 1, 100, 0, ConnSpec(messages=(40, 50)))
    assert np.array_equal(np.array(segments((0, 5), 4)[1]), [0, 2])
