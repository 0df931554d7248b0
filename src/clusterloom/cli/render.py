"""Rich renderings of library artifacts for the terminal.

Text is never read as Rich markup (the consoles are made with ``markup=False``): names from a
spec may hold brackets. Styles are given as ``Text`` spans."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np
from rich.console import Console
from rich.table import Column, Table
from rich.text import Text

from clusterloom.fabric import FabricDesign
from clusterloom.findings import Finding, Severity
from clusterloom.pipeline import Design
from clusterloom.spec import ClusterSpec
from clusterloom.units import fmt_bytes as _bytes
from clusterloom.units import (
    ms_from_s,
    to_kilowatts,
    to_megawatts,
    to_ms,
    to_tbps,
    to_us,
    to_usd,
    to_watts,
)
from clusterloom.workload import WorkloadDesign

if TYPE_CHECKING:
    from clusterloom.placement import Placement
    from clusterloom.sim.flow.run import Compared, Failure
    from clusterloom.sim.flow.sweep import SweepRow
    from clusterloom.srv6.verify import Report
    from clusterloom.sweep.summary import Interval, SweepCell


def _ms(seconds: float) -> str:
    return f"{ms_from_s(seconds):,.1f}"


_COLOUR = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "green"}


def findings(console: Console, items: Iterable[Finding]) -> None:
    table = Table("severity", "code", "message", "where", title="Findings", title_justify="left")
    for f in sorted(items, key=lambda f: -f.severity.rank):
        table.add_row(Text(f.severity.value, _COLOUR[f.severity]), f.code, f.message, f.where)
    console.print(table)


def _plan(console: Console, design: Design, fd: FabricDesign) -> None:
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
    bom = design.bom
    share = bom.share(fd.name)
    if bom.cabled:
        links = ", ".join(f"{name.split('.')[-1]} {n:,}" for name, n in fd.bom.links_per_tier)
    else:
        links = ", ".join(
            f"{name.split('.')[-1]} {n:,} ({m}, assumed)"
            for (name, n), m in zip(fd.bom.links_per_tier, p.media, strict=True)
        )
    bis = to_tbps(p.bisection_bps * p.planes)
    console.print(
        f"links: {links}\n"
        f"switches {share.switches:,}, transceivers {share.transceivers:,}, "
        f"fibres {share.fibers:,}, power {to_kilowatts(to_watts(share.power_mw)):,.1f} kW, "
        f"indicative cost ${to_usd(share.cost_cents) / 1e6:,.2f}M ({bom.label}), "
        f"bisection {bis:,.1f} Tb/s, {p.ecmp_paths()} equal-cost paths per plane"
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
        title=f"{fd.name}: options compared, each priced with assumed media (an estimate)",
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
            f"{to_kilowatts(o.power_w):,.0f}",
            f"{o.cost_usd / 1e6:,.1f}",
            f"{o.bisection_per_host_gbps:g}G",
            str(o.ecmp_paths),
            style="bold" if o.chosen else "",
        )
    console.print(table)
    for o in infeasible:
        console.print(Text(f"  {o.label}: not buildable: {o.infeasible}", "dim"))


def _layers(stages: tuple[int, ...]) -> str:
    """``8 x 16`` when even, else ``7 + 8 x 14 + 7``."""
    if len(set(stages)) == 1:
        return f"{stages[0]} x {len(stages)}"
    middle = stages[1:-1]
    mid = f" + {middle[0]} x {len(middle)}" if middle else ""
    return f"{stages[0]}{mid} + {stages[-1]}"


def workload(console: Console, spec: ClusterSpec, w: WorkloadDesign) -> None:
    assert spec.job is not None
    job, t = spec.job, w.timing
    sizes = ", ".join(f"{a} {w.layout.size(a)}" for a in w.layout.order)
    console.print(
        Text.assemble(
            (job.model.name, "bold"),
            f": {w.shape.parameters / 1e9:,.1f}B parameters "
            f"({w.shape.active_parameters / 1e9:,.1f}B active), {w.layout.world:,} ranks "
            f"({sizes}; ZeRO {job.parallelism.zero}), {w.micro_batches} micro-batches of "
            f"{job.batch.micro_batch}",
        )
    )
    table = Table(
        "dimension",
        "bytes sent / step",
        "time ms",
        "exposed ms",
        "bound ms",
        title="Communication per step",
        title_justify="left",
    )
    volume = w.volume_by("dim")
    for dim, (total, exposed, bound) in t.by_dim().items():
        table.add_row(dim, _bytes(volume[dim]), _ms(total), _ms(exposed), _ms(bound))
    console.print(table)
    links = ", ".join(f"{k} {_bytes(v)}" for k, v in w.volume_by("link").items())
    console.print(f"by link class: {links}")
    console.print(
        f"scale-out per NIC port: up to {w.nic.flows_max:,} flows to {w.nic.peers_max} peers, "
        f"{_bytes(w.nic.bytes_max)} per step; {len(w.flows):,} flows in one pass of the step's "
        "collectives"
    )
    top = Table(
        "collective",
        "ranks",
        "link",
        "algorithm",
        "size",
        "per step",
        "exposed ms",
        "bound ms",
        title="Biggest communication costs",
        title_justify="left",
    )
    for o in w.top_costs(8):
        op = o.op
        top.add_row(
            op.name,
            str(op.group_size),
            op.link.value,
            op.algorithm.value,
            _bytes(op.nbytes),
            f"{op.per_step:g}",
            _ms(o.exposed_s),
            _ms(o.bound_step_s),
        )
    console.print(top)
    steps = Table(
        "part",
        "s",
        "bound s",
        title=f"Step time (collectives: {t.comm_source})",
        title_justify="left",
    )
    for label, seconds, part_bound in t.breakdown():
        steps.add_row(label, f"{seconds:.3f}", "" if part_bound is None else f"{part_bound:.3f}")
    console.print(steps)
    peak = w.memory.peak
    console.print(
        Text.assemble(
            "step time ",
            (f"{t.step_s:.3f} s", "bold"),
            f"; MFU {t.mfu:.1%} (HFU {t.hfu:.1%}), {t.tflops_per_accelerator:,.0f} model "
            f"TFLOP/s per accelerator of {t.peak_flops / 1e12:,.0f}; with every collective at "
            f"its bandwidth bound {t.bound_step_s:.3f} s; roofline bound (model FLOPs at peak) "
            f"{t.ideal_step_s:.3f} s; stages of {_layers(t.stage_layers)} layers; memory "
            f"{_bytes(peak.total)} of {_bytes(w.memory.capacity)} (stage {peak.stage})",
        )
    )
    problems = [f for f in w.findings if f.severity is not Severity.INFO]
    if problems:
        findings(console, problems)


def design_summary(console: Console, design: Design) -> None:
    c = design.spec.compute
    console.print(
        Text.assemble(
            (design.spec.name, "bold"),
            f": {c.accelerators:,} accelerators in {c.nodes:,} nodes, scale-up domain "
            f"{c.scale_up.domain_size}",
        )
    )
    if design.workload is not None:
        workload(console, design.spec, design.workload)
    for fd in design.fabrics:
        _plan(console, design, fd)
        _options(console, fd)
    if design.placement is not None:
        placement(console, design.placement)
    if design.cabling is not None:
        cabling(console, design)
    else:
        bom_total(console, design)
    problems = [f for f in design.findings if f.severity is not Severity.INFO]
    if problems:
        findings(console, problems)
    else:
        console.print(Text(f"all {len(design.findings)} checks passed", "green"))


def timings(console: Console, design: Design) -> None:
    console.print("stage times: " + ", ".join(f"{s} {t:.2f}s" for s, t in design.timings_s))


def simulation(
    console: Console,
    compared: Sequence[Compared],
    traffic: str,
    flows: int,
    failures: tuple[Failure, ...],
) -> None:
    """The comparison ``simulation.html`` shows (``run.compare``): completion and its ratio to
    the ideal only when every flow finished, then the assumed failure reactions."""
    title = f"{traffic}: {flows:,} flows" + (
        f", failures: {', '.join(f.label for f in failures)}" if failures else ""
    )
    table = Table(
        Column("transport", no_wrap=True),
        "finished",
        "completion ms",
        "FCT p50 ms",
        "FCT p99 ms",
        "FCT max ms",
        "vs ideal",
        title=title,
        title_justify="left",
    )
    for c in compared:
        s = c.summary
        table.add_row(
            s.transport,
            f"{s.finished:,}/{s.flows:,}",
            "-" if c.completion_ps is None else f"{to_ms(c.completion_ps):,.3f}",
            _ms_ps(s.fct_p50_ps),
            _ms_ps(s.fct_p99_ps),
            _ms_ps(s.fct_max_ps),
            "-" if c.vs_ideal is None else f"{c.vs_ideal:,.2f}x",
        )
    console.print(table)
    for c in compared:
        if c.assumption:
            console.print(f"{c.transport}: {c.assumption}")


def _ms_ps(ps: float) -> str:
    return "-" if ps != ps else f"{to_ms(ps):,.3f}"  # NaN: no flow finished


def sweep(console: Console, rows: list[SweepRow], tier: str, traffic: str, flows: int) -> None:
    """Per transport: slowdown over every single-link failure of the tier, then the worst."""
    table = Table(
        Column("transport", no_wrap=True),
        "links",
        "mean slowdown",
        "p99 slowdown",
        "worst",
        "worst link",
        "stuck",
        title=f"{traffic}: {flows:,} flows, every {tier} link failed in turn",
        title_justify="left",
    )
    for name in dict.fromkeys(r.transport for r in rows):
        mine = [r for r in rows if r.transport == name]
        slow = np.array([r.slowdown for r in mine])
        finite = slow[np.isfinite(slow)]
        worst = max(mine, key=lambda r: (r.slowdown, -r.link))
        table.add_row(
            name,
            f"{len(mine):,}",
            f"{finite.mean():.3f}x" if finite.size else "-",
            f"{np.percentile(finite, 99):.3f}x" if finite.size else "-",
            f"{worst.slowdown:.3f}x",
            str(worst.link),
            str(sum(1 for r in mine if r.unfinished)),
        )
    console.print(table)


def placement(console: Console, p: Placement) -> None:
    """Halls (racks, power against budget), link lengths and the solver's figures."""
    f, per_hall = p.floor, p.halls
    racks, power, free = per_hall.racks, per_hall.power_w, per_hall.free
    table = Table(
        "hall",
        Column("racks", justify="right"),
        Column("free positions", justify="right"),
        Column("power", justify="right"),
        Column("budget", justify="right"),
        title=f"Placement: {p.n_racks:,} racks on {f.n_halls} hall(s) of "
        f"{len(f.building_names)} building(s)",
        title_justify="left",
    )
    for h in range(f.n_halls):
        budget = f.hall_power_w[h]
        table.add_row(
            f.hall_names[h],
            f"{int(racks[h]):,}",
            f"{int(free[h]):,}",
            f"{to_megawatts(power[h]):,.2f} MW",
            "no limit" if np.isinf(budget) else f"{to_megawatts(budget):,.2f} MW",
        )
    console.print(table)
    tiers = ("host-leaf", "leaf-spine", "spine-core")
    lengths = Table(
        "fabric",
        "links",
        Column("count", justify="right"),
        Column("floor metres", justify="right"),
        Column("longest", justify="right"),
        Column("leave their hall", justify="right"),
        title="Link lengths over the floor",
        title_justify="left",
    )
    for x in p.lengths:
        lengths.add_row(
            x.fabric,
            tiers[x.tier - 1],
            f"{x.links:,}",
            f"{x.total_m:,.0f} m",
            f"{x.longest_m:,.1f} m",
            f"{x.inter_hall:,}",
        )
    console.print(lengths)
    console.print(
        f"objective {p.objective:,.0f} link-metres, lower bound {p.bound:,.0f}, gap "
        f"{p.gap * 100:.2f}% over {len(p.solves)} CP-SAT model(s), {p.bound_quality} bound"
        + (f": {p.bound_note}" if p.bound_note else "")
    )
    halls = [x for x in p.solves if x.name != "campus"]
    campus = [x for x in p.solves if x.name == "campus"]
    if campus and halls:
        obj = sum(x.objective for x in halls)
        bound = sum(x.bound for x in halls)
        hall_gap = 0.0 if obj <= 0 else (obj - bound) / obj
        from clusterloom.placement.solve import bound_quality

        console.print(
            f"campus (hall assignment) gap {campus[0].gap * 100:.2f}% "
            f"({campus[0].bound_quality} bound), halls together {hall_gap * 100:.2f}% "
            f"({bound_quality(hall_gap)} bound)"
        )


