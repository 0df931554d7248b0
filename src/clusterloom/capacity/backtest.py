"""The backtest of decision memory and learning (issue 22, part 6's proof; ``docs/capacity.md``,
"Backtest"): a seeded synthetic history where the forecasts are biased and noisy and the
truth is known, planned quarter by quarter by four planners, each decision priced against
the truth.

**The history** (``synthetic_history``). One site (``east``), two programs. Each program's
true cumulative demand grows each quarter by a seeded gamma-distributed step (mean
``growth``, coefficient of variation 0.5) from ``start``. Each quarter ``q`` its source
forecasts the next ``horizon`` quarters: median ``truth[q + h] x bias x exp(noise e)`` with
one standard normal ``e`` per forecast (the error persists across its leads, so the forecast
path stays cumulative, as the truth is), and states quantiles at 10/50/90 % of ``median x
exp(±1.2816 stated)``. The error does not grow with the lead: a growing one would bend a
path that must not fall, and its running maximum would shift the very bias and spread the
backtest checks are learned. The default sources: ``optimistic``
(forecasts 30 % high, noise 0.08, stated 0.08: biased, honest about its spread) for
``pretrain``; ``noisy`` (unbiased, noise 0.25, stated 0.10: over-confident) for
``inference``. The generated bias, as learning measures it, is ``-ln(bias)``.

**The plan** (``backtest_plan``): the site's halls, one fabric choice (2-tier ``hgx-1k-roce``,
the fabric stage alone, curves at fixed sizes so every quarter reads the same cached points),
the parts that design needs with fixed lead times (switches 2 quarters, optics and AOCs 1,
DACs 0), no caps that bind, no vendor slips, and the example plan's costs (idle accelerator
$4,380 a quarter, expediting 25 %, carrying 3 % a quarter). Each quarter's plan starts from
an estate that holds what runs at the end of the previous quarter (the truth), so each
decision is scored on its own window of ``horizon`` quarters, the same for every planner.

**The planners**, each quarter, deciding the first-stage orders ``buy`` with
``capacity.optimise`` on the plan's own costs:

- ``median``: the deterministic optimum of one scenario, the forecast's median path;
- ``p90``: the same for the forecast's 90 % path;
- ``stochastic``: the two-stage plan over ``scenarios`` scenarios of the forecast as stated;
- ``learning``: the same plan on the forecasts corrected (``learn.apply_learning``) by what
  the decisions recorded so far (``memory.plan_record``, ``memory.outcome_record``) say of
  each source, from the actuals known by then (periods before the quarter decided in).

**Realised cost**: the planner's ``buy`` fixed, the recourse re-optimised on the true demand
of the window (``memory.price_first_stage``). The objective of the stochastic planners is the
expected cost (``risk_weight`` 0 by default: the backtest scores the realised cost, which a
risk premium would raise by design). *Assumptions:* the window's stock left at its end has
no salvage value (the optimisation's own horizon rule); accelerators arrive when wanted;
lead times are certain, so the only uncertainty is demand.

**The lead-time case** (``lead_slip`` > 0; ``capacity backtest --lead-slip``): the supplier of
one part (``SLIPPED_PART``, nvidia's switch) delivers late by a seeded Poisson number of
quarters with mean ``lead_slip``, one draw a quarter (a vendor's slip hits every order of that
quarter), drawn from its own stream so the demand history is the same. The truth each
decision is priced against has that quarter's lead; the planners plan with the quoted one,
the learning planner with the lead learned (``learn.learn_slips``) from the ``delivered``
actuals recorded so far (each part the learning plan ordered, arriving ``quoted + slip``
quarters later, known once it has arrived). Every other part delivers as quoted, so its
learned slip must stay 0. With ``lead_slip`` 0 (the default) no delivery is recorded and every
figure above is unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from clusterloom.capacity.actuals import Actual
from clusterloom.capacity.input import PlanInput, parse_plan, quarter_index, quarter_label
from clusterloom.capacity.learn import Z90, Learned, Prior, apply_learning
from clusterloom.capacity.model import CapacityProblem, Curves
from clusterloom.changes import Decision
from clusterloom.errors import Problem, SpecError

__all__ = [
    "PLANNERS",
    "Backtest",
    "History",
    "SourceSpec",
    "backtest_plan",
    "run_backtest",
    "synthetic_history",
]

PLANNERS = ("median", "p90", "stochastic", "learning")
#: the part whose supplier slips in the lead-time case, and its quoted lead
SLIPPED_PART = ("nvidia", "switch:sn5600", 2)
#: the longest history (the demand grows past the curves' largest size beyond it)
MAX_QUARTERS = 40
START = "2027Q1"
LEVELS = (0.1, 0.5, 0.9)


@dataclass(frozen=True)
class SourceSpec:
    """A forecast source of the synthetic history."""

    name: str
    bias: float  #: forecasts are this many times the truth (1.3: 30 % high)
    noise: float  #: the log-normal error's sigma
    stated: float  #: the sigma the source states in its quantiles

    @property
    def generated_bias(self) -> float:
        """The bias as learning measures it: the mean ln(actual / forecast median)."""
        return -math.log(self.bias)


DEFAULT_SOURCES = (
    SourceSpec("optimistic", 1.3, 0.08, 0.08),
    SourceSpec("noisy", 1.0, 0.25, 0.10),
)
#: (program, its source's index, its first quarter's demand, mean growth a quarter)
PROGRAMS = (("pretrain", 0, 256.0, 64.0), ("inference", 1, 128.0, 48.0))


@dataclass(frozen=True, eq=False)
class History:
    """The truth and the forecasts: ``truth[r, t]`` cumulative demand of program ``r`` at
    quarter ``t`` (``-1``: before the first, index 0 of the array is quarter -1);
    ``forecasts[q, r, h, l]`` the forecast made at quarter ``q`` for quarter ``q + h`` at
    level ``LEVELS[l]``."""

    seed: int
    quarters: int
    horizon: int
    sources: tuple[SourceSpec, ...]
    truth: np.ndarray  #: [R, quarters + horizon + 1]
    forecasts: np.ndarray  #: [quarters, R, horizon, 3]

    def true(self, r: int, quarter: int) -> float:
        return float(self.truth[r, quarter + 1])


def synthetic_history(
    quarters: int = 12,
    seed: int = 0,
    *,
    horizon: int = 4,
    sources: tuple[SourceSpec, ...] = DEFAULT_SOURCES,
) -> History:
    """The seeded history of the module docstring."""
    rng = np.random.default_rng(seed)
    R, total = len(PROGRAMS), quarters + horizon + 1
    truth = np.zeros((R, total))
    for r, (_name, _src, first, growth) in enumerate(PROGRAMS):
        steps = rng.gamma(4.0, growth / 4.0, size=total - 1)  # mean growth, cv 0.5
        truth[r] = np.concatenate([[first], first + np.cumsum(steps)])
    forecasts = np.zeros((quarters, R, horizon, len(LEVELS)))
    h = np.arange(horizon)
    z = np.array([-Z90, 0.0, Z90])
    for q in range(quarters):
        for r, (_name, src, _first, _growth) in enumerate(PROGRAMS):
            s = sources[src]
            e = rng.standard_normal()
            med = truth[r, q + 1 + h] * s.bias * math.exp(s.noise * e)
            rows = med[:, None] * np.exp(z[None, :] * s.stated)
            forecasts[q, r] = np.round(rows, 3)
    return History(seed, quarters, horizon, sources, truth, forecasts)


_PARTS = """
  - {id: "switch:sn5600", supplier: {vendor: nvidia, lead_time: 2, price_usd: 55000, cap: 100000}}
  - {id: "switch:tomahawk3-32x400g", supplier: {vendor: switch-co, lead_time: 2, price_usd: 15000, cap: 100000}}
  - {id: "optic:dr4-400g", supplier: {vendor: optics-co, lead_time: 1, price_usd: 650, cap: 1000000}}
  - {id: "optic:fr4-400g", supplier: {vendor: optics-co, lead_time: 1, price_usd: 900, cap: 1000000}}
  - {id: "optic:dr2-200g", supplier: {vendor: optics-co, lead_time: 1, price_usd: 280, cap: 1000000}}
  - {id: "cable:aoc-400g", supplier: {vendor: cable-co, lead_time: 1, price_usd: 1000, cap: 1000000}}
  - {id: "cable:dac-200g", supplier: {vendor: cable-co, lead_time: 0, price_usd: 150, cap: 1000000}}
