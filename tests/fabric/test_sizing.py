"""Fabric sizing against closed forms and public reference designs."""

from __future__ import annotations

import numpy as np
import pytest

from clusterloom.errors import SpecError
from clusterloom.fabric.sizing import FabricPlan, plan_fabric
from clusterloom.fabric.topology import Role, generate
from helpers import build_plan, build_spec, kport_plan

GBPS = 1_000_000_000


def counts(plan: FabricPlan) -> tuple[int, ...]:
    return tuple(t.count for t in plan.switch_tiers)


def assert_radix_respected(plan: FabricPlan) -> None:
    for tier in plan.switch_tiers:
        assert tier.ports_used <= tier.radix, tier


# --- NVIDIA DGX SuperPOD (B200, InfiniBand NDR) ---------------------------------------------
#
# Scalable unit (SU): 32 DGX nodes x 8 GPUs, one 400G NDR port per GPU, rail-optimized on
# QM9700 (64 x 400G). One leaf per rail per SU: 8 leaves per SU, 32 down + 32 up. Two tiers up
# to 8 SUs (64 leaves x 32 uplinks = 2048 = 32 spines x 64 ports); beyond that, pods of 4 SUs
# (32 leaves = a spine's 32 downlinks) joined by a core tier.

SUPERPOD = [
    # SUs, leaves, spines, cores (None: two tiers)
    (2, 16, 8, None),
    (4, 32, 16, None),
    (8, 64, 32, None),
    (16, 128, 128, 64),
    (32, 256, 256, 128),
    (64, 512, 512, 256),
]


def superpod_plan(sus: int, **kwargs: object) -> FabricPlan:
    return build_plan(
        accelerators=sus * 32 * 8,
        accelerators_per_node=8,
        ports_per_accelerator=1,
        port_speed_gbps=400,
        switch="qm9700",
        family="rail-optimized",
        scalable_unit_nodes=32,
        **kwargs,
    )


@pytest.mark.parametrize(("sus", "leaves", "spines", "cores"), SUPERPOD)
def test_dgx_superpod_reference(sus: int, leaves: int, spines: int, cores: int | None) -> None:
    plan = superpod_plan(sus)  # tiers: auto
    gpus = sus * 32 * 8
    assert plan.hosts == gpus
    assert plan.planes == 1
    assert plan.su_nodes == 32 and plan.sus == sus
    assert plan.leaves_per_su == 8 and plan.leaves_per_rail == 1
    expected_tiers = 2 if cores is None else 3
    assert plan.tiers == expected_tiers
    expected = (leaves, spines) if cores is None else (leaves, spines, cores)
    assert counts(plan) == expected
    assert [t.role for t in plan.switch_tiers] == ["leaf", "spine", "core"][:expected_tiers]
    # non-blocking: one cable per GPU in every link tier
    assert plan.links_per_tier == (gpus,) * expected_tiers
    assert plan.tier("leaf").down == plan.tier("leaf").up == 32
    assert plan.bisection_bps == plan.full_bisection_bps == gpus * 400 * GBPS // 2
    assert_radix_respected(plan)


def test_dgx_superpod_three_tier_pods_are_four_scalable_units() -> None:
    plan = superpod_plan(32)
    assert plan.pod_leaves == 32  # 4 SUs of 8 leaves
    assert plan.pods == 8
    assert plan.spines_per_pod == 32
    assert plan.cores_per_group == 4


# --- classic k-ary fat tree (Al-Fares et al.) -------------------------------------------------


