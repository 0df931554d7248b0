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
- 3 tiers: pods of ``pod_leaves`` leaves (whole SUs when rail-optimized), ``S`` spines per pod
  with ``S | u1`` and ``S >= 2`` (the spec's ``pod_spines`` when given and it carries the
  pod's uplinks, else the fewest); spine uplinks ``u2 = ceil(down2 / o2)``; core group ``j`` serves
  spine ``j`` of every pod, with ``C`` cores, ``C`` the smallest divisor of ``u2`` with
  ``C * R3 >= pods * u2``.

Choosing divisors keeps the stripes even: each lower switch connects to each upper switch it
reaches with the same number of links, and no switch exceeds its radix.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from clusterloom.errors import Problem, SpecError
from clusterloom.spec import (
    LINK_TIERS,
    SWITCH_ROLES,
    ClusterSpec,
    FabricSpec,
    SwitchRole,
    compute_rack_name,
)
from clusterloom.units import BPS_PER_GBPS, PS_PER_NS

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

#: Host-leaf reach assumed when the leaf stands in the compute rack it serves: the height of a
#: 48U rack (2.1 m) plus the 0.6 m cabling adds inside a rack, rounded up.
IN_RACK_REACH_M = 3.0


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
    oversubscription: tuple[float, float] = (1.0, 1.0)

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
        """Scalable units, the last one possibly partial (rail-optimized)."""
        return -(-self.nodes // self.su_nodes)

    @property
    def last_su_leaves_per_rail(self) -> int:
        """Leaves per rail in the last scalable unit (fewer when it is partial)."""
        rem = self.nodes - (self.sus - 1) * self.su_nodes
        return -(-rem // self.nodes_per_leaf)

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

    def _bisection_cut(self) -> tuple[int, int, int]:
        """Host ports on each side of the bisection split and the links that limit crossing it.

        The split takes the first half of the leaves (3 tiers with several pods: of the pods)
        against the rest. With even stripes the flow spreads evenly, so the cut is the smallest
        of, on either side, the host ports, the leaf uplinks and (across pods) the spine uplinks.
        """
        leaf, spine = self.tier("leaf"), self.tier("spine")
        if self.tiers == 3 and self.pods > 1:
            a_leaves = (self.pods // 2) * self.pod_leaves
            a_spines = (self.pods // 2) * self.spines_per_pod
            spine_ups = [a_spines * spine.up, (self.spines - a_spines) * spine.up]
        else:
            a_leaves, spine_ups = self.leaves // 2, []
        hosts_a = self._host_ports_below(a_leaves)
        hosts_b = self.endpoints - hosts_a
        ups = [a_leaves * leaf.up, (self.leaves - a_leaves) * leaf.up, *spine_ups]
        return hosts_a, hosts_b, min(hosts_a, hosts_b, *ups)

    def _host_ports_below(self, n_leaves: int) -> int:
        """Host ports on the first ``n_leaves`` leaves of a plane. A leaf holds ``leaf.down``
        ports but for the leaves of a partial scalable unit (rail-optimized; the only one when
        the scalable unit is planned for a larger size), each of which takes one port of each
        of its nodes: ``nodes_per_leaf`` of them, the last group of a rail fewer."""
        down = self.tier("leaf").down
        if self.family != "rail-optimized":
            return min(n_leaves * down, self.endpoints)
        full = (self.sus - 1) * self.leaves_per_su  # leaves of the full scalable units
        if n_leaves <= full:
            return n_leaves * down
        per_rail = self.last_su_leaves_per_rail
        rem = self.nodes - (self.sus - 1) * self.su_nodes  # nodes of the last one
        last = [
            min(self.nodes_per_leaf, rem - (k % per_rail) * self.nodes_per_leaf)
            for k in range(n_leaves - full)
        ]
        return full * down + sum(last)

    @property
    def bisection_bps(self) -> int:
        """Bisection bandwidth of one plane: the most traffic that can cross the split."""
        return self._bisection_cut()[2] * self.speed_gbps * BPS_PER_GBPS

    @property
    def bisection_asked_bps(self) -> float:
        """What the asked oversubscription allows across the same split: the smaller side's host
        bandwidth over leaf times spine oversubscription (the spine's only across pods)."""
        hosts_a, hosts_b, _ = self._bisection_cut()
        ratio = self.oversubscription[0] * (self.oversubscription[1] if self.pods > 1 else 1.0)
        return min(hosts_a, hosts_b) * self.speed_gbps * BPS_PER_GBPS / ratio

    @property
    def full_bisection_bps(self) -> int:
        return self.endpoints * self.speed_gbps * BPS_PER_GBPS // 2

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


def _max_down(radix: int, ratio: float) -> int:
    """Most downlinks a switch of ``radix`` ports can have at oversubscription ``ratio``."""
    return math.floor(radix * ratio / (ratio + 1) + 1e-9)


def _up_for(down: int, ratio: float) -> int:
    return math.ceil(down / ratio - 1e-9)


def _refuse(where: str, message: str) -> SpecError:
    return SpecError([Problem(where, message)])


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
        nic = c.nic
        return HostSide(
            "accelerator",
            c.accelerators,
            c.accelerators_per_node,
            nic.scale_out,
            nic.port_speed_gbps,
        )
    if c.frontend_nic is None:
        raise _refuse("compute.frontend_nic", "a frontend fabric needs host ports")
    fnic = c.frontend_nic
    return HostSide("node", c.nodes, 1, fnic.ports_per_node, fnic.port_speed_gbps)


def fabric_spec(spec: ClusterSpec, fabric: str) -> FabricSpec:
    fs = spec.fabrics.backend if fabric == "backend" else spec.fabrics.frontend
    if fs is None:
        raise _refuse(f"fabrics.{fabric}", "this spec has no such fabric")
    return fs


def choose_media(spec: ClusterSpec, fabric: str, tier: str, speed_gbps: int) -> str:
    """The medium named in the spec for ``tier`` (when it runs at ``speed_gbps``), else the
    cheapest one at that speed that covers the tier's assumed reach (ties broken by name)."""
    fs = fabric_spec(spec, fabric)
    catalog = spec.resolved_catalog()
    named = getattr(fs.media, tier)
    if named is not None and catalog.media[named].speed_gbps == speed_gbps:
        return str(named)
    reach = ASSUMED_REACH_M[(fs.family, tier)]
    if tier == "host_leaf" and fs.leaf_placement == "in-rack":
        reach = IN_RACK_REACH_M
    fits = [
        (m.cost_usd_per_end * 2 + m.cable_cost_usd, name)
        for name, m in catalog.media.items()
        if m.speed_gbps == speed_gbps and m.reach_m >= reach
    ]
    if not fits:
        raise _refuse(
            f"fabrics.{fabric}.media.{tier}",
            f"the catalog has no {speed_gbps}G medium reaching {reach:g} m; add one under "
            "catalog.media or name one here",
        )
    return min(fits)[1]


@dataclass(frozen=True)
class _Hosts:
    """The host side of one sizing: ``p`` ports per host in each of ``planes`` planes."""

    side: HostSide
    p: int
    planes: int
    speed: int

    @property
    def nodes(self) -> int:
        return self.side.hosts // self.side.hosts_per_node

    @property
    def rails(self) -> int:
        return self.side.hosts_per_node * self.p

    @property
    def endpoints(self) -> int:
        return self.side.hosts * self.p


def _resolve_hosts(
    spec: ClusterSpec, fabric: str, speed_gbps: int | None, host_ports: int | None
) -> _Hosts:
    fs, side = fabric_spec(spec, fabric), host_side(spec, fabric)
    base = f"fabrics.{fabric}"
    ports, planes = side.ports, fs.planes or side.ports
    if host_ports is not None and host_ports != ports:
        ports = host_ports
        planes = fs.planes if fs.planes and ports % fs.planes == 0 else ports
    speed = side.speed_gbps
    if speed_gbps is not None and speed_gbps != speed:
        bandwidth = ports * speed
        if bandwidth % speed_gbps:
            raise _refuse(base, f"{bandwidth}G per host does not split into {speed_gbps}G ports")
        ports = planes = bandwidth // speed_gbps
        speed = speed_gbps
    if ports % planes:
        raise _refuse(f"{base}.planes", f"{ports} host ports do not divide over {planes} planes")
    return _Hosts(side, ports // planes, planes, speed)


@dataclass(frozen=True)
class _Leaves:
    su_nodes: int
    leaves_per_rail: int
    nodes_per_leaf: int
    count: int
    down: int
    up: int

    def per_su(self, family: str, rails: int) -> int:
        """Leaves of one scalable unit (pods hold whole ones); 1 for a fat-tree."""
        return rails * self.leaves_per_rail if family == "rail-optimized" else 1


def _size_leaves(
    fs: FabricSpec,
    base: str,
    h: _Hosts,
    d1_max: int,
    rack_nodes: int = 0,
    su_nodes: int | None = None,
) -> _Leaves:
    """Leaves of one plane; ``rack_nodes`` (nodes of a compute rack) caps the default leaf of an
    in-rack fat tree at the nodes of one rack, the largest divisor of it that fits;
    ``su_nodes`` the scalable unit of a planned size (``growth.plan_for_accelerators``)."""
    o1 = fs.oversubscription.leaf
    nodes, rails = h.nodes, h.rails
    if fs.family == "fat-tree":
        fill = d1_max // rails
        if rack_nodes and fs.leaf_placement == "in-rack" and fill:
            fill = max(d for d in range(1, min(fill, rack_nodes) + 1) if rack_nodes % d == 0)
        per_leaf = fs.nodes_per_leaf or fill
        if per_leaf == 0:
            raise _refuse(
                f"{base}.switch",
                f"a node has {rails} ports per plane but a leaf has only {d1_max} downlinks; "
                "use more planes or a larger switch",
            )
        if per_leaf * rails > d1_max:
            raise _refuse(
                f"{base}.nodes_per_leaf",
                f"{per_leaf} nodes x {rails} ports need {per_leaf * rails} downlinks; a leaf has "
                f"{d1_max} at {o1:g}:1; use at most {d1_max // rails}",
            )
        down = per_leaf * rails
        return _Leaves(per_leaf, 1, per_leaf, math.ceil(nodes / per_leaf), down, _up_for(down, o1))

    # a planned size's scalable unit when the spec names none (the first build's SUs grow whole)
    su_nodes = fs.scalable_unit_nodes or su_nodes or min(nodes, d1_max)
    per_rail = math.ceil(su_nodes / d1_max)
    if su_nodes % per_rail:
        raise _refuse(
            f"{base}.scalable_unit_nodes",
            f"a scalable unit of {su_nodes} nodes needs {per_rail} leaves per rail (a leaf has "
            f"{d1_max} downlinks) but does not split evenly over them; use a multiple of "
            f"{per_rail} nodes",
        )
    per_leaf = su_nodes // per_rail
    # the last scalable unit may be partial: it gets only the leaves its nodes need
    full, rem = divmod(nodes, su_nodes)
    count = rails * (full * per_rail + math.ceil(rem / per_leaf))
    return _Leaves(su_nodes, per_rail, per_leaf, count, per_leaf, _up_for(per_leaf, o1))


@dataclass(frozen=True)
class _Upper:
    """Spine and core layers of one plane."""

    pod_leaves: int
    pods: int
    spines_per_pod: int
    spine_down: int
    spine_up: int
    cores_per_group: int = 0
    core_down: int = 0


def _pod_leaves(fs: FabricSpec, base: str, leaves: _Leaves, h: _Hosts, d2_max: int) -> int:
    per_su = leaves.per_su(fs.family, h.rails)
    if fs.pod_leaves is None:
        most = (d2_max // per_su) * per_su
        if most == 0:
            raise _refuse(
                f"{base}.scalable_unit_nodes",
                f"a scalable unit has {per_su} leaves but a spine has only {d2_max} downlinks; "
                "use smaller scalable units",
            )
        # as few pods as the spines allow, then leaves spread evenly over them (whole SUs)
        pods = math.ceil(leaves.count / most)
        return min(most, math.ceil(math.ceil(leaves.count / pods) / per_su) * per_su)
    problems = []
    if fs.pod_leaves > d2_max:
        problems.append(
            Problem(
                f"{base}.pod_leaves",
                f"a pod of {fs.pod_leaves} leaves exceeds the {d2_max} downlinks of a spine; "
                f"use at most {d2_max}",
            )
        )
    if fs.pod_leaves % per_su:
        problems.append(
            Problem(
                f"{base}.pod_leaves",
                f"a pod must hold whole scalable units of {per_su} leaves; use a multiple "
                f"of {per_su}",
            )
        )
    if problems:
        raise SpecError(problems)
    return fs.pod_leaves


def _pod_spines(fs: FabricSpec, base: str, leaves: _Leaves, pod_leaves: int, d2_max: int) -> int:
    """Aggregation (spine) switches per pod: the spec's ``pod_spines`` when it carries the pod's
    leaf uplinks at the spine's oversubscription with even stripes, else the fewest that do."""
    need = math.ceil(pod_leaves * leaves.up / d2_max)
    low = max(min(2, leaves.up), need)
    if fs.pod_spines is None:
        spines = _smallest_divisor_at_least(leaves.up, low)
        assert spines is not None  # pod_leaves <= d2_max guarantees a divisor
        return spines
    asked = fs.pod_spines
    if asked < low or leaves.up % asked:
        fits = [d for d in range(low, leaves.up + 1) if leaves.up % d == 0]
        why = (
            f"{asked} x {d2_max} spine downlinks carry fewer than the {pod_leaves} leaves x "
            f"{leaves.up} uplinks = {pod_leaves * leaves.up} of a pod"
            if asked < need
            else f"{leaves.up} uplinks per leaf do not stripe evenly over {asked} switches"
            if leaves.up % asked
            else f"a pod needs at least {low} aggregation switches (no single point of failure)"
        )
        raise _refuse(
            f"{base}.pod_spines",
            f"{why} (at {fs.oversubscription.spine:g}:1 on the spine); use one of "
            f"{', '.join(map(str, fits)) or 'none: fewer leaves per pod or a larger switch'}",
        )
    return asked


def _three_tiers(
    fs: FabricSpec,
    base: str,
    leaves: _Leaves,
    h: _Hosts,
    radix: dict[SwitchRole, int],
    want: int | str,
    planned: FabricPlan | None = None,
) -> _Upper:
    """Pods of leaves under their aggregation (spine) switches, then a core layer; with
    ``planned`` (the plan of the size to plan for) its pods' leaves, spines and core groups."""
    o2 = fs.oversubscription.spine
    d2_max = _max_down(radix["spine"], o2)
    if planned is not None:
        pod_leaves, spines = planned.pod_leaves, planned.spines_per_pod
    else:
        pod_leaves = _pod_leaves(fs, base, leaves, h, d2_max)
        spines = _pod_spines(fs, base, leaves, pod_leaves, d2_max)
    down2 = pod_leaves * leaves.up // spines
    up2 = _up_for(down2, o2)
    pods = math.ceil(leaves.count / pod_leaves)
    cores = (
        planned.cores_per_group
        if planned is not None
        else _smallest_divisor_at_least(up2, math.ceil(pods * up2 / radix["core"]))
    )
    if cores is None:
        raise _refuse(
            f"{base}.tiers" if want == 3 else base,
            f"3 tiers reach at most {radix['core']} pods of {pod_leaves} leaves "
            f"({radix['core'] * pod_leaves * leaves.down} host ports per plane at "
            f"{h.speed}G); this plane has {h.endpoints} host ports needing {pods} pods; use "
            "more planes, a larger switch or oversubscription",
        )
    return _Upper(pod_leaves, pods, spines, down2, up2, cores, pods * up2 // cores)


def _size_upper(
    fs: FabricSpec,
    base: str,
    h: _Hosts,
    leaves: _Leaves,
    radix: dict[SwitchRole, int],
    want: int | str | FabricPlan,
) -> _Upper:
    """Spines (and cores) of one plane; ``want`` a tier count, ``auto``, or the plan of the
    size to plan for (``growth.plan_for_accelerators``): its tiers, pods, spines per pod and
    cores per group, with fewer of their ports used at this size."""
    planned = want if isinstance(want, FabricPlan) else None
    # at least two spines per leaf when it has two uplinks: a single spine would be a single
    # point of failure with no path diversity
    min_fan = min(2, leaves.up)
    two = _smallest_divisor_at_least(
        leaves.up, max(min_fan, math.ceil(leaves.count * leaves.up / radix["spine"]))
    )
    if planned is not None:
        want = planned.tiers
        two = planned.spines_per_pod if planned.tiers == 2 else None
    if want == 2 and two is None:
        raise _refuse(
            f"{base}.tiers",
            f"2 tiers reach at most {radix['spine']} leaves ({radix['spine'] * leaves.down} host "
            f"ports per plane at {h.speed}G); this plane has {h.endpoints} host ports in "
            f"{leaves.count} leaves; use tiers: 3 (or auto), more planes or a larger switch",
        )
    if two is not None and want in (2, "auto"):
        if fs.pod_spines is not None:
            raise _refuse(
                f"{base}.pod_spines",
                f"{fs.pod_spines} aggregation switches per pod asked, but this fabric sizes to "
                "2 tiers (no pods); set tiers: 3 or leave pod_spines out",
            )
        return _Upper(leaves.count, 1, two, leaves.count * leaves.up // two, 0)
    assert not isinstance(want, FabricPlan)
    return _three_tiers(fs, base, leaves, h, radix, want, planned)


def _planned(
    spec: ClusterSpec,
    fabric: str,
    tiers: int | None,
    speed_gbps: int | None,
    host_ports: int | None,
    plan_for: int | None,
) -> FabricPlan | None:
    """The fabric sized for ``plan_for`` accelerators (default ``growth.plan_for_accelerators``)
    when that is more than the spec has: the shape whose upper layers the first build takes."""
    where = "growth.plan_for_accelerators"
    if plan_for is None and spec.growth is not None:
        plan_for = spec.growth.plan_for_accelerators
    have = spec.compute.accelerators
    if plan_for is None or plan_for == have:
        return None
    if plan_for < have:
        raise _refuse(
            where,
            f"{plan_for:,} is below compute.accelerators ({have:,}); raise it to the size the "
            "next growth steps reach, or remove it",
        )
    try:
        target = ClusterSpec.model_validate(
            {
                **spec.model_dump(),
                "compute": {**spec.compute.model_dump(), "accelerators": plan_for},
                "growth": None,
            }
        )
        return plan_fabric(
            target, fabric, tiers=tiers, speed_gbps=speed_gbps, host_ports=host_ports
        )
    except SpecError as exc:
        raise _refuse(
            where, f"the fabric cannot be sized for {plan_for:,}: {exc.problems[0].message}"
        ) from exc
    except ValueError as exc:  # pydantic's ValidationError: a count the compute cannot take
        first = str(exc).splitlines()[-1].strip()
        raise _refuse(where, f"{plan_for:,} accelerators: {first}") from exc


def plan_fabric(
    spec: ClusterSpec,
    fabric: str = "backend",
    *,
    tiers: int | None = None,
    speed_gbps: int | None = None,
    host_ports: int | None = None,
    plan_for: int | None = None,
) -> FabricPlan:
    """Size ``fabric`` of ``spec``. The keywords override the spec to compare options: ``tiers``;
    ``host_ports``, the ports per host given to this fabric (the rest serve scale-up: network
    fungibility); ``speed_gbps``, which keeps the host bandwidth and re-splits it into that many
    ports, one plane each; ``plan_for`` (default ``growth.plan_for_accelerators``) sizes the
    spine and core layers for that many accelerators (their counts and stripes; fewer of their
    ports used now), so that growing to it keeps every installed link.

    Raises ``SpecError`` naming the field to change when the fabric cannot be built.
    """
    fs = fabric_spec(spec, fabric)
    base = f"fabrics.{fabric}"
    h = _resolve_hosts(spec, fabric, speed_gbps, host_ports)
    catalog = spec.resolved_catalog()
    radix: dict[SwitchRole, int] = {}
    for role in SWITCH_ROLES:
        r = catalog.switches[fs.switch_for(role)].radix(h.speed)
        if r is None:
            raise _refuse(f"{base}.switch", f"'{fs.switch_for(role)}' has no {h.speed}G ports")
        radix[role] = r
    crack = catalog.racks.get(compute_rack_name(spec))
    rack_nodes = crack.servers if crack is not None else 0
    d1_max = _max_down(radix["leaf"], fs.oversubscription.leaf)
    planned = _planned(spec, fabric, tiers, speed_gbps, host_ports, plan_for)
    su_nodes = planned.su_nodes if planned is not None else None
    leaves = _size_leaves(fs, base, h, d1_max, rack_nodes, su_nodes)
    want = fs.tiers if tiers is None else tiers
    upper = _size_upper(fs, base, h, leaves, radix, want if planned is None else planned)
    n_tiers = 3 if upper.cores_per_group else 2
    switch_tiers = [
        SwitchTier(
            "leaf", fs.switch_for("leaf"), leaves.count, radix["leaf"], leaves.down, leaves.up
        ),
        SwitchTier(
            "spine",
            fs.switch_for("spine"),
            upper.pods * upper.spines_per_pod,
            radix["spine"],
            upper.spine_down,
            upper.spine_up,
        ),
    ]
    if n_tiers == 3:
        switch_tiers.append(
            SwitchTier(
                "core",
                fs.switch_for("core"),
                upper.spines_per_pod * upper.cores_per_group,
                radix["core"],
                upper.core_down,
                0,
            )
        )
    link_tiers = LINK_TIERS[:n_tiers]
    return FabricPlan(
        fabric=fabric,
        family=fs.family,
        host_kind=h.side.kind,
        hosts=h.side.hosts,
        hosts_per_node=h.side.hosts_per_node,
        ports_per_host=h.p,
        planes=h.planes,
        speed_gbps=h.speed,
        tiers=n_tiers,
        su_nodes=leaves.su_nodes,
        leaves_per_rail=leaves.leaves_per_rail,
        nodes_per_leaf=leaves.nodes_per_leaf,
        leaves=leaves.count,
        pod_leaves=upper.pod_leaves,
        pods=upper.pods,
        spines_per_pod=upper.spines_per_pod,
        cores_per_group=upper.cores_per_group,
        switch_tiers=tuple(switch_tiers),
        media=tuple(choose_media(spec, fabric, t, h.speed) for t in link_tiers),
        latency_ps=tuple(round(getattr(fs.link_latency_ns, t) * PS_PER_NS) for t in link_tiers),
        oversubscription=(fs.oversubscription.leaf, fs.oversubscription.spine),
    )
