"""The flow engine's compiled passes against the numpy steps they replaced (issue 15, the
speed of the k=32 sprayed permutation): each gives the same arrays to the bit, on generated
inputs, and whole runs give the results the engine gave before them."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.sim.failures import parse_failure
from clusterloom.sim.flow import _fill
from clusterloom.sim.flow.engine import UnitSet, _ranges
from clusterloom.sim.flow.run import Timing, _path_terms, run
from clusterloom.sim.flow.transports import transport
from clusterloom.sim.packet.fabrics import fat_tree
from clusterloom.sim.traffic import permutation


def _units(seed: int, n_units: int, n_links: int, width: int) -> UnitSet:
    """Units of up to ``width`` distinct links out of ``n_links``, a few per flow, with
    random shares, link weights and control flags."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, min(width, n_links) + 1, n_units)
    links = np.concatenate([rng.permutation(n_links)[:c] for c in counts])
    flow = np.sort(rng.integers(0, max(1, n_units // 3), n_units))
    return UnitSet(
        unit_flow=flow,
        unit_ptr=np.concatenate([[0], np.cumsum(counts)]),
        unit_link=links,
        unit_share=rng.random(n_units),
        link_weight=np.where(rng.random(links.size) < 0.5, 1.0, rng.random(links.size)),
        control=rng.random(links.size) < 0.3,
    )


def _merge_by_numpy(u: UnitSet, order: np.ndarray, ent_of_pos: np.ndarray, coef: np.ndarray):  # type: ignore[no-untyped-def]
    """The reference: the engine's structure build before it was compiled (a stable sort of
    the unit entries by entity and link, ``np.add.reduceat``)."""
    n_links = int(u.unit_link.max()) + 1
    pos, counts = _ranges(u.unit_ptr, order)
    rows = np.repeat(ent_of_pos, counts)
    cols = u.unit_link[pos]
    vals = np.repeat(coef, counts) * u.link_weight[pos]
    hops = pos - np.repeat(u.unit_ptr[order], counts)
    ctl = u.control[pos]
    merged_of_pos = np.arange(rows.size, dtype=np.int64)
    idx = np.argsort(rows * np.int64(n_links) + cols, kind="stable")
    rows, cols, vals, hops, ctl = rows[idx], cols[idx], vals[idx], hops[idx], ctl[idx]
    head = np.ones(rows.size, dtype=np.bool_)
    head[1:] = (rows[1:] != rows[:-1]) | (cols[1:] != cols[:-1])
    starts = np.flatnonzero(head)
    merged_of_pos[idx] = np.cumsum(head) - 1
    vals = np.add.reduceat(vals, starts)
    hops = np.minimum.reduceat(hops, starts)
    ctl = np.logical_and.reduceat(ctl, starts)
    return rows[starts], cols[starts], vals, hops, ctl, merged_of_pos


@given(st.integers(0, 2**32 - 1), st.integers(1, 400), st.integers(1, 30), st.integers(1, 12))
@settings(max_examples=40, deadline=None)
def test_merging_entries_equals_the_sort_and_reduceat(
    seed: int, n_units: int, n_links: int, width: int
) -> None:
    """Entities of one or many units (a coupled flow's paths share links, up to hundreds of
    unit entries per link: numpy's pairwise sums), to the bit."""
    u = _units(seed, n_units, n_links, width)
    order = np.arange(n_units, dtype=np.int64)
    first = np.ones(n_units, dtype=np.bool_)
    first[1:] = u.unit_flow[1:] != u.unit_flow[:-1]
    ent_of_pos = np.cumsum(first) - 1
    coef = u.unit_share.copy()
    want = _merge_by_numpy(u, order, ent_of_pos, coef)
    got = _fill.merge_entries(
        order,
        np.append(np.flatnonzero(first), n_units).astype(np.int64),
        u.unit_ptr,
        u.unit_link,
        u.link_weight,
        u.control,
        coef,
        int(u.unit_link.max()) + 1,
    )
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


def test_the_pairwise_sum_is_numpys_on_long_runs() -> None:
    """Runs of one link across many units (a NIC link of a flow of 256 EVs) go through numpy's
    blocked and recursive branches."""
    rng = np.random.default_rng(7)
    for n in (2, 8, 9, 129, 200, 257, 1000):
        v = rng.random(n) / 3.0
        assert v[0] + _fill._pairwise(v, 1, n - 1) == np.add.reduceat(v, [0])[0]


def _avoid_by_numpy(
    load, cap, tol, link, data, entry, at, ue, on, per_ent, factor, share, coef, weight
):  # type: ignore[no-untyped-def]
    """The reference: a round of path avoidance as numpy steps (every unit entry, every
    entity's coefficients rebuilt from ``coef``, sums in unit-entry order)."""
    saturated = (cap > 0) & (load >= cap * (1.0 - tol))
    hot = np.zeros(share.size, dtype=np.bool_)
    hot[at[data & saturated[link]]] = True
    hot &= on
    stepped = np.bincount(ue[hot], minlength=per_ent.size)
    step = hot & (stepped[ue] < per_ent[ue])
    if not step.any():
        return False, share, coef
    out = np.where(step, share * factor, share)
    total = np.zeros(per_ent.size)
    for u in range(out.size):
        total[ue[u]] += out[u]
    out = out / total[ue]
    new = coef.copy()
    new[entry] = 0.0
    for k in range(entry.size):
        new[entry[k]] += out[at[k]] * weight[k]
    return True, out, new


@given(
    st.integers(0, 2**32 - 1), st.integers(1, 60), st.integers(2, 15), st.booleans(), st.booleans()
)
@settings(max_examples=40, deadline=None)
def test_an_avoidance_round_equals_the_numpy_steps(
    seed: int, n_units: int, n_links: int, uniform: bool, black_holes: bool
) -> None:
    """Two rounds from the even split on random loads: the same shares and coefficients to
    the bit, entities whose shares did not move keeping theirs; with one weight per entry
    (data 1, control a constant, as ``run`` makes them) or weights per unit entry, with and
    without dropped (black-holed) entries."""
    rng = np.random.default_rng(seed)
    u = _units(seed, n_units, n_links, 4)
    weight = np.where(u.control, 0.25, 1.0) if uniform else u.link_weight
    first = np.ones(n_units, dtype=np.bool_)
    first[1:] = u.unit_flow[1:] != u.unit_flow[:-1]
    ue = (np.cumsum(first) - 1).astype(np.int64)
    n_ent = int(ue[-1]) + 1
    per_ent = np.bincount(ue, minlength=n_ent)
    share = 1.0 / per_ent[ue]
    order = np.arange(n_units, dtype=np.int64)
    starts = np.append(np.flatnonzero(first), n_units).astype(np.int64)
    rows, cols, vals, _, _, merged = _fill.merge_entries(
        order, starts, u.unit_ptr, u.unit_link, weight, u.control, share, n_links
    )
    avoiding = np.ones(n_ent, dtype=np.bool_)
    total = merged.size
    units = np.empty(n_units, dtype=np.int64)
    dptr = np.zeros(n_units + 1, dtype=np.int32)
    dlink, dentry, eunit = (np.empty(total, dtype=np.int32) for _ in range(3))
    eptr = np.zeros(cols.size + 1, dtype=np.int32)
    eweight = np.empty(total)
    n_map, n_data, w, by_entry = _fill.avoid_entries(
        order, starts, avoiding, u.unit_ptr, weight, u.control, merged,
        np.arange(cols.size, dtype=np.int64), cols, units, dptr, dlink, dentry, eptr, eunit,
        eweight,
    )  # fmt: skip
    assert n_map == n_units and units.tolist() == order.tolist()
    data = ~u.control
    assert n_data == data.sum() and dentry[:n_data].tolist() == merged[data].tolist()
    assert dlink[:n_data].tolist() == cols[merged[data]].tolist()
    assert np.diff(dptr).tolist() == np.add.reduceat(data, u.unit_ptr[:-1]).tolist()
    # per entry its units in unit order: the unit entries sorted by entry, stably
    at = np.repeat(np.arange(n_units), np.diff(u.unit_ptr))
    by = np.argsort(merged, kind="stable")
    assert eptr[-1] == total and eunit.tolist() == at[by].tolist()
    assert np.diff(eptr).tolist() == np.bincount(merged, minlength=cols.size).tolist()
    low, high = np.full(cols.size, np.inf), np.full(cols.size, -np.inf)
    np.minimum.at(low, merged, weight)
    np.maximum.at(high, merged, weight)
    assert by_entry == bool((low == high).all())  # one weight per entry: kept per entry
    if not by_entry:
        assert eweight.tolist() == weight[by].tolist()
    # merged and mapped in one pass: the same entries and, with one weight per entry and
    # every entry kept, the same map
    fused_arrays = (
        np.zeros(n_units + 1, dtype=np.int32),
        *(np.empty(total, dtype=np.int32) for _ in range(2)),
        np.empty(total + 1, dtype=np.int32),
        np.empty(total, dtype=np.int32),
        np.empty(total),
    )
    *entries, f_data, f_uniform = _fill.merge_entries_map(
        order, starts, u.unit_ptr, u.unit_link, weight, u.control, share, n_links, *fused_arrays
    )  # fmt: skip
    plain = _fill.merge_entries(
        order, starts, u.unit_ptr, u.unit_link, weight, u.control, share, n_links
    )
    for got, want in zip(entries, plain[:5], strict=True):
        assert got.tobytes() == want.tobytes()
    assert f_uniform == by_entry
    if by_entry and (vals > 0).all():
        f_dptr, f_dlink, f_dentry, f_eptr, f_eunit, f_weight = fused_arrays
        assert f_data == n_data and f_dptr.tolist() == dptr.tolist()
        assert f_dlink[:n_data].tolist() == dlink[:n_data].tolist()
        assert f_dentry[:n_data].tolist() == dentry[:n_data].tolist()
        assert f_eptr[: cols.size + 1].tolist() == eptr.tolist()
        assert f_eunit.tolist() == eunit.tolist()
        assert f_weight[: cols.size].tobytes() == w.tobytes()
    ent_ptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n_ent))])
    base = vals.copy()
    _fill.avoid_coef(ent_ptr, ue, eptr, eunit, w, by_entry, eweight, share, base)
    ref_base = np.zeros(cols.size)
    for k in range(merged.size):
        ref_base[merged[k]] += share[at[k]] * weight[k]
    assert base.tobytes() == ref_base.tobytes()
    keep = rng.random(cols.size) < 0.8 if black_holes else np.ones(cols.size, dtype=np.bool_)
    cap = rng.choice([0.0, 1.0, 2.0], n_links)
    factor = np.full(n_units, 0.8)
    on = rng.random(n_units) < 0.9
    ref_share, got_share, got_coef = share, share, base.copy()
    for _ in range(2):
        load = cap * rng.choice([0.5, 0.99, 1.0], n_links)
        ok, ref_share, ref_coef = _avoid_by_numpy(
            load, cap, 0.02, cols[merged], ~u.control & keep[merged], merged, at, ue, on,
            per_ent, factor, ref_share, vals, weight,
        )  # fmt: skip
        stepped, got_share = _fill.avoid_step(
            load, cap, 0.02, keep, black_holes, dptr, dlink[:n_data], dentry[:n_data], ue, on,
            per_ent, factor, got_share, ent_ptr, eptr, eunit, w, by_entry, eweight, got_coef,
        )  # fmt: skip
        assert stepped == ok
        assert got_share.tobytes() == ref_share.tobytes()
        if ok:
            assert got_coef.tobytes() == ref_coef.tobytes()


