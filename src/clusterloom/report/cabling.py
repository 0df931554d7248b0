"""The cabling section of ``report.html``: per hall a picture (SVG) of the tray graph with each
segment coloured by its fill against its limit; the campus with the fibres between buildings;
tables of media and fibres between halls. What cabling chose is priced in the design's one bill
of materials (``report.html``'s ``#bom`` section, ``Design.bom``)."""

from __future__ import annotations

import numpy as np

from clusterloom.cabling import SEGMENT_KINDS, Cabling
from clusterloom.report._html import esc, table, td
from clusterloom.report._svg import FONT, scale_bar

#: Halls drawn in the report (the tables cover all of them).
MAX_HALLS_DRAWN = 24
#: Pixels per metre at most, and the widest picture of a hall's trays.
MAX_SCALE, PLAN_PX = 40.0, 1000.0


def _fill_colour(ratio: float) -> str:
    """Green under half the limit, amber to the limit, red over it."""
    if ratio > 1.0:
        return "#dc2626"
    if ratio > 0.5:
        return "#f59e0b"
    if ratio > 0.0:
        return "#16a34a"
    return "#cbd5e1"


#: The tray-fill legend: colour and what it means (of the tray's fill limit).
FILL_LEGEND = (
    ("#cbd5e1", "empty"),
    ("#16a34a", "up to half the limit"),
    ("#f59e0b", "half to the limit"),
    ("#dc2626", "over the limit"),
)


def hall_fill_svg(c: Cabling, h: int) -> str:
    """Tray segments of hall ``h`` (row, cross-aisle, spine) by fill, to scale (y grows
    upwards), line width growing with fill; the door, a scale bar and a legend."""
    pw = c.pathways
    segs = np.flatnonzero(pw.seg_hall == h)
    if segs.shape[0] == 0:
        return ""
    a, b = pw.seg_a[segs], pw.seg_b[segs]
    xy = pw.node_xy
    pts = np.concatenate([xy[a], xy[b]])
    lo, hi = pts.min(axis=0) - 1.0, pts.max(axis=0) + 1.0
    k = min(PLAN_PX / max(float(hi[0] - lo[0]), 1.0), MAX_SCALE)
    width = float((hi[0] - lo[0]) * k)
    height = float((hi[1] - lo[1]) * k)
    fill = c.seg_fill
    parts = []
    for s, u, v in zip(segs.tolist(), a.tolist(), b.tolist(), strict=True):
        ratio = float(fill[s]) / pw.tray(s).fill
        x1, y1 = (xy[u] - lo) * k
        x2, y2 = (xy[v] - lo) * k
        stroke = 2.0 + 6.0 * min(ratio, 1.2)
        parts.append(
            f'<line x1="{x1:.1f}" y1="{height - y1:.1f}" x2="{x2:.1f}" y2="{height - y2:.1f}" '
            f'stroke="{_fill_colour(ratio)}" stroke-width="{stroke:.1f}" stroke-linecap="round">'
            f"<title>{esc(pw.segment_name(s))}: {fill[s]:.1%} of "
            f"{pw.tray(s).description} (limit {pw.tray(s).fill:.0%}), "
            f"{int(c.seg_cables[s]):,} cables, {int(c.seg_trunks[s]):,} trunks</title></line>"
        )
    door = xy[pw.hall_door[h]]
    dx, dy = (door - lo) * k
    parts.append(
        f'<circle cx="{dx:.1f}" cy="{height - dy:.1f}" r="6" fill="#0f172a"/>'
        f'<text x="{dx + 9:.1f}" y="{height - dy - 8:.1f}" font-size="12" fill="#0f172a">door'
        "</text>"
    )
    bar, _ = scale_bar(0.0, height + 14, k, min(width, 240.0))
    parts.append(bar)
    x, y = 0.0, height + 48
    for colour, label in FILL_LEGEND:
        parts.append(
            f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{x + 22:.1f}" y2="{y:.1f}" stroke="{colour}" '
            f'stroke-width="5" stroke-linecap="round"/><text x="{x + 28:.1f}" y="{y + 4:.1f}" '
            f'font-size="12" fill="#334155">{esc(label)}</text>'
        )
        x += 44 + 6.8 * len(label)
    total_w, total_h = max(width, x), height + 60
    head = (
        f'<svg class="tray-fill" viewBox="0 -4 {total_w:.0f} {total_h + 4:.0f}" '
        f'style="width:{total_w:.0f}px;max-width:100%" role="img" '
        f'aria-label="tray fill {esc(pw.hall_names[h])}" font-family="{FONT}">'
    )
    return head + "".join(parts) + "</svg>"


