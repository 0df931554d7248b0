"""``clusterloom capacity reconcile``, ``capacity triage`` and ``capacity signals``
(``clusterloom.capacity.reconcile`` and ``.triage``, docs/capacity.md). Exit 0; 2 bad input,
one line per problem naming the field or line."""

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


def register(group: typer.Typer, guard: Callable[[Callable[[], Any]], Any], out: Console) -> None:
    """Add ``reconcile``, ``triage`` and ``signals`` to the ``capacity`` group."""

    @group.command("reconcile")
    def reconcile_command(
        sources: Annotated[Path, typer.Argument(help="the sources file (YAML; docs/capacity.md)")],
        output: Annotated[
            str, typer.Option("--output", "-o", help="write the reconciled run here")
        ],
        actuals: Annotated[
            Path | None, typer.Option("--actuals", help="what happened (CSV), to grade trust")
        ] = None,
        plan: Annotated[
            Path | None, typer.Option("--plan", help="a plan to enrich (else sites and programs)")
        ] = None,
        force: Annotated[
            bool, typer.Option("--force", help="move foreign files in -o aside")
        ] = False,
    ) -> None:
        """Map sources that disagree on definitions to the plan's one model, with provenance
        per field, trust graded from history and the conflicts that remain."""

        def run() -> None:
            import hashlib

            from clusterloom._version import __version__
            from clusterloom.capacity.actuals import read_actuals
            from clusterloom.capacity.input import load_plan
            from clusterloom.capacity.reconcile import reconcile, write_reconciled
            from clusterloom.capacity.sources import load_sources
            from clusterloom.export.outdir import output_run, relative

            doc = load_sources(sources)
            history = read_actuals(actuals) if actuals is not None else None
            base = load_plan(plan) if plan is not None else None
            result = reconcile(doc, actuals=history, plan=base)
            text = result.document()
            with output_run(
                output,
                spec_hash=hashlib.sha256(text.encode()).hexdigest(),
                version=__version__,
                force=force,
            ) as target:
                names = relative(write_reconciled(target.staging, result), target)
            trust = Table(
                title="trust per source and field (graded from history)", box=box.SIMPLE_HEAD
            )
            for heading in (
                "source",
                "field",
                "checked",
                "agreed",
                "mean error",
                "trust",
                "by site",
            ):
                trust.add_column(
                    heading,
                    justify="left" if heading in ("source", "field", "by site") else "right",
                )
            for t in result.trust:
                trust.add_row(
                    t.source,
                    t.kind,
                    str(t.checked),
                    str(t.agreed),
                    "-"
                    if t.mean_error is None
                    else f"{t.mean_error:.1%}"
                    if t.kind != "ready"
                    else f"{t.mean_error:g} q",
                    f"{t.score:.2f}",
                    " ".join(f"{site} {g:.2f}" for site, _, _, g in t.sites),
                )
            out.print(trust)
            if result.conflicts:
                out.print("conflicts that remain:", markup=False)
                for c in result.conflicts:
                    claims = "; ".join(
                        f"{x.source} {x.original} (trust {x.trust:.2f})" for x in c.claims
                    )
                    out.print(f"  {c.field}: {claims}", markup=False)
                    out.print(f"    {c.settle}", markup=False)
            else:
                out.print("no conflicts remain between trusted sources")
            what = "plan" if base is not None else "sites and programs"
            out.print(
                f"wrote the reconciled {what} and {len(names) - 1} reports to {output}/: "
                + ", ".join(names),
                markup=False,
            )

        guard(run)

    @group.command("triage")
    def triage_command(
        plan: Annotated[Path, typer.Argument(help="the plan (YAML)")],
        signals: Annotated[Path, typer.Argument(help="the signal stream (CSV or JSON lines)")],
        top: Annotated[int, typer.Option("--top", help="signals shown and re-solved")] = 10,
        scenarios: Annotated[
            int, typer.Option("--scenarios", "-n", help="scenarios of each re-solve")
        ] = 8,
        seed: Annotated[int, typer.Option("--seed", help="seed of the scenarios")] = 0,
        as_json: Annotated[bool, typer.Option("--json", help="print the ranking as JSON")] = False,
    ) -> None:
        """Score a stream of signals for novelty against the plan; the handful that change a
        decision first, each with the decision it would change."""

        def run() -> None:
            from clusterloom.capacity.curves import compute_curves, default_cache
            from clusterloom.capacity.input import load_plan
            from clusterloom.capacity.triage import read_signals, triage
            from clusterloom.errors import Problem, SpecError

            if not 1 <= top <= 1000:
                raise SpecError([Problem("--top", "give 1 to 1,000")])
            if not 1 <= scenarios <= 200:
                raise SpecError([Problem("--scenarios", "give 1 to 200 (each re-solve is one LP)")])
            p = load_plan(plan)
            stream = read_signals(signals, p)
            base = plan.resolve().parent
            curves = compute_curves(p, base=base, cache=default_cache())
            result = triage(
                p, stream, curves=curves, base=base, solve=top, scenarios=scenarios, seed=seed
            )
            if as_json:
                sys.stdout.write(json.dumps(result.to_dict(), indent=2, sort_keys=True) + "\n")
                return
            for i, t in enumerate(result.ranked[:top]):
                s = t.signal
                when = f" by {s.period}" if s.period else ""
                flag = ", novel" if t.novel else ""
                out.print(
                    f"{i + 1}. line {s.line}: {s.kind} {s.target} {s.value} {s.unit}{when}"
                    f" (from {s.source or '-'}, {s.time})",
                    markup=False,
                )
                out.print(
                    f"   p {t.p:.2g}{flag}: {t.quantity}, plan median {t.plan_median:g}",
                    markup=False,
                )
                if not t.solved:
                    out.print("   not re-solved", markup=False)
                elif not t.changes:
                    out.print("   changes no decision", markup=False)
                else:
                    out.print(
                        f"   changes {len(t.changes)} decision(s), the plan's cost "
                        f"{t.cost_change_cents / 100:+,.0f} USD:",
                        markup=False,
                    )
                    for c in t.changes:
                        out.print(f"     {c.move}: {c.before:g} -> {c.after:g}", markup=False)
            novel = sum(1 for t in result.ranked if t.novel)
            moving = sum(1 for t in result.ranked if t.novel and t.changes_decision)
            out.print(
                f"{novel} novel (p < {result.alpha:g}), {moving} of them change a decision; "
                f"re-solved on {scenarios} scenarios, seed {seed}",
                markup=False,
            )

        guard(run)

    @group.command("signals")
    def signals_command(
        plan: Annotated[Path, typer.Argument(help="the plan (YAML)")],
        output: Annotated[Path, typer.Option("--output", "-o", help="the stream (CSV) to write")],
        count: Annotated[int, typer.Option("--count", "-n", help="signals")] = 200,
        novel: Annotated[float, typer.Option("--novel", help="share of truly novel ones")] = 0.05,
        seed: Annotated[int, typer.Option("--seed", help="seed of the stream")] = 0,
    ) -> None:
        """Write a labelled synthetic signal stream for a plan (its ``label`` column says
        which signals are truly novel)."""

        def run() -> None:
            from clusterloom.atomic import atomic_write
            from clusterloom.capacity.input import load_plan
            from clusterloom.capacity.triage import signals_text, synthetic_stream
            from clusterloom.errors import Problem, SpecError

            if not 0.0 <= novel <= 1.0:
                raise SpecError([Problem("--novel", "a share between 0 and 1")])
            stream = synthetic_stream(load_plan(plan), n=count, novel=novel, seed=seed)
            atomic_write(output, signals_text(stream))
            n_novel = sum(1 for s in stream if s.label == "novel")
            out.print(f"wrote {len(stream)} signals ({n_novel} novel) to {output}", markup=False)

        guard(run)
