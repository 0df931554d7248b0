"""The simulator forms of dead EVs, mis-hashed switches, congested spines and stragglers
(``sim.faultforms``) are what ``ops synth`` says each fault is, and their mitigations are
checked: a helpful one is proposed, a harmful one refused, on the flow engine and (small
designs) the packet engine."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.errors import SpecError
from clusterloom.ops.fabric import OpsFabric, load_fabric
from clusterloom.ops.faults import parse_fault
from clusterloom.ops.mitigate import (
    MitigationKind,
    Verdict,
    candidates,
    check_mitigations,
    evidence_rate,
    fault_texts,
    suspect_fault,
)
from clusterloom.ops.model import FaultKind, Suspect, SuspectKind
from clusterloom.sim.faultforms import (
    DEAD_EV_BUCKETS,
    MAX_GROUP,
    _group,
    black_holed,
    congestion_failures,
    hop_hashes,
    moved_congestion,
    peers,
    skewed_router,
    straggling,
    unit_evs,
)
from clusterloom.sim.paths import route
from clusterloom.sim.traffic import permutation

HOSTS = 256


@pytest.fixture(scope="module")
def fabric() -> OpsFabric:
    return load_fabric("hgx-1k-roce")


def _name(fabric: OpsFabric, node: int) -> str:
    return str(fabric.names.device(np.array([node]))[0])


def _leaf0(fabric: OpsFabric) -> int:
    return int(fabric.topology.plan.hosts)  # the first switch: leaf 0


def _spine(fabric: OpsFabric, i: int = 0) -> int:
    return int(np.flatnonzero(fabric.topology.node_role == 2)[i])


def _by_id(checked: tuple, kind: MitigationKind) -> object:  # type: ignore[type-arg]
    return next(c for c in checked if c.mitigation.kind == kind)


# --- the forms ------------------------------------------------------------------------------


@pytest.mark.parametrize("share", [0.3, 0.8, 0.9, 1.0])
def test_a_mis_hashed_switch_sends_its_share_to_its_first_uplink(
    fabric: OpsFabric, share: float
) -> None:
    """Closed form: the weighted group's share is a / (a + (n - 1) c), within 1% of the one
    asked; 20,000 hashed flows from the leaf land on its first uplink at that share."""
    r = fabric.router
    leaf = _leaf0(fabric)
    skew, real = skewed_router(r, leaf, share)
    assert real == pytest.approx(share, abs=0.01)
    t = fabric.topology
    under = np.flatnonzero((t.link_tier == 1) & (t.link_dst == leaf))
    hosts = np.unique(t.link_src[under])
    ports = t.link_src_port[under[0]]
    n = 20_000
    rng = np.random.default_rng(0)
    src = np.full(n, hosts[0], dtype=np.int64)
    dst = rng.integers(hosts.max() + 1, t.plan.hosts, size=n).astype(np.int64)
    port = np.full(n, ports, dtype=np.int64)
    ev = rng.integers(0, 2**32, size=n).astype(np.int64)
    first = int(r.up[leaf, 0])
    healthy = route(r, src, dst, port, ev, seed=0)[:, 1] // 2
    skewed = route(skew, src, dst, port, ev, seed=0)[:, 1] // 2
    ups = int((r.up[leaf] >= 0).sum())
    assert (healthy == first).mean() == pytest.approx(1 / ups, abs=0.01)
    assert (skewed == first).mean() == pytest.approx(real, abs=0.015)
    assert set(np.unique(skewed)) <= set(r.up[leaf][r.up[leaf] >= 0].tolist())
    row = skew.up[leaf][skew.up[leaf] >= 0]
    counts = np.unique(row, return_counts=True)[1]
    assert (row == first).sum() / row.size == real  # the group's own share, exactly
    if share < 1.0:  # the others evenly, as synth spreads the rest
        assert len(set(counts[np.unique(row) != first].tolist())) == 1
    with pytest.raises(SpecError, match="fewer than two uplinks"):
        skewed_router(r, _spine(fabric), 0.8)
    with pytest.raises(SpecError, match="share"):
        skewed_router(r, leaf, 0.0)


@settings(max_examples=200, deadline=None)
@given(st.integers(2, 128), st.floats(0.001, 0.999))
def test_the_weighted_group_is_the_closest_it_can_hold(n: int, share: float) -> None:
    """At most MAX_GROUP entries; within 1% of the share asked, or as close as the table
    allows (one entry for each other uplink at least)."""
    a, c = _group(n, share)
    total = a + (n - 1) * c
    assert a >= 1 and c >= 1 and total <= MAX_GROUP
    top = 1 - (n - 1) / MAX_GROUP  # the largest share a table of MAX_GROUP can give
    assert abs(a / total - share) <= max(0.01, share - top)


def test_a_congested_spine_is_the_capacity_synth_takes(fabric: OpsFabric) -> None:
    """``ops synth`` runs a congested spine with its links at max(0.05, 1 - load): so does
    the check; drained, the load goes to its peers in equal parts."""
    from clusterloom.ops.synth import _capacity_windows

    sp = _spine(fabric, 2)
    for load in (0.3, 0.5, 2.0):
        f = parse_fault(f"congested-spine:{_name(fabric, sp)}@0s*load={load}", fabric)
        ((_, _, fractions),) = _capacity_windows(f, fabric, 60_000)
        (text,) = congestion_failures(sp, load)
        assert fault_texts(f, fabric) == (text,)
        assert float(text.rsplit("*", 1)[1]) == pytest.approx(set(fractions.values()).pop())
    others = peers(fabric.topology, sp)
    assert sp not in others and others.size == 7  # hgx-1k-roce: 8 spines in one plane
    moved = moved_congestion(fabric.topology, sp, 0.7)
    assert len(moved) == 7 and all(x.endswith(f"*{1 - 0.1!r}") for x in moved)


def test_a_straggler_starts_its_free_flows_late() -> None:
    tr = permutation(16, 1000, seed=1)
    late = straggling(tr, [3, 5], 7_000_000)
    shift = late.start_ps - tr.start_ps
    assert (shift[np.isin(tr.src, [3, 5])] == 7_000_000).all()
    assert (shift[~np.isin(tr.src, [3, 5])] == 0).all()
    with pytest.raises(SpecError):
        straggling(tr, [3], 0)


def test_the_units_evs_are_the_transports(fabric: OpsFabric) -> None:
    """``unit_evs`` draws each queue pair's EV as ``roce-ecmp`` does: routed, they are the
    transport's own paths (a drift in either breaks this)."""
    from clusterloom.sim.flow.transports import transport

    tr = permutation(64, 1000, seed=2)
    src, dst = tr.src.astype(np.int64), tr.dst.astype(np.int64)
    r = fabric.router
    units = transport("roce-ecmp").units(
        r, src, dst, alive=np.ones(fabric.topology.n_links, dtype=bool), seed=5
    )
    f, port, ev = unit_evs("roce-ecmp", r, src, dst, 5)
    paths = route(r, src[f], dst[f], port, ev, seed=5)
    assert np.array_equal(paths[paths >= 0], units.unit_link)
    assert np.array_equal(f, units.unit_flow)


