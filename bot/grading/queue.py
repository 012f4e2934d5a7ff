"""The grading queue: jobs in the database, claimed under a lease.

Every state change is one conditional UPDATE, so it is atomic on SQLite and
PostgreSQL alike: two workers racing for a job both issue the same UPDATE and
exactly one sees ``rowcount == 1``.  A worker that dies stops renewing its
lease; once the lease expires the job is claimable again, and after
``max_attempts`` claims it ends as an internal error that is not charged to the
learner.  Completion is fenced by the lease owner, so a worker that lost its
lease cannot overwrite the verdict of the one that took over.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.db.models import GradingJob, Submission
from bot.db.types import utcnow

LEASE_SECONDS = 30.0
#: how many candidates one claim looks at before giving up on requirements
CLAIM_WINDOW = 32

INTERNAL_ERROR_MESSAGE = (
    "internal error: grading failed {attempts} times without a verdict; this is not your fault "
    "and costs you nothing. A moderator can regrade it."
)


@dataclass(frozen=True)
class ClaimedJob:
    job_id: int
    submission_id: int
    attempt: int
    lease_owner: str
    requirements: tuple[str, ...]


def _claimable(now: datetime) -> Any:
    """Queued and due, or running with an expired lease (its worker died)."""
    return or_(
        and_(GradingJob.status == "queued", GradingJob.available_at <= now),
        and_(GradingJob.status == "running", GradingJob.lease_expires_at < now),
    )


async def enqueue(
    session: AsyncSession, submission_id: int, requirements: Iterable[str] = ()
) -> GradingJob:
    """Add a job for a submission within the caller's transaction."""
    job = GradingJob(submission_id=submission_id, requirements=sorted(set(requirements)))
    session.add(job)
    await session.flush()
    return job


async def has_claimable(sessions: async_sessionmaker[AsyncSession]) -> bool:
    """A cheap read (no write lock) that lets idle workers poll often."""
    async with sessions() as session:
        found = await session.scalar(select(GradingJob.id).where(_claimable(utcnow())).limit(1))
    return found is not None


async def claim(
    sessions: async_sessionmaker[AsyncSession],
    owner: str,
    capabilities: Iterable[str] = (),
    lease_s: float = LEASE_SECONDS,
) -> ClaimedJob | None:
    """Take the oldest job this worker can run, or None when there is none."""
    can = set(capabilities)
    now = utcnow()
    async with sessions() as session, session.begin():
        rows = (
            await session.execute(
                select(GradingJob.id, GradingJob.requirements)
                .where(_claimable(now))
                .order_by(GradingJob.id)
                .limit(CLAIM_WINDOW)
            )
        ).all()
        for job_id, requirements in rows:
            if not set(requirements or ()) <= can:
                continue
            won = await session.execute(
                update(GradingJob)
                .where(GradingJob.id == job_id, _claimable(now))
                .values(
                    status="running",
                    attempts=GradingJob.attempts + 1,
                    lease_owner=owner,
                    lease_expires_at=now + timedelta(seconds=lease_s),
                    started_at=now,
                )
                .returning(GradingJob.submission_id, GradingJob.attempts, GradingJob.max_attempts)
            )
            row = won.first()
            if row is None:
                continue  # another worker won this one
            submission_id, attempt, max_attempts = row
            if attempt > max_attempts:
                await _give_up(session, job_id, submission_id, attempt - 1, now)
                continue
            await session.execute(
                update(Submission)
                .where(Submission.id == submission_id, Submission.status == "queued")
                .values(status="grading")
            )
            return ClaimedJob(job_id, submission_id, attempt, owner, tuple(requirements or ()))
    return None


async def _give_up(
    session: AsyncSession, job_id: int, submission_id: int, attempts: int, now: datetime
) -> None:
    message = INTERNAL_ERROR_MESSAGE.format(attempts=attempts)
    verdict = {
        "status": "error",
        "score": 0.0,
        "checks": [],
        "feedback": message,
        "internal": True,
    }
    await session.execute(
        update(GradingJob)
        .where(GradingJob.id == job_id)
        .values(status="dead", lease_owner=None, finished_at=now, error=message, result=verdict)
    )
    await session.execute(
        update(Submission)
        .where(Submission.id == submission_id)
        .values(status="error", score=None, verdict=verdict, finished_at=now)
    )


async def renew(
    sessions: async_sessionmaker[AsyncSession],
    job: ClaimedJob,
    lease_s: float = LEASE_SECONDS,
) -> bool:
    """Extend the lease; False means another worker has taken the job over."""
    async with sessions() as session, session.begin():
        result = await session.execute(
            update(GradingJob)
            .where(
                GradingJob.id == job.job_id,
                GradingJob.status == "running",
                GradingJob.lease_owner == job.lease_owner,
                GradingJob.attempts == job.attempt,
            )
            .values(lease_expires_at=utcnow() + timedelta(seconds=lease_s))
        )
        return result.rowcount == 1  # type: ignore[attr-defined]


async def complete(
    sessions: async_sessionmaker[AsyncSession],
    job: ClaimedJob,
    verdict: dict[str, Any],
) -> bool:
    """Write the one verdict of this job; False if the lease was lost meanwhile."""
    now = utcnow()
    status = verdict["status"]
    async with sessions() as session, session.begin():
        result = await session.execute(
            update(GradingJob)
            .where(
                GradingJob.id == job.job_id,
                GradingJob.status == "running",
                GradingJob.lease_owner == job.lease_owner,
                GradingJob.attempts == job.attempt,
            )
            .values(status="done", lease_owner=None, finished_at=now, result=verdict)
        )
        if result.rowcount != 1:  # type: ignore[attr-defined]
            return False
        await session.execute(
            update(Submission)
            .where(Submission.id == job.submission_id)
            .values(
                status=status,
                score=verdict.get("score"),
                verdict=verdict,
                finished_at=now,
            )
        )
    return True


async def release(sessions: async_sessionmaker[AsyncSession], job: ClaimedJob, error: str) -> None:
    """Hand a job back after an internal failure so another attempt can run it."""
    async with sessions() as session, session.begin():
        await session.execute(
            update(GradingJob)
            .where(
                GradingJob.id == job.job_id,
                GradingJob.lease_owner == job.lease_owner,
                GradingJob.attempts == job.attempt,
            )
            .values(status="queued", lease_owner=None, lease_expires_at=None, error=error)
        )


async def position(session: AsyncSession, job_id: int) -> int:
    """1-based place of a queued job in line (0 when it is already running or done)."""
    job = await session.get(GradingJob, job_id)
    if job is None or job.status != "queued":
        return 0
    ahead = await session.scalar(
        select(func.count())
        .select_from(GradingJob)
        .where(GradingJob.status.in_(("queued", "running")), GradingJob.id < job_id)
    )
    return int(ahead or 0) + 1
