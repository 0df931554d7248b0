"""A sources file (``clusterloom capacity reconcile SOURCES.yaml``, ``docs/capacity.md``):
several sources describing the same sites and demand, each in its own definitions, and the
declared rules that map their units and dates to the plan's one model.

::

    version: 1
    horizon: {start: 2027Q1, periods: 8}
    sites:                                   # canonical names and the aliases sources use
      east: [EAST-DC, ash-1]
      west: [WEST-DC]
    sources:
      - name: facilities
        rules: {pue: {east: 1.25, west: 1.3}, power_factor: 0.95, dates: containing}
        halls:
          - {site: EAST-DC, hall: b1/h2, power: {value: 3.0, unit: facility_mw},
             ready: 2027-07-15}
        demand:
          - {program: pretrain, site: east, unit: racks, levels: [0.5],
             values: {2027-03: [8], ...}}
        history:                              # what it said about periods that happened
          - {quantity: it_power, site: east, date: 2026Q4, value: 3.0, unit: facility_mw}

The model's units are IT megawatts (``it_mw``), accelerators and quarters. The rules:

- ``it_kw``: / 1000 (no rule needed); ``facility_mw``: IT = facility / ``pue``;
  ``facility_kw``: / 1000 then / ``pue``; ``facility_kva``: x ``power_factor`` (kW) / 1000 /
  ``pue``.
- ``gpus`` and ``accelerators``: as they are; ``nodes``: x ``gpus_per_node``; ``racks``:
  x ``nodes_per_rack`` x ``gpus_per_node``.
- dates: a quarter (``2027Q3``) as it is; a month (``2027-08``) or an ISO date
  (``2027-08-14``) by the ``dates`` rule: ``containing`` (the calendar quarter that holds
  it) or ``following`` (a date after a quarter's first day counts from the next quarter: a
  hall ready mid-quarter is counted from the first whole quarter).

A value in a unit whose rule the source does not declare is refused, naming the field and the
rule to declare ("inconsistent units without a rule"). Rules are per source: one source's PUE
says nothing about another's megawatts.
"""

from __future__ import annotations

import datetime as dt
import itertools
import re
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, ValidationError, model_validator

from clusterloom.capacity.input import (
    MAX_ENTRIES,
    MAX_PERIODS,
    Horizon,
    Name,
    Probability,
    Pue,
    monotone_levels,
    quarter_index,
)
from clusterloom.errors import Problem, SpecError
from clusterloom.spec._base import SpecModel
from clusterloom.spec.limits import MAX_HALL_ROWS, MAX_ROW_POSITIONS, PowerKw
from clusterloom.spec.load import read_document, read_yaml, validation_problems

__all__ = [
    "DEMAND_UNITS",
    "POWER_UNITS",
    "Converted",
    "DemandEntry",
    "HallEntry",
    "HistoryEntry",
    "Rules",
    "SourceInput",
    "SourcesInput",
    "demand_to_accelerators",
    "load_sources",
    "parse_sources",
    "power_to_it_mw",
    "pue_for",
    "to_quarter",
]

PowerUnit = Literal["it_mw", "it_kw", "facility_mw", "facility_kw", "facility_kva"]
DemandUnit = Literal["accelerators", "gpus", "nodes", "racks"]
POWER_UNITS: tuple[str, ...] = ("it_mw", "it_kw", "facility_mw", "facility_kw", "facility_kva")
DEMAND_UNITS: tuple[str, ...] = ("accelerators", "gpus", "nodes", "racks")
_MONTH = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_QUARTER = re.compile(r"^\d{4}Q[1-4]$")


def _date_text(value: object) -> object:
    """YAML reads ``2027-08-14`` as a date: keep it as its ISO text."""
    return value.isoformat() if isinstance(value, dt.date) else value


DateText = Annotated[str, BeforeValidator(_date_text), Field(min_length=6, max_length=10)]
Amount = Annotated[float, Field(ge=0, le=1e9)]


class Rules(SpecModel):
    """A source's declared definitions. ``pue`` is one figure or one per site (canonical name
    or alias)."""

    pue: Pue | dict[str, Pue] | None = None
    power_factor: Annotated[float, Field(gt=0.0, le=1.0)] | None = None
    gpus_per_node: Annotated[int, Field(ge=1, le=1024)] | None = None
    nodes_per_rack: Annotated[int, Field(ge=1, le=1024)] | None = None
    dates: Literal["containing", "following"] | None = None


