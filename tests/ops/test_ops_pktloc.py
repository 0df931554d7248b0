"""PFC pauses followed downstream to a slow port (``ops.pauses``), and the packet engine's
evaluation mode (``ops.evaluate``, ``engine="packet"``): issue 23, item 3.

The chain on ``fat-tree-k8`` (``ops.evaluate.small_design``), built by hand::

    core C ──(C's port toward S receives pauses: onset)──► spine S
    spine S ──(S's port toward leaf receives pauses)────► leaf
    leaf ──(its port toward host h marks ECN, below the detector's floor)──► host h (slow)

then on a packet run where a slow NIC port shows only as pauses upstream."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from clusterloom.ops.detect import Signal, counter_anomalies
from clusterloom.ops.evaluate import (
    PACKET_KINDS,
    evaluate,
    evaluation_dict,
    meets_targets,
    small_design,
)
from clusterloom.ops.fabric import OpsFabric
from clusterloom.ops.faults import parse_fault
from clusterloom.ops.ingest import counter_rates
from clusterloom.ops.localise import localise
from clusterloom.ops.model import FaultKind, SuspectKind
from clusterloom.ops.pauses import pause_chains
from clusterloom.ops.synth import synthesize
from helpers import half_rate_table

T0 = 1_764_600_000_000
N_T = 6
HOST = 12


@pytest.fixture(scope="module")
def k8() -> OpsFabric:
    return small_design("fat-tree-k8")


def _chain_links(f: OpsFabric) -> tuple[int, int, int, list[int]]:
    """The host link of ``HOST``, a leaf-spine link above it, a spine-core link above that,
    and the leaf's other host links."""
    t = f.topology
    dev, ifs = f.end_names
    d, i = f.endpoint(HOST, 0)
    hl = int(np.flatnonzero((dev[:, 0] == d) & (ifs[:, 0] == i))[0])
    leaf = int(t.link_dst[hl])
    ls = int(np.flatnonzero((t.link_src == leaf) & (t.link_tier == 2))[0])
    spine = int(t.link_dst[ls])
    sc = int(np.flatnonzero((t.link_src == spine) & (t.link_tier == 3))[0])
    siblings = np.flatnonzero((t.link_dst == leaf) & (t.link_tier == 1)).tolist()
    return hl, ls, sc, [int(x) for x in siblings if x != hl]


def _rates(
    f: OpsFabric,
    pauses: dict[tuple[int, int], tuple[float, int]],
    marks: dict[tuple[int, int], tuple[float, int]],
) -> pa.Table:
    """Every interface at half its rate for ``N_T`` intervals, no marks or pauses but those
    given: ``(link, end) -> (per second or per packet, from interval)``."""
    n = f.interface_table().num_rows
    nl = f.topology.n_links
    t = np.repeat(np.arange(N_T), n)
    row = np.tile(np.arange(n), N_T)
    pfc, ecn = np.zeros(n * N_T), np.zeros(n * N_T)
    for (link, end), (v, at) in pauses.items():
        pfc[(row == end * nl + link) & (t >= at)] = v
    for (link, end), (v, at) in marks.items():
        ecn[(row == end * nl + link) & (t >= at)] = v
    return half_rate_table(f, N_T, T0, ecn_ratio=ecn, pfc_ps=pfc)


def _case(f: OpsFabric, **over: object) -> pa.Table:
    hl, ls, sc, sib = _chain_links(f)
    pauses = {(sc, 1): (50.0, 2), (ls, 1): (40.0, 0)}  # the spine's port: pauses from the start
    marks = {(hl, 1): (5e-4, 2)}  # below detect's floor (1e-3): the queue never flagged
    if over.get("start_persistent"):
        pauses[(sc, 1)] = (50.0, 0)
    if over.get("end_persistent"):
        marks[(hl, 1)] = (5e-4, 0)
    if over.get("sibling_marks"):
        marks[(sib[0], 1)] = (5e-4, 2)
    if over.get("marks_up_only"):
        marks = {
            (int(np.flatnonzero(f.topology.link_src == f.topology.link_dst[hl])[0]), 0): (
                5e-4,
                2,
            )
        }
    return _rates(f, pauses, marks)


