"""Writing a prediction of either engine: the per-flow and utilisation results (Parquet), the
page ``simulation.html`` and the scenario that produced them (``scenario.json``), so the run can
be reproduced from its output alone.

Both engines write the same files with the same schemas (``sim.flow.results``), so one set of
tools reads either. The packet engine records no link loads: its transports have no rows in
``utilisation.parquet`` and ``link_utilisation.parquet`` (the page says so), and the bound of
``groups.parquet`` (``ideal_us``, ``vs_ideal``) is the flow engine's ideal transport on the same
traffic and failures, not a row of its own.
"""

from __future__ import annotations

from pathlib import Path

from clusterloom.atomic import atomic_write
from clusterloom.sim.predict import PacketPrediction, Prediction

__all__ = ["SCENARIO_FILE", "SIMULATION_PAGE", "write_prediction", "write_scenario"]

SCENARIO_FILE = "scenario.json"
SIMULATION_PAGE = "simulation.html"


def write_scenario(prediction: Prediction, directory: Path) -> Path:
    """``scenario.json``: the resolved scenario (``Scenario.to_dict``)."""
    return atomic_write(directory / SCENARIO_FILE, prediction.scenario.to_json())


def write_prediction(prediction: Prediction, directory: Path, title: str) -> list[Path]:
    """Every file of a prediction kept with ``keep_runs``, into ``directory``."""
    from clusterloom.report.simulation import render_simulation
    from clusterloom.sim.flow.results import utilisations, write_results

    runs = list(prediction.runs)
    util = utilisations(runs)
    bound = prediction.bound if isinstance(prediction, PacketPrediction) else None
    written = write_results(directory, runs, util=util, ideal_run=bound)
    page = render_simulation(
        title,
        runs,
        prediction.scenario.failures,
        util=util,
        traffic_label=prediction.scenario.traffic_kind,
        compared=prediction.compared,
        engine=prediction.scenario.engine,
        outcomes=prediction.outcomes if isinstance(prediction, PacketPrediction) else (),
    )
    written.append(atomic_write(directory / SIMULATION_PAGE, page))
    written.append(write_scenario(prediction, directory))
    return written
