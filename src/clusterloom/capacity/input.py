"""The plan input (``clusterloom plan PLAN.yaml``, ``docs/capacity.md``): one YAML document,
checked like the cluster spec (frozen pydantic models, no unknown field, ranges in the
annotations, every problem named by its dotted field path and collected before refusing).

::

    version: 1
    name: two-sites
    horizon: {start: 2027Q1, periods: 8}        # quarters
    fabrics:                                    # the fabric choices every site may be built with
      - {name: 2-tier, template: hgx-1k-roce, tiers: 2}
      - {name: 3-tier, template: hgx-1k-roce, tiers: 3}
    sites:
      - name: east
        buildings:
          - name: b1
            halls:
              - name: h1
                rows: 8
                positions_per_row: 24
                position_power_kw: 45
                power: {it_mw: 8.6, pue: 1.25}   # or facility_mw with pue: it = facility / pue
                ready: {levels: [0.1, 0.5, 0.9], quarters: [2027Q1, 2027Q2, 2027Q4]}
    programs:
      - name: pretrain
        vendor: nvidia                           # whose accelerator deliveries can slip
        demand:
          east:
            levels: [0.1, 0.5, 0.9]
            accelerators: [[0, 0, 0], [512, 1024, 1536], ...]   # per period: one per level
    correlation: [[1.0]]                         # between programs, in their order
    parts:
      - id: switch:sn5600
        supplier: {vendor: nvidia, lead_time: {levels: [0.5, 0.9], quarters: [2, 3]},
                   price_usd: 32000, cap: 400}
    vendors: [{name: nvidia, slip: {probability: 0.2, quarters: [1, 2]}}]
    moves: {probability: 0.2, share: 0.3}        # demand moving between sites
    landing: {east: [west]}                      # east's demand may land at west
    installed: [{site: east, run: runs/east}]    # what `design -o` wrote
    costs: {idle_usd_per_accelerator_quarter: 5000, ...}

Units are in the field names (``_mw``, ``_kw``, ``_usd``, ``quarters``); a field with a unit
the model has no rule for (``it_kw``, ``price_eur``) is refused as unknown, with the fields
allowed there. Power is stated with its PUE: IT power ``it_mw``, or the facility's
``facility_mw`` and the rule ``it = facility / pue``; both given must agree.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field, ValidationError, model_validator

from clusterloom.errors import Problem, SpecError
from clusterloom.spec._base import SpecModel
from clusterloom.spec.limits import (
    MAX_ACCELERATORS,
    MAX_HALL_ROWS,
    MAX_ROW_POSITIONS,
    PowerKw,
    PriceUsd,
)
from clusterloom.spec.load import read_document, read_yaml, validation_problems

__all__ = [
    "CostsInput",
    "Distribution",
    "FabricChoice",
    "Forecast",
    "HallInput",
    "PartInput",
    "PlanInput",
    "PowerInput",
    "ProgramInput",
    "ReservationInput",
    "SiteInput",
    "Supplier",
    "example_plan",
    "load_plan",
    "parse_plan",
    "quarter_index",
    "quarter_label",
]

_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
_QUARTER = re.compile(r"^(\d{4})Q([1-4])$")
#: quarters of a horizon (25 years)
MAX_PERIODS = 100
#: programs, sites, parts, quantile levels: generous bounds so nothing huge reaches numpy
MAX_ENTRIES = 1_000
#: PUE between 1 (no overhead) and 3 (well beyond any data centre built this century)
Pue = Annotated[float, Field(ge=1.0, le=3.0)]
PowerMw = Annotated[float, Field(gt=0, le=100_000)]
Probability = Annotated[float, Field(ge=0.0, le=1.0)]
Quarters = Annotated[int, Field(ge=0, le=MAX_PERIODS)]
Name = Annotated[str, Field(pattern=_NAME, max_length=128)]
Quarter = Annotated[str, Field(pattern=_QUARTER.pattern)]


def quarter_index(label: str) -> int:
    """``2027Q1`` -> 8108 (year x 4 + quarter - 1), so quarters subtract."""
    m = _QUARTER.match(label)
    if m is None:
        raise ValueError(f"not a quarter like 2027Q1: {label!r}")
    return int(m.group(1)) * 4 + int(m.group(2)) - 1


def quarter_label(index: int) -> str:
    return f"{index // 4}Q{index % 4 + 1}"


def monotone_levels(levels: list[float]) -> None:
    if any(b <= a for a, b in itertools.pairwise(levels)):
        raise ValueError(f"levels must be strictly increasing, got {levels}")
    if levels and not (levels[0] > 0.0 and levels[-1] < 1.0):
        raise ValueError(f"levels are probabilities strictly between 0 and 1, got {levels}")


class Distribution(SpecModel):
    """A distribution over whole quarters by its quantiles: ``quarters[i]`` is the value at
    probability ``levels[i]``; between the levels (and out to 0 and 1, flat beyond the first
    and last) the inverse CDF is interpolated linearly and rounded to the nearest quarter."""

    levels: list[Probability] = Field(min_length=1, max_length=MAX_ENTRIES)
    quarters: list[Annotated[float, Field(ge=0, le=MAX_PERIODS)]] | list[Quarter] = Field(
        min_length=1, max_length=MAX_ENTRIES
    )

    @model_validator(mode="after")
    def _check(self) -> Distribution:
        monotone_levels(self.levels)
        if len(self.quarters) != len(self.levels):
            raise ValueError(
                f"{len(self.levels)} levels but {len(self.quarters)} quarters; give one each"
            )
        values = [quarter_index(q) if isinstance(q, str) else q for q in self.quarters]
        if any(b < a for a, b in itertools.pairwise(values)):
            raise ValueError(f"quantiles must not decrease with their level, got {self.quarters}")
        return self

    def values(self) -> list[float]:
        """The quantiles as numbers (a quarter label as its ``quarter_index``)."""
        return [float(quarter_index(q)) if isinstance(q, str) else float(q) for q in self.quarters]


class PowerInput(SpecModel):
    """A hall's power with its PUE: ``it_mw``, or ``facility_mw`` (IT = facility / PUE)."""

    it_mw: PowerMw | None = None
    facility_mw: PowerMw | None = None
    pue: Pue

    @model_validator(mode="after")
    def _rule(self) -> PowerInput:
        if self.it_mw is None and self.facility_mw is None:
            raise ValueError("give it_mw (IT load) or facility_mw (the rule: it = facility / pue)")
        if self.it_mw is not None and self.facility_mw is not None:
            implied = self.facility_mw / self.pue
            if abs(implied - self.it_mw) > 0.005 * self.it_mw:
                raise ValueError(
                    f"it_mw {self.it_mw:g} and facility_mw {self.facility_mw:g} / pue "
                    f"{self.pue:g} = {implied:.3f} disagree; give one of them"
                )
        return self

    @property
    def it_kw(self) -> float:
        it = self.it_mw if self.it_mw is not None else (self.facility_mw or 0.0) / self.pue
        return it * 1000.0


