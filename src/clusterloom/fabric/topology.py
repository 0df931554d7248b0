"""The generated fabric as arrays (struct of arrays), never one Python object per element.

Node ids: hosts first (``0 .. hosts-1``: accelerators on a backend, nodes on a frontend), then one
block per plane holding that plane's leaves, spines and cores in that order. Every link is stored
once, lower end first (``src`` is the host or the lower switch), with the port used at each end:
host port ``plane * ports_per_host + j``; a switch's downlinks take ports ``0 .. down-1`` and its
uplinks ``down .. down+up-1``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.units import BPS_PER_GBPS

if TYPE_CHECKING:  # the plan is read, never built here
    from clusterloom.fabric.sizing import FabricPlan


class Role(IntEnum):
    HOST = 0
    LEAF = 1
    SPINE = 2
    CORE = 3


ROLE_NAMES = {Role.HOST: "host", Role.LEAF: "leaf", Role.SPINE: "spine", Role.CORE: "core"}


def _frozen(a: NDArray[Any]) -> NDArray[Any]:
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Topology:
    """Nodes and links of one fabric (all planes). Arrays are read-only."""

    plan: FabricPlan
    node_role: NDArray[np.int8]
    node_plane: NDArray[np.int16]
    node_pod: NDArray[np.int32]
    node_index: NDArray[np.int32]
    link_src: NDArray[np.int32]
    link_dst: NDArray[np.int32]
    link_src_port: NDArray[np.int32]
    link_dst_port: NDArray[np.int32]
    link_plane: NDArray[np.int16]
    link_tier: NDArray[np.int8]
    link_capacity_bps: NDArray[np.int64]
    link_latency_ps: NDArray[np.int64]

    @property
    def n_nodes(self) -> int:
        return int(self.node_role.shape[0])

    @property
    def n_links(self) -> int:
        return int(self.link_src.shape[0])

    @property
    def plane_block(self) -> int:
        """Switch nodes per plane."""
        return self.plan.switches_per_plane

    def switch_id(self, plane: int, role: Role, index: int) -> int:
        """Node id of switch ``index`` of ``role`` in ``plane``."""
        p = self.plan
        offset = {Role.LEAF: 0, Role.SPINE: p.leaves, Role.CORE: p.leaves + p.spines}[role]
        return p.hosts + plane * self.plane_block + offset + index

    @cached_property
    def nbytes(self) -> int:
        return sum(getattr(self, f).nbytes for f in self.__dataclass_fields__ if f != "plan")

    def degree(self) -> NDArray[np.int64]:
        """Links touching each node."""
        return np.bincount(self.link_src, minlength=self.n_nodes) + np.bincount(
            self.link_dst, minlength=self.n_nodes
        )

    def adjacency(self, plane: int | None = None) -> Any:
        """Symmetric scipy CSR adjacency with link multiplicities (optionally one plane only)."""
        from scipy import sparse

        mask = slice(None) if plane is None else self.link_plane == plane
        src, dst = self.link_src[mask], self.link_dst[mask]
        ones = np.ones(src.shape[0] * 2, dtype=np.int32)
        rows = np.concatenate([src, dst])
        cols = np.concatenate([dst, src])
        return sparse.csr_matrix((ones, (rows, cols)), shape=(self.n_nodes, self.n_nodes))


def _host_leaf(plan: FabricPlan) -> tuple[NDArray[np.int64], ...]:
    """One plane's host→leaf links: host, port index within the plane, leaf, leaf port."""
    p = plan.ports_per_host
    host = np.repeat(np.arange(plan.hosts, dtype=np.int64), p)
    j = np.tile(np.arange(p, dtype=np.int64), plan.hosts)
    node, g = np.divmod(host, plan.hosts_per_node)
    rail = g * p + j
    if plan.family == "rail-optimized":
        su, i = np.divmod(node, plan.su_nodes)
        within, leaf_port = np.divmod(i, plan.nodes_per_leaf)
        # a partial last scalable unit has fewer leaves per rail
        per_rail = np.where(su < plan.sus - 1, plan.leaves_per_rail, plan.last_su_leaves_per_rail)
        leaf = su * plan.leaves_per_su + rail * per_rail + within
    else:
        leaf, slot = np.divmod(node, plan.nodes_per_leaf)
        leaf_port = slot * plan.rails + rail
    return host, j, leaf, leaf_port


def _striped(
    lower: int, per_group: int, up: int, fan: int, down_base: int
) -> tuple[NDArray[np.int64], ...]:
    """Uplinks of ``lower`` switches in groups of ``per_group``; each sends ``up`` links striped
    over the ``fan`` upper switches of its group's upper set (``up / fan`` links each).

    Returns lower index, lower port, upper index (within the upper tier) and upper port.
    """
    per_pair = up // fan
    lo = np.repeat(np.arange(lower, dtype=np.int64), up)
    k = np.tile(np.arange(up, dtype=np.int64), lower)
    group, a = np.divmod(lo, per_group)
    rep, u = np.divmod(k, fan)
    return lo, down_base + k, group * fan + u, a * per_pair + rep


