"""Decision memory (issue 22, part 6; ``docs/capacity.md``, "Decision memory and learning"):
each plan's decision with its context and, later, its realised outcome, kept as
``changes.Decision`` records in the design store or in a JSON-lines log
(``changes.append_record``): one model, the same records either way.

**A plan's decision** (``plan_record``): ``write.plan_decision`` (the proposal names the plan,
its hash and the seed; ``chosen`` the move ranked first; ``context`` the content of
``menu.json``) with ``context["memory"]`` added: the plan's inputs (``plan``, the whole
validated document, so the decision can be priced again later), the folder it was read from,
its forecasts per program and site as quantiles (``forecasts``: program, source, site, levels,
periods, one row per period) and a scenario summary (per site and period, the 10/50/90 %
demand of the scenarios).

**Its outcome** (``outcome_record``): a new ``Decision`` on the **same proposal** with the
same context and choice and ``outcome`` filled in (a JSON document: the actuals and the
realised cost). Records are never rewritten (the log is append-only and the store keeps a
record's content under its hash), so the decision of a proposal is the **latest** record on
it (``latest``): its outcome, once one is recorded.

**Realised cost** (``realised_cost``): the decision's first-stage moves as the menu lists
them (orders of the moves in the plan, the tier of a site the menu names) priced against the
actual demand with the plan's own costs: the plan's recourse problem (``optimise.build``)
with one scenario, the actuals, over the periods for which every forecast has an actual;
the recourse (later orders, expediting, idle accelerators, carrying) re-optimised on it.
*Assumptions:* lead times at their median (``delivered`` actuals teach the next plan's lead
times, ``slip_observations``, but do not reprice this one), no vendor slip, halls ready
at their median quarter unless a ``ready`` actual says when, accelerators delivered as they
are wanted; an order the menu does not list (beyond its ``max_decisions``) counts as not
made; a landing share is not in the menu (it lists accelerators landed) and is re-optimised
on the actual, said in the outcome's notes. Beside it the **hindsight** cost (the first
stage free too: the best plan had the actuals been known) and the regret, their difference.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from clusterloom.capacity.actuals import Actual
from clusterloom.capacity.input import Distribution, PlanInput, plan_from_dict, quarter_index
from clusterloom.capacity.learn import (
    Learned,
    Observation,
    Prior,
    SlipObservation,
    forecast_observations,
    learn,
    program_source,
)
from clusterloom.changes import Decision, Record, append_record, from_json, read_records, to_json
from clusterloom.errors import Problem, SpecError

if TYPE_CHECKING:
    from clusterloom.capacity.model import CapacityProblem, Curves
    from clusterloom.capacity.report import MenuLike
    from clusterloom.store import Store

__all__ = [
    "MEMORY_SCHEMA",
    "OUTCOME_SCHEMA",
    "Realised",
    "decision_context",
    "find_decision",
    "latest",
    "learn_from_records",
    "observations",
    "outcome_record",
    "plan_record",
    "read_decisions",
    "realised_cost",
    "record_decision",
    "record_id",
    "slip_observations",
]

MEMORY_SCHEMA = "clusterloom.capacity.memory"
OUTCOME_SCHEMA = "clusterloom.capacity.outcome"


def record_id(rec: Record) -> str:
    """The id the store gives a decision: the hash of its content (the log's records carry
    the same id, so a decision is named the same in both)."""
    return hashlib.sha256(to_json(rec).encode()).hexdigest()[:16]


def decision_context(
    plan: PlanInput,
    problem: CapacityProblem,
    menu: MenuLike | None,
    *,
    plan_dir: Path | None = None,
    learning: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """``menu.json``'s content with the memory part (module docstring), as JSON holds it;
    ``learning``: what learning applied to the forecasts (they are recorded as stated, so the
    next learning measures the source, not the correction)."""
    from clusterloom.capacity.write import plan_summary

    sc = problem.scenarios
    forecasts = []
    for p in plan.programs:
        for site, f in sorted(p.demand.items()):
            levels, values = f.quantile_table()
            forecasts.append(
                {
                    "program": p.name,
                    "source": program_source(p),
                    "site": site,
                    "levels": [float(v) for v in levels],
                    "periods": list(plan.periods),
                    "quantiles": [[float(v) for v in row] for row in values],
                }
            )
    q = np.percentile(sc.demand, [10, 50, 90], axis=0)  # [3, N, T]
    summary = {
        site: {
            "p10": [round(float(v), 3) for v in q[0, n]],
            "p50": [round(float(v), 3) for v in q[1, n]],
            "p90": [round(float(v), 3) for v in q[2, n]],
        }
        for n, site in enumerate(sc.sites)
    }
    context = plan_summary(plan, problem, menu)
    context["memory"] = {
        "schema": MEMORY_SCHEMA,
        "schema_version": 1,
        "plan": plan.model_dump(mode="json"),
        "plan_dir": str(plan_dir) if plan_dir is not None else None,
        "forecasts": forecasts,
        "scenario_demand": summary,
        "learning": learning,
    }
    result: dict[str, Any] = json.loads(json.dumps(context, sort_keys=True))
    return result


def plan_record(
    plan: PlanInput,
    problem: CapacityProblem,
    menu: MenuLike | None,
    *,
    plan_dir: Path | None = None,
    learning: dict[str, Any] | None = None,
) -> Decision:
    """The plan's decision with its context (module docstring); ``plan`` as stated (before
    any learning, which ``learning`` records)."""
    from clusterloom.capacity.write import plan_decision, plan_hash

    context = decision_context(plan, problem, menu, plan_dir=plan_dir, learning=learning)
    if menu is not None:
        base = plan_decision(plan, problem, menu)
        return Decision(proposal=base.proposal, context=context, chosen=base.chosen)
    proposal = f"capacity-plan/{plan.name}/{plan_hash(plan)[:16]}/seed-{problem.scenarios.seed}"
    return Decision(proposal=proposal, context=context, chosen="")


@dataclass(frozen=True)
class Realised:
    """What a decision cost against what happened."""

    periods: tuple[str, ...]  #: the periods priced (every forecast has an actual)
    cost_cents: float  #: the decision's first stage, recourse re-optimised on the actual
    hindsight_cents: float  #: the best plan had the actual been known
    first_stage: dict[str, Any]  #: what was held fixed (orders by site and part, tiers)
    notes: tuple[str, ...]

    @property
    def regret_cents(self) -> float:
        return self.cost_cents - self.hindsight_cents

    def to_dict(self) -> dict[str, Any]:
        return {
            "periods": list(self.periods),
            "cost_cents": round(self.cost_cents),
            "hindsight_cents": round(self.hindsight_cents),
            "regret_cents": round(self.regret_cents),
            "first_stage": self.first_stage,
            "notes": list(self.notes),
        }


def _memory(decision: Decision, where: str) -> dict[str, Any]:
    mem = decision.context.get("memory")
    if not isinstance(mem, dict) or mem.get("schema") != MEMORY_SCHEMA:
        raise SpecError(
            [
                Problem(
                    where,
                    "this decision has no capacity memory in its context (record it with "
                    "`clusterloom plan --store` or `--log`)",
                )
            ]
        )
    return mem


def _demand_actuals(actuals: Iterable[Actual]) -> dict[tuple[str, str], dict[str, float]]:
    out: dict[tuple[str, str], dict[str, float]] = {}
    for a in actuals:
        if a.quantity == "demand":
            out.setdefault((a.program, a.site), {})[a.period] = a.value
    return out


def _median_ready(d: Distribution, start: int) -> str:
    v = float(np.interp(0.5, d.levels, d.values()))
    q = round(v) if isinstance(d.quarters[0], str) else start + round(v)
    from clusterloom.capacity.input import quarter_label

    return quarter_label(q)


def actual_plan(plan: PlanInput, actuals: Sequence[Actual], sizes: Sequence[int]) -> PlanInput:
    """``plan`` with what happened as its one certain future, over the periods for which
    every forecast has an actual (module docstring's assumptions); ``sizes`` the curves' own
    sizes, so the same design points are used. ``SpecError`` when no period has actuals for
    every forecast."""
    demand = _demand_actuals(actuals)
    periods = plan.periods
    T = 0
    for label in periods:
        if all(label in demand.get((p.name, s), {}) for p in plan.programs for s in p.demand):
            T += 1
        else:
            break
    if T == 0:
        missing = sorted(
            f"{p.name}@{s}"
            for p in plan.programs
            for s in p.demand
            if periods[0] not in demand.get((p.name, s), {})
        )
        raise SpecError(
            [
                Problem(
                    "--actuals",
                    f"no demand actual for {periods[0]} (the decision's first period) of "
                    f"{', '.join(missing)}: nothing can be priced yet",
                )
            ]
        )
    start = quarter_index(plan.horizon.start)
    ready: dict[str, str] = {}
    for a in actuals:
        if (
            a.quantity == "ready"
            and a.value == 1
            and (a.site not in ready or quarter_index(a.period) < quarter_index(ready[a.site]))
        ):
            ready[a.site] = a.period
    data = plan.model_dump(mode="json")
    data["horizon"]["periods"] = T
    for prog in data["programs"]:
        for site in prog["demand"]:
            series = demand[(prog["name"], site)]
            rows = [[series[periods[t]]] for t in range(T)]
            for t in range(1, T):  # cumulative, as a forecast is
                rows[t][0] = max(rows[t][0], rows[t - 1][0])
            prog["demand"][site] = {"levels": [0.5], "accelerators": rows}
    for v in data["vendors"]:
        v["slip"]["probability"] = 0.0
    data["moves"]["probability"] = 0.0
    for part, given in zip(data["parts"], plan.parts, strict=True):
        sup = part["supplier"]
        lt = given.supplier.lead_time
        if isinstance(lt, Distribution):
            sup["lead_time"] = round(float(np.interp(0.5, lt.levels, lt.values())))
        for key in ("price_usd", "cap"):
            if isinstance(sup[key], list):
                sup[key] = sup[key][:T]
    for s_data, s in zip(data["sites"], plan.sites, strict=True):
        for b_data, b in zip(s_data["buildings"], s.buildings, strict=True):
            for h_data, h in zip(b_data["halls"], b.halls, strict=True):
                key = f"{s.name}/{h.name}"
                if key in ready:
                    h_data["ready"] = ready[key]
                elif s.name in ready:
                    h_data["ready"] = ready[s.name]
                elif isinstance(h.ready, Distribution):
                    h_data["ready"] = _median_ready(h.ready, start)
    data["curves"]["sizes"] = [int(k) for k in sizes if k > 0] or None
    return plan_from_dict(data)


def _menu_first_stage(
    context: dict[str, Any], problem: CapacityProblem
) -> tuple[dict[str, Any], list[str]]:
    """Orders (site -> part -> units), tiers (site -> choice) and reservations (site ->
    ``kW`` / ``positions`` -> amount) of the moves in the plan."""
    menu = context.get("menu") or {}
    orders: dict[str, dict[str, float]] = {}
    reserved: dict[str, dict[str, float]] = {}
    tiers: dict[str, str] = {}
    notes: list[str] = []
    choices = problem.curves.choices
    for m in menu.get("moves", []):
        if not m.get("in_plan"):
            continue
        if m["kind"] in ("order", "pre-build", "pre-pull") and m.get("part"):
            orders.setdefault(m["site"], {})[m["part"]] = float(m["quantity"])
        elif m["kind"] == "reserve" and m.get("part"):
            reserved.setdefault(m["site"], {})[m["part"]] = float(m["quantity"])
        elif m["kind"] == "tier":
            for c in choices:
                if m["name"] == f"build {m['site']} as {c}":
                    tiers[m["site"]] = c
        elif m["kind"] == "land-elsewhere":
            notes.append(
                f"{m['name']}: the menu records accelerators landed, not the share; the share "
                "is re-optimised on the actual"
            )
    out: dict[str, Any] = {"orders": orders, "tiers": tiers}
    if reserved:
        out["reservations"] = reserved
    return out, notes


def price_first_stage(
    problem: CapacityProblem, first_stage: dict[str, Any], *, integer_orders: bool = False
) -> tuple[float, float, list[str]]:
    """(cost with ``first_stage`` fixed, cost with it free) of a one-scenario ``problem``;
    with ``integer_orders`` the free plan (hindsight) orders in whole lots too, as the
    decision did."""
    from clusterloom.capacity.optimise import Options, build, solve

    model = build(problem, Options(risk_weight=0.0, integer_orders=integer_orders))
    cv = problem.curves
    site = {s: i for i, s in enumerate(cv.sites)}
    part = {p: i for i, p in enumerate(cv.parts)}
    notes: list[str] = []
    orders = first_stage.get("orders", {})
    bounds: dict[int, tuple[float, float]] = {}
    N, P = model.buy.shape
    for n in range(N):
        for p in range(P):
            q = float(orders.get(cv.sites[n], {}).get(cv.parts[p], 0.0))
            bounds[int(model.buy[n, p])] = (q, q)
    for s_name, by_part in orders.items():
        for p_name in by_part:
            if s_name not in site or p_name not in part:
                notes.append(f"order of {p_name} for {s_name}: no such site or part now")
    for s_name, c_name in first_stage.get("tiers", {}).items():
        if s_name in site and c_name in cv.choices:
            for (n, c), col in model.z.items():
                if n == site[s_name]:
                    v = 1.0 if cv.choices[c] == c_name else 0.0
                    bounds[col] = (v, v)
    # reservations: the menu's, every other at 0 (one not made)
    reserved = first_stage.get("reservations", {})
    for (n, q), col in model.reserve.items():
        amount = float(reserved.get(cv.sites[n], {}).get(("kW", "positions")[q], 0.0))
        bounds[col] = (amount, amount)
    greenfield = {n for n, _ in model.z}
    for n in sorted(greenfield):
        if cv.sites[n] not in first_stage.get("tiers", {}):
            notes.append(f"{cv.sites[n]}: no tier on the menu; chosen on the actual")
    held, _ = solve(model, bounds=bounds)
    free, _ = solve(model)
    return float(held.scenario_cents[0]), float(free.scenario_cents[0]), notes


def realised_cost(
    decision: Decision,
    actuals: Sequence[Actual],
    *,
    base: Path | None = None,
    cache: Path | None = None,
    curves: Curves | None = None,
) -> Realised:
    """The decision's first stage priced against ``actuals`` (module docstring). ``base``
    overrides the folder the plan was read from; ``cache`` is the curves' cache."""
    from clusterloom.capacity.curves import compute_curves
    from clusterloom.capacity.problem import build_problem
    from clusterloom.capacity.scenarios import sample_scenarios

    mem = _memory(decision, "DECISION")
    plan = PlanInput.model_validate(mem["plan"])
    folder = base or (Path(mem["plan_dir"]) if mem.get("plan_dir") else Path.cwd())
    sizes = decision.context.get("curves", {}).get("sizes", [])
    real = actual_plan(plan, actuals, sizes)
    cv = curves if curves is not None else compute_curves(real, base=folder, cache=cache)
    sc = sample_scenarios(real, 1, 0)
    problem = build_problem(real, cv, sc, base=folder)
    first, notes = _menu_first_stage(decision.context, problem)
    form = (decision.context.get("menu") or {}).get("formulation", {})
    whole = int(form.get("first_stage", {}).get("integer_orders", 0)) > 0
    cost, hindsight, more = price_first_stage(problem, first, integer_orders=whole)
    return Realised(real.periods, cost, hindsight, first, tuple(notes + more))


def outcome_record(
    decision: Decision,
    actuals: Sequence[Actual],
    realised: Realised | None,
    *,
    reason: str = "",
) -> Decision:
    """The decision again, on the same proposal, with its outcome: the actuals and the
    realised cost (None with the ``reason`` it could not be priced)."""
    doc = {
        "schema": OUTCOME_SCHEMA,
        "schema_version": 1,
        "actuals": [a.as_list() for a in sorted(actuals)],
        "realised": realised.to_dict() if realised is not None else None,
        "not_priced": "" if realised is not None else reason,
    }
    return Decision(
        proposal=decision.proposal,
        context=decision.context,
        chosen=decision.chosen,
        outcome=json.dumps(doc, sort_keys=True, separators=(",", ":")),
    )


def outcome_of(decision: Decision) -> dict[str, Any] | None:
    """The outcome document of a decision (None: no outcome yet)."""
    if not decision.outcome:
        return None
    try:
        doc = json.loads(decision.outcome)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) and doc.get("schema") == OUTCOME_SCHEMA else None


