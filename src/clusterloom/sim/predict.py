"""``predict``: a resolved scenario run on a fabric by either engine, next to its ideal bound.

The stage every caller uses (the commands, and later sweeps, operations, the assistant)::

    scenario = resolve_scenario(spec, topology, seed=0)
    result = predict(topology, scenario)            # or engine="packet"

It runs nothing but the engine: no console, no files. Progress goes through ``progress``, a
callback taking a :class:`Step` as each run starts and then as it goes: the bytes delivered so
far of the bytes of every flow (the flow engine reports every few events, the packet engine
every few thousand), so that a caller can show a percentage and an ETA. Writers
(``export.prediction``, ``sim.flow.results``, ``report.simulation``) read the result; a packet
run is converted into the same per-flow results (:func:`packet_run`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from clusterloom.errors import Problem, SpecError
from clusterloom.sim.registry import Engine
from clusterloom.sim.scenario import Scenario, late_failures

if TYPE_CHECKING:
    from clusterloom.fabric.topology import Topology
    from clusterloom.pipeline import Design
    from clusterloom.sim.flow.run import Compared, Run, Summary
    from clusterloom.sim.packet.run import PacketResult
    from clusterloom.sim.paths import Router
    from clusterloom.sim.traffic import Traffic

__all__ = [
    "FlowPrediction",
    "PacketOutcome",
    "PacketPrediction",
    "Prediction",
    "Step",
    "packet_run",
    "predict",
]

IDEAL = "ideal"


@dataclass(frozen=True)
class Step:
    """Progress of one task (a transport's run, the ideal bound, a sweep): ``done`` of
    ``total`` units of work (bytes delivered of the bytes of every flow); ``total`` 0 when the
    work is not measured. ``note`` says what the task is (``1,024 flows``)."""

    task: str
    done: float = 0.0
    total: float = 0.0
    note: str = ""

    @property
    def fraction(self) -> float | None:
        """Work done, from 0 to 1 (None when not measured)."""
        return min(max(self.done / self.total, 0.0), 1.0) if self.total > 0 else None

    def __str__(self) -> str:
        return f"{self.task}: {self.note}" if self.note else self.task


Progress = Callable[[Step], None]


def _measured(say: Progress, task: str) -> Callable[[float, float], None]:
    """An engine's ``progress(done, total)`` as :class:`Step`s of ``task``."""

    def report(done: float, total: float) -> None:
        say(Step(task, done, total))

    return report


@dataclass(frozen=True)
class FlowPrediction:
    """The flow engine's outcome: one summary per transport, in the scenario's order; the
    ideal bound (the ``ideal`` transport's summary); ``runs`` (per-flow results, for the
    writers) when asked for."""

    scenario: Scenario
    summaries: tuple[Summary, ...]
    ideal: Summary
    runs: tuple[Run, ...] = ()
    #: the comparison every renderer shows (``flow.run.compare``: completion, ratio to the
    #: ideal, the failure reaction each transport assumes), computed once here
    compared: tuple[Compared, ...] = ()

    @property
    def flows(self) -> int:
        return self.summaries[0].flows if self.summaries else 0


@dataclass(frozen=True)
class PacketOutcome:
    """One packet-level run and, when asked for, the flow engine's largest completion time
    of the same transport (``crossval``; None when the flow engine does not implement it)."""

    name: str
    result: PacketResult
    fct_percentiles_ps: NDArray[np.float64]  # p50, p99, max of the finished flows
    flow_level_max_ps: float | None = None


@dataclass(frozen=True)
class PacketPrediction:
    """The packet engine's outcome: one run per transport; the ideal bound from the flow
    engine (every flow at its fair share); the comparison every renderer shows (each
    transport's summary, then the ideal's, as in ``flow.run.compare``). With ``keep_runs``:
    ``runs``, each outcome as per-flow results (:func:`packet_run`), and ``bound``, the ideal
    bound's flow-level run (the per-group bound of the written results)."""

    scenario: Scenario
    outcomes: tuple[PacketOutcome, ...]
    ideal: Summary
    compared: tuple[Compared, ...] = ()
    runs: tuple[Run, ...] = ()
    bound: Run | None = None


Prediction = FlowPrediction | PacketPrediction


def predict(
    design_or_topology: Design | Topology,
    scenario: Scenario,
    engine: Engine | None = None,
    progress: Progress | None = None,
    *,
    keep_runs: bool = False,
    watch_links: NDArray[np.int64] | None = None,
    crossval: bool = False,
    router: Router | None = None,
) -> Prediction:
    """Run ``scenario`` on the backend fabric of a design (or on a topology) with ``engine``
    (the scenario's by default; it must match the engine the scenario was resolved for).

    ``keep_runs`` keeps the per-flow results of either engine (``runs``, for the writers
    of ``export.prediction``; a packet prediction also its flow-level ``bound``);
    ``progress`` receives :class:`Step`s (module docstring);
    ``watch_links`` are directed links whose utilisation the flow engine records over time;
    ``crossval`` also runs each packet transport on the flow engine;
    ``router`` the paths' lookup tables (default built from the topology; a skewed ECMP
    group, ``sim.faultforms.skewed_router``, is one).
    Refuses (``SpecError``) failures that start after every transport finished."""
    topology = _topology(design_or_topology)
    engine = engine or scenario.engine
    if engine != scenario.engine:
        raise SpecError(
            [
                Problem(
                    "engine",
                    f"the scenario was resolved for the {scenario.engine} engine, not {engine}; "
                    f"resolve it with engine='{engine}'",
                )
            ]
        )
    say = progress or (lambda _step: None)
    if engine == "flow":
        return _predict_flow(topology, scenario, say, keep_runs, watch_links, router)
    return _predict_packet(topology, scenario, say, crossval, keep_runs, router)


def _topology(x: Any) -> Topology:
    fabrics = getattr(x, "fabrics", None)
    if fabrics is None:
        return x  # type: ignore[no-any-return]
    for fd in fabrics:
        if fd.name == "backend":
            return fd.topology  # type: ignore[no-any-return]
    raise SpecError([Problem("fabrics.backend", "the design has no backend fabric to simulate")])


def _predict_flow(
    topology: Topology,
    scenario: Scenario,
    say: Progress,
    keep_runs: bool,
    watch_links: NDArray[np.int64] | None,
    given_router: Router | None = None,
) -> FlowPrediction:
    from clusterloom.sim.flow.run import Run, compare, run, summarize
    from clusterloom.sim.flow.transports import transport
    from clusterloom.sim.paths import build_router

    load = scenario.traffic
    assert load is not None
    router = given_router or build_router(topology)
    watch = np.zeros(0, dtype=np.int64) if watch_links is None else watch_links
    summaries, runs, chosen = [], [], []
    for name in scenario.transports:
        tr = transport(name, **scenario.options_of(name))
        chosen.append(tr)
        say(Step(tr.name, note=f"{len(load):,} flows"))
        result = run(
            topology,
            load,
            tr,
            scenario.failures,
            seed=scenario.seed,
            router=router,
            rtol=scenario.rtol,
            watch_links=watch,
            progress=_measured(say, tr.name),
        )
        summaries.append(summarize(tr.name, result, load.barrier))
        if keep_runs:
            runs.append(Run(tr.name, load, result, router.capacity_bytes()))
    if any(sm.finished for sm in summaries):
        late_failures(scenario.failures, [sm.makespan_ps for sm in summaries])
    ideal = next((sm for sm in summaries if sm.transport == IDEAL), None)
    if ideal is None:
        ideal = _summary(_ideal(topology, scenario, say, router))
    compared = compare(summaries, chosen, scenario.failures)
    return FlowPrediction(scenario, tuple(summaries), ideal, tuple(runs), compared)


def _ideal(topology: Topology, scenario: Scenario, say: Progress, router: Any = None) -> Run:
    """The bound: the flow engine's ideal transport on the same traffic and failures."""
    from clusterloom.sim.flow.run import Run, run
    from clusterloom.sim.flow.transports import transport
    from clusterloom.sim.paths import build_router

    assert scenario.traffic is not None
    router = router or build_router(topology)
    say(Step("ideal bound", note=f"{len(scenario.traffic):,} flows"))
    result = run(
        topology,
        scenario.traffic,
        transport(IDEAL),
        scenario.failures,
        seed=scenario.seed,
        router=router,
        rtol=scenario.rtol,
        progress=_measured(say, "ideal bound"),
    )
    return Run(IDEAL, scenario.traffic, result, router.capacity_bytes())


def _summary(r: Run) -> Summary:
    from clusterloom.sim.flow.run import summarize

    return summarize(r.transport, r.result, r.traffic.barrier)


def _predict_packet(
    topology: Topology,
    scenario: Scenario,
    say: Progress,
    crossval: bool,
    keep_runs: bool,
    given_router: Router | None = None,
) -> PacketPrediction:
    from clusterloom.sim.flow.run import compare
    from clusterloom.sim.packet.options import config_from, split_options
    from clusterloom.sim.packet.run import run_packets
    from clusterloom.sim.paths import build_router
    from clusterloom.sim.registry import REGISTRY

    load = scenario.traffic
    assert load is not None
    router = given_router or build_router(topology)
    outcomes, runs = [], []
    for name in scenario.transports:
        say(Step(name, note=f"{len(load):,} flows, packet level"))
        knobs, opts = split_options(scenario.options_of(name))
        cfg = config_from({**dict(scenario.packet), **knobs})
        r = run_packets(
            topology,
            load,
            name,
            scenario.failures,
            seed=scenario.seed,
            options=opts or None,
            config=cfg,
            router=router,
            progress=_measured(say, name),
        )
        fct = r.fct_ps[r.finish_ps >= 0]
        pct = (
            np.percentile(fct, [50, 99, 100]).astype(np.float64) if fct.size else np.full(3, np.nan)
        )
        flow_max = None
        if crossval and "flow" in REGISTRY[name].engines:
            flow_max = _flow_level_max(topology, scenario, name)
        outcomes.append(PacketOutcome(name, r, pct, flow_max))
        runs.append(packet_run(load, r, router.capacity_bytes()))
    bound = _ideal(topology, scenario, say, router)
    ideal = _summary(bound)
    compared = compare([*(_summary(r) for r in runs), ideal], None, scenario.failures)
    kept = (tuple(runs), bound) if keep_runs else ((), None)
    return PacketPrediction(scenario, tuple(outcomes), ideal, compared, *kept)


def packet_run(traffic: Traffic, result: PacketResult, capacity: NDArray[np.float64]) -> Run:
    """A packet run as the per-flow results the writers read (``sim.flow.results.Run``): its
    start and finish times, its end and its event count. The packet engine records no link
    loads, so the run has no load segments (and its utilisation tables no rows) and no
    allocation units; ``capacity`` is the nominal capacity (bytes/s) of every directed link."""
    from clusterloom.sim.flow.engine import SimResult, UnitSet
    from clusterloom.sim.flow.run import Run

    none = np.zeros(0, dtype=np.int64)
    first = np.zeros(1, dtype=np.int64)
    return Run(
        result.transport,
        traffic,
        SimResult(
            start_ps=result.start_ps,
            finish_ps=result.finish_ps,
            units=UnitSet(none, first, none, np.zeros(0)),
            unit_bytes=np.zeros(0),
            unit_replaced_ps=none,
            end_ps=result.end_ps,
            seg_start_ps=none,
            seg_end_ps=none,
            seg_max_util=np.zeros(0),
            watch_links=none,
            seg_ptr=first,
            seg_link=none,
            seg_load=np.zeros(0),
            events=result.events,
            allocations=0,
            alloc_rounds=0,
        ),
        capacity,
    )


def _flow_level_max(topology: Topology, scenario: Scenario, name: str) -> float | None:
    """The flow engine's largest completion time of transport ``name`` (None: none finished)."""
    from clusterloom.sim.flow.run import run
    from clusterloom.sim.flow.transports import transport

    assert scenario.traffic is not None
    r = run(topology, scenario.traffic, transport(name), scenario.failures, seed=scenario.seed)
    done = r.fct_ps[r.finish_ps >= 0]
    return float(done.max()) if done.size else None


#: a flow prediction that is written records the upward fabric links' utilisation over time
#: (the heat map) up to this many links; beyond, only the largest utilisation is kept
WATCH_LINKS_UP_TO = 50_000


def upward_links(topology: Topology, up_to: int = WATCH_LINKS_UP_TO) -> NDArray[np.int64]:
    """The directed upward fabric links (leaf-spine, spine-core) to watch for the heat map, or
    none when the fabric has more than ``up_to`` links."""
    if topology.n_links > up_to:
        return np.zeros(0, dtype=np.int64)
    up: NDArray[np.int64] = 2 * np.flatnonzero(topology.link_tier >= 2)
    return up


def predict_sweep(
    topology: Topology,
    scenario: Scenario,
    tier: str,
    *,
    fail_at: str,
    max_links: int | None = None,
    processes: int | None = None,
    progress: Progress | None = None,
) -> list[Any]:
    """Every transport of a flow ``scenario`` with each link of ``tier`` failed in turn at
    ``fail_at`` (a seeded sample of at most ``max_links``): ``sim.flow.sweep.SweepRow``s."""
    from clusterloom.sim.failures import parse_time
    from clusterloom.sim.flow.sweep import single_link_failures, sweep
    from clusterloom.sim.flow.transports import transport

    if scenario.engine != "flow":
        raise SpecError([Problem("--sweep", "a sweep runs on the flow engine")])
    assert scenario.traffic is not None
    chosen = [transport(n, **scenario.options_of(n)) for n in scenario.transports]
    links = single_link_failures(topology, tier, max_links=max_links, seed=scenario.seed)
    if progress is not None:
        progress(Step("sweep", note=f"{len(links):,} links x {len(chosen)} transports"))
    return sweep(
        topology,
        scenario.traffic,
        chosen,
        links,
        fail_at_ps=parse_time(fail_at, "--fail-at"),
        seed=scenario.seed,
        rtol=scenario.rtol,
        processes=processes,
    )
