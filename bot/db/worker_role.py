"""A least-privilege PostgreSQL role for grading workers on other hosts.

A worker needs the queue and the submission it grades, nothing else: not the
ledger, not members, not the bot's settings.  So the role may read and update
``grading_jobs``, keep its row in ``worker_heartbeats``, read a submission's file and
write its verdict columns, and read ``alembic_version`` to check the schema.  If a
worker host is compromised, that is what the attacker gets.

Identifiers and the password are quoted by the server (``format`` with ``%I`` and
``%L``); nothing here is spliced into SQL on the client.
"""

from __future__ import annotations

import re

from sqlalchemy import func, literal, select, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.db.migrate import require_current
from bot.errors import UserError

ROLE_NAME = re.compile(r"[a-z_][a-z0-9_]{0,62}")

CREATE_ROLE = "CREATE ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD %L"
ALTER_ROLE = "ALTER ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD %L"
#: ``%I`` is replaced by the quoted role name
GRANTS: tuple[str, ...] = (
    "GRANT USAGE ON SCHEMA public TO %I",
    "GRANT SELECT, UPDATE ON grading_jobs TO %I",
    "GRANT SELECT, INSERT, UPDATE, DELETE ON worker_heartbeats TO %I",
    "GRANT SELECT (id, task_ref, status) ON submissions TO %I",
    "GRANT UPDATE (status, score, verdict, finished_at) ON submissions TO %I",
    "GRANT SELECT ON alembic_version TO %I",
)


def check_name(name: str) -> str:
    if not ROLE_NAME.fullmatch(name):
        raise UserError(
            f"role name {name!r} is not allowed: use lowercase letters, digits and _, "
            "starting with a letter, e.g. brrrbot_worker"
        )
    return name


async def create_worker_role(engine: AsyncEngine, name: str, password: str) -> bool:
    """Create (or update the password of) ``name`` and grant it the worker's privileges.

    Returns True when the role was created, False when it existed.  Granting again is
    harmless, so the command can be rerun after a migration adds a job table.
    """
    if engine.dialect.name != "postgresql":
        raise UserError(
            "worker roles need PostgreSQL; with SQLite, workers run on the bot's host and "
            "share the database file"
        )
    check_name(name)
    if len(password) < 12:
        raise UserError("the worker's password must be at least 12 characters long")
    await require_current(engine)
    async with engine.begin() as connection:
        exists = await connection.scalar(
            text("SELECT 1 FROM pg_roles WHERE rolname = :name"), {"name": name}
        )
        await _run_formatted(connection, ALTER_ROLE if exists else CREATE_ROLE, name, password)
        database = await connection.scalar(text("SELECT current_database()"))
        await _run_formatted(connection, "GRANT CONNECT ON DATABASE %I TO %I", database, name)
        for grant in GRANTS:
            await _run_formatted(connection, grant, name)
    return not exists


async def _run_formatted(connection: AsyncConnection, template: str, *values: object) -> None:
    """Let the server quote ``values`` into ``template``, then run the result."""
    statement = await connection.scalar(
        select(func.format(literal(template), *(literal(str(v)) for v in values)))
    )
    await connection.exec_driver_sql(statement)
