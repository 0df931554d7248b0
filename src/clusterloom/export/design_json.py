"""``design.json``: the whole design as one versioned, stable JSON document.

The document is described by the pydantic models below; ``design.schema.json`` beside this file is
their JSON Schema (``design_schema()``), checked in so that consumers need not import
clusterloom, and a test keeps the two equal. Rules:

- ``schema`` and ``schema_version`` name the format; a change that removes or renames a field
  bumps the version, adding a field does not;
- no timings, dates or host names: the same spec gives the same bytes;
- counts are integers; the bill of materials (``bom``, and each fabric's share in
  ``fabrics[].bom.totals``) is exact to the milliwatt and the cent (``Design.bom`` sums
  integers), other power figures are rounded to 0.1 W and costs to whole dollars (see
  ``_numbers``); bandwidths are integer bits per second.

Version 2 (from 1): the design's one bill of materials is the top-level ``bom`` (``basis``
``cabling`` when the cabling stage chose the media, else ``estimate``; every line with its
``fabric``, ``length_m`` and ``basis``; the one total); ``fabrics[].bom`` keeps the fabric's
share (``totals``) and ``cages`` and no longer has ``lines``; BOM costs are numbers to the cent.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from clusterloom.atomic import StrPath, atomic_write
from clusterloom.design_bom import CABLED, ESTIMATE
from clusterloom.export._numbers import dollars, ratio, watts
from clusterloom.fabric import FabricDesign, FabricOption
from clusterloom.fabric.bom import LINK_TIER_NAMES
from clusterloom.findings import Finding
from clusterloom.pipeline import Design
from clusterloom.spec import LINK_TIERS, ClusterSpec, LinkTier, SwitchRole
from clusterloom.units import to_ns, to_usd, to_watts

SCHEMA_NAME = "clusterloom.design"
SCHEMA_VERSION = 2
SCHEMA_PATH = Path(__file__).with_name("design.schema.json")

Category = Literal["switch", "transceiver", "cable", "patch-cord", "trunk", "splice", "patch-panel"]


class _Doc(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ProvenanceDoc(_Doc):
    """What produced the design: enough to reproduce it byte for byte."""

    spec_name: str
    spec_hash: str = Field(pattern=r"^[0-9a-f]{64}$", description="SHA-256 of the canonical spec")
    clusterloom_version: str


class SwitchTierDoc(_Doc):
    role: SwitchRole
    model: str = Field(description="catalog switch model")
    count_per_plane: int = Field(ge=0)
    count: int = Field(ge=0, description="all planes")
    radix: int = Field(ge=1, description="logical ports at the fabric's link speed")
    down: int = Field(ge=0, description="downlinks used per switch")
    up: int = Field(ge=0, description="uplinks used per switch")


class LinkTierDoc(_Doc):
    tier: LinkTier
    media: str = Field(
        description="catalog media the fabric stage assumed for the tier (its latency, and the "
        "estimate before cabling); the media cabling chose are in bom"
    )
    count_per_plane: int = Field(ge=0)
    count: int = Field(ge=0, description="all planes")
    latency_ns: float = Field(ge=0, description="one-way latency of one link")


class BomLineDoc(_Doc):
    fabric: str | None = Field(
        description="the fabric whose switches or links the line is; null for the plant the "
        "fabrics share (trunks, backbones, splices, panels, patch racks)"
    )
    tier: str | None = Field(
        description="switch role or link tier the line belongs to; null for the shared plant"
    )
    category: Category
    item: str
    length_m: float | None = Field(
        ge=0, description="ordered length of a cable chosen by cabling; null otherwise"
    )
    quantity: int = Field(ge=0)
    unit_power_w: float = Field(ge=0)
    power_w: float = Field(ge=0)
    unit_cost_usd: float = Field(ge=0)
    cost_usd: float = Field(ge=0, description="to the cent")
    basis: Literal["fabric", "cabling", "estimate"] = Field(
        description=f"fabric: switches (the fabric stage); cabling: media and plant as the "
        f"cabling stage chose them from real lengths; estimate: {ESTIMATE}"
    )


class DesignBomTotalsDoc(_Doc):
    power_w: float = Field(ge=0, description="the sum of the lines' power_w, to the milliwatt")
    cost_usd: float = Field(ge=0, description="the sum of the lines' cost_usd, to the cent")
    switches: int = Field(ge=0)
    transceivers: int = Field(ge=0, description="link ends with a pluggable transceiver")


class DesignBomDoc(_Doc):
    """The design's one bill of materials: bom.csv and report.html show the same lines and
    total."""

    basis: Literal["cabling", "estimate"] = Field(
        description=f"cabling: {CABLED}; estimate: {ESTIMATE} (no site, or a run that stopped "
        "before cabling)"
    )
    label: str = Field(description="what the renderers print beside the total")
    lines: list[BomLineDoc]
    totals: DesignBomTotalsDoc


class BomTotalsDoc(_Doc):
    power_w: float = Field(ge=0, description="the fabric's lines of bom: switches and media")
    cost_usd: float = Field(ge=0, description="the fabric's lines of bom, to the cent")
    switches: int = Field(ge=0)
    transceivers: int = Field(ge=0, description="link ends with a pluggable transceiver")
    links: int = Field(ge=0)
    fibers: int = Field(ge=0, description="fibres of optical links at the media of bom")


class BomDoc(_Doc):
    """The fabric's share of the design's bom (the plant shared by fabrics is in no share)."""

    totals: BomTotalsDoc
    cages: dict[str, dict[str, int]] = Field(
        description="switch cages occupied: link tier -> switch role -> cages (all planes)"
    )


class OptionDoc(_Doc):
    """A variant of the fabric; the priced figures are null when it cannot be built. Every
    option, the chosen one too, is priced with the fabric stage's assumed media: an estimate
    (assumed media, before cabling), to compare the options with one another; the design's
    own figures are in bom."""

    label: str
    chosen: bool
    feasible: bool
    infeasible_reason: str | None
    tiers: int | None
    planes: int = Field(ge=1)
    speed_gbps: int = Field(ge=1)
    host_ports: int = Field(ge=1)
    switches: int | None
    links: int | None
    transceivers: int | None
    power_w: float | None
    cost_usd: int | None
    bisection_per_host_gbps: float | None
    ecmp_paths: int | None


class FindingDoc(_Doc):
    severity: Literal["info", "warning", "error"]
    code: str
    message: str
    where: str


class FabricDoc(_Doc):
    name: str
    family: Literal["rail-optimized", "fat-tree"]
    host_kind: Literal["accelerator", "node"]
    tiers: int = Field(ge=2, le=3)
    planes: int = Field(ge=1)
    speed_gbps: int = Field(ge=1, description="every link of the fabric")
    hosts: int = Field(ge=1)
    hosts_per_node: int = Field(ge=1)
    ports_per_host: int = Field(ge=1, description="host ports per plane")
    nodes: int = Field(ge=1)
    endpoints_per_plane: int = Field(ge=1, description="host ports in one plane")
    su_nodes: int = Field(ge=1, description="nodes per scalable unit")
    leaves_per_rail: int = Field(ge=1)
    pods: int = Field(ge=1)
    pod_leaves: int = Field(ge=1)
    spines_per_pod: int = Field(ge=1)
    cores_per_group: int = Field(ge=0)
    switch_tiers: list[SwitchTierDoc]
    links_per_tier: list[LinkTierDoc]
    bisection_bps_per_plane: int = Field(ge=0)
    full_bisection_bps_per_plane: int = Field(ge=0)
    ecmp_paths: int = Field(ge=0)
    bom: BomDoc
    options: list[OptionDoc]
    findings: list[FindingDoc]


class PlacementHallDoc(_Doc):
    name: str = Field(description="building/hall")
    racks: int = Field(ge=0)
    free_positions: int = Field(ge=0, description="free positions of the floor, before placing")
    power_w: float = Field(ge=0, description="racks placed in the hall")


#: ``placement.solve.bound_quality``: how far a gap can be trusted (see BOUND_NOTES)
BoundQuality = Literal["proven optimal", "tight", "loose", "weak"]


class PlacementSolveDoc(_Doc):
    name: str = Field(description="campus (hall assignment) or a hall")
    status: Literal["optimal", "feasible", "heuristic"] = Field(
        description="heuristic: the greedy start, when CP-SAT improved nothing within its effort"
    )
    units: int = Field(ge=0)
    objective: float = Field(ge=0, description="links x metres")
    bound: float = Field(ge=0)
    bound_quality: BoundQuality


class PlacementLengthDoc(_Doc):
    fabric: str
    tier: LinkTier
    links: int = Field(ge=0)
    floor_m: float = Field(ge=0, description="sum of floor distances, before vertical runs")
    longest_m: float = Field(ge=0)
    inter_hall: int = Field(ge=0, description="links between two halls")


class PlacementDoc(_Doc):
    """Summary of the placement; every rack and device is in placement/*.csv."""

    racks: int = Field(ge=0)
    objective: float = Field(ge=0, description="links x metres, summed over the models")
    bound: float = Field(ge=0)
    gap: float = Field(ge=0, le=1, description="of the decomposed problem")
    bound_quality: BoundQuality
    bound_note: str = Field(
        description="where a gap that is not tight comes from and what the bounds behind it "
        "ignore (empty for a tight or proven bound)"
    )
    halls: list[PlacementHallDoc]
    solves: list[PlacementSolveDoc]
    lengths: list[PlacementLengthDoc]


class GrowthAlternativeDoc(_Doc):
    """A shape for a growth step that forces re-patching: what it adds, re-patches and costs
    (``fabric/alternatives.py``); the first one is the step as designed."""

    fabric: str
    name: str
    when: Literal["first build", "this step"]
    shape: str
    ask: str = Field(description="how a spec asks for it")
    switches_added: int = Field(ge=0)
    links_added: int = Field(ge=0)
    links_repatched: int = Field(ge=0, description="installed links that must move")
    first_build_usd: float = Field(description="the first build's cost beyond the one built")
    step_usd: float = Field(description="the grown fabric's BOM less that first build's")
    tiers: int = Field(ge=0)
    switch_hops: int = Field(ge=0, description="switches on the longest leaf-to-leaf path")
    ecmp_paths: int = Field(ge=0)
    bisection_per_host_gbps: float = Field(ge=0)
    traffic: str = Field(description="what it changes for traffic against the step as designed")
    infeasible: str = Field(description="why the shape cannot be built (empty: it can)")


class ReworkDoc(_Doc):
    """The rework of a growth step (``design --installed DIR``), each figure next to what the
    growth forces (its lower bound)."""

    installed: str = Field(description="the installed baseline's directory")
    racks_installed: int = Field(ge=0)
    racks_moved: int = Field(ge=0)
    racks_moved_bound: int = Field(
        ge=0, description="at least this many installed racks must move (what the site forces)"
    )
    links_installed: int = Field(ge=0)
    links_repatched: int = Field(ge=0, description="installed links whose ends change or go")
    links_repatched_bound: int = Field(ge=0, description="re-patches the new shape forces")
    fibres_repulled: int = Field(ge=0, description="same ends, cable pulled again")
    links_added: int = Field(ge=0)
    new_trunks: int = Field(ge=0)
    cost_cents: int = Field(description="the new BOM less the installed one")
    moved_racks: list[str] = Field(description="``label from -> to`` of every moved rack")
    steps: int = Field(ge=0, description="steps of the change plan (changes.jsonl)")
    waves: int = Field(
        ge=0,
        description="waves of the change plan: each drains a batch of links, works and "
        "restores them before the next (growth.waves)",
    )
    alternatives: list[GrowthAlternativeDoc] = Field(
        description="per fabric that must re-patch: the step as designed, then each shape that "
        "would have avoided it"
    )


class DesignDoc(_Doc):
    """A clusterloom design: the spec it came from and every fabric sized, priced and checked."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        title="clusterloom design",
        json_schema_extra={"$schema": "https://json-schema.org/draft/2020-12/schema"},
    )

    schema_name: Literal["clusterloom.design"] = Field(alias="schema")
    schema_version: Literal[2]
    provenance: ProvenanceDoc
    spec: ClusterSpec
    fabrics: list[FabricDoc]
    bom: DesignBomDoc
    placement: PlacementDoc | None = Field(default=None, description="when the spec has a site")
    growth: ReworkDoc | None = Field(
        default=None, description="when grown from an installed baseline (--installed)"
    )
    findings: list[FindingDoc] = Field(
        description="every fabric's findings, in fabric order, then the placement's, then the "
        "cabling's"
    )


def _finding(f: Finding) -> FindingDoc:
    return FindingDoc(severity=f.severity.value, code=f.code, message=f.message, where=f.where)


def _option(o: FabricOption) -> OptionDoc:
    ok = not o.infeasible
    return OptionDoc(
        label=o.label,
        chosen=o.chosen,
        feasible=ok,
        infeasible_reason=None if ok else o.infeasible,
        tiers=o.tiers or None,
        planes=o.planes,
        speed_gbps=o.speed_gbps,
        host_ports=o.host_ports,
        switches=o.switches if ok else None,
        links=o.links if ok else None,
        transceivers=o.transceivers if ok else None,
        power_w=watts(o.power_w) if ok else None,
        cost_usd=dollars(o.cost_usd) if ok else None,
        bisection_per_host_gbps=ratio(o.bisection_per_host_gbps) if ok else None,
        ecmp_paths=o.ecmp_paths if ok else None,
    )


def _cages(fd: FabricDesign) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for key, count in fd.bom.cages_per_tier:
        _, tier, role = key.split(".")
        out.setdefault(tier, {})[role] = count
    return out


def _bom(design: Design, fd: FabricDesign) -> BomDoc:
    share = design.bom.share(fd.name)
    totals = BomTotalsDoc(
        power_w=to_watts(share.power_mw),
        cost_usd=to_usd(share.cost_cents),
        switches=share.switches,
        transceivers=share.transceivers,
        links=share.links,
        fibers=share.fibers,
    )
    return BomDoc(totals=totals, cages=_cages(fd))


def _design_bom(design: Design) -> DesignBomDoc:
    bom = design.bom
    lines = [
        BomLineDoc(
            fabric=line.fabric or None,
            tier=line.tier or None,
            category=line.category,
            item=line.item,
            length_m=line.length_m or None,
            quantity=line.quantity,
            unit_power_w=to_watts(line.unit_power_mw),
            power_w=to_watts(line.power_mw),
            unit_cost_usd=to_usd(line.unit_cost_cents),
            cost_usd=to_usd(line.cost_cents),
            basis=line.basis,
        )
        for line in bom.lines
    ]
    return DesignBomDoc(
        basis="cabling" if bom.cabled else "estimate",
        label=bom.label,
        lines=lines,
        totals=DesignBomTotalsDoc(
            power_w=to_watts(bom.power_mw),
            cost_usd=to_usd(bom.cost_cents),
            switches=bom.switches,
            transceivers=bom.transceivers,
        ),
    )


def _fabric(design: Design, fd: FabricDesign) -> FabricDoc:
    p = fd.plan
    return FabricDoc(
        name=p.fabric,
        family=p.family,
        host_kind=p.host_kind,
        tiers=p.tiers,
        planes=p.planes,
        speed_gbps=p.speed_gbps,
        hosts=p.hosts,
        hosts_per_node=p.hosts_per_node,
        ports_per_host=p.ports_per_host,
        nodes=p.nodes,
        endpoints_per_plane=p.endpoints,
        su_nodes=p.su_nodes,
        leaves_per_rail=p.leaves_per_rail,
        pods=p.pods,
        pod_leaves=p.pod_leaves,
        spines_per_pod=p.spines_per_pod,
        cores_per_group=p.cores_per_group,
        switch_tiers=[
            SwitchTierDoc(
                role=t.role,
                model=t.model,
                count_per_plane=t.count,
                count=t.count * p.planes,
                radix=t.radix,
                down=t.down,
                up=t.up,
            )
            for t in p.switch_tiers
        ],
        links_per_tier=[
            LinkTierDoc(
                tier=tier,
                media=media,
                count_per_plane=count,
                count=count * p.planes,
                latency_ns=to_ns(latency),
            )
            for tier, media, count, latency in zip(
                LINK_TIER_NAMES, p.media, p.links_per_tier, p.latency_ps, strict=False
            )
        ],
        bisection_bps_per_plane=p.bisection_bps,
        full_bisection_bps_per_plane=p.full_bisection_bps,
        ecmp_paths=p.ecmp_paths(),
        bom=_bom(design, fd),
        options=[_option(o) for o in fd.options],
        findings=[_finding(f) for f in fd.findings],
    )


def _placement(design: Design) -> PlacementDoc | None:
    p = design.placement
    if p is None:
        return None
    f, per_hall = p.floor, p.halls
    racks, power, free = per_hall.racks, per_hall.power_w, per_hall.usable
    return PlacementDoc(
        racks=p.n_racks,
        objective=round(p.objective, 1),
        bound=round(p.bound, 1),
        gap=round(p.gap, 6),
        bound_quality=p.bound_quality,
        bound_note=p.bound_note,
        halls=[
            PlacementHallDoc(
                name=f.hall_names[h],
                racks=int(racks[h]),
                free_positions=int(free[h]),
                power_w=watts(float(power[h])),
            )
            for h in range(f.n_halls)
        ],
        solves=[
            PlacementSolveDoc(
                name=s.name,
                status=s.status,
                units=s.units,
                objective=round(s.objective, 1),
                bound=round(s.bound, 1),
                bound_quality=s.bound_quality,
            )
            for s in p.solves
        ],
        lengths=[
            PlacementLengthDoc(
                fabric=x.fabric,
                tier=LINK_TIERS[x.tier - 1],
                links=x.links,
                floor_m=x.total_m,
                longest_m=x.longest_m,
                inter_hall=x.inter_hall,
            )
            for x in p.lengths
        ],
    )


def _growth(design: Design) -> ReworkDoc | None:
    g = design.growth
    if g is None:
        return None
    return ReworkDoc(
        installed=str(g.installed),
        **g.rework.to_dict(),
        moved_racks=[f"{lab} {a} -> {b}" for lab, a, b in g.moved_racks],
        steps=len(g.plan.steps),
        waves=max((s.wave for s in g.plan.steps), default=0),
        alternatives=[
            GrowthAlternativeDoc(fabric=fd.name, **a.to_dict())
            for fd in design.fabrics
            for a in fd.alternatives
        ],
    )


def design_model(design: Design) -> DesignDoc:
    """The design as the typed document model."""
    prov = design.provenance
    return DesignDoc(
        schema=SCHEMA_NAME,
        schema_version=SCHEMA_VERSION,
        provenance=ProvenanceDoc(
            spec_name=prov.spec_name,
            spec_hash=prov.spec_hash,
            clusterloom_version=prov.clusterloom_version,
        ),
        spec=design.spec,
        fabrics=[_fabric(design, fd) for fd in design.fabrics],
        bom=_design_bom(design),
        placement=_placement(design),
        growth=_growth(design),
        findings=[_finding(f) for f in design.findings],
    )


def design_document(design: Design) -> dict[str, Any]:
    """The design as plain JSON data (key order is the schema's field order)."""
    doc = design_model(design).model_dump(mode="json", by_alias=True)
    if doc.get("growth") is None:  # only a grown design has the key
        doc.pop("growth", None)
    return doc


def dumps(document: dict[str, Any]) -> str:
    """The canonical text of a document: 2-space indent, field order kept, final newline."""
    text = json.dumps(document, indent=2, sort_keys=False, ensure_ascii=False, allow_nan=False)
    return text + "\n"


def design_json(design: Design) -> str:
    return dumps(design_document(design))


def write_design_json(design: Design, path: StrPath) -> Path:
    """Write ``design.json`` atomically; return its path."""
    return atomic_write(path, design_json(design))


#: pydantic keeps a constraint given as ``Field(ge=...)`` after a ``BeforeValidator`` in
#: ``Annotated`` (the spec's ``Ratio``) under its Python name; JSON Schema spells it differently.
_CONSTRAINT_KEYWORDS = {
    "ge": "minimum",
    "le": "maximum",
    "gt": "exclusiveMinimum",
    "lt": "exclusiveMaximum",
}


def _standard_keywords(node: Any) -> Any:
    """``node`` with pydantic's constraint names turned into JSON Schema keywords (only in
    schemas of numbers, so that a property that happens to be called ``ge`` is left alone)."""
    if isinstance(node, list):
        return [_standard_keywords(v) for v in node]
    if not isinstance(node, dict):
        return node
    numeric = node.get("type") in ("number", "integer")
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("default", "const", "enum", "examples"):
            out[key] = value
        elif key in ("properties", "$defs"):
            out[key] = {name: _standard_keywords(sub) for name, sub in value.items()}
        elif numeric and key in _CONSTRAINT_KEYWORDS:
            out[_CONSTRAINT_KEYWORDS[key]] = value
        else:
            out[key] = _standard_keywords(value)
    return out


def design_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``design.json``, generated from the models."""
    schema = DesignDoc.model_json_schema(by_alias=True, mode="serialization")
    return _standard_keywords(schema)  # type: ignore[no-any-return]


def design_schema_json() -> str:
    """The text of ``design.schema.json`` as it should be checked in."""
    return dumps(design_schema())


def write_design_schema(path: StrPath = SCHEMA_PATH) -> Path:
    """Regenerate the checked-in schema after the document models or the spec models change
    (a test fails until it is): ``python -c "from clusterloom.export.design_json import
    write_design_schema; write_design_schema()"``."""
    return atomic_write(path, design_schema_json())
