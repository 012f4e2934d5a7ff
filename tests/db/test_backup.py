"""``bot.db.backup``: a backup taken while awards are being written is consistent and restores
to a database ``verify`` finds clean; restore refuses while anything uses the database and
refuses a damaged backup before touching anything."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import stat
import subprocess
import sys
import threading
import time
from datetime import timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.cli import build_parser
from bot.config import load_settings
from bot.db import migrate, presence
from bot.db.backup import BackupError, backup, restore
from bot.db.engine import make_engine, make_sessionmaker
from bot.db.types import utcnow
from bot.errors import UserError
from bot.invariants import verify
from bot.jobs import heartbeat
from bot.jobs.capabilities import Capabilities
from bot.progress.grants import grant
from tests.support import GUILD_ID, add_member, run_cli

#: the burst writes at least this many awards, and the backup starts after STARTED of them
MIN_AWARDS = 300
STARTED = 50
#: awards the burst writes after the backup is done: the backup must not hold them
AFTER = 10


def _url(path: Path) -> str:
    return f"sqlite+aiosqlite:///{path}"


async def _create(path: Path) -> None:
    """A migrated database with two members (of the one guild)."""
    engine = make_engine(_url(path))
    try:
        await migrate.upgrade(engine)
        async with make_sessionmaker(engine)() as session, session.begin():
            for member_id in (1, 2):
                await add_member(session, member_id)
    finally:
        await engine.dispose()


async def _verify(path: Path) -> list[str]:
    engine = make_engine(_url(path))
    try:
        return [str(problem) for problem in await verify(engine, lease_s=60)]
    finally:
        await engine.dispose()


def _ledger_rows(path: Path) -> int:
    with contextlib.closing(sqlite3.connect(path)) as connection:
        return connection.execute("SELECT COUNT(*) FROM xp_ledger").fetchone()[0]


@pytest.fixture
def live(tmp_path: Path) -> Path:
    path = tmp_path / "live" / "brrrbot.sqlite3"
    path.parent.mkdir()
    asyncio.run(_create(path))
    return path


@pytest.fixture
def saved(live: Path, tmp_path: Path) -> Path:
    """A backup of ``live`` as it is before the test changes it."""
    path = tmp_path / "saved.sqlite3"
    backup(live, path)
    return path


class AwardBurst(threading.Thread):
    """Moderator grants through the real grant code, one transaction each, on the thread's own
    event loop and engine: a writer as independent of the backup as the bot is."""

    def __init__(self, database: Path) -> None:
        super().__init__(name="award-burst")
        self.database = database
        self.started = threading.Event()  # STARTED awards are in
        self.stop = threading.Event()  # the backup is done
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            asyncio.run(self._burst())
        except BaseException as exc:  # reported by the test, which joins
            self.error = exc
            self.started.set()

    async def _burst(self) -> None:
        engine = make_engine(_url(self.database))
        sessions = make_sessionmaker(engine)
        request_id = 0

        async def award() -> None:
            nonlocal request_id
            request_id += 1
            async with sessions() as session, session.begin():
                await grant(
                    session,
                    guild_id=GUILD_ID,
                    member_id=1 + request_id % 2,
                    amount=3,
                    reason="burst",
                    actor_user_id=99,
                    request_id=request_id,
                    tz=ZoneInfo("UTC"),
                    now=utcnow(),
                )

        try:
            while request_id < MIN_AWARDS or not self.stop.is_set():
                await award()
                if request_id == STARTED:
                    self.started.set()
            for _ in range(AFTER):
                await award()
        finally:
            await engine.dispose()


def test_a_backup_taken_during_a_burst_of_awards_is_consistent_and_restores(
    live: Path, tmp_path: Path
) -> None:
    file = tmp_path / "backups" / "during.sqlite3"
    file.parent.mkdir()
    burst = AwardBurst(live)
    burst.start()
    try:
        assert burst.started.wait(timeout=120), "the burst never got going"
        snapshot = backup(live, file)
    finally:
        burst.stop.set()
        burst.join(timeout=300)
    assert burst.error is None, burst.error
    assert not burst.is_alive()
    # taken mid-burst: after the first awards, before the last ones
    assert STARTED <= snapshot.ledger_rows <= _ledger_rows(live) - AFTER
    assert _ledger_rows(live) >= MIN_AWARDS + AFTER
    assert (snapshot.path, snapshot.revision) == (file, migrate.head_revision())
    assert snapshot.size_bytes == file.stat().st_size
    assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert sorted(p.name for p in file.parent.iterdir()) == [file.name]  # no temporary left
    assert _ledger_rows(file) == snapshot.ledger_rows
    assert asyncio.run(_verify(file)) == []  # totals match the ledger: one snapshot

    fresh = tmp_path / "fresh" / "brrrbot.sqlite3"
    fresh.parent.mkdir()
    restored = restore(file, fresh, now=utcnow())
    assert restored.kept is None  # nothing was there to keep
    assert restored.snapshot.ledger_rows == snapshot.ledger_rows == _ledger_rows(fresh)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o600
    assert asyncio.run(_verify(fresh)) == []


def test_backup_refuses_to_overwrite_unless_forced(live: Path, saved: Path) -> None:
    before = saved.read_bytes()
    with pytest.raises(UserError, match="exists; pass --force to replace it") as refused:
        backup(live, saved)
    assert not isinstance(refused.value, BackupError)  # a usage error: exit 2
    assert saved.read_bytes() == before
    asyncio.run(_grant_once(live))
    assert backup(live, saved, force=True).ledger_rows == 1


def test_backup_of_an_unreadable_database_fails_clearly(tmp_path: Path) -> None:
    source = tmp_path / "notes.txt"
    source.write_text("not a database, but long enough to have a header " * 10)
    with pytest.raises(BackupError, match=r"notes\.txt") as failed:
        backup(source, tmp_path / "copy.sqlite3")
    assert failed.value.exit_code == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    with pytest.raises(BackupError, match="there is no database at"):
        backup(tmp_path / "missing.sqlite3", tmp_path / "copy.sqlite3")


async def _grant_once(path: Path) -> None:
    engine = make_engine(_url(path))
    try:
        async with make_sessionmaker(engine)() as session, session.begin():
            await grant(
                session,
                guild_id=GUILD_ID,
                member_id=1,
                amount=5,
                reason="once",
                actor_user_id=99,
                request_id=1,
                tz=ZoneInfo("UTC"),
                now=utcnow(),
            )
    finally:
        await engine.dispose()


def test_restore_is_refused_while_a_worker_beats(live: Path, saved: Path) -> None:
    asyncio.run(_grant_once(live))
    asyncio.run(_beat_worker(live, "gpu-box:1:ab"))
    with pytest.raises(BackupError, match=r"in use by the worker gpu-box:1:ab on .* s ago\)"):
        restore(saved, live, now=utcnow())
    assert _ledger_rows(live) == 1
    # a worker killed without a goodbye stops counting once its beat is stale
    later = utcnow() + timedelta(seconds=presence.RECENT_S + 1)
    restored = restore(saved, live, now=later, keep=False)
    assert restored.kept is None
    assert _ledger_rows(live) == 0
    assert sorted(p.name for p in live.parent.iterdir()) == [live.name]


async def _beat_worker(path: Path, name: str) -> None:
    engine = make_engine(_url(path))
    try:
        await heartbeat.beat(make_sessionmaker(engine), name, Capabilities())
    finally:
        await engine.dispose()


async def test_restore_is_refused_while_the_bot_beats(live: Path, saved: Path) -> None:
    engine = make_engine(_url(live))
    try:
        async with presence.beating(make_sessionmaker(engine)):
            await _wait_for_the_beat(engine)
            with pytest.raises(BackupError, match=rf"in use by the bot \(pid {os.getpid()} on "):
                await asyncio.to_thread(restore, saved, live, now=utcnow())
    finally:
        await engine.dispose()
    # the bot stopped cleanly: its beat is gone and its connections closed
    restored = await asyncio.to_thread(restore, saved, live, now=utcnow())
    assert restored.kept is not None and restored.kept.is_file()


async def _wait_for_the_beat(engine: AsyncEngine) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        async with make_sessionmaker(engine, read_only=True)() as session:
            if await presence.users(session, utcnow()):
                return
        await asyncio.sleep(0.05)
    raise AssertionError("the bot never beat")


def test_restore_is_refused_while_any_process_has_the_database_open(
    live: Path, saved: Path
) -> None:
    with contextlib.closing(sqlite3.connect(live)) as shell:
        shell.execute("SELECT COUNT(*) FROM xp_ledger").fetchone()  # open, idle, no beat
        with pytest.raises(BackupError, match="is open in another process"):
            restore(saved, live, now=utcnow())
    assert restore(saved, live, now=utcnow(), keep=False).kept is None


@pytest.mark.parametrize("damage", ["truncated", "newer schema"])
def test_a_bad_backup_is_refused_before_anything_is_replaced(
    damage: str, live: Path, saved: Path
) -> None:
    if damage == "truncated":
        data = saved.read_bytes()
        saved.write_bytes(data[: len(data) // 3])
        expected = "damaged|not a readable brrrbot database"
    else:
        with contextlib.closing(sqlite3.connect(saved)) as connection, connection:
            connection.execute("UPDATE alembic_version SET version_num = 'ffff'")
        expected = "at revision ffff, which this brrrbot does not know"
    asyncio.run(_grant_once(live))
    listing = sorted(p.name for p in live.parent.iterdir())
    with pytest.raises(BackupError, match=expected):
        restore(saved, live, now=utcnow())
    assert sorted(p.name for p in live.parent.iterdir()) == listing
    assert _ledger_rows(live) == 1


def test_an_older_backup_is_migrated_and_a_dead_bots_log_is_kept(
    live: Path, tmp_path: Path
) -> None:
    old = tmp_path / "old" / "brrrbot.sqlite3"
    old.parent.mkdir()
    asyncio.run(_migrate_to(old, "0005"))
    file = tmp_path / "old.sqlite3"
    assert backup(old, file).revision == "0005"
    asyncio.run(_grant_once(live))
    _die_leaving_a_log(live)
    assert Path(f"{live}-wal").stat().st_size > 0
    now = utcnow()
    restored = restore(file, live, now=now)
    assert (restored.from_revision, restored.snapshot.revision) == ("0005", migrate.head_revision())
    assert asyncio.run(_verify(live)) == []
    assert _ledger_rows(live) == 0
    kept = live.with_name(f"{live.name}.before-restore-{now:%Y%m%dT%H%M%SZ}")
    assert restored.kept == kept
    # the kept database is whole: the dead bot's last write, still in its log, is in it
    with contextlib.closing(sqlite3.connect(kept)) as connection:
        assert connection.execute("SELECT value FROM bot_state WHERE key = 'crash'").fetchone()
        assert connection.execute("SELECT COUNT(*) FROM xp_ledger").fetchone() == (1,)


async def _migrate_to(path: Path, revision: str) -> None:
    engine = make_engine(_url(path))
    try:
        await migrate.upgrade(engine, revision)
    finally:
        await engine.dispose()


def _die_leaving_a_log(path: Path) -> None:
    """A process writes a row and dies without closing: its write stays in the -wal."""
    code = (
        "import os, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "c.execute('PRAGMA wal_autocheckpoint = 0')\n"
        'c.execute("INSERT INTO bot_state (key, value, updated_at) "\n'
        "          \"VALUES ('crash', 'x', '2025-01-01 00:00:00')\")\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=60)


def test_postgresql_gets_the_commands_to_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "postgresql+asyncpg://brrr:hunter2@db.example:5433/brrrbot"
    monkeypatch.setenv("DATABASE_URL", url)
    settings = load_settings(None)
    file = tmp_path / "brrrbot.dump"
    for command, tool in (
        ("backup", f"pg_dump --format=custom --file={file} "),
        ("restore", "pg_restore --clean --if-exists --no-owner --single-transaction "),
    ):
        args = build_parser().parse_args(["db", command, str(file)])
        assert args.handler(args, settings) == 2
        out = capsys.readouterr().out
        assert f"  {tool}" in out
        assert "--host=db.example --port=5433 --username=brrr" in out
        assert "PGPASSWORD or ~/.pgpass" in out
        assert "hunter2" not in out
    assert not file.exists()


def test_the_commands_end_to_end(tmp_path: Path) -> None:
    database = tmp_path / "data" / "brrrbot.sqlite3"
    database.parent.mkdir()
    asyncio.run(_create(database))
    asyncio.run(_grant_once(database))
    written = run_cli("db", "backup", "saved.sqlite3", cwd=tmp_path)
    assert written.returncode == 0, written.stderr
    assert written.stdout.startswith("wrote saved.sqlite3: ")
    assert f"revision {migrate.head_revision()}, 1 XP ledger rows, 0 submissions" in (
        written.stdout
    )
    restored = run_cli("db", "restore", "saved.sqlite3", cwd=tmp_path)
    assert restored.returncode == 0, restored.stderr
    assert "the replaced database is kept as data/brrrbot.sqlite3.before-restore-" in (
        restored.stdout
    )
    verified = run_cli("db", "verify", cwd=tmp_path)
    assert (verified.returncode, verified.stdout) == (0, "database is consistent\n")
