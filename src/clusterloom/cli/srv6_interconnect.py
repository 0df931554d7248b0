"""``clusterloom srv6 interconnect`` (plan, render, isolation report of the spec's
``interconnect:`` section) and ``clusterloom srv6 verify-interconnect`` (the kernel proof).
Exit codes: 0 done and isolated, 1 a check failed, 2 bad input or namespaces cannot be made."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

if TYPE_CHECKING:
    from clusterloom.cli.predicting import Writing
    from clusterloom.spec import ClusterSpec
    from clusterloom.srv6.interconnect import InterconnectPlan

Spec = Annotated[
    Path | None, typer.Argument(help="cluster spec (YAML); or --example", show_default=False)
]
Example = Annotated[str | None, typer.Option("--example", "-e", help="a built-in example")]


def _print_plan(out: Console, plan: InterconnectPlan, reach: int, problems: int) -> None:
    from clusterloom.srv6.encoding import to_text

    fmt = plan.fmt
    out.print(
        f"block {to_text(plan.block)}/{fmt.block_bits}, {fmt.usid_bits}-bit uSIDs: "
        f"{len(plan.nodes)} nodes, {len(plan.links)} links, {len(plan.attachments)} attachments, "
        f"{len(plan.services)} service SIDs, {len(plan.routes)} tenant routes",
        soft_wrap=True,
    )
    for s in plan.services:
        out.print(
            f"  {s.node} {s.behavior} {to_text(s.sid)}/{plan.service_bits}: tenant {s.tenant}",
            soft_wrap=True,
        )
    for p in plan.policies:
        fallback = "none" if p.fallback is None else " ".join(p.fallback)
        out.print(
            f"  policy {p.name} ({p.tenant}): primary {' '.join(p.primary)}; fallback {fallback}",
            soft_wrap=True,
        )
    out.print(f"isolation: {reach} routes followed, {problems} problems", soft_wrap=True)


def register_interconnect(
    group: typer.Typer,
    guard: Callable[[Callable[[], Any]], Any],
    load: Callable[[Path | None, str | None], ClusterSpec],
    out: Console,
    err: Console,
    writing: Writing,
) -> None:
    """Add ``interconnect`` and ``verify-interconnect`` to the ``srv6`` group."""

    @group.command()
    def interconnect(
        spec: Spec = None,
        example: Example = None,
        output: Annotated[
            str | None, typer.Option("-o", "--output", help="write DIR (nodes/, frr/, json)")
        ] = None,
        force: Annotated[bool, typer.Option(help="move foreign files in DIR aside")] = False,
    ) -> None:
        """Plan the spec's interconnect (service SIDs, policy paths), check that no tenant
        reaches another's prefixes, and render every node (iproute2 and FRR)."""

        def run() -> int:
            from clusterloom.errors import Problem, SpecError
            from clusterloom.srv6.interconnect import plan_interconnect
            from clusterloom.srv6.interconnect_check import isolation_findings, reachability
            from clusterloom.srv6.interconnect_render import write_interconnect

            cluster = load(spec, example)
            if cluster.interconnect is None:
                raise SpecError([Problem("interconnect", "the spec has no interconnect section")])
            plan = plan_interconnect(cluster.interconnect)
            reach = reachability(plan)
            findings = isolation_findings(plan, reach)
            if output is not None:
                with writing(output, cluster, force) as target:
                    written = write_interconnect(target.staging, plan, findings, cluster.name)
                out.print(f"wrote {len(written):,} files to {target.target}/", soft_wrap=True)
            _print_plan(out, plan, len(reach), len(findings))
            for f in findings:
                err.print(f"{f.severity.value}: {f.code}: {f.message}", soft_wrap=True)
            return 1 if findings else 0

        raise typer.Exit(guard(run))

    @group.command("verify-interconnect")
    def verify_interconnect(
        verbose: Annotated[bool, typer.Option("--verbose", "-v", help="every check")] = False,
    ) -> None:
        """Build the two-tenant interconnect lab as namespaces, check every probe hop by hop
        and its delivery, fail the TE policy's primary link and check its fallback (root)."""

        def run() -> int:
            from clusterloom.cli.render import lab_report
            from clusterloom.srv6.interconnect_verify import verify_interconnect

            report = verify_interconnect(lambda line: out.print(line, soft_wrap=True))
            return lab_report(report, verbose, out, err)

        raise typer.Exit(guard(run))
