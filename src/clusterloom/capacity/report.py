"""``plan.html``: a capacity plan on one self-contained page (the pieces of ``report._html`` and
``report._svg``; no script, no external file).

- **Demand and supply fan charts** per site: over the periods, the scenarios' 10-90 % and
  25-75 % bands and median of the accelerators wanted (demand) and delivered (supply).
- **The roofline** per site: the accelerators the site's power and positions can hold in each
  period (median over scenarios; the curves of the first fabric choice inverted: the largest
  size whose power, or positions, fit), against median and 90 % demand; and for the whole
  plan the same with the **supply** roof: per part, the units installed plus every cap that
  can arrive by the period at the part's median lead time, as the accelerators that many
  units serve (summed over sites on the first choice's curve of site 0), the lowest part
  binding.
- **Scenario coverage**: each kind of shock and the share of scenarios that drew it.
- **The menu**, when one is given: each move with its costs, option value, the scenarios it
  protects and its reasons.
- **Learning from outcomes**, when the plan's forecasts were corrected (``plan
  --learn-from``): per source the outcomes, the bias and its error, the factor applied by
  lead, the spread against the stated and the scaling applied; what was applied, in words.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from clusterloom.capacity.model import CapacityProblem, Curves
from clusterloom.report._html import CSS, DASH, esc, table, td, toc
from clusterloom.report._svg import FONT

__all__ = ["MenuLike", "MoveLike", "render_plan", "roofline", "shock_kind"]

_W, _H, _LEFT, _RIGHT, _TOP, _BOTTOM = 620.0, 230.0, 64.0, 120.0, 14.0, 34.0
_BLUE, _ORANGE = "#2563eb", "#ea580c"
#: the page's own additions to the shared style sheet: reasons wide enough to read
_CSS = "td.reasons { min-width: 24em; } td.reasons ul { margin: 0; padding-left: 16px; }\n"
_ROOF = {"power": "#dc2626", "space": "#7c3aed", "supply": "#0f766e"}


class MoveLike(Protocol):
    name: str
    kind: str
    site: str
    part: str | None
    period: str
    quantity: float
    expected_cost_cents: float
    cvar_cents: float
    protects: tuple[str, ...]
    option_value_cents: float
    reasons: tuple[str, ...]


class MenuLike(Protocol):
    """What the page reads of ``capacity.menu.Menu``."""

    @property
    def moves(self) -> Sequence[MoveLike]: ...

    @property
    def expected_cost_cents(self) -> float: ...

    @property
    def cvar_cents(self) -> float: ...


def _usd(value_cents: float) -> str:
    return f"${value_cents / 100:,.0f}"


def _invert(curve: NDArray[np.float64], sizes: NDArray[np.float64], have: NDArray[Any]) -> Any:
    """Accelerators whose ``curve`` value (rising with size) fits in ``have``: linear between
    the sizes, on the last segment beyond the largest."""
    c = np.maximum.accumulate(curve)
    if c[-1] <= 0:
        return np.full(np.shape(have), np.inf)
    inside = np.interp(have, c, sizes)
    slope = (c[-1] - c[-2]) / (sizes[-1] - sizes[-2]) if c[-1] > c[-2] else 0.0
    beyond = sizes[-1] + (np.asarray(have) - c[-1]) / slope if slope > 0 else sizes[-1]
    return np.where(np.asarray(have) > c[-1], beyond, inside)


def roofline(problem: CapacityProblem) -> dict[str, NDArray[np.float64]]:
    """The roofs of the page (module docstring): ``power`` and ``space`` [N, T] per site,
    median over scenarios, and ``supply`` [T] for the whole plan, in accelerators."""
    sc, cv = problem.scenarios, problem.curves
    sizes = cv.sizes.astype(np.float64)
    N, T = len(sc.sites), len(sc.periods)
    power = np.zeros((N, T))
    space = np.zeros((N, T))
    for n in range(N):
        power[n] = _invert(cv.power_kw[n, 0], sizes, np.median(sc.power_kw[:, n], axis=0))
        space[n] = _invert(cv.positions[n, 0], sizes, np.median(sc.positions[:, n], axis=0))
    supply = np.full(T, np.inf)
    lead = np.median(sc.lead_time, axis=0).astype(np.int64)  # [P]
    for p in range(len(cv.parts)):
        curve = cv.units[0, 0, :, p]
        if curve[-1] <= 0:
            continue  # this choice does not use the part
        arrived = np.zeros(T)
        cum = np.cumsum(problem.costs.cap[p])
        for t in range(T):
            ordered_by = t - int(lead[p])
            arrived[t] = cum[ordered_by] if ordered_by >= 0 else 0.0
        have = problem.installed_units[:, p].sum() + arrived
        supply = np.minimum(supply, _invert(curve, sizes, have))
    return {"power": power, "space": space, "supply": supply}


def _y_scale(top: float) -> tuple[float, list[float]]:
    if top <= 0:
        return 1.0, [0.0]
    step = 10 ** np.floor(np.log10(top / 4))
    for m in (1, 2, 5, 10):
        if top / (m * step) <= 5:
            step *= m
            break
    ymax = float(np.ceil(top / step) * step)
    return ymax, [float(v) for v in np.arange(0, ymax + step / 2, step)]


def _chart(
    title: str,
    periods: Sequence[str],
    fans: Sequence[tuple[str, str, NDArray[np.float64]]],
    lines: Sequence[tuple[str, str, NDArray[np.float64], str]],
    cid: str,
) -> str:
    """An SVG chart over ``periods``: each fan (label, colour, samples [S, T]) as its 10-90 %
    and 25-75 % bands and median; each line (label, colour, values [T], dash)."""
    T = len(periods)
    finite = [np.percentile(f, 90, axis=0).max() for _, _, f in fans] + [
        float(np.nanmax(np.where(np.isfinite(v), v, np.nan))) if np.isfinite(v).any() else 0.0
        for _, _, v, _ in lines
    ]
    ymax, ticks = _y_scale(max([0.0, *finite]) * 1.05)
    w, h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM

    def x(t: float) -> float:
        return _LEFT + (w * t / (T - 1) if T > 1 else w / 2)

    def y(v: float) -> float:
        return _TOP + h * (1 - min(v, ymax) / ymax)

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="{esc(cid)}" viewBox="0 0 {_W:.0f} {_H:.0f}" '
        f'width="{_W:.0f}" height="{_H:.0f}" role="img" aria-label="{esc(title)}" '
        f'font-family="{FONT}" font-size="11">',
        f"<title>{esc(title)}</title>",
    ]
    for v in ticks:
        out.append(
            f'<line x1="{_LEFT}" x2="{_LEFT + w}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
            'stroke="#e5e7eb"/>'
            f'<text x="{_LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end">{v:,.0f}</text>'
        )
    step = max(1, T // 8)
    for t in range(0, T, step):
        out.append(
            f'<text x="{x(t):.1f}" y="{_H - 14}" text-anchor="middle">{esc(periods[t])}</text>'
        )
    legend_y = _TOP + 4
    for label, colour, samples in fans:
        q = np.percentile(samples, [10, 25, 50, 75, 90], axis=0)
        for lo, hi, alpha in ((0, 4, 0.15), (1, 3, 0.3)):
            band = [f"{x(t):.1f},{y(q[hi, t]):.1f}" for t in range(T)] + [
                f"{x(t):.1f},{y(q[lo, t]):.1f}" for t in reversed(range(T))
            ]
            out.append(
                f'<polygon points="{" ".join(band)}" fill="{colour}" fill-opacity="{alpha}"/>'
            )
        med = " ".join(f"{x(t):.1f},{y(q[2, t]):.1f}" for t in range(T))
        out.append(f'<polyline points="{med}" fill="none" stroke="{colour}" stroke-width="2"/>')
        out.append(
            f'<rect x="{_W - _RIGHT + 8}" y="{legend_y - 8}" width="10" height="10" '
            f'fill="{colour}"/>'
            f'<text x="{_W - _RIGHT + 22}" y="{legend_y + 1}">{esc(label)}</text>'
        )
        legend_y += 16
    for label, colour, values, dash in lines:
        pts = " ".join(
            f"{x(t):.1f},{y(float(v)):.1f}" for t, v in enumerate(values) if np.isfinite(v)
        )
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(
            f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"{dashed}/>'
        )
        out.append(
            f'<line x1="{_W - _RIGHT + 8}" x2="{_W - _RIGHT + 18}" y1="{legend_y - 3}" '
            f'y2="{legend_y - 3}" stroke="{colour}" stroke-width="2"{dashed}/>'
            f'<text x="{_W - _RIGHT + 22}" y="{legend_y + 1}">{esc(label)}</text>'
        )
        legend_y += 16
    out.append(
        f'<text x="14" y="{_TOP + h / 2:.1f}" transform="rotate(-90 14 {_TOP + h / 2:.1f})" '
        'text-anchor="middle">accelerators</text></svg>'
    )
    return "\n".join(out)


def shock_kind(shock: str) -> str:
    """A shock's kind, for counting: its text with figures, quarters and shares taken out."""
    kind = re.sub(r"\d{4}Q[1-4]", "Q", shock)
    kind = re.sub(r"\(p\d+\)", "", kind)
    kind = re.sub(r"\d+%", "N%", kind)
    kind = re.sub(r"\d+ quarter", "N quarter", kind)
    return " ".join(kind.split())


