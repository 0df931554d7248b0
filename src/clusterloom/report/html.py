"""The design report: one self-contained HTML page (inline CSS and SVG; no scripts, fonts, images
or links to fetch), deterministic for a given design.

Sections: title and provenance; a summary of the cluster and of each fabric; per fabric a tier
diagram of one plane, its lines of the bill of materials and the options compared; placement and
cabling when they ran; the simulation of the spec's scenario when it ran (the parts of
``simulation.html``, ``report.simulation``); the design's one bill of materials (``Design.bom``:
every line and the total, labelled an estimate when no cabling ran); the findings. Every piece
of text that comes from the spec or the catalog is HTML-escaped.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from clusterloom.design_bom import ESTIMATE, DesignBomLine
from clusterloom.fabric import FabricDesign, FabricOption
from clusterloom.fabric.bom import LINK_TIER_NAMES
from clusterloom.fabric.topology import Role
from clusterloom.findings import Finding, Severity
from clusterloom.pipeline import Design
from clusterloom.report._html import CSS, DASH, esc, table, td, toc
from clusterloom.units import (
    BPS_PER_GBPS,
    to_gbps,
    to_kilowatts,
    to_megawatts,
    to_tbps,
    to_usd,
    to_watts,
)

# --- formatting ---------------------------------------------------------------------------

TIMES = "\u00d7"  # multiplication sign


def _int(n: int) -> str:
    return f"{n:,}"


def _kw(watts: float) -> str:
    return f"{to_kilowatts(watts):,.1f} kW"


def _power(watts: float) -> str:
    return f"{to_megawatts(watts):,.2f} MW" if watts >= 1e6 else _kw(watts)


def _usd(amount: float) -> str:
    return f"${amount:,.0f}"


def _cents(amount: int) -> str:
    """A BOM figure in cents, as dollars to the cent."""
    return f"${to_usd(amount):,.2f}"


def _watts(mw: int) -> str:
    """A BOM power in milliwatts, as watts to 0.1 W."""
    return f"{to_watts(mw):,.1f} W"


def _usd_short(amount: float) -> str:
    for scale, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if amount >= scale:
            return f"${amount / scale:,.2f}{suffix}"
    return f"${amount:,.0f}"


def _bandwidth(bps: float) -> str:
    if bps >= 1e15:
        return f"{bps / 1e15:,.2f} Pb/s"
    if bps >= 1e12:
        return f"{to_tbps(bps):,.1f} Tb/s"
    return f"{to_gbps(bps):,.0f} Gb/s"


def _gbps(speed: int) -> str:
    return f"{speed / 1000:g}T" if speed >= 1000 else f"{speed}G"


def _title(name: str) -> str:
    return name[:1].upper() + name[1:]


# --- summary ------------------------------------------------------------------------------


def _summary(design: Design) -> str:
    c = design.spec.compute
    bom = design.bom
    note = "" if bom.cabled else f" ({ESTIMATE})"
    counts = {s: sum(1 for f in design.findings if f.severity is s) for s in Severity}
    cards = [
        (_int(c.accelerators), "accelerators"),
        (_int(c.nodes), f"nodes of {c.accelerators_per_node}"),
        (_int(bom.switches), "switches"),
        (_power(to_watts(bom.power_mw)), f"network power{note}"),
        (_usd_short(to_usd(bom.cost_cents)), f"indicative cost{note}"),
        (f"{counts[Severity.ERROR]} / {counts[Severity.WARNING]}", "errors / warnings"),
    ]
    card_html = "".join(
        f'<div class="card"><b>{esc(v)}</b><span>{esc(k)}</span></div>' for v, k in cards
    )
    headers = [
        ("Fabric", False),
        ("Family", False),
        ("Tiers", True),
        (f"Planes {TIMES} speed", True),
        ("Switches", True),
        ("Links", True),
        ("Transceivers", True),
        ("Power", True),
        ("Indicative cost", True),
        ("Bisection / plane", True),
        ("Bisection total", True),
    ]
    rows = []
    for fd in design.fabrics:
        p, share = fd.plan, bom.share(fd.name)
        rows.append(
            "<tr>"
            + "".join(
                [
                    td(f'<a href="#fabric-{esc(fd.name)}">{esc(_title(fd.name))}</a>'),
                    td(esc(p.family)),
                    td(str(p.tiers), True),
                    td(esc(f"{p.planes} {TIMES} {_gbps(p.speed_gbps)}"), True),
                    td(_int(share.switches), True),
                    td(_int(share.links), True),
                    td(_int(share.transceivers), True),
                    td(esc(_power(to_watts(share.power_mw))), True),
                    td(esc(_usd(to_usd(share.cost_cents))), True),
                    td(esc(_bandwidth(p.bisection_bps)), True),
                    td(esc(_bandwidth(p.bisection_bps * p.planes)), True),
                ]
            )
            + "</tr>"
        )
    description = design.spec.description.strip()
    lead = f'<p class="lead">{esc(description)}</p>' if description else ""
    basis = (
        f'<p class="muted">Power and cost: the <a href="#bom">bill of materials</a>, '
        f"{esc(bom.label)}.</p>"
    )
    return (
        f'<section id="summary"><h2>Summary</h2>{lead}<div class="cards">{card_html}</div>\n'
        + table(headers, rows, table_id="summary-fabrics", css_class="summary")
        + basis
        + "</section>"
    )


# --- tier diagram ---------------------------------------------------------------------------

TIER_COLOURS = {"leaf": "#2563eb", "spine": "#7c3aed", "core": "#db2777", "host": "#475569"}
LINK_COLOURS = {1: "#94a3b8", 2: "#93c5fd", 3: "#c4b5fd"}
#: host links of accelerator g take colour g: the rails of a rail-optimized fabric stand out
RAIL_COLOURS = (
    "#0ea5e9",
    "#22c55e",
    "#f59e0b",
    "#ef4444",
    "#8b5cf6",
    "#14b8a6",
    "#ec4899",
    "#84cc16",
)
MAX_BOXES = 8
LANE_SIZE, LANE_GAP = 7.0, 2.0


def _lane_x(lane: int, lanes: int) -> float:
    """Offset from a server box's centre to the centre of accelerator ``lane``'s square."""
    total = lanes * LANE_SIZE + (lanes - 1) * LANE_GAP
    return -total / 2 + lane * (LANE_SIZE + LANE_GAP) + LANE_SIZE / 2


@dataclass(frozen=True)
class _Row:
    """One row of the diagram: which items are drawn (an index, or None for the ellipsis)."""

    role: str
    y: float
    items: tuple[int | None, ...]
    box_w: float
    box_h: float


def _shown(count: int) -> tuple[int | None, ...]:
    """Indices drawn for a tier of ``count``: all when few, else the first ones, a gap and the
    last one."""
    if count <= MAX_BOXES:
        return tuple(range(count))
    return (*range(MAX_BOXES - 2), None, count - 1)


def _xs(n: int, left: float, right: float) -> list[float]:
    slot = (right - left) / n
    return [left + slot * (i + 0.5) for i in range(n)]


def _pairs(
    fd: FabricDesign, tier: int, lower: list[int], upper: list[int]
) -> list[tuple[int, int, int]]:
    """Which (lower, upper) pairs among the drawn ones share a link in plane 0, as sorted
    (lower, upper, lane) triples: on host links ``lower`` is the node and ``lane`` the
    accelerator within it, elsewhere ``lane`` is 0."""
    t = fd.topology
    sel = (t.link_plane == 0) & (t.link_tier == tier)
    src, dst = t.link_src[sel].astype(np.int64), t.link_dst[sel].astype(np.int64)
    lane = np.zeros_like(src)
    if tier == 1:
        src, lane = np.divmod(src, fd.plan.hosts_per_node)  # hosts are drawn per node
    keep = np.isin(src, lower) & np.isin(dst, upper)
    triples = set(zip(src[keep].tolist(), dst[keep].tolist(), lane[keep].tolist(), strict=True))
    return sorted(triples)


def _tier_text(fd: FabricDesign, role: str) -> tuple[str, str, str]:
    tier = fd.plan.tier(role)  # type: ignore[arg-type]
    ports = (
        f"{tier.down} down / {tier.up} up of {tier.radix}"
        if tier.up
        else (f"{tier.down} down of {tier.radix}")
    )
    return f"{_title(role)} {TIMES} {_int(tier.count)}", tier.model, ports


def _link_text(fd: FabricDesign, tier: int) -> tuple[str, str]:
    p = fd.plan
    count = p.links_per_tier[tier - 1]
    media = p.media[tier - 1]
    if tier == 1:
        if p.family == "rail-optimized":
            how = f"rail r of each node → rail-r leaf; SU of {_int(p.su_nodes)} nodes"
        else:
            how = f"top of rack: {_int(p.nodes_per_leaf)} nodes per leaf"
    elif tier == 2:
        up = p.tier("leaf").up
        how = f"each leaf → {p.spines_per_pod} spines, {up // p.spines_per_pod} link(s) each"
    else:
        up = p.tier("spine").up
        how = f"each spine → {p.cores_per_group} cores, {up // p.cores_per_group} link(s) each"
    return f"{_int(count)} links · {media} · {_gbps(p.speed_gbps)}", how


def tier_diagram(fd: FabricDesign) -> str:
    """An SVG of one plane of ``fd``: a row of boxes per switch tier (top tier first) with the
    links between the drawn switches, and a row of servers below; counts, models and media in
    the left column."""
    p, t = fd.plan, fd.topology
    left, right = 310.0, 1020.0
    width = right + 36
    row_gap, top = 124.0, 56.0
    # accelerators drawn inside each server box (none on a frontend or for very wide nodes)
    lanes = p.hosts_per_node if p.host_kind == "accelerator" and p.hosts_per_node <= 16 else 0
    roles = [tier.role for tier in p.switch_tiers][::-1]  # top tier first
    rows: list[_Row] = []
    for i, role in enumerate(roles):
        rows.append(_Row(role, top + i * row_gap, _shown(p.tier(role).count), 86.0, 30.0))
    frame_bottom = rows[-1].y + 30 + 22
    host_y = frame_bottom + 72
    rows.append(_Row("host", host_y, _shown(p.nodes), 86.0, 40.0))
    height = host_y + 40 + 46

    out: list[str] = [
        f'<svg viewBox="0 0 {width:.0f} {height:.0f}" '
        f'role="img" aria-label="{esc(_title(fd.name))} fabric, one plane" '
        'font-family="system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif" '
        f'class="tiers" data-fabric="{esc(fd.name)}">'
    ]
    # plane frame (stacked when there are several planes)
    fx, fy, fw, fh = left - 22, top - 34, right - left + 34, frame_bottom - top + 34
    stack = min(p.planes - 1, 2)
    for k in range(stack, 0, -1):
        out.append(
            f'<rect x="{fx + 6 * k:.1f}" y="{fy - 6 * k:.1f}" width="{fw:.1f}" '
            f'height="{fh:.1f}" rx="10" fill="#f8fafc" stroke="#cbd5e1"/>'
        )
    out.append(
        f'<rect x="{fx:.1f}" y="{fy:.1f}" width="{fw:.1f}" height="{fh:.1f}" rx="10" '
        'fill="#fbfdff" stroke="#94a3b8"/>'
    )
    plane_label = (
        f"plane 0 of {p.planes}  ·  {TIMES} {p.planes} identical planes"
        if p.planes > 1
        else "one plane"
    )
    out.append(
        f'<text x="{fx + 12:.1f}" y="{fy + 18:.1f}" font-size="12" fill="#475569" '
        f'font-weight="600">{esc(plane_label)}</text>'
    )

    # positions of drawn items: node id -> x
    xs_by_row: list[dict[int, float]] = []
    for row in rows:
        xs = _xs(len(row.items), left, right)
        ids: dict[int, float] = {}
        for item, x in zip(row.items, xs, strict=True):
            if item is None:
                continue
            node = item if row.role == "host" else t.switch_id(0, Role[row.role.upper()], item)
            ids[node] = x
        xs_by_row.append(ids)

    # links, under the boxes: between row i (upper) and row i + 1 (lower)
    n_rows = len(rows)
    for i in range(n_rows - 1):
        upper, lower = rows[i], rows[i + 1]
        tier = n_rows - 1 - i  # link tier: 1 host-leaf, 2 leaf-spine, 3 spine-core
        pairs = _pairs(fd, tier, list(xs_by_row[i + 1]), list(xs_by_row[i]))
        span = right - left
        for lo, hi, lane in pairs:
            xl, xu = xs_by_row[i + 1][lo], xs_by_row[i][hi]
            if tier == 1 and lanes > 0:
                x1 = xl + _lane_x(lane, lanes)  # from the accelerator's square
                colour = RAIL_COLOURS[lane % len(RAIL_COLOURS)]
            else:
                x1 = xl + (xu - xl) / span * lower.box_w * 0.7  # spread over the box top
                colour = LINK_COLOURS[tier]
            x2 = xu + (xl - xu) / span * upper.box_w * 0.7
            out.append(
                f'<line x1="{x1:.1f}" y1="{lower.y:.1f}" x2="{x2:.1f}" '
                f'y2="{upper.y + upper.box_h:.1f}" stroke="{colour}" stroke-width="1.2" '
                'opacity="0.8"/>'
            )
        first, second = _link_text(fd, tier)
        mid = (upper.y + upper.box_h + lower.y) / 2
        out.append(
            f'<text x="18" y="{mid - 3:.1f}" font-size="12.5" fill="#0f172a">{esc(first)}</text>'
        )
        out.append(
            f'<text x="18" y="{mid + 13:.1f}" font-size="11" fill="#64748b">{esc(second)}</text>'
        )
        out.append(
            f'<line x1="14" y1="{mid - 16:.1f}" x2="14" y2="{mid + 17:.1f}" '
            f'stroke="{LINK_COLOURS[tier]}" stroke-width="3"/>'
        )

    # boxes
    for row in rows:
        colour = TIER_COLOURS[row.role]
        xs = _xs(len(row.items), left, right)
        for item, x in zip(row.items, xs, strict=True):
            if item is None:
                out.append(
                    f'<text x="{x:.1f}" y="{row.y + row.box_h / 2 + 5:.1f}" font-size="18" '
                    f'text-anchor="middle" fill="#64748b">⋯</text>'
                )
                continue
            bx = x - row.box_w / 2
            if row.role == "host":
                label = f"node{item:05d}"
                out.append(
                    f'<rect x="{bx:.1f}" y="{row.y:.1f}" width="{row.box_w:.1f}" '
                    f'height="{row.box_h:.1f}" rx="5" fill="#f1f5f9" stroke="{colour}"/>'
                )
                out.append(
                    f'<text x="{x:.1f}" y="{row.y + 15:.1f}" font-size="11" '
                    f'text-anchor="middle" fill="#0f172a">{label}</text>'
                )
                for g in range(lanes):
                    gx = x + _lane_x(g, lanes) - LANE_SIZE / 2
                    out.append(
                        f'<rect x="{gx:.1f}" y="{row.y + 23:.1f}" width="{LANE_SIZE:.0f}" '
                        f'height="{LANE_SIZE:.0f}" rx="1.5" '
                        f'fill="{RAIL_COLOURS[g % len(RAIL_COLOURS)]}"/>'
                    )
                continue
            name = f"{row.role}{item:04d}"
            out.append(
                f'<rect x="{bx:.1f}" y="{row.y:.1f}" width="{row.box_w:.1f}" '
                f'height="{row.box_h:.1f}" rx="5" fill="{colour}"/>'
            )
            out.append(
                f'<text x="{x:.1f}" y="{row.y + 19.5:.1f}" font-size="11.5" '
                f'text-anchor="middle" fill="#ffffff" font-weight="600">{name}</text>'
            )
        # left column: what the row is
        if row.role == "host":
            kind = "accelerators" if p.host_kind == "accelerator" else "nodes"
            lines = (
                f"Servers {TIMES} {_int(p.nodes)}",
                f"{_int(p.hosts)} {kind}",
                f"{p.ports_per_host * p.planes} {TIMES} {_gbps(p.speed_gbps)} per "
                f"{'accelerator' if p.host_kind == 'accelerator' else 'node'}",
            )
        else:
            lines = _tier_text(fd, row.role)
        ty = row.y + 2
        out.append(
            f'<text x="18" y="{ty + 10:.1f}" font-size="14" font-weight="700" '
            f'fill="{colour}">{esc(lines[0])}</text>'
        )
        out.append(
            f'<text x="18" y="{ty + 26:.1f}" font-size="12" fill="#0f172a">{esc(lines[1])}</text>'
        )
        out.append(
            f'<text x="18" y="{ty + 41:.1f}" font-size="11" fill="#64748b">{esc(lines[2])}</text>'
        )
    out.append("</svg>")
    return "\n".join(out)


# --- per-fabric tables --------------------------------------------------------------------


def bom_table(lines: Sequence[DesignBomLine], table_id: str, total: str) -> str:
    """Lines of the design's BOM (``Design.bom``) and a total row (``id="{table_id}-total"``)
    that sums them: power to 0.1 W, cost to the cent."""
    headers = [
        ("Fabric", False),
        ("Tier", False),
        ("Category", False),
        ("Item", False),
        ("Length", True),
        ("Quantity", True),
        ("Unit power", True),
        ("Power", True),
        ("Unit cost", True),
        ("Cost", True),
        ("Basis", False),
    ]
    rows = [
        "<tr>"
        + "".join(
            [
                td(esc(line.fabric or "shared plant")),
                td(esc(line.tier)),
                td(esc(line.category)),
                td(f"<code>{esc(line.item)}</code>"),
                td(esc(f"{line.length_m:g} m") if line.length_m else "", True),
                td(_int(line.quantity), True),
                td(esc(f"{to_watts(line.unit_power_mw):g} W"), True),
                td(esc(_watts(line.power_mw)), True),
                td(esc(_cents(line.unit_cost_cents)), True),
                td(esc(_cents(line.cost_cents)), True),
                td(esc(ESTIMATE if line.basis == "estimate" else line.basis)),
            ]
        )
        + "</tr>"
        for line in lines
    ]
    power = sum(line.power_mw for line in lines)
    cost = sum(line.cost_cents for line in lines)
    rows.append(
        f'<tr class="total" id="{esc(table_id)}-total">'
        + "".join(
            [
                td("Total"),
                f'<td colspan="6">{esc(total)}</td>',
                td(esc(_watts(power)), True),
                td(""),
                td(esc(_cents(cost)), True),
                td(""),
            ]
        )
        + "</tr>"
    )
    return table(headers, rows, table_id=table_id, css_class="bom")


def _fabric_bom(design: Design, fd: FabricDesign) -> str:
    share = design.bom.share(fd.name)
    what = (
        f"{fd.name}: {_int(share.switches)} switches, {_int(share.transceivers)} "
        f"transceivers, {_int(share.links)} links, {_int(share.fibers)} fibres"
    )
    return bom_table(design.bom.of_fabric(fd.name), f"bom-{fd.name}", what)


def bom_section(design: Design) -> str:
    """The design's one bill of materials, every line and the total."""
    bom = design.bom
    if bom.cabled:
        lead = (
            "Switches from the fabric stage; cables, transceivers, patch cords, trunks, "
            "splices and panels as the cabling stage chose them from real lengths. Lines "
            "without a fabric are the plant the fabrics share."
        )
    else:
        lead = (
            f"Switches from the fabric stage; link media are an {ESTIMATE}: one medium "
            "per tier as the fabric stage assumed it. A site in the spec and a full design "
            "run let the cabling stage choose them from real lengths."
        )
    total = f"the design, {bom.label}"
    return (
        f'<section id="bom"><h2>Bill of materials &mdash; {esc(bom.label)}</h2>\n'
        f'<p class="lead">{esc(lead)}</p>\n'
        + bom_table(bom.lines, "bom-design", total)
        + "\n</section>"
    )


