"""The placement section of ``report.html``: per hall a floor picture (SVG) with every position
coloured by the role of its rack, its row's feed drawn as a band under the row, blocked and
reserved positions marked; tables of halls, solves and link lengths."""

from __future__ import annotations

import numpy as np

from clusterloom.placement import Placement
from clusterloom.placement.floor import BLOCKED, RESERVED
from clusterloom.report.html import _table, _td, esc

ROLE_COLOURS = {
    "compute": "#64748b",
    "tor": "#0d9488",
    "leaf": "#2563eb",
    "spine": "#7c3aed",
    "core": "#db2777",
}
FEED_COLOURS = (
    "#f59e0b",
    "#10b981",
    "#ef4444",
    "#3b82f6",
    "#a855f7",
    "#84cc16",
    "#ec4899",
    "#14b8a6",
)
#: Halls drawn in the report (the tables cover all of them).
MAX_HALLS_DRAWN = 24


def hall_svg(p: Placement, h: int) -> str:
    """The floor of hall ``h``: positions at their coordinates (y grows upwards)."""
    f, d = p.floor, p.demand
    pos = f.hall_positions(h)
    x, y = f.pos_x[pos], f.pos_y[pos]
    w, dp = f.pos_width[pos], f.pos_depth[pos]
    door = f.hall_door[h]
    width = float(max((x + w / 2).max(), door[0]) + 1.0)
    depth = float(max((y + dp / 2).max(), door[1]) + 1.0)
    scale = min(1000.0 / width, 24.0)
    legend_h = 28.0
    sw, sh = width * scale, depth * scale
    occupant = np.full(f.n_positions, -1, dtype=np.int64)
    occupant[p.rack_position] = np.arange(p.n_racks)
    feeds = sorted(set(f.row_feed[f.pos_row[pos]].tolist()))
    feed_colour = {fd: FEED_COLOURS[i % len(FEED_COLOURS)] for i, fd in enumerate(feeds)}
    out = [
        f'<svg viewBox="0 0 {sw:.0f} {sh + legend_h:.0f}" role="img" '
        f'aria-label="hall {esc(f.hall_names[h])}" font-family="system-ui, sans-serif">',
        f'<rect x="0" y="0" width="{sw:.1f}" height="{sh:.1f}" fill="#f8fafc" stroke="#94a3b8"/>',
    ]
    for i, q in enumerate(pos.tolist()):
        px = (x[i] - w[i] / 2) * scale
        py = sh - (y[i] + dp[i] / 2) * scale
        pw, ph = w[i] * scale, dp[i] * scale
        rack = int(occupant[q])
        state = int(f.pos_state[q])
        feed = feed_colour[int(f.row_feed[f.pos_row[q]])]
        out.append(
            f'<rect x="{px:.1f}" y="{py + ph - 2:.1f}" width="{pw:.1f}" height="2" fill="{feed}"/>'
        )
        if rack >= 0:
            role = d.rack_role[rack]
            tip = (
                f"{p.rack_names[rack]}: {d.rack_label[rack]} ({d.rack_power_w[rack] / 1e3:,.1f} kW)"
            )
            out.append(
                f'<rect x="{px + 0.5:.1f}" y="{py + 0.5:.1f}" width="{max(pw - 1, 0.5):.1f}" '
                f'height="{max(ph - 3, 0.5):.1f}" fill="{ROLE_COLOURS.get(role, "#475569")}">'
                f"<title>{esc(tip)}</title></rect>"
            )
        else:
            fill = "#1e293b" if state == BLOCKED else "#fde68a" if state == RESERVED else "#ffffff"
            out.append(
                f'<rect x="{px + 0.5:.1f}" y="{py + 0.5:.1f}" width="{max(pw - 1, 0.5):.1f}" '
                f'height="{max(ph - 3, 0.5):.1f}" fill="{fill}" stroke="#cbd5e1" '
                'stroke-width="0.5"/>'
            )
    dx, dy = door[0] * scale, sh - door[1] * scale
    out.append(
        f'<circle cx="{dx:.1f}" cy="{dy:.1f}" r="4" fill="#0f172a"><title>door</title></circle>'
    )
    items = [(c, r) for r, c in ROLE_COLOURS.items()]
    items += [("#1e293b", "blocked"), ("#fde68a", "reserved")]
    items += [(feed_colour[fd], f.feed_names[fd].rsplit("/", 1)[1]) for fd in feeds]
    lx = 4.0
    legend: list[str] = []
    for colour, label in items:
        legend.append(
            f'<rect x="{lx:.0f}" y="{sh + 9:.0f}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{lx + 13:.0f}" y="{sh + 18:.0f}" font-size="11" fill="#334155">'
            f"{esc(label)}</text>"
        )
        lx += 22 + 6.5 * len(label)
    out += legend
    out[0] = out[0].replace(f'viewBox="0 0 {sw:.0f} ', f'viewBox="0 0 {max(sw, lx):.0f} ')
    out.append("</svg>")
    return "\n".join(out)


