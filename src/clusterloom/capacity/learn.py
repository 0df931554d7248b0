"""Learning from outcomes (issue 22, part 6; ``docs/capacity.md``, "Decision memory and
learning"): each forecast source's bias and spread, read from the decisions in memory
(``capacity.memory``) whose outcomes are known, and applied to a new plan's forecasts.

**Observations.** For every recorded decision with an outcome, every forecast in its context
(program, site, its ``source``: ``ProgramInput.source``, else the program's name) and every
period with a realised ``demand`` actual: the **lead** (the period's offset from the
decision's first period: 0 is the quarter the plan was made in), the **log ratio**
``r = ln(actual / forecast median)`` and, where the forecast states an interval, its **stated
spread** ``sigma = (ln q90 - ln q10) / (2 * 1.2816)`` (the 10 % and 90 % quantiles read off
the forecast's quantiles as the scenarios read them, linearly) and whether the actual fell
inside it. A forecast median or an actual of 0 gives no log ratio and is skipped.

**Bias** (a multiplicative error, the mean log ratio). Per source, the pooled mean ``r̄``
over all leads with its standard error (clustered by forecast: a forecast's leads may share
one error, so together they count as one independent draw), and per lead ``r̄_l``.
**Shrinkage with a stated prior**: the prior is "no bias", worth ``prior.outcomes``
(default 4) outcomes (a normal prior on the bias with variance ``s² / n0``: the conjugate
posterior mean is the weighted mean below). The applied pooled bias is
``b = n r̄ / (n + n0)``; the applied bias at lead ``l`` is
``b_l = (n_l r̄_l + n0 b) / (n_l + n0)``, shrunk toward the source's pooled figure. With no
outcomes, ``b = b_l = 0``: no correction.

**Spread.** The realised spread against the stated one, ``k = sqrt(mean(((r - b_l) /
sigma)²))`` (the error left once the applied bias is taken off) over the observations with
a stated interval (1: the forecast's intervals are right; 2: errors twice as wide as
stated), shrunk in logs toward 1 with the same prior:
``ln k_applied = m ln k / (m + n0)`` (m observations). Reported beside it: the share of
actuals inside the stated 10-90 % interval (0.8 when calibrated).

**Applying** (``apply_learning``): each quantile ``v`` of a program's forecast at lead ``l``
(period ``l`` of the new plan) becomes ``m e^{b_l} (v / m)^{k}``, ``m`` the forecast's median:
the median moved by the bias, every quantile's log distance from it scaled by the spread
(order kept, 0 stays 0; a period whose median is 0 is only moved by the bias). A lead beyond
those observed takes the pooled bias. Cumulative demand is then kept non-decreasing over the
periods (a running maximum per level). *Assumptions:* a source's error is multiplicative and
the same for every program and site it forecasts; outcomes are exchangeable (no drift in the
source's bias over time); a lead's bias is stationary.

**Lead-time and readiness slips** (``SlipObservation``, ``learn_slips``). Per supplier and
part (``vendor/part``), the **lead-time slip** of each recorded delivery: its delivered lead
(``delivered`` actual: arrival quarter minus the quarter ordered) minus the lead quoted in the
decision's plan (the quoted distribution's median); per site, the **readiness slip** of each
hall with a stated ready date: the first quarter a ``ready`` actual marks it ready (the hall's
own row, else the site's) minus the stated date's median. Both in quarters. The estimate is
the same shrunk mean as the bias: the prior is **no slip**, worth ``prior.outcomes`` outcomes,
applied slip ``d = n s̄ / (n + n0)``, with the standard error of ``s̄`` clustered (lead:
by the quarter ordered, since a vendor's slip in a quarter hits all its orders; readiness:
by hall, since one hall's date seen by several decisions is one draw) and the spread of the
slips (their standard deviation) beside it. **Applying**: a quoted lead time's quantiles
(a certain lead: ``[L]``) and a hall's stated ready date (as quarters from the plan's start)
move by ``d``; a certain figure becomes the distribution ``{0.1, 0.5, 0.9}`` at
``L + d ∓ 1.2816 sd`` (the slips' spread; the scenarios round each draw to a quarter, so a
fractional slip shows as a share of later quarters), a stated distribution keeps its own
spread and moves. Clipped to ``[0, MAX_PERIODS]`` (a ready date before the start: ready from
the start). *Assumptions:* a supplier's slip is the same for every site it delivers to and
does not drift; a hall not yet ready gives no observation (censored, not counted); every
order is one observation whatever its size.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clusterloom.capacity.input import Forecast, PlanInput, ProgramInput, check_plan
from clusterloom.errors import Problem, SpecError

__all__ = [
    "LeadBias",
    "Learned",
    "Observation",
    "Prior",
    "SlipLearning",
    "SlipObservation",
    "SourceLearning",
    "apply_learning",
    "forecast_observations",
    "learn",
    "learn_slips",
    "learning_statements",
    "program_source",
    "stated_spread",
]

#: the standard normal's 90 % quantile: a 10-90 % interval spans 2 x 1.2816 sigma
Z90 = 1.2815515655446004
#: the most a learned correction may multiply a forecast by (or divide it by): beyond it the
#: history says the source is not a forecast of this quantity at all
MAX_FACTOR = 10.0


@dataclass(frozen=True)
class Prior:
    """The prior the estimates are shrunk toward: no bias and the stated spread, worth
    ``outcomes`` outcomes."""

    outcomes: float = 4.0


@dataclass(frozen=True, order=True)
class Observation:
    """One forecast held against what happened."""

    source: str
    lead: int  #: periods between the decision and the period forecast
    log_ratio: float  #: ln(actual / forecast median)
    #: the stated spread of ln(demand) at that period (None: the forecast states no interval)
    sigma: float | None = None
    #: the actual lay within the forecast's 10-90 % interval (None: no interval)
    inside: bool | None = None
    program: str = ""
    site: str = ""
    period: str = ""
    #: the forecast it comes from (a decision's forecast of a program at a site): its
    #: observations at several leads may share one error, so standard errors are clustered
    forecast: str = ""


@dataclass(frozen=True)
class LeadBias:
    lead: int
    outcomes: int
    mean_log_ratio: float  #: raw r̄_l
    stderr: float  #: clustered by forecast (nan below 2 forecasts)
    applied: float  #: b_l, shrunk


@dataclass(frozen=True)
class SourceLearning:
    source: str
    outcomes: int  #: observations of the bias (all leads)
    mean_log_ratio: float  #: raw pooled r̄
    stderr: float  #: clustered by forecast
    bias: float  #: applied pooled b (ln)
    by_lead: tuple[LeadBias, ...]
    spread_outcomes: int
    spread_ratio: float  #: raw k (1: the stated intervals held)
    spread: float  #: applied k
    coverage: float | None  #: share of actuals inside the stated 10-90 % interval
    forecasts: int = 0  #: the forecasts the outcomes come from

    def bias_at(self, lead: int) -> float:
        for lb in self.by_lead:
            if lb.lead == lead:
                return lb.applied
        return self.bias

    def statement(self) -> str:
        """A plain sentence of what was learned and what is applied."""
        if self.outcomes == 0:
            return f"{self.source}: no outcomes yet; forecasts used as stated"
        pct = 100.0 * (math.exp(-self.mean_log_ratio) - 1.0)
        high = "high" if pct >= 0 else "low"
        leads = ", ".join(f"lead {lb.lead} x{math.exp(lb.applied):.3f}" for lb in self.by_lead)
        err = "" if math.isnan(self.stderr) else f" ± {self.stderr:.3f}"
        text = (
            f"{self.source}: {self.outcomes} outcomes of {self.forecasts} forecasts; median "
            f"forecasts ran {abs(pct):.1f}% {high} (mean ln(actual/median) "
            f"{self.mean_log_ratio:+.3f}{err}); shrunk toward no bias, forecasts multiplied by "
            f"{leads}"
        )
        if self.spread_outcomes:
            cover = "" if self.coverage is None else f", 10-90% interval held {self.coverage:.0%}"
            if abs(self.spread - 1.0) < 0.005:
                change = "kept as stated"
            elif self.spread > 1.0:
                change = f"widened x{self.spread:.2f}"
            else:
                change = f"narrowed x{self.spread:.2f}"
            text += (
                f"; errors {self.spread_ratio:.2f}x the stated spread ({self.spread_outcomes} "
                f"outcomes{cover}): quantiles {change}"
            )
        return text


@dataclass(frozen=True, order=True)
class SlipObservation:
    """One delivery's lead-time slip or one hall's readiness slip, in quarters."""

    kind: str  #: ``lead`` or ``ready``
    key: str  #: lead: ``vendor/part``; ready: the site
    slip: float  #: delivered lead minus quoted; ready quarter minus stated
    cluster: str = ""  #: observations that may share one error (module docstring)


@dataclass(frozen=True)
class SlipLearning:
    kind: str
    key: str
    outcomes: int
    clusters: int
    mean: float  #: raw mean slip, quarters
    stderr: float  #: clustered (nan below 2 clusters)
    spread: float  #: standard deviation of the slips (0 with one)
    applied: float  #: shrunk toward no slip

    @property
    def name(self) -> str:
        return f"{self.kind}:{self.key}"

    def statement(self) -> str:
        what = "lead time" if self.kind == "lead" else "readiness"
        who = f"supplier/part {self.key}" if self.kind == "lead" else f"site {self.key}"
        err = "" if math.isnan(self.stderr) else f" ± {self.stderr:.2f}"
        unit = "deliveries" if self.kind == "lead" else "hall dates"
        return (
            f"{who}: {what} slipped {self.mean:+.2f} quarters{err} on average over "
            f"{self.outcomes} {unit} (spread {self.spread:.2f}); shrunk toward no slip, "
            f"{'lead times' if self.kind == 'lead' else 'ready dates'} moved by "
            f"{self.applied:+.2f} quarters"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "key": self.key,
            "outcomes": self.outcomes,
            "clusters": self.clusters,
            "mean": _round(self.mean),
            "stderr": _round(self.stderr),
            "spread": _round(self.spread),
            "applied": _round(self.applied),
            "statement": self.statement(),
        }


@dataclass(frozen=True)
class Learned:
    """What was learned, per source, and the lead-time and readiness slips."""

    sources: dict[str, SourceLearning]
    prior: Prior = field(default_factory=Prior)
    decisions: int = 0  #: decisions with an outcome that gave observations
    #: ``lead:vendor/part`` or ``ready:site`` -> the slip learned
    slips: dict[str, SlipLearning] = field(default_factory=dict)

    def get(self, source: str) -> SourceLearning | None:
        return self.sources.get(source)

    def slip(self, kind: str, key: str) -> SlipLearning | None:
        return self.slips.get(f"{kind}:{key}")

    def to_dict(self) -> dict[str, Any]:
        out = self._sources_dict()
        if self.slips:
            out["slips"] = {k: v.to_dict() for k, v in sorted(self.slips.items())}
        return out

    def _sources_dict(self) -> dict[str, Any]:
        return {
            "prior_outcomes": self.prior.outcomes,
            "decisions": self.decisions,
            "sources": {
                name: {
                    "outcomes": s.outcomes,
                    "forecasts": s.forecasts,
                    "mean_log_ratio": _round(s.mean_log_ratio),
                    "stderr": _round(s.stderr),
                    "bias": _round(s.bias),
                    "by_lead": [
                        {
                            "lead": lb.lead,
                            "outcomes": lb.outcomes,
                            "mean_log_ratio": _round(lb.mean_log_ratio),
                            "stderr": _round(lb.stderr),
                            "applied": _round(lb.applied),
                        }
                        for lb in s.by_lead
                    ],
                    "spread_outcomes": s.spread_outcomes,
                    "spread_ratio": _round(s.spread_ratio),
                    "spread": _round(s.spread),
                    "coverage": None if s.coverage is None else _round(s.coverage),
                    "statement": s.statement(),
                }
                for name, s in sorted(self.sources.items())
            },
        }


def _round(x: float) -> float | None:
    return None if math.isnan(x) else round(x, 6)


def stated_spread(levels: np.ndarray, row: np.ndarray) -> tuple[float, float, float]:
    """(median, q10, q90) of one period's quantiles, read linearly as the scenarios read them
    (``scenarios.inverse_cdf``: outer segments extended, never below 0)."""
    from clusterloom.capacity.scenarios import inverse_cdf

    q = np.clip(inverse_cdf(levels, row[None, :], np.array([0.5, 0.1, 0.9]))[:, 0], 0.0, None)
    return float(q[0]), float(q[1]), float(q[2])


def _stderr(x: np.ndarray, cluster: Sequence[str]) -> float:
    """The standard error of the mean of ``x``, clustered by forecast (the sandwich
    estimator: errors within a forecast may be correlated, forecasts independent); nan with
    fewer than 2 forecasts."""
    keys = sorted(set(cluster))
    if len(keys) < 2:
        return math.nan
    resid = x - x.mean()
    index = {k: i for i, k in enumerate(keys)}
    sums = np.zeros(len(keys))
    np.add.at(sums, [index[c] for c in cluster], resid)
    G = len(keys)
    return float(math.sqrt(G / (G - 1) * float(np.sum(sums**2))) / len(x))


def learn_slips(
    observations: Iterable[SlipObservation], prior: Prior | None = None
) -> dict[str, SlipLearning]:
    """The shrunk mean slip per (kind, key) from ``observations`` (module docstring)."""
    n0 = (prior or Prior()).outcomes
    groups: dict[tuple[str, str], list[SlipObservation]] = {}
    for o in observations:
        if math.isfinite(o.slip):
            groups.setdefault((o.kind, o.key), []).append(o)
    out: dict[str, SlipLearning] = {}
    for (kind, key), obs in sorted(groups.items()):
        x = np.array([o.slip for o in obs])
        clusters = [o.cluster or f"#{i}" for i, o in enumerate(obs)]
        n = len(x)
        mean = float(x.mean())
        got = SlipLearning(
            kind=kind,
            key=key,
            outcomes=n,
            clusters=len(set(clusters)),
            mean=mean,
            stderr=_stderr(x, clusters),
            spread=float(x.std(ddof=1)) if n > 1 else 0.0,
            applied=n * mean / (n + n0),
        )
        out[got.name] = got
    return out


def learn(
    observations: Iterable[Observation],
    prior: Prior | None = None,
    slips: Iterable[SlipObservation] = (),
) -> Learned:
    """Bias and spread per source from ``observations``, and the lead-time and readiness
    slips from ``slips`` (module docstring)."""
    prior = prior or Prior()
    n0 = prior.outcomes
    by_source: dict[str, list[Observation]] = {}
    for o in observations:
        if math.isfinite(o.log_ratio):
            by_source.setdefault(o.source, []).append(o)
    out: dict[str, SourceLearning] = {}
    for source, obs in sorted(by_source.items()):
        r = np.array([o.log_ratio for o in obs])
        keys = [o.forecast or f"#{i}" for i, o in enumerate(obs)]
        n = len(r)
        mean = float(r.mean())
        pooled = n * mean / (n + n0)
        leads: list[LeadBias] = []
        for lead in sorted({o.lead for o in obs}):
            at = [i for i, o in enumerate(obs) if o.lead == lead]
            rl = r[at]
            ml = float(rl.mean())
            applied = (len(rl) * ml + n0 * pooled) / (len(rl) + n0)
            leads.append(LeadBias(lead, len(rl), ml, _stderr(rl, [keys[i] for i in at]), applied))
        with_sigma = [o for o in obs if o.sigma is not None and o.sigma > 0]
        if with_sigma:
            # the error left once the applied bias is taken off, in stated sigmas
            applied_at = {lb.lead: lb.applied for lb in leads}
            z = np.array(
                [(o.log_ratio - applied_at[o.lead]) / (o.sigma or 1.0) for o in with_sigma]
            )
            k_raw = float(math.sqrt(np.mean(z**2)))
            m = len(z)
            k = math.exp(m * math.log(max(k_raw, 1e-6)) / (m + n0)) if k_raw > 0 else 1.0
        else:
            k_raw, k, m = 1.0, 1.0, 0
        inside = [o.inside for o in obs if o.inside is not None]
        out[source] = SourceLearning(
            source=source,
            outcomes=n,
            mean_log_ratio=mean,
            stderr=_stderr(r, keys),
            forecasts=len(set(keys)),
            bias=pooled,
            by_lead=tuple(leads),
            spread_outcomes=m,
            spread_ratio=k_raw,
            spread=min(max(k, 1.0 / MAX_FACTOR), MAX_FACTOR),
            coverage=(sum(inside) / len(inside)) if inside else None,
        )
    return Learned(out, prior, slips=learn_slips(slips, prior))


def forecast_observations(
    source: str,
    program: str,
    site: str,
    levels: Sequence[float],
    quantiles: Sequence[Sequence[float]],
    periods: Sequence[str],
    actual: dict[str, float],
    forecast: str = "",
) -> list[Observation]:
    """The observations of one forecast (quantile rows per period of ``periods``) against
    ``actual`` (period label -> realised cumulative demand); ``forecast`` names it (default
    ``program@site``)."""
    lv = np.asarray(levels, dtype=np.float64)
    out = []
    for lead, (label, row) in enumerate(zip(periods, quantiles, strict=True)):
        a = actual.get(label)
        if a is None:
            continue
        med, lo, hi = stated_spread(lv, np.asarray(row, dtype=np.float64))
        if med <= 0 or a <= 0:
            continue
        sigma = None
        inside = None
        if lo > 0 and hi > lo:
            sigma = (math.log(hi) - math.log(lo)) / (2.0 * Z90)
            inside = lo <= a <= hi
        out.append(
            Observation(
                source=source,
                lead=lead,
                log_ratio=math.log(a / med),
                sigma=sigma,
                inside=inside,
                program=program,
                site=site,
                period=label,
                forecast=forecast or f"{program}@{site}",
            )
        )
    return out


def program_source(program: ProgramInput) -> str:
    """Whose forecast a program's is: its ``source``, else its own name."""
    return program.source or program.name


