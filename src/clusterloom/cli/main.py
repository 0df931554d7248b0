"""The command line: parse, call the library, print with Rich. Nothing else lives here.

Exit codes (the contract of every command, ``cli/contract.py``): 0 done, no error finding; 1
done, checks found errors; 2 bad input or usage (a spec that does not parse or cannot be built,
an unknown example, an output directory that cannot be used), one line per problem; 3 a
simulation did not complete (flows unfinished), with which and why; 70 an internal error (a
bug), one line saying so; 130 interrupted; 141 stdout was closed (``| head``), quietly.
Messages are printed as text, never read as Rich markup.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console

from clusterloom.cli.contract import (
    EXIT_BUG,
    EXIT_CLOSED_PIPE,
    EXIT_INCOMPLETE,
    EXIT_INTERRUPTED,
    incomplete,
    say,
)
from clusterloom.cli.store import StoreUrlOpt

if TYPE_CHECKING:
    from rich.progress import Progress

    from clusterloom.export.outdir import OutputRun
    from clusterloom.pipeline import Design
    from clusterloom.spec import ClusterSpec

app = typer.Typer(
    name="clusterloom",
    help="Networks of AI training clusters: from a cluster spec to a sized, verified fabric.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


class _Console(Console):
    """A console whose closed pipe reaches ``_guard`` (Rich's own handler exits with 1)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


out = _Console(highlight=False, markup=False)
err = _Console(stderr=True, highlight=False, markup=False)
_state = {"debug": False}

T = TypeVar("T")

SpecArg = Annotated[
    Path | None, typer.Argument(help="cluster spec (YAML); or use --example", show_default=False)
]
ExampleOpt = Annotated[
    str | None, typer.Option("--example", "-e", help="a built-in example by name")
]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force",
        help="use an output directory that holds other files: they are moved aside to "
        "DIR.moved-N, never deleted",
    ),
]
InstalledOpt = Annotated[
    str | None,
    typer.Option(
        "--installed",
        help="a previous run's output directory (design -o), or a NetBox it was pushed to "
        "(https://netbox or https://netbox/?site=NAME, the site the spec's name by default; "
        "token in NETBOX_TOKEN): keep its devices, ports, rack positions and cables, print the "
        "rework against what the growth forces and, with -o, write the change plan "
        "(cabling/change.csv, changes.jsonl)",
        show_default=False,
    ),
]


def _installed(value: str | None, site: str) -> Any:
    """The installed baseline of ``--installed`` (SpecError, exit 2, naming what is wrong): a
    directory, or a NetBox's ``site`` (``growth/netbox.py``)."""
    if value is None:
        return None
    import os

    from clusterloom.growth import read_installed
    from clusterloom.growth.netbox import netbox_source, read_netbox

    where = netbox_source(value, site)
    if where is None:
        return read_installed(value)
    url, name = where
    installed = read_netbox(url, os.environ.get("NETBOX_TOKEN", ""), name)
    ignored = ", ".join(f"{n:,} {kind}" for kind, n in sorted(installed.ignored.items()))
    links = sum(x.n_links for x in installed.links.values())
    out.print(
        f"installed: {installed.source}: {links:,} links, {len(installed.racks):,} racks"
        + (f"; left out (not clusterloom's, or removed): {ignored}" if ignored else ""),
        soft_wrap=True,
    )
    return installed


def _rework(design: Design) -> None:
    if design.growth is not None:
        out.print(design.growth.rework.line(), soft_wrap=True)


ProgressOpt = Annotated[
    bool,
    typer.Option(
        "--progress/--no-progress",
        help="progress on stderr: a bar with an ETA on a terminal, plain lines when piped",
    ),
]


