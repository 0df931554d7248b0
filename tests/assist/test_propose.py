"""``propose`` on goals whose answer is known by construction: the DGX SuperPOD's published
sizes, a budget that admits exactly one candidate, a goal nothing meets; every front member
passes every validator and meets every constraint; the front has no dominated member (also as
a property over generated metrics); one worker or two give the same bytes; the bisection of a
multi-plane fabric with planes down equals a networkx max-flow on the generated fabric."""

from __future__ import annotations

import itertools
import json
from typing import Any

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.assist.goal import Goal, goal_from_dict
from clusterloom.assist.propose import (
    Candidate,
    Metrics,
    ProposeResult,
    bisection_bps,
    bisection_kept,
    dominates,
    pareto_front,
    propose,
)
from clusterloom.assist.propose_records import previous_run, proposal_id, proposals_of
from clusterloom.exec import LocalExecutor
from clusterloom.fabric import generate, plan_fabric
from clusterloom.findings import Severity
from clusterloom.pipeline import run_design
from clusterloom.spec import check_spec, spec_hash
from helpers import SMALL_MODEL


def goal(**changes: Any) -> Goal:
    doc: dict[str, Any] = {
        "version": 1,
        "name": "small",
        "compute": {"accelerators": 128},
        "network": {"bandwidth_per_accelerator_gbps": 400, "transports": ["roce-ecmp"]},
        "failure": {"planes_down": 1, "floors": {"bisection": 0.5}},
        "space": {
            "families": ["rail-optimized"],
            "switches": ["tomahawk4-64x400g", "tomahawk5-64x800g"],
            "tiers": [2],
            "leaf_oversubscription": [1, 2],
        },
    }
    for key, value in changes.items():
        doc[key] = {**doc[key], **value} if isinstance(value, dict) and key in doc else value
    return goal_from_dict(doc)


@pytest.fixture(scope="module")
def small() -> ProposeResult:
    return propose(goal(network={"max_oversubscription": {"leaf": 2}}))


# --- known by construction -----------------------------------------------------------------


SUPERPOD_SUS = {4: (32, 16), 8: (64, 32)}  # SUs -> (leaves, spines): NVIDIA's published sizes


@pytest.mark.parametrize("sus", sorted(SUPERPOD_SUS))
def test_the_cheapest_design_is_the_dgx_superpod_reference(sus: int) -> None:
    """One 400G NDR port per GPU on QM9700, scalable units of 32 nodes: the cheapest candidate
    is the published two-tier SuperPOD (a third tier only adds switches)."""
    g = goal_from_dict(
        {
            "version": 1,
            "name": "superpod",
            "compute": {"accelerators": sus * 32 * 8, "accelerator_model": "B200"},
            "network": {
                "bandwidth_per_accelerator_gbps": 400,
                "nic": {"ports": 1, "port_speeds_gbps": [400]},
                "transports": ["ideal"],  # a bound, not an Ethernet transport: InfiniBand may
            },
            "failure": {"planes_down": 0},
            "space": {
                "families": ["rail-optimized"],
                "switches": ["qm9700"],
                "leaf_oversubscription": [1],
            },
            "optimise": ["cost"],
        }
    )
    result = propose(g)
    assert [c.choice["tiers"] for c in result.front] == [2]
    (best,) = result.front
    plan = plan_fabric(best.spec)
    assert (plan.leaves, plan.spines) == SUPERPOD_SUS[sus]
    assert plan.su_nodes == 32 and plan.leaves_per_su == 8
    dominated = [r for r in result.rejected if r.constraint == "dominated"]
    assert dominated and all(r.dominated_by == best.id for r in dominated)


def test_a_budget_that_admits_exactly_one_candidate_returns_it() -> None:
    limits = {"max_oversubscription": {"leaf": 2}}
    first = propose(goal(network=limits, optimise=["cost"]))
    (cheapest,) = first.front
    # every candidate priced: the front's and those it dominates
    costs = sorted(
        [cheapest.metrics.cost_cents]
        + [r.metrics.cost_cents for r in first.rejected if r.metrics is not None]
    )
    assert len(costs) >= 2 and costs[0] < costs[1] and costs[0] == cheapest.metrics.cost_cents
    budget_usd = (costs[0] + costs[1]) / 2 / 100  # between the cheapest and the next
    result = propose(goal(network=limits, budget={"max_cost_usd": budget_usd}))
    assert [c.id for c in result.front] == [cheapest.id]
    assert result.tiers["simulate"] == 1
    over = [r for r in result.rejected if r.constraint == "budget.max_cost_usd"]
    assert len(over) == result.tiers["bom"] - 1 == len(costs) - 1
    for r in over:
        assert r.by > 0 and r.excess == pytest.approx(r.by / (budget_usd * 100))


