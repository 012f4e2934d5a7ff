"""What ``GET /api/v1/submissions/{id}`` answers: a submission's status, verdict and award."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db import states
from bot.db.models import Member, Submission
from bot.rest_api.tokens import Caller


class NotFound(Exception):
    """No submission has this id."""


class NotYours(Exception):
    """The submission belongs to another member or another server."""


@dataclass(frozen=True)
class SubmissionStatus:
    id: int
    task: str
    status: states.SubmissionStatus
    created_at: datetime
    finished_at: datetime | None
    verdict: dict[str, Any] | None  # ``Verdict.to_json()`` once graded
    award: dict[str, Any] | None  # ``Award.to_json()`` once its XP is settled

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "task": self.task,
            "status": str(self.status),
            "created_at": self.created_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "verdict": self.verdict,
            "award": self.award,
        }


async def submission_status(
    session: AsyncSession, caller: Caller, submission_id: int
) -> SubmissionStatus:
    """The caller's own submission; NotFound or NotYours otherwise."""
    row = (
        await session.execute(
            select(Submission, Member.user_id)
            .join(Member, Member.id == Submission.member_id)
            .where(Submission.id == submission_id)
        )
    ).first()
    if row is None:
        raise NotFound
    submission, user_id = row
    if submission.guild_id != caller.guild_id or user_id != caller.user_id:
        raise NotYours
    return SubmissionStatus(
        submission.id,
        submission.task_ref,
        submission.status,
        submission.created_at,
        submission.finished_at,
        submission.verdict,
        submission.award if submission.settled_at is not None else None,
    )
