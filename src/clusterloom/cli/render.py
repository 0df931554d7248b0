"""Rich renderings of library artifacts for the terminal."""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console
from rich.table import Table

from clusterloom.fabric import FabricDesign
from clusterloom.findings import Finding, Severity
from clusterloom.pipeline import Design

_COLOUR = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "green"}


def findings(console: Console, items: Iterable[Finding]) -> None:
    table = Table("severity", "code", "message", "where", title="Findings", title_justify="left")
    for f in sorted(items, key=lambda f: -f.severity.rank):
        table.add_row(f"[{_COLOUR[f.severity]}]{f.severity.value}[/]", f.code, f.message, f.where)
    console.print(table)


def _plan(console: Console, fd: FabricDesign) -> None:
    p = fd.plan
    table = Table(
        "tier",
        "model",
        "per plane",
        "total",
        "down",
        "up",
        "radix",
        title=f"{p.fabric} fabric: {p.family}, {p.tiers} tiers, {p.planes} plane(s) of "
        f"{p.ports_per_host} x {p.speed_gbps}G per {p.host_kind}",
        title_justify="left",
    )
    for t in p.switch_tiers:
        table.add_row(
            t.role,
            t.model,
            f"{t.count:,}",
            f"{t.count * p.planes:,}",
            str(t.down),
            str(t.up),
            str(t.radix),
        )
    console.print(table)
    links = ", ".join(
        f"{name.split('.')[-1]} {n:,} ({m})"
        for (name, n), m in zip(fd.bom.links_per_tier, p.media, strict=True)
    )
    bis = p.bisection_bps * p.planes / 1e12
    console.print(
        f"links: {links}\n"
        f"switches {fd.bom.switches:,}, transceivers {fd.bom.transceivers:,}, "
        f"fibres {fd.bom.fibers:,}, power {fd.bom.power_w / 1e3:,.1f} kW, "
        f"indicative cost ${fd.bom.cost_usd / 1e6:,.2f}M, bisection {bis:,.1f} Tb/s, "
        f"{p.ecmp_paths()} equal-cost paths per plane"
    )


def _options(console: Console, fd: FabricDesign) -> None:
    if not fd.options:
        return
    table = Table(
        "option",
        "switches",
        "links",
        "power kW",
        "cost $M",
        "bisection/host",
        "paths",
        title=f"{fd.name}: options compared",
        title_justify="left",
    )
    infeasible = []
    for o in fd.options:
        if o.infeasible:
            infeasible.append(o)
            continue
        label = (
            f"{o.label} ({o.tiers} tiers, {o.planes} x {o.speed_gbps}G)" if o.chosen else o.label
        )
        table.add_row(
            label,
            f"{o.switches:,}",
            f"{o.links:,}",
            f"{o.power_w / 1e3:,.0f}",
            f"{o.cost_usd / 1e6:,.1f}",
            f"{o.bisection_per_host_gbps:g}G",
            str(o.ecmp_paths),
            style="bold" if o.chosen else "",
        )
    console.print(table)
    for o in infeasible:
        console.print(f"  [dim]{o.label}: not buildable: {o.infeasible}[/]")


def design_summary(console: Console, design: Design) -> None:
    c = design.spec.compute
    console.print(
        f"[bold]{design.spec.name}[/]: {c.accelerators:,} accelerators in "
        f"{c.nodes:,} nodes, scale-up domain {c.scale_up.domain_size}"
    )
    for fd in design.fabrics:
        _plan(console, fd)
        _options(console, fd)
    problems = [f for f in design.findings if f.severity is not Severity.INFO]
    if problems:
        findings(console, problems)
    else:
        console.print(f"[green]all {len(design.findings)} checks passed[/]")


def timings(console: Console, design: Design) -> None:
    console.print("stage times: " + ", ".join(f"{s} {t:.2f}s" for s, t in design.timings_s))
