"""Plotly figures of a simulation run, computed from its Parquet tables (what ``clusterloom
simulate -o DIR`` writes and the store keeps): the CDF of flow completion times, the busiest
link's utilisation over the run's interesting window and a heat map of the most loaded links.

Each figure is a plain dict (``{"data": [...], "layout": {...}}``) of JSON values, the same
bytes for the same tables, that ``Plotly.newPlot(el, fig.data, fig.layout)`` draws; the page
loads ``plotly.min.js`` from the installed plotly package (:func:`plotly_js_path`), never a CDN.

A run is given as its directory, or as a mapping of table names (``flows``, ``groups``,
``utilisation``, ``link_utilisation``, ``scenario``) to files, as the store holds them as
blobs. Tables are read with pyarrow and reduced with numpy; columns are those of
``sim.flow.results`` (times in µs, utilisation as a fraction of nominal capacity).

The utilisation chart's window (``window`` below, in words in ``docs/web.md``): it runs from the
first flow's start to the latest *busy end* (last finish, or end of the last segment with any
load) among the transports whose busy time is at most :data:`WINDOW_FACTOR` times the shortest
one's; every failure that falls in that span stays in view. A transport that goes on past it
(typically ``roce-ecmp`` waiting for its assumed reroute, 1 s by default, when the others are
done in microseconds) is clipped at the window's end and annotated with where it ends and, when
the run has a hard failure, the assumption that drives it (``roce-ecmp.reroute_s=1``), so it
never flattens the others.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
from numpy.typing import NDArray

from clusterloom.errors import ClusterloomError
from clusterloom.sim.flow.results import WINDOW_FACTOR

__all__ = [
    "CDF_POINTS",
    "SERIES_POINTS",
    "ChartError",
    "Window",
    "fct_cdf",
    "link_heatmap",
    "link_names",
    "plotly_js_path",
    "utilisation",
    "window",
]

#: Points per CDF line at most: a line has one point per finished flow (after a first point at
#: fraction 0) until then; above it, evenly spaced ranks, always the first and the last.
CDF_POINTS = 2000
#: Steps of the utilisation series at most: above it, the maximum over equal time bins.
SERIES_POINTS = 1000
#: Line colours of the transports, in the order they appear (then repeated).
COLOURS = ("#2563eb", "#db2777", "#059669", "#d97706", "#7c3aed", "#475569")
#: Transports that are the bound, not a protocol: no heat map of their own by default.
BOUND = "ideal"

Run = Path | Mapping[str, Path]
#: The Parquet tables of a run.
_TABLES = ("flows", "groups", "utilisation", "link_utilisation")

_FONT = {"family": "system-ui, -apple-system, Segoe UI, Roboto, Helvetica, Arial, sans-serif"}


class ChartError(ClusterloomError, ValueError):
    """A run's tables cannot give the figure asked for (a table missing, a transport absent)."""


def plotly_js_path() -> Path:
    """``plotly.min.js`` as the installed plotly package ships it (``plotly/package_data``)."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():
        raise ChartError(f"plotly {plotly.__version__} ships no {path}; reinstall plotly")
    return path


# --- reading -----------------------------------------------------------------------------


def _path(run: Run, name: str) -> Path:
    file = name + (".json" if name == "scenario" else ".parquet")
    if isinstance(run, Mapping):
        found = run.get(name) or run.get(file)
        if found is None:
            raise ChartError(f"the run has no table '{name}' (it has {', '.join(sorted(run))})")
        return Path(found)
    path = Path(run) / file
    if not path.is_file():
        raise ChartError(f"{path} is missing: not a `clusterloom simulate -o` directory?")
    return path


def _columns(run: Run, name: str, columns: Sequence[str]) -> dict[str, NDArray[Any]]:
    table = pq.read_table(_path(run, name), columns=list(columns))
    return {c: table.column(c).to_numpy(zero_copy_only=False) for c in columns}


def _scenario(run: Run) -> dict[str, Any]:
    try:
        path = _path(run, "scenario")
    except ChartError:
        return {}
    doc = json.loads(path.read_text(encoding="utf-8"))
    return doc if isinstance(doc, dict) else {}


def _order(names: NDArray[Any], scenario: Mapping[str, Any]) -> list[str]:
    """The transports of a table in the scenario's order (then first appearance)."""
    seen = list(dict.fromkeys(str(n) for n in names.tolist()))
    listed = [str(t) for t in scenario.get("transports", ()) if str(t) in seen]
    return listed + [t for t in seen if t not in listed]