def read_decisions(
    *, log: Path | None = None, store: Store | None = None
) -> list[tuple[str, Decision]]:
    """(id, decision) of every decision in the log or the store, in the order recorded."""
    out: list[tuple[str, Decision]] = []
    if log is not None:
        if not log.exists():
            raise SpecError([Problem(str(log), "no such log")])
        try:
            records = read_records(log)
        except (ValueError, TypeError, KeyError) as exc:
            raise SpecError([Problem(str(log), f"not a change log ({exc})")]) from exc
        out += [(record_id(r), r) for r in records if isinstance(r, Decision)]
    if store is not None:
        for row in store.records(kind="decision"):
            rec = from_json(json.dumps(row["record"]))
            if isinstance(rec, Decision):
                out.append((str(row["id"]), rec))
    return out


def record_decision(rec: Decision, *, log: Path | None = None, store: Store | None = None) -> str:
    """Keep ``rec`` in the store or else the log; its id."""
    if store is not None:
        return store.record(rec)
    if log is None:
        raise SpecError([Problem("--log", "give a log file or --store")])
    append_record(log, rec)
    return record_id(rec)


def latest(decisions: Iterable[tuple[str, Decision]]) -> dict[str, tuple[str, Decision]]:
    """Proposal -> its latest (id, decision): its outcome once one is recorded."""
    out: dict[str, tuple[str, Decision]] = {}
    for rid, d in decisions:
        out[d.proposal] = (rid, d)
    return out