class PowerValue(SpecModel):
    value: Annotated[float, Field(gt=0, le=1e9)]
    unit: str = Field(min_length=1, max_length=32)


class HallEntry(SpecModel):
    """What a source says of one hall: its power, when it is ready, its floor (each optional)."""

    site: str = Field(min_length=1, max_length=128)
    hall: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
    power: PowerValue | None = None
    ready: DateText | None = None
    rows: Annotated[int, Field(ge=1, le=MAX_HALL_ROWS)] | None = None
    positions_per_row: Annotated[int, Field(ge=1, le=MAX_ROW_POSITIONS)] | None = None
    position_power_kw: PowerKw | None = None


class DemandEntry(SpecModel):
    """A source's forecast of a program at a site: per date, one value per level (cumulative
    demand by the end of that date's quarter, in ``unit``)."""

    program: Name
    site: str = Field(min_length=1, max_length=128)
    vendor: Name | None = None
    unit: str = Field(min_length=1, max_length=32)
    levels: list[Probability] = Field(min_length=1, max_length=MAX_ENTRIES)
    values: dict[DateText, list[Amount]] = Field(min_length=1, max_length=12 * MAX_PERIODS)

    @model_validator(mode="after")
    def _shape(self) -> DemandEntry:
        monotone_levels(self.levels)
        for date, row in self.values.items():
            if len(row) != len(self.levels):
                raise ValueError(f"{date}: {len(row)} values for {len(self.levels)} levels")
            if any(b < a for a, b in itertools.pairwise(row)):
                raise ValueError(
                    f"{date}: quantiles {row} are not monotone (a higher level must not "
                    "forecast less)"
                )
        return self


class HistoryEntry(SpecModel):
    """What a source said about a period that has happened, held against the actuals."""

    quantity: Literal["demand", "it_power", "ready"]
    site: str = Field(min_length=1, max_length=128)
    program: Name | None = None
    hall: str | None = Field(default=None, max_length=260)
    date: DateText
    value: Annotated[float, Field(ge=0, le=1e9)] | None = None
    unit: str | None = Field(default=None, max_length=32)

    @model_validator(mode="after")
    def _shape(self) -> HistoryEntry:
        if (self.quantity == "demand") != (self.program is not None):
            raise ValueError("demand names its program; power and readiness do not")
        if (self.quantity == "ready") != (self.hall is not None):
            raise ValueError("readiness names its hall (building/hall); the others do not")
        if self.quantity != "ready" and (self.value is None or self.unit is None):
            raise ValueError("give the value and its unit")
        return self


class SourceInput(SpecModel):
    name: Name
    rules: Rules = Rules()
    halls: list[HallEntry] = Field(default_factory=list, max_length=MAX_ENTRIES)
    demand: list[DemandEntry] = Field(default_factory=list, max_length=MAX_ENTRIES)
    history: list[HistoryEntry] = Field(default_factory=list, max_length=100_000)


class Tolerances(SpecModel):
    """When two figures agree: relative for power and demand, whole quarters for dates."""

    power: Annotated[float, Field(ge=0, le=1)] = 0.05
    demand: Annotated[float, Field(ge=0, le=1)] = 0.10
    ready_quarters: Annotated[int, Field(ge=0, le=MAX_PERIODS)] = 0


class SourcesInput(SpecModel):
    version: Literal[1]
    name: Name = "sources"
    horizon: Horizon
    sites: dict[Name, list[str]] = Field(min_length=1, max_length=MAX_ENTRIES)
    sources: list[SourceInput] = Field(min_length=1, max_length=MAX_ENTRIES)
    tolerance: Tolerances = Tolerances()
    #: trust at or above which disagreeing sources make a conflict (the prior is 0.5)
    conflict_trust: Probability = 0.5

    def canonical(self) -> dict[str, str]:
        """Every name a site goes by (its canonical name included) -> the canonical name."""
        out: dict[str, str] = {}
        for name, aliases in self.sites.items():
            out[name] = name
            for a in aliases:
                out[a] = name
        return out


