"""Triage (issue 22 part 5; ``docs/capacity.md``): a stream of signals scored for novelty
against the plan, and the decision each of the most novel would change.

**The stream.** CSV with the header ``time,source,kind,target,period,value,unit`` (a last
column ``label`` is allowed and ignored when scoring), or JSON lines with those keys. One
signal a line:

==================== ========================= ===================== ===========================
kind                 target                    unit                  value
==================== ========================= ===================== ===========================
``site-update``      ``site/building/hall``    ``it_mw``, ``it_kw``, the hall's power (0: no
                     or ``site`` (power only)  ``facility_mw``       power in the horizon);
                                               (the plan's PUE)      facility / PUE for a hall
``site-update``      ``site/building/hall``    ``quarter``           the quarter it is ready
``forecast-revision`` ``program@site``         ``accelerators``      wanted by ``period``
                                               (``gpus``)            (cumulative, the median)
``supplier-notice``  a part id                 ``lead_time_quarters`` lead time of new orders
                                               ``cap_units``,        per quarter, from
                                               ``price_usd``         ``period`` (default: all)
==================== ========================= ===================== ===========================

``time`` is an ISO date or date-time; ``period`` a quarter label (required for a forecast
revision). A stream with a bad line is refused whole, every bad line named with its number:
a triage that silently dropped a signal could hide the one that matters.

**Novelty.** Each signal's value is held against the distribution the plan's own scenario
model gives that quantity (``_Reference``: ``REFERENCE`` draws of the scenario model, seeded:
a program's demand at a site and period with the plan's correlated draws and its demand
moves; a hall's ready quarter by the plan's inverse CDF; a part's lead time with its vendor's
slips; power, caps and prices as the plan states them). The figures are smoothed by a
measurement noise (``NOISE``: relative and absolute, per quantity) so that a fixed figure
restated with a rounding is not a surprise. ``p`` is the two-sided tail probability
``2 min(F(x), 1 - F(x))`` of the smoothed distribution ``F``; novelty is ``1 - p``; a signal
is **novel** when ``p < ALPHA`` and ``p`` is within the Benjamini-Hochberg cutoff of the
stream at the false discovery rate ``FDR`` (``bh_cutoff``: the largest ``p_(k)`` with
``p_(k) <= k FDR / m`` over the ``m`` signals scored). The second test is the correction for
how many signals are scored: alone, ``ALPHA`` lets ``m ALPHA`` routine signals through in
expectation, which outgrows a handful of novel ones in a long stream; with it the expected
share of routine signals among those flagged stays at most ``FDR`` (precision at least
``1 - FDR``, for independent or positively dependent p-values). It only tightens: up to a few
hundred signals, or with a few novel ones among them, the cutoff is above ``ALPHA``.
Assumptions: each signal is scored (and applied) alone; the ``p`` of a signal the plan's
model would draw is uniform or conservative (tested as a property).

**The decision it changes.** The most novel signals (``solve`` of them) are applied to the
plan one at a time and the two-stage model (``capacity.optimise``) re-solved on a few
scenarios (the same seed, so the draws are common to both); each first-stage decision that
moves (an order's quantity by more than ``max(1, 10 %)``, a tier, a landing share by more than
0.05) is named with its quantities before and after. The curves are the plan's (a signal
changes scenarios and costs, not the design points).

**Ranking.** Novel signals that change a decision first, then the other novel ones, then the
routine ones; within each, the smallest ``p`` first (ties by line).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.special import ndtr

from clusterloom.capacity.input import (
    MAX_PERIODS,
    PlanInput,
    plan_from_dict,
    quarter_index,
    quarter_label,
)
from clusterloom.capacity.model import Curves
from clusterloom.capacity.scenarios import (
    correlated_uniforms,
    demand_moves,
    inverse_cdf,
    program_demand,
    sample_scenarios,
)
from clusterloom.errors import Problem, SpecError
from clusterloom.spec.limits import MAX_ACCELERATORS

__all__ = [
    "ALPHA",
    "FDR",
    "SIGNAL_FIELDS",
    "DecisionChange",
    "Signal",
    "Triage",
    "Triaged",
    "apply_signal",
    "bh_cutoff",
    "parse_signals",
    "read_signals",
    "recall_precision",
    "signals_text",
    "spread",
    "sweep_stream",
    "synthetic_stream",
    "tail_p",
    "triage",
]

SIGNAL_FIELDS = ("time", "source", "kind", "target", "period", "value", "unit")
KINDS = ("site-update", "forecast-revision", "supplier-notice")
UNITS = {
    "site-update": ("it_mw", "it_kw", "facility_mw", "quarter"),
    "forecast-revision": ("accelerators", "gpus"),
    "supplier-notice": ("lead_time_quarters", "cap_units", "price_usd"),
}
#: a signal is novel when its two-sided tail probability under the plan is below this
ALPHA = 1e-3
#: ... and within the Benjamini-Hochberg cutoff of the stream at this false discovery rate
FDR = 0.2
#: draws of the scenario model a signal is held against
REFERENCE = 4000
#: measurement noise (relative, absolute) smoothing each quantity's distribution
NOISE = {
    "power": (0.02, 0.001),  #: MW
    "ready": (0.0, 0.5),  #: quarters
    "demand": (0.02, 8.0),  #: accelerators (a node)
    "lead_time": (0.0, 0.5),  #: quarters
    "cap": (0.05, 1.0),  #: units
    "price": (0.05, 1.0),  #: USD
}
MAX_SIGNALS = 100_000


@dataclass(frozen=True)
class Signal:
    line: int
    time: str
    source: str
    kind: str
    target: str
    period: str
    value: str
    unit: str
    label: str = ""  #: ``novel`` or ``routine`` in a labelled stream; never read by scoring


@dataclass(frozen=True)
class DecisionChange:
    move: str
    before: float
    after: float


@dataclass(frozen=True)
class Triaged:
    signal: Signal
    quantity: str  #: what it is held against (``demand of pretrain at east, 2027Q3``)
    value: float  #: in the model's unit
    plan_median: float  #: the plan's median of that quantity
    p: float
    novelty: float
    novel: bool
    solved: bool  #: the model was re-solved with it
    changes: tuple[DecisionChange, ...]
    cost_change_cents: int  #: the re-solved objective minus the plan's (0 if not solved)

    @property
    def changes_decision(self) -> bool:
        return bool(self.changes)


@dataclass(frozen=True)
class Triage:
    ranked: tuple[Triaged, ...]
    alpha: float
    scenarios: int
    seed: int
    base_objective_cents: int
    fdr: float = FDR
    cutoff: float = 1.0  #: the stream's Benjamini-Hochberg cutoff (``bh_cutoff``)

    def to_dict(self) -> dict[str, Any]:
        return {
            "alpha": self.alpha,
            "fdr": self.fdr,
            "cutoff": self.cutoff,
            "scenarios": self.scenarios,
            "seed": self.seed,
            "base_objective_cents": self.base_objective_cents,
            "signals": [{**asdict(t), "changes_decision": t.changes_decision} for t in self.ranked],
        }


# ---- reading -------------------------------------------------------------------------------


def _rows(text: str, source: str) -> list[tuple[int, dict[str, str]]]:
    first = next((ln for ln in text.splitlines() if ln.strip()), "")
    problems: list[Problem] = []
    rows: list[tuple[int, dict[str, str]]] = []
    if first.lstrip().startswith("{"):
        for n, ln in enumerate(text.splitlines(), start=1):
            if not ln.strip():
                continue
            try:
                obj = json.loads(ln)
            except json.JSONDecodeError as exc:
                problems.append(Problem(f"{source}:{n}", f"not JSON: {exc.msg}"))
                continue
            if not isinstance(obj, dict):
                problems.append(Problem(f"{source}:{n}", "a signal is a JSON object"))
                continue
            extra = sorted(set(obj) - set(SIGNAL_FIELDS) - {"label"})
            if extra:
                problems.append(Problem(f"{source}:{n}", f"unknown keys {extra}"))
                continue
            rows.append((n, {k: "" if v is None else str(v) for k, v in obj.items()}))
    else:
        reader = csv.reader(io.StringIO(text))
        header = [h.strip() for h in next(reader, [])]
        if tuple(header) not in (SIGNAL_FIELDS, (*SIGNAL_FIELDS, "label")):
            raise SpecError(
                [Problem(f"{source}:1", f"the header must be {','.join(SIGNAL_FIELDS)}[,label]")]
            )
        for n, row in enumerate(reader, start=2):
            if not row or all(not c.strip() for c in row):
                continue
            if len(row) != len(header):
                problems.append(
                    Problem(f"{source}:{n}", f"{len(row)} columns; expected {len(header)}")
                )
                continue
            rows.append((n, {h: c.strip() for h, c in zip(header, row, strict=True)}))
    if len(rows) > MAX_SIGNALS:
        problems.append(Problem(source, f"more than {MAX_SIGNALS:,} signals"))
    if problems:
        raise SpecError(problems)
    return rows


def _hall(plan: PlanInput, target: str) -> tuple[int, int, int] | None:
    parts = target.split("/")
    if len(parts) != 3:
        return None
    for i, s in enumerate(plan.sites):
        if s.name != parts[0]:
            continue
        for j, b in enumerate(s.buildings):
            for k, h in enumerate(b.halls):
                if b.name == parts[1] and h.name == parts[2]:
                    return i, j, k
    return None


#: the plan's own bounds on what a signal may set (``input.py``, ``spec/limits.py``)
_LIMITS = {
    "it_mw": 100_000.0,
    "it_kw": 100_000_000.0,
    "facility_mw": 300_000.0,
    "accelerators": float(MAX_ACCELERATORS),
    "gpus": float(MAX_ACCELERATORS),
    "lead_time_quarters": float(MAX_PERIODS),
    "cap_units": 1e9,
    "price_usd": 1e12,
}


def _in_range(s: Signal, v: float, where: str) -> list[Problem]:
    limit = _LIMITS[s.unit]
    if v > limit:
        return [
            Problem(f"{where} value", f"{s.value} {s.unit} is beyond the plan's bound {limit:g}")
        ]
    if s.unit == "lead_time_quarters" and v != int(v):
        return [Problem(f"{where} value", f"{s.value}: a lead time is a whole number of quarters")]
    return []


def _check_signal(plan: PlanInput, s: Signal, where: str) -> list[Problem]:
    out: list[Problem] = []
    if s.kind not in KINDS:
        return [Problem(f"{where} kind", f"'{s.kind}' is not one of {', '.join(KINDS)}")]
    if s.unit not in UNITS[s.kind]:
        return [
            Problem(
                f"{where} unit",
                f"'{s.unit}' is inconsistent with a {s.kind} without a rule; units: "
                + ", ".join(UNITS[s.kind]),
            )
        ]
    try:
        text = s.time.replace("Z", "+00:00")
        dt.datetime.fromisoformat(text) if "T" in text else dt.date.fromisoformat(text)
    except ValueError:
        out.append(Problem(f"{where} time", f"'{s.time}' is not an ISO date or date-time"))
    if s.period:
        try:
            quarter_index(s.period)
        except ValueError:
            out.append(Problem(f"{where} period", f"'{s.period}' is not a quarter like 2027Q1"))
    if s.unit == "quarter":
        try:
            quarter_index(s.value)
        except ValueError:
            out.append(Problem(f"{where} value", f"'{s.value}' is not a quarter like 2027Q1"))
    else:
        try:
            v = float(s.value)
        except ValueError:
            v = math.nan
        if not math.isfinite(v) or v < 0:
            what = "power" if s.kind == "site-update" else "a figure"
            out.append(Problem(f"{where} value", f"'{s.value}' is not {what} of at least 0"))
        else:
            out += _in_range(s, v, where)
    sites = [x.name for x in plan.sites]
    if s.kind == "site-update":
        if "/" in s.target or s.unit in ("quarter", "facility_mw"):
            if _hall(plan, s.target) is None:
                out.append(Problem(f"{where} target", f"no hall '{s.target}' (site/building/hall)"))
        elif s.target not in sites:
            out.append(Problem(f"{where} target", f"no site '{s.target}'; sites: {sites}"))
    elif s.kind == "forecast-revision":
        program, _, site = s.target.partition("@")
        if program not in [p.name for p in plan.programs] or site not in sites:
            out.append(Problem(f"{where} target", f"'{s.target}' is not program@site of the plan"))
        if not s.period:
            out.append(Problem(f"{where} period", "a revision names the quarter it is for"))
    elif s.target not in [p.id for p in plan.parts]:
        out.append(
            Problem(
                f"{where} target", f"no part '{s.target}' in the plan (a part with no supplier)"
            )
        )
    if s.period and not out:
        t = quarter_index(s.period) - quarter_index(plan.horizon.start)
        if not 0 <= t < plan.horizon.periods:
            out.append(Problem(f"{where} period", f"{s.period} is outside the plan's horizon"))
    return out


def parse_signals(text: str, plan: PlanInput, source: str = "<signals>") -> tuple[Signal, ...]:
    """The signals of a stream (module docstring), checked against ``plan``; ``SpecError``
    naming every bad line."""
    problems: list[Problem] = []
    out: list[Signal] = []
    for n, row in _rows(text, source):
        missing = [k for k in ("time", "kind", "target", "value", "unit") if not row.get(k)]
        if missing:
            problems.append(Problem(f"{source}:{n}", f"missing {', '.join(missing)}"))
            continue
        s = Signal(
            n,
            row["time"],
            row.get("source", ""),
            row["kind"],
            row["target"],
            row.get("period", ""),
            row["value"],
            row["unit"],
            row.get("label", ""),
        )
        found = _check_signal(plan, s, f"{source}:{n}")
        if found:
            problems += found
            continue
        out.append(s)
    if problems:
        raise SpecError(problems)
    return tuple(out)


def read_signals(path: str | Path, plan: PlanInput) -> tuple[Signal, ...]:
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError([Problem(str(p), f"cannot read it: {exc}")]) from exc
    return parse_signals(text, plan, str(p))


def signals_text(signals: tuple[Signal, ...] | list[Signal], *, labels: bool = True) -> str:
    """A stream as CSV (with the ``label`` column when ``labels``)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*SIGNAL_FIELDS, "label"] if labels else SIGNAL_FIELDS)
    for s in signals:
        row = [s.time, s.source, s.kind, s.target, s.period, s.value, s.unit]
        w.writerow([*row, s.label] if labels else row)
    return buf.getvalue()