def find_decision(decisions: Sequence[tuple[str, Decision]], ref: str) -> tuple[str, Decision]:
    """The latest decision on the proposal ``ref`` names: a record id (or a prefix of one, at
    least 6 characters) or the proposal itself."""
    matches = {
        d.proposal
        for rid, d in decisions
        if d.proposal == ref or rid == ref or (len(ref) >= 6 and rid.startswith(ref))
    }
    if not matches:
        raise SpecError([Problem("DECISION", f"no decision {ref!r} in memory")])
    if len(matches) > 1:
        raise SpecError(
            [Problem("DECISION", f"{ref!r} names {len(matches)} proposals; give more of the id")]
        )
    return latest(decisions)[matches.pop()]


def observations(
    decisions: Iterable[tuple[str, Decision]], *, known_before: str | None = None
) -> tuple[list[Observation], int]:
    """The forecast-against-actual observations of every proposal's latest decision that has
    an outcome (``learn``'s input) and how many decisions gave some. ``known_before``: only
    actuals of periods before that quarter (a backtest's point in time)."""
    cut = quarter_index(known_before) if known_before is not None else math.inf
    obs: list[Observation] = []
    used = 0
    for _proposal, (_rid, d) in sorted(latest(decisions).items()):
        doc = outcome_of(d)
        mem = d.context.get("memory")
        if doc is None or not isinstance(mem, dict):
            continue
        actual: dict[tuple[str, str], dict[str, float]] = {}
        for quantity, site, program, period, value, *_delivery in doc.get("actuals", []):
            if quantity == "demand" and quarter_index(period) < cut:
                actual.setdefault((program, site), {})[period] = float(value)
        before = len(obs)
        for f in mem.get("forecasts", []):
            obs += forecast_observations(
                f["source"],
                f["program"],
                f["site"],
                f["levels"],
                f["quantiles"],
                f["periods"],
                actual.get((f["program"], f["site"]), {}),
                forecast=f"{d.proposal}/{f['program']}@{f['site']}",
            )
        used += len(obs) > before
    return obs, used


