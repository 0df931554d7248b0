"""The ``site`` section of the spec: the floor that placement puts racks on.

::

    site:
      campus: prometheus-east
      buildings:
        - name: b1
          x_m: 0                          # building origin (its entrance) on the campus
          y_m: 0
          halls:
            - name: h1
              x_m: 0                      # hall origin in the building
              y_m: 0
              width_m: 30                 # floor extent along x and y (rows must fit inside)
              depth_m: 20
              power_kw: 4000              # hall budgets
              cooling_kw: 4200
              feeds: {ups-a: 2100, ups-b: 2100}     # power failure domains: kW each
              cooling_loops: {loop-1: 4200}         # cooling failure domains: kW each
              template:                   # or rows: [...] listed one by one
                rows: 8
                positions_per_row: 20
                pitch_m: 0.6              # rack width
                rack_depth_m: 1.2
                aisle_m: 1.2              # between rows
                position_power_kw: 45
                row_power_kw: 700
                feeds: [ups-a, ups-b]     # round-robin over rows (a row's busway, one feed)
                cooling_loops: [loop-1]
              blocked: [r01/p01]          # never used (a column, a door)
              reserved: [r08/p20]         # kept free for something else
              hold_back: 10               # free positions left for growth
      distances: [{a: b1, b: b2, m: 350}]   # between building entrances (default: Manhattan)
      racks: {compute: hgx-4, network: network-48u, patch: patch-48u}
      spread: {planes_per_feed: 1, spine_feeds: 2}

Coordinates are metres: a position's ``x_m``/``y_m`` is the centre of its footprint in its
hall's frame; a hall's origin sits at ``x_m``/``y_m`` in its building's frame, a building's at
``x_m``/``y_m`` on the campus. A row's feed and cooling loop are the row's (one busway and one
loop per row), the common arrangement that :mod:`clusterloom.placement` relies on.

The models check shapes; :func:`site_problems` checks what needs the whole floor: names unique,
positions that overlap, rows outside their hall, feeds without a budget, references to positions
or buildings that do not exist. Each problem names the objects and its dotted field path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import (
    Field,
    model_validator,
)

from clusterloom.errors import Problem
from clusterloom.spec._base import SpecModel
from clusterloom.spec.limits import (
    MAX_EFFORT,
    MAX_HALL_ROWS,
    MAX_ROW_POSITIONS,
    MAX_SITE_POSITIONS,
    CoordinateM,
    DeviceCount,
    LengthM,
    LengthMm,
    MassKg,
    PowerKw,
    Seed,
    SpacingM,
)

__all__ = [
    "BuildingDistance",
    "BuildingSpec",
    "HallSpec",
    "HallTemplate",
    "PositionSpec",
    "ResolvedPosition",
    "RowSpec",
    "SiteRacks",
    "SiteSolver",
    "SiteSpec",
    "SpreadSpec",
    "hall_positions",
    "site_problems",
]

Name = str
Direction = Literal["east", "west", "north", "south"]
PositionState = Literal["free", "reserved", "blocked"]
#: The kinds of pathway segment the cabling stage builds (``cabling.pathways.SEGMENT_KINDS``).
PathwayKind = Literal["row", "cross-aisle", "spine", "hall", "riser", "campus"]
_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
_STEP: dict[str, tuple[int, int]] = {
    "east": (1, 0),
    "west": (-1, 0),
    "north": (0, 1),
    "south": (0, -1),
}


class PositionSpec(SpecModel):
    """One rack position, listed explicitly; budgets default to its row's."""

    name: str = Field(pattern=_NAME)
    x_m: CoordinateM
    y_m: CoordinateM
    power_kw: PowerKw | None = None
    cooling_kw: PowerKw | None = None
    max_weight_kg: MassKg | None = None
    state: PositionState = "free"


