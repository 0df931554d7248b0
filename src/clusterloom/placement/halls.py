"""The hall models of a placement, mapped over an executor (``clusterloom.exec``).

Once the campus model has put every group in a hall, the halls' CP-SAT models do not depend on
each other: :func:`solve_halls` solves them in hall order, serially (no executor, or one hall)
or as one task per hall. The result is the same either way, byte for byte: a hall model is
built from the same inputs by the same code, and solved with the site's own solver settings
(``site.solver``: its seed, its workers, one by default, and a deterministic time limit, never
wall time), so where it runs does not change what it finds.

A task's inputs are plain JSON: the hall, its units and pins, and the path and SHA-256 of one
file holding what every hall shares (the floor, the demand, the site, the unit links; pickled
once per placement into a temporary directory). The hall's starts and figures come back as an
Arrow table (the figures in its schema metadata). So the workers must see that file: a local
pool or a Ray on this machine (or a cluster sharing the temporary directory). A hall whose
task fails is solved again here, so its error (an infeasible hall, ``SpecError`` naming it)
is raised as in a serial run.
"""

from __future__ import annotations

import json
import tempfile
from typing import TYPE_CHECKING, Any

from clusterloom.exec import Task, read_shared, write_shared
from clusterloom.placement.solve import SolveStats, place_hall

if TYPE_CHECKING:
    from clusterloom.exec import Executor
    from clusterloom.placement.demand import Demand
    from clusterloom.placement.floor import FloorPlan
    from clusterloom.spec.site import SiteSpec

__all__ = ["hall_task", "solve_halls"]

HallJob = tuple[int, list[int], dict[int, int]]  # hall, its units, its pinned units
# ``hard``: the pinned units that stay even when ``soft`` (in a frozen hall or row)
Solved = tuple[dict[int, int], SolveStats]


def hall_task(inputs: dict[str, Any]) -> Any:
    """One hall model (the task): its units' starts and its ``SolveStats``."""
    import pyarrow as pa

    floor, demand, site, links = read_shared(inputs)
    pins = {int(u): int(at) for u, at in inputs["pins"]}
    starts, stats = place_hall(
        floor,
        demand,
        site,
        inputs["hall"],
        list(inputs["units"]),
        links,
        pins,
        inputs["soft"],
        frozenset(inputs["hard"]),
    )
    meta = {
        "stats": json.dumps([stats.name, stats.status, stats.units, stats.objective, stats.bound])
    }
    units = sorted(starts)
    return pa.table(
        {
            "unit": pa.array(units, pa.int64()),
            "start": pa.array([starts[u] for u in units], pa.int64()),
        }
    ).replace_schema_metadata(meta)


def _solved(table: Any) -> Solved:
    name, status, units, objective, bound = json.loads(table.schema.metadata[b"stats"])
    starts = dict(zip(table["unit"].to_pylist(), table["start"].to_pylist(), strict=True))
    return starts, SolveStats(name, status, units, objective, bound)


def solve_halls(
    floor: FloorPlan,
    demand: Demand,
    site: SiteSpec,
    jobs: list[HallJob],
    links: dict[tuple[int, int], int],
    soft: bool,
    executor: Executor | None = None,
    hard: frozenset[int] = frozenset(),
) -> list[Solved]:
    """Each hall job's starts and figures, in the order of ``jobs`` (module docstring)."""
    if executor is None or len(jobs) < 2:
        return [
            place_hall(floor, demand, site, h, units, links, pins, soft, hard)
            for h, units, pins in jobs
        ]
    with tempfile.TemporaryDirectory(prefix="clusterloom-halls-") as tmp:
        shared = write_shared(tmp, (floor, demand, site, links))
        tasks = [
            Task(
                "clusterloom.placement.halls:hall_task",
                {
                    **shared,
                    "hall": h,
                    "units": units,
                    "pins": sorted(pins.items()),
                    "soft": soft,
                    "hard": sorted(hard & set(units)),
                },
            )
            for h, units, pins in jobs
        ]
        got = {o.task.key: o for o in executor.run(tasks, retries=0)}
    out = []
    for task, (h, units, pins) in zip(tasks, jobs, strict=True):
        o = got[task.key]
        out.append(
            _solved(o.table)
            if o.ok
            else place_hall(floor, demand, site, h, units, links, pins, soft, hard)
        )
    return out
