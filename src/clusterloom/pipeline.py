"""Runs the stages that exist, in order, and records what ran (provenance) and how long it took.

Stages today: ``workload`` when the spec has a job, then one ``fabric`` stage per fabric, then,
when asked for (``step_engine="flow"|"packet"``) and the spec has a job, ``step-time`` (the
step's scale-out collectives run alone on the designed backend fabric, their times put into the
workload's step: ``clusterloom.sim.steptime``), then ``placement`` and ``cabling`` when the spec
has a site, then, when asked for (``predict=True``)
and the spec has a ``scenario:``, ``predict`` (the scenario on the backend fabric, flow engine,
``clusterloom.sim.predict``). A stage
is a pure function of the spec (and of earlier artifacts); the pipeline only sequences them,
times them and reports progress through a callback so that the library never prints.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

from clusterloom._version import __version__
from clusterloom.design_bom import DesignBom, design_bom
from clusterloom.fabric import FabricDesign, design_fabric, fabric_names
from clusterloom.findings import Finding
from clusterloom.spec import ClusterSpec, spec_hash

if TYPE_CHECKING:
    from clusterloom.cabling import Cabling
    from clusterloom.exec import Executor
    from clusterloom.growth.installed import Installed
    from clusterloom.growth.rework import Growth
    from clusterloom.placement import Placement
    from clusterloom.sim.predict import Prediction
    from clusterloom.sim.steptime import SimulatedCalls
    from clusterloom.workload import WorkloadDesign

Progress = Callable[[str], None]


@dataclass(frozen=True)
class Provenance:
    """What produced a design: enough to reproduce it byte for byte."""

    spec_name: str
    spec_hash: str
    clusterloom_version: str


@dataclass(frozen=True, eq=False)
class Design:
    """The artifact of a whole run: the spec and each stage's result."""

    spec: ClusterSpec
    fabrics: tuple[FabricDesign, ...]
    provenance: Provenance
    timings_s: tuple[tuple[str, float], ...]
    workload: WorkloadDesign | None = None
    placement: Placement | None = None
    cabling: Cabling | None = None
    #: the spec's scenario predicted on the backend fabric (``run_design(predict=True)``)
    prediction: Prediction | None = None
    #: the step's scale-out collective times from a simulator (``step_engine``), which the
    #: workload's step time reads; None for the analytic model
    step_calls: SimulatedCalls | None = None
    #: grown from an installed baseline (``run_design(installed=...)``): the rework it costs
    #: and the change plan
    growth: Growth | None = None

    @property
    def findings(self) -> tuple[Finding, ...]:
        own = self.workload.findings if self.workload is not None else ()
        placed = self.placement.findings if self.placement is not None else ()
        cabled = self.cabling.findings if self.cabling is not None else ()
        return own + tuple(f for fd in self.fabrics for f in fd.findings) + placed + cabled

    @cached_property
    def bom(self) -> DesignBom:
        """The design's one bill of materials (computed once, on first use): switches from
        the fabrics, link media and plant from the cabling when it ran, else the fabrics'
        assumed media as an estimate (``design_bom``)."""
        return design_bom(self.fabrics, self.cabling)

    def fabric(self, name: str) -> FabricDesign:
        for fd in self.fabrics:
            if fd.name == name:
                return fd
        raise KeyError(name)


def stage_names(
    spec: ClusterSpec,
    *,
    place: bool = True,
    cable: bool = True,
    predict: bool = False,
    step_engine: str = "analytic",
) -> tuple[str, ...]:
    """The stages ``run_design`` will run for ``spec``, in order (``place=False`` stops after
    the fabrics even when the spec has a site; ``cable=False`` after placement; ``predict``
    adds the prediction of the spec's scenario, when it has one; a ``step_engine`` other than
    ``analytic`` the step time from that engine, when the spec has a job)."""
    workload = ("workload",) if spec.job is not None else ()
    placement: tuple[str, ...] = ("placement",) if spec.site is not None and place else ()
    if placement and cable:
        placement += ("cabling",)
    predicted = ("predict",) if predict and spec.scenario is not None else ()
    fabrics = tuple(f"fabric:{name}" for name in fabric_names(spec))
    step = ("step-time",) if workload and step_engine != "analytic" else ()
    return workload + fabrics + step + placement + predicted