def _colour(i: int) -> str:
    return COLOURS[i % len(COLOURS)]


def _axis(title: str, **more: Any) -> dict[str, Any]:
    return {"title": {"text": title}, "zeroline": False, "showline": True, **more}


def _figure(data: list[dict[str, Any]], layout: dict[str, Any]) -> dict[str, Any]:
    base = {"font": _FONT, "template": "none", "margin": {"l": 70, "r": 30, "t": 50, "b": 60}}
    return {"data": data, "layout": {**base, **layout}}


def _floats(a: NDArray[Any]) -> list[float]:
    """Plain floats rounded to a picosecond of µs (stable text, no numpy scalars)."""
    return [round(float(v), 6) for v in a.tolist()]


# --- the CDF of flow completion times ------------------------------------------------------


def _cdf_points(fct: NDArray[np.float64], total: int) -> tuple[NDArray[Any], NDArray[Any]]:
    """(x, y) of the CDF of the finished flows' ``fct`` over ``total`` flows: a point at
    fraction 0 at the first finish, then one per flow at rank k: (fct_k, (k + 1) / total),
    thinned to :data:`CDF_POINTS` evenly spaced ranks (first and last kept)."""
    f = np.sort(fct)
    k = np.arange(f.shape[0])
    if f.shape[0] > CDF_POINTS:
        k = np.unique(np.linspace(0, f.shape[0] - 1, CDF_POINTS).round().astype(np.int64))
    x = np.concatenate([f[:1], f[k]])
    y = np.concatenate([[0.0], (k + 1) / total])
    return x, y


def fct_cdf(runs: Sequence[tuple[str, Run]], *, log_x: bool | None = None) -> dict[str, Any]:
    """The CDF of flow completion times (µs), one line per run (``(label, run)``) and
    transport, named ``label: transport`` when there are several runs. The fraction is of all
    the transport's flows, so a line whose flows did not all finish stays below 1. ``log_x``
    None: logarithmic when the finished times span more than a factor of 20."""
    data: list[dict[str, Any]] = []
    spans: list[float] = []
    for label, run in runs:
        cols = _columns(run, "flows", ("transport", "fct_us"))
        names, fct = cols["transport"], cols["fct_us"].astype(np.float64)
        for t in _order(names, _scenario(run)):
            mine = fct[names == t]
            done = mine[np.isfinite(mine) & (mine >= 0)]
            if done.shape[0] == 0:
                continue
            x, y = _cdf_points(done, mine.shape[0])
            spans += [float(x.min()), float(x.max())]
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "line": {"shape": "hv", "width": 2, "color": _colour(len(data))},
                    "name": f"{label}: {t}" if len(runs) > 1 else t,
                    "x": _floats(x),
                    "y": [round(float(v), 9) for v in y.tolist()],
                    "meta": {"flows": int(mine.shape[0]), "finished": int(done.shape[0])},
                    "hovertemplate": "%{x:,.3f} µs: %{y:.1%} of flows<extra>%{fullData.name}"
                    "</extra>",
                }
            )
    positive = [s for s in spans if s > 0]
    if log_x is None:
        log_x = bool(positive) and max(positive) / min(positive) > 20
    x_axis = _axis(
        "flow completion time (µs)" + (", log scale" if log_x else ""),
        type="log" if log_x else "linear",
    )
    if not log_x and positive:  # a linear axis from 0, so a ratio reads off the picture
        x_axis["range"] = [0, round(max(positive) * 1.05, 6)]
    layout: dict[str, Any] = {
        "title": {"text": "Flow completion times"},
        "xaxis": x_axis,
        "yaxis": _axis("fraction of flows finished", range=[0, 1.02], tickformat=".0%"),
        "legend": {"title": {"text": "transport"}},
    }
    if not data:
        layout["annotations"] = [_note("no flow finished", 0.5, 0.5)]
    return _figure(data, layout)


# --- the window and the utilisation over time ----------------------------------------------

