"""What the pages and the API read from the store, in one place: a design's pictures by kind,
a table page under checked parameters, a rack's devices and cables, findings grouped by
stage, an artifact's blob. Every name is checked against the store's own lists first
(``params``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import HTTPException

from clusterloom.store import Artifact, Store, StoreError, TablePage
from clusterloom.web import params

#: how many of a rack's cables its page lists (each end; the cut sheet search has the rest)
RACK_CABLES = 500
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


def rack(store: Store, design_id: str, name: str) -> Rack:
    """The rack called ``name``: its row of the racks table, its devices (and elevation, when
    the design has that table), and the cut sheet's rows with an end in it."""
    params.name(name, "rack")
    tables = store.tables(design_id)
    if "racks" not in tables:
        raise params.not_found("rack")
    found = store.table(design_id, "racks", where={"rack": name}, limit=1)
    if found.total != 1:
        raise params.not_found("rack")
    devices = store.table(
        design_id, "devices", where={"rack": name}, sort="position", limit=RACK_DEVICES
    )
    elevation = (
        store.table(design_id, "elevations", where={"rack": name}, sort="u", limit=RACK_DEVICES)
        if "elevations" in tables
        else None
    )
    cables: dict[str, dict[str, Any]] = {}
    total = 0
    if "cut_sheet" in tables:
        for end in ("a_rack", "b_rack"):
            page = store.table(design_id, "cut_sheet", where={end: name}, limit=RACK_CABLES)
            total += page.total
            for row in _rows(page):
                key = str(row.get("label", len(cables)))
                if key in cables:
                    total -= 1  # both ends in this rack: counted once
                cables[key] = row
        columns = page.columns
    else:
        columns = ()
    return Rack(
        name=name,
        fields=_rows(found)[0],
        devices=devices,
        elevation=elevation,
        cables=tuple(cables[k] for k in sorted(cables)),
        cable_columns=columns,
        cables_total=total,
        height_u=_height(_rows(found)[0]),
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
    building, _, short = hall.rpartition("/")
    where = {"hall": short, **({"building": building} if building else {})}
    try:
        return store.table(design_id, "racks", where=where, sort="rack", limit=params.MAX_LIMIT)
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


def locate(store: Store, design_id: str, obj: str) -> str:
    """Where an object named in a finding is shown: its rack's page (a rack, or a device in
    it), else the cut sheet searched for it."""
    tables = store.tables(design_id)
    base = f"/designs/{design_id}"
    # an object may be written "a~b" or "x: y"; its first name is looked up
    head = re.split(r"[\s~,;]", obj.strip(), maxsplit=1)[0] if obj.strip() else ""
    try:
        if head and "racks" in tables:
            if store.table(design_id, "racks", where={"rack": head}, limit=1).total:
                return f"{base}/racks/{head}"
        if head and "devices" in tables:
            dev = store.table(design_id, "devices", where={"name": head}, limit=1)
            if dev.total and "rack" in dev.columns:
                rack_name = dev.rows[0][dev.columns.index("rack")]
                if rack_name:
                    return f"{base}/racks/{rack_name}#{head}"
    except StoreError:
        pass
    table_name = "cut_sheet" if "cut_sheet" in tables else (tables[0] if tables else "")
    if not table_name:
        return base
    from urllib.parse import quote

    return f"{base}/tables/{table_name}?q={quote(head or obj)}"


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
    rows = tuple(
        (name, *(values.get(k) for k in figures)) for name, values in per.items()
    )
    return Grid(columns=("transport", *figures), rows=rows)
