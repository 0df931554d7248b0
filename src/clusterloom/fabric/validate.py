"""Checks of a generated fabric. Each returns findings computed from the topology arrays (not
from the plan that produced them), so a generator bug shows up as an error finding.

Codes: ``radix`` (ports per switch), ``port-reuse``, ``port-speed``, ``host-ports``
(every host port connected once per plane), ``stripe`` (even uplinks), ``oversubscription``,
``bisection``, ``ecmp-paths``, ``utilisation``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from clusterloom.fabric.topology import ROLE_NAMES, Role, Topology
from clusterloom.findings import Finding, Severity
from clusterloom.spec import Catalog, FabricSpec
from clusterloom.units import to_tbps

Check = Callable[[Topology, FabricSpec, Catalog], list[Finding]]


def _where(t: Topology, extra: str = "") -> str:
    return f"fabrics.{t.plan.fabric}" + (f".{extra}" if extra else "")


def check_radix(t: Topology, fs: FabricSpec, catalog: Catalog) -> list[Finding]:
    """No switch uses more ports than it has at the link speed; no port is used twice."""
    out: list[Finding] = []
    degree = t.degree()
    for tier in t.plan.switch_tiers:
        role = Role[tier.role.upper()]
        mask = t.node_role == role
        worst = int(degree[mask].max()) if mask.any() else 0
        if worst > tier.radix:
            out.append(
                Finding(
                    Severity.ERROR,
                    "radix",
                    f"a {tier.role} uses {worst} ports, its radix at "
                    f"{t.plan.speed_gbps}G is {tier.radix}",
                    _where(t, "switch"),
                )
            )
    # port reuse: number every (node, port) densely within a plane (hosts: the plane's own
    # ports; switches: their radix) and count with a bincount, linear in the number of links
    p = t.plan
    block_radix = np.repeat(
        [tier.radix for tier in p.switch_tiers], [tier.count for tier in p.switch_tiers]
    )
    cap = np.concatenate([np.full(p.hosts, p.ports_per_host), block_radix]).astype(np.int64)
    offset = np.concatenate([[0], np.cumsum(cap)[:-1]])
    for plane in range(p.planes):
        sel = t.link_plane == plane
        first_switch = p.hosts + plane * t.plane_block
        nodes = np.concatenate([t.link_src[sel], t.link_dst[sel]]).astype(np.int64)
        ports = np.concatenate([t.link_src_port[sel], t.link_dst_port[sel]]).astype(np.int64)
        is_host = nodes < p.hosts
        local = np.where(is_host, nodes, nodes - first_switch + p.hosts)
        ports = np.where(is_host, ports - plane * p.ports_per_host, ports)
        bad = (local < 0) | (local >= cap.size)
        bad[~bad] = (ports[~bad] < 0) | (ports[~bad] >= cap[local[~bad]])
        if bad.any():
            out.append(
                Finding(
                    Severity.ERROR,
                    "radix",
                    f"plane {plane}: {int(bad.sum())} link ends use a port beyond the "
                    "node's radix or outside the plane",
                    _where(t, "switch"),
                )
            )
            continue
        counts = np.bincount(offset[local] + ports, minlength=int(cap.sum()))
        reused = int((counts > 1).sum())
        if reused:
            out.append(
                Finding(
                    Severity.ERROR,
                    "port-reuse",
                    f"plane {plane}: {reused} ports are used by more than one link",
                    _where(t),
                )
            )
    return out


def check_port_speed(t: Topology, fs: FabricSpec, catalog: Catalog) -> list[Finding]:
    """Every switch model offers the link speed as a native or breakout port."""
    out: list[Finding] = []
    for tier in t.plan.switch_tiers:
        model = catalog.switches[tier.model]
        if model.breakout_factor(t.plan.speed_gbps) is None:
            out.append(
                Finding(
                    Severity.ERROR,
                    "port-speed",
                    f"{tier.role} switch {tier.model} cannot run {t.plan.speed_gbps}G "
                    f"ports (offers {', '.join(map(str, model.speeds_gbps))}G)",
                    _where(t, "switch"),
                )
            )
    return out


def check_host_ports(t: Topology, fs: FabricSpec, catalog: Catalog) -> list[Finding]:
    """Every host port is connected exactly once, in its own plane."""
    p = t.plan
    host_links = t.link_tier == 1
    src = t.link_src[host_links].astype(np.int64)
    port = t.link_src_port[host_links].astype(np.int64)
    per_host = p.ports_per_host * p.planes
    counts = np.bincount(src * per_host + port, minlength=p.hosts * per_host)
    out: list[Finding] = []
    missing = int((counts == 0).sum())
    doubled = int((counts > 1).sum())
    wrong_plane = int((port // p.ports_per_host != t.link_plane[host_links]).sum())
    if missing or doubled or counts.size != p.hosts * per_host or wrong_plane:
        out.append(
            Finding(
                Severity.ERROR,
                "host-ports",
                f"{missing} host ports unconnected, {doubled} connected more than "
                f"once, {wrong_plane} in the wrong plane",
                _where(t),
            )
        )
    else:
        out.append(
            Finding(
                Severity.INFO,
                "host-ports",
                f"all {p.hosts * per_host:,} {p.host_kind} ports connected once "
                f"({p.ports_per_host} per plane x {p.planes} planes)",
                _where(t),
            )
        )
    return out


def _pair_multiplicity(t: Topology, tier: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    sel = t.link_tier == tier
    keys = t.link_src[sel].astype(np.int64) * t.n_nodes + t.link_dst[sel]
    pairs, counts = np.unique(keys, return_counts=True)
    return pairs // t.n_nodes, counts


def check_stripes(t: Topology, fs: FabricSpec, catalog: Catalog) -> list[Finding]:
    """Each lower switch reaches each of its upper switches with the same number of links."""
    out: list[Finding] = []
    names = {2: ("leaf", "spine"), 3: ("spine", "core")}
    for tier in range(2, t.plan.tiers + 1):
        lower, counts = _pair_multiplicity(t, tier)
        if counts.size == 0:
            continue
        fan = np.bincount(lower)[np.unique(lower)]
        lo, hi = names[tier]
        if counts.min() != counts.max() or fan.min() != fan.max():
            out.append(
                Finding(
                    Severity.ERROR,
                    "stripe",
                    f"{lo}->{hi} uplinks uneven: {counts.min()}..{counts.max()} links "
                    f"per pair, {fan.min()}..{fan.max()} {hi}s per {lo}",
                    _where(t),
                )
            )
        else:
            out.append(
                Finding(
                    Severity.INFO,
                    "stripe",
                    f"every {lo} sends {counts[0]} link(s) to each of {fan[0]} {hi}s",
                    _where(t),
                )
            )
    return out


def _down_up(t: Topology, role: Role) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
    """Downlink and uplink counts of every switch of ``role``."""
    tier_below, tier_above = int(role), int(role) + 1
    down = np.bincount(t.link_dst[t.link_tier == tier_below], minlength=t.n_nodes)
    up = np.bincount(t.link_src[t.link_tier == tier_above], minlength=t.n_nodes)
    mask = t.node_role == role
    return down[mask], up[mask]


def check_oversubscription(t: Topology, fs: FabricSpec, catalog: Catalog) -> list[Finding]:
    """Achieved downlink:uplink per tier against what the spec asks."""
    out: list[Finding] = []
    asked = {Role.LEAF: fs.oversubscription.leaf, Role.SPINE: fs.oversubscription.spine}
    for role in (Role.LEAF, Role.SPINE):
        if role == Role.SPINE and t.plan.tiers == 2:
            continue
        down, up = _down_up(t, role)
        if up.size == 0 or up.min() == 0:
            out.append(
                Finding(
                    Severity.ERROR,
                    "oversubscription",
                    f"a {ROLE_NAMES[role]} has no uplinks",
                    _where(t),
                )
            )
            continue
        worst = float((down / up).max())
        name = ROLE_NAMES[role]
        if worst > asked[role] + 1e-9:
            out.append(
                Finding(
                    Severity.ERROR,
                    "oversubscription",
                    f"{name} oversubscription reaches {worst:.3g}:1, asked {asked[role]:.3g}:1 "
                    "(downlink:uplink bandwidth)",
                    _where(t, f"oversubscription.{name}"),
                )
            )
        else:
            out.append(
                Finding(
                    Severity.INFO,
                    "oversubscription",
                    f"{name} oversubscription at most {worst:.3g}:1 (asked {asked[role]:.3g}:1; "
                    "downlink:uplink bandwidth)",
                    _where(t, f"oversubscription.{name}"),
                )
            )
    return out


def check_bisection(t: Topology, fs: FabricSpec, catalog: Catalog) -> list[Finding]:
    """Bisection bandwidth per plane against what the oversubscription asks. The link counts
    per tier and plane are taken from the arrays and must match the design's."""
    p = t.plan
    counts = np.bincount(
        t.link_tier.astype(np.int64) * p.planes + t.link_plane, minlength=(p.tiers + 1) * p.planes
    ).reshape(p.tiers + 1, p.planes)[1:]
    expected = np.array(p.links_per_tier)[:, None]
    if (counts != expected).any():
        return [
            Finding(
                Severity.ERROR,
                "bisection",
                f"links per tier and plane {counts.tolist()} differ from the design's "
                f"{p.links_per_tier}",
                _where(t),
            )
        ]
    achieved = p.bisection_bps
    asked = p.bisection_asked_bps
    msg = (
        f"bisection {to_tbps(achieved):,.1f} Tb/s per plane ({to_tbps(achieved * p.planes):,.1f} "
        f"Tb/s over {p.planes} planes), asked {to_tbps(asked):,.1f}, full "
        f"{to_tbps(p.full_bisection_bps):,.1f} Tb/s per plane"
    )
    if achieved < asked * (1 - 1e-9):
        return [Finding(Severity.ERROR, "bisection", msg, _where(t))]
    return [Finding(Severity.INFO, "bisection", msg, _where(t))]


