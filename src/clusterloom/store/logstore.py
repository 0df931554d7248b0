"""The store's approval model over a JSON-lines log (``changes.append_record``): the log
imported into a throwaway SQLite store, so that a decision recorded in a log alone is checked
exactly as the store checks it (decided once, a superseded proposal refused). What a command
records there it also appends to the log; the throwaway store is deleted on exit."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from clusterloom.errors import Problem, SpecError, StoreError
from clusterloom.store.store import Store, open_store


@contextmanager
def log_store(path: str | Path) -> Iterator[Store]:
    """A store holding the records of the log at ``path`` (none when it does not exist yet);
    ``SpecError`` naming the log when its records cannot be imported."""
    p = Path(path)
    with tempfile.TemporaryDirectory(prefix="clusterloom-log-") as tmp:
        store = open_store(f"sqlite:///{tmp}/log.db")
        try:
            if p.exists():
                try:
                    store.import_records(p)
                except StoreError as exc:
                    raise SpecError([Problem(str(p), str(exc))]) from exc
            yield store
        finally:
            store.close()
