"""The fabric stage: size, generate, price and check one fabric of a spec."""

from __future__ import annotations

from dataclasses import dataclass

from clusterloom.fabric.bom import Bom, bill_of_materials
from clusterloom.fabric.options import FabricOption, compare_options
from clusterloom.fabric.sizing import FabricPlan, fabric_spec, plan_fabric
from clusterloom.fabric.stable import InstalledLinks, Move, stabilize
from clusterloom.fabric.topology import Topology, generate
from clusterloom.fabric.validate import validate_topology
from clusterloom.findings import Finding, Severity
from clusterloom.spec import ClusterSpec


@dataclass(frozen=True, eq=False)
class FabricDesign:
    """Everything the fabric stage produces for one fabric."""

    plan: FabricPlan
    topology: Topology
    bom: Bom
    findings: tuple[Finding, ...]
    options: tuple[FabricOption, ...]
    #: grown from an installed baseline: the installed links it cannot keep, and how many of
    #: them the new shape forces (the lower bound of re-patching)
    moves: tuple[Move, ...] = ()
    forced: int = 0

    @property
    def name(self) -> str:
        return self.plan.fabric


def design_fabric(
    spec: ClusterSpec,
    fabric: str = "backend",
    *,
    compare: bool = True,
    installed: InstalledLinks | None = None,
) -> FabricDesign:
    """Size, generate, price and validate ``fabric``; ``compare`` also prices the alternatives;
    ``installed`` keeps the installed link ends (``fabric/stable.py``) and reports the rest."""
    catalog = spec.resolved_catalog()
    plan = plan_fabric(spec, fabric)
    topology = generate(plan)
    moves: tuple[Move, ...] = ()
    forced = 0
    grown: list[Finding] = []
    if installed is not None:
        stable = stabilize(topology, installed)
        topology, moves, forced = stable.topology, stable.moves, stable.forced
        if moves:
            grown.append(_moves_finding(fabric, installed.n_links, moves))
    findings = validate_topology(topology, fabric_spec(spec, fabric), catalog) + grown
    options = compare_options(spec, fabric, plan) if compare else ()
    bom = bill_of_materials(plan, catalog)
    return FabricDesign(plan, topology, bom, tuple(findings), options, moves, forced)


def _moves_finding(fabric: str, installed: int, moves: tuple[Move, ...]) -> Finding:
    reasons = sorted({m.reason for m in moves})
    shown = ", ".join(f"{m.a} ~ {m.b}" for m in moves[:4])
    return Finding(
        Severity.WARNING,
        "growth-repatch",
        f"{len(moves):,} of {installed:,} installed links must move ({'; '.join(reasons)}): "
        f"{shown}{', ...' if len(moves) > 4 else ''} (every one in cabling/change.csv)",
        f"fabrics.{fabric}",
    )


def fabric_names(spec: ClusterSpec) -> tuple[str, ...]:
    """The fabrics a spec defines, backend first."""
    return ("backend",) + (("frontend",) if spec.fabrics.frontend is not None else ())