ExecutorOpt = Annotated[
    str,
    typer.Option(
        "--executor",
        help="where tasks run: local (a process pool on this machine), ray (RAY_ADDRESS, else "
        "a local Ray) or ray://HOST:PORT (an existing cluster)",
    ),
]
RecordOpt = Annotated[
    bool,
    typer.Option("--store", help="record the written run in the design store (docs/store.md)"),
]
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers", min=1, max=4096, help="workers (default: every CPU; local 1 runs serially)"
    ),
]


def _progress() -> Progress:
    """A spinner with the current stage and the time spent, on stderr; gone when done."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=err,
        transient=True,
    )


def _say(label: str, style: str, message: object) -> None:
    say(err, label, style, message)


def _guard(fn: Callable[[], T]) -> T:
    """Run ``fn`` under the exit-code contract: a clusterloom error becomes one line per
    problem and exit 2; any other exception is a bug: one line and exit 70 (``--debug`` shows
    the traceback); a closed stdout ends quietly."""
    import os
    import sys

    from clusterloom.errors import ClusterloomError, SpecError

    try:
        result = fn()
        sys.stdout.flush()  # a closed pipe shows here, under this guard, not at exit
        return result
    except (typer.Exit, typer.Abort):
        raise
    except BrokenPipeError:
        # the reader went away (``| head``): stop quietly; point stdout at nothing so that
        # the interpreter's last flush does not fail again
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise typer.Exit(EXIT_CLOSED_PIPE) from None
    except KeyboardInterrupt:
        if _state["debug"]:
            raise
        _say("interrupted", "bold red", "nothing half-written was left in the output")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except ClusterloomError as exc:
        if _state["debug"]:
            raise
        problems = (
            exc.problems
            if isinstance(exc, SpecError)
            else (getattr(exc, "problems", None) or (str(exc),))
        )
        for problem in problems:
            _say("error", "bold red", problem)
        raise typer.Exit(2) from None
    except Exception as exc:  # a bug: say so in one line
        if _state["debug"]:
            raise
        first = (str(exc).splitlines() or [""])[0][:200]
        _say(
            "internal error",
            "bold red",
            f"{type(exc).__name__}: {first} (a bug in clusterloom; run again with --debug "
            "for the traceback and report it)",
        )
        raise typer.Exit(EXIT_BUG) from None


@contextlib.contextmanager
def _writing(output: str, cluster: ClusterSpec, force: bool) -> Iterator[OutputRun]:
    """The output directory as a transaction (``export.outdir``): locked now, so a second run
    is refused before any work; switched to the new run when the block ends."""
    from clusterloom._version import __version__
    from clusterloom.export.outdir import output_run
    from clusterloom.spec import spec_hash

    with output_run(output, spec_hash=spec_hash(cluster), version=__version__, force=force) as run:
        yield run


def _wrote(paths: list[Path], run: OutputRun) -> None:
    from clusterloom.export.outdir import relative

    names = relative(paths, run)
    out.print(f"wrote {len(names)} files to {run.target}/: " + ", ".join(names), soft_wrap=True)


def _load(spec: Path | None, example: str | None) -> ClusterSpec:
    from clusterloom.errors import Problem, SpecError
    from clusterloom.examples import example_text
    from clusterloom.spec import load_spec, parse_spec

    if (spec is None) == (example is None):
        raise SpecError([Problem("SPEC", "give a spec file or --example NAME (one of the two)")])
    if example is not None:
        return parse_spec(example_text(example), source=f"example {example}")
    assert spec is not None
    return load_spec(spec)


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="show tracebacks on errors")] = False,
) -> None:
    _state["debug"] = debug


@app.command()
def examples() -> None:
    """List the built-in example specs."""

    def run() -> None:
        from clusterloom.examples import example_names, example_text
        from clusterloom.spec import parse_spec

        for name in example_names():
            spec = parse_spec(example_text(name), source=f"example {name}")
            out.print(f"{name:<14} {spec.description}", soft_wrap=True)

    _guard(run)


@app.command()
def transports() -> None:
    """List the transports, the engines implementing each and where it comes from (built-in or
    an installed plug-in's entry point in the group ``clusterloom.transports``)."""

    def run() -> None:
        from rich.table import Table

        from clusterloom.sim.registry import DEFAULTS, REGISTRY

        table = Table("transport", "flow", "packet", "default for", "models", "from")
        for name, info in REGISTRY.items():
            table.add_row(
                name,
                "x" if "flow" in info.engines else "",
                "x" if "packet" in info.engines else "",
                ", ".join(e for e, names in DEFAULTS.items() if name in names),
                info.summary,
                info.origin,
            )
        out.print(table)

    _guard(run)


@app.command()
def init(
    path: Annotated[str, typer.Argument(help="where to write the spec")] = "cluster.yaml",
    example: ExampleOpt = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite an existing file")] = False,
) -> None:
    """Write a commented example spec to start from."""

    def run() -> None:
        from clusterloom.atomic import atomic_write
        from clusterloom.errors import Problem, SpecError
        from clusterloom.examples import DEFAULT_EXAMPLE, example_text

        target = Path(path)
        if not path.strip() or target.is_dir():
            raise SpecError([Problem(repr(path), "is not a file name; e.g. cluster.yaml")])
        if target.exists() and not force:
            raise SpecError([Problem(path, "exists; pass --force to overwrite it")])
        atomic_write(target, example_text(example or DEFAULT_EXAMPLE))
        out.print(f"wrote {path}; next: clusterloom design {path} -o out/")

    _guard(run)


@app.command()
def validate(
    spec: SpecArg = None,
    example: ExampleOpt = None,
    place: Annotated[
        bool,
        typer.Option(
            "--place",
            help="also place and cable the racks and check the result (minutes on the largest "
            "sites); without it, the site gets the checks placement makes before it solves",
        ),
    ] = False,
) -> None:
    """Check a spec and the fabrics it asks for (seconds); print the findings."""

    def run() -> int:
        from clusterloom.cli import render
        from clusterloom.findings import Severity
        from clusterloom.pipeline import run_design

        cluster = _load(spec, example)
        design = run_design(cluster, compare=False, place=place)
        if cluster.site is not None and not place:
            from clusterloom.placement import check_site

            check_site(cluster, design.fabrics)
        render.findings(out, design.findings)
        bad = [f for f in design.findings if f.severity is Severity.ERROR]
        out.print(f"{len(design.findings)} findings, {len(bad)} errors")
        return 1 if bad else 0

    raise typer.Exit(_guard(run))


@app.command()
def fabric(spec: SpecArg = None, example: ExampleOpt = None) -> None:
    """Size every fabric of a spec; print the plan, bill of materials and the options compared."""

    def run() -> Design:
        from clusterloom.cli import render
        from clusterloom.pipeline import run_design

        design = run_design(_load(spec, example), place=False)
        render.design_summary(out, design)
        return design

    design = _guard(run)
    raise typer.Exit(1 if _has_errors(design) else 0)


@app.command()
def place(
    spec: SpecArg = None,
    example: ExampleOpt = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            help="directory for placement/*.csv, the NetBox files and report.html",
            show_default=False,
        ),
    ] = None,
    force: ForceOpt = False,
    installed: InstalledOpt = None,
    executor: ExecutorOpt = "local",
    workers: WorkersOpt = None,
) -> None:
    """Place racks and network devices on the spec's site; print halls, lengths and the gap."""

    def run() -> Design:
        from clusterloom.cli import render
        from clusterloom.errors import Problem, SpecError
        from clusterloom.exec import open_executor
        from clusterloom.pipeline import run_design

        cluster = _load(spec, example)
        if cluster.site is None:
            raise SpecError([Problem("site", "this spec has no site section to place racks on")])
        with contextlib.ExitStack() as stack:
            target = (
                None if output is None else stack.enter_context(_writing(output, cluster, force))
            )
            with _progress() as progress:
                progress.add_task("placing", total=None)
                result = run_design(
                    cluster,
                    compare=False,
                    cable=False,
                    installed=_installed(installed, cluster.name),
                    executor=stack.enter_context(open_executor(executor, workers)),
                )
                if target is not None:
                    from clusterloom.atomic import atomic_write
                    from clusterloom.export import write_devices, write_placement
                    from clusterloom.export.netbox_setup import write_netbox_setup
                    from clusterloom.report import render_report

                    progress.add_task(f"writing {output}", total=None)
                    written = write_placement(result, target.staging)
                    written.append(write_devices(result, target.staging / "netbox" / "devices.csv"))
                    written += write_netbox_setup(result, target.staging)
                    written.append(
                        atomic_write(target.staging / "report.html", render_report(result))
                    )
        assert result.placement is not None
        render.placement(out, result.placement)
        _rework(result)
        problems = [f for f in result.findings if f.code in _PLACEMENT_CODES]
        if any(f.severity.value != "info" for f in problems):
            render.findings(out, [f for f in problems if f.severity.value != "info"])
        if target is not None:
            _wrote(written, target)
        return result

    result = _guard(run)
    raise typer.Exit(1 if _has_errors(result) else 0)


