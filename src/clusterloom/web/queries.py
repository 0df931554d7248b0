"""What the pages and the API read from the store, in one place: a design's pictures by kind,
a table page under checked parameters, a rack's devices and cables, findings grouped by
stage, an artifact's blob. Every name is checked against the store's own lists first
(``params``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import HTTPException

from clusterloom.store import Artifact, IncidentRecord, Store, StoreError, TablePage
from clusterloom.web import params

#: how many of a rack's cables its page lists (each end; the cut sheet filtered by the rack
#: has the rest)
RACK_CABLES = 250
#: a rack's devices listed at most
RACK_DEVICES = 500


@dataclass(frozen=True)
class Pictures:
    campus: str | None
    halls: tuple[str, ...]
    fills: tuple[str, ...]
    tiers: tuple[str, ...]
    other: tuple[str, ...]


def pictures(store: Store, design_id: str) -> Pictures:
    names = store.pictures(design_id)

    def under(prefix: str) -> tuple[str, ...]:
        return tuple(sorted(n[len(prefix) :] for n in names if n.startswith(prefix)))

    known = ("hall/", "fill/", "tiers/")
    return Pictures(
        campus="campus" if "campus" in names else None,
        halls=under("hall/"),
        fills=under("fill/"),
        tiers=under("tiers/"),
        other=tuple(sorted(n for n in names if n != "campus" and not n.startswith(known))),
    )


def picture(store: Store, design_id: str, name: str) -> str:
    params.one_of(name, store.pictures(design_id), "picture")
    return store.picture(design_id, name)


def table(
    store: Store,
    owner: str,
    name: str,
    *,
    offset: int,
    limit: int,
    sort: str | None,
    desc: bool,
    q: str | None,
    where: dict[str, str] | None = None,
) -> TablePage:
    params.one_of(name, store.tables(owner), "table")
    try:
        return store.table(
            owner,
            name,
            offset=offset,
            limit=limit,
            sort=params.column(sort, "sort"),
            descending=desc,
            search=params.search(q),
            where=where or None,
        )
    except StoreError as exc:
        raise HTTPException(400, str(exc)) from None


def artifact(store: Store, owner: str, name: str) -> tuple[Artifact, Path]:
    """The owner's artifact called exactly ``name`` and its blob's path."""
    found = {a.name: a for a in store.artifacts(owner)}
    params.one_of(name, found, "artifact")
    return found[name], store.artifact_path(owner, name)


def _rows(page: TablePage) -> list[dict[str, Any]]:
    return [dict(zip(page.columns, row, strict=True)) for row in page.rows]


@dataclass(frozen=True)
class Rack:
    name: str
    fields: dict[str, Any]
    devices: TablePage
    elevation: TablePage | None
    cables: tuple[dict[str, Any], ...]
    cable_columns: tuple[str, ...]
    cables_total: int
    #: the rack's height in units, when its table has one (``u_height``)
    height_u: int | None


#: the key column of the racks table, and the hall and row columns (NetBox's racks.csv)
RACK_KEY, RACK_HALL, RACK_ROW = "name", "location", "cf_row"
#: the elevation rows (rack, u, height_u, device, role): a table when the store has one,
#: else the design's placement/elevations.csv artifact, read with DuckDB
ELEVATIONS = "placement/elevations.csv"


def rack(store: Store, design_id: str, name: str) -> Rack:
    """The rack called ``name``: its row of the racks table, its devices, its elevation, and
    the cut sheet's rows with an end in it."""
    params.name(name, "rack")
    tables = store.tables(design_id)
    if "racks" not in tables:
        raise params.not_found("rack")
    found = store.table(design_id, "racks", where={RACK_KEY: name}, limit=1)
    if found.total != 1:
        raise params.not_found("rack")
    devices = (
        store.table(design_id, "devices", where={"rack": name}, sort="position", limit=RACK_DEVICES)
        if "devices" in tables
        else TablePage((), (), 0)
    )
    cables, columns, total = _rack_cables(store, design_id, name, tables)
    fields = _rows(found)[0]
    return Rack(
        name=name,
        fields=fields,
        devices=devices,
        elevation=_elevation(store, design_id, name, tables),
        cables=cables,
        cable_columns=columns,
        cables_total=total,
        height_u=_height(fields),
    )


