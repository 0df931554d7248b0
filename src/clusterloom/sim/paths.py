"""Equal-cost paths through a generated fabric, chosen by an entropy value (EV) per hop.

Links of a ``Topology`` are physical and stored once (lower end first); the simulator uses
directed links: ``2 * i`` is link ``i`` upward (host to leaf, leaf to spine, spine to core) and
``2 * i + 1`` downward. A path from host ``a`` to host ``b`` in one plane goes up to the lowest
common tier and down again (up-down routing, the only shortest paths in a Clos). At every switch
the next hop is chosen among the equal-cost ones by hashing the EV with the switch's id and a
seed, as ECMP hashing does: ``splitmix64(ev ^ seed ^ switch * golden)`` modulo the number of
live candidates. Candidates are the live uplinks (whose far end still reaches the destination)
going up and the live parallel links going down; a fabric where no live path remains gives
``-1`` links for that flow (it stalls until a path comes back).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.fabric.topology import Role, Topology
from clusterloom.sim._aot import njit  # numba's, or built ahead of time (no numba at run)
from clusterloom.units import BITS_PER_BYTE

I64 = NDArray[np.int64]
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def splitmix64(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """The splitmix64 finaliser: a fast, well-mixed 64-bit hash (vectorized)."""
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


@dataclass(frozen=True, eq=False)
class Router:
    """Lookup tables of one topology for vectorized path choice."""

    topology: Topology
    host_link: I64  # (hosts, ports) physical link of each host port
    up: I64  # (switches, max uplinks) physical uplinks by port order, -1 padded
    down: I64  # (switches, max lower neighbours, parallel) links to each lower neighbour slot
    lower_slot: I64  # per node: its slot index under its upper switches
    max_hops: int

    @property
    def n_directed(self) -> int:
        return 2 * self.topology.n_links

    def capacity_bytes(self) -> NDArray[np.float64]:
        """Bytes per second of every directed link."""
        return np.repeat(self.topology.link_capacity_bps.astype(np.float64) / BITS_PER_BYTE, 2)


def build_router(t: Topology) -> Router:
    """Index a topology's links for path lookups."""
    p = t.plan
    ports = p.ports_per_host * p.planes
    host_links = np.flatnonzero(t.link_tier == 1)
    host_link = np.full((p.hosts, ports), -1, dtype=np.int64)
    host_link[t.link_src[host_links], t.link_src_port[host_links]] = host_links

    n = t.n_nodes
    above = np.flatnonzero(t.link_tier >= 2)
    # uplinks of each switch by port order
    up_count = np.bincount(t.link_src[above], minlength=n)
    width = int(up_count.max(initial=0))
    order = above[np.lexsort((t.link_src_port[above], t.link_src[above]))]
    up = np.full((n, max(width, 1)), -1, dtype=np.int64)
    first = np.concatenate([[0], np.cumsum(up_count)[:-1]])
    rank = np.arange(order.size) - first[t.link_src[order]]
    up[t.link_src[order], rank] = order

    # lower neighbours of each upper switch: slot of the lower switch = its index within its
    # pod (leaf under a spine) or its pod (spine under a core); parallel links by port order
    lower_slot = np.full(n, -1, dtype=np.int64)
    leaves = t.node_role == Role.LEAF
    spines = t.node_role == Role.SPINE
    lower_slot[leaves] = t.node_index[leaves] % p.pod_leaves
    lower_slot[spines] = t.node_index[spines] // max(p.spines_per_pod, 1)
    key = t.link_dst[above].astype(np.int64) * n + lower_slot[t.link_src[above]]
    order = above[np.lexsort((t.link_dst_port[above], key))]
    key_o = t.link_dst[order].astype(np.int64) * n + lower_slot[t.link_src[order]]
    starts = np.flatnonzero(np.concatenate([[True], key_o[1:] != key_o[:-1]]))
    run = np.arange(order.size) - np.repeat(starts, np.diff(np.concatenate([starts, [order.size]])))
    par = int(run.max(initial=0)) + 1
    slots = int(lower_slot.max(initial=0)) + 1
    down = np.full((n, slots, par), -1, dtype=np.int64)
    down[t.link_dst[order], lower_slot[t.link_src[order]], run] = order
    return Router(t, host_link, up, down, lower_slot, 2 * p.tiers)


