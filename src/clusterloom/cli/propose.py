"""``clusterloom propose GOAL.yaml``: the designs that meet a goal (``assist.propose``), as a
table of the Pareto front and of the reasons the others lost; ``--json`` the result itself;
``-o DIR`` writes ``proposals.json`` and each front member's spec (``--designs``: its design
files too); ``--store`` records each front member's design and a ``Proposal``. Exit 0 (also
when no candidate meets the goal: a finding says why); 2 for a malformed goal."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from clusterloom.cli.store import StoreUrlOpt

if TYPE_CHECKING:
    from clusterloom.assist.goal import Goal
    from clusterloom.assist.propose import ProposeResult
    from clusterloom.store import Store

#: the losing reasons shown per constraint
SHOWN_PER_REASON = 1


def _goal(path: Path | None, example: str | None) -> Goal:
    from clusterloom.assist.goal import example_goal_text, load_goal, parse_goal
    from clusterloom.errors import Problem, SpecError

    if (path is None) == (example is None):
        raise SpecError([Problem("GOAL", "give a goal file or --example NAME (one of the two)")])
    if example is not None:
        return parse_goal(example_goal_text(example), source=f"example goal {example}")
    assert path is not None
    return load_goal(path)


def _front_table(result: ProposeResult) -> Table:
    from clusterloom.assist.propose import choice_text

    job = result.goal.job is not None
    table = Table(title=f"Pareto front of goal {result.goal.name}", box=box.SIMPLE_HEAD)
    table.add_column("id", no_wrap=True)
    table.add_column("design", ratio=3, overflow="fold")
    for heading in ("cost $", "power kW", "p99 FCT us", "kept", *(["step s"] if job else [])):
        table.add_column(heading, justify="right", no_wrap=True)
    for c in result.front:
        m = c.metrics
        row = [
            c.id,
            choice_text(c.choice),
            f"{m.cost_cents / 100:,.0f}",
            f"{m.power_mw / 1e6:,.1f}",
            "-" if m.fct_p99_ps is None else f"{m.fct_p99_ps / 1e6:,.1f}",
            f"{m.failure_kept:.1%}",
        ]
        if job:
            row.append("-" if m.step_time_ps is None else f"{m.step_time_ps / 1e12:,.3f}")
        table.add_row(*row)
    return table


def _losers_table(result: ProposeResult) -> Table:
    """One row per tier and constraint: how many lost on it and the nearest one's reason."""
    groups: dict[tuple[str, str], list[Any]] = {}
    for r in result.rejected:
        groups.setdefault((r.tier, r.constraint), []).append(r)
    table = Table(title="why the others lost", box=box.SIMPLE_HEAD)
    table.add_column("tier", no_wrap=True)
    table.add_column("constraint", no_wrap=True)
    table.add_column("lost", justify="right")
    table.add_column("nearest (by how much)", ratio=3, overflow="fold")
    for (tier, constraint), lost in groups.items():
        nearest = min(lost, key=lambda r: (r.excess, r.id))
        table.add_row(tier, constraint, f"{len(lost):,}", f"{nearest.id}: {nearest.detail}")
    return table


def _say(out: Console, result: ProposeResult) -> None:
    if result.front:
        out.print(_front_table(result))
    if result.rejected:
        out.print(_losers_table(result))
    for f in result.findings:
        out.print(f"{f.severity}: {f.code} {f.where}: {f.message}", markup=False, soft_wrap=True)
    tiers = ", ".join(f"{k} {v:,}" for k, v in result.tiers.items())
    out.print(f"candidates evaluated per tier: {tiers}", markup=False)


def _write(result: ProposeResult, staging: Path, designs: bool) -> list[Path]:
    """``proposals.json``, ``specs/ID.yaml`` per front member, and with ``designs`` each
    member's design files under ``designs/ID/`` (``write.write_design``)."""
    import yaml

    from clusterloom.atomic import atomic_write

    paths = [atomic_write(staging / "proposals.json", result.to_json())]
    for c in result.front:
        text = yaml.safe_dump(c.spec.model_dump(mode="json", exclude_none=True), sort_keys=False)
        paths.append(atomic_write(staging / "specs" / f"{c.id}.yaml", text))
    if designs:
        from clusterloom.write import write_design

        for c, d in zip(result.front, result.designs, strict=True):
            paths += write_design(d, staging / "designs" / c.id)
    return paths