def test_path_terms_equal_the_numpy_formula() -> None:
    """Tail, base RTT and NIC rate per flow on a k=8 fat tree's sprayed units."""
    topo = fat_tree(8)
    from clusterloom.sim.paths import build_router

    r = build_router(topo)
    t = permutation(128, 100_000, seed=1)
    src, dst = t.src.astype(np.int64), t.dst.astype(np.int64)
    units = transport("mrc-spray", evs=16).units(
        r, src, dst, alive=np.ones(topo.n_links, dtype=bool), seed=3
    )
    mss, hdr = 4096, 64
    last = np.full(t.src.size, mss + hdr, dtype=np.int64)
    last[::3] = 900

    def ser(nbytes: np.ndarray, bps: np.ndarray) -> np.ndarray:
        return nbytes * 8 * 10**12 // np.maximum(bps, 1.0).astype(np.int64)

    counts = np.diff(units.unit_ptr)
    owner = np.repeat(np.arange(units.n_units), counts)
    link = units.unit_link // 2
    bps = topo.link_capacity_bps[link].astype(np.float64)
    first = np.zeros(link.size, dtype=bool)
    first[units.unit_ptr[:-1]] = True
    sf = np.where(first, 0, ser(last[units.unit_flow[owner]], bps))
    prop = topo.link_latency_ps[link].astype(np.int64)
    full = ser(np.full(link.size, mss + hdr), bps)
    ack = ser(np.full(link.size, hdr), bps)
    tail_u = np.bincount(owner, prop + sf).astype(np.int64)
    rtt_u = np.bincount(owner, 2 * prop + full + ack).astype(np.int64)
    tail, rtt, rate = (
        np.zeros(t.src.size, np.int64),
        np.zeros(t.src.size, np.int64),
        np.zeros(t.src.size),
    )
    np.maximum.at(tail, units.unit_flow, tail_u)
    np.maximum.at(rtt, units.unit_flow, rtt_u)
    np.maximum.at(rate, units.unit_flow, bps[units.unit_ptr[:-1]])
    got = _path_terms(
        units.unit_flow, units.unit_ptr, units.unit_link, topo.link_capacity_bps,
        topo.link_latency_ps, last, mss + hdr, hdr, t.src.size,
    )  # fmt: skip
    for a, b in zip(got, (tail, rtt, rate), strict=True):
        assert a.tobytes() == b.tobytes()


