"""``clusterloom plan PLAN.yaml``: capacity planning under wrong forecasts
(``clusterloom.capacity``): the plan's curves from the design stages, seeded scenarios, the
problem and the ranked menu of moves; a terminal summary, ``--json`` the menu, ``-o DIR``
writes ``plan.html``, ``menu.json``, ``scenarios.parquet`` and ``lead_times.parquet`` as one
run; ``--store`` / ``--log FILE`` record the decision (``capacity.memory``), ``--learn-from
LOG|store`` corrects the forecasts by the outcomes recorded (``capacity.learn``). The
``capacity`` group's commands live in ``cli/capacity_*.py``. Exit 0; 2 bad input, naming the
field."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from clusterloom.cli.store import StoreUrlOpt

if TYPE_CHECKING:
    from clusterloom.capacity.run import PlanRun


def _usd(value_cents: float) -> str:
    return f"${value_cents / 100:,.0f}"


def _say(out: Console, run: PlanRun) -> None:
    import numpy as np

    sc = run.problem.scenarios
    table = Table(title=f"{run.plan.name}: demand by {sc.periods[-1]}", box=box.SIMPLE_HEAD)
    table.add_column("site")
    for heading in ("p10", "median", "p90", "IT kW (median)", "positions (median)"):
        table.add_column(heading, justify="right")
    for n, site in enumerate(sc.sites):
        d = sc.demand[:, n, -1]
        table.add_row(
            site,
            *(f"{v:,.0f}" for v in np.percentile(d, [10, 50, 90])),
            f"{np.median(sc.power_kw[:, n, -1]):,.0f}",
            f"{np.median(sc.positions[:, n, -1]):,.0f}",
        )
    out.print(table)
    menu = run.menu
    if menu is not None:
        moves = Table(title="menu of moves (best first)", box=box.SIMPLE_HEAD)
        for heading, right in (
            ("#", True),
            ("move", False),
            ("expected", True),
            ("CVaR", True),
            ("option", True),
        ):
            moves.add_column(heading, justify="right" if right else "left")
        for i, m in enumerate(menu.moves[:12]):
            moves.add_row(
                str(i + 1),
                m.name,
                _usd(m.expected_cost_cents),
                _usd(m.cvar_cents),
                _usd(m.option_value_cents),
            )
        moves.caption = (
            f"expected cost {_usd(menu.expected_cost_cents)}, CVaR {_usd(menu.cvar_cents)}"
        )
        out.print(moves)
    if run.learning is not None:
        learned = Table(title="learning from outcomes (per source)", box=box.SIMPLE_HEAD)
        for heading in ("source", "outcomes", "ln(actual/median)", "spread/stated", "applied"):
            learned.add_column(heading, justify="left" if heading == "source" else "right")
        for name, s in sorted(run.learning["sources"].items()):
            factors = " ".join(f"x{np.exp(lb['applied']):.2f}" for lb in s["by_lead"])
            learned.add_row(
                name,
                str(s["outcomes"]),
                f"{s['mean_log_ratio']:+.3f}",
                f"{s['spread_ratio']:.2f}",
                f"{factors} spread x{s['spread']:.2f}",
            )
        out.print(learned)
        for line in run.learning["statements"]:
            out.print(line, markup=False)
    took = ", ".join(f"{name} {s:.2f} s" for name, s in run.timings_s)
    out.print(f"{len(sc.shocks):,} scenarios, seed {sc.seed}; {took}", markup=False)


def register(app: typer.Typer, guard: Callable[[Callable[[], Any]], Any], out: Console) -> None:
    """Add ``plan`` and the ``capacity`` group (reconciliation, triage, decision memory) to
    ``app``; each part of the group lives in a module of its own (``cli/capacity_*.py``),
    added below with one line each."""
    group = typer.Typer(
        help="Capacity planning's other tools: reconcile sources, triage signals, record "
        "outcomes and learn from them (docs/capacity.md)."
    )
    app.add_typer(group, name="capacity")
    # one line per part: ``capacity_X.register(group, guard, out)``
    from clusterloom.cli import capacity_reconcile

    capacity_reconcile.register(group, guard, out)
    from clusterloom.cli import capacity_learn

    capacity_learn.register(group, guard, out)

    @app.command("plan")
    def plan_command(
        plan: Annotated[Path, typer.Argument(help="the plan (YAML; docs/capacity.md)")],
        output: Annotated[
            str | None, typer.Option("--output", "-o", help="write the run into this directory")
        ] = None,
        scenarios: Annotated[
            int, typer.Option("--scenarios", "-n", help="Monte Carlo scenarios")
        ] = 500,
        seed: Annotated[int, typer.Option("--seed", help="seed of the scenarios")] = 0,
        risk_alpha: Annotated[
            float, typer.Option("--risk-alpha", help="CVaR level of the tail cost")
        ] = 0.9,
        no_menu: Annotated[
            bool, typer.Option("--no-menu", help="scenarios and the page only, no optimisation")
        ] = False,
        no_cache: Annotated[
            bool, typer.Option("--no-cache", help="design every curve point again")
        ] = False,
        as_json: Annotated[bool, typer.Option("--json", help="print menu.json")] = False,
        force: Annotated[
            bool, typer.Option("--force", help="move foreign files in -o aside")
        ] = False,
        record: Annotated[
            bool,
            typer.Option(
                "--store", help="record the menu in the design store as a decision's context"
            ),
        ] = False,
        store_url: StoreUrlOpt = None,
        log: Annotated[
            Path | None,
            typer.Option("--log", help="record the decision in this JSON-lines log instead"),
        ] = None,
        learn_from: Annotated[
            str | None,
            typer.Option(
                "--learn-from",
                help="correct the forecasts by the outcomes in this JSON-lines decision log, "
                "or 'store' for the design store (--store-url)",
            ),
        ] = None,
    ) -> None:
        """Plan capacity under wrong forecasts: scenarios, the roofline and a ranked, costed
        menu of moves with their reasons (docs/capacity.md)."""

        def run() -> None:
            from clusterloom.capacity.run import run_plan
            from clusterloom.capacity.write import plan_hash, plan_summary, write_plan
            from clusterloom.errors import Problem, SpecError

            if not 0.0 < risk_alpha < 1.0:
                raise SpecError([Problem("--risk-alpha", "a level strictly between 0 and 1")])
            store = None
            learn_store = learn_from == "store"
            if record or store_url is not None:
                if not record and not learn_store:
                    raise SpecError([Problem("--store-url", "give --store too, to record")])
                if record and no_menu:
                    raise SpecError([Problem("--store", "records the menu; drop --no-menu")])
            if log is not None and no_menu:
                raise SpecError([Problem("--log", "records the menu; drop --no-menu")])
            if record and log is not None:
                raise SpecError([Problem("--log", "record in the store or in a log, not both")])
            if (record or learn_store) and store is None:
                from clusterloom.store import open_store

                store = open_store(store_url)  # opened (and so checked) before any work
            learned = None
            if learn_from is not None:
                from clusterloom.capacity.memory import learn_from_records, read_decisions

                history = (
                    read_decisions(store=store)
                    if learn_store
                    else read_decisions(log=Path(learn_from))
                )
                learned = learn_from_records(history)
            result = run_plan(
                plan,
                scenarios=scenarios,
                seed=seed,
                solve=not no_menu,
                risk_alpha=risk_alpha,
                use_cache=not no_cache,
                learned=learned,
            )
            if output is not None:
                from clusterloom._version import __version__
                from clusterloom.export.outdir import output_run, relative

                with output_run(
                    output, spec_hash=plan_hash(result.plan), version=__version__, force=force
                ) as target:
                    paths = write_plan(
                        target.staging, result.plan, result.problem, result.menu, result.learning
                    )
                    names = relative(paths, target)
                if not as_json:
                    out.print(f"wrote {len(names)} files to {output}/: " + ", ".join(names))
            if record or log is not None:
                from clusterloom.capacity.memory import plan_record, record_decision

                rec = plan_record(
                    result.stated or result.plan,
                    result.problem,
                    result.menu,
                    plan_dir=plan.resolve().parent,
                    learning=result.learning,
                )
                rec_id = record_decision(rec, log=log, store=store if record else None)
                if not as_json:
                    where = "the store" if record else str(log)
                    out.print(f"recorded the menu in {where} as decision {rec_id}", markup=False)
            if as_json:
                doc = plan_summary(result.plan, result.problem, result.menu)
                if result.learning is not None:
                    doc["learning"] = result.learning
                sys.stdout.write(json.dumps(doc, indent=2, sort_keys=True) + "\n")
            else:
                _say(out, result)

        guard(run)