"""  # noqa: E501


def _parts(extra_lead: int) -> str:
    """The parts, the slipped part's lead ``extra_lead`` quarters longer than quoted."""
    if extra_lead == 0:
        return _PARTS
    _vendor, part, quoted = SLIPPED_PART
    old = f'{part}", supplier: {{vendor: nvidia, lead_time: {quoted},'
    assert old in _PARTS
    return _PARTS.replace(
        old, f'{part}", supplier: {{vendor: nvidia, lead_time: {quoted + extra_lead},'
    )


def _quoted_lead(part: str) -> int:
    line = next(x for x in _PARTS.splitlines() if f'"{part}"' in x)
    return int(line.split("lead_time:")[1].split(",")[0])


def _plan_yaml(
    start: str,
    horizon: int,
    demand: dict[str, list[list[float]]],
    sources: tuple[str, ...],
    extra_lead: int = 0,
) -> str:
    levels = "[0.1, 0.5, 0.9]" if len(next(iter(demand.values()))[0]) == 3 else "[0.5]"
    progs = []
    for (name, src, _first, _growth), (_n, rows) in zip(PROGRAMS, demand.items(), strict=True):
        progs.append(
            f"  - name: {name}\n    source: {sources[src]}\n"
            f"    demand:\n      east:\n        levels: {levels}\n"
            f"        accelerators: {rows}\n"
        )
    return f"""version: 1
name: backtest
horizon: {{start: {start}, periods: {horizon}}}
fabrics: [{{name: 2-tier, template: hgx-1k-roce, tiers: 2}}]
curves: {{sizes: [512, 1024, 2048, 4096], place: false}}
sites:
  - name: east
    buildings:
      - name: b1
        halls:
          - {{name: h1, rows: 16, positions_per_row: 24, position_power_kw: 45, power: {{it_mw: 17, pue: 1.25}}}}
          - {{name: h2, rows: 16, positions_per_row: 24, position_power_kw: 45, power: {{it_mw: 17, pue: 1.25}}}}
programs:
{"".join(progs)}parts:{_parts(extra_lead)}costs:
  idle_usd_per_accelerator_quarter: 4380
  expedite_fraction: 0.25
  carry_fraction_per_quarter: 0.03
  rework_usd_per_accelerator: 500
"""  # noqa: E501