def generate(plan: FabricPlan) -> Topology:
    """Build the topology of ``plan`` with vectorized numpy (no per-element Python loops)."""
    planes, hosts = plan.planes, plan.hosts
    block = plan.switches_per_plane
    leaf0, spine0, core0 = 0, plan.leaves, plan.leaves + plan.spines
    leaf_t, spine_t = plan.tier("leaf"), plan.tier("spine")

    # one plane's links, switch ids relative to the plane block
    h, j, leaf, leaf_port = _host_leaf(plan)
    tiers: list[tuple[NDArray[np.int64], ...]] = [(h, j, leaf0 + leaf, leaf_port)]
    lo, lo_port, up, up_port = _striped(
        plan.leaves, plan.pod_leaves, leaf_t.up, plan.spines_per_pod, leaf_t.down
    )
    tiers.append((leaf0 + lo, lo_port, spine0 + up, up_port))
    if plan.tiers == 3:
        # spine j of pod m belongs to core group j: group spines by their index within the pod
        s = np.arange(plan.spines, dtype=np.int64)
        pod, jj = np.divmod(s, plan.spines_per_pod)
        order = jj * plan.pods + pod  # position of spine s when spines are sorted by group
        lo, lo_port, up, up_port = _striped(
            plan.spines, plan.pods, spine_t.up, plan.cores_per_group, spine_t.down
        )
        # _striped numbers lower switches by group-major order: map back to spine ids
        inverse = np.empty_like(order)
        inverse[order] = s
        tiers.append((spine0 + inverse[lo], lo_port, core0 + up, up_port))

    per_plane = sum(t[0].shape[0] for t in tiers)
    n_links = per_plane * planes
    src = np.empty(n_links, dtype=np.int32)
    dst = np.empty(n_links, dtype=np.int32)
    src_port = np.empty(n_links, dtype=np.int32)
    dst_port = np.empty(n_links, dtype=np.int32)
    tier = np.empty(n_links, dtype=np.int8)
    lat = np.empty(n_links, dtype=np.int64)
    for q in range(planes):
        base = q * per_plane
        off = hosts + q * block
        for t, (a, a_port, b, b_port) in enumerate(tiers):
            n = a.shape[0]
            sl = slice(base, base + n)
            if t == 0:
                src[sl] = a
                src_port[sl] = q * plan.ports_per_host + a_port
            else:
                src[sl] = a + off
                src_port[sl] = a_port
            dst[sl] = b + off
            dst_port[sl] = b_port
            tier[sl] = t + 1
            lat[sl] = plan.latency_ps[t]
            base += n
    plane = np.repeat(np.arange(planes, dtype=np.int16), per_plane)
    cap = np.full(n_links, plan.speed_gbps * BPS_PER_GBPS, dtype=np.int64)

    # nodes
    n_nodes = hosts + planes * block
    role = np.empty(n_nodes, dtype=np.int8)
    node_plane = np.full(n_nodes, -1, dtype=np.int16)
    pod = np.full(n_nodes, -1, dtype=np.int32)
    index = np.empty(n_nodes, dtype=np.int32)
    role[:hosts] = Role.HOST
    index[:hosts] = np.arange(hosts)
    block_role = np.repeat(
        np.array([Role.LEAF, Role.SPINE, Role.CORE], dtype=np.int8),
        [plan.leaves, plan.spines, plan.cores],
    )
    block_index = np.concatenate(
        [np.arange(plan.leaves), np.arange(plan.spines), np.arange(plan.cores)]
    ).astype(np.int32)
    block_pod = np.concatenate(
        [
            np.arange(plan.leaves) // plan.pod_leaves,
            np.arange(plan.spines) // plan.spines_per_pod,
            np.arange(plan.cores) // max(plan.cores_per_group, 1),  # core group
        ]
    ).astype(np.int32)
    role[hosts:] = np.tile(block_role, planes)
    index[hosts:] = np.tile(block_index, planes)
    pod[hosts:] = np.tile(block_pod, planes)
    node_plane[hosts:] = np.repeat(np.arange(planes, dtype=np.int16), block)

    arrays: dict[str, NDArray[Any]] = dict(
        node_role=role,
        node_plane=node_plane,
        node_pod=pod,
        node_index=index,
        link_src=src,
        link_dst=dst,
        link_src_port=src_port,
        link_dst_port=dst_port,
        link_plane=plane,
        link_tier=tier,
        link_capacity_bps=cap,
        link_latency_ps=lat,
    )
    for arr in arrays.values():
        _frozen(arr)
    return Topology(plan=plan, **arrays)
