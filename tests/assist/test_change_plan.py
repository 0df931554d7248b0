"""Change plans validated step by step (``assist.plan``): each change kind on small designs
made through the pipeline (``plan_designs``), every intermediate state recomputed from the
plan's link names alone with networkx (a max-flow and components of its own) and held to the
floors, the last state equal to the target design, the re-packing of a wave against a closed
form, and a floor no order can keep reported, not crashed on.

The growth's first wave, worked by hand (``plan_designs.base`` -> ``growth``)::

    8 leaves x 8 uplinks (4 to each of 2 spines), 8 hosts a leaf; wave 1 re-patches 4 of each
    leaf's uplinks (32 links). Halved by leaf (leaves 0-3 | 4-7), the cut is
    min(live uplinks of either half) = 32 - max(dA, dB) links of 200G, over 32 in the target
    (whose extra uplinks join the installed hosts only through the same leaves: host-bound at
    32 x 200G). Taken in turn from each leaf, k links drain dA = 4 (k // 8) + min(k % 8, 4)
    from the first half: the wave of 32 leaves 50%; at a floor of 75% each wave may drain
    k = 16 (dA = 8), at 87.5% k = 8 (dA = 4); at 99% not even one (dA = 1: 96.9%).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from plan_designs import CHANGES, target, write_baselines

from clusterloom.assist import Floors, PlanResult, plan_change
from clusterloom.assist.plan import change_kind
from clusterloom.changes import apply_plan
from clusterloom.fabric.topology import Role
from clusterloom.growth import read_installed
from clusterloom.growth.drained import LinkTable, link_table, live_after_steps
from clusterloom.growth.rework import fabric_link_names
from clusterloom.pipeline import run_design


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_baselines(tmp_path_factory.mktemp("plans"))


@pytest.fixture(scope="module")
def worlds(runs: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """Per change kind: the baseline and target links as a table, independent of the planner."""
    out = {}
    for kind, (base, _) in CHANGES.items():
        installed = read_installed(runs[base])
        design = run_design(target(kind), compare=False, installed=installed)
        assert design.growth is not None
        catalog = design.spec.resolved_catalog()
        table = link_table(design.growth.baseline.fabrics, design.fabrics, catalog)
        out[kind] = {
            "installed": installed,
            "table": table,
            "old": {n for n, i in table.index.items() if table.base[i]},
            "new": fabric_link_names(design.fabrics, catalog),
        }
    return out


def _graph(table: LinkTable, live: np.ndarray, plane: int, fabric: int) -> nx.DiGraph:
    g = nx.DiGraph()
    sel = np.flatnonzero(live & (table.plane == plane) & (table.fabric == fabric))
    for i in sel.tolist():
        a, b, c = int(table.lo[i]), int(table.hi[i]), float(table.gbps[i])
        for u, v in ((a, b), (b, a)):
            cap = g[u][v]["capacity"] + c if g.has_edge(u, v) else c
            g.add_edge(u, v, capacity=cap)
    return g


def _halvings(table: LinkTable, hosts: list[int], plane: int) -> list[set[int]]:
    """The planner's two halvings, computed here on their own: by host id, and by leaf."""
    n = len(hosts)
    leaf = {}
    for i in np.flatnonzero(table.base & (table.plane == plane)).tolist():
        lo = int(table.lo[i])
        if table.role[lo] == int(Role.HOST) and lo in hosts:
            leaf[lo] = min(leaf.get(lo, 1 << 60), int(table.hi[i]))
    by_leaf = sorted(hosts, key=lambda h: (leaf[h], hosts.index(h)))
    return [set(hosts[n // 2 :]), set(by_leaf[n // 2 :])]


def _cut(table: LinkTable, live: np.ndarray, hosts: list[int], plane: int) -> float:
    g = _graph(table, live, plane, 0)
    best = float("inf")
    for second in _halvings(table, hosts, plane):
        h = g.copy()
        for x in hosts:  # hosts never forward: only their own links, to the source or sink
            if x in second:
                h.add_edge(x, "t")
            else:
                h.add_edge("s", x)
        best = min(best, nx.maximum_flow_value(h, "s", "t") if "s" in h and "t" in h else 0.0)
    return best


def _backend_hosts(table: LinkTable) -> list[int]:
    rows = table.base & (table.fabric == 0) & (table.role[table.lo] == int(Role.HOST))
    hosts = sorted(set(table.lo[rows].tolist()), key=lambda h: int(table.nodes[h].split("host")[1]))
    return hosts


def _check_states(result: PlanResult, world: dict[str, Any], floors: Floors) -> None:
    """Every state recomputed: bisection and each plane by networkx, connectivity by
    networkx, each held to ``min(floor, the baseline's)`` unless a plan-floor error names it;
    the last state the target's links."""
    table: LinkTable = world["table"]
    assert table.fabrics[0] == "backend"
    hosts = _backend_hosts(table)
    planes = sorted(set(table.plane[table.base & (table.fabric == 0)].tolist()))
    target_mask = np.zeros(table.n_links, dtype=bool)
    target_mask[[table.index[n] for n in world["new"]]] = True
    want = {p: _cut(table, target_mask, hosts, p) for p in planes}
    start = {p: _cut(table, table.base, hosts, p) for p in planes}
    need = min(floors.bisection, sum(start.values()) / sum(want.values()))
    need_plane = {p: min(floors.plane, start[p] / want[p]) for p in planes}
    refused = any(f.code == "plan-floor" for f in result.findings)
    live = table.base
    seen: dict[bytes, dict[int, float]] = {}
    steps = result.plan.steps
    for step, live in zip(steps, live_after_steps(table, steps), strict=True):
        key = np.packbits(live).tobytes()
        if key not in seen:
            seen[key] = {p: _cut(table, live, hosts, p) for p in planes}
        cuts = seen[key]
        left = sum(cuts.values()) / sum(want.values())
        assert step.checks["backend:bisection-left"] == pytest.approx(left, abs=1e-4)
        for p in planes:
            assert step.checks[f"backend:p{p}:plane-left"] == pytest.approx(
                cuts[p] / want[p], abs=1e-4
            )
        g = nx.Graph()
        sel = np.flatnonzero(live & (table.fabric == 0))
        g.add_edges_from(zip(table.lo[sel].tolist(), table.hi[sel].tolist(), strict=True))
        serving = [h for h in hosts if h in g]
        parts = {frozenset(nx.node_connected_component(g, h)) for h in serving}
        assert step.checks["backend:components"] == len(parts)
        assert step.checks["backend:hosts-out"] == len(hosts) - len(serving)
        keeps = left >= need - 1e-9 and all(
            cuts[p] / want[p] >= need_plane[p] - 1e-9 for p in planes
        )
        if step.valid:
            assert keeps and len(parts) == 1, step
        if not refused:
            assert step.valid and keeps, step
    assert apply_plan(world["old"], result.plan) == world["new"]
    assert np.array_equal(live, target_mask)  # after the last restore every target link is live


@pytest.mark.parametrize("kind", list(CHANGES))
def test_each_change_kind_is_planned_and_reaches_its_target(
    kind: str, runs: dict[str, Path], worlds: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    base, _ = CHANGES[kind]
    result = plan_change(runs[base], target(kind), Floors(), simulate=False)
    assert result.kind == kind
    assert result.reaches_target
    _check_states(result, worlds[kind], Floors())
    if kind == "growth":  # deterministic, from a directory or its Installed, a spec or its file
        spec_file = tmp_path / "target.yaml"
        spec_file.write_text(yaml.safe_dump(CHANGES[kind][1]))
        again = plan_change(worlds[kind]["installed"], spec_file, Floors(), simulate=False)
        same = json.dumps(again.to_dict(), sort_keys=True)
        assert same == json.dumps(result.to_dict(), sort_keys=True)
    assert result.proposal.plan == result.plan and result.proposal.supersedes == ""


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.sampled_from(["growth", "plane added"]),  # re-stripe: in the test of each kind
    bisection=st.floats(0.0, 1.0),
    plane=st.floats(0.0, 1.0),
)
def test_every_intermediate_state_keeps_the_floors_or_is_named(
    kind: str,
    bisection: float,
    plane: float,
    runs: dict[str, Path],
    worlds: dict[str, dict[str, Any]],
) -> None:
    floors = Floors(bisection=bisection, plane=plane)
    _base, _ = CHANGES[kind]
    result = plan_change(worlds[kind]["installed"], target(kind), floors, simulate=False)
    _check_states(result, worlds[kind], floors)
    for f in result.findings:
        if f.code == "plan-floor":
            assert f.where.startswith("change.steps[") and "steps " in f.message


def _wave_sizes(result: PlanResult) -> list[int]:
    return [len(s.objects) for s in result.plan.steps if s.action == "drain"]


@pytest.mark.parametrize(("floor", "sizes"), [(0.5, [32, 32]), (0.75, [16, 16, 32])])
def test_a_wave_is_split_as_the_closed_form_says(
    floor: float, sizes: list[int], worlds: dict[str, dict[str, Any]]
) -> None:
    result = plan_change(
        worlds["growth"]["installed"], target("growth"), Floors(bisection=floor), simulate=False
    )
    assert _wave_sizes(result) == sizes
    drains = [s for s in result.plan.steps if s.action == "drain"]
    assert min(float(s.checks["backend:bisection-left"]) for s in drains) == pytest.approx(floor)
    split = [f for f in result.findings if f.code == "plan-split"]
    assert bool(split) == (floor > 0.5)
    assert not result.errors
    assert result.plan.summary["waves"] == len(sizes)


def test_a_smaller_wave_grows_once_the_new_links_are_live(
    worlds: dict[str, dict[str, Any]],
) -> None:
    """At 87.5% the first wave drains 8 links (dA = 4, the closed form from the installed
    state); the wave it restores brings the new links on the ports it freed (64 pulled for 32
    re-patched), so the next waves may drain more, and the 32 links of the first wave are
    drained in all."""
    result = plan_change(
        worlds["growth"]["installed"], target("growth"), Floors(bisection=0.875), simulate=False
    )
    sizes = _wave_sizes(result)
    assert sizes[0] == 8 and sum(sizes[:-1]) == 32 and sizes[-1] == 32
    drains = [s for s in result.plan.steps if s.action == "drain"]
    assert min(float(s.checks["backend:bisection-left"]) for s in drains) >= 0.875
    assert not result.errors


def test_links_that_cannot_keep_the_floor_in_their_wave_move_after_the_others(
    worlds: dict[str, dict[str, Any]],
) -> None:
    """At 95% the last links of the first wave break the floor even alone once the wave's
    others are off; moved after the second wave (whose new links are then live) they keep it."""
    result = plan_change(
        worlds["growth"]["installed"], target("growth"), Floors(bisection=0.95), simulate=False
    )
    codes = [f.code for f in result.findings]
    assert "plan-reorder" in codes and not result.errors
    drains = [s for s in result.plan.steps if s.action == "drain"]
    assert min(float(s.checks["backend:bisection-left"]) for s in drains) >= 0.95
    assert all(s.valid for s in result.plan.steps)
    _check_states(result, worlds["growth"], Floors(bisection=0.95))


def test_a_floor_no_order_can_keep_is_named_with_its_step(
    worlds: dict[str, dict[str, Any]],
) -> None:
    result = plan_change(
        worlds["growth"]["installed"], target("growth"), Floors(bisection=0.99), simulate=False
    )
    refused = [f for f in result.findings if f.code == "plan-floor"]
    assert refused and "bisection floor 99%" in refused[0].message
    first_drain = next(s for s in result.plan.steps if s.action == "drain")
    assert refused[0].where == f"change.steps[{first_drain.order - 1}]"
    assert not first_drain.valid
    assert result.reaches_target  # the plan is still made, every link still placed
    assert result.errors


def test_the_job_and_the_hosts_of_a_single_link_are_counted(runs: dict[str, Path]) -> None:
    """A switch model replaced re-pulls 7 host links: each host has one link, so those hosts
    are out for the re-pull whatever the order (a warning, not a floor), and the job's rank
    pairs touching them are counted apart from pairs cut between hosts in service."""
    result = plan_change(runs["base"], target("switch replaced"), Floors(), simulate=False)
    drain = next(s for s in result.plan.steps if s.action == "drain")
    assert drain.checks["backend:hosts-out"] == drain.checks["backend:hosts-out-forced"] == 7
    assert drain.checks["backend:job-pairs-cut"] == 0
    assert int(drain.checks["backend:job-pairs-out"]) > 0
    assert drain.valid
    assert {f.code for f in result.findings} >= {"plan-hosts-out"}
    assert not any(f.code == "plan-floor" for f in result.findings)


def test_the_predicted_impact_is_the_flow_engine_on_each_state(
    runs: dict[str, Path], worlds: dict[str, dict[str, Any]]
) -> None:
    """With ``simulate``: the restored state is the baseline's links (slowdown exactly 1);
    while 7 single-homed hosts are out, exactly the permutation's flows from or to them do not
    finish (the traffic recomputed here: the same scenario among the 64 installed hosts)."""
    from clusterloom.sim.scenario import resolve_scenario

    spec = target("switch replaced")
    result = plan_change(runs["base"], spec, Floors())
    drain = next(s for s in result.plan.steps if s.action == "drain")
    table: LinkTable = worlds["switch replaced"]["table"]
    rows = [table.index[n] for n in drain.objects]
    hosts = {int(table.nodes[table.lo[i]].split("host")[1]) for i in rows}
    assert len(hosts) == 7 and all(table.role[table.lo[i]] == int(Role.HOST) for i in rows)
    backend = run_design(spec, compare=False, place=False).fabrics[0].topology
    sc = resolve_scenario(
        spec, backend, traffic="permutation", transports=["roce-ecmp"], failures=["none"], hosts=64
    )
    assert sc.traffic is not None
    touching = np.isin(sc.traffic.src, list(hosts)) | np.isin(sc.traffic.dst, list(hosts))
    assert drain.checks["backend:flows-unfinished"] == int(touching.sum()) > 0
    restored = result.plan.steps[-1].checks  # the re-pulled links back: the baseline's state
    assert restored["backend:flows-unfinished"] == 0
    assert restored["backend:predicted-slowdown"] == 1.0
    assert "permutation of 2MB among 64 installed hosts, roce-ecmp" in result.impact
    assert result.to_dict()["impact"] == result.impact


def test_change_kind_reads_the_designs(runs: dict[str, Path]) -> None:
    installed = read_installed(runs["base"])
    base = run_design(installed.spec, compare=False)
    assert change_kind(base, base) == ""
