"""No fault named in a healthy window from queueing delay alone, and no straggler for the ranks
a congested spine slows (issue 23: "no false culprit ranked first for pure congestion").

On ``fat-tree-k8`` (``ops.evaluate.small_design``): probes built by hand, every host to four
others over four EVs, with a delay added on one directed link from a chosen interval on; and
a congested spine's incident on the packet engine that named four slowed ranks before."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterloom.ops.detect import ONSET_SHARE, Anomaly, Signal
from clusterloom.ops.evaluate import small_design
from clusterloom.ops.fabric import OpsFabric
from clusterloom.ops.localise import (
    DELAY_FAR,
    DELAY_MIN_US,
    Localisation,
    _Board,
    _delay_onset,
    _far_delay,
    _stragglers,
    localise,
)
from clusterloom.ops.model import PROBE_SCHEMA, FaultKind, Suspect, SuspectKind
from helpers import probe_keys

T0 = 1_764_600_000_000
N_T = 6


@pytest.fixture(scope="module")
def k8() -> OpsFabric:
    return small_design("fat-tree-k8")


def _keys(f: OpsFabric) -> tuple[np.ndarray, ...]:
    """Every host to four others (other leaves) over four EVs: ``src, dst, port, ev`` and
    their paths out and back."""
    return probe_keys(f, (1, 9, 37, 70), 4)


def _probes(f: OpsFabric, delay: dict[int, float], start: int = 0, seed: int = 0) -> pa.Table:
    """The keys of :func:`_keys` for ``N_T`` intervals, nothing lost, RTT 5 us plus a
    microsecond a hop plus up to 0.5 us of noise, plus ``delay`` (microseconds per directed
    link) from interval ``start`` on."""
    rng = np.random.default_rng(seed)
    src, dst, port, ev, paths = _keys(f)
    k = np.tile(np.arange(src.size), N_T)
    t = np.repeat(np.arange(N_T), src.size)
    extra = np.zeros(src.size)
    for d, us in delay.items():
        extra += np.where((paths == d).any(axis=1), us, 0.0)
    hops = (paths >= 0).sum(axis=1)
    rtt = 5.0 + hops[k] + np.where(t >= start, extra[k], 0.0) + rng.random(k.size) * 0.5
    names = f.names
    return pa.table(
        {
            "ts_ms": T0 + (t + 1) * 10_000,
            "src_device": names.device(src[k]).tolist(),
            "src_interface": names.interface(src[k], port[k]).tolist(),
            "dst_device": names.device(dst[k]).tolist(),
            "dst_interface": names.interface(dst[k], port[k]).tolist(),
            "ev": ev[k].astype(np.int32),
            "sent": np.full(k.size, 20, dtype=np.int32),
            "lost": np.zeros(k.size, dtype=np.int32),
            "rtt_us": rtt,
            "rtt_max_us": rtt,
        },
        schema=PROBE_SCHEMA,
    )


def _spine_up(f: OpsFabric, i: int = 0) -> int:
    """The ``i``-th (modulo) directed leaf-to-spine link (its ``up`` direction) that some
    probe path of :func:`_keys` crosses."""
    paths = _keys(f)[4]
    ups = 2 * np.flatnonzero(f.topology.link_tier == 2)
    covered = ups[np.isin(ups, paths)]
    return int(covered[i % covered.size])


def _named(f: OpsFabric, loc: Localisation, d: int) -> list[Suspect]:
    label = f.link_label(d // 2)
    return [s for s in loc.suspects if s.target == label]


def test_a_modest_delay_from_the_first_interval_names_no_link(k8: OpsFabric) -> None:
    """3 us of queueing on one leaf uplink in every interval (a collision's queue, the state
    the window began in) names nothing: before, a gray link at 0.09."""
    d = _spine_up(k8)
    loc = localise(k8, probes=_probes(k8, {d: 3.0}))
    assert _named(k8, loc, d) == []
    assert [s for s in loc.suspects if s.fault is not None] == []


def test_the_same_delay_with_an_onset_names_the_link_first(k8: OpsFabric) -> None:
    d = _spine_up(k8)
    loc = localise(k8, probes=_probes(k8, {d: 4.5}, start=2))  # 3 us over the window
    assert loc.suspects[0].target == k8.link_label(d // 2)
    assert loc.suspects[0].fault is FaultKind.GRAY_LINK


def test_a_delay_far_beyond_its_peers_names_the_link_without_an_onset(k8: OpsFabric) -> None:
    d = _spine_up(k8)
    loc = localise(k8, probes=_probes(k8, {d: 6 * DELAY_FAR * DELAY_MIN_US}))
    assert loc.suspects[0].target == k8.link_label(d // 2)
    assert loc.suspects[0].fault is FaultKind.GRAY_LINK


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    i=st.integers(0, 60),
    us=st.floats(4.0, 8.5),
    start=st.integers(0, 2),
    seed=st.integers(0, 2**16),
)
def test_a_delay_names_its_link_exactly_when_it_has_an_onset(
    k8: OpsFabric, i: int, us: float, start: int, seed: int
) -> None:
    """Below the far bound (peers fit no delay: ``DELAY_FAR * DELAY_MIN_US``) and above the
    floor over the window, a delay names its link (first) if and only if it begins after the
    first interval."""
    d = _spine_up(k8, i)
    loc = localise(k8, probes=_probes(k8, {d: us}, start=start, seed=seed))
    got = _named(k8, loc, d)
    if start == 0:
        assert got == []
    else:
        assert loc.suspects[0].target == k8.link_label(d // 2)


def test_onset_and_far_bound_closed_forms() -> None:
    t = np.repeat(np.arange(4), 3)
    assert not _delay_onset(t, np.full(12, 3.0), 4)  # as strong from the start
    x = np.where(t >= 1, 4.0, ONSET_SHARE * 4.0 - 0.01)
    assert _delay_onset(t, x, 4)  # just below the onset share in the first interval
    assert not _delay_onset(t, np.where(t >= 1, 4.0, ONSET_SHARE * 4.0 + 0.01), 4)
    assert not _delay_onset(np.array([1, 2]), np.array([4.0, 4.0]), 4)  # no first interval
    f = small_design("fat-tree-k8")
    delay = np.zeros(2 * f.topology.n_links)
    far = _far_delay(f, delay)
    assert far == pytest.approx(DELAY_FAR * DELAY_MIN_US)  # most links fit no delay
    tier = np.repeat(np.asarray(f.topology.link_tier), 2)
    delay[tier == 2] = np.arange(int((tier == 2).sum())) % 2 * 10.0  # half at 10, half 0
    far = _far_delay(f, delay)
    # median 5, MAD 5: 5 + DELAY_FAR * 1.4826 * 5 on tier 2; the others unchanged
    assert far[tier == 2] == pytest.approx(5 + DELAY_FAR * 1.4826 * 5)
    assert far[tier == 3] == pytest.approx(DELAY_FAR * DELAY_MIN_US)


def _slow_rank(rank: int, late: bool) -> Anomaly:
    return Anomaly(
        Signal.STRAGGLER,
        f"rank:{rank}",
        2.0,
        1.0,
        -500.0 if late else 300.0,
        T0 + 20_000,
        T0 + 60_000,
        4,
        device=f"host{rank}",
        persistent=False,
        note="test",
    )


def _spine(f: OpsFabric) -> Suspect:
    t = f.topology
    node = int(np.flatnonzero(np.asarray(t.node_role) == 3)[0])
    name = str(f.names.device(np.array([node]))[0])
    return Suspect(
        SuspectKind.CONGESTION, name, 0.9, FaultKind.CONGESTED_SPINE, 3, 0, None, None, ("x",)
    )


def test_ranks_a_congested_switch_slows_are_no_stragglers_but_a_late_rank_is(
    k8: OpsFabric,
) -> None:
    """Four ranks slower to communicate since an onset, a congested core above them (every
    host of a fat tree reaches each core): no rank named; without the congestion each is
    (discounted); a rank late to its collectives is named either way."""
    slow = [_slow_rank(r, late=False) for r in (3, 40, 77, 120)]
    board = _Board()
    _stragglers(k8, slow, board, [_spine(k8)])
    assert [s for s in board.ranked() if s.kind is SuspectKind.RANK] == []
    board = _Board()
    _stragglers(k8, slow, board)
    assert sorted(s.target for s in board.ranked()) == sorted(a.where for a in slow)
    board = _Board()
    _stragglers(k8, [_slow_rank(9, late=True)], board, [_spine(k8)])
    assert [s.target for s in board.ranked()] == ["rank:9"]


def test_a_switch_off_a_ranks_paths_does_not_excuse_it(k8: OpsFabric) -> None:
    """A congested leaf explains only its own hosts' ranks: a rank under another leaf stays
    a straggler suspect."""
    t = k8.topology
    host_link = int(np.flatnonzero((np.asarray(t.link_src) == 3) & (t.link_tier == 1))[0])
    leaf = int(t.link_dst[host_link])
    others = np.flatnonzero((np.asarray(t.node_role) == 1) & (np.arange(t.n_nodes) != leaf))
    far_leaf = str(k8.names.device(np.array([int(others[-1])]))[0])
    near_leaf = str(k8.names.device(np.array([leaf]))[0])
    cong = _spine(k8)
    for name, named in ((far_leaf, ["rank:3"]), (near_leaf, [])):
        board = _Board()
        _stragglers(k8, [_slow_rank(3, late=False)], board, [replace(cong, target=name)])
        assert [s.target for s in board.ranked() if s.kind is SuspectKind.RANK] == named


def test_healthy_packet_window_of_traffic_8_names_no_fault(k8: OpsFabric) -> None:
    """Window 18 of ``evaluate(..., engine="packet", traffics=10, healthy=...)`` (seed 0):
    before, a gray link on 2.1 us of fitted queueing alone (no onset) was named first; its
    probes do show that delay, and the link is still a slow element to the congestion rule."""
    from clusterloom.ops.ingest import counter_rates
    from clusterloom.ops.model import FaultKind as FK
    from clusterloom.ops.synth import synthesize

    rng = np.random.default_rng([0, len(FK), 18])
    syn = synthesize(
        k8,
        [],
        duration_s=60.0,
        interval_s=10.0,
        seed=int(rng.integers(2**31)),
        engine="packet",
        traffic_seed=8,
    )
    loc = localise(
        k8,
        rates=counter_rates(syn.counters, k8),
        probes=syn.probes,
        collectives=syn.collectives,
    )
    assert [s for s in loc.suspects if s.fault is not None] == []
