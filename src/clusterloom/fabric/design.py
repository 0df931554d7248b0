"""The fabric stage: size, generate, price and check one fabric of a spec."""

from __future__ import annotations

from dataclasses import dataclass

from clusterloom.fabric.bom import Bom, bill_of_materials
from clusterloom.fabric.options import FabricOption, compare_options
from clusterloom.fabric.sizing import FabricPlan, fabric_spec, plan_fabric
from clusterloom.fabric.topology import Topology, generate
from clusterloom.fabric.validate import validate_topology
from clusterloom.findings import Finding
from clusterloom.spec import ClusterSpec


@dataclass(frozen=True, eq=False)
class FabricDesign:
    """Everything the fabric stage produces for one fabric."""

    plan: FabricPlan
    topology: Topology
    bom: Bom
    findings: tuple[Finding, ...]
    options: tuple[FabricOption, ...]

    @property
    def name(self) -> str:
        return self.plan.fabric


def design_fabric(
    spec: ClusterSpec, fabric: str = "backend", *, compare: bool = True
) -> FabricDesign:
    """Size, generate, price and validate ``fabric``; ``compare`` also prices the alternatives."""
    catalog = spec.resolved_catalog()
    plan = plan_fabric(spec, fabric)
    topology = generate(plan)
    findings = validate_topology(topology, fabric_spec(spec, fabric), catalog)
    options = compare_options(spec, fabric, plan) if compare else ()
    return FabricDesign(plan, topology, bill_of_materials(plan, catalog), tuple(findings), options)


def fabric_names(spec: ClusterSpec) -> tuple[str, ...]:
    """The fabrics a spec defines, backend first."""
    return ("backend",) + (("frontend",) if spec.fabrics.frontend is not None else ())
