"""The fabric stage: size, generate, price and check one fabric of a spec."""

from __future__ import annotations

from dataclasses import dataclass

from clusterloom.fabric.alternatives import GrowthAlternative, growth_alternatives
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
    #: the shapes that would have avoided the forced moves, each with its cost
    #: (``fabric/alternatives.py``); accepting the re-patch first
    alternatives: tuple[GrowthAlternative, ...] = ()

    @property
    def name(self) -> str:
        return self.plan.fabric


def design_fabric(
    spec: ClusterSpec,
    fabric: str = "backend",
    *,
    compare: bool = True,
    installed: InstalledLinks | None = None,
    baseline: ClusterSpec | None = None,
) -> FabricDesign:
    """Size, generate, price and validate ``fabric``; ``compare`` also prices the alternatives;
    ``installed`` keeps the installed link ends (``fabric/stable.py``) and reports the rest;
    with the ``baseline`` spec they were built from, a step that forces moves also offers the
    shapes that would have avoided them (``fabric/alternatives.py``)."""
    catalog = spec.resolved_catalog()
    plan = plan_fabric(spec, fabric)
    topology = generate(plan)
    moves: tuple[Move, ...] = ()
    forced = 0
    grown: list[Finding] = []
    alternatives: tuple[GrowthAlternative, ...] = ()
    bom = bill_of_materials(plan, catalog)
    if installed is not None:
        stable = stabilize(topology, installed)
        topology, moves, forced = stable.topology, stable.moves, stable.forced
        if forced and baseline is not None:
            alternatives = growth_alternatives(spec, baseline, fabric, plan, installed)
        if moves:
            grown.append(_moves_finding(fabric, installed.n_links, moves, alternatives))
    findings = validate_topology(topology, fabric_spec(spec, fabric), catalog) + grown
    options = compare_options(spec, fabric, plan) if compare else ()
    return FabricDesign(plan, topology, bom, tuple(findings), options, moves, forced, alternatives)


def _avoid(alternatives: tuple[GrowthAlternative, ...]) -> str:
    """The shapes that would have kept more installed links, in the finding's words."""
    if not alternatives:
        return ""
    forced = alternatives[0].links_repatched
    parts = []
    for a in alternatives[1:]:
        if a.infeasible or a.links_repatched >= forced:
            continue
        cost = f"+${a.first_build_usd:,.0f} at first build, " if a.when == "first build" else ""
        parts.append(
            f"{a.name}: {a.shape} ({cost}this step ${a.step_usd:,.0f}, "
            f"{a.links_repatched:,} re-patched; ask with {a.ask})"
        )
    return "; shapes that avoid it: " + "; ".join(parts) if parts else ""


def _moves_finding(
    fabric: str,
    installed: int,
    moves: tuple[Move, ...],
    alternatives: tuple[GrowthAlternative, ...] = (),
) -> Finding:
    avoid = _avoid(alternatives)
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
