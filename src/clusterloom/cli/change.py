"""``clusterloom change BASELINE TARGET.yaml``: a change plan validated step by step
(``assist.plan``), written as a method of procedure (``mop.csv``, ``changes.jsonl``,
``plan.json``) and, with ``--store``, recorded as a proposal; ``clusterloom approve ID`` and
``--reject`` decide on a stored proposal. ``store export-plan`` (``cli/store.py``) writes a
stored plan with its status.

Exit codes: 0 every step keeps the floors; 1 the plan was made but a step breaks a floor (error
findings); 2 bad input (a baseline the spec cannot grow from, a floor outside 0-1, an approval
refused: a proposal superseded or decided already)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from clusterloom.cli.store import StoreOpt, StoreUrlOpt

if TYPE_CHECKING:
    from clusterloom.assist.plan import PlanResult
    from clusterloom.export.outdir import OutputRun
    from clusterloom.spec import ClusterSpec
    from clusterloom.store import Store

#: how a proposal that supersedes another is named: its plan's id, then the last characters of
#: the one it supersedes (a plan's id alone would clash when an earlier plan is proposed again)
_AFTER = "-after-"

Writing = Callable[[str, "ClusterSpec", bool], AbstractContextManager["OutputRun"]]


def floors_of(bisection: float, plane: float) -> Any:
    """The floors of the command line, a value outside 0-1 refused naming its option."""
    from clusterloom.assist.floors import Floors
    from clusterloom.errors import Problem, SpecError

    problems = [
        Problem(opt, f"{v:g} is not a fraction: give 0 to 1 (0.75 keeps 75% of the target's)")
        for opt, v in (("--floor-bisection", bisection), ("--floor-plane", plane))
        if not 0.0 <= v <= 1.0
    ]
    if problems:
        raise SpecError(problems)
    return Floors(bisection=bisection, plane=plane)


def plan_files(
    result: PlanResult, status: str = "proposed", approver: str = "", reason: str = ""
) -> dict[str, str]:
    """The files of a plan: ``mop.csv``, ``changes.jsonl`` (the plan and its proposal, one
    record a line), ``plan.json`` (``PlanResult.to_dict``)."""
    from clusterloom.assist.mop import mop_csv
    from clusterloom.changes import to_json

    return {
        "mop.csv": mop_csv(result.plan, status, approver, reason),
        "changes.jsonl": to_json(result.plan) + "\n" + to_json(result.proposal) + "\n",
        "plan.json": json.dumps(result.to_dict(), indent=1, sort_keys=True) + "\n",
    }


def _predicted(checks: dict[str, int | float | str]) -> str:
    slow = checks.get("backend:predicted-slowdown")
    if slow is None:
        return "-"
    return f"x{float(slow):.2f}, {checks['backend:flows-unfinished']} unfinished"


def _steps_table(result: PlanResult) -> Table:
    table = Table(title=f"change plan {result.plan.id} ({result.kind})", box=box.SIMPLE_HEAD)
    headings = ("step", "wave", "action", "links/racks", "bisection", "least plane", "ok")
    for heading in (*headings, "predicted (completion vs undrained)"):
        table.add_column(heading, overflow="fold")
    for s in result.plan.steps:
        fabric = "backend" if "backend:bisection-left" in s.checks else ""
        table.add_row(
            str(s.order),
            str(s.wave),
            s.action,
            f"{len(s.objects):,}",
            f"{float(s.checks.get(f'{fabric}:bisection-left', 1.0)):.0%}" if fabric else "-",
            f"{float(s.checks.get(f'{fabric}:plane-least-left', 1.0)):.0%}" if fabric else "-",
            "yes" if s.valid else "NO",
            _predicted(s.checks),
        )
    return table


def _say(out: Console, result: PlanResult, proposal: str) -> None:
    out.print(_steps_table(result))
    for f in result.findings:
        out.print(
            f"{f.severity.value}: {f.code} {f.where}: {f.message}", markup=False, soft_wrap=True
        )
    out.print(
        f"{len(result.plan.steps)} steps in {result.plan.summary.get('waves', 0)} waves; "
        f"proposal {proposal} (PROPOSED)" + (f"; impact: {result.impact}" if result.impact else ""),
        markup=False,
        soft_wrap=True,
    )


def _record(store: Store, result: PlanResult, user: str) -> Any:
    """``result``'s proposal recorded, superseding the open proposal of the same change."""
    from dataclasses import replace

    proposal = result.proposal
    earlier = store.open_proposal(proposal.plan.baseline, proposal.plan.target)
    if earlier is not None and earlier.split(_AFTER)[0] == proposal.id:
        return store.change_record(earlier)  # the same plan, open already
    if earlier is not None:
        proposal = replace(proposal, id=f"{proposal.id}{_AFTER}{earlier[-8:]}", supersedes=earlier)
    store.record(proposal, user=user)
    return proposal


