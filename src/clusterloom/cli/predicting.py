"""The middle that ``simulate`` and ``packetsim`` share: ``predict`` with progress on stderr
(``cli.progress``) and, with ``-o``, the prediction written into the output directory as one
run (``export.prediction``), the directory locked before any work."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:
    from clusterloom.export.outdir import OutputRun
    from clusterloom.fabric.topology import Topology
    from clusterloom.sim.predict import Prediction
    from clusterloom.sim.scenario import Scenario
    from clusterloom.spec import ClusterSpec

#: opens an output directory as a transaction (``cli.main._writing``)
Writing = Callable[[str, "ClusterSpec", bool], AbstractContextManager["OutputRun"]]


def say_spec_failures(out: Console, scenario: Scenario, given: list[str] | None) -> None:
    """Say that the spec's ``scenario:`` failures are applied when the command line gave none,
    and how to run without them (``--fail none``)."""
    from clusterloom.cli.contract import say

    if given is None and scenario.failure_texts:
        say(
            out,
            "failures (from the spec)",
            "bold yellow",
            f"{', '.join(scenario.failure_texts)} applied; --fail none runs without them",
        )


def predict_into(
    err: Console,
    topology: Topology,
    scenario: Scenario,
    cluster: ClusterSpec,
    *,
    output: str | None,
    force: bool,
    writing: Writing,
    progress: bool,
    crossval: bool = False,
) -> tuple[Prediction, OutputRun | None]:
    """Run ``scenario`` on ``topology`` and, when ``output`` is given, write it there (the
    flow engine then watches the upward links for the heat map); return the prediction and the
    output run (None without ``output``)."""
    from clusterloom.cli.progress import reporter
    from clusterloom.sim.predict import Step, predict, upward_links
    from clusterloom.write import write_prediction

    with contextlib.ExitStack() as stack:
        target = None if output is None else stack.enter_context(writing(output, cluster, force))
        flow_writes = target is not None and scenario.engine == "flow"
        with reporter(err, progress) as report:
            result = predict(
                topology,
                scenario,
                progress=report,
                keep_runs=target is not None,
                watch_links=upward_links(topology) if flow_writes else None,
                crossval=crossval,
            )
            if target is not None and result.runs:
                report(Step(f"writing {output}"))
                write_prediction(result, target.staging, cluster.name)
    return result, target