_NONE = np.zeros(0, dtype=np.int64)
_NONE8 = np.zeros((0, 0, 0), dtype=np.int8)

#: the most bytes the fast path's tables of which hops are whole may take (else no fast path)
FAST_TABLE_BYTES = 1 << 24


@dataclass(frozen=True, eq=False)
class RouteView:
    """What :func:`route` derives from one state of the links, kept for many calls (the packet
    engine asks for paths one at a time)."""

    router: Router
    live: NDArray[np.bool_]
    up_any: NDArray[np.bool_]  # per switch: a live uplink at all
    down_any: NDArray[np.bool_]  # per (switch, lower slot): a live link down to it
    link_src: I64
    link_dst: I64
    node_pod: I64
    degraded: bool  # a 3-tier fabric with a dead link: uplinks must still reach the target
    # every link live (and the tables padded at their ends): a hop whose candidates are all
    # valid picks ``cands[h % count]``, as the general pick does; which hops have all their
    # candidates valid is found once per key and kept (-1 unknown, 0 no, 1 yes) per switch
    # with uplinks (``upper``), for its uplinks towards a leaf's slot in its pod (``same``),
    # towards another pod (``cross``) and, from a spine, towards a (pod, slot) (``far``)
    fast: bool = False
    n_up: I64 = field(default_factory=lambda: _NONE)
    n_down: I64 = field(default_factory=lambda: _NONE)
    upper: I64 = field(default_factory=lambda: _NONE)
    same: NDArray[np.int8] = field(default_factory=lambda: _NONE8)
    cross: NDArray[np.int8] = field(default_factory=lambda: _NONE8)
    far: NDArray[np.int8] = field(default_factory=lambda: _NONE8)


def route_view(r: Router, alive: NDArray[np.bool_] | None = None) -> RouteView:
    """The routing view of ``r`` with ``alive`` marking the usable physical links (default:
    all)."""
    t = r.topology
    live = np.ones(t.n_links, dtype=bool) if alive is None else np.asarray(alive, dtype=bool)
    up_any: NDArray[np.bool_] = np.asarray(((r.up >= 0) & live[np.maximum(r.up, 0)]).any(axis=1))
    down_any: NDArray[np.bool_] = np.asarray(
        ((r.down >= 0) & live[np.maximum(r.down, 0)]).any(axis=2)
    )
    view = RouteView(
        r,
        live,
        up_any,
        down_any,
        t.link_src.astype(np.int64),
        t.link_dst.astype(np.int64),
        t.node_pod.astype(np.int64),
        t.plan.tiers == 3 and not bool(live.all()),
    )
    up_ok, down_ok = r.up >= 0, r.down >= 0
    # padded at the ends only: the k-th existing candidate is column k
    padded = bool((up_ok[:, 1:] <= up_ok[:, :-1]).all()) and bool(
        (down_ok[:, :, 1:] <= down_ok[:, :, :-1]).all()
    )
    has_up = up_ok.any(axis=1)
    n_upper = int(has_up.sum())
    pods = int(t.node_pod.max(initial=0)) + 1
    slots = int(r.lower_slot.max(initial=0)) + 1
    if not (live.all() and padded) or n_upper * (pods + 1) * slots > FAST_TABLE_BYTES:
        return view
    upper = np.full(t.n_nodes, -1, dtype=np.int64)
    upper[has_up] = np.arange(n_upper)
    return dataclasses.replace(
        view,
        fast=True,
        n_up=up_ok.sum(axis=1).astype(np.int64),
        n_down=down_ok.sum(axis=2).astype(np.int64),
        upper=upper,
        same=np.full((n_upper, slots, 1), -1, dtype=np.int8),
        cross=np.full((n_upper, 1, 1), -1, dtype=np.int8),
        far=np.full((n_upper, pods, slots), -1, dtype=np.int8),
    )


