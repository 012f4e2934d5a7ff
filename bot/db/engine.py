"""Engine construction: one place that knows how to open each supported database."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine

from bot.errors import DatabaseError

SQLITE_BUSY_TIMEOUT_MS = 15_000
#: how long a new PostgreSQL connection may take (asyncpg's default is 60 s): a server that
#: does not answer at all (a host gone, packets dropped) is an outage after this, reported and
#: retried like a refused connect, instead of holding a member's command or a verdict a minute
CONNECT_TIMEOUT_S = 5.0
READ_ONLY_OPTION = "brrrbot_read_only"
BEGIN_WRITE = "BEGIN IMMEDIATE"
BEGIN_READ = "BEGIN DEFERRED"
#: the SQLite file and the directory we create for it: the owner's only
PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700


def parse_url(url: str) -> URL:
    try:
        return make_url(url)
    except ArgumentError as exc:
        raise DatabaseError(f"DATABASE_URL {url!r} cannot be parsed: {exc}") from None


def sqlite_path(url: URL) -> Path | None:
    """The file behind an SQLite URL, or None for memory databases and other backends."""
    if url.get_backend_name() != "sqlite" or url.database in (None, "", ":memory:"):
        return None
    return Path(url.database)


def ensure_data_dir(url: URL) -> None:
    """Create the SQLite file's directory (0700) and the file itself (0600), failing with one
    line if we cannot write there.

    The file holds every submission and the moderators' audit log; a grading job in the
    degraded ``bare`` sandbox could read a world-readable one.  Creating it here, before
    SQLite opens it, decides its mode; SQLite gives its -wal and -shm files the database
    file's mode.  An existing directory or file keeps the mode its owner chose.
    """
    path = sqlite_path(url)
    if path is None:
        return
    directory = path.parent.resolve()
    blocker = next((p for p in (directory, *directory.parents) if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise DatabaseError(
            f"DATABASE_URL: cannot create the data directory {directory}: {blocker} is a file, "
            "not a directory; choose another path"
        )
    try:
        directory.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    except OSError as exc:
        raise DatabaseError(
            f"DATABASE_URL: cannot create the data directory {directory}: {exc.strerror}; "
            "choose a writable location"
        ) from None
    if not os.access(directory, os.W_OK | os.X_OK) or (
        path.exists() and not os.access(path, os.R_OK | os.W_OK)
    ):
        raise DatabaseError(
            f"DATABASE_URL: {path} is not writable; fix its permissions or choose another path"
        )
    _create_private(path)


def _create_private(path: Path) -> None:
    """Create an empty file readable by its owner only, unless it exists (SQLite takes an
    empty file for an empty database)."""
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE)
    except FileExistsError:
        return
    except OSError as exc:
        raise DatabaseError(
            f"DATABASE_URL: cannot create {path}: {exc.strerror}; choose a writable location"
        ) from None
    os.close(descriptor)


def make_engine(url: str, **kwargs: Any) -> AsyncEngine:
    """An async engine; SQLite gets WAL, foreign keys and transactional DDL.

    On a server backend each pooled connection is pinged when it is checked out
    (``pool_pre_ping``): after the server restarted, every pooled connection is dead, and
    without the ping the first statement of each would fail (a worker's verdict write among
    them) instead of the pool quietly opening a new one.  SQLite's connections are a local
    file's and never die that way.  A new PostgreSQL connection gives up after
    ``CONNECT_TIMEOUT_S``.
    """
    parsed = parse_url(url)
    ensure_data_dir(parsed)
    if parsed.get_backend_name() != "sqlite":
        kwargs.setdefault("pool_pre_ping", True)
    if parsed.get_driver_name() == "asyncpg":
        kwargs.setdefault("connect_args", {}).setdefault("timeout", CONNECT_TIMEOUT_S)
    try:
        engine = create_async_engine(parsed, **kwargs)
    except ImportError as exc:
        raise DatabaseError(
            f"DATABASE_URL needs the {exc.name} driver, which is not installed; "
            "install it with: pip install 'brrrbot[postgres]'"
        ) from None
    if parsed.get_backend_name() == "sqlite":
        _configure_sqlite(engine)
    return engine


def _configure_sqlite(engine: AsyncEngine) -> None:
    """Make pysqlite transactional and safe for several processes, and deletions real.

    pysqlite's own transaction handling skips BEGIN before DDL, so a failed
    migration would leave half a schema; we turn it off and emit BEGIN
    IMMEDIATE ourselves, which also takes the write lock up front so two
    writers wait for each other (busy_timeout) instead of deadlocking on a
    lock upgrade.  Sessions made with ``read_only=True`` begin DEFERRED: in
    WAL mode they read a snapshot without waiting for, or blocking, writers.
    ``secure_delete`` zeroes what a DELETE or an UPDATE frees instead of leaving it in free
    space: a member's deleted code must not stay readable in the file (``checkpoint_wal``
    then clears the old page images from the WAL).
    """

    @event.listens_for(engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS:d}")
        cursor.execute("PRAGMA foreign_keys = ON")
        # a REPLACE's implicit delete then fires the ledger's delete guard, as a DELETE does
        cursor.execute("PRAGMA recursive_triggers = ON")
        cursor.execute("PRAGMA secure_delete = ON")
        cursor.execute("PRAGMA journal_mode = WAL")
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection: Any) -> None:
        read_only = connection.get_execution_options().get(READ_ONLY_OPTION, False)
        connection.exec_driver_sql(BEGIN_READ if read_only else BEGIN_WRITE)


def make_sessionmaker(engine: AsyncEngine, *, read_only: bool = False) -> async_sessionmaker[Any]:
    """Sessions for writing (the default) or for reading only (no write lock on SQLite)."""
    bind = engine.execution_options(**{READ_ONLY_OPTION: True}) if read_only else engine
    return async_sessionmaker(bind, expire_on_commit=False)


async def checkpoint_wal(engine: AsyncEngine) -> bool | None:
    """Copy SQLite's write-ahead log into the database file and truncate it to zero bytes.

    The log keeps the page images of every recent transaction, deleted rows included, until a
    checkpoint overwrites them.  True when the log is now empty; False when a reader still held
    an older snapshot after the busy timeout (the old pages then stay in the log until SQLite
    writes over them); None on other backends.  Runs on the driver connection outside any
    transaction: our BEGIN would hold the very snapshot the checkpoint waits for.
    """
    if engine.dialect.name != "sqlite":
        return None
    async with engine.connect() as connection:
        driver: Any = (await connection.get_raw_connection()).driver_connection
        async with driver.execute("PRAGMA wal_checkpoint(TRUNCATE)") as cursor:
            busy, _, _ = await cursor.fetchone()
    return busy == 0
