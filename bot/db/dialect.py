"""INSERT ... ON CONFLICT for the databases the bot supports (SQLite and PostgreSQL).

Both spell the clause the same way, but SQLAlchemy exposes it per dialect, so the statement is
built from the dialect of the session's connection.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

Insert = sqlite.Insert | postgresql.Insert


def upsert(session: AsyncSession, entity: Any) -> Insert:
    """An insert into ``entity`` that supports ``on_conflict_do_nothing/do_update``."""
    name = session.get_bind().dialect.name
    if name == "sqlite":
        return sqlite.insert(entity)
    if name == "postgresql":
        return postgresql.insert(entity)
    raise NotImplementedError(f"the {name} database is not supported; use SQLite or PostgreSQL")
