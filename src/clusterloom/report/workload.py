"""The workload section of the report: step time in parts (compute, bubble, optimizer, exposed
communication per dimension, each beside its bandwidth bound), MFU and achieved TFLOP/s, memory
per stage, communication by dimension, the biggest
costs and the traffic matrix as a heat map (an inline PNG in an SVG with axes and a colour
scale)."""

from __future__ import annotations

import math

from clusterloom.report._html import esc, table, td
from clusterloom.report._svg import heatmap_svg, index_ticks
from clusterloom.spec import ClusterSpec
from clusterloom.units import fmt_bytes as _bytes
from clusterloom.units import ms_from_s
from clusterloom.workload import WorkloadDesign
from clusterloom.workload.heatmap import block_sums, heatmap_png


def _ms(seconds: float) -> str:
    return f"{ms_from_s(seconds):,.1f} ms"


def workload_section(spec: ClusterSpec, w: WorkloadDesign) -> str:
    assert spec.job is not None
    job, t = spec.job, w.timing
    sizes = ", ".join(f"{a} {w.layout.size(a)}" for a in w.layout.order)
    lead = (
        f"{job.model.name}: {w.shape.parameters / 1e9:,.1f}B parameters "
        f"({w.shape.active_parameters / 1e9:,.1f}B active) on {w.layout.world:,} ranks ({sizes}; "
        f"ZeRO {job.parallelism.zero}), {w.micro_batches} micro-batches of "
        f"{job.batch.micro_batch} x {job.model.sequence_length} tokens. Predicted step "
        f"{t.step_s:.3f} s = compute {t.compute_s:.3f} + pipeline bubble {t.bubble_s:.3f} + "
        f"optimizer {t.optimizer_s:.3f} + exposed communication {t.exposed_comm_s:.3f} "
        f"(collective times: {t.comm_source}); "
        f"{t.bound_step_s:.3f} s with every collective at its bandwidth bound; MFU {t.mfu:.1%} "
        f"(HFU {t.hfu:.1%}), {t.tflops_per_accelerator:,.0f} model TFLOP/s per accelerator of "
        f"{t.peak_flops / 1e12:,.0f}; roofline bound (model FLOPs at peak) "
        f"{t.ideal_step_s:.3f} s."
    )
    step_rows = [
        "<tr>"
        + td(esc(label))
        + td(_ms(seconds), True)
        + td("" if bound is None else _ms(bound), True)
        + td(f"{seconds / t.step_s:.1%}", True)
        + "</tr>"
        for label, seconds, bound in t.breakdown()
    ]
    step_table = table(
        [("Part", False), ("Predicted", True), ("Bandwidth bound", True), ("Share", True)],
        step_rows,
        table_id="workload-step",
        css_class="workload",
    )
    mem = w.memory
    mem_rows = [
        "<tr>"
        + td(str(m.stage), True)
        + td(_bytes(m.weights), True)
        + td(_bytes(m.gradients), True)
        + td(_bytes(m.optimizer), True)
        + td(_bytes(m.activations), True)
        + td(_bytes(m.total), True)
        + td(f"{m.total / mem.capacity:.0%}", True)
        + "</tr>"
        for m in sorted(mem.stages, key=lambda m: -m.total)[:4]
    ]
    mem_table = table(
        [
            ("Stage", True),
            ("Weights", True),
            ("Gradients", True),
            ("Optimizer", True),
            ("Activations", True),
            ("Total", True),
            ("Of memory", True),
        ],
        mem_rows,
        table_id="workload-memory",
        css_class="workload",
    )
    volume = w.volume_by("dim")
    dims = [
        "<tr>"
        + td(esc(dim))
        + td(_bytes(volume[dim]), True)
        + td(_ms(total), True)
        + td(_ms(exposed), True)
        + td(_ms(bound), True)
        + "</tr>"
        for dim, (total, exposed, bound) in t.by_dim().items()
    ]
    dim_table = table(
        [
            ("Dimension", False),
            ("Bytes sent / step", True),
            ("Time", True),
            ("Exposed", True),
            ("Bound", True),
        ],
        dims,
        table_id="workload-dims",
        css_class="workload",
    )
    tops = [
        "<tr>"
        + td(esc(o.op.name))
        + td(str(o.op.group_size), True)
        + td(esc(o.op.link.value))
        + td(esc(o.op.algorithm.value))
        + td(_bytes(o.op.nbytes), True)
        + td(f"{o.op.per_step:g}", True)
        + td(_ms(o.exposed_s), True)
        + td(_ms(o.bound_step_s), True)
        + "</tr>"
        for o in w.top_costs(10)
    ]
    top_table = table(
        [
            ("Collective", False),
            ("Ranks", True),
            ("Link", False),
            ("Algorithm", False),
            ("Size", True),
            ("Per step", True),
            ("Exposed", True),
            ("Bound", True),
        ],
        tops,
        table_id="workload-top",
        css_class="workload",
    )
    cells, cell = block_sums(w.matrix, w.layout.world, 256)
    positive = cells[cells > 0]
    lo, hi = (float(positive.min()), float(positive.max())) if positive.size else (0.0, 0.0)
    scale_ticks = [(0.0, _bytes(lo)), (1.0, _bytes(hi))]
    if hi > lo > 0:
        scale_ticks.insert(1, (0.5, _bytes(math.sqrt(lo * hi))))
    world = w.layout.world
    ticks = [(f, f"{i:,}") for f, i in index_ticks(world, 6)]
    picture = heatmap_svg(
        heatmap_png(w.matrix, world),
        svg_id="traffic-matrix",
        label="rank-to-rank traffic heat map",
        size=(420.0, 420.0),
        x_label="destination rank",
        y_label="source rank",
        x_ticks=ticks,
        y_ticks=ticks,
        scale_ticks=scale_ticks,
        scale_title="bytes / step (log)",
    )
    caption = (
        f"Bytes per step from rank (row) to rank (column), each cell {cell} consecutive rank(s) "
        "summed, on a log colour scale; light grey: no traffic. Scale-out per NIC port: up "
        f"to {w.nic.flows_max:,} flows to {w.nic.peers_max} peers, {_bytes(w.nic.bytes_max)} "
        "per step."
    )
    return (
        '<section id="workload"><h2>Workload</h2>\n'
        f'<p class="lead">{esc(lead)}</p>\n'
        f"<h3>Step time</h3>\n{step_table}\n"
        f"<h3>Memory per accelerator (fullest stages)</h3>\n{mem_table}\n"
        f"<h3>Communication by dimension</h3>\n{dim_table}\n"
        f"<h3>Biggest communication costs</h3>\n{top_table}\n"
        f"<h3>Traffic matrix</h3>\n<figure>{picture}<figcaption>{esc(caption)}</figcaption>"
        "</figure>\n</section>"
    )
