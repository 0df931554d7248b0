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

Control entries (``ctl``, with ``has_ctl``: a unit's ACKs or pulls on a reverse link) are a
load and not a constraint: they add their entity's ``coef * level`` to the link as data
entries do (so a link saturates under its data and the ACKs crossing it), but a saturated
link freezes only the entities whose data crosses it, and a link crossed by no unfrozen data
entity is no constraint. A sender is not held at the level of a link that carries only its
ACKs (docs/sim.md, "ACKs in max-min"). An entity whose ACKs still rise after a link's data
froze can load that link past its capacity by its ACK coefficient times the rise: then the
link's data gets what its ACKs leave: the entities whose data crosses it fill once more
under what the rest leave, capped at their rates (:func:`fill`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

#: The fill's links carry a control entry's flag in bit 30 (``engine``'s ``fill_link``): the
#: fill reads one array per entry for both, and a link is below 2**30 (``engine`` refuses more).
CTL_SHIFT = 30
LINK_MASK = (1 << CTL_SHIFT) - 1


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
def _core(
    ent_ptr: Any,
    ent_link: Any,
    ent_coef: Any,
    link_ptr: Any,
    link_entry: Any,
    link_ent: Any,
    capacity: Any,
    ent_cap: Any,
    active: Any,
    keep: Any,
    has_keep: bool,
    rtol: float,
    ctl: Any,
    has_ctl: bool,
) -> Any:
    """The progressive fill of :func:`fill`, without its settling of ACKs over capacity."""
    n_ent = active.shape[0]
    n_links = capacity.shape[0]
    rate = np.zeros(n_ent)
    unfrozen = active.copy()
    dead = False  # a link without capacity (else no entity needs its links looked at here)
    for link in range(n_links):
        if capacity[link] <= 0.0:
            dead = True
            break
    for e in range(n_ent):
        if not unfrozen[e]:
            continue
        if ent_cap[e] <= 0.0:
            unfrozen[e] = False
            continue
        if not dead:
            continue
        for j in range(ent_ptr[e], ent_ptr[e + 1]):
            if (not has_keep or keep[j]) and capacity[ent_link[j] & LINK_MASK] <= 0.0:
                unfrozen[e] = False
                break
    a = np.zeros(n_links)
    count = np.zeros(n_links, dtype=np.int32)  # unfrozen entries per link: < 2**31 entries
    frozen = np.zeros(n_links)
    left = 0
    for e in range(n_ent):
        if unfrozen[e]:
            left += 1
            for j in range(ent_ptr[e], ent_ptr[e + 1]):
                if not has_keep or keep[j]:
                    x = ent_link[j]
                    link = x & LINK_MASK
                    a[link] += ent_coef[j]
                    # data entries: what the link can freeze (the control flag read from the
                    # link's bit 30, not a second array)
                    count[link] += 1 - (has_ctl & (x >> CTL_SHIFT))
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
                e = link_ent[k]
                j = link_entry[k]
                if unfrozen[e] and (not has_keep or keep[j]) and (not has_ctl or not ctl[j]):
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
                if has_keep and not keep[j]:
                    continue
                x = ent_link[j]
                link = x & LINK_MASK
                frozen[link] += ent_coef[j] * level
                a[link] -= ent_coef[j]
                count[link] -= 1 - (has_ctl & (x >> CTL_SHIFT))
                if count[link] == 0:
                    key[link] = np.inf
                elif np.isfinite(key[link]):
                    new = (capacity[link] - frozen[link]) / a[link] if a[link] > 0 else level
                    key[link] = max(new, level, key[link])
    return rate, rounds, left, frozen


@njit(cache=True)
def fill(
    ent_ptr: Any,
    ent_link: Any,
    ent_coef: Any,
    link_ptr: Any,
    link_entry: Any,
    link_ent: Any,
    capacity: Any,
    ent_cap: Any,
    active: Any,
    keep: Any,
    has_keep: bool,
    rtol: float,
    ctl: Any,
    has_ctl: bool,
) -> Any:
    """Rates (levels) of every entity, the number of rounds, the entities left unfrozen
    (unbounded) and the load of every link; inactive entities get 0, as do entities crossing a
    zero-capacity link through a kept entry (stalled: they hold no one back) and entities
    capped at 0. ``link_entry`` lists the entries link by link and ``link_ent`` their
    entities (read in that order, so a saturated link's entities are found without a lookup
    per entry); ``keep`` (one flag per entry) is read only when ``has_keep``, ``ctl`` (one
    flag per entry: a control entry, a load that freezes no one) only when ``has_ctl``; the
    same flags must be in bit 30 of ``ent_link`` (:data:`CTL_SHIFT`: the passes over every
    entry read them there, the links masked by :data:`LINK_MASK`).

    With control entries, a link their ACKs took past its capacity (they rose after its data
    froze) has its data served after them: the entities whose data crosses such a link fill
    once more, without the control entries, each capped at its rate, under what the other
    entities' data and every ACK at these rates leave of each link; the others keep their
    rates. Rates only fall in that fill, so the ACK load only falls and every link is within
    capacity, the ACKs counted. (A link over its capacity with ACKs alone, no data on it, is
    left as it is: docs/sim.md, "ACKs in max-min".)"""
    rate, rounds, left, load = _core(
        ent_ptr, ent_link, ent_coef, link_ptr, link_entry, link_ent, capacity, ent_cap,
        active, keep, has_keep, rtol, ctl, has_ctl,
    )  # fmt: skip
    if not has_ctl or left > 0:
        return rate, rounds, left, load
    n_ent = rate.shape[0]
    n_links = capacity.shape[0]
    over = np.zeros(n_links, dtype=np.bool_)
    any_over = False
    for link in range(n_links):
        if load[link] > capacity[link] * (1.0 + 1e-9):
            over[link] = True
            any_over = True
    if not any_over:
        return rate, rounds, left, load
    # the entities whose data crosses a link over capacity, from those links' lists (the
    # set a pass over every entity's entries finds)
    hit = np.zeros(n_ent, dtype=np.bool_)
    for link in range(n_links):
        if over[link]:
            for k in range(link_ptr[link], link_ptr[link + 1]):
                e = link_ent[k]
                j = link_entry[k]
                if rate[e] > 0.0 and not ctl[j] and (not has_keep or keep[j]):
                    hit[e] = True
    # the refill reads ``data`` at the hit entities' entries only (its unfrozen ones): made
    # there alone
    data = np.empty(ent_link.shape[0], dtype=np.bool_)
    used = np.zeros(n_links)  # the others' data and every ACK, at these rates
    cap = np.full(n_ent, np.inf)
    for e in range(n_ent):
        cap[e] = min(ent_cap[e], rate[e])
        if hit[e]:
            for j in range(ent_ptr[e], ent_ptr[e + 1]):
                kept = not has_keep or keep[j]
                data[j] = kept and not ctl[j]
                if kept and ctl[j]:
                    used[ent_link[j] & LINK_MASK] += ent_coef[j] * rate[e]
        else:
            for j in range(ent_ptr[e], ent_ptr[e + 1]):
                if not has_keep or keep[j]:
                    used[ent_link[j] & LINK_MASK] += ent_coef[j] * rate[e]
    room = np.empty(n_links)
    for link in range(n_links):
        room[link] = max(capacity[link] - used[link], 0.0)
    rate2, rounds2, _, _ = _core(
        ent_ptr, ent_link, ent_coef, link_ptr, link_entry, link_ent, room, cap,
        hit, data, True, rtol, ctl, False,
    )  # fmt: skip
    for e in range(n_ent):
        if hit[e]:
            rate[e] = rate2[e]
    load[:] = 0.0
    for e in range(n_ent):
        if rate[e] > 0.0:
            for j in range(ent_ptr[e], ent_ptr[e + 1]):
                if not has_keep or keep[j]:
                    load[ent_link[j] & LINK_MASK] += ent_coef[j] * rate[e]
    return rate, rounds + rounds2, left, load


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
def by_link_owner(links: Any, owner: Any, n_links: int, order: Any, order_owner: Any) -> Any:
    """:func:`by_link` into the arrays given (``order`` and ``order_owner``, as long as
    ``links``, e.g. int32 when there are fewer than 2**31 entries: half the bytes the fill
    reads), with ``owner[order]`` (each entry's entity) in ``order_owner``; returns the CSR
    pointer per link."""
    ptr = np.zeros(n_links + 1, dtype=np.int64)
    for j in range(links.shape[0]):
        ptr[links[j] + 1] += 1
    for link in range(n_links):
        ptr[link + 1] += ptr[link]
    fill_at = ptr[:-1].copy()
    for j in range(links.shape[0]):
        at = fill_at[links[j]]
        order[at] = j
        order_owner[at] = owner[j]
        fill_at[links[j]] = at + 1
    return ptr


@njit(cache=True)
def compact_rows(paths: Any) -> Any:
    """The non-negative entries of ``paths`` row by row as CSR (pointer per row, entries in
    row-major order): what ``paths[paths >= 0]`` and the cumulative row counts give."""
    n, width = paths.shape
    ptr = np.zeros(n + 1, dtype=np.int64)
    for i in range(n):
        c = 0
        for j in range(width):
            if paths[i, j] >= 0:
                c += 1
        ptr[i + 1] = ptr[i] + c
    links = np.empty(ptr[n], dtype=np.int64)
    k = 0
    for i in range(n):
        for j in range(width):
            if paths[i, j] >= 0:
                links[k] = paths[i, j]
                k += 1
    return ptr, links


@njit(cache=True)
def _row_hash(f: Any, paths: Any, i: int) -> Any:
    h = np.uint64(f[i]) * np.uint64(0x9E3779B97F4A7C15)
    for j in range(paths.shape[1]):
        h = (h ^ np.uint64(paths[i, j] + 1)) * np.uint64(0x100000001B3)
        h ^= h >> np.uint64(29)
    return h


@njit(cache=True)
def _merge_into(
    f: Any, paths: Any, share: Any, lo: int, hi: int, table: Any, size: int, first: Any,
    total: Any, kept: int,
) -> int:  # fmt: skip
    """Rows ``lo`` to ``hi`` into an open-addressing table of ``size`` slots (a power of
    two, all -1): each row's first occurrence appended to ``first`` (its share to
    ``total``), a repeat's share added to its first's, in row order. Returns the count."""
    mask = np.uint64(size - 1)
    width = paths.shape[1]
    for i in range(lo, hi):
        slot = _row_hash(f, paths, i) & mask
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
    return kept


@njit(cache=True)
def merge_rows(f: Any, paths: Any, share: Any) -> Any:
    """The distinct (flow, path) rows of ``f``/``paths`` in the order of their first
    occurrence, each with the sum of its rows' ``share`` added in row order (what
    ``np.unique(axis=0)`` with ``np.bincount`` gives, to the bit). An open-addressing table
    keyed by a hash of the row; rows whose hashes meet are compared in full, so the result
    is exact whatever the hash. When each flow's rows are one run (a sprayer's EVs, flow
    by flow), one small table per run, reused, since rows of different flows never merge:
    the same rows in the same order, from a table that stays in cache (a fifth of the
    time of one table over 2**18 EVs). Returns (index of each kept row's first
    occurrence, summed shares)."""
    n = paths.shape[0]
    first = np.empty(n, dtype=np.int64)
    total = np.zeros(n, dtype=np.float64)
    runs = n > 0 and f.min() >= 0
    if runs:  # is every flow's run its only one?
        seen = np.zeros(f.max() + 1, dtype=np.bool_)
        i = 0
        while i < n and runs:
            if seen[f[i]]:
                runs = False
            seen[f[i]] = True
            j = i + 1
            while j < n and f[j] == f[i]:
                j += 1
            i = j
    kept = 0
    if runs:
        table = np.full(16, -1, dtype=np.int64)
        i = 0
        while i < n:
            j = i + 1
            while j < n and f[j] == f[i]:
                j += 1
            size = 16
            while size < 2 * (j - i):
                size *= 2
            if table.shape[0] < size:
                table = np.full(size, -1, dtype=np.int64)
            else:
                table[:size] = -1
            kept = _merge_into(f, paths, share, i, j, table, size, first, total, kept)
            i = j
    else:
        size = 1
        while size < 2 * n:
            size *= 2
        table = np.full(size, -1, dtype=np.int64)  # slot -> position in ``first``
        kept = _merge_into(f, paths, share, 0, n, table, size, first, total, kept)
    return first[:kept].copy(), total[:kept].copy()


@njit(cache=True)
def _pairwise(v: Any, start: int, n: int) -> Any:
    """numpy's pairwise summation of ``v[start:start + n]`` (``np.add.reduce``'s order: up to
    7 values one by one, up to 128 in 8 running sums combined as a tree, beyond that the two
    halves, the first a multiple of 8 long)."""
    if n < 8:
        res = -0.0
        for i in range(start, start + n):
            res += v[i]
        return res
    if n <= 128:
        r0 = v[start]
        r1 = v[start + 1]
        r2 = v[start + 2]
        r3 = v[start + 3]
        r4 = v[start + 4]
        r5 = v[start + 5]
        r6 = v[start + 6]
        r7 = v[start + 7]
        i = 8
        while i < n - n % 8:
            b = start + i
            r0 += v[b]
            r1 += v[b + 1]
            r2 += v[b + 2]
            r3 += v[b + 3]
            r4 += v[b + 4]
            r5 += v[b + 5]
            r6 += v[b + 6]
            r7 += v[b + 7]
            i += 8
        res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
        while i < n:
            res += v[start + i]
            i += 1
        return res
    half = n // 2
    half -= half % 8
    return _pairwise(v, start, half) + _pairwise(v, start + half, n - half)


@njit(cache=True)
def merge_entries(
    order: Any,
    ent_start: Any,
    unit_ptr: Any,
    unit_link: Any,
    link_weight: Any,
    control: Any,
    coef: Any,
    n_links: int,
) -> Any:
    """The entries of ``A`` (``engine._Sim._build``) in one pass: per entity (its units are
    ``order[ent_start[e]:ent_start[e + 1]]``, ``coef`` per position of ``order``), one entry
    per distinct link in link order, its value the sum of ``coef * link_weight`` over the
    unit entries on that link as ``np.add.reduceat`` adds them (the first, then numpy's
    pairwise sum of the rest, in position order), its hop the least, its control flag the
    AND. What a stable sort of the unit entries by (entity, link) and ``reduceat`` give, to
    the bit. Returns (entity, link, value, hop, control) per entry and the entry of every
    unit entry in position order."""
    none = np.empty(0, dtype=np.int64)
    rows, cols, vals, hops, ctl, merged_of_pos, _, _ = _merge(
        order, ent_start, unit_ptr, unit_link, link_weight, control, coef, n_links,
        False, none, none, none, none, none, np.empty(0),
    )  # fmt: skip
    return rows, cols, vals, hops, ctl, merged_of_pos


@njit(cache=True)
def merge_entries_map(
    order: Any,
    ent_start: Any,
    unit_ptr: Any,
    unit_link: Any,
    link_weight: Any,
    control: Any,
    coef: Any,
    n_links: int,
    dptr: Any,
    dlink: Any,
    dentry: Any,
    eptr: Any,
    eunit: Any,
    weight: Any,
) -> Any:
    """:func:`merge_entries` (without the entry of every unit entry) when every entity
    avoids, with the map of path avoidance :func:`avoid_entries` gives when every entry is
    kept (every unit is a map unit, its position in ``order``), in the arrays given: per
    position its data entries (CSR ``dptr``, zeroed, one more than the positions; their
    links ``dlink`` and entries ``dentry``), per entry its positions in order (CSR ``eptr``,
    one more than the unit entries; ``eunit``) and ``weight`` per entry. Returns (entity,
    link, value, hop, control) per entry, the number of data entries and whether every
    entry's unit entries have one weight (if not, ``weight`` is not theirs: use
    :func:`avoid_entries`)."""
    rows, cols, vals, hops, ctl, _, n_data, uniform = _merge(
        order, ent_start, unit_ptr, unit_link, link_weight, control, coef, n_links,
        True, dptr, dlink, dentry, eptr, eunit, weight,
    )  # fmt: skip
    return rows, cols, vals, hops, ctl, n_data, uniform


@njit(cache=True)
def _radix_sort(v: Any, n: int, tmp: Any, bucket: Any, bound: int) -> Any:
    """``v[:n]`` (non-negative, below ``bound``) sorted, by a least-significant-digit radix
    sort of 8 bits a pass (as many passes as ``bound`` needs; ``tmp`` as long as ``v``,
    ``bucket`` 257 long): the array it ends in, ``v`` or ``tmp``. The sorted order of
    distinct values is unique, so this is what ``np.sort`` gives; on the few hundred links
    of a sprayed flow it takes a third of ``np.sort``'s time."""
    src = v
    dst = tmp
    shift = 0
    while shift < 63 and (bound - 1) >> shift > 0:
        bucket[:] = 0
        for i in range(n):
            bucket[((src[i] >> shift) & 255) + 1] += 1
        for b in range(256):
            bucket[b + 1] += bucket[b]
        for i in range(n):
            d = (src[i] >> shift) & 255
            dst[bucket[d]] = src[i]
            bucket[d] += 1
        src, dst = dst, src
        shift += 8
    return src


@njit(cache=True)
def _merge(
    order: Any,
    ent_start: Any,
    unit_ptr: Any,
    unit_link: Any,
    link_weight: Any,
    control: Any,
    coef: Any,
    n_links: int,
    with_map: bool,
    dptr: Any,
    dlink: Any,
    dentry: Any,
    eptr: Any,
    eunit: Any,
    weight: Any,
) -> Any:
    """:func:`merge_entries` and, ``with_map``, :func:`merge_entries_map`."""
    n_ent = ent_start.shape[0] - 1
    total = 0
    for i in range(order.shape[0]):
        total += unit_ptr[order[i] + 1] - unit_ptr[order[i]]
    rows = np.empty(total, dtype=np.int64)
    cols = np.empty(total, dtype=np.int64)
    vals = np.empty(total, dtype=np.float64)
    hops = np.empty(total, dtype=np.int64)
    ctl = np.empty(total, dtype=np.bool_)
    merged_of_pos = np.empty(0 if with_map else total, dtype=np.int64)
    stamp = np.full(n_links, -1, dtype=np.int64)
    count = np.zeros(n_links, dtype=np.int64)
    slot = np.zeros(n_links, dtype=np.int64)
    put = np.zeros(n_links, dtype=np.int64)
    distinct = np.empty(n_links, dtype=np.int64)
    spare = np.empty(n_links, dtype=np.int64)
    bucket = np.empty(257, dtype=np.int64)
    buf = np.empty(0, dtype=np.float64)
    n_out = 0
    n_data = 0
    uniform = True
    t0 = 0
    for e in range(n_ent):
        nd = 0
        n_e = 0
        for i in range(ent_start[e], ent_start[e + 1]):
            u = order[i]
            for k in range(unit_ptr[u], unit_ptr[u + 1]):
                link = unit_link[k]
                if stamp[link] != e:
                    stamp[link] = e
                    count[link] = 0
                    distinct[nd] = link
                    nd += 1
                count[link] += 1
                n_e += 1
        links = _radix_sort(distinct, nd, spare, bucket, n_links)
        if buf.shape[0] < n_e:
            buf = np.empty(max(n_e, 2 * buf.shape[0]), dtype=np.float64)
        off = 0
        for r in range(nd):
            link = links[r]
            m = n_out + r
            slot[link] = m
            put[link] = off
            if with_map:
                eptr[m] = t0 + off
                weight[m] = np.nan
            off += count[link]
            rows[m] = e
            cols[m] = link
            hops[m] = np.iinfo(np.int64).max
            ctl[m] = True
        t = t0
        for i in range(ent_start[e], ent_start[e + 1]):
            u = order[i]
            c = coef[i]
            for k in range(unit_ptr[u], unit_ptr[u + 1]):
                link = unit_link[k]
                m = slot[link]
                if with_map:
                    eunit[t0 + put[link]] = i
                    if not control[k]:
                        dlink[n_data] = link
                        dentry[n_data] = m
                        n_data += 1
                    w = link_weight[k]
                    if np.isnan(weight[m]):
                        weight[m] = w
                    elif weight[m] != w:
                        uniform = False
                else:
                    merged_of_pos[t] = m
                t += 1
                buf[put[link]] = c * link_weight[k]
                put[link] += 1
                hop = k - unit_ptr[u]
                if hop < hops[m]:
                    hops[m] = hop
                ctl[m] = ctl[m] and control[k]
            if with_map:
                dptr[i + 1] = n_data
        for r in range(nd):
            link = links[r]
            n = count[link]
            first = put[link] - n
            value = buf[first]
            if n > 1:
                value += _pairwise(buf, first + 1, n - 1)
            vals[n_out + r] = value
        n_out += nd
        t0 = t
    if with_map:
        eptr[n_out] = t0
    return (
        rows[:n_out],
        cols[:n_out],
        vals[:n_out],
        hops[:n_out],
        ctl[:n_out],
        merged_of_pos,
        n_data,
        uniform,
    )


@njit(cache=True)
def avoid_entries(
    order: Any,
    ent_start: Any,
    avoiding: Any,
    unit_ptr: Any,
    link_weight: Any,
    control: Any,
    merged_of_pos: Any,
    entry_of_merged: Any,
    ent_link: Any,
    units: Any,
    dptr: Any,
    dlink: Any,
    dentry: Any,
    eptr: Any,
    eunit: Any,
    eweight: Any,
) -> Any:
    """The map of path avoidance (``engine._AvoidMap``) from the unit entries of avoiding
    entities (``avoiding``) that add to a kept entry (``entry_of_merged`` >= 0), in two
    passes over them. Fills, in the arrays given (each long enough; ``eptr`` zeroed, one more
    than the entries): ``units``, the units with at least one such entry in position order
    (their index in it is the *map unit*); per map unit its data entries as CSR ``dptr``,
    each with its link (``dlink``) and entry (``dentry``); and per entry, CSR ``eptr``, the
    map units adding to it in unit order (``eunit``) with, when the unit entries of some
    entry differ in weight, each one's weight (``eweight``). Returns (the number of map
    units, of data entries, per entry the weight of its unit entries, whether every entry's
    unit entries have one weight)."""
    n_entries = ent_link.shape[0]
    weight = np.full(n_entries, np.nan)
    uniform = True
    n_units = 0
    nd = 0
    t = 0
    for e in range(ent_start.shape[0] - 1):
        for i in range(ent_start[e], ent_start[e + 1]):
            u = order[i]
            if avoiding[e]:
                had = False
                for k in range(unit_ptr[u], unit_ptr[u + 1]):
                    entry = entry_of_merged[merged_of_pos[t + k - unit_ptr[u]]]
                    if entry < 0:
                        continue
                    had = True
                    eptr[entry + 1] += 1
                    if not control[k]:
                        dlink[nd] = ent_link[entry]
                        dentry[nd] = entry
                        nd += 1
                    w = link_weight[k]
                    if np.isnan(weight[entry]):
                        weight[entry] = w
                    elif weight[entry] != w:
                        uniform = False
                if had:
                    units[n_units] = u
                    n_units += 1
                    dptr[n_units] = nd
            t += unit_ptr[u + 1] - unit_ptr[u]
    for j in range(n_entries):
        eptr[j + 1] += eptr[j]
    at = eptr[:-1].copy()
    m = 0
    t = 0
    for e in range(ent_start.shape[0] - 1):
        for i in range(ent_start[e], ent_start[e + 1]):
            u = order[i]
            if avoiding[e]:
                had = False
                for k in range(unit_ptr[u], unit_ptr[u + 1]):
                    entry = entry_of_merged[merged_of_pos[t + k - unit_ptr[u]]]
                    if entry < 0:
                        continue
                    had = True
                    eunit[at[entry]] = m
                    if not uniform:
                        eweight[at[entry]] = link_weight[k]
                    at[entry] += 1
                if had:
                    m += 1
            t += unit_ptr[u + 1] - unit_ptr[u]
    return n_units, nd, weight, uniform


@njit(cache=True)
def _rebuild(
    a: int,
    b: int,
    eptr: Any,
    eunit: Any,
    weight: Any,
    by_entry: bool,
    eweight: Any,
    share: Any,
    coef: Any,
) -> None:
    """Entries ``a`` to ``b`` of ``coef``, each the sum of ``share * weight`` over the map
    units adding to it, in unit order from 0 (an entry no unit adds to is left as it is)."""
    for j in range(a, b):
        lo, hi = eptr[j], eptr[j + 1]
        if hi - lo == 1:  # most entries (nine in ten of a sprayed flow's): no inner loop
            acc = 0.0
            acc += share[eunit[lo]] * (weight[j] if by_entry else eweight[lo])
            coef[j] = acc
            continue
        if lo == hi:
            continue
        acc = 0.0
        if by_entry:
            w = weight[j]
            for q in range(lo, hi):
                acc += share[eunit[q]] * w
        else:
            for q in range(lo, hi):
                acc += share[eunit[q]] * eweight[q]
        coef[j] = acc


@njit(cache=True)
def avoid_coef(
    ent_ptr: Any,
    ue: Any,
    eptr: Any,
    eunit: Any,
    weight: Any,
    by_entry: bool,
    eweight: Any,
    share: Any,
    coef: Any,
) -> None:
    """The coefficients of the avoiding entities' entries from the map units' ``share``, in
    place: each the sum of ``share * weight`` over its map units in unit order (as
    :func:`avoid_step` rebuilds them); ``weight`` per entry (``by_entry``) or ``eweight``
    per map unit entry."""
    n_units = ue.shape[0]
    first = 0
    while first < n_units:
        e = ue[first]
        last = first
        while last < n_units and ue[last] == e:
            last += 1
        _rebuild(ent_ptr[e], ent_ptr[e + 1], eptr, eunit, weight, by_entry, eweight, share, coef)
        first = last


@njit(cache=True)
def avoid_step(
    load: Any,
    cap: Any,
    tol: float,
    keep: Any,
    has_keep: bool,
    dptr: Any,
    dlink: Any,
    dentry: Any,
    ue: Any,
    on: Any,
    units_per_ent: Any,
    factor: Any,
    share: Any,
    ent_ptr: Any,
    eptr: Any,
    eunit: Any,
    weight: Any,
    by_entry: bool,
    eweight: Any,
    coef: Any,
) -> Any:
    """One round of path avoidance (``engine._Sim._avoid``): map units of active flows
    (``on``) whose data crosses a link loaded within ``tol`` of its capacity (``dlink``, CSR
    by map unit; with ``has_keep``, through a kept entry ``dentry``) have their share times
    ``factor``, unless every unit of their entity would; shares are renormalised per entity
    (summed in unit order). ``coef`` holds the coefficients :func:`avoid_coef` gives for
    ``share`` and is updated in place, the entries of an entity (``ent_ptr``) rebuilt from
    their map units (CSR ``eptr``/``eunit``) only when one of its shares changed (the others
    would be rebuilt to the same bits). The units of an entity are consecutive (``ue``
    rises). Returns (whether any unit stepped, the new shares)."""
    n_units = share.shape[0]
    n_links = cap.shape[0]
    hot_link = np.zeros(n_links, dtype=np.bool_)
    for j in range(n_links):
        hot_link[j] = cap[j] > 0 and load[j] >= cap[j] * (1.0 - tol)
    hot = np.zeros(n_units, dtype=np.bool_)
    changed = False
    first = 0
    while first < n_units:  # one entity at a time: which of its units are hot
        e = ue[first]
        last = first
        stepped = 0
        while last < n_units and ue[last] == e:
            if on[last]:
                for k in range(dptr[last], dptr[last + 1]):
                    if hot_link[dlink[k]] and (not has_keep or keep[dentry[k]]):
                        hot[last] = True
                        stepped += 1
                        break
            last += 1
        if stepped and stepped < units_per_ent[e]:
            changed = True
        else:
            for u in range(first, last):
                hot[u] = False
        first = last
    if not changed:
        return False, share
    return True, _avoid_apply(hot, ue, factor, share, ent_ptr, eptr, eunit, weight, by_entry,
                              eweight, coef)  # fmt: skip


@njit(cache=True)
def _avoid_apply(
    hot: Any, ue: Any, factor: Any, share: Any, ent_ptr: Any, eptr: Any, eunit: Any,
    weight: Any, by_entry: bool, eweight: Any, coef: Any,
) -> Any:  # fmt: skip
    """The second half of :func:`avoid_step`: the hot units' shares times ``factor``, every
    entity's renormalised, the coefficients of those that moved rebuilt; the new shares."""
    n_units = share.shape[0]
    out = share.copy()
    first = 0
    while first < n_units:
        e = ue[first]
        last = first
        total = 0.0
        while last < n_units and ue[last] == e:
            if hot[last]:
                out[last] = share[last] * factor[last]
            total += out[last]
            last += 1
        moved = False
        for u in range(first, last):
            out[u] = out[u] / total
            moved = moved or out[u] != share[u]
        if moved:
            _rebuild(ent_ptr[e], ent_ptr[e + 1], eptr, eunit, weight, by_entry, eweight, out, coef)
        first = last
    return out


@njit(cache=True)
def units_by_link(dptr: Any, dlink: Any, n_links: int) -> Any:
    """The map units whose data cross each link (CSR: pointer per link, 32-bit map units;
    a unit once per data entry), for :func:`avoid_step_by_link`."""
    ptr = np.zeros(n_links + 1, dtype=np.int64)
    for k in range(dlink.shape[0]):
        ptr[dlink[k] + 1] += 1
    for link in range(n_links):
        ptr[link + 1] += ptr[link]
    at = ptr[:-1].copy()
    unit = np.empty(dlink.shape[0], dtype=np.int32)
    for u in range(dptr.shape[0] - 1):
        for k in range(dptr[u], dptr[u + 1]):
            unit[at[dlink[k]]] = u
            at[dlink[k]] += 1
    return ptr, unit


@njit(cache=True)
def avoid_step_by_link(
    load: Any, cap: Any, tol: float, hptr: Any, hunit: Any, ue: Any, on: Any,
    units_per_ent: Any, factor: Any, share: Any, ent_ptr: Any, eptr: Any, eunit: Any,
    weight: Any, by_entry: bool, eweight: Any, coef: Any,
) -> Any:  # fmt: skip
    """:func:`avoid_step` without black holes (every entry kept), the hot units found from
    the hot links (``hptr``/``hunit``, :func:`units_by_link`) instead of every unit's data
    links: the same flags, so the same shares and coefficients to the bit, for the few
    units on hot links (a fortieth of the data entries at k=32) instead of all of them."""
    n_units = share.shape[0]
    hot = np.zeros(n_units, dtype=np.bool_)
    for j in range(cap.shape[0]):
        if cap[j] > 0 and load[j] >= cap[j] * (1.0 - tol):
            for k in range(hptr[j], hptr[j + 1]):
                u = hunit[k]
                if on[u]:
                    hot[u] = True
    changed = False
    first = 0
    while first < n_units:  # one entity at a time: how many of its units are hot
        e = ue[first]
        last = first
        stepped = 0
        while last < n_units and ue[last] == e:
            stepped += hot[last]
            last += 1
        if stepped and stepped < units_per_ent[e]:
            changed = True
        else:
            for u in range(first, last):
                hot[u] = False
        first = last
    if not changed:
        return False, share
    return True, _avoid_apply(hot, ue, factor, share, ent_ptr, eptr, eunit, weight, by_entry,
                              eweight, coef)  # fmt: skip


@njit(cache=True)
def repeated_link(ptr: Any, link: Any, n_links: int) -> Any:
    """The first unit (CSR ``ptr`` over ``link``, links in range) that lists a link twice,
    and the least such link of it; (-1, -1) when none does."""
    stamp = np.full(n_links, -1, dtype=np.int64)
    for u in range(ptr.shape[0] - 1):
        found = -1
        for k in range(ptr[u], ptr[u + 1]):
            j = link[k]
            if stamp[j] == u and (found < 0 or j < found):
                found = j
            stamp[j] = u
        if found >= 0:
            return u, found
    return -1, -1


@njit(cache=True)
def check_entries(ptr: Any, link: Any, weight: Any, n_links: int) -> Any:
    """The checks of the units' entries in one pass each (``engine._check_units``, without
    the boolean arrays of every entry): the first entry whose link is out of range (-1:
    none), then, when all are in range, :func:`repeated_link`, and the first entry whose
    weight is not finite and >= 0 (-1: none)."""
    for k in range(link.shape[0]):
        if link[k] < 0 or link[k] >= n_links:
            return k, -1, -1, -1
    twice, twice_link = repeated_link(ptr, link, n_links)
    bad_weight = -1
    for k in range(weight.shape[0]):
        w = weight[k]
        if not np.isfinite(w) or w < 0:
            bad_weight = k
            break
    return -1, twice, twice_link, bad_weight