def test_a_goal_nothing_meets_names_the_binding_constraint_and_the_nearest() -> None:
    result = propose(goal(budget={"max_cost_usd": 1000}))
    assert result.front == ()
    (finding,) = result.findings
    assert finding.severity is Severity.WARNING and finding.code == "goal-unmet"
    assert finding.where == "budget.max_cost_usd"
    over = sorted(
        (r for r in result.rejected if r.constraint == "budget.max_cost_usd"),
        key=lambda r: (r.excess, r.id),
    )
    assert over[0].id in finding.message
    assert over[0].excess == pytest.approx((over[0].by) / 100_000)


def test_the_failure_floor_rejects_too_few_planes_by_how_much() -> None:
    g = goal(
        failure={"planes_down": 1, "floors": {"bisection": 0.85}},
        network={"nic": {"ports": 8, "port_speeds_gbps": [100]}},
    )
    result = propose(g)
    floor = [r for r in result.rejected if r.constraint == "failure.floors.bisection"]
    four = [r for r in floor if r.choice["planes"] == 4]
    assert four and all(r.by == pytest.approx(0.85 - 0.75) for r in four)
    # one plane down keeps (p - 1) / p: 85% needs 7 planes or more (6 keep 83.3%)
    assert result.front and all(c.choice["planes"] >= 7 for c in result.front)
    for c in result.front:
        p = c.choice["planes"]
        assert c.metrics.failure_kept == pytest.approx((p - 1) / p)
    six = [r for r in floor if r.choice["planes"] == 6]
    assert six and all(r.by == pytest.approx(0.85 - 5 / 6) for r in six)


# --- every front member is a valid design that meets the goal --------------------------------


def test_every_front_member_passes_every_validator_and_meets_the_goal(small: ProposeResult) -> None:
    g = small.goal
    assert small.front
    for c in small.front:
        assert check_spec(c.spec) == []
        design = run_design(c.spec, compare=False)
        assert not [f for f in design.findings if f.severity is Severity.ERROR]
        nic = c.spec.compute.nic
        assert nic.scale_out * nic.port_speed_gbps >= g.network.bandwidth_per_accelerator_gbps
        over = c.spec.fabrics.backend.oversubscription
        assert over.leaf <= g.network.max_oversubscription.leaf
        assert c.metrics.failure_kept >= g.failure.floors.bisection
        assert c.metrics.cost_cents == design.bom.cost_cents
        assert c.metrics.power_mw == design.bom.power_mw
        assert c.metrics.fct_p99_ps is not None and c.metrics.fct_p99_ps > 0


def test_the_front_has_no_dominated_member(small: ProposeResult) -> None:
    objectives = small.goal.optimise
    for a in small.front:
        for b in small.front:
            assert not dominates(a.metrics, b.metrics, objectives)
    by_id = {c.id: c for c in small.front}
    dominated = [r for r in small.rejected if r.constraint == "dominated"]
    assert dominated
    assert all(r.dominated_by in by_id for r in dominated)


def test_every_candidate_is_accounted_for_once(small: ProposeResult) -> None:
    ids = [c.id for c in small.front] + [r.id for r in small.rejected]
    assert len(ids) == len(set(ids)) == small.tiers["sizing"]


def test_one_worker_or_two_give_the_same_bytes(small: ProposeResult) -> None:
    with LocalExecutor(2) as pool:
        again = propose(small.goal, executor=pool)
    assert again.to_json() == small.to_json()
    assert json.loads(small.to_json())["tiers"] == small.tiers


metrics = st.builds(
    Metrics,
    cost_cents=st.integers(1, 20),
    power_mw=st.integers(1, 20),
    bisection_bps=st.just(1),
    failure_kept=st.sampled_from([0.0, 0.5, 0.75, 1.0]),
    fct_p99_ps=st.integers(1, 20),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(metrics, min_size=1, max_size=25))
def test_pareto_front_property(ms: list[Metrics]) -> None:
    objectives = ("cost", "power", "fct", "failure")
    cands = [Candidate(f"c{i:02d}", {}, None, m) for i, m in enumerate(ms)]  # type: ignore[arg-type]
    front, beaten = pareto_front(cands, objectives)
    ids = {c.id for c in front}
    assert ids | {c.id for c, _ in beaten} == {c.id for c in cands}
    assert not ids & {c.id for c, _ in beaten}
    for c in front:
        assert not any(dominates(o.metrics, c.metrics, objectives) for o in cands)
    for c, by in beaten:
        assert by.id in ids and dominates(by.metrics, c.metrics, objectives)


# --- the bisection of a multi-plane fabric ---------------------------------------------------


