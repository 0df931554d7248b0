"""Tables as Parquet blobs, queried with DuckDB.

At record time a design's CSV tables are converted to Parquet with pyarrow (streamed in blocks,
row groups of :data:`ROW_GROUP` rows, so DuckDB can skip and parallelise); a run's
``*.parquet`` files are tables already. A query (:func:`query`) runs on ``read_parquet`` of the
blob: the filter, search, sort, offset and limit are SQL, so DuckDB pushes them into the scan
and keeps only the top rows of a sort; Python never holds more than the page. Column names come
from the table's own schema (a name that is not a column is refused before any SQL is built),
values are bound parameters.

A search (a case-insensitive substring of any text column) would scan every text column of every
row; on the 131k cut sheet (2.1M rows, 19 text columns) that took 1.2-1.4 s. Most of those
columns repeat a few values (rack, device, port, frame names), so each table blob has a
*vocabulary* beside it (:func:`vocabulary`, ``<blob>.vocab``, derived data made at record time or
on the first search): the distinct values of its low-cardinality text columns (at most
:data:`VOCAB_SHARE` of its rows distinct). A search matches the substring against the
vocabulary first and then selects the rows whose column holds one of the matched values (``IN``);
only the high-cardinality columns (the cut sheet's labels) are scanned with ``contains``. The
result is the same rows as the scan (tested); a column whose matched values exceed
:data:`VOCAB_IN_MAX` is scanned as before, since a long ``IN`` list is no faster than the scan.
"""

from __future__ import annotations

import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from clusterloom.errors import StoreError

#: a design's tables: name -> the CSV in its run directory it is made from
DESIGN_TABLES: dict[str, str] = {
    "cut_sheet": "cabling/cut_sheet.csv",
    "pull_list": "cabling/pull_list.csv",
    "trunks": "cabling/trunks.csv",
    "bom": "bom.csv",
    "devices": "netbox/devices.csv",
    "racks": "netbox/racks.csv",
    "interfaces": "netbox/interfaces.csv",
}
#: a run's tables: name -> its Parquet file
RUN_TABLES: dict[str, str] = {
    "flows": "flows.parquet",
    "groups": "groups.parquet",
    "link_utilisation": "link_utilisation.parquet",
    "utilisation": "utilisation.parquet",
}
ROW_GROUP = 131_072
#: the largest page a query returns
MAX_LIMIT = 10_000
#: a sorted page ending past this many rows is fetched in two steps (``_sorted_page``)
LATE_ROWS = 10_000
_BLOCK = 16 << 20
#: a text column is in a table's vocabulary when at most this share of its rows are distinct
VOCAB_SHARE = 0.125
#: a search matching more values than this in one column scans that column instead
VOCAB_IN_MAX = 2_000
VOCAB_SUFFIX = ".vocab"


@dataclass(frozen=True)
class TablePage:
    """One page of a table: the columns, the rows of the page, and how many rows match."""

    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    total: int


def _schema(csv_path: Path) -> pa.Schema:
    """The types pyarrow infers from the CSV's first block; a column empty there is text."""
    reader = pacsv.open_csv(csv_path, read_options=pacsv.ReadOptions(block_size=_BLOCK))
    schema = reader.schema
    reader.close()
    return _texts_for_nulls(schema)


def _texts_for_nulls(schema: pa.Schema) -> pa.Schema:
    return pa.schema(
        pa.field(f.name, pa.string()) if pa.types.is_null(f.type) else f for f in schema
    )


def _write_streamed(csv_path: Path, out: Path, schema: pa.Schema) -> int:
    convert = pacsv.ConvertOptions(column_types=schema, strings_can_be_null=False)
    reader = pacsv.open_csv(
        csv_path, read_options=pacsv.ReadOptions(block_size=_BLOCK), convert_options=convert
    )
    rows = 0
    with pq.ParquetWriter(out, schema) as writer:
        for batch in reader:
            writer.write_batch(batch, row_group_size=ROW_GROUP)
            rows += batch.num_rows
    return rows


def csv_to_parquet(csv_path: Path, directory: Path) -> tuple[Path, int]:
    """``csv_path`` as a Parquet file in ``directory`` and its row count. Types are those
    pyarrow infers from the first 16 MB; when a later block does not fit them the whole file
    is read at once and typed from all of it."""
    out = directory / f".table-{secrets.token_hex(8)}.parquet"
    try:
        return out, _write_streamed(csv_path, out, _schema(csv_path))
    except pa.ArrowInvalid:
        table = pacsv.read_csv(
            csv_path, convert_options=pacsv.ConvertOptions(strings_can_be_null=False)
        )
        table = table.cast(_texts_for_nulls(table.schema))
        pq.write_table(table, out, row_group_size=ROW_GROUP)
        return out, table.num_rows


