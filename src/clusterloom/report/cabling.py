"""The cabling section of ``report.html``: per hall a picture (SVG) of the tray graph with each
segment coloured by its fill against its limit; the campus with the fibres between buildings;
tables of media and fibres between halls. What cabling chose is priced in the design's one bill
of materials (``report.html``'s ``#bom`` section, ``Design.bom``)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from clusterloom.cabling import SEGMENT_KINDS, Cabling
from clusterloom.cabling.pathways import Pathways
from clusterloom.report._html import esc, table, td
from clusterloom.report._svg import FONT, scale_bar

#: Halls drawn in the report (the tables cover all of them).
MAX_HALLS_DRAWN = 24
#: Pixels per metre at most, and the widest picture of a hall's trays.
MAX_SCALE, PLAN_PX, LABEL_PX = 40.0, 1000.0, 48.0
#: The campus picture: pixels of its longest extent, and its least width.
CAMPUS_PX, CAMPUS_MIN_PX = 420.0, 520.0


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


def _pct(ratio: float) -> str:
    return f"{ratio:.0%}" if ratio >= 0.01 or ratio == 0 else "<1%"


def hall_fill_svg(c: Cabling, h: int) -> str:
    """Tray segments of hall ``h`` (row, cross-aisle, spine) by fill, to scale (y grows
    upwards), line width growing with fill: a title naming the hall and its fullest tray, each
    row's tray labelled with the row's name at its head and its fullest segment (percent of
    the fill limit) at its tail, the door, a scale bar and a legend."""
    pw = c.pathways
    segs = np.flatnonzero(pw.seg_hall == h)
    if segs.shape[0] == 0:
        return ""
    a, b = pw.seg_a[segs], pw.seg_b[segs]
    xy = pw.node_xy
    pts = np.concatenate([xy[a], xy[b]])
    lo, hi = pts.min(axis=0) - 1.0, pts.max(axis=0) + 1.0
    k = min(PLAN_PX / max(float(hi[0] - lo[0]), 1.0), MAX_SCALE)
    left, top = LABEL_PX, 28.0
    width = float((hi[0] - lo[0]) * k)
    height = float((hi[1] - lo[1]) * k)
    fill = c.seg_fill
    limit = np.array([pw.tray(s).fill for s in segs.tolist()])
    ratios = fill[segs] / limit

    def at(node: int) -> tuple[float, float]:
        x, y = (xy[node] - lo) * k
        return left + float(x), top + height - float(y)

    parts = []
    for s, u, v, ratio in zip(segs.tolist(), a.tolist(), b.tolist(), ratios.tolist(), strict=True):
        (x1, y1), (x2, y2) = at(u), at(v)
        stroke = 2.0 + 6.0 * min(ratio, 1.2)
        parts.append(
            f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
            f'stroke="{_fill_colour(ratio)}" stroke-width="{stroke:.1f}" stroke-linecap="round">'
            f"<title>{esc(pw.segment_name(s))}: {fill[s]:.1%} of "
            f"{pw.tray(s).description} (limit {pw.tray(s).fill:.0%}), "
            f"{int(c.seg_cables[s]):,} cables, {int(c.seg_trunks[s]):,} trunks</title></line>"
        )
    row_kind = SEGMENT_KINDS.index("row")
    for r in np.flatnonzero(pw.row_hall == h).tolist():
        head, tail = int(pw.row_head[r]), int(pw.row_tail[r])
        mine = (pw.seg_kind[segs] == row_kind) & np.isin(
            a, np.concatenate([[head, tail], _row_positions(pw, head, tail, segs, a, b)])
        )
        peak = float(ratios[mine].max()) if mine.any() else 0.0
        (hx, hy), (tx, ty) = at(head), at(tail)
        if tx < hx:
            (hx, hy), (tx, ty) = (tx, ty), (hx, hy)
        parts.append(
            f'<text class="row-label" x="{hx - 8:.1f}" y="{hy + 4:.1f}" font-size="11.5" '
            f'font-weight="700" fill="#0f172a" text-anchor="end">'
            f"{esc(pw.row_names[r].rsplit('/', 1)[-1])}</text>"
            f'<text class="row-peak" data-fill="{peak:.4f}" x="{tx + 8:.1f}" y="{ty + 4:.1f}" '
            f'font-size="10.5" fill="#334155">{_pct(peak)}</text>'
        )
    worst = int(np.argmax(ratios))
    title = (
        f"Tray fill, hall {pw.hall_names[h]}: fullest {pw.segment_name(int(segs[worst]))} at "
        f"{_pct(float(ratios[worst]))} of its fill limit; right of each row: its fullest tray"
    )
    parts.insert(
        0,
        f'<text class="title" x="{left:.1f}" y="16" font-size="13" font-weight="700" '
        f'fill="#0f172a">{esc(title)}</text>',
    )
    dx, dy = at(int(pw.hall_door[h]))
    parts.append(
        f'<circle cx="{dx:.1f}" cy="{dy:.1f}" r="6" fill="#0f172a"/>'
        f'<text x="{dx + 9:.1f}" y="{dy - 8:.1f}" font-size="12" fill="#0f172a">door</text>'
    )
    bar, _ = scale_bar(left, top + height + 14, k, min(width, 240.0))
    parts.append(bar)
    x, y = left, top + height + 48
    for colour, label in FILL_LEGEND:
        parts.append(
            f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{x + 22:.1f}" y2="{y:.1f}" stroke="{colour}" '
            f'stroke-width="5" stroke-linecap="round"/><text x="{x + 28:.1f}" y="{y + 4:.1f}" '
            f'font-size="12" fill="#334155">{esc(label)}</text>'
        )
        x += 44 + 6.8 * len(label)
    total_w = max(left + width + 48, x, left + 8.0 * len(title))
    total_h = top + height + 60
    head_svg = (
        f'<svg class="tray-fill" data-hall="{esc(pw.hall_names[h])}" '
        f'viewBox="0 -4 {total_w:.0f} {total_h + 4:.0f}" '
        f'style="width:{total_w:.0f}px;max-width:100%" role="img" '
        f'aria-label="tray fill {esc(pw.hall_names[h])}" font-family="{FONT}">'
    )
    return head_svg + "".join(parts) + "</svg>"


def _row_positions(
    pw: Pathways,
    head: int,
    tail: int,
    segs: NDArray[np.int64],
    a: NDArray[np.int32],
    b: NDArray[np.int32],
) -> NDArray[np.int32]:
    """The position nodes of the row whose tray runs from ``head`` to ``tail``: those joined
    to it by row segments (positions are the nodes below ``pw.n_positions``)."""
    row_kind = SEGMENT_KINDS.index("row")
    rows = pw.seg_kind[segs] == row_kind
    first = np.concatenate([b[rows & (a == head)], a[rows & (b == head)]])
    if first.shape[0] == 0:
        return np.zeros(0, dtype=np.int32)
    # positions of a row have consecutive ids: from the one next to the head to the one
    # next to the tail
    last = np.concatenate([a[rows & (b == tail)], b[rows & (a == tail)]])
    lo, hi = sorted((int(first[0]), int(last[0]) if last.shape[0] else int(first[0])))
    return np.arange(lo, hi + 1, dtype=np.int32)


def campus_svg(c: Cabling) -> str:
    """Buildings on the campus to scale (a scale bar), each campus route a line as wide as its
    share of the fibres and labelled with its fibres and length (on a white halo, beside the
    line), under a title with the total; at least :data:`CAMPUS_MIN_PX` wide, so buildings in
    one column still leave room for the labels."""
    pw = c.pathways
    segs = np.flatnonzero(pw.seg_kind == SEGMENT_KINDS.index("campus"))
    ent = pw.building_entrance
    if ent.shape[0] < 2:
        return ""
    xy = pw.node_xy[ent]
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    k = CAMPUS_PX / max(float((hi - lo).max()), 1.0)
    span = (hi - lo) * k
    pad, top = 60.0, 34.0
    width = max(float(span[0]) + 2 * pad, CAMPUS_MIN_PX)
    ox = (width - float(span[0])) / 2  # centred
    height = top + float(span[1]) + 2 * 30 + 40

    def at(node: int) -> tuple[float, float]:
        x, y = (pw.node_xy[node] - lo) * k
        return ox + float(x), top + 30 + float(span[1]) - float(y)

    fibres = c.seg_fibers[segs].astype(np.int64)
    most = max(int(fibres.max(initial=0)), 1)
    total = int(fibres.sum())
    title = f"Fibres between buildings: {total:,} over {int((fibres > 0).sum())} campus route(s)"
    parts = [
        f'<svg class="fibres" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'style="width:{width:.0f}px;max-width:100%" role="img" '
        f'aria-label="fibres between buildings" font-family="{FONT}">',
        f'<text class="title" x="8" y="18" font-size="13" font-weight="700" fill="#0f172a">'
        f"{esc(title)}</text>",
    ]
    for s, n in zip(segs.tolist(), fibres.tolist(), strict=True):
        (x1, y1), (x2, y2) = at(int(pw.seg_a[s])), at(int(pw.seg_b[s]))
        colour = "#2563eb" if n else "#cbd5e1"
        stroke = 2 + 10 * n / most
        label = f"{n:,} fibres, {float(pw.seg_length_m[s]):,.0f} m route"
        mx, my = (x1 + x2) / 2, (y1 + y2) / 2
        vertical = abs(x2 - x1) < abs(y2 - y1)
        tx, ty = (mx + stroke / 2 + 6, my + 4) if vertical else (mx, my - stroke / 2 - 6)
        anchor = "start" if vertical else "middle"
        parts.append(
            f'<line class="route" data-fibres="{n}" x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" '
            f'y2="{y2:.1f}" stroke="{colour}" stroke-width="{stroke:.1f}"/>'
            f'<text x="{tx:.1f}" y="{ty:.1f}" font-size="11.5" fill="#0f172a" '
            f'text-anchor="{anchor}" stroke="#ffffff" stroke-width="3" paint-order="stroke">'
            f"{esc(label)}</text>"
        )
    for b in range(ent.shape[0]):
        x, y = at(int(ent[b]))
        parts.append(
            f'<rect x="{x - 20:.1f}" y="{y - 12:.1f}" width="40" height="24" rx="3" '
            f'fill="#0f172a"/><text x="{x:.1f}" y="{y + 4:.1f}" font-size="12" '
            f'fill="#fff" text-anchor="middle">{esc(pw.building_names[b])}</text>'
        )
    bar, _ = scale_bar(8.0, height - 28, k, min(240.0, width - 16))
    parts += [bar, "</svg>"]
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