@app.command()
def cable(
    spec: SpecArg = None,
    example: ExampleOpt = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            help="directory for cabling/*.csv (cut sheet, trunks, pull list, BOM), "
            "netbox/cables.csv and report.html",
            show_default=False,
        ),
    ] = None,
    from_spec: Annotated[
        Path | None,
        typer.Option(
            "--from",
            help="the spec of an existing design: also print the cables this one adds, "
            "changes and removes, links rewired and spare trunk fibres reused; with -o, "
            "write them to cabling/change.csv with the old cables and fibres each reuses",
            show_default=False,
        ),
    ] = None,
    force: ForceOpt = False,
    installed: InstalledOpt = None,
    executor: ExecutorOpt = "local",
    workers: WorkersOpt = None,
) -> None:
    """Realize every link through the trays of the spec's site: media, lengths, patch panels,
    trunks; print media, trunks, tray fill and cost."""

    def run() -> Design:
        from clusterloom.cli import render
        from clusterloom.errors import Problem, SpecError
        from clusterloom.exec import open_executor
        from clusterloom.pipeline import run_design

        cluster = _load(spec, example)
        if cluster.site is None:
            raise SpecError([Problem("site", "this spec has no site section to cable")])
        before_spec = None if from_spec is None else _load(from_spec, None)
        if before_spec is not None and installed is not None:
            raise SpecError([Problem("--from", "give either --from or --installed, not both")])
        baseline = _installed(installed, cluster.name)
        with contextlib.ExitStack() as stack:
            pool = stack.enter_context(open_executor(executor, workers))  # refused before any file
            target = (
                None if output is None else stack.enter_context(_writing(output, cluster, force))
            )
            with _progress() as progress:
                progress.add_task("placing and cabling", total=None)
                result = run_design(cluster, compare=False, installed=baseline, executor=pool)
                if target is not None:
                    from clusterloom.atomic import atomic_write
                    from clusterloom.export import write_cabling, write_placement
                    from clusterloom.export.growth_files import write_growth
                    from clusterloom.report import render_report

                    progress.add_task(f"writing {output}", total=None)
                    written = write_placement(result, target.staging)
                    written += write_cabling(result, target.staging)
                    written += write_growth(result, target.staging)
                    written.append(
                        atomic_write(target.staging / "report.html", render_report(result))
                    )
            assert result.cabling is not None
            render.cabling(out, result)
            _rework(result)
            if before_spec is not None:
                from clusterloom.cabling.change import plan_change

                before = run_design(before_spec, compare=False, executor=pool)
                if before.cabling is None or before.placement is None:
                    raise SpecError([Problem("--from", "that spec has no site section to cable")])
                assert result.placement is not None
                change = plan_change(
                    before.cabling,
                    before.fabrics,
                    before.placement,
                    result.cabling,
                    result.fabrics,
                    result.placement,
                )
                out.print(
                    f"change from {from_spec}: {change.added.shape[0]:,} cables added, "
                    f"{change.changed.shape[0]:,} changed, {change.removed.shape[0]:,} removed, "
                    f"{change.unchanged:,} unchanged; {change.rewired:,} links rewired; "
                    f"{change.reused_fibres:,} of {change.spare_fibres:,} spare trunk fibres "
                    f"reused, {change.new_trunks:,} new trunks",
                    soft_wrap=True,
                )
                if target is not None:
                    from clusterloom.export.cabling_files import write_change

                    written.append(
                        write_change(
                            before, result, change, target.staging / "cabling" / "change.csv"
                        )
                    )
        shown = [f for f in result.findings if f.severity.value != "info"]
        if shown:
            render.findings(out, shown)
        if target is not None:
            _wrote(written, target)
        return result

    result = _guard(run)
    raise typer.Exit(1 if _has_errors(result) else 0)


