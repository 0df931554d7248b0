"""``clusterloom diff A B`` as a user meets it: A and B as run directories, spec files and store
references; ``--json`` and ``-o`` the same bytes; exit 1 when B brings error findings A had
not (``tight-site-findings``), 0 the other way; bad, missing and ambiguous inputs exit 2 with
one line naming the argument."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from diff_pairs import VARIANTS, write_run
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.examples import example_text
from clusterloom.store import open_store


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("cli-diff")
    base_design, base = write_run(VARIANTS["base"], tmp / "base")
    _, grown = write_run(VARIANTS["grown"], tmp / "grown")
    spec = tmp / "base.yaml"
    spec.write_text(yaml.safe_dump(VARIANTS["base"]))
    tight = tmp / "tight.yaml"
    tight.write_text(example_text("tight-site-findings"))
    url = f"sqlite:///{tmp / 'store.db'}"
    store = open_store(url)
    try:
        store.record_design(base_design, base)
    finally:
        store.close()
    return {"tmp": tmp, "base": base, "grown": grown, "spec": spec, "tight": tight, "url": url}


def _diff(*args: str) -> Any:
    return CliRunner().invoke(app, ["diff", *args])


def test_a_run_against_its_own_spec_is_empty(made: dict[str, Any]) -> None:
    result = _diff(str(made["spec"]), str(made["base"]), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["empty"] is True
    assert data["a"] == f"spec {made['spec']}"


def test_a_store_version_against_its_run_directory_is_empty(made: dict[str, Any]) -> None:
    result = _diff("diff-hall@1", str(made["base"]), "--store", made["url"], "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["empty"] is True
    assert data["a"].startswith("store diff-hall@1")


def test_the_summary_json_and_file(made: dict[str, Any]) -> None:
    out = made["tmp"] / "diff.json"
    shown = _diff(str(made["base"]), str(made["grown"]))
    assert shown.exit_code == 0, shown.output
    for text in ("bill of materials", "links", "blast radius", "jobs: none"):
        assert text in shown.stdout
    as_json = _diff(str(made["base"]), str(made["grown"]), "--json", "-o", str(out))
    assert as_json.exit_code == 0
    assert out.read_text() == as_json.stdout
    data = json.loads(out.read_text())
    assert data["counts"]["devices_added"] == len(data["devices"]["added"]) > 0
    backwards = json.loads(_diff(str(made["grown"]), str(made["base"]), "--json").stdout)
    assert backwards["links"]["added"] == data["links"]["removed"]
    assert backwards["bom"]["cost_usd"]["delta"] == -data["bom"]["cost_usd"]["delta"]


def test_predict_simulates_two_specs_with_the_ideal_bound_in_closed_form(
    made: dict[str, Any],
) -> None:
    """The standard traffic (a 2 MB permutation) on 64 x 200G: the ideal transport's p99 FCT
    is 2 MB / 200 Gb/s = 80 us at 1:1 and twice that behind 2:1 leaves."""
    over = made["tmp"] / "oversub.yaml"
    over.write_text(yaml.safe_dump(VARIANTS["oversub"]))
    plain = json.loads(_diff(str(made["spec"]), str(over), "--json").stdout)
    assert plain["performance"] == []
    assert "performance: not simulated (both designs need a simulation/)" in plain["notes"]
    result = _diff(str(made["spec"]), str(over), "--json", "--predict")
    assert result.exit_code == 0, result.output
    perf = {p["transport"]: p for p in json.loads(result.stdout)["performance"]}
    ideal = perf["ideal"]["fct_p99_us"]
    assert (ideal["a"], ideal["b"]) == (pytest.approx(80.0), pytest.approx(160.0))
    assert all(p["finished"]["a"] == p["finished"]["b"] == 64 for p in perf.values())


def test_new_error_findings_exit_1_and_cleared_ones_0(made: dict[str, Any]) -> None:
    worse = _diff(str(made["base"]), str(made["tight"]), "--json")
    assert worse.exit_code == 1, worse.output
    appear = json.loads(worse.stdout)["findings"]["appear"]
    assert any(f["severity"] == "error" for f in appear)
    better = _diff(str(made["tight"]), str(made["base"]), "--json")
    assert better.exit_code == 0, better.output


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["nosuch-run", "BASE"], "A: 'nosuch-run': no such run directory or spec file"),
        (["BASE", "nosuch@7", "--store", "URL"], "B: 'nosuch@7': no such run directory"),
        (["TMP", "BASE"], "not a design run"),
    ],
)
def test_bad_inputs_exit_2_with_one_line(
    made: dict[str, Any], monkeypatch: pytest.MonkeyPatch, args: list[str], says: str
) -> None:
    monkeypatch.delenv("CLUSTERLOOM_STORE", raising=False)
    monkeypatch.setenv("HOME", str(made["tmp"] / "home"))  # no default store
    names = {"BASE": str(made["base"]), "URL": made["url"], "TMP": str(made["tmp"] / "home")}
    (made["tmp"] / "home").mkdir(exist_ok=True)
    result = _diff(*(names.get(a, a) for a in args))
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], result.stderr
    assert "Traceback" not in result.output
    assert not (made["tmp"] / "home" / ".clusterloom").exists()


def test_a_name_both_a_path_and_a_stored_design_is_ambiguous(
    made: dict[str, Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "diff-hall").mkdir()
    result = _diff("diff-hall", str(made["base"]), "--store", made["url"])
    assert result.exit_code == 2
    assert "both a path and a design in the store" in result.stderr