def test_a_dead_ev_black_holes_its_bucket_at_the_switch(fabric: OpsFabric) -> None:
    """The probe's own EV through the switch is lost; of the units the switch hashes, those
    in the dead EV's bucket and only they (about 1 in 64)."""
    r, t = fabric.router, fabric.topology
    leaf = _leaf0(fabric)
    tr = permutation(1024, 1000, seed=3)
    src, dst = tr.src.astype(np.int64), tr.dst.astype(np.int64)
    dead, owner = black_holed(r, "mrc-spray", src, dst, 0, alive=None, switch=leaf, ev=49153)
    f, port, ev = unit_evs("mrc-spray", r, src, dst, 0)
    assert np.array_equal(owner, f)
    paths = route(r, src[f], dst[f], port, ev, seed=0)
    node, h = hop_hashes(t, paths, ev, 0)
    at = (node == leaf).any(axis=1)
    assert not dead[~at].any()  # nothing that the switch does not hash
    assert dead[at].mean() == pytest.approx(1 / DEAD_EV_BUCKETS, rel=0.35)
    # the probe itself, from a host under the leaf with the dead EV: its bucket at the leaf
    # is the dead one, and the dead units are exactly those the leaf hashes into it
    under = np.flatnonzero((t.link_tier == 1) & (t.link_dst == leaf))
    a, p = int(t.link_src[under[0]]), int(t.link_src_port[under[0]])
    probe = route(
        r, np.array([a]), np.array([t.plan.hosts - 1]), np.array([p]), np.array([49153]), seed=0
    )
    pnode, ph = hop_hashes(t, probe, np.array([49153]), 0)
    assert pnode[0, 1] == leaf
    bucket = ph[0, 1] % np.uint64(DEAD_EV_BUCKETS)
    expected = ((node == leaf) & (h % np.uint64(DEAD_EV_BUCKETS) == bucket)).any(axis=1)
    assert np.array_equal(dead, expected)
    # a sprayer's EVs as the transport routes them (its static source routes)
    from clusterloom.sim.flow.transports import MrcSpray

    k = np.tile(np.arange(128, dtype=np.int64), src.size)
    own = MrcSpray().ev_paths(r, src[f], dst[f], port, k, f, 0)
    assert np.array_equal(own, paths)


