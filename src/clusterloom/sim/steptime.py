"""Collective times from a simulator, for the workload's step time (issue 16, item 4).

Each collective of a step that leaves the scale-up domain (link class scale-out or mixed) runs
alone on the backend fabric: one occurrence on all its groups at once, as the step issues it,
aggregated and serialized per rank as :func:`clusterloom.sim.traffic.from_step_flows` does, with
the scenario's failures and the chosen transport (the scenario's first). Its completion time
replaces the alpha-beta time of one call; scale-up collectives keep the analytic time (the
fabric model is the backend's). The workload stage takes the times as plain numbers
(``design_workload(spec, call_times=...)``), so it imports no simulator.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from clusterloom.errors import Problem, SpecError
from clusterloom.fabric.topology import Topology
from clusterloom.sim.predict import FlowPrediction, predict
from clusterloom.sim.scenario import Scenario, resolve_scenario
from clusterloom.sim.traffic import from_step_flows
from clusterloom.spec import ClusterSpec
from clusterloom.units import PS_PER_S
from clusterloom.workload.flows import StepFlows
from clusterloom.workload.ops import LinkClass
from clusterloom.workload.stage import WorkloadDesign

__all__ = [
    "STEP_ENGINES",
    "SimulatedCalls",
    "check_step_engine",
    "simulated_call_times",
    "simulated_workload",
]

#: where a step's scale-out collective times come from
STEP_ENGINES = ("analytic", "flow", "packet")


@dataclass(frozen=True)
class SimulatedCalls:
    """Seconds of one call per op index, the transport and engine that gave them, and the ops
    whose flows did not all finish (name, finished, flows)."""

    seconds: dict[int, float]
    source: str
    incomplete: tuple[tuple[str, int, int], ...]


def _one_op(flows: StepFlows, index: int) -> StepFlows:
    """The flows of op ``index`` alone, as op 0 with one occurrence."""
    sel = np.flatnonzero(flows.op == index)
    assert not sel.size or sel[-1] - sel[0] + 1 == sel.size, "flows are grouped by op"
    start = sel[0] if sel.size else 0
    ptr = flows.dep_ptr[sel[0] : sel[-1] + 2] - flows.dep_ptr[start] if sel.size else np.zeros(1)
    idx = flows.dep_idx[int(flows.dep_ptr[start]) : int(flows.dep_ptr[sel[-1] + 1])] - start
    return StepFlows(
        op=np.zeros(sel.size, dtype=np.int32),
        src=flows.src[sel],
        dst=flows.dst[sel],
        nbytes=flows.nbytes[sel],
        step=flows.step[sel],
        port=flows.port[sel],
        dep_ptr=np.asarray(ptr, dtype=np.int64),
        dep_idx=np.asarray(idx, dtype=np.int64),
        per_step=np.ones(1),
    )


def simulated_call_times(
    topology: Topology, scenario: Scenario, w: WorkloadDesign
) -> SimulatedCalls:
    """Each scale-out (or mixed) op of ``w`` run alone on ``topology`` under ``scenario``'s
    engine, failures and first transport (module docstring)."""
    transport = scenario.transports[0]
    only = replace(scenario, transports=(transport,))
    seconds: dict[int, float] = {}
    incomplete = []
    for i, op in enumerate(w.ops):
        if op.link is LinkClass.SCALE_UP:
            continue
        flows = _one_op(w.flows, i)  # flows are grouped by op in op order
        if not len(flows):
            continue
        traffic = from_step_flows(flows, [op], n_hosts=w.layout.world)
        result = predict(topology, replace(only, traffic=traffic))
        if isinstance(result, FlowPrediction):
            sm = result.summaries[0]
            makespan, finished, total = sm.makespan_ps, sm.finished, sm.flows
        else:
            r = result.outcomes[0].result
            real = ~traffic.barrier
            done = r.finish_ps[real] >= 0
            makespan = int(r.finish_ps[real][done].max(initial=0))
            finished, total = int(done.sum()), int(real.sum())
        if finished < total:
            incomplete.append((op.name, finished, total))
        seconds[i] = makespan / PS_PER_S
    return SimulatedCalls(seconds, f"{scenario.engine} engine, {transport}", tuple(incomplete))


def check_step_engine(engine: str, transport: str | None = None) -> None:
    """Refuse an engine name that is not one of :data:`STEP_ENGINES` (``--engine``), and a
    transport given to the analytic model, which runs none (``--transport``)."""
    if engine not in STEP_ENGINES:
        known = ", ".join(STEP_ENGINES)
        raise SpecError([Problem("--engine", f"unknown engine '{engine}'; use {known}")])
    if engine == "analytic" and transport is not None:
        raise SpecError([Problem("--transport", "goes with --engine flow or packet")])


def simulated_workload(
    spec: ClusterSpec,
    topology: Topology,
    w: WorkloadDesign,
    engine: str,
    transport: str | None = None,
) -> tuple[WorkloadDesign, SimulatedCalls | None]:
    """The workload of ``spec`` with its scale-out collective times from ``engine``
    (``analytic``: ``w`` itself; ``flow`` or ``packet``: each collective run alone on
    ``topology``, the backend fabric, under the spec's scenario with its failures and its first
    transport, or ``transport``). ``clusterloom workload --engine`` and ``design --engine``
    both come here."""
    from clusterloom.workload import design_workload

    check_step_engine(engine, transport)
    if engine == "analytic":
        return w, None
    scenario = resolve_scenario(
        spec,
        topology,
        engine="flow" if engine == "flow" else "packet",
        transports=[transport] if transport else None,
    )
    sims = simulated_call_times(topology, scenario, w)
    return design_workload(spec, sims.seconds, sims.source), sims
