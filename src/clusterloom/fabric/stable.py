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
    counts = {Role.LEAF: p.leaves, Role.SPINE: p.spines, Role.CORE: p.cores}
    for r, n in counts.items():
        m = (role == r) & (plane >= 0) & (plane < p.planes) & (index < n)
        out[m] = [t.switch_id(int(q), r, int(i)) for q, i in zip(plane[m], index[m], strict=True)]
    return out


def _port_ranges(t: Topology) -> tuple[dict[int, range], dict[int, range]]:
    """Per switch role: the uplink ports and the downlink ports a link may use."""
    up: dict[int, range] = {}
    down: dict[int, range] = {}
    for st in t.plan.switch_tiers:
        r = {"leaf": Role.LEAF, "spine": Role.SPINE, "core": Role.CORE}[st.role]
        up[r] = range(st.down, st.down + st.up)
        # a top tier has no uplinks: every port of its radix may take a downlink
        down[r] = range(st.down) if st.up else range(st.radix)
    return up, down


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


def stabilize(new: Topology, installed: InstalledLinks) -> Stabilized:
    """``new`` realized around ``installed`` (see the module)."""
    t = _renumber_cores(new, _core_identities(new, installed))
    a = _node_ids(t, installed.a_role, installed.a_plane, installed.a_index)
    b = _node_ids(t, installed.b_role, installed.b_plane, installed.b_index)
    up_ports, down_ports = _port_ranges(t)
    role = t.node_role

    # the new shape: links per (tier, lower, upper) pair
    src, dst = t.link_src.astype(np.int64), t.link_dst.astype(np.int64)
    want: dict[tuple[int, int, int], int] = defaultdict(int)
    sw = t.link_tier >= 2
    pairs, counts = np.unique(
        np.stack([t.link_tier[sw].astype(np.int64), src[sw], dst[sw]], axis=1),
        axis=0,
        return_counts=True,
    )
    for (tier, lo, hi), c in zip(pairs.tolist(), counts.tolist(), strict=True):
        want[(tier, lo, hi)] = c
    had: dict[tuple[int, int, int], int] = defaultdict(int)

    host_links = {
        (int(s), int(sp), int(d), int(dp))
        for s, sp, d, dp in zip(
            src[~sw], t.link_src_port[~sw], dst[~sw], t.link_dst_port[~sw], strict=True
        )
    }
    moves: list[Move] = []
    kept_by_pair: dict[tuple[int, int, int], list[tuple[int, int]]] = defaultdict(list)
    used: dict[int, set[int]] = defaultdict(set)
    order = np.lexsort((installed.a_port, installed.b_index, installed.a_index, installed.tier))
    for i in order.tolist():
        # the installed links each pair could keep: ends that exist, ports of the right kind
        if installed.tier[i] >= 2 and a[i] >= 0 and b[i] >= 0:
            lo, hi = int(a[i]), int(b[i])
            if (
                int(installed.a_port[i]) in up_ports[int(role[lo])]
                and int(installed.b_port[i]) in down_ports[int(role[hi])]
            ):
                had[(int(installed.tier[i]), lo, hi)] += 1
    kept = 0
    gone = 0
    for i in order.tolist():
        tier = int(installed.tier[i])
        ae = (installed.a_role[i], installed.a_plane[i], installed.a_index[i], installed.a_port[i])
        be = (installed.b_role[i], installed.b_plane[i], installed.b_index[i], installed.b_port[i])
        ap, bp = int(installed.a_port[i]), int(installed.b_port[i])

        def move(
            reason: str, ae: tuple[int, ...] = ae, be: tuple[int, ...] = be, tier: int = tier
        ) -> None:
            moves.append(
                Move(installed.fabric, tier, _end(*map(int, ae)), _end(*map(int, be)), reason)
            )

        if a[i] < 0 or b[i] < 0:
            gone += 1
            move("a switch or host of this link is not in the grown fabric")
            continue
        lo, hi = int(a[i]), int(b[i])
        if tier == 1:
            if (lo, ap, hi, bp) in host_links:
                kept += 1
            else:
                gone += 1
                move("the grown fabric wires this host port to another leaf port")
            continue
        key = (tier, lo, hi)
        if ap not in up_ports[int(role[lo])] or bp not in down_ports[int(role[hi])]:
            gone += 1
            move("this port is no longer an uplink/downlink port in the grown fabric")
        elif len(kept_by_pair[key]) >= want.get(key, 0):
            old_n, new_n = had[key], want.get(key, 0)
            move(
                f"the stripe of this {_ROLES[Role(int(role[lo]))]}-{_ROLES[Role(int(role[hi]))]}"
                f" pair goes from {old_n} to {new_n} links (the upper layer grows to "
                f"{_upper_count(t, int(role[hi]))} switches)"
            )
        elif ap in used[lo] or bp in used[hi]:
            gone += 1
            move("this port is referenced twice in the installed baseline")
        else:
            kept_by_pair[key].append((ap, bp))
            used[lo].add(ap)
            used[hi].add(bp)
            kept += 1
    forced = gone + sum(max(0, n - want.get(k, 0)) for k, n in had.items())
    topology = _realize(t, kept_by_pair, want, used, up_ports, down_ports)
    return Stabilized(topology, kept, tuple(moves), forced)


def _upper_count(t: Topology, role: int) -> int:
    p = t.plan
    return {Role.SPINE: p.spines_per_pod, Role.CORE: p.cores}.get(Role(role), p.leaves)


def _realize(
    t: Topology,
    kept: dict[tuple[int, int, int], list[tuple[int, int]]],
    want: dict[tuple[int, int, int], int],
    used: dict[int, set[int]],
    up_ports: dict[int, range],
    down_ports: dict[int, range],
) -> Topology:
    """The topology with each switch tier's links rebuilt: kept ones, then the rest on the
    lowest free ports, pairs in (tier, lower, upper) order."""
    role = t.node_role
    free_up: dict[int, list[int]] = {}
    free_down: dict[int, list[int]] = {}

    def take(table: dict[int, list[int]], node: int, ports: range) -> int:
        if node not in table:
            table[node] = [q for q in reversed(ports) if q not in used[node]]
        return table[node].pop()

    rows: list[tuple[int, int, int, int, int]] = []
    for key in sorted(want):
        tier, lo, hi = key
        have = kept.get(key, [])
        rows.extend((tier, lo, ap, hi, bp) for ap, bp in have)
        for _ in range(want[key] - len(have)):
            ap = take(free_up, lo, up_ports[int(role[lo])])
            bp = take(free_down, hi, down_ports[int(role[hi])])
            rows.append((tier, lo, ap, hi, bp))
    sw = np.flatnonzero(t.link_tier >= 2)
    if not sw.size:
        return t
    arr = np.array(sorted(rows, key=lambda r: (r[0], r[1], r[2])), dtype=np.int64)
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
