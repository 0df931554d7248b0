"""Writing a flow prediction: the per-flow and utilisation results (Parquet), the page
``simulation.html`` and the scenario that produced them (``scenario.json``), so the run can be
reproduced from its output alone."""

from __future__ import annotations

from pathlib import Path

from clusterloom.atomic import atomic_write
from clusterloom.sim.predict import FlowPrediction

__all__ = ["SCENARIO_FILE", "write_prediction", "write_scenario"]

SCENARIO_FILE = "scenario.json"


def write_scenario(prediction: FlowPrediction, directory: Path) -> Path:
    """``scenario.json``: the resolved scenario (``Scenario.to_dict``)."""
    return atomic_write(directory / SCENARIO_FILE, prediction.scenario.to_json())


def write_prediction(prediction: FlowPrediction, directory: Path, title: str) -> list[Path]:
    """Every file of a flow prediction kept with ``keep_runs``, into ``directory``."""
    from clusterloom.report.simulation import render_simulation
    from clusterloom.sim.flow.results import utilisations, write_results

    runs = list(prediction.runs)
    util = utilisations(runs)
    written = write_results(directory, runs, util=util)
    page = render_simulation(
        title,
        runs,
        prediction.scenario.failures,
        util=util,
        traffic_label=prediction.scenario.traffic_kind,
        compared=prediction.compared,
    )
    written.append(atomic_write(directory / "simulation.html", page))
    written.append(write_scenario(prediction, directory))
    return written
