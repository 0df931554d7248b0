"""A dead EV on the packet engine (``run_packets(dead=...)``, ``faultforms.DeadBucket``): a
black-holed bucket of a switch's ECMP table, no link down, no routing event. Closed cases: a
RoCE queue pair hashed into it never delivers and its drops land on the switch's output port on
its path; a sprayer loses a few packets, retires the EV and finishes a little later; a unit the
bucket does not hold runs as without the fault, event for event.

fabric8 (``small_fabric(8)``)::

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

from clusterloom.errors import SpecError
from clusterloom.sim.faultforms import DEAD_EV_BUCKETS, DeadBucket, dead_hops
from clusterloom.sim.packet.engine import PacketSimError
from clusterloom.sim.packet.fabrics import small_fabric
from clusterloom.sim.packet.run import run_packets
from clusterloom.sim.paths import build_router, connection_hash, route, splitmix64
from clusterloom.sim.traffic import Traffic

SEED = 3
LEAF0 = 8  # hosts 0-3's leaf
LIMIT = 10**10  # 10 ms


@pytest.fixture(scope="module")
def fabric8():  # type: ignore[no-untyped-def]
    return small_fabric(8)


def _qp_ev(src: int, dst: int) -> int:
    """The EV of ``roce-ecmp``'s one queue pair of a flow (``transports.RoceEcmp``)."""
    h = connection_hash(np.array([src]), np.array([dst]), np.array([0]), SEED)
    return int(h[0]) & 0xFFFFFFFF


class _Log:
    """Every packet event of each flow, in order (a tracer)."""

    def __init__(self) -> None:
        self.by_flow: dict[int, list[tuple[Any, ...]]] = {}

    def packet(self, now: int, where: str, host: int, pkt: Any) -> None:
        self.by_flow.setdefault(pkt.flow, []).append((now, where, host, pkt.kind, pkt.seq))

    def event(self, now: int, flow: int, what: str, a: int = 0, b: int = 0) -> None:
        if flow >= 0:
            self.by_flow.setdefault(flow, []).append((now, what, a, b))

    def routed(self, pkt: Any) -> None:
        self.by_flow.setdefault(pkt.flow, []).append(("routed", pkt.route))


def test_a_roce_queue_pair_in_the_bucket_never_delivers_and_drops_at_its_port(fabric8) -> None:  # type: ignore[no-untyped-def]
    """Flow 0 (0 -> 4) hashes its one queue pair into the dead bucket of its leaf: it never
    delivers (its retries run out), every drop is at the leaf's output port of its path (its
    second hop), and flow 1 (1 -> 7, through the same leaf, its data and ACKs on links flow 0's
    never use, so no queue is shared) is untouched, event for event."""
    traffic = Traffic.from_arrays(src=[0, 1], dst=[4, 7], nbytes=[64 * 4096] * 2, n_hosts=8)
    hole = DeadBucket(_qp_ev(0, 4), switch=LEAF0)
    log_a, log_b = _Log(), _Log()
    kw: dict[str, Any] = {"seed": SEED, "ports_sample_ps": 10**6, "max_time_ps": LIMIT}
    base = run_packets(fabric8, traffic, "roce-ecmp", tracer=log_a, **kw)
    dead = run_packets(fabric8, traffic, "roce-ecmp", tracer=log_b, dead=[hole], **kw)
    assert base.finished == 2
    assert dead.finish_ps[0] == -1 and dead.retransmissions[0] > 0
    assert any("gave up" in line for line in dead.unfinished)
    # every drop at the leaf's port on flow 0's path; nothing lost on a wire
    r = build_router(fabric8)
    path = route(r, np.array([0]), np.array([4]), np.array([0]), np.array([hole.ev]), seed=SEED)[0]
    assert dead.ports is not None and base.ports is not None
    drops = dead.ports.total("drops")
    assert drops.shape == base.ports.total("drops").shape  # no phantom column is shown
    assert np.flatnonzero(drops).tolist() == [int(path[1])]
    assert int(drops.sum()) == dead.drops > 0
    assert int(dead.ports.total("lost").sum()) == 0
    # the packets that reach the leaf from host 0 are exactly those dropped there
    assert int(dead.ports.total("rx_packets")[path[0]]) == int(drops[path[1]])
    assert int(dead.ports.total("tx_packets")[path[1]]) == 0
    # flow 1 is the same, event for event, and so are its figures
    ack = route(r, np.array([4]), np.array([0]), np.array([0]), np.array([hole.ev ^ 1]), seed=SEED)
    other = route(
        r, np.array([1, 7]), np.array([7, 1]), np.array([0, 0]),
        np.array([_qp_ev(1, 7), _qp_ev(1, 7) ^ 1]), seed=SEED,
    )  # fmt: skip
    assert not (set(path.tolist()) | set(ack[0].tolist())) & set(other.ravel().tolist()) - {-1}
    assert log_a.by_flow[1] == log_b.by_flow[1]
    assert dead.finish_ps[1] == base.finish_ps[1]
    assert dead.retransmissions[1] == base.retransmissions[1] == 0