def learn_from_records(
    decisions: Iterable[tuple[str, Decision]],
    *,
    prior: Prior | None = None,
    known_before: str | None = None,
) -> Learned:
    """``learn`` over the observations of the decisions in memory: forecasts against demand,
    and the lead-time and readiness slips (``slip_observations``)."""
    from dataclasses import replace

    decisions = list(decisions)
    obs, used = observations(decisions, known_before=known_before)
    slips = slip_observations(decisions, known_before=known_before)
    return replace(learn(obs, prior, slips), decisions=used)


def _median(d: Distribution) -> float:
    return float(np.interp(0.5, d.levels, d.values()))


def slip_observations(
    decisions: Iterable[tuple[str, Decision]], *, known_before: str | None = None
) -> list[SlipObservation]:
    """The lead-time slips (every ``delivered`` actual of a part the decision's plan quotes,
    once however many outcomes list it, arrived before ``known_before``) and readiness slips
    (every hall of the decision's plan with a stated ready date and a ``ready`` actual of 1
    before ``known_before``) of every proposal's latest decision with an outcome
    (``learn``'s module docstring)."""
    cut = quarter_index(known_before) if known_before is not None else math.inf
    out: list[SlipObservation] = []
    orders: set[tuple[str, str, str, str, float]] = set()
    for _proposal, (_rid, d) in sorted(latest(decisions).items()):
        doc = outcome_of(d)
        mem = d.context.get("memory")
        if doc is None or not isinstance(mem, dict) or not isinstance(mem.get("plan"), dict):
            continue
        plan = PlanInput.model_validate(mem["plan"])
        quoted: dict[str, tuple[str, float]] = {}
        for part in plan.parts:
            lt = part.supplier.lead_time
            quoted[part.id] = (
                part.supplier.vendor,
                _median(lt) if isinstance(lt, Distribution) else float(lt),
            )
        ready: dict[str, int] = {}
        for row in doc.get("actuals", []):
            quantity, site, _program, period, value = row[:5]
            if quantity == "delivered" and len(row) == 7:
                part_id, delivered = str(row[5]), str(row[6])
                key = (site, part_id, period, delivered, float(value))
                if part_id not in quoted or quarter_index(delivered) >= cut or key in orders:
                    continue
                orders.add(key)
                vendor, lead = quoted[part_id]
                out.append(
                    SlipObservation(
                        "lead",
                        f"{vendor}/{part_id}",
                        quarter_index(delivered) - quarter_index(period) - lead,
                        cluster=f"{vendor}@{period}",
                    )
                )
            elif quantity == "ready" and float(value) >= 1 and quarter_index(period) < cut:
                q = quarter_index(period)
                ready[site] = min(q, ready.get(site, q))
        start = quarter_index(plan.horizon.start)
        for site_in in plan.sites:
            for b in site_in.buildings:
                for h in b.halls:
                    hall = f"{site_in.name}/{h.name}"
                    got = ready.get(hall, ready.get(site_in.name))
                    if h.ready is None or got is None:
                        continue
                    if isinstance(h.ready, Distribution):
                        off = start if not isinstance(h.ready.quarters[0], str) else 0
                        stated = off + _median(h.ready)
                    else:
                        stated = float(quarter_index(h.ready))
                    out.append(SlipObservation("ready", site_in.name, got - stated, cluster=hall))
    return out
