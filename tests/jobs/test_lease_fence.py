"""The lease's edges: what a renew, a release and an error verdict write, and the instants at
which a job becomes claimable and a lease counts as expired."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from bot.db.engine import make_sessionmaker
from bot.db.models import GradingJob
from bot.db.types import utcnow
from bot.jobs import queue
from graders.base import Check, Verdict
from tests.support import BUILD_TASK, add_member, queue_submission

PASSED = Verdict(BUILD_TASK, "passed", 1.0, (Check("values", True, "match"),), "ok")
CANNOT_GRADE = Verdict(BUILD_TASK, "error", 0.0, (), "this worker cannot grade the task")
#: the instant the queue's clock is held at in the boundary tests
#: the queue's clock, held still: the real now, whole seconds
INSTANT = datetime.now(UTC).replace(microsecond=0)


async def _jobs(sessions: async_sessionmaker[AsyncSession], count: int) -> list[int]:
    async with sessions() as session, session.begin():
        await add_member(session)
        return [(await queue_submission(session))[1] for _ in range(count)]


async def _job(sessions: async_sessionmaker[AsyncSession], job_id: int) -> GradingJob:
    async with sessions() as session:
        job = await session.get(GradingJob, job_id)
    assert job is not None
    return job


async def _set(sessions: async_sessionmaker[AsyncSession], job_id: int, **values: object) -> None:
    async with sessions() as session, session.begin():
        await session.execute(update(GradingJob).where(GradingJob.id == job_id).values(**values))


async def test_a_renew_moves_the_lease_lease_s_past_now(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    (job_id,) = await _jobs(sessions, 1)
    job = await queue.claim(sessions, "a", lease_s=5)
    assert job is not None
    before = utcnow()
    assert await queue.renew(sessions, job, lease_s=600)
    expires = (await _job(sessions, job_id)).lease_expires_at
    assert expires is not None
    assert before + timedelta(seconds=600) <= expires <= utcnow() + timedelta(seconds=600)


async def test_a_release_requeues_its_own_claim_and_no_other(engine: AsyncEngine) -> None:
    sessions = make_sessionmaker(engine)
    first_id, second_id = await _jobs(sessions, 2)
    first = await queue.claim(sessions, "a")
    second = await queue.claim(sessions, "a")
    assert first is not None and second is not None
    assert (first.job_id, second.job_id) == (first_id, second_id)
    await queue.release(sessions, first, "worker shutting down")
    released, kept = await _job(sessions, first_id), await _job(sessions, second_id)
    assert (released.status, released.lease_owner, released.lease_expires_at, released.error) == (
        "queued",
        None,
        None,
        "worker shutting down",
    )
    assert (kept.status, kept.lease_owner) == ("running", "a")


@pytest.mark.parametrize("reclaimer", ["b", "a"])  # "a": the same owner, fenced by the attempt
async def test_a_stale_release_leaves_the_new_claim(engine: AsyncEngine, reclaimer: str) -> None:
    sessions = make_sessionmaker(engine)
    (job_id,) = await _jobs(sessions, 1)
    old = await queue.claim(sessions, "a")
    assert old is not None
    await _set(sessions, job_id, lease_expires_at=utcnow() - timedelta(seconds=60))
    new = await queue.claim(sessions, reclaimer)
    assert new is not None and new.attempt == 2
    await queue.release(sessions, old, "too late")
    job = await _job(sessions, job_id)
    assert (job.status, job.lease_owner, job.attempts, job.error) == ("running", reclaimer, 2, None)


async def test_an_error_verdict_is_the_jobs_error_and_a_later_verdict_keeps_an_earlier_one(
    engine: AsyncEngine,
) -> None:
    sessions = make_sessionmaker(engine)
    errored_id, retried_id = await _jobs(sessions, 2)
    errored = await queue.claim(sessions, "a")
    assert errored is not None and errored.job_id == errored_id
    assert await queue.complete(sessions, errored, CANNOT_GRADE)
    assert (await _job(sessions, errored_id)).error == "this worker cannot grade the task"
    retried = await queue.claim(sessions, "a")
    assert retried is not None and retried.job_id == retried_id
    await queue.release(sessions, retried, "the first attempt's error")
    again = await queue.claim(sessions, "a")
    assert again is not None and again.job_id == retried_id
    assert await queue.complete(sessions, again, PASSED)
    assert (await _job(sessions, retried_id)).error == "the first attempt's error"


async def test_a_job_due_now_is_claimable_and_a_lease_ending_now_is_still_held(
    engine: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``available_at <= now`` and ``lease_expires_at < now``, at the very instant."""
    sessions = make_sessionmaker(engine)
    due_id, held_id = await _jobs(sessions, 2)
    monkeypatch.setattr(queue, "utcnow", lambda: INSTANT)
    await _set(sessions, due_id, available_at=INSTANT)
    await _set(sessions, held_id, available_at=INSTANT + timedelta(seconds=1))
    due = await queue.claim(sessions, "a")
    assert due is not None and due.job_id == due_id
    await _set(sessions, held_id, available_at=INSTANT)
    held = await queue.claim(sessions, "a")
    assert held is not None and held.job_id == held_id
    await _set(sessions, held_id, lease_expires_at=INSTANT)
    assert await queue.claim(sessions, "b") is None
    await _set(sessions, held_id, lease_expires_at=INSTANT - timedelta(microseconds=1))
    taken = await queue.claim(sessions, "b")
    assert taken is not None and (taken.job_id, taken.attempt) == (held_id, 2)
