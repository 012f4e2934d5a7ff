"""Fixtures for progress tests: a migrated SQLite database with one guild's helpers."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.db.engine import make_sessionmaker
from tests.progress.world import World


@pytest.fixture
def sessions(engine: AsyncEngine) -> async_sessionmaker[AsyncSession]:
    return make_sessionmaker(engine)


@pytest.fixture
def world(sessions: async_sessionmaker[AsyncSession]) -> World:
    return World(sessions)