class HallInput(SpecModel):
    """A hall: rows of rack positions, its IT power, and when it is ready (a certain quarter
    or a distribution; before the horizon: ready from its start)."""

    name: Name
    rows: Annotated[int, Field(ge=1, le=MAX_HALL_ROWS)]
    positions_per_row: Annotated[int, Field(ge=1, le=MAX_ROW_POSITIONS)]
    position_power_kw: PowerKw
    power: PowerInput
    ready: Quarter | Distribution | None = None

    @property
    def positions(self) -> int:
        return self.rows * self.positions_per_row


class BuildingInput(SpecModel):
    name: Name
    x_m: Annotated[float, Field(ge=-100_000, le=100_000)] = 0.0
    y_m: Annotated[float, Field(ge=-100_000, le=100_000)] = 0.0
    halls: list[HallInput] = Field(min_length=1, max_length=MAX_ENTRIES)


class UnreservedInput(SpecModel):
    """Power and positions asked for later, unreserved: asked in a period from the next one
    on, available ``lead_quarters`` later, paid per unit and quarter from then."""

    kw_usd_per_quarter: PriceUsd
    position_usd_per_quarter: PriceUsd
    lead_quarters: Annotated[int, Field(ge=0, le=MAX_PERIODS)]


class ReservationInput(SpecModel):
    """A site whose power and rack positions must be contracted before they are used (a
    colocation or a utility's allocation): ``held_kw`` and ``held_positions`` are contracted
    now; more can be **reserved now** at ``kw_usd_per_quarter`` and
    ``position_usd_per_quarter`` (paid each quarter from when it is available, ``lead_quarters``
    from now, to the horizon's end, used or not); ``unreserved`` says what asking later costs
    and how long it takes (none: nothing beyond what is held and reserved). The halls still
    bound what can be used (their power, positions and readiness)."""

    held_kw: Annotated[float, Field(ge=0, le=1e8)] = 0.0
    held_positions: Annotated[float, Field(ge=0, le=1e8)] = 0.0
    kw_usd_per_quarter: PriceUsd
    position_usd_per_quarter: PriceUsd
    lead_quarters: Annotated[int, Field(ge=0, le=MAX_PERIODS)] = 0
    unreserved: UnreservedInput | None = None