def route(
    r: Router,
    src: I64,
    dst: I64,
    port: I64,
    ev: I64,
    *,
    seed: int = 0,
    alive: NDArray[np.bool_] | None = None,
    view: RouteView | None = None,
) -> I64:
    """Directed links of the path of each flow (rows, ``-1`` padded to ``max_hops`` columns).

    ``port`` is the host port (``plane * ports_per_host + j``) used at both ends; ``alive``
    marks usable physical links (default: all), or ``view`` gives them prepared
    (:func:`route_view`). Compiled, one row at a time.
    """
    v = view if view is not None else route_view(r, alive)
    out = np.full((np.shape(src)[0], r.max_hops), -1, dtype=np.int64)
    src, dst = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
    port, ev = np.asarray(port, dtype=np.int64), np.asarray(ev, dtype=np.int64)
    s_near, s_far = np.uint64(seed & _MASK64), np.uint64((seed ^ 0x5EED) & _MASK64)
    rows: I64 | None = None  # the rows the general pass routes (None: all)
    if v.fast:  # every link live: the rows whose hops are all whole, directly
        done = np.zeros(out.shape[0], dtype=np.bool_)
        _route_fast(
            r.host_link, r.up, r.down, r.lower_slot, v.link_src, v.link_dst, v.node_pod,
            r.topology.plan.tiers, src, dst, port, ev, s_near, s_far, v.up_any, v.down_any,
            v.n_up, v.n_down, v.upper, v.same, v.cross, v.far, out, done,
        )  # fmt: skip
        if done.all():
            return out
        rows = np.flatnonzero(~done)
        src, dst, port, ev = src[rows], dst[rows], port[rows], ev[rows]
    part = out if rows is None else np.full((rows.size, r.max_hops), -1, dtype=np.int64)
    _route_rows(
        r.host_link, r.up, r.down, r.lower_slot, v.link_src, v.link_dst, v.node_pod,
        r.topology.plan.tiers, src, dst, port, ev, s_near, s_far, v.live, v.up_any,
        v.down_any, v.degraded, part,
    )  # fmt: skip
    if rows is not None:
        out[rows] = part
    return out


_MASK64 = 0xFFFFFFFFFFFFFFFF


@njit(cache=True)
def _mix(x: Any) -> Any:
    """splitmix64 of one uint64 (the same function as :func:`splitmix64`)."""
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def _pick(cands: Any, valid: Any, h: Any) -> int:
    """The (h mod live)-th valid candidate, -1 if none is valid (as ECMP picks among the live
    next hops)."""
    live = 0
    for k in range(cands.shape[0]):
        if valid[k]:
            live += 1
    if live == 0:
        return -1
    choice = h % np.uint64(live)
    seen = np.uint64(0)
    for k in range(cands.shape[0]):
        if valid[k]:
            if seen == choice:
                return int(cands[k])
            seen += np.uint64(1)
    return -1


@njit(cache=True)
def _mark_live(cands: Any, live: Any, valid: Any) -> None:
    """``valid[k]``: candidate link ``k`` exists and is live."""
    for k in range(cands.shape[0]):
        valid[k] = cands[k] >= 0 and live[cands[k]]


