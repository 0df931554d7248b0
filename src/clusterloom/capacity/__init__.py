"""Capacity planning under wrong forecasts (``docs/capacity.md``), a lifecycle part: it reads
the design stages (for its cost and part curves) and the store; no stage imports it.
``model`` holds the problem as arrays, shared by the scenario and the optimisation sides;
``input``, ``curves``, ``scenarios``, ``problem``, ``report`` and ``write`` are the scenario
side, ``run`` the whole path ``clusterloom plan`` takes; ``moves``, ``optimise`` and ``menu``
solve the problem into a ranked menu (``docs/capacity.md``); ``actuals``, ``sources``,
``reconcile`` and ``triage`` hold what happened, reconcile the sources and triage signals;
``memory``, ``learn`` and ``backtest`` keep decisions with their outcomes and learn from them."""

from clusterloom.capacity.actuals import Actual, read_actuals
from clusterloom.capacity.backtest import Backtest, run_backtest
from clusterloom.capacity.curves import compute_curves
from clusterloom.capacity.input import PlanInput, example_plan, load_plan, parse_plan
from clusterloom.capacity.learn import Learned, apply_learning, learn
from clusterloom.capacity.memory import outcome_record, plan_record, read_decisions, realised_cost
from clusterloom.capacity.menu import Menu, MenuMove, solve_menu
from clusterloom.capacity.model import CapacityProblem, Costs, Curves, Reservations, Scenarios
from clusterloom.capacity.problem import build_problem
from clusterloom.capacity.reconcile import Reconciled, reconcile
from clusterloom.capacity.report import render_plan
from clusterloom.capacity.run import PlanRun, run_plan
from clusterloom.capacity.scenarios import sample_scenarios
from clusterloom.capacity.sources import load_sources
from clusterloom.capacity.triage import read_signals, synthetic_stream, triage
from clusterloom.capacity.write import write_plan

__all__ = [
    "Actual",
    "Backtest",
    "CapacityProblem",
    "Costs",
    "Curves",
    "Learned",
    "Menu",
    "MenuMove",
    "PlanInput",
    "PlanRun",
    "Reconciled",
    "Reservations",
    "Scenarios",
    "apply_learning",
    "build_problem",
    "compute_curves",
    "example_plan",
    "learn",
    "load_plan",
    "load_sources",
    "outcome_record",
    "parse_plan",
    "plan_record",
    "read_actuals",
    "read_decisions",
    "read_signals",
    "realised_cost",
    "reconcile",
    "render_plan",
    "run_backtest",
    "run_plan",
    "sample_scenarios",
    "solve_menu",
    "synthetic_stream",
    "triage",
    "write_plan",
]