def placement_section(p: Placement) -> str:
    f, d = p.floor, p.demand
    hall_of_rack = f.pos_hall[p.rack_position]
    racks = np.bincount(hall_of_rack, minlength=f.n_halls)
    power = np.bincount(hall_of_rack, weights=d.rack_power_w, minlength=f.n_halls)
    free = np.bincount(f.pos_hall[f.pos_state == 0], minlength=f.n_halls)
    rows = []
    for h in range(f.n_halls):
        budget = f.hall_power_w[h]
        anchor = esc(f.hall_names[h].replace("/", "-"))
        rows.append(
            "<tr>"
            + _td(f'<a href="#hall-{anchor}">{esc(f.hall_names[h])}</a>')
            + _td(f"{int(racks[h]):,}", True)
            + _td(f"{int(free[h]):,}", True)
            + _td(f"{power[h] / 1e6:,.2f} MW", True)
            + _td("no limit" if np.isinf(budget) else f"{budget / 1e6:,.2f} MW", True)
            + "</tr>"
        )
    halls = _table(
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
    solves = _table(
        [
            ("Model", False),
            ("Status", False),
            ("Units", True),
            ("Objective", True),
            ("Bound", True),
            ("Gap", True),
        ],
        [
            "<tr>"
            + _td(esc(s.name))
            + _td(esc(s.status))
            + _td(f"{s.units:,}", True)
            + _td(f"{s.objective:,.1f}", True)
            + _td(f"{s.bound:,.1f}", True)
            + _td(f"{s.gap * 100:.2f}%", True)
            + "</tr>"
            for s in p.solves
        ],
        table_id="placement-solves",
        css_class="placement",
    )
    tiers = ("host-leaf", "leaf-spine", "spine-core")
    lengths = _table(
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
            + _td(esc(x.fabric))
            + _td(tiers[x.tier - 1])
            + _td(f"{x.links:,}", True)
            + _td(f"{x.total_m:,.0f} m", True)
            + _td(f"{x.longest_m:,.1f} m", True)
            + _td(f"{x.inter_hall:,}", True)
            + "</tr>"
            for x in p.lengths
        ],
        table_id="placement-lengths",
        css_class="placement",
    )
    figures = [
        f'<figure id="hall-{esc(f.hall_names[h].replace("/", "-"))}">{hall_svg(p, h)}'
        f"<figcaption>Hall {esc(f.hall_names[h])}: racks coloured by role, the band under each "
        "position is its row's feed; the dot is the door.</figcaption></figure>"
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
        f"{p.gap * 100:.2f}% (of the decomposed problem: campus, then each hall)."
    )
    return (
        '<section id="placement"><h2>Placement</h2>\n'
        f'<p class="lead">{esc(lead)}</p>\n<h3>Halls</h3>\n{halls}\n'
        f"<h3>Link lengths over the floor</h3>\n{lengths}\n<h3>Solver</h3>\n{solves}\n"
        + "\n".join(figures)
        + more
        + "</section>"
    )
