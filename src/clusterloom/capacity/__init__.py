"""Capacity planning under wrong forecasts (``docs/capacity.md``), a lifecycle part: it reads
the design stages (for its cost and part curves) and the store; no stage imports it.
``model`` holds the problem as arrays, shared by the scenario and the optimisation sides;
``moves``, ``optimise`` and ``menu`` solve it into a ranked menu (``docs/capacity-menu.md``)."""

from clusterloom.capacity.menu import Menu, MenuMove, solve_menu
from clusterloom.capacity.model import CapacityProblem, Costs, Curves, Scenarios

__all__ = ["CapacityProblem", "Costs", "Curves", "Menu", "MenuMove", "Scenarios", "solve_menu"]