def test_control_entries_follow_each_units_data_links() -> None:
    """``Timing.capped``: per unit its links, then their reverses, as a stable sort by unit
    of the two lists gave."""
    u = _units(3, 50, 20, 5)
    n = u.n_units
    timing = Timing(*(np.zeros(1, np.int64),) * 4, np.zeros(1), np.full(n, np.inf), 0.25)  # type: ignore[arg-type]
    got = timing.capped(u)
    owner = np.repeat(np.arange(n), np.diff(u.unit_ptr))
    order = np.argsort(np.concatenate([owner, owner]), kind="stable")
    assert np.array_equal(got.unit_link, np.concatenate([u.unit_link, u.unit_link ^ 1])[order])
    weight = np.concatenate([u.link_weight, np.full(u.unit_link.size, 0.25)])[order]
    assert got.link_weight.tobytes() == weight.tobytes()
    control = np.concatenate([u.control, np.ones(u.unit_link.size, dtype=bool)])[order]
    assert np.array_equal(got.control, control)
    assert np.array_equal(got.unit_ptr, 2 * u.unit_ptr)


def test_a_link_listed_twice_is_found_as_the_sort_found_it() -> None:
    ptr = np.array([0, 3, 6, 9])
    link = np.array([1, 2, 3, 4, 5, 4, 7, 7, 6])
    assert _fill.repeated_link(ptr, link, 8) == (1, 4)
    assert _fill.repeated_link(ptr[:2], link[:3], 8) == (-1, -1)


