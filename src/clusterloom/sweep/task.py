"""The sweep's task: one run (a spec variant, one transport, one failure set, one seed) through
``sim.predict``, as one row of an Arrow table. A pure function of its inputs (plain JSON: the
variant's spec document and the scenario fields), so its key names the result anywhere."""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from clusterloom.exec import canonical_json

__all__ = ["COLUMNS", "run_point", "schema"]

#: the columns of a sweep's result rows, in order
COLUMNS = (
    "key",
    "variant",
    "transport",
    "traffic",
    "size",
    "failure",
    "seed",
    "flows",
    "finished",
    "makespan_ps",
    "fct_p50_ps",
    "fct_p99_ps",
    "fct_max_ps",
    "ideal_makespan_ps",
    "vs_ideal",
)


@lru_cache(maxsize=4)
def _fabric(spec_json: str) -> tuple[Any, Any]:
    """The spec and its backend topology, built once per worker process and spec."""
    import json

    from clusterloom.fabric import generate, plan_fabric
    from clusterloom.spec import ClusterSpec

    spec = ClusterSpec.model_validate(json.loads(spec_json))
    return spec, generate(plan_fabric(spec))


def _failures(failure: Any) -> list[str]:
    if failure is None or failure == "none":
        return ["none"]
    return [failure] if isinstance(failure, str) else [str(f) for f in failure]


def run_point(inputs: dict[str, Any]) -> Any:
    """Run one point (module docstring); a one-row ``pyarrow.Table`` of :data:`COLUMNS` but
    ``key``."""
    import pyarrow as pa

    from clusterloom.sim.predict import predict
    from clusterloom.sim.scenario import resolve_scenario

    spec, topology = _fabric(canonical_json(inputs["spec"]))
    failures = _failures(inputs.get("failure"))
    scenario = resolve_scenario(
        spec,
        topology,
        engine=inputs["engine"],
        traffic=inputs.get("traffic"),
        size=inputs.get("size"),
        transports=[inputs["transport"]],
        options=tuple(inputs.get("options") or ()),
        failures=failures,
        hosts=inputs.get("hosts"),
        seed=inputs["seed"],
        rtol=inputs.get("rtol") or 0.01,
    )
    result = predict(topology, scenario)
    sm, ideal = result.compared[0].summary, result.ideal
    complete = sm.finished == sm.flows and ideal.finished == ideal.flows and ideal.makespan_ps
    row = {
        "variant": inputs["variant"],
        "transport": sm.transport,
        "traffic": scenario.traffic_kind,
        "size": scenario.size,
        "failure": ";".join(scenario.failure_texts) or "none",
        "seed": scenario.seed,
        "flows": sm.flows,
        "finished": sm.finished,
        "makespan_ps": sm.makespan_ps,
        "fct_p50_ps": sm.fct_p50_ps,
        "fct_p99_ps": sm.fct_p99_ps,
        "fct_max_ps": sm.fct_max_ps,
        "ideal_makespan_ps": ideal.makespan_ps,
        # completion over the ideal bound's on the same traffic and failures (NaN unless
        # every flow of both finished)
        "vs_ideal": sm.makespan_ps / ideal.makespan_ps if complete else math.nan,
    }
    return pa.table({c: [row[c]] for c in COLUMNS[1:]}, schema=schema().remove(0))


def schema() -> Any:
    """The Arrow schema of :data:`COLUMNS` (``key`` first: the driver adds it to a task's
    row, since a key cannot be one of its own inputs)."""
    import pyarrow as pa

    text = {"key", "variant", "transport", "traffic", "size", "failure"}
    floats = {"fct_p50_ps", "fct_p99_ps", "fct_max_ps", "vs_ideal"}
    return pa.schema(
        [
            (c, pa.string() if c in text else pa.float64() if c in floats else pa.int64())
            for c in COLUMNS
        ]
    )