def test_a_sprayer_retires_the_dead_ev_and_finishes_a_little_later(fabric8) -> None:  # type: ignore[no-untyped-def]
    """A sprayer's EVs through the dead bucket lose their packets; it detects the losses
    (SACK gaps), resends them on other EVs and finishes: later than without the fault, by
    less than the 20 us the flow engine's check assumes for its detection; the drops are a
    handful, all at the leaf's ports."""
    traffic = Traffic.from_arrays(src=[0], dst=[4], nbytes=[512 * 4096], n_hosts=8)
    base = run_packets(fabric8, traffic, "mrc-spray", seed=SEED, max_time_ps=LIMIT)
    hole = DeadBucket(49152, switch=LEAF0)
    dead = run_packets(
        fabric8, traffic, "mrc-spray", seed=SEED, max_time_ps=LIMIT, dead=[hole],
        ports_sample_ps=10**6,
    )  # fmt: skip
    assert dead.finished == 1
    grew = int(dead.fct_ps[0] - base.fct_ps[0])
    assert 0 < grew < 20_000_000
    assert dead.retransmissions[0] > 0
    assert dead.ports is not None
    drops = dead.ports.total("drops")
    at = np.flatnonzero(drops)
    assert at.size >= 1
    src = np.where(at % 2 == 0, fabric8.link_src[at // 2], fabric8.link_dst[at // 2])
    assert (src == LEAF0).all()
    assert 0 < int(drops.sum()) == dead.drops < 512 // 8  # retired: no steady loss


def test_a_bucket_off_every_path_changes_nothing(fabric8) -> None:  # type: ignore[no-untyped-def]
    """A dead EV at leaf 9 on traffic within leaf 8's hosts: the same run, figure for figure."""
    traffic = Traffic.from_arrays(src=[0, 2], dst=[1, 3], nbytes=[32 * 4096] * 2, n_hosts=8)
    for name in ("roce-ecmp", "mrc-spray"):
        base = run_packets(fabric8, traffic, name, seed=SEED, ports_sample_ps=10**6)
        dead = run_packets(
            fabric8, traffic, name, seed=SEED, ports_sample_ps=10**6,
            dead=[DeadBucket(49153, switch=9)],
        )  # fmt: skip
        assert np.array_equal(base.finish_ps, dead.finish_ps)
        assert np.array_equal(base.retransmissions, dead.retransmissions)
        assert base.ports is not None and dead.ports is not None
        for name_ in base.ports.NAMES:
            assert np.array_equal(base.ports.total(name_), dead.ports.total(name_)), name_


def test_the_pair_form_black_holes_that_pairs_path_at_its_first_switch(fabric8) -> None:  # type: ignore[no-untyped-def]
    """``SRC>DST#EV`` on the queue pair's own EV: that flow never delivers, its drops at its
    first hop's switch port; another pair through the same leaf is untouched."""
    traffic = Traffic.from_arrays(src=[0, 1], dst=[4, 5], nbytes=[32 * 4096] * 2, n_hosts=8)
    hole = DeadBucket(_qp_ev(0, 4), pair=(0, 4, 0))
    dead = run_packets(
        fabric8, traffic, "roce-ecmp", seed=SEED, ports_sample_ps=10**6, dead=[hole],
        max_time_ps=LIMIT,
    )  # fmt: skip
    base = run_packets(fabric8, traffic, "roce-ecmp", seed=SEED, max_time_ps=LIMIT)
    assert dead.finish_ps[0] == -1 and dead.finish_ps[1] == base.finish_ps[1]
    r = build_router(fabric8)
    path = route(r, np.array([0]), np.array([4]), np.array([0]), np.array([hole.ev]), seed=SEED)[0]
    assert dead.ports is not None
    assert np.flatnonzero(dead.ports.total("drops")).tolist() == [int(path[1])]


@settings(max_examples=40, deadline=None)
@given(ev=st.integers(0, 2**32 - 1), probe=st.integers(0, 2**32 - 1), seed=st.integers(0, 99))
def test_dead_hops_is_the_bucket_rule(ev: int, probe: int, seed: int) -> None:
    """For every unit from the leaf's hosts, the dead hop is the leaf's uplink hop exactly when
    the unit's hash there and the dead EV's land in the same of the 64 buckets (the rule
    computed here from ``splitmix64`` one unit at a time)."""
    t = small_fabric(8)
    r = build_router(t)
    src = np.array([0, 1, 2, 3], dtype=np.int64)
    dst = np.array([4, 5, 6, 7], dtype=np.int64)
    evs = np.array([probe + k for k in range(4)], dtype=np.int64) & 0xFFFFFFFF
    port = np.zeros(4, dtype=np.int64)
    paths = route(r, src, dst, port, evs, seed=seed)
    hop = dead_hops(r, paths, src, dst, port, evs, seed, DeadBucket(ev, switch=LEAF0))
    golden = 0x9E3779B97F4A7C15

    def bucket(x: int) -> int:
        key = np.uint64((x ^ seed ^ (LEAF0 * golden)) & 0xFFFFFFFFFFFFFFFF)
        return int(splitmix64(np.array([key], dtype=np.uint64))[0] % np.uint64(DEAD_EV_BUCKETS))

    for i in range(4):
        want = 1 if bucket(int(evs[i])) == bucket(ev) else -1
        assert int(hop[i]) == want
    # a leaf-local unit (0 -> 1) is hashed by no switch: never dead
    local = route(r, np.array([0]), np.array([1]), np.array([0]), np.array([ev]), seed=seed)
    one = np.array([ev], dtype=np.int64)
    z = np.zeros(1, dtype=np.int64)
    got = dead_hops(r, local, z, z + 1, z, one, seed, DeadBucket(ev, switch=LEAF0))
    assert got.tolist() == [-1]


def test_bad_dead_evs_are_refused(fabric8) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SpecError):
        DeadBucket(1)
    with pytest.raises(SpecError):
        DeadBucket(1, switch=8, pair=(0, 4, 0))
    traffic = Traffic.from_arrays(src=[0], dst=[4], nbytes=[4096], n_hosts=8)
    with pytest.raises(PacketSimError, match="not a switch"):
        run_packets(fabric8, traffic, "roce-ecmp", dead=[DeadBucket(1, switch=3)])
    with pytest.raises(PacketSimError, match="out of range"):
        run_packets(fabric8, traffic, "roce-ecmp", dead=[DeadBucket(1, pair=(0, 99, 0))])
