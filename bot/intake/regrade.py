"""``/admin regrade``: grade a stored submission again, as the server's map now defines its task.

The stored bytes go through the same ``find_build_task`` and ``prepare_job`` as a fresh
``/submit``, so the new job carries a fresh spec (a job queued before jobs carried one becomes
gradable this way), and a rule the stored upload fails today is a ``CannotRegrade``.
XP follows the better verdict: settling the new one pays only a difference, never twice.
Runs in the bot process; no Discord.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.content.hashing import version_hash
from bot.curriculum.guild_map import GuildMap
from bot.db.models import AuditEntry, GradingJob, Submission
from bot.db.states import ACTIVE, SubmissionStatus
from bot.intake.accept import find_build_task, prepare_job
from bot.intake.refusals import (
    AlreadyBeingGraded,
    CannotRegrade,
    NoSuchSubmission,
    Refused,
    SubmitRefusal,
    TaskOffTheMap,
    UnknownTask,
)
from bot.intake.submission_input import UploadLimits
from bot.jobs import queue


@dataclass(frozen=True)
class Requeued:
    submission_id: int
    job_id: int
    task_ref: str


async def regrade(
    sessions: async_sessionmaker[AsyncSession],
    *,
    guild_id: int,
    submission_id: int,
    guild_map: GuildMap,
    limits: UploadLimits,
    moderator_user_id: int,
) -> Requeued:
    """Queue ``submission_id`` of ``guild_id`` again and audit it; ``Refused`` says why not."""
    async with sessions() as session, session.begin():
        row = await session.get(Submission, submission_id)
        if row is None or row.guild_id != guild_id:
            raise Refused(NoSuchSubmission(submission_id))
        if await _being_graded(session, row.id):
            raise Refused(AlreadyBeingGraded(submission_id))
        try:
            quest, task = find_build_task(guild_map, row.task_ref)
            _, spec = prepare_job(row.task_ref, task, row.filename, row.content, limits)
        except Refused as exc:
            if isinstance(exc.refusal, UnknownTask):
                raise Refused(TaskOffTheMap(submission_id, row.task_ref)) from None
            assert isinstance(exc.refusal, SubmitRefusal)
            raise Refused(CannotRegrade(submission_id, exc.refusal)) from None
        previous = {"previous": row.status, "previous_score": row.score}
        await session.execute(
            update(Submission)
            .where(Submission.id == row.id)
            .values(
                status=SubmissionStatus.QUEUED,
                quest_version=version_hash(quest),
                settled_at=None,
                delivered_at=None,
                delivered_via=None,
                delivery_attempts=0,
                next_delivery_at=None,
                delivery_error=None,
                delivery_failed_at=None,
                reply_token=None,  # the member's interaction is long gone: the verdict goes by DM
                reply_expires_at=None,
            )
        )
        job = await queue.enqueue(session, row.id, spec)
        session.add(
            AuditEntry(
                guild_id=guild_id,
                actor_user_id=moderator_user_id,
                action="regrade",
                target=f"submission:{row.id}",
                details=previous,
            )
        )
    return Requeued(submission_id, job.id, spec.task_ref)


async def _being_graded(session: AsyncSession, submission_id: int) -> bool:
    busy = await session.scalar(
        select(GradingJob.id).where(
            GradingJob.submission_id == submission_id,
            GradingJob.status.in_(ACTIVE),
        )
    )
    return busy is not None
