"""Properties of generated topologies, over small random specs (Hypothesis), plus max-flow and
ECMP checks with networkx on a few hand-picked fabrics."""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from clusterloom.errors import SpecError
from clusterloom.fabric.sizing import FabricPlan, plan_fabric
from clusterloom.fabric.topology import Role, Topology, generate
from helpers import build_spec, kport_plan, switch_entry

MAX_LINKS = 50_000
RATIOS = [1, 1.5, 2, 3]
SPEEDS = [100, 200, 400, 800]

ARRAY_FIELDS = [f.name for f in fields(Topology) if f.name != "plan"]


def divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@dataclass(frozen=True)
class Case:
    """A drawn spec (keyword arguments of ``helpers.spec_dict``) and what the draw aimed at."""

    kwargs: dict[str, Any]
    radix: int

    def __repr__(self) -> str:  # shown by Hypothesis on failure
        return f"Case(radix={self.radix}, {self.kwargs!r})"


@st.composite
def cases(draw: st.DrawFn) -> Case:
    """Small specs on a custom switch of radix 8..64 at the host speed.

    Node counts are drawn relative to the leaf's downlinks so that most draws are buildable in
    the drawn number of tiers (see ``test_strategy_is_mostly_feasible``)."""
    apn = draw(st.sampled_from([1, 2, 4, 8]))
    ports_per_accelerator = draw(st.sampled_from([1, 2, 4]))
    scale_out = draw(st.sampled_from(divisors(ports_per_accelerator)))
    planes = draw(st.sampled_from(divisors(scale_out)))
    family = draw(st.sampled_from(["rail-optimized", "fat-tree"]))
    tiers = draw(st.sampled_from([2, 3, "auto"]))
    o1 = draw(st.sampled_from(RATIOS))
    o2 = draw(st.sampled_from(RATIOS))

    native = draw(st.sampled_from(SPEEDS))
    lower = [s for s in SPEEDS if s < native and native % s == 0]
    breakouts = draw(st.lists(st.sampled_from(lower), unique=True)) if lower else []
    speed = draw(st.sampled_from(sorted({native, *breakouts})))
    factor = native // speed
    cages = draw(st.integers(math.ceil(8 / factor), 64 // factor))
    radix = cages * factor

    rails = apn * (scale_out // planes)
    d1_max = math.floor(radix * o1 / (o1 + 1) + 1e-9)
    max_hosts = 6000 // scale_out
    max_nodes = max(1, max_hosts // apn)
    su_nodes = None
    if family == "rail-optimized" and draw(st.booleans()):
        # explicit scalable units, half of them spread over two leaves per rail
        if d1_max >= 2 and draw(st.booleans()):
            su_nodes = 2 * draw(st.integers(d1_max // 2 + 1, d1_max))
        else:
            su_nodes = draw(st.integers(1, max(1, d1_max)))
        units = draw(st.integers(1, max(1, min(16, max_nodes // su_nodes))))
        nodes = su_nodes * units
    else:
        leaf_nodes = d1_max if family == "rail-optimized" else max(1, d1_max // rails)
        # from one leaf's worth, through a full two-tier plane (~radix leaves), to several
        # three-tier pods of ~radix/2 leaves each
        scale = draw(st.sampled_from([1, 2, 3, radix // 4, radix // 2, radix, 2 * radix]))
        upper = max(1, min(max_nodes, leaf_nodes * scale))
        nodes = draw(st.integers(max(1, upper // 2), upper))

    kwargs: dict[str, Any] = dict(
        accelerators=nodes * apn,
        accelerators_per_node=apn,
        ports_per_accelerator=ports_per_accelerator,
        scale_out_ports=scale_out,
        port_speed_gbps=speed,
        planes=planes,
        family=family,
        tiers=tiers,
        leaf_oversubscription=o1,
        spine_oversubscription=o2,
        scalable_unit_nodes=su_nodes,
        switch="sw",
        catalog_switches={"sw": switch_entry(cages, native, tuple(breakouts))},
    )
    return Case(kwargs, radix)


def plan_or_none(case: Case) -> FabricPlan | None:
    """The plan of ``case``, or None when the fabric cannot be built (a SpecError)."""
    spec = build_spec(**case.kwargs)  # the strategy only draws schema-valid specs
    try:
        plan = plan_fabric(spec)
    except SpecError as exc:
        assert exc.problems
        assert all(p.where.startswith("fabrics.backend") for p in exc.problems), exc.problems
        return None
    assert plan.tier("leaf").radix == case.radix
    return plan


def topology_of(case: Case) -> Topology:
    plan = plan_or_none(case)
    assume(plan is not None)
    assert plan is not None
    assume(plan.planes * sum(plan.links_per_tier) <= MAX_LINKS)
    return generate(plan)


PROPERTY = settings(max_examples=100, suppress_health_check=[HealthCheck.filter_too_much])


# --- the strategy itself ----------------------------------------------------------------------


def test_strategy_is_mostly_feasible() -> None:
    """Guard against a strategy whose draws are mostly rejected (properties vacuously true)."""
    outcomes: list[tuple[bool, int, int, str]] = []

    @settings(max_examples=200, database=None, derandomize=True)
    @given(cases())
    def collect(case: Case) -> None:
        plan = plan_or_none(case)
        ok = plan is not None and plan.planes * sum(plan.links_per_tier) <= MAX_LINKS
        tiers = plan.tiers if plan is not None else 0
        pods = plan.pods if plan is not None else 0
        outcomes.append((ok, tiers, pods, case.kwargs["family"]))

    collect()
    feasible = [o for o in outcomes if o[0]]
    assert len(feasible) >= 0.5 * len(outcomes), f"{len(feasible)}/{len(outcomes)} feasible"
    assert {o[1] for o in feasible} == {2, 3}
    assert sum(o[1] == 3 and o[2] > 1 for o in feasible) >= 0.05 * len(outcomes), "few pods"
    assert {o[3] for o in feasible} == {"rail-optimized", "fat-tree"}


@PROPERTY
@given(cases())
def test_sizing_respects_radix_or_raises_spec_error(case: Case) -> None:
    plan = plan_or_none(case)
    assume(plan is not None)
    assert plan is not None
    for tier in plan.switch_tiers:
        assert tier.count > 0
        assert 0 < tier.ports_used <= tier.radix, tier
    assert plan.tiers in (2, 3)
    if case.kwargs["tiers"] != "auto":
        assert plan.tiers == case.kwargs["tiers"]
    # every leaf uplink lands on a spine downlink, every spine uplink on a core downlink
    leaf, spine = plan.tier("leaf"), plan.tier("spine")
    assert plan.leaves * leaf.up <= plan.spines * spine.down
    if plan.tiers == 3:
        assert plan.spines * spine.up == plan.cores * plan.tier("core").down
    else:
        assert plan.leaves * leaf.up == plan.spines * spine.down


# --- ports ------------------------------------------------------------------------------------


def radix_of_nodes(topo: Topology) -> np.ndarray:
    plan = topo.plan
    table = np.zeros(4, dtype=np.int64)
    for role, name in ((Role.LEAF, "leaf"), (Role.SPINE, "spine"), (Role.CORE, "core")):
        if plan.tiers == 3 or name != "core":
            table[role] = plan.tier(name).radix
    table[Role.HOST] = plan.planes * plan.ports_per_host
    return table[topo.node_role]


@PROPERTY
@given(cases())
def test_ports_within_radix_and_never_reused(case: Case) -> None:
    topo = topology_of(case)
    node = np.concatenate([topo.link_src, topo.link_dst]).astype(np.int64)
    port = np.concatenate([topo.link_src_port, topo.link_dst_port]).astype(np.int64)
    assert (port >= 0).all()
    assert (port < radix_of_nodes(topo)[node]).all()
    key = node * (int(port.max()) + 1) + port
    assert np.unique(key).shape[0] == key.shape[0], "a (node, port) pair is used twice"
    assert (topo.degree() <= radix_of_nodes(topo)).all()


@PROPERTY
@given(cases())
def test_downlinks_below_uplinks_on_every_switch(case: Case) -> None:
    """A switch's downlinks use ports 0..down-1 and its uplinks down..down+up-1."""
    topo = topology_of(case)
    plan = topo.plan
    names = {Role.LEAF: "leaf", Role.SPINE: "spine", Role.CORE: "core"}
    down = np.zeros(4, dtype=np.int64)
    up = np.zeros(4, dtype=np.int64)
    for role, name in names.items():
        if plan.tiers == 3 or role != Role.CORE:
            down[role], up[role] = plan.tier(name).down, plan.tier(name).up
    src_role = topo.node_role[topo.link_src]
    dst_role = topo.node_role[topo.link_dst]
    assert (dst_role == src_role + 1).all(), "a link does not join adjacent tiers"
    assert (topo.link_dst_port < down[dst_role]).all()
    switch_src = src_role != Role.HOST
    lo_port = topo.link_src_port[switch_src]
    lo_role = src_role[switch_src]
    assert (lo_port >= down[lo_role]).all()
    assert (lo_port < down[lo_role] + up[lo_role]).all()


# --- hosts ------------------------------------------------------------------------------------


@PROPERTY
@given(cases())
def test_every_host_port_connected_once_per_plane(case: Case) -> None:
    topo = topology_of(case)
    plan = topo.plan
    p, planes = plan.ports_per_host, plan.planes
    host_links = topo.link_tier == 1
    host = topo.link_src[host_links].astype(np.int64)
    port = topo.link_src_port[host_links].astype(np.int64)
    plane = topo.link_plane[host_links].astype(np.int64)
    assert (topo.node_role[host] == Role.HOST).all()
    assert (topo.node_role[topo.link_src[~host_links]] != Role.HOST).all()
    assert host.shape[0] == plan.hosts * planes * p
    # each host has exactly p links in each plane...
    per_host_plane = np.bincount(host * planes + plane, minlength=plan.hosts * planes)
    assert (per_host_plane == p).all()
    # ...on host ports plane * p + j, j = 0..p-1, each used once
    assert (port // p == plane).all()
    key = host * (planes * p) + port
    assert np.array_equal(np.sort(key), np.arange(plan.hosts * planes * p))


# --- counts -----------------------------------------------------------------------------------


@PROPERTY
@given(cases())
def test_node_and_link_counts_match_the_plan(case: Case) -> None:
    topo = topology_of(case)
    plan = topo.plan
    assert topo.n_nodes == plan.hosts + plan.planes * plan.switches_per_plane
    assert topo.n_links == plan.planes * sum(plan.links_per_tier)
    per_tier = np.bincount(topo.link_tier, minlength=4)[1:]
    expected = list(plan.links_per_tier) + [0] * (3 - plan.tiers)
    assert per_tier.tolist() == [plan.planes * n for n in expected]
    per_role = np.bincount(topo.node_role, minlength=4).tolist()
    assert per_role == [
        plan.hosts,
        plan.planes * plan.leaves,
        plan.planes * plan.spines,
        plan.planes * plan.cores,
    ]
    assert (topo.link_capacity_bps == plan.speed_gbps * 1_000_000_000).all()
    for t, latency in enumerate(plan.latency_ps, start=1):
        assert (topo.link_latency_ps[topo.link_tier == t] == latency).all()


@PROPERTY
@given(cases())
def test_switch_ids_follow_the_documented_layout(case: Case) -> None:
    topo = topology_of(case)
    plan = topo.plan
    for q in (0, plan.planes - 1):
        for role, count in (
            (Role.LEAF, plan.leaves),
            (Role.SPINE, plan.spines),
            (Role.CORE, plan.cores),
        ):
            for index in {0, count - 1} if count else set():
                node = topo.switch_id(q, role, index)
                assert topo.node_role[node] == role
                assert topo.node_plane[node] == q
                assert topo.node_index[node] == index


# --- striping ---------------------------------------------------------------------------------


def assert_evenly_striped(topo: Topology, tier: int, fan: int, up: int) -> None:
    """Links of ``tier``: every connected (lower, upper) pair has the same multiplicity and each
    lower switch reaches exactly ``fan`` upper switches with ``up`` links in all."""
    mask = topo.link_tier == tier
    lo = topo.link_src[mask].astype(np.int64)
    hi = topo.link_dst[mask].astype(np.int64)
    pairs, multiplicity = np.unique(np.stack([lo, hi], axis=1), axis=0, return_counts=True)
    assert (multiplicity == up // fan).all(), np.unique(multiplicity)
    assert up % fan == 0
    lowers, reached = np.unique(pairs[:, 0], return_counts=True)
    assert (reached == fan).all(), np.unique(reached)
    n_lower = int((topo.node_role == topo.node_role[lo[0]]).sum())
    assert lowers.shape[0] == n_lower, "a lower switch has no uplinks"
    uplinks = np.bincount(lo - lowers.min())
    assert (uplinks[lowers - lowers.min()] == up).all()


@PROPERTY
@given(cases())
def test_uplinks_evenly_striped(case: Case) -> None:
    topo = topology_of(case)
    plan = topo.plan
    assert_evenly_striped(topo, 2, plan.spines_per_pod, plan.tier("leaf").up)
    # a leaf's spines are those of its own pod
    mask = topo.link_tier == 2
    assert np.array_equal(topo.node_pod[topo.link_src[mask]], topo.node_pod[topo.link_dst[mask]])
    if plan.tiers == 3:
        assert_evenly_striped(topo, 3, plan.cores_per_group, plan.tier("spine").up)
        # spine j of every pod goes to core group j
        mask = topo.link_tier == 3
        spine, core = topo.link_src[mask], topo.link_dst[mask]
        assert np.array_equal(topo.node_index[spine] % plan.spines_per_pod, topo.node_pod[core])
        # and every core group reaches a spine in every pod
        for q in range(plan.planes):
            in_plane = topo.link_plane[mask] == q
            pods_per_core = np.unique(
                np.stack([core[in_plane], topo.node_pod[spine[in_plane]]], axis=1), axis=0
            )
            assert pods_per_core.shape[0] == plan.cores * plan.pods


# --- rails ------------------------------------------------------------------------------------


@PROPERTY
@given(cases())
def test_rail_alignment(case: Case) -> None:
    topo = topology_of(case)
    plan = topo.plan
    mask = topo.link_tier == 1
    host = topo.link_src[mask].astype(np.int64)
    leaf = topo.link_dst[mask].astype(np.int64)
    plane = topo.link_plane[mask].astype(np.int64)
    j = topo.link_src_port[mask].astype(np.int64) % plan.ports_per_host
    node, local = np.divmod(host, plan.hosts_per_node)
    rail = local * plan.ports_per_host + j
    leaf_index = topo.node_index[leaf].astype(np.int64)
    if plan.family == "rail-optimized":
        su = node // plan.su_nodes
        # port j of GPU k of every node of an SU lands on a leaf of rail k*p + j of that SU
        assert np.array_equal(leaf_index // plan.leaves_per_su, su)
        assert np.array_equal((leaf_index % plan.leaves_per_su) // plan.leaves_per_rail, rail)
        # structurally: no leaf mixes rails or SUs, no node sits twice on a leaf...
        leaf_groups = np.unique(np.stack([leaf, su, rail], axis=1), axis=0)
        assert np.unique(leaf_groups[:, 0]).shape[0] == leaf_groups.shape[0]
        node_on_leaf = np.unique(np.stack([leaf, node], axis=1), axis=0)
        assert node_on_leaf.shape[0] == leaf.shape[0]
        # ...and each rail of an SU spreads over leaves_per_rail leaves
        rail_leaves = np.unique(np.stack([plane, su, rail, leaf], axis=1), axis=0)
        _, spread = np.unique(rail_leaves[:, :3], axis=0, return_counts=True)
        assert (spread == plan.leaves_per_rail).all()
        # a pod holds whole scalable units
        su_pod = np.unique(np.stack([su, topo.node_pod[leaf]], axis=1), axis=0)
        assert np.unique(su_pod[:, 0]).shape[0] == su_pod.shape[0], "an SU spans two pods"
    else:
        # top of rack: all ports of a node in a plane go to one leaf
        node_leaf = np.unique(np.stack([plane, node, leaf], axis=1), axis=0)
        assert node_leaf.shape[0] == plan.planes * plan.nodes
        assert np.array_equal(leaf_index, node // plan.nodes_per_leaf)


# --- planes, immutability, determinism --------------------------------------------------------


@PROPERTY
@given(cases())
def test_links_never_cross_planes(case: Case) -> None:
    topo = topology_of(case)
    plane = topo.link_plane
    assert ((plane >= 0) & (plane < topo.plan.planes)).all()
    assert (topo.node_plane[topo.link_dst] == plane).all()
    switch_src = topo.node_role[topo.link_src] != Role.HOST
    assert (topo.node_plane[topo.link_src[switch_src]] == plane[switch_src]).all()
    assert (topo.node_plane[topo.node_role == Role.HOST] == -1).all()
    assert (topo.node_plane[topo.node_role != Role.HOST] >= 0).all()


@PROPERTY
@given(cases())
def test_arrays_are_read_only(case: Case) -> None:
    topo = topology_of(case)
    for name in ARRAY_FIELDS:
        array = getattr(topo, name)
        assert isinstance(array, np.ndarray)
        assert array.shape[0] > 0, name
        assert not array.flags.writeable, name
        with pytest.raises(ValueError):
            array[0] = array[0]


@settings(max_examples=20)
@given(cases())
def test_generation_is_deterministic(case: Case) -> None:
    first = topology_of(case)
    second = generate(plan_fabric(build_spec(**case.kwargs)))
    assert first is not second
    for name in ARRAY_FIELDS:
        a, b = getattr(first, name), getattr(second, name)
        assert a.dtype == b.dtype, name
        assert a.tobytes() == b.tobytes(), name


# --- bisection (max flow) and ECMP with networkx ------------------------------------------------


def plane_graph(topo: Topology, plane: int = 0) -> nx.DiGraph:
    """One plane as a directed graph; capacity (Gbps) = multiplicity x speed in both directions."""
    mask = topo.link_plane == plane
    pairs, multiplicity = np.unique(
        np.stack([topo.link_src[mask], topo.link_dst[mask]], axis=1), axis=0, return_counts=True
    )
    graph = nx.DiGraph()
    speed = topo.plan.speed_gbps
    for (a, b), m in zip(pairs.tolist(), multiplicity.tolist(), strict=True):
        graph.add_edge(a, b, capacity=m * speed)
        graph.add_edge(b, a, capacity=m * speed)
    return graph


def half_split_flow_bps(topo: Topology) -> int:
    """Max flow from the hosts of the first half of the leaves (3 tiers: of the pods) to the
    hosts of the rest, in one plane."""
    plan = topo.plan
    graph = plane_graph(topo)
    mask = (topo.link_tier == 1) & (topo.link_plane == 0)
    host, leaf = topo.link_src[mask], topo.link_dst[mask]
    if plan.tiers == 3 and plan.pods > 1:
        side_a = topo.node_pod[leaf] < plan.pods // 2
    else:
        side_a = topo.node_index[leaf] < plan.leaves // 2
    a_hosts, b_hosts = set(host[side_a].tolist()), set(host[~side_a].tolist())
    assert a_hosts and b_hosts and not a_hosts & b_hosts
    for h in a_hosts:
        graph.add_edge("A", h)  # no capacity attribute: unbounded
    for h in b_hosts:
        graph.add_edge(h, "B")
    return int(nx.maximum_flow_value(graph, "A", "B")) * 1_000_000_000


def expected_bisection_bps(plan: FabricPlan) -> int:
    """min(host links, leaf uplinks, spine uplinks) x speed / 2, from the plan's switch tiers."""
    aggregates = [plan.endpoints, plan.leaves * plan.tier("leaf").up]
    if plan.tiers == 3:
        aggregates.append(plan.spines * plan.tier("spine").up)
    return min(aggregates) * plan.speed_gbps * 1_000_000_000 // 2


def case_param(case_id: str, tiers: int, hosts: int, radix: int, /, **kwargs: Any) -> Any:
    """A ``kport_plan(hosts, radix, **kwargs)`` case expected to size to ``tiers`` tiers."""
    return pytest.param(tiers, hosts, radix, kwargs, id=case_id)


BISECTION_CASES = [
    case_param("fat-tree", 2, 32, 8),
    case_param("fat-tree-leaf-3:1", 2, 36, 12, leaf_oversubscription=3),
    case_param("rail-4gpu", 2, 4 * 16, 16, family="rail-optimized", accelerators_per_node=4),
    case_param(
        "rail-leaf-2:1",
        2,
        2 * 12,
        9,
        family="rail-optimized",
        accelerators_per_node=2,
        leaf_oversubscription=2,
    ),
    case_param("k4", 3, 16, 4),
    case_param("k8", 3, 128, 8),
    case_param("leaf-3:1", 3, 144, 8, leaf_oversubscription=3),
    case_param("spine-3:1", 3, 144, 8, spine_oversubscription=3),
    case_param("spine-1.5", 3, 128, 8, spine_oversubscription=1.5),
    case_param("rail-2gpu", 3, 128, 8, family="rail-optimized", accelerators_per_node=2),
    case_param("forced-2pods", 3, 32, 8, tiers=3),  # auto would choose 2 tiers
    case_param("spine-3:1-2pods", 3, 48, 8, spine_oversubscription=3),
]


@pytest.mark.parametrize(("tiers", "hosts", "radix", "kwargs"), BISECTION_CASES)
def test_bisection_equals_max_flow(
    tiers: int, hosts: int, radix: int, kwargs: dict[str, Any]
) -> None:
    """Fabrics with whole leaves and an even number of leaves (2 tiers) or of whole pods
    (3 tiers), so that the leaf- or pod-aligned split is a true bisection."""
    plan = kport_plan(hosts, radix, **kwargs)
    assert plan.tiers == tiers
    if plan.tiers == 3:
        assert plan.pods % 2 == 0 and plan.leaves == plan.pods * plan.pod_leaves
    else:
        assert plan.leaves % 2 == 0
    assert plan.endpoints == plan.leaves * plan.tier("leaf").down  # whole leaves
    topo = generate(plan)
    assert plan.bisection_bps == expected_bisection_bps(plan)
    assert half_split_flow_bps(topo) == plan.bisection_bps


def test_oversubscribed_bisection_is_below_full() -> None:
    plan = kport_plan(144, 8, leaf_oversubscription=3)
    assert half_split_flow_bps(generate(plan)) < plan.full_bisection_bps


def test_single_pod_three_tier_bisection_ignores_core_tier() -> None:
    plan = kport_plan(16, 8, tiers=3, spine_oversubscription=3)
    assert (plan.tiers, plan.pods) == (3, 1)
    assert half_split_flow_bps(generate(plan)) == plan.bisection_bps


def switch_graph(topo: Topology, plane: int = 0) -> nx.Graph:
    mask = (topo.link_plane == plane) & (topo.link_tier > 1)
    graph = nx.Graph()
    graph.add_edges_from(
        zip(topo.link_src[mask].tolist(), topo.link_dst[mask].tolist(), strict=True)
    )
    return graph


ECMP_CASES = [
    case_param("fat-tree", 2, 32, 8),
    case_param("rail-2t", 2, 4 * 16, 16, family="rail-optimized", accelerators_per_node=4),
    case_param("k8", 3, 128, 8),
    case_param("spine-3:1", 3, 144, 8, spine_oversubscription=3),
    case_param("rail-3t", 3, 128, 8, family="rail-optimized", accelerators_per_node=2),
]


@pytest.mark.parametrize(("tiers", "hosts", "radix", "kwargs"), ECMP_CASES)
def test_ecmp_paths_match_shortest_paths(
    tiers: int, hosts: int, radix: int, kwargs: dict[str, Any]
) -> None:
    plan = kport_plan(hosts, radix, **kwargs)
    assert plan.tiers == tiers
    topo = generate(plan)
    first = topo.switch_id(0, Role.LEAF, 0)
    last = topo.switch_id(0, Role.LEAF, plan.leaves - 1)
    paths = list(nx.all_shortest_paths(switch_graph(topo), first, last))
    assert len(paths[0]) == (3 if plan.tiers == 2 else 5)
    assert len(paths) == plan.ecmp_paths()
    if plan.tiers == 2:
        assert plan.ecmp_paths() == plan.spines
    else:
        assert plan.ecmp_paths() == plan.spines_per_pod * plan.cores_per_group
