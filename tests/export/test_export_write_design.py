"""write_design: every file, in a fixed order, written atomically, the same bytes for the same
spec; graph files only for fabrics small enough."""

from __future__ import annotations

from pathlib import Path

import pytest

import clusterloom.export as export
from clusterloom import Design
from clusterloom.export import graph as graph_module
from clusterloom.write import write_design
from helpers import TWO_FABRIC_SPEC, design_of

EXPECTED = [
    "design.json",
    "bom.csv",
    "options.csv",
    "netbox/devices.csv",
    "netbox/interfaces.csv",
    "netbox/manufacturers.csv",
    "netbox/device_roles.csv",
    "netbox/device_types.yaml",
    "netbox/IMPORT_ORDER.txt",
    "backend.nodelink.json",
    "backend.graphml",
    "frontend.nodelink.json",
    "frontend.graphml",
    "report.html",
]


def relative(paths: list[Path], root: Path) -> list[str]:
    return [p.relative_to(root).as_posix() for p in paths]


def test_writes_every_file_in_order(demo: Design, tmp_path: Path) -> None:
    out = tmp_path / "new" / "dir"
    paths = write_design(demo, out)
    assert relative(paths, out) == EXPECTED
    assert all(p.is_file() and p.stat().st_size > 0 for p in paths)
    on_disk = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert on_disk == sorted(EXPECTED)  # nothing else: no temporary files left


def test_same_spec_same_bytes(demo: Design, tmp_path: Path) -> None:
    first = write_design(demo, tmp_path / "a")
    second = write_design(design_of(TWO_FABRIC_SPEC), tmp_path / "b")
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes(), a.name


def test_graph_files_skipped_over_the_limit(
    demo: Design, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the frontend (512 links) fits, the backend (2,048 links) does not
    monkeypatch.setattr(graph_module, "GRAPH_LINK_LIMIT", 1000)
    paths = write_design(demo, tmp_path)
    names = relative(paths, tmp_path)
    assert "backend.graphml" not in names and "backend.nodelink.json" not in names
    assert "frontend.graphml" in names
    assert not (tmp_path / "backend.graphml").exists()


def test_rewriting_replaces_files(demo: Design, tmp_path: Path) -> None:
    (tmp_path / "design.json").write_text("stale")
    write_design(demo, tmp_path)
    assert (tmp_path / "design.json").read_text().startswith("{")


def test_public_surface() -> None:
    assert sorted(export.__all__) == export.__all__
    for name in export.__all__:
        assert hasattr(export, name), name
