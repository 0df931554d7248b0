"""``sweep.html``: a sweep's summary page, one self-contained file in the sweep's directory.

Per spec variant: a table of every (failure, transport) over its seeds (runs, runs that
finished every flow, completion, p99 FCT and completion over the ideal bound, each a mean with
its 95 % Student t interval over seeds, ``sweep.summary``), and a chart per failure of each
transport's mean completion with its interval as an error bar. Same cells, same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from clusterloom.report._html import CSS, DASH, esc, table, td, toc
from clusterloom.report._svg import FONT
from clusterloom.units import to_ms, to_us

if TYPE_CHECKING:
    from clusterloom.sweep.summary import Interval, SweepCell

__all__ = ["render_sweep"]

_BAR_H, _GAP, _LEFT, _W = 18.0, 6.0, 150.0, 640.0
_COLOURS = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2")


def _pm(iv: Interval, scale: float, digits: int, unit: str) -> str:
    if iv.n == 0 or math.isnan(iv.mean):
        return DASH
    mean = f"{iv.mean * scale:,.{digits}f}"
    if math.isnan(iv.half):
        return f"{mean} {unit} (one seed)"
    return f"{mean} ± {iv.half * scale:,.{digits}f} {unit}"


def _table(cells: Sequence[SweepCell], sid: str) -> str:
    rows = [
        "<tr>"
        + td(esc(c.failure))
        + td(esc(c.transport))
        + td(f"{c.runs:,}", True)
        + td(f"{c.complete:,}", True, "" if c.complete == c.runs else "bad")
        + td(esc(_pm(c.completion_ps, to_ms(1.0), 3, "ms")), True)
        + td(esc(_pm(c.fct_p99_ps, to_us(1.0), 1, "µs")), True)
        + td(esc(_pm(c.vs_ideal, 1.0, 3, "x")), True)
        + "</tr>"
        for c in cells
    ]
    headers = [
        ("failure", False),
        ("transport", False),
        ("seeds", True),
        ("completed", True),
        ("completion (mean ± 95% CI)", True),
        ("p99 FCT (mean ± 95% CI)", True),
        ("vs ideal", True),
    ]
    return table(headers, rows, table_id=f"{sid}-table", css_class="sweep")


def _chart(failure: str, cells: Sequence[SweepCell], sid: str) -> str:
    """Horizontal bars: each transport's mean completion (ms) with its interval."""
    shown = [c for c in cells if c.completion_ps.n]
    top = (
        max(
            (c.completion_ps.high if c.completion_ps.n > 1 else c.completion_ps.mean) for c in shown
        )
        if shown
        else 1.0
    )
    scale = (_W - _LEFT - 70) / (to_ms(top) or 1.0)
    height = 28 + len(cells) * (_BAR_H + _GAP)
    parts = [
        f'<svg id="{esc(sid)}" viewBox="0 0 {_W:.0f} {height:.0f}" role="img" '
        f'aria-label="completion per transport under {esc(failure)}" '
        f'font-family="{FONT}" font-size="12">',
        f'<text x="0" y="14" font-weight="600">{esc(failure)}: completion, ms</text>',
    ]
    for i, c in enumerate(cells):
        y = 24 + i * (_BAR_H + _GAP)
        parts.append(
            f'<text x="{_LEFT - 6:.0f}" y="{y + 13:.1f}" text-anchor="end">'
            f"{esc(c.transport)}</text>"
        )
        iv = c.completion_ps
        if not iv.n:
            parts.append(f'<text x="{_LEFT:.0f}" y="{y + 13:.1f}">no seed completed</text>')
            continue
        w = to_ms(iv.mean) * scale
        parts.append(
            f'<rect class="bar" data-transport="{esc(c.transport)}" x="{_LEFT:.0f}" '
            f'y="{y:.1f}" width="{w:.1f}" height="{_BAR_H:.0f}" '
            f'fill="{_COLOURS[i % len(_COLOURS)]}" opacity="0.8"/>'
        )
        if iv.n > 1:
            lo, hi = _LEFT + to_ms(iv.low) * scale, _LEFT + to_ms(iv.high) * scale
            mid = y + _BAR_H / 2
            parts.append(
                f'<path class="ci" d="M{lo:.1f} {mid:.1f}H{hi:.1f}M{lo:.1f} {mid - 5:.1f}'
                f'V{mid + 5:.1f}M{hi:.1f} {mid - 5:.1f}V{mid + 5:.1f}" stroke="#111" fill="none"/>'
            )
        parts.append(f'<text x="{_LEFT + w + 6:.1f}" y="{y + 13:.1f}">{to_ms(iv.mean):,.3f}</text>')
    return "\n".join([*parts, "</svg>"])


def _variant(variant: str, cells: Sequence[SweepCell], i: int) -> str:
    sid = f"v{i}"
    failures = list(dict.fromkeys(c.failure for c in cells))
    charts = "\n".join(
        _chart(f, [c for c in cells if c.failure == f], f"{sid}-chart{j}")
        for j, f in enumerate(failures)
    )
    return f"{_table(cells, sid)}\n<figure>{charts}</figure>\n"


def render_sweep(title: str, cells: Sequence[SweepCell], runs: int, failed: int) -> str:
    """The page (module docstring): ``runs`` in the sweep, ``failed`` of them after retries."""
    variants = list(dict.fromkeys(c.variant for c in cells))
    sections = [
        (f"v{i}", f"Variant {v}", _variant(v, [c for c in cells if c.variant == v], i))
        for i, v in enumerate(variants)
    ]
    body = "\n".join(
        f'<section id="{sid}"><h2>{esc(t)}</h2>\n{html}</section>' for sid, t, html in sections
    )
    done = sum(c.runs for c in cells)
    lead = (
        f"<p>{done:,} of {runs:,} runs finished"
        + (f", {failed:,} failed after their retries (failed.json)" if failed else "")
        + ". Intervals: 95 % Student t over seeds (mean ± t(0.975, n-1)·s/√n), over the seeds "
        "whose runs finished every flow; one seed gives no interval.</p>"
    )
    name = esc(title)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{name} — clusterloom sweep</title>\n"
        f"<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
        f"<header><h1>{name}<small>clusterloom sweep</small></h1></header>\n"
        f"{lead}\n{toc([(sid, t) for sid, t, _ in sections])}\n{body}\n"
        "</main>\n</body>\n</html>\n"
    )