class RowSpec(SpecModel):
    """A row of positions: generated (``positions: 20``, along ``direction`` at ``pitch_m`` from
    the first position's centre at ``x_m``/``y_m``) or listed (``positions: [...]``)."""

    name: str = Field(pattern=_NAME)
    x_m: CoordinateM = 0.0
    y_m: CoordinateM = 0.0
    direction: Direction = Field(default="east", description="the way generated positions run")
    facing: Direction = Field(default="north", description="where rack fronts face")
    aisle: str = Field(default="", max_length=128, description="the cold aisle the fronts open on")
    positions: Annotated[int, Field(ge=1, le=MAX_ROW_POSITIONS)] | list[PositionSpec]
    pitch_m: SpacingM = 0.6
    rack_depth_m: SpacingM = 1.2
    power_kw: PowerKw | None = Field(default=None, description="row budget (busway)")
    cooling_kw: PowerKw | None = Field(default=None, description="row budget")
    position_power_kw: PowerKw | None = None
    position_cooling_kw: PowerKw | None = None
    max_weight_kg: MassKg | None = None
    feed: str = Field(default="feed-a", pattern=_NAME, description="UPS/PDU line of the row")
    cooling_loop: str = Field(default="loop-1", pattern=_NAME)


class HallTemplate(SpecModel):
    """A hall generated as ``rows`` parallel rows (along x) of ``positions_per_row``."""

    rows: Annotated[int, Field(ge=1, le=MAX_HALL_ROWS)]
    positions_per_row: Annotated[int, Field(ge=1, le=MAX_ROW_POSITIONS)]
    pitch_m: SpacingM = 0.6
    rack_depth_m: SpacingM = 1.2
    aisle_m: SpacingM = 1.2
    origin_m: tuple[CoordinateM, CoordinateM] = Field(
        default=(1.5, 1.5), description="centre of the first position of the first row"
    )
    row_power_kw: PowerKw | None = None
    row_cooling_kw: PowerKw | None = None
    position_power_kw: PowerKw | None = None
    position_cooling_kw: PowerKw | None = None
    max_weight_kg: MassKg | None = None
    feeds: list[Annotated[str, Field(pattern=_NAME)]] = Field(
        default_factory=lambda: ["feed-a"], min_length=1
    )
    cooling_loops: list[Annotated[str, Field(pattern=_NAME)]] = Field(
        default_factory=lambda: ["loop-1"], min_length=1
    )


class HallSpec(SpecModel):
    name: str = Field(pattern=_NAME)
    x_m: CoordinateM = 0.0
    y_m: CoordinateM = 0.0
    width_m: LengthM = Field(description="floor extent along x")
    depth_m: LengthM = Field(description="floor extent along y")
    door_m: tuple[CoordinateM, CoordinateM] = Field(
        default=(0.0, 0.0), description="where cables leave the hall, in the hall's frame"
    )
    power_kw: PowerKw | None = None
    cooling_kw: PowerKw | None = None
    floor_load_kg_m2: MassKg | None = Field(
        default=None, description="floor rating; a rack may weigh this times its footprint"
    )
    feeds: dict[str, PowerKw] = Field(
        default_factory=dict, description="power budget (kW) of each feed; unlisted: no limit"
    )
    cooling_loops: dict[str, PowerKw] = Field(
        default_factory=dict, description="cooling budget (kW) of each loop; unlisted: no limit"
    )
    template: HallTemplate | None = None
    rows: list[RowSpec] = Field(default_factory=list)
    blocked: list[str] = Field(default_factory=list, description="ROW/POSITION never used")
    reserved: list[str] = Field(default_factory=list, description="ROW/POSITION kept free")
    hold_back: int = Field(
        default=0, ge=0, le=MAX_SITE_POSITIONS, description="free positions kept for growth"
    )


class BuildingSpec(SpecModel):
    name: str = Field(pattern=_NAME)
    x_m: CoordinateM = 0.0
    y_m: CoordinateM = 0.0
    halls: list[HallSpec] = Field(min_length=1)


