"""Path programs: for every (source NIC port, destination NIC port, EV) the segment list that
pins that EV to one up/down path of its plane, computed in bulk for one source NIC port.

EVs and ports follow the spraying transport (``mrc-spray``): a connection has ``evs`` entropy
values (its default, 128), EV ``i`` leaves on host port ``i % ports`` and arrives on the same
port of the destination, so a NIC port carries EVs ``k, k + ports, ...`` of every connection.

Paths of a pair of NIC ports in one plane (switch sequences; parallel links between two
switches are one hop, load-shared by the switch):

- same leaf: 1 path (the leaf);
- same pod (or any two leaves of a 2-tier plane): one per spine of the pod (``spines_per_pod``);
- two pods of a 3-tier plane: one per (spine index ``u``, core ``c`` of group ``u``):
  ``spines_per_pod * cores_per_group``; path ``j`` climbs spine ``u = j % spp`` of the source
  pod, core ``u * cpg + j // spp``, and descends spine ``u`` of the destination pod.

EV assignment (a closed form): the ``m``-th EV of the port pair ``(h, d)`` (``K`` of them)
takes path ``(offset + m) mod n`` with ``offset = (h + d) * K mod n``: the ``K`` EVs of a pair
take distinct paths while ``K <= n`` and each path ``floor(K/n)`` or ``ceil(K/n)`` EVs beyond;
consecutive destinations (and sources) start ``K`` paths apart, which spreads a NIC's EVs over
every spine (and core) of the plane.

Segment list: the transit uSIDs (the spine; or spine, core, spine), each an End with
NEXT-C-SID, then the destination NIC's SID (its leaf's uSID and its local uSID). When they fit
in one container the program is that one address (H.Encaps.Red, no SRH); otherwise an SRH of
transit containers and the NIC SID (:func:`clusterloom.srv6.encoding.pack`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.fabric.topology import Role
from clusterloom.srv6.encoding import SID_BYTES, container, pack
from clusterloom.srv6.plan import AddressPlan

#: the class of a port pair: same leaf, same pod (or 2-tier), two pods
SAME_LEAF, SAME_POD, CROSS_POD = 0, 1, 2
CLASS_NAMES = ("same-leaf", "via-spine", "via-core")
TRANSIT = (0, 1, 3)


def default_evs() -> int:
    """EVs per connection of the packet engine's spraying transport (``mrc-spray``)."""
    from clusterloom.sim.packet.transports import MrcSpray

    return int(MrcSpray.defaults["evs"])


def port_evs(evs: int, port: int, ports: int) -> NDArray[np.int32]:
    """The EV indices of a connection that use host port ``port``."""
    return np.arange(port, evs, ports, dtype=np.int32)


