"""A whole plan run, as ``clusterloom plan`` and the bench do it: load the plan, compute the
curves (cached), sample the scenarios, build the problem and, when the optimisation side is
there and asked for, solve the menu (``capacity.menu.solve_menu``). Each step is timed."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clusterloom.capacity.curves import compute_curves, default_cache
from clusterloom.capacity.input import PlanInput, load_plan
from clusterloom.capacity.model import CapacityProblem
from clusterloom.capacity.problem import build_problem
from clusterloom.capacity.scenarios import sample_scenarios

if TYPE_CHECKING:
    from clusterloom.capacity.learn import Learned

__all__ = ["PlanRun", "run_plan"]


@dataclass(frozen=True, eq=False)
class PlanRun:
    plan: PlanInput
    problem: CapacityProblem
    #: ``capacity.menu.Menu`` (None: not solved)
    menu: Any
    #: (step, seconds) in the order they ran
    timings_s: tuple[tuple[str, float], ...]
    #: the plan as read, when learning corrected its forecasts (``plan`` is the corrected)
    stated: PlanInput | None = None
    #: what learning applied (``learn.Learned.to_dict()`` with ``statements``), or None
    learning: dict[str, Any] | None = None


def run_plan(
    path: str | Path,
    *,
    scenarios: int = 500,
    seed: int = 0,
    solve: bool = True,
    risk_alpha: float = 0.9,
    cache: Path | None = None,
    use_cache: bool = True,
    progress: Callable[[str], None] | None = None,
    learned: Learned | None = None,
) -> PlanRun:
    """Run the plan at ``path`` (module docstring); template and installed paths are relative
    to the plan's folder; ``cache`` (default ``curves.default_cache()``) holds the design
    points, none with ``use_cache=False``; ``learned`` (``learn.Learned``) corrects the
    plan's forecasts per source before the scenarios are drawn (``learn.apply_learning``)."""
    timings: list[tuple[str, float]] = []

    def step(name: str, fn: Callable[[], Any]) -> Any:
        if progress is not None:
            progress(name)
        t0 = time.perf_counter()
        out = fn()
        timings.append((name, time.perf_counter() - t0))
        return out

    p = Path(path)
    plan: PlanInput = step("load", lambda: load_plan(p))
    stated, learning = None, None
    if learned is not None:
        from clusterloom.capacity.learn import apply_learning, learning_statements

        stated = plan
        plan = step("learn", lambda: apply_learning(stated, learned))
        learning = {**learned.to_dict(), "statements": list(learning_statements(stated, learned))}
    base = p.resolve().parent
    where = (cache or default_cache()) if use_cache else None
    curves = step("curves", lambda: compute_curves(plan, base=base, cache=where, progress=progress))
    sc = step("scenarios", lambda: sample_scenarios(plan, scenarios, seed))
    problem = step("problem", lambda: build_problem(plan, curves, sc, base=base))
    menu = None
    if solve:
        from clusterloom.capacity.menu import solve_menu

        menu = step("menu", lambda: solve_menu(problem, risk_alpha=risk_alpha))
    return PlanRun(plan, problem, menu, tuple(timings), stated, learning)
