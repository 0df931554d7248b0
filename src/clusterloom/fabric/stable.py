"""Stable generation: a grown fabric that keeps the link ends already installed.

:func:`generate` stripes every switch's uplinks from scratch, so when a spine layer grows
(8 -> 16 spines) every leaf's stripe changes and almost every uplink lands on another spine
port. :func:`stabilize` takes the generated topology as the *shape* (how many links each
lower/upper switch pair needs) and realizes it around what is installed:

1. ends are matched by identity, never by array position: (role, plane, index in its tier and
   plane, port), the identity the device and interface names encode; cores keep theirs when
   the cores per group grow (in each group the installed cores first, the new ones numbered
   after every installed core; generated cores are numbered group-major and would rename
   installed ones);
2. host-leaf links are a function of the host and its scalable unit, so they are kept as
   generated; an installed one the new shape lacks is a move;
3. on each switch tier, every pair keeps up to its new link count of the installed links on it
   (lowest lower port first), with their ports; the pair's remaining links take the lowest
   free uplink port of the lower switch and the lowest free downlink port of the upper one.

Every installed link that is not kept is a :class:`Move` with its reason (the stripe of a pair
shrank, a switch or a port no longer exists), so the design says exactly what must be
re-patched rather than rewiring silently.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.fabric.topology import ROLE_NAMES, Role, Topology

__all__ = ["InstalledLinks", "Move", "Stabilized", "installed_links_of", "stabilize"]

_ROLES = {Role.LEAF: "leaf", Role.SPINE: "spine", Role.CORE: "core"}


@dataclass(frozen=True, eq=False)
class InstalledLinks:
    """The installed links of one fabric by identity, lower end ``a``. A host end has plane -1
    and its host index; a switch end its plane and index within its tier and plane."""

    fabric: str
    tier: NDArray[np.int8]
    a_role: NDArray[np.int8]
    a_plane: NDArray[np.int16]
    a_index: NDArray[np.int64]
    a_port: NDArray[np.int64]
    b_role: NDArray[np.int8]
    b_plane: NDArray[np.int16]
    b_index: NDArray[np.int64]
    b_port: NDArray[np.int64]

    @property
    def n_links(self) -> int:
        return int(self.tier.shape[0])


@dataclass(frozen=True)
class Move:
    """An installed link the grown fabric cannot keep, and why."""

    fabric: str
    tier: int
    a: str  #: lower end, ``role plane/index port``
    b: str
    reason: str


@dataclass(frozen=True, eq=False)
class Stabilized:
    """The grown topology, the installed links it keeps and those it must move."""

    topology: Topology
    kept: int
    moves: tuple[Move, ...]
    #: links the shape forces to move (the lower bound): installed links over each pair's new
    #: count, summed, plus links whose switch or port is gone
    forced: int


def installed_links_of(topology: Topology) -> InstalledLinks:
    """The identities of every link of ``topology`` (what a run installs)."""
    t = topology
    s, d = t.link_src, t.link_dst

    def plane(v: NDArray[np.int32]) -> NDArray[np.int16]:
        return t.node_plane[v].astype(np.int16)

    return InstalledLinks(
        t.plan.fabric,
        t.link_tier.copy(),
        t.node_role[s].copy(),
        plane(s),
        t.node_index[s].astype(np.int64),
        t.link_src_port.astype(np.int64),
        t.node_role[d].copy(),
        plane(d),
        t.node_index[d].astype(np.int64),
        t.link_dst_port.astype(np.int64),
    )


def _end(role: int, plane: int, index: int, port: int) -> str:
    name = ROLE_NAMES[Role(role)]
    return (
        f"{name} {index} port {port}"
        if role == Role.HOST
        else f"{name} p{plane}/{index} port {port}"
    )


def _node_ids(
    t: Topology, role: NDArray[np.int8], plane: NDArray[np.int16], index: NDArray[np.int64]
) -> NDArray[np.int64]:
    """Node ids in ``t`` of identities (-1 where the node does not exist there)."""
    p = t.plan
    out = np.full(role.shape[0], -1, dtype=np.int64)
    host = role == Role.HOST
    out[host] = np.where(index[host] < p.hosts, index[host], -1)
    tiers = {Role.LEAF: (0, p.leaves), Role.SPINE: (p.leaves, p.spines)}
    tiers[Role.CORE] = (p.leaves + p.spines, p.cores)
    for r, (offset, n) in tiers.items():
        m = (role == r) & (plane >= 0) & (plane < p.planes) & (index < n)
        # t.switch_id, for every identity at once
        out[m] = p.hosts + plane[m].astype(np.int64) * t.plane_block + offset + index[m]
    return out


def _port_ranges(t: Topology) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Per switch role (rows by role value): ``[start, stop)`` of the uplink ports and of the
    downlink ports a link may use; empty for a role without a switch tier."""
    n = max(int(r) for r in Role) + 1
    up = np.zeros((n, 2), dtype=np.int64)
    down = np.zeros((n, 2), dtype=np.int64)
    for st in t.plan.switch_tiers:
        r = {"leaf": Role.LEAF, "spine": Role.SPINE, "core": Role.CORE}[st.role]
        up[r] = (st.down, st.down + st.up)
        # a top tier has no uplinks: every port of its radix may take a downlink
        down[r] = (0, st.down) if st.up else (0, st.radix)
    return up, down


