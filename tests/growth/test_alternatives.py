"""The shapes that avoid a growth step's forced re-patching (fabric/alternatives.py) and the
spec option that builds one of them from the start (``growth.plan_for_accelerators``).

hgx-1k-roce's backend, 1,024 -> 1,280 GPUs (sn5600 at 128 x 400G, $55,000)::

    built:       16 leaves x 64 up ── 8 spines (128 of 128 ports: full)
    re-patch:    24 leaves          ── 16 spines (96 used): 512 links move
    over-build:  16 leaves          ── 16 spines (64 used) from the start: +8 x $55,000
    reserve:     16 leaves          ── 8 tomahawk6 spines (128 of 256 at 400G): +8 x $35,000
    3rd tier:    one pod of 16 leaves, 16 spines 64 down / 64 up, 16 cores above them
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from growth_strategies import growth_steps
from hypothesis import given, settings
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.errors import SpecError
from clusterloom.examples import example_text
from clusterloom.fabric import design_fabric
from clusterloom.fabric.sizing import plan_fabric
from clusterloom.fabric.stable import installed_links_of, stabilize
from clusterloom.fabric.topology import generate
from clusterloom.spec import ClusterSpec, builtin_catalog, parse_spec
from helpers import build_spec


def hgx(accelerators: int, plan_for: int | None = None, **backend: Any) -> ClusterSpec:
    doc = yaml.safe_load(example_text("hgx-1k-roce"))
    doc["compute"]["accelerators"] = accelerators
    doc["fabrics"]["backend"].update(backend)
    if plan_for is not None:
        doc["growth"] = {"plan_for_accelerators": plan_for}
    return parse_spec(yaml.safe_dump(doc))


@pytest.fixture(scope="module")
def shapes() -> dict[str, Any]:
    old = design_fabric(hgx(1024), compare=False).topology
    fd = design_fabric(
        hgx(1280), compare=False, installed=installed_links_of(old), baseline=hgx(1024)
    )
    return {a.name: a for a in fd.alternatives}


def test_the_step_as_designed_comes_first_with_its_forced_re_patching(
    shapes: dict[str, Any],
) -> None:
    accept = shapes["accept the re-patch"]
    assert list(shapes) == [
        "accept the re-patch",
        "over-build the spine layer",
        "reserve spine ports",
        "a 3rd tier from the start",
        "a 3rd tier now",
    ]
    assert (accept.links_repatched, accept.first_build_usd) == (512, 0.0)
    # 8 leaves and 8 spines more; 256 host links and 8 x 64 uplinks new, 512 re-patched ends
    assert accept.switches_added == 16
    assert accept.links_added == 256 + 512 + 512
    assert accept.tiers == 2 and accept.switch_hops == 3


def test_over_building_the_spine_layer_keeps_every_link_for_8_more_spines(
    shapes: dict[str, Any],
) -> None:
    sn5600 = builtin_catalog().switches["sn5600"].cost_usd
    over = shapes["over-build the spine layer"]
    assert over.links_repatched == 0
    assert over.first_build_usd == 8 * sn5600
    assert over.shape == "16 spines (sn5600, 64 of 128 ports at 400G used)"
    assert over.ask == "growth.plan_for_accelerators: 1280"
    # the step then adds only the 8 leaves and their links; the spines are already there
    assert (over.switches_added, over.links_added) == (8, 256 + 512)
    # the grown fabric is the same either way: the step plus the first build's extra is the
    # step as designed, less nothing (the same switches, links and optics in the end)
    accept = shapes["accept the re-patch"]
    assert over.first_build_usd + over.step_usd == pytest.approx(accept.step_usd)


def test_reserving_spine_ports_takes_the_cheapest_larger_radix_spine(
    shapes: dict[str, Any],
) -> None:
    cat = builtin_catalog().switches
    reserve = shapes["reserve spine ports"]
    assert reserve.links_repatched == 0
    assert "tomahawk6-64x1600g" in reserve.ask  # 64 x 1.6T broken out to 256 x 400G
    assert reserve.shape == "8 spines (tomahawk6-64x1600g, 128 of 256 ports at 400G used)"
    assert reserve.first_build_usd == 8 * (
        cat["tomahawk6-64x1600g"].cost_usd - cat["sn5600"].cost_usd
    )
    assert reserve.first_build_usd < shapes["over-build the spine layer"].first_build_usd
    assert reserve.ecmp_paths == 8 and "8 ECMP paths instead of 16" in reserve.traffic


def test_a_3rd_tier_keeps_the_links_only_when_planned_from_the_start(
    shapes: dict[str, Any],
) -> None:
    start, now = shapes["a 3rd tier from the start"], shapes["a 3rd tier now"]
    assert start.when == "first build" and start.links_repatched == 0
    assert start.tiers == 3 and start.switch_hops == 5
    assert "5 switches leaf to leaf across pods instead of 3" in start.traffic
    # the installed spines use all 128 ports as downlinks: a 3rd tier added now needs half of
    # them as uplinks, so it re-patches more than the step as designed
    assert now.when == "this step" and now.links_repatched > 512
    assert start.first_build_usd > shapes["over-build the spine layer"].first_build_usd


def test_the_finding_offers_only_the_shapes_that_avoid_re_patching() -> None:
    old = design_fabric(hgx(1024), compare=False).topology
    fd = design_fabric(
        hgx(1280), compare=False, installed=installed_links_of(old), baseline=hgx(1024)
    )
    (finding,) = [f for f in fd.findings if f.code == "growth-repatch"]
    assert "shapes that avoid it: over-build the spine layer" in finding.message
    assert "reserve spine ports" in finding.message
    assert "a 3rd tier now" not in finding.message  # it re-patches more, not less


def test_a_design_planned_for_the_growth_then_grows_with_nothing_forced() -> None:
    for fabric in ("backend", "frontend"):
        first = design_fabric(hgx(1024, plan_for=1280), fabric, compare=False)
        assert first.plan.spines >= design_fabric(hgx(1024), fabric, compare=False).plan.spines
        grown = design_fabric(
            hgx(1280),
            fabric,
            compare=False,
            installed=installed_links_of(first.topology),
            baseline=hgx(1024, plan_for=1280),
        )
        assert (grown.forced, grown.moves, grown.alternatives) == (0, (), ())
        assert "growth-repatch" not in {f.code for f in grown.findings}
    assert plan_fabric(hgx(1024, plan_for=1280)).spines == 16
    assert plan_fabric(hgx(1024, plan_for=1280)).tier("spine").down == 64


def test_a_plan_below_the_installed_size_is_refused_naming_the_field() -> None:
    with pytest.raises(SpecError) as exc:
        plan_fabric(hgx(1024, plan_for=512))
    (problem,) = exc.value.problems
    assert problem.where == "growth.plan_for_accelerators" and "1,024" in problem.message


def test_a_plan_the_fabric_cannot_reach_is_refused_naming_the_field() -> None:
    with pytest.raises(SpecError) as exc:
        plan_fabric(hgx(1024, plan_for=131072, tiers=2))
    (problem,) = exc.value.problems
    assert problem.where == "growth.plan_for_accelerators"
    assert "cannot be sized for 131,072" in problem.message


def test_the_cli_refuses_a_plan_below_the_spec_with_exit_2_and_one_line(tmp_path: Path) -> None:
    doc = yaml.safe_load(example_text("hgx-1k-roce"))
    doc["growth"] = {"plan_for_accelerators": 512}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    result = CliRunner().invoke(app, ["fabric", str(path)])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        "error: growth.plan_for_accelerators: 512 is below compute.accelerators (1,024); raise "
        "it to the size the next growth steps reach, or remove it"
    ]


@settings(max_examples=40, deadline=None)
@given(growth_steps())
def test_any_fabric_planned_for_its_growth_grows_without_a_forced_move(
    step: tuple[dict[str, Any], int, int],
) -> None:
    kwargs, before, after = step
    apn = kwargs["accelerators_per_node"]
    try:
        first = plan_fabric(build_spec(accelerators=before * apn, **kwargs), plan_for=after * apn)
        grown = plan_fabric(build_spec(accelerators=after * apn, **kwargs))
    except SpecError:
        return  # a shape the sizing refuses
    assert (first.tiers, first.spines_per_pod, first.cores_per_group) == (
        grown.tiers,
        grown.spines_per_pod,
        grown.cores_per_group,
    )
    st = stabilize(generate(grown), installed_links_of(generate(first)))
    assert st.forced == 0 and st.moves == ()