def _corrected(forecast: Forecast, learning: SourceLearning) -> Forecast:
    levels, values = forecast.quantile_table()  # [L], [T, L]
    if forecast.samples is not None:
        arr = np.asarray(forecast.samples, dtype=np.float64)  # [n, T]
        med = np.median(arr, axis=0)
        new = _move(arr, med, learning)
        new = np.maximum.accumulate(new, axis=1)
        return Forecast(samples=[[float(v) for v in row] for row in new])
    med = np.array([stated_spread(levels, values[t])[0] for t in range(values.shape[0])])
    new = _move(values.T, med, learning).T  # [T, L]
    new = np.maximum.accumulate(new, axis=0)
    return Forecast(
        levels=[float(v) for v in levels], accelerators=[[float(v) for v in row] for row in new]
    )


def _move(rows: np.ndarray, med: np.ndarray, learning: SourceLearning) -> np.ndarray:
    """``rows`` [X, T] of values per period moved by the bias at each lead and scaled about
    the median ``med`` [T] by the spread."""
    from clusterloom.spec.limits import MAX_ACCELERATORS

    T = rows.shape[1]
    factor = np.array([math.exp(learning.bias_at(t)) for t in range(T)])
    factor = np.clip(factor, 1.0 / MAX_FACTOR, MAX_FACTOR)
    k = learning.spread
    out = np.empty_like(rows)
    for t in range(T):
        v, m = rows[:, t], med[t]
        if m > 0:
            ratio = np.where(v > 0, v / m, 1.0)
            out[:, t] = np.where(v > 0, m * factor[t] * np.power(ratio, k), 0.0)
        else:
            out[:, t] = v * factor[t]
    return np.clip(np.round(out, 6), 0.0, float(MAX_ACCELERATORS))


