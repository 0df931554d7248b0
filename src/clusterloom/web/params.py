"""Path and query parameters checked before anything is looked up: an id is lowercase hex, a
table, picture, hall, rack or artifact name is one of the names the store lists for that
owner. A value that is not is refused (404, or 400 for a malformed query) here, so that no
string from a request ever reaches the store's file system as a path."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Annotated

from fastapi import HTTPException, Query

from clusterloom.store import Store, StoreError

_HEX = re.compile(r"[0-9a-f]{6,64}")
#: rack, device and record names: what the design's writers produce, nothing path-like
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+-]{0,127}")
#: a column name of a stored table
_COLUMN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
#: longest search string and page size served
MAX_QUERY, MAX_LIMIT = 200, 500


class TableQuery:
    """A table page's query parameters, shared by the JSON and HTML table routes (a FastAPI
    dependency: ``Annotated[TableQuery, Depends()]``); bounds checked by FastAPI (422)."""

    def __init__(
        self,
        offset: Annotated[int, Query(ge=0, le=10**9)] = 0,
        limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = 50,
        sort: Annotated[str | None, Query(max_length=64)] = None,
        desc: bool = False,
        q: Annotated[str | None, Query(max_length=MAX_QUERY)] = None,
        where: Annotated[list[str] | None, Query(max_length=16)] = None,
    ) -> None:
        self.offset, self.limit, self.sort, self.desc, self.q = offset, limit, sort, desc, q
        self.where: list[str] = where or []

    def state(self) -> dict[str, object]:
        """The page's parameters as the templates and the JSON echo them."""
        return {
            "offset": self.offset,
            "limit": self.limit,
            "sort": self.sort,
            "desc": self.desc,
            "q": self.q,
            "where": self.where,
        }


def not_found(what: str) -> HTTPException:
    return HTTPException(404, f"{what} not found")


def hex_id(value: str, what: str) -> str:
    if _HEX.fullmatch(value) is None:
        raise not_found(what)
    return value


def name(value: str, what: str) -> str:
    if _NAME.fullmatch(value) is None or ".." in value:
        raise not_found(what)
    return value


def one_of(value: str, names: Iterable[str], what: str) -> str:
    """``value`` if it is exactly one of ``names`` (compared as strings, never opened)."""
    if "\x00" in value or value not in set(names):
        raise not_found(what)
    return value


def design_id(store: Store, value: str) -> str:
    """A design's full id: hex, and a design the store holds."""
    hex_id(value, "design")
    try:
        record = store.design(value)
    except StoreError:
        raise not_found("design") from None
    if record.id != value:
        raise not_found("design")
    return value


def run_id(store: Store, value: str) -> str:
    hex_id(value, "run")
    try:
        record = store.run(value)
    except StoreError:
        raise not_found("run") from None
    if record.id != value:
        raise not_found("run")
    return value


#: an incident's id (``ops.incident``: ``inc-`` and 12 hex digits, or one given)
_INCIDENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:+-]{0,63}")


def incident_id(store: Store, value: str) -> str:
    """An incident's id: a name, and an incident the store holds."""
    if _INCIDENT.fullmatch(value) is None:
        raise not_found("incident")
    try:
        store.incident(value)
    except StoreError:
        raise not_found("incident") from None
    return value


def column(value: str | None, what: str) -> str | None:
    if value is None or value == "":
        return None
    if _COLUMN.fullmatch(value) is None:
        raise HTTPException(400, f"{what}: {value[:40]!r} is not a column name")
    return value


def search(value: str | None) -> str | None:
    if value is None or value.strip() == "":
        return None
    if len(value) > MAX_QUERY or "\x00" in value:
        raise HTTPException(400, f"q: a search of at most {MAX_QUERY} characters, no NUL")
    return value.strip()


def where(values: list[str]) -> dict[str, str]:
    """``column:value`` pairs of the ``where`` query parameter, every one a column name."""
    out: dict[str, str] = {}
    for item in values:
        key, sep, val = item.partition(":")
        if not sep or _COLUMN.fullmatch(key) is None or "\x00" in val or len(val) > MAX_QUERY:
            raise HTTPException(400, f"where: {item[:60]!r} is not COLUMN:VALUE")
        out[key] = val
    return out
