"""Placement: known optima, infeasible sites with their reasons, floor checks, determinism,
validators that can fail, properties of random sites and the command line."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.errors import SpecError
from clusterloom.fabric import design_fabric, fabric_names
from clusterloom.findings import Severity
from clusterloom.pipeline import run_design
from clusterloom.placement import Placement, place
from clusterloom.placement.validate import validate_placement
from clusterloom.spec import ClusterSpec, parse_spec
from helpers import MINIMAL_SPEC

runner = CliRunner()


def _hall(**template: object) -> dict[str, object]:
    t = {"rows": 1, "positions_per_row": 3, "pitch_m": 1.0, "origin_m": [0.5, 1.0]}
    t.update(template)
    return {"name": "h1", "width_m": 40, "depth_m": 30, "template": t}


def _spec(hall: dict[str, object], base: str = MINIMAL_SPEC, **site: object) -> ClusterSpec:
    doc = yaml.safe_load(base)
    doc["site"] = {"buildings": [{"name": "b1", "halls": [hall]}], **site}
    return parse_spec(yaml.safe_dump(doc))


def _place(spec: ClusterSpec) -> Placement:
    fabrics = tuple(design_fabric(spec, f, compare=False) for f in fabric_names(spec))
    return place(spec, fabrics)


def test_three_racks_in_a_row_put_the_leaves_in_the_middle() -> None:
    """Two 8-GPU nodes: one compute rack, one rack of 8 leaves, one of 2 spines; 16 host-leaf
    and 16 leaf-spine links. Three positions 1 m apart::

        [ ? ]--1 m--[ ? ]--1 m--[ ? ]

    Leaves in the middle: 16 x 1 + 16 x 1 = 32 link-metres; anything else puts one bundle
    2 m apart: 16 x 1 + 16 x 2 = 48. The optimum is 32 and proven (bound 32)."""
    p = _place(_spec(_hall()))
    roles = {p.demand.rack_role[r]: p.rack_names[r] for r in range(p.n_racks)}
    assert roles["leaf"] == "b1-h1-r01-p02"
    assert {roles["compute"], roles["spine"]} == {"b1-h1-r01-p01", "b1-h1-r01-p03"}
    (solve,) = p.solves
    assert solve.status == "optimal"
    assert solve.objective == pytest.approx(32.0)
    assert solve.bound == pytest.approx(32.0)
    assert p.gap == 0.0
    assert not [f for f in p.findings if f.severity is Severity.ERROR]


def test_blocked_middle_position_costs_the_detour() -> None:
    """Four positions, the second blocked::

        [ a ] [ X ] [ b ] [ c ]     x = 0.5, (1.5), 2.5, 3.5

    The leaf rack must be next to both others: at x = 2.5 with the compute rack and the spine
    rack on 0.5 and 3.5 one bundle runs 2 m, the other 1 m: 16 x 2 + 16 x 1 = 48."""
    hall = _hall(positions_per_row=4)
    hall["blocked"] = ["r01/p02"]
    p = _place(_spec(hall))
    roles = {p.demand.rack_role[r]: p.rack_names[r] for r in range(p.n_racks)}
    assert roles["leaf"] == "b1-h1-r01-p03"
    assert p.solves[0].objective == pytest.approx(48.0)
    assert p.solves[0].status == "optimal"


def test_two_halls_keep_the_links_inside_one_hall() -> None:
    """Two halls, each big enough for all three racks: every link stays in one hall (the
    campus model pays door-to-door distance plus the trunk penalty for each that leaves)."""
    doc = yaml.safe_load(MINIMAL_SPEC)
    h2 = {**_hall(), "name": "h2", "x_m": 100}
    doc["site"] = {"buildings": [{"name": "b1", "halls": [_hall(), h2]}]}
    p = _place(parse_spec(yaml.safe_dump(doc)))
    assert len(set(p.floor.pos_hall[p.rack_position].tolist())) == 1
    assert all(x.inter_hall == 0 for x in p.lengths)
    assert p.solves[0].name == "campus" and p.solves[0].objective == 0


def test_power_shortfall_names_the_hall_and_the_numbers() -> None:
    hall = _hall()
    hall["power_kw"] = 30  # one hgx-4 rack alone draws 2 of 4 servers x 41 kW / 4 = 20.5 kW
    hall["template"]["position_power_kw"] = 10  # type: ignore[index]
    with pytest.raises(SpecError) as exc:
        _place(_spec(hall))
    text = str(exc.value)
    assert "hall b1/h1" in text
    assert "positions can carry one" in text or "needs" in text


def test_hall_power_short_reports_need_and_have() -> None:
    hall = _hall()
    hall["power_kw"] = 15  # the compute rack draws 20.5 kW (2 of its 4 servers)
    with pytest.raises(SpecError) as exc:
        _place(_spec(hall))
    (problem,) = [p for p in exc.value.problems if "of power" in p.message]
    assert problem.message.startswith("hall b1/h1: needs ")
    assert "of power, has 15 kW" in problem.message


def test_a_unit_longer_than_every_row_is_named_with_the_longest_run() -> None:
    """hgx-1k-roce: a scalable unit is 16 compute racks plus 2 top-of-rack racks = 18
    positions; rows of 12 cannot hold it when units may not be split."""
    from clusterloom.examples import example_text

    doc = yaml.safe_load(example_text("hgx-1k-roce"))
    t = doc["site"]["buildings"][0]["halls"][0]["template"]
    t["positions_per_row"], t["rows"] = 12, 8
    doc["site"]["buildings"][0]["halls"][0]["blocked"] = []
    doc["site"]["buildings"][0]["halls"][0]["depth_m"] = 30
    doc["site"]["split_units"] = False
    with pytest.raises(SpecError) as exc:
        _place(parse_spec(yaml.safe_dump(doc)))
    assert "scalable unit 0 needs 18 adjacent positions, the largest free run is 12" in str(
        exc.value
    )


def test_too_few_positions() -> None:
    hall = _hall(positions_per_row=2)
    with pytest.raises(SpecError) as exc:
        _place(_spec(hall))
    assert "hall b1/h1: needs 3 rack positions, has 2 free" in str(exc.value)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {
                "rows": [
                    {"name": "r1", "positions": 3, "x_m": 0.5, "y_m": 1},
                    {"name": "r2", "positions": 3, "x_m": 1.0, "y_m": 1},
                ]
            },
            "positions r1/p01 and r2/p01 of hall h1 overlap",
        ),
        (
            {"rows": [{"name": "r1", "positions": 100, "x_m": 0.5, "y_m": 1}]},
            "row r1 of hall h1 lies outside the hall",
        ),
        (
            {"template": {"rows": 1, "positions_per_row": 3}, "blocked": ["r09/p01"]},
            "hall h1 has no position 'r09/p01'",
        ),
        (
            {"template": {"rows": 1, "positions_per_row": 3}, "feeds": {"ups-z": 10}},
            "no row of hall h1 is on feed 'ups-z'",
        ),
    ],
)
def test_malformed_floor_names_the_objects(change: dict[str, object], expected: str) -> None:
    hall: dict[str, object] = {"name": "h1", "width_m": 10, "depth_m": 5, **change}
    with pytest.raises(SpecError) as exc:
        _spec(hall)
    assert expected in str(exc.value)
    assert all(p.where.startswith("site.buildings[0].halls[0]") for p in exc.value.problems)


def test_same_spec_same_bytes(tmp_path: Path) -> None:
    from clusterloom.examples import example_text
    from clusterloom.export import write_placement

    spec = parse_spec(example_text("hgx-1k-roce"))
    first = write_placement(run_design(spec, compare=False), tmp_path / "a")
    second = write_placement(run_design(spec, compare=False), tmp_path / "b")
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


def test_validators_catch_a_broken_placement() -> None:
    spec = _spec(_hall())
    fabrics = tuple(design_fabric(spec, f, compare=False) for f in fabric_names(spec))
    good = place(spec, fabrics)
    stacked = np.full(good.n_racks, good.rack_position[0], dtype=np.int32)
    bad = dataclasses.replace(good, rack_position=stacked)
    codes = {f.code for f in validate_placement(bad, spec, fabrics) if f.severity.value == "error"}
    assert "placed-once" in codes


def test_copper_top_of_rack_sits_within_reach() -> None:
    """hgx-1k-roce's frontend is DAC (3 m): its top-of-rack racks stand inside the scalable
    unit's block, so no frontend host link is longer than 4 racks x 0.6 m = 2.4 m."""
    from clusterloom.examples import example_text

    design = run_design(parse_spec(example_text("hgx-1k-roce")), compare=False)
    p = design.placement
    assert p is not None
    dist = p.link_distance_m(design.fabric("frontend"))
    host_leaf = design.fabric("frontend").topology.link_tier == 1
    assert dist[host_leaf].max() == pytest.approx(2.4)
    assert not [f for f in p.findings if f.severity is Severity.ERROR]


