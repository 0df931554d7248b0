"""``clusterloom change``, ``approve`` and ``store export-plan`` as a user meets them: the
method of procedure written (every step PROPOSED), exit 0 when every step keeps the floors and
1 when a floor cannot be kept, 2 for bad input with one line naming it; ``--store`` records a
proposal and a second plan of the same change supersedes it; approving the superseded one is
refused (exit 2); the export says APPROVED, with approver and reason, only once approved."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from plan_designs import CHANGES, write_baselines
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.store import open_store


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("cli-change")
    runs = write_baselines(tmp)
    grown = tmp / "grown.yaml"
    grown.write_text(yaml.safe_dump(CHANGES["growth"][1]))
    return {"tmp": tmp, "base": runs["base"], "grown": grown, "url": f"sqlite:///{tmp / 's.db'}"}


def _run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def _mop(folder: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO((folder / "mop.csv").read_text())))


@pytest.fixture(scope="module")
def first(made: dict[str, Any]) -> dict[str, Any]:
    """The growth planned at a 75% bisection floor, written and recorded."""
    out = made["tmp"] / "plan-75"
    r = _run(
        "change", str(made["base"]), str(made["grown"]), "--floor-bisection", "0.75",
        "--no-simulate", "-o", str(out), "--store", "--store-url", made["url"],
    )  # fmt: skip
    records = [json.loads(x) for x in (out / "changes.jsonl").read_text().splitlines()]
    return {"result": r, "out": out, "records": records, "id": records[1]["id"]}


def test_a_plan_keeping_its_floors_is_written_and_recorded(
    made: dict[str, Any], first: dict[str, Any]
) -> None:
    r, out, records = first["result"], first["out"], first["records"]
    assert r.exit_code == 0, r.output
    rows = _mop(out)
    assert [int(x["order"]) for x in rows] == list(range(1, len(rows) + 1))
    assert {x["status"] for x in rows} == {"PROPOSED"} and {x["valid"] for x in rows} == {"yes"}
    drains = [x for x in rows if x["action"] == "drain"]
    assert [len(x["objects"].split("; ")) for x in drains] == [16, 16, 32]
    assert all("backend:bisection-left=" in x["checks"] for x in rows)
    assert [x["kind"] for x in records] == ["change-plan", "proposal"]
    plan = json.loads((out / "plan.json").read_text())
    assert plan["change"] == "growth" and plan["reaches_target"] is True
    pid = first["id"]
    store = open_store(made["url"])
    try:
        assert store.proposal_status(pid) in ("proposed", "superseded")  # the test below
    finally:
        store.close()
    # the same plan again is the same proposal, not a new one
    again = _run(
        "change", str(made["base"]), str(made["grown"]), "--floor-bisection", "0.75",
        "--no-simulate", "--store", "--store-url", made["url"], "--json",
    )  # fmt: skip
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["proposal"]["id"] == pid


def test_a_floor_no_order_keeps_exits_1_and_a_bad_floor_2(made: dict[str, Any]) -> None:
    r = _run("change", str(made["base"]), str(made["grown"]), "--floor-bisection", "0.99",
             "--no-simulate", "--json")  # fmt: skip
    assert r.exit_code == 1, r.output
    found = json.loads(r.stdout)["findings"]
    assert any(f["code"] == "plan-floor" and "bisection floor 99%" in f["message"] for f in found)
    bad = _run("change", str(made["base"]), str(made["grown"]), "--floor-plane", "1.5")
    assert bad.exit_code == 2
    assert bad.output.strip().splitlines() == [
        "error: --floor-plane: 1.5 is not a fraction: give 0 to 1 (0.75 keeps 75% of the target's)"
    ]
    missing = _run("change", str(made["tmp"] / "nothing"), str(made["grown"]))
    assert missing.exit_code == 2 and "Traceback" not in missing.output
    other = made["tmp"] / "fat-tree.yaml"
    doc = yaml.safe_load(made["grown"].read_text())
    doc["fabrics"]["backend"]["family"] = "fat-tree"
    other.write_text(yaml.safe_dump(doc))
    refused = _run("change", str(made["base"]), str(other), "--no-simulate")
    assert refused.exit_code == 2, refused.output
    assert refused.output.startswith("error: fabrics.backend.family")


def test_a_superseded_plan_cannot_be_approved_and_the_export_says_so(
    made: dict[str, Any], first: dict[str, Any]
) -> None:
    assert first["result"].exit_code == 0
    old_id = first["id"]
    r = _run(
        "change", str(made["base"]), str(made["grown"]), "--floor-bisection", "0.875",
        "--no-simulate", "--store", "--store-url", made["url"], "--json",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    second = json.loads(r.stdout)["proposal"]
    assert second["supersedes"] == old_id and second["id"] != old_id
    refused = _run("approve", old_id, "--reason", "ok", "--store", made["url"])
    assert refused.exit_code == 2
    assert refused.output.strip().splitlines() == [
        f"error: proposal '{old_id}' is superseded by '{second['id']}': decide on that one"
    ]
    old = made["tmp"] / "export-old"
    assert (
        _run("store", "export-plan", old_id, "-o", str(old), "--store", made["url"]).exit_code == 0
    )
    assert {x["status"] for x in _mop(old)} == {"SUPERSEDED"}
    new = made["tmp"] / "export-new"
    assert (
        _run("store", "export-plan", second["id"], "-o", str(new), "--store", made["url"]).exit_code
        == 0
    )
    assert {(x["status"], x["approver"]) for x in _mop(new)} == {("PROPOSED", "")}
    ok = _run("approve", second["id"], "--reason", "drain window agreed", "--user", "walt",
              "--store", made["url"])  # fmt: skip
    assert ok.exit_code == 0, ok.output
    assert "APPROVED by walt" in ok.output
    approved = made["tmp"] / "export-approved"
    assert (
        _run(
            "store", "export-plan", second["id"], "-o", str(approved), "--store", made["url"]
        ).exit_code
        == 0
    )
    rows = _mop(approved)
    assert {(x["status"], x["approver"], x["reason"]) for x in rows} == {
        ("APPROVED", "walt", "drain window agreed")
    }
    kinds = [json.loads(x)["kind"] for x in (approved / "changes.jsonl").read_text().splitlines()]
    assert kinds == ["change-plan", "proposal", "approval"]
    twice = _run("approve", second["id"], "--reason", "again", "--reject", "--store", made["url"])
    assert twice.exit_code == 2 and "approved already" in twice.output
    unknown = _run("approve", "nope", "--reason", "x", "--store", made["url"])
    assert unknown.exit_code == 2 and "proposal 'nope': not found" in unknown.output