def _coverage(problem: CapacityProblem) -> str:
    sc = problem.scenarios
    S = len(sc.shocks)
    counts = Counter(shock_kind(x) for shocks in sc.shocks for x in set(shocks))
    none = sum(1 for shocks in sc.shocks if not shocks)
    rows = [
        "<tr>" + td(esc(kind)) + td(f"{n:,}", True) + td(f"{100 * n / S:.1f} %", True) + "</tr>"
        for kind, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    rows.append(
        "<tr>"
        + td("<i>no shock</i>")
        + td(f"{none:,}", True)
        + td(f"{100 * none / S:.1f} %", True)
        + "</tr>"
    )
    return (
        f"<p>{S:,} equally likely scenarios, seed {sc.seed}. A scenario may draw several shocks; "
        "a program is named high or low when its draw is in the outer fifth.</p>\n"
        + table(
            [("shock", False), ("scenarios", True), ("share", True)],
            rows,
            table_id="coverage",
            css_class="data",
        )
    )


def _fans(problem: CapacityProblem) -> str:
    sc = problem.scenarios
    charts = []
    for n, site in enumerate(sc.sites):
        charts.append(
            f"<h3>{esc(site)}</h3><figure>"
            + _chart(
                f"{site}: accelerators wanted and delivered",
                sc.periods,
                [("demand", _BLUE, sc.demand[:, n]), ("delivered", _ORANGE, sc.accelerators[:, n])],
                [],
                f"fan-{n}",
            )
            + "</figure>"
        )
    lead = sc.lead_time
    rows = [
        "<tr>"
        + td(esc(part))
        + td(f"{np.median(lead[:, p]):.0f}", True)
        + td(f"{np.percentile(lead[:, p], 90):.0f}", True)
        + td(f"{lead[:, p].max():.0f}", True)
        + td(f"{problem.costs.cap[p].sum():,.0f}", True)
        + "</tr>"
        for p, part in enumerate(sc.parts)
    ]
    return (
        "\n".join(charts)
        + "\n<h3>Parts: lead times (quarters) and caps</h3>\n"
        + table(
            [
                ("part", False),
                ("median", True),
                ("90 %", True),
                ("max", True),
                ("cap over horizon", True),
            ],
            rows,
            table_id="lead-times",
            css_class="data",
        )
    )


def _roof(problem: CapacityProblem) -> str:
    sc, roofs = problem.scenarios, roofline(problem)
    choice = problem.curves.choices[0]
    parts = [
        f"<p>Roofs in accelerators: what the median scenario's power and positions hold on the "
        f"curves of <b>{esc(choice)}</b>, and for the whole plan the parts' caps arriving at "
        "their median lead time.</p>"
    ]
    for n, site in enumerate(sc.sites):
        parts.append(
            f"<h3>{esc(site)}</h3><figure>"
            + _chart(
                f"{site}: roofline",
                sc.periods,
                [("demand", _BLUE, sc.demand[:, n])],
                [
                    ("power", _ROOF["power"], roofs["power"][n], ""),
                    ("space", _ROOF["space"], roofs["space"][n], "6 3"),
                ],
                f"roof-{n}",
            )
            + "</figure>"
        )
    parts.append(
        "<h3>whole plan</h3><figure>"
        + _chart(
            "whole plan: roofline",
            sc.periods,
            [("demand", _BLUE, sc.demand.sum(axis=1))],
            [
                ("power", _ROOF["power"], roofs["power"].sum(axis=0), ""),
                ("space", _ROOF["space"], roofs["space"].sum(axis=0), "6 3"),
                ("supply", _ROOF["supply"], roofs["supply"], "2 2"),
            ],
            "roof-all",
        )
        + "</figure>"
    )
    return "\n".join(parts)


def _menu(menu: MenuLike) -> str:
    rows = []
    for i, m in enumerate(menu.moves):
        reasons = "".join(f"<li>{esc(r)}</li>" for r in m.reasons)
        protects = ", ".join(m.protects[:4]) + (" ..." if len(m.protects) > 4 else "")
        rows.append(
            "<tr>"
            + td(f"{i + 1}", True)
            + td(esc(m.name))
            + td(esc(m.kind))
            + td(esc(m.site or DASH))
            + td(esc(m.part or DASH))
            + td(esc(m.period or DASH))
            + td(f"{m.quantity:,.0f}", True)
            + td(_usd(m.expected_cost_cents), True)
            + td(_usd(m.cvar_cents), True)
            + td(_usd(m.option_value_cents), True)
            + td(f"{len(m.protects):,}: {esc(protects)}" if m.protects else DASH)
            + td(f"<ul>{reasons}</ul>" if reasons else DASH, css="reasons")
            + "</tr>"
        )
    lead = (
        f"<p>Expected cost {_usd(menu.expected_cost_cents)}, tail cost (CVaR) "
        f"{_usd(menu.cvar_cents)}. Moves ranked best first.</p>"
    )
    return lead + table(
        [
            ("#", True),
            ("move", False),
            ("kind", False),
            ("site", False),
            ("part", False),
            ("period", False),
            ("quantity", True),
            ("expected cost", True),
            ("CVaR", True),
            ("option value", True),
            ("protects", False),
            ("reasons", False),
        ],
        rows,
        table_id="menu",
        css_class="data",
    )


def _summary(name: str, problem: CapacityProblem) -> str:
    sc, cv = problem.scenarios, problem.curves
    sizes = ", ".join(f"{s:,}" for s in cv.sizes)
    return (
        f"<p>{len(sc.sites)} sites ({esc(', '.join(sc.sites))}), {len(sc.periods)} quarters "
        f"{esc(sc.periods[0])}{DASH}{esc(sc.periods[-1])}, {len(sc.parts)} parts, "
        f"{len(sc.shocks):,} scenarios (seed {sc.seed}). Fabric choices: "
        f"{esc(', '.join(cv.choices))}; curves designed at {sizes} accelerators per site and "
        "interpolated linearly in between.</p>" + _curves_table(cv)
    )


def _curves_table(cv: Curves) -> str:
    rows = []
    for n, site in enumerate(cv.sites):
        for c, choice in enumerate(cv.choices):
            k = len(cv.sizes) - 1
            rows.append(
                "<tr>"
                + td(esc(site))
                + td(esc(choice))
                + td(f"{cv.sizes[k]:,}", True)
                + td(f"{cv.power_kw[n, c, k]:,.0f}", True)
                + td(f"{cv.positions[n, c, k]:,.0f}", True)
                + td(f"{cv.units[n, c, k].sum():,.0f}", True)
                + td(f"{cv.max_accelerators[n, c]:,}", True)
                + "</tr>"
            )
    return table(
        [
            ("site", False),
            ("choice", False),
            ("largest size", True),
            ("IT kW there", True),
            ("positions there", True),
            ("part units there", True),
            ("tier limit", True),
        ],
        rows,
        table_id="curves",
        css_class="data",
    )


def _learning(learning: dict[str, Any]) -> str:
    """What learning from outcomes applied (``learn.Learned.to_dict()`` with its
    ``statements``): per source, the bias, spread, outcomes used and the correction."""
    rows = []
    for source, s in sorted(learning.get("sources", {}).items()):
        leads = ", ".join(
            f"{lb['lead']}: x{np.exp(lb['applied']):.3f}" for lb in s.get("by_lead", [])
        )
        err = s.get("stderr")
        cover = s.get("coverage")
        rows.append(
            "<tr>"
            + td(esc(source))
            + td(f"{s['outcomes']:,}", True)
            + td(f"{s['mean_log_ratio']:+.3f}" + (f" ± {err:.3f}" if err is not None else ""), True)
            + td(esc(leads) or DASH)
            + td(f"{s['spread_ratio']:.2f}", True)
            + td(f"x{s['spread']:.2f}", True)
            + td(f"{cover:.0%}" if cover is not None else DASH, True)
            + "</tr>"
        )
    said = "".join(f"<li>{esc(t)}</li>" for t in learning.get("statements", []))
    lead = (
        f"<p>Forecasts corrected by what {learning.get('decisions', 0):,} recorded decisions' "
        "outcomes say of each source: bias as the mean ln(actual / forecast median), shrunk "
        f"toward none with a prior worth {learning.get('prior_outcomes', 0):g} outcomes; "
        "spread as the realised error over the stated one.</p>"
    )
    return (
        lead
        + table(
            [
                ("source", False),
                ("outcomes", True),
                ("ln(actual/median)", True),
                ("applied factor by lead", False),
                ("spread / stated", True),
                ("quantiles scaled", True),
                ("10-90 % held", True),
            ],
            rows,
            table_id="learning-sources",
            css_class="data",
        )
        + (f"<ul>{said}</ul>" if said else "")
    )


def render_plan(
    name: str,
    problem: CapacityProblem,
    menu: MenuLike | None = None,
    learning: dict[str, Any] | None = None,
) -> str:
    """The page (module docstring); the same problem and menu give the same bytes.
    ``learning``: what learning from outcomes applied (``learn.Learned.to_dict()`` and its
    ``statements``), a section of its own."""
    sections = [
        ("summary", "Summary", _summary(name, problem)),
        ("fans", "Demand and supply", _fans(problem)),
        ("roofline", "Roofline: power, space and supply against demand", _roof(problem)),
        ("coverage", "Scenario coverage", _coverage(problem)),
    ]
    if learning is not None:
        sections.append(("learning", "Learning from outcomes", _learning(learning)))
    if menu is not None:
        sections.append(("menu", "Menu of moves", _menu(menu)))
    body = "\n".join(
        f'<section id="{sid}"><h2>{esc(t)}</h2>\n{html}</section>' for sid, t, html in sections
    )
    title = esc(name)
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{title} — clusterloom plan</title>\n"
        f"<style>{CSS}{_CSS}</style>\n</head>\n<body>\n<main>\n"
        f"<header><h1>{title}<small>clusterloom capacity plan</small></h1></header>\n"
        f"{toc([(sid, t) for sid, t, _ in sections])}\n{body}\n"
        "</main>\n</body>\n</html>\n"
    )