# ---- novelty -------------------------------------------------------------------------------


class _Reference:
    """``n`` draws of the plan's scenario model per quantity a signal can name."""

    def __init__(self, plan: PlanInput, n: int, seed: int) -> None:
        self.plan = plan
        rng = np.random.default_rng(seed)
        u = correlated_uniforms(plan.correlation_matrix(), n, rng)
        per_program = program_demand(plan, u)
        demand_moves(plan, per_program, rng)
        self.demand = per_program  # [n, R, N, T]
        self.lead = sample_scenarios(plan, n, seed).lead_time  # [n, P]
        self.start = quarter_index(plan.horizon.start)
        self.grid = (np.arange(n) + 0.5) / n

    def ready(self, site: int, building: int, hall: int) -> NDArray[np.float64]:
        h = self.plan.sites[site].buildings[building].halls[hall]
        d = h.ready
        if d is None:
            return np.zeros(1)
        if isinstance(d, str):
            return np.array([float(max(quarter_index(d) - self.start, 0))])
        vals = np.asarray(d.values()) - (self.start if isinstance(d.quarters[0], str) else 0)
        drawn = np.rint(inverse_cdf(np.asarray(d.levels), vals, self.grid))
        return np.asarray(np.clip(drawn, 0, None), dtype=np.float64)


