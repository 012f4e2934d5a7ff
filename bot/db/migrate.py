"""Apply and inspect migrations programmatically (CLI and bot start use this)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

import migrations
from bot.errors import DatabaseError

MIGRATIONS_DIR = Path(migrations.__file__).parent


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "the migration chain is empty"
    return head


async def _run(engine: AsyncEngine, fn: Any, *args: Any, schema_change: bool = False) -> Any:
    try:
        if schema_change and engine.dialect.name == "sqlite":
            return await _run_sqlite_schema_change(engine, fn, *args)
        async with engine.begin() as connection:
            return await connection.run_sync(fn, *args)
    except OperationalError as exc:
        raise DatabaseError(f"cannot open the database {_safe_url(engine)}: {exc.orig}") from exc
    except OSError as exc:
        raise DatabaseError(f"cannot open the database {_safe_url(engine)}: {exc}") from exc
    except SQLAlchemyError as exc:
        raise DatabaseError(f"database {_safe_url(engine)}: {exc}") from exc


async def _run_sqlite_schema_change(engine: AsyncEngine, fn: Any, *args: Any) -> Any:
    """Run a migration as SQLite's own procedure for schema changes does: foreign keys off.

    SQLite adds a constraint or drops a column by rebuilding the table (alembic's batch mode:
    copy, DROP, rename).  With foreign keys on, that DROP deletes the old table's rows first,
    and every ``ON DELETE CASCADE`` below it fires: rebuilding ``submissions`` would delete
    every job and speed result.  The pragma is a no-op inside a transaction, so it is set on
    the driver connection before ours begins; ``PRAGMA foreign_key_check`` before the commit
    then refuses a migration that left a dangling reference, and foreign keys are on again
    before the connection goes back to the pool (or it is discarded).
    """
    async with engine.connect() as connection:
        driver: Any = (await connection.get_raw_connection()).driver_connection
        try:
            await _pragma(driver, "foreign_keys = OFF")
            async with connection.begin():
                result = await connection.run_sync(fn, *args)
                dangling = (await connection.exec_driver_sql("PRAGMA foreign_key_check")).all()
                if dangling:
                    raise DatabaseError(
                        f"the migration left {len(dangling)} row(s) pointing at rows that do not "
                        f"exist (table, rowid, parent): {[tuple(row[:3]) for row in dangling[:5]]}"
                    )
            return result
        finally:
            try:
                await _pragma(driver, "foreign_keys = ON")
            except Exception:  # never back to the pool with foreign keys off
                await connection.invalidate()


async def _pragma(driver: Any, setting: str) -> None:
    async with driver.execute(f"PRAGMA {setting}"):
        pass


def _safe_url(engine: AsyncEngine) -> str:
    return engine.url.render_as_string(hide_password=True)


def _upgrade(connection: Connection, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


def _downgrade(connection: Connection, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.downgrade(config, revision)


def _current(connection: Connection) -> str | None:
    return MigrationContext.configure(connection).get_current_revision()


async def upgrade(engine: AsyncEngine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` in one transaction (all or nothing)."""
    await _run(engine, _upgrade, revision, schema_change=True)


async def downgrade(engine: AsyncEngine, revision: str) -> None:
    await _run(engine, _downgrade, revision, schema_change=True)


async def current(engine: AsyncEngine) -> str | None:
    """The applied revision, or None for an empty database."""
    return await _run(engine, _current)


async def require_current(engine: AsyncEngine) -> None:
    """Refuse to work on a schema other than this code's head.

    Workers do not migrate (a remote worker's role may not even be allowed to): the bot
    does, at start, so a worker that finds an older schema says whom to ask.
    """
    revision = await current(engine)
    head = head_revision()
    if revision != head:
        raise DatabaseError(
            f"the database schema is at {revision or 'nothing'} but this worker needs {head}: "
            "start the bot (it migrates at start) or run `brrrbot db upgrade` with an owner's "
            "DATABASE_URL, then start the worker again"
        )
