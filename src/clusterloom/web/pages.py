"""The explorer's HTML pages. Each is a read of the store (``queries.py``) rendered by a
template; every link also works without JavaScript (our scripts only fetch further table pages,
draw the charts and zoom the pictures)."""

from __future__ import annotations

import html
import re
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import FileResponse, RedirectResponse, Response
from markupsafe import Markup

from clusterloom.store import Store
from clusterloom.web import params, queries
from clusterloom.web.render import Renderer, svg

router = APIRouter()

#: the charts of a run's page, in order (``queries.chart``)
CHART_KINDS = ("fct", "utilisation", "links")


def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def _page(request: Request, template: str, **ctx: Any) -> Response:
    renderer: Renderer = request.app.state.renderer
    return renderer.page(request, template, **ctx)


def _campus(text: str, design_id: str, halls: tuple[str, ...]) -> Markup:
    """The campus picture with each hall tile (``data-hall``) linked to its hall page (the
    static report links them to anchors of its own page, or to none)."""
    known = set(halls)

    def link(m: re.Match[str]) -> str:
        hall = html.unescape(m.group(2))
        if hall not in known:
            return f"<g {m.group(1)}>{m.group(3)}</g>"
        href = f"/designs/{design_id}/halls/{quote(hall, safe='/')}"
        return f'<a {m.group(1)} href="{html.escape(href)}">{m.group(3)}</a>'

    return svg(_HALL.sub(link, text))


_HALL = re.compile(r'<(?:a|g) (class="hall-at" data-hall="([^"]*)")[^>]*>(.*?)</(?:a|g)>', re.S)
_RACK = re.compile(r'<(?:a|g) (class="rack-at" data-rack="([^"]*)")[^>]*>(.*?)</(?:a|g)>', re.S)


def _hall(text: str, design_id: str) -> Markup:
    """A hall's floor plan with every rack (``data-rack``) linked to its rack page."""

    def link(m: re.Match[str]) -> str:
        href = f"/designs/{design_id}/racks/{quote(html.unescape(m.group(2)), safe='')}"
        return f'<a {m.group(1)} href="{html.escape(href)}">{m.group(3)}</a>'

    return svg(_RACK.sub(link, text))


@router.get("/")
def designs(request: Request) -> Response:
    store = _store(request)
    records = store.designs()
    keys: list[str] = []
    for r in records:
        keys += [k for k in r.summary if k not in keys]
    return _page(
        request, "designs.html", title="designs", designs=records, keys=keys, runs=store.runs()
    )


@router.get("/designs/{design}")
def design(request: Request, design: str) -> Response:
    store = _store(request)
    did = params.design_id(store, design)
    pics = queries.pictures(store, did)
    campus = _campus(store.picture(did, "campus"), did, pics.halls) if pics.campus else None
    tiers = [(name, svg(store.picture(did, f"tiers/{name}"))) for name in pics.tiers]
    other = [(name, svg(store.picture(did, name))) for name in pics.other]
    grouped = queries.findings(store, did)
    return _page(
        request,
        "design.html",
        title=store.design(did).name,
        design=store.design(did),
        pictures=pics,
        campus=campus,
        tiers=tiers,
        other=other,
        tables=store.tables(did),
        runs=store.runs(did),
        artifacts=store.artifacts(did),
        findings={stage: len(items) for stage, items in grouped.items()},
        designs=store.designs(),
        incidents=store.incidents(did),
    )


@router.get("/designs/{design}/halls/{hall:path}")
def hall(request: Request, design: str, hall: str) -> Response:
    store = _store(request)
    did = params.design_id(store, design)
    pics = queries.pictures(store, did)
    params.one_of(hall, pics.halls, "hall")
    racks = queries.hall_racks(store, did, hall)
    rows: dict[str, list[dict[str, Any]]] = {}
    if racks is not None:
        for row in racks.rows:
            item = dict(zip(racks.columns, row, strict=True))
            rows.setdefault(str(item.get(queries.RACK_ROW, "")), []).append(item)
    fill = store.picture(did, f"fill/{hall}") if hall in pics.fills else None
    return _page(
        request,
        "hall.html",
        title=f"hall {hall}",
        design=store.design(did),
        hall=hall,
        plan=_hall(store.picture(did, f"hall/{hall}"), did),
        fill=svg(fill) if fill else None,
        rows=rows,
    )