#: Finding codes of the placement validators (``placement.validate``).
StepEngineOpt = Annotated[
    str,
    typer.Option(
        "--engine",
        help="analytic | flow | packet: where the step's scale-out collective times come from "
        "(flow and packet: each run alone on the designed backend fabric, with the "
        "scenario's failures)",
    ),
]
StepTransportOpt = Annotated[
    str | None,
    typer.Option(
        "--transport",
        help="the transport for --engine flow|packet [default: the scenario's first]",
    ),
]

_PLACEMENT_CODES = frozenset(
    {"placed-once", "u-overlap", "position", "budget", "hold-back", "contiguity", "spread", "reach"}
)


@app.command()
def workload(
    spec: SpecArg = None,
    example: ExampleOpt = None,
    engine: StepEngineOpt = "analytic",
    transport: StepTransportOpt = None,
) -> None:
    """Derive a job's collectives and flows; print the breakdown and the predicted step time."""

    def run() -> None:
        from clusterloom.cli import render
        from clusterloom.errors import Problem, SpecError
        from clusterloom.workload import design_workload

        cluster = _load(spec, example)
        if cluster.job is None:
            raise SpecError([Problem("job", "this spec has no job section to derive traffic from")])
        from clusterloom.sim.steptime import check_step_engine

        check_step_engine(engine, transport)
        w = design_workload(cluster)
        missing = None
        if engine != "analytic":
            from clusterloom.fabric import generate, plan_fabric
            from clusterloom.sim.steptime import simulated_workload

            with _progress() as progress:
                progress.add_task(f"simulating the step's scale-out collectives ({engine})")
                topology = generate(plan_fabric(cluster))
                w, sims = simulated_workload(cluster, topology, w, engine, transport)
            missing = sims.incomplete if sims is not None else None
        render.workload(out, cluster, w)
        if missing and incomplete(err, missing) == EXIT_INCOMPLETE:
            raise typer.Exit(EXIT_INCOMPLETE)

    _guard(run)