class SiteInput(SpecModel):
    name: Name
    buildings: list[BuildingInput] = Field(min_length=1, max_length=MAX_ENTRIES)
    reservation: ReservationInput | None = Field(
        default=None,
        description="power and positions to be contracted before use; none: the halls' own",
    )

    @property
    def halls(self) -> tuple[HallInput, ...]:
        return tuple(h for b in self.buildings for h in b.halls)


class FabricChoice(SpecModel):
    """One way to build a site's backend: a cluster spec template (a built-in example's name
    or a path to a spec, relative to the plan) whose accelerator count is scaled, with the
    backend's tiers fixed."""

    name: Name
    template: str = Field(min_length=1, max_length=4096)
    tiers: Literal[2, 3]


class Forecast(SpecModel):
    """Cumulative accelerators wanted running at a site by the end of each period: quantiles
    (``levels`` and one row per period with one value per level) or a sample set (``samples``:
    equally likely paths, one value per period)."""

    levels: list[Probability] | None = Field(default=None, max_length=MAX_ENTRIES)
    accelerators: list[list[Annotated[float, Field(ge=0, le=MAX_ACCELERATORS)]]] | None = Field(
        default=None, max_length=MAX_PERIODS
    )
    samples: list[list[Annotated[float, Field(ge=0, le=MAX_ACCELERATORS)]]] | None = Field(
        default=None, max_length=100_000
    )

    @model_validator(mode="after")
    def _one_form(self) -> Forecast:
        quantiles = self.levels is not None or self.accelerators is not None
        if quantiles == (self.samples is not None):
            raise ValueError("give quantiles (levels and accelerators) or samples, one of them")
        if quantiles:
            if self.levels is None or self.accelerators is None:
                raise ValueError("quantiles need both levels and accelerators")
            monotone_levels(self.levels)
            for t, row in enumerate(self.accelerators):
                if len(row) != len(self.levels):
                    raise ValueError(
                        f"period {t} has {len(row)} values for {len(self.levels)} levels"
                    )
                if any(b < a for a, b in itertools.pairwise(row)):
                    raise ValueError(
                        f"period {t}: quantiles {row} are not monotone (a higher level "
                        "must not forecast fewer accelerators)"
                    )
            for t in range(1, len(self.accelerators)):
                if any(
                    b < a
                    for a, b in zip(self.accelerators[t - 1], self.accelerators[t], strict=True)
                ):
                    raise ValueError(
                        f"period {t}: demand is cumulative and may not fall below period {t - 1}"
                    )
        else:
            assert self.samples is not None
            if len(self.samples) < 2:
                raise ValueError("a sample set needs at least 2 samples")
            lengths = {len(s) for s in self.samples}
            if len(lengths) != 1:
                raise ValueError("every sample needs one value per period")
        return self

    @property
    def periods(self) -> int:
        rows = self.accelerators if self.accelerators is not None else self.samples
        assert rows is not None
        return len(rows) if self.accelerators is not None else len(rows[0])

    def quantile_table(self) -> tuple[np.ndarray, np.ndarray]:
        """(levels [L], values [T, L]): the quantiles, or a sample set's order statistics at
        the plotting positions ``(i + 0.5) / n`` (Hazen)."""
        if self.samples is not None:
            arr = np.sort(np.asarray(self.samples, dtype=np.float64), axis=0)  # [n, T]
            n = arr.shape[0]
            return (np.arange(n) + 0.5) / n, arr.T.copy()
        assert self.levels is not None and self.accelerators is not None
        return np.asarray(self.levels, dtype=np.float64), np.asarray(
            self.accelerators, dtype=np.float64
        )


