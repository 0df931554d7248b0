"""An incident's timeline as one self-contained HTML page (``ops timeline``): the symptoms,
each suspect's confidence over time, the mitigations checked, the one chosen with its
decision and its predicted and measured effect. The charts are plotly's, with its script
inlined from the installed package (no network); the tables and style are the report's
(``report/_html.py``). The same incident renders to the same bytes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from clusterloom.report._html import CSS, esc, table, td, toc

if TYPE_CHECKING:
    from clusterloom.ops.incident import Incident

__all__ = ["effect_figure", "render_incident", "timeline_figure"]

#: the suspects drawn over time: the most confident ones
TOP_SUSPECTS = 8


def _s(ms: int, base: int) -> float:
    return (ms - base) / 1000.0


def _time(ps: int | None) -> str:
    from clusterloom.sim.flow.run import fmt_time

    return "-" if ps is None else fmt_time(ps)


def _timeline(inc: Incident) -> Any:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    base = inc.opened_ms
    fig = make_subplots(
        rows=2,
        cols=1,
        shared_xaxes=True,
        row_heights=[0.7, 0.3],
        vertical_spacing=0.06,
        subplot_titles=("Suspects' confidence", "Symptoms"),
    )
    best: dict[str, float] = {}
    for o in inc.observations:
        for s in o.suspects:
            best[s.target] = max(best.get(s.target, 0.0), s.confidence)
    top = sorted(best, key=lambda t: (-best[t], t))[:TOP_SUSPECTS]
    for target in top:
        xs, ys = [], []
        for o in inc.observations:
            hit = next((s for s in o.suspects if s.target == target), None)
            xs.append(_s(o.ts_ms, base))
            ys.append(hit.confidence if hit is not None else 0.0)
        fig.add_trace(
            go.Scatter(x=xs, y=ys, mode="lines+markers", name=esc(target), legendgroup="suspects"),
            row=1,
            col=1,
        )
    cong = [o for o in inc.observations if o.congestion]
    if cong:
        fig.add_trace(
            go.Scatter(
                x=[_s(o.ts_ms, base) for o in cong],
                y=[1.02] * len(cong),
                mode="markers",
                marker={"symbol": "triangle-down", "color": "#64748b"},
                name="called congestion",
            ),
            row=1,
            col=1,
        )
    kinds = sorted({s.kind for s in inc.symptoms})
    for k in kinds:
        mine = [s for s in inc.symptoms if s.kind == k]
        fig.add_trace(
            go.Scatter(
                x=[_s(s.ts_ms, base) for s in mine],
                y=[k] * len(mine),
                mode="markers",
                name=esc(k),
                text=[esc(f"{s.target}: {s.value:g} {s.note}".strip()) for s in mine],
                hoverinfo="text+x",
                legendgroup="symptoms",
            ),
            row=2,
            col=1,
        )
    c = inc.chosen
    if c is not None:
        events = [(c.proposed_ms, "proposed", c.mitigation)]
        if c.decided_ms is not None:
            events.append((c.decided_ms, f"{c.status} by {c.decided_by}", c.proposal))
        if c.measured_ms is not None:
            events.append((c.measured_ms, f"measured {_time(c.measured_ps)}", ""))
        for n, (at, label, hover) in enumerate(events):
            fig.add_vline(x=_s(at, base), line_dash="dot", line_color="#2563eb")
            fig.add_annotation(
                x=_s(at, base),
                y=1.06 + 0.05 * n,  # staggered: events close in time stay readable
                yref="paper",
                text=esc(label),
                hovertext=esc(hover) or None,
                showarrow=False,
            )
    fig.update_yaxes(title_text="confidence", range=[0, 1.1], row=1, col=1)
    fig.update_xaxes(title_text="seconds since the incident opened", row=2, col=1)
    fig.update_layout(height=580, margin={"t": 90, "l": 60, "r": 20, "b": 50}, template="none")
    return fig


def _effect_chart(inc: Incident) -> Any:
    import plotly.graph_objects as go

    c = inc.chosen
    assert c is not None
    names = ["doing nothing (predicted)", esc(f"{c.mitigation} (predicted)")]
    values = [c.nothing_ps / 1e6, c.predicted_ps / 1e6]
    if c.measured_ps is not None:
        names.append("after the mitigation (measured)")
        values.append(c.measured_ps / 1e6)
    fig = go.Figure(
        go.Bar(x=names, y=values, marker_color=["#94a3b8", "#2563eb", "#16a34a"][: len(values)])
    )
    fig.update_layout(
        height=320,
        yaxis_title="completion time of the traffic (us)",
        margin={"t": 20, "l": 60, "r": 20, "b": 80},
        template="none",
    )
    return fig


def timeline_figure(inc: Incident) -> dict[str, Any]:
    """The timeline chart as plotly's JSON (``data``, ``layout``): what the explorer's incident
    page draws, the same figure as the page's; every name in it escaped."""
    import json

    out: dict[str, Any] = json.loads(_timeline(inc).to_json())
    return out


