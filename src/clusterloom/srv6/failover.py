"""Endpoint failover: given failed links, switches or planes, the EVs each endpoint retires
(those whose program crosses a dead hop) and the share of its bandwidth each pair keeps. No
switch changes anything: the programs are fixed, the endpoints stop using the dead ones.

A hop between two switches is dead when every parallel link between them is dead (the switch
shares a hop's load over its live parallel links, a local choice); a dead switch kills every
hop through it; a dead plane every program in it; a dead NIC-to-leaf link every program from
or to that NIC port.

Bandwidth share: the spraying transport sends round-robin over its EVs, each EV an equal share
of the connection, so a pair keeps ``live EVs / EVs`` of its bandwidth (its other EVs carry the
traffic; whether their links have room for it is the simulators' question, not this one's).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.fabric.topology import Role, Topology
from clusterloom.srv6.plan import AddressPlan
from clusterloom.srv6.programs import Programs, default_evs, hops_of, programs_for

FailureKind = Literal["link", "switch", "plane"]


@dataclass(frozen=True)
class Failure:
    """A failed link (topology link id), switch (node id) or plane (plane index)."""

    kind: FailureKind
    target: int

    def __str__(self) -> str:
        return f"{self.kind} {self.target}"


def parse_failure(text: str, topology: Topology, where: str = "--fail") -> Failure:
    """``link:N``, ``switch:PLANE/ROLE/INDEX`` (role leaf, spine or core) or ``plane:P``."""
    kind, _, rest = text.partition(":")
    p = topology.plan
    try:
        if kind == "link":
            n = int(rest)
            if not 0 <= n < topology.n_links:
                raise ValueError(f"link {n} is not in 0..{topology.n_links - 1}")
            return Failure("link", n)
        if kind == "plane":
            n = int(rest)
            if not 0 <= n < p.planes:
                raise ValueError(f"plane {n} is not in 0..{p.planes - 1}")
            return Failure("plane", n)
        if kind == "switch":
            plane_s, role_s, index_s = rest.split("/")
            role = {"leaf": Role.LEAF, "spine": Role.SPINE, "core": Role.CORE}[role_s]
            count = {Role.LEAF: p.leaves, Role.SPINE: p.spines, Role.CORE: p.cores}[role]
            plane, index = int(plane_s), int(index_s)
            if not (0 <= plane < p.planes and 0 <= index < count):
                raise ValueError(f"no {role_s} {index} in plane {plane} ({count} per plane)")
            return Failure("switch", topology.switch_id(plane, role, index))
    except (ValueError, KeyError) as exc:
        raise SpecError([Problem(where, f"{text!r}: {exc}")]) from exc
    raise SpecError([Problem(where, f"{text!r}: give link:N, switch:PLANE/ROLE/INDEX or plane:P")])


@dataclass(frozen=True, eq=False)
class Dead:
    """What the failures kill: switch-to-switch hops with no live link left (lower, upper),
    dead NIC-to-leaf links (host, host port), switch nodes and planes."""

    hops: tuple[tuple[int, int], ...]
    nic_links: frozenset[tuple[int, int]]
    nodes: tuple[int, ...]
    planes: frozenset[int]


def dead_of(topology: Topology, failures: Sequence[Failure]) -> Dead:
    t = topology
    links = np.unique(np.array([f.target for f in failures if f.kind == "link"], dtype=np.int64))
    nodes = tuple(sorted({f.target for f in failures if f.kind == "switch"}))
    planes = frozenset(f.target for f in failures if f.kind == "plane")
    first = links[t.link_tier[links] == 1]
    nic = frozenset(zip(t.link_src[first].tolist(), t.link_src_port[first].tolist(), strict=True))
    upper = links[t.link_tier[links] > 1]
    pairs = sorted(set(zip(t.link_src[upper].tolist(), t.link_dst[upper].tolist(), strict=True)))
    # a hop is dead when all its parallel links are
    hops = []
    for a, b in pairs:
        parallel = np.flatnonzero((t.link_src == a) & (t.link_dst == b))
        if np.isin(parallel, upper).all():
            hops.append((a, b))
    return Dead(tuple(hops), nic, nodes, planes)


def retired(programs: Programs, dead: Dead) -> NDArray[np.bool_]:
    """``[d, m]``: True where the program crosses a dead hop, switch or plane. One vectorized
    comparison per dead element and hop column (failures are few, programs many)."""
    shape = programs.path.shape
    out = np.zeros(shape, dtype=bool)
    if programs.plane in dead.planes or (programs.host, programs.port) in dead.nic_links:
        out[:] = True
        return out
    dst_dead = [
        i for i, d in enumerate(programs.dst.tolist()) if (d, programs.port) in dead.nic_links
    ]
    out[dst_dead] = True
    t = programs.plan.topology
    here = [n for n in dead.nodes if int(t.node_plane[n]) == programs.plane]
    steps = [(a, b) for a, b in dead.hops if int(t.node_plane[b]) == programs.plane]
    if not (here or steps):
        return out  # nothing failed in this plane
    hops = hops_of(programs)
    for node in here:
        out |= (hops == node).any(axis=2)
    width = hops.shape[2]
    for a, b in steps:  # (lower, upper): crossed going up or coming down
        for i in range(width - 1):
            x, y = hops[:, :, i], hops[:, :, i + 1]
            out |= ((x == a) & (y == b)) | ((x == b) & (y == a))
    return out


@dataclass(frozen=True, eq=False)
class HostFailover:
    """For one source host: per NIC port the programs and their retired mask, and per
    destination host the share of the connection's bandwidth kept."""

    host: int
    evs: int
    programs: tuple[Programs, ...]
    retired: tuple[NDArray[np.bool_], ...]
    share: NDArray[np.float64]

    @property
    def retired_count(self) -> int:
        return int(sum(int(r.sum()) for r in self.retired))

    def retired_evs(self, dst: int) -> list[int]:
        """The EV indices of the connection to host ``dst`` this host retires."""
        out: list[int] = []
        for pr, r in zip(self.programs, self.retired, strict=True):
            row = int(np.searchsorted(pr.dst, dst))
            out += pr.evs[r[row]].tolist()
        return sorted(out)


def host_failover(
    plan: AddressPlan, host: int, failures: Sequence[Failure], evs: int | None = None
) -> HostFailover:
    """The failover set of ``host`` (all its NIC ports) under ``failures``."""
    total = default_evs() if evs is None else evs
    dead = dead_of(plan.topology, failures)
    progs = tuple(programs_for(plan, host, port, total) for port in range(plan.host_ports))
    masks = tuple(retired(pr, dead) for pr in progs)
    live = sum((~m).sum(axis=1) for m in masks)
    share = np.asarray(live, dtype=np.float64) / total
    return HostFailover(host, total, progs, masks, share)
