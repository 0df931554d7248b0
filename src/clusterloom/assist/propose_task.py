"""``propose``'s task: one fabric shape's standard traffic on the flow simulator, as one row.

A pure function of its inputs (a candidate's spec document, the transport, the seed), run by an
executor (``clusterloom.exec``): the spec's backend is sized and generated, and the flow
simulator's standard traffic (``sim.scenario``'s defaults: a permutation of 2 MB over every
accelerator) runs on the transport, next to the ideal bound (``sim.predict``)."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["COLUMNS", "simulate_shape"]

#: the columns of the row, in order
COLUMNS = ("transport", "flows", "finished", "fct_p99_ps", "makespan_ps", "ideal_makespan_ps")


def _ps(value: float) -> int:
    """A time in whole picoseconds; -1 when there is none (no flow finished)."""
    return round(value) if math.isfinite(value) else -1


def simulate_shape(inputs: dict[str, Any]) -> Any:
    """Run the standard traffic (module docstring); a one-row ``pyarrow.Table``."""
    import pyarrow as pa

    from clusterloom.fabric import generate, plan_fabric
    from clusterloom.sim.predict import FlowPrediction, predict
    from clusterloom.sim.scenario import resolve_scenario
    from clusterloom.spec import ClusterSpec

    spec = ClusterSpec.model_validate(inputs["spec"])
    topology = generate(plan_fabric(spec))
    scenario = resolve_scenario(
        spec, topology, transports=[inputs["transport"]], seed=inputs["seed"], failures=["none"]
    )
    result = predict(topology, scenario)
    assert isinstance(result, FlowPrediction)
    sm, ideal = result.summaries[0], result.ideal
    row = {
        "transport": sm.transport,
        "flows": sm.flows,
        "finished": sm.finished,
        "fct_p99_ps": _ps(sm.fct_p99_ps),
        "makespan_ps": _ps(sm.makespan_ps),
        "ideal_makespan_ps": _ps(ideal.makespan_ps),
    }
    types = {"transport": pa.string()}
    schema = pa.schema([(c, types.get(c, pa.int64())) for c in COLUMNS])
    return pa.table({c: [row[c]] for c in COLUMNS}, schema=schema)