def tail_p(x: float, values: NDArray[np.float64], noise: tuple[float, float]) -> float:
    """Two-sided tail probability of ``x`` under ``values`` smoothed by the noise."""
    rel, absolute = noise
    sigma = rel * np.abs(values) + absolute
    f = float(np.mean(ndtr((x - values) / sigma)))
    return float(min(1.0, 2.0 * min(f, 1.0 - f)))


def bh_cutoff(p: NDArray[np.float64] | list[float], fdr: float) -> float:
    """The Benjamini-Hochberg cutoff of tail probabilities ``p`` at ``fdr``: the largest
    ``p_(k)`` (sorted ascending) with ``p_(k) <= k fdr / m``; -1 when there is none (nothing
    passes)."""
    x = np.sort(np.asarray(p, dtype=np.float64))
    m = x.size
    if m == 0:
        return -1.0
    ok = np.nonzero(x <= fdr * np.arange(1, m + 1) / m)[0]
    return float(x[ok[-1]]) if ok.size else -1.0


def _period(plan: PlanInput, s: Signal) -> int:
    return quarter_index(s.period) - quarter_index(plan.horizon.start) if s.period else 0


def _it_mw(plan: PlanInput, s: Signal) -> float:
    v = float(s.value)
    if s.unit == "it_kw":
        return v / 1000.0
    if s.unit == "facility_mw":
        i, j, k = _hall(plan, s.target) or (0, 0, 0)
        return v / plan.sites[i].buildings[j].halls[k].power.pue
    return v


