"""The packet engine against closed forms and invariants.

Two hosts under one leaf (host 0 ─ leaf ─ host 1) for the closed forms::

    h0 ──1us── leaf ──1us── h1
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from clusterloom.conformance.trace import Trace
from clusterloom.sim.failures import parse_failure
from clusterloom.sim.packet._core import S_DELIV
from clusterloom.sim.packet.base import ConnSpec
from clusterloom.sim.packet.engine import PacketConfig, PacketSim, PacketSimError
from clusterloom.sim.packet.fabrics import fat_tree, small_fabric
from clusterloom.sim.packet.run import config_for, run_packets
from clusterloom.sim.traffic import Traffic, incast, permutation
from helpers import packet_figures

SER = (4096 + 64) * 8 * 10**12 // (100 * 10**9)  # one full packet at 100 Gb/s, ps
PROP = 1_000_000  # 1 us


@pytest.fixture(scope="module")
def pair():  # type: ignore[no-untyped-def]
    return small_fabric(2, radix=4)


@pytest.fixture(scope="module")
def fabric8():  # type: ignore[no-untyped-def]
    return small_fabric(8, planes=2)


@pytest.mark.parametrize("name", ["roce-ecmp", "mrc-spray", "metaroce"])
def test_single_flow_closed_form(pair, name: str) -> None:  # type: ignore[no-untyped-def]
    """n full packets paced at line rate over two store-and-forward hops finish at
    n * ser + ser + 2 * prop: the first hop's serialization of all packets, the last packet's
    second serialization and two propagation delays."""
    n = 256
    r = run_packets(pair, Traffic.from_arrays([0], [1], [n * 4096], n_hosts=2), name)
    assert r.fct_ps.tolist() == [n * SER + SER + 2 * PROP]
    assert r.retransmissions.tolist() == [0]


def test_receiver_driven_single_flow_is_pull_paced(pair) -> None:  # type: ignore[no-untyped-def]
    """Pulls are paced at the receiver's line rate, so a lone flow takes no longer than the
    closed form plus the pull's round trip for the packets after the first window."""
    n = 256
    r = run_packets(pair, Traffic.from_arrays([0], [1], [n * 4096], n_hosts=2), "receiver-driven")
    ideal = n * SER + SER + 2 * PROP
    assert ideal <= int(r.fct_ps[0]) <= ideal * 1.05


@pytest.mark.parametrize("name", ["roce-ecmp", "mrc-spray", "metaroce", "receiver-driven"])
def test_bytes_conserved_and_queues_within_buffers(fabric8, name: str) -> None:  # type: ignore[no-untyped-def]
    traffic = incast(6, 512 * 1024, receiver=7, n_hosts=8)
    cfg = config_for(name)
    r = run_packets(fabric8, traffic, name, config=cfg)
    assert r.finished == 6
    assert r.max_queue_bytes <= cfg.buffer_bytes or cfg.pfc
    # every byte posted arrives at least once; retransmissions are the only surplus
    assert r.data_bytes_delivered >= 6 * 512 * 1024
    if cfg.pfc:
        assert r.drops == 0  # lossless
    if cfg.trimming:
        assert r.drops == 0  # overflow is trimmed, never dropped


def test_drop_tail_never_exceeds_buffer(fabric8) -> None:  # type: ignore[no-untyped-def]
    cfg = PacketConfig(buffer_bytes=64 * 1024, ecn=False)
    r = run_packets(fabric8, incast(6, 256 * 1024, receiver=7, n_hosts=8), "mrc-spray", config=cfg)
    assert r.drops > 0 and r.max_queue_bytes <= 64 * 1024
    assert r.finished == 6


def test_trimming_keeps_data_and_trims_overflow(fabric8) -> None:  # type: ignore[no-untyped-def]
    cfg = PacketConfig(buffer_bytes=16 * 1024, trimming=True)
    r = run_packets(fabric8, incast(6, 256 * 1024, receiver=7, n_hosts=8), "mrc-spray", config=cfg)
    assert r.trims > 0 and r.drops == 0 and r.finished == 6


def test_deterministic_byte_for_byte(fabric8) -> None:  # type: ignore[no-untyped-def]
    traffic = permutation(8, 256 * 1024, seed=3)
    runs = []
    for _ in range(2):
        trace = Trace()
        run_packets(fabric8, traffic, "mrc-spray", seed=5, tracer=trace)
        runs.append((trace.records, trace.events))
    assert runs[0] == runs[1]
    other = Trace()
    run_packets(fabric8, traffic, "mrc-spray", seed=6, tracer=other)
    assert other.records != runs[0][0]  # the seed changes the entropy values