def _option_row(o: FabricOption, chosen_cost: float) -> str:
    label = esc(o.label) + ('<span class="badge chosen">chosen</span>' if o.chosen else "")
    shape = esc(f"{o.planes} {TIMES} {_gbps(o.speed_gbps)}")
    tiers = str(o.tiers) if o.tiers else DASH
    if o.infeasible:
        label += '<span class="badge no">infeasible</span>'
        return (
            '<tr class="infeasible">'
            + td(label)
            + td(tiers, True)
            + td(shape, True)
            + f'<td colspan="8" class="reason">{esc(o.infeasible)}</td></tr>'
        )
    delta = "" if o.chosen or not chosen_cost else f"{(o.cost_usd / chosen_cost - 1) * 100:+.0f}%"
    css = ' class="chosen"' if o.chosen else ""
    return (
        f"<tr{css}>"
        + "".join(
            [
                td(label),
                td(tiers, True),
                td(shape, True),
                td(_int(o.switches), True),
                td(_int(o.links), True),
                td(_int(o.transceivers), True),
                td(esc(_power(o.power_w)), True),
                td(esc(_usd_short(o.cost_usd)), True),
                td(esc(delta), True),
                td(esc(f"{o.bisection_per_host_gbps:,.0f} Gb/s"), True),
                td(_int(o.ecmp_paths), True),
            ]
        )
        + "</tr>"
    )


