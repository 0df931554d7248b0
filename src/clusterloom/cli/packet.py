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

if TYPE_CHECKING:
    from clusterloom.spec import ClusterSpec

PACKET_TRANSPORTS = "roce-ecmp,mrc-spray,metaroce,receiver-driven"


def register(
    app: typer.Typer,
    guard: Callable[[Callable[[], Any]], Any],
    load: Callable[[Path | None, str | None], ClusterSpec],
    out: Console,
) -> None:
    """Add ``packetsim`` and ``conformance`` to ``app``."""

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
            list[str] | None, typer.Option(help="KIND:TARGET@START[-END][*FRACTION]; repeatable")
        ] = None,
        hosts: Annotated[int | None, typer.Option(help="hosts taking part")] = None,
        seed: Annotated[
            int | None, typer.Option(min=0, max=2**32 - 1, help="seed of traffic and hashing")
        ] = None,
        crossval: Annotated[
            bool, typer.Option(help="also run the flow-level engine and compare completion times")
        ] = False,
    ) -> None:
        """Simulate traffic on the backend fabric packet by packet, one run per transport.
        Options left out come from the spec's ``scenario`` section, then from the defaults."""

        def run() -> None:
            from rich.table import Table

            from clusterloom.cli.main import _traffic
            from clusterloom.fabric import generate, plan_fabric
            from clusterloom.sim.flow.run import parse_failure, parse_size
            from clusterloom.sim.packet.run import run_packets
            from clusterloom.sim.packet.transports import TRANSPORTS, transport_class

            cluster = load(spec, example)
            sc = cluster.scenario
            kind = traffic or (
                (f"htsim:{sc.htsim_file}" if sc.traffic == "htsim" else sc.traffic)
                if sc
                else "permutation"
            )
            if transports:
                names = [n.strip() for n in transports.split(",") if n.strip()]
            else:
                names = [n for n in (sc.transports if sc else ()) if n in TRANSPORTS]
                names = names or PACKET_TRANSPORTS.split(",")
            for n in names:
                transport_class(n)
            the_seed = seed if seed is not None else (sc.seed if sc else 0)
            topology = generate(plan_fabric(cluster))
            texts = fail if fail is not None else (list(sc.failures) if sc else [])
            failures = tuple(parse_failure(f, topology) for f in texts)
            nbytes = parse_size(size or (sc.size if sc else "2MB"))
            load_ = _traffic(cluster, kind, nbytes, hosts, the_seed, topology.plan.hosts)
            table = Table(title=f"packet level: {kind}, {len(load_):,} flows")
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
            for name in names:
                r = run_packets(topology, load_, name, failures, seed=the_seed)
                fct = r.fct_ps[r.finish_ps >= 0] / 1e6
                import numpy as np

                p = np.percentile(fct, [50, 99, 100]) if fct.size else [float("nan")] * 3
                row = [
                    name,
                    f"{r.finished:,}/{len(load_):,}",
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
                    row.append(_flow_level(topology, load_, name, failures, the_seed))
                table.add_row(*row)
            out.print(table)

        guard(run)

    @app.command()
    def conformance(
        transports: Annotated[
            str, typer.Option("--transport", help="comma-separated packet transports to certify")
        ] = PACKET_TRANSPORTS,
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


def _flow_level(topology: Any, traffic: Any, name: str, failures: Any, seed: int) -> str:
    """The flow-level engine's largest completion time for the same transport name (when the
    flow-level engine has one)."""
    from clusterloom.sim.flow.run import run
    from clusterloom.sim.flow.transports import TRANSPORTS, transport

    if name not in TRANSPORTS:
        return "-"
    r = run(topology, traffic, transport(name), failures, seed=seed)
    done = r.fct_ps[r.finish_ps >= 0]
    return f"{done.max() / 1e6:,.1f}" if done.size else "-"
