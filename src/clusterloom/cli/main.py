"""The command line: parse, call the library, print with Rich. Nothing else lives here.

Exit codes (the contract of every command): 0 done, no error finding; 1 done, checks found
errors; 2 bad input or usage (a spec that does not parse or cannot be built, an unknown
example, an output directory that cannot be used), one line per problem; 70 an internal error
(a bug), one line saying so; 130 interrupted; 141 stdout was closed (``| head``), quietly.
Messages are printed as text, never read as Rich markup.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.console import Console

if TYPE_CHECKING:
    from rich.progress import Progress

    from clusterloom.export.outdir import OutputRun
    from clusterloom.pipeline import Design
    from clusterloom.sim.flow.traffic import Traffic
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
#: ``simulate -o`` watches the upward fabric links for the heat map up to this many links.
WATCH_LINKS_UP_TO = 50_000

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


#: exit codes beyond 0, 1 and 2 (see the module docstring)
EXIT_BUG, EXIT_INTERRUPTED, EXIT_CLOSED_PIPE = 70, 130, 141


def _say(label: str, style: str, message: object) -> None:
    from rich.text import Text

    one_line = " ".join(str(message).split())  # one line per problem, whatever it holds
    err.print(Text.assemble((label, style), f": {one_line}"), soft_wrap=True)


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
    from clusterloom import __version__
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
def init(
    path: Annotated[str, typer.Argument(help="where to write the spec")] = "cluster.yaml",
    example: ExampleOpt = None,
    force: Annotated[bool, typer.Option("--force", help="overwrite an existing file")] = False,
) -> None:
    """Write a commented example spec to start from."""

    def run() -> None:
        from clusterloom.errors import Problem, SpecError
        from clusterloom.examples import DEFAULT_EXAMPLE, example_text
        from clusterloom.export.atomic import atomic_write

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
) -> None:
    """Place racks and network devices on the spec's site; print halls, lengths and the gap."""

    def run() -> Design:
        from clusterloom.cli import render
        from clusterloom.errors import Problem, SpecError
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
                result = run_design(cluster, compare=False, cable=False)
                if target is not None:
                    from clusterloom.export import write_devices, write_placement
                    from clusterloom.export.atomic import atomic_write
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
) -> None:
    """Realize every link through the trays of the spec's site: media, lengths, patch panels,
    trunks; print media, trunks, tray fill and cost."""

    def run() -> Design:
        from clusterloom.cli import render
        from clusterloom.errors import Problem, SpecError
        from clusterloom.pipeline import run_design

        cluster = _load(spec, example)
        if cluster.site is None:
            raise SpecError([Problem("site", "this spec has no site section to cable")])
        before_spec = None if from_spec is None else _load(from_spec, None)
        with contextlib.ExitStack() as stack:
            target = (
                None if output is None else stack.enter_context(_writing(output, cluster, force))
            )
            with _progress() as progress:
                progress.add_task("placing and cabling", total=None)
                result = run_design(cluster, compare=False)
                if target is not None:
                    from clusterloom.export import write_cabling, write_placement
                    from clusterloom.export.atomic import atomic_write
                    from clusterloom.report import render_report

                    progress.add_task(f"writing {output}", total=None)
                    written = write_placement(result, target.staging)
                    written += write_cabling(result, target.staging)
                    written.append(
                        atomic_write(target.staging / "report.html", render_report(result))
                    )
            assert result.cabling is not None
            render.cabling(out, result)
            if before_spec is not None:
                from clusterloom.cabling.change import plan_change

                before = run_design(before_spec, compare=False)
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
_PLACEMENT_CODES = frozenset(
    {"placed-once", "u-overlap", "position", "budget", "hold-back", "contiguity", "spread", "reach"}
)


