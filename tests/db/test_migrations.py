"""The migration chain builds exactly the models, both ways, atomically."""

from __future__ import annotations

from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db import migrate
from bot.db.engine import make_engine
from bot.db.models import Base
from bot.errors import DatabaseError
from tests.postgres_server import BACKENDS, PostgresServer

EXPECTED_TABLES = {
    "guilds",
    "members",
    "guild_quests",
    "quest_schedule",
    "submissions",
    "grading_jobs",
    "xp_ledger",
    "post_log",
    "audit_log",
    "worker_heartbeats",
}


def _diff(connection: Any) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return compare_metadata(context, Base.metadata)


def _tables(connection: Any) -> set[str]:
    return set(inspect(connection).get_table_names())


async def test_head_matches_models(engine: AsyncEngine) -> None:
    async with engine.connect() as connection:
        assert await connection.run_sync(_diff) == []
        assert await connection.run_sync(_tables) >= EXPECTED_TABLES
    assert await migrate.current(engine) == migrate.head_revision()


@pytest.fixture(params=BACKENDS)
async def empty_url(request: pytest.FixtureRequest, sqlite_url: str) -> str:
    """An empty database on each backend."""
    if request.param == "sqlite":
        return sqlite_url
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return await server.create_database(migrated=False)


async def test_empty_head_base_head(empty_url: str) -> None:
    engine = make_engine(empty_url)
    try:
        assert await migrate.current(engine) is None
        await migrate.upgrade(engine)
        await migrate.downgrade(engine, "base")
        async with engine.connect() as connection:
            assert await connection.run_sync(_tables) & EXPECTED_TABLES == set()
        assert await migrate.current(engine) is None
        await migrate.upgrade(engine)
        async with engine.connect() as connection:
            assert await connection.run_sync(_diff) == []
    finally:
        await engine.dispose()


async def test_failed_migration_leaves_nothing_half_written(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    try:
        async with engine.begin() as connection:
            # A stray table that the initial migration also creates, late in its order.
            await connection.execute(text("CREATE TABLE grading_jobs (id INTEGER)"))
        with pytest.raises(DatabaseError, match="grading_jobs"):
            await migrate.upgrade(engine)
        async with engine.connect() as connection:
            assert await connection.run_sync(_tables) == {"grading_jobs"}
        assert await migrate.current(engine) is None
    finally:
        await engine.dispose()