class BuildingDistance(SpecModel):
    """Cable route length between two buildings' entrances."""

    a: str
    b: str
    m: LengthM


class SiteRacks(SpecModel):
    """Catalog rack types; compute defaults by the scale-up domain (NVL72 or 4 HGX servers)."""

    compute: str | None = None
    network: str = "network-48u"
    patch: str = "patch-48u"


class SpreadSpec(SpecModel):
    """Failure-domain spreading rules."""

    planes_per_feed: DeviceCount = Field(
        default=1,
        description="most planes of one scalable unit whose leaf racks share a feed",
    )
    spine_feeds: DeviceCount = Field(
        default=2, description="feeds a spine group spreads over (as far as it has racks)"
    )


class SiteSolver(SpecModel):
    """CP-SAT limits. Effort is CP-SAT's deterministic time (about seconds on one core), so
    the result does not depend on the machine's speed or load."""

    seed: Seed = 0
    workers: int = Field(default=1, ge=1, le=2)
    hall_effort: float = Field(default=4.0, gt=0, le=MAX_EFFORT, description="per hall subproblem")
    campus_effort: float = Field(
        default=20.0, gt=0, le=MAX_EFFORT, description="for the hall assignment"
    )


class PathwaySpec(SpecModel):
    """The cross-section of one kind of pathway segment: a cable tray (``width_mm`` x
    ``depth_mm``) or a duct bank (``ducts`` x ``duct_diameter_mm``), ``count`` of them side by
    side, filled to at most ``fill`` of their area."""

    width_mm: LengthMm | None = None
    depth_mm: LengthMm | None = None
    ducts: DeviceCount | None = None
    duct_diameter_mm: LengthMm | None = None
    count: DeviceCount = Field(default=1, description="trays or duct banks side by side")
    fill: float = Field(default=0.5, gt=0.0, le=1.0, description="largest share of the area")

    @model_validator(mode="after")
    def _one_shape(self) -> PathwaySpec:
        tray = self.width_mm is not None or self.depth_mm is not None
        duct = self.ducts is not None or self.duct_diameter_mm is not None
        if tray == duct:
            raise ValueError(
                "give a tray (width_mm and depth_mm) or a duct bank (ducts and "
                "duct_diameter_mm), not both or neither"
            )
        if tray and (self.width_mm is None or self.depth_mm is None):
            raise ValueError("a tray needs both width_mm and depth_mm")
        if duct and (self.ducts is None or self.duct_diameter_mm is None):
            raise ValueError("a duct bank needs both ducts and duct_diameter_mm")
        return self

    @property
    def area_mm2(self) -> float:
        """Cross-section of all ``count`` trays or banks together."""
        if self.width_mm is not None and self.depth_mm is not None:
            one = self.width_mm * self.depth_mm
        else:
            one = (self.ducts or 0) * math.pi * ((self.duct_diameter_mm or 0.0) / 2.0) ** 2
        return self.count * one

    @property
    def description(self) -> str:
        many = f"{self.count} x " if self.count > 1 else ""
        if self.width_mm is not None:
            return f"{many}{self.width_mm:g} x {self.depth_mm:g} mm tray"
        bank = f"duct bank of {self.ducts} x {self.duct_diameter_mm:g} mm ducts"
        return f"{many}{bank}"


class PlantLosses(SpecModel):
    """Insertion loss of the fibre plant's parts, in dB. The defaults are REFERENCES.md's
    figures for low-loss connectors (at most 0.35 dB per MPO, 0.25 dB per LC joint) and a
    typical fusion splice (TIA-568.3-D allows up to 0.3 dB)."""

    mpo_db: float = Field(default=0.35, ge=0.0, le=2.0, description="one mated MPO pair")
    lc_db: float = Field(default=0.25, ge=0.0, le=2.0, description="one mated LC pair")
    splice_db: float = Field(default=0.1, ge=0.0, le=1.0, description="one fusion splice")
    entrance_splices: bool = Field(
        default=True,
        description="backbones between buildings are spliced at each building entrance "
        "(outside-plant to indoor cable); false for indoor/outdoor-rated cable",
    )