def _site_mw(plan: PlanInput, target: str) -> float:
    site = next(x for x in plan.sites if x.name == target)
    return sum(h.power.it_kw for h in site.halls) / 1000.0


def _held_against(
    plan: PlanInput, ref: _Reference, s: Signal
) -> tuple[str, float, NDArray[np.float64], tuple[float, float]]:
    """(what, value in the model's unit, the plan's draws of it, noise)."""
    t = _period(plan, s)
    if s.kind == "site-update" and s.unit == "quarter":
        i, j, k = _hall(plan, s.target) or (0, 0, 0)
        x = float(max(quarter_index(s.value) - ref.start, 0))
        return f"ready quarter of {s.target}", x, ref.ready(i, j, k), NOISE["ready"]
    if s.kind == "site-update":
        hall = _hall(plan, s.target)
        if hall is not None:
            i, j, k = hall
            mw = plan.sites[i].buildings[j].halls[k].power.it_kw / 1000.0
        else:
            mw = _site_mw(plan, s.target)
        return f"IT MW of {s.target}", _it_mw(plan, s), np.array([mw]), NOISE["power"]
    if s.kind == "forecast-revision":
        program, _, site = s.target.partition("@")
        r = [p.name for p in plan.programs].index(program)
        n = [x.name for x in plan.sites].index(site)
        what = f"demand of {program} at {site} by {s.period}"
        return what, float(s.value), ref.demand[:, r, n, t], NOISE["demand"]
    p = [x.id for x in plan.parts].index(s.target)
    sup = plan.parts[p].supplier
    if s.unit == "lead_time_quarters":
        what = f"lead time of {s.target}"
        return what, float(s.value), ref.lead[:, p].astype(np.float64), NOISE["lead_time"]
    figure = sup.cap if s.unit == "cap_units" else sup.price_usd
    at = figure[t] if isinstance(figure, list) else figure
    key = "cap" if s.unit == "cap_units" else "price"
    what = f"{'cap' if key == 'cap' else 'price'} of {s.target} in {quarter_label(ref.start + t)}"
    return what, float(s.value), np.array([float(at)]), NOISE[key]


# ---- applying a signal ---------------------------------------------------------------------


def apply_signal(plan: PlanInput, s: Signal) -> PlanInput:
    """``plan`` with ``s`` applied (module docstring; a revision from its period on, earlier
    periods capped at it since demand is cumulative)."""
    data = plan.model_dump(mode="json", exclude_none=True)
    T, start = plan.horizon.periods, quarter_index(plan.horizon.start)
    t = _period(plan, s)
    if s.kind == "site-update":
        hall = _hall(plan, s.target)
        halls = (
            [hall]
            if hall is not None
            else [
                (i, j, k)
                for i, site in enumerate(plan.sites)
                if site.name == s.target
                for j, b in enumerate(site.buildings)
                for k in range(len(b.halls))
            ]
        )
        for i, j, k in halls:
            h = data["sites"][i]["buildings"][j]["halls"][k]
            if s.unit == "quarter":
                h["ready"] = s.value
                continue
            x = _it_mw(plan, s)
            if hall is None:
                x *= (
                    plan.sites[i].buildings[j].halls[k].power.it_kw
                    / 1000.0
                    / _site_mw(plan, s.target)
                )
            if x <= 0:
                h["ready"] = quarter_label(start + T)  # no power within the horizon
            else:
                h["power"] = {"it_mw": x, "pue": h["power"]["pue"]}
    elif s.kind == "forecast-revision":
        program, _, site = s.target.partition("@")
        prog = next(p for p in data["programs"] if p["name"] == program)
        prog["demand"][site] = _revised(prog["demand"].get(site), float(s.value), t, T)
    else:
        part = next(p for p in data["parts"] if p["id"] == s.target)
        sup = part["supplier"]
        if s.unit == "lead_time_quarters":
            sup["lead_time"] = round(float(s.value))
        else:
            key = "cap" if s.unit == "cap_units" else "price_usd"
            old = sup[key] if isinstance(sup[key], list) else [sup[key]] * T
            sup[key] = [float(s.value) if u >= t else old[u] for u in range(T)]
    return plan_from_dict(data)