def test_pauses_are_followed_down_to_the_port_whose_queue_sends_them(k8: OpsFabric) -> None:
    rates = _case(k8)
    hl, ls, sc, _ = _chain_links(k8)
    found = counter_anomalies(rates, k8)
    assert {(a.signal, a.link) for a in found} == {(Signal.PFC, sc), (Signal.PFC, ls)}
    loc = localise(k8, rates=rates)
    d, i = k8.endpoint(HOST, 0)
    first = loc.suspects[0]
    assert (first.kind, first.target, first.fault) == (
        SuspectKind.PORT,
        f"{d}:{i}",
        FaultKind.SLOW_NIC_PORT,
    )
    assert len(loc.suspects) == 1 and not loc.congestion
    dev, ifs = k8.end_names
    said = first.evidence[0]
    # the chain written out: core's port > spine's port, ending at the leaf's port
    assert f"{dev[sc, 1]}:{ifs[sc, 1]} > {dev[ls, 1]}:{ifs[ls, 1]}" in said
    assert f"{dev[hl, 1]}:{ifs[hl, 1]} marks" in said
    assert first.explained == 2  # two interfaces receiving pauses on the way


@pytest.mark.parametrize(
    "broken", ["start_persistent", "end_persistent", "sibling_marks", "marks_up_only"]
)
def test_a_chain_names_nothing_where_nothing_tells_the_port(k8: OpsFabric, broken: str) -> None:
    """Pauses from the window's start (the fabric's state), the port's marks from the
    window's start (a collision's queue, there before the pauses), two ports marking alike
    (no port stands out), marks only on an uplink the down-going traffic never takes: no
    suspect."""
    loc = localise(k8, rates=_case(k8, **{broken: True}))
    assert loc.suspects == ()


def test_a_chain_stops_at_a_congested_switch(k8: OpsFabric) -> None:
    rates = _case(k8)
    _, ls, sc, _ = _chain_links(k8)
    anomalies = counter_anomalies(rates, k8)
    assert len(pause_chains(k8, anomalies, rates)) == 1
    spine = int(k8.topology.link_src[sc])
    assert pause_chains(k8, anomalies, rates, stop_nodes=[spine]) == []
    assert pause_chains(k8, anomalies, rates, stop_links=[ls]) == []
    assert pause_chains(k8, anomalies, None) == []


def _loc(f: OpsFabric, faults: list[str], traffic_seed: int = 0) -> object:
    syn = synthesize(
        f,
        [parse_fault(x, f) for x in faults],
        duration_s=60,
        interval_s=10,
        seed=1,
        engine="packet",
        traffic_seed=traffic_seed,
    )
    return localise(
        f, rates=counter_rates(syn.counters, f), probes=syn.probes, collectives=syn.collectives
    )


def test_a_slow_port_seen_only_as_pauses_upstream_is_found_on_a_packet_run(
    k8: OpsFabric,
) -> None:
    """At 27% of its rate, node00012's port queues so little that its leaf's port marks
    below the detector's floor (no ECN anomaly: silent before this rule); its leaf pauses
    the spine feeding it, and the chain leads there."""
    loc = _loc(k8, ["slow-nic-port:node00012:gpu0p0@20s*rate=0.27"])
    signals = {(str(a.signal), a.where) for a in loc.anomalies}  # type: ignore[attr-defined]
    assert ("pfc", "be-p0-spine0001:swp4") in signals
    assert not any(s == "ecn" and w.startswith("be-p0-leaf0003") for s, w in signals)
    first = loc.suspects[0]  # type: ignore[attr-defined]
    assert (first.target, first.fault) == ("node00012:gpu0p0", FaultKind.SLOW_NIC_PORT)
    assert "be-p0-spine0001:swp4" in first.evidence[0]


