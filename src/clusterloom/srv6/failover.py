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
    """What the failures kill: hop keys (``a * nodes + b``, both orders) with no live link
    left, switch nodes and planes."""

    hops: NDArray[np.int64]
    nodes: NDArray[np.int64]
    planes: frozenset[int]


def dead_of(topology: Topology, failures: Sequence[Failure]) -> Dead:
    t = topology
    links = np.unique(np.array([f.target for f in failures if f.kind == "link"], dtype=np.int64))
    nodes = np.array(sorted({f.target for f in failures if f.kind == "switch"}), dtype=np.int64)
    planes = frozenset(f.target for f in failures if f.kind == "plane")
    n = np.int64(t.n_nodes)
    keys = t.link_src[links].astype(np.int64) * n + t.link_dst[links]
    hit, lost = np.unique(keys, return_counts=True)
    # a hop is dead when all its parallel links are: count the links of each hit pair
    pair = t.link_src.astype(np.int64) * n + t.link_dst
    total = np.array([int((pair == k).sum()) for k in hit.tolist()], dtype=np.int64)
    dead = hit[lost >= total]
    flipped = (dead % n) * n + dead // n
    return Dead(np.union1d(dead, flipped), nodes, planes)


def retired(programs: Programs, dead: Dead) -> NDArray[np.bool_]:
    """``[d, m]``: True where the program crosses a dead hop, switch or plane."""
    plan = programs.plan
    t = plan.topology
    shape = programs.path.shape
    if programs.plane in dead.planes:
        return np.ones(shape, dtype=bool)
    hops = hops_of(programs).astype(np.int64)
    src = np.full((*shape, 1), programs.host, dtype=np.int64)
    dst = np.broadcast_to(programs.dst.astype(np.int64)[:, None, None], (*shape, 1))
    # the path's nodes; -1 padding repeats the last switch so the pairs it makes are loops
    last = np.maximum.accumulate(np.where(hops >= 0, np.arange(hops.shape[2]), 0), axis=2)
    nodes = np.take_along_axis(hops, last, axis=2)
    way = np.concatenate([src, nodes, dst], axis=2)
    keys = way[:, :, :-1] * np.int64(t.n_nodes) + way[:, :, 1:]
    out: NDArray[np.bool_] = np.asarray(np.isin(keys, dead.hops).any(axis=2))
    if dead.nodes.size:
        out |= np.isin(hops, dead.nodes).any(axis=2)
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