@app.command()
def simulate(
    spec: SpecArg = None,
    example: ExampleOpt = None,
    traffic: Annotated[
        str | None,
        typer.Option(
            help="permutation | all-to-all | incast | ring | step (the job's step) | htsim:FILE "
            "[default: the spec's scenario, else permutation]"
        ),
    ] = None,
    size: Annotated[
        str | None,
        typer.Option(
            help="bytes per flow (permutation, all-to-all, incast) or per rank buffer (ring) "
            "[default: the scenario's, else 2MB]"
        ),
    ] = None,
    transports: Annotated[
        str | None,
        typer.Option(
            "--transport",
            help="comma-separated transports to compare [default: the scenario's, else "
            "roce-ecmp,mrc-spray,receiver-driven,ideal]",
        ),
    ] = None,
    fail: Annotated[
        list[str] | None,
        typer.Option(
            help="KIND:TARGET@START[-END][*FRACTION], e.g. link:17@1ms; repeatable; 'none' "
            "runs without the scenario's failures [default: the scenario's failures]"
        ),
    ] = None,
    option: Annotated[
        list[str] | None,
        typer.Option(
            "--option",
            help="TRANSPORT.KEY=VALUE, e.g. mrc-spray.evs=16 or mrc-spray.balance=0; repeatable "
            "[default: the scenario's transport_options]",
        ),
    ] = None,
    hosts: Annotated[int | None, typer.Option(help="hosts taking part (default: all)")] = None,
    seed: Annotated[
        int | None,
        typer.Option(min=0, max=2**32 - 1, help="seed of random traffic and hashing [default: 0]"),
    ] = None,
    rtol: Annotated[
        float,
        typer.Option(
            min=1e-12,
            max=0.5,
            help="rate tolerance: links within this fraction of a filling level saturate "
            "together (1e-9 for exact; larger is faster with sprayed transports)",
        ),
    ] = 0.01,
    sweep_tier: Annotated[
        str | None,
        typer.Option(
            "--sweep",
            help="fail every link of a tier in turn (host_leaf, leaf_spine, spine_core) and "
            "report the slowdown per transport",
        ),
    ] = None,
    fail_at: Annotated[str, typer.Option(help="when --sweep fails each link")] = "10us",
    max_links: Annotated[
        int | None,
        typer.Option(min=1, help="with --sweep: a seeded sample of at most this many links"),
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option(min=1, max=1024, help="with --sweep: workers (default: all cores)"),
    ] = None,
    executor: ExecutorOpt = "local",
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            help="directory for the results (Parquet) and simulation.html; with --sweep, "
            "the sweep's dataset (resumable)",
            show_default=False,
        ),
    ] = None,
    force: ForceOpt = False,
    progress: ProgressOpt = True,
    record: RecordOpt = False,
    store_url: StoreUrlOpt = None,
) -> None:
    """Simulate traffic on the backend fabric with each transport (flow level) and compare.
    Options left out come from the spec's ``scenario`` section, then from the defaults."""

    def run_all() -> None:
        from clusterloom.cli import render
        from clusterloom.cli.predicting import predict_into, say_spec_failures
        from clusterloom.fabric import generate, plan_fabric
        from clusterloom.sim.predict import FlowPrediction
        from clusterloom.sim.scenario import resolve_scenario

        cluster = _load(spec, example)
        if record and sweep_tier is not None:
            from clusterloom.errors import StoreError

            raise StoreError("--store: a --sweep is not recorded; record a run without --sweep")
        store = _store(record, store_url, output)
        topology = generate(plan_fabric(cluster))
        scenario = resolve_scenario(
            cluster,
            topology,
            engine="flow",
            traffic=traffic,
            size=size,
            transports=transports.split(",") if transports else None,
            options=option or (),
            failures=fail,
            hosts=hosts,
            seed=seed,
            rtol=rtol,
        )
        assert scenario.traffic is not None
        flows = len(scenario.traffic)
        if sweep_tier is not None:
            from clusterloom.sweep.tier import tier_rows, tier_tasks

            tasks = tier_tasks(
                cluster, topology, scenario, sweep_tier, fail_at=fail_at, max_links=max_links
            )
            result, where = _run_sweep(tasks, output, executor, jobs, 2, progress)
            rows = tier_rows(result.table, tasks)
            render.sweep(out, rows, sweep_tier, scenario.traffic_kind, flows)
            if _say_sweep(result, where, output):
                raise typer.Exit(EXIT_INCOMPLETE)
            return
        say_spec_failures(out, scenario, fail)
        result, target = predict_into(
            err,
            topology,
            scenario,
            cluster,
            output=output,
            force=force,
            writing=_writing,
            progress=progress,
        )
        assert isinstance(result, FlowPrediction)
        render.simulation(out, result.compared, scenario.traffic_kind, flows, scenario.failures)
        if target is not None:
            out.print(f"results written to {target.target}/")
            if store is not None:
                from clusterloom.cli.store import record_sim_run

                record_sim_run(out, store_url, target.target, store)
        runs = ((sm.transport, sm.finished, sm.flows) for sm in result.summaries)
        if incomplete(err, runs) == EXIT_INCOMPLETE:
            raise typer.Exit(EXIT_INCOMPLETE)

    _guard(run_all)


