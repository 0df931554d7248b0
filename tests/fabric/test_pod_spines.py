"""Aggregation switches per pod (``pod_spines``) set in the spec: closed forms of the spine and
core layers that follow from it, and refusals naming the field and the numbers."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.errors import SpecError
from clusterloom.fabric import design_fabric
from clusterloom.fabric.sizing import FabricPlan, plan_fabric
from clusterloom.fabric.topology import Role
from clusterloom.spec import parse_spec
from helpers import spec_dict, switch_entry


def _doc(hosts: int, radix: int, **backend: Any) -> dict[str, Any]:
    doc = spec_dict(
        accelerators=hosts,
        accelerators_per_node=1,
        port_speed_gbps=100,
        switch="kport",
        family="fat-tree",
        catalog_switches={"kport": switch_entry(radix, 100)},
    )
    doc["fabrics"]["backend"].update(backend)
    return doc


def _plan(hosts: int, radix: int, **backend: Any) -> FabricPlan:
    return plan_fabric(parse_spec(yaml.safe_dump(_doc(hosts, radix, **backend))))


def test_default_is_the_fewest_that_carry_the_uplinks() -> None:
    # k = 16 fat tree, pods of 4 leaves (8 down, 8 up each): 32 uplinks need 4 spines of 8 down
    plan = _plan(16 * 4 * 8, 16, tiers=3, pod_leaves=4)
    assert plan.spines_per_pod == 4
    assert plan.tier("spine").down == 4 * 8 // 4


@pytest.mark.parametrize("asked", [4, 8])
def test_asked_count_sets_the_spine_and_core_layers(asked: int) -> None:
    # 16 pods of 4 leaves (u1 = 8); S spines per pod take 4 x 8 / S downlinks each and as many
    # uplinks (1:1); core group j serves spine j of every pod: 16 pods x u2 over 16-port cores
    plan = _plan(16 * 4 * 8, 16, tiers=3, pod_leaves=4, pod_spines=asked)
    spine, core = plan.tier("spine"), plan.tier("core")
    u2 = 32 // asked
    assert plan.spines_per_pod == asked and plan.pods == 16
    assert (spine.down, spine.up, spine.count) == (32 // asked, u2, 16 * asked)
    assert plan.cores_per_group == 16 * u2 // 16
    assert core.count == asked * plan.cores_per_group and core.down == 16 * u2 // (16 * u2 // 16)
    assert plan.ecmp_paths() == asked * plan.cores_per_group


def test_asked_count_is_generated_and_striped_evenly() -> None:
    spec = parse_spec(yaml.safe_dump(_doc(16 * 4 * 8, 16, tiers=3, pod_leaves=4, pod_spines=8)))
    design = design_fabric(spec, "backend")
    assert design.plan.spines_per_pod == 8
    assert [f.code for f in design.findings if f.severity.name == "ERROR"] == []
    t = design.topology
    assert int((t.node_role == Role.SPINE).sum()) == 16 * 8  # spines of 16 pods


@given(
    up=st.sampled_from([4, 6, 8, 12]),
    pod_leaves=st.integers(1, 8),
    asked=st.integers(1, 16),
)
@settings(max_examples=60, deadline=None)
def test_accepted_iff_it_divides_the_uplinks_and_carries_them(
    up: int, pod_leaves: int, asked: int
) -> None:
    # a 2 x up port switch at 1:1: up down and up up per leaf and per spine
    radix = 2 * up
    doc = _doc(pod_leaves * up * 3, radix, tiers=3, pod_leaves=pod_leaves, pod_spines=asked)
    carries = asked * up >= pod_leaves * up and asked >= 2 and up % asked == 0
    try:
        plan = plan_fabric(parse_spec(yaml.safe_dump(doc)))
    except SpecError as exc:
        assert not carries or any(p.where != "fabrics.backend.pod_spines" for p in exc.problems)
        return
    assert carries
    assert plan.spines_per_pod == asked
    assert plan.tier("spine").down * asked == pod_leaves * up


def test_too_few_names_the_field_and_numbers() -> None:
    with pytest.raises(SpecError) as exc:
        _plan(16 * 4 * 8, 16, tiers=3, pod_leaves=4, pod_spines=2)
    (problem,) = exc.value.problems
    assert problem.where == "fabrics.backend.pod_spines"
    assert "2 x 8 spine downlinks carry fewer than the 4 leaves x 8 uplinks = 32" in problem.message
    assert "use one of 4, 8" in problem.message


def test_uneven_stripe_is_refused() -> None:
    with pytest.raises(SpecError, match="8 uplinks per leaf do not stripe evenly over 6"):
        _plan(16 * 4 * 8, 16, tiers=3, pod_leaves=4, pod_spines=6)


def test_two_tier_fabric_refuses_it() -> None:
    with pytest.raises(SpecError, match="sizes to 2 tiers"):
        _plan(64, 16, pod_spines=4)


def test_cli_exit_2_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(_doc(16 * 4 * 8, 16, tiers=3, pod_leaves=4, pod_spines=3)))
    result = CliRunner().invoke(app, ["fabric", str(path)])
    assert result.exit_code == 2
    assert "fabrics.backend.pod_spines" in result.stderr
    assert "Traceback" not in result.output
    zero = _doc(64, 16, pod_spines=0)
    path.write_text(yaml.safe_dump(zero))
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2 and "pod_spines" in result.stderr


def test_design_end_to_end_with_eight_aggregation_switches_per_pod(tmp_path: Path) -> None:
    """128 GPUs, 4 per node, on 16-port 100G switches: leaves of 2 nodes (8 down, 8 up) in the
    compute rack they serve, pods of 4 leaves, 8 aggregation switches per pod (the fewest
    would be 4), one core per core group."""
    doc = _doc(128, 16, tiers=3, pod_leaves=4, pod_spines=8, leaf_placement="in-rack")
    doc["compute"]["accelerators_per_node"] = 4
    doc["compute"]["scale_up"] = {"domain_size": 4}
    template = {"rows": 2, "positions_per_row": 16, "pitch_m": 0.6, "origin_m": [1.0, 2.0]}
    hall = {"name": "h1", "width_m": 40, "depth_m": 20, "template": template}
    doc["site"] = {"buildings": [{"name": "b1", "halls": [hall]}], "solver": {"hall_effort": 1}}
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["design", str(path), "-o", str(out)])
    assert result.exit_code == 0, result.output
    with (out / "netbox" / "devices.csv").open() as f:
        roles = Counter(r["role"] for r in csv.DictReader(f))
    # 32 nodes / 2 per leaf; 4 pods x 8; 8 core groups x 1 (4 pods x 4 uplinks on 16 ports)
    assert (roles["leaf-switch"], roles["spine-switch"], roles["core-switch"]) == (16, 32, 8)
    with (out / "placement" / "racks.csv").open() as f:
        racks = Counter(r["role"] for r in csv.DictReader(f))
    assert racks == {"compute": 8, "spine": 4, "core": 1}  # a spine rack per pod, no leaf rack
    with (out / "cabling" / "cut_sheet.csv").open() as f:
        rows = list(csv.DictReader(f))
    up = Counter((r["a_device"], r["b_device"]) for r in rows if r["tier"] == "2")
    assert len(up) == 16 * 8 and set(up.values()) == {1}  # each leaf once to each of 8 spines
    assert sum(1 for r in rows if r["tier"] == "3") == 32 * 4
