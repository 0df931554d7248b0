"""``clusterloom propose`` as a user meets it: the front and the losers' reasons on the
terminal; ``--json`` and ``-o DIR``'s proposals.json the same bytes; the front's specs written
and readable as specs; a goal nothing meets exits 0 with the finding; a malformed goal exits 2
with one line per bad field; ``--store`` records each front member's design and proposal, and
a changed goal of the same name supersedes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.spec import load_spec
from clusterloom.store import open_store

GOAL: dict[str, Any] = {
    "version": 1,
    "name": "cli-small",
    "compute": {"accelerators": 128},
    "network": {"bandwidth_per_accelerator_gbps": 400, "max_oversubscription": {"leaf": 2}},
    "failure": {"planes_down": 1, "floors": {"bisection": 0.5}},
    "space": {
        "families": ["rail-optimized"],
        "switches": ["tomahawk4-64x400g", "tomahawk5-64x800g"],
        "tiers": [2],
        "leaf_oversubscription": [1, 2],
    },
}


def _goal(tmp: Path, name: str = "goal.yaml", **changes: Any) -> Path:
    path = tmp / name
    path.write_text(yaml.safe_dump({**GOAL, **changes}))
    return path


def _run(*args: str) -> Any:
    """``propose ARGS`` serially (a pool's start-up costs more than these small goals)."""
    return CliRunner().invoke(app, ["propose", "--workers", "1", *args])


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("cli-propose")
    goal = _goal(tmp)
    table = _run(str(goal), "-o", str(tmp / "out"))
    as_json = _run(str(goal), "--json")
    return {"tmp": tmp, "goal": goal, "table": table, "json": as_json}


def test_the_table_shows_the_front_and_why_the_others_lost(written: dict[str, Any]) -> None:
    result = written["table"]
    assert result.exit_code == 0, result.output
    assert "Pareto front of goal cli-small" in result.output
    assert "why the others lost" in result.output
    assert "failure.floors.bisection" in result.output
    assert "candidates evaluated per tier: sizing" in result.output


def test_json_and_the_written_file_are_the_same_bytes(written: dict[str, Any]) -> None:
    assert written["json"].exit_code == 0
    out = written["tmp"] / "out"
    assert (out / "proposals.json").read_text() == written["json"].stdout
    data = json.loads(written["json"].stdout)
    assert data["kind"] == "clusterloom-proposals" and data["front"]
    for member in data["front"]:
        spec = load_spec(out / "specs" / f"{member['id']}.yaml")
        assert spec.name == member["spec_name"]
    assert (out / "manifest.json").is_file()


def test_a_goal_nothing_meets_exits_0_with_the_finding(tmp_path: Path) -> None:
    goal = _goal(tmp_path, budget={"max_cost_usd": 1000})
    result = _run(str(goal))
    assert result.exit_code == 0, result.output
    assert "goal-unmet" in result.output and "budget.max_cost_usd" in result.output


def test_a_malformed_goal_exits_2_naming_each_field(tmp_path: Path) -> None:
    goal = _goal(
        tmp_path,
        network={"bandwidth_per_accelerator_gbps": -1, "transprts": ["roce-ecmp"]},
        budget={"max_power_kw": "lots"},
    )
    result = _run(str(goal))
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.startswith("error")]
    assert len(lines) == 3
    text = "\n".join(lines)
    for field in (
        "network.bandwidth_per_accelerator_gbps",
        "network.transprts",
        "budget.max_power_kw",
    ):
        assert field in text
    assert "Traceback" not in result.output


def test_a_missing_goal_and_an_unknown_example_exit_2(tmp_path: Path) -> None:
    assert _run(str(tmp_path / "nope.yaml")).exit_code == 2
    result = _run("--example", "nope")
    assert result.exit_code == 2 and "hgx-1k" in result.output


@pytest.mark.slow
def test_store_records_the_front_and_a_changed_goal_supersedes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'store.db'}"
    first = _run(str(_goal(tmp_path)), "--store", "--store-url", url)
    assert first.exit_code == 0, first.output
    store = open_store(url)
    try:
        proposals = store.records(kind="proposal")
        assert proposals and all(p["record"]["supersedes"] == "" for p in proposals)
        assert all(p["design_id"] for p in proposals)
        assert all(p["record"]["plan"]["baseline"] == "greenfield" for p in proposals)
    finally:
        store.close()
    again = _run(str(_goal(tmp_path)), "--store", "--store-url", url)
    assert again.exit_code == 0 and "recorded already" in again.output
    changed = _goal(tmp_path, "changed.yaml", seed=1)
    later = _run(str(changed), "--store", "--store-url", url)
    assert later.exit_code == 0, later.output
    store = open_store(url)
    try:
        records = store.records(kind="proposal")
    finally:
        store.close()
    old = {p["id"] for p in proposals}
    new = [r for r in records if r["id"] not in old]
    assert new and {r["record"]["supersedes"] for r in new} <= old
    assert all(r["record"]["supersedes"] for r in new[: len(old)])