@pytest.mark.parametrize("traffic_seed", [0, 3])
def test_healthy_packet_runs_name_nothing(k8: OpsFabric, traffic_seed: int) -> None:
    loc = _loc(k8, [], traffic_seed)
    assert loc.suspects == ()  # type: ignore[attr-defined]


def test_a_congested_spine_on_a_packet_run_names_no_fault_first(k8: OpsFabric) -> None:
    loc = _loc(k8, ["congested-spine:be-p0-spine0010@10s*load=0.5"])
    first = loc.suspects[0]  # type: ignore[attr-defined]
    assert (first.kind, first.target) == (SuspectKind.CONGESTION, "be-p0-spine0010")


def test_the_packet_evaluation_scores_incidents_and_healthy_windows(k8: OpsFabric) -> None:
    ev = evaluate(k8, [FaultKind.DEAD_LINK], 2, 0, engine="packet", traffics=2, healthy=2)
    assert ev.engine == "packet" and ev.scores[0].incidents == 2
    assert ev.healthy is not None and ev.healthy.incidents == 2
    assert ev.healthy.named == 0.0 and ev.healthy.silent == 1.0
    assert evaluation_dict(ev)["healthy"] == {
        "incidents": 2,
        "named": 0.0,
        "congestion": 0.0,
        "silent": 1.0,
        "false_alarms": [],
    }
    assert meets_targets(ev) == (ev.scores[0].top1 >= 0.9)
    assert set(PACKET_KINDS) == set(FaultKind)  # the packet engine expresses every kind


def test_all_traffic_on_one_of_four_uplinks_is_not_a_mis_hash(k8: OpsFabric) -> None:
    """A 4-uplink spine of ``fat-tree-k8`` sending everything up one uplink: a few flows
    hashed together (a permutation's 128 flows give a spine about four), not a mis-hash
    (one short of 100% cannot reach 4 times an even share there). The same on a switch
    with more uplinks is a skew (``test_ops_detect``, on ``fat-tree-k16``'s 8)."""
    rates = _rates(k8, {}, {})
    t = k8.topology
    spine = int(t.link_dst[np.flatnonzero(t.link_tier == 2)[0]])
    ups = np.flatnonzero((t.link_src == spine) & (t.link_tier == 3))
    assert ups.size == 4
    tx = rates["tx_bps"].to_numpy().copy()
    link = rates["link"].to_numpy()
    end = rates["end"].to_numpy()
    for k, u in enumerate(ups.tolist()):
        tx[(link == u) & (end == 0)] *= 4.0 if k == 0 else 0.0
    rates = rates.set_column(rates.schema.get_field_index("tx_bps"), "tx_bps", pa.array(tx))
    found = counter_anomalies(rates, k8)
    assert not [a for a in found if a.signal is Signal.SKEW]
    assert [a for a in found if a.signal is Signal.LOW_RATE]  # the cold uplinks still show


@pytest.mark.parametrize(("first", "persistent"), [(0.3, False), (1.0, True)])
def test_an_onset_inside_the_first_interval_is_no_persistent_state(
    k8: OpsFabric, first: float, persistent: bool
) -> None:
    """A leaf port toward a host marking 1% from part-way through the window's first
    interval (a third of that interval's packets marked as often) has an onset; marking as
    much from the start is the state the window began in."""
    hl = _chain_links(k8)[0]
    rates = _rates(k8, {}, {(hl, 1): (1e-2, 0)})
    ecn = rates["ecn_ps"].to_numpy().copy()
    t0 = rates["ts_ms"].to_numpy() == T0 + 10_000
    ecn[t0] *= first
    rates = rates.set_column(rates.schema.get_field_index("ecn_ps"), "ecn_ps", pa.array(ecn))
    found = [a for a in counter_anomalies(rates, k8) if a.signal is Signal.ECN]
    assert [(a.link, a.persistent) for a in found] == [(hl, persistent)]
    assert found[0].first_ms == T0 + 10_000  # flagged from the first interval either way


