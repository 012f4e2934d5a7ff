"""Shared fixtures: temporary databases, on SQLite and on PostgreSQL.

Tests that take ``engine`` or ``database_url`` run once per backend.  The PostgreSQL
run needs the server binaries (``.ci/run`` installs them); without them it skips
with a reason, and the SQLite run still happens, unless ``BRRRBOT_REQUIRE_POSTGRES=1``
(set by ``.ci/run``) turns the skip into a failure.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db import migrate
from bot.db.engine import make_engine
from tests.postgres_server import BACKENDS, PostgresServer, Unavailable

REQUIRE_ENV = "BRRRBOT_REQUIRE_POSTGRES"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    try:
        server = PostgresServer()
        server.start()
    except Unavailable as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {exc}")
        pytest.skip(str(exc))
    yield server
    server.stop()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'db' / 'brrrbot.sqlite3'}"


@pytest.fixture(params=BACKENDS)
async def database_url(request: pytest.FixtureRequest, sqlite_url: str) -> str:
    """A database migrated to head, on each backend in turn."""
    if request.param == "sqlite":
        engine = make_engine(sqlite_url)
        await migrate.upgrade(engine)
        await engine.dispose()
        return sqlite_url
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return await server.create_database()


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(database_url)
    yield engine
    await engine.dispose()