class SiteSpec(SpecModel):
    campus: str = Field(default="campus", pattern=_NAME)
    buildings: list[BuildingSpec] = Field(min_length=1)
    distances: list[BuildingDistance] = Field(default_factory=list)
    racks: SiteRacks = SiteRacks()
    spread: SpreadSpec = SpreadSpec()
    growth_fraction: float = Field(
        default=0.0, ge=0, le=0.9, description="share of each hall's free positions kept for growth"
    )
    split_units: bool = Field(
        default=True,
        description="split a scalable unit longer than any row over neighbouring rows",
    )
    trunk_penalty_m: float = Field(
        default=20.0,
        ge=0,
        le=100_000,
        description="extra cost of a link leaving its hall, in metres of cable",
    )
    reach_allowance_m: float = Field(
        default=0.0,
        ge=0,
        le=100_000,
        description="kept from a medium's reach for vertical runs and slack",
    )
    solver: SiteSolver = SiteSolver()
    pathways: dict[PathwayKind, PathwaySpec] = Field(
        default_factory=dict,
        description="pathway sizes per segment kind (unset kinds keep cabling's defaults)",
    )
    losses: PlantLosses = PlantLosses()


# --- resolving positions ----------------------------------------------------------------------


@dataclass(frozen=True)
class ResolvedPosition:
    """One position of a hall with every default applied (hall frame, metres, kW, kg)."""

    row: int
    row_name: str
    name: str
    x_m: CoordinateM
    y_m: CoordinateM
    width_m: float
    depth_m: float
    power_kw: float  # math.inf when unlimited
    cooling_kw: float
    max_weight_kg: float
    state: PositionState
    feed: str
    cooling_loop: str


def hall_rows(hall: HallSpec) -> list[RowSpec]:
    """The hall's rows: the template expanded, or the listed rows."""
    t = hall.template
    if t is None:
        return list(hall.rows)
    rows = []
    x0, y0 = t.origin_m
    for i in range(t.rows):
        rows.append(
            RowSpec(
                name=f"r{i + 1:02d}",
                x_m=x0,
                y_m=y0 + i * (t.rack_depth_m + t.aisle_m),
                direction="east",
                facing="north" if i % 2 == 0 else "south",  # fronts face the shared cold aisle
                aisle=f"a{i // 2 + 1:02d}",
                positions=t.positions_per_row,
                pitch_m=t.pitch_m,
                rack_depth_m=t.rack_depth_m,
                power_kw=t.row_power_kw,
                cooling_kw=t.row_cooling_kw,
                position_power_kw=t.position_power_kw,
                position_cooling_kw=t.position_cooling_kw,
                max_weight_kg=t.max_weight_kg,
                feed=t.feeds[i % len(t.feeds)],
                cooling_loop=t.cooling_loops[i % len(t.cooling_loops)],
            )
        )
    return rows


def _limit(*values: float | None) -> float:
    for v in values:
        if v is not None:
            return float(v)
    return math.inf