def parquet_columns(path: Path) -> tuple[tuple[str, str], ...]:
    """A Parquet file's columns and their Arrow types."""
    schema = pq.read_schema(path)
    return tuple((f.name, str(f.type)) for f in schema)


def parquet_rows(path: Path) -> int:
    return int(pq.ParquetFile(path).metadata.num_rows)


def _quote(column: str) -> str:
    return '"' + column.replace('"', '""') + '"'


def _is_text(arrow_type: str) -> bool:
    return arrow_type in ("string", "large_string")


def vocabulary(
    path: Path, columns: tuple[tuple[str, str], ...], con: duckdb.DuckDBPyConnection
) -> Path:
    """The vocabulary of the table blob at ``path`` (module docstring), made if it is missing:
    a Parquet file of (column, value) pairs, the distinct values of each low-cardinality text
    column, with the columns it covers in its metadata. Written atomically beside the blob."""
    target = path.with_name(path.name + VOCAB_SUFFIX)
    if target.is_file():
        return target
    text = [c for c, t in columns if _is_text(t)]
    rows = parquet_rows(path)
    covered: list[str] = []
    if text and rows:
        counted = ", ".join(f"approx_count_distinct({_quote(c)})" for c in text)
        distinct = con.execute(f"SELECT {counted} FROM read_parquet(?)", [str(path)]).fetchone()
        assert distinct is not None
        covered = [c for c, n in zip(text, distinct, strict=True) if n <= VOCAB_SHARE * rows]
    parts = [
        f"SELECT DISTINCT ?::VARCHAR AS col, {_quote(c)}::VARCHAR AS value FROM read_parquet(?)"
        for c in covered
    ]
    params: list[Any] = [x for c in covered for x in (c, str(path))]
    if parts:
        sql = " UNION ALL ".join(parts) + " ORDER BY col, value NULLS FIRST"
        pairs = con.execute(sql, params).fetchall()
    else:
        pairs = []
    table = pa.table(
        {
            "col": pa.array([c for c, _ in pairs], pa.string()),
            "value": pa.array([v for _, v in pairs], pa.string()),
        }
    )
    table = table.replace_schema_metadata({"covered": json.dumps(covered)})
    tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _matched(
    vocab: Path, search: str, con: duckdb.DuckDBPyConnection
) -> tuple[set[str], dict[str, list[str]]]:
    """The covered columns of ``vocab`` and, per column, its values holding ``search``."""
    covered = set(json.loads(pq.read_schema(vocab).metadata[b"covered"]))
    sql = "SELECT col, value FROM read_parquet(?) WHERE contains(lower(value), ?)"
    found: dict[str, list[str]] = {}
    for col, value in con.execute(sql, [str(vocab), search.lower()]).fetchall():
        found.setdefault(col, []).append(value)
    return covered, found


def _filter(
    columns: tuple[tuple[str, str], ...],
    search: str | None,
    where: Mapping[str, str] | None,
    vocab: tuple[set[str], dict[str, list[str]]] = (set(), {}),
) -> tuple[str, list[Any]]:
    """The WHERE clause of a search and filters, and its parameters (values bound, names
    the checked columns, quoted); ``vocab``: the vocabulary's covered columns and the values
    of each that hold the search (:func:`_matched`)."""
    clauses: list[str] = []
    params: list[Any] = []
    types = dict(columns)
    for column, value in (where or {}).items():
        text = _quote(column) if _is_text(types[column]) else f"CAST({_quote(column)} AS VARCHAR)"
        clauses.append(f"{text} = ?")
        params.append(str(value))
    if search:
        covered, matched = vocab
        found: list[str] = []
        for c, t in columns:
            if not _is_text(t):
                continue
            values = matched.get(c, [])
            if c in covered and len(values) <= VOCAB_IN_MAX:
                if values:
                    found.append(f"{_quote(c)} IN (SELECT unnest(?::VARCHAR[]))")
                    params.append(values)
            else:
                # contains(lower()) takes text as it is (no pattern), and ran 2-4x faster
                # than ILIKE ... ESCAPE on the 131k cut sheet
                found.append(f"contains(lower({_quote(c)}), ?)")
                params.append(search.lower())
        clauses.append(f"({' OR '.join(found)})" if found else "FALSE")
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


_NUMBERED = "read_parquet(?, file_row_number = true)"


