"""What the flow engine adds to the fluid transfer, against closed forms (docs/sim.md, "Latency,
headers and start-up"), on the k=4 three-tier fat tree (100 Gb/s; 150 ns host-leaf, 500 ns
leaf-spine, 1.5 us spine-core)::

    core0 core1 core2 core3
      |  \\  /  |    ...          a flow between pods crosses 6 links:
    spine spine  ... (2 per pod)   host-leaf-spine-core-spine-leaf-host
      |  X  |
    leaf  leaf   (2 per pod, 2 hosts each)
     ||    ||
    h0 h1 h2 h3 | pod 1: h4..h7 | ...
"""

from __future__ import annotations

import numpy as np
import pytest

from clusterloom.fabric.topology import generate
from clusterloom.sim.flow.engine import FlowSet, UnitSet, simulate
from clusterloom.sim.flow.run import run
from clusterloom.sim.flow.transports import MrcSpray, ReceiverDriven, transport
from clusterloom.sim.traffic import Traffic
from helpers import kport_plan

RATE = 100 * 10**9  # bits/s
MSS, HDR = 4096, 64
SER = (MSS + HDR) * 8 * 10**12 // RATE  # a full packet, ps
ACK = HDR * 8 * 10**12 // RATE
HOPS = 6  # between pods
PROP = 2 * (150_000 + 500_000 + 1_500_000)  # the path's propagation, ps
RTT = 2 * PROP + HOPS * (SER + ACK)


@pytest.fixture(scope="module")
def k4():  # type: ignore[no-untyped-def]
    t = generate(kport_plan(16, 4, tiers=3))
    lat = {tier: set(t.link_latency_ps[t.link_tier == tier].tolist()) for tier in (1, 2, 3)}
    assert lat == {1: {150_000}, 2: {500_000}, 3: {1_500_000}}
    return t


