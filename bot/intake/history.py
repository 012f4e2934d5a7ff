"""A member's own submissions, newest first, for ``/submissions``; no Discord."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.models import Submission
from bot.db.states import SubmissionStatus


@dataclass(frozen=True)
class SubmissionSummary:
    id: int
    task_ref: str
    status: SubmissionStatus
    score: float | None
    created_at: datetime


async def recent_submissions(
    session: AsyncSession, member_id: int, task_ref: str | None = None, limit: int = 10
) -> list[SubmissionSummary]:
    """The member's latest ``limit`` submissions, of one task when ``task_ref`` is given."""
    query = (
        select(
            Submission.id,
            Submission.task_ref,
            Submission.status,
            Submission.score,
            Submission.created_at,
        )
        .where(Submission.member_id == member_id)
        .order_by(Submission.id.desc())
        .limit(limit)
    )
    if task_ref:
        query = query.where(Submission.task_ref == task_ref)
    return [SubmissionSummary(*row) for row in (await session.execute(query)).all()]
