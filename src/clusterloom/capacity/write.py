"""What ``clusterloom plan -o DIR`` writes, each file atomically into the run's staging
directory (``export.outdir``): ``plan.html`` (``report.render_plan``), ``menu.json`` (the plan,
the seed and the menu's ``to_dict()``, or no menu), ``scenarios.parquet`` (one row per
scenario, site and period: demand, delivered accelerators, IT power and positions available,
and the scenario's shocks) and ``lead_times.parquet`` (one row per scenario and part). The
same inputs give the same bytes."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from clusterloom.atomic import atomic_write
from clusterloom.capacity.input import PlanInput
from clusterloom.capacity.model import CapacityProblem, Scenarios
from clusterloom.capacity.report import MenuLike, render_plan
from clusterloom.changes import Decision

__all__ = ["plan_decision", "plan_hash", "plan_summary", "scenario_tables", "write_plan"]


def plan_hash(plan: PlanInput) -> str:
    """SHA-256 of the plan's canonical JSON (key order and formatting do not matter)."""
    canonical = json.dumps(plan.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def scenario_tables(sc: Scenarios) -> tuple[pa.Table, pa.Table]:
    """(per scenario, site and period; per scenario and part) as Arrow tables."""
    S, N, T = sc.demand.shape
    s_idx, n_idx, t_idx = np.meshgrid(np.arange(S), np.arange(N), np.arange(T), indexing="ij")
    shocks = np.array(["; ".join(x) for x in sc.shocks], dtype=object)
    main = pa.table(
        {
            "scenario": pa.array(s_idx.ravel(), pa.int32()),
            "site": pa.DictionaryArray.from_arrays(
                pa.array(n_idx.ravel(), pa.int32()), pa.array(list(sc.sites))
            ),
            "period": pa.DictionaryArray.from_arrays(
                pa.array(t_idx.ravel(), pa.int32()), pa.array(list(sc.periods))
            ),
            "probability": pa.array(sc.probability[s_idx.ravel()]),
            "demand": pa.array(sc.demand.ravel()),
            "accelerators": pa.array(sc.accelerators.ravel()),
            "power_kw": pa.array(sc.power_kw.ravel()),
            "positions": pa.array(sc.positions.ravel()),
            "shocks": pa.array(list(shocks[s_idx.ravel()]), pa.string()),
        }
    )
    P = len(sc.parts)
    s2, p2 = np.meshgrid(np.arange(S), np.arange(P), indexing="ij")
    lead = pa.table(
        {
            "scenario": pa.array(s2.ravel(), pa.int32()),
            "part": pa.DictionaryArray.from_arrays(
                pa.array(p2.ravel(), pa.int32()), pa.array(list(sc.parts))
            ),
            "lead_time_quarters": pa.array(sc.lead_time.ravel(), pa.int64()),
        }
    )
    return main, lead


def _parquet(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="zstd")
    return sink.getvalue()


def plan_summary(
    plan: PlanInput, problem: CapacityProblem, menu: MenuLike | None
) -> dict[str, Any]:
    """What ``menu.json`` holds and ``plan --json`` prints."""
    sc = problem.scenarios
    to_dict = getattr(menu, "to_dict", None)
    return {
        "schema": "clusterloom.plan",
        "schema_version": 1,
        "plan": plan.name,
        "plan_hash": plan_hash(plan),
        "seed": sc.seed,
        "scenarios": len(sc.shocks),
        "periods": list(sc.periods),
        "sites": list(sc.sites),
        "parts": list(sc.parts),
        "curves": {
            "choices": list(problem.curves.choices),
            "sizes": [int(s) for s in problem.curves.sizes],
        },
        "menu": to_dict() if callable(to_dict) else None,
    }


def write_plan(
    staging: Path,
    plan: PlanInput,
    problem: CapacityProblem,
    menu: MenuLike | None,
    learning: dict[str, Any] | None = None,
) -> list[Path]:
    """The run's files into ``staging`` (module docstring); the paths written. ``learning``
    (what learning from outcomes applied) is a section of the page and ``menu.json``'s
    ``learning``."""
    main, lead = scenario_tables(problem.scenarios)
    summary = plan_summary(plan, problem, menu)
    if learning is not None:
        summary["learning"] = learning
    files: dict[str, str | bytes] = {
        "plan.html": render_plan(plan.name, problem, menu, learning),
        "menu.json": json.dumps(summary, indent=2, sort_keys=True) + "\n",
        "scenarios.parquet": _parquet(main),
        "lead_times.parquet": _parquet(lead),
    }
    return [atomic_write(staging / name, data) for name, data in files.items()]


def plan_decision(plan: PlanInput, problem: CapacityProblem, menu: MenuLike) -> Decision:
    """The menu as a ``changes.Decision`` for decision memory (``plan --store``): the
    proposal names the plan, its hash and the seed; ``chosen`` is the move the model ranks
    first (a person's choice is recorded against the same proposal later); ``context`` is
    ``menu.json``'s content, so a later run can read what was offered and why."""
    # as JSON holds it (tuples become lists), so the stored record reads back equal
    summary = json.loads(json.dumps(plan_summary(plan, problem, menu), sort_keys=True))
    moves = menu.moves
    return Decision(
        proposal=f"capacity-plan/{plan.name}/{summary['plan_hash'][:16]}/seed-{summary['seed']}",
        context=summary,
        chosen=moves[0].name if moves else "",
    )
