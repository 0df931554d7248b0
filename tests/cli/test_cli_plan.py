"""``clusterloom plan`` as a user meets it: the example written as one run (plan.html,
menu.json, the scenario tables, a manifest), byte-identical for a seed; bad input is one line
per problem naming the field and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from capacity_helpers import example_data
from clusterloom.capacity.input import example_plan
from clusterloom.cli.main import app

runner = CliRunner()


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return {"CLUSTERLOOM_CACHE": str(tmp_path_factory.mktemp("cache"))}


def _plan(tmp_path: Path, out: str, cache: dict[str, str], *extra: str) -> Path:
    target = tmp_path / out
    args = ["plan", str(example_plan()), "-o", str(target), "-n", "120", "--seed", "4", *extra]
    result = runner.invoke(app, args, env=cache)
    assert result.exit_code == 0, result.output
    return target


def test_plan_writes_one_deterministic_run(tmp_path: Path, cache: dict[str, str]) -> None:
    a = _plan(tmp_path, "a", cache, "--no-menu")
    b = _plan(tmp_path, "b", cache, "--no-menu")
    names = ["plan.html", "menu.json", "scenarios.parquet", "lead_times.parquet"]
    for name in names:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    manifest = json.loads((a / "manifest.json").read_text())
    assert sorted(f["path"] for f in manifest["files"]) == sorted(names)
    table = pq.read_table(a / "scenarios.parquet")
    assert table.num_rows == 120 * 2 * 8
    doc = json.loads((a / "menu.json").read_text())
    assert doc["scenarios"] == 120 and doc["seed"] == 4 and doc["menu"] is None
    assert doc["curves"]["sizes"] == [0, 256, 512, 1024]


def test_bad_plan_exits_2_naming_the_field(tmp_path: Path) -> None:
    import yaml

    data = example_data()
    data["sites"][0]["buildings"][0]["halls"][0]["power"] = {"it_mw": -1, "pue": 1.2}
    data["programs"][0]["demand"]["east"]["accelerators"][1] = [300, 200, 100]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    result = runner.invoke(app, ["plan", str(bad), "--no-menu"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 2, result.output
    assert any("sites[0].buildings[0].halls[0].power.it_mw" in line for line in lines)
    assert any("programs[0].demand.east" in line and "monotone" in line for line in lines)
    assert "Traceback" not in result.output
    result = runner.invoke(app, ["plan", str(example_plan()), "--no-menu", "-n", "0"])
    assert result.exit_code == 2 and "--scenarios" in result.output
