"""A real ``brrrbot worker`` process grades queued submissions end to end."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db.engine import make_sessionmaker
from bot.db.models import GradingJob, Submission
from graders.base import Verdict
from tests.support import REPO, SOLUTIONS, add_member, queue_submission, start_worker

MIGRATIONS = REPO / "migrations" / "versions"
TOKEN = "secret-that-learners-must-never-see"  # the worker's DISCORD_TOKEN

# A learner's file that hunts for the worker's token everywhere a process can look, then
# reports through its exception (the verdict keeps no stdout): how many places it tried
# and any DISCORD_TOKEN value it found, so a leak would land in the verdict.
TOKEN_HUNT = b"""
import glob
import os

tried, leaked = [], []


def look(where, read):
    tried.append(where)
    try:
        text = read()
    except Exception:
        return
    for entry in text.split("\\0"):
        if entry.startswith("DISCORD_TOKEN="):
            leaked.append(where + "=" + entry.partition("=")[2])


def environ_file(path):
    with open(path, "rb") as file:
        return file.read().decode("latin-1")


look("os.environ", lambda: "DISCORD_TOKEN=" + os.environ["DISCORD_TOKEN"])
named = ["/proc/self/environ", f"/proc/{os.getppid()}/environ", "/proc/1/environ"]
for path in named + sorted(glob.glob("/proc/[0-9]*/environ")):
    look(path, lambda path=path: environ_file(path))
raise RuntimeError(f"TOKEN-HUNT tried {len(tried)} sources; leaked: {leaked or 'nothing'}")
"""
HUNT_REPORT = re.compile(r"TOKEN-HUNT tried (\d+) sources; leaked: (.*?)\. ")


@pytest.fixture
def worker(database_url: str, engine: AsyncEngine, tmp_path: Path) -> Iterator[subprocess.Popen]:
    process = start_worker(database_url, tmp_path, DISCORD_TOKEN=TOKEN)
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()


@pytest.fixture
async def member(engine: AsyncEngine) -> int:
    async with make_sessionmaker(engine)() as session, session.begin():
        return await add_member(session)


async def _queue(engine: AsyncEngine, path: Path) -> int:
    return await _queue_bytes(engine, path.read_bytes(), path.name)


async def _queue_bytes(engine: AsyncEngine, data: bytes, filename: str) -> int:
    async with make_sessionmaker(engine)() as session, session.begin():
        submission_id, _ = await queue_submission(session, data, filename=filename)
    return submission_id


async def _verdict(engine: AsyncEngine, submission_id: int, timeout: float = 60) -> Submission:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        async with make_sessionmaker(engine)() as session:
            submission = await session.get(Submission, submission_id)
            if submission.status in ("passed", "failed", "error"):
                return submission
        await asyncio.sleep(0.05)
    raise AssertionError(f"no verdict for submission {submission_id} in {timeout} s")


async def test_worker_grades_queued_submissions(
    engine: AsyncEngine, member: int, worker: subprocess.Popen
) -> None:
    cases = {
        "correct.py": "passed",
        "correct_magics.ipynb": "passed",
        "wrong_values.py": "failed",
        "cheat_operator.py": "failed",
    }
    ids = {name: await _queue(engine, SOLUTIONS / name) for name in cases}
    for name, expected in cases.items():
        try:
            submission = await _verdict(engine, ids[name])
        except AssertionError:
            worker.terminate()
            raise AssertionError(worker.communicate(timeout=30)[1][-3000:]) from None
        assert submission.status == expected, (name, submission.verdict)
        assert submission.verdict["status"] == expected
        assert submission.verdict["device"] == "cpu"
        assert submission.verdict["checks"], name
    notebook = await _verdict(engine, ids["correct_magics.ipynb"])
    assert any("magic" in note for note in notebook.verdict["notes"])
    async with make_sessionmaker(engine)() as session:
        jobs = (await session.execute(select(GradingJob))).scalars().all()
    assert {job.status for job in jobs} == {"done"}
    assert {job.attempts for job in jobs} == {1}

    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    assert TOKEN not in worker.stderr.read()


# on SQLite only: where the worker's token could leak to a job does not depend on the database
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
async def test_a_submission_cannot_read_the_workers_discord_token(
    engine: AsyncEngine, member: int, worker: subprocess.Popen
) -> None:
    submission_id = await _queue_bytes(engine, TOKEN_HUNT, "hunt.py")
    try:
        submission = await _verdict(engine, submission_id)
    except AssertionError:
        worker.terminate()
        raise AssertionError(worker.communicate(timeout=30)[1][-3000:]) from None
    (check,) = Verdict.from_json(submission.verdict).checks  # "submission runs" says it
    report = HUNT_REPORT.search(check.message)
    assert report, f"the hunt did not run to its report: {submission.verdict}"
    assert int(report[1]) >= 4, report[0]  # os.environ and the three named /proc files
    assert report[2] == "nothing", report[0]
    async with make_sessionmaker(engine)() as session:
        stored = [
            *(await session.execute(select(Submission.verdict, Submission.status))).all(),
            *(await session.execute(select(GradingJob.error))).all(),
        ]
    assert "TOKEN-HUNT" in json.dumps([tuple(row) for row in stored])
    assert TOKEN not in json.dumps([tuple(row) for row in stored])
    worker.send_signal(signal.SIGTERM)
    assert worker.wait(timeout=30) == 0
    assert TOKEN not in worker.stderr.read()


async def test_a_worker_never_migrates_and_exits_on_an_older_schema(tmp_path: Path) -> None:
    """A worker never migrates (if the schema is not at the newest migration, it exits): one
    started on a database a migration behind exits with the reason, and leaves the schema
    where it found it."""
    from bot.db import migrate
    from bot.db.engine import make_engine

    database = tmp_path / "brrrbot.sqlite3"
    url = f"sqlite+aiosqlite:///{database}"
    revisions = sorted(path.name[:4] for path in MIGRATIONS.glob("[0-9][0-9][0-9][0-9]_*.py"))
    head, behind = revisions[-1], revisions[-2]
    assert migrate.head_revision() == head
    engine = make_engine(url)
    try:
        await migrate.upgrade(engine, behind)
    finally:
        await engine.dispose()

    worker = start_worker(url, tmp_path)
    watchdog = threading.Timer(180, worker.kill)  # a worker that neither exits nor says ready
    watchdog.start()
    lines = []
    try:
        assert worker.stderr is not None
        for line in worker.stderr:  # until it exits, or says it is ready to grade
            lines.append(line)
            assert " ready (" not in line, "the worker started grading:\n" + "".join(lines)
    finally:
        watchdog.cancel()
        if worker.poll() is None:
            worker.kill()
        worker.wait()
    log = "".join(lines)
    assert worker.returncode not in (0, -signal.SIGKILL), log[-3000:]
    assert f"the database schema is at {behind} but this worker needs {head}" in log, log[-3000:]
    with closing(sqlite3.connect(database)) as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(behind,)]


#: ``python -m bot ARGS`` on a host whose sandbox lacks a required layer: the report is read
#: as it is, and the minimum is judged failed (tests/sandbox/test_verdicts.py judges it)
WITHOUT_THE_MINIMUM = """
import sys
from bot.worker import pool
pool.minimum_ok = lambda layers: False
from bot.cli import main
raise SystemExit(main(sys.argv[1:]))
"""


def _until_ready_or_gone(worker: subprocess.Popen[str]) -> tuple[list[str], bool]:
    """A worker's log lines until it says it is ready to grade (True) or exits (False)."""
    assert worker.stderr is not None
    watchdog = threading.Timer(180, worker.kill)  # one that does neither
    watchdog.start()
    lines = []
    try:
        for line in worker.stderr:
            lines.append(line)
            if " ready (" in line:
                return lines, True
        worker.wait()
        return lines, False
    finally:
        watchdog.cancel()


