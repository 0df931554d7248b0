"""The fabric stage: size, generate, price and check one fabric of a spec."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clusterloom.fabric.bom import Bom, bill_of_materials
from clusterloom.fabric.options import FabricOption, compare_options
from clusterloom.fabric.sizing import FabricPlan, fabric_spec, plan_fabric
from clusterloom.fabric.stable import InstalledLinks, Move, stabilize
from clusterloom.fabric.topology import Role, Topology, generate
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
    bom = bill_of_materials(plan, catalog)
    if installed is not None:
        stable = stabilize(topology, installed)
        topology, moves, forced = stable.topology, stable.moves, stable.forced
        if moves:
            avoid = _overbuild(plan, bom, installed)
            grown.append(_moves_finding(fabric, installed.n_links, moves, avoid))
    findings = validate_topology(topology, fabric_spec(spec, fabric), catalog) + grown
    options = compare_options(spec, fabric, plan) if compare else ()
    return FabricDesign(plan, topology, bom, tuple(findings), options, moves, forced)


def _overbuild(plan: FabricPlan, bom: Bom, installed: InstalledLinks) -> str:
    """The shape that would have avoided the moves: the installed spine layer built at the
    grown count from the start, and what the extra switches cost."""
    spines = installed.b_role == Role.SPINE
    if not spines.any() or plan.tiers != 2:
        return ""
    pairs = zip(installed.b_plane[spines].tolist(), installed.b_index[spines].tolist(), strict=True)
    have = len(set(pairs))
    need = plan.spines * plan.planes
    up = installed.tier == 2
    _, per_leaf = np.unique(
        np.stack([installed.a_plane[up], installed.a_index[up]], axis=1), axis=0, return_counts=True
    )
    if need <= have or not (per_leaf == plan.tier("leaf").up).all():
        return ""  # another leaf stripe: over-building the spines alone would not keep them
    line = next((b for b in bom.lines if b.category == "switch" and b.tier == "spine"), None)
    cost = f", ${(need - have) * line.unit_cost_usd:,.0f}" if line is not None else ""
    return (
        f"; a spine layer of {need:,} from the start ({need - have:,} more switches{cost}) "
        "would have kept every installed link"
    )


def _moves_finding(
    fabric: str, installed: int, moves: tuple[Move, ...], avoid: str = ""
) -> Finding:
    reasons = sorted({m.reason for m in moves})
    shown = ", ".join(f"{m.a} ~ {m.b}" for m in moves[:4])
    return Finding(
        Severity.WARNING,
        "growth-repatch",
        f"{len(moves):,} of {installed:,} installed links must move ({'; '.join(reasons)}): "
        f"{shown}{', ...' if len(moves) > 4 else ''} (every one in cabling/change.csv){avoid}",
        f"fabrics.{fabric}",
    )


def fabric_names(spec: ClusterSpec) -> tuple[str, ...]:
    """The fabrics a spec defines, backend first."""
    return ("backend",) + (("frontend",) if spec.fabrics.frontend is not None else ())