class ProgramInput(SpecModel):
    name: Name
    vendor: Name | None = Field(default=None, description="whose accelerator deliveries slip")
    source: Name | None = Field(
        default=None,
        description="who made the forecast (a team, a system): learning reads its bias by name",
    )
    demand: dict[Name, Forecast] = Field(min_length=1)


class Supplier(SpecModel):
    vendor: Name
    lead_time: Annotated[int, Field(ge=0, le=MAX_PERIODS)] | Distribution
    #: price of a unit: one figure, or one per period of the horizon
    price_usd: PriceUsd | list[PriceUsd]
    #: units that can be ordered each period: one figure or one per period; none: no cap
    cap: Annotated[float, Field(ge=0, le=1e9)] | list[Annotated[float, Field(ge=0, le=1e9)]]
    expedite_usd: PriceUsd | None = Field(
        default=None, description="extra per unit delivered in one period; default: costs'"
    )
    lot: Annotated[int, Field(ge=1, le=1_000_000)] = Field(
        default=1, description="units an order now comes in (orders now are whole lots)"
    )


class PartInput(SpecModel):
    """A part the design stages count (``category:item`` of the design's BOM, e.g.
    ``switch:sn5600``, ``transceiver:sr4-400g``, ``trunk:144-fibre MPO trunk MMF``,
    ``patch-panel:1U 144-fibre MPO panel``) and who supplies it."""

    id: str = Field(pattern=r"^[a-z-]+:.+$", max_length=256)
    supplier: Supplier


class Slip(SpecModel):
    probability: Probability
    #: the slip in quarters, drawn uniformly between the two (inclusive)
    quarters: tuple[
        Annotated[int, Field(ge=1, le=MAX_PERIODS)], Annotated[int, Field(ge=1, le=MAX_PERIODS)]
    ]

    @model_validator(mode="after")
    def _order(self) -> Slip:
        if self.quarters[1] < self.quarters[0]:
            raise ValueError(f"quarters [low, high] with low <= high, got {list(self.quarters)}")
        return self


class VendorInput(SpecModel):
    name: Name
    slip: Slip


class MovesInput(SpecModel):
    """Demand moving between sites: per scenario and program, with ``probability``, a
    ``share`` of its demand at one site lands at another the ``landing`` rules allow."""

    probability: Probability = 0.0
    share: Annotated[float, Field(gt=0.0, le=1.0)] = 0.25


class InstalledInput(SpecModel):
    """What is installed at a site now: a run directory as ``design -o`` wrote it."""

    site: Name
    run: str = Field(min_length=1, max_length=4096)


class CostsInput(SpecModel):
    idle_usd_per_accelerator_quarter: PriceUsd
    expedite_fraction: Annotated[float, Field(ge=0, le=10)] = Field(
        description="extra of an expedited unit, as a fraction of its price (unless the "
        "supplier gives expedite_usd)"
    )
    carry_fraction_per_quarter: Annotated[float, Field(ge=0, le=1)]
    rework_usd_per_accelerator: PriceUsd