def _rack_cables(
    store: Store, design_id: str, name: str, tables: list[str]
) -> tuple[tuple[dict[str, Any], ...], tuple[str, ...], int]:
    """The cut sheet's rows with an A or a B end in rack ``name`` (one row per cable, a cable
    with both ends here once), by label; their columns; how many there are."""
    if "cut_sheet" not in tables:
        return (), (), 0
    cables: dict[str, dict[str, Any]] = {}
    total, columns = 0, tuple[str, ...]()
    for end in ("a_rack", "b_rack"):
        page = store.table(design_id, "cut_sheet", where={end: name}, limit=RACK_CABLES)
        columns = page.columns
        total += page.total
        for row in _rows(page):
            key = str(row.get("label", len(cables)))
            if key in cables:
                total -= 1  # both ends in this rack: counted once
            cables[key] = row
    return tuple(cables[k] for k in sorted(cables)), columns, total


def _elevation(store: Store, design_id: str, name: str, tables: list[str]) -> TablePage | None:
    if "elevations" in tables:
        return store.table(design_id, "elevations", where={"rack": name}, sort="u", limit=500)
    if ELEVATIONS not in {a.name for a in store.artifacts(design_id)}:
        return None
    path = store.artifact_path(design_id, ELEVATIONS)
    import duckdb

    sql = (
        "SELECT device, role, u, height_u FROM read_csv(?, header=true, all_varchar=true) "
        "WHERE rack = ? ORDER BY CAST(u AS INTEGER)"
    )
    try:
        with duckdb.connect() as con:
            rows = con.execute(sql, [str(path), name]).fetchall()
    except duckdb.Error:
        return None
    return TablePage(
        ("device", "role", "u", "height_u"),
        tuple((d, r, int(u), int(h)) for d, r, u, h in rows),
        len(rows),
    )


def _height(fields: dict[str, Any]) -> int | None:
    for key in ("u_height", "height_u"):
        value = fields.get(key)
        if value is not None:
            try:
                return int(value)
            except (TypeError, ValueError):
                return None
    return None


def hall_racks(store: Store, design_id: str, hall: str) -> TablePage | None:
    """The racks of hall ``hall`` (``building/hall``), by row and position."""
    if "racks" not in store.tables(design_id):
        return None
    where = {RACK_HALL: hall.replace("/", "-")}
    try:
        return store.table(design_id, "racks", where=where, sort=RACK_KEY, limit=params.MAX_LIMIT)
    except StoreError:
        return None


def findings(store: Store, design_id: str) -> dict[str, list[dict[str, str]]]:
    """Findings by stage, errors first within a stage."""
    order = {"error": 0, "warning": 1, "info": 2}
    grouped: dict[str, list[dict[str, str]]] = {}
    for f in store.findings(design_id):
        grouped.setdefault(f.get("stage", "") or "design", []).append(f)
    for items in grouped.values():
        items.sort(key=lambda f: (order.get(f.get("severity", ""), 3), f.get("code", "")))
    return dict(sorted(grouped.items()))


_LINK = re.compile(r"(?P<fabric>[A-Za-z0-9_-]+) link (?P<link>\d+)")
_SEGMENT = re.compile(r"(?P<kind>[a-z-]+):(?P<a>[^\s~]+)~(?P<b>[^\s~]+)")
_SPEC_FIELD = re.compile(r"[a-z_]+(\.[A-Za-z0-9_]+)+")


def _table_link(base: str, name: str, where: dict[str, str]) -> str:
    return f"{base}/tables/{name}?" + urlencode([("where", f"{k}:{v}") for k, v in where.items()])


