"""``mop.csv``: one row per step in order, the status in capitals on every row, APPROVED
carrying the approver and reason; the predicted impact in words from a step's checks."""

from __future__ import annotations

import csv
import io

import pytest

from clusterloom.assist.mop import MOP_COLUMNS, STATUSES, impact_note, mop_csv
from clusterloom.changes import ChangePlan, Step

PLAN = ChangePlan(
    "plan-1",
    "a",
    "b",
    (
        Step(1, "drain", ("x:1~y:1", "x:2~y:2"), "wave 1", wave=1, checks={"links": 4}),
        Step(
            2,
            "restore",
            ("x:1~y:1",),
            "wave 1",
            wave=1,
            checks={
                "backend:predicted-completion-us": 327.5,
                "backend:predicted-slowdown": 1.25,
                "backend:predicted-fct-p99-us": 300.0,
                "backend:flows-unfinished": 2,
            },
            valid=False,
        ),
    ),
)


@pytest.mark.parametrize("status", STATUSES)
def test_every_row_carries_the_status(status: str) -> None:
    who = ("walt", "window agreed") if status == "approved" else ("", "")
    rows = list(csv.DictReader(io.StringIO(mop_csv(PLAN, status, *who))))
    assert tuple(rows[0]) == MOP_COLUMNS
    assert [r["order"] for r in rows] == ["1", "2"]
    assert {(r["status"], r["approver"], r["reason"]) for r in rows} == {(status.upper(), *who)}
    assert rows[0]["objects"] == "x:1~y:1; x:2~y:2" and rows[0]["checks"] == "links=4"
    assert [r["valid"] for r in rows] == ["yes", "no"]
    assert rows[1]["checks"] == ""  # the predicted figures go to their own column


def test_an_unknown_status_is_refused() -> None:
    with pytest.raises(ValueError, match="status 'APPROVED'"):
        mop_csv(PLAN, "APPROVED")


def test_the_impact_in_words() -> None:
    assert impact_note(PLAN.steps[1].checks) == (
        "backend: completion 327.5 us (x1.25 of the undrained), p99 FCT 300.0 us, "
        "2 flows unfinished"
    )
    assert impact_note({}) == ""