def to_quarter(text: str, rule: str | None) -> int:
    """A quarter label, a month or an ISO date as a ``quarter_index``; ``ValueError`` naming
    the missing rule or the bad date."""
    if _QUARTER.match(text):
        return quarter_index(text)
    m = _MONTH.match(text)
    if m:
        year, month, day = int(m.group(1)), int(m.group(2)), 1
    elif _ISO.match(text):
        try:
            d = dt.date.fromisoformat(text)
        except ValueError as exc:
            raise ValueError(f"'{text}' is not a date: {exc}") from exc
        year, month, day = d.year, d.month, d.day
    else:
        raise ValueError(f"'{text}' is not a quarter (2027Q3), a month (2027-08) or a date")
    if rule is None:
        raise ValueError(
            f"'{text}' is a {'month' if m else 'date'}, inconsistent with the model's quarters "
            "without a rule: declare rules.dates (containing or following)"
        )
    q = year * 4 + (month - 1) // 3
    first_of_quarter = month in (1, 4, 7, 10) and day == 1
    if rule == "following" and not first_of_quarter:
        q += 1
    return q


class Converted(SpecModel):
    """A value in the model's unit and the rule that got it there."""

    value: float
    rule: str


def pue_for(rules: Rules, site: str, names: dict[str, str]) -> float | None:
    """The PUE ``rules`` declare for ``site`` (canonical), None if they declare none."""
    if rules.pue is None or isinstance(rules.pue, float):
        return rules.pue
    for key, v in rules.pue.items():
        if names.get(key, key) == site:
            return v
    return None


def power_to_it_mw(
    value: float, unit: str, rules: Rules, site: str, names: dict[str, str]
) -> Converted:
    """``value`` in ``unit`` as IT MW by ``rules`` (``ValueError`` naming a missing rule)."""
    if unit == "it_mw":
        return Converted(value=value, rule="it_mw as given")
    if unit == "it_kw":
        return Converted(value=value / 1000.0, rule="it_kw / 1000")
    if unit not in POWER_UNITS:
        raise ValueError(f"unit '{unit}' is not one of {', '.join(POWER_UNITS)}")
    pue = pue_for(rules, site, names)
    if pue is None:
        raise ValueError(
            f"{unit} is inconsistent with the model's it_mw without a rule: declare "
            f"rules.pue (for site {site})"
        )
    if unit == "facility_mw":
        return Converted(value=value / pue, rule=f"it = facility_mw / pue {pue:g}")
    if unit == "facility_kw":
        return Converted(value=value / 1000.0 / pue, rule=f"it = facility_kw / 1000 / pue {pue:g}")
    if rules.power_factor is None:
        raise ValueError(
            "facility_kva is inconsistent with the model's it_mw without a rule: declare "
            "rules.power_factor (kW = kVA x power factor)"
        )
    pf = rules.power_factor
    return Converted(
        value=value * pf / 1000.0 / pue,
        rule=f"it = facility_kva x power factor {pf:g} / 1000 / pue {pue:g}",
    )


def demand_to_accelerators(value: float, unit: str, rules: Rules) -> Converted:
    """``value`` in ``unit`` as accelerators by ``rules`` (``ValueError`` naming a missing
    rule)."""
    if unit in ("accelerators", "gpus"):
        return Converted(value=value, rule=f"{unit} as accelerators")
    if unit not in DEMAND_UNITS:
        raise ValueError(f"unit '{unit}' is not one of {', '.join(DEMAND_UNITS)}")
    if rules.gpus_per_node is None:
        raise ValueError(
            f"{unit} is inconsistent with the model's accelerators without a rule: declare "
            "rules.gpus_per_node"
        )
    g = rules.gpus_per_node
    if unit == "nodes":
        return Converted(value=value * g, rule=f"nodes x gpus_per_node {g}")
    if rules.nodes_per_rack is None:
        raise ValueError(
            "racks is inconsistent with the model's accelerators without a rule: declare "
            "rules.nodes_per_rack"
        )
    r = rules.nodes_per_rack
    return Converted(value=value * r * g, rule=f"racks x nodes_per_rack {r} x gpus_per_node {g}")


