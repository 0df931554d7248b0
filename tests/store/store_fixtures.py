"""A 64-GPU design on a campus of two buildings, made for the store tests, and how to write
it as ``design -o`` does (a transaction with its manifest); the fixtures are in
``conftest.py``.

    two-buildings   b1/h1 ─ HDF ═ backbone ═ HDF ─ b2/h1     64 x 200G, rail-optimized,
                    (2 rows of 3 positions each)                leaves to spines across
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from clusterloom.export.outdir import output_run
from clusterloom.pipeline import Design, run_design
from clusterloom.spec import parse_spec
from clusterloom.write import write_design
from helpers import spec_dict


def two_building_spec(name: str = "store-campus", accelerators: int = 64) -> dict[str, Any]:
    doc = spec_dict(
        accelerators=accelerators, port_speed_gbps=200, switch="tomahawk3-32x400g", name=name
    )
    doc["fabrics"]["backend"]["media"] = {"host_leaf": "fr2-200g", "leaf_spine": "fr2-200g"}
    template = {"rows": 2, "positions_per_row": 3, "pitch_m": 1.0, "origin_m": [0.5, 1.0]}
    hall = {"name": "h1", "width_m": 40, "depth_m": 30, "template": template}
    doc["site"] = {
        "buildings": [{"name": f"b{b + 1}", "x_m": 200 * b, "halls": [hall]} for b in range(2)]
    }
    return doc


def design_dir(doc: dict[str, Any], folder: Path) -> tuple[Design, Path]:
    design = run_design(parse_spec(yaml.safe_dump(doc)), compare=False)
    p = design.provenance
    with output_run(folder, spec_hash=p.spec_hash, version=p.clusterloom_version) as run:
        write_design(design, run.staging)
    return design, folder
