"""A verdict written late, after a database outage: kept unless the job was re-claimed, written
once however often it is retried, and not re-claimed from under a worker that just came back."""

from __future__ import annotations

import time
from datetime import timedelta

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.db.engine import make_sessionmaker
from bot.db.models import GradingJob, Submission
from bot.db.types import utcnow
from bot.jobs import queue
from bot.worker import job_loop
from bot.worker.job_loop import Worker
from graders.base import Check, Verdict
from tests.support import BUILD_TASK, add_member, queue_submission

PASSED = Verdict(BUILD_TASK, "passed", 1.0, (Check("values", True, "match"),), "ok")


async def _claimed_and_expired(engine: AsyncEngine) -> queue.ClaimedJob:
    """A job claimed by worker "a" whose lease then expired, as every lease does in a long
    outage."""
    sessions = make_sessionmaker(engine)
    async with sessions() as session, session.begin():
        await add_member(session)
        await queue_submission(session)
    job = await queue.claim(sessions, "a")
    assert job is not None
    async with sessions() as session, session.begin():
        await session.execute(
            update(GradingJob)
            .where(GradingJob.id == job.job_id)
            .values(lease_expires_at=utcnow() - timedelta(seconds=60))
        )
    return job


async def test_a_late_verdict_is_kept_and_a_retried_write_is_written_once(
    engine: AsyncEngine,
) -> None:
    sessions = make_sessionmaker(engine)
    job = await _claimed_and_expired(engine)
    assert await queue.complete(sessions, job, PASSED)  # late, but nobody took it over
    async with sessions() as session:
        finished_at = await session.scalar(
            select(Submission.finished_at).where(Submission.id == job.submission_id)
        )
    # the write committed but its answer was lost: the retry is told it is recorded ...
    assert await queue.complete(sessions, job, PASSED)
    async with sessions() as session:
        stored = await session.get(Submission, job.submission_id)
        recorded = await session.get(GradingJob, job.job_id)
    assert Verdict.from_json(stored.verdict) == PASSED
    assert stored.finished_at == finished_at  # ... and nothing was written again
    assert recorded.status == "done" and recorded.attempts == 1
    other = Verdict(BUILD_TASK, "failed", 0.0, (Check("values", False, "no"),), "no")
    assert not await queue.complete(sessions, job, other)  # a different verdict is not it


async def test_a_late_verdict_loses_to_a_reclaim(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    job = await _claimed_and_expired(engine)
    taken = await queue.claim(sessions, "b")
    assert taken is not None and taken.job_id == job.job_id and taken.attempt == 2
    assert not await queue.complete(sessions, job, PASSED)
    assert await queue.complete(sessions, taken, PASSED)


class _NoSandbox:
    """Grading must not be reached in these tests."""

    def __getattr__(self, name: str) -> object:
        raise AssertionError(f"the sandbox was used ({name})")


async def test_a_worker_back_from_an_outage_leaves_expired_leases_to_their_owners(
    engine: AsyncEngine,
) -> None:
    sessions = make_sessionmaker(engine)
    job = await _claimed_and_expired(engine)
    worker = Worker(engine, _NoSandbox())  # type: ignore[arg-type]
    worker.outage.down_since = time.monotonic()
    worker.outage.answered()  # the database just came back
    assert not await worker.step()  # the expired job stays with "a", who writes its verdict
    assert await queue.complete(sessions, job, PASSED)
    # past the grace, an expired lease is its dead worker's, and is claimed again
    job = await _claimed_and_expired(engine)
    assert worker.outage.back_at is not None
    worker.outage.back_at -= job_loop.RECLAIM_GRACE_S
    assert await queue.has_claimable(worker.reads, reclaim=worker.outage.may_reclaim())