def locate(store: Store, design_id: str, obj: str) -> str:
    """Where an object named in a finding is shown: a link (``backend link 64``) as its cut
    sheet row, a tray segment (``row:A~B``) as its pull list row, a rack or a device as its
    rack's page, a spec field (``fabrics.backend.switch``) as the design's page; anything
    else as a search of the cut sheet."""
    tables = store.tables(design_id)
    base = f"/designs/{design_id}"
    obj = obj.strip()
    link, segment = _LINK.fullmatch(obj), _SEGMENT.fullmatch(obj)
    if link and "cut_sheet" in tables:
        return _table_link(base, "cut_sheet", {"fabric": link["fabric"], "link": link["link"]})
    if segment and "pull_list" in tables:
        where = {"kind": segment["kind"], "from": segment["a"], "to": segment["b"]}
        return _table_link(base, "pull_list", where)
    if not obj or _SPEC_FIELD.fullmatch(obj):
        return base
    head = re.split(r"[\s~,;]", obj, maxsplit=1)[0]
    try:
        if (
            "racks" in tables
            and store.table(design_id, "racks", where={RACK_KEY: head}, limit=1).total
        ):
            return f"{base}/racks/{quote(head, safe='')}"
        if "devices" in tables:
            dev = store.table(design_id, "devices", where={"name": head}, limit=1)
            if dev.total and dev.rows[0][dev.columns.index("rack")]:
                rack_name = str(dev.rows[0][dev.columns.index("rack")])
                return f"{base}/racks/{quote(rack_name, safe='')}#dev-{quote(head, safe='')}"
    except StoreError:
        pass
    if "cut_sheet" not in tables:
        return base
    return f"{base}/tables/cut_sheet?q={quote(obj)}"


@dataclass(frozen=True)
class Grid:
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]


def run_rows(summary: dict[str, Any]) -> Grid:
    """A run's summary as one row per transport: a summary keyed by transport (each value its
    figures) as it is; flat ``transport/figure`` (or ``transport.figure``) keys split; any
    other figures as one row."""
    per: dict[str, dict[str, Any]] = {}
    for key, value in summary.items():
        if isinstance(value, dict):
            per.setdefault(key, {}).update(value)
            continue
        head, sep, tail = key.replace(".", "/").partition("/")
        if sep:
            per.setdefault(head, {})[tail] = value
        else:
            per.setdefault("run", {})[key] = value
    figures: list[str] = []
    for values in per.values():
        figures += [k for k in values if k not in figures]
    first = ("finished", "total", "fct_p50_us", "fct_p99_us", "fct_max_us", "completion_ms")
    seen = {k: i for i, k in enumerate(figures)}
    figures.sort(key=lambda k: (first.index(k) if k in first else len(first), seen[k]))
    rows = tuple((name, *(values.get(k) for k in figures)) for name, values in per.items())
    return Grid(columns=("transport", *figures), rows=rows)


def run_files(store: Store, run_id: str) -> dict[str, Path]:
    """A run's tables (their Parquet blobs) and its ``scenario.json``, as ``charts.py`` reads
    a run: by table name."""
    files: dict[str, Path] = {}
    for name in store.tables(run_id):
        source = store.table_source(run_id, name)
        if source is not None:
            files[name] = source
    if "scenario.json" in {a.name for a in store.artifacts(run_id)}:
        files["scenario"] = store.artifact_path(run_id, "scenario.json")
    return files


def chart(store: Store, run_ids: list[str], kind: str) -> dict[str, Any]:
    """The plotly figure ``kind`` (``fct``: the CDF of flow completion times, of every run
    given; ``utilisation``: the busiest link over the run's window; ``links``: the heat map of
    the most loaded links) of the runs, from ``charts.py``."""
    if kind not in ("fct", "utilisation", "links"):
        raise params.not_found("chart")
    from clusterloom.web import charts

    runs = [(rid, run_files(store, rid)) for rid in run_ids]
    try:
        if kind == "fct":
            return charts.fct_cdf(runs)
        if len(runs) != 1:
            raise params.not_found("chart")
        if kind == "utilisation":
            return charts.utilisation(runs[0][1])
        return charts.link_heatmap(runs[0][1], names=_link_names(store, run_ids[0]))
    except charts.ChartError as exc:
        raise HTTPException(404, str(exc)) from None


#: a run's links are named from its design's backend node-link file up to this size (the
#: 131k design's is far larger; its links are then shown by id)
NODELINK_BYTES = 20 << 20


