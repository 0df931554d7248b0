"""Capacity planning under wrong forecasts (``docs/capacity.md``), a lifecycle part: it reads
the design stages (for its cost and part curves) and the store; no stage imports it.
``model`` holds the problem as arrays, shared by the scenario and the optimisation sides;
``input``, ``curves``, ``scenarios``, ``problem``, ``report`` and ``write`` are the scenario
side, ``run`` the whole path ``clusterloom plan`` takes; ``moves``, ``optimise`` and ``menu``
solve the problem into a ranked menu (``docs/capacity.md``)."""

from clusterloom.capacity.curves import compute_curves
from clusterloom.capacity.input import PlanInput, example_plan, load_plan, parse_plan
from clusterloom.capacity.menu import Menu, MenuMove, solve_menu
from clusterloom.capacity.model import CapacityProblem, Costs, Curves, Scenarios
from clusterloom.capacity.problem import build_problem
from clusterloom.capacity.report import render_plan
from clusterloom.capacity.run import PlanRun, run_plan
from clusterloom.capacity.scenarios import sample_scenarios
from clusterloom.capacity.write import write_plan

__all__ = [
    "CapacityProblem",
    "Costs",
    "Curves",
    "Menu",
    "MenuMove",
    "PlanInput",
    "PlanRun",
    "Scenarios",
    "build_problem",
    "compute_curves",
    "example_plan",
    "load_plan",
    "parse_plan",
    "render_plan",
    "run_plan",
    "sample_scenarios",
    "solve_menu",
    "write_plan",
]
