"""The data files of a prediction of either engine: the per-flow and utilisation results
(Parquet) and the scenario that produced them (``scenario.json``), so the run can be reproduced
from its output alone; ``clusterloom.write.write_prediction`` adds the page,
``simulation.html``.

Both engines write the same files with the same schemas (``sim.flow.results``), so one set of
tools reads either. The packet engine records no link loads: its transports have no rows in
``utilisation.parquet`` and ``link_utilisation.parquet`` (the page says so), and the bound of
``groups.parquet`` (``ideal_us``, ``vs_ideal``) is the flow engine's ideal transport on the same
traffic and failures, not a row of its own.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from clusterloom.atomic import atomic_write
from clusterloom.sim.predict import PacketPrediction, Prediction

if TYPE_CHECKING:
    from clusterloom.sim.flow.results import Utilisation

__all__ = ["SCENARIO_FILE", "SIMULATION_PAGE", "write_prediction_files", "write_scenario"]

SCENARIO_FILE = "scenario.json"
SIMULATION_PAGE = "simulation.html"


def write_scenario(prediction: Prediction, directory: Path) -> Path:
    """``scenario.json``: the resolved scenario (``Scenario.to_dict``)."""
    return atomic_write(directory / SCENARIO_FILE, prediction.scenario.to_json())


def write_prediction_files(
    prediction: Prediction, directory: Path, util: list[Utilisation]
) -> list[Path]:
    """The results (Parquet, with the runs' utilisation ``util``) and ``scenario.json`` of a
    prediction kept with ``keep_runs``, into ``directory``."""
    from clusterloom.sim.flow.results import write_results

    bound = prediction.bound if isinstance(prediction, PacketPrediction) else None
    written = write_results(directory, list(prediction.runs), util=util, ideal_run=bound)
    written.append(write_scenario(prediction, directory))
    return written