@app.command()
def design(
    spec: SpecArg = None,
    example: ExampleOpt = None,
    output: Annotated[
        str,
        typer.Option(
            "--output",
            "-o",
            help="output directory; holds the previous run or this one whole, never a mix",
        ),
    ] = "out",
    force: ForceOpt = False,
    flows: Annotated[
        bool,
        typer.Option(
            "--flows",
            help="also write flows.npz, every flow of a step (large: 187 MB for rail-16k)",
        ),
    ] = False,
    engine: StepEngineOpt = "analytic",
    transport: StepTransportOpt = None,
    installed: InstalledOpt = None,
    executor: ExecutorOpt = "local",
    workers: WorkersOpt = None,
    record: RecordOpt = False,
    store_url: StoreUrlOpt = None,
) -> None:
    """Run every stage and write the artifacts and report.html to the output directory."""

    def run() -> Design:
        from clusterloom.cli import render
        from clusterloom.exec import open_executor
        from clusterloom.pipeline import run_design, stage_names
        from clusterloom.write import write_design

        cluster = _load(spec, example)
        store = _store(record, store_url, output)
        baseline = _installed(installed, cluster.name)
        stages = stage_names(cluster, predict=True, step_engine=engine)
        if baseline is not None:
            stages += ("growth",)
        with (
            open_executor(executor, workers) as pool,
            _writing(output, cluster, force) as target,
            _progress() as progress,
        ):
            task = progress.add_task("design", total=len(stages) + 1)

            def step(stage: str) -> None:
                progress.update(task, description=stage, advance=0 if stage == stages[0] else 1)

            result = run_design(
                cluster,
                predict=True,
                step_engine=engine,
                step_transport=transport,
                progress=step,
                installed=baseline,
                executor=pool,
            )
            progress.update(task, description="writing artifacts", advance=1)
            written = write_design(result, target.staging, flows=flows)
        render.design_summary(out, result)
        predicted = result.prediction
        if predicted is not None:
            scenario = predicted.scenario
            assert scenario.traffic is not None
            flows_n = len(scenario.traffic)
            render.simulation(
                out, predicted.compared, scenario.traffic_kind, flows_n, scenario.failures
            )
        _rework(result)
        render.timings(out, result)
        _wrote(written, target)
        if store is not None:
            from clusterloom.cli.store import record_design_run

            record_design_run(out, store_url, result, target.target, store=store)
        runs = [
            (c.summary.transport, c.summary.finished, c.summary.flows)
            for c in (predicted.compared if predicted is not None else ())
        ]
        if result.step_calls is not None:
            runs += list(result.step_calls.incomplete)
        if incomplete(err, runs):
            raise typer.Exit(EXIT_INCOMPLETE)
        return result

    result = _guard(run)
    raise typer.Exit(1 if _has_errors(result) else 0)


