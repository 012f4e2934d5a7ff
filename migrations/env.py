"""Alembic environment: runs migrations on a connection handed over by bot.db.migrate."""

from __future__ import annotations

from alembic import context

from bot.db.models import Base

target_metadata = Base.metadata


def run_migrations_online() -> None:
    connection = context.config.attributes.get("connection")
    if connection is None:
        raise RuntimeError("run migrations through `brrrbot db upgrade` (bot.db.migrate)")
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
        # bot.db.engine makes SQLite transactional (explicit BEGIN), so a failed
        # migration rolls back completely there too.
        transactional_ddl=True,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    raise RuntimeError("offline (SQL script) migrations are not supported")
run_migrations_online()