_FAILURE = re.compile(r"^(?P<kind>[a-z]+):(?P<target>[^@]+)@(?P<start>[^-*]+)(?:-(?P<end>[^*]+))?")
_TIME = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ps|ns|us|ms|s)?")
_US = {"ps": 1e-6, "ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6, None: 1e-6}


def _time_us(text: str) -> float | None:
    m = _TIME.fullmatch(text.strip())
    return None if m is None else float(m.group(1)) * _US[m.group(2)]


def _failures(scenario: Mapping[str, Any]) -> list[tuple[str, float, float | None, bool]]:
    """The scenario's failures as (label, start µs, end µs or None, hard)."""
    out = []
    for text in scenario.get("failures", ()):
        m = _FAILURE.match(str(text))
        start = None if m is None else _time_us(m.group("start"))
        if m is None or start is None:
            continue
        end = _time_us(m.group("end")) if m.group("end") else None
        out.append((str(text), start, end, "*" not in str(text)))
    return out


@dataclass(frozen=True)
class Window:
    """The time window of a run worth drawing (µs): ``start`` (the first flow's start) to
    ``end``; ``ends`` every transport's busy end; ``beyond`` the transports clipped, with their
    busy end and the assumption behind it (empty when none is known)."""

    start: float
    end: float
    ends: tuple[tuple[str, float], ...]
    beyond: tuple[tuple[str, float, str], ...]


def _assumption(name: str, scenario: Mapping[str, Any]) -> str:
    """What a transport is assumed to do on a hard failure of the run (``run.reaction``), or
    empty when the run has none or the transport is unknown to this installation."""
    if not any(hard for *_, hard in _failures(scenario)):
        return ""
    from clusterloom.sim.flow.run import reaction
    from clusterloom.sim.flow.transports import transport

    options = scenario.get("transport_options", {}).get(name, {})
    try:
        return reaction(transport(name, **options))[1]
    except ClusterloomError:
        return ""


def window(run: Run) -> Window:
    """The window of the module docstring, from the run's ``flows`` and ``utilisation``
    tables (and its ``scenario.json`` for failures and assumptions)."""
    scenario = _scenario(run)
    flows = _columns(run, "flows", ("transport", "start_us", "finish_us"))
    util = _columns(run, "utilisation", ("transport", "end_us", "max_util"))
    names = _order(flows["transport"], scenario)
    start = float(np.nanmin(flows["start_us"])) if flows["start_us"].size else 0.0
    ends = []
    for t in names:
        finish = flows["finish_us"][flows["transport"] == t].astype(np.float64)
        finish = finish[np.isfinite(finish)]
        mine = (util["transport"] == t) & (util["max_util"] > 0)
        busy = util["end_us"][mine]
        ends.append((t, max(float(finish.max(initial=start)), float(busy.max(initial=start)))))
    spans = [e - start for _, e in ends if e > start]
    if not spans:
        return Window(start, start, tuple(ends), ())
    horizon = start + WINDOW_FACTOR * min(spans)
    inside = [e for _, e in ends if e <= horizon]
    marks = [t for _, s, e, _ in _failures(scenario) for t in (s, e) if t is not None]
    inside += [t for t in marks if start <= t <= horizon]
    beyond = tuple((t, e, _assumption(t, scenario)) for t, e in ends if e > horizon)
    return Window(start, max(inside), tuple(ends), beyond)


def _fmt_us(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:,.6g} s"
    if us >= 1e3:
        return f"{us / 1e3:,.6g} ms"
    return f"{us:,.6g} µs"


def _series(
    start: NDArray[np.float64], end: NDArray[np.float64], value: NDArray[np.float64], upto: float
) -> tuple[NDArray[Any], NDArray[Any]]:
    """A step series (x: each segment's start, then the last end) clipped at ``upto``, reduced
    to the maximum over :data:`SERIES_POINTS` equal bins when longer."""
    keep = start < upto
    start, end, value = start[keep], np.minimum(end[keep], upto), value[keep]
    if start.shape[0] == 0:
        return np.zeros(0), np.zeros(0)
    if start.shape[0] > SERIES_POINTS:
        edges = np.linspace(float(start[0]), float(end[-1]), SERIES_POINTS + 1)
        cover = np.clip(np.searchsorted(start, edges[:-1], side="right") - 1, 0, None)
        first = np.searchsorted(start, edges[:-1], side="left")
        binned = value[cover].copy()
        has = first < np.searchsorted(start, edges[1:], side="left")
        starts = first[has]
        binned[has] = np.maximum(binned[has], np.maximum.reduceat(value, starts)[: starts.size])
        start, value, end = edges[:-1], binned, edges[1:]
    return np.concatenate([start, end[-1:]]), np.concatenate([value, value[-1:]])


def _note(text: str, x: float, y: float, **more: Any) -> dict[str, Any]:
    return {
        "text": text,
        "x": x,
        "y": y,
        "xref": "paper",
        "yref": "paper",
        "showarrow": False,
        **more,
    }


def utilisation(run_dir: Run) -> dict[str, Any]:
    """The busiest link's utilisation (load over nominal capacity) over :func:`window`, one
    step line per transport, failures as dashed vertical lines; each transport clipped at
    the window's end is annotated there with its end and its assumption (module docstring)."""
    w = window(run_dir)
    scenario = _scenario(run_dir)
    cols = _columns(run_dir, "utilisation", ("transport", "start_us", "end_us", "max_util"))
    names = _order(cols["transport"], scenario)
    data = []
    for i, t in enumerate(names):
        mine = cols["transport"] == t
        x, y = _series(
            cols["start_us"][mine].astype(np.float64),
            cols["end_us"][mine].astype(np.float64),
            cols["max_util"][mine].astype(np.float64),
            w.end,
        )
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "line": {"shape": "hv", "width": 2, "color": _colour(i)},
                "name": t,
                "x": _floats(x),
                "y": [round(float(v), 9) for v in y.tolist()],
                "hovertemplate": "%{x:,.3f} µs: %{y:.1%}<extra>%{fullData.name}</extra>",
            }
        )
    shapes, notes = [], []
    for label, start, end, _ in _failures(scenario):
        for at, what in ((start, "down"), (end, "up")):
            if at is None or not w.start <= at <= w.end:
                continue
            shapes.append(
                {
                    "type": "line",
                    "x0": at,
                    "x1": at,
                    "yref": "paper",
                    "y0": 0,
                    "y1": 1,
                    "line": {"color": "#b91c1c", "dash": "dash", "width": 1.5},
                }
            )
            notes.append(
                {
                    "text": f"{label} {what}",
                    "x": at,
                    "y": 1,
                    "yref": "paper",
                    "showarrow": False,
                    "xanchor": "left",
                    "yanchor": "bottom",
                    "font": {"color": "#b91c1c", "size": 11},
                }
            )
    for k, (t, end, why) in enumerate(w.beyond):
        colour = _colour(names.index(t)) if t in names else "#475569"
        text = f"{t} goes on to {_fmt_us(end)} (clipped)" + (f": {why}" if why else "")
        notes.append(
            _note(text, 1, 0.95 - 0.08 * k, xanchor="right", font={"color": colour, "size": 11})
        )
    span = w.end - w.start
    layout = {
        "title": {
            "text": f"Busiest link, {_fmt_us(w.start)} to {_fmt_us(w.end)} (until the last "
            f"transport done within {WINDOW_FACTOR}x the fastest)"
        },
        "xaxis": _axis("time (µs)", range=[w.start, w.end if span > 0 else w.start + 1]),
        "yaxis": _axis("max link utilisation (of capacity)", range=[0, 1.05], tickformat=".0%"),
        "shapes": shapes,
        "annotations": notes,
        "legend": {"title": {"text": "transport"}},
    }
    return _figure(data, layout)