def _max_flow_bps(topology: Any, down: set[int]) -> int:
    """Max flow from the hosts of the first half of the leaves of plane 0 to the others, over
    every link of the planes not in ``down`` (capacities in Gb/s, both directions)."""
    plan = topology.plan
    graph = nx.DiGraph()
    live = ~np.isin(topology.link_plane, sorted(down))
    pairs, mult = np.unique(
        np.stack([topology.link_src[live], topology.link_dst[live]], axis=1),
        axis=0,
        return_counts=True,
    )
    for (a, b), m in zip(pairs.tolist(), mult.tolist(), strict=True):
        graph.add_edge(a, b, capacity=m * plan.speed_gbps)
        graph.add_edge(b, a, capacity=m * plan.speed_gbps)
    first = (topology.link_tier == 1) & (topology.link_plane == 0)
    host, leaf = topology.link_src[first], topology.link_dst[first]
    if plan.tiers == 3 and plan.pods > 1:
        side_a = topology.node_pod[leaf] < plan.pods // 2
    else:
        side_a = topology.node_index[leaf] < plan.leaves // 2
    for h in set(host[side_a].tolist()):
        graph.add_edge("A", h)
    for h in set(host[~side_a].tolist()):
        graph.add_edge(h, "B")
    return int(nx.maximum_flow_value(graph, "A", "B")) * 1_000_000_000


@pytest.mark.parametrize(
    ("family", "tiers", "ports", "planes", "leaf", "grow_to"),
    [
        ("rail-optimized", 2, 4, 4, 1.0, None),
        ("rail-optimized", 2, 4, 2, 2.0, None),
        ("fat-tree", 2, 2, 2, 1.0, None),
        ("rail-optimized", 3, 2, 2, 1.0, None),
        # a scalable unit planned for 512: its leaves hold 16 of their 32 ports today
        ("rail-optimized", 2, 2, 2, 1.0, 512),
    ],
)
def test_bisection_with_planes_down_equals_max_flow(
    family: str, tiers: int, ports: int, planes: int, leaf: float, grow_to: int | None
) -> None:
    from clusterloom.spec import ClusterSpec

    spec = ClusterSpec.model_validate(
        {
            "version": 1,
            "name": "b",
            "compute": {
                "accelerators": 128,
                "nic": {"ports_per_accelerator": ports, "port_speed_gbps": 100},
            },
            "fabrics": {
                "backend": {
                    "family": family,
                    "planes": planes,
                    "tiers": tiers,
                    "switch": "tomahawk3-32x400g",
                    "oversubscription": {"leaf": leaf},
                    **({"pod_leaves": 8} if tiers == 3 and family == "rail-optimized" else {}),
                }
            },
            **({"growth": {"plan_for_accelerators": grow_to}} if grow_to else {}),
        }
    )
    plan = plan_fabric(spec)
    topology = generate(plan)
    assert bisection_bps(plan) == _max_flow_bps(topology, set())
    for d in range(1, planes + 1):
        down = set(range(d))
        assert bisection_bps(plan, planes - d) == _max_flow_bps(topology, down)
        assert bisection_kept(plan, d) == pytest.approx((planes - d) / planes)


# --- proposals as change records -------------------------------------------------------------


def test_proposals_are_greenfield_plans_that_supersede_the_previous_run(
    small: ProposeResult,
) -> None:
    first = proposals_of(small)
    assert [p.supersedes for p in first] == [""] * len(small.front)
    for p, c in zip(first, small.front, strict=True):
        assert p.plan.baseline == "greenfield" and p.plan.steps == ()
        assert p.plan.target == spec_hash(c.spec)
        assert p.id == proposal_id("small", small.run_id(), c.id)
    records = [{"id": p.id, "kind": "proposal"} for p in first]
    assert previous_run(records, "small", small.run_id()) == []
    other = "f" * 64
    assert previous_run(records, "small", other) == [p.id for p in first]
    assert previous_run(records, "another-goal", other) == []
    # the same candidates in a later run supersede their own earlier proposals
    later = proposals_of(small, [proposal_id("small", other, c.id) for c in small.front[::-1]])
    assert [p.supersedes for p in later] == [proposal_id("small", other, c.id) for c in small.front]


# --- a site, growth and a job ----------------------------------------------------------------


def _site_goal(rows: int, positions: int) -> Goal:
    template = {"rows": rows, "positions_per_row": positions, "pitch_m": 1.0, "origin_m": [2, 2]}
    hall = {"name": "h1", "width_m": 40, "depth_m": 30, "template": template}
    return goal_from_dict(
        {
            "version": 1,
            "name": "site",
            "compute": {"accelerators": 64},
            "network": {
                "bandwidth_per_accelerator_gbps": 200,
                "nic": {"ports": 1, "port_speeds_gbps": [200]},
            },
            "failure": {"planes_down": 0},
            "site": {"buildings": [{"name": "b1", "halls": [hall]}]},
            "space": {
                "families": ["rail-optimized"],
                "switches": ["tomahawk3-32x400g", "tomahawk4-64x400g"],
                "tiers": [2],
                "leaf_oversubscription": [1],
            },
            "optimise": ["cost"],
        }
    )