def test_a_switch_paused_because_paused_further_down_is_not_congested(k8: OpsFabric) -> None:
    """Incident 12 of the packet evaluation's slow NIC ports (seed 0, traffic 2): the cores
    feeding be-p0-spine0015 receive its pauses and its port toward be-p0-leaf0012 receives
    the leaf's, so four of its links show load (all of it pauses received) and it was
    called congested (0.65) above the slow port (0.60). The chain passes through it to
    the leaf's port toward node00049: the port first, no congestion."""
    from clusterloom.ops.faults import random_fault

    rng = np.random.default_rng([0, list(FaultKind).index(FaultKind.SLOW_NIC_PORT), 12])
    fault = random_fault(k8, FaultKind.SLOW_NIC_PORT, rng, duration_ms=60_000)
    assert fault.target == "node00049:gpu0p0"
    syn = synthesize(
        k8,
        [fault],
        duration_s=60,
        interval_s=10,
        seed=int(rng.integers(2**31)),
        engine="packet",
        traffic_seed=2,
    )
    loc = localise(
        k8, rates=counter_rates(syn.counters, k8), probes=syn.probes, collectives=syn.collectives
    )
    assert (loc.suspects[0].target, loc.suspects[0].fault) == (
        "node00049:gpu0p0",
        FaultKind.SLOW_NIC_PORT,
    )
    assert not loc.congestion
    assert any("be-p0-spine0015:swp1" in e for e in loc.suspects[0].evidence)


def test_ops_evaluate_refuses_an_unknown_engine() -> None:
    from typer.testing import CliRunner

    from clusterloom.cli.main import app

    got = CliRunner().invoke(app, ["ops", "evaluate", "fat-tree-k8", "--engine", "bogus"])
    assert got.exit_code == 2
    assert "--engine" in got.output


def _slowed(
    k8: OpsFabric, ranks: list[int], steps: int = 6, *, quick: tuple[int, ...] = ()
) -> pa.Table:
    """A permutation's collective timings, 128 ranks: ``ranks`` take 1.5x and ``quick`` 0.6x
    in every step (the first included, so no onset in the window), the others 1 ms +- 0.5%."""
    from clusterloom.ops.model import COLLECTIVE_SCHEMA

    rng = np.random.default_rng(3)
    rank = np.tile(np.arange(128), steps)
    step = np.repeat(np.arange(steps), 128)
    dur = 1000.0 * (1 + rng.normal(0, 0.005, rank.size))
    dur[np.isin(rank, ranks)] *= 1.5
    dur[np.isin(rank, quick)] *= 0.6
    n = rank.size
    return pa.table(
        {
            "ts_ms": T0 + step * 10_000,
            "job": ["job0"] * n,
            "step": step,
            "rank": rank.astype(np.int32),
            "device": [f"node{r:05d}" for r in rank.tolist()],
            "collective": ["permutation"] * n,
            "duration_us": dur,
        },
        schema=COLLECTIVE_SCHEMA,
    )


def test_ranks_slowed_alike_from_the_start_are_collisions_not_stragglers(k8: OpsFabric) -> None:
    """Three or more ranks slower to communicate from the window's first step (a healthy
    window's ECMP collisions, the same every step) name no straggler; one such rank still
    does (an older fault of its own, discounted as persistent)."""
    crowd = localise(k8, collectives=_slowed(k8, [15, 23, 57]))
    assert [s for s in crowd.suspects if s.kind is SuspectKind.RANK] == []
    lone = localise(k8, collectives=_slowed(k8, [15]))
    assert [s.target for s in lone.suspects if s.kind is SuspectKind.RANK] == ["rank:15"]
    # ranks quicker from the first step beside the collided ones: the same spread's other
    # side (healthy packet windows of traffic 4 named rank:0 so), not late ranks
    both = localise(k8, collectives=_slowed(k8, [15, 23, 57], quick=(0, 9)))
    assert [s for s in both.suspects if s.kind is SuspectKind.RANK] == []
    late = localise(k8, collectives=_slowed(k8, [], quick=(0,)))
    assert [s.target for s in late.suspects if s.kind is SuspectKind.RANK] == ["rank:0"]
