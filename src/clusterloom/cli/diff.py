"""``clusterloom diff A B``: two designs compared (``clusterloom.assist.diff``), each a run
directory, a spec file or a store reference. A terminal summary, ``--json`` the diff itself,
``-o FILE`` writes it atomically. Exit 0; 1 when B has error findings A had not; 2 bad input."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table

from clusterloom.cli.store import StoreOpt

if TYPE_CHECKING:
    from clusterloom.assist import DesignDiff
    from clusterloom.store import Store


def _usd(cents: int, signed: bool = False) -> str:
    return f"{cents / 100:+,.2f}" if signed else f"{cents / 100:,.2f}"


def _bom_table(diff: DesignDiff) -> Table:
    table = Table(title="bill of materials (B - A)", box=box.SIMPLE_HEAD)
    table.add_column("item", ratio=3, overflow="fold")
    table.add_column("fabric/tier", ratio=1, overflow="fold")
    for heading in ("length m", "qty A", "qty B", "Δ qty", "Δ cost $"):
        table.add_column(heading, justify="right", no_wrap=True)
    for line in diff.bom:
        fabric, tier, category, item, length = line.key
        table.add_row(
            f"{category}: {item}",
            "/".join(x for x in (fabric, tier) if x) or "-",
            length or "-",
            f"{line.quantity_a:,}",
            f"{line.quantity_b:,}",
            f"{line.quantity_b - line.quantity_a:+,}",
            _usd(line.cost_cents_b - line.cost_cents_a, signed=True),
        )
    (ca, cb), (pa, pb) = diff.cost_cents, diff.power_mw
    table.add_row(
        "total", "", "", "", "", "", _usd(cb - ca, signed=True), style="bold", end_section=True
    )
    table.caption = (
        f"cost ${_usd(ca)} -> ${_usd(cb)}; power {pa / 1e6:,.2f} -> {pb / 1e6:,.2f} kW "
        f"({(pb - pa) / 1e6:+,.2f} kW)"
    )
    return table


def _counts_table(diff: DesignDiff) -> Table:
    table = Table(title="what changes", box=box.SIMPLE_HEAD)
    for heading in ("", "added", "removed", "changed"):
        table.add_column(heading, justify="left" if not heading else "right")
    c = diff.counts()
    table.add_row("devices", *(f"{c[f'devices_{k}']:,}" for k in ("added", "removed", "changed")))
    table.add_row(
        "links",
        f"{c['links_added']:,}",
        f"{c['links_removed']:,}",
        f"{c['links_recabled']:,} re-cabled",
    )
    table.add_row(
        "racks",
        f"{c['racks_added']:,}",
        f"{c['racks_removed']:,}",
        f"{c['racks_moved']:,} moved",
    )
    for name, pulls in (("pulled", diff.fibres_pulled), ("recovered", diff.fibres_recovered)):
        for p in pulls:
            table.add_row(
                f"cables {name}: {p.medium}", f"{p.cables:,}", "", f"{p.order_mm / 1000:,.1f} m"
            )
    return table


def _figure(v: float | int | None, unit: str = "", digits: int = 1) -> str:
    return "-" if v is None else f"{v:,.{digits}f}{unit}"


def _performance_table(diff: DesignDiff) -> Table:
    table = Table(title="predicted performance (B - A)", box=box.SIMPLE_HEAD)
    table.add_column("transport", no_wrap=True)
    for heading in ("p99 FCT A", "p99 FCT B", "completion A", "completion B", "finished A/B"):
        table.add_column(heading, justify="right")
    for p in diff.performance:
        table.add_row(
            p.transport,
            _figure(p.fct_p99_us[0], " us"),
            _figure(p.fct_p99_us[1], " us"),
            _figure(p.completion_ms[0], " ms", 3),
            _figure(p.completion_ms[1], " ms", 3),
            f"{p.finished[0] if p.finished[0] is not None else '-'}/"
            f"{p.finished[1] if p.finished[1] is not None else '-'}",
        )
    return table


def _say(out: Console, diff: DesignDiff) -> None:
    out.print(f"A: {diff.a}\nB: {diff.b}", soft_wrap=True, markup=False)
    if diff.empty:
        out.print("no difference: the same BOM, devices, links, racks and findings")
        return
    if diff.bom:
        out.print(_bom_table(diff))
    out.print(_counts_table(diff))
    for label, found in (("appear", diff.findings_appear), ("clear", diff.findings_clear)):
        for f in found:
            out.print(
                f"finding {label}: {f.severity} {f.code} {f.where}: {f.message}", markup=False
            )
    if diff.performance:
        out.print(_performance_table(diff))
    jobs = ", ".join(diff.blast_jobs) or "none"
    out.print(
        f"blast radius: {len(diff.blast_racks):,} racks ({', '.join(diff.blast_racks[:8])}"
        f"{' ...' if len(diff.blast_racks) > 8 else ''}); planes: "
        f"{', '.join(diff.blast_planes) or 'none'}; jobs: {jobs}",
        markup=False,
        soft_wrap=True,
    )
    for note in diff.notes:
        out.print(f"note: {note}", markup=False)


def _opener(url: str | None) -> Callable[[], Store] | None:
    """How to open the store a reference is looked up in: ``--store URL``, else the default
    store when one exists (``$CLUSTERLOOM_STORE``, or the default SQLite file: a typo never
    creates ``~/.clusterloom/store.db``); None when there is none."""
    import os
    from pathlib import Path

    from clusterloom.store import default_url, open_store

    if url is None and not os.environ.get("CLUSTERLOOM_STORE"):
        default = default_url()
        if not Path(default.removeprefix("sqlite:///")).expanduser().is_file():
            return None
    return lambda: open_store(url)


def register(app: typer.Typer, guard: Callable[[Callable[[], Any]], Any], out: Console) -> None:
    """Add ``diff`` to ``app``."""

    @app.command("diff")
    def diff_command(
        a: Annotated[str, typer.Argument(help="from: a run directory, spec file or store ref")],
        b: Annotated[str, typer.Argument(help="to: a run directory, spec file or store ref")],
        store: StoreOpt = None,
        as_json: Annotated[bool, typer.Option("--json", help="print the diff as JSON")] = False,
        output: Annotated[
            str | None, typer.Option("--output", "-o", help="also write the diff's JSON here")
        ] = None,
        predict: Annotated[
            bool,
            typer.Option(
                "--predict",
                help="a spec given as A or B is also simulated (its scenario, else a "
                "permutation of the flow engine's transports) for the performance delta",
            ),
        ] = False,
    ) -> None:
        """Two designs compared (B - A): BOM and cost, devices, links added, removed and
        re-cabled, racks moved, cables pulled, findings, blast radius (docs/assist.md)."""

        def run() -> DesignDiff:
            from clusterloom.assist import DesignInputs, diff_designs, read_run
            from clusterloom.store.summary import run_summary

            with DesignInputs(
                _opener(store), store_given=store is not None, predict=predict
            ) as inputs:
                path_a, name_a = inputs.resolve("A", a)
                path_b, name_b = inputs.resolve("B", b)
                diff = diff_designs(
                    read_run(path_a, name_a, run_summary), read_run(path_b, name_b, run_summary)
                )
            if output is not None:
                from clusterloom.atomic import atomic_write

                atomic_write(output, diff.to_json())
            if as_json:
                sys.stdout.write(diff.to_json())
            else:
                _say(out, diff)
            return diff

        diff = guard(run)
        raise typer.Exit(1 if diff.new_errors else 0)