@app.command()
def workload(spec: SpecArg = None, example: ExampleOpt = None) -> None:
    """Derive a job's collectives and flows; print the breakdown and the predicted step time."""

    def run() -> None:
        from clusterloom.cli import render
        from clusterloom.errors import Problem, SpecError
        from clusterloom.workload import design_workload

        cluster = _load(spec, example)
        if cluster.job is None:
            raise SpecError([Problem("job", "this spec has no job section to derive traffic from")])
        render.workload(out, cluster, design_workload(cluster))

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
            help="KIND:TARGET@START[-END][*FRACTION], e.g. link:17@1ms; repeatable "
            "[default: the scenario's failures]"
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
        typer.Option(min=1, max=1024, help="with --sweep: worker processes (default: all cores)"),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            help="directory for the results (Parquet) and simulation.html",
            show_default=False,
        ),
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Simulate traffic on the backend fabric with each transport (flow level) and compare.
    Options left out come from the spec's ``scenario`` section, then from the defaults."""

    def run_all() -> None:
        import numpy as np

        from clusterloom.cli import render
        from clusterloom.errors import Problem, SpecError
        from clusterloom.export.atomic import atomic_write
        from clusterloom.fabric import generate, plan_fabric
        from clusterloom.report.simulation import render_simulation
        from clusterloom.sim.flow.paths import build_router
        from clusterloom.sim.flow.results import Run, utilisations, write_results
        from clusterloom.sim.flow.run import (
            compare,
            parse_failure,
            parse_size,
            parse_time,
            run,
            summarize,
        )
        from clusterloom.sim.flow.transports import transport

        cluster = _load(spec, example)
        sc = cluster.scenario
        kind = (
            traffic
            or ((f"htsim:{sc.htsim_file}" if sc.traffic == "htsim" else sc.traffic) if sc else None)
            or "permutation"
        )
        names = (
            [n.strip() for n in transports.split(",") if n.strip()]
            if transports
            else list(sc.transports)
            if sc
            else ["roce-ecmp", "mrc-spray", "receiver-driven", "ideal"]
        )
        options = _transport_options(sc.transport_options if sc else {}, option or [])
        chosen = [transport(n, **options.get(n, {})) for n in names]
        the_seed = seed if seed is not None else (sc.seed if sc else 0)
        nbytes = parse_size(size or (sc.size if sc else "2MB"))
        topology = generate(plan_fabric(cluster))
        fail_texts = fail if fail is not None else (list(sc.failures) if sc else [])
        failures = tuple(parse_failure(f, topology) for f in fail_texts)
        load = _traffic(cluster, kind, nbytes, hosts, the_seed, topology.plan.hosts)
        if sweep_tier is not None:
            from clusterloom.sim.flow.sweep import single_link_failures, sweep

            links = single_link_failures(topology, sweep_tier, max_links=max_links, seed=the_seed)
            with _progress() as progress:
                progress.add_task(
                    f"sweep: {len(links):,} links x {len(chosen)} transports", total=None
                )
                rows = sweep(
                    topology,
                    load,
                    chosen,
                    links,
                    fail_at_ps=parse_time(fail_at, "--fail-at"),
                    seed=the_seed,
                    rtol=rtol,
                    processes=jobs,
                )
            render.sweep(out, rows, sweep_tier, kind, len(load))
            return
        router = build_router(topology)
        # With -o, watch the upward fabric links (leaf-spine, spine-core) for the heat map
        # when that stays small; otherwise only the largest utilisation is kept.
        watch = np.zeros(0, dtype=np.int64)
        if output is not None and topology.n_links <= WATCH_LINKS_UP_TO:
            watch = 2 * np.flatnonzero(topology.link_tier >= 2)
        summaries, runs = [], []
        with contextlib.ExitStack() as stack:
            target = (
                None if output is None else stack.enter_context(_writing(output, cluster, force))
            )
            with _progress() as progress:
                for tr in chosen:
                    progress.add_task(f"{tr.name}: {len(load):,} flows", total=None)
                    result = run(
                        topology,
                        load,
                        tr,
                        failures,
                        seed=the_seed,
                        router=router,
                        rtol=rtol,
                        watch_links=watch,
                    )
                    summaries.append(summarize(tr.name, result, load.barrier))
                    if output is not None:
                        runs.append(Run(tr.name, load, result, router.capacity_bytes()))
                end = max((sm.makespan_ps for sm in summaries), default=0)
                late = [
                    f
                    for f in failures
                    if f.start_ps >= end and any(sm.finished for sm in summaries)
                ]
                if late:
                    raise SpecError(
                        [
                            Problem(
                                f"--fail {f.label}",
                                f"starts at {f.start_ps / 1e6:,.3f} us, after every transport "
                                f"finished (the last at {end / 1e6:,.3f} us); use an earlier time",
                            )
                            for f in late
                        ]
                    )
                compared = compare(summaries, chosen, failures)
                if target is not None and runs:
                    progress.add_task(f"writing {output}", total=None)
                    util = utilisations(runs)
                    write_results(target.staging, runs, util=util)
                    page = render_simulation(
                        cluster.name,
                        runs,
                        failures,
                        util=util,
                        traffic_label=kind,
                        compared=compared,
                    )
                    atomic_write(target.staging / "simulation.html", page)
        render.simulation(out, compared, kind, len(load), failures)
        if target is not None:
            out.print(f"results written to {target.target}/")

    _guard(run_all)


