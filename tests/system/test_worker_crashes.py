"""Workers killed with SIGKILL at random points while 20 jobs are graded: nothing is lost,
nothing is delivered or paid twice; on SQLite and on PostgreSQL (leases, SKIP LOCKED claims)."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

from tests.system.conftest import (
    FINISHED,
    LEASE_SECONDS,
    Backend,
    check_database,
    start_system,
    until,
)

JOBS = 20
KILLS = 3
SEED = 20261129


async def test_killed_workers_lose_nothing_and_pay_once(tmp_path: Path, backend: Backend) -> None:
    rng = random.Random(SEED)  # the kill points are reproducible
    async with start_system(tmp_path, backend) as system:
        await system.start_bot()
        worker = system.start_worker()  # starts warming up while the jobs are queued
        members = [system.learner() for _ in range(JOBS)]
        handles = [await system.submit(member) for member in members]
        for handle in handles:
            assert (await handle.original(15)).content.startswith("Queued")
        ids = [row[0] for row in system.query("SELECT id FROM submissions ORDER BY id")]
        assert len(ids) == JOBS

        kills = 0
        while kills < KILLS:
            await worker.ready()
            claimed = f"%:{worker.pid}:%"
            await until(
                lambda pattern=claimed: system.query(
                    "SELECT 1 FROM grading_jobs WHERE lease_owner LIKE ?", pattern
                ),
                30 + LEASE_SECONDS,
                f"worker {worker.pid} to claim a job",
            )
            await asyncio.sleep(rng.uniform(0.0, 0.4))  # the injected fault: a random point
            await worker.kill()  # also waits until its zygote has gone
            kills += 1
            worker = system.start_worker()

        await worker.ready()
        await until(
            lambda: (
                system.query("SELECT COUNT(*) FROM submissions WHERE delivered_at IS NOT NULL")[0][
                    0
                ]
                == JOBS
            ),
            90,
            "every verdict to be delivered",
        )
        await worker.stop()

        statuses = dict(system.query("SELECT id, status FROM submissions"))
        assert set(statuses.values()) <= set(FINISHED)
        for submission_id in ids:
            sent = system.verdicts_sent(submission_id)
            assert len(sent) == 1, (submission_id, sent)  # the bot never died: no repeats
        taken_over = system.query("SELECT COUNT(*) FROM grading_jobs WHERE attempts > 1")[0][0]
        assert taken_over >= 1  # at least one job really was interrupted and graded again
        check_database(system)
        print(
            f"worker crashes on {system.backend}: {JOBS} jobs, {kills} kills, "
            f"{taken_over} jobs re-graded, statuses {sorted(set(statuses.values()))}"
        )
