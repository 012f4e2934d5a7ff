"""A real ``brrrbot worker`` process grades queued submissions end to end."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db.engine import make_sessionmaker
from bot.db.models import GradingJob, Guild, Member, Submission
from bot.grading import queue
from tests.support import REPO, SEED_QUESTS

SOLUTIONS = REPO / "tests" / "graders" / "solutions"
TASK = "go-brrrr/matmul-three-ways"


@pytest.fixture
def worker(database_url: str, engine: AsyncEngine, tmp_path: Path) -> Iterator[subprocess.Popen]:
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(REPO),
        "DATABASE_URL": database_url,
        "QUESTS_DIR": str(SEED_QUESTS),
        "DISCORD_TOKEN": "secret-that-learners-must-never-see",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "worker", "--count", "1"],
        cwd=tmp_path,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()


@pytest.fixture
async def member(engine: AsyncEngine) -> AsyncIterator[int]:
    async with make_sessionmaker(engine)() as session, session.begin():
        session.add(Guild(id=1))
        session.add(Member(id=1, guild_id=1, user_id=10))
    yield 1


async def _queue(engine: AsyncEngine, path: Path) -> int:
    data = path.read_bytes()
    async with make_sessionmaker(engine)() as session, session.begin():
        submission = Submission(
            guild_id=1,
            member_id=1,
            task_ref=TASK,
            filename=path.name,
            file_kind=path.suffix.lstrip("."),
            content=data,
            size_bytes=len(data),
            sha256="0" * 64,
        )
        session.add(submission)
        await session.flush()
        await queue.enqueue(session, submission.id)
        return submission.id


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
    assert "secret-that-learners-must-never-see" not in worker.stderr.read()
