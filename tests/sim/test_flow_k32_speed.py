"""The speed changes of the flow engine at k=32 (issue 15, branch flow-k32) against what they
replaced: each kernel gives the arrays of the step it took over to the bit, on generated
inputs, and the huge-page switch leaves numpy as it found it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.sim.flow import _fill
from clusterloom.sim.flow.engine import (
    SimInputError,
    UnitSet,
    _check_units,
    _water_fill,
    max_min_fair,
    small_pages,
)


@given(
    st.lists(st.integers(0, 2**40), min_size=0, max_size=400),
    st.sampled_from([1, 2, 255, 256, 257, 49152, 65536, 2**24 + 3, 2**40 + 1]),
)
@settings(max_examples=60, deadline=None)
def test_the_radix_sort_is_np_sort(values: list[int], bound: int) -> None:
    """Any count, duplicates included, every number of 8-bit passes a bound needs."""
    v = np.array([x % bound for x in values], dtype=np.int64)
    n = v.size
    buf = np.concatenate([v, np.full(5, 7, dtype=np.int64)])  # longer than n: only v[:n]
    out = _fill._radix_sort(buf, n, np.empty_like(buf), np.empty(257, dtype=np.int64), bound)
    assert out[:n].tobytes() == np.sort(v).tobytes()


def _merge_reference(f: np.ndarray, paths: np.ndarray, share: np.ndarray):  # type: ignore[no-untyped-def]
    """Distinct (flow, path) rows by first occurrence, shares added in row order."""
    first: dict[tuple[int, ...], int] = {}
    total: list[float] = []
    rows: list[int] = []
    for i in range(f.size):
        key = (int(f[i]), *map(int, paths[i]))
        if key not in first:
            first[key] = len(rows)
            rows.append(i)
            total.append(float(share[i]))
        else:
            total[first[key]] += float(share[i])
    return np.array(rows, dtype=np.int64), np.array(total, dtype=np.float64)


@given(
    st.integers(0, 2**32 - 1),
    st.integers(0, 40),
    st.integers(1, 300),
    st.integers(1, 6),
    st.sampled_from(["runs", "shuffled", "split runs"]),
)
@settings(max_examples=60, deadline=None)
def test_merged_rows_are_the_first_occurrences_summed_in_order(
    seed: int, n_flows: int, evs: int, width: int, layout: str
) -> None:
    """Each flow's rows in one run (a sprayer's EVs: one small table per run), shuffled,
    or a flow's run split in two (both the general table): the same rows and sums."""
    rng = np.random.default_rng(seed)
    f = np.repeat(np.arange(n_flows, dtype=np.int64), evs)
    if layout == "shuffled":
        f = rng.permutation(f)
    elif layout == "split runs" and f.size:
        f = np.concatenate([f, f[: max(1, f.size // 3)]])
    paths = rng.integers(-1, 3, size=(f.size, width)).astype(np.int64)
    share = rng.random(f.size) / 7.0
    want = _merge_reference(f, paths, share)
    got = _fill.merge_rows(f, paths, share)
    for a, b in zip(got, want, strict=True):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()


@given(st.integers(0, 2**32 - 1), st.integers(0, 500), st.integers(1, 40))
@settings(max_examples=40, deadline=None)
def test_entries_by_link_with_owners_are_by_link_gathered(seed: int, n: int, n_links: int) -> None:
    rng = np.random.default_rng(seed)
    links = rng.integers(0, n_links, n).astype(np.int64)
    owner = rng.integers(0, 1000, n).astype(np.int64)
    ptr, order = _fill.by_link(links, n_links)
    got_order = np.empty(n, dtype=np.int32)
    got_owner = np.empty(n, dtype=np.int32)
    got_ptr = _fill.by_link_owner(links, owner, n_links, got_order, got_owner)
    assert got_ptr.tobytes() == ptr.tobytes()
    assert (got_order == order).all() and (got_owner == owner[order]).all()


@given(st.integers(0, 2**32 - 1), st.integers(1, 60), st.integers(2, 20))
@settings(max_examples=30, deadline=None)
def test_the_fill_is_the_same_on_32_and_64_bit_indices(seed: int, n_ent: int, n_links: int) -> None:
    """The engine hands the fill 32-bit links and by-link lists, ``max_min_fair`` 64-bit
    ones: the same rates, rounds and loads to the bit."""
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, n_links + 1, n_ent)
    ent_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    link = np.concatenate([np.sort(rng.permutation(n_links)[:c]) for c in counts])
    coef = rng.random(link.size) + 0.01
    capacity = rng.random(n_links) * 10.0
    capacity[rng.random(n_links) < 0.1] = 0.0
    cap = np.where(rng.random(n_ent) < 0.3, rng.random(n_ent), np.inf)
    active = rng.random(n_ent) < 0.8
    owner = np.repeat(np.arange(n_ent, dtype=np.int64), counts)
    ptr, entry = _fill.by_link(link, n_links)
    wide = _water_fill(ent_ptr, link, coef, ptr, entry, owner[entry], capacity, cap, active, 0.01)
    narrow = _water_fill(
        ent_ptr,
        link.astype(np.int32),
        coef,
        ptr,
        entry.astype(np.int32),
        owner[entry].astype(np.int32),
        capacity,
        cap,
        active,
        0.01,
    )
    assert wide.rate.tobytes() == narrow.rate.tobytes()
    assert wide.load.tobytes() == narrow.load.tobytes() and wide.rounds == narrow.rounds


def test_max_min_fair_still_solves_the_textbook_case() -> None:
    """scipy.sparse is imported inside it now: two flows on one link, one also on another
    link of half the capacity."""
    coef = np.array([[1.0, 1.0], [0.0, 1.0]])
    rates = max_min_fair(coef, [10.0, 2.0])
    assert rates.tolist() == [8.0, 2.0]


def _units(links: list[list[int]], weight: list[float] | None = None) -> UnitSet:
    flat = [x for p in links for x in p]
    return UnitSet(
        unit_flow=np.zeros(len(links), dtype=np.int64),
        unit_ptr=np.concatenate([[0], np.cumsum([len(p) for p in links])]),
        unit_link=np.array(flat, dtype=np.int64),
        unit_share=np.full(len(links), 1.0 / len(links)),
        link_weight=np.array(weight if weight is not None else [1.0] * len(flat)),
    )


@pytest.mark.parametrize(
    ("links", "weight", "message"),
    [
        ([[0, 5], [1, 9]], None, "unit 0: link 5 out of range (0..3)"),
        ([[0, 1], [2, 3, 2]], None, "unit 1: link 2 listed twice"),
        ([[0, 1], [2, 3]], [1.0, 1.0, np.nan, 1.0], "unit 1: link weight invalid"),
        ([[0, 1], [2, 3]], [1.0, -1.0, 1.0, 1.0], "unit 0: link weight invalid"),
        ([[0, 1], [2, 7, 2]], None, "unit 1: link 7 out of range"),  # range before repeats
    ],
)
def test_broken_entries_are_named_as_before(
    links: list[list[int]], weight: list[float] | None, message: str
) -> None:
    with pytest.raises(SimInputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        _check_units(_units(links, weight), 1, 4, "")


def test_small_pages_restores_numpys_setting() -> None:
    """Off inside (nested too), back as it was after, also when the block raises."""
    multiarray = np._core.multiarray
    before = multiarray._get_madvise_hugepage()
    try:
        for start in (True, False):
            multiarray._set_madvise_hugepage(start)
            with small_pages():
                assert multiarray._get_madvise_hugepage() is False
                with small_pages():
                    assert multiarray._get_madvise_hugepage() is False
                assert multiarray._get_madvise_hugepage() is False
            assert multiarray._get_madvise_hugepage() is start
            with pytest.raises(RuntimeError), small_pages():
                raise RuntimeError("inside")
            assert multiarray._get_madvise_hugepage() is start
    finally:
        multiarray._set_madvise_hugepage(before)


@given(st.integers(0, 2**32 - 1), st.integers(1, 80), st.integers(2, 12), st.booleans())
@settings(max_examples=40, deadline=None)
def test_a_round_from_the_hot_links_is_the_round_from_every_unit(
    seed: int, n_units: int, n_links: int, uniform: bool
) -> None:
    """Without black holes, ``avoid_step_by_link`` (hot units from the hot links' lists)
    gives ``avoid_step``'s shares and coefficients to the bit, two rounds running, also
    when no unit or every unit of an entity is hot."""
    rng = np.random.default_rng(seed)
    raw = np.sort(rng.integers(0, max(1, n_units // 4), n_units))
    ue = np.unique(raw, return_inverse=True)[1].reshape(-1).astype(np.int64)  # no empty entity
    n_ent = int(ue.max()) + 1
    per_ent = np.bincount(ue, minlength=n_ent).astype(np.int64)
    counts = rng.integers(0, 4, n_units)
    dptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    dlink = rng.integers(0, n_links, int(counts.sum())).astype(np.int32)
    dentry = np.zeros(dlink.size, dtype=np.int32)
    share = rng.random(n_units) + 0.1
    share /= np.bincount(ue, share, minlength=n_ent)[ue]
    factor = np.full(n_units, 0.8)
    on = rng.random(n_units) < 0.9
    # entries: per entity a few, each summing some of its units
    ent_sizes = rng.integers(1, 4, n_ent)
    ent_ptr = np.concatenate([[0], np.cumsum(ent_sizes)]).astype(np.int64)
    lists: list[list[int]] = []
    for e in range(n_ent):
        mine = np.flatnonzero(ue == e)
        for _ in range(ent_sizes[e]):
            lists.append(sorted(rng.choice(mine, rng.integers(1, mine.size + 1), replace=False)))
    eptr = np.concatenate([[0], np.cumsum([len(x) for x in lists])]).astype(np.int32)
    eunit = np.array([u for x in lists for u in x], dtype=np.int32)
    weight = rng.random(len(lists)) if uniform else np.full(len(lists), np.nan)
    eweight = np.empty(0) if uniform else rng.random(eunit.size)
    coef = np.zeros(len(lists))
    _fill.avoid_coef(ent_ptr, ue, eptr, eunit, weight, uniform, eweight, share, coef)
    cap = rng.random(n_links) + 0.5
    hptr, hunit = _fill.units_by_link(dptr, dlink, n_links)
    a_share, b_share, a_coef, b_coef = share, share, coef.copy(), coef.copy()
    for _ in range(2):
        load = cap * rng.choice([0.5, 0.99, 1.0], n_links)
        keep = np.zeros(1, dtype=np.bool_)
        sa, a_share = _fill.avoid_step(
            load, cap, 0.02, keep, False, dptr, dlink, dentry, ue, on, per_ent, factor,
            a_share, ent_ptr, eptr, eunit, weight, uniform, eweight, a_coef,
        )  # fmt: skip
        sb, b_share = _fill.avoid_step_by_link(
            load, cap, 0.02, hptr, hunit, ue, on, per_ent, factor, b_share, ent_ptr, eptr,
            eunit, weight, uniform, eweight, b_coef,
        )  # fmt: skip
        assert sa == sb
        assert a_share.tobytes() == b_share.tobytes() and a_coef.tobytes() == b_coef.tobytes()


def _fill_reference(args: tuple, core: tuple):  # type: ignore[no-untyped-def, type-arg]
    """flow-fid's settling of ACKs over capacity as it was written (a pass over every entity's
    entries for the hit set, ``data`` and the others' load over every entry), in Python,
    from the first fill's result ``core``; links carry the control flag in bit 30, as the
    fill takes them now."""
    ent_ptr, ent_link, ent_coef, link_ptr, link_entry, link_ent, capacity, ent_cap = args[:8]
    _active, keep, has_keep, rtol, ctl, has_ctl = args[8:]
    rate, rounds, left, load = (x.copy() if isinstance(x, np.ndarray) else x for x in core)
    if not has_ctl or left > 0:
        return rate, rounds, left, load
    over = load > capacity * (1.0 + 1e-9)
    if not over.any():
        return rate, rounds, left, load
    n_ent = rate.shape[0]
    hit = np.zeros(n_ent, dtype=np.bool_)
    for e in range(n_ent):
        if rate[e] > 0.0:
            for j in range(ent_ptr[e], ent_ptr[e + 1]):
                if not ctl[j] and (not has_keep or keep[j]) and over[ent_link[j] & _fill.LINK_MASK]:
                    hit[e] = True
                    break
    data = np.empty(ent_link.shape[0], dtype=np.bool_)
    used = np.zeros(capacity.shape[0])
    cap = np.full(n_ent, np.inf)
    for e in range(n_ent):
        cap[e] = min(ent_cap[e], rate[e])
        for j in range(ent_ptr[e], ent_ptr[e + 1]):
            kept = not has_keep or keep[j]
            data[j] = kept and not ctl[j]
            if kept and (ctl[j] or not hit[e]):
                used[ent_link[j] & _fill.LINK_MASK] += ent_coef[j] * rate[e]
    room = np.maximum(capacity - used, 0.0)
    rate2, rounds2, _, _ = _fill._core(
        ent_ptr, ent_link, ent_coef, link_ptr, link_entry, link_ent, room, cap, hit, data,
        True, rtol, ctl, False,
    )  # fmt: skip
    rate[hit] = rate2[hit]
    load[:] = 0.0
    for e in range(n_ent):
        if rate[e] > 0.0:
            for j in range(ent_ptr[e], ent_ptr[e + 1]):
                if not has_keep or keep[j]:
                    load[ent_link[j] & _fill.LINK_MASK] += ent_coef[j] * rate[e]
    return rate, rounds + rounds2, left, load


@given(st.integers(0, 2**32 - 1), st.integers(2, 40), st.integers(3, 16), st.booleans())
@settings(max_examples=60, deadline=None)
def test_settling_acks_over_capacity_is_the_pass_over_every_entry(
    seed: int, n_ent: int, n_links: int, black_holes: bool
) -> None:
    """The fill with control entries (ACKs on other links than the data's) gives the rates,
    rounds and loads of the settling as first written, to the bit."""
    args = _acked_fill(seed, n_ent, n_links, black_holes)
    want = _fill_reference(args, _fill._core(*args))
    got = _fill.fill(*args)
    assert got[1] == want[1] and got[2] == want[2]
    assert got[0].tobytes() == want[0].tobytes() and got[3].tobytes() == want[3].tobytes()


def _acked_fill(seed: int, n_ent: int, n_links: int, black_holes: bool):  # type: ignore[no-untyped-def]
    """A fill's inputs: per entity a few data entries and ACK entries of a small weight on
    other links, tight capacities so ACKs rising after a link froze take it over."""
    rng = np.random.default_rng(seed)
    ptr = [0]
    links: list[int] = []
    coef: list[float] = []
    ctl: list[bool] = []
    for _ in range(n_ent):
        chosen = rng.permutation(n_links)[: rng.integers(2, n_links + 1)]
        n_data = max(1, chosen.size // 2)
        for k, link in enumerate(sorted(chosen)):
            is_ack = k >= n_data
            links.append(int(link))
            coef.append(float(rng.random() * (0.3 if is_ack else 1.0) + 0.01))
            ctl.append(is_ack)
        ptr.append(len(links))
    ent_ptr = np.array(ptr, dtype=np.int64)
    plain = np.array(links, dtype=np.int64)
    ent_coef = np.array(coef)
    control = np.array(ctl, dtype=np.bool_)
    link_ptr, link_entry = _fill.by_link(plain, n_links)
    ent_link = plain | (control.astype(np.int64) << _fill.CTL_SHIFT)  # as the engine packs
    owner = np.repeat(np.arange(n_ent, dtype=np.int64), np.diff(ent_ptr))
    capacity = rng.random(n_links) * 4.0 + 0.5
    ent_cap = np.where(rng.random(n_ent) < 0.2, rng.random(n_ent) * 3.0, np.inf)
    active = rng.random(n_ent) < 0.9
    keep = rng.random(ent_link.size) < 0.9 if black_holes else np.ones(1, dtype=np.bool_)
    return (
        ent_ptr, ent_link, ent_coef, link_ptr, link_entry, owner[link_entry], capacity,
        ent_cap, active, keep, black_holes, 0.01, control, True,
    )  # fmt: skip


@given(st.integers(0, 2**32 - 1), st.integers(2, 30), st.integers(3, 12), st.booleans())
@settings(max_examples=40, deadline=None)
def test_packed_control_flags_fill_as_the_flag_array(
    seed: int, n_ent: int, n_links: int, black_holes: bool
) -> None:
    """The engine hands the fill its links with each control flag in bit 30
    (``packed=True``); a caller's plain links and flags are packed by ``_water_fill``: the
    same rates, rounds and loads, and a plain fill without flags is untouched by the mask."""
    args = _acked_fill(seed, n_ent, n_links, black_holes)
    ent_ptr, packed_links, coef, ptr, entry, owner, capacity, ent_cap, active, keep = args[:10]
    control = args[12]
    link = packed_links & _fill.LINK_MASK
    keep_entry = keep if black_holes else None
    outcomes = []
    for links, by, flag in (
        (link, entry, False),
        (packed_links.astype(np.int32), entry.astype(np.int32), True),
    ):
        try:
            outcomes.append(
                _water_fill(
                    ent_ptr,
                    links,
                    coef,
                    ptr,
                    by,
                    owner.astype(by.dtype),
                    capacity,
                    ent_cap,
                    active,
                    0.01,
                    keep_entry,
                    control,
                    packed=flag,
                )
            )
        except SimInputError as err:  # an entity with only ACKs kept: unbounded, both ways
            outcomes.append(str(err))
    plain, packed = outcomes
    if isinstance(plain, str):
        assert packed == plain
        return
    assert not isinstance(packed, str)
    assert plain.rate.tobytes() == packed.rate.tobytes() and plain.rounds == packed.rounds
    assert plain.load.tobytes() == packed.load.tobytes()
    want = _fill_reference(args, _fill._core(*args))
    assert plain.rate.tobytes() == want[0].tobytes()