def cabling(console: Console, design: Design) -> None:
    """Links by medium (lengths, structured share), trunks, fill and the design's BOM total."""
    c = design.cabling
    assert c is not None
    n, by = c.totals, c.by_medium
    table = Table(
        "medium",
        Column("links", justify="right"),
        Column("structured", justify="right"),
        Column("metres", justify="right"),
        Column("longest", justify="right"),
        title=f"Cabling: {n.realized:,} of {c.n_links:,} links realized, "
        f"{n.trunks:,} trunks, {n.backbones:,} backbones, {n.panels:,} panels",
        title_justify="left",
    )
    for row in zip(by.names, by.links, by.structured, by.metres, by.longest, strict=True):
        name, links, structured, metres, longest = row
        table.add_row(
            name, f"{links:,}", f"{structured:,}", f"{metres:,.0f} m", f"{longest:,.1f} m"
        )
    console.print(table)
    fill = c.seg_fill
    if fill.shape[0]:
        s = int(np.argmax(fill))
        console.print(
            f"fullest pathway {c.pathways.segment_name(s)} at {fill[s]:.1%}; "
            f"{c.rerouted:,} trunk or cable routes moved off full trays"
        )
    for level in ("building", "hall"):
        between = c.between_buildings if level == "building" else c.between_halls
        if between:
            console.print(
                f"fibres between {level}s: "
                + "; ".join(f"{a}-{b} {f:,} ({t:,} cables)" for (a, b), (t, f) in between.items()),
                soft_wrap=True,
            )
            break
    bom_total(console, design)