def backtest_plan(
    history: History, quarter: int, demand: str = "forecast", extra_lead: int = 0
) -> PlanInput:
    """The plan made at ``quarter``: its programs' forecasts as made then (``forecast``),
    one path at the forecast's ``median`` or ``p90``, or the ``truth`` of the window;
    ``extra_lead``: the slipped part's lead that many quarters beyond its quote."""
    start = quarter_label(quarter_index(START) + quarter)
    H = history.horizon
    rows: dict[str, list[list[float]]] = {}
    for r, (name, *_rest) in enumerate(PROGRAMS):
        f = history.forecasts[quarter, r]
        if demand == "forecast":
            rows[name] = [[float(v) for v in row] for row in f]
        elif demand in ("median", "p90"):
            col = 1 if demand == "median" else 2
            rows[name] = [[float(v)] for v in f[:, col]]
        elif demand == "truth":
            rows[name] = [[round(history.true(r, quarter + h), 3)] for h in range(H)]
        else:
            raise ValueError(f"demand {demand!r}")
    names = tuple(s.name for s in history.sources)
    return parse_plan(_plan_yaml(start, H, rows, names, extra_lead), source="<backtest>")


def _problem(
    plan: PlanInput, curves: Curves, history: History, quarter: int, scenarios: int, seed: int
) -> CapacityProblem:
    """The plan's problem from the estate running at the end of the previous quarter."""
    from dataclasses import replace

    from clusterloom.capacity.problem import build_problem
    from clusterloom.capacity.scenarios import sample_scenarios

    sc = sample_scenarios(plan, scenarios, seed)
    problem = build_problem(plan, curves, sc)
    running = sum(history.true(r, quarter - 1) for r in range(len(PROGRAMS)))
    units = np.asarray(curves.parts_at(0, 0, running))[None, :]
    return replace(
        problem,
        installed_units=units.copy(),
        installed_accelerators=np.array([running]),
        installed_choice=np.array([0], dtype=np.int64),
    )


def _buy(problem: CapacityProblem, risk_weight: float) -> dict[str, dict[str, float]]:
    from clusterloom.capacity.optimise import Options, build, solve

    model = build(problem, Options(risk_weight=risk_weight))
    solved, _ = solve(model)
    cv = problem.curves
    return {
        cv.sites[n]: {
            cv.parts[p]: round(float(solved.values[model.buy[n, p]]), 6)
            for p in range(len(cv.parts))
        }
        for n in range(len(cv.sites))
    }