def count_shortest_paths(t: Topology, plane: int, source: int, target: int) -> tuple[int, int]:
    """Distance and number of distinct shortest node paths from ``source`` to ``target`` within one
    plane (parallel links count once), by breadth-first path counting on sparse adjacency."""
    adj = t.adjacency(plane)
    adj.data[:] = 1
    n = t.n_nodes
    counts = np.zeros(n, dtype=np.float64)
    counts[source] = 1.0
    seen = np.zeros(n, dtype=bool)
    seen[source] = True
    frontier = counts.copy()
    for dist in range(1, 16):
        nxt = adj.T @ frontier
        nxt[seen] = 0.0
        if nxt[target] > 0:
            return dist, int(nxt[target] + 0.5)
        if not nxt.any():
            break
        seen |= nxt > 0
        frontier = nxt
    return -1, 0


def check_ecmp(t: Topology, fs: FabricSpec, catalog: Catalog) -> list[Finding]:
    """Equal-cost paths between the first and the last leaf of each plane (different pods when
    there are several): counted on the arrays, compared with the design's closed form."""
    p = t.plan
    expected = p.ecmp_paths()
    if p.leaves < 2:
        return []
    found: list[int] = []
    for plane in range(p.planes):
        a = t.switch_id(plane, Role.LEAF, 0)
        b = t.switch_id(plane, Role.LEAF, p.leaves - 1)
        found.append(count_shortest_paths(t, plane, a, b)[1])
    if min(found) < expected or len(set(found)) > 1:
        return [
            Finding(
                Severity.ERROR,
                "ecmp-paths",
                f"equal-cost leaf-to-leaf paths per plane {sorted(set(found))}, "
                f"expected {expected} in every plane",
                _where(t),
            )
        ]
    if expected == 1:
        return [
            Finding(
                Severity.WARNING,
                "ecmp-paths",
                "one path between the farthest leaves of a plane: a single spine per "
                "plane is a single point of failure; use more spines (e.g. a smaller "
                "pod or more uplinks)",
                _where(t),
            )
        ]
    return [
        Finding(
            Severity.INFO,
            "ecmp-paths",
            f"{expected} equal-cost paths between the farthest leaves in each of {p.planes} planes",
            _where(t),
        )
    ]


def check_utilisation(t: Topology, fs: FabricSpec, catalog: Catalog) -> list[Finding]:
    """Warn about switch tiers that leave most of their ports idle (a smaller switch, another
    scalable-unit size or fewer planes may be cheaper)."""
    out: list[Finding] = []
    for tier in t.plan.switch_tiers:
        used = tier.ports_used / tier.radix
        if used < 0.5:
            out.append(
                Finding(
                    Severity.WARNING,
                    "utilisation",
                    f"{tier.role} switches use {tier.ports_used} of {tier.radix} ports "
                    f"({used:.0%})",
                    _where(t, "switch"),
                )
            )
    return out


CHECKS: tuple[Check, ...] = (
    check_port_speed,
    check_radix,
    check_host_ports,
    check_stripes,
    check_oversubscription,
    check_bisection,
    check_ecmp,
    check_utilisation,
)


def validate_topology(t: Topology, fs: FabricSpec, catalog: Catalog) -> list[Finding]:
    """Every check on ``t``; findings in check order."""
    return [f for check in CHECKS for f in check(t, fs, catalog)]