@settings(max_examples=12)
@given(
    rows=st.integers(1, 4),
    per_row=st.integers(2, 8),
    feeds=st.integers(1, 3),
    position_kw=st.sampled_from([10, 25, 45]),
    row_kw=st.sampled_from([30, 60, 200]),
    blocked=st.integers(0, 3),
)
def test_any_placement_found_keeps_every_constraint(
    rows: int, per_row: int, feeds: int, position_kw: int, row_kw: int, blocked: int
) -> None:
    """Random floors: either the site is refused with a SpecError, or every check passes and
    the constraints hold when recomputed here from the arrays."""
    names = [f"f{i}" for i in range(feeds)]
    hall = _hall(
        rows=rows,
        positions_per_row=per_row,
        position_power_kw=position_kw,
        row_power_kw=row_kw,
        feeds=names,
    )
    hall["blocked"] = [f"r01/p{i + 1:02d}" for i in range(min(blocked, per_row))]
    spec = _spec(hall)
    try:
        p = _place(spec)
    except SpecError as exc:
        assert exc.problems
        return
    assert not [f for f in p.findings if f.severity is Severity.ERROR]
    assert all(s.bound <= s.objective + 1e-6 for s in p.solves)
    f = p.floor
    assert len(set(p.rack_position.tolist())) == p.n_racks
    assert (f.pos_state[p.rack_position] == 0).all()
    assert (p.demand.rack_power_w <= f.pos_power_w[p.rack_position] + 1e-6).all()
    load = np.bincount(
        f.pos_row[p.rack_position], weights=p.demand.rack_power_w, minlength=len(f.row_names)
    )
    assert (load <= f.row_power_w + 1e-6).all()