def run_design(
    spec: ClusterSpec,
    *,
    compare: bool = True,
    place: bool = True,
    cable: bool = True,
    predict: bool = False,
    step_engine: str = "analytic",
    step_transport: str | None = None,
    progress: Progress | None = None,
    installed: Installed | None = None,
    measure: bool = True,
    executor: Executor | None = None,
) -> Design:
    """Run every stage for ``spec``. ``progress`` is called with each stage's name as it starts;
    ``place=False`` skips placement and cabling (``clusterloom fabric``), ``cable=False``
    cabling (``clusterloom place``); ``predict=True`` runs the spec's ``scenario:`` (when it
    has one) on the backend fabric with the flow engine and keeps it as ``Design.prediction``
    (``resolve_scenario`` with no overrides, then ``predict``), with its per-flow results and
    the upward links' utilisation, for ``write_design`` (``simulation/``) and the report.
    ``step_engine="flow"|"packet"`` takes the step's scale-out collective times from that
    engine on the backend fabric (the scenario's failures and first transport, or
    ``step_transport``), as ``clusterloom workload --engine`` does; ``Design.step_calls``
    keeps them. ``installed`` (``growth.read_installed``) grows the design from what is
    installed: fabric link ends kept, installed racks pinned, and (``measure``) the baseline
    rebuilt from the same files to measure the rework and plan the change (``Design.growth``).
    ``executor`` (``clusterloom.exec``) solves placement's hall models and routes cabling's
    halls as tasks on it, with the same result as without."""
    if installed is not None:
        from clusterloom.growth.installed import check_installed

        check_installed(installed, spec)
    if step_engine != "analytic" or step_transport is not None:
        from clusterloom.sim.steptime import check_step_engine

        check_step_engine(step_engine, step_transport)
    fabrics: list[FabricDesign] = []
    timings: list[tuple[str, float]] = []
    workload = None
    placement = None
    cabling = None
    prediction = None
    step_calls = None
    stages = stage_names(spec, place=place, cable=cable, predict=predict, step_engine=step_engine)
    for stage in stages:
        if progress is not None:
            progress(stage)
        start = time.perf_counter()
        if stage == "workload":
            from clusterloom.workload import design_workload

            workload = design_workload(spec)
        elif stage == "placement":
            from clusterloom.placement import place as place_racks

            placement = place_racks(
                spec,
                tuple(fabrics),
                fixed=installed.racks if installed is not None else None,
                executor=executor,
            )
        elif stage == "cabling":
            from clusterloom.cabling import cable as cable_links

            assert placement is not None
            cabling = cable_links(spec, tuple(fabrics), placement, executor=executor)
        elif stage == "step-time":
            from clusterloom.sim.steptime import simulated_workload

            assert workload is not None
            backend = next(fd for fd in fabrics if fd.name == "backend").topology
            workload, step_calls = simulated_workload(
                spec, backend, workload, step_engine, step_transport
            )
        elif stage == "predict":
            from clusterloom.sim.predict import predict as run_prediction
            from clusterloom.sim.predict import upward_links
            from clusterloom.sim.scenario import resolve_scenario

            topology = next(fd for fd in fabrics if fd.name == "backend").topology
            prediction = run_prediction(
                topology,
                resolve_scenario(spec, topology),
                keep_runs=True,
                watch_links=upward_links(topology),
            )
        else:
            name = stage.split(":", 1)[1]
            links = installed.links.get(name) if installed is not None else None
            base = installed.spec if installed is not None else None
            fabrics.append(
                design_fabric(spec, name, compare=compare, installed=links, baseline=base)
            )
        timings.append((stage, time.perf_counter() - start))
    provenance = Provenance(spec.name, spec_hash(spec), __version__)
    design = Design(
        spec,
        tuple(fabrics),
        provenance,
        tuple(timings),
        workload,
        placement,
        cabling,
        prediction,
        step_calls,
    )
    if installed is None or not measure:
        return design
    return _grown(design, installed, place=place, cable=cable, progress=progress)


def _grown(
    design: Design,
    installed: Installed,
    *,
    place: bool,
    cable: bool,
    progress: Progress | None,
) -> Design:
    """``design`` with its growth measured against the baseline, rebuilt from the installed
    files (its own links kept, its racks pinned: the same devices, positions and cables)."""
    from dataclasses import replace

    from clusterloom.growth.rework import measure as measure_growth

    if progress is not None:
        progress("growth")
    start = time.perf_counter()
    baseline = run_design(
        installed.spec, compare=False, place=place, cable=cable, installed=installed, measure=False
    )
    drifted = [f for f in baseline.findings if f.code == "installed-rack-moved"]
    if drifted:  # the baseline's own spec cannot hold its racks where the files put them
        from clusterloom.errors import Problem, SpecError

        raise SpecError([Problem(installed.racks_from, drifted[0].message)])
    from clusterloom.growth.drained import with_drain_findings
    from clusterloom.growth.frozen import with_frozen_fabrics

    growth = measure_growth(design, baseline, installed)
    timings = (*design.timings_s, ("growth", time.perf_counter() - start))
    grown = with_frozen_fabrics(replace(design, growth=growth, timings_s=timings), growth)
    return with_drain_findings(grown, growth.drain_findings)