def campus_svg(c: Cabling) -> str:
    """Buildings on the campus, each campus route labelled with the fibres it carries."""
    pw = c.pathways
    segs = np.flatnonzero(pw.seg_kind == SEGMENT_KINDS.index("campus"))
    ent = pw.building_entrance
    if ent.shape[0] < 2:
        return ""
    xy = pw.node_xy[ent]
    lo, hi = xy.min(axis=0) - 40.0, xy.max(axis=0) + 40.0
    k = 600.0 / max(float((hi - lo).max()), 1.0)
    width, height = float((hi[0] - lo[0]) * k), float((hi[1] - lo[1]) * k)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'width="{width:.0f}" role="img" aria-label="fibres between buildings">'
    ]
    for s in segs.tolist():
        u, v = int(pw.seg_a[s]), int(pw.seg_b[s])
        (x1, y1), (x2, y2) = (pw.node_xy[u] - lo) * k, (pw.node_xy[v] - lo) * k
        fibres = int(c.seg_fibers[s])
        colour = "#2563eb" if fibres else "#cbd5e1"
        stroke = 2 + min(fibres / 5000, 10)
        parts.append(
            f'<line x1="{x1:.1f}" y1="{height - y1:.1f}" x2="{x2:.1f}" y2="{height - y2:.1f}" '
            f'stroke="{colour}" stroke-width="{stroke:.1f}"/>'
            f'<text x="{(x1 + x2) / 2:.1f}" y="{height - (y1 + y2) / 2 - 4:.1f}" font-size="11" '
            f'text-anchor="middle">{fibres:,} fibres, {float(pw.seg_length_m[s]):,.0f} m</text>'
        )
    for b, (x, y) in enumerate(((xy - lo) * k).tolist()):
        parts.append(
            f'<rect x="{x - 18:.1f}" y="{height - y - 12:.1f}" width="36" height="24" '
            f'fill="#0f172a"/><text x="{x:.1f}" y="{height - y + 4:.1f}" font-size="12" '
            f'fill="#fff" text-anchor="middle">{esc(pw.building_names[b])}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def cabling_section(c: Cabling) -> str:
    n, by = c.totals, c.by_medium
    rows = [
        "<tr>"
        + td(esc(name))
        + td(f"{links:,}", True)
        + td(f"{structured:,}", True)
        + td(f"{metres:,.0f} m", True)
        + td(f"{longest:,.1f} m", True)
        + "</tr>"
        for name, links, structured, metres, longest in zip(
            by.names, by.links, by.structured, by.metres, by.longest, strict=True
        )
    ]
    media = table(
        (
            ("medium", False),
            ("links", True),
            ("structured", True),
            ("metres", True),
            ("longest", True),
        ),
        rows,
        table_id="cabling-media",
        css_class="media",
    )
    between = c.between_halls
    hall_rows = [
        "<tr>" + td(esc(a)) + td(esc(b)) + td(f"{t:,}", True) + td(f"{f:,}", True) + "</tr>"
        for (a, b), (t, f) in between.items()
    ]
    halls = (
        table(
            (("hall", False), ("hall", False), ("cables", True), ("fibres", True)),
            hall_rows,
            table_id="cabling-halls",
            css_class="halls",
        )
        if hall_rows
        else "<p>No cables between halls.</p>"
    )
    pictures = []
    for h, name in enumerate(c.pathways.hall_names[:MAX_HALLS_DRAWN]):
        svg = hall_fill_svg(c, h)
        if svg:
            pictures.append(
                f"<h3>Tray fill, {esc(name)}</h3>\n<figure>{svg}<figcaption>Trays of hall "
                f"{esc(name)} to scale, coloured by fill against their limit, wider when "
                "fuller; hover a tray for its fill, cables and trunks.</figcaption></figure>"
            )
    campus = campus_svg(c)
    if campus:
        pictures.append(f"<h3>Fibres between buildings</h3>\n{campus}")
    return (
        '<section id="cabling">\n<h2>Cabling</h2>\n'
        f"<p>{n.realized:,} of {c.n_links:,} links realized; {n.trunks:,} "
        f"trunks and {n.backbones:,} backbones, "
        f"{n.panels:,} panel ends; tray segments coloured by fill against "
        "their limit (green under half, amber to the limit, red over it).</p>\n"
        + media
        + "\n<h3>Fibres between halls</h3>\n"
        + halls
        + "\n"
        + "\n".join(pictures)
        + "\n<p>The cables, transceivers, patch cords, trunks, splices and panels cabling chose "
        'are lines of the design\'s <a href="#bom">bill of materials</a>.</p>' + "\n</section>"
    )
