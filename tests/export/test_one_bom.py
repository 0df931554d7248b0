"""One bill of materials (``Design.bom``): with a site its media are the cut sheet's, and
``bom.csv``, ``design.json``, ``report.html`` and the terminal give one total, the sum of its
lines; without one, the media are an estimate and say so everywhere.

::

    row 1  [compute] [compute]        two nodes, 16 host-leaf links
    row 2  [leaves ] [spine  ]        16 leaf-spine links; some links leave their row
"""

from __future__ import annotations

import csv
import json
import re
from collections import Counter
from pathlib import Path

import pytest
from export_specs import SITE_SPEC
from typer.testing import CliRunner

from clusterloom import Design
from clusterloom.cabling.bom import cabling_bom
from clusterloom.cli.main import app
from clusterloom.design_bom import ESTIMATE
from clusterloom.write import write_design
from helpers import TWO_FABRIC_SPEC, design_of

TIERS = {"1": "host_leaf", "2": "leaf_spine", "3": "spine_core"}


def rows_of(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def sited() -> Design:
    design = design_of(SITE_SPEC)
    assert design.cabling is not None
    return design


@pytest.fixture(scope="module")
def written(sited: Design, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sited")
    write_design(sited, out)
    return out


def _cents(value: str | float) -> int:
    return round(float(value) * 100)


def _mw(value: str | float) -> int:
    return round(float(value) * 1000)


def test_bom_media_are_the_cut_sheet_s(written: Path) -> None:
    """Per fabric, link tier and medium: one cable per cut-sheet row of an assembly, two
    transceivers per row of an optic; no medium the cut sheet does not have, no estimate."""
    cut = rows_of(written / "cabling" / "cut_sheet.csv")
    assert cut
    links = Counter((r["fabric"], TIERS[r["tier"]], r["medium"], r["kind"]) for r in cut)
    *bom, total = rows_of(written / "bom.csv")
    assert total["category"] == "total" and total["basis"] == "cabling"
    assert {r["basis"] for r in bom} == {"fabric", "cabling"}
    media: Counter[tuple[str, str, str]] = Counter()
    for r in bom:
        if r["category"] in ("cable", "transceiver"):
            media[(r["fabric"], r["tier"], r["item"])] += int(r["quantity"])
    expected: Counter[tuple[str, str, str]] = Counter()
    for (fabric, tier, medium, kind), n in links.items():
        expected[(fabric, tier, medium)] += n if kind in ("dac", "aec", "aoc") else 2 * n
    assert media == expected
    # the cabling file is the cabling rows of bom.csv, nothing else
    assert rows_of(written / "cabling" / "bom.csv") == [r for r in bom if r["basis"] == "cabling"]


def test_one_total_everywhere(sited: Design, written: Path) -> None:
    doc = json.loads((written / "design.json").read_text(encoding="utf-8"))
    assert doc["schema_version"] == 2 and doc["bom"]["basis"] == "cabling"
    cost, power = _cents(doc["bom"]["totals"]["cost_usd"]), _mw(doc["bom"]["totals"]["power_w"])
    assert (cost, power) == (sited.bom.cost_cents, sited.bom.power_mw)
    total = rows_of(written / "bom.csv")[-1]
    assert (_cents(total["cost_usd"]), _mw(total["power_w"])) == (cost, power)
    page = (written / "report.html").read_text(encoding="utf-8")
    row = re.search(r'<tr class="total" id="bom-design-total">(.*?)</tr>', page)
    assert row is not None
    assert f"${cost / 100:,.2f}" in row.group(1) and f"{power / 1000:,.1f} W" in row.group(1)
    assert ESTIMATE not in page
    cli = CliRunner().invoke(app, ["design", str(_spec(written)), "-o", str(written / "o")])
    assert cli.exit_code == 0, cli.output
    said = " ".join(cli.output.split())
    assert f"${cost / 100:,.2f}, {power / 1000:,.1f} W" in said
    assert "as cabled" in said and "estimate" not in said.replace("(an estimate)", "")


def _spec(out: Path) -> Path:
    path = out / "spec.yaml"
    path.write_text(SITE_SPEC, encoding="utf-8")
    return path


def test_totals_are_the_sums_of_their_lines(sited: Design, written: Path) -> None:
    bom = sited.bom
    # closed form: the fabric's switches plus every line cabling priced, to the cent
    switches = sum(line.cost_usd for fd in sited.fabrics for line in fd.bom.lines
                   if line.category == "switch")  # fmt: skip
    assert sited.cabling is not None
    cabled = sum(x.cost_usd for x in cabling_bom(sited.cabling))
    assert bom.cost_cents == round((switches + cabled) * 100)
    optical = sited.cabling.realized() & ~sited.cabling.media.assembly[sited.cabling.medium]
    assert bom.transceivers == 2 * int(optical.sum())
    # each document's total is the sum of its own lines
    doc = json.loads((written / "design.json").read_text(encoding="utf-8"))
    lines = doc["bom"]["lines"]
    assert sum(_cents(x["cost_usd"]) for x in lines) == _cents(doc["bom"]["totals"]["cost_usd"])
    assert sum(_mw(x["power_w"]) for x in lines) == _mw(doc["bom"]["totals"]["power_w"])
    for x in lines:
        assert _cents(x["cost_usd"]) == x["quantity"] * _cents(x["unit_cost_usd"])
    *rows, total = rows_of(written / "bom.csv")
    assert sum(_cents(r["cost_usd"]) for r in rows) == _cents(total["cost_usd"])
    assert sum(_mw(r["power_w"]) for r in rows) == _mw(total["power_w"])
    # the fabrics' shares and the shared plant make the total
    shares = [fab["bom"]["totals"] for fab in doc["fabrics"]]
    plant = [x for x in lines if x["fabric"] is None]
    assert plant and {x["category"] for x in plant} <= {"trunk", "splice", "patch-panel"}
    assert sum(_cents(s["cost_usd"]) for s in shares) + sum(
        _cents(x["cost_usd"]) for x in plant
    ) == _cents(doc["bom"]["totals"]["cost_usd"])


def test_fabric_only_design_labels_its_media_an_estimate(tmp_path: Path) -> None:
    design = design_of(TWO_FABRIC_SPEC)
    assert design.cabling is None and not design.bom.cabled
    write_design(design, tmp_path)
    doc = json.loads((tmp_path / "design.json").read_text(encoding="utf-8"))
    assert doc["bom"]["basis"] == "estimate" and doc["bom"]["label"] == ESTIMATE
    media = [x for x in doc["bom"]["lines"] if x["category"] != "switch"]
    assert media and {x["basis"] for x in media} == {"estimate"}
    *rows, total = rows_of(tmp_path / "bom.csv")
    assert total["item"] == ESTIMATE
    assert {r["basis"] for r in rows if r["category"] != "switch"} == {"estimate"}
    assert _cents(total["cost_usd"]) == _cents(doc["bom"]["totals"]["cost_usd"])
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert f"Bill of materials &mdash; {ESTIMATE}" in page
    spec = tmp_path / "spec.yaml"
    spec.write_text(TWO_FABRIC_SPEC, encoding="utf-8")
    cli = CliRunner().invoke(app, ["fabric", str(spec)])
    said = " ".join(cli.output.split())
    assert f"bill of materials, {ESTIMATE}" in said
    assert f"${design.bom.cost_cents / 100:,.2f}" in said
