"""Fabric sizing: from a spec to tiers and per-tier switch counts with evenly striped uplinks.

Model (per plane; every plane of a fabric is an identical, independent Clos):

- A *host* is an accelerator (backend) or a node (frontend). Each host has ``p`` ports in each
  plane, so a node has ``rails = hosts_per_node * p`` ports per plane.
- Leaf: radix ``R1`` at the link speed, oversubscription ``o1`` (down:up); at most
  ``floor(R1*o1/(o1+1))`` downlinks. Rail-optimized: the leaf for rail ``r`` of a scalable unit (SU)
  takes port ``r`` of every node of that SU (``leaves_per_rail`` leaves per rail when an SU has more
  nodes than a leaf has downlinks). Fat-tree (ToR): a leaf takes all ports of ``nodes_per_leaf``
  consecutive nodes. Uplinks per leaf ``u1 = ceil(down / o1)``.
- 2 tiers: ``S`` spines, ``S`` the smallest divisor of ``u1`` with ``S * R2 >= leaves * u1`` and
  ``S >= 2`` (no single spine); every leaf sends ``u1 / S`` links to every spine.
- 3 tiers: pods of ``pod_leaves`` leaves (whole SUs when rail-optimized), ``S`` spines per pod with
  ``S | u1`` and ``S >= 2``; spine uplinks ``u2 = ceil(down2 / o2)``; core group ``j`` serves spine ``j`` of every
  pod, with ``C`` cores, ``C`` the smallest divisor of ``u2`` with ``C * R3 >= pods * u2``.

Choosing divisors keeps the stripes even: each lower switch connects to each upper switch it
reaches with the same number of links, and no switch exceeds its radix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from clusterloom.errors import Problem, SpecError
from clusterloom.spec import ClusterSpec, FabricSpec, SwitchRole
from clusterloom.units import PS_PER_NS

HostKind = Literal["accelerator", "node"]

#: Reach assumed per link tier when the spec names no medium (metres). A placement-aware choice
#: comes with the cabling stage; until then this picks the cheapest medium that covers it.
ASSUMED_REACH_M: dict[tuple[str, str], float] = {
    ("rail-optimized", "host_leaf"): 30.0,  # leaves in a network rack of the row
    ("fat-tree", "host_leaf"): 2.0,  # top-of-rack leaf
    ("rail-optimized", "leaf_spine"): 300.0,  # across a data hall
    ("fat-tree", "leaf_spine"): 300.0,
    ("rail-optimized", "spine_core"): 1000.0,  # between halls or buildings
    ("fat-tree", "spine_core"): 1000.0,
}


@dataclass(frozen=True)
class SwitchTier:
    """One switch tier of one plane: model, count and ports used per switch."""

    role: SwitchRole
    model: str
    count: int
    radix: int
    down: int
    up: int

    @property
    def ports_used(self) -> int:
        return self.down + self.up


@dataclass(frozen=True)
class FabricPlan:
    """The sized fabric: everything needed to generate it and price it. Counts are per plane."""

    fabric: str
    family: str
    host_kind: HostKind
    hosts: int
    hosts_per_node: int
    ports_per_host: int
    planes: int
    speed_gbps: int
    tiers: int
    su_nodes: int
    leaves_per_rail: int
    nodes_per_leaf: int
    leaves: int
    pod_leaves: int
    pods: int
    spines_per_pod: int
    cores_per_group: int
    switch_tiers: tuple[SwitchTier, ...]
    media: tuple[str, ...]
    latency_ps: tuple[int, ...]

    @property
    def nodes(self) -> int:
        return self.hosts // self.hosts_per_node

    @property
    def rails(self) -> int:
        """Host ports per node in one plane."""
        return self.hosts_per_node * self.ports_per_host

    @property
    def endpoints(self) -> int:
        """Host ports in one plane."""
        return self.hosts * self.ports_per_host

    @property
    def sus(self) -> int:
        return self.nodes // self.su_nodes

    @property
    def leaves_per_su(self) -> int:
        return self.rails * self.leaves_per_rail

    @property
    def spines(self) -> int:
        return self.pods * self.spines_per_pod

    @property
    def cores(self) -> int:
        return self.spines_per_pod * self.cores_per_group if self.tiers == 3 else 0

    def tier(self, role: SwitchRole) -> SwitchTier:
        for t in self.switch_tiers:
            if t.role == role:
                return t
        raise KeyError(role)

    @property
    def links_per_tier(self) -> tuple[int, ...]:
        """Links per plane in each link tier: host-leaf, leaf-spine, (spine-core)."""
        leaf, spine = self.tier("leaf"), self.tier("spine")
        counts = [self.endpoints, self.leaves * leaf.up]
        if self.tiers == 3:
            counts.append(self.spines * spine.up)
        return tuple(counts)

    @property
    def switches_per_plane(self) -> int:
        return sum(t.count for t in self.switch_tiers)

    @property
    def bisection_bps(self) -> int:
        """Bisection bandwidth of one plane under a leaf-aligned (3 tiers: pod-aligned) split:
        half of the smallest aggregate a tier can carry (host links, leaf uplinks, spine uplinks)."""
        speed = self.speed_gbps * 1_000_000_000
        return min(self.links_per_tier) * speed // 2

    @property
    def full_bisection_bps(self) -> int:
        return self.endpoints * self.speed_gbps * 1_000_000_000 // 2

    def ecmp_paths(self) -> int:
        """Distinct shortest switch-level paths between two leaves that are farthest apart."""
        if self.tiers == 2:
            return self.spines_per_pod
        if self.pods > 1:
            return self.spines_per_pod * self.cores_per_group
        return self.spines_per_pod


def _smallest_divisor_at_least(n: int, low: int) -> int | None:
    """The smallest divisor of ``n`` that is >= ``low`` (None when ``low > n``)."""
    for d in range(max(1, low), n + 1):
        if n % d == 0:
            return d
    return None


def _largest_divisor_at_most(n: int, high: int) -> int:
    for d in range(min(n, high), 0, -1):
        if n % d == 0:
            return d
    return 1


def _max_down(radix: int, ratio: float) -> int:
    """Most downlinks a switch of ``radix`` ports can have at oversubscription ``ratio``."""
    return math.floor(radix * ratio / (ratio + 1) + 1e-9)


def _up_for(down: int, ratio: float) -> int:
    return math.ceil(down / ratio - 1e-9)


@dataclass(frozen=True)
class HostSide:
    """What the compute section puts on one fabric."""

    kind: HostKind
    hosts: int
    hosts_per_node: int
    ports: int
    speed_gbps: int


def host_side(spec: ClusterSpec, fabric: str) -> HostSide:
    c = spec.compute
    if fabric == "backend":
        return HostSide(
            "accelerator", c.accelerators, c.accelerators_per_node, c.nic.scale_out,
            c.nic.port_speed_gbps,
        )
    if c.frontend_nic is None:
        raise SpecError([Problem("compute.frontend_nic", "a frontend fabric needs host ports")])
    return HostSide("node", c.nodes, 1, c.frontend_nic.ports_per_node, c.frontend_nic.port_speed_gbps)


def fabric_spec(spec: ClusterSpec, fabric: str) -> FabricSpec:
    fs = spec.fabrics.backend if fabric == "backend" else spec.fabrics.frontend
    if fs is None:
        raise SpecError([Problem(f"fabrics.{fabric}", "this spec has no such fabric")])
    return fs


def choose_media(spec: ClusterSpec, fs: FabricSpec, tier: str, speed_gbps: int) -> str:
    """The medium named in the spec for ``tier``, else the cheapest one at ``speed_gbps`` that
    covers the tier's assumed reach (ties broken by name)."""
    catalog = spec.resolved_catalog()
    named = getattr(fs.media, tier)
    if named is not None and catalog.media[named].speed_gbps == speed_gbps:
        return str(named)
    reach = ASSUMED_REACH_M[(fs.family, tier)]
    fits = [
        (m.cost_usd_per_end * 2 + m.cable_cost_usd, name)
        for name, m in catalog.media.items()
        if m.speed_gbps == speed_gbps and m.reach_m >= reach
    ]
    if not fits:
        raise SpecError(
            [
                Problem(
                    f"fabrics.{'backend' if fs is spec.fabrics.backend else 'frontend'}.media.{tier}",
                    f"the catalog has no {speed_gbps}G medium reaching {reach:g} m; add one under "
                    "catalog.media or name one here",
                )
            ]
        )
    return min(fits)[1]