class CurvesInput(SpecModel):
    """The sizes (accelerators) the design stages run at per site and fabric choice; none:
    four sizes up to what the site's positions hold. ``place`` runs placement and cabling
    on the site's floor (else the fabric stage alone, with its assumed media)."""

    sizes: list[Annotated[int, Field(ge=1, le=MAX_ACCELERATORS)]] | None = Field(
        default=None, max_length=32
    )
    place: bool = True


class PlanInput(SpecModel):
    version: Literal[1]
    name: Name
    description: str = Field(default="", max_length=4096)
    horizon: Horizon
    fabrics: list[FabricChoice] = Field(min_length=1, max_length=8)
    sites: list[SiteInput] = Field(min_length=1, max_length=MAX_ENTRIES)
    programs: list[ProgramInput] = Field(min_length=1, max_length=MAX_ENTRIES)
    correlation: list[list[Annotated[float, Field(ge=-1, le=1)]]] | None = None
    parts: list[PartInput] = Field(min_length=1, max_length=MAX_ENTRIES)
    vendors: list[VendorInput] = Field(default_factory=list, max_length=MAX_ENTRIES)
    moves: MovesInput = MovesInput()
    landing: dict[Name, list[Name]] = Field(default_factory=dict)
    installed: list[InstalledInput] = Field(default_factory=list, max_length=MAX_ENTRIES)
    costs: CostsInput
    curves: CurvesInput = CurvesInput()

    @property
    def periods(self) -> tuple[str, ...]:
        start = quarter_index(self.horizon.start)
        return tuple(quarter_label(start + t) for t in range(self.horizon.periods))

    def correlation_matrix(self) -> np.ndarray:
        if self.correlation is None:
            return np.eye(len(self.programs))
        return np.asarray(self.correlation, dtype=np.float64)


class Horizon(SpecModel):
    start: Quarter
    periods: Annotated[int, Field(ge=1, le=MAX_PERIODS)]


PlanInput.model_rebuild()


def _unique(names: list[str], where: str, what: str) -> list[Problem]:
    seen: set[str] = set()
    out = []
    for i, n in enumerate(names):
        if n in seen:
            out.append(Problem(f"{where}[{i}].name", f"{what} '{n}' is given twice"))
        seen.add(n)
    return out


def _per_period(value: float | list[float], where: str, periods: int) -> list[Problem]:
    if isinstance(value, list) and len(value) != periods:
        return [Problem(where, f"{len(value)} values for {periods} periods; give one per period")]
    return []


def _correlation_problems(plan: PlanInput) -> list[Problem]:
    if plan.correlation is None:
        return []
    n = len(plan.programs)
    c = plan.correlation
    if len(c) != n or any(len(row) != n for row in c):
        return [Problem("correlation", f"a {n} x {n} matrix, one row and column per program")]
    m = np.asarray(c, dtype=np.float64)
    problems = []
    if not np.allclose(np.diag(m), 1.0):
        problems.append(Problem("correlation", "the diagonal must be 1 (a program with itself)"))
    if not np.allclose(m, m.T, atol=1e-9):
        i, j = np.argwhere(~np.isclose(m, m.T, atol=1e-9))[0]
        problems.append(
            Problem(f"correlation[{i}][{j}]", f"not symmetric: {m[i, j]:g} vs {m[j, i]:g}")
        )
    elif np.linalg.eigvalsh(m).min() < -1e-9:
        problems.append(
            Problem(
                "correlation",
                f"not positive semi-definite (smallest eigenvalue "
                f"{np.linalg.eigvalsh(m).min():.3g}): these correlations cannot hold together",
            )
        )
    return problems