K8 = fat_tree(8)
#: sha256 (first 16 hex digits) of ``finish_ps``, ``start_ps`` and ``unit_bytes`` of each
#: run, as the engine gave them before its passes were compiled (main at ad3dd6d): a 128-host
#: permutation of 300 KB (seed 5), transport seed 2. Updated by flow-fid (2026-12-02) when
#: ACK entries stopped freezing max-min entities (``_fill.fill``'s ``ctl``): every run's
#: coupled flows or units carry ACK entries on the reverse links, so all five moved
BEFORE = [
    ("mrc-spray", {}, 0.01, (), "74c1288805522790"),
    ("mrc-spray", {}, 0.0, ("link:40@20us",), "22717233c8ed9d95"),
    ("mrc-spray", {"balance": 1.0}, 0.01, ("link:40@20us",), "d674c6cc41b793e2"),
    ("receiver-driven", {}, 0.01, (), "a8cd65103ee8ed04"),
    ("roce-ecmp", {"dcqcn": 0.0}, 0.01, (), "af378a96c4fb7369"),  # ACKs out of the fill (flow-ecmp)
]


@pytest.mark.parametrize(("name", "options", "rtol", "failures", "digest"), BEFORE)
def test_runs_are_those_of_the_engine_before(
    name: str, options: dict[str, float], rtol: float, failures: tuple[str, ...], digest: str
) -> None:
    """Path avoidance, a failure with its black holes and retirement, the pooled model,
    receiver pacing and the lossless model: every finish and unit's bytes as before."""
    evs = {} if name == "roce-ecmp" else {"evs": 32.0}
    r = run(
        K8,
        permutation(128, 300_000, seed=5),
        transport(name, **evs, **options),
        tuple(parse_failure(x, K8) for x in failures),
        seed=2,
        rtol=rtol,
    )
    got = r.finish_ps.tobytes() + r.start_ps.tobytes() + r.unit_bytes.tobytes()
    assert hashlib.sha256(got).hexdigest()[:16] == digest


