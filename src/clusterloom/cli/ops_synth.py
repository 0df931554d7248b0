"""``clusterloom ops synth DESIGN --fault TEXT ... -o DIR``: the telemetry a design would
produce with injected faults, from the simulators, with the truth beside it
(``clusterloom.ops.synth``, docs/ops.md "Ground truth from the simulators"). Writes
``counters.parquet``, ``probes.parquet``, ``collectives.parquet``, ``truth.json`` and
``counters.prom`` into ``-o DIR`` as one run. Exit 0; 2 bad input (a fault text, a target the
design does not have, a time), naming it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console


def register(group: typer.Typer, guard: Callable[[Callable[[], Any]], Any], out: Console) -> None:
    """Add ``ops synth`` to the ``ops`` group."""

    @group.command("synth")
    def synth_command(
        design: Annotated[
            str, typer.Argument(help="a run directory (design -o), a spec file or an example")
        ],
        output: Annotated[
            str, typer.Option("--output", "-o", help="write the telemetry into this directory")
        ],
        fault: Annotated[
            list[str] | None,
            typer.Option(
                "--fault",
                help="a fault, KIND:TARGET@START[-END][*KEY=VALUE,...] (docs/ops.md); repeat",
            ),
        ] = None,
        faults_file: Annotated[
            Path | None, typer.Option("--faults", help="a YAML or JSON file of faults")
        ] = None,
        duration: Annotated[
            str, typer.Option("--duration", help="length of the telemetry (10m, 600s)")
        ] = "10m",
        interval: Annotated[str, typer.Option("--interval", help="sample interval (10s)")] = "10s",
        seed: Annotated[
            int, typer.Option("--seed", help="seed of the draws (loss, noise, counter bases)")
        ] = 0,
        traffic_seed: Annotated[
            int, typer.Option("--traffic-seed", help="seed of the traffic and the probe pairs")
        ] = 0,
        engine: Annotated[
            str,
            typer.Option(
                "--engine", help="flow, or packet: drops, ECN, PFC from packet runs (docs)"
            ),
        ] = "flow",
        traffic: Annotated[
            str | None,
            typer.Option(
                "--traffic", help="traffic kind (default: the job's step, else permutation)"
            ),
        ] = None,
        load: Annotated[
            float, typer.Option("--load", help="share of a healthy step spent communicating")
        ] = 0.5,
        prom_all: Annotated[
            bool, typer.Option("--prom-all", help="every sample in counters.prom, not the last")
        ] = False,
        force: Annotated[
            bool, typer.Option("--force", help="move foreign files in -o aside")
        ] = False,
    ) -> None:
        """Synthesize a design's telemetry with injected faults, and the truth beside it."""

        def run() -> None:
            from clusterloom._version import __version__
            from clusterloom.errors import Problem, SpecError
            from clusterloom.export.outdir import output_run, relative
            from clusterloom.ops.fabric import load_fabric
            from clusterloom.ops.faults import (
                format_fault,
                parse_faults,
                parse_offset_ms,
                read_faults,
                shifted,
            )
            from clusterloom.ops.synth import synthesize, write_synthetic

            duration_ms = parse_offset_ms(duration, "--duration")
            interval_ms = parse_offset_ms(interval, "--interval")
            fabric = load_fabric(design)
            problems: list[Problem] = []
            faults: list[Any] = []
            try:
                faults += parse_faults(fault or [], fabric)
            except SpecError as exc:
                problems += exc.problems
            if faults_file is not None:
                try:
                    faults += read_faults(faults_file, fabric)
                except SpecError as exc:
                    problems += exc.problems
            if problems:
                raise SpecError(problems)
            syn = synthesize(
                fabric,
                faults,
                duration_s=duration_ms / 1000,
                interval_s=interval_ms / 1000,
                seed=seed,
                engine=engine,
                traffic=traffic,
                load=load,
                traffic_seed=traffic_seed,
            )
            with output_run(output, version=__version__, force=force) as target:
                paths = write_synthetic(syn, target.staging, prom_all=prom_all)
                names = relative(list(paths), target)
            out.print(f"wrote {len(names)} files to {output}/: " + ", ".join(names), markup=False)
            out.print(
                f"{syn.counters.num_rows:,} counter rows, {syn.probes.num_rows:,} probe rows, "
                f"{syn.collectives.num_rows:,} collective rows; " + "; ".join(syn.notes),
                markup=False,
            )
            if not syn.truth:
                out.print("truth: no fault (a healthy run)", markup=False)
            for f in syn.truth:
                out.print("truth: " + format_fault(shifted(f, -syn.start_ms)), markup=False)

        guard(run)