def plan_fabric(
    spec: ClusterSpec,
    fabric: str = "backend",
    *,
    tiers: int | None = None,
    speed_gbps: int | None = None,
    host_ports: int | None = None,
) -> FabricPlan:
    """Size ``fabric`` of ``spec``. The keywords override the spec to compare options: ``tiers``;
    ``host_ports``, the ports per host given to this fabric (the rest serve scale-up: network
    fungibility); ``speed_gbps``, which keeps the host bandwidth and re-splits it into that many
    ports, one plane each.

    Raises ``SpecError`` naming the field to change when the fabric cannot be built.
    """
    fs = fabric_spec(spec, fabric)
    hs = host_side(spec, fabric)
    base = f"fabrics.{fabric}"
    catalog = spec.resolved_catalog()
    ports, planes = hs.ports, fs.planes or hs.ports
    if host_ports is not None and host_ports != ports:
        ports = host_ports
        planes = fs.planes if fs.planes and ports % fs.planes == 0 else ports
    speed = hs.speed_gbps
    if speed_gbps is not None and speed_gbps != speed:
        bandwidth = ports * hs.speed_gbps
        if bandwidth % speed_gbps:
            raise SpecError([Problem(base, f"{bandwidth}G per host does not split into {speed_gbps}G ports")])
        ports = planes = bandwidth // speed_gbps
        speed = speed_gbps
    if ports % planes:
        raise SpecError([Problem(f"{base}.planes", f"{ports} host ports do not divide over {planes} planes")])
    p = ports // planes
    nodes = hs.hosts // hs.hosts_per_node
    rails = hs.hosts_per_node * p

    models = {role: catalog.switches[fs.switch_for(role)] for role in ("leaf", "spine", "core")}
    radix: dict[SwitchRole, int] = {}
    for role, model in models.items():
        r = model.radix(speed)
        if r is None:
            raise SpecError(
                [Problem(f"{base}.switch", f"switch '{fs.switch_for(role)}' cannot run {speed}G ports")]  # type: ignore[arg-type]
            )
        radix[role] = r  # type: ignore[index]

    o1, o2 = fs.oversubscription.leaf, fs.oversubscription.spine
    d1_max = _max_down(radix["leaf"], o1)
    problems: list[Problem] = []

    # --- leaves -----------------------------------------------------------------------------
    if fs.family == "rail-optimized":
        if fs.scalable_unit_nodes is None:
            su_nodes = _largest_divisor_at_most(nodes, d1_max)
        else:
            su_nodes = fs.scalable_unit_nodes
            if nodes % su_nodes:
                problems.append(
                    Problem(
                        f"{base}.scalable_unit_nodes",
                        f"{nodes} nodes do not form whole scalable units of {su_nodes}; "
                        f"use a divisor of {nodes}",
                    )
                )
        leaves_per_rail = math.ceil(su_nodes / d1_max)
        if su_nodes % leaves_per_rail:
            problems.append(
                Problem(
                    f"{base}.scalable_unit_nodes",
                    f"a scalable unit of {su_nodes} nodes needs {leaves_per_rail} leaves per rail "
                    f"(a leaf has {d1_max} downlinks) but does not split evenly over them; use a "
                    f"multiple of {leaves_per_rail} nodes",
                )
            )
        if problems:
            raise SpecError(problems)
        nodes_per_leaf = su_nodes // leaves_per_rail
        down1 = nodes_per_leaf
        leaves = (nodes // su_nodes) * rails * leaves_per_rail
    else:
        nodes_per_leaf = fs.nodes_per_leaf or d1_max // rails
        if nodes_per_leaf * rails > d1_max:
            raise SpecError(
                [
                    Problem(
                        f"{base}.nodes_per_leaf",
                        f"{nodes_per_leaf} nodes x {rails} ports need {nodes_per_leaf * rails} "
                        f"downlinks; a leaf has {d1_max} at {o1:g}:1; use at most "
                        f"{d1_max // rails}",
                    )
                ]
            )
        if nodes_per_leaf == 0:
            raise SpecError(
                [
                    Problem(
                        f"{base}.switch",
                        f"a node has {rails} ports per plane but a leaf has only {d1_max} "
                        "downlinks; use more planes or a larger switch",
                    )
                ]
            )
        su_nodes, leaves_per_rail = nodes_per_leaf, 1
        down1 = nodes_per_leaf * rails
        leaves = math.ceil(nodes / nodes_per_leaf)
    up1 = _up_for(down1, o1)

    # --- tiers ----------------------------------------------------------------------------
    # at least two spines per leaf when it has two uplinks: one spine would be a single point
    # of failure with no path diversity
    min_fan = min(2, up1)
    want = fs.tiers if tiers is None else tiers
    two = _smallest_divisor_at_least(up1, max(min_fan, math.ceil(leaves * up1 / radix["spine"])))
    endpoints = hs.hosts * p
    two_max = radix["spine"] * down1
    if want == 2 and two is None:
        raise SpecError(
            [
                Problem(
                    f"{base}.tiers",
                    f"2 tiers reach at most {radix['spine']} leaves ({two_max} host ports per "
                    f"plane at {speed}G); this plane has {endpoints} host ports in {leaves} leaves; "
                    "use tiers: 3 (or auto), more planes or a larger switch",
                )
            ]
        )
    if two is not None and want in (2, "auto"):
        spines = two
        switch_tiers = (
            SwitchTier("leaf", fs.switch_for("leaf"), leaves, radix["leaf"], down1, up1),
            SwitchTier("spine", fs.switch_for("spine"), spines, radix["spine"], leaves * up1 // spines, 0),
        )
        return _finish(
            spec, fs, fabric, hs, p, planes, speed, 2, su_nodes, leaves_per_rail, nodes_per_leaf,
            leaves, leaves, 1, spines, 0, switch_tiers,
        )

    # --- three tiers: pods ---------------------------------------------------------------------
    d2_max = _max_down(radix["spine"], o2)
    leaves_per_su = rails * leaves_per_rail if fs.family == "rail-optimized" else 1
    if fs.pod_leaves is not None:
        pod_leaves = fs.pod_leaves
        if pod_leaves > d2_max:
            problems.append(
                Problem(
                    f"{base}.pod_leaves",
                    f"a pod of {pod_leaves} leaves exceeds the {d2_max} downlinks of a spine; "
                    f"use at most {d2_max}",
                )
            )
        if pod_leaves % leaves_per_su:
            problems.append(
                Problem(
                    f"{base}.pod_leaves",
                    f"a pod must hold whole scalable units of {leaves_per_su} leaves; use a "
                    f"multiple of {leaves_per_su}",
                )
            )
        if problems:
            raise SpecError(problems)
    else:
        pod_leaves = (d2_max // leaves_per_su) * leaves_per_su
        if pod_leaves == 0:
            raise SpecError(
                [
                    Problem(
                        f"{base}.scalable_unit_nodes",
                        f"a scalable unit has {leaves_per_su} leaves but a spine has only "
                        f"{d2_max} downlinks; use smaller scalable units",
                    )
                ]
            )
        pod_leaves = min(pod_leaves, math.ceil(leaves / leaves_per_su) * leaves_per_su)
    spines_per_pod = _smallest_divisor_at_least(
        up1, max(min_fan, math.ceil(pod_leaves * up1 / d2_max))
    )
    assert spines_per_pod is not None  # pod_leaves <= d2_max guarantees a divisor
    down2 = pod_leaves * up1 // spines_per_pod
    up2 = _up_for(down2, o2)
    if down2 + up2 > radix["spine"]:
        raise SpecError(
            [Problem(f"{base}.oversubscription.spine", f"a spine needs {down2 + up2} ports, has {radix['spine']}")]
        )
    pods = math.ceil(leaves / pod_leaves)
    cores_per_group = _smallest_divisor_at_least(up2, math.ceil(pods * up2 / radix["core"]))
    if cores_per_group is None:
        three_max = radix["core"] * pod_leaves * down1
        raise SpecError(
            [
                Problem(
                    f"{base}.tiers" if want != "auto" else f"{base}",
                    f"3 tiers reach at most {radix['core']} pods of {pod_leaves} leaves "
                    f"({three_max} host ports per plane at {speed}G); this plane has {endpoints} "
                    f"host ports needing {pods} pods; use more planes, a larger switch or "
                    "oversubscription",
                )
            ]
        )
    core_down = pods * up2 // cores_per_group
    switch_tiers = (
        SwitchTier("leaf", fs.switch_for("leaf"), leaves, radix["leaf"], down1, up1),
        SwitchTier("spine", fs.switch_for("spine"), pods * spines_per_pod, radix["spine"], down2, up2),
        SwitchTier("core", fs.switch_for("core"), spines_per_pod * cores_per_group, radix["core"], core_down, 0),
    )
    return _finish(
        spec, fs, fabric, hs, p, planes, speed, 3, su_nodes, leaves_per_rail, nodes_per_leaf,
        leaves, pod_leaves, pods, spines_per_pod, cores_per_group, switch_tiers,
    )


def _finish(
    spec: ClusterSpec,
    fs: FabricSpec,
    fabric: str,
    hs: HostSide,
    p: int,
    planes: int,
    speed: int,
    tiers: int,
    su_nodes: int,
    leaves_per_rail: int,
    nodes_per_leaf: int,
    leaves: int,
    pod_leaves: int,
    pods: int,
    spines_per_pod: int,
    cores_per_group: int,
    switch_tiers: tuple[SwitchTier, ...],
) -> FabricPlan:
    link_tiers = ("host_leaf", "leaf_spine", "spine_core")[:tiers]
    media = tuple(choose_media(spec, fs, t, speed) for t in link_tiers)
    latency = tuple(round(getattr(fs.link_latency_ns, t) * PS_PER_NS) for t in link_tiers)
    return FabricPlan(
        fabric=fabric,
        family=fs.family,
        host_kind=hs.kind,
        hosts=hs.hosts,
        hosts_per_node=hs.hosts_per_node,
        ports_per_host=p,
        planes=planes,
        speed_gbps=speed,
        tiers=tiers,
        su_nodes=su_nodes,
        leaves_per_rail=leaves_per_rail,
        nodes_per_leaf=nodes_per_leaf,
        leaves=leaves,
        pod_leaves=pod_leaves,
        pods=pods,
        spines_per_pod=spines_per_pod,
        cores_per_group=cores_per_group,
        switch_tiers=switch_tiers,
        media=media,
        latency_ps=latency,
    )
