"""A whole run written out: the data files (``export``) and the pages (``report``), composed
here so that neither package imports the other (``tests/test_layering.py``).

``write_design`` is what ``clusterloom design -o`` writes; ``write_prediction`` what
``simulate -o`` and ``packetsim -o`` write (and ``simulation/`` of a design with a scenario).
Every file is written atomically; the output directory as a transaction is ``export.outdir``'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from clusterloom.atomic import StrPath, atomic_write
from clusterloom.pipeline import Design
from clusterloom.sim.predict import PacketPrediction, Prediction

if TYPE_CHECKING:
    from clusterloom.sweep.summary import SweepCell

__all__ = ["write_design", "write_prediction", "write_sweep_page"]


def write_prediction(prediction: Prediction, directory: Path, title: str) -> list[Path]:
    """Every file of a prediction kept with ``keep_runs``, into ``directory``: the results and
    ``scenario.json`` (``export.prediction``) and the page ``simulation.html``, both drawn
    from one computation of the runs' utilisation."""
    from clusterloom.export.prediction import SIMULATION_PAGE, write_prediction_files
    from clusterloom.report.simulation import render_simulation
    from clusterloom.sim.flow.results import utilisations

    runs = list(prediction.runs)
    util = utilisations(runs)
    written = write_prediction_files(prediction, directory, util)
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
    return written


def write_design(design: Design, out_dir: StrPath, *, flows: bool = False) -> list[Path]:
    """Every file of ``design`` into ``out_dir``: the exports (``export.write_exports``, in its
    order), with a prediction (``run_design(predict=True)`` on a spec with a ``scenario:``) its
    files in ``simulation/`` (the same files as ``clusterloom simulate -o``), and
    ``report.html`` last. Raises ``OutputError`` when a file cannot be written."""
    from clusterloom.export import write_exports
    from clusterloom.report import render_report

    out = Path(out_dir)
    paths = write_exports(design, out, flows=flows)
    if design.prediction is not None and design.prediction.runs:
        paths += write_prediction(design.prediction, out / "simulation", design.spec.name)
    paths.append(atomic_write(out / "report.html", render_report(design)))
    return paths


def write_sweep_page(
    directory: StrPath, title: str, cells: Sequence[SweepCell], runs: int, failed: int
) -> Path:
    """``sweep.html`` in a sweep's directory (``report.sweep``): its cells over seeds."""
    from clusterloom.report.sweep import render_sweep

    return atomic_write(Path(directory) / "sweep.html", render_sweep(title, cells, runs, failed))
