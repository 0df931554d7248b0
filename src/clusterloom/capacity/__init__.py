"""Capacity planning under wrong forecasts (``docs/capacity.md``), a lifecycle part: it reads
the design stages (for its cost and part curves) and the store; no stage imports it.
``model`` holds the problem as arrays, shared by the scenario and the optimisation sides."""

from clusterloom.capacity.model import CapacityProblem, Costs, Curves, Scenarios

__all__ = ["CapacityProblem", "Costs", "Curves", "Scenarios"]
