"""Designs made for the diff tests, each written as ``design -o`` writes it (once per module):

base      64 x 200G GPUs, rail-optimized, tomahawk3-32x400g, fr2-200g, a hall of 2 rows
          of 4 positions at 1.0 m pitch
grown     the same spec at 128 GPUs
switch    the same with tomahawk4-64x400g switches
oversub   the same with leaves at 2:1
medium    the same with dr2-200g on every link
pitch     the same hall at 2.0 m pitch: the same links, longer cables (re-cabled)
sim-base  base with a scenario (a 256 KB permutation, roce-ecmp and ideal): simulation/
sim-over  oversub with the same scenario
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


def spec(
    accelerators: int = 64,
    switch: str = "tomahawk3-32x400g",
    leaf: float = 1,
    medium: str = "fr2-200g",
    pitch_m: float = 1.0,
    scenario: bool = False,
) -> dict[str, Any]:
    doc = spec_dict(
        accelerators=accelerators,
        port_speed_gbps=200,
        switch=switch,
        leaf_oversubscription=leaf,
        name="diff-hall",
    )
    doc["fabrics"]["backend"]["media"] = {"host_leaf": medium, "leaf_spine": medium}
    template = {"rows": 2, "positions_per_row": 4, "pitch_m": pitch_m, "origin_m": [2.0, 2.0]}
    hall = {"name": "h1", "width_m": 40, "depth_m": 30, "template": template}
    doc["site"] = {"buildings": [{"name": "b1", "halls": [hall]}]}
    if scenario:
        doc["scenario"] = {
            "traffic": "permutation",
            "size": "256KB",
            "transports": ["roce-ecmp", "ideal"],
        }
    return doc


VARIANTS: dict[str, dict[str, Any]] = {
    "base": spec(),
    "grown": spec(accelerators=128),
    "switch": spec(switch="tomahawk4-64x400g"),
    "oversub": spec(leaf=2),
    "medium": spec(medium="dr2-200g"),
    "pitch": spec(pitch_m=2.0),
    "sim-base": spec(scenario=True),
    "sim-over": spec(leaf=2, scenario=True),
}


def write_run(
    doc: dict[str, Any], folder: Path, installed: Path | None = None
) -> tuple[Design, Path]:
    """``doc`` designed (with its scenario predicted) and written to ``folder``; with
    ``installed``, grown from that run directory as ``design --installed`` grows it."""
    from clusterloom.growth import read_installed

    baseline = read_installed(installed) if installed is not None else None
    design = run_design(
        parse_spec(yaml.safe_dump(doc)), compare=False, predict=True, installed=baseline
    )
    p = design.provenance
    with output_run(folder, spec_hash=p.spec_hash, version=p.clusterloom_version) as run:
        write_design(design, run.staging)
    return design, folder
