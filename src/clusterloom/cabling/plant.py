"""The structured plant: which cables join which frames, and where each link sits in them.

A structured link leaves its row; each end reaches its **frame** by patch cord (a row's
distribution frame, or a network rack's own panels). Between the two frames:

- **same hall**: a trunk joins the two frames (TIA-942's zone cabling);
- **different halls**: the link goes through each hall's **hall distribution frame** (HDF,
  patch racks at the hall door): a trunk from its frame to its HDF, a **backbone**
  cable from HDF to HDF, a trunk from the far HDF to the far frame. Backbones are high-fibre-
  count ribbon cables (:data:`~clusterloom.cabling.media.BACKBONE_SIZES`, up to 6,912 fibres),
  spliced onto MPO panels at both HDFs; between buildings they are also spliced at each
  building entrance (outside-plant cable to indoor cable).

A trunk is a 144-fibre MPO trunk or, for a group of many legs, a spliced ribbon cable
(:data:`~clusterloom.cabling.media.TRUNK_SIZES`, up to 3,456 fibres).

**Legs pass whole.** Fibre positions are handed out per frame pair in MPO-12 *legs* (parallel
optics take whole legs, duplex optics pack into legs), so every leg carries links of one frame
pair only. At an HDF a trunk's leg meets a backbone leg at one MPO adapter (an interconnect:
one mated pair, positions straight through), so a leg keeps its positions end to end and
every cable flips them (TIA-568 method B): with one or three cables in series a transmitter on
position ``p`` meets a receiver on ``13 - p``. A cross-connect (jumpers between two panels)
would add a mated pair per HDF; it is not modelled.

**Packing.** Legs are packed into cables per group, in a stable order: a direct trunk per frame
pair; a frame's trunk to its HDF per (frame, fibre type); a backbone per (hall pair, fibre
type). Full cables of the largest size first; what is left goes in one cable of the smallest
size that holds it, or in cables of the smallest size when those take less cross-section or
that one would be less than half full (:func:`pack_legs`): a spine rack's thousands of
fibres go in ribbon, a leaf rack's few hundred in MPO trunks (no splices in their channels).
Single-mode and multimode never share a cable.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from clusterloom.cabling.media import BACKBONE_SIZES, LEG_FIBERS, TRUNK_SIZES

#: hop kinds of a cable: a frame-to-frame or frame-to-HDF trunk, an HDF-to-HDF backbone
TRUNK, BACKBONE = 0, 1


@dataclass(frozen=True)
class Plant:
    """Cables between frames and each structured link's place in them.

    Per cable ``t``: its frames ``cable_a``/``cable_b`` (``a`` on the side of the lower frame
    pair id), ``cable_fibers`` (its size), ``cable_used`` (fibres taken), ``cable_smf``,
    ``cable_kind`` (:data:`TRUNK` or :data:`BACKBONE`). Per structured link (in the order
    given): ``hops`` (up to three cables, from the link's a end to its b end, -1 padded),
    ``hop_legs`` (the leg of each, 1-based), ``fiber_a``/``fiber_b`` (first fibre position at
    each end), ``span`` (positions taken in the leg).
    """

    cable_a: NDArray[np.int32]
    cable_b: NDArray[np.int32]
    cable_fibers: NDArray[np.int32]
    cable_used: NDArray[np.int32]
    cable_smf: NDArray[np.bool_]
    cable_kind: NDArray[np.int8]
    hops: NDArray[np.int32]
    hop_legs: NDArray[np.int16]
    fiber_a: NDArray[np.int8]
    fiber_b: NDArray[np.int8]
    span: NDArray[np.int8]


def pack_legs(
    group: NDArray[np.int64],
    sizes_legs: tuple[int, ...],
    areas: tuple[float, ...] | None = None,
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """Pack legs into cables. ``group`` (non-decreasing) is each leg's group in packing order;
    ``sizes_legs`` the cable sizes in legs, ascending, and ``areas`` their cross-sections.
    Returns each leg's cable and leg number (1-based) and each cable's group and size in legs:
    full cables of the largest size, then what is left in one cable of the smallest size that
    holds it, or in cables of the smallest size when those take less cross-section together
    or the one cable would be less than half full (without ``areas``: always the one cable)."""
    n = group.shape[0]
    if n == 0:
        z = np.zeros(0, np.int64)
        return z, z, z, z
    groups, start, count = np.unique(group, return_index=True, return_counts=True)
    sizes = np.asarray(sizes_legs, dtype=np.int64)
    big, small = int(sizes[-1]), int(sizes[0])
    full, rem = np.divmod(count, big)
    one_size = sizes[np.minimum(np.searchsorted(sizes, rem), sizes.shape[0] - 1)]
    n_small = -(-rem // small)
    split = np.zeros(groups.shape[0], dtype=bool)
    if areas is not None:
        area = dict(zip(sizes_legs, areas, strict=True))
        one_area = np.array([area[int(x)] for x in one_size.tolist()])
        split = (rem > 0) & ((n_small * area[small] < one_area) | (2 * rem < one_size))
    n_rem = np.where(rem > 0, np.where(split, n_small, 1), 0)
    n_cab = full + n_rem
    base = np.concatenate([[0], np.cumsum(n_cab)[:-1]])
    g_of = np.repeat(np.arange(groups.shape[0]), count)
    rank = np.arange(n) - start[g_of]
    r2 = rank - full[g_of] * big
    in_rem = r2 >= 0
    step = np.where(split[g_of], small, np.maximum(rem[g_of], 1))
    cable = np.where(in_rem, base[g_of] + full[g_of] + r2 // step, base[g_of] + rank // big)
    leg = np.where(in_rem, r2 % step + 1, rank % big + 1)
    cable_group = np.repeat(groups, n_cab)
    cable_legs = np.full(int(n_cab.sum()), big, dtype=np.int64)
    first_rem = base + full
    for g in np.flatnonzero(rem > 0).tolist():
        k = int(n_rem[g])
        cable_legs[first_rem[g] : first_rem[g] + k] = small if split[g] else one_size[g]
    return cable.astype(np.int64), leg.astype(np.int64), cable_group, cable_legs


def pack_cables(
    group: NDArray[np.int64], table: tuple[tuple[int, float], ...]
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.int64], NDArray[np.int64]]:
    """:func:`pack_legs` with the sizes of a cable table ((fibres, outer diameter mm), as
    :data:`~clusterloom.cabling.media.TRUNK_SIZES`), their cross-sections deciding splits."""
    sizes = tuple(f // LEG_FIBERS for f, _ in table)
    areas = tuple(float(np.pi * d * d / 4.0) for _, d in table)
    return pack_legs(group, sizes, areas)


def _ranks(k: NDArray[np.int64]) -> NDArray[np.int64]:
    """``0..k[i]-1`` for each ``i``, concatenated."""
    starts = np.repeat(np.cumsum(k) - k, k)
    return np.arange(int(k.sum()), dtype=np.int64) - starts


def plan_plant(
    frame_a: NDArray[np.int64],
    frame_b: NDArray[np.int64],
    smf: NDArray[np.bool_],
    slots: NDArray[np.int64],
    order_key: NDArray[np.int64],
    frame_hall: NDArray[np.int64],
    hdf_of_hall: NDArray[np.int64],
) -> Plant:
    """Cables and positions for structured links from frame ``frame_a[i]`` to ``frame_b[i]``
    taking ``slots[i]`` fibre positions; ``order_key`` orders links within a frame pair (after
    whole legs first). ``frame_hall`` is each frame's hall, ``hdf_of_hall`` each hall's HDF
    frame (see the module)."""
    n = frame_a.shape[0]
    nf = int(frame_hall.shape[0])
    lo = np.minimum(frame_a, frame_b)
    hi = np.maximum(frame_a, frame_b)
    key = (lo * nf + hi) * 2 + smf.astype(np.int64)
    order = np.lexsort((order_key, -slots, key))
    s_slots, s_key = slots[order], key[order]
    pairs, starts, counts = np.unique(s_key, return_index=True, return_counts=True)
    cum = np.cumsum(s_slots)
    pair_of = np.repeat(np.arange(pairs.shape[0]), counts)
    offset = cum - s_slots - np.concatenate([[0], cum])[starts][pair_of]
    total = np.add.reduceat(s_slots, starts) if n else np.zeros(0, np.int64)
    pair_legs = -(-total // LEG_FIBERS)
    pl_base = np.concatenate([[0], np.cumsum(pair_legs)[:-1]]).astype(np.int64)
    link_pl = np.empty(n, dtype=np.int64)
    link_pl[order] = pl_base[pair_of] + offset // LEG_FIBERS
    in_leg = np.empty(n, dtype=np.int64)
    in_leg[order] = offset % LEG_FIBERS + 1

    # pair legs, grouped by pair in pair order
    p_lo, p_hi = pairs // 2 // nf, pairs // 2 % nf
    p_smf = pairs % 2
    n_pl = int(pair_legs.sum())
    pl_pair = np.repeat(np.arange(pairs.shape[0]), pair_legs)
    pl_local = np.arange(n_pl) - pl_base[pl_pair]
    h_lo, h_hi = frame_hall[p_lo], frame_hall[p_hi]
    inter = (h_lo != h_hi)[pl_pair]
    # legs of a link of several legs stay together: such units go first in every group (all
    # cable sizes are multiples of two legs, so two-leg units never straddle two cables)
    unit = np.ones(n_pl, dtype=np.int64)
    multi = np.flatnonzero(slots > LEG_FIBERS)
    k = slots[multi] // LEG_FIBERS
    unit[np.repeat(link_pl[multi], k) + _ranks(k)] = np.repeat(k, k)
    pl_hops = np.full((n_pl, 3), -1, dtype=np.int64)
    pl_legs = np.zeros((n_pl, 3), dtype=np.int64)

    cab: dict[str, list[NDArray[np.int64]]] = {k: [] for k in ("a", "b", "legs", "smf", "kind")}
    n_cab = 0

    def add(
        legs_sel: NDArray[np.int64],
        group: NDArray[np.int64],
        table: tuple[tuple[int, float], ...],
        ends: tuple[NDArray[np.int64], NDArray[np.int64]],
        kind: int,
        col: int,
    ) -> None:
        """Pack the pair legs ``legs_sel`` (already in packing order, ``group`` each) into
        cables joining ``ends`` (per pair leg) as hop ``col``."""
        nonlocal n_cab
        cable, leg, _, legs = pack_cables(group, table)
        pl_hops[legs_sel, col] = cable + n_cab
        pl_legs[legs_sel, col] = leg
        first = np.zeros(legs.shape[0], dtype=np.int64)
        if cable.shape[0]:
            first[cable[::-1]] = np.arange(cable.shape[0])[::-1]  # a leg of each cable
        cab["a"].append(ends[0][first])
        cab["b"].append(ends[1][first])
        cab["legs"].append(legs)
        cab["smf"].append(p_smf[pl_pair[legs_sel]][first])
        cab["kind"].append(np.full(legs.shape[0], kind, dtype=np.int64))
        n_cab += legs.shape[0]

    # direct trunks: per frame pair, in pair order
    d = np.flatnonzero(~inter)
    add(d, pl_pair[d], TRUNK_SIZES, (p_lo[pl_pair[d]], p_hi[pl_pair[d]]), TRUNK, 0)
    x = np.flatnonzero(inter)
    xp = pl_pair[x]
    hdf_lo, hdf_hi = hdf_of_hall[h_lo[xp]], hdf_of_hall[h_hi[xp]]
    # the low frame to its HDF: per (frame, fibre type)
    g = p_lo[xp] * 2 + p_smf[xp]
    o = np.lexsort((pl_local[x], xp, -unit[x], g))
    add(x[o], g[o], TRUNK_SIZES, (p_lo[xp][o], hdf_lo[o]), TRUNK, 0)
    # backbone HDF to HDF: per (hall pair, fibre type)
    n_halls = int(hdf_of_hall.shape[0])
    g = (h_lo[xp] * n_halls + h_hi[xp]) * 2 + p_smf[xp]
    o = np.lexsort((pl_local[x], xp, -unit[x], g))
    add(x[o], g[o], BACKBONE_SIZES, (hdf_lo[o], hdf_hi[o]), BACKBONE, 1)
    # the far HDF to the high frame: per (frame, fibre type)
    g = p_hi[xp] * 2 + p_smf[xp]
    o = np.lexsort((pl_local[x], xp, -unit[x], g))
    add(x[o], g[o], TRUNK_SIZES, (hdf_hi[o], p_hi[xp][o]), TRUNK, 2)

    cable_fibers = np.concatenate(cab["legs"]) * LEG_FIBERS if n_cab else np.zeros(0, np.int64)
    # per link: hops in lo -> hi order, reversed when its a end is the high frame
    hops = pl_hops[link_pl]
    legs = pl_legs[link_pl]
    n_hops = (hops >= 0).sum(axis=1)
    a_hi = frame_a > frame_b
    rev = a_hi & (n_hops == 3)
    hops[rev] = hops[rev][:, ::-1]
    legs[rev] = legs[rev][:, ::-1]
    span = np.minimum(slots, LEG_FIBERS)
    flipped = LEG_FIBERS + 1 - (in_leg + span - 1)
    used = np.zeros(n_cab, dtype=np.int64)
    for col in range(3):
        on = hops[:, col] >= 0
        used += np.bincount(hops[on, col], weights=slots[on], minlength=n_cab).astype(np.int64)
    return Plant(
        cable_a=np.concatenate(cab["a"]).astype(np.int32),
        cable_b=np.concatenate(cab["b"]).astype(np.int32),
        cable_fibers=cable_fibers.astype(np.int32),
        cable_used=used.astype(np.int32),
        cable_smf=np.concatenate(cab["smf"]).astype(bool),
        cable_kind=np.concatenate(cab["kind"]).astype(np.int8),
        hops=hops.astype(np.int32),
        hop_legs=legs.astype(np.int16),
        fiber_a=np.where(a_hi, flipped, in_leg).astype(np.int8),
        fiber_b=np.where(a_hi, in_leg, flipped).astype(np.int8),
        span=span.astype(np.int8),
    )
