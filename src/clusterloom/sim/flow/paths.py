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

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from clusterloom.fabric.topology import Role, Topology

I64 = NDArray[np.int64]
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def splitmix64(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """The splitmix64 finaliser: a fast, well-mixed 64-bit hash (vectorized)."""
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def hop_hash(ev: I64, switch: I64, seed: int) -> NDArray[np.uint64]:
    with np.errstate(over="ignore"):
        mixed = (
            ev.astype(np.uint64)
            ^ np.uint64(seed & 0xFFFFFFFFFFFFFFFF)
            ^ (switch.astype(np.uint64) * _GOLDEN)
        )
    return splitmix64(mixed)


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
        return np.repeat(self.topology.link_capacity_bps.astype(np.float64) / 8.0, 2)


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


def _pick(candidates: I64, valid: NDArray[np.bool_], h: NDArray[np.uint64]) -> I64:
    """Per row, the (h mod live)-th valid candidate; -1 where none is valid."""
    rows, width = candidates.shape
    if valid.all():  # a healthy fabric: the (h mod width)-th candidate, no scan
        col = (h % np.uint64(max(width, 1))).astype(np.int64)
        return candidates[np.arange(rows), col]
    live = valid.sum(axis=1)
    choice = np.where(live > 0, (h % np.maximum(live, 1).astype(np.uint64)).astype(np.int64), -1)
    csum = np.cumsum(valid, axis=1) - 1
    hit = valid & (csum == choice[:, None])
    col = np.argmax(hit, axis=1)
    out = candidates[np.arange(candidates.shape[0]), col]
    return np.where(live > 0, out, -1)


#: Rows routed at once, and the most (row x candidate) elements a temporary may hold.
ROUTE_CHUNK = 65_536
ROUTE_ELEMENTS = 1 << 22


def route(
    r: Router,
    src: I64,
    dst: I64,
    port: I64,
    ev: I64,
    *,
    seed: int = 0,
    alive: NDArray[np.bool_] | None = None,
) -> I64:
    """Directed links of the path of each flow (rows, ``-1`` padded to ``max_hops`` columns).

    ``port`` is the host port (``plane * ports_per_host + j``) used at both ends; ``alive``
    marks usable physical links (default: all).
    """
    t = r.topology
    live = np.ones(t.n_links, dtype=bool) if alive is None else alive
    # per switch: a live uplink at all; per (switch, lower slot): a live link down to it
    up_any: NDArray[np.bool_] = np.asarray(((r.up >= 0) & live[np.maximum(r.up, 0)]).any(axis=1))
    down_any: NDArray[np.bool_] = np.asarray(
        ((r.down >= 0) & live[np.maximum(r.down, 0)]).any(axis=2)
    )
    out = np.full((src.shape[0], r.max_hops), -1, dtype=np.int64)
    # the (rows x uplinks x uplinks) reachability check runs only on a damaged 3-tier fabric
    fan = r.up.shape[1] ** 2 if t.plan.tiers == 3 and not live.all() else r.up.shape[1]
    chunk = max(1, min(ROUTE_CHUNK, ROUTE_ELEMENTS // max(fan, 1)))
    for lo in range(0, src.shape[0], chunk):
        sl = slice(lo, lo + chunk)
        out[sl] = _route(r, src[sl], dst[sl], port[sl], ev[sl], seed, live, up_any, down_any)
    return out


def _route(
    r: Router,
    src: I64,
    dst: I64,
    port: I64,
    ev: I64,
    seed: int,
    live: NDArray[np.bool_],
    up_any: NDArray[np.bool_],
    down_any: NDArray[np.bool_],
) -> I64:
    t = r.topology
    p = t.plan
    n = src.shape[0]
    out = np.full((n, r.max_hops), -1, dtype=np.int64)
    a_link = r.host_link[src, port]
    b_link = r.host_link[dst, port]
    leaf_a, leaf_b = t.link_dst[a_link].astype(np.int64), t.link_dst[b_link].astype(np.int64)
    ok = live[a_link] & live[b_link]
    out[:, 0] = 2 * a_link
    same_leaf = leaf_a == leaf_b
    pod_a, pod_b = t.node_pod[leaf_a], t.node_pod[leaf_b]
    slot_b = r.lower_slot[leaf_b]
    cross_pod = (p.tiers == 3) & (pod_a != pod_b)

    # leaf uplink: live, and its spine reaches leaf_b (same pod) or has a live uplink (other pod)
    ups = r.up[leaf_a]  # (n, u1)
    spine = np.where(ups >= 0, t.link_dst[np.maximum(ups, 0)], 0).astype(np.int64)
    if p.tiers == 3 and not live.all():
        # another pod is reached only through a core of the spine's group whose link to pod_b's
        # spine is live and whose spine there reaches leaf_b (always, on a healthy fabric)
        cand_up = r.up[spine]  # (n, u1, u2)
        cand_core = np.where(cand_up >= 0, t.link_dst[np.maximum(cand_up, 0)], 0)
        first = r.down[cand_core, pod_b[:, None, None], 0]
        cand_far = np.where(first >= 0, t.link_src[np.maximum(first, 0)], 0)
        far_reach = (
            (cand_up >= 0)
            & live[np.maximum(cand_up, 0)]
            & down_any[cand_core, pod_b[:, None, None]]
            & down_any[cand_far, slot_b[:, None, None]]
        ).any(axis=2)
    else:
        far_reach = up_any[spine]
    reach = np.where(cross_pod[:, None], far_reach, down_any[spine, slot_b[:, None]])
    valid = (ups >= 0) & live[np.maximum(ups, 0)] & reach
    leaf_up = _pick(ups, valid, hop_hash(ev, leaf_a, seed))
    s1 = np.where(leaf_up >= 0, t.link_dst[np.maximum(leaf_up, 0)], 0).astype(np.int64)

    # same pod (or 2 tiers): spine -> leaf_b over a live parallel link
    par_links = r.down[s1, slot_b]  # (n, par)
    par_ok = (par_links >= 0) & live[np.maximum(par_links, 0)]
    down1 = _pick(par_links, par_ok, hop_hash(ev, s1, seed))

    # other pod: spine -> core -> the same-index spine of pod_b -> leaf_b
    if p.tiers == 3:
        sp_ups = r.up[s1]  # (n, u2)
        core = np.where(sp_ups >= 0, t.link_dst[np.maximum(sp_ups, 0)], 0).astype(np.int64)
        first_down = r.down[core, pod_b[:, None], 0]  # a link from the core to pod_b's spine
        far_spine = np.where(first_down >= 0, t.link_src[np.maximum(first_down, 0)], 0)
        valid2 = (
            (sp_ups >= 0)
            & live[np.maximum(sp_ups, 0)]
            & down_any[core, pod_b[:, None]]
            & down_any[far_spine.astype(np.int64), slot_b[:, None]]
        )
        spine_up = _pick(sp_ups, valid2, hop_hash(ev, s1, seed ^ 0x5EED))
        c = np.where(spine_up >= 0, t.link_dst[np.maximum(spine_up, 0)], 0).astype(np.int64)
        cd = r.down[c, pod_b]
        core_down = _pick(cd, (cd >= 0) & live[np.maximum(cd, 0)], hop_hash(ev, c, seed))
        s2 = np.where(core_down >= 0, t.link_src[np.maximum(core_down, 0)], 0).astype(np.int64)
        sd = r.down[s2, slot_b]
        spine_down = _pick(sd, (sd >= 0) & live[np.maximum(sd, 0)], hop_hash(ev, s2, seed))
        far = cross_pod & ~same_leaf
        out[far, 1] = 2 * leaf_up[far]
        out[far, 2] = 2 * spine_up[far]
        out[far, 3] = 2 * core_down[far] + 1
        out[far, 4] = 2 * spine_down[far] + 1
        out[far, 5] = 2 * b_link[far] + 1
        ok &= ~far | ((leaf_up >= 0) & (spine_up >= 0) & (core_down >= 0) & (spine_down >= 0))
    near = ~cross_pod & ~same_leaf
    out[near, 1] = 2 * leaf_up[near]
    out[near, 2] = 2 * down1[near] + 1
    out[near, 3] = 2 * b_link[near] + 1
    ok &= ~near | ((leaf_up >= 0) & (down1 >= 0))
    out[same_leaf, 1] = 2 * b_link[same_leaf] + 1
    out[~ok] = -1
    return out


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
