"""``clusterloom capacity outcome`` and ``clusterloom capacity backtest``: decision memory and
learning (``clusterloom.capacity.memory``, ``learn``, ``backtest``; docs/capacity.md).
``outcome`` records what happened to a recorded decision and what it cost; ``backtest`` runs
the synthetic history and prints the planners' realised costs and the learned bias. Exit 0;
2 bad input, naming the field."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from clusterloom.cli.store import StoreUrlOpt


def _usd(cents: float) -> str:
    return f"${cents / 100:,.0f}"


def register(group: typer.Typer, guard: Callable[[Callable[[], Any]], Any], out: Console) -> None:
    """Add ``outcome`` and ``backtest`` to the ``capacity`` group."""

    @group.command("outcome")
    def outcome_command(
        decision: Annotated[
            str,
            typer.Argument(help="the decision: its record id (or 6+ characters of it) or proposal"),
        ],
        actuals: Annotated[
            Path,
            typer.Option(
                "--actuals",
                help="what happened (CSV: quantity,site,program,period,value[,part,delivered])",
            ),
        ],
        record: Annotated[
            bool, typer.Option("--store", help="the decision is in the design store; record there")
        ] = False,
        store_url: StoreUrlOpt = None,
        log: Annotated[
            Path | None, typer.Option("--log", help="the decision is in this JSON-lines log")
        ] = None,
        base: Annotated[
            Path | None,
            typer.Option("--base", help="the plan's folder (default: where it was read from)"),
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print the outcome as JSON")] = False,
    ) -> None:
        """Record a decision's realised outcome: the actuals and the realised cost of its
        first-stage moves against the actual demand (docs/capacity.md)."""

        def run() -> None:
            from clusterloom.capacity.actuals import read_actuals
            from clusterloom.capacity.curves import default_cache
            from clusterloom.capacity.memory import (
                find_decision,
                outcome_record,
                read_decisions,
                realised_cost,
                record_decision,
            )
            from clusterloom.errors import Problem, SpecError

            if store_url is not None and not record:
                raise SpecError([Problem("--store-url", "give --store too")])
            if record == (log is not None):
                raise SpecError([Problem("--log", "give the decision's log or --store, one")])
            store = None
            if record:
                from clusterloom.store import open_store

                store = open_store(store_url)
            rows = read_actuals(actuals)
            decisions = read_decisions(log=log, store=store)
            _rid, found = find_decision(decisions, decision)
            realised, reason = None, ""
            try:
                realised = realised_cost(found, rows, base=base, cache=default_cache())
            except SpecError as exc:
                if not all(p.where == "--actuals" for p in exc.problems):
                    raise
                reason = "; ".join(p.message for p in exc.problems)
            rec = outcome_record(found, rows, realised, reason=reason)
            rec_id = record_decision(rec, log=log, store=store)
            if as_json:
                doc = json.loads(rec.outcome)
                doc["id"] = rec_id
                doc["proposal"] = rec.proposal
                sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
                return
            out.print(f"recorded the outcome of {rec.proposal} as decision {rec_id}", markup=False)
            out.print(f"{len(rows):,} actuals from {actuals}", markup=False)
            if realised is None:
                out.print(f"not priced: {reason}", markup=False)
                return
            table = Table(title="realised cost", box=box.SIMPLE_HEAD)
            for heading in ("periods", "decision", "hindsight", "regret"):
                table.add_column(heading, justify="left" if heading == "periods" else "right")
            table.add_row(
                f"{realised.periods[0]}-{realised.periods[-1]}",
                _usd(realised.cost_cents),
                _usd(realised.hindsight_cents),
                _usd(realised.regret_cents),
            )
            out.print(table)
            for note in realised.notes:
                out.print(f"note: {note}", markup=False)

        guard(run)

    @group.command("backtest")
    def backtest_command(
        quarters: Annotated[int, typer.Option("--quarters", help="quarters of history")] = 12,
        seed: Annotated[int, typer.Option("--seed", help="seed of the history")] = 0,
        horizon: Annotated[int, typer.Option("--horizon", help="quarters each plan covers")] = 4,
        scenarios: Annotated[
            int, typer.Option("--scenarios", help="scenarios of the stochastic planners")
        ] = 16,
        risk_weight: Annotated[
            float, typer.Option("--risk-weight", help="weight of the CVaR in their objective")
        ] = 0.0,
        lead_slip: Annotated[
            float,
            typer.Option(
                "--lead-slip",
                help="mean quarters nvidia's switch deliveries slip (0: no lead-time case)",
            ),
        ] = 0.0,
        as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
    ) -> None:
        """Backtest learning on a seeded synthetic history of biased, noisy forecasts:
        median, p90, stochastic and learning planners priced against the truth."""

        def run() -> None:
            from clusterloom.capacity.backtest import run_backtest
            from clusterloom.capacity.curves import default_cache

            bt = run_backtest(
                quarters,
                seed,
                horizon=horizon,
                scenarios=scenarios,
                risk_weight=risk_weight,
                cache=default_cache(),
                lead_slip=lead_slip,
            )
            if as_json:
                sys.stdout.write(json.dumps(bt.to_dict(), indent=2, sort_keys=True) + "\n")
                return
            _say_backtest(out, bt)

        guard(run)


def _say_backtest(out: Console, bt: Any) -> None:
    hind = float(bt.hindsight_cents[:, 0].sum())
    table = Table(
        title=f"backtest: {bt.history.quarters} quarters, seed {bt.history.seed}",
        box=box.SIMPLE_HEAD,
    )
    for heading in ("planner", "realised cost", "regret", "vs learning"):
        table.add_column(heading, justify="left" if heading == "planner" else "right")
    learning = bt.total("learning")
    for p in bt.planners:
        table.add_row(
            p, _usd(bt.total(p)), _usd(bt.total(p) - hind), f"{bt.total(p) / learning - 1:+.1%}"
        )
    table.caption = f"hindsight (perfect information) {_usd(hind)}"
    out.print(table)
    bias = Table(title="learned bias, ln(actual/median)", box=box.SIMPLE_HEAD)
    for heading in ("source", "generated", "quarter 1", "middle", "last", "error first->last"):
        bias.add_column(heading, justify="left" if heading == "source" else "right")
    Q = bt.history.quarters
    for s in bt.history.sources:
        b = bt.learned_bias[s.name]
        err = bt.bias_error(s.name)
        first = 1 if Q > 1 else 0
        bias.add_row(
            s.name,
            f"{s.generated_bias:+.3f}",
            f"{b[first]:+.3f}",
            f"{b[Q // 2]:+.3f}",
            f"{b[-1]:+.3f}",
            f"{err[first]:.3f} -> {err[-1]:.3f}",
        )
    out.print(bias)
    for s in bt.final.sources.values():
        out.print(s.statement(), markup=False)
    if bt.lead_slip > 0:
        key = bt.to_dict()["lead_time"]["slipped"]
        got = bt.learned_slip.get(key)
        last = float(got[-1]) if got is not None and len(got) else 0.0
        out.print(
            f"lead-time case: {key} generated slip {bt.lead_slip:g} quarters (drawn mean "
            f"{float(bt.slip_drawn.mean()):.2f}); learned before the last quarter {last:+.2f}",
            markup=False,
        )
        for sl in bt.final.slips.values():
            if sl.kind == "lead":
                out.print(sl.statement(), markup=False)