@njit(cache=True)
def _route_rows(
    host_link: Any,
    up: Any,
    down: Any,
    lower_slot: Any,
    link_src: Any,
    link_dst: Any,
    node_pod: Any,
    tiers: int,
    src: Any,
    dst: Any,
    port: Any,
    ev: Any,
    seed: Any,
    seed_far: Any,
    live: Any,
    up_any: Any,
    down_any: Any,
    damaged: bool,
    out: Any,
) -> None:
    """One path per row into ``out`` (see :func:`route`). The hash of a hop is
    ``splitmix64(ev ^ seed ^ switch * golden)``; the spine's uplink (3 tiers) uses a second
    seed, so that it does not repeat the leaf's choice."""
    golden = np.uint64(0x9E3779B97F4A7C15)
    n_up = up.shape[1]
    n_par = down.shape[2]
    valid = np.zeros(max(n_up, n_par), dtype=np.bool_)
    for i in range(src.shape[0]):
        a = host_link[src[i], port[i]]
        b = host_link[dst[i], port[i]]
        la = link_dst[a]
        lb = link_dst[b]
        e = np.uint64(ev[i])
        out[i, 0] = 2 * a
        ok = live[a] and live[b]
        if la == lb:
            out[i, 1] = 2 * b + 1
        else:
            pb = node_pod[lb]
            slot_b = lower_slot[lb]
            cross = tiers == 3 and node_pod[la] != pb
            # leaf uplink: live, and its spine reaches leaf_b (same pod) or pod_b (other pod)
            for k in range(n_up):
                u = up[la, k]
                valid[k] = False
                if u < 0 or not live[u]:
                    continue
                spine = link_dst[u]
                if not cross:
                    valid[k] = down_any[spine, slot_b]
                elif not damaged:
                    valid[k] = up_any[spine]
                else:  # through a core whose link to pod_b's spine is live and reaches leaf_b
                    for m in range(n_up):
                        cu = up[spine, m]
                        if cu < 0 or not live[cu]:
                            continue
                        core = link_dst[cu]
                        first = down[core, pb, 0]
                        far = link_src[first] if first >= 0 else 0
                        if down_any[core, pb] and down_any[far, slot_b]:
                            valid[k] = True
                            break
            leaf_up = _pick(up[la], valid[:n_up], _mix(e ^ seed ^ (np.uint64(la) * golden)))
            if leaf_up < 0:
                ok = False
            else:
                s1 = link_dst[leaf_up]
                out[i, 1] = 2 * leaf_up
                if not cross:  # spine -> leaf_b over a live parallel link
                    _mark_live(down[s1, slot_b], live, valid)
                    h = _mix(e ^ seed ^ (np.uint64(s1) * golden))
                    down1 = _pick(down[s1, slot_b], valid[:n_par], h)
                    out[i, 2] = 2 * down1 + 1
                    out[i, 3] = 2 * b + 1
                    ok = ok and down1 >= 0
                else:  # spine -> core -> the same-index spine of pod_b -> leaf_b
                    for k in range(n_up):
                        su = up[s1, k]
                        valid[k] = False
                        if su < 0 or not live[su]:
                            continue
                        core = link_dst[su]
                        first = down[core, pb, 0]
                        far = link_src[first] if first >= 0 else 0
                        valid[k] = down_any[core, pb] and down_any[far, slot_b]
                    h = _mix(e ^ seed_far ^ (np.uint64(s1) * golden))
                    spine_up = _pick(up[s1], valid[:n_up], h)
                    core_down = -1
                    spine_down = -1
                    if spine_up >= 0:
                        c = link_dst[spine_up]
                        _mark_live(down[c, pb], live, valid)
                        h = _mix(e ^ seed ^ (np.uint64(c) * golden))
                        core_down = _pick(down[c, pb], valid[:n_par], h)
                    if core_down >= 0:
                        s2 = link_src[core_down]
                        _mark_live(down[s2, slot_b], live, valid)
                        h = _mix(e ^ seed ^ (np.uint64(s2) * golden))
                        spine_down = _pick(down[s2, slot_b], valid[:n_par], h)
                    out[i, 2] = 2 * spine_up
                    out[i, 3] = 2 * core_down + 1
                    out[i, 4] = 2 * spine_down + 1
                    out[i, 5] = 2 * b + 1
                    ok = ok and spine_down >= 0
        if not ok:
            for k in range(out.shape[1]):
                out[i, k] = -1


@njit(cache=True)
def _whole(memo: Any, key0: int, key1: int, key2: int) -> int:
    """The memo's value at the key (-1: not yet known)."""
    return int(memo[key0, key1, key2])


