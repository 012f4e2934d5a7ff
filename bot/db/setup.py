"""High-level database lifecycle used by the CLI and at bot start."""

from __future__ import annotations

from bot.db import migrate
from bot.db.engine import make_engine


async def upgrade_database(url: str) -> str:
    """Create (for SQLite) and migrate the database to head; return the revision."""
    engine = make_engine(url)
    try:
        await migrate.upgrade(engine)
        revision = await migrate.current(engine)
    finally:
        await engine.dispose()
    assert revision is not None
    return revision


async def describe_revision(url: str) -> str:
    """One line: the applied revision and whether migrations are pending."""
    engine = make_engine(url)
    try:
        revision = await migrate.current(engine)
    finally:
        await engine.dispose()
    head = migrate.head_revision()
    if revision is None:
        return f"no schema yet (head is {head}); run `brrrbot db upgrade`"
    if revision == head:
        return f"{revision} (head)"
    return f"{revision} (head is {head}; run `brrrbot db upgrade`)"
