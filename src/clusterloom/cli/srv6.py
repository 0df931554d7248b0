"""``clusterloom srv6``: the thin commands over :mod:`clusterloom.srv6` (plan, programs,
failover, render, verify). Exit codes as in ``main.py``; ``verify``: 0 every check held, 1 a
check failed, 2 it cannot run here (not root, no namespaces)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

if TYPE_CHECKING:
    from clusterloom.cli.predicting import Writing
    from clusterloom.spec import ClusterSpec
    from clusterloom.srv6 import AddressPlan

Spec = Annotated[
    Path | None, typer.Argument(help="cluster spec (YAML); or --example", show_default=False)
]
Example = Annotated[str | None, typer.Option("--example", "-e", help="a built-in example")]
Prefix = Annotated[str, typer.Option(help="the SRv6 prefix the planes' blocks are cut from")]
BlockBits = Annotated[int, typer.Option(help="uSID block length in bits (RFC 9800 LBL)")]
UsidBits = Annotated[int, typer.Option(help="uSID length in bits (LNFL): 8, 16, 24 or 32")]
Growth = Annotated[
    float | None,
    typer.Option(
        help="share of more switches per tier the uSID ranges keep room for [default: the "
        "spec's site.growth_fraction, else 0]",
        show_default=False,
    ),
]
Evs = Annotated[
    int | None,
    typer.Option(help="EVs per connection [default: the spraying transport's]", show_default=False),
]


def _plan(
    cluster: ClusterSpec,
    prefix: str,
    block_bits: int,
    usid_bits: int,
    growth: float | None,
    loopbacks: str | None = None,
    links: str | None = None,
) -> AddressPlan:
    from clusterloom.fabric.sizing import plan_fabric
    from clusterloom.fabric.topology import generate
    from clusterloom.srv6 import Format, PlanOptions, plan_addresses
    from clusterloom.srv6.plan import DEFAULT_LINKS, DEFAULT_LOOPBACKS

    if growth is None:
        growth = cluster.site.growth_fraction if cluster.site is not None else 0.0
    opts = PlanOptions(
        prefix=prefix,
        fmt=Format(block_bits, usid_bits),
        loopbacks=loopbacks or DEFAULT_LOOPBACKS,
        links=links or DEFAULT_LINKS,
        growth=growth,
    )
    return plan_addresses(generate(plan_fabric(cluster, "backend")), opts)


def register(
    app: typer.Typer,
    guard: Callable[[Callable[[], Any]], Any],
    load: Callable[[Path | None, str | None], ClusterSpec],
    out: Console,
    err: Console,
    writing: Writing,
) -> None:
    """Add the ``srv6`` command group to ``app``."""
    from clusterloom.srv6.plan import DEFAULT_PREFIX

    group = typer.Typer(help="SRv6 for the backend fabric: addresses, path programs, failover.")
    app.add_typer(group, name="srv6")

    @group.command()
    def plan(
        spec: Spec = None,
        example: Example = None,
        output: Annotated[
            str | None,
            typer.Option(
                "-o", "--output", help="write DIR/srv6/ (its own run beside a design's files)"
            ),
        ] = None,
        prefix: Prefix = DEFAULT_PREFIX,
        block_bits: BlockBits = 32,
        usid_bits: UsidBits = 16,
        growth: Growth = None,
        evs: Evs = None,
        loopbacks: Annotated[
            str | None, typer.Option(help="prefix of the switch loopbacks [fd00:0:10::/64]")
        ] = None,
        links: Annotated[
            str | None, typer.Option(help="prefix of the link /127s [fd00:0:11::/64]")
        ] = None,
        force: Annotated[bool, typer.Option(help="move foreign files in DIR/srv6 aside")] = False,
    ) -> None:
        """Plan blocks, locators and SIDs, check them and summarise the program table."""

        def run() -> int:
            from clusterloom.findings import Severity
            from clusterloom.report.srv6 import srv6_page
            from clusterloom.srv6.programs import default_evs
            from clusterloom.srv6.summary import check_plan, summarize
            from clusterloom.srv6.write import summary_dict, write_plan

            cluster = load(spec, example)
            addresses = _plan(cluster, prefix, block_bits, usid_bits, growth, loopbacks, links)
            k = default_evs() if evs is None else evs
            table = summarize(addresses, k)
            findings = check_plan(addresses)
            summary = summary_dict(addresses, table, findings, 0, cluster.name)
            if output is not None:
                with writing(str(Path(output) / "srv6"), cluster, force) as target:
                    written, summary = write_plan(
                        target.staging, addresses, table, findings, cluster.name, k
                    )
                    from clusterloom.atomic import atomic_write

                    written.append(atomic_write(target.staging / "index.html", srv6_page(summary)))
                out.print(f"wrote {len(written):,} files to {target.target}/", soft_wrap=True)
            _print_summary(out, summary)
            return 1 if any(f.severity is Severity.ERROR for f in findings) else 0

        raise typer.Exit(guard(run))

    _register_tables(group, guard, load, out)
    _register_failover_sim(group, guard, load, out, writing)
    _register_render(group, guard, load, out, writing)
    _register_verify(group, guard, out, err)
    from clusterloom.cli.srv6_interconnect import register_interconnect

    register_interconnect(group, guard, load, out, err, writing)


def _print_summary(out: Console, s: dict[str, Any]) -> None:
    fmt, progs = s["format"], s["programs"]
    nic = progs["per_nic"]
    out.print(
        f"{s['design']}: blocks {', '.join(s['blocks'])} (/{fmt['block_bits']} + "
        f"{fmt['usid_bits']}-bit uSIDs, {fmt['usids_per_container']} per container); "
        f"{s['switch_locators']:,} switch locators, {s['nic_sids']:,} NIC SIDs",
        soft_wrap=True,
    )
    for c in progs["classes"]:
        out.print(
            f"  {c['class']}: {c['port_pairs']:,} NIC port pairs x {c['paths_per_pair']:,} "
            f"paths, {c['programs']:,} programs of {c['sids_per_program']} SID(s)",
            soft_wrap=True,
        )
    out.print(
        f"  per NIC: {nic['entries_max']:,} programs, {nic['bytes_max']:,} bytes "
        f"({nic['factored_bytes']:,} factored); whole table {progs['programs']:,} programs, "
        f"{progs['bytes']:,} bytes",
        soft_wrap=True,
    )
    for f in s["findings"]:
        out.print(f"  {f['severity']}: {f['code']}: {f['message']}", soft_wrap=True)


def _register_tables(
    group: typer.Typer,
    guard: Callable[[Callable[[], Any]], Any],
    load: Callable[[Path | None, str | None], ClusterSpec],
    out: Console,
) -> None:
    from clusterloom.srv6.plan import DEFAULT_PREFIX

    @group.command()
    def programs(
        spec: Spec = None,
        example: Example = None,
        host: Annotated[int, typer.Option(help="source host (accelerator)")] = 0,
        port: Annotated[int, typer.Option(help="source NIC port (host port index)")] = 0,
        show: Annotated[int, typer.Option(help="programs to print")] = 4,
        prefix: Prefix = DEFAULT_PREFIX,
        block_bits: BlockBits = 32,
        usid_bits: UsidBits = 16,
        evs: Evs = None,
    ) -> None:
        """The programs of one source NIC port: count, bytes, time and the first few."""

        def run() -> None:
            import time

            from clusterloom.srv6 import programs_for
            from clusterloom.srv6.encoding import to_text
            from clusterloom.srv6.programs import default_evs

            cluster = load(spec, example)
            addresses = _plan(cluster, prefix, block_bits, usid_bits, 0.0)
            k = default_evs() if evs is None else evs
            start = time.perf_counter()
            pr = programs_for(addresses, host, port, k)
            took = time.perf_counter() - start
            out.print(
                f"host {host} port {port} (plane {pr.plane}): {pr.entries:,} programs "
                f"({pr.dst.shape[0]:,} destinations x {pr.evs.shape[0]} EVs), {pr.nbytes:,} "
                f"bytes, computed in {took * 1e3:.1f} ms",
                soft_wrap=True,
            )
            shown = 0
            for d in range(pr.dst.shape[0]):
                for m in range(pr.evs.shape[0]):
                    if shown >= show:
                        return
                    segs = ",".join(to_text(s) for s in pr.segments(d, m))
                    out.print(
                        f"  -> host {int(pr.dst[d])} EV {int(pr.evs[m])}: path "
                        f"{int(pr.path[d, m])}/{int(pr.n_paths[d])} segs {segs}",
                        soft_wrap=True,
                    )
                    shown += 1

        guard(run)

    @group.command()
    def failover(
        spec: Spec = None,
        example: Example = None,
        fail: Annotated[
            list[str],
            typer.Option(help="link:N | switch:PLANE/ROLE/INDEX | plane:P; repeatable"),
        ] = [],  # noqa: B006 - Typer reads the default
        host: Annotated[int, typer.Option(help="the endpoint (source host)")] = 0,
        show: Annotated[int, typer.Option(help="destinations to list")] = 4,
        evs: Evs = None,
    ) -> None:
        """The EVs an endpoint retires for the failures and each pair's bandwidth share."""

        def run() -> None:
            from clusterloom.srv6.failover import host_failover, parse_failure

            cluster = load(spec, example)
            addresses = _plan(cluster, DEFAULT_PREFIX, 32, 16, 0.0)
            failures = [parse_failure(f, addresses.topology) for f in fail]
            fo = host_failover(addresses, host, failures, evs)
            dst = fo.programs[0].dst
            hit = fo.share < 1
            out.print(
                f"host {host}: {fo.retired_count:,} of {fo.evs * dst.shape[0]:,} (destination, "
                f"EV) programs retired "
                f"over {int(hit.sum()):,} of {dst.shape[0]:,} destinations; lowest share kept "
                f"{fo.share.min():.1%}, mean {fo.share.mean():.2%}",
                soft_wrap=True,
            )
            for i in [int(i) for i in hit.nonzero()[0][:show]]:
                d = int(dst[i])
                gone = fo.retired_evs(d)
                out.print(
                    f"  -> host {d}: keeps {fo.share[i]:.1%}, retires EVs {gone}", soft_wrap=True
                )

        guard(run)