@dataclass(frozen=True, eq=False)
class Backtest:
    """The backtest's result: realised cost per quarter and planner, and the learned bias
    against the generated one."""

    history: History
    scenarios: int
    planners: tuple[str, ...]
    #: [quarters, planners] realised cost of each decision, cents
    cost_cents: np.ndarray
    #: [quarters, planners] the hindsight optimum of the same window (the same in every column)
    hindsight_cents: np.ndarray
    #: source -> [quarters] the applied pooled bias learned before deciding in that quarter
    learned_bias: dict[str, np.ndarray]
    #: source -> [quarters] observations learned from before that quarter
    outcomes: dict[str, np.ndarray]
    #: what had been learned by the end (from every actual of the history)
    final: Learned
    records: tuple[Decision, ...] = field(default=())
    #: the lead-time case: the generated mean slip of ``SLIPPED_PART`` (0: not run)
    lead_slip: float = 0.0
    #: [quarters] the slip drawn each quarter (the lead-time case)
    slip_drawn: np.ndarray = field(default_factory=lambda: np.zeros(0))
    #: ``vendor/part`` -> [quarters] the applied lead-time slip learned before each quarter
    learned_slip: dict[str, np.ndarray] = field(default_factory=dict)

    def total(self, planner: str) -> float:
        return float(self.cost_cents[:, self.planners.index(planner)].sum())

    def bias_error(self, source: str) -> np.ndarray:
        """[quarters] |learned - generated| bias of ``source`` before each quarter."""
        spec = next(s for s in self.history.sources if s.name == source)
        return np.abs(self.learned_bias[source] - spec.generated_bias)

    def to_dict(self) -> dict[str, Any]:
        hind = float(self.hindsight_cents[:, 0].sum())
        return {
            "quarters": self.history.quarters,
            "horizon": self.history.horizon,
            "seed": self.history.seed,
            "scenarios": self.scenarios,
            "planners": {
                p: {
                    "realised_cost_cents": round(self.total(p)),
                    "regret_cents": round(self.total(p) - hind),
                }
                for p in self.planners
            },
            "hindsight_cents": round(hind),
            "sources": {
                s.name: {
                    "generated_bias": round(s.generated_bias, 6),
                    "learned_bias_by_quarter": [
                        round(float(v), 6) for v in self.learned_bias[s.name]
                    ],
                    "outcomes_by_quarter": [int(v) for v in self.outcomes[s.name]],
                    "final": self.final.to_dict()["sources"].get(s.name),
                }
                for s in self.history.sources
            },
            **({"lead_time": self._lead_dict()} if self.lead_slip > 0 else {}),
        }

    def _lead_dict(self) -> dict[str, Any]:
        vendor, part, _quoted = SLIPPED_PART
        return {
            "slipped": f"{vendor}/{part}",
            "generated_slip": self.lead_slip,
            "slip_drawn_by_quarter": [int(v) for v in self.slip_drawn],
            "learned_slip_by_quarter": {
                k: [round(float(x), 6) for x in v] for k, v in sorted(self.learned_slip.items())
            },
            "final": {
                k: v.to_dict() for k, v in sorted(self.final.slips.items()) if v.kind == "lead"
            },
        }


