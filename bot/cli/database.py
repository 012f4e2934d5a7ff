"""``brrrbot db``: migrations, invariants, the worker role, backup and restore."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from bot.config import DEFAULT_DATABASE_URL, Settings
from bot.errors import UserError

if TYPE_CHECKING:
    from sqlalchemy.engine import URL


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    db = commands.add_parser("db", help="database migrations")
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="ACTION")
    upgrade = db_commands.add_parser(
        "upgrade",
        help="apply pending migrations",
        description="Create the database if needed and migrate it to the newest schema. "
        "The directory of a SQLite DATABASE_URL must exist unless --create-dir is given "
        "(the default ./data is created).",
    )
    upgrade.add_argument(
        "--create-dir",
        action="store_true",
        help="create the directory of DATABASE_URL's SQLite file when it is missing",
    )
    upgrade.set_defaults(handler=_cmd_db_upgrade)
    current = db_commands.add_parser(
        "current",
        help="show the applied migration",
        description="Print the applied revision and whether it is the newest.",
    )
    current.set_defaults(handler=_cmd_db_current)
    verify = db_commands.add_parser(
        "verify",
        help="check the database's invariants",
        description="Check that the schema is at head, every stored XP total equals its "
        "ledger sum, no task was paid twice and no job waits on the lease of a worker that "
        "is gone. Exit 0 when consistent, 1 with one line per problem.",
    )
    verify.set_defaults(handler=_cmd_db_verify)
    backfill = db_commands.add_parser(
        "backfill-fingerprints",
        help="fingerprint passes settled before near-copy checks, for /admin similar",
        description="Fingerprint every passing submission that has no fingerprints yet (those "
        "settled before migration 0013) and flag its near-copies, as settling it would have. "
        "Safe to run while the bot runs, and again: each pass is done once. Exit 0.",
    )
    backfill.set_defaults(handler=_cmd_db_backfill_fingerprints)
    role = db_commands.add_parser(
        "worker-role",
        help="create a least-privilege PostgreSQL role for remote workers",
        description="Run with an owner's DATABASE_URL. Creates (or updates) a LOGIN role that "
        "can only claim jobs, heartbeat, read the submission being graded and write its "
        "verdict. The password is read from the environment variable named by --password-env.",
    )
    role.add_argument("name", help="the role name, e.g. brrrbot_worker")
    role.add_argument(
        "--password-env",
        default="WORKER_DB_PASSWORD",
        metavar="VAR",
        help="environment variable holding the role's password (default: WORKER_DB_PASSWORD)",
    )
    role.set_defaults(handler=_cmd_db_worker_role)
    backup = db_commands.add_parser(
        "backup",
        help="copy the live SQLite database into FILE",
        description="Take a consistent snapshot of the SQLite database while the bot and "
        "workers go on writing, check it and print what it holds. On PostgreSQL, print the "
        "pg_dump command to run instead (exit 2). Exit 0 written, 1 failed, 2 bad input.",
    )
    backup.add_argument("file", type=Path, metavar="FILE", help="the backup to write (0600)")
    backup.add_argument("--force", action="store_true", help="replace FILE if it exists")
    backup.set_defaults(handler=_cmd_db_backup)
    restore = db_commands.add_parser(
        "restore",
        help="replace the SQLite database with a backup",
        description="Check FILE, migrate a copy of it to the newest schema and put it in the "
        "database's place. Refuses while the bot or a worker uses the database. The replaced "
        "database is kept as DATABASE.before-restore-TIMESTAMP unless --no-keep is given. On "
        "PostgreSQL, print the pg_restore command to run instead (exit 2).",
    )
    restore.add_argument(
        "file", type=Path, metavar="FILE", help="a file written by brrrbot db backup"
    )
    restore.add_argument("--no-keep", action="store_true", help="do not keep the replaced database")
    restore.set_defaults(handler=_cmd_db_restore)


def _cmd_db_upgrade(args: argparse.Namespace, settings: Settings) -> int:
    from bot.db.engine import parse_url, sqlite_path
    from bot.db.lifecycle import upgrade_database

    # A mistyped DATABASE_URL must not migrate a new, empty database beside the real one;
    # the default's own ./data directory is ours to create.
    path = sqlite_path(parse_url(settings.database_url.get_secret_value()))
    chosen = settings.database_url.get_secret_value() != DEFAULT_DATABASE_URL
    if path is not None and chosen and not args.create_dir and not path.parent.is_dir():
        raise UserError(
            f"DATABASE_URL: the directory {path.parent} does not exist; check the path, or "
            "pass --create-dir to create it"
        )
    revision = asyncio.run(upgrade_database(settings.database_url.get_secret_value()))
    print(f"database is at revision {revision} (head)")
    return 0


def _cmd_db_worker_role(args: argparse.Namespace, settings: Settings) -> int:
    from bot.db.lifecycle import grant_worker_role

    password = os.environ.get(args.password_env, "")
    if not password:
        raise UserError(
            f"{args.password_env} is not set: export the worker's password in it "
            "(at least 12 characters), then run this again"
        )
    created = asyncio.run(
        grant_worker_role(settings.database_url.get_secret_value(), args.name, password)
    )
    print(
        f"{'created' if created else 'updated'} role {args.name}; on worker hosts set "
        f"DATABASE_URL=postgresql+asyncpg://{args.name}:<password>@<host>/<database>"
    )
    return 0


def _cmd_db_current(args: argparse.Namespace, settings: Settings) -> int:
    from bot.db.lifecycle import describe_revision

    print(asyncio.run(describe_revision(settings.database_url.get_secret_value())))
    return 0


def _cmd_db_backup(args: argparse.Namespace, settings: Settings) -> int:
    from bot.db.backup import backup, postgres_backup_command

    database = _sqlite_database(settings, postgres_backup_command, args.file)
    if database is None:
        return 2
    snapshot = backup(database, args.file, force=args.force)
    print(
        f"wrote {snapshot.path}: {_size(snapshot.size_bytes)}, revision {snapshot.revision}, "
        f"{snapshot.ledger_rows} XP ledger rows, {snapshot.submissions} submissions"
    )
    return 0


def _cmd_db_restore(args: argparse.Namespace, settings: Settings) -> int:
    from bot.db.backup import postgres_restore_command, restore
    from bot.db.types import utcnow

    database = _sqlite_database(settings, postgres_restore_command, args.file)
    if database is None:
        return 2
    restored = restore(args.file, database, now=utcnow(), keep=not args.no_keep)
    snapshot = restored.snapshot
    migrated = (
        f" (migrated from {restored.from_revision})"
        if restored.from_revision != snapshot.revision
        else ""
    )
    print(
        f"restored {args.file} into {database}: revision {snapshot.revision}{migrated}, "
        f"{snapshot.ledger_rows} XP ledger rows, {snapshot.submissions} submissions"
    )
    if restored.kept is not None:
        print(f"the replaced database is kept as {restored.kept}")
    return 0


def _sqlite_database(
    settings: Settings, postgres_command: Callable[[URL, Path], str], file: Path
) -> Path | None:
    """DATABASE_URL's SQLite file; None after printing the command to run for PostgreSQL."""
    from bot.db.engine import parse_url, sqlite_path

    url = parse_url(settings.database_url.get_secret_value())
    if url.get_backend_name() == "postgresql":
        print(
            "brrrbot does not copy a PostgreSQL database itself; with the bot and workers "
            "stopped for a restore, run:\n"
            f"  {postgres_command(url, file)}\n"
            "giving the password in PGPASSWORD or ~/.pgpass, never on the command line"
        )
        return None
    path = sqlite_path(url)
    if path is None:
        raise UserError(f"DATABASE_URL {url.render_as_string()} has no file to copy")
    return path


def _size(size_bytes: int) -> str:
    if size_bytes < 1024 * 1024:
        return f"{size_bytes / 1024:.1f} KiB"
    return f"{size_bytes / 1024 / 1024:.1f} MiB"


def _cmd_db_verify(args: argparse.Namespace, settings: Settings) -> int:
    from bot.invariants import verify_database

    problems = asyncio.run(
        verify_database(settings.database_url.get_secret_value(), settings.lease_seconds)
    )
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s) in the database", file=sys.stderr)
        return 1
    print("database is consistent")
    return 0


def _cmd_db_backfill_fingerprints(args: argparse.Namespace, settings: Settings) -> int:
    from bot.similarity.backfill import backfill_database

    done = asyncio.run(backfill_database(settings.database_url.get_secret_value()))
    print(
        f"fingerprinted {done.fingerprinted} of {done.examined} passes without fingerprints "
        f"({done.short} too short to compare, {done.no_spec} without a job spec to read the "
        f"task's functions from); {done.flagged} near-copy pairs flagged"
    )
    return 0
