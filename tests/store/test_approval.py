"""Approval gates (issue 21, item 4): a proposal's status is computed from the store's records
(proposed, approved, rejected, superseded), a decision is made once, a superseded proposal is
refused, and greenfield proposals (``baseline="greenfield"``, no steps) chain the same way;
hypothesis drives random sequences of proposals and decisions against a model of the rules."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from clusterloom.changes import Approval, ChangePlan, Proposal, append_record
from clusterloom.store import Store, StoreError


def _proposal(pid: str, supersedes: str = "", baseline: str = "greenfield") -> Proposal:
    plan = ChangePlan(id=f"plan-{pid}", baseline=baseline, target="c" * 64, steps=())
    return Proposal(pid, plan, "ann", ("a test",), supersedes=supersedes)


def test_a_proposal_goes_from_proposed_to_approved_once(store: Store) -> None:
    store.record(_proposal("g1"))
    assert store.proposal_status("g1") == "proposed"
    assert store.decision("g1") is None
    store.approve("g1", user="bob", reason="the spines have room")
    assert store.proposal_status("g1") == "approved"
    assert store.decision("g1") == Approval("g1", "bob", True, "the spines have room")
    for approved in (True, False):
        with pytest.raises(StoreError, match="'g1' is approved already"):
            store.approve("g1", user="carol", reason="again", approved=approved)
    assert len(store.records(kind="approval")) == 1


def test_a_rejected_proposal_stays_rejected(store: Store) -> None:
    store.record(_proposal("g2"))
    store.approve("g2", user="bob", reason="too many waves", approved=False)
    assert store.proposal_status("g2") == "rejected"
    with pytest.raises(StoreError, match="rejected already"):
        store.approve("g2", user="bob", reason="on second thought")


def test_an_approval_of_a_superseded_proposal_is_refused(store: Store) -> None:
    store.record(_proposal("g3"))
    store.approve("g3", user="bob", reason="fine")
    store.record(_proposal("g4", supersedes="g3"))  # a re-run supersedes even an approved one
    assert store.proposal_status("g3") == "superseded"
    assert store.proposal_status("g4") == "proposed"
    store.record(_proposal("g5", supersedes="g4"))
    with pytest.raises(StoreError, match="'g4' is superseded by 'g5'"):
        store.approve("g4", user="bob", reason="fine")
    assert store.proposal_status("g4") == "superseded"
    store.approve("g5", user="bob", reason="fine")
    assert [store.proposal_status(p) for p in ("g3", "g4", "g5")] == [
        "superseded",
        "superseded",
        "approved",
    ]


def test_an_imported_approval_of_a_superseded_proposal_is_refused(
    store: Store, tmp_path: Path
) -> None:
    """The refusal holds whatever path the approval takes (``import-records`` included)."""
    store.record(_proposal("g6"))
    store.record(_proposal("g7", supersedes="g6"))
    log = tmp_path / "changes.jsonl"
    append_record(log, Approval("g6", "mallory", True, "sneaked in"))
    with pytest.raises(StoreError, match="superseded"):
        store.import_records(log)
    assert store.records(kind="approval") == []


def test_refusals_name_what_to_fix(store: Store) -> None:
    with pytest.raises(StoreError, match="proposal 'nope': not found"):
        store.proposal_status("nope")
    store.record(_proposal("g8"))
    with pytest.raises(StoreError, match="give the reason"):
        store.approve("g8", user="bob", reason="  ")
    assert store.proposal_status("g8") == "proposed"


def test_the_open_proposal_of_a_change_is_the_newest_not_superseded(store: Store) -> None:
    assert store.open_proposal("greenfield", "c" * 64) is None
    store.record(_proposal("h1"))
    store.record(_proposal("x1", baseline="other"))
    assert store.open_proposal("greenfield", "c" * 64) == "h1"
    store.record(_proposal("h2", supersedes="h1"))
    assert store.open_proposal("greenfield", "c" * 64) == "h2"
    assert store.open_proposal("other", "c" * 64) == "x1"


Act = tuple[str, int, bool]
_RUNS = itertools.count()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    acts=st.lists(
        st.tuples(st.sampled_from(["propose", "decide"]), st.integers(0, 5), st.booleans()),
        max_size=12,
    )
)
def test_status_follows_the_rules_over_any_sequence(store: Store, acts: list[Act]) -> None:
    """A model of the rules: a new proposal supersedes proposal ``k`` (or none); a decision
    on an undecided, unsuperseded proposal is recorded, any other is refused. (One store for
    every example: each example's ids are its own.)"""
    run = next(_RUNS)
    status: dict[str, str] = {}
    ids: list[str] = []
    for n, (act, k, flag) in enumerate(acts):
        if act == "propose":
            target = ids[k % len(ids)] if ids and flag else ""
            pid = f"r{run}-p{n}"
            store.record(_proposal(pid, supersedes=target))
            ids.append(pid)
            status[pid] = "proposed"
            if target:
                status[target] = "superseded"
        elif ids:
            pid = ids[k % len(ids)]
            if status[pid] == "proposed":
                store.approve(pid, user="u", reason="r", approved=flag)
                status[pid] = "approved" if flag else "rejected"
            else:
                with pytest.raises(StoreError):
                    store.approve(pid, user="u", reason="r", approved=flag)
        for pid in ids:
            assert store.proposal_status(pid) == status[pid], (pid, acts[: n + 1])