def run_backtest(
    quarters: int = 12,
    seed: int = 0,
    *,
    horizon: int = 4,
    scenarios: int = 16,
    risk_weight: float = 0.0,
    prior: Prior | None = None,
    sources: tuple[SourceSpec, ...] = DEFAULT_SOURCES,
    cache: Path | None = None,
    lead_slip: float = 0.0,
    learn_lead: bool = True,
) -> Backtest:
    """The backtest of the module docstring; deterministic for ``seed``; ``lead_slip`` > 0
    runs the lead-time case; ``learn_lead`` False keeps the learning planner's lead times
    as quoted (demand learning alone: what learning the slip is worth)."""
    from clusterloom.capacity.curves import compute_curves
    from clusterloom.capacity.memory import (
        Realised,
        learn_from_records,
        outcome_record,
        plan_record,
        price_first_stage,
        record_id,
    )

    problems = [
        Problem(name, f"{value} is not between {lo} and {hi}")
        for name, value, lo, hi in (
            ("--quarters", quarters, 1, MAX_QUARTERS),
            ("--horizon", horizon, 2, 12),
            ("--scenarios", scenarios, 1, 500),
        )
        if not lo <= value <= hi
    ]
    if not 0.0 <= risk_weight <= 10.0:
        problems.append(Problem("--risk-weight", f"{risk_weight} is not between 0 and 10"))
    if seed < 0:
        problems.append(Problem("--seed", "a seed is at least 0"))
    if not (math.isfinite(lead_slip) and 0.0 <= lead_slip <= 4.0):
        problems.append(Problem("--lead-slip", f"{lead_slip} is not between 0 and 4 quarters"))
    if problems:
        raise SpecError(problems)
    history = synthetic_history(quarters, seed, horizon=horizon, sources=sources)
    curves = compute_curves(backtest_plan(history, 0), cache=cache)
    names = tuple(s.name for s in sources)
    cost = np.zeros((quarters, len(PLANNERS)))
    hind = np.zeros((quarters, len(PLANNERS)))
    learned_bias = {s: np.zeros(quarters) for s in names}
    outcomes = {s: np.zeros(quarters, dtype=np.int64) for s in names}
    memory: list[tuple[str, Decision]] = []
    records: list[Decision] = []
    drawn = (
        np.random.default_rng([seed, 22]).poisson(lead_slip, size=quarters)
        if lead_slip > 0
        else np.zeros(quarters, dtype=np.int64)
    )
    slip_keys = [f"{v['vendor']}/{p['id']}" for p, v in _part_suppliers()]
    learned_slip = {k: np.zeros(quarters) for k in slip_keys} if lead_slip > 0 else {}
    for q in range(quarters):
        label = quarter_label(quarter_index(START) + q)
        learned = learn_from_records(memory, prior=prior, known_before=label)
        for s in names:
            got = learned.get(s)
            learned_bias[s][q] = got.bias if got is not None else 0.0
            outcomes[s][q] = got.outcomes if got is not None else 0
        for k, arr in learned_slip.items():
            sl = learned.slip("lead", k)
            arr[q] = sl.applied if sl is not None else 0.0
        if not learn_lead:
            from dataclasses import replace as _replace

            learned = _replace(learned, slips={})
        stated = backtest_plan(history, q)
        truth = _problem(
            backtest_plan(history, q, "truth", int(drawn[q])), curves, history, q, 1, seed
        )
        plans = {
            "median": (backtest_plan(history, q, "median"), 1),
            "p90": (backtest_plan(history, q, "p90"), 1),
            "stochastic": (stated, scenarios),
            "learning": (apply_learning(stated, learned), scenarios),
        }
        stated_problem = None
        for i, planner in enumerate(PLANNERS):
            plan, n = plans[planner]
            problem = _problem(plan, curves, history, q, n, seed + q)
            if planner == "stochastic":
                stated_problem = problem
            buy = _buy(problem, risk_weight)
            c, h, _notes = price_first_stage(truth, {"orders": buy, "tiers": {}})
            cost[q, i], hind[q, i] = c, h
            if planner == "learning":
                assert stated_problem is not None
                # memory holds the forecasts as stated (what the source said), not the
                # corrected ones: learning measures the source
                rec = plan_record(stated, stated_problem, None)
                actuals = [
                    Actual("demand", "east", name, quarter_label(quarter_index(label) + t), v[0])
                    for name, rows in _truth_rows(history, q).items()
                    for t, v in enumerate(rows)
                ]
                if lead_slip > 0:
                    actuals += _deliveries(buy, label, int(drawn[q]))
                realised = Realised(
                    periods=tuple(stated.periods),
                    cost_cents=c,
                    hindsight_cents=h,
                    first_stage={"orders": buy, "tiers": {}},
                    notes=(),
                )
                out = outcome_record(rec, actuals, realised)
                memory += [(record_id(rec), rec), (record_id(out), out)]
                records += [rec, out]
    end = quarter_label(quarter_index(START) + quarters + horizon)
    final = learn_from_records(memory, prior=prior, known_before=end)
    return Backtest(
        history=history,
        scenarios=scenarios,
        planners=PLANNERS,
        cost_cents=cost,
        hindsight_cents=hind,
        learned_bias=learned_bias,
        outcomes=outcomes,
        final=final,
        records=tuple(records),
        lead_slip=lead_slip,
        slip_drawn=drawn,
        learned_slip=learned_slip,
    )


def _part_suppliers() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    import yaml

    parts: list[dict[str, Any]] = yaml.safe_load(_PARTS)
    return [(p, p["supplier"]) for p in parts]


def _deliveries(buy: dict[str, dict[str, float]], label: str, slip: int) -> list[Actual]:
    """What the orders ``buy`` placed in ``label`` delivered: the slipped part ``slip``
    quarters beyond its quote, every other as quoted."""
    out = []
    for site, by_part in sorted(buy.items()):
        for part, units in sorted(by_part.items()):
            if units <= 0:
                continue
            lead = _quoted_lead(part) + (slip if part == SLIPPED_PART[1] else 0)
            arrived = quarter_label(quarter_index(label) + lead)
            out.append(Actual("delivered", site, "", label, float(units), part, arrived))
    return out


def _truth_rows(history: History, quarter: int) -> dict[str, list[list[float]]]:
    return {
        name: [[round(history.true(r, quarter + h), 3)] for h in range(history.horizon)]
        for r, (name, *_rest) in enumerate(PROGRAMS)
    }
