"""Tables through DuckDB equal what plain Python computes from the CSV the design wrote: every
page of every sort, search and filter (hypothesis over offsets, limits, columns and search
text); names that are not columns are refused before any SQL runs."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clusterloom.pipeline import Design
from clusterloom.store import Store, StoreError, open_store
from clusterloom.store.tables import DESIGN_TABLES, MAX_LIMIT, VOCAB_SUFFIX, query


@pytest.fixture(scope="module")
def recorded(
    campus: tuple[Design, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Store, str, Path]]:
    design, run_dir = campus
    store = open_store(f"sqlite:///{tmp_path_factory.mktemp('tables') / 'store.db'}")
    rec = store.record_design(design, run_dir)
    yield store, rec.id, run_dir
    store.close()


def _typed(value: str, arrow: str) -> Any:
    """A CSV cell as the Parquet column holds it (an empty number is null)."""
    if arrow in ("string", "large_string"):
        return value
    if value == "":
        return None
    if arrow.startswith("int"):
        return int(value)
    if arrow == "double":
        return float(value)
    if arrow == "bool":
        return value.lower() == "true"
    raise AssertionError(f"a column type the test does not know: {arrow}")


def _expected(
    run_dir: Path,
    source: str,
    columns: list[tuple[str, str]],
    *,
    sort: str | None,
    descending: bool,
    search: str | None,
    where: dict[str, str],
) -> list[tuple[Any, ...]]:
    with open(run_dir / source, newline="") as fh:
        rows = [tuple(_typed(r[c], t) for c, t in columns) for r in csv.DictReader(fh)]
    names = [c for c, _ in columns]
    texts = [i for i, (_, t) in enumerate(columns) if t == "string"]
    if search:
        rows = [r for r in rows if any(search.lower() in r[i].lower() for i in texts)]
    for column, value in where.items():
        i = names.index(column)
        rows = [r for r in rows if _as_text(r[i]) == value]
    if sort is not None:
        i = names.index(sort)
        present = sorted(
            (r for r in rows if r[i] is not None), key=lambda r: r[i], reverse=descending
        )
        rows = present + [r for r in rows if r[i] is None]  # nulls last, either way
    return rows


def _as_text(v: Any) -> str | None:
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _columns(store: Store, owner: str, name: str) -> list[tuple[str, str]]:
    return list(store.columns(owner, name))


def test_every_table_the_directory_has(recorded: tuple[Store, str, Path]) -> None:
    store, owner, run_dir = recorded
    assert store.tables(owner) == [
        n for n, src in DESIGN_TABLES.items() if (run_dir / src).is_file()
    ]
    assert len(store.tables(owner)) == 7
    for name in store.tables(owner):
        source = DESIGN_TABLES[name]
        with open(run_dir / source, newline="") as fh:
            reader = csv.reader(fh)
            header = next(reader)
            n = sum(1 for _ in reader)
        page = store.table(owner, name, limit=MAX_LIMIT)
        assert page.columns == tuple(header) and page.total == n == store.table_rows(owner, name)
        assert list(page.rows) == _expected(
            run_dir,
            source,
            _columns(store, owner, name),
            sort=None,
            descending=False,
            search=None,
            where={},
        )


@settings(max_examples=60)
@given(data=st.data())
def test_pages_equal_python(recorded: tuple[Store, str, Path], data: st.DataObject) -> None:
    store, owner, run_dir = recorded
    name = data.draw(st.sampled_from(["cut_sheet", "pull_list", "racks", "bom", "interfaces"]))
    columns = _columns(store, owner, name)
    names = [c for c, _ in columns]
    sort = data.draw(st.none() | st.sampled_from(names))
    descending = data.draw(st.booleans())
    search = data.draw(
        st.none()
        | st.sampled_from(["b1-h1", "B2-", "leaf", "r02", "FR2", "zz-none", "swp1", "-p0"])
        | st.text(alphabet="abr0123-", min_size=1, max_size=3)
    )
    where: dict[str, str] = {}
    if data.draw(st.booleans()):
        column = data.draw(st.sampled_from(names))
        every = [
            _as_text(r[names.index(column)])
            for r in _expected(
                run_dir,
                DESIGN_TABLES[name],
                columns,
                sort=None,
                descending=False,
                search=None,
                where={},
            )
        ]
        where[column] = data.draw(st.sampled_from([v for v in every if v is not None] or ["x"]))
    want = _expected(
        run_dir,
        DESIGN_TABLES[name],
        columns,
        sort=sort,
        descending=descending,
        search=search,
        where=where,
    )
    offset = data.draw(st.integers(0, len(want) + 3))
    limit = data.draw(st.integers(0, 40))
    late = data.draw(st.booleans())  # a deep page's two-step fetch, on this small table too
    # a search through the vocabulary, with a column's long match list scanned instead (0, 1)
    in_max = data.draw(st.sampled_from([0, 1, 2_000]))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("clusterloom.store.tables.LATE_ROWS", 0 if late else 10_000)
        mp.setattr("clusterloom.store.tables.VOCAB_IN_MAX", in_max)
        page = store.table(
            owner,
            name,
            offset=offset,
            limit=limit,
            sort=sort,
            descending=descending,
            search=search,
            where=where,
        )
    assert page.total == len(want)
    assert list(page.rows) == want[offset : offset + limit]


def test_pages_tile_the_table(recorded: tuple[Store, str, Path]) -> None:
    """Consecutive pages of a sort, put together, are the whole sorted table once."""
    store, owner, _ = recorded
    total = store.table_rows(owner, "cut_sheet")
    seen = []
    for offset in range(0, total + 7, 7):
        seen += store.table(owner, "cut_sheet", offset=offset, limit=7, sort="length_m").rows
    labels = [r[0] for r in seen]
    assert len(labels) == total == len(set(labels))
    lengths = [r[14] for r in seen]
    assert lengths == sorted(lengths)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"sort": "no_such"}, "no column 'no_such'"),
        ({"sort": 'length_m" DESC; --'}, "no column"),
        ({"where": {"1=1 OR label": "x"}}, "no column"),
        ({"offset": -1}, "negative"),
        ({"limit": MAX_LIMIT + 1}, "outside"),
    ],
)
def test_bad_queries_are_refused(
    recorded: tuple[Store, str, Path], kwargs: dict[str, Any], match: str
) -> None:
    store, owner, _ = recorded
    with pytest.raises(StoreError, match=match):
        store.table(owner, "cut_sheet", **kwargs)


def test_search_is_text_not_sql(recorded: tuple[Store, str, Path]) -> None:
    store, owner, _ = recorded
    for text in ("%", "_", "' OR '1'='1", "\\", "b1%h1", "b_-h1"):
        assert store.table(owner, "cut_sheet", search=text).total == 0
    with pytest.raises(StoreError, match="not a table"):
        store.table(owner, "../cut_sheet")


def test_the_vocabulary_covers_the_repeating_columns(recorded: tuple[Store, str, Path]) -> None:
    """Each table blob has its vocabulary beside it from record time: every distinct value of
    the text columns that repeat (racks, devices, media), none of a column of unique labels;
    the search through it gives the rows of the plain scan."""
    store, owner, _ = recorded
    path = store.table_source(owner, "cut_sheet")
    assert path is not None
    vocab = path.with_name(path.name + VOCAB_SUFFIX)
    assert vocab.is_file()
    table = pq.read_table(vocab)
    covered = set(json.loads(table.schema.metadata[b"covered"]))
    assert {"a_rack", "b_rack", "medium"} <= covered and "label" not in covered
    pairs = set(
        zip(table.column("col").to_pylist(), table.column("value").to_pylist(), strict=True)
    )
    racks = pq.read_table(path, columns=["a_rack"]).column("a_rack").to_pylist()
    assert {v for c, v in pairs if c == "a_rack"} == set(racks)
    columns = store.columns(owner, "cut_sheet")
    for text in ("b1-h1-r01", "leaf", "B1-0", "zz-none"):
        scanned = query(path, columns, table="cut_sheet", search=text, use_vocabulary=False)
        assert query(path, columns, table="cut_sheet", search=text) == scanned