@pytest.mark.parametrize("k", [4, 8, 16, 48])
def test_k_ary_fat_tree(k: int) -> None:
    plan = kport_plan(k**3 // 4, k, family="fat-tree")
    assert plan.tiers == 3
    assert plan.pods == k
    assert plan.pod_leaves == k // 2  # k/2 edge switches per pod
    assert plan.spines_per_pod == k // 2  # k/2 aggregation switches per pod
    assert plan.cores_per_group == k // 2
    assert plan.leaves == k * k // 2
    assert plan.spines == k * k // 2
    assert plan.cores == k * k // 4
    assert counts(plan) == (k * k // 2, k * k // 2, k * k // 4)
    assert plan.switches_per_plane == 5 * k * k // 4
    for tier in plan.switch_tiers:
        assert tier.ports_used == k  # every port of every switch used
    assert plan.links_per_tier == (k**3 // 4,) * 3
    assert plan.ecmp_paths() == (k // 2) ** 2


# --- OpenAI MRC: ~131K GPUs on two tiers of 8 x 100G planes -----------------------------------


def test_131k_gpus_fit_two_tiers_with_eight_100g_planes() -> None:
    plan = build_plan(
        accelerators=131_072,
        accelerators_per_node=8,
        ports_per_accelerator=8,
        port_speed_gbps=100,
        switch="tomahawk5-64x800g",
    )
    assert plan.tier("leaf").radix == 512
    assert plan.planes == 8
    assert plan.ports_per_host == 1
    assert plan.tiers == 2
    assert plan.leaves == 512
    assert plan.spines == 256
    assert counts(plan) == (512, 256)
    assert plan.links_per_tier == (131_072, 131_072)
    assert plan.ecmp_paths() == 256
    assert_radix_respected(plan)


def test_131k_gpus_on_one_800g_port_do_not_fit_three_tiers() -> None:
    """The same bandwidth as one 800G port per GPU (radix 64): 3 tiers reach 64^3/4 = 65,536."""
    with pytest.raises(SpecError) as info:
        build_plan(
            accelerators=131_072,
            accelerators_per_node=8,
            ports_per_accelerator=1,
            port_speed_gbps=800,
            switch="tomahawk5-64x800g",
        )
    assert "65536" in str(info.value)


# --- tier limits ------------------------------------------------------------------------------


def test_forcing_two_tiers_on_a_fabric_too_big_names_the_tiers_field() -> None:
    with pytest.raises(SpecError) as info:
        superpod_plan(16, tiers=2)
    (problem,) = info.value.problems
    assert problem.where == "fabrics.backend.tiers"
    assert "tiers: 3" in problem.message


def test_largest_two_tier_superpod_accepts_forced_two_tiers() -> None:
    assert superpod_plan(8, tiers=2).tiers == 2


def test_forcing_three_tiers_on_a_small_fabric_is_allowed() -> None:
    plan = superpod_plan(2, tiers=3)
    assert plan.tiers == 3
    assert plan.pods == 1
    assert_radix_respected(plan)


@pytest.mark.parametrize("tiers", ["auto", 3])
def test_fabric_too_big_for_three_tiers(tiers: str | int) -> None:
    # QM9700 at 400G: at most 64 pods x 32 leaves x 32 GPUs = 65,536 GPUs per plane
    with pytest.raises(SpecError) as info:
        build_plan(accelerators=131_072, switch="qm9700", tiers=tiers)
    (problem,) = info.value.problems
    assert problem.where.startswith("fabrics.backend")
    if tiers == 3:
        assert problem.where == "fabrics.backend.tiers"
    assert "65536" in problem.message
    assert "more planes" in problem.message and "larger switch" in problem.message


def test_three_tier_limit_is_exact() -> None:
    assert build_plan(accelerators=65_536, switch="qm9700").tiers == 3
    with pytest.raises(SpecError):
        build_plan(accelerators=65_536 + 256, switch="qm9700")


def test_more_planes_make_a_too_big_fabric_fit() -> None:
    """The remedy the error suggests works: split the GPU's bandwidth over two planes."""
    plan = build_plan(
        accelerators=131_072, ports_per_accelerator=2, port_speed_gbps=200, switch="qm9700"
    )
    assert plan.planes == 2 and plan.tiers == 3


# --- oversubscription -------------------------------------------------------------------------


@pytest.mark.parametrize("ratio", [3, "3:1"])
def test_leaf_oversubscription_three_to_one(ratio: object) -> None:
    plan = kport_plan(48 * 16, 64, family="fat-tree", leaf_oversubscription=ratio)
    leaf = plan.tier("leaf")
    assert (leaf.down, leaf.up) == (48, 16)
    assert plan.leaves == 16
    assert plan.full_bisection_bps == 48 * 16 * 100 * GBPS // 2
    assert plan.bisection_bps * 3 == plan.full_bisection_bps
    assert_radix_respected(plan)


def test_leaf_oversubscription_on_rail_optimized_fabric() -> None:
    plan = build_plan(
        accelerators=48 * 8 * 4,
        accelerators_per_node=8,
        switch="qm9700",
        leaf_oversubscription="3:1",
    )
    leaf = plan.tier("leaf")
    assert plan.su_nodes == 48
    assert (leaf.down, leaf.up) == (48, 16)
    assert plan.bisection_bps * 3 == plan.full_bisection_bps


def test_spine_oversubscription_three_to_one() -> None:
    # 16-port switches: leaves 8 down / 8 up; spines 12 down / 4 up, so pods of 12 leaves
    # (96 hosts); 16 whole pods reach the 16-port cores' limit.
    plan = kport_plan(16 * 96, 16, family="fat-tree", spine_oversubscription=3)
    spine = plan.tier("spine")
    assert plan.tiers == 3
    assert (spine.down, spine.up) == (12, 4)
    assert (plan.pod_leaves, plan.pods, plan.spines_per_pod) == (12, 16, 8)
    assert plan.bisection_bps * 3 == plan.full_bisection_bps
    assert_radix_respected(plan)


def test_non_blocking_fabric_has_full_bisection() -> None:
    plan = superpod_plan(4)
    assert plan.bisection_bps == plan.full_bisection_bps


# --- ECMP -------------------------------------------------------------------------------------


@pytest.mark.parametrize("sus", [2, 4, 8])
def test_ecmp_paths_two_tiers_equal_spines(sus: int) -> None:
    plan = superpod_plan(sus)
    assert plan.tiers == 2
    assert plan.ecmp_paths() == plan.spines == plan.spines_per_pod


@pytest.mark.parametrize("sus", [16, 32, 64])
def test_ecmp_paths_three_tiers_cross_pod(sus: int) -> None:
    plan = superpod_plan(sus)
    assert plan.tiers == 3 and plan.pods > 1
    assert plan.ecmp_paths() == plan.spines_per_pod * plan.cores_per_group
    assert plan.ecmp_paths() == 32 * plan.cores_per_group


# --- other invariants -------------------------------------------------------------------------


def test_media_and_latency_per_link_tier() -> None:
    plan = superpod_plan(16)
    assert len(plan.media) == len(plan.latency_ps) == plan.tiers == 3
    assert plan.latency_ps == (150_000, 500_000, 1_500_000)
    catalog = build_spec(accelerators=16).resolved_catalog()
    for name in plan.media:
        assert catalog.media[name].speed_gbps == 400


def test_scalable_unit_larger_than_a_leaf_splits_over_leaves_per_rail() -> None:
    plan = build_plan(accelerators=64 * 8 * 2, switch="qm9700", scalable_unit_nodes=64)
    assert plan.leaves_per_rail == 2
    assert plan.nodes_per_leaf == 32
    assert plan.leaves == 2 * 8 * 2


def test_partial_last_scalable_unit_gets_only_the_leaves_it_needs() -> None:
    """40 nodes in SUs of 32: one full SU (8 rails x 1 leaf) and a partial one of 8 nodes."""
    plan = build_plan(accelerators=40 * 8, switch="qm9700", scalable_unit_nodes=32)
    assert plan.sus == 2
    assert plan.leaves == 8 + 8
    topo = generate(plan)
    leaf_down = np.bincount(topo.link_dst[topo.link_tier == 1], minlength=topo.n_nodes)
    leaves = leaf_down[topo.node_role == Role.LEAF]
    assert sorted(leaves.tolist()) == [8] * 8 + [32] * 8


def test_scalable_unit_not_splitting_over_leaves_per_rail_is_refused() -> None:
    """An SU of 65 nodes needs 3 leaves per rail (a leaf has 32 downlinks); 65 is not 3 x n."""
    with pytest.raises(SpecError) as info:
        build_plan(accelerators=65 * 8, switch="qm9700", scalable_unit_nodes=65)
    assert info.value.problems[0].where == "fabrics.backend.scalable_unit_nodes"


def test_plan_fabric_on_spec_built_twice_is_equal() -> None:
    spec = build_spec(accelerators=16 * 32 * 8, switch="qm9700", scalable_unit_nodes=32)
    assert plan_fabric(spec) == plan_fabric(spec)
