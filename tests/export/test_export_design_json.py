"""design.json: stable bytes for the same spec, no timing data, counts that agree with the plan,
the BOM and the topology, and a document that validates against the checked-in schema."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from schema_check import validate

from clusterloom import Design
from clusterloom.export.design_json import (
    SCHEMA_PATH,
    DesignDoc,
    design_document,
    design_json,
    design_schema_json,
    write_design_json,
)
from helpers import TWO_FABRIC_SPEC, design_of


def keys_of(node: Any) -> set[str]:
    if isinstance(node, dict):
        return set(node) | {k for v in node.values() for k in keys_of(v)}
    if isinstance(node, list):
        return {k for v in node for k in keys_of(v)}
    return set()


def test_byte_identical_for_the_same_spec(demo: Design, tmp_path: Path) -> None:
    again = design_of(TWO_FABRIC_SPEC)  # a second run: other timings, same document
    assert again.timings_s != () and demo is not again
    first = write_design_json(demo, tmp_path / "a.json").read_bytes()
    second = write_design_json(again, tmp_path / "b.json").read_bytes()
    assert first == second
    assert first.endswith(b"}\n") and not first.endswith(b"\n\n")
    assert first.startswith(b'{\n  "schema": "clusterloom.design",\n  "schema_version": 2,')


def test_no_timing_or_date_anywhere(demo: Design) -> None:
    text = design_json(demo)
    doc = json.loads(text)
    suspicious = {k for k in keys_of(doc) if re.search(r"time|date|elapsed|_s$|duration", k)}
    assert suspicious == set()
    assert not re.search(r"\d{4}-\d{2}-\d{2}", text)
    for _, seconds in demo.timings_s:
        assert repr(seconds) not in text


def test_top_level_layout(demo: Design) -> None:
    doc = design_document(demo)
    assert list(doc) == [
        "schema",
        "schema_version",
        "provenance",
        "spec",
        "fabrics",
        "bom",
        "placement",
        "findings",
    ]
    assert doc["provenance"] == {
        "spec_name": "demo-1k",
        "spec_hash": demo.provenance.spec_hash,
        "clusterloom_version": demo.provenance.clusterloom_version,
    }
    assert doc["spec"] == demo.spec.model_dump(mode="json")
    assert [f["name"] for f in doc["fabrics"]] == ["backend", "frontend"]
    assert doc["findings"] == [f.to_dict() for f in demo.findings]


@pytest.mark.parametrize("which", ["demo", "ib", "options_design"])
def test_counts_match_plan_bom_and_topology(which: str, request: pytest.FixtureRequest) -> None:
    design: Design = request.getfixturevalue(which)
    doc = design_document(design)
    for fab, fd in zip(doc["fabrics"], design.fabrics, strict=True):
        plan, bom, topo = fd.plan, fd.bom, fd.topology
        assert (fab["tiers"], fab["planes"], fab["speed_gbps"]) == (
            plan.tiers, plan.planes, plan.speed_gbps,
        )  # fmt: skip
        assert fab["hosts"] == plan.hosts and fab["nodes"] == plan.nodes
        assert fab["endpoints_per_plane"] == plan.endpoints
        assert [t["count_per_plane"] for t in fab["switch_tiers"]] == [
            t.count for t in plan.switch_tiers
        ]
        switches = sum(t["count"] for t in fab["switch_tiers"])
        assert switches == bom.switches == fab["bom"]["totals"]["switches"]
        assert switches == topo.n_nodes - plan.hosts
        links = sum(t["count"] for t in fab["links_per_tier"])
        assert links == bom.links == fab["bom"]["totals"]["links"] == topo.n_links
        assert [t["media"] for t in fab["links_per_tier"]] == list(plan.media)
        assert [t["latency_ns"] * 1000 for t in fab["links_per_tier"]] == list(plan.latency_ps)
        # no site: the fabric's lines of the one BOM are its own BOM, media as estimates
        lines = [x for x in doc["bom"]["lines"] if x["fabric"] == fd.name]
        assert [line["quantity"] for line in lines] == [line.quantity for line in bom.lines]
        assert {x["basis"] for x in lines} == {"fabric", "estimate"}
        transceivers = [x["quantity"] for x in lines if x["category"] == "transceiver"]
        assert sum(transceivers) == fab["bom"]["totals"]["transceivers"]
        assert fab["bom"]["totals"]["power_w"] == pytest.approx(bom.power_w, abs=0.05)
        assert fab["bom"]["totals"]["cost_usd"] == round(bom.cost_usd)
        assert fab["bom"]["totals"]["fibers"] == bom.fibers
        cages = sum(n for by_role in fab["bom"]["cages"].values() for n in by_role.values())
        assert cages == sum(n for _, n in bom.cages_per_tier)
        assert fab["bisection_bps_per_plane"] == plan.bisection_bps
        assert fab["ecmp_paths"] == plan.ecmp_paths()
        assert len(fab["options"]) == len(fd.options)
        assert fab["options"][0]["chosen"] is True
        assert fab["options"][0]["switches"] == bom.switches


def test_infeasible_options_carry_a_reason_and_no_figures(options_design: Design) -> None:
    options = design_document(options_design)["fabrics"][0]["options"]
    infeasible = [o for o in options if not o["feasible"]]
    assert infeasible, "this spec has an option that cannot be built"
    for o in infeasible:
        assert o["infeasible_reason"]
        assert o["switches"] is None and o["cost_usd"] is None and o["power_w"] is None
    for o in options:
        if o["feasible"]:
            assert o["infeasible_reason"] is None
            assert isinstance(o["cost_usd"], int)


def test_rounding(ib: Design) -> None:
    """BOM figures are exact to the cent and the milliwatt (version 2: costs were whole
    dollars, which could not add up to a total to the cent)."""
    doc = design_document(ib)
    for line in doc["bom"]["lines"]:
        assert line["cost_usd"] == round(line["cost_usd"], 2)
        assert line["power_w"] == round(line["power_w"], 3)


def test_checked_in_schema_is_current() -> None:
    assert SCHEMA_PATH.read_text(encoding="utf-8") == design_schema_json(), (
        "design.schema.json is out of date: run write_design_schema() "
        "(clusterloom.export.design_json)"
    )


@pytest.mark.parametrize("which", ["demo", "ib", "options_design"])
def test_document_validates_against_the_schema(which: str, request: pytest.FixtureRequest) -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    doc = json.loads(design_json(request.getfixturevalue(which)))
    assert validate(doc, schema) == []
    DesignDoc.model_validate(doc)  # and it reads back into the models


def test_schema_check_catches_bad_documents(demo: Design) -> None:
    """The validator above is not vacuous: it rejects broken documents."""
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    doc = design_document(demo)
    bad = copy.deepcopy(doc)
    del bad["fabrics"][0]["bom"]["totals"]["links"]
    assert any("links" in e for e in validate(bad, schema))
    bad = copy.deepcopy(doc)
    bad["fabrics"][0]["tiers"] = "two"
    assert validate(bad, schema)
    bad = copy.deepcopy(doc)
    bad["fabrics"][0]["findings"][0]["severity"] = "fatal"
    assert validate(bad, schema)
    bad = copy.deepcopy(doc)
    bad["timings"] = {"fabric:backend": 0.1}
    assert validate(bad, schema)
    bad = copy.deepcopy(doc)
    bad["spec"]["fabrics"]["backend"]["oversubscription"]["leaf"] = 0.5
    assert validate(bad, schema)


def test_schema_with_jsonschema_when_installed(demo: Design) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(json.loads(design_json(demo)), schema)


def test_ib_three_tier_document(ib: Design) -> None:
    fab = design_document(ib)["fabrics"][0]
    assert [t["role"] for t in fab["switch_tiers"]] == ["leaf", "spine", "core"]
    assert [t["tier"] for t in fab["links_per_tier"]] == ["host_leaf", "leaf_spine", "spine_core"]
    assert fab["cores_per_group"] >= 1
    assert set(fab["bom"]["cages"]) == {"host_leaf", "leaf_spine", "spine_core"}