@pytest.mark.slow
def test_with_a_site_only_the_front_is_placed_and_cabled() -> None:
    result = propose(_site_goal(2, 4), keep_designs=True)
    assert result.tiers["pareto"] == 2 and result.tiers["design"] == 1
    (member,) = result.front
    (design,) = result.designs
    assert design.placement is not None and design.cabling is not None
    assert member.cabled_cost_cents == design.bom.cost_cents
    assert member.cabled_power_mw == design.bom.power_mw
    assert design.bom.cabled and member.metrics.cost_cents != member.cabled_cost_cents


@pytest.mark.slow
def test_a_site_too_small_rejects_each_front_member_in_turn() -> None:
    """The cheapest is placed first and refused; the front is chosen again from the other,
    which the hall cannot hold either: the binding constraint is the site."""
    result = propose(_site_goal(1, 2))
    assert result.front == () and result.tiers["design"] == 2
    refused = [r for r in result.rejected if r.tier == "design"]
    assert [r.constraint for r in refused] == ["site", "site"]
    assert all("rack positions" in r.detail for r in refused)
    (finding,) = result.findings
    assert finding.where == "site" and all(r.id in finding.message for r in refused)


def test_growth_to_reserve_sizes_the_upper_layers_for_it() -> None:
    plain = propose(goal(optimise=["cost"]))
    grown = propose(goal(optimise=["cost"], growth_to_accelerators=512))
    (a,), (b,) = plain.front, grown.front
    assert b.spec.growth is not None and b.spec.growth.plan_for_accelerators == 512
    assert plan_fabric(b.spec).spines > plan_fabric(a.spec).spines
    assert b.metrics.cost_cents > a.metrics.cost_cents


def test_step_time_trades_against_cost_over_the_nic_split() -> None:
    """An 8 x 100G NIC with at least 200G for scale-out: more scale-out ports cost more and
    shorten the job's step (its data-parallel all-reduce crosses the fabric)."""
    from clusterloom.units import PS_PER_S
    from clusterloom.workload import step_ops, step_time

    model = dict(SMALL_MODEL)
    g = goal(
        network={
            "nic": {"ports": 8, "port_speeds_gbps": [100]},
            "bandwidth_per_accelerator_gbps": 200,
        },
        failure={"planes_down": 0},
        compute={"scale_up": {"domain_size": 8, "bandwidth_gbps": 3600}},
        job={
            "model": model,
            "batch": {"global_batch": 64, "micro_batch": 1},
            "parallelism": {"tp": 2, "pp": 4},
            "compute": {"peak_tflops": 1000, "utilisation": 0.5},
        },
        optimise=["cost", "step_time"],
        space={"switches": ["tomahawk4-64x400g"], "leaf_oversubscription": [1]},
    )
    result = propose(g)
    assert len(result.front) >= 2
    front = sorted(result.front, key=lambda c: c.metrics.cost_cents)
    steps = [c.metrics.step_time_ps for c in front]
    assert all(s is not None for s in steps)
    # on a front of two objectives a dearer member is faster; equal cost, equal step (a tie:
    # 8 ports in 4 planes or in 8)
    for a, b in itertools.pairwise(front):
        if b.metrics.cost_cents > a.metrics.cost_cents:
            assert b.metrics.step_time_ps < a.metrics.step_time_ps  # type: ignore[operator]
        else:
            assert b.metrics.step_time_ps == a.metrics.step_time_ps
    assert len({c.metrics.cost_cents for c in front}) >= 3
    ports = [c.choice["scale_out_ports"] for c in front]
    assert ports == sorted(ports)
    for c in front:
        expected = round(step_time(c.spec, step_ops(c.spec)).step_s * PS_PER_S)
        assert c.metrics.step_time_ps == expected


def test_the_result_as_json_carries_each_members_spec(small: ProposeResult) -> None:
    from clusterloom.spec import ClusterSpec

    data = json.loads(small.to_json())
    assert [m["id"] for m in data["front"]] == [c.id for c in small.front]
    for m, c in zip(data["front"], small.front, strict=True):
        assert ClusterSpec.model_validate(m["spec"]) == c.spec
        assert m["spec_hash"] == spec_hash(c.spec)
    assert len(data["rejected"]) == len(small.rejected)
    assert len(small.run_id()) == 64
