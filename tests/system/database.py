"""Plain synchronous reads of the bot's database, the same on SQLite and on PostgreSQL.

System tests poll the database from synchronous checks (``until(lambda: system.query(...))``)
while their event loop drives the fake Discord, so the reader is synchronous on both
backends: SQLite through ``sqlite3``, PostgreSQL through one asyncpg connection living on a
thread of its own.  Rows come back in SQLite's shapes on both, so an assertion written
against one backend holds on the other: ``?`` placeholders, tuples, timestamps as the
naive-UTC text SQLite stores (``2026-01-05 09:00:00.000000``), booleans as 0/1, integral sums
as ``int``.  Every statement commits on its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from collections.abc import Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import asyncpg

from bot.db.engine import parse_url, sqlite_path

#: how SQLAlchemy stores a timestamp in SQLite, which PostgreSQL's values are turned into
SQLITE_TIMESTAMP = "%Y-%m-%d %H:%M:%S.%f"
#: a query that takes longer than this is a hung test, not a slow one
QUERY_TIMEOUT_S = 30


class SystemDatabase:
    """Reads (and, rarely, writes) for assertions; ``url`` is the bot's ``DATABASE_URL``."""

    def __init__(self, url: str) -> None:
        self.url = url
        parsed = parse_url(url)
        self.backend = parsed.get_backend_name()
        self._sqlite = sqlite_path(parsed)
        self._postgres: _PostgresConnection | None = None
        if self.backend == "postgresql":
            dsn = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
            self._postgres = _PostgresConnection(dsn)
        elif self._sqlite is None:
            raise ValueError(f"not a database a system test can look into: {url}")

    @property
    def sqlite_file(self) -> Path:
        """The SQLite file (for tests that need SQLite itself, e.g. to hold its lock)."""
        if self._sqlite is None:
            raise AssertionError(f"the system runs on {self.backend}, not on an SQLite file")
        return self._sqlite

    def query(self, sql: str, *args: object) -> list[tuple]:
        """Run one statement with ``?`` placeholders; its rows as tuples, in SQLite's shapes."""
        if self._postgres is not None:
            return self._postgres.fetch(numbered_placeholders(sql), args)
        with contextlib.closing(
            sqlite3.connect(self.sqlite_file, timeout=QUERY_TIMEOUT_S, isolation_level=None)
        ) as db:
            return db.execute(sql, args).fetchall()

    def close(self) -> None:
        if self._postgres is not None:
            self._postgres.close()


def numbered_placeholders(sql: str) -> str:
    """``?`` to PostgreSQL's ``$1, $2, …``, leaving quoted text and identifiers alone."""
    out: list[str] = []
    quote: str | None = None
    count = 0
    for char in sql:
        if quote is not None:
            quote = None if char == quote else quote  # a doubled quote reopens at once: fine
        elif char in "'\"":
            quote = char
        elif char == "?":
            count += 1
            out.append(f"${count}")
            continue
        out.append(char)
    return "".join(out)


def sqlite_shaped(value: object) -> object:
    """One PostgreSQL value as SQLite returns the same column."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC)
        return value.strftime(SQLITE_TIMESTAMP)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


class _PostgresConnection:
    """One asyncpg connection on a private event loop: the test's loop only waits for it."""

    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="system-database", daemon=True
        )
        self._thread.start()
        self._connection: asyncpg.Connection | None = None

    def fetch(self, sql: str, args: Sequence[object]) -> list[tuple]:
        running = asyncio.run_coroutine_threadsafe(self._fetch(sql, args), self._loop)
        return running.result(QUERY_TIMEOUT_S)

    async def _fetch(self, sql: str, args: Sequence[object]) -> list[tuple]:
        if self._connection is None or self._connection.is_closed():
            self._connection = await asyncpg.connect(self._dsn, timeout=QUERY_TIMEOUT_S)
        rows = await self._connection.fetch(sql, *args)
        return [tuple(sqlite_shaped(value) for value in row) for row in rows]

    async def _close(self) -> None:
        if self._connection is not None:
            await self._connection.close(timeout=10)

    def close(self) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self._close(), self._loop).result(QUERY_TIMEOUT_S)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(QUERY_TIMEOUT_S)
            self._loop.close()
