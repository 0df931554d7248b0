"""Pieces of inline SVG shared by the report's sections: a scale bar, a colour scale and a heat
map (an embedded PNG) with its axes. Plain functions of their inputs, so the same figure gives
the same bytes."""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Sequence

from clusterloom.errors import ClusterloomError
from clusterloom.workload.heatmap import _RAMP


class PictureError(ClusterloomError, ValueError):
    """Input a picture cannot draw truthfully (a device outside its rack, two in one unit)."""


#: The SVG namespace: a picture kept as a file of its own needs it (inline in HTML it is implied,
#: and the self-contained pages leave it out).
SVG_NS = "http://www.w3.org/2000/svg"
FONT = "system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif"


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def standalone(svg: str) -> str:
    """``svg`` (text starting with its root ``<svg``) with the SVG namespace on its root, so it
    renders as a file of its own (``image/svg+xml``); unchanged when it has one."""
    head, sep, rest = svg.partition(">")
    if not head.lstrip().startswith("<svg") or "xmlns=" in head:
        return svg
    return head.replace("<svg", f'<svg xmlns="{SVG_NS}"', 1) + sep + rest


def nice_length(limit: float) -> float:
    """The largest 1, 2 or 5 times a power of ten not above ``limit`` (> 0)."""
    mag = 10.0 ** math.floor(math.log10(limit))
    return float(max(m * mag for m in (1, 2, 5) if m * mag <= limit + 1e-9))


def scale_bar(x: float, y: float, px_per_m: float, max_px: float) -> tuple[str, float]:
    """A scale bar at (``x``, ``y``), at most ``max_px`` long: its SVG and its width in pixels.
    The bar carries its length in metres as ``data-metres`` and as text."""
    metres = nice_length(max_px / px_per_m)
    w = metres * px_per_m
    label = f"{metres:g} m"
    svg = (
        f'<g class="scale-bar" data-metres="{metres:g}">'
        f'<rect x="{x:.1f}" y="{y:.1f}" width="{w / 2:.1f}" height="5" fill="#0f172a"/>'
        f'<rect x="{x + w / 2:.1f}" y="{y:.1f}" width="{w / 2:.1f}" height="5" fill="#fff" '
        f'stroke="#0f172a" stroke-width="0.8"/>'
        f'<text x="{x:.1f}" y="{y + 17:.1f}" font-size="11" fill="#334155">0</text>'
        f'<text x="{x + w:.1f}" y="{y + 17:.1f}" font-size="11" fill="#334155" '
        f'text-anchor="end">{esc(label)}</text></g>'
    )
    return svg, w


def ramp_gradient(gid: str, vertical: bool = True) -> str:
    """A ``<linearGradient>`` of the heat maps' ramp (low at the bottom / left)."""
    n = len(_RAMP) - 1
    stops = "".join(
        f'<stop offset="{i / n:.2f}" stop-color="rgb({int(r)},{int(g)},{int(b)})"/>'
        for i, (r, g, b) in enumerate(_RAMP.tolist())
    )
    coords = 'x1="0" y1="1" x2="0" y2="0"' if vertical else 'x1="0" y1="0" x2="1" y2="0"'
    return f'<linearGradient id="{esc(gid)}" {coords}>{stops}</linearGradient>'


def colour_scale(
    x: float, y: float, h: float, gid: str, ticks: Sequence[tuple[float, str]], title: str
) -> str:
    """A vertical colour scale ``h`` high at (``x``, ``y``): the ramp, ticks at fractions (0 at
    the bottom) with their labels, and its title above."""
    out = [
        f'<g class="colour-scale"><defs>{ramp_gradient(gid)}</defs>',
        f'<text x="{x:.1f}" y="{y - 6:.1f}" font-size="11" fill="#334155">{esc(title)}</text>',
        f'<rect x="{x:.1f}" y="{y:.1f}" width="14" height="{h:.1f}" fill="url(#{esc(gid)})" '
        'stroke="#94a3b8" stroke-width="0.5"/>',
    ]
    for frac, label in ticks:
        ty = y + h - frac * h
        out.append(
            f'<line x1="{x + 14:.1f}" y1="{ty:.1f}" x2="{x + 18:.1f}" y2="{ty:.1f}" '
            'stroke="#64748b"/>'
            f'<text x="{x + 21:.1f}" y="{ty + 4:.1f}" font-size="11" fill="#475569">'
            f"{esc(label)}</text>"
        )
    out.append("</g>")
    return "".join(out)