def bom_total(console: Console, design: Design) -> None:
    """The design's one total (``Design.bom``), as ``bom.csv``, ``design.json`` and
    ``report.html`` give it."""
    bom = design.bom
    console.print(
        Text.assemble(
            f"bill of materials, {bom.label}: {bom.switches:,} switches, "
            f"{bom.transceivers:,} transceivers, ",
            (f"${to_usd(bom.cost_cents):,.2f}, {to_watts(bom.power_mw):,.1f} W", "bold"),
        ),
        soft_wrap=True,
    )


def sweep_cells(console: Console, cells: Sequence[SweepCell]) -> None:
    """Per variant, failure and transport: seeds, completed, completion and p99 FCT with their
    95 % Student t intervals over seeds (``sweep.summary``)."""
    table = Table(
        "variant",
        "failure",
        Column("transport", no_wrap=True),
        Column("seeds", justify="right"),
        Column("completed", justify="right"),
        Column("completion ms", justify="right"),
        Column("p99 FCT us", justify="right"),
        Column("vs ideal", justify="right"),
        title="sweep: mean ± 95% Student t interval over seeds",
        title_justify="left",
    )

    def pm(iv: Interval, scale: float, digits: int) -> str:
        if iv.n == 0:
            return "-"
        mean = f"{iv.mean * scale:,.{digits}f}"
        return mean if iv.n < 2 else f"{mean} ± {iv.half * scale:,.{digits}f}"

    for c in cells:
        table.add_row(
            c.variant,
            c.failure,
            c.transport,
            f"{c.runs:,}",
            f"{c.complete:,}",
            pm(c.completion_ps, to_ms(1.0), 3),
            pm(c.fct_p99_ps, to_us(1.0), 1),
            pm(c.vs_ideal, 1.0, 3),
        )
    console.print(table)


def lab_report(report: Report, verbose: bool, out: Console, err: Console) -> int:
    """Print a lab run's checks (each held one with ``verbose``), its failures and the count;
    the exit code: 1 when a check failed."""
    if verbose:
        for line in report.checked:
            out.print(f"  ok: {line}", soft_wrap=True)
    for line in report.problems:
        err.print(f"failed: {line}", soft_wrap=True)
    out.print(
        f"{len(report.checked):,} checks held, {len(report.problems):,} failed", soft_wrap=True
    )
    return 1 if report.problems else 0