@router.get("/designs/{design}/racks/{rack}")
def rack(request: Request, design: str, rack: str) -> Response:
    store = _store(request)
    did = params.design_id(store, design)
    found = queries.rack(store, did, rack)
    return _page(
        request,
        "rack.html",
        title=f"rack {rack}",
        design=store.design(did),
        rack=found,
        elevation=_elevation(found),
    )


def _elevation(rack: queries.Rack) -> Markup | None:
    """The rack's front elevation (the report's picture) from its elevation rows; None when
    the design has no elevation table or its rows cannot be drawn (the list is shown)."""
    if rack.elevation is None or not rack.elevation.rows:
        return None
    from clusterloom.report._svg import PictureError
    from clusterloom.report.placement import rack_elevation_svg

    cols = rack.elevation.columns
    try:
        devices = [
            (
                str(r[cols.index("device")]),
                str(r[cols.index("role")]),
                int(r[cols.index("u")]),
                int(r[cols.index("height_u")]),
            )
            for r in rack.elevation.rows
        ]
        top = max(low + size - 1 for _, _, low, size in devices)
        return svg(rack_elevation_svg(rack.name, rack.height_u or top, devices))
    except (ValueError, TypeError, PictureError):
        return None


@router.get("/designs/{design}/fill")
def fill(request: Request, design: str) -> Response:
    store = _store(request)
    did = params.design_id(store, design)
    pics = queries.pictures(store, did)
    fills = [(name, svg(store.picture(did, f"fill/{name}"))) for name in pics.fills]
    return _page(request, "fill.html", title="tray fill", design=store.design(did), fills=fills)


@router.get("/designs/{design}/findings")
def findings(request: Request, design: str) -> Response:
    store = _store(request)
    did = params.design_id(store, design)
    return _page(
        request,
        "findings.html",
        title="findings",
        design=store.design(did),
        grouped=queries.findings(store, did),
    )


@router.get("/designs/{design}/find")
def find(
    request: Request, design: str, q: str = Query("", max_length=params.MAX_QUERY)
) -> Response:
    """An object named in a finding: redirected to the page that shows it."""
    store = _store(request)
    did = params.design_id(store, design)
    return RedirectResponse(queries.locate(store, did, params.search(q) or ""), status_code=303)


def _table_page(
    request: Request,
    owner_kind: str,
    owner: str,
    name: str,
    t: params.TableQuery,
    column: str | None,
    value: str | None,
) -> Response:
    where = _with_filter(t.where, column, value)
    page = queries.table(
        _store(request),
        owner,
        name,
        offset=t.offset,
        limit=t.limit,
        sort=t.sort,
        desc=t.desc,
        q=t.q,
        where=params.where(where),
    )
    return _page(
        request,
        "table.html",
        title=name.replace("_", " "),
        owner_kind=owner_kind,
        owner=owner,
        name=name,
        page=page,
        state={**t.state(), "where": where},
        api=f"/api/{owner_kind}/{owner}/tables/{name}",
    )


def _with_filter(where: list[str], column: str | None, value: str | None) -> list[str]:
    """The page's filters plus the one its filter form sent (``column`` equal to ``value``,
    exactly: a filter reads one column, much faster than a search of every text column)."""
    if column and value is not None and value.strip():
        return [*where, f"{column}:{value.strip()}"]
    return where


#: a table page's query parameters, and its filter form's column and value
Table = Annotated[params.TableQuery, Depends()]
Column = Annotated[str | None, Query(max_length=64)]
Value = Annotated[str | None, Query(max_length=params.MAX_QUERY)]


@router.get("/designs/{design}/tables/{name}")
def design_table(
    request: Request, design: str, name: str, t: Table, column: Column = None, value: Value = None
) -> Response:
    did = params.design_id(_store(request), design)
    return _table_page(request, "designs", did, name, t, column, value)


