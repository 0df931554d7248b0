"""Shortest routes on the tray graph, many pairs at once, and load spreading.

:func:`route_pairs` runs Dijkstra (``scipy.sparse.csgraph``) from each distinct source, in
chunks of :data:`SOURCE_CHUNK` sources so memory stays bounded, and walks the predecessor trees
back from every destination in one vectorized step per hop. It returns each pair's route length
and its segments as an incidence list (pair, segment), never a Python object per route.

**Spreading** (:func:`spread`): routes are first shortest by length. When a segment's cables
exceed its capacity, the routes crossing it are taken largest first until their area covers
the overflow; those are re-routed on a graph where every full segment costs
``1 + OVERFLOW_PENALTY`` times its length (so a detour up to that factor longer is preferred,
e.g. the cross-aisle at the far end of the rows), and loads are recomputed. Up to
``SPREAD_ROUNDS`` rounds. A detour that would take a cable past its medium's reach is refused
(the route stays shortest). What still overflows is reported by the tray-fill check.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray
from scipy.sparse.csgraph import dijkstra

from clusterloom.cabling.pathways import Pathways

SOURCE_CHUNK = 256
OVERFLOW_PENALTY = 4.0
SPREAD_ROUNDS = 3


def route_pairs(
    pw: Pathways,
    src: NDArray[np.integer],
    dst: NDArray[np.integer],
    weight: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int32]]:
    """Route ``src[i] -> dst[i]`` on ``pw``. Returns the route length of each pair (metres,
    ``inf`` when unreachable) and the incidence ``(pair ids, segment ids)`` of every hop."""
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    n_pairs = src.shape[0]
    length = np.full(n_pairs, np.inf)
    if n_pairs == 0:
        return length, np.zeros(0, np.int64), np.zeros(0, np.int32)
    graph = pw.graph(weight)
    keys, key_seg = pw.edge_lookup()
    n = pw.n_nodes
    sources, inverse = np.unique(src, return_inverse=True)
    out_pair: list[NDArray[np.int64]] = []
    out_seg: list[NDArray[np.int32]] = []
    for c0 in range(0, sources.shape[0], SOURCE_CHUNK):
        chunk = sources[c0 : c0 + SOURCE_CHUNK]
        _, pred = dijkstra(graph, directed=False, indices=chunk, return_predecessors=True)
        sel = np.flatnonzero((inverse >= c0) & (inverse < c0 + chunk.shape[0]))
        row = inverse[sel] - c0
        cur = dst[sel].copy()
        total = np.zeros(sel.shape[0])
        ok = (cur == src[sel]) | (pred[row, cur] >= 0)
        active = np.flatnonzero(ok & (cur != src[sel]))
        while active.shape[0]:
            prev = pred[row[active], cur[active]].astype(np.int64)
            k = np.searchsorted(keys, prev * n + cur[active])
            seg = key_seg[k]
            out_pair.append(sel[active])
            out_seg.append(seg)
            total[active] += pw.seg_length_m[seg]
            cur[active] = prev
            active = active[prev != src[sel[active]]]
        length[sel[ok]] = total[ok]
    if not out_pair:
        return length, np.zeros(0, np.int64), np.zeros(0, np.int32)
    return length, np.concatenate(out_pair), np.concatenate(out_seg)


def loads(
    n_segments: int,
    pair: NDArray[np.int64],
    seg: NDArray[np.int32],
    per_pair: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Sum of ``per_pair[pair]`` over each segment."""
    out = np.bincount(seg, weights=per_pair[pair], minlength=n_segments).astype(np.float64)
    return out


def spread(
    pw: Pathways,
    src: NDArray[np.integer],
    dst: NDArray[np.integer],
    area: NDArray[np.float64],
    base_load: NDArray[np.float64],
    max_length: NDArray[np.float64] | None = None,
    slack: NDArray[np.float64] | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.int64], NDArray[np.int32], int]:
    """Route pairs carrying ``area`` mm^2 each on top of ``base_load`` (cables that cannot move),
    spreading off full segments (see the module); a pair never moves to a route longer than
    its ``max_length`` (what its cables' reach leaves), or than its shortest route plus
    ``slack``, it stays put instead. Returns lengths, incidence (grouped by pair, each route's
    hops from its destination back to its source) and the number of pairs moved off their
    shortest route."""
    length, pair, seg = route_pairs(pw, src, dst)
    if slack is not None:
        max_length = length + slack
    moved = np.zeros(np.asarray(src).shape[0], dtype=bool)
    cap = pw.seg_capacity_mm2
    for _ in range(SPREAD_ROUNDS):
        load = base_load + loads(pw.n_segments, pair, seg, area)
        full = np.flatnonzero(load > cap)
        if full.shape[0] == 0:
            break
        pick = np.zeros(length.shape[0], dtype=bool)
        for s in full.tolist():
            crossing = np.unique(pair[seg == s])
            crossing = crossing[np.argsort(-area[crossing], kind="stable")]
            need = load[s] - cap[s]
            cum = np.cumsum(area[crossing])
            take = int(np.searchsorted(cum, need)) + 1
            pick[crossing[:take]] = True
        weight = pw.seg_length_m * np.where(load > cap, 1.0 + OVERFLOW_PENALTY, 1.0)
        idx = np.flatnonzero(pick)
        new_len, new_pair, new_seg = route_pairs(
            pw, np.asarray(src)[idx], np.asarray(dst)[idx], weight
        )
        fits = np.isfinite(new_len)
        if max_length is not None:
            fits &= new_len <= max_length[idx] + 1e-9
        take_new = np.zeros(length.shape[0], dtype=bool)
        take_new[idx[fits]] = True
        if not take_new.any():
            break
        keep = ~take_new[pair]
        ok_hop = take_new[idx[new_pair]]
        pair = np.concatenate([pair[keep], idx[new_pair][ok_hop]])
        seg = np.concatenate([seg[keep], new_seg[ok_hop]])
        changed = fits & (new_len > length[idx] + 1e-9)
        moved[idx[changed]] = True
        length[idx[fits]] = new_len[fits]
    order = np.argsort(pair, kind="stable")  # each route's hops stay in walk order
    return length, pair[order], seg[order], int(moved.sum())