def check_sources(doc: SourcesInput) -> list[Problem]:
    """Names known and unique, every unit and date with its rule."""
    problems: list[Problem] = []
    names = doc.canonical()
    seen_alias: dict[str, str] = {}
    for site, aliases in doc.sites.items():
        for a in [site, *aliases]:
            if a in seen_alias and seen_alias[a] != site:
                problems.append(
                    Problem(f"sites.{site}", f"'{a}' is already a name of site {seen_alias[a]}")
                )
            seen_alias[a] = site
    seen: set[str] = set()
    known = ", ".join(sorted(names))

    def site_of(name: str, where: str) -> str | None:
        if name not in names:
            problems.append(Problem(where, f"no site '{name}'; names: {known}"))
            return None
        return names[name]

    for i, src in enumerate(doc.sources):
        base = f"sources[{i}]"
        if src.name in seen:
            problems.append(Problem(f"{base}.name", f"source '{src.name}' is given twice"))
        seen.add(src.name)
        if isinstance(src.rules.pue, dict):
            for key in src.rules.pue:
                site_of(key, f"{base}.rules.pue.{key}")
        halls_seen: set[tuple[str, str]] = set()
        for j, h in enumerate(src.halls):
            where = f"{base}.halls[{j}]"
            hall_site = site_of(h.site, f"{where}.site")
            if hall_site is None:
                continue
            site = hall_site
            if (site, h.hall) in halls_seen:
                problems.append(Problem(f"{where}.hall", f"hall {site}/{h.hall} is given twice"))
            halls_seen.add((site, h.hall))
            if h.power is not None:
                try:
                    power_to_it_mw(h.power.value, h.power.unit, src.rules, site, names)
                except ValueError as exc:
                    problems.append(Problem(f"{where}.power.unit", str(exc)))
            if h.ready is not None:
                try:
                    to_quarter(h.ready, src.rules.dates)
                except ValueError as exc:
                    problems.append(Problem(f"{where}.ready", str(exc)))
        demand_seen: set[tuple[str, str]] = set()
        for j, d in enumerate(src.demand):
            where = f"{base}.demand[{j}]"
            demand_site = site_of(d.site, f"{where}.site")
            if demand_site is None:
                continue
            if (d.program, demand_site) in demand_seen:
                problems.append(
                    Problem(where, f"demand of {d.program} at {demand_site} is given twice")
                )
            demand_seen.add((d.program, demand_site))
            try:
                demand_to_accelerators(1.0, d.unit, src.rules)
            except ValueError as exc:
                problems.append(Problem(f"{where}.unit", str(exc)))
            quarters: dict[int, str] = {}
            for date in d.values:
                try:
                    q = to_quarter(date, src.rules.dates)
                except ValueError as exc:
                    problems.append(Problem(f"{where}.values.{date}", str(exc)))
                    continue
                if q in quarters and _QUARTER.match(date) and _QUARTER.match(quarters[q]):
                    problems.append(Problem(f"{where}.values.{date}", "a quarter given twice"))
                quarters[q] = date
        for j, e in enumerate(src.history):
            where = f"{base}.history[{j}]"
            history_site = site_of(e.site, f"{where}.site")
            try:
                to_quarter(e.date, src.rules.dates)
            except ValueError as exc:
                problems.append(Problem(f"{where}.date", str(exc)))
            if history_site is None or e.unit is None or e.value is None:
                continue
            try:
                if e.quantity == "it_power":
                    power_to_it_mw(e.value, e.unit, src.rules, history_site, names)
                else:
                    demand_to_accelerators(e.value, e.unit, src.rules)
            except ValueError as exc:
                problems.append(Problem(f"{where}.unit", str(exc)))
    return problems


def parse_sources(text: str, source: str = "<sources>") -> SourcesInput:
    """Parse and check a sources file given as YAML; ``SpecError`` listing every problem."""
    data = read_yaml(text, source, "a sources file")
    try:
        doc = SourcesInput.model_validate(data)
    except ValidationError as exc:
        raise SpecError(validation_problems(exc, SourcesInput)) from exc
    problems = check_sources(doc)
    if problems:
        raise SpecError(problems)
    return doc


def load_sources(path: str | Path) -> SourcesInput:
    p = Path(path)
    return parse_sources(read_document(p, "a sources file"), source=str(p))