@pytest.mark.parametrize("name", ["roce-ecmp", "mrc-spray", "metaroce", "receiver-driven"])
def test_a_tracer_does_not_change_the_run(fabric8, name: str) -> None:  # type: ignore[no-untyped-def]
    """The traced and the untraced run are one engine: same events, same figures, including
    drops and trims that the compiled loop reports to the tracer. The incast fills queues so
    that marks, drops (or trims, or pauses) happen."""
    traffic = incast(6, 512 * 1024, receiver=7, n_hosts=8)
    f = (parse_failure("link:3@40us-80us", fabric8),)
    plain = run_packets(fabric8, traffic, name, f, seed=4)
    trace = Trace()
    traced = run_packets(fabric8, traffic, name, f, seed=4, tracer=trace)
    assert packet_figures(plain) == packet_figures(traced)
    assert plain.marks + plain.drops + plain.trims + plain.pauses > 0
    # every trim is reported; drops by overflow are, those of a failed link are not
    assert len(trace.of("trim")) == traced.trims
    assert len(trace.of("drop")) <= traced.drops


def test_untraced_runs_are_deterministic(fabric8) -> None:  # type: ignore[no-untyped-def]
    traffic = incast(6, 256 * 1024, receiver=7, n_hosts=8)
    a, b = (run_packets(fabric8, traffic, "mrc-spray", seed=9) for _ in range(2))
    assert packet_figures(a) == packet_figures(b) and a.marks > 0


def test_failed_link_is_avoided_by_a_sprayer(fabric8) -> None:  # type: ignore[no-untyped-def]
    f = parse_failure("switch:8@20us", fabric8)  # a spine of plane 0 fails mid-run
    r = run_packets(fabric8, Traffic.from_arrays([0], [5], [2 << 20], n_hosts=8), "mrc-spray", (f,))
    assert r.finished == 1 and r.drops > 0 and r.retransmissions[0] > 0


def test_gray_failure_slows_a_single_path_flow(pair) -> None:  # type: ignore[no-untyped-def]
    t = Traffic.from_arrays([0], [1], [64 * 4096], n_hosts=2)
    fast = run_packets(pair, t, "roce-ecmp")
    slow = run_packets(pair, t, "roce-ecmp", (parse_failure("link:1@0*0.5", pair),))
    assert slow.fct_ps[0] > 1.8 * (fast.fct_ps[0] - 2 * PROP)


def test_pfc_pauses_instead_of_dropping(fabric8) -> None:  # type: ignore[no-untyped-def]
    cfg = PacketConfig(pfc=True, buffer_bytes=64 * 1024, pfc_xoff=32 * 1024, pfc_xon=16 * 1024)
    r = run_packets(fabric8, incast(6, 256 * 1024, receiver=7, n_hosts=8), "roce-ecmp", config=cfg)
    assert r.pauses > 0 and r.drops == 0 and r.finished == 6


def test_events_ordered_by_time_then_sequence(pair) -> None:  # type: ignore[no-untyped-def]
    sim = PacketSim(pair)
    seen: list[str] = []
    sim.at(5, lambda: seen.append("b"))
    sim.at(5, lambda: seen.append("c"))
    sim.at(1, lambda: seen.append("a"))
    sim.run()
    assert seen == ["a", "b", "c"]


def test_bad_config_refused(pair) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PacketSimError, match="ecn_kmin"):
        PacketSim(pair, PacketConfig(ecn_kmin=10, ecn_kmax=5))
    with pytest.raises(PacketSimError, match="1 MiB"):
        PacketSim(pair, PacketConfig(mtu=2 << 20, buffer_bytes=4 << 20))
    with pytest.raises(PacketSimError, match="exclude"):
        PacketSim(pair, PacketConfig(pfc=True, trimming=True))
    with pytest.raises(PacketSimError, match="unknown packet transport"):
        run_packets(pair, Traffic.from_arrays([0], [1], [10], n_hosts=2), "tcp")
    with pytest.raises(PacketSimError, match="hosts"):
        run_packets(pair, Traffic.from_arrays([0], [5], [10], n_hosts=6), "mrc-spray")


def test_dependencies_start_after_the_flow_they_wait_for(pair) -> None:  # type: ignore[no-untyped-def]
    t = Traffic.from_arrays([0, 1], [1, 0], [64 * 4096, 64 * 4096], n_hosts=2, deps=[[], [0]])
    r = run_packets(pair, t, "mrc-spray")
    assert r.start_ps[1] == r.finish_ps[0] and r.finished == 2


@pytest.mark.slow
def test_k8_fat_tree_permutation_all_transports() -> None:
    t = fat_tree(8)
    traffic = permutation(t.plan.hosts, 256 * 1024, seed=0)
    for name in ("roce-ecmp", "mrc-spray", "metaroce", "receiver-driven"):
        r = run_packets(t, traffic, name)
        assert r.finished == t.plan.hosts, name


def test_run_in_slices_equals_one_run(fabric8) -> None:  # type: ignore[no-untyped-def]
    """Stopping at a time and running on gives the same trace as one run."""
    from clusterloom.sim.packet.run import build, start_with_deps

    traffic = permutation(8, 128 * 1024, seed=2)
    traces = []
    for slices in ((10**9,), (3_000_000, 7_000_000, 10**9)):
        trace = Trace()
        sim = PacketSim(fabric8, config_for("mrc-spray"), seed=1, tracer=trace)
        conns = build(sim, traffic, "mrc-spray")
        start_with_deps(sim, traffic, conns)
        for until in slices:
            sim.run(until)
        traces.append(trace.records)
    assert traces[0] == traces[1]


