"""Shared fixtures: temporary databases."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db import migrate
from bot.db.engine import make_engine


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'db' / 'brrrbot.sqlite3'}"


@pytest.fixture
async def engine(sqlite_url: str) -> AsyncIterator[AsyncEngine]:
    """An SQLite database migrated to head."""
    engine = make_engine(sqlite_url)
    await migrate.upgrade(engine)
    yield engine
    await engine.dispose()
