"""The design store (``docs/store.md``): designs, simulation runs, their files, tables and
pictures, findings, access tokens, incidents (``clusterloom.ops.incident``) and the one model
of changes (``clusterloom.changes``) in a SQL database (SQLite by default, PostgreSQL by URL;
Alembic migrations shipped here), with files as content-addressed blobs and tables as Parquet
queried with DuckDB."""

from clusterloom.errors import StoreError
from clusterloom.store.records import (
    Artifact,
    DesignRecord,
    IncidentRecord,
    RunRecord,
    TokenRecord,
)
from clusterloom.store.store import Store, default_url, open_store
from clusterloom.store.tables import TablePage

__all__ = [
    "Artifact",
    "DesignRecord",
    "IncidentRecord",
    "RunRecord",
    "Store",
    "StoreError",
    "TablePage",
    "TokenRecord",
    "default_url",
    "open_store",
]