def heatmap_svg(
    picture: bytes,
    *,
    svg_id: str,
    label: str,
    size: tuple[float, float],
    x_label: str,
    y_label: str,
    x_ticks: Sequence[tuple[float, str]],
    y_ticks: Sequence[tuple[float, str]],
    scale_ticks: Sequence[tuple[float, str]],
    scale_title: str,
) -> str:
    """A heat map: the PNG ``picture`` stretched over a plot ``size`` (width, height) pixels,
    ticks at fractions of each axis (x from the left, y from the top) with their labels, axis
    titles and a colour scale on the right."""
    pw, ph = size
    left, top, right, bottom = 72.0, 22.0, 150.0, 46.0
    width, height = left + pw + right, top + ph + bottom
    data = base64.b64encode(picture).decode("ascii")
    out = [
        f'<svg id="{esc(svg_id)}" class="heatmap" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'style="width:{width:.0f}px;max-width:100%" role="img" aria-label="{esc(label)}" '
        f'font-family="{FONT}">',
        f'<image x="{left:.1f}" y="{top:.1f}" width="{pw:.1f}" height="{ph:.1f}" '
        f'preserveAspectRatio="none" style="image-rendering:pixelated" '
        f'href="data:image/png;base64,{data}"/>',
        f'<rect x="{left:.1f}" y="{top:.1f}" width="{pw:.1f}" height="{ph:.1f}" fill="none" '
        'stroke="#64748b"/>',
    ]
    for frac, text in x_ticks:
        tx = left + frac * pw
        out.append(
            f'<line class="x-tick" x1="{tx:.1f}" y1="{top + ph:.1f}" x2="{tx:.1f}" '
            f'y2="{top + ph + 4:.1f}" stroke="#64748b"/>'
            f'<text x="{tx:.1f}" y="{top + ph + 16:.1f}" font-size="11" fill="#475569" '
            f'text-anchor="middle">{esc(text)}</text>'
        )
    for frac, text in y_ticks:
        ty = top + frac * ph
        out.append(
            f'<line class="y-tick" x1="{left - 4:.1f}" y1="{ty:.1f}" x2="{left:.1f}" '
            f'y2="{ty:.1f}" stroke="#64748b"/>'
            f'<text x="{left - 6:.1f}" y="{ty + 4:.1f}" font-size="11" fill="#475569" '
            f'text-anchor="end">{esc(text)}</text>'
        )
    out.append(
        f'<text class="x-label" x="{left + pw / 2:.1f}" y="{height - 8:.1f}" font-size="12" '
        f'fill="#334155" text-anchor="middle">{esc(x_label)}</text>'
        f'<text class="y-label" transform="translate(14 {top + ph / 2:.1f}) rotate(-90)" '
        f'font-size="12" fill="#334155" text-anchor="middle">{esc(y_label)}</text>'
    )
    out.append(
        colour_scale(left + pw + 24, top + 12, ph - 12, f"{svg_id}-ramp", scale_ticks, scale_title)
    )
    out.append("</svg>")
    return "\n".join(out)


def index_ticks(n: int, count: int = 5) -> list[tuple[float, int]]:
    """About ``count`` round indices in ``0..n`` as (fraction of ``n``, index)."""
    if n <= 0:
        return [(0.0, 0)]
    step = max(1, int(nice_length(n / count)))
    return [(i / n, i) for i in range(0, n + 1, step)]
