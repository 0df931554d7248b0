"""Reconciliation (issue 22 part 4: measure, enrich, regrade; ``docs/capacity.md``): the
sources of a sources file (``capacity.sources``) mapped to the plan's one model with
provenance per field, each source's trust per kind of field graded from what happened
(``capacity.actuals``), and the conflicts that remain.

**Trust.** For each source and kind of field (``it_power``, ``ready``, ``demand``), its
``history`` entries are held against the actuals: a figure agrees when it is within the
tolerance (relative for power and demand, whole quarters for readiness). The grade is the
mean of a Beta(1, 1) posterior on the chance of agreeing, ``(agreed + 1) / (checked + 2)``
(Laplace's rule): 0.5 with no history, towards 1 for a source that was right every time,
towards 0 for one that never was. Entries with no actual to hold against are not counted.
A field of one site is weighted by the source's grade at that site: its history there, with
the grade from its history at the other sites as a prior of weight 2
(``(agreed_here + 2 m) / (checked_here + 2)``, ``m`` the Laplace grade elsewhere), so a
source with no history at a site borrows its record elsewhere, and one right at one site and
wrong at another grades each as it was.

**Choosing.** Each field's value is the trust-weighted mean of the sources that give it
(power in IT MW, each demand median); readiness, a quarter, is the trust-weighted median (the
earliest quarter by which the claims' weights reach half; a plan's ready distribution is moved
so that its median is that quarter, its spread kept). Demand keeps its spread: the
reconciled quantile at level ``l`` is the weighted median of every source plus the weighted
mean, over the sources that give more than one level, of each one's deviation from its own
median at ``l`` (its inverse CDF, the plan's rule, ``scenarios.inverse_cdf``); so a point
forecast moves the median and not the spread, and monotone tables give a monotone table. A
quarter's value is the latest date a source gives within it (demand is cumulative); the
periods are then kept non-decreasing (a running maximum, named in the provenance where it
bites). Floors (rows, positions, position power) and a hall's PUE come from the most trusted
source that gives them (the plan's own PUE first when a plan is enriched).

**Conflicts.** A field where sources whose trust is at least ``conflict_trust`` still
disagree beyond the tolerance, with the sources, their values and what would settle it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from pydantic import ValidationError

from clusterloom.capacity.actuals import Actual
from clusterloom.capacity.input import (
    PlanInput,
    ProgramInput,
    SiteInput,
    plan_from_dict,
    quarter_index,
    quarter_label,
)
from clusterloom.capacity.scenarios import inverse_cdf
from clusterloom.capacity.sources import (
    SourcesInput,
    demand_to_accelerators,
    power_to_it_mw,
    pue_for,
    to_quarter,
)
from clusterloom.errors import Problem, SpecError
from clusterloom.spec.load import validation_problems

__all__ = [
    "PRIOR",
    "Claim",
    "Conflict",
    "FieldProvenance",
    "Reconciled",
    "Trust",
    "grade_trust",
    "reconcile",
    "write_reconciled",
]

#: the kinds of field trust is graded for
KINDS = ("it_power", "ready", "demand")
#: the Beta(1, 1) prior: a source with no history grades 0.5
PRIOR = (1.0, 1.0)


@dataclass(frozen=True)
class Claim:
    """One source's value for one field: in the model's unit, and as the source gave it."""

    source: str
    value: float
    original: str  #: the figure and unit (or date) as the source wrote it
    rule: str
    trust: float


@dataclass(frozen=True)
class FieldProvenance:
    field: str  #: the plan's field path (``sites.east.b1.h2.power.it_mw``)
    value: float | str
    unit: str  #: the model's unit
    chosen_by: str
    claims: tuple[Claim, ...]
    note: str = ""


@dataclass(frozen=True)
class Trust:
    source: str
    kind: str  #: ``it_power``, ``ready`` or ``demand``
    checked: int  #: history entries with an actual to hold against
    agreed: int
    mean_error: float | None  #: mean relative error (quarters for readiness)
    score: float
    #: (site, checked, agreed, grade) per site of the sources file: the site's own history
    #: pooled with the source's elsewhere (module docstring)
    sites: tuple[tuple[str, int, int, float], ...] = ()

    def at(self, site: str) -> float:
        """The grade for a field of ``site``."""
        return next((g for s, _, _, g in self.sites if s == site), self.score)


@dataclass(frozen=True)
class Conflict:
    field: str
    claims: tuple[Claim, ...]
    spread: float  #: relative for power and demand, quarters for readiness
    settle: str


@dataclass(frozen=True)
class Reconciled:
    """The reconciled plan (``plan`` when one was enriched) or its ``sites`` and ``programs``
    (``fragment``), with provenance, trust and conflicts."""

    fragment: dict[str, Any]
    plan: PlanInput | None
    provenance: tuple[FieldProvenance, ...]
    trust: tuple[Trust, ...]
    conflicts: tuple[Conflict, ...]
    gaps: tuple[str, ...] = field(default=())

    def document(self) -> str:
        """The plan (or fragment) as YAML, deterministic."""
        data = self.plan.model_dump(mode="json", exclude_none=True) if self.plan else self.fragment
        return yaml.safe_dump(
            data, sort_keys=False, allow_unicode=True, width=100, default_flow_style=None
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "provenance": [asdict(p) for p in self.provenance],
            "trust": [asdict(t) for t in self.trust],
            "conflicts": [asdict(c) for c in self.conflicts],
        }


# ---- trust ---------------------------------------------------------------------------------


def grade_trust(
    doc: SourcesInput, actuals: tuple[Actual, ...] | None
) -> dict[tuple[str, str], Trust]:
    """(source, kind) -> its grade from its history against ``actuals`` (module docstring)."""
    names = doc.canonical()
    tol = doc.tolerance
    figures: dict[tuple[str, str, str, int], float] = {}
    ready_rows: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for a in actuals or ():
        site = names.get(a.site.split("/")[0], a.site.split("/")[0])
        if a.quantity == "ready":
            key = "/".join([site, *a.site.split("/")[1:]])
            ready_rows[key].append((a.quarter, a.value))
        else:
            figures[(a.quantity, site, a.program, a.quarter)] = a.value
    out: dict[tuple[str, str], Trust] = {}
    for src in doc.sources:
        tally: dict[str, list[tuple[bool, float, str]]] = {k: [] for k in KINDS}
        for e in src.history:
            site = names[e.site]
            q = to_quarter(e.date, src.rules.dates)
            if e.quantity == "ready":
                verdict = _ready_verdict(ready_rows.get(f"{site}/{e.hall}", []), q)
                if verdict is not None:
                    tally["ready"].append((verdict <= tol.ready_quarters, float(verdict), site))
                continue
            assert e.value is not None and e.unit is not None
            if e.quantity == "it_power":
                v = power_to_it_mw(e.value, e.unit, src.rules, site, names).value * 1000.0
                actual = figures.get(("it_power_kw", site, "", q))
                limit = tol.power
            else:
                v = demand_to_accelerators(e.value, e.unit, src.rules).value
                actual = figures.get(("demand", site, e.program or "", q))
                limit = tol.demand
            if actual is None:
                continue
            err = abs(v - actual) / max(abs(actual), 1.0)
            tally[e.quantity].append((err <= limit + 1e-12, err, site))
        prior_a, prior_b = PRIOR
        for kind, rows in tally.items():
            agreed = sum(1 for ok, _, _ in rows if ok)
            per_site = []
            for site in doc.sites:
                here = [ok for ok, _, s in rows if s == site]
                elsewhere = [ok for ok, _, s in rows if s != site]
                # the grade elsewhere (Laplace), as a prior of weight 2 for this site
                m = (sum(elsewhere) + prior_a) / (len(elsewhere) + prior_a + prior_b)
                grade = (sum(here) + (prior_a + prior_b) * m) / (len(here) + prior_a + prior_b)
                per_site.append((site, len(here), sum(here), round(grade, 6)))
            out[(src.name, kind)] = Trust(
                source=src.name,
                kind=kind,
                checked=len(rows),
                agreed=agreed,
                mean_error=round(float(np.mean([e for _, e, _ in rows])), 6) if rows else None,
                score=round((agreed + prior_a) / (len(rows) + prior_a + prior_b), 6),
                sites=tuple(per_site),
            )
    return out


def _ready_verdict(rows: list[tuple[int, float]], claimed: int) -> int | None:
    """Quarters between a claimed ready quarter and the actual one; None if unknown yet."""
    if not rows:
        return None
    rows = sorted(rows)
    ready = [q for q, v in rows if v >= 1]
    if ready:
        return abs(claimed - ready[0])
    last = rows[-1][0]
    return last - claimed + 1 if claimed <= last else None


# ---- choosing ------------------------------------------------------------------------------


def _weighted_mean(claims: list[Claim]) -> float:
    w = np.array([max(c.trust, 1e-9) for c in claims])
    v = np.array([c.value for c in claims])
    return float(w @ v / w.sum())


def _weighted_median(claims: list[Claim]) -> float:
    order = sorted(claims, key=lambda c: (c.value, c.source))
    w = np.array([max(c.trust, 1e-9) for c in order])
    cum = np.cumsum(w) / w.sum()
    return order[int(np.searchsorted(cum, 0.5 - 1e-12))].value


def _chosen_by(claims: list[Claim], how: str) -> str:
    return f"one source ({claims[0].source})" if len(claims) == 1 else how


def _spread(claims: list[Claim], value: float) -> float:
    vals = [c.value for c in claims]
    return (max(vals) - min(vals)) / max(abs(value), 1e-9)


@dataclass
class _Hall:
    power: list[Claim] = field(default_factory=list)
    ready: list[Claim] = field(default_factory=list)
    floor: dict[str, tuple[float, int | float, str]] = field(default_factory=dict)
    pue: tuple[float, float, str] | None = None  #: (trust, pue, source)


def _collect_halls(
    doc: SourcesInput, trust: dict[tuple[str, str], Trust]
) -> dict[tuple[str, str], _Hall]:
    names = doc.canonical()
    halls: dict[tuple[str, str], _Hall] = defaultdict(_Hall)
    for src in doc.sources:
        for h in src.halls:
            site = names[h.site]
            rec = halls[(site, h.hall)]
            tp = trust[(src.name, "it_power")].at(site)
            if h.power is not None:
                conv = power_to_it_mw(h.power.value, h.power.unit, src.rules, site, names)
                rec.power.append(
                    Claim(src.name, conv.value, f"{h.power.value:g} {h.power.unit}", conv.rule, tp)
                )
            pue = pue_for(src.rules, site, names)
            if pue is not None and (rec.pue is None or tp > rec.pue[0]):
                rec.pue = (tp, pue, src.name)
            if h.ready is not None:
                q = to_quarter(h.ready, src.rules.dates)
                rule = f"dates: {src.rules.dates}" if src.rules.dates else "a quarter as given"
                rec.ready.append(
                    Claim(src.name, float(q), h.ready, rule, trust[(src.name, "ready")].at(site))
                )
            for key in ("rows", "positions_per_row", "position_power_kw"):
                val = getattr(h, key)
                if val is not None and (key not in rec.floor or tp > rec.floor[key][0]):
                    rec.floor[key] = (tp, val, src.name)
    order = {name: i for i, name in enumerate(doc.sites)}  # the sources file's site order
    return dict(sorted(halls.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])))


@dataclass
class _Demand:
    #: source -> (trust, levels, {quarter: (row in accelerators, date, rule)})
    tables: dict[str, tuple[float, list[float], dict[int, tuple[list[float], str, str]]]] = field(
        default_factory=dict
    )
    vendor: tuple[float, str] | None = None


def _collect_demand(
    doc: SourcesInput, trust: dict[tuple[str, str], Trust]
) -> dict[tuple[str, str], _Demand]:
    names = doc.canonical()
    out: dict[tuple[str, str], _Demand] = defaultdict(_Demand)
    for src in doc.sources:
        for d in src.demand:
            site = names[d.site]
            td = trust[(src.name, "demand")].at(site)
            rec = out[(d.program, site)]
            conv = demand_to_accelerators(1.0, d.unit, src.rules)
            by_q: dict[int, tuple[str, list[float]]] = {}
            for date, row in d.values.items():
                q = to_quarter(date, src.rules.dates)
                # the latest date within a quarter stands for it (cumulative demand)
                if q not in by_q or _date_key(date) > _date_key(by_q[q][0]):
                    by_q[q] = (date, row)
            table = {
                q: ([v * conv.value for v in row], f"{date}: {row} {d.unit}", conv.rule)
                for q, (date, row) in by_q.items()
            }
            rec.tables[src.name] = (td, list(d.levels), table)
            if d.vendor is not None and (rec.vendor is None or td > rec.vendor[0]):
                rec.vendor = (td, d.vendor)
    return dict(out)  # in the order the sources first name them


def _date_key(text: str) -> str:
    """Dates of one quarter in time order (a quarter label stands for its end)."""
    if "Q" in text:
        return text[:4] + "-99"
    return text + ("-99" if len(text) == 7 else "")


def _reconcile_demand(
    program: str,
    site: str,
    rec: _Demand,
    periods: list[int],
    provenance: list[FieldProvenance],
    conflicts: list[Conflict],
    gaps: list[str],
    tol: float,
    conflict_trust: float,
) -> dict[str, Any] | None:
    spread_levels = sorted(
        {float(lv) for _, levels, _ in rec.tables.values() if len(levels) > 1 for lv in levels}
        | {0.5}
    )
    levels = np.asarray(spread_levels if len(spread_levels) > 1 else [0.5])
    rows: list[np.ndarray] = []
    disagree: list[tuple[str, float, list[Claim]]] = []
    for q in periods:
        label = quarter_label(q)
        claims: list[Claim] = []
        devs: list[tuple[float, np.ndarray]] = []
        for name, (trust, lv, table) in sorted(rec.tables.items()):
            if q not in table:
                continue
            row, original, rule = table[q]
            lv_a, row_a = np.asarray(lv), np.asarray(row)
            median = float(inverse_cdf(lv_a, row_a[None, :], np.array([0.5]))[0, 0])
            claims.append(Claim(name, round(median, 6), original, rule, trust))
            if len(lv) > 1:
                at = inverse_cdf(lv_a, row_a[None, :], levels)[:, 0]
                devs.append((max(trust, 1e-9), at - median))
        if not claims:
            gaps.append(
                f"programs.{program}.demand.{site}: no source gives {label} "
                f"(sources: {', '.join(sorted(rec.tables))})"
            )
            return None
        m = _weighted_mean(claims)
        spread = np.zeros(len(levels))
        if devs:
            w = np.array([d[0] for d in devs])
            spread = np.sum([wi * d for wi, (_, d) in zip(w, devs, strict=True)], axis=0) / w.sum()
        rows.append(np.clip(m + spread, 0.0, None))
        provenance.append(
            FieldProvenance(
                f"programs.{program}.demand.{site}.{label}.p50",
                round(m, 6),
                "accelerators",
                _chosen_by(claims, "trust-weighted mean of the medians"),
                tuple(claims),
            )
        )
        trusted = [c for c in claims if c.trust >= conflict_trust]
        if len(trusted) > 1 and _spread(trusted, max(m, 1.0)) > tol:
            disagree.append((label, _spread(trusted, max(m, 1.0)), trusted))
    cumulative = np.maximum.accumulate(np.vstack(rows), axis=0)
    for t, (raw, kept) in enumerate(zip(rows, cumulative, strict=True)):
        if np.any(kept > raw + 1e-9):
            provenance.append(
                FieldProvenance(
                    f"programs.{program}.demand.{site}.{quarter_label(periods[t])}",
                    round(float(np.interp(0.5, levels, kept)), 6),
                    "accelerators",
                    "cumulative rule",
                    (),
                    "raised to the previous quarter's figures: demand is cumulative",
                )
            )
    if disagree:
        worst = max(disagree, key=lambda d: d[1])
        conflicts.append(
            Conflict(
                f"programs.{program}.demand.{site}",
                tuple(worst[2]),
                round(worst[1], 6),
                f"the sources' medians differ by more than {tol:.0%} in "
                f"{', '.join(d[0] for d in disagree)} (most in {worst[0]}); settle it with "
                f"{program}'s committed order or delivery schedule for {site}, or an actual "
                "demand figure that regrades the sources",
            )
        )
    return {
        "levels": [round(float(x), 6) for x in levels],
        "accelerators": [[round(float(v), 3) for v in row] for row in cumulative],
    }


def _ready_field(plan_ready: Any, q: int, start: int) -> tuple[Any, str]:
    """A hall's ``ready`` with the reconciled quarter ``q``: the plan's distribution moved so
    that its median is ``q`` (its spread kept, as a point forecast moves a demand's median and
    not its spread), else the quarter itself."""
    if not isinstance(plan_ready, dict):
        return quarter_label(q), ""
    levels = np.asarray(plan_ready["levels"], dtype=np.float64)
    labels = isinstance(plan_ready["quarters"][0], str)
    values = np.asarray(
        [quarter_index(x) if labels else start + float(x) for x in plan_ready["quarters"]]
    )
    median = int(np.rint(inverse_cdf(levels, values[None, :], np.array([0.5]))[0, 0]))
    shift = q - median
    moved = [float(v + shift) for v in values]
    quarters: list[Any] = (
        [quarter_label(round(v)) for v in moved] if labels else [max(v - start, 0.0) for v in moved]
    )
    note = (
        "the plan's distribution kept (its median is this quarter)"
        if shift == 0
        else f"the plan's distribution moved {shift:+d} quarter(s) to this median"
    )
    return {"levels": plan_ready["levels"], "quarters": quarters}, note


def reconcile(
    doc: SourcesInput, *, actuals: tuple[Actual, ...] | None = None, plan: PlanInput | None = None
) -> Reconciled:
    """The sources of ``doc`` in the plan's model (module docstring); ``plan``, when given,
    is enriched: the fields the sources give are replaced, the rest kept (provenance
    ``plan``). ``SpecError`` naming what cannot be reconciled."""
    problems: list[Problem] = []
    if plan is not None and plan.horizon != doc.horizon:
        problems.append(
            Problem(
                "horizon", f"the sources' horizon {doc.horizon} is not the plan's {plan.horizon}"
            )
        )
    trust = grade_trust(doc, actuals)
    tol = doc.tolerance
    provenance: list[FieldProvenance] = []
    conflicts: list[Conflict] = []
    gaps: list[str] = []
    start = quarter_index(doc.horizon.start)
    periods = [start + t for t in range(doc.horizon.periods)]

    base = plan.model_dump(mode="json", exclude_none=True) if plan is not None else None
    sites_out: dict[str, dict[str, dict[str, dict[str, Any]]]] = defaultdict(dict)
    plan_halls: dict[tuple[str, str], dict[str, Any]] = {}
    if base is not None:
        for s in base["sites"]:
            for b in s["buildings"]:
                for h in b["halls"]:
                    plan_halls[(s["name"], f"{b['name']}/{h['name']}")] = h
    for (site, hall), rec in _collect_halls(doc, trust).items():
        path = f"sites.{site}.{hall.replace('/', '.')}"
        building, name = hall.split("/")
        known = plan_halls.get((site, hall))
        out: dict[str, Any] = dict(known) if known else {"name": name}
        for key in ("rows", "positions_per_row", "position_power_kw"):
            if key in rec.floor:
                trust_f, val, src = rec.floor[key]
                out[key] = val
                claim = Claim(src, float(val), f"{val:g} {key}", "as given", trust_f)
                provenance.append(
                    FieldProvenance(f"{path}.{key}", val, key, f"most trusted ({src})", (claim,))
                )
            elif key not in out:
                problems.append(
                    Problem(path, f"no source gives its {key} (give it in a source, or --plan)")
                )
        if rec.power:
            it = _weighted_mean(rec.power)
            if known is not None:
                pue = float(known["power"]["pue"])
                how = "the plan's PUE"
            elif rec.pue is not None:
                pue, how = rec.pue[1], f"rules.pue of {rec.pue[2]}"
            else:
                pue, how = 0.0, ""
                problems.append(
                    Problem(f"{path}.power", "no PUE for it: declare rules.pue in a source")
                )
            out["power"] = {"it_mw": round(it, 6), "pue": pue}
            provenance.append(
                FieldProvenance(
                    f"{path}.power.it_mw",
                    round(it, 6),
                    "it_mw",
                    _chosen_by(rec.power, "trust-weighted mean"),
                    tuple(rec.power),
                    f"pue {pue:g} from {how}" if how else "",
                )
            )
            trusted = [c for c in rec.power if c.trust >= doc.conflict_trust]
            if len(trusted) > 1 and _spread(trusted, it) > tol.power:
                conflicts.append(
                    Conflict(
                        f"{path}.power.it_mw",
                        tuple(trusted),
                        round(_spread(trusted, it), 6),
                        f"IT power differs by more than {tol.power:.0%}: settle it with a "
                        f"metered IT load or the utility contract of {site}/{hall} and the PUE "
                        "each source assumes",
                    )
                )
        elif "power" not in out:
            problems.append(Problem(f"{path}.power", "no source gives its power"))
        if rec.ready:
            q = int(_weighted_median(rec.ready))
            ready, note = _ready_field(out.get("ready"), q, start)
            out["ready"] = ready
            provenance.append(
                FieldProvenance(
                    f"{path}.ready",
                    quarter_label(q),
                    "quarter",
                    _chosen_by(rec.ready, "trust-weighted median"),
                    tuple(rec.ready),
                    note,
                )
            )
            trusted = [c for c in rec.ready if c.trust >= doc.conflict_trust]
            span = max((c.value for c in trusted), default=0) - min(
                (c.value for c in trusted), default=0
            )
            if len(trusted) > 1 and span > tol.ready_quarters:
                conflicts.append(
                    Conflict(
                        f"{path}.ready",
                        tuple(trusted),
                        float(span),
                        f"ready dates {span:g} quarter(s) apart: settle it with the "
                        f"construction schedule's commissioning date for {site}/{hall}",
                    )
                )
        sites_out[site].setdefault(building, {})[name] = out

    programs_out: dict[str, dict[str, Any]] = {}
    for (program, site), drec in _collect_demand(doc, trust).items():
        forecast = _reconcile_demand(
            program,
            site,
            drec,
            periods,
            provenance,
            conflicts,
            gaps,
            tol.demand,
            doc.conflict_trust,
        )
        if forecast is None:
            continue
        p = programs_out.setdefault(program, {"name": program, "demand": {}})
        p["demand"][site] = forecast
        if drec.vendor is not None:
            p.setdefault("vendor", drec.vendor[1])
        if len(drec.tables) == 1:
            p["source"] = next(iter(drec.tables))
    if plan is not None and plan.correlation is not None:
        planned = {p.name for p in plan.programs}
        for name in programs_out:
            if name not in planned:
                problems.append(
                    Problem(
                        f"programs.{name}",
                        "not in the plan, whose correlation has no row for it: add the "
                        "program (and its correlations) to the plan first",
                    )
                )
    for g in gaps:
        where, _, what = g.partition(": ")
        problems.append(Problem(where, what))
    if problems:
        raise SpecError(problems)

    if base is None:
        fragment = _fragment(sites_out, programs_out)
        return Reconciled(
            fragment, None, tuple(provenance), tuple(trust.values()), tuple(conflicts)
        )
    enriched = _enrich(base, sites_out, programs_out)
    merged = plan_from_dict(enriched)
    return Reconciled(
        _fragment(sites_out, programs_out),
        merged,
        tuple(provenance),
        tuple(trust.values()),
        tuple(conflicts),
    )


def _fragment(
    sites: dict[str, dict[str, dict[str, dict[str, Any]]]], programs: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """``sites`` and ``programs`` as the plan reader takes them, each checked by its model."""
    data: dict[str, Any] = {
        "sites": [
            {
                "name": site,
                "buildings": [
                    {"name": b, "halls": list(halls.values())}
                    for b, halls in sorted(buildings.items())
                ],
            }
            for site, buildings in sites.items()
        ],
        "programs": list(programs.values()),
    }
    problems: list[Problem] = []
    for i, s in enumerate(data["sites"]):
        try:
            SiteInput.model_validate(s)
        except ValidationError as exc:
            problems += [
                Problem(f"sites[{i}].{p.where}", p.message)
                for p in validation_problems(exc, SiteInput)
            ]
    for i, p in enumerate(data["programs"]):
        try:
            ProgramInput.model_validate(p)
        except ValidationError as exc:
            problems += [
                Problem(f"programs[{i}].{q.where}", q.message)
                for q in validation_problems(exc, ProgramInput)
            ]
    if problems:
        raise SpecError(problems)
    return data


def _enrich(
    base: dict[str, Any],
    sites: dict[str, dict[str, dict[str, dict[str, Any]]]],
    programs: dict[str, dict[str, Any]],
) -> dict[str, Any]:
    out = json.loads(json.dumps(base))
    by_site = {s["name"]: s for s in out["sites"]}
    for site, buildings in sites.items():
        s = by_site.get(site)
        if s is None:
            s = {"name": site, "buildings": []}
            out["sites"].append(s)
            by_site[site] = s
        by_building = {b["name"]: b for b in s["buildings"]}
        for bname, halls in buildings.items():
            b = by_building.get(bname)
            if b is None:
                b = {"name": bname, "halls": []}
                s["buildings"].append(b)
            by_hall = {h["name"]: i for i, h in enumerate(b["halls"])}
            for hname, hall in halls.items():
                if hname in by_hall:
                    b["halls"][by_hall[hname]] = hall
                else:
                    b["halls"].append(hall)
    by_program = {p["name"]: p for p in out["programs"]}
    for name, prog in programs.items():
        p = by_program.get(name)
        if p is None:
            out["programs"].append(prog)
            continue
        p["demand"].update(prog["demand"])
        if "source" in prog:
            p["source"] = prog["source"]
        if "vendor" in prog and "vendor" not in p:
            p["vendor"] = prog["vendor"]
    return dict(out)


def write_reconciled(directory: Path, result: Reconciled) -> list[Path]:
    """``plan.yaml`` (a whole plan when one was enriched, else ``sites`` and ``programs``),
    ``provenance.json``, ``trust.json`` and ``conflicts.json`` into ``directory``."""
    from clusterloom.atomic import atomic_write

    doc = result.to_dict()
    files = {
        "plan.yaml": result.document(),
        "provenance.json": json.dumps(doc["provenance"], indent=2, sort_keys=True) + "\n",
        "trust.json": json.dumps(doc["trust"], indent=2, sort_keys=True) + "\n",
        "conflicts.json": json.dumps(doc["conflicts"], indent=2, sort_keys=True) + "\n",
    }
    return [atomic_write(directory / name, text) for name, text in files.items()]