def sids_needed(transit: int, capacity: int) -> int:
    """SIDs of a program with ``transit`` transit uSIDs: 1 when they and the NIC SID's two
    uSIDs fit one container, else ``ceil(transit / capacity)`` containers and the NIC SID."""
    return 1 if transit + 2 <= capacity else -(-transit // capacity) + 1


@dataclass(frozen=True, eq=False)
class Programs:
    """The programs of one source NIC port to every other host's same port, for its EVs.

    ``usids[d, m]`` is the uSIDs carried (transit first, then the NIC SID's two, zero padded;
    uint16 for uSIDs up to 16 bits); :func:`hops_of` gives the switches on the way."""

    plan: AddressPlan
    host: int
    port: int
    dst: NDArray[np.int32]
    evs: NDArray[np.int32]
    pair_class: NDArray[np.int8]
    n_paths: NDArray[np.int32]
    path: NDArray[np.int32]
    usids: NDArray[np.uint32]

    @property
    def plane(self) -> int:
        return self.port // self.plan.ports_per_host

    @property
    def entries(self) -> int:
        return int(self.path.size)

    def sids(self) -> NDArray[np.int8]:
        """SIDs per program (``[d, m]``)."""
        cap = self.plan.fmt.capacity
        per_class = np.array([sids_needed(t, cap) for t in TRANSIT], dtype=np.int8)
        return np.broadcast_to(per_class[self.pair_class][:, None], self.path.shape)

    @property
    def nbytes(self) -> int:
        """Bytes the NIC holds for these programs: 16 per SID."""
        return int(self.sids().sum(dtype=np.int64)) * SID_BYTES

    def segments(self, d: int, m: int) -> list[int]:
        """The SIDs of program ``[d, m]`` as addresses, first (the outer destination) first."""
        plan, fmt = self.plan, self.plan.fmt
        row = [int(u) for u in self.usids[d, m] if u]
        transit, tail = row[:-2], row[-2:]
        block = plan.block(self.plane)
        return pack(transit, fmt, block, container(block, fmt, tail))


def _paths(
    plan: AddressPlan, ls: int, ld: NDArray[np.int32], offset_key: NDArray[np.int64], k: int
) -> tuple[NDArray[np.int8], NDArray[np.int32], NDArray[np.int32]]:
    p = plan.topology.plan
    pod_s, pod_d = ls // p.pod_leaves, ld // p.pod_leaves
    spp, cpg = p.spines_per_pod, max(p.cores_per_group, 1)
    cls = np.where(ld == ls, SAME_LEAF, np.where(pod_d == pod_s, SAME_POD, CROSS_POD))
    cls = cls.astype(np.int8)
    n = np.choose(cls, [1, spp, spp * cpg]).astype(np.int32)
    offset = ((offset_key * k) % n).astype(np.int32)
    path = offset[:, None] + np.arange(k, dtype=np.int32)[None, :]
    # (offset + m) mod n without a division where k <= n (one subtraction at most): integer
    # division is the slowest numpy step here; rows with fewer paths than EVs divide
    wide = n >= k
    np.subtract(path, n[:, None], out=path, where=wide[:, None] & (path >= n[:, None]))
    narrow = np.flatnonzero(~wide)
    path[narrow] %= n[narrow, None]
    return cls, n, path


def programs_for(plan: AddressPlan, host: int, port: int, evs: int | None = None) -> Programs:
    """The programs of NIC port ``port`` of ``host`` (``evs`` per connection: default the
    spraying transport's); vectorized, one row per destination host."""
    p = plan.topology.plan
    total = default_evs() if evs is None else evs
    problems = []
    if not 0 <= host < p.hosts:
        problems.append(Problem("host", f"{host} is not in 0..{p.hosts - 1}"))
    if not 0 <= port < plan.host_ports:
        problems.append(Problem("port", f"{port} is not in 0..{plan.host_ports - 1}"))
    if not 1 <= total <= 65_536:
        problems.append(Problem("evs", f"{total} is not in 1..65536"))
    if problems:
        raise SpecError(problems)
    ev = port_evs(total, port, plan.host_ports)
    k = int(ev.shape[0])
    dst = np.delete(np.arange(p.hosts, dtype=np.int32), host)
    ls = int(plan.nic_leaf[host, port])
    ld = plan.nic_leaf[dst, port]
    cls, n, path = _paths(plan, ls, ld, host + dst.astype(np.int64), k)
    usids = _encode(plan, ls, ld, cls, path, plan.nic_local[dst, port])
    for a in (dst, ev, cls, n, path, usids):
        a.setflags(write=False)
    return Programs(plan, host, port, dst, ev, cls, n, path, usids)


def _columns(
    plan: AddressPlan,
    ls: int,
    ld: NDArray[np.int32],
    cls: NDArray[np.int8],
    path: NDArray[np.int32],
) -> tuple[list[NDArray[np.int64]], NDArray[np.bool_], NDArray[np.bool_]]:
    """Switch indexes within their tier on the way: ``[spine up, core, spine down]`` (only
    meaningful where the class needs them), and the masks of the same-leaf and two-pod rows."""
    p = plan.topology.plan
    spp, cpg = p.spines_per_pod, max(p.cores_per_group, 1)
    pod_s = ls // p.pod_leaves
    up = (pod_s * spp + path % spp).astype(np.int64)
    same = (cls == SAME_LEAF)[:, None]
    far = (cls == CROSS_POD)[:, None]
    if p.tiers < 3:
        return [up], same, far
    core = (path % spp) * cpg + path // spp
    down = (ld // p.pod_leaves).astype(np.int64)[:, None] * spp + path % spp
    return [up, core.astype(np.int64), down], same, far


def _encode(
    plan: AddressPlan,
    ls: int,
    ld: NDArray[np.int32],
    cls: NDArray[np.int8],
    path: NDArray[np.int32],
    local: NDArray[np.int32],
) -> NDArray[np.uint32]:
    """The uSIDs of every program (``[d, m, :]``): transit, then the NIC SID's two. Written
    for the common class (two leaves; two pods on 3 tiers) over whole columns, then the few
    other rows overwritten (masks over destinations, not over programs)."""
    p = plan.topology.plan
    d, k = path.shape
    spp, cpg = p.spines_per_pod, max(p.cores_per_group, 1)
    dtype = np.uint16 if plan.fmt.usid_bits <= 16 else np.uint32
    usids: NDArray[np.uint32] = np.zeros((d, k, 2 * p.tiers - 1), dtype=dtype)
    leaf_u = (np.asarray(plan.usid(Role.LEAF, 0)) + ld).astype(dtype)
    spine0 = int(plan.usid(Role.SPINE, 0))
    pod_s = ls // p.pod_leaves
    u = path % spp if p.tiers == 3 else path  # 2 tiers: every path index is below spp
    np.add(u, spine0 + pod_s * spp, out=usids[:, :, 0], casting="unsafe")
    if p.tiers == 3:
        core0 = int(plan.usid(Role.CORE, 0))
        np.add(u * cpg + path // spp, core0, out=usids[:, :, 1], casting="unsafe")
        pod_d = (ld // p.pod_leaves).astype(np.int64) * spp + spine0
        np.add(u, pod_d[:, None], out=usids[:, :, 2], casting="unsafe")
    usids[:, :, -2] = leaf_u[:, None]
    usids[:, :, -1] = local.astype(dtype)[:, None]
    near = np.flatnonzero(cls == SAME_POD)
    if p.tiers == 3 and near.size:
        usids[near, :, 1] = leaf_u[near, None]
        usids[near, :, 2] = local.astype(dtype)[near, None]
        usids[near, :, 3:] = 0
    same = np.flatnonzero(cls == SAME_LEAF)
    usids[same, :, 0] = leaf_u[same, None]
    usids[same, :, 1] = local.astype(dtype)[same, None]
    usids[same, :, 2:] = 0
    return usids


def hops_of(programs: Programs) -> NDArray[np.int32]:
    """Switch node ids on the way of every program (``[d, m, :]``, ``2 * tiers - 1`` wide,
    ``-1`` padded at the end): source leaf, (spine, (core, spine)), destination leaf."""
    plan, p = programs.plan, programs.plan.topology.plan
    d, k = programs.path.shape
    base = p.hosts + programs.plane * p.switches_per_plane
    leaf0, spine0, core0 = base, base + p.leaves, base + p.leaves + p.spines
    ls = int(plan.nic_leaf[programs.host, programs.port])
    ld = plan.nic_leaf[programs.dst, programs.port]
    cols, same, far = _columns(plan, ls, ld, programs.pair_class, programs.path)
    hops = np.full((d, k, 2 * p.tiers - 1), -1, dtype=np.int32)
    hops[:, :, 0] = leaf0 + ls
    dst_leaf = (leaf0 + ld.astype(np.int64))[:, None]
    hops[:, :, 1] = np.where(same, -1, spine0 + cols[0])
    if p.tiers < 3:
        hops[:, :, 2] = np.where(same, -1, dst_leaf)
        return hops
    near = ~same & ~far
    hops[:, :, 2] = np.where(far, core0 + cols[1], np.where(near, dst_leaf, -1))
    hops[:, :, 3] = np.where(far, spine0 + cols[2], -1)
    hops[:, :, 4] = np.where(far, dst_leaf, -1)
    return hops