def _link_names(store: Store, run_id: str) -> dict[int, str] | None:
    """Names of the run's links from its design's ``backend.nodelink.json`` (a simulation
    runs on the backend fabric, ``sim.scenario``), None when the run has no design or the
    file is missing or too large to read per request."""
    from clusterloom.web import charts

    design = store.run(run_id).design_id
    if design is None:
        return None
    found = {a.name: a for a in store.artifacts(design)}.get("backend.nodelink.json")
    if found is None or found.size > NODELINK_BYTES:
        return None
    return charts.link_names(store.artifact_path(design, found.name))


#: an incident page's charts (``ops.page``'s figures, the same as ``ops timeline`` draws)
INCIDENT_CHARTS = ("timeline", "effect")


@dataclass(frozen=True)
class IncidentView:
    """What an incident's page shows, as rows of text (the template escapes them): the
    symptoms, the suspects at each localisation, the mitigations checked, the chosen one."""

    symptoms: tuple[tuple[str, ...], ...]
    suspects: tuple[tuple[str, ...], ...]
    checked: tuple[tuple[str, ...], ...]
    chosen: tuple[tuple[str, str], ...]
    charts: tuple[str, ...]
    note: str


def _incident(rec: IncidentRecord) -> Any:
    from clusterloom.errors import SpecError
    from clusterloom.ops.incident import incident_from_dict

    try:
        return incident_from_dict(rec.body, f"incident {rec.id}")
    except SpecError as exc:
        raise HTTPException(422, f"the stored incident cannot be read: {exc}") from None


def incident_view(rec: IncidentRecord) -> IncidentView:
    """The rows of an incident's page (:class:`IncidentView`), times in seconds since it
    opened, durations as the simulators print them."""
    from clusterloom.sim.flow.run import fmt_time

    inc = _incident(rec)
    base = inc.opened_ms

    def s(ms: int) -> str:
        return f"{(ms - base) / 1000:,.1f}"

    def t(ps: int | None) -> str:
        return "-" if ps is None else fmt_time(ps)

    symptoms = tuple((s(x.ts_ms), x.kind, x.target, f"{x.value:g}", x.note) for x in inc.symptoms)
    suspects = tuple(
        (
            s(o.ts_ms),
            str(n),
            x.kind.value,
            x.target,
            f"{x.confidence:.2f}",
            x.fault.value if x.fault else "",
            "congestion" if o.congestion else "",
            "; ".join(x.evidence),
        )
        for o in inc.observations
        for n, x in enumerate(sorted(o.suspects, key=lambda x: (-x.confidence, x.target)), 1)
    )
    checked = tuple(
        (c.mitigation, c.verdict, t(c.predicted_ps), t(c.nothing_ps), c.reason) for c in inc.checked
    )
    chosen: tuple[tuple[str, str], ...] = ()
    c = inc.chosen
    if c is not None:
        err = c.error
        chosen = (
            ("mitigation", c.mitigation),
            ("proposal", c.proposal),
            ("proposed at (s)", s(c.proposed_ms)),
            ("status", c.status + (f" by {c.decided_by}" if c.decided_by else "")),
            ("decided at (s)", "-" if c.decided_ms is None else s(c.decided_ms)),
            ("doing nothing (predicted)", t(c.nothing_ps)),
            ("mitigated (predicted)", t(c.predicted_ps)),
            ("measured", t(c.measured_ps)),
            ("measured against predicted", "-" if err is None else f"{err:+.1%}"),
        )
    charts = INCIDENT_CHARTS if c is not None else INCIDENT_CHARTS[:1]
    return IncidentView(symptoms, suspects, checked, chosen, charts, inc.note)


def incident_chart(rec: IncidentRecord, kind: str) -> dict[str, Any]:
    """The plotly figure ``kind`` of an incident (``timeline``: its suspects' confidence over
    time and its symptoms; ``effect``: the chosen mitigation's predicted and measured
    effect), from ``ops.page``."""
    if kind not in INCIDENT_CHARTS:
        raise params.not_found("chart")
    from clusterloom.ops.page import effect_figure, timeline_figure

    inc = _incident(rec)
    fig = timeline_figure(inc) if kind == "timeline" else effect_figure(inc)
    if fig is None:
        raise params.not_found("chart")
    return fig