def _revised(forecast: dict[str, Any] | None, x: float, t: int, T: int) -> dict[str, Any]:
    if forecast is None:
        return {"levels": [0.5], "accelerators": [[0.0 if u < t else x] for u in range(T)]}
    if "samples" in forecast:
        table = np.asarray(forecast["samples"], dtype=np.float64).T  # [T, n]
        median = float(np.median(table[t]))
    else:
        table = np.asarray(forecast["accelerators"], dtype=np.float64)  # [T, L]
        levels = np.asarray(forecast["levels"])
        median = float(inverse_cdf(levels, table[t][None, :], np.array([0.5]))[0, 0])
    new = table.copy()
    if median > 0:
        new[t:] = table[t:] * (x / median)
    else:
        new[t:] = table[t:] + x
    new[:t] = np.minimum(table[:t], new[t][None, :])
    new = np.maximum.accumulate(np.clip(new, 0.0, None), axis=0)
    if "samples" in forecast:
        return {"samples": [[float(v) for v in row] for row in new.T]}
    return {"levels": forecast["levels"], "accelerators": [[float(v) for v in r] for r in new]}


# ---- decisions -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _FirstStage:
    buy: NDArray[np.float64]  #: [N, P]
    tier: dict[int, int]  #: site -> choice
    land: dict[tuple[int, int], float]
    objective: float


def _first_stage(plan: PlanInput, curves: Curves, base: Path, n: int, seed: int) -> _FirstStage:
    from clusterloom.capacity.optimise import Options, build, solve
    from clusterloom.capacity.problem import build_problem

    problem = build_problem(plan, curves, sample_scenarios(plan, n, seed), base=base)
    model = build(problem, Options())
    solved, _ = solve(model)
    v = solved.values
    tier: dict[int, int] = {}
    for (site, c), col in sorted(model.z.items()):
        if v[col] > 0.5:
            tier[site] = c
    land = {k: float(v[col]) for k, col in sorted(model.f.items())}
    return _FirstStage(np.asarray(v[model.buy]), tier, land, solved.objective_cents)


def _changes(a: _FirstStage, b: _FirstStage, curves: Curves) -> tuple[DecisionChange, ...]:
    out: list[DecisionChange] = []
    N, P = a.buy.shape
    for n in range(N):
        for p in range(P):
            x, y = float(a.buy[n, p]), float(b.buy[n, p])
            if abs(y - x) > max(1.0, 0.1 * max(abs(x), abs(y))):
                what = "order now" if x > 1e-6 else "order now (was deferred)"
                if y <= 1e-6:
                    what = "order now (now deferred)"
                out.append(
                    DecisionChange(
                        f"{what}: {curves.parts[p]} for {curves.sites[n]}", round(x, 3), round(y, 3)
                    )
                )
    for n in sorted(set(a.tier) | set(b.tier)):
        if a.tier.get(n) != b.tier.get(n):
            before, after = a.tier.get(n, -1), b.tier.get(n, -1)
            out.append(
                DecisionChange(
                    f"build {curves.sites[n]} as {curves.choices[after]} "
                    f"(not {curves.choices[before]})",
                    float(before),
                    float(after),
                )
            )
    for (m, n), x in a.land.items():
        y = b.land.get((m, n), 0.0)
        if abs(y - x) > 0.05:
            out.append(
                DecisionChange(
                    f"land a share of {curves.sites[m]}'s demand at {curves.sites[n]}",
                    round(x, 4),
                    round(y, 4),
                )
            )
    return tuple(out)