# --- the checks -----------------------------------------------------------------------------


def test_a_dead_ev_is_retired_by_a_sprayer_never_by_draining_its_leaf(fabric: OpsFabric) -> None:
    f = parse_fault(f"dead-ev:{_name(fabric, _leaf0(fabric))}#49153@0s", fabric)
    checked = check_mitigations(
        fabric, [f], candidates(fabric, [f]), transport="mrc-spray", hosts=HOSTS
    )
    retire = _by_id(checked, MitigationKind.RETIRE_EVS)
    drain = _by_id(checked, MitigationKind.DRAIN_SWITCH)
    assert retire.verdict == Verdict.BETTER and checked[0] is retire  # type: ignore[attr-defined]
    # doing nothing stalls the connections holding a dead EV for the 20 us detection
    assert retire.nothing_ps - retire.predicted_ps == pytest.approx(20e6, rel=0.05)  # type: ignore[attr-defined]
    assert drain.verdict == Verdict.UNFINISHED  # type: ignore[attr-defined]  # the rack cut off


def test_a_dead_ev_at_a_spine_leaves_roce_unfinished_until_drained(fabric: OpsFabric) -> None:
    f = parse_fault(f"dead-ev:{_name(fabric, _spine(fabric, 1))}#49153@0s", fabric)
    checked = check_mitigations(
        fabric, [f], candidates(fabric, [f]), transport="roce-ecmp", hosts=HOSTS
    )
    drain = checked[0]
    assert drain.mitigation.kind == MitigationKind.DRAIN_SWITCH
    assert drain.verdict == Verdict.BETTER and drain.nothing_finished < drain.flows
    assert drain.finished == drain.flows
    assert _by_id(checked, MitigationKind.RETIRE_EVS).verdict == Verdict.NOT_APPLICABLE  # type: ignore[attr-defined]


@pytest.mark.parametrize("transport", ["roce-ecmp", "mrc-spray"])
def test_a_mis_hashed_leaf_is_reweighted_not_drained(fabric: OpsFabric, transport: str) -> None:
    f = parse_fault(f"mis-hashed-switch:{_name(fabric, _leaf0(fabric))}@0s*share=0.9", fabric)
    checked = check_mitigations(
        fabric, [f], candidates(fabric, [f]), transport=transport, hosts=HOSTS
    )
    best = checked[0]
    assert best.mitigation.kind == MitigationKind.REWEIGHT and best.verdict == Verdict.BETTER
    assert best.predicted_ps < 0.5 * best.nothing_ps  # 90% of the leaf's flows on one uplink
    assert _by_id(checked, MitigationKind.DRAIN_SWITCH).verdict == Verdict.UNFINISHED  # type: ignore[attr-defined]


def test_under_mild_congestion_draining_the_spine_is_refused(fabric: OpsFabric) -> None:
    """A spine carrying 10% of other traffic: the sprayers reweighted off it are predicted
    faster; draining it (a whole spine's capacity gone, its other traffic on its peers) is
    predicted slower and never proposed."""
    sp = _name(fabric, _spine(fabric))
    f = parse_fault(f"congested-spine:{sp}@0s*load=0.1", fabric)
    checked = check_mitigations(fabric, [f], candidates(fabric, [f]), transport="mrc-spray")
    assert checked[0].mitigation.kind == MitigationKind.REWEIGHT
    assert checked[0].verdict == Verdict.BETTER
    drain = _by_id(checked, MitigationKind.DRAIN_SWITCH)
    assert drain.verdict == Verdict.WORSE  # type: ignore[attr-defined]
    assert "drain-switch" not in [c.mitigation.kind.value for c in checked if c.proposable]