def _register_failover_sim(
    group: typer.Typer,
    guard: Callable[[Callable[[], Any]], Any],
    load: Callable[[Path | None, str | None], ClusterSpec],
    out: Console,
    writing: Writing,
) -> None:
    @group.command("failover-sim")
    def failover_sim(
        spec: Spec = None,
        example: Example = None,
        fail: Annotated[
            str,
            typer.Option(
                help="the hard failure, as simulate's --fail: KIND:TARGET@START[-END], "
                "e.g. link:17@50us"
            ),
        ] = "",
        size: Annotated[str, typer.Option(help="bytes per flow of the permutation")] = "2MB",
        hosts: Annotated[
            int | None,
            typer.Option(help="permute the first N hosts [default: all]", show_default=False),
        ] = None,
        reroute: Annotated[
            str, typer.Option(help="ECMP's detection and reconvergence after the failure")
        ] = "1s",
        evs: Annotated[int, typer.Option(help="EVs per connection of the sprayer")] = 128,
        engine: Annotated[str, typer.Option(help="packet, flow or both")] = "both",
        seed: Annotated[int, typer.Option(help="seed of the permutation and the runs")] = 0,
        max_time: Annotated[str, typer.Option(help="simulated time limit of a run")] = "10s",
        output: Annotated[
            Path | None,
            typer.Option(
                "--output", "-o", help="write failover.json and failover.html to this directory"
            ),
        ] = None,
        force: Annotated[bool, typer.Option(help="move foreign files in DIR aside")] = False,
    ) -> None:
        """The same permutation and failure under SRv6 endpoint failover (told, learned; no
        reconvergence), ECMP spraying and RoCE rerouted after --reroute: one row per case;
        with -o, also as failover.json and a page."""

        def run() -> int:
            from rich.table import Table

            from clusterloom.errors import Problem, SpecError
            from clusterloom.sim.failures import parse_failure, parse_size, parse_time
            from clusterloom.sim.traffic import permutation
            from clusterloom.srv6.plan import DEFAULT_PREFIX
            from clusterloom.srv6.simulate import (
                COLUMNS,
                compare_flows,
                compare_packets,
                table_rows,
            )

            cluster = load(spec, example)
            addresses = _plan(cluster, DEFAULT_PREFIX, 32, 16, 0.0)
            t = addresses.topology
            n = t.plan.hosts if hosts is None else hosts
            bad = []
            if not fail:
                bad.append(Problem("--fail", "give the failure, e.g. link:17@50us"))
            if not 2 <= n <= t.plan.hosts:
                bad.append(Problem("--hosts", f"{n} is not in 2..{t.plan.hosts}"))
            if not 1 <= evs <= 256:
                bad.append(Problem("--evs", f"{evs} is not in 1..256 (the sprayer's range)"))
            if engine not in ("packet", "flow", "both"):
                bad.append(Problem("--engine", f"{engine!r}: give packet, flow or both"))
            if bad:
                raise SpecError(bad)
            f = parse_failure(fail, t)
            if f.fraction != 0.0:
                raise SpecError([Problem("--fail", f"{fail!r} is a gray failure; give a hard one")])
            traffic = permutation(n, parse_size(size), seed=seed)
            kw = {
                "reroute_ps": parse_time(reroute, "--reroute"),
                "evs": evs,
                "seed": seed,
                "max_time_ps": parse_time(max_time, "--max-time"),
            }
            results = []
            if engine in ("packet", "both"):
                results += compare_packets(addresses, traffic, f, **kw)
            if engine in ("flow", "both"):
                results += compare_flows(addresses, traffic, f, **kw)
            table = Table(*COLUMNS, title=f"{cluster.name}: {n:,} hosts, {fail}, reroute {reroute}")
            for row in table_rows(results):
                table.add_row(*row)
            out.print(table)
            for r in results:
                if r.finished < r.flows:
                    why = "; ".join(r.unfinished) or "still running at the time limit"
                    out.print(f"{r.engine} {r.case}: {why}", soft_wrap=True)
            if output is not None:
                about = {"design": cluster.name, "failure": fail, "hosts": n}
                about |= {"size_bytes": parse_size(size), "reroute": reroute, "evs": evs}
                _write_failover(writing, output, cluster, force, results, {**about, "seed": seed})
                out.print(f"wrote failover.json and failover.html to {output}/")
            return 0 if all(r.finished == r.flows for r in results) else 3

        raise typer.Exit(guard(run))