@app.command("sweep")
def sweep_command(
    sweep_file: Annotated[Path, typer.Argument(help="the sweep file (YAML; docs/sim.md)")],
    output: Annotated[
        str,
        typer.Option(
            "--output", "-o", help="the sweep's dataset (Parquet parts, manifest, sweep.html)"
        ),
    ],
    executor: ExecutorOpt = "local",
    workers: WorkersOpt = None,
    retries: Annotated[
        int, typer.Option(min=0, max=10, help="attempts after the first before a task fails")
    ] = 2,
    yes: Annotated[
        bool, typer.Option("--yes", help="run a sweep larger than the limit (2,000 runs)")
    ] = False,
    progress: ProgressOpt = True,
) -> None:
    """Run every point of a sweep file (a grid or list of scenario fields and spec variants,
    with seeds) through an executor into a resumable Parquet dataset, then summarize it."""

    def run() -> None:
        from clusterloom.cli import render
        from clusterloom.sweep.file import load_sweep
        from clusterloom.sweep.run import sweep_tasks
        from clusterloom.sweep.summary import summarize_sweep
        from clusterloom.write import write_sweep_page

        sf = load_sweep(sweep_file)
        tasks = sweep_tasks(sf, yes=yes)  # every check before anything starts
        result, where = _run_sweep(tasks, output, executor, workers, retries, progress)
        cells = summarize_sweep(result.table)
        write_sweep_page(output, sweep_file.stem, cells, len(tasks), len(result.failed))
        render.sweep_cells(out, cells)
        if _say_sweep(result, where, output, "sweep.html"):
            raise typer.Exit(EXIT_INCOMPLETE)

    _guard(run)