def test_a_straggler_is_moved_to_a_spare_and_draining_does_not_help(fabric: OpsFabric) -> None:
    from clusterloom.ops.mitigate import Mitigation

    f = parse_fault("straggler-rank:rank:5@0s*delay=1ms", fabric)
    t = fabric.topology
    link = int(np.flatnonzero((t.link_tier == 1) & (t.link_src == 5))[0])
    drain = Mitigation(
        MitigationKind.DRAIN_LINK, "rank:5", (fabric.link_label(link),), links=(link,)
    )
    checked = check_mitigations(
        fabric, [f], [*candidates(fabric, [f]), drain], transport="roce-ecmp", hosts=HOSTS
    )
    move = checked[0]
    assert move.mitigation.kind == MitigationKind.MOVE_RANKS and move.verdict == Verdict.BETTER
    # the step waits for the straggler: doing nothing ends after its 1 ms
    assert 1e9 <= move.nothing_ps <= 1e9 + 1.5 * move.predicted_ps
    d = _by_id(checked, MitigationKind.DRAIN_LINK)
    assert d.verdict != Verdict.BETTER  # type: ignore[attr-defined]


def test_the_packet_engine_checks_small_designs_only(fabric: OpsFabric) -> None:
    small = load_fabric("fat-tree-k16")
    leaf = _name(small, _leaf0(small))
    f = parse_fault(f"mis-hashed-switch:{leaf}@0s*share=0.9", small)
    checked = check_mitigations(
        small,
        [f],
        [m for m in candidates(small, [f]) if m.kind == MitigationKind.REWEIGHT],
        transport="roce-ecmp",
        hosts=16,
        size="256KB",
        engine="packet",
    )
    assert checked[0].verdict == Verdict.BETTER
    dead = parse_fault(f"dead-ev:{leaf}#49153@0s", small)
    with pytest.raises(SpecError, match="not expressible in the packet engine"):
        check_mitigations(small, [dead], [], hosts=16, engine="packet")
    with pytest.raises(SpecError, match="packet engine checks up to"):
        check_mitigations(small, [f], [], engine="packet")  # 1,024 flows


def test_a_suspects_rate_comes_from_its_evidence() -> None:
    said = Suspect(
        SuspectKind.LINK,
        "a:b~c:d",
        0.9,
        FaultKind.GRAY_LINK,
        evidence=(
            "counters: operational speed at a:b 100 Gb/s, 25% of the design's 400 Gb/s, in 3 "
            "interval(s): a link below its design speed",
        ),
    )
    assert evidence_rate(said) == pytest.approx(0.25)
    assert suspect_fault(said).rate == pytest.approx(0.25)
    silent = Suspect(SuspectKind.LINK, "a:b~c:d", 0.9, FaultKind.GRAY_LINK, evidence=("loss",))
    assert evidence_rate(silent) is None
    assert suspect_fault(silent, assumed_rate=0.4).rate == 0.4
    assert suspect_fault(Suspect(SuspectKind.RANK, "rank:3", 0.9)).severity == 10_000.0


def test_the_command_checks_every_kind(fabric: OpsFabric) -> None:
    import json

    from typer.testing import CliRunner

    from clusterloom.cli.main import app

    leaf = _name(fabric, _leaf0(fabric))
    base = ["ops", "mitigate", "hgx-1k-roce", "--hosts", str(HOSTS), "--no-progress"]
    r = CliRunner().invoke(
        app, [*base, "--fault", f"mis-hashed-switch:{leaf}@0s*share=0.9", "--json"]
    )
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["proposal"].startswith("ops-reweight-")
    assert doc["checked"][0]["mitigation"] == f"reweight:{leaf}"
    # a dead EV on a leaf under RoCE: no queue pair of this traffic hashes into it (seed 0),
    # and draining the leaf cuts its rack off: nothing is proposed
    r = CliRunner().invoke(app, [*base, "--fault", f"dead-ev:{leaf}#49153@0s"])
    assert r.exit_code == 1, r.output
    assert "nothing proposed" in r.output
    r = CliRunner().invoke(
        app, [*base, "--fault", f"dead-ev:{leaf}#49153@0s", "--engine", "packet"]
    )
    assert r.exit_code == 2
    assert "not expressible in the packet engine" in r.output
    assert "Traceback" not in r.output