def triage(
    plan: PlanInput,
    signals: tuple[Signal, ...],
    *,
    curves: Curves | None = None,
    base: Path | None = None,
    solve: int = 10,
    scenarios: int = 8,
    seed: int = 0,
    alpha: float = ALPHA,
    fdr: float = FDR,
    reference: int = REFERENCE,
) -> Triage:
    """Score ``signals`` against ``plan`` and re-solve the ``solve`` most novel (module
    docstring); ``curves`` are needed when ``solve > 0``. ``fdr = 1`` turns the correction
    for the number of signals off (every ``p < alpha`` is novel)."""
    if not (0.0 < alpha <= 1.0 and 0.0 < fdr <= 1.0):
        raise SpecError([Problem("alpha/fdr", f"{alpha}, {fdr}: each is in (0, 1]")])
    ref = _Reference(plan, reference, seed)
    held: list[tuple[str, float, float, float]] = []  # what, value, the plan's median, p
    for s in signals:
        what, x, draws, noise = _held_against(plan, ref, s)
        held.append((what, x, float(np.median(draws)), tail_p(x, draws, noise)))
    cutoff = 1.0 if fdr >= 1.0 else bh_cutoff([h[3] for h in held], fdr)
    scored: list[Triaged] = []
    for s, (what, x, median, p) in zip(signals, held, strict=True):
        scored.append(
            Triaged(
                s,
                what,
                round(x, 6),
                round(median, 6),
                p,
                round(1.0 - p, 12),
                p < alpha and p <= cutoff,
                False,
                (),
                0,
            )
        )
    base_objective = 0.0
    if solve > 0 and scored:
        if curves is None:
            raise ValueError("give the plan's curves to re-solve")
        where = base or Path.cwd()
        first = _first_stage(plan, curves, where, scenarios, seed)
        base_objective = first.objective
        order = sorted(range(len(scored)), key=lambda i: (scored[i].p, scored[i].signal.line))
        for i in order[:solve]:
            s = scored[i].signal
            try:
                changed = apply_signal(plan, s)
            except SpecError as exc:
                raise SpecError(
                    [
                        Problem(f"line {s.line}", f"cannot be applied to the plan: {p}")
                        for p in exc.problems
                    ]
                ) from exc
            after = _first_stage(changed, curves, where, scenarios, seed)
            scored[i] = replace(
                scored[i],
                solved=True,
                changes=_changes(first, after, curves),
                cost_change_cents=round(after.objective - first.objective),
            )

    def key(t: Triaged) -> tuple[int, float, int]:
        tier = 0 if t.novel and t.changes_decision else 1 if t.novel else 2
        return tier, t.p, t.signal.line

    return Triage(
        tuple(sorted(scored, key=key)),
        alpha,
        scenarios,
        seed,
        round(base_objective),
        fdr,
        round(cutoff, 15),
    )


# ---- the labelled synthetic stream ---------------------------------------------------------


def _stream_targets(
    plan: PlanInput,
) -> tuple[list[tuple[int, int, int, str]], list[tuple[int, int, str]]]:
    """The halls (site, building, hall indices and path) and the forecasts (program, site
    index and name) a synthetic stream's signals are about."""
    halls = [
        (i, j, k, f"{s.name}/{b.name}/{h.name}")
        for i, s in enumerate(plan.sites)
        for j, b in enumerate(s.buildings)
        for k, h in enumerate(b.halls)
    ]
    forecasts = [
        (r, [x.name for x in plan.sites].index(site), f"{p.name}@{site}")
        for r, p in enumerate(plan.programs)
        for site in p.demand
    ]
    return halls, forecasts


