"""After a verdict: pay its XP once, then hand it to the bot for delivery once.

Both steps are recorded on the submission (``settled_at`` with the award,
``delivered_at`` with the channel used), so a bot killed at any point picks up
where it stopped: settling again pays nothing twice (the ledger's idempotency
keys), and the stored award makes a re-sent message say the same thing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from bot.db.models import Guild, Member, Submission
from bot.progress.awards import award_verdict

FINISHED = ("passed", "failed", "error")


@dataclass(frozen=True)
class Outcome:
    """Everything the bot needs to tell a member about one verdict."""

    submission_id: int
    guild_id: int
    user_id: int
    task_ref: str
    verdict: dict[str, Any]
    award: dict[str, Any]
    reply_token: str | None
    reply_expires_at: datetime | None
    reply_channel_id: int | None


@dataclass(frozen=True)
class Unsettled:
    submission_id: int
    guild_id: int
    task_ref: str


async def next_unsettled(session: AsyncSession) -> Unsettled | None:
    """The oldest finished submission whose XP is not settled yet."""
    row = (
        await session.execute(
            select(Submission.id, Submission.guild_id, Submission.task_ref)
            .where(Submission.status.in_(FINISHED), Submission.settled_at.is_(None))
            .order_by(Submission.finished_at, Submission.id)
            .limit(1)
        )
    ).first()
    return None if row is None else Unsettled(*row)


async def settle(
    session: AsyncSession, submission_id: int, task_xp: int | None, now: datetime
) -> bool:
    """Pay a finished verdict's XP (``task_xp`` None: the task is gone, no XP) and record the
    award on the submission; False when another process settled it first."""
    row = (
        await session.execute(
            select(Submission, Guild.timezone)
            .join(Guild, Guild.id == Submission.guild_id)
            .where(Submission.id == submission_id, Submission.settled_at.is_(None))
        )
    ).first()
    if row is None:
        return False
    submission, tz_name = row
    verdict = submission.verdict or {}
    award: dict[str, Any] = {"xp_added": 0, "streak_bonus": 0}
    if task_xp and verdict.get("status") == "passed" and not verdict.get("internal"):
        result = await award_verdict(
            session,
            guild_id=submission.guild_id,
            member_id=submission.member_id,
            task_ref=submission.task_ref,
            task_xp=task_xp,
            status="passed",
            score=float(verdict.get("score", 0.0)),
            submission_id=submission.id,
            tz=ZoneInfo(tz_name),
            now=now,
        )
        award = asdict(result)
    await session.execute(
        update(Submission)
        .where(Submission.id == submission.id, Submission.settled_at.is_(None))
        .values(settled_at=now, award=award)
    )
    return True


async def undelivered(session: AsyncSession, limit: int = 20) -> list[Outcome]:
    """Settled verdicts not yet delivered, oldest first."""
    rows = (
        await session.execute(
            select(Submission, Member.user_id)
            .join(Member, Member.id == Submission.member_id)
            .where(Submission.settled_at.is_not(None), Submission.delivered_at.is_(None))
            .order_by(Submission.settled_at, Submission.id)
            .limit(limit)
        )
    ).all()
    return [
        Outcome(
            submission_id=s.id,
            guild_id=s.guild_id,
            user_id=user_id,
            task_ref=s.task_ref,
            verdict=s.verdict or {},
            award=s.award or {},
            reply_token=s.reply_token,
            reply_expires_at=s.reply_expires_at,
            reply_channel_id=s.reply_channel_id,
        )
        for s, user_id in rows
    ]


async def mark_delivered(
    session: AsyncSession, submission_id: int, via: str, now: datetime
) -> None:
    await session.execute(
        update(Submission)
        .where(Submission.id == submission_id, Submission.delivered_at.is_(None))
        .values(delivered_at=now, delivered_via=via)
    )
