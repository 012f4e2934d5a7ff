"""Shared fixtures: temporary databases, on SQLite and on PostgreSQL.

Tests that take ``engine`` or ``database_url`` run once per backend.  The PostgreSQL
run needs the server binaries (``.ci/run`` installs them); without them it skips
with a reason, and the SQLite run still happens, unless ``BRRRBOT_REQUIRE_POSTGRES=1``
(set by ``.ci/run``) turns the skip into a failure.
"""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db import migrate
from bot.db.engine import ensure_data_dir, make_engine, parse_url, sqlite_path
from tests.postgres_server import BACKENDS, PostgresServer, started_postgres


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    server = started_postgres()
    yield server
    server.stop()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'db' / 'brrrbot.sqlite3'}"


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An SQLite database migrated to head once a session, which each SQLite ``database_url``
    copies, as each PostgreSQL one is created from the server's migrated template."""
    path = tmp_path_factory.mktemp("sqlite-template") / "brrrbot.sqlite3"

    async def migrated() -> None:
        engine = make_engine(f"sqlite+aiosqlite:///{path}")
        await migrate.upgrade(engine)
        await engine.dispose()

    with ThreadPoolExecutor(1) as thread:  # its own event loop, whichever one asks for it
        thread.submit(asyncio.run, migrated()).result()
    others = sorted(p.name for p in path.parent.iterdir() if p != path)
    assert not others, f"the template is more than one file: {others}"  # no -wal left over
    return path


@pytest.fixture(params=BACKENDS)
async def database_url(request: pytest.FixtureRequest, sqlite_url: str) -> str:
    """A database migrated to head, on each backend in turn."""
    if request.param == "sqlite":
        template: Path = request.getfixturevalue("sqlite_template")
        parsed = parse_url(sqlite_url)
        ensure_data_dir(parsed)  # its directory and file private, as make_engine makes them
        path = sqlite_path(parsed)
        assert path is not None
        shutil.copyfile(template, path)  # the file keeps its mode
        return sqlite_url
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return await server.create_database()


@pytest.fixture
async def engine(database_url: str) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(database_url)
    yield engine
    await engine.dispose()
