"""Incidents in the store: recorded with their design (by spec hash, by reference, by their
proposal's design), read back equal, replaced as they grow, refused when malformed or moved to
another design; the migration that adds them goes down and up."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect

from clusterloom.changes import ChangePlan, Proposal
from clusterloom.errors import StoreError
from clusterloom.ops.incident import (
    CheckedFigure,
    Chosen,
    Incident,
    Observation,
    Symptom,
    incident_from_dict,
    incident_json,
    with_decision,
    with_outcome,
)
from clusterloom.ops.model import FaultKind, Suspect, SuspectKind
from clusterloom.pipeline import Design
from clusterloom.store import Store, migrate

T0 = 1_796_083_200_000
LINK = "be-p0-leaf0000:swp33s1~be-p0-spine0000:swp1s1"


def _incident(design: str, proposal: str = "ops-drain-link-0123456789ab") -> Incident:
    sus = Suspect(SuspectKind.LINK, LINK, 0.9, FaultKind.GRAY_LINK, 12, 0, evidence=("probes",))
    return Incident(
        id="inc-0123456789ab",
        design=design,
        opened_ms=T0,
        symptoms=(Symptom(T0 + 5_000, "drops", LINK, 0.01),),
        observations=(Observation(T0 + 10_000, (sus,)),),
        checked=(CheckedFigure(f"drain-link:{LINK}", "better", "faster", 54_000_000, 43_000_000),),
        chosen=Chosen(f"drain-link:{LINK}", proposal, T0 + 20_000, 54_000_000, 43_000_000),
    )


def test_an_incident_goes_with_the_design_of_its_spec(
    store: Store, campus: tuple[Design, Path]
) -> None:
    design, folder = campus
    rec = store.record_design(design, folder)
    inc = _incident(rec.spec_hash)
    got = store.record_incident(incident_json(inc), user="ann")
    assert (got.id, got.design_id, got.status, got.proposal) == (
        inc.id,
        rec.id,
        "proposed",
        inc.chosen.proposal if inc.chosen else None,
    )
    assert (got.opened_ms, got.last_ms) == (T0, T0 + 20_000)
    assert incident_from_dict(store.incident(inc.id).body, "stored") == inc
    assert [r.id for r in store.incidents(rec.id)] == [inc.id]
    assert [r.id for r in store.incidents()] == [inc.id]
    # it grows: decided, then measured; the row is replaced, created kept
    decided = with_decision(inc, approved=True, by="bob", at_ms=T0 + 30_000)
    measured = with_outcome(decided, measured_ps=44_000_000, at_ms=T0 + 90_000)
    store.record_incident(incident_json(decided), user="bob")
    last = store.record_incident(incident_json(measured), user="bob")
    assert (last.status, last.last_ms, last.created, last.user) == (
        "measured",
        T0 + 90_000,
        got.created,
        "ann",
    )
    assert incident_from_dict(store.incident(inc.id).body, "stored") == measured
    assert len(store.incidents()) == 1
    again = store.record_incident(incident_json(measured), user="bob")  # the same: no change
    assert again.updated == last.updated
    # an incident keeps its design
    with pytest.raises(StoreError, match="keeps its design"):
        store.record_incident(incident_json(replace(measured, design="another")))


def test_an_incident_goes_with_its_proposals_design_or_none(
    store: Store, campus: tuple[Design, Path]
) -> None:
    design, folder = campus
    rec = store.record_design(design, folder)
    plan = ChangePlan(id="plan-x", baseline="a", target="b", steps=())
    pid = store.record(Proposal(id="prop-x", plan=plan, author="ann"), design_id=rec.id)
    by_proposal = replace(_incident("not-a-spec-hash", pid), id="inc-by-proposal")
    assert store.record_incident(incident_json(by_proposal)).design_id == rec.id
    loose = replace(_incident("nowhere", "prop-unknown"), id="inc-loose")
    assert store.record_incident(incident_json(loose)).design_id is None
    named = replace(_incident("nowhere"), id="inc-named")
    assert store.record_incident(incident_json(named), design_id=rec.ref).design_id == rec.id
    assert {r.id for r in store.incidents(rec.id)} == {"inc-by-proposal", "inc-named"}
    assert store.incidents()[0].opened_ms == T0
    with pytest.raises(StoreError, match="not found"):
        store.incident("inc-none")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (lambda d: "not json", "not JSON"),
        (lambda d: {**d, "schema": "other"}, "schema"),
        (lambda d: {**d, "id": "../x"}, "id"),
        (lambda d: {**d, "design": ""}, "design"),
        (lambda d: {**d, "opened_ms": "yesterday"}, "opened_ms"),
        (lambda d: {**d, "symptoms": [{"ts_ms": 1.5}]}, r"symptoms\[0\].ts_ms"),
        (lambda d: {**d, "observations": "x"}, "observations"),
        (lambda d: {**d, "chosen": {"status": "approved"}}, "chosen"),
    ],
)
def test_a_malformed_incident_is_refused_naming_the_field(
    store: Store, mutate: object, message: str
) -> None:
    d = json.loads(incident_json(_incident("abc")))
    bad = mutate(d)  # type: ignore[operator]
    with pytest.raises(StoreError, match=message):
        store.record_incident(bad if isinstance(bad, str) else json.dumps(bad))
    assert store.incidents() == []
    with pytest.raises(StoreError, match="user"):
        store.record_incident(incident_json(_incident("abc")), user="")


def test_the_incidents_migration_goes_down_and_up(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite:///{tmp_path / 'm.db'}")
    migrate.upgrade(engine)
    assert migrate.current(engine) == migrate.head() == "0002"
    assert "incidents" in inspect(engine).get_table_names()
    migrate.downgrade(engine, "0001")
    assert "incidents" not in inspect(engine).get_table_names()
    assert "change_records" in inspect(engine).get_table_names()
    migrate.upgrade(engine)
    assert "incidents" in inspect(engine).get_table_names()
    engine.dispose()
