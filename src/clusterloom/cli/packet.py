"""The packet-level commands: ``clusterloom packetsim`` and ``clusterloom conformance``.

Kept apart from ``main.py`` (which registers them with one call) so that the flow-level
commands and these grow without touching each other. Exit codes as in ``main.py``; for
``conformance``: 0 every applicable check passed, 1 some check failed, 2 bad input.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from clusterloom.cli.contract import EXIT_INCOMPLETE, incomplete
from clusterloom.sim.registry import DEFAULTS
from clusterloom.units import PS_PER_US, to_us

if TYPE_CHECKING:
    from clusterloom.cli.predicting import Writing
    from clusterloom.spec import ClusterSpec


def register(
    app: typer.Typer,
    guard: Callable[[Callable[[], Any]], Any],
    load: Callable[[Path | None, str | None], ClusterSpec],
    out: Console,
    err: Console,
    writing: Writing,
) -> None:
    """Add ``packetsim`` and ``conformance`` to ``app``; ``writing`` opens an output directory
    as a transaction (``main._writing``)."""

    @app.command()
    def packetsim(
        spec: Annotated[
            Path | None,
            typer.Argument(help="cluster spec (YAML); or --example", show_default=False),
        ] = None,
        example: Annotated[
            str | None, typer.Option("--example", "-e", help="a built-in example")
        ] = None,
        traffic: Annotated[
            str | None,
            typer.Option(
                help="permutation | all-to-all | incast | ring | htsim:FILE [default: the "
                "spec's scenario, else permutation]"
            ),
        ] = None,
        size: Annotated[
            str | None, typer.Option(help="bytes per flow [default: the scenario's, else 2MB]")
        ] = None,
        transports: Annotated[
            str | None,
            typer.Option(
                "--transport",
                help="comma-separated [default: the scenario's packet-level transports, else "
                "all four]",
            ),
        ] = None,
        fail: Annotated[
            list[str] | None,
            typer.Option(
                help="KIND:TARGET@START[-END][*FRACTION]; repeatable; 'none' runs without the "
                "spec's failures [default: the spec's scenario failures]"
            ),
        ] = None,
        hosts: Annotated[int | None, typer.Option(help="hosts taking part")] = None,
        seed: Annotated[
            int | None, typer.Option(min=0, max=2**32 - 1, help="seed of traffic and hashing")
        ] = None,
        crossval: Annotated[
            bool, typer.Option(help="also run the flow-level engine and compare completion times")
        ] = False,
        mtu: Annotated[
            int | None,
            typer.Option(help="payload bytes of a full packet [default: the scenario's, or 4096]"),
        ] = None,
        queue: Annotated[
            str | None,
            typer.Option(
                help="data buffer per switch port: packets (35) or bytes with a unit (140000B, "
                "512KiB) [default: the transport's, else 512KiB]"
            ),
        ] = None,
        option: Annotated[
            list[str] | None,
            typer.Option(
                help="KEY=VALUE engine-wide (ecn=off, pfc_xoff=15) or TRANSPORT.KEY=VALUE "
                "(roce-ecmp.dcqcn=0); repeatable; docs/packet.md lists the keys"
            ),
        ] = None,
        output: Annotated[
            str | None,
            typer.Option(
                "--output",
                "-o",
                help="directory for the results (Parquet), simulation.html and scenario.json, "
                "as simulate writes them",
                show_default=False,
            ),
        ] = None,
        force: Annotated[
            bool,
            typer.Option(
                "--force",
                help="use an output directory that holds other files: they are moved aside to "
                "DIR.moved-N, never deleted",
            ),
        ] = False,
        progress: Annotated[
            bool,
            typer.Option(
                "--progress/--no-progress",
                help="progress on stderr: a bar with an ETA on a terminal, plain lines when piped",
            ),
        ] = True,
    ) -> None:
        """Simulate traffic on the backend fabric packet by packet, one run per transport.
        Options left out come from the spec's ``scenario`` section, then from the defaults."""

        def run() -> None:
            from clusterloom.cli.predicting import predict_into, say_spec_failures
            from clusterloom.fabric import generate, plan_fabric
            from clusterloom.sim.predict import PacketPrediction
            from clusterloom.sim.scenario import resolve_scenario

            cluster = load(spec, example)
            topology = generate(plan_fabric(cluster))
            scenario = resolve_scenario(
                cluster,
                topology,
                engine="packet",
                traffic=traffic,
                size=size,
                transports=transports.split(",") if transports else None,
                failures=fail,
                hosts=hosts,
                seed=seed,
                options=option or (),
                mtu=mtu,
                queue=queue,
            )
            say_spec_failures(out, scenario, fail)
            result, target = predict_into(
                err,
                topology,
                scenario,
                cluster,
                output=output,
                force=force,
                writing=writing,
                progress=progress,
                crossval=crossval,
            )
            assert isinstance(result, PacketPrediction)
            _render(out, result, crossval)
            if target is not None:
                out.print(f"results written to {target.target}/", soft_wrap=True)
            assert scenario.traffic is not None
            flows = len(scenario.traffic)
            runs = ((o.name, o.result.finished, flows) for o in result.outcomes)
            why = {o.name: o.result.unfinished for o in result.outcomes}
            if incomplete(err, runs, why) == EXIT_INCOMPLETE:
                raise typer.Exit(EXIT_INCOMPLETE)

        guard(run)

    @app.command()
    def conformance(
        transports: Annotated[
            str, typer.Option("--transport", help="comma-separated packet transports to certify")
        ] = ",".join(DEFAULTS["packet"]),
        checks: Annotated[
            str | None, typer.Option("--check", help="comma-separated check IDs (default: all)")
        ] = None,
        junit: Annotated[Path | None, typer.Option(help="write JUnit XML here")] = None,
        script: Annotated[
            list[Path] | None,
            typer.Option(help="a scripted test (packetdrill-like timeline); repeatable"),
        ] = None,
        pcap: Annotated[
            list[Path] | None,
            typer.Option(help="a capture of a real implementation (classic pcap); repeatable"),
        ] = None,
        catalogue: Annotated[bool, typer.Option(help="list the checks and exit")] = False,
    ) -> None:
        """Run the conformance checks against transports, scripts or captures."""

        def run() -> int:
            from rich.table import Table
            from rich.text import Text

            from clusterloom.conformance import CHECKS, PacketImplementation, run_suite
            from clusterloom.conformance.checks import by_id
            from clusterloom.conformance.suite import CheckResult, Status, write_junit
            from clusterloom.errors import Problem
            from clusterloom.sim.packet.transports import transport_class

            if catalogue:
                table = Table(title="conformance checks")
                for col in ("ID", "group", "title", "needs"):
                    table.add_column(col)
                for c in CHECKS:
                    need = ", ".join(sorted(c.requires)) or " or ".join(sorted(c.any_of))
                    table.add_row(c.id, c.group, c.title, need or "-")
                out.print(table)
                return 0
            chosen = CHECKS
            if checks:
                ids = [i.strip() for i in checks.split(",") if i.strip()]
                unknown = [i for i in ids if i not in {c.id for c in CHECKS}]
                if unknown:
                    from clusterloom.conformance import ConformanceInputError

                    raise ConformanceInputError(
                        [Problem("--check", f"unknown check '{i}'") for i in unknown]
                    )
                chosen = by_id(ids)
            results: list[CheckResult] = []
            if script or pcap:
                from clusterloom.conformance.pcap import check_capture
                from clusterloom.conformance.script import run_script_file

                for path in script or []:
                    results += run_script_file(path)
                for path in pcap or []:
                    results += check_capture(path, chosen)
            else:
                names = [n.strip() for n in transports.split(",") if n.strip()]
                for n in names:
                    transport_class(n)
                for n in names:
                    results += run_suite(PacketImplementation(n), chosen)
            table = Table(title="conformance")
            for col in ("implementation", "check", "title", "result", "observed"):
                table.add_column(col)
            style = {Status.PASS: "green", Status.FAIL: "bold red", Status.NA: "dim"}
            for r in results:
                table.add_row(
                    r.implementation,
                    r.check,
                    r.title,
                    Text(r.status.value, style[r.status]),
                    r.detail,
                )
            out.print(table)
            failed = sum(r.status is Status.FAIL for r in results)
            passed = sum(r.status is Status.PASS for r in results)
            out.print(
                f"{passed} passed, {failed} failed, {len(results) - passed - failed} not applicable"
            )
            if junit is not None:
                write_junit(results, junit)
                out.print(f"JUnit XML written to {junit}")
            return 1 if failed else 0

        raise typer.Exit(guard(run))