def wire_ps(nbytes: int) -> int:
    """The fluid time of a flow's bytes on the wire at line rate, rounded up as the engine
    does: payload plus one header per packet."""
    wire = nbytes + -(-nbytes // MSS) * HDR
    return -(-wire * 8 * 10**12 // RATE)


def lone(nbytes: int, src: int = 0, dst: int = 12, **kw: int) -> Traffic:
    return Traffic.from_arrays([src], [dst], [nbytes], n_hosts=16, **kw)  # type: ignore[arg-type]


def latency(t, hops: int = HOPS) -> int:  # type: ignore[no-untyped-def]
    """Propagation between pods (6 links) or under one leaf (2 host links)."""
    return PROP if hops == HOPS else 2 * 150_000


@pytest.mark.parametrize("name", ["roce-ecmp", "mrc-spray", "receiver-driven"])
def test_lone_flow_to_the_picosecond(k4, name: str) -> None:  # type: ignore[no-untyped-def]
    """FCT = its bytes and headers at line rate + the path's propagation + a full packet's
    store-and-forward at each of the 5 hops after the first (the last packet queues behind the
    one before it)."""
    n = 2_000_000
    prop = latency(k4)
    r = run(k4, lone(n), transport(name))
    assert r.fct_ps.tolist() == [wire_ps(n) + prop + (HOPS - 1) * SER]


def test_a_one_packet_flow_stores_and_forwards_its_own_size(k4) -> None:  # type: ignore[no-untyped-def]
    ser = (1000 + HDR) * 8 * 10**12 // RATE
    r = run(k4, lone(1000), transport("mrc-spray"))
    assert r.fct_ps.tolist() == [wire_ps(1000) + latency(k4) + (HOPS - 1) * ser]


def test_same_leaf_is_two_hops(k4) -> None:  # type: ignore[no-untyped-def]
    r = run(k4, lone(100_000, 0, 1), transport("roce-ecmp"))
    assert r.fct_ps.tolist() == [wire_ps(100_000) + latency(k4, 2) + SER]


def test_ideal_is_the_bandwidth_bound_without_headers_or_latency(k4) -> None:  # type: ignore[no-untyped-def]
    r = run(k4, lone(2_000_000), transport("ideal"))
    assert r.fct_ps.tolist() == [2_000_000 * 8 * 10**12 // RATE]


def test_receiver_driven_waits_for_the_first_pull_after_a_short_first_window(k4) -> None:  # type: ignore[no-untyped-def]
    """A first window of a quarter BDP (whole packets) goes out in a quarter RTT; the first pull
    comes back one RTT after the first packet, so the flow loses ``RTT - window time`` once."""
    rtt = RTT
    pkts = int(0.25 * RATE * rtt / 8 / 10**12 // MSS)
    wait = rtt - pkts * (MSS + HDR) * 8 * 10**12 / RATE
    n = 2_000_000
    r = run(k4, lone(n), ReceiverDriven(iw_bdp=0.25))
    assert r.fct_ps.tolist() == [wire_ps(n) + round(wait) + latency(k4) + (HOPS - 1) * SER]
    small = run(k4, lone(pkts * MSS), ReceiverDriven(iw_bdp=0.25))  # fits its first window
    assert small.fct_ps.tolist() == [wire_ps(pkts * MSS) + latency(k4) + (HOPS - 1) * SER]


def test_a_window_below_the_bdp_limits_the_rate(k4) -> None:  # type: ignore[no-untyped-def]
    """mrc-spray with half a BDP in flight: rate = window (on the wire) / RTT, half the line."""
    n = 2_000_000
    tr = MrcSpray(cwnd_bdp=0.5)
    window = 0.5 * RATE * RTT / 8 / 10**12 * (MSS + HDR) / MSS  # wire bytes per RTT
    rate = window / (RTT / 10**12)  # bytes/s
    wire = n + -(-n // MSS) * HDR
    r = run(k4, lone(n), tr)
    want = wire / rate * 10**12 + latency(k4) + (HOPS - 1) * SER
    assert r.fct_ps[0] == pytest.approx(want, abs=2)
    full = run(k4, lone(n), MrcSpray())  # the default 1.25 BDPs never limit a lone flow
    assert full.fct_ps.tolist() == [wire_ps(n) + latency(k4) + (HOPS - 1) * SER]


def test_handshake_costs_its_round_trips(k4) -> None:  # type: ignore[no-untyped-def]
    n = 500_000
    r = run(k4, lone(n), transport("roce-ecmp", handshake_rtts=1))
    assert r.fct_ps.tolist() == [RTT + wire_ps(n) + latency(k4) + (HOPS - 1) * SER]


def test_a_dependent_flow_starts_one_notification_after_the_last_byte(k4) -> None:  # type: ignore[no-untyped-def]
    """h0 -> h12, then h12 -> h4 when h12 has every byte: the second starts at the first's
    finish (notify_us=0, as htsim's triggers and the packet engine) or 2 us after it."""
    n = 1_000_000
    one = wire_ps(n) + latency(k4) + (HOPS - 1) * SER
    chain = Traffic.from_arrays([0, 12], [12, 4], [n, n], deps=[[], [0]], n_hosts=16)
    for notify_us in (0, 2):
        r = run(k4, chain, transport("mrc-spray", notify_us=notify_us))
        assert r.finish_ps[0] == one
        assert r.start_ps[1] == one + notify_us * 1_000_000
        assert r.fct_ps.tolist() == [one, one]


def test_engine_head_tail_and_notify() -> None:
    """On the engine alone (one link of 1 byte/ps): flow 0 of 1e6 bytes posted at 0 with a head
    of 5 ps and a tail of 7 finishes at 5 + 1e6 + 7 and reports start 0; flow 1 waits for it,
    is posted 3 ps (notify) after that finish and moves after its own head of 5."""
    flows = FlowSet.create(
        [1e6, 1e6], deps=[[], [0]], head_ps=[5, 5], tail_ps=[7, 7], notify_ps=[3, 3]
    )
    units = UnitSet.from_paths([0, 1], [[0], [0]])
    r = simulate(np.array([1e12]), flows, units)
    first = 5 + 1_000_000 + 7
    assert r.start_ps.tolist() == [0, first + 3]
    assert r.finish_ps.tolist() == [first, first + 3 + first]
    assert r.end_ps >= int(r.finish_ps.max())


def test_negative_delays_are_refused() -> None:
    from clusterloom.sim.flow.engine import SimInputError

    with pytest.raises(SimInputError, match="tail_ps"):
        simulate(
            np.array([1.0]),
            FlowSet.create([1.0], tail_ps=[-1]),
            UnitSet.from_paths([0], [[0]]),
        )


def test_a_coupled_sprayer_keeps_one_unit_per_distinct_path(
    k4, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    """Merging the EVs of a fixed-split flow that share a path changes no completion time (the
    flow's load on a link is its rate times the shares crossing it), with or without a failed
    link, and leaves a flow under one leaf (one path) with one unit."""
    import clusterloom.sim.flow.transports as transports
    from clusterloom.sim.flow.run import parse_failure
    from clusterloom.sim.traffic import permutation

    traffic = permutation(16, 300_000, seed=5)
    fail = (parse_failure("link:20@10us", k4),)
    merged = [run(k4, traffic, MrcSpray(evs=64), f) for f in ((), fail)]
    lone_leaf = run(k4, lone(1000, 0, 1), MrcSpray(evs=64))
    assert lone_leaf.units.n_units == 1
    monkeypatch.setattr(transports, "_merge_same_paths", lambda f, p, s: (f, p, s))
    per_ev = [run(k4, traffic, MrcSpray(evs=64), f) for f in ((), fail)]
    for a, b in zip(merged, per_ev, strict=True):
        assert a.finish_ps.tolist() == b.finish_ps.tolist()
        assert a.units.n_units < b.units.n_units
