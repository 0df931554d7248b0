"""``clusterloom ops localise`` and ``ops evaluate``: the thin commands over
:mod:`clusterloom.ops.localise` and :mod:`clusterloom.ops.evaluate`.

``ops localise DESIGN`` reads telemetry files (``--counters`` through ``ops.ingest``'s
readers and its rates, or ``--rates`` already as rates; ``--probes``, ``--collectives``;
Parquet, CSV or OpenMetrics text by suffix) or a telemetry store (``--store DIR``, read
compactly by ``ops.localise.localise_store``, its rates at ``--resolution``) and prints
the ranked suspects with their evidence (``--json`` as JSON). Exit 0 when nothing is to
repair (no suspect, or only congestion), 1 when a fault is suspected (a finding), 2 bad input.
``ops evaluate DESIGN`` localises seeded synthetic incidents of each fault kind and prints
top-1, top-3, precision and recall per kind (``--engine packet``: the telemetry from the
packet engine, for the kinds it expresses; ``--traffics N`` permutations cycled;
``--healthy N`` healthy windows scored; DESIGN also ``fat-tree-k8`` or ``hgx-256-roce``,
``ops.evaluate.SMALL_DESIGNS``); exit 0, or 1 when a kind misses its target (top-1 below
90%, a false culprit ranked first for congestion, a fault named in a healthy window).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    import pyarrow as pa

    from clusterloom.ops.evaluate import Evaluation
    from clusterloom.ops.fabric import OpsFabric
    from clusterloom.ops.localise import Localisation

Design = Annotated[
    str,
    typer.Argument(help="a design: run directory (design -o), spec file or built-in example"),
]
FileOpt = Annotated[Path | None, typer.Option(exists=False, dir_okay=False, show_default=False)]


def _read(
    fabric: OpsFabric,
    out: Console,
    counters: Path | None,
    rates: Path | None,
    probes: Path | None,
    collectives: Path | None,
    store: Path | None,
) -> tuple[pa.Table | None, pa.Table | None, pa.Table | None]:
    """The rates, probes and collectives to localise over; bad rows are reported (one line
    each, to the log) and skipped by the readers, good rows kept."""
    from clusterloom.errors import Problem, SpecError

    if store is not None:
        if any(x is not None for x in (counters, rates, probes, collectives)):
            raise SpecError([Problem("--store", "give either --store or telemetry files")])
        from clusterloom.ops.telemetry import TelemetryStore

        if not Path(store).is_dir():
            raise SpecError([Problem(str(store), "not a telemetry store directory")])
        st = TelemetryStore(store, fabric)
        return st.rates(), st.probes(), st.collectives()
    if counters is not None and rates is not None:
        raise SpecError([Problem("--rates", "give --counters or --rates, not both")])
    if all(x is None for x in (counters, rates, probes, collectives)):
        raise SpecError(
            [Problem("telemetry", "give --counters/--rates, --probes, --collectives or --store")]
        )
    r = p = c = None
    if counters is not None:
        from clusterloom.ops.ingest import counter_rates, read_counters

        got = read_counters(counters, fabric)
        _problems(counters, got.problems)
        r = counter_rates(got.table, fabric)
    if rates is not None:
        r = _parquet(rates)
    if probes is not None:
        from clusterloom.ops.ingest import read_probes

        got = read_probes(probes, fabric)
        _problems(probes, got.problems)
        p = got.table
    if collectives is not None:
        from clusterloom.ops.ingest import read_collectives

        got = read_collectives(collectives, fabric)
        _problems(collectives, got.problems)
        c = got.table
    return r, p, c


def _from_store(
    fabric: OpsFabric, store: Path, files: tuple[Path | None, ...], resolution: str
) -> Localisation:
    """Localise over a telemetry store, read compactly (``ops.localise.localise_store``)."""
    from clusterloom.errors import Problem, SpecError
    from clusterloom.ops.localise import localise_store
    from clusterloom.ops.telemetry import TelemetryStore

    if any(x is not None for x in files):
        raise SpecError([Problem("--store", "give either --store or telemetry files")])
    if resolution not in ("raw", "1m", "1h"):
        raise SpecError([Problem("--resolution", f"raw, 1m or 1h, not {resolution!r}")])
    if not Path(store).is_dir():
        raise SpecError([Problem(str(store), "not a telemetry store directory")])
    st = TelemetryStore(store, fabric)
    return localise_store(fabric, st, rates_resolution=resolution)  # type: ignore[arg-type]


def _parquet(path: Path) -> pa.Table:
    import pyarrow.parquet as pq

    from clusterloom.errors import Problem, SpecError

    try:
        return pq.read_table(path)
    except (OSError, ValueError) as exc:
        raise SpecError([Problem(str(path), f"not a readable Parquet file: {exc}")]) from exc


def _problems(path: Path, problems: tuple[Any, ...]) -> None:
    """Bad rows the reader skipped, on stderr (stdout may be JSON): the first few and a count."""
    if not problems:
        return
    err = Console(stderr=True, highlight=False, markup=False)
    for pr in problems[:5]:
        err.print(f"{path}: skipped {pr}", style="yellow", soft_wrap=True)
    err.print(f"{path}: {len(problems):,} bad row(s) skipped, the good rows kept", style="yellow")


def _print_localisation(out: Console, loc: Localisation, top: int) -> None:
    if not loc.suspects:
        out.print(f"no suspect ({len(loc.anomalies):,} anomalies)")
        return
    table = Table(box=box.SIMPLE_HEAD, title="suspects (most likely first)")
    for heading, right in (
        ("#", True),
        ("kind", False),
        ("fault", False),
        ("target", False),
        ("confidence", True),
        ("explains", True),
    ):
        table.add_column(heading, justify="right" if right else "left", overflow="fold")
    shown = loc.suspects[:top]
    for i, s in enumerate(shown):
        table.add_row(
            str(i + 1),
            str(s.kind),
            "" if s.fault is None else str(s.fault),
            s.target,
            f"{s.confidence:.2f}",
            f"{s.explained}/{s.explained + s.unexplained}",
        )
    out.print(table)
    for i, s in enumerate(shown):
        out.print(f"{i + 1}. {s.target}", soft_wrap=True)
        for line in s.evidence:
            out.print(f"   - {line}", soft_wrap=True)
    if len(loc.suspects) > top:
        out.print(f"... {len(loc.suspects) - top:,} more (--top)")
    verdict = "load (congestion), nothing to repair" if loc.congestion else "faults"
    out.print(f"{len(loc.anomalies):,} anomalies; symptoms: {verdict}")


def _print_evaluation(out: Console, ev: Evaluation) -> None:
    table = Table(
        box=box.SIMPLE_HEAD,
        padding=(0, 1),
        pad_edge=False,
        title=f"{ev.design}: {ev.incidents_per_kind} incidents per kind, seed {ev.seed}, "
        f"{ev.engine} engine",
    )
    for heading in ("fault kind", "n", "top1", "top3", "prec", "rec", "kind", "false"):
        table.add_column(
            heading, justify="left" if heading == "fault kind" else "right", no_wrap=True
        )
    table.add_column("silent", justify="right", no_wrap=True)
    table.add_column("s", justify="right", no_wrap=True)
    from clusterloom.ops.evaluate import variant_scores

    rows = [(str(k.kind), k) for k in ev.scores]
    for kind, variant, v in variant_scores(ev):
        at = next(i for i, (name, _) in enumerate(rows) if name == str(kind))
        rows.insert(at + 1, (f"  {variant}", v))
    for name, k in rows:
        table.add_row(
            name,
            str(k.incidents),
            f"{k.top1:.0%}",
            f"{k.top3:.0%}",
            f"{k.precision:.0%}",
            f"{k.recall:.0%}",
            f"{k.kind_right:.0%}",
            f"{k.false_first:.0%}",
            f"{k.silent:.0%}",
            f"{k.seconds / max(k.incidents, 1):.1f}",
        )
    out.print(table)
    if ev.healthy is not None:
        h = ev.healthy
        out.print(
            f"healthy: {h.incidents} windows, a fault named first in {h.named:.0%}, "
            f"congestion called in {h.congestion:.0%}, nothing suspected in {h.silent:.0%}"
        )


def register(group: typer.Typer, guard: Callable[[Callable[[], Any]], Any], out: Console) -> None:
    """Add ``localise`` and ``evaluate`` to the ``ops`` group."""

    @group.command()
    def localise(
        design: Design,
        counters: Annotated[
            Path | None,
            typer.Option(help="cumulative counters (.prom, .csv, .parquet; ops.ingest)"),
        ] = None,
        rates: Annotated[
            Path | None, typer.Option(help="counters already as rates (RATE_SCHEMA Parquet)")
        ] = None,
        probes: Annotated[Path | None, typer.Option(help="path probes (.csv, .parquet)")] = None,
        collectives: Annotated[
            Path | None, typer.Option(help="collective timings (.csv, .parquet)")
        ] = None,
        store: Annotated[
            Path | None, typer.Option(help="a telemetry store directory (ops ingest)")
        ] = None,
        resolution: Annotated[
            str,
            typer.Option(help="with --store: the rates' resolution, raw, 1m or 1h (ops retain)"),
        ] = "raw",
        hash_seed: Annotated[int, typer.Option(help="the switches' ECMP hash seed")] = 0,
        top: Annotated[int, typer.Option(min=1, help="suspects to print")] = 10,
        as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    ) -> None:
        """Rank the links, ports, EVs, switches and ranks that explain the symptoms."""

        def run() -> int:
            from clusterloom.ops.fabric import load_fabric
            from clusterloom.ops.localise import localisation_dict
            from clusterloom.ops.localise import localise as do_localise
            from clusterloom.ops.model import SuspectKind

            fabric = load_fabric(design, hash_seed=hash_seed)
            if store is not None:
                loc = _from_store(fabric, store, (counters, rates, probes, collectives), resolution)
            else:
                r, p, c = _read(fabric, out, counters, rates, probes, collectives, None)
                loc = do_localise(fabric, rates=r, probes=p, collectives=c)
            if as_json:
                out.print_json(json.dumps(localisation_dict(loc)))
            else:
                _print_localisation(out, loc, top)
            return int(any(s.kind is not SuspectKind.CONGESTION for s in loc.suspects))

        raise typer.Exit(guard(run))

    @group.command()
    def evaluate(
        design: Design,
        incidents: Annotated[int, typer.Option(min=1, help="incidents per fault kind")] = 200,
        seed: Annotated[int, typer.Option(help="the seed of the incidents")] = 0,
        kinds: Annotated[
            str | None,
            typer.Option(help="fault kinds, comma-separated [default: every kind]"),
        ] = None,
        engine: Annotated[
            str, typer.Option(help="the engine synthesising the telemetry: flow or packet")
        ] = "flow",
        traffics: Annotated[
            int, typer.Option(min=1, help="permutations cycled over the incidents")
        ] = 1,
        healthy: Annotated[int, typer.Option(min=0, help="healthy windows scored too")] = 0,
        as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    ) -> None:
        """Localise seeded synthetic single-fault incidents and score the answers
        (DESIGN may also be fat-tree-k8 or hgx-256-roce, small ones for --engine packet)."""

        def run() -> int:
            from clusterloom.errors import Problem, SpecError
            from clusterloom.ops.evaluate import (
                PACKET_KINDS,
                SMALL_DESIGNS,
                evaluation_dict,
                meets_targets,
                small_design,
            )
            from clusterloom.ops.evaluate import evaluate as do_evaluate
            from clusterloom.ops.fabric import load_fabric
            from clusterloom.ops.model import FaultKind

            if engine not in ("flow", "packet"):
                raise SpecError([Problem("--engine", f"unknown '{engine}'; use flow or packet")])
            fabric = small_design(design) if design in SMALL_DESIGNS else load_fabric(design)
            chosen = list(PACKET_KINDS if engine == "packet" else FaultKind)
            if kinds is not None:
                try:
                    chosen = [FaultKind(k.strip()) for k in kinds.split(",") if k.strip()]
                except ValueError as exc:
                    raise SpecError(
                        [Problem("--kinds", f"{exc}; one of {', '.join(map(str, FaultKind))}")]
                    ) from exc
            ev = do_evaluate(
                fabric,
                chosen,
                incidents,
                seed,
                design=design,
                engine=engine,
                traffics=traffics,
                healthy=healthy,
            )
            if as_json:
                out.print_json(json.dumps(evaluation_dict(ev)))
            else:
                _print_evaluation(out, ev)
            return 0 if meets_targets(ev) else 1

        raise typer.Exit(guard(run))
