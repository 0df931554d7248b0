"""Every built-in example designs: the small ones here, through ``clusterloom design`` (exit 0,
no error finding); the flagships, which take minutes each, in ``bench/bench_examples.py``
(recorded in ``bench/RESULTS.md``); the findings example shows the findings it is named for."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from clusterloom.cli.main import app
from clusterloom.examples import example_names

runner = CliRunner()

SMALL = ("hgx-1k-roce", "moe-2k", "fat-tree-k16")
#: minutes each (placement of hundreds to thousands of racks): bench/bench_examples.py
FLAGSHIPS = ("rail-16k", "nvl72-64k", "mrc-131k")
FINDINGS = ("tight-site-findings",)


def _design(name: str, out: Path) -> tuple[int, list[dict[str, Any]], str]:
    result = runner.invoke(app, ["design", "--example", name, "-o", str(out)])
    findings = json.loads((out / "design.json").read_text("utf-8"))["findings"]
    return result.exit_code, findings, result.output


def test_every_example_is_accounted_for() -> None:
    """A new example must be placed in one of the groups (and so tested or benchmarked)."""
    assert sorted(SMALL + FLAGSHIPS + FINDINGS) == list(example_names())


@pytest.mark.parametrize("name", SMALL)
def test_small_example_designs_without_an_error(name: str, tmp_path: Path) -> None:
    code, findings, output = _design(name, tmp_path / "out")
    errors = [f for f in findings if f["severity"] == "error"]
    assert errors == [], output
    assert code == 0, output


def test_the_findings_example_shows_its_findings(tmp_path: Path) -> None:
    """tight-site-findings: sr4-400g pinned between two halls with 0.75 dB connectors (3.71 dB
    against 1.9 dB) and 50 x 50 mm row trays: exit 1 with both errors, the files written."""
    (name,) = FINDINGS
    code, findings, output = _design(name, tmp_path / "out")
    assert code == 1, output
    errors = {f["code"]: f for f in findings if f["severity"] == "error"}
    assert set(errors) == {"optical-budget", "tray-fill"}, output
    assert "64 channels" in errors["optical-budget"]["message"]
    assert "3.71 dB, budget 1.90 dB" in errors["optical-budget"]["message"]
    assert "50 x 50 mm tray" in errors["tray-fill"]["message"]
    assert "it needs 2 such pathways" in errors["tray-fill"]["message"]
    assert (tmp_path / "out" / "cabling" / "cut_sheet.csv").is_file()