def hall_positions(hall: HallSpec) -> list[ResolvedPosition]:
    """Every position of ``hall`` in row order, then position order, defaults applied."""
    out: list[ResolvedPosition] = []
    blocked, reserved = set(hall.blocked), set(hall.reserved)
    for r, row in enumerate(hall_rows(hall)):
        footprint = row.pitch_m * row.rack_depth_m
        floor = hall.floor_load_kg_m2 * footprint if hall.floor_load_kg_m2 else None
        if isinstance(row.positions, int):
            dx, dy = _STEP[row.direction]
            listed = [
                PositionSpec(
                    name=f"p{i + 1:02d}",
                    x_m=round(row.x_m + dx * i * row.pitch_m, 6),
                    y_m=round(row.y_m + dy * i * row.pitch_m, 6),
                )
                for i in range(row.positions)
            ]
        else:
            listed = list(row.positions)
        along_x = row.direction in ("east", "west")
        width, depth = (
            (row.pitch_m, row.rack_depth_m) if along_x else (row.rack_depth_m, row.pitch_m)
        )
        for p in listed:
            key = f"{row.name}/{p.name}"
            state: PositionState = p.state
            if key in blocked:
                state = "blocked"
            elif key in reserved and state == "free":
                state = "reserved"
            weight = min(_limit(p.max_weight_kg, row.max_weight_kg), _limit(floor))
            out.append(
                ResolvedPosition(
                    row=r,
                    row_name=row.name,
                    name=p.name,
                    x_m=p.x_m,
                    y_m=p.y_m,
                    width_m=width,
                    depth_m=depth,
                    power_kw=_limit(p.power_kw, row.position_power_kw),
                    cooling_kw=_limit(p.cooling_kw, row.position_cooling_kw),
                    max_weight_kg=weight,
                    state=state,
                    feed=row.feed,
                    cooling_loop=row.cooling_loop,
                )
            )
    return out


# --- semantic checks ----------------------------------------------------------------------------


def _duplicates(names: list[str]) -> list[str]:
    seen: set[str] = set()
    dup: list[str] = []
    for n in names:
        if n in seen and n not in dup:
            dup.append(n)
        seen.add(n)
    return dup


def _overlaps(hall: HallSpec, positions: list[ResolvedPosition], base: str) -> list[Problem]:
    """Pairs of positions whose footprints overlap (sweep over x; a few per hall)."""
    eps = 1e-6
    boxes = sorted(
        (
            p.x_m - p.width_m / 2,
            p.x_m + p.width_m / 2,
            p.y_m - p.depth_m / 2,
            p.y_m + p.depth_m / 2,
            i,
        )
        for i, p in enumerate(positions)
    )
    out: list[Problem] = []
    active: list[tuple[float, float, float, float, int]] = []
    for box in boxes:
        active = [a for a in active if a[1] > box[0] + eps]
        for a in active:
            if a[2] < box[3] - eps and box[2] < a[3] - eps:
                pa, pb = positions[a[4]], positions[box[4]]
                out.append(
                    Problem(
                        f"{base}.rows",
                        f"positions {pa.row_name}/{pa.name} and {pb.row_name}/{pb.name} of hall "
                        f"{hall.name} overlap (centres ({pa.x_m:g}, {pa.y_m:g}) and "
                        f"({pb.x_m:g}, {pb.y_m:g}) m); move one or shrink the pitch",
                    )
                )
                if len(out) >= 5:
                    return out
        active.append(box)
    return out


def _hall_size(hall: HallSpec) -> int:
    """Rack positions of a hall, counted without building them."""
    if hall.template is not None:
        return hall.template.rows * hall.template.positions_per_row
    return sum(r.positions if isinstance(r.positions, int) else len(r.positions) for r in hall.rows)


