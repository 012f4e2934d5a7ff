"""The grading queue: jobs in the database, claimed under a lease.

Every state change is one conditional UPDATE, so it is atomic on SQLite and
PostgreSQL alike: two workers racing for a job both issue the same UPDATE and
exactly one sees ``rowcount == 1``.  On PostgreSQL the claim first picks its row
with ``SELECT ... FOR UPDATE SKIP LOCKED``, so concurrent workers each take a
different job instead of queueing behind one row lock; on SQLite the claim's
``BEGIN IMMEDIATE`` already serialises writers.  A job only reaches a worker whose
capabilities satisfy its requirements: the filter is part of the query.

A worker that dies stops renewing its lease; once the lease expires the job is
claimable again, and after ``max_attempts`` claims it ends as an internal error
that is not charged to the learner.  Completion is fenced by the lease owner, so a
worker that lost its lease cannot overwrite the verdict of the one that took over.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.db.models import GradingJob, Submission
from bot.db.states import ACTIVE, JobStatus, SubmissionStatus
from bot.db.types import utcnow
from bot.jobs.capabilities import Capabilities, Requirements
from bot.jobs.job_spec import JobSpec, UnreadableSpec, read_spec
from graders.base import Verdict

LEASE_SECONDS = 30.0
#: how many exhausted jobs one claim may retire before it stops looking
CLAIM_WINDOW = 32
#: PostgreSQL channel on which enqueue wakes idle workers
JOBS_CHANNEL = "brrrbot_jobs"
#: PostgreSQL channel on which a written verdict wakes the bot's delivery (payload: submission)
VERDICTS_CHANNEL = "brrrbot_verdicts"
RUNS_ANYWHERE = Requirements()
CPU_ONLY = Capabilities()

INTERNAL_ERROR_MESSAGE = (
    "internal error: grading failed {attempts} times without a verdict. This is not your fault "
    "and costs you nothing: resubmit, or ask a moderator to regrade it."
)


@dataclass(frozen=True)
class ClaimedJob:
    job_id: int
    submission_id: int
    attempt: int
    lease_owner: str
    #: the job's spec, read with the claim, or why the stored one is none this code can read
    #: (missing on a job queued before jobs carried one, newer than this code, malformed)
    spec: JobSpec | UnreadableSpec


def _claimable(now: datetime, reclaim: bool = True) -> Any:
    """Queued and due, or (with ``reclaim``) running with an expired lease (its worker died)."""
    queued = and_(GradingJob.status == JobStatus.QUEUED, GradingJob.available_at <= now)
    if not reclaim:
        return queued
    return or_(
        queued, and_(GradingJob.status == JobStatus.RUNNING, GradingJob.lease_expires_at < now)
    )


def _runnable(capabilities: Capabilities) -> Any:
    """Jobs whose requirements this worker satisfies."""
    memory = GradingJob.min_gpu_memory_mib <= capabilities.gpu_memory_mib
    return or_(GradingJob.needs_cuda.is_(False), and_(memory, capabilities.cuda))


async def enqueue(session: AsyncSession, submission_id: int, spec: JobSpec) -> GradingJob:
    """Add a job that carries everything grading needs, within the caller's transaction.

    The requirement columns repeat ``spec.requirements`` so the claim query can filter on
    them.  On PostgreSQL this also notifies listening workers; the notification is delivered
    at commit, so no worker wakes for a job it cannot see yet.
    """
    job = GradingJob(
        submission_id=submission_id,
        needs_cuda=spec.requirements.needs_cuda,
        min_gpu_memory_mib=spec.requirements.min_gpu_memory_mib,
        spec=spec.to_json(),
    )
    session.add(job)
    await session.flush()
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(select(func.pg_notify(JOBS_CHANNEL, str(job.id))))
    return job


async def has_claimable(
    sessions: async_sessionmaker[AsyncSession],
    capabilities: Capabilities = CPU_ONLY,
    *,
    reclaim: bool = True,
) -> bool:
    """A cheap read (no write lock) that lets idle workers poll often."""
    async with sessions() as session:
        found = await session.scalar(
            select(GradingJob.id)
            .where(_claimable(utcnow(), reclaim), _runnable(capabilities))
            .limit(1)
        )
    return found is not None


async def claim(
    sessions: async_sessionmaker[AsyncSession],
    owner: str,
    capabilities: Capabilities = CPU_ONLY,
    lease_s: float = LEASE_SECONDS,
    *,
    reclaim: bool = True,
) -> ClaimedJob | None:
    """Take the oldest job this worker can run, or None when there is none.

    ``reclaim=False`` takes queued jobs only, leaving running jobs whose lease expired to
    their owners: a worker does so for a while after a database outage, during which every
    lease expired although its worker was alive and may be writing its verdict right now.
    """
    now = utcnow()
    async with sessions() as session, session.begin():
        pick = (
            select(GradingJob.id)
            .where(_claimable(now, reclaim), _runnable(capabilities))
            .order_by(GradingJob.id)
            .limit(1)
        )
        if session.get_bind().dialect.name == "postgresql":
            pick = pick.with_for_update(skip_locked=True)
        for _ in range(CLAIM_WINDOW):
            job_id = await session.scalar(pick)
            if job_id is None:
                return None
            won = await session.execute(
                update(GradingJob)
                .where(GradingJob.id == job_id, _claimable(now, reclaim))
                .values(
                    status=JobStatus.RUNNING,
                    attempts=GradingJob.attempts + 1,
                    lease_owner=owner,
                    lease_expires_at=now + timedelta(seconds=lease_s),
                    started_at=now,
                )
                .returning(
                    GradingJob.submission_id,
                    GradingJob.attempts,
                    GradingJob.max_attempts,
                    GradingJob.spec,
                )
            )
            row = won.first()
            if row is None:
                continue  # another worker won this one (SQLite without a write lock only)
            submission_id, attempt, max_attempts, stored = row
            if attempt > max_attempts:
                await _give_up(session, job_id, submission_id, attempt - 1, now)
                continue
            await session.execute(
                update(Submission)
                .where(Submission.id == submission_id, Submission.status == SubmissionStatus.QUEUED)
                .values(status=SubmissionStatus.GRADING)
            )
            break
        else:
            return None
    return ClaimedJob(job_id, submission_id, attempt, owner, read_spec(stored))


async def _give_up(
    session: AsyncSession, job_id: int, submission_id: int, attempts: int, now: datetime
) -> None:
    task_ref = await session.scalar(
        select(Submission.task_ref).where(Submission.id == submission_id)
    )
    message = INTERNAL_ERROR_MESSAGE.format(attempts=attempts)
    verdict = Verdict.internal_error(task_ref or "", message).to_json()
    await session.execute(
        update(GradingJob)
        .where(GradingJob.id == job_id)
        .values(status=JobStatus.DEAD, lease_owner=None, finished_at=now, error=message)
    )
    await session.execute(
        update(Submission)
        .where(Submission.id == submission_id)
        .values(status=SubmissionStatus.ERROR, score=None, verdict=verdict, finished_at=now)
    )
    await _verdict_written(session, submission_id)


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
                GradingJob.status == JobStatus.RUNNING,
                GradingJob.lease_owner == job.lease_owner,
                GradingJob.attempts == job.attempt,
            )
            .values(lease_expires_at=utcnow() + timedelta(seconds=lease_s))
        )
        return result.rowcount == 1  # type: ignore[attr-defined]


async def complete(
    sessions: async_sessionmaker[AsyncSession], job: ClaimedJob, verdict: Verdict
) -> bool:
    """Write the one verdict of this job on its submission; False if the lease was lost
    meanwhile.

    A late completion (the lease expired, during a database outage say) is accepted as long
    as nobody re-claimed the job: the fence is the claim (owner and attempt), not the clock.
    Writing the same verdict again is a no-op that returns True, so a caller whose commit
    went through but whose connection died before the answer can simply retry.

    An ``error`` verdict written here is final (a job that cannot be graded here at all);
    its message is also kept as the job's error, where moderators look.
    """
    now = utcnow()
    status = SubmissionStatus.of_verdict(verdict.status)
    # an earlier attempt's error stays on a job that later got a verdict
    noted = {"error": verdict.feedback} if status is SubmissionStatus.ERROR else {}
    async with sessions() as session, session.begin():
        result = await session.execute(
            update(GradingJob)
            .where(
                GradingJob.id == job.job_id,
                GradingJob.status == JobStatus.RUNNING,
                GradingJob.lease_owner == job.lease_owner,
                GradingJob.attempts == job.attempt,
            )
            .values(status=JobStatus.DONE, lease_owner=None, finished_at=now, **noted)
        )
        if result.rowcount != 1:  # type: ignore[attr-defined]
            return await _already_recorded(session, job, verdict)
        await session.execute(
            update(Submission)
            .where(Submission.id == job.submission_id)
            .values(
                status=status,
                score=None if status is SubmissionStatus.ERROR else verdict.score,
                verdict=verdict.to_json(),
                finished_at=now,
            )
        )
        await _verdict_written(session, job.submission_id)
    return True


async def _already_recorded(session: AsyncSession, job: ClaimedJob, verdict: Verdict) -> bool:
    """True when this very verdict is already the job's (an earlier try of ``complete``
    committed, and only its answer was lost)."""
    row = (
        await session.execute(
            select(GradingJob.status, GradingJob.attempts, Submission.verdict)
            .join(Submission, Submission.id == GradingJob.submission_id)
            .where(GradingJob.id == job.job_id)
        )
    ).first()
    return (
        row is not None
        and row.status is JobStatus.DONE
        and row.attempts == job.attempt
        and row.verdict == json.loads(json.dumps(verdict.to_json()))  # as stored: no tuples
    )


async def _verdict_written(session: AsyncSession, submission_id: int) -> None:
    """On PostgreSQL, NOTIFY the bot that a verdict is due for delivery; sent at the commit."""
    if session.get_bind().dialect.name == "postgresql":
        await session.execute(select(func.pg_notify(VERDICTS_CHANNEL, str(submission_id))))


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
            .values(status=JobStatus.QUEUED, lease_owner=None, lease_expires_at=None, error=error)
        )


async def position(session: AsyncSession, job_id: int) -> int:
    """1-based place of a queued job in line (0 when it is already running or done)."""
    job = await session.get(GradingJob, job_id)
    if job is None or job.status is not JobStatus.QUEUED:
        return 0
    ahead = await session.scalar(
        select(func.count())
        .select_from(GradingJob)
        .where(GradingJob.status.in_(ACTIVE), GradingJob.id < job_id)
    )
    return int(ahead or 0) + 1
