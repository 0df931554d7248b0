"""The logical fabric: sizing, generation as arrays, bill of materials, options and checks."""

from clusterloom.fabric.bom import Bom, BomLine, bill_of_materials
from clusterloom.fabric.design import FabricDesign, design_fabric, fabric_names
from clusterloom.fabric.options import FabricOption, compare_options
from clusterloom.fabric.sizing import FabricPlan, SwitchTier, plan_fabric
from clusterloom.fabric.topology import Role, Topology, generate
from clusterloom.fabric.validate import validate_topology

__all__ = [
    "Bom",
    "BomLine",
    "FabricDesign",
    "FabricOption",
    "FabricPlan",
    "Role",
    "SwitchTier",
    "Topology",
    "bill_of_materials",
    "compare_options",
    "design_fabric",
    "fabric_names",
    "generate",
    "plan_fabric",
    "validate_topology",
]