def apply_learning(plan: PlanInput, learned: Learned) -> PlanInput:
    """``plan`` with each program's forecasts corrected by what ``learned`` holds for its
    source (module docstring); a program whose source has no outcomes is left as it is.
    ``learning_statements`` says what was applied and why."""
    from pydantic import ValidationError

    programs = []
    for p in plan.programs:
        learning = learned.get(program_source(p))
        if learning is None or learning.outcomes == 0:
            programs.append(p)
            continue
        demand = {site: _corrected(f, learning) for site, f in p.demand.items()}
        programs.append(p.model_copy(update={"demand": demand}))
    data = plan.model_dump(mode="json")
    data["programs"] = [q.model_dump(mode="json") for q in programs]
    if learned.slips:
        _apply_slips(plan, learned, data)
    try:
        new = PlanInput.model_validate(data)
    except ValidationError as exc:  # a correction breaking the plan's own rules is a bug
        raise SpecError([Problem("learning", f"the corrected plan is not valid: {exc}")]) from exc
    problems = check_plan(new)
    if problems:
        raise SpecError(problems)
    return new


def _shifted(
    levels: Sequence[float], values: Sequence[float], slip: SlipLearning, certain: bool
) -> dict[str, list[float]]:
    """A lead time or ready date (quarters) moved by the applied slip (module docstring)."""
    from clusterloom.capacity.input import MAX_PERIODS

    if certain:
        v = values[0] + slip.applied
        lv = [0.1, 0.5, 0.9]
        qs = [v - Z90 * slip.spread, v, v + Z90 * slip.spread]
    else:
        lv, qs = list(levels), [v + slip.applied for v in values]
    return {
        "levels": [float(x) for x in lv],
        "quarters": [round(min(max(q, 0.0), float(MAX_PERIODS)), 6) for q in qs],
    }


