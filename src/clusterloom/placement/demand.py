"""What there is to place: racks derived from the fabric designs, grouped into units.

- **Compute racks** hold the nodes in order (node ``n`` in rack ``n // servers``, server slot
  ``n % servers``, stacked from the rack type's ``first_u``).
- **Blocks**: the compute racks of one scalable unit (rail-optimized; a leaf's nodes on a
  fat tree) stand in consecutive positions of one row. When a frontend groups nodes differently,
  a block covers the least common multiple of the two groupings (at most four scalable units).
  A block longer than every free run of the site is split into near-equal parts at rack
  boundaries (``site.split_units``), which stay in one hall.
- **Top-of-rack leaves** of a fabric whose host links are copper (DAC, AEC) go in a network
  rack inside their block, in the middle of the compute racks they serve, so the copper reaches.
- **In-rack leaves** (``leaf_placement: in-rack``) stand in the compute rack of their nodes,
  stacked above its servers in (plane, index) order, every fabric's after the one before; the
  rack carries their units, power (switch and optics) and weight, and gets no network rack.
- **Leaf racks** (optical host links) hold one plane's leaves of one block: a plane's failure
  domain is then a rack, and ``spread.planes_per_feed`` keeps the planes of a block on different
  feeds. **Spine racks** hold one plane's spines of one pod, **core racks** one plane's cores.
  Switches are packed in index order until the rack's usable rack units or its PDU power
  run out. A network rack draws its switches' power plus their optics.

Level-1 groups (what the campus solver assigns to halls): a block with its leaf racks; spine
racks of one (fabric, plane, pod) and core racks of one (fabric, plane) in chunks of at most
``CHUNK_RACKS`` racks, so that a large spine layer can spread over halls.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.fabric import FabricDesign
from clusterloom.fabric.topology import ROLE_NAMES, Role, Topology
from clusterloom.spec import Catalog, ClusterSpec, RackModel, compute_rack_name
from clusterloom.units import kilowatts, to_kilowatts

COMPUTE, NETWORK = 0, 1
COPPER_KINDS = frozenset({"dac", "aec"})
#: Most racks of one spine or core layer the campus solver moves as one piece.
CHUNK_RACKS = 8
#: Longest block (in scalable units) a frontend grouping may widen a block to.
MAX_WIDEN = 4

UnitKind = Literal["block", "rack"]


@dataclass(frozen=True)
class Unit:
    """What the hall solver places: consecutive positions in one row (a block) or one rack."""

    kind: UnitKind
    racks: tuple[int, ...]
    group: int
    label: str
    #: spreading: leaf racks of a block (``fab:block:N``, one plane each) or a spine/core layer
    spread_key: str = ""
    plane: int = -1
    #: reach limits: (unit, metres) the unit must stay within, farthest rack to rack
    reach: tuple[tuple[int, float], ...] = ()
    #: racks whose planes spread over feeds together: the leaf racks of a scalable unit
    #: (empty: none)
    plane_group: str = ""


def plane_key(unit: Unit) -> str:
    """The racks whose planes must spread over feeds together: the leaf racks of one scalable
    unit (``fab:block:N``); empty for any other rack. (Spine racks of one pod of several planes
    are not kept apart: with a spine layer spread over feeds too, the greedy start could not
    keep both rules on the examples' floors.)"""
    return unit.plane_group


@dataclass(frozen=True, eq=False)
class FabricDevices:
    """Where each topology node of one fabric sits: rack id (into the demand's racks), lowest
    rack unit and height in rack units. A backend host (an accelerator) sits in its server."""

    fabric: str
    node_rack: NDArray[np.int32]
    node_u: NDArray[np.int16]
    node_height: NDArray[np.int8]


@dataclass(frozen=True, eq=False)
class Demand:
    """Racks to place (arrays indexed by rack id), the units and groups they form."""

    rack_model: tuple[str, ...]
    rack_kind: NDArray[np.int8]
    rack_role: tuple[str, ...]  # compute, tor, leaf, spine, core
    rack_fabric: tuple[str, ...]
    rack_plane: NDArray[np.int16]
    rack_power_w: NDArray[np.float64]
    rack_weight_kg: NDArray[np.float64]
    rack_unit: NDArray[np.int32]
    rack_label: tuple[str, ...]
    units: tuple[Unit, ...]
    group_labels: tuple[str, ...]
    server_rack: NDArray[np.int32]
    server_u: NDArray[np.int16]
    server_height: int
    devices: tuple[FabricDevices, ...]
    block_count: int

    @property
    def n_racks(self) -> int:
        return int(self.rack_kind.shape[0])

    @property
    def n_groups(self) -> int:
        return len(self.group_labels)


@dataclass
class _NetworkRacks:
    """Adds one fabric's network racks to the builder and records where each switch sits."""

    builder: _Builder
    fabric: str
    model: str
    rack: RackModel
    ru: NDArray[np.int64]
    power: NDArray[np.float64]
    weight: NDArray[np.float64]
    node_rack: NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    node_u: NDArray[np.int16] = field(default_factory=lambda: np.zeros(0, dtype=np.int16))
    node_h: NDArray[np.int8] = field(default_factory=lambda: np.zeros(0, dtype=np.int8))

    def add(self, rack_nodes: list[int], role: str, plane: int, label: str) -> int:
        """A network rack holding ``rack_nodes`` stacked from the rack's first unit."""
        rid = self.builder.add(
            self.model,
            NETWORK,
            role,
            self.fabric,
            plane,
            float(self.power[rack_nodes].sum()),
            self.rack.weight_kg + float(self.weight[rack_nodes].sum()),
            label,
        )
        u = self.rack.first_u
        for v in rack_nodes:
            self.node_rack[v] = rid
            self.node_u[v] = u
            self.node_h[v] = self.ru[v]
            u += int(self.ru[v])
        return rid


class _Builder:
    def __init__(self) -> None:
        self.model: list[str] = []
        self.kind: list[int] = []
        self.role: list[str] = []
        self.fabric: list[str] = []
        self.plane: list[int] = []
        self.power: list[float] = []
        self.weight: list[float] = []
        self.label: list[str] = []

    def add(
        self,
        model: str,
        kind: int,
        role: str,
        fabric: str,
        plane: int,
        power_w: float,
        weight: float,
        label: str,
    ) -> int:
        self.model.append(model)
        self.kind.append(kind)
        self.role.append(role)
        self.fabric.append(fabric)
        self.plane.append(plane)
        self.power.append(power_w)
        self.weight.append(weight)
        self.label.append(label)
        return len(self.model) - 1


def _switch_loads(fd: FabricDesign, catalog: Catalog) -> tuple[NDArray[Any], ...]:
    """Per topology node: rack units, power (switch plus optics of its links) and weight."""
    t, plan = fd.topology, fd.plan
    ru = np.zeros(t.n_nodes, dtype=np.int64)
    power = np.zeros(t.n_nodes, dtype=np.float64)
    weight = np.zeros(t.n_nodes, dtype=np.float64)
    for tier in plan.switch_tiers:
        model = catalog.switches[tier.model]
        mask = t.node_role == int(Role[tier.role.upper()])
        ru[mask] = model.rack_units
        power[mask] = model.power_w
        weight[mask] = model.weight_kg
    per_end = np.array(
        [0.0] + [catalog.media[m].power_w_per_end for m in plan.media], dtype=np.float64
    )
    w = per_end[t.link_tier.astype(np.int64)]
    optics = np.bincount(t.link_src, weights=w, minlength=t.n_nodes) + np.bincount(
        t.link_dst, weights=w, minlength=t.n_nodes
    )
    switch = t.node_role != int(Role.HOST)
    power[switch] += optics[switch]
    return ru, power, weight


def _pack(
    nodes: NDArray[np.int64],
    ru: NDArray[np.int64],
    power: NDArray[np.float64],
    rack: RackModel,
    what: str,
) -> list[list[int]]:
    """Switches in order into racks, a new rack when rack units or PDU power run out."""
    limit_w = kilowatts(rack.power_kw)
    out: list[list[int]] = []
    used_ru, used_w = rack.usable_ru + 1, math.inf
    for v in nodes.tolist():
        if ru[v] > rack.usable_ru or power[v] > limit_w:
            raise SpecError(
                [
                    Problem(
                        "site.racks.network",
                        f"a {what} switch needs {ru[v]}U and {to_kilowatts(power[v]):,.1f} kW; the "
                        f"network rack offers {rack.usable_ru}U and {rack.power_kw:g} kW",
                    )
                ]
            )
        if used_ru + ru[v] > rack.usable_ru or used_w + power[v] > limit_w:
            out.append([])
            used_ru, used_w = 0, 0.0
        out[-1].append(v)
        used_ru += int(ru[v])
        used_w += float(power[v])
    return out


def _in_rack(
    b: _Builder,
    fab: str,
    t: Topology,
    leaves: NDArray[np.int64],
    first: NDArray[np.integer[Any]],
    last: NDArray[np.integer[Any]],
    loads: tuple[NDArray[Any], ...],
    network: _NetworkRacks,
    next_u: list[int],
    crack: RackModel,
    per_rack: int,
) -> None:
    """Each leaf of ``fab`` into the compute rack of its nodes (``first``, which must be
    ``last``), stacked from the rack's next free unit; the rack takes its power and weight.

    Raises ``SpecError`` naming the numbers when a leaf serves nodes of several racks or a rack
    runs out of rack units."""
    ru, power, weight = loads
    where = f"fabrics.{fab}.leaf_placement"
    spans = first != last
    if spans.any():
        raise SpecError(
            [
                Problem(
                    where,
                    f"in-rack puts each leaf in the compute rack of its nodes, but "
                    f"{int(spans.sum()):,} leaf(s) serve nodes of several racks (the first serves "
                    f"compute racks {int(first[spans][0])}-{int(last[spans][0])}; a rack holds "
                    f"{per_rack} nodes); make a leaf's nodes "
                    f"(nodes_per_leaf on a fat tree, scalable_unit_nodes rail-optimized) divide "
                    f"{per_rack}, or use leaf_placement: network-rack",
                )
            ]
        )
    order = np.lexsort((t.node_index[leaves], t.node_plane[leaves], first))
    for k in order.tolist():
        v, r = int(leaves[k]), int(first[k])
        network.node_rack[v] = r
        network.node_u[v] = next_u[r]
        network.node_h[v] = ru[v]
        next_u[r] += int(ru[v])
        b.power[r] += float(power[v])
        b.weight[r] += float(weight[v])
    over = [r for r in sorted(set(first.tolist())) if next_u[r] - 1 > crack.rack_units]
    if over:
        r, top = over[0], next_u[over[0]] - 1
        raise SpecError(
            [
                Problem(
                    where,
                    f"{len(over):,} compute rack(s) cannot take their leaves (e.g. {b.label[r]} "
                    f"({b.model[r]}, {crack.rack_units}U): servers from U{crack.first_u} and "
                    f"the switches above them reach U{top}, {top - crack.rack_units}U too many); "
                    "use fewer planes per rack, a switch of fewer rack units or "
                    "leaf_placement: network-rack",
                )
            ]
        )


def in_rack_power_problems(spec: ClusterSpec, demand: Demand, most_w: float) -> list[Problem]:
    """The compute racks that, with their in-rack leaves, draw more than ``most_w`` (the most
    any position of the site offers): the first one named with its servers' and switches'
    shares and the excess."""
    crack = spec.resolved_catalog().racks[compute_rack_name(spec)]
    compute = np.flatnonzero(demand.rack_kind == COMPUTE)
    held = np.bincount(demand.server_rack, minlength=demand.n_racks)[compute]
    servers_w = kilowatts(crack.power_kw) * held / crack.servers
    switches_w = demand.rack_power_w[compute] - servers_w
    over = (switches_w > 1e-6) & (demand.rack_power_w[compute] > most_w + 1e-6)
    if not over.any():
        return []
    k = int(np.flatnonzero(over)[0])
    r = int(compute[k])
    return [
        Problem(
            "site.racks.compute",
            f"{int(over.sum()):,} compute racks with in-rack leaves draw more than the "
            f"{to_kilowatts(most_w):,.1f} kW the best position offers (e.g. "
            f"{demand.rack_label[r]}: {to_kilowatts(servers_w[k]):,.1f} kW of servers + "
            f"{to_kilowatts(switches_w[k]):,.1f} kW of switches = "
            f"{to_kilowatts(demand.rack_power_w[r]):,.1f} kW, "
            f"{to_kilowatts(demand.rack_power_w[r] - most_w):,.1f} kW over); raise "
            "position_power_kw or use leaf_placement: network-rack",
        )
    ]


def _block_nodes(spec: ClusterSpec, fabrics: tuple[FabricDesign, ...], per_rack: int) -> int:
    """Nodes per block: the backend's scalable unit (or leaf group), widened to whole racks and,
    when it stays within ``MAX_WIDEN`` units, to whole frontend groups."""

    def grouping(fd: FabricDesign) -> int:
        p = fd.plan
        return p.su_nodes if p.family == "rail-optimized" else p.nodes_per_leaf

    base = fabrics[0]
    unit = math.lcm(grouping(base), per_rack)
    for fd in fabrics[1:]:
        widened = math.lcm(unit, grouping(fd))
        if widened <= MAX_WIDEN * unit:
            unit = widened
    return unit


def build_demand(spec: ClusterSpec, fabrics: tuple[FabricDesign, ...]) -> Demand:
    """The racks, units and groups to place for ``spec`` (which has a site) and its fabrics."""
    assert spec.site is not None
    catalog = spec.resolved_catalog()
    site = spec.site
    compute_name = compute_rack_name(spec)
    crack = catalog.racks[compute_name]
    nrack = catalog.racks[site.racks.network]
    nodes = spec.compute.nodes
    per_rack = crack.servers
    n_compute = -(-nodes // per_rack)
    b = _Builder()

    # compute racks
    node = np.arange(nodes, dtype=np.int64)
    server_rack = (node // per_rack).astype(np.int32)
    server_u = (crack.first_u + (node % per_rack) * crack.server_ru).astype(np.int16)
    for r in range(n_compute):
        held = min(per_rack, nodes - r * per_rack)
        b.add(
            compute_name,
            COMPUTE,
            "compute",
            "",
            -1,
            kilowatts(crack.power_kw) * held / per_rack,
            crack.weight_kg,
            f"compute{r:05d}",
        )

    # blocks of compute racks
    block_nodes = _block_nodes(spec, fabrics, per_rack) if fabrics else per_rack
    racks_per_block = block_nodes // per_rack
    n_blocks = -(-n_compute // racks_per_block)
    block_racks: list[list[int]] = [
        list(range(k * racks_per_block, min((k + 1) * racks_per_block, n_compute)))
        for k in range(n_blocks)
    ]
    rack_block = np.repeat(np.arange(n_blocks), racks_per_block)[:n_compute]
    #: next free rack unit of each compute rack, above its servers (in-rack leaves)
    next_u = [
        crack.first_u + min(per_rack, nodes - r * per_rack) * crack.server_ru
        for r in range(n_compute)
    ]

    group_labels = [f"scalable unit {k}" for k in range(n_blocks)]
    singles: list[Unit] = []
    devices: list[FabricDevices] = []
    node_rack_all: dict[str, NDArray[np.int32]] = {}
    node_u_all: dict[str, NDArray[np.int16]] = {}
    node_h_all: dict[str, NDArray[np.int8]] = {}
    #: leaf racks of each block for reach limits: (rack ids, reach)
    attached: dict[int, list[tuple[list[int], float]]] = {}
    embedded: dict[int, list[tuple[int, list[int]]]] = {}  # block -> (insert index, racks)

    for fd in fabrics:
        t, plan = fd.topology, fd.plan
        fab = fd.name
        ru, power, weight = _switch_loads(fd, catalog)
        node_rack = np.full(t.n_nodes, -1, dtype=np.int32)
        node_u = np.zeros(t.n_nodes, dtype=np.int16)
        node_h = np.zeros(t.n_nodes, dtype=np.int8)
        host_node = np.arange(plan.hosts, dtype=np.int64) // plan.hosts_per_node
        node_rack[: plan.hosts] = server_rack[host_node]
        node_u[: plan.hosts] = server_u[host_node]
        node_h[: plan.hosts] = crack.server_ru

        # each leaf's compute nodes (min, max) from its host links
        sel = t.link_tier == 1
        leaf_ids = t.link_dst[sel].astype(np.int64)
        served = host_node[t.link_src[sel].astype(np.int64)]
        lo = np.full(t.n_nodes, nodes, dtype=np.int64)
        hi = np.full(t.n_nodes, -1, dtype=np.int64)
        np.minimum.at(lo, leaf_ids, served)
        np.maximum.at(hi, leaf_ids, served)
        host_media = catalog.media[plan.media[0]]
        copper = host_media.kind in COPPER_KINDS
        leaves = np.flatnonzero(t.node_role == int(Role.LEAF))

        network = _NetworkRacks(b, fab, site.racks.network, nrack, ru, power, weight)
        network.node_rack, network.node_u, network.node_h = node_rack, node_u, node_h
        add_rack = network.add

        if getattr(spec.fabrics, fab).leaf_placement == "in-rack":
            _in_rack(
                b,
                fab,
                t,
                leaves,
                server_rack[lo[leaves]],
                server_rack[hi[leaves]],
                (ru, power, weight),
                network,
                next_u,
                crack,
                per_rack,
            )
        elif copper:
            # top-of-rack: one rack per served range, in the middle of the racks it serves
            first = server_rack[lo[leaves]]
            last = server_rack[hi[leaves]]
            keys = sorted(set(zip(first.tolist(), last.tolist(), strict=True)))
            for a, z in keys:
                members = leaves[(first == a) & (last == z)]
                members = members[np.lexsort((t.node_index[members], t.node_plane[members]))]
                for k, chunk in enumerate(_pack(members, ru, power, nrack, f"{fab} leaf")):
                    rid = add_rack(chunk, "tor", -1, f"{fab}-tor-c{a:05d}-{k}")
                    blk = int(rack_block[a])
                    embedded.setdefault(blk, []).append(((a + z + 1) // 2, [rid]))
        else:
            blocks_of_leaf = rack_block[server_rack[lo[leaves]]]
            for blk in range(n_blocks):
                for q in range(plan.planes):
                    members = leaves[(blocks_of_leaf == blk) & (t.node_plane[leaves] == q)]
                    if members.size == 0:
                        continue
                    members = np.sort(members)
                    racks_q: list[int] = []
                    for k, chunk in enumerate(_pack(members, ru, power, nrack, f"{fab} leaf")):
                        racks_q.append(
                            add_rack(chunk, "leaf", q, f"{fab}-p{q}-leaf-su{blk:03d}-{k}")
                        )
                    attached.setdefault(blk, []).append((racks_q, host_media.reach_m))
                    for rid in racks_q:
                        singles.append(
                            Unit(
                                "rack",
                                (rid,),
                                blk,
                                f"{fab} plane {q} leaves of scalable unit {blk}",
                                spread_key=f"{fab}:block:{blk}",
                                plane=q,
                                plane_group=f"{fab}:block:{blk}",
                            )
                        )

        for role, key_name in ((Role.SPINE, "pod"), (Role.CORE, "core")):
            mask = t.node_role == int(role)
            if not mask.any():
                continue
            ids = np.flatnonzero(mask)
            rname = ROLE_NAMES[role]
            for q in range(plan.planes):
                in_plane = ids[t.node_plane[ids] == q]
                pods = sorted(set(t.node_pod[in_plane].tolist())) if role == Role.SPINE else [0]
                for pod in pods:
                    members = (
                        in_plane if role == Role.CORE else in_plane[t.node_pod[in_plane] == pod]
                    )
                    members = np.sort(members)
                    chunks = _pack(members, ru, power, nrack, f"{fab} {rname}")
                    layer = f"{fab}:{rname}:{q}:{pod}"
                    where = f"pod {pod}" if role == Role.SPINE and plan.tiers == 3 else ""
                    for start in range(0, len(chunks), CHUNK_RACKS):
                        g = len(group_labels)
                        part = (
                            f" part {start // CHUNK_RACKS + 1}" if len(chunks) > CHUNK_RACKS else ""
                        )
                        group_labels.append(
                            f"{fab} plane {q} {rname}s" + (f" {where}" if where else "") + part
                        )
                        for k, chunk in enumerate(chunks[start : start + CHUNK_RACKS]):
                            suffix = (
                                f"-{key_name}{pod}"
                                if role == Role.SPINE and plan.tiers == 3
                                else ""
                            )
                            rid = add_rack(
                                chunk, rname, q, f"{fab}-p{q}-{rname}{suffix}-{start + k}"
                            )
                            singles.append(
                                Unit("rack", (rid,), g, f"{fab} plane {q} {rname}s", layer, q)
                            )
        node_rack_all[fab], node_u_all[fab], node_h_all[fab] = node_rack, node_u, node_h

    # blocks with their embedded top-of-rack racks, split when asked
    units: list[Unit] = []
    for blk, racks in enumerate(block_racks):
        seq: list[int] = list(racks)
        for insert_at, rids in sorted(embedded.get(blk, []), key=lambda x: -x[0]):
            pos = insert_at - racks[0]
            seq[pos:pos] = rids
        units.append(Unit("block", tuple(seq), blk, f"scalable unit {blk}"))
    # singles get reach limits to their block (filled in once unit ids are known)
    block_unit = {u.group: i for i, u in enumerate(units)}
    reach_of: dict[int, float] = {}
    for lists in attached.values():
        for rids, reach in lists:
            for rid in rids:
                reach_of[rid] = reach
    for s in singles:
        rid = s.racks[0]
        if rid in reach_of and s.group in block_unit:
            s = Unit(
                s.kind,
                s.racks,
                s.group,
                s.label,
                s.spread_key,
                s.plane,
                ((block_unit[s.group], reach_of[rid]),),
                s.plane_group,
            )
        units.append(s)

    rack_unit = np.full(len(b.model), -1, dtype=np.int32)
    for i, u in enumerate(units):
        rack_unit[list(u.racks)] = i
    for fab in node_rack_all:
        devices.append(
            FabricDevices(fab, _ro(node_rack_all[fab]), _ro(node_u_all[fab]), _ro(node_h_all[fab]))
        )
    return Demand(
        rack_model=tuple(b.model),
        rack_kind=_ro(np.array(b.kind, dtype=np.int8)),
        rack_role=tuple(b.role),
        rack_fabric=tuple(b.fabric),
        rack_plane=_ro(np.array(b.plane, dtype=np.int16)),
        rack_power_w=_ro(np.array(b.power, dtype=np.float64)),
        rack_weight_kg=_ro(np.array(b.weight, dtype=np.float64)),
        rack_unit=_ro(rack_unit),
        rack_label=tuple(b.label),
        units=tuple(units),
        group_labels=tuple(group_labels),
        server_rack=_ro(server_rack),
        server_u=_ro(server_u),
        server_height=crack.server_ru,
        devices=tuple(devices),
        block_count=n_blocks,
    )


def split_blocks(
    demand: Demand,
    longest: int,
    installed: Mapping[str, str] | None = None,
    installed_longest: int = 0,
) -> Demand:
    """``demand`` with every block longer than ``longest`` positions split into the fewest
    near-equal parts that fit (the parts keep the block's group). A block that grew from an
    installed one (its first racks ``installed``, the rest new) is cut after its installed
    racks, so they keep their positions and the new racks form a part of their own; installed
    racks are split as the baseline split them, at ``installed_longest`` (the longest run of the
    empty floor), so each installed part stands as one run."""
    units: list[Unit] = []
    changed = False
    todo = list(demand.units)

    def split(u: Unit, at: int) -> None:
        parts = -(-len(u.racks) // at)
        size = -(-len(u.racks) // parts)
        for k in range(parts):
            chunk = u.racks[k * size : (k + 1) * size]
            if chunk:
                units.append(Unit("block", chunk, u.group, f"{u.label} part {k + 1}/{parts}"))

    for u in todo:
        lead = _installed_lead(demand, u, installed or {})
        if u.kind == "block" and lead == len(u.racks) and installed:
            if 0 < installed_longest < len(u.racks):
                changed = True
                split(u, installed_longest)
            else:
                units.append(u)  # installed whole: it stays as it stands
            continue
        if u.kind == "block" and 0 < lead < len(u.racks):
            changed = True
            head = Unit("block", u.racks[:lead], u.group, f"{u.label} installed")
            if 0 < installed_longest < lead:
                split(head, installed_longest)
            else:
                units.append(head)
            todo.append(Unit("block", u.racks[lead:], u.group, f"{u.label} growth"))
            continue
        if u.kind != "block" or len(u.racks) <= longest or longest < 1:
            units.append(u)
            continue
        changed = True
        split(u, longest)
    if not changed:
        return demand
    # reach limits pointed at the whole block: point them at the part nearest in order (the
    # first part); the hall solver checks every part's racks through the unit of the block
    first_part: dict[int, int] = {}
    for i, u in enumerate(units):
        if u.kind == "block" and u.group not in first_part:
            first_part[u.group] = i
    block_parts: dict[int, list[int]] = {}
    for i, u in enumerate(units):
        if u.kind == "block":
            block_parts.setdefault(u.group, []).append(i)
    fixed: list[Unit] = []
    for u in units:
        if u.reach:
            reach = tuple((p, m) for _, m in u.reach for p in block_parts.get(u.group, []))
            u = Unit(u.kind, u.racks, u.group, u.label, u.spread_key, u.plane, reach, u.plane_group)
        fixed.append(u)
    rack_unit = np.full(demand.n_racks, -1, dtype=np.int32)
    for i, u in enumerate(fixed):
        rack_unit[list(u.racks)] = i
    return Demand(
        **{
            **{f: getattr(demand, f) for f in demand.__dataclass_fields__},
            "units": tuple(fixed),
            "rack_unit": _ro(rack_unit),
        }
    )


def _installed_lead(demand: Demand, u: Unit, installed: Mapping[str, str]) -> int:
    """How many of ``u``'s first racks are installed when no later one is (else 0)."""
    flags = [demand.rack_label[r] in installed for r in u.racks]
    lead = flags.index(False) if False in flags else len(flags)
    return lead if not any(flags[lead:]) else 0


def _ro(a: NDArray[Any]) -> NDArray[Any]:
    a.setflags(write=False)
    return a