def _within(ranges: NDArray[np.int64], role: NDArray[np.int8], port: NDArray[np.int64]) -> Any:
    return (ranges[role, 0] <= port) & (port < ranges[role, 1])


def _core_identities(t: Topology, installed: InstalledLinks) -> NDArray[np.int64]:
    """Per plane, the identity (index in its tier and plane) of each generated core: in each
    core group (the cores above spine ``j`` of every pod) the installed cores of that group
    first, lowest index first, then the group's other cores numbered after every installed
    core (the lowest identities no installed core keeps). Shape (planes, cores)."""
    p = t.plan
    ident = np.tile(np.arange(p.cores, dtype=np.int64), (p.planes, 1))
    if p.tiers != 3 or p.cores == 0:
        return ident
    per = max(p.cores_per_group, 1)
    up = (installed.tier == 3) & (installed.b_role == Role.CORE) & (installed.b_index < p.cores)
    for q in range(p.planes):
        m = up & (installed.b_plane == q)
        if not m.any():
            continue
        group = installed.a_index[m] % p.spines_per_pod
        # each installed core's group: that of its lowest spine (one group per core when built)
        pairs = np.unique(np.stack([installed.b_index[m], group], axis=1), axis=0)
        core, first = np.unique(pairs[:, 0], return_index=True)
        grp = pairs[first, 1]
        row = np.full(p.cores, -1, dtype=np.int64)
        for g in np.unique(grp[grp < p.cores // per]).tolist():
            mine = core[grp == g][:per]  # a group holds at most its new core count
            row[g * per : g * per + mine.shape[0]] = mine
        row[row < 0] = np.setdiff1d(np.arange(p.cores), row[row >= 0])
        ident[q] = row
    return ident


def _renumber_cores(t: Topology, ident: NDArray[np.int64]) -> Topology:
    """``t`` with generated core ``c`` of plane ``q`` renamed to identity ``ident[q, c]``: its
    links and its group move with it; node ids stay ``switch_id`` of their identity."""
    p = t.plan
    if (ident == np.arange(p.cores)).all():
        return t
    node = np.arange(t.n_nodes, dtype=np.int64)
    for q in range(p.planes):
        base = t.switch_id(q, Role.CORE, 0)
        node[base : base + p.cores] = base + ident[q]
    pod = t.node_pod.copy()
    pod[node] = t.node_pod
    src = node[t.link_src].astype(np.int32)
    dst = node[t.link_dst].astype(np.int32)
    for x in (pod, src, dst):
        x.setflags(write=False)
    return replace(t, node_pod=pod, link_src=src, link_dst=dst)


#: why an installed link is not kept (-1: kept)
_GONE, _HOST, _PORT, _STRIPE, _TWICE = range(5)
_REASONS = {
    _GONE: "a switch or host of this link is not in the grown fabric",
    _HOST: "the grown fabric wires this host port to another leaf port",
    _PORT: "this port is no longer an uplink/downlink port in the grown fabric",
    _TWICE: "this port is referenced twice in the installed baseline",
}


def stabilize(new: Topology, installed: InstalledLinks) -> Stabilized:
    """``new`` realized around ``installed`` (see the module): the installed links in order of
    (tier, lower index, upper index, lower port), each kept or a move, all at once in numpy."""
    t = _renumber_cores(new, _core_identities(new, installed))
    i = installed
    order = np.lexsort((i.a_port, i.b_index, i.a_index, i.tier))
    a = _node_ids(t, i.a_role[order], i.a_plane[order], i.a_index[order])
    b = _node_ids(t, i.b_role[order], i.b_plane[order], i.b_index[order])
    tier, ap, bp = i.tier[order].astype(np.int64), i.a_port[order], i.b_port[order]
    pairs, want = _shape(t)
    up, down = _port_ranges(t)
    role = t.node_role

    reason = np.full(order.shape[0], -1, dtype=np.int8)
    exists = (a >= 0) & (b >= 0)
    reason[~exists] = _GONE
    host = np.flatnonzero(exists & (tier == 1))
    reason[host[~_host_links_kept(t, a[host], ap[host], b[host], bp[host])]] = _HOST
    sw = np.flatnonzero(exists & (tier >= 2))
    ok = _within(up, role[a[sw]], ap[sw]) & _within(down, role[b[sw]], bp[sw])
    reason[sw[~ok]] = _PORT
    # the installed links each pair could keep: ends that exist, ports of the right kind
    el = sw[ok]
    key = _pair_key(t, tier[el], a[el], b[el])
    w = _lookup(pairs, want, key)
    reason[el] = _keep(key, w, a[el], ap[el], b[el], bp[el])
    had_keys, had = np.unique(key, return_counts=True)
    over = np.maximum(had - _lookup(pairs, want, had_keys), 0)
    gone = int(np.isin(reason, (_GONE, _HOST, _PORT, _TWICE)).sum())
    had_of = dict(zip(had_keys.tolist(), had.tolist(), strict=True))
    moves = []
    for j in np.flatnonzero(reason >= 0).tolist():
        o = int(order[j])
        if reason[j] == _STRIPE:
            k = int(_pair_key(t, tier[j : j + 1], a[j : j + 1], b[j : j + 1])[0])
            lo, hi = int(role[a[j]]), int(role[b[j]])
            n_new = int(_lookup(pairs, want, np.array([k]))[0])
            why = (
                f"the stripe of this {_ROLES[Role(lo)]}-{_ROLES[Role(hi)]} pair goes from "
                f"{had_of[k]} to {n_new} links (the upper layer grows to "
                f"{_upper_count(t, hi)} switches)"
            )
        else:
            why = _REASONS[int(reason[j])]
        ae = _end(int(i.a_role[o]), int(i.a_plane[o]), int(i.a_index[o]), int(i.a_port[o]))
        be = _end(int(i.b_role[o]), int(i.b_plane[o]), int(i.b_index[o]), int(i.b_port[o]))
        moves.append(Move(i.fabric, int(tier[j]), ae, be, why))
    keep = el[reason[el] < 0]
    rows = (tier[keep], a[keep], ap[keep], b[keep], bp[keep])
    topology = _realize(t, pairs, want, rows, up, down)
    kept = int((reason < 0).sum())
    return Stabilized(topology, kept, tuple(moves), gone + int(over.sum()))


def _pair_key(
    t: Topology, tier: NDArray[np.int64], lo: NDArray[np.int64], hi: NDArray[np.int64]
) -> NDArray[np.int64]:
    """One integer per (tier, lower node, upper node) pair, ordered as the triples are."""
    n = np.int64(t.n_nodes)
    return (tier.astype(np.int64) * n + lo) * n + hi


def _shape(t: Topology) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """The generated shape: every switch pair's key (sorted) and its link count."""
    sw = t.link_tier >= 2
    src, dst = t.link_src[sw].astype(np.int64), t.link_dst[sw].astype(np.int64)
    keys, counts = np.unique(
        _pair_key(t, t.link_tier[sw].astype(np.int64), src, dst), return_counts=True
    )
    return keys, counts.astype(np.int64)


def _lookup(
    keys: NDArray[np.int64], values: NDArray[np.int64], at: NDArray[np.int64]
) -> NDArray[np.int64]:
    """``values`` of sorted ``keys`` at ``at`` (0 for a key not there)."""
    if keys.shape[0] == 0:
        return np.zeros(at.shape[0], dtype=np.int64)
    pos = np.minimum(np.searchsorted(keys, at), keys.shape[0] - 1)
    return np.where(keys[pos] == at, values[pos], 0)


def _rank_within(group: NDArray[np.int64]) -> NDArray[np.int64]:
    """Each element's position among the elements of its group before it."""
    s = np.argsort(group, kind="stable")
    g = group[s]
    starts = np.flatnonzero(np.concatenate([[True], g[1:] != g[:-1]]))
    sizes = np.diff(np.append(starts, g.shape[0]))
    out = np.empty(group.shape[0], dtype=np.int64)
    out[s] = np.arange(group.shape[0]) - np.repeat(starts, sizes)
    return out


def _host_links_kept(
    t: Topology,
    host: NDArray[np.int64],
    port: NDArray[np.int64],
    leaf: NDArray[np.int64],
    leaf_port: NDArray[np.int64],
) -> NDArray[np.bool_]:
    """Installed host-leaf links the grown fabric generates as they are (a host port carries
    one link, so the generated link of the same host port is the one to compare)."""
    h = np.flatnonzero(t.link_tier == 1)
    radix = int(max(t.link_src_port[h].max(initial=0), port.max(initial=0))) + 1
    gen = t.link_src[h].astype(np.int64) * radix + t.link_src_port[h]
    s = np.argsort(gen, kind="stable")
    gen = gen[s]
    want = host * radix + port
    if gen.shape[0] == 0:
        return np.zeros(host.shape[0], dtype=bool)
    pos = np.minimum(np.searchsorted(gen, want), gen.shape[0] - 1)
    g = h[s[pos]]
    same: NDArray[np.bool_] = (
        (gen[pos] == want) & (t.link_dst[g] == leaf) & (t.link_dst_port[g] == leaf_port)
    )
    return same


def _keep(
    key: NDArray[np.int64],
    want: NDArray[np.int64],
    lo: NDArray[np.int64],
    lo_port: NDArray[np.int64],
    hi: NDArray[np.int64],
    hi_port: NDArray[np.int64],
) -> NDArray[np.int8]:
    """Of the links each pair could keep (in order): the first ``want`` of each pair are kept
    (-1), the rest are ``_STRIPE`` moves; a link on a port an earlier kept link holds is a
    ``_TWICE`` move and leaves its place in the pair to the next."""
    radix = int(max(lo_port.max(initial=0), hi_port.max(initial=0))) + 1
    ends = np.concatenate([lo * radix + lo_port, hi * radix + hi_port])
    if np.unique(ends).shape[0] == ends.shape[0]:  # no port twice: the pairs alone decide
        return np.where(_rank_within(key) < want, -1, _STRIPE).astype(np.int8)
    out = np.full(key.shape[0], -1, dtype=np.int8)
    count: dict[int, int] = defaultdict(int)
    used: set[int] = set()
    for j, (k, w, x, y) in enumerate(
        zip(
            key.tolist(),
            want.tolist(),
            ends[: key.shape[0]].tolist(),
            ends[key.shape[0] :].tolist(),
            strict=True,
        )
    ):
        if count[k] >= w:
            out[j] = _STRIPE
        elif x in used or y in used:
            out[j] = _TWICE
        else:
            count[k] += 1
            used.update((x, y))
    return out


def _upper_count(t: Topology, role: int) -> int:
    p = t.plan
    return {Role.SPINE: p.spines_per_pod, Role.CORE: p.cores}.get(Role(role), p.leaves)


def _free_ports(
    node: NDArray[np.int64],
    start: NDArray[np.int64],
    used_node: NDArray[np.int64],
    used_port: NDArray[np.int64],
) -> NDArray[np.int64]:
    """For each of ``node`` (in order), the next lowest port of its range (from ``start``,
    indexed by node) that no kept link uses: the r-th free port of a node's r-th request."""
    r = _rank_within(node)
    o = np.lexsort((used_port, used_node))
    un, uport = used_node[o], used_port[o]
    # free ports of the node below each used port (non-decreasing within a node)
    below = uport - start[un] - _rank_within(un)
    big = np.int64(max(int(below.max(initial=0)), int(r.max(initial=0))) + 2)
    ranked = un * big + below
    count = np.searchsorted(ranked, node * big + r, side="right") - np.searchsorted(
        ranked, node * big, side="left"
    )
    return start[node] + r + count


def _realize(
    t: Topology,
    pairs: NDArray[np.int64],
    want: NDArray[np.int64],
    kept: tuple[NDArray[np.int64], ...],
    up: NDArray[np.int64],
    down: NDArray[np.int64],
) -> Topology:
    """The topology with each switch tier's links rebuilt: kept ones (``kept``: tier, lower,
    lower port, upper, upper port), then the rest on the lowest free ports, pairs in (tier,
    lower, upper) order."""
    sw = np.flatnonzero(t.link_tier >= 2)
    if not sw.size:
        return t
    role = t.node_role
    n = np.int64(t.n_nodes)
    k_tier, k_lo, k_ap, k_hi, k_bp = kept
    have = np.bincount(
        np.searchsorted(pairs, _pair_key(t, k_tier, k_lo, k_hi)), minlength=pairs.shape[0]
    )
    slot = np.repeat(np.arange(pairs.shape[0]), want - have)
    s_key = pairs[slot]
    s_tier, s_lo, s_hi = s_key // (n * n), (s_key // n) % n, s_key % n
    s_ap = _free_ports(s_lo, up[role, 0], k_lo, k_ap)
    s_bp = _free_ports(s_hi, down[role, 0], k_hi, k_bp)
    assert (s_ap < up[role[s_lo], 1]).all() and (s_bp < down[role[s_hi], 1]).all()
    cols = [
        np.concatenate([x, y]) for x, y in zip(kept, (s_tier, s_lo, s_ap, s_hi, s_bp), strict=True)
    ]
    arr = np.stack(cols, axis=1)[np.lexsort((cols[2], cols[1], cols[0]))]
    # rows of a tier stay where the generator put that tier (same counts per tier and plane)
    order = np.lexsort((t.link_src_port[sw], t.link_src[sw], t.link_tier[sw]))
    target = sw[order]
    src, dst = t.link_src.copy(), t.link_dst.copy()
    sp, dp = t.link_src_port.copy(), t.link_dst_port.copy()
    src[target], sp[target] = arr[:, 1], arr[:, 2]
    dst[target], dp[target] = arr[:, 3], arr[:, 4]
    plane = t.link_plane.copy()
    plane[target] = t.node_plane[arr[:, 1]]
    for x in (src, dst, sp, dp, plane):
        x.setflags(write=False)
    return replace(
        t, link_src=src, link_dst=dst, link_src_port=sp, link_dst_port=dp, link_plane=plane
    )
