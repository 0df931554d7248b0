"""The JSON API: designs and runs, a table page (what the table script fetches), a run's
charts (plotly figures from ``charts.py``), incidents and their charts (``ops.page``'s), and
the write actions on proposals (the write role; from a browser session also its CSRF token,
checked in ``auth.authenticate``)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse, RedirectResponse, Response

from clusterloom.changes import Decision
from clusterloom.store import Store, StoreError, TablePage
from clusterloom.web import params, queries
from clusterloom.web.auth import require_write
from clusterloom.web.security import Principal

router = APIRouter(prefix="/api")
#: a table page's query parameters
Table = Annotated[params.TableQuery, Depends()]

#: the longest reason or decision text recorded
MAX_TEXT = 4000


def _store(request: Request) -> Store:
    store: Store = request.app.state.store
    return store


def _page_json(page: TablePage, **state: Any) -> dict[str, Any]:
    return {
        "columns": list(page.columns),
        "rows": jsonable_encoder([list(r) for r in page.rows]),
        "total": page.total,
        **state,
    }


@router.get("/designs")
def designs(request: Request) -> list[dict[str, Any]]:
    return [asdict(d) for d in _store(request).designs()]


@router.get("/designs/{design}")
def design(request: Request, design: str) -> dict[str, Any]:
    store = _store(request)
    did = params.design_id(store, design)
    return {
        **asdict(store.design(did)),
        "tables": store.tables(did),
        "pictures": store.pictures(did),
        "artifacts": [asdict(a) for a in store.artifacts(did)],
        "runs": [r.id for r in store.runs(did)],
    }


@router.get("/designs/{design}/findings")
def findings(request: Request, design: str) -> dict[str, list[dict[str, str]]]:
    store = _store(request)
    return queries.findings(store, params.design_id(store, design))


@router.get("/runs")
def runs(request: Request) -> list[dict[str, Any]]:
    return [asdict(r) for r in _store(request).runs()]


@router.get("/runs/{run}")
def run(request: Request, run: str) -> dict[str, Any]:
    store = _store(request)
    rid = params.run_id(store, run)
    return {
        **asdict(store.run(rid)),
        "tables": store.tables(rid),
        "artifacts": [asdict(a) for a in store.artifacts(rid)],
    }


def _table(request: Request, owner: str, name: str, t: params.TableQuery) -> dict[str, Any]:
    page = queries.table(
        _store(request),
        owner,
        name,
        offset=t.offset,
        limit=t.limit,
        sort=t.sort,
        desc=t.desc,
        q=t.q,
        where=params.where(t.where),
    )
    return _page_json(page, offset=t.offset, limit=t.limit, sort=t.sort, desc=t.desc, q=t.q)


@router.get("/designs/{design}/tables/{name}")
def design_table(request: Request, design: str, name: str, t: Table) -> dict[str, Any]:
    return _table(request, params.design_id(_store(request), design), name, t)


@router.get("/runs/{run}/tables/{name}")
def run_table(request: Request, run: str, name: str, t: Table) -> dict[str, Any]:
    return _table(request, params.run_id(_store(request), run), name, t)


@router.get("/incidents")
def incidents(
    request: Request, design: str | None = Query(None, max_length=64)
) -> list[dict[str, Any]]:
    store = _store(request)
    did = params.design_id(store, design) if design else None
    return [{k: v for k, v in asdict(r).items() if k != "body"} for r in store.incidents(did)]


@router.get("/incidents/{incident}")
def incident(request: Request, incident: str) -> dict[str, Any]:
    store = _store(request)
    return asdict(store.incident(params.incident_id(store, incident)))


@router.get("/incidents/{incident}/charts/{kind}")
def incident_chart(request: Request, incident: str, kind: str) -> dict[str, Any]:
    store = _store(request)
    rec = store.incident(params.incident_id(store, incident))
    return queries.incident_chart(rec, kind)


@router.get("/runs/{run}/charts/{kind}")
def chart(request: Request, run: str, kind: str) -> dict[str, Any]:
    store = _store(request)
    rid = params.run_id(store, run)
    return queries.chart(store, [rid], kind)


@router.get("/compare/charts/{kind}")
def compare_chart(
    request: Request, kind: str, a: str = Query(max_length=64), b: str = Query(max_length=64)
) -> dict[str, Any]:
    store = _store(request)
    return queries.chart(store, [params.run_id(store, a), params.run_id(store, b)], kind)


def _proposal(store: Store, value: str) -> str:
    params.name(value, "proposal")
    ids = {str(r.get("id")) for r in store.records(kind="proposal")}
    return params.one_of(value, ids, "proposal")


async def _fields(request: Request) -> dict[str, Any]:
    """The request's fields: a JSON object, or the form a page posted."""
    kind = request.headers.get("content-type", "")
    if kind.startswith("application/json"):
        try:
            body = await request.json()
        except ValueError:
            raise HTTPException(400, "body: not JSON") from None
        if not isinstance(body, dict):
            raise HTTPException(400, "body: a JSON object of fields")
        return body
    if kind.startswith(("application/x-www-form-urlencoded", "multipart/form-data")):
        return dict((await request.form()).items())
    raise HTTPException(415, "send application/json or a form")


def _text(fields: dict[str, Any], key: str, *, required: bool) -> str:
    value = fields.get(key, "")
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise HTTPException(400, f"{key}: text of at most {MAX_TEXT} characters")
    if required and not value.strip():
        raise HTTPException(400, f"{key}: required; say why")
    return value.strip()


def _done(request: Request, result: dict[str, Any]) -> Response:
    """JSON for the API; back to the changes page for a form posted from it."""
    if request.headers.get("content-type", "").startswith("application/json"):
        return JSONResponse(result)
    return RedirectResponse("/changes", status_code=303)


async def _decide(
    request: Request, proposal: str, principal: Principal, approved: bool
) -> Response:
    store = _store(request)
    pid = _proposal(store, proposal)
    fields = await _fields(request)
    reason = _text(fields, "reason", required=True)
    try:
        record = store.approve(pid, user=principal.user, reason=reason, approved=approved)
    except StoreError as exc:  # superseded, or decided already: refused
        raise HTTPException(409, str(exc)) from None
    return _done(request, {"id": record, "proposal": pid, "approved": approved})


@router.post("/proposals/{proposal}/approve")
async def approve(
    request: Request, proposal: str, principal: Principal = Depends(require_write)
) -> Response:
    return await _decide(request, proposal, principal, True)


@router.post("/proposals/{proposal}/reject")
async def reject(
    request: Request, proposal: str, principal: Principal = Depends(require_write)
) -> Response:
    return await _decide(request, proposal, principal, False)


@router.post("/proposals/{proposal}/decisions")
async def decide(
    request: Request, proposal: str, principal: Principal = Depends(require_write)
) -> Response:
    """A decision on a proposal: what was chosen, why (its context) and, later, the outcome."""
    store = _store(request)
    pid = _proposal(store, proposal)
    fields = await _fields(request)
    decision = Decision(
        proposal=pid,
        context={"user": principal.user, "reason": _text(fields, "reason", required=True)},
        chosen=_text(fields, "chosen", required=True),
        outcome=_text(fields, "outcome", required=False),
    )
    record = store.record(decision)
    return _done(request, {"id": record, "proposal": pid, "chosen": decision.chosen})
