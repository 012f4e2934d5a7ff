"""A real ``brrrbot worker`` process grades queued submissions end to end."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db.engine import make_sessionmaker
from bot.db.models import GradingJob, Submission
from tests.support import SOLUTIONS, add_member, queue_submission, start_worker


@pytest.fixture
def worker(database_url: str, engine: AsyncEngine, tmp_path: Path) -> Iterator[subprocess.Popen]:
    process = start_worker(
        database_url, tmp_path, DISCORD_TOKEN="secret-that-learners-must-never-see"
    )
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()


@pytest.fixture
async def member(engine: AsyncEngine) -> int:
    async with make_sessionmaker(engine)() as session, session.begin():
        return await add_member(session)


async def _queue(engine: AsyncEngine, path: Path) -> int:
    async with make_sessionmaker(engine)() as session, session.begin():
        submission_id, _ = await queue_submission(session, path.read_bytes(), filename=path.name)
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
    assert "secret-that-learners-must-never-see" not in worker.stderr.read()