def _render(out: Console, result: Any, crossval: bool) -> None:
    """The packet prediction as a table, one row per transport, and its ideal bound."""
    from rich.table import Table

    scenario = result.scenario
    n = len(scenario.traffic)
    table = Table(title=f"packet level: {scenario.traffic_kind}, {n:,} flows")
    for col in (
        "transport",
        "finished",
        "FCT p50 us",
        "FCT p99 us",
        "FCT max us",
        "retx",
        "drops",
        "trims",
        "events",
        "events/s",
        "wall s",
    ):
        table.add_column(col, justify="left" if col == "transport" else "right")
    if crossval:
        table.add_column("flow-level max us", justify="right")
    for o in result.outcomes:
        r = o.result
        p = o.fct_percentiles_ps / PS_PER_US
        row = [
            o.name,
            f"{r.finished:,}/{n:,}",
            f"{p[0]:,.1f}",
            f"{p[1]:,.1f}",
            f"{p[2]:,.1f}",
            f"{int(r.retransmissions.sum()):,}",
            f"{r.drops:,}",
            f"{r.trims:,}",
            f"{r.events:,}",
            f"{r.events_per_s:,.0f}",
            f"{r.wall_s:,.1f}",
        ]
        if crossval:
            row.append("-" if o.flow_level_max_ps is None else f"{to_us(o.flow_level_max_ps):,.1f}")
        table.add_row(*row)
    out.print(table)
    ideal = result.ideal
    out.print(
        f"ideal bound (flow level, every flow at its fair share): completion "
        f"{to_us(ideal.makespan_ps):,.1f} us, {ideal.finished:,}/{ideal.flows:,} flows"
    )