async def test_a_worker_without_the_minimum_refuses_unless_told_it_is_insecure(
    tmp_path: Path,
) -> None:
    """Security's minimum: a worker refuses to grade without it, `brrrbot worker --check`
    exits 1 there, and `--insecure-sandbox` (development only) grades anyway, saying so."""
    from bot.db import migrate
    from bot.db.engine import make_engine

    url = f"sqlite+aiosqlite:///{tmp_path / 'brrrbot.sqlite3'}"
    engine = make_engine(url)
    try:
        await migrate.upgrade(engine)
    finally:
        await engine.dispose()
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(REPO), "DATABASE_URL": url}

    def worker(*args: str) -> subprocess.Popen[str]:
        command = [sys.executable, "-c", WITHOUT_THE_MINIMUM, *args]
        return subprocess.Popen(command, cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)

    check = worker("worker", "--check")
    assert check.wait(timeout=180) == 1, check.stderr.read()[-3000:]  # type: ignore[union-attr]
    for insecure in (False, True):
        started = worker("worker", "--count", "1", *(["--insecure-sandbox"] if insecure else []))
        try:
            lines, ready = _until_ready_or_gone(started)
            log = "".join(lines)[-3000:]
            if not insecure:
                assert not ready, "it started grading without the minimum:\n" + log
                assert started.returncode == 2, log
                assert lines[-1].strip() == (
                    "brrrbot: error: the sandbox's minimum isolation is not available here "
                    "(see `brrrbot worker --check`); refusing to grade. Use --insecure-sandbox "
                    "only on a machine where learner code may do anything."
                )
            else:
                assert ready, "the insecure worker exited:\n" + log
                assert "grading WITHOUT the minimum isolation (--insecure-sandbox)" in log
                started.send_signal(signal.SIGTERM)
                assert started.wait(timeout=60) == 0
        finally:
            if started.poll() is None:
                started.kill()
                started.wait()