def effect_figure(inc: Incident) -> dict[str, Any] | None:
    """The predicted and measured effect as plotly's JSON; None when nothing was chosen."""
    import json

    if inc.chosen is None:
        return None
    out: dict[str, Any] = json.loads(_effect_chart(inc).to_json())
    return out


def _html(fig: Any, div_id: str, with_js: bool) -> str:
    return str(
        fig.to_html(
            full_html=False,
            include_plotlyjs=with_js,
            div_id=div_id,
            config={"displaylogo": False, "responsive": True},
        )
    )


def _symptoms(inc: Incident) -> str:
    rows = [
        "<tr>"
        + td(f"{_s(s.ts_ms, inc.opened_ms):,.1f}", True)
        + td(esc(s.kind))
        + td(esc(s.target))
        + td(f"{s.value:g}", True)
        + td(esc(s.note))
        + "</tr>"
        for s in inc.symptoms
    ]
    if not rows:
        return "<p>No symptoms recorded (the incident was opened from its faults or suspects).</p>"
    heads = [("s", True), ("kind", False), ("object", False), ("value", True), ("note", False)]
    return table(heads, rows, table_id="symptoms-table", css_class="data")


def _suspects(inc: Incident) -> str:
    rows = []
    for o in inc.observations:
        ranked = sorted(o.suspects, key=lambda s: (-s.confidence, s.target))
        for n, s in enumerate(ranked, 1):
            rows.append(
                "<tr>"
                + td(f"{_s(o.ts_ms, inc.opened_ms):,.1f}", True)
                + td(str(n), True)
                + td(esc(s.kind.value))
                + td(esc(s.target))
                + td(f"{s.confidence:.2f}", True)
                + td(esc(s.fault.value if s.fault else ""))
                + td(esc("; ".join(s.evidence)))
                + "</tr>"
            )
    heads = [
        ("s", True),
        ("rank", True),
        ("kind", False),
        ("target", False),
        ("confidence", True),
        ("fault", False),
        ("evidence", False),
    ]
    return table(heads, rows, table_id="suspects-table", css_class="data")


def _checked(inc: Incident) -> str:
    if not inc.checked:
        return "<p>No mitigation was checked.</p>"
    rows = [
        "<tr>"
        + td(esc(c.mitigation))
        + td(esc(c.verdict), css="ok" if c.verdict == "better" else "bad")
        + td(_time(c.predicted_ps), True)
        + td(_time(c.nothing_ps), True)
        + td(esc(c.reason))
        + "</tr>"
        for c in inc.checked
    ]
    heads = [
        ("mitigation", False),
        ("verdict", False),
        ("predicted", True),
        ("doing nothing", True),
        ("why", False),
    ]
    return table(heads, rows, table_id="checked-table", css_class="data")


def _chosen(inc: Incident) -> tuple[str, str]:
    c = inc.chosen
    if c is None:
        return (
            "<p>Nothing was proposed: no mitigation was predicted better than doing nothing "
            "(a mitigation predicted worse is never proposed).</p>",
            "",
        )
    err = c.error
    rows = [
        ("mitigation", esc(c.mitigation)),
        ("proposal", esc(c.proposal)),
        ("status", esc(c.status) + (f" by {esc(c.decided_by)}" if c.decided_by else "")),
        ("doing nothing (predicted)", _time(c.nothing_ps)),
        ("mitigated (predicted)", _time(c.predicted_ps)),
        ("measured", _time(c.measured_ps)),
        ("measured against predicted", "-" if err is None else f"{err:+.1%}"),
    ]
    body = "".join(f"<tr><th>{k}</th>{td(v)}</tr>" for k, v in rows)
    return f'<table class="kv" id="chosen-table">{body}</table>', _html(
        _effect_chart(inc), "effect-chart", False
    )


def render_incident(inc: Incident) -> str:
    """The incident's page (module docstring)."""
    chosen, effect = _chosen(inc)
    sections = [
        ("timeline", "Timeline", _html(_timeline(inc), "timeline-chart", True)),
        ("symptoms", "Symptoms", _symptoms(inc)),
        ("suspects", "Suspects over time", _suspects(inc)),
        ("checked", "Mitigations checked", _checked(inc)),
        ("effect", "The mitigation and its effect", chosen + effect),
    ]
    body = "\n".join(
        f'<section id="{sid}"><h2>{esc(title)}</h2>\n{html}\n</section>'
        for sid, title, html in sections
    )
    span = (inc.last_ms - inc.opened_ms) / 1000.0
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Incident {esc(inc.id)}</title><style>{CSS}</style></head><body><main>"
        f"<header><h1>Incident {esc(inc.id)}<small>design {esc(inc.design[:16])}</small></h1>"
        f"<p>{len(inc.symptoms)} symptoms, {len(inc.observations)} localisations, "
        f"{len(inc.checked)} mitigations checked over {span:,.1f} s"
        + (f"; {esc(inc.note)}" if inc.note else "")
        + "</p></header>"
        + toc([(sid, title) for sid, title, _ in sections])
        + body
        + "<footer>clusterloom ops timeline</footer></main></body></html>\n"
    )