def test_cli_place_writes_and_exits_zero(tmp_path: Path) -> None:
    result = runner.invoke(app, ["place", "--example", "hgx-1k-roce", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "Placement: 41 racks" in result.output
    header = (tmp_path / "placement" / "racks.csv").read_text().splitlines()[0]
    assert header.startswith("rack,holds,role,rack_type")
    racks = (tmp_path / "netbox" / "racks.csv").read_text().splitlines()
    assert racks[0].split(",")[:3] == ["site", "location", "name"]
    assert {"cf_x_m", "cf_y_m", "cf_row", "cf_feed"} <= set(racks[0].split(","))
    assert len(racks) == 1 + 41
    devices = (tmp_path / "netbox" / "devices.csv").read_text().splitlines()
    assert devices[0].split(",")[4:9] == ["site", "location", "rack", "position", "face"]
    assert devices[1].split(",")[4:9] == ["hgx-1k-roce", "b1-h1", "b1-h1-r01-p07", "3", "front"]
    # every server and switch once: 128 servers, 16 + 8 backend and 8 + 4 frontend switches
    assert len(devices) == 1 + 128 + 24 + 12
    assert len({line.split(",")[0] for line in devices[1:]}) == len(devices) - 1
    assert "<svg" in (tmp_path / "report.html").read_text()


def test_cli_place_without_site_exits_two(tmp_path: Path) -> None:
    spec = tmp_path / "s.yaml"
    spec.write_text(MINIMAL_SPEC)
    result = runner.invoke(app, ["place", str(spec)])
    assert result.exit_code == 2
    assert "no site section" in result.output


def test_cli_place_infeasible_exits_two(tmp_path: Path) -> None:
    doc = yaml.safe_load(MINIMAL_SPEC)
    doc["site"] = {"buildings": [{"name": "b1", "halls": [_hall(positions_per_row=2)]}]}
    spec = tmp_path / "s.yaml"
    spec.write_text(yaml.safe_dump(doc))
    result = runner.invoke(app, ["place", str(spec)])
    assert result.exit_code == 2
    assert "needs 3 rack positions, has 2 free" in result.output


def test_spreading_planes_needs_feeds() -> None:
    """Two planes of 400G on 16 GPUs: each scalable unit has one leaf rack per plane. With
    planes_per_feed 1 the two racks need two feeds; a hall on one feed cannot host them."""
    base = MINIMAL_SPEC.replace(
        "  accelerators_per_node: 8\n",
        "  accelerators_per_node: 8\n  nic: {ports_per_accelerator: 2}\n",
    )
    two_halls = yaml.safe_load(base)
    h2 = {**_hall(rows=2, feeds=["x"]), "name": "h2", "x_m": 60}
    two_halls["site"] = {"buildings": [{"name": "b1", "halls": [_hall(rows=2, feeds=["a"]), h2]}]}
    with pytest.raises(SpecError) as exc:
        _place(parse_spec(yaml.safe_dump(two_halls)))
    assert "spreads 2 planes at most 1 per feed: it needs 2 feeds in one hall" in str(exc.value)
    ok = _spec(_hall(rows=2, feeds=["a", "b"]), base=base)
    p = _place(ok)

    def feed(rack: int, placement: Placement = p) -> int:
        return int(placement.floor.row_feed[placement.floor.pos_row[placement.rack_position[rack]]])

    leaf = [r for r in range(p.n_racks) if p.demand.rack_role[r] == "leaf"]
    assert len(leaf) == 2 and len({feed(r) for r in leaf}) == 2
    # the validator sees it when one leaf rack swaps places with a rack in the other's row
    f = p.floor
    row = f.pos_row[p.rack_position[leaf[0]]]
    other = next(
        r for r in range(p.n_racks) if r != leaf[0] and f.pos_row[p.rack_position[r]] == row
    )
    moved = p.rack_position.copy()
    moved[leaf[1]], moved[other] = p.rack_position[other], p.rack_position[leaf[1]]
    bad = dataclasses.replace(p, rack_position=moved)
    fabrics = tuple(design_fabric(ok, n, compare=False) for n in fabric_names(ok))
    spread = [x for x in validate_placement(bad, ok, fabrics) if x.code == "spread"]
    assert spread and "2 planes of backend scalable unit 0" in spread[0].message


def test_campus_bound_is_below_the_objective_when_units_must_spread() -> None:
    """moe-2k's four scalable units (17 racks each with its leaf rack) on two halls of 40
    positions: two units per hall, so half the leaf-spine links leave their hall whatever the
    solver does; the campus bound counts them and never exceeds the objective."""
    from clusterloom.examples import example_text

    doc = yaml.safe_load(example_text("moe-2k"))
    hall = doc["site"]["buildings"][0]["halls"][0]
    hall["template"]["rows"] = 2
    doc["site"]["buildings"][0]["halls"] = [hall, {**hall, "name": "h2", "x_m": 20}]
    doc.pop("job")
    p = _place(parse_spec(yaml.safe_dump(doc)))
    campus = p.solves[0]
    assert campus.name == "campus"
    assert 0 < campus.bound <= campus.objective + 1e-6
    assert not [f for f in p.findings if f.severity is Severity.ERROR]


def test_reach_that_no_position_meets_is_reported() -> None:
    """Host links of a 2 m medium and positions 2.5 m apart::

        [ ? ]---2.5 m---[ ? ]---2.5 m---[ ? ]

    The leaf rack can never stand within 2 m of the compute rack: the hall model has no
    placement, and dropping the reach limits is what makes one exist."""
    base = MINIMAL_SPEC.replace(
        "    switch: qm9700\n", "    switch: qm9700\n    media: {host_leaf: short-mmf}\n"
    ) + ("catalog:\n  media:\n    short-mmf: {kind: mmf, speed_gbps: 400, reach_m: 2, fibers: 8}\n")
    spec = _spec(_hall(pitch_m=2.5, origin_m=[1.25, 1.0]), base=base)
    with pytest.raises(SpecError) as exc:
        _place(spec)
    assert "cannot all stand within their host links' reach" in str(exc.value)
    wider = _spec(_hall(pitch_m=1.5, origin_m=[0.75, 1.0]), base=base)
    p = _place(wider)
    assert p.link_distance_m(design_fabric(wider, compare=False))[:16].max() <= 2.0