def synthetic_stream(
    plan: PlanInput, *, n: int = 200, novel: float = 0.05, seed: int = 0
) -> tuple[Signal, ...]:
    """``n`` signals, about a ``novel`` share of them truly novel (labelled ``novel``), the
    rest routine (``routine``: drawn from the plan's own distributions, figures restated with
    a 1 % noise); seeded.

    Novel signals: a hall losing 40 to 100 % of its power; a part's lead time at twice the
    longest the scenarios draw (at least two quarters more); a program's demand moving sites
    (from a site with a landing rule, in a period from the third on: down to 10 to 50 % of
    the lowest the plan's scenarios draw there; and, where the program has no forecast at the
    other site, up there by what moved, labelled novel only when that is over 1.5 times the
    most the scenarios land there). Truly novel means outside what the plan's scenario model
    draws, by construction."""
    if not 1 <= n <= MAX_SIGNALS:
        raise SpecError([Problem("-n", f"give 1 to {MAX_SIGNALS:,} signals")])
    rng = np.random.default_rng(seed)
    ref = _Reference(plan, 2000, seed + 1)
    T, start = plan.horizon.periods, quarter_index(plan.horizon.start)
    halls, forecasts = _stream_targets(plan)
    movable = [
        (r, src, dst)
        for r, p in enumerate(plan.programs)
        for src in p.demand
        for dst in plan.landing.get(src, [])
        if dst != src
    ]
    out: list[tuple[str, str, str, str, str, str, str, str]] = []
    day = dt.date(2026, 12, 1)
    while len(out) < n:
        when = (day + dt.timedelta(hours=len(out) * 7 // 24)).isoformat()
        if rng.random() < novel:
            out += _novel(plan, ref, rng, when, halls, movable, T)
        else:
            out.append(_routine(plan, ref, rng, when, halls, forecasts, T, start))
    return tuple(Signal(line, *row) for line, row in enumerate(out[:n], start=2))


def _fmt(x: float) -> str:
    return f"{x:.6g}"


def _routine(
    plan: PlanInput,
    ref: _Reference,
    rng: np.random.Generator,
    when: str,
    halls: list[tuple[int, int, int, str]],
    forecasts: list[tuple[int, int, str]],
    T: int,
    start: int,
) -> tuple[str, str, str, str, str, str, str, str]:
    what = int(rng.integers(0, 6))
    s = int(rng.integers(0, ref.demand.shape[0]))
    noise = float(rng.normal(0.0, 0.01))
    if what == 0:
        i, j, k, name = halls[int(rng.integers(0, len(halls)))]
        mw = plan.sites[i].buildings[j].halls[k].power.it_kw / 1000.0 * (1 + noise)
        return (when, "facilities", "site-update", name, "", _fmt(mw), "it_mw", "routine")
    if what == 1:
        i, j, k, name = halls[int(rng.integers(0, len(halls)))]
        q = ref.ready(i, j, k)
        label = quarter_label(start + int(q[int(rng.integers(0, q.size))]))
        return (when, "facilities", "site-update", name, "", label, "quarter", "routine")
    if what in (2, 3):
        r, n, name = forecasts[int(rng.integers(0, len(forecasts)))]
        t = int(rng.integers(0, T))
        v = float(ref.demand[s, r, n, t]) * (1 + noise)
        period = quarter_label(start + t)
        return (
            when,
            "program",
            "forecast-revision",
            name,
            period,
            _fmt(max(v, 0.0)),
            "accelerators",
            "routine",
        )
    p = int(rng.integers(0, len(plan.parts)))
    part = plan.parts[p]
    if what == 4:
        lt = int(ref.lead[s, p])
        return (
            when,
            "supplier",
            "supplier-notice",
            part.id,
            "",
            str(lt),
            "lead_time_quarters",
            "routine",
        )
    t = int(rng.integers(0, T))
    price = part.supplier.price_usd
    at = price[t] if isinstance(price, list) else price
    return (
        when,
        "supplier",
        "supplier-notice",
        part.id,
        quarter_label(start + t),
        _fmt(at * (1 + noise)),
        "price_usd",
        "routine",
    )


def _novel(
    plan: PlanInput,
    ref: _Reference,
    rng: np.random.Generator,
    when: str,
    halls: list[tuple[int, int, int, str]],
    movable: list[tuple[int, str, str]],
    T: int,
) -> list[tuple[str, str, str, str, str, str, str, str]]:
    what = int(rng.integers(0, 3 if movable and T > 2 else 2))
    if what == 0:
        i, j, k, name = halls[int(rng.integers(0, len(halls)))]
        left = float(rng.uniform(0.0, 0.6))
        mw = plan.sites[i].buildings[j].halls[k].power.it_kw / 1000.0 * left
        return [(when, "facilities", "site-update", name, "", _fmt(mw), "it_mw", "novel")]
    if what == 1:
        p = int(rng.integers(0, len(plan.parts)))
        worst = int(ref.lead[:, p].max())
        lt = max(2 * worst, worst + 2)
        return [
            (
                when,
                "supplier",
                "supplier-notice",
                plan.parts[p].id,
                "",
                str(lt),
                "lead_time_quarters",
                "novel",
            )
        ]
    r, src, dst = movable[int(rng.integers(0, len(movable)))]
    program = plan.programs[r]
    names = [x.name for x in plan.sites]
    n_src, n_dst = names.index(src), names.index(dst)
    lowest = ref.demand[:, r, n_src, :].min(axis=0)  # [T]
    periods = [t for t in range(2, T) if lowest[t] > 0]
    if not periods:
        return _novel(plan, ref, rng, when, halls, [], T)
    t = periods[int(rng.integers(0, len(periods)))]
    levels, table = program.demand[src].quantile_table()
    median = float(inverse_cdf(levels, table[t][None, :], np.array([0.5]))[0, 0])
    left = float(lowest[t]) * float(rng.uniform(0.1, 0.5))  # below the lowest the plan draws
    moved = max(median - left, 0.0)
    period = quarter_label(quarter_index(plan.horizon.start) + t)
    out = [
        (
            when,
            "program",
            "forecast-revision",
            f"{program.name}@{src}",
            period,
            _fmt(left),
            "accelerators",
            "novel",
        )
    ]
    if dst not in program.demand:
        beyond = moved > 1.5 * float(ref.demand[:, r, n_dst, t].max())
        out.append(
            (
                when,
                "program",
                "forecast-revision",
                f"{program.name}@{dst}",
                period,
                _fmt(moved),
                "accelerators",
                "novel" if beyond else "routine",
            )
        )
    return out


def recall_precision(result: Triage) -> tuple[float, float]:
    """Recall of the signals labelled novel and precision of those flagged novel."""
    truth = [t.signal.label == "novel" for t in result.ranked]
    flagged = [t.novel for t in result.ranked]
    tp = sum(1 for a, b in zip(truth, flagged, strict=True) if a and b)
    recall = tp / max(1, sum(truth))
    precision = tp / max(1, sum(flagged))
    return recall, precision


# ---- the harder labelled stream: novel events swept toward the plan's tails ----------------


def spread(values: NDArray[np.float64], noise: tuple[float, float]) -> float:
    """The plan's own spread of a quantity: the standard deviation of its draws smoothed by
    the measurement noise (``sqrt(var(draws) + mean(sigma^2))``), the unit of a sweep."""
    rel, absolute = noise
    sigma = rel * np.abs(values) + absolute
    return float(np.sqrt(np.var(values) + np.mean(sigma**2)))


def sweep_stream(
    plan: PlanInput,
    *,
    shift: float,
    n: int = 400,
    novel: float = 0.05,
    tails: float = 0.1,
    seed: int = 0,
) -> tuple[Signal, ...]:
    """A labelled stream whose novel events sit ``shift`` times the plan's own spread
    (``spread``) away from a draw of the plan's model; seeded.

    Routine signals are ``synthetic_stream``'s, except that a ``tails`` share of the routine
    forecast revisions and lead times is drawn from the outermost 1 % of the plan's draws
    (half from each end): the plan's own tails, routine by definition.

    Each novel event takes a quantity, a routine value of it (a draw of the plan's model,
    or the stated figure with 1 % noise), and moves it by ``shift`` spreads: a hall's power
    down (its spread is the measurement noise alone, 2 % + 0.001 MW); a program's demand at
    a site and period up or down (down only where that stays at or above 0: demand pinned at
    0 is what the plan may draw, not a novel event); a part's lead time up (rounded up to whole
    quarters, at least one more). At a large ``shift`` this is the easy stream; near 3 the
    novel events overlap the plan's tails, which a threshold at ``ALPHA`` cannot separate.
    Assumption: a novel event is one quantity moved, not several moved together."""
    if not 1 <= n <= MAX_SIGNALS:
        raise SpecError([Problem("-n", f"give 1 to {MAX_SIGNALS:,} signals")])
    if not (math.isfinite(shift) and shift >= 0):
        raise SpecError([Problem("--shift", f"{shift}: give a shift of at least 0 spreads")])
    rng = np.random.default_rng(seed)
    ref = _Reference(plan, 2000, seed + 1)
    T, start = plan.horizon.periods, quarter_index(plan.horizon.start)
    halls, forecasts = _stream_targets(plan)
    out: list[tuple[str, str, str, str, str, str, str, str]] = []
    day = dt.date(2026, 12, 1)
    S = ref.demand.shape[0]
    for i in range(n):
        when = (day + dt.timedelta(hours=i * 7 // 24)).isoformat()
        u = float(rng.random())
        if u < novel:
            out.append(_swept(plan, ref, rng, when, halls, forecasts, shift, T, start))
            continue
        row = _routine(plan, ref, rng, when, halls, forecasts, T, start)
        if row[6] in ("accelerators", "lead_time_quarters") and rng.random() < tails:
            low = bool(rng.random() < 0.5)
            if row[6] == "accelerators":
                r, nn, _ = next(f for f in forecasts if f[2] == row[3])
                t = quarter_index(row[4]) - start
                draws = np.sort(ref.demand[:, r, nn, t])
            else:
                p = [x.id for x in plan.parts].index(row[3])
                draws = np.sort(ref.lead[:, p].astype(np.float64))
            edge = max(1, S // 100)
            pick = int(rng.integers(0, edge))
            v = float(draws[pick] if low else draws[S - 1 - pick])
            text = str(int(v)) if row[6] == "lead_time_quarters" else _fmt(max(v, 0.0))
            row = (*row[:5], text, row[6], "routine")
        out.append(row)
    return tuple(Signal(line, *row) for line, row in enumerate(out, start=2))


def _swept(
    plan: PlanInput,
    ref: _Reference,
    rng: np.random.Generator,
    when: str,
    halls: list[tuple[int, int, int, str]],
    forecasts: list[tuple[int, int, str]],
    shift: float,
    T: int,
    start: int,
) -> tuple[str, str, str, str, str, str, str, str]:
    what = int(rng.integers(0, 3))
    s = int(rng.integers(0, ref.demand.shape[0]))
    if what == 0:
        i, j, k, name = halls[int(rng.integers(0, len(halls)))]
        mw = plan.sites[i].buildings[j].halls[k].power.it_kw / 1000.0
        step = shift * spread(np.array([mw]), NOISE["power"])
        x = mw * (1 + float(rng.normal(0.0, 0.01))) - min(step, mw)
        return (when, "facilities", "site-update", name, "", _fmt(max(x, 0.0)), "it_mw", "novel")
    if what == 1:
        r, nn, name = forecasts[int(rng.integers(0, len(forecasts)))]
        t = int(rng.integers(0, T))
        draws = ref.demand[:, r, nn, t]
        step = shift * spread(draws, NOISE["demand"])
        down = rng.random() < 0.5 and float(draws[s]) - step >= 0.0
        x = float(draws[s]) + (-step if down else step)
        return (
            when,
            "program",
            "forecast-revision",
            name,
            quarter_label(start + t),
            _fmt(max(x, 0.0)),
            "accelerators",
            "novel",
        )
    p = int(rng.integers(0, len(plan.parts)))
    lead = ref.lead[:, p].astype(np.float64)
    base = float(lead[s])
    lt = int(max(base + 1, math.ceil(base + shift * spread(lead, NOISE["lead_time"]))))
    lt = min(lt, MAX_PERIODS)
    return (
        when,
        "supplier",
        "supplier-notice",
        plan.parts[p].id,
        "",
        str(lt),
        "lead_time_quarters",
        "novel",
    )