def _rows_at(
    con: duckdb.DuckDBPyConnection, path: Path, shown: str, ids: list[int]
) -> list[tuple[Any, ...]]:
    """The rows with file row numbers ``ids``, in that order (the reader skips row groups
    outside their range; only those rows are materialised)."""
    if not ids:
        return []
    fetch = (
        f"SELECT file_row_number, {shown} FROM {_NUMBERED} WHERE file_row_number "
        "BETWEEN ? AND ? AND list_contains(?::BIGINT[], file_row_number)"
    )
    got = {r[0]: r[1:] for r in con.execute(fetch, [str(path), min(ids), max(ids), ids]).fetchall()}
    return [got[i] for i in ids]


def _page(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    shown: str,
    filtered: tuple[str, list[Any]],
    order: str,
    offset: int,
    limit: int,
) -> tuple[list[tuple[Any, ...]], int]:
    """The page's rows and how many rows match. With a filter, one scan gives the row numbers
    of every match in order (their count is the total), then the page's rows are fetched by
    number; without one, the count is the file's and a sorted page deep in the table takes
    its row numbers first (sorting the sort column only), an early one DuckDB's top rows."""
    where, params = filtered
    if where:
        sql = f"SELECT file_row_number FROM {_NUMBERED}{where}{order or ' ORDER BY 1'}"
        matched = con.execute(sql, [str(path), *params]).fetchnumpy()["file_row_number"]
        ids = [int(i) for i in matched[offset : offset + limit]]
        return _rows_at(con, path, shown, ids), int(matched.shape[0])
    total = parquet_rows(path)
    if not order:  # DuckDB keeps the file's order (preserve_insertion_order)
        sql = f"SELECT {shown} FROM read_parquet(?) LIMIT ? OFFSET ?"
        return con.execute(sql, [str(path), limit, offset]).fetchall(), total
    if offset + limit <= LATE_ROWS:
        sql = f"SELECT {shown} FROM {_NUMBERED}{order} LIMIT ? OFFSET ?"
        return con.execute(sql, [str(path), limit, offset]).fetchall(), total
    sql = f"SELECT file_row_number FROM {_NUMBERED}{order} LIMIT ? OFFSET ?"
    ids = [int(r[0]) for r in con.execute(sql, [str(path), limit, offset]).fetchall()]
    return _rows_at(con, path, shown, ids), total


def query(
    path: Path,
    columns: tuple[tuple[str, str], ...],
    *,
    table: str,
    offset: int = 0,
    limit: int = 50,
    sort: str | None = None,
    descending: bool = False,
    search: str | None = None,
    where: Mapping[str, str] | None = None,
    connection: duckdb.DuckDBPyConnection | None = None,
    use_vocabulary: bool = True,
) -> TablePage:
    """A page of the Parquet table at ``path`` (its ``columns`` from the store). Rows keep the
    table's order unless sorted; a sort is stable (ties in file order) with nulls last in
    either direction. ``search`` is a case-insensitive substring of any text column; ``where``
    holds column -> value, equal as text. ``connection`` is a DuckDB connection to use (and
    close): a cursor of a connection kept open, which saves the ~40 ms of opening one.
    ``use_vocabulary``: search through the blob's vocabulary (module docstring; False scans
    every text column, the same rows)."""
    names = [c for c, _ in columns]
    if offset < 0:
        raise StoreError(f"table {table}: offset {offset} is negative; give 0 or more")
    if not 0 <= limit <= MAX_LIMIT:
        raise StoreError(f"table {table}: limit {limit} is outside 0..{MAX_LIMIT}")
    for column in [*([sort] if sort is not None else []), *(where or {})]:
        if column not in names:
            raise StoreError(
                f"table {table}: no column {column[:80]!r}; its columns are " + ", ".join(names)
            )
    shown = ", ".join(_quote(c) for c in names)
    order = ""
    if sort is not None:  # ties in file order, as a stable sort keeps them
        direction = "DESC" if descending else "ASC"
        order = f" ORDER BY {_quote(sort)} {direction} NULLS LAST, file_row_number"
    try:
        with connection if connection is not None else duckdb.connect() as con:
            vocab: tuple[set[str], dict[str, list[str]]] = (set(), {})
            if search and use_vocabulary:
                vocab = _matched(vocabulary(path, columns, con), search, con)
            filtered = _filter(columns, search, where, vocab)
            rows, total = _page(con, path, shown, filtered, order, offset, limit)
    except duckdb.Error as exc:
        raise StoreError(f"table {table}: the query failed: {exc}") from exc
    return TablePage(tuple(names), tuple(tuple(r) for r in rows), total)
