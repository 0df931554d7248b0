"""Fixtures of the explorer's tests, made for them once per session: a real store (SQLite in a
temporary directory) holding two real recorded designs and a run, and tokens of both roles.

    tight-site-findings   64 GPUs in two small halls h1, h2 of building b1; its cabling
                          checks fail (optical budget, tray fill): findings to show
    web-campus            64 GPUs on two buildings b1/h1, b2/h1, rail-optimized 200G; a
                          flow-level permutation on its backend, two transports, is its run
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient
from web_helpers import Raw, World, asgi_request, bearer

from clusterloom.examples import example_text
from clusterloom.export.outdir import output_run
from clusterloom.pipeline import Design, run_design
from clusterloom.spec import parse_spec
from clusterloom.store import open_store
from clusterloom.web import create_app
from clusterloom.write import write_design, write_prediction
from helpers import spec_dict

__all__ = ["Raw", "World", "asgi_request", "bearer"]  # test_browser.py imports World from here


def campus_spec() -> dict[str, Any]:
    doc = spec_dict(
        accelerators=64, port_speed_gbps=200, switch="tomahawk3-32x400g", name="web-campus"
    )
    doc["fabrics"]["backend"]["media"] = {"host_leaf": "fr2-200g", "leaf_spine": "fr2-200g"}
    template = {"rows": 2, "positions_per_row": 3, "pitch_m": 1.0, "origin_m": [0.5, 1.0]}
    hall = {"name": "h1", "width_m": 40, "depth_m": 30, "template": template}
    doc["site"] = {
        "buildings": [{"name": f"b{b + 1}", "x_m": 200 * b, "halls": [hall]} for b in range(2)]
    }
    return doc


def _design(text: str, folder: Path) -> tuple[Design, Path]:
    design = run_design(parse_spec(text), compare=False)
    p = design.provenance
    with output_run(folder, spec_hash=p.spec_hash, version=p.clusterloom_version) as run:
        write_design(design, run.staging)
    return design, folder


def _run(design: Design, folder: Path) -> Path:
    from clusterloom.sim.predict import predict, upward_links
    from clusterloom.sim.scenario import resolve_scenario

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
    with output_run(folder, spec_hash=design.provenance.spec_hash) as run:
        write_prediction(result, run.staging, design.spec.name)
    return folder


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    from clusterloom.changes import ChangePlan, Proposal, Step

    root = tmp_path_factory.mktemp("web")
    store = open_store(f"sqlite:///{root / 'store.db'}")
    tight_design, tight_dir = _design(example_text("tight-site-findings"), root / "tight")
    campus_design, campus_dir = _design(yaml.safe_dump(campus_spec()), root / "campus")
    tight = store.record_design(tight_design, tight_dir)
    campus = store.record_design(campus_design, campus_dir)
    run = store.record_run(_run(campus_design, root / "sim"), design_id=campus.id)
    step = Step(order=1, action="install", objects=("b1-h1-r01-p01",), reason="a test step")
    plan = ChangePlan(id="plan-web-1", baseline="a", target="b", steps=(step,))
    proposal = store.record(
        Proposal(id="prop-web-1", plan=plan, author="ann", reasons=("test",)),
        design_id=campus.id,
    )
    _, read = store.add_token("rita", "read")
    _, write = store.add_token("walt", "write")
    yield World(store, tight, campus, run, read, write, proposal, root)
    store.close()


@pytest.fixture(scope="session")
def app(world: World) -> Any:
    """The explorer over the world's store, taking bodies of at most 4,096 bytes."""
    return create_app(world.store, max_body=4096)


@pytest.fixture
def app_client(app: Any) -> TestClient:
    """A client with no token."""
    return TestClient(app)


@pytest.fixture
def reader(app: Any, world: World) -> TestClient:
    """A client sending the read token."""
    return TestClient(app, headers=bearer(world.read))
