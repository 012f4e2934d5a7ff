"""High-level database lifecycle used by the CLI and at bot start."""

from __future__ import annotations

from bot.db import migrate
from bot.db.engine import make_engine
from bot.db.worker_role import create_worker_role


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


async def grant_worker_role(url: str, name: str, password: str) -> bool:
    """Create or update the least-privilege worker role (see ``bot.db.worker_role``)."""
    engine = make_engine(url)
    try:
        return await create_worker_role(engine, name, password)
    finally:
        await engine.dispose()
