"""The placement section of ``report.html``: a campus overview (every hall as a tile by
building: racks against positions, power against budget, a link to its plan); per hall a floor
plan (SVG, to scale with a scale bar) with every position coloured by the role of its rack and
labelled with its position, each row labelled with its name and power feed (the feed also drawn
as a line style under the row, so feeds never compete with role colours), blocked and
reserved positions marked; tables of halls, solves and link lengths."""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import quote

import numpy as np

from clusterloom.placement import Placement
from clusterloom.placement.floor import BLOCKED, RESERVED
from clusterloom.placement.solve import BOUND_NOTES
from clusterloom.report._html import esc, table, td
from clusterloom.report._svg import FONT, PictureError, scale_bar
from clusterloom.units import to_kilowatts, to_megawatts

ROLE_COLOURS = {
    "compute": "#64748b",
    "tor": "#0d9488",
    "leaf": "#2563eb",
    "spine": "#7c3aed",
    "core": "#db2777",
}
#: Feeds are told apart by line style (dash pattern, then ink), not by a colour that could be
#: read as a role.
FEED_STYLES = (
    ("#0f172a", ""),
    ("#0f172a", "7 3"),
    ("#0f172a", "2 2"),
    ("#a8a29e", ""),
    ("#a8a29e", "7 3"),
    ("#a8a29e", "2 2"),
)
#: Roles of the rack elevations (``placement/elevations.csv``) that are not rack roles.
DEVICE_COLOURS = {**ROLE_COLOURS, "server": ROLE_COLOURS["compute"], "panel": "#a16207"}
BLOCKED_FILL, RESERVED_FILL = "#cbd5e1", "#fef9c3"
#: Halls drawn in the report (the tables and the campus overview cover all of them).
MAX_HALLS_DRAWN = 24
#: Pixels per metre at most, and the widest plan; left margin for the row labels.
MAX_SCALE, PLAN_PX, LABEL_PX = 48.0, 1000.0, 92.0
#: Position labels are written in a rack when it is at least this many pixels wide.
TEXT_MIN_PX = 9.0


def hall_anchor(name: str) -> str:
    return "hall-" + name.replace("/", "-")