def _options_table(fd: FabricDesign) -> str:
    if not fd.options:
        return '<p class="muted">No alternatives were compared for this fabric.</p>'
    headers = [
        ("Option", False),
        ("Tiers", True),
        (f"Planes {TIMES} speed", True),
        ("Switches", True),
        ("Links", True),
        ("Transceivers", True),
        ("Power", True),
        ("Cost", True),
        ("vs chosen", True),
        ("Bisection / host", True),
        ("ECMP paths", True),
    ]
    chosen_cost = next((o.cost_usd for o in fd.options if o.chosen), 0.0)
    rows = [_option_row(o, chosen_cost) for o in fd.options]
    return table(headers, rows, table_id=f"options-{fd.name}", css_class="options")


def _fabric_section(design: Design, fd: FabricDesign) -> str:
    p = fd.plan
    speed = p.speed_gbps * BPS_PER_GBPS
    tiers = " · ".join(f"{_int(t.count * p.planes)} {t.role}" for t in p.switch_tiers)
    lead = (
        f"{p.tiers}-tier {p.family} Clos, {p.planes} plane(s) at {_gbps(p.speed_gbps)}: "
        f"{tiers}. Bisection {_bandwidth(p.bisection_bps)} per plane "
        f"({_bandwidth(p.bisection_bps * p.planes)} in all; full bisection "
        f"{_bandwidth(p.full_bisection_bps)} per plane), {p.ecmp_paths()} equal-cost paths "
        f"between the farthest leaves, {_int(p.endpoints)} host ports of "
        f"{_bandwidth(speed)} per plane."
    )
    media = ", ".join(
        f"{name.replace('_', DASH)}: {m}" for name, m in zip(LINK_TIER_NAMES, p.media, strict=False)
    )
    caption = (
        f"One plane of {p.planes}; boxes are switches (the first ones, ⋯, the last), "
        f"lines the links between the switches drawn. Media the fabric stage assumed — "
        f"{media}."
    )
    return (
        f'<section id="fabric-{esc(fd.name)}"><h2>{esc(_title(fd.name))} fabric</h2>\n'
        f'<p class="lead">{esc(lead)}</p>\n'
        f"<figure>{tier_diagram(fd)}<figcaption>{esc(caption)}</figcaption></figure>\n"
        f"<h3>Bill of materials &mdash; {esc(design.bom.label)}</h3>\n"
        f"{_fabric_bom(design, fd)}\n"
        f"<h3>Options compared &mdash; each priced with assumed media (an estimate)</h3>\n"
        f"{_options_table(fd)}\n</section>"
    )


