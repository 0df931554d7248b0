"""The installed baseline: read from a run's directory, refused when it does not match.

A baseline with another fabric family, with planes the spec removes, or with a device or a
port referenced twice is bad input: exit 2, one line naming the object.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from clusterloom.changes import (
    Approval,
    ChangePlan,
    Decision,
    Proposal,
    Step,
    append_record,
    read_records,
)
from clusterloom.cli.main import app
from clusterloom.errors import SpecError
from clusterloom.growth import check_installed, read_installed
from clusterloom.spec import parse_spec
from helpers import MINIMAL_SPEC


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("installed")
    spec = tmp / "small.yaml"
    spec.write_text(MINIMAL_SPEC)
    out = tmp / "out"
    result = CliRunner().invoke(app, ["design", str(spec), "-o", str(out)])
    assert result.exit_code == 0, result.output
    return out


def test_a_baseline_names_every_link_by_identity(baseline: Path) -> None:
    installed = read_installed(baseline)
    nodelink = json.loads((baseline / "backend.nodelink.json").read_text())
    assert installed.links["backend"].n_links == len(nodelink["links"])
    check_installed(installed, parse_spec(MINIMAL_SPEC))


def test_another_family_is_refused_naming_the_fabric(baseline: Path, tmp_path: Path) -> None:
    doc = yaml.safe_load(MINIMAL_SPEC)
    doc["fabrics"]["backend"]["family"] = "fat-tree"
    doc["fabrics"]["backend"].pop("scalable_unit_nodes", None)
    with pytest.raises(SpecError) as exc:
        check_installed(read_installed(baseline), parse_spec(yaml.safe_dump(doc)))
    assert exc.value.problems[0].where == "fabrics.backend.family"


def test_removed_planes_are_refused_naming_the_fabric(baseline: Path) -> None:
    from dataclasses import replace

    installed = read_installed(baseline)
    family, planes = installed.fabrics["backend"]
    more = replace(installed, fabrics={**installed.fabrics, "backend": (family, planes + 2)})
    with pytest.raises(SpecError) as exc:
        check_installed(more, parse_spec(MINIMAL_SPEC))
    (problem,) = exc.value.problems
    assert problem.where == "fabrics.backend" and "2 installed plane(s) removed" in problem.message


def test_a_device_referenced_twice_exits_2_naming_it(baseline: Path, tmp_path: Path) -> None:
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(baseline, bad, symlinks=False)
    path = bad / "backend.nodelink.json"
    doc = json.loads(path.read_text())
    switches = [n for n in doc["nodes"] if n["role"] != "host"]
    switches[1]["name"] = switches[0]["name"]
    path.write_text(json.dumps(doc))
    spec = tmp_path / "small.yaml"
    spec.write_text(MINIMAL_SPEC)
    result = CliRunner().invoke(
        app, ["design", str(spec), "--installed", str(bad), "-o", str(tmp_path / "o")]
    )
    assert result.exit_code == 2
    assert f"{switches[0]['name']}" in result.output and "referenced twice" in result.output


def test_a_missing_baseline_exits_2(tmp_path: Path) -> None:
    spec = tmp_path / "small.yaml"
    spec.write_text(MINIMAL_SPEC)
    result = CliRunner().invoke(
        app,
        ["design", str(spec), "--installed", str(tmp_path / "nowhere"), "-o", str(tmp_path / "o")],
    )
    assert result.exit_code == 2 and "design.json" in result.output


def test_change_records_round_trip_through_the_json_lines_log(tmp_path: Path) -> None:
    step = Step(1, "drain", ("a:1~b:2",), "re-patch", ("a:1~b:2",), 10, {"ports": 0})
    plan = ChangePlan("p1", "old", "new", (step,), {"links_removed": 1})
    records = [
        plan,
        Proposal("x1", plan, "growth", ("spine layer grows",)),
        Approval("x1", "alice", True),
        Decision("x1", {"forced": 512}, "p1"),
    ]
    log = tmp_path / "changes.jsonl"
    for r in records:
        append_record(log, r)
    assert read_records(log) == records


def test_without_a_site_the_plan_takes_the_installed_links_to_the_grown_ones(
    baseline: Path, tmp_path: Path
) -> None:
    """16 -> 32 GPUs on a fabric with no site: the change plan is by link name only."""
    from clusterloom.growth import apply_plan, read_installed
    from clusterloom.growth.rework import fabric_link_names
    from clusterloom.pipeline import run_design

    doc = yaml.safe_load(MINIMAL_SPEC)
    doc["compute"]["accelerators"] = 32
    grown = run_design(parse_spec(yaml.safe_dump(doc)), installed=read_installed(baseline))
    g = grown.growth
    assert g is not None and g.change is None
    catalog = grown.spec.resolved_catalog()
    before = fabric_link_names(g.baseline.fabrics, catalog)
    after = fabric_link_names(grown.fabrics, catalog)
    assert apply_plan(before, g.plan) == after
    assert g.rework.links_repatched == len(before - after) == g.rework.links_repatched_bound


def test_the_cut_sheet_names_the_same_links_as_the_node_link_files(tmp_path: Path) -> None:
    """A baseline too large for node-link files is read from its cut sheet: same identities."""
    import shutil

    import numpy as np

    from clusterloom.fabric.stable import InstalledLinks

    doc = yaml.safe_load(MINIMAL_SPEC)
    template = {"rows": 2, "positions_per_row": 4, "pitch_m": 1.0, "origin_m": [0.5, 1.0]}
    hall = {"name": "h1", "width_m": 40, "depth_m": 30, "template": template}
    doc["site"] = {"buildings": [{"name": "b1", "halls": [hall]}]}
    spec = tmp_path / "sited.yaml"
    spec.write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["design", str(spec), "-o", str(out)])
    assert result.exit_code == 0, result.output
    bare = tmp_path / "bare"
    shutil.copytree(out, bare)
    for path in bare.glob("*.nodelink.json"):
        path.unlink()

    def rows(links: InstalledLinks) -> set[tuple[int, ...]]:
        cols = [getattr(links, f) for f in links.__dataclass_fields__ if f != "fabric"]
        return {tuple(r) for r in np.stack(cols, axis=1).tolist()}

    full, cut = read_installed(out), read_installed(bare)
    assert rows(full.links["backend"]) == rows(cut.links["backend"])
    assert full.racks == cut.racks