def test_the_fused_avoidance_map_gives_the_general_maps_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Path avoidance's map made as the entries merge (every flow avoiding) and by the
    general pass (``_fill.avoid_entries``, what a run with dropped entries or mixed weights
    takes): every finish and unit's bytes the same, with and without a failure."""
    from clusterloom.sim.flow import engine

    traffic = permutation(128, 300_000, seed=5)
    cases = ((), (parse_failure("link:300@20us", K8),))
    tr = transport("mrc-spray", evs=32.0)
    fused = [run(K8, traffic, tr, f, seed=2, rtol=0.01) for f in cases]
    calls: list[int] = []

    def general(self, order, starts, coef):  # type: ignore[no-untyped-def]
        calls.append(1)
        return None

    monkeypatch.setattr(engine._Sim, "_merge_with_map", general)
    plain = [run(K8, traffic, tr, f, seed=2, rtol=0.01) for f in cases]
    assert calls
    for a, b in zip(fused, plain, strict=True):
        assert a.finish_ps.tobytes() == b.finish_ps.tobytes()
        assert a.unit_bytes.tobytes() == b.unit_bytes.tobytes()


@given(st.integers(0, 2**32 - 1), st.integers(0, 50), st.integers(1, 8))
@settings(max_examples=40, deadline=None)
def test_compacted_rows_are_the_numpy_mask(seed: int, n: int, width: int) -> None:
    """Padded path rows to CSR: the entries of ``paths[paths >= 0]`` and the row counts'
    cumulative sums, rows without an entry included."""
    rng = np.random.default_rng(seed)
    paths = np.where(rng.random((n, width)) < 0.3, -1, rng.integers(0, 99, (n, width)))
    ptr, links = _fill.compact_rows(paths.astype(np.int64))
    valid = paths >= 0
    assert links.tolist() == paths[valid].tolist()
    assert ptr.tolist() == [0, *np.cumsum(valid.sum(axis=1)).tolist()]


def test_inputs_keep_read_only_arrays_and_copy_writable_memory() -> None:
    """The inputs' classes keep an array numba made once it is frozen (and a view of it,
    as ``np.asarray`` gives), and copy any array whose memory a writable array shares."""
    from clusterloom.sim.flow.engine import _ro, frozen

    made = _fill.compact_rows(np.arange(12, dtype=np.int64).reshape(3, 4))[1]
    frozen(made)
    assert _ro(made, np.int64) is made
    view = made[:5]
    assert _ro(view, np.int64) is view
    own = np.arange(8)
    part = own[:4]
    part.setflags(write=False)
    kept = _ro(part, np.int64)
    assert kept is not part and not np.shares_memory(kept, own)
    own[0] = 99
    assert kept[0] == 0