def _apply_slips(plan: PlanInput, learned: Learned, data: dict[str, Any]) -> None:
    """``data`` (the plan as JSON) with lead times and ready dates moved by the slips."""
    from clusterloom.capacity.input import Distribution, quarter_index

    for part, p_data in zip(plan.parts, data["parts"], strict=True):
        slip = learned.slip("lead", f"{part.supplier.vendor}/{part.id}")
        if slip is None or slip.outcomes == 0:
            continue
        lt = part.supplier.lead_time
        if isinstance(lt, Distribution):
            p_data["supplier"]["lead_time"] = _shifted(lt.levels, lt.values(), slip, False)
        else:
            p_data["supplier"]["lead_time"] = _shifted([0.5], [float(lt)], slip, True)
    start = quarter_index(plan.horizon.start)
    for site, s_data in zip(plan.sites, data["sites"], strict=True):
        slip = learned.slip("ready", site.name)
        if slip is None or slip.outcomes == 0:
            continue
        for b, b_data in zip(site.buildings, s_data["buildings"], strict=True):
            for h, h_data in zip(b.halls, b_data["halls"], strict=True):
                if h.ready is None:
                    continue
                if isinstance(h.ready, Distribution):
                    off = 0 if not isinstance(h.ready.quarters[0], str) else start
                    values = [v - off for v in h.ready.values()]
                    h_data["ready"] = _shifted(h.ready.levels, values, slip, False)
                else:
                    h_data["ready"] = _shifted(
                        [0.5], [float(quarter_index(h.ready) - start)], slip, True
                    )


def learning_statements(plan: PlanInput, learned: Learned) -> tuple[str, ...]:
    """One sentence per source of ``plan``'s programs: what was learned, what is applied."""
    said: dict[str, list[str]] = {}
    for p in plan.programs:
        said.setdefault(program_source(p), []).append(p.name)
    out = []
    for src, names in sorted(said.items()):
        learning = learned.get(src)
        head = (
            learning.statement()
            if learning is not None
            else f"{src}: no outcomes yet; forecasts used as stated"
        )
        out.append(f"{head} (programs: {', '.join(names)})")
    for part in plan.parts:
        slip = learned.slip("lead", f"{part.supplier.vendor}/{part.id}")
        if slip is not None and slip.outcomes:
            out.append(slip.statement())
    for site in plan.sites:
        slip = learned.slip("ready", site.name)
        if slip is not None and slip.outcomes:
            stated = any(h.ready is not None for h in site.halls)
            out.append(
                slip.statement() + ("" if stated else " (no hall states a date: none moved)")
            )
    return tuple(out)
