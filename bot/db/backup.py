"""``brrrbot db backup`` and ``brrrbot db restore``: SQLite copies taken live, put back safely.

**Backup** reads the live file with SQLite's online backup API through a read-only
connection.  The copy is one backup step: in WAL mode (``bot.db.engine`` always sets it) a
reader holds one snapshot and never blocks writers, so awards go on while it copies.  A
step-by-step copy would not help them and would hurt: every write by another connection
restarts it from the first page, and under steady awards it might never end.  The copy is
written to a private (0600) temporary file beside FILE, switched to a rollback journal so it
is one self-contained file, checked, and only then given FILE's name.

**Restore** swaps a backup in only when nothing uses the database.  Two checks, because each
sees what the other cannot: the beats (``bot.db.presence``) name who is running (the bot,
each worker), and an exclusive-lock probe catches any process with the file open, beat or
not (a bot of an older version, a ``sqlite3`` shell, a worker between beats).  The backup is
copied beside the database, migrated to head there (the bot would migrate it at start anyway,
and workers refuse an older schema; a failing migration shows now, with the live file
untouched), checked, and renamed over the database.  The old -wal and -shm go first: a stale
log would be replayed into the restored file.

PostgreSQL has ``pg_dump`` and ``pg_restore``; for it both commands print the one to run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from alembic.script import ScriptDirectory
from sqlalchemy import inspect
from sqlalchemy.engine import URL

from bot.db import migrate, presence
from bot.db.engine import SQLITE_BUSY_TIMEOUT_MS, make_engine, make_sessionmaker
from bot.errors import UserError

#: the wal and shared-memory files SQLite keeps beside a database in WAL mode
SIDE_FILES = ("-wal", "-shm")


class BackupError(UserError):
    """The copy could not be made or put in place (disk full, unreadable file, busy)."""

    exit_code = 1


@dataclass(frozen=True)
class Snapshot:
    """What a database file holds, as a backup or restore reports it."""

    path: Path
    size_bytes: int
    revision: str
    ledger_rows: int
    submissions: int


@dataclass(frozen=True)
class Restored:
    snapshot: Snapshot  # the database as it now is (at head)
    from_revision: str  # the backup's own revision
    kept: Path | None  # where the replaced database went, if anywhere


def backup(source: Path, target: Path, *, force: bool = False) -> Snapshot:
    """Copy the live database ``source`` into ``target`` and check the copy."""
    if not source.is_file():
        raise BackupError(f"there is no database at {source}: check DATABASE_URL")
    if target.exists() and not force:
        raise UserError(f"{target} exists; pass --force to replace it")
    if target.exists() and target.resolve() == source.resolve():
        raise UserError(f"{target} is the database itself; choose another file")
    if not target.parent.is_dir():
        raise UserError(f"the directory {target.parent} does not exist")
    with _temporary_beside(target) as temporary:
        _copy(source, temporary, target)
        snapshot = inspect_file(temporary, target)
        _fsync(temporary)
        if force:
            os.replace(temporary, target)
        else:
            try:  # a link, unlike a rename, never replaces a FILE created meanwhile
                os.link(temporary, target)
            except FileExistsError:
                raise UserError(f"{target} exists; pass --force to replace it") from None
        _fsync(target.parent)
    return snapshot


def restore(file: Path, database: Path, *, now: datetime, keep: bool = True) -> Restored:
    """Replace ``database`` with the backup ``file`` once nothing uses the database."""
    if not file.is_file():
        raise UserError(f"there is no backup at {file}")
    if database.exists() and file.resolve() == database.resolve():
        raise UserError(f"{file} is the database itself; choose a backup file")
    if not database.parent.is_dir():
        raise UserError(f"the directory {database.parent} does not exist: check DATABASE_URL")
    backup_revision = inspect_file(file).revision
    if database.exists():
        _refuse_users(database, now)
    with _temporary_beside(database) as temporary:
        _copy(file, temporary, database)
        asyncio.run(_migrate(temporary))
        with contextlib.closing(sqlite3.connect(temporary)) as copy:
            copy.execute("PRAGMA journal_mode = DELETE")  # one self-contained file to rename
        snapshot = inspect_file(temporary, database)
        _fsync(temporary)
        kept = None
        if database.exists():
            _close_log(database)
            if keep:
                stamp = f"{now.astimezone(UTC):%Y%m%dT%H%M%SZ}"
                kept = database.with_name(f"{database.name}.before-restore-{stamp}")
                _keep(database, kept)
        os.replace(temporary, database)
        _fsync(database.parent)
    return Restored(snapshot, backup_revision, kept)


def _copy(source: Path, temporary: Path, target: Path) -> None:
    """One backup step from ``source`` into ``temporary``, which will become ``target``: one
    snapshot, as one self-contained file (see the module's docstring)."""
    with (
        contextlib.closing(_open_read_only(source)) as live,
        contextlib.closing(sqlite3.connect(temporary)) as copy,
    ):
        try:
            live.backup(copy)
            copy.execute("PRAGMA journal_mode = DELETE")
        except sqlite3.Error as exc:
            raise BackupError(f"copying {source} to {target} failed: {exc}") from None


async def _migrate(path: Path) -> None:
    engine = make_engine(f"sqlite+aiosqlite:///{path}")
    try:
        await migrate.upgrade(engine)
    finally:
        await engine.dispose()


def inspect_file(path: Path, name: Path | None = None) -> Snapshot:
    """Check a database file (integrity, a revision this code knows) and count its rows.

    ``name`` is the path to report (the file's final name while it is still a temporary).
    """
    shown = name or path
    try:
        with contextlib.closing(_open_read_only(path)) as connection:
            problems = [row[0] for row in connection.execute("PRAGMA integrity_check")]
            if problems != ["ok"]:
                raise BackupError(f"{shown} is damaged: {'; '.join(problems[:3])}")
            revision = _revision(connection, shown)
            ledger = connection.execute("SELECT COUNT(*) FROM xp_ledger").fetchone()[0]
            submissions = connection.execute("SELECT COUNT(*) FROM submissions").fetchone()[0]
    except sqlite3.Error as exc:
        raise BackupError(f"{shown} is not a readable brrrbot database: {exc}") from None
    return Snapshot(shown, path.stat().st_size, revision, ledger, submissions)


def _revision(connection: sqlite3.Connection, shown: Path) -> str:
    """The file's migration, which must be one this code has (head or older)."""
    try:
        row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.OperationalError:
        row = None
    if row is None:
        raise BackupError(f"{shown} has no schema revision: is it a brrrbot database?")
    known = {
        s.revision for s in ScriptDirectory.from_config(migrate.alembic_config()).walk_revisions()
    }
    if row[0] not in known:
        raise BackupError(
            f"{shown} is at revision {row[0]}, which this brrrbot does not know (its newest is "
            f"{migrate.head_revision()}): restore it with the brrrbot that wrote it"
        )
    return str(row[0])


def _open_read_only(path: Path) -> sqlite3.Connection:
    """A connection that can neither create nor change ``path`` (WAL is honoured)."""
    uri = f"{path.resolve().as_uri()}?mode=ro"
    try:
        return sqlite3.connect(uri, uri=True, timeout=SQLITE_BUSY_TIMEOUT_MS / 1000)
    except sqlite3.Error as exc:
        raise BackupError(f"cannot read {path}: {exc}") from None


@contextlib.contextmanager
def _temporary_beside(path: Path) -> Iterator[Path]:
    """A new private (0600) file in ``path``'s directory, removed unless renamed away."""
    try:
        descriptor, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise BackupError(f"cannot write in {path.parent}: {exc.strerror}") from None
    os.close(descriptor)
    temporary = Path(name)
    try:
        yield temporary
    except OSError as exc:
        raise BackupError(f"writing {path} failed: {exc.strerror or exc}") from None
    finally:
        for leftover in (temporary, *(Path(f"{temporary}{s}") for s in (*SIDE_FILES, "-journal"))):
            leftover.unlink(missing_ok=True)


def _refuse_users(database: Path, now: datetime) -> None:
    """Refuse, naming them, while the bot or a worker beats; then probe for any open handle."""
    found = asyncio.run(_users_of(database, now))
    if found:
        who = ", ".join(user.describe(now) for user in found)
        raise BackupError(
            f"{database} is in use by {who}: stop them, wait {presence.RECENT_S:.0f} s, "
            "and restore again"
        )
    with contextlib.closing(_exclusive(database)):
        pass


async def _users_of(database: Path, now: datetime) -> list[presence.User]:
    engine = make_engine(f"sqlite+aiosqlite:///{database}")
    try:
        async with engine.connect() as connection:
            tables = await connection.run_sync(lambda c: set(inspect(c).get_table_names()))
        if not {"bot_state", "worker_heartbeats"} <= tables:  # an older schema: no beats
            return []
        async with make_sessionmaker(engine, read_only=True)() as session:
            return await presence.users(session, now)
    finally:
        await engine.dispose()  # our own connections would fail the lock probe


def _exclusive(database: Path) -> sqlite3.Connection:
    """A connection holding the database's exclusive lock, which no other open connection
    allows in WAL mode (each holds a shared lock while it is open, even idle)."""
    connection = sqlite3.connect(database, timeout=0, isolation_level=None)
    try:
        connection.execute("PRAGMA locking_mode = EXCLUSIVE")
        connection.execute("BEGIN EXCLUSIVE")
        connection.execute("ROLLBACK")
    except sqlite3.OperationalError as exc:
        connection.close()
        raise BackupError(
            f"{database} is open in another process ({exc}): stop the bot, its workers and "
            "any sqlite3 shell on it, then restore again"
        ) from None
    return connection


def _close_log(database: Path) -> None:
    """Fold the write-ahead log into the file and remove it and the shared memory, so the
    kept copy is complete and no stale log is replayed into the restored file."""
    with contextlib.closing(_exclusive(database)) as connection:
        busy, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
    wal = Path(f"{database}-wal")
    if busy or (wal.exists() and wal.stat().st_size > 0):
        raise BackupError(f"{wal} could not be emptied; is a process still using {database}?")
    for suffix in SIDE_FILES:
        Path(f"{database}{suffix}").unlink(missing_ok=True)


def _keep(database: Path, kept: Path) -> None:
    """``kept`` becomes a second name of the old file (a copy where links are not had)."""
    try:
        os.link(database, kept)
    except FileExistsError:
        raise BackupError(f"{kept} exists; move it away and restore again") from None
    except OSError:
        shutil.copy2(database, kept)


def _fsync(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def postgres_backup_command(url: URL, file: Path) -> str:
    return f"pg_dump --format=custom --file={shlex.quote(str(file))} {_pg_target(url)}"


def postgres_restore_command(url: URL, file: Path) -> str:
    return (
        "pg_restore --clean --if-exists --no-owner --single-transaction "
        f"{_pg_target(url, flag='--dbname=')} {shlex.quote(str(file))}"
    )


def _pg_target(url: URL, flag: str = "") -> str:
    """Connection options for a libpq tool; never the password (PGPASSWORD or ~/.pgpass)."""
    options = [
        f"--host={url.host}" if url.host else "",
        f"--port={url.port}" if url.port else "",
        f"--username={url.username}" if url.username else "",
        f"{flag}{url.database or ''}",
    ]
    return " ".join(shlex.quote(option) for option in options if option)
