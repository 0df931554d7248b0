"""Incidents in the explorer: a design's page lists its incidents, ``/incidents`` lists them
all (or one design's), an incident's page shows its symptoms, its suspects over time, the
mitigations checked and the one chosen with its predicted and measured effect, its charts
come from ``ops.page``'s figures; every name is escaped; unknown or malformed ids are 404."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape
from web_helpers import World

from clusterloom.ops.incident import (
    CheckedFigure,
    Chosen,
    Incident,
    Observation,
    Symptom,
    incident_json,
    with_decision,
    with_outcome,
)
from clusterloom.ops.model import FaultKind, Suspect, SuspectKind

T0 = 1_796_083_200_000
EVIL = '<script>alert("x")</script>'
LINK = "be-p0-leaf0000:swp33s1~be-p0-spine0000:swp1s1"


@pytest.fixture(scope="module")
def incident(world: World) -> Incident:
    """An incident of the campus design with markup in every free-text field, decided and
    measured, and a second one with nothing proposed."""
    early = Suspect(SuspectKind.LINK, LINK, 0.4, None, 3, 5, evidence=(EVIL,))
    late = Suspect(SuspectKind.LINK, LINK, 0.9, FaultKind.GRAY_LINK, 12, 0)
    other = Suspect(SuspectKind.DEVICE, "be-p0-spine0000", 0.2, None)
    inc = Incident(
        id="inc-web000000001",
        design=world.campus.spec_hash,
        opened_ms=T0,
        symptoms=(Symptom(T0 + 5_000, "drops", LINK, 0.01, note=EVIL),),
        observations=(
            Observation(T0 + 10_000, (early, other), congestion=True),
            Observation(T0 + 20_000, (late, other)),
        ),
        checked=(
            CheckedFigure(f"drain-link:{LINK}", "better", "20% faster", 54_000_000, 43_000_000),
            CheckedFigure("drain-switch:be-p0-spine0000", "worse", EVIL, 54_000_000, 70_000_000),
        ),
        chosen=Chosen(f"drain-link:{LINK}", "prop-web-1", T0 + 30_000, 54_000_000, 43_000_000),
        note=EVIL,
    )
    inc = with_decision(inc, approved=True, by=EVIL, at_ms=T0 + 40_000)
    inc = with_outcome(inc, measured_ps=44_000_000, at_ms=T0 + 90_000)
    world.store.record_incident(incident_json(inc), user="ops")
    quiet = Incident(id="inc-web000000002", design=world.campus.spec_hash, opened_ms=T0 - 1000)
    world.store.record_incident(incident_json(quiet), user="ops")
    return inc


def test_the_design_page_and_the_list_show_its_incidents(
    reader: TestClient, world: World, incident: Incident
) -> None:
    page = reader.get(f"/designs/{world.campus.id}")
    assert page.status_code == 200
    assert f'href="/incidents/{incident.id}"' in page.text and "measured" in page.text
    listing = reader.get("/incidents", params={"design": world.campus.id})
    assert listing.status_code == 200
    rows = listing.text.split("<tbody>")[1]
    assert rows.index(incident.id) < rows.index("inc-web000000002")  # latest opened first
    assert "2026-12-01 00:00:00" in listing.text and "90.0" in listing.text
    assert 'href="/changes?design=' in listing.text
    none = reader.get("/incidents", params={"design": world.tight.id})
    assert "No incident recorded for this design" in none.text
    assert reader.get("/incidents", params={"design": "ffffffffffff"}).status_code == 404


def test_an_incidents_page_shows_every_part_escaped(reader: TestClient, incident: Incident) -> None:
    r = reader.get(f"/incidents/{incident.id}")
    assert r.status_code == 200
    text = r.text
    assert EVIL not in text
    assert text.count(str(escape(EVIL))) >= 4  # the note, evidence, reason, who decided
    for table in ("symptoms-table", "suspects-table", "checked-table", "chosen-table"):
        assert f'id="{table}"' in text
    suspects = text.split('id="suspects-table"')[1].split("</table>")[0]
    # two localisations, two suspects each, ranked by confidence at each time
    assert suspects.count("<tr>") == 5
    assert suspects.index("0.40") < suspects.index("0.20") < suspects.index("0.90")
    assert "congestion" in suspects
    chosen = text.split('id="chosen-table"')[1].split("</table>")[0]
    assert "approved by" in chosen and "+2.3%" in chosen  # 44 us measured against 43 us
    assert f"/api/incidents/{incident.id}/charts/timeline" in text
    assert f"/api/incidents/{incident.id}/charts/effect" in text
    quiet = reader.get("/incidents/inc-web000000002").text
    assert "Nothing was proposed" in quiet and "charts/effect" not in quiet


def test_the_api_and_the_charts(reader: TestClient, incident: Incident) -> None:
    listed = reader.get("/api/incidents").json()
    mine = next(r for r in listed if r["id"] == incident.id)
    assert mine["status"] == "measured" and "body" not in mine
    one = reader.get(f"/api/incidents/{incident.id}").json()
    assert one["body"]["id"] == incident.id and one["body"]["note"] == EVIL  # data as stored
    fig = reader.get(f"/api/incidents/{incident.id}/charts/timeline").json()
    names = {t.get("name") for t in fig["data"]}
    assert LINK in names and "drops" in names
    assert all(EVIL not in json.dumps(t) for t in fig["data"])  # hover texts escaped
    effect = reader.get(f"/api/incidents/{incident.id}/charts/effect").json()
    assert [round(v) for v in effect["data"][0]["y"]] == [54, 43, 44]
    assert reader.get("/api/incidents/inc-web000000002/charts/effect").status_code == 404
    assert reader.get(f"/api/incidents/{incident.id}/charts/pie").status_code == 404


@pytest.mark.parametrize("bad", ["inc-nope", "..%2F..%2Fetc", "x" * 80, "%00"])
def test_unknown_or_malformed_ids_are_not_found(
    reader: TestClient, incident: Incident, bad: str
) -> None:
    assert reader.get(f"/incidents/{bad}").status_code == 404
    assert reader.get(f"/api/incidents/{bad}").status_code == 404


def test_incidents_need_a_token(app_client: TestClient, incident: Incident) -> None:
    r = app_client.get(f"/api/incidents/{incident.id}")
    assert r.status_code == 401
