"""Per-port counters of the packet engine (``run_packets(ports_sample_ps=...)``,
``PacketResult.ports``): asking for them changes nothing else; their totals are the run's;
packets and bytes are conserved through every switch; closed cases (one flow, an incast that
must drop or pause, a lossy link) land where they must.

fabric8 (``small_fabric(8, planes=2)``), one plane drawn (the other is the same)::

    spines     10      11
               |  \\  /  |
    leaves     8        9
             / | \\ \\  / | \\ \\
    hosts   0  1  2  3  4  5  6  7
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.sim.failures import parse_failure
from clusterloom.sim.packet.engine import PacketConfig, PacketSim, PacketSimError
from clusterloom.sim.packet.fabrics import small_fabric
from clusterloom.sim.packet.run import (
    PortCounters,
    build,
    config_for,
    run_packets,
    start_with_deps,
)
from clusterloom.sim.traffic import Traffic, incast, permutation
from helpers import packet_figures

TRANSPORTS = ["roce-ecmp", "mrc-spray", "metaroce", "receiver-driven"]
SAMPLE_PS = 5_000_000  # 5 us
PKT = 4096 + 64


@pytest.fixture(scope="module")
def pair():  # type: ignore[no-untyped-def]
    return small_fabric(2, radix=4)


@pytest.fixture(scope="module")
def fabric8():  # type: ignore[no-untyped-def]
    return small_fabric(8, planes=2)


def _drained(
    topology: Any, traffic: Traffic, name: str, cfg: PacketConfig | None = None, **kw: Any
) -> tuple[PacketSim, PortCounters]:
    """Run until no event is left (every packet delivered or dropped, no queue or wire
    holding one), counting per port."""
    sim = PacketSim(topology, cfg or config_for(name), seed=kw.pop("seed", 3))
    sim.count_ports(SAMPLE_PS)
    for link, p in kw.pop("losses", {}).items():
        sim.set_loss(link, p)
    flows = build(sim, traffic, name)
    start_with_deps(sim, traffic, flows)
    sim.run(10**12)
    assert sim.pending_events == 0
    return sim, PortCounters.of(SAMPLE_PS, *sim.port_samples())


def _conserved(sim: PacketSim, p: PortCounters) -> None:
    """Through every switch, packets in = packets out + packets dropped at its ports; on
    every link, packets sent = packets received + packets lost on the wire."""
    tx, rx, lost, drops = (p.total(n) for n in ("tx_packets", "rx_packets", "lost", "drops"))
    assert np.array_equal(tx, rx + lost)
    to, frm = np.array(sim.dl_to), np.array(sim.dl_from)
    n = int(max(to.max(), frm.max())) + 1
    into = np.bincount(to, weights=rx, minlength=n)
    out = np.bincount(frm, weights=tx + drops, minlength=n)
    assert np.array_equal(into[sim.n_hosts :], out[sim.n_hosts :])
    # nothing is lost on a wire or dropped without a failure, a loss or a full buffer
    assert (p.counter("tx_packets") >= 0).all()


@pytest.mark.parametrize("name", TRANSPORTS)
def test_counting_changes_nothing_and_totals_are_the_runs(fabric8, name: str) -> None:  # type: ignore[no-untyped-def]
    """The run with counters is the run without, event for event; the counters' totals are
    its drops (at ports and on wires), trims, marks and pauses. The incast with a link
    failing mid-run makes marks, drops (or trims, or pauses) happen."""
    traffic = incast(6, 512 * 1024, receiver=7, n_hosts=8)
    f = (parse_failure("link:3@40us-80us", fabric8),)
    plain = run_packets(fabric8, traffic, name, f, seed=4)
    counted = run_packets(fabric8, traffic, name, f, seed=4, ports_sample_ps=SAMPLE_PS)
    assert plain.ports is None
    assert packet_figures(plain) == packet_figures(counted)
    p = counted.ports
    assert p is not None
    assert int(p.total("drops").sum() + p.total("lost").sum()) == counted.drops
    assert int(p.total("trims").sum()) == counted.trims
    assert int(p.total("marks").sum()) == counted.marks
    assert int(p.total("pauses").sum()) == counted.pauses
    assert counted.marks + counted.drops + counted.trims + counted.pauses > 0
    if config_for(name).pfc:  # lossless: every drop is the failed link's (directed 6 and 7)
        lost = p.total("lost") + p.total("drops")
        assert lost[:6].sum() == lost[8:].sum() == 0


@pytest.mark.parametrize("name", TRANSPORTS)
def test_packets_conserved_through_every_switch(fabric8, name: str) -> None:  # type: ignore[no-untyped-def]
    sim, p = _drained(fabric8, incast(6, 512 * 1024, receiver=7, n_hosts=8), name)
    _conserved(sim, p)
    if name == "roce-ecmp":  # lossless, no trims: bytes are conserved too
        to, frm = np.array(sim.dl_to), np.array(sim.dl_from)
        into = np.bincount(to, weights=p.total("rx_bytes"))
        out = np.bincount(frm, weights=p.total("tx_bytes"))
        assert np.array_equal(into[8:], out[8:])


def test_samples_are_cumulative_and_timed(fabric8) -> None:  # type: ignore[no-untyped-def]
    r = run_packets(
        fabric8, permutation(8, 256 * 1024, seed=1), "mrc-spray", ports_sample_ps=SAMPLE_PS
    )
    p = r.ports
    assert p is not None
    t = p.times_ps
    assert (np.diff(t) > 0).all() and t[-1] == r.end_ps
    assert (t[:-1] % SAMPLE_PS == 0).all()
    for name in PortCounters.NAMES:
        c = p.counter(name)
        assert c.shape == (t.size, 2 * fabric8.n_links)
        assert (np.diff(c, axis=0) >= 0).all()  # cumulative
    assert p.at(0) == 0 and p.at(int(t[-1])) == t.size - 1
    assert p.at(int(t[1]) - 1) == 0 and p.at(int(t[1])) == 1
    with pytest.raises(KeyError):
        p.counter("bytes")


def test_one_flow_closed_form(pair) -> None:  # type: ignore[no-untyped-def]
    """One RoCE flow of n full packets over an idle fabric: n data packets of 4,160 bytes on
    each link of its path, only headers (ACKs) the other way, nothing dropped, marked or
    paused."""
    n = 64
    traffic = Traffic.from_arrays([0], [1], [n * 4096], n_hosts=2)
    sim, p = _drained(pair, traffic, "roce-ecmp")
    tx, txb = p.total("tx_packets"), p.total("tx_bytes")
    up0 = 0 if sim.dl_from[0] == 0 else 1  # host 0's link is physical link 0
    down1 = next(d for d in range(len(sim.dl_to)) if sim.dl_to[d] == 1)
    assert tx[up0] == n and txb[up0] == n * PKT
    assert p.total("rx_packets")[down1] == n and p.total("rx_bytes")[down1] == n * PKT
    back = up0 ^ 1  # host 0's downlink carries the ACKs: headers only
    assert tx[back] > 0 and txb[back] == tx[back] * 64
    for name in ("drops", "lost", "trims", "marks", "pauses"):
        assert not p.total(name).any(), name
    _conserved(sim, p)


def test_incast_drops_only_where_the_buffer_overflowed(fabric8) -> None:  # type: ignore[no-untyped-def]
    """Drop-tail, no ECN: a 6-to-1 incast drops at the ports toward the receiver, and a port
    drops only if its queue reached the buffer."""
    cfg = PacketConfig(buffer_bytes=64 * 1024, ecn=False)
    sim, p = _drained(fabric8, incast(6, 256 * 1024, receiver=7, n_hosts=8), "mrc-spray", cfg)
    drops = p.total("drops")
    assert drops.sum() > 0 and sim.stats.drops == drops.sum()
    to = np.array(sim.dl_to)
    assert drops[to == 7].sum() > 0  # the receiver's downlinks, one per plane
    full = sim.max_qbytes + PKT > 64 * 1024
    assert not (drops[~full]).any()
    assert not p.total("lost").any() and not p.total("marks").any()
    _conserved(sim, p)


def test_incast_pauses_the_links_into_the_congested_switch(fabric8) -> None:  # type: ignore[no-untyped-def]
    """Lossless (PFC): the incast pauses links whose far end is a switch, never drops."""
    cfg = PacketConfig(pfc=True, buffer_bytes=64 * 1024, pfc_xoff=32 * 1024, pfc_xon=16 * 1024)
    sim, p = _drained(fabric8, incast(6, 256 * 1024, receiver=7, n_hosts=8), "roce-ecmp", cfg)
    pauses = p.total("pauses")
    assert pauses.sum() == sim.stats.pauses > 0
    to = np.array(sim.dl_to)
    assert (to[pauses > 0] >= sim.n_hosts).all()  # only a switch sends pauses
    assert not p.total("drops").any() and not p.total("lost").any()
    _conserved(sim, p)


def test_a_lossy_link_loses_on_its_wire_only(fabric8) -> None:  # type: ignore[no-untyped-def]
    """Loss on host 0's link (physical link 0): every lost packet is on one of its two
    directed links, the counters' losses are the run's drops, the flow resends them."""
    traffic = Traffic.from_arrays([0], [5], [1 << 20], n_hosts=8)
    r = run_packets(
        fabric8, traffic, "roce-ecmp", ports_sample_ps=SAMPLE_PS, losses={0: 0.02}, seed=2
    )
    p = r.ports
    assert p is not None and r.finished == 1
    lost = p.total("lost")
    assert lost.sum() == r.drops > 0 and lost[2:].sum() == 0
    assert r.retransmissions[0] > 0
    again = run_packets(fabric8, traffic, "roce-ecmp", losses={0: 0.02}, seed=2)
    assert packet_figures(again) == packet_figures(r)  # deterministic
    none = run_packets(fabric8, traffic, "roce-ecmp", losses={0: 0.0}, seed=2)
    clean = run_packets(fabric8, traffic, "roce-ecmp", seed=2)
    assert packet_figures(none) == packet_figures(clean) and clean.drops == 0


def test_bad_arguments_refused(fabric8) -> None:  # type: ignore[no-untyped-def]
    sim = PacketSim(fabric8)
    with pytest.raises(PacketSimError, match="positive"):
        sim.count_ports(0)
    with pytest.raises(PacketSimError, match="loss"):
        sim.set_loss(0, 1.5)
    with pytest.raises(PacketSimError, match="link 99"):
        sim.set_loss(99, 0.1)
    with pytest.raises(PacketSimError, match="count_ports"):
        sim.port_samples()


@settings(max_examples=12, deadline=None)
@given(
    name=st.sampled_from(TRANSPORTS),
    pairs=st.lists(
        st.tuples(st.integers(0, 7), st.integers(0, 7), st.integers(1, 96)),
        min_size=1,
        max_size=6,
    ),
    buffer_kb=st.sampled_from([32, 64, 512]),
    seed=st.integers(0, 100),
)
def test_conservation_over_random_traffic(
    fabric8: Any, name: str, pairs: list[tuple[int, int, int]], buffer_kb: int, seed: int
) -> None:
    """Any traffic, any transport, any buffer: the totals are the run's and packets are
    conserved through every switch and on every wire."""
    pairs = [(s, d, k) for s, d, k in pairs if s != d] or [(0, 1, 8)]
    src, dst, kb = zip(*pairs, strict=True)
    traffic = Traffic.from_arrays(list(src), list(dst), [k * 4096 for k in kb], n_hosts=8)
    cfg = config_for(name, PacketConfig(buffer_bytes=buffer_kb * 1024))
    sim, p = _drained(fabric8, traffic, name, cfg, seed=seed)
    s = sim.stats
    assert p.total("drops").sum() + p.total("lost").sum() == s.drops
    assert p.total("trims").sum() == s.trims and p.total("marks").sum() == s.marks
    assert p.total("pauses").sum() == s.pauses
    _conserved(sim, p)
