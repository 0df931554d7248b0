"""Curves from the design stages: zero at zero, the fabric stage's own counts at the designed
sizes (the hgx-1k-roce reference at 1,024 GPUs), the tiers' limits by their closed forms,
cached by content, and a part the designs need that no one supplies refused by name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from capacity_helpers import example_data, plan_from
from clusterloom.capacity.curves import compute_curves, part_of
from clusterloom.capacity.input import PlanInput
from clusterloom.capacity.model import Curves
from clusterloom.errors import SpecError
from clusterloom.examples import example_text
from clusterloom.pipeline import run_design
from clusterloom.spec import parse_spec


def test_shape_and_zero(curves: Curves, plan: PlanInput) -> None:
    assert curves.sizes.tolist() == [0, 256, 512, 1024]
    assert curves.units.shape == (2, 2, 4, len(plan.parts))
    assert np.all(curves.units[:, :, 0] == 0) and np.all(curves.power_kw[:, :, 0] == 0)
    # more accelerators never need fewer parts, less power or fewer positions
    assert np.all(np.diff(curves.units, axis=2) >= 0)
    assert np.all(np.diff(curves.power_kw, axis=2) > 0)
    assert np.all(np.diff(curves.positions, axis=2) > 0)


def test_the_reference_design_at_1024(curves: Curves) -> None:
    """The example template at its own size on 2 tiers is the example's own design: 16 rail
    leaves (2 scalable units of 8) and 8 spines of 128 x 400G, 2,048 DR4 ends."""
    spec = parse_spec(example_text("hgx-1k-roce"))
    design = run_design(spec, compare=False, place=False)
    k = curves.sizes.tolist().index(1024)
    got = dict(zip(curves.parts, curves.units[0, 0, k], strict=True))
    for line in design.bom.lines:
        pid = part_of(line.category, line.item)
        if pid is not None:
            assert got[pid] == sum(
                x.quantity for x in design.bom.lines if part_of(x.category, x.item) == pid
            )
    assert got["switch:sn5600"] == 16 + 8
    # three tiers: twice the sn5600 (spines keep half their ports for the cores above them)
    assert curves.units[0, 1, k, curves.parts.index("switch:sn5600")] == 48


def test_tier_limits_are_the_closed_forms(curves: Curves) -> None:
    """A radix-128 switch: two tiers reach 128^2 / 2 hosts per plane, three 128^3 / 4."""
    assert curves.max_accelerators.tolist() == [[128**2 // 2, 128**3 // 4]] * 2


def test_cached_by_content(plan: PlanInput, curves: Curves, curves_cache: Path) -> None:
    files = sorted(curves_cache.glob("*.json"))
    # the fabric stage alone does not read the floor, but the key holds it: 2 sites x 2
    # choices x 3 sizes
    assert len(files) == 12
    stamps = [f.stat().st_mtime_ns for f in files]
    again = compute_curves(plan, cache=curves_cache)
    assert [f.stat().st_mtime_ns for f in files] == stamps  # read, not designed again
    for name in ("units", "power_kw", "positions", "max_accelerators"):
        assert np.array_equal(getattr(again, name), getattr(curves, name))
    files[0].write_text("{not json")  # a damaged entry is designed again
    assert np.array_equal(compute_curves(plan, cache=curves_cache).units, curves.units)


def test_interpolation_between_sizes(curves: Curves) -> None:
    """parts_at is linear between the designed sizes and exact at them."""
    k = 2
    assert np.array_equal(curves.parts_at(0, 0, 512), curves.units[0, 0, k])
    mid = curves.parts_at(0, 0, 768)
    assert np.allclose(mid, (curves.units[0, 0, 2] + curves.units[0, 0, 3]) / 2)


def test_a_part_nobody_supplies_is_named(curves_cache: Path) -> None:
    data = example_data()
    data["parts"] = [p for p in data["parts"] if p["id"] != "optic:fr4-400g"]
    with pytest.raises(SpecError) as err:
        compute_curves(plan_from(data), cache=curves_cache)
    (problem,) = err.value.problems
    assert problem.where == "parts"
    assert "'optic:fr4-400g' has no supplier" in problem.message
    assert "3-tier" in problem.message


def test_bad_sizes_and_templates(curves_cache: Path) -> None:
    data = example_data()
    data["curves"]["sizes"] = [100]
    with pytest.raises(SpecError, match="multiples of 8"):
        compute_curves(plan_from(data), cache=curves_cache)
    data = example_data()
    data["fabrics"][0]["template"] = "no-such-template"
    with pytest.raises(SpecError, match=r"fabrics\[0\]\.template"):
        compute_curves(plan_from(data), cache=curves_cache)


def test_interpolation_error_at_a_middle_size(plan: PlanInput, curves: Curves) -> None:
    """A real design at 768 (between 512 and 1,024) against the line: each part lies between
    its neighbours' counts, so the line is off by at most that step; inside a scalable-unit
    step it underestimates (768 GPUs already need both units' 16 leaves and 8 spines)."""
    from clusterloom.capacity.curves import design_point, scaled_spec, template_data

    template = template_data(plan.fabrics[0], "fabrics[0]", Path.cwd())
    data = scaled_spec(template, 768, 2, plan.sites[0])
    real, _ = design_point(data, False, None, "test")
    line = curves.parts_at(0, 0, 768)
    lo, hi = curves.units[0, 0, 2], curves.units[0, 0, 3]
    for p, pid in enumerate(curves.parts):
        got = real.parts.get(pid, 0.0)
        assert lo[p] <= got <= hi[p], pid
        assert abs(line[p] - got) <= hi[p] - lo[p], pid
    assert real.parts["switch:sn5600"] == 24 and line[curves.parts.index("switch:sn5600")] == 18
    power = np.interp(768, curves.sizes, curves.power_kw[0, 0])
    assert power == pytest.approx(real.power_kw, rel=0.02)
