"""Progressive filling (weighted max-min fairness), compiled with numba.

Entities rise together at a common *level*; entity ``e`` puts ``coef * level`` on each link of
its row of ``A``. A link with unfrozen load factor ``a`` (the sum of its unfrozen entities'
coefficients) and frozen load ``f`` saturates at level ``(capacity - f) / a``. Freezing an
entity at level ``x`` changes that only for the links it crosses, so the saturation levels sit
in a binary heap, each link at most once, with lazy increase-key (a link's level only rises;
an entry found below its link's current level is re-queued when it reaches the top), so a
round costs O(1) per entry it touches plus O(log links) per link it inspects, not O(links).
A round takes the lowest level ``x`` (never below the previous round's), saturates every
link within a relative ``rtol`` of it and every entity whose cap is within ``rtol``, and
freezes the unfrozen entities crossing them at ``x``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit


@njit(cache=True)
def _push(keys: Any, vals: Any, size: int, key: float, val: int) -> int:
    i = size
    keys[i] = key
    vals[i] = val
    while i > 0:
        parent = (i - 1) // 2
        if keys[parent] < keys[i] or (keys[parent] == keys[i] and vals[parent] <= vals[i]):
            break
        keys[i], keys[parent] = keys[parent], keys[i]
        vals[i], vals[parent] = vals[parent], vals[i]
        i = parent
    return size + 1


@njit(cache=True)
def _pop(keys: Any, vals: Any, size: int) -> int:
    size -= 1
    keys[0] = keys[size]
    vals[0] = vals[size]
    i = 0
    while True:
        left = 2 * i + 1
        if left >= size:
            break
        child = left
        right = left + 1
        if right < size and (
            keys[right] < keys[left] or (keys[right] == keys[left] and vals[right] < vals[left])
        ):
            child = right
        if keys[i] < keys[child] or (keys[i] == keys[child] and vals[i] <= vals[child]):
            break
        keys[i], keys[child] = keys[child], keys[i]
        vals[i], vals[child] = vals[child], vals[i]
        i = child
    return size


@njit(cache=True)
def fill(
    ent_ptr: Any,
    ent_link: Any,
    ent_coef: Any,
    link_ptr: Any,
    link_entry: Any,
    entry_ent: Any,
    capacity: Any,
    ent_cap: Any,
    active: Any,
    keep: Any,
    rtol: float,
) -> Any:
    """Rates (levels) of every entity, the number of rounds, the entities left unfrozen
    (unbounded) and the load of every link; inactive entities get 0, as do entities crossing a
    zero-capacity link through a kept entry (stalled: they hold no one back) and entities
    capped at 0."""
    n_ent = active.shape[0]
    n_links = capacity.shape[0]
    rate = np.zeros(n_ent)
    unfrozen = active.copy()
    for e in range(n_ent):
        if not unfrozen[e]:
            continue
        if ent_cap[e] <= 0.0:
            unfrozen[e] = False
            continue
        for j in range(ent_ptr[e], ent_ptr[e + 1]):
            if keep[j] and capacity[ent_link[j]] <= 0.0:
                unfrozen[e] = False
                break
    a = np.zeros(n_links)
    count = np.zeros(n_links, dtype=np.int64)
    frozen = np.zeros(n_links)
    left = 0
    for e in range(n_ent):
        if unfrozen[e]:
            left += 1
            for j in range(ent_ptr[e], ent_ptr[e + 1]):
                if keep[j]:
                    a[ent_link[j]] += ent_coef[j]
                    count[ent_link[j]] += 1
    key = np.full(n_links, np.inf)
    keys = np.empty(n_links + 1)  # one entry per link at most (re-queued only when popped)
    vals = np.empty(n_links + 1, dtype=np.int64)
    size = 0
    for link in range(n_links):
        if count[link] > 0:
            key[link] = max(capacity[link], 0.0) / a[link]
            size = _push(keys, vals, size, key[link], link)
    # entities with a finite cap, by cap
    n_capped = 0
    for e in range(n_ent):
        if unfrozen[e] and np.isfinite(ent_cap[e]):
            n_capped += 1
    capped = np.empty(n_capped, dtype=np.int64)
    n_capped = 0
    for e in range(n_ent):
        if unfrozen[e] and np.isfinite(ent_cap[e]):
            capped[n_capped] = e
            n_capped += 1
    capped = capped[np.argsort(ent_cap[capped], kind="mergesort")]
    next_cap = 0
    level = 0.0
    rounds = 0
    sat = np.empty(n_links, dtype=np.int64)
    newly = np.empty(n_ent, dtype=np.int64)
    while left > 0:
        # a link's level only rises as entities freeze, so an entry below its link's current
        # level is re-queued at that level when it surfaces (lazy increase-key)
        while size > 0 and keys[0] != key[vals[0]]:
            link = vals[0]
            size = _pop(keys, vals, size)
            if np.isfinite(key[link]):
                size = _push(keys, vals, size, key[link], link)
        while next_cap < capped.size and not unfrozen[capped[next_cap]]:
            next_cap += 1
        x = np.inf
        if size > 0:
            x = keys[0]
        if next_cap < capped.size:
            x = min(x, ent_cap[capped[next_cap]])
        if not np.isfinite(x):
            break  # unbounded: the caller reports it
        rounds += 1
        level = max(level, x)
        limit = level * (1.0 + rtol)
        n_sat = 0
        while size > 0 and keys[0] <= limit:
            link = vals[0]
            fresh = keys[0] == key[link]
            size = _pop(keys, vals, size)
            if fresh:
                key[link] = np.inf
                sat[n_sat] = link
                n_sat += 1
            elif np.isfinite(key[link]):
                size = _push(keys, vals, size, key[link], link)
        n_new = 0
        for s in range(n_sat):
            link = sat[s]
            for k in range(link_ptr[link], link_ptr[link + 1]):
                j = link_entry[k]
                e = entry_ent[j]
                if keep[j] and unfrozen[e]:
                    unfrozen[e] = False
                    newly[n_new] = e
                    n_new += 1
        while next_cap < capped.size and (
            not unfrozen[capped[next_cap]] or ent_cap[capped[next_cap]] <= limit
        ):
            e = capped[next_cap]
            next_cap += 1
            if unfrozen[e]:
                unfrozen[e] = False
                newly[n_new] = e
                n_new += 1
        left -= n_new
        for i in range(n_new):  # freeze at ``level``: update the links they cross
            e = newly[i]
            rate[e] = level
            for j in range(ent_ptr[e], ent_ptr[e + 1]):
                if not keep[j]:
                    continue
                link = ent_link[j]
                frozen[link] += ent_coef[j] * level
                a[link] -= ent_coef[j]
                count[link] -= 1
                if count[link] == 0:
                    key[link] = np.inf
                elif np.isfinite(key[link]):
                    new = (capacity[link] - frozen[link]) / a[link] if a[link] > 0 else level
                    key[link] = max(new, level, key[link])
    return rate, rounds, left, frozen


@njit(cache=True)
def by_link(links: Any, n_links: int) -> Any:
    """Counting sort of entries by link: (CSR pointer per link, entry indices in link order,
    stable)."""
    ptr = np.zeros(n_links + 1, dtype=np.int64)
    for j in range(links.shape[0]):
        ptr[links[j] + 1] += 1
    for link in range(n_links):
        ptr[link + 1] += ptr[link]
    fill_at = ptr[:-1].copy()
    order = np.empty(links.shape[0], dtype=np.int64)
    for j in range(links.shape[0]):
        order[fill_at[links[j]]] = j
        fill_at[links[j]] += 1
    return ptr, order


@njit(cache=True)
def merge_rows(f: Any, paths: Any, share: Any) -> Any:
    """The distinct (flow, path) rows of ``f``/``paths`` in the order of their first
    occurrence, each with the sum of its rows' ``share`` added in row order (what
    ``np.unique(axis=0)`` with ``np.bincount`` gives, to the bit). An open-addressing table
    keyed by a hash of the row; rows whose hashes meet are compared in full, so the result
    is exact whatever the hash. Returns (index of each kept row's first occurrence, summed
    shares)."""
    n, width = paths.shape
    size = 1
    while size < 2 * n:
        size *= 2
    table = np.full(size, -1, dtype=np.int64)  # slot -> position in ``first``
    first = np.empty(n, dtype=np.int64)
    total = np.zeros(n, dtype=np.float64)
    kept = 0
    mask = np.uint64(size - 1)
    for i in range(n):
        h = np.uint64(f[i]) * np.uint64(0x9E3779B97F4A7C15)
        for j in range(width):
            h = (h ^ np.uint64(paths[i, j] + 1)) * np.uint64(0x100000001B3)
            h ^= h >> np.uint64(29)
        slot = h & mask
        while True:
            at = table[slot]
            if at < 0:
                table[slot] = kept
                first[kept] = i
                total[kept] = share[i]
                kept += 1
                break
            r = first[at]
            same = f[r] == f[i]
            if same:
                for j in range(width):
                    if paths[r, j] != paths[i, j]:
                        same = False
                        break
            if same:
                total[at] += share[i]
                break
            slot = (slot + np.uint64(1)) & mask
    return first[:kept].copy(), total[:kept].copy()


@njit(cache=True)
def avoid_round(
    load: Any,
    cap: Any,
    tol: float,
    link: Any,
    data: Any,
    keep: Any,
    has_keep: bool,
    entry: Any,
    at: Any,
    ue: Any,
    on: Any,
    units_per_ent: Any,
    factor: Any,
    share: Any,
    ent_coef: Any,
    weight: Any,
) -> Any:
    """One round of path avoidance (``engine._Sim._avoid``), the numpy steps fused: units of
    active flows whose data crosses a link loaded within ``tol`` of its capacity (and, with
    ``has_keep``, whose entry is kept) have their share times ``factor``, unless every unit
    of their entity would; shares are renormalised per entity and the entries' coefficients
    rebuilt. Sums run in the order numpy's ``bincount`` adds them, so the result is the same
    to the bit. Returns (whether any unit stepped, new shares, new coefficients)."""
    n_units = share.shape[0]
    n_ent = units_per_ent.shape[0]
    hot = np.zeros(n_units, dtype=np.bool_)
    for k in range(entry.shape[0]):
        j = link[k]
        saturated = cap[j] > 0 and load[j] >= cap[j] * (1.0 - tol)
        if data[k] and saturated and (not has_keep or keep[entry[k]]):
            hot[at[k]] = True
    stepped = np.zeros(n_ent, dtype=np.int64)
    for u in range(n_units):
        hot[u] = hot[u] and on[u]
        if hot[u]:
            stepped[ue[u]] += 1
    out = share.copy()
    total = np.zeros(n_ent, dtype=np.float64)
    changed = False
    for u in range(n_units):
        e = ue[u]
        if hot[u] and stepped[e] < units_per_ent[e]:
            out[u] = share[u] * factor[u]
            changed = True
    if not changed:
        return False, share, ent_coef
    for u in range(n_units):
        total[ue[u]] += out[u]
    for u in range(n_units):
        out[u] = out[u] / total[ue[u]]
    add = np.zeros(ent_coef.shape[0], dtype=np.float64)
    for k in range(entry.shape[0]):
        add[entry[k]] += out[at[k]] * weight[k]
    coef = ent_coef.copy()
    for k in range(entry.shape[0]):
        coef[entry[k]] = 0.0
    for i in range(coef.shape[0]):
        coef[i] += add[i]
    return True, out, coef