def test_compiled_pacer_and_quiet_acks_are_the_python_run(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``receiver-driven`` untraced runs its pull pacers, its receivers and its senders' ACK
    handling in the compiled loop; under a tracer all are Python. The two runs are the same
    through a failure, a fast reroute (the pulls' and ACKs' routes follow the routing view)
    and receiver rate changes (the pacer's interval)."""
    from clusterloom.sim.packet import run as run_mod
    from clusterloom.sim.packet.transports import ReceiverDriven, set_receiver_rate

    answered: list[int] = []  # pulls the loop answered with a data packet, by run
    made_sent = ReceiverDriven.made_sent

    def counted(self: ReceiverDriven, x: int, now: int) -> None:
        answered[-1] += 1
        made_sent(self, x, now)

    monkeypatch.setattr(ReceiverDriven, "made_sent", counted)

    t = fat_tree(4)
    traffic = permutation(t.plan.hosts, 300_000, seed=3)
    f = (parse_failure("link:40@15us", t),)
    cfg = PacketConfig(reroute_ps=30_000_000)
    made: list[PacketSim] = []
    original = run_mod.PacketSim

    class Recorded(PacketSim):
        def __init__(self, *a, **kw) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*a, **kw)
            made.append(self)
            answered.append(0)
            self.at(20_000_000, lambda: set_receiver_rate(self, 3, 30e9))
            self.at(40_000_000, lambda: set_receiver_rate(self, 3, 100e9))

    run_mod.PacketSim = Recorded  # type: ignore[misc]
    try:
        plain = run_packets(t, traffic, "receiver-driven", f, config=cfg, seed=2)
        traced = run_packets(t, traffic, "receiver-driven", f, config=cfg, seed=2, tracer=Trace())
    finally:
        run_mod.PacketSim = original  # type: ignore[misc]
    assert packet_figures(plain) == packet_figures(traced)
    assert plain.finished == len(traffic) and plain.trims + plain.drops > 0
    compiled = [[p.compiled for p in s.shared["pacer"].values()] for s in made]
    assert all(compiled[0]) and not any(compiled[1])
    # the loop's receivers took most of the data (the first packet of a flow, its last and
    # the trimmed ones go to Python), none under the tracer
    in_loop = [int(s._s[S_DELIV]) for s in made]
    assert in_loop[0] > 0.8 * int(traffic.nbytes.sum()) and in_loop[1] == 0
    # the loop sends each new sequence after a flow's first window at most once, and all but
    # those sent while a resend waited or an EV was bad (the failure's: 9% of them here)
    probe = PacketSim(t, config_for("receiver-driven", cfg))
    after = 0
    for i, (a, b, size) in enumerate(zip(traffic.src, traffic.dst, traffic.nbytes, strict=True)):
        first = ReceiverDriven(probe, i, int(a), int(b), 4096, 0, ConnSpec()).spec_pkts
        after += max(0, -(-int(size) // 4096) - first)
    assert 0.85 * after <= answered[0] <= after and answered[1] == 0


def test_roce_receiver_in_the_loop_is_the_python_run() -> None:
    """``roce-ecmp`` without DCQCN (htsim's configuration) untraced receives its in-order
    data and its ACKs in the compiled loop; under a tracer both are Python. The two runs are
    the same through a link failure (drops, NAKs, go-back-N, timeouts) and its reroute, and
    the loop took most of the data."""
    from clusterloom.sim.crossval import HTSIM_ROCE
    from clusterloom.sim.packet import run as run_mod

    t = fat_tree(4)
    traffic = permutation(t.plan.hosts, 300_000, seed=3)
    f = (parse_failure("link:40@15us", t),)
    cfg = replace(config_for("roce-ecmp", HTSIM_ROCE[0]), reroute_ps=30_000_000)
    options = dict(HTSIM_ROCE[1])
    made: list[PacketSim] = []
    original = run_mod.PacketSim

    class Recorded(PacketSim):
        def __init__(self, *a, **kw) -> None:  # type: ignore[no-untyped-def]
            super().__init__(*a, **kw)
            made.append(self)

    run_mod.PacketSim = Recorded  # type: ignore[misc]
    try:
        plain = run_packets(t, traffic, "roce-ecmp", f, config=cfg, options=options, seed=2)
        traced = run_packets(
            t, traffic, "roce-ecmp", f, config=cfg, options=options, seed=2, tracer=Trace()
        )
    finally:
        run_mod.PacketSim = original  # type: ignore[misc]
    assert packet_figures(plain) == packet_figures(traced)
    assert plain.finished == len(traffic) and plain.drops > 0 and plain.retransmissions.sum() > 0
    in_loop = [int(s._s[S_DELIV]) for s in made]
    assert in_loop[0] > 0.8 * int(traffic.nbytes.sum()) and in_loop[1] == 0
