"""Placement: racks and network devices on the floor of a site (docs/placement.md).

``place(spec, fabrics)`` derives the racks from the fabric designs (``demand``), resolves the
site's floor (``floor``), assigns groups of racks to halls and racks to positions with OR-Tools
CP-SAT (``solve``) and checks the result (``validate``).
"""

from clusterloom.placement.artifact import HallTable, LinkLengths, Placement
from clusterloom.placement.demand import Demand, FabricDevices, Unit, build_demand
from clusterloom.placement.floor import FloorPlan, floor_plan
from clusterloom.placement.solve import SolveStats
from clusterloom.placement.stage import check_site, moved_racks, place
from clusterloom.placement.validate import validate_placement

__all__ = [
    "Demand",
    "FabricDevices",
    "FloorPlan",
    "HallTable",
    "LinkLengths",
    "Placement",
    "SolveStats",
    "Unit",
    "build_demand",
    "check_site",
    "floor_plan",
    "moved_racks",
    "place",
    "validate_placement",
]