def test_a_dead_ev_of_a_pair_black_holes_that_pairs_path_only(fabric: OpsFabric) -> None:
    """The pair's units on the dead EV's path are lost, no other: two pairs from host 0, one
    to a host under its own leaf (one path: every EV on it) and one far away (many paths)."""
    r, t = fabric.router, fabric.topology
    leaf = _leaf0(fabric)
    near = int(t.link_src[np.flatnonzero((t.link_tier == 1) & (t.link_dst == leaf))][1])
    src = np.array([0, 0, 5], dtype=np.int64)
    dst = np.array([near, 1000, 1000], dtype=np.int64)
    for b, want_all in ((near, True), (1000, False)):
        dead, owner = black_holed(
            r, "mrc-spray", src, dst, 0, alive=None, switch=None, ev=49154, pair=(0, b, 0)
        )
        f, port, ev = unit_evs("mrc-spray", r, src, dst, 0)
        paths = route(r, src[f], dst[f], port, ev, seed=0)
        probe = route(r, np.array([0]), np.array([b]), np.array([0]), np.array([49154]), seed=0)
        mine = (src[owner] == 0) & (dst[owner] == b) & (port == 0)
        assert not dead[~mine].any()
        assert np.array_equal(dead[mine], (paths[mine] == probe[0]).all(axis=1))
        assert dead[mine].all() == want_all and dead[mine].any()


def test_a_congested_pod_spine_is_avoided_by_moving_the_pods_ranks() -> None:
    """3 tiers (fat-tree-k16): the hosts below a spine are its pod's 64; moved to spares in
    other pods, the job no longer crosses it. In 2 tiers every host is below every spine: no
    spare avoids it (not applicable)."""
    k16 = load_fabric("fat-tree-k16")
    t = k16.topology
    sp = _spine(k16)
    f = parse_fault(f"congested-spine:{_name(k16, sp)}@0s*load=0.5", k16)
    ms = candidates(k16, [f])
    move = next(m for m in ms if m.kind == MitigationKind.MOVE_RANKS)
    up = (t.link_tier == 1) & np.isin(t.link_src, list(move.hosts))
    assert len(move.hosts) == 64 and set(t.node_pod[t.link_dst[up]]) == {t.node_pod[sp]}
    checked = check_mitigations(k16, [f], ms, transport="mrc-spray", hosts=HOSTS)
    # moving the ranks and reweighting the sprayer's paths both steer the job off the spine
    # and are predicted within 2% of each other (reweight ahead since ACK entries stopped
    # freezing sprayed flows at the spine's reverse links, docs/sim.md "ACKs in max-min";
    # move-ranks ahead by 1% before), so their order is not what this test holds
    (moved,) = [c for c in checked if c.mitigation.kind == MitigationKind.MOVE_RANKS]
    drained = [c for c in checked if c.mitigation.kind == MitigationKind.DRAIN_SWITCH]
    assert moved.verdict == Verdict.BETTER
    assert moved.predicted_ps < 0.8 * moved.nothing_ps
    assert all(moved.predicted_ps < d.predicted_ps for d in drained) and drained
    assert checked[0].verdict == Verdict.BETTER
    hgx = load_fabric("hgx-1k-roce")
    g = parse_fault(f"congested-spine:{_name(hgx, _spine(hgx))}@0s*load=0.5", hgx)
    gm = [m for m in candidates(hgx, [g]) if m.kind == MitigationKind.MOVE_RANKS]
    (c,) = check_mitigations(hgx, [g], gm, transport="mrc-spray", hosts=HOSTS)
    assert c.verdict == Verdict.NOT_APPLICABLE and "spare" in c.reason


def test_a_mis_hashed_pod_spine_is_reweighted() -> None:
    """3 tiers: a spine's uplinks to the cores (hashed under the second seed) skewed, the
    sprayer's paths crowd one core link; its group reprogrammed even is predicted best."""
    k16 = load_fabric("fat-tree-k16")
    f = parse_fault(f"mis-hashed-switch:{_name(k16, _spine(k16))}@0s*share=0.9", k16)
    checked = check_mitigations(k16, [f], candidates(k16, [f]), transport="mrc-spray", hosts=512)
    assert checked[0].mitigation.kind == MitigationKind.REWEIGHT
    assert checked[0].verdict == Verdict.BETTER
    assert checked[0].predicted_ps < 0.5 * checked[0].nothing_ps