def _hall_problems(hall: HallSpec, base: str) -> list[Problem]:
    out: list[Problem] = []
    if (hall.template is None) == (not hall.rows):
        return [Problem(base, f"hall {hall.name} needs either template or rows (one of the two)")]
    rows = hall_rows(hall)
    for name in _duplicates([r.name for r in rows]):
        out.append(Problem(f"{base}.rows", f"row name '{name}' is used twice in hall {hall.name}"))
    for i, row in enumerate(rows):
        if not isinstance(row.positions, int):
            for name in _duplicates([p.name for p in row.positions]):
                out.append(
                    Problem(f"{base}.rows[{i}].positions", f"position '{name}' is listed twice")
                )
    positions = hall_positions(hall)
    keys = {f"{p.row_name}/{p.name}" for p in positions}
    for field in ("blocked", "reserved"):
        for j, key in enumerate(getattr(hall, field)):
            if key not in keys:
                out.append(
                    Problem(
                        f"{base}.{field}[{j}]",
                        f"hall {hall.name} has no position '{key}' (give ROW/POSITION, e.g. "
                        f"{positions[0].row_name}/{positions[0].name})",
                    )
                )
    # rows inside the hall
    where = f"{base}.template" if hall.template is not None else f"{base}.rows"
    reported: set[str] = set()
    for p in positions:
        x0, x1 = p.x_m - p.width_m / 2, p.x_m + p.width_m / 2
        y0, y1 = p.y_m - p.depth_m / 2, p.y_m + p.depth_m / 2
        eps = 1e-6
        if x0 < -eps or y0 < -eps or x1 > hall.width_m + eps or y1 > hall.depth_m + eps:
            if p.row_name in reported:
                continue
            reported.add(p.row_name)
            out.append(
                Problem(
                    where,
                    f"row {p.row_name} of hall {hall.name} lies outside the hall "
                    f"({hall.width_m:g} x {hall.depth_m:g} m): position {p.name} spans x "
                    f"{x0:g}..{x1:g}, y {y0:g}..{y1:g} m; move the row or enlarge the hall",
                )
            )
    out += _overlaps(hall, positions, base)
    free = sum(1 for p in positions if p.state == "free")
    if hall.hold_back > free:
        out.append(
            Problem(
                f"{base}.hold_back",
                f"holds back {hall.hold_back} positions but hall {hall.name} has {free} free",
            )
        )
    feeds = {p.feed for p in positions}
    loops = {p.cooling_loop for p in positions}
    for name in hall.feeds:
        if name not in feeds:
            out.append(
                Problem(
                    f"{base}.feeds.{name}",
                    f"no row of hall {hall.name} is on feed '{name}'; rows use "
                    f"{', '.join(sorted(feeds))}",
                )
            )
    for name in hall.cooling_loops:
        if name not in loops:
            out.append(
                Problem(
                    f"{base}.cooling_loops.{name}",
                    f"no row of hall {hall.name} is on cooling loop '{name}'; rows use "
                    f"{', '.join(sorted(loops))}",
                )
            )
    return out


def site_problems(site: SiteSpec, base: str = "site") -> list[Problem]:
    """Everything wrong with a site that its models do not check."""
    out: list[Problem] = []
    for name in _duplicates([b.name for b in site.buildings]):
        out.append(Problem(f"{base}.buildings", f"building name '{name}' is used twice"))
    buildings = {b.name for b in site.buildings}
    counted = sum(_hall_size(h) for b in site.buildings for h in b.halls)
    if counted > MAX_SITE_POSITIONS:  # before any position is built
        out.append(
            Problem(
                f"{base}.buildings",
                f"the halls hold {counted:,} rack positions, beyond the limit of "
                f"{MAX_SITE_POSITIONS:,}; check the templates' rows and positions_per_row",
            )
        )
        return out
    for i, b in enumerate(site.buildings):
        for name in _duplicates([h.name for h in b.halls]):
            out.append(
                Problem(f"{base}.buildings[{i}].halls", f"hall '{name}' is used twice in {b.name}")
            )
        for j, hall in enumerate(b.halls):
            out += _hall_problems(hall, f"{base}.buildings[{i}].halls[{j}]")
    pairs: set[frozenset[str]] = set()
    for k, d in enumerate(site.distances):
        for end in (d.a, d.b):
            if end not in buildings:
                out.append(
                    Problem(
                        f"{base}.distances[{k}]",
                        f"unknown building '{end}'; buildings: {', '.join(sorted(buildings))}",
                    )
                )
        if d.a == d.b:
            out.append(Problem(f"{base}.distances[{k}]", "a distance joins two buildings"))
        pair = frozenset((d.a, d.b))
        if pair in pairs:
            out.append(Problem(f"{base}.distances[{k}]", f"{d.a}-{d.b} is given twice; keep one"))
        pairs.add(pair)
    return out
