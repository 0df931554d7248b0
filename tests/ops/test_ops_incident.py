"""The incident record and its timeline page: built from localisations over time, written and
read back unchanged, bad files refused naming the field, every part of the incident on the
page, the same incident the same bytes; the ``ops timeline`` command."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from clusterloom.errors import SpecError
from clusterloom.ops.incident import (
    Chosen,
    Incident,
    incident_from,
    incident_json,
    read_incident,
    read_suspects,
    with_decision,
    with_outcome,
)
from clusterloom.ops.model import FaultKind, Suspect, SuspectKind
from clusterloom.ops.page import render_incident

LINK = "be-p0-leaf0000:swp65s0~be-p0-spine0000:swp0s0"
OTHER = "be-p0-leaf0001:swp65s0~be-p0-spine0000:swp1s0"
T0 = 1_764_600_000_000


def _loc(ts: int, conf: float, congestion: bool = False) -> tuple[int, SimpleNamespace]:
    """A localisation as ops-localise returns it: suspects, anomalies, congestion."""
    suspects = (
        Suspect(SuspectKind.LINK, LINK, conf, FaultKind.GRAY_LINK, 12, 1, evidence=("probes",)),
        Suspect(SuspectKind.LINK, OTHER, 1 - conf, None, 2, 11),
    )
    anomalies = (
        SimpleNamespace(ts_ms=ts, kind="probe-loss", target=LINK, value=0.02 * conf),
        SimpleNamespace(ts_ms=ts, kind="slow-step", target="rank:7", value=1.3),
    )
    return ts, SimpleNamespace(suspects=suspects, anomalies=anomalies, congestion=congestion)


def _incident() -> Incident:
    inc = incident_from("c01f6ab4", [_loc(T0 + 20_000, 0.9), _loc(T0, 0.4, True)])
    chosen = Chosen(
        mitigation=f"drain-link:{LINK}",
        proposal="ops-drain-link-0123456789ab",
        proposed_ms=T0 + 30_000,
        nothing_ps=104_000_000,
        predicted_ps=47_000_000,
    )
    from dataclasses import replace

    from clusterloom.ops.incident import CheckedFigure

    checked = (
        CheckedFigure(chosen.mitigation, "better", "54.8% faster", 104_000_000, 47_000_000),
        CheckedFigure("drain-switch:be-p0-spine0003", "worse", "14% slower", 104_000_000, 119e6),
    )
    inc = replace(inc, chosen=chosen, checked=checked)
    inc = with_decision(inc, approved=True, by="bob", at_ms=T0 + 40_000)
    return with_outcome(inc, measured_ps=49_000_000, at_ms=T0 + 90_000)


def test_an_incident_keeps_the_suspects_over_time_in_order() -> None:
    inc = incident_from("c01f6ab4", [_loc(T0 + 20_000, 0.9), _loc(T0, 0.4, True)])
    assert [o.ts_ms for o in inc.observations] == [T0, T0 + 20_000]
    assert [o.suspects[0].confidence for o in inc.observations] == [0.4, 0.9]
    assert inc.observations[0].congestion and not inc.observations[1].congestion
    assert inc.opened_ms == T0 and len(inc.symptoms) == 4
    assert inc.id.startswith("inc-")
    # the id is the content's: the same localisations, the same id; others, another
    assert incident_from("c01f6ab4", [_loc(T0, 0.4, True), _loc(T0 + 20_000, 0.9)]).id == inc.id
    assert incident_from("c01f6ab4", [_loc(T0, 0.5)]).id != inc.id


def test_an_incident_round_trips_through_its_file(tmp_path: Path) -> None:
    inc = _incident()
    path = tmp_path / "incident.json"
    path.write_text(incident_json(inc))
    back = read_incident(path)
    assert back == inc
    assert incident_json(back) == incident_json(inc)
    assert back.chosen is not None and back.chosen.error == pytest.approx(49 / 47 - 1)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 10**7), st.floats(0, 1, allow_nan=False), st.booleans()),
        min_size=1,
        max_size=6,
    )
)
def test_any_incident_reads_back_equal(obs: list[tuple[int, float, bool]]) -> None:
    import tempfile

    inc = incident_from("d", [_loc(T0 + ts, c, g) for ts, c, g in obs])
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "i.json"
        p.write_text(incident_json(inc))
        assert read_incident(p) == inc


def test_decisions_follow_the_order_of_an_incident() -> None:
    inc = incident_from("d", [_loc(T0, 0.5)])
    with pytest.raises(SpecError, match="no mitigation was proposed"):
        with_decision(inc, approved=True, by="bob", at_ms=T0)
    full = _incident()
    from dataclasses import replace

    assert full.chosen is not None
    rejected = replace(full, chosen=replace(full.chosen, status="rejected"))
    with pytest.raises(SpecError, match="approved"):
        with_outcome(rejected, measured_ps=1, at_ms=T0)
    with pytest.raises(SpecError, match="not ops-other"):
        with_outcome(full, measured_ps=1, at_ms=T0, proposal="ops-other")
    with pytest.raises(SpecError, match="not ops-other"):
        with_decision(full, approved=False, by="eve", at_ms=T0, proposal="ops-other")


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda d: d.pop("schema"), "not an incident"),
        (lambda d: d.pop("opened_ms"), "missing field 'opened_ms'"),
        (lambda d: d["observations"][0]["suspects"][0].update(confidence=1.5), "suspects[0]"),
        (lambda d: d["observations"][0]["suspects"][0].update(kind="gremlin"), "gremlin"),
        (lambda d: d["chosen"].update(colour="red"), "chosen"),
        (lambda d: d.update(symptoms={}), "symptoms"),
    ],
)
def test_a_bad_incident_file_is_refused_naming_the_field(
    tmp_path: Path, edit: object, needle: str
) -> None:
    d = json.loads(incident_json(_incident()))
    edit(d)  # type: ignore[operator]
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(d))
    with pytest.raises(SpecError) as err:
        read_incident(path)
    assert needle in str(err.value)
    path.write_text("{not json")
    with pytest.raises(SpecError, match="not a readable incident"):
        read_incident(path)


def test_the_page_shows_every_part_of_the_incident() -> None:
    inc = _incident()
    page = render_incident(inc)
    for section in ("timeline", "symptoms", "suspects", "checked", "effect"):
        assert f'<section id="{section}">' in page
    for needle in (LINK, OTHER, "probe-loss", "slow-step", "rank:7", "drain-switch", "worse"):
        assert needle in page
    assert "approved by bob" in page
    assert "+4.3%" in page  # measured against predicted
    assert "timeline-chart" in page and "effect-chart" in page
    assert "<script src=" not in page and len(page) > 1_000_000  # plotly.js inlined
    assert render_incident(inc) == page  # the same bytes
    # the suspects' confidences over time are the chart's data
    assert re.search(r'"name":"' + re.escape(LINK) + r'"', page)


def test_a_page_without_a_mitigation_says_so() -> None:
    page = render_incident(incident_from("d", [_loc(T0, 0.5)]))
    assert "Nothing was proposed" in page and "effect-chart" not in page


def test_suspects_files_in_every_form(tmp_path: Path) -> None:
    s = {"kind": "link", "target": LINK, "confidence": 0.8, "fault": "gray-link"}
    forms = {
        "list": [s],
        "one": {"suspects": [s], "congestion": False},
        "many": {"localisations": [{"ts_ms": 5, "suspects": [s]}, {"ts_ms": 9, "suspects": [s]}]},
    }
    for name, doc in forms.items():
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(doc))
        groups = read_suspects(p)
        assert groups[-1][1][0] == Suspect(SuspectKind.LINK, LINK, 0.8, FaultKind.GRAY_LINK)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{**s, "confidence": "high"}]))
    with pytest.raises(SpecError, match=r"suspects\[0\]"):
        read_suspects(bad)
    bad.write_text(json.dumps({"suspects": []}))
    with pytest.raises(SpecError, match="no suspects"):
        read_suspects(bad)


def test_the_timeline_command(tmp_path: Path) -> None:
    from clusterloom.cli.main import app

    path = tmp_path / "incident.json"
    path.write_text(incident_json(_incident()))
    runner = CliRunner()
    page = tmp_path / "page.html"
    r = runner.invoke(app, ["ops", "timeline", str(path), "-o", str(page)])
    assert r.exit_code == 0, r.output
    first = page.read_bytes()
    assert b"Incident inc-" in first
    r = runner.invoke(app, ["ops", "timeline", str(path), "-o", str(page)])
    assert page.read_bytes() == first
    path.write_text("[]")
    r = runner.invoke(app, ["ops", "timeline", str(path), "-o", str(page)])
    assert r.exit_code == 2 and "not an incident" in r.output


@pytest.mark.slow
def test_an_incident_from_synthetic_telemetry_end_to_end(tmp_path: Path) -> None:
    """ops synth's telemetry of a gray uplink, localised at two times, its suspects' mitigations
    checked and the best proposed: the incident holds it all and its page renders."""
    from clusterloom.ops.fabric import load_fabric
    from clusterloom.ops.faults import parse_fault
    from clusterloom.ops.incident import with_mitigation
    from clusterloom.ops.ingest import counter_rates
    from clusterloom.ops.localise import localise
    from clusterloom.ops.mitigate import candidates, check_mitigations, proposal_of
    from clusterloom.ops.synth import synthesize

    fabric = load_fabric("hgx-1k-roce")
    t = fabric.topology
    import numpy as np

    leaf = int(t.link_dst[np.flatnonzero((t.link_tier == 1) & (t.link_src == 0))[0]])
    link = int(np.flatnonzero((t.link_tier == 2) & (t.link_src == leaf))[0])
    label = fabric.link_label(link)
    fault = parse_fault(f"gray-link:{label}@10s*loss=0.02", fabric)
    syn = synthesize(fabric, [fault], duration_s=60.0, interval_s=10.0, seed=0)
    rates = counter_rates(syn.counters, fabric)
    locs = []
    for end_s in (30, 60):
        end = syn.start_ms + end_s * 1000

        def upto(table, end=end):  # type: ignore[no-untyped-def]
            import pyarrow.compute as pc

            return table.filter(pc.less_equal(table["ts_ms"], end))

        loc = localise(
            fabric,
            rates=upto(rates),
            probes=upto(syn.probes),
            collectives=upto(syn.collectives),
        )
        locs.append((end, loc))
    inc = incident_from("hgx-1k-roce", locs)
    assert len(inc.observations) == 2 and inc.symptoms
    top = inc.observations[-1].suspects[0]
    assert top.target == label, inc.observations[-1].suspects[:3]
    suspects = inc.observations[-1].suspects
    checked = check_mitigations(
        fabric,
        suspects,
        candidates(fabric, suspects[:2]),
        transport="mrc-spray",
        hosts=256,
        assumed_rate=0.25,
    )
    proposal = proposal_of(fabric, checked, suspects=suspects[:2])
    assert proposal is not None
    inc = with_mitigation(inc, checked, proposal, syn.start_ms + 70_000)
    page = render_incident(inc)
    assert label in page and proposal.id in page
    path = tmp_path / "incident.json"
    path.write_text(incident_json(inc))
    assert read_incident(path) == inc