def register(
    app: typer.Typer,
    guard: Callable[[Callable[[], Any]], Any],
    load: Callable[[Path | None, str | None], ClusterSpec],
    out: Console,
    writing: Writing,
) -> None:
    """Add ``change`` and ``approve`` to ``app``."""

    @app.command("change")
    def change_command(
        baseline: Annotated[
            Path, typer.Argument(help="the installed design: a run directory (design -o)")
        ],
        target: Annotated[Path, typer.Argument(help="the target spec (YAML)")],
        floor_bisection: Annotated[
            float,
            typer.Option(
                "--floor-bisection", help="bisection every step keeps, a fraction of the target's"
            ),
        ] = 0.0,
        floor_plane: Annotated[
            float,
            typer.Option(
                "--floor-plane",
                help="each plane's bisection every step keeps, a fraction of the target's",
            ),
        ] = 0.0,
        no_simulate: Annotated[
            bool, typer.Option("--no-simulate", help="skip the predicted impact (flow engine)")
        ] = False,
        output: Annotated[
            str | None,
            typer.Option("--output", "-o", help="write mop.csv, changes.jsonl, plan.json here"),
        ] = None,
        as_json: Annotated[bool, typer.Option("--json", help="print the plan as JSON")] = False,
        record: Annotated[
            bool, typer.Option("--store", help="record the plan as a proposal (proposed)")
        ] = False,
        store_url: StoreUrlOpt = None,
        user: Annotated[str, typer.Option("--user", help="the proposal's author")] = "cli",
        force: Annotated[
            bool, typer.Option("--force", help="move foreign files in -o aside")
        ] = False,
    ) -> None:
        """A change plan from an installed design to a target spec, every step validated
        against the floors (connectivity, job paths, bisection, planes), with the predicted
        impact of each step (docs/assist.md, "Change plans")."""

        def run() -> PlanResult:
            from clusterloom.assist.plan import plan_change
            from clusterloom.atomic import atomic_write
            from clusterloom.errors import StoreError

            floors = floors_of(floor_bisection, floor_plane)
            if store_url is not None and not record:
                raise StoreError("--store-url: give --store too, to record the plan")
            spec = load(target, None)
            opened = None
            if record:
                from clusterloom.store import open_store

                opened = open_store(store_url)
            result = plan_change(baseline, spec, floors, simulate=not no_simulate, author=user)
            proposal = result.proposal
            if opened is not None:
                proposal = _record(opened, result, user)
            if output is not None:
                with writing(output, spec, force) as run_dir:
                    for name, text in plan_files(result).items():
                        atomic_write(run_dir.staging / name, text)
            if as_json:
                data = result.to_dict()
                data["proposal"]["id"] = proposal.id
                data["proposal"]["supersedes"] = proposal.supersedes
                sys.stdout.write(json.dumps(data, indent=1, sort_keys=True) + "\n")
            else:
                _say(out, result, proposal.id)
                if opened is not None:
                    after = f", superseding {proposal.supersedes}" if proposal.supersedes else ""
                    out.print(
                        f"recorded proposal {proposal.id}{after} in {opened.url}",
                        markup=False,
                        soft_wrap=True,
                    )
            return result

        result = guard(run)
        raise typer.Exit(1 if result.errors else 0)

    @app.command("approve")
    def approve_command(
        proposal: Annotated[
            str, typer.Argument(help="the proposal's id (clusterloom change --store)")
        ],
        reason: Annotated[str, typer.Option("--reason", help="why (required)")],
        reject: Annotated[bool, typer.Option("--reject", help="reject it instead")] = False,
        user: Annotated[str, typer.Option("--user", help="who decides")] = "cli",
        store: StoreOpt = None,
    ) -> None:
        """Approve (or --reject) a stored proposal with a reason; a proposal superseded or
        decided already is refused (exit 2)."""

        def run() -> None:
            from clusterloom.store import open_store

            opened = open_store(store)
            record = opened.approve(proposal, user=user, reason=reason, approved=not reject)
            status = opened.proposal_status(proposal)
            out.print(
                f"proposal {proposal}: {status.upper()} by {user} (record {record})",
                markup=False,
                soft_wrap=True,
            )

        guard(run)
