"""Growth from an installed baseline, end to end through the command line.

``hgx-1k-roce`` grown 1,024 -> 1,280 -> 1,536 GPUs, each step from the previous run's output
directory (``design --installed DIR``). 1k -> 1.25k: the spine layer must grow (8 -> 16), so
512 leaf-spine links are re-patched, exactly the forced number, and they are listed; today's
code (``cable --from``) moved 22 of 41 racks and rewired 2,272 of 2,432 links. 1.25k -> 1.5k
(the hall's power raised to 3 MW): the spines had room, no installed rack moves, no link is
re-patched or re-pulled. 1.25k -> 2k: no link re-patched, but the site cannot hold the new
blocks around the installed racks: the few racks that move are listed. Applying each step's
change plan to the installed links gives the grown design's links exactly.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from clusterloom.changes import ChangePlan, read_records
from clusterloom.cli.main import app
from clusterloom.examples import example_text
from clusterloom.growth import apply_plan

pytestmark = pytest.mark.slow  # four designs with placement and cabling: about 40 s


def _spec(tmp: Path, accelerators: int, power_kw: int = 2000) -> Path:
    doc = yaml.safe_load(example_text("hgx-1k-roce"))
    doc["compute"]["accelerators"] = accelerators
    hall = doc["site"]["buildings"][0]["halls"][0]
    hall["power_kw"] = hall["cooling_kw"] = power_kw
    hall["feeds"] = {"ups-a": power_kw // 2, "ups-b": power_kw // 2}
    path = tmp / f"hgx-{accelerators}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def _design(spec: Path, out: Path, installed: Path | None = None) -> Any:
    args = ["design", str(spec), "-o", str(out)]
    if installed is not None:
        args += ["--installed", str(installed)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code in (0, 1), result.output  # 1: the tray-fill findings of the example
    return result


@pytest.fixture(scope="module")
def steps(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("growth")
    runs: dict[str, Any] = {}
    _design(_spec(tmp, 1024), tmp / "1k")
    runs["1.25k"] = _design(_spec(tmp, 1280), tmp / "1.25k", tmp / "1k")
    runs["1.5k"] = _design(_spec(tmp, 1536, 3000), tmp / "1.5k", tmp / "1.25k")
    runs["2k"] = _design(_spec(tmp, 2048, 3000), tmp / "2k", tmp / "1.25k")
    runs["dir"] = tmp
    return runs


def _growth(out: Path) -> dict[str, Any]:
    return json.loads((out / "design.json").read_text())["growth"]  # type: ignore[no-any-return]


def _links(out: Path) -> set[str]:
    with open(out / "cabling" / "cut_sheet.csv", newline="") as fh:
        return {
            f"{r['a_device']}:{r['a_port']}~{r['b_device']}:{r['b_port']}"
            for r in csv.DictReader(fh)
        }


def _racks(out: Path) -> dict[str, str]:
    with open(out / "placement" / "racks.csv", newline="") as fh:
        return {r["holds"]: r["rack"] for r in csv.DictReader(fh)}


def test_a_spine_layer_that_must_grow_re_patches_only_the_forced_links(
    steps: dict[str, Any],
) -> None:
    g = _growth(steps["dir"] / "1.25k")
    assert g["links_installed"] == 2432
    assert g["links_repatched"] == g["links_repatched_bound"] == 512
    assert (g["waves"], g["steps"]) == (2, 12)  # growth.waves: re-patch, then the rack move
    # was 22 of 41; the feed budgets force one move (the pinned model has no solution)
    assert g["racks_moved"] == g["racks_moved_bound"] == 1
    assert len(g["moved_racks"]) == g["racks_moved"]
    assert "512 of 2,432 links re-patched (forced: 512)" in steps["1.25k"].output
    doc = json.loads((steps["dir"] / "1.25k" / "design.json").read_text())
    codes = {f["code"] for f in doc["findings"]}
    assert "growth-repatch" in codes
    assert ("installed-rack-moved" in codes) == (g["racks_moved"] > 0)
    page = (steps["dir"] / "1.25k" / "report.html").read_text()
    assert '<section id="growth">' in page and "512 of 2,432" in page
    # the shapes that avoid the forced re-patching, structured, in design.json and the report
    shapes = {(a["fabric"], a["name"]): a for a in g["alternatives"]}
    assert shapes[("backend", "accept the re-patch")]["links_repatched"] == 512
    assert shapes[("backend", "over-build the spine layer")]["links_repatched"] == 0
    assert shapes[("backend", "reserve spine ports")]["first_build_usd"] == 280_000
    assert 'id="growth-alternatives"' in page and "over-build the spine layer" in page


def test_where_the_spine_had_room_nothing_installed_moves(steps: dict[str, Any]) -> None:
    g = _growth(steps["dir"] / "1.5k")
    assert g["racks_moved"] == g["racks_moved_bound"] == 0
    assert g["links_repatched"] == g["fibres_repulled"] == 0
    assert g["links_added"] > 0
    old, new = _racks(steps["dir"] / "1.25k"), _racks(steps["dir"] / "1.5k")
    assert all(new[label] == rack for label, rack in old.items())
    assert _links(steps["dir"] / "1.25k") <= _links(steps["dir"] / "1.5k")


def test_racks_the_site_forces_to_move_are_listed_with_the_reason(steps: dict[str, Any]) -> None:
    """1.25k -> 2k: the spines have room (no link re-patched) but the new blocks do not pack
    into the runs between installed racks: the moves are a finding, each one named."""
    g = _growth(steps["dir"] / "2k")
    assert g["links_repatched"] == g["links_repatched_bound"] == 0
    assert 1 <= g["racks_moved_bound"] <= g["racks_moved"] < g["racks_installed"] // 4
    doc = json.loads((steps["dir"] / "2k" / "design.json").read_text())
    (finding,) = [f for f in doc["findings"] if f["code"] == "installed-rack-moved"]
    assert f"{g['racks_moved']} installed rack(s) move" in finding["message"]
    assert all(m.split()[0] in finding["message"] for m in g["moved_racks"])
    old, new = _racks(steps["dir"] / "1.25k"), _racks(steps["dir"] / "2k")
    assert sum(new[lab] != rack for lab, rack in old.items()) == g["racks_moved"]


@pytest.mark.parametrize(("before", "after"), [("1k", "1.25k"), ("1.25k", "1.5k"), ("1.25k", "2k")])
def test_applying_the_change_plan_to_the_installed_links_gives_the_new_design(
    steps: dict[str, Any], before: str, after: str
) -> None:
    out = steps["dir"] / after
    (plan,) = read_records(out / "changes.jsonl")
    assert isinstance(plan, ChangePlan)
    assert [s.order for s in plan.steps] == list(range(1, len(plan.steps) + 1))
    assert apply_plan(_links(steps["dir"] / before), plan) == _links(out)
    # every step validated: no interface cabled twice at any point, the link count tracked
    assert all(s.valid and s.checks["ports-in-use-twice"] == 0 for s in plan.steps)
    assert plan.steps[-1].checks["links"] == len(_links(out))


def test_the_change_csv_is_in_the_order_of_work_and_names_what_stays_live(
    steps: dict[str, Any],
) -> None:
    with open(steps["dir"] / "1.25k" / "cabling" / "change.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    work = [int(r["step"]) for r in rows if r["action"] != "keep"]
    assert work == sorted(work)
    keep = [r for r in rows if r["action"] == "keep"]
    assert keep and all(r["state"] == "stays live" for r in keep)
    removed = [r for r in rows if r["action"] == "remove"]
    assert len(removed) == 512 and all(r["state"].startswith("drain") for r in removed)
    # in waves (growth.waves): leaves 8-15 re-patched in wave 1, the moved rack's leaves 0-7 in
    # wave 2; the rows' waves follow their steps, the kept links belong to none
    waves = [int(r["wave"]) for r in rows if r["action"] != "keep"]
    assert waves == sorted(waves) and all(r["wave"] == "" for r in keep)
    assert sorted({r["wave"] for r in removed}) == ["1", "2"]
    assert sum(r["wave"] == "1" for r in removed) == 256
