"""The MCP tools' typed inputs and structured outputs (pydantic: their JSON Schemas are what
``tools/list`` shows). Every output carries ``ok`` and ``findings``; when ``ok`` is false the
design fields are null and the findings say why (a spec problem, a bad argument, a check that
failed). The design figures reuse ``design.json``'s own document models
(``export.design_json``), so a tool's figures are the ones a written run holds.

Inputs are bounded: a spec's text by ``spec.limits.MAX_SPEC_BYTES`` (and the spec's own
document limits when it is parsed), a path by ``MAX_PATH_CHARS``, lists by ``MAX_LIST``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from clusterloom.assist.floors import Floors
from clusterloom.assist.goal import Goal
from clusterloom.assist.mcp.root import MAX_PATH_CHARS
from clusterloom.export.design_json import (
    DesignBomTotalsDoc,
    FabricDoc,
    FindingDoc,
    PlacementDoc,
)
from clusterloom.spec.limits import MAX_ACCELERATORS, MAX_SPEC_BYTES

__all__ = [
    "MAX_LIST",
    "BetweenOut",
    "CableInput",
    "CableOutput",
    "CablingOut",
    "DesignRef",
    "DiffInput",
    "DiffOutput",
    "FabricSize",
    "MediumOut",
    "PlaceInput",
    "PlaceOutput",
    "PlanInput",
    "PlanOutput",
    "ProposeInput",
    "ProposeOutput",
    "SimulateInput",
    "SimulateOutput",
    "SizeInput",
    "SizeOutput",
    "SpecSource",
    "ToolOutput",
    "TransportOut",
    "ValidateInput",
    "ValidateOutput",
]

#: entries of one list argument (transports, failures, options)
MAX_LIST = 64

SpecText = Annotated[
    str,
    Field(max_length=MAX_SPEC_BYTES, description="the cluster spec as YAML text (docs/spec.md)"),
]
PathArg = Annotated[str, Field(min_length=1, max_length=MAX_PATH_CHARS)]
Short = Annotated[str, Field(min_length=1, max_length=256)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class SpecSource(_Model):
    """A cluster spec: exactly one of ``spec`` (YAML text), ``path`` (a spec file under the
    server's root) or ``example`` (a built-in example's name)."""

    spec: SpecText | None = None
    path: PathArg | None = Field(
        default=None, description="a spec file (YAML) under the server's root, relative to it"
    )
    example: Annotated[str, Field(min_length=1, max_length=64)] | None = Field(
        default=None, description="a built-in example by name (clusterloom examples)"
    )


class ValidateInput(SpecSource):
    place: bool = Field(
        default=False,
        description="also place and cable the racks and check the result (minutes on the "
        "largest sites); without it a site gets the checks placement makes before it solves",
    )


class SizeInput(SpecSource):
    pass


class PlaceInput(SpecSource):
    pass


class CableInput(SpecSource):
    output: PathArg | None = Field(
        default=None,
        description="a run directory under the root to write the whole design into, as "
        "`clusterloom design -o` writes it (for diff and plan); an existing one must be a "
        "clusterloom run",
    )


class SimulateInput(SpecSource):
    """Overrides of the spec's ``scenario:`` (each left out takes the scenario's value, then
    the default), as ``clusterloom simulate`` takes them; the flow engine."""

    traffic: Short | None = Field(
        default=None,
        description="permutation | all-to-all | incast | ring | step | htsim:FILE (a file "
        "under the root)",
    )
    size: Annotated[str, Field(min_length=1, max_length=32)] | None = Field(
        default=None, description="bytes per flow or per rank buffer, e.g. 2MB"
    )
    transports: Annotated[list[Short], Field(max_length=MAX_LIST)] | None = Field(
        default=None, description="transports to compare (clusterloom transports)"
    )
    failures: Annotated[list[Short], Field(max_length=MAX_LIST)] | None = Field(
        default=None,
        description="KIND:TARGET@START[-END][*FRACTION], e.g. link:17@1ms; ['none'] runs "
        "without the scenario's failures",
    )
    options: Annotated[list[Short], Field(max_length=MAX_LIST)] = Field(
        default_factory=list, description="TRANSPORT.KEY=VALUE, e.g. mrc-spray.evs=16"
    )
    hosts: Annotated[int, Field(ge=1, le=MAX_ACCELERATORS)] | None = Field(
        default=None, description="hosts taking part (default: all)"
    )
    seed: Annotated[int, Field(ge=0, le=2**32 - 1)] | None = Field(
        default=None, description="seed of random traffic and hashing (default 0)"
    )
    rtol: Annotated[float, Field(ge=1e-12, le=0.5)] = Field(
        default=0.01, description="rate tolerance of the flow engine's filling levels"
    )
    output: PathArg | None = Field(
        default=None,
        description="a run directory under the root for the results (Parquet), scenario.json "
        "and simulation.html, as `clusterloom simulate -o` writes them",
    )


class DesignRef(_Model):
    """One side of a diff: exactly one of ``path`` (a run directory `design -o` wrote, or a
    spec file, under the root) or ``spec`` (YAML text, designed in memory)."""

    path: PathArg | None = None
    spec: SpecText | None = None


class DiffInput(_Model):
    a: DesignRef = Field(description="from")
    b: DesignRef = Field(description="to; every delta is b - a")
    predict: bool = Field(
        default=False,
        description="a spec given as a or b is also simulated (its scenario, else a "
        "permutation of the flow engine's transports) for the performance delta",
    )


class ProposeInput(_Model):
    """A design goal (docs/assist.md, "clusterloom propose"): exactly one of ``goal`` (the goal
    as an object), ``text`` (its YAML), ``path`` (a goal file under the root) or ``example``
    (a built-in example goal's name)."""

    goal: Goal | None = None
    text: SpecText | None = None
    path: PathArg | None = Field(default=None, description="a goal file (YAML) under the root")
    example: Annotated[str, Field(min_length=1, max_length=64)] | None = Field(
        default=None, description="a built-in example goal (e.g. hgx-1k)"
    )


class PlanInput(_Model):
    """A change from an installed design to a target spec, every intermediate state held to
    ``floors`` (docs/assist.md, "Change plans")."""

    baseline: PathArg = Field(
        description="the installed design: a run directory under the root (`design -o`, or "
        "`cable` with output)"
    )
    target: SpecSource = Field(description="the target spec: one of spec, path or example")
    floors: Floors = Field(default_factory=Floors)
    simulate: bool = Field(
        default=True, description="also predict each step's impact on the flow engine"
    )


class ToolOutput(_Model):
    """What every tool returns: ``ok`` (no error finding, and the call could be carried out)
    and every finding of the validators that ran, or of the input that was refused."""

    ok: bool
    errors: int = Field(ge=0, description="findings of severity error")
    warnings: int = Field(ge=0, description="findings of severity warning")
    findings: list[FindingDoc]


class ValidateOutput(ToolOutput):
    spec_hash: str | None = Field(description="SHA-256 of the canonical spec; null if refused")


class FabricSize(_Model):
    """One fabric's plan (the document ``design.json`` holds) and the figures it derives."""

    plan: FabricDoc
    oversubscription_leaf: float = Field(gt=0, description="leaf down:up, 1 is non-blocking")
    oversubscription_spine: float = Field(gt=0, description="spine down:up (3 tiers)")
    bisection_bps_total: int = Field(ge=0, description="bisection per plane x planes")


class SizeOutput(ToolOutput):
    fabrics: list[FabricSize] | None
    bom: DesignBomTotalsDoc | None = Field(description="the fabrics' bill of materials")


class PlaceOutput(ToolOutput):
    placement: PlacementDoc | None
    bom: DesignBomTotalsDoc | None


class MediumOut(_Model):
    medium: str
    links: int = Field(ge=0)
    structured: int = Field(ge=0, description="through patch panels and trunks")
    metres: float = Field(ge=0)
    longest_m: float = Field(ge=0)


class BetweenOut(_Model):
    a: str
    b: str
    cables: int = Field(ge=0)
    fibres: int = Field(ge=0)


class CablingOut(_Model):
    links: int = Field(ge=0)
    realized: int = Field(ge=0)
    trunks: int = Field(ge=0)
    backbones: int = Field(ge=0)
    panels: int = Field(ge=0)
    by_medium: list[MediumOut]
    between_halls: list[BetweenOut]
    between_buildings: list[BetweenOut]


class CableOutput(ToolOutput):
    placement: PlacementDoc | None
    cabling: CablingOut | None
    bom: DesignBomTotalsDoc | None = Field(description="the design's one BOM, media as cabled")
    written: str | None = Field(description="the run directory written, relative to the root")


class TransportOut(_Model):
    """One transport's outcome next to the ideal bound (``sim.flow.run.Compared``)."""

    transport: str
    flows: int = Field(ge=0)
    finished: int = Field(ge=0)
    completion_us: float | None = Field(description="last finish; null unless every flow did")
    fct_p50_us: float | None = Field(description="of the finished flows; null if none did")
    fct_p99_us: float | None
    fct_max_us: float | None
    vs_ideal: float | None = Field(description="completion over the ideal transport's")
    assumption: str = Field(description="the failure reaction behind the figures, if any")


class SimulateOutput(ToolOutput):
    scenario: dict[str, Any] | None = Field(description="the resolved scenario (scenario.json)")
    transports: list[TransportOut] | None
    written: str | None = Field(description="the run directory written, relative to the root")


class DiffOutput(ToolOutput):
    diff: dict[str, Any] | None = Field(
        description="DesignDiff.to_dict(), as `clusterloom diff --json` prints it"
    )


class ProposeOutput(ToolOutput):
    proposal: dict[str, Any] | None = Field(
        description="ProposeResult.to_dict(): the front, every rejected candidate with its "
        "reason, the candidates per tier, as `clusterloom propose --json` prints it"
    )


class PlanOutput(ToolOutput):
    plan: dict[str, Any] | None = Field(
        description="PlanResult.to_dict(): the change plan's steps with their validated state, "
        "its proposal, the floors and the predicted impact"
    )
