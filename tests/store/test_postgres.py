"""The design store on a real PostgreSQL server: the migrations down to base and up again, the
migrated schema equal to the models, and a small design recorded and queried as on SQLite.

The server's URL comes from ``CLUSTERLOOM_TEST_PG`` (``.ci/run`` starts PostgreSQL, creates the
``clusterloom`` role and the ``clusterloom_store_test`` database and exports it, e.g.
``postgresql+psycopg://clusterloom:clusterloom@127.0.0.1:5432/clusterloom_store_test``; not
``clusterloom_test``, which the NetBox tests make afresh). Without it
the tests are skipped, unless ``CI`` is set: then they fail. The database is emptied (migrated
to base) before and after the module.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import create_engine, inspect, text

from clusterloom.changes import Approval, ChangePlan, Decision, Proposal, Step
from clusterloom.pipeline import Design
from clusterloom.store import Store, StoreError, migrate, open_store
from clusterloom.store.models import Base

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    url = os.environ.get("CLUSTERLOOM_TEST_PG")
    if not url:
        why = "CLUSTERLOOM_TEST_PG is not set (the URL of a PostgreSQL test database)"
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and there is no PostgreSQL: {why}")
        pytest.skip(why)
    engine = create_engine(url)
    try:
        with engine.connect() as con:
            con.execute(text("SELECT 1"))
    except Exception as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set and PostgreSQL at CLUSTERLOOM_TEST_PG is not up: {exc}")
        pytest.skip(f"PostgreSQL at CLUSTERLOOM_TEST_PG is not up: {exc}")
    migrate.downgrade(engine, "base")
    yield url
    migrate.downgrade(engine, "base")
    engine.dispose()


@pytest.fixture(scope="module")
def pg(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    blobs = tmp_path_factory.mktemp("pg-blobs")
    before = os.environ.get("CLUSTERLOOM_BLOBS")
    os.environ["CLUSTERLOOM_BLOBS"] = str(blobs)
    try:
        store = open_store(pg_url)
    finally:
        if before is None:
            del os.environ["CLUSTERLOOM_BLOBS"]
        else:
            os.environ["CLUSTERLOOM_BLOBS"] = before
    assert store.blobs.root == blobs
    yield store
    store.close()


def test_migrations_down_and_up(pg_url: str) -> None:
    store = open_store(pg_url)
    engine = store.engine
    assert migrate.current(engine) == migrate.head()
    assert set(Base.metadata.tables) <= set(inspect(engine).get_table_names())
    migrate.downgrade(engine, "base")
    assert migrate.current(engine) is None
    assert set(inspect(engine).get_table_names()) <= {"alembic_version"}
    migrate.upgrade(engine)
    with engine.connect() as con:
        assert compare_metadata(MigrationContext.configure(con), Base.metadata) == []
    store.close()


def test_record_and_query(pg: Store, campus: tuple[Design, Path]) -> None:
    design, run_dir = campus
    first = pg.record_design(design, run_dir, user="ann")
    second = pg.record_design(design, run_dir, user="bob")
    assert (second.version, second.parent) == (2, first.id)
    assert pg.design(first.ref) == first and pg.design(first.id[:7]) == first
    assert [d.id for d in pg.designs()][:2] == [second.id, first.id]
    assert pg.findings(first.id) == pg.findings(second.id) and pg.findings(first.id)
    page = pg.table(second.id, "cut_sheet", sort="length_m", descending=True, limit=5)
    lengths = [r[page.columns.index("length_m")] for r in page.rows]
    assert page.total == 128 and lengths == sorted(lengths, reverse=True)
    assert pg.table(second.id, "cut_sheet", search="B1-H1-R01").total > 0  # any case
    with pytest.raises(StoreError, match="no column"):
        pg.table(second.id, "cut_sheet", sort="length_m; DROP TABLE designs")
    with pytest.raises(StoreError, match="not an artifact"):
        pg.artifact_path(second.id, "../design.json")
    assert pg.diff(first.id, second.id)["bom"] == []
    token_id, secret = pg.add_token("ann", "read")
    assert pg.check_token(secret) is not None
    pg.revoke_token(token_id)
    assert pg.check_token(secret) is None
    plan = ChangePlan(
        "pg-plan", "old", design.provenance.spec_hash, (Step(1, "pull", ("x",), "r"),)
    )
    for rec in (
        plan,
        Proposal("pg-prop", plan, "ann"),
        Approval("pg-prop", "bob", True),
        Decision("pg-prop", {"why": "cheapest"}, "a"),
    ):
        assert pg.change_record(pg.record(rec)) == rec
    assert {r["design_id"] for r in pg.records()} == {second.id}
    assert pg.gc(grace_s=0) == (0, 0)
