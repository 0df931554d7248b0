"""Frozen halls, rows and fabrics (``growth.frozen``) against an installed baseline.

A small floor: two rows of ten positions, 64 GPUs (two compute racks, a leaf rack, a spine
rack) installed in row r01, which is frozen; growth adds scalable units of 8 nodes::

    r01  [ ][ ][ ][ ][ ][ ][spine][leaf][c0][c1]    frozen: installed racks stay, nothing new
    r02  [ ][ ][ ][ ][ ][ ][ ][ ][ ][ ]             the growth goes here
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.errors import SpecError
from clusterloom.fabric import design_fabric, fabric_names
from clusterloom.placement import Placement, place
from clusterloom.spec import ClusterSpec, parse_spec

runner = CliRunner()


def _row(name: str, y: float, spine_kw: float = 60) -> dict[str, Any]:
    """A listed row of ten 0.6 m positions; p07 carries ``spine_kw``."""
    return {
        "name": name,
        "x_m": 1.0,
        "y_m": y,
        "power_kw": 400,
        "positions": [
            {
                "name": f"p{i:02d}",
                "x_m": 1.0 + 0.6 * (i - 1),
                "y_m": y,
                "power_kw": spine_kw if i == 7 else 60,
            }
            for i in range(1, 11)
        ],
    }


def _doc(gpus: int, spine_kw: float = 60, **frozen: list[str]) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "version": 1,
        "name": "grow",
        "compute": {"accelerators": gpus, "accelerators_per_node": 8},
        "fabrics": {"backend": {"switch": "qm9700", "scalable_unit_nodes": 8}},
        "site": {
            "buildings": [
                {
                    "name": "b1",
                    "halls": [
                        {
                            "name": "h1",
                            "width_m": 30,
                            "depth_m": 20,
                            "rows": [_row("r01", 2.0, spine_kw), _row("r02", 6.0)],
                        }
                    ],
                }
            ]
        },
    }
    if frozen:
        doc["growth"] = {"frozen": frozen}
    return doc


def _write(path: Path, doc: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(doc))
    return path


def _design(tmp: Path, name: str, doc: dict[str, Any], installed: Path | None = None) -> Any:
    args = ["design", str(_write(tmp / f"{name}.yaml", doc)), "-o", str(tmp / name)]
    if installed is not None:
        args += ["--installed", str(installed)]
    return runner.invoke(app, args)


def _racks(out: Path) -> dict[str, str]:
    rows = (out / "placement" / "racks.csv").read_text().splitlines()[1:]
    return {r.split(",")[1]: r.split(",")[0] for r in rows}


def _findings(out: Path) -> dict[str, list[str]]:
    doc = json.loads((out / "design.json").read_text())
    found: dict[str, list[str]] = {}
    for f in doc["findings"]:
        found.setdefault(f["code"], []).append(f["message"])
    return found


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("frozen")
    result = _design(tmp, "base", _doc(64))
    assert result.exit_code == 0, result.output
    assert all(r.startswith("b1-h1-r01-") for r in _racks(tmp / "base").values())
    return tmp / "base"


# --- the spec ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("frozen", "field", "said"),
    [
        ({"halls": ["b2/h1"]}, "growth.frozen.halls[0]", "'b2/h1' is no BUILDING/HALL"),
        ({"rows": ["b1/h1/r09"]}, "growth.frozen.rows[0]", "it has b1/h1/r01, b1/h1/r02"),
        ({"fabrics": ["frontend"]}, "growth.frozen.fabrics[0]", "it has backend"),
        ({"rows": ["b1/h1/r01", "b1/h1/r01"]}, "growth.frozen.rows[1]", "named twice"),
        ({"colour": ["red"]}, "growth.frozen.colour", ""),
    ],
)
def test_unknown_frozen_names_exit_2_naming_the_field(
    tmp_path: Path, frozen: dict[str, list[str]], field: str, said: str
) -> None:
    result = runner.invoke(app, ["validate", str(_write(tmp_path / "s.yaml", _doc(64, **frozen)))])
    assert result.exit_code == 2
    line = next(x for x in result.stderr.splitlines() if field in x)
    assert said in line
    assert "Traceback" not in result.output


def test_frozen_halls_without_a_site_are_refused() -> None:
    doc = _doc(64, halls=["b1/h1"])
    del doc["site"]
    with pytest.raises(SpecError, match="none: the spec has no site"):
        parse_spec(yaml.safe_dump(doc))


# --- frozen rows and halls ---------------------------------------------------------------------


@pytest.mark.parametrize("frozen", [{"rows": ["b1/h1/r01"]}, {"halls": []}])
def test_a_frozen_row_keeps_its_racks_and_takes_no_new_one(
    tmp_path: Path, installed: Path, frozen: dict[str, list[str]]
) -> None:
    result = _design(tmp_path, "grown", _doc(192, **frozen), installed)
    assert result.exit_code == 0, result.output
    before, after = _racks(installed), _racks(tmp_path / "grown")
    assert {lab: after[lab] for lab in before} == before  # zero installed racks moved
    new_in_r01 = [r for lab, r in after.items() if lab not in before and "-r01-" in r]
    if frozen.get("rows"):
        assert new_in_r01 == []
    else:  # unfrozen, the growth uses r01's free positions: the test above can fail
        assert new_in_r01
    growth = json.loads((tmp_path / "grown" / "design.json").read_text())["growth"]
    assert growth["racks_moved"] == 0 and growth["moved_racks"] == []


def test_a_frozen_hall_takes_no_new_rack_so_the_site_is_short(
    tmp_path: Path, installed: Path
) -> None:
    result = _design(tmp_path, "grown", _doc(192, halls=["b1/h1"]), installed)
    assert result.exit_code == 2
    assert "free" in result.stderr and "growth.frozen" in result.stderr


def test_a_forced_move_in_a_frozen_row_is_an_error_naming_the_rack(tmp_path: Path) -> None:
    # p07 of r01 carries 3 kW: the 2-spine rack (2.1 kW) stands there, the grown 4-spine one
    # (4.7 kW) cannot, so it must leave the frozen row
    base = _design(tmp_path, "base", _doc(64, spine_kw=3))
    assert base.exit_code == 0, base.output
    assert _racks(tmp_path / "base")["backend-p0-spine-0"] == "b1-h1-r01-p07"
    result = _design(
        tmp_path, "grown", _doc(192, spine_kw=3, rows=["b1/h1/r01"]), tmp_path / "base"
    )
    assert result.exit_code == 1
    (message,) = _findings(tmp_path / "grown")["frozen-rack-moved"]
    assert "1 installed rack(s) of frozen b1/h1/r01: backend-p0-spine-0 b1-h1-r01-p07 ->" in (
        message
    )
    moved = {
        lab
        for lab, r in _racks(tmp_path / "grown").items()
        if r != _racks(tmp_path / "base").get(lab, r)
    }
    assert moved == {"backend-p0-spine-0"}


def _placed(spec: ClusterSpec, fixed: dict[str, str] | None) -> Placement:
    fabrics = tuple(design_fabric(spec, f, compare=False) for f in fabric_names(spec))
    return place(spec, fabrics, fixed=fixed)


@settings(max_examples=6, deadline=None)
@given(steps=st.lists(st.integers(1, 3), min_size=1, max_size=3))
def test_frozen_racks_never_move_over_growth_steps(steps: list[int]) -> None:
    """Each step adds 1-3 scalable units (64 GPUs each) with r01 frozen: every rack installed
    in r01 stays, no new rack lands there (or the site is short: refused)."""
    gpus = 64
    p = _placed(parse_spec(yaml.safe_dump(_doc(gpus))), None)
    installed = {lab: p.rack_names[r] for r, lab in enumerate(p.demand.rack_label)}
    for add in steps:
        gpus += 64 * add
        spec = parse_spec(yaml.safe_dump(_doc(gpus, rows=["b1/h1/r01"])))
        try:
            p = _placed(spec, installed)
        except SpecError:
            return  # the floor is full: refused, nothing moved
        now = {lab: p.rack_names[r] for r, lab in enumerate(p.demand.rack_label)}
        frozen = {lab: r for lab, r in installed.items() if "-r01-" in r}
        assert {lab: now[lab] for lab in frozen} == frozen
        assert not [r for lab, r in now.items() if lab not in installed and "-r01-" in r]
        assert not [f for f in p.findings if f.code == "frozen-rack-moved"]
        installed = now


# --- frozen fabrics ----------------------------------------------------------------------------


def test_a_frozen_fabric_that_grows_is_an_error_naming_links_and_devices(
    tmp_path: Path, installed: Path
) -> None:
    result = _design(tmp_path, "grown", _doc(192, fabrics=["backend"]), installed)
    assert result.exit_code == 1
    found = _findings(tmp_path / "grown")
    (repatch,) = found["frozen-fabric-repatch"]
    # the spine layer grows 2 -> 4: 32 installed leaf-spine links change their stripe
    assert repatch.startswith("frozen fabric backend: 32 installed links re-patched: be-p0-leaf")
    (grown,) = found["frozen-fabric-grown"]
    # 16 new servers, 2 scalable units x 8 rails of leaves, 2 more spines
    assert grown.startswith("frozen fabric backend: 34 new devices: be-p0-leaf0008, ")


def test_a_frozen_fabric_left_as_it_is_has_no_finding(tmp_path: Path, installed: Path) -> None:
    result = _design(tmp_path, "same", _doc(64, fabrics=["backend"]), installed)
    assert result.exit_code == 0, result.output
    assert not [c for c in _findings(tmp_path / "same") if c.startswith("frozen")]


def _three_rows(r01_kw: float, **frozen: list[str]) -> ClusterSpec:
    doc = _doc(128, **frozen)
    rows = doc["site"]["buildings"][0]["halls"][0]["rows"]
    rows[0]["power_kw"] = r01_kw
    rows.append(_row("r03", 10.0))
    return parse_spec(yaml.safe_dump(doc))


#: installed: the compute racks in r02, the two leaf racks and the spine rack in r01
_INSTALLED = {f"compute{i:05d}": f"b1-h1-r02-p{i + 1:02d}" for i in range(4)} | {
    "backend-p0-leaf-su000-0": "b1-h1-r01-p01",
    "backend-p0-leaf-su001-0": "b1-h1-r01-p02",
    "backend-p0-spine-0": "b1-h1-r01-p03",
}


def test_the_costed_re_solve_keeps_the_frozen_racks_pinned() -> None:
    """r01 carries 10 kW but its installed network racks draw 16.3 kW: with every installed
    rack pinned the hall has no solution, so the costed re-solve moves some; the compute racks
    of frozen r02 stay pinned in it, and r02's free positions take none of the moved racks."""
    p = _placed(_three_rows(10, rows=["b1/h1/r02"]), _INSTALLED)
    now = {lab: p.rack_names[r] for r, lab in enumerate(p.demand.rack_label)}
    assert p.forced_moves == 1  # no unit stuck, one more for the model that had no solution
    assert all(now[f"compute{i:05d}"] == _INSTALLED[f"compute{i:05d}"] for i in range(4))
    moved = {lab for lab, r in _INSTALLED.items() if now[lab] != r}
    assert moved and all(now[lab].startswith("b1-h1-r03-") for lab in moved)
    (finding,) = [f for f in p.findings if f.code == "installed-rack-moved"]
    assert "budgets" in finding.message
    assert not [f for f in p.findings if f.code == "frozen-rack-moved"]


def test_a_growth_the_frozen_parts_cannot_leave_room_for_is_refused_saying_so() -> None:
    """Two rows only: r02 frozen closes its free positions, r01's 10 kW cannot take the
    network racks, so no placement exists even with every unfrozen rack free to move."""
    doc = _doc(128, rows=["b1/h1/r02"])
    doc["site"]["buildings"][0]["halls"][0]["rows"][0]["power_kw"] = 10
    with pytest.raises(SpecError) as exc:
        _placed(parse_spec(yaml.safe_dump(doc)), _INSTALLED)
    wheres = [p.where for p in exc.value.problems]
    assert wheres[-1] == "growth.frozen"
    assert exc.value.problems[-1].message.startswith("6 free positions of the frozen halls")