@njit(cache=True)
def _route_fast(
    host_link: Any,
    up: Any,
    down: Any,
    lower_slot: Any,
    link_src: Any,
    link_dst: Any,
    node_pod: Any,
    tiers: int,
    src: Any,
    dst: Any,
    port: Any,
    ev: Any,
    seed: Any,
    seed_far: Any,
    up_any: Any,
    down_any: Any,
    n_up: Any,
    n_down: Any,
    upper: Any,
    same: Any,
    cross: Any,
    far: Any,
    out: Any,
    done: Any,
) -> None:
    """The rows of :func:`_route_rows` on a fabric whose links are all live, where every
    hop has all its candidates valid (then the general pick, the ``h mod live``-th valid
    candidate, is ``cands[h % count]``): the same links, without testing each candidate.
    Which hops have all their candidates valid is found once per key (the switch, the
    target's pod and slot) and kept in ``same``/``cross``/``far``; a row with a hop that
    has not, or with no candidate, is left to the general pass (``done`` False)."""
    golden = np.uint64(0x9E3779B97F4A7C15)
    for i in range(src.shape[0]):
        a = host_link[src[i], port[i]]
        b = host_link[dst[i], port[i]]
        la = link_dst[a]
        lb = link_dst[b]
        e = np.uint64(ev[i])
        if la == lb:
            out[i, 0] = 2 * a
            out[i, 1] = 2 * b + 1
            done[i] = True
            continue
        pb = node_pod[lb]
        slot_b = lower_slot[lb]
        is_cross = tiers == 3 and node_pod[la] != pb
        ua = upper[la]
        nu = n_up[la]
        if ua < 0 or nu == 0:
            continue
        # are all of la's uplinks valid towards the target?
        if is_cross:
            ok = _whole(cross, ua, 0, 0)
            if ok < 0:
                ok = 1
                for k in range(nu):
                    if not up_any[link_dst[up[la, k]]]:
                        ok = 0
                cross[ua, 0, 0] = ok
        else:
            ok = _whole(same, ua, slot_b, 0)
            if ok < 0:
                ok = 1
                for k in range(nu):
                    if not down_any[link_dst[up[la, k]], slot_b]:
                        ok = 0
                same[ua, slot_b, 0] = ok
        if ok == 0:
            continue
        h = _mix(e ^ seed ^ (np.uint64(la) * golden))
        leaf_up = up[la, h % np.uint64(nu)]
        s1 = link_dst[leaf_up]
        if not is_cross:  # spine -> leaf_b over a parallel link (all live)
            nd = n_down[s1, slot_b]
            if nd == 0:
                continue
            h = _mix(e ^ seed ^ (np.uint64(s1) * golden))
            down1 = down[s1, slot_b, h % np.uint64(nd)]
            out[i, 0] = 2 * a
            out[i, 1] = 2 * leaf_up
            out[i, 2] = 2 * down1 + 1
            out[i, 3] = 2 * b + 1
            done[i] = True
            continue
        us = upper[s1]
        ns = n_up[s1]
        if us < 0 or ns == 0:
            continue
        ok = _whole(far, us, pb, slot_b)
        if ok < 0:
            ok = 1
            for k in range(ns):
                core = link_dst[up[s1, k]]
                first = down[core, pb, 0]
                other = link_src[first] if first >= 0 else 0
                if not (down_any[core, pb] and down_any[other, slot_b]):
                    ok = 0
            far[us, pb, slot_b] = ok
        if ok == 0:
            continue
        h = _mix(e ^ seed_far ^ (np.uint64(s1) * golden))
        spine_up = up[s1, h % np.uint64(ns)]
        c = link_dst[spine_up]
        nc = n_down[c, pb]
        if nc == 0:
            continue
        h = _mix(e ^ seed ^ (np.uint64(c) * golden))
        core_down = down[c, pb, h % np.uint64(nc)]
        s2 = link_src[core_down]
        n2 = n_down[s2, slot_b]
        if n2 == 0:
            continue
        h = _mix(e ^ seed ^ (np.uint64(s2) * golden))
        spine_down = down[s2, slot_b, h % np.uint64(n2)]
        out[i, 0] = 2 * a
        out[i, 1] = 2 * leaf_up
        out[i, 2] = 2 * spine_up
        out[i, 3] = 2 * core_down + 1
        out[i, 4] = 2 * spine_down + 1
        out[i, 5] = 2 * b + 1
        done[i] = True


def path_count(r: Router, src: int, dst: int, port: int) -> int:
    """Distinct up-down link paths from ``src`` to ``dst`` through host port ``port`` (parallel
    links count separately), for tests and reports."""
    t = r.topology
    p = t.plan
    la = int(t.link_dst[r.host_link[src, port]])
    lb = int(t.link_dst[r.host_link[dst, port]])
    if la == lb:
        return 1
    u1 = p.tier("leaf").up
    par1 = u1 // p.spines_per_pod
    if p.tiers == 2 or t.node_pod[la] == t.node_pod[lb]:
        return u1 * par1
    u2 = p.tier("spine").up
    par2 = u2 // p.cores_per_group
    return u1 * u2 * par2 * par1


def connection_hash(src: I64, dst: I64, salt: I64, seed: int) -> I64:
    """A 63-bit hash of a connection (source, destination and a per-connection salt)."""
    key = (src.astype(np.uint64) << np.uint64(40)) ^ (dst.astype(np.uint64) << np.uint64(16))
    mixed = splitmix64(key ^ splitmix64(salt.astype(np.uint64) ^ np.uint64(seed)))
    return (mixed >> np.uint64(1)).astype(np.int64)
