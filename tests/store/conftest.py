"""Fixtures of the store tests: the 64-GPU two-building design of ``store_fixtures`` written once
per session as ``design -o`` writes it, a small flow-level run on its backend as ``simulate -o``
writes it, and a fresh SQLite store per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from store_fixtures import design_dir, two_building_spec

from clusterloom.export.outdir import output_run
from clusterloom.pipeline import Design
from clusterloom.store import Store, open_store
from clusterloom.write import write_prediction


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
