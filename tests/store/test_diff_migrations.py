"""``Store.diff`` against figures computed here from the two designs and their ``bom.csv``; the
migrations down to base and up again on SQLite, and the migrated schema equal to the models."""

from __future__ import annotations

import csv
from collections import defaultdict
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect
from store_fixtures import design_dir, two_building_spec

from clusterloom.pipeline import Design
from clusterloom.store import Store, migrate, open_store
from clusterloom.store.models import Base

Key = tuple[str, str, str, str, float | None]


def _bom(run_dir: Path) -> dict[Key, tuple[int, float]]:
    """bom.csv's quantity and cost summed per (fabric, tier, category, item, length)."""
    out: dict[Key, list[float]] = defaultdict(lambda: [0, 0.0])
    with open(run_dir / "bom.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            length = float(r["length_m"]) if r["length_m"] else None
            key = (r["fabric"], r["tier"], r["category"], r["item"], length)
            out[key][0] += int(r["quantity"] or 0)  # the total line has none
            out[key][1] += float(r["cost_usd"])
    return {k: (int(v[0]), v[1]) for k, v in out.items()}


def test_diff_has_the_right_deltas(
    store: Store, campus: tuple[Design, Path], tmp_path: Path
) -> None:
    big, big_dir = campus
    small, small_dir = design_dir(two_building_spec(accelerators=32), tmp_path / "small")
    a = store.record_design(small, small_dir)
    b = store.record_design(big, big_dir)
    d = store.diff(a.ref, b.id)
    assert (d["a"]["id"], d["b"]["id"], d["same_spec"]) == (a.id, b.id, False)
    for key, fig in d["summary"].items():
        va, vb = a.summary.get(key), b.summary.get(key)
        assert (fig["a"], fig["b"], fig["changed"]) == (va, vb, va != vb)
        if isinstance(va, int | float) and isinstance(vb, int | float):
            assert fig["delta"] == pytest.approx(vb - va)
    assert d["summary"]["accelerators"]["delta"] == 32
    # the BOM: every line whose quantity or cost differs, keyed as bom.csv keys it
    ba, bb = _bom(small_dir), _bom(big_dir)
    want = {
        k: (ba.get(k, (0, 0.0)), bb.get(k, (0, 0.0)))
        for k in set(ba) | set(bb)
        if ba.get(k, (0, 0.0)) != bb.get(k, (0, 0.0)) and k[2] != "total"
    }
    # the total line is no line: the totals are the diff's own, the sum of the lines
    (total_a,) = (c for k, (_, c) in ba.items() if k[2] == "total")
    (total_b,) = (c for k, (_, c) in bb.items() if k[2] == "total")
    cost = d["changes"]["bom"]["cost_usd"]
    assert (cost["a"], cost["b"]) == (pytest.approx(total_a), pytest.approx(total_b))
    got = {}
    for line in d["bom"]:
        key = (line["fabric"], line["tier"], line["category"], line["item"], line["length_m"])
        got[key] = (
            (line["quantity_a"], line["cost_usd_a"]),
            (line["quantity_b"], line["cost_usd_b"]),
        )
        assert line["quantity_delta"] == line["quantity_b"] - line["quantity_a"]
    assert set(got) == set(want) and want
    for k, ((qa, ca), (qb, cb)) in want.items():
        assert got[k][0][0] == qa and got[k][1][0] == qb
        assert got[k][0][1] == pytest.approx(ca) and got[k][1][1] == pytest.approx(cb)
    # findings: those of b not in a appear, those of a not in b clear
    fa = {(f["stage"], f["code"], f["message"]) for f in store.findings(a.id)}
    fb = {(f["stage"], f["code"], f["message"]) for f in store.findings(b.id)}
    appear = {(f["stage"], f["code"], f["message"]) for f in d["findings"]["appear"]}
    clear = {(f["stage"], f["code"], f["message"]) for f in d["findings"]["clear"]}
    assert appear == fb - fa and clear == fa - fb and appear and clear
    same = store.diff(b.id, b.id)
    assert same["bom"] == [] and same["findings"] == {"appear": [], "clear": []}
    assert not any(f["changed"] for f in same["summary"].values())


def test_migrations_down_and_up(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    open_store(url).close()
    engine = create_engine(url)
    tables = set(Base.metadata.tables)
    assert migrate.current(engine) == migrate.head()
    assert tables <= set(inspect(engine).get_table_names())
    migrate.downgrade(engine, "base")
    assert migrate.current(engine) is None
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    migrate.upgrade(engine)
    assert migrate.current(engine) == migrate.head()
    with engine.connect() as con:
        assert compare_metadata(MigrationContext.configure(con), Base.metadata) == []
    engine.dispose()
    store = open_store(url)  # opening a store at head again changes nothing
    assert store.designs() == []
    store.close()
