"""The SRv6 addressing plan of one fabric: a uSID block per plane, a locator per switch and per
NIC port, loopbacks and link addresses, as arrays (never one object per NIC port).

Layout (``Format`` ``LBL/LNFL``, 32/16 by default; ``B_p`` the block of plane ``p``):

- plane ``p``'s block is the ``p``-th ``/LBL`` of the SRv6 prefix (``fcbb:bb00::/24`` gives
  ``fcbb:bb00::/32``, ``fcbb:bb01::/32``, ...);
- every switch has one global uSID in its plane: leaves ``1 ..``, then spines, then cores, each
  range sized for the growth held back (``ceil(n * (1 + growth))``), so growth adds IDs without
  renumbering; its locator is ``B_p:ID::/(LBL+LNFL)`` and its SID there is an End with NEXT-C-SID;
- a NIC port's SID is ``B_p:LEAF:K::/(LBL+2*LNFL)``, inside its leaf's locator (``K`` the leaf's
  downlink port + 1; 0 is the leaf itself): an End.DT6 that decapsulates. A leaf forwards its
  NIC SIDs by their routes, it never executes a uSID for them, so the NIC SID is the tail of
  every container that reaches the NIC;
- loopbacks: switch ``k`` (node id minus hosts) is ``loopbacks + 1 + k``/128; link ``i`` of the
  topology is the /127 ``links + 2i`` (lower end ``+0``, upper end ``+1``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.fabric.topology import Role, Topology
from clusterloom.srv6.encoding import ADDRESS_BITS, Format, container, parse_prefix

DEFAULT_PREFIX = "fcbb:bb00::/24"
DEFAULT_LOOPBACKS = "fd00:0:10::/64"
DEFAULT_LINKS = "fd00:0:11::/64"


@dataclass(frozen=True)
class PlanOptions:
    """What the plan is built from besides the topology."""

    prefix: str = DEFAULT_PREFIX
    fmt: Format = field(default_factory=Format)
    loopbacks: str = DEFAULT_LOOPBACKS
    links: str = DEFAULT_LINKS
    #: share of more switches per tier the uSID ranges keep room for
    growth: float = 0.0


def _overlap(a: tuple[int, int], b: tuple[int, int]) -> bool:
    shorter = min(a[1], b[1])
    low = ADDRESS_BITS - shorter
    return a[0] >> low == b[0] >> low


@dataclass(frozen=True, eq=False)
class AddressPlan:
    """The addresses of one fabric's SRv6 plan. Per-plane uSID IDs are closed forms of the
    switch index (:meth:`usid`); NIC ports are arrays indexed ``[host, host port]``."""

    topology: Topology
    options: PlanOptions
    prefix: tuple[int, int]
    loopbacks: tuple[int, int]
    links: tuple[int, int]
    #: uSID ranges per tier (sized for the growth): leaves, spines, cores
    caps: tuple[int, int, int]
    #: ``[host, port]``: the leaf index (within its plane) and the NIC's local uSID at it
    nic_leaf: NDArray[np.int32]
    nic_local: NDArray[np.int32]

    @property
    def fmt(self) -> Format:
        return self.options.fmt

    @property
    def planes(self) -> int:
        return self.topology.plan.planes

    @property
    def ports_per_host(self) -> int:
        return self.topology.plan.ports_per_host

    @property
    def host_ports(self) -> int:
        """NIC ports per host over all planes."""
        return self.planes * self.ports_per_host

    def block(self, plane: int) -> int:
        return self.prefix[0] | (plane << (ADDRESS_BITS - self.fmt.block_bits))

    def usid(self, role: Role, index: int | NDArray[np.int64]) -> int | NDArray[np.int64]:
        """The global uSID of switch ``index`` of ``role`` (the same in every plane)."""
        leaves, spines, _ = self.caps
        base = {Role.LEAF: 1, Role.SPINE: 1 + leaves, Role.CORE: 1 + leaves + spines}[role]
        return base + index

    @property
    def used_global(self) -> int:
        """Global uSIDs a plane reserves (the growth included)."""
        return sum(self.caps)

    def locator(self, plane: int, role: Role, index: int) -> int:
        u = self.usid(role, index)
        return container(self.block(plane), self.fmt, [int(u)])

    @property
    def locator_bits(self) -> int:
        return self.fmt.block_bits + self.fmt.usid_bits

    @property
    def nic_bits(self) -> int:
        return self.fmt.block_bits + 2 * self.fmt.usid_bits

    def nic_sid(self, host: int, port: int) -> int:
        """The End.DT6 SID of NIC port ``port`` of ``host``."""
        plane = port // self.ports_per_host
        leaf = int(self.usid(Role.LEAF, int(self.nic_leaf[host, port])))
        return container(self.block(plane), self.fmt, [leaf, int(self.nic_local[host, port])])

    def loopback(self, node: int) -> int:
        return self.loopbacks[0] + 1 + node - self.topology.plan.hosts

    def link_address(self, link: int, upper: bool) -> int:
        return self.links[0] + 2 * link + int(upper)

    @cached_property
    def nic_link(self) -> NDArray[np.int64]:
        """``[host, port]``: the topology link joining that NIC port to its leaf."""
        t = self.topology
        first = np.flatnonzero(t.link_tier == 1)
        out = np.empty((t.plan.hosts, self.host_ports), dtype=np.int64)
        out[t.link_src[first], t.link_src_port[first]] = first
        return out


def _ranges(topology: Topology, opts: PlanOptions) -> tuple[int, int, int]:
    p = topology.plan
    grow = 1.0 + opts.growth
    return tuple(math.ceil(n * grow) for n in (p.leaves, p.spines, p.cores))  # type: ignore[return-value]


def _check_space(topology: Topology, opts: PlanOptions, caps: tuple[int, int, int]) -> None:
    fmt, p = opts.fmt, topology.plan
    problems: list[Problem] = []
    need = sum(caps)
    if need > fmt.global_limit:
        problems.append(
            Problem(
                "srv6.usid_bits",
                f"a plane needs {need:,} global uSIDs ({p.leaves:,} leaves, {p.spines:,} "
                f"spines, {p.cores:,} cores, {opts.growth:.0%} growth held back) but "
                f"{fmt.usid_bits}-bit uSIDs hold {fmt.global_limit:,}; use longer uSIDs",
            )
        )
    down = p.tier("leaf").down
    if down + 1 >= 1 << fmt.usid_bits:
        problems.append(
            Problem(
                "srv6.usid_bits",
                f"a leaf has {down:,} NIC ports, more than {fmt.usid_bits}-bit local "
                "uSIDs number; use longer uSIDs",
            )
        )
    prefix_len = parse_prefix(opts.prefix, "srv6.prefix")[1]
    room = 1 << max(fmt.block_bits - prefix_len, 0) if fmt.block_bits >= prefix_len else 0
    if room < p.planes:
        problems.append(
            Problem(
                "srv6.prefix",
                f"{opts.prefix} holds {room:,} /{fmt.block_bits} blocks, the fabric has "
                f"{p.planes} planes; use a shorter prefix or a longer block",
            )
        )
    if problems:
        raise SpecError(problems)


def _check_prefixes(topology: Topology, opts: PlanOptions) -> tuple[tuple[int, int], ...]:
    named = {
        "srv6.prefix": opts.prefix,
        "srv6.loopbacks": opts.loopbacks,
        "srv6.links": opts.links,
    }
    parsed = {k: parse_prefix(v, k) for k, v in named.items()}
    problems: list[Problem] = []
    keys = list(parsed)
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            if _overlap(parsed[a], parsed[b]):
                problems.append(
                    Problem(a, f"{named[a]} overlaps {b} {named[b]}; give disjoint prefixes")
                )
    p = topology.plan
    switches = p.planes * p.switches_per_plane
    for key, need in (("srv6.loopbacks", switches + 1), ("srv6.links", 2 * topology.n_links)):
        bits = ADDRESS_BITS - parsed[key][1]
        if need > 1 << bits:
            problems.append(
                Problem(key, f"{named[key]} holds {1 << bits:,} addresses, {need:,} needed")
            )
    if problems:
        raise SpecError(problems)
    return parsed["srv6.prefix"], parsed["srv6.loopbacks"], parsed["srv6.links"]


def plan_addresses(topology: Topology, options: PlanOptions | None = None) -> AddressPlan:
    """The addressing plan of ``topology``; ``SpecError`` (naming the option and the numbers)
    when the format, the prefixes or the uSID space cannot hold it."""
    opts = options or PlanOptions()
    opts.fmt.check()
    if not 0 <= opts.growth <= 10:
        raise SpecError([Problem("srv6.growth", f"{opts.growth} is not in 0..10")])
    prefix, loopbacks, links = _check_prefixes(topology, opts)
    caps = _ranges(topology, opts)
    _check_space(topology, opts, caps)
    t = topology
    first = np.flatnonzero(t.link_tier == 1)
    ports = t.plan.planes * t.plan.ports_per_host
    nic_leaf = np.full((t.plan.hosts, ports), -1, dtype=np.int32)
    nic_local = np.zeros((t.plan.hosts, ports), dtype=np.int32)
    nic_leaf[t.link_src[first], t.link_src_port[first]] = t.node_index[t.link_dst[first]]
    nic_local[t.link_src[first], t.link_src_port[first]] = t.link_dst_port[first] + 1
    for a in (nic_leaf, nic_local):
        a.setflags(write=False)
    return AddressPlan(t, opts, prefix, loopbacks, links, caps, nic_leaf, nic_local)
