"""A verdict that cannot be settled or delivered: retried with backoff, then set aside.

Each failure is counted on its own submission and waits by ``RETRIES`` (the one
``bot.background.RetryPolicy``), so one verdict that cannot be read, rendered
or sent waits for its next try while the verdicts behind it go out.  After the last try it is
marked failed, logged at ERROR with a short reference, and listed for moderators
(``/admin deliveries``); the reference in the log and in that list is the same.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from bot.background import RetryPolicy
from bot.db.models import Member, Submission

log = logging.getLogger(__name__)

ERROR_CHARS = 500  # kept of an exception's text

#: 2, 4, 8 ... 256, 300 s: about 14 minutes from the first failure to the last of 10 tries
RETRIES = RetryPolicy(first_delay_s=2.0, max_delay_s=300.0, max_attempts=10)


@dataclass(frozen=True)
class FailedDelivery:
    """A verdict the bot gave up delivering, as a moderator sees it."""

    submission_id: int
    user_id: int
    task_ref: str
    attempts: int
    error: str  # "[REF] stage: ExceptionType: message" of the last try
    failed_at: datetime


async def record_failure(
    sessions: async_sessionmaker[AsyncSession],
    submission_id: int,
    stage: str,
    error: BaseException,
    now: datetime,
    policy: RetryPolicy = RETRIES,
) -> bool:
    """Count one failed try at ``stage`` ("settle" or "deliver") and schedule the next one, or
    mark the verdict failed after the last; True when it was the last."""
    reference = secrets.token_hex(3)
    text = f"[{reference}] {stage}: {type(error).__name__}: {error}"[:ERROR_CHARS]
    async with sessions() as session, session.begin():
        before = await session.scalar(
            select(Submission.delivery_attempts).where(Submission.id == submission_id)
        )
        attempts = (before or 0) + 1
        final = policy.gives_up(attempts)
        await session.execute(
            update(Submission)
            .where(Submission.id == submission_id)
            .values(
                delivery_attempts=attempts,
                delivery_error=text,
                next_delivery_at=None if final else now + policy.delay(attempts),
                delivery_failed_at=now if final else None,
            )
        )
    trace = error if attempts == 1 or final else None  # the traceback once, not every try
    ids = {"ref": reference, "submission_id": submission_id}  # fields of a JSON log line
    if final:
        log.error(
            "submission %d: verdict delivery failed for good after %d tries (ref %s, %s): %s; "
            "moderators see it in /admin deliveries",
            submission_id,
            attempts,
            reference,
            stage,
            error,
            exc_info=trace,
            extra=ids,
        )
    else:
        log.warning(
            "submission %d: %s failed (ref %s, try %d of %d), next try in %.0f s: %s",
            submission_id,
            stage,
            reference,
            attempts,
            policy.max_attempts,
            policy.delay(attempts).total_seconds(),
            error,
            exc_info=trace,
            extra=ids,
        )
    return final


async def failed_deliveries(
    session: AsyncSession, guild_id: int, limit: int = 25
) -> list[FailedDelivery]:
    """The server's verdicts marked failed, newest first."""
    rows = (
        await session.execute(
            select(
                Submission.id,
                Member.user_id,
                Submission.task_ref,
                Submission.delivery_attempts,
                Submission.delivery_error,
                Submission.delivery_failed_at,
            )
            .join(Member, Member.id == Submission.member_id)
            .where(
                Submission.guild_id == guild_id,
                Submission.delivery_failed_at.is_not(None),
                Submission.delivered_at.is_(None),
            )
            .order_by(Submission.delivery_failed_at.desc(), Submission.id.desc())
            .limit(limit)
        )
    ).all()
    return [
        FailedDelivery(sid, user_id, task_ref, attempts, error or "", failed_at)
        for sid, user_id, task_ref, attempts, error, failed_at in rows
    ]
