"""The issue's analytic cases, end to end: topology, transport, engine."""

from __future__ import annotations

import numpy as np
import pytest

from clusterloom.errors import SpecError
from clusterloom.fabric.topology import generate
from clusterloom.sim.flow.run import parse_failure, run
from clusterloom.sim.flow.transports import Ideal, MrcSpray, ReceiverDriven, RoceEcmp, transport
from clusterloom.sim.paths import build_router
from clusterloom.sim.traffic import Traffic, incast, ring_all_reduce
from clusterloom.units import PS_PER_S
from helpers import kport_plan

SPEED_GBPS = 100
B = SPEED_GBPS * 1e9 / 8  # bytes per second of a link
S = 2_000_000  # bytes
# what the packet transports add (docs/sim.md, "Latency, headers and start-up"): one 64-byte
# header per 4096-byte packet on the wire; the path's propagation (150 ns host-leaf, 500 ns
# leaf-spine) and a full packet's store-and-forward at the three hops after the first
MSS, HDR = 4096, 64
W = S + -(-S // MSS) * HDR  # bytes on the wire
SER_PS = (MSS + HDR) * 8 * 10**12 // (SPEED_GBPS * 10**9)
ACK_PS = HDR * 8 * 10**12 // (SPEED_GBPS * 10**9)
PROP_PS = 2 * 150_000 + 2 * 500_000  # host-leaf-spine-leaf-host
TAIL = (PROP_PS + 3 * SER_PS) / 1e12  # s
RTT_PS = 2 * PROP_PS + 4 * (SER_PS + ACK_PS)


def fabric():  # type: ignore[no-untyped-def]
    """32 hosts on 8-port switches: 8 leaves of 4 hosts, 4 spines, one link leaf-spine.

    spine0  spine1  spine2  spine3
       \\  \\   |  ...  /  /
    leaf0 (h0..h3)  ...  leaf7 (h28..h31)
    """
    return generate(kport_plan(32, 8, speed_gbps=SPEED_GBPS))


def two_flows(src: list[int], dst: list[int]) -> Traffic:
    n = len(src)
    return Traffic(
        src=np.array(src, dtype=np.int32),
        dst=np.array(dst, dtype=np.int32),
        nbytes=np.full(n, S, dtype=np.int64),
        start_ps=np.zeros(n, dtype=np.int64),
        dep_ptr=np.zeros(n + 1, dtype=np.int64),
        dep_idx=np.zeros(0, dtype=np.int64),
        group=np.full(n, -1, dtype=np.int32),
        n_hosts=32,
    )


def seconds(ps: np.ndarray) -> np.ndarray:
    return ps / PS_PER_S


def test_ecmp_collision_halves_the_rate_spraying_does_not() -> None:
    """Two flows from leaf 0 to leaf 1 whose 5-tuple hashes pick the same uplink share it
    (2S/B each); spraying spreads both over all four uplinks (S/B each)."""
    t = fabric()
    r = build_router(t)
    roce = RoceEcmp()
    for seed in range(200):
        units = roce.units(
            r, np.array([0, 1]), np.array([4, 5]), alive=np.ones(t.n_links, bool), seed=seed
        )
        if units.unit_link[1] == units.unit_link[units.unit_ptr[1] + 1]:
            break
    else:
        pytest.fail("no seed makes the two flows collide")
    traffic = two_flows([0, 1], [4, 5])
    pinned = run(t, traffic, roce, seed=seed, router=r)
    assert seconds(pinned.finish_ps) == pytest.approx([2 * W / B + TAIL] * 2, rel=1e-6)
    sprayed = run(t, traffic, MrcSpray(evs=64), seed=seed, router=r)
    assert seconds(sprayed.finish_ps) == pytest.approx([W / B + TAIL] * 2, rel=1e-6)


def test_ring_all_reduce_under_ideal_meets_the_bandwidth_bound() -> None:
    n = 32
    result = run(fabric(), ring_all_reduce(n, S), Ideal())
    bound = 2 * (n - 1) / n * S / B
    assert seconds(result.finish_ps).max() == pytest.approx(bound, rel=0.01)


def test_incast_under_receiver_driven_takes_n_s_over_b() -> None:
    """N S/B on the wire, plus the path and the wait for the first pull: the first window is
    the whole packets of one BDP, sent in a little less than one RTT."""
    n = 8
    pkts = int(B * RTT_PS / 1e12 // MSS)
    wait = max(0, RTT_PS - pkts * SER_PS) / 1e12  # here 0: 12 packets outlast the RTT
    result = run(fabric(), incast(n, S, receiver=31, n_hosts=32), ReceiverDriven())
    assert seconds(result.finish_ps).max() == pytest.approx(n * W / B + TAIL + wait, rel=1e-6)
    lossy = run(fabric(), incast(n, S, receiver=31, n_hosts=32), ReceiverDriven(loss=0.1))
    assert seconds(lossy.finish_ps).max() == pytest.approx(n * W / B / 0.9 + TAIL + wait, rel=1e-6)


def test_link_failure_stalls_ecmp_for_the_reconvergence_delay_spraying_loses_little() -> None:
    """One flow h0 -> h4; its ECMP uplink fails at 10 us. RoCE stalls until detection plus
    reconvergence (1 ms here), then rehashes. Balanced MRC keeps sending its share 1/64 per EV
    into the dead uplink until it detects it (20 us), loses that share of its rate meanwhile
    (the NIC is the bottleneck, the other EVs cannot make up for it), then carries on at full
    rate over the other uplinks; fixed-split spraying stalls for the whole detection delay."""
    t = fabric()
    r = build_router(t)
    traffic = two_flows([0], [4])
    roce = RoceEcmp(reroute_s=1e-3)
    alive = np.ones(t.n_links, bool)
    units = roce.units(r, np.array([0]), np.array([4]), alive=alive, seed=0)
    uplink = int(units.unit_link[1]) // 2
    fail = parse_failure(f"link:{uplink}@10us", t)
    t_fail = 10e-6
    pinned = run(t, traffic, roce, (fail,), router=r)
    assert seconds(pinned.finish_ps)[0] == pytest.approx(W / B + 1e-3 + TAIL, rel=1e-6)
    mrc = MrcSpray(evs=64, balance=True)
    evs = mrc.units(r, np.array([0]), np.array([4]), alive=alive, seed=0)
    crossing = np.add.reduceat(evs.unit_link // 2 == uplink, evs.unit_ptr[:-1]) > 0
    lost = crossing.mean()
    assert 0 < lost < 1
    sprayed = run(t, traffic, mrc, (fail,), router=r)
    want = W / B + lost * mrc.detect_s + TAIL
    assert seconds(sprayed.finish_ps)[0] == pytest.approx(want, rel=1e-6)
    fixed = run(t, traffic, MrcSpray(evs=64, balance=False), (fail,), router=r)
    assert seconds(fixed.finish_ps)[0] == pytest.approx(W / B + mrc.detect_s + TAIL, rel=1e-6)
    assert t_fail < S / B
    healthy = run(t, traffic, mrc, router=r)
    assert seconds(healthy.finish_ps)[0] == pytest.approx(W / B + TAIL, rel=1e-6)


def test_losing_a_plane_costs_its_share_only() -> None:
    """Two planes: spraying over both, a plane lost at the start leaves half the bandwidth."""
    t = generate(kport_plan(32, 8, speed_gbps=SPEED_GBPS, ports_per_accelerator=2))
    assert t.plan.planes == 2
    traffic = two_flows([0], [4])
    fail = parse_failure("plane:1@0", t)
    mrc = MrcSpray(evs=64, detect_s=0.0, balance=True)
    result = run(t, traffic, mrc, (fail,))
    one_plane = W / B + TAIL
    assert seconds(result.finish_ps)[0] == pytest.approx(one_plane, rel=1e-6)
    healthy = run(t, traffic, mrc)
    assert seconds(healthy.finish_ps)[0] == pytest.approx(W / (2 * B) + TAIL, rel=1e-6)


def test_bad_failures_and_transports_are_refused() -> None:
    t = fabric()
    for text in ("link:99999@1ms", "wire:1@1ms", "link:1@1hours", "plane:5@0", "link:1@2ms-1ms"):
        with pytest.raises(SpecError):
            parse_failure(text, t)
    with pytest.raises(SpecError) as info:
        transport("tcp-reno")
    assert "known:" in info.value.problems[0].message


def test_rate_tolerance_costs_little_accuracy() -> None:
    """A sprayed permutation on a 3-tier fabric: rtol=1e-2 takes fewer filling rounds, and the
    completion times stay within 2% of the exact run (the makespan within 1%). Not a theorem:
    freezing a link early leaves capacity that others then use, so single flows can finish a
    little earlier as well as later."""
    from clusterloom.sim.traffic import permutation

    t = generate(kport_plan(128, 8, tiers=3, speed_gbps=SPEED_GBPS))
    traffic = permutation(128, S, seed=3)
    exact = run(t, traffic, MrcSpray(evs=32))
    fast = run(t, traffic, MrcSpray(evs=32), rtol=1e-2)
    assert fast.alloc_rounds < exact.alloc_rounds
    ratio = fast.finish_ps / exact.finish_ps
    assert ratio.min() >= 0.98 and ratio.max() <= 1.02
    assert fast.finish_ps.max() == pytest.approx(exact.finish_ps.max(), rel=1e-2)


def _flows(src: list[int], dst: list[int], n_hosts: int) -> Traffic:
    return Traffic.from_arrays(src, dst, S, n_hosts=n_hosts)


def test_ideal_sees_an_oversubscribed_leaf() -> None:
    """6 hosts per leaf, 2 uplinks (3:1). All six hosts of leaf 0 send to leaf 1: the leaf's
    uplink trunk (2B) is shared by six flows, B/3 each, so the bound is 3 S/B, not the NICs'
    S/B.

        h0..h5 ─ leaf0 ═2 uplinks═ spines ═ leaf1 ─ h6..h11
    """
    t = generate(kport_plan(24, 8, family="rail-optimized", leaf_oversubscription=3))
    result = run(t, _flows(list(range(6)), list(range(6, 12)), 24), Ideal())
    assert seconds(result.finish_ps) == pytest.approx([3 * S / B] * 6, rel=1e-9)
    same_leaf = run(t, _flows([0, 1, 2], [3, 4, 5], 24), Ideal())
    assert seconds(same_leaf.finish_ps) == pytest.approx([S / B] * 3, rel=1e-9)


def test_ideal_loses_the_capacity_of_a_failed_pod_uplink() -> None:
    """k=4 three-tier fat tree: 4 hosts per pod, 2 spines per pod with 2 core uplinks each.
    Pod 0's four hosts send to pod 1: the pod's uplink trunk (4B) carries them at B each,
    S/B. With one spine-core link of pod 0 down from the start the trunk has 3B: 4S/(3B).
    A gray failure to half that link's capacity leaves 3.5B: 4S/(3.5B)."""
    t = generate(kport_plan(16, 4, tiers=3))
    traffic = _flows([0, 1, 2, 3], [4, 5, 6, 7], 16)
    assert seconds(run(t, traffic, Ideal()).finish_ps) == pytest.approx([S / B] * 4, rel=1e-9)
    spine = int(t.link_dst[(t.link_tier == 2) & (t.link_src == t.link_dst[0])][0])
    core_link = int(np.flatnonzero((t.link_tier == 3) & (t.link_src == spine))[0])
    down = run(t, traffic, Ideal(), (parse_failure(f"link:{core_link}@0", t),))
    assert seconds(down.finish_ps) == pytest.approx([4 * S / (3 * B)] * 4, rel=1e-9)
    gray = run(t, traffic, Ideal(), (parse_failure(f"link:{core_link}@0*0.5", t),))
    assert seconds(gray.finish_ps) == pytest.approx([4 * S / (3.5 * B)] * 4, rel=1e-9)
    healed = run(t, traffic, Ideal(), (parse_failure(f"link:{core_link}@0-10us", t),))
    # 10 us at 3B/4 each, then B: S/B + 10 us * (1 - 3/4)
    assert seconds(healed.finish_ps) == pytest.approx([S / B + 10e-6 / 4] * 4, rel=1e-9)