def _transport_options(
    base: dict[str, dict[str, float]], given: list[str]
) -> dict[str, dict[str, float]]:
    """The scenario's transport options overridden by ``--option TRANSPORT.KEY=VALUE``."""
    import re

    from clusterloom.errors import Problem, SpecError
    from clusterloom.sim.flow.transports import TRANSPORTS
    from clusterloom.spec.scenario import option_problems

    out = {name: dict(opts) for name, opts in base.items()}
    problems: list[Problem] = []
    for text in given:
        m = re.fullmatch(r"([a-z-]+)\.([a-z_]+)=([-+0-9.eE]+)", text.strip())
        if not m:
            problems.append(
                Problem(f"--option {text}", "expected TRANSPORT.KEY=NUMBER, e.g. mrc-spray.evs=16")
            )
            continue
        name, key, value = m.groups()
        if name not in TRANSPORTS:
            known = ", ".join(sorted(TRANSPORTS))
            problems.append(
                Problem(f"--option {text}", f"unknown transport '{name}'; known: {known}")
            )
            continue
        try:
            out.setdefault(name, {})[key] = float(value)
        except ValueError:
            problems.append(Problem(f"--option {text}", f"'{value}' is not a number"))
    for name, opts in out.items():
        if name in TRANSPORTS:
            problems += option_problems(name, opts, f"--option {name}")
    if problems:
        raise SpecError(problems)
    return out


def _traffic(
    cluster: ClusterSpec, kind: str, nbytes: int, hosts: int | None, seed: int, fabric_hosts: int
) -> Traffic:
    from clusterloom.errors import Problem, SpecError
    from clusterloom.sim.flow import traffic as tr
    from clusterloom.sim.flow.htsim import read_htsim

    n = hosts or fabric_hosts
    if n > fabric_hosts or n < 2:
        raise SpecError([Problem("--hosts", f"between 2 and the fabric's {fabric_hosts} hosts")])
    if kind == "permutation":
        return tr.permutation(n, nbytes, seed=seed)
    if kind == "all-to-all":
        return tr.all_to_all(n, nbytes)
    if kind == "incast":
        return tr.incast(n - 1, nbytes, receiver=n - 1, n_hosts=n)
    if kind == "ring":
        return tr.ring_all_reduce(n, nbytes)
    if kind == "step":
        from clusterloom.workload import design_workload

        if cluster.job is None:
            raise SpecError([Problem("--traffic", "step traffic needs a job section in the spec")])
        w = design_workload(cluster)
        return tr.from_step_flows(w.flows, w.ops, n_hosts=w.layout.world)
    if kind.startswith("htsim:"):
        return read_htsim(kind.split(":", 1)[1])
    raise SpecError(
        [
            Problem(
                "--traffic",
                f"unknown traffic '{kind}'; use permutation, "
                "all-to-all, incast, ring, step or htsim:FILE",
            )
        ]
    )


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
) -> None:
    """Run every stage and write the artifacts and report.html to the output directory."""

    def run() -> Design:
        from clusterloom.cli import render
        from clusterloom.export import write_design
        from clusterloom.pipeline import run_design, stage_names

        cluster = _load(spec, example)
        stages = stage_names(cluster)
        with _writing(output, cluster, force) as target, _progress() as progress:
            task = progress.add_task("design", total=len(stages) + 1)

            def step(stage: str) -> None:
                progress.update(task, description=stage, advance=0 if stage == stages[0] else 1)

            result = run_design(cluster, progress=step)
            progress.update(task, description="writing artifacts", advance=1)
            written = write_design(result, target.staging, flows=flows)
        render.design_summary(out, result)
        render.timings(out, result)
        _wrote(written, target)
        return result

    result = _guard(run)
    raise typer.Exit(1 if _has_errors(result) else 0)


def _has_errors(design: Design) -> bool:
    from clusterloom.findings import Severity

    return any(f.severity is Severity.ERROR for f in design.findings)


def _register_packet_commands() -> None:
    from clusterloom.cli import netbox, packet

    packet.register(app, _guard, _load, out)
    netbox.register(app, _guard, out)


_register_packet_commands()


def main() -> None:
    """Entry point of the ``clusterloom`` command."""
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
