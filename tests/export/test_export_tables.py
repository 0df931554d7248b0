"""bom.csv and options.csv: one row per BOM line and per option, rounded like design.json."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from clusterloom import Design
from clusterloom.export.bom_csv import (
    BOM_COLUMNS,
    OPTION_COLUMNS,
    write_bom_csv,
    write_options_csv,
)


def read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def test_bom_csv(demo: Design, tmp_path: Path) -> None:
    """No site: the fabrics' BOM lines, switches as such and media as an estimate, then the
    total row (``length_m`` and ``basis`` are new columns; costs to the cent, so that the total
    row adds up)."""
    header, rows = read(write_bom_csv(demo, tmp_path / "bom.csv"))
    assert header == list(BOM_COLUMNS) == [
        "fabric", "tier", "category", "item", "length_m", "quantity", "unit_power_w",
        "power_w", "unit_cost_usd", "cost_usd", "basis",
    ]  # fmt: skip
    *rows, total = rows
    lines = [line for fd in demo.fabrics for line in fd.bom.lines]
    assert len(rows) == len(lines)
    for row, line in zip(rows, lines, strict=True):
        assert (row["fabric"], row["tier"], row["category"], row["item"]) == (
            line.fabric, line.tier, line.category, line.item,
        )  # fmt: skip
        assert int(row["quantity"]) == line.quantity
        assert float(row["power_w"]) == pytest.approx(line.power_w, abs=0.05)
        assert float(row["cost_usd"]) == pytest.approx(line.cost_usd, abs=0.005)
        assert row["basis"] == ("fabric" if line.category == "switch" else "estimate")
    assert total["category"] == "total" and total["basis"] == "estimate"
    assert "estimate (assumed media, before cabling)" in total["item"]
    assert float(total["power_w"]) == pytest.approx(
        sum(fd.bom.power_w for fd in demo.fabrics), abs=0.001
    )
    assert float(total["cost_usd"]) == pytest.approx(
        sum(fd.bom.cost_usd for fd in demo.fabrics), abs=0.005
    )


def test_options_csv(options_design: Design, tmp_path: Path) -> None:
    header, rows = read(write_options_csv(options_design, tmp_path / "options.csv"))
    assert header == list(OPTION_COLUMNS)
    options = options_design.fabrics[0].options
    assert len(rows) == len(options)
    assert rows[0]["label"] == "as specified" and rows[0]["chosen"] == "true"
    assert [r["chosen"] for r in rows[1:]] == ["false"] * (len(rows) - 1)
    infeasible = [r for r in rows if r["feasible"] == "false"]
    assert infeasible
    for r in infeasible:
        assert r["infeasible_reason"] and r["switches"] == "" and r["cost_usd"] == ""
    for r, o in zip(rows, options, strict=True):
        if r["feasible"] == "true":
            assert int(r["switches"]) == o.switches and int(r["cost_usd"]) == round(o.cost_usd)