# --- the heat map of the most loaded links -------------------------------------------------


def link_names(nodelink: Path) -> dict[int, str]:
    """Names of directed links (``2i`` up: link ``i`` from its source to its target; ``2i+1``
    down) from a design's ``<fabric>.nodelink.json``: ``device:port → device:port``."""
    doc = json.loads(Path(nodelink).read_text(encoding="utf-8"))
    device = {int(n["id"]): str(n.get("device", n["id"])) for n in doc["nodes"]}
    out: dict[int, str] = {}
    for link in doc["links"]:
        i = int(link["key"])
        a = f"{device[int(link['source'])]}:{link.get('src_port', '')}"
        b = f"{device[int(link['target'])]}:{link.get('dst_port', '')}"
        out[2 * i], out[2 * i + 1] = f"{a} → {b}", f"{b} → {a}"
    return out


def link_heatmap(
    run_dir: Run,
    top: int = 40,
    *,
    transport: str | None = None,
    names: Mapping[int, str] | None = None,
) -> dict[str, Any]:
    """The ``top`` most loaded watched links of one transport (its time-averaged utilisation
    over the run, highest first, ties by link id) against time: one row per link, one column
    per time bin of ``link_utilisation.parquet`` up to the end of :func:`window`, each cell
    the bin's time-averaged utilisation in % of the link's capacity, with a colour bar from 0
    to 100 %. ``transport`` None: the first transport with a loaded link, preferring one
    that is neither the bound nor clipped by the window. ``names``: directed link id to
    name (:func:`link_names`), else ``link <id> ↑/↓``."""
    scenario = _scenario(run_dir)
    cols = _columns(
        run_dir, "link_utilisation", ("transport", "bin", "start_us", "end_us", "link", "util")
    )
    order = _order(cols["transport"], scenario)
    if transport is None:
        clipped = {t for t, *_ in window(run_dir).beyond}
        ranked = sorted(order, key=lambda t: (t == BOUND, t in clipped))
        transport = ranked[0] if ranked else None
    if transport is None or transport not in order:
        have = ", ".join(order) or "none"
        raise ChartError(f"no link utilisation of transport '{transport}' (the run has {have})")
    mine = cols["transport"] == transport
    bins, links = cols["bin"][mine].astype(np.int64), cols["link"][mine].astype(np.int64)
    util = cols["util"][mine].astype(np.float64)
    starts, ends = cols["start_us"][mine], cols["end_us"][mine]
    n_bins = int(bins.max()) + 1 if bins.size else 0
    step = float(ends[0] - starts[0]) if bins.size else 0.0  # the bins are equal
    edges = float(starts[0] - bins[0] * step if bins.size else 0.0) + step * np.arange(n_bins + 1)
    width = np.diff(edges)
    ids, row = np.unique(links, return_inverse=True)
    load = np.zeros(ids.shape[0])
    np.add.at(load, row, util * width[bins])
    rank = np.lexsort((ids, -load))[:top]
    w = window(run_dir)
    last = int(np.searchsorted(edges[1:], w.end, side="left"))  # the bin holding the end
    shown = min(n_bins, last + 1)
    z = np.zeros((rank.shape[0], shown))
    pick = np.full(ids.shape[0], -1)
    pick[rank] = np.arange(rank.shape[0])
    keep = (pick[row] >= 0) & (bins < shown)
    z[pick[row[keep]], bins[keep]] = util[keep] * 100.0

    def name(link: int) -> str:
        if names is not None and link in names:
            return names[link]
        return f"link {link} {'↑' if link % 2 == 0 else '↓'}"

    labels = [name(int(i)) for i in ids[rank].tolist()]
    mids = (edges[:shown] + edges[1 : shown + 1]) / 2
    data = [
        {
            "type": "heatmap",
            "x": _floats(mids),
            "y": labels,
            "z": [[round(float(v), 6) for v in r] for r in z.tolist()],
            "zmin": 0,
            "zmax": 100,
            "colorscale": "Viridis",
            "colorbar": {"title": {"text": "% of capacity"}, "ticksuffix": "%"},
            "customdata": [int(i) for i in ids[rank].tolist()],
            "hovertemplate": "%{y}<br>%{x:,.3f} µs: %{z:.1f}%<extra></extra>",
        }
    ]
    notes = []
    if shown < 4 and n_bins >= 1 and width[0] > 0:
        notes.append(
            _note(
                f"the table's bins ({_fmt_us(float(width[0]))}) are coarse for this window: "
                "they span the longest transport's run",
                0,
                1.02,
                xanchor="left",
                yanchor="bottom",
                font={"size": 11, "color": "#b45309"},
            )
        )
    layout = {
        "title": {
            "text": f"{transport}: the {len(labels)} most loaded of {ids.shape[0]:,} watched "
            "links (time-averaged per bin)"
        },
        "xaxis": _axis("time (µs)"),
        "yaxis": _axis("link", autorange="reversed", type="category", automargin=True),
        "height": max(320, 60 + 16 * len(labels)),
        "annotations": notes,
        "margin": {"l": 200 if names else 110, "r": 30, "t": 60, "b": 60},
    }
    return _figure(data, layout)
