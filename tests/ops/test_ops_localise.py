"""Localisation: the tomography core on closed cases and generated paths, and ``localise`` on
a design with probes (a lossy link, a dead EV, load) and counters.

Closed case (link ``x`` lossy; ``a``..``d`` cleared by the paths through ``y``)::

    a - x - b      lossy        a - y - d      clean
    c - x - d      lossy        c - y - b      clean
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.errors import SpecError
from clusterloom.ops import PROBE_SCHEMA, FaultKind, SuspectKind, load_fabric
from clusterloom.ops.localise import Localisation, localisation_dict, localise, tomography

T0 = 1_764_600_000_000


# -- the generic core -----------------------------------------------------------------------


def test_one_lossy_link_shared_by_the_bad_paths_is_found_with_full_confidence() -> None:
    paths = [["a", "x", "b"], ["c", "x", "d"], ["a", "y", "d"], ["c", "y", "b"]]
    got = tomography(paths, [100] * 4, [10, 12, 0, 0])
    assert [s.target for s in got] == ["x"]
    assert got[0].confidence == pytest.approx(1.0, abs=1e-6)
    assert got[0].fault is FaultKind.GRAY_LINK
    assert (got[0].explained, got[0].unexplained) == (2, 0)


def test_two_links_always_seen_together_are_both_named_with_split_confidence() -> None:
    paths = [["a", "x", "y", "b"], ["c", "x", "y", "d"], ["a", "w", "d"], ["c", "w", "b"]]
    got = tomography(paths, [100] * 4, [10, 12, 0, 0])
    assert sorted(s.target for s in got) == ["x", "y"]
    assert [s.confidence for s in got] == pytest.approx([0.5, 0.5], abs=1e-3)


def test_no_loss_no_suspect_and_rtt_growth_names_slow_elements_without_a_fault() -> None:
    paths = [["a", "x", "b"], ["c", "x", "d"], ["a", "y", "d"], ["c", "y", "b"]]
    assert tomography(paths, [100] * 4, [0, 0, 0, 0]) == ()
    slow = tomography(paths, [100] * 4, [0, 0, 0, 0], rtt_excess_us=[40, 40, 0, 0])
    assert [(s.target, s.fault) for s in slow] == [("x", None)]
    assert slow[0].confidence == pytest.approx(1.0, abs=1e-3)


def test_tomography_refuses_inconsistent_counts() -> None:
    with pytest.raises(SpecError, match="lost"):
        tomography([["a"], ["b"]], [10, 10], [11, 0])
    with pytest.raises(SpecError, match="one value per path"):
        tomography([["a"], ["b"]], [10], [0])


@st.composite
def _bad_link_case(draw: st.DrawFn) -> tuple[list[list[str]], list[int], list[int], str]:
    n_el = draw(st.integers(4, 12))
    n_paths = draw(st.integers(3, 25))
    paths = [
        [f"e{i}" for i in sorted(draw(st.sets(st.integers(0, n_el - 1), min_size=1, max_size=4)))]
        for _ in range(n_paths)
    ]
    used = sorted({e for p in paths for e in p})
    bad = draw(st.sampled_from(used))
    loss = draw(st.floats(0.05, 1.0))
    sent = [draw(st.integers(50, 200)) for _ in paths]
    lost = [max(1, round(s * loss)) if bad in p else 0 for s, p in zip(sent, paths, strict=True)]
    return paths, sent, lost, bad


@settings(max_examples=40, deadline=None)
@given(_bad_link_case())
def test_a_random_bad_link_is_ranked_first_when_good_paths_clear_the_others(
    case: tuple[list[list[str]], list[int], list[int], str],
) -> None:
    paths, sent, lost, bad = case
    cleared = {e for p, lo in zip(paths, lost, strict=True) if lo == 0 for e in p}
    bad_paths = [p for p, lo in zip(paths, lost, strict=True) if lo > 0]
    if not any(set(p) - {bad} <= cleared for p in bad_paths):
        return  # the case the property is about: some bad path whose other links are cleared
    got = tomography(paths, sent, lost)
    assert got and got[0].target == bad
    assert got[0].confidence > 0.5


# -- on a design: probes -------------------------------------------------------------------


@pytest.fixture(scope="module")
def fabric():  # type: ignore[no-untyped-def]
    return load_fabric("fat-tree-k16")


def _mesh(
    fabric,  # type: ignore[no-untyped-def]
    seed: int,
    *,
    loss: dict[int, float] | None = None,
    dead_key: int | None = None,
    delay: dict[int, float] | None = None,
    intervals: int = 6,
    burst: slice | None = None,
) -> tuple[pa.Table, np.ndarray]:
    """Probes of every host to four others over four EVs, 20 per interval, lost on the way out
    or back; ``loss`` per directed link (in the intervals ``burst``, default all),
    ``dead_key`` a key losing all, ``delay`` microseconds per directed link."""
    rng = np.random.default_rng(seed)
    hosts = fabric.topology.plan.hosts
    offsets, evs = np.array([1, 37, 300, 555]), 4
    src = np.repeat(np.arange(hosts), offsets.size * evs)
    dst = (src + np.tile(np.repeat(offsets, evs), hosts)) % hosts
    ev = np.tile(np.arange(evs) * 7919 + 1000, hosts * offsets.size)
    keep = src // 8 != dst // 8
    src, dst, ev = src[keep], dst[keep], ev[keep]
    port = np.zeros_like(src)
    # out and back (the reply takes the reverse path with the same EV)
    paths = np.concatenate(
        [fabric.paths(src, dst, port, ev), fabric.paths(dst, src, port, ev)], axis=1
    )
    k = np.tile(np.arange(src.size), intervals)
    t = np.repeat(np.arange(intervals), src.size)
    p = np.zeros(src.size)
    for d, x in (loss or {}).items():
        p = 1 - (1 - p) * np.where((paths == d).any(axis=1), 1 - x, 1)
    on = np.ones(intervals, dtype=bool) if burst is None else np.zeros(intervals, dtype=bool)
    if burst is not None:
        on[burst] = True
    prob = np.where(on[t], p[k], 0.0)
    if dead_key is not None:
        prob = np.where(k == dead_key, 1.0, prob)
    sent = np.full(k.size, 20)
    lost = rng.binomial(sent, prob)
    extra = np.zeros(src.size)
    for d, us in (delay or {}).items():
        extra += np.where((paths == d).any(axis=1), us, 0.0)
    hops = (paths >= 0).sum(axis=1)
    rtt = 5.0 + hops[k] + extra[k] + rng.random(k.size) * 0.5
    rtt = np.where(lost < sent, rtt, np.nan)
    names = fabric.names
    table = pa.table(
        {
            "ts_ms": T0 + (t + 1) * 10_000,
            "src_device": names.device(src[k]).tolist(),
            "src_interface": names.interface(src[k], port[k]).tolist(),
            "dst_device": names.device(dst[k]).tolist(),
            "dst_interface": names.interface(dst[k], port[k]).tolist(),
            "ev": ev[k].astype(np.int32),
            "sent": sent.astype(np.int32),
            "lost": lost.astype(np.int32),
            "rtt_us": rtt,
            "rtt_max_us": rtt,
        },
        schema=PROBE_SCHEMA,
    )
    return table, paths


def _covered(paths: np.ndarray, tier_links: np.ndarray, rng: np.random.Generator) -> int:
    """A directed link of ``tier_links`` that at least three probe keys cross."""
    counts = np.bincount(paths[paths >= 0].ravel(), minlength=2 * tier_links.max() + 2)
    ok = [d for d in (2 * tier_links).tolist() + (2 * tier_links + 1).tolist() if counts[d] >= 3]
    return int(rng.choice(ok))


@pytest.mark.parametrize("tier", [1, 2, 3])
def test_a_lossy_link_is_named_first_from_probes(fabric, tier: int) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(tier)
    _, paths = _mesh(fabric, 0)
    d = _covered(paths, np.flatnonzero(fabric.topology.link_tier == tier), rng)
    table, _ = _mesh(fabric, tier, loss={d: 0.03})
    loc = localise(fabric, probes=table)
    first = loc.suspects[0]
    assert (first.kind, first.target) == (SuspectKind.LINK, fabric.link_label(d // 2))
    assert first.fault is FaultKind.GRAY_LINK
    assert first.confidence > 0.9
    assert not loc.congestion


def test_loss_in_bursts_is_flapping_and_every_probe_lost_to_the_end_is_dead(fabric) -> None:  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(7)
    _, paths = _mesh(fabric, 0)
    d = _covered(paths, np.flatnonzero(fabric.topology.link_tier == 2), rng)
    bursty, _ = _mesh(fabric, 8, loss={d: 0.8}, burst=slice(2, 3))
    first = localise(fabric, probes=bursty).suspects[0]
    assert first.target == fabric.link_label(d // 2)
    assert first.fault is FaultKind.FLAPPING_LINK
    dead, _ = _mesh(fabric, 9, loss={d: 1.0}, burst=slice(3, None))
    first = localise(fabric, probes=dead).suspects[0]
    assert (first.target, first.fault) == (fabric.link_label(d // 2), FaultKind.DEAD_LINK)
    assert first.first_ms == T0 + 4 * 10_000


def test_one_dead_ev_is_named_as_its_pair_and_ev(fabric) -> None:  # type: ignore[no-untyped-def]
    table, _ = _mesh(fabric, 3, dead_key=123)
    loc = localise(fabric, probes=table)
    first = loc.suspects[0]
    assert first.kind is SuspectKind.EV and first.fault is FaultKind.DEAD_EV
    src, dst = first.target.split(">")
    assert src.startswith("node") and "#" in dst
    assert len(loc.suspects) == 1  # no link blamed: every link of its path was cleared


def test_clean_probes_blame_nothing(fabric) -> None:  # type: ignore[no-untyped-def]
    table, _ = _mesh(fabric, 4)
    loc = localise(fabric, probes=table)
    assert loc == Localisation((), (), False)
    assert localisation_dict(loc) == {"congestion": False, "suspects": [], "anomalies": []}


def test_rtt_growth_on_one_spines_links_is_congestion_and_blames_nothing(fabric) -> None:  # type: ignore[no-untyped-def]
    t = fabric.topology
    spine = int(t.link_dst[np.flatnonzero(t.link_tier == 2)[0]])
    mine = np.flatnonzero((t.link_src == spine) | (t.link_dst == spine))
    delay = {int(2 * m + e): 30.0 for m in mine for e in (0, 1)}
    table, _ = _mesh(fabric, 5, delay=delay)
    loc = localise(fabric, probes=table)
    assert loc.congestion
    first = loc.suspects[0]
    assert first.kind is SuspectKind.CONGESTION
    assert first.target == str(fabric.names.device(np.array([spine]))[0])
    assert all(s.fault is None or s.kind is SuspectKind.CONGESTION for s in loc.suspects)


def test_probes_of_endpoints_the_design_lacks_are_refused(fabric) -> None:  # type: ignore[no-untyped-def]
    table, _ = _mesh(fabric, 6, intervals=1)
    bad = table.set_column(1, "src_device", pa.array(["node99999"] * table.num_rows))
    with pytest.raises(SpecError, match="not a NIC port"):
        localise(fabric, probes=bad)