def _record(out: Console, store: Store, result: ProposeResult, dirs: dict[str, Path]) -> None:
    """Each front member's design and its proposal (superseding the previous run's)."""
    from clusterloom.assist.propose_records import previous_run, proposal_id, proposals_of

    records = store.records(kind="proposal")
    run_id = result.run_id()
    known = {str(r["id"]) for r in records}
    if result.front and proposal_id(result.goal.name, run_id, result.front[0].id) in known:
        out.print(f"this run's proposals are recorded already in {store.url}", soft_wrap=True)
        return
    previous = previous_run(records, result.goal.name, run_id)
    proposals = proposals_of(result, previous)
    for c, d, p in zip(result.front, result.designs, proposals, strict=True):
        rec = store.record_design(d, dirs[c.id])
        store.record(p, design_id=rec.id)
        replaced = f", superseding {p.supersedes}" if p.supersedes else ""
        out.print(f"recorded {rec.ref} and proposal {p.id}{replaced}", soft_wrap=True)


def register(app: typer.Typer, guard: Callable[[Callable[[], Any]], Any], out: Console) -> None:
    """Add ``propose`` to ``app``."""

    @app.command("propose")
    def propose_command(
        goal_path: Annotated[
            Path | None, typer.Argument(help="the goal (YAML; docs/assist.md)", show_default=False)
        ] = None,
        example: Annotated[
            str | None, typer.Option("--example", "-e", help="a built-in example goal by name")
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print the result as JSON")] = False,
        output: Annotated[
            str | None,
            typer.Option("--output", "-o", help="write proposals.json and the front's specs here"),
        ] = None,
        designs: Annotated[
            bool,
            typer.Option("--designs", help="with -o, also each front member's design files"),
        ] = False,
        force: Annotated[
            bool, typer.Option("--force", help="move foreign files in -o DIR aside")
        ] = False,
        executor: Annotated[
            str, typer.Option("--executor", help="where simulations run: local, ray, ray://...")
        ] = "local",
        workers: Annotated[
            int | None,
            typer.Option("--workers", min=1, max=4096, help="workers (local 1 runs serially)"),
        ] = None,
        record: Annotated[
            bool, typer.Option("--store", help="record the front's designs and proposals")
        ] = False,
        store_url: StoreUrlOpt = None,
        progress: Annotated[
            bool, typer.Option("--progress/--no-progress", help="progress on stderr")
        ] = True,
    ) -> None:
        """The designs that meet a goal: the Pareto front on cost, power, predicted FCT (or
        step time) and failure impact, and why every other candidate lost (docs/assist.md)."""

        def run() -> ProposeResult:
            import contextlib

            from clusterloom.assist.propose import propose
            from clusterloom.exec import open_executor

            goal = _goal(goal_path, example)
            store = None
            if record:
                from clusterloom.store import open_store

                store = open_store(store_url)
            from clusterloom.cli.progress import reporter

            keep = record or (output is not None and designs)
            err = Console(stderr=True, highlight=False, markup=False)
            with open_executor(executor, workers) as pool, reporter(err, progress) as report:
                result = propose(goal, executor=pool, progress=report, keep_designs=keep)
            with contextlib.ExitStack() as stack:
                dirs: dict[str, Path] = {}
                if output is not None:
                    from clusterloom._version import __version__
                    from clusterloom.export.outdir import output_run

                    target = stack.enter_context(
                        output_run(output, version=__version__, force=force)
                    )
                    _write(result, target.staging, designs)
                    dirs = {c.id: target.target / "designs" / c.id for c in result.front}
                if as_json:
                    sys.stdout.write(result.to_json())
                else:
                    _say(out, result)
            if output is not None and not as_json:
                out.print(f"wrote {output}/proposals.json", soft_wrap=True)
            if store is not None:
                if output is None or not designs:
                    from clusterloom.write import write_design

                    with tempfile.TemporaryDirectory(prefix="clusterloom-propose-") as tmp:
                        for c, d in zip(result.front, result.designs, strict=True):
                            write_design(d, Path(tmp) / c.id)
                        _record(out, store, result, {c.id: Path(tmp) / c.id for c in result.front})
                else:
                    _record(out, store, result, dirs)
            return result

        guard(run)
        raise typer.Exit(0)