def check_plan(plan: PlanInput) -> list[Problem]:
    """What the schema alone cannot check: names unique and known, one value per period,
    every forecast over the horizon, the correlation matrix."""
    T = plan.horizon.periods
    site_names = [s.name for s in plan.sites]
    known = set(site_names)
    problems = _unique(site_names, "sites", "site")
    problems += _unique([f.name for f in plan.fabrics], "fabrics", "fabric choice")
    problems += _unique([p.name for p in plan.programs], "programs", "program")
    problems += _unique([v.name for v in plan.vendors], "vendors", "vendor")
    seen_parts: set[str] = set()
    for i, part in enumerate(plan.parts):
        if part.id in seen_parts:
            problems.append(Problem(f"parts[{i}].id", f"part '{part.id}' is given twice"))
        seen_parts.add(part.id)
        base = f"parts[{i}].supplier"
        problems += _per_period(part.supplier.price_usd, f"{base}.price_usd", T)
        problems += _per_period(part.supplier.cap, f"{base}.cap", T)
        lt = part.supplier.lead_time
        if isinstance(lt, Distribution) and isinstance(lt.quarters[0], str):
            problems.append(
                Problem(
                    f"{base}.lead_time.quarters", "a lead time is a number of quarters, not a date"
                )
            )
    for i, s in enumerate(plan.sites):
        problems += _unique([b.name for b in s.buildings], f"sites[{i}].buildings", "building")
        r = s.reservation
        if r is not None:
            leads = [(f"sites[{i}].reservation.lead_quarters", r.lead_quarters)]
            if r.unreserved is not None:
                leads.append(
                    (f"sites[{i}].reservation.unreserved.lead_quarters", r.unreserved.lead_quarters)
                )
            for where, lead in leads:
                if lead >= T:
                    problems.append(
                        Problem(
                            where,
                            f"{lead} quarters is beyond the horizon of {T}: it would never be "
                            f"available; give at most {T - 1}",
                        )
                    )
        for j, b in enumerate(s.buildings):
            problems += _unique(
                [h.name for h in b.halls], f"sites[{i}].buildings[{j}].halls", "hall"
            )
    for i, p in enumerate(plan.programs):
        for site, forecast in p.demand.items():
            where = f"programs[{i}].demand.{site}"
            if site not in known:
                problems.append(Problem(where, f"no site '{site}'; sites: {', '.join(site_names)}"))
            if forecast.periods != T:
                problems.append(
                    Problem(where, f"{forecast.periods} periods for a horizon of {T}; give {T}")
                )
    for site, others in plan.landing.items():
        for name in [site, *others]:
            if name not in known:
                problems.append(
                    Problem(f"landing.{site}", f"no site '{name}'; sites: {', '.join(site_names)}")
                )
    for i, inst in enumerate(plan.installed):
        if inst.site not in known:
            problems.append(
                Problem(
                    f"installed[{i}].site", f"no site '{inst.site}'; sites: {', '.join(site_names)}"
                )
            )
    problems += _correlation_problems(plan)
    return problems


def example_plan(name: str = "two-sites") -> Path:
    """The path of a built-in example plan (``capacity/plans/NAME.yaml``)."""
    from importlib import resources

    path = Path(str(resources.files("clusterloom.capacity").joinpath(f"plans/{name}.yaml")))
    if not path.is_file():
        raise SpecError([Problem("--example", f"no example plan '{name}'")])
    return path


def plan_from_dict(data: dict[str, Any]) -> PlanInput:
    """A plan from its data (read YAML, or a plan changed as data by reconciliation, triage or
    learning), validated and checked; ``SpecError`` listing every problem."""
    try:
        plan = PlanInput.model_validate(data)
    except ValidationError as exc:
        raise SpecError(validation_problems(exc, PlanInput)) from exc
    problems = check_plan(plan)
    if problems:
        raise SpecError(problems)
    return plan


def parse_plan(text: str, source: str = "<plan>") -> PlanInput:
    """Parse and check a plan given as YAML text; ``SpecError`` listing every problem."""
    return plan_from_dict(read_yaml(text, source, "a plan"))


def load_plan(path: str | Path) -> PlanInput:
    """Read and check the plan at ``path``."""
    p = Path(path)
    return parse_plan(read_document(p, "a plan"), source=str(p))