def _findings_table(findings: Sequence[Finding]) -> str:
    ordered = sorted(findings, key=lambda f: -f.severity.rank)  # stable: errors first
    if not ordered:
        return '<section id="findings"><h2>Findings</h2><p class="muted">No findings.</p></section>'
    headers = [("Severity", False), ("Code", False), ("Message", False), ("Where", False)]
    rows = [
        f'<tr class="{esc(f.severity.value)}">'
        + td(f'<span class="sev {esc(f.severity.value)}">{esc(f.severity.value)}</span>')
        + td(f"<code>{esc(f.code)}</code>")
        + td(esc(f.message))
        + td(f"<code>{esc(f.where)}</code>")
        + "</tr>"
        for f in ordered
    ]
    return (
        '<section id="findings"><h2>Findings</h2>\n'
        + table(headers, rows, table_id="findings-table", css_class="findings")
        + "</section>"
    )


_SECTION = re.compile(r'<section id="([^"]+)"[^>]*>\s*<h2>(.*?)</h2>', re.S)


def _section_titles(sections: Sequence[str]) -> list[tuple[str, str]]:
    """(id, title) of each section, read from its markup (titles as plain text)."""
    out = []
    for markup in sections:
        m = _SECTION.search(markup)
        if m:
            title = html.unescape(re.sub(r"<[^>]+>", "", m.group(2)))
            out.append((html.unescape(m.group(1)), title))
    return out