@router.get("/runs/{run}/tables/{name}")
def run_table(
    request: Request, run: str, name: str, t: Table, column: Column = None, value: Value = None
) -> Response:
    rid = params.run_id(_store(request), run)
    return _table_page(request, "runs", rid, name, t, column, value)


def _download(store: Store, owner: str, name: str) -> Response:
    art, path = queries.artifact(store, owner, name)
    return FileResponse(
        path,
        media_type=art.media_type or "application/octet-stream",
        filename=art.name.rsplit("/", 1)[-1],
    )


@router.get("/designs/{design}/artifacts/{name:path}")
def design_artifact(request: Request, design: str, name: str) -> Response:
    store = _store(request)
    return _download(store, params.design_id(store, design), name)


@router.get("/runs/{run}/artifacts/{name:path}")
def run_artifact(request: Request, run: str, name: str) -> Response:
    store = _store(request)
    return _download(store, params.run_id(store, run), name)


@router.get("/designs/{design}/pictures/{name:path}")
def picture(request: Request, design: str, name: str) -> Response:
    store = _store(request)
    did = params.design_id(store, design)
    return Response(queries.picture(store, did, name), media_type="image/svg+xml")


@router.get("/runs")
def runs(request: Request) -> Response:
    store = _store(request)
    names = {d.id: d for d in store.designs()}
    return _page(request, "runs.html", title="runs", runs=store.runs(), designs=names)


@router.get("/runs/{run}")
def run(request: Request, run: str) -> Response:
    store = _store(request)
    rid = params.run_id(store, run)
    record = store.run(rid)
    design = store.design(record.design_id) if record.design_id else None
    return _page(
        request,
        "run.html",
        title=f"run {rid}",
        run=record,
        design=design,
        tables=store.tables(rid),
        artifacts=store.artifacts(rid),
        charts=CHART_KINDS,
        rows=queries.run_rows(record.summary),
    )


@router.get("/compare")
def compare(
    request: Request,
    a: str = Query("", max_length=64),
    b: str = Query("", max_length=64),
) -> Response:
    store = _store(request)
    if not a or not b:
        return _page(
            request,
            "compare_pick.html",
            title="compare",
            designs=store.designs(),
            runs=store.runs(),
        )
    params.hex_id(a, "a")
    params.hex_id(b, "b")
    design_ids = {d.id for d in store.designs()}
    run_ids = {r.id for r in store.runs()}
    if a in design_ids and b in design_ids:
        return _page(
            request,
            "compare_designs.html",
            title="compare designs",
            a=store.design(a),
            b=store.design(b),
            diff=store.diff(a, b),
        )
    if a in run_ids and b in run_ids:
        ra, rb = store.run(a), store.run(b)
        return _page(
            request,
            "compare_runs.html",
            title="compare runs",
            a=ra,
            b=rb,
            rows_a=queries.run_rows(ra.summary),
            rows_b=queries.run_rows(rb.summary),
            charts=CHART_KINDS,
        )
    raise HTTPException(404, "a and b must be two designs or two runs in the store")


@router.get("/changes")
def changes(request: Request, design: str | None = Query(None, max_length=64)) -> Response:
    store = _store(request)
    did = params.design_id(store, design) if design else None
    records = store.records(design_id=did)
    statuses = {r["id"]: store.proposal_status(r["id"]) for r in records if r["kind"] == "proposal"}
    return _page(
        request,
        "changes.html",
        title="changes and decisions",
        records=records,
        statuses=statuses,
        design=store.design(did) if did else None,
    )


@router.get("/incidents")
def incidents(request: Request, design: str | None = Query(None, max_length=64)) -> Response:
    store = _store(request)
    did = params.design_id(store, design) if design else None
    return _page(
        request,
        "incidents.html",
        title="incidents",
        incidents=store.incidents(did),
        design=store.design(did) if did else None,
    )


@router.get("/incidents/{incident}")
def incident(request: Request, incident: str) -> Response:
    store = _store(request)
    rec = store.incident(params.incident_id(store, incident))
    view = queries.incident_view(rec)
    return _page(
        request,
        "incident.html",
        title=f"incident {rec.id}",
        record=rec,
        view=view,
        design=store.design(rec.design_id) if rec.design_id else None,
    )
