"""The bot's side of grading: turn a validated upload into a queued job, within limits.

Runs in the bot process: no torch, no learner code.  The member's row is
locked for the checks and the insert, so two ``/submit`` at once cannot both
slip past the one-in-flight rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.models import Submission
from bot.db.types import utcnow
from bot.grading import heartbeat, queue
from bot.grading.capabilities import Requirements
from bot.grading.submission_input import PreparedSource
from bot.progress.members import lock_member

IN_FLIGHT = ("queued", "grading")
#: how long Discord lets a bot edit its reply to an interaction
INTERACTION_TOKEN_LIFETIME = timedelta(minutes=15)


class IntakeRefused(Exception):
    """A rule said no; ``str(exc)`` is the message for the member."""


@dataclass(frozen=True)
class Reply:
    """Where the verdict goes: the interaction while its token lives, else DM or channel."""

    token: str
    created_at: datetime
    channel_id: int | None


@dataclass(frozen=True)
class Queued:
    submission_id: int
    job_id: int
    position: int
    #: False when no worker able to grade it has been seen lately: tell the member now
    worker_seen: bool = True


async def queue_submission(
    session: AsyncSession,
    *,
    guild_id: int,
    member_id: int,
    task_ref: str,
    quest_version: str | None,
    filename: str,
    data: bytes,
    prepared: PreparedSource,
    requirements: Requirements,
    hourly_limit: int,
    reply: Reply | None,
    now: datetime,
) -> Queued:
    """Store the upload and its job in the caller's transaction, or refuse with a reason."""
    await lock_member(session, guild_id, member_id)
    busy = await session.scalar(
        select(Submission.id)
        .where(Submission.member_id == member_id, Submission.status.in_(IN_FLIGHT))
        .limit(1)
    )
    if busy is not None:
        raise IntakeRefused(
            f"Your submission #{busy} is still being graded; one at a time, please. "
            "Its verdict will arrive here shortly."
        )
    hour_ago = now - timedelta(hours=1)
    recent = (
        await session.execute(
            select(func.count(), func.min(Submission.created_at)).where(
                Submission.member_id == member_id, Submission.created_at > hour_ago
            )
        )
    ).one()
    count, oldest = recent
    if count >= hourly_limit:
        wait = math.ceil((oldest + timedelta(hours=1) - now).total_seconds() / 60)
        raise IntakeRefused(
            f"You have submitted {count} times in the last hour (the limit is {hourly_limit}); "
            f"try again in {max(wait, 1)} min."
        )
    submission = Submission(
        guild_id=guild_id,
        member_id=member_id,
        task_ref=task_ref,
        quest_version=quest_version,
        filename=filename,
        file_kind=prepared.kind,
        content=data,
        size_bytes=len(data),
        sha256=prepared.sha256,
        created_at=now,
        reply_token=reply.token if reply else None,
        reply_expires_at=reply.created_at + INTERACTION_TOKEN_LIFETIME if reply else None,
        reply_channel_id=reply.channel_id if reply else None,
    )
    session.add(submission)
    await session.flush()
    job = await queue.enqueue(session, submission.id, requirements)
    # heartbeats are stamped with the real time by other processes, so compare with that
    seen = await heartbeat.capable_worker_seen(session, requirements, utcnow())
    return Queued(submission.id, job.id, await queue.position(session, job.id), seen)