def _short(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _feed_line(x1: float, x2: float, y: float, style: tuple[str, str], width: float = 3) -> str:
    colour, dash = style
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    return (
        f'<line x1="{x1:.1f}" y1="{y:.1f}" x2="{x2:.1f}" y2="{y:.1f}" stroke="{colour}" '
        f'stroke-width="{width}"{dash_attr}/>'
    )


def _legend(
    items: list[tuple[str, str]], feeds: list[tuple[tuple[str, str], str]], y: float, width: float
) -> tuple[list[str], float]:
    """Swatches (fill, label) then feed line samples, wrapped to ``width``; the SVG and the
    height used."""
    out: list[str] = []
    x, row = 0.0, 0
    for kind, (style, label) in [("fill", it) for it in items] + [("feed", ft) for ft in feeds]:
        need = 34 + 6.6 * len(label)
        if x + need > width and x > 0:
            x, row = 0.0, row + 1
        ly = y + 18 * row
        if kind == "fill":
            fill = str(style)
            extra = (
                ' stroke="#64748b" stroke-width="0.6"' if fill in (RESERVED_FILL, "#ffffff") else ""
            )
            out.append(
                f'<rect x="{x:.1f}" y="{ly:.1f}" width="12" height="12" fill="{fill}"{extra}/>'
            )
        else:
            assert isinstance(style, tuple)
            out.append(_feed_line(x, x + 22, ly + 6, style))
        tx = x + (16 if kind == "fill" else 26)
        out.append(
            f'<text x="{tx:.1f}" y="{ly + 10.5:.1f}" font-size="11" fill="#334155">'
            f"{esc(label)}</text>"
        )
        x += need
    return out, 18.0 * (row + 1)


def _rack_link(body: str, name: str, href: str | None) -> str:
    """``body`` (a rack's shapes) in a group carrying ``data-rack``; in an ``<a>`` when
    ``href`` (a template with ``{rack}``) is given."""
    if href is None:
        return f'<g class="rack-at" data-rack="{esc(name)}">{body}</g>'
    link = esc(href.format(rack=quote(name, safe="")))
    return f'<a class="rack-at" data-rack="{esc(name)}" href="{link}">{body}</a>'


def hall_svg(p: Placement, h: int, *, rack_href: str | None = None) -> str:
    """The floor of hall ``h`` to scale (y grows upwards): a title (hall, rows, positions,
    racks), racks coloured by role with their position (``p07``) written in them when wide
    enough, a label per row (its name and feed), the feed as a line style under the row, the
    door, a scale bar and a legend.

    Every rack is a group carrying its name as ``data-rack="NAME"`` (the explorer's script
    may use it); with ``rack_href``, a template such as ``"rack/{rack}"`` (``{rack}``: the
    URL-quoted rack name), the group is an ``<a href>`` to that relative address instead, so
    a click on a rack opens its page. The static report passes none (it has no rack pages)."""
    f, d = p.floor, p.demand
    pos = f.hall_positions(h)
    x, y = f.pos_x[pos], f.pos_y[pos]
    w, dp = f.pos_width[pos], f.pos_depth[pos]
    door = f.hall_door[h]
    width = float(max((x + w / 2).max(), door[0]) + 1.0)
    depth = float(max((y + dp / 2).max(), door[1]) + 1.0)
    scale = min(PLAN_PX / width, MAX_SCALE)
    sw, sh = width * scale, depth * scale
    ox, oy = LABEL_PX, 30.0
    occupant = np.full(f.n_positions, -1, dtype=np.int64)
    occupant[p.rack_position] = np.arange(p.n_racks)
    rows = sorted(set(f.pos_row[pos].tolist()))
    feeds = sorted({int(f.row_feed[r]) for r in rows})
    feed_style = {fd: FEED_STYLES[i % len(FEED_STYLES)] for i, fd in enumerate(feeds)}
    here = int((f.pos_hall[p.rack_position] == h).sum())
    title = (
        f"Hall {f.hall_names[h]}: {len(rows)} rows, {len(pos):,} positions, {here:,} racks, "
        f"{width:,.1f} x {depth:,.1f} m"
    )
    total_w = max(ox + max(sw, 420.0) + 8, ox + 8.0 * len(title))
    out = [
        f'<text class="title" x="{ox:.1f}" y="18" font-size="13" font-weight="700" '
        f'fill="#0f172a">{esc(title)}</text>',
        f'<rect x="{ox:.1f}" y="{oy:.1f}" width="{sw:.1f}" height="{sh:.1f}" fill="#f8fafc" '
        'stroke="#94a3b8"/>',
    ]
    text_fits = float(w.min()) * scale >= TEXT_MIN_PX
    font = min(11.0, float(w.min()) * scale * 0.55)
    for i, q in enumerate(pos.tolist()):
        px = ox + (x[i] - w[i] / 2) * scale
        py = oy + sh - (y[i] + dp[i] / 2) * scale
        pw, ph = w[i] * scale, dp[i] * scale
        rack = int(occupant[q])
        state = int(f.pos_state[q])
        rect = (
            f'x="{px + 0.5:.1f}" y="{py + 0.5:.1f}" width="{max(pw - 1, 0.5):.1f}" '
            f'height="{max(ph - 4, 0.5):.1f}"'
        )
        shapes: list[str] = []
        if rack >= 0:
            role = d.rack_role[rack]
            kw = to_kilowatts(d.rack_power_w[rack])
            tip = f"{p.rack_names[rack]}: {d.rack_label[rack]} ({kw:,.1f} kW)"
            shapes.append(
                f'<rect class="rack" {rect} fill="{ROLE_COLOURS.get(role, "#475569")}">'
                f"<title>{esc(tip)}</title></rect>"
            )
        elif state == BLOCKED:
            out.append(
                f'<rect {rect} fill="{BLOCKED_FILL}"><title>{esc(f.pos_names[q])}: blocked'
                f'</title></rect><path d="M{px + 1:.1f} {py + 1:.1f}l{pw - 2:.1f} {ph - 5:.1f}'
                f'M{px + pw - 1:.1f} {py + 1:.1f}l{2 - pw:.1f} {ph - 5:.1f}" stroke="#64748b" '
                'stroke-width="0.7"/>'
            )
        else:
            fill = RESERVED_FILL if state == RESERVED else "#ffffff"
            what = "reserved" if state == RESERVED else "free"
            out.append(
                f'<rect {rect} fill="{fill}" stroke="#cbd5e1" stroke-width="0.5">'
                f"<title>{esc(f.pos_names[q])}: {what}</title></rect>"
            )
        if text_fits:
            cx, cy = px + pw / 2, py + (ph - 4) / 2
            ink = "#ffffff" if rack >= 0 else "#94a3b8"
            (shapes if rack >= 0 else out).append(
                f'<text class="pos" x="{cx:.1f}" y="{cy:.1f}" font-size="{font:.1f}" '
                f'fill="{ink}" text-anchor="middle" dominant-baseline="central" '
                f'transform="rotate(-90 {cx:.1f} {cy:.1f})">{esc(_short(f.pos_names[q]))}</text>'
            )
        if shapes:
            out.append(_rack_link("".join(shapes), p.rack_names[rack], rack_href))
    for r in rows:
        mine = pos[f.pos_row[pos] == r]
        x1 = ox + float((f.pos_x[mine] - f.pos_width[mine] / 2).min()) * scale
        x2 = ox + float((f.pos_x[mine] + f.pos_width[mine] / 2).max()) * scale
        bottom = oy + sh - float((f.pos_y[mine] - f.pos_depth[mine] / 2).min()) * scale
        top = oy + sh - float((f.pos_y[mine] + f.pos_depth[mine] / 2).max()) * scale
        style = feed_style[int(f.row_feed[r])]
        out.append(_feed_line(x1, x2, bottom - 1.5, style))
        mid = (top + bottom) / 2
        out.append(
            f'<text class="row-label" x="{ox - 8:.1f}" y="{mid - 2:.1f}" font-size="12" '
            f'font-weight="700" fill="#0f172a" text-anchor="end">{esc(_short(f.row_names[r]))}'
            f'</text><text x="{ox - 8:.1f}" y="{mid + 11:.1f}" font-size="10.5" fill="#475569" '
            f'text-anchor="end">{esc(_short(f.feed_names[int(f.row_feed[r])]))}</text>'
        )
    dx, dy = ox + door[0] * scale, oy + sh - door[1] * scale
    out.append(
        f'<circle cx="{dx:.1f}" cy="{dy:.1f}" r="5" fill="#0f172a"><title>door</title></circle>'
        f'<text x="{dx + 8:.1f}" y="{dy + 4:.1f}" font-size="11" fill="#0f172a">door</text>'
    )
    base = oy + sh + 12
    bar, _ = scale_bar(ox, base, scale, min(sw, 240.0))
    out.append(bar)
    present = sorted({d.rack_role[int(r)] for r in occupant[pos] if r >= 0})
    items = [(ROLE_COLOURS.get(r, "#475569"), r) for r in present]
    states = set(f.pos_state[pos].tolist())
    items.append(("#ffffff", "free"))
    if BLOCKED in states:
        items.append((BLOCKED_FILL, "blocked"))
    if RESERVED in states:
        items.append((RESERVED_FILL, "reserved"))
    feed_items = [(feed_style[fd], "feed " + _short(f.feed_names[fd])) for fd in feeds]
    legend, legend_h = _legend(items, feed_items, base + 28, total_w - ox)
    out.append(f'<g class="legend" transform="translate({ox:.1f} 0)">' + "".join(legend) + "</g>")
    total_h = base + 28 + legend_h + 4
    head = (
        f'<svg class="floor" data-hall="{esc(f.hall_names[h])}" '
        f'viewBox="0 0 {total_w:.0f} {total_h:.0f}" '
        f'style="width:{total_w:.0f}px;max-width:100%" role="img" '
        f'aria-label="floor plan of hall {esc(f.hall_names[h])}" font-family="{FONT}">'
    )
    return "\n".join([head, *out, "</svg>"])


#: Pixels per rack unit of an elevation, and its widths: U numbers, the rack, the labels.
U_PX, U_LABEL_PX, RACK_PX = 18.0, 34.0, 300.0


def rack_elevation_svg(
    rack: str, height_u: int, devices: Sequence[tuple[str, str, int, int]]
) -> str:
    """The front elevation of ``rack`` (``height_u`` rack units, U1 at the bottom): every U
    numbered on the left, each device of ``devices`` (name, role, lowest U, height in U, as
    ``placement/elevations.csv`` lists them) a box coloured by its role with its name and
    role written in it, empty units drawn as such, and a line of totals under the rack.

    A device that reaches outside ``1..height_u`` or shares a unit with another is refused
    with :class:`~clusterloom.report._svg.PictureError` naming it (the picture would lie)."""
    if height_u < 1:
        raise PictureError(f"rack {rack}: height {height_u}U; a rack has at least 1U")
    taken: dict[int, str] = {}
    for name, _, low, size in devices:
        if size < 1 or low < 1 or low + size - 1 > height_u:
            raise PictureError(
                f"rack {rack}: device {name} at U{low} of {size}U leaves the rack's U1..U{height_u}"
            )
        for u in range(low, low + size):
            if u in taken:
                raise PictureError(f"rack {rack}: devices {taken[u]} and {name} share U{u}")
            taken[u] = name
    top, x0 = 30.0, U_LABEL_PX
    body_h = height_u * U_PX
    width = x0 + RACK_PX + 12
    height = top + body_h + 40

    def y_of(u: int) -> float:  # the top edge of unit u
        return top + (height_u - u) * U_PX

    out = [
        f'<text class="title" x="0" y="18" font-size="13" font-weight="700" fill="#0f172a">'
        f"Rack {esc(rack)} ({height_u}U)</text>",
        f'<rect x="{x0:.1f}" y="{top:.1f}" width="{RACK_PX:.1f}" height="{body_h:.1f}" '
        'fill="#f8fafc" stroke="#0f172a" stroke-width="1.5"/>',
    ]
    for u in range(1, height_u + 1):
        y = y_of(u)
        out.append(
            f'<text class="u" x="{x0 - 6:.1f}" y="{y + U_PX / 2 + 4:.1f}" font-size="10.5" '
            f'fill="#64748b" text-anchor="end">{u}</text>'
        )
        if u not in taken:
            out.append(
                f'<rect class="empty-u" x="{x0 + 2:.1f}" y="{y + 1:.1f}" width="{RACK_PX - 4:.1f}"'
                f' height="{U_PX - 2:.1f}" fill="#ffffff" stroke="#e2e8f0" stroke-width="0.5"/>'
            )
    for name, role, low, size in sorted(devices, key=lambda d: (-d[2], d[0])):
        y = y_of(low + size - 1)
        h = size * U_PX
        fill = DEVICE_COLOURS.get(role, "#475569")
        out.append(
            f'<g class="device" data-device="{esc(name)}" data-u="{low}" data-height="{size}">'
            f'<rect x="{x0 + 2:.1f}" y="{y + 1:.1f}" width="{RACK_PX - 4:.1f}" '
            f'height="{h - 2:.1f}" rx="2" fill="{fill}"><title>{esc(name)}: {esc(role)}, '
            f"U{low}-U{low + size - 1}</title></rect>"
            f'<text x="{x0 + 10:.1f}" y="{y + h / 2 + 4:.1f}" font-size="11.5" '
            f'font-weight="600" fill="#ffffff">{esc(name)}</text>'
            f'<text x="{x0 + RACK_PX - 10:.1f}" y="{y + h / 2 + 4:.1f}" font-size="10.5" '
            f'fill="#ffffff" text-anchor="end">{esc(role)} · {size}U</text></g>'
        )
    used = len(taken)
    out.append(
        f'<text class="totals" x="{x0:.1f}" y="{top + body_h + 22:.1f}" font-size="11.5" '
        f'fill="#334155">{len(devices)} device{"s" if len(devices) != 1 else ""}, {used}U '
        f"used, {height_u - used}U free</text>"
    )
    head = (
        f'<svg class="elevation" data-rack="{esc(rack)}" '
        f'viewBox="0 0 {width:.0f} {height:.0f}" style="width:{width:.0f}px;max-width:100%" '
        f'role="img" aria-label="elevation of rack {esc(rack)}" font-family="{FONT}">'
    )
    return "\n".join([head, *out, "</svg>"])


def campus_svg(p: Placement, *, hall_href: str | None = None) -> str:
    """The campus at a glance: a tile per hall, one row of tiles per building, each with its
    racks against its positions, its power against its budget and a link to its plan.

    Every tile is a group carrying ``data-hall="NAME"``. With ``hall_href``, a template such
    as ``"hall/{hall}"`` (``{hall}``: the URL-quoted hall name), every tile is an ``<a href>``
    to that relative address; without it (the static report) the halls drawn in the page
    (the first :data:`MAX_HALLS_DRAWN`) link to their plan's anchor."""
    f, per_hall = p.floor, p.halls
    racks, power, usable = per_hall.racks, per_hall.power_w, per_hall.usable
    per_building = [np.flatnonzero(f.hall_building == b) for b in range(len(f.building_names))]
    cols = max(1, min(8, max(len(hs) for hs in per_building)))
    tile_w, tile_h, gap, left = 156.0, 78.0, 10.0, 64.0
    lines = [-(-len(hs) // cols) for hs in per_building]  # rows of tiles per building
    budgets = f.hall_power_w
    title = (
        f"Campus: {len(f.building_names)} building{'s' if len(f.building_names) != 1 else ''}, "
        f"{f.n_halls} halls, {int(racks.sum()):,} racks on {int(usable.sum()):,} usable "
        f"positions, {to_megawatts(float(power.sum())):,.1f} MW"
        + (
            f" of {to_megawatts(float(budgets.sum())):,.1f} MW"
            if np.isfinite(budgets).all()
            else ""
        )
    )
    key = "grey bar: racks over usable positions; amber bar: power over the hall's budget"
    width = max(left + cols * (tile_w + gap), 8.0 * len(title))
    top = 28.0
    height = top + sum(lines) * (tile_h + gap) + 8 * len(lines) + 20
    out = [
        f'<svg id="campus-overview" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'style="width:{width:.0f}px;max-width:100%" role="img" aria-label="campus overview" '
        f'font-family="{FONT}">',
        f'<text class="title" x="0" y="16" font-size="13" font-weight="700" fill="#0f172a">'
        f"{esc(title)}</text>",
        f'<text class="key" x="0" y="{height - 6:.1f}" font-size="10.5" fill="#64748b">'
        f"{esc(key)}</text>",
    ]
    y = top
    for b, hs in enumerate(per_building):
        out.append(
            f'<text x="0" y="{y + 16:.1f}" font-size="13" font-weight="700" fill="#0f172a">'
            f"{esc(f.building_names[b])}</text>"
            f'<text x="0" y="{y + 31:.1f}" font-size="10.5" fill="#64748b">{len(hs)} hall'
            f"{'s' if len(hs) != 1 else ''}</text>"
        )
        for k, h in enumerate(hs.tolist()):
            tx = left + (k % cols) * (tile_w + gap)
            ty = y + (k // cols) * (tile_h + gap)
            budget = float(f.hall_power_w[h])
            share = 0.0 if np.isinf(budget) or budget <= 0 else min(power[h] / budget, 1.0)
            fill = 0.0 if usable[h] == 0 else min(racks[h] / usable[h], 1.0)
            power_text = (
                "MW, no power budget" if np.isinf(budget) else f"of {to_megawatts(budget):,.1f} MW"
            )
            drawn = h < MAX_HALLS_DRAWN or hall_href is not None
            body = (
                f'<rect x="{tx:.1f}" y="{ty:.1f}" width="{tile_w:.0f}" height="{tile_h:.0f}" '
                f'rx="6" fill="#f8fafc" stroke="#94a3b8"/>'
                f'<text x="{tx + 8:.1f}" y="{ty + 16:.1f}" font-size="12" font-weight="700" '
                f'fill="{"#1d4ed8" if drawn else "#0f172a"}">{esc(f.hall_names[h])}</text>'
                f'<text x="{tx + 8:.1f}" y="{ty + 32:.1f}" font-size="10.5" fill="#334155">'
                f"{int(racks[h]):,} racks / {int(usable[h]):,} positions</text>"
                f'<rect x="{tx + 8:.1f}" y="{ty + 37:.1f}" width="{tile_w - 16:.0f}" height="5" '
                f'fill="#e2e8f0"/><rect x="{tx + 8:.1f}" y="{ty + 37:.1f}" '
                f'width="{(tile_w - 16) * fill:.1f}" height="5" fill="#64748b"/>'
                f'<text x="{tx + 8:.1f}" y="{ty + 57:.1f}" font-size="10.5" fill="#334155">'
                f"{to_megawatts(power[h]):,.1f} {power_text}</text>"
                f'<rect x="{tx + 8:.1f}" y="{ty + 62:.1f}" width="{tile_w - 16:.0f}" height="5" '
                f'fill="#e2e8f0"/><rect x="{tx + 8:.1f}" y="{ty + 62:.1f}" '
                f'width="{(tile_w - 16) * share:.1f}" height="5" fill="#d97706"/>'
            )
            name = f.hall_names[h]
            tag = f'class="hall-at" data-hall="{esc(name)}"'
            if hall_href is not None:
                href = esc(hall_href.format(hall=quote(name, safe="")))
                body = f'<a {tag} href="{href}">{body}</a>'
            elif drawn:
                body = f'<a {tag} href="#{esc(hall_anchor(name))}">{body}</a>'
            else:
                body = f"<g {tag}>{body}</g>"
            out.append(body)
        y += lines[b] * (tile_h + gap) + 8
    out.append("</svg>")
    return "\n".join(out)


def placement_section(p: Placement) -> str:
    f, per_hall = p.floor, p.halls
    racks, power, free = per_hall.racks, per_hall.power_w, per_hall.free
    rows = []
    for h in range(f.n_halls):
        budget = f.hall_power_w[h]
        anchor = esc(hall_anchor(f.hall_names[h]))
        rows.append(
            "<tr>"
            + td(f'<a href="#{anchor}">{esc(f.hall_names[h])}</a>')
            + td(f"{int(racks[h]):,}", True)
            + td(f"{int(free[h]):,}", True)
            + td(f"{to_megawatts(power[h]):,.2f} MW", True)
            + td("no limit" if np.isinf(budget) else f"{to_megawatts(budget):,.2f} MW", True)
            + "</tr>"
        )
    halls = table(
        [
            ("Hall", False),
            ("Racks", True),
            ("Free positions", True),
            ("Power", True),
            ("Budget", True),
        ],
        rows,
        table_id="placement-halls",
        css_class="placement",
    )
    solves = table(
        [
            ("Model", False),
            ("Status", False),
            ("Units", True),
            ("Objective", True),
            ("Bound", True),
            ("Gap", True),
            ("Bound quality", False),
        ],
        [
            "<tr>"
            + td(esc(s.name))
            + td(esc(s.status))
            + td(f"{s.units:,}", True)
            + td(f"{s.objective:,.1f}", True)
            + td(f"{s.bound:,.1f}", True)
            + td(f"{s.gap * 100:.2f}%", True)
            + td(esc(s.bound_quality))
            + "</tr>"
            for s in p.solves
        ],
        table_id="placement-solves",
        css_class="placement",
    )
    tiers = ("host-leaf", "leaf-spine", "spine-core")
    lengths = table(
        [
            ("Fabric", False),
            ("Links", False),
            ("Count", True),
            ("Floor metres", True),
            ("Longest", True),
            ("Leave their hall", True),
        ],
        [
            "<tr>"
            + td(esc(x.fabric))
            + td(tiers[x.tier - 1])
            + td(f"{x.links:,}", True)
            + td(f"{x.total_m:,.0f} m", True)
            + td(f"{x.longest_m:,.1f} m", True)
            + td(f"{x.inter_hall:,}", True)
            + "</tr>"
            for x in p.lengths
        ],
        table_id="placement-lengths",
        css_class="placement",
    )
    figures = [
        f'<figure id="{esc(hall_anchor(f.hall_names[h]))}">{hall_svg(p, h)}'
        f"<figcaption>Hall {esc(f.hall_names[h])}, to scale: racks coloured by role, each "
        f"labelled with its position (rack {esc(f.hall_names[h].replace('/', '-'))}-ROW-POSITION; "
        "hover for its name, device and power); rows labelled with their feed, also drawn as "
        "the line style under the row.</figcaption></figure>"
        for h in range(min(f.n_halls, MAX_HALLS_DRAWN))
    ]
    more = (
        f'<p class="muted">{f.n_halls - MAX_HALLS_DRAWN} more halls are in placement/racks.csv.</p>'
        if f.n_halls > MAX_HALLS_DRAWN
        else ""
    )
    lead = (
        f"{p.n_racks:,} racks on {len(f.hall_names)} hall(s) of {len(f.building_names)} "
        f"building(s). Objective {p.objective:,.0f} link-metres, bound {p.bound:,.0f}, gap "
        f"{p.gap * 100:.2f}% (of the decomposed problem: campus, then each hall), "
        f"{p.bound_quality} bound: {BOUND_NOTES[p.bound_quality]}."
        + (f" {p.bound_note[0].upper()}{p.bound_note[1:]}." if p.bound_note else "")
    )
    qualities = dict.fromkeys(s.bound_quality for s in p.solves)
    notes = "".join(
        f"<li><b>{esc(q)}</b>: {esc(BOUND_NOTES[q])}</li>"
        for q in qualities
        if q != p.bound_quality
    )
    solves += f'<ul class="muted">{notes}</ul>' if notes else ""
    overview = (
        f"<h3>Campus overview</h3>\n<figure>{campus_svg(p)}<figcaption>Every hall by building: "
        "racks placed over usable positions (grey bar), power over its budget (amber bar); a "
        "blue name links to the hall's floor plan below.</figcaption></figure>\n"
        if f.n_halls > 1
        else ""
    )
    return (
        '<section id="placement"><h2>Placement</h2>\n'
        f'<p class="lead">{esc(lead)}</p>\n{overview}<h3>Halls</h3>\n{halls}\n'
        f"<h3>Link lengths over the floor</h3>\n{lengths}\n<h3>Solver</h3>\n{solves}\n"
        + "<h3>Floor plans</h3>\n"
        + "\n".join(figures)
        + more
        + "</section>"
    )
