"""The SQLite database holds every submission and the audit log: its directory and files are
created for their owner only, whatever the umask lets other programs' files be."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.db import migrate
from bot.db.engine import make_engine, make_sessionmaker
from bot.db.models import Guild


@pytest.fixture
def usual_umask() -> Iterator[None]:
    """022, the usual default, under which a plain create makes 0644 files and 0755 dirs."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_data_directory_and_database_files_are_private(
    tmp_path: Path, usual_umask: None
) -> None:
    database = tmp_path / "data" / "brrrbot.sqlite3"
    engine = make_engine(f"sqlite+aiosqlite:///{database}")
    try:
        await migrate.upgrade(engine)
        async with make_sessionmaker(engine)() as session, session.begin():
            session.add(Guild(id=1))  # a write: the WAL and its index exist now
        files = {path.name: _mode(path) for path in database.parent.iterdir()}
        assert _mode(database.parent) == 0o700
        assert files == {
            "brrrbot.sqlite3": 0o600,
            "brrrbot.sqlite3-wal": 0o600,
            "brrrbot.sqlite3-shm": 0o600,
        }
    finally:
        await engine.dispose()


async def test_an_existing_directory_keeps_its_mode(tmp_path: Path, usual_umask: None) -> None:
    """The database may live in a directory the owner shares on purpose (or the cwd)."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    engine = make_engine(f"sqlite+aiosqlite:///{shared / 'brrrbot.sqlite3'}")
    try:
        await migrate.upgrade(engine)
    finally:
        await engine.dispose()
    assert _mode(shared) == 0o755
    assert _mode(shared / "brrrbot.sqlite3") == 0o600
