"""Two ``brrrbot worker`` processes compete for one queue; every job is graded once.

On PostgreSQL the workers log in as the least-privilege worker role, as a worker on
another host would, and claim with ``FOR UPDATE SKIP LOCKED``; new jobs reach them
through LISTEN/NOTIFY.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db.engine import make_sessionmaker
from bot.db.models import GradingJob, Guild, Member, Submission, WorkerHeartbeat
from bot.db.setup import grant_worker_role
from bot.grading import queue
from tests.postgres_server import PostgresServer
from tests.support import REPO, SEED_QUESTS

SOLUTION = REPO / "tests" / "graders" / "solutions" / "correct.py"
JOBS = 16
GRADED = re.compile(r"job (\d+) go-brrrr/matmul-three-ways passed")


async def _worker_url(request: pytest.FixtureRequest, database_url: str) -> str:
    if not database_url.startswith("postgresql"):
        return database_url
    server: PostgresServer = request.getfixturevalue("postgres_server")
    password = "worker-password-for-tests"
    await grant_worker_role(database_url, "brrrbot_worker", password)
    return server.url(database_url.rsplit("/", 1)[1], "brrrbot_worker", password)


def _start(url: str, cwd: Path) -> subprocess.Popen[str]:
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": str(REPO),
        "DATABASE_URL": url,
        "QUESTS_DIR": str(SEED_QUESTS),
        "WORKER_DEVICE": "cpu",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "bot", "worker", "--count", "1"],
        cwd=cwd,
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )


async def _wait_for(
    engine: AsyncEngine, query: object, want: int, workers: list[subprocess.Popen[str]]
) -> None:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        async with make_sessionmaker(engine)() as session:
            if await session.scalar(query) == want:
                return
        dead = [w for w in workers if w.poll() is not None]
        if dead:
            raise AssertionError(f"a worker exited early:\n{dead[0].communicate()[1]}")
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {want}")


async def test_two_workers_grade_every_job_exactly_once(
    request: pytest.FixtureRequest, database_url: str, engine: AsyncEngine, tmp_path: Path
) -> None:
    url = await _worker_url(request, database_url)
    workers = [_start(url, tmp_path) for _ in range(2)]
    try:
        beating = select(func.count()).select_from(WorkerHeartbeat)
        await _wait_for(engine, beating, 2, workers)  # both idle and listening
        data = SOLUTION.read_bytes()
        async with make_sessionmaker(engine)() as session, session.begin():
            session.add(Guild(id=1))
            for i in range(JOBS):
                session.add(Member(id=i + 1, guild_id=1, user_id=100 + i))
            await session.flush()
            for i in range(JOBS):
                submission = Submission(
                    guild_id=1,
                    member_id=i + 1,
                    task_ref="go-brrrr/matmul-three-ways",
                    filename="correct.py",
                    file_kind="py",
                    content=data,
                    size_bytes=len(data),
                    sha256="0" * 64,
                )
                session.add(submission)
                await session.flush()
                await queue.enqueue(session, submission.id)
        done = select(func.count()).select_from(GradingJob).where(GradingJob.status == "done")
        await _wait_for(engine, done, JOBS, workers)
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGTERM)
        logs = [worker.communicate(timeout=60)[1] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0], logs
    per_worker = [Counter(GRADED.findall(log)) for log in logs]
    graded = per_worker[0] + per_worker[1]
    assert len(graded) == JOBS and set(graded.values()) == {1}, graded  # each once, by one
    assert all(per_worker), "both workers should have taken jobs"
    async with make_sessionmaker(engine)() as session:
        attempts = (await session.execute(select(GradingJob.attempts))).scalars().all()
        statuses = (await session.execute(select(Submission.status))).scalars().all()
        left = await session.scalar(select(func.count()).select_from(WorkerHeartbeat))
    assert set(attempts) == {1} and set(statuses) == {"passed"}
    assert left == 0  # a clean stop removes the heartbeat
