"""Bill of materials and options compared: counts against closed forms, totals against lines."""

from __future__ import annotations

import math

import pytest

from clusterloom.examples import example_text
from clusterloom.fabric import bill_of_materials, compare_options, plan_fabric
from clusterloom.spec import parse_spec


def test_bom_counts_match_the_plan_on_every_example() -> None:
    for name in ("hgx-1k-roce", "rail-16k", "nvl72-64k", "mrc-131k"):
        spec = parse_spec(example_text(name))
        catalog = spec.resolved_catalog()
        plan = plan_fabric(spec)
        bom = bill_of_materials(plan, catalog)
        assert bom.switches == plan.switches_per_plane * plan.planes
        assert bom.links == sum(plan.links_per_tier) * plan.planes
        optical = sum(
            n * plan.planes
            for n, m in zip(plan.links_per_tier, plan.media, strict=True)
            if catalog.media[m].optical
        )
        assert bom.transceivers == 2 * optical
        assert bom.fibers == sum(
            n * plan.planes * catalog.media[m].fibers
            for n, m in zip(plan.links_per_tier, plan.media, strict=True)
            if catalog.media[m].optical
        )
        assert bom.power_w == pytest.approx(sum(bom.power_by_tier().values()))
        assert bom.cost_usd == pytest.approx(sum(line.cost_usd for line in bom.lines))


def test_hgx_backend_power_by_hand() -> None:
    """16 leaves + 8 spines of SN5600 (1150 W); 1024 AOC host links (2 x 8 W); 1024 DR4 links
    (2 x 9 W)."""
    spec = parse_spec(example_text("hgx-1k-roce"))
    bom = bill_of_materials(plan_fabric(spec), spec.resolved_catalog())
    assert bom.power_w == pytest.approx(24 * 1150 + 1024 * 16 + 1024 * 18)
    cages = dict(bom.cages_per_tier)
    # 64 downlinks at 400G on 800G cages = 32 cages per leaf, 16 leaves
    assert cages["backend.host_leaf.leaf"] == 32 * 16
    assert cages["backend.leaf_spine.spine"] == math.ceil(128 / 2) * 8


def test_options_put_the_chosen_design_first_and_price_alternatives() -> None:
    spec = parse_spec(example_text("mrc-131k"))
    plan = plan_fabric(spec)
    options = compare_options(spec, "backend", plan)
    assert options[0].chosen and options[0].tiers == 2 and options[0].planes == 8
    assert sum(o.chosen for o in options) == 1
    feasible = [o for o in options if not o.infeasible]
    by_label = {o.label: o for o in feasible}
    # re-splitting 800G per GPU into fewer, faster planes needs a third tier at 131k GPUs
    assert "2 tiers, 2 x 400G" not in by_label
    assert by_label["3 tiers, 2 x 400G"].switches > options[0].switches
    # every non-blocking split of the same host bandwidth gives each GPU its 800G
    for o in feasible:
        if "NIC ports" not in o.label:
            assert o.bisection_per_host_gbps == pytest.approx(800)
    # network fungibility: k of 8 ports on scale-out gives k x 100G and costs ~k/8 of the fabric
    for k in (1, 2, 4):
        o = by_label[f"{k} of 8 NIC ports scale-out"]
        assert o.bisection_per_host_gbps == pytest.approx(100 * k)
        assert o.switches == options[0].switches * k // 8
    infeasible = [o for o in options if o.infeasible]
    assert all("reach at most" in o.infeasible for o in infeasible)
