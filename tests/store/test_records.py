"""The one model of changes in the store: each record type round-trips, approvals name a stored
proposal, the JSON-lines log imports once however often it is imported."""

from __future__ import annotations

from pathlib import Path

import pytest

from clusterloom.changes import (
    Approval,
    ChangePlan,
    Decision,
    Proposal,
    Step,
    append_record,
    read_records,
)
from clusterloom.pipeline import Design
from clusterloom.store import Store, StoreError


def _plan(target: str, plan_id: str = "plan-1") -> ChangePlan:
    return ChangePlan(
        id=plan_id,
        baseline="out-old",
        target=target,
        steps=(
            Step(1, "drain", ("B1-0000001",), "re-patch its leaf", drain=("B1-0000001",)),
            Step(
                2,
                "re-pull",
                ("B1-0000001",),
                "same ends, longer cable",
                live_links=31,
                checks={"growth.drained": 0.97, "leaf": "be-p0-leaf0000", "errors": 0},
                wave=1,
            ),
            Step(3, "install", ("b1-h1-r02-p03 -> b1-h1-r02-p03",), "a new rack", valid=False),
        ),
        summary={"steps": 3, "waves": 1},
    )


def _all(target: str) -> list[ChangePlan | Proposal | Approval | Decision]:
    plan = _plan(target)
    proposal = Proposal("prop-1", plan, "ann", ("grow by one rack", "keeps the spines"))
    return [
        plan,
        proposal,
        Approval("prop-1", "bob", True, "fine by me"),
        Decision("prop-1", {"budget_usd": 12000, "options": ["a", "b"]}, "a", outcome=""),
    ]


def test_each_type_round_trips(store: Store, campus: tuple[Design, Path]) -> None:
    design, run_dir = campus
    rec = store.record_design(design, run_dir)
    records = _all(design.provenance.spec_hash)
    ids = [store.record(r, user="ann") for r in records]
    assert ids[:2] == ["plan-1", "prop-1"]
    for record_id, record in zip(ids, records, strict=True):
        assert store.change_record(record_id) == record
    stored = store.records()
    assert [r["kind"] for r in stored] == ["change-plan", "proposal", "approval", "decision"]
    assert {r["design_id"] for r in stored} == {rec.id}  # by the plan's target spec
    assert [r["proposal"] for r in stored] == [None, "prop-1", "prop-1", "prop-1"]
    assert store.records(kind="approval")[0]["record"]["approver"] == "bob"
    assert len(store.records(design_id=rec.ref)) == 4
    # the same record again changes nothing; the same id with other content is refused
    assert store.record(records[2]) == ids[2] and len(store.records()) == 4
    with pytest.raises(StoreError, match="other content"):
        store.record(_plan("other"))


def test_approve_names_a_stored_proposal(store: Store) -> None:
    plan = _plan("f" * 64)
    store.record(Proposal("prop-9", plan, "ann"))
    approval = store.approve("prop-9", user="carol", reason="reviewed the waves", approved=False)
    got = store.change_record(approval)
    assert got == Approval("prop-9", "carol", False, "reviewed the waves")
    assert store.records(kind="approval")[0]["design_id"] is None
    with pytest.raises(StoreError, match="proposal 'plan-1'"):
        store.approve("plan-1", user="carol", reason="not a proposal")


def test_the_log_imports_once(store: Store, tmp_path: Path) -> None:
    log = tmp_path / "changes.jsonl"
    for r in _all("e" * 64):
        append_record(log, r)
    first = store.import_records(log)
    again = store.import_records(log)
    assert first == again and len(store.records()) == 4
    assert [store.change_record(i) for i in first] == read_records(log)


def test_a_bad_log_line_is_refused_with_its_number(store: Store, tmp_path: Path) -> None:
    log = tmp_path / "changes.jsonl"
    append_record(log, _plan("d" * 64))
    with log.open("a") as fh:
        fh.write('{"kind": "nonsense"}\n')
    with pytest.raises(StoreError, match="line 2: not a change record"):
        store.import_records(log)
    assert store.records() == []  # nothing of a refused log is stored
    with pytest.raises(StoreError, match="cannot be read"):
        store.import_records(tmp_path / "missing.jsonl")