def _write_failover(
    writing: Writing,
    output: Path,
    cluster: ClusterSpec,
    force: bool,
    results: Any,
    about: dict[str, Any],
) -> None:
    """``failover.json`` and its page, ``failover.html``, as one output directory."""
    import json

    from clusterloom.atomic import atomic_write
    from clusterloom.report.srv6 import failover_page
    from clusterloom.srv6.simulate import results_dict

    doc = results_dict(results, about)
    with writing(str(output), cluster, force) as target:
        atomic_write(
            target.staging / "failover.json", json.dumps(doc, indent=1, sort_keys=True) + "\n"
        )
        atomic_write(target.staging / "failover.html", failover_page(doc))


def _register_render(
    group: typer.Typer,
    guard: Callable[[Callable[[], Any]], Any],
    load: Callable[[Path | None, str | None], ClusterSpec],
    out: Console,
    writing: Writing,
) -> None:
    from clusterloom.srv6.plan import DEFAULT_PREFIX

    @group.command()
    def render(
        spec: Spec = None,
        example: Example = None,
        output: Annotated[str, typer.Option("-o", "--output", help="directory to write")] = "",
        node: Annotated[
            list[str], typer.Option(help="node names to render [default: the plan's choice]")
        ] = [],  # noqa: B006 - Typer reads the default
        prefix: Prefix = DEFAULT_PREFIX,
        block_bits: BlockBits = 32,
        usid_bits: UsidBits = 16,
        evs: Evs = None,
        force: Annotated[bool, typer.Option(help="move foreign files aside")] = False,
    ) -> None:
        """Per node an iproute2 file (nodes/NAME.sh) and per switch an FRR file."""

        def run() -> None:
            from clusterloom.errors import Problem, SpecError
            from clusterloom.srv6.render import Wiring
            from clusterloom.srv6.write import node_by_name, nodes_to_render, write_nodes

            cluster = load(spec, example)
            addresses = _plan(cluster, prefix, block_bits, usid_bits, 0.0)
            w = Wiring(addresses)
            ids = nodes_to_render(addresses)
            if node:
                found = {n: node_by_name(w, n) for n in node}
                bad = [Problem("--node", f"no node {n!r}") for n, i in found.items() if i is None]
                if bad:
                    raise SpecError(bad)
                ids = sorted(i for i in found.values() if i is not None)
            with writing(output, cluster, force) as target:
                written = write_nodes(target.staging, w, ids, evs)
            out.print(f"wrote {len(written):,} files to {target.target}/", soft_wrap=True)

        guard(run)


def _register_verify(
    group: typer.Typer, guard: Callable[[Callable[[], Any]], Any], out: Console, err: Console
) -> None:
    @group.command()
    def verify(
        verbose: Annotated[bool, typer.Option("--verbose", "-v", help="every check")] = False,
    ) -> None:
        """Build the 2-plane lab as namespaces, check every hop of chosen programs on this
        kernel, fail a link and check the endpoints' failover (needs root)."""

        def run() -> int:
            from clusterloom.srv6.verify import verify_all

            report = verify_all(lambda line: out.print(line, soft_wrap=True))
            from clusterloom.cli.render import lab_report

            return lab_report(report, verbose, out, err)

        raise typer.Exit(guard(run))
