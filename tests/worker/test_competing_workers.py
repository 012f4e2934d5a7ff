"""Two ``brrrbot worker`` processes compete for one queue; every job is graded once.

On PostgreSQL the workers log in as the least-privilege worker role, as a worker on
another host would.  That their claims skip each other's locked rows and that a NOTIFY
wakes them is shown in test_queue.py and test_wakeup.py; here only the outcome counts.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db.engine import make_sessionmaker
from bot.db.lifecycle import grant_worker_role
from bot.db.models import GradingJob, Submission, WorkerHeartbeat
from tests.postgres_server import PostgresServer
from tests.support import SOLUTIONS, add_member, queue_submission, start_worker

SOLUTION = SOLUTIONS / "correct.py"
JOBS = 16
GRADED = re.compile(r"job (\d+) go-brrrr/matmul-three-ways passed")


async def _worker_url(request: pytest.FixtureRequest, database_url: str) -> str:
    if not database_url.startswith("postgresql"):
        return database_url
    server: PostgresServer = request.getfixturevalue("postgres_server")
    password = "worker-password-for-tests"
    await grant_worker_role(database_url, "brrrbot_worker", password)
    return server.url(database_url.rsplit("/", 1)[1], "brrrbot_worker", password)


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
    workers = [start_worker(url, tmp_path, WORKER_DEVICE="cpu") for _ in range(2)]
    try:
        beating = select(func.count()).select_from(WorkerHeartbeat)
        await _wait_for(engine, beating, 2, workers)  # both idle and listening
        data = SOLUTION.read_bytes()
        async with make_sessionmaker(engine)() as session, session.begin():
            for member_id in range(1, JOBS + 1):
                await add_member(session, member_id)
                await queue_submission(session, data, filename=SOLUTION.name, member_id=member_id)
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
