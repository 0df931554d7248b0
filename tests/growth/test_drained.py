"""Capacity while a change plan's links are drained (``growth.drained``): closed forms on a
2-tier Clos, the closed form against max-flow on generated fabrics and drained sets, and the
checks of a real plan (hgx-1k-roce 1,024 -> 1,280) computed again from its steps' names.

A 2-tier Clos, each leaf with ``u`` uplinks striped over the spines; ``k`` of leaf 0's drained::

    spine0   spine1  ...           leaf 0 keeps u - k of u uplinks: (u - k) / u
     |  \\   /  |                   the pair cut leaf 0 - leaf b: sum over spines of
    leaf0   leaf1  ...              min(C[0, s], C[b, s]) = u - k of u: (u - k) / u
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from test_apply import _hgx, installed_of

from clusterloom.changes import ChangePlan, Step, from_json, to_json
from clusterloom.errors import SpecError
from clusterloom.export.naming import topology_names
from clusterloom.fabric import design_fabric
from clusterloom.fabric.topology import Role
from clusterloom.growth.drained import (
    LinkTable,
    _up_down,
    capacity_note,
    link_table,
    live_after_steps,
    pair_cut_clos,
    pair_cut_maxflow,
    pod_cut_clos,
    with_drain_checks,
)
from clusterloom.pipeline import Design, run_design
from clusterloom.spec import ClusterSpec, parse_spec
from helpers import build_spec, switch_entry


def _small(accelerators: int, cages: int = 16, tiers: int | str = 2, **kw: Any) -> ClusterSpec:
    return build_spec(
        accelerators=accelerators,
        accelerators_per_node=kw.pop("apn", 4),
        port_speed_gbps=100,
        switch="sw",
        tiers=tiers,
        catalog_switches={"sw": switch_entry(cages, 100)},
        **kw,
    )


def _uplinks(table: LinkTable, leaf: int) -> np.ndarray:
    return np.flatnonzero((table.lo == leaf) & (table.role[table.hi] == int(Role.SPINE)))


def _plan(*steps: tuple[str, list[str]]) -> ChangePlan:
    return ChangePlan(
        "p",
        "a",
        "b",
        tuple(Step(i + 1, a, tuple(o), "test") for i, (a, o) in enumerate(steps)),  # type: ignore[arg-type]
    )


def _names(table: LinkTable, rows: np.ndarray) -> list[str]:
    inverse = {}
    for name, i in table.index.items():
        inverse.setdefault(i, name)
    return [inverse[int(r)] for r in rows]


@pytest.mark.parametrize("k", [0, 1, 3, 4, 8])
def test_k_of_a_leafs_u_uplinks_drained_leave_u_minus_k_over_u(k: int) -> None:
    spec = _small(64)
    fd = design_fabric(spec, compare=False)
    assert fd.plan.tiers == 2
    table = link_table((fd,), (fd,), spec.resolved_catalog())
    leaves = sorted({int(v) for v in table.lo if table.role[v] == int(Role.LEAF)})
    up = _uplinks(table, leaves[0])
    u = len(up)
    assert u == 8 and len(leaves) >= 2
    drained = _names(table, up[:k])
    plan, findings = with_drain_checks(_plan(("drain", drained)), (fd,), (fd,), spec)
    c = plan.steps[0].checks
    assert c["backend:leaf-uplinks-left"] == pytest.approx((u - k) / u, abs=1e-4)
    assert c["backend:p0:leaf-pair-cut-left"] == pytest.approx((u - k) / u, abs=1e-4)
    assert c["backend:leaf-uplinks-least"] == table.nodes[leaves[0]]
    assert c["backend:leaves-below"] == (1 if (u - k) / u < 0.5 else 0)
    below = int(((table.hi == leaves[0]) & (table.role[table.lo] == int(Role.HOST))).sum())
    assert below == u  # 16 ports at 1:1: 8 hosts under, 8 uplinks
    assert c["backend:hosts-cut"] == (0 if k < u else below)
    warned = [f for f in findings.get("backend", []) if f.code == "drain-capacity"]
    assert bool(warned) == ((u - k) / u < 0.5)
    if k == u:
        assert [f.code for f in findings.get("backend", []) if f.severity.value == "error"] == [
            "drain-host-cut"
        ]


def test_the_threshold_is_the_specs_and_bad_values_name_the_field() -> None:
    doc = yaml.safe_load(yaml.safe_dump(_small(64).model_dump(mode="json", exclude_none=True)))
    fd = design_fabric(_small(64), compare=False)
    table = link_table((fd,), (fd,), _small(64).resolved_catalog())
    leaf = min(int(v) for v in table.lo if table.role[v] == int(Role.LEAF))
    plan = _plan(("drain", _names(table, _uplinks(table, leaf)[:2])))  # 6 of 8 left: 75%
    for floor, warned in ((0.5, False), (0.8, True)):
        doc["growth"] = {"min_live_uplinks": floor}
        _, found = with_drain_checks(plan, (fd,), (fd,), parse_spec(yaml.safe_dump(doc)))
        assert any(f.code == "drain-capacity" for f in found.get("backend", [])) == warned
    doc["growth"] = {"min_live_uplinks": 1.5}
    with pytest.raises(SpecError) as exc:
        parse_spec(yaml.safe_dump(doc))
    assert "growth.min_live_uplinks" in str(exc.value)


def _plane0(table: LinkTable) -> tuple[np.ndarray, np.ndarray]:
    sel = (table.role[table.lo] != int(Role.HOST)) & (table.plane == 0)
    return sel, np.unique(table.lo[sel & (table.role[table.lo] == int(Role.LEAF))])


@settings(max_examples=25, deadline=None, derandomize=True)
@given(
    st.sampled_from([32, 48, 64, 96]),
    st.sampled_from([8, 12, 16, 32]),
    st.sampled_from([1, 2]),
    st.sampled_from([2, 3]),
    st.floats(0.0, 1.0),
    st.integers(0, 2**16),
)
def test_the_clos_closed_form_is_the_up_down_max_flow(
    accelerators: int, cages: int, oversub: int, tiers: int, share: float, seed: int
) -> None:
    """On generated 2- and 3-tier fabrics and random drained sets of switch links (leaf-spine
    and spine-core), the closed form equals the least pair max-flow (networkx) on the
    up-then-down graph."""
    try:
        spec = _small(accelerators, cages, tiers=tiers, leaf_oversubscription=oversub)
        fd = design_fabric(spec, compare=False)
    except SpecError:  # no such fabric of that many tiers
        assume(False)
    table = link_table((fd,), (fd,), spec.resolved_catalog())
    sel, leaves = _plane0(table)
    assume(len(leaves) <= 24)  # every pair's max-flow stays quick
    rng = random.Random(seed)
    drained = [int(r) for r in np.flatnonzero(sel) if rng.random() < share]
    live = table.base.copy()
    live[drained] = False
    closed = pair_cut_clos(table, live, sel, leaves)
    assert closed is not None
    assert closed == pytest.approx(pair_cut_maxflow(table, live, sel, leaves), abs=1e-9)
    assert 0.0 <= closed <= 1.0
    assert closed == 1.0 or drained
    pods = pod_cut_clos(table, live, sel, leaves)
    want = _pod_maxflow(table, live, sel, leaves)  # None: one pod (always on 2 tiers)
    assert pods == (None if want is None else pytest.approx(want, abs=1e-9))
    assert tiers == 3 or pods is None


def _pod_maxflow(
    table: LinkTable, live: np.ndarray, sel: np.ndarray, leaves: np.ndarray
) -> float | None:
    """The least over pairs of pods (leaves under the same spines) of the max-flow from all
    leaves of one to all of the other, live over installed (networkx, super source and sink)."""
    import networkx as nx

    under: dict[frozenset[int], list[int]] = {}
    for a in leaves.tolist():
        under.setdefault(frozenset(table.hi[sel & (table.lo == a)].tolist()), []).append(a)
    pods = list(under.values())
    if len(pods) < 2:
        return None
    worst = 1.0
    for i, p in enumerate(pods):
        for q in pods[i + 1 :]:
            flow = []
            for on in (live, table.base):
                g = _up_down(table, sel & on)
                for a in p:
                    g.add_edge("s", (a, 0))
                for b in q:
                    g.add_edge((b, 1), "t")
                flow.append(nx.maximum_flow_value(g, "s", "t"))
            worst = min(worst, flow[0] / flow[1])
    return worst


@settings(max_examples=4, deadline=None, derandomize=True)
@given(st.integers(0, 2**16), st.floats(0.0, 0.6))
def test_a_3_tier_pair_cut_never_rises_when_more_links_are_drained(seed: int, share: float) -> None:
    """3 tiers (max-flow): draining a superset never leaves more, and a drain that takes
    every uplink of one leaf leaves nothing."""
    spec = _small(64, 8, tiers=3)
    fd = design_fabric(spec, compare=False)
    assert fd.plan.tiers == 3
    table = link_table((fd,), (fd,), spec.resolved_catalog())
    sel, leaves = _plane0(table)
    rng = random.Random(seed)
    rows = np.flatnonzero(sel)
    some = [int(r) for r in rows if rng.random() < share]
    more = some + [int(r) for r in rows if rng.random() < share / 2]
    cuts = []
    for gone in (some, more):
        live = table.base.copy()
        live[gone] = False
        cuts.append(pair_cut_maxflow(table, live, sel, leaves))
    assert cuts[1] <= cuts[0] + 1e-9
    live = table.base & ~(table.lo == leaves[0])
    assert pair_cut_maxflow(table, live, sel, leaves) == 0.0


def test_a_plane_that_is_no_clos_has_no_closed_form() -> None:
    """A leaf linked to two spines of one class (joined through a core) breaks the split by
    class: the closed form says None and the max-flow is used."""
    spec = _small(64, 8, tiers=3)
    fd = design_fabric(spec, compare=False)
    table = link_table((fd,), (fd,), spec.resolved_catalog())
    sel, leaves = _plane0(table)
    assert pair_cut_clos(table, table.base, sel, leaves) == 1.0
    up = np.flatnonzero(sel & (table.lo == leaves[0]))
    spines = np.unique(table.hi[up])
    core = table.hi[np.flatnonzero(sel & (table.lo == spines[0]))[0]]
    other = next(
        int(s)
        for s in np.unique(table.lo[sel & (table.hi == core)])
        if s not in set(spines.tolist())
    )
    hi = table.hi.copy()
    # leaf 0's uplink to its second spine lands on a spine of another pod in its first spine's
    # class: two spines of one class
    hi[up[table.hi[up] == spines[1]][0]] = other
    bent = dataclasses.replace(table, hi=hi)
    assert pair_cut_clos(bent, bent.base, sel, leaves) is None


def test_new_links_carry_nothing_until_the_restore() -> None:
    spec = _small(64)
    small = design_fabric(_small(32), compare=False)
    fd = design_fabric(spec, compare=False)
    table = link_table((small,), (fd,), spec.resolved_catalog())
    new = _names(table, np.flatnonzero(~table.base))
    states = list(live_after_steps(table, _plan(("pull", new), ("restore", [])).steps))
    assert not states[0][~table.base].any() and states[1][~table.base].all()


@pytest.fixture(scope="module")
def hgx_step() -> tuple[Design, Design]:
    before = run_design(_hgx(1024), compare=False)
    return before, run_design(_hgx(1280), compare=False, installed=installed_of(before))


@pytest.mark.slow
def test_every_step_of_the_1k_to_1_25k_plan_is_checked(hgx_step: tuple[Design, Design]) -> None:
    """Each step's least leaf uplink share, computed again here from the plan's drain and
    remove names alone (a leaf-spine link name starts with its leaf), and what follows: only
    the wave of the rack move leaves 8 backend leaves no uplink, and their 512 accelerators no
    path, until its restore (forced by the move)."""
    before, grown = hgx_step
    g = grown.growth
    assert g is not None
    t = before.fabric("backend").topology
    nm = topology_names(t, grown.spec.resolved_catalog())
    leaf = np.flatnonzero(t.node_role[t.link_src] == int(Role.LEAF))
    src, dst = t.link_src[leaf], t.link_dst[leaf]
    lower = nm.device(src)
    full = lower + ":" + nm.interface(src, t.link_src_port[leaf])
    full = full + "~" + nm.device(dst) + ":" + nm.interface(dst, t.link_dst_port[leaf])
    uplink_of = {str(n): str(d) for n, d in zip(full, lower, strict=True)}
    up = {d: list(uplink_of.values()).count(d) for d in set(uplink_of.values())}
    out: set[str] = set()
    for s in g.plan.steps:
        if s.action in ("drain", "remove"):
            out |= set(s.objects)
        if s.action == "restore":
            out = set()
        gone: dict[str, int] = {}
        for name in out & set(uplink_of):
            gone[uplink_of[name]] = gone.get(uplink_of[name], 0) + 1
        least = min(1 - gone.get(leaf, 0) / n for leaf, n in up.items())
        assert s.checks["backend:leaf-uplinks-left"] == pytest.approx(least, abs=1e-4)
        assert {"frontend:hosts-cut", "backend:p0:leaf-pair-cut-left"} <= set(s.checks)
    # the plan is in waves (growth.waves): wave 1 re-patches leaves 8-15 down to 50%; wave 2,
    # the move of the rack of leaves 0-7, drains all their links at once: before the waves the
    # one drain step (3) cut 512 accelerators as an error; now only the forced move does, as a
    # warning naming its steps
    first, drain = (s for s in g.plan.steps if s.action == "drain")
    assert first.checks["backend:leaves-below"] == 0 and first.checks["backend:hosts-cut"] == 0
    assert drain.checks["backend:leaves-below"] == 8 and drain.checks["backend:hosts-cut"] == 512
    assert g.plan.steps[-1].checks["backend:hosts-cut"] == 0
    assert g.plan.steps[-1].checks["backend:leaf-uplinks-left"] == 1.0
    drains = [f for f in grown.fabric("backend").findings if f.code.startswith("drain-")]
    assert [f.code for f in drains] == ["drain-forced"]  # one, a warning
    cut = drains[0]
    assert cut.message.startswith("steps 7 (drain), 8 (remove), 9 (move-rack), 10 (pull), 11 ")
    assert "step 7: 8 backend leaves" in cut.message and "512 hosts" in cut.message
    assert not [f for f in grown.fabric("frontend").findings if f.code.startswith("drain-")]
    assert "backend: leaf uplinks 0% left" in capacity_note(drain.checks)
    assert from_json(to_json(g.plan)) == g.plan  # the figures survive changes.jsonl


@pytest.mark.slow
def test_the_checks_leave_the_order_of_work_as_it_was(hgx_step: tuple[Design, Design]) -> None:
    before, grown = hgx_step
    g = grown.growth
    assert g is not None
    bare = ChangePlan(
        g.plan.id,
        g.plan.baseline,
        g.plan.target,
        tuple(
            Step(s.order, s.action, s.objects, s.reason, s.drain, s.live_links)
            for s in g.plan.steps
        ),
    )
    again, _ = with_drain_checks(bare, before.fabrics, grown.fabrics, grown.spec)
    key = [(s.order, s.action, s.objects, s.drain, s.live_links) for s in g.plan.steps]
    assert [(s.order, s.action, s.objects, s.drain, s.live_links) for s in again.steps] == key
    assert [s.checks for s in again.steps] == [
        {k: v for k, v in s.checks.items() if ":" in k} for s in g.plan.steps
    ]


def test_a_step_naming_a_link_neither_design_has_is_refused() -> None:
    spec = _small(32)
    fd = design_fabric(spec, compare=False)
    bad = _plan(("drain", ["node00000:gpu0p0~be-p0-leaf9999:swp1"]))
    with pytest.raises(ValueError, match="step 1: node00000:gpu0p0~be-p0-leaf9999:swp1"):
        with_drain_checks(bad, (fd,), (fd,), spec)
