"""``simulate --sweep TIER`` as a sweep: every transport of a resolved flow scenario without
failure and with each link of the tier failed in turn (``sim.flow.sweep.single_link_failures``),
one task per (transport, link) through the executor and, with ``-o``, into the dataset; then
each transport's slowdown against its own run without failure (``sim.flow.sweep.SweepRow``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from clusterloom.exec import Task
from clusterloom.sim.failures import parse_time
from clusterloom.sim.flow.sweep import SweepRow, single_link_failures
from clusterloom.sweep.file import Run
from clusterloom.sweep.run import runs_as_tasks

if TYPE_CHECKING:
    from clusterloom.fabric.topology import Topology
    from clusterloom.sim.scenario import Scenario
    from clusterloom.spec import ClusterSpec

__all__ = ["tier_rows", "tier_tasks"]


def _link(failure: str) -> int:
    return -1 if failure == "none" else int(failure.split(":")[1].split("@")[0])


def tier_tasks(
    spec: ClusterSpec,
    topology: Topology,
    scenario: Scenario,
    tier: str,
    *,
    fail_at: str,
    max_links: int | None = None,
) -> list[tuple[Task, Run]]:
    """The runs (module docstring): per transport the baseline, then each link ascending."""
    parse_time(fail_at, "--fail-at")  # refused here, before anything runs
    links = single_link_failures(topology, tier, max_links=max_links, seed=scenario.seed)
    shared = {
        "variant": "base",
        "traffic": scenario.traffic_kind,
        "size": scenario.size,
        "hosts": scenario.hosts,
        "rtol": scenario.rtol,
        "seed": scenario.seed,
    }
    runs = [
        {
            **shared,
            "transport": t,
            "options": [f"{t}.{k}={v!r}" for k, v in sorted(scenario.options_of(t).items())],
            "failure": f,
        }
        for t in scenario.transports
        for f in ["none", *(f"link:{link}@{fail_at}" for link in links)]
    ]
    return runs_as_tasks(runs, {"base": spec.model_dump(mode="json")}, "flow")


def tier_rows(table: Any, tasks: list[tuple[Task, Run]]) -> list[SweepRow]:
    """One ``SweepRow`` per (transport, failed link) that ran, in the order of ``tasks``; a
    transport whose baseline did not run has none."""
    got = {r["key"]: r for r in (table.to_pylist() if table is not None else [])}
    base = {r["transport"]: got.get(t.key) for t, r in tasks if r["failure"] == "none"}
    rows = []
    for t, run in tasks:
        row, b = got.get(t.key), base.get(run["transport"])
        if run["failure"] == "none" or row is None or b is None:
            continue
        unfinished = row["flows"] - row["finished"]
        stuck = unfinished or b["finished"] < b["flows"] or b["makespan_ps"] == 0
        rows.append(
            SweepRow(
                run["transport"],
                _link(run["failure"]),
                row["makespan_ps"],
                row["fct_p99_ps"],
                b["makespan_ps"],
                math.inf if stuck else row["makespan_ps"] / b["makespan_ps"],
                unfinished,
            )
        )
    return rows
