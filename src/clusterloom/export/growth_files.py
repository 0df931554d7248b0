"""The files of a design grown from an installed baseline: ``cabling/change.csv`` (the change
plan as a crew follows it, row by row, with each row's step and state) and ``changes.jsonl``
(the change plan as the one change record of ``clusterloom.changes``, a JSON-lines log that the
design store imports)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from clusterloom.atomic import StrPath, atomic_write
from clusterloom.changes import to_json
from clusterloom.export.cabling_files import write_change

if TYPE_CHECKING:
    from clusterloom.pipeline import Design

__all__ = ["write_growth"]


def write_growth(design: Design, out_dir: StrPath) -> list[Path]:
    """``cabling/change.csv`` (with a cabling) and ``changes.jsonl``; none without growth."""
    g = design.growth
    if g is None:
        return []
    out = Path(out_dir)
    paths = []
    if g.change is not None:
        path = out / "cabling" / "change.csv"
        paths.append(write_change(g.baseline, design, g.change, path, g.plan))
    paths.append(atomic_write(out / "changes.jsonl", to_json(g.plan) + "\n"))
    return paths
