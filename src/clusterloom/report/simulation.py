"""The simulation report: one self-contained HTML page (inline CSS, SVG and one inline PNG; no
scripts, fonts or links to fetch), deterministic for given runs.

Sections: the comparison of transports (finished flows, completion, flow completion time
percentiles, completion over the ideal bound); the CDF of flow completion times, one line per
transport; the largest link utilisation over time per transport, failures marked; the
utilisation of the watched links over time as a heat map for one transport. Text from the user
(spec name, transport names, failure labels) is HTML-escaped.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict, Unpack

import numpy as np
from numpy.typing import NDArray

from clusterloom.report._html import CSS, DASH, esc, table, td, toc
from clusterloom.report._svg import heatmap_svg, index_ticks
from clusterloom.sim.flow.results import (
    IDEAL,
    Run,
    Utilisation,
    Window,
    grid,
    time_window,
    utilisation,
)
from clusterloom.sim.flow.run import Compared, Failure, compare, fmt_time, summarize
from clusterloom.units import PS_PER_US, to_ms
from clusterloom.workload.heatmap import _RAMP, png

if TYPE_CHECKING:
    from clusterloom.sim.predict import PacketOutcome, Prediction

__all__ = ["render_simulation", "simulation_parts", "simulation_section", "window_of"]

#: Line colours of the transports, in the order the runs are given (then repeated).
COLOURS = ("#2563eb", "#db2777", "#059669", "#d97706", "#7c3aed", "#475569")
#: Points per CDF line and bins of the utilisation time series.
CDF_POINTS = 400
SERIES_BINS = 400
#: Rows (groups of consecutive watched links) of the heat map at most.
HEAT_ROWS = 128

_W, _H = 760.0, 300.0
_L, _R, _T, _B = 64.0, 150.0, 14.0, 44.0  # margins: left, right (legend), top, bottom


def _f(x: float) -> str:
    return f"{x:.1f}"


def _ms(ps: float) -> str:
    return DASH if math.isnan(ps) else f"{to_ms(ps):,.3f}"


def _colour(i: int) -> str:
    return COLOURS[i % len(COLOURS)]


# --- axes ---------------------------------------------------------------------------------


def _label(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 10 else f"{v:g}"


def _linear_ticks(lo: float, hi: float) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / 5
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


class _Axes:
    """Maps data to the plot area; x linear or log10, y linear."""

    def __init__(self, x_lo: float, x_hi: float, y_hi: float, log_x: bool) -> None:
        self.log_x = log_x
        if log_x:
            x_lo, x_hi = math.log10(x_lo), math.log10(x_hi)
        if x_hi <= x_lo:
            x_hi = x_lo + 1
        self.x_lo, self.x_hi, self.y_hi = x_lo, x_hi, y_hi

    def x(self, v: NDArray[np.float64]) -> NDArray[np.float64]:
        t = np.log10(v) if self.log_x else v
        return _L + (t - self.x_lo) / (self.x_hi - self.x_lo) * (_W - _L - _R)

    def y(self, v: NDArray[np.float64]) -> NDArray[np.float64]:
        return _H - _B - v / self.y_hi * (_H - _T - _B)

    def x_ticks(self) -> list[float]:
        if self.log_x:
            lo, hi = math.floor(self.x_lo), math.ceil(self.x_hi)
            return [10.0**e for e in range(lo, hi + 1) if self.x_lo - 1e-9 <= e <= self.x_hi + 1e-9]
        return _linear_ticks(self.x_lo, self.x_hi)

    def frame(self, x_label: str, y_label: str) -> list[str]:
        x0, x1, y0, y1 = _L, _W - _R, _H - _B, _T
        out = [
            f'<rect x="{_f(x0)}" y="{_f(y1)}" width="{_f(x1 - x0)}" height="{_f(y0 - y1)}" '
            'fill="#fff" stroke="#cbd5e1"/>'
        ]
        for v in self.x_ticks():
            x = float(self.x(np.array([v]))[0])
            out.append(
                f'<line x1="{_f(x)}" y1="{_f(y1)}" x2="{_f(x)}" y2="{_f(y0)}" stroke="#eef2f7"/>'
                f'<text x="{_f(x)}" y="{_f(y0 + 16)}" text-anchor="middle" font-size="11" '
                f'fill="#64748b">{esc(_label(v))}</text>'
            )
        for v in _linear_ticks(0.0, self.y_hi):
            y = float(self.y(np.array([v]))[0])
            out.append(
                f'<line x1="{_f(x0)}" y1="{_f(y)}" x2="{_f(x1)}" y2="{_f(y)}" stroke="#eef2f7"/>'
                f'<text x="{_f(x0 - 6)}" y="{_f(y + 4)}" text-anchor="end" font-size="11" '
                f'fill="#64748b">{esc(_label(v))}</text>'
            )
        out.append(
            f'<text x="{_f((x0 + x1) / 2)}" y="{_f(_H - 8)}" text-anchor="middle" '
            f'font-size="12" fill="#334155">{esc(x_label)}</text>'
            f'<text transform="translate(14 {_f((y0 + y1) / 2)}) rotate(-90)" '
            f'text-anchor="middle" font-size="12" fill="#334155">{esc(y_label)}</text>'
        )
        return out


def _polyline(xs: NDArray[np.float64], ys: NDArray[np.float64], colour: str, name: str) -> str:
    points = " ".join(f"{_f(x)},{_f(y)}" for x, y in zip(xs, ys, strict=True))
    return (
        f'<polyline class="series" data-name="{esc(name)}" points="{points}" fill="none" '
        f'stroke="{colour}" stroke-width="1.8" stroke-linejoin="round"/>'
    )


def _legend(names: Sequence[str]) -> list[str]:
    out = []
    for i, name in enumerate(names):
        y = _T + 12 + 18 * i
        x = _W - _R + 14
        out.append(
            f'<line x1="{_f(x)}" y1="{_f(y - 4)}" x2="{_f(x + 18)}" y2="{_f(y - 4)}" '
            f'stroke="{_colour(i)}" stroke-width="2.5"/>'
            f'<text x="{_f(x + 24)}" y="{_f(y)}" font-size="12" fill="#0f172a">{esc(name)}</text>'
        )
    return out


def _svg(parts: Sequence[str], label: str, svg_id: str) -> str:
    body = "\n".join(parts)
    return (
        f'<svg id="{esc(svg_id)}" viewBox="0 0 {_W:.0f} {_H:.0f}" role="img" '
        f'aria-label="{esc(label)}">\n{body}\n</svg>'
    )


# --- pictures -----------------------------------------------------------------------------


def fct_cdf_svg(runs: Sequence[Run]) -> str:
    """The CDF of flow completion times in µs, one line per transport; the fraction is of all
    flows, so unfinished flows keep a line below 1. The x axis is logarithmic when the times
    span more than a factor of 20."""
    fcts: list[NDArray[np.float64]] = []
    for r in runs:
        fct = r.result.fct_ps
        fcts.append(np.sort(fct[fct >= 0]).astype(np.float64) / PS_PER_US)
    done = [f for f in fcts if f.size]
    if not done:
        return '<p class="muted">No flow finished.</p>'
    lo = min(float(f[0]) for f in done)
    hi = max(float(f[-1]) for f in done)
    log_x = lo > 0 and hi / lo > 20
    if log_x:
        lo, hi = 10.0 ** math.floor(math.log10(lo)), 10.0 ** math.ceil(math.log10(hi))
    else:
        lo = 0.0
        hi = hi * 1.05 if hi > 0 else 1.0
    ax = _Axes(lo, hi, 1.0, log_x)
    parts = ax.frame("flow completion time (µs)" + (", log scale" if log_x else ""), "fraction")
    for i, (r, f) in enumerate(zip(runs, fcts, strict=True)):
        n = r.result.fct_ps.shape[0]
        if f.size == 0 or n == 0:
            continue
        k = np.unique(np.linspace(0, f.size - 1, min(f.size, CDF_POINTS)).round().astype(int))
        xs = np.repeat(f[k], 2)
        ys = np.column_stack([k / n, (k + 1) / n]).reshape(-1)
        xs = np.concatenate([[f[0]], xs])
        ys = np.concatenate([[0.0], ys])
        parts.append(_polyline(ax.x(xs), ax.y(ys), _colour(i), r.transport))
    parts += _legend([r.transport for r in runs])
    return _svg(parts, "CDF of flow completion times per transport", "fct-cdf")


def utilisation_svg(
    runs: Sequence[Run],
    util: Sequence[Utilisation],
    failures: Sequence[Failure],
    window: Window,
    compared: Sequence[Compared] = (),
) -> str:
    """The largest link utilisation over ``window``, one line per transport (the maximum over
    each of :data:`SERIES_BINS` bins, so peaks survive thinning); failures as vertical lines; a
    run that goes on past the window is marked at the right edge with its end (and the
    assumption that drives it)."""
    edges = grid(window.end_ps, SERIES_BINS)
    ax = _Axes(0.0, edges[-1] / PS_PER_US, 1.0, False)
    parts = ax.frame("time (µs)", "max link utilisation")
    parts[0] = parts[0].replace(
        "<rect ", f'<rect class="plot" data-x-end-us="{edges[-1] / PS_PER_US:g}" ', 1
    )
    mids = np.repeat(edges / PS_PER_US, 2)[1:-1]
    for i, (r, u) in enumerate(zip(runs, util, strict=True)):
        ys = np.repeat(u.binned_max(edges), 2)
        parts.append(_polyline(ax.x(mids), ax.y(ys), _colour(i), r.transport))
    for f in failures:
        for t, what in ((f.start_ps, "down"), (f.end_ps, "up")):
            if t is None or t > edges[-1]:
                continue
            x = float(ax.x(np.array([t / PS_PER_US]))[0])
            parts.append(
                f'<line class="failure" x1="{_f(x)}" y1="{_f(_T)}" x2="{_f(x)}" '
                f'y2="{_f(_H - _B)}" stroke="#b91c1c" stroke-dasharray="4 3"/>'
                f'<text x="{_f(x + 3)}" y="{_f(_T + 11)}" font-size="11" fill="#b91c1c">'
                f"{esc(f.label)} {what}</text>"
            )
    names = [r.transport for r in runs]
    for k, (name, end) in enumerate(window.beyond):
        i = names.index(name)
        y = _T + 30 + 16 * k
        parts.append(
            f'<text class="beyond" x="{_f(_W - _R - 6)}" y="{_f(y)}" text-anchor="end" '
            f'font-size="11" fill="{_colour(i)}">{esc(name)} goes on to '
            f"{esc(fmt_time(end))} \u2192</text>"
        )
    parts += _legend(names)
    return _svg(parts, "largest link utilisation over time per transport", "util-series")


def _linear_colours(cells: NDArray[np.float64]) -> NDArray[np.uint8]:
    """RGB of values in [0, 1] on the viridis-like ramp of the traffic heat map, linearly."""
    pos = np.clip(cells, 0.0, 1.0) * (len(_RAMP) - 1)
    i = np.minimum(pos.astype(int), len(_RAMP) - 2)
    frac = (pos - i)[..., None]
    rgb: NDArray[np.float64] = _RAMP[i] * (1 - frac) + _RAMP[i + 1] * frac
    return np.rint(rgb).astype(np.uint8)


def _heat_cells(u: Utilisation, rows: int = HEAT_ROWS) -> tuple[NDArray[np.float64], int]:
    """Watched links by load, the busiest (time-averaged over the bins) at the top, ties by
    link id, grouped into at most ``rows`` rows of consecutive ranks (the largest of each
    group), down; time bins across; and the links per row. Ordered by load, the picture reads
    as the spread of load over the links instead of a block of id order."""
    load = u.matrix.mean(axis=0) if u.matrix.shape[0] else np.zeros(u.matrix.shape[1])
    order = np.lexsort((u.watch_links, -load))
    m = u.matrix.T[order]  # links x bins, busiest first
    size = max(1, -(-m.shape[0] // rows))
    n = -(-m.shape[0] // size)
    padded = np.zeros((n * size, m.shape[1]))
    padded[: m.shape[0]] = m
    return padded.reshape(n, size, m.shape[1]).max(axis=1), size


def heatmap_png(u: Utilisation, rows: int = HEAT_ROWS) -> bytes:
    """The cells of :func:`_heat_cells` as a PNG, linear colour from 0 to 1."""
    cells, _ = _heat_cells(u, rows)
    return png(_linear_colours(cells), scale=1)


def _heatmap(runs: Sequence[Run], util: Sequence[Utilisation]) -> str:
    pick = next(
        (
            (r, u)
            for r, u in zip(runs, util, strict=True)
            if r.transport != IDEAL and u.matrix.size and u.matrix.max() > 0
        ),
        None,
    )
    if pick is None:
        return (
            '<p class="muted">No watched link carried traffic in the window drawn (the fabric '
            "was too large to watch every link, or only the ideal transport ran).</p>"
        )
    r, u = pick
    cells, size = _heat_cells(u)
    end_us = u.bin_edges_ps[-1] / PS_PER_US
    x_ticks = [
        (float(t / end_us), f"{t:,.0f}" if t >= 10 else f"{t:g}")
        for t in _linear_ticks(0.0, end_us)
        if t <= end_us * (1 + 1e-9)
    ]
    y_ticks = [(f, f"{i * size:,}") for f, i in index_ticks(cells.shape[0], 6)]
    svg = heatmap_svg(
        heatmap_png(u),
        svg_id="util-heatmap",
        label="utilisation heat map of " + r.transport,
        size=(560.0, 300.0),
        x_label="time (µs)",
        y_label="watched links by load rank",
        x_ticks=x_ticks,
        y_ticks=y_ticks,
        scale_ticks=[(v, f"{v:.0%}") for v in (0.0, 0.25, 0.5, 0.75, 1.0)],
        scale_title="utilisation",
    )
    caption = (
        f"{r.transport}: utilisation of {u.matrix.shape[1]:,} watched links, ranked by their "
        f"time-averaged load (the busiest at the top; rows of {size:,} consecutive ranks, the "
        "busiest of each) over "
        f"{u.bins} time bins of {(u.bin_edges_ps[1] - u.bin_edges_ps[0]) / PS_PER_US:,.1f} µs, "
        "time-averaged in each bin."
    )
    return f"<figure>{svg}<figcaption>{esc(caption)}</figcaption></figure>"


# --- page ---------------------------------------------------------------------------------


def _comparison(compared: Sequence[Compared]) -> str:
    stated = any(c.assumption for c in compared)
    headers = [
        ("Transport", False),
        ("Finished", True),
        ("Completion ms", True),
        ("FCT p50 ms", True),
        ("FCT p99 ms", True),
        ("FCT max ms", True),
        ("vs ideal", True),
    ]
    if stated:
        headers.append(("Reaction to the failure (assumed)", False))
    rows = []
    for c in compared:
        s = c.summary
        cells = (
            td(esc(s.transport))
            + td(f"{s.finished:,}/{s.flows:,}", True)
            + td(DASH if c.completion_ps is None else _ms(c.completion_ps), True)
            + td(_ms(s.fct_p50_ps), True)
            + td(_ms(s.fct_p99_ps), True)
            + td(_ms(s.fct_max_ps), True)
            + td(DASH if c.vs_ideal is None else f"{c.vs_ideal:,.2f}{chr(0xD7)}", True)
        )
        if stated:
            cells += td(esc(c.assumption or DASH), css="reason")
        rows.append(f"<tr>{cells}</tr>")
    return table(headers, rows, table_id="comparison", css_class="comparison")


#: The packet engine's counters of a run, as (column, attribute of ``PacketResult``).
COUNTERS = (
    ("Drops", "drops"),
    ("Trims", "trims"),
    ("ECN marks", "marks"),
    ("Pauses", "pauses"),
    ("Largest queue B", "max_queue_bytes"),
    ("Events", "events"),
)


def _counters(outcomes: Sequence[PacketOutcome]) -> str:
    headers = [("Transport", False), ("Retransmissions", True)]
    headers += [(label, True) for label, _ in COUNTERS]
    rows = [
        "<tr>"
        + td(esc(o.name))
        + td(f"{int(o.result.retransmissions.sum()):,}", True)
        + "".join(td(f"{getattr(o.result, key):,}", True) for _, key in COUNTERS)
        + "</tr>"
        for o in outcomes
    ]
    return table(headers, rows, table_id="packet-counters", css_class="comparison")


def window_of(runs: Sequence[Run], failures: Sequence[Failure] = ()) -> Window:
    """The time window the pictures draw (``results.time_window`` with the failures kept in
    view)."""
    marks = [t for f in failures for t in (f.start_ps, f.end_ps) if t is not None]
    return time_window(runs, marks)


#: Per engine: what the page is, the model in one sentence (the footer), and what the
#: utilisation section shows when the engine records no link loads (None: it records them).
ENGINES = {
    "flow": (
        "flow-level simulation",
        "Fluid, max-min fair flow-level model with packet headers, path latency, store-and-forward "
        "and each transport's start-up (docs/sim.md); no queues, loss or congestion-control "
        "dynamics.",
        None,
    ),
    "packet": (
        "packet-level simulation",
        "Packet-level model: output-queued switches with ECN, drop-tail, trimming or PFC, "
        "transports as per-flow state machines; the ideal bound is the flow-level engine's "
        "(every flow at its fair share) on the same traffic and failures.",
        "The packet engine records no link utilisation over time (it counts drops, trims, "
        "ECN marks, pauses and the largest queue of each run instead: Packet-level counters): "
        "this section has no pictures, and utilisation.parquet and link_utilisation.parquet "
        "have no rows for its transports.",
    ),
}


def simulation_parts(
    runs: Sequence[Run],
    failures: Sequence[Failure] = (),
    *,
    util: Sequence[Utilisation] | None = None,
    traffic_label: str = "",
    compared: Sequence[Compared] | None = None,
    engine: str = "flow",
    outcomes: Sequence[PacketOutcome] = (),
) -> list[tuple[str, str, str]]:
    """The parts of a simulation's rendering, as (id, title, HTML): the comparison, the flow
    completion times, the link utilisation (or, for an engine that records none, what it
    lacks), and the packet engine's counters of its ``outcomes`` when given.
    ``simulation.html`` and ``report.html``'s simulation section both draw these.

    ``compared`` is the comparison the terminal shows (``run.compare``, with the transports'
    assumptions); without it the runs are summarised here, without assumptions. ``util`` are
    the runs' utilisations on one grid when already computed (``results.utilisations``); the
    pictures draw only the time :func:`window_of` the runs and recompute them on it when it is
    shorter."""
    runs = [Run(*r) for r in runs]
    if compared is None:
        summaries = [
            summarize(r.transport, r.result, r.traffic.barrier if r.traffic.barrier.any() else None)
            for r in runs
        ]
        compared = compare(summaries, None, failures)
    window = window_of(runs, failures)
    lacking = ENGINES[engine][2]
    if lacking is None and (
        util is None or (util and int(util[0].bin_edges_ps[-1]) > max(window.end_ps, 1) * 1.001)
    ):
        edges = grid(window.end_ps, util[0].bins if util else 100)
        util = [utilisation(r.result, r.capacity, edges_ps=edges) for r in runs]
    flows = len(runs[0].traffic) if runs else 0
    lead = (
        f"{traffic_label + ': ' if traffic_label else ''}{flows:,} flows, "
        f"{len(runs)} transport{'s' if len(runs) != 1 else ''}"
        + (f"; failures: {', '.join(f.label for f in failures)}" if failures else "; no failures")
        + ". Completion is the last finish; it and its ratio to the ideal are shown only when "
        "every flow finished."
        + (
            " Engine: packet level; the ideal row is the flow-level bound."
            if engine == "packet"
            else ""
        )
    )
    by_name = {c.transport: c for c in compared}
    notes = []
    for tname, end in window.beyond:
        c = by_name.get(tname)
        why = (
            f" Its figures are driven by an assumption: it {c.assumption}."
            if c and c.assumption
            else ""
        )
        notes.append(
            f"<li><b>{esc(tname)}</b> goes on to {esc(fmt_time(end))}, past the "
            f"{esc(fmt_time(window.end_ps))} drawn below (the other transports were done "
            f"by then).{esc(why)}</li>"
        )
    beyond = f'<ul class="assumptions">{"".join(notes)}</ul>' if notes else ""
    window_text = (
        f"Drawn from 0 to {fmt_time(window.end_ps)}: the runs that ended within "
        f"10{chr(0xD7)} the first one to end, and the failures in that time."
    )
    if lacking is not None:
        loads = f'<p class="muted">{esc(lacking)}</p>'
    else:
        assert util is not None
        loads = (
            f"<figure>{utilisation_svg(runs, util, failures, window, compared)}<figcaption>The "
            "busiest link's utilisation (load over nominal capacity) at each moment; dashed lines: "
            f"failures and recoveries. {esc(window_text)}</figcaption></figure>\n"
            f'<h3 id="watched-links">Watched links</h3>\n{_heatmap(runs, util)}'
        )
    return [
        (
            "comparison-section",
            "Transports compared",
            f'<p class="lead">{esc(lead)}</p>\n{_comparison(compared)}{beyond}',
        ),
        (
            "fct",
            "Flow completion times",
            f"<figure>{fct_cdf_svg(runs)}<figcaption>Fraction of all flows finished within a "
            "given time after they started.</figcaption></figure>",
        ),
        ("utilisation", "Link utilisation over time", loads),
    ] + ([("counters", "Packet-level counters", _counters(outcomes))] if outcomes else [])


class Drawing(TypedDict, total=False):
    """What :func:`simulation_parts` takes besides the runs and failures."""

    util: Sequence[Utilisation] | None
    traffic_label: str
    compared: Sequence[Compared] | None
    engine: str
    outcomes: Sequence[PacketOutcome]


def render_simulation(
    spec_name: str,
    runs: Sequence[Run],
    failures: Sequence[Failure] = (),
    **drawing: Unpack[Drawing],
) -> str:
    """The simulation report of ``runs`` by ``engine`` as one self-contained HTML page: the
    parts of :func:`simulation_parts` (``drawing``: its keyword arguments)."""
    sections = simulation_parts(runs, failures, **drawing)
    what, model, _ = ENGINES[drawing.get("engine", "flow")]
    name = esc(spec_name)
    body = "\n".join(
        f'<section id="{sid}"><h2>{esc(title)}</h2>\n{html}</section>'
        for sid, title, html in sections
    )
    contents = toc([(sid, title) for sid, title, _ in sections])
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{name} — clusterloom simulation</title>\n"
        f"<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
        f"<header><h1>{name}<small>clusterloom {what}</small></h1></header>\n"
        f"{contents}\n{body}\n"
        f"<footer>{esc(model)}</footer>\n"
        "</main>\n</body>\n</html>\n"
    )


def simulation_section(prediction: Prediction) -> str:
    """The simulation section of ``report.html``: the parts of :func:`simulation_parts` of a
    prediction kept with its runs, under one heading (the files are in ``simulation/``)."""
    from clusterloom.sim.predict import PacketPrediction

    scenario = prediction.scenario
    parts = simulation_parts(
        prediction.runs,
        scenario.failures,
        traffic_label=scenario.traffic_kind,
        compared=prediction.compared,
        engine=scenario.engine,
        outcomes=prediction.outcomes if isinstance(prediction, PacketPrediction) else (),
    )
    model = ENGINES[scenario.engine][1]
    body = "\n".join(
        f'<div id="sim-{sid}"><h3>{esc(title)}</h3>\n{html}</div>' for sid, title, html in parts
    )
    lead = f"The spec's scenario: {scenario}. {model}"
    return (
        f'<section id="simulation"><h2>Simulation</h2>\n<p class="lead">{esc(lead)} The '
        "files are in <code>simulation/</code>.</p>\n"
        f"{body}</section>"
    )
