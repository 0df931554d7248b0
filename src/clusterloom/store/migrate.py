"""The store's schema migrations, run in code with Alembic's command API: a ``Config`` built
here (no ``alembic.ini``), the scripts shipped in the package (``migrations/``), the store's own
connection handed to ``migrations/env.py``. ``open_store`` upgrades to head."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, Engine

SCRIPTS = Path(__file__).with_name("migrations")


def _config(connection: Connection | None = None) -> Config:
    config = Config()
    config.set_main_option("script_location", str(SCRIPTS))
    config.attributes["connection"] = connection
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database of ``engine`` up to ``revision``."""
    with engine.begin() as connection:
        command.upgrade(_config(connection), revision)


def downgrade(engine: Engine, revision: str = "base") -> None:
    """Migrate the database of ``engine`` down to ``revision`` (``base``: no tables)."""
    with engine.begin() as connection:
        command.downgrade(_config(connection), revision)


def current(engine: Engine) -> str | None:
    """The revision the database is at (None: not migrated)."""
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head() -> str:
    """The newest revision the package ships."""
    found = ScriptDirectory.from_config(_config()).get_current_head()
    assert found is not None
    return found
