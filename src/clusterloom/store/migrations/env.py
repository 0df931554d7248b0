"""Alembic's environment for the store's migrations. The store runs them itself
(``clusterloom.store.migrate``) with a ``Config`` built in code, handing over its open
connection in ``config.attributes["connection"]``; there is no ``alembic.ini``."""

from __future__ import annotations

from alembic import context

from clusterloom.store.models import Base

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
