"""The XP ledger cannot be rewritten by the statements that slip past UPDATE/DELETE guards:
SQLite's INSERT OR REPLACE and upserts, PostgreSQL's TRUNCATE (plain and cascaded).

Each refused statement is followed by a look at the row: it must be exactly as it was.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import select, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db import migrate
from bot.db.engine import make_engine, make_sessionmaker, sqlite_path
from bot.db.models import Guild, Member, XpEntry
from bot.db.types import utcnow
from tests.postgres_server import PostgresServer

COLUMNS = "id, guild_id, member_id, amount, reason, source, reference, idempotency_key, created_at"
KEY = "task:1:go-brrrr/matmul-three-ways:60"


async def _one_row(engine: AsyncEngine) -> int:
    """A member with one ledger row (60 XP); the row's id."""
    async with make_sessionmaker(engine)() as session, session.begin():
        session.add(Guild(id=111))
        member = Member(guild_id=111, user_id=222, display_name="ada")
        session.add(member)
        await session.flush()
        entry = XpEntry(
            guild_id=111,
            member_id=member.id,
            amount=60,
            reason="passed",
            source="task",
            reference="go-brrrr/matmul-three-ways",
            idempotency_key=KEY,
        )
        session.add(entry)
    return entry.id


async def _rows(engine: AsyncEngine) -> list[tuple[int, int, str]]:
    async with make_sessionmaker(engine)() as session:
        found = await session.execute(
            select(XpEntry.id, XpEntry.amount, XpEntry.idempotency_key).order_by(XpEntry.id)
        )
        return [tuple(row) for row in found]  # type: ignore[misc]


def _values(row_id: int | None, key: str = KEY) -> str:
    """A ledger row's VALUES with 999 XP (``row_id`` None: a fresh id)."""
    first = "NULL" if row_id is None else str(row_id)
    return f"({first}, 111, 1, 999, 'forged', 'task', 'go-brrrr/matmul-three-ways', '{key}', :at)"


async def _refused(engine: AsyncEngine, statement: str) -> str:
    """Run ``statement`` in its own transaction; the database's refusal, as text."""
    async with make_sessionmaker(engine)() as session:
        with pytest.raises(DBAPIError) as refused:
            async with session.begin():
                await session.execute(text(statement), {"at": utcnow()})
    return str(refused.value)


@pytest.fixture
async def sqlite_engine(sqlite_url: str) -> AsyncIterator[AsyncEngine]:
    """The bot's own engine (its pragmas) on a migrated SQLite file."""
    engine = make_engine(sqlite_url)
    await migrate.upgrade(engine)
    yield engine
    await engine.dispose()


@pytest.fixture
async def postgres_engine(postgres_server: PostgresServer) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(await postgres_server.create_database())
    yield engine
    await engine.dispose()


async def test_sqlite_refuses_replace_and_upsert_of_a_ledger_row(
    sqlite_engine: AsyncEngine,
) -> None:
    engine = sqlite_engine
    row_id = await _one_row(engine)
    before = await _rows(engine)
    statements = [
        # REPLACE of the row's own id: the BEFORE INSERT guard
        f"INSERT OR REPLACE INTO xp_ledger ({COLUMNS}) VALUES {_values(row_id)}",
        # REPLACE through the idempotency key under a new id: its implicit delete fires the
        # delete guard because the bot's connections turn recursive_triggers on
        f"REPLACE INTO xp_ledger ({COLUMNS}) VALUES {_values(None)}",
        # upserts on either unique column: an UPDATE in disguise
        f"INSERT INTO xp_ledger ({COLUMNS}) VALUES {_values(row_id, 'other')} "
        "ON CONFLICT (id) DO UPDATE SET amount = excluded.amount",
        f"INSERT INTO xp_ledger ({COLUMNS}) VALUES {_values(None)} "
        "ON CONFLICT (idempotency_key) DO UPDATE SET amount = excluded.amount",
    ]
    for statement in statements:
        assert "append-only" in await _refused(engine, statement), statement
        assert await _rows(engine) == before, statement


async def test_a_plain_sqlite_connection_cannot_replace_a_ledger_row(
    sqlite_engine: AsyncEngine,
) -> None:
    """Another program (the sqlite3 shell, a script) opens the file without the bot's pragmas;
    the trigger alone still refuses a REPLACE of an existing row."""
    row_id = await _one_row(sqlite_engine)
    before = await _rows(sqlite_engine)
    path = sqlite_path(sqlite_engine.url)
    assert isinstance(path, Path)
    forged = _values(row_id).replace(":at", "'2026-01-01 00:00:00.000000'")
    with contextlib.closing(sqlite3.connect(path)) as plain:
        assert plain.execute("PRAGMA recursive_triggers").fetchone() == (0,)
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            plain.execute(f"INSERT OR REPLACE INTO xp_ledger ({COLUMNS}) VALUES {forged}")
        plain.commit()
    assert await _rows(sqlite_engine) == before


async def test_postgresql_refuses_truncate_of_the_ledger(postgres_engine: AsyncEngine) -> None:
    engine = postgres_engine
    await _one_row(engine)
    before = await _rows(engine)
    for statement in ("TRUNCATE xp_ledger", "TRUNCATE members CASCADE", "TRUNCATE guilds CASCADE"):
        assert "append-only" in await _refused(engine, statement), statement
        assert await _rows(engine) == before, statement