def render_report(design: Design) -> str:
    """The report of ``design`` as one self-contained HTML page."""
    prov = design.provenance
    name = esc(prov.spec_name)
    provenance = (
        '<dl class="prov">'
        f"<dt>spec</dt><dd>{name}</dd>"
        f"<dt>spec hash</dt><dd>sha256:{esc(prov.spec_hash)}</dd>"
        f"<dt>clusterloom</dt><dd>{esc(prov.clusterloom_version)}</dd>"
        "</dl>"
    )
    sections = [_summary(design)]
    # the sections are imported when their stage ran (placement's pulls in OR-Tools)
    if design.workload is not None:
        from clusterloom.report.workload import workload_section

        sections.append(workload_section(design.spec, design.workload))
    sections += [_fabric_section(design, fd) for fd in design.fabrics]
    if design.placement is not None:
        from clusterloom.report.placement import placement_section

        sections.append(placement_section(design.placement))
    if design.cabling is not None:
        from clusterloom.report.cabling import cabling_section

        sections.append(cabling_section(design.cabling))
    if design.prediction is not None and design.prediction.runs:
        from clusterloom.report.simulation import simulation_section

        sections.append(simulation_section(design.prediction))
    if design.growth is not None:
        from clusterloom.report.growth import growth_section

        sections.append(growth_section(design.growth, design.fabrics))
    sections.append(bom_section(design))
    sections.append(_findings_table(design.findings))
    body = "\n".join(sections)
    contents = toc(_section_titles(sections))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{name} — clusterloom design report</title>\n"
        f"<style>{CSS}</style>\n</head>\n<body>\n<main>\n"
        f"<header><h1>{name}<small>clusterloom design report</small></h1>{provenance}</header>\n"
        f"{contents}\n{body}\n"
        "<footer>Costs are indicative list prices for comparing options, not quotes. Power is "
        "typical switch power without optics plus optics and active cables.</footer>\n"
        "</main>\n</body>\n</html>\n"
    )