def _run_sweep(
    tasks: Any,
    output: str | None,
    executor: str,
    workers: int | None,
    retries: int,
    progress: bool,
) -> tuple[Any, str]:
    """Run sweep ``tasks`` on ``executor`` into the dataset ``output`` (None: in memory)."""
    from clusterloom.cli.progress import reporter
    from clusterloom.exec import open_executor
    from clusterloom.sweep.dataset import open_dataset
    from clusterloom.sweep.run import run_sweep

    record = {"runs": [{"key": t.key, **r} for t, r in tasks]}
    with contextlib.ExitStack() as stack:
        ex = stack.enter_context(open_executor(executor, workers))  # refused before any file
        ds = None if output is None else stack.enter_context(open_dataset(output, record))
        report = stack.enter_context(reporter(err, progress))
        result = run_sweep(tasks, ex, ds, retries=retries, progress=report)
    return result, ex.describe()


def _say_sweep(result: Any, executor: str, output: str | None, page: str = "") -> bool:
    """Where the sweep ran (``executor``: described) and its failures (on stderr); whether
    any task failed."""
    where = f"; results in {output}/" + (f" ({page})" if page else "") if output else ""
    out.print(f"{result.ran:,} runs on {executor}, {result.kept:,} kept from before{where}")
    for f in result.failed:
        shown = ", ".join(f"{k}={v}" for k, v in f.run.items())
        _say("failed", "bold yellow", f"{shown} after {f.attempts} attempts: {f.error}")
    return bool(result.failed)


def _store(record: bool, url: str | None, output: str | None) -> Any:
    """The store ``--store`` records into, opened (and so checked) before any work; None
    without ``--store``."""
    from clusterloom.errors import StoreError

    if not record:
        if url is not None:
            raise StoreError("--store-url: give --store too, to record the run")
        return None
    if output is None:
        raise StoreError("--store: records the written directory; give -o DIR too")
    from clusterloom.store import open_store

    return open_store(url)


def _has_errors(design: Design) -> bool:
    from clusterloom.findings import Severity

    return any(f.severity is Severity.ERROR for f in design.findings)


def _register_packet_commands() -> None:
    from clusterloom.cli import (
        capacity,
        change,
        diff,
        mcp,
        netbox,
        ops,
        packet,
        propose,
        serve,
        srv6,
        store,
    )

    diff.register(app, _guard, out)
    propose.register(app, _guard, out)
    change.register(app, _guard, _load, out, _writing)
    packet.register(app, _guard, _load, out, err, _writing)
    netbox.register(app, _guard, out)
    store.register(app, _guard, out)
    srv6.register(app, _guard, _load, out, err, _writing)
    serve.register(app, _guard, out)
    mcp.register(app, _guard, out)
    capacity.register(app, _guard, out)
    ops.register(app, _guard, out)


_register_packet_commands()


def main() -> None:
    """Entry point of the ``clusterloom`` command."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
