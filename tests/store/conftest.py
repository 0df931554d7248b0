"""Fixtures of the store tests, made for them: a 64-GPU design on a campus of two buildings,
written once per session as ``design -o`` writes it (a transaction with its manifest), and a
small flow-level run on its backend fabric as ``simulate -o`` writes it.

    two-buildings   b1/h1 ─ HDF ═ backbone ═ HDF ─ b2/h1     64 x 200G, rail-optimized,
                    (2 rows of 3 positions each)                leaves to spines across
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from clusterloom.export.outdir import output_run
from clusterloom.pipeline import Design, run_design
from clusterloom.spec import parse_spec
from clusterloom.store import Store, open_store
from clusterloom.write import write_design, write_prediction
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


@pytest.fixture(scope="session")
def campus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Design, Path]:
    return design_dir(two_building_spec(), tmp_path_factory.mktemp("design") / "out")


@pytest.fixture(scope="session")
def campus_run(campus: tuple[Design, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A permutation on the campus's backend, two transports, as ``simulate -o`` writes it."""
    from clusterloom.sim.predict import predict, upward_links
    from clusterloom.sim.scenario import resolve_scenario

    design, _ = campus
    topology = design.fabric("backend").topology
    scenario = resolve_scenario(
        design.spec,
        topology,
        engine="flow",
        traffic="permutation",
        size="256KB",
        transports=["roce-ecmp", "ideal"],
    )
    result = predict(topology, scenario, keep_runs=True, watch_links=upward_links(topology))
    folder = tmp_path_factory.mktemp("run") / "sim"
    with output_run(folder, spec_hash=design.provenance.spec_hash) as run:
        write_prediction(result, run.staging, design.spec.name)
    return folder


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    yield opened
    opened.close()
